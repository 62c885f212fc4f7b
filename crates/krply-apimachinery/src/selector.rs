//! Label selectors in the full Kubernetes syntax (`a=b`, `a==b`, `a!=b`,
//! `a in (x,y)`, `a notin (x)`, `a`, `!a`, `a>1`, `a<1`; a comma is AND), with
//! the same matching rules as `k8s.io/apimachinery/pkg/labels`, and field
//! selectors. The recorder validates `-l` with them before anything is recorded
//! (a bad selector is a usage error, worded as the API server words it); the
//! simulator filters lists and watches with them.

use std::collections::BTreeMap;

/// Labels of one object.
pub type Labels = BTreeMap<String, String>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Equals,
    NotEquals,
    In,
    NotIn,
    Exists,
    DoesNotExist,
    GreaterThan,
    LessThan,
}

#[derive(Debug, Clone, PartialEq)]
struct Requirement {
    key: String,
    op: Op,
    values: Vec<String>,
}

impl Requirement {
    fn matches(&self, labels: &Labels) -> bool {
        let value = labels.get(&self.key);
        match self.op {
            Op::Equals | Op::In => value.is_some_and(|v| self.values.contains(v)),
            Op::NotEquals | Op::NotIn => !value.is_some_and(|v| self.values.contains(v)),
            Op::Exists => value.is_some(),
            Op::DoesNotExist => value.is_none(),
            Op::GreaterThan | Op::LessThan => {
                let (Some(v), Some(bound)) = (value, self.values.first()) else {
                    return false;
                };
                let (Ok(v), Ok(bound)) = (v.parse::<i64>(), bound.parse::<i64>()) else {
                    return false;
                };
                if self.op == Op::GreaterThan {
                    v > bound
                } else {
                    v < bound
                }
            }
        }
    }
}

/// A parsed label selector; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector {
    reqs: Vec<Requirement>,
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    Comma,
    Open,
    Close,
    Eq,
    DoubleEq,
    NotEq,
    Not,
    Gt,
    Lt,
}

impl Token {
    fn describe(&self) -> String {
        match self {
            Token::Ident(s) => s.clone(),
            Token::Comma => ",".into(),
            Token::Open => "(".into(),
            Token::Close => ")".into(),
            Token::Eq => "=".into(),
            Token::DoubleEq => "==".into(),
            Token::NotEq => "!=".into(),
            Token::Not => "!".into(),
            Token::Gt => ">".into(),
            Token::Lt => "<".into(),
        }
    }
}

fn is_special(c: char) -> bool {
    matches!(c, ',' | '(' | ')' | '=' | '!' | '<' | '>') || c.is_whitespace()
}

fn lex(input: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let chars: Vec<char> = input.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let next = chars.get(i + 1).copied();
        let (tok, len) = match (c, next) {
            (',', _) => (Token::Comma, 1),
            ('(', _) => (Token::Open, 1),
            (')', _) => (Token::Close, 1),
            ('=', Some('=')) => (Token::DoubleEq, 2),
            ('=', _) => (Token::Eq, 1),
            ('!', Some('=')) => (Token::NotEq, 2),
            ('!', _) => (Token::Not, 1),
            ('>', _) => (Token::Gt, 1),
            ('<', _) => (Token::Lt, 1),
            _ => {
                let start = i;
                let mut j = i;
                while j < chars.len() && !is_special(chars[j]) {
                    j += 1;
                }
                (Token::Ident(chars[start..j].iter().collect()), j - start)
            }
        };
        out.push(tok);
        i += len;
    }
    out
}

struct Parser {
    toks: Vec<Token>,
    pos: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.toks.get(self.pos)
    }

    fn next(&mut self) -> Option<Token> {
        let t = self.toks.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    fn requirement(&mut self) -> Result<Requirement, String> {
        let negated = if self.peek() == Some(&Token::Not) {
            self.pos += 1;
            true
        } else {
            false
        };
        let key = match self.next() {
            Some(Token::Ident(k)) => k,
            Some(t) => return Err(format!("found '{}', expected: identifier", t.describe())),
            None => return Err("found '', expected: identifier".into()),
        };
        validate_key(&key)?;
        if negated {
            return match self.peek() {
                None | Some(Token::Comma) => Ok(Requirement {
                    key,
                    op: Op::DoesNotExist,
                    values: vec![],
                }),
                Some(t) => Err(format!(
                    "found '{}', expected: ',' or 'end of string'",
                    t.describe()
                )),
            };
        }
        let op = match self.peek() {
            None | Some(Token::Comma) => {
                return Ok(Requirement {
                    key,
                    op: Op::Exists,
                    values: vec![],
                });
            }
            Some(Token::Eq) | Some(Token::DoubleEq) => Op::Equals,
            Some(Token::NotEq) => Op::NotEquals,
            Some(Token::Gt) => Op::GreaterThan,
            Some(Token::Lt) => Op::LessThan,
            Some(Token::Ident(w)) if w == "in" => Op::In,
            Some(Token::Ident(w)) if w == "notin" => Op::NotIn,
            Some(t) => {
                return Err(format!(
                    "found '{}', expected: in, notin, =, ==, !=, gt, lt",
                    t.describe()
                ));
            }
        };
        self.pos += 1;
        let values = match op {
            Op::In | Op::NotIn => self.value_set()?,
            _ => match self.peek() {
                Some(Token::Ident(v)) => {
                    let v = v.clone();
                    self.pos += 1;
                    vec![v]
                }
                None | Some(Token::Comma) => vec![String::new()],
                Some(t) => return Err(format!("found '{}', expected: identifier", t.describe())),
            },
        };
        for v in &values {
            validate_value(v)?;
        }
        if matches!(op, Op::GreaterThan | Op::LessThan)
            && values.first().is_none_or(|v| v.parse::<i64>().is_err())
        {
            return Err(format!(
                "for 'Gt', 'Lt' operators, the value must be an integer: {}",
                values.first().cloned().unwrap_or_default()
            ));
        }
        Ok(Requirement { key, op, values })
    }

    /// `(a,b)` after `in`/`notin`, read as kube-apiserver reads it (apimachinery's
    /// `parseValues` and `parseIdentifiersList`): a set, sorted, where an empty
    /// position (`()`, `(,a)`, `(a,)`, `(a,,b)`) is the empty value, but `(a,,)` is
    /// an error.
    fn value_set(&mut self) -> Result<Vec<String>, String> {
        match self.next() {
            Some(Token::Open) => {}
            Some(t) => return Err(format!("found '{}', expected: '('", t.describe())),
            None => return Err("found '', expected: '('".into()),
        }
        let mut values = std::collections::BTreeSet::new();
        match self.peek() {
            Some(Token::Close) => {
                self.pos += 1;
                values.insert(String::new());
            }
            Some(Token::Ident(_) | Token::Comma) => {
                self.identifiers(&mut values)?;
                match self.next() {
                    Some(Token::Close) => {}
                    Some(t) => return Err(format!("found '{}', expected: ')'", t.describe())),
                    None => return Err("found '', expected: ')'".into()),
                }
            }
            Some(t) => {
                return Err(format!(
                    "found '{}', expected: ',', ')' or identifier",
                    t.describe()
                ));
            }
            None => return Err("found '', expected: ',', ')' or identifier".into()),
        }
        Ok(values.into_iter().collect())
    }

    /// The values up to (not including) the closing `)`. Each step consumes a token,
    /// so the loop ends with the input.
    fn identifiers(
        &mut self,
        values: &mut std::collections::BTreeSet<String>,
    ) -> Result<(), String> {
        loop {
            match self.next() {
                Some(Token::Ident(v)) => {
                    values.insert(v);
                    match self.peek() {
                        Some(Token::Comma) => {}
                        Some(Token::Close) => return Ok(()),
                        Some(t) => {
                            return Err(format!("found '{}', expected: ',' or ')'", t.describe()));
                        }
                        None => return Err("found '', expected: ',' or ')'".into()),
                    }
                }
                Some(Token::Comma) => {
                    if values.is_empty() {
                        values.insert(String::new());
                    }
                    match self.peek() {
                        Some(Token::Close) => {
                            values.insert(String::new());
                            return Ok(());
                        }
                        Some(Token::Comma) => {
                            self.pos += 1;
                            values.insert(String::new());
                        }
                        _ => {}
                    }
                }
                Some(t) => {
                    return Err(format!(
                        "found '{}', expected: ',', or identifier",
                        t.describe()
                    ));
                }
                None => return Err("found '', expected: ',', or identifier".into()),
            }
        }
    }
}

/// A label key: an optional DNS-subdomain prefix and `/`, then a name of at
/// most 63 characters (`[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`).
pub fn validate_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(p) = prefix
        && (p.is_empty()
            || p.len() > 253
            || !p.split('.').all(|l| {
                !l.is_empty()
                    && l.len() <= 63
                    && l.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                    && !l.starts_with('-')
                    && !l.ends_with('-')
            }))
    {
        return Err(format!(
            "invalid label key \"{key}\": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
        ));
    }
    if !is_label_name(name) {
        return Err(format!(
            "invalid label key \"{key}\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        ));
    }
    Ok(())
}

fn is_label_name(s: &str) -> bool {
    !s.is_empty() && s.len() <= 63 && is_label_value(s)
}

/// A label value: empty, or like a label name.
pub fn is_label_value(s: &str) -> bool {
    if s.is_empty() {
        return true;
    }
    let b = s.as_bytes();
    s.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

fn validate_value(v: &str) -> Result<(), String> {
    if is_label_value(v) {
        Ok(())
    } else {
        Err(format!(
            "invalid label value: \"{v}\": at key: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        ))
    }
}

impl LabelSelector {
    /// Parses the `labelSelector` query parameter. The error text is the
    /// message of the 400 BadRequest the server answers.
    pub fn parse(input: &str) -> Result<Self, String> {
        let toks = lex(input);
        if toks.is_empty() {
            return Ok(LabelSelector::default());
        }
        let mut p = Parser { toks, pos: 0 };
        let mut reqs = Vec::new();
        loop {
            let r = p
                .requirement()
                .map_err(|e| format!("unable to parse requirement: {e}"))?;
            reqs.push(r);
            match p.next() {
                None => break,
                Some(Token::Comma) => {
                    if p.peek().is_none() {
                        return Err(
                            "unable to parse requirement: found '', expected: identifier".into(),
                        );
                    }
                }
                Some(t) => {
                    return Err(format!(
                        "found '{}', expected: ',' or 'end of string'",
                        t.describe()
                    ));
                }
            }
        }
        Ok(LabelSelector { reqs })
    }

    pub fn is_empty(&self) -> bool {
        self.reqs.is_empty()
    }

    pub fn matches(&self, labels: &Labels) -> bool {
        self.reqs.iter().all(|r| r.matches(labels))
    }
}

impl std::fmt::Display for LabelSelector {
    /// The canonical form: requirements in the order given, no spaces but
    /// the ones `in`/`notin` need, `==` written `=`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self
            .reqs
            .iter()
            .map(|r| {
                let k = &r.key;
                let v = r.values.join(",");
                match r.op {
                    Op::Equals => format!("{k}={v}"),
                    Op::NotEquals => format!("{k}!={v}"),
                    Op::In => format!("{k} in ({v})"),
                    Op::NotIn => format!("{k} notin ({v})"),
                    Op::Exists => k.clone(),
                    Op::DoesNotExist => format!("!{k}"),
                    Op::GreaterThan => format!("{k}>{v}"),
                    Op::LessThan => format!("{k}<{v}"),
                }
            })
            .collect();
        f.write_str(&parts.join(","))
    }
}

/// A field selector (`metadata.name=x,metadata.namespace!=y`). Only fields
/// the server supports for the resource are allowed; values may escape `\,`,
/// `\=` and `\\`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSelector {
    reqs: Vec<(String, bool, String)>,
}

impl FieldSelector {
    pub fn parse(input: &str, supported: &dyn Fn(&str) -> bool) -> Result<Self, String> {
        let mut reqs = Vec::new();
        for term in split_unescaped(input, ',') {
            if term.trim().is_empty() {
                continue;
            }
            let (field, positive, value) = if let Some(i) = find_unescaped(&term, "!=") {
                (&term[..i], false, &term[i + 2..])
            } else if let Some(i) = find_unescaped(&term, "==") {
                (&term[..i], true, &term[i + 2..])
            } else if let Some(i) = find_unescaped(&term, "=") {
                (&term[..i], true, &term[i + 1..])
            } else {
                return Err(format!(
                    "invalid selector: '{input}'; can't understand '{term}'"
                ));
            };
            let field = field.trim();
            if !supported(field) {
                return Err(format!("field label not supported: {field}"));
            }
            reqs.push((field.to_string(), positive, unescape(value)));
        }
        Ok(FieldSelector { reqs })
    }

    pub fn is_empty(&self) -> bool {
        self.reqs.is_empty()
    }

    /// Matches against a lookup of field values (missing fields read as "").
    pub fn matches(&self, lookup: &dyn Fn(&str) -> String) -> bool {
        self.reqs
            .iter()
            .all(|(f, positive, v)| (lookup(f) == *v) == *positive)
    }
}

fn split_unescaped(s: &str, sep: char) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut escaped = false;
    for c in s.chars() {
        if escaped {
            cur.push('\\');
            cur.push(c);
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == sep {
            out.push(std::mem::take(&mut cur));
        } else {
            cur.push(c);
        }
    }
    if escaped {
        cur.push('\\');
    }
    out.push(cur);
    out
}

/// The byte offset of the first `pat` in `s` that no backslash escapes.
fn find_unescaped(s: &str, pat: &str) -> Option<usize> {
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        if c == '\\' {
            // The escaped character, whatever its width, is skipped with it.
            chars.next();
            continue;
        }
        if s[i..].starts_with(pat) {
            return Some(i);
        }
    }
    None
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut escaped = false;
    for c in s.chars() {
        if escaped {
            out.push(c);
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod display_tests {
    use super::*;

    #[test]
    fn canonical_form_round_trips() {
        let s = LabelSelector::parse(
            "app=web, tier != cache,env in (a, b),!legacy,app.kubernetes.io/name,x==y,n>3",
        )
        .unwrap();
        let canonical = s.to_string();
        assert_eq!(
            canonical,
            "app=web,tier!=cache,env in (a,b),!legacy,app.kubernetes.io/name,x=y,n>3"
        );
        assert_eq!(LabelSelector::parse(&canonical).unwrap(), s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn m(sel: &str, l: &[(&str, &str)]) -> bool {
        LabelSelector::parse(sel).unwrap().matches(&labels(l))
    }

    #[test]
    fn field_selectors_with_wide_characters_never_split_one() {
        // Found by the field_selector fuzz target: a scan that stepped one byte at a
        // time sliced inside a two-byte character.
        let any = |_: &str| true;
        assert!(FieldSelector::parse("etattaa\u{551}em{", &any).is_err());
        let sel = FieldSelector::parse("metadata.name=\u{551}x", &any).unwrap();
        assert!(sel.matches(&|_| "\u{551}x".to_owned()));
        // An escaped wide character is skipped whole, and the `=` after it found.
        let sel = FieldSelector::parse("a\\\u{551}b=c", &any).unwrap();
        assert!(sel.matches(&|_| "c".to_owned()));
    }

    #[test]
    fn equality_forms() {
        assert!(m("app=web", &[("app", "web")]));
        assert!(m("app==web", &[("app", "web")]));
        assert!(!m("app=web", &[("app", "db")]));
        assert!(!m("app=web", &[]));
        assert!(m("app!=web", &[("app", "db")]));
        assert!(m("app!=web", &[]), "!= matches objects without the label");
        assert!(!m("app!=web", &[("app", "web")]));
        assert!(m("app=", &[("app", "")]));
    }

    #[test]
    fn set_forms() {
        assert!(m("env in (prod, staging)", &[("env", "staging")]));
        assert!(!m("env in (prod,staging)", &[("env", "dev")]));
        assert!(!m("env in (prod)", &[]));
        assert!(m("env notin (prod)", &[("env", "dev")]));
        assert!(m("env notin (prod)", &[]));
        assert!(!m("env notin (prod,dev)", &[("env", "dev")]));
    }

    #[test]
    fn existence_and_and() {
        assert!(m("app", &[("app", "x")]));
        assert!(!m("app", &[]));
        assert!(m("!app", &[]));
        assert!(!m("!app", &[("app", "")]));
        assert!(m(
            "app=web,tier in (fe),!legacy",
            &[("app", "web"), ("tier", "fe")]
        ));
        assert!(!m(
            "app=web,tier in (fe),!legacy",
            &[("app", "web"), ("tier", "fe"), ("legacy", "1")]
        ));
        assert!(m("", &[]));
        assert!(m(
            "app.kubernetes.io/name=shop",
            &[("app.kubernetes.io/name", "shop")]
        ));
    }

    #[test]
    fn numeric_comparisons() {
        assert!(m("replicas>2", &[("replicas", "3")]));
        assert!(!m("replicas>2", &[("replicas", "2")]));
        assert!(m("replicas<2", &[("replicas", "1")]));
        assert!(LabelSelector::parse("replicas>x").is_err());
    }

    #[test]
    fn value_sets_read_empty_positions_as_kube_apiserver_does() {
        // apimachinery's parseValues/parseIdentifiersList (checked against v1.37.2):
        // a sorted set, where an empty position is the empty value. Found by the
        // label_selector fuzz target: "(ba,)" lost its empty value, so the canonical
        // form of "(ba,,)" did not parse back the same.
        let values = |sel: &str| LabelSelector::parse(sel).unwrap().reqs[0].values.clone();
        assert_eq!(values("a in ()"), [""]);
        assert_eq!(values("a in (,)"), [""]);
        assert_eq!(values("a in (x,)"), ["", "x"]);
        assert_eq!(values("a in (,x)"), ["", "x"]);
        assert_eq!(values("a in (y,,x)"), ["", "x", "y"]);
        assert_eq!(values("a in (x,x)"), ["x"]);
        assert_eq!(values("a in (b,a)"), ["a", "b"]);
        let sel = LabelSelector::parse("a in (x,)").unwrap();
        assert_eq!(sel.to_string(), "a in (,x)");
        assert!(sel.matches(&labels(&[("a", "")])));
    }

    #[test]
    fn syntax_errors() {
        for bad in [
            "=web",
            "app in prod",
            "app in (prod",
            "app in (a,,)",
            "app in (a b)",
            "app=web,",
            "app web",
            "!app=web",
            "a b c",
            "app=we b",
            "-bad=1",
            "app=-x",
            "(",
        ] {
            assert!(
                LabelSelector::parse(bad).is_err(),
                "{bad:?} should not parse"
            );
        }
        let e = LabelSelector::parse("app in prod").unwrap_err();
        assert!(e.starts_with("unable to parse requirement"), "{e}");
    }

    #[test]
    fn field_selectors() {
        let supported = |f: &str| f == "metadata.name" || f == "metadata.namespace";
        let s = FieldSelector::parse(
            "metadata.name=x,metadata.namespace!=kube-system",
            &supported,
        )
        .unwrap();
        let lookup = |f: &str| match f {
            "metadata.name" => "x".to_string(),
            "metadata.namespace" => "shop".to_string(),
            _ => String::new(),
        };
        assert!(s.matches(&lookup));
        let s = FieldSelector::parse("metadata.name==y", &supported).unwrap();
        assert!(!s.matches(&lookup));
        assert!(FieldSelector::parse("spec.foo=1", &supported).is_err());
        assert!(FieldSelector::parse("metadata.name", &supported).is_err());
        let s = FieldSelector::parse(r"metadata.name=a\,b", &supported).unwrap();
        assert!(s.matches(&|_| "a,b".to_string()));
    }
}
