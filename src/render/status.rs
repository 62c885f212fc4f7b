//! `status` as people and scripts read it (docs/output.md, "status"): the
//! journal's path and size, whether a recorder is writing it, its clusters,
//! streams, events, gaps, time span and audit events; JSON and YAML from the
//! same shape.

use super::Paint;
use serde::Serialize;

#[derive(Serialize)]
pub struct ClusterOut {
    pub id: String,
    pub server: String,
    pub context: Option<String>,
}

#[derive(Serialize)]
pub struct RecorderOut {
    pub running: bool,
    pub holder: Option<String>,
}

#[derive(Serialize)]
pub struct RetentionOut {
    /// `--retain`, as a duration (`14d`).
    pub retain: Option<String>,
    pub max_size_bytes: Option<u64>,
    /// The recorder that prunes.
    pub pid: u32,
}

#[derive(Serialize)]
pub struct StatusOut {
    pub store: String,
    pub exists: bool,
    pub size_bytes: u64,
    pub schema_version: i64,
    pub clusters: Vec<ClusterOut>,
    pub streams: u64,
    pub events: u64,
    pub gaps: u64,
    pub first_observed: Option<String>,
    pub last_observed: Option<String>,
    /// The same, for text.
    #[serde(skip)]
    pub first_ms: Option<i64>,
    #[serde(skip)]
    pub last_ms: Option<i64>,
    pub recorder: RecorderOut,
    /// What the running recorder prunes behind itself, when it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retention: Option<RetentionOut>,
    /// Audit events kept (docs/audit.md), over every cluster, and the time
    /// the selected cluster's imported audit logs cover (left out when none
    /// was imported).
    #[serde(skip_serializing_if = "StatusAuditOut::is_empty")]
    pub audit: StatusAuditOut,
}

impl StatusAuditOut {
    fn is_empty(&self) -> bool {
        self.events == 0 && self.coverage.is_empty()
    }
}

#[derive(Serialize)]
pub struct StatusAuditOut {
    pub events: u64,
    #[serde(flatten)]
    pub coverage: super::coverage::AuditOut,
}

/// `status` as text: the journal, the recorder, the clusters, and what the
/// journal holds.
pub fn text(s: &StatusOut, paint: Paint) -> String {
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
            super::human_bytes(s.size_bytes)
        ));
    }
    let recorder = match (&s.recorder.running, &s.recorder.holder) {
        (true, Some(h)) => paint.green(&format!("running ({h})")),
        (true, None) => paint.green("running"),
        (false, _) => "not running".to_string(),
    };
    t.push_str(&format!("Recorder:        {recorder}\n"));
    if let Some(r) = &s.retention {
        let mut keeps: Vec<String> = Vec::new();
        keeps.extend(r.retain.as_ref().map(|d| format!("the last {d}")));
        keeps.extend(
            r.max_size_bytes
                .map(|b| format!("at most {}", super::human_bytes(b))),
        );
        t.push_str(&format!(
            "Retention:       keeps {} (recorder pid {}, pruning behind itself)\n",
            keeps.join(", "),
            r.pid
        ));
    }
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
    let clock = super::clock::clock();
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
