//! The resource catalogue: every resource the simulator serves (built-in
//! types and those registered by CustomResourceDefinitions), with the
//! discovery facts kubectl relies on (scope, kind, names, verbs, categories,
//! subresources).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;

use super::error::{self, ApiStatus};

const ALL_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];
const NAMESPACE_VERBS: &[&str] = &[
    "create", "delete", "get", "list", "patch", "update", "watch",
];

/// An `additionalPrinterColumns` entry of a CRD version.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PrinterColumn {
    pub name: String,
    pub type_: String,
    pub format: String,
    pub description: String,
    pub priority: i64,
    pub json_path: String,
}

/// One resource (one storage; served under one or more versions).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ResourceDef {
    pub group: String,
    /// Served versions, most preferred first.
    pub versions: Vec<String>,
    pub plural: String,
    pub singular: String,
    pub kind: String,
    pub list_kind: String,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub namespaced: bool,
    pub verbs: Vec<String>,
    /// Has a `status` subresource (main-resource writes keep the old status).
    pub status: bool,
    /// Has a `scale` subresource (autoscaling/v1 Scale).
    pub scale: bool,
    /// A built-in type: list items carry no apiVersion/kind, keyed lists apply.
    pub builtin: bool,
    /// Printer columns of a CRD (built-in types have their own, see `table`).
    pub printer_columns: Vec<PrinterColumn>,
    /// Distinguishes two registrations of the same resource name.
    pub instance: u64,
}

static INSTANCES: AtomicU64 = AtomicU64::new(1);

impl ResourceDef {
    /// Whether objects carry `metadata.generation`, as kube-apiserver sets it:
    /// workloads, Pods, policies, network objects, CRDs and every custom
    /// resource; not ConfigMaps, Secrets, Services, ServiceAccounts,
    /// Namespaces, RBAC objects, claims or events.
    pub(crate) fn has_generation(&self) -> bool {
        !self.builtin
            || matches!(
                self.group.as_str(),
                "apps"
                    | "batch"
                    | "autoscaling"
                    | "policy"
                    | "networking.k8s.io"
                    | "apiextensions.k8s.io"
            )
            || (self.group.is_empty() && self.kind == "Pod")
    }

    pub(crate) fn api_version(&self, version: &str) -> String {
        if self.group.is_empty() {
            version.to_string()
        } else {
            format!("{}/{}", self.group, version)
        }
    }

    pub(crate) fn preferred_version(&self) -> &str {
        self.versions.first().map(String::as_str).unwrap_or("v1")
    }

    pub(crate) fn serves(&self, version: &str) -> bool {
        self.versions.iter().any(|v| v == version)
    }

    /// The version part of an apiVersion this resource serves (`apps/v1` -> `v1`).
    pub(crate) fn version_of<'a>(&self, api_version: &'a str) -> Option<&'a str> {
        let (g, v) = match api_version.split_once('/') {
            Some((g, v)) => (g, v),
            None => ("", api_version),
        };
        (g == self.group && self.serves(v)).then_some(v)
    }

    /// Field selector keys the server accepts for this resource.
    pub(crate) fn supports_field(&self, field: &str) -> bool {
        if matches!(field, "metadata.name" | "metadata.namespace") {
            return true;
        }
        let extra: &[&str] = match (self.group.as_str(), self.plural.as_str()) {
            ("", "pods") => &[
                "spec.nodeName",
                "spec.restartPolicy",
                "spec.schedulerName",
                "spec.serviceAccountName",
                "spec.hostNetwork",
                "status.phase",
                "status.podIP",
                "status.nominatedNodeName",
            ],
            ("", "secrets") => &["type"],
            ("", "namespaces") => &["status.phase"],
            ("", "events") => &[
                "involvedObject.kind",
                "involvedObject.namespace",
                "involvedObject.name",
                "involvedObject.uid",
                "involvedObject.apiVersion",
                "involvedObject.resourceVersion",
                "involvedObject.fieldPath",
                "reason",
                "reportingComponent",
                "source",
                "type",
            ],
            ("apps", "replicasets") => &["status.replicas"],
            ("batch", "jobs") => &["status.successful"],
            _ => &[],
        };
        extra.contains(&field)
    }

    /// The subresource names this resource serves.
    pub(crate) fn subresources(&self) -> Vec<&'static str> {
        let mut s = Vec::new();
        if self.scale {
            s.push("scale");
        }
        if self.status {
            s.push("status");
        }
        s
    }
}

struct Builtin {
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    singular: &'static str,
    kind: &'static str,
    namespaced: bool,
    short: &'static [&'static str],
    categories: &'static [&'static str],
    status: bool,
    scale: bool,
}

#[expect(
    clippy::too_many_arguments,
    reason = "one argument per column of the BUILTINS table"
)]
const fn b(
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    singular: &'static str,
    kind: &'static str,
    namespaced: bool,
    short: &'static [&'static str],
    categories: &'static [&'static str],
    status: bool,
    scale: bool,
) -> Builtin {
    Builtin {
        group,
        version,
        plural,
        singular,
        kind,
        namespaced,
        short,
        categories,
        status,
        scale,
    }
}

const ALL: &[&str] = &["all"];
const EXT: &[&str] = &["api-extensions"];

const BUILTINS: &[Builtin] = &[
    b(
        "",
        "v1",
        "namespaces",
        "namespace",
        "Namespace",
        false,
        &["ns"],
        &[],
        true,
        false,
    ),
    b(
        "",
        "v1",
        "configmaps",
        "configmap",
        "ConfigMap",
        true,
        &["cm"],
        &[],
        false,
        false,
    ),
    b(
        "",
        "v1",
        "endpoints",
        "endpoints",
        "Endpoints",
        true,
        &["ep"],
        &[],
        false,
        false,
    ),
    b(
        "",
        "v1",
        "events",
        "event",
        "Event",
        true,
        &["ev"],
        &[],
        false,
        false,
    ),
    b(
        "",
        "v1",
        "persistentvolumeclaims",
        "persistentvolumeclaim",
        "PersistentVolumeClaim",
        true,
        &["pvc"],
        &[],
        true,
        false,
    ),
    b(
        "",
        "v1",
        "persistentvolumes",
        "persistentvolume",
        "PersistentVolume",
        false,
        &["pv"],
        &[],
        true,
        false,
    ),
    b(
        "",
        "v1",
        "pods",
        "pod",
        "Pod",
        true,
        &["po"],
        ALL,
        true,
        false,
    ),
    b(
        "",
        "v1",
        "secrets",
        "secret",
        "Secret",
        true,
        &[],
        &[],
        false,
        false,
    ),
    b(
        "",
        "v1",
        "serviceaccounts",
        "serviceaccount",
        "ServiceAccount",
        true,
        &["sa"],
        &[],
        false,
        false,
    ),
    b(
        "",
        "v1",
        "services",
        "service",
        "Service",
        true,
        &["svc"],
        ALL,
        true,
        false,
    ),
    b(
        "apps",
        "v1",
        "daemonsets",
        "daemonset",
        "DaemonSet",
        true,
        &["ds"],
        ALL,
        true,
        false,
    ),
    b(
        "apps",
        "v1",
        "deployments",
        "deployment",
        "Deployment",
        true,
        &["deploy"],
        ALL,
        true,
        true,
    ),
    b(
        "apps",
        "v1",
        "replicasets",
        "replicaset",
        "ReplicaSet",
        true,
        &["rs"],
        ALL,
        true,
        true,
    ),
    b(
        "apps",
        "v1",
        "statefulsets",
        "statefulset",
        "StatefulSet",
        true,
        &["sts"],
        ALL,
        true,
        true,
    ),
    b(
        "autoscaling",
        "v2",
        "horizontalpodautoscalers",
        "horizontalpodautoscaler",
        "HorizontalPodAutoscaler",
        true,
        &["hpa"],
        ALL,
        true,
        false,
    ),
    b(
        "batch",
        "v1",
        "cronjobs",
        "cronjob",
        "CronJob",
        true,
        &["cj"],
        ALL,
        true,
        false,
    ),
    b(
        "batch",
        "v1",
        "jobs",
        "job",
        "Job",
        true,
        &[],
        ALL,
        true,
        false,
    ),
    b(
        "networking.k8s.io",
        "v1",
        "ingresses",
        "ingress",
        "Ingress",
        true,
        &["ing"],
        &[],
        true,
        false,
    ),
    b(
        "networking.k8s.io",
        "v1",
        "networkpolicies",
        "networkpolicy",
        "NetworkPolicy",
        true,
        &["netpol"],
        &[],
        false,
        false,
    ),
    b(
        "policy",
        "v1",
        "poddisruptionbudgets",
        "poddisruptionbudget",
        "PodDisruptionBudget",
        true,
        &["pdb"],
        &[],
        true,
        false,
    ),
    b(
        "rbac.authorization.k8s.io",
        "v1",
        "clusterrolebindings",
        "clusterrolebinding",
        "ClusterRoleBinding",
        false,
        &[],
        &[],
        false,
        false,
    ),
    b(
        "rbac.authorization.k8s.io",
        "v1",
        "clusterroles",
        "clusterrole",
        "ClusterRole",
        false,
        &[],
        &[],
        false,
        false,
    ),
    b(
        "rbac.authorization.k8s.io",
        "v1",
        "rolebindings",
        "rolebinding",
        "RoleBinding",
        true,
        &[],
        &[],
        false,
        false,
    ),
    b(
        "rbac.authorization.k8s.io",
        "v1",
        "roles",
        "role",
        "Role",
        true,
        &[],
        &[],
        false,
        false,
    ),
    b(
        "storage.k8s.io",
        "v1",
        "storageclasses",
        "storageclass",
        "StorageClass",
        false,
        &["sc"],
        &[],
        false,
        false,
    ),
    b(
        "admissionregistration.k8s.io",
        "v1",
        "mutatingwebhookconfigurations",
        "mutatingwebhookconfiguration",
        "MutatingWebhookConfiguration",
        false,
        &[],
        EXT,
        false,
        false,
    ),
    b(
        "admissionregistration.k8s.io",
        "v1",
        "validatingwebhookconfigurations",
        "validatingwebhookconfiguration",
        "ValidatingWebhookConfiguration",
        false,
        &[],
        EXT,
        false,
        false,
    ),
    b(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "customresourcedefinition",
        "CustomResourceDefinition",
        false,
        &["crd", "crds"],
        EXT,
        true,
        false,
    ),
];

/// The groups of built-in types, in the order `/apis` lists them.
const BUILTIN_GROUP_ORDER: &[&str] = &[
    "apps",
    "autoscaling",
    "batch",
    "networking.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "storage.k8s.io",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
];

/// Every served resource.
#[derive(Debug, Clone)]
pub(crate) struct Catalog {
    defs: Vec<Arc<ResourceDef>>,
}

impl Catalog {
    pub(crate) fn builtin() -> Catalog {
        let defs = BUILTINS
            .iter()
            .map(|x| {
                let verbs = if x.plural == "namespaces" {
                    NAMESPACE_VERBS
                } else {
                    ALL_VERBS
                };
                Arc::new(ResourceDef {
                    group: x.group.into(),
                    versions: vec![x.version.into()],
                    plural: x.plural.into(),
                    singular: x.singular.into(),
                    kind: x.kind.into(),
                    list_kind: format!("{}List", x.kind),
                    short_names: x.short.iter().map(|s| s.to_string()).collect(),
                    categories: x.categories.iter().map(|s| s.to_string()).collect(),
                    namespaced: x.namespaced,
                    verbs: verbs.iter().map(|s| s.to_string()).collect(),
                    status: x.status,
                    scale: x.scale,
                    builtin: true,
                    printer_columns: Vec::new(),
                    instance: INSTANCES.fetch_add(1, Ordering::Relaxed),
                })
            })
            .collect();
        Catalog { defs }
    }

    pub(crate) fn all(&self) -> &[Arc<ResourceDef>] {
        &self.defs
    }

    pub(crate) fn by_resource(&self, group: &str, plural: &str) -> Option<&Arc<ResourceDef>> {
        self.defs
            .iter()
            .find(|d| d.plural == plural && d.group == group)
    }

    /// The resource served at `group/version/plural`.
    pub(crate) fn by_gvr(
        &self,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Option<&Arc<ResourceDef>> {
        self.by_resource(group, plural)
            .filter(|d| d.serves(version))
    }

    /// The resource of objects of `apiVersion` + `kind`.
    pub(crate) fn by_kind(&self, api_version: &str, kind: &str) -> Option<&Arc<ResourceDef>> {
        self.defs
            .iter()
            .find(|d| d.kind == kind && d.version_of(api_version).is_some())
    }

    /// Adds a resource, or replaces the one with the same group and plural.
    pub(crate) fn register(&mut self, def: Arc<ResourceDef>) {
        match self
            .defs
            .iter_mut()
            .find(|d| d.group == def.group && d.plural == def.plural)
        {
            Some(slot) => *slot = def,
            None => self.defs.push(def),
        }
    }

    pub(crate) fn unregister(&mut self, group: &str, plural: &str) {
        self.defs
            .retain(|d| !(d.group == group && d.plural == plural));
    }

    /// API groups (not the core group) with their served versions, most
    /// preferred first, in discovery order.
    pub(crate) fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut groups: Vec<(String, Vec<String>)> = Vec::new();
        for d in &self.defs {
            if d.group.is_empty() {
                continue;
            }
            let entry = match groups.iter_mut().position(|(g, _)| *g == d.group) {
                Some(i) => &mut groups[i].1,
                None => {
                    groups.push((d.group.clone(), Vec::new()));
                    let last = groups.len() - 1;
                    &mut groups[last].1
                }
            };
            for v in &d.versions {
                if !entry.contains(v) {
                    entry.push(v.clone());
                }
            }
        }
        for (_, versions) in &mut groups {
            versions.sort_by(|a, b| compare_versions(a, b));
        }
        let rank = |g: &str| {
            BUILTIN_GROUP_ORDER
                .iter()
                .position(|x| *x == g)
                .unwrap_or(BUILTIN_GROUP_ORDER.len())
        };
        groups.sort_by_key(|(g, _)| rank(g));
        groups
    }
}

/// Kubernetes version priority: GA before beta before alpha, higher numbers
/// first, then anything else alphabetically (as `kube-aggregator` orders them).
pub(crate) fn compare_versions(a: &str, b: &str) -> std::cmp::Ordering {
    fn parse(v: &str) -> Option<(u64, u8, u64)> {
        let rest = v.strip_prefix('v')?;
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let major = digits.parse().ok()?;
        let tail = &rest[digits.len()..];
        if tail.is_empty() {
            return Some((major, 3, 0));
        }
        let (level, n) = if let Some(n) = tail.strip_prefix("beta") {
            (2, n)
        } else if let Some(n) = tail.strip_prefix("alpha") {
            (1, n)
        } else {
            return None;
        };
        Some((major, level, n.parse().ok()?))
    }
    match (parse(a), parse(b)) {
        (Some((ma, la, na)), Some((mb, lb, nb))) => lb.cmp(&la).then(mb.cmp(&ma)).then(nb.cmp(&na)),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

/// The resource a CustomResourceDefinition object defines, validated as the
/// server validates CRDs (the errors are the causes of a 422 Invalid).
///
/// Long on purpose: kube-apiserver's checks of a CRD, one after another in the order
/// it makes them, so that the causes of a 422 come out in the same order.
pub(crate) fn def_from_crd(crd: &Value) -> Result<ResourceDef, ApiStatus> {
    let name = crd
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let s = |p: &str| {
        crd.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let group = s("/spec/group");
    let plural = s("/spec/names/plural");
    let kind = s("/spec/names/kind");
    let mut singular = s("/spec/names/singular");
    if singular.is_empty() {
        singular = kind.to_lowercase();
    }
    let mut list_kind = s("/spec/names/listKind");
    if list_kind.is_empty() {
        list_kind = format!("{kind}List");
    }
    let scope = s("/spec/scope");
    let mut causes = Vec::new();
    if group.is_empty() || !group.contains('.') {
        causes.push((
            "spec.group".to_string(),
            format!("Invalid value: \"{group}\": should be a domain with at least one dot"),
        ));
    }
    if plural.is_empty() {
        causes.push(("spec.names.plural".into(), "Required value".into()));
    }
    if kind.is_empty() {
        causes.push(("spec.names.kind".into(), "Required value".into()));
    }
    if name != format!("{plural}.{group}") {
        causes.push((
            "metadata.name".into(),
            format!("Invalid value: \"{name}\": must be spec.names.plural+\".\"+spec.group"),
        ));
    }
    if scope != "Namespaced" && scope != "Cluster" {
        causes.push((
            "spec.scope".into(),
            format!(
                "Unsupported value: \"{scope}\": supported values: \"Cluster\", \"Namespaced\""
            ),
        ));
    }
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if versions.is_empty() {
        causes.push((
            "spec.versions".into(),
            "Invalid value: null: must have exactly one version marked as storage version".into(),
        ));
    }
    let storage = versions
        .iter()
        .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .count();
    if !versions.is_empty() && storage != 1 {
        causes.push((
            "spec.versions".into(),
            "Invalid value: must have exactly one version marked as storage version".into(),
        ));
    }
    if !causes.is_empty() {
        return Err(error::invalid(
            "CustomResourceDefinition",
            "apiextensions.k8s.io",
            name,
            &causes,
        ));
    }
    let served: Vec<&Value> = versions
        .iter()
        .filter(|v| v.get("served").and_then(Value::as_bool) == Some(true))
        .collect();
    let mut served_names: Vec<String> = served
        .iter()
        .filter_map(|v| v.get("name").and_then(Value::as_str).map(str::to_string))
        .collect();
    served_names.sort_by(|a, b| compare_versions(a, b));
    let preferred = served_names.first().cloned().unwrap_or_default();
    let preferred_version = served
        .iter()
        .find(|v| v.get("name").and_then(Value::as_str) == Some(preferred.as_str()));
    let has = |sub: &str| {
        preferred_version
            .and_then(|v| v.pointer(&format!("/subresources/{sub}")))
            .is_some()
    };
    let printer_columns = preferred_version
        .and_then(|v| v.get("additionalPrinterColumns"))
        .and_then(Value::as_array)
        .map(|cols| {
            cols.iter()
                .map(|c| {
                    let f = |k: &str| {
                        c.get(k)
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string()
                    };
                    PrinterColumn {
                        name: f("name"),
                        type_: f("type"),
                        format: f("format"),
                        description: f("description"),
                        priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
                        json_path: f("jsonPath"),
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    let strings = |p: &str| -> Vec<String> {
        crd.pointer(p)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    Ok(ResourceDef {
        group,
        versions: served_names,
        plural,
        singular,
        kind,
        list_kind,
        short_names: strings("/spec/names/shortNames"),
        categories: strings("/spec/names/categories"),
        namespaced: scope == "Namespaced",
        verbs: ALL_VERBS.iter().map(|s| s.to_string()).collect(),
        status: has("status"),
        scale: false,
        builtin: false,
        printer_columns,
        instance: INSTANCES.fetch_add(1, Ordering::Relaxed),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn builtin_lookups() {
        let c = Catalog::builtin();
        let d = c.by_gvr("apps", "v1", "deployments").unwrap();
        assert_eq!(d.kind, "Deployment");
        assert_eq!(d.short_names, ["deploy"]);
        assert_eq!(d.subresources(), ["scale", "status"]);
        assert!(c.by_gvr("apps", "v2", "deployments").is_none());
        assert_eq!(c.by_kind("v1", "ConfigMap").unwrap().plural, "configmaps");
        assert!(c.by_kind("apps/v1", "ConfigMap").is_none());
        assert!(!c.by_resource("", "namespaces").unwrap().namespaced);
        assert_eq!(
            c.by_resource("apiextensions.k8s.io", "customresourcedefinitions")
                .unwrap()
                .short_names,
            ["crd", "crds"]
        );
        let groups = c.groups();
        assert_eq!(groups[0].0, "apps");
        assert!(
            groups
                .iter()
                .any(|(g, v)| g == "autoscaling" && v == &["v2"])
        );
    }

    #[test]
    fn version_priority() {
        let mut v = vec!["v1beta1", "v2", "v1", "v1alpha1", "foo", "v2beta2", "v10"];
        v.sort_by(|a, b| compare_versions(a, b));
        assert_eq!(
            v,
            ["v10", "v2", "v1", "v2beta2", "v1beta1", "v1alpha1", "foo"]
        );
    }

    #[test]
    fn crd_definitions() {
        let crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
                "versions": [
                    {"name": "v1alpha1", "served": true, "storage": false},
                    {"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                     "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}]},
                    {"name": "v0", "served": false, "storage": false}
                ]}
        });
        let d = def_from_crd(&crd).unwrap();
        assert_eq!(d.versions, ["v1", "v1alpha1"]);
        assert!(d.status && d.namespaced && !d.builtin);
        assert_eq!(d.short_names, ["wd"]);
        assert_eq!(d.printer_columns[0].json_path, ".spec.size");
        let mut bad = crd.clone();
        bad["metadata"]["name"] = json!("widgets");
        let err = def_from_crd(&bad).unwrap_err();
        assert_eq!(err.code, 422);
        assert!(err.message.contains("metadata.name"), "{}", err.message);
    }
}
