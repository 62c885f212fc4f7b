//! Reconnect delays: exponential, capped, jittered, reset after a healthy watch,
//! and never shorter than what the server asked for (Retry-After).

use std::time::Duration;

#[derive(Debug, Clone)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
    next: Duration,
    rng: u64,
}

impl Backoff {
    pub fn new(initial: Duration, max: Duration, seed: u64) -> Backoff {
        Backoff {
            initial,
            max,
            next: initial,
            rng: seed | 1,
        }
    }

    /// The delay before the next attempt: the current step with ±20 % jitter,
    /// or `retry_after` when the server asked for longer. Doubles the step.
    pub fn delay(&mut self, retry_after: Option<Duration>) -> Duration {
        let base = self.next;
        self.next = (self.next * 2).min(self.max);
        // xorshift64: enough to spread reconnects of many streams apart.
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        let factor = 0.8 + (self.rng % 1000) as f64 / 2500.0; // 0.8 ..= 1.2
        let jittered = base.mul_f64(factor).min(self.max);
        match retry_after {
            Some(r) if r > jittered => r.min(Duration::from_secs(300)),
            _ => jittered,
        }
    }

    /// A watch worked: the next failure starts from the initial delay again.
    pub fn reset(&mut self) {
        self.next = self.initial;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_caps_resets_and_honours_retry_after() {
        let mut b = Backoff::new(Duration::from_millis(100), Duration::from_secs(2), 42);
        let first = b.delay(None);
        assert!(first >= Duration::from_millis(80) && first <= Duration::from_millis(120));
        let mut last = first;
        for _ in 0..10 {
            last = b.delay(None);
        }
        assert!(last <= Duration::from_secs(2));
        assert!(last >= Duration::from_millis(1600));
        assert_eq!(
            b.delay(Some(Duration::from_secs(9))),
            Duration::from_secs(9)
        );
        b.reset();
        assert!(b.delay(None) <= Duration::from_millis(120));
    }
}
