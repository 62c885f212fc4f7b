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

/// Waits until the sandbox's journal and `reference` both have their lists.
fn wait_both_listed(env: &Env, reference: &str) {
    env.wait_baselines(1);
    env.wait_for("the reference baseline", || {
        Journal::open(std::path::Path::new(reference))
            .and_then(|j| j.streams(None))
            .is_ok_and(|s| !s.is_empty())
    });
}

/// Sets the probed ConfigMap's key to `i`, waits until both the sandbox's
/// journal and `reference` answer it now, and returns the quiet moment
/// after it (the next change is made in a later millisecond) with the value.
fn change_in_both(env: &Env, reference: &str, i: usize) -> (i64, String) {
    let value = i.to_string();
    env.patch_cm("frontend-config", "k", &value);
    let journaled = |store: &str| version_at(env, store, Millis::now().as_ms()).1 == value;
    env.wait_for("the change in both journals", || {
        journaled(path_str(&env.store)) && journaled(reference)
    });
    let t = Millis::now().as_ms();
    env.wait_for("the clock to pass the quiet moment", || {
        Millis::now().as_ms() > t
    });
    (t, value)
}

/// Event records in the journal at `store`, as `export` reads them (rows,
/// or kept in blocks once a recorder's stop folded them).
fn events(env: &Env, store: &std::path::Path) -> i64 {
    let out = env.run(&["--store", path_str(store), "export"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    out.stdout
        .lines()
        .filter(|l| serde_json::from_str::<Value>(l).is_ok_and(|v| v["record"] == "event"))
        .count() as i64
}

/// Churn under two recorders of the same ConfigMaps: one keeps a short
/// window of history, the other everything. The first prunes behind itself,
/// its coverage starts at its cut (before it: nothing, never a wrong
/// answer), and at every quiet moment it kept, `get --at` answers what the
/// other answers, completely. Beside the probed ConfigMap, another one is
/// written at a steady high rate.
///
/// `KRPLY_RETAIN_SECONDS` makes it a long run (the README's "Long runs":
/// 600 s keeps `--retain 2m` under 200 writes a second); by default 12 s
/// with `--retain 3s`.
#[test]
fn retention_prunes_behind_the_recorder_and_keeps_answers_in_its_window() {
    retention_run(false);
}

/// The same, the pruning recorder also folding behind itself what is 0 ms
/// old (`KRPLY_DEBUG_FOLD_AFTER_MS`, debug builds only): its cuts then go
/// through blocks written while it runs, and its answers in its window
/// must not change.
#[test]
fn retention_through_blocks_folded_behind_the_recorder_keeps_answers_in_its_window() {
    retention_run(true);
}

fn retention_run(fold_behind: bool) {
    let seconds: u64 = std::env::var("KRPLY_RETAIN_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(12);
    let retain_secs = (seconds / 5).clamp(3, 120);
    let retain = format!("{retain_secs}s");
    let env = Env::shop();
    env.sim
        .create(serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "churn", "namespace": "shop"}, "data": {"n": "0"}}))
        .expect("the churned ConfigMap");
    let reference = env.dir.path().join("reference.db");
    let reference = path_str(&reference).to_string();
    let full = env.start_recorder(&["cm", "--store", &reference]);
    let retained = env.start_recorder_with(&["cm", "--retain", &retain], |c| {
        if fold_behind {
            c.env(krply::journal::fold::DEBUG_FOLD_AFTER_ENV, "0");
        }
    });
    wait_both_listed(&env, &reference);
    let status = env.run(&["status"]);
    assert!(
        status.stdout.contains(&format!(
            "Retention:       keeps the last {}",
            krply::time::format_duration(Duration::from_secs(retain_secs))
        )),
        "{}",
        status.stdout
    );

    // Each change journaled by both before the next: the moment between is
    // quiet, and its answer is that change.
    let started = Instant::now();
    let run_for = Duration::from_secs(seconds);
    let mut quiet: Vec<(i64, String)> = Vec::new();
    let mut sizes: Vec<(u64, u64)> = Vec::new();
    let churned = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|scope| {
        // The churn: 200 writes a second, paced by the clock, until the
        // probes end (bounded by the run's length).
        scope.spawn(|| {
            let every = Duration::from_millis(5);
            let mut n: u64 = 0;
            while started.elapsed() < run_for {
                n += 1;
                let _ = env.sim.patch_merge(
                    "v1",
                    "ConfigMap",
                    Some("shop"),
                    "churn",
                    &serde_json::json!({"data": {"n": n.to_string()}}),
                );
                churned.store(n, std::sync::atomic::Ordering::Relaxed);
                let next = every * u32::try_from(n).unwrap_or(u32::MAX);
                if let Some(wait) = next.checked_sub(started.elapsed()) {
                    std::thread::sleep(wait);
                }
            }
        });
        let mut i = 0;
        while started.elapsed() < run_for {
            i += 1;
            assert!(i < 1_000_000);
            quiet.push(change_in_both(&env, &reference, i));
            if i % 10 == 0 {
                let size = std::fs::metadata(&env.store).map(|m| m.len()).unwrap_or(0);
                sizes.push((started.elapsed().as_secs(), size));
            }
        }
    });
    let end = Millis::now().as_ms();
    // The cut trails now by the window and a look (every 1 s here).
    let kept = i64::try_from(retain_secs).unwrap() * 1_000 + 2_000;
    env.wait_for("history older than the window to be gone", || {
        env.coverage(CM).from.is_some_and(|f| f >= end - kept)
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
    if fold_behind {
        assert!(
            stopped
                .stdout
                .contains("folded into blocks behind the recorder"),
            "it folded nothing behind itself:\n{}",
            stopped.stdout
        );
    }
    let _ = full.stop();

    let from = env.coverage(CM).from.expect("a start");
    assert!(
        events(&env, &env.store) < events(&env, std::path::Path::new(&reference)),
        "retention deleted events"
    );
    // Every quiet moment of a short run; at most 300, evenly spread, of a
    // long one.
    let step = quiet.len().div_ceil(300).max(1);
    for (at, value) in quiet.iter().step_by(step) {
        let (code, got) = version_at(&env, path_str(&env.store), *at);
        let (ref_code, want) = version_at(&env, &reference, *at);
        assert_eq!((ref_code, &want), (Some(0), value), "the reference at {at}");
        // The journal's start is its cut, where the state at the cut became
        // a baseline: covered from there on, the cut itself included (a
        // quiet moment in the very millisecond of the cut is answered).
        if *at >= from {
            assert_eq!((code, &got), (Some(0), value), "kept, at {at}");
        } else {
            // Pruned: before the journal's start, never a wrong answer.
            assert_ne!(code, Some(0), "pruned, at {at} (from {from}): {got}");
        }
    }
    // A delta retention deleted takes its waiting bytes with it.
    let stray: i64 = rusqlite::Connection::open(&env.store)
        .unwrap()
        .query_row(
            &format!(
                "SELECT count(*) FROM waiting WHERE slot NOT IN
                    (SELECT pack_ref - {w} FROM bodies WHERE pack_ref >= {w} AND pack_ref < {p})",
                w = krply::journal::schema::WAITING,
                p = krply::journal::schema::PACKED,
            ),
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(stray, 0, "waiting bytes without their body");
    // The file stops growing once retention keeps up (pages freed are
    // reused, or given back).
    let (mid, last) = (sizes[sizes.len() / 2].1, sizes.last().unwrap().1);
    assert!(last <= mid + mid / 2 + 65_536, "{sizes:?}");
    let spread = sizes.len().div_ceil(12).max(1);
    let shown: Vec<(u64, u64)> = sizes.iter().copied().step_by(spread).collect();
    eprintln!(
        "{said}\nretention over {seconds}s with --retain {retain}: {} probed changes and {} churned \
         writes; journal {} events (reference {}), {} KiB (reference {} KiB); \
         (seconds, file bytes) {shown:?}",
        quiet.len(),
        churned.load(std::sync::atomic::Ordering::Relaxed),
        events(&env, &env.store),
        events(&env, std::path::Path::new(&reference)),
        std::fs::metadata(&env.store).map(|m| m.len()).unwrap_or(0) / 1024,
        std::fs::metadata(&reference).map(|m| m.len()).unwrap_or(0) / 1024,
    );
}

/// A running recorder folds what has aged into blocks behind itself
/// (docs/journal.md, "Cold history in blocks"). Told to fold what is 0 ms
/// old (`KRPLY_DEBUG_FOLD_AFTER_MS`, which only a debug build reads), it
/// has blocks while it runs and keeps each object's latest record as a
/// row; at every quiet moment `get --at` answers what a recorder of the
/// same ConfigMaps that folds nothing until it stops answers; and its stop
/// says what it folded.
#[test]
fn a_running_recorder_folds_behind_itself_and_answers_as_one_that_does_not() {
    let env = Env::shop();
    let reference = env.dir.path().join("reference.db");
    let reference = path_str(&reference).to_string();
    let plain = env.start_recorder(&["cm", "--store", &reference]);
    let mut folding = env.start_recorder_with(&["cm"], |c| {
        c.env(krply::journal::fold::DEBUG_FOLD_AFTER_ENV, "0");
    });
    wait_both_listed(&env, &reference);
    let count = |sql: &str| -> i64 {
        rusqlite::Connection::open(&env.store)
            .and_then(|c| c.query_row(sql, [], |r| r.get(0)))
            .unwrap_or(0)
    };
    let mut quiet: Vec<(i64, String)> = Vec::new();
    for i in 1..=30 {
        quiet.push(change_in_both(&env, &reference, i));
    }
    env.wait_for("blocks behind the running recorder", || {
        count("SELECT count(*) FROM blocks") > 0
    });
    assert!(!folding.exited(), "the folding recorder ended");
    // Each object's latest record stays a row (its next version is a delta
    // against it): at least one row per ConfigMap.
    assert!(
        count("SELECT count(DISTINCT object_id) FROM records WHERE object_id IS NOT NULL")
            >= count(
                "SELECT count(*) FROM objects o WHERE EXISTS(SELECT 1 FROM blocks b WHERE b.object_id = o.id)"
            ),
    );
    for (at, value) in &quiet {
        let (code, got) = version_at(&env, path_str(&env.store), *at);
        let (ref_code, want) = version_at(&env, &reference, *at);
        assert_eq!((ref_code, &want), (Some(0), value), "the reference at {at}");
        assert_eq!((code, &got), (Some(0), value), "folded behind, at {at}");
    }
    let stopped = folding.stop();
    assert_eq!(stopped.code, Some(0), "{stopped:?}");
    let said = stopped
        .stdout
        .lines()
        .find(|l| {
            l.starts_with("history: ") && l.contains("folded into blocks behind the recorder")
        })
        .unwrap_or_else(|| panic!("no fold line:\n{}", stopped.stdout));
    eprintln!("{said}");
    let _ = plain.stop();
}
