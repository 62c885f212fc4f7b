//! Server-owned noise: fields that the API server or a controller writes by itself.
//!
//! The differ ignores them at these exact paths only (a key named `status` or `uid`
//! anywhere else, such as `data.status` or `spec.status`, is a real change):
//!
//! - `metadata.uid`, `metadata.resourceVersion`, `metadata.generation`,
//!   `metadata.creationTimestamp`, `metadata.managedFields`, `metadata.deletionTimestamp`,
//!   `metadata.ownerReferences`, `metadata.selfLink`;
//! - `metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"]`,
//!   `metadata.annotations["deployment.kubernetes.io/revision"]` and
//!   `metadata.annotations["deprecated.daemonset.template.generation"]`;
//! - top-level `status`, unless [`DiffOptions::include_status`] is set.
//!
//! The recorder's status-only marks rest on this list (docs/journal.md,
//! "Status-only changes"): a path may be added to it, but one taken off it needs
//! readers to ignore the marks written before.
//!
//! Everything below a noise path is noise too. A container that holds noise (the whole
//! object, `metadata`, `metadata.annotations`) is reported without its noise when it is
//! added, removed or changes type; if nothing but noise is left of it, nothing is reported.

use serde_json::{Map, Value};

use super::DiffOptions;
use super::path::{FieldPath, SegRef, Segment};

/// The annotation `kubectl apply` (client-side) writes with the whole applied manifest.
pub const LAST_APPLIED_ANNOTATION: &str = krply_apimachinery::annotations::LAST_APPLIED;
/// The annotation the Deployment controller bumps on every rollout.
pub const REVISION_ANNOTATION: &str = krply_apimachinery::annotations::REVISION;

const METADATA_NOISE: [&str; 8] = [
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "managedFields",
    "deletionTimestamp",
    "ownerReferences",
    "selfLink",
];
/// The annotation kube-apiserver sets on a DaemonSet and bumps with every new
/// pod template.
pub const TEMPLATE_GENERATION_ANNOTATION: &str =
    krply_apimachinery::annotations::TEMPLATE_GENERATION;

const ANNOTATION_NOISE: [&str; 3] = [
    LAST_APPLIED_ANNOTATION,
    REVISION_ANNOTATION,
    TEMPLATE_GENERATION_ANNOTATION,
];

fn key<S: Segment>(seg: &S) -> Option<&str> {
    match seg.view() {
        SegRef::Key(k) => Some(k),
        SegRef::Index(_) => None,
    }
}

/// Whether `path` is exactly one of the noise paths.
pub(crate) fn is_noise_path<S: Segment>(path: &[S], opts: &DiffOptions) -> bool {
    match path {
        [a] => key(a) == Some("status") && !opts.include_status,
        [a, b] => key(a) == Some("metadata") && key(b).is_some_and(|k| METADATA_NOISE.contains(&k)),
        [a, b, c] => {
            key(a) == Some("metadata")
                && key(b) == Some("annotations")
                && key(c).is_some_and(|k| ANNOTATION_NOISE.contains(&k))
        }
        _ => false,
    }
}

/// Whether a change at `path` is server-owned noise: `path` is a noise path (see the
/// module documentation) or lies below one.
pub fn is_noise(path: &FieldPath, opts: &DiffOptions) -> bool {
    let segments = path.segments();
    (1..=segments.len().min(3)).any(|n| is_noise_path(&segments[..n], opts))
}

/// Whether some noise path lies strictly below `path`: the root, `metadata` and
/// `metadata.annotations`.
pub(crate) fn holds_noise<S: Segment>(path: &[S]) -> bool {
    match path {
        [] => true,
        [a] => key(a) == Some("metadata"),
        [a, b] => key(a) == Some("metadata") && key(b) == Some("annotations"),
        _ => false,
    }
}

/// A copy of `value` (found at `path`) without the noise below it. `None` when `value`
/// is a non-empty object that held nothing but noise, unless `path` is the root (the
/// object itself is never dropped).
pub(crate) fn without_noise<'a>(
    path: &mut Vec<SegRef<'a>>,
    value: &'a Value,
    opts: &DiffOptions,
) -> Option<Value> {
    let Value::Object(map) = value else {
        return Some(value.clone());
    };
    let mut kept = Map::new();
    for (k, v) in map {
        path.push(SegRef::Key(k));
        if !is_noise_path(path, opts) {
            let v = if holds_noise(path) {
                without_noise(path, v, opts)
            } else {
                Some(v.clone())
            };
            if let Some(v) = v {
                kept.insert(k.clone(), v);
            }
        }
        path.pop();
    }
    if kept.is_empty() && !map.is_empty() && !path.is_empty() {
        return None;
    }
    Some(Value::Object(kept))
}

/// A copy of a whole object without its server-owned noise: what a unified diff
/// shows, so that it lists the same changes as the field differ.
pub fn strip_noise(object: &Value, opts: &DiffOptions) -> Value {
    without_noise(&mut Vec::new(), object, opts).unwrap_or_else(|| Value::Object(Map::new()))
}

#[cfg(test)]
mod strip_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strips_only_the_noise_paths() {
        let obj = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "uid": "u", "resourceVersion": "7",
                         "annotations": {"deployment.kubernetes.io/revision": "3", "team": "x"}},
            "data": {"status": "kept"},
            "status": {"phase": "gone"}
        });
        assert_eq!(
            strip_noise(&obj, &DiffOptions::default()),
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "a", "annotations": {"team": "x"}},
                   "data": {"status": "kept"}})
        );
        let with_status = strip_noise(
            &obj,
            &DiffOptions {
                include_status: true,
            },
        );
        assert_eq!(with_status["status"]["phase"], "gone");
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::diff::parse_path;

    const ALL: DiffOptions = DiffOptions {
        include_status: true,
    };
    const DEFAULT: DiffOptions = DiffOptions {
        include_status: false,
    };

    fn noise(path: &str, opts: &DiffOptions) -> bool {
        is_noise(&parse_path(path).unwrap(), opts)
    }

    #[test]
    fn exact_noise_paths() {
        for path in [
            "metadata.uid",
            "metadata.resourceVersion",
            "metadata.generation",
            "metadata.creationTimestamp",
            "metadata.managedFields",
            "metadata.managedFields[0].time",
            "metadata.deletionTimestamp",
            "metadata.ownerReferences[0].uid",
            "metadata.selfLink",
            r#"metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"]"#,
            r#"metadata.annotations["deployment.kubernetes.io/revision"]"#,
            "status",
            "status.replicas",
        ] {
            assert!(noise(path, &DEFAULT), "{path}");
        }
    }

    #[test]
    fn same_names_elsewhere_are_real_changes() {
        for path in [
            "data.status",
            "spec.status",
            "data.uid",
            "spec.template.metadata.uid",
            "spec.template.metadata.creationTimestamp",
            r#"spec.template.metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"]"#,
            r#"metadata.labels["deployment.kubernetes.io/revision"]"#,
            "metadata.annotations",
            "metadata.labels",
            "metadata.name",
            "metadata",
            ".",
            "items[0].status",
        ] {
            assert!(!noise(path, &DEFAULT), "{path}");
        }
    }

    #[test]
    fn include_status_shows_only_status() {
        assert!(!noise("status", &ALL));
        assert!(!noise("status.conditions[0].type", &ALL));
        assert!(noise("metadata.resourceVersion", &ALL));
        assert!(noise(
            r#"metadata.annotations["deployment.kubernetes.io/revision"]"#,
            &ALL
        ));
    }

    #[test]
    fn stripping_drops_noise_and_noise_only_containers() {
        let obj = json!({
            "metadata": {
                "name": "x",
                "uid": "u",
                "annotations": {"deployment.kubernetes.io/revision": "3"}
            },
            "status": {"replicas": 1},
            "spec": {"status": "kept"}
        });
        let stripped = without_noise(&mut Vec::new(), &obj, &DEFAULT);
        assert_eq!(
            stripped,
            Some(json!({"metadata": {"name": "x"}, "spec": {"status": "kept"}}))
        );
        let with_status = without_noise(&mut Vec::new(), &obj, &ALL);
        assert_eq!(
            with_status,
            Some(
                json!({"metadata": {"name": "x"}, "spec": {"status": "kept"}, "status": {"replicas": 1}})
            )
        );
        let annotations = &obj["metadata"]["annotations"];
        let mut path = vec![SegRef::Key("metadata"), SegRef::Key("annotations")];
        assert_eq!(without_noise(&mut path, annotations, &DEFAULT), None);
        assert_eq!(
            without_noise(&mut path, &json!({}), &DEFAULT),
            Some(json!({}))
        );
        assert_eq!(
            without_noise(&mut Vec::new(), &json!({"status": 1}), &DEFAULT),
            Some(json!({}))
        );
    }
}
