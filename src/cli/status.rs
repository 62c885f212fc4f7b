//! `status`: the journal at a glance.

use super::args::GlobalArgs;
use crate::error::CliResult;
use crate::journal::{Journal, JournalError};
use crate::render::{self, Format};
use crate::time::Millis;
use clap::Args;

/// Show the journal: path, size, clusters, streams, events, gaps and time span
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  kubectl krply status\n  kubectl krply status -o json\n  kubectl krply status --store /tmp/incident.db"
)]
pub struct StatusArgs {}

pub fn run(global: &GlobalArgs, _args: StatusArgs) -> CliResult {
    let format = global.format(
        Format::Text,
        &[Format::Text, Format::Table, Format::Json, Format::Yaml],
    )?;
    let path = global.store_path()?;
    // Every recorder writing the journal now (several may, each its own streams).
    let holders = crate::journal::lock::holders(&path);
    let running = !holders.is_empty();
    let holder = running.then(|| holders.join("; "));
    let mut out = render::status::StatusOut {
        store: path.display().to_string(),
        exists: false,
        size_bytes: 0,
        schema_version: crate::journal::schema::SCHEMA_VERSION,
        clusters: vec![],
        streams: 0,
        events: 0,
        gaps: 0,
        first_observed: None,
        last_observed: None,
        first_ms: None,
        last_ms: None,
        recorder: render::status::RecorderOut { running, holder },
        retention: None,
        audit: render::status::StatusAuditOut {
            events: 0,
            coverage: crate::render::coverage::AuditOut::default(),
        },
    };
    // The selected cluster's streams as time bars, under the text.
    let mut bars = String::new();
    match Journal::open(&path) {
        Ok(journal) => {
            // One snapshot for every figure, so that they agree with each other
            // while a recorder writes; and one shared lock for them all
            // instead of one a statement.
            journal.begin_read()?;
            let s = journal.status()?;
            let cluster = super::reader::status_cluster(&journal, &s.clusters, global);
            out.exists = true;
            out.size_bytes = s.size_bytes;
            out.clusters = s
                .clusters
                .into_iter()
                .map(|c| render::status::ClusterOut {
                    id: c.id,
                    server: c.server,
                    context: c.context,
                })
                .collect();
            out.streams = s.streams;
            out.events = s.events;
            out.gaps = s.gaps;
            out.first_observed = s.first_observed.map(|t| Millis::from_ms(t).to_string());
            out.last_observed = s.last_observed.map(|t| Millis::from_ms(t).to_string());
            (out.first_ms, out.last_ms) = (s.first_observed, s.last_observed);
            out.audit.events = journal.audit_event_count()?;
            // Said by a recorder that prunes behind itself; one that was
            // killed could not take it back.
            out.retention =
                journal
                    .retention()?
                    .filter(|_| running)
                    .map(|r| render::status::RetentionOut {
                        retain: r.retain_ms.map(|ms| {
                            crate::time::format_duration(std::time::Duration::from_millis(ms))
                        }),
                        max_size_bytes: r.max_size,
                        pid: r.pid,
                    });
            if let Some(cluster) = cluster {
                out.audit.coverage = crate::render::coverage::AuditOut::of(&journal, &cluster.id)?;
                // Only the text shows them.
                if !matches!(format, Format::Json | Format::Yaml) {
                    bars = crate::render::coverage::bars_of(&journal, &cluster.id, global.paint())?;
                }
            }
        }
        Err(JournalError::Missing(_)) => {}
        Err(e) => return Err(e.into()),
    }
    // Under `mcp`: the journal's own account is complete when it exists and
    // holds no gap; a gap is for `coverage` to place.
    let mut warnings = Vec::new();
    if !out.exists {
        warnings.push(format!(
            "no journal at {}: nothing was recorded there",
            out.store
        ));
    }
    if out.gaps > 0 {
        warnings.push(format!(
            "the recording has {} gap(s): `coverage` says which streams and when",
            out.gaps
        ));
    }
    super::sink::report(warnings.is_empty(), warnings);
    super::out(&match format {
        Format::Json => render::json(&out),
        Format::Yaml => render::yaml(&out),
        _ if bars.is_empty() => render::status::text(&out, global.paint()),
        _ => format!("{}\n{bars}", render::status::text(&out, global.paint())),
    })
}
