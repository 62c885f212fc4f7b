//! Field selectors (the simulator's `fieldSelector`, as the API server reads it):
//! `krply::selector::FieldSelector::parse` and `matches`.
//!
//! Input: the selector as UTF-8.
//!
//! Properties: no panic, whatever the field set the resource supports; a selector
//! parsed with a narrower field set is also accepted by a wider one.

#![no_main]

use krply::selector::FieldSelector;
use libfuzzer_sys::fuzz_target;

fn pods(field: &str) -> bool {
    matches!(
        field,
        "metadata.name" | "metadata.namespace" | "spec.nodeName" | "status.phase"
    )
}

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let narrow = FieldSelector::parse(s, &pods);
    let wide = FieldSelector::parse(s, &|_| true);
    if let Ok(sel) = &narrow {
        assert_eq!(wide.as_ref(), Ok(sel), "{s:?}");
        let _ = sel.matches(&|field| field.to_owned());
        let _ = sel.matches(&|_| String::new());
        if sel.is_empty() {
            assert!(sel.matches(&|_| "anything".to_owned()));
        }
    }
    if let Ok(sel) = &wide {
        let _ = sel.matches(&|field| field.chars().rev().collect());
    }
});
