//! Saved snapshots (`snapshot --save NAME`): a named time and what a snapshot
//! at that time found. The objects are not copied; they are reconstructed from
//! the journal whenever asked for.

use super::{Journal, JournalError};
use rusqlite::params;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedSnapshot {
    pub id: i64,
    pub cluster: String,
    pub name: String,
    pub at: i64,
    pub created_at: i64,
    /// What the snapshot found, as JSON (scope, watermarks, completeness).
    pub info: String,
}

impl Journal {
    /// Saves a snapshot; a name is unique per cluster.
    pub fn save_snapshot(
        &self,
        cluster: &str,
        name: &str,
        at: i64,
        created_at: i64,
        info: &str,
    ) -> Result<Option<i64>, JournalError> {
        self.end_read();
        let inserted = self
            .conn()
            .execute(
                "INSERT OR IGNORE INTO snapshots(cluster_id, name, at, created_at, info)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![cluster, name, at, created_at, info],
            )
            .map_err(|e| self.err(e))?;
        Ok((inserted == 1).then(|| self.conn().last_insert_rowid()))
    }

    /// Saved snapshots of a cluster (or all), oldest first.
    pub fn snapshots(&self, cluster: Option<&str>) -> Result<Vec<SavedSnapshot>, JournalError> {
        let mut stmt = self
            .conn()
            .prepare(
                "SELECT id, cluster_id, name, at, created_at, info FROM snapshots
                 WHERE ?1 IS NULL OR cluster_id = ?1 ORDER BY created_at, id",
            )
            .map_err(|e| self.err(e))?;
        stmt.query_map(params![cluster], |r| {
            Ok(SavedSnapshot {
                id: r.get(0)?,
                cluster: r.get(1)?,
                name: r.get(2)?,
                at: r.get(3)?,
                created_at: r.get(4)?,
                info: r.get(5)?,
            })
        })
        .and_then(|rows| rows.collect())
        .map_err(|e| self.err(e))
    }
}
