//! Retention behind a running recorder (docs/journal.md, "Retention"): the
//! same cut as `prune` (a stream's state at the cut becomes a baseline there,
//! everything older goes), carried out a small step at a time by the journal
//! writer between its batches, so that no step holds the writer for more than
//! a few milliseconds, and freed pages go back to the file system
//! (`auto_vacuum = INCREMENTAL`).
//!
//! A step is one transaction of its own:
//!
//! 1. the baseline's items, [`ITEMS_PER_STEP`] at a time, below every `seq`
//!    there is; readers skip items without their header;
//! 2. the header: from then on every answer at or after the cut reads the new
//!    baseline;
//! 3. the stream's records at or before the cut, [`RECORDS_PER_STEP`] at a
//!    time (its metadata through `records_stream_meta`, its events through a
//!    window of [`SCAN_PER_STEP`] `seq`s), each with the bodies, packs and
//!    objects nothing references any more. Bodies and packs belong to one
//!    object each, so what a deleted record freed is found from that object's
//!    records (`records_object`), never by a scan of the journal.
//!
//! The caller keeps foreign-key enforcement off meanwhile, as `prune` does:
//! enforcement would check each deleted body against every record.

use super::JournalError;
use super::schema::{kind, parse_pack_ref};
use super::{StreamId, prune::StreamCut};
use rusqlite::{OptionalExtension, Transaction, params};
use std::collections::{BTreeSet, HashSet};
use std::path::Path;

/// What a step can fail on: SQLite, or a block that cannot be read.
enum StepError {
    Sqlite(rusqlite::Error),
    Journal(JournalError),
}

impl From<rusqlite::Error> for StepError {
    fn from(e: rusqlite::Error) -> StepError {
        StepError::Sqlite(e)
    }
}

impl From<JournalError> for StepError {
    fn from(e: JournalError) -> StepError {
        StepError::Journal(e)
    }
}

/// Baseline items written per step.
pub const ITEMS_PER_STEP: usize = 512;
/// Records deleted per step, at most.
pub const RECORDS_PER_STEP: usize = 512;
/// `seq`s looked at per step for a stream's events, at most.
pub const SCAN_PER_STEP: i64 = 8192;
/// Blocks cut through per step, at most.
pub const BLOCKS_PER_STEP: usize = 64;
/// Pages given back to the file system per step (64 KiB each at most).
pub const PAGES_PER_STEP: i64 = 256;

/// Where one stream's retention stands.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Stage {
    /// Writing items; the next one to write.
    Items(usize),
    Header,
    /// Deleting the stream's metadata records.
    Meta,
    /// Deleting its events; the `seq` the next window starts after.
    Events(i64),
    /// Deleting its objects' records kept in blocks (docs/journal.md, "Cold
    /// history in blocks"); the block id the next step starts after.
    Blocks(i64),
    Done,
}

/// One stream's retention.
#[derive(Debug, Clone)]
pub struct RetainJob {
    cut: StreamCut,
    stage: Stage,
    /// The smallest `seq` before the job: the new baseline goes below it, and
    /// only records from it on are deleted.
    old_min: Option<i64>,
    /// The first `seq` of the new baseline.
    base: i64,
    /// The last `seq` old enough, by the zones (taken at the header).
    bound: i64,
    /// The items written into their object's first block rather than as
    /// rows (docs/journal.md, "Cold history in blocks").
    in_blocks: HashSet<usize>,
}

/// What one step did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Step {
    pub records_deleted: u64,
    pub bodies_deleted: u64,
    /// Objects whose records were deleted: the writer's memory of them may
    /// name bodies that are gone.
    pub touched: Vec<i64>,
    /// Objects with no record left, deleted.
    pub objects_deleted: Vec<i64>,
    pub done: bool,
}

impl RetainJob {
    pub fn new(cut: StreamCut) -> RetainJob {
        RetainJob {
            cut,
            stage: Stage::Items(0),
            old_min: None,
            base: 0,
            bound: 0,
            in_blocks: HashSet::new(),
        }
    }

    pub fn stream(&self) -> StreamId {
        self.cut.stream
    }

    pub fn cut(&self) -> i64 {
        self.cut.cut
    }

    /// Carries out the next step in `tx`, on the journal at `path`;
    /// `bodies` reads the bodies of the cut's items.
    pub fn step(
        &mut self,
        tx: &Transaction<'_>,
        path: &Path,
        bodies: &mut super::bodies::BodyStore,
    ) -> Result<Step, JournalError> {
        let err = |e| JournalError::sqlite(path, e);
        self.step_rows(tx, path, bodies).map_err(|e| match e {
            StepError::Sqlite(e) => err(e),
            StepError::Journal(e) => e,
        })
    }

    fn step_rows(
        &mut self,
        tx: &Transaction<'_>,
        path: &Path,
        bodies: &mut super::bodies::BodyStore,
    ) -> Result<Step, StepError> {
        if self.old_min.is_none() {
            let min: i64 = tx.query_row(super::MIN_SEQ, [], |r| r.get(0))?;
            self.old_min = Some(min);
            self.base = min - self.cut.items.len() as i64 - 2;
        }
        let mut step = Step::default();
        match self.stage.clone() {
            Stage::Items(next) => {
                let end = (next + ITEMS_PER_STEP).min(self.cut.items.len());
                // An item of an object that keeps a block after the cut goes
                // into that block, before its records (blocks hold an
                // object's oldest records); another whose version is kept in
                // a block gets a body row of its own, as the block loses that
                // record below.
                let mut codec = super::cold::ColdCx::default();
                for i in next..end {
                    // Found again by its `seq` if the writer folded it into a
                    // block since the cut was planned.
                    let item = &self.cut.items[i];
                    let object = item.object;
                    let body = super::cold::body_of(
                        tx,
                        path,
                        &mut codec,
                        (object, item.seq),
                        &item.resource_version,
                        item.body,
                    )?;
                    let rv = self.cut.items[i].resource_version.clone();
                    if let Some(block) = super::cold::first_block_after(tx, object, self.cut.cut)? {
                        let raw = bodies.read(tx, body)?;
                        let item = super::block::ColdRecord {
                            seq: self.base + i as i64,
                            kind: kind::BASELINE_ITEM,
                            observed_at: self.cut.cut,
                            watch_type: None,
                            resource_version: Some(super::wire::Rv::parse(&rv)),
                            event_key: None,
                            aux: Some(self.base),
                            body: Some(raw.as_slice()),
                        };
                        super::cold::prepend(tx, path, &mut codec, block, item)?;
                        self.in_blocks.insert(i);
                    } else {
                        self.cut.items[i].body =
                            super::cold::body_row_of(tx, path, &mut codec, body)?;
                    }
                }
                self.write_items(tx, next, end)?;
                self.stage = if end == self.cut.items.len() {
                    Stage::Header
                } else {
                    Stage::Items(end)
                };
            }
            Stage::Header => {
                let info = serde_json::json!({ "items": self.cut.items.len(), "pruned": true })
                    .to_string();
                tx.execute(
                    "INSERT INTO records(seq, stream_id, kind, observed_at, resource_version, aux, info)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    params![
                        self.base + self.cut.items.len() as i64,
                        self.cut.stream,
                        kind::BASELINE,
                        self.cut.cut,
                        self.cut.list_rv,
                        self.base,
                        info
                    ],
                )?;
                self.bound = super::zones::bounds(tx)?.at(self.cut.cut);
                self.stage = Stage::Meta;
            }
            Stage::Meta => {
                let seqs = self.meta_batch(tx)?;
                if seqs.is_empty() {
                    self.stage = Stage::Events(self.old_min.unwrap_or(1) - 1);
                } else {
                    self.delete(tx, &seqs, &mut step)?;
                }
            }
            Stage::Events(after) => {
                let until = (after + SCAN_PER_STEP).min(self.bound);
                let seqs = self.event_batch(tx, after, until)?;
                let next = if seqs.len() == RECORDS_PER_STEP {
                    *seqs.last().unwrap_or(&until)
                } else {
                    until
                };
                self.delete(tx, &seqs, &mut step)?;
                self.stage = if next >= self.bound {
                    Stage::Blocks(0)
                } else {
                    Stage::Events(next)
                };
            }
            Stage::Blocks(after) => {
                let ids = super::cold::blocks_before(
                    tx,
                    self.cut.stream,
                    self.cut.cut,
                    after,
                    BLOCKS_PER_STEP,
                )?;
                let mut codec = super::cold::ColdCx::default();
                let mut objects = BTreeSet::new();
                for &id in &ids {
                    if let Some((object, gone)) = super::cold::cut_block(
                        tx,
                        path,
                        &mut codec,
                        id,
                        self.cut.cut,
                        self.old_min.unwrap_or(i64::MIN),
                    )? && gone > 0
                    {
                        step.records_deleted += gone;
                        objects.insert(object);
                    }
                }
                if !objects.is_empty() {
                    bump_generation(tx)?;
                }
                for &object in &objects {
                    self.drop_if_gone(tx, object, &mut step)?;
                }
                step.touched = objects.into_iter().collect();
                self.stage = match ids.last() {
                    Some(&last) if ids.len() == BLOCKS_PER_STEP => Stage::Blocks(last),
                    _ => Stage::Done,
                };
            }
            Stage::Done => {}
        }
        step.done = self.stage == Stage::Done;
        Ok(step)
    }

    /// Items `from..to` of the baseline, and a zone of their own.
    fn write_items(&self, tx: &Transaction<'_>, from: usize, to: usize) -> rusqlite::Result<()> {
        if from == to {
            return Ok(());
        }
        let mut insert = tx.prepare_cached(
            "INSERT INTO records(seq, stream_id, kind, observed_at, object_id, body_id,
                                 resource_version, aux)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?;
        for (i, item) in self.cut.items[from..to].iter().enumerate() {
            if self.in_blocks.contains(&(from + i)) {
                continue;
            }
            insert.execute(params![
                self.base + (from + i) as i64,
                self.cut.stream,
                kind::BASELINE_ITEM,
                self.cut.cut,
                item.object,
                item.body,
                item.resource_version,
                self.base
            ])?;
        }
        // Zones may overlap and name seqs that are gone; each only has to
        // contain its records (zones.rs).
        tx.execute(
            "INSERT INTO zones(first_seq, last_seq, records, min_at, max_at) VALUES (?1, ?2, ?3, ?4, ?4)",
            params![
                self.base + from as i64,
                self.base + to as i64 - 1,
                (to - from) as i64,
                self.cut.cut
            ],
        )?;
        Ok(())
    }

    /// The next metadata records of the stream at or before the cut (the
    /// new baseline's header is below `old_min`).
    fn meta_batch(&self, tx: &Transaction<'_>) -> rusqlite::Result<Vec<i64>> {
        let mut stmt = tx.prepare_cached(&format!(
            "SELECT seq FROM records WHERE stream_id = ?1 AND {} AND observed_at <= ?2 AND seq >= ?3
             ORDER BY seq LIMIT ?4",
            kind::META
        ))?;
        stmt.query_map(
            params![
                self.cut.stream,
                self.cut.cut,
                self.old_min.unwrap_or(1),
                RECORDS_PER_STEP as i64
            ],
            |r| r.get(0),
        )?
        .collect()
    }

    /// The stream's events at or before the cut with `seq` in `(after, until]`.
    fn event_batch(
        &self,
        tx: &Transaction<'_>,
        after: i64,
        until: i64,
    ) -> rusqlite::Result<Vec<i64>> {
        let mut stmt = tx.prepare_cached(
            "SELECT seq FROM records WHERE seq > ?1 AND seq <= ?2 AND stream_id = ?3 AND kind = ?4
                 AND observed_at <= ?5
             ORDER BY seq LIMIT ?6",
        )?;
        stmt.query_map(
            params![
                after,
                until,
                self.cut.stream,
                kind::EVENT,
                self.cut.cut,
                RECORDS_PER_STEP as i64
            ],
            |r| r.get(0),
        )?
        .collect()
    }

    /// Deletes the records `seqs`, then what only they referenced, and says
    /// so to readers on other connections ([`super::SnapshotMark`]).
    fn delete(&self, tx: &Transaction<'_>, seqs: &[i64], step: &mut Step) -> rusqlite::Result<()> {
        if seqs.is_empty() {
            return Ok(());
        }
        bump_generation(tx)?;
        let mut freed: BTreeSet<(i64, i64)> = BTreeSet::new();
        let mut objects: BTreeSet<i64> = BTreeSet::new();
        {
            let mut del = tx.prepare_cached(
                "DELETE FROM records WHERE seq = ?1 RETURNING object_id, body_id",
            )?;
            for seq in seqs {
                let row: Option<(Option<i64>, Option<i64>)> = del
                    .query_row(params![seq], |r| Ok((r.get(0)?, r.get(1)?)))
                    .optional()?;
                let Some((object, body)) = row else { continue };
                step.records_deleted += 1;
                if let Some(object) = object {
                    objects.insert(object);
                    if let Some(body) = body {
                        freed.insert((object, body));
                    }
                }
            }
        }
        for &object in &objects {
            let bodies: Vec<i64> = freed
                .range((object, i64::MIN)..=(object, i64::MAX))
                .map(|&(_, b)| b)
                .collect();
            step.bodies_deleted += collect_object(tx, object, &bodies)?;
            self.drop_if_gone(tx, object, step)?;
        }
        step.touched = objects.into_iter().collect();
        Ok(())
    }

    /// Deletes `object` (and its audit events) when neither rows nor blocks
    /// hold a record of it any more.
    fn drop_if_gone(
        &self,
        tx: &Transaction<'_>,
        object: i64,
        step: &mut Step,
    ) -> rusqlite::Result<()> {
        if !super::cold::object_has_records(tx, object)? {
            tx.execute(
                "DELETE FROM audit_packs WHERE object_id = ?1",
                params![object],
            )?;
            tx.execute("DELETE FROM objects WHERE id = ?1", params![object])?;
            step.objects_deleted.push(object);
        }
        Ok(())
    }
}

/// Deletes the waiting bytes of body `?1`, if it waits to be packed.
static DELETE_WAITING: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "DELETE FROM waiting WHERE slot =
            (SELECT pack_ref - {waiting} FROM bodies
             WHERE id = ?1 AND pack_ref >= {waiting} AND pack_ref < {packed})",
        waiting = super::schema::WAITING,
        packed = super::schema::PACKED,
    )
});

/// A body row's base and pack reference.
fn body_links(
    tx: &Transaction<'_>,
    body: i64,
) -> rusqlite::Result<Option<(Option<i64>, Option<i64>)>> {
    tx.prepare_cached("SELECT base_id, pack_ref FROM bodies WHERE id = ?1")?
        .query_row(params![body], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()
}

/// The pack a `pack_ref` points into.
fn pack_of(pack_ref: Option<i64>) -> Option<i64> {
    pack_ref.and_then(parse_pack_ref).map(|(pack, _)| pack)
}

/// Deletes, of `candidates` (bodies of `object` its deleted records used),
/// their bases and their packs, whatever the object's remaining records no
/// longer reach. Returns the bodies deleted.
pub(super) fn collect_object(
    tx: &Transaction<'_>,
    object: i64,
    candidates: &[i64],
) -> rusqlite::Result<u64> {
    if candidates.is_empty() {
        return Ok(0);
    }
    // What the object's remaining records reach: their bodies, the bases of
    // those, their packs and the packs' bases.
    let mut needed_bodies: HashSet<i64> = HashSet::new();
    let mut needed_packs: HashSet<i64> = HashSet::new();
    let live: Vec<i64> = tx
        .prepare_cached(
            "SELECT DISTINCT body_id FROM records WHERE object_id = ?1 AND body_id IS NOT NULL",
        )?
        .query_map(params![object], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for body in live {
        needed_bodies.insert(body);
        if let Some((base, pack_ref)) = body_links(tx, body)? {
            needed_bodies.extend(base);
            if let Some(pack) = pack_of(pack_ref) {
                needed_packs.insert(pack);
            }
        }
    }
    for &pack in &needed_packs {
        let base: Option<i64> = tx
            .prepare_cached("SELECT base_id FROM packs WHERE id = ?1")?
            .query_row(params![pack], |r| r.get(0))
            .optional()?;
        needed_bodies.extend(base);
    }
    // The candidates, with their bases and their packs' bases, unless needed.
    let mut bodies: BTreeSet<i64> = BTreeSet::new();
    let mut packs: BTreeSet<i64> = BTreeSet::new();
    for &body in candidates {
        bodies.insert(body);
        if let Some((base, pack_ref)) = body_links(tx, body)? {
            bodies.extend(base);
            packs.extend(pack_of(pack_ref));
        }
    }
    if packs.iter().any(|p| !needed_packs.contains(p)) {
        keep_pack_ids(tx)?;
    }
    for &pack in packs.iter().filter(|p| !needed_packs.contains(p)) {
        let base: Option<i64> = tx
            .prepare_cached("DELETE FROM packs WHERE id = ?1 RETURNING base_id")?
            .query_row(params![pack], |r| r.get(0))
            .optional()?;
        bodies.extend(base);
    }
    let mut deleted = 0;
    for &body in bodies.iter().filter(|b| !needed_bodies.contains(b)) {
        // Its bytes while it waits to be packed, found from its row in the
        // same statement.
        tx.prepare_cached(&DELETE_WAITING)?.execute(params![body])?;
        deleted += tx.execute("DELETE FROM bodies WHERE id = ?1", params![body])? as u64;
    }
    Ok(deleted)
}

/// Gives up to `pages` free pages back to the file system (`auto_vacuum =
/// INCREMENTAL`); returns how many the free list lost. The pragma frees a
/// page each time it is stepped, so it is stepped to its end:
/// `execute_batch` steps a statement once, and freed one page where it was
/// asked for 256.
pub fn give_back_pages(conn: &rusqlite::Connection, pages: i64) -> rusqlite::Result<i64> {
    let free = |c: &rusqlite::Connection| -> rusqlite::Result<i64> {
        c.query_row("PRAGMA freelist_count", [], |r| r.get(0))
    };
    let before = free(conn)?;
    let mut stmt = conn.prepare(&format!("PRAGMA incremental_vacuum({pages})"))?;
    let mut rows = stmt.query([])?;
    // Bounded: a row per page freed, at most `pages`.
    while rows.next()?.is_some() {}
    drop(rows);
    drop(stmt);
    Ok(before - free(conn)?)
}

/// Remembers, before packs are deleted, the highest id a pack has had
/// (`meta.packs_high`), which the next pack's id is above: SQLite would give
/// the highest deleted rowid to the next row, and a reader that cached the
/// deleted pack by its id (a `browse` or `mcp` session across reloads)
/// would read that one's bytes for the new one's (docs/journal.md, "Packs").
pub(super) fn keep_pack_ids(conn: &rusqlite::Connection) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO meta(key, value)
         SELECT 'packs_high', coalesce(max(id), 0) FROM packs WHERE true
         ON CONFLICT(key) DO UPDATE
         SET value = max(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER))",
    )?
    .execute([])?;
    Ok(())
}

/// Counts one more deletion of history, in `meta`: a reader's snapshot mark
/// taken before it no longer holds ([`super::SnapshotMark::still_held_by`]).
pub fn bump_generation(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute(
        "INSERT INTO meta(key, value) VALUES ('prune_generation', '1')
         ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1",
        [],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_go_back_as_many_as_asked() {
        let dir = tempfile::tempdir().unwrap();
        let conn = rusqlite::Connection::open(dir.path().join("j.db")).unwrap();
        conn.execute_batch(
            "PRAGMA page_size = 8192; PRAGMA auto_vacuum = INCREMENTAL;
             CREATE TABLE t(x BLOB);",
        )
        .unwrap();
        for _ in 0..400 {
            conn.execute("INSERT INTO t VALUES (zeroblob(8000))", [])
                .unwrap();
        }
        conn.execute("DELETE FROM t", []).unwrap();
        let free = |c: &rusqlite::Connection| -> i64 {
            c.query_row("PRAGMA freelist_count", [], |r| r.get(0))
                .unwrap()
        };
        let before = free(&conn);
        assert!(before > 300, "{before}");
        assert_eq!(give_back_pages(&conn, 256).unwrap(), 256);
        assert_eq!(free(&conn), before - 256);
        assert_eq!(give_back_pages(&conn, 256).unwrap(), before - 256);
        assert_eq!(free(&conn), 0);
    }
}
