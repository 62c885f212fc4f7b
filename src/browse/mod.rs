//! `browse`: the journal in a full-screen terminal browser (docs/browse.md).
//! [`app`] holds the state and decides what keys do, [`view`] draws it,
//! [`source`] reads the journal; this module connects them to a terminal and
//! keeps the picture live while a recorder writes. Read-only: it never writes
//! to the journal.

pub mod app;
pub mod source;
pub mod view;

use crate::diff::DiffOptions;
use crate::history::{History, HistoryError, Scope};
use crate::journal::Journal;
use crate::time::Millis;
use app::{App, Effect, Screen};
use crossterm::event::{self, Event, KeyEventKind};
use std::time::{Duration, Instant, SystemTime};

/// How often the journal is checked for new records.
const TICK: Duration = Duration::from_secs(1);
/// A live window moves with the clock: read again at least this often.
const MOVE_EVERY: Duration = Duration::from_secs(10);

/// The journal side of a browser: what it reads, and whether the file changed.
pub struct Session {
    journal: Journal,
    cluster: String,
    scope: Scope,
    opts: DiffOptions,
    /// The journal's files as last seen (size and time of the main file and
    /// its WAL): a commit changes them.
    seen: Option<Vec<(u64, Option<SystemTime>)>>,
    /// How long the last [`Session::load`] took: reads on their own are
    /// spaced at least five times that apart, so a wide window on a busy
    /// journal does not keep the browser reading.
    pub last_load: Duration,
}

impl Session {
    pub fn new(journal: Journal, cluster: String, namespace: Option<String>) -> Session {
        Session {
            journal,
            cluster,
            scope: Scope {
                namespace,
                types: None,
            },
            opts: DiffOptions::default(),
            seen: None,
            last_load: Duration::ZERO,
        }
    }

    fn history(&self) -> Result<History<'_>, HistoryError> {
        Ok(History::load(
            &self.journal,
            &self.cluster,
            Millis::now().as_ms(),
        )?)
    }

    /// Reads the streams and objects of the app's window (a live window ends
    /// now), and the open timeline again.
    pub fn load(&mut self, app: &mut App) -> Result<(), HistoryError> {
        let started = Instant::now();
        self.seen = Some(self.files());
        let history = self.history()?;
        if app.window.live {
            let span = app.window.span();
            app.window.until = history.now;
            app.window.since = history.now - span;
        }
        app.audit = history.has_audit();
        let streams = source::streams(&history, &self.scope);
        let objects = source::objects(&history, &self.scope, app.window.since, app.window.until)?;
        app.set_objects(streams, objects);
        if let Some(t) = &app.timeline
            && let Some(answer) = source::timeline(&history, &t.line, &self.opts)?
        {
            app.refresh_timeline(answer);
        }
        drop(history);
        self.last_load = started.elapsed();
        Ok(())
    }

    /// Whether to read again on its own: the journal changed, or a live
    /// window moved on, and the last read is far enough behind.
    fn due(&self, app: &App, since_load: Duration) -> bool {
        since_load >= self.last_load * 5
            && (self.changed() || (app.window.live && since_load >= MOVE_EVERY))
    }

    /// Reads who made the last change of the rows a list of `height` rows
    /// shows, where not read yet.
    pub fn fill_details(&self, app: &mut App, height: usize) -> Result<(), HistoryError> {
        let missing = app.missing_details(height);
        if missing.is_empty() {
            return Ok(());
        }
        let history = self.history()?;
        for i in missing {
            let detail = source::detail(
                &history,
                &app.objects[i],
                (app.window.since, app.window.until),
            )?;
            app.objects[i].detail = Some(detail);
        }
        Ok(())
    }

    /// Carries out what a key asked for; `false` to quit.
    pub fn apply(&mut self, app: &mut App, effect: Effect) -> Result<bool, HistoryError> {
        match effect {
            Effect::None => {}
            Effect::Quit => return Ok(false),
            Effect::Reload => self.load(app)?,
            Effect::LoadTimeline => {
                if let Some(line) = app.selected_object().cloned() {
                    let history = self.history()?;
                    match source::timeline(&history, &line, &self.opts)? {
                        Some(answer) => app.open_timeline(line, answer),
                        None => app.message = Some("this object is no longer recorded".into()),
                    }
                }
            }
            Effect::LoadYaml { at } => {
                if let Some(line) = app.current_object().cloned() {
                    let history = self.history()?;
                    match source::yaml_at(&history, &line, at)? {
                        Some(text) => {
                            let title = format!(
                                "{} {}{} at {}",
                                line.kind,
                                if line.namespaced {
                                    format!("{}/", line.namespace)
                                } else {
                                    String::new()
                                },
                                line.name,
                                crate::render::clock::clock().stamp(at)
                            );
                            app.open_yaml(title, &text, at);
                        }
                        None => {
                            app.message = Some("the object did not exist at that time".into());
                        }
                    }
                }
            }
            Effect::Copy(text) => {
                // OSC 52: the terminal (or tmux) puts it on the clipboard; the
                // status line shows it either way.
                let copied = crossterm::execute!(
                    std::io::stdout(),
                    crossterm::clipboard::CopyToClipboard::to_clipboard_from(text.as_str())
                );
                app.message = Some(match copied {
                    Ok(()) => format!("copied: {text}"),
                    Err(_) => text,
                });
            }
        }
        Ok(true)
    }

    fn files(&self) -> Vec<(u64, Option<SystemTime>)> {
        let main = self.journal.path().to_path_buf();
        let mut wal = main.clone().into_os_string();
        wal.push("-wal");
        [main, wal.into()]
            .iter()
            .map(|p| match std::fs::metadata(p) {
                Ok(m) => (m.len(), m.modified().ok()),
                Err(_) => (0, None),
            })
            .collect()
    }

    /// Whether a commit changed the journal since it was last read.
    pub fn changed(&self) -> bool {
        self.seen.as_ref() != Some(&self.files())
    }
}

/// Why the browser stopped.
#[derive(Debug, thiserror::Error)]
pub enum BrowseError {
    #[error(transparent)]
    History(#[from] HistoryError),
    #[error("the terminal failed: {0}")]
    Terminal(#[from] std::io::Error),
}

/// Runs the browser on this terminal until `q`: the terminal is restored
/// however it ends (ratatui's panic hook restores it on a panic).
pub fn run(mut session: Session, mut app: App) -> Result<(), BrowseError> {
    let mut terminal = ratatui::try_init()?;
    let result = event_loop(&mut terminal, &mut session, &mut app);
    ratatui::try_restore()?;
    result
}

fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
    session: &mut Session,
    app: &mut App,
) -> Result<(), BrowseError> {
    let mut loaded = Instant::now();
    loop {
        if app.screen() == Screen::Objects {
            let height = usize::from(terminal.size()?.height);
            if let Err(e) = session.fill_details(app, height) {
                // Shown, not fatal: the rows keep "-" until a read succeeds.
                for &i in &app.missing_details(height) {
                    app.objects[i].detail = Some(Default::default());
                }
                app.message = Some(format!("error: {e}"));
            }
        }
        terminal.draw(|f| view::draw(f, app))?;
        if event::poll(TICK)? {
            match event::read()? {
                Event::Key(key) if key.kind == KeyEventKind::Press => {
                    let effect = app.key(key);
                    let reload = effect == Effect::Reload;
                    match session.apply(app, effect) {
                        Ok(true) => {}
                        Ok(false) => return Ok(()),
                        // A journal read that failed (a prune beside it, a
                        // damaged body) is said on the status line; the
                        // browser stays open on what it showed.
                        Err(e) => app.message = Some(format!("error: {e}")),
                    }
                    if reload {
                        loaded = Instant::now();
                    }
                }
                // A resize is drawn by the next pass.
                _ => {}
            }
        } else if session.due(app, loaded.elapsed()) {
            if let Err(e) = session.load(app) {
                app.message = Some(format!("error: {e}"));
            }
            loaded = Instant::now();
        }
    }
}
