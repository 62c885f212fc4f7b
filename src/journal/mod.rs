//! The journal: one SQLite file (WAL) holding everything a recorder saw.
//!
//! - [`Journal`] opens a journal for reading, or creates one for the recorder,
//!   refusing files that are not krply journals (docs/journal.md).
//! - [`writer`] is the single writer thread with batched transactions.
//! - [`read`] answers status and coverage questions without scanning history.
//! - [`codec`] stores bodies compactly and returns their exact bytes.

pub mod audit;
pub mod audit_pack;
pub mod block;
pub mod bodies;
pub mod codec;
pub mod cold;
pub mod export;
pub mod fold;
pub mod imports;
pub mod lock;
pub mod plans;
pub mod prune;
pub mod read;
pub mod records;
pub mod retain;
pub mod schema;
pub mod snapshots;
pub mod versions;
pub mod wire;
pub mod writer;
pub mod zones;

use crate::model::{ResourceType, StreamSpec};
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use schema::FileState;
use std::path::{Path, PathBuf};

pub use lock::{StreamLease, WriterLock};

/// A map keyed by the journal's own integer ids (rows, streams, seqs). No key
/// comes from outside, so it hashes with foldhash (seeded per process) rather
/// than SipHash: on a `diff` over 100,000 records, SipHash took a tenth of
/// the time.
pub type IdMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// A set of the journal's own integer ids; see [`IdMap`].
pub type IdSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;

/// The smallest `seq` of the journal's records, rows or kept in blocks (1
/// when there is none): a new baseline goes below it.
pub(crate) const MIN_SEQ: &str = "SELECT coalesce(min((SELECT min(seq) FROM records),
                                         (SELECT min(first_seq) FROM blocks)),
                                     (SELECT min(seq) FROM records),
                                     (SELECT min(first_seq) FROM blocks), 1)";

/// Everything that can go wrong with a journal file.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("no journal at {0} (nothing has been recorded there yet)")]
    Missing(PathBuf),
    #[error("{path} is not a krply journal ({detail}); refusing to touch it")]
    Foreign { path: PathBuf, detail: String },
    #[error("journal {path} is damaged: {detail}")]
    Corrupt { path: PathBuf, detail: String },
    #[error(
        "journal {path} has schema version {found}, newer than this kubectl-krply understands ({supported})"
    )]
    TooNew {
        path: PathBuf,
        found: i64,
        supported: i64,
    },
    #[error("journal {path} is in use by {holder}")]
    Locked { path: PathBuf, holder: String },
    #[error("stream {stream} of journal {path} is already being recorded by {holder}")]
    StreamLocked {
        path: PathBuf,
        stream: String,
        holder: String,
    },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("journal {path}: {source}")]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("journal {path}: {source}")]
    Codec {
        path: PathBuf,
        source: codec::CodecError,
    },
    #[error("the journal writer stopped: {0}")]
    WriterStopped(String),
}

impl JournalError {
    /// Classifies an SQLite error on `path`: damage and foreign files get their
    /// own kinds so the user hears what is wrong.
    pub fn sqlite(path: &Path, source: rusqlite::Error) -> JournalError {
        use rusqlite::ErrorCode;
        match source.sqlite_error_code() {
            Some(ErrorCode::NotADatabase) => JournalError::Foreign {
                path: path.to_path_buf(),
                detail: "not an SQLite database".into(),
            },
            Some(ErrorCode::DatabaseCorrupt) => JournalError::Corrupt {
                path: path.to_path_buf(),
                detail: source.to_string(),
            },
            _ => JournalError::Sqlite {
                path: path.to_path_buf(),
                source,
            },
        }
    }
}

/// The default journal path: `$XDG_DATA_HOME/krply/journal.db` (the platform data
/// directory elsewhere).
pub fn default_path() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "krply").map(|d| d.data_dir().join("journal.db"))
}

/// An open journal.
pub struct Journal {
    conn: Connection,
    path: PathBuf,
    /// The dictionaries bodies were compressed with, loaded when first needed.
    dicts: std::cell::RefCell<std::collections::HashMap<i64, std::sync::Arc<codec::DecoderDict>>>,
    /// The last pack read (consecutive versions of an object share one).
    last_pack: std::cell::RefCell<Option<std::sync::Arc<versions::StoredPack>>>,
    /// The last block read, with its bodies' places, likewise.
    last_block: std::cell::RefCell<Option<versions::HeldBlock>>,
    /// The last block's columns, and a context to decode them.
    cold: std::cell::RefCell<versions::ColdCache>,
    /// Whether this connection is in a read transaction [`Journal::begin_read`]
    /// began: what is kept of its snapshot is forgotten when one begins or
    /// ends, so it is used only in the snapshot it was read in.
    reading: std::cell::Cell<bool>,
}

/// What a read snapshot holds of `records`, enough to tell whether a later
/// snapshot still holds the same (docs/journal.md, "Reading on several
/// connections").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotMark {
    pub lowest: i64,
    pub highest: i64,
    /// How many times history was deleted behind a recorder
    /// ([`retain::bump_generation`]).
    pub generation: i64,
}

impl SnapshotMark {
    /// Whether a snapshot taken later, which saw `later`, reads every record up
    /// to `self.highest` as this one did. Records are only appended above the
    /// highest `seq`; the one change to what exists below it is pruning:
    /// `prune` writes a baseline below the lowest, and retention behind a
    /// recorder, which deletes in steps after its baseline, counts each
    /// step in the generation.
    pub fn still_held_by(self, later: SnapshotMark) -> bool {
        later.lowest == self.lowest
            && later.generation == self.generation
            && later.highest >= self.highest
    }
}

/// Identifies a stream row in one journal.
pub type StreamId = i64;

/// When (ms since the epoch) and at which resourceVersion a stream was last known
/// complete.
/// Where a stream's history was last known complete, from the journal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DurablePoint {
    /// When (ms): a checkpoint's or a baseline's time.
    pub at: i64,
    /// At which resourceVersion.
    pub rv: String,
    /// When its last baseline was listed (ms): nothing before that can be
    /// missing from the journal.
    pub listed_at: Option<i64>,
}

impl Journal {
    /// Opens an existing journal for reading; never creates one.
    pub fn open(path: &Path) -> Result<Journal, JournalError> {
        match std::fs::metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(JournalError::Missing(path.to_path_buf()));
            }
            Err(source) => {
                return Err(JournalError::Io {
                    path: path.to_path_buf(),
                    source,
                });
            }
            Ok(m) if m.is_dir() => {
                return Err(JournalError::Foreign {
                    path: path.to_path_buf(),
                    detail: "it is a directory".into(),
                });
            }
            Ok(m) if m.len() == 0 => return Err(JournalError::Missing(path.to_path_buf())),
            Ok(_) => {}
        }
        let mut journal = Self::connect(path)?;
        match journal.identify()? {
            FileState::Empty => Err(JournalError::Missing(path.to_path_buf())),
            FileState::Foreign { .. } => Err(foreign(path)),
            FileState::Journal { version } => {
                journal.check_version(version)?;
                if version < schema::SCHEMA_VERSION {
                    // Migrations are one transaction each and keep every row, so
                    // a recorder of the older version can keep appending to its
                    // streams meanwhile (docs/journal.md, "Identity and versions").
                    schema::migrate(&mut journal.conn, version)
                        .map_err(|e| JournalError::sqlite(path, e))?;
                }
                journal.configure(false)?;
                Ok(journal)
            }
        }
    }

    /// Opens a journal for recording, creating the directory (0700) and the file
    /// (0600) when they do not exist. An existing file that is not a krply journal
    /// is refused and left untouched.
    pub fn open_or_create(path: &Path) -> Result<Journal, JournalError> {
        let io = |source| JournalError::Io {
            path: path.to_path_buf(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            create_private_dir(dir).map_err(|source| JournalError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        // Two recorders starting at once must not both create the schema:
        // whoever comes second waits here, then finds the journal made.
        let _creating = lock::creation_lock(path)?;
        match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => {
                return Err(JournalError::Foreign {
                    path: path.to_path_buf(),
                    detail: "it is a directory".into(),
                });
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                create_private_file(path).map_err(io)?;
            }
            Err(e) => return Err(io(e)),
        }
        check_sqlite_header(path)?;
        let mut journal = Self::connect(path)?;
        match journal.identify()? {
            FileState::Foreign { .. } => Err(foreign(path)),
            FileState::Empty => {
                let by = format!("kubectl-krply {}", env!("CARGO_PKG_VERSION"));
                schema::initialise(&mut journal.conn, &by, crate::time::Millis::now().as_ms())
                    .map_err(|e| JournalError::sqlite(path, e))?;
                journal.configure(true)?;
                Ok(journal)
            }
            FileState::Journal { version } => {
                journal.check_version(version)?;
                if version < schema::SCHEMA_VERSION {
                    schema::migrate(&mut journal.conn, version)
                        .map_err(|e| JournalError::sqlite(path, e))?;
                }
                journal.configure(true)?;
                Ok(journal)
            }
        }
    }

    fn connect(path: &Path) -> Result<Journal, JournalError> {
        static CONFIGURED: std::sync::Once = std::sync::Once::new();
        CONFIGURED.call_once(no_bulk_page_cache);
        // No SQLITE_OPEN_CREATE: a reader never creates a journal at a mistyped path.
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| JournalError::sqlite(path, e))?;
        Ok(Journal {
            conn,
            path: path.to_path_buf(),
            dicts: Default::default(),
            last_pack: Default::default(),
            last_block: Default::default(),
            cold: Default::default(),
            reading: Default::default(),
        })
    }

    /// The dictionary `id` of `dicts`, ready to decode keyframes with.
    pub fn decoder_dict(
        &self,
        id: i64,
    ) -> Result<std::sync::Arc<codec::DecoderDict>, JournalError> {
        if let Some(d) = self.dicts.borrow().get(&id) {
            return Ok(d.clone());
        }
        let data: Vec<u8> = self
            .conn
            .prepare_cached("SELECT data FROM dicts WHERE id = ?1")
            .and_then(|mut s| s.query_row(params![id], |r| r.get(0)))
            .map_err(|e| self.err(e))?;
        let dict = std::sync::Arc::new(codec::DecoderDict::new(id, &data).map_err(|source| {
            JournalError::Codec {
                path: self.path.clone(),
                source,
            }
        })?);
        self.dicts.borrow_mut().insert(id, dict.clone());
        Ok(dict)
    }

    fn identify(&self) -> Result<FileState, JournalError> {
        schema::inspect(&self.conn).map_err(|e| self.err(e))
    }

    fn check_version(&self, version: i64) -> Result<(), JournalError> {
        if version > schema::SCHEMA_VERSION {
            return Err(JournalError::TooNew {
                path: self.path.clone(),
                found: version,
                supported: schema::SCHEMA_VERSION,
            });
        }
        Ok(())
    }

    fn configure(&mut self, writer: bool) -> Result<(), JournalError> {
        let conn = &self.conn;
        let run = || -> rusqlite::Result<()> {
            conn.busy_timeout(std::time::Duration::from_secs(5))?;
            if writer {
                conn.pragma_update(None, "journal_mode", "WAL")?;
                // A transaction under load touches a leaf of `records_object`
                // for most objects it writes (W-wide: 234 leaves of 8 KiB):
                // room for them and the appended pages keeps them from being
                // spilled to the WAL and read back before the commit. 8 MB is
                // a ceiling, filled only as pages are used.
                conn.pragma_update(None, "cache_size", -8_000)?;
            } else {
                // Answers read scattered pages (one object's versions, its
                // bodies) and some twice: keep more of them cached.
                conn.pragma_update(None, "cache_size", -32_000)?;
                // Read pages in place instead of one pread per page.
                conn.pragma_update(None, "mmap_size", 1i64 << 30)?;
            }
            conn.pragma_update(None, "synchronous", "NORMAL")?;
            conn.pragma_update(None, "foreign_keys", true)?;
            conn.set_prepared_statement_cache_capacity(64);
            // One plan per statement, whatever its parameters: without this, a
            // statement whose parameters SQLite may use to pick a plan (to check
            // a partial index, say) is compiled again at every new binding.
            conn.set_db_config(
                rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
                true,
            )?;
            Ok(())
        };
        run().map_err(|e| self.err(e))
    }

    pub(crate) fn err(&self, e: rusqlite::Error) -> JournalError {
        JournalError::sqlite(&self.path, e)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn conn(&self) -> &Connection {
        &self.conn
    }

    /// What this connection's snapshot holds of `records`: its lowest and
    /// highest `seq` (docs/journal.md, "Reading on several connections").
    pub fn snapshot_mark(&self) -> Result<SnapshotMark, JournalError> {
        self.conn
            .query_row(
                // Each on its own, so SQLite reads one end of the table for it.
                "SELECT coalesce((SELECT min(seq) FROM records), 0),
                        coalesce((SELECT max(seq) FROM records), 0),
                        coalesce((SELECT CAST(value AS INTEGER) FROM meta
                                  WHERE key = 'prune_generation'), 0)",
                [],
                |r| {
                    Ok(SnapshotMark {
                        lowest: r.get(0)?,
                        highest: r.get(1)?,
                        generation: r.get(2)?,
                    })
                },
            )
            .map_err(|e| self.err(e))
    }

    /// Another connection to this journal, in a read transaction of its own
    /// that holds every record `mark` holds, as it held them: records with a
    /// `seq` up to `mark.highest` read the same there. `None` when history was
    /// pruned since `mark` was taken (docs/journal.md, "Reading on several
    /// connections"); read on this connection then.
    pub fn beside(&self, mark: SnapshotMark) -> Result<Option<Journal>, JournalError> {
        let mut other = Self::connect(&self.path)?;
        other.configure(false)?;
        other.begin_read()?;
        let seen = other.snapshot_mark()?;
        Ok(mark.still_held_by(seen).then_some(other))
    }

    /// Starts a read transaction: the queries until [`Journal::end_read`] see one
    /// snapshot, and pay for the shared lock once instead of per statement.
    pub fn begin_read(&self) -> Result<(), JournalError> {
        if self.conn.is_autocommit() {
            self.conn.execute_batch("BEGIN").map_err(|e| self.err(e))?;
            // A deferred transaction takes its snapshot at the first read.
            self.conn
                .query_row("SELECT count(*) FROM clusters", [], |_| Ok(()))
                .map_err(|e| self.err(e))?;
            self.cold.borrow_mut().forget_snapshot();
            self.reading.set(true);
        }
        Ok(())
    }

    /// Whether this connection is still in the read transaction
    /// [`Journal::begin_read`] began: what is kept of its snapshot holds.
    pub(crate) fn snapshot_held(&self) -> bool {
        self.reading.get() && !self.conn.is_autocommit()
    }

    /// Forgets the pack and block last read: a writer on this connection
    /// may give a deleted pack's id to its next one.
    pub(crate) fn forget_read_bodies(&self) {
        *self.last_pack.borrow_mut() = None;
        *self.last_block.borrow_mut() = None;
        *self.cold.borrow_mut() = Default::default();
    }

    /// Ends the read transaction started by [`Journal::begin_read`]. Every
    /// write on a reader's connection calls it first: a write inside a read
    /// snapshot fails once a recorder has committed since.
    pub fn end_read(&self) {
        self.reading.set(false);
        self.cold.borrow_mut().forget_snapshot();
        if !self.conn.is_autocommit() {
            let _ = self.conn.execute_batch("ROLLBACK");
        }
    }

    /// Makes freed pages go back to the file system a few at a time
    /// (`auto_vacuum = INCREMENTAL`), for retention behind a recorder. A
    /// journal made before that needs a VACUUM once, which rewrites the file
    /// in one transaction: stopped at any point (`kill -9`), the journal is
    /// as it was. Returns whether it had to.
    pub fn enable_incremental_vacuum(&self) -> Result<bool, JournalError> {
        let err = |e| self.err(e);
        let mode: i64 = self
            .conn
            .query_row("PRAGMA auto_vacuum", [], |r| r.get(0))
            .map_err(err)?;
        if mode == 2 {
            return Ok(false);
        }
        self.conn
            .execute_batch("PRAGMA auto_vacuum = INCREMENTAL; VACUUM;")
            .map_err(err)?;
        Ok(true)
    }

    /// A value of the journal's `meta` table.
    pub fn meta(&self, key: &str) -> Result<Option<String>, JournalError> {
        self.conn
            .query_row(
                "SELECT value FROM meta WHERE key = ?1",
                rusqlite::params![key],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// Sets (or with `None`, removes) a value of the `meta` table.
    pub fn set_meta(&self, key: &str, value: Option<&str>) -> Result<(), JournalError> {
        let done = match value {
            Some(v) => self.conn.execute(
                "INSERT INTO meta(key, value) VALUES (?1, ?2)
                 ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                rusqlite::params![key, v],
            ),
            None => self
                .conn
                .execute("DELETE FROM meta WHERE key = ?1", rusqlite::params![key]),
        };
        done.map(|_| ()).map_err(|e| self.err(e))
    }

    /// Runs SQLite's own consistency check; used before a recorder appends.
    pub fn check_integrity(&self) -> Result<(), JournalError> {
        let mut stmt = self
            .conn
            .prepare("PRAGMA quick_check(5)")
            .map_err(|e| self.err(e))?;
        let problems: Vec<String> = stmt
            .query_map([], |r| r.get::<_, String>(0))
            .and_then(|rows| rows.collect())
            .map_err(|e| self.err(e))?;
        if problems.len() == 1 && problems[0] == "ok" {
            Ok(())
        } else {
            Err(JournalError::Corrupt {
                path: self.path.clone(),
                detail: problems.join("; "),
            })
        }
    }

    /// Records (or refreshes) a cluster: its server URL and the context used.
    pub fn register_cluster(
        &self,
        id: &str,
        server: &str,
        context: Option<&str>,
    ) -> Result<(), JournalError> {
        self.conn
            .execute(
                "INSERT INTO clusters(id, server, context, first_seen) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(id) DO UPDATE SET context = coalesce(excluded.context, context)",
                params![id, server, context, crate::time::Millis::now().as_ms()],
            )
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    /// Returns the id of the stream for `spec` in `cluster`, creating its row
    /// ([`insert_stream`]).
    pub fn register_stream(
        &self,
        cluster: &str,
        spec: &StreamSpec,
    ) -> Result<StreamId, JournalError> {
        insert_stream(&self.conn, cluster, spec, "").map_err(|e| self.err(e))
    }

    /// This journal's id (`meta.journal_id`), which its exported segments carry.
    pub fn id(&self) -> Result<String, JournalError> {
        self.conn
            .query_row("SELECT value FROM meta WHERE key = 'journal_id'", [], |r| {
                r.get(0)
            })
            .map_err(|e| self.err(e))
    }

    /// The last durable point of a stream: when and at which resourceVersion it
    /// was last known complete (checkpoint or baseline), and when it was last
    /// listed. `None` for a new stream.
    pub fn last_durable(&self, stream: StreamId) -> Result<Option<DurablePoint>, JournalError> {
        self.conn
            .query_row(
                &format!(
                    "SELECT observed_at, resource_version,
                            (SELECT max(observed_at) FROM records
                             WHERE stream_id = ?1 AND kind = {baseline})
                     FROM records
                     WHERE stream_id = ?1 AND kind IN ({checkpoint}, {baseline}) AND {meta}
                     ORDER BY seq DESC LIMIT 1",
                    checkpoint = schema::kind::CHECKPOINT,
                    baseline = schema::kind::BASELINE,
                    meta = schema::kind::META
                ),
                params![stream],
                |r| {
                    Ok(DurablePoint {
                        at: r.get(0)?,
                        rv: r.get::<_, Option<String>>(1)?.unwrap_or_default(),
                        listed_at: r.get(2)?,
                    })
                },
            )
            .optional()
            .map_err(|e| self.err(e))
    }
}

/// Tells SQLite to give each connection no page cache up front. By default a
/// connection's first page takes memory for 20 at once, about 170 KB with our
/// 8 KiB pages, and lays them out: some 40 fresh pages of memory touched,
/// a tenth of what a short reader's whole process touches (`status`; see
/// docs/journal.md, "Where the time of an answer goes"). Pages are then
/// taken one at a time, as the cache grows; the cache's size is unchanged.
///
/// It must come before SQLite starts, that is before the process's first
/// connection; said later, SQLite refuses it (`SQLITE_MISUSE`) and keeps its
/// default, which is only slower to start.
fn no_bulk_page_cache() {
    // SAFETY: sqlite3_config is called once (a `Once`), before this process
    // opens its first connection, with SQLITE_CONFIG_PAGECACHE's documented
    // arguments: a null buffer, a slot size and a count of 0 (no bulk memory).
    let _ = unsafe {
        rusqlite::ffi::sqlite3_config(
            rusqlite::ffi::SQLITE_CONFIG_PAGECACHE,
            std::ptr::null_mut::<std::ffi::c_void>(),
            0 as std::ffi::c_int,
            0 as std::ffi::c_int,
        )
    };
}

fn foreign(path: &Path) -> JournalError {
    JournalError::Foreign {
        path: path.to_path_buf(),
        detail: "an SQLite database of another application".into(),
    }
}

/// Refuses a non-empty file that does not start with the SQLite header, before
/// SQLite gets a chance to look at it.
fn check_sqlite_header(path: &Path) -> Result<(), JournalError> {
    use std::io::Read;
    let mut head = [0u8; 16];
    let mut file = std::fs::File::open(path).map_err(|source| JournalError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let n = file.read(&mut head).map_err(|source| JournalError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    if n == 0 || head == *b"SQLite format 3\0" {
        Ok(())
    } else {
        Err(JournalError::Foreign {
            path: path.to_path_buf(),
            detail: "not an SQLite database".into(),
        })
    }
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

fn create_private_file(path: &Path) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    match options.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// Converts a [`ResourceType`] stored in a stream row back into a value.
/// The id of the stream `spec` of `cluster` from `origin` (empty: recorded
/// here), its row created when missing; discovery metadata (kind, singular,
/// short names) is refreshed, so offline resolution sees what the server
/// last said.
pub(crate) fn insert_stream(
    conn: &rusqlite::Connection,
    cluster: &str,
    spec: &StreamSpec,
    origin: &str,
) -> rusqlite::Result<StreamId> {
    let r = &spec.resource;
    let namespace = spec.namespace.as_deref().unwrap_or("");
    let selector = spec.selector.as_deref().unwrap_or("");
    let short = serde_json::to_string(&r.short_names).unwrap_or_else(|_| "[]".into());
    conn.execute(
        "INSERT INTO streams(cluster_id, grp, version, resource, kind, singular, short_names,
                             namespaced, namespace, selector, created_at, origin)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
         ON CONFLICT(cluster_id, grp, version, resource, namespace, selector, origin)
         DO UPDATE SET kind = excluded.kind, singular = excluded.singular,
                       short_names = excluded.short_names, namespaced = excluded.namespaced",
        params![
            cluster,
            r.group,
            r.version,
            r.resource,
            r.kind,
            r.singular,
            short,
            r.namespaced,
            namespace,
            selector,
            crate::time::Millis::now().as_ms(),
            origin
        ],
    )?;
    conn.query_row(
        "SELECT id FROM streams WHERE cluster_id = ?1 AND grp = ?2 AND version = ?3
           AND resource = ?4 AND namespace = ?5 AND selector = ?6 AND origin = ?7",
        params![
            cluster, r.group, r.version, r.resource, namespace, selector, origin
        ],
        |row| row.get(0),
    )
}

pub(crate) fn resource_from_row(
    row: &rusqlite::Row<'_>,
    at: usize,
) -> rusqlite::Result<ResourceType> {
    let short: String = row.get(at + 5)?;
    Ok(ResourceType {
        group: row.get(at)?,
        version: row.get(at + 1)?,
        resource: row.get(at + 2)?,
        kind: row.get(at + 3)?,
        singular: row.get(at + 4)?,
        short_names: serde_json::from_str(&short).unwrap_or_default(),
        namespaced: row.get(at + 6)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_then_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/journal.db");
        assert!(matches!(
            Journal::open(&path),
            Err(JournalError::Missing(_))
        ));
        Journal::open_or_create(&path).unwrap();
        Journal::open(&path).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
            let mode = std::fs::metadata(path.parent().unwrap())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o700);
        }
    }

    #[test]
    fn garbage_is_refused_and_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.db");
        let garbage = b"this is not a database at all, it is a shopping list".repeat(100);
        std::fs::write(&path, &garbage).unwrap();
        for result in [Journal::open(&path), Journal::open_or_create(&path)] {
            assert!(matches!(result, Err(JournalError::Foreign { .. })));
        }
        assert_eq!(std::fs::read(&path).unwrap(), garbage);
    }

    #[test]
    fn foreign_sqlite_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("other.db");
        Connection::open(&path)
            .unwrap()
            .execute_batch("CREATE TABLE songs(title TEXT)")
            .unwrap();
        let before = std::fs::read(&path).unwrap();
        assert!(matches!(
            Journal::open_or_create(&path),
            Err(JournalError::Foreign { .. })
        ));
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }

    #[test]
    fn newer_schema_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.db");
        drop(Journal::open_or_create(&path).unwrap());
        Connection::open(&path)
            .unwrap()
            .pragma_update(None, "user_version", schema::SCHEMA_VERSION + 1)
            .unwrap();
        for result in [Journal::open(&path), Journal::open_or_create(&path)] {
            assert!(matches!(result, Err(JournalError::TooNew { .. })));
        }
    }

    #[test]
    fn a_connection_beside_reads_the_same_records_until_a_prune() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.db");
        let writer = Journal::open_or_create(&path).unwrap();
        let add = |seq: i64| {
            let conn = writer.conn();
            conn.pragma_update(None, "foreign_keys", false).unwrap();
            conn.execute(
                "INSERT INTO records(seq, stream_id, kind, observed_at) VALUES (?1, 1, 3, 5)",
                params![seq],
            )
            .unwrap();
        };
        add(10);
        add(11);
        let reader = Journal::open(&path).unwrap();
        reader.begin_read().unwrap();
        let mark = reader.snapshot_mark().unwrap();
        assert_eq!(
            mark,
            SnapshotMark {
                lowest: 10,
                highest: 11,
                generation: 0,
            }
        );
        // A recorder appends: the records up to the mark read the same.
        add(12);
        let beside = reader.beside(mark).unwrap().expect("same records");
        assert_eq!(beside.snapshot_mark().unwrap().highest, 12);
        // A prune writes its baselines below the lowest seq.
        add(3);
        assert!(reader.beside(mark).unwrap().is_none());
        // The reader's own snapshot did not move.
        assert_eq!(reader.snapshot_mark().unwrap(), mark);
        // Retention deletes in steps after its baseline, each counted.
        let reader = Journal::open(&path).unwrap();
        reader.begin_read().unwrap();
        let mark = reader.snapshot_mark().unwrap();
        {
            let mut conn = rusqlite::Connection::open(&path).unwrap();
            let tx = conn.transaction().unwrap();
            retain::bump_generation(&tx).unwrap();
            retain::bump_generation(&tx).unwrap();
            tx.commit().unwrap();
        }
        let later = Journal::open(&path).unwrap().snapshot_mark().unwrap();
        assert_eq!(later.generation, 2);
        assert!(reader.beside(mark).unwrap().is_none());
    }
}
