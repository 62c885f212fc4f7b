//! Time expressions (`now`, `30m`, RFC 3339) and millisecond timestamps.
