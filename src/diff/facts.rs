//! What an export says of an object beside its text: its uid and who wrote it
//! last, found while its text is checked to be JSON, in one pass over it.
//!
//! `export` and the Parquet segments write every recorded version with these
//! two facts. Read through serde, each fact and the check of the text were a
//! pass over the whole body each (three per version, a third of an export's
//! time); a [`Tape`] reads the body once and the facts are then read from
//! the few values they live in.
//!
//! A fact is what serde would read with the shapes below: a member of a
//! wrong type, or a member named twice, leaves the fact out (serde refuses
//! the document); the tests compare both on the shop's objects and on
//! random ones.

use super::tape::{Raw, Tape};
use serde::de::DeserializeOwned;

/// An object's text, checked to be JSON (as strictly as serde_json), with
/// its uid and its last writer.
pub struct ObjectFacts<'a> {
    pub text: &'a str,
    /// `metadata.uid`.
    pub uid: Option<String>,
    /// The manager of the newest `metadata.managedFields` entry, with its
    /// subresource (see [`super::last_writer`]).
    pub last_writer: Option<String>,
}

impl ObjectFacts<'_> {
    /// The facts of `bytes`, or none when they are not a JSON document.
    pub fn read(bytes: &[u8]) -> Option<ObjectFacts<'_>> {
        let text = std::str::from_utf8(bytes).ok()?;
        let tape = Tape::new(text).ok()?;
        let root = tape.root();
        let metadata = member(root, "metadata").ok().flatten();
        Some(ObjectFacts {
            text,
            uid: metadata.and_then(|m| member_as::<String>(m, "uid").ok().flatten()),
            last_writer: metadata.and_then(last_writer),
        })
    }
}

/// Why a member could not be read the way serde would read it.
struct Refused;

/// The member `key` of `object`, if it holds it once; refused when `object`
/// is not an object (or `null`, which reads as holding nothing) or holds
/// the key twice.
fn member<'t>(object: Raw<'t>, key: &str) -> Result<Option<Raw<'t>>, Refused> {
    if object.get() == "null" {
        return Ok(None);
    }
    let members = object.members().ok_or(Refused)?;
    let mut found = members
        .into_iter()
        .filter(|(k, _)| k == key)
        .map(|(_, v)| v);
    match found.next() {
        Some(_) if found.next().is_some() => Err(Refused),
        one => Ok(one),
    }
}

/// The member `key` of `object` read as a `T`, or refused.
fn member_as<T: DeserializeOwned>(object: Raw<'_>, key: &str) -> Result<Option<T>, Refused> {
    match member(object, key)? {
        None => Ok(None),
        Some(value) => serde_json::from_str::<Option<T>>(value.get()).map_err(|_| Refused),
    }
}

/// The manager of the newest `managedFields` entry of `metadata`.
fn last_writer(metadata: Raw<'_>) -> Option<String> {
    // serde reads `metadata: null` as a missing struct: refused.
    if metadata.get() == "null" {
        return None;
    }
    let entries = member(metadata, "managedFields").ok()??;
    let mut newest: Option<(Option<String>, String, Option<String>)> = None;
    for entry in entries.items()? {
        if !entry.is_object() {
            return None;
        }
        let manager = member_as::<String>(entry, "manager").ok()?;
        let time = member_as::<String>(entry, "time").ok()?;
        let subresource = member_as::<String>(entry, "subresource").ok()?;
        let Some(manager) = manager else { continue };
        // RFC 3339 times in UTC sort as text; an entry without one sorts
        // first; of equal times the later entry wins.
        if newest.as_ref().is_none_or(|(t, _, _)| time >= *t) {
            newest = Some((time, manager, subresource));
        }
    }
    let (_, manager, subresource) = newest?;
    Some(match subresource.filter(|s| !s.is_empty()) {
        Some(sub) => format!("{manager}/{sub}"),
        None => manager,
    })
}

#[cfg(test)]
mod tests {
    use super::ObjectFacts;
    use serde_json::{Value, json};

    /// The facts as serde reads them, one pass each: the reference.
    fn by_serde(bytes: &[u8]) -> Option<(Option<String>, Option<String>)> {
        #[derive(serde::Deserialize)]
        struct M {
            metadata: Option<Meta>,
        }
        #[derive(serde::Deserialize)]
        struct Meta {
            uid: Option<String>,
        }
        serde_json::from_slice::<&serde_json::value::RawValue>(bytes).ok()?;
        let uid = serde_json::from_slice::<M>(bytes)
            .ok()
            .and_then(|m| m.metadata)
            .and_then(|m| m.uid);
        Some((uid, super::super::last_writer(bytes)))
    }

    fn check(text: &str) {
        let ours = ObjectFacts::read(text.as_bytes()).map(|f| {
            assert_eq!(f.text, text);
            (f.uid, f.last_writer)
        });
        assert_eq!(ours, by_serde(text.as_bytes()), "{text}");
    }

    #[test]
    fn the_shops_objects_read_as_serde_reads_them() {
        let shop: Value = serde_json::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/shop/online-boutique.json"
        )))
        .unwrap();
        let mut seen = 0;
        for mut doc in shop["items"].as_array().unwrap().iter().cloned() {
            doc["metadata"]["uid"] = json!(format!("uid-{seen}"));
            doc["metadata"]["managedFields"] = json!([
                {"manager": "kubectl", "operation": "Apply", "time": "2026-12-01T10:00:00Z",
                 "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}},
                {"manager": "kube-controller-manager", "subresource": "status",
                 "time": "2026-12-01T10:05:00Z", "fieldsV1": {"f:status": {}}}
            ]);
            check(&doc.to_string());
            check(&serde_json::to_string_pretty(&doc).unwrap());
            seen += 1;
        }
        assert!(seen > 10, "only {seen} objects");
    }

    #[test]
    fn odd_shapes_read_as_serde_reads_them() {
        for text in [
            r#"{"metadata":{"uid":"a"}}"#,
            r#"{"metadata":{"uid":"a\u0062"}}"#,
            r#"{"metadata":{"uid":null}}"#,
            r#"{"metadata":{"uid":1}}"#,
            r#"{"metadata":{"uid":"a","uid":"b"}}"#,
            r#"{"metadata":null}"#,
            r#"{"metadata":1}"#,
            r#"{"metadata":{},"metadata":{}}"#,
            r#"{"metadata":{"managedFields":null}}"#,
            r#"{"metadata":{"managedFields":{}}}"#,
            r#"{"metadata":{"managedFields":[1]}}"#,
            r#"{"metadata":{"managedFields":[{"manager":"a"},{"manager":"b"}]}}"#,
            r#"{"metadata":{"managedFields":[{"manager":"a","time":"2"},{"manager":"b","time":"1"}]}}"#,
            r#"{"metadata":{"managedFields":[{"time":"3"},{"manager":"b","time":"1"}]}}"#,
            r#"{"metadata":{"managedFields":[{"manager":"a","manager":"b"}]}}"#,
            r#"{"metadata":{"managedFields":[{"manager":"a","subresource":""}]}}"#,
            r#"{"metadata":{"managedFields":[{"manager":"a","subresource":"scale"}]}}"#,
            r#"{"metadata":{"managedFields":[{"manager":1}]}}"#,
            r#"{"metadata":{"managedFields":[],"managedFields":[]}}"#,
            r#"{"metadata":{"uid":"u","managedFields":[{"manager":"a","time":null}]}}"#,
            r#"[]"#,
            r#""text""#,
            r#"{"metadata":{"uid":"a"}"#,
            r#"{"metadata":{"uid":"a"}} x"#,
            "",
        ] {
            check(text);
        }
        assert!(ObjectFacts::read(b"\xff").is_none());
    }

    /// Random objects shaped like Kubernetes', with members that may be
    /// missing, null, of another type or repeated.
    fn any_object() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let scalar = prop_oneof![
            Just("null".to_string()),
            Just("7".to_string()),
            "[a-c\\\\\"é]{0,3}".prop_map(|s| serde_json::to_string(&s).unwrap()),
        ];
        let entry = proptest::collection::vec(
            (
                prop_oneof![
                    Just("manager"),
                    Just("time"),
                    Just("subresource"),
                    Just("fieldsV1")
                ],
                scalar.clone(),
            ),
            0..4,
        )
        .prop_map(|members| {
            let members: Vec<String> = members
                .into_iter()
                .map(|(k, v)| format!("\"{k}\":{v}"))
                .collect();
            format!("{{{}}}", members.join(","))
        });
        let entries = prop_oneof![
            proptest::collection::vec(entry, 0..4).prop_map(|e| format!("[{}]", e.join(","))),
            scalar.clone(),
        ];
        let metadata = proptest::collection::vec(
            prop_oneof![
                scalar.clone().prop_map(|v| format!("\"uid\":{v}")),
                scalar.clone().prop_map(|v| format!("\"name\":{v}")),
                entries.prop_map(|v| format!("\"managedFields\":{v}")),
            ],
            0..4,
        )
        .prop_map(|m| format!("{{{}}}", m.join(",")));
        proptest::collection::vec(
            prop_oneof![
                metadata.prop_map(|v| format!("\"metadata\":{v}")),
                scalar.clone().prop_map(|v| format!("\"metadata\":{v}")),
                scalar.prop_map(|v| format!("\"spec\":{v}")),
            ],
            0..3,
        )
        .prop_map(|m| format!("{{{}}}", m.join(",")))
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
        #[test]
        fn random_objects_read_as_serde_reads_them(text in any_object()) {
            let ours = ObjectFacts::read(text.as_bytes()).map(|f| (f.uid, f.last_writer));
            proptest::prop_assert_eq!(ours, by_serde(text.as_bytes()), "{}", text);
        }
    }
}
