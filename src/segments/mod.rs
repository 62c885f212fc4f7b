//! Parquet segments: history carried out of a journal to DuckDB and
//! ClickHouse, and back into another journal (docs/at-scale.md).
//!
//! A layer above [`crate::history`] and [`crate::journal`]: [`export`]
//! writes a journal's records, with who made each change, as day files;
//! [`audit`] is a cluster's audit events beside them; [`import`] reads both
//! back as read-only history, through the journal's writer and its import
//! bookkeeping. The journal below knows nothing of Parquet.

pub mod audit;
pub mod export;
pub mod import;

/// The cluster a segment or audit file is of, as its metadata names it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClusterMeta {
    pub id: String,
    pub server: String,
    pub context: Option<String>,
}
