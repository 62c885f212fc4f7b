//! `coverage`: one row per stream, saying what the journal covers and what is
//! missing.

use super::answer::StrictArg;
use super::args::GlobalArgs;
use super::reader::select_cluster;
use crate::error::{CliError, CliResult};
use crate::journal::Journal;
use crate::journal::read::{Coverage, GapWindow};
use crate::render::{self, Format};
use crate::time::Millis;
use clap::Args;
use serde::Serialize;

/// Show, per recorded stream, the time it covers, its gaps and whether it is complete
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  kubectl krply coverage\n  kubectl krply coverage -n shop\n  kubectl krply coverage -o json\n  kubectl krply coverage -A --strict   # exit 3 if any stream has a hole"
)]
pub struct CoverageArgs {
    #[command(flatten)]
    pub strict: StrictArg,
}

#[derive(Serialize)]
struct WindowOut {
    from: String,
    to: Option<String>,
    from_resource_version: Option<String>,
    to_resource_version: Option<String>,
    reason: String,
}

#[derive(Serialize)]
struct StreamOut {
    id: String,
    cluster: String,
    group: String,
    version: String,
    resource: String,
    kind: String,
    namespace: Option<String>,
    selector: Option<String>,
    state: String,
    last_resource_version: Option<String>,
    events: u64,
    gaps: u64,
    complete: bool,
    from: Option<String>,
    to: Option<String>,
    gap_windows: Vec<WindowOut>,
    /// Why the stream is unavailable now, when it is.
    unavailable: Option<String>,
}

#[derive(Serialize)]
struct CoverageOut {
    streams: Vec<StreamOut>,
    /// The time imported audit logs cover (docs/audit.md): who made a change
    /// outside it is unknown for that reason. Left out when none was imported.
    #[serde(skip_serializing_if = "AuditOut::is_empty")]
    audit: AuditOut,
}

#[derive(Serialize)]
pub(super) struct AuditOut {
    pub covered: Vec<SpanOut>,
}

#[derive(Serialize)]
pub(super) struct SpanOut {
    pub from: String,
    pub to: String,
}

impl AuditOut {
    pub fn is_empty(&self) -> bool {
        self.covered.is_empty()
    }

    pub fn of(journal: &Journal, cluster: &str) -> CliResult<AuditOut> {
        Ok(AuditOut {
            covered: crate::audit::join::merge(&journal.audit_coverage(cluster)?)
                .into_iter()
                .map(|(f, t)| SpanOut {
                    from: time(f),
                    to: time(t),
                })
                .collect(),
        })
    }

    /// `Audit logs cover: T1 to T2, ...`, or nothing when none was imported.
    pub fn line(&self) -> String {
        if self.covered.is_empty() {
            return String::new();
        }
        let spans: Vec<String> = self
            .covered
            .iter()
            .map(|s| format!("{} to {}", s.from, s.to))
            .collect();
        format!("Audit logs cover: {}\n", spans.join(", "))
    }
}

fn time(t: i64) -> String {
    Millis::from_ms(t).to_string()
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
    super::out(&render_rows(&rows, audit, format, global.paint()))?;
    strict(&rows, args.strict.strict)
}

/// With `--strict`: exit 3 unless every stream in scope is complete (a
/// baseline, no gap, available), and there is at least one.
fn strict(rows: &[Coverage], strict: bool) -> CliResult {
    let incomplete = rows.iter().filter(|c| !c.complete()).count();
    if !strict || (incomplete == 0 && !rows.is_empty()) {
        return Ok(());
    }
    let message = if rows.is_empty() {
        "coverage is incomplete: no stream in scope was ever recorded".to_string()
    } else {
        format!(
            "coverage is incomplete: {incomplete} of {} stream(s) have a gap, no baseline, or are unavailable",
            rows.len()
        )
    };
    Err(CliError::incomplete(message)
        .hint("the COVERAGE column (or gap_windows in -o json) says what is missing"))
}

/// The coverage of every stream of `cluster` (that covers `namespace`, when
/// given).
fn rows(journal: &Journal, cluster: &str, namespace: Option<&str>) -> CliResult<Vec<Coverage>> {
    let live = crate::journal::lock::live_streams(journal.path());
    let now = Millis::now().as_ms();
    let mut rows = Vec::new();
    for stream in journal.streams(Some(cluster))? {
        if let Some(ns) = namespace
            && stream.resource.namespaced
            && stream.namespace.as_deref().is_some_and(|s| s != ns)
        {
            continue;
        }
        let running = live.contains(&stream.id);
        rows.push(journal.coverage(&stream, now, running)?);
    }
    Ok(rows)
}

fn render_rows(rows: &[Coverage], audit: AuditOut, format: Format, paint: render::Paint) -> String {
    let audit_line = audit.line();
    let out = CoverageOut {
        streams: rows.iter().map(stream_out).collect(),
        audit,
    };
    match format {
        Format::Json => render::json(&out),
        Format::Yaml => render::yaml(&out),
        _ if rows.is_empty() => "No streams recorded.\n".to_string(),
        Format::Wide => table(rows, paint) + &audit_line,
        _ => narrow_table(rows, paint) + &audit_line,
    }
}

/// The coverage of every stream of `cluster` (that covers `namespace`, when
/// given), rendered in `format`.
pub fn report(
    journal: &Journal,
    cluster: &str,
    namespace: Option<&str>,
    format: Format,
    paint: render::Paint,
) -> CliResult<String> {
    Ok(render_rows(
        &rows(journal, cluster, namespace)?,
        AuditOut::of(journal, cluster)?,
        format,
        paint,
    ))
}

fn stream_out(c: &Coverage) -> StreamOut {
    let r = &c.stream.resource;
    StreamOut {
        id: c.stream.name(),
        cluster: c.stream.cluster.clone(),
        group: r.group.clone(),
        version: r.version.clone(),
        resource: r.resource.clone(),
        kind: r.kind.clone(),
        namespace: c.stream.namespace.clone(),
        selector: c.stream.selector.clone(),
        state: c.state.as_str().to_string(),
        last_resource_version: c.last_rv.clone(),
        events: c.events,
        gaps: c.gaps,
        complete: c.complete(),
        from: c.from.map(time),
        to: c.to.map(time),
        gap_windows: c
            .windows
            .iter()
            .map(|w| WindowOut {
                from: time(w.from),
                to: w.to.map(time),
                from_resource_version: w.from_rv.clone(),
                to_resource_version: w.to_rv.clone(),
                reason: w.reason.clone(),
            })
            .collect(),
        unavailable: c.unavailable.as_ref().map(|(_, r)| r.clone()),
    }
}

/// What the COVERAGE column says: `OK`, or what is missing.
pub fn describe(c: &Coverage) -> String {
    describe_with(c, true)
}

/// [`describe`], with times of day without their `Z` when `zone` is false
/// (a table that says once that its times are UTC).
fn describe_with(c: &Coverage, zone: bool) -> String {
    let short_time = |c: &Coverage, t: i64| {
        let s = short_time(c, t);
        if zone {
            s
        } else {
            s.trim_end_matches('Z').to_string()
        }
    };
    if let Some((since, reason)) = &c.unavailable {
        return format!("unavailable since {} ({reason})", short_time(c, *since));
    }
    if c.from.is_none() {
        return "no baseline yet".into();
    }
    if c.complete() {
        return "OK".into();
    }
    let one = |w: &GapWindow| {
        let reason = w.reason.split(": ").next().unwrap_or(&w.reason);
        match w.to {
            Some(to) => format!(
                "gap {}..{} ({reason})",
                short_time(c, w.from),
                short_time(c, to)
            ),
            None => format!("gap since {} ({reason})", short_time(c, w.from)),
        }
    };
    match c.windows.as_slice() {
        [] => "incomplete".into(),
        [w] => one(w),
        [.., last] => format!("{} gaps, last {}", c.windows.len(), one(last)),
    }
}

/// A time inside a table row: only the time of day when the row's FROM column
/// already shows the date.
fn short_time(c: &Coverage, t: i64) -> String {
    let full = time(t);
    match c.from.map(time) {
        Some(from) if from.get(..11) == full.get(..11) => full[11..].to_string(),
        _ => full,
    }
}

/// The default table, within 120 columns at the demo's scale: the stream
/// name already says its resource and namespace, and when every time shown
/// falls on one day, the day is said once above the table.
fn narrow_table(rows: &[Coverage], paint: render::Paint) -> String {
    let times = rows
        .iter()
        .flat_map(|c| [c.from, c.to].into_iter().flatten());
    let days: std::collections::BTreeSet<String> =
        times.map(|t| time(t)[..10].to_string()).collect();
    let one_day = (days.len() == 1).then(|| days.into_iter().next().unwrap_or_default());
    let at = |t: Option<i64>| match (t, &one_day) {
        (None, _) => "-".to_string(),
        (Some(t), Some(_)) => time(t)[11..19].to_string(),
        (Some(t), None) => time(t),
    };
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|c| {
            let cov = painted(describe_with(c, one_day.is_none()), paint);
            vec![
                c.stream.name(),
                c.state.as_str().to_string(),
                c.events.to_string(),
                c.gaps.to_string(),
                at(c.from),
                at(c.to),
                cov,
            ]
        })
        .collect();
    let table = render::table(
        &[
            "STREAM", "STATE", "EVENTS", "GAPS", "FROM", "TO", "COVERAGE",
        ],
        &body,
    );
    match one_day {
        Some(day) => format!("Times are UTC, on {day} (-o wide shows every column).\n{table}"),
        None => table,
    }
}

/// A coverage cell: green when whole, yellow when it names a hole.
fn painted(cov: String, paint: render::Paint) -> String {
    if cov == "OK" {
        paint.green(&cov)
    } else {
        paint.yellow(&cov)
    }
}

fn table(rows: &[Coverage], paint: render::Paint) -> String {
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|c| {
            let cov = painted(describe(c), paint);
            vec![
                c.stream.name(),
                c.stream.resource.group_resource(),
                match (&c.stream.namespace, c.stream.resource.namespaced) {
                    (Some(ns), _) => ns.clone(),
                    (None, true) => "(all)".into(),
                    (None, false) => "-".into(),
                },
                c.state.as_str().to_string(),
                c.last_rv.clone().unwrap_or_else(|| "-".into()),
                c.events.to_string(),
                c.gaps.to_string(),
                c.from.map(time).unwrap_or_else(|| "-".into()),
                c.to.map(time).unwrap_or_else(|| "-".into()),
                cov,
            ]
        })
        .collect();
    render::table(
        &[
            "STREAM",
            "RESOURCE",
            "NAMESPACE",
            "STATE",
            "LAST-RV",
            "EVENTS",
            "GAPS",
            "FROM",
            "TO",
            "COVERAGE",
        ],
        &body,
    )
}
