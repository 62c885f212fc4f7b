//! Bad input never panics: one `error:` line (plus hints), the right exit code.

use crate::common;

use common::Env;

fn assert_one_error(out: &common::Output, code: i32, contains: &str) {
    assert_eq!(
        out.code,
        Some(code),
        "stdout: {}\nstderr: {}",
        out.stdout,
        out.stderr
    );
    let mut lines = out.stderr.lines();
    let first = lines.next().unwrap_or_default();
    assert!(first.starts_with("error: "), "{}", out.stderr);
    assert!(first.contains(contains), "{first:?} lacks {contains:?}");
    for rest in lines {
        assert!(rest.starts_with("hint: "), "extra output: {}", out.stderr);
    }
    assert!(!out.stderr.contains("panicked"));
}

#[test]
fn unknown_resource_is_worded_like_kubectl() {
    let env = Env::shop();
    let out = env.run(&["record", "frobnicators", "--for", common::REFUSED_WITHIN]);
    assert_one_error(
        &out,
        1,
        "the server doesn't have a resource type \"frobnicators\"",
    );
    assert!(!env.store.exists() || env.journal().streams(None).unwrap().is_empty());
}

#[test]
fn bad_selector_and_bad_duration_are_usage_errors() {
    let env = Env::shop();
    assert_one_error(
        &env.run(&["record", "cm", "-l", "tier in web"]),
        2,
        "invalid label selector",
    );
    assert_one_error(
        &env.run(&["record", "cm", "--for", "soon"]),
        2,
        "invalid value 'soon' for '--for <DURATION>'",
    );
    assert_one_error(
        &env.run(&["record", "cm", "--for", "0s"]),
        2,
        "must be greater than zero",
    );
    assert_one_error(&env.run(&["record", "--bogus"]), 2, "--bogus");
    // A readers' flag: record records the cluster of the context.
    assert_one_error(
        &env.run(&["record", "cm", "--cluster-id", "elsewhere"]),
        2,
        "record does not take --cluster-id",
    );
    assert_one_error(
        &env.run(&["coverage", "-o", "xml"]),
        2,
        "unsupported output format",
    );
    assert_one_error(
        &env.run(&["record", "--request-timeout", "fast"]),
        2,
        "--request-timeout",
    );
}

#[test]
fn unreachable_server() {
    let env = Env::shop();
    let out = env.run(&[
        "record",
        "cm",
        "--server",
        "http://127.0.0.1:9",
        "--for",
        common::REFUSED_WITHIN,
    ]);
    assert_one_error(&out, 1, "cannot reach the API server at http://127.0.0.1:9");
}

#[test]
fn unreadable_kubeconfig() {
    let env = Env::shop();
    let bad = env.dir.path().join("bad-kubeconfig");
    std::fs::write(&bad, "clusters: [this is: not: valid").unwrap();
    let out = env.run(&["record", "cm", "--kubeconfig", bad.to_str().unwrap()]);
    assert_one_error(&out, 1, "cannot read kubeconfig");
    let missing = env.dir.path().join("missing");
    let out = env.run(&["record", "cm", "--kubeconfig", missing.to_str().unwrap()]);
    assert_one_error(&out, 1, "cannot read kubeconfig");
    let out = env.run(&["record", "cm", "--context", "nope"]);
    assert_one_error(&out, 1, "context \"nope\" does not exist");
}

#[test]
fn unwritable_store_path() {
    let env = Env::shop();
    let file = env.dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let store = file.join("journal.db");
    let out = env.run(&[
        "record",
        "cm",
        "--store",
        store.to_str().unwrap(),
        "--for",
        "1s",
    ]);
    assert_one_error(&out, 1, "cannot create the journal directory");
}

#[test]
fn readers_need_a_journal() {
    let env = Env::shop();
    let out = env.run(&["coverage"]);
    assert_one_error(&out, 1, "no journal at");
    let out = env.run(&["status"]);
    assert_eq!(out.code, Some(0));
    assert!(out.stdout.contains("nothing recorded yet"));
}

#[test]
fn missing_kubeconfig_entries_in_kubeconfig_list_are_skipped() {
    let env = Env::shop();
    let list = format!(
        "{}:{}",
        env.dir.path().join("does-not-exist").display(),
        env.kubeconfig.display()
    );
    let out = env.record_until_listed(&["cm"], |c| {
        c.env("KUBECONFIG", list);
    });
    assert_eq!(out.code, Some(0), "{}", out.stderr);
}

/// `kubectl krply export | head -1`: the reader goes away; the command stops
/// quietly with exit 0 (through its normal return, not by exiting mid-write).
/// The same for JSON answers, which are written as they are rendered.
#[test]
fn a_closed_pipe_ends_the_output_quietly() {
    use std::io::Read;
    let env = common::Env::shop();
    let rec = env.start_recorder(&[]);
    env.wait_baselines(1);
    assert_eq!(rec.stop().code, Some(0));
    for args in [
        &["export"][..],
        &[
            "diff",
            "-A",
            "--since",
            "1h",
            "--include-status",
            "-o",
            "json",
        ],
        &["log", "-A", "--since", "1h", "-o", "json"],
    ] {
        let mut child = env
            .command()
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = [0u8; 16];
        child
            .stdout
            .as_mut()
            .unwrap()
            .read_exact(&mut first)
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.stderr.is_empty(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
