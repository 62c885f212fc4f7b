//! The bounded history window of one resource: the most recent events, kept
//! for watch resume and for serving paged lists from an older snapshot.
//!
//! Two floors bound what can be served. `evicted` is the highest RV that fell
//! out of the window (it was full); `compacted` is the RV of the last
//! compaction (what etcd compaction does to old revisions). A new watch or a
//! snapshot read from RV `R` needs `R >= max(evicted, compacted)`; otherwise
//! the answer is 410 Expired, `too old resource version: R (floor)`. A watch
//! that is already streaming reads the window directly, so compaction does
//! not break it (as with a real watch cache); it only expires once events it
//! has not sent yet are evicted (it fell behind the window).

use std::collections::VecDeque;

#[derive(Debug)]
pub(crate) struct History<E> {
    events: VecDeque<(u64, E)>,
    capacity: usize,
    evicted: u64,
    compacted: u64,
}

/// A resume point older than the window: `(requested, floor)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TooOld {
    pub requested: u64,
    pub floor: u64,
}

impl<E: Clone> History<E> {
    /// A window of `capacity` events whose history starts after `floor`.
    pub(crate) fn new(capacity: usize, floor: u64) -> Self {
        History {
            events: VecDeque::with_capacity(capacity.min(1024)),
            capacity,
            evicted: floor,
            compacted: 0,
        }
    }

    /// Appends the event of a write (RVs only grow); evicts the oldest one
    /// when the window is full.
    pub(crate) fn push(&mut self, rv: u64, event: E) {
        if self.capacity == 0 {
            self.evicted = self.evicted.max(rv);
            return;
        }
        while self.events.len() >= self.capacity {
            match self.events.pop_front() {
                Some((old, _)) => self.evicted = self.evicted.max(old),
                None => break,
            }
        }
        self.events.push_back((rv, event));
    }

    /// Makes every RV up to `rv` too old to resume from.
    pub(crate) fn compact(&mut self, rv: u64) {
        self.compacted = self.compacted.max(rv);
    }

    /// The RV below which a new watch or snapshot read is refused.
    pub(crate) fn floor(&self) -> u64 {
        self.evicted.max(self.compacted)
    }

    /// Whether a new watch or a snapshot read can start at `rv`.
    pub(crate) fn check_resume(&self, rv: u64) -> Result<(), TooOld> {
        if rv < self.floor() {
            Err(TooOld {
                requested: rv,
                floor: self.floor(),
            })
        } else {
            Ok(())
        }
    }

    /// Up to `max` events with an RV above `rv`, oldest first, for a watch
    /// that has sent everything up to `rv`. Fails when some of them were evicted.
    pub(crate) fn read_after(&self, rv: u64, max: usize) -> Result<Vec<(u64, E)>, TooOld> {
        if rv < self.evicted {
            return Err(TooOld {
                requested: rv,
                floor: self.evicted,
            });
        }
        let start = self.events.partition_point(|(r, _)| *r <= rv);
        Ok(self
            .events
            .range(start..)
            .take(max)
            .map(|(r, e)| (*r, e.clone()))
            .collect())
    }

    /// Every event with an RV above `rv`, newest first (to roll state back to `rv`).
    pub(crate) fn newer_than_rev(&self, rv: u64) -> Result<impl Iterator<Item = &E>, TooOld> {
        self.check_resume(rv)?;
        let start = self.events.partition_point(|(r, _)| *r <= rv);
        Ok(self.events.range(start..).rev().map(|(_, e)| e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filled(capacity: usize, rvs: impl IntoIterator<Item = u64>) -> History<u64> {
        let mut h = History::new(capacity, 0);
        for rv in rvs {
            h.push(rv, rv);
        }
        h
    }

    fn rvs(v: Vec<(u64, u64)>) -> Vec<u64> {
        v.into_iter().map(|(r, _)| r).collect()
    }

    #[test]
    fn resume_inside_the_window() {
        let h = filled(10, 1..=5);
        assert_eq!(rvs(h.read_after(2, 100).unwrap()), [3, 4, 5]);
        assert!(h.read_after(5, 100).unwrap().is_empty());
        assert!(h.check_resume(0).is_ok(), "nothing evicted yet");
        assert_eq!(h.read_after(0, 2).unwrap().len(), 2);
    }

    #[test]
    fn eviction_raises_the_floor() {
        let h = filled(3, 1..=10);
        assert_eq!(h.floor(), 7);
        assert!(h.check_resume(7).is_ok(), "8, 9, 10 are all kept");
        assert_eq!(
            h.check_resume(6),
            Err(TooOld {
                requested: 6,
                floor: 7
            })
        );
        assert_eq!(
            h.read_after(6, 100),
            Err(TooOld {
                requested: 6,
                floor: 7
            }),
            "a watcher that fell behind"
        );
    }

    #[test]
    fn sparse_rvs_from_a_shared_counter() {
        // One resource sees RVs 3, 9, 20 of the global counter.
        let h = filled(2, [3, 9, 20]);
        assert_eq!(h.floor(), 3);
        assert!(h.check_resume(5).is_ok(), "nothing after 5 was evicted");
        assert_eq!(h.read_after(5, 10).unwrap().len(), 2);
        assert!(h.check_resume(2).is_err(), "event 3 is gone");
    }

    #[test]
    fn compaction_expires_resumes_but_not_open_watches() {
        let mut h = filled(100, 1..=10);
        h.compact(10);
        assert_eq!(
            h.check_resume(9),
            Err(TooOld {
                requested: 9,
                floor: 10
            })
        );
        assert!(h.check_resume(10).is_ok());
        assert!(
            h.newer_than_rev(5).is_err(),
            "no snapshot reads before the compaction"
        );
        assert_eq!(
            rvs(h.read_after(8, 10).unwrap()),
            [9, 10],
            "an established watch keeps streaming"
        );
        h.push(11, 11);
        assert_eq!(h.read_after(10, 10).unwrap().len(), 1);
    }

    #[test]
    fn zero_capacity_keeps_nothing() {
        let h = filled(0, 1..=3);
        assert!(h.check_resume(2).is_err());
        assert!(h.read_after(3, 10).unwrap().is_empty());
    }

    #[test]
    fn rollback_order() {
        let h = filled(10, 1..=5);
        let back: Vec<u64> = h.newer_than_rev(2).unwrap().copied().collect();
        assert_eq!(back, [5, 4, 3]);
    }
}
