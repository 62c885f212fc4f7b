//! Embeds the git commit the binary was built from (shown by `version`), and
//! links the binary at a fixed address on Linux.

use std::process::Command;

fn main() {
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    if let Some(commit) = commit {
        println!("cargo:rustc-env=KRPLY_COMMIT={commit}");
    }
    // Linked at a fixed address on Linux, as Go links programs there by
    // default (most kubectl plugins): a process
    // then starts without the dynamic loader relocating 0.45 MB of pointers,
    // each page copied on write (docs/journal.md, "Where the time of an
    // answer goes"). Only this package's binaries; build scripts, tests'
    // libraries and dependencies are linked as before.
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/refs/heads");
}
