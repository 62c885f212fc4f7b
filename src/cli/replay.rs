//! `replay plan|show|list|apply`: past declarative state into a test namespace,
//! planned, dry-run, and applied only when asked.

use super::args::{GlobalArgs, TimeArg};
use super::reader::Reader;
use crate::cluster::{self, ConnectOptions};
use crate::error::{CliError, CliResult};
use crate::journal::Journal;
use crate::render::{self, Format};
use crate::replay::make::PlanRequest;
use crate::replay::{self, ApplyResult, Plan, PlanStatus, policy, run};
use crate::time::Millis;
use clap::{Args, Subcommand};

/// Rebuild a namespace's past state into a test namespace: plan with a dry run, then apply
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  # Plan: the shop namespace as it was at 10:00, into shop-repro, checked by a server-side dry run
  kubectl krply replay plan -n shop --at 2026-11-29T10:00:00Z --to-namespace shop-repro

  # Look at the saved plans, and at one plan's manifests
  kubectl krply replay list
  kubectl krply replay show 3f2a9b1c -o yaml

  # Apply a plan whose dry run passed
  kubectl krply replay apply 3f2a9b1c --confirm")]
pub struct ReplayArgs {
    #[command(subcommand)]
    pub command: ReplayCommand,
}

#[derive(Debug, Subcommand)]
pub enum ReplayCommand {
    Plan(PlanArgs),
    Show(ShowArgs),
    List(ListArgs),
    Apply(ApplyArgs),
}

/// Plan a replay of the source namespace (-n) at a time into another namespace, with a server-side dry run
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  # The shop namespace as it was 2 hours ago, into shop-repro on the current context
  kubectl krply replay plan -n shop --at 2h --to-namespace shop-repro

  # Into a test cluster, jobs included, even though the recording has a gap
  kubectl krply replay plan -n shop --at 2026-11-29T10:00:00Z --to-namespace shop \\
      --target-context kind-test --include Job --allow-gaps

Server-owned fields are removed; Secrets, RBAC, pods, controller-owned objects, jobs,
claims and LoadBalancer Services are left out with a reason (--include brings back the
kinds that can safely be replayed). A workload naming a ServiceAccount, ConfigMap, Secret
or claim that neither the plan nor the target has gets a warning saying what would fix it. Nothing is written to the target:
the dry run is a server-side apply with dryRun=All.")]
pub struct PlanArgs {
    /// Only these resource types of the source namespace
    #[arg(value_name = "TYPE")]
    pub types: Vec<String>,
    /// The namespace to replay into
    #[arg(long, value_name = "NS")]
    pub to_namespace: String,
    /// The time to rebuild: now, a duration ago (2h), a time of day (14:02), an RFC 3339 time or a saved snapshot
    #[arg(long, default_value = "now", value_name = "TIME")]
    pub at: TimeArg,
    /// The kubeconfig context of the target cluster (default: the current context)
    #[arg(long, value_name = "CONTEXT")]
    pub target_context: Option<String>,
    /// Replay this excluded kind too (repeatable; kind, plural or short name: Job, CronJob,
    /// Pod, Role, RoleBinding, PersistentVolumeClaim, ReplicaSet, LoadBalancer)
    #[arg(long, value_name = "KIND")]
    pub include: Vec<String>,
    /// Plan even though the recording has gaps at that time (every gap is listed)
    #[arg(long)]
    pub allow_gaps: bool,
    /// Create the target namespace if it does not exist, and nothing else, so
    /// that every object gets a real dry run (else they are checked at apply)
    #[arg(long)]
    pub create_namespace: bool,
    /// Only show what the plan would hold, from the journal alone: no cluster is
    /// contacted, nothing is dry-run or saved, and gaps are listed, not refused
    #[arg(long, conflicts_with_all = ["create_namespace", "allow_gaps"])]
    pub preview: bool,
}

/// Show a saved plan (-o yaml prints its manifests, ready for kubectl apply --server-side)
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  kubectl krply replay show 3f2a9b1c\n  kubectl krply replay show 3f2a9b1c -o yaml | kubectl apply --server-side -f -"
)]
pub struct ShowArgs {
    /// The plan id
    pub plan: String,
}

/// List the saved plans
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  kubectl krply replay list\n  kubectl krply replay list -o json"
)]
pub struct ListArgs {}

/// Apply a plan whose dry run passed (needs --confirm; never forces, never deletes)
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  kubectl krply replay apply 3f2a9b1c --confirm")]
pub struct ApplyArgs {
    /// The plan id
    pub plan: String,
    /// Really write to the target cluster
    #[arg(long)]
    pub confirm: bool,
}

pub async fn run(global: &GlobalArgs, args: ReplayArgs) -> CliResult {
    match args.command {
        ReplayCommand::Plan(a) => plan(global, a).await,
        ReplayCommand::Show(a) => show(global, a),
        ReplayCommand::List(a) => list(global, a),
        ReplayCommand::Apply(a) => apply(global, a).await,
    }
}

fn check_name(ns: &str) -> CliResult {
    let ok = !ns.is_empty()
        && ns.len() <= 63
        && ns
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !ns.starts_with('-')
        && !ns.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(CliError::usage(format!(
            "invalid --to-namespace \"{ns}\": a namespace name is lowercase letters, digits and '-', at most 63"
        )))
    }
}

/// The flags of a plan, checked before anything is opened.
fn check_plan(global: &GlobalArgs, args: &PlanArgs) -> CliResult<Format> {
    let format = global.format(Format::Text, &[Format::Text, Format::Json, Format::Yaml])?;
    check_name(&args.to_namespace)?;
    if global.all_namespaces {
        return Err(CliError::usage(
            "replay plans one namespace: use -n, not -A",
        ));
    }
    check_includes(&args.include)?;
    Ok(format)
}

async fn plan(global: &GlobalArgs, args: PlanArgs) -> CliResult {
    let format = check_plan(global, &args)?;
    if args.preview {
        return plan_preview(global, args);
    }
    let reader = Reader::open(global)?;
    let opts = ConnectOptions {
        context: args
            .target_context
            .clone()
            .or(global.connection.context.clone()),
        ..global.connect_options()?
    };
    let plan = make_plan(&reader, &opts, &args).await?;
    print_plan(&plan, format, global.paint())?;
    failed(&plan)
}

/// A plan as `-o` asks; its completeness reported to an `mcp` tool call.
fn print_plan(plan: &Plan, format: Format, paint: crate::render::Paint) -> CliResult {
    super::sink::report(plan.complete, plan.gaps.clone());
    super::out(&match format {
        Format::Json => render::json(&plan_json(plan)),
        Format::Yaml => render::yaml(&plan_json(plan)),
        _ => render::plan::text(plan, paint),
    })
}

/// `replay plan --preview`: the plan from the journal alone, nothing
/// contacted, dry-run or saved. Synchronous, for `mcp` too.
fn plan_preview(global: &GlobalArgs, args: PlanArgs) -> CliResult {
    let format = check_plan(global, &args)?;
    let reader = Reader::open(global)?;
    let plan = replay::make::preview(
        &reader.journal,
        &request(&reader, &args)?,
        args.target_context.clone(),
    )?;
    print_plan(&plan, format, global.paint())
}

/// The offline part of `replay`, for `mcp`: `replay plan --preview`.
pub fn preview(global: &GlobalArgs, args: ReplayArgs) -> CliResult {
    match args.command {
        ReplayCommand::Plan(a) if a.preview => plan_preview(global, a),
        _ => Err(CliError::usage(
            "only `replay plan --preview` answers offline",
        )),
    }
}

/// A plan whose dry run failed, or that the target refused, is saved and
/// printed all the same, and the command exits 1 (docs/replay-safety.md).
fn failed(plan: &Plan) -> CliResult {
    match plan.status {
        PlanStatus::DryRunFailed => Err(CliError::runtime(format!(
            "the dry run of plan {} failed: {} of {} objects would not apply",
            plan.id,
            plan.dry_run.errors.len() + plan.dry_run.conflicts.len(),
            plan.objects.len()
        ))
        .hint("the plan is saved; fix what the dry run found, then plan again")),
        PlanStatus::Refused => Err(CliError::runtime(format!(
            "plan {} was refused: {}",
            plan.id,
            plan.refused
                .as_deref()
                .unwrap_or("the target could not be checked")
        ))),
        _ => Ok(()),
    }
}

/// The kinds `--include` names, as kinds (`jobs` -> `Job`); anything else is a
/// usage error.
fn check_includes(include: &[String]) -> CliResult<Vec<String>> {
    include
        .iter()
        .map(|name| match policy::include_kind(name) {
            Some(kind) => Ok(kind.to_string()),
            None => Err(CliError::usage(format!(
                "--include {name}: only kinds left out by default can be included (Job, CronJob, Pod, Role, RoleBinding, PersistentVolumeClaim, ReplicaSet, LoadBalancer){}",
                if name.to_ascii_lowercase().starts_with("secret") {
                    "; Secrets are never replayed"
                } else {
                    ""
                }
            ))),
        })
        .collect()
}

/// Builds a plan of `reader`'s namespace for `args`, runs its dry run against
/// the cluster `opts` selects, and saves it (replay::make does the work).
async fn make_plan(reader: &Reader, opts: &ConnectOptions, args: &PlanArgs) -> CliResult<Plan> {
    let request = request(reader, args)?;
    let mut announce = |what: &str| eprintln!("note: {what}");
    Ok(replay::make::make(&reader.journal, &request, opts, &mut announce).await?)
}

/// What `args` ask to plan of `reader`'s namespace.
fn request(reader: &Reader, args: &PlanArgs) -> CliResult<PlanRequest> {
    Ok(PlanRequest {
        cluster: reader.cluster.id.clone(),
        namespace: reader
            .namespace
            .clone()
            .ok_or_else(|| CliError::usage("replay needs a source namespace (-n)"))?,
        at: args
            .at
            .at(Millis::now(), &reader.journal, Some(&reader.cluster.id))?,
        types: args.types.clone(),
        to_namespace: args.to_namespace.clone(),
        include: check_includes(&args.include)?,
        allow_gaps: args.allow_gaps,
        create_namespace: args.create_namespace,
    })
}

fn save(journal: &Journal, plan: &Plan) -> CliResult {
    Ok(replay::make::save(journal, plan)?)
}

fn load(journal: &Journal, id: &str) -> CliResult<Plan> {
    let saved = journal.plan(id)?.ok_or_else(|| {
        CliError::runtime(format!("no plan \"{id}\" in the journal"))
            .hint("`kubectl krply replay list` shows the saved plans")
    })?;
    serde_json::from_str(&saved.info)
        .map_err(|e| CliError::runtime(format!("plan {id} cannot be read: {e}")).caused_by(e))
}

/// The plan in the JSON shape of docs/output.md (manifests included).
fn plan_json(plan: &Plan) -> serde_json::Value {
    serde_json::to_value(plan).unwrap_or_default()
}

fn show(global: &GlobalArgs, args: ShowArgs) -> CliResult {
    let format = global.format(Format::Text, &[Format::Text, Format::Json, Format::Yaml])?;
    let journal = Journal::open(&global.store_path()?)?;
    let plan = load(&journal, &args.plan)?;
    super::out(&match format {
        Format::Json => render::json(&plan_json(&plan)),
        // The manifests, ready for `kubectl apply --server-side -f -`.
        Format::Yaml => plan
            .objects
            .iter()
            .map(|o| format!("---\n{}", render::yaml(&o.manifest)))
            .collect::<String>(),
        _ => render::plan::text(&plan, global.paint()),
    })
}

fn list(global: &GlobalArgs, _args: ListArgs) -> CliResult {
    let format = global.format(Format::Table, &[Format::Table, Format::Json, Format::Yaml])?;
    let journal = Journal::open(&global.store_path()?)?;
    let plans: Vec<Plan> = journal
        .plans()?
        .iter()
        .filter_map(|p| serde_json::from_str(&p.info).ok())
        .collect();
    super::out(&match format {
        Format::Json => {
            render::json(&serde_json::json!({ "plans": render::plan::summaries(&plans) }))
        }
        Format::Yaml => {
            render::yaml(&serde_json::json!({ "plans": render::plan::summaries(&plans) }))
        }
        _ if plans.is_empty() => "No plans.\n".into(),
        _ => render::plan::list_table(&plans),
    })
}

async fn apply(global: &GlobalArgs, args: ApplyArgs) -> CliResult {
    // Flags are checked before anything is written.
    let format = global.format(Format::Text, &[Format::Text, Format::Json, Format::Yaml])?;
    let journal = Journal::open(&global.store_path()?)?;
    let mut plan = load(&journal, &args.plan)?;
    if !args.confirm {
        return Err(CliError::runtime(format!(
            "refusing to apply plan {} without --confirm; nothing was written",
            plan.id
        ))
        .hint(format!(
            "review it with `kubectl krply replay show {}`, then add --confirm",
            plan.id
        )));
    }
    if !matches!(plan.status, PlanStatus::DryRunOk | PlanStatus::Applied) {
        return Err(CliError::runtime(format!(
            "refusing to apply plan {}: its status is {}, not dry-run-ok; nothing was written",
            plan.id, plan.status
        ))
        .hint("plan again once the dry run can pass"));
    }
    if plan.target.cluster == plan.source.cluster && plan.target.namespace == plan.source.namespace
    {
        return Err(CliError::runtime(
            "refusing to apply a plan into its own source namespace",
        ));
    }
    // Exactly the target the plan recorded, and only if it is still that cluster.
    let opts = ConnectOptions {
        context: plan.target.context.clone(),
        ..global.connect_options()?
    };
    let target = cluster::resolve_target(&opts)?;
    if target.cluster_id != plan.target.cluster {
        return Err(CliError::runtime(format!(
            "refusing to apply plan {}: context {} now points at {} ({}), not at {} where the plan was checked",
            plan.id,
            plan.target.context.as_deref().unwrap_or("(current)"),
            target.cluster_id,
            target.server,
            plan.target.cluster
        )));
    }
    let access = cluster::connect(&target, &opts).await?;
    let outcome = run::apply(&mut plan, &access).await;
    // Saved whatever happened: what was applied before the target stopped
    // answering is part of the plan's story.
    save(&journal, &plan)?;
    let ok = outcome.map_err(|e| {
        let done = plan
            .applied
            .iter()
            .filter(|a| a.result != ApplyResult::Failed)
            .count();
        CliError::runtime(format!(
            "cannot reach the target at {}: {e}; {done} object(s) were applied before that",
            target.server
        ))
        .hint(format!(
            "`kubectl krply replay show {}` lists them; apply again once the target answers",
            plan.id
        ))
        .caused_by(e)
    })?;
    super::out(&match format {
        Format::Json => render::json(&plan_json(&plan)),
        Format::Yaml => render::yaml(&plan_json(&plan)),
        _ => render::plan::text(&plan, global.paint()),
    })?;
    if ok {
        Ok(())
    } else {
        Err(CliError::runtime(format!(
            "plan {} was not fully applied (see above)",
            plan.id
        )))
    }
}
