//! Dry runs and applies against the target cluster: server-side apply, one
//! object at a time, in plan order, with the plan's field manager and
//! `force=false`. A conflict is a finding to show, never resolved here.

use super::{
    AppliedObject, ApplyResult, Conflict, DryRun, DryRunState, Forbidden, ObjectError, Plan,
    PlanObject, PlanStatus, namespace_type,
};
use crate::cluster::ClusterAccess;
use crate::cluster::api::{self, ApiError};

/// What went wrong talking to the target cluster (not a verdict on objects).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Unreachable(pub ApiError);

/// The target cannot be talked to at all (rather than refusing one object).
fn is_transport(e: &ApiError) -> bool {
    matches!(e, ApiError::Transport(_) | ApiError::Timeout(_)) || e.code() == Some(401)
}

async fn apply_one(
    access: &ClusterAccess,
    o: &PlanObject,
    manager: &str,
    dry_run: bool,
) -> Result<api::Applied, ApiError> {
    let body = serde_json::to_vec(&o.manifest).unwrap_or_default();
    api::apply(
        access,
        &o.resource,
        o.namespace.as_deref(),
        &o.name,
        body,
        manager,
        dry_run,
    )
    .await
}

/// Whether the target namespace exists now.
pub async fn namespace_exists(access: &ClusterAccess, name: &str) -> Result<bool, Unreachable> {
    match api::get(access, &namespace_type(), None, name).await {
        Ok(o) => Ok(o.is_some()),
        // Not allowed to read namespaces: assume it exists; the dry runs of the
        // objects in it will say otherwise.
        Err(e) if e.code() == Some(403) => Ok(true),
        Err(e) => Err(Unreachable(e)),
    }
}

/// Records one object's dry-run outcome in the plan.
fn record(dry: &mut DryRun, o: &mut PlanObject, result: Result<api::Applied, ApiError>) {
    match result {
        Ok(_) => o.dry_run = DryRunState::Ok,
        Err(ApiError::Status {
            code: 409,
            message,
            causes,
            ..
        }) => {
            o.dry_run = DryRunState::Conflict;
            o.message = Some(message.clone());
            dry.conflicts.push(Conflict {
                kind: o.kind.clone(),
                name: o.name.clone(),
                fields: causes
                    .into_iter()
                    .map(|c| c.field)
                    .filter(|f| !f.is_empty())
                    .collect(),
                message,
            });
        }
        Err(e) => {
            o.dry_run = DryRunState::Error;
            o.message = Some(e.to_string());
            dry.errors.push(ObjectError {
                kind: o.kind.clone(),
                name: o.name.clone(),
                message: e.to_string(),
                // A server-side apply is a PATCH, dry run or not.
                forbidden: (e.code() == Some(403)).then(|| Forbidden {
                    verb: "patch".into(),
                    resource: o.resource.group_resource(),
                }),
            });
        }
    }
}

/// Dry-runs every object against the target. When the target namespace does
/// not exist yet, only the Namespace can be checked; the objects in it are
/// "validated at apply" (docs/replay-safety.md, "The dry run").
///
/// With `create_namespace`, a missing target namespace is created first, and
/// only it (the plan's Namespace, applied for real), after `announce` has said
/// so; then every object gets a real dry run.
pub async fn dry_run(
    plan: &mut Plan,
    access: &ClusterAccess,
    create_namespace: bool,
    announce: &mut dyn FnMut(&str),
) -> Result<(), Unreachable> {
    let mut exists = namespace_exists(access, &plan.target.namespace).await?;
    if !exists && create_namespace {
        announce(&format!(
            "creating namespace {} on the target, and nothing else, so every object gets a real dry run",
            plan.target.namespace
        ));
        exists = create_target_namespace(plan, access).await?;
    }
    plan.target.namespace_exists = exists;
    let manager = plan.field_manager.clone();
    let mut dry = DryRun::default();
    for o in plan.objects.iter_mut() {
        if o.kind != "Namespace" && !exists {
            o.dry_run = DryRunState::ValidatedAtApply;
            dry.validated_at_apply
                .push(format!("{}/{}", o.kind, o.name));
            continue;
        }
        let result = apply_one(access, o, &manager, true).await;
        if let Err(e) = &result
            && is_transport(e)
        {
            return Err(Unreachable(e.clone()));
        }
        record(&mut dry, o, result);
    }
    dry.ok = dry.conflicts.is_empty() && dry.errors.is_empty();
    check_dependencies(plan, access, exists).await?;
    if !exists && dry.ok {
        plan.warnings
            .push(missing_namespace_warning(&plan.target.namespace));
    }
    plan.status = if dry.ok {
        PlanStatus::DryRunOk
    } else {
        PlanStatus::DryRunFailed
    };
    plan.dry_run = dry;
    Ok(())
}

/// Applies the plan's Namespace for real; whether it now exists. A refusal is
/// the dry run's finding: the Namespace's own dry run meets it again and
/// records it, and the objects inside stay validated at apply.
async fn create_target_namespace(
    plan: &mut Plan,
    access: &ClusterAccess,
) -> Result<bool, Unreachable> {
    let Some(ns) = plan.objects.iter().find(|o| o.kind == "Namespace").cloned() else {
        return Err(Unreachable(ApiError::Decode(
            "the plan has no Namespace".into(),
        )));
    };
    match apply_one(access, &ns, &plan.field_manager, false).await {
        Ok(_) => {
            plan.target.namespace_created = true;
            Ok(true)
        }
        Err(e) if is_transport(&e) => Err(Unreachable(e)),
        Err(_) => Ok(false),
    }
}

/// Drops from `plan.missing` what the target namespace already has, and
/// warns about the rest (docs/replay-safety.md, "Dependencies").
async fn check_dependencies(
    plan: &mut Plan,
    access: &ClusterAccess,
    namespace_exists: bool,
) -> Result<(), Unreachable> {
    let target = plan.target.namespace.clone();
    let mut still = Vec::new();
    for d in std::mem::take(&mut plan.missing) {
        let mut unsure = None;
        if namespace_exists && let Some(resource) = super::deps::resource_type(&d.kind) {
            match api::exists(access, &resource, Some(&target), &d.name).await {
                Ok(true) => continue,
                Ok(false) => {}
                Err(e) if is_transport(&e) => return Err(Unreachable(e)),
                // Not allowed to look (reading Secrets, say): say so.
                Err(e) => unsure = Some(e.to_string()),
            }
        }
        let mut warning = d.warning(&target);
        if let Some(why) = unsure {
            warning.push_str(&format!(" (could not check the target: {why})"));
        }
        plan.warnings.retain(|w| *w != warning);
        plan.warnings.push(warning);
        still.push(d);
    }
    plan.missing = still;
    Ok(())
}

/// Applies the plan in order. A missing target namespace is created first;
/// objects the plan could not dry-run (its namespace did not exist then) are
/// dry-run now, all of them, and nothing else is applied unless that passes.
/// Stops at the first object that fails (later objects may depend on it) and
/// reports the rest as skipped. Never deletes, never forces. Returns whether
/// every object applied; when the target stops answering, what was applied
/// so far is in `plan.applied` all the same.
pub async fn apply(plan: &mut Plan, access: &ClusterAccess) -> Result<bool, Unreachable> {
    plan.applied.clear();
    let result = apply_in_order(plan, access).await;
    if let Ok(true) = result {
        plan.status = PlanStatus::Applied;
        // The namespace exists now: what the plan said about it no longer holds.
        plan.target.namespace_exists = true;
        let stale = missing_namespace_warning(&plan.target.namespace);
        plan.warnings.retain(|w| *w != stale);
    }
    result
}

/// The warning of a plan whose target namespace does not exist yet.
fn missing_namespace_warning(namespace: &str) -> String {
    format!(
        "namespace {namespace} does not exist yet: its objects are validated when apply has created it"
    )
}

async fn apply_in_order(plan: &mut Plan, access: &ClusterAccess) -> Result<bool, Unreachable> {
    let manager = plan.field_manager.clone();
    let exists = namespace_exists(access, &plan.target.namespace).await?;
    if !exists {
        // The Namespace first, for real; then everything inside it, dry.
        let ns = plan
            .objects
            .iter()
            .find(|o| o.kind == "Namespace")
            .cloned()
            .ok_or_else(|| Unreachable(ApiError::Decode("the plan has no Namespace".into())))?;
        match apply_one(access, &ns, &manager, false).await {
            Ok(a) => plan.applied.push(applied(&ns, a.code)),
            Err(e) if is_transport(&e) => return Err(Unreachable(e)),
            Err(e) => {
                plan.applied.push(failed(&ns, &e));
                return Ok(false);
            }
        }
    }
    let unvalidated = plan
        .objects
        .iter()
        .any(|o| o.dry_run == DryRunState::ValidatedAtApply);
    if !exists || unvalidated {
        let mut dry = DryRun::default();
        for o in plan.objects.iter_mut().filter(|o| o.kind != "Namespace") {
            let result = apply_one(access, o, &manager, true).await;
            if let Err(e) = &result
                && is_transport(e)
            {
                return Err(Unreachable(e.clone()));
            }
            record(&mut dry, o, result);
        }
        dry.ok = dry.conflicts.is_empty() && dry.errors.is_empty();
        plan.dry_run = dry;
        if !plan.dry_run.ok {
            plan.status = PlanStatus::DryRunFailed;
            return Ok(false);
        }
    }
    let todo: Vec<PlanObject> = plan
        .objects
        .iter()
        .filter(|o| exists || o.kind != "Namespace")
        .cloned()
        .collect();
    for (i, o) in todo.iter().enumerate() {
        // The resourceVersion there before (`Some(None)`: nothing there), to
        // tell `unchanged` from `configured`; `None` when the target may patch
        // but not read it.
        let before = match api::get(access, &o.resource, o.namespace.as_deref(), &o.name).await {
            Ok(found) => Some(found.and_then(|v| v.pointer("/metadata/resourceVersion").cloned())),
            Err(e) if is_transport(&e) => return Err(Unreachable(e)),
            Err(_) => None,
        };
        match apply_one(access, o, &manager, false).await {
            Ok(a) => {
                let after = a.object.pointer("/metadata/resourceVersion").cloned();
                let result = if a.code == 201 || before == Some(None) {
                    ApplyResult::Created
                } else if before == Some(after) {
                    ApplyResult::Unchanged
                } else {
                    ApplyResult::Configured
                };
                plan.applied.push(AppliedObject {
                    kind: o.kind.clone(),
                    name: o.name.clone(),
                    result,
                    message: None,
                });
            }
            Err(e) if is_transport(&e) => return Err(Unreachable(e)),
            Err(e) => {
                plan.applied.push(failed(o, &e));
                for rest in &todo[i + 1..] {
                    plan.applied.push(AppliedObject {
                        kind: rest.kind.clone(),
                        name: rest.name.clone(),
                        result: ApplyResult::Skipped,
                        message: Some(format!(
                            "not applied: {}/{} failed before it",
                            o.kind, o.name
                        )),
                    });
                }
                return Ok(false);
            }
        }
    }
    Ok(true)
}

fn applied(o: &PlanObject, code: u16) -> AppliedObject {
    AppliedObject {
        kind: o.kind.clone(),
        name: o.name.clone(),
        result: if code == 201 {
            ApplyResult::Created
        } else {
            ApplyResult::Configured
        },
        message: None,
    }
}

fn failed(o: &PlanObject, e: &ApiError) -> AppliedObject {
    AppliedObject {
        kind: o.kind.clone(),
        name: o.name.clone(),
        result: ApplyResult::Failed,
        message: Some(e.to_string()),
    }
}
