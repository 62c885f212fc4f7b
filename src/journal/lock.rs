//! Who may write a journal (docs/journal.md, "Several recorders"): several
//! recorders at once, one per stream, and maintenance (prune) alone.
//!
//! All locks are OS advisory locks on files beside the journal (never on the
//! database file itself, whose locks belong to SQLite). The operating system
//! drops them when the holder exits, even after `kill -9`, so a stale lock never
//! blocks anyone. Each lock file's text names its holder for error messages.
//!
//! - `<journal>.lock`: recorders hold it shared; prune holds it exclusive. So
//!   prune waits for no recorder and no recorder starts during a prune.
//! - `<journal>.locks/stream-<id>.lock`: the recorder of stream `<id>` holds it
//!   exclusive. A second recorder of the same stream is refused, naming the
//!   first; recorders of other streams (another namespace, another cluster)
//!   run beside it. Readers probe these to tell which streams are live.

use super::{JournalError, StreamId};
use std::collections::{BTreeSet, HashSet};
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The maintenance lock file of a journal.
pub fn lock_path(journal: &Path) -> PathBuf {
    with_suffix(journal, ".lock")
}

/// The directory of a journal's stream locks.
pub fn stream_locks_dir(journal: &Path) -> PathBuf {
    with_suffix(journal, ".locks")
}

fn with_suffix(journal: &Path, suffix: &str) -> PathBuf {
    let mut name = journal.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

fn stream_lock_path(journal: &Path, stream: StreamId) -> PathBuf {
    stream_locks_dir(journal).join(format!("stream-{stream}.lock"))
}

/// Held while a journal is created or migrated (`Journal::open_or_create`):
/// a second opener waits for the first to finish; released when dropped.
pub fn creation_lock(journal: &Path) -> Result<impl Drop, JournalError> {
    struct Creating(File);
    impl Drop for Creating {
        fn drop(&mut self) {
            let _ = self.0.unlock();
        }
    }
    let path = with_suffix(journal, ".init.lock");
    let file = open_lock_file(&path)?;
    file.lock()
        .map_err(|source| JournalError::Io { path, source })?;
    Ok(Creating(file))
}

/// Exclusive use of a journal (prune): no recorder runs meanwhile.
#[derive(Debug)]
pub struct WriterLock {
    file: File,
    path: PathBuf,
}

impl WriterLock {
    /// Takes the journal for itself, or fails at once naming who records.
    pub fn acquire(journal: &Path, holder: &str) -> Result<WriterLock, JournalError> {
        let path = lock_path(journal);
        let mut file = open_lock_file(&path)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut names = holders(journal);
                if names.is_empty() {
                    names.push(read_text(&mut file).unwrap_or_else(|| "another process".into()));
                }
                return Err(JournalError::Locked {
                    path: journal.to_path_buf(),
                    holder: names.join("; "),
                });
            }
            Err(TryLockError::Error(source)) => return Err(JournalError::Io { path, source }),
        }
        write_text(&mut file, &path, holder)?;
        Ok(WriterLock { file, path })
    }

    /// True when some recorder writes `journal` right now.
    pub fn is_held(journal: &Path) -> bool {
        !live_streams(journal).is_empty()
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for WriterLock {
    fn drop(&mut self) {
        let _ = self.file.set_len(0);
        let _ = self.file.unlock();
    }
}

/// A recorder's right to write some streams of a journal: the shared
/// maintenance lock and one exclusive lock per stream, for as long as it lives.
#[derive(Debug)]
pub struct StreamLease {
    _journal: File,
    streams: Vec<File>,
}

impl StreamLease {
    /// Claims `streams` (id and name) for a recorder described by `holder`.
    /// Fails at once when prune holds the journal, or when another recorder
    /// holds one of the streams (naming the stream and its holder); nothing
    /// stays claimed then.
    pub fn acquire(
        journal: &Path,
        holder: &str,
        streams: &[(StreamId, String)],
    ) -> Result<StreamLease, JournalError> {
        let path = lock_path(journal);
        let mut shared = open_lock_file(&path)?;
        match shared.try_lock_shared() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(JournalError::Locked {
                    path: journal.to_path_buf(),
                    holder: read_text(&mut shared).unwrap_or_else(|| "another process".into()),
                });
            }
            Err(TryLockError::Error(source)) => return Err(JournalError::Io { path, source }),
        }
        let dir = stream_locks_dir(journal);
        create_dir(&dir)?;
        let mut held = Vec::new();
        for (id, name) in streams {
            let path = stream_lock_path(journal, *id);
            let mut file = open_lock_file(&path)?;
            if let Err(holder) = lock_stream(&mut file, &path)? {
                return Err(JournalError::StreamLocked {
                    path: journal.to_path_buf(),
                    stream: name.clone(),
                    holder,
                });
            }
            write_text(&mut file, &path, &format!("{holder} recording {name}"))?;
            held.push(file);
        }
        Ok(StreamLease {
            _journal: shared,
            streams: held,
        })
    }
}

impl Drop for StreamLease {
    fn drop(&mut self) {
        for f in &self.streams {
            let _ = f.set_len(0);
            let _ = f.unlock();
        }
    }
}

/// Takes a stream lock, or says who holds it. A reader probing the lock holds
/// it shared for an instant and writes nothing, so an empty file that is
/// locked is tried again, a bounded number of times.
fn lock_stream(file: &mut File, path: &Path) -> Result<Result<(), String>, JournalError> {
    const TRIES: u32 = 50;
    for _ in 0..TRIES {
        match file.try_lock() {
            Ok(()) => return Ok(Ok(())),
            Err(TryLockError::WouldBlock) => {
                if let Some(holder) = read_text(file) {
                    return Ok(Err(holder));
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(TryLockError::Error(source)) => {
                return Err(JournalError::Io {
                    path: path.to_path_buf(),
                    source,
                });
            }
        }
    }
    Ok(Err("another process".into()))
}

/// The streams a recorder holds right now.
pub fn live_streams(journal: &Path) -> HashSet<StreamId> {
    lock_files(journal)
        .into_iter()
        .filter(|(_, path)| is_locked(path))
        .map(|(id, _)| id)
        .collect()
}

/// Who records `journal` right now, once each (`pid 42 on host since T`).
pub fn holders(journal: &Path) -> Vec<String> {
    let mut out = BTreeSet::new();
    for (_, path) in lock_files(journal) {
        if !is_locked(&path) {
            continue;
        }
        if let Ok(mut f) = File::open(&path)
            && let Some(text) = read_text(&mut f)
        {
            // "<holder> recording <stream>": the recorder, once per process.
            let who = text
                .split(" recording ")
                .next()
                .unwrap_or(&text)
                .to_string();
            out.insert(who);
        }
    }
    out.into_iter().collect()
}

fn lock_files(journal: &Path) -> Vec<(StreamId, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(stream_locks_dir(journal)) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let id = name
                .strip_prefix("stream-")?
                .strip_suffix(".lock")?
                .parse()
                .ok()?;
            Some((id, e.path()))
        })
        .collect()
}

fn is_locked(path: &Path) -> bool {
    let Ok(file) = File::open(path) else {
        return false;
    };
    match file.try_lock_shared() {
        Ok(()) => {
            let _ = file.unlock();
            false
        }
        Err(TryLockError::WouldBlock) => true,
        Err(TryLockError::Error(_)) => false,
    }
}

fn read_text(file: &mut File) -> Option<String> {
    let mut text = String::new();
    // Best effort: the holder may be rewriting it right now.
    let _ = file.seek(SeekFrom::Start(0));
    let _ = file.read_to_string(&mut text);
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

fn write_text(file: &mut File, path: &Path, text: &str) -> Result<(), JournalError> {
    let write = |file: &mut File| -> std::io::Result<()> {
        file.set_len(0)?;
        file.seek(SeekFrom::Start(0))?;
        file.write_all(text.as_bytes())?;
        file.flush()
    };
    write(file).map_err(|source| JournalError::Io {
        path: path.to_path_buf(),
        source,
    })
}

fn create_dir(dir: &Path) -> Result<(), JournalError> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir).map_err(|source| JournalError::Io {
        path: dir.to_path_buf(),
        source,
    })
}

fn open_lock_file(path: &Path) -> Result<File, JournalError> {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path).map_err(|source| JournalError::Io {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn streams(ids: &[StreamId]) -> Vec<(StreamId, String)> {
        ids.iter().map(|i| (*i, format!("s{i}"))).collect()
    }

    #[test]
    fn recorders_of_other_streams_share_and_the_same_stream_is_refused_and_named() {
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("journal.db");
        let first = StreamLease::acquire(&journal, "pid 1 on test", &streams(&[1, 2])).unwrap();
        let second = StreamLease::acquire(&journal, "pid 2 on test", &streams(&[3])).unwrap();
        assert_eq!(live_streams(&journal), HashSet::from([1, 2, 3]));
        assert_eq!(holders(&journal), ["pid 1 on test", "pid 2 on test"]);
        match StreamLease::acquire(&journal, "pid 3 on test", &streams(&[4, 2])).unwrap_err() {
            JournalError::StreamLocked { stream, holder, .. } => {
                assert_eq!(stream, "s2");
                assert_eq!(holder, "pid 1 on test recording s2");
            }
            other => panic!("unexpected {other:?}"),
        }
        // Nothing of the refused claim stays held.
        assert_eq!(live_streams(&journal), HashSet::from([1, 2, 3]));
        // Prune waits for nobody: it is refused while recorders run, naming them.
        match WriterLock::acquire(&journal, "prune").unwrap_err() {
            JournalError::Locked { holder, .. } => {
                assert_eq!(holder, "pid 1 on test; pid 2 on test")
            }
            other => panic!("unexpected {other:?}"),
        }
        drop(first);
        drop(second);
        assert!(!WriterLock::is_held(&journal));
        let prune = WriterLock::acquire(&journal, "prune (pid 9)").unwrap();
        match StreamLease::acquire(&journal, "pid 4", &streams(&[1])).unwrap_err() {
            JournalError::Locked { holder, .. } => assert_eq!(holder, "prune (pid 9)"),
            other => panic!("unexpected {other:?}"),
        }
        drop(prune);
        StreamLease::acquire(&journal, "pid 5", &streams(&[1])).unwrap();
    }
}
