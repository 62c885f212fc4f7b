//! The offline answers on a journal recorded from the real server:
//! `snapshot`, `coverage --strict`, `export` (NDJSON, and Parquet read back
//! by `import`) and `prune`.

use super::{RealEnv, mark};
use crate::common::path_str;
use serde_json::Value;

fn items<'a>(snapshot: &'a Value, kind: &str) -> Vec<&'a Value> {
    snapshot["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["kind"] == kind)
        .collect()
}

fn named<'a>(snapshot: &'a Value, kind: &str, name: &str) -> &'a Value {
    items(snapshot, kind)
        .into_iter()
        .find(|i| i["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind}/{name} in {snapshot:#}"))
}

#[test]
fn snapshot_coverage_export_and_prune_answer_from_a_real_recording() {
    const NS: &str = "answers";
    let env = RealEnv::new(NS);
    env.create_namespace(NS);
    env.kubectl_ok(&["create", "configmap", "a", "--from-literal=v=1"]);
    env.kubectl_ok(&["create", "deployment", "web", "--image=nginx:1.27"]);
    let cm = format!("configmaps.v1@{NS}");
    let deploy = format!("deployments.v1.apps@{NS}");

    let recorder = env.start_recorder(&[]);
    env.wait_baselines(1);
    let t1 = mark();
    env.kubectl_ok(&["patch", "configmap/a", "-p", r#"{"data":{"v":"2"}}"#]);
    env.kubectl_ok(&["scale", "deployment/web", "--replicas=2"]);
    env.wait_journaled(&cm, NS, "configmap/a");
    env.wait_journaled(&deploy, NS, "deployment/web");
    let t2 = mark();
    env.kubectl_ok(&["create", "configmap", "b", "--from-literal=v=1"]);
    env.wait_journaled(&cm, NS, "configmap/b");
    let rv_a = env.get_json("configmap/a", NS)["metadata"]["resourceVersion"].clone();
    assert_eq!(recorder.stop().code, Some(0));
    let t3 = mark();

    // snapshot: the state at each time, complete while the recorder watched.
    let at_t1 = env.krply_json(&["snapshot", "--at", &t1, "--strict"], 0);
    assert_eq!(at_t1["complete"], true, "{at_t1:#}");
    assert_eq!(
        at_t1["watermarks"].as_array().unwrap().len(),
        krply::recorder::DEFAULT_RESOURCES.len(),
        "{at_t1:#}"
    );
    assert_eq!(named(&at_t1, "ConfigMap", "a")["data"]["v"], "1");
    assert_eq!(named(&at_t1, "Deployment", "web")["spec"]["replicas"], 1);
    assert!(
        items(&at_t1, "ConfigMap")
            .iter()
            .all(|c| c["metadata"]["name"] != "b")
    );
    // The controller-manager's own ConfigMap, listed with the rest.
    named(&at_t1, "ConfigMap", "kube-root-ca.crt");
    let at_t2 = env.krply_json(&["snapshot", "--at", &t2], 0);
    assert_eq!(named(&at_t2, "ConfigMap", "a")["data"]["v"], "2");
    assert_eq!(named(&at_t2, "Deployment", "web")["spec"]["replicas"], 2);
    // Now is after the recorder stopped: nobody watched since.
    let now = env.run(&["snapshot", "--strict"]);
    assert_eq!(now.code, Some(3), "{now:?}");

    // coverage: every stream complete from its baseline to its last checkpoint.
    let coverage = env.run(&["coverage", "--strict"]);
    assert_eq!(coverage.code, Some(0), "{coverage:?}");

    // export: NDJSON, oldest first, the events as the server sent them.
    let export = env.run(&["export"]);
    assert_eq!(export.code, Some(0), "{export:?}");
    let lines: Vec<Value> = export
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    let seqs: Vec<i64> = lines.iter().map(|l| l["seq"].as_i64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "oldest first");
    let kinds = |record: &str| lines.iter().filter(|l| l["record"] == record).count();
    assert!(kinds("baseline") >= 5 && kinds("event") >= 3 && kinds("checkpoint") >= 5);
    let event = lines
        .iter()
        .find(|l| l["record"] == "event" && l["name"] == "a" && l["resource_version"] == rv_a)
        .expect("the patch of configmap/a, at the server's resourceVersion");
    assert_eq!(event["watch_type"], "MODIFIED");
    assert_eq!(event["object"]["data"]["v"], "2");
    assert_eq!(event["object"]["metadata"]["resourceVersion"], rv_a);

    // Parquet segments of the recording, read back into another journal by
    // import: every answer the same, byte for byte.
    let segments = env.dir.path().join("segments");
    let copy = env.dir.path().join("copy.db");
    let exported = env.run(&[
        "export",
        "--format",
        "parquet",
        "--dir",
        path_str(&segments),
    ]);
    assert_eq!(exported.code, Some(0), "{exported:?}");
    let imported = env.run(&["--store", path_str(&copy), "import", path_str(&segments)]);
    assert_eq!(imported.code, Some(0), "{imported:?}");
    let questions: [&[&str]; 6] = [
        &["diff", "--since", &t1, "--until", &t3, "-o", "json"],
        &["log", "--since", &t1, "--until", &t3],
        &["timeline", "deployment/web", "-o", "json"],
        &["get", "configmap/a", "--at", &t2, "-o", "json"],
        &["snapshot", "--at", &t2, "-o", "json"],
        &["coverage", "-o", "json"],
    ];
    for q in questions {
        let here = env.run(q);
        let there = env.run(&[&["--store", path_str(&copy)][..], q].concat());
        assert_eq!(here.code, Some(0), "{q:?}: {here:?}");
        assert_eq!(
            (there.code, &there.stdout, &there.stderr),
            (here.code, &here.stdout, &here.stderr),
            "{q:?} after export and import"
        );
    }

    // prune: answers from the cut on are unchanged.
    let diff_before = env.krply_json(&["diff", "--since", &t2, "--until", &t3], 0);
    let snap_before = env.krply_json(&["snapshot", "--at", &t2], 0);
    let pruned = env.run(&["prune", "--before", &t2]);
    assert_eq!(pruned.code, Some(0), "{pruned:?}");
    assert_eq!(
        env.krply_json(&["diff", "--since", &t2, "--until", &t3], 0),
        diff_before
    );
    assert_eq!(env.krply_json(&["snapshot", "--at", &t2], 0), snap_before);
    let gone = env.run(&["get", "configmap/a", "--at", &t1]);
    assert_ne!(
        gone.code,
        Some(0),
        "history before the cut is gone: {gone:?}"
    );
}
