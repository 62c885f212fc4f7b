//! Time expressions (`now`, `30m`, RFC 3339) and millisecond timestamps.
//!
//! Every time krply keeps or compares is a [`Millis`]: whole milliseconds since the Unix
//! epoch, UTC. Anything finer is floored to its millisecond when it enters (a clock
//! reading, a parsed `2026-11-29T10:00:00.123456Z`), and comparisons are plain integer
//! comparisons. So "at or before T" is `observed <= t`, inclusive at the millisecond:
//! `--at 10:00:00.123Z` includes everything observed within 10:00:00.123, up to but not
//! including 10:00:00.124.
//!
//! A time expression (`--since`, `--until`, `--at`) is one of
//! - `now` (any case);
//! - a duration meaning "that long ago": `90s`, `30m`, `2h`, `1d`, `1h30m`, `1d2h`, `500ms`
//!   (units `d`, `h`, `m`, `s`, `ms`, largest first, each once; no sign, no spaces, no
//!   bare numbers);
//! - a local time of day, `HH:MM` or `HH:MM:SS`: its most recent past occurrence in the
//!   system's time zone (`14:02` at 09:00 means yesterday's 14:02);
//! - an RFC 3339 time: `2026-11-29T10:00:00Z`, `2026-11-29T11:00:00.5+01:00`.
//!
//! Surrounding whitespace is ignored. Times before the Unix epoch are refused.

mod duration;
mod rfc3339;

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use duration::DurationSyntax;
pub use krply_apimachinery::duration::{format_age, format_duration};

const ACCEPTED_TIMES: &str = "use \"now\", a duration like 30m, 2h, 1d or 1h30m (meaning \
     that long ago), a local time of day like 14:02, or an RFC 3339 time like 2026-11-29T10:00:00Z";
const ACCEPTED_DURATIONS: &str = "use a whole number with a unit (ms, s, m, h, d), largest \
     unit first, like 90s, 10m, 2h or 1h30m";

/// Why a time, a duration or a time window was refused. Messages are one line, without
/// an `error:` prefix, and name the accepted forms where the input was malformed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimeError {
    /// Not `now`, a duration or an RFC 3339 time.
    #[error("invalid time {input:?}: {ACCEPTED_TIMES}")]
    InvalidTime { input: String },
    /// Not a duration.
    #[error("invalid duration {input:?}: {ACCEPTED_DURATIONS}")]
    InvalidDuration { input: String },
    /// Not an RFC 3339 timestamp (where only a timestamp is accepted, e.g. stored times).
    #[error("invalid timestamp {input:?}: want an RFC 3339 time like 2026-11-29T10:00:00.000Z")]
    InvalidTimestamp { input: String },
    /// A duration longer than krply can represent (about 292 million years).
    #[error("duration {input:?} is too large")]
    DurationTooLarge { input: String },
    /// A duration that must be positive (e.g. `record --for`) was zero.
    #[error("duration {input:?} must be greater than zero")]
    ZeroDuration { input: String },
    /// The time lies before 1970-01-01T00:00:00Z.
    #[error("time {input:?} is before the Unix epoch (1970-01-01T00:00:00.000Z)")]
    BeforeEpoch { input: String },
    /// A timestamp that jiff cannot represent (outside years -9999..=9999).
    #[error("time {0} ms since the epoch is outside the supported range")]
    OutOfRange(i64),
    /// `--since` lies after `--until`.
    #[error("--since ({since}) is after --until ({until})")]
    SinceAfterUntil { since: Millis, until: Millis },
    /// A time after now: history answers are about the past.
    #[error(
        "time {input:?} is in the future (it is {now} now): the journal holds only what happened"
    )]
    InFuture { input: String, now: Millis },
}

/// Milliseconds since the Unix epoch (UTC).
///
/// Displays (and serializes) as RFC 3339 UTC with exactly three fractional digits,
/// `2026-11-29T10:00:00.000Z`, and parses ([`FromStr`], deserialization) from any RFC 3339
/// time. Ordering is numeric, so comparisons are inclusive at the millisecond (see the
/// module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Millis(i64);

impl Millis {
    /// 1970-01-01T00:00:00.000Z.
    pub const EPOCH: Millis = Millis(0);

    /// The time `ms` milliseconds after the epoch (before it when negative).
    pub const fn from_ms(ms: i64) -> Millis {
        Millis(ms)
    }

    /// Milliseconds since the epoch.
    pub const fn as_ms(self) -> i64 {
        self.0
    }

    /// The current time of the system clock, floored to the millisecond.
    pub fn now() -> Millis {
        let saturate = |ms: u128| i64::try_from(ms).unwrap_or(i64::MAX);
        match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(after) => Millis(saturate(after.as_millis())),
            // A clock before 1970: floor toward the past.
            Err(before) => {
                let d = before.duration();
                let ms = saturate(d.as_millis() + u128::from(d.subsec_nanos() % 1_000_000 != 0));
                Millis(-ms)
            }
        }
    }

    /// The millisecond that contains `ts` (floored, also before the epoch).
    pub fn from_jiff(ts: jiff::Timestamp) -> Millis {
        let ms = ts.as_nanosecond().div_euclid(1_000_000);
        // jiff's range (years -9999..=9999) fits comfortably in i64 milliseconds.
        Millis(i64::try_from(ms).unwrap_or(if ms < 0 { i64::MIN } else { i64::MAX }))
    }

    /// This time as a jiff timestamp; fails outside jiff's range (years -9999..=9999).
    pub fn to_jiff(self) -> Result<jiff::Timestamp, TimeError> {
        jiff::Timestamp::from_millisecond(self.0).map_err(|_| TimeError::OutOfRange(self.0))
    }

    /// Parses an RFC 3339 time (any offset; fractional seconds floored to the millisecond).
    pub fn parse_rfc3339(s: &str) -> Result<Millis, TimeError> {
        rfc3339::parse_millis(s)
            .map(Millis)
            .ok_or_else(|| TimeError::InvalidTimestamp {
                input: s.to_owned(),
            })
    }

    /// `self - d`, or `None` on overflow.
    pub fn checked_sub(self, d: Duration) -> Option<Millis> {
        let ms = i64::try_from(d.as_millis()).ok()?;
        self.0.checked_sub(ms).map(Millis)
    }

    /// `self + d`, or `None` on overflow.
    pub fn checked_add(self, d: Duration) -> Option<Millis> {
        let ms = i64::try_from(d.as_millis()).ok()?;
        self.0.checked_add(ms).map(Millis)
    }

    /// Milliseconds from `self` to `now` (negative if `self` is later), saturating;
    /// feed it to [`format_age`].
    pub fn age_ms(self, now: Millis) -> i64 {
        now.0.saturating_sub(self.0)
    }
}

impl fmt::Display for Millis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        rfc3339::write_millis(self.0, f)
    }
}

impl FromStr for Millis {
    type Err = TimeError;

    fn from_str(s: &str) -> Result<Millis, TimeError> {
        Millis::parse_rfc3339(s)
    }
}

impl From<Millis> for i64 {
    fn from(m: Millis) -> i64 {
        m.0
    }
}

impl Serialize for Millis {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Millis {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Millis, D::Error> {
        let s = String::deserialize(deserializer)?;
        Millis::parse_rfc3339(&s).map_err(serde::de::Error::custom)
    }
}

/// Parses a time expression (see the module documentation) relative to `now`.
pub fn parse_time_expr(s: &str, now: Millis) -> Result<Millis, TimeError> {
    parse_time_expr_in(s, now, &local_zone())
}

/// The system's time zone, as [`jiff::tz::TimeZone::system`] finds it, without
/// its cost at every start: to name the zone `/etc/localtime` links to, jiff
/// lists the whole zoneinfo database (a tenth of `status`'s start). When `TZ`
/// is unset and `/etc/localtime` links into a zoneinfo directory, the zone is
/// read from that file under the name of its link; otherwise jiff looks.
pub fn local_zone() -> jiff::tz::TimeZone {
    const LOCALTIME: &str = "/etc/localtime";
    if std::env::var_os("TZ").is_none()
        && let Ok(target) = std::fs::read_link(LOCALTIME)
        && let Some(name) = target.to_str().and_then(zoneinfo_name)
        && let Ok(data) = std::fs::read(LOCALTIME)
        && let Ok(tz) = jiff::tz::TimeZone::tzif(name, &data)
    {
        return tz;
    }
    jiff::tz::TimeZone::system()
}

/// The IANA name in a link into a zoneinfo directory
/// (`/usr/share/zoneinfo/Europe/Paris` names `Europe/Paris`), if it is one.
fn zoneinfo_name(target: &str) -> Option<&str> {
    let (_, name) = target.rsplit_once("zoneinfo/")?;
    let plain = |part: &str| !part.is_empty() && part != "." && part != "..";
    name.split('/').all(plain).then_some(name)
}

/// [`parse_time_expr`] with times of day read in `tz`.
pub fn parse_time_expr_in(
    s: &str,
    now: Millis,
    tz: &jiff::tz::TimeZone,
) -> Result<Millis, TimeError> {
    let input = s.trim();
    if let Some(at) = time_of_day(input, now, tz) {
        return at.map(|(at, _)| at);
    }
    let owned = || input.to_owned();
    if input.eq_ignore_ascii_case("now") {
        return Ok(now);
    }
    let at = match duration::parse_millis(input) {
        Ok(ago) => {
            // `parse_millis` caps durations at i64::MAX ms.
            let ago =
                i64::try_from(ago).map_err(|_| TimeError::DurationTooLarge { input: owned() })?;
            now.0
                .checked_sub(ago)
                .ok_or_else(|| TimeError::BeforeEpoch { input: owned() })?
        }
        Err(DurationSyntax::TooLarge) => {
            return Err(TimeError::DurationTooLarge { input: owned() });
        }
        Err(DurationSyntax::Invalid) => {
            rfc3339::parse_millis(input).ok_or_else(|| TimeError::InvalidTime { input: owned() })?
        }
    };
    if at < 0 {
        return Err(TimeError::BeforeEpoch { input: owned() });
    }
    if at > now.0 {
        return Err(TimeError::InFuture {
            input: owned(),
            now,
        });
    }
    Ok(Millis(at))
}

/// When `s` is a time of day that falls on the day before `now`'s (in `tz`),
/// a note saying so: `14:02` at 09:00 means yesterday's 14:02.
pub fn yesterday_note(s: &str, now: Millis, tz: &jiff::tz::TimeZone) -> Option<String> {
    let input = s.trim();
    let (at, yesterday) = time_of_day(input, now, tz)?.ok()?;
    if !yesterday {
        return None;
    }
    let at = jiff::Timestamp::from_millisecond(at.0)
        .ok()?
        .to_zoned(tz.clone());
    let now = jiff::Timestamp::from_millisecond(now.0)
        .ok()?
        .to_zoned(tz.clone());
    Some(format!(
        "{input} means yesterday's {input} ({}): it is only {} now",
        at.strftime("%Y-%m-%d %H:%M:%S %Z"),
        now.strftime("%H:%M")
    ))
}

/// `HH:MM` or `HH:MM:SS` as the most recent occurrence of that wall-clock
/// time in `tz` at or before `now` (`None`: not that form), and whether that
/// was on the day before. A time the clock skips on the day (a DST gap) is the
/// instant it would have been.
fn time_of_day(
    input: &str,
    now: Millis,
    tz: &jiff::tz::TimeZone,
) -> Option<Result<(Millis, bool), TimeError>> {
    let parts: Vec<&str> = input.split(':').collect();
    if !(2..=3).contains(&parts.len())
        || parts
            .iter()
            .any(|p| p.len() != 2 || !p.bytes().all(|b| b.is_ascii_digit()))
    {
        return None;
    }
    let invalid = || TimeError::InvalidTime {
        input: input.to_owned(),
    };
    let number = |i: usize| parts.get(i).map_or(Some(0), |p| p.parse::<i8>().ok());
    let (Some(h), Some(m), Some(sec)) = (number(0), number(1), number(2)) else {
        return Some(Err(invalid()));
    };
    let Ok(wall) = jiff::civil::Time::new(h, m, sec, 0) else {
        return Some(Err(invalid()));
    };
    let result = (|| {
        let now_ts = jiff::Timestamp::from_millisecond(now.0).ok()?;
        let today = now_ts.to_zoned(tz.clone()).date();
        let mut at = today.to_datetime(wall).to_zoned(tz.clone()).ok()?;
        let yesterday = at.timestamp() > now_ts;
        if yesterday {
            at = today
                .yesterday()
                .ok()?
                .to_datetime(wall)
                .to_zoned(tz.clone())
                .ok()?;
        }
        Some((Millis(at.timestamp().as_millisecond()), yesterday))
    })();
    Some(match result {
        // Found by the time_expr fuzz target: just after the epoch, in a zone ahead
        // of UTC, the last such time of day fell on 1969-12-31.
        Some((at, _)) if at < Millis::EPOCH => Err(TimeError::BeforeEpoch {
            input: input.to_owned(),
        }),
        Some(found) => Ok(found),
        None => Err(invalid()),
    })
}

/// Parses a duration (`90s`, `10m`, `1h30m`, `500ms`, ...; zero allowed).
pub fn parse_duration(s: &str) -> Result<Duration, TimeError> {
    let input = s.trim();
    match duration::parse_millis(input) {
        Ok(ms) => Ok(Duration::from_millis(ms)),
        Err(DurationSyntax::Invalid) => Err(TimeError::InvalidDuration {
            input: input.to_owned(),
        }),
        Err(DurationSyntax::TooLarge) => Err(TimeError::DurationTooLarge {
            input: input.to_owned(),
        }),
    }
}

/// Parses a duration that must be longer than zero (e.g. `record --for 10m`).
pub fn parse_positive_duration(s: &str) -> Result<Duration, TimeError> {
    let d = parse_duration(s)?;
    if d.is_zero() {
        return Err(TimeError::ZeroDuration {
            input: s.trim().to_owned(),
        });
    }
    Ok(d)
}

/// A `--since`/`--until` pair with `since <= until` (equal is allowed: an empty window).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TimeWindow {
    since: Millis,
    until: Millis,
}

impl TimeWindow {
    /// The window from `since` to `until`; refuses `since > until`.
    pub fn new(since: Millis, until: Millis) -> Result<TimeWindow, TimeError> {
        if since > until {
            return Err(TimeError::SinceAfterUntil { since, until });
        }
        Ok(TimeWindow { since, until })
    }

    /// The start of the window.
    pub fn since(&self) -> Millis {
        self.since
    }

    /// The end of the window.
    pub fn until(&self) -> Millis {
        self.until
    }
}

#[cfg(test)]
mod tests;
