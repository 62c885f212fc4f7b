//! `snapshot`: the state at T of every recorded stream in scope.

use super::answer::{self, StrictArg};
use super::args::{GlobalArgs, TimeArg};
use super::reader::Reader;
use crate::error::{CliError, CliResult};
use crate::render::{self, Format};
use crate::time::Millis;
use clap::Args;

/// Show the state at a time of every recorded stream in scope: watermarks, counts, completeness
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  # What the journal knows of the current namespace now
  kubectl krply snapshot

  # Deployments and configmaps of shop 30 minutes ago, with the objects
  kubectl krply snapshot deploy cm -n shop --at 30m -o yaml

  # Keep a name for that moment, and list the saved ones
  kubectl krply snapshot --at 2026-11-29T10:00:00Z --save before-incident
  kubectl krply snapshot --list")]
pub struct SnapshotArgs {
    /// Only these resource types
    #[arg(value_name = "TYPE")]
    pub types: Vec<String>,
    /// The time: now, a duration ago (30m, 2h), a time of day (14:02), an RFC 3339 time or a saved snapshot
    #[arg(long, default_value = "now", value_name = "TIME")]
    pub at: TimeArg,
    /// Save this snapshot in the journal under NAME
    #[arg(long, value_name = "NAME", conflicts_with = "list")]
    #[arg(value_parser = snapshot_name)]
    pub save: Option<String>,
    /// List the saved snapshots
    #[arg(long)]
    pub list: bool,
    #[command(flatten)]
    pub strict: StrictArg,
}

pub fn run(global: &GlobalArgs, args: SnapshotArgs) -> CliResult {
    let format = global.format(Format::Table, &[Format::Table, Format::Json, Format::Yaml])?;
    let reader = Reader::open(global)?;
    if args.list {
        return list(&reader, format);
    }
    let at = args
        .at
        .at(Millis::now(), &reader.journal, Some(&reader.cluster.id))?;
    let history = reader.history()?;
    let (scope, _) = answer::scope(&reader, &history, &args.types)?;
    if args.types.iter().any(|t| t.contains('/')) {
        return Err(CliError::usage(
            "snapshot takes resource types (deploy, cm), not TYPE/NAME; use `get` for one object",
        ));
    }
    let with_objects = matches!(format, Format::Json | Format::Yaml);
    let snap = history.snapshot(&scope, at.as_ms(), with_objects)?;
    // The answer is computed: end the read transaction before saving it.
    drop(history);
    let out = render::snapshot::SnapshotOut {
        name: args.save.clone(),
        cluster: reader.cluster.id.clone(),
        namespace: reader.namespace.clone(),
        at: at.to_string(),
        complete: snap.completeness.complete(),
        missing: snap.completeness.streams(),
        warnings: snap.completeness.warnings(),
        watermarks: snap
            .streams
            .iter()
            .map(|s| render::snapshot::Watermark {
                stream: s.stream.clone(),
                resource_version: s.resource_version.clone(),
                objects: s.objects,
                complete: s.complete,
            })
            .collect(),
        items: snap.items.into_iter().map(|(_, o)| o).collect(),
    };
    if let Some(name) = &args.save {
        let info = serde_json::to_string(&render::snapshot::SnapshotOut {
            items: Vec::new(),
            ..clone_head(&out)
        })
        .unwrap_or_default();
        let saved = reader.journal.save_snapshot(
            &reader.cluster.id,
            name,
            at.as_ms(),
            Millis::now().as_ms(),
            &info,
        )?;
        if saved.is_none() {
            return Err(CliError::runtime(format!(
                "a snapshot named \"{name}\" already exists for this cluster"
            ))
            .hint("`kubectl krply snapshot --list` shows the saved ones; pick another name"));
        }
    }
    match format {
        Format::Json | Format::Yaml => super::out_structured(format, &out)?,
        _ => {
            answer::warn(&snap.completeness, global.paint());
            super::out(&render::snapshot::table(&out, global.paint()))?
        }
    }
    answer::strict(&snap.completeness, args.strict.strict)
}

fn clone_head(o: &render::snapshot::SnapshotOut) -> render::snapshot::SnapshotOut {
    render::snapshot::SnapshotOut {
        name: o.name.clone(),
        cluster: o.cluster.clone(),
        namespace: o.namespace.clone(),
        at: o.at.clone(),
        complete: o.complete,
        missing: o.missing.clone(),
        warnings: o.warnings.clone(),
        watermarks: o
            .watermarks
            .iter()
            .map(|w| render::snapshot::Watermark {
                stream: w.stream.clone(),
                resource_version: w.resource_version.clone(),
                objects: w.objects,
                complete: w.complete,
            })
            .collect(),
        items: Vec::new(),
    }
}

fn list(reader: &Reader, format: Format) -> CliResult {
    let saved = reader.journal.snapshots(Some(&reader.cluster.id))?;
    let parsed: Vec<render::snapshot::SnapshotOut> = saved
        .iter()
        .filter_map(|s| serde_json::from_str(&s.info).ok())
        .collect();
    let text = match format {
        Format::Json => render::json(&serde_json::json!({ "snapshots": parsed })),
        Format::Yaml => render::yaml(&serde_json::json!({ "snapshots": parsed })),
        _ if saved.is_empty() => "No saved snapshots.\n".to_string(),
        _ => render::snapshot::saved_table(&saved, &parsed),
    };
    super::out(&text)
}

/// A name for a saved snapshot: 1 to 253 characters, not only blanks.
/// A name for `--save`: one that `--at`, `--since` and `--until` can take
/// back, so never a time.
fn snapshot_name(s: &str) -> Result<String, String> {
    if super::args::is_snapshot_name(s) {
        Ok(s.to_string())
    } else if s.trim().is_empty() || s.len() > 253 {
        Err("a snapshot name has 1 to 253 characters".into())
    } else {
        Err(
            "a snapshot name cannot be a time (now, 30m, 14:02, an RFC 3339 time): \
             --since and --at would read it as one"
                .into(),
        )
    }
}
