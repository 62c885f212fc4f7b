//! Parsing two versions of an object only where they differ.
//!
//! Successive versions of a Kubernetes object share almost all of their bytes.
//! [`reduce_pair`] walks both documents as raw JSON, drops every member whose
//! bytes are identical on both sides (and every noise path), and parses only
//! what is left. [`diff_objects`](super::diff_objects) on the two reduced values
//! reports exactly what it reports on the full ones: identical members produce
//! no change, lists are kept whole (their items are matched by name there), and
//! members present on one side only are kept whole.

use super::DiffOptions;
use super::noise::is_noise_path;
use super::path::{FieldPath, PathSegment, SegRef};
use serde::de::{MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::borrow::Cow;

/// The members of a JSON object in document order, values left raw.
struct Members<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de> serde::Deserialize<'de> for Members<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members<'de>, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<Key<'de>, &'de RawValue>()? {
                    out.push((k.0, v));
                }
                Ok(Members(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// A member name, borrowed from the document unless it had escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de> serde::Deserialize<'de> for Key<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a member name")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_string())))
            }
        }
        d.deserialize_str(V)
    }
}

fn members(raw: &RawValue) -> Option<Members<'_>> {
    let text = raw.get();
    if !text.starts_with('{') {
        return None;
    }
    let mut de = serde_json::Deserializer::from_str(text);
    Members::deserialize_from(&mut de).ok()
}

impl<'a> Members<'a> {
    fn deserialize_from(
        de: &mut serde_json::Deserializer<serde_json::de::StrRead<'a>>,
    ) -> serde_json::Result<Members<'a>> {
        serde::Deserialize::deserialize(de)
    }

    fn get(&self, key: &str) -> Option<&'a RawValue> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
    }
}

fn parse(raw: &RawValue) -> serde_json::Result<Value> {
    serde_json::from_str(raw.get())
}

/// Both versions, reduced to what differs. `defaults` stand in for top-level
/// members one side lacks (`apiVersion` and `kind`, which list items omit).
pub fn reduce_pair(
    before: &str,
    after: &str,
    opts: &DiffOptions,
    defaults: &[(&str, &str)],
) -> serde_json::Result<(Value, Value)> {
    reduce_documents(before, after, opts, defaults, false).map(|r| (r.before, r.after))
}

/// Two versions reduced to what differs, with each side's `metadata` left raw:
/// find its managedFields with [`managed_fields`] and parse them with
/// [`parse_managed_for`] only when a changed field needs its owner (most
/// changes of a window are status only, which a default diff leaves out).
pub struct ReducedPair<'a> {
    pub before: Value,
    pub after: Value,
    pub metadata_before: Option<&'a RawValue>,
    pub metadata_after: Option<&'a RawValue>,
}

/// The raw `managedFields` of a raw `metadata`, if it has them.
pub fn managed_fields(metadata: &RawValue) -> Option<&RawValue> {
    members(metadata).and_then(|m| m.get("managedFields"))
}

/// [`reduce_pair`], also keeping both sides' raw `metadata` (found on the way:
/// no second pass over either document).
pub fn reduce_pair_managed<'a>(
    before: &'a str,
    after: &'a str,
    opts: &DiffOptions,
    defaults: &[(&str, &str)],
) -> serde_json::Result<ReducedPair<'a>> {
    reduce_documents(before, after, opts, defaults, true)
}

fn reduce_documents<'a>(
    before: &'a str,
    after: &'a str,
    opts: &DiffOptions,
    defaults: &[(&str, &str)],
    find_managed: bool,
) -> serde_json::Result<ReducedPair<'a>> {
    let (Some(bm), Some(am)) = (document_members(before)?, document_members(after)?) else {
        // Not objects: nothing to reduce, and no metadata.
        return Ok(ReducedPair {
            before: serde_json::from_str(before)?,
            after: serde_json::from_str(after)?,
            metadata_before: None,
            metadata_after: None,
        });
    };
    let (metadata_before, metadata_after) = if find_managed {
        (bm.get("metadata"), am.get("metadata"))
    } else {
        (None, None)
    };
    // From here on the members may also borrow the defaults below.
    let (mut bm, mut am): (Members<'_>, Members<'_>) = (bm, am);
    let owned: Vec<(String, Box<RawValue>)> = defaults
        .iter()
        .filter_map(|(k, v)| {
            let value = serde_json::to_string(v).ok()?;
            Some(((*k).to_string(), RawValue::from_string(value).ok()?))
        })
        .collect();
    for (k, v) in &owned {
        if bm.get(k).is_none() {
            bm.0.push((Cow::Borrowed(k.as_str()), v.as_ref()));
        }
        if am.get(k).is_none() {
            am.0.push((Cow::Borrowed(k.as_str()), v.as_ref()));
        }
    }
    let mut path = Vec::new();
    let (rb, ra) = reduce_members(&bm, &am, &mut path, opts)?;
    Ok(ReducedPair {
        before: Value::Object(rb),
        after: Value::Object(ra),
        metadata_before,
        metadata_after,
    })
}

/// The members of a whole document in one pass, checking that nothing follows
/// it; `None` when the document is valid JSON but not an object.
fn document_members(text: &str) -> serde_json::Result<Option<Members<'_>>> {
    if !text.trim_start().starts_with('{') {
        // Validate it all the same: the caller parses it whole.
        serde_json::from_str::<&RawValue>(text)?;
        return Ok(None);
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let m = Members::deserialize_from(&mut de)?;
    de.end()?;
    Ok(Some(m))
}

/// Parses raw managedFields for finding the owners of `paths` only: each
/// entry's `fieldsV1` keeps the nodes along those paths; every other node is
/// an empty stand-in (so a node with children still has children). What
/// [`field_manager`](super::field_manager) answers for these paths is
/// unchanged; the large parts of the field sets are skipped, not parsed.
pub fn parse_managed_for(raw: &RawValue, paths: &[&FieldPath]) -> Option<Value> {
    let entries: Vec<&RawValue> = serde_json::from_str(raw.get()).ok()?;
    let paths: Vec<&[PathSegment]> = paths.iter().map(|p| p.segments()).collect();
    let mut out = Vec::with_capacity(entries.len());
    for entry in entries {
        let Some(m) = members(entry) else {
            out.push(parse(entry).ok()?);
            continue;
        };
        let mut e = Map::new();
        for (k, v) in &m.0 {
            let value = if k == "fieldsV1" {
                prune_fields(v, &paths)?
            } else {
                parse(v).ok()?
            };
            e.insert(k.to_string(), value);
        }
        out.push(Value::Object(e));
    }
    Some(Value::Array(out))
}

/// A FieldsV1 node with only the children on `paths` (their remaining
/// segments) parsed.
fn prune_fields(raw: &RawValue, paths: &[&[PathSegment]]) -> Option<Value> {
    let Some(m) = members(raw) else {
        return parse(raw).ok();
    };
    let mut out = Map::new();
    for (k, v) in &m.0 {
        let rest: Vec<&[PathSegment]> = paths
            .iter()
            .filter_map(|p| {
                let (first, rest) = p.split_first()?;
                let on_path = match first {
                    PathSegment::Key(key) => k.strip_prefix("f:") == Some(key.as_str()),
                    // Which item is at an index depends on the object: keep them all.
                    PathSegment::Index(_) => {
                        k.starts_with("k:") || k.starts_with("v:") || k.starts_with("i:")
                    }
                };
                on_path.then_some(rest)
            })
            .collect();
        let value = if rest.is_empty() {
            Value::Object(Map::new())
        } else {
            prune_fields(v, &rest)?
        };
        out.insert(k.to_string(), value);
    }
    Some(Value::Object(out))
}

fn reduce_members<'a>(
    b: &Members<'a>,
    a: &Members<'a>,
    path: &mut Vec<SegRef<'a>>,
    opts: &DiffOptions,
) -> serde_json::Result<(Map<String, Value>, Map<String, Value>)> {
    let mut out_b = Map::new();
    let mut out_a = Map::new();
    for (k, va) in &a.0 {
        let key: &'a str = match k {
            Cow::Borrowed(s) => s,
            // An escaped key: compare and keep it whole, it is rare.
            Cow::Owned(_) => {
                match b.0.iter().find(|(kb, _)| kb == k) {
                    Some((_, vb)) if vb.get() == va.get() => {}
                    Some((_, vb)) => {
                        out_b.insert(k.to_string(), parse(vb)?);
                        out_a.insert(k.to_string(), parse(va)?);
                    }
                    None => {
                        out_a.insert(k.to_string(), parse(va)?);
                    }
                }
                continue;
            }
        };
        path.push(SegRef::Key(key));
        match b.get(key) {
            _ if is_noise_path(path, opts) => {}
            Some(vb) if vb.get() == va.get() => {}
            Some(vb) => {
                if let (Some(mb), Some(ma)) = (members(vb), members(va)) {
                    let (rb, ra) = reduce_members(&mb, &ma, path, opts)?;
                    out_b.insert(key.to_string(), Value::Object(rb));
                    out_a.insert(key.to_string(), Value::Object(ra));
                } else {
                    out_b.insert(key.to_string(), parse(vb)?);
                    out_a.insert(key.to_string(), parse(va)?);
                }
            }
            None => {
                out_a.insert(key.to_string(), parse(va)?);
            }
        }
        path.pop();
    }
    for (k, vb) in &b.0 {
        if a.0.iter().any(|(ka, _)| ka == k) {
            continue;
        }
        if let Cow::Borrowed(key) = k {
            path.push(SegRef::Key(key));
            let noise = is_noise_path(path, opts);
            path.pop();
            if noise {
                continue;
            }
        }
        out_b.insert(k.to_string(), parse(vb)?);
    }
    Ok((out_b, out_a))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::diff_objects;
    use serde_json::json;

    fn same_as_full(before: &Value, after: &Value) {
        for opts in [
            DiffOptions::default(),
            DiffOptions {
                include_status: true,
            },
        ] {
            let (rb, ra) =
                reduce_pair(&before.to_string(), &after.to_string(), &opts, &[]).unwrap();
            assert_eq!(
                diff_objects(&rb, &ra, &opts),
                diff_objects(before, after, &opts),
                "{before} -> {after}"
            );
        }
    }

    #[test]
    fn a_deployment_change_reduces_to_the_change() {
        let shop: Value = serde_json::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/shop/online-boutique.json"
        )))
        .unwrap();
        let before = shop["items"][0].clone();
        let mut after = before.clone();
        after["spec"]["replicas"] = json!(3);
        after["metadata"]["resourceVersion"] = json!("99");
        after["metadata"]["annotations"] = json!({"deployment.kubernetes.io/revision": "2"});
        after["spec"]["template"]["spec"]["containers"][0]["image"] = json!("x:2");
        let (rb, ra) = reduce_pair(
            &before.to_string(),
            &after.to_string(),
            &DiffOptions::default(),
            &[],
        )
        .unwrap();
        // Only the changed parts were parsed; the pod template came along whole
        // only down to the list that changed.
        assert!(ra["metadata"].get("resourceVersion").is_none());
        assert!(ra["spec"]["template"]["metadata"].is_null());
        assert_eq!(rb["spec"].get("replicas"), None);
        same_as_full(&before, &after);
    }

    #[test]
    fn missing_type_meta_is_filled() {
        let before = r#"{"metadata":{"name":"a"},"data":{"x":"1"}}"#;
        let after =
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"x":"2"}}"#;
        let (rb, ra) = reduce_pair(
            before,
            after,
            &DiffOptions::default(),
            &[("apiVersion", "v1"), ("kind", "ConfigMap")],
        )
        .unwrap();
        let changes = diff_objects(&rb, &ra, &DiffOptions::default());
        assert_eq!(changes.len(), 1);
        assert_eq!(changes[0].path.to_string(), "data.x");
    }

    #[test]
    fn edge_cases_match_the_full_differ() {
        let cases = [
            (json!({"a": 1}), json!({"a": 1})),
            (json!({"a": {"b": 1}}), json!({"a": 2})),
            (json!({"a": [1, 2]}), json!({"a": [2, 1]})),
            (
                json!({"metadata": {"annotations": {"deployment.kubernetes.io/revision": "1"}}}),
                json!({"metadata": {"annotations": {"deployment.kubernetes.io/revision": "2"}}}),
            ),
            (
                json!({"metadata": {}}),
                json!({"metadata": {"annotations": {"deployment.kubernetes.io/revision": "2", "a": "b"}}}),
            ),
            (
                json!({"status": {"x": 1}, "data": {"status": 1}}),
                json!({"status": {"x": 2}, "data": {"status": 2}}),
            ),
            (
                json!({"a\"b": 1, "c": {"d\\e": 1}}),
                json!({"a\"b": 2, "c": {"d\\e": 2}}),
            ),
            (json!({"x": null}), json!({})),
        ];
        for (b, a) in cases {
            same_as_full(&b, &a);
        }
    }

    #[test]
    fn managed_fields_are_found() {
        // Found on the way through both documents, left raw.
        let managed = |doc: &str| {
            let r = reduce_pair_managed(doc, doc, &DiffOptions::default(), &[]).unwrap();
            r.metadata_after
                .and_then(managed_fields)
                .map(|raw| parse(raw).unwrap())
        };
        let doc = r#"{"metadata":{"name":"a","managedFields":[{"manager":"kubectl"}]}}"#;
        assert_eq!(managed(doc), Some(json!([{"manager": "kubectl"}])));
        assert_eq!(managed(r#"{"metadata":{}}"#), None);
    }
}
