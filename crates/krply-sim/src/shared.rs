//! State shared by the server tasks and every `Simulator` handle: the store,
//! fault injection settings, the request log and the registry of open watches.

use bytes::Bytes;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};

use super::RequestRecord;
use super::store::Store;

/// The user every authenticated request runs as.
pub(crate) const USER: &str = "krply-sim-user";

/// Locks a mutex; a poisoned lock (a panic elsewhere) still yields the data.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A command to one open watch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WatchCtl {
    /// Send `ERROR 410 Expired` and close.
    Expire,
    /// Write one line that is not JSON; keep streaming.
    Malformed,
    /// Stop at once (the body is aborted).
    Abort,
}

#[derive(Debug)]
struct WatchEntry {
    ctl: mpsc::UnboundedSender<WatchCtl>,
    abort: Option<oneshot::Sender<()>>,
}

/// Injected failures and RBAC denials.
#[derive(Debug, Default)]
pub(crate) struct Faults {
    pub fail_remaining: usize,
    pub fail_status: u16,
    pub fail_retry_after: Option<u32>,
    /// Watches still to refuse in the stream: HTTP 200, then this ERROR.
    pub watch_errors: usize,
    pub watch_error: Option<(u16, String, String)>,
    /// `(plural, namespace)`; `None` = every namespace and the cluster scope.
    pub forbidden: Vec<(String, Option<String>)>,
    /// The same, for writes (create, update, patch, delete).
    pub forbidden_writes: Vec<(String, Option<String>)>,
}

#[derive(Debug)]
pub(crate) struct Shared {
    pub store: Mutex<Store>,
    pub token: Option<String>,
    pub bookmark_interval: Option<Duration>,
    pub max_page_size: usize,
    pub expired_as_http_status: AtomicBool,
    delay_nanos: AtomicU64,
    /// While true, every HTTP request waits before it is served
    /// ([`super::Simulator::hold_requests`]).
    pub held: watch::Sender<bool>,
    pub faults: Mutex<Faults>,
    pub requests: Mutex<Vec<RequestRecord>>,
    watches: Mutex<(u64, HashMap<u64, WatchEntry>)>,
    /// Watch lines served from memory to the next watch of a resource
    /// ([`super::Simulator::serve_canned_watch`]).
    pub canned: Mutex<Option<CannedWatch>>,
    /// A list served from memory to every list of a resource
    /// ([`super::Simulator::serve_canned_list`]).
    pub canned_list: Mutex<Option<CannedList>>,
    /// Flips to true when the simulator shuts down.
    pub shutdown: watch::Receiver<bool>,
    /// The audit log writes made as a user go to ([`super::Simulator::audit_to`]).
    pub audit: Mutex<Option<std::fs::File>>,
}

/// Pre-serialised watch lines for the next watch of one resource (plural name),
/// in chunks as they go on the wire.
#[derive(Debug)]
pub(crate) struct CannedWatch {
    pub plural: String,
    pub chunks: Vec<Bytes>,
    /// Flips to true when the lines may flow ([`super::CannedGate::go`]).
    pub go: watch::Receiver<bool>,
    /// Set to true when a watch has taken the lines.
    pub taken: watch::Sender<bool>,
}

/// Pre-serialised objects served as the list of one resource (plural name),
/// a page at a time.
#[derive(Debug)]
pub(crate) struct CannedList {
    pub plural: String,
    /// The list's `kind`, `apiVersion` and `metadata.resourceVersion`.
    pub kind: String,
    pub api_version: String,
    pub resource_version: String,
    pub items: Vec<Bytes>,
}

impl CannedList {
    /// The continue token of the page that starts at item `offset`.
    pub fn token(offset: usize) -> String {
        format!("canned-{offset}")
    }

    /// The page of up to `limit` items (all without one) from the one
    /// `continue` names, as kube-apiserver sends a list: with a continue
    /// token and the count of the items left while there are more. `None`
    /// for a token this list did not give.
    pub fn page(&self, limit: Option<usize>, cont: Option<&str>) -> Option<Vec<u8>> {
        let start = match cont {
            None => 0,
            Some(t) => t.strip_prefix("canned-")?.parse().ok()?,
        };
        let rest = self.items.get(start..)?;
        let take = limit.unwrap_or(rest.len()).min(rest.len());
        let mut metadata = serde_json::json!({"resourceVersion": self.resource_version});
        if take < rest.len() {
            metadata["continue"] = Self::token(start + take).into();
            metadata["remainingItemCount"] = (rest.len() - take).into();
        }
        let head = serde_json::json!({"kind": self.kind, "apiVersion": self.api_version, "metadata": metadata});
        let mut body = serde_json::to_vec(&head).ok()?;
        body.pop();
        body.extend_from_slice(br#","items":["#);
        for (i, item) in rest[..take].iter().enumerate() {
            if i > 0 {
                body.push(b',');
            }
            body.extend_from_slice(item);
        }
        body.extend_from_slice(b"]}");
        Some(body)
    }
}

impl Shared {
    pub(crate) fn new(
        store: Store,
        token: Option<String>,
        bookmark_interval: Option<Duration>,
        max_page_size: usize,
        expired_as_http_status: bool,
        shutdown: watch::Receiver<bool>,
    ) -> Shared {
        Shared {
            store: Mutex::new(store),
            token,
            bookmark_interval,
            max_page_size: max_page_size.max(1),
            expired_as_http_status: AtomicBool::new(expired_as_http_status),
            delay_nanos: AtomicU64::new(0),
            held: watch::Sender::new(false),
            faults: Mutex::new(Faults::default()),
            requests: Mutex::new(Vec::new()),
            watches: Mutex::new((0, HashMap::new())),
            canned: Mutex::new(None),
            canned_list: Mutex::new(None),
            shutdown,
            audit: Mutex::new(None),
        }
    }

    pub(crate) fn delay(&self) -> Duration {
        Duration::from_nanos(self.delay_nanos.load(Ordering::Relaxed))
    }

    pub(crate) fn set_delay(&self, d: Duration) {
        let nanos = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.delay_nanos.store(nanos, Ordering::Relaxed);
    }

    pub(crate) fn expired_as_http(&self) -> bool {
        self.expired_as_http_status.load(Ordering::Relaxed)
    }

    /// Takes one injected failure, if any are pending.
    pub(crate) fn take_failure(&self) -> Option<(u16, Option<u32>)> {
        let mut f = lock(&self.faults);
        if f.fail_remaining == 0 {
            return None;
        }
        f.fail_remaining -= 1;
        Some((f.fail_status, f.fail_retry_after))
    }

    /// Takes one injected in-stream watch error, if any are pending.
    pub(crate) fn take_watch_error(&self) -> Option<(u16, String, String)> {
        let mut f = lock(&self.faults);
        if f.watch_errors == 0 {
            return None;
        }
        f.watch_errors -= 1;
        f.watch_error.clone()
    }

    /// Whether reading `plural` in `namespace` (`None`: cluster scope) is denied.
    pub(crate) fn is_forbidden(&self, plural: &str, namespace: Option<&str>) -> bool {
        covers(&lock(&self.faults).forbidden, plural, namespace)
    }

    /// Whether writing `plural` in `namespace` (`None`: cluster scope) is denied.
    pub(crate) fn is_write_forbidden(&self, plural: &str, namespace: Option<&str>) -> bool {
        covers(&lock(&self.faults).forbidden_writes, plural, namespace)
    }

    /// Registers an open watch; returns its id, its command channel and the
    /// abort handle of its body.
    pub(crate) fn register_watch(
        &self,
    ) -> (
        u64,
        mpsc::UnboundedReceiver<WatchCtl>,
        oneshot::Receiver<()>,
    ) {
        let (ctl_tx, ctl_rx) = mpsc::unbounded_channel();
        let (abort_tx, abort_rx) = oneshot::channel();
        let mut w = lock(&self.watches);
        w.0 += 1;
        let id = w.0;
        w.1.insert(
            id,
            WatchEntry {
                ctl: ctl_tx,
                abort: Some(abort_tx),
            },
        );
        (id, ctl_rx, abort_rx)
    }

    pub(crate) fn unregister_watch(&self, id: u64) {
        lock(&self.watches).1.remove(&id);
    }

    pub(crate) fn open_watches(&self) -> usize {
        lock(&self.watches).1.len()
    }

    /// Sends a command to every open watch.
    pub(crate) fn broadcast(&self, cmd: WatchCtl) {
        let mut w = lock(&self.watches);
        for entry in w.1.values_mut() {
            if cmd == WatchCtl::Abort
                && let Some(a) = entry.abort.take()
            {
                let _ = a.send(());
            }
            let _ = entry.ctl.send(cmd);
        }
    }
}

/// Whether one of `rules` (`(plural, namespace)`, `None` for everywhere) covers
/// `plural` in `namespace`.
fn covers(rules: &[(String, Option<String>)], plural: &str, namespace: Option<&str>) -> bool {
    rules.iter().any(|(r, ns)| {
        r == plural
            && match (ns, namespace) {
                (None, _) => true,
                (Some(_), None) => true,
                (Some(a), Some(b)) => a == b,
            }
    })
}
