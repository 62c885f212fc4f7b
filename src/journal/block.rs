//! Cold blocks: up to [`BLOCK_VERSIONS`] consecutive records of one object
//! in one row, for history nobody writes to any more (docs/journal.md, "Cold
//! history in blocks").
//!
//! A record row and its index entry cost about 50 bytes whatever its body
//! weighs, so with each record a row of its own the journal cannot go below
//! about 1/42 of the raw JSON on an object changed often, 1/32 on many
//! objects changed a few times. A block holds its records in two zstd
//! frames:
//!
//! - the *columns*: each record's seq, time, kind, watch type, aux,
//!   resourceVersion and body length, each as a step from the record before,
//!   compressed alone. A reader that asks when or which versions reads these
//!   only.
//! - the *bodies*: the records' JSON one after the other, compressed with the
//!   stream's dictionary. Consecutive versions of one object are mostly long
//!   matches of each other, so each costs a few bytes more than what changed.
//!
//! This module lays out and reads back one block ([`encode`], [`columns`],
//! [`bodies`]) and cuts an object's records into blocks ([`split`]). A block
//! is read from a file that may be damaged: anything that does not hold is a
//! [`BlockError`], never a panic.
//!
//! # The columns' layout
//!
//! One byte, the layout (1); the number of records and the bytes of JSON of
//! all bodies (varints); then per record:
//!
//! - its flags (a varint): the kind less one (bits 0-1: 0 an event, 1 a
//!   baseline item), the watch type (bits 2-3: 0 none, else 1 ADDED, 2
//!   MODIFIED, 3 DELETED), the resourceVersion (bits 4-5: 0 none, 1 an
//!   integer, 2 text), the body (bits 6-7: 0 none, 1 its length follows, 2
//!   the same bytes as the last body of the block), `aux` (bit 8) and
//!   `event_key` (bit 9) when present;
//! - seq, observed_at and aux, each a zigzag step from the record before's
//!   (from 0 for the first);
//! - `event_key`: 8 bytes, little-endian;
//! - the resourceVersion: an integer as a zigzag step from the last integer
//!   one of the block (from 0), or text;
//! - the body's length.
//!
//! Varints are LEB128 ([`super::wire`]).

use super::bodies::PACK_MAX_BYTES;
use super::codec::{Codec, CodecError, DecoderDict, EncoderDict, Pace};
use super::wire::{Damaged, Reader, Rv, put_text, put_varint, unzigzag, zigzag};
use std::ops::Range;

/// Records of one object in a block, at most: on the recorder bench's
/// W-deep (Deployments of about 2.1 KB) the bodies of 64 versions take 1/119
/// of their JSON, and a block decodes in about 10 µs.
pub const BLOCK_VERSIONS: usize = 64;

/// The most bytes of JSON in one block, as in a pack: a block of large
/// objects holds fewer versions. A single version larger than this is a
/// block alone.
pub const BLOCK_JSON_BYTES: usize = PACK_MAX_BYTES;

/// The columns' layout this build writes and reads.
const LAYOUT: u8 = 1;

/// One record of a block. `B` is the body: its JSON when a block is made
/// ([`encode`]), its bytes' place in the decoded bodies when one is read
/// ([`columns`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColdRecord<B> {
    pub seq: i64,
    /// `records.kind`: 1 an event, 2 a baseline item (the only kinds that
    /// name an object).
    pub kind: i64,
    pub observed_at: i64,
    /// 1 ADDED, 2 MODIFIED, 3 DELETED.
    pub watch_type: Option<i64>,
    /// As stored: an integer when it was plain decimal ([`Rv::parse`]).
    pub resource_version: Option<Rv>,
    pub event_key: Option<i64>,
    pub aux: Option<i64>,
    pub body: Option<B>,
}

impl<A> ColdRecord<A> {
    /// The same record with `body` for its body.
    pub fn with_body<B>(&self, body: Option<B>) -> ColdRecord<B> {
        ColdRecord {
            seq: self.seq,
            kind: self.kind,
            observed_at: self.observed_at,
            watch_type: self.watch_type,
            resource_version: self.resource_version.clone(),
            event_key: self.event_key,
            aux: self.aux,
            body,
        }
    }
}

/// A block as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Encoded {
    /// The columns' frame.
    pub columns: Vec<u8>,
    /// The bodies' frame.
    pub bodies: Vec<u8>,
    /// The bytes of JSON of its bodies (each distinct body once).
    pub raw_len: usize,
    pub records: usize,
    pub first_seq: i64,
    pub last_seq: i64,
    /// The earliest and latest `observed_at` of its records.
    pub min_at: i64,
    pub max_at: i64,
}

/// A block that cannot be made or read.
#[derive(Debug, thiserror::Error)]
pub enum BlockError {
    /// Its bytes do not hold: the journal is damaged.
    #[error("cold block: {0}")]
    Damaged(&'static str),
    /// These records cannot go in one block (a caller's mistake, refused
    /// rather than written wrong).
    #[error("cold block: {0}")]
    Unfit(&'static str),
    #[error(transparent)]
    Codec(#[from] CodecError),
}

impl From<Damaged> for BlockError {
    fn from(d: Damaged) -> BlockError {
        BlockError::Damaged(d.0)
    }
}

/// `records` (one object's, in seq order) cut into blocks: at most
/// [`BLOCK_VERSIONS`] records and [`BLOCK_JSON_BYTES`] of JSON each, but
/// never fewer than one record.
pub fn split<B: AsRef<[u8]>>(records: &[ColdRecord<B>]) -> Vec<&[ColdRecord<B>]> {
    let mut blocks = Vec::new();
    let mut rest = records;
    // Bounded: every pass takes at least one record off `rest`.
    while !rest.is_empty() {
        let mut end = 0;
        let mut bytes = 0;
        while end < rest.len().min(BLOCK_VERSIONS) {
            let len = rest[end].body.as_ref().map_or(0, |b| b.as_ref().len());
            if end > 0 && bytes + len > BLOCK_JSON_BYTES {
                break;
            }
            bytes += len;
            end += 1;
        }
        let (block, tail) = rest.split_at(end);
        blocks.push(block);
        rest = tail;
    }
    blocks
}

/// Lays out `records` (one object's, in seq order) as one block, the bodies
/// compressed with `dict` when the stream has one.
pub fn encode(
    codec: &mut Codec,
    records: &[ColdRecord<&[u8]>],
    dict: Option<&EncoderDict>,
) -> Result<Encoded, BlockError> {
    let (Some(first), Some(last)) = (records.first(), records.last()) else {
        return Err(BlockError::Unfit("a block of no records"));
    };
    let mut json: Vec<u8> = Vec::new();
    let mut cols = Vec::with_capacity(16 + records.len() * 16);
    cols.push(LAYOUT);
    put_varint(&mut cols, records.len() as u64);
    let raw_len_at = cols.len();
    let (mut seq, mut at, mut aux, mut rv) = (0i64, 0i64, 0i64, 0i64);
    let mut last_body: Option<&[u8]> = None;
    let mut rest = Vec::with_capacity(32);
    for (i, r) in records.iter().enumerate() {
        if i > 0 && r.seq <= seq {
            return Err(BlockError::Unfit("records out of seq order"));
        }
        let kind = match r.kind {
            1 => 0,
            2 => 1,
            _ => return Err(BlockError::Unfit("a record that names no object")),
        };
        let watch = match r.watch_type {
            None => 0,
            Some(w @ 1..=3) => w as u64,
            Some(_) => return Err(BlockError::Unfit("an unknown watch type")),
        };
        rest.clear();
        put_varint(&mut rest, zigzag(r.seq.wrapping_sub(seq)));
        put_varint(&mut rest, zigzag(r.observed_at.wrapping_sub(at)));
        (seq, at) = (r.seq, r.observed_at);
        if let Some(a) = r.aux {
            put_varint(&mut rest, zigzag(a.wrapping_sub(aux)));
            aux = a;
        }
        if let Some(k) = r.event_key {
            rest.extend_from_slice(&k.to_le_bytes());
        }
        let rv_mode = match &r.resource_version {
            None => 0,
            Some(Rv::Int(n)) => {
                put_varint(&mut rest, zigzag(n.wrapping_sub(rv)));
                rv = *n;
                1
            }
            Some(Rv::Text(text)) => {
                put_text(&mut rest, text);
                2
            }
        };
        let body_mode = match r.body {
            None => 0,
            Some(body) if last_body == Some(body) => 2,
            Some(body) => {
                put_varint(&mut rest, body.len() as u64);
                json.extend_from_slice(body);
                last_body = Some(body);
                1
            }
        };
        let flags = kind
            | watch << 2
            | rv_mode << 4
            | body_mode << 6
            | u64::from(r.aux.is_some()) << 8
            | u64::from(r.event_key.is_some()) << 9;
        put_varint(&mut cols, flags);
        cols.extend_from_slice(&rest);
    }
    if json.len() > crate::model::MAX_OBJECT_BYTES {
        return Err(BlockError::Unfit("more JSON than a block holds"));
    }
    let mut raw_len = Vec::with_capacity(4);
    put_varint(&mut raw_len, json.len() as u64);
    cols.splice(raw_len_at..raw_len_at, raw_len);
    let (min_at, max_at) = records.iter().fold((i64::MAX, i64::MIN), |(lo, hi), r| {
        (lo.min(r.observed_at), hi.max(r.observed_at))
    });
    Ok(Encoded {
        // The columns are a few bytes a record and alike from block to
        // block: compressed alone, at the level of live keyframes.
        columns: codec.keyframe(&cols, None, Pace::Live)?,
        // Bodies are compressed once and read many times: the level of a
        // list's keyframes.
        bodies: codec.keyframe(&json, dict, Pace::Listed)?,
        raw_len: json.len(),
        records: records.len(),
        first_seq: first.seq,
        last_seq: last.seq,
        min_at,
        max_at,
    })
}

/// A block's columns, read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Columns {
    /// Its records in seq order, each with its body's place in the decoded
    /// bodies.
    pub records: Vec<ColdRecord<Range<usize>>>,
    /// The bytes of JSON of the decoded bodies.
    pub raw_len: usize,
}

/// The records of a block from its columns' frame.
pub fn columns(codec: &mut Codec, frame: &[u8]) -> Result<Columns, BlockError> {
    decode_columns(codec, frame, true)
}

/// [`columns`] without their resourceVersions (`None` in every record),
/// for a scan that needs only when and what each record is: a diff's window
/// reads every record of its blocks, and a resourceVersion is an allocation
/// each. A damaged block is refused all the same.
pub fn columns_without_versions(codec: &mut Codec, frame: &[u8]) -> Result<Columns, BlockError> {
    decode_columns(codec, frame, false)
}

fn decode_columns(codec: &mut Codec, frame: &[u8], versions: bool) -> Result<Columns, BlockError> {
    let cols = codec.decode_declared(frame)?;
    let mut r = Reader::new(&cols);
    if r.byte()? != LAYOUT {
        return Err(BlockError::Damaged("unknown layout"));
    }
    let n = r.varint()?;
    let raw_len = usize::try_from(r.varint()?).map_err(|_| Damaged("length"))?;
    // Every record takes at least three bytes of the columns.
    let mut out = Vec::with_capacity((n as usize).min(cols.len() / 3));
    let (mut seq, mut at, mut aux, mut rv) = (0i64, 0i64, 0i64, 0i64);
    let mut json = 0usize;
    let mut last_body: Option<Range<usize>> = None;
    // Bounded: `n` records, each at least one byte of `cols`.
    for i in 0..n {
        let flags = r.varint()?;
        if flags >> 10 != 0 {
            return Err(BlockError::Damaged("unknown flags"));
        }
        let kind = match flags & 3 {
            0 => 1,
            1 => 2,
            _ => return Err(BlockError::Damaged("kind")),
        };
        let watch_type = match flags >> 2 & 3 {
            0 => None,
            w => Some(w as i64),
        };
        let next = seq.wrapping_add(unzigzag(r.varint()?));
        if i > 0 && next <= seq {
            return Err(BlockError::Damaged("records out of seq order"));
        }
        seq = next;
        at = at.wrapping_add(unzigzag(r.varint()?));
        let record_aux = if flags >> 8 & 1 == 1 {
            aux = aux.wrapping_add(unzigzag(r.varint()?));
            Some(aux)
        } else {
            None
        };
        let event_key = if flags >> 9 & 1 == 1 {
            let bytes = r.bytes(8)?.first_chunk().ok_or(Damaged("event key"))?;
            Some(i64::from_le_bytes(*bytes))
        } else {
            None
        };
        let resource_version = match flags >> 4 & 3 {
            0 => None,
            1 => {
                rv = rv.wrapping_add(unzigzag(r.varint()?));
                versions.then_some(Rv::Int(rv))
            }
            2 if versions => Some(Rv::Text(r.text()?)),
            2 => {
                let n = r.varint()?;
                std::str::from_utf8(r.bytes(n)?).map_err(|_| Damaged("text is not UTF-8"))?;
                None
            }
            _ => return Err(BlockError::Damaged("resourceVersion")),
        };
        let body = match flags >> 6 & 3 {
            0 => None,
            1 => {
                let len = usize::try_from(r.varint()?).map_err(|_| Damaged("length"))?;
                let end = json
                    .checked_add(len)
                    .filter(|end| *end <= raw_len)
                    .ok_or(Damaged("bodies longer than the block says"))?;
                let place = json..end;
                json = end;
                last_body = Some(place.clone());
                Some(place)
            }
            2 => Some(last_body.clone().ok_or(Damaged("no body before"))?),
            _ => return Err(BlockError::Damaged("body")),
        };
        out.push(ColdRecord {
            seq,
            kind,
            observed_at: at,
            watch_type,
            resource_version,
            event_key,
            aux: record_aux,
            body,
        });
    }
    if !r.done() {
        return Err(BlockError::Damaged("bytes after the last record"));
    }
    if json != raw_len {
        return Err(BlockError::Damaged("bodies shorter than the block says"));
    }
    Ok(Columns {
        records: out,
        raw_len,
    })
}

/// The JSON of a block's bodies, one after the other, from their frame;
/// `raw_len` is what [`columns`] read, `dict` the stream's dictionary the
/// block was made with.
pub fn bodies(
    codec: &mut Codec,
    frame: &[u8],
    raw_len: usize,
    dict: Option<&DecoderDict>,
) -> Result<Vec<u8>, BlockError> {
    Ok(match dict {
        Some(d) => codec.decode_with_dict(frame, raw_len, d)?,
        None => codec.decode(frame, raw_len, None)?,
    })
}

/// The body id a record in a block reads its body by ([`cold_body_parts`]):
/// negative, so that it never meets a `bodies` row's id, and the same for
/// the records of a block that share one body (`ordinal` counts the
/// block's distinct bodies, from 0).
pub fn cold_body_id(block: i64, ordinal: usize) -> i64 {
    -(block * 128 + ordinal as i64) - 1
}

/// The block and the ordinal of a body id [`cold_body_id`] made; `None`
/// for the id of a `bodies` row.
pub fn cold_body_parts(id: i64) -> Option<(i64, usize)> {
    let n = id.checked_neg()?.checked_sub(1)?;
    (n >= 0).then_some((n / 128, (n % 128) as usize))
}

/// The ordinal of each record's body among the block's distinct bodies
/// ([`cold_body_id`]), and the places of those bodies in the decoded JSON.
pub fn ordinals(records: &[ColdRecord<Range<usize>>]) -> (Vec<Option<usize>>, Vec<Range<usize>>) {
    let mut places: Vec<Range<usize>> = Vec::new();
    let ordinals = records
        .iter()
        .map(|r| {
            let place = r.body.as_ref()?;
            // A body is the same as the block's body before it, or new.
            if places.last() != Some(place) {
                places.push(place.clone());
            }
            Some(places.len() - 1)
        })
        .collect();
    (ordinals, places)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn record<'a>(seq: i64, rv: &str, body: &'a [u8]) -> ColdRecord<&'a [u8]> {
        ColdRecord {
            seq,
            kind: 1,
            observed_at: 1_700_000_000_000 + seq * 7,
            watch_type: Some(2),
            resource_version: Some(Rv::parse(rv)),
            event_key: None,
            aux: Some(1),
            body: Some(body),
        }
    }

    /// Encodes and reads back: each record as it went in, its body's bytes
    /// in place of the body's place.
    fn round_trip(
        records: &[ColdRecord<&[u8]>],
        dict: Option<(&EncoderDict, &DecoderDict)>,
    ) -> Vec<ColdRecord<Vec<u8>>> {
        let mut codec = Codec::new();
        let block = encode(&mut codec, records, dict.map(|d| d.0)).unwrap();
        let cols = columns(&mut codec, &block.columns).unwrap();
        assert_eq!(cols.raw_len, block.raw_len);
        let json = bodies(&mut codec, &block.bodies, cols.raw_len, dict.map(|d| d.1)).unwrap();
        cols.records
            .iter()
            .map(|c| c.with_body(c.body.clone().map(|place| json[place].to_vec())))
            .collect()
    }

    fn owned(records: &[ColdRecord<&[u8]>]) -> Vec<ColdRecord<Vec<u8>>> {
        records
            .iter()
            .map(|r| r.with_body(r.body.map(<[u8]>::to_vec)))
            .collect()
    }

    fn any_record() -> impl Strategy<Value = (i64, ColdRecord<Vec<u8>>)> {
        (
            1i64..1_000_000,
            1i64..=2,
            any::<i64>(),
            prop::option::of(1i64..=3),
            prop::option::of("[0-9]{1,20}|[ -~]{0,10}"),
            prop::option::of(any::<i64>()),
            prop::option::of(any::<i64>()),
            prop::option::of(prop::collection::vec(any::<u8>(), 0..300)),
        )
            .prop_map(|(step, kind, at, watch, rv, key, aux, body)| {
                (
                    step,
                    ColdRecord {
                        seq: 0,
                        kind,
                        observed_at: at,
                        watch_type: watch,
                        resource_version: rv.as_deref().map(Rv::parse),
                        event_key: key,
                        aux,
                        body,
                    },
                )
            })
    }

    proptest! {
        #[test]
        fn a_block_reads_back_as_written(
            first in any::<i64>(),
            drawn in prop::collection::vec(any_record(), 1..70),
            repeat in any::<bool>(),
        ) {
            let mut seq = first;
            let mut records: Vec<ColdRecord<Vec<u8>>> = Vec::new();
            for (step, mut r) in drawn {
                seq = seq.saturating_add(step);
                prop_assume!(records.last().is_none_or(|l| l.seq < seq));
                r.seq = seq;
                // A relist of a quiet object: the same bytes again.
                if repeat && let Some(last) = records.last() {
                    r.body = last.body.clone();
                }
                records.push(r);
            }
            let borrowed: Vec<ColdRecord<&[u8]>> = records
                .iter()
                .map(|r| r.with_body(r.body.as_deref()))
                .collect();
            // Read without their resourceVersions, the same records but for them.
            let mut codec = Codec::new();
            let block = encode(&mut codec, &borrowed, None).unwrap();
            let all = columns(&mut codec, &block.columns).unwrap();
            let heads = columns_without_versions(&mut codec, &block.columns).unwrap();
            prop_assert_eq!(heads.raw_len, all.raw_len);
            let unversioned: Vec<_> = all
                .records
                .into_iter()
                .map(|r| ColdRecord { resource_version: None, ..r })
                .collect();
            prop_assert_eq!(heads.records, unversioned);
            prop_assert_eq!(round_trip(&borrowed, None), records);
        }

        #[test]
        fn damaged_columns_are_errors_not_panics(data in prop::collection::vec(any::<u8>(), 0..300)) {
            let mut codec = Codec::new();
            let frame = codec.keyframe(&data, None, Pace::Live).unwrap();
            // Both ways of reading columns refuse the same damage.
            for cols in [&frame, &data] {
                prop_assert_eq!(
                    columns(&mut codec, cols).is_ok(),
                    columns_without_versions(&mut codec, cols).is_ok()
                );
            }
            let _ = bodies(&mut codec, &data, data.len(), None);
        }
    }

    #[test]
    fn a_resource_version_that_is_not_text_is_refused_when_not_read_too() {
        let body = br#"{"a":1}"#;
        let mut codec = Codec::new();
        let block = encode(&mut codec, &[record(5, "v-xyz", body)], None).unwrap();
        let mut cols = codec.decode_declared(&block.columns).unwrap();
        let at = cols.windows(5).position(|w| w == b"v-xyz").unwrap();
        cols[at..at + 5].copy_from_slice(&[0xff, 0xfe, 0xfd, 0xfc, 0xfb]);
        let damaged = codec.keyframe(&cols, None, Pace::Live).unwrap();
        for read in [columns, columns_without_versions] {
            assert!(matches!(
                read(&mut codec, &damaged),
                Err(BlockError::Damaged("text is not UTF-8"))
            ));
        }
    }

    #[test]
    fn versions_of_one_object_share_their_bytes_in_a_block() {
        // Sixty-four versions of a 2 KB object, each a few bytes apart.
        let base = format!(
            r#"{{"metadata":{{"name":"web","resourceVersion":"RV"}},"spec":{{"replicas":3,"template":"{}"}},"status":{{"observedGeneration":G}}}}"#,
            "x".repeat(2_000)
        );
        let versions: Vec<Vec<u8>> = (0..64)
            .map(|i| {
                base.replace("RV", &(1_000 + i).to_string())
                    .replace("G", &i.to_string())
                    .into_bytes()
            })
            .collect();
        let records: Vec<ColdRecord<&[u8]>> = versions
            .iter()
            .enumerate()
            .map(|(i, v)| record(10 + i as i64 * 3, &(1_000 + i).to_string(), v))
            .collect();
        let mut codec = Codec::new();
        let block = encode(&mut codec, &records, None).unwrap();
        let raw: usize = versions.iter().map(Vec::len).sum();
        assert!(
            block.bodies.len() * 100 < raw,
            "{} bytes for {raw}",
            block.bodies.len()
        );
        // Seq, time, rv and length steps of a few bytes each, compressed.
        assert!(block.columns.len() < 64 * 6, "{}", block.columns.len());
        assert_eq!((block.first_seq, block.last_seq), (10, 10 + 63 * 3));
        assert_eq!(block.records, 64);
        assert_eq!(round_trip(&records, None), owned(&records));
    }

    #[test]
    fn cold_body_ids_never_meet_body_rows_and_read_back() {
        for (block, ordinal) in [(1, 0), (1, 63), (7, 5), ((1 << 50) + 3, 127)] {
            let id = cold_body_id(block, ordinal);
            assert!(id < 0);
            assert_eq!(cold_body_parts(id), Some((block, ordinal)));
        }
        for row in [0, 1, 99, i64::MAX] {
            assert_eq!(cold_body_parts(row), None);
        }
        assert_eq!(cold_body_parts(i64::MIN), None);
    }

    #[test]
    fn a_body_seen_again_is_stored_once() {
        let records = [
            record(1, "5", b"{\"a\":1}"),
            record(2, "5", b"{\"a\":1}"),
            record(4, "6", b"{\"a\":2}"),
        ];
        let mut codec = Codec::new();
        let block = encode(&mut codec, &records, None).unwrap();
        assert_eq!(block.raw_len, 14);
        let cols = columns(&mut codec, &block.columns).unwrap().records;
        assert_eq!(cols[0].body, Some(0..7));
        assert_eq!(cols[1].body, Some(0..7));
        assert_eq!(cols[2].body, Some(7..14));
        let (ordinals, places) = ordinals(&cols);
        assert_eq!(ordinals, [Some(0), Some(0), Some(1)]);
        assert_eq!(places, [0..7, 7..14]);
    }

    #[test]
    fn a_block_with_the_streams_dictionary_reads_back() {
        let samples: Vec<Vec<u8>> = (0..200)
            .map(|i| {
                format!(
                    r#"{{"apiVersion":"apps/v1","kind":"Deployment","metadata":{{"name":"svc-{i}","namespace":"shop","labels":{{"app":"svc-{i}"}}}},"spec":{{"replicas":{}}}}}"#,
                    i % 5
                )
                .into_bytes()
            })
            .collect();
        let dict = super::super::codec::train(&samples).expect("a dictionary");
        let enc = EncoderDict::new(1, &dict).unwrap();
        let dec = DecoderDict::new(1, &dict).unwrap();
        let records: Vec<ColdRecord<&[u8]>> = samples[..10]
            .iter()
            .enumerate()
            .map(|(i, s)| ColdRecord {
                kind: 2,
                watch_type: None,
                aux: Some(77),
                ..record(i as i64 + 1, &format!("{}", 90 + i), s)
            })
            .collect();
        assert_eq!(round_trip(&records, Some((&enc, &dec))), owned(&records));
        // The frame needs the dictionary it was made with.
        let mut codec = Codec::new();
        let block = encode(&mut codec, &records, Some(&enc)).unwrap();
        assert!(bodies(&mut codec, &block.bodies, block.raw_len, None).is_err());
    }

    #[test]
    fn records_that_cannot_share_a_block_are_refused() {
        let mut codec = Codec::new();
        let unfit = |records: &[ColdRecord<&[u8]>]| match encode(&mut Codec::new(), records, None) {
            Err(BlockError::Unfit(why)) => why,
            other => panic!("{other:?}"),
        };
        assert_eq!(unfit(&[]), "a block of no records");
        assert_eq!(
            unfit(&[record(2, "1", b"{}"), record(2, "2", b"{}")]),
            "records out of seq order"
        );
        let checkpoint = ColdRecord {
            kind: 6,
            ..record(1, "1", b"{}")
        };
        assert_eq!(unfit(&[checkpoint]), "a record that names no object");
        let odd = ColdRecord {
            watch_type: Some(9),
            ..record(1, "1", b"{}")
        };
        assert_eq!(unfit(&[odd]), "an unknown watch type");
        assert!(encode(&mut codec, &[record(1, "1", b"{}")], None).is_ok());
    }

    #[test]
    fn a_block_holds_at_most_its_versions_and_its_bytes() {
        let version = |seq: i64, bytes: usize| ColdRecord {
            seq,
            kind: 1,
            observed_at: 0,
            watch_type: Some(2),
            resource_version: None,
            event_key: None,
            aux: None,
            body: Some(vec![b'x'; bytes]),
        };
        let small: Vec<ColdRecord<Vec<u8>>> = (0..130).map(|i| version(i, 10)).collect();
        let sizes: Vec<usize> = split(&small).iter().map(|b| b.len()).collect();
        assert_eq!(sizes, [64, 64, 2]);
        let large: Vec<ColdRecord<Vec<u8>>> = (0..5)
            .map(|i| version(i, BLOCK_JSON_BYTES / 2 + i as usize))
            .collect();
        let sizes: Vec<usize> = split(&large).iter().map(|b| b.len()).collect();
        // Two of them are more than a block holds.
        assert_eq!(sizes, [1, 1, 1, 1, 1]);
        let huge = [version(1, BLOCK_JSON_BYTES * 2), version(2, 1)];
        let sizes: Vec<usize> = split(&huge).iter().map(|b| b.len()).collect();
        assert_eq!(sizes, [1, 1]);
    }
}
