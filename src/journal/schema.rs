//! The journal's SQLite schema, its version and the checks that keep krply from
//! touching a file that is not its own.
//!
//! A journal is recognised by `PRAGMA application_id` ([`APPLICATION_ID`]); its
//! schema version is `PRAGMA user_version`. A newer binary migrates an older
//! journal; an older binary refuses a newer one.

use super::audit_pack;
use rusqlite::{Connection, OptionalExtension};

/// `krpl` in ASCII: marks an SQLite file as a krply journal.
pub const APPLICATION_ID: i64 = 0x6b72_706c;

/// The schema version this binary writes.
pub const SCHEMA_VERSION: i64 = 13;

/// Record kinds stored in `records.kind`.
///
/// `records_stream_meta` indexes every kind but [`kind::EVENT`]; every query
/// meant for it carries [`kind::META`].
pub mod kind {
    /// A live ADDED/MODIFIED/DELETED watch event.
    pub const EVENT: i64 = 1;
    /// One object seen by a list (synthetic: seen, not created).
    pub const BASELINE_ITEM: i64 = 2;
    /// A completed list: its resourceVersion and item count. `aux` is the list token
    /// shared by its items.
    pub const BASELINE: i64 = 3;
    /// History that was not watched (410, recorder down).
    pub const GAP: i64 = 4;
    /// The stream became unavailable (403/404) or available again.
    pub const COVERAGE: i64 = 5;
    /// A durable point: the stream is known complete up to this resourceVersion.
    pub const CHECKPOINT: i64 = 6;

    /// The condition every query over the stream metadata (every kind but
    /// [`EVENT`]) carries, beside its own `kind = ..`: SQLite uses the
    /// partial index `records_stream_meta` only when a query's WHERE
    /// contains the index's WHERE term as written, and cannot infer it from
    /// `kind = 3`. Without it those reads scan every event of the stream.
    pub const META: &str = "kind <> 1";
}

/// What `aux` says of a MODIFIED event (docs/journal.md, "Status-only
/// changes"): how it compares, for a default diff, with the object's record
/// just before it. `NULL` when the writer could not tell. SQLite stores 0 and
/// 1 in the record header: neither costs a byte.
pub mod mark {
    /// Nothing a default diff compares changed.
    pub const STATUS_ONLY: i64 = 1;
    /// Something a default diff compares changed.
    pub const CHANGED: i64 = 0;
}

/// Version 1 of the schema.
///
/// - `streams` hold what a recorder watched, with enough discovery metadata
///   (kind, singular, short names) to resolve `TYPE/NAME` offline.
/// - `objects` name each object once per stream; records point at them.
/// - `bodies` hold object JSON compressed with zstd, either alone (a keyframe)
///   or as a delta against an earlier keyframe of the same object (`base_id`).
/// - `records` are immutable and ordered by `seq`.
pub const SCHEMA_V1: &str = r#"
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE clusters (
    id         TEXT PRIMARY KEY,
    server     TEXT NOT NULL,
    context    TEXT,
    first_seen INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE streams (
    id          INTEGER PRIMARY KEY,
    cluster_id  TEXT NOT NULL REFERENCES clusters(id),
    grp         TEXT NOT NULL,
    version     TEXT NOT NULL,
    resource    TEXT NOT NULL,
    kind        TEXT NOT NULL,
    singular    TEXT NOT NULL,
    short_names TEXT NOT NULL,
    namespaced  INTEGER NOT NULL,
    namespace   TEXT NOT NULL,
    selector    TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    UNIQUE (cluster_id, grp, version, resource, namespace, selector)
);

CREATE TABLE objects (
    id        INTEGER PRIMARY KEY,
    stream_id INTEGER NOT NULL REFERENCES streams(id),
    namespace TEXT NOT NULL,
    name      TEXT NOT NULL,
    UNIQUE (stream_id, namespace, name)
);

CREATE TABLE dicts (
    id        INTEGER PRIMARY KEY,
    stream_id INTEGER NOT NULL REFERENCES streams(id),
    data      BLOB NOT NULL
);

CREATE TABLE bodies (
    id      INTEGER PRIMARY KEY,
    base_id INTEGER REFERENCES bodies(id),
    dict_id INTEGER REFERENCES dicts(id),
    raw_len INTEGER NOT NULL,
    data    BLOB NOT NULL
);

CREATE TABLE records (
    seq              INTEGER PRIMARY KEY,
    stream_id        INTEGER NOT NULL REFERENCES streams(id),
    kind             INTEGER NOT NULL,
    observed_at      INTEGER NOT NULL,
    watch_type       INTEGER,
    object_id        INTEGER REFERENCES objects(id),
    body_id          INTEGER REFERENCES bodies(id),
    resource_version TEXT,
    event_key        INTEGER,
    aux              INTEGER,
    info             TEXT
);

CREATE UNIQUE INDEX records_event_key ON records(object_id, event_key)
    WHERE event_key IS NOT NULL;
CREATE INDEX records_object ON records(object_id, seq)
    WHERE object_id IS NOT NULL;
CREATE INDEX records_stream_meta ON records(stream_id, kind, seq)
    WHERE kind <> 1;
CREATE INDEX records_time ON records(observed_at);
"#;

/// What a file on disk turned out to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileState {
    /// An empty SQLite database (or an empty file): safe to initialise.
    Empty,
    /// A krply journal at this schema version.
    Journal { version: i64 },
    /// Some other SQLite database.
    Foreign { application_id: i64, tables: i64 },
}

/// Reads the identity of an open database without writing to it.
pub fn inspect(conn: &Connection) -> rusqlite::Result<FileState> {
    let app: i64 = conn.query_row("PRAGMA application_id", [], |r| r.get(0))?;
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let tables: i64 = conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))?;
    Ok(if app == APPLICATION_ID {
        FileState::Journal { version }
    } else if app == 0 && tables == 0 && version == 0 {
        FileState::Empty
    } else {
        FileState::Foreign {
            application_id: app,
            tables,
        }
    })
}

/// Creates the schema in an empty database, in one transaction: version 1, then
/// every migration, so that new and migrated journals are the same.
pub fn initialise(conn: &mut Connection, created_by: &str, now_ms: i64) -> rusqlite::Result<()> {
    // page_size and auto_vacuum only take effect before the first table
    // exists. Incremental: pages freed by retention go back to the file
    // system a few at a time (docs/journal.md, "Retention").
    conn.pragma_update(None, "page_size", 8192)?;
    conn.pragma_update(None, "auto_vacuum", "INCREMENTAL")?;
    let tx = conn.transaction()?;
    tx.execute_batch(SCHEMA_V1)?;
    for (_, step) in MIGRATIONS {
        step.run(&tx)?;
    }
    tx.execute(
        "INSERT INTO meta(key, value) VALUES ('created_by', ?1), ('created_at', ?2)",
        rusqlite::params![created_by, now_ms.to_string()],
    )?;
    tx.pragma_update(None, "application_id", APPLICATION_ID)?;
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    tx.commit()
}

/// One migration: SQL, or code where SQL cannot say it. Either runs inside
/// the migration's one transaction.
#[derive(Clone, Copy)]
enum Step {
    Sql(&'static str),
    Code(fn(&Connection) -> rusqlite::Result<()>),
}

impl Step {
    fn run(&self, conn: &Connection) -> rusqlite::Result<()> {
        match self {
            Step::Sql(sql) => conn.execute_batch(sql),
            Step::Code(f) => f(conn),
        }
    }
}

/// Migrations from each older version to the next, `(from_version, step)`,
/// applied in order by [`migrate`] (and by [`initialise`] after version 1).
const MIGRATIONS: &[(i64, Step)] = &[
    (1, Step::Sql(MIGRATE_V1_TO_V2)),
    (2, Step::Sql(MIGRATE_V2_TO_V3)),
    (3, Step::Sql(MIGRATE_V3_TO_V4)),
    (4, Step::Sql(MIGRATE_V4_TO_V5)),
    (5, Step::Sql(MIGRATE_V5_TO_V6)),
    (6, Step::Sql(MIGRATE_V6_TO_V7)),
    (7, Step::Sql(MIGRATE_V7_TO_V8)),
    (8, Step::Sql(MIGRATE_V8_TO_V9)),
    (9, Step::Code(migrate_v9_to_v10)),
    (10, Step::Sql(MIGRATE_V10_TO_V11)),
    (11, Step::Sql(MIGRATE_V11_TO_V12)),
    (12, Step::Sql(MIGRATE_V12_TO_V13)),
];

/// Version 13: `blocks_time` holds each block's span whole, `(max_at,
/// min_at, first_seq, last_seq)`, and its count of records, so that a reader
/// finds every block's span in the index alone ([`super::zones::bounds`],
/// [`super::zones::all`]), as retention by size does its spread over time
/// ([`Journal::zone_times`](super::Journal::zone_times)): in version 12 each
/// read every row of `blocks`, bodies and all (twice per `diff`), which
/// grows with the history kept, not the window asked about (docs/journal.md,
/// "Where the time of an answer goes"). Windows are found by the same
/// leading columns as before.
///
/// A version 12 binary would read a version 13 journal correctly; the version
/// is raised all the same, as for every change of the schema.
const MIGRATE_V12_TO_V13: &str = r#"
DROP INDEX blocks_time;
CREATE INDEX blocks_time ON blocks(max_at, min_at, first_seq, last_seq, records);
"#;

/// Version 12: cold blocks (docs/journal.md, "Cold history in blocks";
/// [`super::block`]). A row of `blocks` holds up to 64 consecutive records
/// of one object, the oldest of its history: every record of an object
/// before its rows in `records` is in one of its blocks, and its blocks do
/// not overlap in `seq`. `blocks_object` finds an object's history,
/// `blocks_time` the blocks a window may touch, `blocks_seq` those a stretch
/// of `seq`s may. A block's id is never used again (a fold rewrites a short
/// last block as a new one), so readers keep what they decoded of a block by
/// its id.
///
/// A version 11 binary would not read the records in blocks: hence the new
/// version, which it refuses.
const MIGRATE_V11_TO_V12: &str = r#"
CREATE TABLE blocks (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    object_id INTEGER NOT NULL REFERENCES objects(id),
    first_seq INTEGER NOT NULL,
    last_seq  INTEGER NOT NULL,
    min_at    INTEGER NOT NULL,
    max_at    INTEGER NOT NULL,
    records   INTEGER NOT NULL,
    dict_id   INTEGER REFERENCES dicts(id),
    columns   BLOB NOT NULL,
    bodies    BLOB NOT NULL
);
CREATE INDEX blocks_object ON blocks(object_id, first_seq);
CREATE INDEX blocks_time ON blocks(max_at, min_at);
CREATE INDEX blocks_seq ON blocks(last_seq, first_seq);
"#;

/// Version 11: deltas waiting to be packed are kept in `waiting`, by a slot
/// the writer reuses, instead of in `blobs` by body id (docs/journal.md,
/// "Packs").
///
/// A `blobs` row was keyed by its body's id, which only grows: once packed,
/// its row left a hole in a page that no later row could fill, and a page was
/// freed only when every delta on it was packed, which the latest version of
/// a quiet object never is. On W-wide a fifth of `blobs` was holes. A slot
/// freed by packing is taken by the next delta, so holes are filled.
///
/// A waiting delta's `bodies.pack_ref` is [`WAITING`] + its slot (six bytes
/// in SQLite, as a pack's place, so packing still rewrites the row in place).
/// The rows of `blobs` move to `waiting` with their body's id as slot, then
/// `blobs` goes: a version 10 binary, which would look there, refuses
/// version 11.
const MIGRATE_V10_TO_V11: &str = r#"
CREATE TABLE waiting (
    slot INTEGER PRIMARY KEY,
    data BLOB NOT NULL
);
INSERT INTO waiting(slot, data) SELECT body_id, data FROM blobs;
UPDATE bodies SET pack_ref = 35184372088832 + id WHERE id IN (SELECT body_id FROM blobs);
DROP TABLE blobs;
"#;

/// Version 10: audit events packed per object (docs/journal.md, "Audit
/// packs"). A row of `audit_events` took about 53 bytes a write, 22 of them
/// the auditID and the time; a row of `audit_packs` holds up to
/// [`audit_pack::PACK_WRITES`] writes of one object, in key order, each
/// about 23 bytes. `(object_id, first_at)` is its key; the writes of a pack
/// come at or after `first_at` and before the next pack's (`last_at` is its
/// last write's, `writes` how many it holds), so an object's packs never
/// overlap in time. Every row of `audit_events` is packed, then the table
/// goes: a version 9 binary, which would write there, refuses version 10.
const MIGRATE_V9_TO_V10: &str = r#"
CREATE TABLE audit_packs (
    object_id INTEGER NOT NULL REFERENCES objects(id),
    first_at  INTEGER NOT NULL,
    last_at   INTEGER NOT NULL,
    writes    INTEGER NOT NULL,
    data      BLOB NOT NULL,
    PRIMARY KEY (object_id, first_at)
) WITHOUT ROWID;
"#;

fn migrate_v9_to_v10(conn: &Connection) -> rusqlite::Result<()> {
    use audit_pack::{AuditId, PackedWrite, Rv};
    use rusqlite::types::ValueRef;
    conn.execute_batch(MIGRATE_V9_TO_V10)?;
    let text = |v: ValueRef<'_>| match v {
        ValueRef::Text(t) | ValueRef::Blob(t) => Some(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Integer(n) => Some(n.to_string()),
        ValueRef::Real(f) => Some(f.to_string()),
        ValueRef::Null => None,
    };
    let mut rows = conn.prepare(
        "SELECT object_id, at, audit_id, verb, actor_id, uid_id, resource_version, subresource
         FROM audit_events ORDER BY object_id, at, audit_id",
    )?;
    let mut rows = rows.query([])?;
    let mut object = None;
    let mut writes: Vec<PackedWrite> = Vec::new();
    // Bounded by the rows of `audit_events`; an object's writes at a time.
    loop {
        let row = rows.next()?;
        let next = row.map(|r| r.get::<_, i64>(0)).transpose()?;
        if next != object || row.is_none() {
            if let Some(object) = object {
                writes.sort_by(PackedWrite::key_cmp);
                writes.dedup_by(|a, b| a.key_cmp(b).is_eq());
                for pack in audit_pack::split(&writes) {
                    audit_pack::put(conn, object, pack)?;
                }
            }
            writes.clear();
            object = next;
        }
        let Some(r) = row else { break };
        // A verb no binary wrote was skipped by every reader: it goes.
        let Some(verb) = crate::audit::Verb::from_code(r.get(3)?) else {
            continue;
        };
        writes.push(PackedWrite {
            at: r.get(1)?,
            audit_id: match r.get_ref(2)? {
                ValueRef::Blob(b) => match <[u8; 16]>::try_from(b) {
                    Ok(bytes) => AuditId::Uuid(bytes),
                    Err(_) => AuditId::Text(String::from_utf8_lossy(b).into_owned()),
                },
                v => AuditId::Text(text(v).unwrap_or_default()),
            },
            verb,
            actor: r.get(4)?,
            uid: r.get(5)?,
            resource_version: match r.get_ref(6)? {
                ValueRef::Integer(n) => Some(Rv::Int(n)),
                v => text(v).map(Rv::Text),
            },
            subresource: r.get(7)?,
        });
    }
    drop(rows);
    conn.execute_batch("DROP TABLE audit_events;")
}

/// Version 9: which subresource an audit event wrote (`audit_events.subresource`:
/// `''` the object itself, `status`, `scale`, ...; NULL for events stored
/// before, whose subresource is unknown), so that a change a relist found can
/// give its status fields to status writes and the others to the rest
/// (docs/audit.md, "Changes a relist found"). A version 8 binary would not
/// store it: hence the new version.
const MIGRATE_V8_TO_V9: &str = r#"
ALTER TABLE audit_events ADD COLUMN subresource TEXT;
"#;

/// Version 8: imported history (docs/at-scale.md, "Importing segments").
///
/// - `streams.origin` tells history recorded here (empty) from history
///   imported from another journal's segments (`IMPORTED_PREFIX`, that
///   journal's id and stream, and a lane number). A stream's key gains it, so
///   a cluster's `deployments.v1.apps@shop` recorded here and the same stream
///   imported from a teammate's journal are two streams, whose records never
///   interleave; answers choose between them by coverage. SQLite cannot change
///   a table's UNIQUE constraint in place: the table is rebuilt with its ids,
///   which `migrate` does with foreign keys off, checking them before commit.
/// - `imports` names each imported file by the SHA-256 of its bytes, so that
///   importing it again changes nothing; `import_runs` are the stretches of
///   the source journal's records (by its `seq`) an imported stream holds
///   without a break.
/// - `meta.journal_id`, random, names this journal in the segments it exports.
const MIGRATE_V7_TO_V8: &str = r#"
CREATE TABLE streams_v8 (
    id          INTEGER PRIMARY KEY,
    cluster_id  TEXT NOT NULL REFERENCES clusters(id),
    grp         TEXT NOT NULL,
    version     TEXT NOT NULL,
    resource    TEXT NOT NULL,
    kind        TEXT NOT NULL,
    singular    TEXT NOT NULL,
    short_names TEXT NOT NULL,
    namespaced  INTEGER NOT NULL,
    namespace   TEXT NOT NULL,
    selector    TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    origin      TEXT NOT NULL DEFAULT '',
    UNIQUE (cluster_id, grp, version, resource, namespace, selector, origin)
);
INSERT INTO streams_v8(id, cluster_id, grp, version, resource, kind, singular, short_names,
                       namespaced, namespace, selector, created_at)
    SELECT id, cluster_id, grp, version, resource, kind, singular, short_names,
           namespaced, namespace, selector, created_at
    FROM streams;
DROP TABLE streams;
ALTER TABLE streams_v8 RENAME TO streams;
CREATE TABLE imports (
    hash        BLOB PRIMARY KEY,
    path        TEXT NOT NULL,
    stream_id   INTEGER REFERENCES streams(id),
    first_seq   INTEGER,
    last_seq    INTEGER,
    rows        INTEGER NOT NULL,
    added       INTEGER NOT NULL,
    imported_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE import_runs (
    stream_id INTEGER NOT NULL REFERENCES streams(id),
    first_seq INTEGER NOT NULL,
    last_seq  INTEGER NOT NULL,
    PRIMARY KEY (stream_id, first_seq)
) WITHOUT ROWID;
INSERT OR IGNORE INTO meta(key, value) VALUES ('journal_id', lower(hex(randomblob(16))));
"#;

/// How `streams.origin` of an imported stream starts.
pub const IMPORTED_PREFIX: &str = "import:";

/// Version 7: audit events (docs/audit.md, "What is kept").
///
/// - `audit_events` keeps one row per successful write an imported or followed
///   audit log saw on a recorded object: when it completed, its auditID (16
///   bytes when a UUID, else text), verb, who (`audit_actors`, each distinct
///   user, groups, impersonator, user agent and source IPs once), the object's
///   uid (`audit_uids`, each once, 16 bytes when a UUID) and the response's resourceVersion (an
///   integer when it is plain decimal). Its key, `(object_id, at, audit_id)`,
///   makes importing a line twice store nothing new, and is the order the join
///   reads it in. Never a request or response body.
/// - `audit_coverage` holds the time each imported log covers, per cluster.
/// - `audit_follow` is where `record --audit-log` stopped in a file, and up
///   to when the log it read without a break covers.
const MIGRATE_V6_TO_V7: &str = r#"
CREATE TABLE audit_actors (
    id  INTEGER PRIMARY KEY,
    who TEXT NOT NULL UNIQUE
);
CREATE TABLE audit_uids (
    id  INTEGER PRIMARY KEY,
    uid BLOB NOT NULL UNIQUE
);
CREATE TABLE audit_events (
    object_id        INTEGER NOT NULL REFERENCES objects(id),
    at               INTEGER NOT NULL,
    audit_id         BLOB NOT NULL,
    verb             INTEGER NOT NULL,
    actor_id         INTEGER NOT NULL REFERENCES audit_actors(id),
    uid_id           INTEGER REFERENCES audit_uids(id),
    resource_version ANY,
    PRIMARY KEY (object_id, at, audit_id)
) WITHOUT ROWID;
CREATE TABLE audit_coverage (
    cluster_id TEXT NOT NULL REFERENCES clusters(id),
    from_at    INTEGER NOT NULL,
    to_at      INTEGER NOT NULL,
    source     TEXT NOT NULL,
    PRIMARY KEY (cluster_id, from_at, to_at, source)
) WITHOUT ROWID;
CREATE TABLE audit_follow (
    path       TEXT PRIMARY KEY,
    cluster_id TEXT NOT NULL REFERENCES clusters(id),
    device     INTEGER NOT NULL,
    inode      INTEGER NOT NULL,
    offset     INTEGER NOT NULL,
    covered_to INTEGER,
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;
"#;

/// Version 6: zones instead of a time index.
///
/// - `records_window` (about 21 bytes a record) goes. Window queries find their
///   records through `zones` ([`super::zones`]): a row per stretch of up to 4,096
///   object records, consecutive in `seq`, with their earliest and latest
///   observation times. The writer keeps them in the same transaction as the
///   records; the migration builds them from the records there are.
///
/// A version 5 binary would write records without zones: hence the new version.
const MIGRATE_V5_TO_V6: &str = r#"
DROP INDEX IF EXISTS records_window;
CREATE TABLE zones (
    first_seq INTEGER PRIMARY KEY,
    last_seq  INTEGER NOT NULL,
    records   INTEGER NOT NULL,
    min_at    INTEGER NOT NULL,
    max_at    INTEGER NOT NULL
);
INSERT INTO zones(first_seq, last_seq, records, min_at, max_at)
    SELECT min(seq), max(seq), count(*), min(observed_at), max(observed_at)
    FROM records WHERE object_id IS NOT NULL GROUP BY seq >> 12;
"#;

/// Version 5: packs. An object's older versions are compressed together, several
/// to a zstd frame (`packs.data`, with their keyframe as dictionary).
///
/// - A delta written since holds its bytes in `blobs` while it is not packed, and
///   its row in `bodies` has empty `data` and `pack_ref` 2^46.
/// - Packing it writes the pack, sets `pack_ref` to where in which pack its bytes
///   are (a number of the same size, so the row is rewritten in place) and
///   deletes its `blobs` row. (Version 11 moves these rows to `waiting`.)
/// - Rows written before keep their bytes in `data` and `pack_ref` NULL.
///
/// A version 4 binary would read the empty `data`: hence the new version.
const MIGRATE_V4_TO_V5: &str = r#"
CREATE TABLE packs (
    id      INTEGER PRIMARY KEY,
    base_id INTEGER NOT NULL REFERENCES bodies(id),
    raw_len INTEGER NOT NULL,
    data    BLOB NOT NULL
);
CREATE TABLE blobs (
    body_id INTEGER PRIMARY KEY REFERENCES bodies(id),
    data    BLOB NOT NULL
);
ALTER TABLE bodies ADD COLUMN pack_ref INTEGER;
"#;

/// Reads one body row: base, dictionary, length, bytes (from `waiting` while a
/// delta waits to be packed) and `pack_ref`.
static BODY_ROW: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "SELECT b.base_id, b.dict_id, b.raw_len, coalesce(w.data, b.data), b.pack_ref
         FROM bodies b LEFT JOIN waiting w
            ON b.pack_ref >= {WAITING} AND b.pack_ref < {PACKED} AND w.slot = b.pack_ref - {WAITING}
         WHERE b.id = ?1"
    )
});

/// A row of `bodies`, its bytes from `waiting` while it waits to be packed.
pub struct BodyRow {
    pub base: Option<i64>,
    pub dict: Option<i64>,
    pub raw_len: usize,
    pub data: Vec<u8>,
    /// A packed version: its pack and where in it its bytes start.
    pub pack: Option<(i64, usize)>,
    /// A delta waiting to be packed: its slot in `waiting`.
    pub waiting: Option<i64>,
}

/// Reads body `id`.
pub fn body_row(conn: &Connection, id: i64) -> rusqlite::Result<BodyRow> {
    conn.prepare_cached(&BODY_ROW)?.query_row([id], |r| {
        let pack_ref: Option<i64> = r.get(4)?;
        Ok(BodyRow {
            base: r.get(0)?,
            dict: r.get(1)?,
            raw_len: r.get::<_, i64>(2)?.max(0) as usize,
            data: r.get(3)?,
            pack: pack_ref.and_then(parse_pack_ref),
            waiting: pack_ref.and_then(parse_waiting_ref),
        })
    })
}

/// `bodies.pack_ref` of a delta waiting in `waiting` at slot 0; slot `n` is
/// `WAITING + n`. Below [`PACKED`], so that every slot takes six bytes too.
pub const WAITING: i64 = 1 << 45;
/// `bodies.pack_ref` of the first byte of pack 0 (which no pack is): a packed
/// version's is above it.
pub const PACKED: i64 = 1 << 46;

/// `bodies.pack_ref` of a delta waiting at `slot`; `None` when the slot does
/// not fit.
pub fn waiting_ref(slot: i64) -> Option<i64> {
    (0..PACKED - WAITING)
        .contains(&slot)
        .then_some(WAITING + slot)
}

/// The slot in `waiting` a `pack_ref` names, if it names one.
pub fn parse_waiting_ref(value: i64) -> Option<i64> {
    (WAITING..PACKED).contains(&value).then(|| value - WAITING)
}

/// Bits of `pack_ref` for the offset in the pack (packs hold at most 4 MiB).
pub const OFFSET_BITS: u32 = 22;
/// Bits of `pack_ref` for the pack's id.
const PACK_ID_BITS: u32 = 24;

/// Where a packed version's bytes are, as `bodies.pack_ref` holds it: above
/// [`PACKED`], the pack id, then the offset. Every value, and every
/// [`waiting_ref`] too, takes six bytes in SQLite (2^31 <= v < 2^47), so setting it
/// rewrites the row in place. `None` when the pack id or offset does not fit.
pub fn pack_ref(pack: i64, offset: usize) -> Option<i64> {
    let fits = (1..1 << PACK_ID_BITS).contains(&pack) && offset < 1 << OFFSET_BITS;
    fits.then_some(PACKED | pack << OFFSET_BITS | offset as i64)
}

/// The pack and offset a `pack_ref` names, `None` for a waiting delta (and for a
/// value no writer makes).
pub fn parse_pack_ref(value: i64) -> Option<(i64, usize)> {
    let rest = value
        .checked_sub(PACKED)
        .filter(|r| (0..1 << 46).contains(r))?;
    let pack = rest >> OFFSET_BITS;
    let offset = (rest & ((1 << OFFSET_BITS) - 1)) as usize;
    (pack >= 1).then_some((pack, offset))
}

/// Version 4: slimmer records and dictionaries.
///
/// - `records_event_key` goes: the writer tells a redelivered event from a new
///   one by the object's last resourceVersion, which it holds in memory, and looks
///   in the object's history (`records_object`) only when the versions do not
///   show it. New events leave `event_key` NULL; older rows keep theirs.
/// - Keyframes may be compressed with their stream's dictionary (`bodies.dict_id`,
///   rows of `dicts`), which a version 3 binary could not read: hence the new
///   version, which it refuses.
///
/// Bodies already stored are left as they are (`dict_id` NULL) and read as before.
const MIGRATE_V3_TO_V4: &str = r#"
DROP INDEX IF EXISTS records_event_key;
"#;

/// Version 3: replay plans (`replay plan`), with their verdict; `status`
/// moves to `applied` when a plan is applied, `info` holds the whole plan.
const MIGRATE_V2_TO_V3: &str = r#"
CREATE TABLE plans (
    id         TEXT PRIMARY KEY,
    cluster_id TEXT NOT NULL REFERENCES clusters(id),
    created_at INTEGER NOT NULL,
    status     TEXT NOT NULL,
    info       TEXT NOT NULL
) WITHOUT ROWID;
"#;

/// Version 2: history queries.
///
/// - `records_window` replaces the plain time index: it covers what a window
///   query needs (which objects of which streams changed between two times)
///   without touching the table, and leaves out non-object records.
/// - `snapshots` holds saved snapshots (`snapshot --save NAME`): their time and
///   what they found (watermarks, completeness), the objects themselves being
///   reconstructed from the journal on demand.
const MIGRATE_V1_TO_V2: &str = r#"
DROP INDEX IF EXISTS records_time;
CREATE INDEX records_window ON records(observed_at, stream_id, object_id)
    WHERE object_id IS NOT NULL;
CREATE TABLE snapshots (
    id         INTEGER PRIMARY KEY,
    cluster_id TEXT NOT NULL REFERENCES clusters(id),
    name       TEXT NOT NULL,
    at         INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    info       TEXT NOT NULL,
    UNIQUE (cluster_id, name)
);
"#;

/// Brings a journal at `from` up to [`SCHEMA_VERSION`] in one transaction: a
/// migration that fails or is killed part-way leaves the journal as it was.
///
/// Foreign keys are off meanwhile (a rebuilt table is dropped and its copy
/// renamed, SQLite's own recipe for changing a table) and checked before the
/// commit; they are on again afterwards, whatever happened.
pub fn migrate(conn: &mut Connection, from: i64) -> rusqlite::Result<()> {
    let was: bool = conn.query_row("PRAGMA foreign_keys", [], |r| r.get(0))?;
    conn.pragma_update(None, "foreign_keys", false)?;
    let done = migrate_with(conn, from, MIGRATIONS, SCHEMA_VERSION);
    let restored = conn.pragma_update(None, "foreign_keys", was);
    done.and(restored)
}

fn migrate_with(
    conn: &mut Connection,
    from: i64,
    migrations: &[(i64, Step)],
    to: i64,
) -> rusqlite::Result<()> {
    if from >= to {
        return Ok(());
    }
    let tx = conn.transaction()?;
    for (version, step) in migrations.iter().filter(|(v, _)| *v >= from) {
        step.run(&tx)?;
        tx.pragma_update(None, "user_version", version + 1)?;
    }
    let broken: Option<String> = tx
        .query_row("PRAGMA foreign_key_check", [], |r| r.get(0))
        .optional()?;
    if let Some(table) = broken {
        return Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CONSTRAINT_FOREIGNKEY),
            Some(format!("the migration left a broken reference in {table}")),
        ));
    }
    tx.pragma_update(None, "user_version", to)?;
    tx.commit()
}

/// How SQLite would run `sql` on a new journal: the detail of each step of
/// its plan (`EXPLAIN QUERY PLAN`), for tests that a query reads an index.
/// Its parameters are bound to NULL (the plan does not depend on them).
#[cfg(test)]
pub(crate) fn plan_of(sql: &str) -> Vec<String> {
    let mut conn = Connection::open_in_memory().expect("an in-memory database");
    initialise(&mut conn, "test", 0).expect("a new journal");
    conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
        .and_then(|mut s| {
            let nulls = vec![rusqlite::types::Null; s.parameter_count()];
            s.query_map(rusqlite::params_from_iter(nulls), |r| r.get(3))?
                .collect()
        })
        .expect("a plan")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_docs_name_the_current_version_and_its_history() {
        let doc = include_str!("../../docs/journal.md");
        let current = format!("currently **{SCHEMA_VERSION}**");
        assert!(doc.contains(&current), "docs/journal.md lacks {current:?}");
        for version in 2..=SCHEMA_VERSION {
            let entry = format!("  - version {version}:");
            assert!(doc.contains(&entry), "docs/journal.md lacks {entry:?}");
        }
    }

    /// A journal of schema version 1 at `path`.
    fn version_1_journal(path: &std::path::Path) -> Connection {
        let conn = Connection::open(path).unwrap();
        conn.execute_batch(SCHEMA_V1).unwrap();
        conn.pragma_update(None, "application_id", APPLICATION_ID)
            .unwrap();
        conn.pragma_update(None, "user_version", 1).unwrap();
        conn
    }

    #[test]
    fn fresh_database_is_empty_then_a_journal() {
        let mut conn = Connection::open_in_memory().unwrap();
        assert_eq!(inspect(&conn).unwrap(), FileState::Empty);
        initialise(&mut conn, "test", 1).unwrap();
        assert_eq!(
            inspect(&conn).unwrap(),
            FileState::Journal {
                version: SCHEMA_VERSION
            }
        );
    }

    #[test]
    fn a_version_1_journal_migrates_to_what_a_new_one_is() {
        let schema = |conn: &Connection| -> Vec<String> {
            let mut stmt = conn
                .prepare("SELECT sql FROM sqlite_schema WHERE sql IS NOT NULL ORDER BY name")
                .unwrap();
            stmt.query_map([], |r| r.get(0))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap()
        };
        let mut fresh = Connection::open_in_memory().unwrap();
        initialise(&mut fresh, "test", 1).unwrap();
        let mut old = Connection::open_in_memory().unwrap();
        old.execute_batch(SCHEMA_V1).unwrap();
        old.pragma_update(None, "application_id", APPLICATION_ID)
            .unwrap();
        old.pragma_update(None, "user_version", 1).unwrap();
        migrate(&mut old, 1).unwrap();
        // Each step, not only the whole way.
        let mut step = Connection::open_in_memory().unwrap();
        step.execute_batch(SCHEMA_V1).unwrap();
        step.execute_batch(MIGRATE_V1_TO_V2).unwrap();
        step.pragma_update(None, "application_id", APPLICATION_ID)
            .unwrap();
        step.pragma_update(None, "user_version", 2).unwrap();
        migrate(&mut step, 2).unwrap();
        assert_eq!(schema(&step), schema(&fresh));
        assert_eq!(
            inspect(&old).unwrap(),
            FileState::Journal {
                version: SCHEMA_VERSION
            }
        );
        assert_eq!(schema(&old), schema(&fresh));
    }

    #[test]
    fn a_migration_that_fails_part_way_leaves_the_journal_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.db");
        let mut conn = version_1_journal(&path);
        let steps: &[(i64, Step)] = &[
            (1, Step::Sql(MIGRATE_V1_TO_V2)),
            (2, Step::Sql(MIGRATE_V2_TO_V3)),
            (
                3,
                Step::Sql("DROP INDEX records_event_key; THIS IS NOT SQL"),
            ),
        ];
        assert!(migrate_with(&mut conn, 1, steps, 4).is_err());
        drop(conn);
        let conn = Connection::open(&path).unwrap();
        assert_eq!(inspect(&conn).unwrap(), FileState::Journal { version: 1 });
        let names: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_schema WHERE type IN ('table', 'index') ORDER BY 1")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(names.contains(&"records_time".to_string()), "{names:?}");
        assert!(names.contains(&"records_event_key".to_string()));
        assert!(!names.contains(&"plans".to_string()));
        let ok: String = conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(ok, "ok");
    }

    #[test]
    fn version_8_rebuilds_streams_with_their_ids_and_references() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = version_1_journal(&dir.path().join("journal.db"));
        conn.pragma_update(None, "foreign_keys", true).unwrap();
        migrate_with(&mut conn, 1, &MIGRATIONS[..6], 7).unwrap();
        conn.execute_batch(
            "INSERT INTO clusters VALUES ('c', 'https://127.0.0.1:6443', NULL, 1);
             INSERT INTO streams(id, cluster_id, grp, version, resource, kind, singular,
                                 short_names, namespaced, namespace, selector, created_at)
                 VALUES (7, 'c', 'apps', 'v1', 'deployments', 'Deployment', 'deployment',
                         '[]', 1, 'shop', '', 1);
             INSERT INTO objects(id, stream_id, namespace, name) VALUES (3, 7, 'shop', 'web');
             INSERT INTO records(seq, stream_id, kind, observed_at, object_id)
                 VALUES (1, 7, 1, 5, 3);",
        )
        .unwrap();
        migrate(&mut conn, 7).unwrap();
        let row: (i64, String) = conn
            .query_row("SELECT id, origin FROM streams", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        assert_eq!(row, (7, String::new()));
        let broken: i64 = conn
            .query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(broken, 0);
        let on: bool = conn
            .query_row("PRAGMA foreign_keys", [], |r| r.get(0))
            .unwrap();
        assert!(on, "foreign keys are on again");
        let id: String = conn
            .query_row("SELECT value FROM meta WHERE key = 'journal_id'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(id.len(), 32);
        // The same stream imported from elsewhere is another row.
        conn.execute(
            "INSERT INTO streams(cluster_id, grp, version, resource, kind, singular, short_names,
                                 namespaced, namespace, selector, created_at, origin)
             SELECT cluster_id, grp, version, resource, kind, singular, short_names,
                    namespaced, namespace, selector, 2, 'import:x#1' FROM streams",
            [],
        )
        .unwrap();
    }

    #[test]
    fn pack_refs_round_trip_and_all_take_six_bytes() {
        let six_bytes = |v: i64| (1i64 << 31..1i64 << 47).contains(&v);
        assert!(six_bytes(PACKED));
        assert_eq!(parse_pack_ref(PACKED), None);
        for slot in [0, 1, 70_000, PACKED - WAITING - 1] {
            let v = waiting_ref(slot).unwrap();
            assert!(six_bytes(v), "{v}");
            assert_eq!(parse_waiting_ref(v), Some(slot));
            assert_eq!(parse_pack_ref(v), None, "a waiting delta is in no pack");
        }
        assert_eq!(waiting_ref(-1), None);
        assert_eq!(waiting_ref(PACKED - WAITING), None);
        assert_eq!(parse_waiting_ref(PACKED + (1 << OFFSET_BITS)), None);
        assert_eq!(parse_waiting_ref(5), None);
        // The migration to version 11 writes the number itself.
        assert!(MIGRATE_V10_TO_V11.contains(&format!(" {WAITING} + id")));
        for (pack, offset) in [(1, 0), (7, 3_441), ((1 << 24) - 1, (4 << 20) - 1)] {
            let v = pack_ref(pack, offset).unwrap();
            assert!(six_bytes(v), "{v}");
            assert_eq!(parse_pack_ref(v), Some((pack, offset)));
        }
        assert_eq!(pack_ref(0, 0), None);
        assert_eq!(pack_ref(1 << 24, 0), None);
        assert_eq!(pack_ref(1, 4 << 20), None);
        assert_eq!(parse_pack_ref(5), None);
        assert_eq!(parse_pack_ref(i64::MIN), None);
        assert_eq!(parse_pack_ref(i64::MAX), None);
    }

    /// A version 10 journal's waiting deltas move from `blobs` to `waiting`
    /// and read as they did; other bodies are untouched.
    #[test]
    fn a_version_10_journal_keeps_its_waiting_deltas() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(SCHEMA_V1).unwrap();
        migrate_with(&mut conn, 1, &MIGRATIONS[..9], 10).unwrap();
        conn.execute_batch(
            "INSERT INTO bodies(id, base_id, raw_len, data, pack_ref)
                VALUES (1, NULL, 3, x'6b31', NULL),
                       (2, 1, 3, x'', 70368744177664),
                       (3, 1, 3, x'6433', NULL),
                       (9, 1, 3, x'', 70368744177664);
             INSERT INTO blobs(body_id, data) VALUES (2, x'6432'), (9, x'6439');",
        )
        .unwrap();
        let rows = |conn: &Connection| -> Vec<(Vec<u8>, bool)> {
            [1, 2, 3, 9]
                .into_iter()
                .map(|id| {
                    let row = body_row(conn, id).unwrap();
                    (row.data, row.pack.is_some())
                })
                .collect()
        };
        migrate(&mut conn, 10).unwrap();
        let after = rows(&conn);
        let want = |d: &[u8]| (d.to_vec(), false);
        assert_eq!(
            after,
            vec![want(b"k1"), want(b"d2"), want(b"d3"), want(b"d9")]
        );
        assert_eq!(body_row(&conn, 2).unwrap().waiting, Some(2));
        assert_eq!(body_row(&conn, 9).unwrap().waiting, Some(9));
        assert_eq!(body_row(&conn, 3).unwrap().waiting, None);
        let blobs: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_schema WHERE name = 'blobs'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(blobs, 0);
    }

    #[test]
    fn other_databases_are_foreign() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t(x)").unwrap();
        assert!(matches!(inspect(&conn).unwrap(), FileState::Foreign { .. }));
    }

    /// A version 9 journal's audit events, packed by the migration, answer as
    /// they did: every event, in the order version 9 read them, with its
    /// auditID, resourceVersion, subresource and uid as written.
    #[test]
    fn version_10_packs_the_audit_events_of_version_9_as_they_were() {
        use crate::journal::Journal;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.db");
        let mut conn = version_1_journal(&path);
        migrate_with(&mut conn, 1, &MIGRATIONS[..8], 9).unwrap();
        conn.execute_batch(
            r#"INSERT INTO clusters VALUES ('c', 'https://127.0.0.1:6443', NULL, 1);
             INSERT INTO streams(id, cluster_id, grp, version, resource, kind, singular,
                                 short_names, namespaced, namespace, selector, created_at)
                 VALUES (7, 'c', 'apps', 'v1', 'deployments', 'Deployment', 'deployment',
                         '[]', 1, 'shop', '', 1);
             INSERT INTO objects(id, stream_id, namespace, name) VALUES (3, 7, 'shop', 'web'),
                                                                        (4, 7, 'shop', 'api');
             INSERT INTO audit_actors(id, who) VALUES
                 (1, '{"user":"alice","uid":null,"groups":[],"impersonated_by":null,"user_agent":null,"source_ips":[]}'),
                 (2, '{"user":"bob","uid":null,"groups":[],"impersonated_by":null,"user_agent":null,"source_ips":[]}');
             INSERT INTO audit_uids(id, uid) VALUES
                 (1, x'7c1f3b0e8a514c5e9a3e2f0d5b6a1c2d'), (2, 'not-a-uuid');"#,
        )
        .unwrap();
        use rusqlite::types::Value as V;
        /// (object, at, auditID, verb, actor, uid, resourceVersion, subresource)
        type Row = (i64, i64, V, i64, i64, Option<i64>, V, Option<&'static str>);
        /// (at, auditID, verb, actor, uid, resourceVersion, subresource)
        type Answer = (
            i64,
            String,
            i64,
            i64,
            Option<String>,
            Option<String>,
            Option<String>,
        );
        let mut rows: Vec<Row> = Vec::new();
        for i in 0..75i64 {
            let id = if i == 40 {
                V::Text("an-id-of-text".into())
            } else {
                V::Blob((0..16).map(|b| (b * 7 + i) as u8).collect())
            };
            let rv = match i % 7 {
                0 => V::Null,
                1 => V::Text("007".into()),
                _ => V::Integer(1_000 + i * 13),
            };
            let sub = [Some(""), Some("status"), Some("scale"), None][(i % 4) as usize];
            // Three writes in each of some milliseconds; times out of order.
            let at = 5_000 + (i / 3) * 1_000 - (i % 2) * 10;
            rows.push((
                3,
                at,
                id,
                1 + i % 4,
                1 + i % 2,
                [Some(1), Some(2), None][(i % 3) as usize],
                rv,
                sub,
            ));
        }
        rows.push((
            4,
            9_000,
            V::Blob(vec![1; 16]),
            2,
            2,
            Some(1),
            V::Integer(5),
            Some(""),
        ));
        // A verb no binary writes: every reader skipped it.
        rows.push((
            4,
            9_001,
            V::Blob(vec![2; 16]),
            9,
            2,
            Some(1),
            V::Integer(6),
            Some(""),
        ));
        for r in &rows {
            conn.execute(
                "INSERT INTO audit_events(object_id, at, audit_id, verb, actor_id, uid_id,
                                          resource_version, subresource)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                rusqlite::params![r.0, r.1, r.2, r.3, r.4, r.5, r.6, r.7],
            )
            .unwrap();
        }
        // What version 9 answered, read as it read them.
        let was: Vec<Answer> = conn
            .prepare(
                "SELECT e.at, CASE typeof(e.audit_id) WHEN 'blob' THEN hex(e.audit_id)
                                                      ELSE e.audit_id END,
                        e.verb, e.actor_id,
                        CASE typeof(u.uid) WHEN 'blob' THEN hex(u.uid) ELSE u.uid END,
                        CAST(e.resource_version AS TEXT), e.subresource
                 FROM audit_events e LEFT JOIN audit_uids u ON u.id = e.uid_id
                 WHERE e.object_id = 3 ORDER BY e.at, e.audit_id",
            )
            .unwrap()
            .query_map([], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                ))
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        drop(conn);

        let journal = Journal::open(&path).unwrap();
        let hex = |t: &str| -> String {
            if t.len() == 36 && t.as_bytes()[8] == b'-' {
                t.replace('-', "").to_uppercase()
            } else {
                t.to_string()
            }
        };
        let now: Vec<_> = journal
            .audit_writes(3, i64::MIN, i64::MAX)
            .unwrap()
            .into_iter()
            .map(|w| {
                (
                    w.at,
                    hex(&w.audit_id),
                    w.verb.code(),
                    w.actor,
                    w.uid.as_deref().map(hex),
                    w.resource_version,
                    w.subresource,
                )
            })
            .collect();
        assert_eq!(now, was);
        assert_eq!(journal.audit_event_count().unwrap(), 76);
        let window = journal.audit_writes(3, 10_000, 12_000).unwrap();
        assert_eq!(
            window.iter().map(|w| w.at).collect::<Vec<_>>(),
            was.iter()
                .map(|w| w.0)
                .filter(|at| (10_000..=12_000).contains(at))
                .collect::<Vec<_>>()
        );
        let exported = journal
            .audit_rows("c", Some("shop"), i64::MIN, i64::MAX)
            .unwrap();
        assert_eq!(exported.writes.len(), 76);
        assert!(exported.writes.windows(2).all(|w| w[0].at <= w[1].at));
        let api: Vec<i64> = exported
            .writes
            .iter()
            .filter(|w| w.name == "api")
            .map(|w| w.at)
            .collect();
        assert_eq!(api, vec![9_000]);
        assert_eq!(
            exported.unknown_subresource.iter().filter(|u| **u).count(),
            rows.iter().filter(|r| r.7.is_none()).count()
        );
        let tables: i64 = journal
            .conn()
            .query_row(
                "SELECT count(*) FROM sqlite_schema WHERE name = 'audit_events'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(tables, 0);
    }
}
