//! What `record` shows while it runs. On a terminal: a live line per stream
//! (state, events, last resourceVersion, gaps) under a feed of the changes being
//! recorded. Elsewhere: plain lines on stderr, one per notable thing. The
//! lines themselves are `render::record`'s; this draws them.

use super::rules::Notice;
use super::stream::StreamStatus;
use crate::render::fields::shorten;
use crate::render::record::{self, FEED_WIDTH, FeedItem, wrap};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle, TermLike};
use std::collections::VecDeque;
use std::io::Write;
use std::sync::Mutex;

/// The terminal's (rows, columns) on stderr, if it is one.
fn terminal_size() -> Option<(u16, u16)> {
    console::Term::stderr().size_checked()
}

/// stderr as indicatif draws on it, two columns narrower than it is.
/// indicatif pads every row to the width it is told and leaves the cursor
/// after it: at the true width, that is the terminal's pending-wrap column,
/// and the `^C` a terminal echoes on Ctrl-C wraps onto a new line, so the
/// final clear starts one row too low and leaves a stale row. Two spare
/// columns take the echo in place.
#[derive(Debug)]
struct Margin(console::Term);

/// Columns kept free at the right of the live area.
const MARGIN: u16 = 2;

impl TermLike for Margin {
    fn width(&self) -> u16 {
        self.0.size().1.saturating_sub(MARGIN).max(20)
    }
    fn height(&self) -> u16 {
        self.0.size().0
    }
    fn move_cursor_up(&self, n: usize) -> std::io::Result<()> {
        self.0.move_cursor_up(n)
    }
    fn move_cursor_down(&self, n: usize) -> std::io::Result<()> {
        self.0.move_cursor_down(n)
    }
    fn move_cursor_right(&self, n: usize) -> std::io::Result<()> {
        self.0.move_cursor_right(n)
    }
    fn move_cursor_left(&self, n: usize) -> std::io::Result<()> {
        self.0.move_cursor_left(n)
    }
    fn write_line(&self, s: &str) -> std::io::Result<()> {
        self.0.write_line(s)
    }
    fn write_str(&self, s: &str) -> std::io::Result<()> {
        self.0.write_str(s)
    }
    fn clear_line(&self) -> std::io::Result<()> {
        self.0.clear_line()
    }
    fn flush(&self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// Where the live area draws: stderr, with the margin, at most 8 times a second.
fn live_target() -> ProgressDrawTarget {
    ProgressDrawTarget::term_like_with_hz(Box::new(Margin(console::Term::stderr())), 8)
}

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

/// A stream's live line, from its status.
fn progress_line(s: &StreamStatus) -> String {
    record::progress_line(&s.phase.label(), s.events, &s.last_rv, s.gaps)
}

pub struct Display {
    mode: Mode,
    multi: Option<MultiProgress>,
    bars: Vec<ProgressBar>,
    width: usize,
    screen: Mutex<Screen>,
}

/// What the live display knows of the terminal: its size at the last draw,
/// and the latest lines printed above the live area (to redraw them after a
/// resize).
#[derive(Default)]
struct Screen {
    size: Option<(u16, u16)>,
    recent: VecDeque<String>,
}

/// Lines kept to redraw the screen after a resize.
const RECENT_LINES: usize = 200;

/// A resize is decided from the old and new sizes alone: the rows the live
/// area drew may have been rewrapped by the terminal (or not, depending on
/// the terminal), so no cursor arithmetic can find them; the screen is
/// cleared and drawn again.
fn resized(before: Option<(u16, u16)>, now: Option<(u16, u16)>) -> bool {
    matches!((before, now), (Some(b), Some(n)) if b != n)
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
                screen: Mutex::default(),
            };
        }
        let multi = MultiProgress::with_draw_target(live_target());
        let style = ProgressStyle::with_template("{spinner:.cyan} {prefix} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        let bars = streams
            .iter()
            .map(|name| {
                let bar = multi.add(ProgressBar::new_spinner());
                bar.set_style(style.clone());
                bar.set_prefix(format!("{name:<width$}"));
                // No ticker thread: every draw happens on the recorder's own
                // refresh, so none can race a resize redraw or the final clear.
                bar
            })
            .collect();
        Display {
            mode,
            multi: Some(multi),
            bars,
            width,
            screen: Mutex::new(Screen {
                size: terminal_size(),
                recent: VecDeque::new(),
            }),
        }
    }

    /// Shows the streams' current state, each line within the terminal's
    /// width so that no line of the live area wraps.
    pub fn refresh(&self, statuses: &[StreamStatus]) {
        let columns = self
            .check_resize()
            .map_or(usize::MAX, |(_, c)| usize::from(c));
        // The spinner, a space, the stream name and a space come first.
        let room = columns
            .saturating_sub(self.width + 3 + usize::from(MARGIN))
            .max(1);
        for (bar, s) in self.bars.iter().zip(statuses) {
            bar.set_message(shorten(&progress_line(s), room.saturating_sub(1)));
            bar.tick();
        }
    }

    /// After a resize, clears the screen and draws it again: the latest
    /// lines, then the live area. Returns the terminal's (rows, columns).
    fn check_resize(&self) -> Option<(u16, u16)> {
        let multi = self.multi.as_ref()?;
        let now = terminal_size();
        let Ok(mut screen) = self.screen.lock() else {
            return now;
        };
        if !resized(screen.size, now) {
            screen.size = screen.size.or(now);
            return now;
        }
        screen.size = now;
        let rows = now.map_or(24, |(r, _)| usize::from(r));
        multi.set_draw_target(ProgressDrawTarget::hidden());
        let mut err = std::io::stderr();
        // Clear the screen, cursor home.
        let _ = err.write_all(b"\x1b[2J\x1b[H");
        let _ = err.flush();
        multi.set_draw_target(live_target());
        let keep = rows.saturating_sub(self.bars.len() + 1);
        let skip = screen.recent.len().saturating_sub(keep);
        for line in screen.recent.iter().skip(skip) {
            let _ = multi.println(line);
        }
        now
    }

    pub fn notice(&self, n: &Notice) {
        if self.mode == Mode::Quiet && !n.warning {
            return;
        }
        let prefix = if n.warning { "warning: " } else { "" };
        let head = format!("{prefix}{:<w$}  ", n.stream, w = self.width);
        self.line(&wrap(&head, &n.text, FEED_WIDTH));
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
                self.check_resize();
                if let Ok(mut screen) = self.screen.lock() {
                    if screen.recent.len() == RECENT_LINES {
                        screen.recent.pop_front();
                    }
                    screen.recent.push_back(text.to_string());
                }
                let _ = m.println(text);
            }
            None => {
                let _ = writeln!(std::io::stderr(), "{text}");
            }
        }
    }

    /// Takes the live area off the screen (the summary follows it).
    pub fn finish(&self, _statuses: &[StreamStatus]) {
        self.check_resize();
        // Clear the whole area while every row is still counted, then stop
        // drawing, and only then let the rows go.
        if let Some(m) = &self.multi {
            let _ = m.clear();
            m.set_draw_target(ProgressDrawTarget::hidden());
        }
        for bar in &self.bars {
            bar.finish_and_clear();
        }
    }
}
