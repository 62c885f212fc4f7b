//! Replay (docs/replay-safety.md): rebuild the declarative state of a namespace at a time,
//! sanitize it, map it into a target namespace, order it, and plan a
//! server-side apply checked by a dry run. Replay never sends past events to a
//! cluster, never forces a conflict and never deletes.
//!
//! [`build`] makes a plan from reconstructed objects (pure); [`run`] dry-runs
//! and applies plans against a cluster.

pub mod deps;
pub mod make;
pub mod mapping;
pub mod policy;
pub mod run;
pub mod sanitize;

use crate::model::ResourceType;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Where a plan stands. In JSON and text: `pending`, `dry-run-ok`,
/// `dry-run-failed`, `refused` or `applied`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlanStatus {
    /// Built, not yet dry-run.
    Pending,
    DryRunOk,
    DryRunFailed,
    Refused,
    Applied,
}

impl PlanStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            PlanStatus::Pending => "pending",
            PlanStatus::DryRunOk => "dry-run-ok",
            PlanStatus::DryRunFailed => "dry-run-failed",
            PlanStatus::Refused => "refused",
            PlanStatus::Applied => "applied",
        }
    }
}

impl std::fmt::Display for PlanStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the dry run said about one object: `ok`, `conflict`, `error`,
/// `validated at apply` (its namespace did not exist yet) or `pending`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum DryRunState {
    #[serde(rename = "pending")]
    Pending,
    #[serde(rename = "ok")]
    Ok,
    #[serde(rename = "conflict")]
    Conflict,
    #[serde(rename = "error")]
    Error,
    #[serde(rename = "validated at apply")]
    ValidatedAtApply,
}

impl DryRunState {
    pub fn as_str(self) -> &'static str {
        match self {
            DryRunState::Pending => "pending",
            DryRunState::Ok => "ok",
            DryRunState::Conflict => "conflict",
            DryRunState::Error => "error",
            DryRunState::ValidatedAtApply => "validated at apply",
        }
    }
}

/// What apply did to one object: `created`, `configured`, `unchanged`,
/// `failed`, or `skipped` (an object before it failed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ApplyResult {
    Created,
    Configured,
    Unchanged,
    Failed,
    Skipped,
}

impl ApplyResult {
    pub fn as_str(self) -> &'static str {
        match self {
            ApplyResult::Created => "created",
            ApplyResult::Configured => "configured",
            ApplyResult::Unchanged => "unchanged",
            ApplyResult::Failed => "failed",
            ApplyResult::Skipped => "skipped",
        }
    }
}

/// Where a plan is meant to go and what it holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub id: String,
    pub status: PlanStatus,
    pub created_at: String,
    pub field_manager: String,
    pub source: Source,
    pub target: Target,
    /// Whether the recording covers the source namespace at the plan's time.
    pub complete: bool,
    /// What the recording misses (listed in the plan with --allow-gaps).
    pub gaps: Vec<String>,
    pub objects: Vec<PlanObject>,
    pub excluded: Vec<Excluded>,
    pub warnings: Vec<String>,
    /// Objects planned workloads name that the plan does not hold (those the
    /// target has are dropped by the dry run).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<deps::Dependency>,
    pub dry_run: DryRun,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub applied: Vec<AppliedObject>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Source {
    pub cluster: String,
    pub namespace: String,
    pub at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Target {
    /// The kubeconfig context the plan goes to (`None`: the current one when
    /// planned, recorded as the cluster below).
    pub context: Option<String>,
    pub cluster: String,
    pub server: String,
    pub namespace: String,
    /// Whether the target namespace existed when the plan was made (after
    /// `--create-namespace` created it, if it did).
    pub namespace_exists: bool,
    /// Whether `replay plan --create-namespace` created the target namespace.
    #[serde(default)]
    pub namespace_created: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanObject {
    pub order: usize,
    pub kind: String,
    #[serde(rename = "apiVersion")]
    pub api_version: String,
    pub namespace: Option<String>,
    pub name: String,
    /// How the object is addressed in the API.
    pub resource: ResourceType,
    pub dry_run: DryRunState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The sanitized manifest, as it will be applied.
    pub manifest: Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Excluded {
    pub kind: String,
    pub name: String,
    pub reason: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DryRun {
    pub ok: bool,
    pub conflicts: Vec<Conflict>,
    pub errors: Vec<ObjectError>,
    /// Objects that can only be checked once the target namespace exists.
    pub validated_at_apply: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Conflict {
    pub kind: String,
    pub name: String,
    /// The fields another manager owns, as the server names them.
    pub fields: Vec<String>,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObjectError {
    pub kind: String,
    pub name: String,
    pub message: String,
    /// When the target's RBAC refused the write: what was refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forbidden: Option<Forbidden>,
}

/// A write the target's RBAC refused: the verb and the group-qualified
/// resource (`patch`, `deployments.apps`), as an RBAC rule names them.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Forbidden {
    pub verb: String,
    pub resource: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AppliedObject {
    pub kind: String,
    pub name: String,
    pub result: ApplyResult,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// A recorded object to replay, with its type.
pub struct Recorded {
    pub resource: ResourceType,
    pub object: Value,
}

/// The pieces of a plan that come from the journal.
pub struct Inputs<'a> {
    pub id: String,
    pub created_at: String,
    pub source: Source,
    pub target: Target,
    pub complete: bool,
    pub gaps: Vec<String>,
    /// The source Namespace object, when its stream was recorded.
    pub namespace_object: Option<&'a Value>,
    pub objects: Vec<Recorded>,
    pub include: &'a [String],
    /// The kinds the source namespace was recorded with.
    pub recorded: Vec<String>,
}

/// The field manager of a plan.
pub fn field_manager(id: &str) -> String {
    format!("krply-plan-{id}")
}

fn namespace_type() -> ResourceType {
    ResourceType {
        group: String::new(),
        version: "v1".into(),
        resource: "namespaces".into(),
        kind: "Namespace".into(),
        singular: "namespace".into(),
        short_names: vec!["ns".into()],
        namespaced: false,
    }
}

/// Builds a plan (not yet dry-run): exclusions with reasons, sanitized and
/// mapped manifests in apply order, the target Namespace first.
pub fn build(inputs: Inputs<'_>) -> Plan {
    let from = inputs.source.namespace.clone();
    let to = inputs.target.namespace.clone();
    let mut excluded = Vec::new();
    let mut warnings = Vec::new();
    let mut planned: Vec<(ResourceType, Value)> = Vec::new();

    let mut ns = match inputs.namespace_object {
        Some(o) => sanitize::sanitize("Namespace", o),
        None => {
            serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": from}})
        }
    };
    mapping::map_namespace(&mut ns, "Namespace", &from, &to);
    planned.push((namespace_type(), ns));

    for r in inputs.objects {
        let kind = r.resource.kind.clone();
        let name = r
            .object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if let Some(reason) = policy::exclusion(&kind, &r.object, inputs.include) {
            excluded.push(Excluded { kind, name, reason });
            continue;
        }
        let mut manifest = sanitize::sanitize(&kind, &r.object);
        warnings.extend(mapping::map_namespace(&mut manifest, &kind, &from, &to));
        planned.push((r.resource, manifest));
    }
    planned.sort_by(|(a, ma), (b, mb)| {
        let name = |m: &Value| {
            m.pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        (policy::tier(&a.kind), &a.kind, name(ma)).cmp(&(policy::tier(&b.kind), &b.kind, name(mb)))
    });
    excluded.sort_by(|a, b| (&a.kind, &a.name).cmp(&(&b.kind, &b.name)));
    let objects: Vec<PlanObject> = planned
        .into_iter()
        .enumerate()
        .map(|(i, (resource, manifest))| PlanObject {
            order: i + 1,
            kind: resource.kind.clone(),
            api_version: resource.api_version(),
            namespace: resource.namespaced.then(|| to.clone()),
            name: manifest
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            resource,
            dry_run: DryRunState::Pending,
            message: None,
            manifest,
        })
        .collect();
    if !inputs.complete {
        warnings.extend(inputs.gaps.iter().map(|g| format!("not covered: {g}")));
    }
    let missing = deps::missing(&objects, &excluded, &inputs.recorded);
    Plan {
        field_manager: field_manager(&inputs.id),
        id: inputs.id,
        status: PlanStatus::Pending,
        created_at: inputs.created_at,
        source: inputs.source,
        target: inputs.target,
        complete: inputs.complete,
        gaps: inputs.gaps,
        objects,
        excluded,
        warnings,
        missing,
        dry_run: DryRun::default(),
        refused: None,
        applied: Vec::new(),
    }
}

/// A fresh plan id: 8 hex digits.
pub fn new_id() -> String {
    let mut bytes = [0u8; 4];
    let rng = ring::rand::SystemRandom::new();
    if ring::rand::SecureRandom::fill(&rng, &mut bytes).is_err() {
        let t = crate::time::Millis::now().as_ms() as u64 ^ (u64::from(std::process::id()) << 32);
        bytes.copy_from_slice(&t.to_be_bytes()[4..]);
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn states_keep_the_words_saved_plans_and_scripts_use() {
        let words = |v: &dyn erased::Ser| v.json();
        assert_eq!(words(&PlanStatus::DryRunOk), "\"dry-run-ok\"");
        assert_eq!(words(&PlanStatus::DryRunFailed), "\"dry-run-failed\"");
        assert_eq!(
            words(&DryRunState::ValidatedAtApply),
            "\"validated at apply\""
        );
        assert_eq!(words(&ApplyResult::Unchanged), "\"unchanged\"");
        let old: PlanStatus = serde_json::from_str("\"applied\"").unwrap();
        assert_eq!(old, PlanStatus::Applied);
        for s in [
            PlanStatus::Pending,
            PlanStatus::Refused,
            PlanStatus::DryRunOk,
        ] {
            assert_eq!(words(&s), format!("\"{}\"", s.as_str()));
        }
        for d in [
            DryRunState::Ok,
            DryRunState::Conflict,
            DryRunState::Error,
            DryRunState::Pending,
        ] {
            assert_eq!(words(&d), format!("\"{}\"", d.as_str()));
        }
    }

    mod erased {
        pub trait Ser {
            fn json(&self) -> String;
        }
        impl<T: serde::Serialize> Ser for T {
            fn json(&self) -> String {
                serde_json::to_string(self).unwrap()
            }
        }
    }

    use super::*;
    use serde_json::json;

    fn rt(kind: &str, resource: &str, group: &str) -> ResourceType {
        ResourceType {
            group: group.into(),
            version: "v1".into(),
            resource: resource.into(),
            kind: kind.into(),
            singular: kind.to_ascii_lowercase(),
            short_names: vec![],
            namespaced: true,
        }
    }

    #[test]
    fn plans_map_order_and_exclude() {
        let objects = vec![
            Recorded {
                resource: rt("Deployment", "deployments", "apps"),
                object: json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop", "uid": "u"}, "spec": {}}),
            },
            Recorded {
                resource: rt("Secret", "secrets", ""),
                object: json!({"kind": "Secret", "metadata": {"name": "db", "namespace": "shop"}}),
            },
            Recorded {
                resource: rt("ConfigMap", "configmaps", ""),
                object: json!({"kind": "ConfigMap", "metadata": {"name": "app", "namespace": "shop"}}),
            },
            Recorded {
                resource: rt("ConfigMap", "configmaps", ""),
                object: json!({"kind": "ConfigMap", "metadata": {"name": "kube-root-ca.crt", "namespace": "shop"}}),
            },
            Recorded {
                resource: rt("Service", "services", ""),
                object: json!({"kind": "Service", "metadata": {"name": "web", "namespace": "shop"}, "spec": {"clusterIP": "10.0.0.1"}}),
            },
        ];
        let plan = build(Inputs {
            id: "abcd1234".into(),
            created_at: "now".into(),
            source: Source {
                cluster: "c".into(),
                namespace: "shop".into(),
                at: "t".into(),
            },
            target: Target {
                context: None,
                cluster: "c".into(),
                server: "s".into(),
                namespace: "copy".into(),
                namespace_exists: false,
                namespace_created: false,
            },
            complete: true,
            gaps: vec![],
            namespace_object: None,
            objects,
            include: &[],
            recorded: Vec::new(),
        });
        let order: Vec<(usize, &str, &str)> = plan
            .objects
            .iter()
            .map(|o| (o.order, o.kind.as_str(), o.name.as_str()))
            .collect();
        assert_eq!(
            order,
            [
                (1, "Namespace", "copy"),
                (2, "ConfigMap", "app"),
                (3, "Service", "web"),
                (4, "Deployment", "web")
            ]
        );
        assert!(
            plan.objects
                .iter()
                .skip(1)
                .all(|o| o.manifest["metadata"]["namespace"] == "copy")
        );
        assert_eq!(plan.objects[2].manifest["spec"].get("clusterIP"), None);
        let excluded: Vec<&str> = plan.excluded.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(excluded, ["kube-root-ca.crt", "db"]);
        assert_eq!(plan.field_manager, "krply-plan-abcd1234");
    }
}
