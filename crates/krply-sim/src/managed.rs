//! `metadata.managedFields`: field sets in the real FieldsV1 encoding, the
//! change set of a write, and how ownership moves between field managers.
//!
//! Encoding: `f:<key>` for map keys, `k:{"name":"x"}` for items of keyed lists
//! (see [`super::keyed_lists`]), `v:<json>` for items of set lists
//! (finalizers), `".": {}` when a node is itself a member of the set and also
//! has members below it, `{}` for a member leaf. Other lists are owned whole.
//!
//! On each write (operation `Update`), the fields the write added or changed
//! become owned by its manager and are removed from every other manager's set;
//! fields the write removed leave every set; managers left with an empty set
//! are dropped.
//!
//! Server-side apply (operation `Apply`) computes its ownership changes in
//! [`super::ssa`]; the member-wise set operations it needs live here.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::keyed_lists;

/// A set of field paths, as a trie.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct FieldSet {
    /// The path of this node is itself in the set.
    pub member: bool,
    pub children: BTreeMap<String, FieldSet>,
}

impl FieldSet {
    pub(crate) fn leaf() -> Self {
        FieldSet {
            member: true,
            children: BTreeMap::new(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        !self.member && self.children.is_empty()
    }

    pub(crate) fn union_with(&mut self, other: &FieldSet) {
        self.member |= other.member;
        for (k, o) in &other.children {
            self.children.entry(k.clone()).or_default().union_with(o);
        }
    }

    /// The members of both sets (as structured-merge-diff's `Intersection`).
    pub(crate) fn intersection(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet {
            member: self.member && other.member,
            children: BTreeMap::new(),
        };
        for (k, a) in &self.children {
            if let Some(b) = other.children.get(k) {
                let c = a.intersection(b);
                if !c.is_empty() {
                    out.children.insert(k.clone(), c);
                }
            }
        }
        out
    }

    /// The members of this set that are not members of `other` (member by
    /// member, as structured-merge-diff's `Difference`: removing a path does
    /// not remove what lies below it).
    pub(crate) fn difference(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet {
            member: self.member && !other.member,
            children: BTreeMap::new(),
        };
        for (k, a) in &self.children {
            let c = match other.children.get(k) {
                Some(b) => a.difference(b),
                None => a.clone(),
            };
            if !c.is_empty() {
                out.children.insert(k.clone(), c);
            }
        }
        out
    }

    /// Every member path, as path elements (`f:spec`, `k:{"name":"a"}`,
    /// ...), in structured-merge-diff's iteration order: at each level the
    /// members first, then what lies below each child.
    pub(crate) fn member_paths(&self) -> Vec<Vec<String>> {
        let mut out = Vec::new();
        let mut prefix = Vec::new();
        self.collect_members(&mut prefix, &mut out);
        out
    }

    fn collect_members(&self, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
        for (k, c) in &self.children {
            if c.member {
                let mut p = prefix.clone();
                p.push(k.clone());
                out.push(p);
            }
        }
        for (k, c) in &self.children {
            if !c.children.is_empty() {
                prefix.push(k.clone());
                c.collect_members(prefix, out);
                prefix.pop();
            }
        }
    }

    /// Removes `paths` from this set. A leaf of `paths` (a value replaced or
    /// removed whole) removes everything at and below it; an inner node
    /// removes only what it names. Returns whether anything was removed.
    pub(crate) fn remove_paths(&mut self, paths: &FieldSet) -> bool {
        let mut removed = false;
        for (k, p) in &paths.children {
            let Some(mine) = self.children.get_mut(k) else {
                continue;
            };
            if p.children.is_empty() {
                self.children.remove(k);
                removed = true;
                continue;
            }
            if p.member && mine.member {
                mine.member = false;
                removed = true;
            }
            removed |= mine.remove_paths(p);
            if mine.is_empty() {
                self.children.remove(k);
            }
        }
        removed
    }

    /// FieldsV1 JSON of the children of this (root) node.
    pub(crate) fn to_fields_v1(&self) -> Value {
        let mut m = Map::new();
        if self.member && !self.children.is_empty() {
            m.insert(".".into(), json!({}));
        }
        for (k, c) in &self.children {
            m.insert(k.clone(), c.to_fields_v1());
        }
        Value::Object(m)
    }

    pub(crate) fn from_fields_v1(v: &Value) -> Result<FieldSet, String> {
        Self::from_node(v, 0)
    }

    fn from_node(v: &Value, depth: usize) -> Result<FieldSet, String> {
        if depth > 64 {
            return Err("fieldsV1 nested too deeply".into());
        }
        let Value::Object(m) = v else {
            return Err(format!("fieldsV1: expected an object, found {v}"));
        };
        if m.is_empty() {
            return Ok(FieldSet::leaf());
        }
        let mut s = FieldSet::default();
        for (k, c) in m {
            if k == "." {
                s.member = true;
            } else if k.starts_with("f:")
                || k.starts_with("k:")
                || k.starts_with("v:")
                || k.starts_with("i:")
            {
                s.children.insert(k.clone(), Self::from_node(c, depth + 1)?);
            } else {
                return Err(format!("fieldsV1: unexpected key {k:?}"));
            }
        }
        Ok(s)
    }

    /// Every member path, dot-joined, for tests and diagnostics.
    #[cfg(test)]
    pub(crate) fn paths(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.collect("", &mut out);
        out
    }

    #[cfg(test)]
    fn collect(&self, prefix: &str, out: &mut Vec<String>) {
        if self.member && !prefix.is_empty() {
            out.push(prefix.to_string());
        }
        for (k, c) in &self.children {
            let p = if prefix.is_empty() {
                k.clone()
            } else {
                format!("{prefix}.{k}")
            };
            c.collect(&p, out);
        }
    }
}

/// The metadata fields that managedFields track; the rest of metadata is
/// identity or server-owned.
pub(crate) const TRACKED_METADATA: [&str; 4] =
    ["labels", "annotations", "finalizers", "ownerReferences"];

/// The fields of a whole object (as owned by its creator).
pub(crate) fn fields_of_object(obj: &Value, keyed: bool) -> FieldSet {
    let (changed, _) = diff_object(&Value::Object(Map::new()), obj, keyed);
    changed
}

/// What a write changed: `(added or modified, removed)`. `keyed` enables the
/// keyed-list rules of built-in types (custom resources own lists whole).
pub(crate) fn diff_object(old: &Value, new: &Value, keyed: bool) -> (FieldSet, FieldSet) {
    let mut changed = FieldSet::default();
    let mut removed = FieldSet::default();
    let empty = Map::new();
    let o = old.as_object().unwrap_or(&empty);
    let n = new.as_object().unwrap_or(&empty);
    for k in union_keys(o, n) {
        match k {
            "apiVersion" | "kind" => {}
            "metadata" => {
                let om = o.get(k).and_then(Value::as_object).unwrap_or(&empty);
                let nm = n.get(k).and_then(Value::as_object).unwrap_or(&empty);
                let mut c = FieldSet::default();
                let mut r = FieldSet::default();
                for f in TRACKED_METADATA {
                    diff_into(f, om.get(f), nm.get(f), keyed, &mut c, &mut r);
                }
                insert_nonempty(&mut changed, "f:metadata", c);
                insert_nonempty(&mut removed, "f:metadata", r);
            }
            _ => diff_into(k, o.get(k), n.get(k), keyed, &mut changed, &mut removed),
        }
    }
    (changed, removed)
}

fn union_keys<'a>(a: &'a Map<String, Value>, b: &'a Map<String, Value>) -> Vec<&'a str> {
    let mut keys: Vec<&str> = b.keys().map(String::as_str).collect();
    keys.extend(a.keys().map(String::as_str).filter(|k| !b.contains_key(*k)));
    keys
}

fn insert_nonempty(parent: &mut FieldSet, key: &str, child: FieldSet) {
    if !child.is_empty() {
        parent.children.insert(key.to_string(), child);
    }
}

/// Diffs the value of map key `field` into the parent sets.
fn diff_into(
    field: &str,
    old: Option<&Value>,
    new: Option<&Value>,
    keyed: bool,
    changed: &mut FieldSet,
    removed: &mut FieldSet,
) {
    let key = || format!("f:{field}");
    match (old, new) {
        (None, None) => {}
        (Some(_), None) => {
            removed.children.insert(key(), FieldSet::leaf());
        }
        (None, Some(n)) => {
            changed.children.insert(key(), set_of(field, n, keyed));
        }
        (Some(o), Some(n)) if o == n => {}
        (Some(o), Some(n)) => {
            let (c, r) = diff_value(field, o, n, keyed);
            insert_nonempty(changed, &key(), c);
            insert_nonempty(removed, &key(), r);
        }
    }
}

/// Diff of two values at the same path, as `(changed, removed)` sets rooted at that path.
fn diff_value(field: &str, o: &Value, n: &Value, keyed: bool) -> (FieldSet, FieldSet) {
    let mut changed = FieldSet::default();
    let mut removed = FieldSet::default();
    // Most of an object is unchanged by a write: comparing is far cheaper
    // than walking it (no allocations).
    if o == n {
        return (changed, removed);
    }
    match (o, n) {
        (Value::Object(om), Value::Object(nm)) if !atomic(field, n, keyed) && !nm.is_empty() => {
            for k in union_keys(om, nm) {
                diff_into(k, om.get(k), nm.get(k), keyed, &mut changed, &mut removed);
            }
        }
        (Value::Array(oa), Value::Array(na)) => {
            if let Some((ok, nk)) = keyed_items(field, oa, na, keyed) {
                for (k, nv) in &nk {
                    match ok.get(k) {
                        Some(ov) => {
                            let (c, r) = diff_value(field, ov, nv, keyed);
                            insert_nonempty(&mut changed, k, c);
                            insert_nonempty(&mut removed, k, r);
                        }
                        None => {
                            changed.children.insert(k.clone(), item_set(nv, keyed));
                        }
                    }
                }
                for k in ok.keys().filter(|k| !nk.contains_key(*k)) {
                    removed.children.insert(k.clone(), FieldSet::leaf());
                }
            } else if keyed && keyed_lists::is_set_list(field) {
                for v in na.iter().filter(|v| !oa.contains(v)) {
                    changed.children.insert(format!("v:{v}"), FieldSet::leaf());
                }
                for v in oa.iter().filter(|v| !na.contains(v)) {
                    removed.children.insert(format!("v:{v}"), FieldSet::leaf());
                }
            } else if o != n {
                changed = FieldSet::leaf();
            }
        }
        _ => {
            if o != n {
                changed = set_of(field, n, keyed);
                changed.member = true;
            }
        }
    }
    (changed, removed)
}

type KeyedItems<'a> = BTreeMap<String, &'a Value>;

/// Both lists indexed by item key, when the list under `field` is keyed and
/// every item has a distinct key.
fn keyed_items<'a>(
    field: &str,
    oa: &'a [Value],
    na: &'a [Value],
    keyed: bool,
) -> Option<(KeyedItems<'a>, KeyedItems<'a>)> {
    if !keyed {
        return None;
    }
    let sample = na.first().or_else(|| oa.first())?;
    let keys = keyed_lists::list_keys(field, sample)?;
    let index = |list: &'a [Value]| -> Option<KeyedItems<'a>> {
        let mut m = BTreeMap::new();
        for item in list {
            let k = keyed_lists::item_key(keys, item)?;
            if m.insert(format!("k:{k}"), item).is_some() {
                return None;
            }
        }
        Some(m)
    };
    Some((index(oa)?, index(na)?))
}

/// The set of a whole item of a keyed list: the item itself and its fields.
fn item_set(item: &Value, keyed: bool) -> FieldSet {
    let mut s = match item {
        Value::Object(m) if !m.is_empty() => {
            let mut s = FieldSet::default();
            for (k, v) in m {
                s.children.insert(format!("f:{k}"), set_of(k, v, keyed));
            }
            s
        }
        _ => FieldSet::default(),
    };
    s.member = true;
    s
}

/// A struct owned whole (built-in types only).
fn atomic(field: &str, v: &Value, keyed: bool) -> bool {
    keyed && keyed_lists::is_atomic(field, v)
}

/// Every field of a value set at map key `field`.
fn set_of(field: &str, v: &Value, keyed: bool) -> FieldSet {
    match v {
        Value::Object(m) if !m.is_empty() && !atomic(field, v, keyed) => {
            let mut s = FieldSet {
                member: if keyed {
                    !keyed_lists::present_when_empty(field)
                } else {
                    keyed_lists::is_string_map(field, v)
                },
                children: BTreeMap::new(),
            };
            for (k, c) in m {
                s.children.insert(format!("f:{k}"), set_of(k, c, keyed));
            }
            s
        }
        Value::Array(items) if !items.is_empty() => {
            if let Some((_, nk)) = keyed_items(field, &[], items, keyed) {
                let mut s = FieldSet {
                    member: !keyed_lists::present_when_empty(field),
                    children: BTreeMap::new(),
                };
                for (k, item) in nk {
                    s.children.insert(k, item_set(item, keyed));
                }
                s
            } else if keyed && keyed_lists::is_set_list(field) {
                let mut s = FieldSet::leaf();
                for item in items {
                    s.children.insert(format!("v:{item}"), FieldSet::leaf());
                }
                s
            } else {
                FieldSet::leaf()
            }
        }
        _ => FieldSet::leaf(),
    }
}

/// One `managedFields` entry.
#[derive(Debug, Clone)]
pub(crate) struct ManagedEntry {
    pub manager: String,
    pub operation: String,
    pub api_version: String,
    pub time: String,
    pub subresource: Option<String>,
    pub fields: FieldSet,
    /// Changed since its JSON was last written into the object.
    dirty: bool,
}

impl PartialEq for ManagedEntry {
    fn eq(&self, o: &Self) -> bool {
        (
            &self.manager,
            &self.operation,
            &self.api_version,
            &self.time,
            &self.subresource,
            &self.fields,
        ) == (
            &o.manager,
            &o.operation,
            &o.api_version,
            &o.time,
            &o.subresource,
            &o.fields,
        )
    }
}

impl ManagedEntry {
    pub(crate) fn new(
        manager: &str,
        operation: &str,
        api_version: &str,
        time: &str,
        fields: FieldSet,
    ) -> ManagedEntry {
        ManagedEntry {
            manager: manager.to_string(),
            operation: operation.to_string(),
            api_version: api_version.to_string(),
            time: time.to_string(),
            subresource: None,
            fields,
            dirty: true,
        }
    }

    /// Whether this is the entry of `manager`'s applies to the main resource.
    pub(crate) fn is_apply_of(&self, manager: &str) -> bool {
        self.manager == manager && self.operation == "Apply" && self.subresource.is_none()
    }

    fn to_json(&self) -> Value {
        let mut m = Map::new();
        if !self.manager.is_empty() {
            m.insert("manager".into(), json!(self.manager));
        }
        m.insert("operation".into(), json!(self.operation));
        m.insert("apiVersion".into(), json!(self.api_version));
        m.insert("time".into(), json!(self.time));
        m.insert("fieldsType".into(), json!("FieldsV1"));
        m.insert("fieldsV1".into(), self.fields.to_fields_v1());
        if let Some(s) = &self.subresource {
            m.insert("subresource".into(), json!(s));
        }
        Value::Object(m)
    }
}

/// All managedFields entries of an object, with their JSON list kept up to
/// date incrementally (only changed entries are rebuilt).
#[derive(Debug, Clone, Default)]
pub(crate) struct ManagedFields {
    pub entries: Vec<ManagedEntry>,
    /// Entries were removed (or loaded): the JSON list must be rebuilt.
    reshaped: bool,
    /// The `metadata.managedFields` list, as of the last [`ManagedFields::sync`].
    json: Vec<Value>,
}

impl PartialEq for ManagedFields {
    fn eq(&self, o: &Self) -> bool {
        self.entries == o.entries
    }
}

impl ManagedFields {
    pub(crate) fn from_json(v: &Value) -> Result<ManagedFields, String> {
        let Value::Array(items) = v else {
            return Err("managedFields must be a list".into());
        };
        let mut entries = Vec::with_capacity(items.len());
        for item in items {
            let s = |k: &str| {
                item.get(k)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            let fields = match item.get("fieldsV1") {
                Some(f) => FieldSet::from_fields_v1(f)?,
                None => FieldSet::default(),
            };
            entries.push(ManagedEntry {
                manager: s("manager"),
                operation: s("operation"),
                api_version: s("apiVersion"),
                time: s("time"),
                subresource: item
                    .get("subresource")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string),
                fields,
                dirty: true,
            });
        }
        Ok(ManagedFields {
            entries,
            reshaped: true,
            json: Vec::new(),
        })
    }

    #[cfg(test)]
    pub(crate) fn to_json(&self) -> Value {
        Value::Array(self.entries.iter().map(ManagedEntry::to_json).collect())
    }

    /// Brings the JSON list up to date, rebuilding only changed entries.
    pub(crate) fn sync(&mut self) {
        if self.reshaped || self.json.len() > self.entries.len() {
            self.json = self.entries.iter().map(ManagedEntry::to_json).collect();
        } else {
            for (i, e) in self.entries.iter().enumerate() {
                if i >= self.json.len() {
                    self.json.push(e.to_json());
                } else if e.dirty {
                    self.json[i] = e.to_json();
                }
            }
        }
        self.reshaped = false;
        for e in &mut self.entries {
            e.dirty = false;
        }
    }

    /// The entries, for edits that touch many of them at once (server-side
    /// apply); the JSON list is rebuilt in full at the next sync.
    pub(crate) fn entries_mut(&mut self) -> &mut Vec<ManagedEntry> {
        self.reshaped = true;
        &mut self.entries
    }

    /// Whether any manager owns the field at `path` (`["f:spec", "f:replicas"]`).
    pub(crate) fn anyone_owns(&self, path: &[&str]) -> bool {
        self.entries.iter().any(|e| {
            path.iter()
                .try_fold(&e.fields, |node, step| node.children.get(*step))
                .is_some_and(|node| node.member || !node.children.is_empty())
        })
    }

    /// Gives `manager`'s Apply entry the time `time` (its applied object changed).
    pub(crate) fn touch_apply(&mut self, manager: &str, time: &str) {
        if let Some(e) = self.entries.iter_mut().find(|e| e.is_apply_of(manager))
            && e.time != time
        {
            e.time = time.to_string();
            e.dirty = true;
        }
    }

    /// The JSON list as of the last sync.
    pub(crate) fn json(&self) -> &[Value] {
        &self.json
    }

    /// Moves the synced JSON list into `metadata.managedFields` of `obj`
    /// (nothing when empty); [`ManagedFields::detach`] takes it back.
    pub(crate) fn attach(&mut self, obj: &mut Value) {
        self.sync();
        if self.json.is_empty() {
            return;
        }
        if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert(
                "managedFields".into(),
                Value::Array(std::mem::take(&mut self.json)),
            );
        }
    }

    /// Takes the list [`ManagedFields::attach`] put into `obj` back.
    pub(crate) fn detach(&mut self, obj: &mut Value) {
        if let Some(Value::Array(list)) = obj
            .get_mut("metadata")
            .and_then(Value::as_object_mut)
            .and_then(|m| m.remove("managedFields"))
            && self.json.is_empty()
        {
            self.json = list;
        }
    }

    /// Records an `Update` by `manager`. Returns whether anything changed.
    pub(crate) fn record_update(
        &mut self,
        manager: &str,
        subresource: Option<&str>,
        api_version: &str,
        time: &str,
        changed: &FieldSet,
        removed: &FieldSet,
    ) -> bool {
        if changed.is_empty() && removed.is_empty() {
            return false;
        }
        let is_mine = |e: &ManagedEntry| {
            e.manager == manager
                && e.operation == "Update"
                && e.subresource.as_deref() == subresource
        };
        for e in self.entries.iter_mut().filter(|e| !is_mine(e)) {
            let lost = e.fields.remove_paths(changed) | e.fields.remove_paths(removed);
            e.dirty |= lost;
        }
        let idx = match self.entries.iter().position(is_mine) {
            Some(i) => i,
            None => {
                self.entries.push(ManagedEntry {
                    manager: manager.to_string(),
                    operation: "Update".into(),
                    api_version: api_version.to_string(),
                    time: String::new(),
                    subresource: subresource.map(str::to_string),
                    fields: FieldSet::default(),
                    dirty: true,
                });
                self.entries.len() - 1
            }
        };
        let mine = &mut self.entries[idx];
        mine.fields.union_with(changed);
        let _ = mine.fields.remove_paths(removed);
        mine.time = time.to_string();
        mine.api_version = api_version.to_string();
        mine.dirty = true;
        let before = self.entries.len();
        self.entries.retain(|e| !e.fields.is_empty());
        self.reshaped |= self.entries.len() != before;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment(image: &str, replicas: i64) -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web"}, "uid": "u", "resourceVersion": "1"},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
                    {"name": "server", "image": image, "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                     "env": [{"name": "PORT", "value": "8080"}]}
                ]}}
            }
        })
    }

    /// As kube-apiserver 1.37 records a create (`kubectl create -f`): lists
    /// and maps that only exist when set are themselves owned (`"."`), the
    /// `containers` list and the structs every Deployment has are not.
    #[test]
    fn fields_v1_of_a_created_deployment() {
        let f = fields_of_object(&deployment("web:1", 1), true).to_fields_v1();
        assert_eq!(
            f,
            json!({
                "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                "f:spec": {
                    "f:replicas": {},
                    "f:selector": {},
                    "f:template": {
                        "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                        "f:spec": {"f:containers": {"k:{\"name\":\"server\"}": {
                            ".": {},
                            "f:env": {".": {}, "k:{\"name\":\"PORT\"}": {".": {}, "f:name": {}, "f:value": {}}},
                            "f:image": {},
                            "f:name": {},
                            "f:ports": {".": {}, "k:{\"containerPort\":8080,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}, "f:protocol": {}}}
                        }}}
                    }
                }
            })
        );
        // Round trip through the wire form.
        let back = FieldSet::from_fields_v1(&f).unwrap();
        assert_eq!(back.to_fields_v1(), f);
    }

    #[test]
    fn custom_resources_own_lists_whole() {
        let obj = json!({"spec": {"containers": [{"name": "a"}], "tags": {"x": "1"}}});
        let f = fields_of_object(&obj, false).to_fields_v1();
        assert_eq!(
            f,
            json!({"f:spec": {"f:containers": {}, "f:tags": {"f:x": {}}}})
        );
    }

    #[test]
    fn diff_names_only_what_changed() {
        let (c, r) = diff_object(&deployment("web:1", 1), &deployment("web:2", 1), true);
        assert_eq!(
            c.paths(),
            ["f:spec.f:template.f:spec.f:containers.k:{\"name\":\"server\"}.f:image"]
        );
        assert!(r.is_empty());
        let mut old = deployment("web:1", 1);
        old["metadata"]["labels"]["tier"] = json!("fe");
        let (c, r) = diff_object(&old, &deployment("web:1", 1), true);
        assert!(c.is_empty());
        assert_eq!(r.paths(), ["f:metadata.f:labels.f:tier"]);
        // Server-owned metadata is not tracked.
        let mut bumped = deployment("web:1", 1);
        bumped["metadata"]["resourceVersion"] = json!("2");
        assert!(
            diff_object(&deployment("web:1", 1), &bumped, true)
                .0
                .is_empty()
        );
    }

    #[test]
    fn ownership_moves_to_the_last_writer() {
        let created = deployment("web:1", 1);
        let mut mf = ManagedFields::default();
        mf.record_update(
            "kubectl-create",
            None,
            "apps/v1",
            "t0",
            &fields_of_object(&created, true),
            &FieldSet::default(),
        );
        let (c, r) = diff_object(&created, &deployment("web:1", 3), true);
        assert!(mf.record_update("kubectl", Some("scale"), "apps/v1", "t1", &c, &r));
        assert_eq!(mf.entries.len(), 2);
        assert!(
            !mf.entries[0]
                .fields
                .paths()
                .contains(&"f:spec.f:replicas".to_string())
        );
        assert_eq!(mf.entries[1].fields.paths(), ["f:spec.f:replicas"]);
        assert_eq!(mf.entries[1].subresource.as_deref(), Some("scale"));
        // A manager whose every field is taken over disappears.
        let (c, r) = diff_object(&deployment("web:1", 3), &deployment("web:1", 4), true);
        mf.record_update("hpa", None, "apps/v1", "t2", &c, &r);
        assert_eq!(
            mf.entries
                .iter()
                .map(|e| e.manager.as_str())
                .collect::<Vec<_>>(),
            ["kubectl-create", "hpa"]
        );
        // No change, no update.
        assert!(!mf.record_update(
            "x",
            None,
            "apps/v1",
            "t3",
            &FieldSet::default(),
            &FieldSet::default()
        ));
    }

    #[test]
    fn managed_fields_json_round_trip() {
        let mut mf = ManagedFields::default();
        mf.record_update(
            "m",
            Some("status"),
            "v1",
            "2026-01-01T00:00:00Z",
            &fields_of_object(&json!({"status": {"phase": "Active"}}), true),
            &FieldSet::default(),
        );
        let j = mf.to_json();
        assert_eq!(j[0]["fieldsType"], "FieldsV1");
        assert_eq!(j[0]["operation"], "Update");
        assert_eq!(j[0]["subresource"], "status");
        assert_eq!(ManagedFields::from_json(&j).unwrap(), mf);
        assert!(ManagedFields::from_json(&json!([{"fieldsV1": {"bogus": {}}}])).is_err());
    }

    #[test]
    fn incremental_json_matches_a_full_rebuild() {
        let mut mf = ManagedFields::default();
        let mut obj = deployment("web:1", 1);
        mf.record_update(
            "create",
            None,
            "apps/v1",
            "t0",
            &fields_of_object(&obj, true),
            &FieldSet::default(),
        );
        // A series of writes by different managers; some take every field of another.
        let steps: [(&str, Value); 4] = [
            ("scaler", json!({"spec": {"replicas": 2}})),
            ("labeler", json!({"metadata": {"labels": {"team": "a"}}})),
            ("scaler", json!({"spec": {"replicas": 3}})),
            ("labeler", json!({"metadata": {"labels": {"team": null}}})),
        ];
        for (i, (manager, patch)) in steps.iter().enumerate() {
            let mut next = obj.clone();
            crate::patch::merge_patch(&mut next, patch);
            let (c, r) = diff_object(&obj, &next, true);
            mf.record_update(manager, None, "apps/v1", &format!("t{}", i + 1), &c, &r);
            mf.sync();
            assert_eq!(
                Value::Array(mf.json().to_vec()),
                mf.to_json(),
                "after step {i}"
            );
            obj = next;
        }
        assert_eq!(
            mf.entries
                .iter()
                .map(|e| e.manager.as_str())
                .collect::<Vec<_>>(),
            ["create", "scaler"],
            "the labeler's only field was removed"
        );
        // attach/detach move the list in and out of an object without copying.
        let mut o = json!({"metadata": {"name": "x"}});
        mf.attach(&mut o);
        assert_eq!(o["metadata"]["managedFields"], mf.to_json());
        mf.detach(&mut o);
        assert!(o["metadata"].get("managedFields").is_none());
        assert_eq!(mf.json().len(), 2);
    }

    #[test]
    fn finalizers_are_a_set() {
        let (c, r) = diff_object(
            &json!({"metadata": {"finalizers": ["a"]}}),
            &json!({"metadata": {"finalizers": ["a", "b"]}}),
            true,
        );
        assert_eq!(c.paths(), ["f:metadata.f:finalizers.v:\"b\""]);
        assert!(r.is_empty());
    }
}
