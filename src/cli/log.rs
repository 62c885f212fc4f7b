//! `log`: what happened, in order, one line per change (docs/output.md).

use super::answer::{self, StrictArg};
use super::args::GlobalArgs;
use super::diff::BetweenOut;
use super::reader::Reader;
use crate::diff::DiffOptions;
use crate::error::CliResult;
use crate::history::diff::Field;
use crate::history::log::{LogEntry, LogType};
use crate::render::Format;
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

  # Follow the journal as a recorder fills it (Ctrl-C stops); no cluster needed
  kubectl krply log -f -n shop

Times are in the local time zone (UTC with --utc), when the recorder observed
each change. RELIST marks a change that only a relist after a gap found: it
happened at an unknown time in the range shown. GAP lines are stretches the
recording does not cover. With -f, the log goes on as the journal grows,
like tail -f: new changes and gaps as they are recorded (one JSON object a
line with -o json).")]
pub struct LogArgs {
    #[command(flatten)]
    pub window: answer::WindowArgs,
    /// Go on printing what the journal gets, as it gets it, until interrupted
    /// (it reads only the journal: run it beside a recorder)
    #[arg(short = 'f', long)]
    pub follow: bool,
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
    let format = global.format(
        Format::Text,
        &[Format::Text, Format::Wide, Format::Json, Format::Yaml],
    )?;
    if args.follow {
        return follow(global, &args, format);
    }
    let reader = Reader::open(global)?;
    let window = answer::window(
        &reader,
        &args.window.since,
        &args.window.until,
        Millis::now(),
    )?;
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
            super::out(&crate::render::log::text(
                &result,
                reader.namespace.is_none(),
                crate::render::text_width(format == Format::Wide),
                paint,
            ))?
        }
    }
    answer::strict(&result.completeness, args.strict.strict)
}

/// How often `log -f` looks at the journal again.
const FOLLOW_EVERY: std::time::Duration = std::time::Duration::from_millis(500);

/// How far back each look of `log -f` reaches: an entry is stamped with when
/// it was observed, and is journaled a little later (a gap, when it is found,
/// with when it began). Entries printed are remembered for this long.
const FOLLOW_LOOKBACK_MS: i64 = 10 * 60 * 1000;

/// `log -f`: the log of the window so far, then every entry the journal gets
/// from then on, each once, as it gets it; until interrupted. Only the
/// journal is read, in a fresh read snapshot at each look.
fn follow(global: &GlobalArgs, args: &LogArgs, format: Format) -> CliResult {
    if args.window.until.as_str() != "now" {
        return Err(crate::error::CliError::usage(
            "-f follows the journal from --since on: it takes no --until",
        ));
    }
    if format == Format::Yaml {
        return Err(crate::error::CliError::usage(
            "-f prints text, or one JSON object a line with -o json",
        ));
    }
    let reader = Reader::open(global)?;
    let mut since = answer::window(
        &reader,
        &args.window.since,
        &args.window.until,
        Millis::now(),
    )?
    .since();
    let opts = DiffOptions {
        include_status: args.window.include_status,
    };
    let paint = global.paint();
    let width = crate::render::text_width(format == Format::Wide);
    // What was printed, by stream, journal order, type and time (a gap's
    // start), with when it was observed.
    let mut printed: std::collections::HashMap<(String, i64, &'static str, i64), i64> =
        std::collections::HashMap::new();
    let mut day = String::new();
    loop {
        // A clock set back (NTP) must not end the follow: the window then
        // starts a millisecond before now.
        let now = Millis::now();
        since = Millis::from_ms(since.as_ms().min(now.as_ms() - 1));
        let window = crate::time::TimeWindow::new(since, now)?;
        let history = reader.history()?;
        let (scope, names) = answer::scope(&reader, &history, &args.window.targets)?;
        answer::check_by(&args.window.by, &history)?;
        let mut result = history.log(&scope, &names, &window, &opts)?;
        drop(history);
        if let Some(user) = &args.window.by {
            result
                .entries
                .retain_mut(|e| e.kind == LogType::Gap || e.by.keeps(user, &mut e.fields));
        }
        result.entries.retain(|e| {
            // A gap is placed where the window starts when it began before;
            // its own start does not move.
            let at = e.gap.as_ref().map_or(e.observed_at, |(g, _)| g.from);
            let key = (e.stream.clone(), e.seq, e.kind.as_str(), at);
            printed.insert(key, e.observed_at).is_none()
        });
        let out = if format == Format::Json {
            result
                .entries
                .iter()
                .map(|e| serde_json::to_string(&entry_out(e)).unwrap_or_default() + "\n")
                .collect()
        } else {
            crate::render::log::entries(
                &result.entries,
                &mut day,
                reader.namespace.is_none(),
                width,
                paint,
            )
        };
        if !out.is_empty() {
            super::out(&out)?;
        }
        // The next look reaches back far enough for what is journaled late.
        since = Millis::from_ms((now.as_ms() - FOLLOW_LOOKBACK_MS).max(since.as_ms()));
        printed.retain(|_, at| *at >= since.as_ms());
        std::thread::sleep(FOLLOW_EVERY);
    }
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
