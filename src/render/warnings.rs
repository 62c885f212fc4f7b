//! What an answer lacks, as people read it (docs/output.md, "Common rules":
//! the `warning:` block on stderr): the stretches the journal does not cover, each with its reason
//! and the streams it hit, within [`TEXT_WIDTH`] columns. Every history
//! command prints it on stderr before its answer.

use super::{Paint, TEXT_WIDTH};
use crate::history::complete::Completeness;

/// What an answer lacks, as lines for people (empty when complete).
pub fn text(completeness: &Completeness, paint: Paint) -> String {
    if completeness.complete() {
        return String::new();
    }
    let mut out = format!(
        "{} this answer is incomplete; the journal does not cover:\n",
        paint.yellow("warning:")
    );
    let clock = super::clock::clock();
    let time = |t: i64| clock.stamp(t);
    for m in completeness.grouped() {
        let line = format!("  {}", m.describe_with(&time));
        if line.chars().count() <= TEXT_WIDTH {
            out.push_str(&line);
            out.push('\n');
            continue;
        }
        // Too wide: the stretch, the reason, then the streams it hit, wrapped.
        let what = format!("  {}", m.what_with(&time));
        match m.when_with(&time) {
            Some(when) if what.chars().count() > TEXT_WIDTH => {
                out.push_str(&format!("  {when}:\n    {}\n", m.reason));
            }
            _ => out.push_str(&format!("{what}\n")),
        }
        out.push_str(&wrap_list("    in ", &m.stream, TEXT_WIDTH));
    }
    out
}

/// A ", "-separated list after `lead`, wrapped at `width` columns between
/// items, continuation lines indented as far as `lead`.
fn wrap_list(lead: &str, list: &str, width: usize) -> String {
    let indent = " ".repeat(lead.chars().count());
    let mut out = String::new();
    let mut line = lead.to_string();
    let items: Vec<&str> = list.split(", ").collect();
    for (i, item) in items.iter().enumerate() {
        let piece = if i + 1 < items.len() {
            format!("{item},")
        } else {
            item.to_string()
        };
        let fresh = line.chars().count() == lead.chars().count();
        if !fresh && line.chars().count() + 1 + piece.chars().count() > width {
            out.push_str(&line);
            out.push('\n');
            line = indent.clone();
        } else if !fresh {
            line.push(' ');
        }
        line.push_str(&piece);
    }
    out.push_str(&line);
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn long_lists_wrap_between_items() {
        let list = (0..12)
            .map(|i| format!("stream{i}.v1.apps@shop"))
            .collect::<Vec<_>>()
            .join(", ");
        let out = super::wrap_list("    in ", &list, 60);
        for line in out.lines() {
            assert!(line.chars().count() <= 60, "{line}");
            assert!(line.starts_with("    "), "{line}");
        }
        assert_eq!(out.matches("stream").count(), 12);
    }
}
