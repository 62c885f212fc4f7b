//! `log`: what happened, in order, one line per change (docs/output.md).

use super::answer::{self, StrictArg};
use super::args::GlobalArgs;
use super::diff::BetweenOut;
use super::reader::Reader;
use crate::diff::DiffOptions;
use crate::error::CliResult;
use crate::history::diff::{Field, fields_after, shorten};
use crate::history::log::{LogAnswer, LogEntry, LogType};
use crate::render::TEXT_WIDTH;
use crate::render::{Format, Paint};
use crate::time::Millis;
use clap::Args;
use serde::Serialize;

/// Show what happened, in order: one line per change, oldest first, with the gaps where they fall
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  # Everything that changed in the current namespace in the last 30 minutes
  kubectl krply log --since 30m

  # The ConfigMaps and Deployments of shop since 14:00 today
  kubectl krply log cm deploy -n shop --since 14:00

  # One object, as JSON
  kubectl krply log deploy/frontend -n shop -o json

Times are in the local time zone (UTC with --utc), when the recorder observed
each change. RELIST marks a change that only a relist after a gap found: it
happened at an unknown time in the range shown. GAP lines are stretches the
recording does not cover.")]
pub struct LogArgs {
    #[command(flatten)]
    pub window: answer::WindowArgs,
    #[command(flatten)]
    pub strict: StrictArg,
}

#[derive(Serialize)]
struct GapOut {
    from: String,
    to: Option<String>,
    reason: String,
    streams: Vec<String>,
}

#[derive(Serialize)]
struct EntryOut<'a> {
    observed_at: String,
    #[serde(rename = "type")]
    kind: &'static str,
    /// `added`, `modified` or `deleted`; for a relist finding, what it found.
    change: Option<&'static str>,
    /// `watch` (an event showed it), `relist` (a relist after a gap found it),
    /// `null` for a gap.
    observed: Option<&'static str>,
    #[serde(rename = "kind")]
    object_kind: Option<&'a str>,
    namespace: Option<&'a str>,
    name: Option<&'a str>,
    resource_version: Option<&'a str>,
    between: Option<BetweenOut>,
    /// Who made this change (audit logs).
    #[serde(flatten)]
    by: &'a crate::audit::By,
    fields: &'a [Field],
    #[serde(skip_serializing_if = "Option::is_none")]
    gap: Option<GapOut>,
}

#[derive(Serialize)]
struct LogOut<'a> {
    #[serde(flatten)]
    head: answer::WindowHead<'a>,
    entries: Vec<EntryOut<'a>>,
}

pub fn run(global: &GlobalArgs, args: LogArgs) -> CliResult {
    let format = global.format(Format::Text, &[Format::Text, Format::Json, Format::Yaml])?;
    let window = answer::window(&args.window.since, &args.window.until, Millis::now())?;
    let reader = Reader::open(global)?;
    let history = reader.history()?;
    let (scope, names) = answer::scope(&reader, &history, &args.window.targets)?;
    let opts = DiffOptions {
        include_status: args.window.include_status,
    };
    answer::check_by(&args.window.by, &history)?;
    let mut result = history.log(&scope, &names, &window, &opts)?;
    if let Some(user) = &args.window.by {
        result
            .entries
            .retain_mut(|e| e.kind == LogType::Gap || e.by.keeps(user, &mut e.fields));
    }
    match format {
        Format::Json | Format::Yaml => super::out_structured(
            format,
            &LogOut {
                head: answer::WindowHead::new(&reader, &window, &result.completeness),
                entries: result.entries.iter().map(entry_out).collect(),
            },
        )?,
        _ => {
            let paint = global.paint();
            answer::warn(&result.completeness, paint);
            super::out(&text(&result, reader.namespace.is_none(), paint))?
        }
    }
    answer::strict(&result.completeness, args.strict.strict)
}

fn time(t: i64) -> String {
    Millis::from_ms(t).to_string()
}

fn entry_out(e: &LogEntry) -> EntryOut<'_> {
    let gap = e.kind == LogType::Gap;
    EntryOut {
        observed_at: time(e.observed_at),
        kind: e.kind.as_str(),
        change: e.kind.change(),
        observed: match e.kind {
            LogType::Gap => None,
            LogType::Relist(_) => Some("relist"),
            _ => Some("watch"),
        },
        object_kind: (!gap).then_some(e.object_kind.as_str()),
        namespace: (!gap).then_some(e.namespace.as_str()),
        name: (!gap).then_some(e.name.as_str()),
        resource_version: e.resource_version.as_deref(),
        between: e.between.map(Into::into),
        by: &e.by,
        fields: &e.fields,
        gap: e.gap.as_ref().map(|(g, streams)| GapOut {
            from: time(g.from),
            to: g.to.map(time),
            reason: g.reason.clone(),
            streams: streams.clone(),
        }),
    }
}

/// The date and `HH:MM:SS.mmm` of a time, in the zone text is shown in (the
/// date is printed when it changes).
fn clock(t: i64) -> (String, String) {
    let c = crate::render::clock::clock();
    (c.date(t), c.time(t))
}

/// One line per entry, oldest first, each within [`TEXT_WIDTH`] columns.
pub(super) fn text(result: &LogAnswer, all_namespaces: bool, paint: Paint) -> String {
    if result.entries.is_empty() {
        return if result.completeness.nothing_recorded() {
            "Nothing was ever recorded here: this journal cannot say what happened.\n".into()
        } else if result.completeness.complete() {
            "No changes recorded.\n".into()
        } else {
            "No changes recorded in the time that was watched (see the warning for the rest).\n"
                .into()
        };
    }
    let mut out = String::new();
    let mut day = String::new();
    for e in &result.entries {
        let (date, clock) = clock(e.observed_at);
        if date != day {
            let zone = crate::render::clock::clock().zone(e.observed_at);
            out.push_str(&paint.dim(&format!("{date} ({zone})\n")));
            day = date;
        }
        out.push_str(&line(e, &clock, all_namespaces, paint));
        out.push('\n');
    }
    out
}

fn line(e: &LogEntry, clock: &str, all_namespaces: bool, paint: Paint) -> String {
    let label = format!("{:<8}", e.kind.as_str());
    let label = match e.kind {
        LogType::Added => paint.green(&label),
        LogType::Deleted => paint.red(&label),
        LogType::Relist(_) | LogType::Gap => paint.yellow(&label),
        LogType::Modified => label,
    };
    if let Some((g, streams)) = &e.gap {
        let which = match streams.as_slice() {
            [one] => one.clone(),
            many => format!("{} streams", many.len()),
        };
        let text = match g.to {
            Some(to) => format!(
                "{which} not covered until {}: {}",
                clock_of(to, e.observed_at),
                g.reason
            ),
            None => format!("{which} not covered from here on: {}", g.reason),
        };
        return format!("{clock}  {label}  {}", shorten(&text, TEXT_WIDTH - 24));
    }
    let who = if all_namespaces && !e.namespace.is_empty() {
        format!("{} {}/{}", e.object_kind, e.namespace, e.name)
    } else {
        format!("{} {}", e.object_kind, e.name)
    };
    let mut head = format!("{clock}  {label}  {}", paint.bold(&who));
    let mut used = clock.chars().count() + 2 + 8 + 2 + who.chars().count();
    if let Some(b) = e.between {
        let between = format!(
            "  between {} and {}",
            clock_of(b.from, e.observed_at),
            clock_of(b.to, e.observed_at)
        );
        used += between.chars().count();
        head.push_str(&paint.yellow(&between));
    }
    let room = TEXT_WIDTH.saturating_sub(used + 2);
    let what = match e.kind.change() {
        _ if !e.fields.is_empty() => {
            fields_after(&e.fields, room, clock.chars().count() + 2, TEXT_WIDTH)
        }
        Some(what @ ("added" | "deleted")) => {
            let did = if what == "added" {
                "created"
            } else {
                "deleted"
            };
            match e.by.text(None) {
                Some(by) => format!("{did} {}", paint.dim(&by)),
                None => did.into(),
            }
        }
        _ => String::new(),
    };
    match what.as_str() {
        "" => head,
        w if w.starts_with('\n') => format!("{head}{w}"),
        w => format!("{head}  {w}"),
    }
}

/// A time as `HH:MM:SS.mmm`, with its date when that differs from `near`'s.
fn clock_of(t: i64, near: i64) -> String {
    let (date, c) = clock(t);
    if date == clock(near).0 {
        c
    } else {
        format!("{date} {c}")
    }
}
