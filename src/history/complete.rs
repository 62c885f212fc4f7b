//! Whether an answer is complete (docs/consistency.md): every stream it draws on had a
//! baseline before the window, no gap inside it, was available throughout, and
//! was watched up to the window's end. Completeness is proven from baselines and
//! durable points, never assumed from an absence of records.

use super::{History, Scope, StreamHistory};
use crate::journal::read::StreamState;
use crate::time::Millis;

/// One stretch an answer does not cover.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing {
    /// The stream (`configmaps.v1@shop`), or the scope when nothing covers it.
    pub stream: String,
    pub from: Option<i64>,
    pub to: Option<i64>,
    pub reason: String,
}

impl Missing {
    /// One line for a warning.
    pub fn describe(&self) -> String {
        format!("{}: {}", self.stream, self.what())
    }

    /// The stretch and why, without the stream.
    pub fn what(&self) -> String {
        match self.when() {
            Some(when) => format!("{when} ({})", self.reason),
            None => self.reason.clone(),
        }
    }

    /// The stretch alone (`None` when the whole question is missing).
    pub fn when(&self) -> Option<String> {
        let t = |t: i64| Millis::from_ms(t).to_string();
        match (self.from, self.to) {
            (Some(a), Some(b)) => Some(format!("{} .. {} not covered", t(a), t(b))),
            (Some(a), None) => Some(format!("not covered since {}", t(a))),
            (None, Some(b)) => Some(format!("not covered before {}", t(b))),
            (None, None) => None,
        }
    }
}

/// Whether two reasons tell the same cause, told by different streams: equal
/// but for their numbers (a 410 names each stream's own resourceVersions).
pub fn same_cause(a: &str, b: &str) -> bool {
    let mask = |s: &str| -> String {
        let mut out = String::with_capacity(s.len());
        for c in s.chars() {
            if c.is_ascii_digit() {
                if !out.ends_with('#') {
                    out.push('#');
                }
            } else {
                out.push(c);
            }
        }
        out
    };
    a == b || mask(a) == mask(b)
}

/// Why a scope has no stream at all: no recorder ever covered it.
pub const NOTHING_RECORDED: &str = "never recorded (`kubectl krply coverage -A` shows what is)";

/// Whether an answer is complete, and if not, what it lacks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Completeness {
    pub missing: Vec<Missing>,
}

impl Completeness {
    pub fn complete(&self) -> bool {
        self.missing.is_empty()
    }

    /// True when no stream covers the question at all (a namespace or type
    /// never recorded): the answer knows nothing, which is not "no changes".
    pub fn nothing_recorded(&self) -> bool {
        self.missing.iter().any(|m| m.reason == NOTHING_RECORDED)
    }

    pub fn warnings(&self) -> Vec<String> {
        self.missing.iter().map(Missing::describe).collect()
    }

    /// The warnings for people: overlapping stretches with the same cause
    /// (see [`same_cause`]) are one line naming every stream they hit,
    /// spanning from the earliest start to the latest end among them. Each is
    /// one [`Missing`] whose `stream` joins its streams by ", ", with the
    /// first stream's reason.
    pub fn grouped(&self) -> Vec<Missing> {
        let span = |m: &Missing| (m.from.unwrap_or(i64::MIN), m.to.unwrap_or(i64::MAX));
        let mut groups: Vec<(String, Vec<&Missing>)> = Vec::new();
        for m in &self.missing {
            let (from, to) = span(m);
            let joins = |(r, ms): &&mut (String, Vec<&Missing>)| {
                same_cause(r, &m.reason)
                    && ms.iter().any(|o| {
                        let (f, t) = span(o);
                        f <= to && from <= t
                    })
            };
            match groups.iter_mut().find(joins) {
                Some((_, ms)) => ms.push(m),
                None => groups.push((m.reason.clone(), vec![m])),
            }
        }
        groups
            .into_iter()
            .map(|(reason, ms)| {
                let mut streams: Vec<&str> = ms.iter().map(|m| m.stream.as_str()).collect();
                streams.dedup();
                let from = ms.iter().filter_map(|m| m.from).min();
                let to = if ms.iter().any(|m| m.from.is_some() && m.to.is_none()) {
                    None
                } else {
                    ms.iter().filter_map(|m| m.to).max()
                };
                Missing {
                    stream: streams.join(", "),
                    from,
                    to,
                    reason,
                }
            })
            .collect()
    }

    /// The distinct streams that are missing something.
    pub fn streams(&self) -> Vec<String> {
        let mut out: Vec<String> = self.missing.iter().map(|m| m.stream.clone()).collect();
        out.dedup();
        out
    }
}

impl History<'_> {
    /// Completeness of an answer about `(since, until]` (or the single instant
    /// `until` when `since` is `None`) drawing on `streams`.
    pub fn completeness(
        &self,
        scope: &Scope,
        streams: &[&StreamHistory],
        since: Option<i64>,
        until: i64,
    ) -> Completeness {
        let mut missing = Vec::new();
        if streams.is_empty() {
            missing.push(Missing {
                stream: describe_scope(scope),
                from: None,
                to: None,
                reason: NOTHING_RECORDED.into(),
            });
        }
        for s in streams {
            missing.extend(self.stream_missing(s, since, until));
        }
        Completeness { missing }
    }

    fn stream_missing(&self, s: &StreamHistory, since: Option<i64>, until: i64) -> Vec<Missing> {
        let name = s.info.name();
        let start = since.unwrap_or(until);
        let mut out = Vec::new();
        // Objects the selector left out were never recorded at all.
        if let Some(selector) = &s.info.selector {
            out.push(Missing {
                stream: name.clone(),
                from: None,
                to: None,
                reason: format!("only objects matching the label selector {selector} are recorded"),
            });
        }
        let Some(from) = s.from() else {
            let reason = match &s.coverage.unavailable {
                Some((_, reason)) => format!("unavailable: {reason}"),
                None => "never listed".into(),
            };
            out.push(Missing {
                stream: name,
                from: None,
                to: None,
                reason,
            });
            return out;
        };
        if from > start {
            out.push(Missing {
                stream: name.clone(),
                from: None,
                to: Some(from),
                reason: "recording started later".into(),
            });
        }
        for w in &s.coverage.windows {
            let w_to = w.to.unwrap_or(i64::MAX);
            // A window (from, to) overlaps the answer's [start, until].
            if w.from < until && w_to > start {
                out.push(Missing {
                    stream: name.clone(),
                    from: Some(w.from),
                    to: w.to,
                    reason: w.reason.clone(),
                });
            }
        }
        if let Some((since_t, reason)) = &s.coverage.unavailable
            && *since_t <= until
            && !s.coverage.windows.iter().any(|w| w.to.is_none())
        {
            out.push(Missing {
                stream: name.clone(),
                from: Some(*since_t),
                to: None,
                reason: format!("unavailable: {reason}"),
            });
        }
        if let Some(end) = s.end(self.now)
            && end < until
            && !s.coverage.windows.iter().any(|w| w.to.is_none())
        {
            let reason = if s.coverage.state == StreamState::Stopped {
                "no recorder was watching"
            } else {
                "not watched yet"
            };
            out.push(Missing {
                stream: name,
                from: Some(end),
                to: Some(until),
                reason: reason.into(),
            });
        }
        out
    }
}

fn describe_scope(scope: &Scope) -> String {
    let place = match &scope.namespace {
        Some(ns) => format!("namespace {ns}"),
        None => "every namespace".to_string(),
    };
    match &scope.types {
        None => place,
        Some(ts) => format!(
            "{} in {place}",
            ts.iter()
                .map(|t| t.group_resource())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod cause_tests {
    use super::*;

    #[test]
    fn streams_of_one_410_share_a_line_and_two_410s_do_not() {
        let m = |stream: &str, from: i64, to: i64, reason: &str| Missing {
            stream: stream.into(),
            from: Some(from),
            to: Some(to),
            reason: reason.into(),
        };
        let c = Completeness {
            missing: vec![
                m(
                    "cm",
                    10,
                    20,
                    "410 Expired: too old resource version: 58 (59)",
                ),
                m(
                    "deploy",
                    11,
                    21,
                    "410 Expired: too old resource version: 58 (58)",
                ),
                m(
                    "cm",
                    100,
                    120,
                    "410 Expired: too old resource version: 90 (91)",
                ),
                m("svc", 12, 19, "recorder not running"),
            ],
        };
        let g = c.grouped();
        assert_eq!(g.len(), 3, "{g:?}");
        assert_eq!(
            (g[0].stream.as_str(), g[0].from, g[0].to),
            ("cm, deploy", Some(10), Some(21))
        );
        assert_eq!(g[1].stream, "cm");
        assert!(!same_cause("410 Expired", "recorder not running"));
    }
}
