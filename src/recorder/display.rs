//! What `record` shows while it runs. On a terminal: a status area pinned at
//! the bottom, a line per stream (state, events, last resourceVersion, gaps),
//! or one summary line when the streams are more than a third of the rows;
//! above it, the feed of the changes being recorded, every line within the
//! terminal's width (a longer one hangs under its head), no spinner.
//! Elsewhere: plain lines on stderr, one per notable thing. The lines
//! themselves are `render::record`'s; this draws them.

use super::rules::Notice;
use super::stream::StreamStatus;
use crate::render::fields::shorten;
use crate::render::record::{self, FEED_WIDTH, FeedItem, hang, wrap};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle, TermLike};
use std::collections::VecDeque;
use std::io::Write;
use std::sync::Mutex;

/// The terminal's (rows, columns) on stderr, if it is one.
fn terminal_size() -> Option<(u16, u16)> {
    console::Term::stderr().size_checked()
}

/// stderr as indicatif draws on it, at its true width. indicatif fills every
/// row of the live area to the width and lets the terminal wrap to the next
/// row, which is right only at the true width (told a narrower one, it starts
/// the next row mid-line: the garbled screens of issue 30). After a draw the
/// cursor would sit past the last column, where the `^C` a terminal echoes on
/// Ctrl-C wraps onto a new row and the final clear starts one row too low; so
/// every draw ends with a carriage return, back to the start of the last row,
/// where the echo lands inside the live area and is cleared with it.
#[derive(Debug)]
struct Fitted(console::Term);

impl TermLike for Fitted {
    fn width(&self) -> u16 {
        self.0.size().1.max(20)
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
        self.0.write_str("\r")?;
        self.0.flush()
    }
}

/// Columns the feed and the status lines leave free at the right: none is
/// needed, one keeps a line off the last column.
const MARGIN: u16 = 1;

/// Where the live area draws: stderr, at most 8 times a second.
fn live_target() -> ProgressDrawTarget {
    ProgressDrawTarget::term_like_with_hz(Box::new(Fitted(console::Term::stderr())), 8)
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
    /// A bar per stream, or one for all of them ([`Display::summary`]).
    bars: Vec<ProgressBar>,
    /// Whether the one bar sums the streams up.
    summary: bool,
    width: usize,
    screen: Mutex<Screen>,
}

/// Whether `streams` status lines would take more than a third of `rows`:
/// then one line sums them up.
fn sums_up(streams: usize, rows: Option<u16>) -> bool {
    let rows = rows.map_or(24, usize::from);
    streams > 1 && streams * 3 > rows
}

/// One line for all the streams: how many are in each state, the events and
/// the gaps.
fn summary_line(statuses: &[StreamStatus]) -> String {
    let mut states: Vec<(String, usize)> = Vec::new();
    for s in statuses {
        let label = s.phase.label();
        match states.iter_mut().find(|(l, _)| *l == label) {
            Some((_, n)) => *n += 1,
            None => states.push((label, 1)),
        }
    }
    let states: Vec<String> = states.iter().map(|(l, n)| format!("{n} {l}")).collect();
    format!(
        "{} streams: {}   events {}   gaps {}",
        statuses.len(),
        states.join(", "),
        statuses.iter().map(|s| s.events).sum::<u64>(),
        statuses.iter().map(|s| s.gaps).sum::<u64>()
    )
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
                summary: false,
                width,
                screen: Mutex::default(),
            };
        }
        let multi = MultiProgress::with_draw_target(live_target());
        // No spinner: a frozen one is what a garbled screen kept of it.
        let style = ProgressStyle::with_template("{prefix}{msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        let summary = sums_up(streams.len(), terminal_size().map(|(r, _)| r));
        let prefixes: Vec<String> = if summary {
            vec![String::new()]
        } else {
            streams.iter().map(|n| format!("{n:<width$} ")).collect()
        };
        let bars = prefixes
            .into_iter()
            .map(|prefix| {
                let bar = multi.add(ProgressBar::new_spinner());
                bar.set_style(style.clone());
                bar.set_prefix(prefix);
                // No ticker thread: every draw happens on the recorder's own
                // refresh, so none can race a resize redraw or the final clear.
                bar
            })
            .collect();
        Display {
            mode,
            multi: Some(multi),
            bars,
            summary,
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
        let usable = columns.saturating_sub(usize::from(MARGIN)).max(1);
        if self.summary {
            if let Some(bar) = self.bars.first() {
                bar.set_message(shorten(&summary_line(statuses), usable));
                bar.tick();
            }
            return;
        }
        // The stream name and a space come first.
        let room = usable.saturating_sub(self.width + 1).max(1);
        for (bar, s) in self.bars.iter().zip(statuses) {
            bar.set_message(shorten(&progress_line(s), room));
            bar.tick();
        }
    }

    /// The width feed lines fit: the terminal's (less the margin) when live.
    fn feed_width(&self) -> usize {
        match (&self.multi, self.screen.lock().ok().and_then(|s| s.size)) {
            (Some(_), Some((_, columns))) => usize::from(columns.saturating_sub(MARGIN)).max(20),
            _ => FEED_WIDTH,
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
        // Lines broken for the old width, broken again for the new one.
        let columns = now.map_or(usize::from(u16::MAX), |(_, c)| usize::from(c));
        let width = columns.saturating_sub(usize::from(MARGIN)).max(20);
        for line in screen.recent.iter().skip(skip) {
            for row in hang(line, width, 4).lines() {
                let _ = multi.println(row);
            }
        }
        now
    }

    pub fn notice(&self, n: &Notice) {
        if self.mode == Mode::Quiet && !n.warning {
            return;
        }
        let prefix = if n.warning { "warning: " } else { "" };
        let head = format!("{prefix}{:<w$}  ", n.stream, w = self.width);
        self.line(&wrap(&head, &n.text, self.feed_width()));
    }

    pub fn feed(&self, item: &FeedItem) {
        self.feed_line(&item.line_within(self.feed_width()));
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
                // Nothing the terminal would wrap: it would break a value at
                // column 0, and the live area's rows would be miscounted.
                // One row at a time, so indicatif counts each.
                for row in hang(text, self.feed_width(), 4).lines() {
                    let _ = m.println(row);
                }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn many_streams_are_summed_up_in_one_line() {
        assert!(!sums_up(2, Some(24)));
        assert!(!sums_up(8, Some(24)));
        assert!(sums_up(9, Some(24)));
        assert!(!sums_up(12, Some(40)));
        assert!(sums_up(14, Some(40)));
        assert!(!sums_up(1, Some(2)));
    }
}
