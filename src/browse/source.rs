//! What the browser shows, read from the journal (docs/browse.md): the streams
//! in scope with their coverage, the objects with live events in the window,
//! and, on demand, an object's manager and actor, its timeline and its YAML at
//! one version. Every answer goes through [`History`], as the commands do.

use super::app::{Detail, ObjectLine, StreamLine};
use crate::diff::DiffOptions;
use crate::history::diff::NameFilter;
use crate::history::log::{LogType, RelistFinding};
use crate::history::state::ObjectState;
use crate::history::timeline::TimelineAnswer;
use crate::history::{History, HistoryError, Scope};
use crate::journal::IdSet;
use crate::journal::versions::VersionRow;
use crate::render::bars::BarRow;
use crate::time::{Millis, TimeWindow};

/// The streams in `scope`, grouped by namespace (cluster-wide streams first),
/// then by resource.
pub fn streams(history: &History<'_>, scope: &Scope) -> Vec<StreamLine> {
    let mut out: Vec<StreamLine> = history
        .streams_for(scope)
        .into_iter()
        .map(|s| StreamLine {
            cluster: s.info.cluster.clone(),
            namespace: s.info.namespace.clone().unwrap_or_default(),
            resource: s.info.resource.group_resource(),
            bar: BarRow::of(&s.coverage, s.info.name()),
        })
        .collect();
    out.sort_by(|a, b| (&a.namespace, &a.resource).cmp(&(&b.namespace, &b.resource)));
    out
}

/// The objects in `scope` with a change in `(since, until]`, the latest
/// change first: a live event, or a relist finding (marked: it happened at an
/// unknown time). An object several streams hold (a `record -A` beside a
/// `record -n shop`) is one line. An object is marked when a gap of its
/// stream overlaps the window: changes may be missing from its count.
pub fn objects(
    history: &History<'_>,
    scope: &Scope,
    since: i64,
    until: i64,
) -> Result<Vec<ObjectLine>, HistoryError> {
    let streams = history.streams_for(scope);
    let ids: IdSet<_> = streams.iter().map(|s| s.info.id).collect();
    let per = history.journal.window_changes(&ids, since, until)?;
    let rows = history.objects(&per.keys().copied().collect())?;
    let names = NameFilter::default();
    let gap = |stream: &crate::history::StreamHistory| {
        stream
            .coverage
            .windows
            .iter()
            .any(|w| w.from < until && w.to.is_none_or(|to| to > since))
    };
    // By type, namespace and name: one line per object.
    let mut lines: std::collections::BTreeMap<(String, String, String), ObjectLine> =
        Default::default();
    let mut put = |line: ObjectLine| {
        let key = (
            line.resource.clone(),
            line.namespace.clone(),
            line.name.clone(),
        );
        match lines.get_mut(&key) {
            Some(l) => {
                // The streams saw the same changes: the most any saw, and
                // the latest of them.
                l.changes = l.changes.max(line.changes);
                l.gap &= line.gap;
                l.relist |= line.relist;
                if (line.last.observed_at, line.last.seq) > (l.last.observed_at, l.last.seq) {
                    l.last = line.last;
                    l.object = line.object;
                }
            }
            None => {
                lines.insert(key, line);
            }
        }
    };
    for (id, (changes, last_seq)) in per {
        let Some(row) = rows.get(&id) else {
            continue;
        };
        let Some(stream) = streams.iter().find(|s| s.info.id == row.stream) else {
            continue;
        };
        // Out of scope objects (another namespace of an all-namespaces
        // stream) cost no version read.
        if !scope.holds(stream, row, &names) {
            continue;
        }
        let Some(last) = history.journal.version(last_seq)? else {
            continue;
        };
        put(ObjectLine {
            object: id,
            kind: stream.info.resource.kind.clone(),
            resource: stream.info.resource.group_resource(),
            namespaced: stream.info.resource.namespaced,
            namespace: row.namespace.clone(),
            name: row.name.clone(),
            changes,
            last,
            gap: gap(stream),
            relist: false,
            detail: None,
        });
    }
    // What the relists in the window found no watch saw.
    for stream in &streams {
        for list in stream
            .baselines
            .iter()
            .filter(|b| b.observed_at > since && b.observed_at <= until)
        {
            let Some(found) = history.relist_findings(stream, list)? else {
                continue;
            };
            if found.is_empty() {
                continue;
            }
            let listed = history
                .stream_at(stream, list.observed_at)?
                .unwrap_or_default();
            let before = history
                .stream_at(stream, list.observed_at - 1)?
                .unwrap_or_default();
            let rows = history.objects(&found.iter().map(|(id, _)| *id).collect())?;
            for (id, what) in found {
                let Some(row) = rows.get(&id) else { continue };
                if !scope.holds(stream, row, &names) {
                    continue;
                }
                let last = match what {
                    RelistFinding::Gone => before.get(&id).map(|v| VersionRow {
                        watch_type: Some(crate::model::WatchType::Deleted),
                        observed_at: list.observed_at,
                        seq: list.seq,
                        ..v.clone()
                    }),
                    _ => listed.get(&id).cloned(),
                };
                let Some(last) = last else { continue };
                put(ObjectLine {
                    object: id,
                    kind: stream.info.resource.kind.clone(),
                    resource: stream.info.resource.group_resource(),
                    namespaced: stream.info.resource.namespaced,
                    namespace: row.namespace.clone(),
                    name: row.name.clone(),
                    changes: 1,
                    last,
                    gap: true,
                    relist: true,
                    detail: None,
                });
            }
        }
    }
    // Marked as `log` marks them, the streams merged: a change one stream's
    // relist found that another stream watched is not marked, and an object
    // a stream's first list found gone is (seed 1273 of the truth checker).
    if let Ok(window) = TimeWindow::new(Millis::from_ms(since), Millis::from_ms(until)) {
        let log = history.log(scope, &names, &window, &DiffOptions::default())?;
        let found: std::collections::HashSet<(&str, &str, &str)> = log
            .entries
            .iter()
            .filter(|e| matches!(e.kind, LogType::Relist(_)))
            .map(|e| {
                (
                    e.object_kind.as_str(),
                    e.namespace.as_str(),
                    e.name.as_str(),
                )
            })
            .collect();
        for l in lines.values_mut() {
            l.relist = found.contains(&(l.kind.as_str(), l.namespace.as_str(), l.name.as_str()));
        }
    }
    let mut out: Vec<ObjectLine> = lines.into_values().collect();
    out.sort_by(|a, b| {
        (b.last.observed_at, b.last.seq)
            .cmp(&(a.last.observed_at, a.last.seq))
            .then_with(|| a.name.cmp(&b.name))
    });
    Ok(out)
}

/// Who made an object's last change in the window that is not status-only
/// (a controller's status update after a `kubectl scale` is not the change
/// to show): the managers of its fields, and the actor when audit logs were
/// imported.
pub fn detail(
    history: &History<'_>,
    line: &ObjectLine,
    (since, until): (i64, i64),
) -> Result<Detail, HistoryError> {
    let (Some(stream), Some(row)) = (
        history.stream(line.last.stream),
        history.journal.object(line.object)?,
    ) else {
        return Ok(Detail::default());
    };
    let tracked = history.track_row(stream, &row)?;
    let Some(change) = history.last_change(&tracked, (since, until))? else {
        // Nothing but status changed: who wrote last.
        let manager = crate::diff::last_writer(&history.object_bytes(&line.last)?);
        return Ok(Detail {
            manager,
            actor: None,
        });
    };
    let manager = crate::history::diff::managers(&change.fields);
    let actor = history
        .has_audit()
        .then(|| actor(change.fields.first().map_or(&change.by, |f| &f.by)));
    Ok(Detail { manager, actor })
}

/// An actor as a column shows it: `alice`, `likely alice`, `? not_covered`.
pub fn actor(by: &crate::audit::By) -> String {
    match (&by.actor, by.actor_unknown) {
        (Some(a), _) => a.label(),
        (None, Some(why)) => format!("? {}", why.as_str()),
        (None, None) => String::new(),
    }
}

/// The object's whole timeline, as `kubectl krply timeline` prints it.
pub fn timeline(
    history: &History<'_>,
    line: &ObjectLine,
    opts: &DiffOptions,
) -> Result<Option<TimelineAnswer>, HistoryError> {
    let (Some(stream), Some(row)) = (
        history.stream(line.last.stream),
        history.journal.object(line.object)?,
    ) else {
        return Ok(None);
    };
    let tracked = history.track_row(stream, &row)?;
    Ok(Some(history.timeline(&tracked, opts)?))
}

/// The object as `kubectl krply get --at T -o yaml` prints it (without
/// `managedFields`); `None` when it did not exist then, or nothing recorded
/// says so.
pub fn yaml_at(
    history: &History<'_>,
    line: &ObjectLine,
    at: i64,
) -> Result<Option<String>, HistoryError> {
    let (Some(stream), Some(row)) = (
        history.stream(line.last.stream),
        history.journal.object(line.object)?,
    ) else {
        return Ok(None);
    };
    let tracked = history.track_row(stream, &row)?;
    let ObjectState::Present(version) = history.tracked_at(&tracked, at)? else {
        return Ok(None);
    };
    let mut value = history.object_json(tracked.stream_of(&version), &version)?;
    if let Some(meta) = value.get_mut("metadata").and_then(|m| m.as_object_mut()) {
        meta.shift_remove("managedFields");
    }
    Ok(Some(crate::render::yaml(&value)))
}
