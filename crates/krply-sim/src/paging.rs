//! `continue` tokens for paged lists. Like the real server's, a token is
//! unpadded URL-safe base64 of `{"v":"meta.k8s.io/v1","rv":<list RV>,"start":"<key>\u0000"}`:
//! the list's resourceVersion (every page is served from that snapshot) and
//! the key to resume after. `rv: -1` means "continue at the latest version"
//! (what an expired token is replaced with).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::{Engine as _, alphabet};
use serde_json::{Value, json};

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
        URL_SAFE_NO_PAD.encode(doc.to_string())
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

/// Reads tokens in the URL-safe alphabet, padded or not, ignoring stray bits in
/// the last symbol.
const LENIENT: GeneralPurpose = GeneralPurpose::new(
    &alphabet::URL_SAFE,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true),
);

/// Decodes base64 of either alphabet (`+/` or `-_`), padded or not. An engine
/// reads one alphabet and only canonical padding, so `+/` become `-_` and every
/// trailing `=` goes first. The error is Go's `CorruptInputError` message.
fn base64_decode(s: &str) -> Result<Vec<u8>, String> {
    let url: String = s
        .trim_end_matches('=')
        .chars()
        .map(|c| match c {
            '+' => '-',
            '/' => '_',
            c => c,
        })
        .collect();
    LENIENT.decode(&url).map_err(|_| {
        // The first byte outside the alphabet, or the end when the length is
        // wrong (the engine may name a later byte).
        let at = url
            .bytes()
            .position(|c| !(c.is_ascii_alphanumeric() || c == b'-' || c == b'_'))
            .unwrap_or(url.len());
        format!("illegal base64 data at input byte {at}")
    })
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
    fn base64_round_trips() {
        use base64::engine::general_purpose::STANDARD;
        for s in [
            "",
            "f",
            "fo",
            "foo",
            "foob",
            "fooba",
            "foobar",
            "\u{0}\u{ff}ü",
        ] {
            let e = URL_SAFE_NO_PAD.encode(s.as_bytes());
            assert!(!e.contains('='));
            assert_eq!(base64_decode(&e).unwrap(), s.as_bytes());
            assert_eq!(
                base64_decode(&STANDARD.encode(s.as_bytes())).unwrap(),
                s.as_bytes()
            );
        }
        assert_eq!(URL_SAFE_NO_PAD.encode(b"foobar"), "Zm9vYmFy");
        assert_eq!(STANDARD.encode(b"foob"), "Zm9vYg==");
        assert_eq!(STANDARD.encode(b"\xfb\xff"), "+/8=");
        assert_eq!(base64_decode("Zm9vYg==").unwrap(), b"foob");
        assert!(base64_decode("Zm9v!").is_err());
        assert!(base64_decode("Z").is_err());
        // Lenient: both alphabets at once, any trailing padding, stray last bits.
        assert_eq!(base64_decode("-_+/").unwrap(), b"\xfb\xff\xbf");
        assert_eq!(base64_decode("Zm9v===").unwrap(), b"foo");
        assert_eq!(base64_decode("Zh").unwrap(), b"f");
        let err = |s: &str| base64_decode(s).unwrap_err();
        assert_eq!(err("Zm9v!"), "illegal base64 data at input byte 4");
        assert_eq!(err("Zm=9vYm."), "illegal base64 data at input byte 2");
        assert_eq!(err("Zm9vY"), "illegal base64 data at input byte 5");
    }

    #[test]
    fn bad_tokens_are_rejected() {
        assert!(
            Continue::decode("!!!")
                .unwrap_err()
                .starts_with("continue key is not valid")
        );
        assert!(Continue::decode(&URL_SAFE_NO_PAD.encode(b"{}")).is_err());
        assert!(
            Continue::decode(
                &URL_SAFE_NO_PAD.encode(br#"{"v":"meta.k8s.io/v1","rv":0,"start":"a"}"#)
            )
            .is_err()
        );
        assert!(Continue::decode(&URL_SAFE_NO_PAD.encode(b"not json")).is_err());
    }
}
