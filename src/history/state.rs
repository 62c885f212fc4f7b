//! State at a time (docs/consistency.md, docs/architecture.md §5): the latest baseline at or before T, then the
//! events after it up to T, replayed, or each object's last version by T under
//! that baseline, whichever reads less. An object missing from a later
//! baseline is gone from that baseline on, even if its DELETED event fell into
//! a gap.

use super::{History, HistoryError, StreamHistory};
use crate::journal::Journal;
use crate::journal::versions::VersionRow;
use crate::journal::zones::SeqBounds;
use std::collections::BTreeMap;

/// About how many records a replay reads, in `seq` order, in the time a
/// lookup of one object's last version takes ([`History::stream_at`]): on
/// the history bench's 10M journal a record read in order took about 0.28
/// µs and a lookup about 6 µs, some 20 records; 32 leans to the replay
/// (docs/journal.md, "`snapshot --at` and the state at a time").
const SEEK_RECORDS: i64 = 32;

/// What a debug build takes instead of [`SEEK_RECORDS`], from 1 to
/// 1,000,000: the truth checker's histories hold tens of objects and a few
/// hundred records, where the product's ratio would nearly always replay;
/// 1 looks objects up nearly always, 1,000,000 replays (docs/truth.md). Both
/// ways give the same answers.
pub const DEBUG_SEEK_RECORDS_ENV: &str = "KRPLY_DEBUG_SEEK_RECORDS";

/// [`SEEK_RECORDS`], or in a debug build [`DEBUG_SEEK_RECORDS_ENV`] when it
/// is set.
fn seek_records() -> i64 {
    if !cfg!(debug_assertions) {
        return SEEK_RECORDS;
    }
    static RATIO: std::sync::OnceLock<i64> = std::sync::OnceLock::new();
    *RATIO.get_or_init(|| {
        std::env::var(DEBUG_SEEK_RECORDS_ENV)
            .ok()
            .and_then(|v| v.parse().ok())
            .filter(|n| (1..=1_000_000).contains(n))
            .unwrap_or(SEEK_RECORDS)
    })
}

/// What the journal knows about one object at one time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ObjectState {
    /// It existed, as this version.
    Present(VersionRow),
    /// It did not exist (never listed, deleted, or absent from a relist).
    Absent,
    /// The stream was not listed yet at that time: nothing is known.
    Unknown,
}

impl ObjectState {
    pub fn version(&self) -> Option<&VersionRow> {
        match self {
            ObjectState::Present(v) => Some(v),
            _ => None,
        }
    }
}

/// Reads objects' states on one connection to the journal: the history's own,
/// or one beside it that holds the same records up to `highest`
/// ([`Journal::beside`]), for a worker thread.
#[derive(Clone, Copy)]
pub(super) struct Reading<'a> {
    pub journal: &'a Journal,
    pub bounds: &'a SeqBounds,
    /// Records above this `seq` came after the history's snapshot.
    pub highest: i64,
}

impl Reading<'_> {
    /// Every version of one object of `stream` that the stream stands by
    /// (its events, and items of lists that completed), oldest first.
    pub fn versions(
        &self,
        stream: &StreamHistory,
        object: i64,
    ) -> Result<Vec<VersionRow>, HistoryError> {
        Ok(VersionRow::kept(
            self.journal.object_versions(object)?,
            |v| v.seq <= self.highest && v.list_token.is_none_or(|t| stream.lists.contains(&t)),
        ))
    }

    /// The state of one object of `stream` at `at`.
    pub fn object_at(
        &self,
        stream: &StreamHistory,
        object: i64,
        at: i64,
    ) -> Result<ObjectState, HistoryError> {
        let Some(baseline) = stream.baseline_at(at) else {
            return Ok(ObjectState::Unknown);
        };
        let bound = self.bounds.at(at).min(self.highest);
        let version = self
            .journal
            .object_version_at(object, at, bound, &stream.lists)?;
        Ok(state(baseline.token, version))
    }

    /// The state of one object of `stream` at `at`, given its version
    /// `before` at an earlier time; and whether every record from that one to
    /// this is marked status-only (docs/journal.md, "Status-only changes").
    pub fn object_after(
        &self,
        stream: &StreamHistory,
        object: i64,
        before: &VersionRow,
        at: i64,
    ) -> Result<(ObjectState, bool), HistoryError> {
        let Some(baseline) = stream.baseline_at(at) else {
            return Ok((ObjectState::Unknown, false));
        };
        let bound = self.bounds.at(at).min(self.highest);
        let (version, status_only) =
            match self
                .journal
                .object_version_since(object, at, bound, &stream.lists, before.seq)?
            {
                Some((v, status_only)) => (Some(v), status_only),
                None => (
                    self.journal
                        .object_version_at(object, at, bound, &stream.lists)?,
                    false,
                ),
            };
        let state = state(baseline.token, version);
        let status_only = status_only && state.version().is_some();
        Ok((state, status_only))
    }
}

/// An object's state from its last version by then, under the latest list
/// (whose token is `token`).
fn state(token: i64, version: Option<VersionRow>) -> ObjectState {
    match version {
        None => ObjectState::Absent,
        // Seen before the latest list and not in it: gone by then.
        Some(v) if v.seq < token => ObjectState::Absent,
        Some(v) if v.deleted() => ObjectState::Absent,
        Some(v) => ObjectState::Present(v),
    }
}

impl History<'_> {
    /// Reads on the history's own connection.
    pub(super) fn reading(&self) -> Reading<'_> {
        Reading {
            journal: self.journal,
            bounds: &self.bounds,
            highest: i64::MAX,
        }
    }

    /// The state of one object of `stream` at `at`.
    pub fn object_at(
        &self,
        stream: &StreamHistory,
        object: i64,
        at: i64,
    ) -> Result<ObjectState, HistoryError> {
        self.reading().object_at(stream, object, at)
    }

    /// Every object of `stream` present at `at`, by object id; `None` when
    /// the stream was not listed yet.
    ///
    /// Two ways give the same map, and the cheaper is taken: replaying the
    /// stream's events since its list before `at` reads every record of the
    /// journal between the two (a recorder that never relisted in a month
    /// makes that the month), where looking up each object's last version
    /// by then is one seek down its own records, about [`SEEK_RECORDS`]
    /// records read in order.
    pub fn stream_at(
        &self,
        stream: &StreamHistory,
        at: i64,
    ) -> Result<Option<BTreeMap<i64, VersionRow>>, HistoryError> {
        let Some(baseline) = stream.baseline_at(at) else {
            return Ok(None);
        };
        let span = self.bounds.at(at).saturating_sub(baseline.seq).max(0);
        let few = usize::try_from(span / seek_records()).unwrap_or(usize::MAX);
        let ids = self.journal.stream_object_ids(stream.info.id, few)?;
        if ids.len() < few {
            self.stream_at_by_object(stream, at, &ids).map(Some)
        } else {
            self.stream_at_replayed(stream, at).map(Some)
        }
    }

    /// [`History::stream_at`] by each of the stream's objects (`ids`, all of
    /// them): its last version by `at`, under the list before `at`.
    fn stream_at_by_object(
        &self,
        stream: &StreamHistory,
        at: i64,
        ids: &[i64],
    ) -> Result<BTreeMap<i64, VersionRow>, HistoryError> {
        let mut objects = BTreeMap::new();
        for &id in ids {
            if let ObjectState::Present(v) = self.object_at(stream, id, at)? {
                objects.insert(id, v);
            }
        }
        Ok(objects)
    }

    /// [`History::stream_at`] by the list before `at` and the stream's events
    /// after it.
    fn stream_at_replayed(
        &self,
        stream: &StreamHistory,
        at: i64,
    ) -> Result<BTreeMap<i64, VersionRow>, HistoryError> {
        let Some(baseline) = stream.baseline_at(at) else {
            return Ok(BTreeMap::new());
        };
        // Each object's last record: a list item, or an event (by its seq).
        enum Last {
            Item(VersionRow),
            Event(i64),
        }
        let mut last: BTreeMap<i64, Last> = self
            .journal
            .baseline_items(stream.info.id, baseline)?
            .into_iter()
            .map(|v| (v.object, Last::Item(v)))
            .collect();
        for (seq, object, deleted) in
            self.journal
                .stream_events(stream.info.id, baseline.seq, at, self.bounds.at(at))?
        {
            if deleted {
                last.remove(&object);
            } else {
                last.insert(object, Last::Event(seq));
            }
        }
        let mut objects = BTreeMap::new();
        for (object, row) in last {
            let version = match row {
                Last::Item(v) => v,
                // Read in the same snapshot as the scan that found it.
                Last::Event(seq) => self.journal.object_version(object, seq)?.ok_or_else(|| {
                    crate::journal::JournalError::Corrupt {
                        path: self.journal.path().to_path_buf(),
                        detail: format!("record {seq} vanished while an answer was read"),
                    }
                })?,
            };
            objects.insert(object, version);
        }
        Ok(objects)
    }
}

#[cfg(test)]
mod tests {
    use crate::history::History;
    use crate::history::script::{CLUSTER, Script};
    use crate::model::WatchType;

    #[test]
    fn the_state_by_object_is_the_state_replayed() {
        use WatchType::{Added, Deleted, Modified};
        let mut s = Script::new();
        let shop = s.stream(Some("shop"));
        let pay = s.stream(Some("pay"));
        s.list(pay, 90, &[("pay", "p", "1")], "1");
        s.list(
            shop,
            100,
            &[("shop", "a", "5"), ("shop", "b", "5"), ("shop", "c", "5")],
            "5",
        );
        s.event(shop, 110, Modified, "shop", "a", "6");
        s.event(shop, 120, Added, "shop", "d", "7");
        s.event(pay, 125, Modified, "pay", "p", "7");
        s.event(shop, 130, Deleted, "shop", "b", "8");
        s.event(shop, 140, Modified, "shop", "a", "9");
        // A 410, and a relist: c changed meanwhile, d is gone, e is new.
        s.gap(shop, 150, 150, "410 Expired");
        s.list(
            shop,
            200,
            &[("shop", "a", "9"), ("shop", "c", "10"), ("shop", "e", "11")],
            "11",
        );
        s.event(shop, 210, Modified, "shop", "e", "12");
        s.event(shop, 220, Added, "shop", "b", "13");
        s.event(shop, 230, Deleted, "shop", "c", "14");
        // A list that failed part-way stands for nothing.
        s.failed_list(shop, 240, &[("shop", "a", "15"), ("shop", "f", "15")]);
        s.event(shop, 250, Modified, "shop", "a", "16");
        // Two changes in one millisecond.
        s.event(shop, 260, Modified, "shop", "e", "17");
        s.event(shop, 260, Deleted, "shop", "e", "18");
        s.stop(shop, 300, "18");
        let journal = s.journal();
        let history = History::load(&journal, CLUSTER, 400).unwrap();
        let names =
            |state: &std::collections::BTreeMap<i64, crate::journal::versions::VersionRow>| {
                state
                    .iter()
                    .map(|(id, v)| (*id, v.resource_version.clone(), v.seq))
                    .collect::<Vec<_>>()
            };
        let mut present = 0;
        for stream in &history.streams {
            let ids = journal
                .stream_object_ids(stream.info.id, usize::MAX)
                .unwrap();
            for at in (0..=320).step_by(5) {
                let replayed = stream
                    .baseline_at(at)
                    .map(|_| history.stream_at_replayed(stream, at).unwrap());
                let by_object = stream
                    .baseline_at(at)
                    .map(|_| history.stream_at_by_object(stream, at, &ids).unwrap());
                assert_eq!(
                    replayed.as_ref().map(names),
                    by_object.as_ref().map(names),
                    "{} at {at}",
                    stream.info.name()
                );
                assert_eq!(
                    history.stream_at(stream, at).unwrap().as_ref().map(names),
                    replayed.as_ref().map(names)
                );
                present += replayed.map_or(0, |m| m.len());
            }
        }
        // The states compared were not all empty.
        assert!(present > 100, "{present}");
    }
}
