//! Audit logs as kube-apiserver writes them (or anything else a user passes to
//! `audit import` or `record --audit-log`): `krply::audit::parse::parse_line`
//! on one line, `krply::audit::read::read_file` on a whole file (plain or
//! gzip, by its magic bytes), and `read_complete_lines` as the follower reads
//! a growing file.
//!
//! Input: the bytes of a file; its first line is also parsed alone. The
//! library reads files only from paths, so each input is written to one
//! scratch file per process (under `TMPDIR`).
//!
//! Properties: no panic; a write has a resource and a name; a one-line file
//! gives the line's own verdict (a write, another event, or not an audit log)
//! unless the line is cut short; the follower consumes only up to the last
//! newline, and exactly as many lines as there are complete non-blank ones.

#![no_main]

use std::path::PathBuf;
use std::sync::LazyLock;

use krply::audit::parse::{Line, parse_line};
use krply::audit::read::{read_complete_lines, read_file};
use libfuzzer_sys::fuzz_target;

static SCRATCH: LazyLock<PathBuf> = LazyLock::new(|| {
    std::env::temp_dir().join(format!("krply-fuzz-audit-{}.log", std::process::id()))
});

fuzz_target!(|data: &[u8]| {
    let first = data.split(|b| *b == b'\n').next().unwrap_or_default();
    let alone = parse_line(first.trim_ascii());
    if let Ok(Line::Write(e)) = &alone {
        assert!(!e.resource.is_empty() && !e.name.is_empty(), "{e:?}");
    }

    let path = SCRATCH.clone();
    std::fs::write(&path, data).expect("write the scratch log");
    let mut writes = 0u64;
    let scan = read_file(&path, |e| {
        assert!(!e.resource.is_empty() && !e.name.is_empty(), "{e:?}");
        writes += 1;
        Ok(())
    });
    if let Ok(s) = &scan {
        assert_eq!(s.writes, writes);
    }
    // A file of one complete, non-blank, plain-text line says what that line says.
    let one_line = data.ends_with(b"\n")
        && data.iter().filter(|b| **b == b'\n').count() == 1
        && !first.trim_ascii().is_empty()
        && !data.starts_with(&[0x1f, 0x8b]);
    if one_line {
        match (&alone, &scan) {
            (Ok(Line::Write(_)), Ok(s)) => assert_eq!(s.writes, 1),
            (Ok(Line::Other { .. }), Ok(s)) => assert_eq!(s.writes, 0),
            (Err(_), Err(_)) => {}
            (a, s) => panic!("alone {a:?}, as a file {s:?}"),
        }
    }

    let mut lines = 0usize;
    let used = read_complete_lines(data, |_| lines += 1, usize::MAX).expect("reading memory");
    let end = data.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    assert_eq!(used as usize, end);
    let complete = data[..end]
        .split(|b| *b == b'\n')
        .filter(|l| !l.trim_ascii().is_empty())
        .count();
    assert_eq!(lines, complete);
});
