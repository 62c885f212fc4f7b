//! One cluster's stream may be in a journal more than once: recorded here, and
//! imported from other journals' segments, each a *lane* (`streams.origin`,
//! docs/at-scale.md, "Importing segments"). Their records never interleave,
//! and answers never merge two lanes' versions by resourceVersion: each
//! answer reads the one lane that covers most of its window, by the coverage
//! rules (docs/consistency.md), so a gap of one lane that another covered is
//! not a gap of the answer, and a stretch no lane covered stays one.

/// What one lane covers: from its first baseline to its last durable point,
/// except its gaps and unavailable stretches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lane {
    /// Recorded in this journal, not imported: preferred when lanes tie.
    pub recorded: bool,
    pub from: Option<i64>,
    pub to: Option<i64>,
    /// Gaps and unavailable stretches; `None` while one lasts.
    pub holes: Vec<(i64, Option<i64>)>,
}

/// How many milliseconds of `window` (both ends included; the lane's whole
/// life without one) the lane covers.
pub fn covered(lane: &Lane, window: Option<(i64, i64)>) -> i64 {
    let (Some(from), Some(to)) = (lane.from, lane.to) else {
        return 0;
    };
    let (lo, hi) = match window {
        Some((since, until)) => (from.max(since), to.min(until)),
        None => (from, to),
    };
    if lo > hi {
        return 0;
    }
    let holes: i64 = lane
        .holes
        .iter()
        .map(|&(a, b)| {
            let (a, b) = (a.max(lo), b.unwrap_or(hi).min(hi));
            if a <= b { b - a + 1 } else { 0 }
        })
        .sum();
    (hi - lo + 1 - holes).max(0)
}

/// The lane an answer about `window` reads: the one that covers most of it;
/// among equals, one recorded here, then the first.
pub fn choose(lanes: &[Lane], window: Option<(i64, i64)>) -> Option<usize> {
    lanes
        .iter()
        .enumerate()
        .max_by_key(|(i, l)| (covered(l, window), l.recorded, std::cmp::Reverse(*i)))
        .map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lane(recorded: bool, from: i64, to: i64, holes: &[(i64, Option<i64>)]) -> Lane {
        Lane {
            recorded,
            from: Some(from),
            to: Some(to),
            holes: holes.to_vec(),
        }
    }

    #[test]
    fn the_lane_that_covers_the_window_answers() {
        // Recorded here with a gap over 40..60; imported without one.
        let here = lane(true, 0, 100, &[(40, Some(60))]);
        let there = lane(false, 10, 90, &[]);
        let lanes = [here, there];
        assert_eq!(choose(&lanes, Some((45, 55))), Some(1));
        // Outside the gap both cover it: the recorded one answers.
        assert_eq!(choose(&lanes, Some((70, 80))), Some(0));
        // Only the recorded one covers the start.
        assert_eq!(choose(&lanes, Some((0, 5))), Some(0));
        // A point in time.
        assert_eq!(choose(&lanes, Some((50, 50))), Some(1));
        assert_eq!(covered(&lanes[0], Some((50, 50))), 0);
        assert_eq!(covered(&lanes[1], Some((50, 50))), 1);
    }

    #[test]
    fn coverage_counts_its_holes_and_open_ones() {
        let l = lane(false, 0, 99, &[(10, Some(19)), (90, None)]);
        assert_eq!(covered(&l, None), 100 - 10 - 10);
        assert_eq!(covered(&l, Some((-50, 5))), 6);
        assert_eq!(covered(&l, Some((200, 300))), 0);
        let never = Lane {
            recorded: true,
            from: None,
            to: None,
            holes: vec![],
        };
        assert_eq!(covered(&never, None), 0);
        assert_eq!(choose(&[never.clone(), l], None), Some(1));
        assert_eq!(choose(&[], None), None);
        // Neither covers anything: recorded first.
        let other = Lane {
            recorded: false,
            ..never.clone()
        };
        assert_eq!(choose(&[other, never], None), Some(1));
    }
}
