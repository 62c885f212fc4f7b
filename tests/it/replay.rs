//! Replay end to end: recorded from the simulator, planned with a server-side
//! dry run, applied only with --confirm.

use crate::common;

use common::{Env, Output};
use krply_sim::{Seed, SimConfig, Simulator};
use serde_json::{Value, json};

/// The shop recorded with extra objects that exercise every rule. Plans are
/// made at a time the recording covers (`--at` is added by `plan`).
fn recorded() -> Env {
    let env = Env::shop();
    let sim = &env.sim;
    // Objects the plan must leave out, or fix.
    sim.create(json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "namespace": "shop"}, "data": {"p": "eA=="}})).unwrap();
    sim.create(json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "debug", "namespace": "shop"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}})).unwrap();
    sim.create(json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "migrate", "namespace": "shop"}, "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "m", "image": "migrate:1"}]}}}})).unwrap();
    sim.create(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "reader", "namespace": "shop"}, "rules": []})).unwrap();
    sim.create(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "shop"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})).unwrap();
    sim.create(json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "frontend-abc", "namespace": "shop",
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "frontend", "uid": "x", "controller": true}]},
        "spec": {"selector": {"matchLabels": {"app": "frontend", "pod-template-hash": "abc"}}, "template": {"metadata": {"labels": {"app": "frontend", "pod-template-hash": "abc"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}})).unwrap();
    sim.create(json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "public", "namespace": "shop"}, "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]}})).unwrap();
    sim.create(json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "admin", "namespace": "shop"},
        "spec": {"type": "NodePort", "clusterIP": "10.96.0.99", "selector": {"app": "admin"}, "ports": [{"port": 80, "nodePort": 30080}]}})).unwrap();
    sim.create(json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "cache", "namespace": "shop", "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
        "spec": {"selector": {"matchLabels": {"app": "cache"}}, "template": {"metadata": {"labels": {"app": "cache"}},
        "spec": {"containers": [{"name": "redis", "image": "redis:7", "env": [{"name": "PEER", "value": "redis.shop.svc.cluster.local"}], "volumeMounts": [{"name": "scratch", "mountPath": "/data"}]}],
                 "volumes": [{"name": "scratch", "emptyDir": {}}]}}}})).unwrap();
    let rec = env.start_recorder(&[
        "deploy",
        "svc",
        "cm",
        "secrets",
        "--include-secrets",
        "pods",
        "jobs",
        "roles",
        "pvc",
        "rs",
        "sa",
    ]);
    env.wait_baselines(1);
    let at = krply::time::Millis::now();
    std::fs::write(env.dir.path().join("at"), at.to_string()).unwrap();
    assert_eq!(rec.stop().code, Some(0));
    env
}

/// A time the recording covers.
fn at(env: &Env) -> String {
    std::fs::read_to_string(env.dir.path().join("at")).unwrap()
}

fn plan(env: &Env, extra: &[&str]) -> (Output, Value) {
    let at = if env.dir.path().join("at").exists() {
        at(env)
    } else {
        String::new()
    };
    let mut args = vec![
        "replay",
        "plan",
        "--to-namespace",
        "shop-copy",
        "-o",
        "json",
    ];
    if !at.is_empty() && !extra.contains(&"--at") {
        args.extend(["--at", at.as_str()]);
    }
    args.extend_from_slice(extra);
    let out = env.run(&args);
    let v = serde_json::from_str(&out.stdout).unwrap_or(Value::Null);
    (out, v)
}

fn manifest<'a>(plan: &'a Value, kind: &str, name: &str) -> &'a Value {
    &plan["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == kind && o["name"] == name)
        .unwrap_or_else(|| panic!("{kind}/{name} not planned"))["manifest"]
}

fn reason<'a>(plan: &'a Value, kind: &str, name: &str) -> &'a str {
    plan["excluded"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == kind && e["name"] == name)
        .unwrap_or_else(|| panic!("{kind}/{name} not excluded: {}", plan["excluded"]))["reason"]
        .as_str()
        .unwrap()
}

#[test]
fn a_plan_is_sanitized_mapped_ordered_and_dry_run() {
    let env = recorded();
    let before = env.sim.event_log().len();
    let (out, p) = plan(&env, &[]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(p["status"], "dry-run-ok", "{p:#}");
    assert_eq!(
        env.sim.event_log().len(),
        before,
        "a dry run writes nothing"
    );
    assert!(env.sim.get("v1", "Namespace", None, "shop-copy").is_none());
    let id = p["id"].as_str().unwrap();
    assert_eq!(id.len(), 8);
    assert_eq!(p["source"]["namespace"], "shop");
    assert_eq!(p["target"]["namespace"], "shop-copy");
    assert_eq!(p["complete"], true);

    // Order: Namespace, config, Services, workloads.
    let kinds: Vec<&str> = p["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    let tier = |k: &str| {
        [
            "Namespace",
            "ConfigMap",
            "ServiceAccount",
            "Service",
            "Deployment",
        ]
        .iter()
        .position(|t| *t == k)
        .unwrap()
    };
    assert_eq!(kinds[0], "Namespace");
    assert!(
        kinds.windows(2).all(|w| tier(w[0]) <= tier(w[1])),
        "{kinds:?}"
    );
    let orders: Vec<u64> = p["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["order"].as_u64().unwrap())
        .collect();
    assert_eq!(orders, (1..=orders.len() as u64).collect::<Vec<_>>());

    // Namespace mapping, in metadata and the Namespace itself.
    assert_eq!(
        manifest(&p, "Namespace", "shop-copy")["metadata"]["name"],
        "shop-copy"
    );
    for o in p["objects"].as_array().unwrap().iter().skip(1) {
        assert_eq!(
            o["manifest"]["metadata"]["namespace"], "shop-copy",
            "{}",
            o["name"]
        );
        assert_eq!(o["namespace"], "shop-copy");
    }
    // Sanitization: server fields gone, emptyDir kept, per-kind fixes.
    for o in p["objects"].as_array().unwrap() {
        let m = &o["manifest"];
        for field in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "generation",
            "managedFields",
            "ownerReferences",
        ] {
            assert!(
                m["metadata"].get(field).is_none(),
                "{field} in {}",
                o["name"]
            );
        }
        assert!(m.get("status").is_none(), "status in {}", o["name"]);
    }
    let svc = manifest(&p, "Service", "frontend");
    assert!(svc["spec"].get("clusterIP").is_none() && svc["spec"].get("clusterIPs").is_none());
    let admin = manifest(&p, "Service", "admin");
    assert_eq!(admin["spec"]["type"], "NodePort");
    assert!(admin.to_string().contains("\"port\":80"));
    assert!(
        !admin.to_string().contains("nodePort"),
        "a fixed node port would collide: {admin}"
    );
    let cache = manifest(&p, "Deployment", "cache");
    assert_eq!(
        cache["spec"]["template"]["spec"]["volumes"][0]["emptyDir"],
        json!({})
    );
    assert!(
        cache["metadata"].get("annotations").is_none(),
        "last-applied is dropped"
    );
    assert!(
        p["warnings"].to_string().contains(".shop.svc"),
        "{}",
        p["warnings"]
    );

    // Exclusions, each with its reason.
    assert!(reason(&p, "Secret", "db").contains("never replayed"));
    assert!(reason(&p, "Pod", "debug").contains("--include"));
    assert!(reason(&p, "Job", "migrate").contains("--include"));
    assert!(reason(&p, "Role", "reader").contains("RBAC"));
    assert!(reason(&p, "PersistentVolumeClaim", "data").contains("storage"));
    assert!(
        reason(&p, "ReplicaSet", "frontend-abc").contains("--include")
            || reason(&p, "ReplicaSet", "frontend-abc").contains("owned by")
    );
    assert!(reason(&p, "Service", "public").contains("LoadBalancer"));
    assert!(reason(&p, "Service", "frontend-external").contains("LoadBalancer"));
    assert!(reason(&p, "ConfigMap", "kube-root-ca.crt").contains("every namespace"));
    assert!(reason(&p, "ServiceAccount", "default").contains("every namespace"));
    manifest(&p, "ServiceAccount", "frontend");

    // Saved: show and list find it.
    let shown = env.run(&["replay", "show", id, "-o", "json"]);
    let shown: Value = serde_json::from_str(&shown.stdout).unwrap();
    assert_eq!(shown["objects"], p["objects"]);
    let list = env.run(&["replay", "list"]);
    assert!(
        list.stdout.lines().nth(1).unwrap().starts_with(id),
        "{}",
        list.stdout
    );
    let text = env.run(&["replay", "show", id]);
    assert!(text.stdout.contains("Excluded:"), "{}", text.stdout);
}

#[test]
fn include_brings_back_what_is_safe() {
    let env = recorded();
    let (out, p) = plan(
        &env,
        // Kinds as kubectl users type them: plural, short name, any case.
        &["--include", "jobs", "--include", "loadbalancer"],
    );
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let job = manifest(&p, "Job", "migrate");
    assert!(job["spec"].get("selector").is_none());
    // ServiceAccounts need no --include, and lose their token Secrets.
    let sa = manifest(&p, "ServiceAccount", "frontend");
    assert!(sa.get("secrets").is_none());
    manifest(&p, "Service", "public");
    // Still out: the default account and Secrets.
    reason(&p, "ServiceAccount", "default");
    let refused = env.run(&[
        "replay",
        "plan",
        "--to-namespace",
        "x",
        "--at",
        &at(&env),
        "--include",
        "Secret",
    ]);
    assert_eq!(refused.code, Some(2));
    assert!(
        refused.stderr.contains("Secrets are never replayed"),
        "{}",
        refused.stderr
    );
}

#[test]
fn refusals_are_one_line_and_write_nothing() {
    let env = recorded();
    let before = env.sim.event_log().len();
    let t = at(&env);
    let same = env.run(&["replay", "plan", "--to-namespace", "shop", "--at", &t]);
    assert_eq!(same.code, Some(1));
    assert!(
        same.stderr
            .starts_with("error: refusing to replay namespace shop into itself"),
        "{}",
        same.stderr
    );
    let excluded = env.run(&[
        "replay",
        "plan",
        "secrets",
        "--to-namespace",
        "x",
        "--at",
        &t,
    ]);
    assert_eq!(excluded.code, Some(1));
    assert!(
        excluded
            .stderr
            .starts_with("error: refusing to replay secrets"),
        "{}",
        excluded.stderr
    );
    // A context whose server is gone.
    let dead = env.dir.path().join("dead");
    std::fs::write(&dead, "apiVersion: v1\nkind: Config\nclusters:\n- name: dead\n  cluster:\n    server: http://127.0.0.1:9\ncontexts:\n- name: dead\n  context:\n    cluster: dead\nusers: []\n").unwrap();
    let unreachable = env
        .command()
        .env(
            "KUBECONFIG",
            format!("{}:{}", env.kubeconfig.display(), dead.display()),
        )
        .args([
            "replay",
            "plan",
            "--to-namespace",
            "x",
            "--at",
            &t,
            "--target-context",
            "dead",
        ])
        .output()
        .unwrap();
    let unreachable = Output {
        code: unreachable.status.code(),
        stdout: String::from_utf8_lossy(&unreachable.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&unreachable.stderr).into_owned(),
    };
    assert_eq!(unreachable.code, Some(1));
    assert!(
        unreachable
            .stderr
            .starts_with("error: refusing to plan: cannot reach the target"),
        "{}",
        unreachable.stderr
    );
    let bad = env.run(&["replay", "plan", "--to-namespace", "Not_A_Name", "--at", &t]);
    assert_eq!(bad.code, Some(2));
    assert_eq!(env.sim.event_log().len(), before);
}

#[test]
fn incomplete_coverage_is_refused_unless_gaps_are_allowed() {
    let env = Env::shop();
    let rec = env.start_recorder(&["cm", "deploy"]);
    env.wait_baselines(1);
    env.sim.compact();
    env.sim.expire_watches();
    env.wait_baselines(2);
    let inside = env.coverage("configmaps.v1@shop").windows[0].clone();
    assert_eq!(rec.stop().code, Some(0));
    let at = krply::time::Millis::from_ms((inside.from + inside.to.unwrap()) / 2).to_string();
    let refused = env.run(&["replay", "plan", "--to-namespace", "x", "--at", &at]);
    assert_eq!(refused.code, Some(1));
    assert!(
        refused
            .stderr
            .starts_with("error: refusing to plan: the recording of namespace shop is incomplete"),
        "{}",
        refused.stderr
    );
    let (out, p) = plan(&env, &["--at", &at, "--allow-gaps"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(p["complete"], false);
    assert!(p["gaps"].to_string().contains("410"), "{}", p["gaps"]);
    assert!(p["warnings"].to_string().contains("not covered"));
}

#[test]
fn only_the_kinds_a_plan_can_hold_decide_its_completeness() {
    let env = Env::shop();
    let rec = env.start_recorder(&["cm", "deploy"]);
    env.wait_baselines(1);
    let now = krply::time::Millis::now();
    let at = now.to_string();
    // Recorded past `at` by more than what may be in flight: the gap from
    // the stop starts after it.
    env.wait_settled("configmaps.v1@shop", now.as_ms());
    env.wait_settled("deployments.v1.apps@shop", now.as_ms());
    assert_eq!(rec.stop().code, Some(0));
    // Secrets and jobs recorded only later: not covered at `at`.
    let rec = env.start_recorder(&["cm", "deploy", "jobs", "secrets", "--include-secrets"]);
    env.wait_for("the jobs and secrets baselines", || {
        let j = env.journal();
        let streams = j.streams(None).unwrap();
        streams.len() == 4 && streams.iter().all(|s| common::baselines(&j, s) >= 1)
    });
    assert_eq!(rec.stop().code, Some(0));

    let (out, p) = plan(&env, &["--at", &at]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(p["complete"], true, "{}", p["gaps"]);
    // Jobs are planned only with --include: then their coverage counts.
    let (out, p) = plan(&env, &["--at", &at, "--include", "Job", "--allow-gaps"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(p["complete"], false);
    assert!(
        p["gaps"].to_string().contains("jobs.v1.batch@shop"),
        "{}",
        p["gaps"]
    );
    assert!(!p["gaps"].to_string().contains("secrets"), "{}", p["gaps"]);
    // A time before anything was recorded is incomplete for every planned kind.
    let before =
        krply::time::Millis::from_ms(env.coverage("configmaps.v1@shop").from.unwrap() - 60_000)
            .to_string();
    let refused = env.run(&["replay", "plan", "--to-namespace", "x", "--at", &before]);
    assert_eq!(refused.code, Some(1), "{}", refused.stderr);
}

/// Creates namespace shop-copy and server-side-applies the shop frontend
/// Deployment into it with 7 replicas as field manager "helm".
fn helm_owns_frontend_replicas_in_shop_copy(sim: &Simulator) {
    sim.create(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop-copy"}}))
        .unwrap();
    let mut taken = sim
        .get("apps/v1", "Deployment", Some("shop"), "frontend")
        .unwrap();
    taken["metadata"] = json!({"name": "frontend", "namespace": "shop-copy"});
    taken["spec"]["replicas"] = json!(7);
    taken.as_object_mut().unwrap().remove("status");
    sim.apply(taken, "helm", false, false).unwrap();
}

#[test]
fn a_conflict_with_another_manager_fails_the_dry_run_and_names_the_field() {
    let env = recorded();
    // Someone else owns the frontend's replica count there.
    helm_owns_frontend_replicas_in_shop_copy(&env.sim);
    let (out, p) = plan(&env, &[]);
    // Printed and saved, and a failure for scripts: exit 1.
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(
        out.stderr.contains(&format!(
            "the dry run of plan {} failed",
            p["id"].as_str().unwrap()
        )),
        "{}",
        out.stderr
    );
    assert_eq!(p["status"], "dry-run-failed");
    let conflict = &p["dry_run"]["conflicts"][0];
    assert_eq!(conflict["name"], "frontend");
    assert!(
        conflict["fields"].to_string().contains(".spec.replicas"),
        "{conflict}"
    );
    assert!(
        conflict["message"].as_str().unwrap().contains("helm"),
        "{conflict}"
    );
    // A failed plan cannot be applied.
    let id = p["id"].as_str().unwrap();
    let refused = env.run(&["replay", "apply", id, "--confirm"]);
    assert_eq!(refused.code, Some(1));
    assert!(
        refused.stderr.contains("its status is dry-run-failed"),
        "{}",
        refused.stderr
    );
}

fn objects_in(sim: &Simulator, namespace: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (av, kind) in [
        ("v1", "ConfigMap"),
        ("v1", "Service"),
        ("apps/v1", "Deployment"),
        ("v1", "Secret"),
        ("batch/v1", "Job"),
        ("v1", "Pod"),
    ] {
        for o in sim.list(av, kind, Some(namespace)) {
            out.push(format!(
                "{kind}/{}",
                o["metadata"]["name"].as_str().unwrap()
            ));
        }
    }
    out.sort();
    out
}

#[test]
fn apply_needs_confirm_creates_exactly_the_plan_and_is_idempotent() {
    let env = recorded();
    let (out, p) = plan(&env, &[]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let id = p["id"].as_str().unwrap().to_string();
    let before = env.sim.event_log().len();
    let unconfirmed = env.run(&["replay", "apply", &id]);
    assert_eq!(unconfirmed.code, Some(1));
    assert!(
        unconfirmed
            .stderr
            .starts_with("error: refusing to apply plan"),
        "{}",
        unconfirmed.stderr
    );
    assert_eq!(
        env.sim.event_log().len(),
        before,
        "nothing written without --confirm"
    );
    // A bad flag is refused before anything is written, not after.
    let bad_flag = env.run(&["replay", "apply", &id, "--confirm", "-o", "table"]);
    assert_eq!(bad_flag.code, Some(2), "{}", bad_flag.stderr);
    assert_eq!(
        env.sim.event_log().len(),
        before,
        "nothing written on a bad -o"
    );

    let source_before = objects_in(&env.sim, "shop");
    let applied = env.run(&["replay", "apply", &id, "--confirm", "-o", "json"]);
    assert_eq!(
        applied.code,
        Some(0),
        "{}\n{}",
        applied.stdout,
        applied.stderr
    );
    let a: Value = serde_json::from_str(&applied.stdout).unwrap();
    assert_eq!(a["status"], "applied");
    // Exactly the planned objects, in the target namespace, by the plan's manager.
    let mut planned: Vec<String> = p["objects"]
        .as_array()
        .unwrap()
        .iter()
        .skip(1)
        .filter(|o| ["ConfigMap", "Service", "Deployment"].contains(&o["kind"].as_str().unwrap()))
        .map(|o| {
            format!(
                "{}/{}",
                o["kind"].as_str().unwrap(),
                o["name"].as_str().unwrap()
            )
        })
        .collect();
    let mut got: Vec<String> = objects_in(&env.sim, "shop-copy")
        .into_iter()
        .filter(|o| o != "ConfigMap/kube-root-ca.crt")
        .collect();
    planned.sort();
    got.sort();
    assert_eq!(got, planned);
    let frontend = env
        .sim
        .get("apps/v1", "Deployment", Some("shop-copy"), "frontend")
        .unwrap();
    assert!(
        frontend["metadata"]["managedFields"]
            .to_string()
            .contains(&format!("krply-plan-{id}"))
    );
    // Nothing in the source namespace changed.
    assert_eq!(objects_in(&env.sim, "shop"), source_before);
    assert!(
        env.sim.event_log()[before..]
            .iter()
            .all(|e| e.namespace.as_deref() != Some("shop"))
    );
    // A second apply changes nothing.
    let settled = env.sim.event_log().len();
    let again = env.run(&["replay", "apply", &id, "--confirm", "-o", "json"]);
    assert_eq!(again.code, Some(0), "{}", again.stderr);
    let again: Value = serde_json::from_str(&again.stdout).unwrap();
    assert!(
        again["applied"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["result"] == "unchanged"),
        "{}",
        again["applied"]
    );
    assert_eq!(env.sim.event_log().len(), settled);
    // `export` carries the plan, with its latest status, among the records.
    let export = env.run(&["export"]);
    assert_eq!(export.code, Some(0), "{}", export.stderr);
    let plans: Vec<Value> = export
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["record"] == "plan")
        .collect();
    assert_eq!(plans.len(), 1, "{}", export.stdout);
    assert_eq!(plans[0]["name"], id.as_str());
    assert_eq!(plans[0]["reason"], "applied");
    assert_eq!(plans[0]["info"]["id"], id.as_str());
    assert_eq!(plans[0]["info"]["status"], "applied");
    // The real kubectl sees them too.
    let out = std::process::Command::new(crate::real::kubectl_bin())
        .env_clear()
        .env("HOME", env.dir.path())
        .env("KUBECACHEDIR", env.dir.path().join("cache"))
        .env("KUBECONFIG", &env.kubeconfig)
        .args(["get", "deploy", "-n", "shop-copy", "-o", "name"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("deployment.apps/frontend"),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_yaml_of_a_plan_applies_with_kubectl() {
    // The kubectl built with the real control plane: never skipped.
    let kubectl = crate::real::kubectl_bin();
    let env = recorded();
    env.sim
        .create(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop-copy"}}))
        .unwrap();
    let (out, p) = plan(&env, &[]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let yaml = env.run(&["replay", "show", p["id"].as_str().unwrap(), "-o", "yaml"]);
    let file = env.dir.path().join("plan.yaml");
    std::fs::write(&file, &yaml.stdout).unwrap();
    let out = std::process::Command::new(kubectl)
        .env_clear()
        .env("HOME", env.dir.path())
        .env("KUBECACHEDIR", env.dir.path().join("cache"))
        .env("KUBECONFIG", &env.kubeconfig)
        .args([
            "apply",
            "--server-side",
            "--dry-run=server",
            "--validate=false",
            "-f",
        ])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("serverside-applied (server dry run)"));
}

#[test]
fn a_missing_target_namespace_is_validated_at_apply_then_created() {
    let env = recorded();
    let (out, p) = plan(&env, &["cm", "deploy"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(p["target"]["namespace_exists"], false);
    assert_eq!(p["objects"][0]["dry_run"], "ok");
    assert!(
        p["objects"]
            .as_array()
            .unwrap()
            .iter()
            .skip(1)
            .all(|o| o["dry_run"] == "validated at apply")
    );
    assert!(p["warnings"].to_string().contains("does not exist yet"));
    // The headline says how little the dry run could check.
    let id = p["id"].as_str().unwrap();
    let shown = env.run(&["replay", "show", id]);
    let objects = p["objects"].as_array().unwrap().len();
    assert!(
        shown.stdout.starts_with(&format!(
            "Plan {id}: dry-run-ok for the Namespace only; {} of {objects} objects are checked at apply, once it exists\n",
            objects - 1
        )),
        "{}",
        shown.stdout
    );
    assert!(shown.stdout.contains("namespace shop-copy (to be created)"));
    let applied = env.run(&["replay", "apply", id, "--confirm"]);
    assert_eq!(applied.code, Some(0), "{}", applied.stderr);
    // Once applied, what was said of the missing namespace is gone.
    assert!(
        applied.stdout.starts_with(&format!("Plan {id}: applied\n")),
        "{}",
        applied.stdout
    );
    for stale in ["to be created", "does not exist yet"] {
        assert!(!applied.stdout.contains(stale), "{}", applied.stdout);
    }
    assert!(env.sim.get("v1", "Namespace", None, "shop-copy").is_some());
    assert!(
        env.sim
            .get("apps/v1", "Deployment", Some("shop-copy"), "frontend")
            .is_some()
    );
}

#[test]
fn create_namespace_makes_the_target_namespace_only_and_every_object_is_dry_run() {
    let env = recorded();
    assert!(
        env.sim
            .list("v1", "Namespace", None)
            .iter()
            .all(|n| n["metadata"]["name"] != "shop-copy")
    );
    let (out, p) = plan(&env, &["deploy", "svc", "cm", "--create-namespace"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("note: creating namespace shop-copy on the target"),
        "{}",
        out.stderr
    );
    assert_eq!(p["status"], "dry-run-ok");
    assert_eq!(p["target"]["namespace_created"], true);
    assert_eq!(p["target"]["namespace_exists"], true);
    assert_eq!(p["dry_run"]["validated_at_apply"], json!([]));
    assert!(
        p["objects"]
            .as_array()
            .unwrap()
            .iter()
            .all(|o| o["dry_run"] == "ok"),
        "{}",
        p["objects"]
    );
    // The namespace, and nothing in it but what the cluster puts in every one.
    assert!(
        env.sim
            .list("v1", "Namespace", None)
            .iter()
            .any(|n| n["metadata"]["name"] == "shop-copy")
    );
    let inside: Vec<String> = objects_in(&env.sim, "shop-copy")
        .into_iter()
        .filter(|o| o != "ConfigMap/kube-root-ca.crt")
        .collect();
    assert_eq!(inside, Vec::<String>::new());
    // Existing already, it is left alone and nothing is said.
    let (again, p) = plan(&env, &["cm", "--create-namespace"]);
    assert_eq!(again.code, Some(0), "{}", again.stderr);
    assert!(
        !again.stderr.contains("creating namespace"),
        "{}",
        again.stderr
    );
    assert_eq!(p["target"]["namespace_created"], false);
}

#[test]
fn writes_the_target_refuses_are_grouped_by_verb_and_resource() {
    let env = recorded();
    // The target namespace exists, and the replaying user may read but not
    // write Deployments and Services there.
    env.sim
        .create(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop-copy"}}))
        .unwrap();
    env.sim.forbid_writes("deployments", Some("shop-copy"));
    env.sim.forbid_writes("services", Some("shop-copy"));
    let (out, p) = plan(&env, &["deploy", "svc", "cm"]);
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert_eq!(p["status"], "dry-run-failed");
    let errors = p["dry_run"]["errors"].as_array().unwrap();
    let deployments = p["objects"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["kind"] == "Deployment")
        .count();
    assert!(deployments >= 12, "{deployments}");
    assert_eq!(
        errors
            .iter()
            .filter(|e| e["forbidden"] == json!({"verb": "patch", "resource": "deployments.apps"}))
            .count(),
        deployments
    );
    // The text: one line per verb and resource, not one per object.
    let at = at(&env);
    let text = env.run(&[
        "replay",
        "plan",
        "deploy",
        "svc",
        "cm",
        "--to-namespace",
        "shop-copy",
        "--at",
        &at,
    ]);
    assert_eq!(text.code, Some(1), "{}", text.stderr);
    let refused: Vec<&str> = text
        .stdout
        .lines()
        .filter(|l| l.trim_start().starts_with("refused "))
        .collect();
    assert_eq!(refused.len(), 2, "{}", text.stdout);
    assert!(
        refused[0].starts_with(&format!(
            "  refused   patch deployments.apps in namespace shop-copy: {deployments} objects ("
        )),
        "{}",
        text.stdout
    );
    assert!(
        refused[1].contains("patch services in namespace shop-copy"),
        "{}",
        text.stdout
    );
    assert!(!text.stdout.contains("  error "), "{}", text.stdout);
    assert_eq!(
        text.stdout.matches("is forbidden").count(),
        1,
        "{}",
        text.stdout
    );
    assert!(
        text.stdout.contains("docs/rbac/replay-role.yaml"),
        "{}",
        text.stdout
    );
}

#[test]
fn objects_validated_at_apply_are_dry_run_before_anything_is_written() {
    let env = recorded();
    let (out, p) = plan(&env, &["cm", "deploy"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(p["target"]["namespace_exists"], false);
    let id = p["id"].as_str().unwrap();
    // Between plan and apply, someone else creates the namespace and takes
    // the frontend's replica count there.
    helm_owns_frontend_replicas_in_shop_copy(&env.sim);
    let before = objects_in(&env.sim, "shop-copy");
    let applied = env.run(&["replay", "apply", id, "--confirm", "-o", "json"]);
    assert_eq!(applied.code, Some(1), "{}", applied.stdout);
    assert!(
        applied.stderr.contains("was not fully applied"),
        "{}",
        applied.stderr
    );
    let a: Value = serde_json::from_str(&applied.stdout).unwrap();
    assert_eq!(a["status"], "dry-run-failed");
    assert_eq!(a["dry_run"]["conflicts"][0]["name"], "frontend");
    // Nothing was written: not even the ConfigMaps ordered before the conflict.
    assert_eq!(objects_in(&env.sim, "shop-copy"), before);
    let shown = env.run(&["replay", "show", id, "-o", "json"]);
    let shown: Value = serde_json::from_str(&shown.stdout).unwrap();
    assert_eq!(shown["status"], "dry-run-failed");
}

#[test]
fn the_target_context_decides_where_plans_and_applies_go() {
    let env = recorded();
    let other = Simulator::start_background(SimConfig {
        seed: Seed::Empty,
        ..SimConfig::default()
    })
    .unwrap();
    // One kubeconfig, two contexts; the current one is the recorded cluster.
    let (_, both) = env.named_context(&other, "other");
    let run = |args: &[&str]| {
        let out = env
            .command()
            .env("KUBECONFIG", &both)
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let source_requests = env.sim.request_log().len();
    let t = at(&env);
    let (code, stdout, stderr) = run(&[
        "replay",
        "plan",
        "-n",
        "shop",
        "--to-namespace",
        "shop",
        "--at",
        &t,
        "--target-context",
        "other",
        "-o",
        "json",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    let p: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        p["status"], "dry-run-ok",
        "replaying into the same name on another cluster is fine"
    );
    assert_eq!(p["target"]["context"], "other");
    assert_eq!(
        env.sim.request_log().len(),
        source_requests,
        "the recorded cluster got no request"
    );
    assert!(
        other
            .request_log()
            .iter()
            .any(|r| r.path_and_query.contains("dryRun=All"))
    );
    let (code, _, stderr) = run(&["replay", "apply", p["id"].as_str().unwrap(), "--confirm"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        other
            .get("apps/v1", "Deployment", Some("shop"), "frontend")
            .is_some()
    );
    assert_eq!(env.sim.request_log().len(), source_requests);
}

/// A workload that names objects the target will lack passes its dry run and
/// then cannot start: the plan names each missing object, who uses it and
/// what would fix it, and drops what the target already has.
#[test]
fn a_plan_warns_about_what_its_workloads_name_and_the_target_lacks() {
    let env = Env::shop();
    env.sim
        .create(json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "worker", "namespace": "shop"},
            "spec": {"selector": {"matchLabels": {"app": "worker"}},
                     "template": {"metadata": {"labels": {"app": "worker"}},
                     "spec": {"serviceAccountName": "worker",
                              "containers": [{"name": "w", "image": "worker:1",
                                  "envFrom": [{"configMapRef": {"name": "worker-env"}}],
                                  "env": [{"name": "P", "valueFrom": {"secretKeyRef": {"name": "db", "key": "p"}}},
                                          {"name": "O", "valueFrom": {"configMapKeyRef": {"name": "maybe", "key": "k", "optional": true}}}]}]}}}}))
        .unwrap();
    // ServiceAccounts are not recorded here: the fix for them is to record them.
    let rec = env.start_recorder(&["deploy", "cm"]);
    env.wait_baselines(1);
    let at = krply::time::Millis::now().to_string();
    assert_eq!(rec.stop().code, Some(0));
    let plan_json = |env: &Env| -> Value {
        let out = env.run(&[
            "replay",
            "plan",
            "--to-namespace",
            "shop-copy",
            "--at",
            &at,
            "-o",
            "json",
        ]);
        assert_eq!(out.code, Some(0), "{}", out.stderr);
        serde_json::from_str(&out.stdout).unwrap()
    };
    let worker = |p: &Value| -> Vec<(String, String)> {
        p["missing"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| {
                m["used_by"]
                    .as_array()
                    .unwrap()
                    .contains(&json!("Deployment/worker"))
            })
            .map(|m| {
                (
                    format!(
                        "{}/{}",
                        m["kind"].as_str().unwrap(),
                        m["name"].as_str().unwrap()
                    ),
                    m["fix"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    let p = plan_json(&env);
    let missing = worker(&p);
    let names: Vec<&str> = missing.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["ServiceAccount/worker", "Secret/db", "ConfigMap/worker-env"],
        "{p:#}"
    );
    assert!(
        missing[0]
            .1
            .contains("kubectl krply record serviceaccounts"),
        "{missing:?}"
    );
    assert!(missing[1].1.contains("never replayed"), "{missing:?}");
    assert!(
        missing[2].1.contains("not in the recorded namespace"),
        "{missing:?}"
    );
    let warnings = p["warnings"].to_string();
    assert!(
        warnings.contains("ConfigMap worker-env (used by Deployment/worker) is neither in the plan nor in namespace shop-copy"),
        "{warnings}"
    );
    let text = env.run(&["replay", "show", p["id"].as_str().unwrap()]);
    assert!(
        text.stdout
            .contains("Secret db (used by Deployment/worker)"),
        "{}",
        text.stdout
    );

    // What the target has is no warning.
    for obj in [
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop-copy"}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "worker-env", "namespace": "shop-copy"}}),
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "namespace": "shop-copy"}}),
    ] {
        env.sim.create(obj).unwrap();
    }
    let p = plan_json(&env);
    let names: Vec<String> = worker(&p).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["ServiceAccount/worker"], "{p:#}");
}
