//! `export`: the journal's records as NDJSON on stdout.

use super::args::{GlobalArgs, TimeArg};
use crate::error::{CliError, CliResult};
use crate::journal::Journal;
use crate::journal::export::{ExportOptions, export};
use crate::segments::export::{SegmentError, SegmentOptions, export_segments};
use crate::time::Millis;
use clap::Args;

/// Write the journal's records as NDJSON on stdout, or as Parquet segments in a directory
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  kubectl krply export > journal.ndjson
  kubectl krply export --since 2h | jq 'select(.record == \"gap\")'
  kubectl krply export --cluster-id 127.0.0.1-3f2a9b1c --until 2026-11-29T12:00:00Z
  kubectl krply export --format parquet --dir segments/ --since 7d
  kubectl krply export --format parquet --dir segments/ -n shop

Parquet: one file per cluster, stream and UTC day (DIR/CLUSTER/STREAM/DAY.parquet,
zstd), replaced when exported again, and DIR/manifest.json listing them with their
row counts and coverage; -n keeps one namespace. Each file starts with keyframes, the
state of its stream when its slice starts, so that a day alone answers for that day. DuckDB and ClickHouse read them
as they are: docs/at-scale.md has the SQL; `kubectl krply import` reads them back.
Only history recorded in this journal is exported, not what was imported into it.

Every line has seq, record (event, baseline, gap, checkpoint, coverage, snapshot),
cluster, stream, observed_at, watch_type, synthetic, resource_version, uid, kind,
apiVersion, namespace, name and object (null where they do not apply); gaps add from,
to and reason. docs/journal.md describes the format.")]
pub struct ExportArgs {
    /// ndjson (stdout) or parquet (--dir)
    #[arg(long, value_enum, default_value_t = ExportFormat::Ndjson)]
    pub format: ExportFormat,
    /// Where Parquet segments go (created if missing)
    #[arg(long, value_name = "DIR")]
    pub dir: Option<std::path::PathBuf>,
    /// Only records observed at or after this time (now, 30m, 2h, RFC 3339)
    #[arg(long, value_name = "TIME")]
    pub since: Option<TimeArg>,
    /// Only records observed at or before this time
    #[arg(long, value_name = "TIME")]
    pub until: Option<TimeArg>,
}

/// What `export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    Ndjson,
    Parquet,
}

pub fn run(global: &GlobalArgs, args: ExportArgs) -> CliResult {
    if global.output.as_deref().is_some_and(|o| o != "json") {
        return Err(CliError::usage("export writes NDJSON; -o takes only json"));
    }
    let now = Millis::now();
    let journal = Journal::open(&global.store_path()?)?;
    let cluster = global.cluster_id.as_deref();
    let since = args
        .since
        .as_ref()
        .map(|s| s.at(now, &journal, cluster))
        .transpose()?;
    let until = args
        .until
        .as_ref()
        .map(|u| u.at(now, &journal, cluster))
        .transpose()?;
    if let (Some(s), Some(u)) = (since, until)
        && s > u
    {
        return Err(CliError::usage(format!(
            "--since ({s}) is after --until ({u})"
        )));
    }
    let opts = ExportOptions {
        since: since.map(Millis::as_ms),
        until: until.map(Millis::as_ms),
        cluster: global.cluster_id.clone(),
    };
    if args.format == ExportFormat::Parquet {
        let Some(dir) = &args.dir else {
            return Err(CliError::usage("--format parquet needs --dir DIR"));
        };
        let opts = SegmentOptions {
            records: opts,
            namespace: if global.all_namespaces {
                None
            } else {
                global.namespace.clone()
            },
        };
        let manifest = export_segments(&journal, &opts, dir).map_err(|e| match e {
            SegmentError::Journal(e) => e.into(),
            SegmentError::History(e) => e.into(),
            other => CliError::runtime(other.to_string()),
        })?;
        let rows: u64 = manifest.files.iter().map(|f| f.rows).sum();
        if !global.quiet {
            eprintln!(
                "wrote {} segment(s), {rows} row(s), and {}",
                manifest.files.len(),
                dir.join("manifest.json").display()
            );
        }
        return Ok(());
    }
    if args.dir.is_some() {
        return Err(CliError::usage(
            "--dir is for --format parquet; NDJSON goes to stdout",
        ));
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match export(&journal, &opts, &mut out) {
        Ok(_) => Ok(()),
        Err(crate::journal::JournalError::Io { source, .. })
            if source.kind() == std::io::ErrorKind::BrokenPipe =>
        {
            Err(CliError::closed())
        }
        Err(e) => Err(e.into()),
    }
}
