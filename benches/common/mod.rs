//! What the benches share: a fresh journal with one Deployment stream, and
//! its writer; the history bench's journal of 1M events.

use krply::journal::Journal;
use krply::journal::StreamId;
use krply::journal::records::CheckpointReason;
use krply::journal::writer::Op;
use krply::journal::writer::Writer;
use krply::model::StreamSpec;
use krply::model::{ObjectMeta, WatchType};
use krply::time::Millis;
use krply_sim::{Seed, SimConfig, Simulator};
use serde_json::{Value, json};
use std::path::Path;

/// A journal at `store` for cluster `cluster` with one stream of the
/// Deployments of namespace `ns`, and the writer that records into it.
pub fn deployment_journal(store: &Path, cluster: &str, ns: &str) -> (Writer, StreamId) {
    let journal = Journal::open_or_create(store).unwrap();
    journal
        .register_cluster(cluster, "https://bench.example:6443", Some("bench"))
        .unwrap();
    let spec = StreamSpec {
        resource: krply_sim::builtin_type("apps", "deployments").unwrap(),
        namespace: Some(ns.into()),
        selector: None,
    };
    let stream = journal.register_stream(cluster, &spec).unwrap();
    (Writer::start(journal).unwrap(), stream)
}

/// Runs `cmd` to its end and returns what it wrote; its failure is the
/// bench's, with what it said on stderr.
#[allow(dead_code)] // not every bench runs the binary
pub fn output_of(cmd: &mut std::process::Command) -> std::process::Output {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The history journal's size: 1M events over 10k objects, or with
/// `--quick` 100k over 1k.
#[allow(dead_code)] // not every bench builds it
pub fn history_size() -> (usize, usize) {
    if std::env::args().any(|a| a == "--quick") {
        (1_000, 100_000)
    } else {
        (10_000, 1_000_000)
    }
}

/// How many days the history bench's changes span: 7, or 70 with
/// `--ten-million` (ten times the events at the same rate, so a window of
/// the last 30 minutes holds as many; its cost must not grow with the
/// journal).
#[allow(dead_code)] // the history bench's only
pub fn history_span() -> (usize, usize, i64) {
    let (objects, events) = history_size();
    if std::env::args().any(|a| a == "--ten-million") {
        (objects, events * 10, 70)
    } else {
        (objects, events, 7)
    }
}

/// Deployments as the simulator writes them.
#[allow(dead_code)] // used by history_journal only
fn templates() -> Vec<Value> {
    let sim = Simulator::start_background(SimConfig {
        seed: Seed::Shop,
        ..SimConfig::default()
    })
    .unwrap();
    let out = sim.list("apps/v1", "Deployment", Some("shop"));
    sim.shutdown();
    out
}

/// The history bench's journal: a baseline of `objects`
/// Deployments at `ns`, then `events` changes spread evenly over the last 7
/// days, three quarters of them on a tenth of the objects (with `--restart`,
/// a recorder restart two hours ago: a gap and a list of every object);
/// returns the raw JSON bytes it holds.
#[allow(dead_code)] // not every bench builds it
pub fn history_journal(
    store: &Path,
    cluster: &str,
    ns: &str,
    objects: usize,
    events: usize,
) -> u64 {
    history_journal_over(store, cluster, ns, objects, events, 7)
}

/// [`history_journal`] over the last `days` days.
#[allow(dead_code)] // not every bench builds it
pub fn history_journal_over(
    store: &Path,
    cluster: &str,
    ns: &str,
    objects: usize,
    events: usize,
    days: i64,
) -> u64 {
    let templates = templates();
    let (writer, stream) = deployment_journal(store, cluster, ns);
    let tx = writer.sender();
    let now = Millis::now().as_ms();
    let span = days * 24 * 3600 * 1000i64;
    let start = now - span;
    let mut rv = 1000u64;
    let mut raw = 0u64;
    let mut objs: Vec<Value> = (0..objects)
        .map(|i| {
            let mut d = templates[i % templates.len()].clone();
            let base = d["metadata"]["name"].as_str().unwrap().to_string();
            d["metadata"]["name"] = json!(format!("{base}-{}", i / templates.len()));
            d["metadata"]["namespace"] = json!(ns);
            d["metadata"]["uid"] = json!(format!("00000000-0000-4000-8000-{i:012}"));
            d
        })
        .collect();
    // As the recorder reads it, with the digest of what a default diff compares.
    let meta = |d: &Value, body: &[u8]| ObjectMeta {
        namespace: ns.into(),
        name: d["metadata"]["name"].as_str().unwrap().into(),
        uid: d["metadata"]["uid"].as_str().unwrap().into(),
        resource_version: d["metadata"]["resourceVersion"].as_str().unwrap().into(),
        diff_digest: krply::diff::compared_digest(body),
        given_mark: None,
    };
    for d in &mut objs {
        rv += 1;
        d["metadata"]["resourceVersion"] = json!(rv.to_string());
    }
    // A list of every object at `at`; its bytes.
    let list = |objs: &[Value], at: i64, rv: u64| -> u64 {
        let mut raw = 0;
        for d in objs {
            // List items come without apiVersion and kind, as from a real server.
            let mut item = d.clone();
            if let Some(m) = item.as_object_mut() {
                m.remove("apiVersion");
                m.remove("kind");
            }
            let body = serde_json::to_vec(&item).unwrap();
            raw += body.len() as u64;
            tx.blocking_send(Op::BaselineItem {
                stream,
                at,
                meta: meta(d, &body),
                body,
            })
            .unwrap();
        }
        tx.blocking_send(Op::BaselineEnd {
            stream,
            at,
            list_rv: rv.to_string(),
            items: objs.len() as u64,
        })
        .unwrap();
        raw
    };
    raw += list(&objs, start, rv);
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    // `--restart`: the recorder stopped for a minute two hours ago, then
    // listed every object again, as a restarted recorder does.
    let mut restart = std::env::args()
        .any(|a| a == "--restart")
        .then_some(now - 2 * 3_600_000);
    for n in 0..events {
        let at = start + (span as i128 * (n as i128 + 1) / events as i128) as i64;
        if let Some(relist_at) = restart.filter(|r| at >= *r) {
            restart = None;
            tx.blocking_send(Op::Gap {
                stream,
                at: relist_at,
                info: krply::journal::records::GapInfo {
                    from: relist_at - 60_000,
                    from_rv: Some(rv.to_string()),
                    reason: "recorder not running".into(),
                },
            })
            .unwrap();
            raw += list(&objs, relist_at, rv);
        }
        // Most churn hits a tenth of the objects, like a real cluster.
        let i = if next() % 4 == 0 {
            (next() as usize) % objects
        } else {
            (next() as usize) % (objects / 10).max(1)
        };
        let d = &mut objs[i];
        rv += 1;
        let generation = d["metadata"]["generation"].as_i64().unwrap_or(1) + 1;
        d["metadata"]["resourceVersion"] = json!(rv.to_string());
        d["metadata"]["generation"] = json!(generation);
        d["metadata"]["annotations"] = json!({"bench/step": n.to_string(), "deployment.kubernetes.io/revision": (generation / 3).to_string()});
        d["spec"]["replicas"] = json!(next() % 5 + 1);
        if let Some(t) = d.pointer_mut("/metadata/managedFields/0/time") {
            *t = json!(Millis::from_ms(at).to_string().replace(".000", ""));
        }
        if let Some(status) = d.get_mut("status").and_then(Value::as_object_mut) {
            status.insert("observedGeneration".into(), json!(generation));
        }
        let body = serde_json::to_vec(&d).unwrap();
        raw += body.len() as u64;
        tx.blocking_send(Op::Event {
            stream,
            at,
            watch_type: WatchType::Modified,
            meta: meta(d, &body),
            body,
        })
        .unwrap();
    }
    tx.blocking_send(Op::Checkpoint {
        stream,
        at: now,
        rv: rv.to_string(),
        reason: CheckpointReason::Stop,
    })
    .unwrap();
    drop(tx);
    writer.finish().unwrap();
    fold_as_a_stop(store);
    raw
}

/// Leaves the journal at `store` as a recorder that ran over its history
/// and stopped leaves it: every object's records folded into blocks (behind
/// the writer while it ran, the rest at its stop: docs/journal.md, "Cold
/// history in blocks"), the freed pages given back, the WAL emptied. The
/// builders here write faster than a recorder reads, so their writer is
/// never idle to fold behind itself; a journal reused from an older build
/// is brought to the same shape (folding a folded one does nothing).
pub fn fold_as_a_stop(store: &Path) {
    let journal = Journal::open(store).unwrap();
    let streams: Vec<StreamId> = journal
        .streams(None)
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    let t = std::time::Instant::now();
    let done = journal
        .fold_at_stop(
            &streams,
            std::time::Instant::now() + std::time::Duration::from_secs(24 * 3600),
        )
        .unwrap();
    assert!(done.complete, "the fold stopped before its end");
    if done.folded.records > 0 {
        println!(
            "folded as a recorder's stop does: {} records into {} blocks in {:.1}s",
            done.folded.records,
            done.folded.blocks,
            t.elapsed().as_secs_f64()
        );
    }
    drop(journal);
    let conn = rusqlite::Connection::open(store).unwrap();
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .unwrap();
}

/// The bytes of JSON the object records of the journal at `store` hold, each
/// body as many times as records hold it: those of its rows' bodies, and
/// those its blocks' columns give for each record (a recorder's journal
/// keeps most of its history in blocks).
#[allow(dead_code)] // the history and segments benches'
pub fn raw_json_bytes(store: &Path) -> u64 {
    let conn =
        rusqlite::Connection::open_with_flags(store, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let rows: i64 = conn
        .query_row(
            "SELECT coalesce(sum(b.raw_len), 0) FROM records r JOIN bodies b ON b.id = r.body_id",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let mut codec = krply::journal::codec::Codec::new();
    let mut stmt = conn.prepare("SELECT columns FROM blocks").unwrap();
    let mut blocks = stmt.query([]).unwrap();
    let mut cold = 0u64;
    while let Some(row) = blocks.next().unwrap() {
        let frame: Vec<u8> = row.get(0).unwrap();
        let cols = krply::journal::block::columns_without_versions(&mut codec, &frame).unwrap();
        cold += cols
            .records
            .iter()
            .filter_map(|r| r.body.as_ref().map(|b| b.len() as u64))
            .sum::<u64>();
    }
    rows as u64 + cold
}

/// The first and last `observed_at` of a journal's object records, rows
/// and blocks.
#[allow(dead_code)] // the segments bench's
pub fn observed_span(conn: &rusqlite::Connection) -> (i64, i64) {
    conn.query_row(
        "SELECT min(lo), max(hi) FROM (
             SELECT min(observed_at) lo, max(observed_at) hi FROM records WHERE object_id IS NOT NULL
             UNION ALL SELECT min(min_at), max(max_at) FROM blocks)",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .unwrap()
}
