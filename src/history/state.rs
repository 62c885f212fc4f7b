//! State at a time (docs/consistency.md, docs/architecture.md §5): the latest baseline at or before T, then the
//! events after it up to T. An object missing from a later baseline is gone from
//! that baseline on, even if its DELETED event fell into a gap.

use super::{History, HistoryError, StreamHistory};
use crate::journal::Journal;
use crate::journal::versions::VersionRow;
use crate::journal::zones::SeqBounds;
use std::collections::BTreeMap;

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

    /// Every object of `stream` present at `at`, by (namespace, name) and object
    /// id; `None` when the stream was not listed yet.
    pub fn stream_at(
        &self,
        stream: &StreamHistory,
        at: i64,
    ) -> Result<Option<BTreeMap<i64, VersionRow>>, HistoryError> {
        let Some(baseline) = stream.baseline_at(at) else {
            return Ok(None);
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
                Last::Event(seq) => self.journal.version(seq)?.ok_or_else(|| {
                    crate::journal::JournalError::Corrupt {
                        path: self.journal.path().to_path_buf(),
                        detail: format!("record {seq} vanished while an answer was read"),
                    }
                })?,
            };
            objects.insert(object, version);
        }
        Ok(Some(objects))
    }
}
