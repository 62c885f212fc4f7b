//! A recorder left running for weeks (docs/consistency.md, "A silent
//! watch"): connections that die without closing.

use super::RealEnv;
use super::proxy::Proxy;
use krply::time::Millis;

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
    let proxy = Proxy::start(
        env.kube
            .ready
            .server
            .trim_start_matches("https://")
            .parse()
            .unwrap(),
    );
    env.route_through(&proxy.url());
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
