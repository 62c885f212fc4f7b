//! `coverage`: per recorded stream, the time it covers, its gaps and whether
//! it is complete (docs/output.md); drawn by [`crate::render::coverage`].

use super::answer::StrictArg;
use super::args::{GlobalArgs, TimeArg};
use super::reader::select_cluster;
use crate::error::{CliError, CliResult};
use crate::journal::Journal;
use crate::journal::read::Coverage;
use crate::render::Format;
use crate::render::coverage::{AuditOut, render_rows, rows};
use crate::time::Millis;
use clap::Args;

/// Show, per recorded stream, the time it covers, its gaps and whether it is complete
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  kubectl krply coverage\n  kubectl krply coverage -n shop --since 2h\n  kubectl krply coverage -o wide\n  kubectl krply coverage -o json\n  kubectl krply coverage -A --strict   # exit 3 if any stream has a hole\n\nBy default each stream is a time bar across the window (the terminal's width, else\n$COLUMNS, else 80): covered time drawn, gaps in their own glyph, time before the first\nbaseline and after the last durable point blank; then every gap, in words. Unicode and\ncolour on a terminal, plain ASCII otherwise or under NO_COLOR. -o wide: the full table."
)]
pub struct CoverageArgs {
    /// Start of the drawn window: a duration ago (2h), a time of day (14:02), an
    /// RFC 3339 time or a saved snapshot [default: the first baseline shown]
    #[arg(long, value_name = "TIME")]
    pub since: Option<TimeArg>,
    /// End of the drawn window (same forms)
    #[arg(long, default_value = "now", value_name = "TIME")]
    pub until: TimeArg,
    #[command(flatten)]
    pub strict: StrictArg,
}

pub fn run(global: &GlobalArgs, args: CoverageArgs) -> CliResult {
    let format = global.format(
        Format::Table,
        &[Format::Table, Format::Wide, Format::Json, Format::Yaml],
    )?;
    let path = global.store_path()?;
    let journal = Journal::open(&path)?;
    let cluster = select_cluster(&journal, global)?;
    let namespace = global
        .namespace
        .as_deref()
        .filter(|_| !global.all_namespaces);
    let rows = rows(&journal, &cluster.id, namespace)?;
    let audit = AuditOut::of(&journal, &cluster.id)?;
    let now = Millis::now();
    let at = |t: &TimeArg| t.at(now, &journal, Some(&cluster.id));
    let until = at(&args.until)?.as_ms();
    let since = match &args.since {
        Some(s) => at(s)?.as_ms(),
        None => rows
            .iter()
            .filter_map(|c| c.from)
            .min()
            .unwrap_or(until - 3_600_000),
    };
    if since >= until {
        return Err(CliError::usage("--since must be before --until"));
    }
    let window = (since, until);
    super::out(&render_rows(&rows, audit, format, global.paint(), window))?;
    strict(&rows, args.strict.strict)
}

/// What keeps `c` from being complete, in a line: its gaps (each with its
/// reason), its unavailability, or its missing baseline.
fn why_incomplete(c: &Coverage) -> String {
    let name = c.stream.name();
    let at = |ms: i64| Millis::from_ms(ms).to_string();
    let mut why: Vec<String> = c
        .windows
        .iter()
        .map(|w| match w.to {
            Some(to) => format!("gap {}..{} ({})", at(w.from), at(to), w.reason),
            None => format!("gap from {}, not yet restored ({})", at(w.from), w.reason),
        })
        .collect();
    if let Some((since, reason)) = &c.unavailable {
        why.push(format!("unavailable since {}: {reason}", at(*since)));
    }
    if c.from.is_none() {
        why.push("never listed, so no baseline".into());
    }
    format!("{name}: {}", why.join("; "))
}

/// With `--strict`: exit 3 unless every stream in scope is complete (a
/// baseline, no gap, available), and there is at least one.
/// The same verdict is reported to an `mcp` tool call, with one warning per
/// incomplete stream.
fn strict(rows: &[Coverage], strict: bool) -> CliResult {
    let incomplete: Vec<&Coverage> = rows.iter().filter(|c| !c.complete()).collect();
    let message = if rows.is_empty() {
        "coverage is incomplete: no stream in scope was ever recorded".to_string()
    } else {
        format!(
            "coverage is incomplete: {} of {} stream(s) have a gap, no baseline, or are unavailable",
            incomplete.len(),
            rows.len()
        )
    };
    let complete = incomplete.is_empty() && !rows.is_empty();
    let mut warnings: Vec<String> = incomplete.iter().map(|c| why_incomplete(c)).collect();
    if rows.is_empty() {
        warnings.push(message.clone());
    }
    super::sink::report(complete, warnings);
    if !strict || complete {
        return Ok(());
    }
    Err(CliError::incomplete(message)
        .hint("the gaps under the bars (the COVERAGE column of -o wide, gap_windows in -o json) say what is missing"))
}
