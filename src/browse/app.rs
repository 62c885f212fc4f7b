//! The browser's state and what each key does (docs/browse.md, "Keys"). Pure:
//! a key changes the state and may ask for an [`Effect`] (load a timeline,
//! reload the window, copy a command) that the caller carries out against the
//! journal, so every decision here is unit-tested without a terminal.

use crate::history::timeline::{Entry, EntryType, TimelineAnswer};
use crate::journal::versions::VersionRow;
use crate::render::bars::BarRow;
use crate::time::Millis;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// One recorded stream in the left pane.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamLine {
    pub cluster: String,
    /// Empty for all namespaces or a cluster-scoped resource.
    pub namespace: String,
    /// `deployments.apps`.
    pub resource: String,
    pub bar: BarRow,
}

/// One object with live events in the window.
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectLine {
    pub object: i64,
    pub kind: String,
    /// `deployments.apps`, as commands take it.
    pub resource: String,
    pub namespaced: bool,
    pub namespace: String,
    pub name: String,
    /// Live events in the window.
    pub changes: usize,
    /// The last of them.
    pub last: VersionRow,
    /// A gap of its stream overlaps the window: changes may be missing.
    pub gap: bool,
    /// A relist in the window found a change of it that no watch saw: it
    /// happened at an unknown time in the gap before that relist.
    pub relist: bool,
    /// Read when the row is first shown (it decodes a body).
    pub detail: Option<Detail>,
}

/// Who made an object's last change.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Detail {
    /// The field manager that wrote last.
    pub manager: Option<String>,
    /// With audit logs: `alice`, `likely alice`, or `?` and why not known.
    pub actor: Option<String>,
}

/// The windows `+` and `-` step through.
const SPANS: [i64; 11] = [
    5 * MINUTE,
    15 * MINUTE,
    30 * MINUTE,
    HOUR,
    3 * HOUR,
    6 * HOUR,
    12 * HOUR,
    24 * HOUR,
    3 * 24 * HOUR,
    7 * 24 * HOUR,
    30 * 24 * HOUR,
];
const MINUTE: i64 = 60_000;
const HOUR: i64 = 60 * MINUTE;

/// The time the browser looks at: `(since, until]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub since: i64,
    pub until: i64,
    /// `until` is now, and moves with the clock on every refresh.
    pub live: bool,
}

impl Window {
    pub fn span(&self) -> i64 {
        self.until - self.since
    }

    /// The span as `--since` takes it: `1h`, `90m`, `2d`, or seconds when
    /// shorter than a minute.
    pub fn label(&self) -> String {
        let span = self.span();
        let day = 24 * HOUR;
        if span >= day && span % day == 0 {
            format!("{}d", span / day)
        } else if span >= HOUR && span % HOUR == 0 {
            format!("{}h", span / HOUR)
        } else if span >= MINUTE {
            format!("{}m", (span + MINUTE - 1) / MINUTE)
        } else {
            format!("{}s", (span + 999) / 1000)
        }
    }

    /// The next wider (`wider`) or narrower step, keeping the end; `None` at
    /// either end of the steps.
    fn step(&self, wider: bool) -> Option<Window> {
        let span = self.span();
        let next = if wider {
            SPANS.iter().find(|ms| **ms > span)
        } else {
            SPANS.iter().rev().find(|ms| **ms < span)
        }?;
        Some(Window {
            since: self.until - next,
            ..*self
        })
    }

    /// The flags that give this window to a command: `--since 1h` while live,
    /// else both ends as RFC 3339 times.
    fn flags(&self) -> String {
        if self.live {
            format!("--since {}", self.label())
        } else {
            format!("--since {} --until {}", time(self.since), time(self.until))
        }
    }
}

/// The screens, Esc going back down the stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Screen {
    Objects,
    Timeline,
    Diff,
    Yaml,
}

/// An object's timeline, opened from the list.
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineView {
    pub line: ObjectLine,
    pub answer: TimelineAnswer,
    pub selected: usize,
    pub offset: usize,
}

impl TimelineView {
    pub fn entry(&self) -> Option<&Entry> {
        self.answer.entries.get(self.selected)
    }

    /// The version before the selected one (what its diff is against).
    pub fn previous(&self) -> Option<&Entry> {
        self.answer.entries[..self.selected.min(self.answer.entries.len())]
            .iter()
            .rev()
            .find(|e| e.kind != EntryType::Gap)
    }
}

/// The object as YAML at one time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlView {
    pub title: String,
    pub lines: Vec<String>,
    pub scroll: usize,
    pub at: i64,
}

/// What the caller must do after a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    None,
    Quit,
    /// Read the streams and objects again (the window changed, or `r`).
    Reload,
    /// Read the selected object's timeline, then [`App::open_timeline`].
    LoadTimeline,
    /// Read the selected object at this time, then [`App::open_yaml`].
    LoadYaml {
        at: i64,
    },
    /// Put this text on the clipboard.
    Copy(String),
}

/// Everything the browser shows.
#[derive(Debug, Clone)]
pub struct App {
    pub cluster: String,
    /// `None` with `-A`.
    pub namespace: Option<String>,
    pub window: Window,
    pub streams: Vec<StreamLine>,
    pub objects: Vec<ObjectLine>,
    /// Audit logs of the cluster were imported: the list has a BY column.
    pub audit: bool,
    /// Flags of the browse command that other commands need too
    /// (`--store`, `--context`, `--cluster-id`), for copied commands.
    pub common_flags: String,
    pub filter: String,
    /// `/` was pressed: keys edit the filter.
    pub editing: bool,
    /// Indexes into `objects` that pass the filter.
    pub shown: Vec<usize>,
    /// Index into `shown`.
    pub selected: usize,
    pub offset: usize,
    pub screens: Vec<Screen>,
    pub timeline: Option<TimelineView>,
    pub diff_scroll: usize,
    pub yaml: Option<YamlView>,
    pub help: bool,
    /// A line for the status bar (what was copied, what failed).
    pub message: Option<String>,
    /// Rows a page moves (set by the view from the screen's height).
    pub page: usize,
    /// Colour on (off under NO_COLOR).
    pub color: bool,
}

fn time(t: i64) -> String {
    Millis::from_ms(t).to_string()
}

impl App {
    pub fn new(cluster: String, namespace: Option<String>, window: Window) -> App {
        App {
            cluster,
            namespace,
            window,
            streams: Vec::new(),
            objects: Vec::new(),
            audit: false,
            common_flags: String::new(),
            filter: String::new(),
            editing: false,
            shown: Vec::new(),
            selected: 0,
            offset: 0,
            screens: vec![Screen::Objects],
            timeline: None,
            diff_scroll: 0,
            yaml: None,
            help: false,
            message: None,
            page: 10,
            color: true,
        }
    }

    pub fn screen(&self) -> Screen {
        *self.screens.last().unwrap_or(&Screen::Objects)
    }

    /// New contents of the list (a reload): the selected object stays
    /// selected while it is still listed.
    pub fn set_objects(&mut self, streams: Vec<StreamLine>, objects: Vec<ObjectLine>) {
        let keep = self.selected_object().map(|o| o.object);
        self.streams = streams;
        self.objects = objects;
        self.refilter();
        if let Some(id) = keep
            && let Some(at) = self
                .shown
                .iter()
                .position(|&i| self.objects[i].object == id)
        {
            self.selected = at;
        }
    }

    pub fn selected_object(&self) -> Option<&ObjectLine> {
        self.shown
            .get(self.selected)
            .and_then(|&i| self.objects.get(i))
    }

    /// The rows from `offset` that a list of `height` rows shows and that have
    /// no [`Detail`] yet: the caller reads those.
    pub fn missing_details(&self, height: usize) -> Vec<usize> {
        self.shown
            .iter()
            .skip(self.offset)
            .take(height)
            .copied()
            .filter(|&i| self.objects[i].detail.is_none())
            .collect()
    }

    fn refilter(&mut self) {
        let needle = self.filter.to_lowercase();
        self.shown = (0..self.objects.len())
            .filter(|&i| {
                let o = &self.objects[i];
                needle.is_empty()
                    || format!("{}/{} {}", o.kind, o.name, o.namespace)
                        .to_lowercase()
                        .contains(&needle)
            })
            .collect();
        self.selected = self.selected.min(self.shown.len().saturating_sub(1));
    }

    pub fn open_timeline(&mut self, line: ObjectLine, answer: TimelineAnswer) {
        // The last change in the window is selected.
        let selected = answer
            .entries
            .iter()
            .rposition(|e| e.kind != EntryType::Gap && e.observed_at <= line.last.observed_at)
            .unwrap_or(answer.entries.len().saturating_sub(1));
        self.timeline = Some(TimelineView {
            line,
            answer,
            selected,
            offset: 0,
        });
        self.screens.push(Screen::Timeline);
    }

    /// A new timeline of the open object (a reload): the selected version
    /// stays selected.
    pub fn refresh_timeline(&mut self, answer: TimelineAnswer) {
        if let Some(t) = &mut self.timeline {
            let keep = t
                .entry()
                .map(|e| (e.observed_at, e.resource_version.clone()));
            t.selected = keep
                .and_then(|k| {
                    answer
                        .entries
                        .iter()
                        .position(|e| (e.observed_at, e.resource_version.clone()) == k)
                })
                .unwrap_or(t.selected.min(answer.entries.len().saturating_sub(1)));
            t.answer = answer;
        }
    }

    pub fn open_yaml(&mut self, title: String, text: &str, at: i64) {
        self.yaml = Some(YamlView {
            title,
            lines: text.lines().map(str::to_string).collect(),
            scroll: 0,
            at,
        });
        self.screens.push(Screen::Yaml);
    }

    /// What `key` does.
    pub fn key(&mut self, key: KeyEvent) -> Effect {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && matches!(key.code, KeyCode::Char('c')) {
            return Effect::Quit;
        }
        if self.editing {
            self.edit_filter(key.code);
            return Effect::None;
        }
        if self.help {
            match key.code {
                KeyCode::Char('q') => return Effect::Quit,
                KeyCode::Char('?') | KeyCode::Esc | KeyCode::Enter => self.help = false,
                _ => {}
            }
            return Effect::None;
        }
        self.message = None;
        let page = self.page.max(1) as isize;
        match key.code {
            KeyCode::Char('q') => return Effect::Quit,
            KeyCode::Char('?') => self.help = true,
            KeyCode::Esc => self.back(),
            KeyCode::Down | KeyCode::Char('j') => self.go(1),
            KeyCode::Up | KeyCode::Char('k') => self.go(-1),
            KeyCode::PageDown => self.go(page),
            KeyCode::PageUp => self.go(-page),
            KeyCode::Char('f') | KeyCode::Char('d') if ctrl => self.go(page),
            KeyCode::Char('b') | KeyCode::Char('u') if ctrl => self.go(-page),
            KeyCode::Home | KeyCode::Char('g') => self.go(isize::MIN / 2),
            KeyCode::End | KeyCode::Char('G') => self.go(isize::MAX / 2),
            KeyCode::Enter => return self.enter(),
            KeyCode::Char('y') => return self.yaml_key(),
            KeyCode::Char('/') if self.screen() == Screen::Objects => {
                self.editing = true;
            }
            KeyCode::Char(']') => self.jump_gap(true),
            KeyCode::Char('[') => self.jump_gap(false),
            KeyCode::Char('+') | KeyCode::Char('=') => return self.widen(true),
            KeyCode::Char('-') | KeyCode::Char('_') => return self.widen(false),
            KeyCode::Char('r') => return Effect::Reload,
            KeyCode::Char('c') => return Effect::Copy(self.command()),
            _ => {}
        }
        Effect::None
    }

    fn edit_filter(&mut self, code: KeyCode) {
        match code {
            KeyCode::Enter => self.editing = false,
            KeyCode::Esc => {
                self.editing = false;
                self.filter.clear();
            }
            KeyCode::Backspace => {
                self.filter.pop();
            }
            KeyCode::Char(c) => self.filter.push(c),
            _ => return,
        }
        self.selected = 0;
        self.offset = 0;
        self.refilter();
    }

    fn back(&mut self) {
        match self.screen() {
            Screen::Objects => {
                if !self.filter.is_empty() {
                    self.filter.clear();
                    self.refilter();
                }
            }
            Screen::Timeline => {
                self.screens.pop();
                self.timeline = None;
            }
            Screen::Diff => {
                self.screens.pop();
            }
            Screen::Yaml => {
                self.screens.pop();
                self.yaml = None;
            }
        }
    }

    /// Moves the cursor (or the text) of the current screen by `by` rows,
    /// within bounds.
    fn go(&mut self, by: isize) {
        let moved = |at: usize, len: usize| -> usize {
            (at as isize)
                .saturating_add(by)
                .clamp(0, len.saturating_sub(1) as isize) as usize
        };
        match self.screen() {
            Screen::Objects => self.selected = moved(self.selected, self.shown.len()),
            Screen::Timeline => {
                if let Some(t) = &mut self.timeline {
                    t.selected = moved(t.selected, t.answer.entries.len());
                }
            }
            Screen::Diff => {
                let len = self.diff_lines();
                self.diff_scroll = moved(self.diff_scroll, len);
            }
            Screen::Yaml => {
                if let Some(y) = &mut self.yaml {
                    y.scroll = moved(y.scroll, y.lines.len());
                }
            }
        }
    }

    /// The number of field lines the diff screen shows.
    pub fn diff_lines(&self) -> usize {
        self.timeline
            .as_ref()
            .and_then(|t| t.entry())
            .map_or(0, |e| e.fields.len().max(1))
    }

    fn enter(&mut self) -> Effect {
        match self.screen() {
            Screen::Objects if self.selected_object().is_some() => Effect::LoadTimeline,
            Screen::Timeline => {
                if self
                    .timeline
                    .as_ref()
                    .and_then(|t| t.entry())
                    .is_some_and(|e| e.kind != EntryType::Gap)
                {
                    self.diff_scroll = 0;
                    self.screens.push(Screen::Diff);
                }
                Effect::None
            }
            _ => Effect::None,
        }
    }

    fn yaml_key(&mut self) -> Effect {
        let at = match self.screen() {
            Screen::Objects => self.selected_object().map(|o| o.last.observed_at),
            Screen::Timeline | Screen::Diff => self
                .timeline
                .as_ref()
                .and_then(|t| t.entry())
                .filter(|e| e.kind != EntryType::Gap)
                .map(|e| e.observed_at),
            Screen::Yaml => None,
        };
        match at {
            Some(at) => Effect::LoadYaml { at },
            None => Effect::None,
        }
    }

    /// `]`: the next row with a gap (objects) or the next gap (timeline);
    /// `[` the previous one. Says so when there is none.
    fn jump_gap(&mut self, forward: bool) {
        let found = match self.screen() {
            Screen::Objects => {
                let gaps: Vec<usize> = (0..self.shown.len())
                    .filter(|&i| self.objects[self.shown[i]].gap)
                    .collect();
                next_of(&gaps, self.selected, forward).map(|i| self.selected = i)
            }
            Screen::Timeline => self.timeline.as_mut().and_then(|t| {
                let gaps: Vec<usize> = (0..t.answer.entries.len())
                    .filter(|&i| t.answer.entries[i].kind == EntryType::Gap)
                    .collect();
                next_of(&gaps, t.selected, forward).map(|i| t.selected = i)
            }),
            _ => Some(()),
        };
        if found.is_none() {
            self.message = Some(format!(
                "no {} gap",
                if forward { "later" } else { "earlier" }
            ));
        }
    }

    fn widen(&mut self, wider: bool) -> Effect {
        if self.screen() != Screen::Objects {
            return Effect::None;
        }
        match self.window.step(wider) {
            Some(w) => {
                self.window = w;
                Effect::Reload
            }
            None => {
                self.message = Some(format!(
                    "the window is already the {} step",
                    if wider { "widest" } else { "narrowest" }
                ));
                Effect::None
            }
        }
    }

    /// `-n NS`, `-A`, or nothing for a cluster-scoped object.
    fn namespace_flag(&self, object: Option<&ObjectLine>) -> String {
        match object {
            Some(o) if !o.namespaced => String::new(),
            Some(o) => format!(" -n {}", o.namespace),
            None => match &self.namespace {
                Some(ns) => format!(" -n {ns}"),
                None => " -A".into(),
            },
        }
    }

    /// The `kubectl krply` command that prints what the current screen shows.
    pub fn command(&self) -> String {
        let common = if self.common_flags.is_empty() {
            String::new()
        } else {
            format!(" {}", self.common_flags)
        };
        let timeline = self.timeline.as_ref();
        let object =
            |o: &ObjectLine| format!("{}/{}{}", o.resource, o.name, self.namespace_flag(Some(o)));
        match (self.screen(), timeline) {
            (Screen::Objects, _) => format!(
                "kubectl krply log{}{common} {}",
                self.namespace_flag(None),
                self.window.flags()
            ),
            (Screen::Timeline, Some(t)) => {
                format!("kubectl krply timeline {}{common}", object(&t.line))
            }
            (Screen::Diff, Some(t)) => {
                let until = t.entry().map_or(0, |e| e.observed_at);
                let since = t.previous().map_or(until - 1, |e| e.observed_at);
                format!(
                    "kubectl krply diff {}{common} --since {} --until {}",
                    object(&t.line),
                    time(since),
                    time(until)
                )
            }
            (Screen::Yaml, _) => {
                let line = timeline.map(|t| &t.line).or_else(|| self.selected_object());
                match (line, &self.yaml) {
                    (Some(o), Some(y)) => format!(
                        "kubectl krply get {}{common} --at {} -o yaml",
                        object(o),
                        time(y.at)
                    ),
                    _ => String::new(),
                }
            }
            _ => String::new(),
        }
    }

    /// The object the YAML or timeline screens are about.
    pub fn current_object(&self) -> Option<&ObjectLine> {
        match self.screen() {
            Screen::Objects => self.selected_object(),
            _ => self
                .timeline
                .as_ref()
                .map(|t| &t.line)
                .or_else(|| self.selected_object()),
        }
    }
}

/// The next (or previous) of `marks` after (before) `at`.
fn next_of(marks: &[usize], at: usize, forward: bool) -> Option<usize> {
    if forward {
        marks.iter().copied().find(|&i| i > at)
    } else {
        marks.iter().copied().rev().find(|&i| i < at)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::history::complete::Completeness;
    use crate::journal::read::GapWindow;

    pub(crate) const T0: i64 = 1_796_130_000_000; // 2026-12-01T13:00:00Z

    pub(crate) fn version(seq: i64, at: i64, rv: &str) -> VersionRow {
        VersionRow {
            seq,
            stream: 1,
            object: seq,
            kind: crate::journal::schema::kind::EVENT,
            observed_at: at,
            watch_type: Some(crate::model::WatchType::Modified),
            resource_version: rv.into(),
            body: seq,
            list_token: None,
            mark: None,
        }
    }

    pub(crate) fn object(id: i64, kind: &str, name: &str, changes: usize, gap: bool) -> ObjectLine {
        ObjectLine {
            object: id,
            kind: kind.into(),
            resource: format!("{}s.apps", kind.to_lowercase()),
            namespaced: true,
            namespace: "shop".into(),
            name: name.into(),
            changes,
            last: VersionRow {
                object: id,
                ..version(id, T0 - id * 60_000, &format!("{}", 1000 + id))
            },
            gap,
            relist: false,
            detail: Some(Detail {
                manager: Some("kubectl-edit".into()),
                actor: None,
            }),
        }
    }

    pub(crate) fn app() -> App {
        let mut app = App::new(
            "kind-shop".into(),
            Some("shop".into()),
            Window {
                since: T0 - HOUR,
                until: T0,
                live: true,
            },
        );
        app.set_objects(
            Vec::new(),
            vec![
                object(1, "Deployment", "frontend", 3, false),
                object(2, "ConfigMap", "frontend-config", 1, true),
                object(3, "Deployment", "cartservice", 2, false),
            ],
        );
        app
    }

    pub(crate) fn entry(at: i64, kind: EntryType, rv: &str) -> Entry {
        Entry {
            observed_at: at,
            resource_version: Some(rv.into()),
            kind,
            synthetic: false,
            fields: Vec::new(),
            gap: (kind == EntryType::Gap).then(|| GapWindow {
                from: at,
                to: Some(at + 90_000),
                from_rv: Some(rv.into()),
                to_rv: None,
                reason: "410 Gone".into(),
                seq: at,
            }),
            found_by_relist: None,
            by: Default::default(),
            changed_unread: false,
            stream: String::new(),
            seq: at,
        }
    }

    pub(crate) fn answer(entries: Vec<Entry>) -> TimelineAnswer {
        TimelineAnswer {
            kind: "Deployment".into(),
            namespace: "shop".into(),
            name: "frontend".into(),
            entries,
            completeness: Completeness::default(),
        }
    }

    fn press(app: &mut App, code: KeyCode) -> Effect {
        app.key(KeyEvent::new(code, KeyModifiers::NONE))
    }

    #[test]
    fn moving_stays_within_the_list() {
        let mut app = app();
        assert_eq!(press(&mut app, KeyCode::Char('k')), Effect::None);
        assert_eq!(app.selected, 0);
        press(&mut app, KeyCode::Char('G'));
        assert_eq!(app.selected, 2);
        press(&mut app, KeyCode::Down);
        assert_eq!(app.selected, 2);
        press(&mut app, KeyCode::Char('g'));
        assert_eq!(app.selected, 0);
    }

    #[test]
    fn a_filter_narrows_the_list_and_esc_clears_it() {
        let mut app = app();
        press(&mut app, KeyCode::Char('/'));
        for c in "CONFIG".chars() {
            press(&mut app, KeyCode::Char(c));
        }
        assert!(app.editing);
        // `q` while typing is text, not quit.
        assert_eq!(press(&mut app, KeyCode::Char('q')), Effect::None);
        press(&mut app, KeyCode::Backspace);
        press(&mut app, KeyCode::Enter);
        assert!(!app.editing);
        assert_eq!(app.filter, "CONFIG");
        assert_eq!(app.shown, vec![1]);
        assert_eq!(app.selected_object().unwrap().name, "frontend-config");
        press(&mut app, KeyCode::Esc);
        assert_eq!(app.shown.len(), 3);
    }

    #[test]
    fn enter_asks_for_the_timeline_then_opens_the_diff() {
        let mut app = app();
        assert_eq!(press(&mut app, KeyCode::Enter), Effect::LoadTimeline);
        let line = app.selected_object().unwrap().clone();
        let at = line.last.observed_at;
        app.open_timeline(
            line,
            answer(vec![
                entry(at - 10_000, EntryType::Added, "900"),
                entry(at - 5_000, EntryType::Gap, "950"),
                entry(at, EntryType::Modified, "1001"),
            ]),
        );
        assert_eq!(app.screen(), Screen::Timeline);
        // The last change in the window is selected.
        assert_eq!(app.timeline.as_ref().unwrap().selected, 2);
        press(&mut app, KeyCode::Char('['));
        assert_eq!(app.timeline.as_ref().unwrap().selected, 1);
        // A gap has no diff.
        assert_eq!(press(&mut app, KeyCode::Enter), Effect::None);
        assert_eq!(app.screen(), Screen::Timeline);
        press(&mut app, KeyCode::Char('['));
        assert_eq!(app.message.as_deref(), Some("no earlier gap"));
        press(&mut app, KeyCode::Char('G'));
        press(&mut app, KeyCode::Enter);
        assert_eq!(app.screen(), Screen::Diff);
        assert_eq!(
            app.command(),
            format!(
                "kubectl krply diff deployments.apps/frontend -n shop --since {} --until {}",
                time(at - 10_000),
                time(at)
            )
        );
        assert_eq!(press(&mut app, KeyCode::Char('y')), Effect::LoadYaml { at });
        app.open_yaml("frontend".into(), "a: 1\nb: 2\n", at);
        assert_eq!(
            app.command(),
            format!(
                "kubectl krply get deployments.apps/frontend -n shop --at {} -o yaml",
                time(at)
            )
        );
        press(&mut app, KeyCode::Esc);
        press(&mut app, KeyCode::Esc);
        press(&mut app, KeyCode::Esc);
        assert_eq!(app.screen(), Screen::Objects);
        assert!(app.timeline.is_none());
    }

    #[test]
    fn gap_keys_jump_between_marked_objects() {
        let mut app = app();
        press(&mut app, KeyCode::Char(']'));
        assert_eq!(app.selected, 1);
        press(&mut app, KeyCode::Char(']'));
        assert_eq!(app.selected, 1);
        assert_eq!(app.message.as_deref(), Some("no later gap"));
    }

    #[test]
    fn the_window_steps_and_the_copied_command_follows() {
        let mut app = app();
        assert_eq!(
            press(&mut app, KeyCode::Char('c')),
            Effect::Copy("kubectl krply log -n shop --since 1h".into())
        );
        assert_eq!(press(&mut app, KeyCode::Char('+')), Effect::Reload);
        assert_eq!(app.window.label(), "3h");
        assert_eq!(app.window.until, T0);
        for _ in 0..10 {
            press(&mut app, KeyCode::Char('-'));
        }
        assert_eq!(app.window.label(), "5m");
        assert!(app.message.as_deref().unwrap().contains("narrowest"));
        app.window.live = false;
        app.common_flags = "--cluster-id kind-shop".into();
        assert_eq!(
            app.command(),
            format!(
                "kubectl krply log -n shop --cluster-id kind-shop --since {} --until {}",
                time(T0 - 5 * MINUTE),
                time(T0)
            )
        );
    }

    #[test]
    fn a_reload_keeps_the_selected_object() {
        let mut app = app();
        press(&mut app, KeyCode::Char('j'));
        press(&mut app, KeyCode::Char('j'));
        let mut objects = app.objects.clone();
        objects.insert(0, object(9, "Service", "checkout", 1, false));
        app.set_objects(Vec::new(), objects);
        assert_eq!(app.selected_object().unwrap().name, "cartservice");
    }

    #[test]
    fn help_and_quit() {
        let mut app = app();
        press(&mut app, KeyCode::Char('?'));
        assert!(app.help);
        // Keys other than the ones that close it do nothing.
        assert_eq!(press(&mut app, KeyCode::Char('j')), Effect::None);
        assert_eq!(app.selected, 0);
        press(&mut app, KeyCode::Esc);
        assert!(!app.help);
        assert_eq!(press(&mut app, KeyCode::Char('q')), Effect::Quit);
        assert_eq!(
            app.key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            Effect::Quit
        );
    }
}
