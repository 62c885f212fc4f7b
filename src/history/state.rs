//! State at a time (docs/consistency.md, docs/architecture.md §5): the latest baseline at or before T, then the
//! events after it up to T. An object missing from a later baseline is gone from
//! that baseline on, even if its DELETED event fell into a gap.

use super::{History, HistoryError, StreamHistory};
use crate::journal::versions::VersionRow;
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

impl History<'_> {
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
        let version =
            self.journal
                .object_version_at(object, at, self.bounds.at(at), &stream.lists)?;
        Ok(match version {
            None => ObjectState::Absent,
            // Seen before the latest list and not in it: gone by then.
            Some(v) if v.seq < baseline.token => ObjectState::Absent,
            Some(v) if v.deleted() => ObjectState::Absent,
            Some(v) => ObjectState::Present(v),
        })
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
        let mut objects: BTreeMap<i64, VersionRow> = self
            .journal
            .baseline_items(stream.info.id, baseline)?
            .into_iter()
            .map(|v| (v.object, v))
            .collect();
        for event in self
            .journal
            .stream_events(stream.info.id, baseline.seq, at)?
        {
            if event.deleted() {
                objects.remove(&event.object);
            } else {
                objects.insert(event.object, event);
            }
        }
        Ok(Some(objects))
    }
}
