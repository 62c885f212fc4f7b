//! Watches: a task per open watch streams one JSON document plus `\n` per
//! event. Watchers read the resource's shared history window (no per-watcher
//! event queue), so memory stays bounded: a watcher that falls behind the
//! window gets `ERROR 410 Expired` and is closed, as with a real watch cache.
//! Events are batched into one chunk per wake-up; object bytes are copied
//! from the version serialized at write time, never re-serialized (except
//! for Table / metadata-only output and version conversion of custom resources).

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};

use super::catalog::ResourceDef;
use super::error::{self, ApiStatus};
use super::negotiate::Output;
use super::shared::{Shared, WatchCtl, lock};
use super::store::{EventType, HistEvent, ResChannel, Version};
use super::table::{self, IncludeObject};
use krply_apimachinery::selector::{FieldSelector, LabelSelector};

/// Events read per lock acquisition.
const BATCH: usize = 256;
/// Chunks buffered per watch before the writer waits for the client.
const CHUNKS: usize = 8;

/// A line that is no JSON at all (so a line-based client cannot mistake it
/// for a truncated document and skip it silently).
pub(crate) const MALFORMED_LINE: &[u8] = b"<<krply-sim: injected malformed watch line>>\n";

/// What a watch selects and how it is rendered.
#[derive(Debug, Clone)]
pub(crate) struct Filter {
    pub def: Arc<ResourceDef>,
    /// The apiVersion of the request (custom resources are converted to it).
    pub api_version: String,
    pub namespace: Option<String>,
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    pub output: Output,
    pub include: IncludeObject,
}

impl Filter {
    pub(crate) fn matches(&self, v: &Version) -> bool {
        if self
            .namespace
            .as_deref()
            .is_some_and(|ns| ns != &*v.namespace)
        {
            return false;
        }
        if !self.labels.matches(&v.labels) {
            return false;
        }
        if self.fields.is_empty() {
            return true;
        }
        let parsed = std::cell::OnceCell::new();
        self.fields.matches(&|f: &str| match f {
            "metadata.name" => v.name.to_string(),
            "metadata.namespace" => v.namespace.to_string(),
            path => {
                let obj = parsed.get_or_init(|| v.value());
                let ptr = format!("/{}", path.replace('.', "/"));
                match obj.pointer(&ptr) {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Null) | None => String::new(),
                    Some(other) => other.to_string(),
                }
            }
        })
    }

    /// The event this watcher sees for a write, if any: an object that starts
    /// matching is ADDED, one that stops matching is DELETED (as the watch
    /// cache reports it).
    fn classify(&self, e: &HistEvent) -> Option<EventType> {
        let cur = self.matches(&e.obj);
        let prev = e.prev.as_ref().is_some_and(|p| self.matches(p));
        match (e.etype, prev, cur) {
            (EventType::Added, _, true) => Some(EventType::Added),
            (EventType::Deleted, _, true) => Some(EventType::Deleted),
            (EventType::Modified, true, true) => Some(EventType::Modified),
            (EventType::Modified, false, true) => Some(EventType::Added),
            (EventType::Modified, true, false) => Some(EventType::Deleted),
            _ => None,
        }
    }

    /// Appends the object of a version in the requested representation.
    pub(crate) fn write_object(&self, v: &Version, out: &mut Vec<u8>) {
        match self.output {
            Output::Json if v.def.builtin || *v.api_version == *self.api_version => {
                out.extend_from_slice(&v.bytes);
            }
            Output::Json => {
                let mut obj = v.value();
                if let Some(m) = obj.as_object_mut() {
                    m.insert("apiVersion".into(), json!(self.api_version));
                }
                out.extend_from_slice(&serde_json::to_vec(&obj).unwrap_or_default());
            }
            Output::Table => {
                let obj = v.value();
                let t = table::table(
                    &self.def,
                    &[obj],
                    self.include,
                    json!({"resourceVersion": v.rv.to_string()}),
                );
                out.extend_from_slice(&serde_json::to_vec(&t).unwrap_or_default());
            }
            Output::PartialMetadata => {
                let t = table::partial_metadata(&v.value());
                out.extend_from_slice(&serde_json::to_vec(&t).unwrap_or_default());
            }
        }
    }

    fn write_event(&self, etype: &str, v: &Version, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"type\":\"");
        out.extend_from_slice(etype.as_bytes());
        out.extend_from_slice(b"\",\"object\":");
        self.write_object(v, out);
        out.extend_from_slice(b"}\n");
    }

    fn bookmark(&self, rv: u64, initial_end: bool) -> Vec<u8> {
        let mut meta = json!({"resourceVersion": rv.to_string()});
        if initial_end && let Some(m) = meta.as_object_mut() {
            m.insert(
                "annotations".into(),
                json!({"k8s.io/initial-events-end": "true"}),
            );
        }
        let object =
            json!({"kind": self.def.kind, "apiVersion": self.api_version, "metadata": meta});
        typed_line("BOOKMARK", &object)
    }
}

/// The object a watch with a selector sees leave it: its version before the
/// write, with the write's resourceVersion (kube-apiserver's watch cache,
/// `cacheWatcher.convertToWatchEvent`: "return a delete event with the
/// previous object content, but with the event's resource version").
fn left_selector(prev: &Version, rv: u64) -> Version {
    let mut obj = prev.value();
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("resourceVersion".into(), json!(rv.to_string()));
    }
    Version {
        rv,
        def: prev.def.clone(),
        api_version: prev.api_version.clone(),
        namespace: prev.namespace.clone(),
        name: prev.name.clone(),
        uid: prev.uid.clone(),
        labels: prev.labels.clone(),
        bytes: serde_json::to_vec(&obj).unwrap_or_default().into(),
    }
}

/// `{"type":T,"object":O}` and a newline, `type` first as the server writes it.
fn typed_line(etype: &str, object: &Value) -> Vec<u8> {
    let mut out = format!("{{\"type\":\"{etype}\",\"object\":").into_bytes();
    out.extend_from_slice(&serde_json::to_vec(object).unwrap_or_default());
    out.extend_from_slice(b"}\n");
    out
}

fn error_line(s: &ApiStatus) -> Bytes {
    Bytes::from(typed_line("ERROR", &s.to_json()))
}

/// Where a watch starts.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Start {
    /// A synthetic ADDED per current object, then live (`resourceVersion`
    /// unset or "0"); with `end_bookmark` (sendInitialEvents) a BOOKMARK
    /// annotated `k8s.io/initial-events-end` follows the initial events.
    Initial { end_bookmark: bool },
    /// Every event after this resourceVersion, then live.
    From(u64),
}

/// Options of one watch request.
#[derive(Debug, Clone)]
pub(crate) struct WatchOpts {
    pub start: Start,
    pub bookmarks: bool,
    pub timeout: Duration,
}

/// The body of a started watch.
pub(crate) struct Started {
    pub rx: mpsc::Receiver<Bytes>,
    pub abort: tokio::sync::oneshot::Receiver<()>,
}

/// Opens a watch: decides where it starts (or that it is too old), registers
/// it and spawns its task. An `Err` is answered as an HTTP status.
pub(crate) fn open(
    shared: &Arc<Shared>,
    filter: Filter,
    opts: WatchOpts,
) -> Result<Started, ApiStatus> {
    let store = lock(&shared.store);
    let Some(rs) = store.state(&filter.def) else {
        return Err(error::path_not_found());
    };
    let chan = rs.chan.clone();
    let notify = chan.tx.subscribe();
    let mut initial = Vec::new();
    let mut first_error = None;
    let cursor = match opts.start {
        Start::Initial { .. } => {
            initial = rs
                .objects
                .iter()
                .filter(|(ns, _)| {
                    filter
                        .namespace
                        .as_deref()
                        .is_none_or(|want| want == ns.as_str())
                })
                .flat_map(|(_, m)| m.values())
                .map(|c| c.version.clone())
                .filter(|v| filter.matches(v))
                .collect();
            store.rv
        }
        Start::From(rv) => match rs.history.check_resume(rv) {
            Ok(()) => rv,
            Err(old) => {
                let status = error::too_old(old.requested, old.floor);
                if shared.expired_as_http() {
                    return Err(status);
                }
                first_error = Some(status);
                rv
            }
        },
    };
    drop(store);
    if first_error.is_none()
        && let Some((code, reason, message)) = shared.take_watch_error()
    {
        first_error = Some(ApiStatus::new(code, &reason, message));
    }
    let (id, ctl, abort) = shared.register_watch();
    let (tx, rx) = mpsc::channel(CHUNKS);
    let w = Watcher {
        shared: shared.clone(),
        id,
        filter,
        chan,
        notify,
        cursor,
        tx,
        ctl,
        pending: VecDeque::new(),
        shutdown: shared.shutdown.clone(),
    };
    let bookmark_interval = shared.bookmark_interval.filter(|_| opts.bookmarks);
    let end_bookmark = matches!(opts.start, Start::Initial { end_bookmark: true });
    tokio::spawn(w.run(
        initial,
        first_error,
        end_bookmark,
        bookmark_interval,
        opts.timeout,
    ));
    Ok(Started { rx, abort })
}

struct Watcher {
    shared: Arc<Shared>,
    id: u64,
    filter: Filter,
    chan: Arc<ResChannel>,
    notify: watch::Receiver<u64>,
    /// Every event up to this RV has been sent.
    cursor: u64,
    tx: mpsc::Sender<Bytes>,
    ctl: mpsc::UnboundedReceiver<WatchCtl>,
    /// Commands that arrived while a chunk was being sent.
    pending: VecDeque<WatchCtl>,
    shutdown: watch::Receiver<bool>,
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.shared.unregister_watch(self.id);
    }
}

/// What draining the window found.
enum Drained {
    /// Caught up with the window.
    Idle,
    /// The resource is no longer served and everything was sent.
    Gone,
    /// Events this watcher had not sent left the window.
    Expired(ApiStatus),
    /// The client went away.
    Closed,
}

impl Watcher {
    async fn run(
        mut self,
        initial: Vec<Arc<Version>>,
        first_error: Option<ApiStatus>,
        end_bookmark: bool,
        bookmark_interval: Option<Duration>,
        timeout: Duration,
    ) {
        if let Some(status) = first_error {
            let _ = self.send(error_line(&status)).await;
            return;
        }
        for chunk in initial.chunks(BATCH) {
            let mut buf = Vec::new();
            for v in chunk {
                self.filter.write_event("ADDED", v, &mut buf);
            }
            if !self.send(Bytes::from(buf)).await {
                return;
            }
        }
        if end_bookmark
            && !self
                .send(Bytes::from(self.filter.bookmark(self.cursor, true)))
                .await
        {
            return;
        }
        let start = self.cursor;
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let period = bookmark_interval.unwrap_or(Duration::from_secs(3600));
        let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut bookmark_due = false;
        // Runs until the client leaves, the timeout, a fault or shutdown.
        loop {
            while let Some(cmd) = self.pending.pop_front() {
                if !self.command(cmd).await {
                    return;
                }
            }
            match self.drain().await {
                Drained::Idle => {}
                Drained::Gone | Drained::Closed => return,
                Drained::Expired(status) => {
                    let _ = self.send(error_line(&status)).await;
                    return;
                }
            }
            // kube-apiserver's watch cache sends a watch only bookmarks newer
            // than the resourceVersion it started from (cacheWatcher.process):
            // a watch resumed from the last bookmark on a quiet cluster hears
            // nothing until something changes.
            if bookmark_due && self.cursor > start {
                bookmark_due = false;
                if !self
                    .send(Bytes::from(self.filter.bookmark(self.cursor, false)))
                    .await
                {
                    return;
                }
            }
            tokio::select! {
                biased;
                cmd = self.ctl.recv() => match cmd {
                    Some(c) => self.pending.push_back(c),
                    None => return,
                },
                _ = self.tx.closed() => return,
                _ = self.shutdown.changed() => return,
                _ = &mut deadline => return,
                changed = self.notify.changed() => if changed.is_err() { return },
                _ = ticker.tick(), if bookmark_interval.is_some() => bookmark_due = true,
            }
        }
    }

    /// Handles a command; false when the watch must end.
    async fn command(&mut self, cmd: WatchCtl) -> bool {
        match cmd {
            WatchCtl::Abort => false,
            WatchCtl::Expire => {
                let rv = lock(&self.shared.store).rv;
                let _ = self
                    .send(error_line(&error::too_old(self.cursor, rv)))
                    .await;
                false
            }
            WatchCtl::Malformed => self.send(Bytes::from_static(MALFORMED_LINE)).await,
        }
    }

    /// Sends everything the window holds after the cursor.
    async fn drain(&mut self) -> Drained {
        // Bounded: each round either advances the cursor or returns.
        loop {
            let (events, store_rv, gone) = {
                let store = lock(&self.shared.store);
                let Some(rs) = store.watch_state(self.filter.def.instance) else {
                    return Drained::Gone;
                };
                match rs.history.read_after(self.cursor, BATCH) {
                    Ok(ev) => (
                        ev,
                        store.rv,
                        rs.chan.gone.load(std::sync::atomic::Ordering::SeqCst),
                    ),
                    Err(old) => return Drained::Expired(error::too_old(old.requested, old.floor)),
                }
            };
            let caught_up = events.len() < BATCH;
            let mut buf = Vec::new();
            for (rv, e) in &events {
                self.cursor = *rv;
                match (self.filter.classify(e), &e.prev) {
                    // Out of the selector: the previous object, at this
                    // event's resourceVersion, as the watch cache sends it.
                    (Some(EventType::Deleted), Some(prev)) if e.etype == EventType::Modified => {
                        let left = left_selector(prev, e.obj.rv);
                        self.filter.write_event("DELETED", &left, &mut buf);
                    }
                    (Some(t), _) => self.filter.write_event(t.as_str(), &e.obj, &mut buf),
                    (None, _) => {}
                }
            }
            if !buf.is_empty() && !self.send(Bytes::from(buf)).await {
                return Drained::Closed;
            }
            if caught_up {
                self.cursor = self.cursor.max(store_rv);
                return if gone || self.chan.gone.load(std::sync::atomic::Ordering::SeqCst) {
                    Drained::Gone
                } else {
                    Drained::Idle
                };
            }
        }
    }

    /// Sends a chunk, waiting for the client; commands that arrive meanwhile
    /// are queued. False when the watch must end.
    async fn send(&mut self, chunk: Bytes) -> bool {
        let fut = self.tx.send(chunk);
        tokio::pin!(fut);
        // Bounded: ends when the chunk is taken, or on abort or shutdown.
        loop {
            tokio::select! {
                biased;
                r = &mut fut => return r.is_ok(),
                cmd = self.ctl.recv() => match cmd {
                    Some(WatchCtl::Abort) | None => return false,
                    Some(c) => self.pending.push_back(c),
                },
                _ = self.shutdown.changed() => return false,
            }
        }
    }
}
