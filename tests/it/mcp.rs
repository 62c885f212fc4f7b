//! `kubectl krply mcp` (docs/mcp.md) asked by a real MCP client: the official
//! Python SDK's stdio client (tests/mcp/ask.py, from PyPI into the venv the
//! SQL engines use). Each tool's answer is compared with what the CLI prints
//! for the same question with `-o json`, byte for byte.

use crate::common::{self, run_bounded};
use serde_json::{Value, json};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The demo's journal, made once for the tests of this file: a 410 gap in
/// every stream, an audit log imported, a saved replay plan.
fn demo() -> &'static Path {
    static DEMO: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &DEMO
        .get_or_init(|| {
            let home = tempfile::tempdir().unwrap();
            let store = common::demo_journal(home.path());
            (home, store)
        })
        .1
}

/// The environment both the server and the CLI run in: no kubeconfig, UTC.
fn env(c: &mut Command, store: &Path) {
    c.env_clear()
        .env("TZ", "UTC")
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", store.parent().unwrap())
        .env("KUBECONFIG", store.with_file_name("no-kubeconfig"));
}

/// `kubectl-krply --store STORE ARGS`: (exit code, stdout, stderr).
fn cli(store: &Path, args: &[&str]) -> common::Output {
    let mut c = Command::new(&*common::BIN);
    env(&mut c, store);
    c.arg("--store").arg(store).args(args);
    run_bounded(c, &format!("kubectl-krply {args:?}"))
}

/// What ask.py saw: the server, its tools, and each call's result.
pub(crate) fn ask(store: &Path, server_args: &[&str], calls: &Value) -> Value {
    ask_as(store, server_args, calls, false)
}

/// [`ask`], by a client that opens the session with the `initialize`
/// handshake of the protocol versions before 2026-07-28 when `legacy`.
fn ask_as(store: &Path, server_args: &[&str], calls: &Value, legacy: bool) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let calls_file = dir.path().join("calls.json");
    std::fs::write(&calls_file, calls.to_string()).unwrap();
    let mut c = Command::new(crate::segments::python());
    env(&mut c, store);
    c.arg(Path::new(ROOT).join("tests/mcp/ask.py"))
        .arg(&calls_file)
        .args(legacy.then_some("--legacy"))
        .arg("--")
        .arg(&*common::BIN)
        .arg("--store")
        .arg(store)
        .arg("mcp")
        .args(server_args);
    let out = run_bounded(c, "the MCP client");
    assert_eq!(out.code, Some(0), "ask.py: {}", out.stderr);
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

/// The demo journal's first and last observed times.
fn span(store: &Path) -> (String, String) {
    let out = cli(store, &["status", "-o", "json"]);
    let s: Value = serde_json::from_str(&out.stdout).unwrap();
    let t = |k: &str| s[k].as_str().unwrap().to_string();
    (t("first_observed"), t("last_observed"))
}

#[test]
fn every_tool_answers_as_the_cli_does_on_the_demo_journal() {
    let store = demo();
    let (first, last) = span(store);
    // Absolute times, so the CLI and the tool ask the same question.
    let window = json!({"namespace": "shop", "since": first, "until": last});
    // (tool, its arguments, the CLI's argv for the same question)
    let cases: Vec<(&str, Value, Vec<String>)> = vec![
        ("status", json!({}), vec!["status".into()]),
        (
            "coverage",
            json!({"namespace": "shop"}),
            vec!["coverage".into(), "-n".into(), "shop".into()],
        ),
        (
            "diff",
            window.clone(),
            vec![
                "diff".into(),
                "-n".into(),
                "shop".into(),
                format!("--since={first}"),
                format!("--until={last}"),
            ],
        ),
        (
            "log",
            window.clone(),
            vec![
                "log".into(),
                "-n".into(),
                "shop".into(),
                format!("--since={first}"),
                format!("--until={last}"),
            ],
        ),
        (
            "timeline",
            json!({"object": "cm/frontend-config", "namespace": "shop"}),
            vec![
                "timeline".into(),
                "cm/frontend-config".into(),
                "-n".into(),
                "shop".into(),
            ],
        ),
        (
            "get_at",
            json!({"object": "deploy/frontend", "namespace": "shop", "at": last}),
            vec![
                "get".into(),
                "deploy/frontend".into(),
                "-n".into(),
                "shop".into(),
                format!("--at={last}"),
            ],
        ),
        (
            "get_at",
            json!({"object": "deploy", "namespace": "shop", "at": last}),
            vec![
                "get".into(),
                "deploy".into(),
                "-n".into(),
                "shop".into(),
                format!("--at={last}"),
            ],
        ),
        (
            "snapshot",
            json!({"namespace": "shop", "at": last}),
            vec![
                "snapshot".into(),
                "-n".into(),
                "shop".into(),
                format!("--at={last}"),
            ],
        ),
        (
            "replay_plan_preview",
            json!({"namespace": "shop", "at": last, "to_namespace": "shop-repro"}),
            vec![
                "replay".into(),
                "plan".into(),
                "--preview".into(),
                "-n".into(),
                "shop".into(),
                format!("--at={last}"),
                "--to-namespace=shop-repro".into(),
            ],
        ),
    ];
    let plans = |store: &Path| {
        let out = cli(store, &["replay", "list", "-o", "json"]);
        let v: Value = serde_json::from_str(&out.stdout).unwrap();
        v["plans"].as_array().unwrap().len()
    };
    let saved = plans(store);
    let calls: Vec<Value> = cases
        .iter()
        .map(|(tool, args, _)| json!({"tool": tool, "arguments": args}))
        .collect();
    let seen = ask(store, &[], &Value::Array(calls));

    assert_eq!(seen["server"]["name"], "kubectl-krply");
    let listed: Vec<&str> = seen["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        listed,
        [
            "diff",
            "log",
            "timeline",
            "get_at",
            "snapshot",
            "coverage",
            "status",
            "replay_plan_preview"
        ]
    );
    for t in seen["tools"].as_array().unwrap() {
        assert_eq!(t["read_only"], true, "{t}");
        assert!(
            t["description"].as_str().unwrap().contains("unknown time"),
            "{t}"
        );
        assert_eq!(t["input_schema"]["type"], "object", "{t}");
    }

    let mut incomplete = 0;
    for ((tool, _, argv), result) in cases.iter().zip(seen["calls"].as_array().unwrap()) {
        assert_eq!(result["is_error"], false, "{tool}: {result}");
        let mut argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        argv.extend(["-o", "json"]);
        let out = cli(store, &argv);
        assert_eq!(out.code, Some(0), "{argv:?}: {}", out.stderr);
        let texts = result["texts"].as_array().unwrap();
        let s = &result["structured"];
        let answer = &s["answer"];
        let printed: Value = serde_json::from_str(&out.stdout).unwrap();
        if *tool == "replay_plan_preview" {
            // A plan's id (and the field manager named after it) and its
            // creation time are new at each planning.
            let strip = |v: &Value| {
                let mut v = v.clone();
                for k in ["id", "created_at", "field_manager"] {
                    v[k] = Value::Null;
                }
                v
            };
            assert!(
                strip(answer) == strip(&printed),
                "{tool}: {answer:#}\n{printed:#}"
            );
            assert_eq!(answer["status"], "pending");
            assert!(
                answer["objects"].as_array().unwrap().len() >= 10,
                "{answer}"
            );
            assert!(
                !answer["excluded"].as_array().unwrap().is_empty(),
                "{answer}"
            );
        } else {
            // The CLI's bytes, and the same value in the envelope.
            assert_eq!(texts[1].as_str().unwrap(), out.stdout, "{tool} {argv:?}");
            assert_eq!(answer, &printed, "{tool}");
        }
        // Completeness as the CLI's JSON says it, where it says it.
        if let Some(complete) = printed.get("complete") {
            assert_eq!(&s["complete"], complete, "{tool}");
        }
        if let Some(warnings) = printed
            .get("warnings")
            .filter(|_| *tool != "replay_plan_preview")
        {
            assert_eq!(&s["warnings"], warnings, "{tool}");
        }
        let summary = texts[0].as_str().unwrap();
        if s["complete"] == false {
            incomplete += 1;
            assert!(summary.contains("INCOMPLETE"), "{tool}: {summary}");
            assert!(!s["warnings"].as_array().unwrap().is_empty(), "{tool}: {s}");
        } else {
            assert!(summary.contains("Complete:"), "{tool}: {summary}");
        }
        assert_eq!(s["truncated"], false, "{tool}");
    }
    // A preview saves no plan, through the tool or the CLI.
    assert_eq!(plans(store), saved, "a preview saved a plan");
    // The demo's 410 leaves every stream with a gap: the window's answers,
    // coverage and status say so.
    assert!(incomplete >= 4, "{incomplete} incomplete answers");
    // The diff names the relist's find and the user the audit log names.
    let diff = &seen["calls"][2]["structured"]["answer"];
    let objects = diff["objects"].as_array().unwrap();
    assert!(objects.iter().any(|o| o["observed"] == "relist"), "{diff}");
    assert!(
        seen["calls"][2]["texts"][0]
            .as_str()
            .unwrap()
            .contains("unknown time"),
        "{}",
        seen["calls"][2]["texts"][0]
    );
    let log = seen["calls"][3]["texts"][1].as_str().unwrap();
    assert!(log.contains("alice@example.com"), "{log}");
    // Who made the version get_at shows, with its time as the JSON has it.
    let notes = seen["calls"][5]["structured"]["notes"].to_string();
    assert!(
        notes.contains("was made by alice@example.com") && notes.contains("Z)"),
        "{notes}"
    );
}

#[test]
fn a_long_answer_is_paged_and_says_so() {
    let store = demo();
    let (first, last) = span(store);
    let window = json!({"namespace": "shop", "since": first, "until": last});
    let mut second = window.clone();
    second["limit"] = json!(2);
    second["offset"] = json!(2);
    let mut page = window.clone();
    page["limit"] = json!(2);
    let seen = ask(
        store,
        &[],
        &json!([
            {"tool": "log", "arguments": window},
            {"tool": "log", "arguments": page},
            {"tool": "log", "arguments": second},
        ]),
    );
    let whole = seen["calls"][0]["structured"]["answer"]["entries"]
        .as_array()
        .unwrap()
        .clone();
    assert!(whole.len() > 4, "{} entries", whole.len());
    for (i, offset) in [(1, 0), (2, 2)] {
        let s = &seen["calls"][i]["structured"];
        assert_eq!(s["truncated"], true, "{s}");
        assert_eq!(s["page"]["total"], whole.len(), "{s}");
        assert_eq!(s["page"]["offset"], offset);
        assert_eq!(
            s["answer"]["entries"].as_array().unwrap()[..],
            whole[offset..offset + 2]
        );
        let summary = seen["calls"][i]["texts"][0].as_str().unwrap();
        assert!(
            summary.contains(&format!("Truncated: 2 of {} entries", whole.len())),
            "{summary}"
        );
        // The JSON text is the page, not the whole.
        let text: Value =
            serde_json::from_str(seen["calls"][i]["texts"][1].as_str().unwrap()).unwrap();
        assert_eq!(&text, &s["answer"]);
    }
}

#[test]
fn bad_questions_get_the_clis_error_and_hint_as_tool_errors() {
    let store = demo();
    let seen = ask(
        store,
        &["-n", "shop"],
        &json!([
            {"tool": "diff", "arguments": {"since": "half past never"}},
            {"tool": "diff", "arguments": {"namespace": "nowhere"}},
            {"tool": "diff", "arguments": {"sinse": "1h"}},
            {"tool": "timeline", "arguments": {}},
            {"tool": "get_at", "arguments": {"object": "deploy/frontend", "at": "2001-01-01T00:00:00Z"}},
        ]),
    );
    let calls = seen["calls"].as_array().unwrap();
    // A bad time: the CLI's own words.
    let out = cli(
        store,
        &[
            "diff",
            "-n",
            "shop",
            "--since",
            "half past never",
            "-o",
            "json",
        ],
    );
    assert_eq!(out.code, Some(2));
    assert_eq!(calls[0]["is_error"], true, "{}", calls[0]);
    assert_eq!(
        format!("{}\n", calls[0]["texts"][0].as_str().unwrap()),
        out.stderr,
        "the tool's error is the CLI's"
    );
    assert_eq!(calls[0]["structured"]["error"]["exit_code"], 2);
    // A namespace never recorded is no error, and not "no changes" either.
    assert_eq!(calls[1]["is_error"], false, "{}", calls[1]);
    assert_eq!(calls[1]["structured"]["complete"], false);
    let warnings = calls[1]["structured"]["warnings"].to_string();
    assert!(warnings.contains("nowhere"), "{warnings}");
    // An argument the tool does not take names the ones it does.
    let text = calls[2]["texts"][0].as_str().unwrap();
    assert_eq!(calls[2]["is_error"], true);
    assert!(
        text.starts_with("error: diff takes no argument \"sinse\"; it takes: targets, since"),
        "{text}"
    );
    // A required argument missing: clap's words, and the usage.
    let text = calls[3]["texts"][0].as_str().unwrap();
    assert!(
        text.contains("<TYPE/NAME>") && text.contains("hint: usage: kubectl krply timeline"),
        "{text}"
    );
    // Before it existed: exit 1's message.
    let out = cli(
        store,
        &[
            "get",
            "deploy/frontend",
            "-n",
            "shop",
            "--at",
            "2001-01-01T00:00:00Z",
        ],
    );
    assert_eq!(out.code, Some(1));
    assert_eq!(
        format!("{}\n", calls[4]["texts"][0].as_str().unwrap()),
        out.stderr
    );
    assert_eq!(calls[4]["structured"]["error"]["exit_code"], 1);

    // A journal that is missing: every tool says so, with the CLI's hint.
    let missing = store.with_file_name("missing.db");
    let seen = ask(
        &missing,
        &[],
        &json!([{"tool": "diff", "arguments": {}}, {"tool": "status", "arguments": {}}]),
    );
    let out = cli(&missing, &["diff", "-o", "json"]);
    assert_eq!(out.code, Some(1));
    assert_eq!(seen["calls"][0]["is_error"], true);
    assert_eq!(
        format!("{}\n", seen["calls"][0]["texts"][0].as_str().unwrap()),
        out.stderr
    );
    // status describes the journal's absence, as the CLI's does.
    assert_eq!(seen["calls"][1]["structured"]["answer"]["exists"], false);
    assert_eq!(seen["calls"][1]["structured"]["complete"], false);
    assert!(!missing.exists(), "mcp created no journal");
}

#[test]
fn an_older_client_gets_the_same_answers_through_the_handshake() {
    let store = demo();
    let calls = json!([
        {"tool": "coverage", "arguments": {"namespace": "shop"}},
        {"tool": "timeline", "arguments": {"namespace": "shop", "object": "cm/frontend-config"}},
    ]);
    let modern = ask(store, &[], &calls);
    let legacy = ask_as(store, &[], &calls, true);
    assert_eq!(modern["protocol_version"], "2026-07-28", "{modern}");
    let version = legacy["protocol_version"].as_str().unwrap();
    assert!(version < "2026-07-28", "{version}");
    assert_eq!(legacy["tools"], modern["tools"]);
    assert_eq!(legacy["calls"], modern["calls"]);
}

#[test]
fn the_server_ends_cleanly_when_its_client_closes_stdin() {
    let store = demo();
    let mut c = Command::new(&*common::BIN);
    env(&mut c, store);
    let mut child = c
        .arg("--store")
        .arg(store)
        .arg("mcp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"}}})
    )
    .unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let reply: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
    assert_eq!(reply["id"], 1, "{reply}");
    assert_eq!(
        reply["result"]["serverInfo"]["name"], "kubectl-krply",
        "{reply}"
    );
    drop(stdin);
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "mcp still running 10 s after stdin closed"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(0), "{err}");
    // Nothing but protocol on stdout.
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    for l in rest.lines() {
        serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("{e}: {l}"));
    }
}
