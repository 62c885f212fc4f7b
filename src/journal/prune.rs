//! Retention: replace a stream's history up to a cut time by a baseline at that
//! time, then drop what nothing references any more and give the space back.

use super::schema::kind;
use super::{Journal, JournalError, StreamId};
use rusqlite::{OptionalExtension, params};

/// What to write for one stream: its state at `cut`, as a baseline.
#[derive(Debug, Clone)]
pub struct StreamCut {
    pub stream: StreamId,
    pub cut: i64,
    /// Every object present at `cut`, with its version then.
    pub items: Vec<CutItem>,
    /// The resourceVersion the stream was complete at, at `cut`.
    pub list_rv: String,
}

/// An object present at a cut, and its version then.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CutItem {
    pub object: i64,
    /// The body the version read by when the cut was planned.
    pub body: i64,
    pub resource_version: String,
    /// The version's `seq`: a writer that folds behind itself may have moved
    /// it into a block since the cut was planned, which changes the id its
    /// body reads by, never its `seq` ([`super::cold::body_of`]).
    pub seq: i64,
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
        // Enforcing foreign keys row by row would check each deleted body
        // against `records`, which has no index on `body_id`: a scan of the
        // records per body (minutes on a million records). The transaction
        // deletes only what nothing references and checks every key once
        // before it commits; enforcement comes back on whatever happens.
        self.conn()
            .pragma_update(None, "foreign_keys", false)
            .map_err(err)?;
        let report = self.apply_cuts(cuts, snapshots_before);
        let restored = self.conn().pragma_update(None, "foreign_keys", true);
        let report = report?;
        restored.map_err(err)?;
        // VACUUM rewrites the file through the WAL; the checkpoint moves it back
        // and truncates the WAL, so the space is really returned.
        self.conn()
            .execute_batch("VACUUM; PRAGMA wal_checkpoint(TRUNCATE);")
            .map_err(err)?;
        Ok(report)
    }

    /// The cuts in one transaction, committed only if every foreign key holds.
    fn apply_cuts(
        &self,
        cuts: &[StreamCut],
        snapshots_before: i64,
    ) -> Result<PruneReport, JournalError> {
        let err = |e| self.err(e);
        let tx = self.conn().unchecked_transaction().map_err(err)?;
        let mut report = PruneReport::default();
        // The new baselines precede every record left, in seq order: they go
        // below the smallest seq there is.
        let min_seq: i64 = tx
            .query_row(super::MIN_SEQ, [], |r| r.get(0))
            .map_err(err)?;
        let needed: i64 = cuts.iter().map(|c| c.items.len() as i64 + 1).sum();
        let mut seq = min_seq - needed - 1;
        // There is no index on time (docs/journal.md, "Zones"): a stream's
        // other records come through `records_stream_meta`, its events from
        // the stretch of `seq`s the zones say can be old enough.
        let bounds = super::zones::bounds(&tx).map_err(err)?;
        let mut codec = super::cold::ColdCx::default();
        let mut bodies = super::bodies::BodyStore::new(self.path().to_path_buf(), true);
        for c in cuts {
            report.records_deleted += tx
                .execute(
                    &format!(
                        "DELETE FROM records WHERE stream_id = ?1 AND {} AND observed_at <= ?2",
                        kind::META
                    ),
                    params![c.stream, c.cut],
                )
                .map_err(err)? as u64;
            report.records_deleted += tx
                .execute(
                    &format!(
                        "DELETE FROM records
                         WHERE seq <= ?3 AND stream_id = ?1 AND kind = {} AND observed_at <= ?2",
                        kind::EVENT
                    ),
                    params![c.stream, c.cut, bounds.at(c.cut)],
                )
                .map_err(err)? as u64;
            let token = seq;
            // An item of an object that keeps a block after the cut goes into
            // that block, before its records (blocks hold an object's oldest
            // records); another whose version is kept in a block gets a body
            // row of its own, as the block loses that record below.
            let mut items = Vec::with_capacity(c.items.len());
            for (
                i,
                CutItem {
                    object,
                    body,
                    resource_version: rv,
                    ..
                },
            ) in c.items.iter().enumerate()
            {
                let item_seq = seq + i as i64;
                if let Some(block) =
                    super::cold::first_block_after(&tx, *object, c.cut).map_err(err)?
                {
                    let raw = bodies.read(&tx, *body)?;
                    let item = super::block::ColdRecord {
                        seq: item_seq,
                        kind: kind::BASELINE_ITEM,
                        observed_at: c.cut,
                        watch_type: None,
                        resource_version: Some(super::wire::Rv::parse(rv)),
                        event_key: None,
                        aux: Some(token),
                        body: Some(raw.as_slice()),
                    };
                    super::cold::prepend(&tx, self.path(), &mut codec, block, item)?;
                } else {
                    let body = super::cold::body_row_of(&tx, self.path(), &mut codec, *body)?;
                    items.push((item_seq, *object, body, rv.clone()));
                }
            }
            for (item_seq, object, body, rv) in &items {
                tx.execute(
                    "INSERT INTO records(seq, stream_id, kind, observed_at, object_id, body_id,
                                         resource_version, aux)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                    params![
                        item_seq,
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
            }
            seq += c.items.len() as i64;
            let info = serde_json::json!({ "items": c.items.len(), "pruned": true }).to_string();
            tx.execute(
                "INSERT INTO records(seq, stream_id, kind, observed_at, resource_version, aux, info)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![seq, c.stream, kind::BASELINE, c.cut, c.list_rv, token, info],
            )
            .map_err(err)?;
            seq += 1;
            // Then the records at or before the cut kept in blocks, but the
            // cut's own items.
            let mut after = 0;
            // Bounded: each pass takes blocks of a higher id than the last.
            loop {
                let ids =
                    super::cold::blocks_before(&tx, c.stream, c.cut, after, 256).map_err(err)?;
                for &id in &ids {
                    if let Some((_, gone)) =
                        super::cold::cut_block(&tx, self.path(), &mut codec, id, c.cut, min_seq)?
                    {
                        report.records_deleted += gone;
                    }
                }
                match ids.last() {
                    Some(&last) if ids.len() == 256 => after = last,
                    _ => break,
                }
            }
        }
        report.snapshots_deleted = tx
            .execute(
                "DELETE FROM snapshots WHERE at < ?1",
                params![snapshots_before],
            )
            .map_err(err)? as u64;
        // Deltas no longer read go first (with their bytes waiting in
        // `waiting`), then the packs none of their versions is in any more,
        // then the keyframes only they used.
        tx.execute(
            &format!(
                "DELETE FROM waiting WHERE slot IN
                    (SELECT pack_ref - {waiting} FROM bodies
                     WHERE pack_ref >= {waiting} AND pack_ref < {packed}
                       AND id NOT IN (SELECT body_id FROM records WHERE body_id IS NOT NULL))",
                waiting = super::schema::WAITING,
                packed = super::schema::PACKED,
            ),
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
        super::retain::keep_pack_ids(&tx).map_err(err)?;
        tx.execute(
            &format!(
                "DELETE FROM packs WHERE id NOT IN
                    (SELECT (pack_ref - {packed}) >> {bits} FROM bodies WHERE pack_ref > {packed})",
                packed = super::schema::PACKED,
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
        // Audit events go with the objects they explain; those of objects
        // whose history is kept stay (a few bytes each).
        tx.execute(
            "DELETE FROM audit_packs WHERE object_id NOT IN
                (SELECT object_id FROM records WHERE object_id IS NOT NULL)
                AND object_id NOT IN (SELECT object_id FROM blocks)",
            [],
        )
        .map_err(err)?;
        report.objects_deleted = tx
            .execute(
                "DELETE FROM objects WHERE id NOT IN
                    (SELECT object_id FROM records WHERE object_id IS NOT NULL)
                    AND id NOT IN (SELECT object_id FROM blocks)",
                [],
            )
            .map_err(err)? as u64;
        let broken: Option<(String, Option<i64>, String)> = tx
            .query_row("PRAGMA foreign_key_check", [], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .optional()
            .map_err(err)?;
        if let Some((table, row, parent)) = broken {
            // Dropping `tx` rolls everything back.
            let row = row.map_or("a row".to_string(), |r| format!("row {r}"));
            return Err(JournalError::Corrupt {
                path: self.path().to_path_buf(),
                detail: format!(
                    "prune would leave {row} of {table} pointing at a missing {parent} row; nothing was changed"
                ),
            });
        }
        tx.commit().map_err(err)?;
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prune_that_would_break_a_reference_changes_nothing_and_enforcement_comes_back() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::open_or_create(&dir.path().join("journal.db")).unwrap();
        journal.register_cluster("c1", "https://x", None).unwrap();
        // A record pointing at a body that is not there (a damaged journal).
        let conn = journal.conn();
        conn.pragma_update(None, "foreign_keys", false).unwrap();
        conn.execute(
            "INSERT INTO records(seq, stream_id, kind, observed_at, body_id) VALUES (1, 77, 1, 5, 999)",
            [],
        )
        .unwrap();
        conn.pragma_update(None, "foreign_keys", true).unwrap();
        let record_count = |j: &Journal| -> i64 {
            j.conn()
                .query_row("SELECT count(*) FROM records", [], |r| r.get(0))
                .unwrap()
        };
        let e = journal.prune(&[], 0).unwrap_err();
        assert!(matches!(e, JournalError::Corrupt { .. }), "{e}");
        assert!(e.to_string().contains("nothing was changed"), "{e}");
        assert_eq!(record_count(&journal), 1);
        let enforced: i64 = journal
            .conn()
            .query_row("PRAGMA foreign_keys", [], |r| r.get(0))
            .unwrap();
        assert_eq!(enforced, 1);
    }
}
