//! Object versions: the read-side queries behind history answers (state at a
//! time, what changed in a window, the timeline of one object). Every query goes
//! through an index on object, stream or time; none scans the whole journal.

use super::block::{self, ColdRecord};
use super::codec::{Codec, DecoderDict, KeyframeCache, PreparedKeyframe};
use super::records::BaselineInfo;
use super::schema::BodyRow;
use super::schema::kind;
use super::wire::Rv;
use super::{IdMap, IdSet, Journal, JournalError, StreamId};
use crate::model::WatchType;
use rusqlite::{OptionalExtension, params};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, LazyLock};

/// One recorded version of an object: a live event or a baseline item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionRow {
    pub seq: i64,
    pub stream: StreamId,
    pub object: i64,
    /// [`kind::EVENT`] or [`kind::BASELINE_ITEM`].
    pub kind: i64,
    pub observed_at: i64,
    /// The event type; `None` for a baseline item.
    pub watch_type: Option<WatchType>,
    pub resource_version: String,
    pub body: i64,
    /// The list a baseline item belongs to.
    pub list_token: Option<i64>,
    /// For a MODIFIED event, whether the writer saw a default diff change
    /// against the object's record before it (docs/journal.md, "Status-only
    /// changes"); `None` when it could not tell.
    pub mark: Option<Mark>,
}

/// What the writer's mark says of a MODIFIED event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// Nothing a default diff compares changed.
    StatusOnly,
    /// Something a default diff compares changed.
    Changed,
}

impl Mark {
    /// The mark in a record's `aux`, for a record of `kind` and `watch_type`.
    pub fn of(kind_: i64, watch_type: Option<WatchType>, aux: Option<i64>) -> Option<Mark> {
        if kind_ != kind::EVENT || watch_type != Some(WatchType::Modified) {
            return None;
        }
        match aux? {
            super::schema::mark::STATUS_ONLY => Some(Mark::StatusOnly),
            super::schema::mark::CHANGED => Some(Mark::Changed),
            _ => None,
        }
    }
}

/// What a count of changes needs of a version ([`VersionRow`] without its
/// resourceVersion, body and list).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VersionHead {
    pub seq: i64,
    pub object: i64,
    /// [`kind::EVENT`] or [`kind::BASELINE_ITEM`].
    pub kind: i64,
    pub observed_at: i64,
    pub watch_type: Option<WatchType>,
    pub mark: Option<Mark>,
    /// Its resourceVersion as a [`RvKey`]: equal keys, equal versions.
    pub rv: RvKey,
    /// The list a baseline item belongs to.
    pub list_token: Option<i64>,
    /// Its body ([`VersionRow::body`]).
    pub body: i64,
}

/// A resourceVersion as a number that two versions share exactly when their
/// resourceVersions are equal: the number itself when it is plain decimal
/// below 2^63 (as etcd's are), else 2^63 and the position of its text among
/// those [`RvKeys`] met so far.
pub type RvKey = u64;

/// The [`RvKey`]s of resourceVersions that are not plain decimal numbers,
/// for one reading, and their texts.
#[derive(Debug, Default)]
pub struct RvKeys {
    keys: HashMap<Vec<u8>, u64>,
    texts: Vec<Vec<u8>>,
}

impl RvKeys {
    pub fn key(&mut self, rv: &[u8]) -> RvKey {
        let plain = !rv.is_empty()
            && rv.len() <= 18
            && rv.iter().all(u8::is_ascii_digit)
            && (rv == b"0" || rv[0] != b'0');
        if plain {
            // 18 digits at most: below 10^18 < 2^63.
            return rv.iter().fold(0u64, |n, d| n * 10 + u64::from(d - b'0'));
        }
        let next = self.texts.len() as u64;
        let key = *self.keys.entry(rv.to_vec()).or_insert_with(|| {
            self.texts.push(rv.to_vec());
            next
        });
        1 << 63 | key
    }

    /// [`RvKeys::key`] of a resourceVersion as a block stores it: a plain
    /// decimal below 10^18 is its own key, with no text written.
    pub fn key_of(&mut self, rv: Option<&Rv>) -> RvKey {
        match rv {
            None => self.key(b""),
            Some(Rv::Int(n)) if (0..1_000_000_000_000_000_000).contains(n) => *n as u64,
            Some(rv) => rv.with_text(|t| self.key(t.as_bytes())),
        }
    }

    /// The resourceVersion a key of this reading stands for; `None` for a
    /// key it did not give, or text that is not UTF-8.
    pub fn text(&self, key: RvKey) -> Option<String> {
        if key >> 63 == 0 {
            return Some(key.to_string());
        }
        let text = self.texts.get(usize::try_from(key & !(1 << 63)).ok()?)?;
        String::from_utf8(text.clone()).ok()
    }
}

/// The heads of the records kept in blocks just before a pass along the
/// records ([`Journal::visit_version_heads_from`] from a `seq`), by object:
/// those of the one block of each object that the pass read and that begins
/// before it, which a walk down from the pass's start
/// ([`Journal::object_heads_down_to`]) would decode again. Each object's are
/// in `seq` order, from the last one observed at or before `at` that is no
/// list's item (a walk down to `at` stops there: the older ones are not
/// kept).
#[derive(Debug, Default)]
pub struct HeadsBelow {
    at: i64,
    by_object: IdMap<i64, Vec<VersionHead>>,
}

impl HeadsBelow {
    /// For a walk down to the version observed at or before `at`.
    pub fn new(at: i64) -> HeadsBelow {
        HeadsBelow {
            at,
            by_object: IdMap::default(),
        }
    }

    /// Takes the next head of its object's block, in `seq` order.
    fn push(&mut self, head: VersionHead) {
        let heads = self.by_object.entry(head.object).or_default();
        if head.observed_at <= self.at && head.list_token.is_none() {
            heads.clear();
        }
        heads.push(head);
    }

    /// `object`'s, taken out.
    pub fn take(&mut self, object: i64) -> Vec<VersionHead> {
        self.by_object.remove(&object).unwrap_or_default()
    }
}

impl VersionRow {
    /// Its head; `keys` gives its resourceVersion's key.
    pub fn head(&self, keys: &mut RvKeys) -> VersionHead {
        VersionHead {
            seq: self.seq,
            object: self.object,
            kind: self.kind,
            observed_at: self.observed_at,
            watch_type: self.watch_type,
            mark: self.mark,
            rv: keys.key(self.resource_version.as_bytes()),
            list_token: self.list_token,
            body: self.body,
        }
    }

    /// The versions of one object that `keep` keeps, in order. A version kept
    /// after one left out loses its mark, which links the record left out.
    pub fn kept(rows: Vec<VersionRow>, keep: impl Fn(&VersionRow) -> bool) -> Vec<VersionRow> {
        let mut left_out = false;
        rows.into_iter()
            .filter_map(|mut v| {
                if !keep(&v) {
                    left_out = true;
                    return None;
                }
                if std::mem::take(&mut left_out) {
                    v.mark = None;
                }
                Some(v)
            })
            .collect()
    }

    /// Seen by a list rather than received as an event.
    pub fn synthetic(&self) -> bool {
        self.kind == kind::BASELINE_ITEM
    }

    pub fn deleted(&self) -> bool {
        self.watch_type == Some(WatchType::Deleted)
    }
}

/// A completed list of a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaselineRef {
    /// The header record.
    pub seq: i64,
    /// Shared by the list's items, which all have `token <= seq < self.seq`.
    pub token: i64,
    pub observed_at: i64,
    pub resource_version: String,
    pub items: u64,
}

/// Where a list began, for [`Journal::objects_maybe_present_before`]: at a
/// `seq` of the stream asked about, or at a time (another stream's list).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Before {
    Seq(i64),
    Time(i64),
}

/// An object of a stream, by name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjectRow {
    pub id: i64,
    pub stream: StreamId,
    pub namespace: String,
    pub name: String,
}

const VERSION_COLUMNS: &str =
    "seq, stream_id, object_id, kind, observed_at, watch_type, resource_version, body_id, aux";

// The statements asked once or more for every object of an answer, written
// once (formatting them at each call cost a diff of 15,000 objects 2 %).
static OBJECT_VERSIONS_BETWEEN: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {VERSION_COLUMNS} FROM records
         WHERE object_id = ?1 AND seq >= ?2 AND seq < ?3 AND kind IN ({}, {}) ORDER BY seq",
        kind::EVENT,
        kind::BASELINE_ITEM
    )
});
static OBJECT_VERSION_AT: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {VERSION_COLUMNS} FROM records
         WHERE object_id = ?1 AND seq <= ?3 AND kind IN ({}, {}) AND observed_at <= ?2
         ORDER BY seq DESC",
        kind::EVENT,
        kind::BASELINE_ITEM
    )
});
static OBJECT_VERSIONS_DOWN: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {VERSION_COLUMNS} FROM records
         WHERE object_id = ?1 AND seq <= ?2 AND kind IN ({}, {})
         ORDER BY seq DESC",
        kind::EVENT,
        kind::BASELINE_ITEM
    )
});
static OBJECT_VERSION_SINCE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {VERSION_COLUMNS} FROM records
         WHERE object_id = ?1 AND seq <= ?2 AND seq > ?3 AND kind IN ({}, {})
         ORDER BY seq DESC",
        kind::EVENT,
        kind::BASELINE_ITEM
    )
});
static VERSION_AT_SEQ: LazyLock<String> = LazyLock::new(|| {
    format!("SELECT {VERSION_COLUMNS} FROM records WHERE seq = ?1 AND object_id IS NOT NULL")
});

/// A block's columns as one reader decoded them, and its bodies as stored,
/// to hand to another (a diff's window scan to the thread that reads the
/// object's versions): a block is never changed once written, and its id is
/// never used again, so they hold on any connection that finds the block.
#[derive(Clone)]
pub struct DecodedBlock {
    block: HeldBlock,
    /// The row of the block's object, read with the block.
    object: Arc<ObjectRow>,
}

impl DecodedBlock {
    /// The row of the object whose records the block holds.
    pub fn object(&self) -> &ObjectRow {
        &self.object
    }
}

/// One object record of [`Journal::visit_window`].
#[derive(Debug, Clone, Copy)]
pub struct WindowRecord {
    pub seq: i64,
    pub stream: StreamId,
    pub object: i64,
    pub observed_at: i64,
    /// A MODIFIED event the writer marked as changing nothing a default diff
    /// compares (docs/journal.md, "Status-only changes").
    pub status_only: bool,
}

/// The most marked versions [`Journal::object_version_since`] steps over
/// before it answers "not known", and the versions are compared instead. A
/// row costs about 1.3 µs to step over, a comparison about 40 µs; but an
/// object that changes all the time (W-deep: 200 times in the window, most
/// of them status only) would be walked for nothing before each comparison.
/// 8 covers objects that changed a few times (W-wide's change 5 times), and
/// costs W-deep's diff about 4 %.
const MARKED_WALK: usize = 8;

/// A record kept in a block, as a walk down an object's blocks meets it.
struct ColdRef<'c> {
    stream: StreamId,
    block: i64,
    /// Its body among the block's ([`ColdColumns::ordinals`]).
    ordinal: Option<usize>,
    record: &'c ColdRecord<std::ops::Range<usize>>,
}

/// A record kept in a block, as stored, with its object and the id its body
/// reads by.
#[derive(Clone)]
pub(super) struct ColdRow {
    pub stream: StreamId,
    pub object: i64,
    pub block: i64,
    pub body: Option<i64>,
    pub record: ColdRecord<()>,
}

/// A block's columns as [`Journal::block_columns`] keeps them.
#[derive(Debug)]
pub struct ColdColumns {
    pub records: Vec<ColdRecord<std::ops::Range<usize>>>,
    pub raw_len: usize,
    /// Each record's body among the block's distinct bodies.
    pub ordinals: Vec<Option<usize>>,
    /// Those bodies' places in the decoded bodies.
    pub places: Vec<std::ops::Range<usize>>,
}

/// What a [`Journal`] keeps of the blocks it read: a decompression context,
/// the last block's columns and the last object's blocks.
#[derive(Default)]
pub struct ColdCache {
    codec: Codec,
    columns: Option<(i64, Arc<ColdColumns>)>,
    /// The last object's blocks ([`Journal::object_blocks`]).
    blocks: Option<Arc<ObjectBlocks>>,
    /// The last object row read in this snapshot, as `(id, stream)`: a diff
    /// reads an object's row, then its blocks, which need its stream.
    object: Option<(i64, StreamId)>,
    /// Whether `records` holds no object record in this snapshot: every
    /// version is in a block (a stop folded them all), so a walk down an
    /// object's rows finds none ([`Journal::no_object_rows`]).
    no_rows: Option<bool>,
    /// The records kept in blocks of the last stretch of `seq`s a reading
    /// in `seq` order asked for ([`Journal::cold_rows_after`]).
    page: Option<ColdPage>,
}

/// The records kept in blocks with a `seq` in `[from, to]`, in `seq` order,
/// as read when the journal's prune generation was `generation` (folds,
/// retention and prunes change it; a recorder's new records are rows).
struct ColdPage {
    generation: i64,
    from: i64,
    to: i64,
    rows: Vec<ColdRow>,
}

/// How many `seq`s a [`ColdPage`] spans: a reading in pages of a few
/// thousand records decodes the blocks that meet this stretch once, not
/// once a page (a block spans its object's history, often the whole
/// journal's), and holds about this many records. The unit tests' is small,
/// so their readings in `seq` order cross many stretches.
const COLD_PAGE_SEQS: i64 = if cfg!(test) { 20 } else { 1 << 17 };

impl ColdCache {
    /// Forgets what holds only in one snapshot: the last object's blocks
    /// (a block's columns, by an id never used again, hold in any).
    pub(super) fn forget_snapshot(&mut self) {
        self.blocks = None;
        self.object = None;
        self.no_rows = None;
    }
}

/// An object's blocks in one snapshot: `(id, first_seq)`, oldest first.
pub struct ObjectBlocks {
    object: i64,
    stream: StreamId,
    ids: Vec<(i64, i64)>,
}

/// `rows` and `cold` (each in `seq` order) as one sequence in `seq` order.
pub(super) fn merged_by_seq<T>(rows: Vec<T>, cold: Vec<T>, seq: impl Fn(&T) -> i64) -> Vec<T> {
    if cold.is_empty() {
        return rows;
    }
    let mut out = Vec::with_capacity(rows.len() + cold.len());
    let mut cold = cold.into_iter().peekable();
    for r in rows {
        // Bounded by `cold`.
        while let Some(c) = cold.next_if(|c| seq(c) < seq(&r)) {
            out.push(c);
        }
        out.push(r);
    }
    out.extend(cold);
    out
}

/// [`Journal::object_version_since`]'s walk down an object's versions,
/// newest first.
struct SinceWalk<'a> {
    at: i64,
    lists: &'a IdSet<i64>,
    /// The version at `at`, once met, while the versions under it are all
    /// status only.
    found: Option<VersionRow>,
    walked: usize,
    /// Set when the walk has its answer.
    answer: Option<Option<(VersionRow, bool)>>,
}

impl SinceWalk<'_> {
    fn step(&mut self, v: VersionRow) -> std::ops::ControlFlow<()> {
        use std::ops::ControlFlow::{Break, Continue};
        let marked = v.mark == Some(Mark::StatusOnly);
        if self.found.is_none() {
            // Later than `at`, or an item of a list that never completed.
            if v.observed_at > self.at || v.list_token.is_some_and(|t| !self.lists.contains(&t)) {
                return Continue(());
            }
            if !marked {
                self.answer = Some(Some((v, false)));
                return Break(());
            }
            self.found = Some(v);
        } else if !marked || self.walked == MARKED_WALK {
            self.answer = Some(self.found.take().map(|v| (v, false)));
            return Break(());
        }
        self.walked += 1;
        Continue(())
    }
}

fn version(r: &rusqlite::Row<'_>) -> rusqlite::Result<VersionRow> {
    let kind_: i64 = r.get(3)?;
    let watch_type = r.get::<_, Option<i64>>(5)?.and_then(WatchType::from_code);
    let aux: Option<i64> = r.get(8)?;
    Ok(VersionRow {
        seq: r.get(0)?,
        stream: r.get(1)?,
        object: r.get(2)?,
        kind: kind_,
        observed_at: r.get(4)?,
        watch_type,
        resource_version: r.get::<_, Option<String>>(6)?.unwrap_or_default(),
        body: r.get(7)?,
        list_token: if kind_ == kind::BASELINE_ITEM {
            aux
        } else {
            None
        },
        mark: Mark::of(kind_, watch_type, aux),
    })
}

fn object_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ObjectRow> {
    Ok(ObjectRow {
        id: r.get(0)?,
        stream: r.get(1)?,
        namespace: r.get(2)?,
        name: r.get(3)?,
    })
}

/// A walk's answer to a visit: stop once `found`.
fn stop_if(found: bool) -> std::ops::ControlFlow<()> {
    if found {
        std::ops::ControlFlow::Break(())
    } else {
        std::ops::ControlFlow::Continue(())
    }
}

/// The blocks with a record whose `seq` is in `[?1, ?2]`, as
/// [`Journal::block_of_stream`] reads them.
const BLOCKS_OF_SEQS_SQL: &str = "SELECT b.id, b.columns, o.stream_id, b.object_id
     FROM blocks b JOIN objects o ON o.id = b.object_id
     WHERE b.last_seq >= ?1 AND b.first_seq <= ?2";

/// [`Journal::objects_named`] in one namespace: one seek into `(stream_id,
/// namespace, name)`. One statement for both, with `?3 IS NULL OR`, would
/// leave SQLite the stream's prefix alone, a walk through all its objects
/// each time (browse's list of 10,000 objects asked that 10,000 times).
const OBJECTS_NAMED_IN_SQL: &str = "SELECT id, stream_id, namespace, name FROM objects
     WHERE stream_id = ?1 AND namespace = ?3 AND name = ?2";

/// [`Journal::objects_named`] in every namespace.
const OBJECTS_NAMED_SQL: &str = "SELECT id, stream_id, namespace, name FROM objects
     WHERE stream_id = ?1 AND name = ?2";

impl Journal {
    /// Every completed list of a stream, oldest first.
    pub fn baselines(&self, stream: StreamId) -> Result<Vec<BaselineRef>, JournalError> {
        let mut stmt = self
            .conn()
            .prepare_cached(&format!(
                "SELECT seq, aux, observed_at, resource_version, info FROM records
                 WHERE stream_id = ?1 AND kind = {} AND {meta} ORDER BY seq",
                kind::BASELINE,
                meta = kind::META
            ))
            .map_err(|e| self.err(e))?;
        stmt.query_map(params![stream], |r| {
            let seq: i64 = r.get(0)?;
            let info: Option<String> = r.get(4)?;
            Ok(BaselineRef {
                seq,
                token: r.get::<_, Option<i64>>(1)?.unwrap_or(seq),
                observed_at: r.get(2)?,
                resource_version: r.get::<_, Option<String>>(3)?.unwrap_or_default(),
                items: info
                    .and_then(|i| serde_json::from_str::<BaselineInfo>(&i).ok())
                    .map_or(0, |b| b.items),
            })
        })
        .and_then(|rows| rows.collect())
        .map_err(|e| self.err(e))
    }

    /// The items of one baseline.
    pub fn baseline_items(
        &self,
        stream: StreamId,
        baseline: &BaselineRef,
    ) -> Result<Vec<VersionRow>, JournalError> {
        let mut stmt = self
            .conn()
            .prepare_cached(&format!(
                "SELECT {VERSION_COLUMNS} FROM records
                 WHERE stream_id = ?1 AND kind = {} AND {meta} AND seq >= ?2 AND seq < ?3 AND aux = ?2
                 ORDER BY seq",
                kind::BASELINE_ITEM, meta = kind::META))
            .map_err(|e| self.err(e))?;
        let rows: Vec<VersionRow> = stmt
            .query_map(params![stream, baseline.token, baseline.seq], version)
            .and_then(|rows| rows.collect())
            .map_err(|e| self.err(e))?;
        let cold: Vec<VersionRow> = self
            .cold_scan(baseline.token, baseline.seq - 1)?
            .into_iter()
            .filter(|v| {
                v.stream == stream
                    && v.kind == kind::BASELINE_ITEM
                    && v.seq >= baseline.token
                    && v.seq < baseline.seq
                    && v.list_token == Some(baseline.token)
            })
            .collect();
        Ok(merged_by_seq(rows, cold, |v| v.seq))
    }

    /// The ids of `stream`'s objects, at most `limit` of them: every object
    /// it ever held when fewer come back.
    pub fn stream_object_ids(
        &self,
        stream: StreamId,
        limit: usize,
    ) -> Result<Vec<i64>, JournalError> {
        self.conn()
            .prepare_cached("SELECT id FROM objects WHERE stream_id = ?1 LIMIT ?2")
            .and_then(|mut s| {
                let limit = i64::try_from(limit).unwrap_or(i64::MAX);
                s.query_map(params![stream, limit], |r| r.get(0))?.collect()
            })
            .map_err(|e| self.err(e))
    }

    /// Live events of a stream after `after_seq` observed up to `until`, in
    /// order, each as `(seq, object, deleted)`: replaying them finds which
    /// objects are present, and [`Journal::version`] reads the full row of the
    /// few that are (a week's events are a million rows). `seq_bound`
    /// ([`super::zones::SeqBounds::at`] of `until`) ends the scan where the
    /// records observed after `until` begin, instead of at the journal's end.
    pub fn stream_events(
        &self,
        stream: StreamId,
        after_seq: i64,
        until: i64,
        seq_bound: i64,
    ) -> Result<Vec<(i64, i64, bool)>, JournalError> {
        let mut stmt = self
            .conn()
            .prepare_cached(&format!(
                "SELECT seq, object_id, watch_type IS {} FROM records
                 WHERE stream_id = ?1 AND kind = {} AND seq > ?2 AND seq <= ?4
                   AND observed_at <= ?3
                 ORDER BY seq",
                WatchType::Deleted.code(),
                kind::EVENT
            ))
            .map_err(|e| self.err(e))?;
        let rows: Vec<(i64, i64, bool)> = stmt
            .query_map(params![stream, after_seq, until, seq_bound], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .and_then(|rows| rows.collect())
            .map_err(|e| self.err(e))?;
        let cold: Vec<(i64, i64, bool)> = self
            .cold_scan(after_seq.saturating_add(1), seq_bound)?
            .into_iter()
            .filter(|v| {
                v.stream == stream
                    && v.kind == kind::EVENT
                    && v.seq > after_seq
                    && v.seq <= seq_bound
                    && v.observed_at <= until
            })
            .map(|v| (v.seq, v.object, v.deleted()))
            .collect();
        Ok(merged_by_seq(rows, cold, |e| e.0))
    }

    /// Every version of one object (events and baseline items), oldest first.
    pub fn object_versions(&self, object: i64) -> Result<Vec<VersionRow>, JournalError> {
        self.object_versions_from(object, i64::MIN)
    }

    /// The versions of `object` from the record `from` on (its `seq`), oldest
    /// first: [`Journal::object_versions`] without the past before it.
    pub fn object_versions_from(
        &self,
        object: i64,
        from: i64,
    ) -> Result<Vec<VersionRow>, JournalError> {
        self.object_versions_between(object, from, i64::MAX)
    }

    /// [`Journal::object_versions_from`] up to `to` (excluded).
    pub fn object_versions_between(
        &self,
        object: i64,
        from: i64,
        to: i64,
    ) -> Result<Vec<VersionRow>, JournalError> {
        // Its oldest records may be in blocks, and come first.
        let mut versions = self.cold_versions(object, from, to)?;
        let mut stmt = self
            .conn()
            .prepare_cached(&OBJECT_VERSIONS_BETWEEN)
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![object, from, to], version)
            .map_err(|e| self.err(e))?;
        for row in rows {
            versions.push(row.map_err(|e| self.err(e))?);
        }
        Ok(versions)
    }

    /// The versions of `object` kept in its blocks (docs/journal.md, "Cold
    /// history in blocks") with a `seq` in `[from, to)`, oldest first. Their
    /// bodies are read by [`BodyReader::read`] through the ids
    /// [`block::cold_body_id`] gives them.
    fn cold_versions(
        &self,
        object: i64,
        from: i64,
        to: i64,
    ) -> Result<Vec<VersionRow>, JournalError> {
        let mut stmt = self
            .conn()
            .prepare_cached(
                "SELECT b.id, b.columns, o.stream_id FROM blocks b JOIN objects o ON o.id = b.object_id
                 WHERE b.object_id = ?1 AND b.last_seq >= ?2 AND b.first_seq < ?3
                 ORDER BY b.first_seq",
            )
            .map_err(|e| self.err(e))?;
        let mut rows = stmt
            .query(params![object, from, to])
            .map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(|e| self.err(e))? {
            let versions = self.block_versions(row, object)?;
            out.extend(versions.into_iter().filter(|v| v.seq >= from && v.seq < to));
        }
        Ok(out)
    }

    /// Calls `visit` with the versions of `object` kept in its blocks with a
    /// `seq` up to `bound`, newest first, until it says to stop. Blocks hold
    /// an object's oldest records: a walk down its rows goes on here.
    fn cold_versions_down(
        &self,
        object: i64,
        bound: i64,
        mut visit: impl FnMut(VersionRow) -> std::ops::ControlFlow<()>,
    ) -> Result<(), JournalError> {
        self.cold_records_down(object, bound, |r| {
            let v = self.cold_version(ColdRow {
                stream: r.stream,
                object,
                block: r.block,
                body: r.ordinal.map(|o| block::cold_body_id(r.block, o)),
                record: r.record.with_body(None),
            })?;
            Ok(visit(v))
        })
    }

    /// [`Journal::cold_versions_down`]'s heads, made from the blocks'
    /// columns without a version of each.
    fn cold_heads_down(
        &self,
        object: i64,
        bound: i64,
        keys: &mut RvKeys,
        mut visit: impl FnMut(VersionHead) -> std::ops::ControlFlow<()>,
    ) -> Result<(), JournalError> {
        self.cold_records_down(object, bound, |r| {
            Ok(visit(
                self.cold_head(r.record, object, r.block, r.ordinal, keys)?,
            ))
        })
    }

    /// A row `(b.id, b.columns, o.stream_id, b.object_id)` of `blocks`
    /// joined to its object: the block's id, stream, object and columns'
    /// frame.
    fn block_of_stream<'r>(
        &self,
        row: &'r rusqlite::Row<'_>,
    ) -> Result<(i64, StreamId, i64, &'r [u8]), JournalError> {
        let (id, stream, object): (i64, StreamId, i64) =
            (|| Ok::<_, rusqlite::Error>((row.get(0)?, row.get(2)?, row.get(3)?)))()
                .map_err(|e| self.err(e))?;
        let frame = match row.get_ref(1).map_err(|e| self.err(e))? {
            rusqlite::types::ValueRef::Blob(b) => b,
            _ => &[],
        };
        Ok((id, stream, object, frame))
    }

    /// A record kept in a block as a head; `keys` gives its resourceVersion's
    /// key.
    fn cold_head(
        &self,
        r: &ColdRecord<std::ops::Range<usize>>,
        object: i64,
        block: i64,
        ordinal: Option<usize>,
        keys: &mut RvKeys,
    ) -> Result<VersionHead, JournalError> {
        let Some(ordinal) = ordinal else {
            return Err(self.damaged_block(
                block,
                block::BlockError::Damaged("a version without a body"),
            ));
        };
        let watch_type = r.watch_type.and_then(WatchType::from_code);
        Ok(VersionHead {
            seq: r.seq,
            object,
            kind: r.kind,
            observed_at: r.observed_at,
            watch_type,
            mark: Mark::of(r.kind, watch_type, r.aux),
            rv: keys.key_of(r.resource_version.as_ref()),
            list_token: (r.kind == kind::BASELINE_ITEM).then_some(r.aux).flatten(),
            body: block::cold_body_id(block, ordinal),
        })
    }

    /// Calls `visit` with the records of `object` kept in its blocks with a
    /// `seq` up to `bound` as stored, newest first, until it says to stop;
    /// only those visited are made into anything (a walk most often stops at
    /// the first, of up to [`block::BLOCK_VERSIONS`]; a diff walks twice for
    /// each object).
    fn cold_records_down(
        &self,
        object: i64,
        bound: i64,
        mut visit: impl FnMut(ColdRef<'_>) -> Result<std::ops::ControlFlow<()>, JournalError>,
    ) -> Result<(), JournalError> {
        let mut in_block = |cols: &ColdColumns, stream: StreamId, block: i64| {
            let records = cols.records.iter().zip(cols.ordinals.iter().copied());
            for (record, ordinal) in records.rev().filter(|(r, _)| r.seq <= bound) {
                let r = ColdRef {
                    stream,
                    block,
                    ordinal,
                    record,
                };
                if visit(r)?.is_break() {
                    return Ok(true);
                }
            }
            Ok::<_, JournalError>(false)
        };
        if let Some(blocks) = self.object_blocks(object)? {
            // Bounded by the object's blocks.
            for &(id, _) in blocks.ids.iter().rev().filter(|(_, first)| *first <= bound) {
                let cols = self.block_columns_of(id)?;
                if in_block(&cols, blocks.stream, id)? {
                    break;
                }
            }
            return Ok(());
        }
        let mut stmt = self
            .conn()
            .prepare_cached(
                "SELECT b.id, b.columns, o.stream_id FROM blocks b JOIN objects o ON o.id = b.object_id
                 WHERE b.object_id = ?1 AND b.first_seq <= ?2
                 ORDER BY b.first_seq DESC",
            )
            .map_err(|e| self.err(e))?;
        let mut rows = stmt
            .query(params![object, bound])
            .map_err(|e| self.err(e))?;
        // Bounded by the object's blocks.
        while let Some(row) = rows.next().map_err(|e| self.err(e))? {
            let (id, stream): (i64, StreamId) =
                (|| Ok::<_, rusqlite::Error>((row.get(0)?, row.get(2)?)))()
                    .map_err(|e| self.err(e))?;
            let frame = match row.get_ref(1).map_err(|e| self.err(e))? {
                rusqlite::types::ValueRef::Blob(b) => b,
                _ => &[],
            };
            let cols = self.block_columns(id, frame)?;
            if in_block(&cols, stream, id)? {
                break;
            }
        }
        Ok(())
    }

    /// The ids of `object`'s blocks, when this connection holds a snapshot
    /// ([`Journal::snapshot_held`]): those of the last object asked are kept
    /// for it, as a diff walks each object's versions twice, once for each
    /// end (one lookup in `blocks_object` and two rows fewer each time;
    /// docs/journal.md, "Where the time of an answer goes"). `None` outside a
    /// snapshot, where blocks may change from one statement to the next.
    fn object_blocks(&self, object: i64) -> Result<Option<Arc<ObjectBlocks>>, JournalError> {
        if !self.snapshot_held() {
            return Ok(None);
        }
        let held = self.cold.borrow().blocks.clone();
        if let Some(held) = held.filter(|b| b.object == object) {
            return Ok(Some(held));
        }
        // Its stream from its row when that was just read (in this
        // snapshot): the index alone gives the blocks.
        let known = self.cold.borrow().object.filter(|(id, _)| *id == object);
        let mut stream = known.map(|(_, stream)| stream).unwrap_or_default();
        let sql = match known {
            Some(_) => "SELECT id, first_seq FROM blocks WHERE object_id = ?1 ORDER BY first_seq",
            None => {
                "SELECT b.id, b.first_seq, o.stream_id FROM blocks b JOIN objects o ON o.id = b.object_id
                 WHERE b.object_id = ?1 ORDER BY b.first_seq"
            }
        };
        let mut stmt = self.conn().prepare_cached(sql).map_err(|e| self.err(e))?;
        let ids = stmt
            .query_map(params![object], |r| {
                if known.is_none() {
                    stream = r.get(2)?;
                }
                Ok((r.get(0)?, r.get(1)?))
            })
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<(i64, i64)>>>())
            .map_err(|e| self.err(e))?;
        let blocks = Arc::new(ObjectBlocks {
            object,
            stream,
            ids,
        });
        self.cold.borrow_mut().blocks = Some(blocks.clone());
        Ok(Some(blocks))
    }

    /// A block's columns, by its id.
    fn block_columns_of(&self, id: i64) -> Result<Arc<ColdColumns>, JournalError> {
        let held = self.cold.borrow().columns.clone();
        if let Some((_, cols)) = held.filter(|(held, _)| *held == id) {
            return Ok(cols);
        }
        let mut stmt = self
            .conn()
            .prepare_cached("SELECT columns FROM blocks WHERE id = ?1")
            .map_err(|e| self.err(e))?;
        let mut rows = stmt.query(params![id]).map_err(|e| self.err(e))?;
        let Some(row) = rows.next().map_err(|e| self.err(e))? else {
            return Err(self.damaged_block(id, block::BlockError::Damaged("the block is gone")));
        };
        let frame = match row.get_ref(0).map_err(|e| self.err(e))? {
            rusqlite::types::ValueRef::Blob(b) => b,
            _ => &[],
        };
        self.block_columns(id, frame)
    }

    /// The last of `object`'s records observed before `at`, by time then
    /// `seq`, as `(watch type, observed_at, seq)`: `rows_last`, the last of
    /// its rows, or one of its blocks' records observed after it.
    fn cold_last_before(
        &self,
        object: i64,
        at: i64,
        rows_last: Option<(Option<i64>, i64, i64)>,
    ) -> Result<Option<(Option<i64>, i64, i64)>, JournalError> {
        let mut stmt = self
            .conn()
            .prepare_cached(
                "SELECT b.id, b.columns, o.stream_id FROM blocks b JOIN objects o ON o.id = b.object_id
                 WHERE b.object_id = ?1 AND b.min_at < ?2 AND b.max_at >= ?3",
            )
            .map_err(|e| self.err(e))?;
        let floor = rows_last.map_or(i64::MIN, |(_, observed_at, _)| observed_at);
        let mut rows = stmt
            .query(params![object, at, floor])
            .map_err(|e| self.err(e))?;
        let mut last = rows_last;
        while let Some(row) = rows.next().map_err(|e| self.err(e))? {
            for v in self.block_versions(row, object)? {
                let key = (v.observed_at, v.seq);
                if v.observed_at < at && last.is_none_or(|(_, a, s)| key > (a, s)) {
                    last = Some((v.watch_type.map(WatchType::code), v.observed_at, v.seq));
                }
            }
        }
        Ok(last)
    }

    /// Object records kept in blocks that a scan of `records` by `seq` from
    /// `from` to `to` meets: every record of the blocks with a record in
    /// that range, in `seq` order. The caller filters them as its scan of
    /// the rows does.
    fn cold_scan(&self, from: i64, to: i64) -> Result<Vec<VersionRow>, JournalError> {
        self.cold_rows(from, to)?
            .into_iter()
            .map(|r| self.cold_version(r))
            .collect()
    }

    /// The records kept in blocks with a `seq` in `(after, end]`, but only
    /// up to the `seq` returned with them when that is less than `end` (at
    /// most `limit` of them): a reader in `seq` order goes on from there. Read a stretch of
    /// [`COLD_PAGE_SEQS`] at a time and kept for the next call (while the
    /// prune generation holds), so a reading of the whole journal in pages
    /// decodes each block a few times, not once a page.
    pub(super) fn cold_rows_after(
        &self,
        (after, end): (i64, i64),
        limit: usize,
    ) -> Result<(i64, Vec<ColdRow>), JournalError> {
        let generation = self.snapshot_mark()?.generation;
        let from = after.saturating_add(1);
        let held = {
            let cache = self.cold.borrow();
            cache
                .page
                .as_ref()
                .is_some_and(|p| p.generation == generation && p.from <= from && p.to >= from)
        };
        if !held {
            // A stretch from the first block's records after `after` on (a
            // `seq` space with holes, after retention, is not walked through
            // a stretch at a time), or up to the rows' page's end when that
            // is further.
            let lowest: Option<i64> = self
                .conn()
                .prepare_cached("SELECT min(first_seq) FROM blocks WHERE last_seq >= ?1")
                .and_then(|mut s| s.query_row(params![from], |r| r.get(0)))
                .map_err(|e| self.err(e))?;
            let Some(lowest) = lowest else {
                // No record after `after` is in a block.
                return Ok((end, Vec::new()));
            };
            let stretch = from.max(lowest).saturating_add(COLD_PAGE_SEQS);
            let to = if end == i64::MAX {
                stretch
            } else {
                end.max(stretch)
            };
            let rows: Vec<ColdRow> = self
                .cold_rows(from, to)?
                .into_iter()
                .filter(|r| r.record.seq >= from && r.record.seq <= to)
                .collect();
            self.cold.borrow_mut().page = Some(ColdPage {
                generation,
                from,
                to,
                rows,
            });
        }
        let cache = self.cold.borrow();
        let page = cache.page.as_ref().expect("a page held or read above");
        let mut end = end.min(page.to);
        let first = page.rows.partition_point(|r| r.record.seq <= after);
        let mut last = page.rows.partition_point(|r| r.record.seq <= end);
        // No more than a page of them.
        if last - first > limit.max(1) {
            last = first + limit.max(1);
            end = page.rows[last - 1].record.seq;
        }
        Ok((end, page.rows[first..last].to_vec()))
    }

    /// [`Journal::cold_scan`]'s records as stored.
    pub(super) fn cold_rows(&self, from: i64, to: i64) -> Result<Vec<ColdRow>, JournalError> {
        let mut stmt = self
            .conn()
            .prepare_cached(BLOCKS_OF_SEQS_SQL)
            .map_err(|e| self.err(e))?;
        let mut rows = stmt.query(params![from, to]).map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(|e| self.err(e))? {
            let object: i64 = row.get(3).map_err(|e| self.err(e))?;
            out.extend(self.block_rows(row, object)?);
        }
        out.sort_unstable_by_key(|r| r.record.seq);
        Ok(out)
    }

    /// The versions of a block, from its row `(id, columns, stream)`.
    fn block_versions(
        &self,
        row: &rusqlite::Row<'_>,
        object: i64,
    ) -> Result<Vec<VersionRow>, JournalError> {
        self.block_rows(row, object)?
            .into_iter()
            .map(|r| self.cold_version(r))
            .collect()
    }

    /// The records of a block as stored, from its row `(id, columns,
    /// stream)`.
    fn block_rows(
        &self,
        row: &rusqlite::Row<'_>,
        object: i64,
    ) -> Result<Vec<ColdRow>, JournalError> {
        let (id, stream): (i64, StreamId) =
            (|| Ok::<_, rusqlite::Error>((row.get(0)?, row.get(2)?)))().map_err(|e| self.err(e))?;
        let frame = match row.get_ref(1).map_err(|e| self.err(e))? {
            rusqlite::types::ValueRef::Blob(b) => b,
            _ => &[],
        };
        let cols = self.block_columns(id, frame)?;
        Ok(cols
            .records
            .iter()
            .cloned()
            .zip(cols.ordinals.iter().copied())
            .map(|(r, ordinal)| ColdRow {
                stream,
                object,
                block: id,
                body: ordinal.map(|o| block::cold_body_id(id, o)),
                record: r.with_body(None),
            })
            .collect())
    }

    /// A record kept in a block as a version.
    fn cold_version(&self, r: ColdRow) -> Result<VersionRow, JournalError> {
        let body = r.body.ok_or_else(|| {
            self.damaged_block(
                r.block,
                block::BlockError::Damaged("a version without a body"),
            )
        })?;
        let c = r.record;
        let watch_type = c.watch_type.and_then(WatchType::from_code);
        Ok(VersionRow {
            seq: c.seq,
            stream: r.stream,
            object: r.object,
            kind: c.kind,
            observed_at: c.observed_at,
            watch_type,
            resource_version: c.resource_version.map(Rv::into_text).unwrap_or_default(),
            body,
            list_token: (c.kind == kind::BASELINE_ITEM).then_some(c.aux).flatten(),
            mark: Mark::of(c.kind, watch_type, c.aux),
        })
    }

    /// A block's columns decoded from their frame, with each record's body
    /// ordinal and the bodies' places; the last block's are kept, as a
    /// reader asks about one object's block several times in a row (its
    /// version at a time, then that version's body).
    pub(super) fn block_columns(
        &self,
        id: i64,
        frame: &[u8],
    ) -> Result<Arc<ColdColumns>, JournalError> {
        if let Some((held, cols)) = &self.cold.borrow().columns
            && *held == id
        {
            return Ok(cols.clone());
        }
        let cols = self.decoded_columns(id, frame)?;
        self.cold.borrow_mut().columns = Some((id, cols.clone()));
        Ok(cols)
    }

    /// Block `id`'s columns decoded from their `frame`, with each record's
    /// body ordinal and the bodies' places.
    fn decoded_columns(&self, id: i64, frame: &[u8]) -> Result<Arc<ColdColumns>, JournalError> {
        let decoded = block::columns(&mut self.cold.borrow_mut().codec, frame)
            .map_err(|e| self.damaged_block(id, e))?;
        let (ordinals, places) = block::ordinals(&decoded.records);
        Ok(Arc::new(ColdColumns {
            records: decoded.records,
            raw_len: decoded.raw_len,
            ordinals,
            places,
        }))
    }

    /// Keeps a block's columns, its bodies and its object's row another
    /// reader read ([`Journal::visit_window`]), as if this one had just read
    /// them: the next reading of that block's records or bodies here reads
    /// and decodes nothing, and finding the object's blocks needs no look at
    /// its row. Whether the block is read at all is still up to what this
    /// reader finds.
    pub fn hold_block(&self, block: &DecodedBlock) {
        let (bodies, columns) = &block.block;
        self.cold.borrow_mut().columns = Some((bodies.id, columns.clone()));
        *self.last_block.borrow_mut() = Some(block.block.clone());
        self.remember_object(&block.object);
    }

    fn damaged_block(&self, id: i64, e: block::BlockError) -> JournalError {
        match e {
            block::BlockError::Codec(source) => JournalError::Codec {
                path: self.path().to_path_buf(),
                source,
            },
            e => JournalError::Corrupt {
                path: self.path().to_path_buf(),
                detail: format!("block {id}: {e}"),
            },
        }
    }

    /// Calls `visit` with the head of every version (event or list item)
    /// of `streams` with a `seq` in `[from, to]`, in journal order: what a
    /// count of changes needs of them, read in one pass along the records
    /// rather than object by object through the index (a week of a busy
    /// namespace is a million rows, each a seek of its own that way),
    /// without their resourceVersions.
    pub fn visit_version_heads_from(
        &self,
        streams: &IdSet<StreamId>,
        (from, to): (i64, i64),
        keys: &mut RvKeys,
        below: Option<&mut HeadsBelow>,
        mut visit: impl FnMut(&VersionHead),
    ) -> Result<(), JournalError> {
        let mut stmt = self
            .conn()
            .prepare_cached(&format!(
                "SELECT seq, stream_id, object_id, kind, observed_at, watch_type, aux,
                        resource_version, body_id
                 FROM records
                 WHERE seq >= ?1 AND seq <= ?2 AND kind IN ({}, {}) ORDER BY seq",
                kind::EVENT,
                kind::BASELINE_ITEM
            ))
            .map_err(|e| self.err(e))?;
        // Records kept in blocks come in `seq` order among the rows.
        let mut cold = self
            .cold_heads(streams, (from, to), keys, below)?
            .into_iter()
            .peekable();
        let mut rows = stmt.query(params![from, to]).map_err(|e| self.err(e))?;
        while let Some(row) = rows.next().map_err(|e| self.err(e))? {
            let seq: i64 = row.get(0).map_err(|e| self.err(e))?;
            // Bounded by the blocks' records.
            while let Some(v) = cold.next_if(|v| v.seq < seq) {
                visit(&v);
            }
            let stream: StreamId = row.get(1).map_err(|e| self.err(e))?;
            let object: Option<i64> = row.get(2).map_err(|e| self.err(e))?;
            let Some(object) = object.filter(|_| streams.contains(&stream)) else {
                continue;
            };
            let head = (|| {
                let kind_: i64 = row.get(3)?;
                let watch_type = row.get::<_, Option<i64>>(5)?.and_then(WatchType::from_code);
                let aux: Option<i64> = row.get(6)?;
                let rv = match row.get_ref(7)? {
                    rusqlite::types::ValueRef::Text(t) => keys.key(t),
                    _ => keys.key(b""),
                };
                Ok(VersionHead {
                    seq: row.get(0)?,
                    object,
                    kind: kind_,
                    observed_at: row.get(4)?,
                    watch_type,
                    mark: Mark::of(kind_, watch_type, aux),
                    rv,
                    list_token: (kind_ == kind::BASELINE_ITEM).then_some(aux).flatten(),
                    body: row.get(8)?,
                })
            })()
            .map_err(|e: rusqlite::Error| self.err(e))?;
            visit(&head);
        }
        for v in cold {
            visit(&v);
        }
        Ok(())
    }

    /// [`Journal::visit_version_heads_from`]'s records kept in blocks: the
    /// heads of those of `streams` with a `seq` in `[from, to]`, in `seq`
    /// order. Made from the blocks' columns as they are, without a version
    /// of each (a week's window holds a million, and its blocks' other
    /// records are skipped); blocks of other streams are not decoded. With
    /// `below`, the heads of the records before `from` of the blocks read
    /// go there ([`HeadsBelow`]).
    fn cold_heads(
        &self,
        streams: &IdSet<StreamId>,
        (from, to): (i64, i64),
        keys: &mut RvKeys,
        mut below: Option<&mut HeadsBelow>,
    ) -> Result<Vec<VersionHead>, JournalError> {
        let mut stmt = self
            .conn()
            .prepare_cached(BLOCKS_OF_SEQS_SQL)
            .map_err(|e| self.err(e))?;
        let mut rows = stmt.query(params![from, to]).map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(|e| self.err(e))? {
            let (id, stream, object, frame) = self.block_of_stream(row)?;
            if !streams.contains(&stream) {
                continue;
            }
            let cols = self.block_columns(id, frame)?;
            for (r, ordinal) in cols.records.iter().zip(&cols.ordinals) {
                if r.seq > to || (r.seq < from && below.is_none()) {
                    continue;
                }
                let head = self.cold_head(r, object, id, *ordinal, keys)?;
                match below.as_deref_mut() {
                    Some(below) if r.seq < from => below.push(head),
                    _ => out.push(head),
                }
            }
        }
        out.sort_unstable_by_key(|h| h.seq);
        Ok(out)
    }

    /// The objects of `stream` (of namespace `namespace` only, when given)
    /// that `wanted` keeps, whose last version before a list is there and is
    /// not a deletion: every such object the stream held just before the
    /// list, and perhaps some it did not (one an earlier list found gone, or
    /// only a failed list held). The list is the stream's own, that began at
    /// a `seq` ([`Before::Seq`]), or another stream's, observed at a time
    /// ([`Before::Time`]): the records of two streams are in time order only
    /// within each (an imported lane's come after the journal's own, whatever
    /// their times). One seek down the records of each object kept (by time,
    /// a walk of them): a caller that knows some objects already (those a
    /// window touched) leaves them out, so a window that touched them all
    /// costs a scan of the stream's object ids.
    pub fn objects_maybe_present_before(
        &self,
        stream: StreamId,
        namespace: Option<&str>,
        before: Before,
        wanted: &dyn Fn(i64) -> bool,
    ) -> Result<Vec<i64>, JournalError> {
        let conn = self.conn();
        let err = |e| self.err(e);
        let ids: Vec<i64> = conn
            .prepare_cached(
                "SELECT id FROM objects WHERE stream_id = ?1 AND (?2 IS NULL OR namespace = ?2)",
            )
            .and_then(|mut s| {
                s.query_map(params![stream, namespace], |r| r.get(0))?
                    .collect::<rusqlite::Result<Vec<i64>>>()
            })
            .map_err(err)?;
        let (sql, bound) = match before {
            Before::Seq(seq) => (
                "SELECT watch_type, observed_at, seq FROM records WHERE object_id = ?1 AND seq < ?2
                 ORDER BY seq DESC LIMIT 1",
                seq,
            ),
            Before::Time(at) => (
                "SELECT watch_type, observed_at, seq FROM records
                 WHERE object_id = ?1 AND observed_at < ?2
                 ORDER BY observed_at DESC, seq DESC LIMIT 1",
                at,
            ),
        };
        let mut last = conn.prepare_cached(sql).map_err(err)?;
        let mut out = Vec::new();
        // Bounded by the stream's objects.
        for id in ids.into_iter().filter(|id| wanted(*id)) {
            let row: Option<(Option<i64>, i64, i64)> = last
                .query_row(params![id, bound], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })
                .optional()
                .map_err(err)?;
            let row = match (before, row) {
                // Blocks hold records older than the rows.
                (Before::Seq(_), Some(row)) => Some(row),
                (Before::Seq(seq), None) => {
                    let mut last = None;
                    self.cold_versions_down(id, seq - 1, |v| {
                        last = Some((v.watch_type.map(WatchType::code), v.observed_at, v.seq));
                        std::ops::ControlFlow::Break(())
                    })?;
                    last
                }
                (Before::Time(at), row) => self.cold_last_before(id, at, row)?,
            };
            if let Some((watch_type, _, _)) = row
                && watch_type.and_then(WatchType::from_code) != Some(WatchType::Deleted)
            {
                out.push(id);
            }
        }
        Ok(out)
    }

    /// [`Journal::object_version_at`] and the versions after it up to
    /// `seq_bound`, oldest first, in one walk down the object's records: the
    /// versions of `object` from that one (all of them up to `seq_bound` when
    /// there is none), and whether the first is it.
    pub fn object_versions_down_to(
        &self,
        object: i64,
        at: i64,
        seq_bound: i64,
        lists: &IdSet<i64>,
    ) -> Result<(Vec<VersionRow>, bool), JournalError> {
        let mut stmt = self
            .conn()
            .prepare_cached(&OBJECT_VERSIONS_DOWN)
            .map_err(|e| self.err(e))?;
        let mut rows = stmt
            .query(params![object, seq_bound])
            .map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        let mut found = false;
        let is_it =
            |v: &VersionRow| v.observed_at <= at && v.list_token.is_none_or(|t| lists.contains(&t));
        while let Some(row) = rows.next().map_err(|e| self.err(e))? {
            let v = version(row).map_err(|e| self.err(e))?;
            found = is_it(&v);
            out.push(v);
            if found {
                break;
            }
        }
        if !found {
            self.cold_versions_down(object, seq_bound, |v| {
                found = is_it(&v);
                out.push(v);
                stop_if(found)
            })?;
        }
        out.reverse();
        Ok((out, found))
    }

    /// [`Journal::object_versions_down_to`]'s heads, in `seq` order, and
    /// whether the first is the version observed at or before `at`; those
    /// kept in blocks made from their columns, without a version of each.
    /// `known`: the heads [`HeadsBelow`] kept of `object`'s block that
    /// begins at or before `seq_bound` and ends after it, all of its records
    /// up to `seq_bound` (or from one the walk stops at): that block is not
    /// read again.
    pub fn object_heads_down_to(
        &self,
        object: i64,
        at: i64,
        seq_bound: i64,
        lists: &IdSet<i64>,
        known: &[VersionHead],
        keys: &mut RvKeys,
    ) -> Result<(Vec<VersionHead>, bool), JournalError> {
        let is_it = |observed_at: i64, list_token: Option<i64>| {
            observed_at <= at && list_token.is_none_or(|t| lists.contains(&t))
        };
        let mut out = Vec::new();
        let mut found = false;
        let mut stmt = self
            .conn()
            .prepare_cached(&OBJECT_VERSIONS_DOWN)
            .map_err(|e| self.err(e))?;
        let mut rows = stmt
            .query(params![object, seq_bound])
            .map_err(|e| self.err(e))?;
        while let Some(row) = rows.next().map_err(|e| self.err(e))? {
            let v = version(row).map_err(|e| self.err(e))?;
            found = is_it(v.observed_at, v.list_token);
            out.push(v.head(keys));
            if found {
                break;
            }
        }
        // Blocks hold an object's records before its rows (as
        // `cold_versions_down` walks them): the known block's, then those
        // before it.
        for h in known.iter().rev() {
            if found {
                break;
            }
            found = is_it(h.observed_at, h.list_token);
            out.push(*h);
        }
        if !found {
            let below = known.first().map_or(seq_bound, |k| k.seq - 1);
            self.cold_heads_down(object, below, keys, |h| {
                found = is_it(h.observed_at, h.list_token);
                out.push(h);
                stop_if(found)
            })?;
        }
        out.reverse();
        // What the truth checker's debug builds hold it to: the walk of
        // versions, which reads every block again.
        #[cfg(debug_assertions)]
        {
            let (versions, read) = self.object_versions_down_to(object, at, seq_bound, lists)?;
            let heads: Vec<VersionHead> = versions.iter().map(|v| v.head(keys)).collect();
            assert_eq!((&out, found), (&heads, read), "a walk down by heads");
        }
        Ok((out, found))
    }

    /// The last version of `object` observed at or before `at`, skipping items
    /// of lists that never completed (their tokens are not in `lists`).
    pub fn object_version_at(
        &self,
        object: i64,
        at: i64,
        seq_bound: i64,
        lists: &IdSet<i64>,
    ) -> Result<Option<VersionRow>, JournalError> {
        // `seq_bound` ([`super::zones::SeqBounds`]) skips the object's records
        // observed after `at` without reading them.
        if !self.no_object_rows()? {
            let mut stmt = self
                .conn()
                .prepare_cached(&OBJECT_VERSION_AT)
                .map_err(|e| self.err(e))?;
            let mut rows = stmt
                .query(params![object, at, seq_bound])
                .map_err(|e| self.err(e))?;
            while let Some(row) = rows.next().map_err(|e| self.err(e))? {
                let v = version(row).map_err(|e| self.err(e))?;
                match v.list_token {
                    Some(token) if !lists.contains(&token) => continue,
                    _ => return Ok(Some(v)),
                }
            }
        }
        let mut found = None;
        self.cold_versions_down(object, seq_bound, |v| {
            if v.observed_at > at || v.list_token.is_some_and(|t| !lists.contains(&t)) {
                return std::ops::ControlFlow::Continue(());
            }
            found = Some(v);
            std::ops::ControlFlow::Break(())
        })?;
        Ok(found)
    }

    /// [`Journal::object_version_at`] among the records of `object` after
    /// `floor`, and whether every one of those up to it is an event the writer
    /// marked as changing nothing a default diff compares (docs/journal.md,
    /// "Status-only changes"): then it differs from the version at `floor`
    /// only there. `None` when no version after `floor` was observed by `at`.
    pub fn object_version_since(
        &self,
        object: i64,
        at: i64,
        seq_bound: i64,
        lists: &IdSet<i64>,
        floor: i64,
    ) -> Result<Option<(VersionRow, bool)>, JournalError> {
        let mut walk = SinceWalk {
            at,
            lists,
            found: None,
            walked: 0,
            answer: None,
        };
        if !self.no_object_rows()? {
            let mut stmt = self
                .conn()
                .prepare_cached(&OBJECT_VERSION_SINCE)
                .map_err(|e| self.err(e))?;
            let mut rows = stmt
                .query(params![object, seq_bound, floor])
                .map_err(|e| self.err(e))?;
            while let Some(row) = rows.next().map_err(|e| self.err(e))? {
                let v = version(row).map_err(|e| self.err(e))?;
                if walk.step(v).is_break() {
                    return Ok(walk.answer.flatten());
                }
            }
        }
        // The object's older records may be in blocks.
        self.cold_versions_down(object, seq_bound, |v| {
            if v.seq <= floor {
                return std::ops::ControlFlow::Break(());
            }
            walk.step(v)
        })?;
        Ok(match walk.answer {
            Some(answer) => answer,
            None => walk.found.map(|v| (v, true)),
        })
    }

    /// Whether `records` holds no object record, in the snapshot this
    /// connection holds: then an object's versions are all in its blocks, and
    /// a walk down its rows is not begun (two seeks an object for a diff of a
    /// journal a stop folded). Outside a snapshot, where a recorder may write
    /// rows from one statement to the next, `false`.
    pub(super) fn no_object_rows(&self) -> Result<bool, JournalError> {
        if !self.snapshot_held() {
            return Ok(false);
        }
        if let Some(known) = self.cold.borrow().no_rows {
            return Ok(known);
        }
        let none: bool = self
            .conn()
            .query_row(
                "SELECT NOT EXISTS (SELECT 1 FROM records WHERE object_id IS NOT NULL)",
                [],
                |r| r.get(0),
            )
            .map_err(|e| self.err(e))?;
        self.cold.borrow_mut().no_rows = Some(none);
        Ok(none)
    }

    /// What [`Journal::object_version_at`] needs to skip later records: see
    /// docs/journal.md, "Zones".
    pub fn seq_bounds(&self) -> Result<super::zones::SeqBounds, JournalError> {
        super::zones::bounds(self.conn()).map_err(|e| self.err(e))
    }

    /// Objects of `streams` with a version observed in `(after, until]`.
    pub fn touched_objects(
        &self,
        streams: &IdSet<StreamId>,
        after: i64,
        until: i64,
    ) -> Result<HashSet<i64>, JournalError> {
        let mut out = HashSet::new();
        self.visit_touched(streams, (after, until), i64::MAX, |object| {
            out.insert(object);
        })?;
        Ok(out)
    }

    /// [`Journal::touched_objects`] among the records before `below` (its
    /// `seq`): the rest of the window's, for a reader that reads the records
    /// from `below` on by itself.
    pub fn touched_objects_before(
        &self,
        streams: &IdSet<StreamId>,
        after: i64,
        until: i64,
        below: i64,
    ) -> Result<IdSet<i64>, JournalError> {
        let mut out = IdSet::default();
        self.visit_touched(streams, (after, until), below, |object| {
            out.insert(object);
        })?;
        Ok(out)
    }

    /// Calls `visit(object)` for each object record of `streams` observed in
    /// `(after, until]` with a `seq` below `below`.
    fn visit_touched(
        &self,
        streams: &IdSet<StreamId>,
        (after, until): (i64, i64),
        below: i64,
        mut visit: impl FnMut(i64),
    ) -> Result<(), JournalError> {
        let mut stmt = self
            .conn()
            .prepare_cached(
                // The zones whose times meet the window and which begin
                // before `below`, then their records before it
                // (docs/journal.md, "Zones").
                "SELECT r.stream_id, r.object_id FROM zones z JOIN records r
                    ON r.seq BETWEEN z.first_seq AND min(z.last_seq, ?3 - 1)
                 WHERE z.max_at > ?1 AND z.min_at <= ?2 AND z.first_seq < ?3
                   AND r.observed_at > ?1 AND r.observed_at <= ?2 AND r.object_id IS NOT NULL",
            )
            .map_err(|e| self.err(e))?;
        let mut rows = stmt
            .query(params![after, until, below])
            .map_err(|e| self.err(e))?;
        while let Some(row) = rows.next().map_err(|e| self.err(e))? {
            let stream: StreamId = row.get(0).map_err(|e| self.err(e))?;
            if streams.contains(&stream) {
                visit(row.get(1).map_err(|e| self.err(e))?);
            }
        }
        self.cold_touched(streams, (after, until), below, &mut visit)
    }

    /// [`Journal::visit_touched`]'s records kept in blocks: `visit(object)`
    /// once for each object of `streams` one of whose blocks holds a record
    /// observed in `(after, until]` with a `seq` below `below`. A block
    /// whose whole span is in the window and whose first record is below
    /// `below`, or whose records are all below `below` and one end of whose
    /// span is in the window, says so without being decoded; an object
    /// found is not looked for in its other blocks.
    fn cold_touched(
        &self,
        streams: &IdSet<StreamId>,
        (after, until): (i64, i64),
        below: i64,
        visit: &mut impl FnMut(i64),
    ) -> Result<(), JournalError> {
        let mut stmt = self
            .conn()
            .prepare_cached(
                "SELECT b.id, o.stream_id, b.object_id, b.min_at, b.max_at, b.last_seq
                 FROM blocks b JOIN objects o ON o.id = b.object_id
                 WHERE b.max_at > ?1 AND b.min_at <= ?2 AND b.first_seq < ?3",
            )
            .map_err(|e| self.err(e))?;
        let mut rows = stmt
            .query(params![after, until, below])
            .map_err(|e| self.err(e))?;
        let mut found: IdSet<i64> = IdSet::default();
        // Blocks only partly in the window, looked into once the others
        // have named their objects.
        let mut partly: Vec<(i64, i64)> = Vec::new();
        while let Some(row) = rows.next().map_err(|e| self.err(e))? {
            let get = |i| row.get::<_, i64>(i).map_err(|e| self.err(e));
            let (id, stream, object) = (get(0)?, get(1)?, get(2)?);
            let (min_at, max_at, last_seq) = (get(3)?, get(4)?, get(5)?);
            if !streams.contains(&stream) || found.contains(&object) {
                continue;
            }
            let in_window = |at: i64| at > after && at <= until;
            // Wholly in the window with its first record below `below`; or
            // wholly below `below` with its first or last record in the
            // window (observed at its span's either end).
            if (min_at > after && max_at <= until)
                || (last_seq < below && (in_window(min_at) || in_window(max_at)))
            {
                found.insert(object);
                visit(object);
            } else {
                partly.push((id, object));
            }
        }
        drop(rows);
        for (id, object) in partly {
            if found.contains(&object) {
                continue;
            }
            let cols = self.block_columns_of(id)?;
            if cols
                .records
                .iter()
                .any(|r| r.observed_at > after && r.observed_at <= until && r.seq < below)
            {
                found.insert(object);
                visit(object);
            }
        }
        Ok(())
    }

    /// Calls `visit` for each object record of `streams` in the zones and
    /// blocks whose times meet `(after, until]`, observed in the window or
    /// not, until it returns false: the blocks' records first, block by
    /// block ([`Journal::cold_window`]), then the rows zone by zone, each
    /// zone's in `seq` order. So each object's records come in `seq` order
    /// when the zones are [`super::zones::orderly`] and no clock stepped
    /// back; the order among objects is not `seq` order. A record kept in a
    /// block comes with the block's columns ([`Journal::hold_block`]).
    pub fn visit_window<E: From<JournalError>>(
        &self,
        streams: &IdSet<StreamId>,
        after: i64,
        until: i64,
        mut visit: impl FnMut(WindowRecord, Option<&DecodedBlock>) -> Result<bool, E>,
    ) -> Result<(), E> {
        let mut stmt = self
            .conn()
            .prepare_cached(&format!(
                // CROSS JOIN keeps the zones outside, so records come zone by
                // zone, each zone's in seq order (docs/journal.md, "Zones").
                "SELECT r.seq, r.stream_id, r.object_id, r.observed_at,
                        r.kind = {} AND r.watch_type IS {} AND r.aux IS 1
                 FROM zones z CROSS JOIN records r
                   ON r.seq BETWEEN z.first_seq AND z.last_seq
                 WHERE z.max_at > ?1 AND z.min_at <= ?2 AND r.object_id IS NOT NULL
                 ORDER BY z.first_seq, r.seq",
                kind::EVENT,
                WatchType::Modified.code()
            ))
            .map_err(|e| self.err(e))?;
        // The records of the blocks whose times meet the window, observed in
        // it or not, come first, block by block: an object's blocks hold its
        // oldest records, so each object's records still come in `seq` order
        // (but for a clock stepped back), and none waits for every block to
        // be read and sorted (W-wide's 20,000 blocks held a diff's
        // candidates back for a quarter of its time that way).
        if !self.cold_window(streams, after, until, &mut visit)? {
            return Ok(());
        }
        let mut rows = stmt.query(params![after, until]).map_err(|e| self.err(e))?;
        while let Some(row) = rows.next().map_err(|e| self.err(e))? {
            let record = (|| {
                Ok::<_, rusqlite::Error>(WindowRecord {
                    seq: row.get(0)?,
                    stream: row.get(1)?,
                    object: row.get(2)?,
                    observed_at: row.get(3)?,
                    status_only: row.get(4)?,
                })
            })()
            .map_err(|e| self.err(e))?;
            if streams.contains(&record.stream) && !visit(record, None)? {
                return Ok(());
            }
        }
        Ok(())
    }

    /// [`Journal::visit_window`]'s records kept in blocks: those of each
    /// block of `streams` whose times meet `(after, until]`, block by block
    /// in the order of their times (by the index on them: a window's cost
    /// grows with the window, not the journal), each block's in `seq`
    /// order; false once `visit` is. An object's blocks come in `seq` order
    /// too unless its records' times go back somewhere (a clock stepped
    /// back), which a caller must allow for.
    fn cold_window<E: From<JournalError>>(
        &self,
        streams: &IdSet<StreamId>,
        after: i64,
        until: i64,
        visit: &mut impl FnMut(WindowRecord, Option<&DecodedBlock>) -> Result<bool, E>,
    ) -> Result<bool, E> {
        let mut stmt = self
            .conn()
            .prepare_cached(
                "SELECT b.id, b.columns, o.stream_id, b.object_id, o.namespace, o.name,
                        b.bodies, b.dict_id
                 FROM blocks b JOIN objects o ON o.id = b.object_id
                 WHERE b.max_at > ?1 AND b.min_at <= ?2",
            )
            .map_err(|e| self.err(e))?;
        let mut rows = stmt.query(params![after, until]).map_err(|e| self.err(e))?;
        while let Some(row) = rows.next().map_err(|e| self.err(e))? {
            let (id, stream, object, frame) = self.block_of_stream(row)?;
            if !streams.contains(&stream) {
                continue;
            }
            // Decoded whole, as reading the object's versions needs them,
            // and with the object's row and the block's bodies: the reader
            // of those is handed them all.
            let columns = self.decoded_columns(id, frame)?;
            let (namespace, name, bodies, dict) = (|| {
                Ok::<_, rusqlite::Error>((
                    row.get(4)?,
                    row.get(5)?,
                    row.get(6)?,
                    row.get::<_, Option<i64>>(7)?,
                ))
            })()
            .map_err(|e| self.err(e))?;
            let object_row = ObjectRow {
                id: object,
                stream,
                namespace,
                name,
            };
            let held = DecodedBlock {
                block: self.held_block(id, columns, bodies, dict)?,
                object: Arc::new(object_row),
            };
            let (_, columns) = &held.block;
            for c in &columns.records {
                let watch_type = c.watch_type.and_then(WatchType::from_code);
                let r = WindowRecord {
                    seq: c.seq,
                    stream,
                    object,
                    observed_at: c.observed_at,
                    status_only: Mark::of(c.kind, watch_type, c.aux) == Some(Mark::StatusOnly),
                };
                if !visit(r, Some(&held))? {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// Every zone as `(first_seq, last_seq, min_at, max_at)`.
    pub fn zone_list(&self) -> Result<Vec<(i64, i64, i64, i64)>, JournalError> {
        super::zones::all(self.conn()).map_err(|e| self.err(e))
    }

    /// [`super::zones::orderly_in`] of this journal.
    pub fn zones_orderly(&self, since: i64, until: i64) -> Result<bool, JournalError> {
        super::zones::orderly_in(self.conn(), since, until).map_err(|e| self.err(e))
    }

    /// The version of `object` recorded as `seq`: [`Journal::version`] by
    /// the object's own blocks, where a block holding `seq` is found by one
    /// seek rather than among every block after it.
    pub fn object_version(
        &self,
        object: i64,
        seq: i64,
    ) -> Result<Option<VersionRow>, JournalError> {
        let row = self
            .conn()
            .prepare_cached(&VERSION_AT_SEQ)
            .and_then(|mut s| s.query_row(params![seq], version).optional())
            .map_err(|e| self.err(e))?;
        if let Some(v) = row {
            return Ok((v.object == object).then_some(v));
        }
        let mut found = None;
        self.cold_versions_down(object, seq, |v| {
            if v.seq == seq {
                found = Some(v);
            }
            std::ops::ControlFlow::Break(())
        })?;
        Ok(found)
    }

    /// The version recorded as `seq`.
    pub fn version(&self, seq: i64) -> Result<Option<VersionRow>, JournalError> {
        let row = self
            .conn()
            .prepare_cached(&VERSION_AT_SEQ)
            .and_then(|mut s| s.query_row(params![seq], version).optional())
            .map_err(|e| self.err(e))?;
        if row.is_some() {
            return Ok(row);
        }
        Ok(self.cold_scan(seq, seq)?.into_iter().find(|v| v.seq == seq))
    }

    pub fn object(&self, id: i64) -> Result<Option<ObjectRow>, JournalError> {
        let row = self
            .conn()
            .prepare_cached("SELECT id, stream_id, namespace, name FROM objects WHERE id = ?1")
            .and_then(|mut s| s.query_row(params![id], object_row).optional())
            .map_err(|e| self.err(e))?;
        if let Some(row) = &row {
            self.remember_object(row);
        }
        Ok(row)
    }

    /// Keeps an object's row read in this snapshot (its id and stream): a
    /// diff reads an object's row, then its blocks, which need its stream
    /// ([`Journal::object_blocks`]). Outside a snapshot nothing is kept.
    fn remember_object(&self, row: &ObjectRow) {
        if self.snapshot_held() {
            self.cold.borrow_mut().object = Some((row.id, row.stream));
        }
    }

    /// Objects called `name` (in `namespace`, when given) in any of `streams`.
    pub fn objects_named(
        &self,
        streams: &[StreamId],
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Vec<ObjectRow>, JournalError> {
        let sql = match namespace {
            Some(_) => OBJECTS_NAMED_IN_SQL,
            None => OBJECTS_NAMED_SQL,
        };
        let mut stmt = self.conn().prepare_cached(sql).map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        for stream in streams {
            let rows: Vec<ObjectRow> = match namespace {
                Some(ns) => stmt.query_map(params![stream, name, ns], object_row),
                None => stmt.query_map(params![stream, name], object_row),
            }
            .and_then(|rows| rows.collect())
            .map_err(|e| self.err(e))?;
            out.extend(rows);
        }
        Ok(out)
    }

    /// The distinct names of the objects of some streams (in one namespace,
    /// or all), sorted.
    pub fn object_names(
        &self,
        streams: &[StreamId],
        namespace: Option<&str>,
    ) -> Result<Vec<String>, JournalError> {
        let mut stmt = self
            .conn()
            .prepare_cached(
                "SELECT DISTINCT name FROM objects
                 WHERE stream_id = ?1 AND (?2 IS NULL OR namespace = ?2)",
            )
            .map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        for stream in streams {
            let rows: Vec<String> = stmt
                .query_map(params![stream, namespace], |r| r.get(0))
                .and_then(|rows| rows.collect())
                .map_err(|e| self.err(e))?;
            out.extend(rows);
        }
        out.sort();
        out.dedup();
        Ok(out)
    }

    /// Objects by id, for the ids given.
    pub fn objects(&self, ids: &HashSet<i64>) -> Result<HashMap<i64, ObjectRow>, JournalError> {
        let mut out = HashMap::with_capacity(ids.len());
        for id in ids {
            if let Some(o) = self.object(*id)? {
                out.insert(*id, o);
            }
        }
        Ok(out)
    }

    /// The object with the most live events among `streams`.
    pub fn busiest_object(&self, streams: &[StreamId]) -> Result<Option<ObjectRow>, JournalError> {
        let mut best: Option<(i64, i64)> = None;
        let mut stmt = self
            .conn()
            .prepare_cached(&format!(
                "SELECT object_id, count(*) FROM records WHERE stream_id = ?1 AND kind = {}
                 GROUP BY object_id",
                kind::EVENT
            ))
            .map_err(|e| self.err(e))?;
        let mut blocks = self
            .conn()
            .prepare_cached(
                "SELECT b.id, b.columns, o.stream_id, b.object_id
                 FROM blocks b JOIN objects o ON o.id = b.object_id WHERE o.stream_id = ?1",
            )
            .map_err(|e| self.err(e))?;
        for stream in streams {
            let mut counts: BTreeMap<i64, i64> = stmt
                .query_map(params![stream], |r| Ok((r.get(0)?, r.get(1)?)))
                .and_then(|rows| rows.collect())
                .map_err(|e| self.err(e))?;
            let mut rows = blocks.query(params![stream]).map_err(|e| self.err(e))?;
            while let Some(row) = rows.next().map_err(|e| self.err(e))? {
                let object: i64 = row.get(3).map_err(|e| self.err(e))?;
                let events = self
                    .block_versions(row, object)?
                    .iter()
                    .filter(|v| v.kind == kind::EVENT)
                    .count();
                if events > 0 {
                    *counts.entry(object).or_default() += events as i64;
                }
            }
            // The most events, the lowest id among equals.
            for (object, n) in counts {
                if best.is_none_or(|(_, m)| n > m) {
                    best = Some((object, n));
                }
            }
        }
        match best {
            Some((object, _)) => self.object(object),
            None => Ok(None),
        }
    }

    /// The resourceVersion a stream was known complete at, at time `at`: the
    /// last checkpoint, baseline or event observed by then.
    pub fn watermark_at(
        &self,
        stream: StreamId,
        at: i64,
    ) -> Result<Option<(i64, String)>, JournalError> {
        let meta: Option<(i64, i64, Option<String>)> = self
            .conn()
            .prepare_cached(&format!(
                "SELECT seq, observed_at, resource_version FROM records
                 WHERE stream_id = ?1 AND kind IN ({}, {}) AND {meta} AND observed_at <= ?2
                 ORDER BY seq DESC LIMIT 1",
                kind::CHECKPOINT,
                kind::BASELINE,
                meta = kind::META
            ))
            .and_then(|mut s| {
                s.query_row(params![stream, at], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })
                .optional()
            })
            .map_err(|e| self.err(e))?;
        Ok(meta.and_then(|(_, t, rv)| rv.map(|rv| (t, rv))))
    }
}

/// A body as stored: compressed bytes, and its keyframe's when it is a delta.
/// Fetched on one thread, decoded on any.
#[derive(Debug, Clone)]
pub struct StoredBody {
    pub id: i64,
    pub raw_len: usize,
    pub data: Vec<u8>,
    /// The keyframe of a delta (shared when two bodies use the same one).
    pub base: Option<Arc<StoredBody>>,
    /// The stream dictionary a keyframe was compressed with.
    pub dict: Option<Arc<DecoderDict>>,
    /// A packed version: its bytes are in this pack (`data` is empty), at
    /// this offset; the pack is compressed against `base`.
    pub pack: Option<(Arc<StoredPack>, usize)>,
    /// A version kept in a block (docs/journal.md, "Cold history in
    /// blocks"): its bytes are at this place of the block's bodies.
    pub cold: Option<(Arc<StoredBlock>, std::ops::Range<usize>)>,
}

/// A block a [`Journal`] read last: its bodies as stored, and their places.
pub(super) type HeldBlock = (Arc<StoredBlock>, Arc<ColdColumns>);

/// A block's bodies as stored, with the dictionary they were compressed
/// with.
#[derive(Debug)]
pub struct StoredBlock {
    pub id: i64,
    pub raw_len: usize,
    pub data: Vec<u8>,
    pub dict: Option<Arc<DecoderDict>>,
}

/// A pack as stored: several versions of one object in one zstd frame.
#[derive(Debug)]
pub struct StoredPack {
    pub id: i64,
    pub raw_len: usize,
    pub data: Vec<u8>,
}

/// Decodes stored bodies, remembering the last keyframe: the two ends of an
/// object's diff are usually deltas against the same one.
#[derive(Default)]
pub struct Decoder {
    codec: Codec,
    last: Option<PreparedKeyframe>,
    /// The last keyframe decoded: a diff reads a keyframe, then a delta on it.
    last_keyframe: Option<(i64, Vec<u8>)>,
    /// The last pack decoded: a timeline reads its versions one after another.
    last_pack: Option<(i64, Vec<u8>)>,
    /// The last block's bodies decoded, likewise.
    last_block: Option<(i64, Vec<u8>)>,
}

impl Decoder {
    /// The exact recorded bytes of `body`.
    pub fn decode(&mut self, body: &StoredBody) -> Result<Vec<u8>, super::codec::CodecError> {
        if let Some((block, place)) = &body.cold {
            if self
                .last_block
                .as_ref()
                .is_none_or(|(id, _)| *id != block.id)
            {
                let all = match &block.dict {
                    Some(d) => self.codec.decode_with_dict(&block.data, block.raw_len, d)?,
                    None => self.codec.decode(&block.data, block.raw_len, None)?,
                };
                self.last_block = Some((block.id, all));
            }
            let (_, all) = self.last_block.as_ref().expect("decoded above");
            return super::codec::slice_of_pack(all, place.start, place.len()).map(<[u8]>::to_vec);
        }
        let Some(base) = &body.base else {
            return self.keyframe(body);
        };
        if self.last.as_ref().is_none_or(|p| p.id != base.id) {
            let base_raw = self.keyframe(base)?;
            self.last = Some(PreparedKeyframe::new(base.id, &base_raw)?);
        }
        let prepared = self.last.as_ref().expect("prepared above");
        let Some((pack, offset)) = &body.pack else {
            return self
                .codec
                .decode_prepared(&body.data, body.raw_len, prepared);
        };
        if self.last_pack.as_ref().is_none_or(|(id, _)| *id != pack.id) {
            let all = self
                .codec
                .decode_prepared(&pack.data, pack.raw_len, prepared)?;
            self.last_pack = Some((pack.id, all));
        }
        let (_, all) = self.last_pack.as_ref().expect("decoded above");
        super::codec::slice_of_pack(all, *offset, body.raw_len).map(<[u8]>::to_vec)
    }
}

impl Decoder {
    /// A keyframe's bytes, decoded once while it is the last one read.
    fn keyframe(&mut self, body: &StoredBody) -> Result<Vec<u8>, super::codec::CodecError> {
        if let Some((id, raw)) = &self.last_keyframe
            && *id == body.id
        {
            return Ok(raw.clone());
        }
        let raw = decode_keyframe(&mut self.codec, body)?;
        self.last_keyframe = Some((body.id, raw.clone()));
        Ok(raw)
    }
}

fn decode_keyframe(
    codec: &mut Codec,
    body: &StoredBody,
) -> Result<Vec<u8>, super::codec::CodecError> {
    match &body.dict {
        None => codec.decode(&body.data, body.raw_len, None),
        Some(d) => codec.decode_with_dict(&body.data, body.raw_len, d),
    }
}

impl Journal {
    /// A body with its keyframe, undecoded; `known` is a keyframe already read
    /// (reused when it is this body's).
    pub fn stored_body(
        &self,
        id: i64,
        known: Option<&Arc<StoredBody>>,
    ) -> Result<StoredBody, JournalError> {
        if let Some((block, ordinal)) = block::cold_body_parts(id) {
            return self.stored_cold_body(id, block, ordinal);
        }
        let row = body_row(self, id)?;
        let base = match row.base {
            None => None,
            Some(b) => match known.filter(|k| k.id == b) {
                Some(k) => Some(k.clone()),
                None => Some(Arc::new(self.stored_body(b, None)?)),
            },
        };
        let dict = self.dict_of(&row)?;
        let pack = match row.pack {
            None => None,
            Some((pack, offset)) => Some((self.stored_pack(pack)?, offset)),
        };
        Ok(StoredBody {
            id,
            raw_len: row.raw_len,
            data: row.data,
            base,
            dict,
            pack,
            cold: None,
        })
    }

    /// Block `id`'s bodies as stored (`data`, compressed with dictionary
    /// `dict`), with the columns that place them: what a reader keeps of the
    /// last block it read.
    fn held_block(
        &self,
        id: i64,
        columns: Arc<ColdColumns>,
        data: Vec<u8>,
        dict: Option<i64>,
    ) -> Result<HeldBlock, JournalError> {
        let bodies = StoredBlock {
            id,
            raw_len: columns.raw_len,
            data,
            dict: dict.map(|d| self.decoder_dict(d)).transpose()?,
        };
        Ok((Arc::new(bodies), columns))
    }

    /// A body kept in a block, undecoded: the block's bodies and the body's
    /// place among them (the block's columns are decoded to find it). The
    /// last block read is kept, as consecutive versions of an object share
    /// it.
    fn stored_cold_body(
        &self,
        id: i64,
        block_id: i64,
        ordinal: usize,
    ) -> Result<StoredBody, JournalError> {
        let held = self
            .last_block
            .borrow()
            .as_ref()
            .filter(|(b, _)| b.id == block_id)
            .cloned();
        let (stored, cols) = match held {
            Some(held) => held,
            None => {
                let (columns, data, dict): (Vec<u8>, Vec<u8>, Option<i64>) = self
                    .conn()
                    .prepare_cached("SELECT columns, bodies, dict_id FROM blocks WHERE id = ?1")
                    .and_then(|mut s| {
                        s.query_row(params![block_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                    })
                    .map_err(|e| self.err(e))?;
                let cols = self.block_columns(block_id, &columns)?;
                let held = self.held_block(block_id, cols, data, dict)?;
                *self.last_block.borrow_mut() = Some(held.clone());
                held
            }
        };
        let place = cols.places.get(ordinal).cloned().ok_or_else(|| {
            self.damaged_block(
                block_id,
                block::BlockError::Damaged("no such body in the block"),
            )
        })?;
        Ok(StoredBody {
            id,
            raw_len: place.len(),
            data: Vec::new(),
            base: None,
            dict: None,
            pack: None,
            cold: Some((stored, place)),
        })
    }

    /// A pack, undecoded; the last one read is kept, as consecutive versions of
    /// an object share it.
    fn stored_pack(&self, id: i64) -> Result<Arc<StoredPack>, JournalError> {
        if let Some(p) = self.last_pack.borrow().as_ref().filter(|p| p.id == id) {
            return Ok(p.clone());
        }
        let (raw_len, data) = pack_row(self, id)?;
        let pack = Arc::new(StoredPack { id, raw_len, data });
        *self.last_pack.borrow_mut() = Some(pack.clone());
        Ok(pack)
    }

    fn dict_of(&self, row: &BodyRow) -> Result<Option<Arc<DecoderDict>>, JournalError> {
        row.dict.map(|d| self.decoder_dict(d)).transpose()
    }
}

/// Reads bodies back, sharing decoded keyframes between the versions that need
/// them (a timeline decodes each keyframe once).
pub struct BodyReader {
    codec: Codec,
    keyframes: KeyframeCache,
    /// The keyframe the last deltas were read against, prepared once it was
    /// used twice in a row (a timeline); one-off reads (a diff touching many
    /// objects once) do not pay for preparing.
    prepared: Option<PreparedKeyframe>,
    last_base: Option<i64>,
    /// The last pack decoded.
    last_pack: Option<(i64, Vec<u8>)>,
    /// The last block decoded: its id, its bodies' places and their JSON.
    last_block: Option<(i64, Places, Vec<u8>)>,
    /// The bytes of JSON and the bodies' places of the blocks read, by id,
    /// at most [`COLD_PLACES`]: a reading in `seq` order (export) meets each
    /// of many objects' blocks again and again, and would decode its columns
    /// each time. A block never changes (its id is never given again).
    cold_places: IdMap<i64, (usize, Places)>,
    /// What a reading in `seq` order keeps of the blocks it read
    /// ([`BodyReader::in_seq_order`]); `None` for any other reading.
    tails: Option<Tails>,
}

/// The places of a block's bodies in their decoded JSON, by ordinal.
type Places = Arc<[std::ops::Range<usize>]>;

/// What a reading of records in `seq` order (export) keeps of the blocks it
/// read a body of. Such a reading meets each of some thousands of objects'
/// blocks once a version, in turn, and decoding a block's whole bodies for
/// each (about 46 versions of 5 KB on the history bench's journal) was 70 %
/// of its reading thread. Once a block is decoded, the bodies after the one
/// read are kept, each as a zstd delta against the one before it (tens of
/// bytes), with the one read: the next read decodes one small delta
/// (docs/journal.md, "`export --format parquet` and `import`").
#[derive(Default)]
struct Tails {
    by_block: IdMap<i64, Tail>,
    /// Bytes the tails hold, at most [`TAIL_BYTES`]: past it, a block
    /// without a tail is read as by any reader.
    bytes: usize,
}

/// The bodies of one block from ordinal `at` on.
struct Tail {
    at: usize,
    /// The body at `at`.
    last: Vec<u8>,
    /// The bodies after it, in order: the length of each, and its delta
    /// against the one before.
    rest: std::collections::VecDeque<(usize, Box<[u8]>)>,
    /// Bytes held: `last` and the deltas.
    bytes: usize,
}

/// The most bytes [`Tails`] hold (JSON and deltas): the history bench's
/// 10,000 objects, a tail each, stay under it. Export's peak resident memory
/// there went from 520-540 MB to 725-755 MB.
const TAIL_BYTES: usize = if cfg!(test) { 64 << 10 } else { 128 << 20 };

impl Tails {
    /// Body `ordinal` of `block` from its tail, if held: `None` when the
    /// block has no tail or the reading went back before it (the caller
    /// then decodes the block). A delta that cannot be decoded (it was made
    /// here) drops the tail: the block is decoded again.
    fn read(&mut self, codec: &mut Codec, block: i64, ordinal: usize) -> Option<Vec<u8>> {
        let tail = self.by_block.get_mut(&block)?;
        let mut failed = ordinal < tail.at;
        while !failed && tail.at < ordinal {
            let Some((len, delta)) = tail.rest.pop_front() else {
                failed = true;
                break;
            };
            match codec.decode(&delta, len, Some(&tail.last)) {
                Ok(next) => {
                    tail.bytes = tail.bytes + next.len() - delta.len() - tail.last.len();
                    self.bytes = self.bytes + next.len() - delta.len() - tail.last.len();
                    tail.last = next;
                    tail.at += 1;
                }
                Err(_) => failed = true,
            }
        }
        if failed {
            self.drop_tail(block);
            return None;
        }
        let body = tail.last.clone();
        // Its last body read: it goes (a record that shares it decodes the
        // block again).
        if tail.rest.is_empty() {
            self.drop_tail(block);
        }
        Some(body)
    }

    fn drop_tail(&mut self, block: i64) {
        if let Some(t) = self.by_block.remove(&block) {
            self.bytes -= t.bytes;
        }
    }

    /// Keeps the bodies of `block` from `ordinal` on, from its decoded
    /// `json` and their `places`, while the tails hold less than
    /// [`TAIL_BYTES`].
    fn keep(
        &mut self,
        codec: &mut Codec,
        block: i64,
        ordinal: usize,
        json: &[u8],
        places: &[std::ops::Range<usize>],
    ) {
        if self.bytes >= TAIL_BYTES || ordinal + 1 >= places.len() {
            return;
        }
        let mut prev = &json[places[ordinal].clone()];
        let mut rest = std::collections::VecDeque::with_capacity(places.len() - ordinal - 1);
        let mut bytes = prev.len();
        for place in &places[ordinal + 1..] {
            let body = &json[place.clone()];
            let Ok(delta) = codec.delta(body, prev) else {
                return;
            };
            bytes += delta.len();
            rest.push_back((body.len(), delta.into_boxed_slice()));
            prev = body;
        }
        self.bytes += bytes;
        let tail = Tail {
            at: ordinal,
            last: json[places[ordinal].clone()].to_vec(),
            rest,
            bytes,
        };
        if let Some(old) = self.by_block.insert(block, tail) {
            self.bytes -= old.bytes;
        }
    }
}

/// The most blocks whose bodies' places a [`BodyReader`] keeps: a block's
/// are 16 bytes a version, so at most about 17 MB. The unit tests' journals
/// have a few blocks: they keep 2, so that their readings forget some.
const COLD_PLACES: usize = if cfg!(test) { 2 } else { 16_384 };

impl Default for BodyReader {
    fn default() -> Self {
        BodyReader::new()
    }
}

impl BodyReader {
    pub fn new() -> BodyReader {
        BodyReader {
            codec: Codec::new(),
            keyframes: KeyframeCache::new(32 << 20),
            prepared: None,
            last_base: None,
            last_pack: None,
            last_block: None,
            cold_places: IdMap::default(),
            tails: None,
        }
    }

    /// A reader for records read in `seq` order, as `export` reads them: it
    /// keeps what follows in a block once it decoded it ([`Tails`]). Any
    /// order reads the same bytes; this one only reads them faster.
    pub fn in_seq_order() -> BodyReader {
        BodyReader {
            tails: Some(Tails::default()),
            ..BodyReader::new()
        }
    }

    /// The exact recorded bytes of body `id`.
    pub fn read(&mut self, journal: &Journal, id: i64) -> Result<Vec<u8>, JournalError> {
        if let Some((block, ordinal)) = block::cold_body_parts(id) {
            return self.read_cold(journal, block, ordinal);
        }
        let row = body_row(journal, id)?;
        let codec_err = |source| JournalError::Codec {
            path: journal.path().to_path_buf(),
            source,
        };
        let Some(base) = row.base else {
            return Ok(self.keyframe(journal, id, &row)?.to_vec());
        };
        if let Some((pack, offset)) = row.pack {
            return self.read_packed(journal, base, pack, offset, row.raw_len);
        }
        let repeated = self.last_base == Some(base);
        self.last_base = Some(base);
        if let Some(p) = self.prepared.as_ref().filter(|p| p.id == base) {
            return self
                .codec
                .decode_prepared(&row.data, row.raw_len, p)
                .map_err(codec_err);
        }
        let base_row = body_row(journal, base)?;
        let base_raw = self.keyframe(journal, base, &base_row)?;
        if repeated {
            let p = PreparedKeyframe::new(base, &base_raw).map_err(codec_err)?;
            let out = self
                .codec
                .decode_prepared(&row.data, row.raw_len, &p)
                .map_err(codec_err);
            self.prepared = Some(p);
            return out;
        }
        self.codec
            .decode(&row.data, row.raw_len, Some(&base_raw))
            .map_err(codec_err)
    }

    /// A version in a block: the block decoded (once for consecutive
    /// reads), then its slice.
    fn read_cold(
        &mut self,
        journal: &Journal,
        id: i64,
        ordinal: usize,
    ) -> Result<Vec<u8>, JournalError> {
        let held = self.last_block.as_ref().is_some_and(|(b, _, _)| *b == id);
        if !held
            && let Some(tails) = self.tails.as_mut()
            && let Some(body) = tails.read(&mut self.codec, id, ordinal)
        {
            return Ok(body);
        }
        if !held {
            let (raw_len, places) = match self.cold_places.get(&id) {
                Some(held) => held.clone(),
                None => {
                    let cols = journal.block_columns_of(id)?;
                    if self.cold_places.len() >= COLD_PLACES {
                        self.cold_places.clear();
                    }
                    let held = (cols.raw_len, Arc::from(cols.places.as_slice()));
                    self.cold_places.insert(id, held.clone());
                    held
                }
            };
            let (bodies, dict): (Vec<u8>, Option<i64>) = journal
                .conn()
                .prepare_cached("SELECT bodies, dict_id FROM blocks WHERE id = ?1")
                .and_then(|mut s| s.query_row(params![id], |r| Ok((r.get(0)?, r.get(1)?))))
                .optional()
                .map_err(|e| journal.err(e))?
                .ok_or_else(|| {
                    journal.damaged_block(id, block::BlockError::Damaged("the block is gone"))
                })?;
            let dict = dict.map(|d| journal.decoder_dict(d)).transpose()?;
            let json = block::bodies(&mut self.codec, &bodies, raw_len, dict.as_deref())
                .map_err(|e| journal.damaged_block(id, e))?;
            self.last_block = Some((id, places, json));
        }
        let (_, places, json) = self.last_block.as_ref().expect("decoded above");
        if !held && let Some(tails) = self.tails.as_mut() {
            tails.keep(&mut self.codec, id, ordinal, json, places);
        }
        places
            .get(ordinal)
            .map(|place| json[place.clone()].to_vec())
            .ok_or_else(|| {
                journal.damaged_block(id, block::BlockError::Damaged("no such body in the block"))
            })
    }

    /// A packed version: the pack decoded (once for consecutive reads), then
    /// its slice.
    fn read_packed(
        &mut self,
        journal: &Journal,
        base: i64,
        pack: i64,
        offset: usize,
        raw_len: usize,
    ) -> Result<Vec<u8>, JournalError> {
        let codec_err = |source| JournalError::Codec {
            path: journal.path().to_path_buf(),
            source,
        };
        if self.last_pack.as_ref().is_none_or(|(id, _)| *id != pack) {
            let base_row = body_row(journal, base)?;
            let base_raw = self.keyframe(journal, base, &base_row)?;
            let (pack_len, data) = pack_row(journal, pack)?;
            let all = self
                .codec
                .decode(&data, pack_len, Some(&base_raw))
                .map_err(codec_err)?;
            self.last_pack = Some((pack, all));
        }
        let (_, all) = self.last_pack.as_ref().expect("decoded above");
        super::codec::slice_of_pack(all, offset, raw_len)
            .map(<[u8]>::to_vec)
            .map_err(codec_err)
    }

    fn keyframe(
        &mut self,
        journal: &Journal,
        id: i64,
        row: &BodyRow,
    ) -> Result<Arc<[u8]>, JournalError> {
        if let Some(raw) = self.keyframes.get(id) {
            return Ok(raw);
        }
        let decoded = match row.dict {
            None => self.codec.decode(&row.data, row.raw_len, None),
            Some(d) => {
                let dict = journal.decoder_dict(d)?;
                self.codec.decode_with_dict(&row.data, row.raw_len, &dict)
            }
        };
        let raw: Arc<[u8]> = decoded
            .map_err(|source| JournalError::Codec {
                path: journal.path().to_path_buf(),
                source,
            })?
            .into();
        self.keyframes.insert(id, raw.clone());
        Ok(raw)
    }
}

fn body_row(journal: &Journal, id: i64) -> Result<BodyRow, JournalError> {
    super::schema::body_row(journal.conn(), id).map_err(|e| journal.err(e))
}

fn pack_row(journal: &Journal, id: i64) -> Result<(usize, Vec<u8>), JournalError> {
    journal
        .conn()
        .prepare_cached("SELECT raw_len, data FROM packs WHERE id = ?1")
        .and_then(|mut s| {
            s.query_row(params![id], |r| {
                Ok((r.get::<_, i64>(0)?.max(0) as usize, r.get(1)?))
            })
        })
        .map_err(|e| journal.err(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resource_versions_key_gives_its_text_back() {
        let mut keys = RvKeys::default();
        let rvs = [
            "0",
            "1",
            "123456789012345678",
            "1234567890123456789",
            "0123",
            "",
            "abc",
            "12a",
            "abc",
        ];
        let got: Vec<RvKey> = rvs.iter().map(|rv| keys.key(rv.as_bytes())).collect();
        for (rv, key) in rvs.iter().zip(&got) {
            assert_eq!(keys.text(*key).as_deref(), Some(*rv));
        }
        // Equal keys exactly for equal texts.
        for (i, a) in got.iter().enumerate() {
            for (j, b) in got.iter().enumerate() {
                assert_eq!(a == b, rvs[i] == rvs[j], "{} {}", rvs[i], rvs[j]);
            }
        }
        assert_eq!(keys.text(1 << 63 | 99), None);
    }

    #[test]
    fn a_stored_resource_versions_key_is_its_texts() {
        let texts = [
            "0",
            "7",
            "999999999999999999",
            "1000000000000000000",
            "9223372036854775807",
            "0123",
            "abc",
            "",
        ];
        let mut stored = RvKeys::default();
        let mut read = RvKeys::default();
        for text in texts {
            let rv = Rv::parse(text);
            assert_eq!(
                stored.key_of(Some(&rv)),
                read.key(text.as_bytes()),
                "{text}"
            );
            assert!(rv.is(text) && rv.clone().into_text() == text, "{text}");
        }
        // A block's integer that no plain text gives (a damaged block's).
        let odd = Rv::Int(-5);
        assert_eq!(stored.key_of(Some(&odd)), read.key(b"-5"));
        assert!(odd.is("-5") && !odd.is("5"));
        assert_eq!(stored.key_of(None), read.key(b""));
    }

    #[test]
    fn an_object_named_in_a_namespace_is_one_seek() {
        let plan = crate::journal::schema::plan_of(OBJECTS_NAMED_IN_SQL);
        assert_eq!(
            plan,
            [
                "SEARCH objects USING COVERING INDEX sqlite_autoindex_objects_1 \
                 (stream_id=? AND namespace=? AND name=?)"
            ]
        );
    }

    /// A block's bodies, one after the other, and their places.
    fn block_of(versions: usize, seed: usize) -> (Vec<u8>, Vec<std::ops::Range<usize>>) {
        let mut json = Vec::new();
        let mut places = Vec::new();
        for v in 0..versions {
            let start = json.len();
            let body = format!(
                r#"{{"metadata":{{"name":"o{seed}","resourceVersion":"{v}"}},"spec":{{"replicas":{}}},"pad":"{}"}}"#,
                v % 7,
                "x".repeat(200 + (v * 37 + seed) % 300)
            );
            json.extend_from_slice(body.as_bytes());
            places.push(start..json.len());
        }
        (json, places)
    }

    /// Reading in `seq` order keeps what follows in a block: forward, the
    /// same body again, skipping some, each read gives the body's bytes; a
    /// reading that goes back, or reaches the block's last body, lets the
    /// tail go; the tails stop growing at their bound, and hold no byte
    /// once all are gone.
    #[test]
    fn a_blocks_tail_gives_its_bodies_read_forward() {
        let mut codec = Codec::new();
        let mut tails = Tails::default();
        let (json, places) = block_of(40, 1);
        let body = |i: usize| json[places[i].clone()].to_vec();
        // Nothing kept yet.
        assert_eq!(tails.read(&mut codec, 1, 0), None);
        tails.keep(&mut codec, 1, 0, &json, &places);
        assert!(tails.bytes > 0);
        for i in [0, 1, 1, 2, 5, 6, 20, 38] {
            assert_eq!(tails.read(&mut codec, 1, i), Some(body(i)), "body {i}");
        }
        // Back: not held, and the tail is gone.
        assert_eq!(tails.read(&mut codec, 1, 37), None);
        assert_eq!(tails.read(&mut codec, 1, 39), None);
        assert_eq!(tails.bytes, 0);
        // Kept from the middle, read to the end: gone after its last.
        tails.keep(&mut codec, 1, 30, &json, &places);
        assert_eq!(tails.read(&mut codec, 1, 29), None, "before the tail");
        tails.keep(&mut codec, 1, 30, &json, &places);
        assert_eq!(tails.read(&mut codec, 1, 39), Some(body(39)));
        assert!(tails.by_block.is_empty());
        assert_eq!(tails.bytes, 0);
        // The last body of a block: nothing follows to keep.
        tails.keep(&mut codec, 1, 39, &json, &places);
        assert!(tails.by_block.is_empty());
        // Many blocks: the tails stop at their bound, and every one kept
        // reads the same.
        let blocks: Vec<_> = (0..200).map(|b| block_of(40, b)).collect();
        for (b, (json, places)) in blocks.iter().enumerate() {
            tails.keep(&mut codec, b as i64, 0, json, places);
        }
        let kept = tails.by_block.len();
        assert!(kept > 0 && kept < blocks.len(), "{kept} kept");
        assert!(tails.bytes >= TAIL_BYTES && tails.bytes < 2 * TAIL_BYTES);
        for (b, (json, places)) in blocks.iter().enumerate() {
            for i in 0..40 {
                let read = tails.read(&mut codec, b as i64, i);
                if b < kept {
                    assert_eq!(read.as_deref(), Some(&json[places[i].clone()]), "{b} {i}");
                } else {
                    assert_eq!(read, None);
                }
            }
        }
        assert!(tails.by_block.is_empty());
        assert_eq!(tails.bytes, 0);
    }
}
