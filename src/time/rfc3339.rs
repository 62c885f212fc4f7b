//! RFC 3339 timestamps to and from milliseconds since the Unix epoch.
//!
//! jiff does the calendar: it checks dates (month lengths, leap years) and
//! times, and converts between civil times and instants. What stays here is
//! what jiff does differently:
//! - its parsers accept more than RFC 3339 (section 5.6), e.g. `10:00Z`
//!   without seconds, `+0100`, `+01`, `[UTC]` annotations, `,` before the
//!   fraction and signed years, and at most nine fraction digits; so the
//!   grammar is read here: `YYYY-MM-DD`, a `T` (or `t`, or a space),
//!   `HH:MM:SS`, optional fractional seconds of any length (floored to the
//!   millisecond) and `Z`/`z` or a `+HH:MM`/`-HH:MM` offset. A leap second
//!   (`:60`) is read as `:59`, as jiff's parsers and most clocks do;
//! - its instants stop short of 9999-12-31 and its calendar at years ±9999,
//!   while every `i64` millisecond formats (see [`write_millis`]).

use std::fmt;

use jiff::Timestamp;
use jiff::civil::DateTime;
use jiff::tz::Offset;

const UNIX_EPOCH: DateTime = DateTime::constant(1970, 1, 1, 0, 0, 0, 0);
/// The Gregorian calendar repeats every 400 years, 146 097 days.
const MS_PER_400_YEARS: i64 = 146_097 * 86_400_000;

/// Writes `ms` as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
///
/// Years outside RFC 3339's `0000..=9999` use the ISO 8601 expanded form (a sign and at
/// least six digits, as jiff writes them); such strings do not parse back.
pub(super) fn write_millis(ms: i64, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    // jiff's calendar ends at years ±9999, so whole 400-year cycles are taken out
    // (leaving a time in 1970..2370) and added back to the year.
    let cycles = ms.div_euclid(MS_PER_400_YEARS);
    let within = Timestamp::from_millisecond(ms.rem_euclid(MS_PER_400_YEARS))
        .expect("1970..2370 is within jiff's range");
    let t = Offset::UTC.to_datetime(within);
    let year = i64::from(t.year()) + 400 * cycles;
    if (0..=9999).contains(&year) {
        write!(f, "{year:04}")?;
    } else {
        write!(f, "{year:+07}")?;
    }
    write!(
        f,
        "-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        t.month(),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.millisecond(),
    )
}

/// Reads `n` ASCII digits at `at` as a number.
fn digits(b: &[u8], at: usize, n: usize) -> Option<i16> {
    let slice = b.get(at..at + n)?;
    slice.iter().try_fold(0i16, |acc, &c| {
        c.is_ascii_digit().then(|| acc * 10 + i16::from(c - b'0'))
    })
}

/// Reads two ASCII digits at `at`.
fn two_digits(b: &[u8], at: usize) -> Option<i8> {
    digits(b, at, 2).and_then(|v| i8::try_from(v).ok())
}

fn expect(b: &[u8], at: usize, want: &[u8]) -> Option<()> {
    b.get(at).filter(|c| want.contains(c)).map(|_| ())
}

/// Parses an RFC 3339 timestamp to milliseconds since the epoch, flooring any
/// sub-millisecond fraction. `None` when `s` is not a valid RFC 3339 timestamp.
pub(super) fn parse_millis(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let year = digits(b, 0, 4)?;
    expect(b, 4, b"-")?;
    let month = two_digits(b, 5)?;
    expect(b, 7, b"-")?;
    let day = two_digits(b, 8)?;
    expect(b, 10, b"Tt ")?;
    let hour = two_digits(b, 11)?;
    expect(b, 13, b":")?;
    let minute = two_digits(b, 14)?;
    expect(b, 16, b":")?;
    let second = two_digits(b, 17)?;
    let mut at = 19;

    let mut millis = 0;
    if b.get(at) == Some(&b'.') {
        at += 1;
        let start = at;
        while b.get(at).is_some_and(u8::is_ascii_digit) {
            at += 1;
        }
        if at == start {
            return None;
        }
        // First three digits, padded with zeros: ".5" is 500 ms, ".123456" is 123 ms.
        let mut scale = 100;
        for &c in &b[start..at.min(start + 3)] {
            millis += i64::from(c - b'0') * scale;
            scale /= 10;
        }
    }

    let offset_minutes = match b.get(at) {
        Some(b'Z' | b'z') => {
            at += 1;
            0
        }
        Some(&sign @ (b'+' | b'-')) => {
            let oh = two_digits(b, at + 1)?;
            expect(b, at + 3, b":")?;
            let om = two_digits(b, at + 4)?;
            if oh > 23 || om > 59 {
                return None;
            }
            at += 6;
            let total = i64::from(oh) * 60 + i64::from(om);
            if sign == b'-' { -total } else { total }
        }
        _ => return None,
    };
    if at != b.len() {
        return None;
    }

    // jiff refuses a leap second, which RFC 3339 allows.
    let second = if second == 60 { 59 } else { second };
    // A civil time, not an instant: jiff's instants end before 9999-12-31.
    let local = DateTime::new(year, month, day, hour, minute, second, 0).ok()?;
    let local_ms = i64::try_from(local.duration_since(UNIX_EPOCH).as_millis()).ok()?;
    Some(local_ms + millis - offset_minutes * 60_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS_PER_DAY: i64 = 86_400_000;

    struct Show(i64);
    impl fmt::Display for Show {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write_millis(self.0, f)
        }
    }

    #[test]
    fn civil_round_trips_known_dates() {
        assert_eq!(parse_millis("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(Show(0).to_string(), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            parse_millis("2000-03-01T00:00:00Z"),
            Some(11_017 * MS_PER_DAY)
        );
        assert_eq!(Show(-MS_PER_DAY).to_string(), "1969-12-31T00:00:00.000Z");
        let leap_day = parse_millis("2024-02-29T00:00:00Z").unwrap();
        assert_eq!(Show(leap_day).to_string(), "2024-02-29T00:00:00.000Z");
    }

    #[test]
    fn formats_with_three_fraction_digits() {
        assert_eq!(Show(0).to_string(), "1970-01-01T00:00:00.000Z");
        assert_eq!(Show(-1).to_string(), "1969-12-31T23:59:59.999Z");
        assert_eq!(
            Show(1_795_946_400_000).to_string(),
            "2026-11-29T10:00:00.000Z"
        );
    }

    #[test]
    fn formats_extreme_values_without_panicking() {
        assert!(Show(i64::MAX).to_string().starts_with('+'));
        assert!(Show(i64::MIN).to_string().starts_with('-'));
        // 10000-01-01 is 2 932 897 days after the epoch.
        assert_eq!(
            Show(2_932_897 * MS_PER_DAY).to_string(),
            "+010000-01-01T00:00:00.000Z"
        );
        assert_eq!(
            Show(2_932_897 * MS_PER_DAY - 1).to_string(),
            "9999-12-31T23:59:59.999Z"
        );
        assert_eq!(Show(i64::MAX).to_string(), "+292278994-08-17T07:12:55.807Z");
        assert_eq!(Show(i64::MIN).to_string(), "-292275055-05-16T16:47:04.192Z");
        // Year 0 (1 BC) is a leap year; the year before it is -000001.
        assert_eq!(
            Show(-719_528 * MS_PER_DAY).to_string(),
            "0000-01-01T00:00:00.000Z"
        );
        assert_eq!(
            Show(-719_528 * MS_PER_DAY - 1).to_string(),
            "-000001-12-31T23:59:59.999Z"
        );
    }

    #[test]
    fn parses_the_whole_rfc3339_range() {
        // Beyond jiff's last instant (9999-12-30T22:00:00.999999999Z).
        assert_eq!(
            parse_millis("9999-12-31T23:59:59.999Z"),
            Some(2_932_897 * MS_PER_DAY - 1)
        );
        assert_eq!(
            parse_millis("9999-12-31T23:59:59.999-23:59"),
            Some(2_932_897 * MS_PER_DAY - 1 + 1_439 * 60_000)
        );
        assert_eq!(
            parse_millis("0000-01-01T00:00:00+23:59"),
            Some(-719_528 * MS_PER_DAY - 1_439 * 60_000)
        );
    }

    #[test]
    fn parses_offsets_fractions_and_separators() {
        let base = parse_millis("2026-11-29T10:00:00Z");
        assert_eq!(base, Some(1_795_946_400_000));
        assert_eq!(parse_millis("2026-11-29t10:00:00z"), base);
        assert_eq!(parse_millis("2026-11-29 10:00:00Z"), base);
        assert_eq!(parse_millis("2026-11-29T11:30:00+01:30"), base);
        assert_eq!(parse_millis("2026-11-29T05:00:00-05:00"), base);
        assert_eq!(parse_millis("2026-11-29T10:00:00-00:00"), base);
        assert_eq!(
            parse_millis("2026-11-29T10:00:00.5Z"),
            base.map(|v| v + 500)
        );
        assert_eq!(
            parse_millis("2026-11-29T10:00:00.123999999Z"),
            base.map(|v| v + 123)
        );
        assert_eq!(
            parse_millis("2026-12-31T23:59:60Z"),
            parse_millis("2026-12-31T23:59:59Z")
        );
    }

    #[test]
    fn fractions_before_the_epoch_floor() {
        assert_eq!(parse_millis("1969-12-31T23:59:59.9999Z"), Some(-1));
    }

    #[test]
    fn rejects_what_is_not_rfc3339() {
        for bad in [
            "",
            "2026-11-29",
            "2026-11-29T10:00Z",
            "2026-11-29T10:00:00",
            "2026-11-29T10:00:00.Z",
            "2026-11-29T10:00:00+0100",
            "2026-11-29T10:00:00+24:00",
            "2026-11-29T10:00:00+01:60",
            "2026-02-29T10:00:00Z",
            "2026-13-01T10:00:00Z",
            "2026-00-01T10:00:00Z",
            "2026-04-31T10:00:00Z",
            "2026-11-29T24:00:00Z",
            "2026-11-29T10:60:00Z",
            "2026-11-29T10:00:61Z",
            "2026-11-29T10:00:00ZZ",
            "2026-11-29T10:00:00Z[UTC]",
            "+2026-11-29T10:00:00Z",
            "２026-11-29T10:00:00Z",
            "2026-11-29T10:00:00.１Z",
        ] {
            assert_eq!(parse_millis(bad), None, "{bad}");
        }
        assert!(parse_millis("2024-02-29T10:00:00Z").is_some());
        assert!(parse_millis("2000-02-29T10:00:00Z").is_some());
        assert!(parse_millis("1900-02-29T10:00:00Z").is_none());
    }
}
