//! Every command's `--help`, snapshot-tested: a one-line purpose, the flags, and
//! examples that run. A change to the help shows up in review as a snapshot diff.

use std::process::Command;

use crate::common::BIN;

/// Every command path, as typed after `kubectl krply`.
const COMMANDS: &[&[&str]] = &[
    &[],
    &["record"],
    &["status"],
    &["coverage"],
    &["diff"],
    &["timeline"],
    &["get"],
    &["snapshot"],
    &["export"],
    &["import"],
    &["prune"],
    &["log"],
    &["browse"],
    &["audit"],
    &["audit", "import"],
    &["replay"],
    &["replay", "plan"],
    &["replay", "show"],
    &["replay", "list"],
    &["replay", "apply"],
    &["mcp"],
    &["demo"],
    &["version"],
    &["completion"],
];

fn help(path: &[&str], flag: &str) -> String {
    let mut args = path.to_vec();
    args.push(flag);
    run(&args)
}

fn run(args: &[&str]) -> String {
    let out = Command::new(&*BIN)
        .env_clear()
        .env("TZ", "UTC")
        .env("COLUMNS", "100")
        .args(args)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{args:?}");
    assert!(out.stderr.is_empty(), "{args:?}: help goes to stdout");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn every_command_has_help_with_a_purpose_and_examples() {
    for path in COMMANDS {
        let long = help(path, "--help");
        let name = if path.is_empty() {
            "kubectl-krply".to_string()
        } else {
            path.join("-")
        };
        // The first line is the purpose: one sentence, no trailing period.
        let purpose = long.lines().next().unwrap();
        assert!(
            !purpose.is_empty() && !purpose.ends_with('.'),
            "{name}: {purpose:?}"
        );
        assert!(long.contains("\nExamples:\n  "), "{name} has no examples");
        // Each example is a runnable `kubectl krply` line whose command exists.
        let examples = long.split("\nExamples:\n").nth(1).unwrap();
        for line in examples.lines().map(str::trim) {
            if let Some(rest) = line.strip_prefix("kubectl krply ") {
                let words: Vec<&str> = rest.split_whitespace().collect();
                let mut cmd = vec![words[0]];
                if words[0] == "replay" || words[0] == "audit" {
                    cmd.push(words[1]);
                }
                assert!(
                    COMMANDS.contains(&cmd.as_slice()) || words[0] == "reconstruct",
                    "{name}: example {line:?} names an unknown command"
                );
            }
        }
        // -h is the short form of the same help.
        let short = help(path, "-h");
        assert!(short.len() <= long.len(), "{name}");
        insta::assert_snapshot!(format!("help-{name}"), long);
    }
}

#[test]
fn help_subcommand_matches_the_flag() {
    assert_eq!(
        run(&["help", "diff"]).trim_end(),
        help(&["diff"], "--help").trim_end()
    );
}

/// `record --help` offers only what record takes: not the readers'
/// `--cluster-id` and `-o`, which it refuses; the readers still offer them.
#[test]
fn record_help_leaves_out_the_readers_flags() {
    let record = help(&["record"], "--help");
    assert!(!record.contains("--cluster-id"), "{record}");
    assert!(!record.contains("--output"), "{record}");
    let diff = help(&["diff"], "--help");
    assert!(
        diff.contains("--cluster-id") && diff.contains("--output"),
        "{diff}"
    );
}
