//! Parquet segments (docs/at-scale.md) read by the real engines: the demo's
//! journal exported, then every query of the doc run as written in DuckDB and
//! in chDB (ClickHouse embedded), and their rows compared with what `diff`,
//! `timeline` and `coverage` print.
//!
//! The engines come from PyPI (tests/sql/requirements.txt), installed on
//! first use into `target/tmp/sqlenv` (`.ci/run` installs them up front).

use crate::common::{self, Env, run_bounded};
use krply_sim::{Seed, SimConfig, Simulator};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
pub(crate) const ENGINES: [&str; 2] = ["duckdb", "clickhouse"];

static SQLENV: OnceLock<Result<PathBuf, String>> = OnceLock::new();

/// The Python of the venv with the engines, installed when missing or when
/// the requirements changed.
pub(crate) fn python() -> PathBuf {
    SQLENV
        .get_or_init(|| {
            let env = Path::new(ROOT).join("target/tmp/sqlenv");
            let python = env.join("bin/python");
            let requirements = Path::new(ROOT).join("tests/sql/requirements.txt");
            let wanted = std::fs::read_to_string(&requirements).map_err(|e| e.to_string())?;
            let stamp = env.join("installed.txt");
            if std::fs::read_to_string(&stamp).ok().as_deref() == Some(wanted.as_str()) {
                return Ok(python);
            }
            let mut venv = Command::new("python3");
            venv.args(["-m", "venv"]).arg(&env);
            let out = run_bounded(venv, "python3 -m venv");
            if out.code != Some(0) {
                return Err(format!("python3 -m venv failed: {}", out.stderr));
            }
            let mut pip = Command::new(&python);
            pip.args(["-m", "pip", "install", "-q", "-r"])
                .arg(&requirements);
            let out = run_bounded(pip, "pip install -r tests/sql/requirements.txt");
            if out.code != Some(0) {
                return Err(format!("pip install failed: {}", out.stderr));
            }
            std::fs::write(&stamp, wanted).map_err(|e| e.to_string())?;
            Ok(python)
        })
        .clone()
        .unwrap_or_else(|e| {
            panic!("the tests' Python (DuckDB, chDB, the MCP SDK) is not installed: {e}")
        })
}

/// The rows of the doc's query `name` in `engine`.
fn sql(engine: &str, name: &str, params: &Value) -> Vec<Vec<Option<String>>> {
    let mut c = Command::new(python());
    c.arg(Path::new(ROOT).join("tests/sql/query.py"))
        .arg(Path::new(ROOT).join("docs/at-scale.md"))
        .args([engine, name, &params.to_string()]);
    let out = run_bounded(c, &format!("{engine} {name}"));
    assert_eq!(out.code, Some(0), "{engine} {name}: {}", out.stderr);
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

/// The doc's "what changed" in `engine`, as `diff_changes` has `diff`'s
/// answer: (kind, name, change).
pub(crate) fn changed_rows(engine: &str, params: &Value) -> Vec<(String, String, String)> {
    sql(engine, "changed", params)
        .into_iter()
        .map(|r| {
            let text = |i: usize| r[i].clone().unwrap_or_default();
            (text(0), text(1), text(2))
        })
        .collect()
}

/// `kubectl-krply ARGS` on `store`, as JSON.
fn krply(store: &Path, args: &[&str]) -> Value {
    let mut c = Command::new(&*common::BIN);
    c.env_clear()
        .env("TZ", "UTC")
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", store.parent().unwrap())
        .env("KUBECONFIG", store.with_file_name("no-kubeconfig"))
        .arg("--store")
        .arg(store)
        .args(args);
    let out = run_bounded(c, &format!("kubectl-krply {args:?}"));
    assert!(
        matches!(out.code, Some(0) | Some(3)),
        "{args:?}: {}",
        out.stderr
    );
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {}", out.stdout))
}

fn text(v: &Value) -> Option<String> {
    v.as_str().map(str::to_string)
}

#[test]
fn the_documented_queries_give_krplys_answers_on_the_demo_journal() {
    let home = tempfile::tempdir().unwrap();
    let store = common::demo_journal(home.path());

    // Exported: a file per stream (one day), and the manifest.
    let segments = home.path().join("segments");
    let mut export = Command::new(&*common::BIN);
    export
        .env_clear()
        .env("TZ", "UTC")
        .env("HOME", home.path())
        .arg("--store")
        .arg(&store)
        .args(["export", "--format", "parquet", "--dir"])
        .arg(&segments);
    let out = run_bounded(export, "export --format parquet");
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(segments.join("manifest.json")).unwrap()).unwrap();
    let files = manifest["files"].as_array().unwrap();
    assert!(files.len() >= 6, "{manifest:#}");
    for f in files {
        assert!(segments.join(f["path"].as_str().unwrap()).is_file(), "{f}");
        assert!(f["rows"].as_u64().unwrap() > 0, "{f}");
    }
    // Exported again: each slice's file is replaced, nothing is left aside.
    let again = {
        let mut c = Command::new(&*common::BIN);
        c.env_clear()
            .env("TZ", "UTC")
            .env("HOME", home.path())
            .arg("--store")
            .arg(&store)
            .args(["export", "--format", "parquet", "--dir"])
            .arg(&segments);
        run_bounded(c, "export --format parquet, again")
    };
    assert_eq!(again.code, Some(0), "{}", again.stderr);
    let manifest2: Value =
        serde_json::from_slice(&std::fs::read(segments.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest2["files"], manifest["files"]);
    let mut written = Vec::new();
    let mut dirs = vec![segments.clone()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else {
                written.push(p);
            }
        }
    }
    // The streams' files, the cluster's audit file (the demo imports its
    // audit log) and the manifest, nothing else.
    let audit = manifest["audit"].as_array().map_or(0, Vec::len);
    assert_eq!(audit, 1, "{manifest:#}");
    assert_eq!(written.len(), files.len() + audit + 1, "{written:?}");
    assert!(
        written
            .iter()
            .all(|p| !p.to_string_lossy().ends_with(".tmp")),
        "{written:?}"
    );
    let cluster = files[0]["cluster"].as_str().unwrap().to_string();
    let changed = answers_agree(&store, &segments, &cluster);
    assert!(changed >= 4, "the demo changes at least 4 objects");
}

/// Runs the doc's queries for `cluster` over `segments` in both engines and
/// checks each against krply's answer from `store` (namespace shop); returns
/// how many objects changed.
fn answers_agree(store: &Path, segments: &Path, cluster: &str) -> usize {
    let base = ["--cluster-id", cluster, "-n", "shop"];
    let with =
        |args: &[&str]| -> Vec<String> { base.iter().chain(args).map(|s| s.to_string()).collect() };
    let run = |args: Vec<String>| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        krply(store, &args)
    };

    // Coverage and gaps.
    let coverage = run(with(&["coverage", "-o", "json"]));
    let streams = coverage["streams"].as_array().unwrap();
    let mut covered: Vec<Vec<Option<String>>> = streams
        .iter()
        .map(|s| vec![text(&s["id"]), text(&s["from"]), text(&s["to"])])
        .collect();
    covered.sort();
    let mut gaps: Vec<Vec<Option<String>>> = streams
        .iter()
        .flat_map(|s| {
            s["gap_windows"].as_array().unwrap().iter().map(|w| {
                vec![
                    text(&s["id"]),
                    text(&w["from"]),
                    text(&w["to"]),
                    text(&w["reason"]),
                ]
            })
        })
        .collect();
    gaps.sort();
    let dir = segments.to_str().unwrap();
    let params = json!({"dir": dir, "cluster": cluster});
    for engine in ENGINES {
        assert_eq!(sql(engine, "coverage", &params), covered, "{engine}");
        assert_eq!(sql(engine, "gaps", &params), gaps, "{engine}");
    }

    // What changed from the first lists to now (the whole incident, the 410
    // and its relist included): from when every stream had listed, each
    // stamped when its answer came.
    let since = streams
        .iter()
        .filter_map(|s| s["from"].as_str())
        .max_by_key(|t| {
            krply::time::Millis::parse_rfc3339(t)
                .map(|m| m.as_ms())
                .ok()
        })
        .unwrap()
        .to_string();
    let until = krply::time::Millis::now().to_string();
    let diff = run(with(&[
        "diff", "--since", &since, "--until", &until, "-o", "json",
    ]));
    let changed = crate::common::diff_changes(&diff);
    let params = json!({"dir": dir, "cluster": cluster, "namespace": "shop",
                        "since": since, "until": until});
    for engine in ENGINES {
        assert_eq!(changed_rows(engine, &params), changed, "{engine}");
    }

    // Who changed what: every event of the window, with its actor when the
    // audit logs say (the demo imports its simulator's audit log).
    let log = run(with(&[
        "log", "--since", &since, "--until", &until, "-o", "json",
    ]));
    let mut events: Vec<Vec<Option<String>>> = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["observed"] == "watch")
        .map(|e| {
            vec![
                text(&e["observed_at"]),
                text(&e["type"]),
                text(&e["kind"]),
                text(&e["name"]),
                text(&e["resource_version"]),
                text(&e["actor"]["user"]),
                text(&e["actor"]["match"]).or_else(|| text(&e["actor_unknown"])),
            ]
        })
        .collect();
    events.sort();
    for engine in ENGINES {
        let mut rows = sql(engine, "changes", &params);
        rows.sort();
        assert_eq!(rows, events, "{engine}");
    }

    // Every changed object at both ends of the window: the version `get
    // --at` prints, or no row where it was not there.
    for (kind, name, change) in &changed {
        let object = format!("{}/{name}", kind.to_lowercase());
        for (at, absent) in [(&since, change == "added"), (&until, change == "deleted")] {
            let want = (!absent).then(|| {
                let got = run(with(&["get", &object, "--at", at, "-o", "json"]));
                got["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap()
                    .to_string()
            });
            let params = json!({"dir": dir, "cluster": cluster, "namespace": "shop",
                                "kind": kind, "name": name, "at": at});
            for engine in ENGINES {
                let rows = sql(engine, "object_at", &params);
                let got = rows.first().and_then(|r| r[0].clone());
                assert_eq!(got, want, "{engine} {object} at {at}: {rows:?}");
                if let Some(row) = rows.first() {
                    let body: Value = serde_json::from_str(row[1].as_deref().unwrap()).unwrap();
                    assert_eq!(body["metadata"]["name"], name.as_str(), "{engine} {object}");
                }
            }
        }
    }

    // The timeline of every changed object: each version's time, type and
    // resourceVersion, and the gaps where they fall.
    for (kind, name, _) in &changed {
        let object = format!("{}/{name}", kind.to_lowercase());
        let timeline = run(with(&["timeline", &object, "-o", "json"]));
        let entries: Vec<Vec<Option<String>>> = timeline["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                let gap = e["type"] == "GAP";
                vec![
                    text(&e["observed_at"]),
                    text(&e["type"]),
                    if gap {
                        None
                    } else {
                        text(&e["resource_version"])
                    },
                ]
            })
            .collect();
        let params = json!({"dir": dir, "cluster": cluster, "namespace": "shop",
                            "kind": kind, "name": name});
        for engine in ENGINES {
            assert_eq!(
                sql(engine, "timeline", &params),
                entries,
                "{engine} {object}"
            );
        }
    }
    changed.len()
}

#[test]
fn two_clusters_recorded_in_one_journal_stay_two_clusters_in_the_segments() {
    // Two shops, each with its own frontend, recorded into one journal.
    let env = Env::shop();
    let other = Simulator::start_background(SimConfig {
        seed: Seed::Shop,
        ..SimConfig::default()
    })
    .unwrap();
    let (other_kubeconfig, _) = env.named_context(&other, "other");
    let rec = env.start_recorder(&["deploy", "cm"]);
    let rec_other = env.start_recorder(&[
        "--kubeconfig",
        other_kubeconfig.to_str().unwrap(),
        "-n",
        "shop",
        "deploy",
        "cm",
    ]);
    env.wait_for("both clusters listed", || {
        env.run(&["status", "-o", "json"])
            .stdout
            .matches("\"id\"")
            .count()
            >= 2
    });
    env.wait_baselines(1);
    env.scale("frontend", 3);
    other
        .patch_merge(
            "apps/v1",
            "Deployment",
            Some("shop"),
            "frontend",
            &json!({"spec": {"replicas": 7}}),
        )
        .unwrap();
    other
        .patch_merge(
            "apps/v1",
            "Deployment",
            Some("shop"),
            "cartservice",
            &json!({"spec": {"replicas": 2}}),
        )
        .unwrap();
    let clusters: Vec<String> = {
        let journal = krply::journal::Journal::open(&env.store).unwrap();
        journal
            .clusters()
            .unwrap()
            .into_iter()
            .map(|c| c.id)
            .collect()
    };
    assert_eq!(clusters.len(), 2, "{clusters:?}");
    let modified = |cluster: &str, object: &str| {
        let t = krply(
            &env.store,
            &[
                "--cluster-id",
                cluster,
                "-n",
                "shop",
                "timeline",
                object,
                "-o",
                "json",
            ],
        );
        t["entries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["type"] == "MODIFIED")
    };
    env.wait_for("each change journaled", || {
        clusters.iter().all(|c| modified(c, "deploy/frontend"))
            && clusters.iter().any(|c| modified(c, "deploy/cartservice"))
    });
    assert_eq!(rec.stop().code, Some(0));
    assert_eq!(rec_other.stop().code, Some(0));

    let segments = env.dir.path().join("segments");
    crate::import::export(&env, &env.store, &segments, &[]);
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(segments.join("manifest.json")).unwrap()).unwrap();
    let mut in_manifest: Vec<&str> = manifest["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["cluster"].as_str().unwrap())
        .collect();
    in_manifest.dedup();
    assert_eq!(in_manifest.len(), 2, "{manifest:#}");
    // The same names, two histories: one cluster changed one Deployment,
    // the other two.
    let mut changed: Vec<usize> = clusters
        .iter()
        .map(|c| answers_agree(&env.store, &segments, c))
        .collect();
    changed.sort();
    assert_eq!(changed, vec![1, 2]);

    // Imported into a fresh journal: still two clusters, and each answers
    // there as the SQL over the segments does.
    let imported = env.dir.path().join("imported.db");
    let out = env.run(&[
        "--store",
        imported.to_str().unwrap(),
        "import",
        segments.to_str().unwrap(),
    ]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let ids: Vec<String> = krply::journal::Journal::open(&imported)
        .unwrap()
        .clusters()
        .unwrap()
        .into_iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(ids, clusters);
    let mut again: Vec<usize> = clusters
        .iter()
        .map(|c| answers_agree(&imported, &segments, c))
        .collect();
    again.sort();
    assert_eq!(again, vec![1, 2]);
}

#[test]
fn a_stretch_the_server_refused_is_a_gap_in_the_sql_too() {
    // Widgets recorded, then their definition removed: from then on the
    // stream is unavailable (404), which coverage counts as missing history.
    let env = Env::shop();
    crate::record::create_widget_crd(&env);
    env.sim
        .create(json!({"apiVersion": "example.com/v1", "kind": "Widget",
                       "metadata": {"name": "w1", "namespace": "shop"}, "spec": {}}))
        .unwrap();
    let rec = env.start_recorder(&["widgets.example.com", "cm"]);
    env.wait_baselines(1);
    env.patch_cm("frontend-config", "mode", "segments");
    crate::record::delete_widget_crd(&env);
    let stream = "widgets.v1.example.com@shop";
    env.wait_for("the widgets stream to become unavailable", || {
        env.coverage(stream).state == krply::journal::read::StreamState::Unavailable
    });
    env.wait_events("configmaps.v1@shop", 1);
    assert_eq!(rec.stop().code, Some(0));
    assert!(
        !env.coverage(stream).windows.is_empty(),
        "{:?}",
        env.coverage(stream)
    );

    let segments = env.dir.path().join("segments");
    crate::import::export(&env, &env.store, &segments, &[]);
    let cluster = env.journal().clusters().unwrap()[0].id.clone();
    // The widget went with its definition; the ConfigMap changed.
    assert_eq!(answers_agree(&env.store, &segments, &cluster), 2);
}

/// Segment paths hold no shell metacharacters (a stream of every namespace is
/// `@*` in its name, a selector has spaces and parentheses), and a directory
/// in the layout before, whose names kept them, imports all the same.
#[test]
fn segment_paths_are_safe_in_a_shell_and_the_old_layout_still_imports() {
    let env = Env::shop();
    let rec = env.start_recorder(&["deploy", "-A"]);
    let selected = env.start_recorder(&["cm", "-l", "app in (frontend,cart)"]);
    env.wait_baselines(1);
    env.scale("frontend", 3);
    env.wait_events("deployments.v1.apps@*", 1);
    assert_eq!(rec.stop().code, Some(0));
    assert_eq!(selected.stop().code, Some(0));
    let segments = env.dir.path().join("segments");
    let out = env.run(&[
        "export",
        "--format",
        "parquet",
        "--dir",
        segments.to_str().unwrap(),
    ]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let mut dirs = vec![segments.clone()];
    let mut files = Vec::new();
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-@=,+:%".contains(c)),
                "a path part a shell reads specially: {name:?}"
            );
            if e.path().is_dir() {
                dirs.push(e.path());
            } else {
                files.push(e.path());
            }
        }
    }
    let every = segments
        .read_dir()
        .unwrap()
        .flatten()
        .filter(|c| c.path().is_dir())
        .flat_map(|c| c.path().read_dir().unwrap().flatten())
        .find(|s| s.file_name().to_string_lossy().ends_with("@%2A"))
        .expect("the stream of every namespace")
        .path();
    assert!(files.iter().any(|f| f.starts_with(&every)), "{files:?}");

    // The layout before: `@*` as it is. Import reads what the files hold.
    let old = every.with_file_name("deployments.v1.apps@*");
    std::fs::rename(&every, &old).unwrap();
    let imported = env.dir.path().join("imported.db");
    let out = env.run(&[
        "--store",
        imported.to_str().unwrap(),
        "import",
        segments.to_str().unwrap(),
    ]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let answer = |store: &Path| {
        let out = env.run(&[
            "--store",
            store.to_str().unwrap(),
            "log",
            "-A",
            "deploy",
            "--since",
            "1h",
            "-o",
            "json",
        ]);
        let v: Value = serde_json::from_str(&out.stdout).unwrap();
        v["entries"].as_array().unwrap().len()
    };
    assert!(answer(&env.store) >= 1);
    assert_eq!(answer(&imported), answer(&env.store));
}

/// Every text a Parquet file holds, decompressed: each string value of every
/// column, and its key-value metadata. A column of another type cannot hold
/// a secret's value; one that could (binary) fails the test until it is read
/// here too.
fn parquet_texts(path: &Path) -> Vec<String> {
    use arrow_array::Array;
    use arrow_array::cast::AsArray;
    use arrow_schema::DataType;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let file = std::fs::File::open(path).unwrap();
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).unwrap();
    let mut texts: Vec<String> = builder
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .into_iter()
        .flatten()
        .flat_map(|kv| [kv.key.clone(), kv.value.clone().unwrap_or_default()])
        .collect();
    for batch in builder.build().unwrap() {
        let batch = batch.unwrap();
        for (field, column) in batch.schema().fields().iter().zip(batch.columns()) {
            match field.data_type() {
                DataType::Utf8 => {
                    let strings = column.as_string::<i32>();
                    texts.extend(
                        (0..strings.len())
                            .filter(|&i| strings.is_valid(i))
                            .map(|i| strings.value(i).to_string()),
                    );
                }
                DataType::Int64 | DataType::Boolean | DataType::Timestamp(..) => {}
                other => panic!(
                    "{}: column {} of type {other} is not scanned",
                    path.display(),
                    field.name()
                ),
            }
        }
    }
    texts
}

/// Secrets recorded with `--include-secrets`, and an audit log that holds
/// their values (kube-apiserver's RequestResponse level logs the objects),
/// exported as segments and as NDJSON: no value of a Secret is in any file,
/// neither in its bytes nor in anything it holds once decompressed.
#[test]
fn no_value_of_a_secret_reaches_a_segment() {
    let env = Env::shop();
    let log = env.dir.path().join("audit.log");
    env.sim.audit_to(&log).unwrap();
    let value = "correct-horse-battery-staple-42";
    let b64 = "Y29ycmVjdC1ob3JzZS1iYXR0ZXJ5LXN0YXBsZS00Mg==";
    let other = "tr0ub4dor-and-3";
    let other_b64 = "dHIwdWI0ZG9yLWFuZC0z";
    let who = krply_sim::SimUser {
        name: "alice@example.com",
        groups: &["system:authenticated"],
        impersonated_by: None,
        user_agent: "kubectl/v1.37.2 (linux/amd64) kubernetes/$Format",
    };
    env.sim
        .create_as(
            json!({
                "apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "db", "namespace": "shop", "annotations": {
                    "kubectl.kubernetes.io/last-applied-configuration":
                        format!("{{\"data\":{{\"password\":\"{b64}\"}}}}")
                }},
                "data": {"password": b64},
                "stringData": {"plain": value},
                "type": "Opaque"
            }),
            "kubectl-client-side-apply",
            &who,
        )
        .unwrap();
    let log_arg = log.to_str().unwrap().to_string();
    let rec = env.start_recorder(&["secrets", "--include-secrets", "--audit-log", &log_arg]);
    env.wait_baselines(1);
    let mut secret = env.sim.get("v1", "Secret", Some("shop"), "db").unwrap();
    secret["data"]["other"] = json!(other_b64);
    env.sim.update_as(secret, "kubectl-edit", &who).unwrap();
    env.wait_events("secrets.v1@shop", 1);
    assert_eq!(rec.stop().code, Some(0));
    let audit = std::fs::read_to_string(&log).unwrap();
    assert!(
        audit.contains(b64) && audit.contains(other_b64),
        "the audit log holds the values, as kube-apiserver's does:\n{audit}"
    );

    let segments = env.dir.path().join("segments");
    let out = env.run(&[
        "export",
        "--format",
        "parquet",
        "--dir",
        segments.to_str().unwrap(),
    ]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let ndjson = env.dir.path().join("export.ndjson");
    let out = env.run(&["export"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    std::fs::write(&ndjson, &out.stdout).unwrap();

    let needles = [value, b64, other, other_b64, "Y29ycmVjdC1ob3Jz"];
    let mut files = vec![ndjson];
    let mut dirs = vec![segments];
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            if e.path().is_dir() {
                dirs.push(e.path());
            } else {
                files.push(e.path());
            }
        }
    }
    let parquet: Vec<&PathBuf> = files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "parquet"))
        .collect();
    assert!(
        parquet.iter().any(|f| f.ends_with("audit.parquet")),
        "the audit events are exported: {files:?}"
    );
    assert!(parquet.len() >= 2, "{files:?}");
    let mut digests = 0;
    for file in &files {
        let bytes = std::fs::read(file).unwrap();
        let mut texts = vec![String::from_utf8_lossy(&bytes).into_owned()];
        if parquet.contains(&file) {
            texts.extend(parquet_texts(file));
        }
        for text in &texts {
            for needle in needles {
                assert!(
                    !text.contains(needle),
                    "{needle} in {}: {text}",
                    file.display()
                );
            }
            digests += text.matches("sha256:").count();
        }
    }
    assert!(digests > 0, "the secrets' digests are exported");
}

/// A segment written by a later kubectl-krply, in a format of the same
/// layout this one does not know, is refused as newer, with a hint to
/// upgrade; nothing is imported. The manifest states the format too.
#[test]
fn a_segment_of_a_newer_format_is_refused_saying_so() {
    use parquet::arrow::ArrowWriter;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::file::metadata::KeyValue;
    let env = Env::shop();
    let rec = env.start_recorder(&["deploy"]);
    env.wait_baselines(1);
    assert_eq!(rec.stop().code, Some(0));
    let segments = env.dir.path().join("segments");
    let out = env.run(&[
        "export",
        "--format",
        "parquet",
        "--dir",
        segments.to_str().unwrap(),
    ]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(segments.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["format"], "krply-segments/2", "{manifest:#}");
    let file = segments.join(manifest["files"][0]["path"].as_str().unwrap());

    // The same rows, described as format 9.
    let reader =
        ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&file).unwrap()).unwrap();
    let mut meta: Value = reader
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .unwrap()
        .iter()
        .find(|kv| kv.key == "krply.segment")
        .and_then(|kv| kv.value.as_deref())
        .map(|v| serde_json::from_str(v).unwrap())
        .unwrap();
    meta["format"] = json!("krply-segments/9");
    let schema = reader.schema().clone();
    let batches: Vec<_> = reader.build().unwrap().map(Result::unwrap).collect();
    let newer = env.dir.path().join("newer.parquet");
    let mut writer =
        ArrowWriter::try_new(std::fs::File::create(&newer).unwrap(), schema, None).unwrap();
    for b in &batches {
        writer.write(b).unwrap();
    }
    writer.append_key_value_metadata(KeyValue::new("krply.segment".into(), meta.to_string()));
    writer.close().unwrap();

    let store = env.dir.path().join("imported.db");
    let out = env.run(&[
        "--store",
        store.to_str().unwrap(),
        "import",
        newer.to_str().unwrap(),
    ]);
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert!(
        lines[0].starts_with("error: ")
            && lines[0].ends_with(
                "newer.parquet is in format \"krply-segments/9\", newer than this kubectl-krply reads (\"krply-segments/2\")"
            ),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("hint: a later kubectl-krply exported it: upgrade this one"),
        "{}",
        out.stderr
    );
    assert!(!store.exists(), "nothing was imported");
}
