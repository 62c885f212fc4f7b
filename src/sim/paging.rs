//! `continue` tokens for paged lists. Like the real server's, a token is
//! unpadded URL-safe base64 of `{"v":"meta.k8s.io/v1","rv":<list RV>,"start":"<key>\u0000"}`:
//! the list's resourceVersion (every page is served from that snapshot) and
//! the key to resume after. `rv: -1` means "continue at the latest version"
//! (what an expired token is replaced with).

use serde_json::{Value, json};

use super::b64::{base64_decode, base64url_encode};

/// Where a paged list resumes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Continue {
    /// The list's resourceVersion; `None` for "latest" (`rv: -1`).
    pub rv: Option<u64>,
    /// The object key (`namespace/name`, or `/name` when cluster-scoped) to resume after.
    pub after: String,
}

impl Continue {
    pub(crate) fn encode(&self) -> String {
        let rv = self.rv.map_or(-1, |r| i64::try_from(r).unwrap_or(i64::MAX));
        let doc = json!({"v": "meta.k8s.io/v1", "rv": rv, "start": format!("{}\u{0}", self.after)});
        base64url_encode(doc.to_string().as_bytes())
    }

    /// Decodes a token; the error is the message of the server's 400.
    pub(crate) fn decode(token: &str) -> Result<Continue, String> {
        let bad = |why: String| format!("continue key is not valid: {why}");
        let raw = base64_decode(token).map_err(bad)?;
        let doc: Value = serde_json::from_slice(&raw).map_err(|e| bad(e.to_string()))?;
        if doc.get("v").and_then(Value::as_str) != Some("meta.k8s.io/v1") {
            return Err(bad(
                "incorrect encoded start resourceVersion (version meta.k8s.io/v1)".into(),
            ));
        }
        let rv = match doc.get("rv").and_then(Value::as_i64) {
            Some(-1) => None,
            Some(r) if r > 0 => Some(r as u64),
            _ => {
                return Err(bad(
                    "incorrect encoded start resourceVersion (version meta.k8s.io/v1)".into(),
                ));
            }
        };
        let start = doc
            .get("start")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("encoded start key missing".into()))?;
        let after = start.strip_suffix('\u{0}').unwrap_or(start).to_string();
        if after.is_empty() {
            return Err(bad("encoded start key empty".into()));
        }
        Ok(Continue { rv, after })
    }
}

/// The key objects are ordered by in lists and paged on.
pub(crate) fn object_key(namespace: &str, name: &str) -> String {
    format!("{namespace}/{name}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_tokens_round_trip() {
        let c = Continue {
            rv: Some(42),
            after: "shop/frontend".into(),
        };
        let t = c.encode();
        assert_eq!(Continue::decode(&t).unwrap(), c);
        let raw = String::from_utf8(base64_decode(&t).unwrap()).unwrap();
        assert!(raw.contains("\"rv\":42"), "{raw}");
        let latest = Continue {
            rv: None,
            after: "/x".into(),
        };
        assert_eq!(Continue::decode(&latest.encode()).unwrap(), latest);
    }

    #[test]
    fn bad_tokens_are_rejected() {
        assert!(
            Continue::decode("!!!")
                .unwrap_err()
                .starts_with("continue key is not valid")
        );
        assert!(Continue::decode(&base64url_encode(b"{}")).is_err());
        assert!(
            Continue::decode(&base64url_encode(
                br#"{"v":"meta.k8s.io/v1","rv":0,"start":"a"}"#
            ))
            .is_err()
        );
        assert!(Continue::decode(&base64url_encode(b"not json")).is_err());
    }
}
