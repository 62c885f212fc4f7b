//! The shapes of built-in types' fields, as strategic merge patches and
//! managedFields see them. Lists "maps in disguise", whose items are
//! identified by key fields (containers by `name`, volumeMounts by `mountPath`,
//! ...), are merged item by item and named `k:{"name":"x"}` in managedFields;
//! every other list is atomic (owned and replaced whole).

use serde_json::Value;

// Which lists are keyed, and by what, is one statement shared with krply's diff
// and owners: krply_apimachinery::lists.
pub(crate) use krply_apimachinery::lists::{is_set_list, item_key, list_keys, merge_key};

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
