//! `import DIR|FILE...`: Parquet segments of other journals as read-only
//! history here (docs/at-scale.md, "Importing segments").

use super::args::GlobalArgs;
use crate::error::{CliError, CliResult};
use crate::render::{self, Format};
use crate::segments::import::{ImportError, import};
use clap::Args;
use std::path::PathBuf;

/// Merge Parquet segments (from `export --format parquet`) into this journal as read-only history
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  # A teammate's export, whole
  kubectl krply import segments/

  # Two days of one stream
  kubectl krply import segments/prod-eu/deployments.v1.apps@shop/2026-11-30.parquet \\
                       segments/prod-eu/deployments.v1.apps@shop/2026-12-01.parquet

Every answer (diff, log, timeline, get --at, snapshot, coverage) then covers the
imported clusters as if recorded here, gaps included. Importing a file again adds
nothing. Segments of each cluster stay that cluster's (--cluster-id picks it), and
a stream imported beside one recorded here is kept apart: each answer reads the
one that covers its window. A stretch of days not imported is a gap. See
docs/at-scale.md.")]
pub struct ImportArgs {
    /// Segment files, or directories to search for *.parquet
    #[arg(value_name = "DIR|FILE", required = true)]
    pub inputs: Vec<PathBuf>,
}

pub fn run(global: &GlobalArgs, args: ImportArgs) -> CliResult {
    let format = global.format(Format::Text, &[Format::Text, Format::Json, Format::Yaml])?;
    let done = import(&global.store_path()?, &args.inputs).map_err(|e| match e {
        ImportError::Journal(e) => e.into(),
        e @ ImportError::NotSegment { .. } => CliError::runtime(e.to_string())
            .hint("`kubectl krply export --format parquet --dir DIR` writes segments; nothing was imported")
            .caused_by(e),
        e @ ImportError::NewerFormat { .. } => CliError::runtime(e.to_string())
            .hint("a later kubectl-krply exported it: upgrade this one (`kubectl krew upgrade krply` or `cargo install kubectl-krply`); nothing was imported")
            .caused_by(e),
        e @ ImportError::BadRow { .. } => CliError::runtime(e.to_string())
            .hint("what came before that row was imported; export that slice again and import it to add the rest")
            .caused_by(e),
        e @ ImportError::NoSegments(_) => CliError::runtime(e.to_string())
            .hint("export writes DIR/CLUSTER/STREAM/DAY.parquet; name DIR or the files")
            .caused_by(e),
        e @ ImportError::Io { .. } => CliError::runtime(e.to_string()).caused_by(e),
    })?;
    let text = match format {
        Format::Json | Format::Yaml => render::structured(format, &done),
        _ => render::import::table(&done),
    };
    super::out(&text)?;
    if !global.quiet && format == Format::Text {
        let added: u64 = done.iter().map(|d| d.added).sum();
        let gaps = done.iter().filter(|d| d.gap_before).count();
        let mut line = format!("imported {added} row(s) from {} file(s)", done.len());
        if gaps > 0 {
            line.push_str(&format!(
                "; {gaps} stream(s) skip history no segment held: those stretches are gaps"
            ));
        }
        eprintln!("{line}");
    }
    Ok(())
}
