//! `audit import FILE...`: who made the recorded changes, from kube-apiserver
//! audit logs (docs/audit.md).

use super::args::GlobalArgs;
use super::reader::select_cluster;
use crate::audit::parse::Skip;
use crate::audit::read::{ReadError, Scan};
use crate::audit_import::{ImportError, read_log};
use crate::error::{CliError, CliResult};
use crate::journal::Journal;
use crate::journal::audit::{AuditImport, Stored};
use crate::render::{self, Format};
use crate::time::Millis;
use clap::{Args, Subcommand};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Join kube-apiserver audit logs to the history: who made each change
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  kubectl krply audit import /var/log/kubernetes/audit/audit.log
  kubectl krply diff --since 30m --by alice@example.com

After an import, diff, log, timeline and get name who made each change beside its
field manager: exact when the audit event carries the change's resourceVersion
(RequestResponse level), likely when one write alone fits (Metadata level), and
unknown, with the reason, otherwise. See docs/audit.md.")]
pub struct AuditArgs {
    #[command(subcommand)]
    pub command: AuditCommand,
}

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    Import(ImportArgs),
}

/// Import audit logs (audit.k8s.io/v1 Event lines, plain or gzip) for the current context's cluster
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  # The live log and its rotated, compressed predecessors
  kubectl krply audit import /var/log/kubernetes/audit/audit.log /var/log/kubernetes/audit/audit-*.log.gz

  # A log of another recorded cluster than the current context's
  kubectl krply audit import audit.log --cluster-id 127.0.0.1-3f2a9b1c

Only what names the actor of a change is kept: the user, groups, impersonator,
user agent, source IPs, auditID, verb, object, time and the response's
resourceVersion; never a request or response body. Writes on objects the journal
never recorded are counted and skipped. Importing a file again stores nothing new.
Then `diff`, `log`, `timeline` and `get --at` say who made each change.")]
pub struct ImportArgs {
    /// Audit log files (kube-apiserver --audit-log-path, JSON lines; rotated or gzip)
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
}

pub fn run(global: &GlobalArgs, args: AuditArgs) -> CliResult {
    match args.command {
        AuditCommand::Import(a) => import(global, a),
    }
}

fn import(global: &GlobalArgs, args: ImportArgs) -> CliResult {
    let format = global.format(Format::Text, &[Format::Text, Format::Json, Format::Yaml])?;
    let journal = Journal::open(&global.store_path()?)?;
    let cluster = select_cluster(&journal, global)?;
    let mut importer = AuditImport::new(&journal, &cluster.id)?;
    let mut scans: Vec<(PathBuf, Scan)> = Vec::new();
    // Every file is read (and checked) before anything is stored: bad input
    // stores nothing.
    for path in &args.files {
        let scan = read_log(&mut importer, path).map_err(|e| match e {
            ImportError::Read(e) => read_error(e),
            ImportError::Journal(e) => e.into(),
        })?;
        scans.push((path.clone(), scan));
    }
    let unrecorded = importer.unrecorded;
    let stored = importer.store()?;
    let out = summary(&cluster.id, &scans, &stored, unrecorded);
    let text = match format {
        Format::Json | Format::Yaml => render::structured(format, &out),
        _ => render::audit::text(&out, &journal.audit_coverage(&cluster.id)?),
    };
    super::out(&text)
}

fn read_error(e: ReadError) -> CliError {
    let hint = match &e {
        ReadError::NotAuditLog { .. } => Some(
            "kube-apiserver writes audit logs with --audit-log-path and --audit-log-format=json (docs/audit.md); nothing was imported",
        ),
        ReadError::Directory(_) => Some("name the log files, e.g. DIR/audit*.log*"),
        ReadError::NotGzip { .. } | ReadError::BadGzip { .. } => Some("nothing was imported"),
        ReadError::Io { .. } => None,
    };
    let err = CliError::runtime(e.to_string());
    match hint {
        Some(h) => err.hint(h),
        None => err,
    }
    .caused_by(e)
}

fn summary(
    cluster: &str,
    scans: &[(PathBuf, Scan)],
    stored: &Stored,
    unrecorded: u64,
) -> render::audit::ImportOut {
    let mut skipped: BTreeMap<Skip, u64> = BTreeMap::new();
    for (_, s) in scans {
        for (why, n) in &s.skipped {
            *skipped.entry(*why).or_default() += n;
        }
    }
    let time = |t: Option<i64>| t.map(|t| Millis::from_ms(t).to_string());
    render::audit::ImportOut {
        cluster: cluster.to_string(),
        files: scans
            .iter()
            .map(|(p, s)| render::audit::FileOut {
                path: p.display().to_string(),
                lines: s.lines,
                writes: s.writes,
                truncated: s.truncated,
                from: time(s.first_at),
                to: time(s.last_at),
            })
            .collect(),
        stored: stored.new,
        known: stored.known,
        unrecorded,
        skipped: skipped
            .into_iter()
            .map(|(k, v)| (k.as_str().to_string(), v))
            .collect(),
        truncated: scans.iter().map(|(_, s)| s.truncated).sum(),
    }
}
