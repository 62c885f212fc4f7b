//! Recorder benchmark (prints figures; asserts nothing).
//!
//! 1. Throughput under sustained churn: the simulator runs in this process and a
//!    thread patches Deployments as fast as it can. First a bare client reads and
//!    decodes the watch stream (the floor any recorder pays); then the real
//!    `kubectl-krply record` process records the same churn into a journal.
//!    Rate = events / (churn start .. last event received, or durable).
//! 2. Journal size: journal bytes over the raw JSON bytes of what was recorded.
//! 3. Peak RSS (VmHWM) of the recorder while watching 20k objects.
//!
//! 4. The journal workloads W-wide (20,000 Deployments, 100,000 MODIFIED events, about
//!    5 per object) and W-deep (500 Deployments, 100,000 events, about 200 per object),
//!    with a mix of controller status churn (70 %), rollouts (20 %) and edits (10 %),
//!    each event of an object drawn at random. The objects are the engine
//!    yardstick's kind (Online Boutique's Deployments, about 2.1 KB), and the source
//!    serves them as given, from memory: the simulator's canned list, and its canned
//!    watch, let flow once the recorder's watch is open. So the source is far
//!    faster than any reader; its own rate and a bare client's are printed beside
//!    the recorder's, and the ratio only when the source is at least 3x both. The
//!    bare client reads as the yardstick's does: one GET on a plain socket, the
//!    chunked body decoded by hand, each line parsed into a [`BareValue`]. Bare
//!    client and recorder take three turns each, and the median ratio of the
//!    turns is the figure: this machine's speed drifts between runs.
//!
//! `cargo bench --bench recorder` (`-- --quick` for a smaller run, `--memory-only`,
//! `--throughput-only` or `--workloads-only` for one part).

use krply::cluster::{self, ConnectOptions, api};
use krply::journal::Journal;
use krply::recorder::wire::{WireEvent, decode_line};
use krply_sim::{KubeconfigOptions, Seed, SimConfig, Simulator};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[allow(dead_code)] // the history journal is other benches'
mod common;

const BIN: &str = env!("CARGO_BIN_EXE_kubectl-krply");
const NS: &str = "bench";

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (objects, events, big, rounds) = if quick {
        (200, 5_000, 2_000, 1)
    } else {
        (500, 30_000, 20_000, 3)
    };
    println!(
        "kubectl-krply recorder benchmark ({})",
        if quick { "quick" } else { "full" }
    );
    println!(
        "machine: {} cores",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    let only = |what: &str| std::env::args().any(|a| a == format!("--{what}-only"));
    if !only("memory") && !only("workloads") {
        // Both consumers share two cores with the simulator, so one run is
        // noisy: alternate them and report the spread.
        let mut ratios: Vec<f64> = (1..=rounds)
            .map(|round| {
                println!("-- round {round} of {rounds}");
                let (bare, recorded) = throughput(objects, events);
                recorded / bare
            })
            .collect();
        ratios.sort_by(f64::total_cmp);
        println!(
            "ratio recorder/bare over {rounds} round(s): min {:.2}, median {:.2}, max {:.2} (goal >= 0.9)",
            ratios[0],
            ratios[ratios.len() / 2],
            ratios[ratios.len() - 1]
        );
    }
    if !only("throughput") && !only("workloads") {
        memory(big);
    }
    if !only("memory") && !only("throughput") {
        let scale = if quick { 10 } else { 1 };
        workload("W-wide", 20_000 / scale, 100_000 / scale);
        workload("W-deep", 500 / scale, 100_000 / scale);
    }
}

/// What one event of the churn mix changes in a served Deployment: 70 % controller
/// status churn, 20 % rollouts, 10 % replica or annotation edits.
fn churn_step(d: &mut Value, k: usize, at: &str) {
    match k % 10 {
        0..=6 => {
            let ready = d["status"]["readyReplicas"].as_i64().unwrap_or(1);
            d["status"]["readyReplicas"] = json!(if ready > 1 { ready - 1 } else { ready + 1 });
            if let Some(c) = d["status"]["conditions"]
                .as_array_mut()
                .and_then(|c| c.first_mut())
            {
                c["lastUpdateTime"] = json!(at);
            }
            if let Some(m) = d["metadata"]["managedFields"]
                .as_array_mut()
                .and_then(|m| m.iter_mut().find(|m| m["subresource"] == "status"))
            {
                m["time"] = json!(at);
            }
        }
        7 | 8 => {
            let meta = &mut d["metadata"];
            let generation = meta["generation"].as_i64().unwrap_or(1) + 1;
            meta["generation"] = json!(generation);
            meta["annotations"]["deployment.kubernetes.io/revision"] =
                json!(generation.to_string());
            if let Some(c) = d["spec"]["template"]["spec"]["containers"]
                .as_array_mut()
                .and_then(|c| c.first_mut())
            {
                let image = c["image"].as_str().unwrap_or("app:v0").to_string();
                let base = image.rsplit_once(':').map_or(image.as_str(), |(b, _)| b);
                c["image"] = json!(format!("{base}:v0.{generation}"));
            }
        }
        _ => {
            if k % 20 == 9 {
                let replicas = d["spec"]["replicas"].as_i64().unwrap_or(1);
                d["spec"]["replicas"] = json!(replicas % 5 + 1);
            } else {
                d["metadata"]["annotations"]["bench/edited"] = json!(k.to_string());
            }
        }
    }
}

/// A small deterministic generator (xorshift64): the same workload every run.
struct Xorshift(u64);

impl Xorshift {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// `events` MODIFIED lines, each of an object drawn at random from `objects`
/// (as the yardstick draws them: some change often, some never), with
/// resourceVersions after `base_rv`; and the raw JSON bytes of the objects
/// they carry.
fn churn_lines(objects: &mut [Value], events: usize, base_rv: u64) -> (Vec<Vec<u8>>, usize) {
    let mut lines = Vec::with_capacity(events);
    let mut raw = 0;
    let mut pick = Xorshift(0x2545_f491_4f6c_dd1d);
    for k in 0..events {
        let n = objects.len();
        let d = &mut objects[pick.below(n)];
        let at = format!(
            "2026-12-01T{:02}:{:02}:{:02}Z",
            (k / 3600) % 24,
            (k / 60) % 60,
            k % 60
        );
        churn_step(d, k, &at);
        d["metadata"]["resourceVersion"] = json!((base_rv + 1 + k as u64).to_string());
        let object = serde_json::to_vec(d).unwrap();
        raw += object.len();
        let mut line = br#"{"type":"MODIFIED","object":"#.to_vec();
        line.extend_from_slice(&object);
        line.push(b'}');
        lines.push(line);
    }
    (lines, raw)
}

/// A JSON value as the yardstick's bare client holds one: serde_json's
/// `Value` as built without its `preserve_order` feature, objects in a
/// `BTreeMap`. This bench links serde_json with `preserve_order` (krply
/// needs it), under which `Value` keeps objects in an `IndexMap`, slower to
/// build: parsing into it made this bench's bare client slower than the
/// yardstick's, and the ratios higher.
#[allow(dead_code)] // held only to be built, as the bare client does
enum BareValue {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<BareValue>),
    Object(std::collections::BTreeMap<String, BareValue>),
}

impl<'de> serde::Deserialize<'de> for BareValue {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<BareValue, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = BareValue;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_unit<E>(self) -> Result<BareValue, E> {
                Ok(BareValue::Null)
            }
            fn visit_bool<E>(self, v: bool) -> Result<BareValue, E> {
                Ok(BareValue::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<BareValue, E> {
                Ok(BareValue::Number(v.into()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<BareValue, E> {
                Ok(BareValue::Number(v.into()))
            }
            fn visit_f64<E>(self, v: f64) -> Result<BareValue, E> {
                Ok(serde_json::Number::from_f64(v).map_or(BareValue::Null, BareValue::Number))
            }
            fn visit_str<E>(self, v: &str) -> Result<BareValue, E> {
                Ok(BareValue::String(v.to_owned()))
            }
            fn visit_string<E>(self, v: String) -> Result<BareValue, E> {
                Ok(BareValue::String(v))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<BareValue, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(BareValue::Array(items))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<BareValue, A::Error> {
                let mut members = std::collections::BTreeMap::new();
                while let Some((k, v)) = map.next_entry::<String, BareValue>()? {
                    members.insert(k, v);
                }
                Ok(BareValue::Object(members))
            }
        }
        d.deserialize_any(Visit)
    }
}

/// What reading one event costs the recorder's reading thread, in this
/// process and without the socket: `decode_line` (envelope, identity and
/// compared digest), against parsing the line as the bare client does
/// ([`BareValue`]; docs/journal.md, "Where the recorder's time goes").
fn decode_cost(name: &str, lines: &[Vec<u8>]) {
    let per_event = |f: &dyn Fn(&[u8])| {
        // The best of three passes: this machine's speed drifts.
        (0..3)
            .map(|_| {
                let t = Instant::now();
                for line in lines {
                    f(line);
                }
                t.elapsed().as_secs_f64() * 1e6 / lines.len() as f64
            })
            .fold(f64::INFINITY, f64::min)
    };
    let decoded = per_event(&|line| {
        let Ok(WireEvent::Object { meta, .. }) = decode_line(line) else {
            panic!("an event the recorder cannot read");
        };
        assert!(meta.diff_digest.is_some());
    });
    let bare = per_event(&|line| {
        std::hint::black_box(serde_json::from_slice::<BareValue>(line).unwrap());
    });
    println!(
        "{name} reading, in process: decode_line {decoded:.2} µs an event, a bare client's value {bare:.2} µs"
    );
}

/// Reads `n` lines of the canned watch from `rv` on as the yardstick's bare
/// client reads its source: one GET on a plain socket, the chunked body
/// decoded by hand, each line parsed into a [`BareValue`] (`parse: false`:
/// the source alone, lines split and not parsed). The lines flow once the
/// response's headers are read, and the clock starts then; events/s.
fn read_watch(sim: &Simulator, lines: &[Vec<u8>], rv: &str, parse: bool) -> f64 {
    use std::io::{BufRead, BufReader, Read, Write};
    let gate = sim.serve_canned_watch_gated("deployments", lines);
    let url = sim.url();
    let host = url.trim_start_matches("http://").trim_end_matches('/');
    let mut socket = std::net::TcpStream::connect(host).expect("the simulator, over plain HTTP");
    write!(
        socket,
        "GET /apis/apps/v1/namespaces/{NS}/deployments?watch=1&resourceVersion={rv} HTTP/1.1\r\n\
         Host: {host}\r\nAccept: application/json\r\n\r\n"
    )
    .unwrap();
    let mut r = BufReader::with_capacity(1 << 20, socket);
    let mut header = String::new();
    let mut chunked = false;
    // The status line and headers, up to the blank line (bounded: the
    // simulator sends a dozen).
    for _ in 0..100 {
        header.clear();
        r.read_line(&mut header).unwrap();
        chunked |= header
            .to_ascii_lowercase()
            .starts_with("transfer-encoding: chunked");
        if header == "\r\n" {
            break;
        }
    }
    assert!(chunked, "a watch is streamed in chunks");
    gate.go();
    let start = Instant::now();
    let (mut got, mut chunk, mut pending) = (0, Vec::new(), Vec::new());
    // Each pass reads one chunk; the stream ends after the n lines.
    while got < lines.len() {
        header.clear();
        r.read_line(&mut header).unwrap();
        let size = usize::from_str_radix(header.trim(), 16).expect("a chunk's size");
        assert!(size > 0, "the watch ended after {got} lines");
        chunk.resize(size + 2, 0);
        r.read_exact(&mut chunk).unwrap();
        pending.extend_from_slice(&chunk[..size]);
        let mut from = 0;
        while let Some(end) = pending[from..].iter().position(|&b| b == b'\n') {
            if parse {
                std::hint::black_box(
                    serde_json::from_slice::<BareValue>(&pending[from..from + end]).unwrap(),
                );
            }
            got += 1;
            from += end + 1;
        }
        pending.drain(..from);
    }
    got as f64 / start.elapsed().as_secs_f64()
}

/// One journal workload: the source's rate, a bare client's, the recorder's, the
/// journal's size against the raw JSON, and the recorder's peak RSS.
/// Turns of bare client and recorder behind the P1 ratio.
const P1_ROUNDS: usize = 3;

fn workload(name: &str, objects: usize, events: usize) {
    println!("-- {name}: {objects} Deployments, {events} MODIFIED events");
    // The objects are the yardstick's kind, served as they are from memory:
    // the simulator's store would add its defaulted fields and managedFields.
    let (sim, dir, kubeconfig) = start_sim(0);
    let (mut served, list_rv) = yardstick_deployments(objects);
    let items: Vec<Vec<u8>> = served
        .iter()
        .map(|d| serde_json::to_vec(d).unwrap())
        .collect();
    let listed_raw: usize = items.iter().map(Vec::len).sum();
    let base_rv = list_rv.to_string();
    sim.serve_canned_list("deployments", "DeploymentList", "apps/v1", &base_rv, &items);
    let (lines, events_raw) = churn_lines(&mut served, events, list_rv);
    println!(
        "{name} objects: {:.0} bytes of JSON each on average",
        events_raw as f64 / events as f64
    );

    decode_cost(name, &lines);
    let source = read_watch(&sim, &lines, &base_rv, false);
    // The bare client and the recorder take turns, a few times: this machine's
    // speed drifts, and a ratio of two runs minutes apart measures the drift.
    let mut rounds = Vec::new();
    let mut store = PathBuf::new();
    for round in 0..P1_ROUNDS {
        let bare = read_watch(&sim, &lines, &base_rv, true);
        // The lines flow once the recorder's watch is open and its list
        // durable, as the yardstick's source does: the clock times the
        // stream alone (without the gate, a recorder that was quick to
        // commit had journaled them before the clock started).
        let gate = sim.serve_canned_watch_gated("deployments", &lines);
        store = dir.path().join(format!("journal-{round}.db"));
        let mut rec = spawn_recorder(&kubeconfig, &store, &["deployments"]);
        poll("the recorder's watch", Duration::from_secs(300), || {
            gate.watched()
        });
        wait_listed(&store);
        let start = Instant::now();
        gate.go();
        wait_events(&store, events as u64);
        let recorded = events as f64 / start.elapsed().as_secs_f64();
        let rss = peak_rss_kib(rec.id());
        stop(&mut rec);
        rounds.push((bare, recorded, rss));
    }
    let journal = file_size(&store);
    let raw = listed_raw + events_raw;
    if let Some(keep) = std::env::var_os("KRPLY_BENCH_KEEP") {
        // To look into it afterwards: `KRPLY_BENCH_KEEP=/tmp/j cargo bench ...`.
        std::fs::create_dir_all(&keep).unwrap();
        std::fs::copy(&store, Path::new(&keep).join(format!("{name}.db"))).unwrap();
    }

    println!("{name} source alone: {source:>9.0} events/s (lines read, not parsed)");
    for (round, (bare, recorded, rss)) in rounds.iter().enumerate() {
        println!(
            "{name} round {}: bare client {bare:>6.0} events/s (each line parsed as the yardstick's bare client does), recorder {recorded:>6.0} events/s durable (peak RSS {:.1} MiB); ratio {:.2}",
            round + 1,
            *rss as f64 / 1024.0,
            recorded / bare
        );
    }
    let fastest = rounds.iter().map(|r| r.0.max(r.1)).fold(0.0, f64::max);
    let mut ratios: Vec<f64> = rounds.iter().map(|(b, r, _)| r / b).collect();
    ratios.sort_by(f64::total_cmp);
    let peak = rounds.iter().map(|r| r.2).max().unwrap_or(0);
    println!(
        "{name} recorder peak RSS {:.1} MiB (largest of the rounds)",
        peak as f64 / 1024.0
    );
    if source >= 3.0 * fastest {
        println!(
            "{name} P1 ratio recorder/bare: median {:.2} of {} rounds (lowest {:.2}, highest {:.2}; bar >= 1.0, goal >= 1.5)",
            ratios[ratios.len() / 2],
            ratios.len(),
            ratios[0],
            ratios[ratios.len() - 1]
        );
    } else {
        println!(
            "{name} P1 ratio not reported: the source ({source:.0}/s) is not 3x faster than both readers"
        );
    }
    println!(
        "{name} P2 storage: {:.1} MB journal for {:.1} MB raw JSON = 1/{:.1}; {:.0} bytes per event",
        journal as f64 / 1e6,
        raw as f64 / 1e6,
        raw as f64 / journal as f64,
        journal as f64 / events as f64
    );
    // Every object changed in the window; by default diff reports those whose
    // changes are not only status (a fifth of them here), with --include-status all.
    for extra in [None, Some("--include-status")] {
        let (diff_ms, shown) = diff_window(&kubeconfig, &store, extra);
        println!(
            "{name} P3b diff --since 1h -o json{}: median {diff_ms:.0} ms, {shown} objects shown (whole process; bar <= 250 ms, goal <= 150 ms)",
            extra.map(|e| format!(" {e}")).unwrap_or_default()
        );
    }
    for (what, n, avg) in body_kinds(&store) {
        println!("{name}   {what:<22} {n:>7} of {avg:>5.0} B on average");
    }
    for (what, bytes, rows) in breakdown(&store) {
        println!(
            "{name}   {what:<22} {:>7.1} MB {:>6.0} B per record",
            bytes as f64 / 1e6,
            bytes as f64 / rows as f64
        );
    }
    let folded = fold_all(&kubeconfig, &store);
    println!(
        "{name} P2 with every object's history folded into blocks (docs/journal.md, \"Cold history in blocks\"): \
         {:.1} MB = 1/{:.1}; {} records into {} blocks in {:.2} s ({:.1} µs a record)",
        folded.bytes as f64 / 1e6,
        raw as f64 / folded.bytes as f64,
        folded.records,
        folded.blocks,
        folded.seconds,
        folded.seconds * 1e6 / folded.records.max(1) as f64,
    );
    println!(
        "{name} folded: diff --since 1h -o json median {:.0} ms (rows: {:.0} ms), the same bytes: {}; export the same bytes: {}",
        folded.diff_ms, folded.rows_diff_ms, folded.same_diff, folded.same_export
    );
}

/// A copy of a workload's journal with every object's history folded into
/// blocks, and what it answers.
struct FoldedJournal {
    /// The file and its write-ahead log, once the freed pages are given back.
    bytes: u64,
    records: usize,
    blocks: usize,
    seconds: f64,
    diff_ms: f64,
    rows_diff_ms: f64,
    /// Whether `diff --since 1h -o json` and `export -A` print the same bytes
    /// on the copy as on the journal.
    same_diff: bool,
    same_export: bool,
}

/// Folds every object's whole history of a copy of `store` into blocks
/// (`Journal::fold_object`), gives the freed pages back, and compares the
/// copy's answers with the journal's, byte for byte.
fn fold_all(kubeconfig: &Path, store: &Path) -> FoldedJournal {
    let copy = store.with_file_name("folded.db");
    for suffix in ["", "-wal"] {
        let from = PathBuf::from(format!("{}{suffix}", store.display()));
        let to = PathBuf::from(format!("{}{suffix}", copy.display()));
        let _ = std::fs::remove_file(&to);
        if from.exists() {
            std::fs::copy(&from, &to).unwrap();
        }
    }
    let journal = Journal::open(&copy).unwrap();
    let ids: Vec<i64> =
        rusqlite::Connection::open_with_flags(&copy, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap()
            .prepare("SELECT id FROM objects ORDER BY id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
    let started = Instant::now();
    let (mut records, mut blocks) = (0, 0);
    let mut folder = krply::journal::fold::Folder::default();
    // 500 objects a transaction.
    for chunk in ids.chunks(500) {
        let objects: Vec<(i64, i64)> = chunk.iter().map(|id| (*id, i64::MAX)).collect();
        let f = journal.fold_objects(&mut folder, &objects).unwrap();
        records += f.records;
        blocks += f.blocks;
    }
    let seconds = started.elapsed().as_secs_f64();
    drop(journal);
    let conn = rusqlite::Connection::open(&copy).unwrap();
    // 0: every free page.
    krply::journal::retain::give_back_pages(&conn, 0).unwrap();
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .unwrap();
    drop(conn);
    let bytes = ["", "-wal"]
        .iter()
        .filter_map(|s| std::fs::metadata(format!("{}{s}", copy.display())).ok())
        .map(|m| m.len())
        .sum();
    let output = |journal: &Path, args: &[&str]| {
        let out = Command::new(BIN)
            .args(args)
            .arg("--store")
            .arg(journal)
            .env("KUBECONFIG", kubeconfig)
            .output()
            .unwrap();
        // `diff` exits 3 when it found changes.
        assert!(
            matches!(out.status.code(), Some(0) | Some(3)),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    // One window for both, by the clock (`--since 1h` is an hour before each
    // run's own now).
    let now = jiff::Timestamp::now();
    let since = (now - jiff::SignedDuration::from_hours(1)).to_string();
    let until = now.to_string();
    let diff = ["diff", "--since", &since, "--until", &until, "-o", "json"];
    let export = ["export", "-A"];
    FoldedJournal {
        bytes,
        records,
        blocks,
        seconds,
        diff_ms: diff_window(kubeconfig, &copy, None).0,
        rows_diff_ms: diff_window(kubeconfig, store, None).0,
        same_diff: output(store, &diff) == output(&copy, &diff),
        same_export: output(store, &export) == output(&copy, &export),
    }
}

/// `diff --since 1h -o json` over the workload's journal, as a user runs it: the
/// median of five whole processes, and how many objects it shows.
fn diff_window(kubeconfig: &Path, store: &Path, extra: Option<&str>) -> (f64, usize) {
    let run = || {
        let start = Instant::now();
        let out = Command::new(BIN)
            .args(["diff", "--since", "1h", "-o", "json", "--store"])
            .arg(store)
            .args(extra)
            .env("KUBECONFIG", kubeconfig)
            .output()
            .unwrap();
        let ms = start.elapsed().as_secs_f64() * 1e3;
        assert!(
            matches!(out.status.code(), Some(0) | Some(3)),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let changed = v["objects"].as_array().map_or(0, Vec::len);
        (ms, changed)
    };
    let mut runs: Vec<(f64, usize)> = (0..5).map(|_| run()).collect();
    runs.sort_by(|a, b| a.0.total_cmp(&b.0));
    runs[runs.len() / 2]
}

/// The bodies of a journal by how they are stored: count and average size.
fn body_kinds(store: &Path) -> Vec<(String, i64, f64)> {
    let conn =
        rusqlite::Connection::open_with_flags(store, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let mut stmt = conn
        .prepare(
            &format!(
                "SELECT CASE WHEN b.base_id IS NULL AND b.dict_id IS NOT NULL THEN 'keyframes, dictionary'
                         WHEN b.base_id IS NULL THEN 'keyframes, alone'
                         WHEN l.slot IS NOT NULL THEN 'deltas waiting'
                         WHEN b.pack_ref IS NOT NULL THEN 'deltas packed'
                         ELSE 'deltas in place' END,
                    count(*), avg(length(coalesce(l.data, b.data)))
             FROM bodies b LEFT JOIN waiting l
                ON b.pack_ref >= {w} AND b.pack_ref < {p}
                AND l.slot = b.pack_ref - {w}
             GROUP BY 1
             UNION ALL
             SELECT 'packs', count(*), avg(length(data)) FROM packs",
                w = krply::journal::schema::WAITING,
                p = krply::journal::schema::PACKED,
            ),
        )
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// Where a journal's bytes go: each table and index with SQLite's `dbstat`, per
/// record of the journal.
fn breakdown(store: &Path) -> Vec<(String, i64, i64)> {
    let conn =
        rusqlite::Connection::open_with_flags(store, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let rows: i64 = conn
        .query_row("SELECT count(*) FROM records", [], |r| r.get(0))
        .unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT name, sum(pgsize) FROM dbstat GROUP BY name
             HAVING sum(pgsize) > 65536 ORDER BY 2 DESC",
        )
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, rows)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// `n` Deployments of the engine yardstick's kind, about 2.1 KB of JSON each:
/// Online Boutique's as they are, renamed, with what the API server and the
/// controller would have added (a uid, resourceVersion, generation and
/// creation time, the revision annotation, a managedFields entry for the
/// client that applied it and one for the controller's status, and the
/// status). Returns them and the resourceVersion of their list.
fn yardstick_deployments(n: usize) -> (Vec<Value>, u64) {
    let shop: Value =
        serde_json::from_str(include_str!("../fixtures/shop/online-boutique.json")).unwrap();
    let templates: Vec<&Value> = shop["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["kind"] == "Deployment")
        .collect();
    let created = "2026-12-01T00:00:00Z";
    let mut ids = Xorshift(0x9e37_79b9_7f4a_7c15);
    let mut rv = 1000;
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let mut d = templates[i % templates.len()].clone();
        let name = format!("{}-{i:05}", d["metadata"]["name"].as_str().unwrap());
        let uid = format!(
            "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
            ids.below(1 << 32),
            ids.below(1 << 16),
            ids.below(1 << 12),
            ids.below(1 << 12),
            ids.below(1 << 48)
        );
        let meta = &mut d["metadata"];
        meta["name"] = json!(name);
        meta["namespace"] = json!(NS);
        meta["uid"] = json!(uid);
        meta["resourceVersion"] = json!(rv.to_string());
        meta["generation"] = json!(1);
        meta["creationTimestamp"] = json!(created);
        meta["labels"]["app"] = json!(name);
        meta["annotations"] = json!({"deployment.kubernetes.io/revision": "1"});
        meta["managedFields"] = json!([
            {"manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "apps/v1",
             "time": created, "fieldsType": "FieldsV1",
             "fieldsV1": {"f:spec": {"f:replicas": {}, "f:template": {}}}},
            {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "apps/v1",
             "time": created, "subresource": "status", "fieldsType": "FieldsV1",
             "fieldsV1": {"f:status": {"f:replicas": {}}}}
        ]);
        let replicas = d["spec"]["replicas"].as_i64().unwrap_or(1);
        d["status"] = json!({
            "observedGeneration": 1, "replicas": replicas, "updatedReplicas": replicas,
            "readyReplicas": replicas, "availableReplicas": replicas,
            "conditions": [{"type": "Available", "status": "True", "lastUpdateTime": created,
                            "lastTransitionTime": created, "reason": "MinimumReplicasAvailable",
                            "message": "Deployment has minimum availability."}]
        });
        out.push(d);
        rv += 1;
    }
    (out, rv - 1)
}

/// Deployments cloned from Online Boutique, renamed so there are `n` of them. The
/// pod templates lose their probes, env, resources, security contexts and
/// annotations. As served they are about 3.4 KB of JSON, not the 2.1 KB the
/// workloads were first described with: the simulator, like kube-apiserver, adds
/// the defaulted fields and a managedFields entry for each manager (about 1.6 KB
/// of the 3.4). Most of those bytes are the same in every object, so they weigh
/// little in the journal: the storage ratio of smaller objects would be lower.
fn deployments(n: usize) -> Vec<Value> {
    let shop: Value =
        serde_json::from_str(include_str!("../fixtures/shop/online-boutique.json")).unwrap();
    let templates: Vec<Value> = shop["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["kind"] == "Deployment")
        .cloned()
        .collect();
    let mut out = vec![json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})];
    for i in 0..n {
        let mut d = templates[i % templates.len()].clone();
        let name = format!("{}-{i}", d["metadata"]["name"].as_str().unwrap());
        d["metadata"]["name"] = json!(name);
        d["metadata"]["namespace"] = json!(NS);
        if let Some(meta) = d["spec"]["template"]["metadata"].as_object_mut() {
            meta.remove("annotations");
        }
        let pod = &mut d["spec"]["template"]["spec"];
        if let Some(pod) = pod.as_object_mut() {
            pod.remove("securityContext");
        }
        for c in pod["containers"].as_array_mut().into_iter().flatten() {
            if let Some(c) = c.as_object_mut() {
                for field in [
                    "livenessProbe",
                    "readinessProbe",
                    "securityContext",
                    "env",
                    "resources",
                ] {
                    c.remove(field);
                }
            }
        }
        out.push(d);
    }
    out
}

fn start_sim(objects: usize) -> (Simulator, tempfile::TempDir, PathBuf) {
    let sim = Simulator::start_background(SimConfig {
        seed: Seed::Objects(deployments(objects)),
        history_window: 2_000_000,
        bookmark_interval: Some(Duration::from_secs(1)),
        ..SimConfig::default()
    })
    .expect("simulator");
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    sim.write_kubeconfig(
        &kubeconfig,
        &KubeconfigOptions {
            namespace: Some(NS.into()),
            ..KubeconfigOptions::default()
        },
    )
    .unwrap();
    (sim, dir, kubeconfig)
}

/// Patches deployments round-robin `n` times, as fast as the simulator takes them.
fn churn(sim: &Simulator, objects: usize, n: usize) -> std::thread::JoinHandle<Duration> {
    let sim = sim.clone();
    std::thread::spawn(move || {
        let names: Vec<String> = sim
            .list("apps/v1", "Deployment", Some(NS))
            .iter()
            .map(|d| d["metadata"]["name"].as_str().unwrap().to_string())
            .collect();
        let start = Instant::now();
        for i in 0..n {
            let name = &names[i % objects.min(names.len())];
            let patch = json!({
                "metadata": {"annotations": {"bench/step": i.to_string()}},
                "spec": {"replicas": (i % 5) + 1}
            });
            sim.patch_merge("apps/v1", "Deployment", Some(NS), name, &patch)
                .expect("patch");
        }
        start.elapsed()
    })
}

/// A watch of the bench namespace's Deployments from `rv`, as a bare client opens it.
async fn watch_deployments(kubeconfig: &Path, rv: &str, bookmarks: bool) -> api::WatchBody {
    let opts = ConnectOptions {
        kubeconfig: Some(kubeconfig.to_path_buf()),
        ..ConnectOptions::default()
    };
    let target = cluster::resolve_target(&opts).unwrap();
    let access = cluster::connect(&target, &opts).await.unwrap();
    let catalog = cluster::discovery::Catalog::discover(&access)
        .await
        .unwrap();
    let resource = catalog.resolve("deployments").unwrap().resource.clone();
    api::open_watch(&access, &resource, Some(NS), None, rv, bookmarks, 3600)
        .await
        .unwrap()
}

/// One round: the bare client, then the recorder; returns their events/s.
fn throughput(objects: usize, n: usize) -> (f64, f64) {
    let (sim, dir, kubeconfig) = start_sim(objects);
    let rt = tokio::runtime::Runtime::new().unwrap();

    // A bare client: the same watch request, each line decoded, nothing stored.
    let bare = rt.block_on(async {
        let rv = sim.current_rv();
        let mut body = watch_deployments(&kubeconfig, &rv, true).await;
        let producer = churn(&sim, objects, n);
        let start = Instant::now();
        let mut seen = 0;
        let mut bytes = 0usize;
        let mut sample = Vec::new();
        while seen < n {
            let line = body.next_line().await.unwrap().expect("stream open");
            bytes += line.len();
            if let Ok(WireEvent::Object { .. }) = decode_line(&line) {
                seen += 1;
                if sample.len() < 5_000 {
                    sample.push(line);
                }
            }
        }
        let elapsed = start.elapsed();
        let produced = producer.join().unwrap();
        (elapsed, produced, bytes, sample)
    });
    // The CPU floor of any recorder: decoding the lines, on one core.
    let sample = &bare.3;
    let start = Instant::now();
    let mut decoded = 0;
    for _ in 0..4 {
        for line in sample {
            if let Ok(WireEvent::Object { .. }) = decode_line(line) {
                decoded += 1;
            }
        }
    }
    let floor = start.elapsed().as_secs_f64() * 1e6 / decoded as f64;
    let bare_rate = n as f64 / bare.0.as_secs_f64();
    println!(
        "bare client:  {n} events in {:.2}s = {:>8.0} events/s (producer alone took {:.2}s; {:.1} MB of watch lines)",
        bare.0.as_secs_f64(),
        bare_rate,
        bare.1.as_secs_f64(),
        bare.2 as f64 / 1e6
    );

    // The recorder, as a user runs it.
    let store = dir.path().join("journal.db");
    let mut rec = spawn_recorder(&kubeconfig, &store, &["deployments"]);
    wait_listed(&store);
    let base_rv: u64 = sim.current_rv().parse().unwrap();
    // KRPLY_BENCH_PERF=FILE records a CPU profile of the recorder (perf record -g).
    let mut perf = std::env::var_os("KRPLY_BENCH_PERF").map(|out| {
        Command::new("perf")
            .args([
                "record",
                "-g",
                "-F",
                "999",
                "-p",
                &rec.id().to_string(),
                "-o",
            ])
            .arg(out)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("perf runs")
    });
    let cpu_before = cpu_ms(rec.id());
    let producer = churn(&sim, objects, n);
    let start = Instant::now();
    wait_events(&store, n as u64);
    let elapsed = start.elapsed();
    let cpu = cpu_ms(rec.id()) - cpu_before;
    let produced = producer.join().unwrap();
    let rss = peak_rss_kib(rec.id());
    if let Some(p) = perf.as_mut() {
        let _ = Command::new("kill")
            .args(["-INT", &p.id().to_string()])
            .status();
        let _ = p.wait();
    }
    stop(&mut rec);
    let per_event = cpu as f64 * 1000.0 / n as f64;
    println!(
        "recorder CPU: {per_event:.1} µs per event ({cpu} ms user+system for {n} events); decoding alone costs {floor:.1} µs per event"
    );
    let rec_rate = n as f64 / elapsed.as_secs_f64();
    println!(
        "recorder:     {n} events in {:.2}s = {:>8.0} events/s durable (producer took {:.2}s; peak RSS {} MiB)",
        elapsed.as_secs_f64(),
        rec_rate,
        produced.as_secs_f64(),
        rss / 1024
    );
    println!(
        "ratio recorder/bare: {:.2} (goal >= 0.9)",
        rec_rate / bare_rate
    );

    // Size: everything recorded (baseline + events) against its raw JSON.
    let log = sim.event_log();
    let event_bytes: usize = log
        .iter()
        .filter(|e| e.resource == "deployments" && e.rv.parse::<u64>().unwrap() > base_rv)
        .map(|e| e.object.len())
        .sum();
    let listed_bytes: usize = sim
        .list("apps/v1", "Deployment", Some(NS))
        .iter()
        .map(|d| serde_json::to_vec(d).unwrap().len())
        .sum();
    let journal = file_size(&store);
    let raw = event_bytes + listed_bytes;
    println!(
        "journal size: {:.2} MB for {:.2} MB of raw JSON ({:.1} MB events + {:.1} MB baseline) = 1/{:.1} (goal <= 1/10); {:.0} bytes per event",
        journal as f64 / 1e6,
        raw as f64 / 1e6,
        event_bytes as f64 / 1e6,
        listed_bytes as f64 / 1e6,
        raw as f64 / journal as f64,
        journal as f64 / n as f64
    );
    let _ = Journal::open(&store).map(|j| {
        j.status()
            .map(|s| println!("journal holds {} events", s.events))
    });
    (bare_rate, rec_rate)
}

fn memory(objects: usize) {
    let (sim, dir, kubeconfig) = start_sim(objects);
    let store = dir.path().join("journal.db");
    let started = Instant::now();
    let mut rec = spawn_recorder(&kubeconfig, &store, &["deployments"]);
    wait_listed(&store);
    let listed = started.elapsed();
    let producer = churn(&sim, objects, objects);
    wait_events(&store, objects as u64);
    producer.join().unwrap();
    let rss = peak_rss_kib(rec.id());
    stop(&mut rec);
    println!(
        "memory:       watching {objects} deployments: listed in {:.2}s, then {objects} events; recorder peak RSS {:.1} MiB (goal <= 64 MB)",
        listed.as_secs_f64(),
        rss as f64 / 1024.0
    );
}

fn spawn_recorder(kubeconfig: &Path, store: &Path, what: &[&str]) -> Child {
    Command::new(BIN)
        .arg("record")
        .args(what)
        .args(["-n", NS, "-q"])
        .env("KUBECONFIG", kubeconfig)
        .env("KRPLY_STORE", store)
        .env("NO_PROXY", "127.0.0.1")
        .env_remove("HTTPS_PROXY")
        .env_remove("https_proxy")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("recorder starts")
}

fn stop(child: &mut Child) {
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let _ = child.wait();
}

fn wait_listed(store: &Path) {
    poll("the baseline", Duration::from_secs(300), || {
        Journal::open(store)
            .ok()
            .and_then(|j| {
                let s = j.streams(None).ok()?;
                Some(
                    !s.is_empty()
                        && s.iter()
                            .all(|s| j.coverage(s, 0, true).is_ok_and(|c| c.from.is_some())),
                )
            })
            .unwrap_or(false)
    });
}

fn wait_events(store: &Path, n: u64) {
    poll("the events", Duration::from_secs(600), || {
        Journal::open(store)
            .and_then(|j| j.status())
            .map(|s| s.events >= n)
            .unwrap_or(false)
    });
}

fn poll(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn peak_rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// User plus system CPU time of a process, in milliseconds.
fn cpu_ms(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may contain spaces) start after ')'.
    let rest = stat.rsplit(')').next().unwrap_or("");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // utime and stime are fields 14 and 15 of /proc/pid/stat (11 and 12 here).
    (ticks(11) + ticks(12)) * 10
}

fn file_size(store: &Path) -> u64 {
    ["", "-wal"]
        .iter()
        .map(|s| std::fs::metadata(format!("{}{s}", store.display())).map_or(0, |m| m.len()))
        .sum()
}
