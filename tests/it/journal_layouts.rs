//! The journal's layouts give the same answers:
//!
//! - a journal written by schema version 3 (`fixtures/journal-v3/`): this binary
//!   migrates it in place and then answers from it byte for byte what version 3
//!   answered;
//! - the same history written with and without packs (several versions of an
//!   object in one frame) and with a stream dictionary: every answer is the same,
//!   byte for byte.

use crate::common::{Sandbox, path_str};
use std::path::Path;

const CLUSTER: &str = "127.0.0.1-bd4dc417";
const WINDOW: [&str; 4] = [
    "--since",
    "2026-12-01T04:37:40Z",
    "--until",
    "2026-12-01T04:37:46Z",
];

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/journal-v3")
        .join(name)
}

fn sha256_hex(bytes: &[u8]) -> String {
    ring::digest::digest(&ring::digest::SHA256, bytes)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Fields answers gained after version 3, by answer (docs/output.md: fields
/// may be added, none removed or renamed): what version 3 answered must be
/// the rest, byte for byte.
const LATER_FIELDS: &[(&str, &[&str])] = &[("diff.json", &["observed_at", "changed_between"])];

/// `answer` without the fields `file`'s command gained since version 3,
/// pretty-printed as the answers are; other answers as they are.
fn without_later_fields(file: &str, answer: &str) -> String {
    let Some((_, fields)) = LATER_FIELDS.iter().find(|(f, _)| *f == file) else {
        return answer.to_string();
    };
    let mut value: serde_json::Value = serde_json::from_str(answer).expect("JSON");
    for object in value["objects"].as_array_mut().into_iter().flatten() {
        if let Some(o) = object.as_object_mut() {
            for f in *fields {
                o.shift_remove(*f);
            }
        }
    }
    serde_json::to_string_pretty(&value).expect("JSON") + "\n"
}

#[test]
fn a_version_3_journal_migrates_and_answers_as_version_3_did() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.store.parent().unwrap()).unwrap();
    std::fs::copy(fixture("journal.db"), &sb.store).unwrap();
    let scope = ["--cluster-id", CLUSTER, "-n", "shop"];
    let with = |args: &[&str]| -> Vec<String> {
        args.iter()
            .chain(scope.iter())
            .map(|s| s.to_string())
            .collect()
    };
    let cases: Vec<(&str, Vec<String>)> = vec![
        (
            "diff.json",
            with(&[&["diff"][..], &WINDOW, &["-o", "json"]].concat()),
        ),
        (
            "timeline.json",
            with(&["timeline", "deployment/frontend", "-o", "json"]),
        ),
        (
            "get.json",
            with(&[
                "get",
                "deployment/frontend",
                "--at",
                "2026-12-01T04:37:44Z",
                "-o",
                "json",
            ]),
        ),
        ("log.txt", with(&[&["log"][..], &WINDOW].concat())),
        ("coverage.json", with(&["coverage", "-o", "json"])),
    ];
    for (file, args) in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = sb.run(&args);
        assert_eq!(out.code, Some(0), "{args:?}: {}", out.stderr);
        let want = std::fs::read_to_string(fixture(file)).unwrap();
        assert_eq!(
            without_later_fields(file, &out.stdout),
            want,
            "{args:?} answers as version 3 did"
        );
    }
    let sums = std::fs::read_to_string(fixture("SHA256SUMS")).unwrap();
    let digest = |file: &str| {
        sums.lines()
            .find_map(|l| l.strip_suffix(file).map(|d| d.trim().to_string()))
            .unwrap()
    };
    let export = sb.run(&["export"]);
    assert_eq!(export.code, Some(0), "{}", export.stderr);
    assert_eq!(
        sha256_hex(export.stdout.as_bytes()),
        digest("export.ndjson")
    );
    let snapshot = sb.run(
        &with(&["snapshot", "--at", "2026-12-01T04:37:44Z", "-o", "json"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert_eq!(snapshot.code, Some(0), "{}", snapshot.stderr);
    assert_eq!(
        sha256_hex(snapshot.stdout.as_bytes()),
        digest("snapshot.json")
    );

    let conn = rusqlite::Connection::open(&sb.store).unwrap();
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, krply::journal::schema::SCHEMA_VERSION);
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    let index: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_schema WHERE name = 'records_event_key'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(index, 0, "migrated to version 4");
}

const BUILT_CLUSTER: &str = "built-both-ways";
/// 2026-11-30T10:00:00Z.
const T0: i64 = 1_796_032_800_000;

fn deployment(name: &str, uid: usize, rv: usize, step: usize) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name, "namespace": "shop", "uid": format!("00000000-0000-4000-8000-{uid:012}"),
            "resourceVersion": rv.to_string(), "generation": 1 + step / 3,
            "creationTimestamp": "2026-11-30T09:00:00Z",
            "labels": {"app": name},
            "annotations": {"deployment.kubernetes.io/revision": (1 + step / 3).to_string()},
            "managedFields": [
                {"manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "apps/v1",
                 "time": "2026-11-30T09:00:00Z", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {}}}}}},
                {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "apps/v1",
                 "time": format!("2026-11-30T10:{:02}:{:02}Z", step / 60 % 60, step % 60),
                 "fieldsType": "FieldsV1", "subresource": "status",
                 "fieldsV1": {"f:status": {"f:readyReplicas": {}, "f:conditions": {}}}}
            ]
        },
        "spec": {
            "replicas": 1 + step % 4,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [
                {"name": "server", "image": format!("shop/{name}:v0.{}", step / 3), "ports": [{"containerPort": 8080}]}
            ]}}
        },
        "status": {"readyReplicas": 1 + (step + 1) % 4, "conditions": [
            {"type": "Available", "status": "True",
             "lastUpdateTime": format!("2026-11-30T10:{:02}:{:02}Z", step / 60 % 60, step % 60)}
        ]}
    }))
    .unwrap()
}

/// One history: a list of `listed` Deployments, then `versions` changes of each of
/// the first three, a 410 gap in the middle (its relist with a checkpoint among
/// its items), and a clean stop.
fn history_ops(
    stream: krply::journal::StreamId,
    listed: usize,
    versions: usize,
) -> Vec<krply::journal::writer::Op> {
    use krply::journal::records::{CheckpointReason, GapInfo};
    use krply::journal::writer::Op;
    use krply::model::{ObjectMeta, WatchType};
    let meta = |name: &str, uid: usize, rv: usize| ObjectMeta {
        namespace: "shop".into(),
        name: name.into(),
        uid: format!("00000000-0000-4000-8000-{uid:012}"),
        resource_version: rv.to_string(),
        diff_digest: None,
        given_mark: None,
    };
    let name = |i: usize| format!("svc-{i}");
    let mut ops = Vec::new();
    for i in 0..listed {
        ops.push(Op::BaselineItem {
            stream,
            at: T0,
            meta: meta(&name(i), i, 10 + i),
            body: deployment(&name(i), i, 10 + i, 0),
        });
    }
    ops.push(Op::BaselineEnd {
        stream,
        at: T0,
        list_rv: (10 + listed).to_string(),
        items: listed as u64,
    });
    let mut rv = 100_000;
    for step in 1..=versions {
        for i in 0..3 {
            rv += 1;
            ops.push(Op::Event {
                stream,
                at: T0 + (step * 1000 + i) as i64,
                watch_type: WatchType::Modified,
                meta: meta(&name(i), i, rv),
                body: deployment(&name(i), i, rv, step),
            });
        }
        if step == versions / 2 {
            let at = T0 + (step * 1000 + 500) as i64;
            ops.push(Op::Gap {
                stream,
                at,
                info: GapInfo {
                    from: at - 400,
                    from_rv: Some(rv.to_string()),
                    reason: "410 Expired: too old".into(),
                },
            });
            for i in 0..listed {
                if i == listed / 2 {
                    // The writer committed halfway through the list: the
                    // events before the gap get their checkpoint between its
                    // items.
                    ops.push(Op::Checkpoint {
                        stream,
                        at: T0 + (step * 1000 + 2) as i64,
                        rv: rv.to_string(),
                        reason: CheckpointReason::Event,
                    });
                }
                let (v, b) = if i < 3 {
                    (rv - 2 + i, deployment(&name(i), i, rv - 2 + i, step))
                } else {
                    (10 + i, deployment(&name(i), i, 10 + i, 0))
                };
                ops.push(Op::BaselineItem {
                    stream,
                    at,
                    meta: meta(&name(i), i, v),
                    body: b,
                });
            }
            ops.push(Op::BaselineEnd {
                stream,
                at,
                list_rv: rv.to_string(),
                items: listed as u64,
            });
            // A bookmark right after the list: complete up to a later
            // resourceVersion than the list's.
            ops.push(Op::Checkpoint {
                stream,
                at: at + 100,
                rv: (rv + 1).to_string(),
                reason: CheckpointReason::Bookmark,
            });
        }
    }
    ops.push(Op::Checkpoint {
        stream,
        at: T0 + (versions * 1000 + 900) as i64,
        rv: rv.to_string(),
        reason: CheckpointReason::Stop,
    });
    ops
}

fn build(path: &Path, pack: bool, listed: usize, versions: usize) {
    build_with(path, pack, listed, versions, true)
}

/// [`build`]; `flush_each`: one transaction per op, else the writer batches.
fn build_with(path: &Path, pack: bool, listed: usize, versions: usize, flush_each: bool) {
    use krply::journal::Journal;
    use krply::journal::writer::{Op, Writer, WriterOptions};
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let journal = Journal::open_or_create(path).unwrap();
    journal
        .register_cluster(BUILT_CLUSTER, "https://127.0.0.1:6443", None)
        .unwrap();
    let spec = crate::common::deployment_stream("shop");
    let stream = journal.register_stream(BUILT_CLUSTER, &spec).unwrap();
    let options = WriterOptions {
        pack,
        commit_window: std::time::Duration::ZERO,
        ..WriterOptions::default()
    };
    let writer = Writer::start_with(journal, options).unwrap();
    let tx = writer.sender();
    // One transaction per op, so both journals have their checkpoints in the
    // same places (the writer's batching depends on timing).
    for op in history_ops(stream, listed, versions) {
        tx.blocking_send(op).unwrap();
        if !flush_each {
            continue;
        }
        let (ack, done) = std::sync::mpsc::sync_channel(1);
        tx.blocking_send(Op::Flush(ack)).unwrap();
        done.recv().unwrap();
    }
    drop(tx);
    writer.finish().unwrap();
}

#[test]
fn history_written_with_and_without_packs_answers_the_same() {
    use krply::journal::bodies::{FIRST_PACK_VERSIONS, HOT_VERSIONS, PACK_VERSIONS, TRAIN_SAMPLES};
    let listed = TRAIN_SAMPLES + 40;
    let versions = FIRST_PACK_VERSIONS + 3 * PACK_VERSIONS + HOT_VERSIONS;
    let (plain, packed) = (Sandbox::new(), Sandbox::new());
    build(&plain.store, false, listed, versions);
    build(&packed.store, true, listed, versions);
    let count = |sb: &Sandbox, sql: &str| -> i64 {
        rusqlite::Connection::open(&sb.store)
            .unwrap()
            .query_row(sql, [], |r| r.get(0))
            .unwrap()
    };
    assert_eq!(count(&plain, "SELECT count(*) FROM packs"), 0);
    assert!(
        count(&packed, "SELECT count(*) FROM packs") >= 3 * 2,
        "both layouts are exercised"
    );
    assert_eq!(count(&packed, "SELECT count(*) FROM dicts"), 1);

    let at = |ms: i64| jiff::Timestamp::from_millisecond(ms).unwrap().to_string();
    let mid = at(T0 + (versions as i64 / 2) * 1000 + 100);
    // After the relist and the bookmark that follows it.
    let relisted = at(T0 + (versions as i64 / 2) * 1000 + 700);
    let late = at(T0 + (versions as i64 - 2) * 1000 + 100);
    let end = at(T0 + versions as i64 * 1000 + 950);
    let scope = ["--cluster-id", BUILT_CLUSTER, "-n", "shop"];
    let cases: Vec<Vec<&str>> = vec![
        vec!["export"],
        vec!["diff", "--since", &mid, "--until", &end, "-o", "json"],
        vec![
            "diff",
            "--since",
            &mid,
            "--until",
            &late,
            "--include-status",
        ],
        vec!["timeline", "deployment/svc-0", "-o", "json"],
        vec!["timeline", "deployment/svc-2"],
        vec!["get", "deployment/svc-1", "--at", &mid, "-o", "json"],
        vec!["get", "deployment/svc-1", "--at", &late, "-o", "yaml"],
        vec!["snapshot", "--at", &mid, "-o", "json"],
        vec!["snapshot", "--at", &relisted, "-o", "json"],
        vec!["log", "--since", &mid, "--until", &end],
        vec!["coverage", "-o", "json"],
    ];
    for case in cases {
        assert_same(&plain, &packed, case, &scope);
    }
    // Pruning drops packed and unpacked history alike; what is left still
    // answers the same, and the packed journal keeps no pack none of its
    // versions is in.
    let cut = at(T0 + (versions as i64 / 3) * 1000);
    for sb in [&plain, &packed] {
        let out = sb.run(&[
            "prune",
            "--before",
            &cut,
            "--cluster-id",
            BUILT_CLUSTER,
            "-n",
            "shop",
        ]);
        assert_eq!(out.code, Some(0), "{}", out.stderr);
    }
    let orphans = format!(
        "SELECT count(*) FROM packs WHERE id NOT IN
            (SELECT (pack_ref - {u}) >> {b} FROM bodies WHERE pack_ref > {u})",
        u = krply::journal::schema::PACKED,
        b = krply::journal::schema::OFFSET_BITS
    );
    assert_eq!(count(&packed, &orphans), 0);
    assert!(
        count(&packed, "SELECT count(*) FROM packs") > 0,
        "later packs stay"
    );
    let stray = format!(
        "SELECT count(*) FROM waiting WHERE slot NOT IN
            (SELECT pack_ref - {w} FROM bodies WHERE pack_ref >= {w} AND pack_ref < {p})",
        w = krply::journal::schema::WAITING,
        p = krply::journal::schema::PACKED,
    );
    assert_eq!(
        count(&packed, &stray),
        0,
        "a waiting delta without its body"
    );
    for case in [
        vec!["timeline", "deployment/svc-1", "-o", "json"],
        vec!["diff", "--since", &cut, "--until", &end, "-o", "json"],
        vec!["get", "deployment/svc-2", "--at", &mid, "-o", "json"],
        vec!["export"],
    ] {
        assert_same(&plain, &packed, case, &scope);
    }
}

/// `case` (with `scope`, but for `export`) answers something, and the same byte
/// for byte from both journals; the first differing line is shown.
fn assert_same(plain: &Sandbox, packed: &Sandbox, case: Vec<&str>, scope: &[&str]) {
    let mut args = case.clone();
    if case[0] != "export" {
        args.extend(scope);
    }
    let (a, b) = (plain.run(&args), packed.run(&args));
    assert!(
        matches!(a.code, Some(0) | Some(3)),
        "{args:?}: {}",
        a.stderr
    );
    assert!(
        a.stdout.len() > 100,
        "{args:?} answers something: {}",
        a.stdout
    );
    assert_eq!((a.code, &a.stderr), (b.code, &b.stderr), "{args:?}");
    if let Some((n, (x, y))) = a
        .stdout
        .lines()
        .zip(b.stdout.lines())
        .enumerate()
        .find(|(_, (x, y))| x != y)
    {
        panic!("{args:?}: line {} differs:\n{x}\n{y}", n + 1);
    }
    assert_eq!(a.stdout, b.stdout, "{args:?}");
}

/// A packed history (keyframes with a dictionary, packs, a 410 gap and its
/// relist) exported as segments and imported into another journal, the
/// import killed (-9) after its first chunk and run again: the copy passes
/// `integrity_check` and answers byte for byte as the original.
#[test]
fn a_packed_history_imported_across_a_kill_answers_the_same() {
    use krply::journal::bodies::TRAIN_SAMPLES;
    let versions = 2_500;
    let original = Sandbox::new();
    build_with(&original.store, true, TRAIN_SAMPLES + 40, versions, false);
    let segments = original.dir.path().join("segments");
    let out = original.run(&[
        "export",
        "--format",
        "parquet",
        "--dir",
        path_str(&segments),
    ]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);

    let count = |store: &Path, sql: &str| -> Option<i64> {
        let conn = rusqlite::Connection::open_with_flags(
            store,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .ok()?;
        conn.query_row(sql, [], |r| r.get(0)).ok()
    };
    // Killed between its chunks: the first committed, the file not done.
    let mut attempts = 0;
    let copy = loop {
        attempts += 1;
        assert!(
            attempts <= 3,
            "the import never ran long enough to be killed mid-way"
        );
        let copy = Sandbox::new();
        let mut child = copy
            .command()
            .args(["import", path_str(&segments)])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while count(&copy.store, "SELECT count(*) FROM import_runs").unwrap_or(0) == 0
            && std::time::Instant::now() < deadline
            && child.try_wait().unwrap().is_none()
        {
            std::thread::yield_now();
        }
        let _ = child.kill();
        let _ = child.wait();
        if count(&copy.store, "SELECT count(*) FROM imports") == Some(0) {
            break copy;
        }
    };
    let held = count(&copy.store, "SELECT count(*) FROM records").unwrap();
    assert!(held > 0, "the first chunk was kept");
    let check = count(
        &copy.store,
        "SELECT count(*) FROM pragma_integrity_check WHERE integrity_check <> 'ok'",
    );
    assert_eq!(check, Some(0));

    let again = copy.run(&["import", path_str(&segments), "-o", "json"]);
    assert_eq!(again.code, Some(0), "{}", again.stderr);
    let report: serde_json::Value = serde_json::from_str(&again.stdout).unwrap();
    let file = &report[0];
    assert_eq!(file["result"], "imported", "{report:#}");
    assert!(
        file["added"].as_u64().unwrap() < file["rows"].as_u64().unwrap(),
        "it continued after the kept chunks: {report:#}"
    );
    assert_eq!(file["gap_before"], false, "{report:#}");

    let at = |ms: i64| jiff::Timestamp::from_millisecond(ms).unwrap().to_string();
    let mid = at(T0 + (versions as i64 / 2) * 1000 + 100);
    // After the relist and the bookmark that follows it.
    let relisted = at(T0 + (versions as i64 / 2) * 1000 + 700);
    let late = at(T0 + (versions as i64 - 2) * 1000 + 100);
    let end = at(T0 + versions as i64 * 1000 + 950);
    let scope = ["--cluster-id", BUILT_CLUSTER, "-n", "shop"];
    for case in [
        vec!["diff", "--since", &mid, "--until", &end, "-o", "json"],
        vec!["timeline", "deployment/svc-0", "-o", "json"],
        vec!["timeline", "deployment/svc-2"],
        vec!["get", "deployment/svc-1", "--at", &mid, "-o", "json"],
        vec!["get", "deployment/svc-1", "--at", &late, "-o", "yaml"],
        vec!["snapshot", "--at", &mid, "-o", "json"],
        vec!["snapshot", "--at", &relisted, "-o", "json"],
        vec!["log", "--since", &late, "--until", &end],
        vec!["coverage", "-o", "json"],
    ] {
        assert_same(&original, &copy, case, &scope);
    }
}

/// A diff of many objects has each comparing thread read on a connection of its
/// own; read on the history's one connection, every answer is the same: changed,
/// added and deleted objects, with and without status, whole objects too. And a
/// journal whose recorder marked status-only changes (so `diff` leaves them out
/// unread) answers as one where nothing is marked.
#[test]
fn a_diff_read_on_several_connections_answers_as_on_one() {
    use krply::diff::DiffOptions;
    use krply::history::History;
    use krply::history::diff::{Change, NameFilter};
    use krply::journal::Journal;
    use krply::time::{Millis, TimeWindow};

    let listed = 600;
    let (marked, unmarked) = (Sandbox::new(), Sandbox::new());
    let status_only = write_many_changes(&marked.store, listed, true);
    assert_eq!(write_many_changes(&unmarked.store, listed, false), 0);
    // The same history folded into blocks, as a recorder's stop leaves it:
    // the window's scan hands each object's block to whoever reads it.
    let folded = Sandbox::new();
    assert_eq!(write_many_changes(&folded.store, listed, true), status_only);
    let far = std::time::Instant::now() + std::time::Duration::from_secs(3_600);
    let stop = Journal::open(&folded.store)
        .unwrap()
        .fold_at_stop(&[shop_stream(&folded.store)], far)
        .unwrap();
    assert!(stop.complete && stop.folded.records > listed, "{stop:?}");
    // First changes: i % 3 == 0 only in status. Second: those again in status
    // only, i % 3 == 2 the same again; i % 3 == 1 back to how they were listed.
    let alive = (0..listed).filter(|i| i % 10 != 9);
    assert_eq!(
        status_only,
        alive.clone().filter(|i| i % 3 == 0).count() * 2
            + alive.clone().filter(|i| i % 3 == 2).count()
    );
    let scope = krply::history::Scope {
        namespace: Some("shop".into()),
        types: None,
    };
    let window = TimeWindow::new(Millis::from_ms(T0 + 500), Millis::from_ms(T0 + 4_000)).unwrap();
    for (include_status, keep_objects) in [(false, false), (true, false), (false, true)] {
        let opts = DiffOptions { include_status };
        let answer = |store: &std::path::Path, one: bool| {
            let journal = Journal::open(store).unwrap();
            let mut history = History::load(&journal, BUILT_CLUSTER, T0 + 10_000).unwrap();
            // Several: the first 256 on the history's connection, the rest on
            // connections beside it.
            history.read_beside_from(if one { usize::MAX } else { 256 });
            let names = NameFilter::default();
            history
                .diff(&scope, &names, &window, &opts, keep_objects)
                .unwrap()
                .objects
        };
        let one = answer(&unmarked.store, true);
        let changes = |kind: Change| one.iter().filter(|d| d.change == kind).count();
        assert_eq!(changes(Change::Added), 40);
        assert_eq!(changes(Change::Deleted), listed / 10);
        let status_changed = if include_status { [0, 2] } else { [2, 2] };
        assert_eq!(
            changes(Change::Modified),
            alive
                .clone()
                .filter(|i| status_changed.contains(&(i % 3)))
                .count(),
            "status {include_status}"
        );
        for (store, several, what) in [
            (&unmarked.store, false, "several connections"),
            (&marked.store, true, "marked, one connection"),
            (&marked.store, false, "marked, several connections"),
            (&folded.store, true, "folded, one connection"),
            (&folded.store, false, "folded, several connections"),
        ] {
            assert!(
                answer(store, !several) == one,
                "{what}: status {include_status}, objects {keep_objects}"
            );
        }
    }
}

/// Writes 600 listed Deployments and two rounds of changes, every tenth
/// deleted and 40 added, with the recorder's diff digests or without; returns
/// how many events the writer marked as status-only.
fn write_many_changes(store: &std::path::Path, listed: usize, digests: bool) -> usize {
    use krply::journal::records::CheckpointReason;
    use krply::journal::writer::Op;
    use krply::model::WatchType;

    let stream = shop_stream(store);
    let version = |i, rv, step| shop_version(i, rv, step, digests);
    // 600 listed; then each of them changes: its status only (i % 3 == 0), a
    // new image (1), replicas (2), each with its status; every tenth is
    // deleted and 40 more are added.
    let mut ops = Vec::new();
    for i in 0..listed {
        let (meta, body) = version(i, 10 + i, (0, 0));
        ops.push(Op::BaselineItem {
            stream,
            at: T0,
            meta,
            body,
        });
    }
    ops.push(Op::BaselineEnd {
        stream,
        at: T0,
        list_rv: (10 + listed).to_string(),
        items: listed as u64,
    });
    let mut rv = 10_000;
    for i in 0..listed + 40 {
        rv += 1;
        let at = T0 + 1_000 + i as i64;
        let (watch_type, step) = match i {
            i if i >= listed => (WatchType::Added, (0, 0)),
            i if i % 10 == 9 => (WatchType::Deleted, (0, 0)),
            i => (WatchType::Modified, [(0, 1), (3, 0), (1, 0)][i % 3]),
        };
        ops.push(event_op(stream, at, watch_type, version(i, rv, step)));
    }
    // Again: status only, back to the listed spec, the same spec again.
    for i in (0..listed).filter(|i| i % 10 != 9) {
        rv += 1;
        let version = version(i, rv, [(0, 2), (0, 0), (1, 0)][i % 3]);
        let at = T0 + 2_000 + i as i64;
        ops.push(event_op(stream, at, WatchType::Modified, version));
    }
    ops.push(Op::Checkpoint {
        stream,
        at: T0 + 5_000,
        rv: rv.to_string(),
        reason: CheckpointReason::Stop,
    });
    write_ops(store, ops)
}

/// A new journal at `store` with the built cluster and its `shop` Deployments.
fn shop_stream(store: &std::path::Path) -> krply::journal::StreamId {
    use krply::journal::Journal;
    std::fs::create_dir_all(store.parent().unwrap()).unwrap();
    let journal = Journal::open_or_create(store).unwrap();
    journal
        .register_cluster(BUILT_CLUSTER, "https://127.0.0.1:6443", None)
        .unwrap();
    journal
        .register_stream(BUILT_CLUSTER, &crate::common::deployment_stream("shop"))
        .unwrap()
}

/// A watch event carrying `version`.
fn event_op(
    stream: krply::journal::StreamId,
    at: i64,
    watch_type: krply::model::WatchType,
    (meta, body): (krply::model::ObjectMeta, Vec<u8>),
) -> krply::journal::writer::Op {
    krply::journal::writer::Op::Event {
        stream,
        at,
        watch_type,
        meta,
        body,
    }
}

/// Deployment `svc-i` at `step`, as the recorder reads it (with the diff
/// digest, or without); with a `status`, its status says so too.
fn shop_version(
    i: usize,
    rv: usize,
    (step, status): (usize, usize),
    digests: bool,
) -> (krply::model::ObjectMeta, Vec<u8>) {
    let mut body = deployment(&format!("svc-{i}"), i, rv, step);
    if status > 0 {
        let mut v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        v["status"]["observedGeneration"] = status.into();
        body = serde_json::to_vec(&v).unwrap();
    }
    let meta = krply::model::ObjectMeta {
        namespace: "shop".into(),
        name: format!("svc-{i}"),
        uid: format!("00000000-0000-4000-8000-{i:012}"),
        resource_version: rv.to_string(),
        diff_digest: digests
            .then(|| krply::diff::compared_digest(&body))
            .flatten(),
        given_mark: None,
    };
    (meta, body)
}

/// Writes `ops` through the journal writer, a transaction for what is queued;
/// returns how many events it marked as status-only.
fn write_ops(store: &std::path::Path, ops: Vec<krply::journal::writer::Op>) -> usize {
    use krply::journal::Journal;
    use krply::journal::writer::{Writer, WriterOptions};
    let options = WriterOptions {
        pack: true,
        commit_window: std::time::Duration::ZERO,
        ..WriterOptions::default()
    };
    let writer = Writer::start_with(Journal::open(store).unwrap(), options).unwrap();
    let tx = writer.sender();
    for op in ops {
        tx.blocking_send(op).unwrap();
    }
    drop(tx);
    writer.finish().unwrap();
    let conn = rusqlite::Connection::open(store).unwrap();
    conn.query_row(
        "SELECT count(*) FROM records WHERE kind = 1 AND aux = 1",
        [],
        |r| r.get::<_, i64>(0),
    )
    .unwrap() as usize
}

/// Status-only changes marked by the writer, around what could make a mark
/// mean something else: a relist that finds objects gone, a list that
/// fails, a deletion, a clock that steps back. Over windows that start and
/// end among them, the marked journal answers every diff as the unmarked one.
#[test]
fn marked_changes_answer_as_unmarked_ones_around_relists_and_clock_steps() {
    use krply::diff::DiffOptions;
    use krply::history::History;
    use krply::history::diff::NameFilter;
    use krply::journal::Journal;
    use krply::journal::records::{CheckpointReason, GapInfo};
    use krply::journal::writer::Op;
    use krply::model::WatchType;
    use krply::time::{Millis, TimeWindow};

    let n = 40;
    let history = |store: &std::path::Path, digests: bool| {
        let stream = shop_stream(store);
        let version = |i, rv, step| shop_version(i, rv, step, digests);
        let mut ops = Vec::new();
        let mut rv = 100;
        let mut list =
            |ops: &mut Vec<Op>, at: i64, objects: &[usize], status: usize, ends: bool| {
                for &i in objects {
                    rv += 1;
                    let (meta, body) = version(i, rv, (0, status));
                    ops.push(Op::BaselineItem {
                        stream,
                        at,
                        meta,
                        body,
                    });
                }
                ops.push(if ends {
                    Op::BaselineEnd {
                        stream,
                        at,
                        list_rv: rv.to_string(),
                        items: objects.len() as u64,
                    }
                } else {
                    Op::BaselineAbort { stream }
                });
            };
        let all: Vec<usize> = (0..n).collect();
        let kept: Vec<usize> = (0..n).filter(|i| i % 8 != 7).collect();
        list(&mut ops, T0, &all, 0, true);
        let mut rv = 10_000;
        let mut change = |ops: &mut Vec<Op>, i: usize, at: i64, watch_type, step| {
            rv += 1;
            ops.push(event_op(stream, at, watch_type, version(i, rv, step)));
        };
        let m = WatchType::Modified;
        for i in 0..n {
            change(&mut ops, i, T0 + 1_000 + i as i64, m, (0, 1));
        }
        // A 410, and a relist that no longer finds every eighth.
        ops.push(Op::Gap {
            stream,
            at: T0 + 2_000,
            info: GapInfo {
                from: T0 + 1_900,
                from_rv: None,
                reason: "410 Expired: too old".into(),
            },
        });
        list(&mut ops, T0 + 2_500, &kept, 2, true);
        for &i in &kept {
            change(&mut ops, i, T0 + 3_000 + i as i64, m, (0, 3));
        }
        // A list that fails halfway, then one that completes.
        list(&mut ops, T0 + 4_000, &kept[..kept.len() / 2], 4, false);
        list(&mut ops, T0 + 4_500, &kept, 5, true);
        // Every fifth (from the second) gets a new image.
        let image = |i: usize| if i % 5 == 1 { 3 } else { 0 };
        for &i in &kept {
            change(&mut ops, i, T0 + 5_000 + i as i64, m, (image(i), 6));
        }
        // The clock steps back: later records, earlier times. Every fifth
        // (from the first) gets a new image then, the others change status.
        for &i in &kept {
            let step = if i % 5 == 0 { 3 } else { image(i) };
            change(&mut ops, i, T0 + 4_800 + i as i64, m, (step, 7));
        }
        // One is deleted and comes back the same.
        change(&mut ops, 1, T0 + 5_900, WatchType::Deleted, (0, 7));
        change(&mut ops, 1, T0 + 5_950, WatchType::Added, (0, 7));
        for &i in &kept {
            change(&mut ops, i, T0 + 6_000 + i as i64, m, (0, 8));
        }
        ops.push(Op::Checkpoint {
            stream,
            at: T0 + 7_000,
            rv: rv.to_string(),
            reason: CheckpointReason::Stop,
        });
        write_ops(store, ops)
    };
    let (marked, unmarked) = (Sandbox::new(), Sandbox::new());
    assert!(history(&marked.store, true) > n);
    assert_eq!(history(&unmarked.store, false), 0);
    // The marked journal exported as segments, which carry the marks, and
    // imported into another: it takes them, but for each object's first
    // change in a file whose version before is not in the file (a slice
    // from its middle: a keyframe, which is the version at the slice's
    // start in time, not always the one before in `seq`).
    let export = |dir: &str, since: Option<String>| {
        let segments = marked.dir.path().join(dir);
        let mut args = vec![
            "export",
            "--format",
            "parquet",
            "--dir",
            path_str(&segments),
        ];
        if let Some(since) = &since {
            args.extend(["--since", since.as_str()]);
        }
        let out = marked.run(&args);
        assert_eq!(out.code, Some(0), "{}", out.stderr);
        let imported = Sandbox::new();
        let out = imported.run(&["import", path_str(&segments)]);
        assert_eq!(out.code, Some(0), "{}", out.stderr);
        imported
    };
    // (name, resourceVersion, mark) of every MODIFIED event, in `seq` order.
    let marks = |store: &std::path::Path| -> Vec<(String, String, Option<i64>)> {
        let conn = rusqlite::Connection::open(store).unwrap();
        let mut stmt = conn
            .prepare(
                "SELECT o.name, r.resource_version, r.aux FROM records r
                 JOIN objects o ON o.id = r.object_id
                 WHERE r.kind = 1 AND r.watch_type = 2 ORDER BY r.seq",
            )
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    let source = marks(&marked.store);
    let of_source: std::collections::HashMap<&str, Option<i64>> =
        source.iter().map(|(_, rv, m)| (rv.as_str(), *m)).collect();
    // Whole: every change's version before is in the file (the first list).
    let imported = export("segments", None);
    assert_eq!(marks(&imported.store), source);
    let since = jiff::Timestamp::from_millisecond(T0 + 4_700).unwrap();
    let slice = export("slice", Some(since.to_string()));
    let copy = marks(&slice.store);
    assert!(copy.len() > n && copy.len() < source.len());
    let mut first = std::collections::HashSet::new();
    for (name, rv, mark) in &copy {
        if first.insert(name) {
            assert_eq!(*mark, None, "{name}'s first change in the slice, {rv}");
        } else {
            assert_eq!(*mark, of_source[rv.as_str()], "{name} at {rv}");
        }
    }
    assert!(copy.iter().filter(|c| c.2.is_some()).count() > n / 2);
    let scope = krply::history::Scope {
        namespace: Some("shop".into()),
        types: None,
    };
    let mut shown = 0;
    for (from, to) in [
        (500, 1_500),
        (500, 3_500),
        (1_500, 3_500),
        (2_200, 2_700),
        (3_500, 4_700),
        (4_200, 5_500),
        (4_700, 4_900),
        (4_850, 4_950),
        (4_900, 5_100),
        (5_500, 6_500),
        (5_920, 6_100),
        (500, 7_000),
    ] {
        let window = TimeWindow::new(Millis::from_ms(T0 + from), Millis::from_ms(T0 + to)).unwrap();
        for include_status in [false, true] {
            let opts = DiffOptions { include_status };
            let answer = |store: &std::path::Path| {
                let journal = Journal::open(store).unwrap();
                let history = History::load(&journal, BUILT_CLUSTER, T0 + 10_000).unwrap();
                let d = history
                    .diff(&scope, &NameFilter::default(), &window, &opts, false)
                    .unwrap();
                (d.objects, d.completeness)
            };
            let (a, b) = (answer(&marked.store), answer(&unmarked.store));
            let c = answer(&imported.store);
            assert!(
                c.0 == b.0,
                "imported, ({from}, {to}], status {include_status}: {} against {} objects",
                c.0.len(),
                b.0.len()
            );
            assert_eq!(format!("{:?}", c.1), format!("{:?}", b.1));
            assert!(
                a.0 == b.0,
                "({from}, {to}], status {include_status}: {} against {} objects",
                a.0.len(),
                b.0.len()
            );
            assert_eq!(format!("{:?}", a.1), format!("{:?}", b.1));
            shown += a.0.len();
        }
    }
    assert!(shown > 0);
}
