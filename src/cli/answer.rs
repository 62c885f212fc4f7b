//! What every history command shares: time flags, `--strict`, resource
//! arguments turned into a scope, and how completeness is reported (warnings on
//! stderr in text modes, `complete`/`warnings` in JSON, exit 3 with `--strict`).

use super::args::TimeArg;
use super::reader::Reader;
use crate::error::{CliError, CliResult};
use crate::history::complete::Completeness;
use crate::history::diff::NameFilter;
use crate::history::resolve::Target;
use crate::history::{History, Scope};
use crate::render::Paint;
use crate::time::{Millis, TimeWindow};
use clap::Args;

/// `--strict`.
#[derive(Debug, Clone, Args)]
pub struct StrictArg {
    /// Exit 3 when the answer is incomplete (gaps, unavailable streams, time nobody watched)
    #[arg(long)]
    pub strict: bool,
}

/// What `diff` and `log` ask about: some objects, over a window.
#[derive(Debug, Clone, Args)]
pub struct WindowArgs {
    /// Narrow to resource types or objects: TYPE or TYPE/NAME (deploy, cm/frontend-config)
    #[arg(value_name = "TYPE[/NAME]")]
    pub targets: Vec<String>,
    /// Start of the window: now, a duration ago (30m, 2h, 1d), a time of day (14:02), an RFC 3339 time or a saved snapshot
    #[arg(long, default_value = "1h", value_name = "TIME")]
    pub since: TimeArg,
    /// End of the window (same forms)
    #[arg(long, default_value = "now", value_name = "TIME")]
    pub until: TimeArg,
    /// Also show changes of the status
    #[arg(long)]
    pub include_status: bool,
    /// Only changes made by this user (with `kubectl --as`, the impersonated
    /// user), as imported audit logs tell (`kubectl krply audit import`)
    #[arg(long, value_name = "USER")]
    pub by: Option<String>,
}

/// `--by USER` needs audit logs: without them no change has a known actor.
pub fn check_by(by: &Option<String>, history: &History<'_>) -> CliResult {
    if by.is_some() && !history.has_audit() {
        return Err(crate::error::CliError::runtime(
            "--by needs audit logs: no audit log of this cluster was imported, so no change has a known actor",
        )
        .hint("import the API server's audit log with `kubectl krply audit import FILE` (docs/audit.md)"));
    }
    Ok(())
}

/// `--since`/`--until` as a checked window at `now`.
/// The window `--since`/`--until` name, either of which may be a saved snapshot.
pub fn window(
    reader: &Reader,
    since: &TimeArg,
    until: &TimeArg,
    now: Millis,
) -> CliResult<TimeWindow> {
    let at = |t: &TimeArg| t.at(now, &reader.journal, Some(&reader.cluster.id));
    Ok(TimeWindow::new(at(since)?, at(until)?)?)
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
        let target = history.target(arg)?;
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

/// The fields every answer about a window starts with, in JSON and YAML
/// (docs/output.md): which cluster and namespace, the window, and whether the answer
/// is complete.
#[derive(serde::Serialize)]
pub struct WindowHead<'a> {
    cluster: &'a str,
    namespace: Option<&'a str>,
    since: String,
    until: String,
    complete: bool,
    warnings: Vec<String>,
}

impl<'a> WindowHead<'a> {
    pub fn new(reader: &'a Reader, window: &TimeWindow, completeness: &Completeness) -> Self {
        WindowHead {
            cluster: &reader.cluster.id,
            namespace: reader.namespace.as_deref(),
            since: window.since().to_string(),
            until: window.until().to_string(),
            complete: completeness.complete(),
            warnings: completeness.warnings(),
        }
    }
}

/// Says on stderr what an answer lacks (text modes). Under `mcp` the tool
/// result carries it instead.
pub fn warn(completeness: &Completeness, paint: Paint) {
    if !super::sink::capturing() {
        eprint!("{}", crate::render::warnings::text(completeness, paint));
    }
}

/// With `--strict`, an incomplete answer ends in exit 3 (after it was printed).
/// Every history command ends here, which is where its completeness is
/// reported to an `mcp` tool call ([`super::sink::report`]).
pub fn strict(completeness: &Completeness, strict: bool) -> CliResult {
    super::sink::report(completeness.complete(), completeness.warnings());
    if strict && !completeness.complete() {
        return Err(CliError::incomplete(format!(
            "the answer is incomplete ({} stretch(es) not covered)",
            completeness.missing.len()
        ))
        .hint("drop --strict to accept a partial answer, or narrow the question"));
    }
    Ok(())
}
