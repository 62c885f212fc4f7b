//! A recorder left running for weeks (docs/consistency.md, "A silent
//! watch"): connections that die without closing.

use super::RealEnv;
use krply::time::Millis;
use std::time::Duration;

/// A proxy stops forwarding the recorder's watch without closing it, the way
/// a NAT or a load balancer that forgot the connection does. The recorder
/// hears nothing more, takes the watch for dead a tenth past its timeout,
/// and records a gap from its last word from the server, even over the
/// heartbeats it wrote meanwhile, then relists through a new connection:
/// the change made while it was deaf is found by the relist, and nothing
/// inside the gap is answered as complete.
#[test]
fn a_watch_that_goes_silent_without_closing_is_a_gap_from_its_last_word_then_a_relist() {
    const NS: &str = "silent";
    let mut env = RealEnv::new(NS);
    env.create_namespace(NS);
    env.kubectl_ok(&["create", "serviceaccount", "robot"]);
    let proxy = env.behind_proxy();
    // ServiceAccounts come from the watch cache: a watch resumed after its
    // timeout is served from there, never a 410 (etcd compacts every 30 s).
    let recorder = env.start_recorder(&[
        "serviceaccounts",
        "--watch-timeout",
        "6s",
        "--request-timeout",
        "5s",
    ]);
    env.wait_baselines(1);
    let sa = format!("serviceaccounts.v1@{NS}");
    env.kubectl_ok(&["label", "serviceaccount/robot", "v=2"]);
    env.wait_journaled(&sa, NS, "serviceaccount/robot");

    let stalled_at = Millis::now().as_ms();
    proxy.stall();
    env.kubectl_ok(&["label", "--overwrite", "serviceaccount/robot", "v=3"]);
    let deaf_at = Millis::now().as_ms();
    let relisted = || crate::common::baselines(&env.journal(), &env.stream(&sa)) >= 2;
    let waited = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        env.wait_real(
            "the recorder to take its watch for dead and relist",
            relisted,
        )
    }));
    if waited.is_err() {
        panic!(
            "the recorder did not relist ({} connections through the proxy); it said:\n{}",
            proxy.accepted(),
            recorder.log_text()
        );
    }
    let relisted_at = Millis::now().as_ms();
    // Within the bound: 6 s and a tenth (at least 2 s) past the last word,
    // plus the relist, on a busy machine.
    assert!(
        relisted_at - stalled_at < 30_000,
        "noticed {} ms after the stall",
        relisted_at - stalled_at
    );
    env.kubectl_ok(&["label", "--overwrite", "serviceaccount/robot", "v=4"]);
    env.wait_journaled(&sa, NS, "serviceaccount/robot");
    let stopped = recorder.stop();
    assert_eq!(stopped.code, Some(0), "{stopped:?}");
    assert!(
        stopped.stderr.contains("no word from the server for 8s"),
        "the recorder says why it relisted:\n{}",
        stopped.stderr
    );

    // One gap, from no later than the stall (its last word), closed by the
    // relist.
    let coverage = env.coverage(&sa);
    assert_eq!(coverage.windows.len(), 1, "{coverage:?}");
    let gap = &coverage.windows[0];
    assert!(
        gap.from <= stalled_at,
        "{gap:?} starts after the stall at {stalled_at}"
    );
    assert!(
        gap.reason
            .contains("a connection that died without closing"),
        "{gap:?}"
    );
    let closed = gap.to.expect("the relist closed it");
    assert!(closed >= deaf_at, "{gap:?}");

    // The change made while the recorder was deaf: found by the relist,
    // between the gap's start and the list.
    let timeline = env.krply_json(&["timeline", "serviceaccount/robot"], 0);
    let entries = timeline["entries"].as_array().unwrap();
    let found = entries
        .iter()
        .find(|e| e["observed"] == "relist")
        .unwrap_or_else(|| panic!("no relist-found entry:\n{timeline:#}"));
    assert_eq!(
        found["between"]["from"],
        Millis::from_ms(gap.from).to_string(),
        "{timeline:#}"
    );
    assert_eq!(timeline["complete"], false, "{timeline:#}");

    // Inside the gap, nothing is answered as complete; after it, the state
    // is known again.
    let inside = Millis::from_ms(deaf_at).to_string();
    let at = env.run(&["get", "serviceaccount/robot", "--at", &inside, "--strict"]);
    assert_eq!(at.code, Some(3), "{at:?}");
    assert!(at.stderr.contains("warning:"), "{at:?}");
    let now = env.krply_json(&["get", "serviceaccount/robot"], 0);
    assert_eq!(now["metadata"]["labels"]["v"], "4", "{now:#}");
}

/// Labels `serviceaccount/robot` with `v=VALUE`; the resourceVersion the
/// server gave.
fn label_robot(env: &RealEnv, value: impl std::fmt::Display) -> String {
    written_rv(
        env,
        &[
            "label",
            "--overwrite",
            "serviceaccount/robot",
            &format!("v={value}"),
        ],
    )
}

/// The resourceVersion kubectl's write answered with.
fn written_rv(env: &RealEnv, args: &[&str]) -> String {
    let mut full = args.to_vec();
    full.extend(["-o", "jsonpath={.metadata.resourceVersion}"]);
    env.kubectl_ok(&full).trim().to_string()
}

/// Every resourceVersion the journal holds for `what`, from its timeline.
fn journaled_rvs(env: &RealEnv, what: &str) -> Vec<String> {
    let timeline = env.krply_json(&["timeline", what], 0);
    timeline["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["resource_version"].as_str().map(str::to_string))
        .collect()
}

/// kube-apiserver restarts under a running recorder, on the same etcd: once
/// quickly, once down for longer than a stream may be away and still resume
/// (10 s). The recorder never exits; after the quick restart it resumes (or,
/// if the new server's watch cache cannot serve its resourceVersion, records
/// a 410 gap and relists); after the long one it resumes too, and records a
/// gap saying how long it was not connected only if the server replays
/// something it missed (nothing can be written while the server is down).
/// Judged against the API server's audit log: every write the server
/// answered is in the journal, and none the journal holds as watched is
/// stamped more than 10 s after the server made it.
#[test]
fn a_recorder_rides_through_kube_apiserver_restarts() {
    const NS: &str = "restart";
    let kube = super::RealKube::private("restart", &[]);
    let env = RealEnv::on(kube, NS);
    env.create_namespace(NS);
    env.kubectl_ok(&["create", "serviceaccount", "robot"]);
    let recorder = env.start_recorder(&["serviceaccounts"]);
    env.wait_baselines(1);
    let sa = format!("serviceaccounts.v1@{NS}");
    let label = |v: &str| label_robot(&env, v);
    let mut written = vec![label("1")];
    env.wait_journaled(&sa, NS, "serviceaccount/robot");

    kube.restart_apiserver(Duration::ZERO);
    written.push(label("2"));
    env.wait_real("the write after the quick restart to be journaled", || {
        journaled_rvs(&env, "serviceaccount/robot").contains(written.last().unwrap())
    });

    kube.restart_apiserver(Duration::from_secs(12));
    written.push(label("3"));
    env.wait_real("the write after the long restart to be journaled", || {
        journaled_rvs(&env, "serviceaccount/robot").contains(written.last().unwrap())
    });
    let stopped = recorder.stop();
    assert_eq!(stopped.code, Some(0), "{stopped:?}");

    let journaled = journaled_rvs(&env, "serviceaccount/robot");
    for rv in &written {
        assert!(journaled.contains(rv), "{rv} missing from {journaled:?}");
    }
    // Every gap says why.
    let coverage = env.coverage(&sa);
    for gap in &coverage.windows {
        assert!(
            [
                "not connected for",
                "410",
                "behind the server",
                "replayed changes"
            ]
            .iter()
            .any(|why| gap.reason.contains(why)),
            "{gap:?}"
        );
    }
    // Every watched version stamped within the bound of the server's time.
    let audited = audited_writes(&env, NS, "robot");
    let timeline = env.krply_json(&["timeline", "serviceaccount/robot"], 0);
    let mut judged = 0;
    for e in timeline["entries"].as_array().unwrap() {
        let rv = e["resource_version"].as_str().unwrap_or_default();
        let Some((made, _)) = audited.iter().find(|(_, r)| r == rv) else {
            continue;
        };
        if e["observed"] != "watch" {
            continue;
        }
        judged += 1;
        let stamped = Millis::parse_rfc3339(e["observed_at"].as_str().unwrap())
            .unwrap()
            .as_ms();
        assert!(
            (-50..10_000).contains(&(stamped - made)),
            "rv {rv} made at {made}, stamped {} ms later: {e}\n{}",
            stamped - made,
            stopped.stderr
        );
    }
    assert!(judged >= 1, "{judged} watched writes judged: {timeline}");
    let restarts = std::fs::read_to_string(&kube.ready.restarts_file).unwrap();
    assert_eq!(restarts.trim(), "2");
    kube.stop();
}

/// The recorder's credentials come from an exec plugin whose tokens live 20 s
/// (a webhook token authenticator in `realkube` refuses them after that).
/// It refreshes them and goes on watching across several expiries with no
/// gap. Then the plugin fails (`SSO session expired`): the recorder stays up,
/// says the plugin's own words and a hint, and once the plugin works again
/// it resumes by itself, with a gap that names the failure and a relist
/// that finds what changed meanwhile.
#[test]
fn expiring_credentials_are_refreshed_and_a_failing_plugin_is_a_gap_not_an_exit() {
    const NS: &str = "tokens";
    let env = RealEnv::new(NS);
    env.create_namespace(NS);
    env.kubectl_ok(&["create", "serviceaccount", "robot"]);
    let ready = &env.kube.ready;
    let _ = std::fs::remove_file(&ready.token_fail_file);
    let minted = || {
        std::fs::read_to_string(&ready.tokens_minted_file)
            .unwrap_or_default()
            .lines()
            .count()
    };
    // Watches renewed every 5 s: each renewal needs a valid token.
    let recorder = env.start_recorder(&[
        "serviceaccounts",
        "--context",
        "expiring",
        "--watch-timeout",
        "5s",
    ]);
    env.wait_baselines(1);
    let sa = format!("serviceaccounts.v1@{NS}");
    let label = |v: usize| label_robot(&env, v);
    // A change under each of three new tokens.
    for v in 1..=3 {
        let before = minted();
        env.wait_real("the recorder to refresh its token", || minted() > before);
        let rv = label(v);
        env.wait_real("the change to be journaled", || {
            journaled_rvs(&env, "serviceaccount/robot").contains(&rv)
        });
    }
    assert_eq!(
        env.coverage(&sa).windows.len(),
        0,
        "{}",
        recorder.log_text()
    );

    std::fs::write(&ready.token_fail_file, "error: SSO session expired\n").unwrap();
    env.wait_real("the recorder to meet the failing plugin", || {
        recorder.log_text().contains("SSO session expired")
    });
    let during = label(1_000);
    // The outage itself is what is tested: longer than a stream may be away
    // and still resume.
    let failing_since = std::time::Instant::now();
    env.wait_real("the outage to outlast 10 s", || {
        failing_since.elapsed() > Duration::from_secs(11)
    });
    std::fs::remove_file(&ready.token_fail_file).unwrap();
    env.wait_real("a relist once the plugin works again", || {
        crate::common::baselines(&env.journal(), &env.stream(&sa)) >= 2
    });
    let after = label(1_001);
    env.wait_real("the change after the outage to be journaled", || {
        journaled_rvs(&env, "serviceaccount/robot").contains(&after)
    });
    let stopped = recorder.stop();
    assert_eq!(stopped.code, Some(0), "{stopped:?}");
    assert!(
        stopped
            .stderr
            .contains("hint: the credential plugin of user"),
        "{}",
        stopped.stderr
    );
    let coverage = env.coverage(&sa);
    assert_eq!(
        coverage.windows.len(),
        1,
        "{coverage:?}\n{}",
        stopped.stderr
    );
    assert!(
        coverage.windows[0]
            .reason
            .contains("credential plugin failed: error: SSO session expired"),
        "{coverage:?}"
    );
    assert!(journaled_rvs(&env, "serviceaccount/robot").contains(&during));
}

/// A write to `robot` as the server's audit log has it: when the server
/// answered (ms) and the resourceVersion it gave.
fn audited_writes(env: &RealEnv, ns: &str, name: &str) -> Vec<(i64, String)> {
    env.kube
        .ready
        .audited_writes()
        .into_iter()
        .filter(|w| {
            w.resource == "serviceaccounts" && w.namespace.as_deref() == Some(ns) && w.name == name
        })
        .filter_map(|w| Some((w.at, w.resource_version?)))
        .collect()
}

/// SIGSTOP for 40 s under churn (about five writes a second), the way a
/// closed lid freezes the recorder, then SIGCONT. Judged against the API
/// server's own audit log: every event the journal holds as watched is
/// stamped within the stated bound (2 s) of when the server made it, and
/// every `get --at T` is either the version the server had at T or says it
/// is not complete; inside the freeze, never complete.
#[test]
fn a_recorder_frozen_40s_under_churn_answers_right_or_incomplete() {
    const NS: &str = "frozen";
    let env = RealEnv::new(NS);
    env.create_namespace(NS);
    env.kubectl_ok(&["create", "serviceaccount", "robot"]);
    let recorder = env.start_recorder(&["serviceaccounts"]);
    env.wait_baselines(1);
    let sa = format!("serviceaccounts.v1@{NS}");

    // Churn on a thread of its own, until told to stop (and bounded).
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let churn = {
        let stop = stop.clone();
        let kubectl = super::kubectl_bin();
        let kubeconfig = env.kubeconfig.clone();
        std::thread::spawn(move || {
            let mut i = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) && i < 2_000 {
                i += 1;
                let _ = std::process::Command::new(&kubectl)
                    .env("KUBECONFIG", &kubeconfig)
                    .args(["-n", NS, "label", "--overwrite", "serviceaccount/robot"])
                    .arg(format!("v={i}"))
                    .output();
            }
            i
        })
    };
    let churned_from = Millis::now().as_ms();
    env.wait_real("some churn watched", || {
        journaled_rvs(&env, "serviceaccount/robot").len() > 25
    });
    let frozen_at = Millis::now().as_ms();
    recorder.freeze();
    // The freeze itself is what is tested: its length is the point.
    let frozen = std::time::Instant::now();
    env.wait_real("40 s of freeze", || {
        frozen.elapsed() >= Duration::from_secs(40)
    });
    recorder.signal("CONT");
    let thawed_at = Millis::now().as_ms();
    env.wait_real("the relist after the thaw", || {
        crate::common::baselines(&env.journal(), &env.stream(&sa)) >= 2
    });
    let relisted_at = Millis::now().as_ms();
    let after = journaled_rvs(&env, "serviceaccount/robot").len();
    env.wait_real("churn watched again", || {
        journaled_rvs(&env, "serviceaccount/robot").len() > after + 25
    });
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let writes = churn.join().unwrap();
    let last = label_robot(&env, "end");
    env.wait_real("the last write journaled", || {
        journaled_rvs(&env, "serviceaccount/robot").contains(&last)
    });
    let churned_to = Millis::now().as_ms();
    let stopped = recorder.stop();
    assert_eq!(stopped.code, Some(0), "{stopped:?}");
    assert!(stopped.stderr.contains("frozen for"), "{}", stopped.stderr);

    let audited = audited_writes(&env, NS, "robot");
    assert!(
        audited.len() as u32 >= writes / 2,
        "{} audited of {writes}",
        audited.len()
    );
    let made_at = |rv: &str| audited.iter().find(|(_, r)| r == rv).map(|(t, _)| *t);

    // Every watched event stamped within the bound of the server's own time.
    let timeline = env.krply_json(&["timeline", "serviceaccount/robot"], 0);
    let mut late_max = 0;
    for e in timeline["entries"].as_array().unwrap() {
        if e["observed"] != "watch" {
            continue;
        }
        let rv = e["resource_version"].as_str().unwrap();
        let Some(made) = made_at(rv) else { continue };
        let stamped = Millis::parse_rfc3339(e["observed_at"].as_str().unwrap())
            .unwrap()
            .as_ms();
        let late = stamped - made;
        late_max = late_max.max(late);
        assert!(
            (-50..2_000).contains(&late),
            "rv {rv} made at {made}, stamped {late} ms later: {e}"
        );
    }

    // get --at at 36 moments, a third before the freeze, a third inside it
    // and a third after the relist: the server's version then, or
    // incomplete.
    let truth_at = |t: i64| {
        audited
            .iter()
            .rfind(|(at, _)| *at <= t)
            .map(|(_, rv)| rv.clone())
    };
    let (mut right, mut incomplete, mut frozen_incomplete) = (0, 0, 0);
    let stretches = [
        (churned_from, frozen_at),
        (frozen_at, thawed_at),
        (relisted_at, churned_to),
    ];
    let moments = stretches
        .iter()
        .flat_map(|&(a, b)| (0..12).map(move |k| a + (b - a) * k / 12 + 1));
    for t in moments {
        let out = env.run(&[
            "get",
            "serviceaccount/robot",
            "--at",
            &Millis::from_ms(t).to_string(),
            "--strict",
            "-o",
            "json",
        ]);
        match out.code {
            Some(0) => {
                let got: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
                let got = got["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap()
                    .to_string();
                // A write made in the last moments before T may be stamped
                // after it (at most the lateness seen above).
                let acceptable: Vec<Option<String>> = (0..=late_max.max(0))
                    .step_by(1)
                    .map(|back| truth_at(t - back))
                    .collect();
                assert!(
                    acceptable.contains(&Some(got.clone())),
                    "get --at {t} is complete with rv {got}; the server had {:?}",
                    truth_at(t)
                );
                right += 1;
            }
            Some(3) => {
                incomplete += 1;
                if t > frozen_at + 100 && t < thawed_at {
                    frozen_incomplete += 1;
                }
            }
            other => panic!("get --at {t}: {other:?} {}", out.stderr),
        }
        assert!(
            !(t > frozen_at + 100 && t < thawed_at && out.code == Some(0)),
            "get --at {t}, inside the freeze, is complete"
        );
    }
    assert!(
        frozen_incomplete >= 11,
        "{frozen_incomplete} moments inside the freeze"
    );
    assert!(
        right >= 12,
        "only {right} complete answers outside the freeze"
    );
    crate::real::announce(&format!(
        "freeze 40s under churn: {writes} writes, {} audited; watched events stamped at most \
         {late_max} ms late; get --at: {right} right, {incomplete} incomplete ({frozen_incomplete} \
         inside the freeze), 0 wrong",
        audited.len()
    ));
}
