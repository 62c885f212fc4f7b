//! A change's fields on one line of text, as `log`, `timeline` and the live
//! display of `record` show them: each field's path and its values shortened
//! around what differs, `+N more` for the fields that did not fit, then who
//! made them (docs/output.md).

use super::values::render_pair;
use crate::audit::By;
use crate::history::diff::{Field, managers};

/// The changed fields with their old and new values, shortened around what
/// differs, then the managers, within `room` characters.
pub fn fields_line(fields: &[Field], room: usize) -> String {
    let owners = owners(fields).map(|o| format!("  {o}")).unwrap_or_default();
    let room = room.saturating_sub(owners.chars().count()).max(24);
    let mut parts: Vec<String> = Vec::new();
    let mut left = room;
    for (i, f) in fields.iter().enumerate() {
        // Room kept for "; +N more" while fields remain after this one.
        let more = if i + 1 < fields.len() { 12 } else { 0 };
        let path = f.change.path.to_string();
        let values = left.saturating_sub(path.chars().count() + 6 + more);
        if i > 0 && values < 16 {
            parts.push(format!("+{} more", fields.len() - i));
            break;
        }
        let (before, after) = (f.change.before.as_ref(), f.change.after.as_ref());
        // A short side (`<none>`, a number) leaves its room to the other.
        let (b, a) = render_pair(before, after, 0);
        let short = b.chars().count().min(a.chars().count());
        let (b, a) = if short <= values / 2 {
            render_pair(before, after, values.saturating_sub(short).max(8))
        } else {
            render_pair(before, after, (values / 2).max(8))
        };
        let part = shorten(&format!("{path}: {b} -> {a}"), left.saturating_sub(more));
        left = left.saturating_sub(part.chars().count() + 2);
        parts.push(part);
    }
    format!("{}{owners}", parts.join("; "))
}

/// [`fields_line`] for the rest of a line that has `room` columns left: on
/// that line when the first field can show its values there, else (starting
/// with a newline) on a line of its own, indented by `indent`, within `width`.
pub fn fields_after(fields: &[Field], room: usize, indent: usize, width: usize) -> String {
    let owners = owners(fields).map_or(0, |o| o.chars().count() + 2);
    let more = if fields.len() > 1 { 12 } else { 0 };
    let first = fields
        .first()
        .map_or(0, |f| f.change.path.to_string().chars().count() + 30);
    if room >= first + owners + more {
        fields_line(fields, room)
    } else {
        format!(
            "\n{}{}",
            " ".repeat(indent),
            fields_line(fields, width.saturating_sub(indent))
        )
    }
}

/// `text` cut to `max` characters with a `…` at the end.
pub fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Who made a change's fields: `by alice (kubectl-edit)` when the audit logs
/// tell (the fields of one version share their actor), else the managers,
/// `(kubectl-edit)`.
fn owners(fields: &[Field]) -> Option<String> {
    who(
        fields.first().map(|f| &f.by).unwrap_or(&By::default()),
        managers(fields).as_deref(),
    )
}

/// The one way every renderer names who made a change (docs/output.md, "One
/// vocabulary"): a field manager always in parentheses, `(kubectl-set)`;
/// `by` only before a user an imported audit log names,
/// `by alice@example.com (kubectl-scale)`, `likely by ...`, or `by ?` and
/// why none could be named.
pub fn who(by: &By, manager: Option<&str>) -> Option<String> {
    by.text(manager)
        .or_else(|| manager.map(|m| format!("({m})")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::By;
    use crate::diff::{FieldChange, parse_path};
    use serde_json::json;

    fn field(path: &str, before: serde_json::Value, after: serde_json::Value) -> Field {
        Field {
            change: FieldChange {
                path: parse_path(path).expect("path"),
                before: Some(before),
                after: Some(after),
            },
            manager: Some("kubectl-edit".into()),
            by: By::default(),
        }
    }

    #[test]
    fn fields_fit_their_room_and_count_what_did_not() {
        let fields: Vec<Field> = (0..6)
            .map(|i| {
                field(
                    &format!("data.key{i}"),
                    json!("a-rather-long-old-value-that-is-long"),
                    json!("a-rather-long-new-value-that-is-long"),
                )
            })
            .collect();
        let text = fields_line(&fields, 80);
        assert!(text.chars().count() <= 80, "{text}");
        assert!(text.contains("+"), "{text}");
        assert!(text.ends_with("(kubectl-edit)"), "{text}");
    }

    #[test]
    fn a_long_value_keeps_the_part_that_changed() {
        let f = field(
            "spec.template.spec.containers[0].image",
            json!(
                "us-central1-docker.pkg.dev/online-boutique-ci/microservices-demo/frontend:v0.10.6"
            ),
            json!("us-central1-docker.pkg.dev/google-samples/microservices-demo/frontend:v0.10.7"),
        );
        let text = fields_line(&[f], 90);
        assert!(text.chars().count() <= 90, "{text}");
        assert!(
            text.contains("v0.10.6") && text.contains("v0.10.7"),
            "{text}"
        );
    }
}
