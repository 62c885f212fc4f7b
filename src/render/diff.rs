//! `diff` as text: grouped by object, one line per field, within
//! [`TEXT_WIDTH`] columns (docs/output.md).

use super::values::render_pair;
use super::{Paint, TEXT_WIDTH};
use crate::history::diff::{Change, DiffAnswer, ObjectDiff};

fn who(o: &ObjectDiff, all_namespaces: bool) -> String {
    if all_namespaces && !o.namespace.is_empty() {
        format!("{} {}/{}", o.kind, o.namespace, o.name)
    } else {
        format!("{} {}", o.kind, o.name)
    }
}

/// Grouped by object, one line per field.
pub fn text(
    result: &DiffAnswer,
    namespace: Option<&str>,
    window: &crate::time::TimeWindow,
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
        let width = o
            .fields
            .iter()
            .map(|f| f.change.path.to_string().chars().count())
            .max()
            .unwrap_or(0);
        for f in &o.fields {
            let path = f.change.path.to_string();
            let pad = width - path.chars().count();
            let manager = super::fields::who(&f.by, f.manager.as_deref())
                .map(|w| format!("  {w}"))
                .unwrap_or_default();
            let (before, after) = (f.change.before.as_ref(), f.change.after.as_ref());
            let (b, a) = render_pair(before, after, 60);
            let line = format!("  {path}{}  {b} -> {a}", " ".repeat(pad));
            if line.chars().count() + manager.chars().count() <= TEXT_WIDTH {
                out.push_str(&format!("{line}{}\n", paint.dim(&manager)));
            } else {
                // Too wide for one line: the path, then the values below it,
                // each given half of what the line leaves; who made it after
                // them, or on a line of its own when it would squeeze them.
                let own_line = manager.chars().count() > 30;
                let taken = if own_line { 0 } else { manager.chars().count() };
                let room = TEXT_WIDTH.saturating_sub(10 + taken);
                let (b, a) = render_pair(before, after, (room / 2).clamp(16, 60));
                if own_line {
                    out.push_str(&format!(
                        "  {path}\n      {b} -> {a}\n     {}\n",
                        paint.dim(&manager)
                    ));
                } else {
                    out.push_str(&format!(
                        "  {path}\n      {b} -> {a}{}\n",
                        paint.dim(&manager)
                    ));
                }
            }
        }
    }
    out.push_str(&format!("\n{} object(s) changed.\n", result.objects.len()));
    out
}
