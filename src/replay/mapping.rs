//! Moving a manifest from the source namespace to the target (docs/replay-safety.md,
//! "Namespace mapping"): its own namespace and every structured reference that names the source
//! namespace. References hidden in free text (DNS names in env values or
//! ConfigMap data) are not rewritten; they are reported.

use serde_json::Value;

/// Maps `manifest` from namespace `from` to `to`; returns warnings about what
/// still mentions `from`.
pub fn map_namespace(manifest: &mut Value, kind: &str, from: &str, to: &str) -> Vec<String> {
    if kind == "Namespace" {
        if let Some(m) = manifest
            .pointer_mut("/metadata")
            .and_then(Value::as_object_mut)
        {
            m.insert("name".into(), Value::String(to.into()));
        }
        return Vec::new();
    }
    if let Some(m) = manifest
        .pointer_mut("/metadata")
        .and_then(Value::as_object_mut)
        && m.contains_key("namespace")
    {
        m.insert("namespace".into(), Value::String(to.into()));
    }
    // RoleBinding subjects in the source namespace.
    if let Some(subjects) = manifest
        .pointer_mut("/subjects")
        .and_then(Value::as_array_mut)
    {
        for s in subjects.iter_mut().filter_map(Value::as_object_mut) {
            if s.get("namespace").and_then(Value::as_str) == Some(from) {
                s.insert("namespace".into(), Value::String(to.into()));
            }
        }
    }
    // Affinity terms and selectors that name namespaces.
    rewrite_named_namespaces(manifest, from, to);
    let mut warnings = Vec::new();
    let name = manifest
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let needle = format!(".{from}.svc");
    if mentions(manifest, &needle) {
        warnings.push(format!(
            "{kind} {name} mentions \"{needle}\" in its values; that name still points at namespace {from}"
        ));
    }
    warnings
}

/// `namespaces: [...]` lists (pod affinity terms) and `namespaceSelector`s that
/// match on `kubernetes.io/metadata.name`.
fn rewrite_named_namespaces(v: &mut Value, from: &str, to: &str) {
    match v {
        Value::Object(map) => {
            for (k, child) in map.iter_mut() {
                if k == "namespaces"
                    && let Some(list) = child.as_array_mut()
                {
                    for n in list.iter_mut() {
                        if n.as_str() == Some(from) {
                            *n = Value::String(to.into());
                        }
                    }
                } else if k == "kubernetes.io/metadata.name" && child.as_str() == Some(from) {
                    *child = Value::String(to.into());
                } else {
                    rewrite_named_namespaces(child, from, to);
                }
            }
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|i| rewrite_named_namespaces(i, from, to)),
        _ => {}
    }
}

fn mentions(v: &Value, needle: &str) -> bool {
    match v {
        Value::String(s) => s.contains(needle),
        Value::Array(items) => items.iter().any(|i| mentions(i, needle)),
        Value::Object(map) => map.values().any(|i| mentions(i, needle)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn maps_metadata_subjects_and_selectors() {
        let mut rb = json!({"kind": "RoleBinding", "metadata": {"name": "r", "namespace": "shop"},
                            "subjects": [{"kind": "ServiceAccount", "name": "a", "namespace": "shop"},
                                         {"kind": "ServiceAccount", "name": "b", "namespace": "other"}]});
        assert!(map_namespace(&mut rb, "RoleBinding", "shop", "copy").is_empty());
        assert_eq!(rb["metadata"]["namespace"], "copy");
        assert_eq!(rb["subjects"][0]["namespace"], "copy");
        assert_eq!(rb["subjects"][1]["namespace"], "other");
        let mut np = json!({"kind": "NetworkPolicy", "metadata": {"name": "n", "namespace": "shop"},
                            "spec": {"ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "shop"}}}]}]}});
        map_namespace(&mut np, "NetworkPolicy", "shop", "copy");
        assert_eq!(
            np["spec"]["ingress"][0]["from"][0]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"],
            "copy"
        );
    }

    #[test]
    fn free_text_references_are_reported() {
        let mut d = json!({"kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"},
                           "spec": {"template": {"spec": {"containers": [{"env": [{"name": "DB", "value": "db.shop.svc.cluster.local"}]}]}}}});
        let w = map_namespace(&mut d, "Deployment", "shop", "copy");
        assert_eq!(w.len(), 1);
        assert!(w[0].contains(".shop.svc"));
        let mut ns = json!({"kind": "Namespace", "metadata": {"name": "shop"}});
        map_namespace(&mut ns, "Namespace", "shop", "copy");
        assert_eq!(ns["metadata"]["name"], "copy");
    }
}
