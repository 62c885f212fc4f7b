//! Browse benchmark (prints figures; asserts nothing).
//!
//! On the history bench's journal (1M events over 10k Deployments over 7
//! days, built here or reused with `KRPLY_BENCH_JOURNAL=PATH`): how long
//! `browse` takes to open and draw its first screen, and to redraw after each
//! kind of key, in process, drawing into ratatui's test backend at 200x50 and
//! at 80x24. What is timed is what the app does between a key and a drawn
//! frame: the key, the journal reads it asks for, the rows' managers, and the
//! frame. Not timed: the terminal's own write of the frame, and process start
//! (about 5 ms).
//!
//! The window ends at the journal's last record (so a reused journal still
//! has one); the goals are 200 ms to open and 50 ms per key.
//!
//! `cargo bench --bench browse` (`-- --quick` for 100k events over 1k objects;
//! `-- --restart` for a journal whose recorder restarted two hours ago, so
//! every window holds a list of every object).

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use krply::browse::Session;
use krply::browse::app::{App, Effect, Window};
use krply::browse::view;
use krply::journal::Journal;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::time::Instant;

mod common;

/// The allocator of the binary (src/main.rs): what is timed here is what
/// `kubectl krply browse` does, and glibc's malloc takes a third longer over
/// its million small allocations.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const NS: &str = "bench";
const CLUSTER: &str = "bench-cluster";
const HOUR: i64 = 3_600_000;

fn main() {
    let (objects, events) = common::history_size();
    println!("kubectl-krply browse benchmark: {events} events over {objects} objects, 7 days");
    let dir = tempfile::tempdir().unwrap();
    let store = std::env::var_os("KRPLY_BENCH_JOURNAL")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| dir.path().join("journal.db"));
    if store.exists() {
        println!("reusing {}", store.display());
        common::fold_as_a_stop(&store);
    } else {
        let t = Instant::now();
        common::history_journal(&store, CLUSTER, NS, objects, events);
        println!("built in {:.1}s", t.elapsed().as_secs_f64());
    }
    let last: i64 = rusqlite::Connection::open(&store)
        .unwrap()
        .query_row("SELECT max(observed_at) FROM records", [], |r| r.get(0))
        .unwrap();

    for (w, h) in [(200u16, 50u16), (80, 24)] {
        println!("\n{w}x{h}:");
        for span in [HOUR, 24 * HOUR, 7 * 24 * HOUR] {
            let window = Window {
                since: last - span,
                until: last,
                live: false,
            };
            let mut listed = 0;
            let ms = median(7, || {
                let (_, app, _) = open(&store, window, (w, h));
                listed = app.objects.len();
            });
            println!(
                "open and draw, last {:<4} ({listed:>5} objects listed)  median {ms:>6.1} ms  goal <= 200: {}",
                app_label(window),
                verdict(ms, 200.0)
            );
        }
        keys(&store, last, (w, h));
    }
}

fn app_label(w: Window) -> String {
    App::new(String::new(), None, w).window.label()
}

fn verdict(ms: f64, goal: f64) -> &'static str {
    if ms <= goal { "met" } else { "not met" }
}

/// Opens the browser on a `size` screen: the session, the app after its
/// first load, and the terminal with the first frame drawn.
fn open(
    store: &std::path::Path,
    window: Window,
    size: (u16, u16),
) -> (Session, App, Terminal<TestBackend>) {
    let journal = Journal::open(store).unwrap();
    let mut session = Session::new(journal, CLUSTER.into(), Some(NS.into()));
    let mut app = App::new(CLUSTER.into(), Some(NS.into()), window);
    session.load(&mut app).unwrap();
    let mut terminal = Terminal::new(TestBackend::new(size.0, size.1)).unwrap();
    frame(&session, &mut app, &mut terminal);
    (session, app, terminal)
}

/// What the event loop does before each frame: the shown rows' managers, then
/// the frame.
fn frame(session: &Session, app: &mut App, terminal: &mut Terminal<TestBackend>) {
    let height = usize::from(terminal.size().unwrap().height);
    session.fill_details(app, height).unwrap();
    terminal.draw(|f| view::draw(f, app)).unwrap();
}

fn press(
    session: &mut Session,
    app: &mut App,
    terminal: &mut Terminal<TestBackend>,
    code: KeyCode,
) {
    let effect = app.key(KeyEvent::new(code, KeyModifiers::NONE));
    assert_ne!(effect, Effect::Quit);
    session.apply(app, effect).unwrap();
    frame(session, app, terminal);
}

/// The median of `n` timed runs of `f`, in ms.
fn median(n: usize, mut f: impl FnMut()) -> f64 {
    median_of(n, || ms(&mut f))
}

/// The median of `n` figures `f` gives (each times what it wants).
fn median_of(n: usize, mut f: impl FnMut() -> f64) -> f64 {
    let mut times: Vec<f64> = (0..n).map(|_| f()).collect();
    times.sort_by(f64::total_cmp);
    times[n / 2]
}

/// How long `f` takes, in ms.
fn ms(f: &mut impl FnMut()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_secs_f64() * 1e3
}

/// Each kind of key, timed from the key to the drawn frame, in the last hour's
/// window.
fn keys(store: &std::path::Path, last: i64, size: (u16, u16)) {
    let window = Window {
        since: last - HOUR,
        until: last,
        live: false,
    };
    let (mut session, mut app, mut terminal) = open(store, window, size);
    let report = |label: &str, ms: f64| {
        println!(
            "key {label:<42} median {ms:>6.1} ms  goal <= 50: {}",
            verdict(ms, 50.0)
        );
    };
    let s = &mut session;
    let (a, t) = (&mut app, &mut terminal);
    report(
        "j (next row)",
        median(21, || press(s, a, t, KeyCode::Char('j'))),
    );
    report(
        "PgDn (a page of new rows)",
        median(21, || press(s, a, t, KeyCode::PageDown)),
    );
    a.selected = 0;
    report(
        "/ f (the filter typed)",
        median_of(21, || {
            press(s, a, t, KeyCode::Char('/'));
            let took = ms(&mut || press(s, a, t, KeyCode::Char('f')));
            press(s, a, t, KeyCode::Esc);
            press(s, a, t, KeyCode::Esc);
            took
        }),
    );
    // The busiest object of the window, and its timeline.
    let busiest = (0..a.shown.len())
        .max_by_key(|&i| a.objects[a.shown[i]].changes)
        .unwrap_or(0);
    for (what, row) in [("first row", 0), ("busiest in window", busiest)] {
        a.selected = row;
        let mut versions = 0;
        let took = median_of(7, || {
            let took = ms(&mut || press(s, a, t, KeyCode::Enter));
            versions = a.timeline.as_ref().map_or(0, |t| t.answer.entries.len());
            press(s, a, t, KeyCode::Esc);
            took
        });
        report(
            &format!("Enter: timeline, {what} ({versions} entries)"),
            took,
        );
    }
    a.selected = busiest;
    press(s, a, t, KeyCode::Enter);
    report(
        "k (timeline: previous version)",
        median(21, || press(s, a, t, KeyCode::Char('k'))),
    );
    report(
        "Enter (its diff)",
        median_of(21, || {
            let took = ms(&mut || press(s, a, t, KeyCode::Enter));
            press(s, a, t, KeyCode::Esc);
            took
        }),
    );
    report(
        "y (its YAML)",
        median_of(21, || {
            let took = ms(&mut || press(s, a, t, KeyCode::Char('y')));
            press(s, a, t, KeyCode::Esc);
            took
        }),
    );
    report(
        "Esc (back to the list)",
        median_of(7, || {
            let took = ms(&mut || press(s, a, t, KeyCode::Esc));
            press(s, a, t, KeyCode::Enter);
            took
        }),
    );
    press(s, a, t, KeyCode::Esc);
    report(
        "+ (the list of a 3h window)",
        median_of(7, || {
            let took = ms(&mut || press(s, a, t, KeyCode::Char('+')));
            press(s, a, t, KeyCode::Char('-'));
            took
        }),
    );
    report(
        "r (read the journal again)",
        median(7, || press(s, a, t, KeyCode::Char('r'))),
    );
}
