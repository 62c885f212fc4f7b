//! Read-side questions about the journal as a whole: clusters, streams, coverage
//! and status. Each answer touches only the few non-event records of a stream
//! (through the `records_stream_meta` index), never the event history.

use super::records::{CheckpointInfo, CoverageInfo, GapInfo, HEARTBEAT_MS};
use super::schema::kind;
use super::{Journal, JournalError, StreamId};
use crate::model::{ResourceType, WatchType, stream_name};
use rusqlite::{OptionalExtension, params};
use std::collections::HashMap;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterInfo {
    pub id: String,
    pub server: String,
    pub context: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamInfo {
    pub id: StreamId,
    pub cluster: String,
    pub resource: ResourceType,
    /// `None`: all namespaces, or a cluster-scoped resource.
    pub namespace: Option<String>,
    pub selector: Option<String>,
    /// `None` for a stream recorded here; where an imported one came from
    /// (`streams.origin`).
    pub origin: Option<String>,
}

impl StreamInfo {
    pub fn name(&self) -> String {
        stream_name(
            &self.resource,
            self.namespace.as_deref(),
            self.selector.as_deref(),
        )
    }
}

/// What a stream is doing, as far as the journal can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamState {
    /// A recorder holds the journal and this stream checkpointed recently.
    Watching,
    /// History is missing right now (after a 410 or a crash) and no new baseline
    /// has been written yet.
    Relisting,
    /// The server refused the resource (403) or does not serve it (404).
    Unavailable,
    /// No recorder is watching it.
    Stopped,
}

impl StreamState {
    pub fn as_str(self) -> &'static str {
        match self {
            StreamState::Watching => "watching",
            StreamState::Relisting => "relisting",
            StreamState::Unavailable => "unavailable",
            StreamState::Stopped => "stopped",
        }
    }
}

/// A stretch of time a stream did not cover although it was being recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GapWindow {
    pub from: i64,
    pub from_rv: Option<String>,
    /// When a new baseline restored the stream; `None` while it has not.
    pub to: Option<i64>,
    pub to_rv: Option<String>,
    pub reason: String,
    /// The `seq` of the record that opened it: records of the stream before
    /// it came before the gap, those after it (the list that ends it) after,
    /// however close their times.
    pub seq: i64,
}

/// Coverage of one stream over its whole recorded life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Coverage {
    pub stream: StreamInfo,
    pub state: StreamState,
    pub last_rv: Option<String>,
    pub events: u64,
    /// Gap records written (410s, recorder restarts).
    pub gaps: u64,
    /// The first baseline: coverage starts here.
    pub from: Option<i64>,
    /// The last durable point: coverage ends here.
    pub to: Option<i64>,
    /// Gaps and unavailable stretches, oldest first.
    pub windows: Vec<GapWindow>,
    /// Why the stream is unavailable right now, and since when.
    pub unavailable: Option<(i64, String)>,
}

impl Coverage {
    /// True when the stream was covered without a hole from its first baseline
    /// to its last durable point.
    pub fn complete(&self) -> bool {
        self.from.is_some() && self.windows.is_empty() && self.state != StreamState::Unavailable
    }
}

/// Totals for `status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub size_bytes: u64,
    pub clusters: Vec<ClusterInfo>,
    pub streams: u64,
    pub events: u64,
    pub gaps: u64,
    pub first_observed: Option<i64>,
    pub last_observed: Option<i64>,
}

/// What a recorder pruning behind itself keeps (`record --retain`,
/// `--max-size`), as it writes it to `meta` for `status`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RetentionMeta {
    /// History older than this goes (ms).
    pub retain_ms: Option<u64>,
    /// The file is kept under this many bytes.
    pub max_size: Option<u64>,
    /// The recorder that asked, and since when (ms).
    pub pid: u32,
    pub since: i64,
}

/// Each block's count of records and times, read from `blocks_time` alone
/// (schema version 13), for [`Journal::zone_times`].
pub(crate) const BLOCK_TIMES_SQL: &str = "SELECT records, min_at, max_at FROM blocks";

impl Journal {
    /// What the recorder that prunes behind itself keeps, if one said so.
    pub fn retention(&self) -> Result<Option<RetentionMeta>, JournalError> {
        Ok(self
            .meta("retention")?
            .and_then(|v| serde_json::from_str(&v).ok()))
    }
}

/// Each stream's figures for [`Journal::status`], in one row each: its gaps,
/// its last checkpoint's info, the time of its first list, and the times of
/// its last checkpoint, list and gap.
fn stream_figures_sql() -> String {
    let meta = kind::META;
    let seek = |what: &str, kind: i64, order: &str| {
        format!(
            "(SELECT {what} FROM records WHERE stream_id = s.id AND kind = {kind} AND {meta}
              ORDER BY seq {order} LIMIT 1)"
        )
    };
    format!(
        "SELECT (SELECT count(*) FROM records WHERE stream_id = s.id AND kind = {gap} AND {meta}),
                {checkpoint_info}, {first_list}, {last_checkpoint}, {last_list}, {last_gap}
         FROM streams s",
        gap = kind::GAP,
        checkpoint_info = seek("info", kind::CHECKPOINT, "DESC"),
        first_list = seek("observed_at", kind::BASELINE, "ASC"),
        last_checkpoint = seek("observed_at", kind::CHECKPOINT, "DESC"),
        last_list = seek("observed_at", kind::BASELINE, "DESC"),
        last_gap = seek("observed_at", kind::GAP, "DESC"),
    )
}

/// One record, decoded, for tests and export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordView {
    pub seq: i64,
    pub stream: StreamId,
    pub kind: i64,
    pub observed_at: i64,
    pub watch_type: Option<WatchType>,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub resource_version: Option<String>,
    pub body: Option<Vec<u8>>,
    pub info: Option<String>,
    pub aux: Option<i64>,
}

impl Journal {
    pub fn clusters(&self) -> Result<Vec<ClusterInfo>, JournalError> {
        let mut stmt = self
            .conn()
            .prepare("SELECT id, server, context FROM clusters ORDER BY id")
            .map_err(|e| self.err(e))?;
        stmt.query_map([], |r| {
            Ok(ClusterInfo {
                id: r.get(0)?,
                server: r.get(1)?,
                context: r.get(2)?,
            })
        })
        .and_then(|rows| rows.collect())
        .map_err(|e| self.err(e))
    }

    /// Whether `namespace` of `cluster` was ever seen: an object recorded in
    /// it, or a Namespace of that name recorded (the `namespaces` stream).
    pub fn namespace_seen(&self, cluster: &str, namespace: &str) -> Result<bool, JournalError> {
        self.conn()
            .prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM objects o JOIN streams s ON s.id = o.stream_id
                 WHERE s.cluster_id = ?1 AND (o.namespace = ?2
                   OR (s.grp = '' AND s.resource = 'namespaces' AND o.name = ?2)))",
            )
            .and_then(|mut stmt| stmt.query_row(params![cluster, namespace], |r| r.get(0)))
            .map_err(|e| self.err(e))
    }

    /// Every namespace of `cluster` seen in the journal (as
    /// [`Journal::namespace_seen`] sees them), sorted.
    pub fn namespaces_seen(&self, cluster: &str) -> Result<Vec<String>, JournalError> {
        let mut stmt = self
            .conn()
            .prepare(
                "SELECT DISTINCT o.namespace FROM objects o JOIN streams s ON s.id = o.stream_id
                 WHERE s.cluster_id = ?1 AND o.namespace <> ''
                 UNION SELECT o.name FROM objects o JOIN streams s ON s.id = o.stream_id
                 WHERE s.cluster_id = ?1 AND s.grp = '' AND s.resource = 'namespaces'
                 ORDER BY 1",
            )
            .map_err(|e| self.err(e))?;
        stmt.query_map(params![cluster], |r| r.get(0))
            .and_then(|rows| rows.collect())
            .map_err(|e| self.err(e))
    }

    /// Streams of one cluster (or of all), ordered by their names.
    pub fn streams(&self, cluster: Option<&str>) -> Result<Vec<StreamInfo>, JournalError> {
        let mut stmt = self
            .conn()
            .prepare(
                "SELECT id, cluster_id, grp, version, resource, kind, singular, short_names,
                        namespaced, namespace, selector, origin
                 FROM streams WHERE ?1 IS NULL OR cluster_id = ?1",
            )
            .map_err(|e| self.err(e))?;
        let mut streams: Vec<StreamInfo> = stmt
            .query_map(params![cluster], |r| {
                let namespace: String = r.get(9)?;
                let selector: String = r.get(10)?;
                let origin: String = r.get(11)?;
                Ok(StreamInfo {
                    id: r.get(0)?,
                    cluster: r.get(1)?,
                    resource: super::resource_from_row(r, 2)?,
                    namespace: Some(namespace).filter(|s| !s.is_empty()),
                    selector: Some(selector).filter(|s| !s.is_empty()),
                    origin: Some(origin).filter(|s| !s.is_empty()),
                })
            })
            .and_then(|rows| rows.collect())
            .map_err(|e| self.err(e))?;
        streams.sort_by(|a, b| {
            (&a.cluster, a.name(), &a.origin).cmp(&(&b.cluster, b.name(), &b.origin))
        });
        Ok(streams)
    }

    /// The coverage of one stream. `recorder_running` says whether a recorder
    /// holds this journal's writer lock; `now` is the reader's clock.
    pub fn coverage(
        &self,
        stream: &StreamInfo,
        now: i64,
        recorder_running: bool,
    ) -> Result<Coverage, JournalError> {
        let conn = self.conn();
        let err = |e| self.err(e);
        let mut stmt = conn
            .prepare_cached(&format!(
                "SELECT kind, observed_at, resource_version, info, seq FROM records
                 WHERE stream_id = ?1 AND kind IN ({}, {}, {}) AND {meta} ORDER BY seq",
                kind::BASELINE,
                kind::GAP,
                kind::COVERAGE,
                meta = kind::META
            ))
            .map_err(err)?;
        let rows: Vec<FoldRow> = stmt
            .query_map(params![stream.id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })
            .and_then(|rows| rows.collect())
            .map_err(err)?;

        let CoverageFold {
            from,
            gaps,
            mut windows,
            open,
            unavailable,
            last_baseline,
        } = CoverageFold::of(rows);

        let last_checkpoint: Option<(i64, Option<String>, String)> = conn
            .prepare_cached(&format!(
                "SELECT observed_at, resource_version, info FROM records
                 WHERE stream_id = ?1 AND kind = {} AND {meta} ORDER BY seq DESC LIMIT 1",
                kind::CHECKPOINT,
                meta = kind::META
            ))
            .and_then(|mut s| {
                s.query_row(params![stream.id], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })
                .optional()
            })
            .map_err(err)?;
        let events = last_checkpoint
            .as_ref()
            .and_then(|(_, _, info)| serde_json::from_str::<CheckpointInfo>(info).ok())
            .map(|c| c.events)
            .unwrap_or(0);
        // The last durable point is the later of the last checkpoint and the last
        // baseline (a baseline is a durable point too).
        let checkpoint = last_checkpoint.map(|(at, rv, _)| (at, rv));
        let (to, last_rv) = match (checkpoint, last_baseline) {
            (Some(c), Some(b)) => Some(if b.0 > c.0 { b } else { c }),
            (c, b) => c.or(b),
        }
        .map_or((None, None), |(at, rv)| (Some(at), rv));
        let to = if from.is_some() { to } else { None };

        let has_open = open.is_some();
        if let Some(w) = open {
            windows.push(w);
        }
        let state = if unavailable.is_some() {
            StreamState::Unavailable
        } else if has_open {
            StreamState::Relisting
        } else if recorder_running
            && stream.origin.is_none()
            && to.is_some_and(|t| now - t <= 3 * HEARTBEAT_MS)
        {
            StreamState::Watching
        } else {
            StreamState::Stopped
        };
        Ok(Coverage {
            stream: stream.clone(),
            state,
            last_rv: last_rv.filter(|s| !s.is_empty()),
            events,
            gaps,
            from,
            to,
            windows,
            unavailable,
        })
    }

    /// Each zone as `(records left in it, min_at, max_at)`: how the records
    /// spread over time, for retention by size. A zone's own count is what
    /// was written; what is left is counted (zones may name pruned `seq`s).
    /// Each block of records (docs/journal.md, "Cold history in blocks")
    /// counts as a zone of its own.
    pub fn zone_times(&self) -> Result<Vec<(i64, i64, i64)>, JournalError> {
        let mut times = self.row_zone_times()?;
        let blocks: Vec<(i64, i64, i64)> = self
            .conn()
            .prepare_cached(BLOCK_TIMES_SQL)
            .and_then(|mut s| {
                s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                    .collect()
            })
            .map_err(|e| self.err(e))?;
        times.extend(blocks);
        Ok(times)
    }

    fn row_zone_times(&self) -> Result<Vec<(i64, i64, i64)>, JournalError> {
        let conn = self.conn();
        let err = |e| self.err(e);
        // The zones alone: blocks are counted by `zone_times`.
        let zones: Vec<(i64, i64, i64, i64)> = conn
            .prepare_cached("SELECT first_seq, last_seq, min_at, max_at FROM zones")
            .and_then(|mut s| {
                s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
                    .collect()
            })
            .map_err(err)?;
        let mut count = conn
            .prepare_cached("SELECT count(*) FROM records WHERE seq BETWEEN ?1 AND ?2")
            .map_err(err)?;
        zones
            .into_iter()
            .map(|(first, last, min_at, max_at)| {
                let left: i64 = count
                    .query_row(rusqlite::params![first, last], |r| r.get(0))
                    .map_err(err)?;
                Ok((left, min_at, max_at))
            })
            .collect()
    }

    pub fn status(&self) -> Result<Status, JournalError> {
        let conn = self.conn();
        let err = |e| self.err(e);
        let mut size_bytes = 0;
        for suffix in ["", "-wal"] {
            let mut p = self.path().as_os_str().to_owned();
            p.push(suffix);
            size_bytes += std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
        }
        // Each figure is read stream by stream, by seeks into the index of
        // the non-object records: a query over all streams would scan every
        // list item and checkpoint the journal keeps (20,000 after one list of
        // W-wide, a third of `status`'s time); one statement for them all.
        type Figures = (i64, Option<String>, Option<i64>, [Option<i64>; 3]);
        let streams: Vec<Figures> = conn
            .prepare(&stream_figures_sql())
            .and_then(|mut s| {
                s.query_map([], |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        [r.get(3)?, r.get(4)?, r.get(5)?],
                    ))
                })?
                .collect()
            })
            .map_err(err)?;
        // Records of one stream are in its time order, but an imported lane's
        // come after this journal's own whatever their times: the first and
        // last observations are those of the object records (the zones keep
        // their times) and of each stream's first list and last durable point
        // or gap.
        let (zones_first, zones_last): (Option<i64>, Option<i64>) = conn
            .query_row("SELECT min(min_at), max(max_at) FROM zones", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .map_err(err)?;
        let (mut gaps, mut events) = (0u64, 0u64);
        let (mut first_observed, mut last_observed) = (zones_first, zones_last);
        for (stream_gaps, checkpoint, first, lasts) in &streams {
            gaps += *stream_gaps as u64;
            events += checkpoint
                .as_deref()
                .and_then(|info| serde_json::from_str::<CheckpointInfo>(info).ok())
                .map_or(0, |c| c.events);
            last_observed = lasts.iter().fold(last_observed, |a, &b| a.max(b));
            first_observed = match (first_observed, *first) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        Ok(Status {
            size_bytes,
            clusters: self.clusters()?,
            streams: streams.len() as u64,
            events,
            gaps,
            first_observed,
            last_observed,
        })
    }

    /// Records with `seq > after`, oldest first, at most `limit`, with the
    /// bodies of those `wants_body` keeps decoded by `bodies` (given from page
    /// to page, it keeps the keyframes it decoded).
    pub fn records_after(
        &self,
        after: i64,
        limit: usize,
        bodies: &mut super::versions::BodyReader,
        wants_body: &dyn Fn(&RecordView) -> bool,
    ) -> Result<Vec<RecordView>, JournalError> {
        // Bounded: each round that finds nothing goes a stretch of the
        // blocks' records further, up to the rows' end.
        let mut after = after;
        let rows = loop {
            let mut stmt = self
                .conn()
                .prepare_cached(
                    "SELECT r.seq, r.stream_id, r.kind, r.observed_at, r.watch_type, o.namespace, o.name,
                            r.resource_version, r.body_id, r.info, r.aux
                     FROM records r LEFT JOIN objects o ON o.id = r.object_id
                     WHERE r.seq > ?1 ORDER BY r.seq LIMIT ?2",
                )
                .map_err(|e| self.err(e))?;
            type Row = (RecordView, Option<i64>);
            let rows: Vec<Row> = stmt
                .query_map(params![after, limit as i64], |r| {
                    Ok((
                        RecordView {
                            seq: r.get(0)?,
                            stream: r.get(1)?,
                            kind: r.get(2)?,
                            observed_at: r.get(3)?,
                            watch_type: r.get::<_, Option<i64>>(4)?.and_then(WatchType::from_code),
                            namespace: r.get(5)?,
                            name: r.get(6)?,
                            resource_version: r.get(7)?,
                            body: None,
                            info: r.get(9)?,
                            aux: r.get(10)?,
                        },
                        r.get(8)?,
                    ))
                })
                .and_then(|rows| rows.collect())
                .map_err(|e| self.err(e))?;
            // Records kept in blocks, up to where the rows' page ends (all of
            // those after when it is the last), among them in `seq` order; the
            // page is cut at `limit` again.
            let end = match rows.last() {
                Some((last, _)) if rows.len() == limit => last.seq,
                _ => i64::MAX,
            };
            let mut names: HashMap<i64, (String, String)> = HashMap::new();
            let mut cold = Vec::new();
            // A stretch of the blocks' records at a time: the page ends where
            // it ends (rows after it come again in the next).
            let (cold_end, cold_rows) = self.cold_rows_after((after, end), limit)?;
            for r in cold_rows {
                let c = &r.record;
                let (namespace, name) = match names.get(&r.object) {
                    Some(n) => n.clone(),
                    None => {
                        let o = self
                            .object(r.object)?
                            .ok_or_else(|| JournalError::Corrupt {
                                path: self.path().to_path_buf(),
                                detail: format!("block {} names no object {}", r.block, r.object),
                            })?;
                        names.insert(r.object, (o.namespace.clone(), o.name.clone()));
                        (o.namespace, o.name)
                    }
                };
                cold.push((
                    RecordView {
                        seq: c.seq,
                        stream: r.stream,
                        kind: c.kind,
                        observed_at: c.observed_at,
                        watch_type: c.watch_type.and_then(WatchType::from_code),
                        namespace: Some(namespace),
                        name: Some(name),
                        resource_version: c.resource_version.as_ref().map(super::wire::Rv::text),
                        body: None,
                        info: None,
                        aux: c.aux,
                    },
                    r.body,
                ));
            }
            let mut rows = super::versions::merged_by_seq(rows, cold, |(v, _)| v.seq);
            // Rows after the blocks' stretch come again in the next page.
            rows.retain(|(v, _)| v.seq <= cold_end);
            rows.truncate(limit);
            if rows.is_empty() && cold_end < end {
                after = cold_end;
                continue;
            }
            break rows;
        };
        let mut out = Vec::with_capacity(rows.len());
        for (mut view, body_id) in rows {
            if let Some(id) = body_id.filter(|_| wants_body(&view)) {
                view.body = Some(bodies.read(self, id)?);
            }
            out.push(view);
        }
        Ok(out)
    }

    /// Every record, oldest first (tests and small journals only).
    pub fn all_records(&self) -> Result<Vec<RecordView>, JournalError> {
        let mut out = Vec::new();
        let mut after = i64::MIN;
        let mut bodies = super::versions::BodyReader::new();
        loop {
            let page = self.records_after(after, 10_000, &mut bodies, &|_| true)?;
            let Some(last) = page.last() else {
                return Ok(out);
            };
            after = last.seq;
            out.extend(page);
        }
    }
}

/// What a stream's baselines, gaps and coverage records say, oldest first: where its
/// history starts, its closed gap windows and the one still open (a gap no baseline
/// has closed yet), and whether it is unavailable now.
/// A record as [`CoverageFold`] reads it: kind, observed_at,
/// resource_version, info, seq.
type FoldRow = (i64, i64, Option<String>, Option<String>, i64);

struct CoverageFold {
    from: Option<i64>,
    gaps: u64,
    windows: Vec<GapWindow>,
    open: Option<GapWindow>,
    unavailable: Option<(i64, String)>,
    last_baseline: Option<(i64, Option<String>)>,
}

impl CoverageFold {
    /// Folds `(kind, observed_at, resource_version, info, seq)` rows in journal order.
    fn of(rows: Vec<FoldRow>) -> CoverageFold {
        let mut from = None;
        let mut gaps = 0u64;
        let mut windows: Vec<GapWindow> = Vec::new();
        let mut open: Option<GapWindow> = None;
        let mut unavailable: Option<(i64, String)> = None;
        let mut last_baseline: Option<(i64, Option<String>)> = None;
        for (k, at, rv, info, seq) in rows {
            let info = info.unwrap_or_default();
            match k {
                kind::BASELINE => {
                    from.get_or_insert(at);
                    if let Some(mut w) = open.take() {
                        w.to = Some(at);
                        w.to_rv = rv.clone();
                        windows.push(w);
                    }
                    unavailable = None;
                    last_baseline = Some((at, rv));
                }
                kind::GAP => {
                    gaps += 1;
                    let g: GapInfo = serde_json::from_str(&info).unwrap_or(GapInfo {
                        from: at,
                        from_rv: None,
                        reason: "gap".into(),
                    });
                    merge_open(&mut open, g.from, g.from_rv, g.reason, seq);
                }
                kind::COVERAGE => {
                    let c: CoverageInfo = serde_json::from_str(&info).unwrap_or(CoverageInfo {
                        available: false,
                        reason: "unavailable".into(),
                    });
                    if !c.available {
                        unavailable.get_or_insert((at, c.reason.clone()));
                        // A stream that never had a baseline has no history to lose:
                        // it is simply not covered yet.
                        if from.is_some() {
                            merge_open(
                                &mut open,
                                at,
                                None,
                                format!("unavailable: {}", c.reason),
                                seq,
                            );
                        }
                    }
                }
                _ => {}
            }
        }
        CoverageFold {
            from,
            gaps,
            windows,
            open,
            unavailable,
            last_baseline,
        }
    }
}

/// Opens a missing-history window, or widens the one already open.
fn merge_open(
    open: &mut Option<GapWindow>,
    from: i64,
    from_rv: Option<String>,
    reason: String,
    seq: i64,
) {
    match open {
        Some(w) => {
            if from < w.from {
                w.from = from;
                w.from_rv = from_rv;
            }
            if !w.reason.contains(&reason) {
                w.reason = format!("{}; {}", w.reason, reason);
            }
        }
        None => {
            *open = Some(GapWindow {
                from,
                from_rv,
                to: None,
                to_rv: None,
                reason,
                seq,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_seeks_each_streams_figures_in_the_index_of_non_object_records() {
        let plan = crate::journal::schema::plan_of(&stream_figures_sql());
        let records: Vec<&String> = plan.iter().filter(|l| l.contains("records")).collect();
        assert_eq!(records.len(), 6, "{plan:?}");
        for line in records {
            assert!(
                line.starts_with("SEARCH records USING")
                    && line.ends_with("INDEX records_stream_meta (stream_id=? AND kind=?)"),
                "{plan:?}"
            );
        }
    }

    #[test]
    fn retention_reads_the_blocks_times_from_their_index_not_their_rows() {
        let plan = crate::journal::schema::plan_of(BLOCK_TIMES_SQL);
        assert_eq!(plan, ["SCAN blocks USING COVERING INDEX blocks_time"]);
    }

    /// A record; its `seq` follows its time, as in these tests' journals.
    fn row(k: i64, at: i64, rv: &str, info: &str) -> FoldRow {
        (
            k,
            at,
            Some(rv.into()),
            (!info.is_empty()).then(|| info.into()),
            at,
        )
    }

    fn gap(from: i64, rv: &str, reason: &str) -> String {
        format!(r#"{{"from":{from},"from_rv":"{rv}","reason":"{reason}"}}"#)
    }

    #[test]
    fn a_baseline_closes_the_gaps_before_it_into_one_window() {
        let f = CoverageFold::of(vec![
            row(kind::BASELINE, 100, "10", ""),
            row(kind::GAP, 300, "", &gap(200, "12", "410 Expired")),
            // A second gap before the relist widens the same window.
            row(kind::GAP, 350, "", &gap(150, "11", "recorder not running")),
            row(kind::BASELINE, 400, "20", ""),
        ]);
        assert_eq!(f.from, Some(100));
        assert_eq!(f.gaps, 2);
        assert!(f.open.is_none());
        assert_eq!(
            f.windows,
            vec![GapWindow {
                from: 150,
                from_rv: Some("11".into()),
                to: Some(400),
                to_rv: Some("20".into()),
                reason: "410 Expired; recorder not running".into(),
                seq: 300,
            }]
        );
        assert_eq!(f.last_baseline, Some((400, Some("20".into()))));
    }

    #[test]
    fn unavailable_opens_a_gap_only_once_there_is_history() {
        let never = CoverageFold::of(vec![row(
            kind::COVERAGE,
            50,
            "",
            r#"{"available":false,"reason":"403 Forbidden"}"#,
        )]);
        assert!(never.open.is_none() && never.from.is_none());
        assert_eq!(never.unavailable, Some((50, "403 Forbidden".into())));

        let lost = CoverageFold::of(vec![
            row(kind::BASELINE, 100, "10", ""),
            row(
                kind::COVERAGE,
                200,
                "",
                r#"{"available":false,"reason":"403 Forbidden"}"#,
            ),
        ]);
        let open = lost.open.expect("an open gap");
        assert_eq!((open.from, open.to), (200, None));
        assert_eq!(open.reason, "unavailable: 403 Forbidden");
    }

    #[test]
    fn unreadable_records_still_count_as_gaps() {
        let f = CoverageFold::of(vec![
            row(kind::BASELINE, 100, "10", ""),
            row(kind::GAP, 300, "", "not json"),
        ]);
        assert_eq!(f.gaps, 1);
        let open = f.open.expect("an open gap");
        assert_eq!((open.from, open.reason.as_str()), (300, "gap"));
    }
}
