//! Lost history against the real server: a real 410 Gone after etcd
//! compaction, and recorder restarts (a clean stop and a crash).

use super::{RealEnv, mark};
use serde_json::Value;

/// The gaps of one stream in `coverage -o json`, as (reason).
fn gaps(coverage: &Value, stream_name: &str) -> Vec<String> {
    coverage["streams"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| {
            let ns = s["namespace"].as_str().unwrap_or("*");
            format!("{}@{ns}", qualified(s)) == stream_name
        })
        .flat_map(|s| s["gap_windows"].as_array().unwrap().clone())
        .map(|g| g["reason"].as_str().unwrap().to_string())
        .collect()
}

fn qualified(s: &Value) -> String {
    let group = s["group"].as_str().unwrap_or("");
    let base = format!(
        "{}.{}",
        s["resource"].as_str().unwrap(),
        s["version"].as_str().unwrap()
    );
    if group.is_empty() {
        base
    } else {
        format!("{base}.{group}")
    }
}

/// The entries of a timeline as (type, changed paths).
fn entries(timeline: &Value) -> Vec<(String, Vec<String>)> {
    timeline["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["type"].as_str().unwrap().to_string(),
                e["fields"]
                    .as_array()
                    .map(|f| {
                        f.iter()
                            .map(|f| f["path"].as_str().unwrap().to_string())
                            .collect()
                    })
                    .unwrap_or_default(),
            )
        })
        .collect()
}

/// The recorder's watches drop (a network blip); while it reconnects, a
/// ConfigMap changes and etcd compacts. ConfigMaps bypass the watch cache, so
/// the resumed watch reaches etcd and gets a real 410: exactly one gap, a
/// relist and a baseline, and recording goes on. Deployments resume from the
/// watch cache, which still holds their history: no gap there.
#[test]
fn a_watch_resumed_after_compaction_gets_410_then_one_gap_a_relist_and_goes_on() {
    const NS: &str = "gone";
    let mut env = RealEnv::new(NS);
    env.create_namespace(NS);
    env.kubectl_ok(&["create", "configmap", "flags", "--from-literal=v=1"]);
    env.kubectl_ok(&["create", "deployment", "web", "--image=nginx:1.27"]);
    let proxy = env.behind_proxy();

    let recorder = env.start_recorder(&["deployments", "configmaps"]);
    env.wait_baselines(1);
    let cm = format!("configmaps.v1@{NS}");
    let deploy = format!("deployments.v1.apps@{NS}");
    let t0 = mark();
    env.kubectl_ok(&["patch", "configmap/flags", "-p", r#"{"data":{"v":"2"}}"#]);
    env.wait_journaled(&cm, NS, "configmap/flags");
    // Quiet until nothing of the change can be in flight: the gap below
    // starts after it.
    env.wait_settled(&cm, krply::time::Millis::now().as_ms());
    // A word from the server to the Deployments' watch just before the cut:
    // a watch answered more than 10 s after its last word does not resume
    // (docs/consistency.md, "Gaps"), and this one must.
    env.kubectl_ok(&["annotate", "deployment/web", "krply.test/touched=1"]);
    env.wait_journaled(&deploy, NS, "deployment/web");

    let connections = proxy.accepted();
    proxy.cut_and_hold();
    env.wait_real("the recorder to reconnect (held by the proxy)", || {
        proxy.waiting() > 0
    });
    env.kubectl_ok(&["patch", "configmap/flags", "-p", r#"{"data":{"v":"3"}}"#]);
    env.kubectl_ok(&["scale", "deployment/web", "--replicas=2"]);
    env.kube.compact();
    proxy.release();

    env.wait_real("a relist of the ConfigMaps", || {
        crate::common::baselines(&env.journal(), &env.stream(&cm)) >= 2
    });
    env.wait_journaled(&deploy, NS, "deployment/web");
    assert!(
        proxy.accepted() > connections,
        "it came back through the proxy"
    );
    env.kubectl_ok(&["patch", "configmap/flags", "-p", r#"{"data":{"v":"4"}}"#]);
    env.wait_journaled(&cm, NS, "configmap/flags");
    let stopped = recorder.stop();
    assert_eq!(stopped.code, Some(0), "{stopped:?}");
    assert!(
        stopped.stderr.contains("410") || stopped.stderr.contains("too old"),
        "the recorder says why it relisted:\n{}",
        stopped.stderr
    );

    let coverage = env.krply_json(&["coverage"], 0);
    assert_eq!(env.run(&["coverage", "--strict"]).code, Some(3));
    let cm_gaps = gaps(&coverage, &cm);
    assert_eq!(cm_gaps.len(), 1, "{coverage:#}");
    assert!(gaps(&coverage, &deploy).is_empty(), "{coverage:#}");

    // The timeline: the live change, the gap, the relist that found v=3
    // (changed at an unknown time inside the gap), then live again.
    let timeline = env.krply_json(&["timeline", "configmap/flags"], 0);
    assert_eq!(
        entries(&timeline),
        [
            ("BASELINE".to_string(), vec![]),
            ("MODIFIED".to_string(), vec!["data.v".to_string()]),
            ("GAP".to_string(), vec![]),
            ("BASELINE".to_string(), vec!["data.v".to_string()]),
            ("MODIFIED".to_string(), vec!["data.v".to_string()]),
        ],
        "{timeline:#}"
    );
    assert_eq!(timeline["complete"], false);
    let relist = &timeline["entries"][3];
    assert_eq!(relist["observed"], "relist", "{timeline:#}");
    assert_eq!(
        relist["between"]["to"], relist["observed_at"],
        "{timeline:#}"
    );

    // A diff across the gap answers, says it is incomplete, and --strict
    // makes that exit 3.
    let diff = env.krply_json(&["diff", "--since", &t0], 0);
    assert_eq!(diff["complete"], false, "{diff:#}");
    // Part of the ConfigMap's change happened inside the gap.
    let flags = diff["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["name"] == "flags")
        .unwrap();
    assert_eq!(flags["observed"], "relist", "{diff:#}");
    assert_eq!(
        flags["between"]["from"], timeline["entries"][2]["observed_at"],
        "the gap's start"
    );
    let strict = env.run(&["diff", "--since", &t0, "--strict"]);
    assert_eq!(strict.code, Some(3), "{strict:?}");
}

/// A recorder stopped cleanly, then one killed, then a third: each downtime
/// is one gap per stream, and no event is journaled twice.
#[test]
fn restarts_and_crashes_give_downtime_gaps_and_no_duplicates() {
    const NS: &str = "restart";
    let env = RealEnv::new(NS);
    env.create_namespace(NS);
    env.kubectl_ok(&["create", "configmap", "flags", "--from-literal=v=1"]);
    let cm = format!("configmaps.v1@{NS}");
    let set = |v: &str| {
        env.kubectl_ok(&[
            "patch",
            "configmap/flags",
            "-p",
            &format!(r#"{{"data":{{"v":"{v}"}}}}"#),
        ]);
    };

    let first = env.start_recorder(&[]);
    env.wait_baselines(1);
    // Each change journaled, then quiet until nothing of it can be in
    // flight: the gap that follows starts after it.
    let settle = || env.wait_settled(&cm, krply::time::Millis::now().as_ms());
    set("2");
    env.wait_journaled(&cm, NS, "configmap/flags");
    settle();
    assert_eq!(first.stop().code, Some(0));
    set("3");

    let second = env.start_recorder(&[]);
    env.wait_baselines(2);
    set("4");
    env.wait_journaled(&cm, NS, "configmap/flags");
    settle();
    second.kill9();
    set("5");

    let third = env.start_recorder(&[]);
    env.wait_baselines(3);
    set("6");
    env.wait_journaled(&cm, NS, "configmap/flags");
    assert_eq!(third.stop().code, Some(0));

    // Each downtime is one gap per stream. The real server may add a 410 of
    // its own to a watch that starts right after a list (seen once under
    // load: the watch cache had moved past the list's resourceVersion); that
    // is a gap too, said as such, and the relist closes it.
    let coverage = env.krply_json(&["coverage"], 0);
    let server_410 = |g: &Value| g["reason"].as_str().unwrap().starts_with("410 ");
    for stream in coverage["streams"].as_array().unwrap() {
        let windows: Vec<&Value> = stream["gap_windows"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|g| !server_410(g))
            .collect();
        assert_eq!(windows.len(), 2, "{stream:#}");
        for g in windows {
            assert!(g["reason"].as_str().unwrap().contains("not running"), "{g}");
        }
    }
    // Live events of the ConfigMap: the three changes seen live, once each.
    let events = env.events(&cm);
    let rvs: Vec<&str> = events.iter().map(|(_, _, rv, _)| rv.as_str()).collect();
    let mut unique = rvs.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(rvs.len(), unique.len(), "an event journaled twice: {rvs:?}");
    let values: Vec<String> = events
        .iter()
        .map(|(_, _, _, body)| {
            let v: Value = serde_json::from_slice(body).unwrap();
            v["data"]["v"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(values, ["2", "4", "6"]);
    // Against the server's own record: its audit log has every write, with
    // when it completed (at Metadata level for ConfigMaps: no bodies, so by
    // their order, 2 to 6). The two made while no recorder watched (after a
    // clean stop, after the kill) fall inside the gaps: coverage claims
    // nothing that was lost.
    let writes: Vec<i64> = env
        .kube
        .ready
        .audited_writes()
        .into_iter()
        .filter(|w| w.verb == "patch" && w.namespace.as_deref() == Some(NS) && w.name == "flags")
        .map(|w| w.at)
        .collect();
    assert_eq!(writes.len(), 5, "the patches 2 to 6");
    let cm_coverage = coverage["streams"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["resource"] == "configmaps")
        .unwrap();
    let gaps: Vec<(i64, i64)> = cm_coverage["gap_windows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| !server_410(g))
        .map(|g| {
            let t = |k: &str| {
                krply::time::Millis::parse_rfc3339(g[k].as_str().unwrap())
                    .unwrap()
                    .as_ms()
            };
            (t("from"), t("to"))
        })
        .collect();
    // Patches 3 and 5 (the second and fourth) fell into the downtimes.
    for (lost, gap) in [writes[1], writes[3]].iter().zip(&gaps) {
        assert!(
            gap.0 <= *lost && *lost <= gap.1,
            "a write at {lost} is not inside the gap {gap:?}: coverage claims what was lost"
        );
    }
    // And the three journaled were observed after they were written.
    let observed: Vec<i64> = env
        .records(&cm)
        .iter()
        .filter(|r| r.kind == krply::journal::schema::kind::EVENT)
        .map(|r| r.observed_at)
        .collect();
    for (at, written) in observed.iter().zip([writes[0], writes[2], writes[4]]) {
        assert!(
            *at >= written - 1_000,
            "observed at {at}, written at {written}"
        );
    }
    // The timeline shows what the relists found inside the downtime.
    // (A server's 410 is a GAP entry too, and its relist a BASELINE that
    // found the version already known: left out here, as above.)
    let mut timeline = env.krply_json(&["timeline", "configmap/flags"], 0);
    let all = timeline["entries"].as_array().unwrap().clone();
    let mut kept = Vec::new();
    let mut after_410 = false;
    for e in all {
        if e["type"] == "GAP" && server_410(&e["gap"]) {
            after_410 = true;
            continue;
        }
        if after_410 && e["type"] == "BASELINE" && e["observed"] == "list" {
            after_410 = false;
            continue;
        }
        after_410 = false;
        kept.push(e);
    }
    timeline["entries"] = Value::Array(kept);
    assert_eq!(
        entries(&timeline)
            .iter()
            .map(|(t, _)| t.as_str())
            .collect::<Vec<_>>(),
        [
            "BASELINE", "MODIFIED", "GAP", "BASELINE", "MODIFIED", "GAP", "BASELINE", "MODIFIED"
        ],
        "{timeline:#}"
    );
}
