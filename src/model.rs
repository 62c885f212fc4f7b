//! Plain data shared by every part of krply: resource types, streams and object
//! identities. No IO here.

use serde::{Deserialize, Serialize};
use std::fmt;

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

/// What one recorder stream watches: a resource, a namespace scope and a selector.
/// As JSON (a segment's `krply.segment` metadata), the resource's fields sit
/// beside `namespace` and `selector`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamSpec {
    #[serde(flatten)]
    pub resource: ResourceType,
    /// `None` watches every namespace (or a cluster-scoped resource).
    pub namespace: Option<String>,
    /// Label selector, `None` for everything.
    pub selector: Option<String>,
}

impl StreamSpec {
    /// The readable stream name used in tables and JSON: `deployments.v1.apps@shop`,
    /// `configmaps.v1@*` (all namespaces), `namespaces.v1` (cluster-scoped), with
    /// `?app=web` appended for a selector.
    pub fn name(&self) -> String {
        stream_name(
            &self.resource,
            self.namespace.as_deref(),
            self.selector.as_deref(),
        )
    }
}

/// See [`StreamSpec::name`].
pub fn stream_name(
    resource: &ResourceType,
    namespace: Option<&str>,
    selector: Option<&str>,
) -> String {
    let mut s = resource.qualified();
    if resource.namespaced {
        s.push('@');
        s.push_str(namespace.unwrap_or("*"));
    }
    if let Some(sel) = selector.filter(|s| !s.is_empty()) {
        s.push('?');
        s.push_str(sel);
    }
    s
}

/// The type of a journaled watch event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum WatchType {
    Added,
    Modified,
    Deleted,
}

impl WatchType {
    pub fn as_str(self) -> &'static str {
        match self {
            WatchType::Added => "ADDED",
            WatchType::Modified => "MODIFIED",
            WatchType::Deleted => "DELETED",
        }
    }

    pub fn code(self) -> i64 {
        match self {
            WatchType::Added => 1,
            WatchType::Modified => 2,
            WatchType::Deleted => 3,
        }
    }

    pub fn from_code(code: i64) -> Option<WatchType> {
        match code {
            1 => Some(WatchType::Added),
            2 => Some(WatchType::Modified),
            3 => Some(WatchType::Deleted),
            _ => None,
        }
    }

    pub fn parse(s: &str) -> Option<WatchType> {
        match s {
            "ADDED" => Some(WatchType::Added),
            "MODIFIED" => Some(WatchType::Modified),
            "DELETED" => Some(WatchType::Deleted),
            _ => None,
        }
    }
}

impl fmt::Display for WatchType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The identity fields of one object version, read from its metadata.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ObjectMeta {
    /// Empty for cluster-scoped objects.
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub resource_version: String,
    /// A digest of what a default diff compares in this version
    /// ([`crate::diff::compared_digest`]), comparable only within this
    /// process; `None` when not taken.
    pub diff_digest: Option<u64>,
}

/// The largest object krply reads or stores: a watch line longer than this is a
/// broken stream, and a journal body claiming more is a damaged row. etcd stores at
/// most 1.5 MiB per object by default; clusters that raise it stay far below this.
pub const MAX_OBJECT_BYTES: usize = 64 << 20;

#[cfg(test)]
mod tests {
    use super::*;

    fn deploy() -> ResourceType {
        crate::sim::builtin_type("apps", "deployments").unwrap()
    }

    #[test]
    fn names_and_paths() {
        let d = deploy();
        assert_eq!(d.api_version(), "apps/v1");
        assert_eq!(d.qualified(), "deployments.v1.apps");
        assert_eq!(
            d.collection_path(Some("shop")),
            "/apis/apps/v1/namespaces/shop/deployments"
        );
        assert_eq!(d.collection_path(None), "/apis/apps/v1/deployments");
        assert!(d.is_named("deploy") && d.is_named("deployment") && d.is_named("deployments"));
        assert!(!d.is_named("deploys"));
        let spec = StreamSpec {
            resource: d,
            namespace: Some("shop".into()),
            selector: Some("app=web".into()),
        };
        assert_eq!(spec.name(), "deployments.v1.apps@shop?app=web");
    }

    #[test]
    fn type_meta_is_filled_in_front_only_when_missing() {
        let d = deploy();
        let filled = d.fill_type_meta(serde_json::json!({"metadata": {"name": "a"}}));
        assert_eq!(
            serde_json::to_string(&filled).unwrap(),
            r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a"}}"#
        );
        let kept = serde_json::json!({"kind": "Deployment", "apiVersion": "apps/v1beta9", "x": 1});
        assert_eq!(d.fill_type_meta(kept.clone()), kept);
    }

    #[test]
    fn cluster_scoped_stream_has_no_namespace_part() {
        let ns = ResourceType {
            group: String::new(),
            version: "v1".into(),
            resource: "namespaces".into(),
            kind: "Namespace".into(),
            singular: "namespace".into(),
            short_names: vec!["ns".into()],
            namespaced: false,
        };
        assert_eq!(stream_name(&ns, None, None), "namespaces.v1");
        assert_eq!(ns.collection_path(Some("x")), "/api/v1/namespaces");
    }
}
