//! What a replay leaves out, and why (docs/replay-safety.md, "Exclusions"), and the order
//! in which the rest is applied (step 5).

use serde_json::Value;

/// Why an object is left out of a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exclusion {
    /// Left out unless `--include KIND` names it.
    ByDefault(&'static str),
    /// Never replayed.
    Always(String),
}

impl Exclusion {
    pub fn reason(&self) -> String {
        match self {
            Exclusion::ByDefault(r) => format!("{r} (--include to replay it)"),
            Exclusion::Always(r) => r.clone(),
        }
    }
}

/// Kinds left out by default, with the reason, and whether `--include` can
/// bring them back.
pub fn kind_rule(kind: &str) -> Option<Exclusion> {
    Some(match kind {
        "Secret" => Exclusion::Always(
            "Secrets are never replayed: the journal holds at most digests of their values".into(),
        ),
        "Role" | "RoleBinding" => Exclusion::ByDefault("RBAC grants permissions"),
        "Pod" => Exclusion::ByDefault("pods are made by their controllers"),
        "ReplicaSet" => Exclusion::ByDefault("replica sets are made by deployments"),
        "Job" | "CronJob" => Exclusion::ByDefault("jobs run workloads once applied"),
        "PersistentVolumeClaim" => Exclusion::ByDefault("claims provision real storage"),
        "Event" | "Endpoints" | "EndpointSlice" | "Lease" | "ControllerRevision" => {
            Exclusion::Always(format!("{kind} objects are written by the cluster itself"))
        }
        "PersistentVolume"
        | "StorageClass"
        | "CustomResourceDefinition"
        | "ClusterRole"
        | "ClusterRoleBinding"
        | "ValidatingWebhookConfiguration"
        | "MutatingWebhookConfiguration" => {
            Exclusion::Always(format!("{kind} is cluster-wide, not part of a namespace"))
        }
        _ => return None,
    })
}

/// The kind `--include NAME` names, for the kinds it can bring back: the kind
/// itself in any case, its plural or its kubectl short name (`job`, `jobs`,
/// `cj`, `pvc`, ...), or `LoadBalancer` for Services of that type.
/// ServiceAccounts are planned by default, so `sa` names nothing to include.
pub fn include_kind(name: &str) -> Option<&'static str> {
    Some(match name.to_ascii_lowercase().as_str() {
        "job" | "jobs" => "Job",
        "cronjob" | "cronjobs" | "cj" => "CronJob",
        "pod" | "pods" | "po" => "Pod",
        "role" | "roles" => "Role",
        "rolebinding" | "rolebindings" => "RoleBinding",
        "persistentvolumeclaim" | "persistentvolumeclaims" | "pvc" => "PersistentVolumeClaim",
        "replicaset" | "replicasets" | "rs" => "ReplicaSet",
        "loadbalancer" | "loadbalancers" => "LoadBalancer",
        _ => return None,
    })
}

/// Whether objects of `kind` can be in a plan with these `--include`s (kinds
/// as [`include_kind`] names them).
pub fn plannable(kind: &str, include: &[String]) -> bool {
    match kind_rule(kind) {
        None => true,
        Some(Exclusion::ByDefault(_)) => include.iter().any(|k| k.eq_ignore_ascii_case(kind)),
        Some(Exclusion::Always(_)) => false,
    }
}

/// The reason one recorded object stays out of a plan, if it does.
pub fn exclusion(kind: &str, object: &Value, include: &[String]) -> Option<String> {
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    // Objects every namespace gets from the cluster.
    if (kind == "ConfigMap" && name == "kube-root-ca.crt")
        || (kind == "ServiceAccount" && name == "default")
    {
        return Some("created by the cluster in every namespace".into());
    }
    if let Some(rule) = kind_rule(kind)
        && !plannable(kind, include)
    {
        return Some(rule.reason());
    }
    // Children of a controller are recreated by it.
    if let Some(owner) = object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .and_then(|refs| {
            refs.iter()
                .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        })
    {
        return Some(format!(
            "owned by {} {}, which recreates it",
            owner
                .get("kind")
                .and_then(Value::as_str)
                .unwrap_or("a controller"),
            owner.get("name").and_then(Value::as_str).unwrap_or("")
        ));
    }
    if kind == "Service"
        && object.pointer("/spec/type").and_then(Value::as_str) == Some("LoadBalancer")
        && !include
            .iter()
            .any(|k| k.eq_ignore_ascii_case("LoadBalancer"))
    {
        return Some(
            "a LoadBalancer Service creates a real load balancer (--include LoadBalancer to replay it)"
                .into(),
        );
    }
    None
}

/// The apply order of a kind: Namespace, then configuration, identity and
/// storage, then Services, then workloads, then everything else.
pub fn tier(kind: &str) -> u8 {
    match kind {
        "Namespace" => 0,
        "ConfigMap" | "Secret" => 1,
        "ServiceAccount" | "Role" | "RoleBinding" => 2,
        "PersistentVolumeClaim" => 3,
        "Service" => 4,
        "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" | "Job" | "CronJob" | "Pod" => 5,
        _ => 6,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn exclusions_have_reasons() {
        let none: Vec<String> = vec![];
        let obj = |name: &str| json!({"metadata": {"name": name}});
        assert!(
            exclusion("Secret", &obj("db"), &["Secret".into()])
                .unwrap()
                .contains("never replayed")
        );
        assert!(
            exclusion("Pod", &obj("p"), &none)
                .unwrap()
                .contains("--include")
        );
        assert_eq!(exclusion("Pod", &obj("p"), &["pod".into()]), None);
        assert!(exclusion("ConfigMap", &obj("kube-root-ca.crt"), &none).is_some());
        assert!(
            exclusion(
                "ServiceAccount",
                &obj("default"),
                &["ServiceAccount".into()]
            )
            .is_some()
        );
        assert_eq!(exclusion("ConfigMap", &obj("app"), &none), None);
        let owned = json!({"metadata": {"name": "rs", "ownerReferences": [{"kind": "Deployment", "name": "web", "controller": true}]}});
        assert_eq!(
            exclusion("ConfigMap", &owned, &none).unwrap(),
            "owned by Deployment web, which recreates it"
        );
        let lb = json!({"metadata": {"name": "s"}, "spec": {"type": "LoadBalancer"}});
        assert!(exclusion("Service", &lb, &none).is_some());
        assert_eq!(exclusion("Service", &lb, &["LoadBalancer".into()]), None);
        // --include brings back what is left out by default, and only that.
        let includable = |kind: &str| {
            matches!(kind_rule(kind), Some(Exclusion::ByDefault(_)))
                && plannable(kind, &[kind.to_string()])
        };
        assert!(!includable("Secret") && includable("Job") && !includable("ConfigMap"));
        assert!(!plannable("Job", &[]) && plannable("ConfigMap", &[]));
        for (name, kind) in [
            ("job", "Job"),
            ("Jobs", "Job"),
            ("cj", "CronJob"),
            ("pvc", "PersistentVolumeClaim"),
            ("loadbalancer", "LoadBalancer"),
        ] {
            assert_eq!(include_kind(name), Some(kind), "{name}");
        }
        assert_eq!(include_kind("secret"), None);
        assert_eq!(include_kind("configmaps"), None);
        // ServiceAccounts are planned without asking.
        assert_eq!(include_kind("sa"), None);
        assert!(plannable("ServiceAccount", &[]));
        // Every kind --include names is one the rules let it bring back.
        for name in ["job", "cj", "po", "role", "rolebinding", "pvc", "rs"] {
            assert!(includable(include_kind(name).unwrap()), "{name}");
        }
    }

    #[test]
    fn order_tiers() {
        let mut kinds = vec!["Deployment", "Ingress", "Service", "ConfigMap", "Namespace"];
        kinds.sort_by_key(|k| tier(k));
        assert_eq!(
            kinds,
            ["Namespace", "ConfigMap", "Service", "Deployment", "Ingress"]
        );
    }
}
