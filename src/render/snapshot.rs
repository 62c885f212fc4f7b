//! `snapshot` as people and scripts read it (docs/output.md, "snapshot"):
//! a namespace's state at one time, with each stream's watermark (the
//! resourceVersion it knew then) and whether it is complete; the saved ones
//! as a table.

use super::Paint;
use crate::journal::snapshots::SavedSnapshot;
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Serialize, Deserialize)]
pub struct Watermark {
    pub stream: String,
    pub resource_version: Option<String>,
    pub objects: usize,
    pub complete: bool,
}

#[derive(Serialize, Deserialize)]
pub struct SnapshotOut {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub cluster: String,
    pub namespace: Option<String>,
    pub at: String,
    pub complete: bool,
    pub missing: Vec<String>,
    pub warnings: Vec<String>,
    pub watermarks: Vec<Watermark>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub items: Vec<Value>,
}

/// A snapshot as a table: what it is of, whether it is complete, and each
/// stream's watermark.
pub fn table(out: &SnapshotOut, paint: Paint) -> String {
    let scope = match &out.namespace {
        Some(ns) => format!("namespace {ns}"),
        None => "every namespace".into(),
    };
    let verdict = if out.complete {
        paint.green("complete")
    } else {
        paint.yellow("incomplete")
    };
    let mut text = match &out.name {
        Some(name) => format!(
            "Saved snapshot \"{name}\" of {scope} at {} ({verdict})\n",
            out.at
        ),
        None => format!("Snapshot of {scope} at {} ({verdict})\n", out.at),
    };
    if out.watermarks.is_empty() {
        text.push_str("Nothing was ever recorded here: this journal cannot say what it held.\n");
        return text;
    }
    let rows: Vec<Vec<String>> = out
        .watermarks
        .iter()
        .map(|w| {
            vec![
                w.stream.clone(),
                w.resource_version.clone().unwrap_or_else(|| "-".into()),
                w.objects.to_string(),
                if w.complete {
                    "yes".into()
                } else {
                    paint.yellow("no")
                },
            ]
        })
        .collect();
    text.push_str(&super::table(
        &["STREAM", "RESOURCE-VERSION", "OBJECTS", "COMPLETE"],
        &rows,
    ));
    text
}

/// The saved snapshots as a table, each with what its saved answer says
/// (`parsed`, in the same order; one that cannot be read shows `-`).
pub fn saved_table(saved: &[SavedSnapshot], parsed: &[SnapshotOut]) -> String {
    let clock = super::clock::clock();
    let rows: Vec<Vec<String>> = saved
        .iter()
        .zip(parsed.iter().map(Some).chain(std::iter::repeat(None)))
        .map(|(s, p)| {
            vec![
                s.name.clone(),
                clock.stamp(s.at),
                p.and_then(|p| p.namespace.clone())
                    .unwrap_or_else(|| "(all)".into()),
                p.map_or("-".into(), |p| {
                    p.watermarks
                        .iter()
                        .map(|w| w.objects)
                        .sum::<usize>()
                        .to_string()
                }),
                p.map_or("-".into(), |p| {
                    if p.complete {
                        "yes".into()
                    } else {
                        "no".into()
                    }
                }),
                clock.stamp(s.created_at),
            ]
        })
        .collect();
    let at = saved.first().map_or_else(
        || "AT".to_string(),
        |s| format!("AT ({})", clock.zone(s.at)),
    );
    super::table(
        &["NAME", &at, "NAMESPACE", "OBJECTS", "COMPLETE", "SAVED"],
        &rows,
    )
}
