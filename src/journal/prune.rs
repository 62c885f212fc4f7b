//! Retention: replace a stream's history up to a cut time by a baseline at that
//! time, then drop what nothing references any more and give the space back.

use super::schema::kind;
use super::{Journal, JournalError, StreamId};
use rusqlite::params;

/// What to write for one stream: its state at `cut`, as a baseline.
#[derive(Debug, Clone)]
pub struct StreamCut {
    pub stream: StreamId,
    pub cut: i64,
    /// (object, body, resourceVersion) of every object present at `cut`.
    pub items: Vec<(i64, i64, String)>,
    /// The resourceVersion the stream was complete at, at `cut`.
    pub list_rv: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PruneReport {
    pub records_deleted: u64,
    pub bodies_deleted: u64,
    pub objects_deleted: u64,
    pub snapshots_deleted: u64,
}

impl Journal {
    /// Applies the cuts in one transaction, then vacuums. The caller holds the
    /// writer lock: no recorder may run meanwhile (its caches would point at
    /// bodies this removes).
    pub fn prune(
        &self,
        cuts: &[StreamCut],
        snapshots_before: i64,
    ) -> Result<PruneReport, JournalError> {
        let err = |e| self.err(e);
        self.end_read();
        let tx = self.conn().unchecked_transaction().map_err(err)?;
        let mut report = PruneReport::default();
        // The new baselines precede every record left, in seq order: they go
        // below the smallest seq there is.
        let min_seq: i64 = tx
            .query_row("SELECT coalesce(min(seq), 1) FROM records", [], |r| {
                r.get(0)
            })
            .map_err(err)?;
        let needed: i64 = cuts.iter().map(|c| c.items.len() as i64 + 1).sum();
        let mut seq = min_seq - needed - 1;
        for c in cuts {
            report.records_deleted += tx
                .execute(
                    "DELETE FROM records WHERE stream_id = ?1 AND observed_at <= ?2",
                    params![c.stream, c.cut],
                )
                .map_err(err)? as u64;
            let token = seq;
            for (object, body, rv) in &c.items {
                tx.execute(
                    "INSERT INTO records(seq, stream_id, kind, observed_at, object_id, body_id,
                                         resource_version, aux)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                    params![
                        seq,
                        c.stream,
                        kind::BASELINE_ITEM,
                        c.cut,
                        object,
                        body,
                        rv,
                        token
                    ],
                )
                .map_err(err)?;
                seq += 1;
            }
            let info = serde_json::json!({ "items": c.items.len(), "pruned": true }).to_string();
            tx.execute(
                "INSERT INTO records(seq, stream_id, kind, observed_at, resource_version, aux, info)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![seq, c.stream, kind::BASELINE, c.cut, c.list_rv, token, info],
            )
            .map_err(err)?;
            seq += 1;
        }
        report.snapshots_deleted = tx
            .execute(
                "DELETE FROM snapshots WHERE at < ?1",
                params![snapshots_before],
            )
            .map_err(err)? as u64;
        // Deltas no longer read go first (with their bytes waiting in `blobs`),
        // then the packs none of their versions is in any more, then the
        // keyframes only they used.
        tx.execute(
            "DELETE FROM blobs WHERE
                body_id NOT IN (SELECT body_id FROM records WHERE body_id IS NOT NULL)",
            [],
        )
        .map_err(err)?;
        report.bodies_deleted += tx
            .execute(
                "DELETE FROM bodies WHERE
                    id NOT IN (SELECT body_id FROM records WHERE body_id IS NOT NULL)
                    AND id NOT IN (SELECT base_id FROM bodies WHERE base_id IS NOT NULL)",
                [],
            )
            .map_err(err)? as u64;
        tx.execute(
            &format!(
                "DELETE FROM packs WHERE id NOT IN
                    (SELECT (pack_ref - {unpacked}) >> {bits} FROM bodies WHERE pack_ref > {unpacked})",
                unpacked = super::schema::UNPACKED,
                bits = super::schema::OFFSET_BITS,
            ),
            [],
        )
        .map_err(err)?;
        report.bodies_deleted += tx
            .execute(
                "DELETE FROM bodies WHERE
                    id NOT IN (SELECT body_id FROM records WHERE body_id IS NOT NULL)
                    AND id NOT IN (SELECT base_id FROM bodies WHERE base_id IS NOT NULL)
                    AND id NOT IN (SELECT base_id FROM packs)",
                [],
            )
            .map_err(err)? as u64;
        // The records left, and the new baselines below them, in zones afresh.
        super::zones::rebuild(&tx).map_err(err)?;
        report.objects_deleted = tx
            .execute(
                "DELETE FROM objects WHERE id NOT IN
                    (SELECT object_id FROM records WHERE object_id IS NOT NULL)",
                [],
            )
            .map_err(err)? as u64;
        tx.commit().map_err(err)?;
        // VACUUM rewrites the file through the WAL; the checkpoint moves it back
        // and truncates the WAL, so the space is really returned.
        self.conn()
            .execute_batch("VACUUM; PRAGMA wal_checkpoint(TRUNCATE);")
            .map_err(err)?;
        Ok(report)
    }
}
