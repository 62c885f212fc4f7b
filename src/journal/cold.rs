//! What the journal's writer and retention ask of an object's records kept
//! in blocks (docs/journal.md, "Cold history in blocks"), on their own
//! connection: the last version, whether an event is stored already, a body
//! row of its own for a body kept in a block, and a cut through a block.
//! Readers ask through [`super::Journal`] ([`super::versions`]).

use super::JournalError;
use super::block::{self, BlockError, ColdRecord};
use super::codec::{Codec, DecoderDict, EncoderDict, Pace};
use crate::model::WatchType;
use rusqlite::{Connection, OptionalExtension, params};
use std::ops::Range;
use std::path::Path;

/// What rewriting blocks keeps from one block to the next: a compression
/// context, and the dictionaries prepared (preparing one costs more than
/// writing a block of a few versions, and a retention step writes dozens).
#[derive(Default)]
pub struct ColdCx {
    codec: Codec,
    encoders: std::collections::HashMap<i64, std::sync::Arc<EncoderDict>>,
}

impl ColdCx {
    fn encoder(
        &mut self,
        conn: &Connection,
        path: &Path,
        id: i64,
    ) -> Result<std::sync::Arc<EncoderDict>, JournalError> {
        if let Some(d) = self.encoders.get(&id) {
            return Ok(d.clone());
        }
        let d = std::sync::Arc::new(encoder_dict(conn, path, id)?);
        self.encoders.insert(id, d.clone());
        Ok(d)
    }
}

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

/// A record kept in a block, with the id its body reads by
/// ([`block::cold_body_id`]) when it has one.
pub type ColdLast = (ColdRecord<Range<usize>>, Option<i64>);

/// The last record of `object` kept in a block, if any.
pub fn last_record(
    conn: &Connection,
    path: &Path,
    object: i64,
) -> Result<Option<ColdLast>, JournalError> {
    let err = |e| JournalError::sqlite(path, e);
    let row: Option<(i64, Vec<u8>)> = conn
        .prepare_cached(
            "SELECT id, columns FROM blocks WHERE object_id = ?1 ORDER BY first_seq DESC LIMIT 1",
        )
        .and_then(|mut s| {
            s.query_row(params![object], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()
        })
        .map_err(err)?;
    let Some((id, frame)) = row else {
        return Ok(None);
    };
    let cols = block::columns(&mut Codec::new(), &frame).map_err(|e| damaged(path, id, e))?;
    let (ordinals, _) = block::ordinals(&cols.records);
    let body = ordinals
        .last()
        .copied()
        .flatten()
        .map(|ordinal| block::cold_body_id(id, ordinal));
    Ok(cols.records.into_iter().last().map(|r| (r, body)))
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
                && r.resource_version
                    .as_ref()
                    .is_some_and(|v| v.is(resource_version));
            !found
        },
    )?;
    Ok(found)
}

/// A block row as retention reads it.
struct BlockRow {
    object: i64,
    dict: Option<i64>,
    columns: Vec<u8>,
    bodies: Vec<u8>,
}

fn block_row(conn: &Connection, path: &Path, id: i64) -> Result<Option<BlockRow>, JournalError> {
    conn.prepare_cached("SELECT object_id, dict_id, columns, bodies FROM blocks WHERE id = ?1")
        .and_then(|mut s| {
            s.query_row(params![id], |r| {
                Ok(BlockRow {
                    object: r.get(0)?,
                    dict: r.get(1)?,
                    columns: r.get(2)?,
                    bodies: r.get(3)?,
                })
            })
            .optional()
        })
        .map_err(|e| JournalError::sqlite(path, e))
}

/// A block's records, with their bodies' bytes.
fn block_records(
    conn: &Connection,
    path: &Path,
    codec: &mut Codec,
    id: i64,
    row: &BlockRow,
) -> Result<Vec<ColdRecord<Vec<u8>>>, JournalError> {
    let cols = block::columns(codec, &row.columns).map_err(|e| damaged(path, id, e))?;
    let dict = row.dict.map(|d| decoder_dict(conn, path, d)).transpose()?;
    let json = block::bodies(codec, &row.bodies, cols.raw_len, dict.as_ref())
        .map_err(|e| damaged(path, id, e))?;
    Ok(cols
        .records
        .iter()
        .map(|r| r.with_body(r.body.clone().map(|place| json[place].to_vec())))
        .collect())
}

fn dict_data(conn: &Connection, path: &Path, id: i64) -> Result<Vec<u8>, JournalError> {
    conn.prepare_cached("SELECT data FROM dicts WHERE id = ?1")
        .and_then(|mut s| s.query_row(params![id], |r| r.get(0)))
        .map_err(|e| JournalError::sqlite(path, e))
}

fn decoder_dict(conn: &Connection, path: &Path, id: i64) -> Result<DecoderDict, JournalError> {
    DecoderDict::new(id, &dict_data(conn, path, id)?).map_err(|source| JournalError::Codec {
        path: path.to_path_buf(),
        source,
    })
}

fn encoder_dict(conn: &Connection, path: &Path, id: i64) -> Result<EncoderDict, JournalError> {
    EncoderDict::new(id, &dict_data(conn, path, id)?).map_err(|source| JournalError::Codec {
        path: path.to_path_buf(),
        source,
    })
}

/// The bytes of a body kept in a block, by the id it reads by
/// ([`block::cold_body_id`]).
pub fn body_bytes(
    conn: &Connection,
    path: &Path,
    codec: &mut Codec,
    id: i64,
) -> Result<(Vec<u8>, Option<i64>), JournalError> {
    let (block_id, ordinal) = block::cold_body_parts(id).ok_or_else(|| JournalError::Corrupt {
        path: path.to_path_buf(),
        detail: format!("body {id} is not kept in a block"),
    })?;
    let row = block_row(conn, path, block_id)?.ok_or_else(|| JournalError::Corrupt {
        path: path.to_path_buf(),
        detail: format!("body {id} names block {block_id}, which is not there"),
    })?;
    let cols = block::columns(codec, &row.columns).map_err(|e| damaged(path, block_id, e))?;
    let (_, places) = block::ordinals(&cols.records);
    let place = places.get(ordinal).cloned().ok_or_else(|| {
        damaged(
            path,
            block_id,
            BlockError::Damaged("no such body in the block"),
        )
    })?;
    let dict = row.dict.map(|d| decoder_dict(conn, path, d)).transpose()?;
    let json = block::bodies(codec, &row.bodies, cols.raw_len, dict.as_ref())
        .map_err(|e| damaged(path, block_id, e))?;
    Ok((json[place].to_vec(), row.dict))
}

/// The id a cut's item's body, planned as `planned` (the body of `object`'s
/// record `seq`, of resourceVersion `rv`), reads by now: `planned` while
/// its body row or block is there (ids of either are never given again);
/// else its record's, found by `seq` (a fold moves a record into a block,
/// which changes the id its body reads by, never its `seq`); else the
/// object's record of the same resourceVersion (an earlier cut, planned
/// after this one, replaced the record by an item of the same version). In
/// rows, then in the object's blocks.
pub fn body_of(
    conn: &Connection,
    path: &Path,
    cx: &mut ColdCx,
    (object, seq): (i64, i64),
    rv: &str,
    planned: i64,
) -> Result<i64, JournalError> {
    let sqlite = |e| JournalError::sqlite(path, e);
    let there: bool = match block::cold_body_parts(planned) {
        Some((block_id, _)) => conn
            .prepare_cached("SELECT EXISTS(SELECT 1 FROM blocks WHERE id = ?1)")
            .and_then(|mut s| s.query_row(params![block_id], |r| r.get(0))),
        None => conn
            .prepare_cached("SELECT EXISTS(SELECT 1 FROM bodies WHERE id = ?1)")
            .and_then(|mut s| s.query_row(params![planned], |r| r.get(0))),
    }
    .map_err(sqlite)?;
    if there {
        return Ok(planned);
    }
    let row: Option<i64> = conn
        .prepare_cached(
            "SELECT body_id FROM records
             WHERE object_id = ?1 AND body_id IS NOT NULL
               AND (seq = ?2 OR resource_version = ?3)
             ORDER BY seq = ?2 DESC, seq LIMIT 1",
        )
        .and_then(|mut s| {
            s.query_row(params![object, seq, rv], |r| r.get(0))
                .optional()
        })
        .map_err(sqlite)?;
    if let Some(body) = row {
        return Ok(body);
    }
    // Bounded by the object's blocks.
    let blocks: Vec<(i64, Vec<u8>)> = conn
        .prepare_cached("SELECT id, columns FROM blocks WHERE object_id = ?1 ORDER BY first_seq")
        .and_then(|mut s| {
            s.query_map(params![object], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect()
        })
        .map_err(sqlite)?;
    let mut by_rv = None;
    for (block_id, columns) in blocks {
        let cols =
            block::columns(&mut cx.codec, &columns).map_err(|e| damaged(path, block_id, e))?;
        let (ordinals, _) = block::ordinals(&cols.records);
        for (r, ordinal) in cols.records.iter().zip(ordinals) {
            let Some(ordinal) = ordinal else { continue };
            let id = block::cold_body_id(block_id, ordinal);
            if r.seq == seq {
                return Ok(id);
            }
            if by_rv.is_none() && r.resource_version.as_ref().is_some_and(|v| v.is(rv)) {
                by_rv = Some(id);
            }
        }
    }
    by_rv.ok_or_else(|| JournalError::Corrupt {
        path: path.to_path_buf(),
        detail: format!(
            "record {seq} of object {object}, of resourceVersion {rv}, is neither a row nor in a block"
        ),
    })
}

/// A body row of its own for the body `id` reads by, when that is a body
/// kept in a block ([`block::cold_body_id`]): a keyframe, compressed with
/// the block's dictionary. A cut writes its baseline's items so when their
/// object keeps no block after the cut. Any other id is returned as it is.
pub fn body_row_of(
    conn: &Connection,
    path: &Path,
    cx: &mut ColdCx,
    id: i64,
) -> Result<i64, JournalError> {
    if block::cold_body_parts(id).is_none() {
        return Ok(id);
    }
    let (raw, dict_id) = body_bytes(conn, path, &mut cx.codec, id)?;
    let encoder = dict_id.map(|d| cx.encoder(conn, path, d)).transpose()?;
    let frame = cx
        .codec
        .keyframe(&raw, encoder.as_deref(), Pace::Listed)
        .map_err(|source| JournalError::Codec {
            path: path.to_path_buf(),
            source,
        })?;
    conn.prepare_cached(
        "INSERT INTO bodies(base_id, dict_id, raw_len, data) VALUES (NULL, ?1, ?2, ?3)",
    )
    .and_then(|mut s| s.execute(params![dict_id, raw.len() as i64, frame]))
    .map_err(|e| JournalError::sqlite(path, e))?;
    Ok(conn.last_insert_rowid())
}

/// The first of `object`'s blocks that keeps a record observed after `cut`.
/// A cut's baseline item of an object with one goes into it
/// ([`prepend`]): blocks hold an object's oldest records, and the item is
/// older than every record left.
pub fn first_block_after(
    conn: &Connection,
    object: i64,
    cut: i64,
) -> rusqlite::Result<Option<i64>> {
    conn.prepare_cached(
        "SELECT id FROM blocks WHERE object_id = ?1 AND max_at > ?2 ORDER BY first_seq LIMIT 1",
    )?
    .query_row(params![object, cut], |r| r.get(0))
    .optional()
}

/// Writes block `id` again (as a new block) with `record` before its own,
/// which must all come after it.
pub fn prepend(
    conn: &Connection,
    path: &Path,
    cx: &mut ColdCx,
    id: i64,
    record: ColdRecord<&[u8]>,
) -> Result<(), JournalError> {
    let row = block_row(conn, path, id)?.ok_or_else(|| JournalError::Corrupt {
        path: path.to_path_buf(),
        detail: format!("block {id} went while a cut was written"),
    })?;
    let records = block_records(conn, path, &mut cx.codec, id, &row)?;
    if records.first().is_some_and(|r| r.seq <= record.seq) {
        return Err(JournalError::Corrupt {
            path: path.to_path_buf(),
            detail: format!("block {id} holds records before a cut's baseline"),
        });
    }
    let all: Vec<ColdRecord<&[u8]>> = std::iter::once(record)
        .chain(records.iter().map(|r| r.with_body(r.body.as_deref())))
        .collect();
    replace_block(conn, path, cx, id, &row, &all)
}

/// Deletes block `id` and writes `records` (if any) as a new block of the
/// same object and dictionary.
fn replace_block(
    conn: &Connection,
    path: &Path,
    cx: &mut ColdCx,
    id: i64,
    row: &BlockRow,
    records: &[ColdRecord<&[u8]>],
) -> Result<(), JournalError> {
    conn.execute("DELETE FROM blocks WHERE id = ?1", params![id])
        .map_err(|e| JournalError::sqlite(path, e))?;
    if records.is_empty() {
        return Ok(());
    }
    let dict = row.dict.map(|d| cx.encoder(conn, path, d)).transpose()?;
    let made =
        block::encode(&mut cx.codec, records, dict.as_deref()).map_err(|e| damaged(path, id, e))?;
    insert_block(conn, row.object, row.dict, &made).map_err(|e| JournalError::sqlite(path, e))
}

/// Stores a block of `object`'s records, made with dictionary `dict`.
pub fn insert_block(
    conn: &Connection,
    object: i64,
    dict: Option<i64>,
    made: &block::Encoded,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO blocks(object_id, first_seq, last_seq, min_at, max_at, records,
                            dict_id, columns, bodies)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?
    .execute(params![
        object,
        made.first_seq,
        made.last_seq,
        made.min_at,
        made.max_at,
        made.records as i64,
        dict,
        made.columns,
        made.bodies
    ])?;
    Ok(())
}

/// Deletes from block `id` its records observed at or before `cut`, but
/// those below `keep_below` (its `seq`: the cut's own baseline items): the
/// block goes, and the records it keeps are written as a new block (ids are
/// never reused: a reader's cache of the old one stays true of it). Returns
/// the block's object and how many records went.
pub fn cut_block(
    conn: &Connection,
    path: &Path,
    cx: &mut ColdCx,
    id: i64,
    cut: i64,
    keep_below: i64,
) -> Result<Option<(i64, u64)>, JournalError> {
    let Some(row) = block_row(conn, path, id)? else {
        return Ok(None);
    };
    let records = block_records(conn, path, &mut cx.codec, id, &row)?;
    let kept: Vec<ColdRecord<&[u8]>> = records
        .iter()
        .filter(|r| r.observed_at > cut || r.seq < keep_below)
        .map(|r| r.with_body(r.body.as_deref()))
        .collect();
    let gone = (records.len() - kept.len()) as u64;
    if gone > 0 {
        replace_block(conn, path, cx, id, &row, &kept)?;
    }
    Ok(Some((row.object, gone)))
}

/// The blocks of `stream`'s objects with a record observed at or before
/// `cut`, after block `after` (by id), at most `limit` of them.
pub fn blocks_before(
    conn: &Connection,
    stream: super::StreamId,
    cut: i64,
    after: i64,
    limit: usize,
) -> rusqlite::Result<Vec<i64>> {
    conn.prepare_cached(
        "SELECT b.id FROM blocks b JOIN objects o ON o.id = b.object_id
         WHERE b.id > ?1 AND o.stream_id = ?2 AND b.min_at <= ?3
         ORDER BY b.id LIMIT ?4",
    )?
    .query_map(
        params![after, stream, cut, i64::try_from(limit).unwrap_or(i64::MAX)],
        |r| r.get(0),
    )?
    .collect()
}

/// Whether `object` has records, as rows or kept in blocks.
pub fn object_has_records(conn: &Connection, object: i64) -> rusqlite::Result<bool> {
    conn.prepare_cached(
        "SELECT EXISTS(SELECT 1 FROM records WHERE object_id = ?1)
             OR EXISTS(SELECT 1 FROM blocks WHERE object_id = ?1)",
    )?
    .query_row(params![object], |r| r.get(0))
}
