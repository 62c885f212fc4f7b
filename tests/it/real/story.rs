//! The user story against the real server: `record -A` with the default
//! resources, a CRD's custom resources and Secrets; changes made with kubectl
//! by different field managers; then `diff`, `timeline` and `get --at`.

use super::{RealEnv, diff_object as object, mark};
use serde_json::{Value, json};

const NS: &str = "story";

/// A CRD whose `spec` keeps fields the schema does not name.
const CRD: &str = r#"{
  "apiVersion": "apiextensions.k8s.io/v1",
  "kind": "CustomResourceDefinition",
  "metadata": {"name": "widgets.krply.example.com"},
  "spec": {
    "group": "krply.example.com",
    "scope": "Namespaced",
    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wg"]},
    "versions": [{
      "name": "v1", "served": true, "storage": true,
      "schema": {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                 "properties": {"size": {"type": "integer"}}}}}}
    }]
  }
}"#;

/// A stream of `record -A`, by resource.
fn stream(resource: &str) -> String {
    format!("{resource}@*")
}

/// The object's changed fields as (path, before, after, manager).
fn fields(obj: &Value) -> Vec<(String, Value, Value, Value)> {
    obj["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_string(),
                f["before"].clone(),
                f["after"].clone(),
                f["manager"].clone(),
            )
        })
        .collect()
}

fn field(path: &str, before: Value, after: Value, manager: Value) -> (String, Value, Value, Value) {
    (path.to_string(), before, after, manager)
}

#[test]
fn record_all_namespaces_then_diff_timeline_and_get_at() {
    let env = RealEnv::new(NS);
    env.create_namespace(NS);
    env.install_shop(NS, "kubectl");
    env.kubectl_stdin(&["apply", "--server-side"], CRD);
    env.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/widgets.krply.example.com",
        "--timeout=60s",
    ]);
    env.kubectl_stdin(
        &["apply", "-n", NS],
        &json!({"apiVersion": "krply.example.com/v1", "kind": "Widget",
                "metadata": {"name": "w1"}, "spec": {"size": 1}})
        .to_string(),
    );
    env.kubectl_ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx:1.27",
        "--replicas=1",
    ]);
    env.kubectl_ok(&[
        "create",
        "configmap",
        "feature-flags",
        "--from-literal=checkout=off",
    ]);
    env.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "db",
        "--from-literal=password=hunter2",
    ]);

    let recorder = env.start_recorder(&[
        "-A",
        "deployments",
        "statefulsets",
        "daemonsets",
        "services",
        "configmaps",
        "namespaces",
        "widgets",
        "secrets",
        "--include-secrets",
    ]);
    env.wait_baselines(1);
    let t0 = mark();

    // Each change is journaled before the next starts, so the marks between
    // them fall between their observations.
    env.kubectl_ok(&["scale", "deployment/frontend", "--replicas=3"]);
    env.wait_journaled(&stream("deployments.v1.apps"), NS, "deployment/frontend");
    let t_scaled = mark();
    env.kubectl_ok(&["label", "deployment/frontend", "tier=web"]);
    env.kubectl_ok(&["scale", "deployment/web", "--replicas=4"]);
    env.kubectl_ok(&[
        "set",
        "image",
        "deployment/productcatalogservice",
        "server=gcr.io/google-samples/microservices-demo/productcatalogservice:v0.9.0",
    ]);
    env.kubectl_ok(&["annotate", "service/frontend", "team=payments"]);
    env.kubectl_ok(&[
        "patch",
        "configmap/feature-flags",
        "--type=merge",
        "-p",
        r#"{"data":{"checkout":"enabled"}}"#,
    ]);
    let editor = env.dir.path().join("editor.sh");
    std::fs::write(
        &editor,
        "#!/bin/sh\nsed -i 's/checkout: enabled/checkout: canary/' \"$1\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = env
        .kubectl_cmd(&["edit", "configmap/feature-flags"])
        .env("KUBE_EDITOR", &editor)
        .output()
        .unwrap();
    assert!(out.status.success(), "kubectl edit: {out:?}");
    env.kubectl_stdin(
        &["apply", "--server-side", "--field-manager=helm", "-n", NS],
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "release-values", "labels": {"app.kubernetes.io/managed-by": "Helm"}},
                "data": {"replicas": "3"}})
        .to_string(),
    );
    env.kubectl_ok(&["create", "configmap", "new-flags", "--from-literal=a=1"]);
    env.kubectl_ok(&["delete", "deployment/loadgenerator", "--wait=false"]);
    env.kubectl_ok(&[
        "patch",
        "widget/w1",
        "--type=merge",
        "-p",
        r#"{"spec":{"size":3,"color":"blue"}}"#,
    ]);
    env.kubectl_ok(&[
        "patch",
        "secret/db",
        "-p",
        r#"{"stringData":{"password":"hunter3"}}"#,
    ]);

    for (stream_of, kind, name, deleted) in [
        ("deployments.v1.apps", "deployment", "frontend", false),
        ("deployments.v1.apps", "deployment", "web", false),
        (
            "deployments.v1.apps",
            "deployment",
            "productcatalogservice",
            false,
        ),
        ("deployments.v1.apps", "deployment", "loadgenerator", true),
        ("services.v1", "service", "frontend", false),
        ("configmaps.v1", "configmap", "feature-flags", false),
        ("configmaps.v1", "configmap", "release-values", false),
        ("configmaps.v1", "configmap", "new-flags", false),
        ("widgets.v1.krply.example.com", "widget", "w1", false),
        ("secrets.v1", "secret", "db", false),
    ] {
        let what = format!("{kind}/{name}");
        if deleted {
            env.wait_deleted(&stream(stream_of), NS, &what);
        } else {
            env.wait_journaled(&stream(stream_of), NS, &what);
        }
    }
    let t_end = mark();

    // diff: every change with its before, after and field manager.
    let diff = env.krply_json(&["diff", "--since", &t0, "--until", &t_end], 0);
    assert_eq!(diff["complete"], true, "{diff:#}");
    let changed = crate::common::diff_changes(&diff);
    let mut expected: Vec<(String, String, String)> = [
        ("ConfigMap", "feature-flags", "modified"),
        ("ConfigMap", "new-flags", "added"),
        ("ConfigMap", "release-values", "added"),
        ("Deployment", "frontend", "modified"),
        ("Deployment", "loadgenerator", "deleted"),
        ("Deployment", "productcatalogservice", "modified"),
        ("Deployment", "web", "modified"),
        ("Secret", "db", "modified"),
        ("Service", "frontend", "modified"),
        ("Widget", "w1", "modified"),
    ]
    .iter()
    .map(|(k, n, c)| (k.to_string(), n.to_string(), c.to_string()))
    .collect();
    let mut sorted = changed.clone();
    sorted.sort();
    expected.sort();
    assert_eq!(sorted, expected, "{diff:#}");

    // `kubectl scale` through the scale subresource: the real server gives
    // spec.replicas to the scaling manager only where someone owned it
    // before (web was created with --replicas); the shop's Deployments were
    // applied without replicas, so after the scale nobody owns it.
    assert_eq!(
        fields(object(&diff, "Deployment", "frontend")),
        [
            field(
                "metadata.labels.tier",
                Value::Null,
                json!("web"),
                json!("kubectl-label")
            ),
            field("spec.replicas", json!(1), json!(3), Value::Null),
        ]
    );
    assert_eq!(
        fields(object(&diff, "Deployment", "web")),
        [field("spec.replicas", json!(1), json!(4), json!("kubectl"))]
    );
    // (The controller's revision annotation is server-owned noise.)
    assert_eq!(
        fields(object(&diff, "Deployment", "productcatalogservice")),
        [field(
            "spec.template.spec.containers[0].image",
            super::shop_image("productcatalogservice"),
            json!("gcr.io/google-samples/microservices-demo/productcatalogservice:v0.9.0"),
            json!("kubectl-set")
        )]
    );
    assert_eq!(
        fields(object(&diff, "Service", "frontend")),
        // The Service had no annotations: the whole map appears.
        [field(
            "metadata.annotations",
            Value::Null,
            json!({"team": "payments"}),
            json!("kubectl-annotate")
        )]
    );
    assert_eq!(
        fields(object(&diff, "ConfigMap", "feature-flags")),
        [field(
            "data.checkout",
            json!("off"),
            json!("canary"),
            json!("kubectl-edit")
        )]
    );
    // A custom resource keeps the field its schema does not name.
    assert_eq!(
        fields(object(&diff, "Widget", "w1")),
        [
            field(
                "spec.color",
                Value::Null,
                json!("blue"),
                json!("kubectl-patch")
            ),
            field("spec.size", json!(1), json!(3), json!("kubectl-patch")),
        ]
    );
    // A Secret's values are digests, never the value.
    let secret = fields(object(&diff, "Secret", "db"));
    assert_eq!(secret.len(), 1, "{secret:?}");
    let (path, before, after, manager) = &secret[0];
    assert_eq!(path, "data.password");
    assert_eq!(manager, "kubectl-patch");
    for v in [before, after] {
        assert!(v.as_str().unwrap().starts_with("sha256:"), "{v}");
    }
    assert_ne!(before, after);

    // timeline: the baseline, the scale, then the label, in order; the
    // controller's status updates in between change nothing outside status.
    let timeline = env.krply_json(&["timeline", "deployment/frontend"], 0);
    assert_eq!(timeline["complete"], true, "{timeline:#}");
    let entries = timeline["entries"].as_array().unwrap();
    assert_eq!(entries[0]["type"], "BASELINE");
    assert_eq!(entries[0]["synthetic"], true);
    let changes: Vec<(Value, Vec<String>)> = entries
        .iter()
        .filter(|e| !e["fields"].as_array().unwrap().is_empty())
        .map(|e| {
            (
                e["type"].clone(),
                e["fields"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|f| f["path"].as_str().unwrap().to_string())
                    .collect(),
            )
        })
        .collect();
    assert_eq!(
        changes,
        [
            (json!("MODIFIED"), vec!["spec.replicas".to_string()]),
            (json!("MODIFIED"), vec!["metadata.labels.tier".to_string()]),
        ],
        "{timeline:#}"
    );
    assert!(entries.iter().all(|e| e["type"] != "GAP"));

    // get --at: the object as it was between the scale and the label.
    let at = |name: &str, t: &str| env.run(&["get", name, "--at", t, "-o", "json"]);
    let between = at("deployment/frontend", &t_scaled);
    assert_eq!(between.code, Some(0), "{between:?}");
    let between: Value = serde_json::from_str(&between.stdout).unwrap();
    assert_eq!(between["spec"]["replicas"], 3);
    assert!(between["metadata"]["labels"].get("tier").is_none());
    assert_eq!(between["apiVersion"], "apps/v1");
    assert_eq!(between["kind"], "Deployment");
    let before: Value = serde_json::from_str(&at("deployment/frontend", &t0).stdout).unwrap();
    assert_eq!(before["spec"]["replicas"], 1);
    // A deleted object: there at t0, gone at the end, and the answer says when it existed.
    assert_eq!(at("deployment/loadgenerator", &t0).code, Some(0));
    let gone = at("deployment/loadgenerator", &t_end);
    assert_eq!(gone.code, Some(1), "{gone:?}");
    assert!(gone.stderr.starts_with("error: "), "{gone:?}");
    let widget: Value = serde_json::from_str(&at("widget/w1", &t_end).stdout).unwrap();
    assert_eq!(widget["spec"], json!({"size": 3, "color": "blue"}));
    assert_eq!(widget["apiVersion"], "krply.example.com/v1");

    // No Secret value reaches an answer or an export.
    let export = env.run(&["export"]);
    assert_eq!(export.code, Some(0));
    let secret_now = at("secret/db", &t_end);
    for text in [&export.stdout, &secret_now.stdout] {
        for plain in ["hunter2", "hunter3", "aHVudGVyMg==", "aHVudGVyMw=="] {
            assert!(!text.contains(plain), "{plain} leaked");
        }
    }

    let stopped = recorder.stop();
    assert_eq!(stopped.code, Some(0), "{stopped:?}");
}
