//! Which audit event made which recorded change (docs/audit.md, "The join").
//!
//! The rules, for the changes of one object and the audit events on it:
//!
//! - **exact**: the audit event's response carried the change's
//!   resourceVersion (and, when both are known, the same uid). A write whose
//!   response names another resourceVersion made another change. A later
//!   request that changed nothing returns the same resourceVersion: when the
//!   events that carry it disagree on who, the change stays unknown.
//! - **likely**: no exact match, and exactly one audit event on the object
//!   fits: a verb that makes such a change, a uid that does not contradict
//!   it, completed from [`BEFORE_MS`] before to [`AFTER_MS`] after the change
//!   was observed, and not the only fit of another change. A write that is
//!   the only fit of one change is then no candidate for the others, which
//!   may leave one of them a single fit in turn.
//! - Anything else is unknown, and says why: the audit logs do not cover the
//!   time, no event fits, or several do. Never a guess between two.

use super::{Match, Unknown, Verb};

/// How long before a change was observed its write may have completed (the
/// recorder's watch may lag behind the server).
pub const BEFORE_MS: i64 = 5_000;
/// How long after: the recorder's and the server's clocks may differ a little.
pub const AFTER_MS: i64 = 1_000;

/// How a recorded change came about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Added,
    Modified,
    Deleted,
}

/// A change the recorder saw.
#[derive(Debug, Clone, PartialEq)]
pub struct Change<'a> {
    /// When the recorder observed it, ms.
    pub at: i64,
    pub kind: Kind,
    pub resource_version: &'a str,
    /// The object's uid at this version, when known.
    pub uid: Option<&'a str>,
}

/// An audit event on the object, as the journal keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct Write<'a> {
    /// `stageTimestamp`, ms.
    pub at: i64,
    pub verb: Verb,
    pub resource_version: Option<&'a str>,
    pub uid: Option<&'a str>,
    /// Who: equal ids are the same actor.
    pub actor: i64,
}

/// For each change, the index of the write that made it and how sure that
/// is, or why it is not known.
pub type Found = Result<(usize, Match), Unknown>;

/// Joins one object's changes to the audit events on it. `covered` are the
/// time ranges `[from, to]` the imported audit logs cover, in any order.
pub fn join(changes: &[Change<'_>], writes: &[Write<'_>], covered: &[(i64, i64)]) -> Vec<Found> {
    let uid_fits = |c: &Change<'_>, w: &Write<'_>| match (c.uid, w.uid) {
        (Some(a), Some(b)) => a == b,
        _ => true,
    };
    // Exact matches first; a write that made one change is no candidate for another.
    let mut taken = vec![false; writes.len()];
    let mut found: Vec<Option<Found>> = changes
        .iter()
        .map(|c| {
            let same: Vec<usize> = (0..writes.len())
                .filter(|&i| {
                    writes[i].resource_version == Some(c.resource_version)
                        && uid_fits(c, &writes[i])
                })
                .collect();
            let first = *same.iter().min_by_key(|&&i| writes[i].at)?;
            for &i in &same {
                taken[i] = true;
            }
            Some(
                if same.iter().all(|&i| writes[i].actor == writes[first].actor) {
                    Ok((first, Match::Exact))
                } else {
                    Err(Unknown::Ambiguous)
                },
            )
        })
        .collect();
    let candidates = |c: &Change<'_>| -> Vec<usize> {
        (0..writes.len())
            .filter(|&i| {
                let w = &writes[i];
                // A write whose response named another version made that one
                // (a delete answers with the object as it was before).
                !taken[i]
                    && (w.resource_version.is_none() || c.kind == Kind::Deleted)
                    && verb_fits(c.kind, w.verb)
                    && uid_fits(c, w)
                    && w.at >= c.at - BEFORE_MS
                    && w.at <= c.at + AFTER_MS
            })
            .collect()
    };
    let open: Vec<usize> = (0..changes.len()).filter(|&i| found[i].is_none()).collect();
    let mut all: Vec<Vec<usize>> = open.iter().map(|&i| candidates(&changes[i])).collect();
    // A write that is the only candidate of exactly one change made it, and is
    // no candidate for any other; that may leave another change with one.
    // Bounded: each pass settles at least one change, or stops.
    let mut settled = vec![false; open.len()];
    loop {
        let sole = (0..open.len()).find(|&slot| {
            !settled[slot]
                && all[slot].len() == 1
                && (0..open.len()).all(|other| other == slot || all[other] != all[slot])
        });
        let Some(slot) = sole else { break };
        let w = all[slot][0];
        settled[slot] = true;
        found[open[slot]] = Some(Ok((w, Match::Likely)));
        for (other, theirs) in all.iter_mut().enumerate() {
            if other != slot {
                theirs.retain(|&x| x != w);
            }
        }
    }
    let merged = merge(covered);
    for (slot, &i) in open.iter().enumerate() {
        if settled[slot] {
            continue;
        }
        found[i] = Some(match all[slot].as_slice() {
            [] if !is_covered(&merged, changes[i].at) => Err(Unknown::NotCovered),
            [] => Err(Unknown::NoMatch),
            _ => Err(Unknown::Ambiguous),
        });
    }
    found
        .into_iter()
        .map(|f| f.expect("every change decided"))
        .collect()
}

/// An audit event on an object inside the stretch of a change a relist
/// found.
#[derive(Debug, Clone, PartialEq)]
pub struct RelistWrite<'a> {
    pub verb: Verb,
    pub resource_version: Option<&'a str>,
    /// `Some("")`: the object itself; `Some("status")`, `Some("scale")`...;
    /// `None`: not known.
    pub subresource: Option<&'a str>,
}

/// Who made one field of a change a relist found (docs/audit.md, "Changes a
/// relist found"): the one write inside its stretch that could have, exact
/// when that write made the version the list found (`resource_version`),
/// likely otherwise. A status field is written through the status
/// subresource, any other field through anything else; a write of unknown
/// subresource could be either, a delete neither. Several that could have:
/// ambiguous; none: the audit logs did not cover the whole stretch
/// (`covered` false), or no write fits.
pub fn relist_field(
    status_field: bool,
    resource_version: &str,
    writes: &[RelistWrite<'_>],
    covered: bool,
) -> Found {
    let could = |w: &RelistWrite<'_>| {
        w.verb != Verb::Delete
            && match w.subresource {
                None => true,
                Some(sub) => (sub == "status") == status_field,
            }
    };
    let fits: Vec<usize> = (0..writes.len()).filter(|&i| could(&writes[i])).collect();
    match fits.as_slice() {
        [one] if writes[*one].resource_version == Some(resource_version) => {
            Ok((*one, Match::Exact))
        }
        [one] => Ok((*one, Match::Likely)),
        [] if !covered => Err(Unknown::NotCovered),
        [] => Err(Unknown::NoMatch),
        _ => Err(Unknown::Ambiguous),
    }
}

/// Who made an object a relist found new (`Kind::Added`) or gone
/// (`Kind::Deleted`), from the audit events inside the stretch: the one
/// create (else the one patch or update of the object itself, which may
/// create), or the one delete; exact when it made the version the relist
/// found (`resource_version`), likely otherwise. Never a guess between two.
pub fn relist_made(
    kind: Kind,
    resource_version: &str,
    writes: &[RelistWrite<'_>],
    covered: bool,
) -> Found {
    let of_object = |w: &RelistWrite<'_>| w.subresource.is_none_or(str::is_empty);
    let pick = |verbs: &[Verb]| -> Vec<usize> {
        (0..writes.len())
            .filter(|&i| verbs.contains(&writes[i].verb) && of_object(&writes[i]))
            .collect()
    };
    let fits = match kind {
        Kind::Deleted => pick(&[Verb::Delete]),
        Kind::Added | Kind::Modified => {
            let creates = pick(&[Verb::Create]);
            if creates.is_empty() {
                pick(&[Verb::Patch, Verb::Update])
            } else {
                creates
            }
        }
    };
    match fits.as_slice() {
        [one] if writes[*one].resource_version == Some(resource_version) => {
            Ok((*one, Match::Exact))
        }
        [one] => Ok((*one, Match::Likely)),
        [] if !covered => Err(Unknown::NotCovered),
        [] => Err(Unknown::NoMatch),
        _ => Err(Unknown::Ambiguous),
    }
}

fn verb_fits(kind: Kind, verb: Verb) -> bool {
    match kind {
        // Server-side apply creates with a patch; a PUT may create too.
        Kind::Added => matches!(verb, Verb::Create | Verb::Patch | Verb::Update),
        Kind::Modified => matches!(verb, Verb::Update | Verb::Patch),
        Kind::Deleted => verb == Verb::Delete,
    }
}

/// The ranges joined where they touch or overlap, in order.
pub fn merge(ranges: &[(i64, i64)]) -> Vec<(i64, i64)> {
    let mut sorted = ranges.to_vec();
    sorted.sort();
    let mut out: Vec<(i64, i64)> = Vec::new();
    for (from, to) in sorted {
        match out.last_mut() {
            Some(last) if from <= last.1 => last.1 = last.1.max(to),
            _ => out.push((from, to)),
        }
    }
    out
}

/// Whether every time the change's write may have completed at lies in one
/// covered range (`merged` as [`merge`] gives them).
pub fn is_covered(merged: &[(i64, i64)], at: i64) -> bool {
    merged
        .iter()
        .any(|&(from, to)| from <= at - BEFORE_MS && at + AFTER_MS <= to)
}

#[cfg(test)]
mod relist_tests {
    use super::*;

    fn w<'a>(verb: Verb, rv: &'a str, sub: Option<&'a str>) -> RelistWrite<'a> {
        RelistWrite {
            verb,
            resource_version: Some(rv),
            subresource: sub,
        }
    }

    #[test]
    fn a_scale_then_a_status_write_give_each_field_its_writer() {
        // alice scales (rv 531), the controller writes status (rv 535), the
        // relist finds rv 535.
        let writes = [
            w(Verb::Patch, "531", Some("scale")),
            w(Verb::Update, "535", Some("status")),
        ];
        assert_eq!(
            relist_field(false, "535", &writes, true),
            Ok((0, Match::Likely))
        );
        assert_eq!(
            relist_field(true, "535", &writes, true),
            Ok((1, Match::Exact))
        );
        // Two writes to the spec: either could have.
        let two = [
            w(Verb::Patch, "531", Some("")),
            w(Verb::Update, "533", Some("")),
        ];
        assert_eq!(
            relist_field(false, "533", &two, true),
            Err(Unknown::Ambiguous)
        );
        // The one write made the version found: exact.
        assert_eq!(
            relist_field(false, "533", &two[1..], true),
            Ok((0, Match::Exact))
        );
        // None: why.
        assert_eq!(
            relist_field(false, "9", &[], false),
            Err(Unknown::NotCovered)
        );
        assert_eq!(relist_field(false, "9", &[], true), Err(Unknown::NoMatch));
        // A delete changes no field; an unknown subresource could be any.
        let odd = [w(Verb::Delete, "7", Some("")), w(Verb::Update, "8", None)];
        assert_eq!(relist_field(true, "8", &odd, true), Ok((1, Match::Exact)));
    }

    #[test]
    fn an_object_a_relist_found_new_or_gone_goes_to_its_create_or_delete() {
        // bob creates (rv 10), the controller writes its status (rv 12), the
        // relist finds rv 12: created by bob, likely (he made rv 10).
        let made = [
            w(Verb::Create, "10", Some("")),
            w(Verb::Update, "12", Some("status")),
        ];
        assert_eq!(
            relist_made(Kind::Added, "12", &made, true),
            Ok((0, Match::Likely))
        );
        assert_eq!(
            relist_made(Kind::Added, "10", &made[..1], true),
            Ok((0, Match::Exact))
        );
        // Server-side apply creates with a patch: the one patch, when no create.
        let applied = [w(Verb::Patch, "10", Some(""))];
        assert_eq!(
            relist_made(Kind::Added, "10", &applied, true),
            Ok((0, Match::Exact))
        );
        // Gone: the one delete; two deletes (a re-create between): ambiguous.
        let gone = [
            w(Verb::Update, "11", Some("")),
            w(Verb::Delete, "13", Some("")),
        ];
        assert_eq!(
            relist_made(Kind::Deleted, "11", &gone, true),
            Ok((1, Match::Likely))
        );
        let twice = [
            w(Verb::Delete, "13", Some("")),
            w(Verb::Create, "14", Some("")),
            w(Verb::Delete, "15", Some("")),
        ];
        assert_eq!(
            relist_made(Kind::Deleted, "11", &twice, true),
            Err(Unknown::Ambiguous)
        );
        assert_eq!(
            relist_made(Kind::Deleted, "11", &[], false),
            Err(Unknown::NotCovered)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(at: i64, kind: Kind, rv: &str) -> Change<'_> {
        Change {
            at,
            kind,
            resource_version: rv,
            uid: Some("u1"),
        }
    }

    fn write(at: i64, verb: Verb, rv: Option<&str>, actor: i64) -> Write<'_> {
        Write {
            at,
            verb,
            resource_version: rv,
            uid: None,
            actor,
        }
    }

    const ALL: &[(i64, i64)] = &[(0, 1_000_000)];

    #[test]
    fn the_resource_version_makes_an_exact_match() {
        let changes = [
            change(100_000, Kind::Added, "10"),
            change(100_050, Kind::Modified, "11"),
        ];
        // The controller's update right after the create, both at RequestResponse.
        let writes = [
            write(100_040, Verb::Update, Some("11"), 2),
            write(99_990, Verb::Create, Some("10"), 1),
        ];
        assert_eq!(
            join(&changes, &writes, ALL),
            [Ok((1, Match::Exact)), Ok((0, Match::Exact))]
        );
    }

    #[test]
    fn a_no_op_that_returns_the_same_version_changes_nothing_unless_someone_else_sent_it() {
        let changes = [change(100_000, Kind::Modified, "11")];
        let same_user = [
            write(99_990, Verb::Patch, Some("11"), 1),
            write(100_500, Verb::Patch, Some("11"), 1),
        ];
        assert_eq!(join(&changes, &same_user, ALL), [Ok((0, Match::Exact))]);
        let two_users = [
            write(99_990, Verb::Patch, Some("11"), 1),
            write(100_500, Verb::Patch, Some("11"), 2),
        ];
        assert_eq!(join(&changes, &two_users, ALL), [Err(Unknown::Ambiguous)]);
    }

    #[test]
    fn at_metadata_level_the_only_write_nearby_is_likely() {
        let changes = [
            change(100_000, Kind::Added, "10"),
            change(200_000, Kind::Modified, "11"),
            change(300_000, Kind::Deleted, "12"),
        ];
        let writes = [
            write(99_990, Verb::Create, None, 1),
            write(199_000, Verb::Patch, None, 2),
            write(299_999, Verb::Delete, None, 1),
        ];
        assert_eq!(
            join(&changes, &writes, ALL),
            [
                Ok((0, Match::Likely)),
                Ok((1, Match::Likely)),
                Ok((2, Match::Likely))
            ]
        );
    }

    #[test]
    fn two_candidates_stay_unknown_both_ways() {
        // Two writes near one change: which one? Unknown.
        let changes = [change(100_000, Kind::Modified, "11")];
        let writes = [
            write(99_000, Verb::Patch, None, 1),
            write(99_500, Verb::Update, None, 2),
        ];
        assert_eq!(join(&changes, &writes, ALL), [Err(Unknown::Ambiguous)]);
        // One write near two changes: which change did it make? Neither is known.
        let changes = [
            change(100_000, Kind::Modified, "11"),
            change(100_300, Kind::Modified, "12"),
        ];
        let writes = [write(99_900, Verb::Patch, None, 1)];
        assert_eq!(
            join(&changes, &writes, ALL),
            [Err(Unknown::Ambiguous), Err(Unknown::Ambiguous)]
        );
    }

    #[test]
    fn a_write_that_alone_fits_one_change_is_no_candidate_for_the_next() {
        // Created, patched 300 ms later: the patch is a candidate for the
        // creation too (a server-side apply creates with a patch), but it is
        // the only fit of the modification, so the creation keeps the create.
        let changes = [
            change(100_000, Kind::Added, "10"),
            change(100_300, Kind::Modified, "11"),
        ];
        let writes = [
            write(99_995, Verb::Create, None, 1),
            write(100_290, Verb::Patch, None, 2),
        ];
        assert_eq!(
            join(&changes, &writes, ALL),
            [Ok((0, Match::Likely)), Ok((1, Match::Likely))]
        );
        // Two patches close together, two writes: either could be either.
        let changes = [
            change(100_000, Kind::Modified, "10"),
            change(100_300, Kind::Modified, "11"),
        ];
        let writes = [
            write(99_995, Verb::Patch, None, 1),
            write(100_290, Verb::Patch, None, 2),
        ];
        assert_eq!(
            join(&changes, &writes, ALL),
            [Err(Unknown::Ambiguous), Err(Unknown::Ambiguous)]
        );
    }

    #[test]
    fn verbs_uids_and_time_must_fit() {
        let changes = [change(100_000, Kind::Deleted, "12")];
        // A patch does not delete; a delete long before does not either.
        let writes = [
            write(99_990, Verb::Patch, None, 1),
            write(10_000, Verb::Delete, None, 1),
        ];
        assert_eq!(join(&changes, &writes, ALL), [Err(Unknown::NoMatch)]);
        // Another incarnation of the name (another uid) is not this object.
        let mut other = write(99_990, Verb::Delete, None, 1);
        other.uid = Some("u2");
        assert_eq!(join(&changes, &[other], ALL), [Err(Unknown::NoMatch)]);
        let mut same = write(99_990, Verb::Delete, None, 1);
        same.uid = Some("u1");
        assert_eq!(join(&changes, &[same], ALL), [Ok((0, Match::Likely))]);
    }

    #[test]
    fn outside_the_audit_logs_time_the_actor_is_not_covered() {
        let changes = [
            change(100_000, Kind::Modified, "11"),
            change(500_000, Kind::Modified, "12"),
        ];
        // The log starts after the first change.
        let covered = [(400_000, 600_000)];
        assert_eq!(
            join(&changes, &[], &covered),
            [Err(Unknown::NotCovered), Err(Unknown::NoMatch)]
        );
        // Just inside the log's first seconds, a write might have come before it.
        assert_eq!(
            join(&[change(401_000, Kind::Modified, "13")], &[], &covered),
            [Err(Unknown::NotCovered)]
        );
    }

    #[test]
    fn ranges_merge_where_they_touch() {
        assert_eq!(
            merge(&[(5, 9), (0, 5), (20, 30), (25, 26)]),
            [(0, 9), (20, 30)]
        );
        assert!(is_covered(&merge(&[(0, 10_000), (10_000, 20_000)]), 10_000));
        assert!(!is_covered(&merge(&[(0, 9_000), (10_000, 20_000)]), 10_000));
    }
}
