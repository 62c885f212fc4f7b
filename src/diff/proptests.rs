//! Property tests: a diff applied to the old object gives the new one (modulo noise),
//! an object has no diff with itself, and paths survive rendering and parsing.

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::*;
use krply_apimachinery::lists;

const KEYS: [&str; 12] = [
    "a",
    "b",
    "name",
    "status",
    "metadata",
    "annotations",
    "uid",
    "labels",
    "deployment.kubernetes.io/revision",
    "x.y",
    "",
    "é",
];
const NAMES: [&str; 4] = ["p", "q", "r", "s"];

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-2i64..3).prop_map(Value::from),
        Just(json!(1.5)),
        Just(json!(1_000_000)),
        prop::sample::select(vec!["", "a", "b", "x.y", "日本"]).prop_map(Value::from),
    ]
}

fn key() -> impl Strategy<Value = String> {
    prop::sample::select(KEYS.to_vec()).prop_map(str::to_owned)
}

/// Random JSON with small key and value domains, so two trees overlap, including lists
/// of uniquely named objects in any order.
pub(crate) fn tree() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 48, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(key(), inner.clone(), 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            named_list(inner),
        ]
    })
}

fn named_list(inner: impl Strategy<Value = Value> + Clone) -> impl Strategy<Value = Value> {
    let item = prop::collection::btree_map(key(), inner, 0..3);
    prop::collection::btree_map(prop::sample::select(NAMES.to_vec()), item, 0..4)
        .prop_map(|items| {
            items
                .into_iter()
                .map(|(name, mut fields)| {
                    fields.insert("name".to_owned(), Value::from(name));
                    Value::Object(fields.into_iter().collect())
                })
                .collect::<Vec<_>>()
        })
        .prop_shuffle()
        .prop_map(Value::Array)
}

/// Kubernetes-shaped objects: noise in metadata and annotations, status, containers.
fn object() -> impl Strategy<Value = Value> {
    let noise = prop::option::of(prop::sample::select(vec!["1", "2"]));
    let annotations = prop::collection::btree_map(
        prop::sample::select(vec![
            "deployment.kubernetes.io/revision",
            "kubectl.kubernetes.io/last-applied-configuration",
            "team",
        ]),
        prop::sample::select(vec!["1", "2"]),
        0..3,
    );
    (
        noise.clone(),
        noise,
        prop::option::of(annotations),
        prop::option::of(tree()),
        tree(),
        constraints(),
    )
        .prop_map(|(uid, rv, annotations, status, spec, constraints)| {
            let mut metadata = Map::new();
            metadata.insert("name".into(), json!("web"));
            if let Some(uid) = uid {
                metadata.insert("uid".into(), json!(uid));
            }
            if let Some(rv) = rv {
                metadata.insert("resourceVersion".into(), json!(rv));
            }
            if let Some(a) = annotations {
                metadata.insert("annotations".into(), json!(a));
            }
            let mut obj = Map::new();
            obj.insert("metadata".into(), Value::Object(metadata));
            obj.insert(
                "spec".into(),
                json!({"containers": spec, "topologySpreadConstraints": constraints}),
            );
            if let Some(status) = status {
                obj.insert("status".into(), status);
            }
            Value::Object(obj)
        })
}

/// A list whose items are told apart by a member pairing does not read
/// (`topologyKey`), as server-side apply keys topology spread constraints.
fn constraints() -> impl Strategy<Value = Value> {
    let keys =
        prop::collection::btree_set(prop::sample::select(vec!["zone", "host", "rack"]), 1..4);
    (keys, prop::collection::vec(leaf(), 3)).prop_map(|(keys, skews)| {
        keys.into_iter()
            .zip(skews)
            .map(|(key, skew)| {
                json!({"topologyKey": key, "whenUnsatisfiable": "DoNotSchedule", "maxSkew": skew})
            })
            .collect()
    })
}

/// A tiny deterministic generator for mutations.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }

    fn leaf(&mut self) -> Value {
        match self.below(5) {
            0 => Value::Null,
            1 => json!(self.below(3) == 0),
            2 => json!(self.below(4)),
            3 => json!(["a", "b", "x.y"][self.below(3) as usize]),
            _ => json!({"k": self.below(2)}),
        }
    }
}

fn is_named_list(items: &[Value]) -> bool {
    items
        .iter()
        .all(|i| i.get("name").is_some_and(Value::is_string))
}

/// `value` with random edits: changed, removed and added keys and elements, named items
/// inserted, removed and moved.
fn mutate(value: &Value, rng: &mut Rng) -> Value {
    match value {
        Value::Object(map) => {
            let mut out = Map::new();
            for (k, v) in map {
                match rng.below(10) {
                    0 => {}
                    1 => {
                        out.insert(k.clone(), rng.leaf());
                    }
                    2..=5 => {
                        out.insert(k.clone(), mutate(v, rng));
                    }
                    _ => {
                        out.insert(k.clone(), v.clone());
                    }
                }
            }
            if rng.below(4) == 0 {
                out.insert(
                    KEYS[rng.below(KEYS.len() as u64) as usize].to_owned(),
                    rng.leaf(),
                );
            }
            Value::Object(out)
        }
        Value::Array(items) => {
            let mut out: Vec<Value> = items
                .iter()
                .map(|v| {
                    if rng.below(3) == 0 {
                        mutate(v, rng)
                    } else {
                        v.clone()
                    }
                })
                .collect();
            let named = !items.is_empty() && is_named_list(items);
            if !out.is_empty() && rng.below(4) == 0 {
                let at = rng.below(out.len() as u64) as usize;
                out.remove(at);
            }
            if rng.below(4) == 0 {
                let at = rng.below(out.len() as u64 + 1) as usize;
                let item = if named {
                    json!({"name": format!("n{}", rng.below(1_000_000)), "v": rng.leaf()})
                } else {
                    rng.leaf()
                };
                out.insert(at, item);
            }
            if named && out.len() > 1 && rng.below(4) == 0 {
                let from = rng.below(out.len() as u64) as usize;
                let item = out.remove(from);
                let to = rng.below(out.len() as u64 + 1) as usize;
                out.insert(to, item);
            }
            Value::Array(out)
        }
        other if rng.below(4) == 0 => {
            let _ = other;
            rng.leaf()
        }
        other => other.clone(),
    }
}

/// `value` with managedFields split between two managers, `m0` and `m1`: each
/// member or list item goes to one of them (`rng` decides), down to the leaves.
/// A list of objects that all have a scalar member with unique values is keyed
/// by it (`k:{...}`), as server-side apply keys associative lists; any other
/// list is owned whole.
fn with_managers(value: &Value, rng: &mut Rng) -> Value {
    let mut out = value.clone();
    let Some(Value::Object(metadata)) = out.get_mut("metadata") else {
        return out;
    };
    let mut sets = [Map::new(), Map::new()];
    if let Value::Object(members) = value {
        claim_members(members, &mut sets, rng);
    }
    let entries: Vec<Value> = sets
        .into_iter()
        .enumerate()
        .map(|(i, set)| {
            json!({"manager": format!("m{i}"), "operation": "Update",
                   "fieldsType": "FieldsV1", "fieldsV1": set})
        })
        .collect();
    metadata.insert("managedFields".into(), Value::Array(entries));
    out
}

fn claim_members(members: &Map<String, Value>, sets: &mut [Map<String, Value>; 2], rng: &mut Rng) {
    for (k, v) in members {
        claim(format!("f:{k}"), v, sets, rng);
    }
}

/// Gives the field `key` (holding `value`) to the managers in `sets`.
fn claim(key: String, value: &Value, sets: &mut [Map<String, Value>; 2], rng: &mut Rng) {
    let mut children = [Map::new(), Map::new()];
    let keyed = value
        .as_array()
        .and_then(|items| Some((items, merge_key(items)?)));
    match (value, keyed) {
        (Value::Object(m), _) if !m.is_empty() => claim_members(m, &mut children, rng),
        (_, Some((items, field))) => {
            for item in items {
                let id = json!({field: item[field]});
                let mut inner = [Map::new(), Map::new()];
                if let Value::Object(m) = item {
                    claim_members(m, &mut inner, rng);
                }
                inner[rng.below(2) as usize].insert(".".into(), json!({}));
                for (child, inner) in children.iter_mut().zip(inner) {
                    if !inner.is_empty() {
                        child.insert(format!("k:{id}"), Value::Object(inner));
                    }
                }
            }
        }
        _ => {
            sets[rng.below(2) as usize].insert(key, json!({}));
            return;
        }
    }
    for (set, child) in sets.iter_mut().zip(children) {
        if !child.is_empty() {
            set.insert(key.clone(), Value::Object(child));
        }
    }
}

/// A member every item of `items` has, as a scalar with values unique in the
/// list: its merge key. One that pairing does not read comes first, as
/// `topologyKey` does.
fn merge_key(items: &[Value]) -> Option<&str> {
    let first = items.first()?.as_object()?;
    let identity: Vec<&str> = lists::identity_members().collect();
    let mut keys: Vec<&str> = first.keys().map(String::as_str).collect();
    keys.sort_by_key(|k| identity.contains(k));
    keys.into_iter().find(|k| {
        let mut seen = std::collections::HashSet::new();
        items.iter().all(|i| {
            i.get(*k)
                .is_some_and(|v| !v.is_object() && !v.is_array() && seen.insert(v.to_string()))
        })
    })
}

/// Applies reported changes to `before`. Changes are applied shallowest first; within a
/// depth, list removals (by old index, highest first), then list additions (by new
/// index, lowest first), then the rest. This is how callers may replay a diff too.
fn apply(before: &Value, changes: &[FieldChange]) -> Result<Value, String> {
    let mut doc = before.clone();
    let mut ordered: Vec<&FieldChange> = changes.iter().collect();
    ordered.sort_by_key(|c| {
        let last = c.path.segments().last();
        let (rank, index) = match (last, &c.before, &c.after) {
            (Some(PathSegment::Index(i)), Some(_), None) => (0, usize::MAX - i),
            (Some(PathSegment::Index(i)), None, Some(_)) => (1, *i),
            _ => (2, 0),
        };
        (c.path.len(), rank, index)
    });
    for change in ordered {
        let segments = change.path.segments();
        let Some((last, parents)) = segments.split_last() else {
            doc = change.after.clone().unwrap_or(Value::Null);
            continue;
        };
        let mut parent = &mut doc;
        for seg in parents {
            parent = match seg {
                PathSegment::Key(k) => parent.get_mut(k.as_str()),
                PathSegment::Index(i) => parent.get_mut(*i),
            }
            .ok_or_else(|| format!("no parent for {}", change.path))?;
        }
        match (last, parent, &change.after) {
            (PathSegment::Key(k), Value::Object(m), Some(v)) => {
                m.insert(k.clone(), v.clone());
            }
            (PathSegment::Key(k), Value::Object(m), None) => {
                m.remove(k)
                    .ok_or_else(|| format!("nothing to remove at {}", change.path))?;
            }
            (PathSegment::Index(i), Value::Array(l), after) => match (&change.before, after) {
                (Some(_), Some(v)) if *i < l.len() => l[*i] = v.clone(),
                (None, Some(v)) if *i <= l.len() => l.insert(*i, v.clone()),
                (Some(_), None) if *i < l.len() => {
                    l.remove(*i);
                }
                _ => return Err(format!("bad index at {}", change.path)),
            },
            _ => return Err(format!("type mismatch at {}", change.path)),
        }
    }
    Ok(doc)
}

/// `value` without noise, and without `metadata.annotations` or `metadata` when they are
/// left empty: what the differ promises to preserve.
fn without_noise(value: &Value, opts: &DiffOptions) -> Value {
    let mut v = value.clone();
    let Some(root) = v.as_object_mut() else {
        return v;
    };
    if !opts.include_status {
        root.remove("status");
    }
    if let Some(Value::Object(meta)) = root.get_mut("metadata") {
        for k in [
            "uid",
            "resourceVersion",
            "generation",
            "creationTimestamp",
            "managedFields",
            "deletionTimestamp",
            "ownerReferences",
            "selfLink",
        ] {
            meta.remove(k);
        }
        if let Some(Value::Object(ann)) = meta.get_mut("annotations") {
            ann.remove(LAST_APPLIED_ANNOTATION);
            ann.remove(REVISION_ANNOTATION);
            if ann.is_empty() {
                meta.remove("annotations");
            }
        }
        if meta.is_empty() {
            root.remove("metadata");
        }
    }
    v
}

fn check_round_trip(
    before: &Value,
    after: &Value,
    opts: &DiffOptions,
) -> Result<(), TestCaseError> {
    let changes = diff_objects(before, after, opts);
    for c in &changes {
        prop_assert!(!is_noise(&c.path, opts), "noise reported: {}", c.path);
        prop_assert!(c.before.is_some() || c.after.is_some());
        prop_assert!(c.before != c.after, "empty change at {}", c.path);
    }
    let applied = apply(before, &changes).map_err(TestCaseError::fail)?;
    prop_assert_eq!(
        without_noise(&applied, opts),
        without_noise(after, opts),
        "changes: {:#?}",
        changes
    );
    let paths: Vec<String> = changes.iter().map(|c| c.path.to_string()).collect();
    prop_assert_eq!(changed_paths(before, after, opts), paths);
    Ok(())
}

fn segment() -> impl Strategy<Value = PathSegment> {
    prop_oneof![
        any::<usize>().prop_map(PathSegment::Index),
        (0usize..100).prop_map(PathSegment::Index),
        key().prop_map(PathSegment::Key),
        "[a-zA-Z_][a-zA-Z0-9_-]{0,8}".prop_map(PathSegment::Key),
        any::<String>().prop_map(PathSegment::Key),
        "[\\[\\]\". \\\\/0-9a-z\u{0}-\u{1f}]{0,6}".prop_map(PathSegment::Key),
    ]
}

/// A JSON object at the root, of random trees: `metadata`, `annotations`,
/// `status` and the other noise names come up among its keys.
fn root() -> impl Strategy<Value = Value> {
    prop::collection::btree_map(key(), tree(), 0..4)
        .prop_map(|m| Value::Object(m.into_iter().collect()))
}

/// `value` with every object's members in another order.
fn shuffled(value: &Value, rng: &mut Rng) -> Value {
    match value {
        Value::Object(map) => {
            let mut members: Vec<_> = map
                .iter()
                .map(|(k, v)| (k.clone(), shuffled(v, rng)))
                .collect();
            for i in (1..members.len()).rev() {
                members.swap(i, rng.below(i as u64 + 1) as usize);
            }
            Value::Object(members.into_iter().collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(|v| shuffled(v, rng)).collect()),
        v => v.clone(),
    }
}

/// `value`'s JSON text, with its members in another order and every `b` (only
/// ever inside a string: no literal has one) written as an escape.
fn rewritten(value: &Value, rng: &mut Rng) -> String {
    shuffled(value, rng).to_string().replace('b', "\\u0062")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn reducing_first_changes_nothing(before in tree(), after in tree(), b in object(), a in object(), include_status: bool) {
        let opts = DiffOptions { include_status };
        for (before, after) in [(&before, &after), (&b, &a)] {
            let (rb, ra) = reduce_pair(&before.to_string(), &after.to_string(), &opts, &[]).unwrap();
            prop_assert_eq!(diff_objects(&rb, &ra, &opts), diff_objects(before, after, &opts));
        }
    }

    #[test]
    fn reducing_a_mutated_tree_changes_nothing(before in tree(), o in object(), seed in 1u64.., include_status: bool) {
        // Mutations keep most of a tree, so lists pair up and are reduced item
        // by item.
        let opts = DiffOptions { include_status };
        for before in [&before, &o] {
            let after = mutate(before, &mut Rng(seed));
            let (rb, ra) = reduce_pair(&before.to_string(), &after.to_string(), &opts, &[]).unwrap();
            prop_assert_eq!(diff_objects(&rb, &ra, &opts), diff_objects(before, &after, &opts));
        }
    }

    #[test]
    fn owners_of_reduced_changes_are_the_owners_of_full_ones(before in tree(), o in object(), seed in 1u64.., include_status: bool) {
        let opts = DiffOptions { include_status };
        let mut rng = Rng(seed);
        for before in [&before, &o] {
            let after = with_managers(&mutate(before, &mut rng), &mut rng);
            let before = with_managers(before, &mut rng);
            let reduced = owned_changes(&before.to_string(), &after.to_string(), &opts, &[]).unwrap();
            let full: Vec<_> = diff_objects(&before, &after, &opts)
                .into_iter()
                .map(|c| {
                    let owner = if c.after.is_some() { &after } else { &before };
                    let manager = field_manager(owner, &c.path);
                    (c, manager)
                })
                .collect();
            prop_assert_eq!(reduced, full);
        }
    }

    #[test]
    fn equal_digests_are_an_empty_default_diff(a in object(), b in object(), t in root(), u in root(), seed in 1u64..) {
        // Both ways: a different digest is always a change (writers mark it
        // so, and `browse` counts it without a comparison), an equal one is
        // none (the status-only mark).
        let opts = DiffOptions::default();
        let mut rng = Rng(seed);
        let (ma, mt) = (mutate(&a, &mut rng), mutate(&t, &mut rng));
        for (x, y) in [(&a, &b), (&a, &ma), (&t, &u), (&t, &mt), (&a, &t)] {
            let (dx, dy) = (compared_digest(x.to_string().as_bytes()), compared_digest(y.to_string().as_bytes()));
            if let (Some(dx), Some(dy)) = (dx, dy) {
                prop_assert_eq!(dx == dy, diff_objects(x, y, &opts).is_empty(), "{} against {}", x, y);
            }
        }
        // Written otherwise, the same version has the same digest.
        for x in [&a, &ma, &t, &mt] {
            let digest = compared_digest(x.to_string().as_bytes());
            prop_assert_eq!(digest, compared_digest(rewritten(x, &mut rng).as_bytes()), "{}", x);
        }
    }

    #[test]
    fn diff_with_itself_is_empty(v in tree(), o in object()) {
        prop_assert!(diff_objects(&v, &v, &DiffOptions::default()).is_empty());
        let all = DiffOptions { include_status: true };
        prop_assert!(diff_objects(&o, &o, &all).is_empty());
        prop_assert!(changed_paths(&o, &o, &DiffOptions::default()).is_empty());
    }

    #[test]
    fn changes_rebuild_the_new_tree(before in tree(), after in tree(), include_status: bool) {
        check_round_trip(&before, &after, &DiffOptions { include_status })?;
    }

    #[test]
    fn changes_rebuild_a_mutated_tree(before in tree(), seed in 1u64.., include_status: bool) {
        let after = mutate(&before, &mut Rng(seed));
        check_round_trip(&before, &after, &DiffOptions { include_status })?;
    }

    #[test]
    fn changes_rebuild_kubernetes_objects(before in object(), after in object(), seed in 1u64.., include_status: bool) {
        let opts = DiffOptions { include_status };
        check_round_trip(&before, &after, &opts)?;
        let mutated = mutate(&before, &mut Rng(seed));
        check_round_trip(&before, &mutated, &opts)?;
    }

    #[test]
    fn path_display_parse_round_trip(segments in prop::collection::vec(segment(), 0..6)) {
        let path = FieldPath::new(segments);
        let text = path.to_string();
        prop_assert_eq!(parse_path(&text), Ok(path.clone()), "{}", text);
        prop_assert!(!text.contains('\n'));
    }

    #[test]
    fn parse_path_never_panics(s in "\\PC{0,30}", t in "[\\[\\]\"a.0-9\\\\]{0,12}") {
        let _ = parse_path(&s);
        if let Ok(p) = parse_path(&t) {
            // Whatever parses renders to something that parses to the same path.
            prop_assert_eq!(parse_path(&p.to_string()), Ok(p));
        }
    }
}
