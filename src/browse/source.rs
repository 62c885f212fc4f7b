//! What the browser shows, read from the journal (docs/browse.md): the streams
//! in scope with their coverage, the objects with live events in the window,
//! and, on demand, an object's manager and actor, its timeline and its YAML at
//! one version. Every answer goes through [`History`], as the commands do.

use super::app::{Detail, ObjectLine, StreamLine};
use crate::diff::DiffOptions;
use crate::history::diff::NameFilter;
use crate::history::state::ObjectState;
use crate::history::timeline::TimelineAnswer;
use crate::history::{History, HistoryError, Scope};
use crate::journal::IdSet;
use crate::render::bars::BarRow;

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

/// The objects in `scope` with a live event in `(since, until]`, the latest
/// change first. An object is marked when a gap of its stream overlaps the
/// window: changes may be missing from its count.
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
    let mut out = Vec::new();
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
        let gap = stream
            .coverage
            .windows
            .iter()
            .any(|w| w.from < until && w.to.is_none_or(|to| to > since));
        out.push(ObjectLine {
            object: id,
            kind: stream.info.resource.kind.clone(),
            resource: stream.info.resource.group_resource(),
            namespaced: stream.info.resource.namespaced,
            namespace: row.namespace.clone(),
            name: row.name.clone(),
            changes,
            last,
            gap,
            detail: None,
        });
    }
    out.sort_by(|a, b| {
        (b.last.observed_at, b.last.seq)
            .cmp(&(a.last.observed_at, a.last.seq))
            .then_with(|| a.name.cmp(&b.name))
    });
    Ok(out)
}

/// Who made an object's last change in the window: the field manager that
/// wrote last (the newest `managedFields` entry of that version), and the
/// actor when audit logs were imported.
pub fn detail(history: &History<'_>, line: &ObjectLine) -> Result<Detail, HistoryError> {
    let Some(stream) = history.stream(line.last.stream) else {
        return Ok(Detail::default());
    };
    let manager = crate::diff::last_writer(&history.object_bytes(&line.last)?);
    let actor = if history.has_audit() {
        let versions = history.versions(stream, line.object)?;
        let found = history.attribute(stream, &versions)?;
        versions
            .iter()
            .zip(&found)
            .find(|(v, _)| v.seq == line.last.seq)
            .map(|(_, a)| actor(&crate::history::actors::By::of(a.as_ref())))
    } else {
        None
    };
    Ok(Detail { manager, actor })
}

/// An actor as a column shows it: `alice`, `likely alice`, `? not_covered`.
pub fn actor(by: &crate::history::actors::By) -> String {
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
