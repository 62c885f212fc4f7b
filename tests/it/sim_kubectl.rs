//! The real `kubectl` against the simulator: the one built from the same
//! Kubernetes release as the real server (`tests/realkube`), so these tests
//! never skip and the simulator answers the client that the reference server
//! answers. Each test has its own kubeconfig, HOME and discovery cache, and
//! no proxy settings. Every wait has a deadline.

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::common::path_str;
use krply_sim::{KubeconfigOptions, Seed, SimConfig, Simulator};
use serde_json::{Value, json};

const DEADLINE: Duration = Duration::from_secs(60);

/// A kubectl bound to one simulator, in a sandbox of its own.
struct Kubectl {
    bin: PathBuf,
    dir: tempfile::TempDir,
}

struct Run {
    status: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Kubectl {
    fn new(sim: &Simulator, opts: &KubeconfigOptions) -> Kubectl {
        let bin = crate::real::kubectl_bin();
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(dir.path().join("home")).expect("home");
        sim.write_kubeconfig(&dir.path().join("kubeconfig"), opts)
            .expect("kubeconfig");
        Kubectl { bin, dir }
    }

    fn kubeconfig(&self) -> PathBuf {
        self.dir.path().join("kubeconfig")
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(&self.bin);
        c.args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.dir.path().join("home"))
            .env("KUBECONFIG", self.kubeconfig())
            .env("KUBECACHEDIR", self.dir.path().join("cache"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }

    /// Runs kubectl to completion (killed at the deadline).
    fn run(&self, args: &[&str]) -> Run {
        let mut child = self.command(args).spawn().expect("kubectl starts");
        let out = drain(child.stdout.take());
        let err = drain(child.stderr.take());
        let status = wait(&mut child, DEADLINE);
        Run {
            status,
            stdout: out.join().unwrap_or_default(),
            stderr: err.join().unwrap_or_default(),
        }
    }

    fn ok(&self, args: &[&str]) -> String {
        let r = self.run(args);
        assert_eq!(
            r.status,
            Some(0),
            "kubectl {args:?} failed\nstdout:\n{}\nstderr:\n{}",
            r.stdout,
            r.stderr
        );
        r.stdout
    }
}

fn drain<R: Read + Send + 'static>(pipe: Option<R>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_string(&mut s);
        }
        s
    })
}

/// Waits for the child until the deadline; kills it after. Its exit code, if any.
fn wait(child: &mut Child, deadline: Duration) -> Option<i32> {
    let end = Instant::now() + deadline;
    while Instant::now() < end {
        if let Ok(Some(status)) = child.try_wait() {
            return status.code();
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

fn shop() -> Simulator {
    Simulator::start_background(SimConfig {
        seed: Seed::Shop,
        ..Default::default()
    })
    .expect("simulator")
}

fn in_shop() -> KubeconfigOptions {
    KubeconfigOptions {
        namespace: Some("shop".into()),
        ..Default::default()
    }
}

#[test]
fn get_deployments_prints_server_side_columns() {
    let sim = shop();
    let k = Kubectl::new(&sim, &in_shop());
    let out = k.ok(&["get", "deploy", "-n", "shop"]);
    let lines: Vec<&str> = out.lines().collect();
    let header: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(header, ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]);
    assert_eq!(lines.len(), 13, "{out}");
    let frontend: Vec<&str> = lines
        .iter()
        .find(|l| l.starts_with("frontend "))
        .expect("frontend row")
        .split_whitespace()
        .collect();
    assert_eq!(&frontend[..4], ["frontend", "1/1", "1", "1"]);
    // It asked for a server-side Table, and says which kubectl it is.
    let log = sim.request_log();
    assert!(log.iter().any(|r| {
        r.path_and_query
            .starts_with("/apis/apps/v1/namespaces/shop/deployments")
            && r.accept.as_deref().is_some_and(|a| a.contains("as=Table"))
    }));
    assert!(log.iter().any(|r| {
        r.user_agent
            .as_deref()
            .is_some_and(|u| u.starts_with(&format!("kubectl/{}", crate::real::built().version)))
    }));
    let svc = k.ok(&["get", "svc", "frontend-external"]);
    assert!(
        svc.contains("LoadBalancer") && svc.contains("<pending>") && svc.contains("80:3"),
        "{svc}"
    );
    let ns = k.ok(&["get", "ns"]);
    assert!(
        ns.lines()
            .any(|l| l.starts_with("shop ") && l.contains("Active")),
        "{ns}"
    );
}

#[test]
fn get_watch_sees_a_change_made_through_the_simulator() {
    let sim = shop();
    let k = Kubectl::new(&sim, &in_shop());
    let mut child = k
        .command(&["get", "cm", "-n", "shop", "-w"])
        .spawn()
        .expect("kubectl starts");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let next = |what: &str| {
        rx.recv_timeout(DEADLINE)
            .unwrap_or_else(|_| panic!("kubectl printed no {what} in time"))
    };
    let header = next("header");
    assert!(header.starts_with("NAME"), "{header}");
    for _ in 0..4 {
        next("initial row");
    }
    assert!(
        sim.wait_open_watches(1, DEADLINE),
        "kubectl never opened its watch"
    );
    sim.patch_merge(
        "v1",
        "ConfigMap",
        Some("shop"),
        "feature-flags",
        &json!({"data": {"new.flag": "on"}}),
    )
    .expect("patch");
    let row = next("watch row");
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(&cells[..2], ["feature-flags", "5"], "{row}");
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn raw_watch_from_a_compacted_rv_gets_the_expired_event() {
    let sim = shop();
    let k = Kubectl::new(&sim, &in_shop());
    let old = sim.current_rv();
    sim.patch_merge(
        "v1",
        "ConfigMap",
        Some("shop"),
        "feature-flags",
        &json!({"data": {"x": "1"}}),
    )
    .expect("patch");
    sim.compact();
    let path = format!("/api/v1/namespaces/shop/configmaps?watch=true&resourceVersion={old}");
    let out = k.ok(&["get", "--raw", &path]);
    let event: Value = serde_json::from_str(out.lines().next().expect("one line")).expect("JSON");
    assert_eq!(event["type"], "ERROR");
    assert_eq!(event["object"]["code"], 410);
    assert_eq!(event["object"]["reason"], "Expired");
    assert_eq!(
        event["object"]["message"],
        format!("too old resource version: {old} ({})", sim.current_rv())
    );
}

#[test]
fn forbidden_resources_fail_like_rbac() {
    let sim = shop();
    sim.forbid("secrets", Some("shop"));
    let k = Kubectl::new(&sim, &in_shop());
    let r = k.run(&["get", "secrets", "-n", "shop"]);
    assert_ne!(r.status, Some(0));
    assert!(
        r.stderr.contains("Error from server (Forbidden): secrets is forbidden: User \"krply-sim-user\" cannot list resource \"secrets\" in API group \"\" in the namespace \"shop\""),
        "{}",
        r.stderr
    );
    k.ok(&["get", "secrets", "-n", "default"]);
}

#[test]
fn tls_and_bearer_tokens() {
    let sim = Simulator::start_background(SimConfig {
        seed: Seed::Shop,
        tls: true,
        token: Some("kubectl-s3cret".into()),
        ..Default::default()
    })
    .expect("simulator");
    let k = Kubectl::new(&sim, &in_shop());
    let out = k.ok(&["get", "deploy", "frontend"]);
    assert!(out.contains("frontend"), "{out}");
    assert!(sim.request_log().iter().all(|r| r.status != 401));
    // The token goes bad; discovery is still cached, the list gets the 401 Status.
    let wrong = KubeconfigOptions {
        token: Some("wrong".into()),
        ..in_shop()
    };
    sim.write_kubeconfig(&k.kubeconfig(), &wrong)
        .expect("kubeconfig");
    let r = k.run(&["get", "deploy"]);
    assert_ne!(r.status, Some(0));
    assert!(
        r.stderr
            .contains("error: You must be logged in to the server (Unauthorized)"),
        "{}",
        r.stderr
    );
    // Without a discovery cache, kubectl words the same 401 from discovery differently.
    let fresh = Kubectl::new(&sim, &wrong);
    let r = fresh.run(&["get", "deploy"]);
    assert_ne!(r.status, Some(0));
    assert!(
        r.stderr.contains("You must be logged in to the server"),
        "{}",
        r.stderr
    );
    assert!(sim.request_log().iter().any(|r| r.status == 401));
}

#[test]
fn scale_label_annotate_and_delete() {
    let sim = shop();
    let k = Kubectl::new(&sim, &in_shop());
    let out = k.ok(&["scale", "deploy/frontend", "--replicas=3", "-n", "shop"]);
    assert!(out.contains("deployment.apps/frontend scaled"), "{out}");
    let d = sim
        .get("apps/v1", "Deployment", Some("shop"), "frontend")
        .unwrap();
    assert_eq!(d["spec"]["replicas"], 3);
    let scaled = sim
        .event_log()
        .into_iter()
        .rev()
        .find(|e| e.name == "frontend" && e.kind == "Deployment")
        .expect("a logged event");
    let obj: Value = serde_json::from_slice(&scaled.object).unwrap();
    assert_eq!(
        (scaled.event_type.as_str(), obj["spec"]["replicas"].as_i64()),
        ("MODIFIED", Some(3))
    );
    let managers: Vec<&str> = obj["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["subresource"] == "scale")
        .filter_map(|m| m["manager"].as_str())
        .collect();
    assert_eq!(managers, ["kubectl"]);
    let rollout = k.ok(&["rollout", "status", "deploy/frontend", "--timeout=20s"]);
    assert!(rollout.contains("successfully rolled out"), "{rollout}");

    k.ok(&["label", "cm", "feature-flags", "team=web"]);
    k.ok(&["annotate", "cm", "feature-flags", "owner=payments"]);
    let cm = sim
        .get("v1", "ConfigMap", Some("shop"), "feature-flags")
        .unwrap();
    assert_eq!(cm["metadata"]["labels"]["team"], "web");
    assert_eq!(cm["metadata"]["annotations"]["owner"], "payments");
    let label_manager = cm["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["manager"] == "kubectl-label")
        .expect("kubectl-label owns its label");
    assert!(
        label_manager["fieldsV1"]
            .pointer("/f:metadata/f:labels/f:team")
            .is_some()
    );
    k.ok(&["label", "cm", "feature-flags", "team-"]);
    assert!(
        sim.get("v1", "ConfigMap", Some("shop"), "feature-flags")
            .unwrap()["metadata"]["labels"]
            .get("team")
            .is_none()
    );
    let shown = k.ok(&["get", "cm", "feature-flags", "--show-labels"]);
    assert!(
        shown.contains("app.kubernetes.io/part-of=online-boutique"),
        "{shown}"
    );

    let out = k.ok(&["delete", "cm", "currency-rates"]);
    assert!(
        out.contains("configmap \"currency-rates\" deleted"),
        "{out}"
    );
    assert!(
        sim.get("v1", "ConfigMap", Some("shop"), "currency-rates")
            .is_none()
    );
    assert!(
        sim.event_log()
            .iter()
            .any(|e| e.name == "currency-rates" && e.event_type == "DELETED")
    );
    let r = k.run(&["get", "cm", "currency-rates"]);
    assert_ne!(r.status, Some(0));
    assert!(
        r.stderr
            .contains("Error from server (NotFound): configmaps \"currency-rates\" not found"),
        "{}",
        r.stderr
    );
}

#[test]
fn protobuf_creates_are_refused_and_json_ones_work() {
    let sim = shop();
    let k = Kubectl::new(&sim, &in_shop());
    // `kubectl create configmap` sends a protobuf body.
    let r = k.run(&["create", "configmap", "proto", "--from-literal=a=b"]);
    assert_ne!(r.status, Some(0));
    assert!(r.stderr.contains("unknown format"), "{}", r.stderr);
    // `create -f` sends JSON.
    let manifest = k.dir.path().join("cm.json");
    std::fs::write(
        &manifest,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "from-file"}, "data": {"a": "b"}}).to_string(),
    )
    .unwrap();
    // Without OpenAPI documents, client-side validation must be off.
    let out = k.ok(&["create", "--validate=false", "-f", path_str(&manifest)]);
    assert!(out.contains("configmap/from-file created"), "{out}");
    let cm = sim
        .get("v1", "ConfigMap", Some("shop"), "from-file")
        .unwrap();
    assert_eq!(
        cm["metadata"]["managedFields"][0]["manager"],
        "kubectl-create"
    );
}

fn deployment_yaml(replicas: u32, image: &str) -> String {
    format!(
        "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  labels:
    app: web
spec:
  replicas: {replicas}
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: server
        image: {image}
        ports:
        - containerPort: 8080
"
    )
}

#[test]
fn server_side_apply_dry_run_create_conflict_and_force() {
    let sim = shop();
    let k = Kubectl::new(&sim, &in_shop());
    let manifest = k.dir.path().join("web.yaml");
    std::fs::write(&manifest, deployment_yaml(2, "web:1")).unwrap();
    let file = path_str(&manifest);
    // Without OpenAPI documents, client-side validation must be off.
    let out = k.ok(&[
        "apply",
        "--server-side",
        "--dry-run=server",
        "--validate=false",
        "-f",
        file,
    ]);
    assert!(
        out.contains("deployment.apps/web serverside-applied (server dry run)"),
        "{out}"
    );
    assert!(
        sim.get("apps/v1", "Deployment", Some("shop"), "web")
            .is_none()
    );
    let patch = sim
        .request_log()
        .into_iter()
        .find(|r| r.method == "PATCH")
        .expect("the dry-run PATCH");
    assert_eq!(
        patch.content_type.as_deref(),
        Some("application/apply-patch+yaml")
    );
    assert!(
        patch.path_and_query.contains("dryRun=All")
            && patch.path_and_query.contains("fieldManager=kubectl"),
        "{}",
        patch.path_and_query
    );
    assert_eq!(patch.status, 201);

    let out = k.ok(&["apply", "--server-side", "--validate=false", "-f", file]);
    assert!(
        out.contains("deployment.apps/web serverside-applied"),
        "{out}"
    );
    let d = sim
        .get("apps/v1", "Deployment", Some("shop"), "web")
        .expect("created");
    assert_eq!(d["spec"]["replicas"], 2);
    let kubectl = d["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["manager"] == "kubectl")
        .expect("kubectl's entry");
    assert_eq!(kubectl["operation"], "Apply");
    assert!(kubectl["fieldsV1"].pointer("/f:spec/f:replicas").is_some());
    let ready = k.ok(&["get", "deploy", "web"]);
    assert!(ready.contains("2/2"), "{ready}");

    // A second manager with another replica count conflicts.
    let other = k.dir.path().join("web-ops.yaml");
    std::fs::write(&other, deployment_yaml(5, "web:1")).unwrap();
    let other = path_str(&other);
    let r = k.run(&[
        "apply",
        "--server-side",
        "--validate=false",
        "--field-manager=ops",
        "-f",
        other,
    ]);
    assert_ne!(r.status, Some(0));
    assert!(
        r.stderr
            .contains("Apply failed with 1 conflict: conflict with \"kubectl\": .spec.replicas"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("--force-conflicts"), "{}", r.stderr);
    assert_eq!(
        sim.get("apps/v1", "Deployment", Some("shop"), "web")
            .unwrap()["spec"]["replicas"],
        2
    );
    // The same count is no conflict; forcing another takes the field.
    let same = k.dir.path().join("web-same.yaml");
    std::fs::write(&same, deployment_yaml(2, "web:1")).unwrap();
    k.ok(&[
        "apply",
        "--server-side",
        "--validate=false",
        "--field-manager=ops",
        "-f",
        path_str(&same),
    ]);
    let out = k.ok(&[
        "apply",
        "--server-side",
        "--validate=false",
        "--field-manager=ops",
        "--force-conflicts",
        "-f",
        other,
    ]);
    assert!(
        out.contains("deployment.apps/web serverside-applied"),
        "{out}"
    );
    let d = sim
        .get("apps/v1", "Deployment", Some("shop"), "web")
        .unwrap();
    assert_eq!(d["spec"]["replicas"], 5);
    let owners: Vec<&str> = d["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["fieldsV1"].pointer("/f:spec/f:replicas").is_some())
        .filter_map(|m| m["manager"].as_str())
        .collect();
    assert_eq!(owners, ["ops"]);
    // kubectl now sees the conflict the other way round.
    let r = k.run(&["apply", "--server-side", "--validate=false", "-f", file]);
    assert_ne!(r.status, Some(0));
    assert!(
        r.stderr
            .contains("Apply failed with 1 conflict: conflict with \"ops\": .spec.replicas"),
        "{}",
        r.stderr
    );
}

#[test]
fn server_side_apply_into_a_missing_namespace_is_not_found() {
    let sim = shop();
    let k = Kubectl::new(&sim, &in_shop());
    let manifest = k.dir.path().join("cm.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: flags\n  namespace: replay-9\ndata:\n  a: b\n",
    )
    .unwrap();
    let r = k.run(&[
        "apply",
        "--server-side",
        "--dry-run=server",
        "--validate=false",
        "-f",
        path_str(&manifest),
    ]);
    assert_ne!(r.status, Some(0));
    assert!(
        r.stderr.contains("Error from server (NotFound)")
            && r.stderr.contains("namespaces \"replay-9\" not found"),
        "{}",
        r.stderr
    );
}
