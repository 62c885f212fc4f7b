//! List identity: which item of a list is which. One statement, read by
//! everything that pairs, keys or merges list items (docs/architecture.md,
//! "List identity"):
//!
//! - krply's diff pairs the items of an old and a new list by it ([`pair`]), so
//!   that inserting one container does not show every later one as changed;
//! - krply's owners find a list item in managedFields (`k:{"name":"web"}`) by it
//!   ([`item_has_key`]);
//! - krply's reduction keeps what pairing reads of each item ([`identity_members`]);
//! - the simulator merges strategic merge patches and server-side applies by it
//!   ([`merge_key`]) and names list items in managedFields with it ([`list_keys`],
//!   [`item_key`]).
//!
//! [`IDENTITIES`] lists them in the order they are tried. Each names its key
//! fields: the first is required, a second (`protocol`) is part of the key when
//! present. Each also names the lists of the built-in types that the API declares
//! with that key (`patchMergeKey`, `listMapKeys`).
//!
//! Pairing two lists ([`pair`]) does not know which field holds them (a custom
//! resource's lists are paired too): the first identity that every item of both
//! lists has, with no duplicate within either list, wins. The key values must be
//! strings (`name`) or strings or numbers (the others); `protocol` may be any
//! scalar. An item whose identity is new is added, one whose identity is gone is
//! removed. When matched items changed their relative order, the longest run that
//! kept its order stays matched and the moved ones are reported as removed (old
//! place) and added (new place). Any other list is paired by index.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Number, Value};

/// How the items of two lists pair up.
pub enum Pairing {
    /// Item `i` of the old list against item `i` of the new one.
    ByIndex,
    /// By identity.
    ByIdentity(Matching),
}

/// The result of pairing by identity.
pub struct Matching {
    /// For each new item, the index of the old item it is compared with.
    pub old_of_new: Vec<Option<usize>>,
    /// For each old item, whether some new item is compared with it.
    pub old_kept: Vec<bool>,
}

/// One way the items of a list are identified.
#[derive(Debug)]
pub struct Identity {
    /// The key fields: the first is required, a second is part of the key when present.
    pub keys: &'static [&'static str],
    /// `name` must be a string; the others may be numbers too.
    pub strings_only: bool,
    /// The lists of the built-in types the API declares with this key.
    pub declared_on: &'static [&'static str],
}

impl Identity {
    fn field(&self) -> &'static str {
        self.keys[0]
    }

    fn qualifier(&self) -> Option<&'static str> {
        self.keys.get(1).copied()
    }
}

/// Every identity, in the order [`pair`] tries them.
pub const IDENTITIES: [Identity; 8] = [
    Identity {
        keys: &["name"],
        strings_only: true,
        declared_on: &[
            "containers",
            "initContainers",
            "ephemeralContainers",
            "env",
            "volumes",
            "imagePullSecrets",
            "resourceClaims",
        ],
    },
    // Container ports without names.
    Identity {
        keys: &["containerPort", "protocol"],
        strings_only: false,
        declared_on: &["ports"],
    },
    // Service ports without names.
    Identity {
        keys: &["port", "protocol"],
        strings_only: false,
        declared_on: &["ports"],
    },
    // volumeMounts, whose `name` may repeat.
    Identity {
        keys: &["mountPath"],
        strings_only: false,
        declared_on: &["volumeMounts"],
    },
    // Status conditions.
    Identity {
        keys: &["type"],
        strings_only: false,
        declared_on: &["conditions"],
    },
    Identity {
        keys: &["devicePath"],
        strings_only: false,
        declared_on: &["volumeDevices"],
    },
    Identity {
        keys: &["ip"],
        strings_only: false,
        declared_on: &["hostAliases"],
    },
    Identity {
        keys: &["uid"],
        strings_only: false,
        declared_on: &["ownerReferences"],
    },
];

/// The key fields of the list under `field` of a built-in type, judged from one
/// of its items where the field name alone does not tell (a Service's `ports`
/// are keyed by `port`, a container's by `containerPort`); `None` for a list the
/// API declares atomic. An item that lacks every key still names the first: the
/// server refuses it for omitting a key field.
pub fn list_keys(field: &str, item: &Value) -> Option<&'static [&'static str]> {
    let object = item.as_object()?;
    let mut declared = IDENTITIES.iter().filter(|i| i.declared_on.contains(&field));
    let first = declared.clone().next()?;
    let identity = declared
        .find(|i| object.contains_key(i.field()))
        .unwrap_or(first);
    Some(identity.keys)
}

/// The strategic-merge-patch merge key of the list under `field`: the first of
/// its [`list_keys`].
pub fn merge_key(field: &str, item: &Value) -> Option<&'static str> {
    list_keys(field, item).map(|keys| keys[0])
}

/// Lists of scalars that the server treats as sets (managedFields `v:"x"`,
/// strategic merge by value).
pub fn is_set_list(field: &str) -> bool {
    field == "finalizers"
}

/// The managedFields key of one item, `k:` without its prefix: the item's key
/// fields that are present, as compact JSON with sorted keys. `None` when it
/// has none of them.
pub fn item_key(keys: &[&str], item: &Value) -> Option<String> {
    let object = item.as_object()?;
    let mut key = Map::new();
    for k in keys {
        if let Some(v) = object.get(*k) {
            key.insert((*k).to_string(), v.clone());
        }
    }
    if key.is_empty() {
        return None;
    }
    serde_json::to_string(&Value::Object(key)).ok()
}

/// Whether `item` is the one a managedFields key (`k:` without its prefix)
/// names: it has every field of the key, with equal values.
pub fn item_has_key(key: &str, item: &Value) -> bool {
    match serde_json::from_str::<Map<String, Value>>(key) {
        Ok(key) => {
            !key.is_empty()
                && key
                    .iter()
                    .all(|(field, want)| item.get(field) == Some(want))
        }
        Err(_) => false,
    }
}

/// A scalar identity value, compared and hashed without copying.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Atom<'a> {
    Absent,
    Null,
    Bool(bool),
    Number(&'a Number),
    Str(&'a str),
}

impl<'a> Atom<'a> {
    fn of(value: Option<&'a Value>) -> Option<Atom<'a>> {
        Some(match value {
            None => Atom::Absent,
            Some(Value::Null) => Atom::Null,
            Some(Value::Bool(b)) => Atom::Bool(*b),
            Some(Value::Number(n)) => Atom::Number(n),
            Some(Value::String(s)) => Atom::Str(s),
            Some(Value::Array(_) | Value::Object(_)) => return None,
        })
    }
}

type Key<'a> = (Atom<'a>, Atom<'a>);

impl Identity {
    fn key_of<'a>(&self, element: &'a Value) -> Option<Key<'a>> {
        let object = element.as_object()?;
        let primary = match object.get(self.field())? {
            Value::String(s) => Atom::Str(s),
            Value::Number(n) if !self.strings_only => Atom::Number(n),
            _ => return None,
        };
        let qualifier = match self.qualifier() {
            Some(q) => Atom::of(object.get(q))?,
            None => Atom::Absent,
        };
        Some((primary, qualifier))
    }

    fn keys_of<'a>(&self, list: &'a [Value]) -> Option<Vec<Key<'a>>> {
        list.iter().map(|e| self.key_of(e)).collect()
    }
}

/// Every member [`pair`] reads of an element: two lists whose elements keep
/// these members (and nothing else) pair up as the whole lists do.
pub fn identity_members() -> impl Iterator<Item = &'static str> {
    IDENTITIES.iter().flat_map(|i| i.keys.iter().copied())
}

/// Decides how to pair the elements of `old` and `new`.
pub fn pair(old: &[Value], new: &[Value]) -> Pairing {
    for identity in &IDENTITIES {
        let Some(old_keys) = identity.keys_of(old) else {
            continue;
        };
        let Some(new_keys) = identity.keys_of(new) else {
            continue;
        };
        if old_keys == new_keys {
            // Same identities in the same order: index pairing gives the same answer.
            return Pairing::ByIndex;
        }
        let mut old_index = HashMap::with_capacity(old_keys.len());
        if old_keys
            .iter()
            .enumerate()
            .any(|(i, k)| old_index.insert(*k, i).is_some())
        {
            continue;
        }
        let mut seen = HashSet::with_capacity(new_keys.len());
        if !new_keys.iter().all(|k| seen.insert(*k)) {
            continue;
        }
        let matched = new_keys.iter().map(|k| old_index.get(k).copied()).collect();
        return Pairing::ByIdentity(keep_order(matched, old.len()));
    }
    Pairing::ByIndex
}

/// Keeps the longest subsequence of matches whose old indexes increase with the new
/// ones; the other matches become unmatched (reported as removed and added).
fn keep_order(mut old_of_new: Vec<Option<usize>>, old_len: usize) -> Matching {
    let matches: Vec<(usize, usize)> = old_of_new
        .iter()
        .enumerate()
        .filter_map(|(new, old)| old.map(|old| (new, old)))
        .collect();
    if matches.windows(2).any(|w| w[0].1 > w[1].1) {
        let keep = longest_increasing(&matches);
        for (position, &(new, _)) in matches.iter().enumerate() {
            if !keep[position] {
                old_of_new[new] = None;
            }
        }
    }
    let mut old_kept = vec![false; old_len];
    for old in old_of_new.iter().flatten() {
        if let Some(kept) = old_kept.get_mut(*old) {
            *kept = true;
        }
    }
    Matching {
        old_of_new,
        old_kept,
    }
}

/// Marks a longest strictly increasing subsequence of the old indexes in `matches`
/// (patience sorting, O(n log n)).
fn longest_increasing(matches: &[(usize, usize)]) -> Vec<bool> {
    // tails[k]: position in `matches` of the smallest tail of an increasing run of k + 1.
    let mut tails: Vec<usize> = Vec::new();
    let mut previous: Vec<Option<usize>> = vec![None; matches.len()];
    for (position, &(_, old)) in matches.iter().enumerate() {
        let k = tails.partition_point(|&t| matches[t].1 < old);
        previous[position] = k.checked_sub(1).map(|k| tails[k]);
        if k == tails.len() {
            tails.push(position);
        } else {
            tails[k] = position;
        }
    }
    let mut keep = vec![false; matches.len()];
    let mut cursor = tails.last().copied();
    while let Some(position) = cursor {
        keep[position] = true;
        cursor = previous[position];
    }
    keep
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn list(v: Value) -> Vec<Value> {
        match v {
            Value::Array(items) => items,
            _ => panic!("not a list"),
        }
    }

    fn matching(old: Value, new: Value) -> Option<Vec<Option<usize>>> {
        match pair(&list(old), &list(new)) {
            Pairing::ByIndex => None,
            Pairing::ByIdentity(m) => Some(m.old_of_new),
        }
    }

    #[test]
    fn by_name_when_names_are_unique() {
        let old = json!([{"name": "a"}, {"name": "b"}]);
        let new = json!([{"name": "z"}, {"name": "a"}, {"name": "b"}]);
        assert_eq!(matching(old, new), Some(vec![None, Some(0), Some(1)]));
    }

    #[test]
    fn same_identities_in_order_pair_by_index() {
        let old = json!([{"name": "a", "v": 1}, {"name": "b"}]);
        let new = json!([{"name": "a", "v": 2}, {"name": "b"}]);
        assert_eq!(matching(old, new), None);
    }

    #[test]
    fn duplicate_names_fall_back_to_mount_path() {
        let old = json!([
            {"name": "cfg", "mountPath": "/a", "subPath": "a"},
            {"name": "cfg", "mountPath": "/b", "subPath": "b"}
        ]);
        let new = json!([
            {"name": "data", "mountPath": "/data"},
            {"name": "cfg", "mountPath": "/a", "subPath": "a"},
            {"name": "cfg", "mountPath": "/b", "subPath": "b"}
        ]);
        assert_eq!(matching(old, new), Some(vec![None, Some(0), Some(1)]));
    }

    #[test]
    fn container_ports_by_port_and_protocol() {
        let old = json!([
            {"containerPort": 53, "protocol": "UDP"},
            {"containerPort": 53, "protocol": "TCP"}
        ]);
        let new = json!([
            {"containerPort": 8080, "protocol": "TCP"},
            {"containerPort": 53, "protocol": "UDP"},
            {"containerPort": 53, "protocol": "TCP"}
        ]);
        assert_eq!(matching(old, new), Some(vec![None, Some(0), Some(1)]));
    }

    #[test]
    fn service_ports_and_conditions() {
        let old = json!([{"port": 80, "targetPort": 8080}]);
        let new = json!([{"port": 443}, {"port": 80, "targetPort": 8081}]);
        assert_eq!(matching(old, new), Some(vec![None, Some(0)]));
        let old = json!([{"type": "Available"}, {"type": "Progressing"}]);
        let new = json!([{"type": "Progressing"}]);
        assert_eq!(matching(old, new), Some(vec![Some(1)]));
    }

    #[test]
    fn lists_without_identity_pair_by_index() {
        assert_eq!(matching(json!([1, 2]), json!([0, 1, 2])), None);
        assert_eq!(
            matching(json!([{"a": 1}]), json!([{"a": 2}, {"a": 1}])),
            None
        );
        // Some element lacks a name: no identity applies to the whole list.
        assert_eq!(
            matching(json!([{"name": "a"}]), json!([{"x": 1}, {"name": "a"}])),
            None
        );
        // A number is not a name.
        assert_eq!(
            matching(json!([{"name": 1}]), json!([{"name": 2}, {"name": 1}])),
            None
        );
        // Duplicates in the new list and nothing else to go by.
        assert_eq!(
            matching(
                json!([{"name": "a"}]),
                json!([{"name": "a"}, {"name": "a"}])
            ),
            None
        );
    }

    #[test]
    fn moved_elements_are_unmatched() {
        let old = json!([{"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "d"}]);
        let new = json!([{"name": "d"}, {"name": "a"}, {"name": "b"}, {"name": "c"}]);
        assert_eq!(
            matching(old, new),
            Some(vec![None, Some(0), Some(1), Some(2)])
        );
        let old = json!([{"name": "a"}, {"name": "b"}]);
        let new = json!([{"name": "b"}, {"name": "a"}]);
        let m = matching(old, new).unwrap();
        assert_eq!(m.iter().flatten().count(), 1);
    }

    #[test]
    fn keys_of_built_in_lists() {
        assert_eq!(
            list_keys("containers", &json!({"name": "a"})),
            Some(&["name"][..])
        );
        assert_eq!(
            list_keys("ports", &json!({"containerPort": 80})),
            Some(&["containerPort", "protocol"][..])
        );
        assert_eq!(
            list_keys("ports", &json!({"port": 80})),
            Some(&["port", "protocol"][..])
        );
        assert_eq!(list_keys("args", &json!("x")), None);
        // An item that omits its key is still keyed (the server refuses it).
        assert_eq!(
            list_keys("containers", &json!({"image": "x"})),
            Some(&["name"][..])
        );
        assert_eq!(merge_key("ports", &json!({"port": 80})), Some("port"));
        assert_eq!(
            merge_key("ownerReferences", &json!({"uid": "u", "name": "a"})),
            Some("uid")
        );
        assert_eq!(
            item_key(
                &["containerPort", "protocol"],
                &json!({"protocol": "TCP", "containerPort": 8080, "name": "http"})
            )
            .as_deref(),
            Some(r#"{"containerPort":8080,"protocol":"TCP"}"#)
        );
        assert_eq!(item_key(&["name"], &json!({"image": "x"})), None);
    }

    #[test]
    fn an_item_has_the_key_it_is_named_by() {
        let port = json!({"protocol": "TCP", "containerPort": 8080, "name": "http"});
        for identity in &IDENTITIES {
            if let Some(key) = item_key(identity.keys, &port) {
                assert!(item_has_key(&key, &port), "{key}");
            }
        }
        assert!(!item_has_key(r#"{"containerPort":8081}"#, &port));
        assert!(!item_has_key("{}", &port));
        assert!(!item_has_key("{bad", &port));
    }

    #[test]
    fn lists_the_api_declares_pair_by_their_own_key() {
        // Every list a built-in type keys pairs by that key when nothing before it
        // in the order applies.
        for identity in &IDENTITIES {
            let item = |v: i64| {
                let mut m = Map::new();
                for k in identity.keys {
                    m.insert((*k).to_string(), json!(format!("{k}-{v}")));
                }
                Value::Object(m)
            };
            for field in identity.declared_on {
                assert_eq!(list_keys(field, &item(1)), Some(identity.keys), "{field}");
            }
            let old = json!([item(1), item(2)]);
            let new = json!([item(0), item(1), item(2)]);
            assert_eq!(
                matching(old, new),
                Some(vec![None, Some(0), Some(1)]),
                "{:?}",
                identity.keys
            );
        }
    }

    #[test]
    fn longest_increasing_finds_a_longest_run() {
        let matches: Vec<(usize, usize)> = [3, 1, 4, 1, 5, 9, 2, 6]
            .iter()
            .enumerate()
            .map(|(i, &v)| (i, v))
            .collect();
        let keep = longest_increasing(&matches);
        let kept: Vec<usize> = matches
            .iter()
            .zip(&keep)
            .filter(|(_, k)| **k)
            .map(|(m, _)| m.1)
            .collect();
        assert_eq!(kept.len(), 4);
        assert!(kept.windows(2).all(|w| w[0] < w[1]));
    }
}
