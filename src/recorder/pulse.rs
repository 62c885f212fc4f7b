//! Whether the recorder was frozen (docs/consistency.md, "A frozen
//! recorder"): stopped with Ctrl-Z or SIGSTOP, on a suspended machine, or
//! not given the CPU. A thread of its own beats every [`BEAT`]; a beat
//! missing for longer than [`FREEZE_LIMIT_MS`] by the wall clock is a
//! freeze. What a watch delivers after one may have happened at any time
//! during it, so a stream that finds a freeze since its last durable point
//! records a gap and relists rather than stamp those events late.
//!
//! [`frozen`] decides; [`Pulse`] keeps the beat and the last freeze, shared
//! by the beating thread and every stream, which may notice a freeze first
//! (every thread resumes at once).

use crate::time::Millis;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often the pulse beats.
pub const BEAT: Duration = Duration::from_millis(100);

/// How long without a beat is a freeze (ms). Far above how late a thread
/// that sleeps is woken on a busy machine, and the longest an event may be
/// stamped late without a gap saying so.
pub const FREEZE_LIMIT_MS: i64 = 2_000;

/// What the pulse knows: the last beat, and the last freeze found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Beats {
    pub last: i64,
    /// `(from, to)`: the last beat before the freeze, and when it was found.
    pub freeze: Option<(i64, i64)>,
}

/// The state after a look at `now`: a beat missing longer than `limit`
/// becomes the last freeze, and `now` the last beat.
pub fn look(b: Beats, now: i64, limit: i64) -> Beats {
    Beats {
        last: now.max(b.last),
        freeze: if now - b.last > limit {
            Some((b.last, now))
        } else {
            b.freeze
        },
    }
}

/// The freeze a stream durable up to `durable_at` must answer for: the last
/// one, when it ended after that point (what was read since may be late).
pub fn frozen(b: Beats, durable_at: i64) -> Option<(i64, i64)> {
    b.freeze.filter(|&(_, to)| to > durable_at)
}

/// The recorder's pulse, shared by its thread and the streams.
#[derive(Debug)]
pub struct Pulse {
    beats: Mutex<Beats>,
    limit: i64,
}

impl Pulse {
    fn new(limit: i64) -> Pulse {
        Pulse {
            beats: Mutex::new(Beats {
                last: Millis::now().as_ms(),
                freeze: None,
            }),
            limit,
        }
    }

    /// Looks at the clock now; the state after.
    fn look(&self) -> Beats {
        let now = Millis::now().as_ms();
        let mut b = self.beats.lock().unwrap_or_else(|e| e.into_inner());
        *b = look(*b, now, self.limit);
        *b
    }

    /// The freeze, if any, that ended after `durable_at`: found by the
    /// beating thread, or now by the caller.
    pub fn frozen_since(&self, durable_at: i64) -> Option<(i64, i64)> {
        frozen(self.look(), durable_at)
    }
}

/// The beating thread: it stops, and is joined, when dropped.
pub struct Beating {
    pub pulse: Arc<Pulse>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Beating {
    /// Starts beating, with `limit` ms as the freeze limit.
    pub fn start(limit: i64) -> std::io::Result<Beating> {
        let pulse = Arc::new(Pulse::new(limit));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::thread::Builder::new()
            .name("krply-pulse".into())
            .spawn({
                let (pulse, stop) = (pulse.clone(), stop.clone());
                move || {
                    // Bounded by the recorder's life: it ends when dropped.
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(BEAT);
                        pulse.look();
                    }
                }
            })?;
        Ok(Beating {
            pulse,
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Beating {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_beat_is_a_freeze_that_streams_durable_before_it_answer_for() {
        let b = Beats {
            last: 1_000,
            freeze: None,
        };
        // Beats on time: no freeze.
        let b = look(b, 1_100, 2_000);
        assert_eq!(
            b,
            Beats {
                last: 1_100,
                freeze: None
            }
        );
        assert_eq!(frozen(b, 0), None);
        // 40 s without one (SIGSTOP, a suspended laptop).
        let b = look(b, 41_100, 2_000);
        assert_eq!(b.freeze, Some((1_100, 41_100)));
        // A stream durable before it ended answers for it, once: after its
        // relist (durable at the list, after the freeze) it does not.
        assert_eq!(frozen(b, 1_050), Some((1_100, 41_100)));
        assert_eq!(frozen(b, 41_200), None);
        // Who looks first does not matter: the next look finds the beat.
        let b = look(b, 41_150, 2_000);
        assert_eq!(b.freeze, Some((1_100, 41_100)));
        assert_eq!(b.last, 41_150);
        // A clock stepped back never moves the last beat back.
        assert_eq!(look(b, 30_000, 2_000).last, 41_150);
    }

    #[test]
    fn the_beating_thread_beats_and_stops_when_dropped() {
        let beating = Beating::start(FREEZE_LIMIT_MS).expect("thread");
        let pulse = beating.pulse.clone();
        assert_eq!(pulse.frozen_since(0), None);
        drop(beating);
        assert_eq!(Arc::strong_count(&pulse), 1);
    }
}
