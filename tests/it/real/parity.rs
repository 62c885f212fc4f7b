//! The simulator answers to the real server: the same kubectl commands run
//! against both, and what each server then holds, says or streams is
//! compared. Every difference found was fixed in the simulator; what it
//! still does differently is listed in docs/simulator.md.

use super::RealEnv;
use crate::common::{Env, Sandbox};
use krply_sim::{Seed, SimConfig};
use serde_json::{Value, json};

/// One server of the pair.
struct Side<'a> {
    name: &'static str,
    sandbox: &'a Sandbox,
}

impl Side<'_> {
    fn kubectl(&self, args: &[&str]) -> String {
        let out = self.sandbox.kubectl(args);
        assert_eq!(
            out.code,
            Some(0),
            "{}: kubectl {args:?}\n{}{}",
            self.name,
            out.stdout,
            out.stderr
        );
        out.stdout
    }

    /// `kubectl create GENERATOR...`, sent as JSON: kubectl's generators send
    /// protobuf, which the simulator does not read (docs/simulator.md).
    fn create(&self, namespace: &str, args: &[&str]) {
        let mut generate = vec!["create", "-n", namespace];
        generate.extend(args);
        generate.extend(["--dry-run=client", "-o", "json"]);
        let manifest = self.kubectl(&generate);
        // Nor does it serve /openapi/v3, where kubectl looks for validation.
        self.sandbox
            .kubectl_stdin(&["create", "--validate=false", "-n", namespace], &manifest);
    }

    /// The lines of `kubectl get --raw PATH`, one JSON document each (a
    /// watch's events).
    fn raw_lines(&self, path: &str) -> Vec<Value> {
        self.kubectl(&["get", "--raw", path])
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The lines of `kubectl get --raw PATH` as the server wrote them.
    fn raw_text_lines(&self, path: &str) -> Vec<String> {
        self.kubectl(&["get", "--raw", path])
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// The Online Boutique, applied server-side as kubectl (the default manager).
    fn apply_shop(&self, namespace: &str) {
        self.sandbox.kubectl_stdin(
            &[
                "apply",
                "--server-side",
                "--validate=false",
                "-n",
                namespace,
            ],
            &super::shop_manifest(namespace).to_string(),
        );
    }

    fn get(&self, what: &str, namespace: &str) -> Value {
        serde_json::from_str(&self.kubectl(&[
            "get",
            what,
            "-n",
            namespace,
            "--show-managed-fields",
            "-o",
            "json",
        ]))
        .unwrap()
    }
}

/// The simulator and the real server, each with namespace `namespace`.
fn pair(namespace: &str) -> (Env, RealEnv) {
    let sim = Env::new(SimConfig {
        seed: Seed::Objects(vec![json!({
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}
        })]),
        ..SimConfig::default()
    });
    let real = RealEnv::new(namespace);
    real.create_namespace(namespace);
    (sim, real)
}

fn sides<'a>(sim: &'a Env, real: &'a RealEnv) -> [Side<'a>; 2] {
    [
        Side {
            name: "simulator",
            sandbox: sim,
        },
        Side {
            name: "kube-apiserver",
            sandbox: real,
        },
    ]
}

/// What a server assigned that differs between any two servers: ids,
/// versions, times and allocated addresses. Everything else must match.
fn normalize(mut v: Value) -> Value {
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        for k in ["uid", "resourceVersion", "creationTimestamp"] {
            meta.remove(k);
        }
        if let Some(mf) = meta.get_mut("managedFields").and_then(Value::as_array_mut) {
            for m in mf.iter_mut().filter_map(Value::as_object_mut) {
                m.remove("time");
                // Status depends on the cluster, not the server: the real
                // control plane has no kubelet (Pods stay Pending), the
                // simulator converges at once.
                if let Some(f) = m.get_mut("fieldsV1").and_then(Value::as_object_mut) {
                    f.remove("f:status");
                }
            }
            mf.sort_by_key(|m| format!("{}/{}/{}", m["manager"], m["operation"], m["subresource"]));
        }
    }
    if let Some(spec) = v.get_mut("spec").and_then(Value::as_object_mut) {
        for k in ["clusterIP", "clusterIPs"] {
            if spec
                .get(k)
                .is_some_and(|ip| ip != "None" && ip != &json!(["None"]))
            {
                spec.insert(k.into(), json!("<allocated>"));
            }
        }
        if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
            for p in ports.iter_mut().filter_map(Value::as_object_mut) {
                if p.contains_key("nodePort") {
                    p.insert("nodePort".into(), json!("<allocated>"));
                }
            }
        }
    }
    v
}

/// The paths where two JSON values differ, with both sides.
fn differences(a: &Value, b: &Value, path: &str, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                let p = format!("{path}.{k}");
                match (x.get(k), y.get(k)) {
                    (Some(l), Some(r)) => differences(l, r, &p, out),
                    (l, r) => out.push(format!("{p}: simulator {l:?} / real {r:?}")),
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (l, r)) in x.iter().zip(y).enumerate() {
                differences(l, r, &format!("{path}[{i}]"), out);
            }
        }
        _ if a != b => out.push(format!("{path}: simulator {a} / real {b}")),
        _ => {}
    }
}

/// Whether the controller of `obj` has caught up with it. `observedGeneration`
/// alone is not enough for a Deployment: a scale and a new template in quick
/// succession can be observed by a scaling pass that creates no ReplicaSet
/// yet. It has caught up when a ReplicaSet runs its current pod template and
/// carries the revision the Deployment says.
fn settled(real: &Side, obj: &Value, namespace: &str) -> bool {
    let generation = &obj["metadata"]["generation"];
    if !generation.is_null() && obj["status"]["observedGeneration"] != *generation {
        return false;
    }
    if obj["kind"] != "Deployment" {
        return true;
    }
    let revision = &obj["metadata"]["annotations"]["deployment.kubernetes.io/revision"];
    let sets: Value =
        serde_json::from_str(&real.kubectl(&["get", "rs", "-n", namespace, "-o", "json"])).unwrap();
    sets["items"].as_array().unwrap().iter().any(|rs| {
        let owned = rs["metadata"]["ownerReferences"]
            .as_array()
            .is_some_and(|o| o.iter().any(|r| r["uid"] == obj["metadata"]["uid"]));
        let mut template = rs["spec"]["template"].clone();
        if let Some(labels) = template["metadata"]["labels"].as_object_mut() {
            labels.remove("pod-template-hash");
        }
        owned
            && template == obj["spec"]["template"]
            && rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == *revision
    })
}

/// Where the two servers' `what` in `namespace` differ, up to what servers
/// assign (see [`normalize`]); `status` is compared only `with_status`.
fn compare(sides: &[Side; 2], what: &str, namespace: &str, with_status: bool) -> Vec<String> {
    let [sim, real] = sides;
    let mut a = normalize(sim.get(what, namespace));
    // The real controllers work in their own time (the simulator's act
    // within the write): wait until they have caught up.
    let mut b = Value::Null;
    real.sandbox
        .wait_for(&format!("{what} settled by its controller"), || {
            b = real.get(what, namespace);
            settled(real, &b, namespace)
        });
    let mut b = normalize(b);
    if !with_status {
        for v in [&mut a, &mut b] {
            v.as_object_mut().unwrap().remove("status");
        }
    }
    let mut diffs = Vec::new();
    differences(&a, &b, what, &mut diffs);
    diffs
}

/// Asserts that both servers hold the same objects (see [`compare`]).
fn assert_same(sides: &[Side; 2], namespace: &str, objects: &[&str]) {
    let mut diffs = Vec::new();
    for what in objects {
        diffs.extend(compare(sides, what, namespace, false));
    }
    assert_none(diffs);
}

/// Asserts that nothing differs, listing every difference.
fn assert_none(diffs: Vec<String>) {
    assert!(
        diffs.is_empty(),
        "the simulator differs from kube-apiserver:\n  {}",
        diffs.join("\n  ")
    );
}

/// A StatefulSet and a DaemonSet as a user writes them (defaults left out).
fn workloads(namespace: &str) -> String {
    json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "apps/v1", "kind": "StatefulSet",
         "metadata": {"name": "db", "namespace": namespace},
         "spec": {"serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                  "template": {"metadata": {"labels": {"app": "db"}},
                               "spec": {"nodeSelector": {"disk": "ssd"},
                                        "containers": [{"name": "pg", "image": "postgres:17",
                                                        "readinessProbe": {"tcpSocket": {"port": 5432}}}]}}}},
        {"apiVersion": "apps/v1", "kind": "DaemonSet",
         "metadata": {"name": "agent", "namespace": namespace},
         "spec": {"selector": {"matchLabels": {"app": "agent"}},
                  "template": {"metadata": {"labels": {"app": "agent"}},
                               "spec": {"containers": [{"name": "a", "image": "busybox:1.37"}]}}}}
    ]})
    .to_string()
}

/// Objects created by kubectl's generators, by `kubectl create -f` and by
/// server-side apply of the Online Boutique's manifests: the servers default
/// the same fields, and record the same field managers.
#[test]
fn created_objects_are_defaulted_and_managed_alike() {
    const NS: &str = "parity-create";
    let (sim, real) = pair(NS);
    let both = sides(&sim, &real);
    for side in &both {
        side.create(
            NS,
            &["deployment", "web", "--image=nginx:1.27", "--replicas=2"],
        );
        side.create(NS, &["configmap", "flags", "--from-literal=a=1"]);
        side.create(NS, &["secret", "generic", "db", "--from-literal=p=x"]);
        side.create(NS, &["service", "clusterip", "web", "--tcp=80:8080"]);
        side.create(NS, &["serviceaccount", "robot"]);
        side.sandbox
            .kubectl_stdin(&["create", "--validate=false"], &workloads(NS));
        side.apply_shop(NS);
    }
    assert_same(
        &both,
        NS,
        &[
            "deployment/web",
            "configmap/flags",
            "secret/db",
            "service/web",
            "serviceaccount/robot",
            "statefulset/db",
            "daemonset/agent",
            "deployment/frontend",
            "service/frontend",
            "service/frontend-external",
            "serviceaccount/frontend",
        ],
    );
}

/// What kubectl's everyday changes leave behind: the objects, their
/// managers, and the revision the Deployment controller counts. `kubectl
/// scale` through the scale subresource gives `spec.replicas` to the scaler
/// only where someone owned it before (web was created with replicas; the
/// shop's frontend was applied without).
#[test]
fn kubectl_changes_leave_the_same_objects_and_managers() {
    const NS: &str = "parity-change";
    let (sim, real) = pair(NS);
    let both = sides(&sim, &real);
    for side in &both {
        side.create(
            NS,
            &["deployment", "web", "--image=nginx:1.27", "--replicas=1"],
        );
        side.create(NS, &["configmap", "flags", "--from-literal=a=1"]);
        side.apply_shop(NS);
        side.kubectl(&["scale", "-n", NS, "deployment/web", "--replicas=3"]);
        side.kubectl(&["scale", "-n", NS, "deployment/frontend", "--replicas=2"]);
        side.kubectl(&["label", "-n", NS, "deployment/frontend", "tier=web"]);
        side.kubectl(&["annotate", "-n", NS, "service/frontend", "team=payments"]);
        side.kubectl(&[
            "set",
            "image",
            "-n",
            NS,
            "deployment/web",
            "nginx=nginx:1.28",
        ]);
        side.kubectl(&[
            "patch",
            "-n",
            NS,
            "configmap/flags",
            "-p",
            r#"{"data":{"a":"2","b":"1"}}"#,
        ]);
        side.kubectl(&["patch", "-n", NS, "deployment/frontend", "--type=json", "-p",
            r#"[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"frontend:v2"}]"#]);
    }
    assert_same(
        &both,
        NS,
        &[
            "deployment/web",
            "deployment/frontend",
            "service/frontend",
            "configmap/flags",
        ],
    );
}

/// A list's and a watch's wire shapes, and the 410 a watch from a
/// compacted resourceVersion gets: HTTP 200, then one ERROR event.
#[test]
fn lists_watches_and_expired_watches_have_the_same_shape() {
    const NS: &str = "parity-wire";
    let (sim, real) = pair(NS);
    let both = sides(&sim, &real);
    let path = format!("/api/v1/namespaces/{NS}/configmaps");
    let mut shapes = Vec::new();
    for side in &both {
        side.create(NS, &["configmap", "flags", "--from-literal=a=1"]);
        let list: Value = serde_json::from_str(&side.kubectl(&["get", "--raw", &path])).unwrap();
        let before = list["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_string();
        side.kubectl(&[
            "patch",
            "-n",
            NS,
            "configmap/flags",
            "-p",
            r#"{"data":{"a":"2"}}"#,
        ]);
        let watch_from_before = format!("{path}?watch=1&resourceVersion={before}&timeoutSeconds=1");
        let events = side.raw_lines(&watch_from_before);
        // Compacted history past the patch: the simulator forgets by
        // itself, etcd is told to (ConfigMaps reach etcd: they bypass the
        // watch cache). One more write first, so that the compaction
        // revision is past the patch (see the next test for a watch that
        // starts exactly at it).
        side.create(NS, &["configmap", "later", "--from-literal=a=1"]);
        if side.name == "simulator" {
            sim.sim.compact();
        } else {
            real.kube.compact();
        }
        let expired = side.raw_lines(&watch_from_before);
        let keys = |v: &Value| {
            let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
            k.sort();
            k
        };
        let item = &list["items"].as_array().unwrap()[0];
        shapes.push(json!({
            "list": {"kind": list["kind"], "apiVersion": list["apiVersion"], "keys": keys(&list),
                     "metadata": keys(&list["metadata"]), "item": keys(item)},
            "watch": events.iter().map(|e| json!({
                "type": e["type"], "keys": keys(e), "object": keys(&e["object"]),
                "kind": e["object"]["kind"], "apiVersion": e["object"]["apiVersion"],
                "data": e["object"]["data"],
            })).collect::<Vec<_>>(),
            // (The message depends on the path: the watch cache says "too old
            // resource version: R (F)", etcd "The resourceVersion for the
            // provided watch is too old.")
            "expired": expired.iter().map(|e| json!({
                "type": e["type"], "kind": e["object"]["kind"], "code": e["object"]["code"],
                "reason": e["object"]["reason"], "status": e["object"]["status"],
            })).collect::<Vec<_>>(),
        }));
    }
    let mut diffs = Vec::new();
    differences(&shapes[0], &shapes[1], "wire", &mut diffs);
    assert_none(diffs);
    let real_shape = &shapes[1];
    assert_eq!(real_shape["watch"][0]["type"], "MODIFIED", "{real_shape:#}");
    assert_eq!(real_shape["watch"][0]["data"]["a"], "2", "{real_shape:#}");
    assert_eq!(
        real_shape["expired"].as_array().unwrap().len(),
        1,
        "{real_shape:#}"
    );
    assert_eq!(real_shape["expired"][0]["type"], "ERROR", "{real_shape:#}");
    assert_eq!(real_shape["expired"][0]["code"], 410, "{real_shape:#}");
}

/// Every object event a server streams is read in the recorder's one walk
/// (docs/journal.md, "Where the recorder's time goes"): the line as the
/// server wrote it, `{"type":...,"object":...}`, taken whole. The other way,
/// part by part, gives the same answer, only slower.
#[test]
fn every_object_event_is_read_in_one_walk() {
    use krply::recorder::wire::{WireEvent, decode_in_one_walk, decode_line};
    const NS: &str = "parity-one-walk";
    let (sim, real) = pair(NS);
    for side in sides(&sim, &real) {
        let list: Value = serde_json::from_str(&side.kubectl(&[
            "get",
            "--raw",
            &format!("/api/v1/namespaces/{NS}/configmaps"),
        ]))
        .unwrap();
        let from = list["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_string();
        side.create(NS, &["configmap", "walk", "--from-literal=a=1"]);
        side.kubectl(&[
            "patch",
            "-n",
            NS,
            "configmap/walk",
            "-p",
            r#"{"data":{"a":"2"}}"#,
        ]);
        side.kubectl(&["delete", "-n", NS, "configmap/walk"]);
        let lines = side.raw_text_lines(&format!(
            "/api/v1/namespaces/{NS}/configmaps?watch=1&resourceVersion={from}&timeoutSeconds=1"
        ));
        let mut types = Vec::new();
        for line in &lines {
            let event: Value = serde_json::from_str(line).unwrap();
            let kind = event["type"].as_str().unwrap_or_default().to_string();
            if kind == "BOOKMARK" || kind == "ERROR" {
                continue;
            }
            let walked = decode_in_one_walk(line.as_bytes());
            assert!(
                matches!(walked, Some(WireEvent::Object { .. })),
                "{}: not read in one walk: {line}",
                side.name
            );
            assert_eq!(walked, decode_line(line.as_bytes()).ok(), "{}", side.name);
            types.push(kind);
        }
        assert_eq!(types, ["ADDED", "MODIFIED", "DELETED"], "{}", side.name);
    }
}

/// An object relabelled out of a watch's label selector: the watch sees it
/// DELETED, as it was before the write (still matching), at the write's
/// resourceVersion. The truth checker's selector streams rely on it.
#[test]
fn an_object_leaving_a_selector_is_deleted_as_it_was_at_the_writes_version() {
    const NS: &str = "parity-selector";
    let (sim, real) = pair(NS);
    let both = sides(&sim, &real);
    let path = format!("/api/v1/namespaces/{NS}/configmaps");
    let mut seen = Vec::new();
    for side in &both {
        side.create(NS, &["configmap", "sel", "--from-literal=a=1"]);
        side.kubectl(&["label", "-n", NS, "configmap/sel", "tier=web"]);
        let list: Value = serde_json::from_str(&side.kubectl(&["get", "--raw", &path])).unwrap();
        let from = list["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_string();
        side.kubectl(&["label", "-n", NS, "configmap/sel", "tier=db", "--overwrite"]);
        let now = side.get("configmap/sel", NS);
        let events = side.raw_lines(&format!(
            "{path}?watch=1&resourceVersion={from}&labelSelector=tier%3Dweb&timeoutSeconds=1"
        ));
        let event = events
            .iter()
            .find(|e| e["type"] != "BOOKMARK")
            .unwrap_or_else(|| panic!("{}: no event in {events:#?}", side.name))
            .clone();
        seen.push(json!({
            "type": event["type"],
            "tier": event["object"]["metadata"]["labels"]["tier"],
            "at_the_writes_version":
                event["object"]["metadata"]["resourceVersion"] == now["metadata"]["resourceVersion"],
            "data": event["object"]["data"],
        }));
    }
    assert_eq!(seen[0], seen[1], "simulator, then real: {seen:#?}");
    assert_eq!(
        seen[1],
        json!({"type": "DELETED", "tier": "web", "at_the_writes_version": true, "data": {"a": "1"}}),
        "the real server"
    );
}

/// Deleting a namespace, as a watch of namespaces sees it: first MODIFIED,
/// Terminating with a deletionTimestamp, then DELETED once the namespace
/// controller has emptied it.
#[test]
fn a_deleted_namespace_terminates_then_goes() {
    const NS: &str = "parity-ns";
    const GONE: &str = "parity-ns-gone";
    let (sim, real) = pair(NS);
    let both = sides(&sim, &real);
    let mut seen = Vec::new();
    for side in &both {
        side.create(NS, &["namespace", GONE]);
        side.create(GONE, &["configmap", "flags", "--from-literal=a=1"]);
        let list: Value =
            serde_json::from_str(&side.kubectl(&["get", "--raw", "/api/v1/namespaces"])).unwrap();
        let rv = list["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_string();
        side.kubectl(&["delete", "namespace", GONE, "--timeout=60s"]);
        let events: Vec<Value> = side
            .raw_lines(&format!(
                "/api/v1/namespaces?watch=1&resourceVersion={rv}&timeoutSeconds=1"
            ))
            .into_iter()
            .filter(|e| e["object"]["metadata"]["name"] == GONE)
            .collect();
        let first = &events[0];
        let last = &events[events.len() - 1];
        seen.push(json!({
            "first": {"type": first["type"], "phase": first["object"]["status"]["phase"],
                      "deleting": first["object"]["metadata"]["deletionTimestamp"].is_string()},
            "last": {"type": last["type"], "phase": last["object"]["status"]["phase"]},
            "deleted": events.iter().filter(|e| e["type"] == "DELETED").count(),
        }));
    }
    let mut diffs = Vec::new();
    differences(&seen[0], &seen[1], "namespace", &mut diffs);
    assert_none(diffs);
    assert_eq!(
        seen[1],
        json!({"first": {"type": "MODIFIED", "phase": "Terminating", "deleting": true},
               "last": {"type": "DELETED", "phase": "Terminating"}, "deleted": 1})
    );
}

/// A watch that starts exactly at etcd's compaction revision (from the
/// resourceVersion just before it) is opened, then refused in the stream
/// with 500 InternalError "etcd event received with PrevKv=nil": the event
/// is there, its previous version is compacted away. Every retry from there
/// gets the same, so the recorder counts it toward its three strikes
/// (`record::a_watch_refused_in_the_stream_again_and_again_becomes_a_gap_and_a_relist`
/// drives that against the simulator's injected copy of this answer).
#[test]
fn a_watch_from_just_before_the_compaction_revision_is_refused_in_the_stream_with_500() {
    const NS: &str = "parity-prevkv";
    let real = RealEnv::new(NS);
    real.create_namespace(NS);
    real.kubectl_ok(&["create", "configmap", "flags", "--from-literal=a=1"]);
    let patched: Value = serde_json::from_str(&real.kubectl_ok(&[
        "patch",
        "configmap/flags",
        "-p",
        r#"{"data":{"a":"2"}}"#,
        "-o",
        "json",
    ]))
    .unwrap();
    // Tests may treat a resourceVersion as etcd's revision; the product never does.
    let revision: u64 = patched["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    real.kube.compact_to(revision);
    let side = Side {
        name: "kube-apiserver",
        sandbox: &real,
    };
    for _ in 0..2 {
        let events = side.raw_lines(&format!(
            "/api/v1/namespaces/{NS}/configmaps?watch=1&resourceVersion={}&timeoutSeconds=1",
            revision - 1
        ));
        assert_eq!(events.len(), 1, "{events:#?}");
        let status = &events[0]["object"];
        assert_eq!(events[0]["type"], "ERROR");
        assert_eq!(
            (&status["code"], &status["reason"]),
            (&json!(500), &json!("InternalError"))
        );
        assert!(
            status["message"].as_str().unwrap().contains("PrevKv=nil"),
            "{status:#}"
        );
    }
}
