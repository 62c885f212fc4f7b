//! Server-generated identifiers and timestamps: UUID v4 uids, `generateName`
//! suffixes and the RFC 3339 second-precision times the API server writes.

use ring::rand::{SecureRandom, SystemRandom};

/// Fills `buf` from the system RNG. The OS generator does not fail on the
/// platforms we support; if it ever did, a time-derived fallback keeps the
/// simulator running (uids only need to be unique, not secret).
fn fill_random(buf: &mut [u8]) {
    if SystemRandom::new().fill(buf).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let counter = FALLBACK.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let seed = nanos ^ (u128::from(counter) << 64);
        for (i, b) in buf.iter_mut().enumerate() {
            *b = (seed >> ((i % 16) * 8)) as u8 ^ (i as u8).wrapping_mul(31);
        }
    }
}

static FALLBACK: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A random UUID in the canonical v4 form (`xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`).
pub(crate) fn new_uid() -> String {
    let mut b = [0u8; 16];
    fill_random(&mut b);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    krply_apimachinery::uid::uuid_text(&b)
}

/// The five-character suffix the API server appends to `metadata.generateName`
/// (same alphabet as `k8s.io/apimachinery/pkg/util/rand.String`).
pub(crate) fn generate_name_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut b = [0u8; 5];
    fill_random(&mut b);
    b.iter()
        .map(|x| ALPHABET[usize::from(*x) % ALPHABET.len()] as char)
        .collect()
}

/// Now, as the API server writes `creationTimestamp` and managedFields times:
/// RFC 3339, UTC, whole seconds (`2026-11-29T10:00:00Z`).
pub(crate) fn now_rfc3339() -> String {
    format_rfc3339(jiff::Timestamp::now())
}

pub(crate) fn format_rfc3339(ts: jiff::Timestamp) -> String {
    ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uid_is_v4_shaped_and_unique() {
        let a = new_uid();
        let b = new_uid();
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        let parts: Vec<&str> = a.split('-').collect();
        assert_eq!(
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            [8, 4, 4, 4, 12]
        );
        assert!(parts[2].starts_with('4'));
        assert!(matches!(parts[3].as_bytes()[0], b'8' | b'9' | b'a' | b'b'));
    }

    #[test]
    fn timestamps_are_whole_seconds_utc() {
        let ts: jiff::Timestamp = "2026-11-29T10:00:00.123Z".parse().unwrap();
        assert_eq!(format_rfc3339(ts), "2026-11-29T10:00:00Z");
        assert_eq!(
            "2026-11-29T10:00:00Z"
                .parse::<jiff::Timestamp>()
                .unwrap()
                .as_second(),
            ts.as_second()
        );
    }

    #[test]
    fn generate_name_suffix_alphabet() {
        let s = generate_name_suffix();
        assert_eq!(s.len(), 5);
        assert!(s.chars().all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)));
    }
}
