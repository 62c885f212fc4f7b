//! `status`: the journal at a glance.

use super::args::GlobalArgs;
use crate::error::CliResult;
use crate::journal::{Journal, JournalError};
use crate::render::{self, Format};
use crate::time::Millis;
use clap::Args;
use serde::Serialize;

/// Show the journal: path, size, clusters, streams, events, gaps and time span
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  kubectl krply status\n  kubectl krply status -o json\n  kubectl krply status --store /tmp/incident.db"
)]
pub struct StatusArgs {}

#[derive(Serialize)]
struct ClusterOut {
    id: String,
    server: String,
    context: Option<String>,
}

#[derive(Serialize)]
struct RecorderOut {
    running: bool,
    holder: Option<String>,
}

#[derive(Serialize)]
struct StatusOut {
    store: String,
    exists: bool,
    size_bytes: u64,
    schema_version: i64,
    clusters: Vec<ClusterOut>,
    streams: u64,
    events: u64,
    gaps: u64,
    first_observed: Option<String>,
    last_observed: Option<String>,
    /// The same, for text.
    #[serde(skip)]
    first_ms: Option<i64>,
    #[serde(skip)]
    last_ms: Option<i64>,
    recorder: RecorderOut,
    /// Audit events kept (docs/audit.md), over every cluster, and the time
    /// the selected cluster's imported audit logs cover (left out when none
    /// was imported).
    #[serde(skip_serializing_if = "StatusAuditOut::is_empty")]
    audit: StatusAuditOut,
}

impl StatusAuditOut {
    fn is_empty(&self) -> bool {
        self.events == 0 && self.coverage.is_empty()
    }
}

#[derive(Serialize)]
struct StatusAuditOut {
    events: u64,
    #[serde(flatten)]
    coverage: crate::render::coverage::AuditOut,
}

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
    let mut out = StatusOut {
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
        recorder: RecorderOut { running, holder },
        audit: StatusAuditOut {
            events: 0,
            coverage: crate::render::coverage::AuditOut::default(),
        },
    };
    // The selected cluster's streams as time bars, under the text.
    let mut bars = String::new();
    match Journal::open(&path) {
        Ok(journal) => {
            let s = journal.status()?;
            out.exists = true;
            out.size_bytes = s.size_bytes;
            out.clusters = s
                .clusters
                .into_iter()
                .map(|c| ClusterOut {
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
            // The cluster answers are about, when one is selected.
            if let Ok(cluster) = super::reader::select_cluster(&journal, global) {
                out.audit.coverage = crate::render::coverage::AuditOut::of(&journal, &cluster.id)?;
                bars = crate::render::coverage::bars_of(&journal, &cluster.id, global.paint())?;
            }
        }
        Err(JournalError::Missing(_)) => {}
        Err(e) => return Err(e.into()),
    }
    super::out(&match format {
        Format::Json => render::json(&out),
        Format::Yaml => render::yaml(&out),
        _ if bars.is_empty() => text(&out, global.paint()),
        _ => format!("{}\n{bars}", text(&out, global.paint())),
    })
}

fn text(s: &StatusOut, paint: render::Paint) -> String {
    let mut t = String::new();
    if !s.exists {
        t.push_str(&format!(
            "Journal:         {} (nothing recorded yet)\n",
            s.store
        ));
    } else {
        t.push_str(&format!(
            "Journal:         {} ({})\n",
            s.store,
            render::human_bytes(s.size_bytes)
        ));
    }
    let recorder = match (&s.recorder.running, &s.recorder.holder) {
        (true, Some(h)) => paint.green(&format!("running ({h})")),
        (true, None) => paint.green("running"),
        (false, _) => "not running".to_string(),
    };
    t.push_str(&format!("Recorder:        {recorder}\n"));
    if !s.exists {
        return t;
    }
    if s.clusters.is_empty() {
        t.push_str("Clusters:        none\n");
    }
    for (i, c) in s.clusters.iter().enumerate() {
        let label = if i == 0 { "Clusters:" } else { "" };
        let ctx = c
            .context
            .as_deref()
            .map(|c| format!(" (context {c})"))
            .unwrap_or_default();
        t.push_str(&format!("{label:<17}{}  {}{ctx}\n", c.id, c.server));
    }
    t.push_str(&format!("Streams:         {}\n", s.streams));
    t.push_str(&format!("Events:          {}\n", s.events));
    let gaps = if s.gaps > 0 {
        paint.yellow(&s.gaps.to_string())
    } else {
        s.gaps.to_string()
    };
    t.push_str(&format!("Gaps:            {gaps}\n"));
    let clock = render::clock::clock();
    let when = |t: Option<i64>| t.map_or_else(|| "-".to_string(), |t| clock.stamp(t));
    t.push_str(&format!("First observed:  {}\n", when(s.first_ms)));
    t.push_str(&format!(
        "Last observed:   {}{}\n",
        when(s.last_ms),
        s.last_ms
            .map(|t| format!(" ({})", clock.zone(t)))
            .unwrap_or_default()
    ));
    if s.audit.events > 0 || !s.audit.coverage.covered.is_empty() {
        t.push_str(&format!("Audit events:    {}\n", s.audit.events));
        t.push_str(&s.audit.coverage.line());
    }
    t
}
