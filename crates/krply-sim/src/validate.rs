//! Object validation the server performs on every write: object names (DNS
//! subdomain, DNS label or path segment, per type) and label syntax. Errors
//! are `(field, message)` causes of a 422 Invalid.

use serde_json::Value;

use super::catalog::ResourceDef;
use krply_apimachinery::selector;

const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1035_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

fn is_dns_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

fn is_subdomain(s: &str) -> bool {
    !s.is_empty() && s.len() <= 253 && s.split('.').all(is_dns_label)
}

fn is_dns1035(s: &str) -> bool {
    is_dns_label(s) && s.as_bytes()[0].is_ascii_lowercase()
}

#[derive(Clone, Copy)]
enum NameRule {
    Subdomain,
    Label,
    Dns1035,
    PathSegment,
}

fn rule(def: &ResourceDef) -> NameRule {
    if !def.builtin {
        return NameRule::PathSegment;
    }
    match (def.group.as_str(), def.plural.as_str()) {
        ("", "namespaces") => NameRule::Label,
        ("", "services") => NameRule::Dns1035,
        ("rbac.authorization.k8s.io", _) => NameRule::PathSegment,
        _ => NameRule::Subdomain,
    }
}

/// The causes of a 422 for an object's name.
pub(crate) fn name(def: &ResourceDef, name: &str) -> Vec<(String, String)> {
    let bad = |msg: &str| {
        vec![(
            "metadata.name".to_string(),
            format!("Invalid value: \"{name}\": {msg}"),
        )]
    };
    match rule(def) {
        NameRule::Subdomain if !is_subdomain(name) => bad(SUBDOMAIN_MSG),
        NameRule::Label if !is_dns_label(name) => bad(LABEL_MSG),
        NameRule::Dns1035 if !is_dns1035(name) => bad(DNS1035_MSG),
        NameRule::PathSegment if name == "." || name == ".." => {
            bad(&format!("may not be '{name}'"))
        }
        NameRule::PathSegment if name.contains('/') || name.contains('%') => {
            bad("may not contain '/' or '%'")
        }
        _ => Vec::new(),
    }
}

/// The causes of a 422 for `metadata.labels`.
pub(crate) fn labels(obj: &Value) -> Vec<(String, String)> {
    let mut causes = Vec::new();
    match obj.pointer("/metadata/labels") {
        None | Some(Value::Null) => {}
        Some(Value::Object(map)) => {
            for (k, v) in map {
                if let Err(e) = selector::validate_key(k) {
                    causes.push((
                        "metadata.labels".into(),
                        format!("Invalid value: \"{k}\": {e}"),
                    ));
                }
                match v.as_str() {
                    Some(s) if selector::is_label_value(s) => {}
                    _ => causes.push((
                        "metadata.labels".into(),
                        format!("Invalid value: {v}: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"),
                    )),
                }
            }
        }
        Some(_) => causes.push((
            "metadata.labels".into(),
            "Invalid value: must be a map of strings".into(),
        )),
    }
    match obj.pointer("/metadata/annotations") {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) if m.values().all(Value::is_string) => {}
        Some(_) => causes.push((
            "metadata.annotations".into(),
            "Invalid value: must be a map of strings".into(),
        )),
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use serde_json::json;

    #[test]
    fn names_per_type() {
        let c = Catalog::builtin();
        let cm = c.by_resource("", "configmaps").unwrap();
        let ns = c.by_resource("", "namespaces").unwrap();
        let svc = c.by_resource("", "services").unwrap();
        let role = c
            .by_resource("rbac.authorization.k8s.io", "clusterroles")
            .unwrap();
        assert!(name(cm, "a.b-c").is_empty());
        assert!(!name(cm, "Foo").is_empty());
        assert!(!name(ns, "a.b").is_empty());
        assert!(!name(svc, "1abc").is_empty());
        assert!(name(role, "system:controller:x").is_empty());
        let causes = name(cm, "Bad_Name");
        assert_eq!(causes[0].0, "metadata.name");
        assert!(
            causes[0]
                .1
                .starts_with("Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain")
        );
    }

    #[test]
    fn label_syntax() {
        assert!(labels(&json!({"metadata": {"labels": {"app": "web", "a.io/b": ""}}})).is_empty());
        assert_eq!(
            labels(&json!({"metadata": {"labels": {"app": "a b"}}})).len(),
            1
        );
        assert_eq!(
            labels(&json!({"metadata": {"labels": {"a b": "x"}}})).len(),
            1
        );
        assert_eq!(labels(&json!({"metadata": {"labels": {"n": 1}}})).len(), 1);
        assert_eq!(
            labels(&json!({"metadata": {"annotations": {"n": 1}}})).len(),
            1
        );
    }
}
