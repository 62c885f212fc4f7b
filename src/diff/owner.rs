//! Which field manager owns a field, read from the object's `metadata.managedFields`.
//!
//! Each managedFields entry (`manager`, `operation`, `time`, `fieldsType: FieldsV1`,
//! `fieldsV1`) holds a tree of the fields that manager owns. FieldsV1 keys are `f:<key>`
//! for a map key, `k:{"name":"x"}` for the list item whose merge keys have those values,
//! `v:<json>` for the set item equal to that JSON value, `i:<n>` for the item at index
//! `n`, and `.` for the item or map itself; an empty object is an owned leaf.
//!
//! A [`FieldPath`] is mapped onto that tree step by step; a list index is turned into the
//! `k:`/`v:`/`i:` key of the element at that index, which is why the object is needed.
//! A manager claims the path when its tree reaches it (it owns the field itself or fields
//! below it), or, failing that, when it owns the closest ancestor (an owned leaf such as
//! an atomic list, or an item/map marked `.`). The most specific claim wins, that is the
//! deepest; ties go to the most recent `time`, then to the later entry.
//!
//! Watch events do not say who changed a field: this is the manager that owns the field
//! in the given version of the object and when it last wrote there. Show it as
//! "manager", never as "user".

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::path::{FieldPath, PathSegment};
use super::tape::Raw;
use crate::time::Millis;
use std::borrow::Cow;

/// The managedFields entry that owns a field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldOwner {
    /// The field manager (`kubectl-client-side-apply`, `kube-controller-manager`, ...).
    pub manager: String,
    /// `Apply` or `Update`, when recorded.
    pub operation: Option<String>,
    /// When that manager last wrote the object, as recorded (RFC 3339).
    pub time: Option<String>,
    /// The subresource it wrote through (`status`, `scale`), when recorded.
    pub subresource: Option<String>,
}

/// The field manager owning `path` in `object` (see the module documentation).
///
/// Pass the version of the object that `path` refers to: the one after a change for
/// added and modified fields, the one before it for removed ones.
pub fn field_manager(object: &Value, path: &FieldPath) -> Option<String> {
    field_owner(object, path).map(|owner| owner.manager)
}

/// Like [`field_manager`], with the operation, time and subresource of the owning entry.
pub fn field_owner(object: &Value, path: &FieldPath) -> Option<FieldOwner> {
    let entries = object.get("metadata")?.get("managedFields")?.as_array()?;
    let entry = owner_among(entries.iter(), object, path)?;
    let text = |key: &str| entry.get(key)?.as_str().map(str::to_string);
    Some(FieldOwner {
        manager: text("manager")?,
        operation: text("operation"),
        time: text("time"),
        subresource: text("subresource"),
    })
}

/// [`field_manager`], with `object`'s managedFields left raw on the tape of
/// the document it was reduced from (`entries`): [`super::owned_changes`]
/// reads only the parts of the field sets on `path`, and parses nothing of them.
pub(super) fn raw_field_manager(
    entries: Raw<'_>,
    object: &Value,
    path: &FieldPath,
) -> Option<String> {
    if !entries.is_array() {
        return None;
    }
    let entries = entries.items().unwrap_or_default();
    let entry = owner_among(entries.into_iter(), object, path)?;
    entry
        .member("manager")
        .and_then(Node::text)
        .map(Cow::into_owned)
}

/// A managedFields entry or a FieldsV1 node, parsed or raw: the ownership
/// rules below read both the same way.
trait Node<'n>: Copy {
    /// An object's member named `key` (the last of several, as a parser keeps it).
    fn member(self, key: &str) -> Option<Self>;
    /// The first of an object's members whose key `found` accepts (the last
    /// member of that key, as [`Node::member`]).
    fn find(self, found: impl FnMut(&str) -> bool) -> Option<Self>;
    fn is_object(self) -> bool;
    /// An object with no member.
    fn is_empty_object(self) -> bool;
    /// A string's text.
    fn text(self) -> Option<Cow<'n, str>>;
}

impl<'v> Node<'v> for &'v Value {
    fn member(self, key: &str) -> Option<Self> {
        self.as_object()?.get(key)
    }
    fn find(self, mut found: impl FnMut(&str) -> bool) -> Option<Self> {
        self.as_object()?
            .iter()
            .find_map(|(key, child)| found(key).then_some(child))
    }
    fn is_object(self) -> bool {
        self.is_object()
    }
    fn is_empty_object(self) -> bool {
        self.as_object().is_some_and(Map::is_empty)
    }
    fn text(self) -> Option<Cow<'v, str>> {
        self.as_str().map(Cow::Borrowed)
    }
}

impl<'t> Node<'t> for Raw<'t> {
    fn member(self, key: &str) -> Option<Self> {
        Raw::member(&self, key)
    }
    fn find(self, mut found: impl FnMut(&str) -> bool) -> Option<Self> {
        // A parsed map holds each key once, where it first came, with its
        // last value: the members after the first found may repeat its key.
        let mut members = self.keyed().flatten();
        let (key, mut value) = members.find(|(key, _)| found(key))?;
        for (again, later) in members {
            if again == key {
                value = later;
            }
        }
        Some(value)
    }
    fn is_object(self) -> bool {
        Raw::is_object(&self)
    }
    fn is_empty_object(self) -> bool {
        Raw::is_object(&self) && self.keyed().next().is_none()
    }
    fn text(self) -> Option<Cow<'t, str>> {
        self.as_str()
    }
}

/// The entry among `entries` that owns `path` in `object` (see the module
/// documentation). An entry's time is read only to break a tie.
fn owner_among<'n, N: Node<'n>>(
    entries: impl Iterator<Item = N>,
    object: &Value,
    path: &FieldPath,
) -> Option<N> {
    let time = |entry: N| -> Option<Millis> { entry.member("time")?.text()?.parse().ok() };
    // The deepest claim so far: its depth, its entry, and its time once read.
    let mut best: Option<(usize, N, Option<Option<Millis>>)> = None;
    for entry in entries {
        if !entry.is_object() {
            continue;
        }
        let text = |key: &str| entry.member(key).and_then(N::text);
        if text("manager").is_none() {
            continue;
        }
        if text("fieldsType").is_some_and(|t| t != "FieldsV1") {
            continue;
        }
        let Some(fields) = entry.member("fieldsV1") else {
            continue;
        };
        let Some(depth) = claim(object, fields, path) else {
            continue;
        };
        // Ranked by depth, then time; the later entry wins a full tie.
        match &mut best {
            Some((best_depth, _, _)) if depth < *best_depth => {}
            Some((best_depth, best_entry, best_time)) if depth == *best_depth => {
                let theirs = *best_time.get_or_insert_with(|| time(*best_entry));
                let ours = time(entry);
                if ours >= theirs {
                    best = Some((depth, entry, Some(ours)));
                }
            }
            _ => best = Some((depth, entry, None)),
        }
    }
    best.map(|(_, entry, _)| entry)
}

/// How deep a manager's field set claims `path`: `path.len()` when the set reaches the
/// path, the depth of the closest owned ancestor otherwise, `None` without any claim.
fn claim<'n, N: Node<'n>>(object: &Value, fields: N, path: &FieldPath) -> Option<usize> {
    let mut node = fields;
    let mut value = Some(object);
    let mut owned_ancestor = None;
    for (depth, segment) in path.segments().iter().enumerate() {
        if depth > 0 && owns_itself(node) {
            owned_ancestor = Some(depth);
        }
        let child = match segment {
            PathSegment::Key(key) => node.find(|k| k.strip_prefix("f:") == Some(key.as_str())),
            PathSegment::Index(index) => {
                let element = value.and_then(|v| v.as_array()).and_then(|l| l.get(*index));
                list_item(node, element, *index)
            }
        };
        let Some(child) = child else {
            return owned_ancestor;
        };
        node = child;
        value = value.and_then(|v| match segment {
            PathSegment::Key(key) => v.get(key.as_str()),
            PathSegment::Index(index) => v.get(*index),
        });
    }
    Some(path.len())
}

/// Whether a FieldsV1 node owns its field as a whole: a leaf, or marked with `.`.
fn owns_itself<'n, N: Node<'n>>(node: N) -> bool {
    !node.is_object() || node.is_empty_object() || node.member(".").is_some()
}

/// The FieldsV1 child of `node` for the list element `element` at `index`.
fn list_item<'n, N: Node<'n>>(node: N, element: Option<&Value>, index: usize) -> Option<N> {
    node.find(|key| {
        if let Some(merge_keys) = key.strip_prefix("k:") {
            element.is_some_and(|e| krply_apimachinery::lists::item_has_key(merge_keys, e))
        } else if let Some(set_value) = key.strip_prefix("v:") {
            element.is_some_and(|e| serde_json::from_str::<Value>(set_value).is_ok_and(|v| &v == e))
        } else if let Some(position) = key.strip_prefix("i:") {
            position.parse::<usize>() == Ok(index)
        } else {
            false
        }
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::diff::parse_path;
    use crate::diff::tape::Tape;

    fn deployment() -> Value {
        json!({
            "metadata": {
                "name": "web",
                "labels": {"app": "web", "team": "shop"},
                "annotations": {"deployment.kubernetes.io/revision": "2"},
                "finalizers": ["example.com/keep"],
                "managedFields": [
                    {
                        "manager": "kubectl-client-side-apply",
                        "operation": "Update",
                        "apiVersion": "apps/v1",
                        "time": "2026-11-29T09:00:00Z",
                        "fieldsType": "FieldsV1",
                        "fieldsV1": {
                            // `.` last: pruned field sets must keep it wherever it comes.
                            "f:metadata": {"f:labels": {"f:app": {}, ".": {}}},
                            "f:spec": {
                                "f:replicas": {},
                                "f:template": {"f:spec": {"f:containers": {
                                    "k:{\"name\":\"web\"}": {
                                        ".": {},
                                        "f:name": {},
                                        "f:image": {},
                                        "f:args": {},
                                        "f:ports": {
                                            ".": {},
                                            "k:{\"containerPort\":8080,\"protocol\":\"TCP\"}": {
                                                ".": {}, "f:containerPort": {}
                                            }
                                        }
                                    }
                                }}}
                            }
                        }
                    },
                    {
                        "manager": "kube-controller-manager",
                        "operation": "Update",
                        "apiVersion": "apps/v1",
                        "time": "2026-11-29T09:05:00Z",
                        "fieldsType": "FieldsV1",
                        "fieldsV1": {
                            "f:metadata": {
                                "f:annotations": {".": {}, "f:deployment.kubernetes.io/revision": {}},
                                "f:finalizers": {"v:\"example.com/keep\"": {}}
                            },
                            "f:status": {"f:replicas": {}}
                        },
                        "subresource": "status"
                    },
                    {
                        "manager": "kubectl-edit",
                        "operation": "Update",
                        "time": "2026-11-29T09:10:00Z",
                        "fieldsType": "FieldsV1",
                        "fieldsV1": {
                            "f:metadata": {"f:labels": {"f:team": {}}},
                            "f:spec": {"f:template": {"f:spec": {"f:containers": {
                                "k:{\"name\":\"sidecar\"}": {".": {}, "f:image": {}, "f:name": {}}
                            }}}}
                        }
                    },
                    {
                        "manager": "ignored-wrong-type",
                        "fieldsType": "FieldsV2",
                        "fieldsV1": {"f:spec": {"f:replicas": {}}}
                    }
                ]
            },
            "spec": {
                "replicas": 3,
                "template": {"spec": {"containers": [
                    {"name": "sidecar", "image": "envoy:1"},
                    {"name": "web", "image": "web:2", "args": ["--a", "--b"],
                     "ports": [{"containerPort": 8080, "protocol": "TCP"}]}
                ]}}
            },
            "status": {"replicas": 3}
        })
    }

    fn manager(path: &str) -> Option<String> {
        field_manager(&deployment(), &parse_path(path).unwrap())
    }

    #[test]
    fn raw_field_sets_give_the_same_owners() {
        // What diff does: read managedFields on the document's tape, parsing
        // nothing of them.
        let paths = [
            "spec.replicas",
            "metadata.labels",
            "metadata.labels.app",
            "metadata.labels.team",
            "metadata.labels.new",
            "status.replicas",
            r#"metadata.annotations["deployment.kubernetes.io/revision"]"#,
            "spec.template.spec.containers[0].image",
            "spec.template.spec.containers[1].image",
            "spec.template.spec.containers[1].ports[0].containerPort",
            "spec.template.spec.containers[1].args[1]",
            "spec.template.spec.containers[1].resources.limits",
            "spec.template.spec.containers[7]",
            "metadata.finalizers[0]",
            "spec.paused",
            // Below a key written twice (`quirks`): the last one's set counts.
            "spec.template.spec.containers[0].image.x",
        ];
        let text = deployment().to_string();
        // A parser keeps the last of duplicate keys, where the first came;
        // keys with escapes are the keys they decode to.
        let quirks = text
            .replace(
                r#""f:image":{}"#,
                r#""f:image":{"f:x":{}},"f:ima\u0067e":{}"#,
            )
            .replace(
                r#""manager":"kube-controller-manager""#,
                r#""manager":"x","manager":"kube-controller-manager""#,
            );
        assert_ne!(quirks, text);
        for text in [text, quirks] {
            let parsed: Value = serde_json::from_str(&text).unwrap();
            let tape = Tape::new(&text).unwrap();
            let entries = tape.root().member("metadata").unwrap();
            let entries = entries.member("managedFields").unwrap();
            for path in paths {
                let path = parse_path(path).unwrap();
                assert_eq!(
                    raw_field_manager(entries, &parsed, &path),
                    field_manager(&parsed, &path),
                    "{path}"
                );
                // Every entry claims the path as deeply either way.
                let parsed_entries = parsed["metadata"]["managedFields"].as_array().unwrap();
                for (raw, entry) in entries.items().unwrap().into_iter().zip(parsed_entries) {
                    assert_eq!(
                        claim(&parsed, raw.member("fieldsV1").unwrap(), &path),
                        claim(&parsed, &entry["fieldsV1"], &path),
                        "{path} by {}",
                        entry["manager"]
                    );
                }
            }
        }
    }

    #[test]
    fn exact_fields() {
        assert_eq!(
            manager("spec.replicas").as_deref(),
            Some("kubectl-client-side-apply")
        );
        assert_eq!(
            manager("metadata.labels.app").as_deref(),
            Some("kubectl-client-side-apply")
        );
        assert_eq!(
            manager("metadata.labels.team").as_deref(),
            Some("kubectl-edit")
        );
        assert_eq!(
            manager("status.replicas").as_deref(),
            Some("kube-controller-manager")
        );
        assert_eq!(
            manager(r#"metadata.annotations["deployment.kubernetes.io/revision"]"#).as_deref(),
            Some("kube-controller-manager")
        );
    }

    #[test]
    fn list_items_are_mapped_through_their_merge_keys() {
        // containers[1] is "web" although it is the first k: entry of its manager.
        assert_eq!(
            manager("spec.template.spec.containers[1].image").as_deref(),
            Some("kubectl-client-side-apply")
        );
        assert_eq!(
            manager("spec.template.spec.containers[0].image").as_deref(),
            Some("kubectl-edit")
        );
        assert_eq!(
            manager("spec.template.spec.containers[1].ports[0].containerPort").as_deref(),
            Some("kubectl-client-side-apply")
        );
        assert_eq!(
            manager("metadata.finalizers[0]").as_deref(),
            Some("kube-controller-manager")
        );
        assert_eq!(manager("spec.template.spec.containers[7]"), None);
    }

    #[test]
    fn closest_owned_ancestor_or_descendants() {
        // An atomic list is an owned leaf: its elements belong to the list's owner.
        assert_eq!(
            manager("spec.template.spec.containers[1].args[1]").as_deref(),
            Some("kubectl-client-side-apply")
        );
        // A field nobody owns inside an item marked "." belongs to the item's owner.
        assert_eq!(
            manager("spec.template.spec.containers[1].resources.limits").as_deref(),
            Some("kubectl-client-side-apply")
        );
        // The whole labels map: both managers own parts; the more recent wins the tie.
        assert_eq!(manager("metadata.labels").as_deref(), Some("kubectl-edit"));
        // The labels map is marked "." by kubectl: a new label goes to it.
        assert_eq!(
            manager("metadata.labels.new").as_deref(),
            Some("kubectl-client-side-apply")
        );
        // Nobody owns spec.paused or any ancestor that is owned as a whole.
        assert_eq!(manager("spec.paused"), None);
    }

    #[test]
    fn owner_details() {
        let owner = field_owner(&deployment(), &parse_path("status.replicas").unwrap()).unwrap();
        assert_eq!(
            owner,
            FieldOwner {
                manager: "kube-controller-manager".into(),
                operation: Some("Update".into()),
                time: Some("2026-11-29T09:05:00Z".into()),
                subresource: Some("status".into()),
            }
        );
    }

    #[test]
    fn malformed_managed_fields_are_ignored() {
        for managed in [
            json!(null),
            json!("x"),
            json!([1, null, {"manager": 5}, {"manager": "m"}, {"manager": "m", "fieldsV1": "x"}]),
            json!([{"manager": "m", "fieldsV1": {"f:spec": {"f:list": {"k:{bad": {}, "k:{}": {}, "v:[": {}, "i:x": {}}}}}]),
        ] {
            let object =
                json!({"metadata": {"managedFields": managed}, "spec": {"list": [{"a": 1}]}});
            assert_eq!(
                field_manager(&object, &parse_path("spec.list[0].a").unwrap()),
                None
            );
            assert_eq!(
                field_manager(&json!(null), &parse_path("spec").unwrap()),
                None
            );
        }
    }

    #[test]
    fn a_tie_goes_to_the_newest_time_then_to_the_later_entry() {
        let entry = |manager: &str, time: Option<&str>| {
            let mut e = json!({"manager": manager, "fieldsType": "FieldsV1",
                "fieldsV1": {"f:spec": {"f:replicas": {}}}});
            if let Some(t) = time {
                e["time"] = json!(t);
            }
            e
        };
        let (old, new) = (Some("2026-01-01T00:00:00Z"), Some("2026-01-02T00:00:00Z"));
        let deeper =
            json!({"manager": "deeper-but-first", "fieldsV1": {"f:spec": {"f:replicas": {}}}});
        let shallow = json!({"manager": "shallow", "time": "2027-01-01T00:00:00Z",
            "fieldsV1": {"f:spec": {}}});
        for (entries, owner) in [
            // The newest time wins, first or last.
            (vec![entry("a", new), entry("b", old)], "a"),
            (vec![entry("a", old), entry("b", new)], "b"),
            (vec![entry("a", old), entry("b", new), entry("c", old)], "b"),
            // A time beats none; the same time goes to the later entry.
            (vec![entry("a", old), entry("b", None)], "a"),
            (vec![entry("a", None), entry("b", old)], "b"),
            (vec![entry("a", old), entry("b", old)], "b"),
            // Depth first: a newer shallow claim loses, before it or after.
            (vec![shallow.clone(), deeper.clone()], "deeper-but-first"),
            (vec![deeper, shallow, entry("c", None)], "c"),
        ] {
            let object = json!({"metadata": {"managedFields": entries}, "spec": {"replicas": 1}});
            let path = parse_path("spec.replicas").unwrap();
            assert_eq!(
                field_manager(&object, &path).as_deref(),
                Some(owner),
                "{object}"
            );
            let text = object.to_string();
            let tape = Tape::new(&text).unwrap();
            let entries = tape.root().member("metadata").unwrap();
            let entries = entries.member("managedFields").unwrap();
            assert_eq!(
                raw_field_manager(entries, &object, &path).as_deref(),
                Some(owner),
                "{object}"
            );
        }
    }

    #[test]
    fn index_items_and_missing_times() {
        let object = json!({
            "metadata": {"managedFields": [
                {"manager": "a", "fieldsV1": {"f:spec": {"f:list": {"i:1": {"f:x": {}}}}}},
                {"manager": "b", "time": "bad", "fieldsV1": {"f:spec": {"f:list": {"i:1": {"f:x": {}}}}}},
                {"manager": "c", "time": "2026-01-01T00:00:00Z", "fieldsV1": {"f:spec": {}}}
            ]},
            "spec": {"list": [{"x": 0}, {"x": 1}]}
        });
        // a and b tie on depth and have no usable time: the later entry wins.
        assert_eq!(
            field_manager(&object, &parse_path("spec.list[1].x").unwrap()).as_deref(),
            Some("b")
        );
        // Only c claims list[0]: "f:spec": {} is an owned leaf, an ancestor of the path.
        assert_eq!(
            field_manager(&object, &parse_path("spec.list[0].x").unwrap()).as_deref(),
            Some("c")
        );
    }
}

/// The `metadata.managedFields` of an object, only what [`last_writer`] needs.
#[derive(Deserialize)]
struct Managed {
    #[serde(default)]
    metadata: ManagedMeta,
}

#[derive(Deserialize, Default)]
struct ManagedMeta {
    #[serde(default, rename = "managedFields")]
    managed_fields: Vec<ManagedEntry>,
}

#[derive(Deserialize)]
struct ManagedEntry {
    manager: Option<String>,
    time: Option<String>,
    subresource: Option<String>,
}

/// Who wrote an object last: the manager of its newest `managedFields` entry,
/// with its subresource (`kube-controller-manager/status`). Reads only
/// `metadata.managedFields` of `body` (JSON text).
pub fn last_writer(body: &[u8]) -> Option<String> {
    let managed: Managed = serde_json::from_slice(body).ok()?;
    managed
        .metadata
        .managed_fields
        .into_iter()
        .filter(|e| e.manager.is_some())
        // RFC 3339 times in UTC sort as text; an entry without one sorts first.
        .max_by(|a, b| a.time.cmp(&b.time))
        .and_then(|e| {
            let manager = e.manager?;
            Some(match e.subresource.filter(|s| !s.is_empty()) {
                Some(sub) => format!("{manager}/{sub}"),
                None => manager,
            })
        })
}

#[cfg(test)]
mod last_writer_tests {
    use super::last_writer;

    #[test]
    fn the_newest_entry_wins_with_its_subresource() {
        let body = br#"{"metadata":{"name":"a","managedFields":[
            {"manager":"kubectl-create","time":"2026-12-01T10:00:00Z"},
            {"manager":"kube-controller-manager","subresource":"status","time":"2026-12-01T10:05:00Z"},
            {"manager":"kubectl-edit","time":"2026-12-01T10:04:00Z"}]},"spec":{}}"#;
        assert_eq!(
            last_writer(body).as_deref(),
            Some("kube-controller-manager/status")
        );
        assert_eq!(last_writer(br#"{"metadata":{"name":"a"}}"#), None);
        assert_eq!(last_writer(b"not json"), None);
    }
}
