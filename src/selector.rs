//! Kubernetes label selectors (`app=web,tier!=cache,env in (a,b),!legacy`):
//! parsed and validated the way the API server does, so a bad selector is a
//! usage error before anything is recorded, and matched against labels.

use std::collections::BTreeMap;
use std::fmt;

/// One requirement of a selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
}

/// A parsed selector: every requirement must hold.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Selector(pub Vec<Requirement>);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SelectorError(pub String);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Ident(String),
    Comma,
    Open,
    Close,
    Bang,
    Eq,
    DoubleEq,
    NotEq,
}

fn tokenize(s: &str) -> Result<Vec<Token>, SelectorError> {
    let mut out = Vec::new();
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' => i += 1,
            ',' => {
                out.push(Token::Comma);
                i += 1;
            }
            '(' => {
                out.push(Token::Open);
                i += 1;
            }
            ')' => {
                out.push(Token::Close);
                i += 1;
            }
            '!' if chars.get(i + 1) == Some(&'=') => {
                out.push(Token::NotEq);
                i += 2;
            }
            '!' => {
                out.push(Token::Bang);
                i += 1;
            }
            '=' if chars.get(i + 1) == Some(&'=') => {
                out.push(Token::DoubleEq);
                i += 2;
            }
            '=' => {
                out.push(Token::Eq);
                i += 1;
            }
            c if is_ident_char(c) => {
                let start = i;
                while i < chars.len() && is_ident_char(chars[i]) {
                    i += 1;
                }
                out.push(Token::Ident(chars[start..i].iter().collect()));
            }
            other => return Err(SelectorError(format!("unexpected character {other:?}"))),
        }
    }
    Ok(out)
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/')
}

fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && s.ends_with(|c: char| c.is_ascii_alphanumeric())
}

fn check_key(key: &str) -> Result<(), SelectorError> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(p) = prefix
        && (p.is_empty()
            || p.len() > 253
            || !p.split('.').all(|l| {
                !l.is_empty()
                    && l.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            }))
    {
        return Err(SelectorError(format!("invalid label key prefix {p:?}")));
    }
    if !valid_name(name) {
        return Err(SelectorError(format!("invalid label key {key:?}")));
    }
    Ok(())
}

fn check_value(v: &str) -> Result<(), SelectorError> {
    if v.is_empty() || valid_name(v) {
        Ok(())
    } else {
        Err(SelectorError(format!("invalid label value {v:?}")))
    }
}

impl Selector {
    pub fn parse(s: &str) -> Result<Selector, SelectorError> {
        let tokens = tokenize(s)?;
        let mut reqs = Vec::new();
        let mut i = 0;
        let expect_ident = |i: usize, what: &str| -> Result<String, SelectorError> {
            match tokens.get(i) {
                Some(Token::Ident(s)) => Ok(s.clone()),
                _ => Err(SelectorError(format!("expected {what}"))),
            }
        };
        if tokens.is_empty() {
            return Ok(Selector::default());
        }
        loop {
            let req = if tokens.get(i) == Some(&Token::Bang) {
                let key = expect_ident(i + 1, "a label key after '!'")?;
                check_key(&key)?;
                i += 2;
                Requirement::DoesNotExist(key)
            } else {
                let key = expect_ident(i, "a label key")?;
                check_key(&key)?;
                i += 1;
                match tokens.get(i) {
                    None | Some(Token::Comma) => Requirement::Exists(key),
                    Some(Token::Eq) | Some(Token::DoubleEq) | Some(Token::NotEq) => {
                        let neg = tokens[i] == Token::NotEq;
                        i += 1;
                        let value = match tokens.get(i) {
                            Some(Token::Ident(v)) => {
                                i += 1;
                                v.clone()
                            }
                            None | Some(Token::Comma) => String::new(),
                            _ => {
                                return Err(SelectorError(format!("expected a value for {key:?}")));
                            }
                        };
                        check_value(&value)?;
                        if neg {
                            Requirement::NotEquals(key, value)
                        } else {
                            Requirement::Equals(key, value)
                        }
                    }
                    Some(Token::Ident(op)) if op == "in" || op == "notin" => {
                        let notin = op == "notin";
                        i += 1;
                        if tokens.get(i) != Some(&Token::Open) {
                            return Err(SelectorError(format!("expected '(' after {op}")));
                        }
                        i += 1;
                        let mut values = Vec::new();
                        loop {
                            match tokens.get(i) {
                                Some(Token::Ident(v)) => {
                                    check_value(v)?;
                                    values.push(v.clone());
                                    i += 1;
                                }
                                Some(Token::Close) if values.is_empty() => {}
                                _ => {
                                    return Err(SelectorError(
                                        "expected a value in the set".into(),
                                    ));
                                }
                            }
                            match tokens.get(i) {
                                Some(Token::Comma) => i += 1,
                                Some(Token::Close) => {
                                    i += 1;
                                    break;
                                }
                                _ => {
                                    return Err(SelectorError(
                                        "expected ',' or ')' in the set".into(),
                                    ));
                                }
                            }
                        }
                        if values.is_empty() {
                            return Err(SelectorError(format!("empty set for {key:?}")));
                        }
                        if notin {
                            Requirement::NotIn(key, values)
                        } else {
                            Requirement::In(key, values)
                        }
                    }
                    _ => return Err(SelectorError(format!("unexpected token after {key:?}"))),
                }
            };
            reqs.push(req);
            match tokens.get(i) {
                None => break,
                Some(Token::Comma) => {
                    i += 1;
                    if i >= tokens.len() {
                        return Err(SelectorError("trailing ','".into()));
                    }
                }
                _ => return Err(SelectorError("expected ',' between requirements".into())),
            }
        }
        Ok(Selector(reqs))
    }

    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.0.iter().all(|r| match r {
            Requirement::Equals(k, v) => labels.get(k) == Some(v),
            Requirement::NotEquals(k, v) => labels.get(k) != Some(v),
            Requirement::In(k, vs) => labels.get(k).is_some_and(|l| vs.contains(l)),
            Requirement::NotIn(k, vs) => labels.get(k).is_none_or(|l| !vs.contains(l)),
            Requirement::Exists(k) => labels.contains_key(k),
            Requirement::DoesNotExist(k) => !labels.contains_key(k),
        })
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for Selector {
    /// The canonical form, as the API server prints it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|r| match r {
                Requirement::Equals(k, v) => format!("{k}={v}"),
                Requirement::NotEquals(k, v) => format!("{k}!={v}"),
                Requirement::In(k, vs) => format!("{k} in ({})", vs.join(",")),
                Requirement::NotIn(k, vs) => format!("{k} notin ({})", vs.join(",")),
                Requirement::Exists(k) => k.clone(),
                Requirement::DoesNotExist(k) => format!("!{k}"),
            })
            .collect();
        f.write_str(&parts.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn parses_the_full_grammar() {
        let s = Selector::parse(
            "app=web, tier != cache,env in (a, b),!legacy,app.kubernetes.io/name,x==y",
        )
        .unwrap();
        assert_eq!(s.0.len(), 6);
        assert_eq!(
            s.to_string(),
            "app=web,tier!=cache,env in (a,b),!legacy,app.kubernetes.io/name,x=y"
        );
        let l = labels(&[
            ("app", "web"),
            ("env", "a"),
            ("app.kubernetes.io/name", "n"),
            ("x", "y"),
        ]);
        assert!(s.matches(&l));
        assert!(!s.matches(&labels(&[("app", "web")])));
        assert!(Selector::parse("").unwrap().is_empty());
        assert!(
            Selector::parse("a notin (b)")
                .unwrap()
                .matches(&labels(&[]))
        );
        assert!(!Selector::parse("a=").unwrap().matches(&labels(&[])));
    }

    #[test]
    fn rejects_bad_selectors() {
        for bad in [
            "=x", "a in b", "a in ()", "a in (b", "a,", "a b", "a=b=c", "a=(b)", "a=-b", "!",
            "Bad/x=y", "a=b;c",
        ] {
            assert!(Selector::parse(bad).is_err(), "{bad}");
        }
    }
}
