//! Which element of the old list corresponds to which element of the new one.
//!
//! Lists of objects with an identity are matched by it, so that inserting one item does
//! not show every later item as changed. The identities, tried in this order; the first
//! one that every element of both lists has, with no duplicate within either list, wins:
//!
//! 1. `name` (a string): containers, initContainers, env, ports, volumes, imagePullSecrets...
//! 2. `containerPort` (+ `protocol` when present): container ports without names;
//! 3. `port` (+ `protocol` when present): service ports without names;
//! 4. `mountPath`: volumeMounts (whose `name` may repeat);
//! 5. `type`: status conditions.
//!
//! The identity values (`containerPort`, `port`, `mountPath`, `type`) must be strings or
//! numbers; `protocol` any scalar. Matched elements are compared field by field. An element
//! whose identity is new is added, one whose identity is gone is removed. When matched
//! elements changed their relative order, the longest run that kept its order stays
//! matched and the moved ones are reported as removed (old place) and added (new place).
//!
//! Any other list is matched by index: element `i` against element `i`, and the extra
//! elements of the longer list are added or removed.

use std::collections::{HashMap, HashSet};

use serde_json::{Number, Value};

/// How the elements of two lists pair up.
pub(crate) enum Pairing {
    /// Element `i` of the old list against element `i` of the new one.
    ByIndex,
    /// By identity.
    ByIdentity(Matching),
}

/// The result of matching by identity.
pub(crate) struct Matching {
    /// For each new element, the index of the old element it is compared with.
    pub(crate) old_of_new: Vec<Option<usize>>,
    /// For each old element, whether some new element is compared with it.
    pub(crate) old_kept: Vec<bool>,
}

struct Identity {
    field: &'static str,
    /// `name` must be a string; the others may be numbers too.
    strings_only: bool,
    /// A second field that is part of the identity when present.
    qualifier: Option<&'static str>,
}

const IDENTITIES: [Identity; 5] = [
    Identity {
        field: "name",
        strings_only: true,
        qualifier: None,
    },
    Identity {
        field: "containerPort",
        strings_only: false,
        qualifier: Some("protocol"),
    },
    Identity {
        field: "port",
        strings_only: false,
        qualifier: Some("protocol"),
    },
    Identity {
        field: "mountPath",
        strings_only: false,
        qualifier: None,
    },
    Identity {
        field: "type",
        strings_only: false,
        qualifier: None,
    },
];

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
        let primary = match object.get(self.field)? {
            Value::String(s) => Atom::Str(s),
            Value::Number(n) if !self.strings_only => Atom::Number(n),
            _ => return None,
        };
        let qualifier = match self.qualifier {
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
pub(crate) fn identity_members() -> impl Iterator<Item = &'static str> {
    IDENTITIES
        .iter()
        .flat_map(|i| std::iter::once(i.field).chain(i.qualifier))
}

/// Decides how to pair the elements of `old` and `new`.
pub(crate) fn pair(old: &[Value], new: &[Value]) -> Pairing {
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
