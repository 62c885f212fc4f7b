//! Who made the changes, carried with the segments (docs/at-scale.md, "Who
//! did it"): the audit events a journal keeps for a cluster, and the time the
//! audit logs covered, as one Parquet file per cluster,
//! `DIR/CLUSTER/audit.parquet`. `import` stores them again, so a teammate's
//! journal names the same users for the same changes; SQL reads them beside
//! the streams' segments.
//!
//! A row is a write (`record = 'write'`: when it completed, its auditID and
//! verb, who, and the object it wrote with the resourceVersion it made) or a
//! stretch an audit log covered (`record = 'coverage'`).

use super::ClusterMeta;
use crate::audit::{AuditEvent, Verb, Who};
pub use crate::journal::audit::AuditRows;
use arrow_array::builder::{StringBuilder, TimestampMillisecondBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::TimestampMillisecondType;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::file::properties::WriterProperties;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Arc;

/// The key of an audit file's description in its Parquet key-value metadata.
pub const META_KEY: &str = "krply.audit";
/// [`AuditMeta::format`] of this layout.
pub const FORMAT: &str = "krply-audit/1";
/// The file of a cluster, under its directory.
pub const FILE: &str = "audit.parquet";

/// What an audit file is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditMeta {
    pub format: String,
    /// The exporting journal.
    pub journal: String,
    pub cluster: ClusterMeta,
    pub writes: u64,
    pub coverage: u64,
}

/// The columns.
pub fn schema() -> SchemaRef {
    let ts = || DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()));
    let text = |name: &str| Field::new(name, DataType::Utf8, true);
    Arc::new(Schema::new(vec![
        Field::new("record", DataType::Utf8, false),
        Field::new("at", ts(), true),
        text("audit_id"),
        text("verb"),
        text("user"),
        // The whole actor as JSON: user, groups, impersonator, user agent,
        // source IPs.
        text("who"),
        text("api_group"),
        text("resource"),
        text("subresource"),
        text("namespace"),
        text("name"),
        text("uid"),
        text("resource_version"),
        Field::new("from", ts(), true),
        Field::new("to", ts(), true),
        text("source"),
    ]))
}

/// Writes `rows` to `path` (aside, then renamed into place).
pub fn write(
    path: &Path,
    meta: &AuditMeta,
    rows: &AuditRows,
    props: WriterProperties,
) -> Result<(), WriteError> {
    let ts = || TimestampMillisecondBuilder::new().with_timezone("UTC");
    let (mut record, mut audit_id, mut verb, mut user, mut who) = (
        StringBuilder::new(),
        StringBuilder::new(),
        StringBuilder::new(),
        StringBuilder::new(),
        StringBuilder::new(),
    );
    let (mut group, mut resource, mut subresource, mut namespace, mut name) = (
        StringBuilder::new(),
        StringBuilder::new(),
        StringBuilder::new(),
        StringBuilder::new(),
        StringBuilder::new(),
    );
    let (mut uid, mut rv, mut source) = (
        StringBuilder::new(),
        StringBuilder::new(),
        StringBuilder::new(),
    );
    let (mut at, mut from, mut to) = (ts(), ts(), ts());
    for (i, e) in rows.writes.iter().enumerate() {
        record.append_value("write");
        at.append_value(e.at);
        audit_id.append_value(&e.audit_id);
        verb.append_value(e.verb.as_str());
        user.append_value(&e.who.user);
        who.append_value(serde_json::to_string(&e.who).expect("plain strings serialise"));
        group.append_value(&e.group);
        resource.append_value(&e.resource);
        if rows.unknown_subresource.get(i).copied().unwrap_or(false) {
            subresource.append_null();
        } else {
            subresource.append_value(&e.subresource);
        }
        namespace.append_value(&e.namespace);
        name.append_value(&e.name);
        uid.append_option(e.uid.as_deref());
        rv.append_option(e.resource_version.as_deref());
        from.append_null();
        to.append_null();
        source.append_null();
    }
    for (f, t, s) in &rows.coverage {
        record.append_value("coverage");
        at.append_null();
        for b in [
            &mut audit_id,
            &mut verb,
            &mut user,
            &mut who,
            &mut group,
            &mut resource,
            &mut subresource,
            &mut namespace,
            &mut name,
            &mut uid,
            &mut rv,
        ] {
            b.append_null();
        }
        from.append_value(*f);
        to.append_value(*t);
        source.append_value(s);
    }
    let columns: Vec<ArrayRef> = vec![
        Arc::new(record.finish()),
        Arc::new(at.finish()),
        Arc::new(audit_id.finish()),
        Arc::new(verb.finish()),
        Arc::new(user.finish()),
        Arc::new(who.finish()),
        Arc::new(group.finish()),
        Arc::new(resource.finish()),
        Arc::new(subresource.finish()),
        Arc::new(namespace.finish()),
        Arc::new(name.finish()),
        Arc::new(uid.finish()),
        Arc::new(rv.finish()),
        Arc::new(from.finish()),
        Arc::new(to.finish()),
        Arc::new(source.finish()),
    ];
    let schema = schema();
    let batch = RecordBatch::try_new(schema.clone(), columns).expect("columns match the schema");
    let tmp = path.with_extension("parquet.tmp");
    let file = std::fs::File::create(&tmp).map_err(WriteError::Io)?;
    let mut writer =
        ArrowWriter::try_new(file, schema, Some(props)).map_err(WriteError::Parquet)?;
    writer.write(&batch).map_err(WriteError::Parquet)?;
    writer.append_key_value_metadata(parquet::file::metadata::KeyValue::new(
        META_KEY.to_string(),
        serde_json::to_string(meta).expect("audit metadata serializes"),
    ));
    writer.close().map_err(WriteError::Parquet)?;
    std::fs::rename(&tmp, path).map_err(WriteError::Io)
}

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error(transparent)]
    Io(std::io::Error),
    #[error(transparent)]
    Parquet(parquet::errors::ParquetError),
}

/// The description of an audit file, `None` when `path` is not one (a
/// stream's segment, or not krply's).
pub fn meta_of(path: &Path) -> Option<AuditMeta> {
    let file = std::fs::File::open(path).ok()?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).ok()?;
    let text = builder
        .metadata()
        .file_metadata()
        .key_value_metadata()?
        .iter()
        .find(|kv| kv.key == META_KEY)?
        .value
        .clone()?;
    serde_json::from_str(&text).ok()
}

/// Reads an audit file's rows; the error says what is wrong with it.
pub fn read(path: &Path) -> Result<AuditRows, String> {
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .and_then(|b| b.build())
        .map_err(|e| e.to_string())?;
    let mut out = AuditRows::default();
    // Bounded by the file's batches.
    for batch in reader {
        let batch = batch.map_err(|e| e.to_string())?;
        let text = |name: &str| -> Result<&arrow_array::StringArray, String> {
            batch
                .column_by_name(name)
                .and_then(|c| c.as_string_opt::<i32>())
                .ok_or_else(|| format!("no text column {name}"))
        };
        let time =
            |name: &str| -> Result<&arrow_array::PrimitiveArray<TimestampMillisecondType>, String> {
                batch
                    .column_by_name(name)
                    .and_then(|c| c.as_primitive_opt::<TimestampMillisecondType>())
                    .ok_or_else(|| format!("no time column {name}"))
            };
        let (record, at, audit_id, verb, who) = (
            text("record")?,
            time("at")?,
            text("audit_id")?,
            text("verb")?,
            text("who")?,
        );
        let (group, resource, subresource, namespace, name) = (
            text("api_group")?,
            text("resource")?,
            text("subresource")?,
            text("namespace")?,
            text("name")?,
        );
        let (uid, rv, from, to, source) = (
            text("uid")?,
            text("resource_version")?,
            time("from")?,
            time("to")?,
            text("source")?,
        );
        let opt = |a: &arrow_array::StringArray, i: usize| {
            (!a.is_null(i)).then(|| a.value(i).to_string())
        };
        for i in 0..batch.num_rows() {
            match record.value(i) {
                "write" => {
                    let verb = match verb.value(i) {
                        "create" => Verb::Create,
                        "update" => Verb::Update,
                        "patch" => Verb::Patch,
                        "delete" => Verb::Delete,
                        other => return Err(format!("row {i}: unknown verb {other:?}")),
                    };
                    let who: Who = serde_json::from_str(who.value(i))
                        .map_err(|e| format!("row {i}: who: {e}"))?;
                    out.unknown_subresource.push(subresource.is_null(i));
                    out.writes.push(AuditEvent {
                        audit_id: audit_id.value(i).to_string(),
                        at: at.value(i),
                        verb,
                        who,
                        group: group.value(i).to_string(),
                        resource: resource.value(i).to_string(),
                        subresource: opt(subresource, i).unwrap_or_default(),
                        namespace: namespace.value(i).to_string(),
                        name: name.value(i).to_string(),
                        uid: opt(uid, i),
                        resource_version: opt(rv, i),
                    });
                }
                "coverage" => {
                    out.coverage
                        .push((from.value(i), to.value(i), source.value(i).to_string()))
                }
                other => return Err(format!("row {i}: unknown record {other:?}")),
            }
        }
    }
    Ok(out)
}
