//! RFC 3339 timestamps: `krply::time::Millis::parse_rfc3339` (also `FromStr` and the
//! serde form every stored and exported time uses) and `Millis`'s `Display`.
//!
//! Input: the first 8 bytes also give an `i64` millisecond value for the formatting
//! round trip; the whole input, as UTF-8, is the string to parse.
//!
//! Properties: no panic; `Display` then `parse_rfc3339` gives the same value for every
//! time in years 0000..=9999 (and `Display` never panics for any `i64`); a parsed time
//! displays as a string that parses back to it (when its year is in 0000..=9999);
//! `FromStr` and serde agree with `parse_rfc3339`; and where jiff also reads the string,
//! both agree on the instant (floored to the millisecond).

#![no_main]

use krply::time::Millis;
use libfuzzer_sys::fuzz_target;

/// 0000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z.
const FIRST: i64 = -62_167_219_200_000;
const LAST: i64 = 253_402_300_799_999;

fn round_trips(m: Millis) {
    let shown = m.to_string();
    if shown.starts_with(['+', '-']) {
        // Outside 0000..=9999: the expanded ISO 8601 form, documented not to parse.
        assert!(
            !(FIRST..=LAST).contains(&m.as_ms()),
            "{} shown as {shown}",
            m.as_ms()
        );
        return;
    }
    assert_eq!(shown.len(), 24, "{} shown as {shown}", m.as_ms());
    assert_eq!(
        Millis::parse_rfc3339(&shown),
        Ok(m),
        "{} shown as {shown}",
        m.as_ms()
    );
}

fuzz_target!(|data: &[u8]| {
    if let Some(first) = data.first_chunk::<8>() {
        let any = i64::from_le_bytes(*first);
        // Any i64 formats without panicking, and round-trips when its year allows.
        round_trips(Millis::from_ms(any));
        // The same value folded into 0000..=9999, where the round trip must hold.
        let span = LAST - FIRST + 1;
        round_trips(Millis::from_ms(FIRST + any.rem_euclid(span)));
    }

    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let parsed = Millis::parse_rfc3339(s);
    assert_eq!(s.parse::<Millis>(), parsed, "{s:?}");
    let json = serde_json::to_string(s).expect("a string serializes");
    let from_json = serde_json::from_str::<Millis>(&json);
    assert_eq!(from_json.ok(), parsed.clone().ok(), "{s:?} through serde");

    let Ok(m) = parsed else {
        return;
    };
    round_trips(m);
    if let Ok(ts) = s.parse::<jiff::Timestamp>() {
        assert_eq!(Millis::from_jiff(ts), m, "{s:?}: jiff reads {ts}");
    }
});
