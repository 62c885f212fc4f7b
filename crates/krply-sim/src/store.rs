//! The object store: current objects per resource, one global resourceVersion
//! counter (like etcd), and the immutable [`Version`]s that every write
//! produces. A version is serialized once; its bytes are shared by the store,
//! the history window, the event log and every watcher.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::watch;

use super::catalog::{Catalog, ResourceDef};
use super::defaults::Allocator;
use super::history::{History, TooOld};
use super::jsonx;
use super::managed::ManagedFields;
use krply_apimachinery::selector::Labels;

/// The type of a watch event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One immutable version of one object.
#[derive(Debug)]
pub(crate) struct Version {
    pub rv: u64,
    pub def: Arc<ResourceDef>,
    pub api_version: Arc<str>,
    /// `""` for cluster-scoped objects.
    pub namespace: Arc<str>,
    pub name: Arc<str>,
    pub uid: Arc<str>,
    pub labels: Arc<Labels>,
    /// The object's JSON, with apiVersion and kind, exactly as served.
    pub bytes: Bytes,
}

impl Version {
    /// Appends the object as a list item: built-in types without apiVersion
    /// and kind (as the real server lists them), custom resources as they are.
    pub(crate) fn write_list_item(&self, out: &mut Vec<u8>) {
        if !self.def.builtin {
            out.extend_from_slice(&self.bytes);
            return;
        }
        // Objects serialize with sorted keys, so they start with apiVersion, kind.
        let prefix = format!(
            "{{\"apiVersion\":{},\"kind\":{},",
            Value::String(self.api_version.to_string()),
            Value::String(self.def.kind.clone())
        );
        if let Some(rest) = self.bytes.strip_prefix(prefix.as_bytes()) {
            out.push(b'{');
            out.extend_from_slice(rest);
            return;
        }
        match serde_json::from_slice::<Value>(&self.bytes) {
            Ok(Value::Object(mut m)) => {
                m.remove("apiVersion");
                m.remove("kind");
                out.extend_from_slice(&serde_json::to_vec(&m).unwrap_or_default());
            }
            _ => out.extend_from_slice(&self.bytes),
        }
    }

    /// The parsed object (slow path: tables, metadata-only views).
    pub(crate) fn value(&self) -> Value {
        serde_json::from_slice(&self.bytes).unwrap_or(Value::Null)
    }
}

/// A watch event in the history window.
#[derive(Debug, Clone)]
pub(crate) struct HistEvent {
    pub etype: EventType,
    pub obj: Arc<Version>,
    /// The version before this write (None for ADDED).
    pub prev: Option<Arc<Version>>,
}

/// The current state of one object. `value` holds everything but
/// `metadata.managedFields`, which live (parsed, with their JSON) in `managed`.
#[derive(Debug)]
pub(crate) struct Current {
    pub value: Value,
    pub version: Arc<Version>,
    pub managed: ManagedFields,
}

impl Current {
    /// The whole object, managedFields included.
    pub(crate) fn full_value(&self) -> Value {
        with_managed(self.value.clone(), &self.managed)
    }
}

/// `value` with the (synced) JSON of `managed` as its managedFields.
pub(crate) fn with_managed(mut value: Value, managed: &ManagedFields) -> Value {
    if !managed.json().is_empty()
        && let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut)
    {
        meta.insert(
            "managedFields".into(),
            Value::Array(managed.json().to_vec()),
        );
    }
    value
}

/// The wire form of an object: `value` plus the managedFields of `managed`,
/// serialized once. `size_hint` pre-sizes the buffer.
pub(crate) fn render(value: &mut Value, managed: &mut ManagedFields, size_hint: usize) -> Bytes {
    managed.attach(value);
    let mut buf = Vec::with_capacity(size_hint);
    let _ = serde_json::to_writer(&mut buf, &*value);
    managed.detach(value);
    Bytes::from(buf)
}

/// Wakes the watchers of one resource; `gone` once the resource is no longer served.
#[derive(Debug)]
pub(crate) struct ResChannel {
    pub tx: watch::Sender<u64>,
    pub gone: AtomicBool,
}

/// Objects by namespace (`""` when cluster-scoped), then name.
pub(crate) type ObjectMap = BTreeMap<String, BTreeMap<String, Current>>;

#[derive(Debug)]
pub(crate) struct ResourceState {
    pub def: Arc<ResourceDef>,
    pub objects: ObjectMap,
    pub history: History<HistEvent>,
    pub chan: Arc<ResChannel>,
}

/// The whole store, behind one mutex.
#[derive(Debug)]
pub(crate) struct Store {
    /// The last resourceVersion handed out.
    pub rv: u64,
    pub catalog: Catalog,
    /// By `ResourceDef::instance`.
    pub resources: HashMap<u64, ResourceState>,
    /// Resources no longer served (deleted CRDs), kept while watchers drain them.
    pub retired: HashMap<u64, ResourceState>,
    /// Every write since start (unbounded; for tests).
    pub log: Vec<(EventType, Arc<Version>)>,
    pub window: usize,
    pub alloc: Allocator,
    /// The CA published in every namespace's `kube-root-ca.crt`.
    pub ca_pem: String,
}

/// A page of a list, from one snapshot.
#[derive(Debug)]
pub(crate) struct Page {
    pub items: Vec<Arc<Version>>,
    /// The key of the last item, when more items follow.
    pub more_after: Option<(String, String)>,
    /// How many matching items follow this page.
    pub remaining: usize,
}

impl Store {
    pub(crate) fn new(window: usize, ca_pem: String) -> Store {
        let catalog = Catalog::builtin();
        let mut s = Store {
            rv: 0,
            catalog: catalog.clone(),
            resources: HashMap::new(),
            retired: HashMap::new(),
            log: Vec::new(),
            window,
            alloc: Allocator::default(),
            ca_pem,
        };
        for def in catalog.all() {
            s.add_resource_state(def.clone());
        }
        s
    }

    /// Creates the (empty) state of a newly served resource. History before
    /// now is unknown to it, like a fresh watch cache.
    pub(crate) fn add_resource_state(&mut self, def: Arc<ResourceDef>) {
        let (tx, _) = watch::channel(self.rv);
        self.resources.insert(
            def.instance,
            ResourceState {
                def,
                objects: BTreeMap::new(),
                history: History::new(self.window, self.rv),
                chan: Arc::new(ResChannel {
                    tx,
                    gone: AtomicBool::new(false),
                }),
            },
        );
    }

    /// Stops serving a resource: its watchers end once they have drained.
    pub(crate) fn remove_resource_state(&mut self, instance: u64) {
        self.retired.retain(|_, rs| Arc::strong_count(&rs.chan) > 1);
        if let Some(rs) = self.resources.remove(&instance) {
            rs.chan.gone.store(true, Ordering::SeqCst);
            rs.chan.tx.send_replace(self.rv);
            self.retired.insert(instance, rs);
        }
    }

    /// The state a watcher reads: served, or retired and still draining.
    pub(crate) fn watch_state(&self, instance: u64) -> Option<&ResourceState> {
        self.resources
            .get(&instance)
            .or_else(|| self.retired.get(&instance))
    }

    pub(crate) fn state(&self, def: &ResourceDef) -> Option<&ResourceState> {
        self.resources.get(&def.instance)
    }

    pub(crate) fn get(&self, def: &ResourceDef, ns: &str, name: &str) -> Option<&Current> {
        self.state(def)?.objects.get(ns)?.get(name)
    }

    /// Whether a namespace exists.
    pub(crate) fn namespace_exists(&self, ns: &str) -> bool {
        self.catalog
            .by_resource("", "namespaces")
            .and_then(|d| self.get(d, "", ns))
            .is_some()
    }

    /// Stores a new version of an object and emits its event. `value` is the
    /// object without managedFields (those are `managed`); its
    /// resourceVersion is set here.
    pub(crate) fn commit(
        &mut self,
        def: &Arc<ResourceDef>,
        etype: EventType,
        mut value: Value,
        mut managed: ManagedFields,
    ) -> Arc<Version> {
        self.rv += 1;
        let rv = self.rv;
        if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("managedFields");
            meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
        }
        let hint = self
            .resources
            .get(&def.instance)
            .and_then(|rs| rs.objects.get(jsonx::text(&value, "/metadata/namespace")))
            .and_then(|m| m.get(jsonx::text(&value, "/metadata/name")))
            .map_or(1024, |c| c.version.bytes.len() + 512);
        let bytes = render(&mut value, &mut managed, hint);
        let text = |p: &str| jsonx::text(&value, p);
        let ns = text("/metadata/namespace").to_string();
        let name = text("/metadata/name").to_string();
        let api_version = text("/apiVersion");
        let uid = text("/metadata/uid");
        let labels: Labels = jsonx::get(&value, "/metadata/labels")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                    .collect()
            })
            .unwrap_or_default();
        let window_state = self.resources.get_mut(&def.instance);
        let Some(rs) = window_state else {
            // Unreachable: callers resolve `def` from the catalog first.
            return Arc::new(Version {
                rv,
                def: def.clone(),
                api_version: api_version.into(),
                namespace: ns.into(),
                name: name.into(),
                uid: uid.into(),
                labels: Arc::new(labels),
                bytes,
            });
        };
        let prev = rs
            .objects
            .get(&ns)
            .and_then(|m| m.get(&name))
            .map(|c| c.version.clone());
        let reuse = |f: fn(&Version) -> &Arc<str>, s: &str| -> Arc<str> {
            match &prev {
                Some(p) if &**f(p) == s => f(p).clone(),
                _ => Arc::from(s),
            }
        };
        let version = Arc::new(Version {
            rv,
            def: def.clone(),
            api_version: reuse(|v| &v.api_version, api_version),
            namespace: reuse(|v| &v.namespace, &ns),
            name: reuse(|v| &v.name, &name),
            uid: reuse(|v| &v.uid, uid),
            labels: match &prev {
                Some(p) if *p.labels == labels => p.labels.clone(),
                _ => Arc::new(labels),
            },
            bytes,
        });
        if etype == EventType::Deleted {
            if let Some(m) = rs.objects.get_mut(&ns) {
                m.remove(&name);
                if m.is_empty() {
                    rs.objects.remove(&ns);
                }
            }
        } else {
            rs.objects.entry(ns).or_default().insert(
                name,
                Current {
                    value,
                    version: version.clone(),
                    managed,
                },
            );
        }
        rs.history.push(
            rv,
            HistEvent {
                etype,
                obj: version.clone(),
                prev,
            },
        );
        self.log.push((etype, version.clone()));
        rs.chan.tx.send_replace(rv);
        version
    }

    /// Forgets all watch history up to the current resourceVersion.
    pub(crate) fn compact(&mut self) {
        let rv = self.rv;
        for rs in self.resources.values_mut() {
            rs.history.compact(rv);
        }
    }

    /// The objects of `def` (in `ns`, or everywhere) as they were at `at`
    /// (`None`: now), ordered by (namespace, name).
    pub(crate) fn snapshot(
        &self,
        def: &ResourceDef,
        ns: Option<&str>,
        at: Option<u64>,
    ) -> Result<Vec<Arc<Version>>, TooOld> {
        let Some(rs) = self.state(def) else {
            return Ok(Vec::new());
        };
        let in_scope = |n: &str| ns.is_none_or(|want| want == n);
        let current = rs
            .objects
            .iter()
            .filter(|(n, _)| in_scope(n))
            .flat_map(|(_, m)| m.values().map(|c| c.version.clone()));
        let at = match at {
            Some(at) if at < self.rv => at,
            _ => return Ok(current.collect()),
        };
        let mut state: BTreeMap<(Arc<str>, Arc<str>), Arc<Version>> = current
            .map(|v| ((v.namespace.clone(), v.name.clone()), v))
            .collect();
        // Roll back every write after `at`, newest first.
        for e in rs.history.newer_than_rev(at)? {
            let key = (e.obj.namespace.clone(), e.obj.name.clone());
            if !in_scope(&key.0) {
                continue;
            }
            match &e.prev {
                Some(p) => {
                    state.insert(key, p.clone());
                }
                None => {
                    state.remove(&key);
                }
            }
        }
        Ok(state.into_values().collect())
    }

    /// One page of a list: matching items after `after`, at most `limit`.
    pub(crate) fn page(
        items: Vec<Arc<Version>>,
        after: Option<&(String, String)>,
        limit: Option<usize>,
        matches: &dyn Fn(&Version) -> bool,
    ) -> Page {
        let mut out = Vec::new();
        let mut remaining = 0;
        let mut more_after = None;
        for v in items {
            if let Some((ans, aname)) = after
                && (&*v.namespace, &*v.name) <= (ans.as_str(), aname.as_str())
            {
                continue;
            }
            if !matches(&v) {
                continue;
            }
            if limit.is_some_and(|l| out.len() >= l) {
                if more_after.is_none()
                    && let Some(last) = out.last()
                {
                    let last: &Arc<Version> = last;
                    more_after = Some((last.namespace.to_string(), last.name.to_string()));
                }
                remaining += 1;
                continue;
            }
            out.push(v);
        }
        Page {
            items: out,
            more_after,
            remaining,
        }
    }
}
