//! The truth about a played history, from the server's own record of writes
//! (the simulator's answers to them, timed by this process) and from when
//! each recorder surely watched. Never from what krply answers.

use super::histories::{Key, Kind, Op, SELECTOR, Scope};
use super::run::{Recorder, Trace, Written};

/// The truth for the answers of one journal: the recorders whose history it
/// holds (its own, and those of the journals imported into it).
pub struct Oracle<'t> {
    pub trace: &'t Trace,
    pub journals: Vec<usize>,
}

impl<'t> Oracle<'t> {
    pub fn new(trace: &'t Trace, journals: &[usize]) -> Oracle<'t> {
        Oracle {
            trace,
            journals: journals.to_vec(),
        }
    }

    fn recorders(&self) -> impl Iterator<Item = &'t super::run::Recorder> + '_ {
        self.trace
            .recorders
            .iter()
            .filter(|r| self.journals.contains(&r.scope.journal))
    }

    /// Whether a recorder of this journal without a selector held `w`'s
    /// object and watched while it was made: then its version must be there.
    pub fn covered(&self, w: &Written) -> bool {
        self.recorders().any(|r| {
            !r.scope.selector && r.scope.holds(&w.key) && r.watched_kind(w.key.kind, w.t0, w.t1)
        })
    }

    /// Whether any recorder of this journal saw `w` happen (a stream with a
    /// selector sees a write of an object that matched before or after it).
    pub fn seen_by_watch(&self, w: &Written) -> bool {
        self.recorders()
            .any(|r| Oracle::concerns(&r.scope, w) && r.watched_kind(w.key.kind, w.t0, w.t1))
    }

    /// The recorders of this journal (or of the journals imported into it)
    /// that recorded the stream named `id` (`configmaps.v1@shop?tier=web`, or
    /// `configmaps.v1@shop (imported 3eca6bb4#1)` as segments brought it),
    /// and the kind it holds.
    pub fn recorders_of(&self, id: &str) -> (Option<Kind>, Vec<&'t Recorder>) {
        let id = id.split_once(" (imported ").map_or(id, |(id, _)| id);
        let kind = Kind::ALL.into_iter().find(|k| {
            id.strip_prefix(k.stream())
                .is_some_and(|rest| rest.starts_with('@'))
        });
        let recorders = kind
            .map(|kind| {
                self.recorders()
                    .filter(|r| r.scope.kinds.contains(&kind) && r.scope.stream(kind) == id)
                    .collect()
            })
            .unwrap_or_default();
        (kind, recorders)
    }

    /// Whether a write is one a stream of `scope` sees happen: its kind and
    /// namespace, and (with the selector) an object that matched before or
    /// after it.
    pub fn concerns(scope: &Scope, w: &Written) -> bool {
        let web = SELECTOR.trim_start_matches("tier=");
        scope.holds(&w.key)
            && (!scope.selector || w.tier_before == Some(web) || w.tier_after == Some(web))
    }

    /// Every write of `key`, oldest first.
    pub fn writes_of<'a>(&'a self, key: &'a Key) -> impl Iterator<Item = &'t Written> + 'a {
        self.trace.writes.iter().filter(move |w| &w.key == key)
    }

    /// The write of `key` that made `rv`.
    pub fn write(&self, key: &Key, rv: &str) -> Option<&'t Written> {
        self.writes_of(key).find(|w| w.rv == rv)
    }

    /// The version of `key` at `at` (a quiet moment): its last write before,
    /// `None` when it did not exist.
    pub fn state_at(&self, key: &Key, at: i64) -> Option<&'t Written> {
        self.writes_of(key)
            .filter(|w| w.t1 < at)
            .last()
            .filter(|w| w.op != Op::Delete)
    }

    /// The deletions a relist that fell in `since..until` found, that `log`
    /// over that window must show. For each object, the times this journal
    /// watched it (by any of its streams without a selector and not
    /// pruned, merged); each stretch between two of them whose relist the
    /// window holds; the object existed when watching stopped, was gone when
    /// the relist was in the journal, and no recorder of the journal watched
    /// its deletion. Its last deletion in the stretch is given. The
    /// journals imported into this one count as its own: their lanes share
    /// their objects with its streams.
    pub fn found_gone(&self, since: i64, until: i64) -> Vec<&'t Written> {
        let mut out = Vec::new();
        for key in self.keys() {
            let mut watching: Vec<(i64, i64)> = Vec::new();
            for r in self.recorders() {
                if r.scope.selector
                    || !r.scope.holds(&key)
                    || r.pruned.iter().any(|&(k, _)| k == key.kind)
                {
                    continue;
                }
                watching.extend(r.watching.iter().copied());
            }
            watching.sort_unstable();
            let mut merged: Vec<(i64, i64)> = Vec::new();
            for (a, b) in watching {
                match merged.last_mut() {
                    Some(last) if a <= last.1 => last.1 = last.1.max(b),
                    _ => merged.push((a, b)),
                }
            }
            for pair in merged.windows(2) {
                let ((_, stopped), (relisted, _)) = (pair[0], pair[1]);
                if std::env::var_os("DBG_FG").is_some()
                    && self
                        .writes_of(&key)
                        .any(|w| w.op == Op::Delete && stopped < w.t0 && w.t1 < relisted)
                {
                    eprintln!(
                        "FG {key:?} in={} existed={} gone={} seen={:?}",
                        since < relisted && relisted <= until,
                        self.state_at(&key, stopped).is_some(),
                        self.state_at(&key, relisted).is_none(),
                        self.writes_of(&key)
                            .filter(|w| w.op == Op::Delete && stopped < w.t0 && w.t1 < relisted)
                            .map(|w| self.seen_by_watch(w))
                            .collect::<Vec<_>>()
                    );
                }
                // The relist is in the journal by `relisted`, and made after
                // every step before the one that ended the stretch, a mark
                // in it included: after `since` whenever `since` is.
                if !(since < relisted && relisted <= until) {
                    continue;
                }
                if self.state_at(&key, stopped).is_none() || self.state_at(&key, relisted).is_some()
                {
                    continue;
                }
                let deleted = self
                    .writes_of(&key)
                    .filter(|w| w.op == Op::Delete && stopped < w.t0 && w.t1 < relisted)
                    .last();
                if let Some(w) = deleted.filter(|w| !self.seen_by_watch(w)) {
                    out.push(w);
                }
            }
        }
        out
    }

    /// Every object that ever existed.
    pub fn keys(&self) -> Vec<Key> {
        let mut keys: Vec<Key> = self.trace.writes.iter().map(|w| w.key.clone()).collect();
        keys.sort();
        keys.dedup();
        keys
    }

    /// Whether a recorder of this journal ever held `key`'s kind and
    /// namespace.
    pub fn ever_recorded(&self, key: &Key) -> bool {
        self.recorders().any(|r| r.scope.holds(key))
    }

    /// Whether a question about namespace `ns` (`None`: every one) is about
    /// `key`: its namespace, and a kind recorded there (a namespace-wide
    /// question is about the recorded types; docs/consistency.md).
    pub fn asked(&self, key: &Key, ns: Option<&str>) -> bool {
        ns.is_none_or(|ns| ns == key.namespace)
            && self.recorders().any(|r| {
                r.scope.kinds.contains(&key.kind)
                    && (ns.is_none() || r.scope.namespace.is_none_or(|n| n == key.namespace))
            })
    }
}
