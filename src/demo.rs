//! The built-in demo: a simulated cluster running Online Boutique, a recorder
//! watching it, and a scripted incident (scale, image change, ConfigMap edit, a
//! deletion, lost watch history), all in one process.

use crate::cluster::{self, ConnectOptions, discovery::Catalog};
use crate::journal::audit::AuditImport;
use crate::journal::{Journal, JournalError};
use crate::recorder::display::Mode;
use crate::recorder::stream::StreamOptions;
use crate::recorder::{self, PlanArgs, RecordOptions, RecordSummary};
use krply_sim::{KubeconfigOptions, Seed, SimConfig, SimUser, Simulator};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The namespace the demo records.
pub const NAMESPACE: &str = "shop";

#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    #[error("the simulator failed: {0}")]
    Sim(String),
    #[error(transparent)]
    Cluster(#[from] cluster::ClusterError),
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error(transparent)]
    Record(#[from] crate::recorder::RecordError),
    #[error("{0}")]
    Plan(String),
    #[error("the demo could not import its audit log: {0}")]
    Audit(String),
    #[error("the demo timed out waiting for {0}")]
    Timeout(String),
    #[error("cannot write {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// What the demo left behind for the user to explore.
pub struct DemoOutcome {
    pub store: PathBuf,
    pub kubeconfig: PathBuf,
    pub cluster_id: String,
    pub summary: RecordSummary,
    /// The scripted steps, with when they happened.
    pub steps: Vec<(crate::time::Millis, String)>,
    /// A time before the incident began.
    pub before_incident: crate::time::Millis,
    /// The simulator, still serving, so a replay can be planned against it;
    /// it stops when dropped.
    pub sim: Simulator,
}

/// Runs the demo, writing the journal to `store` (its directory also receives the
/// simulator's kubeconfig). `say` receives each narration line.
///
/// Long on purpose: it is the demo's story, step after step, each step a few lines
/// of simulator calls and narration; split up, the story would no longer read in order.
pub async fn run(store: &Path, mode: Mode, say: &dyn Fn(&str)) -> Result<DemoOutcome, DemoError> {
    let dir = store.parent().unwrap_or(Path::new(".")).to_path_buf();
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(&dir).map_err(|source| DemoError::Io {
        path: dir.clone(),
        source,
    })?;
    let sim = Simulator::start(SimConfig {
        seed: Seed::Shop,
        bookmark_interval: Some(Duration::from_secs(1)),
        ..SimConfig::default()
    })
    .await
    .map_err(|e| DemoError::Sim(e.to_string()))?;
    let kubeconfig = dir.join("kubeconfig");
    sim.write_kubeconfig(
        &kubeconfig,
        &KubeconfigOptions {
            namespace: Some(NAMESPACE.into()),
            ..KubeconfigOptions::default()
        },
    )
    .map_err(|source| DemoError::Io {
        path: kubeconfig.clone(),
        source,
    })?;
    // Like kube-apiserver with --audit-log-path: who made each write.
    let audit_log = dir.join("audit.log");
    sim.audit_to(&audit_log).map_err(|source| DemoError::Io {
        path: audit_log.clone(),
        source,
    })?;
    say(&format!(
        "started a simulated API server at {} running Online Boutique in namespace {NAMESPACE}, writing an audit log",
        sim.url()
    ));

    let opts = ConnectOptions {
        kubeconfig: Some(kubeconfig.clone()),
        ..ConnectOptions::default()
    };
    let target = cluster::resolve_target(&opts)?;
    let access = cluster::connect(&target, &opts).await?;
    let catalog = Catalog::discover(&access).await?;
    let plan = recorder::plan_streams(
        &catalog,
        &PlanArgs {
            namespace: NAMESPACE.into(),
            ..PlanArgs::default()
        },
    )
    .map_err(|e| DemoError::Plan(e.to_string()))?;

    let journal = Journal::open_or_create(store)?;
    let lease = recorder::claim(
        &journal,
        &target.cluster_id,
        &target.server,
        target.context.as_deref(),
        &plan.streams,
        &format!("the demo (pid {})", std::process::id()),
    )?;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let streams = plan.streams.clone();
    let options = RecordOptions {
        stream: StreamOptions {
            heartbeat: Duration::from_millis(500),
            ..StreamOptions::default()
        },
        mode,
        retention: None,
    };
    let recording = {
        let access = access.clone();
        tokio::spawn(
            async move { recorder::record(&access, journal, streams, options, stop_rx).await },
        )
    };
    say(&format!(
        "recording {} streams into {}",
        plan.streams.len(),
        store.display()
    ));
    wait_until(store, "the first baselines", |j| all_listed(j, 1)).await?;

    let before_incident = crate::time::Millis::now();
    let mut steps = Vec::new();
    let mut step = |text: String| {
        say(&format!("incident: {text}"));
        steps.push((crate::time::Millis::now(), text));
    };
    let pace = Duration::from_millis(400);
    tokio::time::sleep(pace).await;

    step("alice: kubectl scale deployment/frontend from 1 to 3 replicas".into());
    edit(
        &sim,
        &ALICE,
        "kubectl-scale",
        "apps/v1",
        "Deployment",
        "frontend",
        |d| {
            d["spec"]["replicas"] = json!(3);
        },
    )?;
    tokio::time::sleep(pace).await;

    step("CI: helm upgrade rolls deployment/productcatalogservice to a new image".into());
    edit(
        &sim,
        &CI,
        "helm",
        "apps/v1",
        "Deployment",
        "productcatalogservice",
        |d| {
            if let Some(c) = d.pointer_mut("/spec/template/spec/containers/0/image") {
                *c = json!(
                    "us-central1-docker.pkg.dev/google-samples/microservices-demo/productcatalogservice:v0.10.7"
                );
            }
            if let Some(env) = d
                .pointer_mut("/spec/template/spec/containers/0/env")
                .and_then(Value::as_array_mut)
            {
                env.insert(0, json!({"name": "EXTRA_LATENCY", "value": "5.5s"}));
            }
        },
    )?;
    tokio::time::sleep(pace).await;

    step("bob: kubectl edit configmap/feature-flags: turn the new checkout on".into());
    edit(
        &sim,
        &BOB,
        "kubectl-edit",
        "v1",
        "ConfigMap",
        "feature-flags",
        |c| {
            c["data"]["new-checkout"] = json!("true");
        },
    )?;
    tokio::time::sleep(pace).await;

    step("alice: kubectl delete deployment/loadgenerator".into());
    sim.delete_as(
        "apps/v1",
        "Deployment",
        Some(NAMESPACE),
        "loadgenerator",
        &ALICE,
    )
    .map_err(|e| DemoError::Sim(e.to_string()))?;
    tokio::time::sleep(pace).await;

    // Quiet until nothing of the changes above can still be in flight: the
    // gap the compaction makes starts after them (docs/consistency.md, "Gaps").
    let quiet = crate::time::Millis::now().as_ms() + crate::recorder::rules::IN_FLIGHT_MS;
    wait_until(store, "the changes to settle", |j| {
        j.streams(None).ok().is_some_and(|ss| {
            ss.iter().all(|s| {
                j.last_durable(s.id)
                    .ok()
                    .flatten()
                    .is_some_and(|d| d.at > quiet)
            })
        })
    })
    .await?;
    step("the API server compacts its history: every watch gets 410 Gone".into());
    // The server answers slowly for a moment, so the recorder's relists come
    // back only after the change below: it falls into the gap.
    sim.set_delay(pace);
    sim.compact();
    sim.expire_watches();
    wait_until(store, "the 410 to be journaled as gaps", |j| {
        j.streams(None).ok().is_some_and(|ss| {
            ss.iter()
                .all(|s| j.coverage(s, 0, true).is_ok_and(|c| c.gaps >= 1))
        })
    })
    .await?;
    step("while nobody watches: bob: kubectl patch configmap/frontend-config".into());
    edit(
        &sim,
        &BOB,
        "kubectl-patch",
        "v1",
        "ConfigMap",
        "frontend-config",
        |c| {
            c["data"]["log_level"] = json!("debug");
        },
    )?;
    sim.set_delay(Duration::ZERO);
    wait_until(store, "the relists after the 410", |j| all_listed(j, 2)).await?;
    tokio::time::sleep(pace).await;

    step("alice: kubectl scale deployment/frontend back to 2 replicas".into());
    edit(
        &sim,
        &ALICE,
        "kubectl-scale",
        "apps/v1",
        "Deployment",
        "frontend",
        |d| {
            d["spec"]["replicas"] = json!(2);
        },
    )?;
    let last_rv = sim.current_rv();
    wait_until(store, "the last change to be journaled", |j| {
        j.streams(None).ok().is_some_and(|ss| {
            ss.iter().any(|s| {
                s.resource.resource == "deployments"
                    && j.coverage(s, 0, true)
                        .is_ok_and(|c| c.last_rv.as_deref() == Some(last_rv.as_str()))
            })
        })
    })
    .await?;

    let _ = stop_tx.send(true);
    let summary = recording
        .await
        .map_err(|e| DemoError::Sim(format!("the recorder task failed: {e}")))??;
    drop(lease);
    // As `kubectl krply audit import` does: who made each change.
    let journal = Journal::open(store)?;
    let mut import = AuditImport::new(&journal, &target.cluster_id)?;
    crate::audit_import::read_log(&mut import, &audit_log)
        .map_err(|e| DemoError::Audit(e.to_string()))?;
    let stored = import.store()?;
    say(&format!(
        "imported the API server's audit log (kubectl krply audit import): {} write(s) on recorded objects",
        stored.new
    ));
    Ok(DemoOutcome {
        store: store.to_path_buf(),
        kubeconfig,
        cluster_id: target.cluster_id,
        summary,
        steps,
        before_incident,
        sim,
    })
}

/// The people and the CI job of the demo's story, as the audit log names them.
const ALICE: SimUser<'static> = SimUser {
    name: "alice@example.com",
    groups: &["sre", "system:authenticated"],
    impersonated_by: None,
    user_agent: "kubectl/v1.37.2 (linux/amd64) kubernetes/$Format",
};
const BOB: SimUser<'static> = SimUser {
    name: "bob@example.com",
    groups: &["dev", "system:authenticated"],
    impersonated_by: None,
    user_agent: "kubectl/v1.37.2 (linux/amd64) kubernetes/$Format",
};
const CI: SimUser<'static> = SimUser {
    name: "system:serviceaccount:ci:deployer",
    groups: &[
        "system:serviceaccounts",
        "system:serviceaccounts:ci",
        "system:authenticated",
    ],
    impersonated_by: None,
    user_agent: "Helm/3.19.0",
};

/// Changes one object of the demo namespace through the simulator's API, as
/// `who` with the field manager a person's tool would use (`kubectl-scale`,
/// `helm`); the simulator's audit log says who.
fn edit(
    sim: &Simulator,
    who: &SimUser<'_>,
    manager: &str,
    api_version: &str,
    kind: &str,
    name: &str,
    change: impl FnOnce(&mut Value),
) -> Result<(), DemoError> {
    let mut obj = sim
        .get(api_version, kind, Some(NAMESPACE), name)
        .ok_or_else(|| DemoError::Sim(format!("{kind} {name} not found")))?;
    change(&mut obj);
    sim.update_as(obj, manager, who)
        .map_err(|e| DemoError::Sim(e.to_string()))?;
    Ok(())
}

fn all_listed(j: &Journal, baselines: usize) -> bool {
    let Ok(streams) = j.streams(None) else {
        return false;
    };
    !streams.is_empty()
        && streams.iter().all(|s| {
            j.coverage(s, 0, true).is_ok_and(|c| {
                c.from.is_some()
                    && c.windows.iter().all(|w| w.to.is_some())
                    && c.gaps as usize + 1 >= baselines
            })
        })
}

/// Polls the journal (as any reader would) until `done` holds.
async fn wait_until(
    store: &Path,
    what: &str,
    done: impl Fn(&Journal) -> bool,
) -> Result<(), DemoError> {
    let start = Instant::now();
    loop {
        if let Ok(j) = Journal::open(store)
            && done(&j)
        {
            return Ok(());
        }
        if start.elapsed() > Duration::from_secs(30) {
            return Err(DemoError::Timeout(what.to_string()));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
