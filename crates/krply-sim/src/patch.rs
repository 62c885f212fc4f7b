//! Patches: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and an
//! approximation of strategic merge patch.
//!
//! Strategic merge patch is approximated: it behaves as a JSON merge patch,
//! except that lists of named items (containers, env, volumes, volumeMounts,
//! ports, ... see [`super::keyed_lists`]) are merged item by item on their
//! merge key, `finalizers` merge as a set, and the directives `$patch`
//! (`delete`, `replace`, `merge`), `$deleteFromPrimitiveList/<field>`,
//! `$setElementOrder/<field>` and `$retainKeys` are honoured. The server's real
//! implementation reads patch strategies from the Go types; this one knows
//! them by field name only.

use serde_json::{Map, Value};

use super::keyed_lists;

/// RFC 7386: objects merge recursively, `null` deletes, anything else replaces.
pub(crate) fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(t) = target else { return };
    for (k, v) in p {
        if v.is_null() {
            t.remove(k);
        } else {
            merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

/// RFC 6902 JSON patch. Errors are the messages of the 422/400 the server answers.
pub(crate) fn json_patch(target: &Value, ops: &Value) -> Result<Value, String> {
    let Value::Array(ops) = ops else {
        return Err("json: cannot unmarshal object into Go value of type jsonpatch.Patch".into());
    };
    let mut doc = target.clone();
    for op in ops {
        let name = op.get("op").and_then(Value::as_str).unwrap_or_default();
        let path = op
            .get("path")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("operation {name:?} is missing path"))?;
        match name {
            "add" => {
                let v = op
                    .get("value")
                    .ok_or("add operation does not apply: doc is missing value")?;
                add(&mut doc, path, v.clone())?;
            }
            "remove" => {
                remove(&mut doc, path)?;
            }
            "replace" => {
                let v = op
                    .get("value")
                    .ok_or("replace operation does not apply: doc is missing value")?;
                let slot = pointer_mut(&mut doc, path).ok_or_else(|| {
                    format!("replace operation does not apply: doc is missing key: {path}")
                })?;
                *slot = v.clone();
            }
            "move" | "copy" => {
                let from = op
                    .get("from")
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("{name} operation is missing from"))?;
                let v = if name == "move" {
                    if path.starts_with(&format!("{from}/")) {
                        return Err(format!(
                            "move operation does not apply: cannot move {from} into its own child"
                        ));
                    }
                    remove(&mut doc, from)?
                } else {
                    doc.pointer(&pointer(from)?).cloned().ok_or_else(|| {
                        format!("copy operation does not apply: doc is missing from path: {from}")
                    })?
                };
                add(&mut doc, path, v)?;
            }
            "test" => {
                let v = op.get("value").unwrap_or(&Value::Null);
                if doc.pointer(&pointer(path)?) != Some(v) {
                    return Err(format!("testing value {path} failed: test failed"));
                }
            }
            other => return Err(format!("Unexpected kind: {other}")),
        }
    }
    Ok(doc)
}

/// Checks a JSON pointer and returns it unchanged (serde_json resolves `~0`, `~1`).
fn pointer(path: &str) -> Result<String, String> {
    if path.is_empty() || path.starts_with('/') {
        Ok(path.to_string())
    } else {
        Err(format!(
            "JSON pointer must be empty or start with a \"/\": {path}"
        ))
    }
}

fn unescape_token(t: &str) -> String {
    t.replace("~1", "/").replace("~0", "~")
}

fn split_parent(path: &str) -> Result<(String, String), String> {
    let path = pointer(path)?;
    let Some(i) = path.rfind('/') else {
        return Err("cannot operate on the document root".into());
    };
    Ok((path[..i].to_string(), unescape_token(&path[i + 1..])))
}

fn pointer_mut<'a>(doc: &'a mut Value, path: &str) -> Option<&'a mut Value> {
    doc.pointer_mut(path)
}

fn add(doc: &mut Value, path: &str, value: Value) -> Result<(), String> {
    if path.is_empty() {
        *doc = value;
        return Ok(());
    }
    let (parent, last) = split_parent(path)?;
    let parent_v = pointer_mut(doc, &parent)
        .ok_or_else(|| format!("add operation does not apply: doc is missing path: \"{path}\""))?;
    match parent_v {
        Value::Object(m) => {
            m.insert(last, value);
            Ok(())
        }
        Value::Array(a) => {
            let idx = if last == "-" {
                a.len()
            } else {
                last.parse::<usize>().map_err(|_| {
                    format!("add operation does not apply: invalid array index {last}")
                })?
            };
            if idx > a.len() {
                return Err(format!(
                    "add operation does not apply: index out of bounds: {idx}"
                ));
            }
            a.insert(idx, value);
            Ok(())
        }
        _ => Err(format!(
            "add operation does not apply: doc is missing path: \"{path}\""
        )),
    }
}

fn remove(doc: &mut Value, path: &str) -> Result<Value, String> {
    let (parent, last) = split_parent(path)?;
    let missing = || format!("remove operation does not apply: doc is missing path: \"{path}\"");
    match pointer_mut(doc, &parent).ok_or_else(missing)? {
        Value::Object(m) => m.remove(&last).ok_or_else(missing),
        Value::Array(a) => {
            let idx = last.parse::<usize>().map_err(|_| missing())?;
            if idx >= a.len() {
                return Err(missing());
            }
            Ok(a.remove(idx))
        }
        _ => Err(missing()),
    }
}

/// Strategic merge patch (see the module documentation for what is approximated).
pub(crate) fn strategic_merge(target: &mut Value, patch: &Value) -> Result<(), String> {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return Ok(());
    };
    if let Some(Value::String(d)) = p.get("$patch") {
        match d.as_str() {
            "replace" => {
                let mut replaced = p.clone();
                replaced.remove("$patch");
                *target = Value::Object(replaced);
                return Ok(());
            }
            "delete" => {
                *target = Value::Object(Map::new());
                return Ok(());
            }
            "merge" => {}
            other => return Err(format!("unknown patch type: {other}")),
        }
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(t) = target else {
        return Ok(());
    };
    for (k, v) in p {
        if k == "$patch" || k == "$retainKeys" || k.starts_with("$setElementOrder/") {
            continue;
        }
        if let Some(field) = k.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(list)), Value::Array(del)) = (t.get_mut(field), v) {
                list.retain(|x| !del.contains(x));
            }
            continue;
        }
        if v.is_null() {
            t.remove(k);
            continue;
        }
        let slot = t.entry(k.clone()).or_insert(Value::Null);
        match (slot, v) {
            (Value::Array(cur), Value::Array(items)) => merge_list(k, cur, items)?,
            (slot, Value::Array(items)) => {
                *slot = Value::Array(strip_list_directives(items));
            }
            (slot, v @ Value::Object(_)) => strategic_merge(slot, v)?,
            (slot, v) => *slot = v.clone(),
        }
    }
    Ok(())
}

fn strip_list_directives(items: &[Value]) -> Vec<Value> {
    items
        .iter()
        .filter(|i| i.get("$patch").is_none())
        .cloned()
        .collect()
}

fn merge_list(field: &str, cur: &mut Vec<Value>, items: &[Value]) -> Result<(), String> {
    if keyed_lists::is_set_list(field) {
        for i in items {
            if !cur.contains(i) {
                cur.push(i.clone());
            }
        }
        return Ok(());
    }
    if items
        .iter()
        .any(|i| i.get("$patch").and_then(Value::as_str) == Some("replace"))
    {
        *cur = strip_list_directives(items);
        return Ok(());
    }
    let Some(key) = items.first().and_then(|i| keyed_lists::merge_key(field, i)) else {
        *cur = items.to_vec();
        return Ok(());
    };
    for item in items {
        let Some(k) = item.get(key) else {
            return Err(format!(
                "map: {item} does not contain declared merge key: {key}"
            ));
        };
        let pos = cur.iter().position(|c| c.get(key) == Some(k));
        let delete = item.get("$patch").and_then(Value::as_str) == Some("delete");
        match (pos, delete) {
            (Some(i), true) => {
                cur.remove(i);
            }
            (None, true) => {}
            (Some(i), false) => strategic_merge(&mut cur[i], item)?,
            (None, false) => {
                let mut fresh = Value::Object(Map::new());
                strategic_merge(&mut fresh, item)?;
                cur.push(fresh);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_patch_rfc7386_examples() {
        // The examples of RFC 7386 appendix A.
        let cases = [
            (json!({"a":"b"}), json!({"a":"c"}), json!({"a":"c"})),
            (json!({"a":"b"}), json!({"b":"c"}), json!({"a":"b","b":"c"})),
            (json!({"a":"b"}), json!({"a":null}), json!({})),
            (
                json!({"a":"b","b":"c"}),
                json!({"a":null}),
                json!({"b":"c"}),
            ),
            (json!({"a":["b"]}), json!({"a":"c"}), json!({"a":"c"})),
            (json!({"a":"c"}), json!({"a":["b"]}), json!({"a":["b"]})),
            (
                json!({"a":{"b":"c"}}),
                json!({"a":{"b":"d","c":null}}),
                json!({"a":{"b":"d"}}),
            ),
            (json!({"a":[{"b":"c"}]}), json!({"a":[1]}), json!({"a":[1]})),
            (json!(["a", "b"]), json!(["c", "d"]), json!(["c", "d"])),
            (json!({"a":"b"}), json!(["c"]), json!(["c"])),
            (json!({"e":null}), json!({"a":1}), json!({"e":null,"a":1})),
            (json!([1, 2]), json!({"a":"b","c":null}), json!({"a":"b"})),
            (
                json!({}),
                json!({"a":{"bb":{"ccc":null}}}),
                json!({"a":{"bb":{}}}),
            ),
        ];
        for (target, patch, want) in cases {
            let mut t = target.clone();
            merge_patch(&mut t, &patch);
            assert_eq!(t, want, "{target} + {patch}");
        }
    }

    #[test]
    fn json_patch_operations() {
        let doc = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"list": [1, 2]}});
        let out = json_patch(
            &doc,
            &json!([
                {"op": "test", "path": "/metadata/labels/a", "value": "1"},
                {"op": "add", "path": "/metadata/labels/b", "value": "2"},
                {"op": "replace", "path": "/metadata/labels/a", "value": "3"},
                {"op": "add", "path": "/spec/list/-", "value": 3},
                {"op": "add", "path": "/spec/list/0", "value": 0},
                {"op": "remove", "path": "/spec/list/1"},
                {"op": "copy", "from": "/metadata/labels/b", "path": "/metadata/labels/c"},
                {"op": "move", "from": "/metadata/labels/c", "path": "/metadata/labels/d"},
            ]),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"metadata": {"labels": {"a": "3", "b": "2", "d": "2"}}, "spec": {"list": [0, 2, 3]}})
        );
        let esc = json_patch(
            &json!({"metadata": {"annotations": {}}}),
            &json!([{"op": "add", "path": "/metadata/annotations/example.com~1x", "value": "v"}]),
        )
        .unwrap();
        assert_eq!(esc["metadata"]["annotations"]["example.com/x"], "v");
    }

    #[test]
    fn json_patch_failures() {
        let doc = json!({"a": 1, "l": [1]});
        assert!(json_patch(&doc, &json!([{"op": "test", "path": "/a", "value": 2}])).is_err());
        assert!(json_patch(&doc, &json!([{"op": "remove", "path": "/b"}])).is_err());
        assert!(json_patch(&doc, &json!([{"op": "replace", "path": "/b", "value": 1}])).is_err());
        assert!(json_patch(&doc, &json!([{"op": "add", "path": "/x/y", "value": 1}])).is_err());
        assert!(json_patch(&doc, &json!([{"op": "add", "path": "/l/5", "value": 1}])).is_err());
        assert!(json_patch(&doc, &json!([{"op": "frob", "path": "/a"}])).is_err());
        assert!(json_patch(&doc, &json!({"op": "add"})).is_err());
        // A failed patch leaves the original untouched (it works on a copy).
        assert_eq!(doc, json!({"a": 1, "l": [1]}));
    }

    #[test]
    fn strategic_merges_named_lists() {
        let mut d = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "app", "image": "app:1", "env": [{"name": "A", "value": "1"}]},
            {"name": "side", "image": "side:1"}
        ]}}}});
        strategic_merge(
            &mut d,
            &json!({"spec": {"template": {"spec": {
                "$setElementOrder/containers": [{"name": "app"}, {"name": "side"}],
                "containers": [{"name": "app", "image": "app:2", "env": [{"name": "B", "value": "2"}]}]
            }}}}),
        )
        .unwrap();
        let cs = &d["spec"]["template"]["spec"]["containers"];
        assert_eq!(cs[0]["image"], "app:2");
        assert_eq!(
            cs[0]["env"],
            json!([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}])
        );
        assert_eq!(cs[1]["image"], "side:1");
        strategic_merge(
            &mut d,
            &json!({"spec": {"template": {"spec": {"containers": [{"name": "side", "$patch": "delete"}]}}}}),
        )
        .unwrap();
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
    }

    #[test]
    fn strategic_atomic_lists_and_maps() {
        let mut d = json!({"metadata": {"labels": {"a": "1"}, "finalizers": ["x"]}, "spec": {"args": ["1", "2"]}});
        strategic_merge(
            &mut d,
            &json!({"metadata": {"labels": {"b": "2", "a": null}, "finalizers": ["y"]}, "spec": {"args": ["3"]}}),
        )
        .unwrap();
        assert_eq!(
            d,
            json!({"metadata": {"labels": {"b": "2"}, "finalizers": ["x", "y"]}, "spec": {"args": ["3"]}})
        );
        strategic_merge(
            &mut d,
            &json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["x"]}}),
        )
        .unwrap();
        assert_eq!(d["metadata"]["finalizers"], json!(["y"]));
        strategic_merge(
            &mut d,
            &json!({"metadata": {"labels": {"$patch": "replace", "c": "3"}}}),
        )
        .unwrap();
        assert_eq!(d["metadata"]["labels"], json!({"c": "3"}));
        assert!(
            strategic_merge(
                &mut d,
                &json!({"spec": {"containers": [{"image": "x"}, {"name": "y"}]}})
            )
            .is_ok()
        );
    }
}
