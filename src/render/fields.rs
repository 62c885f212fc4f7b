//! A change's fields as `log`, `timeline`, `diff` and the live display of
//! `record` show them (docs/output.md, "Values stay readable"): every
//! changed field gets a line, `path: old -> new` with the values whole when
//! that fits, else the path, then `- old` and `+ new` on lines of their own,
//! each whole up to the width or shortened keeping its tail and what differs;
//! then who made them.

use super::values::render_pair;
use crate::audit::By;
use crate::diff::FieldChange;
use crate::history::diff::{Field, managers};

/// One field's change in `room` columns (`None`: never shortened), as lines
/// without their indent: `path: old -> new` when the whole values fit, else
/// `path:` and then `- old` and `+ new`, indented by two, each whole up to the
/// room, else shortened keeping its tail and what differs.
pub fn field_lines(change: &FieldChange, room: Option<usize>) -> Vec<String> {
    let path = change.path.to_string();
    let (before, after) = (change.before.as_ref(), change.after.as_ref());
    let (b, a) = render_pair(before, after, 0);
    let one = format!("{path}: {b} -> {a}");
    match room {
        Some(room) if one.chars().count() > room => {
            let (b, a) = render_pair(before, after, room.saturating_sub(4).max(16));
            vec![
                format!("{}:", shorten(&path, room.saturating_sub(1).max(16))),
                format!("  - {b}"),
                format!("  + {a}"),
            ]
        }
        _ => vec![one],
    }
}

/// The fields of a change for the rest of a line that has `room` columns
/// left (`width` is the whole line's, `None` for `-o wide`): one field that
/// fits there whole, with who made it, stays on that line; otherwise who made
/// them stays there and every field follows on lines of its own (starting
/// with a newline), indented by `indent`.
pub fn fields_after(fields: &[Field], room: usize, indent: usize, width: Option<usize>) -> String {
    let owners = owners(fields).unwrap_or_default();
    if let [only] = fields {
        let one = field_lines(&only.change, None).concat();
        let inline = if owners.is_empty() {
            one
        } else {
            format!("{one}  {owners}")
        };
        if width.is_none() || inline.chars().count() <= room {
            return inline;
        }
    }
    let room = width.map(|w| w.saturating_sub(indent).max(24));
    let mut out = owners;
    for f in fields {
        for line in field_lines(&f.change, room) {
            out.push('\n');
            out.push_str(&" ".repeat(indent));
            out.push_str(&line);
        }
    }
    out
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

/// Changes the renderers' snapshots show at 80 and 120 columns.
#[cfg(test)]
pub(crate) mod examples {
    use crate::audit::By;
    use crate::diff::{FieldChange, parse_path};
    use crate::history::diff::Field;
    use serde_json::{Value, json};

    fn field(path: &str, before: Option<Value>, after: Value, manager: &str) -> Field {
        Field {
            change: FieldChange {
                path: parse_path(path).expect("path"),
                before,
                after: Some(after),
            },
            manager: Some(manager.into()),
            by: By::default(),
        }
    }

    /// The demo's image change of productcatalogservice.
    pub fn image_change() -> Vec<Field> {
        vec![field(
            "spec.template.spec.containers[0].image",
            Some(json!(
                "us-central1-docker.pkg.dev/online-boutique-ci/microservices-demo/productcatalogservice:v0.10.6"
            )),
            json!(
                "us-central1-docker.pkg.dev/google-samples/microservices-demo/productcatalogservice:v0.10.7"
            ),
            "kubectl-set",
        )]
    }

    /// A change of two fields: a replica count and an added annotation.
    pub fn two_fields() -> Vec<Field> {
        vec![
            field("spec.replicas", Some(json!(1)), json!(3), "kubectl-edit"),
            field(
                r#"metadata.annotations["kubernetes.io/change-cause"]"#,
                None,
                json!(
                    "kubectl set image deployment/frontend server=registry.example.com/frontend:v2 --record"
                ),
                "kubectl-edit",
            ),
        ]
    }
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

    fn image() -> Field {
        field(
            "spec.template.spec.containers[0].image",
            json!(
                "us-central1-docker.pkg.dev/online-boutique-ci/microservices-demo/productcatalogservice:v0.10.6"
            ),
            json!(
                "us-central1-docker.pkg.dev/google-samples/microservices-demo/productcatalogservice:v0.10.7"
            ),
        )
    }

    #[test]
    fn every_field_gets_its_lines_and_nothing_is_counted_away() {
        let fields: Vec<Field> = (0..6)
            .map(|i| {
                field(
                    &format!("data.key{i}"),
                    json!("a-rather-long-old-value-that-is-long"),
                    json!("a-rather-long-new-value-that-is-long"),
                )
            })
            .collect();
        let text = fields_after(&fields, 40, 4, Some(100));
        assert!(!text.contains("more"), "{text}");
        assert!(text.starts_with("(kubectl-edit)\n"), "{text}");
        for i in 0..6 {
            assert!(text.contains(&format!("    data.key{i}: a-rather-long-old-value-that-is-long -> a-rather-long-new-value-that-is-long")), "{text}");
        }
        assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
    }

    #[test]
    fn a_value_too_long_for_the_line_goes_below_whole_or_with_its_tail() {
        // 120 columns: the two values, each whole, on lines of their own.
        let text = fields_after(&[image()], 60, 9, Some(120));
        assert_eq!(
            text,
            "(kubectl-edit)
         spec.template.spec.containers[0].image:
           - us-central1-docker.pkg.dev/online-boutique-ci/microservices-demo/productcatalogservice:v0.10.6
           + us-central1-docker.pkg.dev/google-samples/microservices-demo/productcatalogservice:v0.10.7"
        );
        // 80 columns: what differs, and the name and tag after it.
        let text = fields_after(&[image()], 40, 9, Some(80));
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
        assert!(
            text.contains("- …g.dev/online-boutique-ci/micro…/productcatalogservice:v0.10.6"),
            "{text}"
        );
        // -o wide: one line, never shortened.
        let text = fields_after(&[image()], 10, 9, None);
        assert!(!text.contains('\n') && !text.contains('…'), "{text}");
    }

    #[test]
    fn one_short_field_stays_on_its_line() {
        let f = field("spec.replicas", json!(1), json!(3));
        assert_eq!(
            fields_after(&[f], 60, 9, Some(120)),
            "spec.replicas: 1 -> 3  (kubectl-edit)"
        );
    }
}
