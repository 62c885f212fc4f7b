//! `diff`: what changed between two times, field by field.

use super::answer::{self, StrictArg};
use super::args::GlobalArgs;
use super::reader::Reader;
use crate::diff::{DiffOptions, strip_noise};

use crate::audit::By;
use crate::error::CliResult;
use crate::history::diff::{Change, DiffAnswer, Field, ObjectDiff};
use crate::render::{self, Format, Paint};
use crate::time::Millis;
use clap::Args;
use serde::Serialize;
use serde_json::Value;

/// Show what changed between two times: objects added, deleted and modified, field by field
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  # What changed in the last 30 minutes in the current namespace
  kubectl krply diff --since 30m

  # Deployments and services of shop between two times
  kubectl krply diff deploy svc -n shop --since 2026-11-29T10:00:00Z --until 2026-11-29T10:30:00Z

  # One object, as unified YAML diffs, failing (exit 3) if the history has holes
  kubectl krply diff deploy/frontend --since 2h -o unified --strict

Server-owned fields (uid, resourceVersion, generation, creationTimestamp, managedFields,
ownerReferences, the last-applied and revision annotations, status) are ignored unless
--include-status (which brings back status).")]
pub struct DiffArgs {
    #[command(flatten)]
    pub window: answer::WindowArgs,
    #[command(flatten)]
    pub strict: StrictArg,
}

#[derive(Serialize)]
struct ObjectOut<'a> {
    kind: &'a str,
    #[serde(rename = "apiVersion")]
    api_version: &'a str,
    namespace: &'a str,
    name: &'a str,
    change: &'static str,
    stream: &'a str,
    /// `watch` (an event showed it) or `relist` (a relist after a gap found
    /// it: it happened at an unknown time `between`).
    observed: &'static str,
    between: Option<BetweenOut>,
    /// For an added or deleted object a watch saw appear or go: when.
    #[serde(skip_serializing_if = "Option::is_none")]
    observed_at: Option<String>,
    /// For an added object a watch saw appear: a later change that only a
    /// relist found, at an unknown time in here.
    #[serde(skip_serializing_if = "Option::is_none")]
    changed_between: Option<BetweenOut>,
    /// Who created or deleted it (audit logs).
    #[serde(flatten)]
    by: &'a By,
    fields: &'a [Field],
}

/// When a change found by a relist happened: some time in `(from, to]`.
#[derive(Serialize)]
pub(super) struct BetweenOut {
    pub from: String,
    pub to: String,
}

impl From<crate::history::Between> for BetweenOut {
    fn from(b: crate::history::Between) -> Self {
        BetweenOut {
            from: Millis::from_ms(b.from).to_string(),
            to: Millis::from_ms(b.to).to_string(),
        }
    }
}

#[derive(Serialize)]
struct DiffOut<'a> {
    #[serde(flatten)]
    head: answer::WindowHead<'a>,
    objects: Vec<ObjectOut<'a>>,
}

pub fn run(global: &GlobalArgs, args: DiffArgs) -> CliResult {
    let format = global.format(
        Format::Text,
        &[
            Format::Text,
            Format::Wide,
            Format::Json,
            Format::Yaml,
            Format::Unified,
        ],
    )?;
    let now = Millis::now();
    let reader = Reader::open(global)?;
    let window = answer::window(&reader, &args.window.since, &args.window.until, now)?;
    let history = reader.history()?;
    let (scope, names) = answer::scope(&reader, &history, &args.window.targets)?;
    let opts = DiffOptions {
        include_status: args.window.include_status,
    };
    answer::check_by(&args.window.by, &history)?;
    let mut result = history.diff(&scope, &names, &window, &opts, format == Format::Unified)?;
    if let Some(user) = &args.window.by {
        only_by(&mut result, user);
    }
    let paint = global.paint();
    match format {
        Format::Json | Format::Yaml => super::out_structured_list(
            format,
            &result.objects,
            |o| object_out(o),
            |objects| DiffOut {
                head: answer::WindowHead::new(&reader, &window, &result.completeness),
                objects,
            },
        )?,
        Format::Unified => {
            answer::warn(&result.completeness, paint);
            super::out(&unified(&result, &opts, paint))?
        }
        _ => {
            answer::warn(&result.completeness, paint);
            super::out(&render::diff::text(
                &result,
                reader.namespace.as_deref(),
                &window,
                render::text_width(format == Format::Wide),
                paint,
            ))?
        }
    }
    let done = answer::strict(&result.completeness, args.strict.strict);
    super::free_later(result);
    done
}

fn object_out(o: &ObjectDiff) -> ObjectOut<'_> {
    ObjectOut {
        kind: &o.kind,
        api_version: &o.api_version,
        namespace: &o.namespace,
        name: &o.name,
        change: o.change.as_str(),
        stream: &o.stream,
        observed: if o.found_by_relist.is_some() {
            "relist"
        } else {
            "watch"
        },
        between: o.found_by_relist.map(BetweenOut::from),
        observed_at: o.observed_at.map(|t| Millis::from_ms(t).to_string()),
        changed_between: o.changed_between.map(BetweenOut::from),
        by: &o.by,
        fields: &o.fields,
    }
}

/// Keeps only what `user` did (`--by`): their field changes, and the objects
/// they created or deleted.
fn only_by(result: &mut DiffAnswer, user: &str) {
    result.objects.retain_mut(|o| match o.change {
        Change::Added | Change::Deleted => o.by.is(user),
        Change::Modified => {
            o.fields.retain(|f| f.by.is(user));
            !o.fields.is_empty()
        }
    });
}

/// Unified YAML diffs, one per object, without server-owned noise.
fn unified(result: &DiffAnswer, opts: &DiffOptions, paint: Paint) -> String {
    let yaml = |v: &Option<Value>| match v {
        Some(v) => render::yaml(&strip_noise(v, opts)),
        None => String::new(),
    };
    let mut out = String::new();
    for o in &result.objects {
        let name = format!("{}/{}/{}", o.kind, o.namespace, o.name).replace("//", "/");
        let before = yaml(&o.before);
        let after = yaml(&o.after);
        let diff = similar::TextDiff::from_lines(&before, &after);
        let text = diff
            .unified_diff()
            .context_radius(3)
            .header(&format!("a/{name}"), &format!("b/{name}"))
            .to_string();
        for line in text.lines() {
            let line = if line.starts_with("+++") || line.starts_with("---") {
                paint.bold(line)
            } else if line.starts_with('+') {
                paint.green(line)
            } else if line.starts_with('-') {
                paint.red(line)
            } else if line.starts_with("@@") {
                paint.dim(line)
            } else {
                line.to_string()
            };
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}
