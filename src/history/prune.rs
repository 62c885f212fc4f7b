//! Planning retention (docs/journal.md): for each stream, the state at the cut time
//! becomes a new baseline and everything older goes, so every answer about a
//! time at or after the cut stays the same. A stream whose cut falls where the
//! journal does not cover it keeps its history: a baseline there would claim
//! knowledge the journal does not have.

use super::{History, HistoryError};
use crate::journal::prune::{CutItem, StreamCut};

/// What prune will do with one stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamPlan {
    /// Replace everything up to `cut` by a baseline of `objects` objects there.
    Cut {
        stream: String,
        cut: i64,
        objects: usize,
    },
    /// Keep it all, for this reason.
    Keep { stream: String, reason: String },
}

impl History<'_> {
    /// Plans pruning everything older than `before`. A stream whose recording
    /// ended earlier is cut at its end instead (answers after it stay "not
    /// covered", as before).
    pub fn prune_plan(
        &self,
        before: i64,
    ) -> Result<(Vec<StreamCut>, Vec<StreamPlan>), HistoryError> {
        let mut cuts = Vec::new();
        let mut plans = Vec::new();
        for s in &self.streams {
            let name = s.info.name();
            let keep = |reason: &str| StreamPlan::Keep {
                stream: name.clone(),
                reason: reason.to_string(),
            };
            let Some(from) = s.from() else {
                plans.push(keep("never listed"));
                continue;
            };
            let end = s.end(self.now).unwrap_or(from);
            let cut = before.min(end);
            if cut <= from {
                plans.push(keep("nothing recorded before the cut"));
                continue;
            }
            let in_gap = s
                .coverage
                .windows
                .iter()
                .any(|w| w.from < cut && w.to.is_none_or(|to| to > cut));
            let unavailable = s
                .coverage
                .unavailable
                .as_ref()
                .is_some_and(|(at, _)| *at <= cut);
            if in_gap || unavailable {
                plans.push(keep("the cut falls where the journal does not cover it"));
                continue;
            }
            let Some(objects) = self.stream_at(s, cut)? else {
                plans.push(keep("never listed"));
                continue;
            };
            let list_rv = self
                .journal
                .watermark_at(s.info.id, cut)?
                .map(|(_, rv)| rv)
                .unwrap_or_default();
            plans.push(StreamPlan::Cut {
                stream: name,
                cut,
                objects: objects.len(),
            });
            cuts.push(StreamCut {
                stream: s.info.id,
                cut,
                items: objects
                    .values()
                    .map(|v| CutItem {
                        object: v.object,
                        body: v.body,
                        resource_version: v.resource_version.clone(),
                        seq: v.seq,
                    })
                    .collect(),
                list_rv,
            });
        }
        Ok((cuts, plans))
    }
}
