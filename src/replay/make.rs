//! Making a replay plan (docs/replay-safety.md): the recorded state of one
//! namespace at a time, for the types asked, checked against the kinds that
//! can be replayed and the completeness of the recording, built into a plan,
//! dry-run against the target, and saved in the journal. Refusals are saved
//! too (as `refused`), then returned as errors.

use super::{Inputs, Plan, PlanStatus, Recorded, Source, Target, build, new_id, policy, run};
use crate::cluster::{self, ClusterError, ConnectOptions};
use crate::history::complete::Completeness;
use crate::history::resolve::{Target as ArgTarget, TargetError};
use crate::history::state::ObjectState;
use crate::history::{History, HistoryError, Scope};
use crate::journal::plans::SavedPlan;
use crate::journal::{Journal, JournalError};
use crate::time::Millis;
use std::collections::HashSet;

/// What to plan.
#[derive(Debug, Clone)]
pub struct PlanRequest {
    /// The recorded cluster the source namespace is read from.
    pub cluster: String,
    /// The source namespace.
    pub namespace: String,
    /// The time to rebuild.
    pub at: Millis,
    /// `TYPE` arguments (empty: every recorded type).
    pub types: Vec<String>,
    pub to_namespace: String,
    /// Kinds brought back from the default exclusions (`Job`, `LoadBalancer`).
    pub include: Vec<String>,
    /// Plan even though the recording is incomplete at `at`.
    pub allow_gaps: bool,
    /// Create the target namespace when it does not exist (and nothing else),
    /// so that every object gets a real dry run.
    pub create_namespace: bool,
}

/// Why no plan was made, or why it was refused.
#[derive(Debug, thiserror::Error)]
pub enum MakeError {
    #[error("refusing to replay {resource}: {reason}")]
    Excluded { resource: String, reason: String },
    #[error("replay plan takes resource types, not TYPE/NAME")]
    NotAType,
    #[error("refusing to replay namespace {0} into itself on the cluster it was recorded from")]
    IntoItself(String),
    #[error(
        "refusing to plan: the recording of namespace {namespace} is incomplete at {at} ({stretches} stretch(es) not covered; plan {id} saved as refused)"
    )]
    Incomplete {
        namespace: String,
        at: Millis,
        stretches: usize,
        id: String,
    },
    #[error(
        "refusing to plan: cannot reach the target at {server} ({source}); plan {id} saved as refused"
    )]
    Unreachable {
        server: String,
        id: String,
        source: Box<run::Unreachable>,
    },
    #[error("cannot store the plan: {0}")]
    Store(#[source] serde_json::Error),
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error(transparent)]
    History(#[from] HistoryError),
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error(transparent)]
    Cluster(#[from] ClusterError),
}

/// Plans `request` into the cluster `opts` selects, dry-runs it there, and
/// saves it in `journal`. `announce` is told before anything is written to the
/// target (only `create_namespace` writes, the namespace alone).
pub async fn make(
    journal: &Journal,
    request: &PlanRequest,
    opts: &ConnectOptions,
    announce: &mut dyn FnMut(&str),
) -> Result<Plan, MakeError> {
    let (mut plan, completeness) = draft(journal, request, unresolved(request, None))?;
    // The target, resolved offline before anything is contacted: refuse the
    // source itself.
    let target = cluster::resolve_target(opts)?;
    if target.cluster_id == request.cluster && request.to_namespace == request.namespace {
        return Err(MakeError::IntoItself(request.namespace.clone()));
    }
    plan.target.context = target.context.clone();
    plan.target.cluster = target.cluster_id.clone();
    plan.target.server = target.server.clone();
    let id = plan.id.clone();

    if !plan.complete && !request.allow_gaps {
        plan.status = PlanStatus::Refused;
        plan.refused = Some("the recording is incomplete at that time".into());
        save(journal, &plan)?;
        return Err(MakeError::Incomplete {
            namespace: request.namespace.clone(),
            at: request.at,
            stretches: completeness.missing.len(),
            id,
        });
    }

    let access = cluster::connect(&target, opts).await?;
    if let Err(e) = run::dry_run(&mut plan, &access, request.create_namespace, announce).await {
        plan.status = PlanStatus::Refused;
        plan.refused = Some(format!("the target could not be reached: {e}"));
        save(journal, &plan)?;
        return Err(MakeError::Unreachable {
            server: target.server.clone(),
            id,
            source: Box::new(e),
        });
    }
    save(journal, &plan)?;
    Ok(plan)
}

/// What a plan of `request` would hold, computed from the journal alone: no
/// target is resolved or contacted, nothing is dry-run, nothing is saved
/// (`replay plan --preview`, the `replay_plan_preview` tool of `mcp`). Its
/// status stays `pending`, its target names only the namespace (and the
/// context, when given), and an incomplete recording is said in `complete`
/// and `gaps` rather than refused.
pub fn preview(
    journal: &Journal,
    request: &PlanRequest,
    context: Option<String>,
) -> Result<Plan, MakeError> {
    let (mut plan, _) = draft(journal, request, unresolved(request, context))?;
    if request.to_namespace == request.namespace {
        plan.warnings.push(format!(
            "the target namespace is the source's ({}): `replay plan` refuses it on the cluster it was recorded from",
            request.namespace
        ));
    }
    Ok(plan)
}

/// The target of `request` before its cluster is resolved: the namespace (and
/// the context, when named) only.
fn unresolved(request: &PlanRequest, context: Option<String>) -> Target {
    Target {
        context,
        cluster: String::new(),
        server: String::new(),
        namespace: request.to_namespace.clone(),
        namespace_exists: false,
        namespace_created: false,
    }
}

/// The plan of `request` into `target`, before any dry run, with the
/// completeness of the recording for the kinds it can hold.
fn draft(
    journal: &Journal,
    request: &PlanRequest,
    target: Target,
) -> Result<(Plan, Completeness), MakeError> {
    let history = History::load(journal, &request.cluster, Millis::now().as_ms())?;
    let types = types(&history, request)?;
    let scope = Scope {
        namespace: Some(request.namespace.clone()),
        types: (!types.is_empty()).then_some(types),
    };
    let snap = history.snapshot(&scope, request.at.as_ms(), true)?;
    let completeness = plannable_completeness(&history, &scope, &snap.completeness, request);
    let namespace_object = namespace_object(&history, &request.namespace, request.at)?;
    // Every kind recorded in the source namespace, whatever the plan asked for:
    // a workload's missing ConfigMap says "record it" only when it was not.
    let recorded = history
        .streams_for(&Scope {
            namespace: Some(request.namespace.clone()),
            types: None,
        })
        .iter()
        .map(|s| s.info.resource.kind.clone())
        .collect();
    let plan = build(Inputs {
        id: new_id(),
        created_at: Millis::now().to_string(),
        source: Source {
            cluster: request.cluster.clone(),
            namespace: request.namespace.clone(),
            at: request.at.to_string(),
        },
        target,
        complete: completeness.complete(),
        gaps: completeness.warnings(),
        namespace_object: namespace_object.as_ref(),
        objects: snap
            .items
            .into_iter()
            .map(|(resource, object)| Recorded { resource, object })
            .collect(),
        include: &request.include,
        recorded,
    });
    Ok((plan, completeness))
}

/// The types `TYPE` arguments name, each one the plan may hold.
fn types(
    history: &History<'_>,
    request: &PlanRequest,
) -> Result<Vec<crate::model::ResourceType>, MakeError> {
    let mut out = Vec::new();
    for t in &request.types {
        match history.target(t)? {
            ArgTarget::Type(r) => {
                if let Some(rule) = policy::kind_rule(&r.kind)
                    && !policy::plannable(&r.kind, &request.include)
                {
                    return Err(MakeError::Excluded {
                        resource: r.group_resource(),
                        reason: rule.reason(),
                    });
                }
                out.push(r);
            }
            ArgTarget::Object(..) => return Err(MakeError::NotAType),
        }
    }
    Ok(out)
}

/// Completeness for the types the plan can hold: a Secret stream that started
/// later does not make a plan of the rest incomplete.
fn plannable_completeness(
    history: &History<'_>,
    scope: &Scope,
    all: &Completeness,
    request: &PlanRequest,
) -> Completeness {
    let left_out: HashSet<String> = history
        .streams_for(scope)
        .iter()
        .filter(|s| !policy::plannable(&s.info.resource.kind, &request.include))
        .map(|s| s.info.name())
        .collect();
    Completeness {
        missing: all
            .missing
            .iter()
            .filter(|m| !left_out.contains(&m.stream))
            .cloned()
            .collect(),
    }
}

/// The source Namespace object at `at`, when namespaces were recorded.
fn namespace_object(
    history: &History<'_>,
    ns: &str,
    at: Millis,
) -> Result<Option<serde_json::Value>, MakeError> {
    for s in history
        .streams
        .iter()
        .filter(|s| s.info.resource.group.is_empty() && s.info.resource.resource == "namespaces")
    {
        for o in history.journal.objects_named(&[s.info.id], Some(""), ns)? {
            if let ObjectState::Present(v) = history.object_at(s, o.id, at.as_ms())? {
                return Ok(Some(history.object_json(s, &v)?));
            }
        }
    }
    Ok(None)
}

/// Saves (or re-saves) `plan` in the journal.
pub fn save(journal: &Journal, plan: &Plan) -> Result<(), MakeError> {
    let info = serde_json::to_string(plan).map_err(MakeError::Store)?;
    journal.save_plan(&SavedPlan {
        id: plan.id.clone(),
        cluster: plan.source.cluster.clone(),
        created_at: Millis::now().as_ms(),
        status: plan.status.to_string(),
        info,
    })?;
    Ok(())
}
