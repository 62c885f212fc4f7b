//! Audit events packed per object (schema version 10; docs/journal.md,
//! "Audit packs").
//!
//! A row of `audit_packs` holds up to [`PACK_WRITES`] audit events of one
//! object, in key order `(at, audit_id)`, encoded one after the other in a
//! blob. Consecutive writes of one object share most of what a row would
//! repeat: the time is a small step from the one before, the uid is the same,
//! the resourceVersion a step up. What stays whole is the auditID (16 bytes
//! when a UUID), which is exported and matched, so cannot be shortened.
//!
//! This module encodes, decodes and stores one pack ([`put`]);
//! [`super::audit`] decides which packs an import rewrites and reads them.
//!
//! # Layout
//!
//! A pack starts with one byte: 0, or 1 when its auditIDs are tagged (some
//! are not UUIDs). Then, per write:
//!
//! - one byte of flags: the verb (bits 0-1, its code less one), the
//!   subresource (bits 2-3: 0 the object itself, 1 `status`, 2 another, whose
//!   text follows, 3 not known), the uid (bits 4-5: 0 none, 1 the same as the
//!   write before in the pack, 2 its id follows) and the resourceVersion (bits
//!   6-7: 0 none, 1 an integer, 2 text that follows);
//! - the time, as a step from the write before (the first from the pack's
//!   `first_at`), a varint;
//! - the auditID: 16 bytes; in a tagged pack a varint first, 0 for 16 bytes
//!   of a UUID, else the length of its text plus one, and the text;
//! - the actor's id (`audit_actors.id`), a varint;
//! - the uid's id (`audit_uids.id`), a varint, when bits 4-5 say so;
//! - the resourceVersion: an integer as a zigzag varint step from the last
//!   integer one of the pack (from 0 for the first), or text;
//! - the subresource's text, when bits 2-3 say so.
//!
//! Text is a varint length and its bytes. Varints are LEB128, at most ten
//! bytes.

pub use super::wire::Rv;
use super::wire::{Damaged, Reader, put_text, put_varint, unzigzag, zigzag};
use crate::audit::Verb;
use rusqlite::{Connection, params};
use std::cmp::Ordering;

/// Writes per pack, at most: 32 writes of about 23 bytes each keep a pack's
/// row well inside one page (SQLite keeps up to about 2,000 bytes of an
/// index-tree row in its page at 8 KiB pages), and its key and row overhead
/// (about 17 bytes) under a byte a write. A pack is never split between two
/// writes of the same millisecond, so that packs' time ranges never overlap.
pub const PACK_WRITES: usize = 32;

/// In a debug build, the most writes a pack holds (1 to [`PACK_WRITES`]),
/// so that the truth checker's short histories write objects of several
/// packs (docs/truth.md). Release builds ignore it.
pub const DEBUG_PACK_WRITES_ENV: &str = "KRPLY_DEBUG_AUDIT_PACK_WRITES";

/// The most writes a pack this process writes holds: [`PACK_WRITES`], or
/// in a debug build [`DEBUG_PACK_WRITES_ENV`] when it is set.
pub fn pack_writes() -> usize {
    if !cfg!(debug_assertions) {
        return PACK_WRITES;
    }
    static WRITES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *WRITES.get_or_init(|| {
        std::env::var(DEBUG_PACK_WRITES_ENV)
            .ok()
            .and_then(|v| v.parse().ok())
            .filter(|n| (1..=PACK_WRITES).contains(n))
            .unwrap_or(PACK_WRITES)
    })
}

/// An auditID as stored: 16 bytes when it is a UUID, else its text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum AuditId {
    Uuid([u8; 16]),
    Text(String),
}

impl AuditId {
    /// 16 bytes when `id` is a lower-case UUID (as kube-apiserver writes
    /// them), else its text, so that it reads back as written.
    pub fn parse(id: &str) -> AuditId {
        let bytes = id.as_bytes();
        let uuid_shape = bytes.len() == 36
            && bytes.iter().enumerate().all(|(i, c)| {
                if matches!(i, 8 | 13 | 18 | 23) {
                    *c == b'-'
                } else {
                    c.is_ascii_digit() || (b'a'..=b'f').contains(c)
                }
            });
        if !uuid_shape {
            return AuditId::Text(id.to_string());
        }
        let mut out = [0u8; 16];
        let mut nibbles = bytes.iter().filter(|c| **c != b'-').map(|c| match c {
            b'0'..=b'9' => c - b'0',
            _ => c - b'a' + 10,
        });
        for byte in &mut out {
            // Bounded: 32 hex digits, checked above.
            let (Some(hi), Some(lo)) = (nibbles.next(), nibbles.next()) else {
                unreachable!("a UUID has 32 hex digits")
            };
            *byte = hi << 4 | lo;
        }
        AuditId::Uuid(out)
    }

    /// As it was written.
    pub fn text(&self) -> String {
        match self {
            AuditId::Uuid(bytes) => crate::audit::uuid_text(bytes),
            AuditId::Text(t) => t.clone(),
        }
    }

    /// The order SQLite gave the column it replaces: text before blobs,
    /// each by its bytes.
    fn rank(&self) -> (u8, &[u8]) {
        match self {
            AuditId::Text(t) => (0, t.as_bytes()),
            AuditId::Uuid(b) => (1, b),
        }
    }
}

impl Ord for AuditId {
    fn cmp(&self, other: &Self) -> Ordering {
        self.rank().cmp(&other.rank())
    }
}

impl PartialOrd for AuditId {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// One audit event on one object, as a pack holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackedWrite {
    /// When its response completed (ms).
    pub at: i64,
    pub audit_id: AuditId,
    pub verb: Verb,
    /// `audit_actors.id`.
    pub actor: i64,
    /// `audit_uids.id` of the object's uid, when the event named one.
    pub uid: Option<i64>,
    pub resource_version: Option<Rv>,
    /// The subresource written (`""`: the object itself); `None` when not
    /// known (stored before schema version 9).
    pub subresource: Option<String>,
}

impl PackedWrite {
    /// The key a write is stored once under, as `audit_events` had it.
    pub fn key_cmp(&self, other: &PackedWrite) -> Ordering {
        self.at
            .cmp(&other.at)
            .then_with(|| self.audit_id.cmp(&other.audit_id))
    }
}

/// A pack that cannot be read: the journal is damaged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("audit pack: {0}")]
pub struct PackError(&'static str);

impl From<Damaged> for PackError {
    fn from(d: Damaged) -> PackError {
        PackError(d.0)
    }
}

/// The writes, in key order, as one pack's blob. The pack's `first_at` is
/// `writes[0].at`.
pub fn encode(writes: &[PackedWrite]) -> Vec<u8> {
    let tagged = writes
        .iter()
        .any(|w| matches!(w.audit_id, AuditId::Text(_)));
    let mut out = Vec::with_capacity(1 + writes.len() * 24);
    out.push(u8::from(tagged));
    let mut at = writes.first().map_or(0, |w| w.at);
    let mut uid = None;
    let mut rv = 0i64;
    for w in writes {
        let verb = (w.verb.code() - 1) as u8;
        let (sub, sub_text) = match w.subresource.as_deref() {
            Some("") => (0, None),
            Some("status") => (1, None),
            Some(text) => (2, Some(text)),
            None => (3, None),
        };
        let (uid_mode, uid_id) = match w.uid {
            None => (0, None),
            Some(id) if uid == Some(id) => (1, None),
            Some(id) => (2, Some(id)),
        };
        let rv_mode = match &w.resource_version {
            None => 0,
            Some(Rv::Int(_)) => 1,
            Some(Rv::Text(_)) => 2,
        };
        out.push(verb | sub << 2 | uid_mode << 4 | rv_mode << 6);
        put_varint(&mut out, w.at.wrapping_sub(at) as u64);
        at = w.at;
        match &w.audit_id {
            AuditId::Uuid(bytes) => {
                if tagged {
                    put_varint(&mut out, 0);
                }
                out.extend_from_slice(bytes);
            }
            AuditId::Text(text) => {
                put_varint(&mut out, text.len() as u64 + 1);
                out.extend_from_slice(text.as_bytes());
            }
        }
        put_varint(&mut out, w.actor as u64);
        if let Some(id) = uid_id {
            put_varint(&mut out, id as u64);
        }
        uid = w.uid;
        match &w.resource_version {
            None => {}
            Some(Rv::Int(n)) => {
                put_varint(&mut out, zigzag(n.wrapping_sub(rv)));
                rv = *n;
            }
            Some(Rv::Text(text)) => put_text(&mut out, text),
        }
        if let Some(text) = sub_text {
            put_text(&mut out, text);
        }
    }
    out
}

/// The writes of a pack whose key is `first_at`.
pub fn decode(first_at: i64, data: &[u8]) -> Result<Vec<PackedWrite>, PackError> {
    let mut r = Reader::new(data);
    let tagged = match r.byte()? {
        0 => false,
        1 => true,
        _ => return Err(PackError("unknown layout")),
    };
    let mut out = Vec::new();
    let mut at = first_at;
    let mut uid = None;
    let mut rv = 0i64;
    // Bounded: every write takes at least one byte of the blob.
    while !r.done() {
        let flags = r.byte()?;
        let verb = Verb::from_code(i64::from(flags & 3) + 1).ok_or(PackError("verb"))?;
        at = at.wrapping_add(r.varint()? as i64);
        let audit_id = match if tagged { r.varint()? } else { 0 } {
            0 => AuditId::Uuid(*r.bytes(16)?.first_chunk().ok_or(PackError("auditID"))?),
            n => AuditId::Text(r.text_of(n - 1)?),
        };
        let actor = r.varint()? as i64;
        let write_uid = match flags >> 4 & 3 {
            0 => None,
            1 => Some(uid.ok_or(PackError("no uid before"))?),
            2 => Some(r.varint()? as i64),
            _ => return Err(PackError("uid")),
        };
        uid = write_uid;
        let resource_version = match flags >> 6 {
            0 => None,
            1 => {
                rv = rv.wrapping_add(unzigzag(r.varint()?));
                Some(Rv::Int(rv))
            }
            2 => Some(Rv::Text(r.text()?)),
            _ => return Err(PackError("resourceVersion")),
        };
        let subresource = match flags >> 2 & 3 {
            0 => Some(String::new()),
            1 => Some("status".to_string()),
            2 => Some(r.text()?),
            _ => None,
        };
        out.push(PackedWrite {
            at,
            audit_id,
            verb,
            actor,
            uid: write_uid,
            resource_version,
            subresource,
        });
    }
    Ok(out)
}

/// Stores `pack` (writes of `object` in key order) as its row of
/// `audit_packs`, in place of the row with the same key if there is one.
pub fn put(conn: &Connection, object: i64, pack: &[PackedWrite]) -> rusqlite::Result<()> {
    let (Some(first), Some(last)) = (pack.first(), pack.last()) else {
        return Ok(());
    };
    conn.prepare_cached(
        "INSERT OR REPLACE INTO audit_packs(object_id, first_at, last_at, writes, data)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![
        object,
        first.at,
        last.at,
        pack.len() as i64,
        encode(pack)
    ])?;
    Ok(())
}

/// `writes` (in key order) cut into packs: [`pack_writes`] each at most,
/// except that writes of the same millisecond stay in one pack.
pub fn split(writes: &[PackedWrite]) -> Vec<&[PackedWrite]> {
    split_by(writes, pack_writes())
}

fn split_by(writes: &[PackedWrite], most: usize) -> Vec<&[PackedWrite]> {
    let mut packs = Vec::new();
    let mut rest = writes;
    // Bounded: every pass takes at least one write off `rest`.
    while !rest.is_empty() {
        let mut end = rest.len().min(most.max(1));
        while end < rest.len() && rest[end].at == rest[end - 1].at {
            end += 1;
        }
        let (pack, tail) = rest.split_at(end);
        packs.push(pack);
        rest = tail;
    }
    packs
}

/// `held` (in key order) with `new` (in key order) added: a write whose key
/// is held already, or came before in `new`, is not added again. Also how
/// many of `new` were added.
pub fn merge(held: Vec<PackedWrite>, new: &[PackedWrite]) -> (Vec<PackedWrite>, u64) {
    let mut out: Vec<PackedWrite> = Vec::with_capacity(held.len() + new.len());
    let mut added = 0;
    let mut held = held.into_iter().peekable();
    for w in new {
        // Bounded by `held`.
        while let Some(h) = held.next_if(|h| h.key_cmp(w) == Ordering::Less) {
            out.push(h);
        }
        let known = held.peek().is_some_and(|h| h.key_cmp(w) == Ordering::Equal)
            || out.last().is_some_and(|o| o.key_cmp(w) == Ordering::Equal);
        if !known {
            out.push(w.clone());
            added += 1;
        }
    }
    out.extend(held);
    (out, added)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn write(at: i64, id: &str) -> PackedWrite {
        PackedWrite {
            at,
            audit_id: AuditId::parse(id),
            verb: Verb::Patch,
            actor: 3,
            uid: Some(7),
            resource_version: Some(Rv::Int(1_000 + at)),
            subresource: Some(String::new()),
        }
    }

    fn any_write() -> impl Strategy<Value = PackedWrite> {
        let id = prop_oneof![
            any::<[u8; 16]>().prop_map(AuditId::Uuid),
            ".{0,40}".prop_map(AuditId::Text),
        ];
        let rv = prop_oneof![
            Just(None),
            any::<i64>().prop_map(|n| Some(Rv::Int(n))),
            "[0-9a-z]{0,12}".prop_map(|t| Some(Rv::Text(t))),
        ];
        let sub = prop_oneof![
            Just(None),
            Just(Some(String::new())),
            Just(Some("status".to_string())),
            "[a-z]{1,10}".prop_map(Some),
        ];
        let verb = prop_oneof![
            Just(Verb::Create),
            Just(Verb::Update),
            Just(Verb::Patch),
            Just(Verb::Delete),
        ];
        (
            any::<i64>(),
            id,
            verb,
            0i64..1_000_000,
            prop::option::of(0i64..3),
            rv,
            sub,
        )
            .prop_map(
                |(at, audit_id, verb, actor, uid, resource_version, subresource)| PackedWrite {
                    at,
                    audit_id,
                    verb,
                    actor,
                    uid,
                    resource_version,
                    subresource,
                },
            )
    }

    proptest! {
        #[test]
        fn a_pack_reads_back_as_written(mut writes in prop::collection::vec(any_write(), 1..60)) {
            writes.sort_by(PackedWrite::key_cmp);
            let data = encode(&writes);
            prop_assert_eq!(decode(writes[0].at, &data), Ok(writes));
        }

        #[test]
        fn merging_keeps_one_write_a_key_in_order(
            held in prop::collection::vec((0i64..50, 0u8..4), 0..40),
            new in prop::collection::vec((0i64..50, 0u8..4), 0..40),
        ) {
            let writes = |keys: &[(i64, u8)]| {
                let mut w: Vec<PackedWrite> = keys
                    .iter()
                    .map(|(at, id)| write(*at, &format!("id-{id}")))
                    .collect();
                w.sort_by(PackedWrite::key_cmp);
                w.dedup_by(|a, b| a.key_cmp(b) == Ordering::Equal);
                w
            };
            let held = writes(&held);
            let mut sorted_new: Vec<PackedWrite> = new
                .iter()
                .map(|(at, id)| write(*at, &format!("id-{id}")))
                .collect();
            sorted_new.sort_by(PackedWrite::key_cmp);
            let (merged, added) = merge(held.clone(), &sorted_new);
            prop_assert!(merged.windows(2).all(|w| w[0].key_cmp(&w[1]) == Ordering::Less));
            prop_assert_eq!(merged.len() as u64, held.len() as u64 + added);
            for w in held.iter().chain(&sorted_new) {
                prop_assert!(merged.iter().any(|m| m.key_cmp(w) == Ordering::Equal));
            }
        }

        #[test]
        fn damaged_packs_are_errors_not_panics(first_at in any::<i64>(), data in prop::collection::vec(any::<u8>(), 0..200)) {
            let _ = decode(first_at, &data);
        }
    }

    #[test]
    fn a_pack_of_uuid_writes_takes_about_twenty_bytes_a_write() {
        let writes: Vec<PackedWrite> = (0..32)
            .map(|i| {
                write(
                    1_000_000 + i * 36_000,
                    "7c1f3b0e-8a51-4c5e-9a3e-2f0d5b6a1c2d",
                )
            })
            .collect();
        let data = encode(&writes);
        // flags 1, time 3, auditID 16, actor 1, resourceVersion 3; the
        // first write's uid and resourceVersion whole.
        assert!(data.len() <= 1 + 32 * 24 + 4, "{} bytes", data.len());
        assert_eq!(decode(1_000_000, &data).unwrap(), writes);
    }

    #[test]
    fn packs_never_split_a_millisecond() {
        let mut writes: Vec<PackedWrite> = (0..31).map(|i| write(i, &format!("a{i}"))).collect();
        writes.extend((0..5).map(|i| write(31, &format!("b{i}"))));
        writes.extend((0..3).map(|i| write(40 + i, &format!("c{i}"))));
        let packs = split_by(&writes, PACK_WRITES);
        assert_eq!(
            packs.iter().map(|p| p.len()).collect::<Vec<_>>(),
            vec![36, 3]
        );
        assert_eq!(split_by(&writes[..32], PACK_WRITES).len(), 1);
        assert!(split_by(&[], PACK_WRITES).is_empty());
        assert_eq!(
            split_by(&writes, 2)
                .iter()
                .map(|p| p.len())
                .collect::<Vec<_>>(),
            [vec![2; 15], vec![6], vec![2, 1]].concat()
        );
    }

    #[test]
    fn audit_ids_and_resource_versions_read_back_as_written() {
        for id in [
            "7c1f3b0e-8a51-4c5e-9a3e-2f0d5b6a1c2d",
            "7C1F3B0E-8A51-4C5E-9A3E-2F0D5B6A1C2D",
            "not-a-uuid",
            "0123456789abcdef",
            "",
        ] {
            assert_eq!(AuditId::parse(id).text(), id);
        }
        assert!(matches!(
            AuditId::parse("7c1f3b0e-8a51-4c5e-9a3e-2f0d5b6a1c2d"),
            AuditId::Uuid(_)
        ));
        for rv in ["280", "0", "007", "12a", "", "99999999999999999999"] {
            assert_eq!(Rv::parse(rv).text(), rv);
        }
        assert_eq!(Rv::parse("280"), Rv::Int(280));
    }
}
