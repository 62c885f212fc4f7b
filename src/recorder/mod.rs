//! `record`: list and watch the selected resources and journal everything.
//!
//! [`plan_streams`] turns resource arguments into streams (pure, over a discovery
//! catalog); [`record`] runs one [`stream::Stream`] task per stream, all feeding
//! the single journal writer, until asked to stop.

pub mod backoff;
pub mod display;
pub mod pulse;
pub mod retention;
pub mod rules;
pub mod secrets;
pub mod stream;
pub mod wire;

use crate::cluster::ClusterAccess;
use crate::cluster::discovery::{Catalog, ResolveError};
use crate::journal::writer::{Change, Feed, Writer, WriterStats};
use crate::journal::{DurablePoint, Journal, JournalError, StreamId};
use crate::model::StreamSpec;
use crate::model::{ResourceType, WatchType};
use crate::render::record::{self as feed, FeedItem};
use display::{Display, Mode};
use rules::{Notice, Phase};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use stream::{Stream, StreamEnd, StreamOptions, StreamStatus};
use tokio::sync::watch;

/// mimalloc's `mi_option_purge_delay` (its place in `mi_option_t`, mimalloc 2;
/// libmimalloc-sys names only some options).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Lets the allocator give the pages a recorder frees back to the system
/// within a millisecond instead of ten. A recorder frees what it has written
/// at its writing rate: under a burst (the engine yardstick's W-wide), pages
/// waiting out the delay were 2-3 MB of its peak resident memory (49.0 to
/// 45.7-46.2 MB). Readers keep the default: they free most at their end, and a
/// `diff` of 15,000 objects was slower with pages given back at once. Call it
/// before other threads start.
pub fn give_back_freed_memory_promptly() {
    // SAFETY: a plain FFI call with a valid option and value; mimalloc stores
    // the value for the allocator to read. Called before the process starts
    // its other threads, so nothing reads the option while it is written.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 1) };
}

/// Resources recorded when none are named (plus namespaces with `-A`).
pub const DEFAULT_RESOURCES: &[&str] = &[
    "deployments.apps",
    "statefulsets.apps",
    "daemonsets.apps",
    "services",
    "configmaps",
    // Their names only: a ServiceAccount object holds no token.
    "serviceaccounts",
];

/// What the user asked to record.
#[derive(Debug, Clone, Default)]
pub struct PlanArgs {
    pub resources: Vec<String>,
    /// The namespace to record in (explicit `-n`, else the context's).
    pub namespace: String,
    pub all_namespaces: bool,
    pub selector: Option<String>,
    pub include_secrets: bool,
}

/// Why the requested streams cannot be recorded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    #[error("the server does not allow watching \"{0}\" (it needs the list and watch verbs)")]
    NotWatchable(String),
    #[error("refusing to record secrets without --include-secrets")]
    SecretsRefused,
}

/// Streams to record, with warnings about defaults the server lacks.
#[derive(Debug, Clone)]
pub struct Plan {
    pub streams: Vec<StreamSpec>,
    pub warnings: Vec<String>,
}

/// Resolves resource arguments into streams, one per resource.
pub fn plan_streams(catalog: &Catalog, args: &PlanArgs) -> Result<Plan, PlanError> {
    let mut resources = Vec::new();
    let mut warnings = Vec::new();
    if args.resources.is_empty() {
        let mut defaults: Vec<&str> = DEFAULT_RESOURCES.to_vec();
        if args.all_namespaces {
            defaults.push("namespaces");
        }
        for name in defaults {
            match catalog.resolve(name) {
                Ok(d) if d.can_watch() => resources.push(d.resource.clone()),
                _ => warnings.push(format!(
                    "the server does not serve {name}; not recording it"
                )),
            }
        }
    } else {
        for arg in &args.resources {
            for name in arg.split(',').filter(|s| !s.is_empty()) {
                let d = catalog.resolve(name)?;
                if !d.can_watch() {
                    return Err(PlanError::NotWatchable(name.to_string()));
                }
                if d.resource.is_secret() && !args.include_secrets {
                    return Err(PlanError::SecretsRefused);
                }
                resources.push(d.resource.clone());
            }
        }
    }
    let mut streams: Vec<StreamSpec> = Vec::new();
    for resource in resources {
        let namespace = if resource.namespaced && !args.all_namespaces {
            Some(args.namespace.clone())
        } else {
            None
        };
        let spec = StreamSpec {
            resource,
            namespace,
            selector: args.selector.clone().filter(|s| !s.is_empty()),
        };
        if !streams.contains(&spec) {
            streams.push(spec);
        }
    }
    Ok(Plan { streams, warnings })
}

/// At most this many changes a second reach the live feed.
const FEED_PER_SECOND: u32 = 20;

/// A recorded change for the feed, with the fields it changed (old and new
/// values, and who owns them now); a status-only update is no line in the feed.
fn feed_item(
    change: &Change,
    kinds: &std::collections::HashMap<StreamId, ResourceType>,
) -> Option<FeedItem> {
    let resource = kinds.get(&change.stream)?;
    let fields = match (&change.before, change.watch_type) {
        (Some(before), WatchType::Modified) => {
            let api_version = resource.api_version();
            // The previous version may be a list item without apiVersion/kind.
            let defaults = [
                ("apiVersion", api_version.as_str()),
                ("kind", resource.kind.as_str()),
            ];
            let fields = crate::history::diff::fields_between(
                std::str::from_utf8(before).ok()?,
                std::str::from_utf8(&change.after).ok()?,
                &crate::diff::DiffOptions::default(),
                &defaults,
            )
            .ok()?;
            if fields.is_empty() {
                return None;
            }
            fields
        }
        _ => Vec::new(),
    };
    Some(FeedItem {
        at: change.at,
        event: change.watch_type.to_string(),
        kind: resource.kind.clone(),
        namespace: change.namespace.clone(),
        name: change.name.clone(),
        fields,
    })
}

/// Why `record` stopped without recording.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// The server refused every stream before any of them could be listed:
    /// nothing would ever be recorded. Each stream's name and the server's
    /// whole answer (which names the user, the verb and the resource).
    #[error("the server refused every stream ({} of {}): {}", .0.len(), .0.len(), .0.first().map_or("", |(_, why)| why.as_str()))]
    AllRefused(Vec<(String, String)>),
    /// The thread that tells a frozen recorder could not start.
    #[error("cannot start the recorder's pulse thread")]
    Pulse(#[source] std::io::Error),
}

/// How `record` runs.
#[derive(Debug, Clone)]
pub struct RecordOptions {
    pub stream: StreamOptions,
    pub mode: Mode,
    /// `--retain` / `--max-size`: prune behind the recorder.
    pub retention: Option<retention::Retention>,
}

pub use crate::render::record::{RecordSummary, StreamSummary};

/// How long the recorder waits for the answer to a request other than a
/// watch (a page of a list, discovery) when `--request-timeout` does not
/// say: a connection that died without closing never answers.
pub const REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// What the latest list of a stream found that no watch saw, read back from
/// the journal as `diff` and `log` would (a second, read-only connection).
fn relist_findings(
    path: &std::path::Path,
    cluster: &str,
    stream: StreamId,
) -> Option<crate::history::log::RelistFindings> {
    let journal = Journal::open(path).ok()?;
    let now = crate::time::Millis::now().as_ms();
    let history = crate::history::History::load(&journal, cluster, now).ok()?;
    let s = history.stream(stream)?;
    history.latest_relist_findings(s).ok().flatten()
}

/// The feed line for what a relist found.
fn relist_line(stream: &str, f: &crate::history::log::RelistFindings) -> String {
    let kinds = [
        ("changed", &f.changed),
        ("new", &f.appeared),
        ("gone", &f.gone),
    ];
    let found = |with_names: bool| -> String {
        let parts: Vec<String> = kinds
            .iter()
            .filter(|(_, names)| !names.is_empty())
            .map(|(what, names)| {
                if !with_names {
                    return format!("{} {what}", names.len());
                }
                let shown: Vec<&str> = names.iter().take(3).map(String::as_str).collect();
                let more = match names.len().saturating_sub(3) {
                    0 => String::new(),
                    n => format!(" +{n}"),
                };
                format!("{} {what} ({}{more})", names.len(), shown.join(", "))
            })
            .collect();
        if parts.is_empty() {
            "no change".into()
        } else {
            parts.join(", ")
        }
    };
    let when = f
        .between
        .map(|b| format!(" (unwatched since {})", feed::clock_ms(b.from)))
        .unwrap_or_default();
    let head = format!(
        "{} RELIST   {stream}{when}: ",
        feed::clock(f.between.map_or(0, |b| b.to))
    );
    // The names while they fit the feed's width, else the counts alone.
    let named = format!("{head}{}", found(true));
    if named.chars().count() <= feed::FEED_WIDTH {
        named
    } else {
        crate::render::fields::shorten(&format!("{head}{}", found(false)), feed::FEED_WIDTH)
    }
}

/// Registers the cluster and `streams` in `journal` and claims them for this
/// recorder (docs/journal.md, "Several recorders"): held until the lease is
/// dropped; refused, naming the holder, when another recorder has one of them.
pub fn claim(
    journal: &Journal,
    cluster_id: &str,
    server: &str,
    context: Option<&str>,
    streams: &[StreamSpec],
    holder: &str,
) -> Result<crate::journal::StreamLease, JournalError> {
    journal.register_cluster(cluster_id, server, context)?;
    let mut ids = Vec::new();
    for spec in streams {
        ids.push((journal.register_stream(cluster_id, spec)?, spec.name()));
    }
    crate::journal::StreamLease::acquire(journal.path(), holder, &ids)
}

/// Each stream's line of the final summary: the journal's counts, and what the
/// stream itself last knew.
fn summarize(
    statuses: &[LiveStatus],
    finished: Vec<StreamStatus>,
    stats: &WriterStats,
    found: &HashMap<StreamId, u64>,
) -> Vec<StreamSummary> {
    let totals = stats.streams.lock().map(|t| t.clone()).unwrap_or_default();
    statuses
        .iter()
        .zip(finished)
        .map(|((id, _), s)| {
            let t = totals.get(id).cloned().unwrap_or_default();
            StreamSummary {
                name: s.name,
                events: t.events,
                gaps: t.gaps,
                last_rv: if t.last_rv.is_empty() {
                    s.last_rv
                } else {
                    t.last_rv
                },
                unavailable: s.unavailable,
                found_by_relists: found.get(id).copied().unwrap_or(0),
            }
        })
        .collect()
}

/// A stream's live status, shared with its task.
type LiveStatus = (StreamId, Arc<Mutex<StreamStatus>>);

/// Starts one task per stream; their live statuses, and the tasks.
fn spawn_streams(
    registered: Vec<(StreamId, StreamSpec, Option<DurablePoint>)>,
    access: &ClusterAccess,
    writer: &Writer,
    opts: &StreamOptions,
    notices: &tokio::sync::mpsc::UnboundedSender<Notice>,
    stop: &watch::Receiver<bool>,
    pulse: &Arc<pulse::Pulse>,
) -> (Vec<LiveStatus>, tokio::task::JoinSet<StreamEnd>) {
    let mut statuses = Vec::new();
    let mut tasks = tokio::task::JoinSet::new();
    for (id, spec, prior) in registered {
        let status = Arc::new(Mutex::new(StreamStatus {
            name: spec.name(),
            phase: Phase::Starting,
            events: 0,
            last_rv: String::new(),
            gaps: 0,
            unavailable: None,
            listed: false,
            refused: None,
            settled: None,
        }));
        statuses.push((id, status.clone()));
        let stream = Stream {
            id,
            spec,
            access: access.clone(),
            writer: writer.sender(),
            opts: opts.clone(),
            status,
            notices: notices.clone(),
            prior,
            stop: stop.clone(),
            pulse: pulse.clone(),
            weighing: Default::default(),
            last_word: None,
            last_failure: None,
            hinted: false,
        };
        tasks.spawn(stream.run());
    }
    (statuses, tasks)
}

/// What relists found that no watch saw, looked up off the recorder's task.
struct Relists {
    /// Lists made durable per stream so far. The latest list of a stream is a relist
    /// unless it is the stream's very first (a stream with history before this run
    /// relists on its first list too). Between two looks only the latest list is
    /// examined.
    listed: HashMap<StreamId, u64>,
    had_history: HashSet<StreamId>,
    /// Changes found by relists, per stream.
    found: HashMap<StreamId, u64>,
    lookups: tokio::task::JoinSet<(StreamId, Option<crate::history::log::RelistFindings>)>,
    path: std::path::PathBuf,
    cluster: String,
    names: HashMap<StreamId, String>,
}

impl Relists {
    /// Starts a lookup for each stream whose latest list since the last look is a
    /// relist (one that followed a gap or a restart).
    fn look(&mut self, stats: &WriterStats) {
        let totals = stats.streams.lock().map(|t| t.clone()).unwrap_or_default();
        for (id, seen) in self.listed.iter_mut() {
            let now = totals.get(id).map_or(0, |t| t.baselines);
            if now > *seen && (self.had_history.contains(id) || now >= 2) {
                let (path, cluster, id) = (self.path.clone(), self.cluster.clone(), *id);
                self.lookups
                    .spawn_blocking(move || (id, relist_findings(&path, &cluster, id)));
            }
            *seen = now;
        }
    }

    /// Counts and shows what one lookup found.
    fn found(
        &mut self,
        id: StreamId,
        findings: Option<crate::history::log::RelistFindings>,
        display: &Display,
    ) {
        if let Some(f) = findings {
            *self.found.entry(id).or_default() += f.count() as u64;
            let name = self.names.get(&id).cloned().unwrap_or_default();
            display.feed_line(&relist_line(&name, &f));
        }
    }
}

/// Records `streams` into `journal` until `stop` turns true. The caller holds
/// a [`claim`] on the streams for the whole call.
///
/// Long on purpose: it is the one `select!` loop that joins the stream tasks, their
/// notices, the live feed and the relist lookups; each arm is a line or two.
pub async fn record(
    access: &ClusterAccess,
    journal: Journal,
    streams: Vec<StreamSpec>,
    options: RecordOptions,
    mut stop: watch::Receiver<bool>,
) -> Result<RecordSummary, RecordError> {
    let started = Instant::now();
    let target = &access.target;
    journal.register_cluster(
        &target.cluster_id,
        &target.server,
        target.context.as_deref(),
    )?;
    let mut registered: Vec<(StreamId, StreamSpec, Option<DurablePoint>)> = Vec::new();
    for spec in streams {
        let id = journal.register_stream(&target.cluster_id, &spec)?;
        let prior = journal.last_durable(id)?;
        registered.push((id, spec, prior));
    }
    let kinds: HashMap<StreamId, ResourceType> = registered
        .iter()
        .map(|(id, spec, _)| (*id, spec.resource.clone()))
        .collect();
    let (feed_tx, mut feed_rx) = tokio::sync::mpsc::channel(64);
    let feed = (options.mode != Mode::Quiet).then_some(Feed {
        tx: feed_tx,
        per_second: FEED_PER_SECOND,
    });
    let path = journal.path().to_path_buf();
    let fold_path = path.clone();
    let fold_streams: Vec<StreamId> = registered.iter().map(|(id, _, _)| *id).collect();
    let writer = Writer::start_with_feed(journal, feed)?;
    let stats = writer.stats();
    let names: Vec<String> = registered.iter().map(|(_, s, _)| s.name()).collect();
    let names_by_id: HashMap<StreamId, String> = registered
        .iter()
        .map(|(id, s, _)| (*id, s.name()))
        .collect();
    let display = Display::new(options.mode, &names);
    // Unbounded: a warning is never dropped because the display fell behind
    // (notices are few and small).
    let (notice_tx, mut notice_rx) = tokio::sync::mpsc::unbounded_channel();
    let had_history: HashSet<StreamId> = registered
        .iter()
        .filter(|(_, _, prior)| prior.is_some())
        .map(|(id, _, _)| *id)
        .collect();
    let beating =
        pulse::Beating::start(options.stream.freeze_limit_ms).map_err(RecordError::Pulse)?;
    let (statuses, mut tasks) = spawn_streams(
        registered,
        access,
        &writer,
        &options.stream,
        &notice_tx,
        &stop,
        &beating.pulse,
    );
    let retention_task = options.retention.map(|retention| {
        tokio::spawn(retention::run(
            retention::Setup {
                retention,
                path: path.clone(),
                cluster: target.cluster_id.clone(),
                streams: statuses.iter().map(|(id, _)| *id).collect(),
                statuses: statuses.clone(),
                writer: writer.sender(),
                stats: stats.clone(),
                notices: notice_tx.clone(),
            },
            stop.clone(),
        ))
    });
    drop(notice_tx);

    let snapshot = |statuses: &[LiveStatus]| -> Vec<StreamStatus> {
        statuses
            .iter()
            .filter_map(|(_, s)| s.lock().ok().map(|s| s.clone()))
            .collect()
    };
    let mut relists = Relists {
        listed: statuses.iter().map(|(id, _)| (*id, 0)).collect(),
        had_history,
        found: HashMap::new(),
        lookups: tokio::task::JoinSet::new(),
        path,
        cluster: target.cluster_id.clone(),
        names: names_by_id,
    };
    let mut tick = tokio::time::interval(Duration::from_millis(200));
    let mut failure: Option<JournalError> = None;
    let mut refused: Option<Vec<(String, String)>> = None;
    // Whether every stream has had its first answer (a list, or a refusal).
    let mut answered = false;
    let retry = options.stream.unavailable_retry;
    let mut stopping = false;
    loop {
        tokio::select! {
            _ = tick.tick() => {
                let now = snapshot(&statuses);
                display.refresh(&now);
                relists.look(&stats);
                answer_start(&now, &mut answered, &mut refused, &mut tasks, &display, retry);
            }
            Some(Ok((id, findings))) = relists.lookups.join_next(), if !relists.lookups.is_empty() => {
                relists.found(id, findings, &display);
            }
            Some(n) = notice_rx.recv() => {
                display.notice(&n);
                // A stream's first answer (listed, or refused) comes with a notice.
                answer_start(&snapshot(&statuses), &mut answered, &mut refused, &mut tasks, &display, retry);
            }
            Some(change) = feed_rx.recv() => {
                if let Some(item) = feed_item(&change, &kinds) {
                    display.feed(&item);
                }
            }
            changed = stop.changed(), if !stopping => {
                stopping = changed.is_err() || *stop.borrow();
            }
            joined = tasks.join_next() => match joined {
                None => break,
                Some(Ok(StreamEnd::Stopped)) => {}
                Some(Ok(StreamEnd::WriterFailed(e))) => {
                    failure.get_or_insert(e);
                    tasks.abort_all();
                }
                Some(Err(e)) if e.is_panic() => {
                    failure.get_or_insert(JournalError::WriterStopped(format!("a stream task panicked: {e}")));
                    tasks.abort_all();
                }
                Some(Err(_)) => {}
            },
        }
    }
    while let Ok(n) = notice_rx.try_recv() {
        display.notice(&n);
    }
    if refused.is_none() {
        let now = snapshot(&statuses);
        answer_start(
            &now,
            &mut answered,
            &mut refused,
            &mut tasks,
            &display,
            retry,
        );
        if !answered {
            // Stopped before every stream answered: the refusals so far.
            for (name, why) in now
                .iter()
                .filter_map(|s| Some((&s.name, s.refused.as_ref()?)))
            {
                display.notice(&refusal(name, why, retry));
            }
        }
    }
    // Lists made durable since the last tick, and lookups still running:
    // the summary counts every relist of this run.
    relists.look(&stats);
    while let Some(joined) = relists.lookups.join_next().await {
        if let Ok((id, findings)) = joined {
            relists.found(id, findings, &display);
        }
    }
    let finished = snapshot(&statuses);
    display.finish(&finished);
    // Its sender must go before the writer can finish.
    if let Some(task) = retention_task {
        task.abort();
        let _ = task.await;
    }
    let written = writer.finish();
    if let Some(e) = failure {
        return Err(match written {
            Err(w) => w,
            Ok(()) => e,
        }
        .into());
    }
    written?;
    if let Some(why) = refused {
        return Err(RecordError::AllRefused(why));
    }
    // A clean stop folds this run's streams' history into blocks, a
    // bounded while (docs/journal.md, "Cold history in blocks"). What it
    // could not fold (the journal busy longer than its wait) stays as it
    // was, and as true: the next stop folds it.
    let folded = Journal::open(&fold_path).and_then(|j| {
        j.fold_at_stop(
            &fold_streams,
            std::time::Instant::now() + crate::journal::fold::FOLD_AT_STOP,
        )
    });
    if let Err(e) = folded {
        display.line(&format!(
            "warning: the history was not folded into blocks at this stop: {e}"
        ));
    }
    let behind = stats
        .behind
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    if let Some(e) = &behind.failed {
        display.line(&format!(
            "warning: folding history into blocks behind the recorder stopped part-way (what it \
             folded is kept, the rest stayed rows): {e}"
        ));
    }
    let streams = summarize(&statuses, finished, &stats, &relists.found);
    let retention = options.retention.map(|_| {
        let r = stats.retention.lock().unwrap_or_else(|e| e.into_inner());
        feed::RetentionSummary {
            records_deleted: r.records_deleted,
            objects_deleted: r.objects_deleted,
            longest_step: Duration::from_micros(r.longest_step_us),
            cut: r.cut,
        }
    });
    let folded = (behind.records > 0).then(|| feed::FoldSummary {
        records: behind.records,
        longest_step: Duration::from_micros(behind.longest_step_us),
    });
    Ok(RecordSummary {
        cluster_id: target.cluster_id.clone(),
        elapsed: started.elapsed(),
        streams,
        retention,
        folded,
    })
}

/// Once every stream has had its first answer (a list, or a refusal), and only
/// then: ends the run when every one was refused (`refused`), warns when some
/// were.
fn answer_start(
    now: &[StreamStatus],
    answered: &mut bool,
    refused: &mut Option<Vec<(String, String)>>,
    tasks: &mut tokio::task::JoinSet<StreamEnd>,
    display: &Display,
    retry: Duration,
) {
    if *answered || !now.iter().all(|s| s.listed || s.refused.is_some()) {
        return;
    }
    *answered = true;
    match first_answers(now) {
        Start::AllRefused(why) => {
            *refused = Some(why);
            tasks.abort_all();
        }
        Start::SomeRefused(text) => {
            for s in now.iter().filter(|s| !s.listed) {
                if let Some(why) = &s.refused {
                    display.notice(&refusal(&s.name, why, retry));
                }
            }
            display.notice(&Notice {
                stream: String::new(),
                text,
                warning: true,
            });
        }
        Start::Recording => {}
    }
}

/// The warning for one stream the server refused.
fn refusal(stream: &str, why: &str, retry: Duration) -> Notice {
    Notice {
        stream: stream.to_string(),
        text: format!(
            "unavailable: {why}; retrying every {}",
            crate::time::format_duration(retry)
        ),
        warning: true,
    }
}

/// How a run began, once every stream had its first answer.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Start {
    Recording,
    /// Some were refused: how many, for a warning.
    SomeRefused(String),
    /// Every stream was refused before any list: names and reasons.
    AllRefused(Vec<(String, String)>),
}

fn first_answers(statuses: &[StreamStatus]) -> Start {
    let refused: Vec<(String, String)> = statuses
        .iter()
        .filter(|s| !s.listed)
        .filter_map(|s| Some((s.name.clone(), s.refused.clone()?)))
        .collect();
    if refused.is_empty() {
        Start::Recording
    } else if refused.len() == statuses.len() {
        Start::AllRefused(refused)
    } else {
        Start::SomeRefused(format!(
            "{} of {} streams refused ({}); the others are recording, and the refused ones are retried",
            refused.len(),
            statuses.len(),
            refused
                .iter()
                .map(|(name, _)| name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(name: &str, listed: bool, refused: Option<&str>) -> StreamStatus {
        StreamStatus {
            name: name.into(),
            phase: Phase::Starting,
            events: 0,
            last_rv: String::new(),
            gaps: 0,
            unavailable: None,
            listed,
            refused: refused.map(str::to_string),
            settled: None,
        }
    }

    #[test]
    fn a_run_refused_everywhere_ends_and_one_refused_in_part_goes_on() {
        let no =
            "403 Forbidden: deployments.apps is forbidden: User \"limited\" cannot list resource";
        assert_eq!(
            first_answers(&[status("a", true, None), status("b", true, None)]),
            Start::Recording
        );
        assert_eq!(
            first_answers(&[status("a", false, Some(no)), status("b", true, None)]),
            Start::SomeRefused(
                "1 of 2 streams refused (a); the others are recording, and the refused ones are retried"
                    .into()
            )
        );
        assert_eq!(
            first_answers(&[status("a", false, Some(no)), status("b", false, Some(no))]),
            Start::AllRefused(vec![("a".into(), no.into()), ("b".into(), no.into())])
        );
        // Refused at first, then listed: recording.
        assert_eq!(
            first_answers(&[status("a", true, Some(no))]),
            Start::Recording
        );
    }

    #[test]
    fn a_relist_line_names_what_it_found_while_that_fits() {
        let f = crate::history::log::RelistFindings {
            between: Some(crate::history::Between {
                from: 1_795_946_400_000,
                to: 1_795_946_401_500,
            }),
            changed: vec!["a".into(), "b".into(), "c".into(), "d".into()],
            appeared: vec![],
            gone: vec!["old".into()],
        };
        let line = relist_line("configmaps.v1@shop", &f);
        assert_eq!(
            line,
            "10:00:01 RELIST   configmaps.v1@shop (unwatched since 10:00:00.000): 4 changed (a, b, c +1), 1 gone (old)"
        );
        let long = crate::history::log::RelistFindings {
            changed: vec!["x".repeat(60), "y".repeat(60)],
            ..f.clone()
        };
        let line = relist_line("configmaps.v1@shop", &long);
        assert!(line.ends_with(": 2 changed, 1 gone"), "{line}");
        let none = crate::history::log::RelistFindings {
            changed: vec![],
            gone: vec![],
            ..f
        };
        assert!(relist_line("s", &none).ends_with(": no change"));
    }

    use crate::cluster::discovery::Discovered;
    use crate::model::ResourceType;

    fn d(group: &str, resource: &str, kind: &str, namespaced: bool, verbs: &[&str]) -> Discovered {
        Discovered {
            resource: ResourceType {
                group: group.into(),
                version: "v1".into(),
                resource: resource.into(),
                kind: kind.into(),
                singular: kind.to_ascii_lowercase(),
                short_names: vec![],
                namespaced,
            },
            verbs: verbs.iter().map(|v| v.to_string()).collect(),
        }
    }

    fn catalog() -> Catalog {
        let all = &["get", "list", "watch"];
        Catalog {
            resources: vec![
                Discovered {
                    resource: ResourceType {
                        short_names: vec!["cm".into()],
                        ..d("", "configmaps", "ConfigMap", true, all).resource
                    },
                    verbs: d("", "configmaps", "ConfigMap", true, all).verbs,
                },
                d("", "secrets", "Secret", true, all),
                Discovered {
                    resource: ResourceType {
                        short_names: vec!["ns".into()],
                        ..d("", "namespaces", "Namespace", false, all).resource
                    },
                    verbs: d("", "namespaces", "Namespace", false, all).verbs,
                },
                d("apps", "deployments", "Deployment", true, all),
                d("", "bindings", "Binding", true, &["create"]),
            ],
            warnings: vec![],
        }
    }

    #[test]
    fn defaults_skip_what_the_server_lacks() {
        let plan = plan_streams(
            &catalog(),
            &PlanArgs {
                namespace: "shop".into(),
                all_namespaces: true,
                ..Default::default()
            },
        )
        .unwrap();
        let names: Vec<String> = plan.streams.iter().map(|s| s.name()).collect();
        assert_eq!(
            names,
            vec!["deployments.v1.apps@*", "configmaps.v1@*", "namespaces.v1"]
        );
        // statefulsets, daemonsets, services, serviceaccounts
        assert_eq!(plan.warnings.len(), 4, "{:?}", plan.warnings);
    }

    #[test]
    fn named_resources_secrets_and_errors() {
        let args = |r: &[&str], secrets: bool| PlanArgs {
            resources: r.iter().map(|s| s.to_string()).collect(),
            namespace: "shop".into(),
            include_secrets: secrets,
            ..Default::default()
        };
        let plan =
            plan_streams(&catalog(), &args(&["cm,deployments", "configmap"], false)).unwrap();
        assert_eq!(plan.streams.len(), 2);
        assert_eq!(plan.streams[0].namespace.as_deref(), Some("shop"));
        assert_eq!(
            plan_streams(&catalog(), &args(&["secrets"], false)).unwrap_err(),
            PlanError::SecretsRefused
        );
        assert!(plan_streams(&catalog(), &args(&["secret"], true)).is_ok());
        assert_eq!(
            plan_streams(&catalog(), &args(&["nope"], false))
                .unwrap_err()
                .to_string(),
            "the server doesn't have a resource type \"nope\""
        );
        assert!(matches!(
            plan_streams(&catalog(), &args(&["bindings"], false)),
            Err(PlanError::NotWatchable(_))
        ));
        let ns = plan_streams(&catalog(), &args(&["ns"], false)).unwrap();
        assert_eq!(ns.streams[0].namespace, None);
    }
}

#[cfg(test)]
mod allocator_tests {
    use super::*;

    #[test]
    fn the_option_set_is_mimallocs_purge_delay() {
        // SAFETY: plain FFI reads and a write of a valid option; this test
        // is the only code of the test process that touches the options.
        let get = |o| unsafe { libmimalloc_sys::mi_option_get(o) };
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            // mimalloc 2's defaults around it: eager_commit_delay 1, the purge
            // delay 10 ms, use_numa_nodes 0.
            assert_eq!(
                [
                    MI_OPTION_PURGE_DELAY - 1,
                    MI_OPTION_PURGE_DELAY,
                    MI_OPTION_PURGE_DELAY + 1
                ]
                .map(get),
                [1, 10, 0]
            );
        }
        give_back_freed_memory_promptly();
        assert_eq!(get(MI_OPTION_PURGE_DELAY), 1);
    }
}
