//! Field-level differences between two versions of an object.
//!
//! [`diff_objects`] walks two JSON values side by side and reports one [`FieldChange`]
//! per difference:
//!
//! - objects are compared key by key and lists element by element (never "the list
//!   changed"); lists of named items and other lists with a merge key are matched by
//!   identity (see *Lists* below);
//! - a scalar that changed, or a value that changed type, is one change with both sides;
//! - a new key or list element is one change with `before: None` and the whole new
//!   subtree as `after` (never exploded into leaves); a removed one has `after: None`;
//! - a key whose value is `null` is present: `null` against a missing key is a change;
//! - server-owned noise is skipped at exact paths (see [`is_noise`]).
//!
//! # Paths
//! See [`FieldPath`]: `spec.template.spec.containers[0].image`,
//! `metadata.labels["app.kubernetes.io/name"]`. The index of an element is its index in
//! the new list, or in the old list for a removed element.
//!
//! # Order
//! Changes come in a stable depth-first order that follows the new object: within an
//! object, its keys in the order of the new object's map (document order: the crate
//! builds serde_json with `preserve_order`), then the removed keys in the old object's
//! order; within a list, the new list's elements in order, then the removed elements in
//! the old list's order.
//!
//! # Lists
//! Elements are matched by the first identity that all elements of both lists have,
//! uniquely: `name` (a string), `containerPort` (+`protocol`), `port` (+`protocol`),
//! `mountPath`, `type`. Otherwise by index. A matched element that moved relative to the
//! others is reported as removed from its old index and added at its new one.
//!
//! # Cost
//! Inputs are compared by reference; only the values of reported changes are cloned
//! ([`changed_paths`] clones none). Matching a list by identity hashes its keys once.

mod digest;
mod facts;
mod noise;
mod owner;
mod path;
mod reduce;
mod tape;
mod walk;

#[cfg(test)]
pub(crate) mod deployment_tests;
#[cfg(test)]
pub(crate) mod proptests;
#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use digest::{Identity, compared_digest, compared_digest_and_identity};
pub use facts::ObjectFacts;
pub use noise::{
    LAST_APPLIED_ANNOTATION, REVISION_ANNOTATION, TEMPLATE_GENERATION_ANNOTATION, is_noise,
    strip_noise,
};
pub use owner::{FieldOwner, field_manager, field_owner, last_writer};
pub use path::{FieldPath, PathError, PathSegment, parse_path};
pub use reduce::reduce_pair;

use path::SegRef;

/// What the differ reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct DiffOptions {
    /// Report changes under the top-level `status` too (the other noise stays hidden).
    pub include_status: bool,
}

/// One difference between two versions of an object.
///
/// In JSON, a missing side is `null`; a present `null` value is `null` too. Use
/// [`FieldChange::kind`] (or the `Option`s) to tell them apart before serializing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FieldChange {
    /// Where the change is.
    pub path: FieldPath,
    /// The old value; `None` when the field was added.
    pub before: Option<Value>,
    /// The new value; `None` when the field was removed.
    pub after: Option<Value>,
}

/// Whether a field was added, removed or modified.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    /// Absent before, present after.
    Added,
    /// Present before, absent after.
    Removed,
    /// Present on both sides with different values.
    Modified,
}

impl FieldChange {
    /// Added, removed or modified, from which sides are present.
    pub fn kind(&self) -> ChangeKind {
        match (&self.before, &self.after) {
            (None, _) => ChangeKind::Added,
            (_, None) => ChangeKind::Removed,
            _ => ChangeKind::Modified,
        }
    }
}

/// Every field-level change from `before` to `after`, in the order described in the
/// module documentation. Identical inputs give an empty list.
pub fn diff_objects(before: &Value, after: &Value, opts: &DiffOptions) -> Vec<FieldChange> {
    struct Collect(Vec<FieldChange>);
    impl walk::Sink for Collect {
        fn change(&mut self, path: &[SegRef<'_>], before: Option<&Value>, after: Option<&Value>) {
            self.0.push(FieldChange {
                path: path.iter().map(|s| s.to_owned_segment()).collect(),
                before: before.cloned(),
                after: after.cloned(),
            });
        }
    }
    let mut out = Collect(Vec::new());
    walk::walk(before, after, opts, &mut out);
    out.0
}

/// The rendered paths of [`diff_objects`], in the same order, without copying any value
/// (for the recorder's live feed).
pub fn changed_paths(before: &Value, after: &Value, opts: &DiffOptions) -> Vec<String> {
    struct Paths(Vec<String>);
    impl walk::Sink for Paths {
        fn change(&mut self, path: &[SegRef<'_>], _: Option<&Value>, _: Option<&Value>) {
            self.0.push(path::render_path(path));
        }
    }
    let mut out = Paths(Vec::new());
    walk::walk(before, after, opts, &mut out);
    out.0
}

/// The field changes from one version's JSON to the next, each with the
/// field manager that owns it after the change (for a removed field, the one
/// that owned it). Only the parts that differ are parsed; each side's
/// managedFields are read on its tape, only along the changed paths.
pub fn owned_changes(
    before: &str,
    after: &str,
    opts: &DiffOptions,
    defaults: &[(&str, &str)],
) -> serde_json::Result<Vec<(FieldChange, Option<String>)>> {
    let tb = reduce::tape(before)?;
    let ta = reduce::tape_after(after, &tb)?;
    let r = reduce::reduce_tapes(&tb, &ta, opts, defaults)?;
    let changes = diff_objects(&r.before, &r.after, opts);
    Ok(changes
        .into_iter()
        .map(|change| {
            let (owner, managed) = if change.after.is_some() {
                (&r.after, r.managed_after)
            } else {
                (&r.before, r.managed_before)
            };
            let manager =
                managed.and_then(|entries| owner::raw_field_manager(entries, owner, &change.path));
            (change, manager)
        })
        .collect())
}
