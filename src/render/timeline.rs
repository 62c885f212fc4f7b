//! `timeline` as a table (docs/output.md).

use super::Paint;
use crate::audit::By;
use crate::history::diff::managers;
use crate::history::timeline::{Entry, EntryType};

/// `created`, or `created by alice` when the audit logs tell.
fn with_by(what: &str, by: &By, paint: Paint) -> String {
    match by.text(None) {
        Some(t) => format!("{what}\n{}", paint.dim(&t)),
        None => what.to_string(),
    }
}

/// The timeline as a table: OBSERVED (its zone named in the header), RV,
/// TYPE and CHANGES, within `width` columns (`None`: never shortened).
pub fn table(entries: &[Entry], width: Option<usize>, paint: Paint) -> String {
    // The columns before CHANGES take about 48.
    let room = width.map(|w| w.saturating_sub(48).max(30));
    let clock = crate::render::clock::clock();
    let rows: Vec<Vec<String>> = entries
        .iter()
        .map(|e| {
            let kind = format!(
                "{}{}",
                e.kind.as_str(),
                if e.synthetic && e.kind != EntryType::Gap {
                    "*"
                } else {
                    ""
                }
            );
            let kind = match e.kind {
                EntryType::Gap => paint.yellow(&kind),
                EntryType::Deleted => paint.red(&kind),
                EntryType::Added => paint.green(&kind),
                _ => kind,
            };
            let changes = match (&e.gap, e.kind) {
                // The reason below: the columns before this one take 44 of the 120.
                (Some(g), _) => format!(
                    "not covered until {}\n({})",
                    g.to.map(|t| clock.stamp(t)).unwrap_or_else(|| "now".into()),
                    g.reason
                ),
                (None, EntryType::Baseline) if e.fields.is_empty() => "listed".into(),
                (None, EntryType::Added) if e.fields.is_empty() => with_by("created", &e.by, paint),
                (None, EntryType::Deleted) if e.synthetic => "absent from the relist".into(),
                (None, EntryType::Deleted) => with_by("deleted", &e.by, paint),
                (None, _) if e.fields.is_empty() => "no change outside status".into(),
                (None, _) => e
                    .fields
                    .iter()
                    .map(|f| super::fields::field_lines(&f.change, room).join("\n"))
                    .chain(
                        super::fields::who(&e.by, managers(&e.fields).as_deref())
                            .map(|t| paint.dim(&t)),
                    )
                    .collect::<Vec<_>>()
                    .join("\n"),
            };
            let changes = match e.found_by_relist {
                Some(b) => format!(
                    "{changes}\n{}",
                    paint.yellow(&format!(
                        "(changed at an unknown time between {} and {})",
                        clock.stamp(b.from),
                        clock.stamp_after(b.to, b.from)
                    ))
                ),
                None => changes,
            };
            vec![
                clock.stamp(e.observed_at),
                e.resource_version.clone().unwrap_or_else(|| "-".into()),
                kind,
                changes,
            ]
        })
        .collect();
    // The zone, named once: in the time column's header.
    let observed = format!(
        "OBSERVED ({})",
        entries
            .first()
            .map_or_else(|| clock.zone(0), |e| clock.zone(e.observed_at))
    );
    let mut out = super::table(&[&observed, "RV", "TYPE", "CHANGES"], &rows);
    if entries
        .iter()
        .any(|e| e.synthetic && e.kind != EntryType::Gap)
    {
        out.push_str("* seen by a list (or missing from one), not received as an event\n");
    }
    out
}
