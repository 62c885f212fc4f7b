//! The incident walk-through of docs/transcript.md, run for real: a recorder,
//! ten changes made with kubectl, a 410 with a change inside the gap, then
//! every answer and a replay. The test checks what a hurried reader needs
//! (relist findings read as such, every line within 120 columns) and that the
//! committed transcript is what the commands print today (up to times, ports,
//! ids and paths). `KRPLY_UPDATE_TRANSCRIPT=1 cargo test transcript` rewrites it.

use crate::common::Env;
use krply::time::Millis;
use regex::Regex;
use std::time::Duration;

const DOC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/transcript.md");

/// The transcript as it is written: prose, then each command and its output.
struct Transcript {
    text: String,
}

impl Transcript {
    fn say(&mut self, prose: &str) {
        self.text.push_str(prose);
        self.text.push_str("\n\n");
    }

    /// A tool call of an MCP client and the summary it got, each line
    /// wrapped within 120 columns.
    fn exchange(&mut self, call: &str, summary: &str) {
        self.text.push_str("```text\n");
        let replies = summary
            .lines()
            .enumerate()
            .map(|(i, l)| (if i == 0 { "<- " } else { "   " }, l));
        for (first, line) in [("-> ", call)].into_iter().chain(replies) {
            let mut width = 0;
            let mut out = first.to_string();
            for word in line.split(' ') {
                if width > 0 && width + 1 + word.chars().count() > 116 {
                    self.text.push_str(&out);
                    self.text.push('\n');
                    out = "   ".to_string();
                    width = 0;
                } else if width > 0 {
                    out.push(' ');
                    width += 1;
                }
                out.push_str(word);
                width += word.chars().count();
            }
            self.text.push_str(&out);
            self.text.push('\n');
        }
        self.text.push_str("```\n\n");
    }

    fn shell(&mut self, command: &str, output: &str) {
        self.text.push_str("```text\n$ ");
        self.text.push_str(command);
        self.text.push('\n');
        self.text.push_str(output.trim_end());
        self.text.push_str("\n```\n\n");
    }
}

/// What differs from run to run. Lines of the recorder's log that come from
/// its streams at once are sorted within their block (their order is a race).
fn normalize(text: &str) -> Vec<String> {
    let rules = [
        (
            r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
            "<uid>",
        ),
        (r"resource version: \d+ \(\d+\)", "resource version: <rv>"),
        // (the same, where a summary's line was wrapped inside it)
        (
            r"\b\d+ \(\d+\) \(in watch stream\)",
            "<rv> (in watch stream)",
        ),
        (r"\d{4}-\d{2}-\d{2}T[\d:.]+Z", "<T>"),
        (r"\d{4}-\d{2}-\d{2} \(UTC\)", "<date> (UTC)"),
        (r"\b\d{2}:\d{2}:\d{2}(\.\d{3})?Z?", "<t>"),
        (r"\b\d{4}-\d{2}-\d{2}\b", "<date>"),
        (r"127\.0\.0\.1:\d+", "<addr>"),
        (r"127\.0\.0\.1-[0-9a-f]{8}", "<cluster>"),
        (r"/\S*/(journal\.db|kubeconfig)", "<dir>/$1"),
        (r"\b[0-9a-f]{8}\b", "<id>"),
        (r"over \d+(\.\d+)?m?s", "over <d>"),
        (r"pid \d+", "pid <n>"),
    ];
    let rules: Vec<(Regex, &str)> = rules
        .iter()
        .map(|(re, to)| (Regex::new(re).unwrap(), *to))
        .collect();
    let mut out = Vec::new();
    let mut block: Vec<String> = Vec::new();
    let mut in_record = false;
    for line in text.lines() {
        let line = rules
            .iter()
            .fold(line.trim_end().to_string(), |l, (re, to)| {
                re.replace_all(&l, *to).into_owned()
            });
        if line.starts_with("$ kubectl krply record") {
            in_record = true;
        } else if in_record && line == "```" {
            block.sort();
            out.append(&mut block);
            in_record = false;
        }
        if in_record && !line.starts_with('$') {
            block.push(line);
        } else {
            out.push(line);
        }
    }
    out
}

/// Waits until every stream has seen the server's latest resourceVersion
/// (events and bookmarks carry it there).
fn caught_up(env: &Env) {
    let rv: u64 = env.sim.current_rv().parse().unwrap();
    env.wait_for("the recorder to catch up", || {
        let Ok(j) = krply::journal::Journal::open(&env.store) else {
            return false;
        };
        let now = Millis::now().as_ms();
        j.streams(None).is_ok_and(|ss| {
            ss.iter().all(|s| {
                j.coverage(s, now, true).is_ok_and(|c| {
                    c.last_rv
                        .and_then(|r| r.parse::<u64>().ok())
                        .is_some_and(|r| r >= rv)
                })
            })
        })
    });
}

#[test]
fn the_incident_walk_through_reads_as_committed_and_fits_120_columns() {
    let env = Env::shop();
    let mut t = Transcript {
        text: String::new(),
    };
    t.say(
        "# An incident, walked through\n\n\
         Made by `tests/it/transcript.rs`, which runs every command below against the simulated \
         API server that `kubectl krply demo` uses, with the real `kubectl` of the pinned \
         Kubernetes release, and fails when this file no longer matches what they print (times, \
         ports, ids and paths aside). Every line fits in 120 columns.\n\n\
         ## Recording\n\n\
         In a spare terminal, `record` lists and watches the default resources of the \
         namespace. Its log (without a terminal: plain lines; on one: a live display) says \
         what it sees: each change with its old and new values and its field manager, each \
         gap, and what the relist after a gap found.",
    );
    let rec = env.start_recorder(&[]);
    env.wait_baselines(1);
    let before = Millis::now();
    std::thread::sleep(Duration::from_millis(5));

    // Ten changes, as people make them.
    let kubectl = |args: &[&str]| {
        let mut full = vec!["-n", "shop"];
        full.extend_from_slice(args);
        env.kubectl_ok(&full);
    };
    kubectl(&["scale", "deployment/frontend", "--replicas=3"]);
    kubectl(&[
        "set",
        "image",
        "deployment/productcatalogservice",
        "server=us-central1-docker.pkg.dev/google-samples/microservices-demo/productcatalogservice:v0.10.7",
    ]);
    kubectl(&[
        "set",
        "env",
        "deployment/checkoutservice",
        "EXTRA_LATENCY=5.5s",
    ]);
    kubectl(&[
        "patch",
        "configmap/feature-flags",
        "-p",
        r#"{"data":{"new-checkout":"true"}}"#,
    ]);
    kubectl(&["label", "deployment/adservice", "team=ads"]);
    kubectl(&["annotate", "service/frontend", "owner=web-team"]);
    // (The simulator takes no protobuf bodies, which `kubectl create configmap`
    // sends: see docs/simulator.md. The same object, as JSON.)
    let promo = env.kubectl_ok(&[
        "create",
        "configmap",
        "promo",
        "-n",
        "shop",
        "--from-literal=code=BF2026",
        "--dry-run=client",
        "-o",
        "json",
    ]);
    env.kubectl_stdin(&["create", "-n", "shop", "--validate=false"], &promo);
    kubectl(&["delete", "deployment/loadgenerator", "--wait=false"]);
    caught_up(&env);
    let mid = Millis::now();
    // Quiet until nothing of the changes can still be in flight: the gap
    // below starts after them (docs/consistency.md, "Gaps").
    env.wait_all_settled(mid.as_ms());

    // History lost: the server compacts and every watch gets 410 Gone while
    // it answers slowly, so the next change falls into the gap.
    // (kubectl would wait on the slow server too; this one change goes
    // through the simulator's own API, as manager krply-sim, to land in the
    // gap for sure.)
    env.sim.set_delay(Duration::from_millis(400));
    env.sim.compact();
    env.sim.expire_watches();
    env.patch_cm("frontend-config", "log_level", "debug");
    env.sim.set_delay(Duration::ZERO);
    env.wait_baselines(2);
    kubectl(&["scale", "deployment/frontend", "--replicas=2"]);
    caught_up(&env);
    let recorded = rec.stop();
    assert_eq!(recorded.code, Some(0), "{}", recorded.stderr);
    let until = Millis::now();

    t.shell(
        "kubectl krply record -n shop",
        &format!("{}{}", recorded.stderr, recorded.stdout),
    );
    t.say(
        "Meanwhile, in another terminal: `kubectl scale` frontend to 3, `kubectl set image` \
         productcatalogservice, `kubectl set env` checkoutservice, `kubectl patch` the \
         feature-flags ConfigMap, `kubectl label` adservice, `kubectl annotate` the frontend \
         Service, `kubectl create` the promo ConfigMap, `kubectl delete` loadgenerator; then the API \
         server compacts its history and every watch gets 410 Gone, and while the recorder \
         relists, frontend-config changes (the test makes this one change through the \
         simulator's own API, as manager `krply-sim`, so that it lands inside the gap for sure); \
         then `kubectl scale` frontend back to 2. The recorder was stopped with Ctrl-C.\n\n\
         ## What happened, in order\n\n\
         `log` is the first question: one line per change, oldest first, the gap where it \
         fell. The change made inside the gap is a `RELIST` line with the stretch it happened \
         in: the journal does not know when it happened, and says so.",
    );
    let since = before.to_string();
    let until_s = until.to_string();
    let run = |t: &mut Transcript, shown: &str, args: &[&str], code: i32| {
        let out = env.run(args);
        assert_eq!(out.code, Some(code), "{args:?}: {}", out.stderr);
        t.shell(shown, &format!("{}{}", out.stdout, out.stderr));
        out
    };
    let log = run(
        &mut t,
        &format!("kubectl krply log -n shop --since {since} --until {until_s}"),
        &["log", "--since", &since, "--until", &until_s],
        0,
    );
    assert!(
        log.stdout
            .lines()
            .any(|l| l.contains("RELIST    ConfigMap frontend-config  between ")),
        "{}",
        log.stdout
    );
    t.say(
        "## What changed, object by object\n\n\
         `diff` compares the two ends of the window field by field, with the manager that owns \
         each field. It warns on stderr that the window has a hole.",
    );
    let diff = run(
        &mut t,
        &format!("kubectl krply diff -n shop --since {since} --until {until_s}"),
        &["diff", "--since", &since, "--until", &until_s],
        0,
    );
    assert!(
        diff.stdout.contains("changed at an unknown time between"),
        "{}",
        diff.stdout
    );
    t.say("## One object's versions\n\n`timeline` lists every version of frontend, with the gap.");
    run(
        &mut t,
        "kubectl krply timeline deploy/frontend -n shop",
        &["timeline", "deploy/frontend"],
        0,
    );
    t.say(
        "## The object as it was\n\n`get --at` prints frontend as recorded before the gap \
         (without managedFields, as kubectl does).",
    );
    let at = mid.to_string();
    run(
        &mut t,
        &format!("kubectl krply get deploy/frontend -n shop --at {at}"),
        &["get", "deploy/frontend", "--at", &at],
        0,
    );
    t.say(
        "## Asked by an assistant\n\n\
         An AI assistant asks the same journal through `kubectl krply mcp` ([mcp.md](mcp.md)), \
         here with the official MCP Python SDK's stdio client. Each tool answers with the JSON \
         of the command it mirrors (`-o json`, `complete` and `warnings` included) and a summary \
         to quote, shown below: what the answer holds, what it lacks, and that the change a \
         relist found has no known time.",
    );
    let calls = serde_json::json!([
        {"tool": "diff", "arguments": {"since": since, "until": until_s}},
        {"tool": "timeline", "arguments": {"object": "cm/frontend-config"}},
        {"tool": "get_at", "arguments": {"object": "deploy/frontend", "at": at}},
        {"tool": "coverage", "arguments": {}},
    ]);
    let asked = crate::mcp::ask(&env.store, &["-n", "shop"], &calls);
    for (call, result) in calls
        .as_array()
        .unwrap()
        .iter()
        .zip(asked["calls"].as_array().unwrap())
    {
        assert_eq!(result["is_error"], false, "{result}");
        let summary = result["texts"][0].as_str().unwrap();
        t.exchange(
            &format!("{} {}", call["tool"].as_str().unwrap(), call["arguments"]),
            summary,
        );
    }
    let diff_summary = asked["calls"][0]["texts"][0].as_str().unwrap();
    assert!(
        diff_summary.contains("INCOMPLETE") && diff_summary.contains("found by a relist"),
        "{diff_summary}"
    );
    t.say(
        "## Rebuilding the namespace as it was\n\n\
         `replay plan` rebuilds the namespace before the incident into a test namespace and \
         checks each object with a server-side-apply dry run. `--create-namespace` makes the \
         test namespace first (and nothing else), so every object is really checked; nothing \
         else is written until `apply --confirm`.",
    );
    let plan = run(
        &mut t,
        &format!(
            "kubectl krply replay plan -n shop --at {since} --to-namespace shop-before --create-namespace"
        ),
        &[
            "replay",
            "plan",
            "--at",
            &since,
            "--to-namespace",
            "shop-before",
            "--create-namespace",
        ],
        0,
    );
    let id = Regex::new(r"Plan ([0-9a-f]{8})")
        .unwrap()
        .captures(&plan.stdout)
        .unwrap_or_else(|| panic!("{}", plan.stdout))[1]
        .to_string();
    run(
        &mut t,
        &format!("kubectl krply replay apply {id} --confirm"),
        &["replay", "apply", &id, "--confirm"],
        0,
    );
    assert!(
        env.sim
            .get(
                "apps/v1",
                "Deployment",
                Some("shop-before"),
                "loadgenerator"
            )
            .is_some(),
        "the deleted Deployment is back in the test namespace"
    );

    // What the commands print (the prose is Markdown paragraphs).
    let mut in_block = false;
    for line in t.text.lines() {
        if line.starts_with("```") {
            in_block = !in_block;
            continue;
        }
        assert!(
            !in_block || line.chars().count() <= 120,
            "wider than 120 columns: {line}"
        );
    }
    if std::env::var_os("KRPLY_UPDATE_TRANSCRIPT").is_some() {
        std::fs::write(DOC, &t.text).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(DOC).unwrap_or_default();
    let (want, got) = (normalize(&committed), normalize(&t.text));
    if want != got {
        let (want, got) = (want.join("\n"), got.join("\n"));
        let diff = similar::TextDiff::from_lines(&want, &got)
            .unified_diff()
            .header("docs/transcript.md", "printed now")
            .to_string();
        panic!(
            "docs/transcript.md is stale (KRPLY_UPDATE_TRANSCRIPT=1 cargo test transcript rewrites it):\n{diff}"
        );
    }
}
