//! Audit events in the journal (schema 7; docs/audit.md, "What is kept").
//!
//! [`AuditImport`] gathers the writes of one or more audit logs in memory,
//! resolving each to the recorded objects it touched, then stores them in
//! short transactions so that a recorder writing beside it never waits long.
//! Readers get an object's writes with [`Journal::audit_writes`] and who made
//! them with [`Journal::audit_who`].

use super::{Journal, JournalError, StreamId};
use crate::audit::{AuditEvent, Verb, Who};
use rusqlite::types::{Value as SqlValue, ValueRef};
use rusqlite::{OptionalExtension, params};
use std::collections::HashMap;

/// The audit events and coverage of one cluster.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AuditRows {
    pub writes: Vec<AuditEvent>,
    /// Per write: its subresource is not known (stored before schema 9;
    /// written as null).
    pub unknown_subresource: Vec<bool>,
    /// `(from, to, source)`.
    pub coverage: Vec<(i64, i64, String)>,
}

/// Rows stored per transaction.
const CHUNK: usize = 20_000;

/// One audit event on a recorded object, as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredWrite {
    pub object_id: i64,
    pub at: i64,
    pub audit_id: String,
    pub verb: Verb,
    /// `audit_actors.id`: equal ids are the same actor.
    pub actor: i64,
    pub uid: Option<String>,
    pub resource_version: Option<String>,
    /// The subresource written (`""`: the object itself); `None` when not
    /// known (stored before schema version 9).
    pub subresource: Option<String>,
}

/// What an import stored.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Stored {
    /// Rows new to the journal.
    pub new: u64,
    /// Rows it held already (the same line imported before).
    pub known: u64,
}

struct Row {
    object_id: i64,
    at: i64,
    audit_id: SqlValue,
    verb: Verb,
    actor: usize,
    uid: Option<usize>,
    resource_version: Option<SqlValue>,
    /// `None`: not known (an export of events stored before schema 9).
    subresource: Option<String>,
}

/// Audit events of one cluster on their way into the journal.
pub struct AuditImport<'j> {
    journal: &'j Journal,
    cluster: String,
    /// The cluster's streams by (group, resource): (id, namespace or "" for all).
    streams: HashMap<(String, String), Vec<(StreamId, String)>>,
    /// Objects looked up so far, by `group/resource/namespace/name` (names
    /// cannot hold a `/`), and the key's buffer, reused for every line.
    objects: HashMap<String, Vec<i64>>,
    key: String,
    actors: HashMap<Who, usize>,
    uids: HashMap<String, usize>,
    rows: Vec<Row>,
    coverage: Vec<(i64, i64, String)>,
    /// Writes on objects this journal never recorded.
    pub unrecorded: u64,
}

impl<'j> AuditImport<'j> {
    pub fn new(journal: &'j Journal, cluster: &str) -> Result<AuditImport<'j>, JournalError> {
        let mut streams: HashMap<(String, String), Vec<(StreamId, String)>> = HashMap::new();
        let mut stmt = journal
            .conn()
            .prepare("SELECT id, grp, resource, namespace FROM streams WHERE cluster_id = ?1")
            .map_err(|e| journal.err(e))?;
        let rows = stmt
            .query_map(params![cluster], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })
            .map_err(|e| journal.err(e))?;
        for row in rows {
            let (id, grp, resource, namespace): (i64, String, String, String) =
                row.map_err(|e| journal.err(e))?;
            streams
                .entry((grp, resource))
                .or_default()
                .push((id, namespace));
        }
        Ok(AuditImport {
            journal,
            cluster: cluster.to_string(),
            streams,
            objects: HashMap::new(),
            key: String::new(),
            actors: HashMap::new(),
            uids: HashMap::new(),
            rows: Vec::new(),
            coverage: Vec::new(),
            unrecorded: 0,
        })
    }

    /// Keeps one write, if it touched a recorded object (then `true`).
    pub fn add(&mut self, e: AuditEvent) -> Result<bool, JournalError> {
        self.add_with(e, true)
    }

    /// [`AuditImport::add`]; `subresource_known` false keeps its
    /// subresource as not known (it was not, where it comes from).
    pub fn add_with(
        &mut self,
        e: AuditEvent,
        subresource_known: bool,
    ) -> Result<bool, JournalError> {
        let ids = self.objects_of(&e)?;
        if ids.is_empty() {
            self.unrecorded += 1;
            return Ok(false);
        }
        let next = self.actors.len();
        let actor = *self.actors.entry(e.who).or_insert(next);
        let uid = e.uid.map(|u| {
            let next = self.uids.len();
            *self.uids.entry(u).or_insert(next)
        });
        let audit_id = uuid_value(&e.audit_id);
        let rv = e.resource_version.as_deref().map(rv_value);
        for object_id in ids {
            self.rows.push(Row {
                object_id,
                at: e.at,
                audit_id: audit_id.clone(),
                verb: e.verb,
                actor,
                uid,
                resource_version: rv.clone(),
                subresource: subresource_known.then(|| e.subresource.clone()),
            });
        }
        Ok(true)
    }

    /// Notes that a log (`source`) covers `[from, to]`.
    pub fn covers(&mut self, from: i64, to: i64, source: &str) {
        self.coverage.push((from, to, source.to_string()));
    }

    /// Writes everything gathered: actors and uids first, then the rows a
    /// chunk per transaction, and the coverage with the last chunk (so a
    /// coverage row is never there without its events).
    pub fn store(self) -> Result<Stored, JournalError> {
        let j = self.journal;
        let err = |e| j.err(e);
        let conn = j.conn();
        let mut actor_ids = vec![0i64; self.actors.len()];
        let mut uid_ids = vec![0i64; self.uids.len()];
        {
            let tx = conn.unchecked_transaction().map_err(err)?;
            for (who, local) in &self.actors {
                let text = serde_json::to_string(who).expect("plain strings serialise");
                actor_ids[*local] =
                    intern(&tx, "audit_actors", "who", SqlValue::Text(text)).map_err(err)?;
            }
            for (uid, local) in &self.uids {
                uid_ids[*local] = intern(&tx, "audit_uids", "uid", uuid_value(uid)).map_err(err)?;
            }
            tx.commit().map_err(err)?;
        }
        let mut stored = Stored::default();
        // In key order, new rows go at the ends of B-tree pages and fill them,
        // instead of splitting pages half full.
        let mut rows = self.rows;
        rows.sort_by_key(|r| (r.object_id, r.at));
        let chunks: Vec<&[Row]> = if rows.is_empty() {
            vec![&[]]
        } else {
            rows.chunks(CHUNK).collect()
        };
        let last = chunks.len() - 1;
        for (i, chunk) in chunks.into_iter().enumerate() {
            let tx = conn.unchecked_transaction().map_err(err)?;
            {
                let mut insert = tx
                    .prepare_cached(
                        "INSERT OR IGNORE INTO audit_events
                         (object_id, at, audit_id, verb, actor_id, uid_id, resource_version,
                          subresource)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                    )
                    .map_err(err)?;
                for r in chunk {
                    let n = insert
                        .execute(params![
                            r.object_id,
                            r.at,
                            r.audit_id,
                            r.verb.code(),
                            actor_ids[r.actor],
                            r.uid.map(|u| uid_ids[u]),
                            r.resource_version,
                            r.subresource,
                        ])
                        .map_err(err)?;
                    if n == 1 {
                        stored.new += 1;
                    } else {
                        stored.known += 1;
                    }
                }
                if i == last {
                    let mut cover = tx
                        .prepare_cached(
                            "INSERT OR IGNORE INTO audit_coverage(cluster_id, from_at, to_at, source)
                             VALUES (?1, ?2, ?3, ?4)",
                        )
                        .map_err(err)?;
                    for (from, to, source) in &self.coverage {
                        cover
                            .execute(params![self.cluster, from, to, source])
                            .map_err(err)?;
                    }
                }
            }
            tx.commit().map_err(err)?;
        }
        Ok(stored)
    }

    /// The recorded objects an audit event names: in every stream of the
    /// cluster that watches its resource in its namespace.
    fn objects_of(&mut self, e: &AuditEvent) -> Result<Vec<i64>, JournalError> {
        self.key.clear();
        for part in [&e.group, &e.resource, &e.namespace, &e.name] {
            self.key.push_str(part);
            self.key.push('/');
        }
        if let Some(ids) = self.objects.get(self.key.as_str()) {
            return Ok(ids.clone());
        }
        let mut ids = Vec::new();
        if let Some(streams) = self.streams.get(&(e.group.clone(), e.resource.clone())) {
            let mut find = self
                .journal
                .conn()
                .prepare_cached(
                    "SELECT id FROM objects WHERE stream_id = ?1 AND namespace = ?2 AND name = ?3",
                )
                .map_err(|err| self.journal.err(err))?;
            for (stream, namespace) in streams {
                if !namespace.is_empty() && *namespace != e.namespace {
                    continue;
                }
                if let Some(id) = find
                    .query_row(params![stream, e.namespace, e.name], |r| r.get(0))
                    .optional()
                    .map_err(|err| self.journal.err(err))?
                {
                    ids.push(id);
                }
            }
        }
        self.objects.insert(self.key.clone(), ids.clone());
        Ok(ids)
    }
}

fn intern(
    tx: &rusqlite::Transaction<'_>,
    table: &str,
    column: &str,
    value: SqlValue,
) -> rusqlite::Result<i64> {
    tx.prepare_cached(&format!(
        "INSERT OR IGNORE INTO {table}({column}) VALUES (?1)"
    ))?
    .execute(params![value])?;
    tx.prepare_cached(&format!("SELECT id FROM {table} WHERE {column} = ?1"))?
        .query_row(params![value], |r| r.get(0))
}

/// An auditID or uid as stored: 16 bytes when it is a UUID, else its text.
fn uuid_value(id: &str) -> SqlValue {
    let hex: String = id.chars().filter(|c| *c != '-').collect();
    let uuid_shape = id.len() == 36
        && id.char_indices().all(|(i, c)| {
            if matches!(i, 8 | 13 | 18 | 23) {
                c == '-'
            } else {
                c.is_ascii_hexdigit() && !c.is_ascii_uppercase()
            }
        });
    if uuid_shape {
        let bytes = (0..16)
            .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex digits"))
            .collect();
        SqlValue::Blob(bytes)
    } else {
        SqlValue::Text(id.to_string())
    }
}

fn uuid_text(v: ValueRef<'_>) -> String {
    match v {
        ValueRef::Blob(b) => match <&[u8; 16]>::try_from(b) {
            Ok(bytes) => crate::audit::uuid_text(bytes),
            Err(_) => String::from_utf8_lossy(b).into_owned(),
        },
        ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
        _ => String::new(),
    }
}

/// A resourceVersion as stored: an integer when it is plain decimal (as etcd's
/// are), else its text, so that it reads back as it was written.
fn rv_value(rv: &str) -> SqlValue {
    let plain = !rv.is_empty()
        && rv.bytes().all(|b| b.is_ascii_digit())
        && (rv == "0" || !rv.starts_with('0'));
    match rv.parse::<i64>() {
        Ok(n) if plain => SqlValue::Integer(n),
        _ => SqlValue::Text(rv.to_string()),
    }
}

fn rv_text(v: ValueRef<'_>) -> Option<String> {
    match v {
        ValueRef::Integer(n) => Some(n.to_string()),
        ValueRef::Text(t) => Some(String::from_utf8_lossy(t).into_owned()),
        _ => None,
    }
}

/// Where `record --audit-log` stopped reading a file (`audit_follow`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FollowPosition {
    pub device: u64,
    pub inode: u64,
    pub offset: u64,
    /// The log was read without a break up to this time (ms).
    pub covered_to: Option<i64>,
}

impl Journal {
    /// Where reading `path` stopped last time, if it was ever followed.
    pub fn follow_position(&self, path: &str) -> Result<Option<FollowPosition>, JournalError> {
        self.conn()
            .prepare_cached(
                "SELECT device, inode, offset, covered_to FROM audit_follow WHERE path = ?1",
            )
            .and_then(|mut s| {
                s.query_row(params![path], |r| {
                    Ok(FollowPosition {
                        device: r.get::<_, i64>(0)? as u64,
                        inode: r.get::<_, i64>(1)? as u64,
                        offset: r.get::<_, i64>(2)? as u64,
                        covered_to: r.get(3)?,
                    })
                })
                .optional()
            })
            .map_err(|e| self.err(e))
    }

    /// Saves where reading `path` stopped.
    pub fn save_follow_position(
        &self,
        path: &str,
        cluster: &str,
        at: &FollowPosition,
        now: i64,
    ) -> Result<(), JournalError> {
        self.conn()
            .prepare_cached(
                "INSERT INTO audit_follow(path, cluster_id, device, inode, offset, covered_to, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                 ON CONFLICT(path) DO UPDATE SET cluster_id = ?2, device = ?3, inode = ?4,
                     offset = ?5, covered_to = ?6, updated_at = ?7",
            )
            .and_then(|mut s| {
                s.execute(params![
                    path,
                    cluster,
                    at.device as i64,
                    at.inode as i64,
                    at.offset as i64,
                    at.covered_to,
                    now
                ])
            })
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    /// The audit events on `object` that completed in `[from, to]`, oldest first.
    pub fn audit_writes(
        &self,
        object: i64,
        from: i64,
        to: i64,
    ) -> Result<Vec<StoredWrite>, JournalError> {
        let err = |e| self.err(e);
        let mut stmt = self
            .conn()
            .prepare_cached(
                "SELECT e.at, e.audit_id, e.verb, e.actor_id, u.uid, e.resource_version,
                        e.subresource
                 FROM audit_events e LEFT JOIN audit_uids u ON u.id = e.uid_id
                 WHERE e.object_id = ?1 AND e.at BETWEEN ?2 AND ?3
                 ORDER BY e.at, e.audit_id",
            )
            .map_err(err)?;
        let mut rows = stmt.query(params![object, from, to]).map_err(err)?;
        let mut out = Vec::new();
        // Bounded by the rows of one object's window.
        while let Some(r) = rows.next().map_err(err)? {
            let Some(verb) = Verb::from_code(r.get(2).map_err(err)?) else {
                continue;
            };
            out.push(StoredWrite {
                object_id: object,
                at: r.get(0).map_err(err)?,
                audit_id: uuid_text(r.get_ref(1).map_err(err)?),
                verb,
                actor: r.get(3).map_err(err)?,
                uid: match r.get_ref(4).map_err(err)? {
                    ValueRef::Null => None,
                    v => Some(uuid_text(v)),
                },
                resource_version: rv_text(r.get_ref(5).map_err(err)?),
                subresource: r.get(6).map_err(err)?,
            });
        }
        Ok(out)
    }

    /// Who actor `id` of `audit_actors` is.
    pub fn audit_who(&self, id: i64) -> Result<Who, JournalError> {
        let text: String = self
            .conn()
            .prepare_cached("SELECT who FROM audit_actors WHERE id = ?1")
            .and_then(|mut s| s.query_row(params![id], |r| r.get(0)))
            .map_err(|e| self.err(e))?;
        serde_json::from_str(&text).map_err(|e| JournalError::Corrupt {
            path: self.path().to_path_buf(),
            detail: format!("audit actor {id}: {e}"),
        })
    }

    /// The time ranges the cluster's imported audit logs cover, each once.
    pub fn audit_coverage(&self, cluster: &str) -> Result<Vec<(i64, i64)>, JournalError> {
        let err = |e| self.err(e);
        let mut stmt = self
            .conn()
            .prepare_cached(
                "SELECT DISTINCT from_at, to_at FROM audit_coverage WHERE cluster_id = ?1
                 ORDER BY 1, 2",
            )
            .map_err(err)?;
        let rows = stmt
            .query_map(params![cluster], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(err)?;
        rows.collect::<Result<_, _>>().map_err(err)
    }

    /// Every audit event kept for `cluster` that completed in `[from, to]`
    /// (on objects of `namespace`, when given), once each however many
    /// streams hold its object, oldest first; and the stretches its audit
    /// logs covered that meet `[from, to]`. What `export` carries.
    pub fn audit_rows(
        &self,
        cluster: &str,
        namespace: Option<&str>,
        from: i64,
        to: i64,
    ) -> Result<AuditRows, JournalError> {
        let err = |e| self.err(e);
        let mut stmt = self
            .conn()
            .prepare(
                "SELECT e.at, e.audit_id, e.verb, a.who, u.uid, e.resource_version,
                        s.grp, s.resource, o.namespace, o.name, e.subresource
                 FROM audit_events e
                 JOIN objects o ON o.id = e.object_id
                 JOIN streams s ON s.id = o.stream_id
                 JOIN audit_actors a ON a.id = e.actor_id
                 LEFT JOIN audit_uids u ON u.id = e.uid_id
                 WHERE s.cluster_id = ?1 AND e.at BETWEEN ?2 AND ?3
                   AND (?4 IS NULL OR o.namespace = ?4)
                 ORDER BY e.at, e.audit_id, s.grp, s.resource, o.namespace, o.name",
            )
            .map_err(err)?;
        let mut rows = stmt
            .query(params![cluster, from, to, namespace])
            .map_err(err)?;
        let mut out = AuditRows::default();
        // Bounded by the cluster's audit events.
        while let Some(r) = rows.next().map_err(err)? {
            let Some(verb) = Verb::from_code(r.get(2).map_err(err)?) else {
                continue;
            };
            let who_text: String = r.get(3).map_err(err)?;
            let who: Who = serde_json::from_str(&who_text).map_err(|e| JournalError::Corrupt {
                path: self.path().to_path_buf(),
                detail: format!("audit actor: {e}"),
            })?;
            let event = AuditEvent {
                audit_id: uuid_text(r.get_ref(1).map_err(err)?),
                at: r.get(0).map_err(err)?,
                verb,
                who,
                group: r.get(6).map_err(err)?,
                resource: r.get(7).map_err(err)?,
                subresource: String::new(),
                namespace: r.get(8).map_err(err)?,
                name: r.get(9).map_err(err)?,
                uid: match r.get_ref(4).map_err(err)? {
                    ValueRef::Null => None,
                    v => Some(uuid_text(v)),
                },
                resource_version: rv_text(r.get_ref(5).map_err(err)?),
            };
            let subresource: Option<String> = r.get(10).map_err(err)?;
            let mut event = event;
            if let Some(sub) = &subresource {
                event.subresource.clone_from(sub);
            }
            // The same event on the object of several streams: once.
            let same = |o: &AuditEvent| {
                o.at == event.at
                    && o.audit_id == event.audit_id
                    && o.group == event.group
                    && o.resource == event.resource
                    && o.namespace == event.namespace
                    && o.name == event.name
            };
            if !out.writes.last().is_some_and(same) {
                out.unknown_subresource.push(subresource.is_none());
                out.writes.push(event);
            }
        }
        let mut cover = self
            .conn()
            .prepare(
                "SELECT from_at, to_at, source FROM audit_coverage
                 WHERE cluster_id = ?1 AND to_at >= ?2 AND from_at <= ?3 ORDER BY 1, 2, 3",
            )
            .map_err(err)?;
        out.coverage = cover
            .query_map(params![cluster, from, to], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .and_then(|rows| rows.collect())
            .map_err(err)?;
        Ok(out)
    }

    /// How many audit events the journal keeps, over every cluster.
    pub fn audit_event_count(&self) -> Result<u64, JournalError> {
        self.conn()
            .query_row("SELECT count(*) FROM audit_events", [], |r| {
                r.get::<_, i64>(0)
            })
            .map(|n| n as u64)
            .map_err(|e| self.err(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn audit_ids_and_resource_versions_read_back_as_written() {
        for id in [
            "7c1f3b0e-8a51-4c5e-9a3e-2f0d5b6a1c2d",
            "7C1F3B0E-8A51-4C5E-9A3E-2F0D5B6A1C2D",
            "not-a-uuid",
            "0123456789abcdef",
        ] {
            let v = uuid_value(id);
            let back = match &v {
                SqlValue::Blob(b) => uuid_text(ValueRef::Blob(b)),
                SqlValue::Text(t) => uuid_text(ValueRef::Text(t.as_bytes())),
                _ => unreachable!(),
            };
            assert_eq!(back, id);
        }
        assert!(matches!(
            uuid_value("7c1f3b0e-8a51-4c5e-9a3e-2f0d5b6a1c2d"),
            SqlValue::Blob(_)
        ));
        for rv in ["280", "0", "007", "12a", "", "99999999999999999999"] {
            let back = match rv_value(rv) {
                SqlValue::Integer(n) => rv_text(ValueRef::Integer(n)),
                SqlValue::Text(t) => rv_text(ValueRef::Text(t.as_bytes())),
                _ => unreachable!(),
            };
            assert_eq!(back.as_deref(), Some(rv));
        }
        assert_eq!(rv_value("280"), SqlValue::Integer(280));
    }
}
