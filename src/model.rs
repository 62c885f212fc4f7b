//! Plain data shared by every part of krply: resource types (from
//! krply-apimachinery, which the simulator shares), streams and object
//! identities. No IO here.

use serde::{Deserialize, Serialize};
use std::fmt;

pub use krply_apimachinery::ResourceType;

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
    /// The mark a MODIFIED version came with from where it was recorded
    /// (an imported segment's `status_only`: `Some(Some(true))` status-only,
    /// `Some(Some(false))` a change, `Some(None)` not known there), taken
    /// instead of one from digests; `None` to mark it from digests
    /// (docs/journal.md, "Status-only changes").
    pub given_mark: Option<Option<bool>>,
}

/// The largest object krply reads or stores: a watch line longer than this is a
/// broken stream, and a journal body claiming more is a damaged row. etcd stores at
/// most 1.5 MiB per object by default; clusters that raise it stay far below this.
pub const MAX_OBJECT_BYTES: usize = 64 << 20;

#[cfg(test)]
mod tests {
    use super::*;

    fn deploy() -> ResourceType {
        krply_sim::builtin_type("apps", "deployments").unwrap()
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
