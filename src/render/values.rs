//! Short one-line renderings of values for text output (`nginx:1.25 -> nginx:1.27`).
//!
//! - a missing value is `<none>` (as kubectl prints absent fields);
//! - a string is written as is, unless that would be ambiguous or not fit on one line:
//!   empty, `null`/`true`/`false`/`<none>`, anything that reads as a number (`8080`,
//!   `1e5`, `NaN`), leading or trailing whitespace, control characters (newlines, tabs),
//!   a leading `"`, `{` or `[`, a ` -> ` inside or a trailing `…`. Those are written as
//!   JSON strings (`""`, `"8080"`, `"a\nb"`);
//! - numbers exactly as JSON writes them (`1000000`, never `1e+06`; `2.5`), `true`,
//!   `false`, `null`;
//! - objects and lists as compact JSON.
//!
//! The result is cut to `max_chars` characters (Unicode scalar values, so UTF-8 is never
//! split) with a `…` where text was left out; `max_chars == 0` means no limit. A string
//! shown as is keeps its beginning and its end, where versions and tags are
//! (`us-central1-docker.pkg.dev/o…/frontend:v0.10.7`); anything else keeps its beginning.
//! Large values are only serialized as far as needed.

use std::io;

use serde_json::Value;

/// Renders `value` on one line in at most `max_chars` characters (0: no limit).
pub fn render_value(value: Option<&Value>, max_chars: usize) -> String {
    let limit = if max_chars == 0 {
        usize::MAX
    } else {
        max_chars
    };
    match value {
        None => truncate_end("<none>", limit),
        Some(Value::String(s)) if is_unambiguous(s) => truncate_middle(s, limit),
        Some(v) => truncate_end(&json_prefix(v, limit), limit),
    }
}

/// Renders a value's old and new versions on one line each, in at most
/// `max_chars` characters (0: no limit), whole when they fit. Otherwise the
/// runs both share are cut, one at a time and only as far as needed, while
/// what differs always stays: the leading run first (down to its last few
/// characters), then the runs between differences, then the trailing one;
/// a run that is cut keeps a little context and its last path segment, where
/// an image's name and tag are
/// (`…g.dev/online-boutique-ci/micro…/productcatalogservice:v0.10.6`).
pub fn render_pair(
    before: Option<&Value>,
    after: Option<&Value>,
    max_chars: usize,
) -> (String, String) {
    // Long enough to find the differences in; anything longer is cut plainly.
    const COMPARED: usize = 4096;
    let full = |v: Option<&Value>| render_value(v, COMPARED);
    let (a, b) = (full(before), full(after));
    let fits = |t: &str| max_chars == 0 || t.chars().count() <= max_chars;
    if fits(&a) && fits(&b) {
        return (a, b);
    }
    let (ta, tb) = (tokens(&a), tokens(&b));
    let diff = similar::capture_diff_slices(similar::Algorithm::Myers, &ta, &tb);
    // The pieces in order: a run both share (`Some`), or what differs.
    let mut shared: Vec<Option<String>> = Vec::new();
    let mut sides: Vec<(String, String)> = Vec::new();
    for op in &diff {
        match *op {
            similar::DiffOp::Equal { old_index, len, .. } => {
                let same: String = ta[old_index..old_index + len].concat();
                shared.push(Some(same.clone()));
                sides.push((same.clone(), same));
            }
            _ => {
                shared.push(None);
                sides.push((ta[op.old_range()].concat(), tb[op.new_range()].concat()));
            }
        }
    }
    let last = sides.len().saturating_sub(1);
    let join = |sides: &[(String, String)]| -> (String, String) {
        sides
            .iter()
            .fold((String::new(), String::new()), |(mut x, mut y), (l, r)| {
                x.push_str(l);
                y.push_str(r);
                (x, y)
            })
    };
    // Which shared runs to cut, in order: the leading one, those between
    // differences (longest first), the trailing one.
    let mut order: Vec<usize> = (0..sides.len()).filter(|&i| shared[i].is_some()).collect();
    order.sort_by_key(|&i| {
        let len = shared[i].as_ref().map_or(0, |s| s.chars().count());
        match i {
            0 => (0, 0),
            i if i == last => (2, 0),
            _ => (1, usize::MAX - len),
        }
    });
    // First each run keeps its last path segment; then only a little context.
    for keep_segment in [true, false] {
        for &i in &order {
            if let Some(same) = &shared[i] {
                let cut = elide_same(same, i == 0, i == last, keep_segment);
                sides[i] = (cut.clone(), cut);
            }
            let (x, y) = join(&sides);
            if fits(&x) && fits(&y) {
                return (x, y);
            }
        }
    }
    let (x, y) = join(&sides);
    let cut = |t: String| {
        if max_chars == 0 {
            t
        } else {
            truncate_middle(&t, max_chars)
        }
    };
    (cut(x), cut(y))
}

/// Words and the separators between them: the units two values are compared in.
fn tokens(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, c) in text.char_indices() {
        if matches!(
            c,
            '/' | ':' | '.' | '-' | '_' | '=' | ',' | '@' | ' ' | '"' | '{' | '}' | '[' | ']'
        ) {
            if start < i {
                out.push(&text[start..i]);
            }
            out.push(&text[i..i + c.len_utf8()]);
            start = i + c.len_utf8();
        }
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// A run both sides share, cut to a little context next to the differences:
/// its end when it leads; when it follows a difference, its start and (with
/// `keep_segment`) its last path segment (from its last `/`, when that is
/// short), so a name and tag after a changed registry stay.
fn elide_same(same: &str, leading: bool, trailing: bool, keep_segment: bool) -> String {
    const CONTEXT: usize = 6;
    const SEGMENT: usize = 40;
    let n = same.chars().count();
    let head = |k: usize| same.chars().take(k).collect::<String>();
    let tail = |k: usize| same.chars().skip(n.saturating_sub(k)).collect::<String>();
    // The last path segment, with its `/`, when it is short.
    let segment = same
        .rfind('/')
        .map(|i| same[i..].chars().count())
        .filter(|&k| keep_segment && k > 1 && k <= SEGMENT)
        .unwrap_or(CONTEXT)
        .max(CONTEXT);
    match (leading, trailing) {
        (true, true) => same.to_string(),
        (true, false) if n > CONTEXT + 1 => format!("…{}", tail(CONTEXT)),
        (false, true) if n > CONTEXT + 1 + segment => {
            format!("{}…{}", head(CONTEXT), tail(segment))
        }
        (false, false) if n > CONTEXT + 1 + segment => {
            format!("{}…{}", head(CONTEXT), tail(segment))
        }
        _ => same.to_string(),
    }
}

/// Whether a string can be shown without quotes.
fn is_unambiguous(s: &str) -> bool {
    !s.is_empty()
        && s.trim() == s
        && !s.chars().any(char::is_control)
        && !matches!(s, "null" | "true" | "false" | "<none>")
        && !s.starts_with(['"', '{', '['])
        && !s.contains(" -> ")
        && !s.ends_with('…')
        && !looks_numeric(s)
}

fn looks_numeric(s: &str) -> bool {
    s.parse::<f64>().is_ok() || serde_json::from_str::<serde_json::Number>(s).is_ok()
}

/// Compact JSON of `value`, serialized only until it surely exceeds `max_chars` characters.
fn json_prefix(value: &Value, max_chars: usize) -> String {
    // A character is at most 4 bytes, so this many bytes hold more than max_chars of them.
    let cap = max_chars.saturating_add(1).saturating_mul(4);
    let mut out = Capped {
        buf: Vec::new(),
        cap,
    };
    // Stopping early is the point: the error only says the cap was reached.
    let _ = serde_json::to_writer(&mut out, value);
    match String::from_utf8(out.buf) {
        Ok(s) => s,
        Err(e) => {
            // The cap fell inside a multi-byte character: drop its first bytes.
            let valid = e.utf8_error().valid_up_to();
            let mut bytes = e.into_bytes();
            bytes.truncate(valid);
            String::from_utf8(bytes).unwrap_or_default()
        }
    }
}

/// A writer that takes at most `cap` bytes and then refuses more.
struct Capped {
    buf: Vec<u8>,
    cap: usize,
}

impl io::Write for Capped {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let room = self.cap.saturating_sub(self.buf.len());
        if room == 0 && !data.is_empty() {
            return Err(io::Error::other("rendering limit reached"));
        }
        let n = data.len().min(room);
        self.buf.extend_from_slice(&data[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// `text` cut to `max_chars` characters, keeping its beginning and end around a `…`.
fn truncate_middle(text: &str, max_chars: usize) -> String {
    let total = text.chars().count();
    if total <= max_chars {
        return text.to_owned();
    }
    let keep = max_chars.saturating_sub(1);
    let tail = keep / 2;
    let head_end = text
        .char_indices()
        .nth(keep - tail)
        .map_or(text.len(), |(i, _)| i);
    let tail_start = text
        .char_indices()
        .nth(total - tail)
        .map_or(text.len(), |(i, _)| i);
    let mut out = String::with_capacity(head_end + '…'.len_utf8() + text.len() - tail_start);
    out.push_str(&text[..head_end]);
    out.push('…');
    out.push_str(&text[tail_start..]);
    out
}

/// `text` cut to `max_chars` characters, the last one replaced by `…` when cut.
fn truncate_end(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        None => text.to_owned(),
        Some(_) => {
            let keep = max_chars.saturating_sub(1);
            let end = text.char_indices().nth(keep).map_or(text.len(), |(i, _)| i);
            let mut out = String::with_capacity(end + '…'.len_utf8());
            out.push_str(&text[..end]);
            out.push('…');
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_pair_keeps_where_it_differs() {
        let before = json!(
            "us-central1-docker.pkg.dev/online-boutique-ci/microservices-demo/productcatalogservice:v0.10.6"
        );
        let after = json!(
            "us-central1-docker.pkg.dev/google-samples/microservices-demo/productcatalogservice:v0.10.7"
        );
        let (a, b) = render_pair(Some(&before), Some(&after), 40);
        assert_eq!(a, "…g.dev/online-boutique-ci/micro…v0.10.6");
        assert_eq!(b, "…g.dev/google-samples/micro…v0.10.7");
        // With room, the name and tag after the changed registry stay.
        let (a, b) = render_pair(Some(&before), Some(&after), 67);
        assert_eq!(
            a,
            "…g.dev/online-boutique-ci/micro…/productcatalogservice:v0.10.6"
        );
        assert_eq!(
            b,
            "…g.dev/google-samples/micro…/productcatalogservice:v0.10.7"
        );
        // With more, only the leading run is cut; with enough, both are whole.
        let (a, _) = render_pair(Some(&before), Some(&after), 90);
        assert_eq!(
            a,
            "…g.dev/online-boutique-ci/microservices-demo/productcatalogservice:v0.10.6"
        );
        let (a, b) = render_pair(Some(&before), Some(&after), 96);
        assert_eq!(
            (Some(&json!(a)), Some(&json!(b))),
            (Some(&before), Some(&after))
        );
        // Short values are left alone.
        let (a, b) = render_pair(Some(&json!(1)), Some(&json!(3)), 40);
        assert_eq!((a.as_str(), b.as_str()), ("1", "3"));
        let (a, b) = render_pair(None, Some(&json!("web")), 40);
        assert_eq!((a.as_str(), b.as_str()), ("<none>", "web"));
        // Nothing in common: cut in the middle, as one value alone would be.
        let long = json!("x".repeat(100));
        let (a, _) = render_pair(Some(&long), None, 20);
        assert_eq!(a.chars().count(), 20);
        // No limit: whole.
        let (a, _) = render_pair(Some(&before), Some(&after), 0);
        assert_eq!(Some(&json!(a)), Some(&before));
    }

    fn r(v: Value) -> String {
        render_value(Some(&v), 0)
    }

    #[test]
    fn strings_as_is_unless_ambiguous() {
        assert_eq!(r(json!("nginx:1.27")), "nginx:1.27");
        assert_eq!(r(json!("hello world")), "hello world");
        assert_eq!(r(json!("08")), "\"08\"");
        for (s, shown) in [
            ("", r#""""#),
            ("null", r#""null""#),
            ("true", r#""true""#),
            ("false", r#""false""#),
            ("<none>", r#""<none>""#),
            ("8080", r#""8080""#),
            ("-1.5", r#""-1.5""#),
            ("1e5", r#""1e5""#),
            ("NaN", r#""NaN""#),
            (" padded", r#"" padded""#),
            ("trailing ", r#""trailing ""#),
            ("two\nlines", r#""two\nlines""#),
            ("tab\there", r#""tab\there""#),
            ("\"quoted\"", r#""\"quoted\"""#),
            ("{not json", r#""{not json""#),
            ("[x]", r#""[x]""#),
            ("a -> b", r#""a -> b""#),
            ("cut…", r#""cut…""#),
        ] {
            assert_eq!(r(json!(s)), shown, "{s:?}");
        }
    }

    #[test]
    fn numbers_as_json_writes_them() {
        assert_eq!(r(json!(1_000_000)), "1000000");
        assert_eq!(r(json!(1_234_567)), "1234567");
        assert_eq!(r(json!(u64::MAX)), "18446744073709551615");
        assert_eq!(r(json!(i64::MIN)), "-9223372036854775808");
        assert_eq!(r(json!(2.5)), "2.5");
        assert_eq!(r(json!(1.0)), "1.0");
        assert_eq!(r(json!(0.00001)), "0.00001");
        // Floats as serde_json writes them; integers never get an exponent.
        assert_eq!(r(json!(1e21)), "1e+21");
        assert_eq!(r(json!(5)), "5");
    }

    #[test]
    fn scalars_missing_and_containers() {
        assert_eq!(render_value(None, 0), "<none>");
        assert_eq!(r(json!(null)), "null");
        assert_eq!(r(json!(true)), "true");
        assert_eq!(r(json!(false)), "false");
        assert_eq!(
            r(json!({"b": [1, "x"], "a": {}})),
            r#"{"b":[1,"x"],"a":{}}"#
        );
        assert_eq!(r(json!([])), "[]");
    }

    #[test]
    fn truncates_by_characters_with_an_ellipsis() {
        let s = |v: &str, max| render_value(Some(&json!(v)), max);
        assert_eq!(s("abcdef", 6), "abcdef");
        assert_eq!(s("abcdefg", 6), "abc…fg");
        assert_eq!(s("abcdefg", 2), "a…");
        assert_eq!(s("abc", 1), "…");
        assert_eq!(s("a", 1), "a");
        assert_eq!(render_value(None, 3), "<n…");
        // Quoted strings and JSON keep their beginning.
        assert_eq!(s("line\nbreak", 8), r#""line\n…"#);
        assert_eq!(render_value(Some(&json!({"a": "bcdefgh"})), 6), r#"{"a":…"#);
        // Multi-byte characters are never split.
        assert_eq!(s("日本語のテキスト", 4), "日本…ト");
        assert_eq!(s("😀😀😀😀", 3), "😀…😀");
        assert_eq!(s("x\n日本語のテキスト", 6), r#""x\n日…"#);
        assert_eq!(s("e\u{301}e\u{301}e", 3), "e…e");
    }

    #[test]
    fn long_images_keep_their_tags() {
        let image =
            "us-central1-docker.pkg.dev/online-boutique-ci/microservices-demo/frontend:v0.10.7";
        assert_eq!(
            render_value(Some(&json!(image)), 40),
            "us-central1-docker.p…mo/frontend:v0.10.7"
        );
    }

    #[test]
    fn large_values_are_cut_without_serializing_everything() {
        let big: Vec<Value> = (0..100_000)
            .map(|i| json!({"k": i, "v": "ü".repeat(3)}))
            .collect();
        let shown = render_value(Some(&Value::Array(big)), 20);
        assert_eq!(shown, r#"[{"k":0,"v":"üüü"},…"#);
        assert_eq!(shown.chars().count(), 20);
        let multi = json!(["ü".repeat(50)]);
        for max in 1..60 {
            let shown = render_value(Some(&multi), max);
            assert!(shown.chars().count() <= max, "{max}: {shown}");
        }
    }

    /// The changes of Online Boutique's `frontend` Deployment (the diff
    /// engine's fixture), one line each, as a text diff prints them.
    mod deployment {
        use super::render_value;
        use crate::diff::deployment_tests::{after, before};
        use crate::diff::{DiffOptions, FieldChange, diff_objects, field_manager};
        use serde_json::Value;

        /// One line per change, as a text diff would print it.
        fn text(changes: &[FieldChange], after: &Value) -> String {
            changes
                .iter()
                .map(|c| {
                    let manager = field_manager(after, &c.path).unwrap_or_else(|| "?".to_owned());
                    format!(
                        "{}  {} -> {}  ({manager})\n",
                        c.path,
                        render_value(c.before.as_ref(), 40),
                        render_value(c.after.as_ref(), 40),
                    )
                })
                .collect()
        }

        #[test]
        fn deployment_change_text() {
            let (before, after) = (before(), after());
            let changes = diff_objects(&before, &after, &DiffOptions::default());
            insta::assert_snapshot!("deployment_change_text", text(&changes, &after));
        }
    }

    mod limits {
        use super::render_value;
        use crate::diff::proptests::tree;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn render_value_respects_the_limit(v in tree(), max in 0usize..40) {
                let shown = render_value(Some(&v), max);
                if max > 0 {
                    prop_assert!(shown.chars().count() <= max);
                }
                prop_assert!(!shown.contains('\n'));
                prop_assert!(!shown.is_empty());
            }
        }
    }
}
