//! The command line: clap definitions and dispatch. Each subcommand lives in its
//! own module and only wires library pieces together.

pub mod answer;
pub mod args;
pub mod audit;
pub mod browse;
pub mod completion;
pub mod coverage;
#[cfg(feature = "demo")]
pub mod demo;
pub mod diff;
pub mod export;
pub mod get;
pub mod import;
pub mod log;
pub mod mcp;
pub mod object_arg;
pub mod prune;
pub mod reader;
pub mod record;
pub mod replay;
pub mod sink;
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

/// [`Cli`] without its subcommands: the root of the tree [`command_for`]
/// builds when the command line names one. Its settings are `Cli`'s
/// (`the_tree_of_one_parses_as_the_whole_tree`).
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
struct Root {
    #[command(flatten)]
    global: GlobalArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    Record(record::RecordArgs),
    Status(status::StatusArgs),
    Coverage(coverage::CoverageArgs),
    Diff(diff::DiffArgs),
    Timeline(timeline::TimelineArgs),
    Log(log::LogArgs),
    Browse(browse::BrowseArgs),
    #[command(alias = "reconstruct")]
    Get(get::GetArgs),
    Snapshot(snapshot::SnapshotArgs),
    Export(export::ExportArgs),
    Import(import::ImportArgs),
    Prune(prune::PruneArgs),
    Audit(audit::AuditArgs),
    Replay(replay::ReplayArgs),
    Mcp(mcp::McpArgs),
    #[cfg(feature = "demo")]
    Demo(demo::DemoArgs),
    Version(version::VersionArgs),
    Completion(completion::CompletionArgs),
}

/// Runs the command line and returns the process exit code.
pub fn main() -> ExitCode {
    if let Some(code) = completion::answer_kubectl() {
        return code;
    }
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let matches = match command_for(args.get(1..).unwrap_or_default()).try_get_matches_from(&args) {
        Ok(m) => m,
        Err(e) => return clap_error(e),
    };
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => return clap_error(e),
    };
    let verbose = cli.global.verbose > 0;
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            e.print(verbose);
            e.exit_code()
        }
    }
}

/// The command tree to parse `args` (the words after the program's name)
/// with. When they name one of the subcommands, the tree holds only that one.
///
/// clap copies each global argument into every subcommand of the tree as it
/// starts to parse: 20 arguments into 18 subcommands, with their help texts,
/// about 70 pages of fresh memory for a `status` that touches 500 in all
/// (docs/journal.md, "Where the time of an answer goes"). A tree of one
/// parses the same words into the same [`Cli`], with the same errors and the
/// same help for that subcommand. Words that name none (a typo, `help`,
/// `--help` first, nothing) get the whole tree, with its suggestions.
pub(crate) fn command_for(args: &[std::ffi::OsString]) -> clap::Command {
    let root = Root::command();
    let Some(name) = named_subcommand(&root, args) else {
        return Cli::command();
    };
    match one_subcommand(name) {
        Some(sub) => root
            .subcommand(sub)
            .subcommand_required(true)
            .arg_required_else_help(true),
        None => Cli::command(),
    }
}

/// The subcommand called `name` (or one of its aliases) as [`Command`]'s
/// derive builds it, without building all the others: their arguments and
/// help texts were a tenth of `status`'s time (docs/journal.md, "Where the
/// time of an answer goes"). `one_subcommand_is_the_whole_trees` holds
/// each to the derive's.
fn one_subcommand(name: &str) -> Option<clap::Command> {
    use clap::Args;
    let sub = |name: &'static str, augment: fn(clap::Command) -> clap::Command| {
        Some(augment(clap::Command::new(name)))
    };
    match name {
        "record" => sub("record", record::RecordArgs::augment_args),
        "status" => sub("status", status::StatusArgs::augment_args),
        "coverage" => sub("coverage", coverage::CoverageArgs::augment_args),
        "diff" => sub("diff", diff::DiffArgs::augment_args),
        "timeline" => sub("timeline", timeline::TimelineArgs::augment_args),
        "log" => sub("log", log::LogArgs::augment_args),
        "browse" => sub("browse", browse::BrowseArgs::augment_args),
        "get" | "reconstruct" => {
            sub("get", get::GetArgs::augment_args).map(|c| c.alias("reconstruct"))
        }
        "snapshot" => sub("snapshot", snapshot::SnapshotArgs::augment_args),
        "export" => sub("export", export::ExportArgs::augment_args),
        "import" => sub("import", import::ImportArgs::augment_args),
        "prune" => sub("prune", prune::PruneArgs::augment_args),
        "audit" => sub("audit", audit::AuditArgs::augment_args),
        "replay" => sub("replay", replay::ReplayArgs::augment_args),
        "mcp" => sub("mcp", mcp::McpArgs::augment_args),
        #[cfg(feature = "demo")]
        "demo" => sub("demo", demo::DemoArgs::augment_args),
        "version" => sub("version", version::VersionArgs::augment_args),
        "completion" => sub("completion", completion::CompletionArgs::augment_args),
        _ => None,
    }
}

/// The subcommand `args` name, if any: their first word that is neither an
/// option of `root` nor an option's value. `None` at `--`, and at an option
/// `root` does not know (`--help`, a typo), whose value, if any, cannot be
/// told from a subcommand.
fn named_subcommand<'a>(root: &clap::Command, args: &'a [std::ffi::OsString]) -> Option<&'a str> {
    let takes_value = |arg: &clap::Arg| arg.get_action().takes_values();
    let mut words = args.iter();
    while let Some(word) = words.next() {
        let word = word.to_str()?;
        if word == "--" {
            return None;
        }
        if let Some(long) = word.strip_prefix("--") {
            let (long, value) = match long.split_once('=') {
                Some((long, _)) => (long, true),
                None => (long, false),
            };
            let arg = root.get_arguments().find(|a| a.get_long() == Some(long))?;
            if takes_value(arg) && !value {
                words.next();
            }
            continue;
        }
        if let Some(shorts) = word.strip_prefix('-').filter(|s| !s.is_empty()) {
            // Flags together (`-vA`), or a flag and its value (`-nshop`, `-n shop`).
            for (i, c) in shorts.char_indices() {
                let arg = root.get_arguments().find(|a| a.get_short() == Some(c))?;
                if takes_value(arg) {
                    if i + c.len_utf8() == shorts.len() {
                        words.next();
                    }
                    break;
                }
            }
            continue;
        }
        return Some(word);
    }
    None
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
            usage_error(&e).print(false);
            ExitCode::from(2)
        }
    }
}

/// A clap usage error as ours: its message, its tip and the usage line of
/// the command it is about as hints.
pub(crate) fn usage_error(e: &clap::Error) -> CliError {
    let (message, tip, usage) = usage_error_parts(&e.render().to_string());
    let mut err = CliError::usage(message);
    if let Some(tip) = tip {
        err = err.hint(tip);
    }
    let help = match usage {
        Some(usage) => format!("usage: {usage}; `--help` says more"),
        None => "see `kubectl krply --help`".to_string(),
    };
    err.hint(help)
}

/// clap's rendered usage error as one message, its tip and its usage line.
/// A message that ends with a colon continues on the lines indented below it
/// (the missing arguments, the valid values): they join the message, so that
/// it never ends with nothing after the colon.
fn usage_error_parts(rendered: &str) -> (String, Option<String>, Option<String>) {
    let lines: Vec<&str> = rendered.lines().collect();
    let first = lines.iter().position(|l| !l.trim().is_empty()).unwrap_or(0);
    let head = lines.get(first).map_or("invalid arguments", |l| l.trim());
    let mut message = head.strip_prefix("error: ").unwrap_or(head).to_string();
    let more: Vec<&str> = lines
        .get(first + 1..)
        .unwrap_or_default()
        .iter()
        .take_while(|l| l.starts_with("  "))
        .map(|l| l.trim())
        .filter(|l| message.ends_with(':') || l.starts_with('['))
        .collect();
    if !more.is_empty() {
        message = format!("{message} {}", more.join(", "));
    }
    let tip = lines
        .iter()
        .map(|l| l.trim())
        .find_map(|l| l.strip_prefix("tip: "))
        .map(str::to_string);
    let usage = lines
        .iter()
        .map(|l| l.trim())
        .find_map(|l| l.strip_prefix("Usage: "))
        .map(required_usage);
    (message, tip, usage)
}

/// The usage line of the command that `usage` (clap's, from an error) is for,
/// naming only what that command requires. clap's error usage also lists every
/// flag that was given, which reads as if `--namespace` and `--store` were
/// required; the command's own usage says `[OPTIONS]` instead.
fn required_usage(usage: &str) -> String {
    let bin = Cli::command()
        .get_bin_name()
        .unwrap_or_default()
        .to_string();
    let Some(rest) = usage.strip_prefix(bin.as_str()) else {
        return usage.to_string();
    };
    let path: Vec<&str> = rest
        .split_whitespace()
        .take_while(|w| !w.starts_with(['-', '<', '[']))
        .collect();
    let mut command = Cli::command();
    command.build();
    let mut found = &mut command;
    for name in path {
        match found.find_subcommand_mut(name) {
            Some(sub) => found = sub,
            None => return usage.to_string(),
        }
    }
    let own = found.render_usage().to_string();
    own.strip_prefix("Usage: ")
        .unwrap_or(&own)
        .trim()
        .to_string()
}

fn run(cli: Cli) -> CliResult {
    let global = cli.global;
    // `mcp`'s notes are UTC, as the JSON beside them.
    crate::render::clock::use_zone(global.utc || matches!(cli.command, Command::Mcp(_)));
    match cli.command {
        // The offline answers are synchronous: no async runtime, no thread
        // to start (docs/journal.md, "Where the time of an answer goes").
        Command::Status(a) => status::run(&global, a),
        Command::Coverage(a) => coverage::run(&global, a),
        Command::Diff(a) => diff::run(&global, a),
        Command::Timeline(a) => timeline::run(&global, a),
        Command::Log(a) => log::run(&global, a),
        Command::Browse(a) => browse::run(&global, a),
        Command::Get(a) => get::run(&global, a),
        Command::Snapshot(a) => snapshot::run(&global, a),
        Command::Export(a) => export::run(&global, a),
        Command::Import(a) => import::run(&global, a),
        Command::Prune(a) => prune::run(&global, a),
        Command::Audit(a) => audit::run(&global, a),
        Command::Version(a) => version::run(&global, a),
        Command::Completion(a) => completion::run(&global, a),
        // The recorder's async side (network, decoding) needs one thread; the
        // journal writer has its own. The demo also runs the simulator
        // in-process; replay talks to the target; mcp to its client.
        Command::Record(a) => {
            // Before any other thread runs: the option is not synchronised.
            crate::recorder::give_back_freed_memory_promptly();
            runtime(1)?.block_on(record::run(&global, a))
        }
        Command::Replay(a) => runtime(2)?.block_on(replay::run(&global, a)),
        Command::Mcp(a) => runtime(2)?.block_on(mcp::run(&global, a)),
        #[cfg(feature = "demo")]
        Command::Demo(a) => runtime(2)?.block_on(demo::run(&global, a)),
    }
}

/// A multi-threaded async runtime of `workers` threads.
fn runtime(workers: usize) -> CliResult<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .worker_threads(workers)
        .build()
        .map_err(|e| CliError::runtime(format!("cannot start the async runtime: {e}")).caused_by(e))
}

/// Writes command output to stdout. A closed pipe (`| head`) ends the command
/// quietly with exit 0, as Unix tools do, through the normal return path.
pub fn out(text: &str) -> CliResult {
    out_with(Some(text.len()), |w| w.write_all(text.as_bytes()))
}

/// Writes `value` as `-o json` or `-o yaml` asks. JSON is written as it is
/// rendered, as kubectl writes a list: an answer of thousands of objects is
/// not built whole in memory first.
pub fn out_structured<T: serde::Serialize>(format: crate::render::Format, value: &T) -> CliResult {
    if format == crate::render::Format::Json {
        out_with(None, |w| crate::render::write_json(value, w))
    } else {
        out(&crate::render::yaml(value))
    }
}

/// [`out_structured`] for an answer whose last field is a long list, made of
/// `items` each as `item` shows it: `frame` makes the answer around the list
/// it is given. JSON renders the list on several threads as it is written
/// ([`crate::render::write_json_list`]), without a list of what `item` makes
/// first; YAML is written whole.
pub fn out_structured_list<'a, S, T, F>(
    format: crate::render::Format,
    items: &'a [S],
    item: impl Fn(&'a S) -> T + Sync,
    frame: impl FnOnce(Vec<T>) -> F,
) -> CliResult
where
    S: Sync,
    T: serde::Serialize,
    F: serde::Serialize,
{
    if format == crate::render::Format::Json {
        let around = frame(Vec::new());
        out_with(None, |w| {
            crate::render::write_json_list(&around, items, &item, w)
        })
    } else {
        out(&crate::render::yaml(&frame(
            items.iter().map(item).collect(),
        )))
    }
}

/// Frees a large answer on a thread of its own: a command that ends does
/// not wait for it (on W-wide, freeing a `diff`'s 15,526 objects took 10 ms),
/// and a server that goes on (`mcp`) still gets the memory back.
pub fn free_later<T: Send + 'static>(value: T) {
    if std::thread::Builder::new()
        .name("krply-free".into())
        .spawn(move || drop(value))
        .is_err()
    {
        // No thread to be had: it is freed here, as it would have been.
    }
}

/// How much a pipe to the answer's reader holds ([`widen_pipe`]).
#[cfg(target_os = "linux")]
const PIPE_BYTES: usize = 1 << 20;

/// Whether an answer of `len` bytes (`None`: not known before it is
/// written) is worth widening the pipe for: one that fits in a pipe as it is
/// (Linux's 64 KiB) is written in one go, and `status` then pays no calls.
fn worth_widening(len: Option<usize>) -> bool {
    len.is_none_or(|len| len > 1 << 16)
}

/// Lets a pipe to the answer's reader (`| jq`, a script's capture) hold 1 MiB
/// rather than Linux's 64 KiB: a large answer is then written in a few calls
/// that rarely wait for the reader, where 64 KiB made the writer and the
/// reader take turns at every 64 KiB (`diff -o json` on W-wide, 9.9 MB
/// read by a script: 207.6 to 196.0 ms, median of 15). Nothing is done to a
/// pipe that already holds as much, or to anything but a pipe, and a
/// refusal (the user's pipe limits) leaves the pipe as it was.
fn widen_pipe(fd: impl std::os::fd::AsFd) {
    #[cfg(target_os = "linux")]
    if rustix::pipe::fcntl_getpipe_size(&fd).is_ok_and(|size| size < PIPE_BYTES) {
        // Refused past /proc/sys/fs/pipe-max-size or the user's pipe pages:
        // the pipe stays as it was, which works as well, if slower.
        let _ = rustix::pipe::fcntl_setpipe_size(&fd, PIPE_BYTES);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = fd;
}

/// Writes command output to stdout as `write` makes it, buffered; a closed
/// pipe ends the command as for [`out`]. `len` is the output's length, when
/// known before it is written.
fn out_with(
    len: Option<usize>,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> CliResult {
    if sink::capturing() {
        let mut caught = Vec::new();
        write(&mut caught)
            .map_err(|e| CliError::runtime(format!("cannot write output: {e}")).caused_by(e))?;
        sink::output(&caught);
        return Ok(());
    }
    let stdout = std::io::stdout().lock();
    if worth_widening(len) {
        widen_pipe(&stdout);
    }
    let mut stdout = std::io::BufWriter::with_capacity(1 << 16, stdout);
    match write(&mut stdout).and_then(|_| stdout.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(CliError::closed()),
        Err(e) => Err(CliError::runtime(format!("cannot write output: {e}")).caused_by(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn a_pipe_to_the_reader_is_widened_and_nothing_else_is_touched() {
        use rustix::pipe::{fcntl_getpipe_size, fcntl_setpipe_size, pipe};
        let (_read, write) = pipe().unwrap();
        assert!(fcntl_getpipe_size(&write).unwrap() < PIPE_BYTES);
        widen_pipe(&write);
        assert_eq!(fcntl_getpipe_size(&write).unwrap(), PIPE_BYTES);
        // One already wider is left so (when this machine allows one).
        let (_read, wide) = pipe().unwrap();
        if fcntl_setpipe_size(&wide, 2 * PIPE_BYTES).is_ok() {
            widen_pipe(&wide);
            assert_eq!(fcntl_getpipe_size(&wide).unwrap(), 2 * PIPE_BYTES);
        }
        // A file is not a pipe: nothing happens, and nothing fails.
        let file = tempfile::tempfile().unwrap();
        widen_pipe(&file);
        assert!(fcntl_getpipe_size(&file).is_err());
    }

    #[test]
    fn only_an_answer_larger_than_a_pipe_or_of_unknown_length_widens_it() {
        assert!(!worth_widening(Some(0)));
        assert!(!worth_widening(Some(1 << 16)));
        assert!(worth_widening(Some((1 << 16) + 1)));
        assert!(worth_widening(None));
    }

    fn parts(args: &[&str]) -> (String, Option<String>, Option<String>) {
        let e = Cli::command()
            .try_get_matches_from(args)
            .expect_err("a usage error");
        usage_error_parts(&e.render().to_string())
    }

    fn words(args: &[&str]) -> Vec<std::ffi::OsString> {
        args.iter().map(std::ffi::OsString::from).collect()
    }

    #[test]
    fn the_subcommand_named_is_the_first_word_no_option_takes() {
        let root = Root::command();
        let named = |args: &[&str]| named_subcommand(&root, &words(args)).map(str::to_string);
        let said = |name: &str| Some(name.to_string());
        assert_eq!(named(&["status"]), said("status"));
        assert_eq!(
            named(&["-n", "shop", "diff", "--since", "1h"]),
            said("diff")
        );
        assert_eq!(named(&["-nshop", "log"]), said("log"));
        assert_eq!(named(&["-n=shop", "log"]), said("log"));
        assert_eq!(named(&["-vA", "timeline"]), said("timeline"));
        assert_eq!(named(&["--store=/j.db", "get"]), said("get"));
        assert_eq!(named(&["--context", "diff", "log"]), said("log"));
        assert_eq!(named(&["-o", "json", "reconstruct"]), said("reconstruct"));
        // A value, not a subcommand.
        assert_eq!(named(&["-n", "status"]), None);
        assert_eq!(named(&["--store", "status"]), None);
        // Not to be told: the whole tree answers.
        for args in [
            &[][..],
            &["--help", "status"],
            &["-h", "status"],
            &["--", "status"],
            &["--no-such-flag", "status"],
            &["-Z", "status"],
        ] {
            assert_eq!(named(args), None, "{args:?}");
        }
    }

    /// What clap makes of `args` under `tree`: the parsed command line, or its
    /// error, rendered.
    fn outcome(tree: clap::Command, args: &[String]) -> String {
        let argv = std::iter::once("kubectl-krply").chain(args.iter().map(String::as_str));
        match tree.try_get_matches_from(argv) {
            Ok(m) => format!("{:?}", Cli::from_arg_matches(&m).map(|c| format!("{c:?}"))),
            Err(e) => format!("{:?}: {}", e.kind(), e.render()),
        }
    }

    #[test]
    fn words_that_name_no_subcommand_get_the_whole_tree() {
        let subcommands = Cli::command().get_subcommands().count();
        for args in [
            &[][..],
            &["stauts"],
            &["help", "status"],
            &["--help", "status"],
            &["-n", "status"],
        ] {
            assert_eq!(
                command_for(&words(args)).get_subcommands().count(),
                subcommands,
                "{args:?}"
            );
        }
    }

    #[test]
    fn the_tree_of_one_parses_as_the_whole_tree() {
        let (whole, of_one) = (Cli::command(), Root::command());
        assert_eq!(of_one.get_name(), whole.get_name());
        assert_eq!(of_one.get_bin_name(), whole.get_bin_name());
        assert_eq!(
            of_one.get_about().map(|s| s.to_string()),
            whole.get_about().map(|s| s.to_string())
        );
        assert_eq!(
            of_one.get_long_about().map(|s| s.to_string()),
            whole.get_long_about().map(|s| s.to_string())
        );
        assert_eq!(
            of_one.get_after_help().map(|s| s.to_string()),
            whole.get_after_help().map(|s| s.to_string())
        );
        assert_eq!(
            of_one.is_disable_version_flag_set(),
            whole.is_disable_version_flag_set()
        );
        assert_eq!(
            of_one.is_propagate_version_set(),
            whole.is_propagate_version_set()
        );
        let mut lines: Vec<Vec<String>> = vec![];
        for sub in whole.get_subcommands() {
            let nested: Vec<&str> = sub.get_subcommands().map(|s| s.get_name()).collect();
            for name in std::iter::once(sub.get_name()).chain(sub.get_all_aliases()) {
                let mut add = |args: &[&str]| {
                    lines.push(args.iter().map(|a| a.replace("{}", name)).collect());
                };
                add(&["{}"]);
                add(&["{}", "--help"]);
                add(&["{}", "-h"]);
                add(&["{}", "--bogus"]);
                add(&["{}", "--color", "blue"]);
                add(&["{}", "deploy/frontend", "--since", "30m"]);
                add(&["-n", "shop", "{}", "--store", "/tmp/j.db", "-o", "json"]);
                add(&["--store=/tmp/j.db", "-vq", "{}", "-A", "--utc"]);
                add(&["{}", "help"]);
                for inner in &nested {
                    for tail in [&[][..], &["--help"], &["--bogus"], &["--at", "2h"]] {
                        let mut args = vec!["{}", inner];
                        args.extend_from_slice(tail);
                        add(&args);
                    }
                }
            }
        }
        assert!(lines.len() > 150, "{}", lines.len());
        for args in &lines {
            let os: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
            let tree = command_for(&os);
            assert_eq!(tree.get_subcommands().count(), 1, "{args:?}");
            assert_eq!(
                outcome(tree, args),
                outcome(Cli::command(), args),
                "{args:?}"
            );
        }
    }

    #[test]
    fn one_subcommand_is_the_whole_trees() {
        let whole = Cli::command();
        let mut seen = 0;
        for sub in whole.get_subcommands() {
            for name in std::iter::once(sub.get_name()).chain(sub.get_all_aliases()) {
                let one = one_subcommand(name).unwrap_or_else(|| panic!("{name}"));
                // The place in the root's list of subcommands is the root's to give.
                let (one, sub) = (one.display_order(0), sub.clone().display_order(0));
                assert_eq!(format!("{one:?}"), format!("{sub:?}"), "{name}");
                seen += 1;
            }
        }
        assert_eq!(seen, whole.get_subcommands().count() + 1, "one alias");
        assert!(one_subcommand("nope").is_none());
        assert!(one_subcommand("help").is_none());
    }

    #[test]
    fn a_usage_error_names_what_is_missing_or_allowed() {
        let (message, _, usage) = parts(&["kubectl-krply", "timeline"]);
        assert_eq!(
            message,
            "the following required arguments were not provided: <TYPE/NAME>"
        );
        assert!(usage.unwrap().starts_with("kubectl krply timeline"));
        // Flags that were given are not presented as required.
        let (_, _, usage) = parts(&["kubectl-krply", "timeline", "-n", "shop", "--store", "j.db"]);
        assert_eq!(
            usage.as_deref(),
            Some("kubectl krply timeline [OPTIONS] <TYPE/NAME>")
        );
        let (_, _, usage) = parts(&["kubectl-krply", "replay", "plan", "-n", "shop"]);
        let usage = usage.unwrap();
        assert!(
            usage.starts_with("kubectl krply replay plan") && !usage.contains("--namespace"),
            "{usage}"
        );
        let (message, _, _) = parts(&["kubectl-krply", "get"]);
        assert!(message.ends_with("<TYPE[/NAME]>"), "{message}");
        let (message, _, _) = parts(&["kubectl-krply", "replay", "plan"]);
        assert!(message.ends_with("--to-namespace <NS>"), "{message}");
        let (message, _, _) = parts(&["kubectl-krply", "diff", "--color", "blue"]);
        assert_eq!(
            message,
            "invalid value 'blue' for '--color <WHEN>' [possible values: auto, always, never]"
        );
    }
}
