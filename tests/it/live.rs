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
