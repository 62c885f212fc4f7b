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
        // Whether a present version precedes (versions are compared where they
        // differ only, see `diff::reduce_pair`).
        let mut present = false;
        let mut last_seq = i64::MIN;
        let api_version = stream.info.resource.api_version();
        let defaults = [
            ("apiVersion", api_version.as_str()),
            ("kind", stream.info.resource.kind.as_str()),
        ];
        let what = || format!("{} {}", stream.info.name(), object.name);
        // The previous present version's text, carried from chunk to chunk.
        let mut carried: Option<String> = None;
        // Bodies are read a chunk at a time (bounded memory), then compared on
        // all cores: this thread owns the journal connection.
        for chunk in versions.chunks(TIMELINE_CHUNK) {
            let texts = chunk
                .iter()
                .map(|v| self.object_text(stream, v))
                .collect::<Result<Vec<_>, _>>()?;
            // (entry, previous text, this text); `None` is the carried text.
            let mut jobs: Vec<(usize, Option<usize>, usize)> = Vec::new();
            let mut previous: Option<Option<usize>> = carried.is_some().then_some(None);
            for (i, v) in chunk.iter().enumerate() {
                // A list that started after the previous version and completed
                // before this one did not see the object: it was gone by then,
                // whatever happened in the gap.
                if present
                    && let Some(b) = stream
                        .baselines
                        .iter()
                        .find(|b| b.token > last_seq && b.seq < v.seq)
                {
                    entries.push(vanished(b.observed_at, &b.resource_version));
                    previous = None;
                }
                let kind = match v.watch_type {
                    Some(WatchType::Added) => EntryType::Added,
                    Some(WatchType::Modified) => EntryType::Modified,
                    Some(WatchType::Deleted) => EntryType::Deleted,
                    None => EntryType::Baseline,
                };
                if let Some(p) = previous
                    && kind != EntryType::Deleted
                {
                    jobs.push((entries.len(), p, i));
                }
                entries.push(Entry {
                    observed_at: v.observed_at,
                    resource_version: Some(v.resource_version.clone()),
                    kind,
                    synthetic: v.synthetic(),
                    fields: Vec::new(),
                    gap: None,
                });
                present = kind != EntryType::Deleted;
                previous = present.then_some(Some(i));
                last_seq = v.seq;
            }
            let text = |t: Option<usize>| match t {
                Some(i) => texts[i].as_str(),
                None => carried.as_deref().unwrap_or_default(),
            };
            let compare = |jobs: &[(usize, Option<usize>, usize)]| {
                jobs.iter()
                    .map(|&(entry, p, c)| {
                        let (rb, ra) = reduce_pair(text(p), text(Some(c)), opts, &defaults)
                            .map_err(|e| HistoryError::Body {
                                object: what(),
                                detail: e.to_string(),
                            })?;
                        Ok((entry, diff_objects(&rb, &ra, opts)))
                    })
                    .collect::<Result<Vec<_>, HistoryError>>()
            };
            let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
            let per = jobs.len().div_ceil(workers).max(1);
            let results = std::thread::scope(|threads| {
                let handles: Vec<_> = jobs
                    .chunks(per)
                    .map(|part| threads.spawn(|| compare(part)))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| {
                        h.join().unwrap_or_else(|_| {
                            Err(HistoryError::Body {
                                object: what(),
                                detail: "a comparison thread panicked".into(),
                            })
                        })
                    })
                    .collect::<Vec<_>>()
            });
            for part in results {
                for (entry, fields) in part? {
                    entries[entry].fields = fields;
                }
            }
            carried = match previous {
                Some(Some(i)) => texts.into_iter().nth(i),
                Some(None) => carried,
                None => None,
            };
        }
        // Listed last, then missing from a later relist.
        if present && let Some(b) = stream.baselines.iter().find(|b| b.token > last_seq) {
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

/// Versions read and compared per round: bounds the bodies held at once.
const TIMELINE_CHUNK: usize = 512;

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
