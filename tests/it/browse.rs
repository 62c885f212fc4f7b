//! `browse` driven in a real terminal (tmux): it opens on what the recorder
//! journaled, refreshes while the recorder writes, opens a timeline and a
//! diff, filters, quits, and leaves the terminal as it found it. And its
//! one-line exits: no journal, nothing recorded in scope, no terminal.

use crate::common::Env;
use crate::common::tmux::Tmux;

const DEPLOY: &str = "deployments.v1.apps@shop";

#[test]
fn browse_opens_follows_the_recorder_navigates_filters_and_restores_the_terminal() {
    let env = Env::shop();
    let rec = env.start_recorder(&["deploy", "cm"]);
    env.wait_baselines(1);
    env.scale("frontend", 3);
    env.wait_events(DEPLOY, 1);

    // `stty -a` after it quits: a restored terminal is back in canonical
    // mode with echo on.
    let tmux = Tmux::start(
        &env,
        (80, 24),
        &["browse"],
        "echo \"browse exited $?\"; stty -a; sleep 120",
    );
    let list = tmux.wait("the object list", |s| s.contains("frontend"));
    assert!(list.contains("Changed objects (1)"), "{list}");
    assert!(list.contains("deployments.apps"), "{list}");
    // Resized: drawn again at the new width, the streams pane 36 columns
    // wide from 120 on, 24 below.
    let streams_pane = |screen: &str, width: usize, pane: usize| {
        screen.lines().any(|l| {
            let chars: Vec<char> = l.chars().collect();
            l.starts_with("┌ Streams ") && chars.len() == width && chars.get(pane - 1) == Some(&'┐')
        })
    };
    tmux.resize(120);
    tmux.wait("a redraw at 120 columns", |s| streams_pane(s, 120, 36));
    tmux.resize(80);
    tmux.wait("a redraw at 80 columns", |s| streams_pane(s, 80, 24));

    // Live: a change the recorder journals now appears without a key.
    env.scale("cartservice", 2);
    env.wait_events(DEPLOY, 2);
    tmux.wait("cartservice after a refresh", |s| {
        s.contains("cartservice") && s.contains("Changed objects (2)")
    });

    // The selection stayed on frontend; the newest change is first:
    // cartservice. Its timeline, then the diff of its last version.
    tmux.keys("g");
    tmux.keys("Enter");
    let timeline = tmux.wait("the timeline", |s| {
        s.contains("Deployment shop/cartservice")
    });
    assert!(timeline.contains("BASELINE"), "{timeline}");
    assert!(timeline.contains("MODIFIED"), "{timeline}");
    tmux.keys("Enter");
    let diff = tmux.wait("the diff", |s| s.contains("spec.replicas"));
    assert!(diff.contains("~ spec.replicas: 1 -> 2"), "{diff}");
    tmux.keys("y");
    tmux.wait("the YAML", |s| s.contains("kind: Deployment"));
    tmux.keys("Escape");
    tmux.wait("back to the diff", |s| s.contains("~ spec.replicas"));
    tmux.keys("Escape");
    tmux.wait("back to the timeline", |s| s.contains("OBSERVED"));
    tmux.keys("Escape");
    tmux.wait("back to the list", |s| s.contains("Changed objects (2)"));

    // A filter.
    tmux.keys("/");
    tmux.keys("front");
    tmux.keys("Enter");
    let filtered = tmux.wait("the filtered list", |s| {
        s.contains("Changed objects (1) /front")
    });
    assert!(!filtered.contains("cartservice"), "{filtered}");

    // Help, then Ctrl-C (raw mode reads it as a key; `q` quits the same way,
    // see the unit tests).
    tmux.keys("?");
    tmux.wait("the help", |s| s.contains("Keys (Esc closes)"));
    tmux.keys("C-c");
    let end = tmux.wait("the shell after browse and stty", |s| {
        s.contains("browse exited") && s.contains("icanon")
    });
    assert!(end.contains("browse exited 0"), "{end}");
    let flags: Vec<&str> = end.split_whitespace().collect();
    assert!(
        flags.contains(&"icanon") && flags.contains(&"echo"),
        "{end}"
    );
    // The browser's screen is gone (the alternate screen was left).
    assert!(!end.contains("Changed objects"), "{end}");
    let out = rec.stop();
    assert_eq!(
        out.code,
        Some(0),
        "the recorder stops cleanly: {}",
        out.stderr
    );
}

#[test]
fn browse_says_in_one_line_why_it_cannot_open() {
    let env = Env::shop();
    // No journal.
    let out = env.run(&["browse"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(out.stderr.starts_with("error: no journal at "), "{out:?}");

    let rec = env.start_recorder(&["deploy"]);
    env.wait_baselines(1);
    let out = rec.stop();
    assert_eq!(
        out.code,
        Some(0),
        "the recorder stops cleanly: {}",
        out.stderr
    );
    // Nothing recorded in that namespace.
    let out = env.run(&["browse", "-n", "elsewhere"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert_eq!(
        out.stderr.lines().next().unwrap(),
        format!(
            "error: nothing recorded in namespace \"elsewhere\" of cluster {}",
            env.journal().clusters().unwrap()[0].id
        ),
        "{out:?}"
    );
    // stdout is not a terminal here.
    let out = env.run(&["browse"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert_eq!(
        out.stderr.lines().next().unwrap(),
        "error: browse needs a terminal, and stdout is not one",
        "{out:?}"
    );
    assert!(out.stdout.is_empty(), "{out:?}");
}

/// The MANAGER of a row is who made the newest change that is not
/// status-only: a label, then a scale followed by the controller's status
/// update shows the scale's manager (issue 28, bug 6), found from the
/// newest version back (the status update passed at its mark).
#[test]
fn the_manager_shown_is_that_of_the_newest_change_that_is_not_status_only() {
    let env = Env::shop();
    let rec = env.start_recorder(&["deploy"]);
    env.wait_baselines(1);
    let since = krply::time::Millis::now().as_ms();
    let mut frontend = env.get_json("deploy/frontend", "shop");
    frontend["metadata"]["labels"]["team"] = "web".into();
    env.sim.update_by(frontend, "kubectl-label").unwrap();
    env.wait_events(DEPLOY, 1);
    let mut frontend = env.get_json("deploy/frontend", "shop");
    frontend["spec"]["replicas"] = 4.into();
    env.sim.update_by(frontend, "kubectl-scale").unwrap();
    env.wait_events(DEPLOY, 2);
    let mut frontend = env.get_json("deploy/frontend", "shop");
    frontend["status"] = serde_json::json!({"replicas": 4, "observedGeneration": 9});
    env.sim
        .update_status_by(frontend, "kube-controller-manager")
        .unwrap();
    env.wait_events(DEPLOY, 3);
    let out = rec.stop();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let until = krply::time::Millis::now().as_ms();

    let journal = krply::journal::Journal::open(&env.store).unwrap();
    let cluster = journal.clusters().unwrap()[0].id.clone();
    let history = krply::history::History::load(&journal, &cluster, until).unwrap();
    let scope = krply::history::Scope {
        namespace: Some("shop".into()),
        types: None,
    };
    let lines = krply::browse::source::objects(&history, &scope, since, until).unwrap();
    let line = lines.iter().find(|l| l.name == "frontend").unwrap();
    // The status update is no change `log` lists (docs/browse.md): two.
    assert_eq!(line.changes, 2);
    let detail = krply::browse::source::detail(&history, line, (since, until)).unwrap();
    assert_eq!(
        detail.manager.as_deref(),
        Some("kubectl-scale"),
        "{detail:?}"
    );
}
