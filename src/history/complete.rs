//! Whether an answer is complete (docs/consistency.md): every stream it draws on had a
//! baseline before the window, no gap inside it, was available throughout, and
//! was watched up to the window's end. Completeness is proven from baselines and
//! durable points, never assumed from an absence of records.

use super::{History, Scope, StreamHistory, cover};
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
    /// Where in the journal's order it starts: the `seq` of the record that
    /// opened it, when one did (what the stream recorded before comes before
    /// it, the list that ended it after, however close their times).
    pub seq: Option<i64>,
}

impl Missing {
    /// One line for a warning, times in RFC 3339 UTC (JSON).
    pub fn describe(&self) -> String {
        self.describe_with(&utc)
    }

    /// One line for a warning, times as `time` writes them.
    pub fn describe_with(&self, time: &dyn Fn(i64) -> String) -> String {
        format!("{}: {}", self.stream, self.what_with(time))
    }

    /// The stretch and why, without the stream.
    pub fn what(&self) -> String {
        self.what_with(&utc)
    }

    /// [`Missing::what`], times as `time` writes them.
    pub fn what_with(&self, time: &dyn Fn(i64) -> String) -> String {
        match self.when_with(time) {
            Some(when) => format!("{when} ({})", self.reason),
            None => self.reason.clone(),
        }
    }

    /// The stretch alone (`None` when the whole question is missing).
    pub fn when(&self) -> Option<String> {
        self.when_with(&utc)
    }

    /// [`Missing::when`], times as `time` writes them.
    pub fn when_with(&self, t: &dyn Fn(i64) -> String) -> Option<String> {
        match (self.from, self.to) {
            (Some(a), Some(b)) => Some(format!("{} .. {} not covered", t(a), t(b))),
            (Some(a), None) => Some(format!("not covered since {}", t(a))),
            (None, Some(b)) => Some(format!("not covered before {}", t(b))),
            (None, None) => None,
        }
    }
}

/// A time as JSON answers write it: RFC 3339 UTC.
fn utc(t: i64) -> String {
    Millis::from_ms(t).to_string()
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

/// Why a namespace that streams of every namespace covered is unknown all the
/// same: nothing in it was ever recorded, and no recorded Namespace has its
/// name. A typo (`-n shpo`) reads so, never as "no changes".
pub const NEVER_SEEN: &str =
    "never seen: no object in it and no Namespace of that name was ever recorded";

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
        self.missing
            .iter()
            .any(|m| m.reason == NOTHING_RECORDED || m.reason.starts_with(NEVER_SEEN))
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
                    seq: ms.iter().filter_map(|m| m.seq).min(),
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
    ///
    /// Streams of one type that cover the same objects count together
    /// (docs/consistency.md, "Several streams over one object"): a stretch
    /// one of them missed is missing only where none of the others without a
    /// label selector watched it. A question about every namespace is covered
    /// only by streams of every namespace: streams of some namespaces leave
    /// the others unknown.
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
                seq: None,
            });
        }
        if let Some(ns) = &scope.namespace
            && !streams.is_empty()
            && !streams
                .iter()
                .any(|s| s.info.namespace.as_deref() == Some(ns))
            && let Some(m) = self.never_seen(scope, ns)
        {
            missing.push(m);
        }
        let start = since.unwrap_or(until);
        for (i, s) in streams.iter().enumerate() {
            let same_type = |o: &&&StreamHistory| {
                o.info.resource.group == s.info.resource.group
                    && o.info.resource.resource == s.info.resource.resource
            };
            // The others that watched what this one holds, and every change of it.
            let others: Vec<&cover::Holes> = streams
                .iter()
                .enumerate()
                .filter(|(j, o)| *j != i && same_type(o))
                .map(|(_, o)| o)
                .filter(|o| o.info.selector.is_none() && holds_all_of(o, s, scope))
                .map(|o| &o.holes)
                .collect();
            let own = self.stream_missing(s, since, until);
            if others.is_empty() {
                missing.extend(own);
                continue;
            }
            let watched_by_none = cover::Holes::common(others);
            for m in own {
                missing.extend(uncovered_part(m, &watched_by_none, start, until));
            }
        }
        if scope.namespace.is_none() {
            missing.extend(self.unrecorded_namespaces(streams));
        }
        Completeness { missing }
    }

    /// A namespace that only streams of every namespace cover, and that the
    /// journal never saw ([`NEVER_SEEN`]), with the closest namespace it saw.
    /// `None` when it was seen (or the journal cannot tell: the answer stands).
    fn never_seen(&self, scope: &Scope, namespace: &str) -> Option<Missing> {
        if self
            .journal
            .namespace_seen(&self.cluster, namespace)
            .unwrap_or(true)
        {
            return None;
        }
        let seen = self
            .journal
            .namespaces_seen(&self.cluster)
            .unwrap_or_default();
        let reason = match super::suggest::closest(namespace, seen.iter().map(String::as_str)) {
            Some(close) => format!("{NEVER_SEEN}; did you mean {close:?}?"),
            None => NEVER_SEEN.to_string(),
        };
        Some(Missing {
            stream: describe_scope(scope),
            from: None,
            to: None,
            reason,
            seq: None,
        })
    }

    /// For a question about every namespace: each namespaced type that only
    /// streams of some namespaces recorded (no stream of every namespace
    /// without a selector) leaves the other namespaces unknown.
    fn unrecorded_namespaces(&self, streams: &[&StreamHistory]) -> Vec<Missing> {
        let mut out = Vec::new();
        let mut types: Vec<(&str, &str)> = Vec::new();
        for s in streams.iter().filter(|s| s.info.resource.namespaced) {
            let key = (
                s.info.resource.group.as_str(),
                s.info.resource.resource.as_str(),
            );
            if types.contains(&key) {
                continue;
            }
            types.push(key);
            let of_type: Vec<&&StreamHistory> = streams
                .iter()
                .filter(|o| {
                    (
                        o.info.resource.group.as_str(),
                        o.info.resource.resource.as_str(),
                    ) == key
                })
                .collect();
            // A stream of every namespace reports its own holes.
            if of_type
                .iter()
                .any(|o| o.info.namespace.is_none() && o.info.selector.is_none())
            {
                continue;
            }
            let mut namespaces: Vec<&str> = of_type
                .iter()
                .filter_map(|o| o.info.namespace.as_deref())
                .collect();
            if namespaces.is_empty() {
                continue;
            }
            namespaces.sort_unstable();
            namespaces.dedup();
            let name = format!("{} in other namespaces", s.info.resource.group_resource());
            let reason = format!(
                "only namespace{} {} {} recorded; other namespaces were not",
                if namespaces.len() == 1 { "" } else { "s" },
                namespaces.join(", "),
                if namespaces.len() == 1 { "was" } else { "were" },
            );
            let whole = Missing {
                stream: name,
                from: None,
                to: None,
                reason,
                seq: None,
            };
            out.push(whole);
        }
        out
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
                seq: None,
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
                seq: None,
            });
            return out;
        };
        if from > start {
            out.push(Missing {
                stream: name.clone(),
                from: None,
                to: Some(from),
                reason: "recording started later".into(),
                seq: None,
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
                    seq: Some(w.seq),
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
                seq: None,
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
                seq: None,
            });
        }
        out
    }
}

/// Whether `other` holds every object of `stream` the question is about: it
/// covers every namespace, or the one `stream` covers, or (for a question
/// about one namespace) that one.
fn holds_all_of(other: &StreamHistory, stream: &StreamHistory, scope: &Scope) -> bool {
    if !stream.info.resource.namespaced {
        return true;
    }
    match (&other.info.namespace, &stream.info.namespace) {
        (None, _) => true,
        (Some(a), Some(b)) => a == b,
        (Some(a), None) => scope.namespace.as_ref() == Some(a),
    }
}

/// The part of a missing stretch that `holes` (where no other stream
/// watched) still leaves missing, in pieces; an open end stays open where the
/// piece reaches it.
fn uncovered_part(m: Missing, holes: &cover::Holes, start: i64, until: i64) -> Vec<Missing> {
    let a = m.from.unwrap_or(start.min(until));
    let b = m.to.unwrap_or(until);
    // Only the part within the question can be covered by the others; a
    // stretch that began before it or ends after it keeps its ends.
    let (lo, hi) = (a.max(start.min(until)), b.min(until));
    if lo > hi {
        // Outside the question: kept as it was.
        return vec![m];
    }
    holes
        .within(lo, hi)
        .into_iter()
        .map(|(x, y)| {
            let x = if x == lo { a } else { x };
            let y = if y == hi { b } else { y };
            Missing {
                stream: m.stream.clone(),
                from: if m.from.is_none() && x == a {
                    None
                } else {
                    Some(x)
                },
                to: if m.to.is_none() && y == b {
                    None
                } else {
                    Some(y)
                },
                reason: m.reason.clone(),
                seq: m.seq.filter(|_| x == a),
            }
        })
        .collect()
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
            seq: None,
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
