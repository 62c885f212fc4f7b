//! Label selectors (`record -l`, the simulator's `labelSelector`):
//! `krply::selector::LabelSelector::parse`, its canonical `Display` form and `matches`,
//! plus the public key and value validators.
//!
//! Input: the selector as UTF-8.
//!
//! Properties: no panic; an accepted selector's canonical form (`Display`) parses back
//! to the same selector, and is a fixed point; the empty selector matches everything.

#![no_main]

use krply::selector::{LabelSelector, Labels, is_label_value, validate_key};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let _ = validate_key(s);
    let _ = is_label_value(s);

    let Ok(sel) = LabelSelector::parse(s) else {
        return;
    };
    let canonical = sel.to_string();
    let again = LabelSelector::parse(&canonical);
    assert_eq!(
        again.as_ref(),
        Ok(&sel),
        "{s:?}: its canonical form {canonical:?} does not parse back to the same selector"
    );
    assert_eq!(
        again.map(|a| a.to_string()).as_deref(),
        Ok(canonical.as_str())
    );

    // Matching never panics, whatever the labels (numbers for Gt/Lt included).
    let mut labels = Labels::new();
    for (i, word) in s
        .split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/')))
        .filter(|w| !w.is_empty())
        .enumerate()
    {
        labels.insert(word.to_owned(), i.to_string());
    }
    let _ = sel.matches(&labels);
    let _ = sel.matches(&Labels::new());
    if sel.is_empty() {
        assert!(sel.matches(&labels));
    }
});
