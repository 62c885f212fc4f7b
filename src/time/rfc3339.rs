//! RFC 3339 timestamps to and from milliseconds since the Unix epoch.
//!
//! The calendar arithmetic is the proleptic Gregorian calendar (Howard Hinnant's
//! `days_from_civil` / `civil_from_days`), exact for every `i64` millisecond value, so
//! formatting never fails. Parsing is strict RFC 3339 (section 5.6): `YYYY-MM-DD`, a `T`
//! (or `t`, or a space), `HH:MM:SS`, optional fractional seconds of any length (truncated
//! to the millisecond) and `Z`/`z` or a `+HH:MM`/`-HH:MM` offset. A leap second (`:60`)
//! is read as `:59`, as most clocks do.

use std::fmt;

const MS_PER_SECOND: i64 = 1_000;
const MS_PER_MINUTE: i64 = 60 * MS_PER_SECOND;
const MS_PER_HOUR: i64 = 60 * MS_PER_MINUTE;
const MS_PER_DAY: i64 = 24 * MS_PER_HOUR;

/// Days since 1970-01-01 of a proleptic Gregorian date (month 1..=12, day 1..=31).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = if month > 2 { month - 3 } else { month + 9 };
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The proleptic Gregorian date `(year, month, day)` of a day count since 1970-01-01.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Writes `ms` as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
///
/// Years outside RFC 3339's `0000..=9999` use the ISO 8601 expanded form (a sign and at
/// least six digits, as jiff writes them); such strings do not parse back.
pub(super) fn write_millis(ms: i64, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let days = ms.div_euclid(MS_PER_DAY);
    let in_day = ms.rem_euclid(MS_PER_DAY);
    let (year, month, day) = civil_from_days(days);
    if (0..=9999).contains(&year) {
        write!(f, "{year:04}")?;
    } else {
        write!(f, "{year:+07}")?;
    }
    write!(
        f,
        "-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        in_day / MS_PER_HOUR,
        in_day % MS_PER_HOUR / MS_PER_MINUTE,
        in_day % MS_PER_MINUTE / MS_PER_SECOND,
        in_day % MS_PER_SECOND,
    )
}

/// Reads `N` ASCII digits at `at` as a number.
fn digits(b: &[u8], at: usize, n: usize) -> Option<i64> {
    let slice = b.get(at..at + n)?;
    slice.iter().try_fold(0i64, |acc, &c| {
        c.is_ascii_digit().then(|| acc * 10 + i64::from(c - b'0'))
    })
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
    let month = digits(b, 5, 2)?;
    expect(b, 7, b"-")?;
    let day = digits(b, 8, 2)?;
    expect(b, 10, b"Tt ")?;
    let hour = digits(b, 11, 2)?;
    expect(b, 13, b":")?;
    let minute = digits(b, 14, 2)?;
    expect(b, 16, b":")?;
    let second = digits(b, 17, 2)?;
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
            let oh = digits(b, at + 1, 2)?;
            expect(b, at + 3, b":")?;
            let om = digits(b, at + 4, 2)?;
            if oh > 23 || om > 59 {
                return None;
            }
            at += 6;
            let total = oh * 60 + om;
            if sign == b'-' { -total } else { total }
        }
        _ => return None,
    };
    if at != b.len() {
        return None;
    }

    let valid = (1..=12).contains(&month)
        && (1..=days_in_month(year, month)).contains(&day)
        && hour <= 23
        && minute <= 59
        && second <= 60;
    if !valid {
        return None;
    }
    let second = second.min(59);

    Some(
        days_from_civil(year, month, day) * MS_PER_DAY
            + hour * MS_PER_HOUR
            + minute * MS_PER_MINUTE
            + second * MS_PER_SECOND
            + millis
            - offset_minutes * MS_PER_MINUTE,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Show(i64);
    impl fmt::Display for Show {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write_millis(self.0, f)
        }
    }

    #[test]
    fn civil_round_trips_known_dates() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(civil_from_days(days_from_civil(2024, 2, 29)), (2024, 2, 29));
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
        assert_eq!(
            Show(days_from_civil(10_000, 1, 1) * MS_PER_DAY).to_string(),
            "+010000-01-01T00:00:00.000Z"
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
