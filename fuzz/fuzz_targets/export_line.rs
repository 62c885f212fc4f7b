//! Export lines: `krply::journal::export::export`, the NDJSON that other tools read,
//! over a journal whose records carry whatever names, namespaces, bodies and gap
//! reasons the input holds (as a damaged or hostile journal, or an odd cluster, could).
//!
//! Input: fields separated by 0xFF: name, namespace, the baseline item's body, the
//! event's body, the gap's reason. Each input is written through the journal writer
//! into a fresh journal in a scratch directory, then exported.
//!
//! Properties: no panic; one line per record, each a JSON object with a known
//! `record`; names, namespaces and reasons come back as written; an object body that
//! is JSON comes back byte for byte, any other body as null.

#![no_main]

use krply::journal::Journal;
use krply::journal::export::{ExportOptions, export};
use krply::journal::records::{CheckpointReason, GapInfo};
use krply::journal::writer::{Op, Writer};
use krply::model::{ObjectMeta, ResourceType, StreamSpec, WatchType};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use serde_json::value::RawValue;

fn spec() -> StreamSpec {
    StreamSpec {
        resource: ResourceType {
            group: String::new(),
            version: "v1".into(),
            resource: "configmaps".into(),
            kind: "ConfigMap".into(),
            singular: "configmap".into(),
            short_names: vec!["cm".into()],
            namespaced: true,
        },
        namespace: None,
        selector: None,
    }
}

/// The object of an exported line, exactly as the line holds it.
#[derive(serde::Deserialize)]
struct Embedded<'a> {
    #[serde(borrow)]
    object: Option<&'a RawValue>,
}

/// A body that is one JSON value comes back as it was journaled.
fn is_json(body: &[u8]) -> bool {
    serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok()
        && std::str::from_utf8(body).is_ok()
}

fuzz_target!(|data: &[u8]| {
    let mut fields = data.split(|b| *b == 0xff);
    let mut next = || fields.next().unwrap_or_default().to_vec();
    let name = String::from_utf8_lossy(&next()).into_owned();
    let namespace = String::from_utf8_lossy(&next()).into_owned();
    let listed = next();
    let event = next();
    let reason = String::from_utf8_lossy(&next()).into_owned();
    if name.is_empty() {
        // The recorder never journals an object without a name.
        return;
    }

    let dir = tempfile::tempdir().expect("a scratch directory");
    let journal = Journal::open_or_create(&dir.path().join("journal.db")).expect("a journal");
    journal
        .register_cluster("fuzz", "https://127.0.0.1:6443", None)
        .expect("register the cluster");
    let stream = journal
        .register_stream("fuzz", &spec())
        .expect("register the stream");
    // With the diff digest the recorder would take of the body (any bytes).
    let meta = |rv: &str, body: &[u8]| ObjectMeta {
        namespace: namespace.clone(),
        name: name.clone(),
        uid: "u".into(),
        resource_version: rv.into(),
        diff_digest: krply::diff::compared_digest(body),
        given_mark: None,
    };
    let writer = Writer::start(journal).expect("start the writer");
    let tx = writer.sender();
    for op in [
        Op::BaselineItem {
            stream,
            at: 1_000,
            meta: meta("10", &listed),
            body: listed.clone(),
        },
        Op::BaselineEnd {
            stream,
            at: 1_000,
            list_rv: "10".into(),
            items: 1,
        },
        Op::Event {
            stream,
            at: 2_000,
            watch_type: WatchType::Modified,
            meta: meta("11", &event),
            body: event.clone(),
        },
        Op::Gap {
            stream,
            at: 3_000,
            info: GapInfo {
                from: 2_500,
                from_rv: Some("11".into()),
                reason: reason.clone(),
            },
        },
        Op::Checkpoint {
            stream,
            at: 4_000,
            rv: "12".into(),
            reason: CheckpointReason::Stop,
        },
    ] {
        tx.blocking_send(op).expect("journal a record");
    }
    // The writer ends once every sender is gone.
    drop(tx);
    writer.finish().expect("the writer commits");

    let journal = Journal::open(&dir.path().join("journal.db")).expect("reopen the journal");
    let mut out = Vec::new();
    let lines = export(&journal, &ExportOptions::default(), &mut out).expect("export");
    let text = String::from_utf8(out).expect("export writes UTF-8");
    let raw_lines: Vec<&str> = text.lines().collect();
    let parsed: Vec<Value> = raw_lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(parsed.len() as u64, lines);
    let records: Vec<&str> = parsed
        .iter()
        .map(|l| l["record"].as_str().unwrap())
        .collect();
    assert_eq!(
        records,
        ["baseline", "event", "gap", "checkpoint"],
        "{text}"
    );

    for (i, body) in [(0, &listed), (1, &event)] {
        let line = &parsed[i];
        assert_eq!(line["name"], Value::from(name.as_str()), "{line}");
        let ns = if namespace.is_empty() {
            Value::Null
        } else {
            Value::from(namespace.as_str())
        };
        assert_eq!(line["namespace"], ns, "{line}");
        let embedded: Embedded = serde_json::from_str(raw_lines[i]).expect("parsed above");
        match embedded.object {
            Some(raw) => {
                assert!(is_json(body), "{line}");
                let same = serde_json::from_str::<Value>(raw.get()).ok()
                    == serde_json::from_slice::<Value>(body).ok();
                assert!(same, "{line}");
                // Byte for byte, but for whitespace that would break the line.
                let kept = std::str::from_utf8(body).unwrap().trim();
                if !kept.contains(['\n', '\r']) {
                    assert_eq!(raw.get(), kept, "{line}");
                }
            }
            None => assert!(
                !is_json(body) || serde_json::from_slice::<Value>(body).ok() == Some(Value::Null),
                "{line}"
            ),
        }
    }
    assert_eq!(parsed[2]["reason"], Value::from(reason.as_str()));
});
