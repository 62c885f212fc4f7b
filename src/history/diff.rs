//! What changed between two times (DESIGN §4): only objects with a record in
//! `(since, until]` can differ (plus, when a relist falls in the window, the
//! objects that relist no longer saw); each is compared field by field between
//! its state at both ends. A relist that saw an unchanged object is no change.

use super::complete::Completeness;
use super::state::ObjectState;
use super::{History, HistoryError, Scope, StreamHistory};
use crate::diff::{DiffOptions, FieldChange, diff_objects, field_manager};
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};

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

/// One changed field, with the field manager that owned it after the change.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub change: FieldChange,
    pub manager: Option<String>,
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
    pub before: Option<Value>,
    pub after: Option<Value>,
    /// Field changes (for `modified`; empty for added and deleted objects).
    pub fields: Vec<Field>,
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
    fn allows(&self, s: &StreamHistory, name: &str) -> bool {
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
    pub objects: Vec<ObjectDiff>,
    pub completeness: Completeness,
}

impl History<'_> {
    /// Objects added, deleted and modified between `since` and `until`.
    pub fn diff(
        &self,
        scope: &Scope,
        names: &NameFilter,
        since: i64,
        until: i64,
        opts: &DiffOptions,
    ) -> Result<DiffAnswer, HistoryError> {
        let streams = self.streams_in(scope);
        let completeness = self.completeness(scope, &streams, Some(since), until);
        let ids: HashSet<_> = streams.iter().map(|s| s.info.id).collect();
        let touched = self.journal.touched_objects(&ids, since, until)?;
        let mut objects = Vec::new();
        for stream in &streams {
            // Each stream answers for the part of the window it covers: changes
            // count from its first baseline, and end where its watch ended.
            let Some(from) = stream.from() else { continue };
            let t1 = since.max(from);
            let t2 = until.min(stream.end(self.now).unwrap_or(until));
            if t1 >= t2 {
                continue;
            }
            let mut candidates: HashSet<i64> = touched.clone();
            // A relist in the window can drop objects without a record of theirs
            // in it (deleted during a gap): everything present at t1 may differ.
            if stream
                .baselines
                .iter()
                .any(|b| b.observed_at > t1 && b.observed_at <= t2)
                && let Some(present) = self.stream_at(stream, t1)?
            {
                candidates.extend(present.keys());
            }
            let rows = self.objects(&candidates)?;
            let mut mine: Vec<_> = rows
                .values()
                .filter(|o| o.stream == stream.info.id)
                .filter(
                    |o| match (&scope.namespace, stream.info.resource.namespaced) {
                        (Some(ns), true) => &o.namespace == ns,
                        _ => true,
                    },
                )
                .filter(|o| names.allows(stream, &o.name))
                .collect();
            mine.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
            for o in mine {
                let before = self.object_at(stream, o.id, t1)?;
                let after = self.object_at(stream, o.id, t2)?;
                if let Some(d) = self.compare(stream, o, before, after, opts)? {
                    objects.push(d);
                }
            }
        }
        objects.sort_by(|a, b| {
            (&a.namespace, &a.kind, &a.name).cmp(&(&b.namespace, &b.kind, &b.name))
        });
        Ok(DiffAnswer {
            objects,
            completeness,
        })
    }

    fn compare(
        &self,
        stream: &StreamHistory,
        o: &crate::journal::versions::ObjectRow,
        before: ObjectState,
        after: ObjectState,
        opts: &DiffOptions,
    ) -> Result<Option<ObjectDiff>, HistoryError> {
        let (b, a) = (before.version(), after.version());
        if let (Some(b), Some(a)) = (b, a)
            && b.body == a.body
        {
            return Ok(None);
        }
        let before = b.map(|v| self.object_json(stream, v)).transpose()?;
        let after = a.map(|v| self.object_json(stream, v)).transpose()?;
        let (change, fields) = match (&before, &after) {
            (None, None) => return Ok(None),
            (None, Some(_)) => (Change::Added, Vec::new()),
            (Some(_), None) => (Change::Deleted, Vec::new()),
            (Some(b), Some(a)) => {
                let fields: Vec<Field> = diff_objects(b, a, opts)
                    .into_iter()
                    .map(|change| {
                        // Who owns the field now; for a removed field, who owned it.
                        let owner = if change.after.is_some() { a } else { b };
                        Field {
                            manager: field_manager(owner, &change.path),
                            change,
                        }
                    })
                    .collect();
                if fields.is_empty() {
                    return Ok(None);
                }
                (Change::Modified, fields)
            }
        };
        Ok(Some(ObjectDiff {
            kind: stream.info.resource.kind.clone(),
            api_version: stream.info.resource.api_version(),
            namespace: o.namespace.clone(),
            name: o.name.clone(),
            stream: stream.info.name(),
            change,
            before,
            after,
            fields,
        }))
    }
}

/// Objects of a diff grouped for display: by namespace, then kind and name.
pub fn by_namespace(objects: &[ObjectDiff]) -> BTreeMap<&str, Vec<&ObjectDiff>> {
    let mut out: BTreeMap<&str, Vec<&ObjectDiff>> = BTreeMap::new();
    for o in objects {
        out.entry(o.namespace.as_str()).or_default().push(o);
    }
    out
}
