//! Who made each change (docs/audit.md): an object's recorded events joined to
//! the audit events on it ([`crate::audit::join`]). Answers carry actors only
//! when audit logs of the cluster were imported; otherwise nothing changes.

use super::{History, HistoryError, StreamHistory};
use crate::audit::join::{self, Change, Kind, Write};
use crate::audit::{Actor, Attribution, By, Who};
use crate::journal::versions::VersionRow;
use crate::model::WatchType;
use std::collections::HashMap;

impl History<'_> {
    /// Whether answers about this cluster carry actors: audit logs of it were
    /// imported.
    pub fn has_audit(&self) -> bool {
        !self.audit_covered.is_empty()
    }

    /// Who made each of an object's `versions` (oldest first, as
    /// [`crate::journal::Journal::object_versions`] gives them): `None` for
    /// baseline items (a list saw them, nobody made them) and for every
    /// version when no audit log was imported.
    pub fn attribute(
        &self,
        stream: &StreamHistory,
        versions: &[VersionRow],
    ) -> Result<Vec<Option<Attribution>>, HistoryError> {
        let mut out = vec![None; versions.len()];
        let events: Vec<usize> = (0..versions.len())
            .filter(|&i| versions[i].watch_type.is_some())
            .collect();
        if !self.has_audit() || events.is_empty() {
            return Ok(out);
        }
        // The writes first: an object's uid is read from its bodies only
        // when a write carries one to compare with (a parse per incarnation).
        let (first, last) = events.iter().fold((i64::MAX, i64::MIN), |(f, l), &i| {
            (
                f.min(versions[i].observed_at),
                l.max(versions[i].observed_at),
            )
        });
        let stored = self.journal.audit_writes(
            versions[events[0]].object,
            first - join::BEFORE_MS,
            last + join::AFTER_MS,
        )?;
        let uids = if stored.iter().any(|w| w.uid.is_some()) {
            self.uids(stream, versions)?
        } else {
            vec![None; versions.len()]
        };
        let changes: Vec<Change<'_>> = events
            .iter()
            .map(|&i| {
                let v = &versions[i];
                Change {
                    at: v.observed_at,
                    kind: match v.watch_type {
                        Some(WatchType::Added) => Kind::Added,
                        Some(WatchType::Deleted) => Kind::Deleted,
                        _ => Kind::Modified,
                    },
                    resource_version: &v.resource_version,
                    uid: uids[i].as_deref(),
                }
            })
            .collect();
        let writes: Vec<Write<'_>> = stored
            .iter()
            .map(|w| Write {
                at: w.at,
                verb: w.verb,
                resource_version: w.resource_version.as_deref(),
                uid: w.uid.as_deref(),
                actor: w.actor,
            })
            .collect();
        for (slot, found) in join::join(&changes, &writes, &self.audit_covered)
            .into_iter()
            .enumerate()
        {
            out[events[slot]] = Some(match found {
                Ok((w, matched)) => {
                    let write = &stored[w];
                    let who = self.who(write.actor)?;
                    Attribution::Known(Actor {
                        user: who.user,
                        groups: who.groups,
                        impersonated_by: who.impersonated_by,
                        user_agent: who.user_agent,
                        source_ips: who.source_ips,
                        audit_id: write.audit_id.clone(),
                        matched,
                    })
                }
                Err(why) => Attribution::Unknown(why),
            });
        }
        Ok(out)
    }

    /// Each version's uid: read where an incarnation may begin (the first
    /// version, an ADDED one, the one after a DELETED, and one a list saw:
    /// the object may have been deleted and created again while nobody
    /// watched, seed 2591 of the truth checker), kept for the rest.
    fn uids(
        &self,
        stream: &StreamHistory,
        versions: &[VersionRow],
    ) -> Result<Vec<Option<String>>, HistoryError> {
        let mut out: Vec<Option<String>> = Vec::with_capacity(versions.len());
        for (i, v) in versions.iter().enumerate() {
            let starts = i == 0
                || v.synthetic()
                || v.watch_type == Some(WatchType::Added)
                || versions[i - 1].watch_type == Some(WatchType::Deleted);
            let uid = if starts {
                self.object_json(stream, v)?
                    .pointer("/metadata/uid")
                    .and_then(|u| u.as_str())
                    .map(str::to_string)
            } else {
                out[i - 1].clone()
            };
            out.push(uid);
        }
        Ok(out)
    }

    fn who(&self, actor: i64) -> Result<Who, HistoryError> {
        if let Some(w) = self.who_cache.borrow().get(&actor) {
            return Ok(w.clone());
        }
        let who = self.journal.audit_who(actor)?;
        self.who_cache.borrow_mut().insert(actor, who.clone());
        Ok(who)
    }
}

/// The cache of actors read, kept by [`History`].
pub(super) type WhoCache = std::cell::RefCell<HashMap<i64, Who>>;

impl History<'_> {
    /// Who made a change only a relist found (docs/audit.md, "Changes a
    /// relist found"), from the audit writes on the object (`objects`: its
    /// rows, one per stream that holds it) inside the stretch `between`: an
    /// object found new or gone to its create or delete
    /// ([`join::relist_made`]); a changed one field by field, to the one
    /// write that could have made each ([`join::relist_field`]), and the
    /// change itself to the actor its fields agree on. The stretch
    /// starts after the write that made the version before
    /// (`previous_version`) when the audit logs hold it: what it and older
    /// writes did is already in that version.
    pub(super) fn attribute_relist(
        &self,
        objects: &[i64],
        between: super::Between,
        previous_version: Option<&str>,
        (change, resource_version): (join::Kind, &str),
        fields: &mut [super::diff::Field],
    ) -> Result<By, HistoryError> {
        let (from, to) = (between.from - join::BEFORE_MS, between.to + join::AFTER_MS);
        let mut stored: Vec<crate::journal::audit::StoredWrite> = Vec::new();
        for &object in objects {
            for w in self.journal.audit_writes(object, from, to)? {
                if !stored
                    .iter()
                    .any(|s| s.audit_id == w.audit_id && s.at == w.at)
                {
                    stored.push(w);
                }
            }
        }
        if let Some(before) = previous_version
            && let Some(made) = stored
                .iter()
                .rposition(|w| w.resource_version.as_deref() == Some(before))
        {
            stored.drain(..=made);
        }
        let covered = self
            .audit_covered
            .iter()
            .any(|&(a, b)| a <= between.from && between.to <= b);
        let writes: Vec<join::RelistWrite<'_>> = stored
            .iter()
            .map(|w| join::RelistWrite {
                verb: w.verb,
                resource_version: w.resource_version.as_deref(),
                subresource: w.subresource.as_deref(),
            })
            .collect();
        let by_of = |found: join::Found| -> Result<By, HistoryError> {
            Ok(match found {
                Ok((i, matched)) => {
                    let write = &stored[i];
                    let who = self.who(write.actor)?;
                    By::of(Some(&Attribution::Known(Actor {
                        user: who.user,
                        groups: who.groups,
                        impersonated_by: who.impersonated_by,
                        user_agent: who.user_agent,
                        source_ips: who.source_ips,
                        audit_id: write.audit_id.clone(),
                        matched,
                    })))
                }
                Err(why) => By::of(Some(&Attribution::Unknown(why))),
            })
        };
        if change != Kind::Modified {
            return by_of(join::relist_made(
                change,
                resource_version,
                &writes,
                covered,
            ));
        }
        for f in fields.iter_mut() {
            let status = f.change.path.to_string().starts_with("status");
            f.by = by_of(join::relist_field(
                status,
                resource_version,
                &writes,
                covered,
            ))?;
        }
        // The change itself: the one actor of all its fields; without
        // fields (status only, not shown), the write that made the version.
        if let Some(first) = fields.first() {
            return Ok(if fields.iter().all(|f| f.by == first.by) {
                first.by.clone()
            } else {
                By::of(Some(&Attribution::Unknown(
                    crate::audit::Unknown::Ambiguous,
                )))
            });
        }
        let maker = writes
            .iter()
            .position(|w| w.resource_version == Some(resource_version));
        by_of(match maker {
            Some(i) => Ok((i, crate::audit::Match::Exact)),
            None if covered => Err(crate::audit::Unknown::NoMatch),
            None => Err(crate::audit::Unknown::NotCovered),
        })
    }
}

/// Whether one field path lies within the other (or is it).
pub(super) fn related(a: &str, b: &str) -> bool {
    let within = |inner: &str, outer: &str| {
        inner == outer
            || inner
                .strip_prefix(outer)
                .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('['))
    };
    within(a, b) || within(b, a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_relate_when_one_holds_the_other() {
        assert!(related("spec.replicas", "spec.replicas"));
        assert!(related(
            "spec.template",
            "spec.template.spec.containers[0].image"
        ));
        assert!(related("data[\"a.b\"]", "data"));
        assert!(!related("spec.replicasX", "spec.replicas"));
        assert!(!related("metadata.labels", "metadata.annotations"));
    }

    #[test]
    fn the_text_names_the_actor_or_why_not() {
        let actor = Actor {
            user: "alice@example.com".into(),
            groups: vec![],
            impersonated_by: Some("admin".into()),
            user_agent: None,
            source_ips: vec![],
            audit_id: "x".into(),
            matched: crate::audit::Match::Exact,
        };
        let by = By::of(Some(&Attribution::Known(actor.clone())));
        assert_eq!(
            by.text(Some("kubectl-edit")).as_deref(),
            Some("by alice@example.com (kubectl-edit)")
        );
        assert!(by.is("alice@example.com") && !by.is("admin") && !by.is("bob"));
        let likely = By::of(Some(&Attribution::Known(Actor {
            matched: crate::audit::Match::Likely,
            ..actor
        })));
        assert_eq!(
            likely.text(None).as_deref(),
            Some("likely by alice@example.com")
        );
        let unknown = By::of(Some(&Attribution::Unknown(
            crate::audit::Unknown::NotCovered,
        )));
        assert_eq!(
            unknown.text(Some("m")).as_deref(),
            Some("by ? (m): the audit log does not cover this time")
        );
        assert_eq!(By::of(None).text(Some("m")), None);
    }
}
