//! Journal bodies: the read path of `krply::journal::codec` (`Codec::decode` for
//! keyframes and deltas, `PreparedKeyframe::new` and `Codec::decode_prepared`, and
//! `DecoderDict::new` with `Codec::decode_with_dict` for keyframes compressed with a
//! stream's dictionary), fed a `bodies` row and a `dicts` row as a damaged or hostile
//! journal file could hold them.
//!
//! Input: byte 0 picks the path (keyframe, delta, prepared delta, keyframe with a
//! dictionary: the base bytes are the dictionary); bytes 1..9 are the
//! row's `raw_len` column (an `i64`, read the way `journal::versions` reads it:
//! `as usize`); bytes 9..11 give the length of the keyframe body that follows
//! (the `base` for deltas); the rest is the `data` blob.
//!
//! Properties: decoding never panics and yields exactly `raw_len` bytes when it
//! succeeds; and the codec round-trips: a keyframe of the blob, or a delta of it against
//! the base, decodes back to the blob (directly and through a prepared keyframe), and
//! a keyframe compressed with the base as a dictionary decodes back with it. The
//! `raw_len` bytes are also read as a `bodies.pack_ref`, and a successful decode
//! sliced where it says, as a pack is: never a panic, exactly the bytes asked for.

#![no_main]

use krply::journal::codec::{
    Codec, DecoderDict, EncoderDict, Pace, PreparedKeyframe, slice_of_pack,
};
use krply::journal::schema::{pack_ref, parse_pack_ref};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let Some((raw_len, rest)) = rest.split_first_chunk::<8>() else {
        return;
    };
    let Some((base_len_bytes, rest)) = rest.split_first_chunk::<2>() else {
        return;
    };
    let base_len = base_len_bytes;
    // Any eight bytes as a `pack_ref`: a pack and offset, or nothing; no panic.
    let _ = parse_pack_ref(i64::from_le_bytes(*raw_len));
    // The journal stores raw_len as an i64 and reads it back with `as usize`.
    let raw_len = i64::from_le_bytes(*raw_len) as usize;
    let base_len = usize::from(u16::from_le_bytes(*base_len)).min(rest.len());
    let (base, blob) = rest.split_at(base_len);

    let mut codec = Codec::new();

    // Decoding a row as found.
    let decoded = match mode % 4 {
        0 => codec.decode(blob, raw_len, None),
        1 => codec.decode(blob, raw_len, Some(base)),
        2 => PreparedKeyframe::new(1, base).and_then(|p| codec.decode_prepared(blob, raw_len, &p)),
        _ => DecoderDict::new(1, base).and_then(|d| codec.decode_with_dict(blob, raw_len, &d)),
    };
    if let Ok(out) = decoded {
        assert_eq!(out.len(), raw_len);
        // The output as a decoded pack, sliced where a `pack_ref` made of the
        // input says: an error, or exactly the bytes asked for.
        let offset = usize::from(u16::from_le_bytes(*base_len_bytes));
        let at = pack_ref(1, offset).expect("a small offset fits");
        let (pack, parsed) = parse_pack_ref(at).expect("made by pack_ref");
        assert_eq!((pack, parsed), (1, offset));
        let len = usize::from(mode);
        match slice_of_pack(&out, offset, len) {
            Ok(slice) => assert_eq!(slice, &out[offset..offset + len]),
            Err(_) => assert!(offset + len > out.len()),
        }
    }

    // Writing then reading gives the bytes back.
    // A dictionary that loads compresses and decodes with either side.
    // Either pace: a list's keyframes and a watch's.
    for pace in [Pace::Listed, Pace::Live] {
        if let (Ok(enc), Ok(dec)) = (EncoderDict::new(2, base), DecoderDict::new(2, base)) {
            let key = codec
                .keyframe(blob, Some(&enc), pace)
                .expect("compressing with a dictionary");
            assert_eq!(
                codec
                    .decode_with_dict(&key, blob.len(), &dec)
                    .expect("decoding with the dictionary"),
                blob
            );
        }
        let key = codec
            .keyframe(blob, None, pace)
            .expect("compressing a keyframe");
        assert_eq!(
            codec
                .decode(&key, blob.len(), None)
                .expect("decoding a fresh keyframe"),
            blob
        );
    }
    let delta = codec.delta(blob, base).expect("compressing a delta");
    assert_eq!(
        codec
            .decode(&delta, blob.len(), Some(base))
            .expect("decoding a fresh delta"),
        blob
    );
    let prepared = PreparedKeyframe::new(2, base).expect("preparing a keyframe");
    assert_eq!(
        codec
            .decode_prepared(&delta, blob.len(), &prepared)
            .expect("decoding a fresh delta against a prepared keyframe"),
        blob
    );
});
