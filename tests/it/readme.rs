//! The README tells the truth: its pasted demo output is what the demo prints
//! (up to times, ports, paths and ids), and every `kubectl krply` command it
//! shows runs against a recording of the simulator; CI runs its test command
//! exactly as written.

use crate::common;

use common::Env;
use regex::Regex;
use std::process::Command;

fn readme() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap()
}

/// The fenced blocks of `lang` in `text`.
fn blocks(text: &str, lang: &str) -> Vec<String> {
    let open = format!("```{lang}\n");
    text.split(open.as_str())
        .skip(1)
        .map(|b| b.split("\n```").next().unwrap().to_string())
        .collect()
}

/// What differs from run to run: times, ports, cluster ids, temporary paths,
/// plan ids; and how the streams of one gap group on a line.
fn normalize(text: &str) -> Vec<String> {
    let rules = [
        (r"\d{4}-\d{2}-\d{2}T[\d:.]+Z", "<T>"),
        (r"\d{2}:\d{2}:\d{2}\.\d{3}Z", "<t>"),
        (r"\d{4}-\d{2}-\d{2} \(UTC\)", "<date> (UTC)"),
        (r"\b\d{2}:\d{2}:\d{2}(\.\d{3})?\b", "<t>"),
        (r"\b\d{4}-\d{2}-\d{2}\b", "<date>"),
        (r"127\.0\.0\.1:\d+", "<addr>"),
        (r"127\.0\.0\.1-[0-9a-f]{8}", "<cluster>"),
        (r"/\S*/journal\.db", "<dir>/journal.db"),
        (r"/\S*/kubeconfig", "<dir>/kubeconfig"),
        (r"\b[0-9a-f]{8}\b", "<id>"),
        (r"^  [a-z0-9.@, ]+: <T> \.\. <T>", "  <streams>: <T> .. <T>"),
        // Where a gap falls in a coverage bar depends on the run's timing.
        (r"\|[=x ]+\|", "|<bar>|"),
    ];
    let rules: Vec<(Regex, &str)> = rules
        .iter()
        .map(|(re, to)| (Regex::new(&format!("(?m){re}")).unwrap(), *to))
        .collect();
    let mut lines: Vec<String> = text
        .lines()
        .map(|l| {
            rules.iter().fold(l.trim_end().to_string(), |l, (re, to)| {
                re.replace_all(&l, *to).into_owned()
            })
        })
        .collect();
    lines.dedup_by(|a, b| a.starts_with("  <streams>:") && a == b);
    lines
}

#[test]
fn the_readme_shows_what_the_demo_prints() {
    let readme = readme();
    let section = readme
        .split("## What the demo shows")
        .nth(1)
        .expect("a demo section");
    let pasted = blocks(section, "text")
        .into_iter()
        .next()
        .expect("pasted output");

    let home = tempfile::tempdir().unwrap();
    let out = Command::new(&*common::BIN)
        .env_clear()
        .env("TZ", "UTC")
        .env("HOME", home.path())
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("NO_COLOR", "1")
        .env("NO_PROXY", "127.0.0.1,localhost")
        .args(["demo", "--dir", home.path().join("demo").to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success());
    let printed = normalize(&String::from_utf8_lossy(&out.stdout));

    // Every run of lines between "..." elisions appears in the output, in order.
    let pasted = normalize(&pasted);
    let mut from = 0;
    for chunk in pasted.split(|l| l == "...") {
        let found = (from..=printed.len().saturating_sub(chunk.len()))
            .find(|&i| printed[i..i + chunk.len()] == *chunk)
            .unwrap_or_else(|| {
                panic!(
                    "the README's demo output is stale; this part is not printed:\n{}\n\nthe demo prints:\n{}",
                    chunk.join("\n"),
                    printed.join("\n")
                )
            });
        from = found + chunk.len();
    }
}

/// Every `kubectl krply` line of the README's shell blocks, without comments.
fn commands(readme: &str) -> Vec<Vec<String>> {
    blocks(readme, "sh")
        .iter()
        .flat_map(|b| b.lines().map(str::to_string).collect::<Vec<_>>())
        .filter_map(|l| {
            let l = l.split(" #").next().unwrap().trim().to_string();
            l.strip_prefix("kubectl krply ")
                .map(|rest| rest.split_whitespace().map(str::to_string).collect())
        })
        .collect()
}

#[test]
fn every_command_in_the_readme_runs() {
    let readme = readme();
    let commands = commands(&readme);
    assert!(commands.len() >= 12, "{commands:?}");

    // A recording of the shop with one change, at a time the commands can name.
    let env = Env::shop();
    let rec = env.start_recorder(&["-n", "shop"]);
    env.wait_baselines(1);
    let at = krply::time::Millis::now().to_string();
    env.scale("frontend", 4);
    env.wait_for("the change to be journaled", || {
        env.run(&["timeline", "deploy/frontend", "-n", "shop", "-o", "json"])
            .stdout
            .contains("MODIFIED")
    });
    // Recorded past the change by more than what may be in flight: the
    // gaps of the recorders below start after it.
    env.wait_all_settled(krply::time::Millis::now().as_ms());
    assert_eq!(rec.stop().code, Some(0));

    let mut plan = String::new();
    let segments = env.dir.path().join("segments");
    for words in commands {
        // Times the journal covers instead of "45m ago"; the plan just made;
        // segments in the test's own directory;
        // recorders that stop by themselves.
        let mut args: Vec<String> = words
            .iter()
            .map(|w| match w.as_str() {
                "45m" => at.clone(),
                "PLAN" => plan.clone(),
                "segments/" => segments.display().to_string(),
                _ => w.clone(),
            })
            .collect();
        if args[0] == "record" {
            args.retain(|a| a != "--for" && a != "8h");
            args.extend(["--for".into(), "1s".into()]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = env.run(&args);
        if args[0] == "browse" {
            // Its arguments and the journal pass; the terminal it needs is
            // not here (tests/it/browse.rs drives it in one).
            assert_eq!(out.code, Some(1), "{words:?}: {}", out.stderr);
            assert!(
                out.stderr.starts_with("error: browse needs a terminal"),
                "{words:?}: {}",
                out.stderr
            );
            continue;
        }
        assert_eq!(
            out.code,
            Some(0),
            "kubectl krply {}\n{}{}",
            words.join(" "),
            out.stdout,
            out.stderr
        );
        assert!(!out.stderr.contains("error:"), "{words:?}: {}", out.stderr);
        if args.starts_with(&["replay", "plan"]) {
            plan = out
                .stdout
                .lines()
                .next()
                .and_then(|l| l.strip_prefix("Plan "))
                .and_then(|l| l.split(':').next())
                .unwrap()
                .to_string();
            assert!(out.stdout.contains("dry-run-ok"), "{}", out.stdout);
        }
    }
    // The apply it shows did what it says: the shop, as it was, in shop-repro.
    let copy = env
        .sim
        .get("apps/v1", "Deployment", Some("shop-repro"), "frontend")
        .expect("applied");
    assert_eq!(copy["spec"]["replicas"], 1);
}

#[test]
fn ci_runs_the_readme_test_command_as_written() {
    let readme = readme();
    let first = blocks(&readme, "sh")
        .into_iter()
        .next()
        .expect("a first sh block");
    let test_line = first
        .lines()
        .find(|l| l.starts_with("cargo test"))
        .expect("the README's first block names the test command");
    let ci = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/.ci/run")).unwrap();
    assert!(
        ci.lines().any(|l| l == test_line),
        ".ci/run must run the README's test command exactly: {test_line}"
    );
}

/// docs/architecture.md's module map lists every module of the workspace's
/// crates (src/ and crates/*/src/), each with the first sentence of its
/// opening doc comment, and nothing that is gone.
#[test]
fn the_module_map_lists_every_module() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let map = doc
        .split("## Module map")
        .nth(1)
        .and_then(|m| m.split("\n## ").next())
        .expect("a module map");
    let mut files = Vec::new();
    let mut dirs = vec![root.join("src")];
    for krate in std::fs::read_dir(root.join("crates")).unwrap().flatten() {
        dirs.push(krate.path().join("src"));
    }
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                files.push(p);
            }
        }
    }
    for f in &files {
        let rel = f.strip_prefix(root).unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(f).unwrap();
        assert!(text.starts_with("//!"), "{rel} has no opening doc comment");
        assert!(
            map.contains(&format!("| `{rel}` |")),
            "docs/architecture.md's module map lacks {rel}"
        );
    }
    let listed = map.matches("| `src/").count() + map.matches("| `crates/").count();
    assert_eq!(listed, files.len(), "the map lists modules that are gone");
}
