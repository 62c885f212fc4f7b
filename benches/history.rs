//! History benchmark (prints figures; asserts nothing).
//!
//! Builds a journal of 1M events over 10k Deployments in the shape the
//! simulator produces (server-filled metadata, managedFields, status), spread
//! over the last 7 days, through the real journal writer. Then times, as a user
//! runs them (whole CLI processes): `diff --since 30m`, a raw `sqlite3` select
//! of the same window's rows, `timeline` and `get --at`; and prints the journal's
//! size against the raw JSON it holds.
//!
//! `cargo bench --bench history` (`-- --quick` for 100k events over 1k objects).

use krply::journal::records::CheckpointReason;
use krply::journal::writer::Op;
use krply::model::{ObjectMeta, WatchType};
use krply::sim::{Seed, SimConfig, Simulator};
use krply::time::Millis;
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

mod common;

const BIN: &str = env!("CARGO_BIN_EXE_kubectl-krply");
const NS: &str = "bench";
const CLUSTER: &str = "bench-cluster";

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (objects, events) = if quick {
        (1_000, 100_000)
    } else {
        (10_000, 1_000_000)
    };
    println!("kubectl-krply history benchmark: {events} events over {objects} objects, 7 days");
    let dir = tempfile::tempdir().unwrap();
    // KRPLY_BENCH_JOURNAL=PATH keeps the journal there (and reuses it if present).
    let kept = std::env::var_os("KRPLY_BENCH_JOURNAL").map(std::path::PathBuf::from);
    let store = kept
        .clone()
        .unwrap_or_else(|| dir.path().join("journal.db"));
    let started = Instant::now();
    let raw_bytes = if store.exists() {
        println!("reusing {}", store.display());
        0
    } else {
        build(&store, objects, events)
    };
    let size = file_size(&store);
    if raw_bytes == 0 {
        println!(
            "journal {:.1} MB (its raw JSON size is known only when built)",
            size as f64 / 1e6
        );
    } else {
        println!(
            "built in {:.1}s; journal {:.1} MB for {:.1} MB of raw JSON = 1/{:.1}",
            started.elapsed().as_secs_f64(),
            size as f64 / 1e6,
            raw_bytes as f64 / 1e6,
            raw_bytes as f64 / size as f64
        );
    }
    let _ = kept;

    let base = [
        "--store",
        store.to_str().unwrap(),
        "--cluster-id",
        CLUSTER,
        "-n",
        NS,
    ];
    let run = |args: &[&str]| {
        let out = Command::new(BIN)
            .args(base)
            .args(args)
            .env("KUBECONFIG", dir.path().join("none"))
            .output()
            .unwrap();
        assert!(
            matches!(out.status.code(), Some(0) | Some(3)),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout.len()
    };
    let time = |label: &str, args: &[&str]| -> f64 {
        let mut times: Vec<f64> = (0..7)
            .map(|_| {
                let t = Instant::now();
                run(args);
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        times.sort_by(f64::total_cmp);
        let median = times[times.len() / 2];
        println!(
            "{label:<44} median {median:>7.1} ms (min {:.1}, max {:.1})",
            times[0], times[6]
        );
        median
    };

    let diff_ms = time(
        "diff --since 30m -o json (whole process)",
        &["diff", "--since", "30m", "-o", "json"],
    );
    time("diff --since 30m (text)", &["diff", "--since", "30m"]);
    let rows = window_rows(&store);
    let select_ms = sqlite3_select(&store);
    println!(
        "raw sqlite3 select of the window's {rows} rows      median {select_ms:>7.1} ms -> diff/select ratio {:.2} (goal <= 3)",
        diff_ms / select_ms
    );
    println!(
        "diff goal <= 100 ms: {}",
        if diff_ms <= 100.0 { "met" } else { "not met" }
    );
    // Three quarters of the events hit a tenth of the objects (the hot set):
    // time the busiest object's timeline and a quiet one's.
    let busiest = "deploy/frontend-0";
    let quiet = format!("deploy/frontend-{}", objects / 20);
    let versions = |object: &str| {
        let out = Command::new(BIN)
            .args(base)
            .args(["timeline", object, "-o", "json"])
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        v["entries"].as_array().map_or(0, Vec::len)
    };
    let mut timeline_ms = Vec::new();
    for (what, object) in [("busiest", busiest), ("quiet", quiet.as_str())] {
        timeline_ms.push(time(
            &format!("timeline {object} ({what}, {} versions)", versions(object)),
            &["timeline", object],
        ));
    }
    println!(
        "timeline goal <= 30 ms: busiest {}, quiet {} (mean versions per object: {})",
        if timeline_ms[0] <= 30.0 {
            "met"
        } else {
            "not met"
        },
        if timeline_ms[1] <= 30.0 {
            "met"
        } else {
            "not met"
        },
        events / objects
    );
    time(
        "get deploy/frontend-0 --at 1d",
        &["get", busiest, "--at", "1d"],
    );
    time(
        "snapshot --at 3d (counts only)",
        &["snapshot", "--at", "3d"],
    );
    time("status", &["status"]);
}

/// Deployments as the simulator writes them.
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

/// Writes the journal; returns the raw JSON bytes it holds.
fn build(store: &Path, objects: usize, events: usize) -> u64 {
    let templates = templates();
    let (writer, stream) = common::deployment_journal(store, CLUSTER, NS);
    let tx = writer.sender();
    let now = Millis::now().as_ms();
    let span = 7 * 24 * 3600 * 1000i64;
    let start = now - span;
    let mut rv = 1000u64;
    let mut raw = 0u64;
    let mut objs: Vec<Value> = (0..objects)
        .map(|i| {
            let mut d = templates[i % templates.len()].clone();
            let base = d["metadata"]["name"].as_str().unwrap().to_string();
            d["metadata"]["name"] = json!(format!("{base}-{}", i / templates.len()));
            d["metadata"]["namespace"] = json!(NS);
            d["metadata"]["uid"] = json!(format!("00000000-0000-4000-8000-{i:012}"));
            d
        })
        .collect();
    let meta = |d: &Value| ObjectMeta {
        namespace: NS.into(),
        name: d["metadata"]["name"].as_str().unwrap().into(),
        uid: d["metadata"]["uid"].as_str().unwrap().into(),
        resource_version: d["metadata"]["resourceVersion"].as_str().unwrap().into(),
    };
    for d in &mut objs {
        rv += 1;
        d["metadata"]["resourceVersion"] = json!(rv.to_string());
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
            at: start,
            meta: meta(d),
            body,
        })
        .unwrap();
    }
    tx.blocking_send(Op::BaselineEnd {
        stream,
        at: start,
        list_rv: rv.to_string(),
        items: objects as u64,
    })
    .unwrap();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for n in 0..events {
        let at = start + (span as i128 * (n as i128 + 1) / events as i128) as i64;
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
            meta: meta(d),
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
    let conn = rusqlite::Connection::open(store).unwrap();
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .unwrap();
    raw
}

fn window_rows(store: &Path) -> i64 {
    let conn = rusqlite::Connection::open(store).unwrap();
    let since = Millis::now().as_ms() - 30 * 60 * 1000;
    conn.query_row(
        "SELECT count(*) FROM zones z JOIN records r ON r.seq BETWEEN z.first_seq AND z.last_seq
         WHERE z.max_at > ?1 AND r.observed_at > ?1 AND r.object_id IS NOT NULL",
        [since],
        |r| r.get(0),
    )
    .unwrap()
}

/// The same window's object records, bodies included, through the sqlite3 shell
/// (or rusqlite when the shell is not installed), found the way krply finds
/// them: through the zones (docs/journal.md, "Zones").
fn sqlite3_select(store: &Path) -> f64 {
    let since = Millis::now().as_ms() - 30 * 60 * 1000;
    let sql = format!(
        "SELECT r.*, b.data FROM zones z JOIN records r ON r.seq BETWEEN z.first_seq AND z.last_seq
         LEFT JOIN bodies b ON b.id = r.body_id
         WHERE z.max_at > {since} AND r.observed_at > {since} AND r.object_id IS NOT NULL;"
    );
    let shell = Command::new("sqlite3").arg("-version").output().is_ok();
    let mut times: Vec<f64> = (0..7)
        .map(|_| {
            let t = Instant::now();
            if shell {
                let out = Command::new("sqlite3")
                    .arg(store)
                    .arg(&sql)
                    .output()
                    .unwrap();
                assert!(out.status.success());
            } else {
                let conn = rusqlite::Connection::open(store).unwrap();
                let mut stmt = conn.prepare(&sql).unwrap();
                let mut rows = stmt.query([]).unwrap();
                while rows.next().unwrap().is_some() {}
            }
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    if !shell {
        println!("(sqlite3 shell not installed: timed the select through rusqlite)");
    }
    times[times.len() / 2]
}

fn file_size(store: &Path) -> u64 {
    ["", "-wal"]
        .iter()
        .map(|s| std::fs::metadata(format!("{}{s}", store.display())).map_or(0, |m| m.len()))
        .sum()
}
