//! The timeline of one object: every recorded version, oldest first, with the
//! fields each changed, and the gaps of its stream where they fall. Works for
//! deleted objects; an object that a relist no longer saw is shown as deleted
//! there (synthetic), since its DELETED event fell into a gap.

use super::actors::related;
use super::complete::Completeness;
use super::cover::Holes;
use super::diff::{Change, Field, ObjectDiff, fields_between};
use super::merge::What;
use super::pipeline::{inline, pipeline};
use super::tracked::Tracked;
use super::{Between, History, HistoryError, Scope, StreamHistory};
use crate::audit::By;
use crate::audit::join::Kind;
use crate::diff::DiffOptions;
use crate::journal::read::GapWindow;
use crate::journal::schema::kind;
use crate::journal::versions::{BaselineRef, Decoder, Mark, ObjectRow, StoredBody, VersionRow};
use crate::model::WatchType;
use std::sync::Arc;

/// What a timeline is read for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reading {
    /// Every change with its fields and who made it.
    Fields,
    /// Which versions changed what a default diff compares, and no more
    /// (`browse`'s list): a MODIFIED event the writer marked is taken at its
    /// mark, unread ([`Entry::changed_unread`]), and nobody is looked up in
    /// audit logs.
    Counts,
}

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
    /// In a timeline read for counting ([`Reading::Counts`]): a MODIFIED
    /// event the writer marked as a change a default diff sees, its fields
    /// not read.
    pub changed_unread: bool,
    /// Where it falls in the journal's order: the stream that recorded it
    /// (its name) and the record's `seq` (for a gap, the record that opened
    /// it). Entries of one time are ordered by them: within a stream a gap
    /// comes after what was recorded before it and before the list that
    /// ended it, even within one millisecond; across streams, by name, which
    /// an export and import keeps (the `seq`s of two streams interleave
    /// differently in another journal).
    pub stream: String,
    pub seq: i64,
}

impl Entry {
    /// The order of entries: time, then stream, then the stream's own order.
    pub fn order(&self) -> (i64, &str, i64) {
        (self.observed_at, &self.stream, self.seq)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct TimelineAnswer {
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub entries: Vec<Entry>,
    pub completeness: Completeness,
}

impl Entry {
    /// A version that changed nothing a default diff shows (only `status`, or
    /// only what the server keeps up to date: resourceVersion, managedFields):
    /// `timeline` leaves these out unless `--include-status` asks for them, as
    /// `diff` and `log` do. Gaps, creations, deletions, lists and what a relist
    /// found are never status-only.
    pub fn is_status_only(&self) -> bool {
        self.kind == EntryType::Modified
            && self.fields.is_empty()
            && !self.changed_unread
            && self.gap.is_none()
            && self.found_by_relist.is_none()
            && !self.synthetic
    }
}

impl TimelineAnswer {
    /// Leaves out the versions that changed only status ([`Entry::is_status_only`]).
    pub fn hide_status_only(&mut self) {
        self.entries.retain(|e| !e.is_status_only());
    }
}

impl History<'_> {
    /// Every recorded version of an object, with what changed in each, where
    /// it vanished from a relist, and the gaps within its life: of its only
    /// stream, or merged from every stream that covers it.
    pub fn timeline(
        &self,
        tracked: &Tracked<'_>,
        opts: &DiffOptions,
    ) -> Result<TimelineAnswer, HistoryError> {
        self.timeline_within(tracked, opts, None, Reading::Fields)
    }

    /// [`History::timeline`]; with a `window` `(since, until]`, the field
    /// changes only of the entries observed in it (`log` reads no others; the
    /// rest are left without fields). A version's body is then read only when
    /// it or the version after it is in the window: a window of 30 minutes
    /// does not decode an object's whole history. Read for
    /// [`Reading::Counts`], an object one stream covers reads only the bodies
    /// that no mark answers for.
    pub(super) fn timeline_within(
        &self,
        tracked: &Tracked<'_>,
        opts: &DiffOptions,
        window: Option<(i64, i64)>,
        reading: Reading,
    ) -> Result<TimelineAnswer, HistoryError> {
        match tracked.single() {
            Some((stream, object)) => self.stream_timeline(stream, object, opts, window, reading),
            None => self.merged_timeline(tracked, opts, window),
        }
    }

    /// The newest change of an object in `(since, until]` that changed what a
    /// default diff compares (not status only), with its fields; `None` when
    /// there is none.
    pub fn last_change(
        &self,
        tracked: &Tracked<'_>,
        window: (i64, i64),
    ) -> Result<Option<Entry>, HistoryError> {
        if let Some((stream, object)) = tracked.single()
            && !self.has_audit()
            && let Some(found) = self.last_change_by_marks(stream, object, window)?
        {
            return Ok(found);
        }
        let t = self.timeline_within(
            tracked,
            &DiffOptions::default(),
            Some(window),
            Reading::Fields,
        )?;
        Ok(t.entries.into_iter().rev().find(|e| {
            e.kind != EntryType::Gap
                && e.observed_at > window.0
                && e.observed_at <= window.1
                && !e.fields.is_empty()
        }))
    }

    /// [`History::last_change`] of an object one stream holds, without audit
    /// logs to weigh, where no list after the version the window began with
    /// could have found it changed or gone: every list of the stream since
    /// then has an item of it with the resourceVersion of the version before
    /// the item (not a deletion), which `timeline` shows as nothing new (a
    /// recorder restart lists every object so). Then each entry's fields are
    /// its event compared with the version before (an item before it holds
    /// the same body as the event before the item), so the newest change is
    /// looked for from the newest version back, and a version the writer
    /// marked status-only (docs/journal.md, "Status-only changes") is passed
    /// without reading it. `None` when that does not hold, and the timeline
    /// decides.
    fn last_change_by_marks(
        &self,
        stream: &StreamHistory,
        object: &ObjectRow,
        (since, until): (i64, i64),
    ) -> Result<Option<Option<Entry>>, HistoryError> {
        let versions = self.versions_from(stream, object.id, since)?;
        if versions.is_empty() || !lists_found_nothing_new(stream, &versions) {
            return Ok(None);
        }
        let name = stream.info.name();
        let api_version = stream.info.resource.api_version();
        let defaults = [
            ("apiVersion", api_version.as_str()),
            ("kind", stream.info.resource.kind.as_str()),
        ];
        let what = format!("{name} {}", object.name);
        let mut decoder = self.decoder.take().unwrap_or_default();
        let mut newest = || {
            for pair in versions.windows(2).rev() {
                let (before, v) = (&pair[0], &pair[1]);
                if v.observed_at <= since || v.observed_at > until {
                    continue;
                }
                // A deletion has no fields, and nothing is compared with one;
                // a list's item here found nothing new.
                if v.kind != kind::EVENT
                    || v.deleted()
                    || before.deleted()
                    || v.mark == Some(Mark::StatusOnly)
                {
                    continue;
                }
                let run = Run {
                    start: Some(Arc::new(self.journal.stored_body(before.body, None)?)),
                    versions: vec![(Some(0), Arc::new(self.journal.stored_body(v.body, None)?))],
                };
                let mut out = Vec::new();
                let opts = DiffOptions::default();
                compare_run(&mut decoder, &run, &opts, &defaults, &what, &mut out)?;
                if let Some((_, fields)) = out.pop()
                    && !fields.is_empty()
                {
                    return Ok(Some(Entry {
                        fields,
                        ..entry(v, EntryType::of(v.watch_type), &name)
                    }));
                }
            }
            Ok::<_, HistoryError>(None)
        };
        let found = newest();
        *self.decoder.borrow_mut() = Some(decoder);
        found.map(Some)
    }

    /// The timeline of an object only one stream covers.
    ///
    /// Long on purpose: this thread reads stored bodies in order while other threads
    /// compare them, and the reading closure keeps its state (the previous version,
    /// the last keyframe) local to this function.
    fn stream_timeline(
        &self,
        stream: &StreamHistory,
        object: &ObjectRow,
        opts: &DiffOptions,
        window: Option<(i64, i64)>,
        reading: Reading,
    ) -> Result<TimelineAnswer, HistoryError> {
        // Marks say what a default diff sees, nothing else.
        let counts = reading == Reading::Counts && *opts == DiffOptions::default();
        // Who made each change is asked only for its fields.
        let attribute = self.has_audit() && !counts;
        // A window needs the object's past from the version it began with;
        // who made each change is decided over the whole (the audit join
        // weighs every change against every write near it).
        let versions = match window {
            Some((since, _)) if !attribute => self.versions_from(stream, object.id, since)?,
            _ => self.versions(stream, object.id)?,
        };
        let asked = |v: &VersionRow| {
            window.is_none_or(|(since, until)| v.observed_at > since && v.observed_at <= until)
        };
        // In a count, the versions whose mark answers for their comparison
        // with the version before them (docs/journal.md, "Status-only
        // changes"): the mark links the record just before, which is the
        // version before unless a deletion or a list that did not see the
        // object came between (then there is nothing to compare with, and
        // the writer forgot the digest).
        let vouched: Vec<bool> = (0..versions.len())
            .map(|i| {
                counts
                    && i > 0
                    && versions[i].mark.is_some()
                    && asked(&versions[i])
                    && !versions[i - 1].deleted()
            })
            .collect();
        // Whether each version's body is read: its entry is asked about, or
        // the next version's is (and compares with it), unless a mark
        // answers for that comparison.
        let compared = |i: usize| versions.get(i).is_some_and(|v| asked(v) && !vouched[i]);
        let read_body: Vec<bool> = (0..versions.len())
            .map(|i| compared(i) || compared(i + 1))
            .collect();
        let reading = read_body.iter().filter(|&&r| r).count();
        let mut entries = Vec::new();
        let mut last_seq = i64::MIN;
        let api_version = stream.info.resource.api_version();
        let defaults = [
            ("apiVersion", api_version.as_str()),
            ("kind", stream.info.resource.kind.as_str()),
        ];
        let name = stream.info.name();
        let what = format!("{name} {}", object.name);
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
            for (i, (v, &read_body)) in versions.iter().zip(&read_body).enumerate() {
                // A list that started after the previous version and completed
                // before this one did not see the object: it was gone by then,
                // whatever happened in the gap.
                if present
                    && let Some(b) = stream
                        .baselines
                        .iter()
                        .find(|b| b.token > last_seq && b.seq < v.seq)
                {
                    entries.push(vanished(b, &name));
                    present = false;
                    previous = None;
                }
                let kind = EntryType::of(v.watch_type);
                last_seq = v.seq;
                // Present still: nothing came between it and the version
                // before.
                let vouched = vouched[i] && present;
                let entry = |v: &VersionRow| Entry {
                    changed_unread: vouched && v.mark == Some(Mark::Changed),
                    ..entry(v, kind, &name)
                };
                if kind == EntryType::Deleted {
                    // Nothing to compare, and nothing to compare with next.
                    entries.push(entry(v));
                    present = false;
                    previous = None;
                    continue;
                }
                if !read_body {
                    // Neither this entry nor the next is compared: the next
                    // version has no body before it to compare with.
                    entries.push(entry(v));
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
                // A vouched version is read only for the next to compare with.
                let fill = previous.is_some() && !vouched;
                run.versions
                    .push((fill.then_some(entries.len()), body.clone()));
                entries.push(entry(v));
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
            let mut decoder = self.decoder.take().unwrap_or_default();
            let compared = inline(read, &mut decoder, work);
            *self.decoder.borrow_mut() = Some(decoder);
            compared?
        } else {
            pipeline(&what, read, Decoder::default, work)?
        };
        for (entry, fields) in compared {
            entries[entry].fields = fields;
        }
        if attribute {
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
            entries.push(vanished(b, &name));
        }

        // The stream's gaps, where they fall within the object's recorded life.
        let first = entries.first().map(|e| e.observed_at);
        let end = if entries.last().is_some_and(|e| e.kind == EntryType::Deleted) {
            entries.last().map(|e| e.observed_at)
        } else {
            stream.end(self.now)
        };
        if let (Some(first), Some(end)) = (first, end) {
            let deleted = entries.last().is_some_and(|e| e.kind == EntryType::Deleted);
            entries.extend(gaps_within(stream, first, end, deleted));
        }
        entries.sort_by(|a, b| a.order().cmp(&b.order()));
        mark_relist_findings(stream, &mut entries);
        if attribute {
            self.attribute_relist_entries(&[object.id], &mut entries)?;
        }

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

impl History<'_> {
    /// Who made what `d` reports in `(since, until]` (docs/audit.md): the
    /// actors of the changes of the object's timeline in the window, those
    /// relists found included, every stream that covers it counted.
    pub(super) fn attribute_diff(
        &self,
        d: &mut ObjectDiff,
        window: (i64, i64),
        opts: &DiffOptions,
    ) -> Result<(), HistoryError> {
        let Some(row) = self.journal.object(d.object_id)? else {
            return Ok(());
        };
        let Some(stream) = self.stream(row.stream) else {
            return Ok(());
        };
        let tracked = self.track_row(stream, &row)?;
        let timeline = self.timeline_within(&tracked, opts, Some(window), Reading::Fields)?;
        d.by = diff_by(&timeline.entries, window, d.change, &mut d.fields);
        Ok(())
    }
}

/// Who made what a diff over `window` shows, from the object's timeline
/// `entries`: an added object to its last appearance in the window, a deleted
/// one to its last deletion (the object's `By`, returned); a modified one
/// field by field, to the last change in the window that touched the field
/// (a watched change's actor, or the one a relist-found change gives that
/// field).
fn diff_by(
    entries: &[Entry],
    (since, until): (i64, i64),
    change: Change,
    fields: &mut [Field],
) -> By {
    let in_window =
        |e: &Entry| e.kind != EntryType::Gap && e.observed_at > since && e.observed_at <= until;
    let mut exists = false;
    let (mut made, mut gone) = (None, None);
    for e in entries.iter().filter(|e| e.kind != EntryType::Gap) {
        let appeared = e.kind != EntryType::Deleted && !exists;
        exists = e.kind != EntryType::Deleted;
        if in_window(e) {
            if appeared {
                made = Some(&e.by);
            }
            if e.kind == EntryType::Deleted {
                gone = Some(&e.by);
            }
        }
    }
    match change {
        Change::Added => made.cloned().unwrap_or_default(),
        Change::Deleted => gone.cloned().unwrap_or_default(),
        Change::Modified => {
            for f in fields.iter_mut() {
                let path = f.change.path.to_string();
                f.by = entries
                    .iter()
                    .rev()
                    .filter(|e| in_window(e))
                    .find_map(|e| {
                        let touched = e
                            .fields
                            .iter()
                            .find(|g| related(&g.change.path.to_string(), &path))?;
                        Some(match e.found_by_relist {
                            Some(_) => touched.by.clone(),
                            None => e.by.clone(),
                        })
                    })
                    .unwrap_or_default();
            }
            By::default()
        }
    }
}

impl History<'_> {
    /// Who made the changes relists found, for the entries of a timeline of
    /// the object whose rows are `objects`: found new, changed, or gone.
    fn attribute_relist_entries(
        &self,
        objects: &[i64],
        entries: &mut [Entry],
    ) -> Result<(), HistoryError> {
        let mut previous: Option<String> = None;
        let mut exists = false;
        for e in entries.iter_mut() {
            if e.kind == EntryType::Gap {
                continue;
            }
            let change = match e.kind {
                EntryType::Deleted => Kind::Deleted,
                _ if !exists => Kind::Added,
                _ => Kind::Modified,
            };
            exists = e.kind != EntryType::Deleted;
            let Some(rv) = e.resource_version.clone() else {
                continue;
            };
            if let Some(between) = e.found_by_relist {
                e.by = self.attribute_relist(
                    objects,
                    between,
                    previous.as_deref(),
                    (change, &rv),
                    &mut e.fields,
                )?;
            }
            previous = Some(rv);
        }
        Ok(())
    }

    /// The timeline of an object several streams cover: their versions
    /// merged, one per resourceVersion ([`super::merge`]), and the stretches
    /// none of them watched.
    fn merged_timeline(
        &self,
        tracked: &Tracked<'_>,
        opts: &DiffOptions,
        window: Option<(i64, i64)>,
    ) -> Result<TimelineAnswer, HistoryError> {
        let merged = self.merged(tracked)?;
        let resource = &tracked.resource;
        let api_version = resource.api_version();
        let defaults = [
            ("apiVersion", api_version.as_str()),
            ("kind", resource.kind.as_str()),
        ];
        let what = format!("{} {}", resource.group_resource(), tracked.name);
        let body_error = |detail: String| HistoryError::Body {
            object: what.clone(),
            detail,
        };
        let asked = |at: i64| window.is_none_or(|(since, until)| at > since && at <= until);
        let mut decoder = self.decoder.take().unwrap_or_default();
        let mut entries: Vec<Entry> = Vec::with_capacity(merged.seen.len());
        // The previous present version's JSON, when it was read.
        let mut previous: Option<String> = None;
        for (i, seen) in merged.seen.iter().enumerate() {
            let v = match &seen.what {
                What::Vanished(b) => {
                    let mut e = vanished(b, &tracked.members[seen.member].0.info.name());
                    e.found_by_relist = seen.found_by_relist();
                    entries.push(e);
                    previous = None;
                    continue;
                }
                What::Version(v) => v,
            };
            let mut e = entry(
                v,
                EntryType::of(v.watch_type),
                &tracked.members[seen.member].0.info.name(),
            );
            e.found_by_relist = seen.found_by_relist();
            let next_asked = merged
                .seen
                .get(i + 1)
                .is_some_and(|n| asked(n.observed_at()));
            if v.deleted() || !(asked(v.observed_at) || next_asked) {
                previous = None;
                entries.push(e);
                continue;
            }
            let stored = self.journal.stored_body(v.body, None)?;
            let raw = decoder
                .decode(&stored)
                .map_err(|e| body_error(e.to_string()))?;
            let text = String::from_utf8(raw).map_err(|e| body_error(e.to_string()))?;
            if asked(v.observed_at)
                && let Some(before) = &previous
            {
                e.fields = fields_between(before, &text, opts, &defaults)
                    .map_err(|e| body_error(e.to_string()))?;
            }
            previous = Some(text);
            entries.push(e);
        }
        *self.decoder.borrow_mut() = Some(decoder);
        if self.has_audit() {
            for ((stream, _), versions) in tracked.members.iter().zip(&merged.versions) {
                let found = self.attribute(stream, versions)?;
                for (v, f) in versions.iter().zip(&found) {
                    if v.watch_type.is_none() {
                        continue;
                    }
                    if let Some(e) = entries.iter_mut().find(|e| e.seq == v.seq) {
                        e.by = By::of(f.as_ref());
                        for field in &mut e.fields {
                            field.by = e.by.clone();
                        }
                    }
                }
            }
        }
        let streams: Vec<&StreamHistory> = tracked.members.iter().map(|(s, _)| *s).collect();
        let first = entries.first().map(|e| e.observed_at);
        let end = if entries.last().is_some_and(|e| e.kind == EntryType::Deleted) {
            entries.last().map(|e| e.observed_at)
        } else {
            streams.iter().filter_map(|s| s.end(self.now)).max()
        };
        if let (Some(first), Some(end)) = (first, end) {
            entries.extend(merged_gaps_within(&streams, first, end));
        }
        entries.sort_by(|a, b| a.order().cmp(&b.order()));
        if self.has_audit() {
            let rows: Vec<i64> = tracked
                .members
                .iter()
                .filter_map(|(_, r)| r.as_ref().map(|r| r.id))
                .collect();
            self.attribute_relist_entries(&rows, &mut entries)?;
        }
        let scope = Scope {
            namespace: resource.namespaced.then(|| tracked.namespace.clone()),
            types: Some(vec![resource.clone()]),
        };
        let completeness = self.completeness(&scope, &streams, first, end.unwrap_or(self.now));
        Ok(TimelineAnswer {
            kind: resource.kind.clone(),
            namespace: tracked.namespace.clone(),
            name: tracked.name.clone(),
            entries,
            completeness,
        })
    }
}

/// The gaps of several streams over one object, where none of the others
/// (of those without a label selector) watched, within `(first, end)`.
fn merged_gaps_within(streams: &[&StreamHistory], first: i64, end: i64) -> Vec<Entry> {
    let whole: Vec<&StreamHistory> = streams
        .iter()
        .copied()
        .filter(|s| s.info.selector.is_none())
        .collect();
    let counted = if whole.is_empty() {
        streams.to_vec()
    } else {
        whole
    };
    let mut out = Vec::new();
    for (i, s) in counted.iter().enumerate() {
        let others = Holes::common(
            counted
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, o)| &o.holes),
        );
        for w in &s.coverage.windows {
            let w_to = w.to.unwrap_or(i64::MAX);
            for (a, b) in others.within(w.from, w_to) {
                if b <= first || a >= end {
                    continue;
                }
                let piece = GapWindow {
                    from: a,
                    from_rv: w.from_rv.clone().filter(|_| a == w.from),
                    to: (b < i64::MAX).then_some(b),
                    to_rv: w.to_rv.clone().filter(|_| b == w_to),
                    reason: w.reason.clone(),
                    seq: w.seq,
                };
                out.push(Entry {
                    observed_at: a,
                    resource_version: piece.from_rv.clone(),
                    kind: EntryType::Gap,
                    synthetic: true,
                    fields: Vec::new(),
                    stream: s.info.name(),
                    seq: w.seq,
                    gap: Some(piece),
                    found_by_relist: None,
                    by: By::default(),
                    changed_unread: false,
                });
            }
        }
    }
    out
}

/// The stream's gaps that overlap `(first, end)`, an object's recorded life, as
/// entries. A gap starts after its `from` (covered up to and including it):
/// one that opened at the deletion that ended a life is after it, one that
/// opened at the stream's last durable point (and closed within that
/// millisecond) is still one.
fn gaps_within(stream: &StreamHistory, first: i64, end: i64, deleted: bool) -> Vec<Entry> {
    stream
        .coverage
        .windows
        .iter()
        .filter(|w| w.to.is_none_or(|to| to > first) && (w.from < end || !deleted && w.from == end))
        .map(|w| Entry {
            observed_at: w.from,
            resource_version: w.from_rv.clone(),
            kind: EntryType::Gap,
            synthetic: true,
            fields: Vec::new(),
            gap: Some(w.clone()),
            found_by_relist: None,
            by: By::default(),
            changed_unread: false,
            stream: stream.info.name(),
            seq: w.seq,
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
                e.found_by_relist = Some(stream.relist_window(e.observed_at, e.seq));
            }
            EntryType::Deleted if e.synthetic => {
                e.found_by_relist = Some(stream.relist_window(e.observed_at, e.seq));
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

fn entry(v: &VersionRow, kind: EntryType, stream: &str) -> Entry {
    Entry {
        observed_at: v.observed_at,
        resource_version: Some(v.resource_version.clone()),
        kind,
        synthetic: v.synthetic(),
        fields: Vec::new(),
        gap: None,
        found_by_relist: None,
        by: By::default(),
        changed_unread: false,
        stream: stream.to_string(),
        seq: v.seq,
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

/// Gone from the list `b` ended: deleted while nobody watched.
fn vanished(b: &BaselineRef, stream: &str) -> Entry {
    Entry {
        observed_at: b.observed_at,
        resource_version: Some(b.resource_version.clone()),
        kind: EntryType::Deleted,
        synthetic: true,
        fields: Vec::new(),
        gap: None,
        found_by_relist: None,
        by: By::default(),
        changed_unread: false,
        stream: stream.to_string(),
        seq: b.seq,
    }
}

/// Whether the lists of `stream` left an object's `versions` (from the one
/// a window began with, oldest first) as their events tell them
/// ([`super::count::lists_found_it_as_it_was`]): each item among them has
/// the resourceVersion of the version before it, which was not a deletion.
fn lists_found_nothing_new(stream: &StreamHistory, versions: &[VersionRow]) -> bool {
    let Some(first) = versions.first() else {
        return true;
    };
    let mut found: Vec<i64> = first.list_token.into_iter().collect();
    for pair in versions.windows(2) {
        let (before, v) = (&pair[0], &pair[1]);
        if v.kind == kind::EVENT {
            continue;
        }
        match v.list_token {
            Some(token) if !before.deleted() && before.resource_version == v.resource_version => {
                found.push(token);
            }
            _ => return false,
        }
    }
    let stood_by: Vec<i64> = stream.baselines.iter().map(|b| b.token).collect();
    super::count::lists_found_it_as_it_was(first.seq, &found, &stood_by)
}

#[cfg(test)]
mod diff_by_tests {
    use super::*;
    use crate::audit::{Actor, Attribution, Match};
    use crate::diff::{FieldChange, parse_path};
    use serde_json::json;

    fn by(user: &str) -> By {
        By::of(Some(&Attribution::Known(Actor {
            user: user.into(),
            groups: vec![],
            impersonated_by: None,
            user_agent: None,
            source_ips: vec![],
            audit_id: format!("{user}-id"),
            matched: Match::Exact,
        })))
    }

    fn field(path: &str, who: By) -> Field {
        Field {
            change: FieldChange {
                path: parse_path(path).expect("path"),
                before: Some(json!(1)),
                after: Some(json!(2)),
            },
            manager: None,
            by: who,
        }
    }

    fn entry(at: i64, kind: EntryType, who: By, fields: Vec<Field>, relist: bool) -> Entry {
        Entry {
            observed_at: at,
            resource_version: Some(at.to_string()),
            kind,
            synthetic: relist,
            fields,
            gap: None,
            found_by_relist: relist.then_some(Between {
                from: at - 5,
                to: at,
            }),
            by: who,
            changed_unread: false,
            stream: "configmaps.v1@shop".into(),
            seq: at,
        }
    }

    #[test]
    fn each_field_goes_to_the_last_change_in_the_window_that_made_it() {
        // alice creates (10), edits a (20); a relist finds b changed by bob
        // (30); carol edits a (40, outside the window).
        let entries = vec![
            entry(10, EntryType::Added, by("alice"), vec![], false),
            entry(
                20,
                EntryType::Modified,
                by("alice"),
                vec![field("data.a", By::default())],
                false,
            ),
            entry(
                30,
                EntryType::Baseline,
                by("bob"),
                vec![field("data.b", by("bob"))],
                true,
            ),
            entry(
                40,
                EntryType::Modified,
                by("carol"),
                vec![field("data.a", By::default())],
                false,
            ),
        ];
        let mut fields = vec![
            field("data.a", By::default()),
            field("data.b", By::default()),
        ];
        let object = diff_by(&entries, (15, 35), Change::Modified, &mut fields);
        assert_eq!(object, By::default());
        assert_eq!(fields[0].by, by("alice"));
        assert_eq!(fields[1].by, by("bob"));
        // Added in the window: its creation's actor; before it: nobody's.
        assert_eq!(
            diff_by(&entries, (5, 35), Change::Added, &mut []),
            by("alice")
        );
        assert_eq!(
            diff_by(&entries, (15, 35), Change::Added, &mut []),
            By::default()
        );
        // A field no change in the window touched has no actor.
        let mut other = vec![field("data.c", By::default())];
        diff_by(&entries, (15, 35), Change::Modified, &mut other);
        assert_eq!(other[0].by, By::default());
    }

    #[test]
    fn a_recreated_object_goes_to_its_last_creation_and_deletion() {
        let entries = vec![
            entry(10, EntryType::Added, by("alice"), vec![], false),
            entry(20, EntryType::Deleted, by("bob"), vec![], false),
            entry(30, EntryType::Baseline, by("carol"), vec![], true),
            entry(40, EntryType::Deleted, by("dave"), vec![], true),
        ];
        assert_eq!(
            diff_by(&entries, (0, 35), Change::Added, &mut []),
            by("carol")
        );
        assert_eq!(
            diff_by(&entries, (0, 45), Change::Deleted, &mut []),
            by("dave")
        );
    }

    #[test]
    fn status_only_versions_are_the_modified_ones_with_no_field() {
        let entry = |kind, fields: Vec<Field>| Entry {
            observed_at: 1,
            resource_version: Some("1".into()),
            kind,
            synthetic: false,
            fields,
            gap: None,
            found_by_relist: None,
            by: By::default(),
            changed_unread: false,
            stream: "s".into(),
            seq: 1,
        };
        assert!(entry(EntryType::Modified, vec![]).is_status_only());
        for kind in [EntryType::Added, EntryType::Deleted, EntryType::Baseline] {
            assert!(!entry(kind, vec![]).is_status_only(), "{kind:?}");
        }
        let mut listed = entry(EntryType::Modified, vec![]);
        listed.synthetic = true;
        assert!(!listed.is_status_only());
        let mut found = entry(EntryType::Modified, vec![]);
        found.found_by_relist = Some(Between { from: 0, to: 1 });
        assert!(!found.is_status_only());
    }
}
