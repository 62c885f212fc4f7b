//! One object across every stream that covers it (docs/consistency.md,
//! "Several streams over one object"): the streams of its type whose
//! namespace (or every namespace) holds it, recorded here or imported, with
//! or without a label selector, and its row in each one that saw it.

use super::merge::{self, Member, MergedState, Seen};
use super::state::ObjectState;
use super::{History, HistoryError, StreamHistory};
use crate::journal::versions::{ObjectRow, VersionRow};
use crate::model::ResourceType;

/// One object and the streams that cover it.
#[derive(Debug, Clone)]
pub struct Tracked<'h> {
    pub resource: ResourceType,
    /// Empty for a cluster-scoped object.
    pub namespace: String,
    pub name: String,
    /// Every stream that covers the object, with its row where it saw it;
    /// at least one has a row.
    pub members: Vec<(&'h StreamHistory, Option<ObjectRow>)>,
}

/// The merged history of a tracked object.
#[derive(Debug, Clone)]
pub struct Merged {
    /// Per member, its versions of the object (in `seq` order).
    pub versions: Vec<Vec<VersionRow>>,
    pub seen: Vec<Seen>,
}

impl<'h> Tracked<'h> {
    /// The stream and row that answer alone: the only member, which saw the
    /// object. `None` when several streams cover it.
    pub fn single(&self) -> Option<(&'h StreamHistory, &ObjectRow)> {
        match self.members.as_slice() {
            [(stream, Some(row))] => Some((stream, row)),
            _ => None,
        }
    }

    /// The first row of the object (its id names it in answers).
    pub fn row(&self) -> &ObjectRow {
        self.members
            .iter()
            .find_map(|(_, row)| row.as_ref())
            .expect("a tracked object has a row")
    }

    /// The member stream that holds `version`.
    pub fn stream_of(&self, version: &VersionRow) -> &'h StreamHistory {
        self.members
            .iter()
            .find(|(s, _)| s.info.id == version.stream)
            .map(|(s, _)| *s)
            .unwrap_or(self.members[0].0)
    }
}

impl Merged {
    /// The merged state at `at`.
    pub fn state_at(&self, tracked: &Tracked<'_>, at: i64) -> ObjectState {
        let members = members(tracked, &self.versions);
        match merge::state_at(&members, &self.seen, at) {
            MergedState::Present(v) => ObjectState::Present(v),
            MergedState::Absent => ObjectState::Absent,
            MergedState::Unknown => ObjectState::Unknown,
        }
    }
}

/// The inputs of [`merge::merge`] for a tracked object.
fn members<'a>(tracked: &'a Tracked<'_>, versions: &'a [Vec<VersionRow>]) -> Vec<Member<'a>> {
    tracked
        .members
        .iter()
        .zip(versions)
        .map(|((s, _), v)| Member {
            whole: s.info.selector.is_none(),
            holes: &s.holes,
            lists: &s.baselines,
            versions: v,
        })
        .collect()
}

impl<'j> History<'j> {
    /// The streams of `resource` that cover an object in `namespace` (empty:
    /// cluster-scoped): those of that namespace and those of every namespace.
    pub fn covering(&self, resource: &ResourceType, namespace: &str) -> Vec<&StreamHistory> {
        self.streams
            .iter()
            .filter(|s| {
                s.info.resource.group == resource.group
                    && s.info.resource.resource == resource.resource
                    && (!s.info.resource.namespaced
                        || s.info.namespace.as_deref().is_none_or(|ns| ns == namespace))
            })
            .collect()
    }

    /// The other streams that may hold objects of `stream` (and `stream`):
    /// of its type, and of its namespace, every namespace, or (for a stream
    /// of every namespace) any namespace.
    pub fn covering_streams_of<'s>(
        &'s self,
        stream: &'s StreamHistory,
    ) -> impl Iterator<Item = &'s StreamHistory> + 's {
        self.streams
            .iter()
            .filter(move |s| s.shares_objects_with(stream))
    }

    /// The object `name` of `resource` in `namespace` across the streams that
    /// cover it; `None` when none of them ever saw it.
    pub fn track(
        &self,
        resource: &ResourceType,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Tracked<'_>>, HistoryError> {
        let streams = self.covering(resource, namespace);
        let mut members = Vec::with_capacity(streams.len());
        let mut seen = false;
        for s in streams {
            let row = self
                .journal
                .objects_named(&[s.info.id], Some(namespace), name)?
                .into_iter()
                .next();
            seen |= row.is_some();
            members.push((s, row));
        }
        Ok(seen.then(|| Tracked {
            resource: resource.clone(),
            namespace: namespace.to_string(),
            name: name.to_string(),
            members,
        }))
    }

    /// The object of a row, across the streams that cover it.
    pub fn track_row(
        &self,
        stream: &StreamHistory,
        row: &ObjectRow,
    ) -> Result<Tracked<'_>, HistoryError> {
        let resource = &stream.info.resource;
        let covering = self.covering(resource, &row.namespace);
        if let [only] = covering.as_slice()
            && only.info.id == row.stream
        {
            return Ok(Tracked {
                resource: resource.clone(),
                namespace: row.namespace.clone(),
                name: row.name.clone(),
                members: vec![(*only, Some(row.clone()))],
            });
        }
        Ok(self
            .track(resource, &row.namespace, &row.name)?
            .expect("the row's own stream saw it"))
    }

    /// Every stream's versions of the object, merged (see [`merge::merge`]).
    pub fn merged(&self, tracked: &Tracked<'_>) -> Result<Merged, HistoryError> {
        let mut versions = Vec::with_capacity(tracked.members.len());
        for (s, row) in &tracked.members {
            versions.push(match row {
                Some(row) => self.versions(s, row.id)?,
                None => Vec::new(),
            });
        }
        let seen = merge::merge(&members(tracked, &versions));
        Ok(Merged { versions, seen })
    }

    /// The object's state at `at`: its only stream's, or the merged one.
    pub fn tracked_at(&self, tracked: &Tracked<'_>, at: i64) -> Result<ObjectState, HistoryError> {
        if let Some((stream, row)) = tracked.single() {
            return self.object_at(stream, row.id, at);
        }
        Ok(self.merged(tracked)?.state_at(tracked, at))
    }
}

#[cfg(test)]
mod tests {
    //! Journals written op by op at chosen times, then asked: several streams
    //! over one object, and the order of records within one millisecond.

    use super::*;
    use crate::diff::DiffOptions;
    use crate::history::Scope;
    use crate::history::diff::{Change, NameFilter};
    use crate::history::script::{CLUSTER, Script, configmaps};
    use crate::history::timeline::EntryType;
    use crate::model::WatchType;
    use crate::time::{Millis, TimeWindow};

    fn shop() -> Scope {
        Scope {
            namespace: Some("shop".into()),
            types: None,
        }
    }

    fn kinds(t: &crate::history::timeline::TimelineAnswer) -> Vec<(i64, &'static str, bool)> {
        t.entries
            .iter()
            .map(|e| (e.observed_at, e.kind.as_str(), e.found_by_relist.is_some()))
            .collect()
    }

    #[test]
    fn a_gap_and_the_list_that_ended_it_in_one_millisecond_keep_the_journals_order() {
        let mut s = Script::new();
        let cm = s.stream(Some("shop"));
        s.list(cm, 100, &[("shop", "a", "5")], "5");
        s.event(cm, 200, WatchType::Modified, "shop", "a", "6");
        // The watch ends with a 410 and the relist lands in the same millisecond.
        s.gap(cm, 300, 300, "410 Expired");
        s.list(cm, 300, &[("shop", "a", "6")], "7");
        let journal = s.journal();
        let history = History::load(&journal, CLUSTER, 1_000).unwrap();
        let tracked = history.track(&configmaps(), "shop", "a").unwrap().unwrap();
        let t = history.timeline(&tracked, &DiffOptions::default()).unwrap();
        assert_eq!(
            kinds(&t),
            vec![
                (100, "BASELINE", false),
                (200, "MODIFIED", false),
                (300, "GAP", false),
                (300, "BASELINE", false),
            ]
        );
    }

    #[test]
    fn a_recorder_of_every_namespace_answers_for_one_and_a_later_relist_finds_nothing_new() {
        let mut s = Script::new();
        let shop_cm = s.stream(Some("shop"));
        let all_cm = s.stream(None);
        // `record -n shop` lists, then stops.
        s.list(shop_cm, 100, &[("shop", "a", "5")], "5");
        s.stop(shop_cm, 150, "5");
        // `record -A` lists, sees the change, then stops.
        s.list(all_cm, 200, &[("shop", "a", "5"), ("pay", "b", "4")], "5");
        s.event(all_cm, 300, WatchType::Modified, "shop", "a", "6");
        s.stop(all_cm, 400, "6");
        // `record -n shop` again: a gap since it stopped, and a list.
        s.gap(shop_cm, 450, 150, "recorder not running");
        s.list(shop_cm, 450, &[("shop", "a", "6")], "6");
        s.stop(shop_cm, 500, "6");
        let journal = s.journal();
        let history = History::load(&journal, CLUSTER, 600).unwrap();

        let window = TimeWindow::new(Millis::from_ms(250), Millis::from_ms(400)).unwrap();
        let diff = history
            .diff(
                &shop(),
                &NameFilter::default(),
                &window,
                &DiffOptions::default(),
                false,
            )
            .unwrap();
        assert!(diff.completeness.complete(), "{:?}", diff.completeness);
        assert_eq!(diff.objects.len(), 1);
        assert_eq!(
            (diff.objects[0].name.as_str(), diff.objects[0].change),
            ("a", Change::Modified)
        );
        assert_eq!(diff.objects[0].found_by_relist, None);

        let tracked = history.track(&configmaps(), "shop", "a").unwrap().unwrap();
        assert_eq!(tracked.members.len(), 2);
        let at = |t| history.tracked_at(&tracked, t).unwrap();
        assert_eq!(at(350).version().unwrap().resource_version, "6");
        assert_eq!(at(250).version().unwrap().resource_version, "5");

        // The change is the watched event, and the later relist found nothing
        // new: no relist finding anywhere.
        let t = history.timeline(&tracked, &DiffOptions::default()).unwrap();
        let versions: Vec<_> = t
            .entries
            .iter()
            .filter(|e| e.kind != EntryType::Gap)
            .collect();
        assert!(
            versions.iter().all(|e| e.found_by_relist.is_none()),
            "{:?}",
            kinds(&t)
        );
        assert_eq!(
            versions
                .iter()
                .filter(|e| e.kind == EntryType::Modified)
                .count(),
            1
        );
        // Nobody watched between 150 and 200, nor between 400 and 450: those
        // gaps are the answer's.
        let gaps: Vec<_> = t
            .entries
            .iter()
            .filter(|e| e.kind == EntryType::Gap)
            .map(|e| (e.observed_at, e.gap.as_ref().and_then(|g| g.to)))
            .collect();
        assert_eq!(gaps, vec![(150, Some(199)), (401, Some(450))]);

        // A question over every namespace, asked when only `-n shop` watched,
        // is not complete: other namespaces were not recorded then.
        let early = TimeWindow::new(Millis::from_ms(110), Millis::from_ms(150)).unwrap();
        let all = Scope {
            namespace: None,
            types: None,
        };
        let diff = history
            .diff(
                &all,
                &NameFilter::default(),
                &early,
                &DiffOptions::default(),
                false,
            )
            .unwrap();
        assert!(!diff.completeness.complete());
    }

    #[test]
    fn a_question_over_every_namespace_needs_every_namespace_recorded() {
        let mut s = Script::new();
        let shop_cm = s.stream(Some("shop"));
        s.list(shop_cm, 100, &[("shop", "a", "5")], "5");
        s.event(shop_cm, 200, WatchType::Modified, "shop", "a", "6");
        s.stop(shop_cm, 400, "6");
        let journal = s.journal();
        let history = History::load(&journal, CLUSTER, 500).unwrap();
        let window = TimeWindow::new(Millis::from_ms(150), Millis::from_ms(300)).unwrap();
        let scope = |namespace: Option<&str>| Scope {
            namespace: namespace.map(str::to_string),
            types: None,
        };
        let one = history
            .diff(
                &scope(Some("shop")),
                &NameFilter::default(),
                &window,
                &DiffOptions::default(),
                false,
            )
            .unwrap();
        assert!(one.completeness.complete());
        let every = history
            .diff(
                &scope(None),
                &NameFilter::default(),
                &window,
                &DiffOptions::default(),
                false,
            )
            .unwrap();
        assert!(!every.completeness.complete());
        assert!(
            every.completeness.warnings()[0].contains("only namespace shop was recorded"),
            "{:?}",
            every.completeness.warnings()
        );
        let snap = history.snapshot(&scope(None), 300, false).unwrap();
        assert!(!snap.completeness.complete());
    }

    #[test]
    fn a_watched_create_then_a_change_in_a_gap_says_both() {
        let mut s = Script::new();
        let cm = s.stream(Some("shop"));
        s.list(cm, 100, &[], "5");
        s.event(cm, 200, WatchType::Added, "shop", "flags", "6");
        s.gap(cm, 400, 300, "410 Expired");
        s.list(cm, 400, &[("shop", "flags", "9")], "9");
        s.stop(cm, 500, "9");
        let journal = s.journal();
        let history = History::load(&journal, CLUSTER, 600).unwrap();
        let window = TimeWindow::new(Millis::from_ms(150), Millis::from_ms(500)).unwrap();
        let diff = history
            .diff(
                &shop(),
                &NameFilter::default(),
                &window,
                &DiffOptions::default(),
                false,
            )
            .unwrap();
        let o = &diff.objects[0];
        assert_eq!(o.change, Change::Added);
        assert_eq!(o.found_by_relist, None, "the creation was watched");
        assert_eq!(o.observed_at, Some(200));
        assert_eq!(
            o.changed_between,
            Some(crate::history::Between { from: 300, to: 400 })
        );
    }
}
