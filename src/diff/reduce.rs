//! Parsing two versions of an object only where they differ.
//!
//! Successive versions of a Kubernetes object share almost all of their bytes.
//! [`reduce_pair`] walks both documents as raw JSON, drops every member whose
//! bytes are identical on both sides (and every noise path), and parses only
//! what is left. [`diff_objects`](super::diff_objects) on the two reduced values
//! reports exactly what it reports on the full ones: identical members produce
//! no change, and members present on one side only are kept whole.
//!
//! Two lists are reduced item by item when they pair up by index (see
//! [`lists`](super::lists)): an item identical on both sides is kept as only the
//! members pairing reads, and two objects that differ are reduced like any
//! other, keeping those members and every scalar member too. So the reduced
//! lists pair up as the whole ones do, and an item that changed can still be
//! found in managedFields by its merge keys. Lists that pair up by identity
//! (an item inserted, removed or moved) are kept whole.

use super::DiffOptions;
use super::noise::is_noise_path;
use super::path::SegRef;
use super::tape::{Raw, Tape};
use krply_apimachinery::lists::{self, Pairing};
use serde::de::Visitor;
use serde_json::{Map, Value};
use std::borrow::Cow;

/// The members of a JSON object in document order, each value read as `V`.
struct Object<'a, V>(Vec<(Cow<'a, str>, V)>);

/// An object's members with their values left raw.
type Members<'a> = Object<'a, Raw<'a>>;

/// A member name, borrowed from the document unless it had escapes.
pub(super) struct Key<'a>(pub(super) Cow<'a, str>);

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

/// A list's items left raw; `None` for anything else.
fn items<'t>(raw: &Raw<'t>) -> Option<Vec<Raw<'t>>> {
    raw.items()
}

fn members<'t>(raw: &Raw<'t>) -> Option<Members<'t>> {
    raw.members().map(Object)
}

impl<V> Object<'_, V> {
    /// The member named `key`; of several, the last (as a parser keeps it).
    fn get(&self, key: &str) -> Option<&V> {
        self.0.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Whether member `i` is hidden by a later one of the same name.
    fn shadowed(&self, i: usize) -> bool {
        self.0[i + 1..].iter().any(|(k, _)| *k == self.0[i].0)
    }
}

fn parse(raw: &Raw<'_>) -> serde_json::Result<Value> {
    serde_json::from_str(raw.get())
}

/// A list whose items were left raw, parsed.
fn parse_items(items: &[Raw<'_>]) -> serde_json::Result<Value> {
    items
        .iter()
        .map(parse)
        .collect::<Result<_, _>>()
        .map(Value::Array)
}

/// Both versions, reduced to what differs. `defaults` stand in for top-level
/// members one side lacks (`apiVersion` and `kind`, which list items omit).
pub fn reduce_pair(
    before: &str,
    after: &str,
    opts: &DiffOptions,
    defaults: &[(&str, &str)],
) -> serde_json::Result<(Value, Value)> {
    let tb = tape(before)?;
    let ta = tape_after(after, &tb)?;
    reduce_tapes(&tb, &ta, opts, defaults).map(|r| (r.before, r.after))
}

/// Two versions reduced to what differs, with each side's
/// `metadata.managedFields` left raw on its tape (read only when a changed
/// field needs its owner: most changes of a window are status only, which a
/// default diff leaves out).
pub(super) struct ReducedPair<'t> {
    pub before: Value,
    pub after: Value,
    pub managed_before: Option<Raw<'t>>,
    pub managed_after: Option<Raw<'t>>,
}

/// [`reduce_pair`] on both versions' tapes ([`tape`]), also finding both
/// sides' managedFields on the way (no second pass over either document).
pub(super) fn reduce_tapes<'t>(
    tb: &'t Tape<'t>,
    ta: &'t Tape<'t>,
    opts: &DiffOptions,
    defaults: &[(&str, &str)],
) -> serde_json::Result<ReducedPair<'t>> {
    let (Some(mut bm), Some(mut am)) = (document(tb), document(ta)) else {
        // Not objects: nothing to reduce, and no metadata.
        return Ok(ReducedPair {
            before: serde_json::from_str(tb.root().get())?,
            after: serde_json::from_str(ta.root().get())?,
            managed_before: None,
            managed_after: None,
        });
    };
    let managed = |d: &Document<'t>| match d.get("metadata") {
        Some(Top::Object(m)) => m.get("managedFields").copied(),
        _ => None,
    };
    let (managed_before, managed_after) = (managed(&bm), managed(&am));
    for (k, v) in defaults {
        for d in [&mut bm, &mut am] {
            if d.get(k).is_none() {
                d.0.push((Cow::Owned((*k).to_string()), Top::Default(Value::from(*v))));
            }
        }
    }
    let mut path = Vec::new();
    let (rb, ra) = reduce_top(&bm, &am, &mut path, opts)?;
    Ok(ReducedPair {
        before: Value::Object(rb),
        after: Value::Object(ra),
        managed_before,
        managed_after,
    })
}

/// A whole document's members: a member that is an object comes with its own
/// members (values left raw), one that is a list with its items left raw, and
/// any other with its value. The document was read once, into a [`Tape`]:
/// descending into what differs reads nothing again.
type Document<'a> = Object<'a, Top<'a>>;

/// A member of a [`Document`].
enum Top<'a> {
    Object(Members<'a>),
    Array(Vec<Raw<'a>>),
    /// Any other value, left raw.
    Scalar(Raw<'a>),
    /// A value the document lacks, given for it (`defaults`).
    Default(Value),
}

impl Top<'_> {
    /// Whether both are surely equal without reading further: raw text or
    /// values that are the same. `false` says nothing (compare the values).
    fn surely_equal(&self, other: &Top<'_>) -> bool {
        match (self, other) {
            (Top::Scalar(a), Top::Scalar(b)) => a.get() == b.get(),
            (Top::Default(a), Top::Default(b)) => a == b,
            // A list item's `kind` or `apiVersion`, given, against the one an
            // event's body has: both strings, equal when their text is.
            (Top::Scalar(raw), Top::Default(given)) | (Top::Default(given), Top::Scalar(raw)) => {
                given
                    .as_str()
                    .is_some_and(|given| raw.as_str().as_deref() == Some(given))
            }
            (Top::Array(a), Top::Array(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.get() == y.get())
            }
            _ => false,
        }
    }

    fn to_value(&self) -> serde_json::Result<Value> {
        Ok(match self {
            Top::Scalar(raw) => parse(raw)?,
            Top::Default(v) => v.clone(),
            Top::Array(items) => parse_items(items)?,
            Top::Object(m) => Value::Object(members_value(m)?),
        })
    }
}

/// An object's members parsed, in document order.
fn members_value(m: &Members<'_>) -> serde_json::Result<Map<String, Value>> {
    let mut out = Map::new();
    for (k, v) in &m.0 {
        out.insert(k.to_string(), parse(v)?);
    }
    Ok(out)
}

/// A document's structure, or serde_json's own error for a text that is not
/// JSON (the tape refuses what serde_json refuses).
pub(super) fn tape(text: &str) -> serde_json::Result<Tape<'_>> {
    Tape::new(text).map_err(|e| json_error(text, e))
}

/// [`tape`] for the version after `before`'s, read with its tape as a guide
/// ([`Tape::new_like`]): what the two versions share is not read again.
pub(super) fn tape_after<'a>(text: &'a str, before: &Tape<'_>) -> serde_json::Result<Tape<'a>> {
    Tape::new_like(text, before).map_err(|e| json_error(text, e))
}

/// serde_json's own error for a text the tape refused.
fn json_error(text: &str, e: super::tape::TapeError) -> serde_json::Error {
    serde_json::from_str::<serde::de::IgnoredAny>(text)
        .err()
        .unwrap_or_else(|| serde::de::Error::custom(e))
}

/// A whole document read as a [`Document`]; `None` when it is not an
/// object.
fn document<'t>(tape: &'t Tape<'_>) -> Option<Document<'t>> {
    let top = tape.root().members()?;
    let top = top
        .into_iter()
        .map(|(k, raw)| {
            let top = if let Some(m) = members(&raw) {
                Top::Object(m)
            } else if let Some(items) = raw.items() {
                Top::Array(items)
            } else {
                Top::Scalar(raw)
            };
            (k, top)
        })
        .collect();
    Some(Object(top))
}

/// [`reduce_members`] for the members of whole documents.
fn reduce_top<'a>(
    b: &Document<'a>,
    a: &Document<'a>,
    path: &mut Vec<SegRef<'a>>,
    opts: &DiffOptions,
) -> serde_json::Result<(Map<String, Value>, Map<String, Value>)> {
    let mut out_b = Map::new();
    let mut out_a = Map::new();
    for (i, (k, va)) in a.0.iter().enumerate() {
        if a.shadowed(i) {
            continue;
        }
        if is_noise_member(path, k, opts) {
            continue;
        }
        match (b.get(k), va) {
            (Some(Top::Object(mb)), Top::Object(ma)) => {
                let Cow::Borrowed(key) = k else {
                    let (vb, va) = (members_value(mb)?, members_value(ma)?);
                    if vb != va {
                        out_b.insert(k.to_string(), Value::Object(vb));
                        out_a.insert(k.to_string(), Value::Object(va));
                    }
                    continue;
                };
                path.push(SegRef::Key(key));
                let (rb, ra) = reduce_members(mb, ma, path, opts)?;
                path.pop();
                if !(rb.is_empty() && ra.is_empty()) {
                    out_b.insert(k.to_string(), Value::Object(rb));
                    out_a.insert(k.to_string(), Value::Object(ra));
                }
            }
            (Some(vb), va) if vb.surely_equal(va) => {}
            (Some(Top::Array(ib)), Top::Array(ia)) => {
                let (rb, ra) = match k {
                    Cow::Borrowed(key) => {
                        path.push(SegRef::Key(key));
                        let reduced = reduce_lists(ib, ia, path, opts);
                        path.pop();
                        reduced?
                    }
                    // An escaped key, which is rare: the lists whole.
                    Cow::Owned(_) => (parse_items(ib)?, parse_items(ia)?),
                };
                out_b.insert(k.to_string(), rb);
                out_a.insert(k.to_string(), ra);
            }
            (Some(vb), va) => {
                out_b.insert(k.to_string(), vb.to_value()?);
                out_a.insert(k.to_string(), va.to_value()?);
            }
            (None, va) => {
                out_a.insert(k.to_string(), va.to_value()?);
            }
        }
    }
    insert_removed(b, a, path, opts, &mut out_b, Top::to_value)?;
    Ok((out_b, out_a))
}

/// Whether member `k` is at a noise path (`path` leads to its object); a key
/// with escapes (or a default) never is.
#[expect(
    clippy::ptr_arg,
    reason = "whether the key is borrowed says whether it had escapes"
)]
fn is_noise_member<'a>(path: &mut Vec<SegRef<'a>>, k: &Cow<'a, str>, opts: &DiffOptions) -> bool {
    let Cow::Borrowed(key) = k else {
        return false;
    };
    path.push(SegRef::Key(key));
    let noise = is_noise_path(path, opts);
    path.pop();
    noise
}

/// Puts into `out_b` the members of `b` that `a` lacks, each as `value` makes
/// it, noise left out.
fn insert_removed<'a, V, W>(
    b: &Object<'a, V>,
    a: &Object<'a, W>,
    path: &mut Vec<SegRef<'a>>,
    opts: &DiffOptions,
    out_b: &mut Map<String, Value>,
    value: impl Fn(&V) -> serde_json::Result<Value>,
) -> serde_json::Result<()> {
    for (k, vb) in &b.0 {
        if a.get(k).is_none() && !is_noise_member(path, k, opts) {
            out_b.insert(k.to_string(), value(vb)?);
        }
    }
    Ok(())
}

fn reduce_members<'a>(
    b: &Members<'a>,
    a: &Members<'a>,
    path: &mut Vec<SegRef<'a>>,
    opts: &DiffOptions,
) -> serde_json::Result<(Map<String, Value>, Map<String, Value>)> {
    let mut out_b = Map::new();
    let mut out_a = Map::new();
    for (i, (k, va)) in a.0.iter().enumerate() {
        if a.shadowed(i) {
            continue;
        }
        let key: &'a str = match k {
            Cow::Borrowed(s) => s,
            // An escaped key: compare and keep it whole, it is rare.
            Cow::Owned(_) => {
                match b.0.iter().rev().find(|(kb, _)| kb == k) {
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
                    // Nothing but noise differed below (a Deployment's
                    // revision annotation): nothing is left to compare, as
                    // for the document's own members.
                    if !(rb.is_empty() && ra.is_empty()) {
                        out_b.insert(key.to_string(), Value::Object(rb));
                        out_a.insert(key.to_string(), Value::Object(ra));
                    }
                } else if let (Some(ib), Some(ia)) = (items(vb), items(va)) {
                    let (rb, ra) = reduce_lists(&ib, &ia, path, opts)?;
                    out_b.insert(key.to_string(), rb);
                    out_a.insert(key.to_string(), ra);
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
    insert_removed(b, a, path, opts, &mut out_b, |v| parse(v))?;
    Ok((out_b, out_a))
}

/// Two lists (found at `path`) reduced to what differs, as the module
/// documentation describes; kept whole when their items pair up by identity.
fn reduce_lists<'a>(
    b: &[Raw<'a>],
    a: &[Raw<'a>],
    path: &mut Vec<SegRef<'a>>,
    opts: &DiffOptions,
) -> serde_json::Result<(Value, Value)> {
    let (mb, ma) = (item_members(b), item_members(a));
    // What pairing reads of each item: its identity members, or (of an item
    // that is not an object) nothing, as of null.
    let stand_in = |m: &Option<Members<'_>>| -> serde_json::Result<Value> {
        let Some(m) = m else { return Ok(Value::Null) };
        let mut out = Map::new();
        for field in lists::identity_members() {
            if let Some(v) = m.get(field) {
                out.insert(field.to_string(), parse(v)?);
            }
        }
        Ok(Value::Object(out))
    };
    let sb: Vec<Value> = mb.iter().map(stand_in).collect::<Result<_, _>>()?;
    let sa: Vec<Value> = ma.iter().map(stand_in).collect::<Result<_, _>>()?;
    if matches!(lists::pair(&sb, &sa), Pairing::ByIdentity(_)) {
        return Ok((parse_items(b)?, parse_items(a)?));
    }
    let (mut out_b, mut out_a) = (Vec::with_capacity(b.len()), Vec::with_capacity(a.len()));
    for (i, (sb, sa)) in sb.into_iter().zip(sa).enumerate() {
        if b[i].get() == a[i].get() {
            out_b.push(sb);
            out_a.push(sa);
            continue;
        }
        let (Some(ib), Some(ia)) = (&mb[i], &ma[i]) else {
            out_b.push(parse(&b[i])?);
            out_a.push(parse(&a[i])?);
            continue;
        };
        path.push(SegRef::Index(i));
        let (mut rb, mut ra) = reduce_members(ib, ia, path, opts)?;
        path.pop();
        // The identity members, and every member that is a scalar, where they
        // were the same on both sides: owners find a list item in
        // managedFields by its merge keys (`k:{...}`), which are scalar
        // members that need not be identity members (docs/architecture.md).
        for (side, stand_in, item) in [(&mut rb, sb, ib), (&mut ra, sa, ia)] {
            if let Value::Object(identity) = stand_in {
                for (field, value) in identity {
                    side.entry(field).or_insert(value);
                }
            }
            for (k, _) in &item.0 {
                match item.get(k) {
                    Some(v)
                        if !v.get().starts_with(['{', '[']) && !side.contains_key(k.as_ref()) =>
                    {
                        side.insert(k.to_string(), parse(v)?);
                    }
                    _ => {}
                }
            }
        }
        out_b.push(Value::Object(rb));
        out_a.push(Value::Object(ra));
    }
    // Items past the end of the shorter list are added or removed whole.
    let n = b.len().min(a.len());
    for (raw, out) in [(&b[n..], &mut out_b), (&a[n..], &mut out_a)] {
        for item in raw {
            out.push(parse(item)?);
        }
    }
    Ok((Value::Array(out_b), Value::Array(out_a)))
}

/// The members of each item that is an object, left raw.
fn item_members<'a>(items: &[Raw<'a>]) -> Vec<Option<Members<'a>>> {
    items.iter().map(members).collect()
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
        let mut before = shop["items"][0].clone();
        before["metadata"]["annotations"] = json!({"deployment.kubernetes.io/revision": "1"});
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
        // Only noise changed in metadata (the resourceVersion, the revision
        // annotation): nothing of it is left, not even empty maps to walk.
        assert_eq!((rb.get("metadata"), ra.get("metadata")), (None, None));
        assert!(ra["spec"]["template"]["metadata"].is_null());
        assert_eq!(rb["spec"].get("replicas"), None);
        same_as_full(&before, &after);
    }

    #[test]
    fn lists_that_pair_by_index_keep_only_what_differs() {
        let pod = |image: &str| {
            json!({"spec": {"containers": [
                {"name": "app", "image": "app:1", "env": [{"name": "A", "value": "1"}]},
                {"name": "proxy", "image": image, "ports": [{"containerPort": 80}]},
            ]}})
        };
        let (before, after) = (pod("proxy:1"), pod("proxy:2"));
        let opts = DiffOptions::default();
        let (rb, ra) = reduce_pair(&before.to_string(), &after.to_string(), &opts, &[]).unwrap();
        // The same container stands in by its name; the other keeps its name
        // and what changed.
        assert_eq!(
            ra["spec"]["containers"],
            json!([{"name": "app"}, {"image": "proxy:2", "name": "proxy"}])
        );
        assert_eq!(rb["spec"]["containers"][1]["image"], json!("proxy:1"));
        same_as_full(&before, &after);

        // Moved items pair by identity: both lists are kept whole.
        let mut moved = after.clone();
        moved["spec"]["containers"]
            .as_array_mut()
            .unwrap()
            .reverse();
        let (_, ra) = reduce_pair(&before.to_string(), &moved.to_string(), &opts, &[]).unwrap();
        assert_eq!(ra["spec"]["containers"], moved["spec"]["containers"]);
        same_as_full(&before, &moved);
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
        // What is given and what a side has are the same when their text
        // is, on either side, escaped or not: nothing of them is kept.
        let defaults = [("apiVersion", "apps/v1"), ("kind", "Deployment")];
        let bare = r#"{"metadata":{"name":"a"},"spec":{"replicas":1}}"#;
        let typed = r#"{"apiVersion":"apps\/v1","kind":"Deployment","metadata":{"name":"a"},"spec":{"replicas":2}}"#;
        for (before, after) in [(bare, typed), (typed, bare)] {
            let (rb, ra) = reduce_pair(before, after, &DiffOptions::default(), &defaults).unwrap();
            assert_eq!(
                rb,
                json!({"spec": {"replicas": if before == bare { 1 } else { 2 }}})
            );
            assert_eq!(
                ra,
                json!({"spec": {"replicas": if after == bare { 1 } else { 2 }}})
            );
        }
        // A side whose kind is not the one given keeps both, as a change.
        let other = typed.replace(r#""kind":"Deployment""#, r#""kind":"StatefulSet""#);
        let (rb, ra) = reduce_pair(bare, &other, &DiffOptions::default(), &defaults).unwrap();
        let changes = diff_objects(&rb, &ra, &DiffOptions::default());
        let paths: Vec<String> = changes.iter().map(|c| c.path.to_string()).collect();
        assert_eq!(paths, ["kind", "spec.replicas"]);
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
            (
                json!({"l": [1, {"a": 1}, [2]]}),
                json!({"l": [1, {"a": 2}, [3], 4]}),
            ),
            (json!({"l": [{"a": 1}, 2]}), json!({"l": [2, {"a": 1}]})),
            (
                json!({"l": [{"name": "x", "v": 1}, {"name": "y"}]}),
                json!({"l": [{"name": "x", "v": 2}]}),
            ),
            (
                json!({"l": [{"type": "A", "s": 1}, {"type": "B"}]}),
                json!({"l": [{"type": "A", "s": 2}, {"type": "B"}, {"type": "C"}]}),
            ),
            (json!([{"name": "x"}]), json!([{"name": "x", "v": 1}])),
            // Without its same name, the first item would pair by type.
            (
                json!({"l": [{"name": "x", "type": 1}, {"name": "y", "type": 3}]}),
                json!({"l": [{"name": "x", "type": 2}, {"name": "y", "type": 3}]}),
            ),
        ];
        for (b, a) in cases {
            same_as_full(&b, &a);
        }
    }

    #[test]
    fn texts_that_differ_only_in_spelling_are_no_change() {
        // Numbers, escapes, spacing and member order as another writer may
        // spell them; and one side whose object member is a list on the other.
        let cases = [
            (
                r#"{"a": 1.0, "b": [1, {"x": "\u0041"}], "c": {"d": 1, "e": [ ]}, "f": "x"}"#,
                r#"{"c":{"e":[],"d":1e0},"b":[1,{"x":"A"}],"f":"x","a":1}"#,
            ),
            (r#"{"a": {"b": 1}, "z": 1}"#, r#"{"a": [{"b": 1}], "z": 1}"#),
            (r#"{"a": "x", "a": "y"}"#, r#"{"a": "y"}"#),
        ];
        for (b, a) in cases {
            for opts in [
                DiffOptions::default(),
                DiffOptions {
                    include_status: true,
                },
            ] {
                let (rb, ra) = reduce_pair(b, a, &opts, &[]).unwrap();
                let full = |t: &str| serde_json::from_str::<Value>(t).unwrap();
                assert_eq!(
                    diff_objects(&rb, &ra, &opts),
                    diff_objects(&full(b), &full(a), &opts),
                    "{b} -> {a}"
                );
            }
        }
    }

    #[test]
    fn managed_fields_are_found() {
        // Found on the way through both documents, left raw.
        let managed = |doc: &str| {
            let t = tape(doc).unwrap();
            let r = reduce_tapes(&t, &t, &DiffOptions::default(), &[]).unwrap();
            r.managed_after
                .map(|raw| serde_json::from_str::<Value>(raw.get()).unwrap())
        };
        let doc = r#"{"metadata":{"name":"a","managedFields":[{"manager":"kubectl"}]}}"#;
        assert_eq!(managed(doc), Some(json!([{"manager": "kubectl"}])));
        assert_eq!(managed(r#"{"metadata":{}}"#), None);
    }
}
