//! `audit import` as people and scripts read it (docs/output.md, "audit
//! import"): the files read, the writes stored, known or skipped and why,
//! and the time the cluster's audit logs now cover.

use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Serialize)]
pub struct FileOut {
    pub path: String,
    pub lines: u64,
    pub writes: u64,
    pub truncated: u64,
    pub from: Option<String>,
    pub to: Option<String>,
}

#[derive(Serialize)]
pub struct ImportOut {
    pub cluster: String,
    pub files: Vec<FileOut>,
    /// Writes on recorded objects new to the journal.
    pub stored: u64,
    /// Writes the journal held already.
    pub known: u64,
    /// Writes on objects the journal never recorded.
    pub unrecorded: u64,
    /// Audit events that are no write krply can place, by why.
    pub skipped: BTreeMap<String, u64>,
    pub truncated: u64,
}

/// What `audit import` did, and the time the cluster's imported audit logs
/// now cover (`coverage`, as the journal keeps it).
pub fn text(out: &ImportOut, coverage: &[(i64, i64)]) -> String {
    let lines: u64 = out.files.iter().map(|f| f.lines).sum();
    let mut s = format!(
        "imported {} file(s), {lines} line(s), for cluster {}:\n",
        out.files.len(),
        out.cluster
    );
    s.push_str(&format!(
        "  {} write(s) on recorded objects stored, {} already known\n",
        out.stored, out.known
    ));
    if out.unrecorded > 0 {
        s.push_str(&format!(
            "  {} write(s) on objects this journal never recorded, skipped\n",
            out.unrecorded
        ));
    }
    for (why, n) in &out.skipped {
        s.push_str(&format!("  {n} event(s) skipped: {why}\n"));
    }
    if out.truncated > 0 {
        s.push_str(&format!(
            "  {} last line(s) cut short, skipped\n",
            out.truncated
        ));
    }
    let merged = crate::audit::join::merge(coverage);
    if merged.is_empty() {
        s.push_str("audit logs cover no time of this cluster yet\n");
    } else {
        let spans: Vec<String> = merged
            .iter()
            .map(|&(f, t)| {
                let clock = super::clock::clock();
                format!("{} to {}", clock.stamp(f), clock.stamp_after(t, f))
            })
            .collect();
        let zone = super::clock::clock().zone(merged[0].0);
        s.push_str(&format!(
            "audit logs now cover {} ({zone})\n",
            spans.join(", ")
        ));
    }
    s
}
