//! `export --format parquet`: the journal's records as Parquet segments that
//! DuckDB and ClickHouse read as they are (docs/at-scale.md). One file per
//! cluster, stream and UTC day, `DIR/CLUSTER/STREAM/YYYY-MM-DD.parquet`, zstd
//! compressed, written aside and renamed into place, so exporting a slice
//! again replaces it; then `DIR/manifest.json` lists the files, their slices,
//! row counts and the coverage they hold.
//!
//! The rows are the NDJSON export's records ([`crate::journal::export`]), one column
//! per field, with times as UTC timestamps and the object as its JSON text:
//! "the object at T" and "what changed in a window" are then SQL alone
//! (`json_extract`, `JSONExtract...`), at the cost of storing each version
//! whole, which zstd over a column of near-identical JSON keeps small.

use super::ClusterMeta;
use crate::diff::ObjectFacts;
use crate::history::History;
use crate::journal::export::{ExportOptions, Line, visit};
use crate::journal::read::{Coverage, GapWindow, StreamInfo};
use crate::journal::versions::{ObjectRow, VersionRow};
use crate::journal::{IdSet, Journal, JournalError};
use crate::model::StreamSpec;
use crate::time::Millis;
use arrow_array::builder::{
    BooleanBuilder, Int64Builder, StringBuilder, TimestampMillisecondBuilder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::mpsc::SyncSender;
use std::sync::{Arc, Mutex};

const DAY: i64 = 86_400_000;
/// Rows buffered per file before they become a record batch.
const BATCH: usize = 4_096;
/// Rows per row group: large enough for scans to skip by statistics.
const ROW_GROUP: usize = 128 * 1024;

/// Why segments could not be written.
#[derive(Debug, thiserror::Error)]
pub enum SegmentError {
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error(transparent)]
    History(#[from] crate::history::HistoryError),
    #[error("cannot write {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write Parquet file {path}: {source}")]
    Parquet {
        path: PathBuf,
        source: parquet::errors::ParquetError,
    },
}

/// What to export, beyond [`ExportOptions`].
#[derive(Debug, Clone, Default)]
pub struct SegmentOptions {
    pub records: ExportOptions,
    /// Only streams of this namespace and objects in it (`-n`).
    pub namespace: Option<String>,
}

/// `manifest.json`.
#[derive(Debug, Serialize)]
pub struct Manifest {
    pub format: &'static str,
    pub exported_at: String,
    pub since: Option<String>,
    pub until: Option<String>,
    pub files: Vec<FileEntry>,
    /// Who made the changes: each cluster's audit events and the time its
    /// audit logs covered ([`super::audit`]), when it has any.
    pub audit: Vec<AuditEntry>,
}

/// One cluster's audit file.
#[derive(Debug, Serialize)]
pub struct AuditEntry {
    /// Relative to the export directory.
    pub path: String,
    pub cluster: String,
    pub writes: u64,
    pub coverage: u64,
}

/// One segment file.
#[derive(Debug, Serialize)]
pub struct FileEntry {
    /// Relative to the export directory.
    pub path: String,
    pub cluster: String,
    pub stream: String,
    /// The slice of time the file holds: `[from, to)`.
    pub from: String,
    pub to: String,
    pub rows: u64,
    /// Rows per record type (event, baseline, gap, checkpoint, coverage).
    pub records: BTreeMap<&'static str, u64>,
    /// What the stream covered within the slice.
    pub coverage: SliceCoverage,
}

/// A stream's coverage within one slice, by the coverage rules
/// (docs/consistency.md): covered from its first baseline to its last durable
/// point, except its gaps.
#[derive(Debug, Serialize)]
pub struct SliceCoverage {
    pub from: Option<String>,
    pub to: Option<String>,
    pub gaps: Vec<GapEntry>,
}

#[derive(Debug, Serialize)]
pub struct GapEntry {
    pub from: String,
    pub to: Option<String>,
    pub reason: String,
}

fn time(t: i64) -> String {
    Millis::from_ms(t).to_string()
}

/// The key of each segment's own description in its Parquet key-value
/// metadata: a JSON [`SegmentMeta`].
pub const META_KEY: &str = "krply.segment";
/// [`SegmentMeta::format`] of this layout: 2 adds keyframes
/// ([`Keyframes`]).
pub const FORMAT: &str = "krply-segments/2";
/// The formats `import` reads: this one, and 1 (no keyframes, every
/// checkpoint).
pub const READS: [&str; 2] = [FORMAT, "krply-segments/1"];

/// What a segment file is, in its key-value metadata ([`META_KEY`]): all that
/// `import` needs to make its stream again, and where its rows sit in the
/// journal they came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct SegmentMeta {
    pub format: String,
    /// The exporting journal (`meta.journal_id`): whose `seq`s these are.
    pub journal: String,
    pub cluster: ClusterMeta,
    pub stream: StreamSpec,
    /// The first and last `seq` of the rows.
    pub first_seq: Option<i64>,
    pub last_seq: Option<i64>,
    /// The `seq` of the stream's line just before the first row, none when
    /// the rows start the stream's history.
    pub prev_seq: Option<i64>,
    pub rows: u64,
}

/// The stream a segment holds, with the discovery metadata that resolves
/// `TYPE/NAME` offline. A journal's stream of every namespace exported with
/// `-n` is a stream of that namespace: the segment holds it alone.
fn stream_spec(info: &StreamInfo, only: Option<&str>) -> StreamSpec {
    StreamSpec {
        resource: info.resource.clone(),
        namespace: info.namespace.clone().or_else(|| {
            only.filter(|_| info.resource.namespaced)
                .map(str::to_string)
        }),
        selector: info.selector.clone(),
    }
}

/// The columns of every segment.
pub fn schema() -> SchemaRef {
    let ts = || DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()));
    let text = |name: &str| Field::new(name, DataType::Utf8, true);
    Arc::new(Schema::new(vec![
        Field::new("seq", DataType::Int64, false),
        Field::new("record", DataType::Utf8, false),
        Field::new("cluster", DataType::Utf8, false),
        Field::new("stream", DataType::Utf8, false),
        Field::new("observed_at", ts(), false),
        text("watch_type"),
        Field::new("synthetic", DataType::Boolean, false),
        text("resource_version"),
        text("uid"),
        text("kind"),
        text("api_version"),
        text("namespace"),
        text("name"),
        text("manager"),
        text("actor"),
        text("actor_match"),
        text("object"),
        text("list_resource_version"),
        Field::new("list_at", ts(), true),
        Field::new("gap_from", ts(), true),
        Field::new("gap_to", ts(), true),
        text("reason"),
        text("info"),
        Field::new("status_only", DataType::Boolean, true),
    ]))
}

/// Column builders for one batch.
struct Columns {
    seq: Int64Builder,
    record: StringBuilder,
    cluster: StringBuilder,
    stream: StringBuilder,
    observed_at: TimestampMillisecondBuilder,
    watch_type: StringBuilder,
    synthetic: BooleanBuilder,
    resource_version: StringBuilder,
    kind: StringBuilder,
    api_version: StringBuilder,
    namespace: StringBuilder,
    name: StringBuilder,
    actor: StringBuilder,
    actor_match: StringBuilder,
    list_resource_version: StringBuilder,
    list_at: TimestampMillisecondBuilder,
    gap_from: TimestampMillisecondBuilder,
    gap_to: TimestampMillisecondBuilder,
    reason: StringBuilder,
    info: StringBuilder,
    status_only: BooleanBuilder,
    /// Each row's object as recorded: its uid, last writer and checked
    /// text are read from it by the encoder ([`Pending::complete`]).
    bodies: Vec<Option<Vec<u8>>>,
    rows: usize,
}

impl Columns {
    fn new() -> Columns {
        let ts = || TimestampMillisecondBuilder::new().with_timezone("UTC");
        Columns {
            seq: Int64Builder::new(),
            record: StringBuilder::new(),
            cluster: StringBuilder::new(),
            stream: StringBuilder::new(),
            observed_at: ts(),
            watch_type: StringBuilder::new(),
            synthetic: BooleanBuilder::new(),
            resource_version: StringBuilder::new(),
            kind: StringBuilder::new(),
            api_version: StringBuilder::new(),
            namespace: StringBuilder::new(),
            name: StringBuilder::new(),
            actor: StringBuilder::new(),
            actor_match: StringBuilder::new(),
            list_resource_version: StringBuilder::new(),
            list_at: ts(),
            gap_from: ts(),
            gap_to: ts(),
            reason: StringBuilder::new(),
            info: StringBuilder::new(),
            status_only: BooleanBuilder::new(),
            bodies: Vec::new(),
            rows: 0,
        }
    }

    fn push(&mut self, line: Line<'_>, stream: &str, by: Option<&By>) {
        self.seq.append_value(line.seq.unwrap_or_default());
        self.record.append_value(line.record);
        self.cluster.append_value(line.cluster);
        self.stream.append_value(stream);
        self.observed_at.append_value(line.at);
        self.watch_type.append_option(line.watch_type);
        self.synthetic.append_value(line.synthetic);
        self.resource_version.append_option(line.resource_version);
        self.kind.append_option(line.kind);
        self.api_version.append_option(line.api_version.as_deref());
        self.namespace.append_option(line.namespace);
        self.name.append_option(line.name);
        self.actor.append_option(by.and_then(|b| b.0.as_deref()));
        self.actor_match.append_option(by.map(|b| b.1));
        self.list_resource_version
            .append_option(line.list_resource_version);
        self.list_at.append_option(line.list_at);
        self.gap_from.append_option(line.gap.map(|g| g.0));
        self.gap_to.append_option(line.gap.and_then(|g| g.1));
        self.reason.append_option(line.reason.as_deref());
        self.info
            .append_option(line.info.as_deref().map(|i| i.get()));
        self.status_only.append_option(line.status_only);
        self.bodies.push(line.body);
        self.rows += 1;
    }

    /// The rows pushed since the last call, as a batch the encoder
    /// completes.
    fn finish(&mut self) -> Pending {
        self.rows = 0;
        Pending {
            // In the schema's order, without `uid`, `manager` and `object`.
            columns: vec![
                Arc::new(self.seq.finish()),
                Arc::new(self.record.finish()),
                Arc::new(self.cluster.finish()),
                Arc::new(self.stream.finish()),
                Arc::new(self.observed_at.finish()),
                Arc::new(self.watch_type.finish()),
                Arc::new(self.synthetic.finish()),
                Arc::new(self.resource_version.finish()),
                Arc::new(self.kind.finish()),
                Arc::new(self.api_version.finish()),
                Arc::new(self.namespace.finish()),
                Arc::new(self.name.finish()),
                Arc::new(self.actor.finish()),
                Arc::new(self.actor_match.finish()),
                Arc::new(self.list_resource_version.finish()),
                Arc::new(self.list_at.finish()),
                Arc::new(self.gap_from.finish()),
                Arc::new(self.gap_to.finish()),
                Arc::new(self.reason.finish()),
                Arc::new(self.info.finish()),
                Arc::new(self.status_only.finish()),
            ],
            bodies: std::mem::take(&mut self.bodies),
        }
    }
}

/// A batch of rows but for the columns read from their objects' bytes.
struct Pending {
    columns: Vec<ArrayRef>,
    bodies: Vec<Option<Vec<u8>>>,
}

impl Pending {
    /// The batch, with each object's uid, last writer and text, checked to
    /// be JSON (a body that is not has none of the three).
    fn complete(self, schema: &SchemaRef) -> RecordBatch {
        // Sized at once: grown by doubling, the objects' column (20 MB for
        // 4,096 Deployments) was copied again and again, and its larger
        // buffers given back to the system and faulted in anew.
        let rows = self.bodies.len();
        let text: usize = self.bodies.iter().flatten().map(Vec::len).sum();
        let (mut uid, mut manager, mut object) = (
            StringBuilder::with_capacity(rows, rows * 36),
            StringBuilder::with_capacity(rows, rows * 32),
            StringBuilder::with_capacity(rows, text),
        );
        for body in &self.bodies {
            let facts = body.as_deref().and_then(ObjectFacts::read);
            uid.append_option(facts.as_ref().and_then(|f| f.uid.as_deref()));
            manager.append_option(facts.as_ref().and_then(|f| f.last_writer.as_deref()));
            object.append_option(facts.as_ref().map(|f| f.text));
        }
        let (uid, manager, object): (ArrayRef, ArrayRef, ArrayRef) = (
            Arc::new(uid.finish()),
            Arc::new(manager.finish()),
            Arc::new(object.finish()),
        );
        let mut rest = self.columns.into_iter();
        let columns: Vec<ArrayRef> = schema
            .fields()
            .iter()
            .filter_map(|f| match f.name().as_str() {
                "uid" => Some(uid.clone()),
                "manager" => Some(manager.clone()),
                "object" => Some(object.clone()),
                _ => rest.next(),
            })
            .collect();
        RecordBatch::try_new(schema.clone(), columns).expect("columns match the schema")
    }
}

/// One file being written.
struct Open {
    entry: FileEntry,
    meta: SegmentMeta,
    tmp: PathBuf,
    dest: PathBuf,
    writer: ParquetFile,
    columns: Columns,
    runs: CheckpointRuns,
}

impl Open {
    /// Writes one row, and a record batch when enough are buffered.
    fn write(&mut self, line: Line<'_>, stream: &str, by: Option<&By>) -> Result<(), SegmentError> {
        self.entry.rows += 1;
        self.meta.rows += 1;
        // A keyframe is a version from before the slice, under its own seq:
        // the slice's rows are the others.
        if line.record != KEYFRAME {
            self.meta.first_seq = self.meta.first_seq.or(line.seq);
            self.meta.last_seq = line.seq.or(self.meta.last_seq);
        }
        *self.entry.records.entry(line.record).or_default() += 1;
        self.columns.push(line, stream, by);
        if self.columns.rows >= BATCH {
            self.writer.write(self.columns.finish())?;
        }
        Ok(())
    }
}

/// The second half of an export, on a thread of its own while the journal
/// is read and its bodies decoded on this one: each batch's objects read
/// ([`Pending::complete`]), then encoded and compressed as Parquet.
struct Encoder {
    jobs: Option<SyncSender<Job>>,
    /// The first error of the encoding thread, which then stops.
    failed: Failed,
    thread: Option<std::thread::JoinHandle<()>>,
    files: usize,
}

type Failed = Arc<Mutex<Option<(PathBuf, parquet::errors::ParquetError)>>>;

enum Job {
    Open(usize, PathBuf, Box<ArrowWriter<std::fs::File>>),
    Write(usize, Pending),
    /// The file's metadata, then its footer.
    Close(usize, String),
}

/// Batches handed to the encoding thread before this one waits for it.
const ENCODE_AHEAD: usize = 4;

impl Encoder {
    fn new(schema: SchemaRef) -> Result<Encoder, SegmentError> {
        let (jobs, rx) = std::sync::mpsc::sync_channel::<Job>(ENCODE_AHEAD);
        let failed = Failed::default();
        let slot = failed.clone();
        let thread = std::thread::Builder::new()
            .name("parquet-encoder".into())
            .spawn(move || {
                let mut open: HashMap<usize, (PathBuf, ArrowWriter<std::fs::File>)> =
                    HashMap::new();
                for job in rx {
                    let (dest, done) = match job {
                        Job::Open(id, dest, writer) => {
                            open.insert(id, (dest, *writer));
                            continue;
                        }
                        Job::Write(id, batch) => match open.get_mut(&id) {
                            Some((dest, writer)) => {
                                (dest.clone(), writer.write(&batch.complete(&schema)))
                            }
                            None => continue,
                        },
                        Job::Close(id, meta) => match open.remove(&id) {
                            Some((dest, mut writer)) => {
                                writer.append_key_value_metadata(
                                    parquet::file::metadata::KeyValue::new(
                                        META_KEY.to_string(),
                                        meta,
                                    ),
                                );
                                (dest, writer.close().map(|_| ()))
                            }
                            None => continue,
                        },
                    };
                    if let Err(e) = done {
                        *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some((dest, e));
                        return;
                    }
                }
            })
            .map_err(|source| SegmentError::Io {
                path: "parquet-encoder".into(),
                source,
            })?;
        Ok(Encoder {
            jobs: Some(jobs),
            failed,
            thread: Some(thread),
            files: 0,
        })
    }

    /// Hands `writer`, the file going to `dest`, to the encoding thread.
    fn open(
        &mut self,
        writer: ArrowWriter<std::fs::File>,
        dest: &Path,
    ) -> Result<ParquetFile, SegmentError> {
        let jobs = self.jobs.clone().expect("open until finished");
        let id = self.files;
        self.files += 1;
        let file = ParquetFile {
            id,
            dest: dest.to_path_buf(),
            jobs,
            failed: self.failed.clone(),
        };
        file.send(Job::Open(id, dest.to_path_buf(), Box::new(writer)))?;
        Ok(file)
    }

    /// Waits for every batch handed over to be written and every file
    /// closed; the encoding thread's error, if it stopped on one.
    fn finish(&mut self) -> Result<(), SegmentError> {
        drop(self.jobs.take());
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            return Err(SegmentError::Io {
                path: "parquet-encoder".into(),
                source: std::io::Error::other("the Parquet encoder stopped"),
            });
        }
        match self.failed.lock().unwrap_or_else(|p| p.into_inner()).take() {
            Some((path, source)) => Err(SegmentError::Parquet { path, source }),
            None => Ok(()),
        }
    }
}

impl Drop for Encoder {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

/// A file being written by the [`Encoder`].
struct ParquetFile {
    id: usize,
    dest: PathBuf,
    jobs: SyncSender<Job>,
    failed: Failed,
}

impl ParquetFile {
    fn write(&self, batch: Pending) -> Result<(), SegmentError> {
        self.send(Job::Write(self.id, batch))
    }

    /// Ends the file with its metadata.
    fn close(self, meta: String) -> Result<(), SegmentError> {
        self.send(Job::Close(self.id, meta))
    }

    /// Hands a job over; when the encoding thread stopped, its error.
    fn send(&self, job: Job) -> Result<(), SegmentError> {
        if self.jobs.send(job).is_ok() {
            return Ok(());
        }
        Err(
            match self.failed.lock().unwrap_or_else(|p| p.into_inner()).take() {
                Some((path, source)) => SegmentError::Parquet { path, source },
                None => SegmentError::Io {
                    path: self.dest.clone(),
                    source: std::io::Error::other("the Parquet encoder stopped"),
                },
            },
        )
    }
}

/// [`Line::record`] of a keyframe row.
pub const KEYFRAME: &str = "keyframe";

/// Whether a stream covered from `from` to `to` except `windows` (as
/// [`crate::journal::read::Coverage`] has them) was covered just before
/// `t`: listed before it, not in a gap, and not stopped before it.
fn covered_before(from: Option<i64>, to: Option<i64>, windows: &[GapWindow], t: i64) -> bool {
    let before = t - 1;
    from.is_some_and(|f| f <= before)
        && to.is_some_and(|to| to >= before)
        && !windows
            .iter()
            .any(|w| w.from <= before && w.to.is_none_or(|to| before < to))
}

/// A file's first rows (docs/at-scale.md, "Keyframes"): the state of every
/// object of its stream just before the slice starts, when the stream was
/// covered then, so that the file alone answers for its slice: the object
/// at T, and what changed, read the files of the days a window touches and
/// no others, and a day imported alone is a lane covering that day. A
/// stream not covered then (not listed yet, or in a gap) has none: its
/// next list, in the file, is where its history starts again.
struct Keyframes {
    at: i64,
    /// The resourceVersion the stream was known complete at then (its
    /// watermark): the keyframes' list's.
    list_rv: String,
    /// Each present object: its last version before `at`, and its bytes.
    objects: Vec<(VersionRow, ObjectRow, Vec<u8>)>,
}

impl Keyframes {
    fn of(
        journal: &Journal,
        history: &History<'_>,
        info: &StreamInfo,
        coverage: &Coverage,
        at: i64,
        only: Option<&str>,
    ) -> Result<Option<Keyframes>, SegmentError> {
        if !covered_before(coverage.from, coverage.to, &coverage.windows, at) {
            return Ok(None);
        }
        let Some(stream) = history.stream(info.id) else {
            return Ok(None);
        };
        let (Some(present), Some((_, list_rv))) = (
            history.stream_at(stream, at - 1)?,
            journal.watermark_at(info.id, at - 1)?,
        ) else {
            return Ok(None);
        };
        let ids = present.keys().copied().collect();
        let rows = history.objects(&ids)?;
        let mut objects = Vec::with_capacity(present.len());
        for (id, version) in present {
            let Some(row) = rows.get(&id) else { continue };
            if only.is_some_and(|ns| info.resource.namespaced && row.namespace != ns) {
                continue;
            }
            let bytes = history.object_bytes(&version)?;
            objects.push((version, row.clone(), bytes));
        }
        Ok(Some(Keyframes {
            at,
            list_rv,
            objects,
        }))
    }

    /// The rows: one per object, or one without an object when none was
    /// present (as an empty list is one baseline row). Each has `seq`, one
    /// less than the file's first row's: SQL reads them as a list whose
    /// events are the file's.
    fn lines<'a>(&'a self, info: &'a StreamInfo, seq: Option<i64>) -> Vec<Line<'a>> {
        let common = || Line {
            seq,
            record: KEYFRAME,
            cluster: &info.cluster,
            stream: Some(info.name()),
            observed_at: time(self.at),
            at: self.at,
            synthetic: true,
            kind: Some(&info.resource.kind),
            api_version: Some(info.resource.api_version()),
            list_resource_version: Some(&self.list_rv),
            list_at: Some(self.at),
            ..Line::default()
        };
        if self.objects.is_empty() {
            return vec![common()];
        }
        self.objects
            .iter()
            .map(|(version, row, bytes)| Line {
                resource_version: Some(&version.resource_version),
                namespace: Some(row.namespace.as_str()).filter(|n| !n.is_empty()),
                name: Some(&row.name),
                body: Some(bytes.clone()),
                ..common()
            })
            .collect()
    }
}

/// A checkpoint held back: the newest of a run of one resourceVersion.
#[derive(Debug, Clone)]
struct Held {
    seq: Option<i64>,
    at: i64,
    cluster: String,
    resource_version: Option<String>,
    info: Option<Box<serde_json::value::RawValue>>,
}

impl Held {
    fn of(line: &Line<'_>) -> Held {
        Held {
            seq: line.seq,
            at: line.at,
            cluster: line.cluster.to_string(),
            resource_version: line.resource_version.map(str::to_string),
            info: line.info.clone(),
        }
    }

    fn line(&self, stream: &str) -> Line<'_> {
        Line {
            seq: self.seq,
            record: "checkpoint",
            cluster: &self.cluster,
            stream: Some(stream.to_string()),
            observed_at: time(self.at),
            at: self.at,
            resource_version: self.resource_version.as_deref(),
            info: self.info.clone(),
            ..Line::default()
        }
    }
}

/// What to do with a row ([`CheckpointRuns::take`]).
#[derive(Debug)]
enum Take {
    /// Write it, after the checkpoint held back, if any.
    Write(Option<Held>),
    /// Nothing yet: a checkpoint held back.
    Hold,
}

/// Coverage in few rows (docs/at-scale.md, "Checkpoints"): the recorder
/// writes a durable point every few seconds, and a quiet stream's are all
/// of one resourceVersion. A file holds a run of checkpoints of one
/// resourceVersion, with nothing between them, as its first and its last:
/// the first says when the stream was known complete at that version (a
/// snapshot's watermark), the last how far (the coverage). Those between
/// say nothing the two do not.
#[derive(Debug, Default)]
struct CheckpointRuns {
    /// The resourceVersion of the run the last row written began, while
    /// that row and those since are checkpoints.
    run: Option<Option<String>>,
    /// The run's newest checkpoint, not written yet.
    held: Option<Held>,
}

impl CheckpointRuns {
    fn take(&mut self, line: &Line<'_>) -> Take {
        if line.record != "checkpoint" {
            self.run = None;
            return Take::Write(self.held.take());
        }
        let rv = line.resource_version.map(str::to_string);
        if self.run.as_ref() == Some(&rv) {
            self.held = Some(Held::of(line));
            return Take::Hold;
        }
        self.run = Some(rv);
        Take::Write(self.held.take())
    }

    /// The checkpoint held back when the file ends: its last.
    fn end(&mut self) -> Option<Held> {
        self.run = None;
        self.held.take()
    }
}

/// What a path part keeps as it is: letters, digits and `. - _ @ = , + :`,
/// none of which a shell reads specially. Everything else is percent-encoded:
/// `deployments.v1.apps@*` becomes `deployments.v1.apps@%2A`, so no script
/// globs on it, and a label selector (`app in (web)`) stays one part.
const PART_ESCAPED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'.')
    .remove(b'-')
    .remove(b'_')
    .remove(b'@')
    .remove(b'=')
    .remove(b',')
    .remove(b'+')
    .remove(b':');

/// A path part from a name ([`PART_ESCAPED`]). Import reads what files hold,
/// not their names: the layout before this one (only `/` and `%` escaped)
/// imports alike.
fn part(name: &str) -> String {
    percent_encoding::utf8_percent_encode(name, PART_ESCAPED).to_string()
}

/// Writes the journal's records as segments under `dir`, then the manifest.
pub fn export_segments(
    journal: &Journal,
    opts: &SegmentOptions,
    dir: &Path,
) -> Result<Manifest, SegmentError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| SegmentError::Io { path, source }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let now = Millis::now().as_ms();
    // Two clusters may have streams of the same name: keyed by both.
    let streams: BTreeMap<(String, String), StreamInfo> = journal
        .streams(opts.records.cluster.as_deref())?
        .into_iter()
        .filter(|s| s.origin.is_none())
        .map(|s| ((s.cluster.clone(), s.name()), s))
        .collect();
    let schema = schema();
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(
            ZstdLevel::try_new(3).expect("a valid zstd level"),
        ))
        .set_max_row_group_row_count(Some(ROW_GROUP))
        .set_created_by(format!("kubectl-krply {}", env!("CARGO_PKG_VERSION")))
        .build();
    let actors = actors(journal, opts, now)?;
    let journal_id = journal.id()?;
    let clusters: HashMap<String, ClusterMeta> = journal
        .clusters()?
        .into_iter()
        .map(|c| {
            let meta = ClusterMeta {
                id: c.id.clone(),
                server: c.server,
                context: c.context,
            };
            (c.id, meta)
        })
        .collect();
    let mut encoder = Encoder::new(schema.clone())?;
    let mut open: BTreeMap<(String, String, i64), Open> = BTreeMap::new();
    let mut histories: HashMap<String, History<'_>> = HashMap::new();
    let mut failed: Option<SegmentError> = None;
    visit(journal, &opts.records, &mut |mut line| {
        let Some(stream_name) = &line.stream.take() else {
            // Saved snapshots and plans are not stream records.
            return Ok(());
        };
        let Some(info) = streams.get(&(line.cluster.to_string(), stream_name.clone())) else {
            return Ok(());
        };
        if let Some(ns) = &opts.namespace {
            let stream_holds = match &info.namespace {
                Some(n) => n == ns,
                None => info.resource.namespaced,
            };
            if !stream_holds || line.namespace.is_some_and(|n| n != ns) {
                return Ok(());
            }
        }
        // Baseline items go in the file of their list (see `visit`).
        let day = line.list_at.unwrap_or(line.at).div_euclid(DAY);
        let key = (line.cluster.to_string(), stream_name.clone(), day);
        if !open.contains_key(&key) {
            let prev = match line.seq {
                Some(seq) => journal.line_before(info.id, seq)?,
                None => None,
            };
            let meta = SegmentMeta {
                format: FORMAT.into(),
                journal: journal_id.clone(),
                cluster: clusters
                    .get(&info.cluster)
                    .cloned()
                    .unwrap_or_else(|| ClusterMeta {
                        id: info.cluster.clone(),
                        server: String::new(),
                        context: None,
                    }),
                stream: stream_spec(info, opts.namespace.as_deref()),
                first_seq: None,
                last_seq: None,
                prev_seq: prev,
                rows: 0,
            };
            let started = start(
                journal,
                info,
                meta,
                dir,
                day,
                opts,
                now,
                &schema,
                &props,
                &mut encoder,
            )
            .and_then(|(mut file, coverage)| {
                let history = match histories.entry(info.cluster.clone()) {
                    std::collections::hash_map::Entry::Occupied(h) => h.into_mut(),
                    std::collections::hash_map::Entry::Vacant(v) => {
                        v.insert(History::load(journal, &info.cluster, now)?)
                    }
                };
                let slice_from = (day * DAY).max(opts.records.since.unwrap_or(i64::MIN));
                if let Some(k) = Keyframes::of(
                    journal,
                    history,
                    info,
                    &coverage,
                    slice_from,
                    opts.namespace.as_deref(),
                )? {
                    let name = info.name();
                    for line in k.lines(info, line.seq.map(|seq| seq - 1)) {
                        file.write(line, &name, None)?;
                    }
                }
                Ok(file)
            });
            match started {
                Ok(file) => {
                    open.insert(key.clone(), file);
                }
                Err(e) => {
                    failed = Some(e);
                    return Err(JournalError::Io {
                        path: dir.to_path_buf(),
                        source: std::io::Error::other("segment not written"),
                    });
                }
            }
        }
        let file = open.get_mut(&key).expect("opened above");
        let by = line
            .seq
            .filter(|_| line.record == "event")
            .and_then(|seq| actors.get(&(line.cluster.to_string(), seq)));
        let written = match file.runs.take(&line) {
            Take::Hold => Ok(()),
            Take::Write(held) => held
                .map_or(Ok(()), |h| {
                    file.write(h.line(stream_name), stream_name, None)
                })
                .and_then(|()| file.write(line, stream_name, by)),
        };
        if let Err(e) = written {
            let path = file.dest.clone();
            failed = Some(e);
            return Err(JournalError::Io {
                path,
                source: std::io::Error::other("segment not written"),
            });
        }
        Ok(())
    })
    .map_err(|e| failed.take().unwrap_or(SegmentError::Journal(e)))?;
    let mut files = Vec::new();
    let mut written = Vec::new();
    for (_, mut file) in open {
        if let Some(held) = file.runs.end() {
            let stream = file.entry.stream.clone();
            file.write(held.line(&stream), &stream, None)?;
        }
        if file.columns.rows > 0 {
            file.writer.write(file.columns.finish())?;
        }
        let meta = serde_json::to_string(&file.meta).expect("segment metadata serializes");
        file.writer.close(meta)?;
        written.push((file.tmp, file.dest));
        files.push(file.entry);
    }
    // Renamed into place once the encoder wrote them whole.
    encoder.finish()?;
    for (tmp, dest) in written {
        std::fs::rename(&tmp, &dest).map_err(io(&dest))?;
    }
    let mut audit = Vec::new();
    for cluster in clusters.values().filter(|c| {
        opts.records
            .cluster
            .as_ref()
            .is_none_or(|only| only == &c.id)
    }) {
        let rows = journal.audit_rows(
            &cluster.id,
            opts.namespace.as_deref(),
            opts.records.since.unwrap_or(i64::MIN),
            opts.records.until.unwrap_or(i64::MAX),
        )?;
        if rows.writes.is_empty() && rows.coverage.is_empty() {
            continue;
        }
        let rel = format!("{}/{}", part(&cluster.id), super::audit::FILE);
        let path = dir.join(&rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io(parent))?;
        }
        let meta = super::audit::AuditMeta {
            format: super::audit::FORMAT.into(),
            journal: journal_id.clone(),
            cluster: cluster.clone(),
            writes: rows.writes.len() as u64,
            coverage: rows.coverage.len() as u64,
        };
        super::audit::write(&path, &meta, &rows, props.clone()).map_err(|e| match e {
            super::audit::WriteError::Io(source) => SegmentError::Io {
                path: path.clone(),
                source,
            },
            super::audit::WriteError::Parquet(source) => SegmentError::Parquet {
                path: path.clone(),
                source,
            },
        })?;
        audit.push(AuditEntry {
            path: rel,
            cluster: cluster.id.clone(),
            writes: meta.writes,
            coverage: meta.coverage,
        });
    }
    audit.sort_by(|a, b| a.path.cmp(&b.path));
    let manifest = Manifest {
        format: FORMAT,
        exported_at: time(now),
        since: opts.records.since.map(time),
        until: opts.records.until.map(time),
        files,
        audit,
    };
    let path = dir.join("manifest.json");
    let tmp = dir.join("manifest.json.tmp");
    let text = serde_json::to_string_pretty(&manifest).expect("the manifest serializes");
    std::fs::write(&tmp, text + "\n").map_err(io(&tmp))?;
    std::fs::rename(&tmp, &path).map_err(io(&path))?;
    Ok(manifest)
}

/// Who made a change (docs/audit.md): the user, when known, and how it was
/// matched (`exact`, `likely`), or why it is not known (`not_covered`,
/// `no_match`, `ambiguous`).
type By = (Option<String>, &'static str);

/// Who made each event, by cluster and seq, for the clusters whose audit logs
/// were imported: the same join the answers use ([`History::attribute`]).
fn actors(
    journal: &Journal,
    opts: &SegmentOptions,
    now: i64,
) -> Result<HashMap<(String, i64), By>, SegmentError> {
    use crate::audit::{Attribution, Unknown};
    let mut out = HashMap::new();
    for cluster in journal.clusters()? {
        if opts
            .records
            .cluster
            .as_ref()
            .is_some_and(|c| c != &cluster.id)
        {
            continue;
        }
        let history = History::load(journal, &cluster.id, now)?;
        if !history.has_audit() {
            continue;
        }
        let ids: IdSet<_> = history.streams.iter().map(|s| s.info.id).collect();
        let after = opts.records.since.map_or(i64::MIN, |s| s - 1);
        let until = opts.records.until.unwrap_or(i64::MAX);
        for id in journal.touched_objects(&ids, after, until)? {
            let Some(stream) = journal.object(id)?.and_then(|o| history.stream(o.stream)) else {
                continue;
            };
            let versions = history.versions(stream, id)?;
            for (v, found) in versions.iter().zip(history.attribute(stream, &versions)?) {
                let by: By = match found {
                    Some(Attribution::Known(a)) => (Some(a.user.clone()), a.matched.as_str()),
                    Some(Attribution::Unknown(why)) => (
                        None,
                        match why {
                            Unknown::NotCovered => "not_covered",
                            Unknown::NoMatch => "no_match",
                            Unknown::Ambiguous => "ambiguous",
                        },
                    ),
                    None => continue,
                };
                out.insert((cluster.id.clone(), v.seq), by);
            }
        }
    }
    Ok(out)
}

/// Opens the file of `info`'s records on `day`.
#[allow(clippy::too_many_arguments)]
fn start(
    journal: &Journal,
    info: &StreamInfo,
    meta: SegmentMeta,
    dir: &Path,
    day: i64,
    opts: &SegmentOptions,
    now: i64,
    schema: &SchemaRef,
    props: &WriterProperties,
    encoder: &mut Encoder,
) -> Result<(Open, Coverage), SegmentError> {
    let from = (day * DAY).max(opts.records.since.unwrap_or(i64::MIN));
    let to = ((day + 1) * DAY).min(opts.records.until.map_or(i64::MAX, |u| u + 1));
    let date = &time(day * DAY)[..10];
    let rel = format!(
        "{}/{}/{date}.parquet",
        part(&info.cluster),
        part(&info.name())
    );
    let dest = dir.join(&rel);
    let parent = dest.parent().expect("a file in a directory");
    std::fs::create_dir_all(parent).map_err(|source| SegmentError::Io {
        path: parent.to_path_buf(),
        source,
    })?;
    let tmp = dest.with_extension("parquet.tmp");
    let out = std::fs::File::create(&tmp).map_err(|source| SegmentError::Io {
        path: tmp.clone(),
        source,
    })?;
    let writer =
        ArrowWriter::try_new(out, schema.clone(), Some(props.clone())).map_err(|source| {
            SegmentError::Parquet {
                path: dest.clone(),
                source,
            }
        })?;
    let writer = encoder.open(writer, &dest)?;
    let coverage = journal.coverage(info, now, false)?;
    let clip = |t: i64| t.clamp(from, to);
    let covered = match (coverage.from, coverage.to) {
        (Some(f), Some(t)) if f < to && t > from => Some((clip(f), clip(t))),
        _ => None,
    };
    let gaps = coverage
        .windows
        .iter()
        .filter(|w| w.from < to && w.to.is_none_or(|t| t > from))
        .map(|w| GapEntry {
            from: time(w.from),
            to: w.to.map(time),
            reason: w.reason.clone(),
        })
        .collect();
    let open = Open {
        meta,
        entry: FileEntry {
            path: rel,
            cluster: info.cluster.clone(),
            stream: info.name(),
            from: time(from),
            to: time(to),
            rows: 0,
            records: BTreeMap::new(),
            coverage: SliceCoverage {
                from: covered.map(|c| time(c.0)),
                to: covered.map(|c| time(c.1)),
                gaps,
            },
        },
        tmp,
        dest,
        writer,
        columns: Columns::new(),
        runs: CheckpointRuns::default(),
    };
    Ok((open, coverage))
}

#[cfg(test)]
mod tests {

    #[test]
    fn path_parts_hold_nothing_a_shell_reads_specially() {
        assert_eq!(
            super::part("deployments.v1.apps@*"),
            "deployments.v1.apps@%2A"
        );
        assert_eq!(
            super::part("configmaps.v1@shop?app in (web),tier!=db"),
            "configmaps.v1@shop%3Fapp%20in%20%28web%29,tier%21=db"
        );
        assert_eq!(super::part("a/b%c"), "a%2Fb%25c");
        assert_eq!(super::part("127.0.0.1-274505f6"), "127.0.0.1-274505f6");
    }

    use super::*;

    #[test]
    fn a_stream_name_is_one_path_part() {
        assert_eq!(part("deployments.v1.apps@shop"), "deployments.v1.apps@shop");
        assert_eq!(
            part("pods.v1@shop[app.kubernetes.io/name=web,x=50%]"),
            // `[` and `]` are a shell's globs too.
            "pods.v1@shop%5Bapp.kubernetes.io%2Fname=web,x=50%25%5D"
        );
    }

    /// The seqs a file holds of these rows (record, resourceVersion).
    fn thinned(rows: &[(&'static str, &str)]) -> Vec<i64> {
        let mut runs = CheckpointRuns::default();
        let mut written = Vec::new();
        for (i, &(record, rv)) in rows.iter().enumerate() {
            let line = Line {
                seq: Some(i as i64 + 1),
                record,
                resource_version: Some(rv),
                ..Line::default()
            };
            match runs.take(&line) {
                Take::Hold => {}
                Take::Write(held) => {
                    written.extend(held.and_then(|h| h.seq));
                    written.extend(line.seq);
                }
            }
        }
        written.extend(runs.end().and_then(|h| h.seq));
        written
    }

    #[test]
    fn a_run_of_checkpoints_of_one_version_is_its_first_and_its_last() {
        let cp = |rv| ("checkpoint", rv);
        // A quiet stream: its heartbeats all hold version 5.
        assert_eq!(thinned(&[cp("5"), cp("5"), cp("5"), cp("5")]), [1, 4]);
        assert_eq!(thinned(&[cp("5")]), [1]);
        assert_eq!(thinned(&[cp("5"), cp("5")]), [1, 2]);
        // A new version (a bookmark, an event's) starts a run; any other
        // row ends one, and a checkpoint after it starts another.
        assert_eq!(
            thinned(&[
                cp("5"),
                cp("5"),
                cp("5"),
                ("event", "6"),
                cp("6"),
                cp("6"),
                cp("6"),
                cp("7"),
                cp("7"),
                ("gap", "7"),
                cp("7"),
                cp("7"),
            ]),
            [1, 3, 4, 5, 7, 8, 9, 10, 11, 12]
        );
    }

    #[test]
    fn every_column_of_the_schema_is_filled() {
        let mut columns = Columns::new();
        let body = r#"{"metadata":{"uid":"u-1","managedFields":[{"manager":"kubectl-edit","time":"2026-12-01T13:00:00Z"}]}}"#;
        let line = |body: Option<&str>| Line {
            seq: Some(7),
            record: "event",
            cluster: "c",
            at: 1_796_130_000_000,
            watch_type: Some("MODIFIED"),
            name: Some("frontend"),
            body: body.map(|b| b.as_bytes().to_vec()),
            ..Line::default()
        };
        let by = (Some("alice".into()), "exact");
        columns.push(line(Some(body)), "deployments.v1.apps@shop", Some(&by));
        // Bytes that are not JSON: no object, uid or manager.
        columns.push(
            line(Some("{\"metadata\":")),
            "deployments.v1.apps@shop",
            None,
        );
        columns.push(line(None), "deployments.v1.apps@shop", None);
        let batch = columns.finish().complete(&schema());
        assert_eq!(batch.num_rows(), 3);
        assert_eq!(batch.num_columns(), schema().fields().len());
        let text = |name: &str| {
            let c = batch
                .column_by_name(name)
                .unwrap()
                .as_any()
                .downcast_ref::<arrow_array::StringArray>()
                .unwrap()
                .clone();
            (0..3)
                .map(|i| arrow_array::Array::is_valid(&c, i).then(|| c.value(i).to_string()))
                .collect::<Vec<_>>()
        };
        assert_eq!(text("manager"), [Some("kubectl-edit".into()), None, None]);
        assert_eq!(text("uid"), [Some("u-1".into()), None, None]);
        assert_eq!(text("object"), [Some(body.into()), None, None]);
        assert_eq!(text("actor"), [Some("alice".into()), None, None]);
        assert_eq!(text("name"), vec![Some("frontend".to_string()); 3]);
    }
}
