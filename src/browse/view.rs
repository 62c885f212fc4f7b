//! Drawing the browser (docs/browse.md, "Screens"): the streams pane and the
//! object list, an object's timeline, a version's field diff, the object as
//! YAML, and the help. Only reads the [`App`], except for the scroll offsets
//! and the page size, which depend on the screen's size.

use super::app::{App, ObjectLine, Screen, StreamLine};
use crate::diff::ChangeKind;
use crate::history::timeline::{Entry, EntryType};
use crate::render::bars::{self, Cell as BarCell};
use crate::render::values::render_pair;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Clear, Paragraph, Row, Table, TableState, Wrap};

/// Styles, plain under NO_COLOR (selection stays reversed, gaps bold).
struct Theme {
    color: bool,
}

impl Theme {
    fn fg(&self, c: Color) -> Style {
        if self.color {
            Style::new().fg(c)
        } else {
            Style::new()
        }
    }
    fn gap(&self) -> Style {
        self.fg(Color::Red).add_modifier(Modifier::BOLD)
    }
    fn dim(&self) -> Style {
        self.fg(Color::DarkGray)
    }
    fn head(&self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }
    fn selected(&self) -> Style {
        Style::new().add_modifier(Modifier::REVERSED)
    }
}

/// `HH:MM:SS` within the window's last day, else `MM-DD HH:MM`, in the
/// zone text is shown in.
fn when(t: i64, until: i64) -> String {
    let clock = crate::render::clock::clock();
    if until - t < 24 * 3_600_000 {
        clock.time_s(t)
    } else {
        clock.short(t)
    }
}

/// `HH:MM:SS.mmm` with the date when it is not `until`'s.
fn stamp(t: i64, until: i64) -> String {
    crate::render::clock::clock().stamp_after(t, until)
}

/// Draws the whole screen.
pub fn draw(frame: &mut Frame<'_>, app: &mut App) {
    let theme = Theme { color: app.color };
    let [head, body, foot] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(3),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    frame.render_widget(Paragraph::new(header(app, &theme)), head);
    // Rows a page moves: the body less its borders and table header.
    app.page = usize::from(body.height.saturating_sub(3)).max(1);
    match app.screen() {
        Screen::Objects => objects_screen(frame, app, &theme, body),
        Screen::Timeline => timeline_screen(frame, app, &theme, body),
        Screen::Diff => diff_screen(frame, app, &theme, body),
        Screen::Yaml => yaml_screen(frame, app, &theme, body),
    }
    frame.render_widget(Paragraph::new(footer(app, &theme)), foot);
    if app.help {
        help(frame, &theme);
    }
}

fn header(app: &App, theme: &Theme) -> Line<'static> {
    let w = &app.window;
    let ns = match &app.namespace {
        Some(ns) => format!("ns {ns}"),
        None => "all namespaces".into(),
    };
    let gaps = app.streams.iter().filter(|s| overlaps_gap(s, app)).count();
    let mut spans = vec![
        Span::styled(" krply ", theme.head()),
        Span::raw(format!(
            " {}  {ns}  {}–{} UTC ({}{})",
            app.cluster,
            when(w.since, w.until),
            when(w.until, w.until),
            w.label(),
            if w.live { ", live" } else { "" }
        )),
    ];
    if gaps > 0 {
        spans.push(Span::styled(
            format!(
                "  ! gaps in {gaps} stream{}",
                if gaps == 1 { "" } else { "s" }
            ),
            theme.gap(),
        ));
    }
    Line::from(spans)
}

fn overlaps_gap(s: &StreamLine, app: &App) -> bool {
    s.bar
        .gaps
        .iter()
        .any(|&(f, t)| f < app.window.until && t.is_none_or(|t| t > app.window.since))
}

fn footer(app: &App, theme: &Theme) -> Line<'static> {
    if app.editing {
        return Line::from(vec![
            Span::styled("/", theme.head()),
            Span::raw(app.filter.clone()),
            Span::styled("█", theme.dim()),
            Span::styled("  Enter: keep  Esc: clear", theme.dim()),
        ]);
    }
    if let Some(m) = &app.message {
        return Line::from(Span::raw(format!(" {m}")));
    }
    let keys = match app.screen() {
        Screen::Objects => {
            "Enter timeline  y yaml  / filter  ]/[ gap  +/- window  c copy  ? help  q quit"
        }
        Screen::Timeline => "Enter diff  y yaml  ]/[ gap  c copy  Esc back  ? help  q quit",
        Screen::Diff => "y yaml  c copy  Esc back  ? help  q quit",
        Screen::Yaml => "j/k scroll  c copy  Esc back  ? help  q quit",
    };
    Line::from(Span::styled(format!(" {keys}"), theme.dim()))
}

fn objects_screen(frame: &mut Frame<'_>, app: &mut App, theme: &Theme, area: Rect) {
    let left = if area.width >= 120 { 36 } else { 24 };
    let [streams_area, list_area] =
        Layout::horizontal([Constraint::Length(left), Constraint::Min(30)]).areas(area);
    streams_pane(frame, app, theme, streams_area);
    object_list(frame, app, theme, list_area);
}

fn streams_pane(frame: &mut Frame<'_>, app: &App, theme: &Theme, area: Rect) {
    let block = Block::new().borders(Borders::ALL).title(" Streams ");
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let bar_w = usize::from(inner.width.saturating_sub(2)).max(1);
    let mut lines = vec![Line::styled(cut(&app.cluster, inner.width), theme.head())];
    let mut namespace: Option<&str> = None;
    for s in &app.streams {
        if namespace != Some(s.namespace.as_str()) {
            namespace = Some(&s.namespace);
            let label = if s.namespace.is_empty() {
                "(cluster-wide)".to_string()
            } else {
                s.namespace.clone()
            };
            lines.push(Line::styled(
                cut(&label, inner.width),
                Style::new().add_modifier(Modifier::BOLD),
            ));
        }
        let mark = if overlaps_gap(s, app) { "!" } else { " " };
        lines.push(Line::from(vec![
            Span::styled(mark, theme.gap()),
            Span::raw(cut(&s.resource, inner.width.saturating_sub(1))),
        ]));
        lines.push(bar_line(s, app, theme, bar_w));
    }
    lines.push(Line::raw(""));
    lines.push(Line::from(vec![
        Span::styled("█", theme.fg(Color::Green)),
        Span::raw(" covered "),
        Span::styled("░", theme.gap()),
        Span::raw(" gap"),
    ]));
    frame.render_widget(Paragraph::new(lines), inner);
}

/// ` |███░░██  |`: the stream's coverage across the window.
fn bar_line(s: &StreamLine, app: &App, theme: &Theme, width: usize) -> Line<'static> {
    let cells = bars::cells(
        &s.bar,
        app.window.since,
        app.window.until.max(app.window.since + 1),
        width,
    );
    let mut spans = vec![Span::raw("|")];
    let mut i = 0;
    while i < cells.len() {
        let kind = cells[i];
        let run = cells[i..].iter().take_while(|c| **c == kind).count();
        spans.push(match kind {
            BarCell::Blank => Span::raw(" ".repeat(run)),
            BarCell::Covered => Span::styled("█".repeat(run), theme.fg(Color::Green)),
            BarCell::Gap => Span::styled("░".repeat(run), theme.gap()),
        });
        i += run;
    }
    spans.push(Span::raw("|"));
    Line::from(spans)
}

fn object_list(frame: &mut Frame<'_>, app: &mut App, theme: &Theme, area: Rect) {
    let filter = if app.filter.is_empty() {
        String::new()
    } else {
        format!(" /{}", app.filter)
    };
    let title = format!(" Changed objects ({}){filter} ", app.shown.len());
    let block = Block::new().borders(Borders::ALL).title(title);
    if app.shown.is_empty() {
        let text = if app.objects.is_empty() {
            format!(
                "Nothing changed in the last {}: + widens the window.",
                app.window.label()
            )
        } else {
            "No object matches the filter: Esc clears it.".into()
        };
        frame.render_widget(Paragraph::new(text).block(block), area);
        return;
    }
    let all_ns = app.namespace.is_none();
    let longest = |f: &dyn Fn(&ObjectLine) -> usize| {
        app.shown
            .iter()
            .map(|&i| f(&app.objects[i]))
            .max()
            .unwrap_or(0)
    };
    let need = Needs {
        kind: longest(&|o| o.kind.chars().count()),
        namespace: all_ns.then(|| longest(&|o| o.namespace.chars().count())),
        name: longest(&|o| o.name.chars().count() + if o.last.deleted() { 10 } else { 0 }),
        audit: app.audit,
    };
    let columns = object_columns(usize::from(block.inner(area).width), &need);
    let shown: Vec<bool> = columns.iter().map(|(_, w)| *w > 0).collect();
    let head: Vec<&str> = columns
        .iter()
        .filter(|(_, w)| *w > 0)
        .map(|(h, _)| *h)
        .collect();
    let widths: Vec<Constraint> = columns
        .iter()
        .filter(|(_, w)| *w > 0)
        .map(|(_, w)| Constraint::Length(u16::try_from(*w).unwrap_or(u16::MAX)))
        .collect();
    // Only the rows in view are made: a week's list is 10,000 of them.
    let height = usize::from(block.inner(area).height).saturating_sub(1);
    let first = in_view(app.shown.len(), height, app.offset, app.selected);
    let rows = app.shown.iter().skip(first).take(height).map(|&i| {
        let cells = object_row(&app.objects[i], app, theme, all_ns);
        Row::new(
            cells
                .into_iter()
                .zip(&shown)
                .filter(|(_, s)| **s)
                .map(|(c, _)| c),
        )
    });
    let table = Table::new(rows, widths)
        .header(Row::new(head).style(theme.head()))
        .block(block);
    let selected = app.selected.saturating_sub(first);
    app.offset = first + draw_table(frame, area, table, theme, 0, selected);
}

/// The first of `len` one-line rows in view, `height` at a time, from
/// `offset` or as near it as keeps `selected` in view (as ratatui's table
/// scrolls).
fn in_view(len: usize, height: usize, offset: usize, selected: usize) -> usize {
    let height = height.max(1);
    let selected = selected.min(len.saturating_sub(1));
    let offset = offset.min(len.saturating_sub(1));
    if selected < offset {
        selected
    } else if selected >= offset + height {
        selected + 1 - height
    } else {
        offset
    }
}

/// Draws `table` with its header styled and the `selected` row highlighted,
/// from `offset` or further to keep it in view; returns the offset used.
fn draw_table(
    frame: &mut Frame<'_>,
    area: Rect,
    table: Table<'_>,
    theme: &Theme,
    offset: usize,
    selected: usize,
) -> usize {
    let table = table
        .column_spacing(1)
        .row_highlight_style(theme.selected());
    let mut state = TableState::new()
        .with_offset(offset)
        .with_selected(Some(selected));
    frame.render_stateful_widget(table, area, &mut state);
    state.offset()
}

/// What the columns of the object list need to show their longest value.
struct Needs {
    kind: usize,
    /// With every namespace: the longest namespace.
    namespace: Option<usize>,
    /// The longest name, with ` (deleted)` where it is.
    name: usize,
    /// Whether the BY column is there (audit logs imported).
    audit: bool,
}

/// The object list's columns and their widths in `width` columns, by
/// priority: the mark, NAME whole (down to 12 only when nothing else fits),
/// KIND, NAMESPACE, CHG and LAST; MANAGER and BY get what is left, and shrink
/// (to nothing, hidden) first. A width of 0 hides a column.
fn object_columns(width: usize, need: &Needs) -> Vec<(&'static str, usize)> {
    const NAME_MIN: usize = 12;
    const KIND_MAX: usize = 14;
    const NAMESPACE_MAX: usize = 16;
    // A column narrower than this says nothing: hide it instead.
    const USEFUL: usize = 6;
    let kind = need.kind.clamp(4, KIND_MAX);
    let namespace = need.namespace.map_or(0, |n| n.clamp(9, NAMESPACE_MAX));
    let fixed = |name: usize| {
        let cols = [1, kind, namespace, name, 3, 8];
        let shown = cols.iter().filter(|w| **w > 0).count();
        cols.iter().sum::<usize>() + shown.saturating_sub(1)
    };
    let mut name = need.name.max(NAME_MIN);
    if fixed(name) > width {
        name = width.saturating_sub(fixed(0) + 1).max(NAME_MIN);
    }
    let mut left = width.saturating_sub(fixed(name));
    let mut take = |want: usize| {
        // One column of spacing before it.
        let got = left.saturating_sub(1).min(want);
        if got < USEFUL {
            0
        } else {
            left -= got + 1;
            got
        }
    };
    let manager = take(if need.audit { 14 } else { 18 });
    let by = if need.audit { take(20) } else { 0 };
    vec![
        ("", 1),
        ("KIND", kind),
        ("NAMESPACE", namespace),
        ("NAME", name),
        ("CHG", 3),
        ("LAST", 8),
        ("MANAGER", manager),
        ("BY", by),
    ]
}

/// The cells of one object, one per column of [`object_columns`] (the
/// NAMESPACE and BY cells empty where those columns are not there).
fn object_row<'a>(o: &ObjectLine, app: &App, theme: &Theme, all_ns: bool) -> Vec<Cell<'a>> {
    let detail = o.detail.clone().unwrap_or_default();
    // `~`: a relist found a change nobody watched; `!`: a gap overlaps.
    let mark = match (o.relist, o.gap) {
        (true, _) => "~",
        (false, true) => "!",
        (false, false) => " ",
    };
    let mut cells = vec![
        Cell::from(Span::styled(mark, theme.gap())),
        Cell::from(o.kind.clone()),
        Cell::from(if all_ns {
            o.namespace.clone()
        } else {
            String::new()
        }),
    ];
    let deleted = o.last.deleted();
    cells.extend([
        Cell::from(if deleted {
            Span::styled(format!("{} (deleted)", o.name), theme.fg(Color::Red))
        } else {
            Span::raw(o.name.clone())
        }),
        Cell::from(Line::from(o.changes.to_string()).right_aligned()),
        Cell::from(when(o.last.observed_at, app.window.until)),
        Cell::from(detail.manager.unwrap_or_else(|| "-".into())),
        Cell::from(if app.audit {
            detail.actor.unwrap_or_default()
        } else {
            String::new()
        }),
    ]);
    cells
}

/// What a timeline entry changed, on one line.
fn summary(e: &Entry) -> String {
    match (&e.gap, e.kind) {
        (Some(g), _) => format!(
            "not covered{}: {}",
            g.to.map(|t| format!(" until {}", stamp(t, t)))
                .unwrap_or_default(),
            g.reason
        ),
        (None, EntryType::Baseline) if e.fields.is_empty() => "listed".into(),
        (None, EntryType::Added) if e.fields.is_empty() => "created".into(),
        (None, EntryType::Deleted) if e.synthetic => "absent from the relist".into(),
        (None, EntryType::Deleted) => "deleted".into(),
        (None, _) if e.fields.is_empty() => "no change outside status".into(),
        (None, _) => e
            .fields
            .iter()
            .map(|f| f.change.path.to_string())
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// The managers of an entry's fields, once each.
fn managers(e: &Entry) -> String {
    let mut out: Vec<&str> = Vec::new();
    for m in e.fields.iter().filter_map(|f| f.manager.as_deref()) {
        if !out.contains(&m) {
            out.push(m);
        }
    }
    out.join(", ")
}

fn object_title(o: &ObjectLine) -> String {
    if o.namespaced {
        format!("{} {}/{}", o.kind, o.namespace, o.name)
    } else {
        format!("{} {}", o.kind, o.name)
    }
}

fn timeline_screen(frame: &mut Frame<'_>, app: &mut App, theme: &Theme, area: Rect) {
    let audit = app.audit;
    let now = app.window.until;
    let Some(t) = app.timeline.as_mut() else {
        return;
    };
    let versions = t
        .answer
        .entries
        .iter()
        .filter(|e| e.kind != EntryType::Gap)
        .count();
    let mut title = vec![Span::raw(format!(
        " {}: {versions} versions ",
        object_title(&t.line)
    ))];
    if !t.answer.completeness.complete() {
        title.push(Span::styled("incomplete ", theme.gap()));
    }
    let block = Block::new().borders(Borders::ALL).title(Line::from(title));
    let mut widths = vec![
        Constraint::Length(12),
        Constraint::Length(9),
        Constraint::Length(9),
        Constraint::Min(24),
        Constraint::Length(14),
    ];
    let mut head = vec!["OBSERVED", "TYPE", "RV", "CHANGED", "MANAGER"];
    if audit {
        widths.push(Constraint::Length(16));
        head.push("BY");
    }
    let rows = t.answer.entries.iter().map(|e| {
        let gap = e.kind == EntryType::Gap;
        let style = if gap { theme.gap() } else { Style::new() };
        let kind = format!(
            "{}{}",
            e.kind.as_str(),
            if e.synthetic && !gap { "*" } else { "" }
        );
        let mut cells = vec![
            Cell::from(stamp(e.observed_at, now)),
            Cell::from(kind),
            Cell::from(e.resource_version.clone().unwrap_or_default()),
            Cell::from(summary(e)),
            Cell::from(managers(e)),
        ];
        if audit {
            cells.push(Cell::from(super::source::actor(&e.by)));
        }
        Row::new(cells).style(style)
    });
    let table = Table::new(rows, widths)
        .header(Row::new(head).style(theme.head()))
        .block(block);
    t.offset = draw_table(frame, area, table, theme, t.offset, t.selected);
}

fn diff_screen(frame: &mut Frame<'_>, app: &mut App, theme: &Theme, area: Rect) {
    let now = app.window.until;
    let Some(t) = app.timeline.as_ref() else {
        return;
    };
    let Some(e) = t.entry() else {
        return;
    };
    let against = t
        .previous()
        .map(|p| {
            format!(
                " against rv {} at {}",
                p.resource_version.as_deref().unwrap_or("?"),
                stamp(p.observed_at, now)
            )
        })
        .unwrap_or_default();
    let title = format!(
        " {}: rv {} at {}{against} ",
        object_title(&t.line),
        e.resource_version.as_deref().unwrap_or("?"),
        stamp(e.observed_at, now),
    );
    let block = Block::new().borders(Borders::ALL).title(title);
    let inner_w = usize::from(area.width.saturating_sub(2));
    let mut lines = vec![Line::from(vec![
        Span::styled(e.kind.as_str(), Style::new().add_modifier(Modifier::BOLD)),
        Span::raw(format!(
            "  {}",
            crate::render::fields::who(
                &e.by,
                Some(&managers(e))
                    .filter(|m| !m.is_empty())
                    .map(String::as_str)
            )
            .unwrap_or_default()
        )),
    ])];
    if e.fields.is_empty() {
        lines.push(Line::raw(format!("  {}", summary(e))));
    }
    for f in &e.fields {
        let c = &f.change;
        let (sign, style) = match c.kind() {
            ChangeKind::Added => ("+", theme.fg(Color::Green)),
            ChangeKind::Removed => ("-", theme.fg(Color::Red)),
            ChangeKind::Modified => ("~", theme.fg(Color::Yellow)),
        };
        let path = c.path.to_string();
        let manager = f
            .manager
            .as_deref()
            .map(|m| format!("  ({m})"))
            .unwrap_or_default();
        let room = inner_w.saturating_sub(path.chars().count() + manager.chars().count() + 10) / 2;
        let (b, a) = render_pair(c.before.as_ref(), c.after.as_ref(), room.clamp(8, 60));
        lines.push(Line::from(vec![
            Span::styled(format!("{sign} "), style),
            Span::styled(path, style.add_modifier(Modifier::BOLD)),
            Span::raw(": "),
            Span::styled(b, theme.fg(Color::Red)),
            Span::raw(" -> "),
            Span::styled(a, theme.fg(Color::Green)),
            Span::styled(manager, theme.dim()),
        ]));
    }
    let scroll = app.diff_scroll.min(lines.len().saturating_sub(1));
    let para = Paragraph::new(lines)
        .block(block)
        .wrap(Wrap { trim: false })
        .scroll((scroll as u16, 0));
    frame.render_widget(para, area);
}

fn yaml_screen(frame: &mut Frame<'_>, app: &mut App, theme: &Theme, area: Rect) {
    let Some(y) = app.yaml.as_ref() else {
        return;
    };
    let block = Block::new()
        .borders(Borders::ALL)
        .title(format!(" {} ", y.title));
    let lines: Vec<Line<'_>> = y
        .lines
        .iter()
        .skip(y.scroll)
        .map(|l| match l.split_once(':') {
            // Keys in colour, values plain.
            Some((k, v)) if !k.trim_start().starts_with('-') || k.contains(' ') => {
                Line::from(vec![
                    Span::styled(k.to_string(), theme.fg(Color::Cyan)),
                    Span::raw(format!(":{v}")),
                ])
            }
            _ => Line::raw(l.clone()),
        })
        .collect();
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

const HELP: &[(&str, &str)] = &[
    ("j k ↓ ↑", "move"),
    ("g G", "first, last"),
    ("PgDn PgUp", "a page (also ^f ^b)"),
    ("Enter", "open: object → timeline → diff"),
    ("y", "the object as YAML at that time"),
    ("Esc", "back (clears the filter)"),
    ("/", "filter objects by kind, name, namespace"),
    ("] [", "next, previous gap"),
    ("+ -", "wider, narrower window"),
    ("c", "copy the command that prints this view"),
    ("r", "read the journal again now"),
    ("?", "this help"),
    ("q ^c", "quit"),
];

fn help(frame: &mut Frame<'_>, theme: &Theme) {
    let area = frame.area();
    let w = 60.min(area.width);
    let h = (HELP.len() as u16 + 4).min(area.height);
    let popup = Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    };
    let mut lines: Vec<Line<'_>> = HELP
        .iter()
        .map(|(k, what)| {
            Line::from(vec![
                Span::styled(format!(" {k:<16}"), theme.head()),
                Span::raw(*what),
            ])
        })
        .collect();
    lines.push(Line::styled(
        " Read-only; refreshes while a recorder writes.",
        theme.dim(),
    ));
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(lines).block(
            Block::new()
                .borders(Borders::ALL)
                .title(" Keys (Esc closes) "),
        ),
        popup,
    );
}

/// `text` in at most `width` columns, `…` marking a cut.
fn cut(text: &str, width: u16) -> String {
    let width = usize::from(width);
    if text.chars().count() <= width {
        text.to_string()
    } else {
        let mut out: String = text.chars().take(width.saturating_sub(1)).collect();
        out.push('…');
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::browse::app::tests::{T0, answer, app, entry};
    use crate::browse::app::{App, Detail};
    use crate::diff::FieldChange;
    use crate::diff::FieldPath;
    use crate::history::diff::Field;
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use serde_json::json;

    const MINUTE: i64 = 60_000;

    /// The rows made for the list are those ratatui's table shows of all of
    /// them, for every offset and selection of a list longer and shorter
    /// than the screen.
    #[test]
    fn the_rows_in_view_are_those_ratatui_scrolls_to() {
        for len in [1usize, 3, 7, 20] {
            for height in [1usize, 3, 5] {
                for offset in 0..len + 2 {
                    for selected in 0..len {
                        let rows = (0..len).map(|i| Row::new([i.to_string()]));
                        let table =
                            Table::new(rows, [Constraint::Length(4)]).header(Row::new(["H"]));
                        let mut state = TableState::new()
                            .with_offset(offset)
                            .with_selected(Some(selected));
                        let area = Rect::new(0, 0, 4, u16::try_from(height + 1).unwrap());
                        let mut terminal = Terminal::new(TestBackend::new(4, area.height)).unwrap();
                        terminal
                            .draw(|f| f.render_stateful_widget(table, area, &mut state))
                            .unwrap();
                        assert_eq!(
                            in_view(len, height, offset, selected),
                            state.offset(),
                            "{len} rows, {height} high, from {offset}, row {selected} selected"
                        );
                    }
                }
            }
        }
    }

    fn stream(ns: &str, resource: &str, gaps: Vec<(i64, Option<i64>)>) -> StreamLine {
        StreamLine {
            cluster: "kind-shop".into(),
            namespace: ns.into(),
            resource: resource.into(),
            bar: crate::render::bars::BarRow {
                name: format!("{resource}@{ns}"),
                state: "watching".into(),
                from: Some(T0 - 50 * MINUTE),
                to: Some(T0 - MINUTE),
                gaps,
            },
        }
    }

    fn with_streams(mut app: App) -> App {
        let streams = vec![
            stream(
                "shop",
                "configmaps",
                vec![(T0 - 20 * MINUTE, Some(T0 - 17 * MINUTE))],
            ),
            stream("shop", "deployments.apps", Vec::new()),
        ];
        let objects = app.objects.clone();
        app.set_objects(streams, objects);
        app
    }

    fn field(
        path: FieldPath,
        before: serde_json::Value,
        after: serde_json::Value,
        m: &str,
    ) -> Field {
        Field {
            change: FieldChange {
                path,
                before: Some(before),
                after: Some(after),
            },
            manager: Some(m.into()),
            by: Default::default(),
        }
    }

    /// The app with the frontend's timeline open: created, scaled, a gap,
    /// the relist, then a new image.
    fn with_timeline() -> App {
        let mut app = with_streams(app());
        let line = app.selected_object().unwrap().clone();
        let at = line.last.observed_at;
        let mut scaled = entry(at - 30 * MINUTE, EntryType::Modified, "950");
        scaled.fields = vec![field(
            FieldPath::root().key("spec").key("replicas"),
            json!(1),
            json!(3),
            "kubectl-scale",
        )];
        let mut image = entry(at, EntryType::Modified, "1001");
        image.fields = vec![
            field(
                FieldPath::root()
                    .key("spec")
                    .key("template")
                    .key("spec")
                    .key("containers")
                    .index(0)
                    .key("image"),
                json!(
                    "us-central1-docker.pkg.dev/google-samples/microservices-demo/frontend:v0.10.6"
                ),
                json!(
                    "us-central1-docker.pkg.dev/google-samples/microservices-demo/frontend:v0.10.7"
                ),
                "kubectl-set",
            ),
            field(
                FieldPath::root()
                    .key("metadata")
                    .key("annotations")
                    .key("deployment.kubernetes.io/revision"),
                json!("1"),
                json!("2"),
                "kube-controller-manager",
            ),
        ];
        let mut relist = entry(at - 15 * MINUTE, EntryType::Baseline, "990");
        relist.synthetic = true;
        app.open_timeline(
            line,
            answer(vec![
                entry(at - 40 * MINUTE, EntryType::Added, "900"),
                scaled,
                entry(at - 20 * MINUTE, EntryType::Gap, "960"),
                relist,
                image,
            ]),
        );
        app
    }

    fn render(app: &mut App, width: u16, height: u16) -> String {
        let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
        terminal.draw(|f| draw(f, app)).unwrap();
        terminal.backend().to_string()
    }

    fn press(app: &mut App, code: KeyCode) {
        app.key(KeyEvent::new(code, KeyModifiers::NONE));
    }

    #[test]
    fn the_object_list_at_80x24() {
        let mut app = with_streams(app());
        insta::assert_snapshot!(render(&mut app, 80, 24));
    }

    #[test]
    fn names_stay_whole_and_manager_and_by_shrink_first() {
        // Online Boutique: ServiceAccount is the longest kind, and
        // "loadgenerator (deleted)" the longest name.
        let shop = Needs {
            kind: "ServiceAccount".len(),
            namespace: None,
            name: "loadgenerator (deleted)".len(),
            audit: true,
        };
        let width = |w: usize, needs: &Needs| -> Vec<(&'static str, usize)> {
            object_columns(w, needs)
                .into_iter()
                .filter(|(_, w)| *w > 0)
                .collect()
        };
        // 80 columns (the list has 54 inside its borders): NAME whole, no room
        // for MANAGER or BY.
        let at_80 = width(54, &shop);
        assert_eq!(
            at_80,
            [("", 1), ("KIND", 14), ("NAME", 23), ("CHG", 3), ("LAST", 8)]
        );
        // 100 columns: MANAGER and BY come back as room allows.
        let at_100 = width(74, &shop);
        assert!(at_100.contains(&("NAME", 23)), "{at_100:?}");
        assert!(at_100.contains(&("MANAGER", 14)), "{at_100:?}");
        let at_120 = width(82, &shop);
        assert!(
            at_120.iter().any(|(h, w)| *h == "BY" && *w >= 6),
            "{at_120:?}"
        );
        // Every column fits the width it was given.
        for w in [40, 54, 74, 82, 140] {
            let cols = width(w, &shop);
            let used: usize = cols.iter().map(|(_, w)| w).sum::<usize>() + cols.len() - 1;
            assert!(used <= w.max(60), "{w}: {cols:?}");
        }
    }

    #[test]
    fn the_object_list_wide_with_actors_and_all_namespaces() {
        let mut app = with_streams(app());
        app.namespace = None;
        app.audit = true;
        app.objects[0].detail = Some(Detail {
            manager: Some("kubectl-set".into()),
            actor: Some("alice@example.com".into()),
        });
        app.objects[1].detail = Some(Detail {
            manager: Some("kubectl-edit".into()),
            actor: Some("?".into()),
        });
        insta::assert_snapshot!(render(&mut app, 140, 16));
    }

    #[test]
    fn a_filter_that_matches_nothing_says_so() {
        let mut app = with_streams(app());
        press(&mut app, KeyCode::Char('/'));
        for c in "zzz".chars() {
            press(&mut app, KeyCode::Char(c));
        }
        let screen = render(&mut app, 80, 12);
        assert!(screen.contains("No object matches the filter"), "{screen}");
        assert!(screen.contains("/zzz"), "{screen}");
    }

    #[test]
    fn a_timeline_with_a_gap() {
        let mut app = with_timeline();
        insta::assert_snapshot!(render(&mut app, 80, 24));
    }

    #[test]
    fn the_diff_of_a_version() {
        let mut app = with_timeline();
        press(&mut app, KeyCode::Enter);
        insta::assert_snapshot!(render(&mut app, 80, 24));
    }

    #[test]
    fn the_help() {
        let mut app = with_streams(app());
        press(&mut app, KeyCode::Char('?'));
        insta::assert_snapshot!(render(&mut app, 80, 24));
    }

    /// The frontend's YAML, opened from its timeline.
    fn with_yaml() -> App {
        let mut app = with_timeline();
        app.open_yaml(
            "Deployment shop/frontend at 2026-12-01T12:59:00.000Z".into(),
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: frontend\n  namespace: shop\nspec:\n  replicas: 3\n",
            T0,
        );
        app
    }

    #[test]
    fn the_yaml_of_a_version() {
        insta::assert_snapshot!(render(&mut with_yaml(), 80, 10));
    }

    /// A screen as docs/browse.md shows it: plain text, trailing blanks cut,
    /// rows with nothing inside their borders left out.
    fn capture(app: &mut App, width: u16, height: u16) -> String {
        let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
        terminal.draw(|f| draw(f, app)).unwrap();
        let buffer = terminal.backend().buffer();
        (0..height)
            .map(|y| {
                (0..width)
                    .map(|x| buffer[(x, y)].symbol())
                    .collect::<String>()
                    .trim_end()
                    .to_string()
            })
            .filter(|l| l.chars().any(|c| !" │".contains(c)))
            .map(|l| l + "\n")
            .collect()
    }

    #[test]
    fn the_docs_show_these_screens() {
        let doc = include_str!("../../docs/browse.md");
        let mut diff = with_timeline();
        press(&mut diff, KeyCode::Enter);
        let mut help = with_streams(app());
        press(&mut help, KeyCode::Char('?'));
        for (what, mut app, height) in [
            ("the object list", with_streams(app()), 24),
            ("the timeline", with_timeline(), 24),
            ("the diff", diff, 24),
            ("the YAML", with_yaml(), 10),
            ("the help", help, 24),
        ] {
            let screen = capture(&mut app, 80, height);
            assert!(
                doc.contains(&screen),
                "docs/browse.md does not show {what} as drawn now:\n{screen}"
            );
        }
    }

    #[test]
    fn without_colour_nothing_is_coloured_and_the_selection_stays_visible() {
        let mut app = with_streams(app());
        app.color = false;
        let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
        terminal.draw(|f| draw(f, &mut app)).unwrap();
        let buffer = terminal.backend().buffer();
        assert!(buffer.content().iter().all(|c| c.fg == Color::Reset));
        // The selected row (the first object, below the header) is reversed.
        let row = (0..80)
            .map(|x| buffer[(x, 3)].modifier)
            .filter(|m| m.contains(Modifier::REVERSED))
            .count();
        assert!(row > 40, "{row} reversed cells");
    }
}
