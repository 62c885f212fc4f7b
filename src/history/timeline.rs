//! The timeline of one object: every recorded version, oldest first, with the
//! fields each changed, and the gaps of its stream where they fall. Works for
//! deleted objects; an object that a relist no longer saw is shown as deleted
//! there (synthetic), since its DELETED event fell into a gap.

use super::complete::Completeness;
use super::{History, HistoryError, Scope, StreamHistory};
use crate::diff::{DiffOptions, FieldChange, diff_objects, reduce_pair};
use crate::journal::read::GapWindow;
use crate::journal::versions::ObjectRow;
use crate::model::WatchType;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryType {
    Added,
    Modified,
    Deleted,
    Baseline,
    Gap,
}

impl EntryType {
    pub fn as_str(self) -> &'static str {
        match self {
            EntryType::Added => "ADDED",
            EntryType::Modified => "MODIFIED",
            EntryType::Deleted => "DELETED",
            EntryType::Baseline => "BASELINE",
            EntryType::Gap => "GAP",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub observed_at: i64,
    pub resource_version: Option<String>,
    pub kind: EntryType,
    /// Seen by a list, or inferred from one, rather than received as an event.
    pub synthetic: bool,
    pub fields: Vec<FieldChange>,
    /// For a gap entry: the missing window.
    pub gap: Option<GapWindow>,
}

pub struct TimelineAnswer {
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub entries: Vec<Entry>,
    pub completeness: Completeness,
}

impl History<'_> {
    pub fn timeline(
        &self,
        stream: &StreamHistory,
        object: &ObjectRow,
        opts: &DiffOptions,
    ) -> Result<TimelineAnswer, HistoryError> {
        let versions: Vec<_> = self
            .journal
            .object_versions(object.id)?
            .into_iter()
            .filter(|v| v.list_token.is_none_or(|t| stream.lists.contains(&t)))
            .collect();
        let mut entries = Vec::new();
        // The previous present version, as recorded (versions are compared
        // where they differ only, see `diff::reduce_pair`).
        let mut previous: Option<String> = None;
        let mut last_seq = i64::MIN;
        let api_version = stream.info.resource.api_version();
        let defaults = [
            ("apiVersion", api_version.as_str()),
            ("kind", stream.info.resource.kind.as_str()),
        ];
        for v in &versions {
            // A list that started after the previous version and completed before
            // this one did not see the object: it was gone by then, whatever
            // happened in the gap.
            if previous.is_some()
                && let Some(b) = stream
                    .baselines
                    .iter()
                    .find(|b| b.token > last_seq && b.seq < v.seq)
            {
                entries.push(vanished(b.observed_at, &b.resource_version));
                previous = None;
            }
            let current = self.object_text(stream, v)?;
            let kind = match v.watch_type {
                Some(WatchType::Added) => EntryType::Added,
                Some(WatchType::Modified) => EntryType::Modified,
                Some(WatchType::Deleted) => EntryType::Deleted,
                None => EntryType::Baseline,
            };
            let fields = match (&previous, kind) {
                (Some(p), EntryType::Modified | EntryType::Baseline | EntryType::Added) => {
                    let (rb, ra) = reduce_pair(p, &current, opts, &defaults).map_err(|e| {
                        HistoryError::Body {
                            object: format!("{} {}", stream.info.name(), object.name),
                            detail: e.to_string(),
                        }
                    })?;
                    diff_objects(&rb, &ra, opts)
                }
                _ => Vec::new(),
            };
            let deleted = kind == EntryType::Deleted;
            entries.push(Entry {
                observed_at: v.observed_at,
                resource_version: Some(v.resource_version.clone()),
                kind,
                synthetic: v.synthetic(),
                fields,
                gap: None,
            });
            previous = (!deleted).then_some(current);
            last_seq = v.seq;
        }
        // Listed last, then missing from a later relist.
        if previous.is_some()
            && let Some(b) = stream.baselines.iter().find(|b| b.token > last_seq)
        {
            entries.push(vanished(b.observed_at, &b.resource_version));
        }

        // The stream's gaps, where they fall within the object's recorded life.
        let first = entries.first().map(|e| e.observed_at);
        let end = if entries.last().is_some_and(|e| e.kind == EntryType::Deleted) {
            entries.last().map(|e| e.observed_at)
        } else {
            stream.end(self.now)
        };
        if let (Some(first), Some(end)) = (first, end) {
            // A window starts after its `from` (covered up to and including it).
            for w in &stream.coverage.windows {
                if w.to.is_none_or(|to| to > first) && w.from < end {
                    entries.push(Entry {
                        observed_at: w.from,
                        resource_version: w.from_rv.clone(),
                        kind: EntryType::Gap,
                        synthetic: true,
                        fields: Vec::new(),
                        gap: Some(w.clone()),
                    });
                }
            }
        }
        // Stable; a gap starts after the versions observed at its start time.
        entries.sort_by_key(|e| (e.observed_at, e.kind == EntryType::Gap));

        let scope = Scope {
            namespace: stream
                .info
                .resource
                .namespaced
                .then(|| object.namespace.clone()),
            types: Some(vec![stream.info.resource.clone()]),
        };
        let since = entries.first().map(|e| e.observed_at);
        let until = end.unwrap_or(self.now);
        let completeness = self.completeness(&scope, &[stream], since, until);
        Ok(TimelineAnswer {
            kind: stream.info.resource.kind.clone(),
            namespace: object.namespace.clone(),
            name: object.name.clone(),
            entries,
            completeness,
        })
    }
}

fn vanished(at: i64, list_rv: &str) -> Entry {
    Entry {
        observed_at: at,
        resource_version: Some(list_rv.to_string()),
        kind: EntryType::Deleted,
        synthetic: true,
        fields: Vec::new(),
        gap: None,
    }
}
