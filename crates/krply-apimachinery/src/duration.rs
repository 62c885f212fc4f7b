//! kubectl's AGE column: `HumanDuration` of k8s.io/apimachinery `util/duration`.
//!
//! Two to three significant figures: seconds below 2 minutes, `XmYs` below 10 minutes,
//! minutes below 3 hours, `XhYm` below 8 hours, hours below 2 days, `XdYh` below 8 days,
//! days below 2 years, `XyYd` below 8 years, then years. A zero second or minute or hour
//! or day part is left out (`5m`, not `5m0s`). Slightly negative ages (clock skew up to
//! one second) print `0s`; more negative ones print `<invalid>`, as kubectl does.

/// Formats an age given in milliseconds the way kubectl's AGE column does.
pub fn format_age(ms: i64) -> String {
    // Go converts with int(d.Seconds()), truncating toward zero.
    let seconds = ms / 1_000;
    if seconds < -1 {
        return "<invalid>".to_owned();
    }
    if seconds < 0 {
        return "0s".to_owned();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        return with_remainder(minutes, "m", seconds % 60, "s");
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = minutes / 60;
    if hours < 8 {
        return with_remainder(hours, "h", minutes % 60, "m");
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        return with_remainder(hours / 24, "d", hours % 24, "h");
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        return with_remainder(hours / 24 / 365, "y", (hours / 24) % 365, "d");
    }
    format!("{}y", hours / 24 / 365)
}

/// A duration as every human line says it (a delay, how long a recorder ran
/// or was frozen): milliseconds below a second (`200ms`), else as kubectl's
/// AGE column ([`format_age`]: `30s`, `2m5s`, `3h`).
pub fn format_duration(d: std::time::Duration) -> String {
    if d < std::time::Duration::from_secs(1) {
        format!("{}ms", d.as_millis())
    } else {
        format_age(i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    }
}

fn with_remainder(major: i64, major_unit: &str, minor: i64, minor_unit: &str) -> String {
    if minor == 0 {
        format!("{major}{major_unit}")
    } else {
        format!("{major}{major_unit}{minor}{minor_unit}")
    }
}

#[cfg(test)]
mod tests {
    use super::{format_age, format_duration};
    use std::time::Duration;

    #[test]
    fn durations_read_as_ages_and_milliseconds_below_a_second() {
        assert_eq!(format_duration(Duration::from_millis(200)), "200ms");
        assert_eq!(format_duration(Duration::from_millis(30_400)), "30s");
        assert_eq!(format_duration(Duration::from_secs(125)), "2m5s");
        assert_eq!(format_duration(Duration::from_secs(3 * 3600)), "3h");
    }

    const S: i64 = 1_000;
    const M: i64 = 60 * S;
    const H: i64 = 60 * M;
    const D: i64 = 24 * H;
    const Y: i64 = 365 * D;

    /// The cases of apimachinery's `TestHumanDuration` and `TestHumanDurationBoundaries`,
    /// converted to milliseconds (Go's `-2s + 1ns` becomes `-2s + 1ms`).
    #[test]
    fn matches_kubectl_human_duration() {
        let cases = [
            (S, "1s"),
            (70 * S, "70s"),
            (190 * S, "3m10s"),
            (70 * M, "70m"),
            (47 * H, "47h"),
            (49 * H, "2d1h"),
            (8 * D + 2 * H, "8d"),
            (367 * D, "367d"),
            (2 * Y + 25 * H, "2y1d"),
            (8 * Y + 2 * H, "8y"),
            (-2 * S, "<invalid>"),
            (-2 * S + 1, "0s"),
            (0, "0s"),
            (S - 1, "0s"),
            (2 * M - 1, "119s"),
            (2 * M, "2m"),
            (2 * M + S, "2m1s"),
            (10 * M - 1, "9m59s"),
            (10 * M, "10m"),
            (10 * M + S, "10m"),
            (3 * H - 1, "179m"),
            (3 * H, "3h"),
            (3 * H + M, "3h1m"),
            (8 * H - 1, "7h59m"),
            (8 * H, "8h"),
            (8 * H + 59 * M, "8h"),
            (2 * D - 1, "47h"),
            (2 * D, "2d"),
            (2 * D + H, "2d1h"),
            (8 * D - 1, "7d23h"),
            (8 * D, "8d"),
            (8 * D + 23 * H, "8d"),
            (2 * Y - 1, "729d"),
            (2 * Y, "2y"),
            (2 * Y + 23 * H, "2y"),
            (2 * Y + 23 * H + 59 * M, "2y"),
            (2 * Y + D - 1, "2y"),
            (2 * Y + D, "2y1d"),
            (3 * Y, "3y"),
            (4 * Y, "4y"),
            (5 * Y, "5y"),
            (6 * Y, "6y"),
            (7 * Y, "7y"),
            (8 * Y - 1, "7y364d"),
            (8 * Y, "8y"),
            (8 * Y + 364 * D, "8y"),
            (9 * Y, "9y"),
        ];
        for (ms, want) in cases {
            assert_eq!(format_age(ms), want, "{ms} ms");
        }
    }

    #[test]
    fn extremes_do_not_overflow() {
        assert_eq!(format_age(i64::MAX), "292471208y");
        assert_eq!(format_age(i64::MIN), "<invalid>");
        assert_eq!(format_age(-1_000), "0s");
    }
}
