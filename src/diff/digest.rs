//! A digest of what a default diff compares in one version of an object.
//!
//! Most changes on a busy cluster touch only status and server-owned fields. A
//! default diff ([`DiffOptions`] without `include_status`) reports nothing for
//! them, yet finding that out means decoding and scanning both versions. The
//! recorder digests, as it receives each version, every part a default diff
//! compares, and the writer marks an event whose digest equals that of the
//! object's previous record; `diff` then leaves such changes out without
//! reading them (docs/journal.md, "Status-only changes").
//!
//! The digest covers every member of the object, in document order, except:
//! - the noise paths of [`is_noise_path`] (status, the server-owned metadata
//!   and annotations);
//! - top-level `apiVersion` and `kind`: list items omit them and the differ
//!   fills in the stream's, which every version of one stream shares.
//!
//! Equal digests mean the same bytes outside those parts, so a default diff
//! of the two versions is empty. Unequal ones mean nothing: the versions are
//! compared as usual. A container that holds noise (the object, `metadata`,
//! `metadata.annotations`) is walked member by member; anything else is hashed
//! as its raw bytes.
//!
//! The hasher is keyed at random once per process: digests are compared only
//! within the writer of one recorder run, never stored, so nobody who writes
//! objects can choose two that collide.

use super::DiffOptions;
use super::noise::{holds_noise, is_noise_path};
use super::path::SegRef;
use super::reduce::Key;
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::LazyLock;

/// This process's key.
static KEY: LazyLock<RandomState> = LazyLock::new(RandomState::new);

/// Tags that keep the hashed sequence unambiguous.
const OPEN: u8 = 1;
const CLOSE: u8 = 2;
const RAW: u8 = 3;

/// The digest of what a default diff compares in `raw`, a JSON object; `None`
/// when `raw` is not one, or its object, `metadata` or annotations are not
/// JSON objects (such a version is compared as usual).
pub fn compared_digest(raw: &[u8]) -> Option<u64> {
    let mut hasher = KEY.build_hasher();
    let mut de = serde_json::Deserializer::from_slice(raw);
    Walk {
        parents: Parents::Root,
        hasher: &mut hasher,
    }
    .deserialize(&mut de)
    .ok()?;
    de.end().ok()?;
    Some(hasher.finish())
}

/// Where a walked container is: only these three hold noise.
#[derive(Clone, Copy)]
enum Parents {
    Root,
    Metadata,
    Annotations,
}

impl Parents {
    /// The path of member `key` of this container.
    fn member<'k>(self, key: &'k str) -> ([SegRef<'k>; 3], usize) {
        let k = SegRef::Key(key);
        let (m, a) = (SegRef::Key("metadata"), SegRef::Key("annotations"));
        match self {
            Parents::Root => ([k, k, k], 1),
            Parents::Metadata => ([m, k, k], 2),
            Parents::Annotations => ([m, a, k], 3),
        }
    }

    /// The container a member at `path` is, when it holds noise itself.
    fn child(path: &[SegRef<'_>]) -> Option<Parents> {
        if !holds_noise(path) {
            return None;
        }
        match path.len() {
            1 => Some(Parents::Metadata),
            2 => Some(Parents::Annotations),
            _ => None,
        }
    }
}

/// Hashes one container's members that a default diff compares.
struct Walk<'h, H> {
    parents: Parents,
    hasher: &'h mut H,
}

impl<'de, H: Hasher> DeserializeSeed<'de> for Walk<'_, H> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, H: Hasher> Visitor<'de> for Walk<'_, H> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let opts = DiffOptions::default();
        self.hasher.write_u8(OPEN);
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            let (path, len) = self.parents.member(&key);
            let path = &path[..len];
            let filled =
                matches!(self.parents, Parents::Root) && (key == "apiVersion" || key == "kind");
            if filled || is_noise_path(path, &opts) {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            self.hasher.write(key.as_bytes());
            // No member name holds 0xff: it is not UTF-8.
            self.hasher.write_u8(0xff);
            match Parents::child(path) {
                Some(parents) => map.next_value_seed(Walk {
                    parents,
                    hasher: &mut *self.hasher,
                })?,
                None => {
                    let raw: &RawValue = map.next_value()?;
                    self.hasher.write_u8(RAW);
                    self.hasher.write_usize(raw.get().len());
                    self.hasher.write(raw.get().as_bytes());
                }
            }
        }
        self.hasher.write_u8(CLOSE);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::diff_objects;
    use serde_json::{Value, json};

    fn digest(v: &Value) -> Option<u64> {
        compared_digest(&serde_json::to_vec(v).unwrap())
    }

    fn deployment() -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {
                "name": "web", "namespace": "shop", "uid": "u1", "resourceVersion": "7",
                "generation": 2, "creationTimestamp": "2026-11-30T10:00:00Z",
                "labels": {"app": "web"},
                "annotations": {"deployment.kubernetes.io/revision": "2", "team": "a"},
                "managedFields": [{"manager": "kubectl", "operation": "Apply"}]
            },
            "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "c", "image": "web:1"}]}}},
            "status": {"readyReplicas": 1, "conditions": [{"type": "Available", "status": "True"}]}
        })
    }

    /// Applies `edit` to a copy of the deployment.
    fn edited(edit: impl FnOnce(&mut Value)) -> Value {
        let mut v = deployment();
        edit(&mut v);
        v
    }

    #[test]
    fn noise_only_changes_keep_the_digest() {
        let base = deployment();
        for (what, v) in [
            (
                "status",
                edited(|v| v["status"]["readyReplicas"] = json!(2)),
            ),
            (
                "status gone",
                edited(|v| {
                    v.as_object_mut().unwrap().shift_remove("status");
                }),
            ),
            (
                "resourceVersion",
                edited(|v| v["metadata"]["resourceVersion"] = json!("8")),
            ),
            (
                "generation",
                edited(|v| v["metadata"]["generation"] = json!(3)),
            ),
            (
                "managedFields",
                edited(|v| v["metadata"]["managedFields"][0]["manager"] = json!("x")),
            ),
            (
                "revision",
                edited(|v| {
                    v["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = json!("3")
                }),
            ),
        ] {
            assert_eq!(digest(&v), digest(&base), "{what}");
            assert!(
                diff_objects(&base, &v, &DiffOptions::default()).is_empty(),
                "{what}"
            );
        }
    }

    #[test]
    fn a_list_item_without_type_meta_has_the_digest_of_its_event() {
        // The differ fills in the stream's apiVersion and kind where a list
        // item has none.
        let item = edited(|v| {
            let o = v.as_object_mut().unwrap();
            o.shift_remove("apiVersion");
            o.shift_remove("kind");
        });
        assert_eq!(digest(&item), digest(&deployment()));
    }

    #[test]
    fn every_compared_change_moves_the_digest() {
        let base = deployment();
        for (what, v) in [
            (
                "image",
                edited(|v| {
                    v["spec"]["template"]["spec"]["containers"][0]["image"] = json!("web:2")
                }),
            ),
            ("replicas", edited(|v| v["spec"]["replicas"] = json!(3))),
            (
                "label",
                edited(|v| v["metadata"]["labels"]["app"] = json!("w")),
            ),
            (
                "annotation",
                edited(|v| v["metadata"]["annotations"]["team"] = json!("b")),
            ),
            (
                "annotation added",
                edited(|v| v["metadata"]["annotations"]["x"] = json!("")),
            ),
            ("name", edited(|v| v["metadata"]["name"] = json!("web2"))),
            (
                "finalizers",
                edited(|v| v["metadata"]["finalizers"] = json!(["f"])),
            ),
            (
                "a top-level member",
                edited(|v| v["data"] = json!({"status": 1})),
            ),
            (
                "member moved into annotations",
                edited(|v| {
                    v["metadata"]["annotations"]["labels"] = v["metadata"]["labels"].take();
                    v["metadata"]
                        .as_object_mut()
                        .unwrap()
                        .shift_remove("labels");
                }),
            ),
        ] {
            assert_ne!(digest(&v), digest(&base), "{what}");
            assert!(
                !diff_objects(&base, &v, &DiffOptions::default()).is_empty(),
                "{what}"
            );
        }
    }

    #[test]
    fn order_and_spacing_count_as_different() {
        // The digest is of bytes: a reordered or reformatted version is
        // compared as usual, never taken as unchanged by mistake.
        let a = br#"{"metadata":{"name":"a"},"spec":{"x":1,"y":2}}"#;
        let b = br#"{"metadata":{"name":"a"},"spec":{"y":2,"x":1}}"#;
        let c = br#"{"metadata":{"name":"a"},"spec":{"x":1, "y":2}}"#;
        assert_ne!(compared_digest(a), compared_digest(b));
        assert_ne!(compared_digest(a), compared_digest(c));
        assert_eq!(compared_digest(a), compared_digest(a));
    }

    #[test]
    fn what_is_not_an_object_has_no_digest() {
        for raw in [
            &b"[1]"[..],
            b"\"x\"",
            br#"{"metadata":"x"}"#,
            br#"{"metadata":{"annotations":[1]}}"#,
            br#"{"metadata":{}} trailing"#,
            b"{",
        ] {
            assert_eq!(
                compared_digest(raw),
                None,
                "{}",
                String::from_utf8_lossy(raw)
            );
        }
    }

    #[test]
    fn escaped_names_are_read_as_names() {
        // `st\u0061tus` is `status`: left out like it.
        let a = br#"{"metadata":{"name":"a"},"status":{"x":1}}"#;
        let b = br#"{"metadata":{"name":"a"},"st\u0061tus":{"x":2}}"#;
        assert_eq!(compared_digest(a), compared_digest(b));
    }
}
