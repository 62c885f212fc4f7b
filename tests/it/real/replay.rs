//! Replay against the real server: a plan of the Online Boutique as it was
//! before the changes, proved by the real server-side-apply dry run of every
//! object, applied, and compared with what the server then holds.

use super::{RealEnv, mark};
use serde_json::{Value, json};

/// Objects the shop does not have but replays must survive: a headless
/// Service (its `clusterIP: None` is configuration, not an allocation), a
/// NodePort Service (its allocated port must not be copied), a StatefulSet
/// with a claim template, a DaemonSet, and a Job and a CronJob (replayed only
/// with `--include`; the server gives a Job a selector and labels of its own).
fn extras(namespace: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Service",
         "metadata": {"name": "db", "namespace": namespace},
         "spec": {"clusterIP": "None", "selector": {"app": "db"}, "ports": [{"port": 5432}]}},
        {"apiVersion": "v1", "kind": "Service",
         "metadata": {"name": "admin", "namespace": namespace},
         "spec": {"type": "NodePort", "selector": {"app": "admin"}, "ports": [{"port": 80, "targetPort": 8080}]}},
        {"apiVersion": "apps/v1", "kind": "StatefulSet",
         "metadata": {"name": "db", "namespace": namespace},
         "spec": {"serviceName": "db", "replicas": 1,
                  "selector": {"matchLabels": {"app": "db"}},
                  "template": {"metadata": {"labels": {"app": "db"}},
                               "spec": {"containers": [{"name": "pg", "image": "postgres:17",
                                        "volumeMounts": [{"name": "data", "mountPath": "/var/lib/postgresql"}]}]}},
                  "volumeClaimTemplates": [{"metadata": {"name": "data"},
                      "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}},
        {"apiVersion": "batch/v1", "kind": "Job",
         "metadata": {"name": "migrate", "namespace": namespace},
         "spec": {"template": {"spec": {"restartPolicy": "Never",
                  "containers": [{"name": "m", "image": "busybox:1.37", "command": ["true"]}]}}}},
        {"apiVersion": "batch/v1", "kind": "CronJob",
         "metadata": {"name": "nightly", "namespace": namespace},
         "spec": {"schedule": "0 3 * * *",
                  "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "OnFailure",
                      "containers": [{"name": "n", "image": "busybox:1.37"}]}}}}}},
        {"apiVersion": "apps/v1", "kind": "DaemonSet",
         "metadata": {"name": "agent", "namespace": namespace},
         "spec": {"selector": {"matchLabels": {"app": "agent"}},
                  "template": {"metadata": {"labels": {"app": "agent"}},
                               "spec": {"containers": [{"name": "a", "image": "busybox:1.37",
                                   "env": [{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "agent-token", "key": "t"}}}],
                                   "envFrom": [{"configMapRef": {"name": "agent-config"}}]}]}}}}
    ]})
}

/// Records `source` (the shop, a ConfigMap and [`extras`]), then changes it;
/// returns the time before the changes, with the recorder still running.
fn record_then_change(env: &RealEnv, source: &str) -> (crate::common::RecorderProc, String) {
    env.create_namespace(source);
    env.install_shop(source, "kubectl");
    env.kubectl_stdin(
        &["apply", "--server-side", "-n", source],
        &extras(source).to_string(),
    );
    env.kubectl_ok(&[
        "create",
        "configmap",
        "flags",
        "-n",
        source,
        "--from-literal=checkout=off",
    ]);
    let recorder = env.start_recorder(&[
        "-n", source, "deploy", "sts", "ds", "svc", "cm", "sa", "jobs", "cronjobs",
    ]);
    env.wait_baselines(1);
    let before = mark();
    env.kubectl_ok(&["scale", "-n", source, "deployment/frontend", "--replicas=3"]);
    env.kubectl_ok(&[
        "set",
        "image",
        "-n",
        source,
        "deployment/productcatalogservice",
        "server=gcr.io/google-samples/microservices-demo/productcatalogservice:v0.9.0",
    ]);
    env.kubectl_ok(&[
        "patch",
        "-n",
        source,
        "configmap/flags",
        "-p",
        r#"{"data":{"checkout":"on"}}"#,
    ]);
    env.kubectl_ok(&[
        "delete",
        "-n",
        source,
        "deployment/loadgenerator",
        "--wait=false",
    ]);
    env.wait_journaled(
        &format!("configmaps.v1@{source}"),
        source,
        "configmap/flags",
    );
    env.wait_journaled(
        &format!("deployments.v1.apps@{source}"),
        source,
        "deployment/productcatalogservice",
    );
    env.wait_deleted(
        &format!("deployments.v1.apps@{source}"),
        source,
        "deployment/loadgenerator",
    );
    (recorder, before)
}

/// `kubectl diff --server-side` of the plan's manifests against the target:
/// exit 0 when the server holds exactly what the plan declares. Controllers
/// still writing the new objects (a Job's status, a Deployment's revision)
/// make the live object and the dry run's result differ for a moment: the
/// diff is asked again until it is empty, and fails with the last one shown
/// if it stays non-empty.
fn server_side_diff(env: &RealEnv, plan: &str, as_user: &[&str]) {
    let shown = env.run(&["replay", "show", plan, "-o", "yaml"]);
    assert_eq!(shown.code, Some(0), "{shown:?}");
    let path = env.dir.path().join(format!("plan-{plan}.yaml"));
    std::fs::write(&path, &shown.stdout).unwrap();
    let manager = format!("--field-manager=krply-plan-{plan}");
    let mut args = vec![
        "diff",
        "--server-side",
        &manager,
        "-f",
        path.to_str().unwrap(),
    ];
    args.extend(as_user);
    let start = std::time::Instant::now();
    loop {
        let diff = env.kubectl(&args);
        if diff.code == Some(0) {
            return;
        }
        assert!(
            start.elapsed() < crate::common::DEADLINE,
            "the server holds something other than the plan:\n{}{}",
            diff.stdout,
            diff.stderr
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

fn objects_of(plan: &Value, kind: &str) -> usize {
    plan["objects"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["kind"] == kind)
        .count()
}

#[test]
fn a_plan_of_the_shop_before_the_changes_dry_runs_and_applies_on_the_real_server() {
    const SRC: &str = "replay-src";
    const DST: &str = "replay-dst";
    let env = RealEnv::new(SRC);
    let (recorder, before) = record_then_change(&env, SRC);
    // The target exists, so that every object gets the real dry run (into a
    // missing namespace only the Namespace could).
    env.create_namespace(DST);

    let plan = env.krply_json(
        &[
            "replay",
            "plan",
            "-n",
            SRC,
            "--at",
            &before,
            "--to-namespace",
            DST,
            "--include",
            "Job",
            "--include",
            "CronJob",
        ],
        0,
    );
    assert_eq!(plan["status"], "dry-run-ok", "{plan:#}");
    assert_eq!(plan["complete"], true, "{plan:#}");
    assert_eq!(
        (objects_of(&plan, "Job"), objects_of(&plan, "CronJob")),
        (1, 1),
        "{plan:#}"
    );
    let objects = plan["objects"].as_array().unwrap();
    let kinds = |kind: &str| objects.iter().filter(|o| o["kind"] == kind).count();
    assert_eq!(
        (
            kinds("Namespace"),
            kinds("ConfigMap"),
            kinds("Service"),
            kinds("Deployment"),
            kinds("StatefulSet"),
            kinds("DaemonSet"),
            kinds("ServiceAccount")
        ),
        (1, 1, 13, 12, 1, 1, 11),
        "{plan:#}"
    );
    for o in objects {
        assert_eq!(o["dry_run"], "ok", "{o:#}");
    }
    let excluded: Vec<&str> = plan["excluded"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        excluded,
        ["kube-root-ca.crt", "frontend-external", "default"],
        "{plan:#}"
    );
    let id = plan["id"].as_str().unwrap().to_string();

    let applied = env.krply_json(&["replay", "apply", &id, "--confirm"], 0);
    assert_eq!(applied["status"], "applied", "{applied:#}");
    server_side_diff(&env, &id, &[]);

    // What the namespace was before the changes, not after them.
    let get = |what: &str| env.get_json(what, DST);
    assert_eq!(get("deployment/frontend")["spec"]["replicas"], 1);
    assert_eq!(
        get("deployment/productcatalogservice")["spec"]["template"]["spec"]["containers"][0]["image"],
        super::shop_image("productcatalogservice")
    );
    assert_eq!(
        get("deployment/loadgenerator")["metadata"]["name"],
        "loadgenerator"
    );
    assert_eq!(get("configmap/flags")["data"]["checkout"], "off");
    // Still headless; a NodePort of its own, not the source's.
    assert_eq!(get("service/db")["spec"]["clusterIP"], "None");
    let admin = get("service/admin");
    assert_eq!(admin["spec"]["type"], "NodePort");
    let source_port = env.get_json("service/admin", SRC)["spec"]["ports"][0]["nodePort"].clone();
    assert_ne!(admin["spec"]["ports"][0]["nodePort"], source_port);
    // Applied by the plan's own field manager, never forced.
    let frontend: Value = serde_json::from_str(&env.kubectl_ok(&[
        "get",
        "-n",
        DST,
        "deployment/frontend",
        "--show-managed-fields",
        "-o",
        "json",
    ]))
    .unwrap();
    let managers: Vec<String> = frontend["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["manager"].as_str().unwrap().to_string())
        .collect();
    assert!(
        managers.contains(&format!("krply-plan-{id}")),
        "{managers:?}"
    );

    let stopped = recorder.stop();
    assert_eq!(stopped.code, Some(0), "{stopped:?}");
}

/// The limited user (the kubeconfig's `limited` context), with only
/// docs/rbac/replay-role.yaml bound, can plan and apply: the plan records
/// that context as its target, and apply uses it.
#[test]
fn the_documented_replay_role_is_enough_to_plan_and_apply() {
    const SRC: &str = "replay-rbac-src";
    const DST: &str = "replay-rbac-dst";
    let env = RealEnv::new(SRC);
    let (recorder, before) = record_then_change(&env, SRC);
    env.create_namespace(DST);
    let role = std::fs::read_to_string(format!(
        "{}/docs/rbac/replay-role.yaml",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
    .replace("shop-replay", DST)
    .replace("jane@example.com", "krply-limited");
    let path = env.dir.path().join("replay-role.yaml");
    std::fs::write(&path, role).unwrap();
    env.kubectl_ok(&["apply", "-f", path.to_str().unwrap()]);
    env.wait_can_i("krply-limited", "patch", "deployments.apps", &["-n", DST]);
    env.wait_can_i("krply-limited", "patch", "namespaces", &[]);
    // The DaemonSet names a ConfigMap the target has, and a Secret the role
    // may not look at.
    env.kubectl_ok(&["create", "configmap", "agent-config", "-n", DST]);

    let plan = env.krply_json(
        &[
            "replay",
            "plan",
            "-n",
            SRC,
            "--at",
            &before,
            "--to-namespace",
            DST,
            "--target-context",
            "limited",
        ],
        0,
    );
    assert_eq!(plan["status"], "dry-run-ok", "{plan:#}");
    assert_eq!(plan["target"]["context"], "limited", "{plan:#}");
    let missing: Vec<String> = plan["missing"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            format!(
                "{}/{}",
                m["kind"].as_str().unwrap(),
                m["name"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(missing, ["Secret/agent-token"], "{plan:#}");
    let warning = plan["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .find(|w| w.starts_with("Secret agent-token (used by DaemonSet/agent)"))
        .unwrap_or_else(|| panic!("{plan:#}"));
    assert!(
        warning.contains("could not check the target") && warning.contains("forbidden"),
        "{warning}"
    );
    let id = plan["id"].as_str().unwrap().to_string();
    let applied = env.krply_json(&["replay", "apply", &id, "--confirm"], 0);
    assert_eq!(applied["status"], "applied", "{applied:#}");
    server_side_diff(&env, &id, &["--context", "limited"]);
    assert_eq!(recorder.stop().code, Some(0));
}
