//! One object as several streams saw it (docs/consistency.md, "Several
//! streams over one object"): a `record -A` and a `record -n shop`, a stream
//! recorded here and the same stream imported from a teammate, a stream with a
//! label selector beside one without. Each saw some of the object's versions;
//! the answer is their union, one per resourceVersion, in the order they were
//! observed, and a change counts as found by a relist only where none of the
//! streams watched it happen.
//!
//! Pure: the streams' records go in, the merged observations come out.

use super::Between;
use super::cover::Holes;
use crate::journal::versions::{BaselineRef, VersionRow};
use crate::model::WatchType;
use std::collections::{HashMap, HashSet};

/// What one stream knows of the object.
#[derive(Debug, Clone, Copy)]
pub struct Member<'a> {
    /// The stream has no label selector: its watch saw every change of the
    /// object while it watched, and its lists prove the object absent.
    pub whole: bool,
    /// Where the stream did not watch.
    pub holes: &'a Holes,
    /// The stream's completed lists, oldest first.
    pub lists: &'a [BaselineRef],
    /// The object's versions in this stream, in `seq` order: its events and
    /// its items of completed lists (empty when the stream never saw it).
    pub versions: &'a [VersionRow],
}

/// How an observation came to be known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Observed {
    /// A watch event.
    Watch,
    /// A list that found what was already known, or that no watch could have
    /// missed (another stream watched throughout).
    List,
    /// A list that found a change nobody watched happen: it happened at an
    /// unknown time in this stretch.
    Relist(Between),
}

/// One observation of the merged history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// Which member saw it.
    pub member: usize,
    pub what: What,
    pub observed: Observed,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum What {
    /// A version: an event (a DELETED one too) or a list item.
    Version(VersionRow),
    /// Missing from a list while it was known to exist: gone by then.
    Vanished(BaselineRef),
}

impl Seen {
    pub fn observed_at(&self) -> i64 {
        match &self.what {
            What::Version(v) => v.observed_at,
            What::Vanished(b) => b.observed_at,
        }
    }

    pub fn seq(&self) -> i64 {
        match &self.what {
            What::Version(v) => v.seq,
            What::Vanished(b) => b.seq,
        }
    }

    /// Whether the object exists after this observation.
    pub fn present(&self) -> bool {
        matches!(&self.what, What::Version(v) if !v.deleted())
    }

    pub fn version(&self) -> Option<&VersionRow> {
        match &self.what {
            What::Version(v) => Some(v),
            What::Vanished(_) => None,
        }
    }

    pub fn found_by_relist(&self) -> Option<Between> {
        match self.observed {
            Observed::Relist(b) => Some(b),
            _ => None,
        }
    }
}

/// What is known of the object at a point of the walk.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Known {
    Nothing,
    Absent,
    Present(String),
}

/// One step of a member's own record, in its `seq` order.
enum Step<'a> {
    Version(&'a VersionRow),
    /// The end of a completed list (a stream without a selector only).
    ListEnd(&'a BaselineRef),
}

impl Step<'_> {
    fn at(&self) -> i64 {
        match self {
            Step::Version(v) => v.observed_at,
            Step::ListEnd(b) => b.observed_at,
        }
    }
}

/// The merged history of one object, oldest first.
///
/// - A resourceVersion counts once: a watch event before any list item of it,
///   then the earliest observation.
/// - A list that found the version already known is kept as a list
///   observation where nobody watched some moment since it was last known
///   (it says the object was still so after the gap), and left out otherwise.
/// - A version only lists found, or an object missing from a list, is a
///   relist finding when some moment between what was known before and the
///   list was watched by none of the streams without a selector; it happened
///   then (from the first such moment to the list). Otherwise a stream that
///   watched throughout will deliver (or delivered) its event, and the list
///   alone says nothing new.
/// - A DELETED event whose resourceVersion another stream saw as an update is
///   an object leaving a label selector, not a deletion. So is a selector
///   stream's DELETED at a version another stream only listed: the change to
///   that version was watched as it happened (the leave), with the content
///   the list holds.
pub fn merge(members: &[Member<'_>]) -> Vec<Seen> {
    let holes = union_holes(members);
    // Every version some stream saw present (an event or a list item): a
    // selector stream's DELETED at one of them is the object leaving the
    // selector at that version, not a deletion.
    let mut present: HashMap<&str, (usize, &VersionRow)> = HashMap::new();
    for (i, m) in members.iter().enumerate() {
        for v in m.versions.iter().filter(|v| !v.deleted()) {
            present.entry(v.resource_version.as_str()).or_insert((i, v));
        }
    }
    let watched: HashSet<&str> = members
        .iter()
        .flat_map(|m| m.versions)
        .filter(|v| v.watch_type.is_some() && !v.deleted())
        .map(|v| v.resource_version.as_str())
        .collect();
    // Each member's steps; a k-way merge by observed_at keeps each member's
    // own order even where its clock went back.
    // Lists prove an object absent when their stream has no selector; when
    // every stream has one, theirs are all there is (answers say so).
    let any_whole = members.iter().any(|m| m.whole);
    let steps: Vec<Vec<Step<'_>>> = members
        .iter()
        .map(|m| steps_of(m, m.whole || !any_whole))
        .collect();
    let mut next = vec![0usize; members.len()];
    let mut out: Vec<Seen> = Vec::new();
    let mut known = Known::Nothing;
    // When what is known was last confirmed.
    let mut known_at = i64::MIN;
    let mut seen_rvs: HashSet<&str> = HashSet::new();
    let mut deleted_rvs: HashSet<&str> = HashSet::new();
    // Per member: the token of the list its last item belonged to.
    let mut listed_in: Vec<Option<i64>> = vec![None; members.len()];
    // Within one millisecond, the members in their order (by stream name):
    // `seq`s of two streams interleave differently in another journal.
    while let Some(m) = (0..members.len())
        .filter(|&m| next[m] < steps[m].len())
        .min_by_key(|&m| (steps[m][next[m]].at(), m))
    {
        let step = &steps[m][next[m]];
        next[m] += 1;
        match *step {
            Step::ListEnd(list) => {
                let contains = listed_in[m] == Some(list.token);
                match &known {
                    Known::Nothing => {
                        if !contains {
                            known = Known::Absent;
                            known_at = list.observed_at;
                        }
                    }
                    Known::Absent => {}
                    Known::Present(_) if contains => {}
                    Known::Present(_) => {
                        if let Some(between) = finding(&holes, known_at, list.observed_at) {
                            out.push(Seen {
                                member: m,
                                what: What::Vanished(list.clone()),
                                observed: Observed::Relist(between),
                            });
                            known = Known::Absent;
                            known_at = list.observed_at;
                        }
                    }
                }
            }
            Step::Version(v) => {
                let rv = v.resource_version.as_str();
                match v.watch_type {
                    None => {
                        listed_in[m] = v.list_token;
                        if known == Known::Present(rv.to_string()) {
                            // Kept where it confirms the object after a
                            // stretch nobody watched.
                            if holes.meets(known_at.min(v.observed_at), v.observed_at) {
                                out.push(Seen {
                                    member: m,
                                    what: What::Version(v.clone()),
                                    observed: Observed::List,
                                });
                            }
                            known_at = known_at.max(v.observed_at);
                            continue;
                        }
                        if watched.contains(rv) || seen_rvs.contains(rv) {
                            // Its event was (or will be) here: the list only
                            // raced it.
                            continue;
                        }
                        let observed = match known {
                            Known::Nothing => Observed::List,
                            _ => finding(&holes, known_at, v.observed_at)
                                .map_or(Observed::List, Observed::Relist),
                        };
                        seen_rvs.insert(rv);
                        known = Known::Present(rv.to_string());
                        known_at = v.observed_at;
                        out.push(Seen {
                            member: m,
                            what: What::Version(v.clone()),
                            observed,
                        });
                    }
                    Some(_) if v.deleted() => {
                        if watched.contains(rv)
                            || deleted_rvs.contains(rv)
                            || known == Known::Absent
                        {
                            continue;
                        }
                        if !members[m].whole
                            && let Some(&(other, row)) = present.get(rv)
                        {
                            // Left the selector: the change to `rv` was
                            // watched as it happened; its content is the
                            // other stream's.
                            if seen_rvs.insert(rv) {
                                known = Known::Present(rv.to_string());
                                known_at = v.observed_at;
                                out.push(Seen {
                                    member: other,
                                    what: What::Version(VersionRow {
                                        seq: v.seq,
                                        kind: v.kind,
                                        observed_at: v.observed_at,
                                        watch_type: Some(WatchType::Modified),
                                        list_token: None,
                                        // Its mark links another record.
                                        mark: None,
                                        ..row.clone()
                                    }),
                                    observed: Observed::Watch,
                                });
                            }
                            continue;
                        }
                        deleted_rvs.insert(rv);
                        known = Known::Absent;
                        known_at = v.observed_at;
                        out.push(Seen {
                            member: m,
                            what: What::Version(v.clone()),
                            observed: Observed::Watch,
                        });
                    }
                    Some(_) => {
                        if !seen_rvs.insert(rv) {
                            continue;
                        }
                        known = Known::Present(rv.to_string());
                        known_at = v.observed_at;
                        out.push(Seen {
                            member: m,
                            what: What::Version(v.clone()),
                            observed: Observed::Watch,
                        });
                    }
                }
            }
        }
    }
    out
}

/// Where none of the members watched: the common holes of those without a
/// selector, or of all of them when every one has one (then every answer
/// says it is partial anyway).
pub fn union_holes(members: &[Member<'_>]) -> Holes {
    let whole: Vec<&Holes> = members
        .iter()
        .filter(|m| m.whole)
        .map(|m| m.holes)
        .collect();
    if whole.is_empty() {
        Holes::common(members.iter().map(|m| m.holes))
    } else {
        Holes::common(whole)
    }
}

/// A list at `listed_at` found something new since what was known at
/// `known_at`: a relist finding when nobody watched some moment in between,
/// from the first such moment on.
fn finding(holes: &Holes, known_at: i64, listed_at: i64) -> Option<Between> {
    let from = known_at.min(listed_at);
    let first = holes.within(from, listed_at).first().map(|&(a, _)| a)?;
    Some(Between {
        from: first,
        to: listed_at,
    })
}

fn steps_of<'a>(m: &Member<'a>, lists_count: bool) -> Vec<Step<'a>> {
    let mut steps: Vec<Step<'a>> = m.versions.iter().map(Step::Version).collect();
    if lists_count {
        steps.extend(m.lists.iter().map(Step::ListEnd));
    }
    steps.sort_by_key(|s| match s {
        Step::Version(v) => v.seq,
        Step::ListEnd(b) => b.seq,
    });
    steps
}

/// The state after the merged observations up to `at` (inclusive): the
/// last one's, or absent when a stream whose lists count had listed by then
/// without seeing the object, else unknown.
pub fn state_at(members: &[Member<'_>], merged: &[Seen], at: i64) -> MergedState {
    let any_whole = members.iter().any(|m| m.whole);
    match merged.iter().rev().find(|s| s.observed_at() <= at) {
        Some(s) => match s.version() {
            Some(v) if !v.deleted() => MergedState::Present(v.clone()),
            _ => MergedState::Absent,
        },
        None if members.iter().any(|m| {
            (m.whole || !any_whole) && m.lists.first().is_some_and(|b| b.observed_at <= at)
        }) =>
        {
            MergedState::Absent
        }
        None => MergedState::Unknown,
    }
}

/// An object's state at a time, from its merged history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergedState {
    Present(VersionRow),
    Absent,
    Unknown,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::schema::kind;
    use crate::model::WatchType;

    fn version(
        seq: i64,
        at: i64,
        rv: &str,
        watch: Option<WatchType>,
        list: Option<i64>,
    ) -> VersionRow {
        VersionRow {
            seq,
            stream: 1,
            object: 1,
            kind: if watch.is_some() {
                kind::EVENT
            } else {
                kind::BASELINE_ITEM
            },
            observed_at: at,
            watch_type: watch,
            resource_version: rv.into(),
            body: seq,
            list_token: list,
            mark: None,
        }
    }

    fn list(token: i64, seq: i64, at: i64) -> BaselineRef {
        BaselineRef {
            seq,
            token,
            observed_at: at,
            resource_version: format!("list-{seq}"),
            items: 1,
        }
    }

    fn kinds(merged: &[Seen]) -> Vec<(i64, String, Observed)> {
        merged
            .iter()
            .map(|s| {
                let what = match &s.what {
                    What::Version(v) => format!(
                        "{}:{}",
                        v.watch_type.map_or("LIST", |w| w.as_str()),
                        v.resource_version
                    ),
                    What::Vanished(_) => "GONE".into(),
                };
                (s.observed_at(), what, s.observed)
            })
            .collect()
    }

    const M: Option<WatchType> = Some(WatchType::Modified);
    const A: Option<WatchType> = Some(WatchType::Added);
    const D: Option<WatchType> = Some(WatchType::Deleted);

    #[test]
    fn one_stream_after_a_gap_finds_the_change_and_the_list_of_the_same_version_is_no_finding() {
        // Listed at 100 (rv 5), modified at 200 (rv 6), gap 300..400, relist
        // at 400 finds rv 9; another gap 500..600, relist finds rv 9 again.
        let holes = Holes::from_stretches(vec![(i64::MIN, 99), (300, 400), (500, 600)]);
        let lists = [list(1, 2, 100), list(10, 12, 400), list(20, 22, 600)];
        let versions = [
            version(1, 100, "5", None, Some(1)),
            version(5, 200, "6", M, None),
            version(10, 400, "9", None, Some(10)),
            version(20, 600, "9", None, Some(20)),
        ];
        let members = [Member {
            whole: true,
            holes: &holes,
            lists: &lists,
            versions: &versions,
        }];
        let merged = merge(&members);
        assert_eq!(
            kinds(&merged),
            vec![
                (100, "LIST:5".into(), Observed::List),
                (200, "MODIFIED:6".into(), Observed::Watch),
                (
                    400,
                    "LIST:9".into(),
                    Observed::Relist(Between { from: 300, to: 400 })
                ),
                (600, "LIST:9".into(), Observed::List),
            ]
        );
        assert_eq!(
            state_at(&members, &merged, 350),
            MergedState::Present(versions[1].clone())
        );
        assert_eq!(state_at(&members, &merged, 50), MergedState::Unknown);
    }

    #[test]
    fn a_change_another_stream_watched_is_no_relist_finding() {
        // -n shop: listed at 100, stopped at 150, back at 400. -A: watched
        // from 120 on, and saw rv 6 at 200 and rv 7 at 300.
        let shop_holes = Holes::from_stretches(vec![(i64::MIN, 99), (151, 400)]);
        let all_holes = Holes::from_stretches(vec![(i64::MIN, 119)]);
        let shop_lists = [list(1, 2, 100), list(10, 12, 400)];
        let all_lists = [list(3, 4, 120)];
        let shop = [
            version(1, 100, "5", None, Some(1)),
            version(10, 400, "7", None, Some(10)),
        ];
        let all = [
            version(3, 120, "5", None, Some(3)),
            version(6, 200, "6", M, None),
            version(7, 300, "7", M, None),
        ];
        let members = [
            Member {
                whole: true,
                holes: &shop_holes,
                lists: &shop_lists,
                versions: &shop,
            },
            Member {
                whole: true,
                holes: &all_holes,
                lists: &all_lists,
                versions: &all,
            },
        ];
        let merged = merge(&members);
        assert_eq!(
            kinds(&merged),
            vec![
                (100, "LIST:5".into(), Observed::List),
                (200, "MODIFIED:6".into(), Observed::Watch),
                (300, "MODIFIED:7".into(), Observed::Watch),
            ]
        );
    }

    #[test]
    fn a_watched_create_then_a_change_in_a_gap() {
        let holes = Holes::from_stretches(vec![(i64::MIN, 99), (300, 400)]);
        let lists = [list(1, 2, 100), list(10, 12, 400)];
        let versions = [
            version(5, 200, "6", A, None),
            version(10, 400, "9", None, Some(10)),
        ];
        let members = [Member {
            whole: true,
            holes: &holes,
            lists: &lists,
            versions: &versions,
        }];
        assert_eq!(
            kinds(&merge(&members)),
            vec![
                (200, "ADDED:6".into(), Observed::Watch),
                (
                    400,
                    "LIST:9".into(),
                    Observed::Relist(Between { from: 300, to: 400 })
                ),
            ]
        );
    }

    #[test]
    fn gone_from_a_list_is_a_finding_only_where_nobody_watched() {
        // Stream 0 stopped at 150 and relisted at 400 without the object;
        // stream 1 watched throughout and saw the DELETED at 250.
        let h0 = Holes::from_stretches(vec![(i64::MIN, 99), (151, 400)]);
        let h1 = Holes::from_stretches(vec![(i64::MIN, 99)]);
        let l0 = [list(1, 2, 100), list(10, 12, 400)];
        let l1 = [list(3, 4, 100)];
        let v0 = [version(1, 100, "5", None, Some(1))];
        let v1 = [
            version(3, 100, "5", None, Some(3)),
            version(8, 250, "8", D, None),
        ];
        let both = [
            Member {
                whole: true,
                holes: &h0,
                lists: &l0,
                versions: &v0,
            },
            Member {
                whole: true,
                holes: &h1,
                lists: &l1,
                versions: &v1,
            },
        ];
        assert_eq!(
            kinds(&merge(&both)),
            vec![
                (100, "LIST:5".into(), Observed::List),
                (250, "DELETED:8".into(), Observed::Watch),
            ]
        );
        // Stream 0 alone: the relist found it gone, some time in the gap.
        let alone = [both[0]];
        assert_eq!(
            kinds(&merge(&alone)),
            vec![
                (100, "LIST:5".into(), Observed::List),
                (
                    400,
                    "GONE".into(),
                    Observed::Relist(Between { from: 151, to: 400 })
                ),
            ]
        );
    }

    #[test]
    fn an_object_never_seen_by_one_stream_is_absent_from_its_lists() {
        // Stream 1 saw the object; stream 0 (whole) listed at 500 without it,
        // after both stopped watching at 300.
        let h0 = Holes::from_stretches(vec![(i64::MIN, 99), (301, 500)]);
        let h1 = Holes::from_stretches(vec![(i64::MIN, 99), (301, i64::MAX)]);
        let l0 = [list(1, 2, 100), list(20, 22, 500)];
        let l1 = [list(3, 4, 100)];
        let v1 = [version(5, 200, "6", A, None)];
        let members = [
            Member {
                whole: true,
                holes: &h0,
                lists: &l0,
                versions: &[],
            },
            Member {
                whole: true,
                holes: &h1,
                lists: &l1,
                versions: &v1,
            },
        ];
        let merged = merge(&members);
        assert_eq!(
            kinds(&merged),
            vec![
                (200, "ADDED:6".into(), Observed::Watch),
                (
                    500,
                    "GONE".into(),
                    Observed::Relist(Between { from: 301, to: 500 })
                ),
            ]
        );
        assert_eq!(state_at(&members, &merged, 150), MergedState::Absent);
        assert_eq!(state_at(&members, &merged, 600), MergedState::Absent);
    }

    #[test]
    fn a_selector_stream_losing_an_object_to_a_label_change_does_not_delete_it() {
        let h = Holes::from_stretches(vec![(i64::MIN, 99)]);
        let whole_lists = [list(1, 2, 100)];
        let sel_lists = [list(3, 4, 100)];
        let whole = [
            version(1, 100, "5", None, Some(1)),
            version(6, 200, "6", M, None),
        ];
        let selected = [
            version(3, 100, "5", None, Some(3)),
            version(7, 200, "6", D, None),
        ];
        let members = [
            Member {
                whole: true,
                holes: &h,
                lists: &whole_lists,
                versions: &whole,
            },
            Member {
                whole: false,
                holes: &h,
                lists: &sel_lists,
                versions: &selected,
            },
        ];
        let merged = merge(&members);
        assert_eq!(
            state_at(&members, &merged, 300),
            MergedState::Present(whole[1].clone())
        );
    }
}
