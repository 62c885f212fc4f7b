//! Unit tests of the differ's rules, one behaviour each.

use serde_json::{Value, json};

use super::*;

const DEFAULT: DiffOptions = DiffOptions {
    include_status: false,
};
const WITH_STATUS: DiffOptions = DiffOptions {
    include_status: true,
};

/// The changes as `(path, before, after)` with paths rendered, for compact assertions.
fn changes(before: &Value, after: &Value) -> Vec<(String, Option<Value>, Option<Value>)> {
    changes_with(before, after, &DEFAULT)
}

fn changes_with(
    before: &Value,
    after: &Value,
    opts: &DiffOptions,
) -> Vec<(String, Option<Value>, Option<Value>)> {
    let found = diff_objects(before, after, opts);
    let paths: Vec<String> = found.iter().map(|c| c.path.to_string()).collect();
    assert_eq!(
        changed_paths(before, after, opts),
        paths,
        "changed_paths agrees"
    );
    found
        .into_iter()
        .map(|c| (c.path.to_string(), c.before, c.after))
        .collect()
}

fn change(
    path: &str,
    before: Option<Value>,
    after: Option<Value>,
) -> (String, Option<Value>, Option<Value>) {
    (path.to_owned(), before, after)
}

#[test]
fn identical_objects_have_no_changes() {
    let obj = json!({"a": [1, {"b": null}], "c": "x"});
    assert!(changes(&obj, &obj).is_empty());
    assert!(changes(&json!({}), &json!({})).is_empty());
}

#[test]
fn scalar_change_is_one_change() {
    let before = json!({"spec": {"replicas": 1, "paused": false}});
    let after = json!({"spec": {"replicas": 3, "paused": false}});
    assert_eq!(
        changes(&before, &after),
        vec![change("spec.replicas", Some(json!(1)), Some(json!(3)))]
    );
}

#[test]
fn type_change_is_one_change_with_both_values() {
    let before = json!({"data": {"x": {"nested": 1}}, "y": [1], "z": "1"});
    let after = json!({"data": {"x": [1, 2]}, "y": {"0": 1}, "z": 1});
    assert_eq!(
        changes(&before, &after),
        vec![
            change("data.x", Some(json!({"nested": 1})), Some(json!([1, 2]))),
            change("y", Some(json!([1])), Some(json!({"0": 1}))),
            change("z", Some(json!("1")), Some(json!(1))),
        ]
    );
}

#[test]
fn integer_and_float_are_different_values() {
    assert_eq!(
        changes(&json!({"n": 1}), &json!({"n": 1.0})),
        vec![change("n", Some(json!(1)), Some(json!(1.0)))]
    );
}

#[test]
fn new_subtree_is_one_change_not_exploded() {
    let before = json!({"spec": {}});
    let after =
        json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}});
    assert_eq!(
        changes(&before, &after),
        vec![change(
            "spec.strategy",
            None,
            Some(after["spec"]["strategy"].clone())
        )]
    );
    let back = diff_objects(&after, &before, &DEFAULT);
    assert_eq!(back.len(), 1);
    assert_eq!(back[0].kind(), ChangeKind::Removed);
    assert_eq!(back[0].before, Some(after["spec"]["strategy"].clone()));
}

#[test]
fn null_and_missing_are_different() {
    let before = json!({"a": null});
    let after = json!({"b": null});
    let found = diff_objects(&before, &after, &DEFAULT);
    assert_eq!(
        found
            .iter()
            .map(|c| (c.path.to_string(), c.kind()))
            .collect::<Vec<_>>(),
        vec![
            ("b".to_owned(), ChangeKind::Added),
            ("a".to_owned(), ChangeKind::Removed)
        ]
    );
    assert_eq!(found[0].after, Some(Value::Null));
    assert_eq!(found[1].before, Some(Value::Null));
    assert_eq!(
        changes(&json!({"a": null}), &json!({"a": 0})),
        vec![change("a", Some(Value::Null), Some(json!(0)))]
    );
}

#[test]
fn order_follows_the_new_object_then_removed_keys() {
    let before = json!({"a": 1, "b": 1, "d": 1});
    let after = json!({"b": 2, "c": 1, "a": 2});
    assert_eq!(
        changes(&before, &after)
            .into_iter()
            .map(|c| c.0)
            .collect::<Vec<_>>(),
        vec!["b", "c", "a", "d"]
    );
}

#[test]
fn dotted_keys_are_quoted() {
    let before = json!({"metadata": {"labels": {"app": "web"}}, "data": {"config.yaml": "a: 1"}});
    let after = json!({
        "metadata": {"labels": {"app": "web", "app.kubernetes.io/name": "web"}},
        "data": {"config.yaml": "a: 2"}
    });
    assert_eq!(
        changes(&before, &after),
        vec![
            change(
                r#"metadata.labels["app.kubernetes.io/name"]"#,
                None,
                Some(json!("web"))
            ),
            change(
                r#"data["config.yaml"]"#,
                Some(json!("a: 1")),
                Some(json!("a: 2"))
            ),
        ]
    );
}

#[test]
fn named_list_insert_at_the_front_reports_one_addition() {
    let before = json!({"env": [
        {"name": "A", "value": "1"},
        {"name": "B", "value": "2"},
        {"name": "C", "value": "3"}
    ]});
    let after = json!({"env": [
        {"name": "NEW", "value": "0"},
        {"name": "A", "value": "1"},
        {"name": "B", "value": "two"},
        {"name": "C", "value": "3"}
    ]});
    assert_eq!(
        changes(&before, &after),
        vec![
            change("env[0]", None, Some(json!({"name": "NEW", "value": "0"}))),
            change("env[2].value", Some(json!("2")), Some(json!("two"))),
        ]
    );
}

#[test]
fn named_list_removal_uses_the_old_index() {
    let before = json!({"containers": [{"name": "a"}, {"name": "b", "image": "x"}, {"name": "c"}]});
    let after = json!({"containers": [{"name": "a"}, {"name": "c", "image": "y"}]});
    assert_eq!(
        changes(&before, &after),
        vec![
            change("containers[1].image", None, Some(json!("y"))),
            change(
                "containers[1]",
                Some(json!({"name": "b", "image": "x"})),
                None
            ),
        ]
    );
}

#[test]
fn moved_named_item_is_removed_and_added() {
    let before = json!({"env": [{"name": "A"}, {"name": "B"}, {"name": "C"}]});
    let after = json!({"env": [{"name": "C"}, {"name": "A"}, {"name": "B"}]});
    assert_eq!(
        changes(&before, &after),
        vec![
            change("env[0]", None, Some(json!({"name": "C"}))),
            change("env[2]", Some(json!({"name": "C"})), None),
        ]
    );
}

#[test]
fn container_ports_without_names_match_by_port_and_protocol() {
    let before = json!({"ports": [{"containerPort": 8080, "protocol": "TCP"}]});
    let after = json!({"ports": [
        {"containerPort": 9090, "protocol": "TCP"},
        {"containerPort": 8080, "protocol": "TCP", "hostPort": 80}
    ]});
    assert_eq!(
        changes(&before, &after),
        vec![
            change(
                "ports[0]",
                None,
                Some(json!({"containerPort": 9090, "protocol": "TCP"}))
            ),
            change("ports[1].hostPort", None, Some(json!(80))),
        ]
    );
}

#[test]
fn volume_mounts_with_repeated_names_match_by_mount_path() {
    let before = json!({"volumeMounts": [
        {"name": "cfg", "mountPath": "/etc/a", "subPath": "a"},
        {"name": "cfg", "mountPath": "/etc/b", "subPath": "b"}
    ]});
    let after = json!({"volumeMounts": [
        {"name": "tmp", "mountPath": "/tmp"},
        {"name": "cfg", "mountPath": "/etc/a", "subPath": "a"},
        {"name": "cfg", "mountPath": "/etc/b", "subPath": "b2"}
    ]});
    assert_eq!(
        changes(&before, &after),
        vec![
            change(
                "volumeMounts[0]",
                None,
                Some(json!({"name": "tmp", "mountPath": "/tmp"}))
            ),
            change(
                "volumeMounts[2].subPath",
                Some(json!("b")),
                Some(json!("b2"))
            ),
        ]
    );
}

#[test]
fn status_conditions_match_by_type() {
    let before = json!({"status": {"conditions": [
        {"type": "Available", "status": "True"},
        {"type": "Progressing", "status": "True"}
    ]}});
    let after = json!({"status": {"conditions": [
        {"type": "Progressing", "status": "False"}
    ]}});
    assert!(changes(&before, &after).is_empty());
    assert_eq!(
        changes_with(&before, &after, &WITH_STATUS),
        vec![
            change(
                "status.conditions[0].status",
                Some(json!("True")),
                Some(json!("False"))
            ),
            change(
                "status.conditions[0]",
                Some(json!({"type": "Available", "status": "True"})),
                None
            ),
        ]
    );
}

#[test]
fn other_lists_compare_by_index() {
    let before = json!({"args": ["--a", "--b"], "n": [1, 2, 3]});
    let after = json!({"args": ["--a", "--c", "--d"], "n": [1]});
    assert_eq!(
        changes(&before, &after),
        vec![
            change("args[1]", Some(json!("--b")), Some(json!("--c"))),
            change("args[2]", None, Some(json!("--d"))),
            change("n[1]", Some(json!(2)), None),
            change("n[2]", Some(json!(3)), None),
        ]
    );
}

#[test]
fn nested_lists_of_lists() {
    let before = json!({"matrix": [[1, 2], [3, [4, 5]]]});
    let after = json!({"matrix": [[1, 2, 0], [3, [4, 6]], []]});
    assert_eq!(
        changes(&before, &after),
        vec![
            change("matrix[0][2]", None, Some(json!(0))),
            change("matrix[1][1][1]", Some(json!(5)), Some(json!(6))),
            change("matrix[2]", None, Some(json!([]))),
        ]
    );
}

#[test]
fn server_owned_noise_is_ignored() {
    let before = json!({
        "metadata": {
            "name": "web", "uid": "1", "resourceVersion": "10", "generation": 1,
            "creationTimestamp": "2026-11-29T09:00:00Z", "managedFields": [],
            "selfLink": "/a", "ownerReferences": [{"uid": "x"}]
        },
        "status": {"replicas": 1}
    });
    let after = json!({
        "metadata": {
            "name": "web", "uid": "2", "resourceVersion": "11", "generation": 2,
            "creationTimestamp": "2026-11-29T09:01:00Z", "managedFields": [{"manager": "m"}],
            "deletionTimestamp": "2026-11-29T09:02:00Z", "ownerReferences": [{"uid": "y"}]
        },
        "status": {"replicas": 2}
    });
    assert!(changes(&before, &after).is_empty());
    assert_eq!(
        changes_with(&before, &after, &WITH_STATUS),
        vec![change("status.replicas", Some(json!(1)), Some(json!(2)))]
    );
}

#[test]
fn status_elsewhere_is_a_real_change() {
    let before = json!({"data": {"status": "ok"}, "spec": {"status": 1}});
    let after = json!({"data": {"status": "broken"}, "spec": {}});
    assert_eq!(
        changes(&before, &after),
        vec![
            change("data.status", Some(json!("ok")), Some(json!("broken"))),
            change("spec.status", Some(json!(1)), None),
        ]
    );
}

#[test]
fn annotation_change_by_noise_keys_only_reports_nothing() {
    let before = json!({"metadata": {"annotations": {
        "deployment.kubernetes.io/revision": "1",
        "kubectl.kubernetes.io/last-applied-configuration": "{}",
        "team": "shop"
    }}});
    let after = json!({"metadata": {"annotations": {
        "deployment.kubernetes.io/revision": "2",
        "kubectl.kubernetes.io/last-applied-configuration": "{\"spec\":{}}",
        "team": "shop"
    }}});
    assert!(changes(&before, &after).is_empty());
    // The annotations map appears with nothing but noise in it.
    let bare = json!({"metadata": {"name": "x"}});
    let noisy = json!({"metadata": {"name": "x", "annotations": {"deployment.kubernetes.io/revision": "1"}}});
    assert!(changes(&bare, &noisy).is_empty());
    assert!(changes(&noisy, &bare).is_empty());
    // With a real annotation among them, only the real one is shown.
    let mixed = json!({"metadata": {"name": "x", "annotations": {
        "deployment.kubernetes.io/revision": "1", "team": "shop"
    }}});
    assert_eq!(
        changes(&bare, &mixed),
        vec![change(
            "metadata.annotations",
            None,
            Some(json!({"team": "shop"}))
        )]
    );
    assert_eq!(
        changes(&noisy, &mixed),
        vec![change(
            "metadata.annotations.team",
            None,
            Some(json!("shop"))
        )]
    );
}

#[test]
fn whole_metadata_or_object_appearing_loses_its_noise() {
    let before = json!({"kind": "ConfigMap"});
    let after = json!({"kind": "ConfigMap", "metadata": {"uid": "1", "name": "x"}, "status": {}});
    assert_eq!(
        changes(&before, &after),
        vec![change("metadata", None, Some(json!({"name": "x"})))]
    );
    assert_eq!(
        changes(&json!(null), &after),
        vec![change(
            ".",
            Some(Value::Null),
            Some(json!({"kind": "ConfigMap", "metadata": {"name": "x"}}))
        )]
    );
}

#[test]
fn noise_names_elsewhere_are_not_noise() {
    let before = json!({"spec": {"template": {"metadata": {"creationTimestamp": null}}}, "items": [{"status": 1}]});
    let after = json!({"spec": {"template": {"metadata": {"creationTimestamp": "x"}}}, "items": [{"status": 2}]});
    assert_eq!(
        changes(&before, &after)
            .into_iter()
            .map(|c| c.0)
            .collect::<Vec<_>>(),
        vec![
            "spec.template.metadata.creationTimestamp",
            "items[0].status"
        ]
    );
}

#[test]
fn non_object_roots() {
    assert_eq!(
        changes(&json!(1), &json!(2)),
        vec![change(".", Some(json!(1)), Some(json!(2)))]
    );
    assert_eq!(
        changes(&json!([1]), &json!([1, 2])),
        vec![change("[1]", None, Some(json!(2)))]
    );
}

#[test]
fn change_kind_and_serialization() {
    let found = diff_objects(&json!({"a": 1, "b": 1}), &json!({"a": 2, "c": 1}), &DEFAULT);
    assert_eq!(
        found.iter().map(FieldChange::kind).collect::<Vec<_>>(),
        vec![ChangeKind::Modified, ChangeKind::Added, ChangeKind::Removed]
    );
    assert_eq!(
        serde_json::to_value(&found).unwrap(),
        json!([
            {"path": "a", "before": 1, "after": 2},
            {"path": "c", "before": null, "after": 1},
            {"path": "b", "before": 1, "after": null}
        ])
    );
    assert_eq!(
        serde_json::to_value(ChangeKind::Added).unwrap(),
        json!("added")
    );
}
