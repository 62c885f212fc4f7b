//! A randomized truth checker, in the spirit of Jepsen's: random histories of
//! recorders (random scopes, two journals, clean stops, SIGKILL, SIGSTOP and
//! SIGCONT), users'
//! writes (create, update, relabel, delete, re-create under the same name,
//! a controller's write of what the server owns),
//! compactions (410s) and a teammate's segments imported; then every kind of
//! question, each answer judged against an oracle built from the server's own
//! record of writes (docs/truth.md).
//!
//! - `the_journal_tells_the_truth_in_random_histories`: a seeded run, in the
//!   test command ([`HISTORIES`] histories, `KRPLY_TRUTH_HISTORIES` for more,
//!   `KRPLY_TRUTH_SECONDS` to run for a while, `KRPLY_TRUTH_SEED` to replay one);
//! - `every_failing_seed_stays_fixed`: the seeds it once failed on
//!   (`regressions.txt`);
//! - `the_checker_catches_a_broken_rule`: wrong answers, made on purpose, are
//!   caught by the rule they break.

mod check;
mod histories;
mod oracle;
mod real;
mod run;

use check::Findings;
use oracle::Oracle;
use run::Play;
use std::time::{Duration, Instant};

/// Histories of a run in the test command.
const HISTORIES: u64 = 200;

/// Histories in the test command whose writes are a controller's too
/// ([`histories::TOUCHING_FROM`]): status-only versions, which the writer
/// marks and `browse` counts by their marks.
const TOUCHING_HISTORIES: u64 = 40;

/// Histories on the real control plane in the test command.
const REAL_HISTORIES: u64 = 5;

/// Where failing seeds are kept: one per line, `#` comments.
const REGRESSIONS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/it/truth/regressions.txt"
);

/// What one history showed.
struct Outcome {
    seed: u64,
    findings: Findings,
}

/// Where histories are played.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum On {
    Simulator,
    /// The simulator, with the product's zones, the audit log imported
    /// whole and the product's way to the state at a time, whatever the
    /// history drew ([`histories::History::zone_bits`],
    /// [`histories::History::audit_pieces`],
    /// [`histories::History::seek_records`],
    /// [`histories::History::fold_after_ms`]), packing as its recorders
    /// wrote ([`histories::History::pack_at_write`]): a kept seed replays
    /// as it failed.
    SimulatorAsKept,
    /// The real control plane ([`real`]), one history at a time.
    RealControlPlane,
}

/// The audit log at `log` as `pieces` says, written to `dir`, in the order
/// they are imported.
fn audit_pieces(
    log: &std::path::Path,
    pieces: histories::AuditPieces,
    dir: &std::path::Path,
) -> std::io::Result<Vec<std::path::PathBuf>> {
    let text = std::fs::read_to_string(log)?;
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    if pieces.count <= 1 || lines.len() < 2 * pieces.count {
        return Ok(vec![log.to_path_buf()]);
    }
    std::fs::create_dir_all(dir)?;
    let cut = |i: usize| i * lines.len() / pieces.count;
    let mut out = Vec::new();
    for i in 0..pieces.count {
        // Each piece ends with the line the next begins with.
        let end = if i + 1 == pieces.count {
            lines.len()
        } else {
            cut(i + 1) + 1
        };
        let path = dir.join(format!("piece-{i}.log"));
        std::fs::write(&path, lines[cut(i)..end].concat())?;
        out.push(path);
    }
    if pieces.reversed {
        out.reverse();
    }
    Ok(out)
}

/// A copy of the journal at `from` (no recorder writes it any more) at `to`,
/// with its write-ahead log.
fn copy_journal(from: &std::path::Path, to: &std::path::Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to.parent().expect("a file in a directory"))?;
    std::fs::copy(from, to)?;
    for suffix in ["-wal", "-shm"] {
        let mut side = from.as_os_str().to_owned();
        side.push(suffix);
        let mut dest = to.as_os_str().to_owned();
        dest.push(suffix);
        if std::path::Path::new(&side).exists() {
            std::fs::copy(&side, &dest)?;
        }
    }
    Ok(())
}

/// Plays the history of `seed` and asks its journals every question.
fn check_seed(seed: u64, on: On) -> Outcome {
    let mut history = histories::history(seed);
    if on == On::SimulatorAsKept {
        history.zone_bits = None;
        history.audit_pieces = histories::AuditPieces::WHOLE;
        history.seek_records = None;
        history.fold_after_ms = None;
        history.pack_at_write = true;
        history.small_keyframe_bytes = None;
    }
    let (history, play) = match on {
        On::Simulator | On::SimulatorAsKept => {
            let play = Play::new(
                history.zone_bits,
                history.audit_pieces.pack_writes,
                history.seek_records,
                history.fold_after_ms,
                history.pack_at_write,
                history.small_keyframe_bytes,
            );
            (history, Ok(play))
        }
        On::RealControlPlane => (real::for_real(history), Play::real()),
    };
    let mut play = match play {
        Ok(p) => p,
        Err(e) => {
            return Outcome {
                seed,
                findings: Findings {
                    wrong: vec![format!("the real control plane is not ready: {e}")],
                    ..Findings::default()
                },
            };
        }
    };
    if let Err(e) = play.play(&history) {
        return Outcome {
            seed,
            findings: Findings {
                wrong: vec![format!(
                    "history {} could not be played: {e}\n{:#?}",
                    history.seed, history.steps
                )],
                ..Findings::default()
            },
        };
    }
    let mut findings = Findings {
        freezes: play.trace.freezes,
        ..Findings::default()
    };
    prune_starts(&mut play.trace, &mut findings);
    let used = |j: usize| play.trace.recorders.iter().any(|r| r.scope.journal == j);
    let [j0, j1] = play.trace.journals.clone();
    // Who did it: the server's audit log, imported into each journal, whole
    // or in pieces.
    let pieces_dir = play.sandbox().dir.path().join("audit-pieces");
    let audit_log = play.trace.audit_log.display().to_string();
    let pieces = match audit_pieces(&play.trace.audit_log, history.audit_pieces, &pieces_dir) {
        Ok(p) => p,
        Err(e) => {
            findings
                .wrong
                .push(format!("the audit log could not be cut into pieces: {e}"));
            vec![]
        }
    };
    for (j, path) in [(0, &j0), (1, &j1)] {
        if used(j) {
            // In pieces, the journal must keep what one import of the whole
            // log keeps into a copy of it: each write once.
            let whole = (pieces.len() > 1).then(|| {
                let copy = pieces_dir.join(format!("whole-{j}")).join("journal.db");
                let copied = copy_journal(path, &copy).map(|()| {
                    check::ask(
                        &play,
                        &copy,
                        &["audit".into(), "import".into(), audit_log.clone()],
                    )
                });
                (copy, copied)
            });
            for piece in &pieces {
                let audit = piece.display().to_string();
                let (code, _, stderr) =
                    check::ask(&play, path, &["audit".into(), "import".into(), audit]);
                if code != Some(0) {
                    findings
                        .wrong
                        .push(format!("audit import into journal {j}: {code:?} {stderr}"));
                }
            }
            if let Some((copy, copied)) = whole {
                let kept = |store: &std::path::Path| {
                    check::ask(&play, store, &["status".into(), "-o".into(), "json".into()])
                        .1
                        .and_then(|s| s["audit"]["events"].as_u64())
                };
                match copied {
                    Ok((Some(0), _, _)) if kept(path).is_some_and(|n| Some(n) == kept(&copy)) => {}
                    Ok((code, _, stderr)) => findings.wrong.push(format!(
                        "journal {j} keeps {:?} audit events imported in {} pieces, \
                         {:?} imported whole ({code:?} {stderr})",
                        kept(path),
                        pieces.len(),
                        kept(&copy)
                    )),
                    Err(e) => findings
                        .wrong
                        .push(format!("journal {j} could not be copied: {e}")),
                }
            }
        }
    }
    let mut j0_holds = vec![0];
    if used(1) {
        // The teammate's journal as segments, imported into a new journal
        // (which must answer as it does) and into ours.
        let segments = play.sandbox().dir.path().join("segments");
        let copy = play.sandbox().dir.path().join("copy").join("journal.db");
        let dir = segments.display().to_string();
        for (what, args, store) in [
            (
                "export",
                vec![
                    "export".to_string(),
                    "--format".into(),
                    "parquet".into(),
                    "--dir".into(),
                    dir.clone(),
                ],
                &j1,
            ),
            (
                "import into a new journal",
                vec!["import".into(), dir.clone()],
                &copy,
            ),
            ("import into ours", vec!["import".into(), dir.clone()], &j0),
        ] {
            if what == "import into ours" && !used(0) {
                continue;
            }
            let (code, _, stderr) = check::ask(&play, store, &args);
            if code != Some(0) {
                findings.wrong.push(format!("{what}: {code:?} {stderr}"));
            }
        }
        j0_holds.push(1);
        let oracle = Oracle::new(&play.trace, &[1]);
        let mut rng = histories::Rng::new(seed ^ 0x5eed_0001);
        let theirs = check::questions(&play, &oracle, &j1, &mut rng, &mut findings);
        let mut rng = histories::Rng::new(seed ^ 0x5eed_0001);
        let mut copy_findings = Findings::default();
        let copied = check::questions(&play, &oracle, &copy, &mut rng, &mut copy_findings);
        findings.questions += copy_findings.questions;
        findings.wrong.extend(copy_findings.wrong);
        for (a, b) in theirs.iter().zip(&copied) {
            if a != b {
                // Where they part.
                let at = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
                let around = |s: &str| {
                    let from = s.floor_char_boundary(at.saturating_sub(300));
                    let to = s.ceil_char_boundary((at + 200).min(s.len()));
                    s[from..to].to_string()
                };
                let question = a.split(" -> ").next().unwrap_or_default();
                findings.wrong.push(format!(
                    "export then import answers differently: {question}\n  ...{}\n  ...{}",
                    around(a),
                    around(b)
                ));
            }
        }
    }
    if used(0) {
        let oracle = Oracle::new(&play.trace, &j0_holds);
        let mut rng = histories::Rng::new(seed ^ 0x5eed_0000);
        check::questions(&play, &oracle, &j0, &mut rng, &mut findings);
    }
    if std::env::var_os("KRPLY_TRUTH_VERBOSE").is_some() {
        let dump = format!(
            "history: {:#?}\ntrace: {:#?}\nkept in {}",
            history.steps,
            play.trace,
            play.sandbox().dir.path().display()
        );
        if findings.wrong.is_empty() {
            eprintln!("seed {seed}: {dump}");
        } else {
            findings.wrong.push(dump);
        }
        // The journals stay for a look (the simulator stops with the test).
        std::mem::forget(play);
    }
    Outcome { seed, findings }
}

/// Checks `seeds` on a few threads (one on the real control plane, whose
/// namespaces the histories share); panics with every wrong answer found.
fn check_all(seeds: impl Iterator<Item = u64> + Send, deadline: Option<Duration>, on: On) {
    let started = Instant::now();
    let seeds = std::sync::Mutex::new(seeds);
    let outcomes = std::sync::Mutex::new(Vec::new());
    let threads = match on {
        On::Simulator | On::SimulatorAsKept => 3,
        On::RealControlPlane => 1,
    };
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    if deadline.is_some_and(|d| started.elapsed() > d) {
                        return;
                    }
                    let Some(seed) = seeds.lock().unwrap().next() else {
                        return;
                    };
                    let outcome = check_seed(seed, on);
                    outcomes.lock().unwrap().push(outcome);
                }
            });
        }
    });
    let outcomes = outcomes.into_inner().unwrap();
    let sum =
        |f: &dyn Fn(&Findings) -> usize| -> usize { outcomes.iter().map(|o| f(&o.findings)).sum() };
    let failed: Vec<&Outcome> = outcomes
        .iter()
        .filter(|o| !o.findings.wrong.is_empty())
        .collect();
    crate::real::announce(&format!(
        "truth{}: {} histories ({} recorders frozen and thawed, {} streams pruned behind one), {} questions ({} answers complete, {} watched and {} relist-found \
         changes judged, {} of those with an actor; {} deletions a relist found required; {} actors diff named; {} writes in covered time; \
         {} replay plans made, {} refused for gaps), {} with wrong answers, in {:.0?}",
        match on {
            On::Simulator | On::SimulatorAsKept => "",
            On::RealControlPlane => " on the real control plane",
        },
        outcomes.len(),
        sum(&|f| f.freezes),
        sum(&|f| f.pruned),
        sum(&|f| f.questions),
        sum(&|f| f.complete),
        sum(&|f| f.watched),
        sum(&|f| f.relists),
        sum(&|f| f.relist_actors),
        sum(&|f| f.found_gone),
        sum(&|f| f.diff_actors),
        sum(&|f| f.covered_writes),
        sum(&|f| f.plans),
        sum(&|f| f.plans_refused),
        failed.len(),
        started.elapsed()
    ));
    if !failed.is_empty() {
        let mut report = String::new();
        for o in failed.iter().take(5) {
            report.push_str(&format!(
                "\nseed {} (KRPLY_TRUTH_SEED={} cargo test truth; keep it in tests/it/truth/regressions.txt):\n",
                o.seed, o.seed
            ));
            for w in o.findings.wrong.iter().take(12) {
                report.push_str(&format!("  - {w}\n"));
            }
        }
        let mut seeds: Vec<u64> = failed.iter().map(|o| o.seed).collect();
        seeds.sort_unstable();
        panic!(
            "{} of {} histories got wrong answers (seeds {seeds:?}; the first five below):{report}",
            failed.len(),
            outcomes.len()
        );
    }
}

#[test]
fn the_journal_tells_the_truth_in_random_histories() {
    if let Some(seed) = std::env::var("KRPLY_TRUTH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        return check_all(std::iter::once(seed), None, On::Simulator);
    }
    let histories = std::env::var("KRPLY_TRUTH_HISTORIES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(HISTORIES);
    let seconds = std::env::var("KRPLY_TRUTH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .map(Duration::from_secs);
    // A fixed first seed: the same histories in every run of the test
    // command (the long mode goes on from there; `KRPLY_TRUTH_FIRST` starts
    // elsewhere, to go through a stretch of seeds again).
    let first = std::env::var("KRPLY_TRUTH_FIRST")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000);
    match seconds {
        Some(d) => check_all(first.., Some(d), On::Simulator),
        None => check_all(first..first + histories, None, On::Simulator),
    }
}

/// Histories where a controller writes what the server owns too: versions a
/// default `diff`, `log` and `browse` leave out (`KRPLY_TRUTH_HISTORIES` for
/// more; `KRPLY_TRUTH_FIRST` at or above [`histories::TOUCHING_FROM`] takes
/// the long mode through them).
#[test]
fn the_journal_tells_the_truth_when_controllers_write_too() {
    let histories = std::env::var("KRPLY_TRUTH_HISTORIES")
        .ok()
        .and_then(|s| s.parse().ok())
        .map_or(TOUCHING_HISTORIES, |n: u64| n / 5);
    let first = histories::TOUCHING_FROM;
    check_all(first..first + histories, None, On::Simulator);
}

/// A handful of histories on the real control plane, judged against its
/// own audit log (`KRPLY_TRUTH_REAL_HISTORIES` for more).
#[test]
fn the_journal_tells_the_truth_on_the_real_control_plane() {
    let histories = std::env::var("KRPLY_TRUTH_REAL_HISTORIES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(REAL_HISTORIES);
    let first = 7_000;
    check_all(first..first + histories, None, On::RealControlPlane);
}

#[test]
fn the_checker_catches_a_broken_rule() {
    use check::Break;
    // Each rule broken on purpose in the answers of a few histories: every
    // one is caught, by the rule it breaks.
    for (b, rule) in [
        (Break::LoseAVersion, "is missing"),
        (Break::InventAVersion, "never written"),
        (Break::CallIncompleteComplete, "complete, but"),
        (Break::LabelWatchedAsRelist, "a recorder watched it happen"),
        (
            Break::NameAnotherUser,
            "is said made by mallory@example.com",
        ),
        (Break::HideAGap, "but no recorder of it watched"),
        (Break::DropAPlannedObject, ": plans "),
        (
            Break::HideWhatARelistFoundGone,
            "found it gone, but the log does not say so",
        ),
    ] {
        check::break_rule(Some(b));
        // The first history that catches it will do. Few histories have a
        // relist find a deletion; 1033 is the first that does.
        let first = if b == Break::HideWhatARelistFoundGone {
            1_030
        } else {
            1_000
        };
        let caught = (first..first + 10)
            .map(|s| check_seed(s, On::Simulator))
            .any(|o| o.findings.wrong.iter().any(|w| w.contains(rule)));
        check::break_rule(None);
        assert!(caught, "{b:?} went unnoticed in 10 histories");
    }
}

#[test]
fn every_failing_seed_stays_fixed() {
    let text = std::fs::read_to_string(REGRESSIONS).unwrap_or_default();
    let seeds: Vec<u64> = text
        .lines()
        .filter_map(|l| l.split('#').next())
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    // Seeds kept before histories drew their zones failed with the
    // product's; a seed kept since may have failed with the zones it draws.
    check_all(seeds.iter().copied(), None, On::SimulatorAsKept);
    check_all(seeds.into_iter(), None, On::Simulator);
}

/// Where retention (`record --retain`) made each recorder's streams start
/// (the latest pruned baseline of the stream in its journal), into
/// [`run::Recorder::pruned`]; and the journal never pruned more than it
/// was asked: only a stream a recorder was asked to retain, and never later
/// than the retention before that recorder stopped.
fn prune_starts(trace: &mut run::Trace, findings: &mut Findings) {
    let journals = trace.journals.clone();
    let recorders = trace.recorders.clone();
    for r in trace.recorders.iter_mut() {
        for &kind in &r.scope.kinds {
            let stream = r.scope.stream(kind);
            let Some(start) = pruned_start(&journals[r.scope.journal], &stream) else {
                continue;
            };
            r.pruned.push((kind, start));
            findings.pruned += 1;
            let allowed = recorders
                .iter()
                .filter(|o| o.scope.journal == r.scope.journal && o.scope.kinds.contains(&kind))
                .filter(|o| o.scope.stream(kind) == stream)
                .filter_map(|o| {
                    let retain = krply::time::parse_positive_duration(o.scope.retain?).ok()?;
                    let stopped = o.watching.last()?.1;
                    Some(stopped.saturating_sub(retain.as_millis() as i64))
                })
                .max();
            match allowed {
                None => findings.wrong.push(format!(
                    "{stream} of journal {} starts at a pruned baseline ({start}), but no recorder of it retained",
                    r.scope.journal
                )),
                Some(allowed) if start > allowed => findings.wrong.push(format!(
                    "{stream} of journal {} was pruned up to {start}, later than asked ({allowed})",
                    r.scope.journal
                )),
                Some(_) => {}
            }
        }
    }
}

/// The time of the latest baseline retention wrote for `stream` in the
/// journal at `path`, if any.
fn pruned_start(path: &std::path::Path, stream: &str) -> Option<i64> {
    let journal = krply::journal::Journal::open(path).ok()?;
    let id = journal
        .streams(None)
        .ok()?
        .into_iter()
        .find(|s| s.name() == stream)?
        .id;
    let conn =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .ok()?;
    conn.query_row(
        "SELECT max(observed_at) FROM records
         WHERE stream_id = ?1 AND kind = 3 AND info LIKE '%\"pruned\":true%'",
        [id],
        |r| r.get::<_, Option<i64>>(0),
    )
    .ok()
    .flatten()
}
