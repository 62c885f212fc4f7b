//! How the writer stores object bodies without reading the journal back.
//!
//! For every object it has seen this run, the writer keeps in memory what the next
//! version needs: the last resourceVersion, a hash of the last body, and the
//! object's keyframe as stored (compressed, a few hundred bytes). A new version is
//! then compressed as a delta against that keyframe, decoded in memory, and a
//! redelivered event is recognised by its resourceVersion. The journal is read for
//! an object only the first time this run touches it (after a restart), and when
//! the versions cannot tell a redelivery from a new event (resourceVersions that
//! are not numbers, or that went backwards).
//!
//! Each stream trains a zstd dictionary on its first bodies; later keyframes are
//! compressed with it. An object's older versions are folded into blocks
//! behind the writer (`super::fold`). Journals of older recorders also hold
//! packs, several versions to a zstd frame, which this store still writes
//! when asked ([`pack_at_write`]). See docs/journal.md, "Bodies" and "Packs".
//!
//! The decisions are pure functions ([`is_surely_new`], [`keep_delta`],
//! [`to_pack`], [`Sampler::add`]) tested on their own; the rest carries them out.

use super::codec::{Codec, DecoderDict, EncoderDict, KeyframeCache, Pace};
use super::schema::{BodyRow, body_row};
use super::{IdMap, JournalError, StreamId};
use rusqlite::{OptionalExtension, Transaction, params};
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::path::PathBuf;
use std::sync::Arc;

/// Bodies a stream samples before it trains its dictionary: enough different
/// objects for zstd to find what they share. On the recorder bench's Deployments a
/// dictionary from 128 samples compresses as well as one from 1,024, and one from
/// 64 half as well.
pub const TRAIN_SAMPLES: usize = 128;
/// Sampled bytes that are enough to train, whatever their count (large objects).
pub const TRAIN_BYTES: usize = 4 << 20;
/// Memory for decoded keyframes: the objects changing most keep theirs decoded.
const KEYFRAME_CACHE_BYTES: usize = 2 << 20;

/// Whether the writer packs an object's older versions as it writes them:
/// not since blocks folded behind it hold them more tightly, and packing
/// took a third of the recorder's pace (docs/journal.md, "Packs"). On only
/// to write journals as recorders before 2026-12-06 did, whose packs every
/// reader, fold and cut still reads: a debug build takes
/// [`DEBUG_PACK_ENV`] (the truth checker writes half its histories so).
pub fn pack_at_write() -> bool {
    cfg!(debug_assertions) && std::env::var_os(DEBUG_PACK_ENV).is_some_and(|v| v == "1")
}

/// See [`pack_at_write`].
pub const DEBUG_PACK_ENV: &str = "KRPLY_DEBUG_PACK";

/// A watched version of an object whose keyframe takes at most this many
/// bytes (compressed, most often with its stream's dictionary) becomes a
/// keyframe of its own rather than a delta, when the writer does not pack
/// ([`small_keyframes`]) and that keyframe is not at hand ([`keyframe_again`]).
/// On W-wide's Deployments such a keyframe takes about
/// 1.8 µs and 121-134 bytes; a delta 3.2 µs and 64 bytes, and the decoding of
/// its keyframe 0.75 µs more when that is not cached (most are not: 20,000
/// objects). The bytes a version takes more last until the fold behind the
/// writer takes it into a block (docs/journal.md, "Small keyframes").
pub const SMALL_KEYFRAME_BYTES: usize = 256;

/// The largest keyframe a writer makes again rather than a delta against:
/// [`SMALL_KEYFRAME_BYTES`] for one that does not pack (a recorder folds
/// behind itself, which keeps versions together in blocks); none (0) for
/// one that packs (packs keep its deltas together). A debug build takes another bound from
/// [`DEBUG_SMALL_KEYFRAME_ENV`] (the truth checker's histories draw 0, as
/// recorders before 2026-12-06 wrote, or the product's).
pub fn small_keyframes(packing: bool) -> usize {
    if packing {
        return 0;
    }
    let debug = cfg!(debug_assertions)
        .then(|| std::env::var(DEBUG_SMALL_KEYFRAME_ENV).ok()?.parse().ok())
        .flatten();
    debug.unwrap_or(SMALL_KEYFRAME_BYTES)
}

/// See [`small_keyframes`].
pub const DEBUG_SMALL_KEYFRAME_ENV: &str = "KRPLY_DEBUG_SMALL_KEYFRAME_BYTES";

/// Whether the next version of an object, at `pace`, is stored as a new
/// keyframe without a delta being tried against its keyframe of
/// `keyframe_len` bytes, by a writer that makes keyframes of up to `up_to`
/// bytes again ([`small_keyframes`]): only a watched version (a list's item
/// is compressed harder, and costs more than a delta), and only when its
/// keyframe is not `at_hand`: decoded, or likely still so because the
/// object changed a short while ago. A delta against a decoded keyframe
/// costs about what a new keyframe does: W-deep's 500 hot objects keep
/// theirs decoded, and making theirs again took its writer 15 % more. A new
/// keyframe is kept decoded when it is not one that would be made again.
pub fn keyframe_again(pace: Pace, keyframe_len: usize, up_to: usize, at_hand: bool) -> bool {
    pace == Pace::Live && keyframe_len <= up_to && !at_hand
}

/// Versions packed into one zstd frame: 16 versions of a 3.4 KB Deployment take
/// about 15 bytes each (a delta alone about 60), and reading one of them means
/// decompressing about 55 KB. See docs/journal.md, "Packs".
pub const PACK_VERSIONS: usize = 16;
/// Versions in an object's first pack after its keyframe: most objects change a
/// few times only, and four versions packed take about 30 bytes each, against
/// 60 for a delta alone.
pub const FIRST_PACK_VERSIONS: usize = 4;
/// The most bytes of JSON in one pack: large objects are packed fewer at a time.
pub const PACK_MAX_BYTES: usize = 4 << 20;
/// The latest versions of an object that stay unpacked: the one the next event
/// most likely redelivers or the live feed compares with.
pub const HOT_VERSIONS: usize = 1;

/// How many of an object's unpacked deltas go into a pack now, given (body row,
/// bytes of JSON), oldest first, and how many of its keyframe's deltas this run
/// packed already: the oldest [`FIRST_PACK_VERSIONS`] for its first pack, then
/// [`PACK_VERSIONS`] at a time (fewer when they pass [`PACK_MAX_BYTES`]), once
/// [`HOT_VERSIONS`] would still stay unpacked after them; none when fewer than
/// two would go.
pub fn to_pack(unpacked: &[(i64, usize)], packed: usize) -> usize {
    let size = if packed == 0 {
        FIRST_PACK_VERSIONS
    } else {
        PACK_VERSIONS
    };
    if unpacked.len() < HOT_VERSIONS + size {
        return 0;
    }
    let mut bytes = 0;
    let n = unpacked
        .iter()
        .take(size)
        .take_while(|(_, len)| {
            bytes += *len;
            bytes <= PACK_MAX_BYTES
        })
        .count();
    if n >= 2 { n } else { 0 }
}

/// The packs to make of a keyframe's waiting deltas ((body row, bytes of
/// JSON), oldest first) once the object has a new keyframe: which of them go
/// in each. None of them is the latest any more, so all are packed,
/// [`PACK_VERSIONS`] at a time at most (fewer when they pass
/// [`PACK_MAX_BYTES`]); a version that would be alone in its pack stays as it
/// is.
pub fn orphans_to_pack(unpacked: &[(i64, usize)]) -> Vec<std::ops::Range<usize>> {
    let mut packs = Vec::new();
    let mut start = 0;
    while start < unpacked.len() {
        let mut bytes = 0;
        let n = unpacked[start..]
            .iter()
            .take(PACK_VERSIONS)
            .take_while(|(_, len)| {
                bytes += *len;
                bytes <= PACK_MAX_BYTES
            })
            .count()
            .max(1);
        if n >= 2 {
            packs.push(start..start + n);
        }
        start += n;
    }
    packs
}

/// Whether an event with resourceVersion `rv` is surely not yet stored, given the
/// last version stored for its object. resourceVersions are opaque to clients,
/// but kube-apiserver's are etcd revisions, which grow; when both parse as
/// numbers and `rv` is larger, the event is new. Anything else (equal, smaller,
/// not numbers) must be looked up: a redelivery after a reconnect, or a cluster
/// restored from a backup.
pub fn is_surely_new(last_rv: &str, rv: &str) -> bool {
    match (revision(last_rv), revision(rv)) {
        (Some(last), Some(new)) => new > last,
        _ => false,
    }
}

/// A resourceVersion as an etcd revision: plain decimal digits, no sign and no
/// leading zero, so that two different strings are never the same number.
fn revision(rv: &str) -> Option<u64> {
    let canonical =
        rv.bytes().all(|b| b.is_ascii_digit()) && !(rv.len() > 1 && rv.starts_with('0'));
    canonical.then(|| rv.parse().ok()).flatten()
}

/// Whether a delta is worth keeping rather than a new keyframe: reading it costs a
/// second decompression, so it must be clearly smaller.
pub fn keep_delta(delta_len: usize, keyframe_len: usize) -> bool {
    delta_len * 3 <= keyframe_len * 2
}

/// The bodies a stream collects to train its dictionary on.
#[derive(Debug, Default)]
pub struct Sampler {
    samples: Vec<Vec<u8>>,
    bytes: usize,
}

impl Sampler {
    /// Takes one body; returns the samples once there are enough to train on.
    pub fn add(&mut self, raw: &[u8]) -> Option<Vec<Vec<u8>>> {
        self.samples.push(raw.to_vec());
        self.bytes += raw.len();
        if self.samples.len() >= TRAIN_SAMPLES || self.bytes >= TRAIN_BYTES {
            self.bytes = 0;
            return Some(std::mem::take(&mut self.samples));
        }
        None
    }
}

/// Where a stream is with its dictionary.
enum StreamDict {
    Sampling(Sampler),
    Trained(Arc<EncoderDict>),
    /// zstd could not train one from this stream's bodies: keyframes go without.
    Untrainable,
}

/// An object's keyframe as stored.
#[derive(Clone)]
struct Keyframe {
    id: i64,
    data: Arc<[u8]>,
    dict: Option<i64>,
    raw_len: usize,
}

/// What the writer remembers of one object.
#[derive(Clone)]
struct ObjState {
    /// The resourceVersion of the last stored version.
    resource_version: String,
    /// Its body row and a hash of its bytes: an unchanged body (a relist of a
    /// quiet object) points at the same row.
    body: i64,
    hash: u64,
    keyframe: Keyframe,
    /// The deltas against `keyframe` stored in this run and not packed yet,
    /// oldest first: (body row, bytes of JSON).
    unpacked: Vec<(i64, usize)>,
    /// Deltas against `keyframe` stored in this run, packable or not.
    deltas: usize,
    /// The digest of what a default diff compares in the last version, when
    /// this run stored it (docs/journal.md, "Status-only changes").
    diff_digest: Option<u64>,
    /// [`BodyStore::versions`] when this run stored its last version; `None`
    /// when an earlier run did.
    stored_at: Option<u64>,
}

/// Only ever compared in this process, never stored: foldhash rather than
/// SipHash, which took a twentieth of the writer's time on W-wide.
fn hash(raw: &[u8]) -> u64 {
    foldhash::quality::FixedState::default().hash_one(raw)
}

/// The writer's body storage. Lives on the writer thread.
pub struct BodyStore {
    path: PathBuf,
    codec: Codec,
    keyframes: KeyframeCache,
    objects: IdMap<i64, ObjState>,
    dicts: HashMap<StreamId, StreamDict>,
    decoders: HashMap<i64, Arc<DecoderDict>>,
    /// Whether older versions are packed as they are written
    /// ([`pack_at_write`]).
    pack: bool,
    /// The largest keyframe made again rather than a delta against
    /// ([`small_keyframes`]).
    small_keyframes: usize,
    /// The versions this run was given to store.
    versions: u64,
    slots: Slots,
    /// The last resourceVersion of objects whose last version is kept in a
    /// block (docs/journal.md, "Cold history in blocks"), until this run
    /// stores their next: that one is a keyframe. With it, the id its body
    /// reads by, if it has one (the live feed's "before").
    cold_last: IdMap<i64, (String, Option<i64>)>,
    /// The diff digest of the last version of objects forgotten after a fold
    /// behind the writer ([`BodyStore::forget_folded`]), until this run
    /// stores their next: that version is the same, so the next is marked
    /// against it as if nothing was forgotten.
    kept_digests: IdMap<i64, u64>,
}

/// A version of an object to store.
pub struct NewVersion<'a> {
    pub resource_version: &'a str,
    pub raw: &'a [u8],
    /// Its [`crate::diff::compared_digest`], when taken.
    pub diff_digest: Option<u64>,
    /// How a keyframe of it is compressed.
    pub pace: Pace,
}

/// A stored body: its row, and the object's previous body, if any (a row,
/// or a version kept in a block: [`super::block::cold_body_id`]).
pub struct Stored {
    pub body: i64,
    pub previous: Option<i64>,
    /// Whether a default diff finds nothing changed since the object's
    /// previous version: both digests known and equal.
    pub same_for_diff: bool,
    /// Whether a default diff finds something changed since the object's
    /// previous version: both digests known and different.
    pub changed_for_diff: bool,
}

impl BodyStore {
    pub fn new(path: PathBuf, pack: bool) -> BodyStore {
        BodyStore {
            pack,
            small_keyframes: small_keyframes(pack),
            versions: 0,
            path,
            codec: Codec::new(),
            keyframes: KeyframeCache::new(KEYFRAME_CACHE_BYTES),
            objects: IdMap::default(),
            dicts: HashMap::new(),
            decoders: HashMap::new(),
            slots: Slots::default(),
            cold_last: IdMap::default(),
            kept_digests: IdMap::default(),
        }
    }

    fn sqlite(&self, e: rusqlite::Error) -> JournalError {
        JournalError::sqlite(&self.path, e)
    }

    fn codec_err(&self, source: super::codec::CodecError) -> JournalError {
        JournalError::Codec {
            path: self.path.clone(),
            source,
        }
    }

    /// The resourceVersion of the object's last stored version, loading what the
    /// writer keeps of it when this run has not touched it yet.
    pub fn last_version(
        &mut self,
        tx: &Transaction<'_>,
        object: i64,
    ) -> Result<Option<&str>, JournalError> {
        self.load(tx, object)?;
        Ok(self
            .objects
            .get(&object)
            .map(|s| s.resource_version.as_str())
            .or_else(|| self.cold_last.get(&object).map(|(rv, _)| rv.as_str())))
    }

    /// Forgets every keyframe decoded: a fold behind the writer deleted
    /// body rows.
    pub fn forget_keyframes(&mut self) {
        self.keyframes = KeyframeCache::new(KEYFRAME_CACHE_BYTES);
    }

    /// Forgets a deleted object (after its transaction committed).
    pub fn forget(&mut self, object: i64) {
        self.objects.remove(&object);
        self.cold_last.remove(&object);
        self.kept_digests.remove(&object);
    }

    /// Forgets an object a fold behind the writer folded (its bodies may be
    /// gone), but the diff digest of its last version, which the fold left
    /// as it was: the next version is marked against it (docs/journal.md,
    /// "Status-only changes"), not left unmarked for readers to diff.
    pub fn forget_folded(&mut self, object: i64) {
        let digest = self.objects.remove(&object).and_then(|s| s.diff_digest);
        self.cold_last.remove(&object);
        if let Some(digest) = digest {
            self.kept_digests.insert(object, digest);
        }
    }

    /// Forgets the diff digest of an object whose last version was an item
    /// of a list that failed: readers skip such items, so the next version is
    /// not compared with it.
    pub fn forget_diff_digest(&mut self, object: i64) {
        if let Some(s) = self.objects.get_mut(&object) {
            s.diff_digest = None;
        }
        self.kept_digests.remove(&object);
    }

    /// Stores `raw` as the next body of `object` in `stream`. An unchanged body
    /// (same resourceVersion, same bytes) is not stored again; a changed one
    /// becomes a delta against the object's keyframe while that is clearly
    /// smaller, else a new keyframe, compressed at the level for its pace.
    pub fn store(
        &mut self,
        tx: &Transaction<'_>,
        stream: StreamId,
        object: i64,
        version: NewVersion<'_>,
    ) -> Result<Stored, JournalError> {
        let NewVersion {
            resource_version,
            raw,
            diff_digest,
            pace,
        } = version;
        self.load(tx, object)?;
        // An object whose last version is kept in a block has no body row to
        // point at or keyframe to make a delta against: its next version is a
        // keyframe.
        let cold_previous = self.cold_last.remove(&object).and_then(|(_, body)| body);
        let digest = hash(raw);
        // Taken out and put back: no copy of the state per event.
        let state = self.objects.remove(&object);
        // Changed again soon enough that its keyframe, decoded, is likely
        // still among those kept (2 MiB of them): W-deep's 500 objects are,
        // W-wide's 20,000 are not.
        let hot = state.as_ref().and_then(|s| s.stored_at).is_some_and(|at| {
            self.versions - at <= (KEYFRAME_CACHE_BYTES / raw.len().max(1)) as u64
        });
        self.versions += 1;
        let previous = state.as_ref().map(|s| s.body).or(cold_previous);
        // Read back after a fold behind the writer, or kept in a block: the
        // digest kept for it.
        let kept_digest = self.kept_digests.remove(&object);
        let previous_digest = state.as_ref().and_then(|s| s.diff_digest).or(kept_digest);
        let (same_for_diff, changed_for_diff) = match (previous_digest, diff_digest) {
            (Some(before), Some(after)) => (before == after, before != after),
            _ => (false, false),
        };
        if let Some(mut s) = state {
            // A new resourceVersion always means new bytes, so only a relist
            // compares.
            if s.resource_version == resource_version && s.hash == digest {
                let body = s.body;
                s.diff_digest = diff_digest;
                self.objects.insert(object, s);
                return Ok(Stored {
                    body,
                    previous,
                    same_for_diff,
                    changed_for_diff,
                });
            }
            let decoded = self.keyframes.get(s.keyframe.id);
            let again = keyframe_again(
                pace,
                s.keyframe.data.len(),
                self.small_keyframes,
                hot || decoded.is_some(),
            );
            let delta = if again {
                None
            } else {
                let base = match decoded {
                    Some(base) => base,
                    None => self.keyframe_raw(tx, &s.keyframe)?,
                };
                let delta = self
                    .codec
                    .delta(raw, &base)
                    .map_err(|e| self.codec_err(e))?;
                keep_delta(delta.len(), s.keyframe.data.len()).then_some(delta)
            };
            if let Some(delta) = delta {
                let waiting = if self.pack {
                    self.slots.insert(tx, &delta).map_err(|e| self.sqlite(e))?
                } else {
                    None
                };
                let id = match waiting {
                    Some(at) => insert_waiting(tx, s.keyframe.id, raw.len(), at),
                    None => insert_body(tx, Some(s.keyframe.id), None, raw.len(), &delta),
                }
                .map_err(|e| self.sqlite(e))?;
                let mut unpacked = s.unpacked;
                let packed = s.deltas - unpacked.len();
                if waiting.is_some() {
                    unpacked.push((id, raw.len()));
                }
                let n = if self.pack {
                    to_pack(&unpacked, packed)
                } else {
                    0
                };
                if n > 0 {
                    let ids: Vec<i64> = unpacked.drain(..n).map(|(id, _)| id).collect();
                    self.pack(tx, &s.keyframe, &ids)?;
                }
                self.objects.insert(
                    object,
                    ObjState {
                        resource_version: resource_version.to_string(),
                        body: id,
                        hash: digest,
                        keyframe: s.keyframe,
                        unpacked,
                        deltas: s.deltas + 1,
                        diff_digest,
                        stored_at: Some(self.versions),
                    },
                );
                return Ok(Stored {
                    body: id,
                    previous,
                    same_for_diff,
                    changed_for_diff,
                });
            }
            // The object gets a new keyframe: its old keyframe's waiting
            // deltas will never be the latest again, so they are packed now
            // rather than left alone in `waiting`.
            if self.pack {
                for range in orphans_to_pack(&s.unpacked) {
                    let ids: Vec<i64> = s.unpacked[range].iter().map(|(id, _)| *id).collect();
                    self.pack(tx, &s.keyframe, &ids)?;
                }
            }
        }
        let dict = self.dict_for(tx, stream, raw)?;
        let frame = self
            .codec
            .keyframe(raw, dict.as_deref(), pace)
            .map_err(|e| self.codec_err(e))?;
        let dict_id = dict.map(|d| d.id);
        let id = insert_body(tx, None, dict_id, raw.len(), &frame).map_err(|e| self.sqlite(e))?;
        // Kept decoded when a later version may be a delta against it.
        if !keyframe_again(Pace::Live, frame.len(), self.small_keyframes, hot) {
            self.keyframes.insert(id, raw.into());
        }
        self.objects.insert(
            object,
            ObjState {
                resource_version: resource_version.to_string(),
                body: id,
                hash: digest,
                keyframe: Keyframe {
                    id,
                    data: frame.into(),
                    dict: dict_id,
                    raw_len: raw.len(),
                },
                unpacked: Vec::new(),
                deltas: 0,
                diff_digest,
                stored_at: Some(self.versions),
            },
        );
        Ok(Stored {
            body: id,
            previous,
            same_for_diff,
            changed_for_diff,
        })
    }

    /// Packs deltas of one keyframe (`ids`, oldest first) into one frame: their
    /// JSON one after the other, compressed against the keyframe. Their rows in
    /// `bodies` say where in the pack their bytes are; their `blobs` go.
    fn pack(
        &mut self,
        tx: &Transaction<'_>,
        keyframe: &Keyframe,
        ids: &[i64],
    ) -> Result<(), JournalError> {
        let base = self.keyframe_raw(tx, keyframe)?;
        let mut raw = Vec::new();
        let mut offsets = Vec::with_capacity(ids.len());
        let mut slots = Vec::with_capacity(ids.len());
        for id in ids {
            let row = body_row(tx, *id).map_err(|e| self.sqlite(e))?;
            slots.push(row.waiting);
            let version = self
                .codec
                .decode(&row.data, row.raw_len, Some(&base))
                .map_err(|e| self.codec_err(e))?;
            offsets.push(raw.len());
            raw.extend_from_slice(&version);
        }
        let frame = self
            .codec
            .pack(&raw, &base)
            .map_err(|e| self.codec_err(e))?;
        // Above every id a pack ever had (`packs_high`): a reader that
        // cached a deleted pack by its id must not read this one's bytes.
        tx.prepare_cached(
            "INSERT INTO packs(id, base_id, raw_len, data) VALUES (
                 max(coalesce((SELECT max(id) FROM packs), 0),
                     coalesce((SELECT CAST(value AS INTEGER) FROM meta
                               WHERE key = 'packs_high'), 0)) + 1,
                 ?1, ?2, ?3)",
        )
        .and_then(|mut s| s.execute(params![keyframe.id, raw.len() as i64, frame]))
        .map_err(|e| self.sqlite(e))?;
        let pack = tx.last_insert_rowid();
        // A journal of more than 16M packs keeps its later versions unpacked
        // (offsets always fit: a pack holds at most PACK_MAX_BYTES).
        if super::schema::pack_ref(pack, 0).is_none() {
            tx.execute("DELETE FROM packs WHERE id = ?1", params![pack])
                .map_err(|e| self.sqlite(e))?;
            return Ok(());
        }
        for ((id, offset), slot) in ids.iter().zip(offsets).zip(slots) {
            let Some(at) = super::schema::pack_ref(pack, offset) else {
                continue;
            };
            tx.prepare_cached("UPDATE bodies SET pack_ref = ?2 WHERE id = ?1")
                .and_then(|mut s| s.execute(params![id, at]))
                .map_err(|e| self.sqlite(e))?;
            if let Some(slot) = slot {
                self.slots.free(tx, slot).map_err(|e| self.sqlite(e))?;
            }
        }
        Ok(())
    }

    /// The stream's dictionary for a new keyframe, sampling `raw` while there is
    /// none and training one (stored in this transaction) once there are enough
    /// samples.
    fn dict_for(
        &mut self,
        tx: &Transaction<'_>,
        stream: StreamId,
        raw: &[u8],
    ) -> Result<Option<Arc<EncoderDict>>, JournalError> {
        if !self.dicts.contains_key(&stream) {
            let stored: Option<(i64, Vec<u8>)> = tx
                .prepare_cached(
                    "SELECT id, data FROM dicts WHERE stream_id = ?1 ORDER BY id DESC LIMIT 1",
                )
                .and_then(|mut s| {
                    s.query_row(params![stream], |r| Ok((r.get(0)?, r.get(1)?)))
                        .optional()
                })
                .map_err(|e| self.sqlite(e))?;
            let state = match stored {
                Some((id, data)) => StreamDict::Trained(Arc::new(
                    EncoderDict::new(id, &data).map_err(|e| self.codec_err(e))?,
                )),
                None => StreamDict::Sampling(Sampler::default()),
            };
            self.dicts.insert(stream, state);
        }
        let slot = self.dicts.get_mut(&stream).expect("inserted above");
        let samples = match slot {
            StreamDict::Trained(d) => return Ok(Some(d.clone())),
            StreamDict::Untrainable => return Ok(None),
            StreamDict::Sampling(sampler) => match sampler.add(raw) {
                None => return Ok(None),
                Some(samples) => samples,
            },
        };
        let Some(data) = super::codec::train(&samples) else {
            *slot = StreamDict::Untrainable;
            return Ok(None);
        };
        tx.prepare_cached("INSERT INTO dicts(stream_id, data) VALUES (?1, ?2)")
            .and_then(|mut s| s.execute(params![stream, data]))
            .map_err(|e| JournalError::sqlite(&self.path, e))?;
        let id = tx.last_insert_rowid();
        let dict = EncoderDict::new(id, &data).map_err(|source| JournalError::Codec {
            path: self.path.clone(),
            source,
        });
        let dict = Arc::new(dict?);
        *slot = StreamDict::Trained(dict.clone());
        Ok(Some(dict))
    }

    /// The decoded bytes of a keyframe: from the cache, else from its stored frame
    /// (held in memory).
    fn keyframe_raw(
        &mut self,
        tx: &Transaction<'_>,
        k: &Keyframe,
    ) -> Result<Arc<[u8]>, JournalError> {
        if let Some(raw) = self.keyframes.get(k.id) {
            return Ok(raw);
        }
        let raw: Arc<[u8]> = match k.dict {
            None => self.codec.decode(&k.data, k.raw_len, None),
            Some(d) => {
                let dict = self.decoder(tx, d)?;
                self.codec.decode_with_dict(&k.data, k.raw_len, &dict)
            }
        }
        .map_err(|e| self.codec_err(e))?
        .into();
        self.keyframes.insert(k.id, raw.clone());
        Ok(raw)
    }

    fn decoder(&mut self, tx: &Transaction<'_>, id: i64) -> Result<Arc<DecoderDict>, JournalError> {
        if let Some(d) = self.decoders.get(&id) {
            return Ok(d.clone());
        }
        let data: Vec<u8> = tx
            .prepare_cached("SELECT data FROM dicts WHERE id = ?1")
            .and_then(|mut s| s.query_row(params![id], |r| r.get(0)))
            .map_err(|e| self.sqlite(e))?;
        let dict = Arc::new(DecoderDict::new(id, &data).map_err(|e| self.codec_err(e))?);
        self.decoders.insert(id, dict.clone());
        Ok(dict)
    }

    /// The exact bytes of a stored body, read from the journal (the live feed's
    /// "before", a few a second).
    pub fn read(&mut self, tx: &Transaction<'_>, id: i64) -> Result<Vec<u8>, JournalError> {
        if super::block::cold_body_parts(id).is_some() {
            return super::cold::body_bytes(tx, &self.path, &mut self.codec, id)
                .map(|(raw, _)| raw);
        }
        let (delta, keyframe) = self.fetch(tx, id)?;
        self.decode(tx, delta.as_ref(), &keyframe)
    }

    /// Body `id`'s row when it is a delta, and its keyframe (the row itself for
    /// a keyframe).
    fn fetch(
        &self,
        tx: &Transaction<'_>,
        id: i64,
    ) -> Result<(Option<BodyRow>, Keyframe), JournalError> {
        let row = body_row(tx, id).map_err(|e| self.sqlite(e))?;
        match row.base {
            None => Ok((None, keyframe_of(row, id))),
            Some(base) => {
                let k = body_row(tx, base).map_err(|e| self.sqlite(e))?;
                Ok((Some(row), keyframe_of(k, base)))
            }
        }
    }

    /// The bytes of a fetched body: the keyframe's, or the delta's (in place, in
    /// `blobs` or in a pack) against it.
    fn decode(
        &mut self,
        tx: &Transaction<'_>,
        delta: Option<&BodyRow>,
        keyframe: &Keyframe,
    ) -> Result<Vec<u8>, JournalError> {
        let base_raw = self.keyframe_raw(tx, keyframe)?;
        let Some(row) = delta else {
            return Ok(base_raw.to_vec());
        };
        let Some((pack, offset)) = row.pack else {
            return self
                .codec
                .decode(&row.data, row.raw_len, Some(&base_raw))
                .map_err(|e| self.codec_err(e));
        };
        let (raw_len, data): (i64, Vec<u8>) = tx
            .prepare_cached("SELECT raw_len, data FROM packs WHERE id = ?1")
            .and_then(|mut s| s.query_row(params![pack], |r| Ok((r.get(0)?, r.get(1)?))))
            .map_err(|e| self.sqlite(e))?;
        let all = self
            .codec
            .decode(&data, raw_len.max(0) as usize, Some(&base_raw))
            .map_err(|e| self.codec_err(e))?;
        super::codec::slice_of_pack(&all, offset, row.raw_len)
            .map(<[u8]>::to_vec)
            .map_err(|e| self.codec_err(e))
    }

    /// Loads what the writer keeps of an object from its last stored version,
    /// once per run.
    fn load(&mut self, tx: &Transaction<'_>, object: i64) -> Result<(), JournalError> {
        if self.objects.contains_key(&object) || self.cold_last.contains_key(&object) {
            return Ok(());
        }
        let last: Option<(i64, Option<String>)> = tx
            .prepare_cached(
                "SELECT body_id, resource_version FROM records
                 WHERE object_id = ?1 AND body_id IS NOT NULL ORDER BY seq DESC LIMIT 1",
            )
            .and_then(|mut s| {
                s.query_row(params![object], |r| Ok((r.get(0)?, r.get(1)?)))
                    .optional()
            })
            .map_err(|e| self.sqlite(e))?;
        let Some((body, rv)) = last else {
            if let Some((r, body)) = super::cold::last_record(tx, &self.path, object)? {
                let rv = r.resource_version.map(super::wire::Rv::into_text);
                self.cold_last
                    .insert(object, (rv.unwrap_or_default(), body));
            }
            return Ok(());
        };
        // Each row read once: the last body, and its keyframe if it is a delta.
        let (delta, keyframe) = self.fetch(tx, body)?;
        let raw = self.decode(tx, delta.as_ref(), &keyframe)?;
        // The deltas an earlier run left waiting against this keyframe are
        // packed with this run's.
        let unpacked = if self.pack && delta.is_some() {
            left_waiting(tx, object, keyframe.id).map_err(|e| self.sqlite(e))?
        } else {
            Vec::new()
        };
        self.objects.insert(
            object,
            ObjState {
                resource_version: rv.unwrap_or_default(),
                body,
                hash: hash(&raw),
                keyframe,
                deltas: unpacked.len(),
                unpacked,
                // Digests are of this process only: the next version is
                // compared as usual.
                diff_digest: None,
                stored_at: None,
            },
        );
        Ok(())
    }
}

/// The most of an object's latest records [`left_waiting`] looks through:
/// an earlier run packed its deltas once [`PACK_VERSIONS`] + 1 waited.
const WAITING_LOOKBACK: usize = 4 * PACK_VERSIONS;

/// The deltas against `keyframe` still waiting to be packed among `object`'s
/// latest records, oldest first, as (body row, bytes of JSON): from the
/// newest back to the first that is not one (the keyframe, a packed delta,
/// another keyframe's delta). Packs take the oldest first, so none waits
/// before that. At most [`WAITING_LOOKBACK`] records are read (by the
/// object's index); an object whose waiting deltas go further back packs only
/// those.
fn left_waiting(
    tx: &Transaction<'_>,
    object: i64,
    keyframe: i64,
) -> rusqlite::Result<Vec<(i64, usize)>> {
    let mut stmt = tx.prepare_cached(&format!(
        "SELECT b.id, b.base_id, b.raw_len, b.pack_ref FROM records r JOIN bodies b ON b.id = r.body_id
         WHERE r.object_id = ?1 AND r.body_id IS NOT NULL ORDER BY r.seq DESC LIMIT {WAITING_LOOKBACK}"
    ))?;
    let rows = stmt.query_map(params![object], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, Option<i64>>(1)?,
            r.get::<_, i64>(2)?,
            r.get::<_, Option<i64>>(3)?,
        ))
    })?;
    let mut waiting: Vec<(i64, usize)> = Vec::new();
    for row in rows {
        let (id, base, raw_len, pack_ref) = row?;
        // A relist of an unchanged object points at the same row again.
        if waiting.last().is_some_and(|(last, _)| *last == id) {
            continue;
        }
        let still = base == Some(keyframe)
            && pack_ref
                .and_then(super::schema::parse_waiting_ref)
                .is_some();
        if !still {
            break;
        }
        waiting.push((id, raw_len.max(0) as usize));
    }
    waiting.reverse();
    Ok(waiting)
}

fn keyframe_of(row: BodyRow, id: i64) -> Keyframe {
    Keyframe {
        id,
        data: row.data.into(),
        dict: row.dict,
        raw_len: row.raw_len,
    }
}

/// The body row of a delta waiting to be packed, its bytes in `waiting` at
/// `pack_ref`.
fn insert_waiting(
    tx: &Transaction<'_>,
    base: i64,
    raw_len: usize,
    pack_ref: i64,
) -> rusqlite::Result<i64> {
    tx.prepare_cached(
        "INSERT INTO bodies(base_id, raw_len, data, pack_ref) VALUES (?1, ?2, x'', ?3)",
    )?
    .execute(params![base, raw_len as i64, pack_ref])?;
    Ok(tx.last_insert_rowid())
}

/// The most free stretches of slots [`Slots`] takes from what earlier runs
/// left in `waiting`: the lowest ones, 1 MiB of them.
const MAX_HOLES: usize = 1 << 16;
/// The most taken slots tried before a new one: each try fails only when
/// another writer of the journal took that slot meanwhile.
const SLOT_TRIES: usize = 4;

/// Which slots of `waiting` are free for the next delta: those packing freed
/// in this run, the latest first (their pages were just written), then the
/// holes earlier runs left, lowest first; else a new slot after the last.
/// docs/journal.md, "Packs".
#[derive(Default)]
struct Slots {
    freed: Vec<i64>,
    /// Free stretches below the last slot, read from `waiting` at the first
    /// delta of the run (`None` until then).
    holes: Option<std::collections::VecDeque<std::ops::Range<i64>>>,
}

impl Slots {
    /// Stores a waiting delta's bytes; returns its `bodies.pack_ref`, or
    /// `None` when no slot fits (the delta then stays in its body row).
    fn insert(&mut self, tx: &Transaction<'_>, data: &[u8]) -> rusqlite::Result<Option<i64>> {
        for _ in 0..SLOT_TRIES {
            let Some(slot) = self.take(tx)? else { break };
            let stored = tx
                .prepare_cached("INSERT OR IGNORE INTO waiting(slot, data) VALUES (?1, ?2)")?
                .execute(params![slot, data])?;
            if stored == 1 {
                return Ok(super::schema::waiting_ref(slot));
            }
        }
        tx.prepare_cached("INSERT INTO waiting(data) VALUES (?1)")?
            .execute(params![data])?;
        let slot = tx.last_insert_rowid();
        let at = super::schema::waiting_ref(slot);
        if at.is_none() {
            tx.prepare_cached("DELETE FROM waiting WHERE slot = ?1")?
                .execute(params![slot])?;
        }
        Ok(at)
    }

    /// Deletes a packed delta's bytes; its slot is the next one taken.
    fn free(&mut self, tx: &Transaction<'_>, slot: i64) -> rusqlite::Result<()> {
        tx.prepare_cached("DELETE FROM waiting WHERE slot = ?1")?
            .execute(params![slot])?;
        self.freed.push(slot);
        Ok(())
    }

    fn take(&mut self, tx: &Transaction<'_>) -> rusqlite::Result<Option<i64>> {
        if let Some(slot) = self.freed.pop() {
            return Ok(Some(slot));
        }
        let holes = match &mut self.holes {
            Some(holes) => holes,
            None => self.holes.insert(holes_in(tx)?),
        };
        let Some(first) = holes.front_mut() else {
            return Ok(None);
        };
        let slot = first.start;
        first.start += 1;
        if first.is_empty() {
            holes.pop_front();
        }
        Ok(Some(slot))
    }
}

/// The free stretches of slots below the last one in `waiting`, lowest
/// first, at most [`MAX_HOLES`]: one pass over its keys.
fn holes_in(
    tx: &Transaction<'_>,
) -> rusqlite::Result<std::collections::VecDeque<std::ops::Range<i64>>> {
    let mut stmt = tx.prepare("SELECT slot FROM waiting ORDER BY slot")?;
    let slots = stmt.query_map([], |r| r.get::<_, i64>(0))?;
    Ok(free_below(
        slots.collect::<rusqlite::Result<Vec<_>>>()?.into_iter(),
        MAX_HOLES,
    ))
}

/// The gaps between ascending `taken` slots, from slot 0, at most `most`.
fn free_below(
    taken: impl Iterator<Item = i64>,
    most: usize,
) -> std::collections::VecDeque<std::ops::Range<i64>> {
    let mut holes = std::collections::VecDeque::new();
    let mut next = 0;
    for slot in taken {
        if holes.len() == most {
            break;
        }
        if slot > next {
            holes.push_back(next..slot);
        }
        next = next.max(slot + 1);
    }
    holes
}

fn insert_body(
    tx: &Transaction<'_>,
    base: Option<i64>,
    dict: Option<i64>,
    raw_len: usize,
    data: &[u8],
) -> rusqlite::Result<i64> {
    tx.prepare_cached(
        "INSERT INTO bodies(base_id, dict_id, raw_len, data) VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![base, dict, raw_len as i64, data])?;
    Ok(tx.last_insert_rowid())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_larger_numeric_version_is_surely_new() {
        assert!(is_surely_new("10", "11"));
        assert!(is_surely_new("9", "10"), "numbers, not text");
        assert!(!is_surely_new("11", "11"), "a redelivery");
        assert!(!is_surely_new("11", "10"), "older: looked up");
        assert!(!is_surely_new("", "10"), "nothing known: looked up");
        assert!(!is_surely_new("a1", "a2"), "opaque versions: looked up");
        assert!(!is_surely_new("10", "+11"), "not plain digits: looked up");
        assert!(!is_surely_new("10", "011"), "a leading zero: looked up");
        assert!(!is_surely_new("", ""));
    }

    #[test]
    fn only_a_watched_version_of_an_object_with_a_small_keyframe_not_at_hand_is_a_keyframe_again() {
        let up_to = small_keyframes(false);
        assert_eq!(small_keyframes(true), 0, "a packing writer keeps deltas");
        assert!(keyframe_again(Pace::Live, up_to, up_to, false));
        assert!(!keyframe_again(Pace::Live, up_to + 1, up_to, false));
        assert!(
            !keyframe_again(Pace::Listed, 40, up_to, false),
            "a list's item"
        );
        assert!(!keyframe_again(Pace::Live, 40, 0, false), "none made again");
        assert!(
            !keyframe_again(Pace::Live, 40, up_to, true),
            "decoded at hand"
        );
    }

    #[test]
    fn a_delta_must_be_clearly_smaller_than_a_keyframe() {
        assert!(keep_delta(40, 900));
        assert!(keep_delta(60, 90));
        assert!(!keep_delta(61, 90));
        assert!(!keep_delta(900, 900));
    }

    #[test]
    fn the_oldest_versions_are_packed_once_enough_are_unpacked() {
        let waiting = |n: usize, len: usize| vec![(7, len); n];
        // The first pack of a keyframe's deltas is small, later ones large.
        let first = HOT_VERSIONS + FIRST_PACK_VERSIONS;
        assert_eq!(to_pack(&waiting(first - 1, 3000), 0), 0);
        assert_eq!(to_pack(&waiting(first, 3000), 0), FIRST_PACK_VERSIONS);
        let enough = HOT_VERSIONS + PACK_VERSIONS;
        assert_eq!(to_pack(&waiting(first, 3000), 4), 0);
        assert_eq!(to_pack(&waiting(enough - 1, 3000), 4), 0);
        assert_eq!(to_pack(&waiting(enough, 3000), 4), PACK_VERSIONS);
        // Large objects: fewer at a time, and never one alone.
        assert_eq!(to_pack(&waiting(enough, PACK_MAX_BYTES / 4), 4), 4);
        assert_eq!(to_pack(&waiting(enough, PACK_MAX_BYTES), 4), 0);
    }

    #[test]
    fn a_replaced_keyframes_waiting_deltas_are_all_packed_but_a_lone_one() {
        let waiting = |lens: &[usize]| lens.iter().map(|l| (7, *l)).collect::<Vec<_>>();
        assert!(orphans_to_pack(&[]).is_empty());
        assert!(
            orphans_to_pack(&waiting(&[3000])).is_empty(),
            "alone: stays"
        );
        assert_eq!(orphans_to_pack(&waiting(&[3000; 2])), vec![0..2]);
        assert_eq!(orphans_to_pack(&waiting(&[3000; 16])), vec![0..16]);
        assert_eq!(orphans_to_pack(&waiting(&[3000; 18])), vec![0..16, 16..18]);
        assert_eq!(
            orphans_to_pack(&waiting(&[3000; 17])),
            vec![0..16],
            "the 17th would be alone"
        );
        // Large ones: fewer at a time; one too large for any pack stays, and
        // those after it are still packed.
        let big = PACK_MAX_BYTES / 2;
        assert_eq!(
            orphans_to_pack(&waiting(&[big, big, big, PACK_MAX_BYTES + 1, 10, 10])),
            vec![0..2, 4..6]
        );
    }

    #[test]
    fn the_free_slots_are_the_gaps_below_the_last_taken() {
        let holes = |taken: &[i64], most| Vec::from(free_below(taken.iter().copied(), most));
        assert_eq!(holes(&[], 8), vec![]);
        assert_eq!(holes(&[0, 1, 2], 8), vec![]);
        assert_eq!(holes(&[3, 4, 9], 8), vec![0..3, 5..9]);
        assert_eq!(
            holes(&[1, 3, 5, 7], 2),
            vec![0..1, 2..3],
            "the lowest, at most"
        );
    }

    #[test]
    fn the_sampler_hands_over_its_samples_once_enough() {
        let mut s = Sampler::default();
        for _ in 0..TRAIN_SAMPLES - 1 {
            assert!(s.add(b"{}").is_none());
        }
        assert_eq!(s.add(b"{}").map(|v| v.len()), Some(TRAIN_SAMPLES));
        // Large bodies: by bytes.
        let big = vec![b'x'; TRAIN_BYTES / 2];
        assert!(s.add(&big).is_none());
        assert_eq!(s.add(&big).map(|v| v.len()), Some(2));
    }
}
