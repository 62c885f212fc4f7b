//! The timeline of one object: every recorded version, oldest first, with the
//! fields each changed, and the gaps of its stream where they fall. Works for
//! deleted objects; an object that a relist no longer saw is shown as deleted
//! there (synthetic), since its DELETED event fell into a gap.

use super::actors::By;
use super::complete::Completeness;
use super::diff::{Field, fields_between};
use super::pipeline::{inline, pipeline};
use super::{Between, History, HistoryError, Scope, StreamHistory};
use crate::diff::DiffOptions;
use crate::journal::read::GapWindow;
use crate::journal::versions::{Decoder, ObjectRow, StoredBody, VersionRow};
use crate::model::WatchType;
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryType {
    Added,
    Modified,
    Deleted,
    Baseline,
    Gap,
}

impl EntryType {
    /// The entry of a stored version: its watch type, or a list's baseline.
    pub fn of(watch_type: Option<WatchType>) -> EntryType {
        match watch_type {
            Some(WatchType::Added) => EntryType::Added,
            Some(WatchType::Modified) => EntryType::Modified,
            Some(WatchType::Deleted) => EntryType::Deleted,
            None => EntryType::Baseline,
        }
    }

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
    /// The fields this version changed, each with its manager.
    pub fields: Vec<Field>,
    /// For a gap entry: the missing window.
    pub gap: Option<GapWindow>,
    /// For a list that found the object changed, appeared or gone since the
    /// version before it (nobody watched in between): when that happened is
    /// known only to be in this stretch.
    pub found_by_relist: Option<Between>,
    /// Who made this change, when audit logs were imported.
    pub by: By,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TimelineAnswer {
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub entries: Vec<Entry>,
    pub completeness: Completeness,
}

impl History<'_> {
    /// Every recorded version of `object`, with what changed in each, where it
    /// vanished from a relist, and the stream's gaps within its life.
    ///
    /// Long on purpose: this thread reads stored bodies in order while other threads
    /// compare them, and the reading closure keeps its state (the previous version,
    /// the last keyframe) local to this function.
    pub fn timeline(
        &self,
        stream: &StreamHistory,
        object: &ObjectRow,
        opts: &DiffOptions,
    ) -> Result<TimelineAnswer, HistoryError> {
        self.timeline_within(stream, object, opts, None)
    }

    /// [`History::timeline`]; with a `window` `(since, until]`, the field
    /// changes only of the entries observed in it (`log` reads no others; the
    /// rest are left without fields). A version's body is then read only when
    /// it or the version after it is in the window: a window of 30 minutes
    /// does not decode an object's whole history.
    pub(super) fn timeline_within(
        &self,
        stream: &StreamHistory,
        object: &ObjectRow,
        opts: &DiffOptions,
        window: Option<(i64, i64)>,
    ) -> Result<TimelineAnswer, HistoryError> {
        let versions = self.versions(stream, object.id)?;
        let asked = |v: &VersionRow| {
            window.is_none_or(|(since, until)| v.observed_at > since && v.observed_at <= until)
        };
        // Whether each version's body is read: its entry is asked about, or
        // the next version's is (and compares with it).
        let read_body: Vec<bool> = (0..versions.len())
            .map(|i| asked(&versions[i]) || versions.get(i + 1).is_some_and(asked))
            .collect();
        let reading = read_body.iter().filter(|&&r| r).count();
        let mut entries = Vec::new();
        let mut last_seq = i64::MIN;
        let api_version = stream.info.resource.api_version();
        let defaults = [
            ("apiVersion", api_version.as_str()),
            ("kind", stream.info.resource.kind.as_str()),
        ];
        let what = format!("{} {}", stream.info.name(), object.name);
        // Whether the object was present after the previous version.
        let mut present = false;
        // The previous present version, as stored (versions are compared where
        // they differ only, see `diff::reduce_pair`), when its body was read.
        let mut previous: Option<Arc<StoredBody>> = None;
        // The keyframe the last body was a delta against (read once).
        let mut keyframe: Option<Arc<StoredBody>> = None;
        // This thread reads stored bodies; the other cores decode and compare
        // them, in runs of consecutive versions so each is decoded about once.
        // One run is compared here: threads would cost more than it.
        let read = |send: &mut dyn FnMut(Run) -> bool| {
            let mut run = Run::default();
            for (v, &read_body) in versions.iter().zip(&read_body) {
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
                    present = false;
                    previous = None;
                }
                let kind = EntryType::of(v.watch_type);
                last_seq = v.seq;
                if kind == EntryType::Deleted {
                    // Nothing to compare, and nothing to compare with next.
                    entries.push(entry(v, kind));
                    present = false;
                    previous = None;
                    continue;
                }
                if !read_body {
                    // Neither this entry nor the next is asked about: the
                    // next version has no body before it to compare with.
                    entries.push(entry(v, kind));
                    present = true;
                    previous = None;
                    continue;
                }
                let body = Arc::new(self.journal.stored_body(v.body, keyframe.as_ref())?);
                if body.base.is_some() {
                    keyframe.clone_from(&body.base);
                }
                if run.versions.is_empty() {
                    run.start = previous.clone();
                }
                run.versions
                    .push((previous.is_some().then_some(entries.len()), body.clone()));
                entries.push(entry(v, kind));
                present = true;
                previous = Some(body);
                if run.versions.len() >= TIMELINE_RUN && !send(std::mem::take(&mut run)) {
                    // Every comparing thread has stopped (one failed).
                    return Ok(());
                }
            }
            if !run.versions.is_empty() {
                send(run);
            }
            Ok(())
        };
        let work = |decoder: &mut Decoder, run: Run, out: &mut Vec<_>| {
            compare_run(decoder, &run, opts, &defaults, &what, out)
        };
        let compared = if reading <= TIMELINE_RUN {
            inline(read, Decoder::default, work)?
        } else {
            pipeline(&what, read, Decoder::default, work)?
        };
        for (entry, fields) in compared {
            entries[entry].fields = fields;
        }
        if self.has_audit() {
            let found = self.attribute(stream, &versions)?;
            let by: std::collections::HashMap<(&str, i64), By> = versions
                .iter()
                .zip(&found)
                .filter(|(v, _)| v.watch_type.is_some())
                .map(|(v, f)| {
                    (
                        (v.resource_version.as_str(), v.observed_at),
                        By::of(f.as_ref()),
                    )
                })
                .collect();
            for e in entries.iter_mut().filter(|e| !e.synthetic) {
                if let Some(b) = e
                    .resource_version
                    .as_deref()
                    .and_then(|rv| by.get(&(rv, e.observed_at)))
                {
                    e.by = b.clone();
                    for f in &mut e.fields {
                        f.by = b.clone();
                    }
                }
            }
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
            entries.extend(gaps_within(stream, first, end));
        }
        // Stable; a gap starts after the versions observed at its start time.
        entries.sort_by_key(|e| (e.observed_at, e.kind == EntryType::Gap));
        mark_relist_findings(stream, &mut entries);

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

/// The stream's gaps that overlap `(first, end)`, an object's recorded life, as
/// entries. A gap starts after its `from` (covered up to and including it).
fn gaps_within(stream: &StreamHistory, first: i64, end: i64) -> Vec<Entry> {
    stream
        .coverage
        .windows
        .iter()
        .filter(|w| w.to.is_none_or(|to| to > first) && w.from < end)
        .map(|w| Entry {
            observed_at: w.from,
            resource_version: w.from_rv.clone(),
            kind: EntryType::Gap,
            synthetic: true,
            fields: Vec::new(),
            gap: Some(w.clone()),
            found_by_relist: None,
            by: By::default(),
        })
        .collect()
}

/// Marks the list entries that found something the watch did not see: a
/// version other than the one before it (every write gives an object a new
/// resourceVersion), or the object gone from the list.
fn mark_relist_findings(stream: &StreamHistory, entries: &mut [Entry]) {
    // Before its first entry, an object is known to be absent from every
    // list that completed before it: first listed by a later list, it was
    // created while nobody watched.
    let first_list = stream.baselines.first().map(|b| b.observed_at);
    let mut known: Option<Option<String>> = None;
    for e in entries.iter_mut() {
        if known.is_none()
            && e.kind != EntryType::Gap
            && first_list.is_some_and(|f| f < e.observed_at)
        {
            known = Some(None);
        }
        match e.kind {
            EntryType::Gap => continue,
            EntryType::Baseline
                if known
                    .as_ref()
                    .is_some_and(|rv| rv.as_ref() != e.resource_version.as_ref()) =>
            {
                e.found_by_relist = Some(stream.relist_window(e.observed_at));
            }
            EntryType::Deleted if e.synthetic => {
                e.found_by_relist = Some(stream.relist_window(e.observed_at));
            }
            _ => {}
        }
        known = match e.kind {
            // Nothing is known after a deletion: a later list that shows the
            // object again found it re-created.
            EntryType::Deleted => Some(None),
            _ => Some(e.resource_version.clone()),
        };
    }
}

/// Consecutive versions handed to a comparing thread at a time.
const TIMELINE_RUN: usize = 16;

/// Consecutive present versions: each is compared with the one before it
/// (`start` for the first) when it has an entry to fill.
#[derive(Default)]
struct Run {
    start: Option<Arc<StoredBody>>,
    versions: Vec<(Option<usize>, Arc<StoredBody>)>,
}

fn entry(v: &VersionRow, kind: EntryType) -> Entry {
    Entry {
        observed_at: v.observed_at,
        resource_version: Some(v.resource_version.clone()),
        kind,
        synthetic: v.synthetic(),
        fields: Vec::new(),
        gap: None,
        found_by_relist: None,
        by: By::default(),
    }
}

/// Decodes a run of versions and finds the field changes of each from the
/// one before it.
fn compare_run(
    decoder: &mut Decoder,
    run: &Run,
    opts: &DiffOptions,
    defaults: &[(&str, &str)],
    what: &str,
    out: &mut Vec<(usize, Vec<Field>)>,
) -> Result<(), HistoryError> {
    let body_error = |detail: String| HistoryError::Body {
        object: what.to_string(),
        detail,
    };
    let mut decode = |body: &StoredBody| -> Result<String, HistoryError> {
        let raw = decoder
            .decode(body)
            .map_err(|e| body_error(e.to_string()))?;
        String::from_utf8(raw).map_err(|e| body_error(e.to_string()))
    };
    let mut before = run.start.as_deref().map(&mut decode).transpose()?;
    for (entry, body) in &run.versions {
        let after = decode(body)?;
        if let (Some(entry), Some(b)) = (entry, &before) {
            let fields =
                fields_between(b, &after, opts, defaults).map_err(|e| body_error(e.to_string()))?;
            out.push((*entry, fields));
        }
        before = Some(after);
    }
    Ok(())
}

fn vanished(at: i64, list_rv: &str) -> Entry {
    Entry {
        observed_at: at,
        resource_version: Some(list_rv.to_string()),
        kind: EntryType::Deleted,
        synthetic: true,
        fields: Vec::new(),
        gap: None,
        found_by_relist: None,
        by: By::default(),
    }
}
