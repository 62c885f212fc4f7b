//! Journals written op by op at chosen times, for the history's tests.

use crate::journal::records::{CheckpointReason, GapInfo};
use crate::journal::writer::{Op, Writer};
use crate::journal::{Journal, StreamId};
use crate::model::{ObjectMeta, ResourceType, StreamSpec, WatchType};

pub(crate) const CLUSTER: &str = "c1";

pub(crate) fn configmaps() -> ResourceType {
    ResourceType {
        group: String::new(),
        version: "v1".into(),
        resource: "configmaps".into(),
        kind: "ConfigMap".into(),
        singular: "configmap".into(),
        short_names: vec!["cm".into()],
        namespaced: true,
    }
}

/// A journal and its ConfigMap streams, written op by op.
pub(crate) struct Script {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
    ops: Vec<Op>,
}

impl Script {
    pub(crate) fn new() -> Script {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.db");
        let journal = Journal::open_or_create(&path).unwrap();
        journal
            .register_cluster(CLUSTER, "https://x", None)
            .unwrap();
        Script {
            _dir: dir,
            path,
            ops: Vec::new(),
        }
    }

    pub(crate) fn stream(&self, namespace: Option<&str>) -> StreamId {
        Journal::open(&self.path)
            .unwrap()
            .register_stream(
                CLUSTER,
                &StreamSpec {
                    resource: configmaps(),
                    namespace: namespace.map(str::to_string),
                    selector: None,
                },
            )
            .unwrap()
    }

    pub(crate) fn object(ns: &str, name: &str, rv: &str) -> (ObjectMeta, Vec<u8>) {
        let meta = ObjectMeta {
            namespace: ns.into(),
            name: name.into(),
            uid: format!("uid-{ns}-{name}"),
            resource_version: rv.into(),
            diff_digest: None,
            given_mark: None,
        };
        let body = format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}","namespace":"{ns}","resourceVersion":"{rv}"}},"data":{{"value":"{rv}"}}}}"#
        );
        (meta, body.into_bytes())
    }

    /// A list's items, (namespace, name, resourceVersion) each.
    fn items(&mut self, stream: StreamId, at: i64, items: &[(&str, &str, &str)]) {
        for (ns, name, item_rv) in items {
            let (meta, body) = Script::object(ns, name, item_rv);
            self.ops.push(Op::BaselineItem {
                stream,
                at,
                meta,
                body,
            });
        }
    }

    pub(crate) fn list(
        &mut self,
        stream: StreamId,
        at: i64,
        items: &[(&str, &str, &str)],
        rv: &str,
    ) {
        self.items(stream, at, items);
        self.ops.push(Op::BaselineEnd {
            stream,
            at,
            list_rv: rv.into(),
            items: items.len() as u64,
        });
    }

    /// A list whose items were written and which then failed.
    pub(crate) fn failed_list(&mut self, stream: StreamId, at: i64, items: &[(&str, &str, &str)]) {
        self.items(stream, at, items);
        self.ops.push(Op::BaselineAbort { stream });
    }

    pub(crate) fn event(
        &mut self,
        stream: StreamId,
        at: i64,
        watch: WatchType,
        ns: &str,
        name: &str,
        rv: &str,
    ) {
        let (meta, body) = Script::object(ns, name, rv);
        self.ops.push(Op::Event {
            stream,
            at,
            watch_type: watch,
            meta,
            body,
        });
    }

    pub(crate) fn stop(&mut self, stream: StreamId, at: i64, rv: &str) {
        self.ops.push(Op::Checkpoint {
            stream,
            at,
            rv: rv.into(),
            reason: CheckpointReason::Stop,
        });
    }

    pub(crate) fn gap(&mut self, stream: StreamId, at: i64, from: i64, reason: &str) {
        self.ops.push(Op::Gap {
            stream,
            at,
            info: GapInfo {
                from,
                from_rv: None,
                reason: reason.into(),
            },
        });
    }

    /// Writes every op, then opens the journal to read.
    pub(crate) fn journal(&mut self) -> Journal {
        let writer = Writer::start(Journal::open(&self.path).unwrap()).unwrap();
        let tx = writer.sender();
        for op in self.ops.drain(..) {
            tx.blocking_send(op).unwrap();
        }
        drop(tx);
        writer.finish().unwrap();
        Journal::open(&self.path).unwrap()
    }
}
