//! One recorder stream: list, baseline, watch from exactly the list's
//! resourceVersion, and everything that can go wrong in between (docs/architecture.md §2).
//!
//! ```text
//!          ┌──────────── 410 (at start or in the stream): GAP ─────────────┐
//!          v                                                                │
//!   LIST pages ──> BASELINE ──> WATCH(rv) ──events/bookmarks──> checkpoint ─┤
//!      │                          │  ^                                      │
//!      │ 403/404: unavailable     │  └── closed / dropped / 5xx / bad line: │
//!      v         (retry slowly)   │      reconnect from the same rv         │
//!   UNAVAILABLE ──────────────────┘      with jittered capped backoff ──────┘
//! ```

use super::backoff::Backoff;
use super::rules::{Effect, Next, Notice, Phase, Rules, Step, WatchEnd};
use super::secrets::redact_secret;
use super::wire::{self, WireEvent};
use crate::cluster::ClusterAccess;
use crate::cluster::api::{self, ApiError};
use crate::journal::StreamId;
use crate::journal::records::{CheckpointReason, CoverageInfo, GapInfo};
use crate::journal::writer::{Op, WriterSender};
use crate::model::{StreamSpec, WatchType};
use crate::time::Millis;
use crate::time::format_duration;
use futures::FutureExt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// Tunables of a stream; the defaults suit a real cluster.
#[derive(Debug, Clone)]
pub struct StreamOptions {
    pub bookmarks: bool,
    pub page_size: u32,
    /// Asked of the server as `timeoutSeconds`; the watch is resumed after it.
    pub watch_timeout_secs: u32,
    pub backoff_initial: Duration,
    pub backoff_max: Duration,
    /// How often a forbidden or missing resource is tried again.
    pub unavailable_retry: Duration,
    /// A quiet open watch writes a checkpoint this often.
    pub heartbeat: Duration,
    /// How many times one list restarts after an expired continue token.
    pub list_restarts: u32,
    /// Say every watch (re)start and bookmark, not only what needs attention.
    pub verbose: bool,
    /// How long without a beat of the recorder's pulse is a freeze (ms).
    pub freeze_limit_ms: i64,
    /// How long a stream may go without a word from the server and still
    /// resume its watch (ms): what the watch replays is stamped up to this
    /// late. Longer, it is a gap and a relist.
    pub late_limit_ms: i64,
}

impl Default for StreamOptions {
    fn default() -> Self {
        StreamOptions {
            bookmarks: true,
            page_size: 500,
            watch_timeout_secs: 290,
            backoff_initial: Duration::from_millis(200),
            backoff_max: Duration::from_secs(30),
            unavailable_retry: Duration::from_secs(30),
            heartbeat: Duration::from_millis(crate::journal::records::HEARTBEAT_MS as u64),
            list_restarts: 5,
            verbose: false,
            freeze_limit_ms: super::pulse::FREEZE_LIMIT_MS,
            late_limit_ms: LATE_LIMIT_MS,
        }
    }
}

/// How long a stream may be away from the server (reconnecting with
/// backoff, throttled, the server restarting) and still resume its watch
/// from where it was (ms): what the server replays then is stamped at most
/// this late. Away longer, it is a gap and a relist (docs/consistency.md,
/// "Gaps"). Long enough for a few quick retries and a server's
/// restart, short enough that a relist is rare: relisting on every
/// throttled request would load a server that asked for less.
pub const LATE_LIMIT_MS: i64 = 10_000;

/// How often kube-apiserver's watch cache sends a bookmark to a watch that
/// asked for them: about once a minute, but only once its cache has moved
/// past the resourceVersion the watch started from, which a quiet resource
/// may not do for ten minutes (docs/consistency.md, "A silent watch").
pub const BOOKMARK_INTERVAL: Duration = Duration::from_secs(60);
/// How many bookmark intervals without a word make a watch that has had a
/// bookmark silent.
pub const SILENT_BOOKMARK_INTERVALS: u32 = 2;

/// How long a watch may go without a word (an event, a bookmark, or its
/// end) before it is taken for a connection that died without closing.
/// The server ends every watch after `timeout` (`timeoutSeconds`), so
/// silence past it by a tenth (at least 2 s) is never a quiet watch; a
/// watch that has had a bookmark hears from the server every
/// [`BOOKMARK_INTERVAL`] until it ends, so [`SILENT_BOOKMARK_INTERVALS`] of
/// them is enough. Only the watch's own bookmarks count: the next watch
/// starts from the last one's resourceVersion, and hears nothing until the
/// server's cache moves past it.
pub fn silence_limit(timeout: Duration, bookmarked: bool) -> Duration {
    let closed_by = timeout + (timeout / 10).max(Duration::from_secs(2));
    if bookmarked {
        closed_by.min(BOOKMARK_INTERVAL * SILENT_BOOKMARK_INTERVALS)
    } else {
        closed_by
    }
}

/// Live counters of one stream.
#[derive(Debug, Clone)]
pub struct StreamStatus {
    pub name: String,
    pub phase: Phase,
    /// Live events handed to the journal (redeliveries included; the journal
    /// drops those).
    pub events: u64,
    pub last_rv: String,
    pub gaps: u64,
    /// Why the stream could not be read when it last tried (403, 404), until
    /// it can again: the phase alone ends as `Stopped`.
    pub unavailable: Option<String>,
    /// A list of this run completed.
    pub listed: bool,
    /// Why the server refused it before any list of this run (the whole
    /// error, which names the user, verb and resource).
    pub refused: Option<String>,
    /// Up to when the stream's history is settled (ms): its last durable
    /// point, or the server's last word to it if that is earlier, less what
    /// may have been on its way ([`super::rules::IN_FLIGHT_MS`]). A gap
    /// written later (a freeze found, a watch found silent) never starts
    /// before it, so retention never cuts after it.
    pub settled: Option<i64>,
}

/// Everything one stream task needs.
pub struct Stream {
    pub id: StreamId,
    pub spec: StreamSpec,
    pub access: ClusterAccess,
    pub writer: WriterSender,
    pub opts: StreamOptions,
    pub status: Arc<Mutex<StreamStatus>>,
    pub notices: tokio::sync::mpsc::UnboundedSender<Notice>,
    /// The stream's last durable point from an earlier recorder run: the
    /// downtime since then is a gap.
    pub prior: Option<crate::journal::DurablePoint>,
    pub stop: watch::Receiver<bool>,
    /// The recorder's pulse: whether it was frozen ([`super::pulse`]).
    pub pulse: Arc<super::pulse::Pulse>,
    /// What the times the server wrote into the stream's events say of
    /// how late it reads them ([`Weighing`]).
    pub weighing: Weighing,
    /// When the server last said something to this stream (ms): the end of
    /// a list, the answer to a watch, each line of it and its end.
    pub last_word: Option<i64>,
    /// Why the last watch or list failed, while none has succeeded since.
    pub last_failure: Option<String>,
    /// The hint for the current failure was given ([`Stream::hint_for`]).
    pub hinted: bool,
}

/// How a stream task ended.
#[derive(Debug)]
pub enum StreamEnd {
    Stopped,
    /// The journal writer is gone; nothing more can be recorded.
    WriterFailed(crate::journal::JournalError),
}

/// Where an open watch stands.
struct WatchCursor {
    /// The resourceVersion of the last event or bookmark journaled.
    rv: String,
    /// The watch delivered an event or bookmark.
    got_data: bool,
    /// Something was journaled since the last heartbeat tick.
    wrote_since_tick: bool,
    /// The last line was a bookmark.
    bookmark: bool,
}

enum ListEnd {
    /// Listed at `rv`, the state when the list started (`at`, ms).
    Done {
        rv: String,
        items: u64,
        at: i64,
    },
    Stop,
    Failed(ApiError),
}

type Result<T> = std::result::Result<T, crate::journal::JournalError>;

impl Stream {
    fn name(&self) -> String {
        self.spec.name()
    }

    fn set_phase(&self, phase: Phase) {
        if let Ok(mut s) = self.status.lock() {
            match &phase {
                Phase::Unavailable(why) => s.unavailable = Some(why.clone()),
                Phase::Watching => {
                    s.unavailable = None;
                    s.listed = true;
                }
                _ => {}
            }
            s.phase = phase;
        }
    }

    fn update(&self, f: impl FnOnce(&mut StreamStatus)) {
        if let Ok(mut s) = self.status.lock() {
            f(&mut s);
        }
    }

    fn notice(&self, text: String, warning: bool) {
        let _ = self.notices.send(Notice {
            stream: self.name(),
            text,
            warning,
        });
    }

    fn stopped(&self) -> bool {
        *self.stop.borrow()
    }

    /// Sleeps unless asked to stop first; true when stopping.
    async fn pause(&mut self, d: Duration) -> bool {
        if self.stopped() {
            return true;
        }
        tokio::select! {
            _ = tokio::time::sleep(d) => self.stopped(),
            _ = self.stop.changed() => true,
        }
    }

    /// The freeze of the recorder since the stream was last durable, if
    /// any: what the watch delivers now may have happened during it.
    fn frozen(&self, rules: &Rules) -> Option<WatchEnd> {
        let (from, to) = self.pulse.frozen_since(rules.durable_at()?)?;
        Some(WatchEnd::Frozen { from, to })
    }

    /// The time to stamp what the stream has just read, or the freeze it
    /// must answer for instead. The clock is read before the pulse: a
    /// freeze between the two is still found (it ends after the stream's
    /// last durable point), whereas the other way round a freeze between
    /// the look and the clock would stamp after the thaw what was read
    /// before it, and the next look, durable past the freeze, would miss it
    /// (a heartbeat claiming the frozen time: seed 1056 under load).
    fn stamp(&self, rules: &Rules) -> std::result::Result<i64, WatchEnd> {
        let at = Millis::now().as_ms();
        match self.frozen(rules) {
            Some(frozen) => Err(frozen),
            None => Ok(at),
        }
    }

    /// Publishes up to when the stream's history is settled
    /// ([`StreamStatus::settled`]).
    fn settle(&self, rules: &Rules) {
        let settled = match (rules.durable_at(), self.last_word) {
            (Some(d), Some(w)) => Some(d.min(w)),
            (d, _) => d,
        }
        .map(|at| at - super::rules::IN_FLIGHT_MS);
        self.update(|s| s.settled = settled);
    }

    /// Says what to do about a failure the user must fix, once until the
    /// stream reads again: an expired login behind a credential plugin.
    fn hint_for(&mut self, e: &ApiError) {
        if !matches!(e, ApiError::CredentialPlugin { .. }) || self.hinted {
            return;
        }
        self.hinted = true;
        let (user, command) = self
            .access
            .target
            .credential_plugin()
            .unwrap_or_else(|| ("?".into(), "the plugin".into()));
        self.notice(
            format!(
                "{e}\nhint: the credential plugin of user {user} (`{command}`) cannot give a token: \
                 log in again (an expired SSO session, say); the recorder keeps retrying, resumes \
                 by itself, and records the time it could not watch as a gap"
            ),
            true,
        );
    }

    /// Leaves the connections of the client so far for new ones: after a
    /// request or watch that got no answer, the idle connections may be as
    /// dead as its own.
    fn fresh_connections(&mut self) {
        match self.access.fresh() {
            Ok(access) => self.access = access,
            Err(e) => self.notice(format!("cannot build a new client: {e}"), true),
        }
    }

    async fn send(&self, op: Op) -> Result<()> {
        self.writer.send(op).await
    }

    /// Runs until stopped or the writer fails.
    pub async fn run(mut self) -> StreamEnd {
        match self.run_inner().await {
            Ok(()) => {
                self.set_phase(Phase::Stopped);
                StreamEnd::Stopped
            }
            Err(e) => {
                self.set_phase(Phase::Stopped);
                StreamEnd::WriterFailed(e)
            }
        }
    }

    /// Carries out the rules' decisions (see [`super::rules`]): the only place a
    /// stream lists, watches, writes gaps and coverage, and waits.
    async fn run_inner(&mut self) -> Result<()> {
        let seed =
            Millis::now().as_ms() as u64 ^ (self.id as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let backoff = Backoff::new(self.opts.backoff_initial, self.opts.backoff_max, seed);
        let (mut rules, effects) =
            Rules::start(backoff, self.opts.unavailable_retry, self.prior.clone());
        self.carry_out(effects).await?;
        loop {
            if self.stopped() {
                return Ok(());
            }
            let decision = match rules.next() {
                Step::List => {
                    self.set_phase(Phase::Listing);
                    match self.list().await? {
                        ListEnd::Stop => return Ok(()),
                        ListEnd::Done { rv, items, at } => {
                            self.last_word = Some(Millis::now().as_ms());
                            self.last_failure = None;
                            self.hinted = false;
                            rules.listed(at, &rv, items)
                        }
                        ListEnd::Failed(e) => {
                            self.hint_for(&e);
                            if matches!(e, ApiError::Timeout(_)) {
                                self.fresh_connections();
                            }
                            self.last_failure = Some(short(&e));
                            rules.list_failed(&e, &short(&e))
                        }
                    }
                }
                Step::Watch(rv) => {
                    let end = self.watch(&rv, &mut rules).await?;
                    if matches!(end, WatchEnd::Silent { .. } | WatchEnd::Unanswered(_)) {
                        self.fresh_connections();
                    }
                    match &end {
                        WatchEnd::Retry { why, .. } | WatchEnd::Unanswered(why) => {
                            self.last_failure = Some(why.clone());
                        }
                        _ => {}
                    }
                    // Stopped right after a freeze: complete only up to
                    // before it, so no stop checkpoint claims more.
                    let (end, now) = match end {
                        WatchEnd::Stop => match self.stamp(&rules) {
                            Ok(now) => (WatchEnd::Stop, now),
                            Err(_) => (WatchEnd::StopUnconfirmed, Millis::now().as_ms()),
                        },
                        end => (end, Millis::now().as_ms()),
                    };
                    rules.watch_ended(end, &rv, now)
                }
            };
            self.carry_out(decision.effects).await?;
            match decision.next {
                Next::Go => {}
                Next::Pause(d) => {
                    if self.pause(d).await {
                        return Ok(());
                    }
                }
                Next::Finish => return Ok(()),
            }
        }
    }

    async fn carry_out(&self, effects: Vec<Effect>) -> Result<()> {
        for effect in effects {
            match effect {
                Effect::Gap {
                    from,
                    from_rv,
                    reason,
                } => {
                    self.send(Op::Gap {
                        stream: self.id,
                        at: Millis::now().as_ms(),
                        info: GapInfo {
                            from,
                            from_rv,
                            reason,
                        },
                    })
                    .await?;
                    self.update(|s| s.gaps += 1);
                }
                Effect::Coverage { available, reason } => {
                    self.send(Op::Coverage {
                        stream: self.id,
                        at: Millis::now().as_ms(),
                        info: CoverageInfo { available, reason },
                    })
                    .await?;
                }
                Effect::StopCheckpoint { at, rv } => {
                    self.send(Op::Checkpoint {
                        stream: self.id,
                        at,
                        rv,
                        reason: CheckpointReason::Stop,
                    })
                    .await?;
                }
                Effect::Notice { text, warning } => self.notice(text, warning),
                Effect::Phase(phase) => self.set_phase(phase),
                Effect::Refused { reason } => self.update(|s| s.refused = Some(reason)),
            }
        }
        Ok(())
    }

    /// Lists every page and writes the baseline.
    async fn list(&mut self) -> Result<ListEnd> {
        let ns = self.spec.namespace.clone();
        let sel = self.spec.selector.clone();
        let redact = self.spec.resource.is_secret();
        let mut restarts = 0;
        'restart: loop {
            // When the first page came: the list's snapshot (every page is
            // of the first one's resourceVersion) was taken before then,
            // at a moment the recorder cannot see. Stamped when the request
            // left, a slow answer would show versions written after that
            // moment as the state before them (the soak under load: a relist
            // stamped 1.7 s before a version it held was written).
            let mut first_page_at: Option<i64> = None;
            let mut continue_token: Option<String> = None;
            let mut items = 0u64;
            let mut list_rv: Option<String> = None;
            loop {
                if self.stopped() {
                    if items > 0 {
                        self.send(Op::BaselineAbort { stream: self.id }).await?;
                    }
                    return Ok(ListEnd::Stop);
                }
                let page = api::list_page(
                    &self.access,
                    &self.spec.resource,
                    ns.as_deref(),
                    sel.as_deref(),
                    self.opts.page_size,
                    continue_token.as_deref(),
                )
                .await;
                let page = match page {
                    Ok(p) => p,
                    Err(e) => {
                        if items > 0 {
                            self.send(Op::BaselineAbort { stream: self.id }).await?;
                        }
                        // An expired continue token restarts the list from the top.
                        if e.is_expired()
                            && continue_token.is_some()
                            && restarts < self.opts.list_restarts
                        {
                            restarts += 1;
                            self.notice(
                                "list continue token expired; listing again from the start".into(),
                                true,
                            );
                            continue 'restart;
                        }
                        return Ok(ListEnd::Failed(e));
                    }
                };
                let at = *first_page_at.get_or_insert_with(|| Millis::now().as_ms());
                let rv = list_rv
                    .get_or_insert_with(|| page.resource_version.clone())
                    .clone();
                if rv.is_empty() {
                    if items > 0 {
                        self.send(Op::BaselineAbort { stream: self.id }).await?;
                    }
                    return Ok(ListEnd::Failed(ApiError::Decode(
                        "list without resourceVersion".into(),
                    )));
                }
                for raw in page.items() {
                    let meta = match wire::object_meta(raw) {
                        Ok(m) => m,
                        Err(e) => {
                            // A baseline without it would say the object is gone:
                            // no baseline at all is the truth.
                            if items > 0 {
                                self.send(Op::BaselineAbort { stream: self.id }).await?;
                            }
                            return Ok(ListEnd::Failed(ApiError::Decode(format!(
                                "an unreadable list item: {e}"
                            ))));
                        }
                    };
                    let body = if redact {
                        redact_secret(raw)
                    } else {
                        raw.to_vec()
                    };
                    self.send(Op::BaselineItem {
                        stream: self.id,
                        at,
                        meta,
                        body,
                    })
                    .await?;
                    items += 1;
                }
                match page.continue_token {
                    Some(c) => continue_token = Some(c),
                    None => {
                        self.send(Op::BaselineEnd {
                            stream: self.id,
                            at,
                            list_rv: rv.clone(),
                            items,
                        })
                        .await?;
                        self.update(|s| s.last_rv = rv.clone());
                        return Ok(ListEnd::Done { rv, items, at });
                    }
                }
            }
        }
    }

    /// Watches from exactly `rv` until something ends the watch.
    async fn watch(&mut self, rv: &str, rules: &mut Rules) -> Result<WatchEnd> {
        let opened = api::open_watch(
            &self.access,
            &self.spec.resource,
            self.spec.namespace.as_deref(),
            self.spec.selector.as_deref(),
            rv,
            self.opts.bookmarks,
            self.opts.watch_timeout_secs,
        );
        // A connection that died without closing (a pooled one, say) never
        // answers: the server answers a watch at once (or refuses it), so
        // the shorter bound of a silent watch is plenty.
        let answer_within = silence_limit(
            Duration::from_secs(u64::from(self.opts.watch_timeout_secs)),
            true,
        );
        let mut body = tokio::select! {
            r = tokio::time::timeout(answer_within, opened) => match r {
                Ok(Ok(b)) => b,
                Ok(Err(e)) => {
                    self.hint_for(&e);
                    return Ok(classify_watch_error(e, false));
                }
                Err(_) => {
                    return Ok(WatchEnd::Unanswered(format!(
                        "no answer to the watch in {}",
                        format_duration(answer_within)
                    )));
                }
            },
            _ = self.stop.changed() => return Ok(WatchEnd::StopUnconfirmed),
        };
        let answered = match self.stamp(rules) {
            Ok(at) => at,
            Err(frozen) => return Ok(frozen),
        };
        // Back after a while without a word: what the watch replays now
        // happened at any time since, and would be stamped late. The server
        // replays at once; if its first moments bring no event, nothing
        // was missed, and the watch goes on without a gap.
        let mut replay =
            late_replay(self.last_word, answered, self.opts.late_limit_ms).map(|since| {
                WatchEnd::Late {
                    since,
                    away: Duration::from_millis((answered - since) as u64),
                    why: self.last_failure.clone(),
                }
            });
        let replay_until = answered + super::rules::IN_FLIGHT_MS;
        // What the watch brings was written after the stream's rv: it is
        // caught up as of the answer.
        self.weighing.read(answered, false);
        self.last_word = Some(answered);
        self.last_failure = None;
        self.hinted = false;
        self.set_phase(Phase::Watching);
        if self.opts.verbose {
            self.notice(format!("watching from resourceVersion {rv}"), false);
        }
        let started = Instant::now();
        let mut cursor = WatchCursor {
            rv: rv.to_string(),
            got_data: false,
            wrote_since_tick: false,
            bookmark: false,
        };
        let mut heartbeat = tokio::time::interval(self.opts.heartbeat);
        heartbeat.tick().await;
        // A connection can die without closing (a NAT or proxy that stopped
        // forwarding, a peer gone from the network): the watch then goes
        // silent, and heartbeats would go on claiming time nobody watched.
        // The last word from the server (its answer to the watch, then
        // every line) is the last moment the watch is known alive.
        let timeout = Duration::from_secs(u64::from(self.opts.watch_timeout_secs));
        let mut last_line = tokio::time::Instant::now();
        // This watch has had a bookmark: the server sends one a minute from
        // then on ([`silence_limit`]).
        let mut bookmarked = false;
        loop {
            let silence_limit = silence_limit(timeout, bookmarked);
            // Lines already received are handled without a trip through select!
            // (the fast path under load); the stop flag is still honoured.
            // Stopped while what is replayed may still be on its way:
            // nothing is claimed past the last durable point.
            let stop = if replay.is_some() {
                WatchEnd::StopUnconfirmed
            } else {
                WatchEnd::Stop
            };
            let ready = if self.stopped() {
                return Ok(stop);
            } else {
                // Polled once: dropped while pending, it has taken nothing.
                body.next_line().now_or_never()
            };
            // A line that was already waiting, in a frame read or in the
            // connection: the stream may be behind the server. One that
            // came within a millisecond of asking counts as waiting too (the
            // connection's task may not have handed over what it holds).
            let asked = Instant::now();
            let mut waited = ready.is_some();
            let line = if let Some(line) = ready {
                line
            } else {
                let line = tokio::select! {
                    line = body.next_line() => line,
                    _ = tokio::time::sleep_until(last_line + silence_limit) => {
                        // Thawed after a freeze, the freeze is what to answer for.
                        if let Some(frozen) = self.frozen(rules) {
                            return Ok(frozen);
                        }
                        return Ok(WatchEnd::Silent {
                            since: self.last_word.unwrap_or(answered),
                            limit: silence_limit,
                        });
                    }
                    _ = heartbeat.tick() => {
                        let at = match self.stamp(rules) {
                            Ok(at) => at,
                            Err(frozen) => return Ok(frozen),
                        };
                        if at > replay_until {
                            replay = None;
                        }
                        if !cursor.wrote_since_tick && replay.is_none() {
                            self.send(Op::Checkpoint {
                                stream: self.id,
                                at,
                                rv: cursor.rv.clone(),
                                reason: CheckpointReason::Heartbeat,
                            })
                            .await?;
                            rules.progress(at, &cursor.rv);
                        }
                        cursor.wrote_since_tick = false;
                        self.settle(rules);
                        continue;
                    }
                    _ = self.stop.changed() => return Ok(stop),
                };
                waited = asked.elapsed() < CAUGHT_UP_WAIT;
                line
            };
            if line.is_ok() {
                last_line = tokio::time::Instant::now();
                self.last_word = Some(Millis::now().as_ms());
            }
            let healthy = cursor.got_data || started.elapsed() >= Duration::from_secs(10);
            let line = match line {
                Ok(Some(line)) => line,
                Ok(None) => {
                    return Ok(WatchEnd::Retry {
                        why: "watch closed".into(),
                        retry_after: None,
                        healthy: true,
                    });
                }
                Err(ApiError::Decode(why)) => return Ok(WatchEnd::Unreadable(why)),
                Err(e) => {
                    return Ok(WatchEnd::Retry {
                        why: short(&e),
                        retry_after: None,
                        healthy,
                    });
                }
            };
            let at = match self.stamp(rules) {
                Ok(at) => at,
                Err(frozen) => return Ok(frozen),
            };
            if at > replay_until {
                replay = None;
            }
            if let Some(late) = replay.take() {
                if matches!(wire::decode_line(&line), Ok(WireEvent::Object { .. })) {
                    return Ok(late);
                }
                replay = Some(late);
            }
            // A few events a second are weighed against the times the
            // server wrote into them.
            self.weighing.read(at, waited);
            if self.weighing.due(at)
                && let Ok(WireEvent::Object {
                    watch_type, raw, ..
                }) = wire::decode_line(&line)
                // A deleted object carries its last version's times.
                && watch_type != WatchType::Deleted
                && let Some(written_at) = wire::written_at(&raw)
                // What came first on the watch is the server's replay.
                && let Some(end) = self.weighing.weigh(written_at, at, waited, at <= replay_until)
            {
                return Ok(end);
            }
            let end = self.journal_line(&line, at, &mut cursor, rules).await?;
            bookmarked |= cursor.bookmark;
            self.settle(rules);
            if let Some(end) = end {
                return Ok(end);
            }
        }
    }

    /// Journals one line of the watch: an event, a bookmark, or the end of the watch
    /// (an ERROR event, or a line that cannot be read).
    async fn journal_line(
        &self,
        line: &[u8],
        at: i64,
        cursor: &mut WatchCursor,
        rules: &mut Rules,
    ) -> Result<Option<WatchEnd>> {
        cursor.bookmark = false;
        match wire::decode_line(line) {
            Ok(WireEvent::Object {
                watch_type,
                meta,
                raw,
            }) => {
                cursor.got_data = true;
                cursor.rv = meta.resource_version.clone();
                let body = if self.spec.resource.is_secret() {
                    redact_secret(&raw)
                } else {
                    raw
                };
                self.send(Op::Event {
                    stream: self.id,
                    at,
                    watch_type,
                    meta,
                    body,
                })
                .await?;
                rules.progress(at, &cursor.rv);
                cursor.wrote_since_tick = true;
                let rv = cursor.rv.clone();
                self.update(|s| {
                    s.events += 1;
                    s.last_rv = rv;
                });
                rules.healthy();
            }
            Ok(WireEvent::Bookmark { resource_version }) => {
                cursor.got_data = true;
                cursor.bookmark = true;
                cursor.rv = resource_version;
                self.send(Op::Checkpoint {
                    stream: self.id,
                    at,
                    rv: cursor.rv.clone(),
                    reason: CheckpointReason::Bookmark,
                })
                .await?;
                rules.progress(at, &cursor.rv);
                cursor.wrote_since_tick = true;
                if self.opts.verbose {
                    self.notice(format!("bookmark: complete up to {}", cursor.rv), false);
                }
                let rv = cursor.rv.clone();
                self.update(|s| s.last_rv = rv);
            }
            Ok(WireEvent::Error(e)) => return Ok(Some(classify_watch_error(e, true))),
            Err(bad) => {
                // Never journaled, never skipped silently: say so and resume from
                // the last event before it, so whatever the line held is resent;
                // the same line three times in a row becomes a gap and a relist.
                self.notice(
                    format!("{bad}; reconnecting from resourceVersion {}", cursor.rv),
                    true,
                );
                return Ok(Some(WatchEnd::Unreadable(bad.to_string())));
            }
        }
        Ok(None)
    }
}

/// What the times the server wrote into a stream's events say of how late
/// the stream reads them (docs/consistency.md, "A recorder behind").
///
/// An object's newest time is when the write that set it happened (whole
/// seconds, the server's clock), and a lower bound for any later write of
/// it. Only a time newer than every time the stream weighed before was
/// surely set by the write being read (an older one may be left from an
/// earlier write: a scale that changed a value its manager already owned at
/// the same second, an update of a field no manager's time follows); only
/// such times are evidence. No event is read before it is written, so the
/// server's clock is at least `floor` ahead of ours.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Weighing {
    /// The most an event was read before its time (ms, `time - read`).
    floor: Option<i64>,
    /// The newest time weighed so far (ms).
    newest: Option<i64>,
    /// When an event was last weighed (ms, our clock).
    at: i64,
    /// When the stream last read an event it had waited for (ms, ours):
    /// then it had read all the server had sent it, and anything it reads
    /// after may have been written since.
    caught_up: i64,
}

impl Weighing {
    /// Whether an event read at `at` is to be weighed: at most one every
    /// [`WEIGH_EVERY_MS`], at no cost to a stream that keeps up.
    fn due(&self, at: i64) -> bool {
        at - self.at >= WEIGH_EVERY_MS
    }

    /// The stream read a line at `at`: one it had waited for, or one that
    /// was `waited` (already received).
    fn read(&mut self, at: i64, waited: bool) {
        if !waited {
            self.caught_up = at;
        }
    }

    /// Weighs an event read at `at` (ms, ours) whose newest time is
    /// `time` (ms, the server's); `waited`: it was already received when
    /// the stream came to read it. The stream is behind the server when
    /// such an event is known to be stamped more than [`BEHIND_LIMIT_MS`]
    /// late: what it reads cannot be dated since the earliest the event was
    /// written by the floor's reckoning, or since the stream was last
    /// caught up if that is earlier (what it read since then may all be
    /// late), so a gap from there, and a relist.
    /// `replayed`: it came among what the server replayed as the watch
    /// opened.
    fn weigh(&mut self, time: i64, at: i64, waited: bool, replayed: bool) -> Option<WatchEnd> {
        self.at = at;
        if self.newest.is_some_and(|newest| time <= newest) {
            return None;
        }
        self.newest = Some(time);
        if let Some(floor) = self.floor
            && waited
        {
            let late = known_lateness(at, time, floor);
            if late > BEHIND_LIMIT_MS {
                return Some(WatchEnd::Behind {
                    since: (time - floor).min(self.caught_up),
                    by: Duration::from_millis(late as u64),
                    replayed,
                });
            }
        }
        self.floor = Some(self.floor.map_or(time - at, |f| f.max(time - at)));
        None
    }
}

/// How late, at least, an event read at `at` (ms, our clock) is stamped,
/// when the write that made it set its time `time` (whole seconds, the
/// server's clock) and the server's clock is at least `floor` ahead of
/// ours: it was written at most at `time + 999 - floor` by ours.
fn known_lateness(at: i64, time: i64, floor: i64) -> i64 {
    at - (time + 999 - floor)
}

/// How long a stream must have waited for a line to take itself for
/// caught up with the server when it comes.
const CAUGHT_UP_WAIT: Duration = Duration::from_millis(1);

/// How often, at most, a stream weighs an event against the times the
/// server wrote into it (ms): enough to see a backlog grow, at no cost to
/// a stream that keeps up.
const WEIGH_EVERY_MS: i64 = 100;

/// How late an event may be known to be stamped before the stream takes
/// itself for behind (ms): the bound a freeze has
/// ([`super::pulse::FREEZE_LIMIT_MS`]).
pub const BEHIND_LIMIT_MS: i64 = super::pulse::FREEZE_LIMIT_MS;

/// Whether a watch answered at `answered` (ms) comes back late: more than
/// `limit` after the server's last word to the stream, whose time it
/// returns. Anything it replays then may have happened at any time since.
fn late_replay(last_word: Option<i64>, answered: i64, limit: i64) -> Option<i64> {
    last_word.filter(|since| answered - since > limit)
}

fn classify_watch_error(e: ApiError, in_stream: bool) -> WatchEnd {
    match e.code() {
        Some(410) => WatchEnd::Expired(format!(
            "410 {}{}",
            reason_of(&e),
            if in_stream {
                " (in watch stream)"
            } else {
                " (at watch start)"
            }
        )),
        Some(403) | Some(404) => WatchEnd::Unavailable {
            short: short(&e),
            full: e.to_string(),
        },
        Some(504) if message_of(&e).contains("too large resource version") => {
            WatchEnd::Expired("504 ResourceVersionTooLarge".into())
        }
        // The server opened the watch, then refused to go on from this
        // resourceVersion. kube-apiserver does that for good, with 500
        // "etcd event received with PrevKv=nil", to a watch that starts
        // exactly at etcd's compaction revision: retried from the same
        // resourceVersion, but not forever (three strikes, then a gap and a
        // relist).
        Some(_) if in_stream => WatchEnd::Unreadable(format!(
            "{} {} (in watch stream)",
            e.code().unwrap_or_default(),
            reason_of(&e)
        )),
        _ => WatchEnd::Retry {
            why: short(&e),
            retry_after: match &e {
                ApiError::Status { retry_after, .. } => *retry_after,
                _ => None,
            },
            healthy: false,
        },
    }
}

fn reason_of(e: &ApiError) -> String {
    match e {
        ApiError::Status {
            reason, message, ..
        } if !message.is_empty() => {
            format!("{reason}: {message}")
        }
        ApiError::Status { reason, .. } => reason.clone(),
        other => other.to_string(),
    }
}

fn message_of(e: &ApiError) -> String {
    match e {
        ApiError::Status { message, .. } => message.to_ascii_lowercase(),
        other => other.to_string().to_ascii_lowercase(),
    }
}

/// A short reason for tables and gap records: `403 Forbidden`, `connection refused`.
pub fn short(e: &ApiError) -> String {
    match e {
        ApiError::Status { code, reason, .. } => format!("{code} {reason}"),
        // The innermost cause, but not a link some libraries end with
        // (rustls: "peer closed connection without sending TLS close_notify:
        // https://docs.rs/...").
        ApiError::Transport(t) => t
            .rsplit(": ")
            .find(|part| !part.starts_with("https://") && !part.starts_with("http://"))
            .unwrap_or(t)
            .to_string(),
        ApiError::Decode(_) => "unreadable response".into(),
        ApiError::Timeout(d) => format!("timeout after {}", format_duration(*d)),
        ApiError::CredentialPlugin { said, .. } => format!("credential plugin failed: {said}"),
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_watch_is_silent_past_its_timeout_or_two_bookmark_intervals() {
        let limit = |secs, seen| silence_limit(Duration::from_secs(secs), seen).as_secs();
        // The server closes a watch at its timeout: a tenth more is silence.
        assert_eq!(limit(290, false), 319);
        // At least 2 s more, however short the timeout.
        assert_eq!(limit(5, false), 7);
        // A server that sends bookmarks is heard from every minute.
        assert_eq!(limit(290, true), 120);
        assert_eq!(limit(5, true), 7);
    }

    use super::*;

    #[test]
    fn a_watch_is_back_late_past_the_limit_from_the_last_word() {
        assert_eq!(late_replay(None, 50_000, 10_000), None);
        assert_eq!(late_replay(Some(40_000), 50_000, 10_000), None);
        assert_eq!(late_replay(Some(39_999), 50_000, 10_000), Some(39_999));
    }

    #[test]
    fn an_event_waiting_known_late_by_the_servers_times_is_a_stream_behind() {
        // The server's clock 5 s ahead of ours: an event it wrote at 110.4 s
        // (stamped 110 s, whole seconds) is read as it comes at 105.5 s by
        // ours: the floor is 4.5 s, and no judgement before it.
        let mut w = Weighing::default();
        assert!(w.weigh(110_000, 105_500, true, false).is_none());
        assert_eq!(w.floor, Some(4_500));
        // Written at 111 s by the server, 107.499 s by ours at most: read
        // at 108.5 s, it is surely 1.001 s late.
        assert_eq!(known_lateness(108_500, 111_000, 4_500), 1_001);
        assert!(
            w.weigh(111_000, 109_499, true, false).is_none(),
            "2 s: the bound"
        );
        // Only a time newer than all before is evidence.
        assert!(w.weigh(111_000, 200_000, true, false).is_none());
        w.read(108_000, false);
        let mut earlier = w;
        match w.weigh(112_000, 110_500, true, false) {
            Some(WatchEnd::Behind { since, by, .. }) => {
                assert_eq!(since, 107_500, "the earliest it was written, by the floor");
                assert_eq!(by, Duration::from_millis(2_001));
            }
            other => panic!("{other:?}"),
        }
        // Last caught up before that: what it read since may all be late.
        earlier.read(107_000, false);
        assert!(matches!(
            earlier.weigh(112_000, 110_500, true, false),
            Some(WatchEnd::Behind { since: 107_000, .. })
        ));
        // Read as it came, it is not late however old it looks: it only
        // lowers nothing.
        let mut w = Weighing::default();
        w.weigh(110_000, 105_500, false, false);
        assert!(w.weigh(111_000, 130_000, false, false).is_none());
        assert_eq!(w.floor, Some(4_500));
    }

    #[test]
    fn a_source_of_old_times_read_fast_is_never_taken_for_late() {
        // The yardstick's firehose: objects an hour old, whose events carry
        // times 10 ms apart, all sent at once and read 30,000 a second; a
        // scale leaves the time of the object's last write (older than the
        // newest times already read). Every event waited.
        let mut w = Weighing::default();
        let hour_ago = -3_600_000;
        for k in 0..100_000_i64 {
            let at = k / 30;
            let time = if k % 10 == 9 {
                hour_ago + 60_000 + (k / 2) * 10 // left by an earlier write
            } else {
                hour_ago + 60_000 + k * 10
            };
            let time = time - time.rem_euclid(1_000); // whole seconds
            if w.due(at) {
                assert!(w.weigh(time, at, true, false).is_none(), "event {k}");
            }
        }
    }

    #[test]
    fn watch_errors_are_classified() {
        let status = |code: u16, reason: &str, message: &str| ApiError::Status {
            code,
            reason: reason.into(),
            message: message.into(),
            retry_after: None,
            continue_token: None,
            causes: Vec::new(),
        };
        let prev_kv = status(
            500,
            "InternalError",
            "Internal error occurred: etcd event received with PrevKv=nil (key=\"/registry/configmaps/x/y\", modRevision=735, type=PUT)",
        );
        assert!(matches!(
            classify_watch_error(prev_kv.clone(), true),
            WatchEnd::Unreadable(why) if why.starts_with("500 InternalError: Internal error occurred: etcd event")
        ));
        // The same status answered to the request itself is a server having
        // a bad moment: retried with backoff.
        assert!(matches!(
            classify_watch_error(prev_kv, false),
            WatchEnd::Retry { .. }
        ));
        assert!(matches!(
            classify_watch_error(status(410, "Expired", "too old"), true),
            WatchEnd::Expired(_)
        ));
        assert!(matches!(
            classify_watch_error(status(403, "Forbidden", "no"), true),
            WatchEnd::Unavailable { .. }
        ));
    }

    #[test]
    fn short_reasons_name_the_cause_not_a_link() {
        // What a real kube-apiserver's dropped TLS connection reads like.
        let cut = ApiError::Transport(
            "error reading a body from connection: peer closed connection without sending TLS close_notify: https://docs.rs/rustls/latest/rustls/manual/_03_howto/index.html#unexpected-eof".into(),
        );
        assert_eq!(
            short(&cut),
            "peer closed connection without sending TLS close_notify"
        );
        let refused = ApiError::Transport(
            "client error (Connect): tcp connect error: Connection refused (os error 111)".into(),
        );
        assert_eq!(short(&refused), "Connection refused (os error 111)");
    }
}
