//! Times as text shows them (docs/output.md, "Times"): in one zone, the local
//! one unless `--utc`, named once where an answer starts. JSON and YAML keep
//! RFC 3339 UTC ([`crate::time::Millis`]'s own display).
//!
//! The zone is chosen once per process ([`use_zone`], from the command line);
//! until then, and in the library's own tests, it is UTC.

use std::sync::OnceLock;

use jiff::tz::TimeZone;

/// The zone text output shows times in.
#[derive(Debug, Clone)]
pub struct Clock {
    tz: TimeZone,
}

static CLOCK: OnceLock<Clock> = OnceLock::new();

/// Chooses the zone of this process's text output: UTC with `utc`, else the
/// system's (`TZ`, else `/etc/localtime`). The first call wins.
pub fn use_zone(utc: bool) {
    let _ = CLOCK.set(if utc { Clock::utc() } else { Clock::local() });
}

/// The zone text output uses.
pub fn clock() -> &'static Clock {
    CLOCK.get_or_init(Clock::utc)
}

impl Clock {
    pub fn utc() -> Clock {
        Clock { tz: TimeZone::UTC }
    }

    /// The system's zone.
    pub fn local() -> Clock {
        Clock {
            tz: crate::time::local_zone(),
        }
    }

    /// A named zone (tests).
    pub fn named(name: &str) -> Option<Clock> {
        TimeZone::get(name).ok().map(|tz| Clock { tz })
    }

    fn zoned(&self, ms: i64) -> Option<jiff::Zoned> {
        jiff::Timestamp::from_millisecond(ms)
            .ok()
            .map(|t| t.to_zoned(self.tz.clone()))
    }

    fn format(&self, ms: i64, pattern: &str) -> String {
        match self.zoned(ms) {
            Some(z) => z.strftime(pattern).to_string(),
            // Outside jiff's range (years -9999..=9999): the number itself.
            None => format!("{ms} ms"),
        }
    }

    /// Whether this is UTC (`UTC`, `Etc/UTC` and the like: a zone fixed at
    /// offset zero).
    pub fn is_utc(&self) -> bool {
        self.tz
            .to_fixed_offset()
            .is_ok_and(|o| o == jiff::tz::Offset::UTC)
            || matches!(
                self.tz.iana_name(),
                Some(
                    "UTC"
                        | "UCT"
                        | "Universal"
                        | "Zulu"
                        | "GMT"
                        | "GMT0"
                        | "Etc/UTC"
                        | "Etc/UCT"
                        | "Etc/Universal"
                        | "Etc/Zulu"
                        | "Etc/GMT"
                        | "Etc/GMT0"
                        | "Etc/GMT+0"
                        | "Etc/GMT-0"
                )
            )
    }

    /// The zone as a header names it at `ms`: `UTC`, or its name and offset
    /// then, `America/New_York, UTC-05:00`.
    pub fn zone(&self, ms: i64) -> String {
        if self.is_utc() {
            return "UTC".into();
        }
        let offset = self.format(ms, "%:z");
        match self.tz.iana_name() {
            Some(name) => format!("{name}, UTC{offset}"),
            None => format!("UTC{offset}"),
        }
    }

    /// `2026-12-02`.
    pub fn date(&self, ms: i64) -> String {
        self.format(ms, "%Y-%m-%d")
    }

    /// `10:16:41.123`.
    pub fn time(&self, ms: i64) -> String {
        self.format(ms, "%H:%M:%S%.3f")
    }

    /// `10:16:41`.
    pub fn time_s(&self, ms: i64) -> String {
        self.format(ms, "%H:%M:%S")
    }

    /// `2026-12-02 10:16`.
    pub fn minute(&self, ms: i64) -> String {
        self.format(ms, "%Y-%m-%d %H:%M")
    }

    /// `12-02 10:16`.
    pub fn short(&self, ms: i64) -> String {
        self.format(ms, "%m-%d %H:%M")
    }

    /// `2026-12-02 10:16:41.123`.
    pub fn stamp(&self, ms: i64) -> String {
        self.format(ms, "%Y-%m-%d %H:%M:%S%.3f")
    }

    /// `2026-12-02 10:16:41.123`, or the time alone when `ms` falls on the
    /// day of `day_of` (the other end of a stretch).
    pub fn stamp_after(&self, ms: i64, day_of: i64) -> String {
        if self.date(ms) == self.date(day_of) {
            self.time(ms)
        } else {
            self.stamp(ms)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_in_the_zone_and_the_zone_is_named() {
        // 2026-12-02T15:16:41.123Z
        let t = 1_796_224_601_123;
        let utc = Clock::utc();
        assert_eq!(utc.stamp(t), "2026-12-02 15:16:41.123");
        assert_eq!(utc.zone(t), "UTC");
        let ny = Clock::named("America/New_York").expect("the tz database has New York");
        assert_eq!(ny.stamp(t), "2026-12-02 10:16:41.123");
        assert_eq!(ny.time_s(t), "10:16:41");
        assert_eq!(ny.zone(t), "America/New_York, UTC-05:00");
        assert_eq!(ny.stamp_after(t + 1_000, t), "10:16:42.123");
        assert_eq!(ny.stamp_after(t + 86_400_000, t), "2026-12-03 10:16:41.123");
        let etc = Clock::named("Etc/UTC").expect("the tz database has Etc/UTC");
        assert_eq!(etc.zone(t), "UTC");
    }
}
