//! The payloads of journal records that are not object bodies, stored as JSON in
//! `records.info`.

use serde::{Deserialize, Serialize};

/// Why a stream's history has a hole.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GapInfo {
    /// The last durable point before the hole (ms since the epoch).
    pub from: i64,
    /// The resourceVersion at that point, when one was known.
    pub from_rv: Option<String>,
    /// What happened, e.g. `410 Expired: too old resource version: 5 (100)` or
    /// `recorder not running`.
    pub reason: String,
}

/// A stream became unavailable (403/404) or available again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoverageInfo {
    pub available: bool,
    pub reason: String,
}

/// Why a checkpoint was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckpointReason {
    /// Events of this stream were committed in the same transaction.
    Event,
    /// The server sent a BOOKMARK.
    Bookmark,
    /// The watch was open and quiet; nothing was missed up to here.
    Heartbeat,
    /// The recorder stopped cleanly while watching.
    Stop,
}

/// A durable point of a stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointInfo {
    pub reason: CheckpointReason,
    /// Events journaled for this stream so far (all recorder runs).
    pub events: u64,
}

/// A completed list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BaselineInfo {
    pub items: u64,
}

/// A recorder writes a durable point for every watching stream at least this
/// often (bookmark, events or a heartbeat), so readers can tell a live stream
/// from one whose recorder went away.
pub const HEARTBEAT_MS: i64 = 5_000;
