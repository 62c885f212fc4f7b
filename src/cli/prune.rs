//! `prune --before T`: drop history older than T, keeping a baseline at T.

use super::args::{GlobalArgs, TimeArg};
use crate::error::CliResult;
use crate::history::History;
use crate::history::prune::StreamPlan;
use crate::journal::{Journal, WriterLock};
use crate::render;
use crate::time::Millis;
use clap::Args;

/// Drop history older than a time, keeping a baseline there so later answers do not change
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  kubectl krply prune --before 7d
  kubectl krply prune --before 2026-11-01T00:00:00Z --cluster-id 127.0.0.1-3f2a9b1c

Each stream's state at the cut becomes a new baseline and older records go, so
every question about a time at or after the cut gets the same answer as before.
A stream whose cut falls in a gap keeps its history. No recorder may run meanwhile.")]
pub struct PruneArgs {
    /// The cut: now, a duration ago (7d, 12h), a time of day (14:02), an RFC 3339 time or a saved snapshot
    #[arg(long, value_name = "TIME")]
    pub before: TimeArg,
}

pub fn run(global: &GlobalArgs, args: PruneArgs) -> CliResult {
    let now = Millis::now();
    let path = global.store_path()?;
    let journal = Journal::open(&path)?;
    let before = args
        .before
        .at(now, &journal, global.cluster_id.as_deref())?;
    let _lock = WriterLock::acquire(&path, &format!("prune (pid {})", std::process::id()))?;
    let size_before = journal.status()?.size_bytes;
    let clusters: Vec<String> = match &global.cluster_id {
        Some(id) => vec![id.clone()],
        None => journal.clusters()?.into_iter().map(|c| c.id).collect(),
    };
    let mut cuts = Vec::new();
    let mut plans = Vec::new();
    for cluster in &clusters {
        let history = History::load(&journal, cluster, now.as_ms())?;
        let (c, p) = history.prune_plan(before.as_ms())?;
        cuts.extend(c);
        plans.extend(p);
    }
    let report = journal.prune(&cuts, before.as_ms())?;
    let size_after = journal.status()?.size_bytes;
    let mut text = format!(
        "pruned history before {before}: {} record(s), {} body(ies), {} object(s), {} saved snapshot(s) removed; journal {} -> {}\n",
        report.records_deleted,
        report.bodies_deleted,
        report.objects_deleted,
        report.snapshots_deleted,
        render::human_bytes(size_before),
        render::human_bytes(size_after)
    );
    for p in &plans {
        text.push_str(&match p {
            StreamPlan::Cut {
                stream,
                cut,
                objects,
            } => format!(
                "  {stream:<40} baseline of {objects} object(s) at {} ({})\n",
                crate::render::clock::clock().stamp(*cut),
                crate::render::clock::clock().zone(*cut)
            ),
            StreamPlan::Keep { stream, reason } => format!("  {stream:<40} kept: {reason}\n"),
        });
    }
    super::out(&text)
}
