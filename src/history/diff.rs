//! What changed between two times (docs/architecture.md §5): only objects with a record in
//! `(since, until]` can differ (plus, when a relist falls in the window, the
//! objects that relist no longer saw); each is compared field by field between
//! its state at both ends. A relist that saw an unchanged object is no change.

use super::complete::Completeness;
use super::merge::{self, Member, Seen};
use super::pipeline;
use super::state::Reading;
use super::{Between, History, HistoryError, Scope, StreamHistory};
use crate::audit::By;
use crate::diff::{DiffOptions, FieldChange, diff_objects, field_manager, owned_changes};
use crate::journal::versions::{DecodedBlock, Decoder, ObjectRow, StoredBody, WindowRecord};
use crate::journal::{IdMap, IdSet, Journal, StreamId};
use crate::time::TimeWindow;
use serde_json::Value;
use std::sync::{Arc, Mutex};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Change {
    Added,
    Deleted,
    Modified,
}

impl Change {
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Added => "added",
            Change::Deleted => "deleted",
            Change::Modified => "modified",
        }
    }
}

/// One changed field, with the field manager that owned it after the change
/// (in JSON: `path`, `before`, `after`, `manager`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Field {
    #[serde(flatten)]
    pub change: FieldChange,
    pub manager: Option<String>,
    /// Who made it, when audit logs were imported (`actor`, `actor_unknown`).
    #[serde(flatten)]
    pub by: By,
}

impl By {
    /// Whether `--by USER` keeps a change made by `self` with `fields`, and
    /// which of its fields: all when the change is the user's, else those
    /// that are (a change a relist found may have several authors).
    pub fn keeps(&self, user: &str, fields: &mut Vec<Field>) -> bool {
        if self.is(user) {
            return true;
        }
        fields.retain(|f| f.by.is(user));
        !fields.is_empty()
    }
}

/// One object that differs between the two times.
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectDiff {
    pub kind: String,
    pub api_version: String,
    pub namespace: String,
    pub name: String,
    pub stream: String,
    pub change: Change,
    /// Both versions, when asked for (`None` for the side where it is absent).
    pub before: Option<Value>,
    pub after: Option<Value>,
    /// Field changes (for `modified`; empty for added and deleted objects).
    pub fields: Vec<Field>,
    /// Set when only a relist revealed the change (it happened while nobody
    /// watched): when it happened is not known, only this stretch. For an
    /// added object, its appearance; for a deleted one, its disappearance.
    pub found_by_relist: Option<Between>,
    /// For an added or deleted object a watch saw appear or go: when.
    pub observed_at: Option<i64>,
    /// For an added object a watch saw appear: a later change that only a
    /// relist found, at an unknown time in this stretch.
    pub changed_between: Option<Between>,
    /// The object's row in the journal.
    pub object_id: i64,
    /// For an added or deleted object: who created or deleted it (when audit
    /// logs were imported).
    pub by: By,
}

/// Narrows a diff to some objects by name (`TYPE/NAME` arguments).
#[derive(Debug, Clone, Default)]
pub struct NameFilter {
    /// (group, resource, name) of the named objects; empty: no narrowing.
    pub objects: Vec<(String, String, String)>,
    /// (group, resource) of types asked for whole next to named objects.
    pub whole_types: Vec<(String, String)>,
}

impl NameFilter {
    pub(super) fn allows(&self, s: &StreamHistory, name: &str) -> bool {
        let (g, r) = (&s.info.resource.group, &s.info.resource.resource);
        self.objects.is_empty()
            || self.whole_types.iter().any(|(wg, wr)| wg == g && wr == r)
            || self
                .objects
                .iter()
                .any(|(og, or, on)| og == g && or == r && on == name)
    }
}

pub struct DiffAnswer {
    /// Boxed: each is a few hundred bytes, and the answer is put in order
    /// without moving them ([`in_answer_order`]).
    pub objects: Vec<Box<ObjectDiff>>,
    pub completeness: Completeness,
}

impl History<'_> {
    /// Objects added, deleted and modified between `since` and `until`.
    /// With `keep_objects`, each [`ObjectDiff`] also carries both versions (for
    /// unified diffs); otherwise only the field changes are kept.
    pub fn diff(
        &self,
        scope: &Scope,
        names: &NameFilter,
        window: &TimeWindow,
        opts: &DiffOptions,
        keep_objects: bool,
    ) -> Result<DiffAnswer, HistoryError> {
        let (since, until) = (window.since().as_ms(), window.until().as_ms());
        let all = self.streams_for(scope);
        let completeness = self.completeness(scope, &all, Some(since), until);
        // A stream no other one shares objects with answers alone, on the
        // pipeline below; streams that share objects are merged per object.
        let (streams, shared) = alone_and_shared(&all);
        let ids: IdSet<_> = streams.iter().map(|s| s.info.id).collect();
        // Connections for the comparing threads, opened once there are enough
        // candidates: each thread then reads its own candidates.
        let pool: Mutex<Vec<(i64, Journal)>> = Mutex::new(Vec::new());
        let mut own = false;
        let mut tried = false;
        let mut counted = 0;
        let bounds = &self.bounds;
        let mut objects = pipeline::pipeline(
            "diff",
            |send| {
                // This thread finds the candidates as it scans the window, and
                // the comparing threads start on the first ones meanwhile.
                self.candidates(&streams, &ids, since, until, opts, &mut |batch| {
                    counted += batch.len();
                    if !tried && counted >= self.beside_from {
                        tried = true;
                        // Connections beside only speed the answer up: without
                        // them (a prune ran since, or one failed to open) this
                        // thread reads everything, as for a small diff.
                        if let Ok(Some(connections)) = self.helpers(pipeline::workers())
                            && let Ok(mut pool) = pool.lock()
                        {
                            pool.extend(connections);
                            own = true;
                        }
                    }
                    if own {
                        let jobs = batch.into_iter().map(|c| (c.index, Job::Unread(c)));
                        return Ok(send(jobs.collect()));
                    }
                    let mut jobs = Vec::with_capacity(batch.len());
                    for c in batch {
                        if let Some(pair) = read_pair(self.reading(), &c, scope, names, opts)? {
                            jobs.push((c.index, Job::Read(Box::new(pair))));
                        }
                    }
                    Ok(send(jobs))
                })
            },
            || Worker {
                decoder: Decoder::default(),
                journal: None,
            },
            |worker, batch: Vec<(usize, Job<'_>)>, out| {
                for (index, job) in batch {
                    let pair = match job {
                        Job::Read(pair) => Some(*pair),
                        Job::Unread(c) => {
                            if worker.journal.is_none() {
                                worker.journal = pool.lock().ok().and_then(|mut p| p.pop());
                            }
                            let Some((highest, journal)) = &worker.journal else {
                                return Err(HistoryError::Body {
                                    object: "diff".into(),
                                    detail: "a comparing thread has no connection".into(),
                                });
                            };
                            let reading = Reading {
                                journal,
                                bounds,
                                highest: *highest,
                            };
                            read_pair(reading, &c, scope, names, opts)?
                        }
                    };
                    if let Some(pair) = pair
                        && let Some(d) = compare(&mut worker.decoder, &pair, opts, keep_objects)?
                    {
                        // Boxed: the list grows as they come, and moves
                        // each element when it does.
                        out.push((index, Box::new(d)));
                    }
                }
                Ok(())
            },
        )?;
        let merged = self.merged_diff(&shared, scope, names, (since, until), opts, keep_objects)?;
        objects.extend(merged.into_iter().map(|(i, d)| (i, Box::new(d))));
        let mut objects = in_answer_order(objects);
        if self.has_audit() {
            for d in &mut objects {
                self.attribute_diff(d, (since, until), opts)?;
            }
        }
        Ok(DiffAnswer {
            objects,
            completeness,
        })
    }

    /// Finds the objects that may differ, each with the stretch of the window
    /// its stream answers for (whether the question is about them is up to
    /// [`read_pair`]), and hands them to `found` in batches until it returns
    /// false. For a default diff, an object whose every change in its stretch
    /// the recorder marked status-only is not handed over at all, when the
    /// records say so without looking up its versions ([`Quiet`]).
    fn candidates<'h>(
        &'h self,
        streams: &[&'h StreamHistory],
        ids: &IdSet<StreamId>,
        since: i64,
        until: i64,
        opts: &DiffOptions,
        found: &mut dyn FnMut(Vec<Candidate<'h>>) -> Result<bool, HistoryError>,
    ) -> Result<(), HistoryError> {
        // Each stream answers for the part of the window it covers: changes
        // count from its first baseline, and end where its watch ended.
        let mut spans: IdMap<StreamId, Candidate<'h>> = IdMap::default();
        for (index, stream) in streams.iter().enumerate() {
            let Some(from) = stream.from() else { continue };
            let t1 = since.max(from);
            let t2 = until.min(stream.end(self.now).unwrap_or(until));
            if t1 < t2 {
                // The stream's stretch, as a candidate its objects are made from.
                let object = 0;
                spans.insert(
                    stream.info.id,
                    Candidate {
                        index,
                        stream,
                        object,
                        t1,
                        t2,
                        block: None,
                    },
                );
            }
        }
        let mut quiet = Quiet::new(self, &spans, (since, until), opts)?;
        let mut seen: IdMap<StreamId, IdSet<i64>> = IdMap::default();
        let mut batch = Vec::with_capacity(BATCH);
        let mut going = true;
        let mut send = |batch: &mut Vec<Candidate<'h>>, c: Candidate<'h>| {
            batch.push(c);
            if batch.len() >= BATCH {
                going = found(std::mem::take(batch))?;
            }
            Ok::<_, HistoryError>(going)
        };
        self.journal.visit_window(ids, since, until, |r, block| {
            let Some(span) = spans.get(&r.stream) else {
                return Ok(true);
            };
            // A block holds one object's records.
            let held = |c: Candidate<'h>| Candidate {
                block: block.filter(|_| c.object == r.object).cloned(),
                ..c
            };
            if let Some(now) = quiet.take(&r, span) {
                for c in now {
                    if !send(&mut batch, held(c))? {
                        return Ok(false);
                    }
                }
                return Ok(true);
            }
            let asked = r.observed_at > since && r.observed_at <= until;
            if asked && seen.entry(r.stream).or_default().insert(r.object) {
                let c = Candidate {
                    object: r.object,
                    ..span.clone()
                };
                return send(&mut batch, held(c));
            }
            Ok::<_, HistoryError>(true)
        })?;
        for c in quiet.finish() {
            if !send(&mut batch, c)? {
                break;
            }
        }
        // A relist in the window can drop objects without a record of theirs
        // in it (deleted during a gap): everything present at t1 may differ.
        for span in spans.values().filter(|_| going) {
            let (stream, t1, t2) = (span.stream, span.t1, span.t2);
            if !stream
                .baselines
                .iter()
                .any(|b| b.observed_at > t1 && b.observed_at <= t2)
            {
                continue;
            }
            let Some(present) = self.stream_at(stream, t1)? else {
                continue;
            };
            let touched = seen.entry(stream.info.id).or_default();
            for &object in present.keys() {
                if touched.insert(object) {
                    batch.push(Candidate {
                        object,
                        ..span.clone()
                    });
                }
            }
        }
        if going && !batch.is_empty() {
            found(batch)?;
        }
        Ok(())
    }

    /// A connection beside this history's for each of `n` comparing threads,
    /// each with the highest `seq` it may read; `None` when history was pruned
    /// since this history's snapshot (then this thread reads everything).
    fn helpers(&self, n: usize) -> Result<Option<Vec<(i64, Journal)>>, HistoryError> {
        let mark = self.journal.snapshot_mark()?;
        let mut connections = Vec::with_capacity(n);
        for _ in 0..n {
            match self.journal.beside(mark)? {
                Some(c) => connections.push((mark.highest, c)),
                None => return Ok(None),
            }
        }
        Ok(Some(connections))
    }
}

impl History<'_> {
    /// The differences of the objects that several of `shared` hold: each
    /// object's versions merged across them ([`super::tracked`]), compared
    /// between its states at both ends, in the order the pipeline's are.
    fn merged_diff(
        &self,
        shared: &[&StreamHistory],
        scope: &Scope,
        names: &NameFilter,
        (since, until): (i64, i64),
        opts: &DiffOptions,
        keep_objects: bool,
    ) -> Result<Vec<(usize, ObjectDiff)>, HistoryError> {
        if shared.is_empty() {
            return Ok(Vec::new());
        }
        let ids: IdSet<_> = shared.iter().map(|s| s.info.id).collect();
        let mut candidates: std::collections::HashSet<i64> =
            self.journal.touched_objects(&ids, since, until)?;
        // A list in the window may have found objects gone without a record
        // of theirs in it.
        for s in shared {
            for list in s
                .baselines
                .iter()
                .filter(|b| b.observed_at > since && b.observed_at <= until)
            {
                if let Some(present) = self.stream_at(s, list.observed_at - 1)? {
                    candidates.extend(present.keys());
                }
            }
        }
        let rows = self.objects(&candidates)?;
        let mut keys: Vec<(usize, &ObjectRow)> = rows
            .values()
            .filter_map(|o| {
                let i = shared.iter().position(|s| s.info.id == o.stream)?;
                scope.holds(shared[i], o, names).then_some((i, o))
            })
            .collect();
        keys.sort_by(|a, b| {
            (&a.1.namespace, &a.1.name, a.0).cmp(&(&b.1.namespace, &b.1.name, b.0))
        });
        let mut done: std::collections::HashSet<(String, String, String, String)> =
            Default::default();
        let mut decoder = Decoder::default();
        let mut out = Vec::new();
        for (index, row) in keys {
            let stream = shared[index];
            let key = (
                stream.info.resource.group.clone(),
                stream.info.resource.resource.clone(),
                row.namespace.clone(),
                row.name.clone(),
            );
            if !done.insert(key) {
                continue;
            }
            let tracked = self.track_row(stream, row)?;
            let merged = self.merged(&tracked)?;
            // Changes count from when the object's state is first known: the
            // first list of a stream that covers it whole; of any, when all
            // have a selector or no whole one began before the window ended
            // (a `record -A` started after it: seed 3212 of the truth checker).
            let first_of = |whole: bool| {
                tracked
                    .members
                    .iter()
                    .filter(|(s, _)| !whole || s.info.selector.is_none())
                    .filter_map(|(s, _)| s.from())
                    .min()
            };
            let Some(first) = first_of(true)
                .filter(|&f| f < until)
                .or_else(|| first_of(false))
            else {
                continue;
            };
            let t1 = since.max(first);
            if t1 >= until {
                // Nothing known of it in the window.
                continue;
            }
            let (b, a) = (
                merged.state_at(&tracked, t1),
                merged.state_at(&tracked, until),
            );
            let (b, a) = (b.version(), a.version());
            if b.is_none() && a.is_none()
                || matches!((b, a), (Some(b), Some(a)) if b.body == a.body)
            {
                continue;
            }
            let change = match (b, a) {
                (None, Some(_)) => Change::Added,
                (Some(_), None) => Change::Deleted,
                _ => Change::Modified,
            };
            let read = |v: Option<&crate::journal::versions::VersionRow>| {
                v.map(|v| self.journal.stored_body(v.body, None).map(Arc::new))
                    .transpose()
            };
            let holder = a.or(b).map_or(stream, |v| tracked.stream_of(v));
            let pair = Pair {
                stream: holder,
                object: row.clone(),
                before: read(b)?,
                after: read(a)?,
                labels: labels(&merged.seen, t1, until, change),
            };
            if let Some(d) = compare(&mut decoder, &pair, opts, keep_objects)? {
                out.push((index, d));
            }
        }
        Ok(out)
    }
}

/// Streams that share no object with another of `all` (they answer alone),
/// and those that do ([`StreamHistory::shares_objects_with`]).
pub(super) fn alone_and_shared<'s>(
    all: &[&'s StreamHistory],
) -> (Vec<&'s StreamHistory>, Vec<&'s StreamHistory>) {
    all.iter().partition(|s| {
        !all.iter()
            .any(|o| o.info.id != s.info.id && s.shares_objects_with(o))
    })
}

/// An object that may differ, and the stretch `(t1, t2]` its stream answers for.
#[derive(Clone)]
struct Candidate<'h> {
    /// Its stream's place among the streams (objects of one stream differ by
    /// name, so only objects of two streams can tie in the answer's order).
    index: usize,
    stream: &'h StreamHistory,
    object: i64,
    t1: i64,
    t2: i64,
    /// The object's block the window's scan decoded, with the object's
    /// row, when a record of it made the object a candidate: whoever reads
    /// the pair does not read either again.
    block: Option<DecodedBlock>,
}

/// What a comparing thread gets: a pair read for it, or a candidate to read
/// on its own connection.
enum Job<'h> {
    Read(Box<Pair<'h>>),
    Unread(Candidate<'h>),
}

/// A comparing thread's own: its decoder, and once it reads, its connection
/// with the highest `seq` it may read there.
struct Worker {
    decoder: Decoder,
    journal: Option<(i64, Journal)>,
}

/// The differences in the order of the answer: by namespace, kind and name,
/// then their stream's place in the question, then the order they came in. The
/// order is found on indices and the boxes are taken in it, the differences
/// left where the comparing threads made them: each is a few hundred bytes,
/// which a sort would move many times (15,000 objects took 12 ms that way),
/// and a list of them unboxed is megabytes of pages touched for the first time.
#[expect(
    clippy::vec_box,
    reason = "the differences stay where the comparing threads made them"
)]
fn in_answer_order(found: Vec<(usize, Box<ObjectDiff>)>) -> Vec<Box<ObjectDiff>> {
    // The few (namespace, kind) pairs are ranked once, so that the sort
    // compares a number and a name in a list of its own, not three strings
    // through each box (15,526 differences of one namespace and kind: most
    // of the sort was reading the boxes).
    let mut groups: std::collections::BTreeMap<(&str, &str), u32> = found
        .iter()
        .map(|(_, d)| ((d.namespace.as_str(), d.kind.as_str()), 0))
        .collect();
    for (rank, g) in (0..).zip(groups.values_mut()) {
        *g = rank;
    }
    let mut keys: Vec<(u32, &str, usize, usize)> = found
        .iter()
        .enumerate()
        .map(|(x, (i, d))| {
            let group = groups[&(d.namespace.as_str(), d.kind.as_str())];
            // Ties keep the order they came in, as a stable sort would.
            (group, d.name.as_str(), *i, x)
        })
        .collect();
    keys.sort_unstable();
    let order: Vec<usize> = keys.into_iter().map(|(_, _, _, x)| x).collect();
    let mut slots: Vec<Option<Box<ObjectDiff>>> = found.into_iter().map(|(_, d)| Some(d)).collect();
    let mut out = Vec::with_capacity(order.len());
    // `order` names each slot once, so every one is taken.
    out.extend(order.iter().filter_map(|&i| slots[i].take()));
    out
}

/// From this many candidates on, the comparing threads read on connections of
/// their own: below it, opening them (a schema to read and pages to warm for
/// each) costs more than it saves. Measured: 1,560 objects took 74 ms on one
/// connection and 87 ms with two beside it; 20,000 took 0.357 s and 0.330 s.
pub(super) const READ_BESIDE_FROM: usize = 4_096;

/// Both ends of one candidate, undecoded; `None` when the question is not
/// about it, or they are the same version, or it is absent at both, or (as
/// the recorder marked its changes) they differ in nothing `opts` compares.
fn read_pair<'h>(
    reading: Reading<'_>,
    c: &Candidate<'h>,
    scope: &Scope,
    names: &NameFilter,
    opts: &DiffOptions,
) -> Result<Option<Pair<'h>>, HistoryError> {
    let (stream, t1, t2) = (c.stream, c.t1, c.t2);
    // The object's row and block as the window's scan read them, when it
    // did; else from the journal.
    let o = match &c.block {
        Some(block) if block.object().id == c.object => {
            reading.journal.hold_block(block);
            block.object().clone()
        }
        _ => match reading.journal.object(c.object)? {
            Some(o) => o,
            None => return Ok(None),
        },
    };
    if !scope.holds(stream, &o, names) {
        return Ok(None);
    }
    let before = reading.object_at(stream, o.id, t1)?;
    // Most changes on a busy cluster are status only: when every record from
    // one end to the other is marked so, neither version needs reading
    // (docs/journal.md, "Status-only changes").
    let (after, status_only) = match before.version() {
        Some(b) if !opts.include_status => reading.object_after(stream, o.id, b, t2)?,
        _ => (reading.object_at(stream, o.id, t2)?, false),
    };
    let (b, a) = (before.version(), after.version());
    if status_only
        || b.is_none() && a.is_none()
        || matches!((b, a), (Some(b), Some(a)) if b.body == a.body)
    {
        return Ok(None);
    }
    let change = match (b, a) {
        (None, Some(_)) => Change::Added,
        (Some(_), None) => Change::Deleted,
        _ => Change::Modified,
    };
    // How the change came to be known: only a list in the stretch can have
    // found part of it, and an appearance or a disappearance has a time.
    let labels = if change != Change::Modified
        || stream
            .baselines
            .iter()
            .any(|l| l.observed_at > t1 && l.observed_at <= t2)
    {
        let versions = reading.versions(stream, o.id)?;
        let member = Member {
            whole: stream.info.selector.is_none(),
            holes: &stream.holes,
            lists: &stream.baselines,
            versions: &versions,
        };
        labels(&merge::merge(&[member]), t1, t2, change)
    } else {
        Labels::default()
    };
    let after = a
        .map(|v| reading.journal.stored_body(v.body, None).map(Arc::new))
        .transpose()?;
    let known = after.as_ref().and_then(|s| s.base.as_ref());
    let before = match (b, known) {
        // Often the version before is the keyframe the one after is a delta on.
        (Some(v), Some(k)) if k.id == v.body => Some(k.clone()),
        (Some(v), _) => Some(Arc::new(reading.journal.stored_body(v.body, known)?)),
        (None, _) => None,
    };
    Ok(Some(Pair {
        stream,
        object: o,
        before,
        after,
        labels,
    }))
}

/// How a change between `t1` and `t2` came to be known.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Labels {
    /// A relist found it (for an added object its appearance, for a deleted
    /// one its disappearance, for a modified one any part of it): it
    /// happened at an unknown time in this stretch.
    pub found_by_relist: Option<Between>,
    /// When a watch saw an added object appear or a deleted one go.
    pub observed_at: Option<i64>,
    /// For an object a watch saw appear: a later change only a relist found.
    pub changed_between: Option<Between>,
}

/// The labels of a `change` between `t1` and `t2`, from the object's merged
/// observations ([`merge::merge`]).
pub fn labels(seen: &[Seen], t1: i64, t2: i64, change: Change) -> Labels {
    let inside: Vec<&Seen> = seen
        .iter()
        .filter(|s| s.observed_at() > t1 && s.observed_at() <= t2)
        .collect();
    let span = |found: &mut Option<Between>, b: Between| {
        *found = Some(match *found {
            None => b,
            Some(f) => Between {
                from: f.from.min(b.from),
                to: f.to.max(b.to),
            },
        })
    };
    let mut out = Labels::default();
    match change {
        Change::Added => {
            let Some(i) = inside.iter().position(|s| s.present()) else {
                return out;
            };
            match inside[i].found_by_relist() {
                Some(b) => out.found_by_relist = Some(b),
                None => out.observed_at = Some(inside[i].observed_at()),
            }
            for s in &inside[i + 1..] {
                if let Some(b) = s.found_by_relist() {
                    span(&mut out.changed_between, b);
                }
            }
        }
        Change::Deleted => {
            if let Some(gone) = inside.iter().rev().find(|s| !s.present()) {
                match gone.found_by_relist() {
                    Some(b) => out.found_by_relist = Some(b),
                    None => out.observed_at = Some(gone.observed_at()),
                }
            }
        }
        Change::Modified => {
            for s in &inside {
                if let Some(b) = s.found_by_relist() {
                    span(&mut out.found_by_relist, b);
                }
            }
        }
    }
    out
}

/// The objects of a default diff whose every change in their stream's
/// stretch `(t1, t2]` the recorder marked status-only, found from the window's
/// records alone (docs/journal.md, "Status-only changes"): an object whose
/// records in the zones that meet the window come, in `seq` order, as
/// records up to t1, then marked MODIFIED events in the stretch, then records
/// after t2. The last of those events is its version at t2, the record before
/// the first is its version at t1, and every mark links one to the next, so
/// the two differ only in what a default diff leaves out.
///
/// That holds when the zones are [`orderly`](crate::journal::zones::orderly)
/// for the window (no record outside the zones read falls among them), each
/// object's records come in `seq` order (those of different objects need
/// not: blocks come before rows), and the stream has no list in its stretch (a
/// relist may have found the object gone). The writer keeps the rest true: it
/// marks an event only after a record of the same run with a digest, which is
/// never a DELETED event, an item of a list that failed, or a record from
/// before a list the object was missing from. Any other object is handed to
/// the comparing threads, as soon as that is known.
struct Quiet<'s, 'h> {
    since: i64,
    until: i64,
    /// Streams whose objects may wait, with the token of their list at t1.
    streams: IdMap<StreamId, i64>,
    /// Each object's track, and the `seq` of its last record taken.
    objects: IdMap<i64, (i64, Track)>,
    spans: &'s IdMap<StreamId, Candidate<'h>>,
    /// An object's records came out of `seq` order: every object is a
    /// candidate as soon as it has a record in the window, as in other
    /// streams.
    unordered: bool,
}

/// What [`Quiet`] knows of one object so far.
enum Track {
    /// Only records outside the stretch: `asked` once one was in the window
    /// the question asks about, `late` once one came after t2.
    Outside {
        stream: StreamId,
        asked: bool,
        late: bool,
    },
    /// Then only marked events in the stretch, from the one at `first`; `late`
    /// once a record after t2 came.
    Waiting {
        stream: StreamId,
        first: i64,
        late: bool,
    },
    /// Handed to the comparing threads.
    Sent,
}

impl<'s, 'h> Quiet<'s, 'h> {
    fn new(
        history: &History<'_>,
        spans: &'s IdMap<StreamId, Candidate<'h>>,
        (since, until): (i64, i64),
        opts: &DiffOptions,
    ) -> Result<Quiet<'s, 'h>, HistoryError> {
        let mut streams = IdMap::default();
        if !opts.include_status && history.journal.zones_orderly(since, until)? {
            for (id, span) in spans {
                let (t1, t2) = (span.t1, span.t2);
                let baselines = &span.stream.baselines;
                if !baselines
                    .iter()
                    .any(|b| b.observed_at > t1 && b.observed_at <= t2)
                    && let Some(b) = span.stream.baseline_at(t1)
                {
                    streams.insert(*id, b.token);
                }
            }
        }
        Ok(Quiet {
            since,
            until,
            streams,
            objects: IdMap::default(),
            spans,
            unordered: false,
        })
    }

    /// Takes a record of a stream whose objects may wait, and returns the
    /// objects that are now to be compared; `None` for a record of another
    /// stream.
    fn take(&mut self, r: &WindowRecord, span: &Candidate<'h>) -> Option<Vec<Candidate<'h>>> {
        if !self.streams.contains_key(&r.stream) {
            return None;
        }
        let mut out = Vec::new();
        let (last, _) = self.objects.entry(r.object).or_insert((
            i64::MIN,
            Track::Outside {
                stream: r.stream,
                asked: false,
                late: false,
            },
        ));
        let disorder = r.seq <= *last;
        *last = r.seq;
        if disorder && !self.unordered {
            self.unordered = true;
            for (&object, (_, track)) in &mut self.objects {
                if let Track::Outside {
                    stream,
                    asked: true,
                    ..
                }
                | Track::Waiting { stream, .. } = *track
                    && let Some(span) = self.spans.get(&stream)
                {
                    out.push(Candidate {
                        object,
                        ..span.clone()
                    });
                    *track = Track::Sent;
                }
            }
        }
        let (t1, t2, at) = (span.t1, span.t2, r.observed_at);
        let asked = at > self.since && at <= self.until;
        let c = Candidate {
            object: r.object,
            ..span.clone()
        };
        // Taken above.
        let Some((_, track)) = self.objects.get_mut(&r.object) else {
            return Some(out);
        };
        let compare = match track {
            Track::Sent => false,
            _ if self.unordered => asked,
            Track::Outside { asked: a, late, .. } => {
                if at > t1 && at <= t2 {
                    if r.status_only && !*late {
                        *track = Track::Waiting {
                            stream: r.stream,
                            first: r.seq,
                            late: false,
                        };
                        false
                    } else {
                        true
                    }
                } else {
                    *a |= asked;
                    *late |= at > t2;
                    false
                }
            }
            Track::Waiting { late, .. } => {
                if at > t2 {
                    *late = true;
                    false
                } else {
                    // One at t1 or before once the stretch began, one in it
                    // after one from after it, or a change a diff may see.
                    at <= t1 || *late || !r.status_only
                }
            }
        };
        if compare {
            *track = Track::Sent;
            out.push(c);
        }
        Some(out)
    }

    /// The objects still to compare once every record was taken: those asked
    /// about that never came into their stretch, and the waiting ones whose
    /// version at t1 may be older than the stream's list then.
    fn finish(self) -> Vec<Candidate<'h>> {
        let (streams, spans) = (self.streams, self.spans);
        let compare = |track: &Track| match *track {
            Track::Outside { asked, .. } => asked,
            Track::Waiting { stream, first, .. } => {
                streams.get(&stream).is_none_or(|&token| token >= first)
            }
            Track::Sent => false,
        };
        self.objects
            .into_iter()
            .filter(|(_, (_, track))| compare(track))
            .filter_map(|(object, (_, track))| match track {
                Track::Outside { stream, .. } | Track::Waiting { stream, .. } => Some(Candidate {
                    object,
                    ..spans.get(&stream)?.clone()
                }),
                Track::Sent => None,
            })
            .collect()
    }
}

/// Pairs are handed to the comparing threads this many at a time.
const BATCH: usize = 64;

/// One object's two ends, read and not yet decoded.
struct Pair<'h> {
    stream: &'h StreamHistory,
    object: ObjectRow,
    before: Option<Arc<StoredBody>>,
    after: Option<Arc<StoredBody>>,
    labels: Labels,
}

/// Decodes one pair and compares it field by field. Without `keep_objects`,
/// only the parts of the two versions that differ are parsed.
fn compare(
    decoder: &mut Decoder,
    p: &Pair<'_>,
    opts: &DiffOptions,
    keep_objects: bool,
) -> Result<Option<ObjectDiff>, HistoryError> {
    let resource = &p.stream.info.resource;
    let what = || format!("{}/{}", resource.group_resource(), p.object.name);
    let body_error = |detail: String| HistoryError::Body {
        object: what(),
        detail,
    };
    let decode = |decoder: &mut Decoder, body: &StoredBody| -> Result<String, HistoryError> {
        let raw = decoder
            .decode(body)
            .map_err(|e| body_error(e.to_string()))?;
        String::from_utf8(raw).map_err(|e| body_error(e.to_string()))
    };
    let full = |text: &str| -> Result<Value, HistoryError> {
        let value = serde_json::from_str(text).map_err(|e| body_error(e.to_string()))?;
        Ok(resource.fill_type_meta(value))
    };
    let before = p.before.as_ref().map(|b| decode(decoder, b)).transpose()?;
    let after = p.after.as_ref().map(|b| decode(decoder, b)).transpose()?;
    let (change, fields) = match (&before, &after) {
        (None, None) => return Ok(None),
        (None, Some(_)) => (Change::Added, Vec::new()),
        (Some(_), None) => (Change::Deleted, Vec::new()),
        (Some(b), Some(a)) => {
            let api_version = resource.api_version();
            let defaults = [
                ("apiVersion", api_version.as_str()),
                ("kind", resource.kind.as_str()),
            ];
            let fields = if keep_objects {
                // Whole objects: each side carries its managedFields.
                let (fb, fa) = (full(b)?, full(a)?);
                diff_objects(&fb, &fa, opts)
                    .into_iter()
                    .map(|change| {
                        let owner = if change.after.is_some() { &fa } else { &fb };
                        Field {
                            manager: field_manager(owner, &change.path),
                            change,
                            by: By::default(),
                        }
                    })
                    .collect()
            } else {
                fields_between(b, a, opts, &defaults).map_err(|e| body_error(e.to_string()))?
            };
            if fields.is_empty() {
                return Ok(None);
            }
            (Change::Modified, fields)
        }
    };
    let keep = |text: &Option<String>| -> Result<Option<Value>, HistoryError> {
        match text {
            Some(t) if keep_objects => Ok(Some(full(t)?)),
            _ => Ok(None),
        }
    };
    Ok(Some(ObjectDiff {
        kind: resource.kind.clone(),
        api_version: resource.api_version(),
        namespace: p.object.namespace.clone(),
        name: p.object.name.clone(),
        stream: p.stream.info.name(),
        change,
        before: keep(&before)?,
        after: keep(&after)?,
        fields,
        found_by_relist: p.labels.found_by_relist,
        observed_at: p.labels.observed_at,
        changed_between: p.labels.changed_between,
        object_id: p.object.id,
        by: By::default(),
    }))
}

/// The field changes from one version's JSON to the next, each with the
/// field manager that owns it after the change (for a removed field, the one
/// that owned it): [`crate::diff::owned_changes`], as [`Field`]s.
pub fn fields_between(
    before: &str,
    after: &str,
    opts: &DiffOptions,
    defaults: &[(&str, &str)],
) -> serde_json::Result<Vec<Field>> {
    Ok(owned_changes(before, after, opts, defaults)?
        .into_iter()
        .map(|(change, manager)| Field {
            change,
            manager,
            by: By::default(),
        })
        .collect())
}

/// The field managers of a change, each once, in field order (`None`: none known).
pub fn managers(fields: &[Field]) -> Option<String> {
    let mut seen: Vec<&str> = Vec::new();
    for m in fields.iter().filter_map(|f| f.manager.as_deref()) {
        if !seen.contains(&m) {
            seen.push(m);
        }
    }
    (!seen.is_empty()).then(|| seen.join(", "))
}

#[cfg(test)]
mod fields_between_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_item_of_a_reduced_list_is_found_by_merge_keys_that_are_not_its_identity() {
        // Both constraints pair up by index; the changed one is found in
        // managedFields by topologyKey and whenUnsatisfiable, neither of which
        // pairing reads.
        let deployment = |skew: i64| {
            let constraint = |key: &str, skew: i64| json!({"topologyKey": key, "whenUnsatisfiable": "DoNotSchedule", "maxSkew": skew});
            let owned = |key: &str| {
                format!(r#"k:{{"topologyKey":"{key}","whenUnsatisfiable":"DoNotSchedule"}}"#)
            };
            json!({
                "metadata": {"name": "web", "managedFields": [
                    {"manager": "kubectl-edit", "operation": "Update", "fieldsType": "FieldsV1",
                     "fieldsV1": {"f:spec": {"f:topologySpreadConstraints": {
                         owned("zone"): {".": {}, "f:maxSkew": {}}}}}},
                    {"manager": "helm", "operation": "Update", "fieldsType": "FieldsV1",
                     "fieldsV1": {"f:spec": {"f:topologySpreadConstraints": {
                         owned("host"): {".": {}, "f:maxSkew": {}}}}}},
                ]},
                "spec": {"topologySpreadConstraints": [constraint("host", 1), constraint("zone", skew)]},
            })
        };
        let (before, after) = (deployment(1), deployment(2));
        let opts = DiffOptions::default();
        let fields =
            fields_between(&before.to_string(), &after.to_string(), &opts, &[]).expect("fields");
        let full: Vec<(String, Option<String>)> = crate::diff::diff_objects(&before, &after, &opts)
            .into_iter()
            .map(|c| {
                (
                    c.path.to_string(),
                    crate::diff::field_manager(&after, &c.path),
                )
            })
            .collect();
        let reduced: Vec<(String, Option<String>)> = fields
            .iter()
            .map(|f| (f.change.path.to_string(), f.manager.clone()))
            .collect();
        assert_eq!(
            reduced,
            [(
                "spec.topologySpreadConstraints[1].maxSkew".into(),
                Some("kubectl-edit".into())
            )]
        );
        assert_eq!(reduced, full);
    }
}

#[cfg(test)]
mod order_tests {
    use super::*;

    fn object(namespace: &str, name: &str, object_id: i64) -> ObjectDiff {
        ObjectDiff {
            kind: "ConfigMap".into(),
            api_version: "v1".into(),
            namespace: namespace.into(),
            name: name.into(),
            stream: "configmaps".into(),
            change: Change::Modified,
            before: None,
            after: None,
            fields: Vec::new(),
            found_by_relist: None,
            observed_at: None,
            changed_between: None,
            object_id,
            by: By::default(),
        }
    }

    #[test]
    fn the_answer_order_is_what_a_stable_sort_gives_ties_included() {
        // Stream places 0 and 1, names repeated across them and within one
        // place (a merged object beside one answered alone), two namespaces
        // and two kinds: ties keep the order they came in.
        let names = ["b", "a", "c", "a", "b", "a"];
        let found: Vec<(usize, Box<ObjectDiff>)> = (0..60)
            .map(|i| {
                let ns = if i % 7 < 3 { "x" } else { "y" };
                let mut d = object(ns, names[i % names.len()], i as i64);
                if i % 5 == 0 {
                    d.kind = "Deployment".into();
                }
                (i % 2, Box::new(d))
            })
            .collect();
        let mut expected = found.clone();
        expected.sort_by(|(ia, a), (ib, b)| {
            (&a.namespace, &a.kind, &a.name, ia).cmp(&(&b.namespace, &b.kind, &b.name, ib))
        });
        let ids = |v: Vec<Box<ObjectDiff>>| v.into_iter().map(|d| d.object_id).collect::<Vec<_>>();
        assert_eq!(
            ids(in_answer_order(found)),
            ids(expected.into_iter().map(|(_, d)| d).collect())
        );
        assert!(in_answer_order(Vec::new()).is_empty());
    }
}

#[cfg(test)]
mod quiet_tests {
    use super::*;
    use crate::journal::read::{Coverage, StreamInfo, StreamState};

    fn stream() -> StreamHistory {
        let info = StreamInfo {
            id: 1,
            cluster: "c".into(),
            resource: krply_sim::builtin_type("apps", "deployments").unwrap(),
            namespace: Some("shop".into()),
            selector: None,
            origin: None,
        };
        StreamHistory {
            coverage: Coverage {
                stream: info.clone(),
                state: StreamState::Stopped,
                last_rv: None,
                events: 0,
                gaps: 0,
                from: Some(0),
                to: Some(1_000),
                windows: vec![],
                unavailable: None,
            },
            info,
            baselines: vec![],
            lists: IdSet::default(),
            holes: crate::history::cover::Holes::none(),
        }
    }

    fn record(seq: i64, object: i64, observed_at: i64, status_only: bool) -> WindowRecord {
        WindowRecord {
            seq,
            stream: 1,
            object,
            observed_at,
            status_only,
        }
    }

    /// The objects `Quiet` hands over for `records` taken in that order, over
    /// the stretch (100, 200] of a stream whose list at 100 has token 0.
    fn compared(records: &[WindowRecord]) -> Vec<i64> {
        let s = stream();
        let span = Candidate {
            index: 0,
            stream: &s,
            object: 0,
            t1: 100,
            t2: 200,
            block: None,
        };
        let spans: IdMap<StreamId, Candidate<'_>> = [(1, span.clone())].into_iter().collect();
        let mut quiet = Quiet {
            since: 100,
            until: 200,
            streams: [(1, 0)].into_iter().collect(),
            objects: IdMap::default(),
            spans: &spans,
            unordered: false,
        };
        let mut out = Vec::new();
        for r in records {
            out.extend(quiet.take(r, &span).unwrap().iter().map(|c| c.object));
        }
        out.extend(quiet.finish().iter().map(|c| c.object));
        out.sort();
        out
    }

    #[test]
    fn objects_whose_own_records_come_in_order_wait_whatever_comes_between() {
        // A version before the stretch, then status-only changes in it: the
        // two ends differ in nothing a default diff compares.
        let a = [record(1, 7, 50, false), record(10, 7, 150, true)];
        let b = [record(5, 8, 60, false), record(12, 8, 160, true)];
        // In `seq` order, as rows come.
        let mut by_seq: Vec<WindowRecord> = a.iter().chain(&b).copied().collect();
        by_seq.sort_by_key(|r| r.seq);
        assert_eq!(compared(&by_seq), Vec::<i64>::new());
        // Object by object, as a window's blocks come: still nothing.
        let by_object: Vec<WindowRecord> = a.iter().chain(&b).copied().collect();
        assert_eq!(compared(&by_object), Vec::<i64>::new());
        // A real change in the stretch is compared either way.
        let c = [record(3, 9, 40, false), record(11, 9, 170, false)];
        let with_c: Vec<WindowRecord> = a.iter().chain(&b).chain(&c).copied().collect();
        assert_eq!(compared(&with_c), vec![9]);
    }

    #[test]
    fn an_object_whose_own_records_go_back_makes_every_asked_object_a_candidate() {
        // Object 7's records come newest first: what lies between its ends
        // cannot be judged from them, so the objects asked about are compared.
        let records = [
            record(5, 8, 60, false),
            record(12, 8, 160, true),
            record(10, 7, 150, true),
            record(1, 7, 50, false),
        ];
        assert_eq!(compared(&records), vec![7, 8]);
    }
}
