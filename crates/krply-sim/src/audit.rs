//! The simulator's audit log: for writes made through [`super::Simulator`]'s
//! `*_as` methods, one `audit.k8s.io/v1` `Event` line per write at
//! RequestResponse level, in the format kube-apiserver writes with
//! `--audit-log-path` and `--audit-log-format=json` (docs/audit.md), so the
//! demo and tests have a log to import.

use serde_json::{Value, json};

/// Who a write is made as.
#[derive(Debug, Clone, Copy)]
pub struct SimUser<'a> {
    pub name: &'a str,
    pub groups: &'a [&'a str],
    /// The user who impersonated `name` (`kubectl --as`), if any.
    pub impersonated_by: Option<&'a str>,
    pub user_agent: &'a str,
}

/// One audit line (without its newline) for a completed write of `object`
/// (as the response returned it) with `verb`, at `at_ms`.
pub(crate) fn line(
    audit_id: &str,
    verb: &str,
    resource: &str,
    subresource: Option<&str>,
    object: &Value,
    who: &SimUser<'_>,
    at_ms: i64,
) -> String {
    let text = |p: &str| object.pointer(p).and_then(Value::as_str).unwrap_or("");
    let api_version = text("/apiVersion");
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let namespace = text("/metadata/namespace");
    let name = text("/metadata/name");
    let mut object_ref = json!({"resource": resource, "name": name, "apiVersion": version});
    if !namespace.is_empty() {
        object_ref["namespace"] = json!(namespace);
    }
    if !group.is_empty() {
        object_ref["apiGroup"] = json!(group);
    }
    if let Some(s) = subresource {
        object_ref["subresource"] = json!(s);
    }
    let prefix = if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    };
    let scope = if namespace.is_empty() {
        String::new()
    } else {
        format!("/namespaces/{namespace}")
    };
    let mut e = json!({
        "kind": "Event",
        "apiVersion": "audit.k8s.io/v1",
        "level": "RequestResponse",
        "auditID": audit_id,
        "stage": "ResponseComplete",
        "requestURI": format!("{prefix}{scope}/{resource}/{name}"),
        "verb": verb,
        "user": user_json(who.name, who.groups),
        "sourceIPs": ["127.0.0.1"],
        "userAgent": who.user_agent,
        "objectRef": object_ref,
        "responseStatus": {"metadata": {}, "code": 200},
        "responseObject": object,
        "requestReceivedTimestamp": timestamp(at_ms - 1),
        "stageTimestamp": timestamp(at_ms),
        "annotations": {"authorization.k8s.io/decision": "allow",
                        "authorization.k8s.io/reason": ""},
    });
    if let Some(by) = who.impersonated_by {
        e["user"] = user_json(by, &["system:masters", "system:authenticated"]);
        e["impersonatedUser"] = user_json(who.name, who.groups);
    }
    e.to_string()
}

fn user_json(name: &str, groups: &[&str]) -> Value {
    json!({"username": name, "groups": groups})
}

/// RFC 3339 with microseconds, as kube-apiserver writes its timestamps.
fn timestamp(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string())
        .unwrap_or_default()
}

/// A random auditID, a UUID as kube-apiserver gives.
pub(crate) fn audit_id() -> String {
    crate::ids::new_uid()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fields krply's audit import reads (its own test of this reading is
    /// tests/it/audit.rs, over a log the simulator wrote).
    #[test]
    fn a_line_tells_the_write_as_kube_apiserver_does() {
        let object = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "frontend", "namespace": "shop", "uid": "u-1",
                         "resourceVersion": "42"}});
        let who = SimUser {
            name: "alice@example.com",
            groups: &["system:authenticated"],
            impersonated_by: Some("admin"),
            user_agent: "kubectl/v1.37.2",
        };
        let id = audit_id();
        let text = line(
            &id,
            "update",
            "deployments",
            None,
            &object,
            &who,
            1_796_121_711_509,
        );
        let e: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(e["auditID"], json!(id));
        assert_eq!(e["stage"], "ResponseComplete");
        assert_eq!(e["verb"], "update");
        assert_eq!(
            e["objectRef"],
            json!({"resource": "deployments", "name": "frontend", "apiVersion": "v1",
                   "namespace": "shop", "apiGroup": "apps"})
        );
        assert_eq!(
            e["requestURI"],
            "/apis/apps/v1/namespaces/shop/deployments/frontend"
        );
        assert_eq!(e["responseObject"]["metadata"]["resourceVersion"], "42");
        assert_eq!(e["impersonatedUser"]["username"], "alice@example.com");
        assert_eq!(e["user"]["username"], "admin");
        assert_eq!(e["stageTimestamp"], "2026-12-01T10:41:51.509000Z");
        assert!(!text.contains('\n'));
        assert_ne!(audit_id(), id);
    }
}
