//! A long timeline (the history reads versions on one thread and compares them
//! on others, in runs of consecutive versions): every version must be compared
//! with the one before it, across runs, across a relist that no longer saw the
//! object, and never with a version before a deletion.

use assert_cmd::Command;
use krply::model::WatchType;
use krply::time::Millis;
use serde_json::{Value, json};

const CLUSTER: &str = "long-cluster";

/// An entry's type and its changed fields as (path, before, after).
type Summary = (String, Vec<(String, Value, Value)>);
const NS: &str = "t";

fn deployment(name: &str, replicas: u64, rv: u64) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": NS, "uid": format!("uid-{name}"),
                     "resourceVersion": rv.to_string()},
        "spec": {"replicas": replicas, "template": {"spec": {"containers": [
            {"name": "app", "image": "registry.example/app:1"}]}}}
    })
}

#[test]
fn every_version_is_compared_with_the_one_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("journal.db");
    let (writer, tx, stream) = crate::common::library_writer(&store, CLUSTER, NS);
    let start = Millis::now().as_ms() - 3_600_000;
    let mut rv = 100;
    let mut at = start;
    let list = |items: &[Value], at: i64, rv: u64| {
        crate::common::send_list(&tx, stream, NS, items, (at, rv));
    };
    let event = |watch_type: WatchType, d: &Value, at: i64| {
        crate::common::send_event(&tx, stream, NS, (watch_type, d), at);
    };
    list(
        &[deployment("web", 0, rv), deployment("other", 1, rv)],
        at,
        rv,
    );
    // More versions than one chunk, then a relist without the object (its
    // DELETED fell into a gap), then it comes back and changes again.
    for n in 1..=700 {
        rv += 1;
        at += 1000;
        event(WatchType::Modified, &deployment("web", n, rv), at);
    }
    rv += 1;
    at += 1000;
    list(&[deployment("other", 1, rv)], at, rv);
    rv += 1;
    at += 1000;
    event(WatchType::Added, &deployment("web", 1000, rv), at);
    for n in 1001..=1400 {
        rv += 1;
        at += 1000;
        event(WatchType::Modified, &deployment("web", n, rv), at);
    }
    // Deleted, then created again: the new one is not compared with the old.
    rv += 1;
    at += 1000;
    event(WatchType::Deleted, &deployment("web", 1400, rv), at);
    for n in 2000..=2020 {
        rv += 1;
        at += 1000;
        let t = if n == 2000 {
            WatchType::Added
        } else {
            WatchType::Modified
        };
        event(t, &deployment("web", n, rv), at);
    }
    crate::common::stop_writer(writer, tx, stream, (at + 1000, rv));

    let out = Command::cargo_bin("kubectl-krply")
        .unwrap()
        .args(["timeline", "deploy/web", "-o", "json", "--store"])
        .arg(&store)
        .args(["--cluster-id", CLUSTER, "-n", NS])
        .env("KUBECONFIG", dir.path().join("none"))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    let entries = answer["entries"].as_array().unwrap();
    let summary: Vec<Summary> = entries
        .iter()
        .map(|e| {
            let fields = e["fields"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| {
                    (
                        f["path"].as_str().unwrap().to_string(),
                        f["before"].clone(),
                        f["after"].clone(),
                    )
                })
                .collect();
            (e["type"].as_str().unwrap_or_default().to_string(), fields)
        })
        .collect();
    let mut expected: Vec<Summary> = vec![("BASELINE".to_string(), vec![])];
    let replicas = |from: u64, to: u64| vec![("spec.replicas".to_string(), json!(from), json!(to))];
    for n in 1..=700 {
        expected.push(("MODIFIED".into(), replicas(n - 1, n)));
    }
    expected.push(("DELETED".into(), vec![]));
    expected.push(("ADDED".into(), vec![]));
    for n in 1001..=1400 {
        expected.push(("MODIFIED".into(), replicas(n - 1, n)));
    }
    expected.push(("DELETED".into(), vec![]));
    expected.push(("ADDED".into(), vec![]));
    for n in 2001..=2020 {
        expected.push(("MODIFIED".into(), replicas(n - 1, n)));
    }
    assert_eq!(summary.len(), expected.len());
    for (i, (got, want)) in summary.iter().zip(&expected).enumerate() {
        assert_eq!(got, want, "entry {i}");
    }
}
