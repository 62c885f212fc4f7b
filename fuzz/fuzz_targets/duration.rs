//! Durations (`record --for`, `prune --older-than`, and the "that long ago" form of
//! time expressions): `krply::time::parse_duration` and `parse_positive_duration`.
//!
//! Input: the duration as UTF-8.
//!
//! Properties: no panic; an accepted duration fits in `i64` milliseconds; it reads back
//! the same written as plain milliseconds and written in canonical `1d2h3m4s5ms` form;
//! `parse_positive_duration` agrees with `parse_duration` except that it refuses zero.

#![no_main]

use std::time::Duration;

use krply::time::{TimeError, parse_duration, parse_positive_duration};
use libfuzzer_sys::fuzz_target;

/// `d` in the grammar's canonical form: each unit at most once, largest first.
fn canonical(d: Duration) -> String {
    let mut ms = d.as_millis();
    if ms == 0 {
        return "0s".into();
    }
    let mut out = String::new();
    for (unit, len) in [
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1_000),
        ("ms", 1),
    ] {
        if ms >= len {
            out.push_str(&format!("{}{unit}", ms / len));
            ms %= len;
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let got = parse_duration(s);
    let positive = parse_positive_duration(s);
    match &got {
        Ok(d) => {
            assert!(d.as_millis() <= i64::MAX as u128, "{s:?} gave {d:?}");
            assert_eq!(d.subsec_nanos() % 1_000_000, 0, "{s:?} gave {d:?}");
            let plain = format!("{}ms", d.as_millis());
            assert_eq!(parse_duration(&plain).as_ref(), Ok(d), "{s:?} vs {plain:?}");
            let canon = canonical(*d);
            assert_eq!(parse_duration(&canon).as_ref(), Ok(d), "{s:?} vs {canon:?}");
            if d.is_zero() {
                assert!(
                    matches!(positive, Err(TimeError::ZeroDuration { .. })),
                    "{s:?}: {positive:?}"
                );
            } else {
                assert_eq!(positive.as_ref(), Ok(d), "{s:?}");
            }
        }
        Err(e) => assert_eq!(positive.as_ref(), Err(e), "{s:?}"),
    }
});
