//! Which lists of built-in types are "maps in disguise": their items are
//! identified by one or more key fields (containers by `name`, volumeMounts by
//! `mountPath`, container ports by `containerPort`+`protocol`, ...). Strategic
//! merge patches merge such lists item by item, and managedFields name their
//! items `k:{"name":"x"}`. Every other list is atomic (owned and replaced whole).

use serde_json::{Map, Value};

/// The key fields of the list under `field` (for its managedFields entries),
/// judged from an item of that list; `None` for atomic lists.
pub(crate) fn list_keys(field: &str, item: &Value) -> Option<&'static [&'static str]> {
    let obj = item.as_object()?;
    match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "env"
        | "volumes"
        | "imagePullSecrets"
        | "resourceClaims" => Some(&["name"]),
        "volumeMounts" => Some(&["mountPath"]),
        "volumeDevices" => Some(&["devicePath"]),
        "hostAliases" => Some(&["ip"]),
        "ownerReferences" => Some(&["uid"]),
        "conditions" if obj.contains_key("type") => Some(&["type"]),
        "ports" if obj.contains_key("containerPort") => Some(&["containerPort", "protocol"]),
        "ports" if obj.contains_key("port") => Some(&["port", "protocol"]),
        _ => None,
    }
}

/// The strategic-merge-patch merge key of the list under `field`.
pub(crate) fn merge_key(field: &str, item: &Value) -> Option<&'static str> {
    let obj = item.as_object()?;
    match field {
        "ports" if obj.contains_key("containerPort") => Some("containerPort"),
        "ports" if obj.contains_key("port") => Some("port"),
        _ => list_keys(field, item).and_then(|k| k.first().copied()),
    }
}

/// Lists of scalars that the server treats as sets (managedFields `v:"x"`,
/// strategic merge by value).
pub(crate) fn is_set_list(field: &str) -> bool {
    field == "finalizers"
}

/// The `k:{...}` key of one item: its key fields that are present, as compact
/// JSON with sorted keys. `None` when the item has none of them.
pub(crate) fn item_key(keys: &[&str], item: &Value) -> Option<String> {
    let obj = item.as_object()?;
    let mut m = Map::new();
    for k in keys {
        if let Some(v) = obj.get(*k) {
            m.insert((*k).to_string(), v.clone());
        }
    }
    if m.is_empty() {
        return None;
    }
    serde_json::to_string(&Value::Object(m)).ok()
}

/// Fields whose value is a string map merged key by key (`labels`, `data`,
/// ...), as opposed to a struct of named fields.
pub(crate) fn is_string_map(field: &str, _value: &Value) -> bool {
    matches!(
        field,
        "labels"
            | "annotations"
            | "data"
            | "binaryData"
            | "stringData"
            | "matchLabels"
            | "limits"
            | "requests"
            | "capacity"
            | "parameters"
    )
}

/// Whether `field` is owned and replaced whole, like a scalar: a workload's
/// LabelSelector (`+structType=atomic`), and the string maps the API marks
/// `+mapType=atomic` (a Service's `spec.selector`, a pod's `nodeSelector`).
/// managedFields name such a field, never its keys: `"f:selector": {}`.
pub(crate) fn is_atomic(field: &str, value: &Value) -> bool {
    matches!(
        field,
        "selector" | "nodeSelector" | "podSelector" | "namespaceSelector"
    ) && value.is_object()
}

/// Fields present even in the empty value of their parent type: non-pointer
/// structs (`spec`, `template`, `strategy`, `resources`, ...) and lists
/// without `omitempty` (`containers`). Every other map, list or struct
/// appears only when set, so a write that adds it also owns the field
/// itself: managedFields of an `Update` mark it `".": {}`.
pub(crate) fn present_when_empty(field: &str) -> bool {
    matches!(
        field,
        "metadata"
            | "spec"
            | "status"
            | "template"
            | "strategy"
            | "updateStrategy"
            | "resources"
            | "jobTemplate"
            | "containers"
            | "roleRef"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_of_known_lists() {
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
        assert_eq!(merge_key("ports", &json!({"port": 80})), Some("port"));
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
    fn maps_and_structs() {
        // As kube-apiserver 1.37 records them (tests/it/real/parity.rs).
        assert!(is_atomic("selector", &json!({"app": "web"})));
        assert!(is_atomic("nodeSelector", &json!({"disk": "ssd"})));
        assert!(is_atomic(
            "selector",
            &json!({"matchLabels": {"app": "web"}})
        ));
        assert!(!is_string_map("selector", &json!({"app": "web"})));
        assert!(present_when_empty("containers") && !present_when_empty("ports"));
        assert!(is_string_map("labels", &json!({})));
    }
}
