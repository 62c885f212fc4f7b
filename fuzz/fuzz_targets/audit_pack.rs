//! Audit packs: the read path of `krply::journal::audit_pack` (`decode`), fed
//! an `audit_packs` row as a damaged or hostile journal file could hold it.
//!
//! Input: bytes 0..8 are the row's `first_at` (an `i64`); the rest is the
//! `data` blob.
//!
//! Properties: decoding never panics; a pack that decodes encodes again to a
//! pack that decodes to the same writes (a damaged row may hold writes out of
//! order or in a longer form, so the bytes themselves need not come back);
//! and `split` then `merge` of what it held keeps each key once, in order.

#![no_main]

use krply::journal::audit_pack::{PackedWrite, decode, encode, merge, split};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((first_at, blob)) = data.split_first_chunk::<8>() else {
        return;
    };
    let first_at = i64::from_le_bytes(*first_at);
    let Ok(writes) = decode(first_at, blob) else {
        return;
    };
    if let Some(first) = writes.first() {
        assert_eq!(decode(first.at, &encode(&writes)), Ok(writes.clone()));
    }
    let mut sorted = writes;
    sorted.sort_by(PackedWrite::key_cmp);
    let (merged, added) = merge(Vec::new(), &sorted);
    assert!(merged.windows(2).all(|w| w[0].key_cmp(&w[1]).is_lt()));
    assert_eq!(merged.len() as u64, added);
    let packs = split(&merged);
    assert_eq!(packs.iter().map(|p| p.len()).sum::<usize>(), merged.len());
    for pair in packs.windows(2) {
        assert!(pair[0].last().unwrap().at < pair[1][0].at);
    }
});
