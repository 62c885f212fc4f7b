//! Cold blocks: the read path of `krply::journal::block` (`columns`,
//! `bodies`), fed a block's frames as a damaged or hostile journal file could
//! hold them.
//!
//! Input: bytes 0..2 are the length of the columns' layout (little-endian),
//! which follows and is compressed here (so the fuzzer explores the layout,
//! not zstd's); the rest is the bodies' frame, as stored.
//!
//! Properties: reading never panics; columns that read are records in seq
//! order whose bodies lie inside the block's JSON, and made into a block
//! again (with bodies of their lengths) they read back as the same records
//! with the same bodies.

#![no_main]

use krply::journal::block::{ColdRecord, bodies, columns, encode};
use krply::journal::codec::{Codec, Pace};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((len, rest)) = data.split_first_chunk::<2>() else {
        return;
    };
    let len = usize::from(u16::from_le_bytes(*len)).min(rest.len());
    let (layout, frame) = rest.split_at(len);
    let mut codec = Codec::new();
    let _ = bodies(&mut codec, frame, frame.len() * 4, None);
    let compressed = codec.keyframe(layout, None, Pace::Live).unwrap();
    let Ok(cols) = columns(&mut codec, &compressed) else {
        return;
    };
    assert!(cols.records.windows(2).all(|w| w[0].seq < w[1].seq));
    if cols.raw_len > 1 << 20 || cols.records.is_empty() {
        return;
    }
    // Bodies of the lengths the columns give, told apart by their bytes.
    let json: Vec<u8> = (0..cols.raw_len).map(|i| (i % 251) as u8).collect();
    let records: Vec<ColdRecord<&[u8]>> = cols
        .records
        .iter()
        .map(|r| r.with_body(r.body.clone().map(|place| &json[place])))
        .collect();
    let block = encode(&mut codec, &records, None).unwrap();
    let again = columns(&mut codec, &block.columns).unwrap();
    let json_again = bodies(&mut codec, &block.bodies, again.raw_len, None).unwrap();
    assert_eq!(again.records.len(), records.len());
    for (a, r) in again.records.iter().zip(&records) {
        assert_eq!(
            (
                a.seq,
                a.kind,
                a.observed_at,
                a.watch_type,
                a.event_key,
                a.aux
            ),
            (
                r.seq,
                r.kind,
                r.observed_at,
                r.watch_type,
                r.event_key,
                r.aux
            )
        );
        assert_eq!(a.resource_version, r.resource_version);
        assert_eq!(a.body.clone().map(|p| &json_again[p]), r.body);
    }
});
