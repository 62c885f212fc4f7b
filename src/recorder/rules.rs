//! The retry and gap rules of one recorder stream, as a pure state machine: what
//! happened goes in (a list ended, a watch ended, the watch made progress), and what to
//! write, say and do next comes out. [`super::stream`] carries the decisions out; the
//! rules themselves never touch the network, the journal or the clock
//! (docs/architecture.md §2, docs/consistency.md).
//!
//! The rules:
//! - a downtime since the last durable point of an earlier run is a gap;
//! - every gap starts [`IN_FLIGHT_MS`] before the point it follows (what the server
//!   made just before may not have reached the stream), never before the last list;
//! - a 410 (or a resourceVersion the server says is too large) is a gap from the last
//!   durable point, then a relist; a second one in a row waits with backoff first;
//! - 403 and 404 make the stream unavailable: one gap (unless one is already open),
//!   one coverage record, then a slow retry until a list works again;
//! - a watch that cannot be read past the same resourceVersion three times in a row
//!   becomes a gap and a relist, never an endless retry;
//! - anything else reconnects from the last durable resourceVersion after a jittered,
//!   capped backoff that resets once a watch has been healthy;
//! - a freeze of the recorder since the last durable point (docs/consistency.md,
//!   "A frozen recorder") is a gap from that point, then a relist: what the
//!   watch delivers after it cannot be dated;
//! - stopping while watching writes a stop checkpoint at the last durable point;
//!   stopping while not connected, or right after a freeze, writes none, so
//!   nothing claims the time since.

use super::backoff::Backoff;
use crate::cluster::api::ApiError;
use crate::journal::DurablePoint;
use crate::time::format_duration;
use std::time::Duration;

/// What a stream is doing now, for the live display.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    Starting,
    Listing,
    Watching,
    /// Waiting before a reconnect, with the reason.
    Retrying(String),
    Unavailable(String),
    Stopped,
}

impl Phase {
    pub fn label(&self) -> String {
        match self {
            Phase::Starting => "starting".into(),
            Phase::Listing => "listing".into(),
            Phase::Watching => "watching".into(),
            Phase::Retrying(why) => format!("reconnecting ({why})"),
            Phase::Unavailable(why) => format!("unavailable ({why})"),
            Phase::Stopped => "stopped".into(),
        }
    }
}

/// A line for the user about one stream.
#[derive(Debug, Clone)]
pub struct Notice {
    pub stream: String,
    pub text: String,
    pub warning: bool,
}

/// Why the watch loop handed control back.
#[derive(Debug)]
pub enum WatchEnd {
    /// Stopped while watching: complete up to now.
    Stop,
    /// Stopped before the watch was open again: complete only up to the last
    /// durable point, so no stop checkpoint claims the time since.
    StopUnconfirmed,
    /// History is lost: record a gap and relist.
    Expired(String),
    /// The recorder was frozen from `from` to `to` (ms) since the last
    /// durable point: a gap from that point, and a relist.
    Frozen { from: i64, to: i64 },
    /// No word from the server since `since` (ms), for longer than `limit`:
    /// a connection that died without closing. What the server wrote since
    /// then reaches no one, or reaches the stream late: a gap from `since`
    /// (even where heartbeats claimed the time), and a relist.
    Silent { since: i64, limit: Duration },
    /// A watch answered `away` after the server's last word to the stream
    /// (`since`, ms), more than the late limit: what it replays now
    /// happened at any time since, so a gap from then, and a relist.
    /// `why`: the failure that kept it away, if any.
    Late {
        since: i64,
        away: Duration,
        why: Option<String>,
    },
    /// An event that waited to be read is known, from the times the server
    /// wrote in it, to be stamped `by` late: the stream is behind the
    /// server. What it reads cannot be dated since `since` (ms, the
    /// earliest the event may have been written): a gap from then, and a
    /// relist. `replayed`: the event came in the first moments of a watch,
    /// among what the server replayed to it, rather than in a burst.
    Behind {
        since: i64,
        by: Duration,
        replayed: bool,
    },
    /// The server did not answer the watch request in time: retried from
    /// the same resourceVersion, on new connections.
    Unanswered(String),
    /// 403 or 404: the stream cannot be read at all for now.
    Unavailable { short: String, full: String },
    /// The stream could not be read (an event too large, or cut off): retried
    /// from the same resourceVersion, but not forever.
    Unreadable(String),
    /// Reconnect from the same resourceVersion after a delay.
    Retry {
        why: String,
        retry_after: Option<Duration>,
        /// The watch delivered data, or stayed open long enough: backoff starts over.
        healthy: bool,
    },
}

/// Something the stream must write or say, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// A gap from `from` (ms) and `from_rv` to now.
    Gap {
        from: i64,
        from_rv: Option<String>,
        reason: String,
    },
    /// The stream became unavailable, or available again.
    Coverage {
        available: bool,
        reason: String,
    },
    /// The stop checkpoint: complete up to this resourceVersion, as of `at`
    /// (ms; read before the stream last looked for a freeze).
    StopCheckpoint {
        at: i64,
        rv: String,
    },
    Notice {
        text: String,
        warning: bool,
    },
    Phase(Phase),
    /// Refused (403, 404) before any list of this run: `record` ends when every
    /// stream is, and says how many were when only some are.
    Refused {
        reason: String,
    },
}

/// What the stream does once the effects are carried out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Wait this long (unless asked to stop first), then [`Rules::next`].
    Pause(Duration),
    /// Go on at once with [`Rules::next`].
    Go,
    /// The stream task ends.
    Finish,
}

/// The rules' answer to one input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub effects: Vec<Effect>,
    pub next: Next,
}

/// Where the stream goes after a decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    List,
    /// Watch from exactly this resourceVersion.
    Watch(String),
}

/// How many times the watch may fail to be read past the same resourceVersion.
pub const UNREADABLE_STRIKES: u32 = 3;

/// The state the rules keep between inputs.
#[derive(Debug, Clone)]
pub struct Rules {
    backoff: Backoff,
    unavailable_retry: Duration,
    /// Where history was last known complete (ms, resourceVersion); a gap starts here.
    durable: Option<(i64, String)>,
    /// A gap was written and no baseline has closed it yet.
    gap_open: bool,
    /// Why the stream is unavailable, while it is.
    unavailable: Option<String>,
    /// Watch from here next; `None` relists.
    resume: Option<String>,
    expired_in_a_row: u32,
    /// Where the watch last failed to be read, and how often in a row.
    unreadable: Option<(String, u32)>,
    /// A list of this run completed.
    listed_once: bool,
    /// When the stream was last listed (ms), in this run or an earlier
    /// one: no gap starts before it, as the baseline holds all before.
    listed_at: Option<i64>,
}

impl Rules {
    /// The rules at the start of a stream, with the last durable point of an earlier
    /// run if there was one; the effects to carry out before the first list.
    pub fn start(
        backoff: Backoff,
        unavailable_retry: Duration,
        prior: Option<DurablePoint>,
    ) -> (Rules, Vec<Effect>) {
        let mut rules = Rules {
            backoff,
            unavailable_retry,
            gap_open: prior.is_some(),
            durable: None,
            unavailable: None,
            resume: None,
            expired_in_a_row: 0,
            unreadable: None,
            listed_once: false,
            listed_at: None,
        };
        let mut effects = Vec::new();
        if let Some(p) = prior {
            rules.listed_at = p.listed_at;
            effects.push(rules.gap(p.at, Some(p.rv.clone()), "recorder not running".into()));
            rules.durable = Some((p.at, p.rv));
        }
        (rules, effects)
    }

    /// Where to go next: the watch from the resume point, or a list.
    pub fn next(&self) -> Step {
        match &self.resume {
            Some(rv) => Step::Watch(rv.clone()),
            None => Step::List,
        }
    }

    /// The watch journaled an event, bookmark or heartbeat at `rv`, at `at` (ms).
    pub fn progress(&mut self, at: i64, rv: &str) {
        self.durable = Some((at, rv.to_owned()));
    }

    /// The watch delivered data: the next failure backs off from the start again.
    pub fn healthy(&mut self) {
        self.backoff.reset();
    }

    /// A list finished at `rv` with `items` objects, at `now` (ms); its baseline
    /// closes any open gap.
    pub fn listed(&mut self, now: i64, rv: &str, items: u64) -> Decision {
        let mut effects = Vec::new();
        self.gap_open = false;
        self.listed_once = true;
        if let Some(reason) = self.unavailable.take() {
            effects.push(Effect::Coverage {
                available: true,
                reason: format!("available again after {reason}"),
            });
            effects.push(notice(format!("available again (was: {reason})"), false));
        }
        effects.push(notice(
            format!("listed {items} objects at resourceVersion {rv}"),
            false,
        ));
        self.durable = Some((now, rv.to_owned()));
        self.listed_at = Some(now);
        self.resume = Some(rv.to_owned());
        Decision {
            effects,
            next: Next::Go,
        }
    }

    /// A list failed: `short` is the reason for tables, `full` the whole error.
    pub fn list_failed(&mut self, e: &ApiError, short: &str) -> Decision {
        if matches!(e.code(), Some(403) | Some(404)) {
            return self.unavailable(short, &e.to_string());
        }
        let d = self.backoff.delay(retry_after(e));
        Decision {
            effects: vec![
                Effect::Phase(Phase::Retrying(short.to_owned())),
                notice(
                    format!("list failed: {e}; retrying in {}", format_duration(d)),
                    true,
                ),
            ],
            next: Next::Pause(d),
        }
    }

    /// The watch that started at `watched_from` ended, at `now` (ms).
    pub fn watch_ended(&mut self, end: WatchEnd, watched_from: &str, now: i64) -> Decision {
        match self.count_unreadable(end, watched_from) {
            WatchEnd::Stop => Decision {
                effects: self
                    .durable
                    .as_ref()
                    .map(|(_, rv)| Effect::StopCheckpoint {
                        at: now,
                        rv: rv.clone(),
                    })
                    .into_iter()
                    .collect(),
                next: Next::Finish,
            },
            WatchEnd::StopUnconfirmed => Decision {
                effects: Vec::new(),
                next: Next::Finish,
            },
            WatchEnd::Expired(reason) => self.expired(reason, now),
            WatchEnd::Frozen { from, to } => self.frozen(from, to),
            WatchEnd::Silent { since, limit } => {
                let took = format_duration(limit);
                self.undatable(
                    since,
                    format!("no word from the server for {took} (a connection that died without closing)"),
                    format!(
                        "no word from the server for {took}: the connection is taken for dead; \
                         gap recorded from its last word, relisting"
                    ),
                )
            }
            WatchEnd::Late { since, away, why } => {
                let took = format_duration(away);
                let why = why.map(|w| format!(": {w}")).unwrap_or_default();
                self.undatable(
                    since,
                    format!("not connected for {took}{why}"),
                    format!(
                        "back after {took} without a word from the server: what it missed cannot \
                         be dated; gap recorded, relisting"
                    ),
                )
            }
            WatchEnd::Behind {
                since,
                by,
                replayed,
            } => {
                let by = format_duration(by);
                let (reason, say) = if replayed {
                    let what =
                        format!("the server replayed changes {by} old when the watch reopened");
                    let say = format!("{what}: they cannot be dated; gap recorded, relisting");
                    (what, say)
                } else {
                    (
                        format!(
                            "the recorder fell {by} behind the server (a burst it could not keep up with)"
                        ),
                        format!(
                            "fell {by} behind the server: what it reads now would be stamped late; \
                             gap recorded, relisting"
                        ),
                    )
                };
                self.undatable(since, reason, say)
            }
            WatchEnd::Unavailable { short, full } => {
                self.resume = None;
                self.unavailable(&short, &full)
            }
            WatchEnd::Unreadable(why) | WatchEnd::Unanswered(why) => self.retry(why, None, false),
            WatchEnd::Retry {
                why,
                retry_after,
                healthy,
            } => self.retry(why, retry_after, healthy),
        }
    }

    /// The same resourceVersion unreadable [`UNREADABLE_STRIKES`] times in a row is
    /// skipped with a gap and a relist rather than retried for ever.
    fn count_unreadable(&mut self, end: WatchEnd, watched_from: &str) -> WatchEnd {
        let WatchEnd::Unreadable(why) = end else {
            return end;
        };
        let at = self
            .durable
            .as_ref()
            .map_or(watched_from, |(_, rv)| rv.as_str())
            .to_owned();
        let n = match &self.unreadable {
            Some((r, n)) if *r == at => n + 1,
            _ => 1,
        };
        if n >= UNREADABLE_STRIKES {
            self.unreadable = None;
            WatchEnd::Expired(format!(
                "the watch cannot be read past resourceVersion {at}: {why}"
            ))
        } else {
            self.unreadable = Some((at, n));
            WatchEnd::Unreadable(why)
        }
    }

    fn expired(&mut self, reason: String, now: i64) -> Decision {
        self.expired_in_a_row += 1;
        let (from, from_rv) = self
            .durable
            .clone()
            .map_or((now, None), |(at, rv)| (at, Some(rv)));
        let mut effects = vec![
            self.gap(from, from_rv, reason.clone()),
            notice(
                format!("history lost ({reason}): gap recorded, relisting"),
                true,
            ),
        ];
        self.gap_open = true;
        self.resume = None;
        // A server that answers 410 to a fresh list's resourceVersion again and again
        // must not be hammered.
        let next = if self.expired_in_a_row > 1 {
            effects.push(Effect::Phase(Phase::Retrying("410 after relist".into())));
            Next::Pause(self.backoff.delay(None))
        } else {
            Next::Go
        };
        Decision { effects, next }
    }

    /// The recorder was frozen: whatever the watch holds may have happened at
    /// any time since the last durable point, so that is where a gap starts.
    /// No backoff: the server did nothing wrong.
    /// What the server said after `since` (ms) cannot be dated: a gap
    /// from then, or from the last durable point if that is earlier, with
    /// `reason`, and a relist.
    fn undatable(&mut self, since: i64, reason: String, say: String) -> Decision {
        let (start, start_rv) = match self.durable.clone() {
            Some((at, rv)) => (at.min(since), Some(rv)),
            None => (since, None),
        };
        self.gap_open = true;
        self.resume = None;
        Decision {
            effects: vec![self.gap(start, start_rv, reason), notice(say, true)],
            next: Next::Go,
        }
    }

    fn frozen(&mut self, from: i64, to: i64) -> Decision {
        let (start, start_rv) = self
            .durable
            .clone()
            .map_or((from, None), |(at, rv)| (at, Some(rv)));
        let took = format_duration(Duration::from_millis((to - from).max(0) as u64));
        let reason = format!("recorder frozen for {took} (stopped, suspended or starved)");
        self.gap_open = true;
        self.resume = None;
        Decision {
            effects: vec![
                self.gap(start, start_rv, reason),
                notice(
                    format!(
                        "the recorder was frozen for {took}: what the watch holds cannot be dated; \
                         gap recorded, relisting"
                    ),
                    true,
                ),
            ],
            next: Next::Go,
        }
    }

    /// A gap following the durable point `from` (ms): it starts
    /// [`IN_FLIGHT_MS`] earlier, but never before the last list.
    fn gap(&self, from: i64, from_rv: Option<String>, reason: String) -> Effect {
        let start = from - IN_FLIGHT_MS;
        Effect::Gap {
            from: self.listed_at.map_or(start, |listed| start.max(listed)),
            from_rv: from_rv.filter(|r| !r.is_empty()),
            reason,
        }
    }

    /// When history was last known complete (ms), if it ever was.
    pub fn durable_at(&self) -> Option<i64> {
        self.durable.as_ref().map(|(at, _)| *at)
    }

    /// Writes the coverage change once. A stream that was covered loses its history
    /// from the last durable point: that is a gap too.
    fn unavailable(&mut self, short: &str, full: &str) -> Decision {
        let mut effects = vec![Effect::Phase(Phase::Unavailable(short.to_owned()))];
        if self.unavailable.is_none() {
            if !self.gap_open
                && let Some((at, rv)) = self.durable.clone()
            {
                effects.push(self.gap(at, Some(rv), short.to_owned()));
                self.gap_open = true;
            }
            effects.push(Effect::Coverage {
                available: false,
                reason: short.to_owned(),
            });
            if self.listed_once {
                effects.push(notice(
                    format!(
                        "unavailable: {full}; retrying every {}",
                        format_duration(self.unavailable_retry)
                    ),
                    true,
                ));
            } else {
                // `record` says it, once every stream has answered: with the
                // others when only some are refused, as its error when all are.
                effects.push(Effect::Refused {
                    reason: full.to_owned(),
                });
            }
            self.unavailable = Some(short.to_owned());
        }
        Decision {
            effects,
            next: Next::Pause(self.unavailable_retry),
        }
    }

    fn retry(&mut self, why: String, retry_after: Option<Duration>, healthy: bool) -> Decision {
        if healthy {
            self.backoff.reset();
            self.expired_in_a_row = 0;
        }
        let d = self.backoff.delay(retry_after);
        let mut effects = vec![Effect::Phase(Phase::Retrying(why.clone()))];
        if !healthy {
            let from = self.durable.as_ref().map_or("?", |(_, rv)| rv.as_str());
            effects.push(notice(
                format!(
                    "watch interrupted ({why}); resuming from {from} in {}",
                    format_duration(d)
                ),
                true,
            ));
        }
        // Stopping while waiting: the stream was complete up to its last durable point
        // only, and the stream ends without a stop checkpoint claiming more.
        if let Some((_, rv)) = &self.durable {
            self.resume = Some(rv.clone());
        }
        Decision {
            effects,
            next: Next::Pause(d),
        }
    }
}

/// How long before a stream's last durable point the server may have made
/// an event the stream had not read yet (ms): one on its way, waiting in the
/// socket, or queued in a server that was stopping, when the recorder froze,
/// the connection died, the watch expired or the recorder stopped. Such an
/// event is dropped unread with the watch, so every gap starts this much
/// before the durable point it follows: the same bound as how late an event
/// may be stamped without a gap ([`super::pulse::FREEZE_LIMIT_MS`],
/// docs/consistency.md, "Gaps").
pub const IN_FLIGHT_MS: i64 = 2_000;

fn notice(text: String, warning: bool) -> Effect {
    Effect::Notice { text, warning }
}

fn retry_after(e: &ApiError) -> Option<Duration> {
    match e {
        ApiError::Status { retry_after, .. } => *retry_after,
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RETRY: Duration = Duration::from_secs(30);

    fn rules(prior: Option<(i64, &str)>) -> (Rules, Vec<Effect>) {
        let backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(2), 7);
        Rules::start(
            backoff,
            RETRY,
            prior.map(|(at, rv)| DurablePoint {
                at,
                rv: rv.to_owned(),
                listed_at: None,
            }),
        )
    }

    fn status(code: u16) -> ApiError {
        ApiError::Status {
            code,
            reason: "Reason".into(),
            message: "message".into(),
            retry_after: None,
            continue_token: None,
            causes: Vec::new(),
        }
    }

    fn gaps(d: &Decision) -> Vec<(i64, Option<String>, String)> {
        d.effects
            .iter()
            .filter_map(|e| match e {
                Effect::Gap {
                    from,
                    from_rv,
                    reason,
                } => Some((*from, from_rv.clone(), reason.clone())),
                _ => None,
            })
            .collect()
    }

    fn coverage(d: &Decision) -> Vec<bool> {
        d.effects
            .iter()
            .filter_map(|e| match e {
                Effect::Coverage { available, .. } => Some(*available),
                _ => None,
            })
            .collect()
    }

    fn unreadable() -> WatchEnd {
        WatchEnd::Unreadable("event too large".into())
    }

    fn retry(healthy: bool) -> WatchEnd {
        WatchEnd::Retry {
            why: "watch closed".into(),
            retry_after: None,
            healthy,
        }
    }

    #[test]
    fn a_fresh_stream_lists_first_and_writes_nothing() {
        let (r, effects) = rules(None);
        assert!(effects.is_empty());
        assert_eq!(r.next(), Step::List);
    }

    #[test]
    fn the_downtime_since_an_earlier_run_is_a_gap_closed_by_the_first_baseline() {
        let (mut r, effects) = rules(Some((1_000, "41")));
        assert_eq!(
            effects,
            vec![Effect::Gap {
                from: 1_000 - IN_FLIGHT_MS,
                from_rv: Some("41".into()),
                reason: "recorder not running".into()
            }]
        );
        assert_eq!(r.next(), Step::List);
        let d = r.listed(5_000, "77", 3);
        assert_eq!(d.next, Next::Go);
        assert_eq!(r.next(), Step::Watch("77".into()));
        assert_eq!(r.durable.as_ref(), Some(&(5_000, "77".to_owned())));
        // The gap is closed: a 403 now opens a new one.
        let d = r.list_failed(&status(403), "403 Forbidden");
        assert_eq!(gaps(&d).len(), 1);
    }

    #[test]
    fn every_gap_starts_what_may_be_in_flight_early_but_never_before_the_last_list() {
        let start = |listed_at| {
            let backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(30), 1);
            let (_, effects) = Rules::start(
                backoff,
                RETRY,
                Some(DurablePoint {
                    at: 10_000,
                    rv: "41".into(),
                    listed_at,
                }),
            );
            match effects.as_slice() {
                [Effect::Gap { from, .. }] => *from,
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(start(None), 10_000 - IN_FLIGHT_MS);
        assert_eq!(start(Some(1_000)), 10_000 - IN_FLIGHT_MS);
        assert_eq!(start(Some(9_500)), 9_500);
    }

    #[test]
    fn a_410_is_a_gap_from_the_last_durable_point_then_a_relist() {
        let (mut r, _) = rules(None);
        r.listed(1_000, "10", 0);
        r.progress(5_000, "12");
        let d = r.watch_ended(WatchEnd::Expired("410 Expired".into()), "10", 9_000);
        assert_eq!(
            gaps(&d),
            vec![(
                5_000 - IN_FLIGHT_MS,
                Some("12".into()),
                "410 Expired".into()
            )]
        );
        assert_eq!(d.next, Next::Go, "the first 410 relists at once");
        assert_eq!(r.next(), Step::List);
    }

    #[test]
    fn a_freeze_is_a_gap_from_the_last_durable_point_then_a_relist_at_once() {
        let (mut r, _) = rules(None);
        r.listed(1_000, "10", 0);
        r.progress(5_000, "12");
        assert_eq!(r.durable_at(), Some(5_000));
        let d = r.watch_ended(
            WatchEnd::Frozen {
                from: 5_100,
                to: 45_100,
            },
            "10",
            45_150,
        );
        assert_eq!(
            gaps(&d),
            vec![(
                5_000 - IN_FLIGHT_MS,
                Some("12".into()),
                "recorder frozen for 40s (stopped, suspended or starved)".into()
            )]
        );
        assert_eq!(d.next, Next::Go);
        assert_eq!(r.next(), Step::List);
        // Not the server's fault: a 410 after the relist is a first one.
        r.listed(43_000, "20", 0);
        let d = r.watch_ended(WatchEnd::Expired("410".into()), "20", 44_000);
        assert_eq!(d.next, Next::Go);
    }

    #[test]
    fn a_silent_watch_is_a_gap_from_its_last_word_even_over_heartbeats() {
        let (mut r, _) = rules(None);
        r.listed(1_000, "10", 0);
        r.progress(5_000, "12");
        // Heartbeats went on while the connection was dead.
        r.progress(30_000, "12");
        r.progress(60_000, "12");
        let d = r.watch_ended(
            WatchEnd::Silent {
                since: 5_500,
                limit: Duration::from_secs(120),
            },
            "12",
            125_500,
        );
        assert_eq!(
            gaps(&d),
            vec![(
                5_500 - IN_FLIGHT_MS,
                Some("12".into()),
                "no word from the server for 2m (a connection that died without closing)".into()
            )]
        );
        assert_eq!(d.next, Next::Go);
        assert_eq!(r.next(), Step::List);
        // Silent before anything was durable: the gap starts where the
        // durable point is, if that is earlier than the last word, and
        // never before the list (its baseline holds all before it).
        let (mut r, _) = rules(None);
        r.listed(1_000, "10", 0);
        let d = r.watch_ended(
            WatchEnd::Silent {
                since: 5_000,
                limit: Duration::from_secs(7),
            },
            "10",
            12_000,
        );
        assert_eq!(gaps(&d)[0].0, 1_000);
    }

    #[test]
    fn a_watch_back_late_is_a_gap_from_the_last_word_with_what_kept_it_away() {
        let (mut r, _) = rules(None);
        r.listed(1_000, "10", 0);
        r.progress(5_000, "12");
        let d = r.watch_ended(
            WatchEnd::Late {
                since: 5_400,
                away: Duration::from_secs(12),
                why: Some("connection refused".into()),
            },
            "12",
            17_400,
        );
        assert_eq!(
            gaps(&d),
            vec![(
                5_000 - IN_FLIGHT_MS,
                Some("12".into()),
                "not connected for 12s: connection refused".into()
            )]
        );
        assert_eq!(r.next(), Step::List);
    }

    #[test]
    fn a_stream_behind_is_a_gap_that_says_burst_or_replay() {
        for (replayed, reason) in [
            (
                false,
                "the recorder fell 3s behind the server (a burst it could not keep up with)",
            ),
            (
                true,
                "the server replayed changes 3s old when the watch reopened",
            ),
        ] {
            let (mut r, _) = rules(None);
            r.listed(1_000, "10", 0);
            r.progress(9_000, "12");
            let d = r.watch_ended(
                WatchEnd::Behind {
                    since: 8_000,
                    by: Duration::from_millis(3_200),
                    replayed,
                },
                "12",
                12_000,
            );
            // From the earliest the late event was written, less what was
            // in flight, as every gap.
            assert_eq!(
                gaps(&d),
                vec![(8_000 - IN_FLIGHT_MS, Some("12".into()), reason.into())]
            );
            assert_eq!(r.next(), Step::List);
        }
    }

    #[test]
    fn a_410_again_right_after_a_relist_waits_with_backoff() {
        let (mut r, _) = rules(None);
        r.listed(1_000, "10", 0);
        r.watch_ended(WatchEnd::Expired("410".into()), "10", 2_000);
        r.listed(3_000, "11", 0);
        let d = r.watch_ended(WatchEnd::Expired("410".into()), "11", 4_000);
        assert!(matches!(d.next, Next::Pause(p) if p > Duration::ZERO));
        assert!(
            d.effects
                .contains(&Effect::Phase(Phase::Retrying("410 after relist".into())))
        );
        // A healthy watch in between makes the next 410 a first one again.
        r.listed(5_000, "12", 0);
        r.watch_ended(retry(true), "12", 6_000);
        let d = r.watch_ended(WatchEnd::Expired("410".into()), "12", 7_000);
        assert_eq!(d.next, Next::Go);
    }

    #[test]
    fn a_410_with_no_durable_point_starts_its_gap_now_less_what_was_in_flight() {
        let (mut r, _) = rules(None);
        let d = r.watch_ended(WatchEnd::Expired("410".into()), "0", 4_242);
        assert_eq!(gaps(&d), vec![(4_242 - IN_FLIGHT_MS, None, "410".into())]);
    }

    #[test]
    fn three_unreadable_watches_at_one_point_become_a_gap_and_a_relist() {
        let (mut r, _) = rules(None);
        r.listed(1_000, "10", 0);
        for strike in 1..UNREADABLE_STRIKES {
            let d = r.watch_ended(unreadable(), "10", 2_000);
            assert!(gaps(&d).is_empty(), "strike {strike} retries");
            assert!(matches!(d.next, Next::Pause(_)));
            assert_eq!(r.next(), Step::Watch("10".into()));
        }
        let d = r.watch_ended(unreadable(), "10", 3_000);
        let g = gaps(&d);
        assert_eq!(g.len(), 1);
        assert_eq!(
            g[0].2,
            "the watch cannot be read past resourceVersion 10: event too large"
        );
        assert_eq!(r.next(), Step::List);
    }

    #[test]
    fn progress_between_unreadable_watches_starts_the_count_again() {
        let (mut r, _) = rules(None);
        r.listed(1_000, "10", 0);
        r.watch_ended(unreadable(), "10", 2_000);
        r.watch_ended(unreadable(), "10", 2_000);
        r.progress(2_500, "11");
        for _ in 1..UNREADABLE_STRIKES {
            let d = r.watch_ended(unreadable(), "11", 3_000);
            assert!(gaps(&d).is_empty());
        }
        assert_eq!(r.next(), Step::Watch("11".into()));
    }

    #[test]
    fn unavailable_is_one_gap_and_one_coverage_record_however_long_it_lasts() {
        let (mut r, _) = rules(None);
        r.listed(1_000, "10", 0);
        let d = r.watch_ended(
            WatchEnd::Unavailable {
                short: "403 Forbidden".into(),
                full: "403 Forbidden: no".into(),
            },
            "10",
            2_000,
        );
        assert_eq!(
            gaps(&d),
            vec![(1_000, Some("10".into()), "403 Forbidden".into())]
        );
        assert_eq!(coverage(&d), vec![false]);
        assert_eq!(d.next, Next::Pause(RETRY));
        assert_eq!(r.next(), Step::List);
        for _ in 0..3 {
            let d = r.list_failed(&status(403), "403 Forbidden");
            assert!(gaps(&d).is_empty() && coverage(&d).is_empty());
            assert_eq!(
                d.effects,
                vec![Effect::Phase(Phase::Unavailable("403 Forbidden".into()))]
            );
            assert_eq!(d.next, Next::Pause(RETRY));
        }
        let d = r.listed(9_000, "20", 1);
        assert_eq!(coverage(&d), vec![true]);
        assert!(d.effects.contains(&Effect::Notice {
            text: "available again (was: 403 Forbidden)".into(),
            warning: false
        }));
    }

    #[test]
    fn a_stream_never_covered_is_unavailable_without_a_gap() {
        let (mut r, _) = rules(None);
        let d = r.list_failed(&status(404), "404 NotFound");
        assert!(gaps(&d).is_empty());
        assert_eq!(coverage(&d), vec![false]);
    }

    #[test]
    fn an_open_gap_is_not_written_twice_when_the_stream_becomes_unavailable() {
        let (mut r, _) = rules(Some((1_000, "5")));
        let d = r.list_failed(&status(403), "403 Forbidden");
        assert!(gaps(&d).is_empty());
        assert_eq!(coverage(&d), vec![false]);
    }

    #[test]
    fn other_list_failures_back_off_and_honour_retry_after() {
        let (mut r, _) = rules(None);
        let mut e = status(429);
        if let ApiError::Status { retry_after, .. } = &mut e {
            *retry_after = Some(Duration::from_secs(9));
        }
        let d = r.list_failed(&e, "429 TooManyRequests");
        assert_eq!(d.next, Next::Pause(Duration::from_secs(9)));
        assert!(gaps(&d).is_empty() && coverage(&d).is_empty());
        assert_eq!(r.next(), Step::List);
    }

    #[test]
    fn interrupted_watches_resume_from_the_durable_point_with_growing_delays() {
        let (mut r, _) = rules(None);
        r.listed(1_000, "10", 0);
        r.progress(1_500, "13");
        let mut delays = Vec::new();
        for _ in 0..6 {
            let d = r.watch_ended(retry(false), "13", 2_000);
            let Next::Pause(p) = d.next else {
                panic!("a retry pauses")
            };
            delays.push(p);
            assert!(d.effects.iter().any(|e| matches!(e,
                Effect::Notice { text, warning: true } if text.starts_with("watch interrupted (watch closed); resuming from 13"))));
            assert_eq!(r.next(), Step::Watch("13".into()));
        }
        assert!(delays[5] > delays[0], "{delays:?}");
        assert!(delays.iter().all(|d| *d <= Duration::from_secs(2)));
        // A healthy watch that closes (the server's timeout) says nothing and
        // starts from the shortest delay.
        let d = r.watch_ended(retry(true), "13", 3_000);
        assert!(!d.effects.iter().any(|e| matches!(e, Effect::Notice { .. })));
        assert!(matches!(d.next, Next::Pause(p) if p <= Duration::from_millis(120)));
    }

    #[test]
    fn stopping_while_watching_checkpoints_and_stopping_unconnected_does_not() {
        let (mut r, _) = rules(None);
        r.listed(1_000, "10", 0);
        r.progress(2_000, "12");
        let d = r.clone().watch_ended(WatchEnd::Stop, "10", 3_000);
        assert_eq!(
            d.effects,
            vec![Effect::StopCheckpoint {
                at: 3_000,
                rv: "12".into()
            }]
        );
        assert_eq!(d.next, Next::Finish);
        let d = r.watch_ended(WatchEnd::StopUnconfirmed, "10", 3_000);
        assert!(d.effects.is_empty());
        assert_eq!(d.next, Next::Finish);
        // Stopped before anything was durable: nothing to claim.
        let (mut fresh, _) = rules(None);
        let d = fresh.watch_ended(WatchEnd::Stop, "0", 1);
        assert!(d.effects.is_empty());
    }

    #[test]
    fn gaps_never_carry_an_empty_resource_version() {
        let (mut r, _) = rules(Some((1_000, "")));
        let d = r.watch_ended(WatchEnd::Expired("410".into()), "", 2_000);
        assert_eq!(gaps(&d), vec![(1_000 - IN_FLIGHT_MS, None, "410".into())]);
    }
}
