//! What the benches share: a fresh journal with one Deployment stream, and
//! its writer.

use krply::journal::Journal;
use krply::journal::StreamId;
use krply::journal::writer::Writer;
use krply::model::StreamSpec;
use std::path::Path;

/// A journal at `store` for cluster `cluster` with one stream of the
/// Deployments of namespace `ns`, and the writer that records into it.
pub fn deployment_journal(store: &Path, cluster: &str, ns: &str) -> (Writer, StreamId) {
    let journal = Journal::open_or_create(store).unwrap();
    journal
        .register_cluster(cluster, "https://bench.example:6443", Some("bench"))
        .unwrap();
    let spec = StreamSpec {
        resource: krply::sim::builtin_type("apps", "deployments").unwrap(),
        namespace: Some(ns.into()),
        selector: None,
    };
    let stream = journal.register_stream(cluster, &spec).unwrap();
    (Writer::start(journal).unwrap(), stream)
}
