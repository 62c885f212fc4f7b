//! What a set of streams did not watch (docs/consistency.md, "Several streams
//! over one object"): closed stretches of milliseconds, so that a union of
//! streams can say where none of them watched.
//!
//! A stream did not watch before its first list, inside each of its gaps and
//! unavailable stretches (both ends included: a change in the millisecond a
//! watch ended, or in the one a list began, may have been missed, so even a
//! gap that opened and closed within one millisecond stays a hole), and after
//! its last durable point. Several streams watched a moment when any of them
//! did: their holes intersect.

use super::StreamHistory;

/// Closed stretches `[from, to]` of milliseconds, sorted and disjoint;
/// `i64::MIN` and `i64::MAX` stand for "ever since" and "from then on".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Holes(Vec<(i64, i64)>);

impl Holes {
    /// Nothing is a hole: watched throughout.
    pub fn none() -> Holes {
        Holes(Vec::new())
    }

    /// Everything is a hole: never watched.
    pub fn all() -> Holes {
        Holes(vec![(i64::MIN, i64::MAX)])
    }

    /// Holes from stretches in any order, overlapping or not.
    pub fn from_stretches(mut stretches: Vec<(i64, i64)>) -> Holes {
        stretches.retain(|(a, b)| a <= b);
        stretches.sort_unstable();
        let mut out: Vec<(i64, i64)> = Vec::with_capacity(stretches.len());
        for (a, b) in stretches {
            match out.last_mut() {
                Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
                _ => out.push((a, b)),
            }
        }
        Holes(out)
    }

    /// Where `stream` did not watch, with `now` as the end of a stream a
    /// recorder is watching.
    pub fn of(stream: &StreamHistory, now: i64) -> Holes {
        let Some(from) = stream.from() else {
            return Holes::all();
        };
        let mut stretches = vec![(i64::MIN, from - 1)];
        for w in &stream.coverage.windows {
            stretches.push((w.from, w.to.unwrap_or(i64::MAX)));
        }
        match stream.end(now) {
            Some(end) if end < i64::MAX => stretches.push((end + 1, i64::MAX)),
            Some(_) => {}
            None => stretches.push((from, i64::MAX)),
        }
        Holes::from_stretches(stretches)
    }

    /// Where none of several streams watched: the holes they all have.
    pub fn common<'a>(all: impl IntoIterator<Item = &'a Holes>) -> Holes {
        let mut iter = all.into_iter();
        let Some(first) = iter.next() else {
            return Holes::all();
        };
        iter.fold(first.clone(), |acc, h| acc.intersect(h))
    }

    /// The holes both have.
    pub fn intersect(&self, other: &Holes) -> Holes {
        let (mut i, mut j) = (0, 0);
        let mut out = Vec::new();
        while i < self.0.len() && j < other.0.len() {
            let (a1, b1) = self.0[i];
            let (a2, b2) = other.0[j];
            let (a, b) = (a1.max(a2), b1.min(b2));
            if a <= b {
                out.push((a, b));
            }
            if b1 < b2 { i += 1 } else { j += 1 }
        }
        Holes(out)
    }

    /// Whether any moment of `[from, to]` is a hole.
    pub fn meets(&self, from: i64, to: i64) -> bool {
        self.0.iter().any(|&(a, b)| a <= to && from <= b)
    }

    /// The holes within `[from, to]`, clipped to it.
    pub fn within(&self, from: i64, to: i64) -> Vec<(i64, i64)> {
        self.0
            .iter()
            .filter(|&&(a, b)| a <= to && from <= b)
            .map(|&(a, b)| (a.max(from), b.min(to)))
            .collect()
    }

    /// The start of the hole that holds `at`, if one does.
    pub fn start_of(&self, at: i64) -> Option<i64> {
        self.0
            .iter()
            .find(|&&(a, b)| a <= at && at <= b)
            .map(|&(a, _)| a)
    }

    pub fn stretches(&self) -> &[(i64, i64)] {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stretches_merge_and_intersect() {
        let a = Holes::from_stretches(vec![(10, 20), (15, 30), (40, 40), (31, 35)]);
        assert_eq!(a.stretches(), &[(10, 35), (40, 40)]);
        let b = Holes::from_stretches(vec![(i64::MIN, 12), (33, i64::MAX)]);
        assert_eq!(a.intersect(&b).stretches(), &[(10, 12), (33, 35), (40, 40)]);
        assert_eq!(Holes::common([&a, &b]), a.intersect(&b));
        assert_eq!(Holes::common(std::iter::empty()), Holes::all());
        assert!(a.meets(40, 40) && a.meets(0, 10) && !a.meets(36, 39));
        assert_eq!(a.start_of(33), Some(10));
        assert_eq!(a.start_of(36), None);
        assert_eq!(a.within(12, 40), vec![(12, 35), (40, 40)]);
    }

    #[test]
    fn a_gap_within_one_millisecond_is_still_a_hole() {
        let h = Holes::from_stretches(vec![(i64::MIN, 99), (500, 500), (1_001, i64::MAX)]);
        assert!(h.meets(400, 500));
        assert!(!h.meets(100, 499));
        // Another stream that watched that millisecond closes it.
        let other = Holes::from_stretches(vec![(i64::MIN, 200), (900, i64::MAX)]);
        assert!(!h.intersect(&other).meets(201, 899));
        assert!(h.intersect(&other).meets(0, 150));
    }
}
