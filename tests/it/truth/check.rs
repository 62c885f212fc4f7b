//! Asks a journal every kind of question through the real binary and judges
//! each answer against the [`Oracle`], by the rules of docs/consistency.md:
//!
//! - **complete means true**: an answer that says it is complete equals the
//!   truth;
//! - **no version lost**: every version written while a recorder without a
//!   selector held the object and watched is in the answer;
//! - **no version invented**: every version an answer names was written, by
//!   then, and is named once;
//! - **relist labels exact**: a change is `relist` exactly where no recorder
//!   watched it happen, and happened within the stretch it gives;
//! - **actors exact**: a watched change names the user who made it;
//! - **coverage true**: no time `coverage` claims holds an unwatched write;
//! - **plans whole**: a `replay plan` made holds exactly what existed;
//! - **browse agrees**: browse lists what `log` names, marked and counted
//!   alike.

use super::histories::{Key, Kind, NAMESPACES, Op, Rng, USERS};
use super::oracle::Oracle;
use super::run::Play;
use krply::time::Millis;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// What a journal's questions found.
#[derive(Debug, Default)]
pub struct Findings {
    pub questions: usize,
    pub wrong: Vec<String>,
    /// Answers that said they were complete (each was checked whole).
    pub complete: usize,
    /// Changes answers said a relist found, and watched ones (each checked).
    pub relists: usize,
    pub watched: usize,
    /// Relist-found changes that named a user (each checked).
    pub relist_actors: usize,
    /// Deletions a relist in a log's window found, each required in it.
    pub found_gone: usize,
    /// Users `diff` named for an object or a field (each checked).
    pub diff_actors: usize,
    /// Recorders frozen (SIGSTOP) and thawed in the history.
    pub freezes: usize,
    /// Streams retention pruned behind a recorder (`record --retain`).
    pub pruned: usize,
    /// Writes made in time `coverage` says a stream covered (each checked
    /// watched).
    pub covered_writes: usize,
    /// `replay plan`s made (each object set checked), and refused for gaps.
    pub plans: usize,
    pub plans_refused: usize,
}

/// A rule broken on purpose: answers are changed this way before they are
/// judged, and the checker must catch it (`the_checker_catches_a_broken_rule`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Break {
    /// A watched version goes missing from `log` and `timeline`.
    LoseAVersion,
    /// A version's resourceVersion becomes one never written.
    InventAVersion,
    /// An incomplete answer says it is complete.
    CallIncompleteComplete,
    /// A watched change is labelled found by a relist.
    LabelWatchedAsRelist,
    /// A change is said made by someone else.
    NameAnotherUser,
    /// `coverage` leaves a stream's gaps out: time nobody watched is said
    /// covered.
    HideAGap,
    /// A `replay plan` leaves an object out.
    DropAPlannedObject,
    /// `log` leaves out the deletions a relist found.
    HideWhatARelistFoundGone,
}

thread_local! {
    static BREAK: std::cell::Cell<Option<Break>> = const { std::cell::Cell::new(None) };
}

/// Judges every answer of this thread as `b` breaks it, until `None`.
pub fn break_rule(b: Option<Break>) {
    BREAK.with(|c| c.set(b));
}

/// `v` as [`Break`] breaks it.
fn broken(b: Break, v: &mut Value) {
    let first_watched = |v: &mut Value| -> Option<usize> {
        v["entries"].as_array()?.iter().position(|e| {
            matches!(e["type"].as_str(), Some("ADDED" | "MODIFIED" | "DELETED"))
                && e["observed"] == "watch"
        })
    };
    match b {
        Break::LoseAVersion => {
            if let Some(i) = first_watched(v)
                && let Some(entries) = v["entries"].as_array_mut()
            {
                entries.remove(i);
            }
        }
        Break::InventAVersion => {
            if let Some(i) = first_watched(v) {
                v["entries"][i]["resource_version"] = "999999".into();
            }
        }
        Break::CallIncompleteComplete => {
            if v["complete"] == false {
                v["complete"] = true.into();
            }
        }
        Break::LabelWatchedAsRelist => {
            if let Some(i) = first_watched(v) {
                let at = v["entries"][i]["observed_at"].clone();
                v["entries"][i]["observed"] = "relist".into();
                v["entries"][i]["between"] = serde_json::json!({"from": at, "to": at});
            }
        }
        Break::HideAGap => {
            for s in v["streams"].as_array_mut().into_iter().flatten() {
                s["gap_windows"] = Value::Array(Vec::new());
            }
        }
        Break::DropAPlannedObject => {
            if let Some(objects) = v["objects"].as_array_mut()
                && let Some(i) = objects
                    .iter()
                    .position(|o| matches!(o["kind"].as_str(), Some("ConfigMap" | "Deployment")))
            {
                objects.remove(i);
            }
        }
        Break::HideWhatARelistFoundGone => {
            if let Some(entries) = v["entries"].as_array_mut() {
                entries.retain(|e| {
                    !(e["observed"] == "relist"
                        && (e["type"] == "DELETED" || e["change"] == "deleted"))
                });
            }
        }
        Break::NameAnotherUser => {
            if let Some(i) = first_watched(v)
                && v["entries"][i]["actor"].is_object()
            {
                v["entries"][i]["actor"]["user"] = "mallory@example.com".into();
            }
        }
    }
}

impl Findings {
    fn wrong(&mut self, question: &str, what: String) {
        self.wrong.push(format!("{question}: {what}"));
    }
}

/// A scope a question names: `-n NS` or `-A`.
fn scope_args(ns: Option<&str>) -> Vec<String> {
    match ns {
        Some(ns) => vec!["-n".into(), ns.into()],
        None => vec!["-A".into()],
    }
}

fn in_scope(key: &Key, ns: Option<&str>) -> bool {
    ns.is_none_or(|ns| ns == key.namespace)
}

fn ms(v: &Value) -> Option<i64> {
    Millis::parse_rfc3339(v.as_str()?).ok().map(|m| m.as_ms())
}

fn kind_of(name: &str) -> Option<Kind> {
    Kind::ALL.into_iter().find(|k| k.name() == name)
}

fn key_of(v: &Value) -> Option<Key> {
    let kind = kind_of(v["kind"].as_str()?)?;
    let namespace = NAMESPACES
        .into_iter()
        .find(|n| Some(*n) == v["namespace"].as_str())?;
    let name = super::histories::NAMES
        .into_iter()
        .find(|n| Some(*n) == v["name"].as_str())?;
    Some(Key {
        kind,
        namespace,
        name,
    })
}

/// The binary's answer: exit code, JSON (when it printed some), stderr.
pub fn ask(play: &Play, store: &Path, args: &[String]) -> (Option<i32>, Option<Value>, String) {
    let mut full: Vec<&str> = args.iter().map(String::as_str).collect();
    full.extend(["--store", store.to_str().expect("utf-8 path")]);
    let out = play.sandbox().run(&full);
    let mut json: Option<Value> = serde_json::from_str(&out.stdout).ok();
    if let (Some(b), Some(v)) = (BREAK.with(|c| c.get()), json.as_mut()) {
        broken(b, v);
    }
    (out.code, json, out.stderr)
}

/// Asks the journal at `store` questions drawn from `rng`, judged by `oracle`.
/// Returns the raw answers too (for comparing journals).
pub fn questions(
    play: &Play,
    oracle: &Oracle<'_>,
    store: &Path,
    rng: &mut Rng,
    findings: &mut Findings,
) -> Vec<String> {
    let marks = &play.trace.marks;
    let keys = oracle.keys();
    let mut answers = Vec::new();
    let mut scopes: Vec<Option<&str>> = NAMESPACES.iter().map(|n| Some(*n)).collect();
    if !play.is_real() {
        scopes.push(None);
    }
    for &at in marks {
        // The state of one scope at a quiet moment.
        let ns = rng.pick(&scopes);
        let mut args = vec![
            "snapshot".to_string(),
            "--at".into(),
            Millis::from_ms(at).to_string(),
        ];
        args.extend(scope_args(ns));
        args.extend(["-o".into(), "json".into()]);
        answers.push(snapshot(play, oracle, store, &args, ns, at, findings));
        // One object then.
        if !keys.is_empty() {
            let key = keys[rng.below(keys.len())].clone();
            answers.push(get_at(play, oracle, store, &key, at, findings));
        }
    }
    let mut windows: Vec<(i64, i64)> = marks.windows(2).map(|w| (w[0], w[1])).collect();
    if marks.len() > 2 {
        windows.push((marks[0], marks[marks.len() - 1]));
    }
    for _ in 0..2.min(windows.len()) {
        let (since, until) = windows[rng.below(windows.len())];
        let ns = rng.pick(&scopes);
        answers.push(diff(play, oracle, store, ns, since, until, findings));
        answers.push(log(play, oracle, store, ns, since, until, findings));
        browse(play, store, ns, since, until, findings);
    }
    // The whole history in every namespace, where every relist is: what
    // each found gone must be in it.
    if let (Some(&since), Some(&until)) = (marks.first(), marks.last())
        && since < until
    {
        answers.push(log(play, oracle, store, None, since, until, findings));
    }
    if let Some(&(since, until)) = windows.first() {
        // No random draw: the questions above stay the ones a seed always asked.
        never_seen(play, store, since, until, findings);
    }
    if !keys.is_empty() {
        let key = keys[rng.below(keys.len())].clone();
        answers.push(timeline(play, oracle, store, &key, findings));
    }
    answers.push(coverage(play, oracle, store, rng.pick(&scopes), findings));
    if let (false, Some(&at)) = (marks.is_empty(), marks.get(rng.below(marks.len().max(1)))) {
        // Into a namespace of its own: a plan is saved in the journal, and
        // not compared between journals (its id and time are its own).
        replay_plan(play, oracle, store, rng.pick(&NAMESPACES), at, findings);
    }
    answers
}

/// A question that must be answered (exit 0, JSON): the answer as journals
/// compare it, and its JSON, or `None` with the failure noted.
fn must_answer(
    play: &Play,
    store: &Path,
    args: &[String],
    f: &mut Findings,
) -> (String, Option<Value>) {
    let (code, json, stderr) = ask(play, store, args);
    let answer = record_answer(args, code, &json);
    match json.filter(|_| code == Some(0)) {
        Some(v) => (answer, Some(v)),
        None => {
            f.wrong(&args.join(" "), format!("no answer ({code:?}): {stderr}"));
            (answer, None)
        }
    }
}

/// Exit code, stdout and stderr of the command, as compared between journals.
fn record_answer(args: &[String], code: Option<i32>, json: &Option<Value>) -> String {
    format!(
        "{} -> {:?} {}",
        args.join(" "),
        code,
        json.as_ref().map(Value::to_string).unwrap_or_default()
    )
}

fn snapshot(
    play: &Play,
    oracle: &Oracle<'_>,
    store: &Path,
    args: &[String],
    ns: Option<&str>,
    at: i64,
    f: &mut Findings,
) -> String {
    f.questions += 1;
    let q = args.join(" ");
    let (answer, v) = must_answer(play, store, args, f);
    let Some(v) = v else {
        return answer;
    };
    let mut got: BTreeMap<Key, String> = BTreeMap::new();
    for item in v["items"].as_array().into_iter().flatten() {
        let meta = &item["metadata"];
        let key = key_of(&serde_json::json!({
            "kind": item["kind"], "namespace": meta["namespace"], "name": meta["name"]
        }));
        let (Some(key), Some(rv)) = (key, meta["resourceVersion"].as_str()) else {
            continue;
        };
        match oracle.write(&key, rv) {
            None => f.wrong(&q, format!("{key:?} at rv {rv} was never written")),
            Some(w) if w.t1 >= at => f.wrong(&q, format!("{key:?} rv {rv} was written after {at}")),
            Some(_) => {}
        }
        if got.insert(key.clone(), rv.to_string()).is_some() {
            f.wrong(&q, format!("{key:?} is listed twice"));
        }
    }
    if v["complete"] == true {
        f.complete += 1;
        let want: BTreeMap<Key, String> = oracle
            .keys()
            .into_iter()
            .filter(|k| oracle.asked(k, ns))
            .filter_map(|k| Some((k.clone(), oracle.state_at(&k, at)?.rv.clone())))
            .collect();
        if got != want {
            f.wrong(
                &q,
                format!("complete, but {got:?} where the truth is {want:?}"),
            );
        }
    }
    answer
}

fn get_at(
    play: &Play,
    oracle: &Oracle<'_>,
    store: &Path,
    key: &Key,
    at: i64,
    f: &mut Findings,
) -> String {
    f.questions += 1;
    let args: Vec<String> = vec![
        "get".into(),
        format!("{}/{}", key.kind.singular(), key.name),
        "-n".into(),
        key.namespace.into(),
        "--at".into(),
        Millis::from_ms(at).to_string(),
        "--strict".into(),
        "-o".into(),
        "json".into(),
    ];
    let q = args.join(" ");
    let (code, json, stderr) = ask(play, store, &args);
    let answer = record_answer(&args, code, &json);
    let truth = oracle.state_at(key, at);
    let rv = json
        .as_ref()
        .and_then(|v| v.pointer("/metadata/resourceVersion"))
        .and_then(Value::as_str);
    match (code, rv) {
        // Complete and there.
        (Some(0), Some(rv)) => {
            if truth.map(|w| w.rv.as_str()) != Some(rv) {
                f.wrong(&q, format!("complete rv {rv}, the truth is {truth:?}"));
            }
        }
        // Incomplete, and what the journal knew.
        (Some(3), Some(rv)) => match oracle.write(key, rv) {
            Some(w) if w.t1 < at => {}
            other => f.wrong(&q, format!("rv {rv} is not a version by then: {other:?}")),
        },
        // Not there, or nothing known.
        (Some(1), None) => {
            if let Some(w) = truth
                && oracle.covered(w)
            {
                // It existed then, written while a recorder watched: the journal
                // must know it (unless nobody watched since it was written
                // and it was deleted while nobody did: then truth says absent).
                if !stderr.contains("knows nothing") {
                    f.wrong(
                        &q,
                        format!(
                            "said absent, but rv {} existed and was watched: {stderr}",
                            w.rv
                        ),
                    );
                }
            }
        }
        (Some(2), _)
            if stderr.contains("was never recorded")
                || stderr.contains("no recorded resource type") =>
        {
            if oracle
                .writes_of(key)
                .any(|w| oracle.covered(w) && w.t1 < at)
            {
                f.wrong(&q, format!("never recorded, but it was: {stderr}"));
            }
        }
        (Some(1), _) if stderr.contains("was never recorded") => {
            if oracle.writes_of(key).any(|w| oracle.seen_by_watch(w)) {
                f.wrong(&q, format!("never recorded, but it was: {stderr}"));
            }
        }
        _ => f.wrong(&q, format!("unexpected answer {code:?}: {stderr}")),
    }
    answer
}

/// One change in an answer: a log or timeline entry.
struct Entry {
    key: Key,
    kind: String,
    /// What `log` says the change was (`deleted` for a relist's RELIST of
    /// an object it found gone).
    change: Option<String>,
    rv: Option<String>,
    at: i64,
    relist: Option<(i64, i64)>,
    user: Option<String>,
    /// `exact` or `likely`, with `user`.
    matched: Option<String>,
}

fn entries(v: &Value, key: Option<&Key>) -> Vec<Entry> {
    v["entries"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["type"] != "GAP")
        .filter_map(|e| {
            let key = match key {
                Some(k) => k.clone(),
                None => key_of(e)?,
            };
            Some(Entry {
                key,
                kind: e["type"].as_str()?.to_string(),
                change: e["change"].as_str().map(str::to_string),
                rv: e["resource_version"].as_str().map(str::to_string),
                at: ms(&e["observed_at"])?,
                relist: (e["observed"] == "relist")
                    .then(|| Some((ms(&e["between"]["from"])?, ms(&e["between"]["to"])?)))
                    .flatten(),
                user: e["actor"]["user"].as_str().map(str::to_string),
                matched: e["actor"]["match"].as_str().map(str::to_string),
            })
        })
        .collect()
}

/// The rules every change of a log or timeline keeps: no version invented
/// or named twice, relist labels exact, actors exact.
fn judge_entries(oracle: &Oracle<'_>, q: &str, entries: &[Entry], f: &mut Findings) {
    f.relists += entries.iter().filter(|e| e.relist.is_some()).count();
    f.watched += entries
        .iter()
        .filter(|e| e.relist.is_none() && e.kind != "BASELINE")
        .count();
    let mut seen: BTreeSet<(Key, String, bool)> = BTreeSet::new();
    for e in entries {
        let Some(rv) = &e.rv else {
            f.wrong(
                q,
                format!("{} of {:?} has no resourceVersion", e.kind, e.key),
            );
            continue;
        };
        let gone = e.kind == "DELETED" && e.relist.is_some()
            || e.kind == "RELIST" && e.relist.is_some() && oracle.write(&e.key, rv).is_none();
        if e.kind == "BASELINE" {
            // A list that saw a version: it must be one.
            if oracle.write(&e.key, rv).is_none() {
                f.wrong(q, format!("{:?} listed at rv {rv}, never written", e.key));
            }
            continue;
        }
        if gone {
            // Found gone by a relist: a deletion (or an exit from a selector)
            // nobody watched, within the stretch.
            let (from, to) = e.relist.unwrap_or_default();
            let fits = oracle.writes_of(&e.key).any(|w| {
                matches!(w.op, Op::Delete | Op::Relabel { .. })
                    && !oracle.seen_by_watch(w)
                    && from <= w.t1
                    && w.t0 <= to
            });
            if !fits {
                f.wrong(
                    q,
                    format!(
                        "{:?} found gone between {from} and {to}: no unwatched deletion then",
                        e.key
                    ),
                );
            }
            continue;
        }
        let Some(w) = oracle.write(&e.key, rv) else {
            f.wrong(
                q,
                format!("{} {:?} at rv {rv}: never written", e.kind, e.key),
            );
            continue;
        };
        if !seen.insert((e.key.clone(), rv.clone(), e.relist.is_some())) {
            f.wrong(q, format!("{:?} rv {rv} appears twice", e.key));
        }
        match e.relist {
            Some((from, to)) => {
                if oracle.seen_by_watch(w) {
                    f.wrong(q, format!("{:?} rv {rv} is labelled found by a relist, but a recorder watched it happen", e.key));
                }
                if !(from <= w.t1 && w.t0 <= to) {
                    f.wrong(
                        q,
                        format!(
                            "{:?} rv {rv} was written at {}..{}, outside its stretch {from}..{to}",
                            e.key, w.t0, w.t1
                        ),
                    );
                }
                // Who, from the writes inside the stretch: exactly the one
                // that made the version, or likely one of them.
                match (e.user.as_deref(), e.matched.as_deref()) {
                    (Some(user), Some("exact")) if user != USERS[w.user] => f.wrong(
                        q,
                        format!(
                            "{:?} rv {rv} is said made by {user} (exact), it was {}",
                            e.key, USERS[w.user]
                        ),
                    ),
                    (Some(user), Some("likely")) => {
                        let fits = oracle
                            .writes_of(&e.key)
                            .any(|x| USERS[x.user] == user && from <= x.t1 && x.t0 <= to);
                        if !fits {
                            f.wrong(
                                q,
                                format!(
                                    "{:?} rv {rv} is said likely made by {user}: none of theirs in {from}..{to}",
                                    e.key
                                ),
                            );
                        }
                    }
                    _ => {}
                }
                f.relist_actors += usize::from(e.user.is_some());
            }
            None => {
                if !oracle.seen_by_watch(w) {
                    f.wrong(
                        q,
                        format!(
                            "{:?} rv {rv} is a watched {}, but no recorder watched it happen",
                            e.key, e.kind
                        ),
                    );
                }
                if e.at < w.t0 {
                    f.wrong(
                        q,
                        format!(
                            "{:?} rv {rv} observed at {} before it was written at {}",
                            e.key, e.at, w.t0
                        ),
                    );
                }
                let expected: &[&str] = match w.op {
                    Op::Create { .. } => &["ADDED"],
                    Op::Update | Op::Touch => &["MODIFIED"],
                    Op::Relabel { .. } => &["ADDED", "MODIFIED", "DELETED"],
                    Op::Delete => &["DELETED"],
                };
                if !expected.contains(&e.kind.as_str()) {
                    f.wrong(
                        q,
                        format!("{:?} rv {rv} is {} for a {:?}", e.key, e.kind, w.op),
                    );
                }
                // Every write is in the server's audit log, which each
                // journal imported: a watched change names its maker.
                if e.user.is_none() {
                    f.wrong(
                        q,
                        format!(
                            "{:?} rv {rv}, a watched {}, names no user, though the audit log holds its write",
                            e.key, e.kind
                        ),
                    );
                }
                if let Some(user) = &e.user
                    && user != USERS[w.user]
                {
                    f.wrong(
                        q,
                        format!(
                            "{:?} rv {rv} is said made by {user}, it was {}",
                            e.key, USERS[w.user]
                        ),
                    );
                }
            }
        }
    }
}

fn log(
    play: &Play,
    oracle: &Oracle<'_>,
    store: &Path,
    ns: Option<&str>,
    since: i64,
    until: i64,
    f: &mut Findings,
) -> String {
    f.questions += 1;
    let mut args: Vec<String> = vec![
        "log".into(),
        "--since".into(),
        Millis::from_ms(since).to_string(),
        "--until".into(),
        Millis::from_ms(until).to_string(),
    ];
    args.extend(scope_args(ns));
    args.extend(["-o".into(), "json".into()]);
    let q = args.join(" ");
    let (answer, v) = must_answer(play, store, &args, f);
    let Some(v) = v else {
        return answer;
    };
    let es = entries(&v, None);
    judge_entries(oracle, &q, &es, f);
    let inside: Vec<&super::run::Written> = play
        .trace
        .writes
        .iter()
        .filter(|w| in_scope(&w.key, ns) && since < w.t0 && w.t1 < until)
        .collect();
    // A controller's write changes nothing a default log shows.
    for e in &es {
        if let Some(rv) = &e.rv
            && e.relist.is_none()
            && oracle.write(&e.key, rv).is_some_and(|w| w.op == Op::Touch)
        {
            f.wrong(
                &q,
                format!(
                    "{:?} rv {rv} changed only what the server owns, and is shown",
                    e.key
                ),
            );
        }
    }
    let inside: Vec<&super::run::Written> =
        inside.into_iter().filter(|w| w.op != Op::Touch).collect();
    let watched: BTreeSet<(Key, String)> = es
        .iter()
        .filter(|e| e.relist.is_none())
        .filter_map(|e| Some((e.key.clone(), e.rv.clone()?)))
        .collect();
    for w in &inside {
        if oracle.covered(w) && !watched.contains(&(w.key.clone(), w.rv.clone())) {
            f.wrong(
                &q,
                format!(
                    "{:?} rv {} was written while watched, and is missing",
                    w.key, w.rv
                ),
            );
        }
    }
    // A relist in the window finds gone what was deleted unwatched before
    // it: the journal held those objects, so the log must say so, even of
    // an object with no other record in the window.
    for w in oracle.found_gone(since, until) {
        if !in_scope(&w.key, ns) {
            continue;
        }
        f.found_gone += 1;
        let told = es.iter().any(|e| {
            e.key == w.key
                && e.relist.is_some()
                && (e.kind == "DELETED" || e.change.as_deref() == Some("deleted"))
        });
        if !told {
            f.wrong(
                &q,
                format!(
                    "{:?} was deleted unwatched at {}..{} and a relist in the window found it gone, but the log does not say so",
                    w.key, w.t0, w.t1
                ),
            );
        }
    }
    if v["complete"] == true {
        f.complete += 1;
        let want: BTreeSet<(Key, String)> = inside
            .iter()
            .filter(|w| oracle.asked(&w.key, ns))
            .map(|w| (w.key.clone(), w.rv.clone()))
            .collect();
        let got: BTreeSet<(Key, String)> = es
            .iter()
            .filter_map(|e| Some((e.key.clone(), e.rv.clone()?)))
            .collect();
        if got != want || es.iter().any(|e| e.relist.is_some()) {
            f.wrong(
                &q,
                format!("complete, but {got:?} where the truth is {want:?}"),
            );
        }
    }
    answer
}

/// `browse`'s list of changed objects, read through its data source as the
/// browser reads it: the objects `log` names (whose truth is judged above),
/// each once, marked found by a relist exactly where `log` has a RELIST line
/// for it, with as many changes as `log` has lines for it, its last change at
/// the time of `log`'s last line for it (and at its resourceVersion, for a
/// watched change), and, where `log` shows fields changed, its last such
/// line as the change whose managers it shows.
fn browse(play: &Play, store: &Path, ns: Option<&str>, since: i64, until: i64, f: &mut Findings) {
    f.questions += 1;
    let q = format!("browse's objects of {ns:?} in {since}..{until}");
    let mut args: Vec<String> = vec![
        "log".into(),
        "--since".into(),
        Millis::from_ms(since).to_string(),
        "--until".into(),
        Millis::from_ms(until).to_string(),
    ];
    args.extend(scope_args(ns));
    args.extend(["-o".into(), "json".into()]);
    let (_, Some(log), _) = ask(play, store, &args) else {
        return;
    };
    // Per object: whether a relist found a change, and how many changes
    // (browse counts them without reading what the writer marked).
    // By kind, namespace and name.
    type Named = (String, String, String);
    let mut want: BTreeMap<Named, (bool, usize)> = BTreeMap::new();
    // And the time of its last line, with the resourceVersion of a watched
    // one (the entries are in the log's order).
    let mut last: BTreeMap<Named, (Option<i64>, Option<String>)> = BTreeMap::new();
    // And its last line with fields: time, resourceVersion, and managers
    // (each once, in order).
    type Change = (Option<i64>, Option<String>, Option<String>);
    let mut managers: BTreeMap<Named, Change> = BTreeMap::new();
    for e in log["entries"].as_array().into_iter().flatten() {
        if e["type"] == "GAP" {
            continue;
        }
        let key = (
            e["kind"].as_str().unwrap_or_default().to_string(),
            e["namespace"].as_str().unwrap_or_default().to_string(),
            e["name"].as_str().unwrap_or_default().to_string(),
        );
        let rv = (e["type"] != "RELIST")
            .then(|| e["resource_version"].as_str().map(str::to_string))
            .flatten();
        last.insert(key.clone(), (ms(&e["observed_at"]), rv));
        let fields = e["fields"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        if !fields.is_empty() {
            let mut seen: Vec<&str> = Vec::new();
            for m in fields.iter().filter_map(|f| f["manager"].as_str()) {
                if !seen.contains(&m) {
                    seen.push(m);
                }
            }
            managers.insert(
                key.clone(),
                (
                    ms(&e["observed_at"]),
                    e["resource_version"].as_str().map(str::to_string),
                    (!seen.is_empty()).then(|| seen.join(", ")),
                ),
            );
        }
        let line = want.entry(key).or_default();
        line.0 |= e["type"] == "RELIST";
        line.1 += 1;
    }
    let Ok(journal) = krply::journal::Journal::open(store) else {
        f.wrong(&q, "the journal does not open".into());
        return;
    };
    let Some(cluster) = journal
        .clusters()
        .ok()
        .and_then(|c| c.first().map(|c| c.id.clone()))
    else {
        return;
    };
    let Ok(history) = krply::history::History::load(&journal, &cluster, Millis::now().as_ms())
    else {
        f.wrong(&q, "the history does not load".into());
        return;
    };
    let scope = krply::history::Scope {
        namespace: ns.map(str::to_string),
        types: None,
    };
    let lines = match krply::browse::source::objects(&history, &scope, since, until) {
        Ok(lines) => lines,
        Err(e) => {
            f.wrong(&q, format!("failed: {e}"));
            return;
        }
    };
    let mut got: BTreeMap<(String, String, String), (bool, usize)> = BTreeMap::new();
    for l in lines {
        if let Some(want) = managers.get(&(l.kind.clone(), l.namespace.clone(), l.name.clone())) {
            let shown = last_change(&history, &l, (since, until)).and_then(|change| {
                let d = krply::browse::source::detail(&history, &l, (since, until))?;
                Ok(change.map(|(at, rv)| (Some(at), rv, d.manager)))
            });
            match shown {
                Ok(Some(got)) if got == *want => {}
                Ok(got) => f.wrong(
                    &q,
                    format!(
                        "{}/{}'s last change (shown with its managers) is {got:?} where log's is {want:?}",
                        l.kind, l.name
                    ),
                ),
                Err(e) => f.wrong(&q, format!("{}/{}'s last change: {e}", l.kind, l.name)),
            }
        }
        let key = (l.kind, l.namespace, l.name);
        if let Some((at, rv)) = last.get(&key) {
            let shown = (Some(l.last.observed_at), Some(&l.last.resource_version));
            if *at != shown.0 || rv.as_ref().is_some_and(|rv| Some(rv) != shown.1) {
                f.wrong(
                    &q,
                    format!("{key:?}'s last change is {shown:?} where log's is {at:?} {rv:?}"),
                );
            }
        }
        if got.insert(key.clone(), (l.relist, l.changes)).is_some() {
            f.wrong(&q, format!("{key:?} is listed twice"));
        }
    }
    if got != want {
        f.wrong(&q, format!("lists {got:?} where log names {want:?}"));
    }
}

/// The change of `line`'s object whose managers browse shows: the newest in
/// the window that changed what a default diff compares, as its time and
/// resourceVersion.
fn last_change(
    history: &krply::history::History<'_>,
    line: &krply::browse::app::ObjectLine,
    window: (i64, i64),
) -> Result<Option<(i64, Option<String>)>, krply::history::HistoryError> {
    let Some(tracked) = krply::browse::source::tracked(history, line)? else {
        return Ok(None);
    };
    Ok(history
        .last_change(&tracked, window)?
        .map(|e| (e.observed_at, e.resource_version)))
}

fn timeline(play: &Play, oracle: &Oracle<'_>, store: &Path, key: &Key, f: &mut Findings) -> String {
    f.questions += 1;
    let args: Vec<String> = vec![
        "timeline".into(),
        format!("{}/{}", key.kind.singular(), key.name),
        "-n".into(),
        key.namespace.into(),
        // Every version, those that changed only status too: the checker
        // looks for each one written.
        "--include-status".into(),
        "-o".into(),
        "json".into(),
    ];
    let q = args.join(" ");
    let (code, json, stderr) = ask(play, store, &args);
    let answer = record_answer(&args, code, &json);
    let v = match (code, json) {
        (Some(0), Some(v)) => v,
        (Some(1), _) if stderr.contains("was never recorded") => {
            if oracle.writes_of(key).any(|w| oracle.seen_by_watch(w)) {
                f.wrong(&q, format!("never recorded, but it was: {stderr}"));
            }
            return answer;
        }
        (Some(2), _) if stderr.contains("no recorded resource type") => {
            if oracle.ever_recorded(key) {
                f.wrong(&q, format!("no such type recorded, but it was: {stderr}"));
            }
            return answer;
        }
        (code, _) => {
            f.wrong(&q, format!("no answer ({code:?}): {stderr}"));
            return answer;
        }
    };
    let es = entries(&v, Some(key));
    judge_entries(oracle, &q, &es, f);
    let watched: BTreeSet<String> = es
        .iter()
        .filter(|e| e.relist.is_none() && e.kind != "BASELINE")
        .filter_map(|e| e.rv.clone())
        .collect();
    let listed: BTreeSet<String> = es.iter().filter_map(|e| e.rv.clone()).collect();
    for w in oracle.writes_of(key) {
        // A version written while watched is there, as its event (or, for
        // the version a recorder found when it started, as its list).
        if oracle.covered(w) && !watched.contains(&w.rv) && !listed.contains(&w.rv) {
            f.wrong(
                &q,
                format!("rv {} was written while watched, and is missing", w.rv),
            );
        }
    }
    answer
}

/// A namespace no history writes or records (a typo of one that is): under
/// every recording, including streams of every namespace, the answer is
/// never a complete "no changes" (docs/output.md).
fn never_seen(play: &Play, store: &Path, since: i64, until: i64, f: &mut Findings) {
    f.questions += 1;
    let args: Vec<String> = vec![
        "diff".into(),
        "-n".into(),
        "shpo".into(),
        "--since".into(),
        Millis::from_ms(since).to_string(),
        "--until".into(),
        Millis::from_ms(until).to_string(),
        "-o".into(),
        "json".into(),
    ];
    let q = args.join(" ");
    let (code, json, stderr) = ask(play, store, &args);
    match (code, json) {
        (Some(0), Some(v)) => {
            if v["complete"] != false {
                f.wrong(&q, "a namespace never seen is answered complete".into());
            }
            if v["objects"].as_array().is_some_and(|o| !o.is_empty()) {
                f.wrong(
                    &q,
                    format!("changes in a namespace never seen: {}", v["objects"]),
                );
            }
        }
        // No journal, or one with nothing recorded yet.
        (Some(1), _) if stderr.contains("journal") => {}
        (code, _) => f.wrong(&q, format!("no answer ({code:?}): {stderr}")),
    }
}

fn diff(
    play: &Play,
    oracle: &Oracle<'_>,
    store: &Path,
    ns: Option<&str>,
    since: i64,
    until: i64,
    f: &mut Findings,
) -> String {
    f.questions += 1;
    let mut args: Vec<String> = vec![
        "diff".into(),
        "--since".into(),
        Millis::from_ms(since).to_string(),
        "--until".into(),
        Millis::from_ms(until).to_string(),
    ];
    args.extend(scope_args(ns));
    args.extend(["-o".into(), "json".into()]);
    let q = args.join(" ");
    let (answer, v) = must_answer(play, store, &args, f);
    let Some(v) = v else {
        return answer;
    };
    let mut got: BTreeMap<Key, String> = BTreeMap::new();
    for o in v["objects"].as_array().into_iter().flatten() {
        let Some(key) = key_of(o) else { continue };
        let change = o["change"].as_str().unwrap_or_default().to_string();
        // A change said watched has a watched write behind it in the window.
        if o["observed"] == "watch" {
            let watched = oracle
                .writes_of(&key)
                .any(|w| since < w.t0 && w.t1 < until && oracle.seen_by_watch(w));
            if !watched {
                f.wrong(&q, format!("{key:?} {change} is said watched, but no recorder watched a write of it then"));
            }
        }
        if let (Some(from), Some(to)) = (ms(&o["between"]["from"]), ms(&o["between"]["to"])) {
            let unwatched = oracle
                .writes_of(&key)
                .any(|w| !oracle.seen_by_watch(w) && from <= w.t1 && w.t0 <= to);
            if !unwatched {
                f.wrong(&q, format!("{key:?} {change} is said found by a relist between {from} and {to}, but no unwatched write fits"));
            }
        }
        // Whoever it names for the object or a field wrote it in the window
        // (or in the stretch where a relist found it changed).
        let from = ms(&o["between"]["from"]).map_or(since, |b| b.min(since));
        let actors = std::iter::once(&o["actor"]).chain(
            o["fields"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|x| &x["actor"]),
        );
        for user in actors.filter_map(|a| a["user"].as_str()) {
            f.diff_actors += 1;
            let wrote = oracle
                .writes_of(&key)
                .any(|w| USERS[w.user] == user && from < w.t1 && w.t0 < until);
            if !wrote {
                f.wrong(
                    &q,
                    format!("{key:?} {change} names {user}, who did not write it in the window"),
                );
            }
        }
        if got.insert(key.clone(), change).is_some() {
            f.wrong(&q, format!("{key:?} is listed twice"));
        }
    }
    if v["complete"] == true {
        f.complete += 1;
        let mut want: BTreeMap<Key, String> = BTreeMap::new();
        for key in oracle.keys().into_iter().filter(|k| oracle.asked(k, ns)) {
            let (a, b) = (oracle.state_at(&key, since), oracle.state_at(&key, until));
            let change = match (a, b) {
                (None, Some(_)) => "added",
                (Some(_), None) => "deleted",
                // Relabels that end where they began change no field diff
                // shows (seed 1286: tier=web, db, web again).
                (Some(x), Some(y))
                    if x.rv != y.rv
                        && (x.tier_after != y.tier_after
                            || oracle.writes_of(&key).any(|w| {
                                since <= w.t1
                                    && w.t1 < until
                                    && !matches!(w.op, Op::Relabel { .. } | Op::Touch)
                            })) =>
                {
                    "modified"
                }
                _ => continue,
            };
            want.insert(key, change.to_string());
        }
        if got != want {
            f.wrong(
                &q,
                format!("complete, but {got:?} where the truth is {want:?}"),
            );
        }
    }
    answer
}

/// `coverage`: no time a stream is said to cover holds a write of its
/// objects that no recorder of that stream watched. (Time a recorder watched
/// may be left out: a killed recorder's last checkpoint falls short of it.)
fn coverage(
    play: &Play,
    oracle: &Oracle<'_>,
    store: &Path,
    ns: Option<&str>,
    f: &mut Findings,
) -> String {
    f.questions += 1;
    let mut args: Vec<String> = vec!["coverage".into()];
    args.extend(scope_args(ns));
    args.extend(["-o".into(), "json".into()]);
    let q = args.join(" ");
    let (answer, v) = must_answer(play, store, &args, f);
    let Some(v) = v else {
        return answer;
    };
    for s in v["streams"].as_array().into_iter().flatten() {
        let id = s["id"].as_str().unwrap_or_default();
        let (kind, recorders) = oracle.recorders_of(id);
        let Some(scope) = recorders.first().map(|r| &r.scope) else {
            f.wrong(&q, format!("stream {id} was never recorded"));
            continue;
        };
        if kind.is_none() || !in_scope_of(scope, ns) {
            f.wrong(&q, format!("stream {id} is not in scope"));
            continue;
        }
        let (Some(from), Some(to)) = (ms(&s["from"]), ms(&s["to"])) else {
            continue;
        };
        let gaps: Vec<(i64, Option<i64>)> = s["gap_windows"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|g| Some((ms(&g["from"])?, ms(&g["to"]))))
            .collect();
        if s["complete"] == true && !gaps.is_empty() {
            f.wrong(&q, format!("stream {id} is complete with gaps {gaps:?}"));
        }
        for w in play
            .trace
            .writes
            .iter()
            .filter(|w| Oracle::concerns(scope, w))
        {
            let inside = from <= w.t0
                && w.t1 <= to
                && gaps
                    .iter()
                    .all(|&(a, b)| a > w.t1 || b.is_some_and(|b| b < w.t0));
            if !inside {
                continue;
            }
            f.covered_writes += 1;
            if !recorders.iter().any(|r| r.watched(w.t0, w.t1)) {
                f.wrong(
                    &q,
                    format!(
                        "{id} is said to cover {}..{}, when {:?} rv {} was written, but no recorder of it watched",
                        w.t0, w.t1, w.key, w.rv
                    ),
                );
            }
        }
    }
    answer
}

/// Whether a recorder of `scope` records something a question about `ns`
/// asks about.
fn in_scope_of(scope: &super::histories::Scope, ns: Option<&str>) -> bool {
    match (ns, scope.namespace) {
        (None, _) | (_, None) => true,
        (Some(a), Some(b)) => a == b,
    }
}

/// `replay plan`'s object set at a quiet moment: a plan it makes (never with
/// `--allow-gaps`) is complete, and holds exactly the objects that existed.
/// Refusing for gaps claims nothing.
fn replay_plan(
    play: &Play,
    oracle: &Oracle<'_>,
    store: &Path,
    ns: &str,
    at: i64,
    f: &mut Findings,
) {
    f.questions += 1;
    let args: Vec<String> = vec![
        "replay".into(),
        "plan".into(),
        "-n".into(),
        ns.into(),
        "--at".into(),
        Millis::from_ms(at).to_string(),
        "--to-namespace".into(),
        format!("{ns}-replay"),
        "-o".into(),
        "json".into(),
    ];
    let q = args.join(" ");
    let (code, json, stderr) = ask(play, store, &args);
    match (code, json) {
        (Some(0), Some(v)) => {
            f.plans += 1;
            if v["complete"] != true {
                f.wrong(&q, "a plan made without --allow-gaps is incomplete".into());
            }
            let mut got = BTreeSet::new();
            for o in v["objects"].as_array().into_iter().flatten() {
                let key = key_of(&serde_json::json!({
                    "kind": o["kind"], "namespace": ns, "name": o["name"]
                }));
                if let Some(key) = key
                    && !got.insert(key.clone())
                {
                    f.wrong(&q, format!("{key:?} is planned twice"));
                }
            }
            let want: BTreeSet<Key> = oracle
                .keys()
                .into_iter()
                .filter(|k| k.namespace == ns && oracle.asked(k, Some(ns)))
                .filter(|k| oracle.state_at(k, at).is_some())
                .collect();
            if v["complete"] == true {
                f.complete += 1;
                if got != want {
                    f.wrong(&q, format!("plans {got:?} where the truth is {want:?}"));
                }
            }
        }
        (Some(1), _) if stderr.contains("refusing to plan: the recording of namespace") => {
            f.plans_refused += 1;
        }
        (Some(1), _)
            if stderr.contains("nothing recorded") || stderr.contains("never recorded") =>
        {
            if oracle
                .keys()
                .iter()
                .any(|k| k.namespace == ns && oracle.ever_recorded(k))
            {
                f.wrong(&q, format!("said never recorded: {stderr}"));
            }
        }
        (code, _) => f.wrong(&q, format!("unexpected answer {code:?}: {stderr}")),
    }
}
