//! Resource types as discovery describes them (`APIResource` of
//! k8s.io/apimachinery `meta/v1`): their names, versions and paths.

use serde::{Deserialize, Serialize};

/// One API resource as discovery describes it (`deployments.v1.apps`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceType {
    /// API group, empty for the core group.
    pub group: String,
    pub version: String,
    /// Plural resource name, the one in URLs (`deployments`).
    pub resource: String,
    pub kind: String,
    /// Lower-case singular name (`deployment`); discovery may leave it empty.
    pub singular: String,
    pub short_names: Vec<String>,
    pub namespaced: bool,
}

impl ResourceType {
    /// `apps/v1` or `v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// kubectl's fully qualified form: `deployments.v1.apps`, `configmaps.v1`.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            format!("{}.{}", self.resource, self.version)
        } else {
            format!("{}.{}.{}", self.resource, self.version, self.group)
        }
    }

    /// `deployments.apps` or `configmaps`: the group-qualified plural kubectl prints.
    pub fn group_resource(&self) -> String {
        if self.group.is_empty() {
            self.resource.clone()
        } else {
            format!("{}.{}", self.resource, self.group)
        }
    }

    /// The URL path of the collection, in `namespace` when the resource is namespaced
    /// and a namespace is given.
    pub fn collection_path(&self, namespace: Option<&str>) -> String {
        let prefix = if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        };
        match namespace {
            Some(ns) if self.namespaced => format!("{prefix}/namespaces/{ns}/{}", self.resource),
            _ => format!("{prefix}/{}", self.resource),
        }
    }

    /// True when `name` (already lower-cased) names this resource the way kubectl
    /// accepts it: plural, singular, short name or kind.
    pub fn is_named(&self, name: &str) -> bool {
        name == self.resource
            || name == self.singular
            || name == self.kind.to_ascii_lowercase()
            || self.short_names.iter().any(|s| s == name)
    }

    pub fn is_secret(&self) -> bool {
        self.group.is_empty() && self.resource == "secrets"
    }

    /// Fills in `apiVersion` and `kind` when the server left them out (items of a
    /// list usually lack them), keeping them first like the API does. Everything
    /// else stays exactly as recorded.
    pub fn fill_type_meta(&self, object: serde_json::Value) -> serde_json::Value {
        let serde_json::Value::Object(map) = object else {
            return object;
        };
        if map.contains_key("apiVersion") && map.contains_key("kind") {
            return serde_json::Value::Object(map);
        }
        let mut out = serde_json::Map::with_capacity(map.len() + 2);
        out.insert(
            "apiVersion".into(),
            map.get("apiVersion")
                .cloned()
                .unwrap_or_else(|| self.api_version().into()),
        );
        out.insert(
            "kind".into(),
            map.get("kind")
                .cloned()
                .unwrap_or_else(|| self.kind.clone().into()),
        );
        for (k, v) in map {
            if k != "apiVersion" && k != "kind" {
                out.insert(k, v);
            }
        }
        serde_json::Value::Object(out)
    }
}
