//! The live display of `record` in a real terminal: tmux gives it a
//! pseudo-terminal, resizes it, and shows what is on the screen.

use crate::common::{self, Env};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// A tmux server of this test alone (its own socket), with one window.
struct Tmux {
    socket: PathBuf,
}

impl Tmux {
    fn cmd(&self, args: &[&str]) -> common::Output {
        let mut c = Command::new("tmux");
        c.arg("-S")
            .arg(&self.socket)
            .args(["-f", "/dev/null"])
            .args(args);
        common::run_bounded(c, &format!("tmux {args:?}"))
    }

    fn screen(&self) -> String {
        self.cmd(&["capture-pane", "-p", "-t", "rec"]).stdout
    }

    fn resize(&self, columns: u16) {
        let out = self.cmd(&["resize-window", "-t", "rec", "-x", &columns.to_string()]);
        assert_eq!(out.code, Some(0), "{out:?}");
    }

    /// Waits until the screen satisfies `check`; panics with the screen.
    fn wait(&self, what: &str, check: impl Fn(&str) -> bool) -> String {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let screen = self.screen();
            if check(&screen) {
                return screen;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "timed out waiting for {what}; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}

/// Rows showing a stream's live state (its spinner line, cut to the
/// terminal's width).
fn live_rows(screen: &str) -> usize {
    screen.lines().filter(|l| l.contains(" watching ")).count()
}

#[test]
fn the_live_display_survives_narrowing_and_widening_the_terminal() {
    let env = Env::shop();
    let tmux = Tmux {
        socket: env.dir.path().join("tmux.sock"),
    };
    // The recorder as the user runs it, in a 120x30 terminal.
    let inner = env.command();
    let mut line = vec!["env".to_string(), "-i".to_string()];
    for (k, v) in inner.get_envs() {
        if let Some(v) = v {
            line.push(format!("{}={}", k.to_string_lossy(), v.to_string_lossy()));
        }
    }
    line.push("TERM=xterm-256color".into());
    line.push(common::BIN.to_string());
    line.extend(["record", "cm", "deploy"].map(String::from));
    line.push(";".into());
    line.extend(["sleep", "120"].map(String::from));
    let shell = line
        .iter()
        .map(|w| {
            if w == ";" {
                w.clone()
            } else {
                format!("'{w}'")
            }
        })
        .collect::<Vec<_>>()
        .join(" ");
    let out = tmux.cmd(&[
        "new-session",
        "-d",
        "-s",
        "rec",
        "-x",
        "120",
        "-y",
        "30",
        &shell,
    ]);
    assert_eq!(out.code, Some(0), "{out:?}");
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
    let out = tmux.cmd(&["send-keys", "-t", "rec", "C-c"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let end = tmux.wait("the summary", |s| {
        s.contains("recorded ") && s.contains("event(s)")
    });
    assert_eq!(live_rows(&end), 0, "{end}");
}
