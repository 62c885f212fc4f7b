//! Tests of time expressions, `Millis` and time windows.

use std::time::Duration;

use proptest::prelude::*;

use super::*;

/// 2026-11-29T10:00:00.000Z
const NOW: Millis = Millis::from_ms(1_795_946_400_000);
/// 9999-12-31T23:59:59.999Z, the last RFC 3339 millisecond.
const LAST_RFC3339_MS: i64 = 253_402_300_799_999;

fn at(s: &str) -> Millis {
    match s.parse::<Millis>() {
        Ok(m) => m,
        Err(e) => panic!("{s}: {e}"),
    }
}

#[test]
fn now_in_any_case() {
    for s in ["now", "NOW", "Now", "  now\t", "\nnOw "] {
        assert_eq!(parse_time_expr(s, NOW), Ok(NOW), "{s:?}");
    }
}

#[test]
fn durations_mean_that_long_ago() {
    let cases = [
        ("90s", 90_000),
        ("30m", 1_800_000),
        ("2h", 7_200_000),
        ("1d", 86_400_000),
        ("1h30m", 5_400_000),
        ("1d2h", 93_600_000),
        ("500ms", 500),
        ("0s", 0),
        (" 30m ", 1_800_000),
    ];
    for (s, ago) in cases {
        assert_eq!(
            parse_time_expr(s, NOW),
            Ok(Millis::from_ms(NOW.as_ms() - ago)),
            "{s}"
        );
    }
}

#[test]
fn rfc3339_times_with_z_offsets_and_fractions() {
    let base = Millis::from_ms(1_795_946_400_000);
    let later = Millis::from_ms(base.as_ms() + 1_000);
    assert_eq!(parse_time_expr("2026-11-29T10:00:00Z", NOW), Ok(base));
    assert_eq!(parse_time_expr("2026-11-29T11:00:00+01:00", NOW), Ok(base));
    assert_eq!(parse_time_expr("2026-11-29T04:30:00-05:30", NOW), Ok(base));
    assert_eq!(
        parse_time_expr("2026-11-29T10:00:00.123456789Z", later),
        Ok(Millis::from_ms(base.as_ms() + 123))
    );
    // A time in the future is refused: the journal holds only the past.
    assert!(matches!(
        parse_time_expr("2030-01-01T00:00:00Z", NOW),
        Err(TimeError::InFuture { .. })
    ));
}

#[test]
fn anything_else_names_the_accepted_forms() {
    let err = parse_time_expr("yesterday", NOW).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid time \"yesterday\": use \"now\", a duration like 30m, 2h, 1d or 1h30m \
         (meaning that long ago), a local time of day like 14:02, or an RFC 3339 time like \
         2026-11-29T10:00:00Z"
    );
    for bad in [
        "",
        " ",
        "5",
        "-5m",
        "+5m",
        "5 m",
        "1.5h",
        "30m1h",
        "2H",
        "1w",
        "2026-11-29",
        "2026-11-29T10:00:00",
        "2026-11-29T10:00Z",
        "2026-02-30T10:00:00Z",
        "now-5m",
        "nowz",
        "1h ago",
        "24:00",
        "12:60",
        "1:30",
        "12:30:61",
        "12:30:00:00",
        "\u{0}",
    ] {
        assert!(
            matches!(
                parse_time_expr(bad, NOW),
                Err(TimeError::InvalidTime { .. })
            ),
            "{bad:?}"
        );
    }
}

#[test]
fn error_messages_quote_the_trimmed_input_with_escapes() {
    let err = parse_time_expr("  a\"b\n ", NOW).unwrap_err();
    assert!(
        err.to_string().starts_with("invalid time \"a\\\"b\": "),
        "{err}"
    );
}

#[test]
fn overflowing_durations_are_refused_clearly() {
    let err = parse_time_expr("99999999999999999999d", NOW).unwrap_err();
    assert_eq!(
        err.to_string(),
        "duration \"99999999999999999999d\" is too large"
    );
    let err = parse_time_expr("9223372036854775807ms", NOW).unwrap_err();
    assert!(matches!(err, TimeError::BeforeEpoch { .. }), "{err}");
    assert!(matches!(
        parse_duration("106751991168d"),
        Err(TimeError::DurationTooLarge { .. })
    ));
}

#[test]
fn times_before_the_epoch_are_refused() {
    let err = parse_time_expr("30000d", NOW).unwrap_err();
    assert_eq!(
        err.to_string(),
        "time \"30000d\" is before the Unix epoch (1970-01-01T00:00:00.000Z)"
    );
    assert!(matches!(
        parse_time_expr("1969-12-31T23:59:59.999Z", NOW),
        Err(TimeError::BeforeEpoch { .. })
    ));
    assert_eq!(
        parse_time_expr("1970-01-01T00:00:00Z", NOW),
        Ok(Millis::EPOCH)
    );
    assert_eq!(
        parse_time_expr("500ms", Millis::from_ms(500)),
        Ok(Millis::EPOCH)
    );
    assert!(parse_time_expr("501ms", Millis::from_ms(500)).is_err());
}

#[test]
fn parse_duration_and_positive_duration() {
    assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
    assert_eq!(parse_duration(" 1h30m "), Ok(Duration::from_secs(5_400)));
    assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
    assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
    assert_eq!(
        parse_positive_duration("0s").unwrap_err().to_string(),
        "duration \"0s\" must be greater than zero"
    );
    assert_eq!(
        parse_positive_duration("0h0m1ms"),
        Ok(Duration::from_millis(1))
    );
    assert_eq!(
        parse_duration("ten minutes").unwrap_err().to_string(),
        "invalid duration \"ten minutes\": use a whole number with a unit (ms, s, m, h, d), \
         largest unit first, like 90s, 10m, 2h or 1h30m"
    );
    assert!(matches!(
        parse_positive_duration("now"),
        Err(TimeError::InvalidDuration { .. })
    ));
}

#[test]
fn millis_display_is_rfc3339_utc_with_milliseconds() {
    assert_eq!(NOW.to_string(), "2026-11-29T10:00:00.000Z");
    assert_eq!(Millis::EPOCH.to_string(), "1970-01-01T00:00:00.000Z");
    assert_eq!(
        Millis::from_ms(1_795_946_400_007).to_string(),
        "2026-11-29T10:00:00.007Z"
    );
    assert_eq!(
        Millis::from_ms(LAST_RFC3339_MS).to_string(),
        "9999-12-31T23:59:59.999Z"
    );
}

#[test]
fn millis_serde_is_the_display_string() {
    let json = serde_json::to_string(&NOW).unwrap();
    assert_eq!(json, "\"2026-11-29T10:00:00.000Z\"");
    let back: Millis = serde_json::from_str("\"2026-11-29T11:00:00+01:00\"").unwrap();
    assert_eq!(back, NOW);
    let err = serde_json::from_str::<Millis>("\"30m\"").unwrap_err();
    assert!(
        err.to_string().contains("invalid timestamp \"30m\""),
        "{err}"
    );
    assert!(serde_json::from_str::<Millis>("1795946400000").is_err());
}

#[test]
fn jiff_conversions_floor_to_the_millisecond() {
    let ts = jiff::Timestamp::new(1_795_946_400, 123_999_999).unwrap();
    assert_eq!(Millis::from_jiff(ts), Millis::from_ms(1_795_946_400_123));
    let before = jiff::Timestamp::new(-1, -1).unwrap();
    assert_eq!(Millis::from_jiff(before), Millis::from_ms(-1_001));
    assert_eq!(NOW.to_jiff().map(Millis::from_jiff), Ok(NOW));
    assert_eq!(
        Millis::from_ms(i64::MAX).to_jiff(),
        Err(TimeError::OutOfRange(i64::MAX))
    );
    // jiff stops a little short of year 10000 so that any offset can be applied.
    let max = Millis::from_jiff(jiff::Timestamp::MAX);
    assert_eq!(max.to_string(), "9999-12-30T22:00:00.999Z");
    assert!(Millis::from_ms(LAST_RFC3339_MS).to_jiff().is_err());
    assert!(Millis::from_jiff(jiff::Timestamp::MIN) < Millis::EPOCH);
}

#[test]
fn now_is_after_the_epoch_and_close_to_jiff() {
    let ours = Millis::now();
    let theirs = Millis::from_jiff(jiff::Timestamp::now());
    assert!(ours > Millis::EPOCH);
    assert!((theirs.as_ms() - ours.as_ms()).abs() < 60_000);
}

#[test]
fn at_includes_the_whole_millisecond() {
    let later = Millis::from_ms(NOW.as_ms() + 1_000);
    let t = parse_time_expr("2026-11-29T10:00:00.123Z", later).unwrap();
    let observed = Millis::from_jiff(jiff::Timestamp::new(1_795_946_400, 123_999_999).unwrap());
    assert!(observed <= t);
    let next = Millis::from_jiff(jiff::Timestamp::new(1_795_946_400, 124_000_000).unwrap());
    assert!(next > t);
}

#[test]
fn arithmetic_and_age() {
    assert_eq!(
        NOW.checked_sub(Duration::from_secs(1)),
        Some(Millis::from_ms(NOW.as_ms() - 1_000))
    );
    assert_eq!(
        NOW.checked_add(Duration::from_millis(1)),
        Some(Millis::from_ms(NOW.as_ms() + 1))
    );
    assert_eq!(
        Millis::from_ms(i64::MIN).checked_sub(Duration::from_millis(1)),
        None
    );
    assert_eq!(NOW.checked_add(Duration::MAX), None);
    let t = at("2026-11-29T09:56:40Z");
    assert_eq!(format_age(t.age_ms(NOW)), "3m20s");
    assert_eq!(
        Millis::from_ms(i64::MIN).age_ms(Millis::from_ms(i64::MAX)),
        i64::MAX
    );
}

#[test]
fn time_window_refuses_since_after_until() {
    let since = at("2026-11-29T10:00:00Z");
    let until = at("2026-11-29T09:00:00Z");
    assert_eq!(
        TimeWindow::new(since, until).unwrap_err().to_string(),
        "--since (2026-11-29T10:00:00.000Z) is after --until (2026-11-29T09:00:00.000Z)"
    );
    let w = TimeWindow::new(until, since).unwrap();
    assert_eq!((w.since(), w.until()), (until, since));
    assert!(TimeWindow::new(since, since).is_ok());
}

/// Any millisecond from the epoch to the end of year 9999.
fn sane_millis() -> impl Strategy<Value = Millis> {
    (0..=LAST_RFC3339_MS).prop_map(Millis::from_ms)
}

/// A duration string in the grammar and the milliseconds it means.
fn duration_text() -> impl Strategy<Value = (String, u64)> {
    let units = [
        ("d", 86_400_000u64),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1_000),
        ("ms", 1),
    ];
    proptest::collection::vec(proptest::option::of(0u64..100_000), 5)
        .prop_filter("at least one term", |terms| {
            terms.iter().any(Option::is_some)
        })
        .prop_map(move |terms| {
            let mut text = String::new();
            let mut ms = 0;
            for (value, (unit, unit_ms)) in terms.iter().zip(units) {
                if let Some(v) = value {
                    text.push_str(&format!("{v}{unit}"));
                    ms += v * unit_ms;
                }
            }
            (text, ms)
        })
}

proptest! {
    #[test]
    fn display_parse_round_trip(m in sane_millis()) {
        let text = m.to_string();
        prop_assert_eq!(text.len(), 24);
        prop_assert_eq!(text.parse::<Millis>(), Ok(m));
        prop_assert_eq!(parse_time_expr(&text, Millis::from_ms(LAST_RFC3339_MS)), Ok(m));
    }

    #[test]
    fn display_matches_jiff(ms in -62_135_596_800_000i64..=LAST_RFC3339_MS) {
        let ts = jiff::Timestamp::from_millisecond(ms).unwrap();
        let theirs = ts.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
        prop_assert_eq!(Millis::from_ms(ms).to_string(), theirs);
    }

    #[test]
    fn parse_matches_jiff_with_offsets(
        m in sane_millis(),
        offset_minutes in -(23 * 60 + 59)..=(23 * 60 + 59i32),
        nanos in 0u32..1_000_000,
    ) {
        let offset = jiff::tz::Offset::from_seconds(offset_minutes * 60).unwrap();
        let ts = jiff::Timestamp::from_millisecond(m.as_ms()).unwrap()
            .checked_add(jiff::SignedDuration::from_nanos(i64::from(nanos))).unwrap();
        let text = ts.display_with_offset(offset).to_string();
        if let Ok(parsed) = text.parse::<Millis>() {
            prop_assert_eq!(parsed, m, "{}", text);
        } else {
            // Only when the local date falls outside years 0000..=9999.
            prop_assert!(!text.as_bytes()[0].is_ascii_digit(), "{}", text);
        }
    }

    #[test]
    fn durations_round_trip((text, ms) in duration_text()) {
        prop_assert_eq!(parse_duration(&text), Ok(Duration::from_millis(ms)));
        let expected = NOW.as_ms().checked_sub(ms as i64).filter(|t| *t >= 0).map(Millis::from_ms);
        prop_assert_eq!(parse_time_expr(&text, NOW).ok(), expected);
    }

    #[test]
    fn parse_time_expr_never_panics(s in "\\PC{0,40}") {
        let _ = parse_time_expr(&s, NOW);
        let _ = parse_duration(&s);
    }
}

#[test]
fn a_time_of_day_is_its_most_recent_past_occurrence_in_the_local_zone() {
    use jiff::tz::{Offset, TimeZone};
    let utc = TimeZone::UTC;
    // NOW is 10:00:00Z.
    let parse = |s: &str, tz: &TimeZone| parse_time_expr_in(s, NOW, tz).unwrap();
    assert_eq!(parse("09:30", &utc), at("2026-11-29T09:30:00.000Z"));
    assert_eq!(parse("10:00:00", &utc), NOW, "now itself is today");
    assert_eq!(
        parse("14:02", &utc),
        at("2026-11-28T14:02:00.000Z"),
        "later today: yesterday's"
    );
    assert_eq!(parse(" 00:00 ", &utc), at("2026-11-29T00:00:00.000Z"));
    // At UTC+02:00 it is 12:00 local: 11:15 local is 09:15Z today.
    let plus2 = TimeZone::fixed(Offset::from_hours(2).unwrap());
    assert_eq!(parse("11:15", &plus2), at("2026-11-29T09:15:00.000Z"));
    assert_eq!(parse("12:30", &plus2), at("2026-11-28T10:30:00.000Z"));
    // In New York (UTC-5 in November) it is 05:00.
    if let Ok(ny) = TimeZone::get("America/New_York") {
        assert_eq!(parse("04:59", &ny), at("2026-11-29T09:59:00.000Z"));
    }
    // Only a time read as yesterday's gets a note saying so.
    assert_eq!(yesterday_note("09:30", NOW, &utc), None);
    assert_eq!(yesterday_note("30m", NOW, &utc), None);
    assert_eq!(
        yesterday_note("14:02", NOW, &utc).as_deref(),
        Some("14:02 means yesterday's 14:02 (2026-11-28 14:02:00 UTC): it is only 10:00 now")
    );
}

#[test]
fn a_time_of_day_before_the_epoch_is_refused_like_any_other_time() {
    // Found by the time_expr fuzz target: 17 ms after the epoch, at UTC+12:45, the
    // last 09:30:15 was on 1969-12-31.
    use jiff::tz::TimeZone;
    let chatham = TimeZone::posix("<+1245>-12:45<+1345>,M9.5.0/2:45,M4.1.0/3:45").unwrap();
    let err = parse_time_expr_in("09:30:15", Millis::from_ms(17), &chatham).unwrap_err();
    assert!(matches!(err, TimeError::BeforeEpoch { .. }), "{err}");
}

#[test]
fn the_zone_name_is_read_from_a_link_into_zoneinfo() {
    assert_eq!(
        zoneinfo_name("/usr/share/zoneinfo/Europe/Paris"),
        Some("Europe/Paris")
    );
    assert_eq!(
        zoneinfo_name("../usr/share/zoneinfo/Etc/UTC"),
        Some("Etc/UTC")
    );
    assert_eq!(
        zoneinfo_name("/var/db/timezone/zoneinfo/America/New_York"),
        Some("America/New_York")
    );
    assert_eq!(zoneinfo_name("/etc/zones/Paris"), None);
    assert_eq!(zoneinfo_name("/usr/share/zoneinfo/"), None);
    assert_eq!(zoneinfo_name("/usr/share/zoneinfo/../../etc/passwd"), None);
}

#[test]
fn the_local_zone_is_the_one_jiff_finds() {
    // Whatever this machine's zone: the fast path and jiff's own agree on its
    // name and on its offset at many instants of a year.
    let ours = local_zone();
    let theirs = jiff::tz::TimeZone::system();
    assert_eq!(ours.iana_name(), theirs.iana_name());
    for day in 0..366 {
        let at = jiff::Timestamp::from_second(1_767_225_600 + day * 86_400 + 3_600).unwrap();
        assert_eq!(ours.to_offset(at), theirs.to_offset(at), "day {day}");
    }
}
