//! `diff` as text: grouped by object, a line per field within the width, or
//! the field's path and then its old and new values on lines of their own
//! (docs/output.md).

use super::Paint;
use super::values::render_pair;
use crate::history::diff::{Change, DiffAnswer, ObjectDiff};

fn who(o: &ObjectDiff, all_namespaces: bool) -> String {
    if all_namespaces && !o.namespace.is_empty() {
        format!("{} {}/{}", o.kind, o.namespace, o.name)
    } else {
        format!("{} {}", o.kind, o.name)
    }
}

/// Grouped by object, a line per field that fits in `width` columns (`None`:
/// never shortened).
pub fn text(
    result: &DiffAnswer,
    namespace: Option<&str>,
    window: &crate::time::TimeWindow,
    width: Option<usize>,
    paint: Paint,
) -> String {
    let scope = match namespace {
        Some(ns) => format!("namespace {ns}"),
        None => "every namespace".to_string(),
    };
    let clock = crate::render::clock::clock();
    let (since, until) = (window.since().as_ms(), window.until().as_ms());
    let mut out = format!(
        "Changes in {scope} from {} to {} ({}):\n",
        clock.stamp(since),
        clock.stamp_after(until, since),
        clock.zone(until)
    );
    if result.objects.is_empty() {
        out.push_str(if result.completeness.nothing_recorded() {
            "\nNothing was ever recorded here: this journal cannot say what changed.\n"
        } else if result.completeness.complete() {
            "\nNo changes recorded.\n"
        } else {
            "\nNo changes recorded in the time that was watched (see the warning for the rest).\n"
        });
        return out;
    }
    let all = namespace.is_none();
    for o in &result.objects {
        let label = match o.change {
            Change::Added => paint.green("added"),
            Change::Deleted => paint.red("deleted"),
            Change::Modified => paint.yellow("modified"),
        };
        let by =
            o.by.text(None)
                .map(|t| format!("  {}", paint.dim(&t)))
                .unwrap_or_default();
        out.push_str(&format!("\n{}  {label}{by}\n", paint.bold(&who(o, all))));
        let happened = match o.change {
            Change::Added => "created",
            Change::Deleted => "deleted",
            Change::Modified => "changed",
        };
        // When a change only a relist found happened: somewhere in its stretch.
        let unknown = |b: crate::history::Between| {
            format!(
                "at an unknown time between {} and {} (found by a relist)",
                clock.stamp(b.from),
                clock.stamp_after(b.to, b.from)
            )
        };
        if let Some(b) = o.found_by_relist {
            let line = format!("{happened} {}", unknown(b));
            out.push_str(&format!("  {}\n", paint.yellow(&line)));
        } else if let Some(b) = o.changed_between {
            // Created while a watch saw it, then changed while nobody did.
            let created = o
                .observed_at
                .map(|t| format!("{happened} at {} (watched); ", clock.stamp(t)))
                .unwrap_or_default();
            let line = format!("{created}then changed {}", unknown(b));
            out.push_str(&format!("  {}\n", paint.yellow(&line)));
        }
        let path_width = o
            .fields
            .iter()
            .map(|f| f.change.path.to_string().chars().count())
            .max()
            .unwrap_or(0);
        for f in &o.fields {
            let path = f.change.path.to_string();
            let pad = path_width - path.chars().count();
            let manager = super::fields::who(&f.by, f.manager.as_deref())
                .map(|w| format!("  {w}"))
                .unwrap_or_default();
            let (before, after) = (f.change.before.as_ref(), f.change.after.as_ref());
            let (b, a) = render_pair(before, after, 0);
            let line = format!("  {path}{}  {b} -> {a}", " ".repeat(pad));
            match width {
                Some(w) if line.chars().count() + manager.chars().count() > w => {
                    // Too wide for one line: the path with who made it, then
                    // the old and new values on lines of their own, each whole
                    // up to the width, else keeping its tail and what differs.
                    let (b, a) = render_pair(before, after, w.saturating_sub(8).max(16));
                    out.push_str(&format!(
                        "  {path}{}\n    - {b}\n    + {a}\n",
                        paint.dim(&manager)
                    ));
                }
                _ => out.push_str(&format!("{line}{}\n", paint.dim(&manager))),
            }
        }
    }
    out.push_str(&format!("\n{} object(s) changed.\n", result.objects.len()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::diff::ObjectDiff;
    use crate::render::fields::examples;
    use crate::time::{Millis, TimeWindow};

    fn object(name: &str, fields: Vec<crate::history::diff::Field>) -> ObjectDiff {
        ObjectDiff {
            kind: "Deployment".into(),
            api_version: "apps/v1".into(),
            namespace: "shop".into(),
            name: name.into(),
            stream: "deployments.v1.apps@shop".into(),
            change: Change::Modified,
            before: None,
            after: None,
            fields,
            found_by_relist: None,
            observed_at: None,
            changed_between: None,
            object_id: 1,
            by: Default::default(),
        }
    }

    #[test]
    fn values_stay_readable_at_80_and_120_columns() {
        crate::render::clock::use_zone(true);
        let answer = DiffAnswer {
            objects: vec![
                Box::new(object("frontend", examples::two_fields())),
                Box::new(object("productcatalogservice", examples::image_change())),
            ],
            completeness: Default::default(),
        };
        let window = TimeWindow::new(
            Millis::from_ms(1_796_121_600_000),
            Millis::from_ms(1_796_125_200_000),
        )
        .unwrap();
        for width in [80, 120] {
            let text = text(
                &answer,
                Some("shop"),
                &window,
                Some(width),
                Paint { enabled: false },
            );
            assert!(text.lines().all(|l| l.chars().count() <= width), "{text}");
            insta::assert_snapshot!(format!("diff_at_{width}_columns"), text);
        }
        // -o wide: every value whole, one line per field.
        let wide = text(
            &answer,
            Some("shop"),
            &window,
            None,
            Paint { enabled: false },
        );
        assert!(!wide.contains('…') && !wide.contains("\n    - "), "{wide}");
    }
}
