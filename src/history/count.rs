//! A log's count of one object's changes in a window, told by the heads of
//! its records alone, where they can tell it (docs/browse.md, "Speed").
//!
//! `log` counts the entries of an object's timeline: each creation and
//! deletion, and each MODIFIED event that changed a field a default diff
//! compares. Where the writer marked every such event (docs/journal.md,
//! "Status-only changes") and nothing but events came after the version the
//! window began with, the timeline's rules reduce to the marks: no list
//! found the object changed, appeared or gone, and each event follows the
//! version before it. [`Counting`] follows those rules over the heads and
//! says when they do not apply; the timeline then counts.

use crate::journal::schema::kind;
use crate::journal::versions::{Mark, RvKey, VersionHead};
use crate::model::WatchType;

/// The count of one object's changes in `(since, until]`, taken version by
/// version from the one the window began with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counting {
    since: i64,
    until: i64,
    /// The `seq` of the first version counted from.
    first: Option<i64>,
    /// Whether the version before was a deletion; `None` before the first.
    after_deleted: Option<bool>,
    /// Whether the heads still tell the count.
    told: bool,
    changes: usize,
    last: Option<Counted>,
    /// The resourceVersion of the version before; `None` before the first.
    rv: Option<RvKey>,
    /// The lists taken that found the object as it was (their tokens).
    lists: Vec<i64>,
    /// The stream's first list ([`Counting::with_first_list`]).
    first_list: Option<i64>,
}

/// The last change counted: what its version is made of without reading
/// it again ([`VersionHead`]'s, an event's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counted {
    pub seq: i64,
    pub observed_at: i64,
    pub watch_type: WatchType,
    pub rv: RvKey,
    pub mark: Option<Mark>,
    pub body: i64,
}

/// What the heads told of one object in the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    pub changes: usize,
    /// `None` when nothing in the window was a change.
    pub last: Option<Counted>,
}

impl Counting {
    /// A count from `start`, the version the window began with (the last
    /// one the stream stands by observed at or before `since`), when there
    /// is one: it is compared with, not counted.
    pub fn new(since: i64, until: i64, start: Option<&VersionHead>) -> Counting {
        Counting {
            since,
            until,
            first: start.map(|v| v.seq),
            after_deleted: start.map(|v| v.watch_type == Some(WatchType::Deleted)),
            told: true,
            changes: 0,
            last: None,
            rv: start.map(|v| v.rv),
            // A list the start is an item of found it.
            lists: start.and_then(|v| v.list_token).into_iter().collect(),
            first_list: None,
        }
    }

    /// Knowing the token of the stream's first list (that it stands by): an
    /// object whose first version is an item of it was seen, not created (as
    /// `timeline` has it), and is no change.
    pub fn with_first_list(mut self, token: Option<i64>) -> Counting {
        self.first_list = token;
        self
    }

    /// Takes the object's next version after the start. A list's item
    /// with the resourceVersion of the version before it (not a deletion)
    /// found nothing new, and an item of the stream's first list that is the
    /// object's first version was seen, not created: neither is a change, nor
    /// an entry of a log (as `timeline` marks lists' findings, by
    /// resourceVersion). Any other item is a list that may have found
    /// something: the timeline counts.
    pub fn step(&mut self, v: &VersionHead) {
        if !self.told {
            return;
        }
        if v.kind == kind::BASELINE_ITEM {
            let nothing_new = match self.after_deleted {
                Some(false) => self.rv == Some(v.rv),
                // The object's first version.
                None => self.first_list.is_some() && v.list_token == self.first_list,
                Some(true) => false,
            };
            match v.list_token {
                Some(token) if nothing_new => {
                    self.first.get_or_insert(v.seq);
                    self.lists.push(token);
                    self.after_deleted = Some(false);
                    self.rv = Some(v.rv);
                }
                _ => self.told = false,
            }
            return;
        }
        if v.kind != kind::EVENT {
            self.told = false;
            return;
        }
        self.rv = Some(v.rv);
        self.first.get_or_insert(v.seq);
        if v.observed_at > self.since && v.observed_at <= self.until {
            let counted = match (v.watch_type, self.after_deleted, v.mark) {
                (Some(WatchType::Added), _, _) => true,
                (Some(WatchType::Deleted), _, _) => true,
                // The mark links the record just before, which is the
                // version before when it was not a deletion.
                (Some(WatchType::Modified), Some(false), Some(Mark::Changed)) => true,
                (Some(WatchType::Modified), Some(false), Some(Mark::StatusOnly)) => false,
                // Unmarked, first, after a deletion, or of no type: only a
                // reading of the bodies tells.
                _ => {
                    self.told = false;
                    return;
                }
            };
            if counted && let Some(watch_type) = v.watch_type {
                self.changes += 1;
                // Within one object, the log's order is by time, then `seq`.
                if self
                    .last
                    .is_none_or(|l| (l.observed_at, l.seq) <= (v.observed_at, v.seq))
                {
                    self.last = Some(Counted {
                        seq: v.seq,
                        observed_at: v.observed_at,
                        watch_type,
                        rv: v.rv,
                        mark: v.mark,
                        body: v.body,
                    });
                }
            }
        }
        self.after_deleted = Some(v.watch_type == Some(WatchType::Deleted));
    }

    /// Goes on with `run`, the versions that came after those taken so far,
    /// counted without them: as if each of its versions were taken in turn.
    pub fn then(mut self, run: Run) -> Counting {
        self.step(&run.first);
        let rest = run.rest;
        self.told &= rest.told;
        if !self.told {
            return self;
        }
        self.changes += rest.changes;
        self.lists.extend(rest.lists);
        self.rv = rest.rv;
        if let Some(l) = rest.last
            && self
                .last
                .is_none_or(|m| (m.observed_at, m.seq) <= (l.observed_at, l.seq))
        {
            self.last = Some(l);
        }
        // A run begins at a version, so it knows whether its last deleted.
        self.after_deleted = rest.after_deleted;
        self
    }

    /// The count, when the heads told it: not when a version needed its body
    /// read, nor when a list of the stream (its token in `list_tokens`, the
    /// lists it stands by) started after the first version and did not find
    /// the object as it was, for it may have found it gone; nor when an item
    /// taken is of a list the stream does not stand by (one that failed).
    pub fn finish(self, list_tokens: impl Iterator<Item = i64>) -> Option<Tally> {
        let first = self.first?;
        let stood_by: Vec<i64> = list_tokens.collect();
        (self.told && lists_found_it_as_it_was(first, &self.lists, &stood_by)).then_some(Tally {
            changes: self.changes,
            last: self.last,
        })
    }
}

/// Whether the lists of a stream left an object's history from its version
/// at `first` (a `seq`) on as its events tell it: every list the stream
/// stands by (`stood_by`, their tokens) that began after that version found
/// the object as it was (its token in `found`: an item with the
/// resourceVersion of the version before it, not a deletion), and every
/// list in `found` is one it stands by (not one that failed). Another list
/// may have found the object changed or gone: only its timeline tells.
pub fn lists_found_it_as_it_was(first: i64, found: &[i64], stood_by: &[i64]) -> bool {
    stood_by.iter().all(|t| *t < first || found.contains(t))
        && found.iter().all(|t| stood_by.contains(t))
}

/// The versions of one object from some record on, counted before the ones
/// before it are known (read in one pass along the records, before the walks
/// down each object's records find where its window began): each version
/// after the first is counted against the one before it, the first when
/// [`Counting::then`] joins the run to what came before.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    first: VersionHead,
    rest: Counting,
}

impl Run {
    /// A run from `first`, in the window `(since, until]`.
    pub fn new(since: i64, until: i64, first: &VersionHead) -> Run {
        Run {
            first: *first,
            rest: Counting::new(since, until, Some(first)),
        }
    }

    /// Takes the next version.
    pub fn step(&mut self, v: &VersionHead) {
        self.rest.step(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(seq: i64, at: i64, watch_type: WatchType, mark: Option<Mark>) -> VersionHead {
        VersionHead {
            seq,
            object: 7,
            kind: kind::EVENT,
            observed_at: at,
            watch_type: Some(watch_type),
            mark,
            rv: seq as u64,
            list_token: None,
            body: seq * 10,
        }
    }

    fn count(versions: &[VersionHead], lists: &[i64]) -> Option<Tally> {
        let (start, rest) = match versions.split_first() {
            Some((s, rest)) if s.observed_at <= 100 => (Some(s), rest),
            _ => (None, versions),
        };
        let mut c = Counting::new(100, 200, start);
        for v in rest {
            c.step(v);
        }
        c.finish(lists.iter().copied())
    }

    /// Changes, a status-only one, a deletion and a creation in the window
    /// (100, 200], and a change after it.
    fn mixed() -> Vec<VersionHead> {
        use WatchType::*;
        vec![
            event(1, 50, Added, None),
            event(2, 110, Modified, Some(Mark::Changed)),
            event(3, 120, Modified, Some(Mark::StatusOnly)),
            event(4, 130, Deleted, None),
            event(5, 140, Added, None),
            event(6, 150, Modified, Some(Mark::Changed)),
            event(7, 250, Modified, Some(Mark::Changed)),
        ]
    }

    #[test]
    fn changes_are_the_marked_ones_and_every_creation_and_deletion() {
        use WatchType::*;
        let t = count(&mixed(), &[0]).unwrap();
        assert_eq!(t.changes, 4);
        assert_eq!(
            t.last,
            Some(Counted {
                seq: 6,
                observed_at: 150,
                watch_type: Modified,
                rv: 6,
                mark: Some(Mark::Changed),
                body: 60,
            })
        );
    }

    /// Every way of cutting a history into what comes before and a run
    /// counts as taking it whole.
    #[test]
    fn a_run_joined_to_what_came_before_counts_as_the_whole() {
        use WatchType::*;
        let mut item = event(4, 125, Modified, None);
        item.kind = kind::BASELINE_ITEM;
        item.watch_type = None;
        let histories: Vec<Vec<VersionHead>> = vec![
            mixed(),
            vec![
                event(1, 50, Added, None),
                event(2, 110, Deleted, None),
                event(3, 120, Modified, Some(Mark::StatusOnly)),
            ],
            vec![
                event(1, 50, Added, None),
                event(2, 110, Modified, None),
                event(3, 120, Modified, Some(Mark::Changed)),
            ],
            vec![
                event(1, 50, Added, None),
                event(2, 110, Modified, Some(Mark::Changed)),
                item,
            ],
            vec![
                event(1, 120, Added, None),
                event(2, 130, Modified, Some(Mark::Changed)),
                event(3, 140, Modified, Some(Mark::StatusOnly)),
            ],
            // A restart's list that found nothing new, before and in the
            // window, between changes.
            vec![
                event(1, 50, Added, None),
                listed(2, 90, 1, 2),
                event(3, 110, Modified, Some(Mark::Changed)),
                listed(4, 130, 3, 4),
                event(5, 150, Modified, Some(Mark::StatusOnly)),
                event(6, 160, Modified, Some(Mark::Changed)),
            ],
        ];
        for h in &histories {
            let whole = count(h, &[0, 2, 4]);
            let (start, rest) = match h.split_first() {
                Some((s, rest)) if s.observed_at <= 100 => (Some(s), rest),
                _ => (None, &h[..]),
            };
            for cut in 0..rest.len() {
                let (before, after) = rest.split_at(cut);
                let mut c = Counting::new(100, 200, start);
                for v in before {
                    c.step(v);
                }
                let mut run = Run::new(100, 200, &after[0]);
                for v in &after[1..] {
                    run.step(v);
                }
                let joined = c.then(run).finish([0, 2, 4].into_iter());
                assert_eq!(joined, whole, "{h:?} cut at {cut}");
            }
        }
    }

    #[test]
    fn the_version_the_window_began_with_is_compared_with_not_counted() {
        let t = count(&[event(1, 100, WatchType::Added, None)], &[]).unwrap();
        assert_eq!((t.changes, t.last), (0, None));
    }

    #[test]
    fn what_the_marks_cannot_tell_is_left_to_the_timeline() {
        use WatchType::*;
        // Unmarked.
        assert_eq!(
            count(
                &[event(1, 50, Added, None), event(2, 150, Modified, None)],
                &[]
            ),
            None
        );
        // A modification first seen in the window: nothing before it.
        assert_eq!(
            count(&[event(2, 150, Modified, Some(Mark::Changed))], &[]),
            None
        );
        // After a deletion the mark links nothing.
        assert_eq!(
            count(
                &[
                    event(1, 50, Deleted, None),
                    event(2, 150, Modified, Some(Mark::StatusOnly))
                ],
                &[]
            ),
            None
        );
        // A list's item after the first version.
        let mut item = event(2, 150, Modified, None);
        item.kind = kind::BASELINE_ITEM;
        item.watch_type = None;
        assert_eq!(count(&[event(1, 50, Added, None), item], &[]), None);
        // A list that started after the first version.
        assert_eq!(
            count(
                &[
                    event(1, 50, Added, None),
                    event(3, 150, Modified, Some(Mark::Changed))
                ],
                &[2]
            ),
            None
        );
        // Nothing at all.
        assert_eq!(count(&[], &[]), None);
    }

    /// The item at `seq` of the list `token`, with the resourceVersion of
    /// the version at `rv_of`.
    fn listed(seq: i64, at: i64, rv_of: i64, token: i64) -> VersionHead {
        let mut item = event(seq, at, WatchType::Added, None);
        item.kind = kind::BASELINE_ITEM;
        item.watch_type = None;
        item.rv = rv_of as u64;
        item.list_token = Some(token);
        item
    }

    #[test]
    fn a_list_that_found_the_object_as_it_was_is_no_change() {
        use WatchType::*;
        let h = [
            event(1, 50, Added, None),
            event(2, 110, Modified, Some(Mark::Changed)),
            listed(3, 130, 2, 3),
            event(4, 150, Modified, Some(Mark::Changed)),
        ];
        let t = count(&h, &[0, 3]).unwrap();
        assert_eq!(t.changes, 2);
        assert_eq!(t.last.map(|l| l.seq), Some(4));
        // The item is of a list the stream does not stand by (it failed).
        assert_eq!(count(&h, &[0]), None);
        // A list after the first version that did not hold the object may
        // have found it gone.
        assert_eq!(count(&h, &[0, 3, 5]), None);
        // The list found another version: something changed unwatched.
        let mut found = h;
        found[2] = listed(3, 130, 1, 3);
        assert_eq!(count(&found, &[0, 3]), None);
        // After a deletion, a list that shows the object found it re-created.
        let gone = [
            event(1, 50, Added, None),
            event(2, 110, Deleted, None),
            listed(3, 130, 2, 3),
        ];
        assert_eq!(count(&gone, &[0, 3]), None);
        // The object's first version is an item of the stream's first list:
        // seen, not created. Of a later list, it was created unwatched.
        let seen = [
            listed(3, 130, 3, 3),
            event(4, 150, Modified, Some(Mark::Changed)),
        ];
        let counted = |first_list| {
            let mut c = Counting::new(100, 200, None).with_first_list(first_list);
            for v in &seen {
                c.step(v);
            }
            c.finish([3].into_iter())
        };
        assert_eq!(counted(Some(3)).map(|t| t.changes), Some(1));
        assert_eq!(counted(Some(1)), None);
        assert_eq!(counted(None), None);
        // The window began with the list's item: it found the object.
        let t = count(
            &[
                listed(3, 90, 3, 3),
                event(4, 150, Modified, Some(Mark::Changed)),
            ],
            &[3],
        )
        .unwrap();
        assert_eq!(t.changes, 1);
    }

    #[test]
    fn a_list_item_the_window_began_with_is_only_compared_with() {
        let mut item = event(1, 50, WatchType::Added, None);
        item.kind = kind::BASELINE_ITEM;
        item.watch_type = None;
        let t = count(
            &[
                item,
                event(3, 150, WatchType::Modified, Some(Mark::Changed)),
            ],
            &[0],
        )
        .unwrap();
        assert_eq!(t.changes, 1);
    }
}
