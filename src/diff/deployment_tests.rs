//! Snapshot tests on a real Deployment (Online Boutique's `frontend`) changed the way
//! people change Deployments: scale, new image, a new env var at the front, a new
//! dotted label, plus the noise the server and the controller add meanwhile.

use serde_json::{Value, json};

use super::*;

const FIXTURE: &str = include_str!("../../fixtures/shop/online-boutique.json");

fn frontend() -> Value {
    let list: Value = serde_json::from_str(FIXTURE).expect("fixture is JSON");
    list["items"]
        .as_array()
        .and_then(|items| {
            items
                .iter()
                .find(|i| i["kind"] == "Deployment" && i["metadata"]["name"] == "frontend")
        })
        .cloned()
        .expect("fixture has the frontend Deployment")
}

/// The recorded version before the change, with what the server adds.
pub(crate) fn before() -> Value {
    let mut d = frontend();
    d["metadata"]["uid"] = json!("6f1c2e9a-0000-4000-8000-000000000001");
    d["metadata"]["resourceVersion"] = json!("1200");
    d["metadata"]["generation"] = json!(1);
    d["metadata"]["creationTimestamp"] = json!("2026-11-29T09:00:00Z");
    d["metadata"]["annotations"] = json!({"deployment.kubernetes.io/revision": "1"});
    d["spec"]["replicas"] = json!(1);
    d["status"] = json!({"replicas": 1, "readyReplicas": 1, "observedGeneration": 1});
    d
}

/// The version after `kubectl scale`, `kubectl set image`, an edit adding an env var at
/// the front of the list and a dotted label, and the controller's rollout.
pub(crate) fn after() -> Value {
    let mut d = before();
    d["metadata"]["resourceVersion"] = json!("1350");
    d["metadata"]["generation"] = json!(3);
    d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = json!("2");
    d["metadata"]["labels"]["app.kubernetes.io/name"] = json!("frontend");
    d["spec"]["replicas"] = json!(3);
    let server = &mut d["spec"]["template"]["spec"]["containers"][0];
    server["image"] =
        json!("us-central1-docker.pkg.dev/online-boutique-ci/microservices-demo/frontend:v0.10.7");
    if let Some(env) = server["env"].as_array_mut() {
        env.insert(0, json!({"name": "LOG_LEVEL", "value": "debug"}));
    }
    d["status"] = json!({"replicas": 3, "readyReplicas": 2, "observedGeneration": 3});
    d["metadata"]["managedFields"] = json!([
        {
            "manager": "kubectl-client-side-apply",
            "operation": "Update",
            "apiVersion": "apps/v1",
            "time": "2026-11-29T09:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                "f:spec": {"f:template": {"f:spec": {"f:containers": {
                    "k:{\"name\":\"server\"}": {
                        ".": {}, "f:name": {}, "f:image": {},
                        "f:env": {".": {}, "k:{\"name\":\"PORT\"}": {".": {}, "f:name": {}, "f:value": {}}}
                    }
                }}}}
            }
        },
        {
            "manager": "kubectl-edit",
            "operation": "Update",
            "apiVersion": "apps/v1",
            "time": "2026-11-29T10:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {"f:labels": {"f:app.kubernetes.io/name": {}}},
                "f:spec": {"f:template": {"f:spec": {"f:containers": {
                    "k:{\"name\":\"server\"}": {
                        "f:env": {"k:{\"name\":\"LOG_LEVEL\"}": {".": {}, "f:name": {}, "f:value": {}}}
                    }
                }}}}
            }
        },
        {
            "manager": "kubectl-set",
            "operation": "Update",
            "apiVersion": "apps/v1",
            "time": "2026-11-29T10:02:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {"f:template": {"f:spec": {"f:containers": {
                "k:{\"name\":\"server\"}": {"f:image": {}}
            }}}}}
        },
        {
            "manager": "kubectl",
            "operation": "Update",
            "apiVersion": "apps/v1",
            "time": "2026-11-29T10:05:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {"f:replicas": {}}},
            "subresource": "scale"
        }
    ]);
    d
}

#[test]
fn deployment_change_json_with_status() {
    let (before, after) = (before(), after());
    let changes = diff_objects(
        &before,
        &after,
        &DiffOptions {
            include_status: true,
        },
    );
    let fields: Vec<Value> = changes
        .iter()
        .map(|c| {
            json!({
                "path": c.path,
                "before": c.before,
                "after": c.after,
                "manager": field_manager(&after, &c.path),
            })
        })
        .collect();
    insta::assert_json_snapshot!("deployment_change_json_with_status", fields);
}

#[test]
fn deployment_changed_paths_for_the_live_feed() {
    let paths = changed_paths(&before(), &after(), &DiffOptions::default());
    assert_eq!(
        paths,
        vec![
            r#"metadata.labels["app.kubernetes.io/name"]"#,
            "spec.template.spec.containers[0].env[0]",
            "spec.template.spec.containers[0].image",
            "spec.replicas",
        ]
    );
}

#[test]
fn every_fixture_object_against_itself_and_a_relabelled_copy() {
    let list: Value = serde_json::from_str(FIXTURE).expect("fixture is JSON");
    let items = list["items"].as_array().cloned().unwrap_or_default();
    assert_eq!(items.len(), 35);
    for item in items {
        assert!(diff_objects(&item, &item, &DiffOptions::default()).is_empty());
        let mut changed = item.clone();
        changed["metadata"]["labels"]["krply.dev/test"] = json!("1");
        let expected = if item["metadata"].get("labels").is_some() {
            r#"metadata.labels["krply.dev/test"]"#
        } else {
            "metadata.labels"
        };
        assert_eq!(
            changed_paths(&item, &changed, &DiffOptions::default()),
            vec![expected.to_owned()]
        );
    }
}
