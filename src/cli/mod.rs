//! The command line: clap definitions and dispatch. Each subcommand lives in its
//! own module and only wires library pieces together.

pub mod answer;
pub mod args;
pub mod completion;
pub mod coverage;
pub mod demo;
pub mod diff;
pub mod export;
pub mod get;
pub mod object_arg;
pub mod prune;
pub mod reader;
pub mod record;
pub mod replay;
pub mod snapshot;
pub mod status;
pub mod timeline;
pub mod version;

use crate::error::{CliError, CliResult};
use args::GlobalArgs;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use std::io::Write;
use std::process::ExitCode;

const ABOUT: &str = "A truthful, local history of your Kubernetes objects";

const LONG_ABOUT: &str = "\
kubectl krply records what happens to your Kubernetes objects into a local journal and answers
from it: what changed, when, and whether the recording is complete.

Run `kubectl krply record` in a spare terminal; during an incident, ask the journal.";

const EXAMPLES: &str = "\
Examples:
  # In a spare terminal: record the current namespace until Ctrl-C
  kubectl krply record

  # During an incident: what changed in the last 30 minutes, field by field
  kubectl krply diff --since 30m

  # Every recorded version of one object, with the gaps of its stream
  kubectl krply timeline deploy/frontend

  # The namespace as it was 2 hours ago, planned into a test namespace (dry run only)
  kubectl krply replay plan --at 2h --to-namespace shop-repro

  # Try it all on a simulated cluster
  kubectl krply demo";

#[derive(Debug, Parser)]
#[command(
    name = "kubectl krply",
    bin_name = "kubectl krply",
    about = ABOUT,
    long_about = LONG_ABOUT,
    after_help = EXAMPLES,
    disable_version_flag = true,
    propagate_version = false,
    max_term_width = 100
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    Record(record::RecordArgs),
    Status(status::StatusArgs),
    Coverage(coverage::CoverageArgs),
    Diff(diff::DiffArgs),
    Timeline(timeline::TimelineArgs),
    #[command(alias = "reconstruct")]
    Get(get::GetArgs),
    Snapshot(snapshot::SnapshotArgs),
    Export(export::ExportArgs),
    Prune(prune::PruneArgs),
    Replay(replay::ReplayArgs),
    Demo(demo::DemoArgs),
    Version(version::VersionArgs),
    Completion(completion::CompletionArgs),
}

/// Runs the command line and returns the process exit code.
pub fn main() -> ExitCode {
    if let Some(code) = completion::answer_kubectl() {
        return code;
    }
    let matches = match Cli::command().try_get_matches() {
        Ok(m) => m,
        Err(e) => return clap_error(e),
    };
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => return clap_error(e),
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            e.print();
            e.exit_code()
        }
    }
}

/// clap's own errors: help and version print as usual; a usage error becomes one
/// `error:` line with a hint, exit 2.
fn clap_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            }
        }
        _ => {
            let rendered = e.render().to_string();
            let first = rendered
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("invalid arguments")
                .trim();
            let message = first.strip_prefix("error: ").unwrap_or(first);
            let tip = rendered
                .lines()
                .map(str::trim)
                .find_map(|l| l.strip_prefix("tip: "))
                .map(str::to_string);
            let mut err = CliError::usage(message.to_string());
            if let Some(tip) = tip {
                err = err.hint(tip);
            }
            err.hint("see `kubectl krply --help`").print();
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> CliResult {
    // The recorder's async side (network, decoding) needs one thread; the
    // journal writer has its own. The demo also runs the simulator in-process.
    let workers = match cli.command {
        Command::Record(_) => 1,
        _ => 2,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .worker_threads(workers)
        .build()
        .map_err(|e| CliError::runtime(format!("cannot start the async runtime: {e}")))?;
    let global = cli.global;
    runtime.block_on(async move {
        match cli.command {
            Command::Record(a) => record::run(&global, a).await,
            Command::Status(a) => status::run(&global, a),
            Command::Coverage(a) => coverage::run(&global, a),
            Command::Diff(a) => diff::run(&global, a),
            Command::Timeline(a) => timeline::run(&global, a),
            Command::Get(a) => get::run(&global, a),
            Command::Snapshot(a) => snapshot::run(&global, a),
            Command::Export(a) => export::run(&global, a),
            Command::Prune(a) => prune::run(&global, a),
            Command::Replay(a) => replay::run(&global, a).await,
            Command::Demo(a) => demo::run(&global, a).await,
            Command::Version(a) => version::run(&global, a),
            Command::Completion(a) => completion::run(&global, a),
        }
    })
}

/// Writes command output to stdout. A closed pipe (`| head`) ends the process
/// quietly, as Unix tools do.
pub fn out(text: &str) -> CliResult {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|_| stdout.flush())
    {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        Err(e) => Err(CliError::runtime(format!("cannot write output: {e}"))),
    }
}
