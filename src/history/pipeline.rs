//! Reading on one thread, working on the others: the journal connection
//! belongs to the thread that reads, while decompressing, parsing and comparing
//! what it has read runs on every core as it comes (`diff`, `timeline`). A
//! large `diff` also has each worker read its own objects on a connection
//! beside (docs/journal.md, "Reading on several connections").

use super::HistoryError;
use std::sync::mpsc::sync_channel;
use std::sync::{Arc, Mutex};

/// How many workers [`pipeline`] runs: one per core.
pub(super) fn workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Runs `read` on this thread while one worker per core runs `work` on each
/// job `read` sends, with a `state` of its own (a decoder, say). `read` hands
/// jobs to the function it is given, which returns false once every worker has
/// stopped (one failed): `read` should stop then. Jobs wait in a bounded
/// channel, so a fast reader never holds more than a few of them.
///
/// Returns what the workers pushed, in no particular order; or the reader's
/// error, else the first worker's.
pub(super) fn pipeline<J, R, S>(
    what: &str,
    read: impl FnOnce(&mut dyn FnMut(J) -> bool) -> Result<(), HistoryError>,
    state: impl Fn() -> S + Sync,
    work: impl Fn(&mut S, J, &mut Vec<R>) -> Result<(), HistoryError> + Sync,
) -> Result<Vec<R>, HistoryError>
where
    J: Send,
    R: Send,
{
    let workers = workers();
    let (tx, rx) = sync_channel::<J>(workers * 4);
    // The workers own the receiver: when all have stopped, sends fail.
    let rx = Arc::new(Mutex::new(rx));
    std::thread::scope(|threads| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                let rx = rx.clone();
                let (state, work) = (&state, &work);
                threads.spawn(move || -> Result<Vec<R>, HistoryError> {
                    let mut state = state();
                    let mut out = Vec::new();
                    // Bounded: ends when the reader drops its sender.
                    loop {
                        let job = match rx.lock() {
                            Ok(rx) => rx.recv(),
                            Err(_) => return Ok(out),
                        };
                        let Ok(job) = job else {
                            return Ok(out);
                        };
                        // On error this worker stops; the others drain the rest.
                        work(&mut state, job, &mut out)?;
                    }
                })
            })
            .collect();
        drop(rx);
        let read = read(&mut |job| tx.send(job).is_ok());
        drop(tx);
        let mut results = Vec::new();
        let mut failed = None;
        for h in handles {
            match h.join() {
                Ok(Ok(found)) => results.extend(found),
                Ok(Err(e)) => failed = failed.or(Some(e)),
                Err(_) => {
                    failed = failed.or(Some(HistoryError::Body {
                        object: what.to_string(),
                        detail: "a worker thread panicked".into(),
                    }))
                }
            }
        }
        read?;
        failed.map_or(Ok(results), Err)
    })
}

/// What [`pipeline`] does, all on this thread: for work known to be too small
/// to share (one run of a timeline), where starting and joining a thread per
/// core would cost more than the work. `log` builds a timeline per object:
/// 20,000 objects of a few versions each took 40,000 thread starts.
/// `state` is the caller's, kept from one call to the next (a decoder and
/// its contexts, made once per `log` rather than once per object).
pub(super) fn inline<J, R, S>(
    read: impl FnOnce(&mut dyn FnMut(J) -> bool) -> Result<(), HistoryError>,
    state: &mut S,
    work: impl Fn(&mut S, J, &mut Vec<R>) -> Result<(), HistoryError>,
) -> Result<Vec<R>, HistoryError> {
    let mut out = Vec::new();
    let mut failed = None;
    let read = read(&mut |job| {
        if failed.is_some() {
            return false;
        }
        match work(state, job, &mut out) {
            Ok(()) => true,
            Err(e) => {
                failed = Some(e);
                false
            }
        }
    });
    // As in `pipeline`: the reader's error first.
    read?;
    failed.map_or(Ok(out), Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure() -> HistoryError {
        HistoryError::Body {
            object: "x".into(),
            detail: "bad".into(),
        }
    }

    #[test]
    fn every_job_is_worked_on() {
        let mut got = pipeline(
            "t",
            |send| {
                for i in 0..1000u32 {
                    assert!(send(i));
                }
                Ok(())
            },
            || 0u32,
            |seen, job, out| {
                *seen += 1;
                out.push(job * 2);
                Ok(())
            },
        )
        .unwrap();
        got.sort();
        assert_eq!(got, (0..1000).map(|i| i * 2).collect::<Vec<_>>());
    }

    #[test]
    fn a_failing_worker_stops_the_reader_without_a_hang() {
        let mut sent = 0;
        let result: Result<Vec<()>, _> = pipeline(
            "t",
            |send| {
                // Bounded: stops when nobody takes jobs any more.
                while sent < 1_000_000 && send(sent) {
                    sent += 1;
                }
                Ok(())
            },
            || (),
            |_, _: u32, _| Err(failure()),
        );
        assert!(matches!(result, Err(HistoryError::Body { .. })));
        assert!(sent < 1_000_000, "the reader was told to stop");
    }

    #[test]
    fn inline_works_every_job_and_stops_at_the_first_failure() {
        let got = inline(
            |send| {
                for i in 0..10u32 {
                    assert!(send(i));
                }
                Ok(())
            },
            &mut (),
            |_, job, out| {
                out.push(job * 2);
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(got, (0..10).map(|i| i * 2).collect::<Vec<_>>());
        let mut sent = 0;
        let result: Result<Vec<()>, _> = inline(
            |send| {
                while sent < 1_000 && send(sent) {
                    sent += 1;
                }
                Ok(())
            },
            &mut (),
            |_, job: u32, _| if job == 3 { Err(failure()) } else { Ok(()) },
        );
        assert!(matches!(result, Err(HistoryError::Body { .. })));
        assert_eq!(sent, 3, "the reader was told to stop at the failure");
        let result: Result<Vec<()>, _> = inline(
            |send| {
                send(1);
                Err(HistoryError::Body {
                    object: "reader".into(),
                    detail: "bad".into(),
                })
            },
            &mut (),
            |_, _: u32, _| Err(failure()),
        );
        assert!(matches!(result, Err(HistoryError::Body { object, .. }) if object == "reader"));
    }

    #[test]
    fn the_readers_error_comes_first() {
        let result: Result<Vec<()>, _> = pipeline(
            "t",
            |_| {
                Err(HistoryError::Body {
                    object: "reader".into(),
                    detail: "bad".into(),
                })
            },
            || (),
            |_, _: u32, _| Ok(()),
        );
        assert!(matches!(result, Err(HistoryError::Body { object, .. }) if object == "reader"));
    }
}
