//! `audit import` and the join on audit logs made by hand (docs/audit.md), for
//! the edge cases a real server does not produce on demand: a rotated log
//! (gzip), a cut last line, two candidates, a controller's writes, another
//! cluster's objects, a log that starts after the recording, and bad input.
//! The real server's own log is in `real/audit.rs`.
//!
//! The lines are written in the real format (the shape kube-apiserver v1.37
//! writes, see `src/audit/parse.rs`), for changes the simulator made and the
//! recorder journaled, at the times it observed them.

use crate::common::Env;
use krply::journal::read::RecordView;
use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};

const DEPLOY: &str = "deployments.v1.apps@shop";
const CM: &str = "configmaps.v1@shop";

/// A recorded change, as an audit line needs it.
struct Seen {
    at: i64,
    rv: String,
    uid: String,
}

fn seen(r: &RecordView) -> Seen {
    let body: Value = serde_json::from_slice(r.body.as_ref().unwrap()).unwrap();
    Seen {
        at: r.observed_at,
        rv: r.resource_version.clone().unwrap(),
        uid: body["metadata"]["uid"].as_str().unwrap().to_string(),
    }
}

fn time(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .unwrap()
        .strftime("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string()
}

/// What one hand-made audit line says.
struct Line<'a> {
    n: u32,
    verb: &'a str,
    user: &'a str,
    resource: (&'a str, &'a str),
    name: &'a str,
    subresource: Option<&'a str>,
    at: i64,
    /// RequestResponse level: the response object's resourceVersion and uid.
    response: Option<(&'a str, &'a str)>,
}

impl Line<'_> {
    fn json(&self) -> String {
        let (group, resource) = self.resource;
        let mut object_ref = json!({"resource": resource, "namespace": "shop", "name": self.name,
                                     "apiVersion": "v1"});
        if !group.is_empty() {
            object_ref["apiGroup"] = json!(group);
        }
        if let Some(s) = self.subresource {
            object_ref["subresource"] = json!(s);
        }
        let mut e = json!({
            "kind": "Event", "apiVersion": "audit.k8s.io/v1",
            "level": if self.response.is_some() { "RequestResponse" } else { "Metadata" },
            "auditID": format!("00000000-0000-4000-8000-{:012x}", self.n),
            "stage": "ResponseComplete",
            "requestURI": format!("/apis/{group}/v1/namespaces/shop/{resource}/{}", self.name),
            "verb": self.verb,
            "user": {"username": self.user, "groups": ["system:authenticated"]},
            "sourceIPs": ["10.0.0.7"],
            "userAgent": "kubectl/v1.37.2 (linux/amd64) kubernetes/$Format",
            "objectRef": object_ref,
            "responseStatus": {"metadata": {}, "code": 200},
            "requestReceivedTimestamp": time(self.at - 2),
            "stageTimestamp": time(self.at),
        });
        if let Some((rv, uid)) = self.response {
            e["responseObject"] = json!({"kind": "Deployment", "apiVersion": "apps/v1",
                "metadata": {"name": self.name, "namespace": "shop", "uid": uid,
                             "resourceVersion": rv},
                "spec": {"replicas": 3, "template": {"spec": {"containers": []}}}});
        }
        e.to_string()
    }
}

struct Recorded {
    env: Env,
    /// frontend's first change (scaled to 3) and second (scaled to 4).
    scale3: Seen,
    scale4: Seen,
    /// The ConfigMap's change.
    cm: Seen,
}

/// frontend scaled twice and a ConfigMap patched, journaled, recorder stopped.
fn recorded() -> Recorded {
    let env = Env::shop();
    let rec = env.start_recorder(&["deploy", "cm"]);
    env.wait_baselines(1);
    env.scale("frontend", 3);
    env.wait_events(DEPLOY, 1);
    env.scale("frontend", 4);
    env.wait_events(DEPLOY, 2);
    env.patch_cm("feature-flags", "checkout", "on");
    env.wait_events(CM, 1);
    let out = rec.stop();
    assert_eq!(
        out.code,
        Some(0),
        "the recorder stops cleanly: {}",
        out.stderr
    );
    let events = |stream: &str| -> Vec<Seen> {
        env.records(stream)
            .iter()
            .filter(|r| r.kind == krply::journal::schema::kind::EVENT)
            .map(seen)
            .collect()
    };
    let deploy = events(DEPLOY);
    let cm = events(CM);
    let mut deploy = deploy.into_iter();
    Recorded {
        scale3: deploy.next().unwrap(),
        scale4: deploy.next().unwrap(),
        cm: cm.into_iter().next().unwrap(),
        env,
    }
}

fn write_log(dir: &Path, name: &str, lines: &[String], tail: &str) -> PathBuf {
    let path = dir.join(name);
    let text = format!("{}\n{tail}", lines.join("\n"));
    if name.ends_with(".gz") {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(text.as_bytes()).unwrap();
        std::fs::write(&path, enc.finish().unwrap()).unwrap();
    } else {
        std::fs::write(&path, text).unwrap();
    }
    path
}

/// The fields of `diff` for one object, each as (path, actor user or why not, match).
fn actors(env: &Env, since: i64, name: &str) -> Vec<(String, String, String)> {
    let since = krply::time::Millis::from_ms(since).to_string();
    let diff = env.krply_json(&["diff", "--since", &since], 0);
    let obj = diff["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in:\n{diff:#}"))
        .clone();
    obj["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let who = f["actor"]["user"]
                .as_str()
                .or(f["actor_unknown"].as_str())
                .unwrap_or("-")
                .to_string();
            (
                f["path"].as_str().unwrap().to_string(),
                who,
                f["actor"]["match"].as_str().unwrap_or("-").to_string(),
            )
        })
        .collect()
}

fn deploy_line<'a>(n: u32, user: &'a str, s: &'a Seen, exact: bool) -> Line<'a> {
    Line {
        n,
        verb: "patch",
        user,
        resource: ("apps", "deployments"),
        name: "frontend",
        subresource: None,
        at: s.at - 3,
        response: exact.then_some((s.rv.as_str(), s.uid.as_str())),
    }
}

#[test]
fn a_rotated_gzip_log_and_the_live_one_each_name_their_change() {
    let r = recorded();
    let dir = r.env.dir.path();
    let older = write_log(
        dir,
        "audit-2026-12-01T10-00-00.000.log.gz",
        &[deploy_line(1, "alice@example.com", &r.scale3, true).json()],
        "",
    );
    // The live file: its last line was being written when it was copied.
    let live_line = deploy_line(2, "bob@example.com", &r.scale4, true).json();
    let cut = deploy_line(3, "carol", &r.scale4, false).json();
    let live = write_log(dir, "audit.log", &[live_line], &cut[..cut.len() / 2]);
    let out = r.env.krply_json(
        &[
            "audit",
            "import",
            older.to_str().unwrap(),
            live.to_str().unwrap(),
        ],
        0,
    );
    assert_eq!(out["stored"], 2, "{out:#}");
    assert_eq!(out["truncated"], 1, "{out:#}");
    // Both changes of frontend's replicas: the last one (bob) is what the
    // field shows over the whole window.
    assert_eq!(
        actors(&r.env, r.scale3.at - 1, "frontend"),
        [(
            "spec.replicas".into(),
            "bob@example.com".into(),
            "exact".into()
        )]
    );
    assert_eq!(
        actors(&r.env, r.scale3.at - 1, "frontend")[0].1,
        "bob@example.com"
    );
    let first_only = krply::time::Millis::from_ms(r.scale3.at).to_string();
    let t = r.env.krply_json(&["timeline", "deploy/frontend"], 0);
    let users: Vec<&str> = t["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["actor"]["user"].as_str())
        .collect();
    assert_eq!(users, ["alice@example.com", "bob@example.com"], "{t:#}");
    // timeline --by keeps that user's changes (and any gaps).
    let alice = r.env.krply_json(
        &["timeline", "deploy/frontend", "--by", "alice@example.com"],
        0,
    );
    let kept: Vec<(&str, &str)> = alice["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["type"].as_str().unwrap(),
                e["actor"]["user"].as_str().unwrap_or("-"),
            )
        })
        .collect();
    assert_eq!(kept, [("MODIFIED", "alice@example.com")], "{alice:#}");
    let until_first = r.env.krply_json(
        &[
            "diff",
            "--since",
            &krply::time::Millis::from_ms(r.scale3.at - 1).to_string(),
            "--until",
            &first_only,
        ],
        0,
    );
    assert_eq!(
        until_first["objects"][0]["fields"][0]["actor"]["user"], "alice@example.com",
        "{until_first:#}"
    );
    // Again: nothing new.
    let again = r.env.krply_json(
        &[
            "audit",
            "import",
            older.to_str().unwrap(),
            live.to_str().unwrap(),
        ],
        0,
    );
    assert_eq!(
        (again["stored"].clone(), again["known"].clone()),
        (json!(0), json!(2))
    );
}

#[test]
fn two_candidates_stay_unknown_and_a_controller_is_named() {
    let r = recorded();
    let dir = r.env.dir.path();
    // Metadata level (no resourceVersion): two users patched the ConfigMap
    // within a second of the change: who made it is not known.
    let cm_line = |n, user| Line {
        n,
        verb: "patch",
        user,
        resource: ("", "configmaps"),
        name: "feature-flags",
        subresource: None,
        at: r.cm.at - 200 * n as i64,
        response: None,
    };
    // The deployment controller's status write made the first scale's
    // version: exact, by its service account.
    let controller = Line {
        verb: "update",
        subresource: Some("status"),
        ..deploy_line(
            5,
            "system:serviceaccount:kube-system:deployment-controller",
            &r.scale3,
            true,
        )
    };
    let log = write_log(
        dir,
        "audit.log",
        &[
            cm_line(1, "alice@example.com").json(),
            cm_line(2, "bob@example.com").json(),
            controller.json(),
        ],
        "",
    );
    r.env
        .krply_json(&["audit", "import", log.to_str().unwrap()], 0);
    assert_eq!(
        actors(&r.env, r.cm.at - 1, "feature-flags"),
        [("data.checkout".into(), "ambiguous".into(), "-".into())]
    );
    let until = krply::time::Millis::from_ms(r.scale3.at).to_string();
    let since = krply::time::Millis::from_ms(r.scale3.at - 1).to_string();
    let text = r.env.run(&["diff", "--since", &since, "--until", &until]);
    assert!(
        text.stdout
            .contains("by system:serviceaccount:kube-system:deployment-controller"),
        "{}",
        text.stdout
    );
    let cm_since = krply::time::Millis::from_ms(r.cm.at - 1).to_string();
    let text = r.env.run(&["diff", "--since", &cm_since]);
    assert!(
        text.stdout.contains("by ?") && text.stdout.contains("several audit events matched"),
        "{}",
        text.stdout
    );
}

#[test]
fn another_clusters_objects_and_a_log_that_starts_later_name_nobody() {
    let r = recorded();
    let dir = r.env.dir.path();
    // Another cluster's frontend: same name, its own uid and resourceVersion,
    // at the time of the second scale. Not this object: no actor.
    let other = Line {
        response: Some(("999999", "11111111-2222-3333-4444-555555555555")),
        ..deploy_line(7, "mallory", &r.scale4, false)
    };
    // The log covers the 6 s around the second scale (reads count: they show
    // the log was being written), and so begins after the first: that one is
    // not covered, the second is covered and matched by nothing.
    let read = |n, at| Line {
        verb: "get",
        at,
        ..deploy_line(n, "viewer", &r.scale4, false)
    };
    let log = write_log(
        dir,
        "audit.log",
        &[
            read(8, r.scale4.at - 5_000).json(),
            other.json(),
            read(9, r.scale4.at + 1_000).json(),
        ],
        "",
    );
    r.env
        .krply_json(&["audit", "import", log.to_str().unwrap()], 0);
    let since = krply::time::Millis::from_ms(r.scale3.at - 1).to_string();
    let first = krply::time::Millis::from_ms(r.scale3.at).to_string();
    let diff = r
        .env
        .krply_json(&["diff", "--since", &since, "--until", &first], 0);
    assert_eq!(
        diff["objects"][0]["fields"][0]["actor_unknown"], "not_covered",
        "{diff:#}"
    );
    let t = r.env.krply_json(&["timeline", "deploy/frontend"], 0);
    let second = t["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["resource_version"] == r.scale4.rv.as_str())
        .unwrap();
    assert!(second["actor"].is_null(), "{second:#}");
    assert_eq!(second["actor_unknown"], "no_match", "{second:#}");
    // --by names nobody here, and says so by keeping nothing.
    let by = r
        .env
        .krply_json(&["diff", "--since", &since, "--by", "mallory"], 0);
    assert_eq!(by["objects"], json!([]), "{by:#}");
}

#[test]
fn bad_input_is_one_error_and_stores_nothing() {
    let r = recorded();
    let dir = r.env.dir.path();
    let good = write_log(
        dir,
        "good.log",
        &[deploy_line(1, "alice@example.com", &r.scale3, true).json()],
        "",
    );
    let not_audit = write_log(
        dir,
        "pods.json",
        &[json!({"kind": "Pod", "apiVersion": "v1"}).to_string()],
        "",
    );
    let fake_gz = dir.join("audit.log.1.gz");
    std::fs::write(&fake_gz, "not gzip\n").unwrap();
    let sub = dir.join("logs");
    std::fs::create_dir(&sub).unwrap();
    for (bad, says) in [
        (&not_audit, "is not an audit log: line 1"),
        (&fake_gz, "is named like a gzip file and is not one"),
        (&sub, "is a directory"),
    ] {
        // The good file first: it is read, and still nothing is stored.
        let out = r.env.run(&[
            "audit",
            "import",
            good.to_str().unwrap(),
            bad.to_str().unwrap(),
        ]);
        assert_eq!(out.code, Some(1), "{}", out.stderr);
        let first = out.stderr.lines().next().unwrap();
        assert!(
            first.starts_with("error: ") && first.contains(says),
            "{}",
            out.stderr
        );
        assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    }
    let status = r.env.krply_json(&["status"], 0);
    assert!(status.get("audit").is_none(), "{status:#}");
    // A log to follow that is not there stops the recorder before it starts.
    let missing = dir.join("nope/audit.log");
    let out = r
        .env
        .run(&["record", "deploy", "--audit-log", missing.to_str().unwrap()]);
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(
        out.stderr.starts_with("error: cannot read audit log"),
        "{}",
        out.stderr
    );
    // --by without audit logs says what is missing.
    let out = r.env.run(&["diff", "--since", "1h", "--by", "alice"]);
    assert_eq!(out.code, Some(1));
    assert!(
        out.stderr.contains("--by needs audit logs"),
        "{}",
        out.stderr
    );
}

/// The people of the following test, as the simulator's audit log names them.
fn user(name: &str) -> krply_sim::SimUser<'_> {
    krply_sim::SimUser {
        name,
        groups: &["system:authenticated"],
        impersonated_by: None,
        user_agent: "kubectl/v1.37.2 (linux/amd64) kubernetes/$Format",
    }
}

/// Scales frontend as `who`, through the simulator, which logs it.
fn scale_as(env: &Env, replicas: i64, who: &str) {
    let mut d = env
        .sim
        .get("apps/v1", "Deployment", Some("shop"), "frontend")
        .unwrap();
    d["spec"]["replicas"] = json!(replicas);
    env.sim.update_as(d, "kubectl-scale", &user(who)).unwrap();
}

/// Who made each of frontend's recorded changes, as `timeline` says now.
fn frontend_actors(env: &Env) -> Vec<String> {
    let out = env.run(&["timeline", "deploy/frontend", "-o", "json"]);
    let Ok(t) = serde_json::from_str::<Value>(&out.stdout) else {
        return Vec::new();
    };
    t["entries"]
        .as_array()
        .map(|es| {
            es.iter()
                .filter(|e| e["type"] == "MODIFIED")
                .map(|e| {
                    e["actor"]["user"]
                        .as_str()
                        .or(e["actor_unknown"].as_str())
                        .unwrap_or("-")
                        .to_string()
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn record_follows_the_audit_log_through_a_rotation_and_a_restart() {
    let env = Env::shop();
    let log = env.dir.path().join("audit.log");
    env.sim.audit_to(&log).unwrap();
    let log_arg = log.to_str().unwrap().to_string();
    let rec = env.start_recorder(&["deploy", "--audit-log", &log_arg]);
    env.wait_baselines(1);
    scale_as(&env, 3, "alice@example.com");
    env.wait_for("alice named", || {
        frontend_actors(&env) == ["alice@example.com"]
    });
    // Rotation as kube-apiserver does it: the file is renamed, a write still
    // lands in it, then a new file takes the name.
    std::fs::rename(
        &log,
        env.dir.path().join("audit-2026-12-01T10-00-00.000.log"),
    )
    .unwrap();
    scale_as(&env, 4, "bob@example.com");
    env.sim.audit_to(&log).unwrap();
    scale_as(&env, 5, "carol@example.com");
    env.wait_for("bob and carol named", || {
        frontend_actors(&env) == ["alice@example.com", "bob@example.com", "carol@example.com"]
    });
    let out = rec.stop();
    assert_eq!(out.code, Some(0), "{}", out.stderr);

    // Started again, it goes on from where it stopped.
    let rec = env.start_recorder(&["deploy", "--audit-log", &log_arg]);
    env.wait_baselines(2);
    scale_as(&env, 6, "dave@example.com");
    env.wait_for("dave named", || {
        frontend_actors(&env).last().map(String::as_str) == Some("dave@example.com")
    });
    let out = rec.stop();
    assert_eq!(
        out.code,
        Some(0),
        "the recorder stops cleanly: {}",
        out.stderr
    );
    assert_eq!(
        frontend_actors(&env),
        [
            "alice@example.com",
            "bob@example.com",
            "carol@example.com",
            "dave@example.com"
        ]
    );
    // Read without a break, across the rotation and the restart: one stretch.
    let coverage = env.krply_json(&["coverage"], 0);
    assert_eq!(
        coverage["audit"]["covered"].as_array().map(Vec::len),
        Some(1),
        "{coverage:#}"
    );
}
