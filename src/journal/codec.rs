//! How object bodies are stored: zstd frames, either alone (a *keyframe*) or as a
//! delta against an earlier keyframe of the same object (zstd with the keyframe's
//! bytes as a raw-content dictionary).
//!
//! Successive versions of one object differ in a few fields, so a delta is tens
//! of bytes where the JSON is kilobytes. Reading any version costs at most two
//! decompressions (keyframe, then delta), whatever the history length.
//!
//! Objects of one stream share most of their text (field names, managers, label
//! keys), so a keyframe is compressed with a dictionary trained on the stream's
//! first bodies ([`train`]): about a tenth of its size alone. See docs/journal.md,
//! "Bodies".

use std::fmt;
use zstd::zstd_safe;

/// zstd level for a list's keyframes, written once per object: on the
/// recorder bench's Deployments, level 6 makes a keyframe with the
/// dictionary a fifth smaller than level 3 (about 145 bytes against 175),
/// for about 12 µs more each.
const LEVEL: i32 = 6;
/// zstd level for the keyframes of events, made while the watch streams:
/// on W-wide a fifth of the events become keyframes, and at level 6 they
/// held the writer back (docs/journal.md, "Where the recorder's time goes").
const LIVE_LEVEL: i32 = 3;

/// How a keyframe is compressed: [`Pace::Listed`] for a list's items,
/// [`Pace::Live`] for a watch's events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pace {
    Listed,
    Live,
}

impl Pace {
    fn level(self) -> i32 {
        match self {
            Pace::Listed => LEVEL,
            Pace::Live => LIVE_LEVEL,
        }
    }
}
/// zstd level for packs: consecutive versions of one object, mostly long matches
/// against each other; level 3 packs them nearly as tightly as level 5 at a
/// quarter of the time (measured on the recorder bench's W-deep).
const PACK_LEVEL: i32 = 3;
/// zstd level for deltas: a delta is mostly one long match against its
/// keyframe, which the fastest level finds as well as any; what costs is
/// indexing the keyframe, and level 1 indexes it with one small hash table.
const DELTA_LEVEL: i32 = 1;

/// The most bytes of a stream's dictionary.
pub const DICT_BYTES: usize = 16 << 10;

/// Trains a dictionary from sample bodies of one stream; `None` when zstd cannot
/// make one of them (too few, too small or too alike samples), and the stream
/// then keeps compressing without one.
pub fn train(samples: &[Vec<u8>]) -> Option<Vec<u8>> {
    let dict = zstd::dict::from_samples(samples, DICT_BYTES).ok()?;
    // A dictionary zstd could not fill is not worth its bytes.
    (dict.len() >= 256).then_some(dict)
}

/// A stream's dictionary as the writer uses it: compressing keyframes.
pub struct EncoderDict {
    /// Its row in `dicts`.
    pub id: i64,
    /// Prepared for [`Pace::Listed`] and for [`Pace::Live`].
    listed: zstd_safe::CDict<'static>,
    live: zstd_safe::CDict<'static>,
}

impl EncoderDict {
    /// Loads a dictionary for compressing; a damaged one (a `dicts` row of a
    /// damaged journal) is an error, not a panic.
    pub fn new(id: i64, dict: &[u8]) -> Result<EncoderDict, CodecError> {
        let prepared = |pace: Pace| {
            zstd_safe::CDict::try_create(dict, pace.level())
                .ok_or_else(|| CodecError(format!("dictionary {id} cannot be loaded")))
        };
        Ok(EncoderDict {
            id,
            listed: prepared(Pace::Listed)?,
            live: prepared(Pace::Live)?,
        })
    }
}

/// A stream's dictionary as readers use it: decoding keyframes. Shared between
/// threads (a diff decodes on several).
pub struct DecoderDict {
    pub id: i64,
    ddict: zstd_safe::DDict<'static>,
}

impl fmt::Debug for DecoderDict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DecoderDict({})", self.id)
    }
}

impl DecoderDict {
    pub fn new(id: i64, dict: &[u8]) -> Result<DecoderDict, CodecError> {
        let ddict = zstd_safe::DDict::try_create(dict)
            .ok_or_else(|| CodecError(format!("dictionary {id} cannot be loaded")))?;
        Ok(DecoderDict { id, ddict })
    }
}

/// A zstd failure while storing or reading a body.
#[derive(Debug)]
pub struct CodecError(pub String);

impl fmt::Display for CodecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "body codec: {}", self.0)
    }
}

impl std::error::Error for CodecError {}

fn zstd_err(code: usize) -> CodecError {
    CodecError(zstd_safe::get_error_name(code).to_string())
}

/// Reusable compression and decompression contexts (one per thread). Each is
/// made on first use: readers never compress, and making a compression
/// context per timeline was 3 % of a `log` over a day; `status` opens the
/// journal and decompresses nothing.
pub struct Codec {
    cctx: Option<zstd_safe::CCtx<'static>>,
    dctx: Option<zstd_safe::DCtx<'static>>,
}

impl Default for Codec {
    fn default() -> Self {
        Codec::new()
    }
}

impl Codec {
    pub fn new() -> Codec {
        Codec {
            cctx: None,
            dctx: None,
        }
    }

    fn dctx(&mut self) -> &mut zstd_safe::DCtx<'static> {
        self.dctx.get_or_insert_with(zstd_safe::DCtx::create)
    }

    fn cctx(&mut self) -> &mut zstd_safe::CCtx<'static> {
        self.cctx.get_or_insert_with(zstd_safe::CCtx::create)
    }

    /// Compresses a body on its own, with its stream's dictionary when there
    /// is one, at the level for `pace`.
    pub fn keyframe(
        &mut self,
        raw: &[u8],
        dict: Option<&EncoderDict>,
        pace: Pace,
    ) -> Result<Vec<u8>, CodecError> {
        let mut out = Vec::with_capacity(zstd_safe::compress_bound(raw.len()));
        match (dict, pace) {
            (None, _) => self.cctx().compress(&mut out, raw, pace.level()),
            (Some(d), Pace::Listed) => self.cctx().compress_using_cdict(&mut out, raw, &d.listed),
            (Some(d), Pace::Live) => self.cctx().compress_using_cdict(&mut out, raw, &d.live),
        }
        .map_err(zstd_err)?;
        Ok(out)
    }

    /// Restores a keyframe compressed with a dictionary.
    pub fn decode_with_dict(
        &mut self,
        data: &[u8],
        raw_len: usize,
        dict: &DecoderDict,
    ) -> Result<Vec<u8>, CodecError> {
        self.decode_ddict(data, raw_len, &dict.ddict)
    }

    /// Restores a frame compressed against a prepared dictionary.
    fn decode_ddict(
        &mut self,
        data: &[u8],
        raw_len: usize,
        ddict: &zstd_safe::DDict<'static>,
    ) -> Result<Vec<u8>, CodecError> {
        let mut out = output_for(data, raw_len)?;
        let written = self
            .dctx()
            .decompress_using_ddict(&mut out, data, ddict)
            .map_err(zstd_err)?;
        exact(out, written, raw_len)
    }

    /// Compresses several versions of one object, one after the other, against
    /// the bytes of their keyframe.
    pub fn pack(&mut self, raw: &[u8], base: &[u8]) -> Result<Vec<u8>, CodecError> {
        let mut out = Vec::with_capacity(zstd_safe::compress_bound(raw.len()));
        self.cctx()
            .compress_using_dict(&mut out, raw, base, PACK_LEVEL)
            .map_err(zstd_err)?;
        Ok(out)
    }

    /// Compresses a body against the bytes of its keyframe.
    pub fn delta(&mut self, raw: &[u8], base: &[u8]) -> Result<Vec<u8>, CodecError> {
        let mut out = Vec::with_capacity(zstd_safe::compress_bound(raw.len()));
        self.cctx()
            .compress_using_dict(&mut out, raw, base, DELTA_LEVEL)
            .map_err(zstd_err)?;
        Ok(out)
    }

    /// Restores the exact bytes of a body; `base` is the decoded keyframe for a
    /// delta, `None` for a keyframe.
    pub fn decode(
        &mut self,
        data: &[u8],
        raw_len: usize,
        base: Option<&[u8]>,
    ) -> Result<Vec<u8>, CodecError> {
        let mut out = output_for(data, raw_len)?;
        let written = match base {
            None => self.dctx().decompress(&mut out, data),
            Some(base) => self.dctx().decompress_using_dict(&mut out, data, base),
        }
        .map_err(zstd_err)?;
        exact(out, written, raw_len)
    }
}

impl Codec {
    /// Restores a frame compressed alone whose header declares its length
    /// (every frame [`Codec::keyframe`] makes does); a frame that declares
    /// none, or more than any object, is an error.
    pub fn decode_declared(&mut self, data: &[u8]) -> Result<Vec<u8>, CodecError> {
        match zstd_safe::get_frame_content_size(data) {
            Ok(Some(n)) if n <= crate::model::MAX_OBJECT_BYTES as u64 => {
                self.decode(data, n as usize, None)
            }
            Ok(Some(n)) => Err(CodecError(format!(
                "frame declares {n} bytes, more than any object"
            ))),
            _ => Err(CodecError("frame declares no length".into())),
        }
    }
}

/// A decoded body, if it has the length its row claims.
fn exact(out: Vec<u8>, written: usize, raw_len: usize) -> Result<Vec<u8>, CodecError> {
    if written != raw_len {
        return Err(CodecError(format!(
            "body decoded to {written} bytes, expected {raw_len}"
        )));
    }
    Ok(out)
}

/// The bytes of one version inside a decoded pack; a damaged row pointing outside
/// the pack is an error.
pub fn slice_of_pack(pack: &[u8], offset: usize, raw_len: usize) -> Result<&[u8], CodecError> {
    offset
        .checked_add(raw_len)
        .and_then(|end| pack.get(offset..end))
        .ok_or_else(|| {
            CodecError(format!(
                "body at {offset}+{raw_len} lies outside its pack of {} bytes",
                pack.len()
            ))
        })
}

/// The buffer a stored body decodes into. A damaged row may claim any length: one
/// larger than any object, or other than the length its zstd frame declares, is
/// refused before anything is allocated.
fn output_for(data: &[u8], raw_len: usize) -> Result<Vec<u8>, CodecError> {
    if raw_len > crate::model::MAX_OBJECT_BYTES {
        return Err(CodecError(format!(
            "body claims {raw_len} bytes, more than any object"
        )));
    }
    if let Ok(Some(declared)) = zstd_safe::get_frame_content_size(data)
        && declared != raw_len as u64
    {
        return Err(CodecError(format!(
            "body frame declares {declared} bytes, the row {raw_len}"
        )));
    }
    Ok(Vec::with_capacity(raw_len))
}

/// A keyframe prepared for decoding many deltas against it (a timeline reads
/// dozens of versions of one object in a row).
pub struct PreparedKeyframe {
    pub id: i64,
    ddict: zstd_safe::DDict<'static>,
}

impl PreparedKeyframe {
    pub fn new(id: i64, raw: &[u8]) -> Result<PreparedKeyframe, CodecError> {
        let ddict = zstd_safe::DDict::try_create(raw)
            .ok_or_else(|| CodecError("cannot prepare a keyframe".into()))?;
        Ok(PreparedKeyframe { id, ddict })
    }
}

impl Codec {
    /// Restores a delta against a prepared keyframe.
    pub fn decode_prepared(
        &mut self,
        data: &[u8],
        raw_len: usize,
        base: &PreparedKeyframe,
    ) -> Result<Vec<u8>, CodecError> {
        self.decode_ddict(data, raw_len, &base.ddict)
    }
}

/// A bounded cache of decoded keyframes, keyed by body id.
///
/// Two generations: lookups promote into the young one; when the young one
/// outgrows half the budget, the old one is dropped and the young one ages. O(1)
/// per operation and never more than `budget` bytes of bodies.
pub struct KeyframeCache {
    budget: usize,
    young: std::collections::HashMap<i64, std::sync::Arc<[u8]>>,
    young_bytes: usize,
    old: std::collections::HashMap<i64, std::sync::Arc<[u8]>>,
}

impl KeyframeCache {
    pub fn new(budget: usize) -> KeyframeCache {
        KeyframeCache {
            budget,
            young: Default::default(),
            young_bytes: 0,
            old: Default::default(),
        }
    }

    pub fn get(&mut self, id: i64) -> Option<std::sync::Arc<[u8]>> {
        if let Some(v) = self.young.get(&id) {
            return Some(v.clone());
        }
        let v = self.old.remove(&id)?;
        self.insert(id, v.clone());
        Some(v)
    }

    pub fn insert(&mut self, id: i64, raw: std::sync::Arc<[u8]>) {
        self.young_bytes += raw.len();
        if let Some(prev) = self.young.insert(id, raw) {
            self.young_bytes -= prev.len();
        }
        if self.young_bytes > self.budget / 2 {
            self.old = std::mem::take(&mut self.young);
            self.young_bytes = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(replicas: u32, image: &str) -> Vec<u8> {
        format!(
            r#"{{"apiVersion":"apps/v1","kind":"Deployment","metadata":{{"name":"frontend","namespace":"shop","resourceVersion":"{replicas}00","labels":{{"app":"frontend"}}}},"spec":{{"replicas":{replicas},"template":{{"spec":{{"containers":[{{"name":"server","image":"{image}","ports":[{{"containerPort":8080}}],"env":[{{"name":"PORT","value":"8080"}},{{"name":"PRODUCT_CATALOG_SERVICE_ADDR","value":"productcatalogservice:3550"}}]}}]}}}}}}}}"#
        )
        .into_bytes()
    }

    #[test]
    fn a_damaged_length_is_an_error_not_an_allocation() {
        // Found by the journal_body fuzz target: a row claiming 65 TB made the
        // reader try to allocate it, and the process abort.
        let mut codec = Codec::new();
        let body = version(3, "shop/frontend:v1");
        let key = codec.keyframe(&body, None, Pace::Listed).unwrap();
        let huge = codec.decode(&key, 0x3b00_0000_00f7, None).unwrap_err();
        assert!(huge.0.contains("more than any object"), "{huge}");
        let short = codec.decode(&key, body.len() - 1, None).unwrap_err();
        assert!(short.0.contains("declares"), "{short}");
        let delta = codec.delta(&body, &body).unwrap();
        let prepared = PreparedKeyframe::new(1, &body).unwrap();
        assert!(
            codec
                .decode_prepared(&delta, usize::MAX, &prepared)
                .is_err()
        );
        assert_eq!(codec.decode(&key, body.len(), None).unwrap(), body);
    }

    #[test]
    fn keyframe_and_delta_round_trip_exactly() {
        let mut c = Codec::new();
        let v1 = version(1, "frontend:v0.10.5");
        let v2 = version(2, "frontend:v0.10.6");
        let k = c.keyframe(&v1, None, Pace::Listed).unwrap();
        let d = c.delta(&v2, &v1).unwrap();
        assert!(
            d.len() < k.len() / 2,
            "delta {} keyframe {}",
            d.len(),
            k.len()
        );
        let back1 = c.decode(&k, v1.len(), None).unwrap();
        let back2 = c.decode(&d, v2.len(), Some(&back1)).unwrap();
        assert_eq!(back1, v1);
        assert_eq!(back2, v2);
    }

    #[test]
    fn prepared_keyframes_decode_the_same() {
        let mut c = Codec::new();
        let v1 = version(1, "a");
        let v2 = version(2, "b");
        let d = c.delta(&v2, &v1).unwrap();
        let prepared = PreparedKeyframe::new(7, &v1).unwrap();
        assert_eq!(c.decode_prepared(&d, v2.len(), &prepared).unwrap(), v2);
    }

    #[test]
    fn decoding_with_a_wrong_length_fails() {
        let mut c = Codec::new();
        let v1 = version(1, "a");
        let k = c.keyframe(&v1, None, Pace::Listed).unwrap();
        assert!(c.decode(&k, v1.len() + 1, None).is_err());
        assert!(c.decode(b"not zstd", 10, None).is_err());
    }

    #[test]
    fn a_trained_dictionary_shrinks_keyframes_and_round_trips() {
        let samples: Vec<Vec<u8>> = (0..400)
            .map(|i| version(i % 7 + 1, &format!("shop/service-{i}:v0.{}", i % 13)))
            .collect();
        let dict = train(&samples).expect("enough samples");
        assert!(dict.len() <= DICT_BYTES);
        let mut c = Codec::new();
        let enc = EncoderDict::new(3, &dict).unwrap();
        let dec = DecoderDict::new(3, &dict).unwrap();
        let body = version(4, "shop/checkout:v9");
        let alone = c.keyframe(&body, None, Pace::Listed).unwrap();
        let with = c.keyframe(&body, Some(&enc), Pace::Listed).unwrap();
        assert!(
            with.len() * 2 < alone.len(),
            "{} vs {}",
            with.len(),
            alone.len()
        );
        assert_eq!(c.decode_with_dict(&with, body.len(), &dec).unwrap(), body);
        // Without its dictionary the frame does not decode.
        assert!(c.decode(&with, body.len(), None).is_err());
    }

    #[test]
    fn too_few_samples_train_no_dictionary() {
        assert!(train(&[version(1, "a")]).is_none());
        assert!(train(&[]).is_none());
    }

    #[test]
    fn cache_is_bounded() {
        let mut cache = KeyframeCache::new(100);
        for id in 0..100 {
            cache.insert(id, vec![0u8; 10].into());
        }
        let held: usize = cache
            .young
            .values()
            .chain(cache.old.values())
            .map(|v| v.len())
            .sum();
        assert!(held <= 100, "{held}");
        assert!(cache.get(99).is_some());
        assert!(cache.get(0).is_none());
    }
}
