//! Where a command's answer goes. On the command line: stdout for the answer,
//! stderr for notes and warnings. Under `mcp` (docs/mcp.md) stdout is the
//! protocol, so a tool call runs the same command with its output, its notes
//! and the completeness it reports caught in a buffer of the calling thread,
//! and the server turns them into one tool result.
//!
//! Like cargo's `Shell` with a captured output, but thread-local: the history
//! commands are synchronous and run whole on the thread that calls them.

use std::cell::RefCell;

/// What a command run inside [`capture`] said.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Captured {
    /// What it wrote as its answer (stdout on the command line).
    pub output: Vec<u8>,
    /// The `note:` lines it would have written on stderr, without `note: `.
    pub notes: Vec<String>,
    /// Whether its answer is complete, and what it lacks, as reported by
    /// [`report`]; `None` when the command reported nothing.
    pub completeness: Option<Reported>,
}

/// An answer's completeness, as the command worked it out.
#[derive(Debug, Clone, PartialEq)]
pub struct Reported {
    pub complete: bool,
    pub warnings: Vec<String>,
}

thread_local! {
    static SINK: RefCell<Option<Captured>> = const { RefCell::new(None) };
}

/// Runs `f` with this thread's output caught, and returns what it said.
/// Nested calls are not supported: the inner one takes over the buffer.
pub fn capture<T>(f: impl FnOnce() -> T) -> (T, Captured) {
    SINK.with(|s| *s.borrow_mut() = Some(Captured::default()));
    // Taken back even if `f` unwinds, so a later call on this thread starts clean.
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            SINK.with(|s| s.borrow_mut().take());
        }
    }
    let reset = Reset;
    let value = f();
    let captured = SINK.with(|s| s.borrow_mut().take()).unwrap_or_default();
    drop(reset);
    (value, captured)
}

/// Whether this thread's output is being caught.
pub fn capturing() -> bool {
    SINK.with(|s| s.borrow().is_some())
}

/// Adds `bytes` to the caught answer; false (and nothing done) when output is
/// not being caught.
pub(super) fn output(bytes: &[u8]) -> bool {
    SINK.with(|s| match s.borrow_mut().as_mut() {
        Some(c) => {
            c.output.extend_from_slice(bytes);
            true
        }
        None => false,
    })
}

/// A `note:` for the user: on stderr, or into the caught notes.
pub fn note(text: &str) {
    let caught = SINK.with(|s| match s.borrow_mut().as_mut() {
        Some(c) => {
            c.notes.push(text.to_string());
            true
        }
        None => false,
    });
    if !caught {
        eprintln!("note: {text}");
    }
}

/// Records the answer's completeness (when output is being caught; on the
/// command line the answer itself and its `warning:` block say it).
pub fn report(complete: bool, warnings: Vec<String>) {
    SINK.with(|s| {
        if let Some(c) = s.borrow_mut().as_mut() {
            c.completeness = Some(Reported { complete, warnings });
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_command_says_is_caught_only_inside_capture() {
        assert!(!capturing());
        assert!(!output(b"lost"));
        let ((), caught) = capture(|| {
            assert!(capturing());
            assert!(output(b"{\"a\":"));
            assert!(output(b"1}"));
            note("a time of day later than now means yesterday's");
            report(false, vec!["gap".into()]);
        });
        assert_eq!(caught.output, b"{\"a\":1}");
        assert_eq!(
            caught.notes,
            vec!["a time of day later than now means yesterday's"]
        );
        assert_eq!(
            caught.completeness,
            Some(Reported {
                complete: false,
                warnings: vec!["gap".into()]
            })
        );
        assert!(!capturing());
        // A later run starts clean.
        let ((), again) = capture(|| {});
        assert_eq!(again, Captured::default());
    }

    #[test]
    fn a_command_that_panics_leaves_the_thread_clean() {
        let r = std::panic::catch_unwind(|| capture(|| panic!("boom")));
        assert!(r.is_err());
        assert!(!capturing());
    }
}
