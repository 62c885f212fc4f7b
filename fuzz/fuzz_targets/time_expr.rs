//! `--since`/`--until`/`--at` time expressions: `krply::time::parse_time_expr` and
//! `parse_time_expr_in` (now, durations, times of day, RFC 3339).
//!
//! Input: 8 bytes little-endian `now` (ms since the epoch), 1 byte choosing the time
//! zone for times of day, then the expression as UTF-8.
//!
//! Properties: no panic; with `now` at or after the epoch an accepted time is never
//! before the epoch (the module promises "times before the Unix epoch are refused");
//! every accepted time lies at or before `now` (a time in the future is refused,
//! docs/output.md); a duration means `now - duration`; an RFC 3339 time means itself
//! when it is not after `now`.

#![no_main]

use std::sync::LazyLock;

use jiff::tz::{TimeZone, offset};
use krply::time::{Millis, TimeError, parse_duration, parse_time_expr, parse_time_expr_in};
use libfuzzer_sys::fuzz_target;

/// Zones without a tz database: UTC, one with the usual DST rules, one with a 45-minute
/// offset and an inverted DST (southern hemisphere), and the extremes of fixed offsets.
static ZONES: LazyLock<Vec<TimeZone>> = LazyLock::new(|| {
    vec![
        TimeZone::UTC,
        TimeZone::posix("CET-1CEST,M3.5.0,M10.5.0/3").expect("CET rule"),
        TimeZone::posix("<+1245>-12:45<+1345>,M9.5.0/2:45,M4.1.0/3:45").expect("Chatham rule"),
        TimeZone::fixed(offset(-12)),
        TimeZone::fixed(offset(14)),
    ]
});

fuzz_target!(|data: &[u8]| {
    let Some((now, rest)) = data.split_first_chunk::<8>() else {
        return;
    };
    let Some((&zone, text)) = rest.split_first() else {
        return;
    };
    let Ok(s) = std::str::from_utf8(text) else {
        return;
    };
    let now = Millis::from_ms(i64::from_le_bytes(*now));
    let tz = &ZONES[usize::from(zone) % ZONES.len()];

    // The system's zone (whatever the machine has): no panic is all we ask.
    let _ = parse_time_expr(s, now);

    let got = parse_time_expr_in(s, now, tz);
    let trimmed = s.trim();
    let rfc3339 = Millis::parse_rfc3339(trimmed);

    if let Ok(at) = got {
        if now >= Millis::EPOCH {
            assert!(
                at >= Millis::EPOCH,
                "{s:?} at now={now} ({} ms) in {tz:?} gave {at} ({} ms), before the epoch",
                now.as_ms(),
                at.as_ms()
            );
        }
        assert!(
            at <= now,
            "{s:?} at now={now} gave {at}, which is after now"
        );
    }

    match parse_duration(s) {
        Ok(d) => {
            let ms = i64::try_from(d.as_millis()).expect("durations fit in i64 ms");
            let want = match now.as_ms().checked_sub(ms) {
                Some(t) if t >= 0 => Ok(Millis::from_ms(t)),
                _ => Err(TimeError::BeforeEpoch {
                    input: trimmed.to_owned(),
                }),
            };
            assert_eq!(got, want, "{s:?} is a duration; now={now}");
        }
        Err(TimeError::DurationTooLarge { .. }) => {
            assert!(
                matches!(got, Err(TimeError::DurationTooLarge { .. })),
                "{s:?}: {got:?}"
            );
        }
        Err(_) => {}
    }

    if let Ok(m) = rfc3339 {
        let want = if m < Millis::EPOCH {
            Err(TimeError::BeforeEpoch {
                input: trimmed.to_owned(),
            })
        } else if m > now {
            Err(TimeError::InFuture {
                input: trimmed.to_owned(),
                now,
            })
        } else {
            Ok(m)
        };
        assert_eq!(got, want, "{s:?} is an RFC 3339 time");
    }
});
