//! History answers end to end: a scripted incident recorded from the simulator,
//! then diff, timeline, get --at, snapshot, prune and export through the real
//! binary, offline.

use crate::common;

use common::Env;
use krply::time::Millis;
use serde_json::{Value, json};
use std::time::Duration;

const DEPLOY: &str = "deployments.v1.apps@shop";
const CM: &str = "configmaps.v1@shop";

struct Incident {
    env: Env,
    /// After the first baselines, before any change.
    t0: Millis,
    /// After frontend was scaled to 3.
    t_scaled: Millis,
    /// After productcatalogservice got its new image.
    t_image: Millis,
    /// Inside the 410 gap (midpoint of the configmaps window).
    t_gap: Millis,
    /// After the last change, before the recorder stopped.
    t_end: Millis,
    /// When the recorder had stopped.
    t_stopped: Millis,
}

fn now() -> Millis {
    Millis::now()
}

/// The time now, once the clock has left the millisecond of anything done
/// before: a change made after it is observed after it, never in the same
/// millisecond (windows are `(since, until]`).
fn mark(env: &Env) -> Millis {
    let t = now();
    env.wait_for("the clock to pass the mark", || now() > t);
    t
}

fn edit(env: &Env, api_version: &str, kind: &str, name: &str, change: impl FnOnce(&mut Value)) {
    let mut obj = env.sim.get(api_version, kind, Some("shop"), name).unwrap();
    change(&mut obj);
    env.sim.update(obj).unwrap();
}

/// Scale, image change, ConfigMap edit, label added, object deleted, object
/// created, a 410 gap with a change inside it, and a change after it.
fn incident() -> Incident {
    let env = Env::shop();
    let rec = env.start_recorder(&["deploy", "cm"]);
    env.wait_baselines(1);
    let t0 = mark(&env);

    env.scale("frontend", 3);
    env.wait_events(DEPLOY, 1);
    let t_scaled = mark(&env);

    edit(
        &env,
        "apps/v1",
        "Deployment",
        "productcatalogservice",
        |d| {
            d["spec"]["template"]["spec"]["containers"][0]["image"] =
                json!("example.com/productcatalog:v2");
        },
    );
    env.wait_events(DEPLOY, 2);
    let t_image = mark(&env);

    env.patch_cm("feature-flags", "new-checkout", "true");
    env.sim
        .patch_merge(
            "apps/v1",
            "Deployment",
            Some("shop"),
            "adservice",
            &json!({"metadata": {"labels": {"team": "ads"}}}),
        )
        .unwrap();
    env.sim
        .delete("v1", "ConfigMap", Some("shop"), "currency-rates")
        .unwrap();
    env.sim
        .create(json!({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "promo", "namespace": "shop"}, "data": {"code": "BF2026"}}))
        .unwrap();
    env.wait_events(CM, 3);
    env.wait_events(DEPLOY, 3);
    // Quiet until nothing before now can still be in flight: the gap below
    // starts after the changes above.
    let quiet = mark(&env).as_ms();
    env.wait_settled(CM, quiet);
    env.wait_settled(DEPLOY, quiet);

    // History lost: every request of the recorder waits while the change below
    // happens, so it falls into the gap.
    env.sim.set_delay(Duration::from_millis(400));
    env.sim.compact();
    env.sim.expire_watches();
    env.patch_cm("frontend-config", "log_level", "debug");
    env.sim.set_delay(Duration::ZERO);
    env.wait_baselines(2);

    env.scale("cartservice", 2);
    env.wait_events(DEPLOY, 4);
    let t_end = now();

    // Readers work while the recorder holds the journal.
    let live = env.run(&["diff", "--since", &t0.to_string(), "-o", "json"]);
    assert_eq!(live.code, Some(0), "{}", live.stderr);

    assert_eq!(rec.stop().code, Some(0));
    let t_stopped = now();
    // A time inside the gap of both streams: each closes its own gap with
    // its own relist, so their gaps start together but end apart.
    let (cm, deploy) = (
        env.coverage(CM).windows[0].clone(),
        env.coverage(DEPLOY).windows[0].clone(),
    );
    let (from, to) = (
        cm.from.max(deploy.from),
        cm.to.unwrap().min(deploy.to.unwrap()),
    );
    assert!(from < to, "the gaps overlap: {cm:?} {deploy:?}");
    let t_gap = Millis::from_ms((from + to) / 2);
    Incident {
        env,
        t0,
        t_scaled,
        t_image,
        t_gap,
        t_end,
        t_stopped,
    }
}

fn json_of(env: &Env, args: &[&str]) -> Value {
    let out = env.run(args);
    assert!(
        matches!(out.code, Some(0) | Some(3)),
        "{args:?}: {}",
        out.stderr
    );
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {}", out.stdout))
}

fn changes(diff: &Value) -> Vec<(String, String, String)> {
    diff["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                format!(
                    "{}/{}",
                    o["kind"].as_str().unwrap(),
                    o["name"].as_str().unwrap()
                ),
                o["change"].as_str().unwrap().to_string(),
                o["fields"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|f| {
                        format!(
                            "{}: {} -> {}",
                            f["path"].as_str().unwrap(),
                            f["before"],
                            f["after"]
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("; "),
            )
        })
        .collect()
}

#[test]
fn diff_reports_exactly_the_incident_and_says_where_it_is_blind() {
    let i = incident();
    let diff = json_of(
        &i.env,
        &[
            "diff",
            "--since",
            &i.t0.to_string(),
            "--until",
            &i.t_end.to_string(),
            "-o",
            "json",
        ],
    );
    let got = changes(&diff);
    let expect = |who: &str, change: &str, fields: &str| {
        (who.to_string(), change.to_string(), fields.to_string())
    };
    assert_eq!(
        got,
        vec![
            expect("ConfigMap/currency-rates", "deleted", ""),
            expect(
                "ConfigMap/feature-flags",
                "modified",
                r#"data.new-checkout: null -> "true""#
            ),
            expect(
                "ConfigMap/frontend-config",
                "modified",
                r#"data.log_level: null -> "debug""#
            ),
            expect("ConfigMap/promo", "added", ""),
            expect(
                "Deployment/adservice",
                "modified",
                r#"metadata.labels.team: null -> "ads""#
            ),
            expect(
                "Deployment/cartservice",
                "modified",
                "spec.replicas: 1 -> 2"
            ),
            expect("Deployment/frontend", "modified", "spec.replicas: 1 -> 3"),
            expect(
                "Deployment/productcatalogservice",
                "modified",
                r#"spec.template.spec.containers[0].image: "us-central1-docker.pkg.dev/online-boutique-ci/microservices-demo/productcatalogservice:v0.10.6" -> "example.com/productcatalog:v2""#
            ),
        ],
        "no phantom change from the relist, every real change with its before/after"
    );
    assert_eq!(diff["complete"], false);
    let warnings = diff["warnings"].as_array().unwrap();
    assert!(
        warnings.iter().any(|w| w.as_str().unwrap().contains("410")),
        "{warnings:?}"
    );
    let manager = &diff["objects"][6]["fields"][0]["manager"];
    assert_eq!(
        manager, "krply-sim",
        "the field manager owning spec.replicas"
    );
    // Only the change made while nobody watched is labelled as found by the
    // relist, with the stretch it happened in: the gap.
    let gap = i.env.coverage(CM).windows[0].clone();
    for o in diff["objects"].as_array().unwrap() {
        if o["name"] == "frontend-config" {
            assert_eq!(o["observed"], "relist", "{o:#}");
            assert_eq!(
                o["between"],
                json!({"from": Millis::from_ms(gap.from).to_string(),
                       "to": Millis::from_ms(gap.to.unwrap()).to_string()})
            );
        } else {
            assert_eq!(o["observed"], "watch", "{o:#}");
            assert!(o["between"].is_null(), "{o:#}");
        }
    }

    // Text: grouped by object, warnings on stderr.
    let text = i.env.run(&[
        "diff",
        "--since",
        &i.t0.to_string(),
        "--until",
        &i.t_end.to_string(),
    ]);
    assert_eq!(text.code, Some(0));
    assert!(
        text.stdout
            .contains("Deployment frontend  modified\n  spec.replicas  1 -> 3"),
        "{}",
        text.stdout
    );
    assert!(
        text.stderr
            .starts_with("warning: this answer is incomplete"),
        "{}",
        text.stderr
    );
    // --strict turns an incomplete answer into exit 3, after printing it.
    let strict = i.env.run(&[
        "diff",
        "--since",
        &i.t0.to_string(),
        "--until",
        &i.t_end.to_string(),
        "--strict",
    ]);
    assert_eq!(strict.code, Some(3));
    assert!(strict.stdout.contains("8 object(s) changed."));
    // Before the gap, the same question is complete.
    let before_gap = json_of(
        &i.env,
        &[
            "diff",
            "--since",
            &i.t0.to_string(),
            "--until",
            &i.t_image.to_string(),
            "-o",
            "json",
            "--strict",
        ],
    );
    assert_eq!(before_gap["complete"], true, "{}", before_gap["warnings"]);
    assert_eq!(changes(&before_gap).len(), 2, "{:?}", changes(&before_gap));
    // Narrowed to one object and one type.
    let one = json_of(
        &i.env,
        &[
            "diff",
            "deploy/frontend",
            "cm",
            "--since",
            &i.t0.to_string(),
            "--until",
            &i.t_end.to_string(),
            "-o",
            "json",
        ],
    );
    let names: Vec<String> = changes(&one).into_iter().map(|c| c.0).collect();
    assert_eq!(
        names,
        [
            "ConfigMap/currency-rates",
            "ConfigMap/feature-flags",
            "ConfigMap/frontend-config",
            "ConfigMap/promo",
            "Deployment/frontend"
        ]
    );
    // Unified YAML diffs.
    let unified = i.env.run(&[
        "diff",
        "deploy/frontend",
        "--since",
        &i.t0.to_string(),
        "--until",
        &i.t_end.to_string(),
        "-o",
        "unified",
    ]);
    assert!(
        unified
            .stdout
            .contains("--- a/Deployment/shop/frontend\n+++ b/Deployment/shop/frontend\n"),
        "{}",
        unified.stdout
    );
    assert!(
        unified.stdout.contains("-  replicas: 1\n+  replicas: 3\n"),
        "{}",
        unified.stdout
    );
    assert!(
        !unified.stdout.contains("resourceVersion"),
        "noise stays out: {}",
        unified.stdout
    );
}

#[test]
fn a_stopped_recorder_covers_nothing_after_it_stopped() {
    let i = incident();
    // Until now, after the stop: the time since is not "no changes".
    let diff = json_of(
        &i.env,
        &[
            "diff",
            "--since",
            &i.t_end.to_string(),
            "--until",
            "now",
            "-o",
            "json",
        ],
    );
    assert_eq!(diff["objects"].as_array().unwrap().len(), 0);
    assert_eq!(
        diff["complete"], false,
        "an hour after the stop is not 'no changes'"
    );
    assert!(
        diff["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("no recorder was watching")),
        "{}",
        diff["warnings"]
    );
}

/// `--strict` on `timeline` and `get`: an answer the journal covers exits 0,
/// one a gap touches exits 3 after printing what it has.
#[test]
fn strict_timeline_and_get_exit_3_only_where_the_answer_is_incomplete() {
    let i = incident();
    let timeline = i
        .env
        .run(&["timeline", "deploy/frontend", "--strict", "-o", "json"]);
    assert_eq!(timeline.code, Some(3), "{}", timeline.stderr);
    let t: Value = serde_json::from_str(&timeline.stdout).expect("printed anyway");
    assert_eq!(t["complete"], false);
    assert!(
        timeline.stderr.contains("incomplete"),
        "{}",
        timeline.stderr
    );
    let covered = i.env.run(&[
        "get",
        "deploy/frontend",
        "--at",
        &i.t_scaled.to_string(),
        "--strict",
        "-o",
        "json",
    ]);
    assert_eq!(covered.code, Some(0), "{}", covered.stderr);
    let in_gap = i.env.run(&[
        "get",
        "deploy/frontend",
        "--at",
        &i.t_gap.to_string(),
        "--strict",
        "-o",
        "json",
    ]);
    assert_eq!(in_gap.code, Some(3), "{}", in_gap.stderr);
    let v: Value = serde_json::from_str(&in_gap.stdout).expect("printed anyway");
    assert_eq!(v["spec"]["replicas"], 3);
}

#[test]
fn timeline_shows_every_version_and_the_gap() {
    let i = incident();
    let t = json_of(&i.env, &["timeline", "deploy/frontend", "-o", "json"]);
    let types: Vec<&str> = t["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    // It failed once, under heavy load, without saying more: the whole
    // timeline and the stream's coverage say what happened.
    assert_eq!(
        types,
        ["BASELINE", "MODIFIED", "GAP", "BASELINE"],
        "timeline: {t:#}\ncoverage: {}",
        i.env.run(&["coverage", "-o", "json"]).stdout
    );
    let e = &t["entries"];
    assert_eq!(e[0]["synthetic"], true);
    assert_eq!(e[1]["synthetic"], false);
    assert_eq!(e[1]["fields"][0]["path"], "spec.replicas");
    assert_eq!(
        (
            e[1]["fields"][0]["before"].clone(),
            e[1]["fields"][0]["after"].clone()
        ),
        (json!(1), json!(3))
    );
    assert!(e[2]["gap"]["reason"].as_str().unwrap().contains("410"));
    assert_eq!(
        e[3]["fields"].as_array().unwrap().len(),
        0,
        "the relist saw no change"
    );
    let observed: Vec<&Value> = e
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["observed"])
        .collect();
    assert_eq!(
        observed,
        [
            &json!("list"),
            &json!("watch"),
            &Value::Null,
            &json!("list")
        ],
        "a list that found nothing new is no relist finding"
    );
    assert_eq!(t["complete"], false);

    // The change nobody saw happen shows up with the relist.
    let fc = json_of(&i.env, &["timeline", "cm/frontend-config", "-o", "json"]);
    let last = fc["entries"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["type"], "BASELINE");
    assert_eq!(last["fields"][0]["path"], "data.log_level");
    let gap = i.env.coverage(CM).windows[0].clone();
    assert_eq!(last["observed"], "relist");
    assert_eq!(
        last["between"],
        json!({"from": Millis::from_ms(gap.from).to_string(),
               "to": Millis::from_ms(gap.to.unwrap()).to_string()})
    );
    let text = i.env.run(&["timeline", "cm/frontend-config"]);
    assert!(
        text.stdout.contains("(changed at an unknown time between"),
        "{}",
        text.stdout
    );
    // A deleted object still has its timeline.
    let gone = json_of(
        &i.env,
        &["timeline", "configmap/currency-rates", "-o", "json"],
    );
    let types: Vec<&str> = gone["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["BASELINE", "DELETED"]);
    let table = i.env.run(&["timeline", "deploy/frontend"]);
    assert!(table.stdout.starts_with("OBSERVED"), "{}", table.stdout);
    assert!(table.stdout.contains("GAP"));
}

#[test]
fn get_at_three_times() {
    let i = incident();
    let at = |t: Millis, what: &str| {
        json_of(&i.env, &["get", what, "--at", &t.to_string(), "-o", "json"])
    };
    assert_eq!(at(i.t0, "deploy/frontend")["spec"]["replicas"], 1);
    assert_eq!(at(i.t_scaled, "deploy/frontend")["spec"]["replicas"], 3);
    let image = |t| {
        at(t, "deploy/productcatalogservice")["spec"]["template"]["spec"]["containers"][0]["image"]
            .clone()
    };
    assert!(image(i.t_scaled).as_str().unwrap().ends_with(":v0.10.6"));
    assert_eq!(image(i.t_end), "example.com/productcatalog:v2");
    // Objects carry apiVersion and kind even when listed without them.
    let listed = at(i.t0, "cm/feature-flags");
    assert_eq!(
        (listed["apiVersion"].as_str(), listed["kind"].as_str()),
        (Some("v1"), Some("ConfigMap"))
    );
    // YAML by default.
    let yaml = i
        .env
        .run(&["get", "deploy/frontend", "--at", &i.t0.to_string()]);
    assert!(
        yaml.stdout
            .starts_with("apiVersion: apps/v1\nkind: Deployment\n"),
        "{}",
        yaml.stdout
    );
    // Not there: say when it existed.
    let gone = i
        .env
        .run(&["get", "cm/currency-rates", "--at", &i.t_end.to_string()]);
    assert_eq!(gone.code, Some(1));
    assert!(
        gone.stderr
            .starts_with("error: configmaps/currency-rates did not exist at"),
        "{}",
        gone.stderr
    );
    assert!(
        gone.stderr.contains("until it was deleted at"),
        "{}",
        gone.stderr
    );
    let never = i.env.run(&["get", "cm/nope", "--at", &i.t_end.to_string()]);
    assert_eq!(never.code, Some(1));
    assert!(
        never
            .stderr
            .starts_with("error: configmaps/nope was never recorded in namespace shop")
    );
    let reconstruct = i.env.run(&[
        "reconstruct",
        "deploy/frontend",
        "--at",
        &i.t_scaled.to_string(),
        "-o",
        "json",
    ]);
    assert_eq!(reconstruct.code, Some(0));
    // managedFields are left out unless asked for, as kubectl does; asked
    // for, the object is exactly as recorded.
    let hidden = at(i.t_scaled, "deploy/frontend");
    assert!(
        hidden["metadata"].get("managedFields").is_none(),
        "{hidden:#}"
    );
    let shown = json_of(
        &i.env,
        &[
            "get",
            "deploy/frontend",
            "--at",
            &i.t_scaled.to_string(),
            "--show-managed-fields",
            "-o",
            "json",
        ],
    );
    assert!(shown["metadata"]["managedFields"].is_array(), "{shown:#}");
    let mut without = shown.clone();
    without["metadata"]
        .as_object_mut()
        .unwrap()
        .shift_remove("managedFields");
    assert_eq!(without, hidden);
    let keys = |v: &Value| {
        v["metadata"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(
        keys(&hidden),
        keys(&shown)
            .into_iter()
            .filter(|k| k != "managedFields")
            .collect::<Vec<_>>(),
        "the other fields keep their recorded order"
    );
}

#[test]
fn snapshot_completeness_flips_inside_a_gap_and_saves_by_name() {
    let i = incident();
    let before = json_of(
        &i.env,
        &["snapshot", "--at", &i.t_scaled.to_string(), "-o", "json"],
    );
    assert_eq!(before["complete"], true, "{}", before["warnings"]);
    let deploys = before["watermarks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["stream"] == DEPLOY)
        .unwrap()
        .clone();
    assert_eq!(deploys["objects"], 12);
    assert_eq!(before["items"].as_array().unwrap().len(), 12 + 4);
    assert!(
        before["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|o| o["apiVersion"].is_string() && o["kind"].is_string())
    );
    let inside = json_of(
        &i.env,
        &["snapshot", "--at", &i.t_gap.to_string(), "-o", "json"],
    );
    assert_eq!(inside["complete"], false);
    assert!(
        inside["missing"].as_array().unwrap().contains(&json!(CM)),
        "{}",
        inside["missing"]
    );

    let scaled = i.t_scaled.to_string();
    let end = i.t_end.to_string();
    let saved = i
        .env
        .run(&["snapshot", "--at", &scaled, "--save", "before-image"]);
    assert_eq!(saved.code, Some(0), "{}", saved.stderr);
    let again = i.env.run(&["snapshot", "--save", "before-image"]);
    assert_eq!(again.code, Some(1));
    let list = i.env.run(&["snapshot", "--list"]);
    assert!(
        list.stdout
            .lines()
            .nth(1)
            .unwrap()
            .starts_with("before-image"),
        "{}",
        list.stdout
    );
    let typed = i.env.run(&["snapshot", "deploy/frontend"]);
    assert_eq!(typed.code, Some(2));

    // A saved snapshot is a time point wherever a time is taken: the same
    // answers as with the time it is of, and a note that names it.
    for args in [
        vec!["diff", "--since", "@", "--until", &end, "-o", "json"],
        vec!["log", "--since", "@", "--until", &end, "-o", "json"],
        vec!["get", "deploy/frontend", "--at", "@", "-o", "json"],
        vec!["snapshot", "--at", "@", "-o", "json"],
        vec!["coverage", "--since", "@", "--until", &end, "-o", "json"],
    ] {
        let with = |point: &str| -> Vec<String> {
            args.iter()
                .map(|a| {
                    if *a == "@" {
                        point.to_string()
                    } else {
                        a.to_string()
                    }
                })
                .collect()
        };
        let by_name = with("before-image");
        let by_name: Vec<&str> = by_name.iter().map(String::as_str).collect();
        let by_time = with(&scaled);
        let by_time: Vec<&str> = by_time.iter().map(String::as_str).collect();
        let named = i.env.run(&by_name);
        let timed = i.env.run(&by_time);
        assert_eq!(named.code, Some(0), "{by_name:?}: {}", named.stderr);
        assert_eq!(named.stdout, timed.stdout, "{by_name:?}");
        assert!(
            named
                .stderr
                .contains("\"before-image\" is the saved snapshot of"),
            "{}",
            named.stderr
        );
    }
    let typo = i.env.run(&["diff", "--since", "before-imag"]);
    assert_eq!(typo.code, Some(2), "{}", typo.stderr);
    assert!(
        typo.stderr.contains("did you mean \"before-image\""),
        "{}",
        typo.stderr
    );
    let time_name = i.env.run(&["snapshot", "--save", "30m"]);
    assert_eq!(time_name.code, Some(2), "{}", time_name.stderr);
}

#[test]
fn prune_leaves_answers_after_the_cut_identical() {
    let i = incident();
    let cut = i.t_image;
    let answers = |env: &Env| -> Vec<String> {
        [
            vec![
                "diff",
                "--since",
                &cut.to_string(),
                "--until",
                &i.t_end.to_string(),
                "-o",
                "json",
            ],
            vec![
                "diff",
                "--since",
                &i.t_gap.to_string(),
                "--until",
                &i.t_end.to_string(),
            ],
            vec![
                "get",
                "deploy/frontend",
                "--at",
                &i.t_end.to_string(),
                "-o",
                "json",
            ],
            vec![
                "get",
                "deploy/productcatalogservice",
                "--at",
                &cut.to_string(),
            ],
            vec!["snapshot", "--at", &i.t_end.to_string(), "-o", "json"],
            vec!["snapshot", "--at", &cut.to_string(), "-o", "yaml"],
        ]
        .iter()
        .map(|args| {
            let out = env.run(args);
            format!(
                "{args:?} exit {:?}\n{}\n{}",
                out.code, out.stdout, out.stderr
            )
        })
        .collect()
    };
    let before = answers(&i.env);
    let pruned = i.env.run(&["prune", "--before", &cut.to_string()]);
    assert_eq!(pruned.code, Some(0), "{}", pruned.stderr);
    assert!(
        pruned.stdout.contains("baseline of 12 object(s)"),
        "{}",
        pruned.stdout
    );
    let after = answers(&i.env);
    for (b, a) in before.iter().zip(&after) {
        assert_eq!(b, a);
    }
    // History before the cut is gone; a fresh question before it is not covered.
    let old = i
        .env
        .run(&["get", "deploy/frontend", "--at", &i.t0.to_string()]);
    assert_eq!(old.code, Some(1));
    let conn = rusqlite::Connection::open(&i.env.store).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
}

#[test]
fn prune_is_refused_while_a_recorder_runs() {
    let env = Env::shop();
    let rec = env.start_recorder(&["cm"]);
    env.wait_baselines(1);
    let out = env.run(&["prune", "--before", "1h"]);
    assert_eq!(out.code, Some(1));
    assert!(
        out.stderr
            .contains(&format!("is in use by pid {}", rec.pid())),
        "{}",
        out.stderr
    );
    let out = rec.stop();
    assert_eq!(
        out.code,
        Some(0),
        "the recorder stops cleanly: {}",
        out.stderr
    );
}

#[test]
fn export_round_trips_the_journal() {
    let i = incident();
    let out = i.env.run(&["export"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let lines: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for l in &lines {
        for key in [
            "seq",
            "record",
            "cluster",
            "stream",
            "observed_at",
            "watch_type",
            "synthetic",
            "resource_version",
            "uid",
            "kind",
            "namespace",
            "name",
            "object",
        ] {
            assert!(l.get(key).is_some(), "{key} missing in {l}");
        }
    }
    // Oldest first.
    let seqs: Vec<i64> = lines.iter().filter_map(|l| l["seq"].as_i64()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]));
    // Every recorded event is there, with the object exactly as the server sent it.
    for stream in [CM, DEPLOY] {
        let journal = i.env.events(stream);
        let exported: Vec<&Value> = lines
            .iter()
            .filter(|l| l["record"] == "event" && l["stream"] == stream)
            .collect();
        assert_eq!(exported.len(), journal.len());
        for (line, (kind_, who, rv, body)) in exported.iter().zip(&journal) {
            assert_eq!(line["watch_type"], kind_.as_str());
            assert_eq!(
                format!(
                    "{}/{}",
                    line["namespace"].as_str().unwrap(),
                    line["name"].as_str().unwrap()
                ),
                *who
            );
            assert_eq!(line["resource_version"], rv.as_str());
            let recorded: Value = serde_json::from_slice(body).unwrap();
            assert_eq!(line["object"], recorded);
            assert_eq!(line["uid"], recorded["metadata"]["uid"]);
        }
    }
    // Baselines: one line per listed object, synthetic.
    let baseline_items = lines
        .iter()
        .filter(|l| l["record"] == "baseline" && !l["object"].is_null())
        .count();
    let listed: usize = [CM, DEPLOY]
        .iter()
        .map(|s| {
            i.env
                .records(s)
                .iter()
                .filter(|r| r.kind == krply::journal::schema::kind::BASELINE_ITEM)
                .count()
        })
        .sum();
    assert_eq!(baseline_items, listed);
    assert!(
        lines
            .iter()
            .filter(|l| l["record"] == "baseline")
            .all(|l| l["synthetic"] == true)
    );
    let gaps: Vec<&Value> = lines.iter().filter(|l| l["record"] == "gap").collect();
    assert_eq!(gaps.len(), 2);
    assert!(gaps.iter().all(|g| g["from"].is_string()
        && g["to"].is_string()
        && g["reason"].as_str().unwrap().contains("410")));
    // A window.
    let window = i.env.run(&["export", "--since", &i.t_end.to_string()]);
    assert!(window.stdout.lines().count() < lines.len());
    let bad = i.env.run(&["export", "--since", "1m", "--until", "2h"]);
    assert_eq!(bad.code, Some(2));
}

#[test]
fn a_forbidden_resource_leaves_namespace_wide_answers_incomplete_until_narrowed() {
    let env = Env::shop();
    env.sim.forbid("configmaps", None);
    let rec = env.start_recorder(&["cm", "deploy"]);
    env.wait_for("deployments listed", || {
        std::panic::catch_unwind(|| env.coverage(DEPLOY).from.is_some()).unwrap_or(false)
    });
    let t0 = now();
    env.scale("frontend", 4);
    env.wait_events(DEPLOY, 1);
    let t1 = now();
    let wide = json_of(
        &env,
        &[
            "diff",
            "--since",
            &t0.to_string(),
            "--until",
            &t1.to_string(),
            "-o",
            "json",
        ],
    );
    assert_eq!(wide["complete"], false);
    assert!(
        wide["warnings"].to_string().contains("403"),
        "{}",
        wide["warnings"]
    );
    let narrow = json_of(
        &env,
        &[
            "diff",
            "deploy",
            "--since",
            &t0.to_string(),
            "--until",
            &t1.to_string(),
            "-o",
            "json",
        ],
    );
    assert_eq!(narrow["complete"], true, "{}", narrow["warnings"]);
    assert_eq!(changes(&narrow).len(), 1);
    let out = rec.stop();
    assert_eq!(
        out.code,
        Some(0),
        "the recorder stops cleanly: {}",
        out.stderr
    );
}

/// A custom resource's table has its CRD's additionalPrinterColumns, as the
/// CRD was recorded.
#[test]
fn get_a_custom_type_uses_the_recorded_crds_printer_columns() {
    let env = Env::shop();
    env.sim
        .create(json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                "scope": "Namespaced",
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                    "additionalPrinterColumns": [
                        {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                        {"name": "Color", "type": "string", "jsonPath": ".spec.color"}]}]
            }
        }))
        .unwrap();
    env.sim
        .create(json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w1", "namespace": "shop"}, "spec": {"size": 3, "color": "teal"}}))
        .unwrap();
    let rec = env.start_recorder(&["widgets.example.com", "customresourcedefinitions"]);
    env.wait_baselines(1);
    assert_eq!(rec.stop().code, Some(0));
    let out = env.run(&["get", "widgets", "--at", "now"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let lines: Vec<Vec<&str>> = out
        .stdout
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(lines[0], ["NAME", "SIZE", "COLOR", "AGE"], "{}", out.stdout);
    assert_eq!(&lines[1][..3], ["w1", "3", "teal"], "{}", out.stdout);
}

/// `log -f` follows the journal beside a recorder, with no cluster access:
/// changes as they are recorded, each once, and a gap as it opens.
#[test]
fn log_follow_prints_changes_and_gaps_as_the_journal_gets_them() {
    let env = Env::shop();
    let rec = env.start_recorder(&["deploy", "cm"]);
    env.wait_baselines(1);
    let out = env.dir.path().join("follow.out");
    let mut follow = env
        .command()
        // No cluster: it reads only the journal.
        .env("KUBECONFIG", env.dir.path().join("no-kubeconfig"))
        .args(["log", "-f", "-n", "shop", "--since", "1m"])
        .stdout(std::process::Stdio::from(
            std::fs::File::create(&out).unwrap(),
        ))
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let printed = || std::fs::read_to_string(&out).unwrap_or_default();
    env.scale("frontend", 3);
    env.wait_for("log -f to print the scale", || {
        printed().contains("Deployment frontend  spec.replicas: 1 -> 3")
    });
    env.patch_cm("feature-flags", "checkout", "on");
    env.wait_for("log -f to print the edit", || {
        printed().contains("ConfigMap feature-flags")
    });
    // History lost: the gap shows as it opens, then what the relist found.
    env.sim.compact();
    env.sim.expire_watches();
    env.wait_for("log -f to print the gap", || printed().contains("GAP"));
    env.scale("frontend", 2);
    env.wait_for("log -f to print the next scale", || {
        printed().contains("spec.replicas: 3 -> 2")
    });
    let _ = follow.kill();
    let _ = follow.wait();
    assert_eq!(rec.stop().code, Some(0));
    let text = printed();
    assert_eq!(
        text.matches("spec.replicas: 1 -> 3").count(),
        1,
        "each entry once:\n{text}"
    );
    assert_eq!(text.matches("(UTC)").count(), 1, "one date line:\n{text}");
}

/// `get TYPE --at T` prints the objects of a type as they were, as `kubectl
/// get` prints them: its columns, AGE as of T; -o json is a List; -l filters.
#[test]
fn get_a_type_at_a_time_prints_kubectls_table_of_then() {
    let i = incident();
    let at = i.t_scaled.to_string();
    let out = i.env.run(&["get", "deploy", "--at", &at]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let mut lines = out.stdout.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]);
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(rows.len(), 12, "{}", out.stdout);
    // loadgenerator was deleted later: then, it was there.
    assert!(
        rows.iter().any(|r| r[0] == "loadgenerator"),
        "{}",
        out.stdout
    );
    let frontend = rows.iter().find(|r| r[0] == "frontend").unwrap();
    assert!(
        frontend[1].ends_with("/3"),
        "scaled to 3 then: {frontend:?}"
    );

    let wide = i
        .env
        .run(&["get", "deploy", "-A", "--at", &at, "-o", "wide"]);
    assert!(
        wide.stdout.starts_with("NAMESPACE") && wide.stdout.contains("IMAGES"),
        "{}",
        wide.stdout
    );
    let selected = i
        .env
        .run(&["get", "deploy", "-l", "app=frontend", "--at", &at]);
    assert_eq!(selected.stdout.lines().count(), 2, "{}", selected.stdout);

    let list = json_of(
        &i.env,
        &["get", "cm", "--at", &i.t0.to_string(), "-o", "json"],
    );
    assert_eq!(list["kind"], "List");
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"currency-rates") && !names.contains(&"promo"),
        "{names:?}"
    );
    assert!(list["items"][0]["metadata"].get("managedFields").is_none());
    let none = i
        .env
        .run(&["get", "deploy", "-l", "app=nothing", "--at", &at]);
    assert_eq!(none.code, Some(0));
    assert!(
        none.stderr
            .contains("No resources found in shop namespace."),
        "{}",
        none.stderr
    );
}

/// One vocabulary: without audit logs no text says `by` (that word only
/// introduces a user an audit log names), and every field manager is named
/// the same way, in parentheses, in diff, log and timeline.
#[test]
fn a_manager_reads_the_same_everywhere_and_by_is_for_users() {
    let i = incident();
    let since = i.t0.to_string();
    let json = json_of(&i.env, &["diff", "--since", &since, "-o", "json"]);
    let mut managers: Vec<String> = json["objects"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|o| o["fields"].as_array().unwrap().iter())
        .filter_map(|f| f["manager"].as_str().map(str::to_string))
        .collect();
    managers.sort();
    managers.dedup();
    assert!(!managers.is_empty(), "{json:#}");
    let texts = [
        i.env.run(&["diff", "--since", &since]).stdout,
        i.env.run(&["log", "--since", &since]).stdout,
        i.env.run(&["timeline", "deploy/frontend"]).stdout,
    ];
    for text in &texts {
        assert!(!text.contains("manager:"), "{text}");
        for m in &managers {
            assert!(!text.contains(&format!("by {m}")), "{text}");
        }
    }
    for m in &managers {
        assert!(
            texts
                .iter()
                .filter(|t| t.contains(&format!("({m}")))
                .count()
                >= 2,
            "{m} is not named as ({m}) in diff and log:\n{}",
            texts.join("\n")
        );
    }
}

#[test]
fn bad_questions_get_one_clear_line() {
    let i = incident();
    let cases: &[(&[&str], i32, &str)] = &[
        (
            &["timeline", "deploy/nope"],
            1,
            "error: deployments.apps/nope was never recorded",
        ),
        (
            &["timeline", "deploy/a/b"],
            2,
            "error: malformed resource argument",
        ),
        (
            &["timeline", "frobs/x"],
            2,
            "error: no recorded resource type \"frobs\"",
        ),
        (&["get", "deploy/"], 2, "error: malformed resource argument"),
        (
            &["diff", "--since", "1h", "--until", "2h"],
            2,
            "error: --since",
        ),
        // Not a time, so perhaps a saved snapshot's name: the journal says it is not.
        (
            &["diff", "--since", "yesterday"],
            2,
            "error: invalid time \"yesterday\"",
        ),
        (
            &["get", "deploy/frontend", "--at", "soon"],
            2,
            "error: invalid time \"soon\"",
        ),
        // What cannot be a name is refused as clap reads it.
        (
            &["diff", "--since", "2099-01-01T00:00:00Z"],
            2,
            "error: invalid value '2099-01-01T00:00:00Z' for '--since <TIME>'",
        ),
        (
            &["diff", "-o", "table"],
            2,
            "error: unsupported output format",
        ),
        (&["timeline", "deploy"], 2, "error: \"deploy\" names a type"),
    ];
    for (args, code, start) in cases {
        let out = i.env.run(args);
        assert_eq!(out.code, Some(*code), "{args:?}: {}", out.stderr);
        assert!(out.stderr.starts_with(start), "{args:?}: {}", out.stderr);
        assert!(!out.stderr.contains("panicked"));
    }
    // An empty journal (created, nothing recorded) and no journal at all.
    let empty = Env::shop();
    drop(krply::journal::Journal::open_or_create(&empty.store).unwrap());
    for args in [
        &["diff"][..],
        &["timeline", "deploy/x"],
        &["snapshot"],
        &["get", "deploy/x"],
    ] {
        let out = empty.run(args);
        assert_eq!(out.code, Some(1), "{args:?}: {}", out.stderr);
        assert!(
            out.stderr.starts_with("error: the journal"),
            "{args:?}: {}",
            out.stderr
        );
    }
    let none = Env::shop();
    let out = none.run(&["diff"]);
    assert_eq!(out.code, Some(1));
    assert!(out.stderr.starts_with("error: no journal at"));
}

#[test]
fn a_label_selector_stream_never_answers_for_its_whole_type() {
    let env = Env::shop();
    const SOME: &str = "deployments.v1.apps@shop?app=frontend";
    let rec = env.start_recorder(&["deploy", "-l", "app=frontend"]);
    env.wait_for("deployments listed", || {
        std::panic::catch_unwind(|| env.coverage(SOME).from.is_some()).unwrap_or(false)
    });
    let t0 = now();
    env.scale("frontend", 4);
    env.wait_events(SOME, 1);
    let t1 = now();
    let answer = json_of(
        &env,
        &[
            "diff",
            "deploy",
            "--since",
            &t0.to_string(),
            "--until",
            &t1.to_string(),
            "-o",
            "json",
        ],
    );
    // What it recorded is there; that it is not the whole type is said.
    assert_eq!(changes(&answer).len(), 1, "{answer}");
    assert_eq!(answer["complete"], false);
    assert!(
        answer["warnings"]
            .to_string()
            .contains("only objects matching the label selector app=frontend"),
        "{}",
        answer["warnings"]
    );
    let out = rec.stop();
    assert_eq!(
        out.code,
        Some(0),
        "the recorder stops cleanly: {}",
        out.stderr
    );
    // Once the whole type is recorded too, that stream answers alone: complete,
    // and no object counted twice.
    let rec = env.start_recorder(&["deploy"]);
    env.wait_for("deployments listed", || {
        std::panic::catch_unwind(|| env.coverage(DEPLOY).from.is_some()).unwrap_or(false)
    });
    let t2 = now();
    env.scale("frontend", 2);
    env.wait_events(DEPLOY, 1);
    let t3 = now();
    let whole = json_of(
        &env,
        &[
            "diff",
            "deploy",
            "--since",
            &t2.to_string(),
            "--until",
            &t3.to_string(),
            "-o",
            "json",
        ],
    );
    assert_eq!(whole["complete"], true, "{}", whole["warnings"]);
    assert_eq!(changes(&whole).len(), 1, "{whole}");
    let out = rec.stop();
    assert_eq!(
        out.code,
        Some(0),
        "the recorder stops cleanly: {}",
        out.stderr
    );
}

/// A namespace the journal never recorded is not "no changes": the text says
/// so, JSON says `complete: false`, and `--strict` exits 3.
#[test]
fn a_namespace_never_recorded_is_not_no_changes() {
    let env = Env::shop();
    let rec = env.start_recorder(&["deploy", "cm"]);
    env.wait_baselines(1);
    assert_eq!(rec.stop().code, Some(0));
    let diff = env.run(&["diff", "-n", "prod"]);
    assert_eq!(diff.code, Some(0), "{diff:?}");
    assert!(
        diff.stdout
            .contains("Nothing was ever recorded here: this journal cannot say what changed."),
        "{}",
        diff.stdout
    );
    assert!(
        !diff.stdout.contains("No changes recorded"),
        "{}",
        diff.stdout
    );
    assert!(
        diff.stderr.contains("namespace prod: never recorded"),
        "{}",
        diff.stderr
    );
    let json = json_of(&env, &["diff", "-n", "prod", "-o", "json"]);
    assert_eq!(json["complete"], false);
    assert_eq!(env.run(&["diff", "-n", "prod", "--strict"]).code, Some(3));
    let snapshot = env.run(&["snapshot", "-n", "prod"]);
    assert!(
        snapshot.stdout.contains("Nothing was ever recorded here"),
        "{}",
        snapshot.stdout
    );
    assert_eq!(
        env.run(&["snapshot", "-n", "prod", "--strict"]).code,
        Some(3)
    );
    // A type recorded in another namespace only: the same.
    let narrowed = json_of(&env, &["diff", "-n", "prod", "deploy", "-o", "json"]);
    assert_eq!(narrowed["complete"], false);
    assert_eq!(
        narrowed["warnings"][0],
        "deployments.apps in namespace prod: never recorded (`kubectl krply coverage -A` shows what is)"
    );
}

/// The lines of a `log -o json` answer as (type, kind/name, first field path).
fn log_lines(log: &Value) -> Vec<(String, String, String)> {
    log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["type"].as_str().unwrap().to_string(),
                match e["kind"].as_str() {
                    Some(k) => format!("{k}/{}", e["name"].as_str().unwrap()),
                    None => String::new(),
                },
                e["fields"][0]["path"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[test]
fn log_tells_the_incident_in_order_with_the_gap_where_it_fell() {
    let i = incident();
    let since = i.t0.to_string();
    let log = json_of(&i.env, &["log", "--since", &since, "-o", "json"]);
    let entries = log["entries"].as_array().unwrap();
    let times: Vec<&str> = entries
        .iter()
        .map(|e| e["observed_at"].as_str().unwrap())
        .collect();
    let mut sorted = times.clone();
    sorted.sort();
    assert_eq!(times, sorted, "oldest first");
    let lines = log_lines(&log);
    let at = |t: &str, what: &str| {
        lines
            .iter()
            .position(|(ty, w, _)| ty == t && w == what)
            .unwrap_or_else(|| panic!("no {t} {what} in {lines:#?}"))
    };
    // Watched changes in the order they happened, the gap, what the relist
    // found, and the change after it; then the stretch after the recorder stopped.
    let scaled = at("MODIFIED", "Deployment/frontend");
    let image = at("MODIFIED", "Deployment/productcatalogservice");
    let promo = at("ADDED", "ConfigMap/promo");
    let gone = at("DELETED", "ConfigMap/currency-rates");
    let gap = lines
        .iter()
        .position(|(ty, _, _)| ty == "GAP")
        .expect("the 410 gap");
    let relist = at("RELIST", "ConfigMap/frontend-config");
    let cart = at("MODIFIED", "Deployment/cartservice");
    // (A gap of several streams shows where the first of them lost its
    // watch; another stream's events may still come after that.)
    assert!(scaled < image && image < promo.min(gone), "{lines:#?}");
    assert!(gap < relist && relist < cart, "{lines:#?}");
    assert_eq!(lines[scaled].2, "spec.replicas");
    assert_eq!(lines[relist].2, "data.log_level");
    assert_eq!(
        lines.last().unwrap().0,
        "GAP",
        "the time after the recorder stopped is not covered: {lines:#?}"
    );
    let r = &entries[relist];
    assert_eq!(r["observed"], "relist");
    assert_eq!(r["change"], "modified");
    let window = i.env.coverage(CM).windows[0].clone();
    assert_eq!(
        r["between"],
        json!({"from": Millis::from_ms(window.from).to_string(),
               "to": Millis::from_ms(window.to.unwrap()).to_string()})
    );
    assert!(
        entries[gap]["gap"]["reason"]
            .as_str()
            .unwrap()
            .contains("410"),
        "{:#}",
        entries[gap]
    );
    assert_eq!(entries[scaled]["fields"][0]["manager"], "krply-sim");
    assert_eq!(log["complete"], false);
    // The relist saw frontend unchanged: no line for it.
    assert_eq!(
        lines
            .iter()
            .filter(|(_, w, _)| w == "Deployment/frontend")
            .count(),
        1,
        "{lines:#?}"
    );

    // Text: one line per change, the same order, within 120 columns.
    let text = i.env.run(&["log", "--since", &since, "--color", "never"]);
    assert_eq!(text.code, Some(0), "{}", text.stderr);
    for line in text.stdout.lines() {
        assert!(line.chars().count() <= 120, "too wide: {line}");
    }
    let relist_line = text
        .stdout
        .lines()
        .find(|l| l.contains("RELIST"))
        .unwrap_or_else(|| panic!("{}", text.stdout));
    assert!(
        relist_line.contains("ConfigMap frontend-config  between "),
        "{relist_line}"
    );
    assert!(
        text.stdout.contains("spec.replicas: 1 -> 3  (krply-sim)"),
        "{}",
        text.stdout
    );
    assert!(text.stderr.contains("incomplete"), "{}", text.stderr);
    assert_eq!(
        i.env.run(&["log", "--since", &since, "--strict"]).code,
        Some(3)
    );

    // Narrowed to one object, and to a window after the gap.
    let one = json_of(
        &i.env,
        &["log", "deploy/frontend", "--since", &since, "-o", "json"],
    );
    assert!(
        log_lines(&one)
            .iter()
            .all(|(ty, w, _)| ty == "GAP" || w == "Deployment/frontend"),
        "{one:#}"
    );
    let after = json_of(
        &i.env,
        &[
            "log",
            "--since",
            &i.t_end.to_string(),
            "--until",
            &i.t_stopped.to_string(),
            "-o",
            "json",
        ],
    );
    assert!(log_lines(&after).iter().all(|(ty, _, _)| ty != "MODIFIED"));
}

#[test]
fn log_and_timeline_say_what_a_relist_found_created_or_deleted() {
    let env = Env::shop();
    let rec = env.start_recorder(&["cm"]);
    env.wait_baselines(1);
    let t0 = now();
    // The recorder's requests wait while the changes are made: they fall in
    // the gap however long this thread takes to make them.
    env.sim.hold_requests();
    env.sim.compact();
    env.sim.expire_watches();
    env.sim
        .create(json!({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "born-in-gap", "namespace": "shop"}}))
        .unwrap();
    env.sim
        .delete("v1", "ConfigMap", Some("shop"), "currency-rates")
        .unwrap();
    env.sim.release_requests();
    env.wait_baselines(2);
    assert_eq!(rec.stop().code, Some(0));

    let log = json_of(&env, &["log", "--since", &t0.to_string(), "-o", "json"]);
    let found: Vec<(String, String)> = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "RELIST")
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_string(),
                e["change"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            ("born-in-gap".to_string(), "added".to_string()),
            ("currency-rates".to_string(), "deleted".to_string())
        ]
    );
    // The object first seen by the relist was created while nobody watched.
    let t = json_of(&env, &["timeline", "cm/born-in-gap", "-o", "json"]);
    let first = &t["entries"][0];
    assert_eq!(first["observed"], "relist", "{t:#}");
}

/// A list of one namespace finds gone what a recorder of every namespace
/// held there and stopped watching: `log` says so, as `timeline` does (the
/// truth checker's seed 1155).
#[test]
fn a_list_of_one_namespace_finds_gone_what_a_recorder_of_every_namespace_held() {
    let env = Env::shop();
    let listed = |name: &str| {
        env.wait_for(&format!("a list of {name}"), || {
            std::panic::catch_unwind(|| common::baselines(&env.journal(), &env.stream(name)))
                .unwrap_or(0)
                >= 1
        })
    };
    let all = env.start_recorder(&["cm", "-A"]);
    listed("configmaps.v1@*");
    let out = all.stop();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let t0 = now();
    env.sim
        .delete("v1", "ConfigMap", Some("shop"), "currency-rates")
        .unwrap();
    let shop = env.start_recorder(&["cm", "-n", "shop"]);
    listed("configmaps.v1@shop");
    let out = shop.stop();
    assert_eq!(out.code, Some(0), "{}", out.stderr);

    let since = t0.to_string();
    for scope in [&["-n", "shop"][..], &["-A"][..]] {
        let mut args = vec!["log", "--since", since.as_str()];
        args.extend_from_slice(scope);
        args.extend(["-o", "json"]);
        let log = json_of(&env, &args);
        let found: Vec<(&str, &str)> = log["entries"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["observed"] == "relist")
            .map(|e| (e["name"].as_str().unwrap(), e["change"].as_str().unwrap()))
            .collect();
        assert_eq!(found, [("currency-rates", "deleted")], "{args:?}: {log:#}");
    }
    let t = json_of(
        &env,
        &["timeline", "cm/currency-rates", "-n", "shop", "-o", "json"],
    );
    let last = t["entries"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["observed"], "relist", "{t:#}");
}

/// `--since 14:02:30` is that local time of day, its most recent past
/// occurrence, as the user's clock shows it.
#[test]
fn a_time_of_day_means_the_last_time_the_local_clock_showed_it() {
    let env = Env::shop();
    let rec = env.start_recorder(&["cm"]);
    env.wait_baselines(1);
    assert_eq!(rec.stop().code, Some(0));
    let ago = jiff::Timestamp::now() - jiff::SignedDuration::from_secs(60);
    // The binary runs with TZ=UTC (the harness's hermetic zone).
    let local = ago.to_zoned(jiff::tz::TimeZone::UTC);
    let clock = local.strftime("%H:%M:%S").to_string();
    let log = json_of(&env, &["log", "--since", &clock, "-o", "json"]);
    let expected = Millis::from_ms(ago.as_millisecond() / 1000 * 1000).to_string();
    assert_eq!(log["since"], expected.as_str(), "{clock}");
    let bad = env.run(&["diff", "--since", "25:00"]);
    assert_eq!(bad.code, Some(2));
    assert!(
        bad.stderr.contains("a local time of day like 14:02"),
        "{}",
        bad.stderr
    );
}

/// A recorder of every namespace answers questions about one (issue 28,
/// bug 1): stop `record -n shop`, start `record -A`, scale; `diff -n shop`,
/// `get -n shop` and `log -n shop` see the change, complete, and a later
/// `record -n shop` does not call it a relist finding.
#[test]
fn a_recorder_of_every_namespace_answers_namespace_questions() {
    let env = Env::shop();
    let shop = env.start_recorder(&["deploy", "-n", "shop"]);
    env.wait_baselines(1);
    assert_eq!(shop.stop().code, Some(0));
    let all = env.start_recorder(&["deploy", "-A"]);
    let listed = |name: &str, n: u64| {
        env.wait_for(&format!("{n} list(s) of {name}"), || {
            std::panic::catch_unwind(|| {
                let j = env.journal();
                common::baselines(&j, &env.stream(name))
            })
            .unwrap_or(0)
                >= n
        })
    };
    listed("deployments.v1.apps@*", 1);
    let t0 = now();
    env.scale("frontend", 2);
    env.wait_events("deployments.v1.apps@*", 1);
    let t1 = now();
    let diff = json_of(
        &env,
        &[
            "diff",
            "deploy",
            "-n",
            "shop",
            "--since",
            &t0.to_string(),
            "--until",
            &t1.to_string(),
            "-o",
            "json",
        ],
    );
    assert_eq!(diff["complete"], true, "{diff:#}");
    assert_eq!(changes(&diff).len(), 1, "{diff:#}");
    assert_eq!(diff["objects"][0]["observed"], "watch");
    let get = json_of(
        &env,
        &["get", "deploy/frontend", "-n", "shop", "-o", "json"],
    );
    assert_eq!(get["spec"]["replicas"], 2);
    assert_eq!(all.stop().code, Some(0));
    // A later `record -n shop` lists the scaled Deployment: the change was
    // watched (by the -A recorder), so it is no relist finding.
    let shop = env.start_recorder(&["deploy", "-n", "shop"]);
    listed("deployments.v1.apps@shop", 2);
    let out = shop.stop();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        !out.stderr.contains("1 changed (frontend)"),
        "the relist calls a watched change a finding:\n{}",
        out.stderr
    );
    let log = json_of(
        &env,
        &[
            "log",
            "deploy",
            "-n",
            "shop",
            "--since",
            &t0.to_string(),
            "-o",
            "json",
        ],
    );
    let frontend: Vec<&Value> = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "frontend")
        .collect();
    assert_eq!(frontend.len(), 1, "{log:#}");
    assert_eq!(frontend[0]["type"], "MODIFIED");
    assert_eq!(frontend[0]["observed"], "watch");

    // A namespace nothing was ever seen in (a typo) is not "no changes",
    // though the -A stream covered every namespace: it says so and names the
    // closest namespace it saw.
    let typo = env.run(&["diff", "deploy", "-n", "shpo", "--since", &t0.to_string()]);
    assert_eq!(typo.code, Some(0), "{}", typo.stderr);
    assert!(
        typo.stdout.contains("Nothing was ever recorded here"),
        "{}",
        typo.stdout
    );
    assert!(!typo.stdout.contains("No changes"), "{}", typo.stdout);
    assert!(
        typo.stderr.contains(r#"did you mean "shop"?"#),
        "{}",
        typo.stderr
    );
    let strict = env.run(&["log", "-n", "shpo", "--since", &t0.to_string(), "--strict"]);
    assert_eq!(strict.code, Some(3), "{}", strict.stderr);
    let json = json_of(
        &env,
        &[
            "diff",
            "-n",
            "shpo",
            "--since",
            &t0.to_string(),
            "-o",
            "json",
        ],
    );
    assert_eq!(json["complete"], false, "{json:#}");
    // A namespace it saw stays a plain answer.
    let seen = env.run(&["diff", "deploy", "-n", "shop", "--since", &t1.to_string()]);
    assert!(
        seen.stdout.contains("No changes recorded"),
        "{}",
        seen.stdout
    );
}

/// Text shows times in the local zone and names it; input is read in the
/// same zone, so the two agree; `--utc` shows UTC; JSON stays UTC. A time in
/// the future is a usage error, and a time of day read as yesterday's says so.
#[test]
fn times_are_read_and_shown_in_one_zone() {
    let env = Env::shop();
    let rec = env.start_recorder(&["cm"]);
    env.wait_baselines(1);
    env.patch_cm("feature-flags", "checkout", "on");
    env.wait_events(CM, 1);
    assert_eq!(rec.stop().code, Some(0));
    let ny = jiff::tz::TimeZone::get("America/New_York").expect("the tz database");
    let in_ny = |args: &[&str]| {
        let mut c = env.command();
        c.env("TZ", "America/New_York").args(args);
        common::run_bounded(c, &format!("{args:?}"))
    };
    // Two minutes ago, as a New York clock shows it.
    let ago = jiff::Timestamp::now() - jiff::SignedDuration::from_secs(120);
    let since = ago.to_zoned(ny.clone()).strftime("%H:%M").to_string();
    let log = in_ny(&["log", "--since", &since]);
    assert_eq!(log.code, Some(0), "{}", log.stderr);
    let event = env.events(CM)[0].clone();
    let observed = env
        .records(CM)
        .into_iter()
        .find(|r| r.resource_version.as_deref() == Some(event.2.as_str()))
        .expect("the event's record")
        .observed_at;
    let shown = jiff::Timestamp::from_millisecond(observed)
        .unwrap()
        .to_zoned(ny.clone());
    assert!(
        log.stdout
            .contains(&shown.strftime("%H:%M:%S%.3f").to_string()),
        "the change at New York time {}:\n{}",
        shown.strftime("%H:%M:%S%.3f"),
        log.stdout
    );
    assert!(log.stdout.contains("America/New_York"), "{}", log.stdout);
    // --utc: the same change at its UTC time.
    let utc = in_ny(&["log", "--since", &since, "--utc"]);
    let in_utc = jiff::Timestamp::from_millisecond(observed)
        .unwrap()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .strftime("%H:%M:%S%.3f")
        .to_string();
    assert!(utc.stdout.contains(&in_utc), "{}", utc.stdout);
    assert!(utc.stdout.contains("(UTC)"), "{}", utc.stdout);
    // JSON is UTC whatever the zone.
    let json = in_ny(&["log", "--since", &since, "-o", "json"]);
    let j: Value = serde_json::from_str(&json.stdout).unwrap();
    assert!(
        j["entries"][0]["observed_at"]
            .as_str()
            .unwrap()
            .ends_with('Z')
    );

    // A time in the future is a usage error that says why.
    let future = env.run(&["get", "cm/feature-flags", "--at", "2999-01-01T00:00:00Z"]);
    assert_eq!(future.code, Some(2), "{}", future.stderr);
    assert!(future.stderr.contains("in the future"), "{}", future.stderr);
    // A time of day later than now means yesterday's, and a note says so
    // (unless two minutes from now is already tomorrow: then it is today's).
    let now = jiff::Timestamp::now().to_zoned(ny.clone());
    let soon = (jiff::Timestamp::now() + jiff::SignedDuration::from_secs(120)).to_zoned(ny);
    let later = soon.strftime("%H:%M").to_string();
    let note = in_ny(&["diff", "--since", &later]);
    assert_eq!(note.code, Some(0), "{}", note.stderr);
    let noted = note
        .stderr
        .contains(&format!("note: {later} means yesterday's {later}"));
    assert_eq!(noted, soon.date() == now.date(), "{}", note.stderr);
}

/// A mistyped type or object name gets the recorded name it is closest to.
#[test]
fn a_mistyped_name_gets_a_did_you_mean() {
    let env = Env::shop();
    let rec = env.start_recorder(&["deploy", "cm"]);
    env.wait_baselines(1);
    assert_eq!(rec.stop().code, Some(0));
    let typo = env.run(&["diff", "deploymnet"]);
    assert_eq!(typo.code, Some(2), "{typo:?}");
    assert!(
        typo.stderr
            .contains("error: no recorded resource type \"deploymnet\"")
            && typo.stderr.contains("hint: did you mean \"deployment\"?"),
        "{}",
        typo.stderr
    );
    let object = env.run(&["timeline", "deploy/frontedn"]);
    assert_eq!(object.code, Some(1), "{object:?}");
    assert!(
        object
            .stderr
            .contains("hint: did you mean \"deployment/frontend\"?"),
        "{}",
        object.stderr
    );
    let far = env.run(&["get", "cm/zzzzzz"]);
    assert!(!far.stderr.contains("did you mean"), "{}", far.stderr);
    assert_eq!(
        far.stderr.lines().next().map(|l| l.starts_with("error: ")),
        Some(true)
    );
}
