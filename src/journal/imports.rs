//! What the journal keeps about imported history (docs/at-scale.md,
//! "Importing segments"): each file imported (`imports`, by the SHA-256 of
//! its bytes), how far each lane holds its source (`import_runs`), the lanes
//! of a source stream, and the gap before rows that skip part of it. The
//! reading of segment files is `crate::segments::import`'s.

use super::StreamId;
use super::records::GapInfo;
use super::writer::Op;
use crate::model::StreamSpec;
use rusqlite::{Connection, OptionalExtension, params};
use std::path::Path;

/// The stretches of a source journal's records (by its `seq`) a lane holds
/// without a break, oldest first: `(first, last)`.
pub type Runs = Vec<(i64, i64)>;

/// One imported file, as `imports` notes it.
#[derive(Debug, Clone)]
pub struct ImportNote<'a> {
    /// SHA-256 of the file's bytes.
    pub hash: &'a [u8],
    pub path: &'a Path,
    /// The lane its rows went to (`None`: none did).
    pub stream: Option<StreamId>,
    pub first_seq: Option<i64>,
    pub last_seq: Option<i64>,
    pub rows: u64,
    pub added: u64,
}

/// Whether a file of these bytes was imported already.
pub fn imported(conn: &Connection, hash: &[u8]) -> rusqlite::Result<bool> {
    conn.query_row("SELECT 1 FROM imports WHERE hash = ?1", [hash], |_| Ok(()))
        .optional()
        .map(|found| found.is_some())
}

/// Notes that a file was imported.
pub fn record(conn: &Connection, note: &ImportNote<'_>) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO imports(hash, path, stream_id, first_seq, last_seq, rows, added, imported_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            note.hash,
            note.path.display().to_string(),
            note.stream,
            note.first_seq,
            note.last_seq,
            note.rows as i64,
            note.added as i64,
            crate::time::Millis::now().as_ms()
        ],
    )
    .map(|_| ())
}

/// Adds the cluster an import brings, unless the journal knows it.
pub fn add_cluster(
    conn: &Connection,
    id: &str,
    server: &str,
    context: Option<&str>,
) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO clusters(id, server, context, first_seen) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT(id) DO NOTHING",
        params![id, server, context, crate::time::Millis::now().as_ms()],
    )
    .map(|_| ())
}

/// The lanes of `stream` of `cluster` whose origin starts with `origin`
/// (one source journal's): id, origin and runs, in the order they were made.
pub fn lanes(
    conn: &Connection,
    cluster: &str,
    stream: &StreamSpec,
    origin: &str,
) -> rusqlite::Result<Vec<(StreamId, String, Runs)>> {
    let mut stmt = conn.prepare(
        "SELECT id, origin FROM streams WHERE cluster_id = ?1 AND grp = ?2 AND version = ?3
           AND resource = ?4 AND namespace = ?5 AND selector = ?6
           AND substr(origin, 1, length(?7)) = ?7
         ORDER BY id",
    )?;
    let found: Vec<(StreamId, String)> = stmt
        .query_map(
            params![
                cluster,
                stream.resource.group,
                stream.resource.version,
                stream.resource.resource,
                stream.namespace.as_deref().unwrap_or(""),
                stream.selector.as_deref().unwrap_or(""),
                origin
            ],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?
        .collect::<rusqlite::Result<_>>()?;
    let mut runs = conn.prepare(
        "SELECT first_seq, last_seq FROM import_runs WHERE stream_id = ?1 ORDER BY first_seq",
    )?;
    found
        .into_iter()
        .map(|(id, origin)| {
            let r: Runs = runs
                .query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<_>>()?;
            Ok((id, origin, r))
        })
        .collect()
}

/// Notes that lane `stream` holds its source up to `upto`: its last run
/// grows, or (the first time, when the rows do not continue it) a run from
/// `first` starts.
pub fn extend_run(
    conn: &Connection,
    stream: StreamId,
    extend: &mut bool,
    first: i64,
    upto: i64,
) -> rusqlite::Result<()> {
    if *extend {
        conn.execute(
            "UPDATE import_runs SET last_seq = max(last_seq, ?2)
             WHERE stream_id = ?1 AND first_seq =
                 (SELECT max(first_seq) FROM import_runs WHERE stream_id = ?1)",
            params![stream, upto],
        )?;
    } else {
        conn.execute(
            "INSERT INTO import_runs(stream_id, first_seq, last_seq) VALUES (?1, ?2, ?3)",
            params![stream, first, upto],
        )?;
        *extend = true;
    }
    Ok(())
}

/// The gap before rows that do not follow what their lane holds: from the
/// lane's last record to them.
pub fn lane_gap(conn: &Connection, stream: StreamId, at: i64) -> rusqlite::Result<Op> {
    let last: Option<(i64, Option<String>)> = conn
        .query_row(
            "SELECT observed_at, resource_version FROM records WHERE stream_id = ?1
             ORDER BY seq DESC LIMIT 1",
            [stream],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    // The stream's last record may be an object's, kept in a block.
    let rows_last: Option<i64> = conn.query_row(
        "SELECT max(seq) FROM records WHERE stream_id = ?1",
        [stream],
        |r| r.get(0),
    )?;
    let last = match last_in_blocks(conn, stream, rows_last.unwrap_or(i64::MIN))? {
        Some(cold) => Some(cold),
        None => last,
    };
    let (from, from_rv) = last.unwrap_or((at, None));
    Ok(Op::Gap {
        stream,
        at,
        info: GapInfo {
            from,
            from_rv,
            reason: "not imported: segments of this stretch are missing".into(),
        },
    })
}

/// The time and resourceVersion of `stream`'s last object record kept in a
/// block, when it comes after `after` (its `seq`).
fn last_in_blocks(
    conn: &Connection,
    stream: StreamId,
    after: i64,
) -> rusqlite::Result<Option<(i64, Option<String>)>> {
    let block: Option<(i64, Vec<u8>)> = conn
        .query_row(
            "SELECT b.last_seq, b.columns FROM blocks b JOIN objects o ON o.id = b.object_id
             WHERE o.stream_id = ?1 AND b.last_seq > ?2 ORDER BY b.last_seq DESC LIMIT 1",
            params![stream, after],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    let Some((_, columns)) = block else {
        return Ok(None);
    };
    let cols = super::block::columns(&mut super::codec::Codec::new(), &columns).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Blob, Box::new(e))
    })?;
    Ok(cols.records.last().map(|r| {
        (
            r.observed_at,
            r.resource_version.as_ref().map(super::wire::Rv::text),
        )
    }))
}
