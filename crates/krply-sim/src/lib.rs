//! A Kubernetes API server simulator on 127.0.0.1 (docs/simulator.md).
//!
//! It serves what the recorder, kube-rs and the real `kubectl` use:
//! `/version`, discovery, lists with `limit`/`continue` and selectors, watches
//! from a resourceVersion with bookmarks and a bounded history window (older
//! resumes get 410 Expired), create / update / patch / delete with
//! managedFields and dry runs, server-side apply (field managers, 409
//! conflicts, force, dry runs), server-side tables, the scale and status
//! subresources, CRDs, bearer-token auth over TLS, and fault injection.
//! One global resourceVersion counter orders every write, like etcd.
//!
//! The in-process API (`create`, `patch_merge`, `apply`, ...) has the same semantics
//! as HTTP writes (managedFields under the manager `krply-sim`) and emits the
//! same watch events. Every object version is serialized once; watchers,
//! the history window and the event log share those bytes.

mod apply;
mod audit;
mod body;
mod catalog;
mod defaults;
mod discovery;
mod error;
mod handler;
mod history;
mod ids;
mod jsonx;
mod keyed_lists;
mod kubeconfig;
mod lifecycle;
mod managed;
mod negotiate;
mod paging;
mod patch;
mod query;
mod resource;
mod respond;
mod scale;
mod seed;
mod server;
mod shared;
mod ssa;
mod store;
mod table;
mod tls;
mod validate;
mod watch;
mod write;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

pub use audit::SimUser;
pub use error::{ApiStatus, SimError, StatusCause};
pub use kubeconfig::KubeconfigOptions;

use shared::{Faults, Shared, WatchCtl, lock};
use store::Store;
use write::{Deleted, Preconditions, Sub, WriteCtx};

/// The field manager of writes made through the in-process API.
pub const SIM_MANAGER: &str = "krply-sim";

/// What the simulated cluster contains at start (besides the system
/// namespaces default, kube-system and kube-public).
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Seed {
    /// Nothing else.
    #[default]
    Empty,
    /// The Online Boutique in namespace `shop`.
    Shop,
    /// These objects, created in order (missing namespaces are created first).
    Objects(Vec<Value>),
}

/// How to run a simulator.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// Serve HTTPS with a CA generated at start ([`Simulator::ca_pem`]).
    pub tls: bool,
    /// If set, every request needs `Authorization: Bearer <token>`, else 401.
    pub token: Option<String>,
    /// How many recent events each resource keeps for watch resume.
    pub history_window: usize,
    /// Bookmark period for watches that asked for bookmarks.
    pub bookmark_interval: Option<Duration>,
    /// A watch from a too-old RV: `false` (like a real server) answers 200
    /// with one `ERROR` event (410 Expired) and closes; `true` answers HTTP 410.
    pub expired_as_http_status: bool,
    /// Larger `limit`s are clamped to this.
    pub max_page_size: usize,
    /// Initial contents.
    pub seed: Seed,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            tls: false,
            token: None,
            history_window: 10_000,
            bookmark_interval: Some(Duration::from_secs(1)),
            expired_as_http_status: false,
            max_page_size: 500,
            seed: Seed::Empty,
        }
    }
}

/// One write, as watchers saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimEvent {
    pub rv: String,
    /// `ADDED`, `MODIFIED` or `DELETED`.
    pub event_type: String,
    pub group: String,
    pub version: String,
    /// Plural resource name.
    pub resource: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
    pub uid: String,
    /// The exact JSON bytes sent as `object` in watch events.
    pub object: bytes::Bytes,
}

/// One HTTP request the simulator answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestRecord {
    pub method: String,
    pub path_and_query: String,
    pub user_agent: Option<String>,
    pub accept: Option<String>,
    pub content_type: Option<String>,
    pub status: u16,
}

/// A built-in resource type as the simulator's discovery describes it (its
/// preferred version), for code that writes journals without asking a server:
/// `builtin_type("apps", "deployments")`.
pub fn builtin_type(group: &str, resource: &str) -> Option<krply_apimachinery::ResourceType> {
    let catalog = catalog::Catalog::builtin();
    let def = catalog.by_resource(group, resource)?;
    Some(krply_apimachinery::ResourceType {
        group: def.group.clone(),
        version: def.preferred_version().to_string(),
        resource: def.plural.clone(),
        kind: def.kind.clone(),
        singular: def.singular.clone(),
        short_names: def.short_names.clone(),
        namespaced: def.namespaced,
    })
}

/// Now, in milliseconds since the Unix epoch.
fn now_ms() -> i64 {
    jiff::Timestamp::now().as_millisecond()
}

/// A running simulator. Clones are cheap handles to the same server; it stops
/// when the last handle is dropped or on [`Simulator::shutdown`].
#[derive(Clone)]
pub struct Simulator {
    inner: Arc<Handle>,
}

struct Handle {
    shared: Arc<Shared>,
    addr: SocketAddr,
    tls: bool,
    ca_pem: String,
    client: Option<(String, String)>,
    token: Option<String>,
    shutdown: tokio::sync::watch::Sender<bool>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.shutdown.send_replace(true);
    }
}

impl std::fmt::Debug for Simulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Simulator")
            .field("url", &self.url())
            .finish()
    }
}

struct Prepared {
    shared: Arc<Shared>,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
    ca_pem: String,
    client: Option<(String, String)>,
    shutdown: tokio::sync::watch::Sender<bool>,
}

fn prepare(cfg: &SimConfig) -> Result<Prepared, SimError> {
    let material = tls::generate(cfg.tls)?;
    let mut store = Store::new(cfg.history_window, material.ca_pem.clone());
    seed::seed(&mut store, &cfg.seed)?;
    let (shutdown, rx) = tokio::sync::watch::channel(false);
    let shared = Arc::new(Shared::new(
        store,
        cfg.token.clone(),
        cfg.bookmark_interval,
        cfg.max_page_size,
        cfg.expired_as_http_status,
        rx,
    ));
    Ok(Prepared {
        shared,
        acceptor: material.acceptor,
        ca_pem: material.ca_pem,
        client: material.client,
        shutdown,
    })
}

fn api_err(s: ApiStatus) -> SimError {
    SimError::Api(Box::new(s))
}

fn text(v: &Value, ptr: &str) -> String {
    jsonx::text(v, ptr).to_string()
}

impl Simulator {
    /// Starts serving on 127.0.0.1 (a free port) on the current tokio runtime.
    pub async fn start(cfg: SimConfig) -> Result<Simulator, SimError> {
        let p = prepare(&cfg)?;
        let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .map_err(SimError::Bind)?;
        let addr = listener.local_addr().map_err(SimError::Bind)?;
        tokio::spawn(server::serve(
            listener,
            p.shared.clone(),
            p.acceptor,
            p.shutdown.subscribe(),
        ));
        Ok(Simulator::handle(
            p.shared, addr, &cfg, p.ca_pem, p.client, p.shutdown,
        ))
    }

    /// Starts serving on its own thread and multi-thread runtime (for
    /// synchronous tests).
    pub fn start_background(cfg: SimConfig) -> Result<Simulator, SimError> {
        let p = prepare(&cfg)?;
        let listener =
            std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(SimError::Bind)?;
        listener.set_nonblocking(true).map_err(SimError::Bind)?;
        let addr = listener.local_addr().map_err(SimError::Bind)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("krply-sim")
            .enable_all()
            .build()
            .map_err(|e| SimError::Runtime(e.to_string()))?;
        let shared = p.shared.clone();
        let acceptor = p.acceptor;
        let mut stop = p.shutdown.subscribe();
        let serve_stop = p.shutdown.subscribe();
        std::thread::Builder::new()
            .name("krply-sim".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                        return;
                    };
                    let server =
                        tokio::spawn(server::serve(listener, shared, acceptor, serve_stop));
                    let _ = stop.wait_for(|stopped| *stopped).await;
                    server.abort();
                });
                // Dropping the runtime here cancels every connection and watch task.
            })
            .map_err(|e| SimError::Runtime(e.to_string()))?;
        Ok(Simulator::handle(
            p.shared, addr, &cfg, p.ca_pem, p.client, p.shutdown,
        ))
    }

    fn handle(
        shared: Arc<Shared>,
        addr: SocketAddr,
        cfg: &SimConfig,
        ca_pem: String,
        client: Option<(String, String)>,
        shutdown: tokio::sync::watch::Sender<bool>,
    ) -> Simulator {
        Simulator {
            inner: Arc::new(Handle {
                shared,
                addr,
                tls: cfg.tls,
                ca_pem,
                client,
                token: cfg.token.clone(),
                shutdown,
            }),
        }
    }

    fn shared(&self) -> &Shared {
        &self.inner.shared
    }

    /// Stops serving: the listener closes, connections and watches end.
    pub fn shutdown(&self) {
        self.inner.shutdown.send_replace(true);
    }

    /// `http://127.0.0.1:PORT` or `https://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        let scheme = if self.inner.tls { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}", self.inner.addr.port())
    }

    /// The CA certificate (PEM) that signed the server certificate, with TLS.
    pub fn ca_pem(&self) -> Option<String> {
        self.inner.tls.then(|| self.inner.ca_pem.clone())
    }

    /// A client certificate and key (PEM) the simulator accepts as credentials,
    /// with TLS.
    pub fn client_cert_pem(&self) -> Option<(String, String)> {
        self.inner.client.clone()
    }

    /// Writes a kubeconfig for this simulator (mode 0600).
    pub fn write_kubeconfig(
        &self,
        path: &std::path::Path,
        opts: &KubeconfigOptions,
    ) -> std::io::Result<()> {
        let ca = self.ca_pem();
        let client = if opts.client_certificate {
            self.inner.client.as_ref()
        } else {
            None
        };
        let text = kubeconfig::render(
            &self.url(),
            ca.as_deref(),
            self.inner.token.as_deref(),
            client,
            opts,
        );
        kubeconfig::write(path, &text)
    }

    fn resolve(
        store: &Store,
        api_version: &str,
        kind: &str,
    ) -> Result<Arc<catalog::ResourceDef>, SimError> {
        store
            .catalog
            .by_kind(api_version, kind)
            .cloned()
            .ok_or_else(|| {
                api_err(ApiStatus::new(
                    404,
                    "NotFound",
                    format!("no matches for kind \"{kind}\" in version \"{api_version}\""),
                ))
            })
    }

    fn ns_key(def: &catalog::ResourceDef, namespace: Option<&str>) -> String {
        if def.namespaced {
            namespace.unwrap_or("default").to_string()
        } else {
            String::new()
        }
    }

    fn ctx() -> WriteCtx {
        let mut ctx = WriteCtx::new(SIM_MANAGER);
        ctx.want_value = true;
        ctx
    }

    /// Creates an object (it carries apiVersion and kind; a namespaced
    /// object without namespace goes to `default`).
    pub fn create(&self, obj: Value) -> Result<Value, SimError> {
        let mut store = lock(&self.shared().store);
        let def = Self::resolve(&store, &text(&obj, "/apiVersion"), &text(&obj, "/kind"))?;
        let version = def
            .version_of(&text(&obj, "/apiVersion"))
            .unwrap_or_default()
            .to_string();
        let ns = text(&obj, "/metadata/namespace");
        let ns = (def.namespaced && !ns.is_empty()).then_some(ns);
        store
            .create(&def, &version, ns.as_deref(), obj, &Self::ctx())
            .map(|w| w.value)
            .map_err(api_err)
    }

    /// Replaces an object (PUT semantics: a set `metadata.resourceVersion`
    /// must match, else 409 Conflict).
    pub fn update(&self, obj: Value) -> Result<Value, SimError> {
        self.update_by(obj, SIM_MANAGER)
    }

    /// [`Simulator::update`] by another field manager (`kubectl-edit`, `helm`):
    /// the fields it changes are recorded as owned by it.
    pub fn update_by(&self, obj: Value, field_manager: &str) -> Result<Value, SimError> {
        let mut ctx = WriteCtx::new(field_manager);
        ctx.want_value = true;
        let mut store = lock(&self.shared().store);
        let def = Self::resolve(&store, &text(&obj, "/apiVersion"), &text(&obj, "/kind"))?;
        let ns = Self::ns_key(
            &def,
            Some(text(&obj, "/metadata/namespace"))
                .filter(|s| !s.is_empty())
                .as_deref(),
        );
        let name = text(&obj, "/metadata/name");
        store
            .replace(&def, &ns, &name, Sub::Main, &ctx, &mut |_| Ok(obj.clone()))
            .map(|w| w.value)
            .map_err(api_err)
    }

    /// Replaces an object's `status` through its status subresource by
    /// another field manager (a controller): only the status changes.
    pub fn update_status_by(&self, obj: Value, field_manager: &str) -> Result<Value, SimError> {
        let mut ctx = WriteCtx::new(field_manager);
        ctx.want_value = true;
        let mut store = lock(&self.shared().store);
        let def = Self::resolve(&store, &text(&obj, "/apiVersion"), &text(&obj, "/kind"))?;
        let ns = Self::ns_key(
            &def,
            Some(text(&obj, "/metadata/namespace"))
                .filter(|s| !s.is_empty())
                .as_deref(),
        );
        let name = text(&obj, "/metadata/name");
        store
            .replace(
                &def,
                &ns,
                &name,
                Sub::Status,
                &ctx,
                &mut |_| Ok(obj.clone()),
            )
            .map(|w| w.value)
            .map_err(api_err)
    }

    /// Applies a JSON merge patch (RFC 7386).
    pub fn patch_merge(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
        patch: &Value,
    ) -> Result<Value, SimError> {
        let mut store = lock(&self.shared().store);
        let def = Self::resolve(&store, api_version, kind)?;
        let ns = Self::ns_key(&def, namespace);
        let mut ctx = Self::ctx();
        ctx.with_managed = patch.pointer("/metadata/managedFields").is_some();
        store
            .replace(&def, &ns, name, Sub::Main, &ctx, &mut |old| {
                let mut new = old.clone();
                crate::patch::merge_patch(&mut new, patch);
                Ok(new)
            })
            .map(|w| w.value)
            .map_err(api_err)
    }

    /// Server-side apply of `obj` by `field_manager`, with the semantics of
    /// `PATCH` with `application/apply-patch+yaml`: `obj` carries apiVersion,
    /// kind and metadata.name (a namespaced object without namespace goes to
    /// `default`); a missing object is created (its namespace must exist);
    /// a conflict with another manager's fields is a 409 whose
    /// [`ApiStatus::causes`] name them, unless `force`; `dry_run` computes
    /// and returns the result and stores nothing.
    pub fn apply(
        &self,
        obj: Value,
        field_manager: &str,
        force: bool,
        dry_run: bool,
    ) -> Result<Value, SimError> {
        if field_manager.is_empty() || field_manager.len() > 128 {
            let why = if field_manager.is_empty() {
                "Required value: is required for apply patch"
            } else {
                "Too long: may not be longer than 128 characters"
            };
            return Err(api_err(error::invalid(
                "PatchOptions",
                "meta.k8s.io",
                "",
                &[("fieldManager".into(), why.into())],
            )));
        }
        let mut store = lock(&self.shared().store);
        let api_version = text(&obj, "/apiVersion");
        let def = Self::resolve(&store, &api_version, &text(&obj, "/kind"))?;
        let version = def.version_of(&api_version).unwrap_or_default().to_string();
        let ns = Self::ns_key(
            &def,
            Some(text(&obj, "/metadata/namespace"))
                .filter(|s| !s.is_empty())
                .as_deref(),
        );
        let name = text(&obj, "/metadata/name");
        if name.is_empty() {
            return Err(api_err(error::invalid(
                &def.kind,
                &def.group,
                "",
                &[(
                    "metadata.name".into(),
                    "Required value: name is required".into(),
                )],
            )));
        }
        let mut ctx = WriteCtx::new(field_manager);
        ctx.want_value = true;
        ctx.dry_run = dry_run;
        store
            .apply(&def, &version, &ns, &name, obj, &ctx, force)
            .map(|(w, _)| w.value)
            .map_err(api_err)
    }

    /// From now on, writes made with [`Simulator::update_as`] and
    /// [`Simulator::delete_as`] are logged to `path` as kube-apiserver's audit
    /// log would have them (appended; docs/audit.md).
    pub fn audit_to(&self, path: &std::path::Path) -> std::io::Result<()> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        *lock(&self.shared().audit) = Some(file);
        Ok(())
    }

    /// [`Simulator::create`] by `field_manager`, made as `who`: logged to the
    /// audit log.
    pub fn create_as(
        &self,
        obj: Value,
        field_manager: &str,
        who: &SimUser<'_>,
    ) -> Result<Value, SimError> {
        let mut store = lock(&self.shared().store);
        let def = Self::resolve(&store, &text(&obj, "/apiVersion"), &text(&obj, "/kind"))?;
        let version = def
            .version_of(&text(&obj, "/apiVersion"))
            .unwrap_or_default()
            .to_string();
        let ns = text(&obj, "/metadata/namespace");
        let ns = (def.namespaced && !ns.is_empty()).then_some(ns);
        let mut ctx = WriteCtx::new(field_manager);
        ctx.want_value = true;
        let done = store
            .create(&def, &version, ns.as_deref(), obj, &ctx)
            .map(|w| w.value)
            .map_err(api_err)?;
        drop(store);
        self.audit("create", &done, who);
        Ok(done)
    }

    /// [`Simulator::update_by`], made as `who`: logged to the audit log.
    pub fn update_as(
        &self,
        obj: Value,
        field_manager: &str,
        who: &SimUser<'_>,
    ) -> Result<Value, SimError> {
        let done = self.update_by(obj, field_manager)?;
        self.audit("update", &done, who);
        Ok(done)
    }

    /// [`Simulator::delete`], made as `who`: logged to the audit log.
    pub fn delete_as(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
        who: &SimUser<'_>,
    ) -> Result<Value, SimError> {
        let done = self.delete(api_version, kind, namespace, name)?;
        self.audit("delete", &done, who);
        Ok(done)
    }

    /// Appends the audit line of a completed write, when a log is set.
    fn audit(&self, verb: &str, object: &Value, who: &SimUser<'_>) {
        let plural = {
            let store = lock(&self.shared().store);
            Self::resolve(&store, &text(object, "/apiVersion"), &text(object, "/kind"))
                .map(|d| d.plural.clone())
        };
        let Ok(plural) = plural else { return };
        let line = audit::line(
            &audit::audit_id(),
            verb,
            &plural,
            None,
            object,
            who,
            now_ms(),
        );
        if let Some(file) = lock(&self.shared().audit).as_mut() {
            use std::io::Write;
            // One write call per line, as the server's log backend does.
            let _ = file.write_all(format!("{line}\n").as_bytes());
        }
    }

    /// Deletes an object; returns its final state (with the RV of its DELETED
    /// event), or the object marked for deletion when finalizers are pending.
    pub fn delete(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Value, SimError> {
        let mut store = lock(&self.shared().store);
        let def = Self::resolve(&store, api_version, kind)?;
        let ns = Self::ns_key(&def, namespace);
        match store.delete(&def, &ns, name, &Preconditions::default(), &Self::ctx()) {
            Ok(Deleted::Gone(w) | Deleted::Pending(w)) => Ok(w.value),
            Err(e) => Err(api_err(e)),
        }
    }

    /// The current object, if it exists.
    pub fn get(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<Value> {
        let store = lock(&self.shared().store);
        let def = Self::resolve(&store, api_version, kind).ok()?;
        let ns = Self::ns_key(&def, namespace);
        store.get(&def, &ns, name).map(store::Current::full_value)
    }

    /// Current objects of a kind (in `namespace`, or everywhere), ordered by
    /// namespace and name.
    pub fn list(&self, api_version: &str, kind: &str, namespace: Option<&str>) -> Vec<Value> {
        let store = lock(&self.shared().store);
        let Ok(def) = Self::resolve(&store, api_version, kind) else {
            return Vec::new();
        };
        let Some(rs) = store.state(&def) else {
            return Vec::new();
        };
        rs.objects
            .iter()
            .filter(|(ns, _)| namespace.is_none_or(|want| want == ns.as_str()))
            .flat_map(|(_, m)| m.values().map(store::Current::full_value))
            .collect()
    }

    /// The last resourceVersion handed out.
    pub fn current_rv(&self) -> String {
        lock(&self.shared().store).rv.to_string()
    }

    /// Every write since start, in resourceVersion order.
    pub fn event_log(&self) -> Vec<SimEvent> {
        let store = lock(&self.shared().store);
        store
            .log
            .iter()
            .map(|(t, v)| {
                let (group, version) = match v.api_version.split_once('/') {
                    Some((g, ver)) => (g.to_string(), ver.to_string()),
                    None => (String::new(), v.api_version.to_string()),
                };
                SimEvent {
                    rv: v.rv.to_string(),
                    event_type: t.as_str().to_string(),
                    group,
                    version,
                    resource: v.def.plural.clone(),
                    kind: v.def.kind.clone(),
                    namespace: (!v.namespace.is_empty()).then(|| v.namespace.to_string()),
                    name: v.name.to_string(),
                    uid: v.uid.to_string(),
                    object: v.bytes.clone(),
                }
            })
            .collect()
    }

    /// Every HTTP request answered so far, in order.
    pub fn request_log(&self) -> Vec<RequestRecord> {
        lock(&self.shared().requests).clone()
    }

    /// Watches currently streaming.
    pub fn open_watches(&self) -> usize {
        self.shared().open_watches()
    }

    /// Waits (blocking, polling) until at least `n` watches are open; false on timeout.
    pub fn wait_open_watches(&self, n: usize, timeout: Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        // Bounded by the deadline.
        while std::time::Instant::now() < deadline {
            if self.open_watches() >= n {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        self.open_watches() >= n
    }

    /// Async variant of [`Simulator::wait_open_watches`].
    pub async fn wait_open_watches_async(&self, n: usize, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        // Bounded by the deadline.
        while tokio::time::Instant::now() < deadline {
            if self.open_watches() >= n {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        self.open_watches() >= n
    }

    /// Aborts every open watch mid-stream: the client sees the body end
    /// without its final chunk.
    pub fn drop_watches(&self) {
        self.shared().broadcast(WatchCtl::Abort);
    }

    /// Forgets watch history: a watch or snapshot list from an RV older than
    /// the current one gets 410 Expired. Open watches keep streaming.
    pub fn compact(&self) {
        lock(&self.shared().store).compact();
    }

    /// Sends `ERROR` (410 Expired, "too old resource version") into every
    /// open watch, then closes it.
    pub fn expire_watches(&self) {
        self.shared().broadcast(WatchCtl::Expire);
    }

    /// Switches how a watch from a too-old RV is refused (see [`SimConfig`]).
    pub fn set_expired_as_http_status(&self, yes: bool) {
        self.shared()
            .expired_as_http_status
            .store(yes, std::sync::atomic::Ordering::Relaxed);
    }

    /// Delays every response by `d` (zero: off).
    pub fn set_delay(&self, d: Duration) {
        self.shared().set_delay(d);
    }

    /// Holds every HTTP request until [`Simulator::release_requests`] (or 20 s
    /// pass): what a test does meanwhile through the simulator's own methods
    /// happens while no client is answered, whatever the scheduler does.
    pub fn hold_requests(&self) {
        self.shared().held.send_replace(true);
    }

    /// Serves the requests [`Simulator::hold_requests`] held, and new ones at once.
    pub fn release_requests(&self) {
        self.shared().held.send_replace(false);
    }

    /// Serves `lines` (watch event lines, each without its newline) to the next watch
    /// of `plural` that starts from a resourceVersion, straight from memory, instead
    /// of the store's events: a watch source for benchmarks that does no work per
    /// event. The lines are not checked and the store does not change.
    pub fn serve_canned_watch(&self, plural: &str, lines: &[Vec<u8>]) {
        self.serve_canned_watch_gated(plural, lines).go();
    }

    /// [`Simulator::serve_canned_watch`], but the lines flow only once
    /// [`CannedGate::go`] is called: a benchmark times the stream alone, from
    /// a watch that is already open (as the yardstick's source does with
    /// `POST /_control/go`), not the client's start and list with it.
    pub fn serve_canned_watch_gated(&self, plural: &str, lines: &[Vec<u8>]) -> CannedGate {
        const CHUNK: usize = 64 << 10;
        let mut chunks = Vec::new();
        let mut chunk = Vec::with_capacity(CHUNK);
        for line in lines {
            chunk.extend_from_slice(line);
            chunk.push(b'\n');
            if chunk.len() >= CHUNK {
                chunks.push(bytes::Bytes::from(std::mem::take(&mut chunk)));
            }
        }
        if !chunk.is_empty() {
            chunks.push(bytes::Bytes::from(chunk));
        }
        let (go, gate) = tokio::sync::watch::channel(false);
        let (taken, watched) = tokio::sync::watch::channel(false);
        *lock(&self.shared().canned) = Some(shared::CannedWatch {
            plural: plural.to_owned(),
            chunks,
            go: gate,
            taken,
        });
        CannedGate { go, watched }
    }

    /// Serves every list of `plural` from memory: `items` (each an object's
    /// JSON, as it is to be sent) under a list `kind` and `apiVersion` at
    /// `resource_version`, a page of `limit` at a time with a continue token,
    /// whatever else the query says. With
    /// [`Simulator::serve_canned_watch_gated`], a source for benchmarks whose
    /// objects are exactly the given bytes: the store, which adds defaulted
    /// fields and managedFields to what it keeps, does not change. The items
    /// are not checked.
    pub fn serve_canned_list(
        &self,
        plural: &str,
        kind: &str,
        api_version: &str,
        resource_version: &str,
        items: &[Vec<u8>],
    ) {
        *lock(&self.shared().canned_list) = Some(shared::CannedList {
            plural: plural.to_owned(),
            kind: kind.to_owned(),
            api_version: api_version.to_owned(),
            resource_version: resource_version.to_owned(),
            items: items
                .iter()
                .map(|i| bytes::Bytes::from(i.clone()))
                .collect(),
        });
    }

    /// Writes one line that is not JSON into every open watch; the watches go on.
    pub fn inject_malformed_line(&self) {
        self.shared().broadcast(WatchCtl::Malformed);
    }

    /// Fails the next `n` requests with `status` (429, 500, 503, ...), with a
    /// `Retry-After` header and `details.retryAfterSeconds` when given.
    pub fn fail_next_requests(&self, n: usize, status: u16, retry_after_secs: Option<u32>) {
        let mut f: std::sync::MutexGuard<'_, Faults> = lock(&self.shared().faults);
        f.fail_remaining = n;
        f.fail_status = status;
        f.fail_retry_after = retry_after_secs;
    }

    /// Opens the next `n` watches (HTTP 200), then sends each one `ERROR` with
    /// this Status and closes it. kube-apiserver does this, with 500
    /// InternalError "etcd event received with PrevKv=nil", to every watch
    /// that starts exactly at etcd's compaction revision.
    pub fn fail_next_watches_in_stream(&self, n: usize, code: u16, reason: &str, message: &str) {
        let mut f = lock(&self.shared().faults);
        f.watch_errors = n;
        f.watch_error = Some((code, reason.to_string(), message.to_string()));
    }

    /// Denies get, list and watch on a resource (plural name) in `namespace`,
    /// or everywhere with `None` (403 Forbidden, worded like RBAC).
    pub fn forbid(&self, resource: &str, namespace: Option<&str>) {
        let mut f = lock(&self.shared().faults);
        let rule = (resource.to_string(), namespace.map(str::to_string));
        if !f.forbidden.contains(&rule) {
            f.forbidden.push(rule);
        }
    }

    /// Denies create, update, patch and delete on a resource (plural name) in
    /// `namespace`, or everywhere with `None` (403 Forbidden, worded like RBAC),
    /// as for a user whose role only reads.
    pub fn forbid_writes(&self, resource: &str, namespace: Option<&str>) {
        let mut f = lock(&self.shared().faults);
        let rule = (resource.to_string(), namespace.map(str::to_string));
        if !f.forbidden_writes.contains(&rule) {
            f.forbidden_writes.push(rule);
        }
    }

    /// Lifts [`Simulator::forbid`]: the rule for `namespace`, or with `None`
    /// every rule of the resource.
    pub fn allow(&self, resource: &str, namespace: Option<&str>) {
        let mut f = lock(&self.shared().faults);
        f.forbidden.retain(|(r, ns)| {
            !(r == resource && (namespace.is_none() || ns.as_deref() == namespace))
        });
    }
}

/// The gate of a canned watch ([`Simulator::serve_canned_watch_gated`]).
pub struct CannedGate {
    go: tokio::sync::watch::Sender<bool>,
    watched: tokio::sync::watch::Receiver<bool>,
}

impl CannedGate {
    /// Whether a watch has taken the lines and waits for them.
    pub fn watched(&self) -> bool {
        *self.watched.borrow()
    }

    /// Lets the lines flow.
    pub fn go(&self) {
        self.go.send_replace(true);
    }
}
