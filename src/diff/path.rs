//! Field paths such as `spec.template.spec.containers[0].image`, their rendering and parsing.
//!
//! Rendering (kubectl JSONPath-like, without the leading dot):
//! - a map key is written bare, after a `.` unless it is the first segment, when it is a
//!   *plain key*: non-empty, starting with an ASCII letter or `_`, and made only of ASCII
//!   letters, digits, `_` and `-` (`metadata`, `pod-template-hash`, `_x1`);
//! - any other key is quoted as `["..."]` with JSON string escaping inside the quotes, and
//!   no dot before it: `metadata.labels["app.kubernetes.io/name"]`, `data["config.yaml"]`,
//!   `data["2fa"]`, `x[""]`, `x["say \"hi\""]`;
//! - a list index is `[i]`: `containers[0]`;
//! - the empty path (the whole object) is `.`.
//!
//! [`parse_path`] is the inverse of `Display`, and also accepts a leading `.`
//! (`.spec.replicas`) and bare keys that are not plain keys but contain none of
//! `.`, `[`, `]`, `"`, `\`, whitespace or control characters (`data.9lives`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// One step of a [`FieldPath`]: a map key or a list index.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PathSegment {
    /// A key of a JSON object.
    Key(String),
    /// An index into a JSON array.
    Index(usize),
}

/// The location of a field inside an object: a sequence of keys and list indexes.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FieldPath(Vec<PathSegment>);

/// Why a string is not a field path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid field path {input:?}: {reason} at character {position}")]
pub struct PathError {
    /// The string that was parsed.
    pub input: String,
    /// Character (not byte) offset of the problem.
    pub position: usize,
    /// What was wrong there.
    pub reason: &'static str,
}

impl FieldPath {
    /// The empty path: the whole object.
    pub fn root() -> FieldPath {
        FieldPath(Vec::new())
    }

    /// A path from its segments.
    pub fn new(segments: Vec<PathSegment>) -> FieldPath {
        FieldPath(segments)
    }

    /// The segments, outermost first.
    pub fn segments(&self) -> &[PathSegment] {
        &self.0
    }

    /// The segments, outermost first.
    pub fn into_segments(self) -> Vec<PathSegment> {
        self.0
    }

    /// Whether this is the empty path (the whole object).
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    /// The number of segments.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the path has no segments (same as [`FieldPath::is_root`]).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// This path extended by a map key.
    #[must_use]
    pub fn key(mut self, key: impl Into<String>) -> FieldPath {
        self.0.push(PathSegment::Key(key.into()));
        self
    }

    /// This path extended by a list index.
    #[must_use]
    pub fn index(mut self, index: usize) -> FieldPath {
        self.0.push(PathSegment::Index(index));
        self
    }

    /// Whether `prefix` is this path or an ancestor of it.
    pub fn starts_with(&self, prefix: &FieldPath) -> bool {
        self.0.starts_with(&prefix.0)
    }

    /// The value at this path inside `value`, if there is one.
    pub fn lookup<'v>(&self, value: &'v Value) -> Option<&'v Value> {
        self.0.iter().try_fold(value, |v, seg| match seg {
            PathSegment::Key(k) => v.as_object()?.get(k),
            PathSegment::Index(i) => v.as_array()?.get(*i),
        })
    }
}

impl From<Vec<PathSegment>> for FieldPath {
    fn from(segments: Vec<PathSegment>) -> FieldPath {
        FieldPath(segments)
    }
}

impl FromIterator<PathSegment> for FieldPath {
    fn from_iter<I: IntoIterator<Item = PathSegment>>(iter: I) -> FieldPath {
        FieldPath(iter.into_iter().collect())
    }
}

/// A borrowed path segment, used while walking objects so that no key is copied unless
/// a change at it is reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SegRef<'a> {
    Key(&'a str),
    Index(usize),
}

/// Anything that can be viewed as a path segment.
pub(crate) trait Segment {
    fn view(&self) -> SegRef<'_>;
}

impl Segment for PathSegment {
    fn view(&self) -> SegRef<'_> {
        match self {
            PathSegment::Key(k) => SegRef::Key(k),
            PathSegment::Index(i) => SegRef::Index(*i),
        }
    }
}

impl Segment for SegRef<'_> {
    fn view(&self) -> SegRef<'_> {
        *self
    }
}

impl SegRef<'_> {
    pub(crate) fn to_owned_segment(self) -> PathSegment {
        match self {
            SegRef::Key(k) => PathSegment::Key(k.to_owned()),
            SegRef::Index(i) => PathSegment::Index(i),
        }
    }
}

/// Whether `key` may be written without quotes (see the module documentation).
pub(crate) fn is_plain_key(key: &str) -> bool {
    let mut chars = key.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Writes `segments` in the rendering of the module documentation.
pub(crate) fn write_path<S: Segment>(segments: &[S], out: &mut impl fmt::Write) -> fmt::Result {
    if segments.is_empty() {
        return out.write_char('.');
    }
    for (i, seg) in segments.iter().enumerate() {
        match seg.view() {
            SegRef::Key(k) if is_plain_key(k) => {
                if i > 0 {
                    out.write_char('.')?;
                }
                out.write_str(k)?;
            }
            SegRef::Key(k) => {
                out.write_char('[')?;
                write_json_string(k, out)?;
                out.write_char(']')?;
            }
            SegRef::Index(n) => write!(out, "[{n}]")?,
        }
    }
    Ok(())
}

/// Renders `segments` to a new string.
pub(crate) fn render_path<S: Segment>(segments: &[S]) -> String {
    let mut s = String::new();
    // Writing to a String cannot fail.
    let _ = write_path(segments, &mut s);
    s
}

/// Writes `s` as a JSON string literal, escaping as serde_json does.
fn write_json_string(s: &str, out: &mut impl fmt::Write) -> fmt::Result {
    out.write_char('"')?;
    for c in s.chars() {
        match c {
            '"' => out.write_str("\\\"")?,
            '\\' => out.write_str("\\\\")?,
            '\n' => out.write_str("\\n")?,
            '\r' => out.write_str("\\r")?,
            '\t' => out.write_str("\\t")?,
            '\u{8}' => out.write_str("\\b")?,
            '\u{c}' => out.write_str("\\f")?,
            c if c < ' ' => write!(out, "\\u{:04x}", u32::from(c))?,
            c => out.write_char(c)?,
        }
    }
    out.write_char('"')
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_path(&self.0, f)
    }
}

/// Parses a rendered field path; the inverse of `FieldPath`'s `Display`.
pub fn parse_path(s: &str) -> Result<FieldPath, PathError> {
    Parser { input: s, pos: 0 }.parse()
}

impl FromStr for FieldPath {
    type Err = PathError;

    fn from_str(s: &str) -> Result<FieldPath, PathError> {
        parse_path(s)
    }
}

impl Serialize for FieldPath {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for FieldPath {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<FieldPath, D::Error> {
        let s = String::deserialize(deserializer)?;
        parse_path(&s).map_err(serde::de::Error::custom)
    }
}

/// A character that may appear in a bare key when parsing.
fn is_bare_char(c: char) -> bool {
    !matches!(c, '.' | '[' | ']' | '"' | '\\') && !c.is_whitespace() && !c.is_control()
}

struct Parser<'a> {
    input: &'a str,
    /// Byte offset of the next character.
    pos: usize,
}

impl Parser<'_> {
    fn parse(mut self) -> Result<FieldPath, PathError> {
        if self.input == "." {
            return Ok(FieldPath::root());
        }
        if self.input.is_empty() {
            return Err(self.error("empty path (the whole object is \".\")"));
        }
        let mut segments = Vec::new();
        // A leading dot, as in kubectl's `{.spec.replicas}`, is optional.
        if self.peek() == Some('.') && self.input[1..].starts_with(is_bare_char) {
            self.pos = 1;
        }
        if self.peek().is_some_and(is_bare_char) {
            segments.push(PathSegment::Key(self.bare_key()?));
        }
        while let Some(c) = self.peek() {
            match c {
                '.' => {
                    self.pos += 1;
                    segments.push(PathSegment::Key(self.bare_key()?));
                }
                '[' => {
                    self.pos += 1;
                    segments.push(self.bracket()?);
                }
                _ => return Err(self.error("expected '.' or '['")),
            }
        }
        if segments.is_empty() {
            return Err(self.error("expected a key"));
        }
        Ok(FieldPath(segments))
    }

    fn peek(&self) -> Option<char> {
        self.input[self.pos..].chars().next()
    }

    fn error(&self, reason: &'static str) -> PathError {
        PathError {
            input: self.input.to_owned(),
            position: self.input[..self.pos].chars().count(),
            reason,
        }
    }

    fn bare_key(&mut self) -> Result<String, PathError> {
        let rest = &self.input[self.pos..];
        let len = rest.find(|c| !is_bare_char(c)).unwrap_or(rest.len());
        if len == 0 {
            return Err(self.error("expected a key"));
        }
        self.pos += len;
        Ok(rest[..len].to_owned())
    }

    /// After `[`: a decimal index or a JSON string, then `]`.
    fn bracket(&mut self) -> Result<PathSegment, PathError> {
        let rest = &self.input[self.pos..];
        let seg = if rest.starts_with('"') {
            let len = json_string_len(rest).ok_or_else(|| self.error("unterminated quoted key"))?;
            let key = serde_json::from_str::<String>(&rest[..len])
                .map_err(|_| self.error("invalid quoted key"))?;
            self.pos += len;
            PathSegment::Key(key)
        } else {
            let len = rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len());
            if len == 0 {
                return Err(self.error("expected a list index or a quoted key"));
            }
            let index = rest[..len]
                .parse::<usize>()
                .map_err(|_| self.error("list index too large"))?;
            self.pos += len;
            PathSegment::Index(index)
        };
        if self.peek() != Some(']') {
            return Err(self.error("expected ']'"));
        }
        self.pos += 1;
        Ok(seg)
    }
}

/// Byte length of the JSON string literal at the start of `s` (which starts with `"`),
/// including both quotes; `None` if it is not terminated.
fn json_string_len(s: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    let mut i = 1;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(segments: &[&str]) -> FieldPath {
        segments
            .iter()
            .map(|s| match s.parse::<usize>() {
                Ok(i) => PathSegment::Index(i),
                Err(_) => PathSegment::Key((*s).to_owned()),
            })
            .collect()
    }

    #[test]
    fn renders_dots_and_indexes() {
        let path = FieldPath::root()
            .key("spec")
            .key("template")
            .key("spec")
            .key("containers")
            .index(0)
            .key("image");
        assert_eq!(path.to_string(), "spec.template.spec.containers[0].image");
        assert_eq!(FieldPath::root().to_string(), ".");
        assert_eq!(FieldPath::root().index(3).index(1).to_string(), "[3][1]");
        assert_eq!(
            p(&["metadata", "labels", "pod-template-hash"]).to_string(),
            "metadata.labels.pod-template-hash"
        );
    }

    #[test]
    fn quotes_keys_that_are_not_plain() {
        let cases = [
            (
                FieldPath::root()
                    .key("metadata")
                    .key("labels")
                    .key("app.kubernetes.io/name"),
                r#"metadata.labels["app.kubernetes.io/name"]"#,
            ),
            (
                FieldPath::root().key("data").key("config.yaml"),
                r#"data["config.yaml"]"#,
            ),
            (FieldPath::root().key("data").key("2fa"), r#"data["2fa"]"#),
            (FieldPath::root().key("data").key(""), r#"data[""]"#),
            (FieldPath::root().key("data").key("a b"), r#"data["a b"]"#),
            (FieldPath::root().key("data").key("-x"), r#"data["-x"]"#),
            (FieldPath::root().key("data").key("x[0]"), r#"data["x[0]"]"#),
            (
                FieldPath::root().key("data").key("say \"hi\"\n"),
                r#"data["say \"hi\"\n"]"#,
            ),
            (
                FieldPath::root().key("data").key("back\\slash"),
                r#"data["back\\slash"]"#,
            ),
            (
                FieldPath::root().key("data").key("\u{1}"),
                r#"data["\u0001"]"#,
            ),
            (
                FieldPath::root().key("data").key("naïve"),
                r#"data["naïve"]"#,
            ),
            (FieldPath::root().key("a.b").key("c"), r#"["a.b"].c"#),
        ];
        for (path, text) in cases {
            assert_eq!(path.to_string(), text);
            assert_eq!(parse_path(text), Ok(path), "{text}");
        }
    }

    #[test]
    fn quoting_matches_serde_json() {
        for key in [
            "a\"b",
            "\\",
            "\u{7f}",
            "\u{1f}",
            "tab\there",
            "é/ü",
            "\u{2028}",
        ] {
            let mut ours = String::new();
            write_json_string(key, &mut ours).unwrap();
            assert_eq!(ours, serde_json::to_string(key).unwrap());
        }
    }

    #[test]
    fn parse_accepts_a_leading_dot_and_lenient_bare_keys() {
        assert_eq!(parse_path(".spec.replicas"), Ok(p(&["spec", "replicas"])));
        assert_eq!(parse_path("data.9lives"), Ok(p(&["data"]).key("9lives")));
        assert_eq!(parse_path("data.ключ"), Ok(p(&["data"]).key("ключ")));
        assert_eq!(parse_path("[0].a"), Ok(FieldPath::root().index(0).key("a")));
        assert_eq!(parse_path("."), Ok(FieldPath::root()));
        assert_eq!(parse_path(r#"a["0"]"#), Ok(p(&["a"]).key("0")));
    }

    #[test]
    fn parse_rejects_malformed_paths() {
        let cases = [
            ("", 0),
            ("..", 1),
            ("a.", 2),
            ("a..b", 2),
            (".[0]", 1),
            ("a.[0]", 2),
            ("a[", 2),
            ("a[]", 2),
            ("a[x]", 2),
            ("a[0", 3),
            ("a[-1]", 2),
            ("a[99999999999999999999999]", 2),
            (r#"a["b"#, 2),
            (r#"a["b"x]"#, 5),
            (r#"a["\q"]"#, 2),
            ("a[0]b", 4),
            ("a]", 1),
            ("a b", 1),
            ("ä\"", 1),
        ];
        for (text, position) in cases {
            match parse_path(text) {
                Ok(path) => panic!("{text:?} parsed as {path:?}"),
                Err(e) => assert_eq!(e.position, position, "{text:?}: {e}"),
            }
        }
        assert_eq!(
            parse_path("a[x]").unwrap_err().to_string(),
            "invalid field path \"a[x]\": expected a list index or a quoted key at character 2"
        );
    }

    #[test]
    fn lookup_follows_keys_and_indexes() {
        let v = serde_json::json!({"a": [{"b.c": 1}, 2]});
        assert_eq!(
            parse_path(r#"a[0]["b.c"]"#).unwrap().lookup(&v),
            Some(&serde_json::json!(1))
        );
        assert_eq!(
            parse_path("a[1]").unwrap().lookup(&v),
            Some(&serde_json::json!(2))
        );
        assert_eq!(parse_path("a[2]").unwrap().lookup(&v), None);
        assert_eq!(parse_path("a.b").unwrap().lookup(&v), None);
        assert_eq!(FieldPath::root().lookup(&v), Some(&v));
    }

    #[test]
    fn serde_uses_the_rendered_form() {
        let path = p(&["metadata", "labels"]).key("app.kubernetes.io/name");
        let json = serde_json::to_string(&path).unwrap();
        assert_eq!(json, r#""metadata.labels[\"app.kubernetes.io/name\"]""#);
        assert_eq!(serde_json::from_str::<FieldPath>(&json).unwrap(), path);
        assert!(serde_json::from_str::<FieldPath>(r#""a..b""#).is_err());
    }

    #[test]
    fn starts_with_is_segment_wise() {
        let a = p(&["spec", "replicas"]);
        assert!(a.starts_with(&p(&["spec"])));
        assert!(a.starts_with(&FieldPath::root()));
        assert!(!p(&["specs"]).starts_with(&p(&["spec"])));
    }
}
