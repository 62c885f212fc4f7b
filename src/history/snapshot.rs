//! A snapshot: the state at T of every stream in scope, with per-stream
//! watermarks (the resourceVersion each stream was known complete at) and
//! whether it is complete.

use super::complete::Completeness;
use super::{History, HistoryError, Scope};
use crate::model::ResourceType;
use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamSnapshot {
    pub stream: String,
    /// The resourceVersion the stream was known complete at, at T.
    pub resource_version: Option<String>,
    pub objects: usize,
    pub complete: bool,
}

pub struct SnapshotAnswer {
    pub at: i64,
    pub streams: Vec<StreamSnapshot>,
    /// The objects (with apiVersion and kind) and their types, when asked for.
    pub items: Vec<(ResourceType, Value)>,
    pub completeness: Completeness,
}

impl History<'_> {
    pub fn snapshot(
        &self,
        scope: &Scope,
        at: i64,
        with_objects: bool,
    ) -> Result<SnapshotAnswer, HistoryError> {
        let streams = self.streams_for(scope);
        let completeness = self.completeness(scope, &streams, None, at);
        let incomplete = completeness.streams();
        let (_, shared) = super::diff::alone_and_shared(&streams);
        let mut out = Vec::new();
        let mut items = Vec::new();
        // Objects several streams hold, by type, namespace and name: their
        // merged state answers, once.
        let mut merged_keys: std::collections::BTreeSet<(String, String, String, String)> =
            Default::default();
        for stream in &streams {
            let name = stream.info.name();
            let present = self.stream_at(stream, at)?.unwrap_or_default();
            let ids = present.keys().copied().collect();
            let rows = self.objects(&ids)?;
            let is_shared = shared.iter().any(|s| s.info.id == stream.info.id);
            let mut count = 0;
            for (id, version) in &present {
                let Some(row) = rows.get(id) else { continue };
                let in_scope = match (&scope.namespace, stream.info.resource.namespaced) {
                    (Some(ns), true) => &row.namespace == ns,
                    _ => true,
                };
                if !in_scope {
                    continue;
                }
                count += 1;
                if is_shared {
                    let key = (
                        stream.info.resource.group.clone(),
                        stream.info.resource.resource.clone(),
                        row.namespace.clone(),
                        row.name.clone(),
                    );
                    if merged_keys.insert(key) {
                        let tracked = self.track_row(stream, row)?;
                        if with_objects && let Some(v) = self.tracked_at(&tracked, at)?.version() {
                            let holder = tracked.stream_of(v);
                            items
                                .push((holder.info.resource.clone(), self.object_json(holder, v)?));
                        }
                    }
                } else if with_objects {
                    items.push((
                        stream.info.resource.clone(),
                        self.object_json(stream, version)?,
                    ));
                }
            }
            out.push(StreamSnapshot {
                resource_version: self
                    .journal
                    .watermark_at(stream.info.id, at)?
                    .map(|(_, rv)| rv),
                objects: count,
                complete: !incomplete.contains(&name),
                stream: name,
            });
        }
        Ok(SnapshotAnswer {
            at,
            streams: out,
            items,
            completeness,
        })
    }
}
