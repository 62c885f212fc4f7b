//! Sanitizing a recorded object into a manifest to apply elsewhere
//! (docs/replay-safety.md, "Sanitization"): drop what the server or a controller assigned, at exact paths only
//! (an empty `emptyDir: {}` is configuration and stays).

use serde_json::{Map, Value};

/// `metadata` fields the server owns.
const SERVER_METADATA: &[&str] = &[
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "generation",
    "managedFields",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "selfLink",
    "ownerReferences",
    "finalizers",
];

/// Annotations written by tools or controllers, not by the object's author.
const SERVER_ANNOTATIONS: &[&str] = &[
    "kubectl.kubernetes.io/last-applied-configuration",
    "deployment.kubernetes.io/revision",
    "deprecated.daemonset.template.generation",
];

/// Labels controllers add to the pod templates and selectors they manage.
const CONTROLLER_LABELS: &[&str] = &[
    "pod-template-hash",
    "controller-revision-hash",
    "pod-template-generation",
];

fn object<'a>(v: &'a mut Value, path: &[&str]) -> Option<&'a mut Map<String, Value>> {
    let mut cur = v;
    for key in path {
        cur = cur.get_mut(*key)?;
    }
    cur.as_object_mut()
}

fn remove_keys(map: Option<&mut Map<String, Value>>, keys: &[&str]) {
    if let Some(map) = map {
        for k in keys {
            map.remove(*k);
        }
    }
}

/// Removes an emptied map at `path` (a `labels: {}` left by a removed hash).
fn drop_if_empty(v: &mut Value, path: &[&str]) {
    let Some((last, parent)) = path.split_last() else {
        return;
    };
    if object(v, path).is_some_and(|m| m.is_empty())
        && let Some(p) = object(v, parent)
    {
        p.remove(*last);
    }
}

/// A manifest from a recorded object of `kind`: server-owned fields gone.
pub fn sanitize(kind: &str, recorded: &Value) -> Value {
    let mut v = recorded.clone();
    if let Some(root) = v.as_object_mut() {
        root.remove("status");
    }
    remove_keys(object(&mut v, &["metadata"]), SERVER_METADATA);
    remove_keys(
        object(&mut v, &["metadata", "annotations"]),
        SERVER_ANNOTATIONS,
    );
    drop_if_empty(&mut v, &["metadata", "annotations"]);
    match kind {
        "Service" => {
            // An allocated address is the cluster's; `None` (a headless
            // Service) is the author's choice and must survive the replay.
            let headless = v.pointer("/spec/clusterIP").and_then(Value::as_str) == Some("None");
            remove_keys(object(&mut v, &["spec"]), &["healthCheckNodePort"]);
            if !headless {
                remove_keys(object(&mut v, &["spec"]), &["clusterIP", "clusterIPs"]);
            }
            if let Some(ports) = v.pointer_mut("/spec/ports").and_then(Value::as_array_mut) {
                for p in ports.iter_mut().filter_map(Value::as_object_mut) {
                    p.remove("nodePort");
                }
            }
        }
        "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" | "Job" => {
            for path in [
                &["spec", "template", "metadata", "labels"][..],
                &["spec", "selector", "matchLabels"],
            ] {
                remove_keys(object(&mut v, path), CONTROLLER_LABELS);
            }
            // `kubectl` writes a null creationTimestamp into templates.
            if let Some(m) = object(&mut v, &["spec", "template", "metadata"])
                && m.get("creationTimestamp").is_some_and(Value::is_null)
            {
                m.remove("creationTimestamp");
            }
            if kind == "Job" {
                // The Job controller's own selector and labels.
                remove_keys(
                    object(&mut v, &["spec", "selector", "matchLabels"]),
                    &["controller-uid", "batch.kubernetes.io/controller-uid"],
                );
                remove_keys(
                    object(&mut v, &["spec", "template", "metadata", "labels"]),
                    &[
                        "controller-uid",
                        "batch.kubernetes.io/controller-uid",
                        "job-name",
                        "batch.kubernetes.io/job-name",
                    ],
                );
                remove_keys(object(&mut v, &["spec"]), &["selector"]);
            }
        }
        "ServiceAccount" => {
            // Token secrets are the cluster's, not the account's.
            if let Some(root) = v.as_object_mut() {
                root.remove("secrets");
            }
        }
        "Namespace" => {
            remove_keys(object(&mut v, &["spec"]), &["finalizers"]);
            drop_if_empty(&mut v, &["spec"]);
            remove_keys(
                object(&mut v, &["metadata", "labels"]),
                &["kubernetes.io/metadata.name"],
            );
            drop_if_empty(&mut v, &["metadata", "labels"]);
        }
        _ => {}
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn server_fields_go_configuration_stays() {
        let recorded = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {
                "name": "web", "namespace": "shop", "uid": "u", "resourceVersion": "9",
                "generation": 3, "creationTimestamp": "2026-11-29T10:00:00Z",
                "managedFields": [{"manager": "kubectl"}],
                "ownerReferences": [{"kind": "X"}], "finalizers": ["f"],
                "labels": {"app": "web"},
                "annotations": {"deployment.kubernetes.io/revision": "4",
                                "kubectl.kubernetes.io/last-applied-configuration": "{}"}
            },
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web", "pod-template-hash": "abc"}},
                "template": {
                    "metadata": {"labels": {"app": "web", "pod-template-hash": "abc"}, "creationTimestamp": null},
                    "spec": {"containers": [{"name": "c", "image": "i"}], "volumes": [{"name": "tmp", "emptyDir": {}}]}
                }
            },
            "status": {"replicas": 2}
        });
        let m = sanitize("Deployment", &recorded);
        assert_eq!(
            m,
            json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web"}},
                "spec": {
                    "replicas": 2,
                    "selector": {"matchLabels": {"app": "web"}},
                    "template": {
                        "metadata": {"labels": {"app": "web"}},
                        "spec": {"containers": [{"name": "c", "image": "i"}], "volumes": [{"name": "tmp", "emptyDir": {}}]}
                    }
                }
            })
        );
    }

    #[test]
    fn services_lose_assigned_addresses_and_ports() {
        let m = sanitize(
            "Service",
            &json!({"kind": "Service", "metadata": {"name": "s"},
                    "spec": {"type": "NodePort", "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"],
                             "healthCheckNodePort": 30001, "ipFamilyPolicy": "SingleStack",
                             "ports": [{"port": 80, "nodePort": 30080, "targetPort": 8080}]}}),
        );
        assert_eq!(
            m["spec"],
            json!({"type": "NodePort", "ipFamilyPolicy": "SingleStack", "ports": [{"port": 80, "targetPort": 8080}]})
        );
    }

    #[test]
    fn headless_services_stay_headless() {
        let recorded = json!({"kind": "Service", "metadata": {"name": "db"},
            "spec": {"clusterIP": "None", "clusterIPs": ["None"], "ports": [{"port": 5432}]}});
        assert_eq!(sanitize("Service", &recorded), recorded);
    }

    #[test]
    fn namespaces_and_service_accounts() {
        let ns = sanitize(
            "Namespace",
            &json!({"kind": "Namespace", "metadata": {"name": "shop", "labels": {"kubernetes.io/metadata.name": "shop", "team": "a"}},
                    "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}),
        );
        assert_eq!(
            ns,
            json!({"kind": "Namespace", "metadata": {"name": "shop", "labels": {"team": "a"}}})
        );
        let sa = sanitize(
            "ServiceAccount",
            &json!({"kind": "ServiceAccount", "metadata": {"name": "a"}, "secrets": [{"name": "a-token"}],
                    "imagePullSecrets": [{"name": "reg"}]}),
        );
        assert_eq!(
            sa,
            json!({"kind": "ServiceAccount", "metadata": {"name": "a"}, "imagePullSecrets": [{"name": "reg"}]})
        );
    }
}
