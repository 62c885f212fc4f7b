//! The duration grammar shared by time expressions and `record --for`.
//!
//! A duration is one or more `<digits><unit>` terms with units `d`, `h`, `m`, `s`, `ms`,
//! each unit at most once and the largest first: `90s`, `30m`, `1h30m`, `1d2h`, `500ms`.
//! No sign, no spaces, no fractions, no bare numbers, lower-case units only.

/// Why a string is not a duration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum DurationSyntax {
    /// Not in the grammar.
    Invalid,
    /// In the grammar, but longer than `i64::MAX` milliseconds.
    TooLarge,
}

/// The unit of one term, with its rank (larger units rank higher) and length in ms.
fn unit_at(rest: &[u8]) -> Option<(usize, u8, u64)> {
    match rest {
        [b'm', b's', ..] => Some((2, 1, 1)),
        [b's', ..] => Some((1, 2, 1_000)),
        [b'm', ..] => Some((1, 3, 60_000)),
        [b'h', ..] => Some((1, 4, 3_600_000)),
        [b'd', ..] => Some((1, 5, 86_400_000)),
        _ => None,
    }
}

/// Parses a duration to whole milliseconds (at most `i64::MAX`).
pub(super) fn parse_millis(s: &str) -> Result<u64, DurationSyntax> {
    let b = s.as_bytes();
    if b.is_empty() {
        return Err(DurationSyntax::Invalid);
    }
    let mut at = 0;
    let mut last_rank = u8::MAX;
    let mut total: u64 = 0;
    let mut too_large = false;
    while at < b.len() {
        let start = at;
        let mut value: u64 = 0;
        while let Some(c) = b.get(at).filter(|c| c.is_ascii_digit()) {
            match value
                .checked_mul(10)
                .and_then(|v| v.checked_add(u64::from(c - b'0')))
            {
                Some(v) => value = v,
                None => too_large = true,
            }
            at += 1;
        }
        if at == start {
            return Err(DurationSyntax::Invalid);
        }
        let (len, rank, unit_ms) = unit_at(&b[at..]).ok_or(DurationSyntax::Invalid)?;
        if rank >= last_rank {
            return Err(DurationSyntax::Invalid);
        }
        last_rank = rank;
        at += len;
        match value
            .checked_mul(unit_ms)
            .and_then(|v| total.checked_add(v))
        {
            Some(t) => total = t,
            None => too_large = true,
        }
    }
    // Only a string that is fully in the grammar is "too large"; check it last.
    if too_large || total > i64::MAX as u64 {
        return Err(DurationSyntax::TooLarge);
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_single_and_compound_terms() {
        assert_eq!(parse_millis("500ms"), Ok(500));
        assert_eq!(parse_millis("90s"), Ok(90_000));
        assert_eq!(parse_millis("30m"), Ok(1_800_000));
        assert_eq!(parse_millis("2h"), Ok(7_200_000));
        assert_eq!(parse_millis("1d"), Ok(86_400_000));
        assert_eq!(parse_millis("1h30m"), Ok(5_400_000));
        assert_eq!(parse_millis("1d2h"), Ok(93_600_000));
        assert_eq!(parse_millis("1d2h3m4s5ms"), Ok(93_784_005));
        assert_eq!(parse_millis("0s"), Ok(0));
        assert_eq!(parse_millis("007m"), Ok(420_000));
        assert_eq!(parse_millis("1m5s"), Ok(65_000));
    }

    #[test]
    fn rejects_what_is_not_in_the_grammar() {
        for bad in [
            "", "5", "m", "-5m", "+5m", "5 m", "5M", "5H", "1.5h", "30m1h", "1h1h", "1s1m",
            "5ms1s", "5y", "5w", "5us", "5mss", "1h 30m", "h1", "5m5", "１m",
        ] {
            assert_eq!(parse_millis(bad), Err(DurationSyntax::Invalid), "{bad}");
        }
    }

    #[test]
    fn overflow_is_too_large_not_invalid() {
        assert_eq!(
            parse_millis("99999999999999999999999d"),
            Err(DurationSyntax::TooLarge)
        );
        assert_eq!(parse_millis("106751991168d"), Err(DurationSyntax::TooLarge));
        assert_eq!(parse_millis("9223372036854775807ms"), Ok(i64::MAX as u64));
        assert_eq!(
            parse_millis("9223372036854775808ms"),
            Err(DurationSyntax::TooLarge)
        );
        // Overflowing digits inside something that is not a duration stay invalid.
        assert_eq!(
            parse_millis("99999999999999999999999dx"),
            Err(DurationSyntax::Invalid)
        );
    }
}
