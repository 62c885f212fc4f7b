//! Simulator benchmark (prints figures; asserts nothing): how fast the
//! in-process simulator takes merge patches of one object while one watcher
//! reads the stream, either counting raw lines or decoding with kube-rs. The
//! recorder benchmark is producer-limited by this figure.
//!
//! `cargo bench --bench simulator`

use futures::StreamExt;
use krply_sim::{Seed, SimConfig, Simulator};
use kube::api::{Api, ApiResource, DynamicObject, WatchEvent, WatchParams};
use kube::{Client, Config};
use serde_json::json;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(10);
const N: usize = 30_000;

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        println!("kubectl-krply simulator benchmark: {N} merge patches per run, one watcher");
        for (api_version, kind, name) in [
            ("apps/v1", "Deployment", "frontend"),
            ("v1", "ConfigMap", "feature-flags"),
        ] {
            for raw_reader in [false, true, false, true] {
                let sim = Simulator::start(SimConfig {
                    seed: Seed::Shop,
                    ..Default::default()
                })
                .await
                .unwrap();
                let client =
                    Client::try_from(Config::new(sim.url().parse().unwrap())).unwrap();
                let (w, d, size) =
                    measure(&sim, client, api_version, kind, name, N, raw_reader).await;
                println!(
                    "patch_merge {kind} ({size} B), 1 {} watcher: {w:.0} writes/s, {d:.0} events/s delivered",
                    if raw_reader {
                        "raw line-counting"
                    } else {
                        "kube-rs DynamicObject"
                    }
                );
            }
        }
    });
}

/// Writes `n` merge patches to one object from a blocking thread while one
/// watcher (raw: counting lines; else kube-rs decoding typed objects) reads
/// the stream. Returns (writes/s, events delivered/s, object bytes).
async fn measure(
    sim: &Simulator,
    client: Client,
    api_version: &str,
    kind: &str,
    name: &str,
    n: usize,
    raw_reader: bool,
) -> (f64, f64, usize) {
    let plural = if kind == "Deployment" {
        "deployments"
    } else {
        "configmaps"
    };
    let prefix = if api_version == "v1" {
        "/api/v1".to_string()
    } else {
        format!("/apis/{api_version}")
    };
    let rv = sim.current_rv();
    let path = format!(
        "{prefix}/namespaces/shop/{plural}?watch=true&resourceVersion={rv}&timeoutSeconds=600"
    );
    let started = std::time::Instant::now();
    let reader = if raw_reader {
        let req = http::Request::get(path)
            .body(kube::client::Body::empty())
            .unwrap();
        let resp = client.send(req).await.unwrap();
        tokio::spawn(async move {
            let mut body = resp.into_body();
            let mut lines = 0;
            while lines < n {
                let frame = tokio::time::timeout(
                    Duration::from_secs(60),
                    http_body_util::BodyExt::frame(&mut body),
                )
                .await
                .expect("events keep coming")
                .expect("the stream goes on")
                .expect("a frame");
                if let Some(data) = frame.data_ref() {
                    lines += data.iter().filter(|b| **b == b'\n').count();
                }
            }
        })
    } else {
        let ar = ApiResource::from_gvk_with_plural(
            &kube::core::GroupVersionKind::gvk(
                if api_version == "v1" { "" } else { "apps" },
                "v1",
                kind,
            ),
            plural,
        );
        let api: Api<DynamicObject> = Api::namespaced_with(client, "shop", &ar);
        let mut w = api
            .watch(
                &WatchParams::default().timeout(600).disable_bookmarks(),
                &rv,
            )
            .await
            .unwrap()
            .boxed();
        tokio::spawn(async move {
            let mut got = 0;
            while got < n {
                match tokio::time::timeout(Duration::from_secs(60), w.next()).await {
                    Ok(Some(Ok(WatchEvent::Modified(_)))) => got += 1,
                    other => panic!("unexpected {other:?} after {got} events"),
                }
            }
        })
    };
    assert!(sim.wait_open_watches_async(1, WAIT).await);
    let writer_sim = sim.clone();
    let (api_version, kind, name) = (api_version.to_string(), kind.to_string(), name.to_string());
    let writes = tokio::task::spawn_blocking(move || {
        let started = std::time::Instant::now();
        for i in 0..n {
            writer_sim
                .patch_merge(
                    &api_version,
                    &kind,
                    Some("shop"),
                    &name,
                    &json!({"metadata": {"annotations": {"bench/i": i.to_string()}}}),
                )
                .unwrap();
        }
        started.elapsed()
    })
    .await
    .unwrap();
    reader.await.unwrap();
    let delivered = started.elapsed();
    let size = sim.event_log().last().map(|e| e.object.len()).unwrap_or(0);
    (
        n as f64 / writes.as_secs_f64(),
        n as f64 / delivered.as_secs_f64(),
        size,
    )
}
