//! `browse`: the journal in a full-screen terminal browser (docs/browse.md).

use super::args::{GlobalArgs, TimeArg};
use super::reader::Reader;
use crate::browse::app::{App, Window};
use crate::browse::{BrowseError, Session};
use crate::error::{CliError, CliResult};
use crate::time::Millis;
use clap::Args;
use std::io::IsTerminal;

/// Browse what was recorded in a terminal UI: streams and their coverage, changed objects, timelines, diffs
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  kubectl krply browse                  # the current namespace, the last hour
  kubectl krply browse -A --since 6h
  kubectl krply browse -n shop --since 14:00 --until 15:00

Keys: j/k or arrows move, Enter opens (object -> timeline -> diff), y shows the
object as YAML at that time, Esc goes back, / filters, ] and [ jump to the next
and previous gap, + and - widen and narrow the window, c copies the command that
prints the current view, ? shows every key, q quits.

Read-only: it never writes to the journal, and it refreshes while a recorder
writes. It needs a terminal; for text use log, diff or timeline.")]
pub struct BrowseArgs {
    /// Start of the window: a duration ago (30m, 2h, 1d), a time of day (14:02), an RFC 3339 time or a saved snapshot
    #[arg(long, default_value = "1h", value_name = "TIME")]
    pub since: TimeArg,
    /// End of the window (same forms); `now` keeps it moving with the clock
    #[arg(long, default_value = "now", value_name = "TIME")]
    pub until: TimeArg,
}

pub fn run(global: &GlobalArgs, args: BrowseArgs) -> CliResult {
    let now = Millis::now();
    let reader = Reader::open(global)?;
    let window = super::answer::window(&reader, &args.since, &args.until, now)?;
    {
        let history = reader.history()?;
        let scope = crate::history::Scope {
            namespace: reader.namespace.clone(),
            types: None,
        };
        if history.streams_for(&scope).is_empty() {
            let wher = match &reader.namespace {
                Some(ns) => format!("namespace \"{ns}\""),
                None => "any namespace".into(),
            };
            return Err(CliError::runtime(format!(
                "nothing recorded in {wher} of cluster {}",
                reader.cluster.id
            ))
            .hint("`kubectl krply coverage -A` shows what is recorded; -n picks the namespace"));
        }
    }
    if !std::io::stdout().is_terminal() {
        return Err(
            CliError::runtime("browse needs a terminal, and stdout is not one")
                .hint("for text, use `kubectl krply log`, `diff` or `timeline`"),
        );
    }
    let Reader {
        journal,
        cluster,
        namespace,
    } = reader;
    let mut app = App::new(
        cluster.id.clone(),
        namespace.clone(),
        Window {
            since: window.since().as_ms(),
            until: window.until().as_ms(),
            live: args.until.as_str() == "now",
        },
    );
    app.color = global.paint().enabled;
    app.common_flags = common_flags(global, &journal);
    let mut session = Session::new(journal, cluster.id, namespace);
    session.load(&mut app)?;
    crate::browse::run(session, app).map_err(|e| match e {
        BrowseError::History(e) => e.into(),
        BrowseError::Terminal(e) => {
            CliError::runtime(format!("the terminal failed: {e}")).caused_by(e)
        }
    })
}

/// The flags the copied commands need to read the same journal and cluster.
fn common_flags(global: &GlobalArgs, journal: &crate::journal::Journal) -> String {
    let mut out = Vec::new();
    if let Some(k) = &global.connection.kubeconfig {
        out.push(format!("--kubeconfig {}", k.display()));
    }
    if let Some(c) = &global.connection.context {
        out.push(format!("--context {c}"));
    }
    if crate::journal::default_path().as_deref() != Some(journal.path()) {
        out.push(format!("--store {}", journal.path().display()));
    }
    if let Some(id) = &global.cluster_id {
        out.push(format!("--cluster-id {id}"));
    }
    out.join(" ")
}
