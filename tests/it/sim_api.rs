//! The simulator driven over HTTP by kube-rs, as the recorder will drive it.
//! Every wait is on a condition with a deadline; nothing sleeps to synchronise.

use std::time::Duration;

use futures::{Stream, StreamExt};
use http::header::{HeaderValue, USER_AGENT};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret, ServiceAccount};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use krply_sim::{KubeconfigOptions as SimKubeconfig, Seed, SimConfig, Simulator};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
    VersionMatch, WatchEvent, WatchParams,
};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(10);
const UA: &str = "kubectl-krply/0.1.0 (sim-api-test)";

/// A client that shows every server answer as it is: kube 5 would otherwise
/// retry 429/503/504 itself (`Config::default_retry`).
fn client(sim: &Simulator) -> Client {
    client_with_retry(sim, false)
}

fn client_with_retry(sim: &Simulator, retry: bool) -> Client {
    let mut cfg = Config::new(sim.url().parse().expect("simulator URL"));
    cfg.headers.push((USER_AGENT, HeaderValue::from_static(UA)));
    cfg.default_retry = retry;
    Client::try_from(cfg).expect("client")
}

async fn start(cfg: SimConfig) -> (Simulator, Client) {
    let sim = Simulator::start(cfg).await.expect("simulator starts");
    let c = client(&sim);
    (sim, c)
}

async fn shop() -> (Simulator, Client) {
    start(SimConfig {
        seed: Seed::Shop,
        ..Default::default()
    })
    .await
}

/// The next item of a watch stream, or a failure after the deadline.
async fn next<S, T>(stream: &mut S) -> Option<T>
where
    S: Stream<Item = T> + Unpin,
{
    tokio::time::timeout(WAIT, stream.next())
        .await
        .expect("the watch delivered nothing before the deadline")
}

fn api_code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

fn cm(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "shop", "labels": labels}, "data": {"k": "v"}})
}

/// A raw GET: status, headers and parsed body.
async fn raw(
    client: &Client,
    method: &str,
    path: &str,
    content_type: Option<&str>,
    body: Vec<u8>,
) -> (u16, http::HeaderMap, Value) {
    let mut req = http::Request::builder().method(method).uri(path);
    if let Some(ct) = content_type {
        req = req.header(http::header::CONTENT_TYPE, ct);
    }
    let req = req.body(kube::client::Body::from(body)).expect("request");
    let resp = client.send(req).await.expect("response");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let bytes = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .expect("body")
        .to_bytes();
    (
        status,
        headers,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn discovery_and_version() {
    let (_sim, client) = shop().await;
    let v = client.apiserver_version().await.unwrap();
    assert_eq!((v.major.as_str(), v.minor.as_str()), ("1", "33"));
    assert_eq!(v.git_version, "v1.33.0-krply-sim");
    let apps = client.list_api_group_resources("apps/v1").await.unwrap();
    let deploy = apps
        .resources
        .iter()
        .find(|r| r.name == "deployments")
        .unwrap();
    assert_eq!(
        deploy.short_names.as_deref(),
        Some(&["deploy".to_string()][..])
    );
    assert!(deploy.namespaced);
    assert!(
        apps.resources
            .iter()
            .any(|r| r.name == "deployments/scale" && r.kind == "Scale")
    );
    let core = client.list_core_api_resources("v1").await.unwrap();
    let ns = core
        .resources
        .iter()
        .find(|r| r.name == "namespaces")
        .unwrap();
    assert!(!ns.namespaced);
    let groups = client.list_api_groups().await.unwrap();
    for g in [
        "apps",
        "batch",
        "rbac.authorization.k8s.io",
        "networking.k8s.io",
        "policy",
        "autoscaling",
        "storage.k8s.io",
        "apiextensions.k8s.io",
        "admissionregistration.k8s.io",
    ] {
        assert!(
            groups.groups.iter().any(|x| x.name == g),
            "group {g} is served"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn shop_seed_is_realistic() {
    let (_sim, client) = shop().await;
    let deploys: Api<Deployment> = Api::namespaced(client.clone(), "shop");
    let list = deploys.list(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), 12);
    let fe = deploys.get("frontend").await.unwrap();
    let status = fe.status.unwrap();
    assert_eq!(status.ready_replicas, Some(1));
    assert_eq!(status.observed_generation, fe.metadata.generation);
    assert!(
        fe.metadata
            .managed_fields
            .unwrap()
            .iter()
            .any(|m| m.manager.as_deref() == Some("kubectl-create"))
    );
    let svcs: Api<k8s_openapi::api::core::v1::Service> = Api::namespaced(client.clone(), "shop");
    let svcs = svcs.list(&ListParams::default()).await.unwrap();
    assert_eq!(svcs.items.len(), 12);
    for s in &svcs.items {
        let ip = s.spec.as_ref().and_then(|s| s.cluster_ip.clone()).unwrap();
        assert!(ip.starts_with("10.96."), "{ip}");
    }
    let lb = svcs
        .items
        .iter()
        .find(|s| s.metadata.name.as_deref() == Some("frontend-external"))
        .unwrap();
    let port = &lb.spec.as_ref().unwrap().ports.as_ref().unwrap()[0];
    assert!((30000..=32767).contains(&port.node_port.unwrap()));
    let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), "shop");
    // 11 from the fixture plus the namespace's `default`.
    assert_eq!(
        sas.list(&ListParams::default()).await.unwrap().items.len(),
        12
    );
    let cms: Api<ConfigMap> = Api::namespaced(client, "shop");
    let names: Vec<String> = cms
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    assert_eq!(
        names,
        [
            "currency-rates",
            "feature-flags",
            "frontend-config",
            "kube-root-ca.crt"
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn paged_list_is_one_consistent_snapshot() {
    let (sim, client) = shop().await;
    let deploys: Api<Deployment> = Api::namespaced(client.clone(), "shop");
    let first = deploys.list(&ListParams::default().limit(5)).await.unwrap();
    let list_rv = first.metadata.resource_version.clone().unwrap();
    assert_eq!(first.items.len(), 5);
    assert_eq!(first.metadata.remaining_item_count, Some(7));
    // The cluster changes between pages.
    sim.delete("apps/v1", "Deployment", Some("shop"), "shippingservice")
        .unwrap();
    sim.patch_merge(
        "apps/v1",
        "Deployment",
        Some("shop"),
        "redis-cart",
        &json!({"spec": {"replicas": 5}}),
    )
    .unwrap();
    let mut extra = sim
        .get("apps/v1", "Deployment", Some("shop"), "adservice")
        .unwrap();
    extra["metadata"] = json!({"name": "zzz-new", "namespace": "shop"});
    sim.create(extra).unwrap();
    let mut items = first.items;
    let mut token = first.metadata.continue_;
    let mut pages = 1;
    while let Some(t) = token.filter(|t| !t.is_empty()) {
        let page = deploys
            .list(&ListParams::default().limit(5).continue_token(&t))
            .await
            .unwrap();
        assert_eq!(
            page.metadata.resource_version.as_deref(),
            Some(list_rv.as_str()),
            "every page has the list RV"
        );
        items.extend(page.items);
        token = page.metadata.continue_;
        pages += 1;
        assert!(pages < 10);
    }
    assert_eq!(pages, 3);
    let names: Vec<String> = items
        .iter()
        .filter_map(|d| d.metadata.name.clone())
        .collect();
    assert_eq!(names.len(), 12, "{names:?}");
    assert!(
        names.contains(&"shippingservice".to_string()),
        "deleted after the list started"
    );
    assert!(
        !names.contains(&"zzz-new".to_string()),
        "created after the list started"
    );
    let redis = items
        .iter()
        .find(|d| d.metadata.name.as_deref() == Some("redis-cart"))
        .unwrap();
    assert_eq!(
        redis.spec.as_ref().unwrap().replicas,
        Some(1),
        "the page shows the snapshot state"
    );
    let rv: u64 = list_rv.parse().unwrap();
    assert!(items.iter().all(|d| {
        d.metadata
            .resource_version
            .as_ref()
            .unwrap()
            .parse::<u64>()
            .unwrap()
            <= rv
    }));
    // Exact reads at that RV give the same snapshot.
    let exact = deploys
        .list(
            &ListParams::default()
                .at(&list_rv)
                .matching(VersionMatch::Exact),
        )
        .await
        .unwrap();
    assert_eq!(exact.items.len(), 12);
    // A fresh list sees the present.
    let now = deploys.list(&ListParams::default()).await.unwrap();
    assert_eq!(now.metadata.resource_version.unwrap(), sim.current_rv());
    assert!(
        now.items
            .iter()
            .any(|d| d.metadata.name.as_deref() == Some("zzz-new"))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn expired_continue_token_gets_410_with_a_fresh_token() {
    let (sim, client) = shop().await;
    let deploys: Api<Deployment> = Api::namespaced(client.clone(), "shop");
    let first = deploys.list(&ListParams::default().limit(4)).await.unwrap();
    let token = first.metadata.continue_.unwrap();
    sim.patch_merge(
        "apps/v1",
        "Deployment",
        Some("shop"),
        "frontend",
        &json!({"metadata": {"labels": {"x": "1"}}}),
    )
    .unwrap();
    sim.compact();
    let err = deploys
        .list(&ListParams::default().limit(4).continue_token(&token))
        .await
        .unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("expected an API error, got {err:?}")
    };
    assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
    let fresh = status
        .metadata
        .and_then(|m| m.continue_)
        .expect("a fresh continue token");
    let rest = deploys
        .list(&ListParams::default().limit(100).continue_token(&fresh))
        .await
        .unwrap();
    let last_of_first = first.items.last().unwrap().metadata.name.clone().unwrap();
    assert_eq!(rest.items.len(), 8);
    assert!(
        rest.items
            .iter()
            .all(|d| d.metadata.name.clone().unwrap() > last_of_first)
    );
    // Exact at a compacted RV is 410 too.
    let old = first.metadata.resource_version.unwrap();
    let err = deploys
        .list(&ListParams::default().at(&old).matching(VersionMatch::Exact))
        .await
        .unwrap_err();
    assert_eq!(api_code(&err), Some(410));
}

#[tokio::test(flavor = "multi_thread")]
async fn label_and_field_selectors() {
    let (sim, client) = shop().await;
    sim.create(cm("a", json!({"env": "prod", "tier": "fe"})))
        .unwrap();
    sim.create(cm("b", json!({"env": "staging", "tier": "be"})))
        .unwrap();
    sim.create(cm("c", json!({"env": "dev"}))).unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "shop");
    let names = |l: kube::core::ObjectList<ConfigMap>| {
        l.items
            .into_iter()
            .filter_map(|c| c.metadata.name)
            .collect::<Vec<_>>()
    };
    let sel = |s: &str| ListParams::default().labels(s);
    assert_eq!(names(cms.list(&sel("env=prod")).await.unwrap()), ["a"]);
    assert_eq!(names(cms.list(&sel("env==prod")).await.unwrap()), ["a"]);
    assert_eq!(
        names(cms.list(&sel("env in (prod,staging)")).await.unwrap()),
        ["a", "b"]
    );
    assert_eq!(
        names(cms.list(&sel("env notin (prod),env")).await.unwrap()),
        ["b", "c"]
    );
    assert_eq!(names(cms.list(&sel("tier")).await.unwrap()), ["a", "b"]);
    assert_eq!(names(cms.list(&sel("env,!tier")).await.unwrap()), ["c"]);
    assert_eq!(
        names(cms.list(&sel("env!=prod,env")).await.unwrap()),
        ["b", "c"]
    );
    assert_eq!(
        names(
            cms.list(&ListParams::default().fields("metadata.name=b"))
                .await
                .unwrap()
        ),
        ["b"]
    );
    let err = cms.list(&sel("env in prod")).await.unwrap_err();
    let kube::Error::Api(s) = err else {
        panic!("{err:?}")
    };
    assert_eq!((s.code, s.reason.as_str()), (400, "BadRequest"));
    assert!(
        s.message.contains("unable to parse requirement"),
        "{}",
        s.message
    );
    let err = cms
        .list(&ListParams::default().fields("data.k=v"))
        .await
        .unwrap_err();
    assert_eq!(api_code(&err), Some(400));
}

#[tokio::test(flavor = "multi_thread")]
async fn list_items_omit_type_meta_and_watch_events_carry_it() {
    let (sim, client) = shop().await;
    let (code, _, list) = raw(
        &client,
        "GET",
        "/api/v1/namespaces/shop/configmaps",
        None,
        vec![],
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(list["kind"], "ConfigMapList");
    assert_eq!(list["apiVersion"], "v1");
    assert_eq!(list["metadata"]["resourceVersion"], sim.current_rv());
    for item in list["items"].as_array().unwrap() {
        assert!(
            item.get("apiVersion").is_none() && item.get("kind").is_none(),
            "{item}"
        );
        assert!(item["metadata"]["uid"].is_string());
    }
    let cms: Api<ConfigMap> = Api::namespaced(client, "shop");
    let mut w = cms
        .watch(&WatchParams::default().timeout(30), "0")
        .await
        .unwrap()
        .boxed();
    let Some(Ok(WatchEvent::Added(first))) = next(&mut w).await else {
        panic!("an initial ADDED")
    };
    assert!(first.metadata.name.is_some());
    // The wire bytes of events are those of the event log.
    let log = sim.event_log();
    let last = log.iter().rev().find(|e| e.kind == "ConfigMap").unwrap();
    let obj: Value = serde_json::from_slice(&last.object).unwrap();
    assert_eq!(
        (obj["apiVersion"].as_str(), obj["kind"].as_str()),
        (Some("v1"), Some("ConfigMap"))
    );
}

/// The resourceVersion of a fresh list of `api`.
async fn list_rv(api: &Api<ConfigMap>) -> String {
    api.list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn watch_from_rv_sees_added_modified_deleted_in_order() {
    let (sim, client) = shop().await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "shop");
    let rv = list_rv(&cms).await;
    let mut w = cms
        .watch(&WatchParams::default().timeout(30).disable_bookmarks(), &rv)
        .await
        .unwrap()
        .boxed();
    sim.create(cm("w", json!({}))).unwrap();
    sim.patch_merge(
        "v1",
        "ConfigMap",
        Some("shop"),
        "w",
        &json!({"data": {"k": "v2"}}),
    )
    .unwrap();
    // Another resource's write is not this watch's business.
    sim.patch_merge(
        "apps/v1",
        "Deployment",
        Some("shop"),
        "frontend",
        &json!({"spec": {"replicas": 2}}),
    )
    .unwrap();
    sim.delete("v1", "ConfigMap", Some("shop"), "w").unwrap();
    let mut seen = Vec::new();
    for _ in 0..3 {
        match next(&mut w).await {
            Some(Ok(WatchEvent::Added(o))) => seen.push(("ADDED", o)),
            Some(Ok(WatchEvent::Modified(o))) => seen.push(("MODIFIED", o)),
            Some(Ok(WatchEvent::Deleted(o))) => seen.push(("DELETED", o)),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(
        seen.iter().map(|(t, _)| *t).collect::<Vec<_>>(),
        ["ADDED", "MODIFIED", "DELETED"]
    );
    let rvs: Vec<u64> = seen
        .iter()
        .map(|(_, o)| {
            o.metadata
                .resource_version
                .clone()
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    assert!(rvs.windows(2).all(|p| p[0] < p[1]), "{rvs:?}");
    assert_eq!(seen[1].1.data.as_ref().unwrap()["k"], "v2");
    let logged: Vec<String> = sim
        .event_log()
        .iter()
        .filter(|e| e.name == "w")
        .map(|e| e.rv.clone())
        .collect();
    assert_eq!(logged, rvs.iter().map(u64::to_string).collect::<Vec<_>>());
}

#[tokio::test]
async fn a_canned_list_is_served_to_every_list_as_given_and_the_store_is_untouched() {
    let (sim, client) = shop().await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "shop");
    let items: Vec<Vec<u8>> = (1..=3)
        .map(|i| {
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": format!("canned-{i}"), "namespace": "shop",
                                "resourceVersion": "7"}, "data": {"k": i.to_string()}})
            .to_string()
            .into_bytes()
        })
        .collect();
    sim.serve_canned_list("configmaps", "ConfigMapList", "v1", "9", &items);
    // Every list gets the items as given, whole or a page at a time.
    for limit in [None, Some(1), Some(2), Some(5)] {
        let mut names = Vec::new();
        let mut params = ListParams::default();
        if let Some(n) = limit {
            params = params.limit(n);
        }
        // Bounded: three items.
        for _ in 0..4 {
            let page = cms.list(&params).await.unwrap();
            assert_eq!(page.metadata.resource_version.as_deref(), Some("9"));
            assert!(
                page.items
                    .iter()
                    .all(|c| c.metadata.managed_fields.is_none()),
                "as given"
            );
            names.extend(page.items.iter().map(|c| c.metadata.name.clone().unwrap()));
            match page.metadata.continue_.filter(|c| !c.is_empty()) {
                Some(token) => params = params.continue_token(&token),
                None => break,
            }
        }
        assert_eq!(
            names,
            ["canned-1", "canned-2", "canned-3"],
            "limit {limit:?}"
        );
    }
    let refused = cms
        .list(&ListParams::default().continue_token("not-ours"))
        .await
        .unwrap_err();
    assert!(
        matches!(refused, kube::Error::Api(ref s) if s.code == 400),
        "{refused:?}"
    );
    assert!(sim.list("v1", "ConfigMap", Some("shop")).iter().all(|c| {
        !c["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .starts_with("canned")
    }));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_canned_watch_serves_its_lines_once_when_let_then_watches_are_live_again() {
    let (sim, client) = shop().await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "shop");
    let rv = list_rv(&cms).await;
    let base: u64 = rv.parse().unwrap();
    let lines: Vec<Vec<u8>> = (1..=3)
        .map(|i| {
            json!({"type": "MODIFIED", "object": {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": format!("canned-{i}"), "namespace": "shop",
                             "resourceVersion": (base + i).to_string()}}})
            .to_string()
            .into_bytes()
        })
        .collect();
    // Gated, as the recorder bench serves them: they flow once told to.
    let gate = sim.serve_canned_watch_gated("configmaps", &lines);
    assert!(!gate.watched());
    let params = WatchParams::default().timeout(30).disable_bookmarks();
    let mut w = cms.watch(&params, &rv).await.unwrap().boxed();
    // The response has begun: the watch has taken the lines.
    assert!(gate.watched());
    gate.go();
    for i in 1..=3 {
        match next(&mut w).await {
            Some(Ok(WatchEvent::Modified(o))) => {
                assert_eq!(
                    o.metadata.name.as_deref(),
                    Some(format!("canned-{i}").as_str())
                );
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(
        sim.event_log()
            .iter()
            .all(|e| !e.name.starts_with("canned"))
    );
    // Served once: the next watch sees the store's own events.
    let mut live = cms.watch(&params, &rv).await.unwrap().boxed();
    sim.create(cm("after", json!({}))).unwrap();
    match next(&mut live).await {
        Some(Ok(WatchEvent::Added(o))) => assert_eq!(o.metadata.name.as_deref(), Some("after")),
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn watch_selectors_turn_leaving_objects_into_deleted() {
    let (sim, client) = shop().await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "shop");
    sim.create(cm("s", json!({"team": "a"}))).unwrap();
    let rv = sim.current_rv();
    let mut w = cms
        .watch(
            &WatchParams::default().labels("team=a").disable_bookmarks(),
            &rv,
        )
        .await
        .unwrap()
        .boxed();
    sim.patch_merge(
        "v1",
        "ConfigMap",
        Some("shop"),
        "s",
        &json!({"metadata": {"labels": {"team": "b"}}}),
    )
    .unwrap();
    assert!(matches!(
        next(&mut w).await,
        Some(Ok(WatchEvent::Deleted(_)))
    ));
    sim.patch_merge(
        "v1",
        "ConfigMap",
        Some("shop"),
        "s",
        &json!({"metadata": {"labels": {"team": "a"}}}),
    )
    .unwrap();
    assert!(matches!(next(&mut w).await, Some(Ok(WatchEvent::Added(_)))));
}

#[tokio::test(flavor = "multi_thread")]
async fn bookmarks_arrive_in_order() {
    let (sim, client) = start(SimConfig {
        seed: Seed::Shop,
        bookmark_interval: Some(Duration::from_millis(50)),
        ..Default::default()
    })
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "shop");
    let rv = sim.current_rv();
    let mut w = cms
        .watch(&WatchParams::default().timeout(30), &rv)
        .await
        .unwrap()
        .boxed();
    // Churn elsewhere moves the RV; the bookmark says this watch is complete up to it.
    for i in 0..3 {
        sim.patch_merge(
            "apps/v1",
            "Deployment",
            Some("shop"),
            "frontend",
            &json!({"spec": {"replicas": i + 2}}),
        )
        .unwrap();
    }
    let target: u64 = sim.current_rv().parse().unwrap();
    let mut last = 0;
    for _ in 0..100 {
        match next(&mut w).await {
            Some(Ok(WatchEvent::Bookmark(b))) => {
                let rv: u64 = b.metadata.resource_version.parse().unwrap();
                assert!(rv >= last, "bookmarks never go back");
                last = rv;
                if rv >= target {
                    break;
                }
            }
            other => panic!("only bookmarks expected, got {other:?}"),
        }
    }
    assert!(last >= target);
}

#[tokio::test(flavor = "multi_thread")]
async fn watch_from_a_compacted_rv_gets_an_error_event() {
    let (sim, client) = shop().await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "shop");
    let old = sim.current_rv();
    sim.create(cm("late", json!({}))).unwrap();
    sim.compact();
    let mut w = cms
        .watch(&WatchParams::default(), &old)
        .await
        .expect("HTTP 200, like a real server")
        .boxed();
    match next(&mut w).await {
        Some(Ok(WatchEvent::Error(s))) => {
            assert_eq!((s.code, s.reason.as_str()), (410, "Expired"));
            assert!(
                s.message.starts_with("too old resource version: "),
                "{}",
                s.message
            );
        }
        other => panic!("expected ERROR 410, got {other:?}"),
    }
    assert!(next(&mut w).await.is_none(), "the server closes the watch");
}

#[tokio::test(flavor = "multi_thread")]
async fn watch_from_a_compacted_rv_as_http_410() {
    let (sim, client) = start(SimConfig {
        seed: Seed::Shop,
        expired_as_http_status: true,
        ..Default::default()
    })
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "shop");
    let old = sim.current_rv();
    sim.create(cm("late", json!({}))).unwrap();
    sim.compact();
    let err = cms
        .watch(&WatchParams::default(), &old)
        .await
        .err()
        .expect("HTTP 410");
    assert_eq!(api_code(&err), Some(410));
    // The current RV itself is still fine, and the form can be switched back.
    assert!(
        cms.watch(&WatchParams::default(), &sim.current_rv())
            .await
            .is_ok()
    );
    sim.set_expired_as_http_status(false);
    assert!(cms.watch(&WatchParams::default(), &old).await.is_ok());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_watcher_that_falls_behind_the_window_expires() {
    let (sim, client) = start(SimConfig {
        seed: Seed::Shop,
        history_window: 5,
        ..Default::default()
    })
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "shop");
    let old = sim.current_rv();
    for i in 0..10 {
        sim.create(cm(&format!("c{i}"), json!({}))).unwrap();
    }
    // Resuming from before the window is refused.
    let mut w = cms
        .watch(&WatchParams::default(), &old)
        .await
        .unwrap()
        .boxed();
    assert!(matches!(next(&mut w).await, Some(Ok(WatchEvent::Error(s))) if s.code == 410));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slow_watcher_falls_behind_the_window_and_expires() {
    let (sim, client) = start(SimConfig {
        seed: Seed::Shop,
        history_window: 5,
        ..Default::default()
    })
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "shop");
    let mut w = cms
        .watch(
            &WatchParams::default().disable_bookmarks(),
            &sim.current_rv(),
        )
        .await
        .unwrap()
        .boxed();
    // Nobody reads the stream while ~25 MB of events are written: socket
    // buffers fill, the server's writer waits, and the window moves on.
    let big = "x".repeat(64 * 1024);
    for i in 0..400 {
        sim.create(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("big-{i}"), "namespace": "shop"}, "data": {"blob": big}}))
            .unwrap();
    }
    let mut added = 0;
    // Bounded: 400 events at most, then the error.
    loop {
        match next(&mut w).await {
            Some(Ok(WatchEvent::Added(_))) => added += 1,
            Some(Ok(WatchEvent::Error(s))) => {
                assert_eq!((s.code, s.reason.as_str()), (410, "Expired"));
                break;
            }
            other => panic!("unexpected {other:?} after {added} events"),
        }
        assert!(added <= 400);
    }
    assert!(added < 400, "the watcher fell behind before the end");
    assert!(next(&mut w).await.is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn expire_watches_sends_410_into_open_streams() {
    let (sim, client) = shop().await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "shop");
    let mut w = cms
        .watch(
            &WatchParams::default().disable_bookmarks(),
            &sim.current_rv(),
        )
        .await
        .unwrap()
        .boxed();
    assert_eq!(sim.open_watches(), 1);
    sim.create(cm("before", json!({}))).unwrap();
    assert!(matches!(next(&mut w).await, Some(Ok(WatchEvent::Added(_)))));
    sim.expire_watches();
    match next(&mut w).await {
        Some(Ok(WatchEvent::Error(s))) => {
            assert_eq!((s.code, s.reason.as_str()), (410, "Expired"));
            assert!(s.message.contains("too old resource version"));
        }
        other => panic!("expected ERROR 410, got {other:?}"),
    }
    assert!(next(&mut w).await.is_none());
    assert!(all_watches_close(&sim).await);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_malformed_line_arrives_and_the_stream_goes_on() {
    let (sim, client) = shop().await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "shop");
    let mut w = cms
        .watch(
            &WatchParams::default().disable_bookmarks(),
            &sim.current_rv(),
        )
        .await
        .unwrap()
        .boxed();
    sim.inject_malformed_line();
    match next(&mut w).await {
        Some(Err(kube::Error::SerdeError(_))) => {}
        other => panic!("expected a parse error, got {other:?}"),
    }
    sim.create(cm("after", json!({}))).unwrap();
    assert!(
        matches!(next(&mut w).await, Some(Ok(WatchEvent::Added(o))) if o.metadata.name.as_deref() == Some("after"))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn drop_watches_ends_streams_abruptly() {
    let (sim, client) = shop().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "shop");
    let deps: Api<Deployment> = Api::namespaced(client, "shop");
    let mut a = cms
        .watch(&WatchParams::default(), &sim.current_rv())
        .await
        .unwrap()
        .boxed();
    let mut b = deps
        .watch(&WatchParams::default(), &sim.current_rv())
        .await
        .unwrap()
        .boxed();
    assert_eq!(sim.open_watches(), 2);
    sim.drop_watches();
    // kube-rs ends the stream on "unexpected EOF during chunk".
    assert!(next(&mut a).await.is_none());
    assert!(next(&mut b).await.is_none());
    assert!(all_watches_close(&sim).await);
}

/// Whether the simulator's open watches drop to none before the deadline.
async fn all_watches_close(sim: &Simulator) -> bool {
    let deadline = tokio::time::Instant::now() + WAIT;
    // Bounded by the deadline.
    while sim.open_watches() > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    sim.open_watches() == 0
}

#[tokio::test(flavor = "multi_thread")]
async fn watch_timeout_closes_cleanly() {
    let (sim, client) = shop().await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "shop");
    let mut w = cms
        .watch(
            &WatchParams::default().timeout(1).disable_bookmarks(),
            &sim.current_rv(),
        )
        .await
        .unwrap()
        .boxed();
    assert!(next(&mut w).await.is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn forbidden_resources_get_rbac_403s() {
    let (sim, client) = shop().await;
    sim.forbid("secrets", Some("shop"));
    let shop_secrets: Api<Secret> = Api::namespaced(client.clone(), "shop");
    let err = shop_secrets.list(&ListParams::default()).await.unwrap_err();
    let kube::Error::Api(s) = err else {
        panic!("{err:?}")
    };
    assert_eq!((s.code, s.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        s.message,
        "secrets is forbidden: User \"krply-sim-user\" cannot list resource \"secrets\" in API group \"\" in the namespace \"shop\""
    );
    let err = shop_secrets
        .watch(&WatchParams::default(), "0")
        .await
        .err()
        .unwrap();
    assert_eq!(api_code(&err), Some(403));
    let default_secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    assert!(default_secrets.list(&ListParams::default()).await.is_ok());
    let all: Api<Secret> = Api::all(client.clone());
    assert_eq!(
        api_code(&all.list(&ListParams::default()).await.unwrap_err()),
        Some(403)
    );
    sim.allow("secrets", Some("shop"));
    assert!(shop_secrets.list(&ListParams::default()).await.is_ok());
    sim.forbid("configmaps", None);
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let err = cms.get("kube-root-ca.crt").await.unwrap_err();
    let kube::Error::Api(s) = err else { panic!() };
    assert!(s.message.starts_with("configmaps \"kube-root-ca.crt\" is forbidden: User \"krply-sim-user\" cannot get resource"), "{}", s.message);
}

async fn tls_client(sim: &Simulator, dir: &std::path::Path, token: Option<&str>) -> Client {
    let path = dir.join("kubeconfig");
    sim.write_kubeconfig(
        &path,
        &SimKubeconfig {
            token: token.map(str::to_string),
            ..Default::default()
        },
    )
    .unwrap();
    let kc = Kubeconfig::read_from(&path).unwrap();
    let mut cfg = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .unwrap();
    cfg.proxy_url = None;
    Client::try_from(cfg).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn bearer_tokens_over_tls() {
    let sim = Simulator::start(SimConfig {
        tls: true,
        token: Some("s3cret".into()),
        ..Default::default()
    })
    .await
    .unwrap();
    assert!(sim.url().starts_with("https://127.0.0.1:"));
    assert!(
        sim.ca_pem()
            .unwrap()
            .starts_with("-----BEGIN CERTIFICATE-----")
    );
    let dir = tempfile::tempdir().unwrap();
    let good = tls_client(&sim, dir.path(), None).await;
    let ns: Api<Namespace> = Api::all(good);
    assert_eq!(
        ns.list(&ListParams::default()).await.unwrap().items.len(),
        3
    );
    let bad = tls_client(&sim, dir.path(), Some("wrong")).await;
    let err = Api::<Namespace>::all(bad)
        .list(&ListParams::default())
        .await
        .unwrap_err();
    let kube::Error::Api(s) = err else {
        panic!("{err:?}")
    };
    assert_eq!((s.code, s.reason.as_str()), (401, "Unauthorized"));
    // No token at all: 401 as well (the TLS handshake itself succeeds).
    let kc_path = dir.path().join("kubeconfig");
    sim.write_kubeconfig(&kc_path, &SimKubeconfig::default())
        .unwrap();
    let mut cfg = Config::from_custom_kubeconfig(
        Kubeconfig::read_from(&kc_path).unwrap(),
        &KubeConfigOptions::default(),
    )
    .await
    .unwrap();
    cfg.auth_info.token = None;
    cfg.proxy_url = None;
    let anon = Client::try_from(cfg).unwrap();
    assert_eq!(
        api_code(&anon.apiserver_version().await.unwrap_err()),
        Some(401)
    );
}

fn widget_crd() -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    }))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn crds_register_serve_and_go_away() {
    let (sim, client) = shop().await;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &widget_crd())
        .await
        .unwrap();
    let res = client
        .list_api_group_resources("example.com/v1")
        .await
        .unwrap();
    let w = res.resources.iter().find(|r| r.name == "widgets").unwrap();
    assert_eq!((w.kind.as_str(), w.namespaced), ("Widget", true));
    assert_eq!(w.short_names.as_deref(), Some(&["wd".to_string()][..]));
    assert!(
        client
            .list_api_groups()
            .await
            .unwrap()
            .groups
            .iter()
            .any(|g| g.name == "example.com")
    );
    let ar = ApiResource::from_gvk_with_plural(
        &kube::core::GroupVersionKind::gvk("example.com", "v1", "Widget"),
        "widgets",
    );
    let widgets: Api<DynamicObject> = Api::namespaced_with(client.clone(), "shop", &ar);
    let body: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"},
        "spec": {"size": 3, "nested": {"unknown": [1, {"deep": null}], "float": 1.5}}
    }))
    .unwrap();
    widgets.create(&PostParams::default(), &body).await.unwrap();
    let mut watch = widgets
        .watch(
            &WatchParams::default().disable_bookmarks(),
            &sim.current_rv(),
        )
        .await
        .unwrap()
        .boxed();
    let (_, _, list) = raw(
        &client,
        "GET",
        "/apis/example.com/v1/namespaces/shop/widgets",
        None,
        vec![],
    )
    .await;
    let item = &list["items"][0];
    assert_eq!(
        item["kind"], "Widget",
        "custom resource list items carry their type"
    );
    assert_eq!(
        item["spec"],
        json!({"size": 3, "nested": {"unknown": [1, {"deep": null}], "float": 1.5}})
    );
    crds.delete("widgets.example.com", &DeleteParams::default())
        .await
        .unwrap();
    assert!(
        matches!(next(&mut watch).await, Some(Ok(WatchEvent::Deleted(o))) if o.metadata.name.as_deref() == Some("w1"))
    );
    assert!(
        next(&mut watch).await.is_none(),
        "watches on a removed resource end"
    );
    assert_eq!(
        api_code(&widgets.list(&ListParams::default()).await.unwrap_err()),
        Some(404)
    );
    assert_eq!(api_code(&widgets.get("w1").await.unwrap_err()), Some(404));
    assert!(widgets.watch(&WatchParams::default(), "0").await.is_err());
    assert!(
        client
            .list_api_group_resources("example.com/v1")
            .await
            .is_err()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn namespaces_bring_their_defaults_and_take_their_contents() {
    let (sim, client) = shop().await;
    let nss: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "team-a"}})).unwrap();
    nss.create(&PostParams::default(), &ns).await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "team-a");
    let ca = cms.get("kube-root-ca.crt").await.unwrap();
    assert!(ca.data.unwrap()["ca.crt"].starts_with("-----BEGIN CERTIFICATE-----"));
    let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), "team-a");
    sas.get("default").await.unwrap();
    // Objects can only be created in a namespace that exists.
    let ghost: Api<ConfigMap> = Api::namespaced(client.clone(), "ghost");
    let err = ghost
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "x"}})).unwrap(),
        )
        .await
        .unwrap_err();
    let kube::Error::Api(s) = err else { panic!() };
    assert_eq!(
        (s.code, s.message.as_str()),
        (404, "namespaces \"ghost\" not found")
    );
    nss.delete("team-a", &DeleteParams::default())
        .await
        .unwrap();
    assert_eq!(
        api_code(&cms.get("kube-root-ca.crt").await.unwrap_err()),
        Some(404)
    );
    assert_eq!(api_code(&nss.get("team-a").await.unwrap_err()), Some(404));
    let deleted: Vec<(String, String)> = sim
        .event_log()
        .into_iter()
        .filter(|e| {
            e.event_type == "DELETED"
                && (e.namespace.as_deref() == Some("team-a") || e.name == "team-a")
        })
        .map(|e| (e.kind, e.name))
        .collect();
    assert_eq!(deleted.len(), 3, "{deleted:?}");
    assert_eq!(
        deleted.last().unwrap(),
        &("Namespace".to_string(), "team-a".to_string()),
        "the namespace goes last"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn protobuf_bodies_are_unsupported_media() {
    let (_sim, client) = shop().await;
    let (code, _, body) = raw(
        &client,
        "POST",
        "/api/v1/namespaces/shop/configmaps",
        Some("application/vnd.kubernetes.protobuf"),
        b"k8s\x00junk".to_vec(),
    )
    .await;
    assert_eq!(code, 415);
    assert_eq!(body["reason"], "UnsupportedMediaType");
    // Server-side apply is served; without a fieldManager it is refused as a real server refuses it.
    let (code, _, body) = raw(
        &client,
        "PATCH",
        "/api/v1/namespaces/shop/configmaps/feature-flags",
        Some("application/apply-patch+yaml"),
        b"{}".to_vec(),
    )
    .await;
    assert_eq!((code, body["reason"].as_str()), (422, Some("Invalid")));
    let (code, _, body) = raw(
        &client,
        "POST",
        "/api/v1/namespaces/shop/configmaps",
        Some("application/json"),
        b"{not json".to_vec(),
    )
    .await;
    assert_eq!((code, body["kind"].as_str()), (400, Some("Status")));
}

#[tokio::test(flavor = "multi_thread")]
async fn injected_failures_carry_retry_after() {
    let (sim, client) = shop().await;
    sim.fail_next_requests(2, 429, Some(3));
    for _ in 0..2 {
        let (code, headers, body) = raw(
            &client,
            "GET",
            "/api/v1/namespaces/shop/configmaps",
            None,
            vec![],
        )
        .await;
        assert_eq!(code, 429);
        assert_eq!(
            headers.get("retry-after").and_then(|v| v.to_str().ok()),
            Some("3")
        );
        assert_eq!(body["reason"], "TooManyRequests");
        assert_eq!(body["details"]["retryAfterSeconds"], 3);
    }
    let (code, _, _) = raw(
        &client,
        "GET",
        "/api/v1/namespaces/shop/configmaps",
        None,
        vec![],
    )
    .await;
    assert_eq!(code, 200);
    sim.fail_next_requests(1, 503, None);
    let cms: Api<ConfigMap> = Api::namespaced(client, "shop");
    assert_eq!(
        api_code(&cms.list(&ListParams::default()).await.unwrap_err()),
        Some(503)
    );
    assert!(cms.list(&ListParams::default()).await.is_ok());
    // kube's own retry layer understands the Retry-After we send.
    let retrying: Api<ConfigMap> = Api::namespaced(client_with_retry(&sim, true), "shop");
    sim.fail_next_requests(1, 429, Some(1));
    let before = sim.request_log().len();
    let started = std::time::Instant::now();
    assert!(retrying.list(&ListParams::default()).await.is_ok());
    let statuses: Vec<u16> = sim.request_log()[before..]
        .iter()
        .map(|r| r.status)
        .collect();
    assert_eq!(statuses, [429, 200]);
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "waited for Retry-After"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn requests_are_logged_with_user_agent_and_query() {
    let (sim, client) = shop().await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "shop");
    cms.list(&ListParams::default().limit(2).labels("app=frontend"))
        .await
        .unwrap();
    let log = sim.request_log();
    let r = log
        .iter()
        .rev()
        .find(|r| {
            r.path_and_query
                .starts_with("/api/v1/namespaces/shop/configmaps")
        })
        .unwrap();
    assert_eq!(r.method, "GET");
    assert_eq!(r.user_agent.as_deref(), Some(UA));
    assert!(r.path_and_query.contains("limit=2"), "{}", r.path_and_query);
    assert!(
        r.path_and_query.contains("labelSelector=app%3Dfrontend"),
        "{}",
        r.path_and_query
    );
    assert_eq!(r.status, 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn writes_track_managers_generation_and_conflicts() {
    let (sim, client) = shop().await;
    let deploys: Api<Deployment> = Api::namespaced(client.clone(), "shop");
    let before = deploys.get("frontend").await.unwrap();
    let patched = deploys
        .patch("frontend", &PatchParams::default(), &Patch::Merge(json!({"spec": {"template": {"spec": {"containers": [{"name": "server", "image": "fe:2"}]}}}})))
        .await
        .unwrap();
    assert_eq!(
        patched.metadata.generation,
        Some(before.metadata.generation.unwrap() + 1)
    );
    let managers = patched.metadata.managed_fields.unwrap();
    // The manager comes from the User-Agent; it now owns the containers list (merge patch replaces it whole).
    let mine = managers
        .iter()
        .find(|m| m.manager.as_deref() == Some("kubectl-krply"))
        .expect("manager from the User-Agent");
    assert_eq!(mine.operation.as_deref(), Some("Update"));
    let fields = serde_json::to_value(&mine.fields_v1).unwrap();
    assert!(
        fields
            .pointer("/f:spec/f:template/f:spec/f:containers")
            .is_some(),
        "{fields}"
    );
    // Labels only: no new generation.
    let labelled = deploys
        .patch(
            "frontend",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"team": "web"}}})),
        )
        .await
        .unwrap();
    assert_eq!(labelled.metadata.generation, patched.metadata.generation);
    // A stale resourceVersion conflicts.
    let mut stale = before.clone();
    stale.metadata.managed_fields = None;
    let err = deploys
        .replace("frontend", &PostParams::default(), &stale)
        .await
        .unwrap_err();
    let kube::Error::Api(s) = err else { panic!() };
    assert_eq!((s.code, s.reason.as_str()), (409, "Conflict"));
    assert!(s.message.contains("the object has been modified"));
    // An explicit fieldManager wins over the User-Agent.
    let cms: Api<ConfigMap> = Api::namespaced(client, "shop");
    let out = cms
        .patch(
            "feature-flags",
            &PatchParams {
                field_manager: Some("flagger".into()),
                ..Default::default()
            },
            &Patch::Merge(json!({"data": {"ads.enabled": "true"}})),
        )
        .await
        .unwrap();
    let mf = out.metadata.managed_fields.unwrap();
    let flagger = mf
        .iter()
        .find(|m| m.manager.as_deref() == Some("flagger"))
        .unwrap();
    assert_eq!(
        serde_json::to_value(&flagger.fields_v1).unwrap(),
        json!({"f:data": {"f:ads.enabled": {}}})
    );
    let creator = mf
        .iter()
        .find(|m| m.manager.as_deref() == Some("kubectl-create"))
        .unwrap();
    assert!(
        serde_json::to_value(&creator.fields_v1)
            .unwrap()
            .pointer("/f:data/f:ads.enabled")
            .is_none()
    );
    // A no-op patch writes nothing.
    let rv = sim.current_rv();
    cms.patch(
        "feature-flags",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"ads.enabled": "true"}})),
    )
    .await
    .unwrap();
    assert_eq!(sim.current_rv(), rv);
}

#[tokio::test(flavor = "multi_thread")]
async fn json_and_strategic_patches_scale_and_dry_runs() {
    let (sim, client) = shop().await;
    let deploys: Api<Deployment> = Api::namespaced(client.clone(), "shop");
    let p = json!([
        {"op": "test", "path": "/spec/replicas", "value": 1},
        {"op": "replace", "path": "/spec/replicas", "value": 2}
    ]);
    let (code, _, body) = raw(
        &client,
        "PATCH",
        "/apis/apps/v1/namespaces/shop/deployments/frontend",
        Some("application/json-patch+json"),
        p.to_string().into_bytes(),
    )
    .await;
    assert_eq!((code, body["spec"]["replicas"].as_i64()), (200, Some(2)));
    let failing = json!([{"op": "test", "path": "/spec/replicas", "value": 9}]);
    let (code, _, _) = raw(
        &client,
        "PATCH",
        "/apis/apps/v1/namespaces/shop/deployments/frontend",
        Some("application/json-patch+json"),
        failing.to_string().into_bytes(),
    )
    .await;
    assert_eq!(code, 422);
    let smp = deploys
        .patch("frontend", &PatchParams::default(), &Patch::Strategic(json!({"spec": {"template": {"spec": {"containers": [{"name": "sidecar", "image": "envoy:1"}]}}}})))
        .await
        .unwrap();
    let names: Vec<String> = smp
        .spec
        .unwrap()
        .template
        .spec
        .unwrap()
        .containers
        .into_iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(
        names,
        ["server", "sidecar"],
        "strategic merge keeps named items"
    );
    let scale = deploys.get_scale("frontend").await.unwrap();
    assert_eq!(scale.spec.unwrap().replicas, Some(2));
    let scaled = deploys
        .patch_scale(
            "frontend",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 4}})),
        )
        .await
        .unwrap();
    assert_eq!(scaled.spec.unwrap().replicas, Some(4));
    let d = deploys.get("frontend").await.unwrap();
    assert_eq!(
        d.status.unwrap().ready_replicas,
        Some(4),
        "the simulated controller converges"
    );
    let cms: Api<ConfigMap> = Api::namespaced(client, "shop");
    let rv = sim.current_rv();
    let dry = cms
        .create(
            &PostParams {
                dry_run: true,
                ..Default::default()
            },
            &serde_json::from_value(json!({"metadata": {"name": "dry"}, "data": {"a": "b"}}))
                .unwrap(),
        )
        .await
        .unwrap();
    assert!(dry.metadata.uid.is_some());
    assert_eq!(sim.current_rv(), rv, "a dry run stores nothing");
    assert!(sim.get("v1", "ConfigMap", Some("shop"), "dry").is_none());
    cms.delete(
        "feature-flags",
        &DeleteParams {
            dry_run: true,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert!(
        sim.get("v1", "ConfigMap", Some("shop"), "feature-flags")
            .is_some()
    );
}

/// Whether something still accepts connections at `addr`, polled until it
/// matches `want` or the deadline passes.
fn accepting_becomes(addr: &str, want: bool) -> bool {
    let deadline = std::time::Instant::now() + WAIT;
    // Bounded by the deadline.
    loop {
        let up = std::net::TcpStream::connect(addr).is_ok();
        if up == want || std::time::Instant::now() > deadline {
            return up == want;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_background_simulator_stops_with_its_last_handle() {
    let sim = Simulator::start_background(SimConfig::default()).unwrap();
    let addr = sim.url().trim_start_matches("http://").to_string();
    assert!(accepting_becomes(&addr, true));
    let clone = sim.clone();
    drop(sim);
    assert!(
        std::net::TcpStream::connect(&addr).is_ok(),
        "a clone keeps it serving"
    );
    assert_eq!(clone.list("v1", "Namespace", None).len(), 3);
    drop(clone);
    assert!(
        accepting_becomes(&addr, false),
        "the listener closes with the last handle"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn shutdown_ends_watches_and_the_listener() {
    let (sim, client) = shop().await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "shop");
    let mut w = cms
        .watch(
            &WatchParams::default().disable_bookmarks(),
            &sim.current_rv(),
        )
        .await
        .unwrap()
        .boxed();
    let addr = sim.url().trim_start_matches("http://").to_string();
    sim.shutdown();
    assert!(next(&mut w).await.is_none(), "the watch ends");
    let closed = tokio::task::spawn_blocking(move || accepting_becomes(&addr, false))
        .await
        .unwrap();
    assert!(closed);
    // The in-process API keeps working on the stopped simulator's state.
    assert!(
        sim.get("v1", "ConfigMap", Some("shop"), "feature-flags")
            .is_some()
    );
}
