//! A real terminal for tests: a tmux server of one test alone (its own
//! socket) running `kubectl-krply` in one window, resized, typed into, and
//! read back as the screen shows it.

use super::{BIN, Output, Sandbox, run_bounded};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

pub struct Tmux {
    socket: PathBuf,
    session: String,
}

impl Tmux {
    /// Runs `kubectl-krply ARGS` with the sandbox's environment in a
    /// `columns`x`rows` terminal; then the shell line `then` (the window
    /// lives as long as it runs).
    pub fn start(sandbox: &Sandbox, size: (u16, u16), args: &[&str], then: &str) -> Tmux {
        let tmux = Tmux {
            socket: sandbox.dir.path().join("tmux.sock"),
            session: "t".into(),
        };
        let inner = sandbox.command();
        let mut words = vec!["env".to_string(), "-i".to_string()];
        for (k, v) in inner.get_envs() {
            if let Some(v) = v {
                words.push(format!("{}={}", k.to_string_lossy(), v.to_string_lossy()));
            }
        }
        words.push("TERM=xterm-256color".into());
        words.push(BIN.to_string());
        words.extend(args.iter().map(|a| a.to_string()));
        let mut shell = words
            .iter()
            .map(|w| format!("'{w}'"))
            .collect::<Vec<_>>()
            .join(" ");
        shell.push_str("; ");
        shell.push_str(then);
        let (x, y) = (size.0.to_string(), size.1.to_string());
        let out = tmux.cmd(&["new-session", "-d", "-s", "t", "-x", &x, "-y", &y, &shell]);
        assert_eq!(out.code, Some(0), "{out:?}");
        tmux
    }

    pub fn cmd(&self, args: &[&str]) -> Output {
        let mut c = Command::new("tmux");
        c.arg("-S")
            .arg(&self.socket)
            .args(["-f", "/dev/null"])
            .args(args);
        run_bounded(c, &format!("tmux {args:?}"))
    }

    pub fn screen(&self) -> String {
        self.cmd(&["capture-pane", "-p", "-t", &self.session])
            .stdout
    }

    pub fn resize(&self, columns: u16) {
        let out = self.cmd(&[
            "resize-window",
            "-t",
            &self.session,
            "-x",
            &columns.to_string(),
        ]);
        assert_eq!(out.code, Some(0), "{out:?}");
    }

    /// Types `keys` (tmux key names: `Enter`, `Escape`, `C-c`, or text).
    pub fn keys(&self, keys: &str) {
        let out = self.cmd(&["send-keys", "-t", &self.session, keys]);
        assert_eq!(out.code, Some(0), "{out:?}");
    }

    /// Waits until the screen satisfies `check`; panics with the screen.
    pub fn wait(&self, what: &str, check: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let screen = self.screen();
            if check(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
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
