//! Coverage drawn as time bars (docs/output.md, `coverage`): one row per
//! stream across a window, covered time drawn, gaps in their own glyph (and
//! colour), time before the first baseline and after the last durable point
//! blank; a time axis above with the window's ends and a few ticks. Pure: the
//! caller says how wide and whether glyphs may be fancy.

use super::Paint;

/// One stream's coverage, as the bars need it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BarRow {
    pub name: String,
    /// `watching`, `stopped`, ...
    pub state: String,
    /// First baseline and last durable point (ms).
    pub from: Option<i64>,
    pub to: Option<i64>,
    /// Stretches not covered: `(from, to)`, `to` `None` while open.
    pub gaps: Vec<(i64, Option<i64>)>,
}

impl BarRow {
    /// A stream's row, named `name`, from its coverage.
    pub fn of(c: &crate::journal::read::Coverage, name: String) -> BarRow {
        BarRow {
            name,
            state: c.state.as_str().to_string(),
            from: c.from,
            to: c.to,
            gaps: c.windows.iter().map(|w| (w.from, w.to)).collect(),
        }
    }
}

/// What one cell of a bar shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cell {
    /// Not recorded: before the first baseline, after the last durable point.
    Blank,
    Covered,
    Gap,
}

/// The glyphs: Unicode blocks with colour on a terminal, plain ASCII otherwise.
struct Glyphs {
    covered: &'static str,
    gap: &'static str,
}

const FANCY: Glyphs = Glyphs {
    covered: "█",
    gap: "░",
};
const PLAIN: Glyphs = Glyphs {
    covered: "=",
    gap: "x",
};

/// The fewest columns a bar gets, however narrow the terminal.
const MIN_BAR: usize = 24;
/// The columns a bar gets before names take more than their first 12.
const WANT_BAR: usize = 40;

/// Draws `rows` across `[since, until]` within `width` columns. `fancy`:
/// Unicode glyphs and colour (a terminal without NO_COLOR); else ASCII.
/// `clock` formats a time for the axis.
pub fn bars(
    rows: &[BarRow],
    since: i64,
    until: i64,
    width: usize,
    paint: Paint,
    clock: &dyn Fn(i64) -> String,
) -> String {
    let glyphs = if paint.enabled { &FANCY } else { &PLAIN };
    let until = until.max(since + 1);
    let state_w = rows
        .iter()
        .map(|r| r.state.chars().count())
        .max()
        .unwrap_or(0);
    let name_full = rows
        .iter()
        .map(|r| r.name.chars().count())
        .max()
        .unwrap_or(0)
        .max(6);
    // name, two spaces, state, two spaces, bar between `|`s.
    let fixed = 2 + state_w + 2 + 2;
    // Bars want WANT_BAR columns: names are cut first (to no less than 12).
    let name_w = name_full.min(width.saturating_sub(fixed + WANT_BAR).max(12));
    let bar_w = width.saturating_sub(name_w + fixed).max(MIN_BAR);
    let mut out = String::new();
    let pad = name_w + 2 + state_w + 2;
    out.push_str(&format!(
        "{}{}\n",
        " ".repeat(pad + 1),
        axis(since, until, bar_w, clock)
    ));
    for r in rows {
        let cells = cells(r, since, until, bar_w);
        let mut bar = String::new();
        // Runs of one kind painted at once.
        let mut i = 0;
        while i < cells.len() {
            let kind = cells[i];
            let run = cells[i..].iter().take_while(|c| **c == kind).count();
            let text = |g: &str| g.repeat(run);
            bar.push_str(&match kind {
                Cell::Blank => " ".repeat(run),
                Cell::Covered => paint.green(&text(glyphs.covered)),
                Cell::Gap => paint.red(&text(glyphs.gap)),
            });
            i += run;
        }
        out.push_str(&format!(
            "{}  {:<state_w$}  |{bar}|\n",
            cut(&r.name, name_w),
            r.state
        ));
    }
    out.push_str(&format!(
        "{} covered  {} gap (not covered: 410, restart, unavailable)  blank: not recorded\n",
        paint.green(glyphs.covered),
        paint.red(glyphs.gap)
    ));
    out
}

/// The cells of one row: a cell is a gap when any gap touches it (so a
/// 50 ms gap stays visible in an hour), covered when it lies within the
/// recorded stretch, else blank.
pub fn cells(r: &BarRow, since: i64, until: i64, n: usize) -> Vec<Cell> {
    let span = (until - since) as f64;
    (0..n)
        .map(|i| {
            let a = since + (span * i as f64 / n as f64) as i64;
            let b = since + (span * (i + 1) as f64 / n as f64) as i64;
            let (Some(from), Some(to)) = (r.from, r.to) else {
                return Cell::Blank;
            };
            if r.gaps
                .iter()
                .any(|&(gf, gt)| gf < b && gt.is_none_or(|gt| gt > a))
            {
                Cell::Gap
            } else if a < to && b > from {
                Cell::Covered
            } else {
                Cell::Blank
            }
        })
        .collect()
}

/// `|start ... tick ... end|`: the window's ends and ticks between them where
/// their labels fit, over `n` columns.
pub fn axis(since: i64, until: i64, n: usize, clock: &dyn Fn(i64) -> String) -> String {
    let mut line: Vec<char> = vec![' '; n];
    let place = |line: &mut Vec<char>, at: usize, label: &str| -> bool {
        let chars: Vec<char> = label.chars().collect();
        let start = at.min(n.saturating_sub(chars.len()));
        let end = start + chars.len();
        // Keep a blank column between labels.
        let lo = start.saturating_sub(1);
        let hi = (end + 1).min(n);
        if end > n || line[lo..hi].iter().any(|c| *c != ' ') {
            return false;
        }
        line[start..end].copy_from_slice(&chars);
        true
    };
    place(&mut line, 0, &clock(since));
    let end = clock(until);
    place(&mut line, n.saturating_sub(end.chars().count()), &end);
    for k in 1..4 {
        let at = n * k / 4;
        let t = since + (until - since) * k as i64 / 4;
        let label = clock(t);
        place(
            &mut line,
            at.saturating_sub(label.chars().count() / 2),
            &label,
        );
    }
    line.into_iter().collect::<String>().trim_end().to_string()
}

/// `text` cut to `max` characters, with `…` when cut.
fn cut(text: &str, max: usize) -> String {
    let n = text.chars().count();
    if n <= max {
        return format!("{text:<max$}");
    }
    let mut s: String = text.chars().take(max.saturating_sub(1)).collect();
    s.push('…');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clock(t: i64) -> String {
        // Seconds since the window's start, as a stand-in for a time of day.
        format!("{}s", t / 1000)
    }

    fn rows() -> Vec<BarRow> {
        vec![
            BarRow {
                name: "configmaps.v1@shop".into(),
                state: "stopped".into(),
                from: Some(10_000),
                to: Some(90_000),
                // A 50 ms gap: it must show however wide a cell is.
                gaps: vec![(50_000, Some(50_050))],
            },
            BarRow {
                name: "deployments.v1.apps@a-namespace-with-a-long-name".into(),
                state: "watching".into(),
                from: Some(0),
                to: Some(100_000),
                gaps: vec![],
            },
            BarRow {
                name: "secrets.v1@shop".into(),
                state: "unavailable".into(),
                from: Some(20_000),
                to: Some(70_000),
                gaps: vec![(40_000, None)],
            },
        ]
    }

    #[test]
    fn bars_at_80_and_200_columns_plain() {
        let plain = Paint { enabled: false };
        let narrow = bars(&rows(), 0, 100_000, 80, plain, &clock);
        for line in narrow.lines() {
            assert!(line.chars().count() <= 80, "{line:?}");
        }
        insta::assert_snapshot!("bars_80_plain", narrow);
        let wide = bars(&rows(), 0, 100_000, 200, plain, &clock);
        for line in wide.lines() {
            assert!(line.chars().count() <= 200, "{line:?}");
        }
        insta::assert_snapshot!("bars_200_plain", wide);
    }

    #[test]
    fn colour_and_unicode_on_a_terminal() {
        let out = bars(&rows(), 0, 100_000, 80, Paint { enabled: true }, &clock);
        assert!(out.contains("\x1b[31m"), "gaps in red");
        assert!(out.contains('█') && out.contains('░'));
        insta::assert_snapshot!("bars_80_colour", out);
    }

    #[test]
    fn a_short_gap_shows_and_names_are_cut_before_bars() {
        let out = bars(&rows(), 0, 100_000, 80, Paint { enabled: false }, &clock);
        let cm = out.lines().find(|l| l.starts_with("configmaps")).unwrap();
        assert!(cm.contains('x'), "{cm}");
        let long = out.lines().find(|l| l.starts_with("deployments")).unwrap();
        assert!(long.contains('…'), "{long}");
        let bar = long.split('|').nth(1).unwrap();
        assert!(bar.chars().count() >= MIN_BAR, "{long}");
        // An open gap runs to the end of the recorded stretch and past it.
        let secrets = out.lines().find(|l| l.starts_with("secrets")).unwrap();
        assert!(secrets.trim_end().ends_with("x|"), "{secrets}");
    }
}
