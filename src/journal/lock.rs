//! The single-writer lock: one recorder per journal.
//!
//! The lock is an OS advisory lock on `<journal>.lock` (never on the database file
//! itself, whose locks belong to SQLite). The operating system drops it when the
//! holder exits, even after `kill -9`, so a stale lock cannot block the next
//! recorder. The file's text names the holder for the error message.

use super::JournalError;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// Held for as long as a recorder writes; dropping it releases the lock.
#[derive(Debug)]
pub struct WriterLock {
    file: File,
    path: PathBuf,
}

/// The lock file path for a journal path.
pub fn lock_path(journal: &Path) -> PathBuf {
    let mut name = journal.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

impl WriterLock {
    /// Takes the lock or fails at once naming the current holder.
    pub fn acquire(journal: &Path, holder: &str) -> Result<WriterLock, JournalError> {
        let path = lock_path(journal);
        let mut file = open_lock_file(&path).map_err(|source| JournalError::Io {
            path: path.clone(),
            source,
        })?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut text = String::new();
                // Best effort: the holder may be rewriting it right now.
                let _ = file.read_to_string(&mut text);
                let text = text.trim();
                return Err(JournalError::Locked {
                    path: journal.to_path_buf(),
                    holder: if text.is_empty() {
                        "another process".to_string()
                    } else {
                        text.to_string()
                    },
                });
            }
            Err(TryLockError::Error(source)) => {
                return Err(JournalError::Io { path, source });
            }
        }
        let write = |file: &mut File| -> std::io::Result<()> {
            file.set_len(0)?;
            file.seek(SeekFrom::Start(0))?;
            file.write_all(holder.as_bytes())?;
            file.flush()
        };
        write(&mut file).map_err(|source| JournalError::Io {
            path: path.clone(),
            source,
        })?;
        Ok(WriterLock { file, path })
    }

    /// True when some process holds the writer lock of `journal` right now.
    pub fn is_held(journal: &Path) -> bool {
        let path = lock_path(journal);
        let Ok(file) = File::open(&path) else {
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

fn open_lock_file(path: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_writer_is_refused_and_named() {
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("journal.db");
        let first = WriterLock::acquire(&journal, "pid 1 on test").unwrap();
        assert!(WriterLock::is_held(&journal));
        let err = WriterLock::acquire(&journal, "pid 2 on test").unwrap_err();
        match err {
            JournalError::Locked { holder, .. } => assert_eq!(holder, "pid 1 on test"),
            other => panic!("unexpected {other:?}"),
        }
        drop(first);
        assert!(!WriterLock::is_held(&journal));
        WriterLock::acquire(&journal, "pid 3 on test").unwrap();
    }
}
