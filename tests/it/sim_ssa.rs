//! Server-side apply against the simulator over HTTP with kube-rs, as the
//! replay plan drives it: `PatchParams::apply(manager)` (+ `.dry_run()`,
//! `.force()`) and `Patch::Apply`. Every wait has a deadline.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Service, ServiceAccount};
use krply_sim::{Seed, SimConfig, Simulator};
use kube::api::{
    Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::{Client, Config};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(10);
const PLAN: &str = "krply-plan-test";

fn client(sim: &Simulator) -> Client {
    let mut cfg = Config::new(sim.url().parse().expect("simulator URL"));
    cfg.default_retry = false;
    Client::try_from(cfg).expect("client")
}

async fn shop() -> (Simulator, Client) {
    let sim = Simulator::start(SimConfig {
        seed: Seed::Shop,
        ..Default::default()
    })
    .await
    .expect("simulator starts");
    let c = client(&sim);
    (sim, c)
}

fn api<K: kube::Resource<DynamicType = ()>>(client: &Client, ns: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), ns, &ApiResource::erase::<K>(&()))
}

fn obj(v: Value) -> DynamicObject {
    serde_json::from_value(v).expect("a DynamicObject")
}

fn deployment(ns: &str, replicas: Option<i64>, image: &str) -> Value {
    let mut d = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": ns, "labels": {"app": "web"}},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
                {"name": "server", "image": image, "ports": [{"containerPort": 8080}]}
            ]}}
        }
    });
    if let Some(r) = replicas {
        d["spec"]["replicas"] = json!(r);
    }
    d
}

fn apply(manager: &str) -> PatchParams {
    PatchParams::apply(manager)
}

fn status(e: kube::Error) -> Box<kube::core::Status> {
    match e {
        kube::Error::Api(s) => s,
        other => panic!("expected an API error, got {other}"),
    }
}

fn as_value(o: &DynamicObject) -> Value {
    serde_json::to_value(o).expect("JSON")
}

/// The managedFields entry of `manager` with `operation`.
fn entry(o: &Value, manager: &str, operation: &str) -> Option<Value> {
    o["metadata"]["managedFields"]
        .as_array()?
        .iter()
        .find(|m| m["manager"] == manager && m["operation"] == operation)
        .cloned()
}

fn events_for(sim: &Simulator, name: &str) -> usize {
    sim.event_log().iter().filter(|e| e.name == name).count()
}

#[tokio::test(flavor = "multi_thread")]
async fn apply_creates_with_exactly_the_applied_fields() {
    let (sim, client) = shop().await;
    let deploys = api::<Deployment>(&client, "shop");
    let created = deploys
        .patch(
            "web",
            &apply(PLAN),
            &Patch::Apply(obj(deployment("shop", Some(2), "web:1"))),
        )
        .await
        .expect("created");
    let v = as_value(&created);
    // Server-owned fields and defaults, as on create.
    assert!(created.metadata.uid.is_some());
    assert_eq!(created.metadata.generation, Some(1));
    assert!(created.metadata.creation_timestamp.is_some());
    assert_eq!(v["spec"]["strategy"]["type"], "RollingUpdate");
    assert_eq!(
        v["spec"]["template"]["spec"]["containers"][0]["ports"][0]["protocol"],
        "TCP"
    );
    assert_eq!(v["status"]["readyReplicas"], 2, "the simulated controller");
    let mine = entry(&v, PLAN, "Apply").expect("an Apply entry");
    assert_eq!(mine["apiVersion"], "apps/v1");
    assert!(mine.get("subresource").is_none());
    assert_eq!(
        mine["fieldsV1"],
        json!({
            "f:metadata": {"f:labels": {"f:app": {}}},
            "f:spec": {
                "f:replicas": {},
                "f:selector": {},
                "f:template": {
                    "f:metadata": {"f:labels": {"f:app": {}}},
                    "f:spec": {"f:containers": {"k:{\"name\":\"server\"}": {
                        ".": {}, "f:image": {}, "f:name": {},
                        "f:ports": {"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}
                    }}}
                }
            }
        })
    );
    assert_eq!(
        v["metadata"]["managedFields"][0]["manager"], PLAN,
        "Apply entries come first"
    );
    let log = sim.event_log();
    let added = log.iter().find(|e| e.name == "web").expect("an event");
    assert_eq!(
        (added.event_type.as_str(), added.kind.as_str()),
        ("ADDED", "Deployment")
    );
    // The HTTP answer was 201 Created.
    let req = sim
        .request_log()
        .into_iter()
        .find(|r| r.method == "PATCH")
        .expect("the PATCH");
    assert_eq!(req.status, 201);
    assert_eq!(
        req.content_type.as_deref(),
        Some("application/apply-patch+yaml")
    );
    assert!(req.path_and_query.contains("fieldManager=krply-plan-test"));
}

#[tokio::test(flavor = "multi_thread")]
async fn reapplying_the_same_configuration_is_a_no_op() {
    let (sim, client) = shop().await;
    let deploys = api::<Deployment>(&client, "shop");
    let config = obj(deployment("shop", Some(2), "web:1"));
    let first = deploys
        .patch("web", &apply(PLAN), &Patch::Apply(&config))
        .await
        .unwrap();
    let (rv, events) = (sim.current_rv(), sim.event_log().len());
    let second = deploys
        .patch("web", &apply(PLAN), &Patch::Apply(&config))
        .await
        .unwrap();
    assert_eq!(
        second.metadata.resource_version,
        first.metadata.resource_version
    );
    assert_eq!(sim.current_rv(), rv);
    assert_eq!(sim.event_log().len(), events);
    assert_eq!(
        second.metadata.managed_fields, first.metadata.managed_fields,
        "the entry keeps its time"
    );
    let last = sim.request_log().pop().expect("the second PATCH");
    assert_eq!(last.status, 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dry_run_stores_nothing_and_emits_nothing() {
    let (sim, client) = shop().await;
    let deploys = api::<Deployment>(&client, "shop");
    let cms = api::<ConfigMap>(&client, "shop");
    let rv = sim.current_rv();
    let events = sim.event_log().len();
    let mut stream = deploys
        .watch(&WatchParams::default(), &rv)
        .await
        .expect("watch")
        .boxed();
    assert!(sim.wait_open_watches_async(1, WAIT).await);
    // A create and a change of an existing object, both dry.
    let dry = deploys
        .patch(
            "web",
            &apply(PLAN).dry_run(),
            &Patch::Apply(obj(deployment("shop", Some(3), "web:1"))),
        )
        .await
        .expect("dry-run create");
    assert!(dry.metadata.uid.is_some(), "computed in full");
    assert_eq!(as_value(&dry)["spec"]["replicas"], 3);
    assert!(entry(&as_value(&dry), PLAN, "Apply").is_some());
    let mut frontend = as_value(&deploys.get("frontend").await.unwrap());
    let before = frontend.clone();
    strip(&mut frontend);
    frontend["spec"]["replicas"] = json!(4);
    let changed = deploys
        .patch(
            "frontend",
            &apply(PLAN).dry_run().force(),
            &Patch::Apply(obj(frontend)),
        )
        .await
        .expect("dry-run update");
    assert_eq!(as_value(&changed)["spec"]["replicas"], 4);
    assert_eq!(sim.current_rv(), rv);
    assert_eq!(sim.event_log().len(), events);
    assert!(
        sim.get("apps/v1", "Deployment", Some("shop"), "web")
            .is_none()
    );
    assert_eq!(
        as_value(&deploys.get("frontend").await.unwrap()),
        before,
        "unchanged"
    );
    // The first event the watch delivers is a later real write.
    cms.patch(
        "feature-flags",
        &apply(PLAN),
        &Patch::Apply(obj(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "feature-flags", "namespace": "shop"},
            "data": {"ads.enabled": "false"}
        }))),
    )
    .await
    .expect("a real apply of another kind");
    deploys
        .patch(
            "web",
            &apply(PLAN),
            &Patch::Apply(obj(deployment("shop", Some(1), "web:1"))),
        )
        .await
        .expect("real create");
    let first = tokio::time::timeout(WAIT, stream.try_next())
        .await
        .expect("an event in time")
        .expect("a watch event")
        .expect("open stream");
    let WatchEvent::Added(o) = first else {
        panic!("expected ADDED, got {first:?}");
    };
    assert_eq!(o.metadata.name.as_deref(), Some("web"));
    assert_eq!(as_value(&o)["spec"]["replicas"], 1);
}

/// What a replay plan strips from an object before applying it.
fn strip(o: &mut Value) {
    if let Some(m) = o["metadata"].as_object_mut() {
        for k in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "generation",
            "managedFields",
        ] {
            m.shift_remove(k);
        }
    }
    if let Some(m) = o.as_object_mut() {
        m.shift_remove("status");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dry_run_into_a_missing_namespace_is_not_found() {
    let (sim, client) = shop().await;
    let rv = sim.current_rv();
    let cms = api::<ConfigMap>(&client, "replay-1");
    let err = cms
        .patch(
            "flags",
            &apply("krply-plan-1").dry_run(),
            &Patch::Apply(obj(json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "flags", "namespace": "replay-1"},
                "data": {"a": "b"}
            }))),
        )
        .await
        .unwrap_err();
    let s = status(err);
    assert_eq!((s.code, s.reason.as_str()), (404, "NotFound"));
    assert_eq!(s.message, "namespaces \"replay-1\" not found");
    let d = s.details.expect("details");
    assert_eq!(
        (d.name.as_str(), d.kind.as_str()),
        ("replay-1", "namespaces")
    );
    assert_eq!(sim.current_rv(), rv);
    // The namespace itself dry-runs fine (and is not created).
    let nss = Api::<DynamicObject>::all_with(client, &ApiResource::erase::<Namespace>(&()));
    let ns = nss
        .patch(
            "replay-1",
            &apply("krply-plan-1").dry_run(),
            &Patch::Apply(obj(
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "replay-1"}}),
            )),
        )
        .await
        .expect("namespace dry run");
    assert_eq!(as_value(&ns)["status"]["phase"], "Active");
    assert!(sim.get("v1", "Namespace", None, "replay-1").is_none());
    assert_eq!(sim.current_rv(), rv);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_field_another_manager_set_conflicts_unless_equal_or_forced() {
    let (sim, client) = shop().await;
    let deploys = api::<Deployment>(&client, "shop");
    deploys
        .patch(
            "web",
            &apply(PLAN),
            &Patch::Apply(obj(deployment("shop", None, "web:1"))),
        )
        .await
        .unwrap();
    // kubectl scales it with a merge patch: it owns spec.replicas (Update).
    let kubectl = PatchParams {
        field_manager: Some("kubectl".into()),
        ..Default::default()
    };
    let scaled = deploys
        .patch(
            "web",
            &kubectl,
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .unwrap();
    let kubectl_entry = entry(&as_value(&scaled), "kubectl", "Update").expect("kubectl's entry");
    assert_eq!(
        kubectl_entry["fieldsV1"],
        json!({"f:spec": {"f:replicas": {}}})
    );
    let rv = sim.current_rv();
    let err = deploys
        .patch(
            "web",
            &apply(PLAN),
            &Patch::Apply(obj(deployment("shop", Some(5), "web:1"))),
        )
        .await
        .unwrap_err();
    let s = status(err);
    assert_eq!((s.code, s.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        s.message,
        "Apply failed with 1 conflict: conflict with \"kubectl\" using apps/v1: .spec.replicas"
    );
    let causes = s.details.expect("details").causes;
    assert_eq!(causes.len(), 1);
    assert_eq!(
        (
            causes[0].reason.as_str(),
            causes[0].message.as_str(),
            causes[0].field.as_str()
        ),
        (
            "FieldManagerConflict",
            "conflict with \"kubectl\" using apps/v1",
            ".spec.replicas"
        )
    );
    assert_eq!(sim.current_rv(), rv, "nothing written");
    // A dry run reports the same conflict.
    let dry = deploys
        .patch(
            "web",
            &apply(PLAN).dry_run(),
            &Patch::Apply(obj(deployment("shop", Some(5), "web:1"))),
        )
        .await
        .unwrap_err();
    assert_eq!(status(dry).code, 409);
    // The value kubectl set is not a conflict: both own it.
    let shared = deploys
        .patch(
            "web",
            &apply(PLAN),
            &Patch::Apply(obj(deployment("shop", Some(3), "web:1"))),
        )
        .await
        .expect("same value");
    let v = as_value(&shared);
    assert!(entry(&v, "kubectl", "Update").is_some());
    assert_eq!(
        entry(&v, PLAN, "Apply").unwrap()["fieldsV1"]["f:spec"]["f:replicas"],
        json!({})
    );
    // Forced, the field changes hands: kubectl owned nothing else and goes.
    let forced = deploys
        .patch(
            "web",
            &apply(PLAN).force(),
            &Patch::Apply(obj(deployment("shop", Some(5), "web:1"))),
        )
        .await
        .expect("forced");
    let v = as_value(&forced);
    assert_eq!(v["spec"]["replicas"], 5);
    assert!(entry(&v, "kubectl", "Update").is_none());
    assert_eq!(
        sim.event_log().last().map(|e| e.event_type.clone()),
        Some("MODIFIED".into())
    );
    // The in-process API reports conflicts the same way.
    sim.patch_merge(
        "apps/v1",
        "Deployment",
        Some("shop"),
        "web",
        &json!({"spec": {"template": {"spec": {"containers": [{"name": "server", "image": "web:9", "ports": [{"containerPort": 8080, "protocol": "TCP"}]}]}}}}),
    )
    .unwrap();
    let e = sim
        .apply(deployment("shop", Some(5), "web:2"), PLAN, false, false)
        .unwrap_err();
    assert_eq!((e.code(), e.reason()), (Some(409), Some("Conflict")));
    let fields: Vec<String> = e.causes().into_iter().map(|c| c.field).collect();
    assert_eq!(
        fields,
        [".spec.template.spec.containers[name=\"server\"].image"],
        "krply-sim owns the image it changed"
    );
    assert_eq!(
        e.causes()[0].message,
        "conflict with \"krply-sim\" using apps/v1"
    );
    let ok = sim
        .apply(deployment("shop", Some(5), "web:2"), PLAN, true, false)
        .unwrap();
    assert_eq!(
        ok["spec"]["template"]["spec"]["containers"][0]["image"],
        "web:2"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn fields_a_manager_stops_applying_are_removed_unless_someone_owns_them() {
    let (_sim, client) = shop().await;
    let cms = api::<ConfigMap>(&client, "shop");
    let cm = |data: Value, labels: Value| {
        obj(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": "shop", "labels": labels},
            "data": data
        }))
    };
    cms.patch(
        "settings",
        &apply(PLAN),
        &Patch::Apply(cm(
            json!({"a": "1", "b": "2", "c": "3"}),
            json!({"team": "web", "tier": "fe"}),
        )),
    )
    .await
    .unwrap();
    // Another applier shares b; an updater sets d.
    cms.patch(
        "settings",
        &apply("other"),
        &Patch::Apply(cm(json!({"b": "2"}), json!({}))),
    )
    .await
    .unwrap();
    cms.patch(
        "settings",
        &PatchParams {
            field_manager: Some("kubectl".into()),
            ..Default::default()
        },
        &Patch::Merge(json!({"data": {"d": "4"}})),
    )
    .await
    .unwrap();
    let out = cms
        .patch(
            "settings",
            &apply(PLAN),
            &Patch::Apply(cm(json!({"a": "1"}), json!({"team": "web"}))),
        )
        .await
        .unwrap();
    let v = as_value(&out);
    assert_eq!(
        v["data"],
        json!({"a": "1", "b": "2", "d": "4"}),
        "c removed, b kept for \"other\", d never applied"
    );
    assert_eq!(v["metadata"]["labels"], json!({"team": "web"}));
    let mine = entry(&v, PLAN, "Apply").unwrap();
    assert_eq!(
        mine["fieldsV1"],
        json!({"f:data": {"f:a": {}}, "f:metadata": {"f:labels": {"f:team": {}}}})
    );
    // Once "other" stops applying b too, nobody owns it and it goes.
    let out = cms
        .patch(
            "settings",
            &apply("other"),
            &Patch::Apply(obj(json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "settings", "namespace": "shop"}
            }))),
        )
        .await
        .unwrap();
    let v = as_value(&out);
    assert_eq!(v["data"], json!({"a": "1", "d": "4"}));
    assert!(entry(&v, "other", "Apply").is_none(), "it owns nothing");
    // Keyed lists: a container the applier drops goes.
    let deploys = api::<Deployment>(&client, "shop");
    let mut two = deployment("shop", Some(1), "web:1");
    two["spec"]["template"]["spec"]["containers"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "sidecar", "image": "envoy:1"}));
    deploys
        .patch("web", &apply(PLAN), &Patch::Apply(obj(two)))
        .await
        .unwrap();
    let one = deploys
        .patch(
            "web",
            &apply(PLAN),
            &Patch::Apply(obj(deployment("shop", Some(1), "web:1"))),
        )
        .await
        .unwrap();
    let names: Vec<Value> = as_value(&one)["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].clone())
        .collect();
    assert_eq!(names, [json!("server")]);
    assert_eq!(one.metadata.generation, Some(2));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_applied_cluster_ip_cannot_change() {
    let (sim, client) = shop().await;
    let svcs = api::<Service>(&client, "shop");
    let svc = |ip: Option<&str>| {
        let mut s = json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}
        });
        if let Some(ip) = ip {
            s["spec"]["clusterIP"] = json!(ip);
        }
        obj(s)
    };
    let created = svcs
        .patch("web", &apply(PLAN), &Patch::Apply(svc(None)))
        .await
        .unwrap();
    let v = as_value(&created);
    let ip = v["spec"]["clusterIP"]
        .as_str()
        .expect("allocated")
        .to_string();
    assert_eq!(v["spec"]["clusterIPs"], json!([ip]));
    assert!(
        entry(&v, PLAN, "Apply").unwrap()["fieldsV1"]["f:spec"]
            .get("f:clusterIP")
            .is_none(),
        "an allocation is nobody's"
    );
    // The same IP, and no IP at all, apply cleanly.
    svcs.patch("web", &apply(PLAN), &Patch::Apply(svc(Some(&ip))))
        .await
        .expect("same IP");
    svcs.patch("web", &apply(PLAN), &Patch::Apply(svc(None)))
        .await
        .expect("no IP");
    let rv = sim.current_rv();
    let err = svcs
        .patch(
            "web",
            &apply(PLAN).dry_run(),
            &Patch::Apply(svc(Some("10.96.0.200"))),
        )
        .await
        .unwrap_err();
    let s = status(err);
    assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        s.message,
        "Service \"web\" is invalid: spec.clusterIPs[0]: Invalid value: []string{\"10.96.0.200\"}: may not change once set"
    );
    assert_eq!(sim.current_rv(), rv);
    // A Service created by kubectl create: its allocations are not the creator's either.
    let err = svcs
        .patch(
            "frontend",
            &apply(PLAN),
            &Patch::Apply(obj(json!({
                "apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "frontend", "namespace": "shop"},
                "spec": {"clusterIP": "10.96.0.201"}
            }))),
        )
        .await
        .unwrap_err();
    assert_eq!(status(err).code, 422);
}

#[tokio::test(flavor = "multi_thread")]
async fn applying_a_namespace_brings_its_defaults() {
    let (sim, client) = shop().await;
    let nss = Api::<DynamicObject>::all_with(client.clone(), &ApiResource::erase::<Namespace>(&()));
    let ns = nss
        .patch(
            "replay-2",
            &apply("krply-plan-2"),
            &Patch::Apply(obj(json!({
                "apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": "replay-2", "labels": {"krply.dev/replay": "2"}}
            }))),
        )
        .await
        .expect("namespace");
    let v = as_value(&ns);
    assert_eq!(
        v["metadata"]["labels"]["kubernetes.io/metadata.name"],
        "replay-2"
    );
    assert_eq!(v["status"]["phase"], "Active");
    let cm: Api<ConfigMap> = Api::namespaced(client.clone(), "replay-2");
    let root = cm.get("kube-root-ca.crt").await.expect("root CA");
    assert!(root.data.unwrap().contains_key("ca.crt"));
    let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), "replay-2");
    sas.get("default").await.expect("default SA");
    // The objects of the plan now dry-run and apply into it.
    let deploys = api::<Deployment>(&client, "replay-2");
    deploys
        .patch(
            "web",
            &apply("krply-plan-2").dry_run(),
            &Patch::Apply(obj(deployment("replay-2", Some(1), "web:1"))),
        )
        .await
        .expect("dry run");
    deploys
        .patch(
            "web",
            &apply("krply-plan-2"),
            &Patch::Apply(obj(deployment("replay-2", Some(1), "web:1"))),
        )
        .await
        .expect("apply");
    let kinds: Vec<(String, String)> = sim
        .event_log()
        .into_iter()
        .filter(|e| e.namespace.as_deref() == Some("replay-2") || e.name == "replay-2")
        .map(|e| (e.event_type, e.kind))
        .collect();
    assert_eq!(
        kinds,
        [
            ("ADDED".to_string(), "Namespace".to_string()),
            ("ADDED".into(), "ConfigMap".into()),
            ("ADDED".into(), "ServiceAccount".into()),
            ("ADDED".into(), "Deployment".into()),
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sanitized_copy_of_a_recorded_object_applies_cleanly() {
    let (sim, client) = shop().await;
    let deploys = api::<Deployment>(&client, "shop");
    let svcs = api::<Service>(&client, "shop");
    let mut d = as_value(&deploys.get("frontend").await.unwrap());
    strip(&mut d);
    let mut s = as_value(&svcs.get("frontend-external").await.unwrap());
    strip(&mut s);
    for k in ["clusterIP", "clusterIPs"] {
        s["spec"].as_object_mut().unwrap().shift_remove(k);
    }
    for p in s["spec"]["ports"].as_array_mut().unwrap() {
        p.as_object_mut().unwrap().shift_remove("nodePort");
    }
    // Into the source namespace: same values, no conflict with kubectl-create.
    let before = sim.current_rv();
    let out = deploys
        .patch("frontend", &apply(PLAN), &Patch::Apply(obj(d.clone())))
        .await
        .expect("no conflict");
    assert_eq!(
        out.metadata.generation,
        Some(1),
        "the object did not change"
    );
    assert!(entry(&as_value(&out), "kubectl-create", "Update").is_some());
    assert_ne!(sim.current_rv(), before, "managedFields changed: a write");
    svcs.patch(
        "frontend-external",
        &apply(PLAN).dry_run(),
        &Patch::Apply(obj(s.clone())),
    )
    .await
    .expect("service: no conflict");
    // Into a fresh namespace, mapped.
    let nss = Api::<Namespace>::all(client.clone());
    nss.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "copy"}})).unwrap(),
    )
    .await
    .unwrap();
    d["metadata"]["namespace"] = json!("copy");
    s["metadata"]["namespace"] = json!("copy");
    let copied = api::<Deployment>(&client, "copy")
        .patch("frontend", &apply(PLAN), &Patch::Apply(obj(d)))
        .await
        .expect("copied deployment");
    assert_eq!(copied.metadata.namespace.as_deref(), Some("copy"));
    let svc = api::<Service>(&client, "copy")
        .patch("frontend-external", &apply(PLAN), &Patch::Apply(obj(s)))
        .await
        .expect("copied service");
    let v = as_value(&svc);
    assert_ne!(
        v["spec"]["clusterIP"],
        as_value(&svcs.get("frontend-external").await.unwrap())["spec"]["clusterIP"],
        "a new allocation"
    );
    assert!(v["spec"]["ports"][0]["nodePort"].as_u64().is_some());
}

/// A raw request: status and parsed body.
async fn raw(client: &Client, path: &str, content_type: &str, body: &[u8]) -> (u16, Value) {
    let req = http::Request::builder()
        .method("PATCH")
        .uri(path)
        .header(http::header::CONTENT_TYPE, content_type)
        .body(kube::client::Body::from(body.to_vec()))
        .expect("request");
    let resp = client.send(req).await.expect("response");
    let status = resp.status().as_u16();
    let bytes = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .expect("body")
        .to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn apply_requests_are_checked_like_a_real_server() {
    let (sim, client) = shop().await;
    const YAML: &str = "application/apply-patch+yaml";
    let path = "/api/v1/namespaces/shop/configmaps/settings";
    let yaml =
        b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: fast\n";
    // No fieldManager.
    let (code, body) = raw(&client, path, YAML, yaml).await;
    assert_eq!(code, 422);
    assert_eq!(
        body["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
    );
    assert_eq!(body["details"]["causes"][0]["reason"], "FieldValueRequired");
    // YAML bodies; 201 on create, 200 after.
    let (code, body) = raw(&client, &format!("{path}?fieldManager=yaml"), YAML, yaml).await;
    assert_eq!((code, body["data"]["mode"].as_str()), (201, Some("fast")));
    let (code, _) = raw(
        &client,
        &format!("{path}?fieldManager=yaml&force=false"),
        YAML,
        yaml,
    )
    .await;
    assert_eq!(code, 200);
    // The body must name the object of the URL.
    let (code, body) = raw(
        &client,
        &format!("{path}?fieldManager=yaml"),
        YAML,
        b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\n",
    )
    .await;
    assert_eq!((code, body["reason"].as_str()), (400, Some("BadRequest")));
    assert_eq!(
        body["message"],
        "the name of the object (other) does not match the name on the URL (settings)"
    );
    let (code, body) = raw(
        &client,
        &format!("{path}?fieldManager=yaml"),
        YAML,
        b"apiVersion: apps/v1\nkind: ConfigMap\nmetadata:\n  name: settings\n",
    )
    .await;
    assert_eq!(code, 400);
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .starts_with("Incorrect version specified in apply patch")
    );
    // A keyed list without its keys does not fit the type: 500, as a real server says it.
    let (code, body) = raw(
        &client,
        "/apis/apps/v1/namespaces/shop/deployments/web?fieldManager=yaml",
        YAML,
        serde_json::to_vec(&deployment("shop", Some(1), "x"))
            .unwrap()
            .as_slice(),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let mut bad = deployment("shop", Some(1), "x");
    bad["spec"]["template"]["spec"]["containers"][0]
        .as_object_mut()
        .unwrap()
        .shift_remove("name");
    let (code, body) = raw(
        &client,
        "/apis/apps/v1/namespaces/shop/deployments/web?fieldManager=yaml",
        YAML,
        &serde_json::to_vec(&bad).unwrap(),
    )
    .await;
    assert_eq!(code, 500);
    assert_eq!(
        body["message"],
        "failed to create typed patch object (shop/web; apps/v1, Kind=Deployment): .spec.template.spec.containers: element 0: associative list with keys has an element that omits key field \"name\" (and doesn't have default value)"
    );
    // Strict validation refuses duplicate keys; the others take the last.
    let dup = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: a\n  mode: b\n";
    let (code, body) = raw(
        &client,
        &format!("{path}?fieldManager=yaml&fieldValidation=Strict"),
        YAML,
        dup,
    )
    .await;
    assert_eq!(code, 400, "{body}");
    let (code, body) = raw(
        &client,
        &format!("{path}?fieldManager=yaml&fieldValidation=Ignore"),
        YAML,
        dup,
    )
    .await;
    assert_eq!((code, body["data"]["mode"].as_str()), (200, Some("b")));
    let (code, _) = raw(
        &client,
        &format!("{path}?fieldManager=yaml&fieldValidation=Loose"),
        YAML,
        yaml,
    )
    .await;
    assert_eq!(code, 422);
    // A field the type does not have.
    let (code, body) = raw(
        &client,
        &format!("{path}?fieldManager=yaml"),
        YAML,
        b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\nspec:\n  x: 1\n",
    )
    .await;
    assert_eq!(code, 500);
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .ends_with(".spec: field not declared in schema")
    );
    // force belongs to apply patches only.
    let (code, body) = raw(
        &client,
        &format!("{path}?force=true"),
        "application/merge-patch+json",
        b"{}",
    )
    .await;
    assert_eq!(code, 422);
    assert_eq!(body["details"]["causes"][0]["field"], "force");
    assert!(
        sim.get("v1", "ConfigMap", Some("shop"), "settings")
            .is_some()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn watchers_see_applies_like_other_writes() {
    let (sim, client) = shop().await;
    let cms = api::<ConfigMap>(&client, "shop");
    let rv = sim.current_rv();
    let mut stream = cms
        .watch(&WatchParams::default(), &rv)
        .await
        .expect("watch")
        .boxed();
    assert!(sim.wait_open_watches_async(1, WAIT).await);
    let cm = |v: &str| {
        obj(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "w", "namespace": "shop"}, "data": {"v": v}}))
    };
    cms.patch("w", &apply(PLAN), &Patch::Apply(cm("1")))
        .await
        .unwrap();
    cms.patch("w", &apply(PLAN), &Patch::Apply(cm("1")))
        .await
        .unwrap();
    cms.patch("w", &apply(PLAN), &Patch::Apply(cm("2")))
        .await
        .unwrap();
    let mut seen = Vec::new();
    for _ in 0..2 {
        let e = tokio::time::timeout(WAIT, stream.try_next())
            .await
            .expect("in time")
            .expect("event")
            .expect("open");
        seen.push(match e {
            WatchEvent::Added(o) => ("ADDED", as_value(&o)["data"]["v"].clone()),
            WatchEvent::Modified(o) => ("MODIFIED", as_value(&o)["data"]["v"].clone()),
            other => panic!("unexpected {other:?}"),
        });
    }
    assert_eq!(seen, [("ADDED", json!("1")), ("MODIFIED", json!("2"))]);
    let logged: Vec<String> = sim
        .event_log()
        .into_iter()
        .filter(|e| e.name == "w")
        .map(|e| e.event_type)
        .collect();
    assert_eq!(logged, ["ADDED", "MODIFIED"]);
    assert_eq!(events_for(&sim, "w"), 2);
}
