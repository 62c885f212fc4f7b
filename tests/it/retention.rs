//! `record --retain` (docs/journal.md, "Retention"): the recorder prunes
//! behind itself while it records, and what it keeps answers as a journal
//! recorded without retention does.

use crate::common::{Env, path_str};
use krply::journal::Journal;
use krply::time::Millis;
use serde_json::Value;
use std::time::{Duration, Instant};

const CM: &str = "configmaps.v1@shop";

/// The resourceVersion `get --at` answers for the ConfigMap, with `store`.
fn version_at(env: &Env, store: &str, at: i64) -> (Option<i32>, String) {
    let out = env.run(&[
        "--store",
        store,
        "get",
        "cm/frontend-config",
        "--at",
        &Millis::from_ms(at).to_string(),
        "--strict",
        "-o",
        "json",
    ]);
    let v: Value = serde_json::from_str(&out.stdout).unwrap_or(Value::Null);
    (
        out.code,
        v["data"]["k"].as_str().unwrap_or_default().to_string(),
    )
}

/// Event records in the journal at `store`.
fn events(store: &std::path::Path) -> i64 {
    let conn =
        rusqlite::Connection::open_with_flags(store, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("journal opens");
    conn.query_row("SELECT count(*) FROM records WHERE kind = 1", [], |r| {
        r.get(0)
    })
    .expect("counted")
}

/// Churn under two recorders of the same ConfigMaps: one keeps 3 s of
/// history, the other everything. The first prunes behind itself, its
/// coverage starts at its cut (before it: nothing, never a wrong answer),
/// and at every quiet moment it kept, `get --at` answers what the other
/// answers, completely.
#[test]
fn retention_prunes_behind_the_recorder_and_keeps_answers_in_its_window() {
    let env = Env::shop();
    let reference = env.dir.path().join("reference.db");
    let reference = path_str(&reference).to_string();
    let full = env.start_recorder(&["cm", "--store", &reference]);
    let retained = env.start_recorder(&["cm", "--retain", "3s"]);
    env.wait_baselines(1);
    env.wait_for("the reference baseline", || {
        Journal::open(std::path::Path::new(&reference))
            .and_then(|j| j.streams(None))
            .is_ok_and(|s| !s.is_empty())
    });
    let status = env.run(&["status"]);
    assert!(
        status.stdout.contains("Retention:       keeps the last 3s"),
        "{}",
        status.stdout
    );

    // Each change journaled by both before the next: the moment between is
    // quiet, and its answer is that change.
    let started = Instant::now();
    let mut quiet: Vec<(i64, String)> = Vec::new();
    let mut sizes: Vec<u64> = Vec::new();
    let mut i = 0;
    while started.elapsed() < Duration::from_secs(12) {
        i += 1;
        assert!(i < 100_000);
        let value = i.to_string();
        env.patch_cm("frontend-config", "k", &value);
        let journaled = |store: &str| version_at(&env, store, Millis::now().as_ms()).1 == value;
        env.wait_for("the change in both journals", || {
            journaled(path_str(&env.store)) && journaled(&reference)
        });
        quiet.push((Millis::now().as_ms(), value));
        if i % 10 == 0 {
            sizes.push(std::fs::metadata(&env.store).map(|m| m.len()).unwrap_or(0));
        }
    }
    let end = Millis::now().as_ms();
    // The cut trails now by 3 s and a look (every 1 s here).
    env.wait_for("history older than 5 s to be gone", || {
        env.coverage(CM).from.is_some_and(|f| f >= end - 5_000)
    });
    let stopped = retained.stop();
    assert_eq!(stopped.code, Some(0), "{stopped:?}");
    // The summary on stdout says what it pruned.
    let said = stopped
        .stdout
        .lines()
        .find(|l| l.starts_with("retention: history before"))
        .unwrap_or_else(|| panic!("no retention line:\n{}", stopped.stdout))
        .to_string();
    let _ = full.stop();

    let from = env.coverage(CM).from.expect("a start");
    assert!(
        events(&env.store) < events(std::path::Path::new(&reference)),
        "retention deleted events"
    );
    for (at, value) in &quiet {
        let (code, got) = version_at(&env, path_str(&env.store), *at);
        let (ref_code, want) = version_at(&env, &reference, *at);
        assert_eq!((ref_code, &want), (Some(0), value), "the reference at {at}");
        if *at > from {
            assert_eq!((code, &got), (Some(0), value), "kept, at {at}");
        } else {
            // Pruned: before the journal's start, never a wrong answer.
            assert_ne!(code, Some(0), "pruned, at {at}: {got}");
        }
    }
    // The file stops growing once retention keeps up (pages freed are
    // reused, or given back).
    let (mid, last) = (sizes[sizes.len() / 2], *sizes.last().unwrap());
    assert!(last <= mid + mid / 2 + 65_536, "{sizes:?}");
    eprintln!(
        "{said}\nretention: {} changes, journal {} events (reference {}), file sizes {sizes:?}",
        quiet.len(),
        events(&env.store),
        events(std::path::Path::new(&reference))
    );
}
