//! `record` end to end: the real binary against the simulator, with the journal
//! checked against the simulator's own event log.

use crate::common;

use common::Env;
use krply::journal::records::{CheckpointInfo, CheckpointReason};
use krply::journal::schema::kind;
use serde_json::json;
use std::time::Duration;

const CM: &str = "configmaps.v1@shop";
const DEPLOY: &str = "deployments.v1.apps@shop";

fn new_cm(name: &str, labels: serde_json::Value) -> serde_json::Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "shop", "labels": labels},
        "data": {"greeting": "hello"}
    })
}

/// The list resourceVersion of the stream's last baseline.
fn last_baseline_rv(env: &Env, stream: &str) -> u64 {
    env.records(stream)
        .iter()
        .rev()
        .find(|r| r.kind == kind::BASELINE)
        .and_then(|r| r.resource_version.clone())
        .expect("a baseline")
        .parse()
        .unwrap()
}

#[test]
fn baseline_then_live_events_match_the_simulator_exactly() {
    let env = Env::shop();
    let rec = env.start_recorder(&["cm", "deploy"]);
    env.wait_baselines(1);

    // The baseline holds exactly the objects the simulator had.
    let listed: Vec<String> = env
        .records(CM)
        .iter()
        .filter(|r| r.kind == kind::BASELINE_ITEM)
        .map(|r| r.name.clone().unwrap())
        .collect();
    let mut expected: Vec<String> = env
        .sim
        .list("v1", "ConfigMap", Some("shop"))
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    let mut got = listed.clone();
    got.sort();
    expected.sort();
    assert_eq!(got, expected);
    for r in env
        .records(CM)
        .iter()
        .filter(|r| r.kind == kind::BASELINE_ITEM)
    {
        let body: serde_json::Value = serde_json::from_slice(r.body.as_ref().unwrap()).unwrap();
        assert_eq!(body["metadata"]["name"].as_str(), r.name.as_deref());
    }
    let base = last_baseline_rv(&env, CM);

    env.patch_cm("frontend-config", "log_level", "debug");
    env.sim
        .create(new_cm("temp", json!({"team": "a"})))
        .unwrap();
    env.sim
        .delete("v1", "ConfigMap", Some("shop"), "temp")
        .unwrap();
    env.scale("frontend", 3);

    let expected = env.sim_events("configmaps", "shop", base);
    assert_eq!(expected.len(), 3);
    env.wait_events(CM, 3);
    env.wait_events(DEPLOY, 1);
    let out = rec.stop();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stdout.contains("recorded"), "{}", out.stdout);

    // Same events, same order, same bytes: nothing lost, nothing added.
    assert_eq!(env.events(CM), expected);
    let types: Vec<String> = expected.iter().map(|e| e.0.clone()).collect();
    assert_eq!(types, ["MODIFIED", "ADDED", "DELETED"]);
    let deploy = env.events(DEPLOY);
    assert_eq!(
        deploy,
        env.sim_events("deployments", "shop", last_baseline_rv(&env, DEPLOY))
    );
    assert!(env.coverage(CM).complete());
    assert_eq!(env.coverage(CM).gaps, 0);
}

#[test]
fn a_dropped_connection_resumes_from_the_exact_resource_version() {
    let env = Env::shop();
    let rec = env.start_recorder(&["cm"]);
    env.wait_baselines(1);
    let base = last_baseline_rv(&env, CM);
    env.patch_cm("frontend-config", "a", "1");
    env.wait_events(CM, 1);
    let watches_before = count_watch_requests(&env);
    env.sim.drop_watches();
    // Changes while the recorder reconnects must all arrive, once.
    for i in 0..5 {
        env.patch_cm("feature-flags", "step", &i.to_string());
    }
    env.wait_for("a new watch request", || {
        count_watch_requests(&env) > watches_before
    });
    env.wait_events(CM, 6);
    env.patch_cm("frontend-config", "a", "2");
    env.wait_events(CM, 7);
    let out = rec.stop();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(env.events(CM), env.sim_events("configmaps", "shop", base));
    let cov = env.coverage(CM);
    assert_eq!(
        cov.gaps, 0,
        "a reconnect from an exact resourceVersion is no gap"
    );
    assert!(cov.complete());
    // The resume asked for the last recorded resourceVersion, not a relist.
    let resumed = env
        .sim
        .request_log()
        .into_iter()
        .filter(|r| r.path_and_query.contains("watch=true"))
        .nth(1)
        .expect("a second watch");
    let first_rv = env.events(CM)[0].2.clone();
    assert!(
        resumed
            .path_and_query
            .contains(&format!("resourceVersion={first_rv}")),
        "{}",
        resumed.path_and_query
    );
    assert_eq!(
        count_list_requests(&env),
        1,
        "no relist after a plain disconnect"
    );
}

/// Every connection the recorder holds to the API server has TCP keepalive
/// on (docs/consistency.md, "A silent watch"), so the kernel notices a peer
/// that vanished without closing. Seen from outside, in /proc: each
/// ESTABLISHED socket of the recorder has its keepalive timer armed (timer 2
/// in `/proc/net/tcp`; a socket without keepalive shows 0 when idle).
#[test]
fn every_connection_to_the_server_keeps_alive() {
    let env = Env::shop();
    let rec = env.start_recorder(&["cm"]);
    env.wait_baselines(1);
    env.wait_for("a watch request", || count_watch_requests(&env) > 0);
    common::wait_keepalive(&rec);
    assert_eq!(rec.stop().code, Some(0));
}

fn count_watch_requests(env: &Env) -> usize {
    env.sim
        .request_log()
        .iter()
        .filter(|r| {
            r.path_and_query.contains("/configmaps?") && r.path_and_query.contains("watch=true")
        })
        .count()
}

fn count_list_requests(env: &Env) -> usize {
    env.sim
        .request_log()
        .iter()
        .filter(|r| {
            r.path_and_query.contains("/configmaps?") && !r.path_and_query.contains("watch=")
        })
        .count()
}

#[test]
fn bookmarks_advance_the_checkpoint_and_change_no_object() {
    let env = Env::shop();
    let rec = env.start_recorder(&["cm"]);
    env.wait_baselines(1);
    // Writes elsewhere move the global resourceVersion; bookmarks carry it.
    env.scale("frontend", 2);
    let target: u64 = env.sim.current_rv().parse().unwrap();
    env.wait_for(
        "a bookmark checkpoint at the current resourceVersion",
        || {
            env.records(CM).iter().any(|r| {
                r.kind == kind::CHECKPOINT
                    && r.resource_version
                        .as_deref()
                        .and_then(|v| v.parse::<u64>().ok())
                        >= Some(target)
                    && serde_json::from_str::<CheckpointInfo>(r.info.as_deref().unwrap_or(""))
                        .is_ok_and(|i| i.reason == CheckpointReason::Bookmark)
            })
        },
    );
    let out = rec.stop();
    assert_eq!(out.code, Some(0));
    assert!(
        env.events(CM).is_empty(),
        "a bookmark is never an object change"
    );
    let cov = env.coverage(CM);
    assert!(cov.last_rv.unwrap().parse::<u64>().unwrap() >= target);
    assert!(
        env.sim
            .request_log()
            .iter()
            .any(|r| r.path_and_query.contains("allowWatchBookmarks=true"))
    );
}

#[test]
fn sigterm_stops_cleanly_and_verbose_says_what_it_does() {
    let env = Env::shop();
    let rec = env.start_recorder(&["cm", "-v"]);
    env.wait_baselines(1);
    // The server sends a watch bookmarks only once something changed since
    // it started (kube-apiserver's watch cache does the same).
    env.patch_cm("frontend-config", "mode", "verbose");
    env.wait_for("a bookmark line", || {
        rec.log_text().contains("bookmark: complete up to")
    });
    rec.signal("TERM");
    let mut rec = rec;
    let out = rec.wait();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stdout.starts_with("recorded 1 event(s) in 1 stream(s)"),
        "{}",
        out.stdout
    );
    assert!(
        out.stderr.contains("watching from resourceVersion"),
        "{}",
        out.stderr
    );
    let last = env.records(CM).pop().unwrap();
    let info: CheckpointInfo = serde_json::from_str(last.info.as_deref().unwrap()).unwrap();
    assert_eq!(
        info.reason,
        CheckpointReason::Stop,
        "a clean stop is a durable point"
    );
}

#[test]
fn ctrl_c_during_start_up_stops_at_once() {
    let env = Env::shop();
    // A server that hangs (every answer takes two minutes) and no request
    // timeout: only the stop itself can end start-up in time.
    env.sim.set_delay(Duration::from_secs(120));
    let mut rec = env.start_recorder(&["cm", "--request-timeout", "0"]);
    // The journal exists once the writer lock is held, after the signal
    // handlers are installed.
    env.wait_for("the journal file", || env.store.exists());
    rec.signal("INT");
    let out = rec.wait();
    env.sim.set_delay(Duration::ZERO);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("stopped before recording started: nothing recorded"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("error"), "{}", out.stderr);
    // The journal is whole and the lock is free: the next recorder starts.
    let rec = env.start_recorder(&["cm"]);
    env.wait_baselines(1);
    assert_eq!(rec.stop().code, Some(0));
}

#[test]
fn a_server_that_hangs_is_an_error_after_the_request_timeout() {
    let env = Env::shop();
    env.sim.set_delay(Duration::from_secs(120));
    let out = env.run(&["record", "cm", "--request-timeout", "1s"]);
    env.sim.set_delay(Duration::ZERO);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr
            .starts_with("error: the API server at http://127.0.0.1:")
            && out.stderr.contains("did not answer within 1s"),
        "{}",
        out.stderr
    );
}

#[test]
fn no_bookmarks_means_none_are_asked_for() {
    let env = Env::shop();
    let rec = env.start_recorder(&["cm", "--no-bookmarks"]);
    env.wait_baselines(1);
    env.wait_for("a watch", || count_watch_requests(&env) > 0);
    let out = rec.stop();
    assert_eq!(
        out.code,
        Some(0),
        "the recorder stops cleanly: {}",
        out.stderr
    );
    assert!(
        !env.sim
            .request_log()
            .iter()
            .any(|r| r.path_and_query.contains("allowWatchBookmarks"))
    );
}

fn expire_and_check(env: &Env, args: &[&str], expire: impl Fn(&Env)) {
    let rec = env.start_recorder(args);
    env.wait_baselines(1);
    env.patch_cm("frontend-config", "before", "gap");
    env.wait_events(CM, 1);
    // Hold every request the recorder makes while history is lost, so that the
    // change below falls into the gap whatever the scheduling.
    env.sim.set_delay(Duration::from_millis(500));
    expire(env);
    // A change nobody watched: the relist shows its result, not the event.
    env.patch_cm("frontend-config", "during", "gap");
    env.sim.set_delay(Duration::ZERO);
    env.wait_baselines(2);
    let base2 = last_baseline_rv(env, CM);
    env.patch_cm("frontend-config", "after", "gap");
    env.wait_events(CM, 2);
    let out = rec.stop();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let cov = env.coverage(CM);
    assert_eq!(cov.gaps, 1, "exactly one gap: {:?}", cov.windows);
    assert_eq!(cov.windows.len(), 1);
    assert!(
        cov.windows[0].reason.contains("410"),
        "{}",
        cov.windows[0].reason
    );
    assert_eq!(
        cov.windows[0]
            .to_rv
            .as_deref()
            .map(|v| v.parse::<u64>().unwrap()),
        Some(base2)
    );
    assert_eq!(common::baselines(&env.journal(), &env.stream(CM)), 2);
    // The relisted object carries the change made in the gap.
    let relisted = env
        .records(CM)
        .into_iter()
        .rfind(|r| r.kind == kind::BASELINE_ITEM && r.name.as_deref() == Some("frontend-config"))
        .unwrap();
    let body: serde_json::Value = serde_json::from_slice(&relisted.body.unwrap()).unwrap();
    assert_eq!(body["data"]["during"], "gap");
    // Nothing from the gap is an event, and recording continued after the new baseline.
    let events = env.events(CM);
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(
        events.last().unwrap(),
        &env.sim_events("configmaps", "shop", base2)[0]
    );
    assert!(!cov.complete());
}

#[test]
fn a_410_in_the_stream_is_one_gap_then_a_new_baseline() {
    let env = Env::shop();
    expire_and_check(&env, &["cm"], |env| {
        env.sim.compact();
        env.sim.expire_watches();
    });
}

/// History the recorder has not seen is compacted away while it reconnects.
fn lose_history_while_reconnecting(env: &Env) {
    env.scale("frontend", 2);
    env.sim.compact();
    env.sim.drop_watches();
}

#[test]
fn a_410_at_watch_start_as_an_error_event_is_one_gap() {
    let env = Env::shop();
    expire_and_check(
        &env,
        &["cm", "--no-bookmarks"],
        lose_history_while_reconnecting,
    );
}

#[test]
fn a_410_at_watch_start_as_an_http_status_is_one_gap() {
    let env = Env::shop();
    env.sim.set_expired_as_http_status(true);
    expire_and_check(
        &env,
        &["cm", "--no-bookmarks"],
        lose_history_while_reconnecting,
    );
}

#[test]
fn a_forbidden_resource_is_unavailable_while_the_others_record() {
    let env = Env::shop();
    env.sim.forbid("configmaps", None);
    let rec = env.start_recorder(&["cm", "deploy"]);
    env.wait_for("the deployments baseline", || {
        std::panic::catch_unwind(|| env.coverage(DEPLOY).from.is_some()).unwrap_or(false)
    });
    env.scale("frontend", 4);
    env.wait_events(DEPLOY, 1);
    env.wait_for("configmaps marked unavailable", || {
        std::panic::catch_unwind(|| {
            env.coverage(CM).state == krply::journal::read::StreamState::Unavailable
        })
        .unwrap_or(false)
    });
    let out = rec.stop();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stderr.contains("403"), "{}", out.stderr);
    let cov = env.coverage(CM);
    assert!(!cov.complete());
    assert_eq!(cov.from, None);
    let table = env.run(&["coverage"]);
    assert_eq!(table.code, Some(0), "{}", table.stderr);
    let row = table
        .stdout
        .lines()
        .find(|l| l.starts_with(CM) && l.contains("unavailable since"))
        .unwrap_or_else(|| panic!("{}", table.stdout));
    assert!(
        row.contains("unavailable since") && row.contains("403 Forbidden"),
        "{row}"
    );
    assert!(
        out.stderr
            .contains("1 of 2 streams refused (configmaps.v1@shop)"),
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains("other streams keep recording"),
        "{}",
        out.stderr
    );
}

/// A recorder the server refuses on every stream records nothing, ever: it
/// ends at once with exit 1, as kubectl would, saying who was refused what and
/// where the roles are, instead of retrying for ever.
#[test]
fn a_recorder_refused_on_every_stream_exits_1_and_says_what_was_refused() {
    let env = Env::shop();
    env.sim.forbid("configmaps", None);
    env.sim.forbid("deployments", None);
    let mut rec = env.start_recorder(&["cm", "deploy", "--for", common::REFUSED_WITHIN]);
    let out = rec.wait();
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    let error = out
        .stderr
        .lines()
        .find(|l| l.starts_with("error:"))
        .unwrap_or_else(|| panic!("{}", out.stderr));
    assert!(
        error.contains("the server refused every stream (2 of 2)") && error.contains("403"),
        "{error}"
    );
    assert!(out.stderr.contains("docs/rbac/"), "{}", out.stderr);
    assert!(out.stderr.contains("also refused:"), "{}", out.stderr);
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
}

#[test]
fn a_restart_records_the_downtime_as_a_gap_and_duplicates_nothing() {
    let env = Env::shop();
    let rec = env.start_recorder(&["cm"]);
    env.wait_baselines(1);
    env.patch_cm("frontend-config", "run", "1");
    env.wait_events(CM, 1);
    assert_eq!(rec.stop().code, Some(0));
    let first_run = env.events(CM);

    env.patch_cm("frontend-config", "while", "stopped");
    let rec = env.start_recorder(&["cm"]);
    env.wait_baselines(2);
    env.patch_cm("frontend-config", "run", "2");
    env.wait_events(CM, 2);
    assert_eq!(rec.stop().code, Some(0));

    let cov = env.coverage(CM);
    assert_eq!(cov.gaps, 1);
    assert_eq!(cov.windows[0].reason, "recorder not running");
    assert!(cov.windows[0].to.is_some());
    let events = env.events(CM);
    assert_eq!(events[0], first_run[0]);
    assert_eq!(
        events.len(),
        2,
        "the change made while stopped is not an event: {events:?}"
    );
    let mut rvs: Vec<&String> = events.iter().map(|e| &e.2).collect();
    rvs.dedup();
    assert_eq!(rvs.len(), 2);
}

#[test]
fn a_second_recorder_is_refused_and_names_the_first() {
    let env = Env::shop();
    let rec = env.start_recorder(&["cm"]);
    env.wait_baselines(1);
    let second = env.run(&["record", "cm"]);
    assert_eq!(second.code, Some(1));
    let first_line = second.stderr.lines().next().unwrap();
    assert!(
        first_line.starts_with("error: stream configmaps.v1@shop of journal "),
        "{}",
        second.stderr
    );
    assert!(
        first_line.contains(&format!("pid {}", rec.pid())),
        "{}",
        second.stderr
    );
    // Readers still work while the recorder holds the lock.
    let status = env.run(&["status", "-o", "json"]);
    assert_eq!(status.code, Some(0), "{}", status.stderr);
    let v: serde_json::Value = serde_json::from_str(&status.stdout).unwrap();
    assert_eq!(v["recorder"]["running"], true);
    assert_eq!(rec.stop().code, Some(0));
}

#[test]
fn for_stops_by_itself_with_a_summary() {
    let env = Env::shop();
    let spawned = krply::time::Millis::now().as_ms();
    let mut rec = env.start_recorder(&["cm", "--for", "1s"]);
    let out = rec.wait();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stdout.starts_with("recorded 0 event(s) in 1 stream(s)"),
        "{}",
        out.stdout
    );
    let cov = env.coverage(CM);
    assert!(cov.complete());
    // The second counts from the start of the process (not from its first
    // list, which a loaded machine delays): covered up to then at least.
    assert!(cov.to.unwrap() >= spawned + 1_000, "{cov:?}");
}

#[test]
fn secrets_are_refused_or_stored_only_as_digests() {
    let env = Env::shop();
    let refused = env.run(&["record", "secrets", "--for", common::REFUSED_WITHIN]);
    assert_eq!(refused.code, Some(1));
    assert!(
        refused
            .stderr
            .starts_with("error: refusing to record secrets without --include-secrets")
    );

    let value = "correct-horse-battery-staple-42";
    let b64 = "Y29ycmVjdC1ob3JzZS1iYXR0ZXJ5LXN0YXBsZS00Mg==";
    env.sim
        .create(json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "db", "namespace": "shop", "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": format!("{{\"data\":{{\"password\":\"{b64}\"}}}}")
            }},
            "data": {"password": b64},
            "stringData": {"plain": value},
            "type": "Opaque"
        }))
        .unwrap();
    let rec = env.start_recorder(&["secrets", "--include-secrets"]);
    env.wait_baselines(1);
    env.sim
        .patch_merge(
            "v1",
            "Secret",
            Some("shop"),
            "db",
            &json!({"data": {"other": b64}}),
        )
        .unwrap();
    env.wait_events("secrets.v1@shop", 1);
    assert_eq!(rec.stop().code, Some(0));
    let mut bytes = std::fs::read(&env.store).unwrap();
    bytes.extend(std::fs::read(format!("{}-wal", env.store.display())).unwrap_or_default());
    for needle in [value, b64, "Y29ycmVjdC1ob3Jz"] {
        assert!(
            !bytes.windows(needle.len()).any(|w| w == needle.as_bytes()),
            "{needle} found in the journal file"
        );
    }
    let records = env.records("secrets.v1@shop");
    assert!(records.iter().any(|r| r.body.is_some()));
    for r in records.iter().filter_map(|r| r.body.as_ref()) {
        let text = String::from_utf8_lossy(r);
        assert!(!text.contains(value) && !text.contains(b64), "{text}");
        let v: serde_json::Value = serde_json::from_slice(r).unwrap();
        assert!(
            v["data"]["password"]
                .as_str()
                .unwrap()
                .starts_with("sha256:")
        );
    }
}

#[test]
fn all_namespaces_records_every_namespace_and_namespaces_themselves() {
    let env = Env::shop();
    let rec = env.start_recorder(&["-A"]);
    env.wait_baselines(1);
    let names: Vec<String> = env
        .journal()
        .streams(None)
        .unwrap()
        .iter()
        .map(|s| s.name())
        .collect();
    assert!(names.contains(&"configmaps.v1@*".to_string()), "{names:?}");
    assert!(names.contains(&"namespaces.v1".to_string()), "{names:?}");
    env.sim
        .create(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-b"}}))
        .unwrap();
    env.wait_for("the new namespace's configmap", || {
        std::panic::catch_unwind(|| {
            env.events("configmaps.v1@*")
                .iter()
                .any(|e| e.1 == "team-b/kube-root-ca.crt")
        })
        .unwrap_or(false)
    });
    env.wait_events("namespaces.v1", 1);
    assert_eq!(rec.stop().code, Some(0));
    let listed_namespaces: std::collections::BTreeSet<String> = env
        .records("configmaps.v1@*")
        .iter()
        .filter(|r| r.kind == kind::BASELINE_ITEM)
        .filter_map(|r| r.namespace.clone())
        .collect();
    assert!(listed_namespaces.contains("shop") && listed_namespaces.contains("kube-system"));
}

#[test]
fn a_label_selector_records_only_matching_objects() {
    let env = Env::shop();
    env.sim
        .create(new_cm("web-a", json!({"tier": "web"})))
        .unwrap();
    env.sim
        .create(new_cm("db-a", json!({"tier": "db"})))
        .unwrap();
    let rec = env.start_recorder(&["cm", "-l", "tier=web"]);
    env.wait_baselines(1);
    let stream = "configmaps.v1@shop?tier=web";
    let listed: Vec<String> = env
        .records(stream)
        .iter()
        .filter(|r| r.kind == kind::BASELINE_ITEM)
        .map(|r| r.name.clone().unwrap())
        .collect();
    assert_eq!(listed, ["web-a"]);
    env.patch_cm("db-a", "x", "1");
    env.patch_cm("web-a", "x", "1");
    env.wait_events(stream, 1);
    assert_eq!(rec.stop().code, Some(0));
    let events = env.events(stream);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].1, "shop/web-a");
}

/// Deletes the Widget CRD: its streams become unavailable (404).
pub(crate) fn delete_widget_crd(env: &Env) {
    env.sim
        .delete(
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            None,
            "widgets.example.com",
        )
        .unwrap();
}

pub(crate) fn create_widget_crd(env: &Env) {
    env.sim
        .create(json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
                "scope": "Namespaced",
                "versions": [{"name": "v1", "served": true, "storage": true,
                              "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]
            }
        }))
        .unwrap();
}

#[test]
fn a_removed_crd_makes_its_stream_unavailable_while_the_others_record() {
    let env = Env::shop();
    create_widget_crd(&env);
    env.sim
        .create(json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1", "namespace": "shop"}, "spec": {}}))
        .unwrap();
    let rec = env.start_recorder(&["widgets.example.com", "cm"]);
    env.wait_baselines(1);
    delete_widget_crd(&env);
    let stream = "widgets.v1.example.com@shop";
    env.wait_for("the widgets stream to become unavailable", || {
        std::panic::catch_unwind(|| {
            env.coverage(stream).state == krply::journal::read::StreamState::Unavailable
        })
        .unwrap_or(false)
    });
    env.patch_cm("frontend-config", "still", "recording");
    env.wait_events(CM, 1);
    let out = rec.stop();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stderr.contains("404"), "{}", out.stderr);
    // The object went away with its definition: that much was seen.
    assert!(
        env.events(stream)
            .iter()
            .any(|e| e.0 == "DELETED" && e.1 == "shop/w1")
    );
    let cov = env.coverage(stream);
    assert!(!cov.complete());
    assert!(
        cov.unavailable
            .as_ref()
            .is_some_and(|(_, r)| r.contains("404")),
        "{cov:?}"
    );
    assert!(env.coverage(CM).complete());
}

#[test]
fn a_custom_resource_is_recorded_with_its_unknown_fields() {
    let env = Env::shop();
    create_widget_crd(&env);
    env.sim
        .create(json!({
            "apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w1", "namespace": "shop"},
            "spec": {"size": 3, "someUnknownField": {"nested": [1, 2.5, "x"]}}
        }))
        .unwrap();
    let rec = env.start_recorder(&["wd"]);
    env.wait_baselines(1);
    env.sim
        .patch_merge(
            "example.com/v1",
            "Widget",
            Some("shop"),
            "w1",
            &json!({"spec": {"size": 4}}),
        )
        .unwrap();
    let stream = "widgets.v1.example.com@shop";
    env.wait_events(stream, 1);
    assert_eq!(rec.stop().code, Some(0));
    let item = env
        .records(stream)
        .into_iter()
        .find(|r| r.kind == kind::BASELINE_ITEM)
        .unwrap();
    let body: serde_json::Value = serde_json::from_slice(&item.body.unwrap()).unwrap();
    assert_eq!(body["spec"]["someUnknownField"]["nested"][1], 2.5);
    assert_eq!(
        env.events(stream),
        env.sim_events("widgets", "shop", last_baseline_rv(&env, stream))
    );
}

#[test]
fn a_corrupt_journal_is_refused_and_left_alone() {
    let env = Env::shop();
    std::fs::create_dir_all(env.store.parent().unwrap()).unwrap();
    let garbage = b"SQLite format 2\0 definitely not ours".repeat(64);
    std::fs::write(&env.store, &garbage).unwrap();
    for args in [
        &["record", "cm", "--for", "1s"][..],
        &["coverage"],
        &["status"],
    ] {
        let out = env.run(args);
        assert_eq!(out.code, Some(1), "{args:?}: {}", out.stderr);
        assert!(out.stderr.starts_with("error: "), "{}", out.stderr);
        assert!(out.stderr.contains("not a krply journal"), "{}", out.stderr);
    }
    assert_eq!(std::fs::read(&env.store).unwrap(), garbage);
}

#[test]
fn kill_9_during_heavy_writes_leaves_a_sound_journal_and_the_next_run_resumes_with_a_gap() {
    let env = Env::shop();
    let rec = env.start_recorder(&["cm"]);
    env.wait_baselines(1);
    let base = last_baseline_rv(&env, CM);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let sim = env.sim.clone();
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) && i < 200_000 {
                let _ = sim.patch_merge(
                    "v1",
                    "ConfigMap",
                    Some("shop"),
                    "feature-flags",
                    &json!({"data": {"n": i.to_string()}}),
                );
                i += 1;
            }
        })
    };
    env.wait_events(CM, 500);
    rec.kill9();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();

    let conn = rusqlite::Connection::open(&env.store).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    drop(conn);
    let before = env.events(CM);
    assert!(before.len() >= 500);
    // What was journaled before the kill is the server's own log from the
    // list on, event by event and byte for byte, up to where it stops.
    let server = env.sim_events("configmaps", "shop", base);
    assert_eq!(
        before[..],
        server[..before.len()],
        "the journal is the server's log, cut short"
    );

    let rec = env.start_recorder(&["cm"]);
    env.wait_baselines(2);
    assert_eq!(rec.stop().code, Some(0));
    let cov = env.coverage(CM);
    assert_eq!(cov.gaps, 1);
    assert_eq!(cov.windows[0].reason, "recorder not running");
    // Coverage stops short of what was lost: every event of the server up to
    // the gap's start is journaled, none after it (they are the gap's).
    let from_rv: u64 = cov.windows[0].from_rv.as_deref().unwrap().parse().unwrap();
    let covered: Vec<_> = server
        .iter()
        .filter(|e| e.2.parse::<u64>().unwrap() <= from_rv)
        .cloned()
        .collect();
    assert_eq!(
        covered[..],
        before[..],
        "the coverage claims only what was journaled"
    );
    let events = env.events(CM);
    let mut rvs: Vec<&String> = events.iter().map(|e| &e.2).collect();
    rvs.sort();
    rvs.dedup();
    assert_eq!(rvs.len(), events.len(), "no duplicate events");
}

#[test]
fn a_malformed_line_is_never_journaled_and_nothing_is_lost() {
    let env = Env::shop();
    let rec = env.start_recorder(&["cm"]);
    env.wait_baselines(1);
    let base = last_baseline_rv(&env, CM);
    env.patch_cm("frontend-config", "k", "1");
    env.wait_events(CM, 1);
    env.sim.inject_malformed_line();
    env.patch_cm("frontend-config", "k", "2");
    env.wait_events(CM, 2);
    let out = rec.stop();
    assert_eq!(out.code, Some(0));
    assert!(
        out.stderr.contains("malformed watch line"),
        "{}",
        out.stderr
    );
    assert_eq!(env.events(CM), env.sim_events("configmaps", "shop", base));
    assert_eq!(env.coverage(CM).gaps, 0);
}

#[test]
fn throttling_is_retried_after_the_requested_delay_without_a_gap() {
    let env = Env::shop();
    let rec = env.start_recorder(&["cm"]);
    env.wait_baselines(1);
    let base = last_baseline_rv(&env, CM);
    env.sim.fail_next_requests(2, 429, Some(1));
    env.sim.drop_watches();
    env.patch_cm("frontend-config", "k", "1");
    env.wait_events(CM, 1);
    let out = rec.stop();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stderr.contains("429"), "{}", out.stderr);
    assert_eq!(env.events(CM), env.sim_events("configmaps", "shop", base));
    assert_eq!(env.coverage(CM).gaps, 0);
}

/// kube-apiserver opens a watch that starts exactly at etcd's compaction
/// revision and then refuses it in the stream with 500 "etcd event received
/// with PrevKv=nil", every time (tests/it/real/parity.rs pins that). The
/// recorder retries from the same resourceVersion three times, then records
/// a gap and relists instead of retrying for ever.
#[test]
fn a_watch_refused_in_the_stream_again_and_again_becomes_a_gap_and_a_relist() {
    let env = Env::shop();
    let rec = env.start_recorder(&["cm"]);
    env.wait_baselines(1);
    env.sim.fail_next_watches_in_stream(
        3,
        500,
        "InternalError",
        "Internal error occurred: etcd event received with PrevKv=nil (key=\"/registry/configmaps/shop/frontend-config\", modRevision=735, type=PUT)",
    );
    env.sim.drop_watches();
    env.wait_baselines(2);
    env.patch_cm("frontend-config", "k", "1");
    env.wait_events(CM, 1);
    let out = rec.stop();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let coverage = env.coverage(CM);
    assert_eq!(coverage.gaps, 1, "{coverage:?}");
    let reason = &coverage.windows[0].reason;
    assert!(
        reason.starts_with("the watch cannot be read past resourceVersion")
            && reason.contains("PrevKv=nil"),
        "{reason}"
    );
}

/// The feed says when, what changed from what to what, and who owns it; a
/// relist after a 410 says what it found that no watch saw, and the summary
/// counts it.
#[test]
fn the_feed_shows_values_and_managers_and_relists_say_what_they_found() {
    let env = Env::shop();
    let rec = env.start_recorder(&["cm"]);
    env.wait_baselines(1);
    env.patch_cm("feature-flags", "new-checkout", "true");
    env.wait_events("configmaps.v1@shop", 1);
    // History lost; two changes while nobody watches.
    env.sim.set_delay(Duration::from_millis(400));
    env.sim.compact();
    env.sim.expire_watches();
    env.patch_cm("frontend-config", "log_level", "debug");
    env.sim
        .delete("v1", "ConfigMap", Some("shop"), "currency-rates")
        .unwrap();
    env.sim.set_delay(Duration::ZERO);
    env.wait_baselines(2);
    let out = rec.stop();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let feed = out
        .stderr
        .lines()
        .find(|l| l.contains("configmap/feature-flags -n shop"))
        .unwrap_or_else(|| panic!("{}", out.stderr));
    let time = regex::Regex::new(r"^\d{2}:\d{2}:\d{2} MODIFIED ").unwrap();
    assert!(time.is_match(feed), "{feed}");
    assert!(
        feed.ends_with(r#"data.new-checkout: <none> -> "true"  (krply-sim)"#),
        "{feed}"
    );
    let relist = out
        .stderr
        .lines()
        .find(|l| l.contains("RELIST   configmaps.v1@shop"))
        .unwrap_or_else(|| panic!("{}", out.stderr));
    assert!(
        relist.contains(" (unwatched since ") && relist.ends_with("): 1 changed, 1 gone"),
        "{relist}"
    );
    assert!(
        out.stdout.contains("; 2 change(s) found by relists\n"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("found by relists 2"), "{}", out.stdout);
    for line in out
        .stderr
        .lines()
        .filter(|l| time.is_match(l) || l.contains("RELIST"))
    {
        assert!(line.chars().count() <= 120, "too wide: {line}");
    }
}

/// Patches one ConfigMap `n` times from another thread; returns the thread.
fn churn(
    env: &Env,
    namespace: &'static str,
    name: &'static str,
    from: u64,
    n: u64,
) -> std::thread::JoinHandle<()> {
    let sim = env.sim.clone();
    std::thread::spawn(move || {
        for i in from..from + n {
            sim.patch_merge(
                "v1",
                "ConfigMap",
                Some(namespace),
                name,
                &json!({"data": {"n": i.to_string()}}),
            )
            .unwrap();
        }
    })
}

/// Two recorders, of two namespaces, write one journal at once under churn;
/// one is killed with -9 and restarted while the other goes on. Every change
/// either recorder watched is one event, exactly once; the killed one's
/// stream has its gap; only a recorder of a stream already recorded is
/// refused, naming the one that records it.
#[test]
fn recorders_of_other_namespaces_share_one_journal_under_churn_and_kill_9() {
    const PAYMENTS: &str = "configmaps.v1@payments";
    let env = Env::shop();
    env.sim
        .create(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "payments"}}))
        .unwrap();
    env.sim
        .create(json!({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "ledger", "namespace": "payments"}, "data": {"n": "-1"}}))
        .unwrap();
    let shop = env.start_recorder(&["cm", "-n", "shop"]);
    let payments = env.start_recorder(&["cm", "-n", "payments"]);
    env.wait_for("both streams listed", || {
        let Ok(j) = krply::journal::Journal::open(&env.store) else {
            return false;
        };
        j.streams(None)
            .is_ok_and(|ss| ss.len() == 2 && ss.iter().all(|s| common::baselines(&j, s) >= 1))
    });

    let again = env.run(&["record", "cm", "-n", "payments"]);
    assert_eq!(again.code, Some(1), "{again:?}");
    assert!(
        again.stderr.starts_with(&format!(
            "error: stream {PAYMENTS} of journal {} is already being recorded by pid {} ",
            env.store.display(),
            payments.pid()
        )),
        "{}",
        again.stderr
    );
    let status = env.krply_json(&["status"], 0);
    let holders = status["recorder"]["holder"].as_str().unwrap();
    assert!(
        holders.contains(&format!("pid {}", shop.pid()))
            && holders.contains(&format!("pid {}", payments.pid())),
        "{holders}"
    );

    // Both write at once.
    let a = churn(&env, "shop", "feature-flags", 0, 300);
    let b = churn(&env, "payments", "ledger", 0, 300);
    a.join().unwrap();
    b.join().unwrap();
    env.wait_events(CM, 300);
    env.wait_events(PAYMENTS, 300);

    // One dies mid-write; the other goes on, then it comes back.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let b = {
        let (sim, stop) = (env.sim.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut i = 300u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) && i < 100_000 {
                sim.patch_merge(
                    "v1",
                    "ConfigMap",
                    Some("payments"),
                    "ledger",
                    &json!({"data": {"n": i.to_string()}}),
                )
                .unwrap();
                i += 1;
            }
        })
    };
    env.wait_events(PAYMENTS, 400);
    payments.kill9();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    b.join().unwrap();
    churn(&env, "shop", "feature-flags", 300, 200)
        .join()
        .unwrap();
    env.wait_events(CM, 500);
    let payments = env.start_recorder(&["cm", "-n", "payments"]);
    env.wait_for("the restarted recorder's relist", || {
        let j = env.journal();
        let s = env.stream(PAYMENTS);
        common::baselines(&j, &s) >= 2
    });
    assert_eq!(shop.stop().code, Some(0));
    assert_eq!(payments.stop().code, Some(0));

    let conn = rusqlite::Connection::open(&env.store).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    let (all, distinct): (i64, i64) = conn
        .query_row(
            "SELECT count(*), count(DISTINCT seq) FROM records",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(all, distinct, "one sequence for both writers");
    drop(conn);
    for (stream, exact) in [(CM, Some(500)), (PAYMENTS, None)] {
        let events = env.events(stream);
        let mut rvs: Vec<&String> = events.iter().map(|e| &e.2).collect();
        rvs.sort();
        rvs.dedup();
        assert_eq!(rvs.len(), events.len(), "{stream}: no duplicate events");
        if let Some(n) = exact {
            assert_eq!(events.len(), n, "{stream}: every watched change, once");
        } else {
            assert!(events.len() >= 400, "{stream}: {}", events.len());
        }
    }
    assert_eq!(env.coverage(CM).gaps, 0, "the other recorder never stopped");
    let cov = env.coverage(PAYMENTS);
    assert_eq!(cov.gaps, 1);
    assert_eq!(cov.windows[0].reason, "recorder not running");
    // Against the server's own log, event by event: the journal holds every
    // event of the server up to where the gap begins, and none after it
    // until the relist; coverage claims nothing the kill lost.
    let first_list = |stream: &str| -> u64 {
        env.records(stream)
            .iter()
            .find(|r| r.kind == kind::BASELINE)
            .and_then(|r| r.resource_version.as_deref()?.parse().ok())
            .expect("a first list")
    };
    let server = env.sim_events("configmaps", "payments", first_list(PAYMENTS));
    let from_rv: u64 = cov.windows[0].from_rv.as_deref().unwrap().parse().unwrap();
    let to_rv: u64 = cov.windows[0].to_rv.as_deref().unwrap().parse().unwrap();
    let journaled = env.events(PAYMENTS);
    let before: Vec<_> = server
        .iter()
        .filter(|e| e.2.parse::<u64>().unwrap() <= from_rv)
        .cloned()
        .collect();
    let after: Vec<_> = server
        .iter()
        .filter(|e| e.2.parse::<u64>().unwrap() > to_rv)
        .cloned()
        .collect();
    let expected: Vec<_> = before.iter().chain(&after).cloned().collect();
    // (Compared by type, object and resourceVersion first, for a short
    // message; then byte for byte.)
    type Event = (String, String, String, Vec<u8>);
    let short = |es: &[Event]| -> Vec<(String, String, String)> {
        es.iter()
            .map(|(t, o, rv, _)| (t.clone(), o.clone(), rv.clone()))
            .collect()
    };
    assert_eq!(
        short(&journaled),
        short(&expected),
        "the journal is the server's log, but for the gap"
    );
    assert!(journaled == expected, "bodies byte for byte");
    let shop_server = env.sim_events("configmaps", "shop", first_list(CM));
    assert_eq!(
        short(&env.events(CM)),
        short(&shop_server),
        "the other, whole"
    );
    assert!(env.events(CM) == shop_server, "bodies byte for byte");
    // The answer of each namespace stands on its own stream.
    let ledger = env.krply_json(&["get", "cm/ledger", "-n", "payments"], 0);
    let now = env
        .sim
        .get("v1", "ConfigMap", Some("payments"), "ledger")
        .unwrap();
    assert_eq!(ledger["data"], now["data"]);
}

/// A recorder stopped with SIGSTOP (Ctrl-Z, a suspended laptop) cannot date
/// what its watch delivers once it runs again: it records a gap from before
/// the freeze and relists, so the change made meanwhile is found by the
/// relist, never stamped late as a watched event (docs/consistency.md, "A
/// frozen recorder").
#[test]
fn a_frozen_recorder_records_a_gap_and_relists_rather_than_stamp_events_late() {
    use krply::recorder::pulse::FREEZE_LIMIT_MS;
    use krply::time::Millis;
    let env = Env::shop();
    let rec = env.start_recorder(&["cm"]);
    env.wait_baselines(1);
    env.patch_cm("frontend-config", "watched", "1");
    env.wait_events(CM, 1);

    // Every thread of the recorder is stopped before the change is made.
    rec.freeze();
    let frozen_at = Millis::now().as_ms();
    env.patch_cm("frontend-config", "while", "frozen");
    let changed_at = Millis::now().as_ms();
    // Frozen for longer than the limit, by the clock (not a sleep to wait
    // for something to happen: the freeze is what is tested).
    env.wait_for("the freeze to outlast the limit", || {
        Millis::now().as_ms() > frozen_at + FREEZE_LIMIT_MS + 300
    });
    let thawed_at = Millis::now().as_ms();
    rec.signal("CONT");
    env.wait_baselines(2);
    env.patch_cm("frontend-config", "watched", "2");
    env.wait_events(CM, 2);
    let out = rec.stop();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stderr.contains("frozen for"), "{}", out.stderr);

    // One gap, from before the freeze to after it.
    let cov = env.coverage(CM);
    assert_eq!(cov.gaps, 1, "{:?}", cov.windows);
    let gap = &cov.windows[0];
    assert!(gap.reason.starts_with("recorder frozen for "), "{gap:?}");
    assert!(
        gap.from <= frozen_at,
        "{gap:?} starts after the freeze at {frozen_at}"
    );
    assert!(gap.to.is_some_and(|to| to >= thawed_at), "{gap:?}");
    // The change made while frozen is no watched event...
    let events = env.events(CM);
    assert_eq!(events.len(), 2, "{events:?}");
    // ...but found by the relist, within the gap.
    let log = env.krply_json(
        &[
            "log",
            "cm/frontend-config",
            "--since",
            &Millis::from_ms(frozen_at - 1).to_string(),
        ],
        0,
    );
    let entries = log["entries"].as_array().unwrap();
    let relist = entries
        .iter()
        .find(|e| e["type"] == "RELIST")
        .unwrap_or_else(|| panic!("no relist finding: {log:#}"));
    assert_eq!(relist["fields"][0]["path"], "data.while", "{relist:#}");
    // And nothing claims to know the object during the freeze.
    let during = Millis::from_ms(changed_at + 200).to_string();
    let out = env.run(&["get", "cm/frontend-config", "--at", &during, "--strict"]);
    assert_eq!(out.code, Some(3), "{out:?}");
}

/// A stream back more than 10 s after the server's last word cannot date
/// what the server replays: the ConfigMaps, changed meanwhile, get a gap
/// saying how long they were away, and a relist finds the change. The
/// Deployments, unchanged meanwhile, are replayed nothing: they resume with
/// no gap and no relist (docs/consistency.md, "Gaps").
#[test]
fn back_late_is_a_gap_only_for_a_stream_the_server_replays_something_to() {
    use krply::time::Millis;
    let env = Env::shop();
    let rec = env.start_recorder(&["cm", "deploy"]);
    env.wait_baselines(1);
    env.patch_cm("frontend-config", "watched", "1");
    env.wait_events(CM, 1);

    // Every request held, the watches ended: both streams are away.
    env.sim.hold_requests();
    env.sim.drop_watches();
    let away_from = Millis::now().as_ms();
    env.patch_cm("frontend-config", "while", "away");
    // Away longer than the limit, by the clock: the length is the point.
    env.wait_for("the streams to be away longer than the limit", || {
        Millis::now().as_ms() > away_from + krply::recorder::stream::LATE_LIMIT_MS + 500
    });
    env.sim.release_requests();
    let released = Millis::now().as_ms();
    env.wait_for("the ConfigMaps relisted", || {
        crate::common::baselines(&env.journal(), &env.stream(CM)) >= 2
    });
    // A change once what the server replays is surely in: one made in
    // the first moments back would count as replayed.
    env.wait_settled(DEPLOY, released);
    env.scale("frontend", 4);
    env.wait_events(DEPLOY, 1);
    let out = rec.stop();
    assert_eq!(out.code, Some(0), "{}", out.stderr);

    let cm = env.coverage(CM);
    assert_eq!(cm.gaps, 1, "{:?}", cm.windows);
    assert!(
        cm.windows[0].reason.starts_with("not connected for "),
        "{:?}",
        cm.windows[0]
    );
    assert!(cm.windows[0].from <= away_from, "{:?}", cm.windows[0]);
    let relist = env.krply_json(
        &[
            "log",
            "cm/frontend-config",
            "--since",
            &Millis::from_ms(away_from).to_string(),
        ],
        0,
    );
    assert!(
        relist["entries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["type"] == "RELIST" && e["fields"][0]["path"] == "data.while"),
        "{relist:#}"
    );
    let deploy = env.coverage(DEPLOY);
    assert_eq!(deploy.gaps, 0, "{:?}", deploy.windows);
    assert_eq!(
        crate::common::baselines(&env.journal(), &env.stream(DEPLOY)),
        1,
        "the Deployments did not relist"
    );
}

/// A recorder held up while a burst arrives (here another process holds the
/// journal's write lock while 6,000 writes are made over five seconds, more
/// than the writer's batch and queue hold, and 5 s after) reads what waited in its socket
/// seconds late. The times the server wrote into each
/// object show it: the stream records a gap saying how far behind it fell,
/// and relists, rather than stamp those versions late. Every version left
/// outside a gap is stamped within 2 s of when the server says it was made
/// (docs/consistency.md, "A recorder behind").
#[test]
fn a_recorder_behind_a_burst_records_a_gap_rather_than_stamp_late() {
    use krply::recorder::stream::BEHIND_LIMIT_MS;
    use krply::time::Millis;
    let env = Env::shop();
    env.sim
        .create(serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "churn", "namespace": "shop"}, "data": {"n": "0"}}))
        .expect("the churned ConfigMap");
    let rec = env.start_recorder(&["cm"]);
    env.wait_baselines(1);

    let lock = rusqlite::Connection::open(&env.store).expect("journal opens");
    lock.busy_timeout(Duration::from_secs(10)).unwrap();
    lock.execute_batch("BEGIN IMMEDIATE")
        .expect("the write lock");
    // Over five seconds of the server's clock (it writes times to the
    // second): only a time newer than all before is evidence, and each new
    // second is a chance to weigh one.
    for round in 0..5 {
        let second = Millis::now().as_ms() / 1_000;
        env.wait_for("the next second", || Millis::now().as_ms() / 1_000 > second);
        for n in 1..=1_200 {
            env.sim
                .patch_merge(
                    "v1",
                    "ConfigMap",
                    Some("shop"),
                    "churn",
                    &serde_json::json!({"data": {"n": (round * 1_200 + n).to_string()}}),
                )
                .expect("patch");
        }
    }
    // Held up for 5 s more by the clock: the length is the point.
    let written_at = Millis::now().as_ms();
    env.wait_for("the recorder held up for 5 s more", || {
        Millis::now().as_ms() > written_at + 5_000
    });
    lock.execute_batch("ROLLBACK").unwrap();
    drop(lock);
    env.wait_for("a gap for the time it was behind, and a relist", || {
        let cov = env.coverage(CM);
        eprintln!("DEBUG {:?} {}", cov.windows, env.events(CM).len());
        cov.windows
            .iter()
            .any(|g| g.reason.contains("behind the server") && g.to.is_some())
    });
    env.patch_cm("frontend-config", "after", "1");
    env.wait_for("the change after the relist watched", || {
        env.events(CM).iter().any(|(_, name, _, body)| {
            name == "shop/frontend-config" && String::from_utf8_lossy(body).contains("after")
        })
    });
    let out = rec.stop();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stderr.contains("behind the server"), "{}", out.stderr);

    // Against the server's own times (the simulator shares this clock):
    // nothing outside a gap is stamped later than the bound.
    let gaps = env.coverage(CM).windows;
    let records = env.records(CM);
    let mut judged = 0;
    for r in records
        .iter()
        .filter(|r| r.kind == krply::journal::schema::kind::EVENT)
    {
        if gaps
            .iter()
            .any(|g| g.from <= r.observed_at && g.to.is_none_or(|to| r.observed_at <= to))
        {
            continue;
        }
        let body: serde_json::Value = serde_json::from_slice(r.body.as_ref().unwrap()).unwrap();
        let Some(written) = body["metadata"]["managedFields"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m["time"].as_str())
            .filter_map(|t| Millis::parse_rfc3339(t).ok())
            .map(|t| t.as_ms())
            .max()
        else {
            continue;
        };
        judged += 1;
        assert!(
            r.observed_at - (written + 999) <= BEHIND_LIMIT_MS,
            "rv {:?} stamped {} ms after it was written, outside any gap: {gaps:?}",
            r.resource_version,
            r.observed_at - written
        );
    }
    assert!(judged > 0);
    eprintln!(
        "behind: {judged} versions judged outside gaps; gaps {:?}",
        gaps.iter().map(|g| &g.reason).collect::<Vec<_>>()
    );
}
