//! What happened, in order (docs/output.md, `log`): every change of the objects
//! in scope within `(since, until]`, one entry per change, oldest first, with
//! the gaps of their streams where they fall.
//!
//! Each object's entries come from its timeline, so `log`, `timeline` and
//! `diff` agree on what a change is and which ones only a relist found. A
//! list that saw an object unchanged is no change; a version that changed
//! only server-owned fields (status) is left out, as in `diff`.

use super::complete::Completeness;
use super::count::{Counting, Run, Tally};
use super::diff::{Field, NameFilter};
use super::timeline::{Entry, EntryType, Reading};
use super::tracked::Tracked;
use super::{Between, History, HistoryError, Scope, StreamHistory};
use crate::diff::DiffOptions;
use crate::journal::read::GapWindow;
use crate::journal::versions::{Before, HeadsBelow, ObjectRow, RvKeys, VersionRow};
use crate::journal::{IdMap, IdSet, StreamId};
use crate::model::WatchType;
use crate::time::TimeWindow;
use std::collections::{HashMap, HashSet};

/// What kind of change a log entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogType {
    Added,
    Modified,
    Deleted,
    /// Found by a relist after a gap: it happened at an unknown time `between`.
    Relist(RelistFinding),
    /// A stretch the recording does not cover.
    Gap,
}

/// What a relist found about an object it could not have watched change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelistFinding {
    /// Listed for the first time: created while nobody watched.
    Appeared,
    /// Listed at another resourceVersion than last known.
    Changed,
    /// Absent from the list: deleted while nobody watched.
    Gone,
}

impl LogType {
    pub fn as_str(self) -> &'static str {
        match self {
            LogType::Added => "ADDED",
            LogType::Modified => "MODIFIED",
            LogType::Deleted => "DELETED",
            LogType::Relist(_) => "RELIST",
            LogType::Gap => "GAP",
        }
    }

    /// `added`, `modified` or `deleted`, also for a relist finding
    /// (`None` for a gap).
    pub fn change(self) -> Option<&'static str> {
        match self {
            LogType::Added | LogType::Relist(RelistFinding::Appeared) => Some("added"),
            LogType::Modified | LogType::Relist(RelistFinding::Changed) => Some("modified"),
            LogType::Deleted | LogType::Relist(RelistFinding::Gone) => Some("deleted"),
            LogType::Gap => None,
        }
    }
}

/// One line of the log.
#[derive(Debug, Clone, PartialEq)]
pub struct LogEntry {
    pub observed_at: i64,
    pub kind: LogType,
    /// The object's kind, namespace and name (empty for a gap).
    pub object_kind: String,
    pub namespace: String,
    pub name: String,
    pub resource_version: Option<String>,
    /// For a relist finding: when it happened is known only to be in here.
    pub between: Option<Between>,
    pub fields: Vec<Field>,
    /// For a gap: the stretch, and the streams it is missing from.
    pub gap: Option<(GapWindow, Vec<String>)>,
    /// Who made the change, when audit logs were imported.
    pub by: crate::audit::By,
    /// Where it falls in the journal's order (see
    /// [`super::timeline::Entry::seq`]): its stream's name, and its `seq`
    /// there; a gap that no record opened comes last within its millisecond.
    pub stream: String,
    pub seq: i64,
}

impl LogEntry {
    /// The log's order: time, then stream, then the stream's own order, then
    /// the object.
    pub fn order(&self) -> (i64, &str, i64, &str, &str, &str) {
        (
            self.observed_at,
            &self.stream,
            self.seq,
            &self.namespace,
            &self.object_kind,
            &self.name,
        )
    }
}

pub struct LogAnswer {
    pub entries: Vec<LogEntry>,
    pub completeness: Completeness,
}

/// What one relist found that the watch had not seen: objects listed at
/// another resourceVersion than last known, listed for the first time (or
/// again after a deletion), and known but absent from the list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RelistFindings {
    /// When the findings happened: some time in here.
    pub between: Option<Between>,
    pub changed: Vec<String>,
    pub appeared: Vec<String>,
    pub gone: Vec<String>,
}

impl RelistFindings {
    pub fn count(&self) -> usize {
        self.changed.len() + self.appeared.len() + self.gone.len()
    }
}

impl History<'_> {
    /// What `list` of `stream` found that no watch saw, by object: listed at
    /// another resourceVersion than last known, listed for the first time
    /// (or again after a deletion), or known but absent from it; `None` for
    /// the stream's first list (nothing was known before it). Where another
    /// stream covers the same objects (a `record -A` beside this `-n shop`),
    /// what it watched is no finding.
    pub fn relist_findings(
        &self,
        stream: &super::StreamHistory,
        list: &crate::journal::versions::BaselineRef,
    ) -> Result<Option<Vec<(i64, RelistFinding)>>, HistoryError> {
        let shared = self
            .covering_streams_of(stream)
            .any(|s| s.info.id != stream.info.id);
        let first = stream.baselines.first().is_none_or(|f| f.seq == list.seq);
        // A stream's first list found nothing new by itself; beside other
        // streams, what they knew before it counts (below).
        let before = match (first, shared) {
            (true, false) => return Ok(None),
            (true, true) => Some(Default::default()),
            (false, _) => self.stream_at(stream, list.observed_at - 1)?,
        };
        let Some(before) = before else {
            return Ok(None);
        };
        let after = self
            .stream_at(stream, list.observed_at)?
            .unwrap_or_default();
        let mut found = Vec::new();
        for (id, v) in &after {
            match before.get(id) {
                Some(b) if b.resource_version == v.resource_version => {}
                Some(_) => found.push((*id, RelistFinding::Changed)),
                None => found.push((*id, RelistFinding::Appeared)),
            }
        }
        found.extend(
            before
                .keys()
                .filter(|id| !after.contains_key(id))
                .map(|id| (*id, RelistFinding::Gone)),
        );
        if shared {
            let rows = self.objects(&found.iter().map(|(id, _)| *id).collect())?;
            let mut kept = Vec::with_capacity(found.len());
            for (id, _) in found {
                let Some(row) = rows.get(&id) else { continue };
                let tracked = self.track_row(stream, row)?;
                let merged = self.merged(&tracked)?;
                // The merged history says what this list found: a finding
                // of this stream at its time, and whether it appeared or
                // changed (what the others knew before counts).
                let member = tracked
                    .members
                    .iter()
                    .position(|(s, _)| s.info.id == stream.info.id);
                let mut present = false;
                for s in &merged.seen {
                    if s.observed_at() == list.observed_at
                        && Some(s.member) == member
                        && s.found_by_relist().is_some()
                    {
                        let what = match (s.present(), present) {
                            (false, _) => RelistFinding::Gone,
                            (true, true) => RelistFinding::Changed,
                            (true, false) => RelistFinding::Appeared,
                        };
                        kept.push((id, what));
                        break;
                    }
                    present = s.present();
                }
            }
            found = kept;
        }
        Ok(Some(found))
    }

    /// What the latest list of `stream` found changed since what was known
    /// just before it; `None` when it is the stream's first list (nothing
    /// was known) or there is no list. Names are `namespace/name` for a
    /// stream of every namespace, else `name`; sorted.
    pub fn latest_relist_findings(
        &self,
        stream: &super::StreamHistory,
    ) -> Result<Option<RelistFindings>, HistoryError> {
        let Some(list) = stream.baselines.last() else {
            return Ok(None);
        };
        let Some(found) = self.relist_findings(stream, list)? else {
            return Ok(None);
        };
        let pick = |what: RelistFinding| -> Vec<i64> {
            found
                .iter()
                .filter(|(_, f)| *f == what)
                .map(|(id, _)| *id)
                .collect()
        };
        let (changed, appeared, gone) = (
            pick(RelistFinding::Changed),
            pick(RelistFinding::Appeared),
            pick(RelistFinding::Gone),
        );
        let ids: HashSet<i64> = changed
            .iter()
            .chain(&appeared)
            .chain(&gone)
            .copied()
            .collect();
        let rows = self.objects(&ids)?;
        let names = |ids: Vec<i64>| -> Vec<String> {
            let mut out: Vec<String> = ids
                .iter()
                .filter_map(|id| rows.get(id))
                .map(|o| {
                    // A stream of one namespace names its objects alone.
                    if o.namespace.is_empty() || stream.info.namespace.is_some() {
                        o.name.clone()
                    } else {
                        format!("{}/{}", o.namespace, o.name)
                    }
                })
                .collect();
            out.sort();
            out
        };
        Ok(Some(RelistFindings {
            between: Some(stream.relist_window(list.observed_at, list.seq)),
            changed: names(changed),
            appeared: names(appeared),
            gone: names(gone),
        }))
    }

    /// Every change in `(since, until]` of the objects in scope, oldest first.
    pub fn log(
        &self,
        scope: &Scope,
        names: &NameFilter,
        window: &TimeWindow,
        opts: &DiffOptions,
    ) -> Result<LogAnswer, HistoryError> {
        let (since, until) = (window.since().as_ms(), window.until().as_ms());
        let all = self.streams_for(scope);
        let completeness = self.completeness(scope, &all, Some(since), until);
        let mut entries = Vec::new();
        self.log_timelines(
            scope,
            names,
            window,
            opts,
            &mut |t| entries.extend(changes_of(t, since, until)),
            None,
        )?;
        entries.extend(gaps(&completeness, since, until));
        // Within one instant, stream by stream (by name), each in its
        // journal's order: a gap comes after what was recorded before it and
        // before the list that ended it. Streams' `seq`s interleave
        // differently in a journal their segments were imported into, so
        // they never order two streams (seed 1309 of the truth checker).
        entries.sort_by(|a, b| a.order().cmp(&b.order()));
        Ok(LogAnswer {
            entries,
            completeness,
        })
    }

    /// A default [`History::log`] counted object by object, without the
    /// entries' fields and who made them: where the writer marked a change,
    /// neither version is read, and where it marked every change after the
    /// version the window began with, neither is any other record's body
    /// nor resourceVersion (`browse`'s list, [`super::count`]). One [`LogCount`] per
    /// object timeline with an entry, in no particular order; an object two
    /// unrelated streams hold may have one of each.
    pub fn log_counts(
        &self,
        scope: &Scope,
        names: &NameFilter,
        window: &TimeWindow,
    ) -> Result<Vec<LogCount>, HistoryError> {
        let (since, until) = (window.since().as_ms(), window.until().as_ms());
        let out = std::cell::RefCell::new(Vec::new());
        self.log_timelines(
            scope,
            names,
            window,
            &DiffOptions::default(),
            &mut |t| out.borrow_mut().extend(count_of(t, since, until)),
            Some(&mut |c| out.borrow_mut().push(c)),
        )?;
        Ok(out.into_inner())
    }

    /// The timeline of every object in scope with a record in the window,
    /// or present before a list in it, handed to `visit`. With `counted`, the
    /// timelines are read for counting, and an object one stream holds whose
    /// count the heads of its records tell ([`super::count`]) is counted
    /// there instead.
    fn log_timelines(
        &self,
        scope: &Scope,
        names: &NameFilter,
        window: &TimeWindow,
        opts: &DiffOptions,
        visit: &mut dyn FnMut(super::timeline::TimelineAnswer),
        mut counted: Option<&mut dyn FnMut(LogCount)>,
    ) -> Result<(), HistoryError> {
        let reading = if counted.is_some() {
            Reading::Counts
        } else {
            Reading::Fields
        };
        let (since, until) = (window.since().as_ms(), window.until().as_ms());
        let all = self.streams_for(scope);
        let (alone, shared) = super::diff::alone_and_shared(&all);
        for streams in alone
            .iter()
            .map(std::slice::from_ref)
            .chain([shared.as_slice()])
        {
            if streams.is_empty() {
                continue;
            }
            let ids: IdSet<_> = streams.iter().map(|s| s.info.id).collect();
            // A count reads the heads of the records of every object one
            // stream holds in one pass, which also finds the objects the
            // window touched (the timelines of objects several hold are
            // merged); marks are what a default diff sees.
            let mut heads = match (&counted, streams) {
                (Some(_), [_]) if *opts == DiffOptions::default() => {
                    Some(self.heads(&ids, since, until)?)
                }
                _ => None,
            };
            // Objects with a record in the window, read once for these streams.
            let touched = match &mut heads {
                Some(h) => self.objects(&std::mem::take(&mut h.touched).into_iter().collect())?,
                None => self.objects(&self.journal.touched_objects(&ids, since, until)?)?,
            };
            // And, when a relist falls in the window, those present before it
            // (it may have found them gone): those whose last version before
            // it is not a deletion, a few more perhaps, whose timelines then
            // hold nothing in the window. A list without a selector lists
            // every object of its scope, so it also finds gone what another
            // stream held there (a `-n pay` recorder started after an `-A`
            // one stopped): their timelines are merged.
            let mut before_list: HashSet<i64> = HashSet::new();
            for stream in streams {
                for list in stream
                    .baselines
                    .iter()
                    .filter(|b| b.observed_at > since && b.observed_at <= until)
                {
                    for holder in streams.iter().filter(|o| {
                        o.info.id == stream.info.id
                            || stream.info.selector.is_none() && o.shares_objects_with(stream)
                    }) {
                        // Another stream's records are in time order with
                        // the list's, not in `seq` order (an imported lane).
                        let (namespace, before) = if holder.info.id == stream.info.id {
                            (None, Before::Seq(list.token))
                        } else {
                            (
                                stream.info.namespace.as_deref(),
                                Before::Time(list.observed_at),
                            )
                        };
                        let present = self.journal.objects_maybe_present_before(
                            holder.info.id,
                            namespace,
                            before,
                            &|id| !touched.contains_key(&id) && !before_list.contains(&id),
                        )?;
                        before_list.extend(present);
                    }
                }
            }
            let before_list = self.objects(&before_list)?;
            let mut rows: Vec<(&StreamHistory, &ObjectRow)> = touched
                .values()
                .chain(before_list.values())
                .filter_map(|o| {
                    let s = streams.iter().find(|s| s.info.id == o.stream)?;
                    scope.holds(s, o, names).then_some((*s, o))
                })
                .collect();
            rows.sort_by(|a, b| {
                (&a.1.namespace, &a.1.name, a.1.stream).cmp(&(
                    &b.1.namespace,
                    &b.1.name,
                    b.1.stream,
                ))
            });
            let mut keys = RvKeys::default();
            let mut told = match (heads, streams) {
                (Some(mut heads), [stream]) => {
                    keys = heads.keys;
                    self.tally(
                        stream,
                        rows.iter().map(|(_, o)| *o),
                        (since, until),
                        (heads.runs, &mut heads.below),
                        &mut keys,
                    )?
                }
                _ => HashMap::new(),
            };
            let mut done: HashSet<(String, String, String, String)> = HashSet::new();
            for (stream, o) in rows {
                let key = (
                    stream.info.resource.group.clone(),
                    stream.info.resource.resource.clone(),
                    o.namespace.clone(),
                    o.name.clone(),
                );
                if !done.insert(key) {
                    continue;
                }
                if let (Some(count), Some(tally)) = (counted.as_mut(), told.remove(&o.id)) {
                    if let Some(c) = self.count_told(stream, o, tally, &keys)? {
                        count(c);
                    }
                    continue;
                }
                let tracked = if streams.len() == 1 {
                    Tracked {
                        resource: stream.info.resource.clone(),
                        namespace: o.namespace.clone(),
                        name: o.name.clone(),
                        members: vec![(stream, Some(o.clone()))],
                    }
                } else {
                    self.track_row(stream, o)?
                };
                visit(self.timeline_within(&tracked, opts, Some((since, until)), reading)?);
            }
        }
        Ok(())
    }
}

/// The heads of a stream's records from the first after every one observed
/// by a window's start, read once ([`History::heads`]).
struct Heads {
    /// The objects with a record in the window.
    touched: IdSet<i64>,
    /// Each object's versions in that pass, counted.
    runs: IdMap<i64, Run>,
    /// The keys of their resourceVersions, for the versions before them.
    keys: RvKeys,
    /// The heads before them of the blocks the pass read.
    below: HeadsBelow,
}

impl History<'_> {
    /// The objects of `streams` with a record in `(since, until]`, and the
    /// heads of their records after every one observed by `since`, in one
    /// pass along those records (the window's records before them, which
    /// the zones that begin before them hold, looked through for the rest
    /// of the objects). Records after every one observed by `until` are
    /// not read, and no list among them changes a count (a list that could
    /// is one started after an object's start, which [`Counting::finish`]
    /// refuses): a window a week back reads its week, not the week since.
    fn heads(
        &self,
        streams: &IdSet<StreamId>,
        since: i64,
        until: i64,
    ) -> Result<Heads, HistoryError> {
        let from = self.bounds.at(since).saturating_add(1);
        let to = self.bounds.at(until);
        let mut touched = self
            .journal
            .touched_objects_before(streams, since, until, from)?;
        let mut runs: IdMap<i64, Run> = IdMap::default();
        let mut keys = RvKeys::default();
        let mut below = HeadsBelow::new(since);
        self.journal.visit_version_heads_from(
            streams,
            (from, to),
            &mut keys,
            Some(&mut below),
            |v| {
                if v.observed_at > since && v.observed_at <= until {
                    touched.insert(v.object);
                }
                match runs.get_mut(&v.object) {
                    Some(run) => run.step(v),
                    None => {
                        runs.insert(v.object, Run::new(since, until, v));
                    }
                }
            },
        )?;
        Ok(Heads {
            touched,
            runs,
            keys,
            below,
        })
    }

    /// The counts of changes in `(since, until]` that the heads of the
    /// records of `objects` (of `stream`) tell, by object: from the version
    /// each began the window with ([`History::versions_from`]'s) up to every
    /// record observed by `since`, found walking down its records, then
    /// `runs`, those after, from [`History::heads`].
    fn tally<'o>(
        &self,
        stream: &StreamHistory,
        objects: impl Iterator<Item = &'o ObjectRow>,
        (since, until): (i64, i64),
        (mut runs, below): (IdMap<i64, Run>, &mut HeadsBelow),
        keys: &mut RvKeys,
    ) -> Result<HashMap<i64, Tally>, HistoryError> {
        // Every record observed by `since` has a `seq` up to this.
        let bound = self.bounds.at(since);
        let mut out = HashMap::new();
        for o in objects {
            let (versions, started) = self.journal.object_heads_down_to(
                o.id,
                since,
                bound,
                &stream.lists,
                &below.take(o.id),
                keys,
            )?;
            let start = versions.first().filter(|_| started);
            let mut c = Counting::new(since, until, start)
                .with_first_list(stream.baselines.first().map(|b| b.token));
            for v in &versions[usize::from(started)..] {
                c.step(v);
            }
            if let Some(run) = runs.remove(&o.id) {
                c = c.then(run);
            }
            if let Some(t) = c.finish(stream.baselines.iter().map(|b| b.token)) {
                out.insert(o.id, t);
            }
        }
        Ok(out)
    }

    /// What [`count_of`] makes of the timeline of `object`, from the count
    /// its records' heads told (`keys` gave their resourceVersions' keys).
    fn count_told(
        &self,
        stream: &StreamHistory,
        object: &ObjectRow,
        tally: Tally,
        keys: &RvKeys,
    ) -> Result<Option<LogCount>, HistoryError> {
        let Some(last) = tally.last else {
            return Ok(None);
        };
        // The last change's version, made from its head (an event's), not
        // read again: a seek, or a block decoded, for each object listed.
        let version = match keys.text(last.rv) {
            Some(resource_version) => Some(VersionRow {
                seq: last.seq,
                stream: stream.info.id,
                object: object.id,
                kind: crate::journal::schema::kind::EVENT,
                observed_at: last.observed_at,
                watch_type: Some(last.watch_type),
                resource_version,
                body: last.body,
                list_token: None,
                mark: last.mark,
            }),
            None => self.journal.object_version(object.id, last.seq)?,
        };
        // What the truth checker's debug builds hold it to: the version as
        // read.
        #[cfg(debug_assertions)]
        if version.is_some() {
            let read = self.journal.object_version(object.id, last.seq)?;
            assert_eq!(version, read, "a counted version made from its head");
        }
        let resource_version = version.as_ref().map(|v| v.resource_version.clone());
        let name = stream.info.name();
        let last = LogEntry {
            observed_at: last.observed_at,
            kind: match last.watch_type {
                WatchType::Added => LogType::Added,
                WatchType::Modified => LogType::Modified,
                WatchType::Deleted => LogType::Deleted,
            },
            object_kind: stream.info.resource.kind.clone(),
            namespace: object.namespace.clone(),
            name: object.name.clone(),
            resource_version,
            between: None,
            fields: Vec::new(),
            gap: None,
            by: crate::audit::By::default(),
            stream: name.clone(),
            seq: last.seq,
        };
        Ok(Some(LogCount {
            object_kind: stream.info.resource.kind.clone(),
            namespace: object.namespace.clone(),
            name: object.name.clone(),
            changes: tally.changes,
            relist: false,
            streams: vec![name],
            last,
            version,
        }))
    }
}

/// The log entries of one object's timeline: its changes within
/// `(since, until)`; a list that found nothing new, and a version that
/// changed nothing asked about, are none.
fn changes_of(t: super::timeline::TimelineAnswer, since: i64, until: i64) -> Vec<LogEntry> {
    let mut out = Vec::new();
    let types = log_types(&t.entries, since, until);
    for (e, kind) in t.entries.into_iter().zip(types) {
        let Some(kind) = kind else { continue };
        out.push(LogEntry {
            observed_at: e.observed_at,
            kind,
            object_kind: t.kind.clone(),
            namespace: t.namespace.clone(),
            name: t.name.clone(),
            resource_version: e.resource_version,
            between: e.found_by_relist,
            fields: e.fields,
            gap: None,
            by: e.by,
            stream: e.stream,
            seq: e.seq,
        });
    }
    out
}

/// What each entry of a timeline is in the log of `(since, until)`: `None`
/// for none (outside the window, a gap, a list that found nothing new, a
/// version that changed nothing asked about).
fn log_types(entries: &[Entry], since: i64, until: i64) -> Vec<Option<LogType>> {
    // Whether the object existed just before an entry.
    let mut present = false;
    entries
        .iter()
        .map(|e| {
            if e.kind == EntryType::Gap {
                return None;
            }
            let existed = std::mem::replace(&mut present, e.kind != EntryType::Deleted);
            if e.observed_at <= since || e.observed_at > until {
                return None;
            }
            let changed = !e.fields.is_empty() || e.changed_unread;
            Some(match (e.kind, e.found_by_relist) {
                (EntryType::Gap, _) => return None,
                (EntryType::Deleted, Some(_)) => LogType::Relist(RelistFinding::Gone),
                (_, Some(_)) if !existed => LogType::Relist(RelistFinding::Appeared),
                // Changed only where nobody asked to look (status).
                (_, Some(_)) if !changed => return None,
                (_, Some(_)) => LogType::Relist(RelistFinding::Changed),
                // A list that found nothing new.
                (EntryType::Baseline, None) => return None,
                (EntryType::Modified, None) if !changed => return None,
                (EntryType::Added, None) => LogType::Added,
                (EntryType::Modified, None) => LogType::Modified,
                (EntryType::Deleted, None) => LogType::Deleted,
            })
        })
        .collect()
}

/// One object timeline's entries in a log, counted ([`History::log_counts`]).
#[derive(Debug, Clone, PartialEq)]
pub struct LogCount {
    pub object_kind: String,
    pub namespace: String,
    pub name: String,
    /// How many entries.
    pub changes: usize,
    /// Whether a relist found one of them.
    pub relist: bool,
    /// The streams the entries came from, each once.
    pub streams: Vec<String>,
    /// The last entry, in the log's order; without fields, nor who made it.
    pub last: LogEntry,
    /// The last entry's version, when the count read it.
    pub version: Option<VersionRow>,
}

/// The entries of one object's timeline in the log of `(since, until)`,
/// counted; `None` when it has none.
fn count_of(t: super::timeline::TimelineAnswer, since: i64, until: i64) -> Option<LogCount> {
    let types = log_types(&t.entries, since, until);
    let (mut changes, mut relist, mut streams) = (0, false, Vec::<String>::new());
    let mut last: Option<(&Entry, LogType)> = None;
    for (e, kind) in t.entries.iter().zip(&types) {
        let Some(kind) = *kind else { continue };
        changes += 1;
        relist |= matches!(kind, LogType::Relist(_));
        if !streams.contains(&e.stream) {
            streams.push(e.stream.clone());
        }
        // Within one object, the log's order is the timeline's.
        if last.is_none_or(|(l, _)| l.order() <= e.order()) {
            last = Some((e, kind));
        }
    }
    let (e, kind) = last?;
    let last = LogEntry {
        observed_at: e.observed_at,
        kind,
        object_kind: t.kind.clone(),
        namespace: t.namespace.clone(),
        name: t.name.clone(),
        resource_version: e.resource_version.clone(),
        between: e.found_by_relist,
        fields: Vec::new(),
        gap: None,
        by: crate::audit::By::default(),
        stream: e.stream.clone(),
        seq: e.seq,
    };
    Some(LogCount {
        object_kind: t.kind,
        namespace: t.namespace,
        name: t.name,
        changes,
        relist,
        streams,
        last,
        version: None,
    })
}

/// What the answer does not cover, as log entries where each stretch starts:
/// stretches with the same reason that overlap are one entry naming every
/// stream they hit (a recorder restart or a 410 leaves a gap in each).
fn gaps(completeness: &Completeness, since: i64, until: i64) -> Vec<LogEntry> {
    let mut out: Vec<(i64, i64, LogEntry)> = Vec::new();
    for m in &completeness.missing {
        let (from, to) = (m.from.unwrap_or(since), m.to.unwrap_or(until));
        let same = |(f, t, e): &&mut (i64, i64, LogEntry)| {
            *f <= to
                && from <= *t
                && e.gap
                    .as_ref()
                    .is_some_and(|(g, _)| super::complete::same_cause(&g.reason, &m.reason))
        };
        match out.iter_mut().find(same) {
            Some((f, t, e)) => {
                *f = (*f).min(from);
                *t = (*t).max(to);
                if let Some((g, streams)) = &mut e.gap {
                    g.from = g.from.min(from);
                    g.to = match (g.to, m.to.filter(|&t| t < until)) {
                        (Some(a), Some(b)) => Some(a.max(b)),
                        _ => None,
                    };
                    if !streams.contains(&m.stream) {
                        streams.push(m.stream.clone());
                        streams.sort();
                    }
                }
                // Ordered as the stream whose stretch starts first (by name
                // among those that start together).
                let starts = from.max(since);
                if (starts, &m.stream) < (e.observed_at, &e.stream) {
                    e.stream = m.stream.clone();
                    e.seq = m.seq.unwrap_or(i64::MAX);
                }
                e.observed_at = e.observed_at.min(starts);
            }
            None => out.push((
                from,
                to,
                LogEntry {
                    // A stretch that began before the window shows at its start.
                    observed_at: from.max(since),
                    kind: LogType::Gap,
                    object_kind: String::new(),
                    namespace: String::new(),
                    name: String::new(),
                    resource_version: None,
                    between: None,
                    fields: Vec::new(),
                    gap: Some((
                        GapWindow {
                            from,
                            from_rv: None,
                            // Open when it lasts past the window.
                            to: m.to.filter(|&t| t < until),
                            to_rv: None,
                            reason: m.reason.clone(),
                            seq: m.seq.unwrap_or(i64::MAX),
                        },
                        vec![m.stream.clone()],
                    )),
                    by: Default::default(),
                    stream: m.stream.clone(),
                    seq: m.seq.unwrap_or(i64::MAX),
                },
            )),
        }
    }
    out.into_iter().map(|(_, _, e)| e).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relist_findings_read_as_the_change_they_were() {
        assert_eq!(
            LogType::Relist(RelistFinding::Gone).change(),
            Some("deleted")
        );
        assert_eq!(
            LogType::Relist(RelistFinding::Appeared).change(),
            Some("added")
        );
        assert_eq!(LogType::Relist(RelistFinding::Changed).as_str(), "RELIST");
        assert_eq!(LogType::Gap.change(), None);
    }
}
