//! What planned workloads depend on (docs/replay-safety.md, "Dependencies"): the
//! ServiceAccount, ConfigMaps, Secrets and PersistentVolumeClaims their pod
//! templates name. A reference that is neither in the plan nor in the target
//! namespace makes the replayed pods fail to start, long after the dry run
//! said "ok"; the plan warns about each, with what would fix it.
//!
//! Finding the references and deciding what to say is pure; whether an object
//! exists in the target is asked by `run`.

use super::{Excluded, PlanObject};
use crate::model::ResourceType;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// An object a planned workload needs that the plan does not hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dependency {
    pub kind: String,
    pub name: String,
    /// The planned objects that name it (`Deployment/frontend`).
    pub used_by: Vec<String>,
    /// What would bring it into the target.
    pub fix: String,
}

impl Dependency {
    /// The plan's warning about it.
    pub fn warning(&self, target_namespace: &str) -> String {
        format!(
            "{} {} (used by {}) is neither in the plan nor in namespace {target_namespace}: {}",
            self.kind,
            self.name,
            self.used_by.join(", "),
            self.fix
        )
    }
}

/// One reference from a pod template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    pub kind: &'static str,
    pub name: String,
}

/// The pod template of a workload kind, if it has one.
fn pod_spec<'a>(kind: &str, manifest: &'a Value) -> Option<&'a Value> {
    let pointer = match kind {
        "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" | "Job" => "/spec/template/spec",
        "CronJob" => "/spec/jobTemplate/spec/template/spec",
        "Pod" => "/spec",
        _ => return None,
    };
    manifest.pointer(pointer)
}

/// The objects a workload's pod template names, each once, in the order met.
/// References marked `optional: true` are left out: pods start without them.
pub fn references(kind: &str, manifest: &Value) -> Vec<Reference> {
    let Some(spec) = pod_spec(kind, manifest) else {
        return Vec::new();
    };
    let mut out: Vec<Reference> = Vec::new();
    let mut add = |kind: &'static str, name: Option<&str>| {
        if let Some(name) = name.filter(|n| !n.is_empty())
            && !out.iter().any(|r| r.kind == kind && r.name == name)
        {
            out.push(Reference {
                kind,
                name: name.to_string(),
            });
        }
    };
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
    let required = |v: &Value| v.get("optional").and_then(Value::as_bool) != Some(true);
    let sa = text(spec, "serviceAccountName").or_else(|| text(spec, "serviceAccount"));
    add("ServiceAccount", sa.as_deref());
    let items = |v: &Value, key: &str| -> Vec<Value> {
        v.get(key)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    for s in items(spec, "imagePullSecrets") {
        add("Secret", text(&s, "name").as_deref());
    }
    for v in items(spec, "volumes") {
        if let Some(c) = v.get("configMap").filter(|c| required(c)) {
            add("ConfigMap", text(c, "name").as_deref());
        }
        if let Some(s) = v.get("secret").filter(|s| required(s)) {
            add("Secret", text(s, "secretName").as_deref());
        }
        if let Some(p) = v.get("persistentVolumeClaim") {
            add("PersistentVolumeClaim", text(p, "claimName").as_deref());
        }
        for source in items(v.get("projected").unwrap_or(&Value::Null), "sources") {
            if let Some(c) = source.get("configMap").filter(|c| required(c)) {
                add("ConfigMap", text(c, "name").as_deref());
            }
            if let Some(s) = source.get("secret").filter(|s| required(s)) {
                add("Secret", text(s, "name").as_deref());
            }
        }
    }
    let containers = ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .flat_map(|k| items(spec, k));
    for c in containers {
        for e in items(&c, "env") {
            let from = e.get("valueFrom");
            if let Some(r) = from
                .and_then(|f| f.get("configMapKeyRef"))
                .filter(|r| required(r))
            {
                add("ConfigMap", text(r, "name").as_deref());
            }
            if let Some(r) = from
                .and_then(|f| f.get("secretKeyRef"))
                .filter(|r| required(r))
            {
                add("Secret", text(r, "name").as_deref());
            }
        }
        for e in items(&c, "envFrom") {
            if let Some(r) = e.get("configMapRef").filter(|r| required(r)) {
                add("ConfigMap", text(r, "name").as_deref());
            }
            if let Some(r) = e.get("secretRef").filter(|r| required(r)) {
                add("Secret", text(r, "name").as_deref());
            }
        }
    }
    out
}

/// What the plan lacks: every reference of a planned workload to an object
/// not planned, with the planned objects naming it and a fix. `recorded`
/// holds the kinds the source namespace was recorded with; `excluded`, what
/// the plan left out and why. Whether the target already has an object is
/// for the caller to ask; [`Dependency::warning`] says the rest.
pub fn missing(
    objects: &[PlanObject],
    excluded: &[Excluded],
    recorded: &[String],
) -> Vec<Dependency> {
    let mut out: Vec<Dependency> = Vec::new();
    for o in objects {
        for r in references(&o.kind, &o.manifest) {
            // Every namespace gets this one from the cluster.
            if r.kind == "ServiceAccount" && r.name == "default" {
                continue;
            }
            if objects.iter().any(|p| p.kind == r.kind && p.name == r.name) {
                continue;
            }
            let user = format!("{}/{}", o.kind, o.name);
            if let Some(d) = out
                .iter_mut()
                .find(|d| d.kind == r.kind && d.name == r.name)
            {
                d.used_by.push(user);
                continue;
            }
            out.push(Dependency {
                kind: r.kind.to_string(),
                name: r.name.clone(),
                used_by: vec![user],
                fix: fix(&r, excluded, recorded),
            });
        }
    }
    out
}

/// How a kind [`references`] names is addressed in the API (all core/v1).
pub fn resource_type(kind: &str) -> Option<ResourceType> {
    let (resource, singular) = match kind {
        "ServiceAccount" => ("serviceaccounts", "serviceaccount"),
        "ConfigMap" => ("configmaps", "configmap"),
        "Secret" => ("secrets", "secret"),
        "PersistentVolumeClaim" => ("persistentvolumeclaims", "persistentvolumeclaim"),
        _ => return None,
    };
    Some(ResourceType {
        group: String::new(),
        version: "v1".into(),
        resource: resource.into(),
        kind: kind.into(),
        singular: singular.into(),
        short_names: Vec::new(),
        namespaced: true,
    })
}

/// What would bring a missing object into the target.
fn fix(r: &Reference, excluded: &[Excluded], recorded: &[String]) -> String {
    if r.kind == "Secret" {
        return "Secrets are never replayed; create it in the target namespace before applying"
            .into();
    }
    if let Some(e) = excluded
        .iter()
        .find(|e| e.kind == r.kind && e.name == r.name)
    {
        return format!("the plan left it out: {}", e.reason);
    }
    let resource = resource_type(r.kind).map_or_else(|| r.kind.to_string(), |t| t.resource);
    if recorded.iter().any(|k| k == r.kind) {
        "it was not in the recorded namespace at that time either; create it in the target before applying"
            .into()
    } else {
        format!(
            "{} were not recorded in the source namespace; record them (`kubectl krply record {resource}` beside the others) or create it in the target",
            resource
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn planned(kind: &str, name: &str, manifest: Value) -> PlanObject {
        PlanObject {
            order: 1,
            kind: kind.into(),
            api_version: "apps/v1".into(),
            namespace: Some("t".into()),
            name: name.into(),
            resource: ResourceType {
                group: "apps".into(),
                version: "v1".into(),
                resource: format!("{}s", kind.to_lowercase()),
                kind: kind.into(),
                singular: kind.to_lowercase(),
                short_names: Vec::new(),
                namespaced: true,
            },
            dry_run: crate::replay::DryRunState::Pending,
            message: None,
            manifest,
        }
    }

    fn deployment(spec: Value) -> Value {
        json!({"kind": "Deployment", "spec": {"template": {"spec": spec}}})
    }

    #[test]
    fn every_kind_of_reference_is_found_once_and_optional_ones_are_not() {
        let d = deployment(json!({
            "serviceAccountName": "web",
            "imagePullSecrets": [{"name": "registry"}],
            "volumes": [
                {"name": "a", "configMap": {"name": "settings"}},
                {"name": "b", "secret": {"secretName": "tls"}},
                {"name": "c", "persistentVolumeClaim": {"claimName": "data"}},
                {"name": "d", "configMap": {"name": "maybe", "optional": true}},
                {"name": "e", "projected": {"sources": [{"configMap": {"name": "settings"}},
                                                         {"secret": {"name": "extra"}}]}}
            ],
            "initContainers": [{"name": "i", "envFrom": [{"configMapRef": {"name": "init-env"}}]}],
            "containers": [{"name": "c", "env": [
                {"name": "X", "valueFrom": {"secretKeyRef": {"name": "db", "key": "p"}}},
                {"name": "Y", "valueFrom": {"configMapKeyRef": {"name": "flags", "key": "k", "optional": true}}}
            ]}]
        }));
        let refs: Vec<String> = references("Deployment", &d)
            .into_iter()
            .map(|r| format!("{}/{}", r.kind, r.name))
            .collect();
        assert_eq!(
            refs,
            [
                "ServiceAccount/web",
                "Secret/registry",
                "ConfigMap/settings",
                "Secret/tls",
                "PersistentVolumeClaim/data",
                "Secret/extra",
                "ConfigMap/init-env",
                "Secret/db",
            ]
        );
        let cron = json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {"serviceAccount": "batch"}}}}}});
        assert_eq!(references("CronJob", &cron)[0].name, "batch");
        assert!(references("Service", &json!({"spec": {}})).is_empty());
    }

    #[test]
    fn only_what_the_plan_lacks_is_missing_with_a_fix_for_each_cause() {
        let objects = vec![
            planned(
                "Deployment",
                "frontend",
                deployment(json!({"serviceAccountName": "frontend",
                    "volumes": [{"name": "c", "configMap": {"name": "frontend-config"}}]})),
            ),
            planned(
                "Deployment",
                "cart",
                deployment(json!({"serviceAccountName": "default",
                    "containers": [{"name": "c", "envFrom": [{"secretRef": {"name": "db"}}]}],
                    "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}},
                                {"name": "c", "configMap": {"name": "frontend-config"}}]})),
            ),
            planned("ConfigMap", "present", json!({})),
        ];
        let excluded = vec![Excluded {
            kind: "PersistentVolumeClaim".into(),
            name: "data".into(),
            reason: "claims provision real storage (--include to replay it)".into(),
        }];
        let found = missing(&objects, &excluded, &["ConfigMap".into()]);
        let summary: Vec<(String, Vec<String>)> = found
            .iter()
            .map(|d| (format!("{}/{}", d.kind, d.name), d.used_by.clone()))
            .collect();
        assert_eq!(
            summary,
            [
                (
                    "ServiceAccount/frontend".into(),
                    vec!["Deployment/frontend".into()]
                ),
                (
                    "ConfigMap/frontend-config".into(),
                    vec!["Deployment/frontend".into(), "Deployment/cart".into()]
                ),
                (
                    "PersistentVolumeClaim/data".into(),
                    vec!["Deployment/cart".into()]
                ),
                ("Secret/db".into(), vec!["Deployment/cart".into()]),
            ]
        );
        assert!(
            found[0]
                .fix
                .contains("kubectl krply record serviceaccounts"),
            "{}",
            found[0].fix
        );
        assert!(
            found[1].fix.contains("not in the recorded namespace"),
            "{}",
            found[1].fix
        );
        assert!(found[2].fix.contains("--include"), "{}", found[2].fix);
        assert!(found[3].fix.contains("never replayed"), "{}", found[3].fix);
        assert_eq!(
            found[0].warning("shop-replay"),
            "ServiceAccount frontend (used by Deployment/frontend) is neither in the plan nor in namespace shop-replay: serviceaccounts were not recorded in the source namespace; record them (`kubectl krply record serviceaccounts` beside the others) or create it in the target"
        );
    }
}
