//! History answers from the journal (docs/consistency.md, docs/architecture.md §5): the state of objects at a
//! time, what changed between two times, the timeline of one object, snapshots,
//! and for every answer whether it is complete and what is missing.
//!
//! [`History`] loads, once, what every answer needs about the streams of one
//! cluster (coverage and completed lists); the answers then touch only the
//! records of the objects and the window they are about.

pub mod actors;
pub mod complete;
mod count;
pub mod cover;
pub mod diff;
pub mod log;
pub mod merge;
mod pipeline;
pub mod prune;
pub mod resolve;
#[cfg(test)]
pub(crate) mod script;
pub mod snapshot;
pub mod state;
pub mod suggest;
pub mod timeline;
pub mod tracked;

use crate::journal::read::{Coverage, StreamInfo, StreamState};
use crate::journal::versions::{BaselineRef, BodyReader, ObjectRow, VersionRow};
use crate::journal::{IdSet, Journal, JournalError, StreamId};
use crate::model::ResourceType;
use std::collections::{HashMap, HashSet};

/// Why a history question has no answer.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error("recorded body of {object} is not JSON: {detail}")]
    Body { object: String, detail: String },
}

/// What one recorded stream knows.
/// When a change found by a relist happened: some time in `(from, to]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Between {
    pub from: i64,
    pub to: i64,
}

#[derive(Debug, Clone)]
pub struct StreamHistory {
    pub info: StreamInfo,
    pub coverage: Coverage,
    pub baselines: Vec<BaselineRef>,
    /// Tokens of the lists that completed (items of other lists are ignored).
    pub lists: IdSet<i64>,
    /// Where the stream did not watch (as of the history's `now`).
    pub holes: cover::Holes,
}

impl StreamHistory {
    /// When coverage starts: the first baseline.
    pub fn from(&self) -> Option<i64> {
        self.coverage.from
    }

    /// When coverage ends: now for a stream a live recorder is watching, else
    /// its last durable point.
    pub fn end(&self, now: i64) -> Option<i64> {
        if self.coverage.state == StreamState::Watching {
            Some(now)
        } else {
            self.coverage.to
        }
    }

    /// The latest completed list at or before `at`.
    pub fn baseline_at(&self, at: i64) -> Option<&BaselineRef> {
        self.baselines.iter().rev().find(|b| b.observed_at <= at)
    }

    /// The stretch a relist at `listed_at` speaks for: from the start of the
    /// gap it closed (nobody watched since then) to the list itself. What it
    /// found changed happened at an unknown time in between. The gap it
    /// closed is the last one opened before the list (by `seq`, a record of
    /// the list): a 410 in the list's own millisecond opens the next one.
    pub fn relist_window(&self, listed_at: i64, seq: i64) -> Between {
        let from = self
            .coverage
            .windows
            .iter()
            .filter(|w| w.from <= listed_at && w.seq < seq)
            .max_by_key(|w| w.seq)
            .map_or(listed_at, |w| w.from);
        Between {
            from,
            to: listed_at,
        }
    }

    /// Whether this stream and `other` may hold the same objects: of one
    /// type, where one covers every namespace or both the same one (a
    /// `record -A` beside a `record -n shop`, two lanes of one stream, a label
    /// selector beside none), or of a cluster-scoped type.
    pub fn shares_objects_with(&self, other: &StreamHistory) -> bool {
        self.info.resource.group == other.info.resource.group
            && self.info.resource.resource == other.info.resource.resource
            && (!self.info.resource.namespaced
                || self.info.namespace.is_none()
                || other.info.namespace.is_none()
                || self.info.namespace == other.info.namespace)
    }

    /// Whether this stream holds objects of namespace `ns` (`None`: any).
    pub fn covers_namespace(&self, ns: Option<&str>) -> bool {
        match (ns, &self.info.namespace) {
            (None, _) => true,
            (Some(_), _) if !self.info.resource.namespaced => false,
            (Some(_), None) => true,
            (Some(want), Some(have)) => want == have,
        }
    }
}

/// Which objects a question is about.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    /// `None`: every namespace (`-A`).
    pub namespace: Option<String>,
    /// `None`: every recorded type.
    pub types: Option<Vec<ResourceType>>,
}

impl Scope {
    /// Whether `object`, of `stream`, is one this question is about: in the
    /// stream, in the namespace asked (for a namespaced type), and named by
    /// `names` (when it narrows).
    pub fn holds(
        &self,
        stream: &StreamHistory,
        object: &crate::journal::versions::ObjectRow,
        names: &diff::NameFilter,
    ) -> bool {
        object.stream == stream.info.id
            && match (&self.namespace, stream.info.resource.namespaced) {
                (Some(ns), true) => &object.namespace == ns,
                _ => true,
            }
            && names.allows(stream, &object.name)
    }
}

/// The history of one cluster as the journal holds it.
pub struct History<'j> {
    pub journal: &'j Journal,
    pub cluster: String,
    pub streams: Vec<StreamHistory>,
    /// The reader's clock.
    pub now: i64,
    bodies: std::cell::RefCell<BodyReader>,
    /// The decoder timelines compared on this thread use, made once
    /// (`log` reads a timeline per object).
    decoder: std::cell::RefCell<Option<crate::journal::versions::Decoder>>,
    /// Where object records stop being early enough for a time (the zones, read
    /// in the same snapshot as the streams).
    bounds: crate::journal::zones::SeqBounds,
    /// The time ranges imported audit logs cover, merged (empty: none).
    audit_covered: Vec<(i64, i64)>,
    who_cache: actors::WhoCache,
    /// From how many objects to compare on a `diff` reads them on connections
    /// beside `journal` ([`History::read_beside_from`]).
    beside_from: usize,
}

impl Drop for History<'_> {
    fn drop(&mut self) {
        self.journal.end_read();
    }
}

impl<'j> History<'j> {
    pub fn load(
        journal: &'j Journal,
        cluster: &str,
        now: i64,
    ) -> Result<History<'j>, JournalError> {
        // One snapshot for the whole answer (ended when the History is
        // dropped, or by a write on this connection): coverage and records
        // agree even while a recorder commits.
        journal.begin_read()?;
        let live = crate::journal::lock::live_streams(journal.path());
        let mut streams = Vec::new();
        for info in journal.streams(Some(cluster))? {
            let coverage = journal.coverage(&info, now, live.contains(&info.id))?;
            let baselines = journal.baselines(info.id)?;
            let lists = baselines.iter().map(|b| b.token).collect();
            let mut stream = StreamHistory {
                info,
                coverage,
                baselines,
                lists,
                holes: cover::Holes::all(),
            };
            stream.holes = cover::Holes::of(&stream, now);
            streams.push(stream);
        }
        // By name, recorded before imported: answers list streams in an order
        // that another journal holding the same streams (an export imported
        // there) has too, whatever ids they got.
        streams.sort_by(|a, b| {
            (a.info.name(), a.info.origin.is_some(), &a.info.origin).cmp(&(
                b.info.name(),
                b.info.origin.is_some(),
                &b.info.origin,
            ))
        });
        Ok(History {
            journal,
            cluster: cluster.to_string(),
            streams,
            now,
            bodies: std::cell::RefCell::new(BodyReader::new()),
            decoder: Default::default(),
            bounds: journal.seq_bounds()?,
            audit_covered: crate::audit::join::merge(&journal.audit_coverage(cluster)?),
            who_cache: Default::default(),
            beside_from: diff::READ_BESIDE_FROM,
        })
    }

    /// From how many objects that may differ a `diff` has each comparing
    /// thread read its own on a connection beside the history's (`usize::MAX`:
    /// never). Every setting gives the same answers (tests compare them).
    pub fn read_beside_from(&mut self, candidates: usize) {
        self.beside_from = candidates;
    }

    /// Every resource type recorded for this cluster, once each.
    pub fn recorded_types(&self) -> Vec<ResourceType> {
        let mut out: Vec<ResourceType> = Vec::new();
        for s in &self.streams {
            if !out
                .iter()
                .any(|t| t.group == s.info.resource.group && t.resource == s.info.resource.resource)
            {
                out.push(s.info.resource.clone());
            }
        }
        out
    }

    /// The streams a scope draws on: every stream of a type asked about that
    /// covers the namespace asked about (a stream of that namespace, or of
    /// every namespace), recorded here or imported, with a label selector or
    /// without. Where several cover one object, answers merge them per
    /// object ([`tracked`]) and count their coverage together
    /// ([`History::completeness`]).
    pub fn streams_for(&self, scope: &Scope) -> Vec<&StreamHistory> {
        let wanted = |s: &StreamHistory| match &scope.types {
            None => true,
            Some(types) => types.iter().any(|t| {
                t.group == s.info.resource.group && t.resource == s.info.resource.resource
            }),
        };
        self.streams
            .iter()
            .filter(|s| wanted(s) && s.covers_namespace(scope.namespace.as_deref()))
            // Cluster-scoped types only enter a namespace question by name.
            .filter(|s| {
                scope.namespace.is_none() || s.info.resource.namespaced || scope.types.is_some()
            })
            .collect()
    }

    pub fn stream(&self, id: StreamId) -> Option<&StreamHistory> {
        self.streams.iter().find(|s| s.info.id == id)
    }

    /// The recorded JSON of a version, with `apiVersion` and `kind` filled in from
    /// the stream when the server left them out (list items).
    pub fn object_json(
        &self,
        stream: &StreamHistory,
        version: &VersionRow,
    ) -> Result<serde_json::Value, HistoryError> {
        let raw = self.object_bytes(version)?;
        let value: serde_json::Value =
            serde_json::from_slice(&raw).map_err(|e| HistoryError::Body {
                object: format!("{} at seq {}", stream.info.name(), version.seq),
                detail: e.to_string(),
            })?;
        Ok(stream.info.resource.fill_type_meta(value))
    }

    /// The recorded bytes of a version, as the server sent them.
    pub fn object_bytes(&self, version: &VersionRow) -> Result<Vec<u8>, JournalError> {
        self.bodies.borrow_mut().read(self.journal, version.body)
    }

    /// Every version of `object` that `stream` stands by, oldest first: its
    /// events, and the items of the lists that completed.
    pub fn versions(
        &self,
        stream: &StreamHistory,
        object: i64,
    ) -> Result<Vec<VersionRow>, JournalError> {
        Ok(VersionRow::kept(
            self.journal.object_versions(object)?,
            |v| v.list_token.is_none_or(|t| stream.lists.contains(&t)),
        ))
    }

    /// [`History::versions`] from the last one observed at or before `at`
    /// (all of them when none was): what a question about a window from `at`
    /// needs of an object's past, read without the rest (a `log` of the last
    /// hour reads a few records per object, not its week).
    pub fn versions_from(
        &self,
        stream: &StreamHistory,
        object: i64,
        at: i64,
    ) -> Result<Vec<VersionRow>, JournalError> {
        let from = self
            .journal
            .object_version_at(object, at, self.bounds.at(at), &stream.lists)?
            .map_or(i64::MIN, |v| v.seq);
        Ok(VersionRow::kept(
            self.journal.object_versions_from(object, from)?,
            |v| v.list_token.is_none_or(|t| stream.lists.contains(&t)),
        ))
    }

    /// Objects by id with their streams.
    pub fn objects(&self, ids: &HashSet<i64>) -> Result<HashMap<i64, ObjectRow>, JournalError> {
        self.journal.objects(ids)
    }
}
