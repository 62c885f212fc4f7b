//! What `record` shows while it runs. On a terminal: a live line per stream
//! (state, events, last resourceVersion, gaps) under a feed of the changes being
//! recorded. Elsewhere: plain lines on stderr, one per notable thing.

use super::stream::{Notice, StreamStatus};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::Write;
use std::time::Duration;

/// How much to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Live display on a terminal.
    Live,
    /// Plain lines on stderr.
    Plain,
    /// Warnings only.
    Quiet,
}

impl Mode {
    /// Live on a terminal, plain lines elsewhere, warnings only with `--quiet`.
    pub fn for_stderr(quiet: bool) -> Mode {
        use std::io::IsTerminal;
        if quiet {
            Mode::Quiet
        } else if std::io::stderr().is_terminal() {
            Mode::Live
        } else {
            Mode::Plain
        }
    }
}

/// One recorded change for the feed.
#[derive(Debug, Clone)]
pub struct FeedItem {
    pub event: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub paths: Vec<String>,
}

impl FeedItem {
    pub fn line(&self) -> String {
        let who = if self.namespace.is_empty() {
            format!("{}/{}", self.kind.to_ascii_lowercase(), self.name)
        } else {
            format!(
                "{}/{} -n {}",
                self.kind.to_ascii_lowercase(),
                self.name,
                self.namespace
            )
        };
        let mut paths = self
            .paths
            .iter()
            .take(4)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ");
        if self.paths.len() > 4 {
            paths.push_str(&format!(", +{} more", self.paths.len() - 4));
        }
        if paths.is_empty() {
            format!("{:<8} {who}", self.event)
        } else {
            format!("{:<8} {who}: {paths}", self.event)
        }
    }
}

/// `watching               events      12  rv 4711         gaps 0`
fn progress_line(s: &StreamStatus) -> String {
    format!(
        "{:<22} events {:>7}  rv {:<12} gaps {}",
        s.phase.label(),
        s.events,
        if s.last_rv.is_empty() {
            "-"
        } else {
            &s.last_rv
        },
        s.gaps
    )
}

pub struct Display {
    mode: Mode,
    multi: Option<MultiProgress>,
    bars: Vec<ProgressBar>,
    width: usize,
}

impl Display {
    pub fn new(mode: Mode, streams: &[String]) -> Display {
        let width = streams.iter().map(|s| s.len()).max().unwrap_or(10);
        if mode != Mode::Live {
            return Display {
                mode,
                multi: None,
                bars: Vec::new(),
                width,
            };
        }
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr_with_hz(8));
        let style = ProgressStyle::with_template("{spinner:.cyan} {prefix} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        let bars = streams
            .iter()
            .map(|name| {
                let bar = multi.add(ProgressBar::new_spinner());
                bar.set_style(style.clone());
                bar.set_prefix(format!("{name:<width$}"));
                bar.enable_steady_tick(Duration::from_millis(120));
                bar
            })
            .collect();
        Display {
            mode,
            multi: Some(multi),
            bars,
            width,
        }
    }

    /// Shows the streams' current state.
    pub fn refresh(&self, statuses: &[StreamStatus]) {
        for (bar, s) in self.bars.iter().zip(statuses) {
            bar.set_message(progress_line(s));
        }
    }

    pub fn notice(&self, n: &Notice) {
        if self.mode == Mode::Quiet && !n.warning {
            return;
        }
        let prefix = if n.warning { "warning: " } else { "" };
        self.line(&format!(
            "{prefix}{:<w$}  {}",
            n.stream,
            n.text,
            w = self.width
        ));
    }

    pub fn feed(&self, item: &FeedItem) {
        if self.mode == Mode::Quiet {
            return;
        }
        self.line(&item.line());
    }

    /// A line above the live display, or on stderr.
    pub fn line(&self, text: &str) {
        match &self.multi {
            Some(m) => {
                let _ = m.println(text);
            }
            None => {
                let _ = writeln!(std::io::stderr(), "{text}");
            }
        }
    }

    pub fn finish(&self, statuses: &[StreamStatus]) {
        self.refresh(statuses);
        for (bar, s) in self.bars.iter().zip(statuses) {
            bar.finish_with_message(progress_line(s));
        }
        if let Some(m) = &self.multi {
            let _ = m.clear();
        }
    }
}
