//! Real RBAC: the roles in docs/rbac are enough, and what they leave out is
//! a clear 403 for that stream alone.

use super::RealEnv;
use serde_json::Value;

/// A docs/rbac example, bound to `user` in `namespace` instead of the
/// placeholders it ships with.
fn role(file: &str, namespace: &str, old_namespace: &str, user: &str) -> String {
    let text = std::fs::read_to_string(format!("{}/docs/rbac/{file}", env!("CARGO_MANIFEST_DIR")))
        .expect("the documented role");
    assert!(
        text.contains("jane@example.com"),
        "{file} names its subject"
    );
    text.replace(
        &format!("namespace: {old_namespace}"),
        &format!("namespace: {namespace}"),
    )
    .replace("jane@example.com", user)
}

/// What `record` lists and watches by default, in one namespace.
const DEFAULT_RESOURCES: [&str; 6] = [
    "deployments.apps",
    "statefulsets.apps",
    "daemonsets.apps",
    "services",
    "configmaps",
    "serviceaccounts",
];

/// Applies YAML as the admin.
fn apply(env: &RealEnv, yaml: &str) {
    let path = env.dir.path().join("rbac.yaml");
    std::fs::write(&path, yaml).unwrap();
    env.kubectl_ok(&["apply", "-f", path.to_str().unwrap()]);
}

fn states(coverage: &Value) -> Vec<(String, String)> {
    let mut s: Vec<(String, String)> = coverage["streams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["resource"].as_str().unwrap().to_string(),
                s["state"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    s.sort();
    s
}

/// The limited user, with docs/rbac/recorder-role.yaml bound in one
/// namespace, records every default resource there. Secrets, which the role
/// deliberately leaves out, are a 403 for that stream alone, said clearly,
/// while the others record.
#[test]
fn the_documented_namespace_role_is_enough_and_a_forbidden_stream_is_said_clearly() {
    const NS: &str = "rbac";
    let env = RealEnv::new(NS);
    env.create_namespace(NS);
    apply(
        &env,
        &role("recorder-role.yaml", NS, "shop", "krply-limited"),
    );
    for resource in DEFAULT_RESOURCES {
        env.wait_can_i("krply-limited", "watch", resource, &["-n", NS]);
    }
    env.kubectl_ok(&["create", "configmap", "flags", "--from-literal=v=1"]);
    env.kubectl_ok(&["create", "secret", "generic", "db", "--from-literal=p=x"]);

    let recorder = env.start_recorder(&["--context", "limited"]);
    env.wait_baselines(1);
    env.kubectl_ok(&["patch", "configmap/flags", "-p", r#"{"data":{"v":"2"}}"#]);
    env.wait_journaled(&format!("configmaps.v1@{NS}"), NS, "configmap/flags");
    let stopped = recorder.stop();
    assert_eq!(stopped.code, Some(0), "{stopped:?}");
    // (Not "403": resourceVersions contain that too.)
    assert!(!stopped.stderr.contains("Forbidden"), "{}", stopped.stderr);
    let coverage = env.krply_json(&["coverage"], 0);
    for (resource, state) in states(&coverage) {
        assert_ne!(state, "unavailable", "{resource}: {coverage:#}");
    }
    assert_eq!(
        states(&coverage).len(),
        DEFAULT_RESOURCES.len(),
        "{coverage:#}"
    );

    let store = env.dir.path().join("secrets.db");
    let mut partial = env.command();
    partial.env("KRPLY_STORE", &store).args([
        "record",
        "--context",
        "limited",
        "configmaps",
        "secrets",
        "--include-secrets",
        "--for",
        "3s",
    ]);
    let out = partial.output().unwrap();
    // (Long notices wrap between words onto indented lines.)
    let stderr = String::from_utf8_lossy(&out.stderr).replace("\n    ", " ");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!(
            r#"secrets is forbidden: User "krply-limited" cannot list resource "secrets" in API group "" in the namespace "{NS}""#
        )),
        "the server's own words reach the user:\n{stderr}"
    );
    // The summary does not count events of a stream it could not read.
    let summary = String::from_utf8_lossy(&out.stdout);
    let secrets_line = summary
        .lines()
        .find(|l| l.contains(&format!("secrets.v1@{NS}")))
        .unwrap_or_else(|| panic!("{summary}"));
    assert!(
        secrets_line.ends_with("unavailable: 403 Forbidden"),
        "{summary}"
    );
    let coverage = env.krply_json(&["coverage", "--store", store.to_str().unwrap()], 0);
    assert_eq!(
        states(&coverage),
        [
            ("configmaps".to_string(), "stopped".to_string()),
            ("secrets".to_string(), "unavailable".to_string()),
        ],
        "{coverage:#}"
    );
}

/// docs/rbac/recorder-clusterrole.yaml is enough for `record -A`, the
/// namespaces stream included (as a user the admin impersonates).
#[test]
fn the_documented_cluster_role_is_enough_for_all_namespaces() {
    let env = RealEnv::new("default");
    let user = "cluster-recorder@example.com";
    apply(&env, &role("recorder-clusterrole.yaml", "", "", user));
    for resource in DEFAULT_RESOURCES.iter().chain(&["namespaces"]) {
        env.wait_can_i(user, "watch", resource, &["-A"]);
    }
    let out = env.run(&["record", "-A", "--as", user, "--for", "4s"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(!out.stderr.contains("Forbidden"), "{}", out.stderr);
    let coverage = env.krply_json(&["coverage", "-A"], 0);
    let states = states(&coverage);
    assert_eq!(states.len(), DEFAULT_RESOURCES.len() + 1, "{coverage:#}");
    for (resource, state) in states {
        assert_eq!(state, "stopped", "{resource}: {coverage:#}");
    }
}

/// The limited user with no role at all: every default stream is refused, so
/// `record` ends at once with exit 1, naming the user, the verb and the
/// resource the real server refused, and where the roles are.
#[test]
fn a_user_refused_on_every_stream_is_told_at_once_with_exit_1() {
    const NS: &str = "rbac-none";
    let env = RealEnv::new(NS);
    env.create_namespace(NS);
    let mut rec = env.start_recorder(&[
        "--context",
        "limited",
        "--for",
        crate::common::REFUSED_WITHIN,
    ]);
    let out = rec.wait();
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    let error = out
        .stderr
        .lines()
        .find(|l| l.starts_with("error:"))
        .unwrap_or_else(|| panic!("{}", out.stderr));
    assert!(error.contains("refused every stream (6 of 6)"), "{error}");
    assert!(
        error.contains("User \"krply-limited\" cannot list resource"),
        "{error}"
    );
    assert!(out.stderr.contains("docs/rbac/"), "{}", out.stderr);
}
