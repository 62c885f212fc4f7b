//! Audit events in the journal (schema 7; docs/audit.md, "What is kept").
//!
//! [`AuditImport`] gathers the writes of one or more audit logs in memory,
//! resolving each to the recorded objects it touched, then stores them in
//! short transactions so that a recorder writing beside it never waits long.
//! Readers get an object's writes with [`Journal::audit_writes`] and who made
//! them with [`Journal::audit_who`].

use super::audit_pack::{self, AuditId, PackError, PackedWrite, Rv};
use super::{IdMap, Journal, JournalError, StreamId};
use crate::audit::{AuditEvent, Verb, Who};
use rusqlite::types::{Value as SqlValue, ValueRef};
use rusqlite::{Connection, OptionalExtension, params};
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
    audit_id: AuditId,
    verb: Verb,
    actor: usize,
    uid: Option<usize>,
    resource_version: Option<Rv>,
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
        let audit_id = AuditId::parse(&e.audit_id);
        let rv = e.resource_version.as_deref().map(Rv::parse);
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

    /// Writes everything gathered: actors and uids first, then the writes,
    /// an object's at a time, in transactions of about [`CHUNK`] writes, and
    /// the coverage with the last one (so a coverage row is never there
    /// without its events).
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
                let value = match AuditId::parse(uid) {
                    AuditId::Uuid(bytes) => SqlValue::Blob(bytes.to_vec()),
                    AuditId::Text(text) => SqlValue::Text(text),
                };
                uid_ids[*local] = intern(&tx, "audit_uids", "uid", value).map_err(err)?;
            }
            tx.commit().map_err(err)?;
        }
        let mut rows = self.rows;
        rows.sort_by(|a, b| {
            (a.object_id, a.at)
                .cmp(&(b.object_id, b.at))
                .then_with(|| a.audit_id.cmp(&b.audit_id))
        });
        let mut stored = Stored::default();
        let mut tx = conn.unchecked_transaction().map_err(err)?;
        let mut in_tx = 0;
        let mut writes = Vec::new();
        // Bounded by the rows gathered: each object's once.
        for object in rows.chunk_by(|a, b| a.object_id == b.object_id) {
            writes.clear();
            writes.extend(object.iter().map(|r| PackedWrite {
                at: r.at,
                audit_id: r.audit_id.clone(),
                verb: r.verb,
                actor: actor_ids[r.actor],
                uid: r.uid.map(|u| uid_ids[u]),
                resource_version: r.resource_version.clone(),
                subresource: r.subresource.clone(),
            }));
            let added = add_writes(&tx, object[0].object_id, &writes).map_err(|e| match e {
                AddError::Sql(e) => j.err(e),
                AddError::Pack(e) => j.damaged_pack(object[0].object_id, e),
            })?;
            stored.new += added;
            stored.known += writes.len() as u64 - added;
            in_tx += writes.len();
            if in_tx >= CHUNK {
                tx.commit().map_err(err)?;
                tx = conn.unchecked_transaction().map_err(err)?;
                in_tx = 0;
            }
        }
        {
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
        tx.commit().map_err(err)?;
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

enum AddError {
    Sql(rusqlite::Error),
    Pack(PackError),
}

impl From<rusqlite::Error> for AddError {
    fn from(e: rusqlite::Error) -> AddError {
        AddError::Sql(e)
    }
}

/// Adds `new` (writes of `object` in key order) to its packs: the packs
/// whose time the new writes fall in are read, merged with them and written
/// again, cut as [`audit_pack::split`] cuts; a pack that comes out the same
/// is left as it is. A write whose key the object holds already is not added.
/// How many were added.
fn add_writes(conn: &Connection, object: i64, new: &[PackedWrite]) -> Result<u64, AddError> {
    let (Some(first), Some(last)) = (new.first(), new.last()) else {
        return Ok(0);
    };
    // The pack the first new write falls in (the last to start at or before
    // it), and every pack that starts before the last new write.
    let mut held: Vec<(i64, Vec<u8>)> = conn
        .prepare_cached(
            "SELECT first_at, data FROM audit_packs
             WHERE object_id = ?1
               AND first_at >= coalesce((SELECT max(first_at) FROM audit_packs
                                         WHERE object_id = ?1 AND first_at <= ?2), ?2)
               AND first_at <= ?3
             ORDER BY first_at",
        )?
        .query_map(params![object, first.at, last.at], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?
        .collect::<Result<_, _>>()?;
    let mut writes = Vec::new();
    for (first_at, data) in &held {
        writes.extend(audit_pack::decode(*first_at, data).map_err(AddError::Pack)?);
    }
    let (merged, added) = audit_pack::merge(writes, new);
    if added == 0 {
        return Ok(0);
    }
    for pack in audit_pack::split(&merged) {
        let data = audit_pack::encode(pack);
        let same = held
            .iter()
            .position(|(first_at, old)| *first_at == pack[0].at && *old == data);
        match same {
            Some(i) => {
                held.swap_remove(i);
            }
            None => {
                held.retain(|(first_at, _)| *first_at != pack[0].at);
                audit_pack::put(conn, object, pack)?;
            }
        }
    }
    let mut delete =
        conn.prepare_cached("DELETE FROM audit_packs WHERE object_id = ?1 AND first_at = ?2")?;
    for (first_at, _) in held {
        delete.execute(params![object, first_at])?;
    }
    Ok(added)
}

/// A uid as `audit_uids` holds it: 16 bytes when a UUID, else its text.
fn uid_text(v: ValueRef<'_>) -> String {
    match v {
        ValueRef::Blob(b) => match <&[u8; 16]>::try_from(b) {
            Ok(bytes) => crate::audit::uuid_text(bytes),
            Err(_) => String::from_utf8_lossy(b).into_owned(),
        },
        ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
        _ => String::new(),
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
                "SELECT first_at, data FROM audit_packs
                 WHERE object_id = ?1 AND first_at <= ?3 AND last_at >= ?2
                 ORDER BY first_at",
            )
            .map_err(err)?;
        let mut rows = stmt.query(params![object, from, to]).map_err(err)?;
        let mut uids = Uids::default();
        let mut out = Vec::new();
        // Bounded by the packs of one object's window.
        while let Some(r) = rows.next().map_err(err)? {
            let writes = self.pack_in(object, r, 0)?;
            for w in writes.into_iter().filter(|w| (from..=to).contains(&w.at)) {
                out.push(StoredWrite {
                    object_id: object,
                    at: w.at,
                    audit_id: w.audit_id.text(),
                    verb: w.verb,
                    actor: w.actor,
                    uid: uids.text(self, w.uid)?,
                    resource_version: w.resource_version.map(|rv| rv.text()),
                    subresource: w.subresource,
                });
            }
        }
        Ok(out)
    }

    /// The writes of the pack of `object` in `row`: its `first_at` in
    /// column `at`, its `data` in the next.
    fn pack_in(
        &self,
        object: i64,
        row: &rusqlite::Row<'_>,
        at: usize,
    ) -> Result<Vec<PackedWrite>, JournalError> {
        let err = |e| self.err(e);
        let data = row
            .get_ref(at + 1)
            .map_err(err)?
            .as_blob()
            .map_err(|e| err(e.into()))?;
        audit_pack::decode(row.get(at).map_err(err)?, data)
            .map_err(|e| self.damaged_pack(object, e))
    }

    fn damaged_pack(&self, object: i64, e: PackError) -> JournalError {
        JournalError::Corrupt {
            path: self.path().to_path_buf(),
            detail: format!("{e} (object {object})"),
        }
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
                "SELECT p.object_id, p.first_at, p.data, s.grp, s.resource, o.namespace, o.name
                 FROM audit_packs p
                 JOIN objects o ON o.id = p.object_id
                 JOIN streams s ON s.id = o.stream_id
                 WHERE s.cluster_id = ?1 AND p.first_at <= ?3 AND p.last_at >= ?2
                   AND (?4 IS NULL OR o.namespace = ?4)",
            )
            .map_err(err)?;
        let mut rows = stmt
            .query(params![cluster, from, to, namespace])
            .map_err(err)?;
        let mut uids = Uids::default();
        let mut actors: IdMap<i64, Who> = IdMap::default();
        let mut found: Vec<(AuditEvent, bool, AuditId)> = Vec::new();
        // Bounded by the cluster's audit packs.
        while let Some(r) = rows.next().map_err(err)? {
            let object: i64 = r.get(0).map_err(err)?;
            let writes = self.pack_in(object, r, 1)?;
            let (group, resource, ns, name): (String, String, String, String) = (
                r.get(3).map_err(err)?,
                r.get(4).map_err(err)?,
                r.get(5).map_err(err)?,
                r.get(6).map_err(err)?,
            );
            for w in writes.into_iter().filter(|w| (from..=to).contains(&w.at)) {
                let who = match actors.get(&w.actor) {
                    Some(who) => who.clone(),
                    None => {
                        let who = self.audit_who(w.actor)?;
                        actors.insert(w.actor, who.clone());
                        who
                    }
                };
                let unknown = w.subresource.is_none();
                found.push((
                    AuditEvent {
                        audit_id: w.audit_id.text(),
                        at: w.at,
                        verb: w.verb,
                        who,
                        group: group.clone(),
                        resource: resource.clone(),
                        subresource: w.subresource.unwrap_or_default(),
                        namespace: ns.clone(),
                        name: name.clone(),
                        uid: uids.text(self, w.uid)?,
                        resource_version: w.resource_version.map(|rv| rv.text()),
                    },
                    unknown,
                    w.audit_id,
                ));
            }
        }
        // Oldest first, as `audit_events` was read: by time, auditID (text
        // before UUIDs, as SQLite ordered them) and object.
        found.sort_by(|(a, _, a_id), (b, _, b_id)| {
            a.at.cmp(&b.at).then_with(|| a_id.cmp(b_id)).then_with(|| {
                (&a.group, &a.resource, &a.namespace, &a.name).cmp(&(
                    &b.group,
                    &b.resource,
                    &b.namespace,
                    &b.name,
                ))
            })
        });
        let mut out = AuditRows::default();
        for (event, unknown, _) in found {
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
                out.unknown_subresource.push(unknown);
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
            .query_row(
                "SELECT coalesce(sum(writes), 0) FROM audit_packs",
                [],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n as u64)
            .map_err(|e| self.err(e))
    }
}

/// Uids by `audit_uids.id`, read once each.
#[derive(Default)]
struct Uids(IdMap<i64, String>);

impl Uids {
    fn text(&mut self, j: &Journal, id: Option<i64>) -> Result<Option<String>, JournalError> {
        let Some(id) = id else { return Ok(None) };
        if let Some(t) = self.0.get(&id) {
            return Ok(Some(t.clone()));
        }
        let text = j
            .conn()
            .prepare_cached("SELECT uid FROM audit_uids WHERE id = ?1")
            .and_then(|mut s| s.query_row(params![id], |r| Ok(uid_text(r.get_ref(0)?))))
            .map_err(|e| j.err(e))?;
        self.0.insert(id, text.clone());
        Ok(Some(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn packs_table() -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE audit_packs (
                object_id INTEGER NOT NULL,
                first_at  INTEGER NOT NULL,
                last_at   INTEGER NOT NULL,
                writes    INTEGER NOT NULL,
                data      BLOB NOT NULL,
                PRIMARY KEY (object_id, first_at)
            ) WITHOUT ROWID;",
        )
        .unwrap();
        conn
    }

    fn write(at: i64, id: u8, actor: i64) -> PackedWrite {
        PackedWrite {
            at,
            audit_id: AuditId::Text(format!("id-{id}")),
            verb: Verb::Update,
            actor,
            uid: Some(1),
            resource_version: Some(Rv::Int(at * 10)),
            subresource: Some("status".to_string()),
        }
    }

    /// Every pack of `object`: (first_at, last_at, writes, decoded).
    fn packs(conn: &Connection, object: i64) -> Vec<(i64, i64, i64, Vec<PackedWrite>)> {
        conn.prepare(
            "SELECT first_at, last_at, writes, data FROM audit_packs WHERE object_id = ?1
             ORDER BY first_at",
        )
        .unwrap()
        .query_map(params![object], |r| {
            let first_at: i64 = r.get(0)?;
            let data: Vec<u8> = r.get(3)?;
            Ok((
                first_at,
                r.get(1)?,
                r.get(2)?,
                audit_pack::decode(first_at, &data).unwrap(),
            ))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
    }

    proptest! {
        /// However the writes come (batches in any order, writes again),
        /// the packs hold each key once, in order, and never overlap; the
        /// first write of a key is the one kept.
        #[test]
        fn writes_added_in_any_batches_are_packed_once_in_order(
            batches in prop::collection::vec(
                prop::collection::vec((0i64..2, 0i64..400, 0u8..3), 0..80), 1..8),
        ) {
            let conn = packs_table();
            let mut expected: Vec<(i64, PackedWrite)> = Vec::new();
            let mut added_total = 0;
            for (b, batch) in batches.iter().enumerate() {
                for object in 0..2 {
                    let mut new: Vec<PackedWrite> = batch
                        .iter()
                        .filter(|(o, _, _)| *o == object)
                        .map(|(_, at, id)| write(*at, *id, b as i64))
                        .collect();
                    new.sort_by(PackedWrite::key_cmp);
                    for w in &new {
                        if !expected.iter().any(|(o, e)| *o == object && e.key_cmp(w).is_eq()) {
                            expected.push((object, w.clone()));
                        }
                    }
                    added_total += match add_writes(&conn, object, &new) {
                        Ok(n) => n,
                        Err(_) => panic!("adding failed"),
                    };
                }
            }
            prop_assert_eq!(added_total, expected.len() as u64);
            for object in 0..2 {
                let mut want: Vec<PackedWrite> = expected
                    .iter()
                    .filter(|(o, _)| *o == object)
                    .map(|(_, w)| w.clone())
                    .collect();
                want.sort_by(PackedWrite::key_cmp);
                let packs = packs(&conn, object);
                let mut got = Vec::new();
                for (i, (first_at, last_at, n, writes)) in packs.iter().enumerate() {
                    prop_assert!(!writes.is_empty());
                    prop_assert_eq!(*first_at, writes[0].at);
                    prop_assert_eq!(*last_at, writes[writes.len() - 1].at);
                    prop_assert_eq!(*n as usize, writes.len());
                    if let Some((next_first, ..)) = packs.get(i + 1) {
                        prop_assert!(*last_at < *next_first);
                    }
                    got.extend(writes.iter().cloned());
                }
                prop_assert_eq!(got, want);
            }
        }
    }

    #[test]
    fn appending_one_write_rewrites_the_last_pack_only() {
        let conn = packs_table();
        let first: Vec<PackedWrite> = (0..70).map(|i| write(i, 0, 1)).collect();
        assert_eq!(add_writes(&conn, 5, &first).ok(), Some(70));
        let before = packs(&conn, 5);
        assert_eq!(before.len(), 3);
        assert_eq!(add_writes(&conn, 5, &[write(100, 0, 1)]).ok(), Some(1));
        let after = packs(&conn, 5);
        assert_eq!(after[..2], before[..2]);
        assert_eq!(after[2].3.len(), 7);
        assert_eq!(add_writes(&conn, 5, &[write(100, 0, 9)]).ok(), Some(0));
        assert_eq!(packs(&conn, 5), after);
    }
}
