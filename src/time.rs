//! Time expressions (`now`, `30m`, RFC 3339) and millisecond timestamps.

use std::fmt;

/// Milliseconds since the Unix epoch, UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Millis(pub i64);

impl Millis {
    pub fn now() -> Millis {
        Millis(jiff::Timestamp::now().as_millisecond())
    }
}

impl fmt::Display for Millis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match jiff::Timestamp::from_millisecond(self.0) {
            Ok(t) => write!(f, "{t:.3}"),
            Err(_) => write!(f, "{}ms", self.0),
        }
    }
}
