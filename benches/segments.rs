//! Parquet segments benchmark (prints figures; asserts nothing).
//!
//! For each journal: the history bench's (1M events over 10k Deployments over
//! 7 days, built here or reused with `KRPLY_BENCH_JOURNAL=PATH`), and any
//! listed in `KRPLY_BENCH_SEGMENT_JOURNALS` (space-separated paths, e.g. the
//! recorder bench's W-wide and W-deep journals kept with `KRPLY_BENCH_KEEP`):
//!
//! - `export --format parquet` as a user runs it (whole process): time, rows/s;
//! - `import` of those segments into a fresh journal (whole process): time,
//!   rows/s, and again when every file is already imported;
//! - segment bytes against the raw JSON the journal's records hold (the goal
//!   is 1/30 or less) and against the journal file;
//! - each query of docs/at-scale.md in DuckDB and in chDB, when the engines
//!   are installed (`target/tmp/sqlenv`, as `.ci/run` makes it): the time of
//!   a whole `python tests/sql/query.py` run, of which Python and the engine's
//!   start take about 0.3 s (printed on its own as `select 1`).
//!
//! `cargo bench --bench segments` (`-- --quick` for 100k events over 1k objects;
//! `-- --month` for 30 days at the same churn, 4.3M events).

use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

mod common;

const BIN: &str = env!("CARGO_BIN_EXE_kubectl-krply");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn main() {
    let (objects, mut events) = common::history_size();
    // A month at the same churn (about 143k changes a day).
    let month = std::env::args().any(|a| a == "--month");
    let days = if month { 30 } else { 7 };
    events = events * days / 7;
    let dir = tempfile::tempdir().unwrap();
    let history = std::env::var_os("KRPLY_BENCH_JOURNAL")
        .map(PathBuf::from)
        .unwrap_or_else(|| dir.path().join("history.db"));
    if !history.exists() {
        println!(
            "building the history journal: {events} events over {objects} objects, {days} days"
        );
        common::history_journal_over(
            &history,
            "bench-cluster",
            "bench",
            objects,
            events,
            days as i64,
        );
    } else {
        common::fold_as_a_stop(&history);
    }
    let mut journals = vec![history];
    if let Some(more) = std::env::var_os("KRPLY_BENCH_SEGMENT_JOURNALS") {
        journals.extend(more.to_string_lossy().split_whitespace().map(PathBuf::from));
    }
    for (i, journal) in journals.iter().enumerate() {
        let out = dir.path().join(format!("segments-{i}"));
        segments(journal, &out);
    }
}

/// Bytes of every file under `dir`.
fn bytes_under(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                bytes_under(&e.path())
            } else {
                e.metadata().unwrap().len()
            }
        })
        .sum()
}

fn segments(journal: &Path, out: &Path) {
    println!("\n{}", journal.display());
    let conn =
        rusqlite::Connection::open_with_flags(journal, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    // The raw JSON of every record's body, as many times as records hold it.
    let raw = common::raw_json_bytes(journal);
    let cluster: String = conn
        .query_row("SELECT id FROM clusters LIMIT 1", [], |r| r.get(0))
        .unwrap();
    let (first, last) = common::observed_span(&conn);
    let namespace: String = conn
        .query_row(
            "SELECT namespace FROM objects WHERE namespace <> '' LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap_or_default();
    let journal_bytes = std::fs::metadata(journal).unwrap().len();

    let start = Instant::now();
    let status = Command::new(BIN)
        .arg("--store")
        .arg(journal)
        .args(["-q", "export", "--format", "parquet", "--dir"])
        .arg(out)
        .env("KUBECONFIG", out.with_extension("no-kubeconfig"))
        .status()
        .unwrap();
    let secs = start.elapsed().as_secs_f64();
    assert!(status.success());
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    let files = manifest["files"].as_array().unwrap();
    let rows: u64 = files.iter().map(|f| f["rows"].as_u64().unwrap()).sum();
    let seg = bytes_under(out);
    println!(
        "export --format parquet: {secs:.1} s for {rows} rows in {} files = {:.0} rows/s",
        files.len(),
        rows as f64 / secs
    );
    println!(
        "segments {:.1} MB for {:.1} MB of raw JSON = 1/{:.1} (goal <= 1/30); the journal is {:.1} MB",
        seg as f64 / 1e6,
        raw as f64 / 1e6,
        raw as f64 / seg as f64,
        journal_bytes as f64 / 1e6
    );

    // Read back into a fresh journal, then once more (every file held).
    let imported = out.with_extension("imported.db");
    let _ = std::fs::remove_file(&imported);
    let import = || {
        let start = Instant::now();
        let status = Command::new(BIN)
            .arg("--store")
            .arg(&imported)
            .args(["-q", "import", "-o", "json"])
            .arg(out)
            .env("KUBECONFIG", out.with_extension("no-kubeconfig"))
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
        start.elapsed().as_secs_f64()
    };
    let secs = import();
    println!(
        "import: {secs:.1} s for {rows} rows = {:.0} rows/s; the imported journal is {:.1} MB",
        rows as f64 / secs,
        std::fs::metadata(&imported).unwrap().len() as f64 / 1e6
    );
    println!(
        "import again (every file already imported): {:.2} s",
        import()
    );

    let python = Path::new(ROOT).join("target/tmp/sqlenv/bin/python");
    if !python.exists() {
        println!("queries: skipped, no {} (run .ci/run)", python.display());
        return;
    }
    let time = |engine: &str, name: &str, params: &serde_json::Value| -> (f64, usize) {
        let start = Instant::now();
        let output = Command::new(&python)
            .arg(Path::new(ROOT).join("tests/sql/query.py"))
            .arg(Path::new(ROOT).join("docs/at-scale.md"))
            .args([engine, name, &params.to_string()])
            .output()
            .unwrap();
        let secs = start.elapsed().as_secs_f64();
        assert!(
            output.status.success(),
            "{engine} {name}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let rows: Vec<serde_json::Value> = serde_json::from_slice(&output.stdout).unwrap();
        (secs, rows.len())
    };
    let ms = |t: i64| krply::time::Millis::from_ms(t).to_string();
    // The last 30 minutes, and the busiest object's timeline and state
    // 30 minutes ago.
    let busiest: String = conn
        .query_row(
            "SELECT o.name FROM objects o
             ORDER BY (SELECT count(*) FROM records r WHERE r.object_id = o.id)
                    + (SELECT coalesce(sum(b.records), 0) FROM blocks b WHERE b.object_id = o.id)
                      DESC
             LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let params = json!({
        "dir": out, "cluster": cluster, "namespace": namespace,
        "since": ms(last - 30 * 60_000), "until": ms(last), "at": ms(last - 30 * 60_000),
        "kind": "Deployment", "name": busiest,
    });
    println!(
        "queries over {:.1} days of history (whole python runs; median of 3):",
        (last - first) as f64 / 86_400_000.0
    );
    for (engine, code) in [
        ("duckdb", "import duckdb; duckdb.sql('select 1').fetchall()"),
        ("clickhouse", "import chdb; chdb.query('select 1')"),
    ] {
        let mut runs: Vec<f64> = (0..3)
            .map(|_| {
                let start = Instant::now();
                assert!(
                    Command::new(&python)
                        .args(["-c", code])
                        .status()
                        .unwrap()
                        .success()
                );
                start.elapsed().as_secs_f64()
            })
            .collect();
        runs.sort_by(f64::total_cmp);
        println!(
            "  {engine:<10} select 1  {:>7.0} ms  (Python and the engine starting)",
            runs[1] * 1e3
        );
    }
    for engine in ["duckdb", "clickhouse"] {
        for name in [
            "changed",
            "changes",
            "timeline",
            "object_at",
            "coverage",
            "gaps",
        ] {
            let mut runs: Vec<(f64, usize)> = (0..3).map(|_| time(engine, name, &params)).collect();
            runs.sort_by(|a, b| a.0.total_cmp(&b.0));
            let (secs, rows) = runs[1];
            println!(
                "  {engine:<10} {name:<9} {:>7.0} ms  {rows:>6} rows",
                secs * 1e3
            );
        }
    }
}
