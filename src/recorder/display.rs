//! What `record` shows while it runs. On a terminal: a live line per stream
//! (state, events, last resourceVersion, gaps) under a feed of the changes being
//! recorded. Elsewhere: plain lines on stderr, one per notable thing.

use super::stream::{Notice, StreamStatus};
use crate::history::diff::{Field, fields_after};
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
    /// When it was observed.
    pub at: i64,
    pub event: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
    /// For a modification: what changed, old and new, and who owns it now.
    pub fields: Vec<Field>,
}

/// Feed lines fit this many columns.
pub const FEED_WIDTH: usize = 120;

impl FeedItem {
    /// `12:04:31Z MODIFIED deployment/frontend -n shop  spec.replicas: 1 -> 3  (kubectl-scale)`
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
        let head = format!("{} {:<8} {who}", clock(self.at), self.event);
        if self.fields.is_empty() {
            return head;
        }
        let room = FEED_WIDTH.saturating_sub(head.chars().count() + 2);
        match fields_after(&self.fields, room, 10, FEED_WIDTH) {
            below if below.starts_with('\n') => format!("{head}{below}"),
            inline => format!("{head}  {inline}"),
        }
    }
}

/// `HH:MM:SSZ` of a time, in UTC like every time krply prints.
pub fn clock(at: i64) -> String {
    let precise = clock_ms(at);
    match precise.get(..8) {
        Some(seconds) => format!("{seconds}Z"),
        None => precise,
    }
}

/// `HH:MM:SS.mmmZ` of a time, in UTC.
pub fn clock_ms(at: i64) -> String {
    let full = crate::time::Millis::from_ms(at).to_string();
    match full.split_once('T') {
        Some((_, rest)) => rest.to_string(),
        None => full,
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
        self.feed_line(&item.line());
    }

    /// A line of the feed (not shown with `--quiet`).
    pub fn feed_line(&self, line: &str) {
        if self.mode == Mode::Quiet {
            return;
        }
        self.line(line);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::{FieldChange, parse_path};
    use serde_json::json;

    #[test]
    fn a_feed_line_has_the_time_the_values_and_the_manager_within_the_width() {
        let item = FeedItem {
            at: 1_795_946_400_000,
            event: "MODIFIED".into(),
            kind: "Deployment".into(),
            namespace: "shop".into(),
            name: "productcatalogservice".into(),
            fields: vec![Field {
                change: FieldChange {
                    path: parse_path("spec.template.spec.containers[0].image").unwrap(),
                    before: Some(json!(
                        "us-central1-docker.pkg.dev/online-boutique-ci/microservices-demo/productcatalogservice:v0.10.6"
                    )),
                    after: Some(json!(
                        "us-central1-docker.pkg.dev/google-samples/microservices-demo/productcatalogservice:v0.10.7"
                    )),
                },
                manager: Some("helm".into()),
            }],
        };
        // Too long for the rest of the line: the field goes below it.
        let line = item.line();
        let (head, below) = line.split_once('\n').unwrap_or_else(|| panic!("{line}"));
        assert_eq!(
            head,
            "10:00:00Z MODIFIED deployment/productcatalogservice -n shop"
        );
        assert!(
            below.starts_with("          spec.template.spec.containers[0].image: "),
            "{below}"
        );
        assert!(below.ends_with("(helm)"), "{below}");
        assert!(
            below.contains("v0.10.6") && below.contains("v0.10.7"),
            "{below}"
        );
        // The registries, where the two differ, stay visible.
        assert!(
            below.contains("online-") && below.contains("google-"),
            "{below}"
        );
        assert!(below.chars().count() <= FEED_WIDTH, "{below}");
        let added = FeedItem {
            event: "ADDED".into(),
            fields: Vec::new(),
            ..item
        };
        assert_eq!(
            added.line(),
            "10:00:00Z ADDED    deployment/productcatalogservice -n shop"
        );
    }
}
