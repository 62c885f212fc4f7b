//! `demo`: the built-in demo, end to end, in one process.

use super::args::GlobalArgs;
use crate::error::{CliError, CliResult};
use crate::journal::Journal;
use crate::recorder::display::Mode;
use crate::render::Format;
use clap::Args;
use std::path::PathBuf;

/// Run the built-in demo: a simulated cluster, a scripted incident, recorded and explained
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  # Everything in a fresh temporary directory
  kubectl krply demo

  # Keep the demo journal somewhere known
  kubectl krply demo --dir ./krply-demo

The demo never touches your kubeconfig, your clusters or your own journal.")]
pub struct DemoArgs {
    /// Directory for the demo's journal and kubeconfig (default: a new temporary directory)
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

pub async fn run(global: &GlobalArgs, args: DemoArgs) -> CliResult {
    let dir = match args.dir {
        Some(d) => d,
        None => std::env::temp_dir().join(format!(
            "krply-demo-{}-{}",
            std::process::id(),
            crate::time::Millis::now().as_ms()
        )),
    };
    let store = dir.join("journal.db");
    if store.exists() {
        return Err(CliError::usage(format!(
            "{} already holds a journal; the demo wants a fresh directory",
            dir.display()
        )));
    }
    let mode = Mode::for_stderr(global.quiet);
    let paint = global.paint();
    let say = |line: &str| {
        let _ = super::out(&format!("{} {line}\n", paint.dim("==>")));
    };
    let outcome = crate::demo::run(&store, mode, &say)
        .await
        .map_err(|e| CliError::runtime(format!("the demo failed: {e}")))?;
    say(&format!(
        "stopped the recorder: {} events, {} gap(s) in {} streams",
        outcome.summary.events(),
        outcome.summary.gaps(),
        outcome.summary.streams.len()
    ));

    let journal = Journal::open(&store)?;
    let coverage = super::coverage::report(
        &journal,
        &outcome.cluster_id,
        Some(crate::demo::NAMESPACE),
        Format::Table,
        paint,
    )?;
    super::out(&format!(
        "\n{}\n{coverage}",
        paint.bold("$ kubectl krply coverage -n shop")
    ))?;
    super::out(&format!(
        "\nThe 410 left a gap in every stream: the relist restored current state, but what\nhappened in between is not in the journal, and krply says so.\n\nExplore the journal yourself:\n  export KRPLY_STORE={}\n  kubectl krply status\n  kubectl krply coverage --cluster-id {}\n",
        store.display(),
        outcome.cluster_id
    ))
}
