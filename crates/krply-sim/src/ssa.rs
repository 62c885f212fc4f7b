//! Server-side apply, after Kubernetes' structured-merge-diff: the merge of
//! an applied configuration into the live object, the fields the applier
//! owns afterwards, the removal of fields it stopped applying, and conflicts
//! with other field managers.
//!
//! The real server reads the type of every field from OpenAPI schemas; this
//! one knows it by field name ([`super::keyed_lists`]): lists of named items
//! merge item by item on their keys (a `protocol` key defaults to `TCP`),
//! `finalizers` merge as a set, other lists and label selectors are atomic,
//! string maps (`labels`, `data`, ...) merge key by key, and every other
//! object is a struct whose fields are "named fields". Custom resources own
//! their lists whole.
//!
//! One apply, as `Updater.Apply` does it:
//! 1. merge the configuration into the live object (the configuration wins;
//!    `null` removes a field);
//! 2. the applier's field set becomes exactly the fields of the configuration;
//! 3. prune: what the applier applied last time, did not apply now and no
//!    manager owns any more is removed;
//! 4. compare the live object with the result: a field another manager owns
//!    that is modified or added is a conflict (409, unless forced: then it
//!    changes hands); a removed field leaves every other manager's set.

use std::collections::{BTreeSet, HashMap, VecDeque};

use serde_json::{Map, Value, json};

use super::error::ApiStatus;
use super::keyed_lists;
use super::managed::{FieldSet, ManagedEntry, ManagedFields, TRACKED_METADATA};

/// How the items of a list are merged and owned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ListType {
    /// Items identified by these key fields (`k:{...}`).
    Keyed(&'static [&'static str]),
    /// Scalars identified by their value (`v:...`).
    Set,
    /// Replaced and owned whole.
    Atomic,
}

fn list_type(field: &str, sample: Option<&Value>, keyed: bool) -> ListType {
    if !keyed {
        return ListType::Atomic;
    }
    if keyed_lists::is_set_list(field) {
        return ListType::Set;
    }
    match sample.and_then(|s| keyed_lists::list_keys(field, s)) {
        Some(keys) => ListType::Keyed(keys),
        None => ListType::Atomic,
    }
}

/// How the fields of an object are merged and owned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MapType {
    /// Named fields (a Go struct).
    Struct,
    /// Free keys (a Go map, such as `labels`).
    Granular,
    /// Replaced and owned whole (a label selector).
    Atomic,
}

fn map_type(field: &str, v: &Value, keyed: bool) -> MapType {
    if keyed && keyed_lists::is_atomic(field, v) {
        MapType::Atomic
    } else if keyed_lists::is_string_map(field, v) {
        MapType::Granular
    } else {
        MapType::Struct
    }
}

/// The value a key field takes when an item omits it (the OpenAPI default).
fn key_default(field: &str, key: &str) -> Option<&'static str> {
    (field == "ports" && key == "protocol").then_some("TCP")
}

/// The `k:{...}` path element of one item of a keyed list.
fn key_of(field: &str, keys: &[&str], item: &Value) -> Result<String, String> {
    let Some(obj) = item.as_object() else {
        return Err(format!("expected an object, found {item}"));
    };
    let mut m = Map::new();
    for k in keys {
        match obj.get(*k) {
            Some(v) if !v.is_null() => {
                m.insert((*k).to_string(), v.clone());
            }
            _ => match key_default(field, k) {
                Some(d) => {
                    m.insert((*k).to_string(), Value::String(d.to_string()));
                }
                None => {
                    return Err(format!(
                        "associative list with keys has an element that omits key field \"{k}\" (and doesn't have default value)"
                    ));
                }
            },
        }
    }
    Ok(format!("k:{}", Value::Object(m)))
}

/// The path element of a set item.
fn value_key(item: &Value) -> String {
    format!("v:{item}")
}

/// The path element of every item (an applied configuration: a missing key
/// or a duplicate is an error).
fn index_config<'a>(
    field: &str,
    keys: &[&str],
    items: &'a [Value],
    path: &[String],
) -> Result<Vec<(String, &'a Value)>, String> {
    let mut out: Vec<(String, &Value)> = Vec::with_capacity(items.len());
    let mut seen = BTreeSet::new();
    for (i, item) in items.iter().enumerate() {
        let k = key_of(field, keys, item)
            .map_err(|e| format!("{}: element {i}: {e}", path_string(path)))?;
        if !seen.insert(k.clone()) {
            return Err(format!(
                "{}: duplicate entries for key {}",
                path_string(path),
                element_string(&k)
            ));
        }
        out.push((k, item));
    }
    Ok(out)
}

/// The path element of every item of a live list; `None` when an item has
/// no key (the list is then replaced whole).
fn index_live<'a>(
    field: &str,
    keys: &[&str],
    items: &'a [Value],
) -> Option<Vec<(String, &'a Value)>> {
    items
        .iter()
        .map(|item| key_of(field, keys, item).ok().map(|k| (k, item)))
        .collect()
}

/// A path as the server prints it: `.spec.containers[name="app"].image`.
pub(crate) fn path_string(path: &[String]) -> String {
    path.iter().map(|e| element_string(e)).collect()
}

/// One path element as the server prints it (`fieldpath.PathElement.String`).
pub(crate) fn element_string(e: &str) -> String {
    if let Some(f) = e.strip_prefix("f:") {
        return format!(".{f}");
    }
    if let Some(k) = e.strip_prefix("k:") {
        if let Ok(Value::Object(m)) = serde_json::from_str::<Value>(k) {
            let mut parts: Vec<String> = m
                .iter()
                .map(|(n, v)| format!("{n}={}", scalar_string(v)))
                .collect();
            parts.sort();
            return format!("[{}]", parts.join(","));
        }
        return format!("[{k}]");
    }
    if let Some(v) = e.strip_prefix("v:") {
        let shown = serde_json::from_str::<Value>(v)
            .map(|v| scalar_string(&v))
            .unwrap_or_else(|_| v.to_string());
        return format!("[={shown}]");
    }
    if let Some(i) = e.strip_prefix("i:") {
        return format!("[{i}]");
    }
    e.to_string()
}

fn scalar_string(v: &Value) -> String {
    match v {
        Value::String(s) => Value::String(s.clone()).to_string(),
        other => other.to_string(),
    }
}

fn insert_nonempty(parent: &mut FieldSet, key: String, child: FieldSet) {
    if !child.is_empty() {
        parent.children.insert(key, child);
    }
}

/// The fields an applied configuration sets (`ToFieldSet`): every leaf,
/// every item of a keyed or set list, empty objects and `null`s; of
/// metadata only labels, annotations, finalizers and ownerReferences; not
/// `status` when it is a subresource.
pub(crate) fn applied_set(
    config: &Value,
    keyed: bool,
    skip_status: bool,
) -> Result<FieldSet, String> {
    let mut root = FieldSet::default();
    let Some(m) = config.as_object() else {
        return Ok(root);
    };
    let mut path = Vec::new();
    for (k, v) in m {
        let key = format!("f:{k}");
        let set = match k.as_str() {
            "apiVersion" | "kind" => continue,
            "status" if skip_status => continue,
            "metadata" => {
                let Some(meta) = v.as_object() else {
                    continue;
                };
                path.push(key.clone());
                let mut node = FieldSet::default();
                for f in TRACKED_METADATA {
                    if let Some(fv) = meta.get(f) {
                        let fkey = format!("f:{f}");
                        path.push(fkey.clone());
                        let s = value_set(f, fv, keyed, &mut path)?;
                        path.pop();
                        insert_nonempty(&mut node, fkey, s);
                    }
                }
                path.pop();
                node
            }
            _ => {
                path.push(key.clone());
                let s = value_set(k, v, keyed, &mut path)?;
                path.pop();
                s
            }
        };
        insert_nonempty(&mut root, key, set);
    }
    Ok(root)
}

/// The set rooted at the value of map key `field`.
fn value_set(
    field: &str,
    v: &Value,
    keyed: bool,
    path: &mut Vec<String>,
) -> Result<FieldSet, String> {
    match v {
        Value::Object(m) if m.is_empty() => Ok(FieldSet::leaf()),
        Value::Object(m) => match map_type(field, v, keyed) {
            MapType::Atomic => Ok(FieldSet::leaf()),
            t => object_set(m, t == MapType::Granular, keyed, path),
        },
        Value::Array(items) => match list_type(field, items.first(), keyed) {
            ListType::Atomic => Ok(FieldSet::leaf()),
            ListType::Set => {
                let mut s = FieldSet::default();
                for item in items {
                    s.children.insert(value_key(item), FieldSet::leaf());
                }
                Ok(s)
            }
            ListType::Keyed(keys) => {
                let mut s = FieldSet::default();
                for (k, item) in index_config(field, keys, items, path)? {
                    path.push(k.clone());
                    let mut node = match item.as_object() {
                        Some(m) => object_set(m, false, keyed, path)?,
                        None => FieldSet::default(),
                    };
                    path.pop();
                    node.member = true;
                    s.children.insert(k, node);
                }
                Ok(s)
            }
        },
        _ => Ok(FieldSet::leaf()),
    }
}

fn object_set(
    m: &Map<String, Value>,
    granular: bool,
    keyed: bool,
    path: &mut Vec<String>,
) -> Result<FieldSet, String> {
    let mut s = FieldSet::default();
    for (k, c) in m {
        let key = format!("f:{k}");
        path.push(key.clone());
        let mut cs = value_set(k, c, keyed, path)?;
        path.pop();
        // A map entry is itself a member; a struct field only as a leaf.
        if granular {
            cs.member = true;
        }
        insert_nonempty(&mut s, key, cs);
    }
    Ok(s)
}

/// The live object with the configuration merged in (`Merge`): objects
/// merge field by field, keyed and set lists item by item, everything else
/// is replaced; a `null` in the configuration removes the field.
pub(crate) fn merge(live: &Value, config: &Value, keyed: bool) -> Result<Value, String> {
    let mut path = Vec::new();
    Ok(merge_value("", Some(live), config, keyed, &mut path)?
        .unwrap_or_else(|| Value::Object(Map::new())))
}

fn merge_value(
    field: &str,
    lhs: Option<&Value>,
    rhs: &Value,
    keyed: bool,
    path: &mut Vec<String>,
) -> Result<Option<Value>, String> {
    match rhs {
        Value::Null => Ok(None),
        Value::Object(rm) => {
            if map_type(field, rhs, keyed) == MapType::Atomic {
                return Ok(Some(rhs.clone()));
            }
            let mut out = match lhs {
                Some(Value::Object(lm)) => lm.clone(),
                _ => Map::new(),
            };
            for (k, rv) in rm {
                path.push(format!("f:{k}"));
                let merged = merge_value(k, out.get(k), rv, keyed, path)?;
                path.pop();
                match merged {
                    Some(v) => {
                        out.insert(k.clone(), v);
                    }
                    None => {
                        out.shift_remove(k);
                    }
                }
            }
            Ok(Some(Value::Object(out)))
        }
        Value::Array(ritems) => {
            let litems: &[Value] = match lhs {
                Some(Value::Array(l)) => l,
                _ => &[],
            };
            let lt = list_type(field, ritems.first().or(litems.first()), keyed);
            let (rk, lk) = match lt {
                ListType::Atomic => return Ok(Some(rhs.clone())),
                ListType::Set => (
                    ritems.iter().map(|i| (value_key(i), i)).collect(),
                    litems.iter().map(|i| (value_key(i), i)).collect(),
                ),
                ListType::Keyed(keys) => (
                    index_config(field, keys, ritems, path)?,
                    index_live(field, keys, litems).unwrap_or_default(),
                ),
            };
            let mut out = Vec::with_capacity(rk.len().max(lk.len()));
            for (k, l, r) in merged_order(&lk, &rk) {
                match r {
                    // Set items are values, taken as they are.
                    Some(r) if lt == ListType::Set => out.push(r.clone()),
                    Some(r) => {
                        path.push(k);
                        let merged = merge_value("", l, r, keyed, path)?;
                        path.pop();
                        out.extend(merged);
                    }
                    None => out.extend(l.cloned()),
                }
            }
            Ok(Some(Value::Array(out)))
        }
        _ => Ok(Some(rhs.clone())),
    }
}

type Item<'a> = (String, Option<&'a Value>, Option<&'a Value>);

/// The items of a merged list in structured-merge-diff's order: the live
/// order, with the configuration's items placed by the order of the items
/// both share. Each with its live and its configured version.
fn merged_order<'a>(lhs: &[(String, &'a Value)], rhs: &[(String, &'a Value)]) -> Vec<Item<'a>> {
    let mut observed_lhs: HashMap<&str, &Value> = HashMap::new();
    for (k, v) in lhs {
        observed_lhs.entry(k.as_str()).or_insert(*v);
    }
    let observed_rhs: HashMap<&str, &Value> = rhs.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    let mut shared: VecDeque<&str> = rhs
        .iter()
        .map(|(k, _)| k.as_str())
        .filter(|k| observed_lhs.contains_key(k))
        .collect();
    let mut next_shared = shared.pop_front();
    let mut merged_rhs: BTreeSet<&str> = BTreeSet::new();
    let mut out = Vec::with_capacity(lhs.len().max(rhs.len()));
    let (mut li, mut ri) = (0, 0);
    // Every round consumes at least one item of either list.
    for _ in 0..=(lhs.len() + rhs.len()) {
        if li >= lhs.len() && ri >= rhs.len() {
            break;
        }
        if li < lhs.len() && ri < rhs.len() {
            let pe = lhs[li].0.as_str();
            if pe == rhs[ri].0 {
                merged_rhs.insert(pe);
                out.push((
                    pe.to_string(),
                    observed_lhs.get(pe).copied(),
                    observed_rhs.get(pe).copied(),
                ));
                li += 1;
                ri += 1;
                next_shared = shared.pop_front();
                continue;
            }
            if observed_rhs.contains_key(pe) && next_shared.is_some_and(|n| n != pe) {
                // Shared, but not the one to place in this round.
                li += 1;
                continue;
            }
        }
        if li < lhs.len() {
            let pe = lhs[li].0.as_str();
            if !observed_rhs.contains_key(pe) {
                out.push((pe.to_string(), Some(lhs[li].1), None));
                li += 1;
                continue;
            }
            if merged_rhs.contains(pe) {
                li += 1;
                continue;
            }
        }
        if ri < rhs.len() {
            let pe = rhs[ri].0.as_str();
            merged_rhs.insert(pe);
            out.push((
                pe.to_string(),
                observed_lhs.get(pe).copied(),
                observed_rhs.get(pe).copied(),
            ));
            ri += 1;
            if next_shared == Some(pe) {
                next_shared = shared.pop_front();
            }
            continue;
        }
        li += 1;
    }
    out
}

fn is_empty_container(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// Removes from `merged` what is in `last` (the applier's previous set) and
/// not in `owned` (every manager's set now, the applier's new one
/// included). As structured-merge-diff does, a struct field counts as a
/// member of a set when anything below it is; a removed field or item goes
/// with everything below it; an object or list left empty goes too.
pub(crate) fn prune(merged: &mut Value, last: &FieldSet, owned: &FieldSet, keyed: bool) {
    prune_node(merged, "", last, owned, keyed, true);
}

fn prune_node(
    v: &mut Value,
    field: &str,
    last: &FieldSet,
    owned: &FieldSet,
    keyed: bool,
    root: bool,
) {
    let empty = FieldSet::default();
    let named = root || map_type(field, v, keyed) == MapType::Struct;
    match v {
        Value::Object(m) => {
            for (k, lc) in &last.children {
                let Some(name) = k.strip_prefix("f:") else {
                    continue;
                };
                let oc = owned.children.get(k).unwrap_or(&empty);
                let Some(child) = m.get_mut(name) else {
                    continue;
                };
                let last_member = lc.member || (named && !lc.children.is_empty());
                // metadata holds the name, which every applier owns.
                let owned_member =
                    oc.member || (named && !oc.children.is_empty()) || (root && name == "metadata");
                if last_member && !owned_member {
                    m.shift_remove(name);
                    continue;
                }
                if lc.children.is_empty() {
                    continue;
                }
                let was_empty = is_empty_container(child);
                prune_node(child, name, lc, oc, keyed, false);
                if !was_empty && is_empty_container(child) {
                    m.shift_remove(name);
                }
            }
        }
        Value::Array(items) => {
            let lt = list_type(field, items.first(), keyed);
            if lt == ListType::Atomic {
                return;
            }
            let mut kept = Vec::with_capacity(items.len());
            for mut item in std::mem::take(items) {
                let key = match lt {
                    ListType::Keyed(keys) => key_of(field, keys, &item).ok(),
                    ListType::Set => Some(value_key(&item)),
                    ListType::Atomic => None,
                };
                let Some(lc) = key.as_ref().and_then(|k| last.children.get(k)) else {
                    kept.push(item);
                    continue;
                };
                let oc = key
                    .as_ref()
                    .and_then(|k| owned.children.get(k))
                    .unwrap_or(&empty);
                if lc.member && !oc.member {
                    continue;
                }
                if !lc.children.is_empty() {
                    prune_node(&mut item, "", lc, oc, keyed, false);
                }
                kept.push(item);
            }
            *items = kept;
        }
        _ => {}
    }
}

/// An object or nothing (`None`: something else).
fn as_map(v: Option<&Value>) -> Option<Option<&Map<String, Value>>> {
    match v {
        None => Some(None),
        Some(Value::Object(m)) => Some(Some(m)),
        Some(_) => None,
    }
}

/// A list, or nothing as an empty one (`None`: something else).
fn as_list(v: Option<&Value>) -> Option<&[Value]> {
    match v {
        None => Some(&[]),
        Some(Value::Array(a)) => Some(a.as_slice()),
        Some(_) => None,
    }
}

fn union_keys<'a>(a: &'a Map<String, Value>, b: &'a Map<String, Value>) -> Vec<&'a str> {
    let mut keys: Vec<&str> = a.keys().map(String::as_str).collect();
    keys.extend(b.keys().map(String::as_str).filter(|k| !a.contains_key(*k)));
    keys
}

/// What changed from `live` to `new` (`Compare`): `(modified or added,
/// removed)`. An added or removed object, list or item brings everything
/// below it. Of metadata only the fields managedFields track count.
pub(crate) fn compare(live: &Value, new: &Value, keyed: bool) -> (FieldSet, FieldSet) {
    let empty = Map::new();
    let l = live.as_object().unwrap_or(&empty);
    let n = new.as_object().unwrap_or(&empty);
    let mut changed = FieldSet::default();
    let mut removed = FieldSet::default();
    for k in union_keys(l, n) {
        let key = format!("f:{k}");
        match k {
            "apiVersion" | "kind" => {}
            "metadata" => {
                let lm = l.get(k).and_then(Value::as_object).unwrap_or(&empty);
                let nm = n.get(k).and_then(Value::as_object).unwrap_or(&empty);
                let mut c = FieldSet::default();
                let mut r = FieldSet::default();
                for f in TRACKED_METADATA {
                    let (fc, fr) = compare_value(f, lm.get(f), nm.get(f), keyed);
                    insert_nonempty(&mut c, format!("f:{f}"), fc);
                    insert_nonempty(&mut r, format!("f:{f}"), fr);
                }
                insert_nonempty(&mut changed, key.clone(), c);
                insert_nonempty(&mut removed, key, r);
            }
            _ => {
                let (c, r) = compare_value(k, l.get(k), n.get(k), keyed);
                insert_nonempty(&mut changed, key.clone(), c);
                insert_nonempty(&mut removed, key, r);
            }
        }
    }
    (changed, removed)
}

fn compare_value(
    field: &str,
    l: Option<&Value>,
    r: Option<&Value>,
    keyed: bool,
) -> (FieldSet, FieldSet) {
    let mut changed = FieldSet::default();
    let mut removed = FieldSet::default();
    if l == r {
        return (changed, removed);
    }
    let shape = r.or(l);
    let mut structured = false;
    if let (Some(s @ Value::Object(_)), Some(lm), Some(rm)) = (shape, as_map(l), as_map(r)) {
        let both_empty = lm.is_none_or(Map::is_empty) && rm.is_none_or(Map::is_empty);
        if map_type(field, s, keyed) != MapType::Atomic && !both_empty {
            structured = true;
            let empty = Map::new();
            let (lm, rm) = (lm.unwrap_or(&empty), rm.unwrap_or(&empty));
            for k in union_keys(lm, rm) {
                let (c, x) = compare_value(k, lm.get(k), rm.get(k), keyed);
                insert_nonempty(&mut changed, format!("f:{k}"), c);
                insert_nonempty(&mut removed, format!("f:{k}"), x);
            }
        }
    }
    if let (Some(Value::Array(_)), Some(la), Some(ra)) = (shape, as_list(l), as_list(r)) {
        let indexed = match list_type(field, ra.first().or(la.first()), keyed) {
            ListType::Atomic => None,
            ListType::Set => Some((
                la.iter().map(|i| (value_key(i), i)).collect::<Vec<_>>(),
                ra.iter().map(|i| (value_key(i), i)).collect::<Vec<_>>(),
            )),
            ListType::Keyed(keys) => index_live(field, keys, la).zip(index_live(field, keys, ra)),
        };
        if let Some((li, ri)) = indexed {
            structured = true;
            let lmap: HashMap<&str, &Value> = li.iter().map(|(k, v)| (k.as_str(), *v)).collect();
            let rmap: HashMap<&str, &Value> = ri.iter().map(|(k, v)| (k.as_str(), *v)).collect();
            let keys = ri
                .iter()
                .map(|(k, _)| k.as_str())
                .chain(li.iter().map(|(k, _)| k.as_str()));
            let mut seen = BTreeSet::new();
            for k in keys {
                if !seen.insert(k) {
                    continue;
                }
                let (c, x) = compare_value("", lmap.get(k).copied(), rmap.get(k).copied(), keyed);
                insert_nonempty(&mut changed, k.to_string(), c);
                insert_nonempty(&mut removed, k.to_string(), x);
            }
        }
    }
    if l.is_none() {
        changed.member = true;
    } else if r.is_none() {
        removed.member = true;
    } else if !structured {
        changed.member = true;
    }
    (changed, removed)
}

/// A field that another manager owns and an apply would change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Conflict {
    pub manager: String,
    pub operation: String,
    pub api_version: String,
    pub subresource: Option<String>,
    /// Path elements (`f:spec`, `f:replicas`).
    pub path: Vec<String>,
}

impl Conflict {
    fn of(e: &ManagedEntry, path: Vec<String>) -> Conflict {
        Conflict {
            manager: e.manager.clone(),
            operation: e.operation.clone(),
            api_version: e.api_version.clone(),
            subresource: e.subresource.clone(),
            path,
        }
    }

    /// The manager as the server names it (`printManager`):
    /// `"kubectl" using apps/v1` for an Update, `"kubectl"` for an Apply.
    pub(crate) fn manager_label(&self) -> String {
        let quote = |s: &str| Value::String(s.to_string()).to_string();
        let mut out = quote(&self.manager);
        if let Some(sub) = &self.subresource {
            out = format!("{out} with subresource {}", quote(sub));
        }
        if self.operation == "Update" {
            out = format!("{out} using {}", self.api_version);
        }
        out
    }

    fn identity(&self) -> (&str, &str, &str, Option<&str>) {
        (
            &self.manager,
            &self.operation,
            if self.operation == "Apply" {
                ""
            } else {
                &self.api_version
            },
            self.subresource.as_deref(),
        )
    }
}

/// The 409 of a conflicting apply, worded as the server words it.
pub(crate) fn conflict_status(conflicts: &[Conflict]) -> ApiStatus {
    let causes: Vec<Value> = conflicts
        .iter()
        .map(|c| {
            json!({
                "reason": "FieldManagerConflict",
                "message": format!("conflict with {}", c.manager_label()),
                "field": path_string(&c.path),
            })
        })
        .collect();
    let message = match conflicts {
        [one] => format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            one.manager_label(),
            path_string(&one.path)
        ),
        many => {
            let mut lines = Vec::new();
            let mut last: Option<(&str, &str, &str, Option<&str>)> = None;
            for c in many {
                if last != Some(c.identity()) {
                    lines.push(format!("conflicts with {}:", c.manager_label()));
                    last = Some(c.identity());
                }
                lines.push(format!("- {}", path_string(&c.path)));
            }
            format!(
                "Apply failed with {} conflicts: {}",
                many.len(),
                lines.join("\n")
            )
        }
    };
    ApiStatus::new(409, "Conflict", message).with_details(json!({"causes": causes}))
}

/// The 500 a real server answers when a configuration does not fit the
/// type's schema (`failed to create typed patch object`).
pub(crate) fn typed_error(
    namespace: &str,
    name: &str,
    api_version: &str,
    kind: &str,
    msg: &str,
) -> ApiStatus {
    let gv = if api_version.contains('/') {
        api_version.to_string()
    } else {
        format!("/{api_version}")
    };
    ApiStatus::new(
        500,
        "",
        format!(
            "failed to create typed patch object ({namespace}/{name}; {gv}, Kind={kind}): {msg}"
        ),
    )
}

/// The top-level fields of the built-in kinds whose schema is simple
/// enough to know here (`None`: anything goes).
fn top_level_fields(group: &str, kind: &str) -> Option<&'static [&'static str]> {
    let fields: &'static [&'static str] = match (group, kind) {
        ("", "ConfigMap") => &["data", "binaryData", "immutable"],
        ("", "Secret") => &["data", "stringData", "type", "immutable"],
        ("", "ServiceAccount") => &[
            "secrets",
            "imagePullSecrets",
            "automountServiceAccountToken",
        ],
        ("", "Endpoints") => &["subsets"],
        ("", "Namespace" | "Service" | "Pod" | "PersistentVolumeClaim" | "PersistentVolume")
        | ("apps", "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet")
        | ("batch", "Job" | "CronJob")
        | ("autoscaling", "HorizontalPodAutoscaler")
        | ("networking.k8s.io", "Ingress" | "NetworkPolicy")
        | ("policy", "PodDisruptionBudget")
        | ("apiextensions.k8s.io", "CustomResourceDefinition") => &["spec", "status"],
        ("rbac.authorization.k8s.io", "Role") => &["rules"],
        ("rbac.authorization.k8s.io", "ClusterRole") => &["rules", "aggregationRule"],
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => {
            &["subjects", "roleRef"]
        }
        ("storage.k8s.io", "StorageClass") => &[
            "provisioner",
            "parameters",
            "reclaimPolicy",
            "mountOptions",
            "allowVolumeExpansion",
            "volumeBindingMode",
            "allowedTopologies",
        ],
        (
            "admissionregistration.k8s.io",
            "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration",
        ) => &["webhooks"],
        _ => return None,
    };
    Some(fields)
}

/// `.x: field not declared in schema` for the first top-level field the
/// kind does not have.
pub(crate) fn undeclared_field(group: &str, kind: &str, config: &Value) -> Option<String> {
    let known = top_level_fields(group, kind)?;
    config
        .as_object()?
        .keys()
        .find(|k| {
            !matches!(k.as_str(), "apiVersion" | "kind" | "metadata")
                && !known.contains(&k.as_str())
        })
        .map(|k| format!(".{k}: field not declared in schema"))
}

/// Why an apply failed.
#[derive(Debug)]
pub(crate) enum ApplyError {
    /// The configuration does not fit the type (a missing or duplicate list key).
    Typed(String),
    /// Fields other managers own would change.
    Conflicts(Vec<Conflict>),
}

/// Who applies, and how.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Request<'a> {
    pub manager: &'a str,
    pub api_version: &'a str,
    pub now: &'a str,
    pub force: bool,
    /// Built-in types: keyed lists and atomic selectors apply.
    pub keyed: bool,
    /// `status` is a subresource: the main resource ignores it.
    pub skip_status: bool,
}

/// The outcome of an apply: the object to store (before defaulting and
/// server-owned fields) and the managedFields after it. The applier's
/// entry keeps its time; the caller sets it when the object changed.
#[derive(Debug)]
pub(crate) struct Applied {
    pub object: Value,
    pub managed: ManagedFields,
}

/// Applies `config` to `live` (an empty object when creating).
pub(crate) fn apply(
    live: &Value,
    live_managed: &ManagedFields,
    config: &Value,
    req: &Request<'_>,
) -> Result<Applied, ApplyError> {
    let set = applied_set(config, req.keyed, req.skip_status).map_err(ApplyError::Typed)?;
    let mut config = config.clone();
    if req.skip_status
        && let Some(m) = config.as_object_mut()
    {
        m.shift_remove("status");
    }
    let mut merged = merge(live, &config, req.keyed).map_err(ApplyError::Typed)?;
    let entries = &live_managed.entries;
    let applier = entries.iter().position(|e| e.is_apply_of(req.manager));
    if let Some(i) = applier
        && !entries[i].fields.is_empty()
    {
        let mut owned = set.clone();
        for (j, e) in entries.iter().enumerate() {
            if j != i {
                owned.union_with(&e.fields);
            }
        }
        prune(&mut merged, &entries[i].fields, &owned, req.keyed);
    }
    let (changed, removed) = compare(live, &merged, req.keyed);
    let mut conflicts = Vec::new();
    let mut taken = Vec::new();
    for (j, e) in entries.iter().enumerate() {
        if Some(j) == applier {
            continue;
        }
        let c = e.fields.intersection(&changed);
        if !c.is_empty() {
            conflicts.extend(c.member_paths().into_iter().map(|p| Conflict::of(e, p)));
            taken.push((j, c));
        }
    }
    if !req.force && !conflicts.is_empty() {
        // Stable: each manager's paths stay in set order.
        conflicts.sort_by(|a, b| a.identity().cmp(&b.identity()));
        return Err(ApplyError::Conflicts(conflicts));
    }
    let mut managed = live_managed.clone();
    let list = managed.entries_mut();
    for (j, c) in &taken {
        list[*j].fields = list[*j].fields.difference(c);
    }
    if !removed.is_empty() {
        for (j, e) in list.iter_mut().enumerate() {
            if Some(j) != applier {
                e.fields = e.fields.difference(&removed);
            }
        }
    }
    match applier {
        Some(i) => {
            list[i].fields = set;
            list[i].api_version = req.api_version.to_string();
        }
        None => {
            // Apply entries come first, as the server sorts them.
            let at = list
                .iter()
                .rposition(|e| e.operation == "Apply")
                .map_or(0, |p| p + 1);
            list.insert(
                at,
                ManagedEntry::new(req.manager, "Apply", req.api_version, req.now, set),
            );
        }
    }
    list.retain(|e| !e.fields.is_empty());
    Ok(Applied {
        object: merged,
        managed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment(replicas: Value, containers: Value) -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web"}},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": containers}}
            }
        })
    }

    fn req(manager: &str, force: bool) -> Request<'_> {
        Request {
            manager,
            api_version: "apps/v1",
            now: "t1",
            force,
            keyed: true,
            skip_status: true,
        }
    }

    fn paths(s: &FieldSet) -> Vec<String> {
        s.member_paths().iter().map(|p| path_string(p)).collect()
    }

    #[test]
    fn applied_set_matches_the_server_encoding() {
        let d = deployment(
            json!(2),
            json!([{"name": "app", "image": "app:1", "ports": [{"containerPort": 8080}],
                    "env": [{"name": "A", "value": "1"}]}]),
        );
        let set = applied_set(&d, true, true).unwrap();
        assert_eq!(
            set.to_fields_v1(),
            json!({
                "f:metadata": {"f:labels": {"f:app": {}}},
                "f:spec": {
                    "f:replicas": {},
                    "f:selector": {},
                    "f:template": {
                        "f:metadata": {"f:labels": {"f:app": {}}},
                        "f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {
                            ".": {},
                            "f:env": {"k:{\"name\":\"A\"}": {".": {}, "f:name": {}, "f:value": {}}},
                            "f:image": {},
                            "f:name": {},
                            "f:ports": {"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}
                        }}}
                    }
                }
            })
        );
        // Status of a resource with a status subresource is not the applier's.
        let with_status = json!({"spec": {"x": 1}, "status": {"y": 1}});
        assert_eq!(
            paths(&applied_set(&with_status, true, true).unwrap()),
            [".spec.x"]
        );
        assert_eq!(
            paths(&applied_set(&with_status, true, false).unwrap()),
            [".spec.x", ".status.y"]
        );
    }

    #[test]
    fn config_errors_name_the_path() {
        let missing = deployment(json!(1), json!([{"image": "x"}]));
        assert_eq!(
            applied_set(&missing, true, true).unwrap_err(),
            ".spec.template.spec.containers: element 0: associative list with keys has an element that omits key field \"name\" (and doesn't have default value)"
        );
        let dup = deployment(
            json!(1),
            json!([{"name": "a", "env": [{"name": "X"}, {"name": "X"}]}]),
        );
        assert_eq!(
            applied_set(&dup, true, true).unwrap_err(),
            ".spec.template.spec.containers[name=\"a\"].env: duplicate entries for key [name=\"X\"]"
        );
        assert!(merge(&json!({}), &dup, true).is_err());
    }

    #[test]
    fn keyed_lists_merge_by_key_and_atomic_lists_are_replaced() {
        let live = json!({"spec": {"containers": [
            {"name": "a", "image": "a:1", "args": ["--x", "--y"], "ports": [{"containerPort": 80, "protocol": "TCP", "name": "http"}]},
            {"name": "b", "image": "b:1"}
        ], "volumes": [{"name": "v", "emptyDir": {}}]}});
        let config = json!({"spec": {"containers": [
            {"name": "c", "image": "c:1"},
            {"name": "a", "image": "a:2", "args": ["--z"], "ports": [{"containerPort": 80, "hostPort": 8080}, {"containerPort": 81}]}
        ]}});
        let out = merge(&live, &config, true).unwrap();
        let cs = out["spec"]["containers"].as_array().unwrap();
        let names: Vec<&str> = cs.iter().map(|c| c["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["c", "a", "b"], "structured-merge-diff's order");
        assert_eq!(cs[1]["image"], "a:2");
        assert_eq!(cs[1]["args"], json!(["--z"]), "atomic list replaced");
        assert_eq!(
            cs[1]["ports"],
            json!([{"containerPort": 80, "protocol": "TCP", "name": "http", "hostPort": 8080}, {"containerPort": 81}]),
            "ports merged on containerPort+protocol, protocol defaulted in the key"
        );
        assert_eq!(cs[2]["image"], "b:1", "items the config omits stay");
        assert_eq!(out["spec"]["volumes"], live["spec"]["volumes"]);
        // Custom resources own lists whole.
        let out = merge(&live, &config, false).unwrap();
        assert_eq!(out["spec"]["containers"], config["spec"]["containers"]);
    }

    #[test]
    fn maps_merge_by_key_selectors_are_atomic_and_null_removes() {
        let live = json!({"metadata": {"labels": {"a": "1", "b": "2"}, "finalizers": ["x"]},
                          "spec": {"selector": {"matchLabels": {"a": "1", "b": "2"}}, "paused": true}});
        let config = json!({"metadata": {"labels": {"c": "3"}, "finalizers": ["y", "x"]},
                            "spec": {"selector": {"matchLabels": {"c": "3"}}, "paused": null}});
        let out = merge(&live, &config, true).unwrap();
        assert_eq!(
            out["metadata"]["labels"],
            json!({"a": "1", "b": "2", "c": "3"})
        );
        assert_eq!(out["metadata"]["finalizers"], json!(["y", "x"]));
        assert_eq!(out["spec"]["selector"], json!({"matchLabels": {"c": "3"}}));
        assert!(out["spec"].get("paused").is_none());
    }

    #[test]
    fn merged_order_follows_structured_merge_diff() {
        let item = json!(null);
        let k = |ks: &[&str]| -> Vec<(String, &Value)> {
            ks.iter().map(|k| (k.to_string(), &item)).collect()
        };
        let order = |l: &[&str], r: &[&str]| -> Vec<String> {
            merged_order(&k(l), &k(r))
                .into_iter()
                .map(|(k, _, _)| k)
                .collect()
        };
        assert_eq!(order(&["a", "b"], &["c", "a"]), ["c", "a", "b"]);
        assert_eq!(order(&["a", "b", "c"], &["c", "a"]), ["b", "c", "a"]);
        assert_eq!(order(&["a", "b"], &[]), ["a", "b"]);
        assert_eq!(order(&[], &["x", "y"]), ["x", "y"]);
        assert_eq!(
            order(&["a", "b", "c"], &["a", "d", "c"]),
            ["a", "b", "d", "c"]
        );
    }

    #[test]
    fn compare_reports_members_and_whole_subtrees() {
        let live = json!({"spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "a", "image": "a:1"}]}}},
                          "metadata": {"labels": {"x": "1"}, "resourceVersion": "5"}});
        let new = json!({"spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "b", "image": "b:1"}]}}},
                         "metadata": {"labels": {"x": "1"}, "resourceVersion": "6"}});
        let (c, r) = compare(&live, &new, true);
        assert_eq!(
            paths(&c),
            [
                ".spec.replicas",
                ".spec.template.spec.containers[name=\"b\"]",
                ".spec.template.spec.containers[name=\"b\"].image",
                ".spec.template.spec.containers[name=\"b\"].name"
            ]
        );
        assert_eq!(
            paths(&r),
            [
                ".spec.template.spec.containers[name=\"a\"]",
                ".spec.template.spec.containers[name=\"a\"].image",
                ".spec.template.spec.containers[name=\"a\"].name"
            ]
        );
        assert_eq!(
            compare(&live, &live, true),
            (FieldSet::default(), FieldSet::default())
        );
    }

    fn update_owner(fields: Value, manager: &str) -> ManagedFields {
        ManagedFields::from_json(&json!([{
            "manager": manager, "operation": "Update", "apiVersion": "apps/v1",
            "time": "t0", "fieldsType": "FieldsV1", "fieldsV1": fields
        }]))
        .unwrap()
    }

    #[test]
    fn a_different_value_owned_by_another_manager_conflicts() {
        let live = deployment(json!(3), json!([{"name": "app", "image": "app:1"}]));
        let mf = update_owner(json!({"f:spec": {"f:replicas": {}}}), "kubectl");
        let config = deployment(json!(5), json!([{"name": "app", "image": "app:1"}]));
        let Err(ApplyError::Conflicts(c)) = apply(&live, &mf, &config, &req("krply-plan-x", false))
        else {
            panic!("expected a conflict");
        };
        assert_eq!(c.len(), 1);
        let s = conflict_status(&c);
        assert_eq!((s.code, s.reason.as_str()), (409, "Conflict"));
        assert_eq!(
            s.message,
            "Apply failed with 1 conflict: conflict with \"kubectl\" using apps/v1: .spec.replicas"
        );
        assert_eq!(
            s.to_json()["details"],
            json!({"causes": [{"reason": "FieldManagerConflict", "message": "conflict with \"kubectl\" using apps/v1", "field": ".spec.replicas"}]})
        );
        // The same value is shared, not a conflict.
        let same = deployment(json!(3), json!([{"name": "app", "image": "app:1"}]));
        let out = apply(&live, &mf, &same, &req("krply-plan-x", false)).unwrap();
        let owners: Vec<&str> = out
            .managed
            .entries
            .iter()
            .filter(|e| {
                e.fields
                    .member_paths()
                    .iter()
                    .any(|p| path_string(p) == ".spec.replicas")
            })
            .map(|e| e.manager.as_str())
            .collect();
        assert_eq!(owners, ["krply-plan-x", "kubectl"], "Apply entries first");
        // Forced, the field changes hands; a manager left with nothing goes.
        let out = apply(&live, &mf, &config, &req("krply-plan-x", true)).unwrap();
        assert_eq!(out.object["spec"]["replicas"], 5);
        assert_eq!(out.managed.entries.len(), 1);
        assert_eq!(out.managed.entries[0].operation, "Apply");
    }

    #[test]
    fn several_conflicts_are_grouped_by_manager() {
        let live = deployment(json!(3), json!([{"name": "app", "image": "app:1"}]));
        let mut mf = update_owner(json!({"f:spec": {"f:replicas": {}}}), "kubectl");
        let other = update_owner(
            json!({"f:metadata": {"f:labels": {"f:app": {}}}, "f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {"f:image": {}}}}}}}),
            "helm",
        );
        mf.entries_mut().extend(other.entries);
        let mut config = deployment(json!(5), json!([{"name": "app", "image": "app:2"}]));
        config["metadata"]["labels"]["app"] = json!("other");
        let Err(ApplyError::Conflicts(c)) = apply(&live, &mf, &config, &req("me", false)) else {
            panic!("expected conflicts");
        };
        assert_eq!(
            conflict_status(&c).message,
            "Apply failed with 3 conflicts: conflicts with \"helm\" using apps/v1:\n- .metadata.labels.app\n- .spec.template.spec.containers[name=\"app\"].image\nconflicts with \"kubectl\" using apps/v1:\n- .spec.replicas"
        );
        let label = Conflict {
            manager: "m".into(),
            operation: "Update".into(),
            api_version: "apps/v1".into(),
            subresource: Some("scale".into()),
            path: vec![],
        };
        assert_eq!(
            label.manager_label(),
            "\"m\" with subresource \"scale\" using apps/v1"
        );
    }

    #[test]
    fn fields_an_applier_stops_applying_are_removed_unless_owned() {
        let first = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"a": "1", "b": "2"}},
                           "data": {"x": "1", "y": "2", "z": "3"}});
        let created = apply(
            &json!({}),
            &ManagedFields::default(),
            &first,
            &req("a", false),
        )
        .unwrap();
        assert_eq!(created.managed.entries.len(), 1);
        // b applies y with the value it has: both own it now.
        let mut live = created.object.clone();
        live["data"]["w"] = json!("0");
        let mut mf = created.managed.clone();
        let b = apply(
            &live,
            &mf,
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"y": "2"}}),
            &req("b", false),
        )
        .unwrap();
        mf = b.managed;
        let second = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"a": "1"}},
                            "data": {"x": "1"}});
        let out = apply(&live, &mf, &second, &req("a", false)).unwrap();
        assert_eq!(
            out.object["data"],
            json!({"x": "1", "y": "2", "w": "0"}),
            "z removed; y kept (b owns it); w kept (nobody applied it)"
        );
        assert_eq!(out.object["metadata"]["labels"], json!({"a": "1"}));
        // Dropping every label removes the emptied map, not metadata.
        let third = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"x": "1"}});
        let out = apply(&out.object, &out.managed, &third, &req("a", false)).unwrap();
        assert!(out.object["metadata"].get("labels").is_none());
        assert_eq!(out.object["metadata"]["name"], "c");
    }

    #[test]
    fn a_dropped_container_goes_with_its_defaulted_fields() {
        let config = deployment(
            json!(1),
            json!([{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}]),
        );
        let created = apply(
            &json!({}),
            &ManagedFields::default(),
            &config,
            &req("m", false),
        )
        .unwrap();
        let mut live = created.object;
        live["spec"]["template"]["spec"]["containers"][1]["imagePullPolicy"] =
            json!("IfNotPresent");
        let fewer = deployment(json!(1), json!([{"name": "a", "image": "a:1"}]));
        let out = apply(&live, &created.managed, &fewer, &req("m", false)).unwrap();
        assert_eq!(
            out.object["spec"]["template"]["spec"]["containers"],
            json!([{"name": "a", "image": "a:1"}])
        );
        // Re-applying the same configuration changes nothing.
        let again = apply(&out.object, &out.managed, &fewer, &req("m", false)).unwrap();
        assert_eq!(again.object, out.object);
        assert_eq!(again.managed, out.managed);
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        const KEYS: [&str; 16] = [
            "spec",
            "containers",
            "ports",
            "env",
            "name",
            "containerPort",
            "port",
            "protocol",
            "labels",
            "data",
            "finalizers",
            "selector",
            "matchLabels",
            "image",
            "a",
            "b",
        ];

        fn leaf() -> impl Strategy<Value = Value> {
            prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::Bool),
                (0i64..3).prop_map(Value::from),
                prop::sample::select(vec!["", "a", "TCP", "UDP"]).prop_map(Value::from),
            ]
        }

        /// Random objects over the names the type rules key on, so keyed
        /// lists, set lists, maps and selectors all occur, well-formed or not.
        fn tree() -> impl Strategy<Value = Value> {
            leaf().prop_recursive(4, 40, 4, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                    prop::collection::btree_map(
                        prop::sample::select(KEYS.to_vec()).prop_map(str::to_owned),
                        inner,
                        0..4
                    )
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
                ]
            })
        }

        fn object() -> impl Strategy<Value = Value> {
            prop::collection::btree_map(
                prop::sample::select(vec!["spec", "metadata", "data", "status"])
                    .prop_map(str::to_owned),
                tree(),
                0..3,
            )
            .prop_map(|m| Value::Object(m.into_iter().collect()))
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(200))]

            /// Any configuration onto any object: an answer, never a panic;
            /// once applied, the same configuration again changes nothing.
            #[test]
            fn applies_are_total_and_idempotent(live in object(), a in object(), b in object()) {
                let empty = ManagedFields::default();
                let Ok(first) = apply(&live, &empty, &a, &req("a", false)) else {
                    return Ok(());
                };
                let again = apply(&first.object, &first.managed, &a, &req("a", false));
                let Ok(again) = again else {
                    panic!("a configuration that applied once failed the second time");
                };
                prop_assert_eq!(&again.object, &first.object);
                prop_assert_eq!(&again.managed, &first.managed);
                // A second applier, polite then forced.
                let _ = apply(&first.object, &first.managed, &b, &req("b", false));
                if let Ok(forced) = apply(&first.object, &first.managed, &b, &req("b", true)) {
                    let (changed, _) = compare(&first.object, &forced.object, true);
                    let _ = conflict_status(
                        &changed
                            .member_paths()
                            .into_iter()
                            .map(|path| Conflict {
                                manager: "a".into(),
                                operation: "Apply".into(),
                                api_version: "v1".into(),
                                subresource: None,
                                path,
                            })
                            .collect::<Vec<_>>(),
                    );
                }
            }
        }
    }

    #[test]
    fn path_elements_print_like_the_server() {
        assert_eq!(
            path_string(&[
                "f:spec".into(),
                "f:ports".into(),
                "k:{\"port\":80,\"protocol\":\"TCP\"}".into(),
                "f:targetPort".into()
            ]),
            ".spec.ports[port=80,protocol=\"TCP\"].targetPort"
        );
        assert_eq!(element_string("v:\"kubernetes\""), "[=\"kubernetes\"]");
        assert_eq!(element_string("i:3"), "[3]");
    }

    #[test]
    fn unknown_top_level_fields_of_known_kinds() {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {}, "spec": {}});
        assert_eq!(
            undeclared_field("", "ConfigMap", &cm).as_deref(),
            Some(".spec: field not declared in schema")
        );
        assert_eq!(undeclared_field("example.com", "Widget", &cm), None);
        assert_eq!(
            typed_error("shop", "c", "v1", "ConfigMap", "x").message,
            "failed to create typed patch object (shop/c; /v1, Kind=ConfigMap): x"
        );
    }
}
