//! A digest of what a default diff compares in one version of an object.
//!
//! Most changes on a busy cluster touch only status and server-owned fields. A
//! default diff ([`DiffOptions`] without `include_status`) reports nothing for
//! them, yet finding that out means decoding and scanning both versions. The
//! recorder digests, as it receives each version, every part a default diff
//! compares, and the writer marks each MODIFIED event against the object's
//! previous record: the same digest, nothing a default diff shows changed
//! (status-only); another digest, something it shows did (docs/journal.md,
//! "Status-only changes"). Readers that only count changes (`browse`'s list)
//! then read neither version.
//!
//! The digest is of the version as a default diff sees it, not of its bytes:
//! - members in any order, each name and string as parsed (escapes read);
//! - numbers as serde_json parses them: `1` and `1.0` differ, `1.0` and `1e0`
//!   do not (`-0.0` is `0.0`);
//! - lists in order (a diff reports a moved item as removed and added);
//! - leaving out the noise paths of [`is_noise_path`] (status, the
//!   server-owned metadata and annotations), and top-level `apiVersion` and
//!   `kind` (list items omit them and the differ fills in the stream's, which
//!   every version of one stream shares);
//! - `metadata` or `annotations` holding only noise is as if absent, as the
//!   diff's `without_noise` takes it.
//!
//! Two versions with the same digest have an empty default diff, unless two
//! different versions collide; two with different digests have a change, with
//! no exception (the digest is a function of what the diff compares). Where
//! the diff's own answer is not one function of each side, there is no digest
//! (`None`), and the versions are compared as usual:
//! - the object, its `metadata` or its `annotations` is not a JSON object, or
//!   `metadata` or `annotations` is `{}` (the diff takes `{}` as unchanged
//!   against noise only, noise only as unchanged against absent, but `{}` as
//!   changed against absent);
//! - an object has one member twice.
//!
//! The hasher is keyed at random once per process: digests are compared only
//! within one process (the recorder's or an import's writer), never stored, so
//! nobody who writes objects can choose two that collide.

use super::DiffOptions;
use super::noise::is_noise_path;
use super::path::SegRef;
use super::reduce::Key;
use serde::de::{DeserializeSeed, Error as _, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::LazyLock;

/// This process's key.
static KEY: LazyLock<RandomState> = LazyLock::new(RandomState::new);

/// Tags that keep the hashed values of different types apart.
const NULL: u8 = 1;
const FALSE: u8 = 2;
const TRUE: u8 = 3;
const UINT: u8 = 4;
const FLOAT: u8 = 5;
const STRING: u8 = 6;
const LIST: u8 = 7;
const OBJECT: u8 = 8;
const NAME: u8 = 9;
const CLOSE: u8 = 10;
const NEG_INT: u8 = 11;

/// A tag and the number that follows it.
fn put(out: &mut Vec<u8>, tag: u8, n: u64) {
    out.push(tag);
    out.extend_from_slice(&n.to_le_bytes());
}

/// The digest of what a default diff compares in `raw`, a JSON object; `None`
/// when the diff's answer about it cannot be told from a digest (above), or
/// `raw` is not one JSON object.
pub fn compared_digest(raw: &[u8]) -> Option<u64> {
    walk(raw, None)
}

/// The members of an object's `metadata` that say which object and version
/// it is, each a string, `null` (`None`) or absent (`None`).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Identity {
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub uid: Option<String>,
    pub resource_version: Option<String>,
}

impl Identity {
    /// The place of member `key` of `metadata`, if it is one of these, and
    /// the bit that marks it read.
    fn slot(&mut self, key: &str) -> Option<(u8, &mut Option<String>)> {
        match key {
            "namespace" => Some((1, &mut self.namespace)),
            "name" => Some((2, &mut self.name)),
            "uid" => Some((4, &mut self.uid)),
            "resourceVersion" => Some((8, &mut self.resource_version)),
            _ => None,
        }
    }
}

/// [`compared_digest`] and the object's [`Identity`], read in the same walk
/// so that the recorder parses each event once (docs/journal.md, "Where
/// the recorder's time goes"). `None` wherever `compared_digest` is, and
/// also when `metadata` names one of the identity members twice or holds
/// one that is neither a string nor `null`: the caller then reads the
/// object as usual, which says what is wrong with it.
pub fn compared_digest_and_identity(raw: &[u8]) -> Option<(u64, Identity)> {
    let mut identity = Identity::default();
    let digest = walk(raw, Some(&mut identity))?;
    Some((digest, identity))
}

/// The digest of `raw`, reading its identity into `identity` when given.
fn walk(raw: &[u8], identity: Option<&mut Identity>) -> Option<u64> {
    // Checked as UTF-8 once, so that no string is checked again as it is
    // read (a seventh of the recorder's reading thread, string by string).
    let text = std::str::from_utf8(raw).ok()?;
    let mut de = serde_json::Deserializer::from_str(text);
    let mut state = State {
        out: Vec::with_capacity(raw.len()),
        members: Vec::with_capacity(64),
        identity,
        taken: 0,
    };
    Walk {
        at: At::Root,
        state: &mut state,
    }
    .deserialize(&mut de)
    .ok()?;
    de.end().ok()?;
    Some(KEY.hash_one(state.out.as_slice()))
}

/// What one walk writes and collects.
struct State<'de, 'i> {
    /// The encoding being hashed.
    out: Vec<u8>,
    /// The names and digests of the members of the objects being walked,
    /// the innermost last (one allocation for the whole walk).
    members: Vec<(Cow<'de, str>, u64)>,
    /// Where the identity is read to, when it is.
    identity: Option<&'i mut Identity>,
    /// The identity members read so far: a bit for each.
    taken: u8,
}

impl State<'_, '_> {
    /// Reads member `key` of `metadata` into the identity when it is one of
    /// its members and the identity is read (`Ok(true)`), an error when it
    /// was read before.
    fn take<'de, A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<bool, A::Error> {
        let Some((bit, slot)) = self.identity.as_deref_mut().and_then(|i| i.slot(key)) else {
            return Ok(false);
        };
        if self.taken & bit != 0 {
            return Err(A::Error::custom("an identity member named twice"));
        }
        self.taken |= bit;
        *slot = map.next_value()?;
        Ok(true)
    }
}

/// Writes a string or `null` as the walk does.
fn put_str(out: &mut Vec<u8>, v: Option<&str>) {
    match v {
        None => out.push(NULL),
        Some(v) => {
            put(out, STRING, v.len() as u64);
            out.extend_from_slice(v.as_bytes());
        }
    }
}

/// Where a walked value is: only the first three hold noise.
#[derive(Clone, Copy, PartialEq)]
enum At {
    Root,
    Metadata,
    Annotations,
    Elsewhere,
}

impl At {
    /// The path of member `key` of this container.
    fn member<'k>(self, key: &'k str) -> ([SegRef<'k>; 3], usize) {
        let k = SegRef::Key(key);
        let (m, a) = (SegRef::Key("metadata"), SegRef::Key("annotations"));
        match self {
            At::Root => ([k, k, k], 1),
            At::Metadata => ([m, k, k], 2),
            At::Annotations | At::Elsewhere => ([m, a, k], 3),
        }
    }

    /// Where member `key` of this container is.
    fn child(self, key: &str) -> At {
        match (self, key) {
            (At::Root, "metadata") => At::Metadata,
            (At::Metadata, "annotations") => At::Annotations,
            _ => At::Elsewhere,
        }
    }
}

/// Walks one value, writing what a diff compares of it to `out` (an
/// unambiguous encoding: tags, lengths, bytes): `Ok(false)` for a `metadata`
/// or `annotations` that holds only noise (as if absent, nothing written).
/// Anything without a digest is an error, which ends the walk. Scalars and
/// list items are written as they come; an object's members are each hashed
/// on their own (their bytes then dropped from `out`), to be written in the
/// order of their names. One SipHash per member, over one slice: hashing
/// piece by piece took a quarter of the recorder's reading thread.
struct Walk<'s, 'de, 'i> {
    at: At,
    state: &'s mut State<'de, 'i>,
}

impl<'de> DeserializeSeed<'de> for Walk<'_, 'de, '_> {
    type Value = bool;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        match self.at {
            At::Elsewhere => d.deserialize_any(self),
            _ => d.deserialize_map(self),
        }
    }
}

impl<'de> Visitor<'de> for Walk<'_, 'de, '_> {
    type Value = bool;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<bool, E> {
        self.state.out.push(NULL);
        Ok(true)
    }

    fn visit_bool<E>(self, v: bool) -> Result<bool, E> {
        self.state.out.push(if v { TRUE } else { FALSE });
        Ok(true)
    }

    // serde_json hands non-negative integers to `visit_u64`, negative ones to
    // `visit_i64`, and a `Value` keeps them apart from floats the same way.
    fn visit_u64<E>(self, v: u64) -> Result<bool, E> {
        put(&mut self.state.out, UINT, v);
        Ok(true)
    }

    fn visit_i64<E>(self, v: i64) -> Result<bool, E> {
        // A non-negative one is the same number as a `u64`.
        match u64::try_from(v) {
            Ok(v) => put(&mut self.state.out, UINT, v),
            Err(_) => put(&mut self.state.out, NEG_INT, v.cast_unsigned()),
        }
        Ok(true)
    }

    fn visit_f64<E>(self, v: f64) -> Result<bool, E> {
        // Equal floats compare equal in a `Value`: `-0.0` is `0.0`.
        let v = if v == 0.0 { 0.0 } else { v };
        put(&mut self.state.out, FLOAT, v.to_bits());
        Ok(true)
    }

    fn visit_str<E>(self, v: &str) -> Result<bool, E> {
        put_str(&mut self.state.out, Some(v));
        Ok(true)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        self.state.out.push(LIST);
        let mut len = 0u64;
        // Items are never `metadata` or `annotations`: always written.
        while seq
            .next_element_seed(Walk {
                at: At::Elsewhere,
                state: &mut *self.state,
            })?
            .is_some()
        {
            len += 1;
        }
        put(&mut self.state.out, CLOSE, len);
        Ok(true)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let opts = DiffOptions::default();
        let holds_noise = self.at != At::Elsewhere;
        let start = self.state.members.len();
        // In a container that holds noise, the names of members walked but
        // left out (noise only): one named twice is an error even then.
        let mut left_out: Vec<Cow<'de, str>> = Vec::new();
        let mut any = false;
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            any = true;
            let taken = self.at == At::Metadata && self.state.take(&key, &mut map)?;
            if holds_noise {
                let (path, len) = self.at.member(&key);
                let filled = self.at == At::Root && (key == "apiVersion" || key == "kind");
                if filled || is_noise_path(&path[..len], &opts) {
                    if !taken {
                        map.next_value::<IgnoredAny>()?;
                    }
                    continue;
                }
            }
            let at = if holds_noise {
                self.at.child(&key)
            } else {
                At::Elsewhere
            };
            let mark = self.state.out.len();
            let written = if taken {
                // Written as the walk writes a string or `null`.
                let st = &mut *self.state;
                let value = st.identity.as_deref_mut().and_then(|i| i.slot(&key));
                put_str(&mut st.out, value.and_then(|(_, v)| v.as_deref()));
                true
            } else {
                map.next_value_seed(Walk {
                    at,
                    state: &mut *self.state,
                })?
            };
            if written {
                let digest = KEY.hash_one(&self.state.out[mark..]);
                self.state.members.push((key, digest));
            } else {
                left_out.push(key);
            }
            self.state.out.truncate(mark);
        }
        let members = &mut self.state.members[start..];
        members.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let twice = members.windows(2).any(|w| w[0].0 == w[1].0)
            || left_out
                .iter()
                .any(|n| members.binary_search_by(|m| m.0.cmp(n)).is_ok())
            || {
                left_out.sort_unstable();
                left_out.windows(2).any(|w| w[0] == w[1])
            };
        if twice {
            return Err(A::Error::custom("a member named twice"));
        }
        let written = match self.at {
            At::Metadata | At::Annotations if !any => {
                return Err(A::Error::custom("an empty container that holds noise"));
            }
            At::Metadata | At::Annotations if members.is_empty() => false,
            _ => {
                let out = &mut self.state.out;
                put(out, OBJECT, members.len() as u64);
                for (name, value) in members.iter() {
                    put(out, NAME, name.len() as u64);
                    out.extend_from_slice(name.as_bytes());
                    out.extend_from_slice(&value.to_le_bytes());
                }
                true
            }
        };
        self.state.members.truncate(start);
        Ok(written)
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
    fn order_spacing_and_escapes_do_not_count() {
        // A diff compares what the JSON says, not how it is written.
        let a = br#"{"metadata":{"name":"a"},"spec":{"x":1,"y":[2,"b"]}}"#;
        for same in [
            &br#"{"spec":{"y":[2,"b"],"x":1},"metadata":{"name":"a"}}"#[..],
            br#"{"metadata":{"name":"a"},"spec":{"x":1, "y":[ 2 , "b" ]}}"#,
            br#"{"metadata":{"n\u0061me":"\u0061"},"spec":{"x":1,"y":[2,"\u0062"]}}"#,
        ] {
            assert_eq!(compared_digest(a), compared_digest(same));
        }
        // A list's order does count: a moved item is removed and added.
        let moved = br#"{"metadata":{"name":"a"},"spec":{"x":1,"y":["b",2]}}"#;
        assert_ne!(compared_digest(a), compared_digest(moved));
    }

    #[test]
    fn numbers_are_equal_as_a_diff_takes_them() {
        let parsed = |n: &str| {
            let raw = format!(r#"{{"metadata":{{"name":"a"}},"spec":{{"n":{n}}}}}"#);
            let value: Value = serde_json::from_str(&raw).unwrap();
            (compared_digest(raw.as_bytes()).unwrap(), value)
        };
        let numbers = [
            "1",
            "1.0",
            "1e0",
            "10e-1",
            "-1",
            "-1.0",
            "0",
            "-0",
            "0.0",
            "-0.0",
            "1e2",
            "100",
            "100.0",
            "18446744073709551615",
            "-9223372036854775808",
        ];
        for a in numbers {
            for b in numbers {
                let ((da, va), (db, vb)) = (parsed(a), parsed(b));
                assert_eq!(
                    da == db,
                    diff_objects(&va, &vb, &DiffOptions::default()).is_empty(),
                    "{a} against {b}"
                );
            }
        }
    }

    #[test]
    fn metadata_or_annotations_with_only_noise_are_as_if_absent() {
        let base = deployment();
        let cases = [
            edited(|v| {
                v["metadata"]["annotations"] = json!({"deployment.kubernetes.io/revision": "2"});
            }),
            edited(|v| {
                v["metadata"]
                    .as_object_mut()
                    .unwrap()
                    .shift_remove("annotations");
            }),
        ];
        let [a, b] = &cases;
        assert_eq!(digest(a), digest(b));
        assert!(diff_objects(a, b, &DiffOptions::default()).is_empty());
        assert!(diff_objects(b, a, &DiffOptions::default()).is_empty());
        assert_ne!(digest(a), digest(&base));
        // `{}` is unchanged against noise only, but changed against absent:
        // no digest can say both.
        let empty = edited(|v| v["metadata"]["annotations"] = json!({}));
        assert_eq!(digest(&empty), None);
        assert!(diff_objects(a, &empty, &DiffOptions::default()).is_empty());
        assert!(!diff_objects(b, &empty, &DiffOptions::default()).is_empty());
        let only_noise = json!({"metadata": {"uid": "u", "annotations": {"deployment.kubernetes.io/revision": "1"}}, "spec": {}});
        let none = json!({"spec": {}});
        assert_eq!(digest(&only_noise), digest(&none));
        assert!(diff_objects(&none, &only_noise, &DiffOptions::default()).is_empty());
    }

    #[test]
    fn a_member_named_twice_has_no_digest() {
        // Parsers keep the last; rather than follow that, such a version is
        // compared as usual.
        for raw in [
            &br#"{"metadata":{"name":"a"},"spec":{"x":1,"x":2}}"#[..],
            br#"{"metadata":{"name":"a","annotations":{"t":"1"},"annotations":{"deployment.kubernetes.io/revision":"1"}}}"#,
            br#"{"metadata":{"name":"a"},"metadata":{"uid":"u"}}"#,
        ] {
            assert_eq!(compared_digest(raw), None, "{}", String::from_utf8_lossy(raw));
        }
        // Noise named twice is left out twice.
        let raw = br#"{"metadata":{"name":"a","uid":"1","uid":"2"},"status":1,"status":2}"#;
        assert!(compared_digest(raw).is_some());
    }

    #[test]
    fn what_is_not_an_object_has_no_digest() {
        for raw in [
            &b"[1]"[..],
            b"\"x\"",
            br#"{"metadata":"x"}"#,
            br#"{"metadata":{"annotations":[1]}}"#,
            br#"{"metadata":{"name":"a"}} trailing"#,
            br#"{"metadata":{}}"#,
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
