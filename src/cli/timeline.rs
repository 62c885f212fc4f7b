//! `timeline TYPE/NAME`: every recorded version of one object.

use super::answer::{self, StrictArg};
use super::args::GlobalArgs;
use super::reader::Reader;
use crate::audit::By;
use crate::diff::DiffOptions;
use crate::error::CliResult;
use crate::history::diff::Field;
use crate::history::timeline::{Entry, EntryType};
use crate::render::{self, Format};
use crate::time::Millis;
use clap::Args;
use serde::Serialize;

/// Show every recorded version of one object, oldest first, with the gaps of its stream
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  kubectl krply timeline deploy/frontend -n shop
  kubectl krply timeline cm/feature-flags -o json

Times are when the recorder observed each version (its clock), next to the
resourceVersion. * marks versions seen by a list rather than received as events;
GAP rows are stretches the recording does not cover. Versions that changed only
the status are left out, as in diff and log: --include-status shows them.")]
pub struct TimelineArgs {
    /// The object, as TYPE/NAME (deploy/frontend)
    #[arg(value_name = "TYPE/NAME")]
    pub object: String,
    /// Also show changes of the status, and the versions that changed only status
    #[arg(long)]
    pub include_status: bool,
    /// Only changes made by this user (with `kubectl --as`, the impersonated
    /// user), as imported audit logs tell; gaps stay
    #[arg(long, value_name = "USER")]
    pub by: Option<String>,
    #[command(flatten)]
    pub strict: StrictArg,
}

#[derive(Serialize)]
struct GapOut {
    from: String,
    to: Option<String>,
    reason: String,
}

#[derive(Serialize)]
struct EntryOut<'a> {
    observed_at: String,
    resource_version: Option<String>,
    #[serde(rename = "type")]
    kind: &'static str,
    synthetic: bool,
    /// `watch` (an event), `list` (a list that found nothing new) or
    /// `relist` (a list that found a change nobody watched happen);
    /// `null` for a gap.
    observed: Option<&'static str>,
    /// For `relist`: the stretch the change happened in.
    between: Option<super::diff::BetweenOut>,
    /// Who made this change (audit logs).
    #[serde(flatten)]
    by: &'a By,
    fields: &'a [Field],
    #[serde(skip_serializing_if = "Option::is_none")]
    gap: Option<GapOut>,
}

#[derive(Serialize)]
struct TimelineOut<'a> {
    cluster: &'a str,
    kind: &'a str,
    namespace: &'a str,
    name: &'a str,
    complete: bool,
    warnings: Vec<String>,
    entries: Vec<EntryOut<'a>>,
}

pub fn run(global: &GlobalArgs, args: TimelineArgs) -> CliResult {
    let format = global.format(
        Format::Table,
        &[Format::Table, Format::Wide, Format::Json, Format::Yaml],
    )?;
    let reader = Reader::open(global)?;
    let history = reader.history()?;
    let tracked = super::object_arg::find(&reader, &history, &args.object)?;
    let opts = DiffOptions {
        include_status: args.include_status,
    };
    answer::check_by(&args.by, &history)?;
    let mut t = history.timeline(&tracked, &opts)?;
    if !args.include_status {
        t.hide_status_only();
    }
    if let Some(user) = &args.by {
        t.entries
            .retain_mut(|e| e.kind == EntryType::Gap || e.by.keeps(user, &mut e.fields));
    }
    match format {
        Format::Json | Format::Yaml => super::out_structured(
            format,
            &TimelineOut {
                cluster: &reader.cluster.id,
                kind: &t.kind,
                namespace: &t.namespace,
                name: &t.name,
                complete: t.completeness.complete(),
                warnings: t.completeness.warnings(),
                entries: t.entries.iter().map(entry_out).collect(),
            },
        )?,
        _ => {
            answer::warn(&t.completeness, global.paint());
            super::out(&render::timeline::table(
                &t.entries,
                render::text_width(format == Format::Wide),
                global.paint(),
            ))?
        }
    }
    answer::strict(&t.completeness, args.strict.strict)
}

fn time(t: i64) -> String {
    Millis::from_ms(t).to_string()
}

fn entry_out(e: &Entry) -> EntryOut<'_> {
    EntryOut {
        observed_at: time(e.observed_at),
        resource_version: e.resource_version.clone(),
        kind: e.kind.as_str(),
        synthetic: e.synthetic,
        observed: match (e.kind, e.found_by_relist, e.synthetic) {
            (EntryType::Gap, _, _) => None,
            (_, Some(_), _) => Some("relist"),
            (_, None, true) => Some("list"),
            (_, None, false) => Some("watch"),
        },
        between: e.found_by_relist.map(Into::into),
        by: &e.by,
        fields: &e.fields,
        gap: e.gap.as_ref().map(|g| GapOut {
            from: time(g.from),
            to: g.to.map(time),
            reason: g.reason.clone(),
        }),
    }
}
