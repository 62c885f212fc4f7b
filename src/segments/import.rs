//! `import DIR|FILE...`: Parquet segments written by `export --format parquet`
//! ([`super::export`]) become read-only history of their clusters in this
//! journal (docs/at-scale.md, "Importing segments").
//!
//! - Each file says, in its key-value metadata ([`SegmentMeta`]), which
//!   journal, cluster and stream its rows are, and where they sit in that
//!   journal's `seq`s.
//! - An imported stream is a *lane* of its own (`streams.origin`), so its
//!   records never interleave with what was recorded here or imported from
//!   elsewhere; answers pick a lane by coverage ([`crate::history::lanes`]).
//! - A file is written in chunks of rows, each a transaction that also notes
//!   how far the lane holds its source (`import_runs`); the last one notes
//!   the file (`imports`, by the SHA-256 of its bytes). Importing it again
//!   adds nothing; after a crash, it continues after the last chunk.
//! - Rows continue a lane when they follow what it holds ([`lane_for`]); a lane
//!   that skips part of its source's history gets a gap there, so a missing
//!   day is never read as a quiet one.

use super::export::{KEYFRAME, META_KEY, READS, SegmentMeta};
use crate::journal::bodies::is_surely_new;
use crate::journal::imports::{self, ImportNote};
use crate::journal::records::{CheckpointInfo, CoverageInfo, GapInfo};
use crate::journal::schema::IMPORTED_PREFIX;
use crate::journal::writer::{DirectWriter, Op, TxWriter};
use crate::journal::{Journal, JournalError, StreamId};
use crate::model::{ObjectMeta, WatchType};
use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, TimestampMillisecondType};
use arrow_array::{Array, RecordBatch};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde::Serialize;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Why segments could not be imported.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a krply segment: {why}")]
    NotSegment { path: PathBuf, why: String },
    /// A later kubectl-krply wrote it, in a layout this one does not know.
    #[error("{path} is in format {found:?}, newer than this kubectl-krply reads ({reads:?})")]
    NewerFormat {
        path: PathBuf,
        found: String,
        reads: &'static str,
    },
    #[error("no segments (*.parquet) under {0}")]
    NoSegments(PathBuf),
    /// A file described itself as a segment, but a row could not be read:
    /// the files before it were imported, it and the rest were not.
    #[error("segment {path} has a row krply cannot read: {why}")]
    BadRow { path: PathBuf, why: String },
}

/// What became of one file.
#[derive(Debug, Clone, Serialize)]
pub struct Imported {
    pub path: String,
    pub cluster: String,
    pub stream: String,
    pub rows: u64,
    /// Rows written into the journal.
    pub added: u64,
    /// `imported`, `already imported` (the same file), `held` (every row was
    /// here already) or `own history` (exported by this very journal).
    pub result: &'static str,
    /// The lane the rows went to (`streams.origin`).
    pub lane: Option<String>,
    /// The lane's history skips some of its source's before these rows: a
    /// gap was written there.
    pub gap_before: bool,
}

pub use crate::journal::imports::Runs;

/// Where a file's rows go, given the runs of each lane of its stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// Every row is in a lane already.
    Held,
    /// Append the rows after `after` (all when `None`) to lane `lane`; `gap`:
    /// the lane holds none of the source's history between its end and them.
    Append {
        lane: usize,
        after: Option<i64>,
        gap: bool,
    },
    /// The rows fit no lane (history older than a lane's end that it does not
    /// hold): they start a new one.
    NewLane,
}

/// Decides [`Placement`] for rows `first..=last` whose source line before
/// them is `prev`.
pub fn lane_for(lanes: &[Runs], first: i64, last: i64, prev: Option<i64>) -> Placement {
    for (i, runs) in lanes.iter().enumerate() {
        // A lane made by an import cut short before its first rows: theirs.
        let Some(&(_, end)) = runs.last() else {
            return Placement::Append {
                lane: i,
                after: None,
                gap: false,
            };
        };
        if first > end {
            return Placement::Append {
                lane: i,
                after: None,
                gap: prev != Some(end),
            };
        }
        let holds = |a: i64, b: i64| runs.iter().any(|&(f, l)| f <= a && b <= l);
        if holds(first, last.min(end)) {
            return if last <= end {
                Placement::Held
            } else {
                Placement::Append {
                    lane: i,
                    after: Some(end),
                    gap: false,
                }
            };
        }
    }
    Placement::NewLane
}

/// One row of a segment, as `import` needs it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Row {
    pub seq: i64,
    pub record: String,
    pub at: i64,
    pub watch_type: Option<String>,
    pub resource_version: Option<String>,
    pub uid: Option<String>,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub object: Option<String>,
    pub list_resource_version: Option<String>,
    pub list_at: Option<i64>,
    pub info: Option<String>,
    /// The object's digest as the recorder takes it
    /// ([`crate::diff::compared_digest`]), taken where the row is read; none
    /// leaves the change unmarked, compared as any other.
    pub diff_digest: Option<u64>,
    /// The mark the row came with ([`given_mark`]), taken instead of one
    /// from digests; `None`: marked from `diff_digest`.
    pub given_mark: Option<Option<bool>>,
}

/// Turns a stream's rows back into the writer's [`Op`]s: baseline items are
/// followed by the end of their list once its last item went by.
#[derive(Debug)]
pub struct Rebuild {
    stream: StreamId,
    /// The list being rebuilt: its resourceVersion, when it completed, items.
    list: Option<(String, i64, u64)>,
}

impl Rebuild {
    pub fn new(stream: StreamId) -> Rebuild {
        Rebuild { stream, list: None }
    }

    /// The ops of one row, or why it is not a segment row.
    pub fn row(&mut self, row: Row) -> Result<Vec<Op>, String> {
        let stream = self.stream;
        let mut ops = Vec::new();
        // Keyframes are a list of the state at their time (docs/at-scale.md,
        // "Keyframes"): read only where a lane starts, or after a hole.
        let listed = row.record == "baseline" || row.record == KEYFRAME;
        let item = listed && row.name.is_some();
        let same_list = |l: &(String, i64, u64)| {
            item && row.list_resource_version.as_deref() == Some(l.0.as_str())
                && row.list_at == Some(l.1)
        };
        // A checkpoint or coverage record is the writer's bookkeeping, written
        // when a transaction commits: one can sit between the items of a list
        // (docs/at-scale.md, "Importing segments"), and leaves it open. One
        // observed after the list, or at its time with a resourceVersion not
        // older than the list's, came after the list's end: the list ends
        // before it, as it did in the journal the rows come from.
        let bookkeeping = matches!(row.record.as_str(), "checkpoint" | "coverage");
        let after = |l: &(String, i64, u64)| {
            row.at > l.1
                || row.at == l.1
                    && row
                        .resource_version
                        .as_deref()
                        .is_some_and(|rv| rv == l.0 || is_surely_new(&l.0, rv))
        };
        let ends = |l: &(String, i64, u64)| if bookkeeping { after(l) } else { !same_list(l) };
        if self.list.as_ref().is_some_and(ends) {
            ops.extend(self.finish());
        }
        let need = |v: Option<String>, what: &str| {
            v.ok_or_else(|| format!("a {} row at seq {} has no {what}", row.record, row.seq))
        };
        let meta = |row: &Row| -> Result<ObjectMeta, String> {
            Ok(ObjectMeta {
                namespace: row.namespace.clone().unwrap_or_default(),
                name: need(row.name.clone(), "name")?,
                uid: row.uid.clone().unwrap_or_default(),
                resource_version: row.resource_version.clone().unwrap_or_default(),
                // Taken where the row was read ([`rows`]).
                diff_digest: row.diff_digest,
                given_mark: row.given_mark,
            })
        };
        let info = |row: &Row| need(row.info.clone(), "info");
        let bad = |e: serde_json::Error| format!("seq {}: {e}", row.seq);
        match row.record.as_str() {
            "event" => {
                let watch_type = row
                    .watch_type
                    .as_deref()
                    .and_then(WatchType::parse)
                    .ok_or_else(|| format!("event at seq {} has no watch type", row.seq))?;
                ops.push(Op::Event {
                    stream,
                    at: row.at,
                    watch_type,
                    meta: meta(&row)?,
                    body: need(row.object, "object")?.into_bytes(),
                });
            }
            "baseline" | KEYFRAME if item => {
                let list_rv = need(row.list_resource_version.clone(), "list_resource_version")?;
                let list_at = row.list_at.unwrap_or(row.at);
                let list = self.list.get_or_insert((list_rv, list_at, 0));
                list.2 += 1;
                ops.push(Op::BaselineItem {
                    stream,
                    at: row.at,
                    meta: meta(&row)?,
                    body: need(row.object, "object")?.into_bytes(),
                });
            }
            "baseline" | KEYFRAME => ops.push(Op::BaselineEnd {
                stream,
                at: row.list_at.unwrap_or(row.at),
                list_rv: need(row.list_resource_version.clone(), "list_resource_version")?,
                items: 0,
            }),
            "gap" => ops.push(Op::Gap {
                stream,
                at: row.at,
                info: serde_json::from_str::<GapInfo>(&info(&row)?).map_err(bad)?,
            }),
            "coverage" => ops.push(Op::Coverage {
                stream,
                at: row.at,
                info: serde_json::from_str::<CoverageInfo>(&info(&row)?).map_err(bad)?,
            }),
            "checkpoint" => ops.push(Op::CheckpointAs {
                stream,
                at: row.at,
                rv: row.resource_version.clone().unwrap_or_default(),
                info: serde_json::from_str::<CheckpointInfo>(&info(&row)?).map_err(bad)?,
            }),
            other => return Err(format!("unknown record type {other:?} at seq {}", row.seq)),
        }
        Ok(ops)
    }

    /// Whether no list is being rebuilt: a transaction may end here.
    pub fn idle(&self) -> bool {
        self.list.is_none()
    }

    /// The end of the list being rebuilt, if any.
    pub fn finish(&mut self) -> Option<Op> {
        self.list
            .take()
            .map(|(list_rv, at, items)| Op::BaselineEnd {
                stream: self.stream,
                at,
                list_rv,
                items,
            })
    }
}

/// A file to import: its hash, description and path.
struct Input {
    path: PathBuf,
    hash: Vec<u8>,
    meta: SegmentMeta,
}

/// The `.parquet` files `inputs` name: files as given, directories walked.
pub fn segment_files(inputs: &[PathBuf]) -> Result<Vec<PathBuf>, ImportError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ImportError::Io { path, source }
    };
    let mut out = Vec::new();
    for input in inputs {
        let kind = std::fs::metadata(input).map_err(io(input))?;
        if !kind.is_dir() {
            out.push(input.clone());
            continue;
        }
        let before = out.len();
        // Bounded by the tree: no links are followed.
        let mut todo = vec![input.clone()];
        while let Some(dir) = todo.pop() {
            for entry in std::fs::read_dir(&dir).map_err(io(&dir))? {
                let entry = entry.map_err(io(&dir))?;
                let file_type = entry.file_type().map_err(io(&entry.path()))?;
                let path = entry.path();
                if file_type.is_dir() {
                    todo.push(path);
                } else if file_type.is_file() && path.extension().is_some_and(|e| e == "parquet") {
                    out.push(path);
                }
            }
        }
        if out.len() == before {
            return Err(ImportError::NoSegments(input.clone()));
        }
        out[before..].sort();
    }
    Ok(out)
}

/// Whether a file that says it is in format `found` (`NAME/VERSION`) can be
/// read by this kubectl-krply, which reads `reads` (the newest first): one
/// of them, or a later version of the same layout (refused, saying so), or
/// something else.
fn readable(path: &Path, found: &str, reads: &[&'static str]) -> Result<(), ImportError> {
    if reads.contains(&found) {
        return Ok(());
    }
    let version = |f: &str| {
        f.rsplit_once('/')
            .and_then(|(name, v)| Some((name.to_string(), v.parse::<u32>().ok()?)))
    };
    let newest = reads[0];
    match (version(found), version(newest)) {
        (Some((name, v)), Some((ours, mine))) if name == ours && v > mine => {
            Err(ImportError::NewerFormat {
                path: path.to_path_buf(),
                found: found.to_string(),
                reads: newest,
            })
        }
        _ => Err(ImportError::NotSegment {
            path: path.to_path_buf(),
            why: format!(
                "format {found:?}, this kubectl-krply reads {}",
                reads.join(", ")
            ),
        }),
    }
}

/// Reads a file's hash and description.
fn describe(path: &Path) -> Result<Input, ImportError> {
    let io = |source| ImportError::Io {
        path: path.to_path_buf(),
        source,
    };
    let not = |why: String| ImportError::NotSegment {
        path: path.to_path_buf(),
        why,
    };
    let mut file = std::fs::File::open(path).map_err(io)?;
    let mut digest = ring::digest::Context::new(&ring::digest::SHA256);
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buf).map_err(io)?;
        if n == 0 {
            break;
        }
        digest.update(&buf[..n]);
    }
    let file = std::fs::File::open(path).map_err(io)?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|e| not(format!("not a Parquet file ({e})")))?;
    let text = builder
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .and_then(|kv| kv.iter().find(|kv| kv.key == META_KEY))
        .and_then(|kv| kv.value.clone())
        .ok_or_else(|| {
            not(format!(
                "no {META_KEY} metadata (written by `kubectl krply export --format parquet`?)"
            ))
        })?;
    let meta: SegmentMeta =
        serde_json::from_str(&text).map_err(|e| not(format!("bad {META_KEY} metadata: {e}")))?;
    readable(path, &meta.format, &READS)?;
    Ok(Input {
        path: path.to_path_buf(),
        hash: digest.finish().as_ref().to_vec(),
        meta,
    })
}

/// Imports the segments `inputs` name into the journal at `store` (created
/// when missing, once every file was found to be a segment), file by file
/// ([`import_file`]), and says what became of each.
pub fn import(store: &Path, inputs: &[PathBuf]) -> Result<Vec<Imported>, ImportError> {
    // Audit files (who made the changes) go in after every stream's rows:
    // their events attach to the objects those rows recorded.
    let (audit, streams): (Vec<PathBuf>, Vec<PathBuf>) = segment_files(inputs)?
        .into_iter()
        .partition(|p| super::audit::meta_of(p).is_some());
    let audit = audit
        .iter()
        .map(|p| audit_input(p))
        .collect::<Result<Vec<_>, _>>()?;
    let mut files = streams
        .iter()
        .map(|p| describe(p))
        .collect::<Result<Vec<_>, _>>()?;
    let journal = Journal::open_or_create(store)?;
    // Beside recorders, never during a prune (which holds the journal alone).
    let _lease = crate::journal::lock::StreamLease::acquire(
        store,
        &format!("import (pid {})", std::process::id()),
        &[],
    )?;
    let own = journal.id()?;
    // A stream's files in the order of their rows.
    files.sort_by(|a, b| {
        let key = |i: &Input| {
            let s = &i.meta.stream;
            (
                i.meta.journal.clone(),
                i.meta.cluster.id.clone(),
                s.resource.group.clone(),
                s.resource.resource.clone(),
                s.resource.version.clone(),
                s.namespace.clone(),
                s.selector.clone(),
                i.meta.first_seq,
            )
        };
        key(a).cmp(&key(b))
    });
    let mut writer = DirectWriter::new(journal)?;
    let mut out = Vec::new();
    for input in &files {
        out.push(import_file(&mut writer, input, &own)?);
    }
    drop(writer);
    let journal = Journal::open(store)?;
    for (path, meta, rows) in audit {
        if meta.journal == own {
            // This journal's own audit events.
            out.push(Imported {
                path: path.display().to_string(),
                cluster: meta.cluster.id.clone(),
                stream: "audit".into(),
                rows: meta.writes,
                added: 0,
                result: "own history",
                lane: None,
                gap_before: false,
            });
            continue;
        }
        let mut gathered = crate::journal::audit::AuditImport::new(&journal, &meta.cluster.id)?;
        for (e, unknown) in rows.writes.into_iter().zip(
            rows.unknown_subresource
                .into_iter()
                .chain(std::iter::repeat(false)),
        ) {
            gathered.add_with(e, !unknown)?;
        }
        for (from, to, source) in rows.coverage {
            gathered.covers(from, to, &source);
        }
        let stored = gathered.store()?;
        out.push(Imported {
            path: path.display().to_string(),
            cluster: meta.cluster.id.clone(),
            stream: "audit".into(),
            rows: meta.writes,
            added: stored.new,
            result: if stored.new > 0 {
                "imported"
            } else {
                "already imported"
            },
            lane: None,
            gap_before: false,
        });
    }
    Ok(out)
}

/// An audit file ([`super::audit`]): its path, description and rows.
fn audit_input(
    path: &Path,
) -> Result<(PathBuf, super::audit::AuditMeta, super::audit::AuditRows), ImportError> {
    let not = |why: String| ImportError::NotSegment {
        path: path.to_path_buf(),
        why,
    };
    let meta = super::audit::meta_of(path).ok_or_else(|| not("no audit metadata".into()))?;
    readable(path, &meta.format, &[super::audit::FORMAT])?;
    let rows = super::audit::read(path).map_err(|why| ImportError::BadRow {
        path: path.to_path_buf(),
        why,
    })?;
    Ok((path.to_path_buf(), meta, rows))
}

/// Rows committed per transaction, never cutting a list: a recorder writing
/// the same journal waits for one chunk, not for a whole file, and an import
/// cut short resumes after its last chunk. A file's first chunk holds up to
/// [`FIRST_CHUNK`] rows and each next one twice as many, up to [`CHUNK`]: a
/// small file is done in short transactions, and a large one writes the
/// pages its chunks share (a leaf of `records_object` per object) once per
/// 16,384 rows: at 2,048 a chunk, the 1M-row bench took 1.4 times as long
/// (50.0 s against 35.3 s, both with the 64 MB page cache, measured before
/// rows were read on a thread of their own).
const FIRST_CHUNK: u64 = 2_048;
const CHUNK: u64 = 16_384;

/// What the first transaction of a file decided.
enum Route {
    /// Nothing to write.
    Done(Imported),
    /// Write the rows after `after` into lane `stream`, a gap first when
    /// `gap`; `extend`: the rows continue the lane's last run.
    Go {
        report: Imported,
        stream: StreamId,
        after: Option<i64>,
        gap: bool,
        extend: bool,
    },
}

/// Imports one file: a transaction that decides where its rows go, then
/// one per chunk of rows ([`CHUNK`]). Each chunk notes how far the lane holds its
/// source (`import_runs`), and the last notes the file (`imports`), so a
/// file imported again after a crash continues where its last chunk ended.
fn import_file(
    writer: &mut DirectWriter,
    input: &Input,
    own: &str,
) -> Result<Imported, ImportError> {
    let (mut report, stream, after, gap, mut extend) =
        match writer.transaction(|w| route(w, input, own))? {
            Route::Done(report) => return Ok(report),
            Route::Go {
                report,
                stream,
                after,
                gap,
                extend,
            } => (report, stream, after, gap, extend),
        };
    let (first, last) = (
        input.meta.first_seq.unwrap_or_default(),
        input.meta.last_seq.unwrap_or_default(),
    );
    // Whether the file continues what the lane holds (its keyframes are
    // then that state again).
    let continues = extend;
    let mut rows = Rows::open(&input.path)?;
    let mut rebuild = Rebuild::new(stream);
    let mut gap_pending = gap;
    let mut chunk = FIRST_CHUNK / 2;
    loop {
        chunk = (chunk * 2).min(CHUNK);
        let finished = writer.transaction(|w| -> Result<bool, ImportError> {
            let path = w.path().to_path_buf();
            let sql = |e| JournalError::sqlite(&path, e);
            let mut written = 0u64;
            let mut upto = None;
            let finished = loop {
                let Some(row) = rows.next_row()? else {
                    break true;
                };
                // A keyframe is the state the lane holds already when the
                // file continues it; and a version from before the file's
                // rows, so no part of the stretch the lane holds.
                let keyframe = row.record == KEYFRAME;
                if keyframe && continues || !keyframe && after.is_some_and(|a| row.seq <= a) {
                    continue;
                }
                if gap_pending {
                    w.apply(imports::lane_gap(w.conn(), stream, row.at).map_err(sql)?)?;
                    gap_pending = false;
                }
                if !keyframe {
                    upto = Some(row.seq);
                }
                let ops = rebuild.row(row).map_err(|why| ImportError::BadRow {
                    path: input.path.clone(),
                    why,
                })?;
                for op in ops {
                    w.apply(op)?;
                }
                report.added += 1;
                written += 1;
                if written >= chunk && rebuild.idle() {
                    break false;
                }
            };
            if finished {
                if let Some(end) = rebuild.finish() {
                    w.apply(end)?;
                }
                upto = Some(last);
            }
            if let Some(upto) = upto {
                imports::extend_run(w.conn(), stream, &mut extend, first, upto).map_err(sql)?;
            }
            if finished {
                imports::record(w.conn(), &noted(input, Some(stream), report.added))
                    .map_err(sql)?;
            }
            Ok(finished)
        })?;
        if finished {
            return Ok(report);
        }
    }
}

/// Whether the file was imported already, is this journal's own, or where
/// its rows go (making the lane when they start one).
fn route(w: &mut TxWriter<'_, '_>, input: &Input, own: &str) -> Result<Route, ImportError> {
    let meta = &input.meta;
    let mut report = Imported {
        path: input.path.display().to_string(),
        cluster: meta.cluster.id.clone(),
        stream: meta.stream.name(),
        rows: meta.rows,
        added: 0,
        result: "imported",
        lane: None,
        gap_before: false,
    };
    let path = w.path().to_path_buf();
    let sql = |e| JournalError::sqlite(&path, e);
    let conn = w.conn();
    if imports::imported(conn, &input.hash).map_err(sql)? {
        report.result = "already imported";
        return Ok(Route::Done(report));
    }
    if meta.journal == own {
        report.result = "own history";
        return Ok(Route::Done(report));
    }
    let (Some(first), Some(last)) = (meta.first_seq, meta.last_seq) else {
        imports::record(conn, &noted(input, None, 0)).map_err(sql)?;
        report.result = "held";
        return Ok(Route::Done(report));
    };
    imports::add_cluster(
        conn,
        &meta.cluster.id,
        &meta.cluster.server,
        meta.cluster.context.as_deref(),
    )
    .map_err(sql)?;
    let lanes = imports::lanes(
        conn,
        &meta.cluster.id,
        &meta.stream,
        &format!("{IMPORTED_PREFIX}{}#", meta.journal),
    )
    .map_err(sql)?;
    let runs: Vec<Runs> = lanes.iter().map(|l| l.2.clone()).collect();
    let (stream, origin, after, gap, extend) = match lane_for(&runs, first, last, meta.prev_seq) {
        Placement::Held => {
            imports::record(conn, &noted(input, None, 0)).map_err(sql)?;
            report.result = "held";
            return Ok(Route::Done(report));
        }
        // Rows that continue the lane grow its last run.
        Placement::Append { lane, after, gap } => {
            let (id, origin, runs) = &lanes[lane];
            (*id, origin.clone(), after, gap, !gap && !runs.is_empty())
        }
        Placement::NewLane => {
            let origin = format!("{IMPORTED_PREFIX}{}#{}", meta.journal, lanes.len() + 1);
            let id = crate::journal::insert_stream(conn, &meta.cluster.id, &meta.stream, &origin)
                .map_err(sql)?;
            (id, origin, None, false, false)
        }
    };
    report.lane = Some(origin);
    report.gap_before = gap;
    Ok(Route::Go {
        report,
        stream,
        after,
        gap,
        extend,
    })
}

/// How `imports` notes a file.
fn noted(input: &Input, stream: Option<StreamId>, added: u64) -> ImportNote<'_> {
    ImportNote {
        hash: &input.hash,
        path: &input.path,
        stream,
        first_seq: input.meta.first_seq,
        last_seq: input.meta.last_seq,
        rows: input.meta.rows,
        added,
    }
}

/// The rows of a segment, in order, read and decoded on a thread of their
/// own while the writer stores the ones before them.
struct Rows {
    path: PathBuf,
    batches: std::sync::mpsc::Receiver<Result<Vec<Row>, String>>,
    batch: std::vec::IntoIter<Row>,
    reader: Option<std::thread::JoinHandle<()>>,
}

/// Batches of rows decoded ahead of the writer.
const AHEAD: usize = 2;

impl Rows {
    fn open(path: &Path) -> Result<Rows, ImportError> {
        let file = std::fs::File::open(path).map_err(|source| ImportError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let reader = ParquetRecordBatchReaderBuilder::try_new(file)
            .and_then(|b| b.with_batch_size(4096).build())
            .map_err(|e| ImportError::BadRow {
                path: path.to_path_buf(),
                why: e.to_string(),
            })?;
        let (send, batches) = std::sync::mpsc::sync_channel(AHEAD);
        let reader = std::thread::Builder::new()
            .name("segment-reader".into())
            .spawn(move || {
                let mut seen = Seen::default();
                for batch in reader {
                    let rows = batch
                        .map_err(|e| e.to_string())
                        .and_then(|b| rows(&b, &mut seen));
                    let failed = rows.is_err();
                    // The writer stopped reading: nothing more to do.
                    if send.send(rows).is_err() || failed {
                        return;
                    }
                }
            })
            .map_err(|source| ImportError::Io {
                path: path.to_path_buf(),
                source,
            })?;
        Ok(Rows {
            path: path.to_path_buf(),
            batches,
            batch: Vec::new().into_iter(),
            reader: Some(reader),
        })
    }

    fn next_row(&mut self) -> Result<Option<Row>, ImportError> {
        let bad = |why: String| ImportError::BadRow {
            path: self.path.clone(),
            why,
        };
        loop {
            if let Some(row) = self.batch.next() {
                return Ok(Some(row));
            }
            match self.batches.recv() {
                Ok(batch) => self.batch = batch.map_err(bad)?.into_iter(),
                // The reader is done: every row was read, unless it died.
                Err(_) => {
                    if self.reader.take().is_some_and(|r| r.join().is_err()) {
                        return Err(bad("the segment's reader stopped".into()));
                    }
                    return Ok(None);
                }
            }
        }
    }
}

impl Drop for Rows {
    fn drop(&mut self) {
        // Unblocks a reader waiting to hand over a batch, then waits for it.
        let (_, none) = std::sync::mpsc::sync_channel(0);
        drop(std::mem::replace(&mut self.batches, none));
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

/// The objects (namespace, name) a file's rows named so far, but its
/// keyframes.
type Seen = std::collections::HashSet<(Option<String>, String)>;

/// The mark to take for a row of a file whose rows carry their marks
/// (`status_only`): a MODIFIED event's own when an earlier row of the same
/// file named its object (`seen`), as that row is the version the mark was
/// taken against where it was recorded; none (not known) for its first in
/// the file, whose version before is a keyframe, another file's row or none
/// (a keyframe is the object's version at the file's start in time, which
/// need not be the one before it in `seq`: clocks step). Every other row:
/// none to take.
pub fn given_mark(modified: bool, seen: bool, status_only: Option<bool>) -> Option<Option<bool>> {
    Some(if modified && seen { status_only } else { None })
}

/// The rows of one record batch; `seen`: the objects the file's rows before
/// it named.
fn rows(batch: &RecordBatch, seen: &mut Seen) -> Result<Vec<Row>, String> {
    let column = |name: &str| {
        batch
            .column_by_name(name)
            .ok_or_else(|| format!("no column {name}"))
    };
    let text = |name: &str| -> Result<Vec<Option<String>>, String> {
        let c = column(name)?;
        let c = c
            .as_string_opt::<i32>()
            .ok_or_else(|| format!("column {name} is not text"))?;
        Ok((0..c.len())
            .map(|i| c.is_valid(i).then(|| c.value(i).to_string()))
            .collect())
    };
    let time = |name: &str| -> Result<Vec<Option<i64>>, String> {
        let c = column(name)?;
        let c = c
            .as_primitive_opt::<TimestampMillisecondType>()
            .ok_or_else(|| format!("column {name} is not a millisecond timestamp"))?;
        Ok((0..c.len())
            .map(|i| c.is_valid(i).then(|| c.value(i)))
            .collect())
    };
    let seq = column("seq")?;
    let seq = seq
        .as_primitive_opt::<Int64Type>()
        .ok_or("column seq is not an integer")?;
    let mut record = text("record")?;
    let at = time("observed_at")?;
    let mut watch_type = text("watch_type")?;
    let mut rv = text("resource_version")?;
    let mut uid = text("uid")?;
    let mut namespace = text("namespace")?;
    let mut name = text("name")?;
    let mut object = text("object")?;
    let mut list_rv = text("list_resource_version")?;
    let list_at = time("list_at")?;
    let mut info = text("info")?;
    // Files written before 2026-12-06 have no marks: they are taken from
    // digests, as the recorder takes them.
    let marks = match batch.column_by_name("status_only") {
        Some(c) => Some(
            c.as_boolean_opt()
                .ok_or("column status_only is not a boolean")?,
        ),
        None => None,
    };
    (0..batch.num_rows())
        .map(|i| {
            let object = object[i].take();
            let (diff_digest, given_mark) = match marks {
                Some(marks) => {
                    let keyframe = record[i].as_deref() == Some(KEYFRAME);
                    let key = name[i].clone().map(|n| (namespace[i].clone(), n));
                    let seen = match key {
                        Some(key) if !keyframe => !seen.insert(key),
                        _ => false,
                    };
                    let modified = watch_type[i].as_deref().and_then(WatchType::parse)
                        == Some(WatchType::Modified);
                    let mark = marks.is_valid(i).then(|| marks.value(i));
                    (None, given_mark(modified, seen, mark))
                }
                // As the recorder takes it: the copy marks the same
                // status-only changes (docs/journal.md, "Status-only
                // changes").
                None => (
                    object
                        .as_deref()
                        .and_then(|o| crate::diff::compared_digest(o.as_bytes())),
                    None,
                ),
            };
            Ok(Row {
                seq: seq.value(i),
                record: record[i].take().ok_or("a row has no record type")?,
                at: at[i].ok_or("a row has no observed_at")?,
                watch_type: watch_type[i].take(),
                resource_version: rv[i].take(),
                uid: uid[i].take(),
                namespace: namespace[i].take(),
                name: name[i].take(),
                object,
                list_resource_version: list_rv[i].take(),
                list_at: list_at[i],
                info: info[i].take(),
                diff_digest,
                given_mark,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_continue_their_lane_or_leave_a_gap() {
        // Nothing imported yet: a lane of its own.
        assert_eq!(lane_for(&[], 10, 20, Some(3)), Placement::NewLane);
        // A lane an import made before it was cut short, empty: reused.
        assert_eq!(
            lane_for(&[vec![]], 10, 20, Some(3)),
            Placement::Append {
                lane: 0,
                after: None,
                gap: false
            }
        );
        let lane: Runs = vec![(10, 20)];
        // The next day, straight after.
        assert_eq!(
            lane_for(std::slice::from_ref(&lane), 25, 30, Some(20)),
            Placement::Append {
                lane: 0,
                after: None,
                gap: false
            }
        );
        // A day later than that: the day between is missing.
        assert_eq!(
            lane_for(std::slice::from_ref(&lane), 40, 50, Some(33)),
            Placement::Append {
                lane: 0,
                after: None,
                gap: true
            }
        );
        // The same day exported again, grown: only the new rows.
        assert_eq!(
            lane_for(std::slice::from_ref(&lane), 10, 28, None),
            Placement::Append {
                lane: 0,
                after: Some(20),
                gap: false
            }
        );
        // Held already.
        assert_eq!(
            lane_for(std::slice::from_ref(&lane), 12, 18, Some(11)),
            Placement::Held
        );
        // Older history the lane does not hold: another lane.
        assert_eq!(
            lane_for(std::slice::from_ref(&lane), 1, 5, None),
            Placement::NewLane
        );
        // ... which then takes what follows it, where the first cannot.
        let lanes = vec![lane, vec![(1, 5)]];
        assert_eq!(
            lane_for(&lanes, 6, 8, Some(5)),
            Placement::Append {
                lane: 1,
                after: None,
                gap: false
            }
        );
    }

    /// A checkpoint from after a list (observed later, or at the list's time
    /// with a resourceVersion not older) follows the list's end.
    #[test]
    fn a_checkpoint_after_a_list_comes_after_its_end() {
        let checkpoint = |at: i64, rv: &str| Row {
            at,
            resource_version: Some(rv.into()),
            info: Some(r#"{"reason":"bookmark","events":9}"#.into()),
            ..row(3, "checkpoint")
        };
        // (time, resourceVersion) of a checkpoint after two items; whether it
        // comes after the list's end.
        for (at, rv, after) in [
            (1_150, "41", true),
            (1_150, "not-a-number", true),
            (1_100, "41", true),
            (1_100, "40", true),
            (1_100, "39", false),
            (1_100, "not-a-number", false),
            (1_050, "41", false),
        ] {
            let mut r = Rebuild::new(7);
            let mut ops = Vec::new();
            for row in [list_item(1), list_item(2), checkpoint(at, rv)] {
                ops.extend(r.row(row).unwrap());
            }
            ops.extend(r.finish());
            let kinds: Vec<&str> = ops
                .iter()
                .map(|op| match op {
                    Op::BaselineItem { .. } => "item",
                    Op::CheckpointAs { .. } => "checkpoint",
                    Op::BaselineEnd { items: 2, .. } => "end",
                    other => panic!("{other:?}"),
                })
                .collect();
            let expected = if after {
                ["item", "item", "end", "checkpoint"]
            } else {
                ["item", "item", "checkpoint", "end"]
            };
            assert_eq!(kinds, expected, "a checkpoint at {at} with {rv}");
        }
    }

    /// The recorder writes a checkpoint when a transaction commits, which can
    /// be halfway through a relist: the checkpoint keeps its place, and the
    /// list is still one list.
    #[test]
    fn a_checkpoint_between_a_lists_items_leaves_the_list_whole() {
        let mut r = Rebuild::new(7);
        let item = list_item;
        let checkpoint = Row {
            resource_version: Some("39".into()),
            info: Some(r#"{"reason":"event","events":9}"#.into()),
            ..row(3, "checkpoint")
        };
        let coverage = Row {
            info: Some(r#"{"available":false,"reason":"forbidden"}"#.into()),
            ..row(5, "coverage")
        };
        let mut ops = Vec::new();
        for row in [item(1), item(2), checkpoint, item(4), coverage, item(6)] {
            ops.extend(r.row(row).unwrap());
            assert!(!r.idle(), "the list is open until a row not of it");
        }
        let gap = Row {
            info: Some(r#"{"from":1000,"from_rv":"39","reason":"410"}"#.into()),
            ..row(7, "gap")
        };
        ops.extend(r.row(gap).unwrap());
        assert!(r.idle());
        let kinds: Vec<&str> = ops
            .iter()
            .map(|op| match op {
                Op::BaselineItem { .. } => "item",
                Op::CheckpointAs { .. } => "checkpoint",
                Op::Coverage { .. } => "coverage",
                Op::BaselineEnd { items: 4, .. } => "end of 4",
                Op::Gap { .. } => "gap",
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "item",
                "item",
                "checkpoint",
                "item",
                "coverage",
                "item",
                "end of 4",
                "gap"
            ]
        );
    }

    /// An item of the list at 1,100 with resourceVersion 40.
    fn list_item(seq: i64) -> Row {
        Row {
            name: Some(format!("o-{seq}")),
            object: Some("{}".into()),
            resource_version: Some(seq.to_string()),
            list_resource_version: Some("40".into()),
            list_at: Some(1_100),
            ..row(seq, "baseline")
        }
    }

    fn row(seq: i64, record: &str) -> Row {
        Row {
            seq,
            record: record.into(),
            at: 1_000 + seq,
            ..Row::default()
        }
    }

    #[test]
    fn a_later_format_of_the_same_layout_is_refused_as_newer() {
        let p = Path::new("d/x.parquet");
        let reads = ["krply-segments/2", "krply-segments/1"];
        assert!(readable(p, "krply-segments/1", &reads).is_ok());
        assert!(readable(p, "krply-segments/2", &reads).is_ok());
        assert!(matches!(
            readable(p, "krply-segments/3", &reads),
            Err(ImportError::NewerFormat { .. })
        ));
        for other in ["krply-segments/0", "krply-audit/3", "krply-segments", "x"] {
            assert!(
                matches!(
                    readable(p, other, &reads),
                    Err(ImportError::NotSegment { .. })
                ),
                "{other}"
            );
        }
    }

    #[test]
    fn rows_become_the_ops_that_wrote_them() {
        let mut r = Rebuild::new(7);
        let item = |seq: i64, name: &str| Row {
            name: Some(name.into()),
            object: Some("{}".into()),
            resource_version: Some(seq.to_string()),
            list_resource_version: Some("40".into()),
            list_at: Some(1_100),
            ..row(seq, "baseline")
        };
        assert!(matches!(
            r.row(item(1, "a")).unwrap()[..],
            [Op::BaselineItem { .. }]
        ));
        assert!(matches!(
            r.row(item(2, "b")).unwrap()[..],
            [Op::BaselineItem { .. }]
        ));
        let event = Row {
            watch_type: Some("MODIFIED".into()),
            name: Some("a".into()),
            object: Some("{}".into()),
            resource_version: Some("41".into()),
            ..row(4, "event")
        };
        let ops = r.row(event).unwrap();
        match &ops[..] {
            [
                Op::BaselineEnd {
                    stream: 7,
                    at: 1_100,
                    list_rv,
                    items: 2,
                },
                Op::Event { .. },
            ] => assert_eq!(list_rv, "40"),
            other => panic!("{other:?}"),
        }
        assert!(r.idle());
        let checkpoint = Row {
            resource_version: Some("41".into()),
            info: Some(r#"{"reason":"bookmark","events":9}"#.into()),
            ..row(5, "checkpoint")
        };
        assert!(matches!(
            r.row(checkpoint).unwrap()[..],
            [Op::CheckpointAs { .. }]
        ));
        let empty_list = Row {
            list_resource_version: Some("50".into()),
            list_at: Some(1_200),
            ..row(6, "baseline")
        };
        assert!(matches!(
            r.row(empty_list).unwrap()[..],
            [Op::BaselineEnd { items: 0, .. }]
        ));
        assert!(r.finish().is_none());
        assert!(r.row(row(9, "gap")).unwrap_err().contains("no info"));
        assert!(
            r.row(row(9, "nonsense"))
                .unwrap_err()
                .contains("unknown record")
        );
    }
}
