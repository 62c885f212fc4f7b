//! `import`: segments exported by one journal, read back by another
//! (docs/at-scale.md, "Importing segments").
//!
//! - A round trip answers byte for byte as the journal it came from, gaps
//!   included; importing again adds nothing; a journal's own segments are
//!   not imported into it.
//! - A teammate's recording of the same cluster stays a lane of its own and
//!   answers for the stretch this journal missed.
//! - History that no imported segment holds is a gap, never a quiet stretch.

use crate::common::{Env, Output, path_str};
use krply::time::Millis;
use serde_json::Value;
use std::path::Path;

/// `kubectl-krply --store STORE ARGS`.
fn on(env: &Env, store: &Path, args: &[&str]) -> Output {
    let mut all = vec!["--store", path_str(store)];
    all.extend_from_slice(args);
    env.run(&all)
}

fn json(out: &Output) -> Value {
    serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("no JSON ({e}): {} {}", out.stdout, out.stderr))
}

/// Whether `store` journaled a change of `object` in shop with
/// resourceVersion newer than `after`.
fn journaled(env: &Env, store: &Path, object: &str, after: &str) -> bool {
    let out = on(
        env,
        store,
        &["-n", "shop", "timeline", object, "-o", "json"],
    );
    if out.code != Some(0) {
        return false;
    }
    let after: u64 = after.parse().unwrap_or(0);
    json(&out)["entries"].as_array().is_some_and(|e| {
        e.iter().any(|e| {
            e["resource_version"]
                .as_str()
                .and_then(|rv| rv.parse::<u64>().ok())
                .is_some_and(|rv| rv > after)
        })
    })
}

fn rv_now(env: &Env, kind: &str, name: &str) -> String {
    env.get_json(&format!("{kind}/{name}"), "shop")["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string()
}

/// `export --format parquet --dir DIR WINDOW` of `store`; it succeeds.
pub(crate) fn export(env: &Env, store: &Path, dir: &Path, window: &[&str]) {
    let mut args = vec!["export", "--format", "parquet", "--dir", path_str(dir)];
    args.extend_from_slice(window);
    let out = on(env, store, &args);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
}

fn import(env: &Env, store: &Path, dir: &Path) -> Vec<Value> {
    let out = on(env, store, &["import", path_str(dir), "-o", "json"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    json(&out).as_array().unwrap().clone()
}

fn records(store: &Path) -> i64 {
    rusqlite::Connection::open(store)
        .unwrap()
        .query_row("SELECT count(*) FROM records", [], |r| r.get(0))
        .unwrap()
}

fn cluster(env: &Env, store: &Path) -> String {
    let status = json(&on(env, store, &["status", "-o", "json"]));
    status["clusters"][0]["id"].as_str().unwrap().to_string()
}

#[test]
fn segments_read_back_by_import_answer_byte_for_byte() {
    let env = Env::shop();
    let audit = env.dir.path().join("audit.log");
    env.sim.audit_to(&audit).unwrap();
    let start = Millis::now();
    let rec = env.start_recorder(&["deploy", "cm"]);
    env.wait_baselines(1);
    let rv = rv_now(&env, "deploy", "frontend");
    env.scale("frontend", 3);
    env.wait_for("the scale journaled", || {
        journaled(&env, &env.store, "deploy/frontend", &rv)
    });
    let middle = Millis::now();
    assert_eq!(rec.stop().code, Some(0));
    // Changed while nobody watched: the next run's relist finds it.
    env.scale("frontend", 4);
    let rec = env.start_recorder(&["deploy", "cm"]);
    env.wait_baselines(2);
    let cm = rv_now(&env, "cm", "feature-flags");
    env.patch_cm("feature-flags", "mode", "import");
    env.wait_for("the ConfigMap change journaled", || {
        journaled(&env, &env.store, "cm/feature-flags", &cm)
    });
    // A change whose user the audit log names: who made it travels too.
    let mut flags = env.get_json("cm/feature-flags", "shop");
    let rv_before = flags["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    flags["data"]["by"] = "alice".into();
    let alice = krply_sim::SimUser {
        name: "alice@example.com",
        groups: &["system:authenticated"],
        impersonated_by: None,
        user_agent: "kubectl/v1.37.2",
    };
    env.sim.update_as(flags, "kubectl-edit", &alice).unwrap();
    env.wait_for("alice's change journaled", || {
        journaled(&env, &env.store, "cm/feature-flags", &rv_before)
    });
    assert_eq!(rec.stop().code, Some(0));
    let end = Millis::now();
    let imported = on(&env, &env.store, &["audit", "import", path_str(&audit)]);
    assert_eq!(imported.code, Some(0), "{}", imported.stderr);

    let segments = env.dir.path().join("segments");
    export(&env, &env.store, &segments, &[]);
    let copy = env.dir.path().join("copy.db");
    let first = import(&env, &copy, &segments);
    assert!(first.len() >= 2, "{first:?}");
    assert!(
        first
            .iter()
            .all(|f| f["result"] == "imported" && f["added"] == f["rows"]),
        "{first:?}"
    );

    let c = cluster(&env, &env.store);
    assert_eq!(cluster(&env, &copy), c);
    let (since, until, mid) = (start.to_string(), end.to_string(), middle.to_string());
    let questions: Vec<Vec<&str>> = vec![
        vec!["diff", "--since", &since, "--until", &until, "-o", "json"],
        vec!["diff", "--since", &since, "--until", &until],
        vec!["diff", "--since", &mid, "--until", &until, "-o", "json"],
        vec!["log", "--since", &since, "--until", &until, "-o", "json"],
        vec!["timeline", "deploy/frontend", "-o", "json"],
        vec!["timeline", "cm/feature-flags"],
        vec!["get", "deploy/frontend", "--at", &mid, "-o", "json"],
        vec!["snapshot", "--at", &mid, "-o", "json"],
        vec!["coverage", "-o", "json"],
    ];
    for q in &questions {
        let mut args = vec!["--cluster-id", c.as_str(), "-n", "shop"];
        args.extend_from_slice(q);
        let here = on(&env, &env.store, &args);
        let there = on(&env, &copy, &args);
        assert_eq!(here.code, Some(0), "{q:?}: {}", here.stderr);
        assert_eq!(there.code, here.code, "{q:?}: {}", there.stderr);
        assert_eq!(
            there.stdout, here.stdout,
            "{q:?} answers as the journal it came from"
        );
        assert_eq!(
            there.stderr, here.stderr,
            "{q:?} warns as the journal it came from"
        );
    }
    // Who made the change made it across.
    let log = json(&on(
        &env,
        &copy,
        &["-n", "shop", "log", "--since", &since, "-o", "json"],
    ));
    assert!(
        log.to_string().contains("\"user\":\"alice@example.com\""),
        "{log:#}"
    );
    // The gap made it across.
    let coverage = json(&on(&env, &copy, &["-n", "shop", "coverage", "-o", "json"]));
    assert!(
        coverage.to_string().contains("recorder not running"),
        "{coverage:#}"
    );

    // Again: nothing new.
    let before = records(&copy);
    let again = import(&env, &copy, &segments);
    assert!(
        again
            .iter()
            .all(|f| f["result"] == "already imported" && f["added"] == 0),
        "{again:?}"
    );
    assert_eq!(records(&copy), before);
    // A journal's own segments are its own history already.
    let own = import(&env, &env.store, &segments);
    assert!(own.iter().all(|f| f["result"] == "own history"), "{own:?}");

    // Imported history is its source's to export: the copy, which recorded
    // nothing itself, has nothing to write.
    let reexported = env.dir.path().join("reexported");
    export(&env, &copy, &reexported, &[]);
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(reexported.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["files"], serde_json::json!([]), "{manifest:#}");
    let ndjson = on(&env, &copy, &["export"]);
    assert_eq!((ndjson.code, ndjson.stdout.as_str()), (Some(0), ""));
}

#[test]
fn a_teammates_segments_fill_the_stretch_this_journal_missed() {
    let env = Env::shop();
    let mine = env.store.clone();
    let theirs = env.dir.path().join("theirs.db");
    let me = env.start_recorder(&["deploy"]);
    let them = env.start_recorder(&["--store", path_str(&theirs), "deploy"]);
    env.wait_baselines(1);
    env.wait_for("their baseline", || {
        krply::journal::Journal::open(&theirs).is_ok_and(|j| {
            j.streams(None).is_ok_and(|s| {
                !s.is_empty() && s.iter().all(|s| crate::common::baselines(&j, s) >= 1)
            })
        })
    });
    let before_gap = Millis::now();
    assert_eq!(me.stop().code, Some(0));
    // While I was away: they saw it, I did not.
    let rv = rv_now(&env, "deploy", "frontend");
    env.scale("frontend", 5);
    env.wait_for("they journaled the scale", || {
        journaled(&env, &theirs, "deploy/frontend", &rv)
    });
    let after_change = Millis::now();
    let me = env.start_recorder(&["deploy"]);
    env.wait_baselines(2);
    assert_eq!(me.stop().code, Some(0));
    assert_eq!(them.stop().code, Some(0));
    let (since, until) = (before_gap.to_string(), after_change.to_string());
    let diff = [
        "-n", "shop", "diff", "--since", &since, "--until", &until, "-o", "json",
    ];

    // Mine alone: the window is not covered, and says so.
    let alone = json(&on(&env, &mine, &diff));
    assert_eq!(alone["complete"], false, "{alone:#}");

    let segments = env.dir.path().join("their-segments");
    export(&env, &theirs, &segments, &[]);
    let done = import(&env, &mine, &segments);
    assert!(done.iter().all(|f| f["result"] == "imported"), "{done:?}");
    assert_eq!(cluster(&env, &mine), cluster(&env, &theirs), "one cluster");

    // Their lane answers for the stretch, exactly as their journal does.
    let filled = on(&env, &mine, &diff);
    assert_eq!(filled.stdout, on(&env, &theirs, &diff).stdout);
    let filled = json(&filled);
    assert_eq!(filled["complete"], true, "{filled:#}");
    assert!(
        filled.to_string().contains("frontend"),
        "the change they saw: {filled:#}"
    );
    // Two lanes of one stream, side by side in coverage, the imported one
    // named as such.
    let coverage = json(&on(&env, &mine, &["-n", "shop", "coverage", "-o", "json"]));
    let ids: Vec<&str> = coverage["streams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 2, "{coverage:#}");
    assert_eq!(ids[0], "deployments.v1.apps@shop");
    assert!(
        ids[1].starts_with("deployments.v1.apps@shop (imported ") && ids[1].ends_with("#1)"),
        "{ids:?}"
    );
    let text = on(&env, &mine, &["-n", "shop", "coverage", "-o", "wide"]);
    assert!(text.stdout.contains("(imported "), "{}", text.stdout);
}

#[test]
fn history_no_imported_segment_holds_is_a_gap() {
    let env = Env::shop();
    let rec = env.start_recorder(&["deploy"]);
    env.wait_baselines(1);
    let rv = rv_now(&env, "deploy", "frontend");
    env.scale("frontend", 2);
    env.wait_for("first change", || {
        journaled(&env, &env.store, "deploy/frontend", &rv)
    });
    let t1 = Millis::now();
    let rv = rv_now(&env, "deploy", "frontend");
    env.scale("frontend", 6);
    env.wait_for("second change", || {
        journaled(&env, &env.store, "deploy/frontend", &rv)
    });
    let t2 = Millis::now();
    let rv = rv_now(&env, "deploy", "frontend");
    env.scale("frontend", 1);
    env.wait_for("third change", || {
        journaled(&env, &env.store, "deploy/frontend", &rv)
    });
    assert_eq!(rec.stop().code, Some(0));

    // Two exports with the stretch (t1, t2) between them left out.
    let early = env.dir.path().join("early");
    let late = env.dir.path().join("late");
    export(&env, &env.store, &early, &["--until", &t1.to_string()]);
    export(&env, &env.store, &late, &["--since", &t2.to_string()]);
    let copy = env.dir.path().join("copy.db");
    import(&env, &copy, &early);
    let done = import(&env, &copy, &late);
    assert!(done.iter().all(|f| f["gap_before"] == true), "{done:?}");

    let coverage = json(&on(&env, &copy, &["-n", "shop", "coverage", "-o", "json"]));
    assert!(
        coverage.to_string().contains("not imported"),
        "{coverage:#}"
    );
    // A window over the missing stretch is not complete, and the change in
    // it is not claimed as seen.
    let out = on(
        &env,
        &copy,
        &[
            "-n",
            "shop",
            "diff",
            "--since",
            &t1.to_string(),
            "--until",
            &t2.to_string(),
            "-o",
            "json",
            "--strict",
        ],
    );
    assert_eq!(out.code, Some(3), "{}", out.stdout);
    assert_eq!(json(&out)["complete"], false);
    // Before the stretch, the early segments still answer completely.
    let early_window = on(
        &env,
        &copy,
        &["-n", "shop", "timeline", "deploy/frontend", "-o", "json"],
    );
    assert_eq!(early_window.code, Some(0), "{}", early_window.stderr);
}

#[test]
fn what_is_not_a_segment_is_refused_in_one_line() {
    let env = Env::shop();
    let not = env.dir.path().join("notes.parquet");
    std::fs::write(&not, "not parquet").unwrap();
    let out = env.run(&["import", path_str(&not)]);
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(out.stderr.starts_with("error: "), "{}", out.stderr);
    assert!(
        out.stderr.contains("is not a krply segment"),
        "{}",
        out.stderr
    );
    let empty = env.dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out = env.run(&["import", path_str(&empty)]);
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(out.stderr.contains("no segments"), "{}", out.stderr);
    let out = env.run(&["import"]);
    assert_eq!(out.code, Some(2), "{}", out.stderr);
}

/// Segments cut at a time start with keyframes (docs/at-scale.md,
/// "Keyframes"): the state of each stream just before the cut. The later
/// slice imported alone is a lane covering its stretch from the cut, and
/// answers there as the journal it came from; imported after the earlier
/// slice, its keyframes are what the lane holds already, and the two
/// answer as the whole.
#[test]
fn a_slice_imported_alone_starts_with_its_keyframes() {
    let env = Env::shop();
    let rec = env.start_recorder(&["deploy", "cm"]);
    env.wait_baselines(1);
    let rv = rv_now(&env, "deploy", "frontend");
    env.scale("frontend", 3);
    env.wait_for("the scale journaled", || {
        journaled(&env, &env.store, "deploy/frontend", &rv)
    });
    let cut = Millis::now().as_ms() + 1;
    let rv = rv_now(&env, "deploy", "frontend");
    env.scale("frontend", 5);
    env.patch_cm("feature-flags", "mode", "keyframes");
    env.wait_for("the second scale journaled", || {
        journaled(&env, &env.store, "deploy/frontend", &rv)
    });
    assert_eq!(rec.stop().code, Some(0));
    let end = Millis::now().as_ms();
    let (before, cut_at, end_at) = (
        Millis::from_ms(cut - 1).to_string(),
        Millis::from_ms(cut).to_string(),
        Millis::from_ms(end).to_string(),
    );

    let early = env.dir.path().join("early");
    let late = env.dir.path().join("late");
    export(&env, &env.store, &early, &["--until", &before]);
    export(&env, &env.store, &late, &["--since", &cut_at]);
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(late.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["format"], "krply-segments/2");
    for f in manifest["files"].as_array().unwrap() {
        let keyframes = f["records"]["keyframe"].as_u64().unwrap_or(0);
        assert!(keyframes >= 1, "every stream was covered at the cut: {f:#}");
    }

    let alone = env.dir.path().join("alone.db");
    import(&env, &alone, &late);
    let c = cluster(&env, &env.store);
    let ask = |store: &Path, q: &[&str]| {
        let mut args = vec!["--cluster-id", c.as_str(), "-n", "shop"];
        args.extend_from_slice(q);
        on(&env, store, &args)
    };
    // From the cut on, it answers as the journal it came from.
    for q in [
        vec!["diff", "--since", &cut_at, "--until", &end_at, "-o", "json"],
        vec!["log", "--since", &cut_at, "--until", &end_at, "-o", "json"],
        vec!["get", "deploy/frontend", "--at", &cut_at, "-o", "json"],
        vec!["snapshot", "--at", &cut_at, "-o", "json"],
    ] {
        let here = ask(&env.store, &q);
        let there = ask(&alone, &q);
        assert_eq!(here.code, Some(0), "{q:?}: {}", here.stderr);
        assert_eq!(
            (there.code, &there.stdout, &there.stderr),
            (here.code, &here.stdout, &here.stderr),
            "{q:?}"
        );
    }
    let frontend = json(&ask(
        &alone,
        &["get", "deploy/frontend", "--at", &cut_at, "-o", "json"],
    ));
    assert_eq!(frontend["spec"]["replicas"], 3, "{frontend:#}");
    // Covered from the cut; before it, nothing is known.
    let coverage = json(&ask(&alone, &["coverage", "-o", "json"]));
    for s in coverage["streams"].as_array().unwrap() {
        assert_eq!(s["from"], cut_at.as_str(), "{coverage:#}");
    }
    let earlier = ask(
        &alone,
        &["get", "deploy/frontend", "--at", &before, "--strict"],
    );
    assert_ne!(earlier.code, Some(0), "{earlier:?}");
    // SQL reads the later slice's files alone, its keyframes the state at
    // the cut: what changed from the cut on, as `diff` says.
    let diff = json(&ask(
        &env.store,
        &["diff", "--since", &cut_at, "--until", &end_at, "-o", "json"],
    ));
    let changed = crate::common::diff_changes(&diff);
    assert!(
        changed
            .iter()
            .any(|(kind, name, _)| kind == "Deployment" && name == "frontend"),
        "{diff:#}"
    );
    let params = serde_json::json!({"dir": path_str(&late), "cluster": c, "namespace": "shop",
                                    "since": cut_at, "until": end_at});
    for engine in crate::segments::ENGINES {
        assert_eq!(
            crate::segments::changed_rows(engine, &params),
            changed,
            "{engine}"
        );
    }

    // After the earlier slice, the later one continues its lane: the two
    // answer as the whole.
    let both = env.dir.path().join("both.db");
    import(&env, &both, &early);
    let second = import(&env, &both, &late);
    assert!(
        second
            .iter()
            .all(|f| f["result"] == "imported" && f["gap_before"] == false),
        "{second:#?}"
    );
    let since = Millis::from_ms(0).to_string();
    for q in [
        vec!["diff", "--since", &since, "--until", &end_at, "-o", "json"],
        vec!["timeline", "deploy/frontend", "-o", "json"],
        vec!["snapshot", "--at", &cut_at, "-o", "json"],
        vec!["coverage", "-o", "json"],
    ] {
        let here = ask(&env.store, &q);
        let there = ask(&both, &q);
        assert_eq!(
            (there.code, &there.stdout, &there.stderr),
            (here.code, &here.stdout, &here.stderr),
            "{q:?}"
        );
    }
}
