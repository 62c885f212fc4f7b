//! Saved replay plans: what a plan would apply, where, and its verdict.

use super::{Journal, JournalError};
use rusqlite::{OptionalExtension, params};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedPlan {
    pub id: String,
    pub cluster: String,
    pub created_at: i64,
    pub status: String,
    /// The whole plan as JSON.
    pub info: String,
}

impl Journal {
    pub fn save_plan(&self, plan: &SavedPlan) -> Result<(), JournalError> {
        self.end_read();
        self.conn()
            .execute(
                "INSERT INTO plans(id, cluster_id, created_at, status, info) VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT(id) DO UPDATE SET status = excluded.status, info = excluded.info",
                params![plan.id, plan.cluster, plan.created_at, plan.status, plan.info],
            )
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    pub fn plan(&self, id: &str) -> Result<Option<SavedPlan>, JournalError> {
        self.conn()
            .query_row(
                "SELECT id, cluster_id, created_at, status, info FROM plans WHERE id = ?1",
                params![id],
                |r| {
                    Ok(SavedPlan {
                        id: r.get(0)?,
                        cluster: r.get(1)?,
                        created_at: r.get(2)?,
                        status: r.get(3)?,
                        info: r.get(4)?,
                    })
                },
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// Every plan, oldest first.
    pub fn plans(&self) -> Result<Vec<SavedPlan>, JournalError> {
        let mut stmt = self
            .conn()
            .prepare("SELECT id, cluster_id, created_at, status, info FROM plans ORDER BY created_at, id")
            .map_err(|e| self.err(e))?;
        stmt.query_map([], |r| {
            Ok(SavedPlan {
                id: r.get(0)?,
                cluster: r.get(1)?,
                created_at: r.get(2)?,
                status: r.get(3)?,
                info: r.get(4)?,
            })
        })
        .and_then(|rows| rows.collect())
        .map_err(|e| self.err(e))
    }
}
