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

/// The controller writes frontend's status (a status-only change).
fn controller_writes_frontend_status(env: &Env) {
    let mut frontend = env.get_json("deploy/frontend", "shop");
    frontend["status"] = serde_json::json!({"replicas": 4, "observedGeneration": 9});
    env.sim
        .update_status_by(frontend, "kube-controller-manager")
        .unwrap();
}

/// `f` of the journal's history up to `until` and browse's rows of
/// namespace shop for `(since, until)`.
fn with_shop_rows<T>(
    env: &Env,
    (since, until): (i64, i64),
    f: impl FnOnce(&krply::history::History<'_>, &[krply::browse::app::ObjectLine]) -> T,
) -> T {
    let journal = krply::journal::Journal::open(&env.store).unwrap();
    let cluster = journal.clusters().unwrap()[0].id.clone();
    let history = krply::history::History::load(&journal, &cluster, until).unwrap();
    let scope = krply::history::Scope {
        namespace: Some("shop".into()),
        types: None,
    };
    let lines = krply::browse::source::objects(&history, &scope, since, until).unwrap();
    f(&history, &lines)
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
    controller_writes_frontend_status(&env);
    env.wait_events(DEPLOY, 3);
    let out = rec.stop();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let until = krply::time::Millis::now().as_ms();

    with_shop_rows(&env, (since, until), |history, lines| {
        let line = lines.iter().find(|l| l.name == "frontend").unwrap();
        // The status update is no change `log` lists (docs/browse.md): two.
        assert_eq!(line.changes, 2);
        let detail = krply::browse::source::detail(history, line, (since, until)).unwrap();
        assert_eq!(
            detail.manager.as_deref(),
            Some("kubectl-scale"),
            "{detail:?}"
        );
    });
}

/// A recorder restart lists every object as it was: the manager a row shows
/// is still found from the newest version back, past the restart's list,
/// and is what the whole timeline says: here a status update after the
/// restart leaves the scale before it as frontend's newest change, and every
/// row's newest change is the timeline's.
#[test]
fn the_manager_shown_after_a_recorder_restart_is_the_timelines() {
    let env = Env::shop();
    let rec = env.start_recorder(&["deploy"]);
    env.wait_baselines(1);
    let since = krply::time::Millis::now().as_ms();
    let mut frontend = env.get_json("deploy/frontend", "shop");
    frontend["spec"]["replicas"] = 4.into();
    env.sim.update_by(frontend, "kubectl-scale").unwrap();
    let mut cart = env.get_json("deploy/cartservice", "shop");
    cart["metadata"]["labels"]["team"] = "cart".into();
    env.sim.update_by(cart, "kubectl-label").unwrap();
    env.wait_events(DEPLOY, 2);
    let out = rec.stop();
    assert_eq!(out.code, Some(0), "{}", out.stderr);

    let rec = env.start_recorder(&["deploy"]);
    env.wait_baselines(2);
    controller_writes_frontend_status(&env);
    let mut cart = env.get_json("deploy/cartservice", "shop");
    cart["spec"]["replicas"] = 3.into();
    env.sim.update_by(cart, "kubectl-scale").unwrap();
    env.wait_events(DEPLOY, 4);
    let out = rec.stop();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let until = krply::time::Millis::now().as_ms();

    with_shop_rows(&env, (since, until), |history, lines| {
        let manager = |name: &str| {
            let line = lines.iter().find(|l| l.name == name).unwrap();
            krply::browse::source::detail(history, line, (since, until))
                .unwrap()
                .manager
        };
        assert_eq!(manager("frontend").as_deref(), Some("kubectl-scale"));
        assert_eq!(manager("cartservice").as_deref(), Some("kubectl-scale"));
        for line in lines {
            let tracked = krply::browse::source::tracked(history, line)
                .unwrap()
                .unwrap();
            let shown = history.last_change(&tracked, (since, until)).unwrap();
            let timeline = krply::browse::source::timeline(
                history,
                line,
                &krply::diff::DiffOptions::default(),
            )
            .unwrap()
            .unwrap();
            let newest = timeline.entries.into_iter().rev().find(|e| {
                e.kind != krply::history::timeline::EntryType::Gap
                    && e.observed_at > since
                    && e.observed_at <= until
                    && !e.fields.is_empty()
            });
            let key = |e: &krply::history::timeline::Entry| {
                (
                    e.observed_at,
                    e.resource_version.clone(),
                    krply::history::diff::managers(&e.fields),
                )
            };
            assert_eq!(
                shown.as_ref().map(key),
                newest.as_ref().map(key),
                "{}",
                line.name
            );
        }
    });
}

/// The list counts every object as `log` does where its count is read from
/// the heads of the records in one pass along them: windows that begin
/// before the journal, inside a zone (its records after the window's start
/// are found through the zone, the later ones by the pass), and after a
/// relist, over more records than several zones hold. `log` reads every
/// timeline, and the truth checker judges it against the server's writes.
#[test]
fn the_list_counts_as_log_does_across_zones_and_a_relist() {
    use krply::journal::Journal;
    use krply::model::WatchType;
    use serde_json::{Value, json};
    use std::collections::BTreeMap;

    const CLUSTER: &str = "zones-cluster";
    const NS: &str = "z";
    const OBJECTS: u64 = 150;
    const EVENTS: u64 = 3 * krply::journal::zones::ZONE_RECORDS as u64 + 1500;
    let deployment = |n: u64, replicas: u64, ready: u64, rv: u64| -> Value {
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": format!("d{n}"), "namespace": NS,
                         "uid": format!("uid-{n}-{}", replicas / 1000),
                         "resourceVersion": rv.to_string()},
            "spec": {"replicas": replicas % 1000},
            "status": {"readyReplicas": ready}
        })
    };

    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("journal.db");
    let (writer, tx, stream) = crate::common::library_writer(&store, CLUSTER, NS);
    let t0 = krply::time::Millis::now().as_ms() - 10 * 86_400_000;
    let (mut rv, mut at) = (100u64, t0);
    // Each object's (spec, status) while it exists; the spec's thousands
    // count its lives (a new uid each).
    let mut live: BTreeMap<u64, (u64, u64)> = (0..OBJECTS).map(|n| (n, (1, 0))).collect();
    let list = |live: &BTreeMap<u64, (u64, u64)>, at: i64, rv: u64| {
        let items: Vec<Value> = live
            .iter()
            .map(|(&n, &(spec, ready))| deployment(n, spec, ready, rv))
            .collect();
        crate::common::send_list(&tx, stream, NS, &items, (at, rv));
    };
    list(&live, at, rv);
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = |m: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % m
    };
    let mut times = vec![t0];
    for i in 0..EVENTS {
        rv += 1;
        at += 1000;
        times.push(at);
        let n = next(OBJECTS);
        if i == EVENTS / 2 {
            // A relist after a gap: some objects changed, some gone, one
            // new, none of it watched.
            for n in 0..OBJECTS / 10 {
                match n % 3 {
                    0 => {
                        live.remove(&n);
                    }
                    1 => {
                        live.entry(n).and_modify(|(spec, _)| *spec += 1);
                    }
                    _ => {
                        live.entry(n).or_insert((1, 0));
                    }
                }
            }
            list(&live, at, rv);
            continue;
        }
        let (watch_type, spec, ready) = match (live.get(&n).copied(), next(20)) {
            (None, _) => (WatchType::Added, next(50) * 1000 + 1000 + 1, 0),
            (Some((spec, ready)), 0) => (WatchType::Deleted, spec, ready),
            (Some((spec, ready)), 1..=12) => (WatchType::Modified, spec, ready + 1),
            (Some((spec, ready)), _) => (WatchType::Modified, spec + 1, ready),
        };
        let d = deployment(n, spec, ready, rv);
        if watch_type == WatchType::Deleted {
            live.remove(&n);
        } else {
            live.insert(n, (spec, ready));
        }
        crate::common::send_event(&tx, stream, NS, (watch_type, &d), at);
    }
    crate::common::stop_writer(writer, tx, stream, (at + 1000, rv));

    let journal = Journal::open(&store).unwrap();
    let zones = journal.zone_list().unwrap();
    assert!(zones.len() >= 4, "{} zones", zones.len());
    let history = krply::history::History::load(&journal, CLUSTER, at + 2000).unwrap();
    let scope = krply::history::Scope {
        namespace: Some(NS.into()),
        types: None,
    };
    // Windows from before the journal, from inside each zone and from just
    // before and after the relist, to several ends.
    let last = times.len() - 1;
    let mut starts: Vec<i64> = vec![t0 - 3_600_000, t0, times[EVENTS as usize / 2] - 1];
    starts.extend(zones.iter().map(|z| z.2 + 500));
    starts.extend((1..8).map(|k| times[last * k / 8] + 1));
    let ends = [at + 1000, times[last * 3 / 4], times[last / 2] + 1];
    let mut windows = 0;
    for &since in &starts {
        for &until in ends.iter().filter(|&&u| u > since) {
            let window = krply::time::TimeWindow::new(
                krply::time::Millis::from_ms(since),
                krply::time::Millis::from_ms(until),
            )
            .unwrap();
            let log = history
                .log(
                    &scope,
                    &Default::default(),
                    &window,
                    &krply::diff::DiffOptions::default(),
                )
                .unwrap();
            let mut want: BTreeMap<String, (bool, usize, i64, Option<String>)> = BTreeMap::new();
            for e in &log.entries {
                if e.kind == krply::history::log::LogType::Gap {
                    continue;
                }
                let w = want.entry(e.name.clone()).or_default();
                w.0 |= matches!(e.kind, krply::history::log::LogType::Relist(_));
                w.1 += 1;
                (w.2, w.3) = (e.observed_at, e.resource_version.clone());
            }
            let got: BTreeMap<String, (bool, usize, i64, Option<String>)> =
                krply::browse::source::objects(&history, &scope, since, until)
                    .unwrap()
                    .into_iter()
                    .map(|l| {
                        let rv = want
                            .get(&l.name)
                            .and_then(|w| w.3.as_ref())
                            .map(|_| l.last.resource_version.clone());
                        (l.name, (l.relist, l.changes, l.last.observed_at, rv))
                    })
                    .collect();
            assert_eq!(got, want, "window ({since}, {until}]");
            windows += 1;
        }
    }
    assert!(windows > 20, "{windows} windows");
}
