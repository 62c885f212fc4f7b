//! `get TYPE/NAME --at T` (alias `reconstruct`): one object as it was;
//! `get TYPE --at T`: the objects of a type as they were, as a table.

use super::answer::{self, StrictArg};
use super::args::{GlobalArgs, SelectorArg, TimeArg};
use super::reader::Reader;
use crate::error::{CliError, CliResult};
use crate::history::state::ObjectState;
use crate::history::tracked::Tracked;
use crate::render::{self, Format};
use crate::time::Millis;
use clap::Args;

/// Print an object, or the objects of a type, as they were at a time
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  kubectl krply get deploy/frontend --at 30m -n shop
  kubectl krply reconstruct cm/feature-flags --at 2026-11-29T10:00:00Z -o json
  kubectl krply get deploy -n shop --at 14:02          # a table, as kubectl get prints it
  kubectl krply get svc -A -l app=web --at 1h -o yaml  # a List

apiVersion and kind are filled in from the stream when the server left them out
(list items); every other field is exactly as recorded. metadata.managedFields are
left out, as kubectl leaves them out, unless --show-managed-fields. A table has the
columns kubectl shows for the kind (a custom resource's printer columns when its
CRD was recorded), with AGE as of that time.")]
pub struct GetArgs {
    /// The object, as TYPE/NAME (deploy/frontend), or a TYPE for all its objects
    #[arg(value_name = "TYPE[/NAME]")]
    pub object: String,
    /// Only objects whose labels match (with TYPE), as kubectl's -l
    #[arg(short = 'l', long = "selector", value_name = "SELECTOR")]
    pub selector: Option<SelectorArg>,
    /// The time: now, a duration ago (30m, 2h), a time of day (14:02), an RFC 3339 time or a saved snapshot
    #[arg(long, default_value = "now", value_name = "TIME")]
    pub at: TimeArg,
    /// Print metadata.managedFields too (the field managers and what they own)
    #[arg(long)]
    pub show_managed_fields: bool,
    #[command(flatten)]
    pub strict: StrictArg,
}

pub fn run(global: &GlobalArgs, args: GetArgs) -> CliResult {
    if !args.object.contains('/') {
        return list(global, args);
    }
    if args.selector.is_some() {
        return Err(CliError::usage(
            "-l selects among the objects of a TYPE; TYPE/NAME names one object",
        ));
    }
    let format = global.format(Format::Yaml, &[Format::Yaml, Format::Json])?;
    let reader = Reader::open(global)?;
    let at = args
        .at
        .at(Millis::now(), &reader.journal, Some(&reader.cluster.id))?;
    let history = reader.history()?;
    let tracked = super::object_arg::find(&reader, &history, &args.object)?;
    let state = history.tracked_at(&tracked, at.as_ms())?;
    let version = match state {
        ObjectState::Present(v) => v,
        other => return Err(not_there(&history, &tracked, at, other)?),
    };
    let stream = tracked.stream_of(&version);
    let mut value = history.object_json(stream, &version)?;
    if !args.show_managed_fields
        && let Some(meta) = value.get_mut("metadata").and_then(|m| m.as_object_mut())
    {
        // (shift_remove: the other fields keep the order they were recorded in)
        meta.shift_remove("managedFields");
    }
    let scope = crate::history::Scope {
        namespace: Some(tracked.namespace.clone()).filter(|n| !n.is_empty()),
        types: Some(vec![tracked.resource.clone()]),
    };
    let streams: Vec<_> = tracked.members.iter().map(|(s, _)| *s).collect();
    let completeness = history.completeness(&scope, &streams, None, at.as_ms());
    answer::warn(&completeness, global.paint());
    if history.has_audit() && !global.quiet {
        // Beside the object, not in it: the object stays exactly as recorded.
        super::sink::note(&made_by(&history, stream, version.object, &version)?);
    }
    super::out(&match format {
        Format::Json => render::json(&value),
        _ => render::yaml(&value),
    })?;
    answer::strict(&completeness, args.strict.strict)
}

/// `get TYPE --at T`: the objects of a type in scope at T, as `kubectl get`
/// prints them (a table, or a List with -o json|yaml).
fn list(global: &GlobalArgs, args: GetArgs) -> CliResult {
    let format = global.format(
        Format::Table,
        &[Format::Table, Format::Wide, Format::Json, Format::Yaml],
    )?;
    let reader = Reader::open(global)?;
    let at = args
        .at
        .at(Millis::now(), &reader.journal, Some(&reader.cluster.id))?;
    let history = reader.history()?;
    let (scope, _) = answer::scope(&reader, &history, std::slice::from_ref(&args.object))?;
    let snap = history.snapshot(&scope, at.as_ms(), true)?;
    let mut items: Vec<serde_json::Value> = snap
        .items
        .into_iter()
        .map(|(_, o)| o)
        .filter(|o| {
            args.selector
                .as_ref()
                .is_none_or(|sel| sel.parsed.matches(&labels(o)))
        })
        .collect();
    answer::warn(&snap.completeness, global.paint());
    let Some(resource) = scope.types.as_ref().and_then(|t| t.first()).cloned() else {
        return Err(CliError::usage(format!(
            "\"{}\" names no type",
            args.object
        )));
    };
    match format {
        Format::Json | Format::Yaml => {
            if !args.show_managed_fields {
                for o in &mut items {
                    if let Some(meta) = o.get_mut("metadata").and_then(|m| m.as_object_mut()) {
                        meta.shift_remove("managedFields");
                    }
                }
            }
            let list = serde_json::json!({
                "apiVersion": "v1",
                "kind": "List",
                "metadata": {"resourceVersion": ""},
                "items": items,
            });
            super::out(&match format {
                Format::Json => render::json(&list),
                _ => render::yaml(&list),
            })?;
        }
        _ if items.is_empty() => {
            // kubectl's words, on stderr.
            match &reader.namespace {
                Some(ns) if resource.namespaced => {
                    eprintln!("No resources found in {ns} namespace.")
                }
                _ => eprintln!("No resources found"),
            }
        }
        _ => {
            let columns = columns(&reader, &history, &resource, at.as_ms());
            super::out(&render::get::table(
                &columns,
                &items,
                reader.namespace.is_none() && resource.namespaced,
                format == Format::Wide,
                at.as_ms(),
            ))?;
        }
    }
    answer::strict(&snap.completeness, args.strict.strict)
}

/// An object's labels, for `-l`.
fn labels(o: &serde_json::Value) -> crate::selector::Labels {
    o.pointer("/metadata/labels")
        .and_then(serde_json::Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// The columns `kubectl get` shows for `resource`: its built-in printer's, or
/// a custom resource's `additionalPrinterColumns` when its CRD was recorded
/// (as it was at `at`), else NAME and AGE.
fn columns(
    reader: &Reader,
    history: &crate::history::History<'_>,
    resource: &crate::model::ResourceType,
    at: i64,
) -> render::get::Columns {
    let builtin = krply_apimachinery::printers::builtin_columns(&resource.group, &resource.kind);
    let custom = resource.group.contains('.')
        && !resource.group.ends_with(".k8s.io")
        && !resource.group.ends_with(".kubernetes.io");
    if !custom {
        return render::get::Columns::Builtin(builtin);
    }
    let crd = format!(
        "customresourcedefinitions.apiextensions.k8s.io/{}.{}",
        resource.resource, resource.group
    );
    let recorded = super::object_arg::find(reader, history, &crd)
        .ok()
        .and_then(|tracked| match history.tracked_at(&tracked, at).ok()? {
            ObjectState::Present(v) => {
                let stream = tracked.stream_of(&v);
                history.object_json(stream, &v).ok()
            }
            _ => None,
        });
    match recorded {
        Some(crd) => render::get::Columns::Custom(render::get::PrinterColumn::of_crd(
            &crd,
            &resource.version,
        )),
        None => render::get::Columns::Builtin(builtin),
    }
}

/// `note: resourceVersion 280 (observed T) was made by alice (kubectl-set)`,
/// or why the audit logs cannot say.
fn made_by(
    history: &crate::history::History<'_>,
    stream: &crate::history::StreamHistory,
    object: i64,
    version: &crate::journal::versions::VersionRow,
) -> CliResult<String> {
    let versions = history.versions(stream, object)?;
    let found = history.attribute(stream, &versions)?;
    let by = versions
        .iter()
        .position(|v| v.seq == version.seq)
        .and_then(|i| found[i].as_ref());
    // A note stands alone in an `mcp` answer: its time as in the JSON.
    let observed = if super::sink::capturing() {
        Millis::from_ms(version.observed_at).to_string()
    } else {
        crate::render::clock::clock().stamp(version.observed_at)
    };
    let what = format!(
        "resourceVersion {} (observed {observed})",
        version.resource_version
    );
    let agent = |a: &crate::audit::Actor| {
        let mut parts = Vec::new();
        if let Some(i) = &a.impersonated_by {
            parts.push(format!("impersonated by {i}"));
        }
        if let Some(ua) = &a.user_agent {
            parts.push(format!("with {ua}"));
        }
        parts.push(format!("audit ID {}", a.audit_id));
        parts.join(", ")
    };
    Ok(match by {
        None => format!("{what} was seen by a list; no write is known to have made it"),
        Some(crate::audit::Attribution::Known(a)) => format!(
            "{what} was made {}by {} ({})",
            if a.matched == crate::audit::Match::Likely {
                "likely "
            } else {
                ""
            },
            a.user,
            agent(a)
        ),
        Some(crate::audit::Attribution::Unknown(why)) => {
            format!("who made {what} is unknown: {}", why.as_str())
        }
    })
}

/// Not present at T: say when it existed, if ever.
fn not_there(
    history: &crate::history::History<'_>,
    tracked: &Tracked<'_>,
    at: Millis,
    state: ObjectState,
) -> CliResult<CliError> {
    let name = format!("{}/{}", tracked.resource.group_resource(), tracked.name);
    let clock = crate::render::clock::clock();
    let t = |m: Millis| clock.stamp(m.as_ms());
    let at = format!("{} ({})", t(at), clock.zone(at.as_ms()));
    if state == ObjectState::Unknown {
        let first = tracked
            .members
            .iter()
            .filter_map(|(s, _)| s.from().map(|f| (f, s)))
            .min_by_key(|(f, _)| *f);
        let (from, stream) = match first {
            Some((f, s)) => (t(Millis::from_ms(f)), s.info.name()),
            None => ("never".into(), tracked.members[0].0.info.name()),
        };
        return Ok(CliError::runtime(format!(
            "the journal knows nothing of {name} at {at}: recording of {stream} started at {from}"
        )));
    }
    let mut versions = Vec::new();
    for (stream, row) in &tracked.members {
        if let Some(row) = row {
            versions.extend(history.versions(stream, row.id)?);
        }
    }
    versions.sort_by_key(|v| (v.observed_at, v.seq));
    let first = versions.first().map(|v| Millis::from_ms(v.observed_at));
    let last_present = versions
        .iter()
        .rev()
        .find(|v| !v.deleted())
        .map(|v| Millis::from_ms(v.observed_at));
    let deleted = versions
        .iter()
        .rev()
        .find(|v| v.deleted())
        .map(|v| Millis::from_ms(v.observed_at));
    let when = match (first, deleted) {
        (Some(f), Some(d)) if d > f => {
            format!(
                "it was recorded from {} until it was deleted at {}",
                t(f),
                t(d)
            )
        }
        (Some(f), _) => format!(
            "it was recorded from {}{}",
            t(f),
            last_present
                .filter(|l| *l != f)
                .map(|l| format!(" (last seen {})", t(l)))
                .unwrap_or_default()
        ),
        (None, _) => "it was never recorded".into(),
    };
    Ok(CliError::runtime(format!(
        "{name} did not exist at {at}; {when}"
    )))
}
