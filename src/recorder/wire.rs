//! Decoding what the API server sends: watch event lines and list items, keeping
//! each object's bytes exactly as received.

use crate::cluster::api::{ApiError, parse_status};
use crate::model::{ObjectMeta, WatchType};
use serde::Deserialize;
use serde_json::value::RawValue;

/// One decoded watch line.
#[derive(Debug, PartialEq, Eq)]
pub enum WireEvent {
    Object {
        watch_type: WatchType,
        meta: ObjectMeta,
        /// The `object` member, byte for byte.
        raw: Vec<u8>,
    },
    Bookmark {
        resource_version: String,
    },
    /// An ERROR event: the server's Status (410 Expired, say).
    Error(ApiError),
}

/// A line that is not a watch event. It is never journaled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed watch line: {0}")]
pub struct Malformed(pub String);

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    #[serde(borrow)]
    object: &'a RawValue,
}

#[derive(Deserialize, Default)]
struct Meta {
    #[serde(default)]
    metadata: MetaFields,
}

/// Aborts the scan of an object once its metadata is read.
const METADATA_READ: &str = "metadata read";

/// Visits an object's members until `metadata`, skipping the others.
struct FindMetadata<'a>(&'a mut Option<MetaFields>);

impl<'de> serde::de::Visitor<'de> for FindMetadata<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a Kubernetes object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(is_metadata) = map.next_key_seed(IsMetadata)? {
            if is_metadata {
                *self.0 = Some(map.next_value()?);
                return Err(serde::de::Error::custom(METADATA_READ));
            }
            map.next_value::<serde::de::IgnoredAny>()?;
        }
        Ok(())
    }
}

/// A map key, compared with `metadata` without allocating.
struct IsMetadata;

impl<'de> serde::de::DeserializeSeed<'de> for IsMetadata {
    type Value = bool;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_str(self)
    }
}

impl serde::de::Visitor<'_> for IsMetadata {
    type Value = bool;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E>(self, v: &str) -> Result<bool, E> {
        Ok(v == "metadata")
    }
}

#[derive(Deserialize, Default)]
struct MetaFields {
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    uid: Option<String>,
    #[serde(default, rename = "resourceVersion")]
    resource_version: Option<String>,
}

/// Reads the identity fields of an object without decoding the rest: the scan
/// stops right after `metadata` (which servers put near the front), so a large
/// object is not parsed a second time. `raw` must already be valid JSON (it
/// comes out of a `RawValue`), which is why stopping early is safe. Also takes
/// the digest of what a default diff compares, which the writer uses to mark
/// status-only changes (docs/journal.md, "Status-only changes").
pub fn object_meta(raw: &[u8]) -> Result<ObjectMeta, Malformed> {
    let mut found = None;
    let mut de = serde_json::Deserializer::from_slice(raw);
    let result = serde::Deserializer::deserialize_map(&mut de, FindMetadata(&mut found));
    let f = match (found, result) {
        (Some(f), _) => f,
        (None, Err(e)) => return Err(Malformed(e.to_string())),
        (None, Ok(())) => MetaFields::default(),
    };
    let name = f
        .name
        .filter(|n| !n.is_empty())
        .ok_or_else(|| Malformed("object without metadata.name".into()))?;
    Ok(ObjectMeta {
        namespace: f.namespace.unwrap_or_default(),
        name,
        uid: f.uid.unwrap_or_default(),
        resource_version: f.resource_version.unwrap_or_default(),
        diff_digest: crate::diff::compared_digest(raw),
        given_mark: None,
    })
}

/// The times an object carries, as the server wrote them (RFC 3339, whole
/// seconds).
#[derive(Deserialize, Default)]
struct Times {
    #[serde(default, rename = "creationTimestamp")]
    creation: Option<String>,
    #[serde(default, rename = "managedFields")]
    managed: Vec<ManagedTime>,
}

#[derive(Deserialize, Default)]
struct ManagedTime {
    #[serde(default)]
    time: Option<String>,
}

#[derive(Deserialize, Default)]
struct WithTimes {
    #[serde(default)]
    metadata: Times,
}

/// The latest time, by the server's clock (ms, whole seconds), an object
/// says it was written: its newest `managedFields` time (the API server
/// stamps a manager's entry when its write changes a value it owns) or its
/// `creationTimestamp`. The write that made this version happened at or
/// after it; it happened then only when that write set the time, which is
/// why the recorder only weighs times no earlier event carried
/// (docs/consistency.md, "A recorder behind"). Never `deletionTimestamp`:
/// the server sets it to the deletion's start plus the grace period, a time
/// still to come. `None` when the object carries no time.
pub fn written_at(raw: &[u8]) -> Option<i64> {
    let t: WithTimes = serde_json::from_slice(raw).ok()?;
    let m = t.metadata;
    m.managed
        .iter()
        .filter_map(|e| e.time.as_deref())
        .chain(m.creation.as_deref())
        .filter_map(|s| crate::time::Millis::parse_rfc3339(s).ok())
        .map(|t| t.as_ms())
        .max()
}

/// Decodes one watch line. A line as the API server writes it,
/// `{"type":"MODIFIED","object":{...}}`, is parsed once: the walk that
/// digests the object also checks it is JSON and reads its identity
/// ([`crate::diff::compared_digest_and_identity`]). Any other line, or one
/// that walk does not take, is decoded part by part ([`decode_by_parts`]),
/// with the same result: the first way is only quicker (docs/journal.md,
/// "Where the recorder's time goes").
pub fn decode_line(line: &[u8]) -> Result<WireEvent, Malformed> {
    match decode_in_one_walk(line) {
        Some(event) => Ok(event),
        None => decode_by_parts(line),
    }
}

/// The object event of a line written as the API server writes it, read in
/// one walk; `None` for any line that walk does not take. The tests hold
/// that the real kube-apiserver's lines all take it.
pub fn decode_in_one_walk(line: &[u8]) -> Option<WireEvent> {
    let (watch_type, raw) = written_as_the_server_writes(line)?;
    let (digest, identity) = crate::diff::compared_digest_and_identity(raw)?;
    let name = identity.name.filter(|n| !n.is_empty())?;
    let resource_version = identity.resource_version.filter(|rv| !rv.is_empty())?;
    Some(WireEvent::Object {
        watch_type,
        meta: ObjectMeta {
            namespace: identity.namespace.unwrap_or_default(),
            name,
            uid: identity.uid.unwrap_or_default(),
            resource_version,
            diff_digest: Some(digest),
            given_mark: None,
        },
        raw: raw.to_vec(),
    })
}

/// The event type and the object's bytes of a line written as the API
/// server writes an object's event: `{"type":"` and the type, `","object":`,
/// the object, `}` and JSON whitespace. Nothing here says the object is
/// JSON; the caller's walk does.
fn written_as_the_server_writes(line: &[u8]) -> Option<(WatchType, &[u8])> {
    let rest = line.strip_prefix(br#"{"type":""#)?;
    let (watch_type, rest) = [WatchType::Added, WatchType::Modified, WatchType::Deleted]
        .into_iter()
        .find_map(|t| Some((t, rest.strip_prefix(t.as_str().as_bytes())?)))?;
    let object = rest.strip_prefix(br#"","object":"#)?;
    let object = trim_json_space(object).strip_suffix(b"}")?;
    Some((watch_type, trim_json_space(object)))
}

/// `raw` without JSON whitespace at either end, as a `RawValue` holds a
/// value (not `trim_ascii`: a form feed is not JSON whitespace).
fn trim_json_space(raw: &[u8]) -> &[u8] {
    let space = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r');
    let start = raw.iter().position(|b| !space(b)).unwrap_or(raw.len());
    let end = raw.iter().rposition(|b| !space(b)).map_or(start, |i| i + 1);
    &raw[start..end]
}

/// Decodes one watch line part by part: the envelope, then the object's
/// identity, then its digest.
fn decode_by_parts(line: &[u8]) -> Result<WireEvent, Malformed> {
    let env: Envelope<'_> = serde_json::from_slice(line).map_err(|e| Malformed(e.to_string()))?;
    let raw = env.object.get().as_bytes();
    let watch_type = match env.kind {
        "ADDED" => WatchType::Added,
        "MODIFIED" => WatchType::Modified,
        "DELETED" => WatchType::Deleted,
        "BOOKMARK" => {
            let meta: Meta = serde_json::from_slice(raw).map_err(|e| Malformed(e.to_string()))?;
            let resource_version = meta
                .metadata
                .resource_version
                .filter(|rv| !rv.is_empty())
                .ok_or_else(|| Malformed("bookmark without resourceVersion".into()))?;
            return Ok(WireEvent::Bookmark { resource_version });
        }
        "ERROR" => return Ok(WireEvent::Error(parse_status(raw, 500, None))),
        other => return Err(Malformed(format!("unknown event type {other:?}"))),
    };
    let meta = object_meta(raw)?;
    if meta.resource_version.is_empty() {
        return Err(Malformed(format!(
            "{} {} without resourceVersion",
            watch_type, meta.name
        )));
    }
    Ok(WireEvent::Object {
        watch_type,
        meta,
        raw: raw.to_vec(),
    })
}

#[cfg(test)]
mod tests {

    #[test]
    fn an_object_was_written_at_or_after_its_newest_time() {
        let t = |s: &str| crate::time::Millis::parse_rfc3339(s).unwrap().as_ms();
        let raw = br#"{"metadata":{"name":"a","creationTimestamp":"2026-12-01T10:00:00Z",
            "managedFields":[{"manager":"a","time":"2026-12-01T10:05:00Z"},
                             {"manager":"b","time":"2026-12-01T10:03:00Z"},{"manager":"c"}]},
            "spec":{}}"#;
        assert_eq!(written_at(raw), Some(t("2026-12-01T10:05:00Z")));
        // A deletion's time is its start plus the grace period: never taken.
        let deleting = br#"{"metadata":{"name":"a","creationTimestamp":"2026-12-01T10:00:00Z",
            "deletionTimestamp":"2026-12-01T11:00:00Z"}}"#;
        assert_eq!(written_at(deleting), Some(t("2026-12-01T10:00:00Z")));
        assert_eq!(written_at(br#"{"metadata":{"name":"a"}}"#), None);
        assert_eq!(written_at(b"not json"), None);
    }

    use super::*;

    #[test]
    fn objects_keep_their_exact_bytes() {
        let object = r#"{"kind":"Widget","apiVersion":"example.com/v1","metadata":{"name":"w","namespace":"shop","uid":"u1","resourceVersion":"42"},"spec":{"unknownField":{"z":1,"a":[1.50,"x"]}}}"#;
        let line = format!(r#"{{"type":"MODIFIED","object":{object}}}"#);
        match decode_line(line.as_bytes()).unwrap() {
            WireEvent::Object {
                watch_type,
                meta,
                raw,
            } => {
                assert_eq!(watch_type, WatchType::Modified);
                assert_eq!(meta.name, "w");
                assert_eq!(meta.namespace, "shop");
                assert_eq!(meta.uid, "u1");
                assert_eq!(meta.resource_version, "42");
                assert_eq!(raw, object.as_bytes());
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn metadata_is_found_wherever_it_is() {
        for raw in [
            r#"{"metadata":{"name":"a","namespace":"n","uid":"u","resourceVersion":"1"},"spec":{"x":[1,2,{"y":"z"}]}}"#,
            r#"{"spec":{"x":[1,2,{"metadata":"decoy"}]},"kind":"X","metadata":{"name":"a","namespace":"n","uid":"u","resourceVersion":"1"}}"#,
            r#"{"me\u0074adata":{"name":"a","namespace":"n","uid":"u","resourceVersion":"1"}}"#,
        ] {
            let m = object_meta(raw.as_bytes()).unwrap();
            assert_eq!(
                (m.name.as_str(), m.resource_version.as_str()),
                ("a", "1"),
                "{raw}"
            );
        }
        assert!(object_meta(br#"{"spec":{}}"#).is_err());
        assert!(object_meta(br#"[1,2]"#).is_err());
        assert!(object_meta(br#"{"metadata":{"name":7}}"#).is_err());
    }

    #[test]
    fn bookmarks_errors_and_garbage() {
        let b = decode_line(
            br#"{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"115"}}}"#,
        )
        .unwrap();
        assert_eq!(
            b,
            WireEvent::Bookmark {
                resource_version: "115".into()
            }
        );
        let e = decode_line(
            br#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version: 5 (100)","reason":"Expired","code":410}}"#,
        )
        .unwrap();
        assert!(matches!(e, WireEvent::Error(ref s) if s.is_expired()));
        assert!(decode_line(br#"{"type":"MODIFIED","object":{bad"#).is_err());
        assert!(decode_line(b"garbage").is_err());
        assert!(decode_line(br#"{"type":"MODIFIED","object":{"metadata":{"name":"x"}}}"#).is_err());
        assert!(decode_line(br#"{"type":"SURPRISE","object":{}}"#).is_err());
    }

    #[test]
    fn a_line_as_the_server_writes_it_is_read_in_one_walk() {
        let object = r#"{"metadata":{"name":"w","namespace":"shop","uid":"u1","resourceVersion":"42"},"spec":{"a":1}}"#;
        let line = format!("{{\"type\":\"ADDED\",\"object\":{object} }}\r\n");
        assert_eq!(
            written_as_the_server_writes(line.as_bytes()),
            Some((WatchType::Added, object.as_bytes()))
        );
        // Not the server's way: read part by part, to the same answer.
        for other in [
            format!("{{\"object\":{object},\"type\":\"ADDED\"}}"),
            format!("{{ \"type\":\"ADDED\",\"object\":{object}}}"),
            format!("{{\"type\":\"ADDED\",\"object\":{object}}}\u{c}"),
        ] {
            assert_eq!(
                written_as_the_server_writes(other.as_bytes()),
                None,
                "{other}"
            );
        }
        assert!(decode_line(line.as_bytes()).is_ok());
    }
}

/// `decode_line` reads a line in one walk where it can, and part by part
/// where it cannot: the answer must be the same, for any line.
#[cfg(test)]
mod same_either_way {
    use super::*;
    use proptest::prelude::*;

    /// A member of `metadata`: the identity members in every shape the two
    /// ways must agree on, and others.
    fn metadata_member() -> impl Strategy<Value = String> {
        let value = prop_oneof![
            4 => Just(r#""a""#.to_string()),
            1 => Just(r#""""#.to_string()),
            1 => Just("null".to_string()),
            1 => Just("7".to_string()),
            1 => Just(r#"{"x":1}"#.to_string()),
            1 => Just(r#""\u0061b""#.to_string()),
            1 => Just(r#""42""#.to_string()),
        ];
        let key = prop_oneof![
            Just("name"),
            Just("namespace"),
            Just("uid"),
            Just("resourceVersion"),
            Just("n\\u0061me"),
            Just("labels"),
            Just("generation"),
            Just("annotations"),
        ];
        (key, value).prop_map(|(k, v)| {
            let v = match k {
                "annotations" | "labels" if v == "null" => "{}".to_string(),
                // Only `metadata`'s own `name` names the object.
                "annotations" | "labels" if v.starts_with('"') => format!(r#"{{"name":{v}}}"#),
                _ => v,
            };
            format!(r#""{k}":{v}"#)
        })
    }

    fn object() -> impl Strategy<Value = String> {
        // Mostly a name and a resourceVersion that are fine, so that what
        // else is there decides.
        let fine = (
            prop::option::weighted(0.9, Just(r#""name":"a""#.to_string())),
            prop::option::weighted(0.9, Just(r#""resourceVersion":"42""#.to_string())),
        )
            .prop_map(|(n, rv)| n.into_iter().chain(rv).collect::<Vec<_>>());
        let metadata = (fine, prop::collection::vec(metadata_member(), 0..3))
            .prop_flat_map(|(fine, more)| Just([fine, more].concat()).prop_shuffle())
            .prop_map(|m| format!("{{{}}}", m.join(",")));
        let others = prop::sample::subsequence(
            vec![
                r#""spec":{"x":[1,2.5,"y",null,true]}"#,
                r#""status":{"ready":1}"#,
                r#""kind":"Thing""#,
                r#""data":{"metadata":{"name":"decoy"}}"#,
                r#""name":"top""#,
            ],
            0..=5,
        );
        let members =
            (prop::option::weighted(0.9, metadata), others).prop_flat_map(|(metadata, others)| {
                let mut m: Vec<String> = others.into_iter().map(str::to_string).collect();
                m.extend(metadata.map(|m| format!(r#""metadata":{m}"#)));
                Just(m).prop_shuffle()
            });
        prop_oneof![
            16 => members.prop_map(|m| format!("{{{}}}", m.join(","))),
            1 => Just("[1]".to_string()),
            1 => Just(r#"{"metadata":{"name":"a","resourceVersion":"1"}"#.to_string()),
            1 => Just(r#"{"metadata":{"name":"a"},"metadata":{"resourceVersion":"1"}}"#.to_string()),
        ]
    }

    fn line() -> impl Strategy<Value = Vec<u8>> {
        let kind = prop_oneof![
            3 => Just("ADDED"),
            3 => Just("MODIFIED"),
            3 => Just("DELETED"),
            1 => Just("BOOKMARK"),
            1 => Just("SURPRISE"),
        ];
        let end = prop_oneof![
            8 => Just(""),
            8 => Just("\n"),
            1 => Just(" \r\n"),
            1 => Just("\u{c}"),
            1 => Just(",\"type\":\"ADDED\""),
            1 => Just(" x"),
        ];
        (kind, object(), any::<bool>(), end).prop_map(|(kind, object, space, end)| {
            let space = if space { " " } else { "" };
            let (body, tail) = match end {
                "" | "\n" | " \r\n" | "\u{c}" | " x" => (String::new(), end),
                more => (more.to_string(), ""),
            };
            format!(r#"{{"type":"{kind}","object":{space}{object}{space}{body}}}{tail}"#)
                .into_bytes()
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        #[test]
        fn one_walk_or_part_by_part(line in line()) {
            prop_assert_eq!(
                decode_line(&line),
                decode_by_parts(&line),
                "{}",
                String::from_utf8_lossy(&line)
            );
        }
    }
}
