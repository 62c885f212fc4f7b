//! Folding: an object's oldest records moved from `records` into cold blocks
//! (docs/journal.md, "Cold history in blocks"; the layout is
//! [`super::block`]'s).
//!
//! A fold takes an object's records up to a `seq`, with the records of its
//! last block when that block is not full, and writes them as blocks of
//! [`block::BLOCK_VERSIONS`]; then it deletes their rows, and the bodies,
//! waiting deltas and packs only they reached (bodies belong to one object,
//! so this is decided from the object's remaining records, as retention
//! does). Everything happens in one transaction: a reader sees the records
//! as rows or as blocks, never both or neither.
//!
//! A running writer folds behind itself ([`Journal::fold_behind`]): on its
//! own connection, between batches, the records that have aged, but each
//! object's latest; it then forgets what it kept of the objects folded
//! (their bodies may be gone). A recorder folds its streams' whole history
//! at a clean stop ([`Journal::fold_at_stop`]), once its writer has
//! finished.

use super::block::{self, ColdRecord};
use super::codec::{Codec, EncoderDict};
use super::versions::BodyReader;
use super::wire::Rv;
use super::{Journal, JournalError};
use rusqlite::{OptionalExtension, Transaction, TransactionBehavior, params};

/// What a fold did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Folded {
    /// Records moved from rows into blocks.
    pub records: usize,
    /// Blocks written (a short last block rewritten counts again).
    pub blocks: usize,
    /// Body rows no remaining record reached, deleted.
    pub bodies_deleted: u64,
}

/// What folds keep between objects: the contexts, the keyframes decoded,
/// and the streams' dictionaries prepared (preparing one at level 6 costs
/// more than folding an object of a few versions).
#[derive(Default)]
pub struct Folder {
    codec: Codec,
    reader: BodyReader,
    /// By `dicts` row.
    dicts: std::collections::HashMap<i64, std::sync::Arc<EncoderDict>>,
}

/// Objects folded per transaction at a stop: 500 of W-wide's take about 50
/// ms, so a reader or another recorder of the same journal waits no longer.
pub const FOLD_OBJECTS_PER_TX: usize = 500;

/// How long a recorder's clean stop folds at most (docs/journal.md, "Cold
/// history in blocks"): W-wide's 20,000 objects take about 1.8 s; a journal
/// that needs more goes on at the next stop.
pub const FOLD_AT_STOP: std::time::Duration = std::time::Duration::from_secs(10);

/// What a stop folded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StopFold {
    pub folded: Folded,
    /// Pages given back to the file system.
    pub pages: i64,
    /// Whether every object of the streams was folded before the deadline.
    pub complete: bool,
}

impl Journal {
    /// At a recorder's clean stop: the whole history of every object of
    /// `streams` folded into blocks, [`FOLD_OBJECTS_PER_TX`] objects a
    /// transaction, until `deadline`; then the pages freed given back.
    pub fn fold_at_stop(
        &self,
        streams: &[super::StreamId],
        deadline: std::time::Instant,
    ) -> Result<StopFold, JournalError> {
        let err = |e| self.err(e);
        let mut ids: Vec<i64> = Vec::new();
        for &stream in streams {
            let of_stream: Vec<i64> = self
                .conn()
                .prepare_cached(
                    "SELECT o.id FROM objects o WHERE o.stream_id = ?1
                       AND EXISTS(SELECT 1 FROM records r WHERE r.object_id = o.id)
                     ORDER BY o.id",
                )
                .and_then(|mut s| s.query_map(params![stream], |r| r.get(0))?.collect())
                .map_err(err)?;
            ids.extend(of_stream);
        }
        let mut done = StopFold {
            complete: true,
            ..StopFold::default()
        };
        let mut folder = Folder::default();
        for chunk in ids.chunks(FOLD_OBJECTS_PER_TX) {
            if std::time::Instant::now() >= deadline {
                done.complete = false;
                break;
            }
            let objects: Vec<(i64, i64)> = chunk.iter().map(|&id| (id, i64::MAX)).collect();
            let f = self.fold_objects(&mut folder, &objects)?;
            done.folded.records += f.records;
            done.folded.blocks += f.blocks;
            done.folded.bodies_deleted += f.bodies_deleted;
        }
        if done.folded.records > 0 {
            // 0: every free page.
            done.pages = super::retain::give_back_pages(self.conn(), 0).map_err(err)?;
            self.conn()
                .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
                .map_err(err)?;
        }
        Ok(done)
    }
}

/// How far a fold behind a running writer goes in one step: the records it
/// scans, and the objects it folds at most (64 of W-wide's take about 6 ms,
/// which is as long as the writer's next batch waits).
pub const BEHIND_SCAN: usize = 4_096;
pub const BEHIND_OBJECTS: usize = 64;

/// How old a record is before a running writer folds it, and how long it
/// waits between passes once it has caught up: a hot object's last block,
/// not full yet, is written again at most once a pass.
pub const FOLD_AFTER: std::time::Duration = std::time::Duration::from_secs(600);

/// What a debug build takes instead of [`FOLD_AFTER`], in milliseconds: the
/// truth checker's histories last seconds, so only a small age folds behind
/// their recorders (docs/truth.md).
pub const DEBUG_FOLD_AFTER_ENV: &str = "KRPLY_DEBUG_FOLD_AFTER_MS";

/// [`FOLD_AFTER`], or in a debug build [`DEBUG_FOLD_AFTER_ENV`] when set.
pub fn fold_after() -> std::time::Duration {
    if !cfg!(debug_assertions) {
        return FOLD_AFTER;
    }
    std::env::var(DEBUG_FOLD_AFTER_ENV)
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(FOLD_AFTER, std::time::Duration::from_millis)
}

/// One step of a fold behind a running writer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BehindStep {
    pub folded: Folded,
    /// The objects folded: the writer forgets what it kept of them.
    pub objects: Vec<i64>,
    /// The `seq` the next step scans after.
    pub cursor: i64,
    /// Whether aged records may be left after `cursor`: the next step is due
    /// at once.
    pub more: bool,
}

/// A record a fold behind the writer scans: `(seq, object, stream,
/// observed_at)`, in `seq` order.
pub type Scanned = (i64, i64, super::StreamId, i64);

/// Which objects a step folds, from the records after its cursor (`rows`, at
/// most `limit` of them): those of `own` streams observed before
/// `aged_before`, until the first younger record or `max_objects` objects.
/// Returns them, the new cursor (the last record taken or passed over) and
/// whether records may be left to take.
pub fn plan_behind(
    rows: &[Scanned],
    own: &super::IdSet<super::StreamId>,
    aged_before: i64,
    max_objects: usize,
    (cursor, limit): (i64, usize),
) -> (Vec<i64>, i64, bool) {
    let mut objects: Vec<i64> = Vec::new();
    let mut taken = super::IdSet::default();
    let mut cursor = cursor;
    for &(seq, object, stream, observed_at) in rows {
        if observed_at >= aged_before {
            return (objects, cursor, false);
        }
        if own.contains(&stream) && !taken.contains(&object) {
            if objects.len() == max_objects {
                return (objects, cursor, true);
            }
            taken.insert(object);
            objects.push(object);
        }
        cursor = seq;
    }
    (objects, cursor, rows.len() >= limit)
}

impl Journal {
    /// One step of a fold behind a running writer, on its connection: the
    /// object records of `own` streams after `cursor` observed before
    /// `aged_before` ([`plan_behind`]), each object's up to the cursor but
    /// its latest record, which the writer's next version of it is a delta
    /// against, folded in one transaction.
    pub fn fold_behind(
        &self,
        folder: &mut Option<Folder>,
        own: &super::IdSet<super::StreamId>,
        cursor: i64,
        aged_before: i64,
    ) -> Result<BehindStep, JournalError> {
        let err = |e| self.err(e);
        let rows: Vec<Scanned> = self
            .conn()
            .prepare_cached(
                "SELECT seq, object_id, stream_id, observed_at FROM records
                 WHERE seq > ?1 AND object_id IS NOT NULL ORDER BY seq LIMIT ?2",
            )
            .and_then(|mut s| {
                s.query_map(params![cursor, BEHIND_SCAN as i64], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                })?
                .collect()
            })
            .map_err(err)?;
        let (objects, cursor, more) = plan_behind(
            &rows,
            own,
            aged_before,
            BEHIND_OBJECTS,
            (cursor, BEHIND_SCAN),
        );
        let mut upto = Vec::with_capacity(objects.len());
        for &object in &objects {
            let latest: Option<i64> = self
                .conn()
                .prepare_cached("SELECT max(seq) FROM records WHERE object_id = ?1")
                .and_then(|mut s| s.query_row(params![object], |r| r.get(0)))
                .map_err(err)?;
            if let Some(latest) = latest {
                upto.push((object, cursor.min(latest - 1)));
            }
        }
        if upto.is_empty() {
            return Ok(BehindStep {
                cursor,
                more,
                ..BehindStep::default()
            });
        }
        // Made at the first step with work: a writer that never folds
        // carries no contexts for it.
        let folder = folder.get_or_insert_with(Folder::default);
        // Ids of bodies and packs the fold deletes may be taken again by
        // the writer's next ones: nothing read before is trusted.
        folder.reader = BodyReader::new();
        self.forget_read_bodies();
        let folded = self.fold_objects(folder, &upto)?;
        Ok(BehindStep {
            folded,
            objects,
            cursor,
            more,
        })
    }
}

impl Journal {
    /// Moves `object`'s records with a `seq` up to `upto` (included) into
    /// blocks, in one transaction.
    pub fn fold_object(&self, object: i64, upto: i64) -> Result<Folded, JournalError> {
        self.fold_objects(&mut Folder::default(), &[(object, upto)])
    }

    /// [`Journal::fold_object`] for each `(object, upto)`, all in one
    /// transaction.
    pub fn fold_objects(
        &self,
        folder: &mut Folder,
        objects: &[(i64, i64)],
    ) -> Result<Folded, JournalError> {
        let err = |e| self.err(e);
        self.end_read();
        // As in `prune`: enforcing foreign keys would check each deleted body
        // against every record (there is no index on `body_id`). The fold
        // deletes only what nothing references; enforcement comes back on
        // whatever happens.
        self.conn()
            .pragma_update(None, "foreign_keys", false)
            .map_err(err)?;
        let folded = (|| {
            // Writing from the start: a transaction that read first could not
            // take the lock after another recorder of the journal wrote, and
            // would fail rather than wait.
            let tx = Transaction::new_unchecked(self.conn(), TransactionBehavior::Immediate)
                .map_err(err)?;
            let mut folded = Folded::default();
            for &(object, upto) in objects {
                let one = self.fold_in(&tx, folder, object, upto)?;
                folded.records += one.records;
                folded.blocks += one.blocks;
                folded.bodies_deleted += one.bodies_deleted;
            }
            if folded.records > 0 {
                // Readers on other connections whose snapshot mark was taken
                // before no longer hold the same rows.
                super::retain::bump_generation(&tx).map_err(err)?;
            }
            tx.commit().map_err(err)?;
            Ok(folded)
        })();
        let restored = self.conn().pragma_update(None, "foreign_keys", true);
        let folded = folded?;
        restored.map_err(err)?;
        Ok(folded)
    }

    fn fold_in(
        &self,
        tx: &Transaction<'_>,
        folder: &mut Folder,
        object: i64,
        upto: i64,
    ) -> Result<Folded, JournalError> {
        let err = |e| self.err(e);
        let rows = object_rows(tx, object, upto).map_err(err)?;
        let Some(first_row) = rows.first() else {
            return Ok(Folded::default());
        };
        // The records of a last block that is not full go first, again.
        let mut records: Vec<ColdRecord<Vec<u8>>> = Vec::new();
        let last = last_block(tx, object).map_err(err)?;
        if let Some(b) = last.as_ref().filter(|b| b.records < block::BLOCK_VERSIONS) {
            if b.last_seq >= first_row.seq {
                return Err(self.damaged(format!(
                    "object {object} has records in a block after its rows"
                )));
            }
            records = self.block_records(&mut folder.codec, b)?;
            tx.execute("DELETE FROM blocks WHERE id = ?1", params![b.id])
                .map_err(err)?;
        } else if last.is_some_and(|b| b.last_seq >= first_row.seq) {
            return Err(self.damaged(format!(
                "object {object} has records in a block after its rows"
            )));
        }
        let mut bodies_used = Vec::new();
        for row in &rows {
            let body = match row.body {
                Some(id) => {
                    bodies_used.push(id);
                    Some(folder.reader.read(self, id)?)
                }
                None => None,
            };
            records.push(row.with_body(body));
        }
        let dict = self.stream_encoder_dict(tx, folder, object)?;
        let borrowed: Vec<ColdRecord<&[u8]>> = records
            .iter()
            .map(|r| r.with_body(r.body.as_deref()))
            .collect();
        let mut folded = Folded {
            records: rows.len(),
            ..Folded::default()
        };
        for part in block::split(&borrowed) {
            let made = block::encode(&mut folder.codec, part, dict.as_deref())
                .map_err(|e| self.damaged(e.to_string()))?;
            super::cold::insert_block(tx, object, dict.as_ref().map(|d| d.id), &made)
                .map_err(err)?;
            folded.blocks += 1;
        }
        tx.prepare_cached("DELETE FROM records WHERE object_id = ?1 AND seq <= ?2")
            .and_then(|mut s| s.execute(params![object, upto]))
            .map_err(err)?;
        bodies_used.sort_unstable();
        bodies_used.dedup();
        folded.bodies_deleted =
            super::retain::collect_object(tx, object, &bodies_used).map_err(err)?;
        Ok(folded)
    }

    /// The records of a block, with their bodies.
    fn block_records(
        &self,
        codec: &mut Codec,
        b: &BlockRow,
    ) -> Result<Vec<ColdRecord<Vec<u8>>>, JournalError> {
        let damaged = |e: block::BlockError| self.damaged(format!("block {}: {e}", b.id));
        let cols = block::columns(codec, &b.columns).map_err(damaged)?;
        let dict = b.dict.map(|d| self.decoder_dict(d)).transpose()?;
        let json =
            block::bodies(codec, &b.bodies, cols.raw_len, dict.as_deref()).map_err(damaged)?;
        Ok(cols
            .records
            .iter()
            .map(|r| r.with_body(r.body.clone().map(|place| json[place].to_vec())))
            .collect())
    }

    /// The dictionary the stream of `object` compresses keyframes with now,
    /// if it has one, prepared once per folder.
    fn stream_encoder_dict(
        &self,
        tx: &Transaction<'_>,
        folder: &mut Folder,
        object: i64,
    ) -> Result<Option<std::sync::Arc<EncoderDict>>, JournalError> {
        let id: Option<i64> = tx
            .prepare_cached(
                "SELECT d.id FROM dicts d JOIN objects o ON o.stream_id = d.stream_id
                 WHERE o.id = ?1 ORDER BY d.id DESC LIMIT 1",
            )
            .and_then(|mut s| s.query_row(params![object], |r| r.get(0)).optional())
            .map_err(|e| self.err(e))?;
        let Some(id) = id else { return Ok(None) };
        if let Some(d) = folder.dicts.get(&id) {
            return Ok(Some(d.clone()));
        }
        let data: Vec<u8> = tx
            .prepare_cached("SELECT data FROM dicts WHERE id = ?1")
            .and_then(|mut s| s.query_row(params![id], |r| r.get(0)))
            .map_err(|e| self.err(e))?;
        let dict = EncoderDict::new(id, &data)
            .map(std::sync::Arc::new)
            .map_err(|source| JournalError::Codec {
                path: self.path().to_path_buf(),
                source,
            })?;
        folder.dicts.insert(id, dict.clone());
        Ok(Some(dict))
    }

    fn damaged(&self, detail: String) -> JournalError {
        JournalError::Corrupt {
            path: self.path().to_path_buf(),
            detail,
        }
    }
}

/// `object`'s record rows up to `upto`, in seq order, each with its body
/// row's id.
fn object_rows(
    tx: &Transaction<'_>,
    object: i64,
    upto: i64,
) -> rusqlite::Result<Vec<ColdRecord<i64>>> {
    tx.prepare_cached(
        "SELECT seq, kind, observed_at, watch_type, resource_version, event_key, aux, body_id
         FROM records WHERE object_id = ?1 AND seq <= ?2 ORDER BY seq",
    )?
    .query_map(params![object, upto], |r| {
        Ok(ColdRecord {
            seq: r.get(0)?,
            kind: r.get(1)?,
            observed_at: r.get(2)?,
            watch_type: r.get(3)?,
            resource_version: r.get_ref(4)?.as_str_or_null()?.map(Rv::parse),
            event_key: r.get(5)?,
            aux: r.get(6)?,
            body: r.get(7)?,
        })
    })?
    .collect()
}

/// A row of `blocks`, all but its place in time.
pub(super) struct BlockRow {
    pub id: i64,
    pub last_seq: i64,
    pub records: usize,
    pub dict: Option<i64>,
    pub columns: Vec<u8>,
    pub bodies: Vec<u8>,
}

/// The block of `object` with the latest records.
fn last_block(tx: &Transaction<'_>, object: i64) -> rusqlite::Result<Option<BlockRow>> {
    tx.prepare_cached(
        "SELECT id, last_seq, records, dict_id, columns, bodies FROM blocks
         WHERE object_id = ?1 ORDER BY first_seq DESC LIMIT 1",
    )?
    .query_row(params![object], |r| {
        Ok(BlockRow {
            id: r.get(0)?,
            last_seq: r.get(1)?,
            records: r.get::<_, i64>(2)?.max(0) as usize,
            dict: r.get(3)?,
            columns: r.get(4)?,
            bodies: r.get(5)?,
        })
    })
    .optional()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::prune::StreamCut;
    use crate::journal::versions::VersionRow;
    use crate::journal::writer::{Op, Writer};
    use crate::model::{ObjectMeta, ResourceType, StreamSpec, WatchType};

    #[test]
    fn a_step_behind_the_writer_takes_aged_records_of_its_streams_up_to_its_limits() {
        let own: crate::journal::IdSet<i64> = [1].into_iter().collect();
        // (seq, object, stream, observed_at)
        let rows = [
            (5, 10, 1, 100),
            (6, 20, 2, 110),
            (7, 10, 1, 120),
            (8, 30, 1, 130),
        ];
        // Aged before 125: objects 10 then nothing of stream 2; stops at
        // the first younger record, with nothing left to take.
        assert_eq!(
            plan_behind(&rows, &own, 125, 64, (4, 100)),
            (vec![10], 7, false)
        );
        // Everything aged: each object once, in the order met.
        assert_eq!(
            plan_behind(&rows, &own, 1_000, 64, (4, 100)),
            (vec![10, 30], 8, false)
        );
        // As many records as the scan asked for: more may follow.
        assert_eq!(
            plan_behind(&rows, &own, 1_000, 64, (4, 4)),
            (vec![10, 30], 8, true)
        );
        // One object at most: the cursor stops before the second.
        assert_eq!(
            plan_behind(&rows, &own, 1_000, 1, (4, 100)),
            (vec![10], 7, true)
        );
        // Nothing aged: the cursor stays.
        assert_eq!(
            plan_behind(&rows, &own, 100, 64, (4, 100)),
            (vec![], 4, false)
        );
    }

    /// A version of `name`: its data changes every third `value`, its
    /// status at the others (a change a default diff does not compare).
    fn object(name: &str, rv: u64, value: u64) -> (ObjectMeta, Vec<u8>) {
        let data = value / 3;
        let meta = ObjectMeta {
            namespace: "shop".into(),
            name: name.into(),
            uid: format!("uid-{name}"),
            resource_version: rv.to_string(),
            // What a default diff compares: the data alone.
            diff_digest: Some(data),
            given_mark: None,
        };
        // Large enough that versions are deltas and packs, as Deployments' are.
        let body = format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}","namespace":"shop","resourceVersion":"{rv}"}},"data":{{"value":"{data}","filler":"{}"}},"status":{{"seen":{value}}}}}"#,
            "text of the object ".repeat(30)
        );
        (meta, body.into_bytes())
    }

    /// [`journal_with`] packs, as recorders before blocks wrote: the harder
    /// history to fold.
    fn journal() -> (tempfile::TempDir, Journal) {
        journal_with(true)
    }

    /// A journal of one ConfigMap stream: a list of three objects, 150
    /// changes of `a` and 20 of `b` between them, a relist that finds `a`
    /// unchanged, `c` deleted, and a last change of `b`; written with packs
    /// or without.
    fn journal_with(pack: bool) -> (tempfile::TempDir, Journal) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.db");
        let journal = Journal::open_or_create(&path).unwrap();
        journal.register_cluster("c1", "https://x", None).unwrap();
        let stream = journal
            .register_stream(
                "c1",
                &StreamSpec {
                    resource: ResourceType {
                        group: String::new(),
                        version: "v1".into(),
                        resource: "configmaps".into(),
                        kind: "ConfigMap".into(),
                        singular: "configmap".into(),
                        short_names: vec![],
                        namespaced: true,
                    },
                    namespace: Some("shop".into()),
                    selector: None,
                },
            )
            .unwrap();
        let options = crate::journal::writer::WriterOptions {
            pack,
            ..Default::default()
        };
        let writer = Writer::start_with(journal, options).unwrap();
        let tx = writer.sender();
        let send = |op| tx.blocking_send(op).unwrap();
        let list = |at: i64, items: &[(&str, u64, u64)], rv: u64| {
            for &(name, item_rv, value) in items {
                let (meta, body) = object(name, item_rv, value);
                send(Op::BaselineItem {
                    stream,
                    at,
                    meta,
                    body,
                });
            }
            send(Op::BaselineEnd {
                stream,
                at,
                list_rv: rv.to_string(),
                items: items.len() as u64,
            });
        };
        list(1_000, &[("a", 10, 0), ("b", 11, 0), ("c", 12, 0)], 12);
        let mut rv = 12;
        for i in 1..=150u64 {
            rv += 1;
            let (meta, body) = object("a", rv, i);
            send(Op::Event {
                stream,
                at: 1_000 + rv as i64,
                watch_type: WatchType::Modified,
                meta,
                body,
            });
            if i % 8 == 0 {
                rv += 1;
                let (meta, body) = object("b", rv, i);
                send(Op::Event {
                    stream,
                    at: 1_000 + rv as i64,
                    watch_type: WatchType::Modified,
                    meta,
                    body,
                });
            }
        }
        let (meta, body) = object("c", rv + 1, 0);
        send(Op::Event {
            stream,
            at: 5_000,
            watch_type: WatchType::Deleted,
            meta,
            body,
        });
        // `a` unchanged: its list item is the same body again.
        let last_b = rv - 6;
        list(6_000, &[("a", rv - 1, 149), ("b", last_b, 144)], rv + 1);
        // The stream's last record is an object's.
        let (meta, body) = object("b", rv + 2, 151);
        send(Op::Event {
            stream,
            at: 6_500,
            watch_type: WatchType::Modified,
            meta,
            body,
        });
        drop(tx);
        writer.finish().unwrap();
        let journal = Journal::open(&path).unwrap();
        (dir, journal)
    }

    fn id_of(journal: &Journal, name: &str) -> i64 {
        journal
            .conn()
            .query_row("SELECT id FROM objects WHERE name = ?1", [name], |r| {
                r.get(0)
            })
            .unwrap()
    }

    /// Every version of `object`, its body's bytes (as their length and
    /// hash) in place of its body's id.
    fn history(journal: &Journal, object: i64) -> Vec<(String, usize, u64)> {
        let mut reader = BodyReader::new();
        let mut decoder = crate::journal::versions::Decoder::default();
        journal
            .object_versions(object)
            .unwrap()
            .into_iter()
            .map(|v| {
                let read = reader.read(journal, v.body).unwrap();
                // Fetched on one thread and decoded on another, as `diff` and
                // `timeline` do, it is the same.
                let stored = journal.stored_body(v.body, None).unwrap();
                assert_eq!(decoder.decode(&stored).unwrap(), read, "{v:?}");
                let (len, hash) = hashed(&read);
                let row = VersionRow { body: 0, ..v };
                (format!("{row:?}"), len, hash)
            })
            .collect()
    }

    /// What every walk down an object's versions answers, at every time
    /// and `seq` of its history and between: the version at a time, the
    /// versions down to it, the version since a floor, and whether the
    /// object may be present before a `seq` or a time.
    fn walks(journal: &Journal, object: i64, stream: crate::journal::StreamId) -> Vec<String> {
        use crate::journal::IdSet;
        use crate::journal::versions::Before;
        let versions = journal.object_versions(object).unwrap();
        let all_lists: IdSet<i64> = versions.iter().filter_map(|v| v.list_token).collect();
        // The first list left out too, as a list that never completed is.
        let mut some_lists = all_lists.clone();
        some_lists.remove(&versions[0].list_token.unwrap());
        let bodyless = |v: VersionRow| VersionRow { body: 0, ..v };
        let mut out = Vec::new();
        let mut points: Vec<(i64, i64)> = vec![(0, 0), (i64::MAX, i64::MAX)];
        for v in &versions {
            for d in [-1, 0, 1] {
                points.push((v.observed_at + d, v.seq + d));
            }
        }
        for (at, seq) in points {
            for lists in [&all_lists, &some_lists] {
                for bound in [seq, i64::MAX] {
                    let at_v = journal.object_version_at(object, at, bound, lists).unwrap();
                    let (down, found) = journal
                        .object_versions_down_to(object, at, bound, lists)
                        .unwrap();
                    out.push(format!(
                        "at {at} bound {bound}: {:?} down {:?} {found}",
                        at_v.map(bodyless),
                        down.into_iter().map(|v| v.seq).collect::<Vec<_>>()
                    ));
                    for floor in [seq - 1, seq - 3, seq - 10, seq - 40, i64::MIN] {
                        let since = journal
                            .object_version_since(object, at, bound, lists, floor)
                            .unwrap();
                        out.push(format!(
                            "since {floor}: {:?}",
                            since.map(|(v, marked)| (bodyless(v), marked))
                        ));
                    }
                }
            }
            for before in [Before::Seq(seq), Before::Time(at)] {
                let present = journal
                    .objects_maybe_present_before(stream, None, before, &|id| id == object)
                    .unwrap();
                out.push(format!("{before:?}: {present:?}"));
            }
        }
        out
    }

    /// What every scan of the stream's records answers, over stretches of
    /// `seq` and windows of time across its history: its events after a
    /// `seq`, its lists' items, the heads of its versions, the objects a
    /// window touched, the records a window visits, each version by `seq`,
    /// and its busiest object.
    fn scans(journal: &Journal, stream: crate::journal::StreamId) -> Vec<String> {
        use crate::journal::IdSet;
        use crate::journal::versions::{HeadsBelow, RvKeys, VersionHead};
        let streams: IdSet<_> = [stream].into_iter().collect();
        let bodyless = |v: VersionRow| VersionRow { body: 0, ..v };
        let mut out = Vec::new();
        for b in journal.baselines(stream).unwrap() {
            let items: Vec<_> = journal
                .baseline_items(stream, &b)
                .unwrap()
                .into_iter()
                .map(bodyless)
                .collect();
            out.push(format!("{b:?}: {items:?}"));
        }
        let (min_seq, max_seq): (i64, i64) = journal
            .conn()
            .query_row(
                "SELECT min(first_seq), max(last_seq) FROM
                   (SELECT first_seq, last_seq FROM blocks UNION ALL SELECT seq, seq FROM records)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        for seq in (min_seq - 1..=max_seq + 1).step_by(7) {
            out.push(format!(
                "{seq}: {:?}",
                journal.version(seq).unwrap().map(bodyless)
            ));
            out.push(format!(
                "line before {seq}: {:?}",
                journal.line_before(stream, seq).unwrap()
            ));
            for object in 1..=3 {
                out.push(format!(
                    "{object} at {seq}: {:?}",
                    journal.object_version(object, seq).unwrap().map(bodyless)
                ));
            }
            for (at, bound) in [(i64::MAX, i64::MAX), (1_050, seq + 30), (5_000, seq + 90)] {
                out.push(format!(
                    "events after {seq} by {at} to {bound}: {:?}",
                    journal.stream_events(stream, seq, at, bound).unwrap()
                ));
            }
            let mut keys = RvKeys::default();
            let mut heads = Vec::new();
            // Bodies kept in blocks have ids of their own.
            let bodyless_head = |h: &VersionHead| VersionHead { body: 0, ..*h };
            journal
                .visit_version_heads_from(&streams, (seq, seq + 45), &mut keys, None, |h| {
                    heads.push(bodyless_head(h))
                })
                .unwrap();
            out.push(format!("heads from {seq}: {heads:?}"));
            // And the walks down from there, from the heads the pass kept of
            // the blocks it read (debug builds assert they are the walks that
            // read those blocks again).
            for at in [0, 1_050, 1_100, 5_000, i64::MAX] {
                let mut below = HeadsBelow::new(at);
                journal
                    .visit_version_heads_from(
                        &streams,
                        (seq, seq + 45),
                        &mut keys,
                        Some(&mut below),
                        |_| {},
                    )
                    .unwrap();
                for object in 1..=3 {
                    let (down, found) = journal
                        .object_heads_down_to(
                            object,
                            at,
                            seq - 1,
                            &IdSet::default(),
                            &below.take(object),
                            &mut keys,
                        )
                        .unwrap();
                    let down: Vec<VersionHead> = down.iter().map(bodyless_head).collect();
                    out.push(format!(
                        "{object} down to {at} from {seq}: {down:?} {found}"
                    ));
                }
            }
        }
        for (after, until) in [
            (0, i64::MAX),
            (999, 1_000),
            (1_000, 1_060),
            (1_100, 1_130),
            (1_170, 5_000),
            (5_000, 6_000),
        ] {
            let mut touched: Vec<i64> = journal
                .touched_objects(&streams, after, until)
                .unwrap()
                .into_iter()
                .collect();
            touched.sort();
            let mut before: Vec<i64> = journal
                .touched_objects_before(&streams, after, until, 90)
                .unwrap()
                .into_iter()
                .collect();
            before.sort();
            // Which records a window visits may differ (zones and blocks
            // hold different neighbours): those observed in it may not, nor
            // each object's order (objects' records may interleave
            // differently: blocks come before rows).
            let mut visited = Vec::new();
            journal
                .visit_window(&streams, after, until, |r, _| {
                    if r.observed_at > after && r.observed_at <= until {
                        visited.push((r.seq, r.object, r.observed_at, r.status_only));
                    }
                    Ok::<_, JournalError>(true)
                })
                .unwrap();
            // Stable: each object's records keep the order they came in.
            visited.sort_by_key(|&(_, object, _, _)| object);
            out.push(format!(
                "window {after}..{until}: {touched:?} {before:?} {visited:?}"
            ));
        }
        out.push(format!(
            "busiest: {:?}",
            journal.busiest_object(&[stream]).unwrap()
        ));
        out.push(format!(
            "lane gap: {:?}",
            crate::journal::imports::lane_gap(journal.conn(), stream, 0).unwrap()
        ));
        // Every record, in pages of 7, as `export` reads them (every third
        // left out), through export's reader and through any other: the
        // same records and bodies.
        let read = |mut bodies: BodyReader| {
            let mut out = Vec::new();
            let mut after = i64::MIN;
            for _ in 0..1_000 {
                let page = journal
                    .records_after(after, 7, &mut bodies, &|r| r.seq % 3 != 0)
                    .unwrap();
                let Some(last) = page.last() else { break };
                after = last.seq;
                for r in page {
                    let body = r.body.as_deref().map(hashed);
                    let r = crate::journal::read::RecordView { body: None, ..r };
                    out.push(format!("{r:?} {body:?}"));
                }
            }
            out
        };
        let in_order = read(BodyReader::in_seq_order());
        assert_eq!(in_order, read(BodyReader::new()));
        out.extend(in_order);
        out
    }

    /// A body's length and hash.
    fn hashed(body: &[u8]) -> (usize, u64) {
        use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
        (
            body.len(),
            BuildHasherDefault::<DefaultHasher>::default().hash_one(body),
        )
    }

    fn journal_versions(path: &std::path::Path, object: i64) -> Vec<VersionRow> {
        Journal::open(path)
            .unwrap()
            .object_versions(object)
            .unwrap()
    }

    fn count(journal: &Journal, sql: &str) -> i64 {
        journal.conn().query_row(sql, [], |r| r.get(0)).unwrap()
    }

    #[test]
    fn folded_records_read_back_as_they_were_and_free_their_rows() {
        for pack in [true, false] {
            fold_and_read_back(pack);
        }
    }

    fn fold_and_read_back(pack: bool) {
        let (_dir, journal) = journal_with(pack);
        let names = ["a", "b", "c"];
        let before: Vec<_> = names
            .iter()
            .map(|n| history(&journal, id_of(&journal, n)))
            .collect();
        let stream = journal.object_versions(id_of(&journal, "a")).unwrap()[0].stream;
        let walked: Vec<_> = names
            .iter()
            .map(|n| walks(&journal, id_of(&journal, n), stream))
            .collect();
        let scanned = scans(&journal, stream);
        let held = |j: &Journal| -> i64 { j.zone_times().unwrap().iter().map(|z| z.0).sum() };
        let records_held = held(&journal);
        assert_eq!(
            before[0].len(),
            152,
            "a's list item, 150 events, its relist"
        );
        let a = id_of(&journal, "a");
        let packs_before = count(&journal, "SELECT count(*) FROM packs");
        assert_eq!(packs_before > 0, pack, "the history has packs to free");

        // Part of a's history: 100 records, two blocks, one of them short.
        let seqs = journal.object_versions(a).unwrap();
        let mid = seqs[99].seq;
        let folded = journal.fold_object(a, mid).unwrap();
        assert_eq!((folded.records, folded.blocks), (100, 2));
        assert_eq!(history(&journal, a), before[0]);
        assert_eq!(walks(&journal, a, stream), walked[0]);
        assert_eq!(scans(&journal, stream), scanned);
        assert_eq!(
            count(
                &journal,
                &format!("SELECT count(*) FROM records WHERE object_id = {a}")
            ),
            52
        );
        // Nothing more up to there: nothing happens.
        assert_eq!(journal.fold_object(a, mid).unwrap(), Folded::default());
        // A reader in a snapshot keeps the object's blocks it found
        // (`Journal::object_blocks`): it walks the same.
        let reader = Journal::open(journal.path()).unwrap();
        reader.begin_read().unwrap();
        assert!(
            !reader.no_object_rows().unwrap(),
            "a's last 52 and the others' rows"
        );
        assert_eq!(walks(&reader, a, stream), walked[0]);

        // The rest: the short block is written again with it.
        let folded = journal.fold_object(a, i64::MAX).unwrap();
        assert_eq!((folded.records, folded.blocks), (52, 2));
        assert_eq!(history(&journal, a), before[0]);
        assert_eq!(walks(&journal, a, stream), walked[0]);
        // The reader sees the fold only in its next snapshot, where the
        // blocks it kept (the short one since replaced) are no longer used.
        assert_eq!(walks(&reader, a, stream), walked[0], "the snapshot before");
        reader.end_read();
        reader.begin_read().unwrap();
        assert_eq!(walks(&reader, a, stream), walked[0], "the next snapshot");
        reader.end_read();
        assert_eq!(scans(&journal, stream), scanned);
        let blocks: Vec<(i64, i64)> = journal
            .conn()
            .prepare("SELECT records, last_seq FROM blocks WHERE object_id = ?1 ORDER BY first_seq")
            .unwrap()
            .query_map([a], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(blocks.iter().map(|b| b.0).collect::<Vec<_>>(), [64, 64, 24]);
        assert_eq!(blocks[2].1, seqs[151].seq);

        for (i, name) in names.iter().enumerate().skip(1) {
            let id = id_of(&journal, name);
            journal.fold_object(id, i64::MAX).unwrap();
            assert_eq!(history(&journal, id), before[i], "{name}");
            assert_eq!(walks(&journal, id, stream), walked[i], "{name}");
            assert_eq!(scans(&journal, stream), scanned, "{name}");
        }
        // Retention by size counts the records in blocks as it counted the
        // rows.
        assert_eq!(held(&journal), records_held);
        // Every object record is in a block: nothing is left of their rows
        // and bodies, and every key holds.
        assert_eq!(
            count(
                &journal,
                "SELECT count(*) FROM records WHERE object_id IS NOT NULL"
            ),
            0
        );
        for table in ["bodies", "waiting", "packs"] {
            assert_eq!(
                count(&journal, &format!("SELECT count(*) FROM {table}")),
                0,
                "{table}"
            );
        }
        let broken: Option<String> = journal
            .conn()
            .query_row("PRAGMA foreign_key_check", [], |r| r.get(0))
            .optional()
            .unwrap();
        assert_eq!(broken, None);
        // Another connection reads the same.
        let again = Journal::open(journal.path()).unwrap();
        for (name, was) in names.iter().zip(&before) {
            assert_eq!(&history(&again, id_of(&again, name)), was, "{name}");
        }
        // In a snapshot it knows there are no rows to walk down
        // (`Journal::no_object_rows`), and walks the same; the reader that
        // saw rows in its first snapshot, in a new one, likewise.
        for r in [&again, &reader] {
            assert!(!r.no_object_rows().unwrap(), "outside a snapshot");
            r.begin_read().unwrap();
            assert!(r.no_object_rows().unwrap());
            for (name, was) in names.iter().zip(&walked) {
                assert_eq!(&walks(r, id_of(r, name), stream), was, "{name}");
            }
            r.end_read();
        }
    }

    #[test]
    fn a_writer_after_a_fold_stores_what_is_new_once() {
        let (_dir, journal) = journal();
        let path = journal.path().to_path_buf();
        let (a, b) = (id_of(&journal, "a"), id_of(&journal, "b"));
        let stream = journal.object_versions(a).unwrap()[0].stream;
        let before_a = history(&journal, a);
        let before_b = history(&journal, b);
        journal.fold_object(a, i64::MAX).unwrap();
        // b keeps its latest versions as rows.
        let b_versions = journal.object_versions(b).unwrap();
        journal
            .fold_object(b, b_versions[b_versions.len() - 4].seq)
            .unwrap();
        drop(journal);

        let writer = Writer::start(Journal::open(&path).unwrap()).unwrap();
        let tx = writer.sender();
        let event = |name: &str, rv: u64, value: u64, watch_type| {
            let (meta, body) = object(name, rv, value);
            Op::Event {
                stream,
                at: 7_000 + rv as i64,
                watch_type,
                meta,
                body,
            }
        };
        // Redelivered: an event of a's and one of b's, both in blocks, with
        // resourceVersions that are not numbers larger than the last stored.
        let rv = |v: &VersionRow| v.resource_version.parse::<u64>().unwrap();
        let a_versions = journal_versions(&path, a);
        assert_eq!(a_versions[10].watch_type, Some(WatchType::Modified));
        tx.blocking_send(event("a", rv(&a_versions[10]), 10, WatchType::Modified))
            .unwrap();
        let b_old = &b_versions[b_versions.len() - 5];
        assert_eq!(b_old.watch_type, Some(WatchType::Modified));
        tx.blocking_send(event("b", rv(b_old), 64, WatchType::Modified))
            .unwrap();
        // The same resourceVersion as another type is not a redelivery.
        tx.blocking_send(event("b", rv(b_old), 64, WatchType::Added))
            .unwrap();
        // New: a's next two versions, the first a keyframe of its own.
        tx.blocking_send(event("a", 500, 151, WatchType::Modified))
            .unwrap();
        tx.blocking_send(event("a", 501, 152, WatchType::Modified))
            .unwrap();
        drop(tx);
        writer.finish().unwrap();

        let journal = Journal::open(&path).unwrap();
        let after_a = history(&journal, a);
        assert_eq!(after_a.len(), before_a.len() + 2);
        assert_eq!(after_a[..before_a.len()], before_a[..]);
        let after_b = history(&journal, b);
        assert_eq!(after_b.len(), before_b.len() + 1);
        assert_eq!(after_b[..before_b.len()], before_b[..]);
        let mut reader = BodyReader::new();
        let versions = journal.object_versions(a).unwrap();
        for (v, value) in versions[versions.len() - 2..].iter().zip([151, 152]) {
            assert_eq!(
                reader.read(&journal, v.body).unwrap(),
                object("a", 500 + value - 151, value).1
            );
        }
    }

    /// The cut of `stream` at `cut` as `prune` makes it: every object
    /// present then, with its version's body.
    fn cut_of(journal: &Journal, stream: crate::journal::StreamId, cut: i64) -> StreamCut {
        let lists: crate::journal::IdSet<i64> = journal
            .baselines(stream)
            .unwrap()
            .iter()
            .map(|b| b.token)
            .collect();
        let mut items = Vec::new();
        for object in 1..=3 {
            if let Some(v) = journal
                .object_version_at(object, cut, i64::MAX, &lists)
                .unwrap()
                .filter(|v| !v.deleted())
            {
                items.push(crate::journal::prune::CutItem {
                    object,
                    body: v.body,
                    resource_version: v.resource_version,
                    seq: v.seq,
                });
            }
        }
        StreamCut {
            stream,
            cut,
            items,
            list_rv: journal.watermark_at(stream, cut).unwrap().unwrap().1,
        }
    }

    /// Retention's steps, each in a transaction of its own, as the writer
    /// runs them.
    fn retain(journal: &Journal, cut: StreamCut) {
        let mut job = crate::journal::retain::RetainJob::new(cut);
        let mut bodies = crate::journal::bodies::BodyStore::new(journal.path().to_path_buf(), true);
        journal
            .conn()
            .pragma_update(None, "foreign_keys", false)
            .unwrap();
        for _ in 0..10_000 {
            let tx = journal.conn().unchecked_transaction().unwrap();
            let done = job.step(&tx, journal.path(), &mut bodies).unwrap().done;
            tx.commit().unwrap();
            if done {
                break;
            }
        }
        journal
            .conn()
            .pragma_update(None, "foreign_keys", true)
            .unwrap();
    }

    #[test]
    fn cuts_through_blocks_answer_as_cuts_through_rows() {
        for (how, cut) in [
            ("prune", 1_100),
            ("retain", 1_100),
            ("prune", 5_200),
            ("retain", 6_000),
            // A recorder plans its cuts on a connection of its own, and its
            // writer may fold behind itself before it carries one out: the
            // cut's items then read their bodies by other ids.
            ("retain, planned before the fold", 1_100),
            ("retain, planned before the fold", 6_000),
            // A recorder's planner may plan the same cut twice before the
            // writer carries out the first: the second's items name records
            // the first replaced (the soak on the real control plane).
            ("retain twice, both planned first", 1_100),
        ] {
            let (_dir, rows) = journal();
            let (_dir2, folded) = journal();
            let stream = rows.object_versions(1).unwrap()[0].stream;
            let planned_before = cut_of(&folded, stream, cut);
            // a part of the way, b and c all the way.
            let a = folded.object_versions(1).unwrap();
            folded.fold_object(1, a[120].seq).unwrap();
            folded.fold_object(2, i64::MAX).unwrap();
            folded.fold_object(3, i64::MAX).unwrap();
            for journal in [&rows, &folded] {
                let c = cut_of(journal, stream, cut);
                match how {
                    "prune" => {
                        journal.prune(&[c], 0).unwrap();
                    }
                    "retain" => retain(journal, c),
                    "retain twice, both planned first" => {
                        retain(journal, c.clone());
                        retain(journal, c);
                    }
                    _ if std::ptr::eq(journal, &folded) => retain(journal, planned_before.clone()),
                    _ => retain(journal, c),
                }
            }
            let context = format!("{how} at {cut}");
            assert_eq!(scans(&folded, stream), scans(&rows, stream), "{context}");
            // The bound on `seq` readers take from the zones counts the
            // blocks: a prune rebuilds the zones from the rows alone.
            let by_bound = |j: &Journal| -> Vec<Vec<(i64, i64, bool)>> {
                [cut, cut + 20, 2_000, 6_000, i64::MAX]
                    .iter()
                    .map(|&at| {
                        let bound = j.seq_bounds().unwrap().at(at);
                        j.stream_events(stream, i64::MIN, at, bound).unwrap()
                    })
                    .collect()
            };
            assert_eq!(by_bound(&folded), by_bound(&rows), "{context}");
            for object in 1..=3 {
                let exists = |j: &Journal| j.object(object).unwrap().is_some();
                assert_eq!(exists(&folded), exists(&rows), "{context}: object {object}");
                if exists(&rows) {
                    assert_eq!(
                        history(&folded, object),
                        history(&rows, object),
                        "{context}: object {object}"
                    );
                    assert_eq!(
                        walks(&folded, object, stream),
                        walks(&rows, object, stream),
                        "{context}: object {object}"
                    );
                }
            }
            // No record before the cut is left in a block (the cut's items,
            // observed at it, go into blocks).
            let left: i64 = folded
                .conn()
                .query_row(
                    "SELECT count(*) FROM blocks WHERE min_at < ?1",
                    [cut],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(left, 0, "{context}");
            let broken: Option<String> = folded
                .conn()
                .query_row("PRAGMA foreign_key_check", [], |r| r.get(0))
                .optional()
                .unwrap();
            assert_eq!(broken, None, "{context}");
        }
    }

    #[test]
    fn a_stop_folds_its_streams_whole_history_within_its_deadline() {
        let (_dir, journal) = journal();
        let stream = journal.object_versions(1).unwrap()[0].stream;
        let before: Vec<_> = (1..=3).map(|o| history(&journal, o)).collect();
        // Past its deadline, a stop folds nothing.
        let late = journal
            .fold_at_stop(&[stream], std::time::Instant::now())
            .unwrap();
        assert_eq!((late.folded.records, late.complete), (0, false));
        let done = journal
            .fold_at_stop(
                &[stream],
                std::time::Instant::now() + std::time::Duration::from_secs(3600),
            )
            .unwrap();
        assert!(done.complete);
        // a: its list item, 150 changes and its relist; b: its item, 18 changes,
        // its relist and its last change; c: its item and its deletion.
        assert_eq!(done.folded.records, 152 + 21 + 2);
        assert_eq!(
            count(
                &journal,
                "SELECT count(*) FROM records WHERE object_id IS NOT NULL"
            ),
            0
        );
        assert_eq!(count(&journal, "PRAGMA freelist_count"), 0);
        for (o, was) in (1..=3).zip(&before) {
            assert_eq!(&history(&journal, o), was);
        }
        // Another stream's objects are not this stop's.
        let again = journal
            .fold_at_stop(
                &[stream + 1],
                std::time::Instant::now() + std::time::Duration::from_secs(60),
            )
            .unwrap();
        assert_eq!(again.folded, Folded::default());
    }

    #[test]
    fn a_block_after_the_rows_is_damage_not_a_fold() {
        let (_dir, journal) = journal();
        let a = id_of(&journal, "a");
        let first = journal.object_versions(a).unwrap()[0].seq;
        journal
            .conn()
            .execute(
                "INSERT INTO blocks(object_id, first_seq, last_seq, min_at, max_at, records,
                                    columns, bodies)
                 VALUES (?1, ?2, ?2, 0, 0, 64, x'', x'')",
                params![a, first + 1_000_000],
            )
            .unwrap();
        assert!(matches!(
            journal.fold_object(a, i64::MAX),
            Err(JournalError::Corrupt { .. })
        ));
        // Nothing was changed.
        assert_eq!(
            count(
                &journal,
                &format!("SELECT count(*) FROM records WHERE object_id = {a}")
            ),
            152
        );
    }
}
