//! `record --audit-log PATH`: following a growing audit log while recording
//! (docs/audit.md, "Following a log while recording").
//!
//! Every poll reads the complete lines added since the last one and stores
//! their writes; where it stopped (file identity and offset) is saved in the
//! journal, so a recorder started again goes on from there. Rotation is
//! followed: when PATH is another file than last time, the rest of the old
//! one is read first (found beside it by its inode, as `audit.log.1` or
//! `audit-TIMESTAMP.log`), then the new one from its start. What could not be
//! read (the old file was compressed or removed, or the file was truncated in
//! place) breaks the coverage there: changes in that stretch say the audit
//! log does not cover them.
//!
//! [`decide`] is the decision, apart from the IO; [`Follower`] does the IO.

use crate::audit::parse::{AuditEvent, Line, parse_line};
use crate::audit::read::read_complete_lines;
use crate::journal::audit::{AuditImport, FollowPosition};
use crate::journal::{Journal, JournalError};
use std::io::{Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// What the file at the followed path is now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileNow {
    pub device: u64,
    pub inode: u64,
    pub len: u64,
}

/// What to read next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Never followed: the whole file, from its start.
    Start,
    /// The same file: on from `offset` (nothing to do when at its end).
    Continue { offset: u64 },
    /// The same file, shorter than where reading stopped: truncated in place
    /// (`copytruncate`). From its start; what was between is lost.
    Truncated,
    /// Another file at the path: the rest of the old one (by its identity)
    /// from `offset`, then the new one from its start.
    Rotated {
        old_device: u64,
        old_inode: u64,
        offset: u64,
    },
}

/// The next step, from where reading stopped and what the path is now.
pub fn decide(saved: Option<&FollowPosition>, now: FileNow) -> Step {
    match saved {
        None => Step::Start,
        Some(p) if p.device == now.device && p.inode == now.inode => {
            if now.len < p.offset {
                Step::Truncated
            } else {
                Step::Continue { offset: p.offset }
            }
        }
        Some(p) => Step::Rotated {
            old_device: p.device,
            old_inode: p.inode,
            offset: p.offset,
        },
    }
}

/// Why following failed this time (the next poll tries again).
#[derive(Debug, thiserror::Error)]
pub enum FollowError {
    #[error("cannot read audit log {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Journal(#[from] JournalError),
}

/// What one poll did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Polled {
    pub lines: u64,
    /// Writes on recorded objects stored (new to the journal).
    pub stored: u64,
    /// The old file after a rotation or the lines before a truncation could
    /// not be read: coverage breaks there.
    pub lost: bool,
}

/// How long a write on an object the journal does not hold yet waits for the
/// recorder to journal that object (its create event may come after the
/// audit line), in polls.
const PENDING_POLLS: u32 = 30;

/// Follows one audit log into one cluster's history.
pub struct Follower {
    path: PathBuf,
    key: String,
    journal: Journal,
    cluster: String,
    position: Option<FollowPosition>,
    /// Writes on objects not journaled yet, with the polls they have left.
    pending: Vec<(AuditEvent, u32)>,
}

impl Follower {
    /// Follows `path` for `cluster` of the journal at `store`, from where
    /// the last follower of the same path stopped.
    pub fn open(path: &Path, store: &Path, cluster: &str) -> Result<Follower, FollowError> {
        let path = std::fs::canonicalize(path).map_err(|source| FollowError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let journal = Journal::open(store)?;
        let key = path.display().to_string();
        let position = journal.follow_position(&key)?;
        Ok(Follower {
            path,
            key,
            journal,
            cluster: cluster.to_string(),
            position,
            pending: Vec::new(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads what was added since the last poll and stores it.
    pub fn poll(&mut self, now_ms: i64) -> Result<Polled, FollowError> {
        let io = |source| FollowError::Io {
            path: self.path.clone(),
            source,
        };
        let meta = std::fs::metadata(&self.path).map_err(io)?;
        let now = file_now(&meta);
        let mut polled = Polled::default();
        let mut import = AuditImport::new(&self.journal, &self.cluster)?;
        let mut span = Span::default();
        // Writes that waited for their object: maybe it is journaled now.
        for (event, left) in std::mem::take(&mut self.pending) {
            if !import.add(event.clone())? && left > 1 {
                self.pending.push((event, left - 1));
            }
        }
        let mut covered_to = self.position.as_ref().and_then(|p| p.covered_to);
        let start = match decide(self.position.as_ref(), now) {
            Step::Start => 0,
            Step::Continue { offset } => offset,
            Step::Truncated => {
                polled.lost = true;
                0
            }
            Step::Rotated {
                old_device,
                old_inode,
                offset,
            } => {
                match find_by_identity(&self.path, old_device, old_inode) {
                    Some(old) => {
                        read_from(
                            &old,
                            offset,
                            &mut import,
                            &mut span,
                            &mut polled,
                            &mut self.pending,
                        )?;
                    }
                    None => polled.lost = true,
                }
                0
            }
        };
        if polled.lost {
            covered_to = None;
        }
        let end = read_from(
            &self.path,
            start,
            &mut import,
            &mut span,
            &mut polled,
            &mut self.pending,
        )?;
        if let (Some(first), Some(last)) = (span.first, span.last) {
            // Read without a break since `covered_to`: the coverage goes on from there.
            let from = covered_to.map_or(first, |c| c.min(first));
            import.covers(from, last, &format!("{} (followed)", self.key));
            covered_to = Some(last);
        }
        polled.stored = import.store()?.new;
        let position = FollowPosition {
            device: now.device,
            inode: now.inode,
            offset: end,
            covered_to,
        };
        self.journal
            .save_follow_position(&self.key, &self.cluster, &position, now_ms)?;
        self.position = Some(position);
        Ok(polled)
    }
}

/// Reads the complete lines of `path` from `offset` into `import` (writes on
/// objects not journaled yet into `pending`); returns where they end.
fn read_from(
    path: &Path,
    offset: u64,
    import: &mut AuditImport<'_>,
    span: &mut Span,
    polled: &mut Polled,
    pending: &mut Vec<(AuditEvent, u32)>,
) -> Result<u64, FollowError> {
    let io = |source| FollowError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = std::fs::File::open(path).map_err(io)?;
    file.seek(SeekFrom::Start(offset)).map_err(io)?;
    let mut events = Vec::new();
    let used = read_complete_lines(
        std::io::BufReader::with_capacity(1 << 16, file),
        |line| {
            polled.lines += 1;
            // A live log's odd line is skipped, never fatal.
            match parse_line(line) {
                Ok(Line::Write(e)) => events.push(*e),
                Ok(Line::Other { at, .. }) => span.saw(at),
                Err(_) => {}
            }
        },
        READ_LIMIT,
    )
    .map_err(io)?;
    for e in events {
        span.saw(Some(e.at));
        if !import.add(e.clone())? {
            pending.push((e, PENDING_POLLS));
        }
    }
    Ok(offset + used)
}

/// At most this much is read per file per poll; the rest waits for the next.
const READ_LIMIT: usize = 64 << 20;

/// The earliest and latest event time read in one poll.
#[derive(Debug, Default)]
struct Span {
    first: Option<i64>,
    last: Option<i64>,
}

impl Span {
    fn saw(&mut self, at: Option<i64>) {
        if let Some(at) = at {
            self.first = Some(self.first.map_or(at, |f| f.min(at)));
            self.last = Some(self.last.map_or(at, |l| l.max(at)));
        }
    }
}

#[cfg(unix)]
fn file_now(meta: &std::fs::Metadata) -> FileNow {
    use std::os::unix::fs::MetadataExt;
    FileNow {
        device: meta.dev(),
        inode: meta.ino(),
        len: meta.len(),
    }
}

#[cfg(not(unix))]
fn file_now(meta: &std::fs::Metadata) -> FileNow {
    // Without inodes, a file is known by its length only: a shorter one is
    // taken as truncated.
    FileNow {
        device: 0,
        inode: 0,
        len: meta.len(),
    }
}

/// The file beside `path` with this identity (the old log after a rotation
/// renamed it), if it is still there and not compressed.
fn find_by_identity(path: &Path, device: u64, inode: u64) -> Option<PathBuf> {
    let dir = path.parent()?;
    // Bounded by the directory's entries.
    std::fs::read_dir(dir).ok()?.flatten().find_map(|entry| {
        let p = entry.path();
        let meta = std::fs::metadata(&p).ok()?;
        let id = file_now(&meta);
        (meta.is_file() && id.device == device && id.inode == inode).then_some(p)
    })
}

/// Polls `follower` every `every` until `stop` says so (or its sender is
/// gone), then once more, so the lines written up to the stop are read.
/// Failures are handed to `warn` (each different one once) and the next poll
/// tries again.
pub fn run(
    mut follower: Follower,
    stop: std::sync::mpsc::Receiver<()>,
    every: std::time::Duration,
    warn: impl Fn(&str),
) {
    let mut last_warning = String::new();
    let mut poll = |follower: &mut Follower| {
        if let Err(e) = follower.poll(crate::time::Millis::now().as_ms()) {
            let text = e.to_string();
            if text != last_warning {
                warn(&text);
                last_warning = text;
            }
        }
    };
    // Bounded by the stop: each pass waits `every` for it.
    loop {
        poll(&mut follower);
        match stop.recv_timeout(every) {
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => continue,
            _ => break,
        }
    }
    poll(&mut follower);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(device: u64, inode: u64, offset: u64) -> FollowPosition {
        FollowPosition {
            device,
            inode,
            offset,
            covered_to: Some(1),
        }
    }

    fn file(device: u64, inode: u64, len: u64) -> FileNow {
        FileNow { device, inode, len }
    }

    #[test]
    fn the_same_file_goes_on_a_shorter_one_was_truncated_another_was_rotated_in() {
        assert_eq!(decide(None, file(1, 7, 500)), Step::Start);
        assert_eq!(
            decide(Some(&at(1, 7, 300)), file(1, 7, 500)),
            Step::Continue { offset: 300 }
        );
        assert_eq!(
            decide(Some(&at(1, 7, 500)), file(1, 7, 500)),
            Step::Continue { offset: 500 }
        );
        assert_eq!(
            decide(Some(&at(1, 7, 300)), file(1, 7, 100)),
            Step::Truncated
        );
        assert_eq!(
            decide(Some(&at(1, 7, 300)), file(1, 8, 900)),
            Step::Rotated {
                old_device: 1,
                old_inode: 7,
                offset: 300
            }
        );
        // Another device with the same inode number is another file.
        assert!(matches!(
            decide(Some(&at(1, 7, 300)), file(2, 7, 900)),
            Step::Rotated { .. }
        ));
    }

    #[test]
    fn the_old_file_is_found_beside_the_new_one_by_its_identity() {
        let dir = tempfile::tempdir().unwrap();
        let live = dir.path().join("audit.log");
        std::fs::write(&live, "old\n").unwrap();
        let id = file_now(&std::fs::metadata(&live).unwrap());
        let rotated = dir.path().join("audit-2026-12-01T10-00-00.000.log");
        std::fs::rename(&live, &rotated).unwrap();
        std::fs::write(&live, "new\n").unwrap();
        assert_eq!(find_by_identity(&live, id.device, id.inode), Some(rotated));
        assert_eq!(find_by_identity(&live, id.device, id.inode + 999_999), None);
    }
}
