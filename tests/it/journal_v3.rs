//! A journal written by schema version 3 (`fixtures/journal-v3/`): this binary
//! migrates it in place and then answers from it byte for byte what version 3
//! answered.

use crate::common::Sandbox;
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
        assert_eq!(out.stdout, want, "{args:?} answers as version 3 did");
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
