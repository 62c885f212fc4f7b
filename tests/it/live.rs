//! The live display of `record` in a real terminal: tmux gives it a
//! pseudo-terminal, resizes it, and shows what is on the screen.

use crate::common::Env;
use crate::common::tmux::Tmux;

/// Rows showing a stream's live state (its spinner line, cut to the
/// terminal's width).
fn live_rows(screen: &str) -> usize {
    screen.lines().filter(|l| l.contains(" watching ")).count()
}

#[test]
fn the_live_display_survives_narrowing_and_widening_the_terminal() {
    let env = Env::shop();
    // The recorder as the user runs it, in a 120x30 terminal.
    let tmux = Tmux::start(&env, (120, 30), &["record", "cm", "deploy"], "sleep 120");
    tmux.wait("two live rows", |s| {
        live_rows(s) == 2 && s.contains("watching")
    });

    let change = |i: u32| {
        env.patch_cm("frontend-config", "step", &i.to_string());
    };
    for i in 0..3 {
        change(i);
    }
    tmux.wait("the changes in the feed", |s| s.contains(r#""1" -> "2""#));

    // Narrower than the live rows: no stale copy of them stays on screen,
    // and the latest changes are still there.
    tmux.resize(60);
    let narrow = tmux.wait("a clean redraw at 60 columns", |s| {
        live_rows(s) == 2 && s.contains(r#""1" -> "2""#)
    });
    for row in narrow.lines() {
        assert!(row.chars().count() <= 60, "{narrow}");
    }
    change(3);
    tmux.wait("a change after narrowing", |s| {
        live_rows(s) == 2 && s.contains(r#""2" -> "3""#)
    });

    // Wider again: the change lines are not erased.
    tmux.resize(140);
    let wide = tmux.wait("a clean redraw at 140 columns", |s| {
        live_rows(s) == 2 && s.contains(r#""2" -> "3""#)
    });
    assert!(wide.contains(r#""1" -> "2""#), "{wide}");
    change(4);
    tmux.wait("a change after widening", |s| {
        live_rows(s) == 2 && s.contains(r#""3" -> "4""#) && s.contains(r#""2" -> "3""#)
    });

    // Ctrl-C: the summary, and no live row left above it.
    tmux.keys("C-c");
    let end = tmux.wait("the summary", |s| {
        s.contains("recorded ") && s.contains("event(s)")
    });
    assert_eq!(live_rows(&end), 0, "{end}");
}

/// What a line of `record`'s screen may be: empty, the header, an event
/// line (a time and a type), a line hanging under one (indented), a notice
/// or status line (a stream's name first), a warning, or the summary line.
/// Anything else is a fragment a terminal wrapped or a redraw left behind.
fn whole(line: &str, streams: &[&str]) -> bool {
    let event = line.len() > 9
        && line.as_bytes()[2] == b':'
        && line.as_bytes()[5] == b':'
        && ["ADDED ", "MODIFIED ", "DELETED ", "RELIST ", "GAP "]
            .iter()
            .any(|t| line[9..].starts_with(t));
    line.trim().is_empty()
        || event
        || (line.starts_with(' ') && !line.trim().is_empty())
        || line.starts_with("recording ")
        || line.starts_with("times shown in ")
        || line.starts_with("warning: ")
        || streams.iter().any(|s| line.starts_with(&format!("{s} ")))
        || (line.contains(" streams: ") && line.contains("events"))
}

fn garbled<'a>(screen: &'a str, streams: &[&str]) -> Vec<&'a str> {
    screen.lines().filter(|l| !whole(l, streams)).collect()
}

/// Changes at 20 a second while the terminal is resized twice: every line on
/// the screen stays whole (event, continuation or status line), at 80x24 and
/// at 120x40, and no spinner is ever drawn.
#[test]
fn the_live_display_never_garbles_under_churn_and_resizes() {
    const STREAMS: [&str; 2] = ["configmaps.v1@shop", "deployments.v1.apps@shop"];
    const CHANGES: u32 = 100;
    for (columns, rows) in [(80u16, 24u16), (120, 40)] {
        let env = Env::shop();
        let tmux = Tmux::start(
            &env,
            (columns, rows),
            &["record", "cm", "deploy"],
            "sleep 120",
        );
        tmux.wait("two live rows", |s| live_rows(s) == 2);
        let sim = env.sim.clone();
        // A long value, so that lines must go below their head at 80 columns.
        let churn = std::thread::spawn(move || {
            for i in 0..CHANGES {
                let value = format!("{i}-{}", "v".repeat(70));
                let _ = sim.patch_merge(
                    "v1",
                    "ConfigMap",
                    Some("shop"),
                    "frontend-config",
                    &serde_json::json!({"data": {"step": value}}),
                );
                // Pacing the load at 20 a second, not waiting for anything.
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        });
        // The screen while changes keep coming: each capture after the
        // change numbered `n` is on it.
        let after = |n: u32| {
            tmux.wait(&format!("change {n} in the feed"), |s| {
                s.contains(&format!("{n}-vvv")) && live_rows(s) == 2
            })
        };
        let mut screens = vec![after(5)];
        // A resize is the terminal's to reflow first; the display redraws
        // at its next tick, and from then on every screen is whole.
        for (k, w) in [(1u32, columns - 20), (2, columns + 20)] {
            tmux.resize(w);
            let settled = tmux.wait("a clean redraw after the resize", |s| {
                live_rows(s) == 2 && garbled(s, &STREAMS).is_empty()
            });
            let shown = (0..CHANGES)
                .rev()
                .find(|i| settled.contains(&format!("{i}-vvv")))
                .unwrap_or(0);
            screens.push(after((shown + 5 * k).min(CHANGES - 1)));
        }
        churn.join().unwrap();
        screens.push(after(CHANGES - 1));
        for screen in &screens {
            let bad = garbled(screen, &STREAMS);
            assert!(
                bad.is_empty(),
                "{columns}x{rows}: fragments {bad:?} in:\n{screen}"
            );
            assert!(
                !screen
                    .chars()
                    .any(|c| ('\u{2800}'..='\u{28ff}').contains(&c)),
                "a spinner:\n{screen}"
            );
        }
        tmux.keys("C-c");
        tmux.wait("the summary", |s| s.contains("event(s)"));
    }
}

/// With stderr not a terminal (and NO_COLOR, as every test sets), the same
/// lines come as plain lines, each whole and within 120 columns.
#[test]
fn plain_lines_are_whole_when_stderr_is_not_a_terminal() {
    const STREAMS: [&str; 2] = ["configmaps.v1@shop", "deployments.v1.apps@shop"];
    let env = Env::shop();
    let rec = env.start_recorder(&["cm", "deploy"]);
    env.wait_baselines(1);
    for i in 0..5u32 {
        env.patch_cm(
            "frontend-config",
            "step",
            &format!("{i}-{}", "v".repeat(150)),
        );
    }
    env.wait_events("configmaps.v1@shop", 5);
    let out = rec.stop();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let bad = garbled(&out.stderr, &STREAMS);
    assert!(bad.is_empty(), "fragments {bad:?} in:\n{}", out.stderr);
    assert!(
        out.stderr.lines().all(|l| l.chars().count() <= 120),
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains('\u{1b}'),
        "colour with NO_COLOR:\n{}",
        out.stderr
    );
}
