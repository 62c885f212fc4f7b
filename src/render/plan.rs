//! A replay plan as `replay plan` and `replay show` print it
//! (docs/replay-safety.md), and the saved plans as `replay list` shows them.

use super::Paint;
use crate::replay::{DryRunState, Plan, PlanStatus};

/// A plan as `replay plan` and `replay show` print it: the verdict, source and target,
/// the objects table, what was excluded, what the dry run found, and the warnings.
/// Long on purpose: one section after another, in reading order.
pub fn text(plan: &Plan, paint: Paint) -> String {
    // A dry run into a namespace that does not exist yet checks only the
    // Namespace: the headline says how much was really checked.
    let unchecked = plan.dry_run.validated_at_apply.len();
    let verdict = match plan.status {
        PlanStatus::DryRunOk if unchecked > 0 => paint.yellow(&format!(
            "dry-run-ok for the Namespace only; {unchecked} of {} objects are checked at apply, once it exists",
            plan.objects.len()
        )),
        PlanStatus::DryRunOk | PlanStatus::Applied => paint.green(plan.status.as_str()),
        _ => paint.red(plan.status.as_str()),
    };
    let mut t = format!(
        "Plan {}: {verdict}\n  source   {} namespace {} at {}\n  target   {} namespace {}{}\n  manager  {}\n",
        plan.id,
        plan.source.cluster,
        plan.source.namespace,
        local_time(&plan.source.at),
        plan.target.context.as_deref().map_or_else(
            || plan.target.server.clone(),
            |c| format!("context {c} ({})", plan.target.server)
        ),
        plan.target.namespace,
        // A refused plan never asked the target whether it exists.
        if plan.target.namespace_created {
            " (created by --create-namespace)"
        } else if plan.target.namespace_exists || plan.refused.is_some() {
            ""
        } else {
            " (to be created)"
        },
        plan.field_manager
    );
    if let Some(reason) = &plan.refused {
        t.push_str(&format!("  refused  {reason}\n"));
    }
    t.push('\n');
    let rows: Vec<Vec<String>> = plan
        .objects
        .iter()
        .map(|o| {
            let dry = match o.dry_run {
                DryRunState::Ok => paint.green("ok"),
                DryRunState::Conflict | DryRunState::Error => paint.red(o.dry_run.as_str()),
                other => other.as_str().to_string(),
            };
            vec![
                o.order.to_string(),
                o.kind.clone(),
                o.namespace.clone().unwrap_or_else(|| "-".into()),
                o.name.clone(),
                dry,
            ]
        })
        .collect();
    t.push_str(&super::table(
        &["ORDER", "KIND", "NAMESPACE", "NAME", "DRY-RUN"],
        &rows,
    ));
    if !plan.excluded.is_empty() {
        t.push_str("\nExcluded:\n");
        for e in &plan.excluded {
            t.push_str(&format!("  {} {}: {}\n", e.kind, e.name, e.reason));
        }
    }
    if !plan.dry_run.conflicts.is_empty() || !plan.dry_run.errors.is_empty() {
        t.push_str("\nDry run found:\n");
        for c in &plan.dry_run.conflicts {
            t.push_str(&format!(
                "  conflict  {} {}: {} ({})\n",
                c.kind,
                c.name,
                c.fields.join(", "),
                c.message.lines().next().unwrap_or("")
            ));
        }
        for e in plan.dry_run.errors.iter().filter(|e| e.forbidden.is_none()) {
            t.push_str(&format!(
                "  error     {} {}: {}\n",
                e.kind, e.name, e.message
            ));
        }
        t.push_str(&refusals(plan));
    }
    if !plan.warnings.is_empty() {
        t.push_str("\nWarnings:\n");
        for w in &plan.warnings {
            t.push_str(&format!("  {w}\n"));
        }
    }
    if !plan.applied.is_empty() {
        t.push_str("\nApplied:\n");
        for a in &plan.applied {
            t.push_str(&format!(
                "  {:<10} {} {}{}\n",
                a.result.as_str(),
                a.kind,
                a.name,
                a.message
                    .as_deref()
                    .map(|m| format!(": {m}"))
                    .unwrap_or_default()
            ));
        }
    }
    if plan.status == PlanStatus::DryRunOk {
        t.push_str(&format!(
            "\nNothing was written. To apply: kubectl krply replay apply {} --confirm\n",
            plan.id
        ));
    }
    t
}

/// The writes the target's RBAC refused, one line per verb and resource with
/// how many objects and which, then the server's words for the first, and
/// where the role that allows them is. Not one line per object: a user without
/// the role is refused for every object alike.
fn refusals(plan: &Plan) -> String {
    let mut groups: std::collections::BTreeMap<&crate::replay::Forbidden, Vec<&str>> =
        std::collections::BTreeMap::new();
    let mut first = None;
    for e in &plan.dry_run.errors {
        if let Some(f) = &e.forbidden {
            groups.entry(f).or_default().push(&e.name);
            first.get_or_insert(e.message.as_str());
        }
    }
    let Some(first) = first else {
        return String::new();
    };
    let mut t = String::new();
    for (f, names) in &groups {
        let objects = if names.len() == 1 {
            "object"
        } else {
            "objects"
        };
        t.push_str(&format!(
            "  refused   {} {} in namespace {}: {} {objects} ({})\n",
            f.verb,
            f.resource,
            plan.target.namespace,
            names.len(),
            names.join(", ")
        ));
    }
    t.push_str(&format!(
        "            the server said: {first}\n            hint: the target's user needs the role in docs/rbac/replay-role.yaml, bound in namespace {}\n",
        plan.target.namespace
    ));
    t
}

/// A plan's saved RFC 3339 time as text shows times, with the zone.
fn local_time(at: &str) -> String {
    match crate::time::Millis::parse_rfc3339(at) {
        Ok(t) => {
            let clock = crate::render::clock::clock();
            format!("{} ({})", clock.stamp(t.as_ms()), clock.zone(t.as_ms()))
        }
        Err(_) => at.to_string(),
    }
}

/// Each saved plan in one line of `replay list -o json|yaml`: its id,
/// status, source and target, how many objects it holds and excludes, and
/// whether the recording was complete.
pub fn summaries(plans: &[Plan]) -> Vec<serde_json::Value> {
    plans
        .iter()
        .map(|p| {
            serde_json::json!({
                "id": p.id, "status": p.status, "created_at": p.created_at,
                "source": p.source, "target": {"context": p.target.context, "namespace": p.target.namespace},
                "objects": p.objects.len(), "excluded": p.excluded.len(), "complete": p.complete,
            })
        })
        .collect()
}

/// The saved plans as `replay list` shows them, one row each.
pub fn list_table(plans: &[Plan]) -> String {
    super::table(
        &[
            "ID", "STATUS", "SOURCE", "AT", "TARGET", "OBJECTS", "CREATED",
        ],
        &plans
            .iter()
            .map(|p| {
                vec![
                    p.id.clone(),
                    p.status.to_string(),
                    format!("{}/{}", p.source.cluster, p.source.namespace),
                    p.source.at.clone(),
                    format!(
                        "{}/{}",
                        p.target.context.as_deref().unwrap_or(&p.target.cluster),
                        p.target.namespace
                    ),
                    p.objects.len().to_string(),
                    p.created_at.clone(),
                ]
            })
            .collect::<Vec<_>>(),
    )
}
