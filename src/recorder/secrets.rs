//! Secrets are recorded only as digests: every value of `data` and `stringData`,
//! and the last-applied annotation (a full copy of them), become
//! `sha256:<hex>` of the value as the API returned it (base64 text for `data`).
//! The digest says whether a value changed, never what it was.

use serde_json::Value;

const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

fn digest_text(value: &str) -> String {
    let d = ring::digest::digest(&ring::digest::SHA256, value.as_bytes());
    let hex: String = d.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

fn digest_value(v: &mut Value) {
    let text = match &*v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    *v = Value::String(digest_text(&text));
}

/// Replaces every secret value in a Secret's JSON by its digest. Input that is
/// not a JSON object is replaced whole, so no value can slip through.
pub fn redact_secret(raw: &[u8]) -> Vec<u8> {
    let Ok(mut obj) = serde_json::from_slice::<Value>(raw) else {
        let digest = digest_text(&String::from_utf8_lossy(raw));
        return serde_json::to_vec(&serde_json::json!({ "redacted": digest })).unwrap_or_default();
    };
    for field in ["data", "stringData"] {
        if let Some(map) = obj.get_mut(field).and_then(Value::as_object_mut) {
            map.values_mut().for_each(digest_value);
        }
    }
    if let Some(v) = obj
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
        && let Some(la) = v.get_mut(LAST_APPLIED)
    {
        digest_value(la);
    }
    serde_json::to_vec(&obj).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_become_digests() {
        let raw = br#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db","annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"data\":{\"password\":\"aHVudGVyMg==\"}}","team":"core"}},"data":{"password":"aHVudGVyMg=="},"stringData":{"token":"hunter2"},"type":"Opaque"}"#;
        let out = redact_secret(raw);
        let text = String::from_utf8(out.clone()).unwrap();
        assert!(!text.contains("aHVudGVyMg"), "{text}");
        assert!(!text.contains("hunter2"), "{text}");
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert!(
            v["data"]["password"]
                .as_str()
                .unwrap()
                .starts_with("sha256:")
        );
        assert_eq!(v["metadata"]["annotations"]["team"], "core");
        assert_eq!(v["type"], "Opaque");
        // The same value always gives the same digest: changes stay visible.
        assert_eq!(redact_secret(raw), out);
    }

    #[test]
    fn garbage_never_passes_through() {
        let out = redact_secret(b"not json hunter2");
        assert!(!String::from_utf8(out).unwrap().contains("hunter2"));
    }
}
