//! `coverage` (and `status`'s bars): per stream, the time it covers as a
//! time bar, its gaps in words, `-o wide`'s table and the JSON and YAML
//! shapes (docs/output.md).

use super::{self as render, Format};
use crate::journal::read::{Coverage, GapWindow};
use crate::journal::{Journal, JournalError};
use crate::time::Millis;
use serde::Serialize;

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

#[derive(Serialize, Default)]
pub struct AuditOut {
    pub covered: Vec<SpanOut>,
    /// The same stretches, for text.
    #[serde(skip)]
    spans: Vec<(i64, i64)>,
}

#[derive(Serialize)]
pub struct SpanOut {
    pub from: String,
    pub to: String,
}

impl AuditOut {
    pub fn is_empty(&self) -> bool {
        self.covered.is_empty()
    }

    pub fn of(journal: &Journal, cluster: &str) -> Result<AuditOut, JournalError> {
        let spans = crate::audit::join::merge(&journal.audit_coverage(cluster)?);
        Ok(AuditOut {
            covered: spans
                .iter()
                .map(|&(f, t)| SpanOut {
                    from: time(f),
                    to: time(t),
                })
                .collect(),
            spans,
        })
    }

    /// `Audit logs cover: T1 to T2, ...`, or nothing when none was imported.
    pub fn line(&self) -> String {
        if self.covered.is_empty() {
            return String::new();
        }
        let clock = render::clock::clock();
        let spans: Vec<String> = self
            .spans
            .iter()
            .map(|&(f, t)| format!("{} to {}", clock.stamp(f), clock.stamp_after(t, f)))
            .collect();
        format!("Audit logs cover: {}\n", spans.join(", "))
    }
}

fn time(t: i64) -> String {
    Millis::from_ms(t).to_string()
}

/// The coverage of every stream of `cluster` (that covers `namespace`, when
/// given).
pub fn rows(
    journal: &Journal,
    cluster: &str,
    namespace: Option<&str>,
) -> Result<Vec<Coverage>, JournalError> {
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

/// A stream's name; where the stream is here more than once (recorded, and
/// imported from other journals: docs/at-scale.md, "Importing segments"), an
/// imported lane's says which: `NAME (imported JOURNAL#N)`.
fn label(c: &Coverage, rows: &[Coverage]) -> String {
    let name = c.stream.name();
    let Some(origin) = &c.stream.origin else {
        return name;
    };
    let same = |o: &&Coverage| o.stream.cluster == c.stream.cluster && o.stream.name() == name;
    if rows.iter().filter(same).count() < 2 {
        return name;
    }
    let lane = origin
        .strip_prefix(crate::journal::schema::IMPORTED_PREFIX)
        .unwrap_or(origin);
    let (journal, n) = lane.split_once('#').unwrap_or((lane, "?"));
    let short: String = journal.chars().take(8).collect();
    format!("{name} (imported {short}#{n})")
}

pub fn render_rows(
    rows: &[Coverage],
    audit: AuditOut,
    format: Format,
    paint: render::Paint,
    window: (i64, i64),
) -> String {
    let audit_line = audit.line();
    let out = CoverageOut {
        streams: rows.iter().map(|c| stream_out(c, rows)).collect(),
        audit,
    };
    match format {
        Format::Json => render::json(&out),
        Format::Yaml => render::yaml(&out),
        _ if rows.is_empty() => "No streams recorded.\n".to_string(),
        Format::Wide => table(rows, paint) + &audit_line,
        _ => time_bars(rows, paint, window, terminal_width()) + &audit_line,
    }
}

/// Every stream of `cluster` as a time bar over its whole recorded time (for
/// `status`).
pub fn bars_of(
    journal: &Journal,
    cluster: &str,
    paint: render::Paint,
) -> Result<String, JournalError> {
    let rows = rows(journal, cluster, None)?;
    let Some(since) = rows.iter().filter_map(|c| c.from).min() else {
        return Ok(String::new());
    };
    let until = rows
        .iter()
        .filter_map(|c| c.to)
        .max()
        .unwrap_or(since)
        .max(since + 1);
    Ok(time_bars(&rows, paint, (since, until), terminal_width()))
}

/// The terminal's width; else `$COLUMNS`; else 80.
fn terminal_width() -> usize {
    console::Term::stdout()
        .size_checked()
        .map(|(_, cols)| cols as usize)
        .or_else(|| std::env::var("COLUMNS").ok()?.parse().ok())
        .filter(|w| *w >= 20)
        .unwrap_or(80)
}

/// The default view: a time bar per stream across `window`, then each gap
/// in words (the same stretch in several streams once).
fn time_bars(
    rows: &[Coverage],
    paint: render::Paint,
    (since, until): (i64, i64),
    width: usize,
) -> String {
    let zone = render::clock::clock();
    let one_day = zone.date(since) == zone.date(until);
    let clock = |t: i64| {
        if one_day {
            zone.time_s(t)
        } else {
            zone.short(t)
        }
    };
    let bar_rows: Vec<render::bars::BarRow> = rows
        .iter()
        .map(|c| render::bars::BarRow::of(c, label(c, rows)))
        .collect();
    let head = if one_day {
        format!(
            "Coverage from {} to {} on {} ({}); -o wide: the table\n",
            clock(since),
            clock(until),
            zone.date(since),
            zone.zone(until)
        )
    } else {
        format!(
            "Coverage from {} to {} ({}); -o wide: the table\n",
            zone.minute(since),
            zone.minute(until),
            zone.zone(until)
        )
    };
    let mut out = head + &render::bars::bars(&bar_rows, since, until, width, paint, &clock);
    // Every hole in words: a stretch with the same cause in several streams
    // (a 410, a restart) once, with the streams it hit.
    struct Hole {
        from: i64,
        to: Option<i64>,
        reason: String,
        streams: Vec<String>,
    }
    let mut holes: Vec<Hole> = Vec::new();
    for c in rows {
        for w in &c.windows {
            let overlaps = |h: &Hole| {
                crate::history::complete::same_cause(&h.reason, &w.reason)
                    && w.from <= h.to.unwrap_or(i64::MAX)
                    && h.from <= w.to.unwrap_or(i64::MAX)
            };
            match holes.iter_mut().find(|h| overlaps(h)) {
                Some(h) => {
                    h.from = h.from.min(w.from);
                    h.to = h.to.zip(w.to).map(|(a, b)| a.max(b));
                    h.streams.push(label(c, rows));
                }
                None => holes.push(Hole {
                    from: w.from,
                    to: w.to,
                    reason: w.reason.clone(),
                    streams: vec![label(c, rows)],
                }),
            }
        }
    }
    let at = |t: i64| {
        if one_day { zone.time(t) } else { zone.stamp(t) }
    };
    for h in holes {
        let reason = h.reason.split(": ").next().unwrap_or(&h.reason);
        let when = match h.to {
            Some(to) => format!("gap {}..{} ({reason})", at(h.from), at(to)),
            None => format!("gap since {} ({reason})", at(h.from)),
        };
        let which = match h.streams.as_slice() {
            [one] => one.clone(),
            many => format!("{} streams", many.len()),
        };
        out.push_str(&format!("{} in {which}\n", paint.yellow(&when)));
    }
    for c in rows {
        match (&c.unavailable, c.from) {
            (Some((since, reason)), _) => out.push_str(&format!(
                "{}: {}\n",
                label(c, rows),
                paint.yellow(&format!(
                    "unavailable since {} ({})",
                    at(*since),
                    reason.split(": ").next().unwrap_or(reason)
                ))
            )),
            (None, None) => out.push_str(&format!("{}: no baseline yet\n", label(c, rows))),
            _ => {}
        }
    }
    out
}

/// The coverage of every stream of `cluster` (that covers `namespace`, when
/// given), rendered in `format`.
pub fn report(
    journal: &Journal,
    cluster: &str,
    namespace: Option<&str>,
    format: Format,
    paint: render::Paint,
) -> Result<String, JournalError> {
    let rows = rows(journal, cluster, namespace)?;
    let until = Millis::now().as_ms();
    let since = rows
        .iter()
        .filter_map(|c| c.from)
        .min()
        .unwrap_or(until - 3_600_000);
    let until = rows.iter().filter_map(|c| c.to).max().unwrap_or(until);
    Ok(render_rows(
        &rows,
        AuditOut::of(journal, cluster)?,
        format,
        paint,
        (since, until.max(since + 1)),
    ))
}

fn stream_out(c: &Coverage, rows: &[Coverage]) -> StreamOut {
    let r = &c.stream.resource;
    StreamOut {
        id: label(c, rows),
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

/// What the COVERAGE column says: `OK`, or what is missing, times as text
/// shows them.
pub fn describe(c: &Coverage) -> String {
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
    let clock = render::clock::clock();
    match c.from {
        Some(from) => clock.stamp_after(t, from),
        None => clock.stamp(t),
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
    let clock = render::clock::clock();
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|c| {
            let cov = painted(describe(c), paint);
            vec![
                label(c, rows),
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
                c.from.map(|t| clock.stamp(t)).unwrap_or_else(|| "-".into()),
                c.to.map(|t| clock.stamp(t)).unwrap_or_else(|| "-".into()),
                cov,
            ]
        })
        .collect();
    // The zone, named once: in the first time column's header.
    let from_header = format!(
        "FROM ({})",
        clock.zone(rows.iter().find_map(|c| c.from).unwrap_or(0))
    );
    render::table(
        &[
            "STREAM",
            "RESOURCE",
            "NAMESPACE",
            "STATE",
            "LAST-RV",
            "EVENTS",
            "GAPS",
            &from_header,
            "TO",
            "COVERAGE",
        ],
        &body,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::read::{StreamInfo, StreamState};

    fn lane(id: i64, cluster: &str, origin: Option<&str>) -> Coverage {
        Coverage {
            stream: StreamInfo {
                id,
                cluster: cluster.into(),
                resource: krply_sim::builtin_type("apps", "deployments").unwrap(),
                namespace: Some("shop".into()),
                selector: None,
                origin: origin.map(str::to_string),
            },
            state: StreamState::Stopped,
            last_rv: None,
            events: 0,
            gaps: 0,
            from: None,
            to: None,
            windows: vec![],
            unavailable: None,
        }
    }

    #[test]
    fn an_imported_lane_is_named_only_where_its_name_repeats() {
        let origin = "import:0123456789abcdef0123456789abcdef#2";
        let alone = [lane(1, "c", Some(origin))];
        assert_eq!(label(&alone[0], &alone), "deployments.v1.apps@shop");
        let both = [lane(1, "c", None), lane(2, "c", Some(origin))];
        assert_eq!(label(&both[0], &both), "deployments.v1.apps@shop");
        assert_eq!(
            label(&both[1], &both),
            "deployments.v1.apps@shop (imported 01234567#2)"
        );
        // The same name in another cluster is another stream.
        let apart = [lane(1, "c", None), lane(2, "d", Some(origin))];
        assert_eq!(label(&apart[1], &apart), "deployments.v1.apps@shop");
    }
}
