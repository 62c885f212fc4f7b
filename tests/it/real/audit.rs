//! Who did it, on the real server's own audit log (docs/audit.md): the admin
//! and a user impersonated with `kubectl --as` change a Deployment (logged at
//! RequestResponse level: exact matches) and a ConfigMap (logged at Metadata
//! level: likely matches); `audit import`, then `diff`, `timeline`, `log`,
//! `get` and `coverage` name the right user for each change.

use super::{RealEnv, diff_object as object, mark};
use serde_json::Value;

const NS: &str = "audit-who";
const ADMIN: &str = "krply-admin";
const ALICE: &str = "alice@example.com";
const CONTROLLER: &str = "system:serviceaccount:kube-system:deployment-controller";

/// Runs kubectl as alice, impersonated by the admin (who may: system:masters).
fn as_alice(env: &RealEnv, args: &[&str]) {
    let mut all = args.to_vec();
    all.extend(["--as", ALICE, "--as-group", "system:masters"]);
    env.kubectl_ok(&all);
}

fn field<'a>(obj: &'a Value, path: &str) -> &'a Value {
    obj["fields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == path)
        .unwrap_or_else(|| panic!("no field {path} in:\n{obj:#}"))
}

/// `(user, impersonated_by, match)` of a change's actor.
fn actor(v: &Value) -> (String, Value, String) {
    let a = &v["actor"];
    assert!(a.is_object(), "no actor in:\n{v:#}");
    assert!(
        a["audit_id"].as_str().is_some_and(|id| id.len() == 36),
        "{a:#}"
    );
    (
        a["user"].as_str().unwrap().to_string(),
        a["impersonated_by"].clone(),
        a["match"].as_str().unwrap().to_string(),
    )
}

#[test]
fn the_audit_log_names_who_made_each_change() {
    let env = RealEnv::new(NS);
    env.create_namespace(NS);
    let recorder = env.start_recorder(&["deployments", "configmaps"]);
    env.wait_baselines(1);
    env.kubectl_ok(&["create", "deployment", "web", "--image=nginx:1.27"]);
    env.kubectl_ok(&[
        "create",
        "configmap",
        "flags",
        "--from-literal=checkout=off",
    ]);
    env.wait_journaled("configmaps.v1@audit-who", NS, "configmap/flags");
    env.wait_journaled("deployments.v1.apps@audit-who", NS, "deployment/web");
    let t0 = mark();

    as_alice(
        &env,
        &["set", "image", "deployment/web", "nginx=nginx:1.28"],
    );
    env.wait_journaled("deployments.v1.apps@audit-who", NS, "deployment/web");
    env.kubectl_ok(&["label", "deployment/web", "team=payments"]);
    env.wait_journaled("deployments.v1.apps@audit-who", NS, "deployment/web");
    as_alice(
        &env,
        &[
            "patch",
            "configmap/flags",
            "--type=merge",
            "-p",
            r#"{"data":{"checkout":"on"}}"#,
        ],
    );
    env.wait_journaled("configmaps.v1@audit-who", NS, "configmap/flags");
    let t1 = mark();
    env.kubectl_ok(&["delete", "configmap/flags"]);
    env.wait_deleted("configmaps.v1@audit-who", NS, "configmap/flags");
    let t2 = mark();
    // The log has the delete once kube-apiserver wrote its line.
    let log = env.kube.ready.audit_log.clone();
    env.wait_real("the delete in the audit log", || {
        std::fs::read_to_string(&log).is_ok_and(|text| {
            text.lines().any(|l| {
                l.contains(r#""verb":"delete""#)
                    && l.contains(r#""name":"flags""#)
                    && l.contains(NS)
                    && l.contains("ResponseComplete")
            })
        })
    });

    let imported = env.krply_json(&["audit", "import", log.to_str().unwrap()], 0);
    assert!(imported["stored"].as_u64().unwrap() >= 5, "{imported:#}");
    // Other tests' namespaces share the server and its log; this journal
    // never recorded them.
    assert!(imported["unrecorded"].as_u64().unwrap() > 0, "{imported:#}");
    // Importing it again stores nothing new.
    let again = env.krply_json(&["audit", "import", log.to_str().unwrap()], 0);
    assert_eq!(again["stored"], 0, "{again:#}");

    // RequestResponse level: the response carried the resourceVersion.
    let diff = env.krply_json(&["diff", "--since", &t0, "--until", &t1], 0);
    // Each field has its own actor.
    let web = object(&diff, "Deployment", "web");
    assert_eq!(
        actor(field(web, "spec.template.spec.containers[0].image")),
        (ALICE.into(), Value::from(ADMIN), "exact".into())
    );
    assert_eq!(
        actor(field(web, "metadata.labels.team")),
        (ADMIN.into(), Value::Null, "exact".into())
    );
    // Metadata level: no resourceVersion, so likely.
    let flags = object(&diff, "ConfigMap", "flags");
    assert_eq!(
        actor(field(flags, "data.checkout")),
        (ALICE.into(), Value::from(ADMIN), "likely".into())
    );
    let deleted = env.krply_json(&["diff", "--since", &t1, "--until", &t2], 0);
    let gone = object(&deleted, "ConfigMap", "flags");
    assert_eq!(gone["change"], "deleted");
    assert_eq!(actor(gone), (ADMIN.into(), Value::Null, "likely".into()));

    // Only what alice did.
    let by = env.krply_json(&["diff", "--since", &t0, "--until", &t1, "--by", ALICE], 0);
    let paths: Vec<(String, String)> = by["objects"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|o| {
            o["fields"].as_array().unwrap().iter().map(|f| {
                (
                    o["name"].as_str().unwrap().to_string(),
                    f["path"].as_str().unwrap().to_string(),
                )
            })
        })
        .collect();
    assert_eq!(
        paths,
        [
            ("flags".to_string(), "data.checkout".to_string()),
            (
                "web".to_string(),
                "spec.template.spec.containers[0].image".to_string()
            )
        ]
    );

    // The text says it the way people read it.
    let text = env.run(&["diff", "--since", &t0, "--until", &t1]);
    let text = &text.stdout;
    assert!(
        text.contains(&format!("by {ALICE} (kubectl-set)")),
        "{text}"
    );
    assert!(
        text.contains(&format!("by {ADMIN} (kubectl-label)")),
        "{text}"
    );
    assert!(
        text.contains(&format!("likely by {ALICE} (kubectl-patch)")),
        "{text}"
    );

    // The Deployment's timeline: the admin created it, alice changed the
    // image, and the deployment controller wrote its status, all exact.
    let timeline = env.krply_json(&["timeline", "deploy/web", "--include-status"], 0);
    let entries = timeline["entries"].as_array().unwrap();
    let users: Vec<(String, String)> = entries
        .iter()
        .filter(|e| e["type"] != "BASELINE" && e["type"] != "GAP")
        .map(|e| {
            let (user, _, how) = actor(e);
            (user, how)
        })
        .collect();
    assert_eq!(
        users[0],
        (ADMIN.to_string(), "exact".to_string()),
        "{users:?}"
    );
    assert!(
        users.contains(&(ALICE.to_string(), "exact".to_string())),
        "{users:?}"
    );
    assert!(
        users.contains(&(
            "system:serviceaccount:kube-system:deployment-controller".to_string(),
            "exact".to_string()
        )),
        "{users:?}"
    );

    // log --by keeps one user's changes; get says who made the version.
    let log_out = env.krply_json(&["log", "--since", &t0, "--by", ADMIN], 0);
    let kinds: Vec<&str> = log_out["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] != "GAP")
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    // The label on web, then the ConfigMap's deletion.
    assert_eq!(kinds, ["MODIFIED", "DELETED"], "{log_out:#}");
    // The last version is the label's, or the controller's status after it.
    let got = env.run(&["get", "deploy/web"]);
    let note = &got.stderr;
    assert!(
        [
            ADMIN,
            "system:serviceaccount:kube-system:deployment-controller"
        ]
        .iter()
        .any(|u| note.contains(&format!("was made by {u} (with ")))
            && note.contains("audit ID "),
        "{note}"
    );

    // coverage says what the audit logs cover.
    let coverage = env.krply_json(&["coverage"], 0);
    assert!(
        coverage["audit"]["covered"]
            .as_array()
            .is_some_and(|c| !c.is_empty()),
        "{coverage:#}"
    );
    let out = recorder.stop();
    assert_eq!(
        out.code,
        Some(0),
        "the recorder stops cleanly: {}",
        out.stderr
    );
}

/// `record --audit-log` on the real server's live log: a ConfigMap created as
/// alice is named hers (likely: ConfigMaps are logged at Metadata level)
/// while the recorder runs, with no import.
#[test]
fn record_follows_the_real_servers_audit_log() {
    const NS2: &str = "audit-follow";
    let env = RealEnv::new(NS2);
    env.create_namespace(NS2);
    let log = env.kube.ready.audit_log.to_str().unwrap().to_string();
    let recorder = env.start_recorder(&["configmaps", "--audit-log", &log]);
    env.wait_baselines(1);
    as_alice(
        &env,
        &["create", "configmap", "flags", "--from-literal=a=1"],
    );
    env.wait_journaled("configmaps.v1@audit-follow", NS2, "configmap/flags");
    env.wait_real("alice named while recording", || {
        let out = env.run(&["timeline", "cm/flags", "-o", "json"]);
        serde_json::from_str::<Value>(&out.stdout).is_ok_and(|t| {
            t["entries"].as_array().is_some_and(|es| {
                es.iter().any(|e| {
                    e["type"] == "ADDED"
                        && e["actor"]["user"] == ALICE
                        && e["actor"]["match"] == "likely"
                })
            })
        })
    });
    let out = recorder.stop();
    assert_eq!(
        out.code,
        Some(0),
        "the recorder stops cleanly: {}",
        out.stderr
    );
}

/// A change only a relist found takes its actors from the audit writes inside
/// its stretch (issue 28, bug 3): alice scales while no recorder runs, the
/// controller then writes the status; the relist finds the version the
/// controller made, and `spec.replicas` still goes to alice.
#[test]
fn a_relist_found_scale_is_alices_though_the_controller_wrote_last() {
    const NS: &str = "audit-relist";
    let env = RealEnv::new(NS);
    env.create_namespace(NS);
    env.kubectl_ok(&["create", "deployment", "web", "--image=nginx:1.27"]);
    let recorder = env.start_recorder(&["deployments"]);
    env.wait_baselines(1);
    let out = recorder.stop();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let t0 = mark();
    as_alice(&env, &["scale", "deployment/web", "--replicas=3"]);
    // The controller has seen the new spec and written the status.
    env.wait_real("the controller's status write", || {
        let d = env.get_json("deploy/web", NS);
        d["status"]["observedGeneration"] == d["metadata"]["generation"]
    });
    let recorder = env.start_recorder(&["deployments"]);
    env.wait_baselines(2);
    let out = recorder.stop();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let log = env.kube.ready.audit_log.clone();
    env.wait_real("the scale in the audit log", || {
        std::fs::read_to_string(&log).is_ok_and(|text| {
            text.lines().any(|l| {
                l.contains(r#""subresource":"scale""#)
                    && l.contains(NS)
                    && l.contains("ResponseComplete")
            })
        })
    });
    let imported = env.krply_json(&["audit", "import", log.to_str().unwrap()], 0);
    assert!(imported["stored"].as_u64().unwrap() >= 2, "{imported:#}");

    let answer = env.krply_json(&["log", "deploy/web", "--since", &t0], 0);
    let relist = answer["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["type"] == "RELIST")
        .unwrap_or_else(|| panic!("no relist finding in:\n{answer:#}"));
    let replicas = field(relist, "spec.replicas");
    assert_eq!(replicas["after"], 3, "{relist:#}");
    let (user, by, matched) = actor(replicas);
    assert_eq!(
        (user.as_str(), by),
        (ALICE, Value::from(ADMIN)),
        "{relist:#}"
    );
    assert!(matched == "likely" || matched == "exact", "{relist:#}");
    // diff over the same stretch says the same.
    let diff = env.krply_json(&["diff", "deploy/web", "--since", &t0], 0);
    let web = object(&diff, "Deployment", "web");
    assert_eq!(web["observed"], "relist", "{web:#}");
    assert_eq!(actor(field(web, "spec.replicas")).0, ALICE, "{web:#}");

    // With the status shown, its fields are the controller's (it writes
    // through the status subresource), and the change has no one author.
    let answer = env.krply_json(
        &["log", "deploy/web", "--since", &t0, "--include-status"],
        0,
    );
    let relist = answer["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["type"] == "RELIST")
        .unwrap_or_else(|| panic!("no relist finding in:\n{answer:#}"));
    assert_eq!(actor(field(relist, "spec.replicas")).0, ALICE, "{relist:#}");
    assert_eq!(relist["actor_unknown"], "ambiguous", "{relist:#}");
    let status: Vec<&Value> = relist["fields"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["path"].as_str().unwrap().starts_with("status"))
        .collect();
    assert!(!status.is_empty(), "{relist:#}");
    for f in status {
        if f["actor"].is_object() {
            let (user, _, _) = actor(f);
            assert_eq!(user, CONTROLLER, "{relist:#}");
        } else {
            // Several controller writes in the stretch: ambiguous, never alice.
            assert_eq!(f["actor_unknown"], "ambiguous", "{relist:#}");
        }
    }
}
