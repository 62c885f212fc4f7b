//! `log` as text: a line per change, oldest first, within the width (a line
//! more per field where they do not fit on it), with the date (and zone)
//! where it changes (docs/output.md).

use super::Paint;
use super::fields::{fields_after, shorten};
use crate::history::log::{LogAnswer, LogEntry, LogType};

/// The date and `HH:MM:SS.mmm` of a time, in the zone text is shown in (the
/// date is printed when it changes).
fn clock(t: i64) -> (String, String) {
    let c = crate::render::clock::clock();
    (c.date(t), c.time(t))
}

/// A line per entry, oldest first, within `width` columns (`None`: never
/// shortened).
pub fn text(
    result: &LogAnswer,
    all_namespaces: bool,
    width: Option<usize>,
    paint: Paint,
) -> String {
    if result.entries.is_empty() {
        return if result.completeness.nothing_recorded() {
            "Nothing was ever recorded here: this journal cannot say what happened.\n".into()
        } else if result.completeness.complete() {
            "No changes recorded.\n".into()
        } else {
            "No changes recorded in the time that was watched (see the warning for the rest).\n"
                .into()
        };
    }
    entries(
        &result.entries,
        &mut String::new(),
        all_namespaces,
        width,
        paint,
    )
}

/// The lines of `entries`, with a date line where the date differs from
/// `day` (the date of the line before; updated): what `text` prints, and
/// what `log -f` prints look after look.
pub fn entries(
    entries: &[LogEntry],
    day: &mut String,
    all_namespaces: bool,
    width: Option<usize>,
    paint: Paint,
) -> String {
    let mut out = String::new();
    for e in entries {
        let (date, clock) = clock(e.observed_at);
        if date != *day {
            let zone = crate::render::clock::clock().zone(e.observed_at);
            out.push_str(&paint.dim(&format!("{date} ({zone})\n")));
            *day = date;
        }
        out.push_str(&line(e, &clock, all_namespaces, width, paint));
        out.push('\n');
    }
    out
}

fn line(
    e: &LogEntry,
    clock: &str,
    all_namespaces: bool,
    width: Option<usize>,
    paint: Paint,
) -> String {
    let label = format!("{:<8}", e.kind.as_str());
    let label = match e.kind {
        LogType::Added => paint.green(&label),
        LogType::Deleted => paint.red(&label),
        LogType::Relist(_) | LogType::Gap => paint.yellow(&label),
        LogType::Modified => label,
    };
    if let Some((g, streams)) = &e.gap {
        let which = match streams.as_slice() {
            [one] => one.clone(),
            many => format!("{} streams", many.len()),
        };
        let text = match g.to {
            Some(to) => format!(
                "{which} not covered until {}: {}",
                clock_of(to, e.observed_at),
                g.reason
            ),
            None => format!("{which} not covered from here on: {}", g.reason),
        };
        let text = match width {
            Some(w) => shorten(&text, w.saturating_sub(24).max(24)),
            None => text,
        };
        return format!("{clock}  {label}  {text}");
    }
    let who = if all_namespaces && !e.namespace.is_empty() {
        format!("{} {}/{}", e.object_kind, e.namespace, e.name)
    } else {
        format!("{} {}", e.object_kind, e.name)
    };
    let mut head = format!("{clock}  {label}  {}", paint.bold(&who));
    let mut used = clock.chars().count() + 2 + 8 + 2 + who.chars().count();
    if let Some(b) = e.between {
        let between = format!(
            "  between {} and {}",
            clock_of(b.from, e.observed_at),
            clock_of(b.to, e.observed_at)
        );
        used += between.chars().count();
        head.push_str(&paint.yellow(&between));
    }
    let room = width.map_or(usize::MAX, |w| w.saturating_sub(used + 2));
    let what = match e.kind.change() {
        _ if !e.fields.is_empty() => {
            fields_after(&e.fields, room, clock.chars().count() + 2, width)
        }
        Some(what @ ("added" | "deleted")) => {
            let did = if what == "added" {
                "created"
            } else {
                "deleted"
            };
            match e.by.text(None) {
                Some(by) => format!("{did} {}", paint.dim(&by)),
                None => did.into(),
            }
        }
        _ => String::new(),
    };
    match what.as_str() {
        "" => head,
        w if w.starts_with('\n') => format!("{head}{w}"),
        w => format!("{head}  {w}"),
    }
}

/// A time as `HH:MM:SS.mmm`, with its date when that differs from `near`'s.
fn clock_of(t: i64, near: i64) -> String {
    let (date, c) = clock(t);
    if date == clock(near).0 {
        c
    } else {
        format!("{date} {c}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::log::LogEntry;
    use crate::render::fields::examples;

    fn entry(at: i64, name: &str, fields: Vec<crate::history::diff::Field>) -> LogEntry {
        LogEntry {
            observed_at: at,
            kind: LogType::Modified,
            object_kind: "Deployment".into(),
            namespace: "shop".into(),
            name: name.into(),
            resource_version: Some("42".into()),
            between: None,
            fields,
            gap: None,
            by: Default::default(),
            stream: "deployments.v1.apps@shop".into(),
            seq: 1,
        }
    }

    #[test]
    fn values_stay_readable_at_80_and_120_columns() {
        crate::render::clock::use_zone(true);
        let answer = LogAnswer {
            entries: vec![
                entry(1_796_121_600_000, "frontend", examples::two_fields()),
                entry(
                    1_796_121_601_000,
                    "productcatalogservice",
                    examples::image_change(),
                ),
                entry(
                    1_796_121_602_000,
                    "cartservice",
                    examples::two_fields()[..1].to_vec(),
                ),
            ],
            completeness: Default::default(),
        };
        let paint = Paint { enabled: false };
        for width in [80, 120] {
            let text = text(&answer, false, Some(width), paint);
            assert!(text.lines().all(|l| l.chars().count() <= width), "{text}");
            assert!(!text.contains("more"), "{text}");
            insta::assert_snapshot!(format!("log_at_{width}_columns"), text);
        }
        let wide = text(&answer, false, None, paint);
        assert!(!wide.contains('…'), "{wide}");
    }
}
