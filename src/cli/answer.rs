//! What every history command shares: time flags, `--strict`, resource
//! arguments turned into a scope, and how completeness is reported (warnings on
//! stderr in text modes, `complete`/`warnings` in JSON, exit 3 with `--strict`).

use super::reader::Reader;
use crate::error::{CliError, CliResult};
use crate::history::complete::Completeness;
use crate::history::diff::NameFilter;
use crate::history::resolve::Target;
use crate::history::{History, Scope};
use crate::render::Paint;
use crate::time::{Millis, TimeWindow, parse_time_expr};
use clap::Args;

/// `--strict`.
#[derive(Debug, Clone, Args)]
pub struct StrictArg {
    /// Exit 3 when the answer is incomplete (gaps, unavailable streams, time nobody watched)
    #[arg(long)]
    pub strict: bool,
}

/// Parses a time flag, naming the flag in the error.
pub fn time_flag(flag: &str, value: &str, now: Millis) -> CliResult<Millis> {
    parse_time_expr(value, now).map_err(|e| CliError::usage(format!("invalid {flag}: {e}")))
}

/// `--since`/`--until` as a checked window.
pub fn window(since: &str, until: &str, now: Millis) -> CliResult<TimeWindow> {
    let since = time_flag("--since", since, now)?;
    let until = time_flag("--until", until, now)?;
    TimeWindow::new(since, until).map_err(|e| CliError::usage(e.to_string()))
}

/// Resource arguments (`TYPE` or `TYPE/NAME`) as a scope and a name filter.
pub fn scope(
    reader: &Reader,
    history: &History<'_>,
    args: &[String],
) -> CliResult<(Scope, NameFilter)> {
    let mut types = Vec::new();
    let mut names = NameFilter::default();
    for arg in args {
        let target = history
            .target(arg)
            .map_err(|e| CliError::usage(e.to_string()))?;
        let t = target.resource().clone();
        let key = (t.group.clone(), t.resource.clone());
        match &target {
            Target::Object(_, name) => names.objects.push((key.0, key.1, name.clone())),
            Target::Type(_) => names.whole_types.push(key),
        }
        if !types.contains(&t) {
            types.push(t);
        }
    }
    Ok((
        Scope {
            namespace: reader.namespace.clone(),
            types: (!types.is_empty()).then_some(types),
        },
        names,
    ))
}

/// Says on stderr what an answer lacks (text modes).
pub fn warn(completeness: &Completeness, paint: Paint) {
    eprint!("{}", warning_text(completeness, paint));
}

/// What an answer lacks, as lines for people (empty when complete).
pub fn warning_text(completeness: &Completeness, paint: Paint) -> String {
    if completeness.complete() {
        return String::new();
    }
    let mut out = format!(
        "{} this answer is incomplete; the journal does not cover:\n",
        paint.yellow("warning:")
    );
    for w in completeness.summary() {
        out.push_str(&format!("  {w}\n"));
    }
    out
}

/// With `--strict`, an incomplete answer ends in exit 3 (after it was printed).
pub fn strict(completeness: &Completeness, strict: bool) -> CliResult {
    if strict && !completeness.complete() {
        return Err(CliError::incomplete(format!(
            "the answer is incomplete ({} stretch(es) not covered)",
            completeness.missing.len()
        ))
        .hint("drop --strict to accept a partial answer, or narrow the question"));
    }
    Ok(())
}
