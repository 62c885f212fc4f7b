//! `export`: the journal's records as NDJSON, oldest first, one JSON object per
//! line, for other tools. The shape is docs/output.md's (fields that do not apply
//! are null); object bodies are embedded byte for byte as recorded.

use super::read::{RecordView, StreamInfo};
use super::schema::kind;
use super::versions::BaselineRef;
use super::{Journal, JournalError, StreamId};
use crate::diff::ObjectFacts;
use crate::time::Millis;
use serde::Serialize;
use serde_json::value::RawValue;
use std::collections::HashMap;
use std::io::Write;

/// Which records to export.
#[derive(Debug, Clone, Default)]
pub struct ExportOptions {
    /// Only records observed at or after this time.
    pub since: Option<i64>,
    /// Only records observed at or before this time.
    pub until: Option<i64>,
    /// Only this cluster's records.
    pub cluster: Option<String>,
}

/// One exported line; every field a record does not have stays null.
#[derive(Serialize, Default)]
pub(crate) struct Line<'a> {
    pub(crate) seq: Option<i64>,
    pub(crate) record: &'static str,
    pub(crate) cluster: &'a str,
    pub(crate) stream: Option<String>,
    pub(crate) observed_at: String,
    pub(crate) watch_type: Option<&'static str>,
    pub(crate) synthetic: bool,
    pub(crate) resource_version: Option<&'a str>,
    pub(crate) uid: Option<String>,
    pub(crate) kind: Option<&'a str>,
    #[serde(rename = "apiVersion")]
    pub(crate) api_version: Option<String>,
    pub(crate) namespace: Option<&'a str>,
    pub(crate) name: Option<&'a str>,
    /// The object as recorded, byte for byte; checked to be JSON.
    #[serde(serialize_with = "raw_json")]
    pub(crate) object: Option<&'a str>,
    /// Baseline items: the list they belong to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) list_resource_version: Option<&'a str>,
    /// Gaps: the missing window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) from: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) to: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) reason: Option<String>,
    /// Coverage changes, checkpoints, snapshots: their own fields.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) info: Option<Box<RawValue>>,
    /// The same times as milliseconds, for the Parquet segments
    /// (`segments.rs`); not in the NDJSON lines.
    #[serde(skip)]
    pub(crate) at: i64,
    /// Gaps: from, and to while the gap is closed.
    #[serde(skip)]
    pub(crate) gap: Option<(i64, Option<i64>)>,
    /// Baseline items: when their list completed.
    #[serde(skip)]
    pub(crate) list_at: Option<i64>,
    /// The object's bytes as recorded, unchecked: `object` and `uid` are
    /// read from them where the line is written ([`ObjectFacts`]).
    #[serde(skip)]
    pub(crate) body: Option<Vec<u8>>,
    /// MODIFIED events: their mark (docs/journal.md, "Status-only
    /// changes"), for the Parquet segments; `None` where there is none.
    #[serde(skip)]
    pub(crate) status_only: Option<bool>,
}

/// An object's text, written as it is. serde_json writes raw text only as a
/// `RawValue` it checked itself, so a text [`ObjectFacts::read`] checked is
/// checked once more here (one pass, as `RawValue::from_string` was before).
fn raw_json<S: serde::Serializer>(text: &Option<&str>, out: S) -> Result<S::Ok, S::Error> {
    match text {
        None => out.serialize_none(),
        Some(text) => serde_json::from_str::<&RawValue>(text)
            .map_err(serde::ser::Error::custom)?
            .serialize(out),
    }
}

struct StreamMeta {
    info: StreamInfo,
    name: String,
    api_version: String,
    baselines: Vec<BaselineRef>,
    /// Each completed list's index in `baselines`, by its token.
    lists: HashMap<i64, usize>,
}

impl StreamMeta {
    /// The completed list a baseline item of list `token` belongs to.
    fn list(&self, token: Option<i64>) -> Option<&BaselineRef> {
        token
            .and_then(|t| self.lists.get(&t))
            .map(|&i| &self.baselines[i])
    }
}

fn time(t: i64) -> String {
    Millis::from_ms(t).to_string()
}

/// Writes the records as NDJSON; returns how many lines were written.
pub fn export(
    journal: &Journal,
    opts: &ExportOptions,
    out: &mut dyn Write,
) -> Result<u64, JournalError> {
    let io = |source| JournalError::Io {
        path: "stdout".into(),
        source,
    };
    let mut lines = 0u64;
    visit(journal, opts, &mut |mut line| {
        let body = line.body.take();
        let facts = body.as_deref().and_then(ObjectFacts::read);
        let line = Line {
            object: facts.as_ref().map(|f| f.text),
            uid: facts.and_then(|f| f.uid),
            ..line
        };
        serde_json::to_writer(&mut *out, &line).map_err(|e| {
            let kind = e.io_error_kind().unwrap_or(std::io::ErrorKind::Other);
            io(std::io::Error::new(kind, e))
        })?;
        out.write_all(b"\n").map_err(io)?;
        lines += 1;
        Ok(())
    })?;
    out.flush().map_err(io)?;
    Ok(lines)
}

/// Every exported line, oldest first, to `write`.
pub(crate) fn visit(
    journal: &Journal,
    opts: &ExportOptions,
    write: &mut dyn FnMut(Line<'_>) -> Result<(), JournalError>,
) -> Result<(), JournalError> {
    let mut streams: HashMap<StreamId, StreamMeta> = HashMap::new();
    // The history recorded here: an imported lane is its source journal's
    // to export (two lanes of one stream would read as one).
    for info in journal
        .streams(opts.cluster.as_deref())?
        .into_iter()
        .filter(|s| s.origin.is_none())
    {
        let baselines = journal.baselines(info.id)?;
        streams.insert(
            info.id,
            StreamMeta {
                name: info.name(),
                api_version: info.resource.api_version(),
                lists: baselines
                    .iter()
                    .enumerate()
                    .map(|(i, b)| (b.token, i))
                    .collect(),
                baselines,
                info,
            },
        );
    }
    let in_window = |t: i64| opts.since.is_none_or(|s| t >= s) && opts.until.is_none_or(|u| t <= u);
    // Saved snapshots and replay plans are not records: they go where they
    // fall in time.
    let snapshots = journal.snapshots(opts.cluster.as_deref())?;
    let plans: Vec<_> = journal
        .plans()?
        .into_iter()
        .filter(|p| opts.cluster.as_ref().is_none_or(|c| c == &p.cluster))
        .collect();
    let mut saved: Vec<(i64, Line<'_>)> = snapshots
        .iter()
        .map(|s| (s.created_at, snapshot_line(s)))
        .chain(plans.iter().map(|p| (p.created_at, plan_line(p))))
        .filter(|(t, _)| in_window(*t))
        .collect();
    saved.sort_by_key(|(t, _)| *t);
    let mut saved = saved.into_iter().peekable();
    // A list's items go with the list: a window or slice holds all of them
    // or none, so an importer never sees part of a baseline.
    let at = |stream: &StreamMeta, r: &RecordView| match r.kind {
        kind::BASELINE_ITEM => stream.list(r.aux).map_or(r.observed_at, |b| b.observed_at),
        _ => r.observed_at,
    };
    // Only the records written are decoded.
    let wanted = |r: &RecordView| streams.get(&r.stream).is_some_and(|s| in_window(at(s, r)));
    let mut bodies = super::versions::BodyReader::in_seq_order();
    let mut after = i64::MIN;
    loop {
        let page = journal.records_after(after, 2_000, &mut bodies, &wanted)?;
        let Some(last) = page.last() else { break };
        after = last.seq;
        for mut r in page {
            while let Some((_, line)) = saved.next_if(|(t, _)| *t <= r.observed_at) {
                write(line)?;
            }
            let Some(stream) = streams.get(&r.stream) else {
                continue;
            };
            if !in_window(at(stream, &r)) {
                continue;
            }
            let body = r.body.take();
            if let Some(line) = record_line(stream, &r) {
                write(Line { body, ..line })?;
            }
        }
    }
    for (_, line) in saved {
        write(line)?;
    }
    Ok(())
}

/// The line of one record of `stream`, or none: items of a list that never completed
/// are not a baseline, and a list with items is its items' lines.
fn record_line<'a>(stream: &'a StreamMeta, r: &'a RecordView) -> Option<Line<'a>> {
    let common = || Line {
        seq: Some(r.seq),
        cluster: &stream.info.cluster,
        stream: Some(stream.name.clone()),
        observed_at: time(r.observed_at),
        at: r.observed_at,
        resource_version: r.resource_version.as_deref(),
        ..Line::default()
    };
    let typed = || Line {
        kind: Some(&stream.info.resource.kind),
        api_version: Some(stream.api_version.clone()),
        ..common()
    };
    let info = || r.info.clone().and_then(|i| RawValue::from_string(i).ok());
    match r.kind {
        kind::EVENT | kind::BASELINE_ITEM => {
            let object = |line: Line<'a>| Line {
                namespace: r.namespace.as_deref().filter(|n| !n.is_empty()),
                name: r.name.as_deref(),
                ..line
            };
            if r.kind == kind::EVENT {
                let modified = r.watch_type == Some(crate::model::WatchType::Modified);
                return Some(object(Line {
                    record: "event",
                    watch_type: r.watch_type.map(|w| w.as_str()),
                    status_only: match r.aux {
                        Some(super::schema::mark::STATUS_ONLY) if modified => Some(true),
                        Some(super::schema::mark::CHANGED) if modified => Some(false),
                        _ => None,
                    },
                    ..typed()
                }));
            }
            let b = stream.list(r.aux)?;
            Some(object(Line {
                record: "baseline",
                synthetic: true,
                list_resource_version: Some(&b.resource_version),
                list_at: Some(b.observed_at),
                ..typed()
            }))
        }
        kind::BASELINE => {
            let empty = stream
                .baselines
                .iter()
                .find(|b| b.seq == r.seq)
                .is_some_and(|b| b.items == 0);
            empty.then(|| Line {
                record: "baseline",
                synthetic: true,
                list_resource_version: r.resource_version.as_deref(),
                list_at: Some(r.observed_at),
                ..typed()
            })
        }
        kind::GAP => {
            let gap: super::records::GapInfo = r
                .info
                .as_deref()
                .and_then(|i| serde_json::from_str(i).ok())
                .unwrap_or(super::records::GapInfo {
                    from: r.observed_at,
                    from_rv: None,
                    reason: "gap".into(),
                });
            // A gap ends with the next baseline of its stream, or is still open.
            let to = stream
                .baselines
                .iter()
                .find(|b| b.seq > r.seq)
                .map(|b| b.observed_at);
            Some(Line {
                record: "gap",
                resource_version: None,
                from: Some(time(gap.from)),
                to: Some(to.map(time)),
                gap: Some((gap.from, to)),
                reason: Some(gap.reason),
                info: info(),
                ..common()
            })
        }
        kind::COVERAGE => Some(Line {
            record: "coverage",
            info: info(),
            ..common()
        }),
        kind::CHECKPOINT => Some(Line {
            record: "checkpoint",
            info: info(),
            ..common()
        }),
        _ => None,
    }
}

impl Journal {
    /// The `seq` of the last record of `stream` before `seq` that [`visit`]
    /// writes as a line, or none: where a segment's rows continue from
    /// (docs/at-scale.md, "Importing segments"). Headers of lists with items
    /// and items of lists that never completed are not lines.
    pub fn line_before(&self, stream: StreamId, seq: i64) -> Result<Option<i64>, JournalError> {
        let completed: std::collections::HashSet<i64> =
            self.baselines(stream)?.iter().map(|b| b.token).collect();
        let mut stmt = self
            .conn()
            .prepare_cached(
                "SELECT seq, kind, aux, info FROM records
                 WHERE stream_id = ?1 AND seq < ?2 ORDER BY seq DESC",
            )
            .map_err(|e| self.err(e))?;
        let before = seq;
        let mut rows = stmt
            .query(rusqlite::params![stream, seq])
            .map_err(|e| self.err(e))?;
        while let Some(row) = rows.next().map_err(|e| self.err(e))? {
            let get =
                |i| -> Result<Option<i64>, JournalError> { row.get(i).map_err(|e| self.err(e)) };
            let (seq, k, aux) = (
                get(0)?.unwrap_or_default(),
                get(1)?.unwrap_or_default(),
                get(2)?,
            );
            let line = match k {
                kind::BASELINE_ITEM => aux.is_some_and(|t| completed.contains(&t)),
                kind::BASELINE => {
                    let info: Option<String> = row.get(3).map_err(|e| self.err(e))?;
                    info.and_then(|i| serde_json::from_str::<super::records::BaselineInfo>(&i).ok())
                        .is_some_and(|b| b.items == 0)
                }
                kind::EVENT | kind::GAP | kind::COVERAGE | kind::CHECKPOINT => true,
                _ => false,
            };
            if line {
                return Ok(Some(
                    seq.max(self.cold_line_before(stream, seq, before, &completed)?),
                ));
            }
        }
        let cold = self.cold_line_before(stream, i64::MIN, before, &completed)?;
        Ok((cold > i64::MIN).then_some(cold))
    }

    /// The `seq` of the last object record of `stream` kept in a block in
    /// `(floor, before)` that is a line (an event, an item of a completed
    /// list), or `floor`.
    fn cold_line_before(
        &self,
        stream: StreamId,
        floor: i64,
        before: i64,
        completed: &std::collections::HashSet<i64>,
    ) -> Result<i64, JournalError> {
        Ok(self
            .cold_rows(floor.saturating_add(1), before - 1)?
            .iter()
            .filter(|r| r.stream == stream && r.record.seq > floor && r.record.seq < before)
            .filter(|r| match r.record.kind {
                kind::BASELINE_ITEM => r.record.aux.is_some_and(|t| completed.contains(&t)),
                _ => true,
            })
            .map(|r| r.record.seq)
            .max()
            .unwrap_or(floor))
    }
}

/// A replay plan: `name` is its ID, `reason` its status, `info` the whole plan.
fn plan_line(p: &super::plans::SavedPlan) -> Line<'_> {
    Line {
        record: "plan",
        cluster: &p.cluster,
        observed_at: time(p.created_at),
        at: p.created_at,
        name: Some(&p.id),
        reason: Some(p.status.clone()),
        info: RawValue::from_string(p.info.clone()).ok(),
        ..Line::default()
    }
}

fn snapshot_line(s: &super::snapshots::SavedSnapshot) -> Line<'_> {
    Line {
        record: "snapshot",
        cluster: &s.cluster,
        observed_at: time(s.created_at),
        at: s.created_at,
        name: Some(&s.name),
        info: RawValue::from_string(s.info.clone()).ok(),
        ..Line::default()
    }
}
