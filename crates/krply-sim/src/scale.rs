//! The `scale` subresource: an `autoscaling/v1 Scale` view of a workload's
//! `spec.replicas`, as `kubectl scale` reads and writes it.

use serde_json::{Value, json};

use super::error::{self, ApiStatus};

fn selector(obj: &Value) -> String {
    let Some(sel) = obj.pointer("/spec/selector") else {
        return String::new();
    };
    let mut parts: Vec<String> = sel
        .get("matchLabels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| format!("{k}={v}")))
                .collect()
        })
        .unwrap_or_default();
    if let Some(exprs) = sel.get("matchExpressions").and_then(Value::as_array) {
        for e in exprs {
            let key = e.get("key").and_then(Value::as_str).unwrap_or_default();
            let values: Vec<&str> = e
                .get("values")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            match e
                .get("operator")
                .and_then(Value::as_str)
                .unwrap_or_default()
            {
                "In" => parts.push(format!("{key} in ({})", values.join(","))),
                "NotIn" => parts.push(format!("{key} notin ({})", values.join(","))),
                "Exists" => parts.push(key.to_string()),
                "DoesNotExist" => parts.push(format!("!{key}")),
                _ => {}
            }
        }
    }
    parts.join(",")
}

/// The Scale of a workload.
pub(crate) fn scale_of(obj: &Value) -> Value {
    let m = |k: &str| {
        obj.pointer(&format!("/metadata/{k}"))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let mut meta = serde_json::Map::new();
    for k in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        let v = m(k);
        if !v.is_null() {
            meta.insert(k.into(), v);
        }
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": meta,
        "spec": {"replicas": obj.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1)},
        "status": {
            "replicas": obj.pointer("/status/replicas").and_then(Value::as_i64).unwrap_or(0),
            "selector": selector(obj)
        }
    })
}

/// Reads the requested replicas of a Scale written by a client, and its
/// resourceVersion precondition.
pub(crate) fn requested(scale: &Value, name: &str) -> Result<(i64, Option<String>), ApiStatus> {
    let invalid = |m: &str| {
        error::invalid(
            "Scale",
            "autoscaling",
            name,
            &[("spec.replicas".into(), m.into())],
        )
    };
    let replicas = match scale.pointer("/spec/replicas") {
        None | Some(Value::Null) => 0,
        Some(v) => v
            .as_i64()
            .ok_or_else(|| invalid("Invalid value: must be an integer"))?,
    };
    if replicas < 0 {
        return Err(invalid(&format!(
            "Invalid value: {replicas}: must be greater than or equal to 0"
        )));
    }
    let rv = scale
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    Ok((replicas, rv))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_view() {
        let d = json!({"metadata": {"name": "fe", "namespace": "shop", "resourceVersion": "9", "uid": "u"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "fe"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]}},
            "status": {"replicas": 2}});
        let s = scale_of(&d);
        assert_eq!(s["spec"]["replicas"], 2);
        assert_eq!(s["status"]["selector"], "app=fe,tier in (a,b)");
        assert_eq!(s["metadata"]["resourceVersion"], "9");
        assert_eq!(
            requested(&json!({"spec": {"replicas": 3}}), "fe").unwrap(),
            (3, None)
        );
        assert!(requested(&json!({"spec": {"replicas": -1}}), "fe").is_err());
        assert!(requested(&json!({"spec": {"replicas": "x"}}), "fe").is_err());
    }
}
