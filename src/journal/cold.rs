//! What the journal's writer asks of an object's records kept in blocks
//! (docs/journal.md, "Cold history in blocks"), on its own connection: the
//! last version, and whether an event is stored already. Readers ask through
//! [`super::Journal`] ([`super::versions`]).

use super::JournalError;
use super::block::{self, BlockError, ColdRecord};
use super::codec::Codec;
use crate::model::WatchType;
use rusqlite::{Connection, params};
use std::ops::Range;
use std::path::Path;

fn damaged(path: &Path, id: i64, e: BlockError) -> JournalError {
    match e {
        BlockError::Codec(source) => JournalError::Codec {
            path: path.to_path_buf(),
            source,
        },
        e => JournalError::Corrupt {
            path: path.to_path_buf(),
            detail: format!("block {id}: {e}"),
        },
    }
}

/// The records of `object`'s blocks selected by `sql` (which takes the
/// object as `?1` and returns `id, columns`), block by block.
fn records(
    conn: &Connection,
    path: &Path,
    sql: &str,
    object: i64,
    mut visit: impl FnMut(&ColdRecord<Range<usize>>) -> bool,
) -> Result<(), JournalError> {
    let err = |e| JournalError::sqlite(path, e);
    let mut stmt = conn.prepare_cached(sql).map_err(err)?;
    let mut rows = stmt.query(params![object]).map_err(err)?;
    let mut codec = Codec::new();
    // Bounded by the object's blocks.
    while let Some(row) = rows.next().map_err(err)? {
        let (id, frame): (i64, Vec<u8>) = (row.get(0).map_err(err)?, row.get(1).map_err(err)?);
        let cols = block::columns(&mut codec, &frame).map_err(|e| damaged(path, id, e))?;
        for r in cols.records.iter().rev() {
            if !visit(r) {
                return Ok(());
            }
        }
    }
    Ok(())
}

/// The last record of `object` kept in a block, if any.
pub fn last_record(
    conn: &Connection,
    path: &Path,
    object: i64,
) -> Result<Option<ColdRecord<Range<usize>>>, JournalError> {
    let mut last = None;
    records(
        conn,
        path,
        "SELECT id, columns FROM blocks WHERE object_id = ?1 ORDER BY first_seq DESC LIMIT 1",
        object,
        |r| {
            last = Some(r.clone());
            false
        },
    )?;
    Ok(last)
}

/// Whether `object`'s blocks hold an event of this resourceVersion and
/// type: a redelivery of it is not stored again.
pub fn event_stored(
    conn: &Connection,
    path: &Path,
    object: i64,
    resource_version: &str,
    watch_type: WatchType,
) -> Result<bool, JournalError> {
    let mut found = false;
    records(
        conn,
        path,
        "SELECT id, columns FROM blocks WHERE object_id = ?1 ORDER BY first_seq DESC",
        object,
        |r| {
            found = r.kind == super::schema::kind::EVENT
                && r.watch_type == Some(watch_type.code())
                && r.resource_version.as_deref() == Some(resource_version);
            !found
        },
    )?;
    Ok(found)
}
