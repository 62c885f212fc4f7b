//! Audit import benchmark (prints figures; asserts nothing).
//!
//! Builds a journal holding 10k recorded Deployments, writes an audit log of
//! 1M lines in kube-apiserver's format about them (70 % at RequestResponse
//! level with request and response bodies, 30 % at Metadata level; a fifth of
//! all lines about objects the journal never recorded), then times
//! `kubectl krply audit import` as a user runs it (the whole process), and
//! prints its rate beside the rate of reading the file alone, and the
//! journal's growth per stored line. Goals (docs/audit.md): at least 100k
//! lines/s and under 40 bytes a stored line.
//!
//! `cargo bench --bench audit` (`-- --quick` for 100k lines).

use krply::journal::writer::Op;
use krply::model::ObjectMeta;
use krply::time::Millis;
use serde_json::json;
use std::io::{BufRead, Write};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

mod common;

const BIN: &str = env!("CARGO_BIN_EXE_kubectl-krply");
const NS: &str = "bench";
const CLUSTER: &str = "bench-cluster";
const OBJECTS: usize = 10_000;

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let lines = if quick { 100_000 } else { 1_000_000 };
    println!(
        "kubectl-krply audit import benchmark: {lines} lines about {OBJECTS} recorded Deployments"
    );
    let dir = tempfile::tempdir().unwrap();
    // KRPLY_BENCH_KEEP=DIR: build there and leave the log and journal behind.
    let dir_path = std::env::var_os("KRPLY_BENCH_KEEP")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| dir.path().to_path_buf());
    std::fs::create_dir_all(&dir_path).unwrap();
    let dir = &dir_path;
    let store = dir.join("journal.db");
    let _ = std::fs::remove_file(&store);
    let start = Millis::now().as_ms() - 3_600_000;
    build_journal(&store, start);
    let log = dir.join("audit.log");
    let bytes = write_log(&log, lines, start);
    println!(
        "audit log: {:.1} MB, {:.0} bytes a line",
        bytes as f64 / 1e6,
        bytes as f64 / lines as f64
    );
    checkpoint(&store);
    let before = file_size(&store);

    // The source: reading the file's lines and nothing else.
    let t = Instant::now();
    let mut n = 0u64;
    let mut reader = std::io::BufReader::with_capacity(1 << 16, std::fs::File::open(&log).unwrap());
    let mut buf = Vec::new();
    // Bounded: one pass over the file.
    while reader.read_until(b'\n', &mut buf).unwrap() > 0 {
        n += 1;
        buf.clear();
    }
    let source = n as f64 / t.elapsed().as_secs_f64();

    let import = || {
        let t = Instant::now();
        let out = common::output_of(
            Command::new(BIN)
                .args(["audit", "import", "-o", "json", "--store"])
                .arg(&store)
                .args(["--cluster-id", CLUSTER])
                .arg(&log)
                .env("KUBECONFIG", dir.join("none")),
        );
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        (t.elapsed().as_secs_f64(), report)
    };
    let (took, report) = import();
    let stored = report["stored"].as_u64().unwrap();
    checkpoint(&store);
    let growth = file_size(&store) - before;
    println!("reading the file alone: {source:>9.0} lines/s");
    println!(
        "audit import:           {:>9.0} lines/s ({took:.2} s for {lines} lines; goal >= 100000)",
        lines as f64 / took
    );
    println!(
        "stored {stored} writes on recorded objects ({} on unrecorded ones skipped)",
        report["unrecorded"]
    );
    println!(
        "journal growth: {:.1} MB = {:.1} bytes a stored line (goal < 40)",
        growth as f64 / 1e6,
        growth as f64 / stored as f64
    );
    for (table, bytes) in breakdown(&store) {
        println!(
            "  {table:<28} {:>6.1} MB {:>5.1} B a stored line",
            bytes as f64 / 1e6,
            bytes as f64 / stored as f64
        );
    }
    let (again_took, again) = import();
    println!(
        "importing it again: {again_took:.2} s, {} new",
        again["stored"]
    );
}

/// A journal with one stream of `OBJECTS` Deployments, listed at `start`.
fn build_journal(store: &Path, start: i64) {
    let (writer, stream) = common::deployment_journal(store, CLUSTER, NS);
    let tx = writer.sender();
    for i in 0..OBJECTS {
        let body = json!({"metadata": {"name": format!("app-{i}"), "namespace": NS,
                          "uid": uid(i), "resourceVersion": (1000 + i).to_string()},
                          "spec": {"replicas": 1}});
        tx.blocking_send(Op::BaselineItem {
            stream,
            at: start,
            meta: ObjectMeta {
                namespace: NS.into(),
                name: format!("app-{i}"),
                uid: uid(i),
                resource_version: (1000 + i).to_string(),
                diff_digest: None,
                given_mark: None,
            },
            body: serde_json::to_vec(&body).unwrap(),
        })
        .unwrap();
    }
    tx.blocking_send(Op::BaselineEnd {
        stream,
        at: start,
        list_rv: (1000 + OBJECTS).to_string(),
        items: OBJECTS as u64,
    })
    .unwrap();
    drop(tx);
    writer.finish().unwrap();
}

fn uid(i: usize) -> String {
    format!("6f1c2a3b-0000-4000-8000-{i:012}")
}

/// Writes `lines` audit lines, one write every 3.6 ms from `start`.
fn write_log(path: &Path, lines: usize, start: i64) -> u64 {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let users = [
        "system:serviceaccount:kube-system:deployment-controller",
        "system:serviceaccount:kube-system:replicaset-controller",
        "alice@example.com",
        "bob@example.com",
        "system:serviceaccount:argocd:argocd-application-controller",
    ];
    let mut bytes = 0u64;
    for n in 0..lines {
        let r = next();
        let i = (r % OBJECTS as u64) as usize;
        let (ns, name) = if r % 5 == 0 {
            ("elsewhere", format!("other-{i}"))
        } else {
            (NS, format!("app-{i}"))
        };
        let at = start + (n as i64 * 36) / 10;
        let ts = |ms: i64| {
            jiff::Timestamp::from_millisecond(ms)
                .unwrap()
                .strftime("%Y-%m-%dT%H:%M:%S%.6fZ")
                .to_string()
        };
        let user = users[(r >> 8) as usize % users.len()];
        let status = (r >> 16) % 10 < 7;
        let full = (r >> 24) % 10 < 7;
        let mut e = json!({
            "kind": "Event", "apiVersion": "audit.k8s.io/v1",
            "level": if full { "RequestResponse" } else { "Metadata" },
            "auditID": format!("{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}", r as u32, (r >> 32) as u16,
                               (r >> 48) & 0xfff, n & 0xfff, n),
            "stage": "ResponseComplete",
            "requestURI": format!("/apis/apps/v1/namespaces/{ns}/deployments/{name}{}",
                                  if status { "/status" } else { "?fieldManager=kubectl-edit" }),
            "verb": if status { "update" } else { "patch" },
            "user": {"username": user, "uid": "3a7c1f0e-5d2b-4c8e-9f6a-1b2c3d4e5f60",
                     "groups": ["system:serviceaccounts", "system:serviceaccounts:kube-system",
                                "system:authenticated"]},
            "sourceIPs": ["10.0.0.7"],
            "userAgent": "kube-controller-manager/v1.37.2 (linux/amd64) kubernetes/$Format",
            "objectRef": {"resource": "deployments", "namespace": ns, "name": name,
                          "uid": uid(i), "apiGroup": "apps", "apiVersion": "v1",
                          "subresource": if status { "status" } else { "" }},
            "responseStatus": {"metadata": {}, "code": 200},
            "requestReceivedTimestamp": ts(at - 3),
            "stageTimestamp": ts(at),
            "annotations": {"authorization.k8s.io/decision": "allow",
                            "authorization.k8s.io/reason": "RBAC: allowed by ClusterRoleBinding \"system:controller:deployment-controller\""}
        });
        if full {
            let object = deployment(&name, ns, &uid(i), 100_000 + n);
            e["requestObject"] = object.clone();
            e["responseObject"] = object;
        }
        let line = e.to_string();
        bytes += line.len() as u64 + 1;
        out.write_all(line.as_bytes()).unwrap();
        out.write_all(b"\n").unwrap();
    }
    out.flush().unwrap();
    bytes
}

/// A Deployment of about 1.5 KB, as audit events carry it.
fn deployment(name: &str, ns: &str, uid: &str, rv: usize) -> serde_json::Value {
    json!({"kind": "Deployment", "apiVersion": "apps/v1",
        "metadata": {"name": name, "namespace": ns, "uid": uid, "resourceVersion": rv.to_string(),
                     "generation": 7, "creationTimestamp": "2026-11-30T09:00:00Z",
                     "labels": {"app": name, "app.kubernetes.io/part-of": "shop"},
                     "annotations": {"deployment.kubernetes.io/revision": "7"}},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "server",
                                  "image": "us-central1-docker.pkg.dev/google-samples/microservices-demo/frontend:v0.10.7",
                                  "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                                  "env": [{"name": "PORT", "value": "8080"}],
                                  "resources": {"requests": {"cpu": "100m", "memory": "64Mi"},
                                                "limits": {"cpu": "200m", "memory": "128Mi"}}}]}}},
        "status": {"observedGeneration": 7, "replicas": 3, "updatedReplicas": 3, "readyReplicas": 3,
                   "availableReplicas": 3,
                   "conditions": [{"type": "Available", "status": "True",
                                   "lastUpdateTime": "2026-11-30T09:01:00Z",
                                   "lastTransitionTime": "2026-11-30T09:01:00Z",
                                   "reason": "MinimumReplicasAvailable",
                                   "message": "Deployment has minimum availability."}]}})
}

/// The audit tables and their indexes by size (SQLite's dbstat).
fn breakdown(store: &Path) -> Vec<(String, u64)> {
    let conn = rusqlite::Connection::open(store).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT name, sum(pgsize) FROM dbstat WHERE name LIKE '%audit%'
             GROUP BY name ORDER BY 2 DESC",
        )
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as u64)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn checkpoint(store: &Path) {
    let conn = rusqlite::Connection::open(store).unwrap();
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
}

fn file_size(p: &Path) -> u64 {
    std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}
