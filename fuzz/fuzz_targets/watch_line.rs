//! Watch event lines as the API server streams them: the recorder's decoder
//! `krply::recorder::wire::decode_line`, the metadata scan `object_meta`, the
//! times the recorder weighs (`written_at`, docs/consistency.md, "A recorder
//! behind") and `krply::cluster::api::parse_status` (ERROR events and error
//! bodies).
//!
//! Input: one line (any bytes).
//!
//! Properties: no panic; an object event keeps `object` byte for byte as valid JSON,
//! with a non-empty name and resourceVersion that `object_meta` reads again from those
//! bytes; re-wrapping the kept bytes in a fresh envelope decodes to the same event; a
//! bookmark has a non-empty resourceVersion.

#![no_main]

use krply::cluster::api::parse_status;
use krply::recorder::wire::{WireEvent, decode_line, object_meta, written_at};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = object_meta(data);
    let _ = written_at(data);
    let _ = parse_status(data, 500, None);

    match decode_line(data) {
        Ok(WireEvent::Object {
            watch_type,
            meta,
            raw,
        }) => {
            serde_json::from_slice::<serde::de::IgnoredAny>(&raw)
                .expect("the kept object is valid JSON");
            assert!(
                !meta.name.is_empty() && !meta.resource_version.is_empty(),
                "{meta:?}"
            );
            assert_eq!(object_meta(&raw).as_ref(), Ok(&meta));
            let mut line = format!(r#"{{"type":"{watch_type}","object":"#).into_bytes();
            line.extend_from_slice(&raw);
            line.push(b'}');
            assert_eq!(
                decode_line(&line),
                Ok(WireEvent::Object {
                    watch_type,
                    meta,
                    raw
                })
            );
        }
        Ok(WireEvent::Bookmark { resource_version }) => {
            assert!(!resource_version.is_empty());
        }
        Ok(WireEvent::Error(_)) | Err(_) => {}
    }
});
