//! Zones: which stretch of `records` holds which observation times.
//!
//! A window query (`diff`, `log --since`) asks which objects have a record
//! observed in `(since, until]`. An index on `observed_at` answers that for
//! about 21 bytes per record. Records are appended in `seq` order as they are
//! observed, so a coarse map does it for almost nothing: a row of `zones`
//! covers up to [`ZONE_RECORDS`] object records, consecutive in `seq`, with
//! the earliest and latest time among them. A query reads the rows of the
//! zones whose times meet the window, and checks each record's own time.
//!
//! A zone only has to contain its records: zones may overlap, and a zone may
//! name `seq`s that are gone (pruned). See docs/journal.md, "Zones".

use rusqlite::{Connection, OptionalExtension, Transaction, params};

/// The most object records in one zone: a window query reads at most this many
/// records outside the window at each of its ends.
pub const ZONE_RECORDS: i64 = 1 << ZONE_BITS;
/// A rebuilt zone holds the records whose `seq`s agree above these low bits.
const ZONE_BITS: u32 = 12;

/// What a debug build takes instead of [`ZONE_BITS`], from 1 to 12: the truth
/// checker's histories write a few hundred records, so only zones of a few
/// records make their windows cross zones (docs/truth.md). A zone's size is
/// the writer's choice alone: readers take the zones' rows as they are.
pub const DEBUG_ZONE_BITS_ENV: &str = "KRPLY_DEBUG_ZONE_BITS";

/// The low bits of `seq` a zone this process writes spans: [`ZONE_BITS`], or
/// in a debug build [`DEBUG_ZONE_BITS_ENV`] when it is set.
fn zone_bits() -> u32 {
    if !cfg!(debug_assertions) {
        return ZONE_BITS;
    }
    static BITS: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *BITS.get_or_init(|| {
        std::env::var(DEBUG_ZONE_BITS_ENV)
            .ok()
            .and_then(|v| v.parse().ok())
            .filter(|b| (1..=ZONE_BITS).contains(b))
            .unwrap_or(ZONE_BITS)
    })
}

/// The most object records in one zone this process writes: [`ZONE_RECORDS`]
/// but in a debug build told otherwise ([`DEBUG_ZONE_BITS_ENV`]).
pub fn zone_records() -> i64 {
    1 << zone_bits()
}

/// The object records one transaction wrote: their `seq` range, count and
/// observation times.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Zone {
    pub first_seq: i64,
    pub last_seq: i64,
    pub records: i64,
    pub min_at: i64,
    pub max_at: i64,
}

impl Zone {
    /// Counts one more object record.
    pub fn add(&mut self, seq: i64, at: i64) {
        if self.records == 0 {
            *self = Zone {
                first_seq: seq,
                last_seq: seq,
                records: 1,
                min_at: at,
                max_at: at,
            };
            return;
        }
        self.first_seq = self.first_seq.min(seq);
        self.last_seq = self.last_seq.max(seq);
        self.records += 1;
        self.min_at = self.min_at.min(at);
        self.max_at = self.max_at.max(at);
    }

    /// This zone grown by `other`: one zone covering both.
    fn merged(self, other: Zone) -> Zone {
        Zone {
            first_seq: self.first_seq.min(other.first_seq),
            last_seq: self.last_seq.max(other.last_seq),
            records: self.records + other.records,
            min_at: self.min_at.min(other.min_at),
            max_at: self.max_at.max(other.max_at),
        }
    }
}

/// What to do with the object records of a transaction, given the journal's
/// last zone: grow it while it stays small and the new records follow it;
/// otherwise start a new zone. A zone holds at most `limit` records
/// ([`zone_records`]) unless one transaction wrote more.
pub fn place(last: Option<Zone>, written: Zone, limit: i64) -> Placement {
    match last {
        Some(last)
            if last.records + written.records <= limit && written.first_seq > last.last_seq =>
        {
            Placement::Grow(last.merged(written))
        }
        _ => Placement::New(written),
    }
}

/// See [`place`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Replace the last zone (same `first_seq`) with this one.
    Grow(Zone),
    New(Zone),
}

/// Records the zone of the object records written in this transaction.
pub fn record(tx: &Transaction<'_>, written: Zone) -> rusqlite::Result<()> {
    if written.records == 0 {
        return Ok(());
    }
    let last = tx
        .prepare_cached(
            "SELECT first_seq, last_seq, records, min_at, max_at FROM zones
             ORDER BY first_seq DESC LIMIT 1",
        )?
        .query_row([], |r| {
            Ok(Zone {
                first_seq: r.get(0)?,
                last_seq: r.get(1)?,
                records: r.get(2)?,
                min_at: r.get(3)?,
                max_at: r.get(4)?,
            })
        })
        .optional()?;
    let (Placement::Grow(z) | Placement::New(z)) = place(last, written, zone_records());
    tx.prepare_cached(
        "INSERT OR REPLACE INTO zones(first_seq, last_seq, records, min_at, max_at)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![
        z.first_seq,
        z.last_seq,
        z.records,
        z.min_at,
        z.max_at
    ])?;
    Ok(())
}

/// Rebuilds every zone from the object records there are (after a prune), in
/// the caller's transaction: one per stretch of [`zone_records`] `seq`s.
pub fn rebuild(conn: &Connection) -> rusqlite::Result<()> {
    let bits = zone_bits();
    conn.execute_batch(&format!(
        "DELETE FROM zones;
         INSERT INTO zones(first_seq, last_seq, records, min_at, max_at)
             SELECT min(seq), max(seq), count(*), min(observed_at), max(observed_at)
             FROM records WHERE object_id IS NOT NULL GROUP BY seq >> {bits};"
    ))
}

/// For a reader: past which `seq` no object record was observed at or before a
/// time. A query for an object's version at `at` need not look at the records
/// after [`SeqBounds::at`]: in a window, the versions inside it.
#[derive(Debug, Clone, Default)]
pub struct SeqBounds {
    /// `(min_at, the largest last_seq of the zones with min_at up to this one)`,
    /// by `min_at`.
    by_time: Vec<(i64, i64)>,
}

impl SeqBounds {
    /// From every zone's `(min_at, last_seq)`. Put in order by `min_at`
    /// alone, and one entry kept for each: zones begun at the same time share
    /// their running highest `last_seq`, so their own order does not matter.
    /// (A recorder's journal folds each object's list item into a block of
    /// its own, so W-wide's 20,000 blocks all begin at one time: ordered by
    /// both, they took a quarter of an empty `diff`'s instructions.)
    pub fn new(mut zones: Vec<(i64, i64)>) -> SeqBounds {
        zones.sort_unstable_by_key(|z| z.0);
        let mut highest = i64::MIN;
        let mut kept = 0;
        for i in 0..zones.len() {
            let (min_at, last_seq) = zones[i];
            highest = highest.max(last_seq);
            if kept > 0 && zones[kept - 1].0 == min_at {
                zones[kept - 1].1 = highest;
            } else {
                zones[kept] = (min_at, highest);
                kept += 1;
            }
        }
        zones.truncate(kept);
        SeqBounds { by_time: zones }
    }

    /// Every object record observed at or before `at` has a `seq` at most this;
    /// `i64::MIN` when there is none.
    pub fn at(&self, at: i64) -> i64 {
        let n = self.by_time.partition_point(|(min_at, _)| *min_at <= at);
        n.checked_sub(1).map_or(i64::MIN, |i| self.by_time[i].1)
    }
}

/// Every zone's `(min_at, last_seq)`, for [`SeqBounds::new`]; a block of
/// records (docs/journal.md, "Cold history in blocks") counts as a zone of
/// its own, as the zones name rows only. The blocks' spans are read from
/// `blocks_time` alone, not from their rows (schema version 13).
pub fn bounds(conn: &Connection) -> rusqlite::Result<SeqBounds> {
    let zones = conn
        .prepare_cached(BOUNDS_SQL)?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    Ok(SeqBounds::new(zones))
}

const BOUNDS_SQL: &str =
    "SELECT min_at, last_seq FROM zones UNION ALL SELECT min_at, last_seq FROM blocks";

/// Whether the zones put every object record outside `(since, until]` on the
/// right side of it: the zones that meet the window do not overlap, the ones
/// before them (in `seq`) end by `since`, and the ones after begin after
/// `until`. Then an object's records in the zones that meet the window, read
/// in `seq` order, hold its version at `since` (or the record before them
/// does) and its version at `until`: what lets `diff` leave status-only
/// changes out without looking up versions (docs/journal.md, "Status-only
/// changes"). `zones` are `(first_seq, last_seq, min_at, max_at)`, in any order.
pub fn orderly(zones: &[(i64, i64, i64, i64)], since: i64, until: i64) -> bool {
    let meets = |z: &&(i64, i64, i64, i64)| z.3 > since && z.2 <= until;
    let mut inside: Vec<(i64, i64)> = zones.iter().filter(meets).map(|z| (z.0, z.1)).collect();
    inside.sort_unstable();
    let (Some(lo), Some(hi)) = (inside.first().map(|z| z.0), inside.last().map(|z| z.1)) else {
        return true;
    };
    inside.windows(2).all(|w| w[0].1 < w[1].0)
        && zones
            .iter()
            .filter(|z| !meets(z))
            .all(|&(first, last, min_at, max_at)| {
                last < lo && max_at <= since || first > hi && min_at > until
            })
}

/// [`orderly`] of the journal's zones and blocks, reading first only those
/// that meet the window (by `blocks_time`, a few thousand rows of a journal
/// of millions): when two of them overlap, as the blocks of a recorder's
/// journal do (each spans its object's history), or when none does (a quiet
/// window), the rest cannot change the answer and is not read. Debug builds
/// check it against [`orderly`] of them all.
pub fn orderly_in(conn: &Connection, since: i64, until: i64) -> rusqlite::Result<bool> {
    let answer = match meeting(conn, since, until)? {
        Meeting::Nothing => true,
        Meeting::Overlapping => false,
        Meeting::Apart => orderly(&all(conn)?, since, until),
    };
    debug_assert_eq!(answer, orderly(&all(conn)?, since, until));
    Ok(answer)
}

/// What the zones and blocks that meet a window are, for [`orderly`].
#[derive(Debug, PartialEq)]
enum Meeting {
    /// None meets it: the window is orderly whatever the others are.
    Nothing,
    /// Two of them overlap in `seq`: it is not.
    Overlapping,
    /// They follow each other in `seq`: it is if the others keep out.
    Apart,
}

/// How many of the zones and blocks that meet a window [`meeting`] looks
/// among first: two of them that overlap answer for all.
const FIRST_MEETING: usize = 256;

/// The zones and blocks that meet `(since, until]`. The first
/// [`FIRST_MEETING`] are looked among first: a recorder's blocks overlap
/// (each spans its object's history), so W-wide's window needs a few of its
/// 20,000 blocks, not all of them read and put in order.
fn meeting(conn: &Connection, since: i64, until: i64) -> rusqlite::Result<Meeting> {
    let overlap = |spans: &mut Vec<(i64, i64)>| {
        spans.sort_unstable();
        spans.windows(2).any(|w| w[0].1 >= w[1].0)
    };
    let mut stmt = conn.prepare_cached(MEETING_SQL)?;
    let mut rows = stmt.query(params![since, until])?;
    let mut meeting = Vec::with_capacity(FIRST_MEETING);
    let mut looked = false;
    while let Some(row) = rows.next()? {
        meeting.push((row.get(0)?, row.get(1)?));
        if !looked && meeting.len() == FIRST_MEETING {
            looked = true;
            if overlap(&mut meeting) {
                return Ok(Meeting::Overlapping);
            }
        }
    }
    Ok(if meeting.is_empty() {
        Meeting::Nothing
    } else if overlap(&mut meeting) {
        Meeting::Overlapping
    } else {
        Meeting::Apart
    })
}

/// The `(first_seq, last_seq)` of the zones and blocks that meet `(?1, ?2]`,
/// as [`orderly`] takes them.
const MEETING_SQL: &str = "SELECT first_seq, last_seq FROM zones WHERE max_at > ?1 AND min_at <= ?2
     UNION ALL SELECT first_seq, last_seq FROM blocks WHERE max_at > ?1 AND min_at <= ?2";

/// Every zone as `(first_seq, last_seq, min_at, max_at)`, for [`orderly`];
/// a block of records counts as a zone of its own, read from `blocks_time`
/// as for [`bounds`].
pub fn all(conn: &Connection) -> rusqlite::Result<Vec<(i64, i64, i64, i64)>> {
    conn.prepare_cached(ALL_SQL)?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
        .collect()
}

const ALL_SQL: &str = "SELECT first_seq, last_seq, min_at, max_at FROM zones
     UNION ALL SELECT first_seq, last_seq, min_at, max_at FROM blocks";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_blocks_that_meet_a_window_are_a_range_of_their_index() {
        let plan = crate::journal::schema::plan_of(MEETING_SQL);
        assert!(
            plan.iter()
                .any(|step| step == "SEARCH blocks USING COVERING INDEX blocks_time (max_at>?)"),
            "{plan:?}"
        );
    }

    #[test]
    fn the_spans_of_blocks_are_read_from_their_index_not_their_rows() {
        // A block's row holds its bodies: reading every row to find the
        // spans would read the whole cold history at every answer.
        for sql in [BOUNDS_SQL, ALL_SQL] {
            let plan = crate::journal::schema::plan_of(sql);
            assert!(
                plan.iter()
                    .any(|step| step == "SCAN blocks USING COVERING INDEX blocks_time"),
                "{sql}: {plan:?}"
            );
        }
    }

    #[test]
    fn zones_are_orderly_when_nothing_outside_the_window_is_among_it() {
        // (first_seq, last_seq, min_at, max_at)
        let zones = [
            (1, 10, 0, 50),
            (11, 20, 60, 90),
            (21, 30, 95, 120),
            (31, 40, 130, 150),
        ];
        assert!(orderly(&zones, 55, 120));
        assert!(orderly(&zones, 0, 1_000));
        assert!(orderly(&zones, 1_000, 2_000), "no zone meets it");
        // The first zone meets the window at its end, the third begins after it.
        assert!(orderly(&zones, 40, 92));
        let stepped = [(1, 10, 0, 50), (11, 20, 60, 90), (21, 30, 10, 20)];
        assert!(
            !orderly(&stepped, 55, 100),
            "older records after the window"
        );
        let imported = [(1, 10, 60, 90), (11, 20, 200, 210), (21, 30, 0, 20)];
        assert!(!orderly(&imported, 100, 300), "an import of older history");
        let overlapping = [(1, 20, 60, 90), (11, 30, 70, 95)];
        assert!(!orderly(&overlapping, 55, 100));
        let between = [(1, 10, 60, 70), (11, 20, 0, 10), (21, 30, 80, 90)];
        assert!(
            !orderly(&between, 55, 100),
            "old records between window zones"
        );
    }

    fn zone(first: i64, last: i64, records: i64, min_at: i64, max_at: i64) -> Zone {
        Zone {
            first_seq: first,
            last_seq: last,
            records,
            min_at,
            max_at,
        }
    }

    #[test]
    fn a_zone_covers_every_record_added() {
        let mut z = Zone::default();
        z.add(10, 500);
        z.add(12, 400);
        z.add(11, 900);
        assert_eq!(z, zone(10, 12, 3, 400, 900));
    }

    #[test]
    fn the_last_zone_grows_until_it_is_full() {
        let last = zone(1, 100, 100, 0, 50);
        assert_eq!(
            place(Some(last), zone(101, 110, 10, 40, 60), ZONE_RECORDS),
            Placement::Grow(zone(1, 110, 110, 0, 60))
        );
        let full = zone(1, 4096, ZONE_RECORDS, 0, 50);
        assert_eq!(
            place(Some(full), zone(4097, 4097, 1, 60, 60), ZONE_RECORDS),
            Placement::New(zone(4097, 4097, 1, 60, 60))
        );
        assert_eq!(
            place(None, zone(5, 6, 2, 1, 2), ZONE_RECORDS),
            Placement::New(zone(5, 6, 2, 1, 2))
        );
    }

    #[test]
    fn records_written_before_the_last_zone_start_their_own() {
        // Another writer's seqs, or a prune's baselines below every record.
        let last = zone(100, 200, 50, 0, 50);
        assert_eq!(
            place(Some(last), zone(-5, -1, 5, 10, 10), ZONE_RECORDS),
            Placement::New(zone(-5, -1, 5, 10, 10))
        );
    }

    #[test]
    fn the_bound_at_a_time_is_the_last_seq_of_every_zone_begun_by_then() {
        // Zones (min_at, last_seq): the third overlaps the first two in time.
        let b = SeqBounds::new(vec![(100, 50), (200, 90), (150, 120), (400, 130)]);
        assert_eq!(b.at(99), i64::MIN);
        assert_eq!(b.at(100), 50);
        assert_eq!(b.at(160), 120);
        assert_eq!(b.at(399), 120);
        assert_eq!(b.at(i64::MAX), 130);
        assert_eq!(SeqBounds::new(Vec::new()).at(0), i64::MIN);
    }

    proptest::proptest! {
        #[test]
        fn the_bound_at_a_time_is_the_highest_last_seq_begun_by_then(
            zones in proptest::collection::vec((0..20_i64, -50..1_000_i64), 0..60),
            at in -5..25_i64,
        ) {
            // Few times among many zones: most begin at a time another does.
            let want = zones
                .iter()
                .filter(|z| z.0 <= at)
                .map(|z| z.1)
                .max()
                .unwrap_or(i64::MIN);
            proptest::prop_assert_eq!(SeqBounds::new(zones).at(at), want);
        }
    }

    /// A journal of `blocks` only, each `(first_seq, last_seq, min_at,
    /// max_at)`, written in that order.
    fn journal_of_blocks(blocks: &[(i64, i64, i64, i64)]) -> Connection {
        let mut conn = Connection::open_in_memory().unwrap();
        crate::journal::schema::initialise(&mut conn, "test", 1).unwrap();
        conn.pragma_update(None, "foreign_keys", false).unwrap();
        for &(first, last, min_at, max_at) in blocks {
            conn.execute(
                "INSERT INTO blocks(object_id, first_seq, last_seq, min_at, max_at, records,
                                    columns, bodies)
                 VALUES (1, ?1, ?2, ?3, ?4, 1, x'', x'')",
                params![first, last, min_at, max_at],
            )
            .unwrap();
        }
        conn
    }

    #[test]
    fn orderly_in_answers_as_orderly_of_every_zone_wherever_the_overlap_is() {
        // 600 blocks meeting the window (0, 10_000], none overlapping: every
        // one has to be looked at to say so.
        let apart: Vec<_> = (0..600_i64)
            .map(|i| (i * 10 + 1, i * 10 + 5, i + 1, i + 2))
            .collect();
        // The whole of it, a part, and windows that none meets (after them,
        // before them).
        let windows = [(0, 10_000), (100, 200), (700, 800), (5_000, 6_000), (-9, 0)];
        let check = |blocks: &[(i64, i64, i64, i64)], want: bool| {
            let conn = journal_of_blocks(blocks);
            let all = all(&conn).unwrap();
            for (since, until) in windows {
                assert_eq!(
                    orderly_in(&conn, since, until).unwrap(),
                    orderly(&all, since, until),
                    "({since}, {until}]"
                );
            }
            assert_eq!(orderly_in(&conn, 0, 10_000).unwrap(), want);
            assert_eq!(meeting(&conn, 5_000, 6_000).unwrap(), Meeting::Nothing);
        };
        check(&apart, true);
        // Two that overlap, among the first looked at, then only far after
        // them, then the first with the last.
        for (a, b) in [(3, 7), (500, 501), (0, 599)] {
            let mut overlapping = apart.clone();
            overlapping[b].0 = overlapping[a].1;
            check(&overlapping, false);
        }
    }

    #[test]
    fn zones_rebuilt_from_records_cover_them() {
        let mut conn = Connection::open_in_memory().unwrap();
        crate::journal::schema::initialise(&mut conn, "test", 1).unwrap();
        // Records alone: their streams and objects do not matter here.
        conn.pragma_update(None, "foreign_keys", false).unwrap();
        let tx = conn.transaction().unwrap();
        for seq in 1..=5000_i64 {
            tx.execute(
                "INSERT INTO records(seq, stream_id, kind, observed_at, object_id)
                 VALUES (?1, 1, 1, ?2, ?3)",
                params![seq, 10_000 - seq, (seq % 7 != 0).then_some(1)],
            )
            .unwrap();
        }
        rebuild(&tx).unwrap();
        let zones: Vec<Zone> = tx
            .prepare("SELECT first_seq, last_seq, records, min_at, max_at FROM zones")
            .unwrap()
            .query_map([], |r| {
                Ok(zone(r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(zones.len(), 2);
        let objects: Vec<i64> = (1..=5000).filter(|s| s % 7 != 0).collect();
        assert_eq!(
            zones.iter().map(|z| z.records).sum::<i64>(),
            objects.len() as i64
        );
        for seq in objects {
            let at = 10_000 - seq;
            assert!(
                zones
                    .iter()
                    .any(|z| (z.first_seq..=z.last_seq).contains(&seq)
                        && (z.min_at..=z.max_at).contains(&at)),
                "record {seq} is in no zone"
            );
        }
    }
}
