//! The write pipeline shared by HTTP and the in-process API: create, update
//! (PUT, patches, the status and scale subresources) and delete, with the
//! server's preconditions, server-owned fields, generation, managedFields,
//! defaulting, simulated controllers and dry runs.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Map, Value, json};

use super::catalog::{self, ResourceDef};
use super::defaults::{self, Allocator};
use super::error::{self, ApiStatus};
use super::ids;
use super::jsonx::{self, text};
use super::managed::{self, FieldSet, ManagedFields};
use super::store::{Current, EventType, Store, render, with_managed};
use super::validate;

/// Who writes, and how.
#[derive(Debug, Clone)]
pub(crate) struct WriteCtx {
    /// The field manager recorded in managedFields.
    pub manager: String,
    /// `dryRun=All`: validate and answer, store nothing, emit nothing.
    pub dry_run: bool,
    /// The time of the write (RFC 3339).
    pub now: String,
    /// The caller wants the resulting object as a `Value` (the in-process API).
    pub want_value: bool,
    /// `make` needs the stored managedFields (a patch that edits them).
    pub with_managed: bool,
}

impl WriteCtx {
    pub(crate) fn new(manager: &str) -> WriteCtx {
        WriteCtx {
            manager: manager.to_string(),
            dry_run: false,
            now: ids::now_rfc3339(),
            want_value: false,
            with_managed: false,
        }
    }
}

/// Which part of an object a write goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sub {
    Main,
    Status,
    Scale,
}

impl Sub {
    fn name(self) -> Option<&'static str> {
        match self {
            Sub::Main => None,
            Sub::Status => Some("status"),
            Sub::Scale => Some("scale"),
        }
    }
}

/// How a write changes managedFields.
#[derive(Debug)]
pub(crate) enum Owner {
    /// Operation `Update`: the writer takes every field it changes.
    Update,
    /// Operation `Apply`: ownership as server-side apply computed it
    /// ([`super::ssa::apply`]); the applier's entry gets the write's time
    /// when the object changes.
    Apply(ManagedFields),
}

/// The result of a write: the object as served, and (if asked for) parsed.
#[derive(Debug, Clone)]
pub(crate) struct Written {
    pub bytes: Bytes,
    pub value: Value,
}

/// DeleteOptions preconditions.
#[derive(Debug, Clone, Default)]
pub(crate) struct Preconditions {
    pub uid: Option<String>,
    pub resource_version: Option<String>,
}

/// The outcome of a delete.
#[derive(Debug)]
pub(crate) enum Deleted {
    /// The object is gone; this is its final state.
    Gone(Written),
    /// Finalizers are pending: the object is only marked for deletion.
    Pending(Written),
}

fn is_crd(def: &ResourceDef) -> bool {
    def.builtin && def.group == "apiextensions.k8s.io" && def.plural == "customresourcedefinitions"
}

fn is_namespace(def: &ResourceDef) -> bool {
    def.builtin && def.group.is_empty() && def.plural == "namespaces"
}

/// Checks (and fills in) apiVersion and kind of a request body.
fn check_type(def: &ResourceDef, version: &str, obj: &mut Value) -> Result<(), ApiStatus> {
    let Some(m) = obj.as_object_mut() else {
        return Err(error::bad_request(
            "the body of the request was not a JSON object",
        ));
    };
    let expected = def.api_version(version);
    match m.get("apiVersion").and_then(Value::as_str) {
        Some(av) if !av.is_empty() && def.version_of(av).is_none() => {
            return Err(error::bad_request(format!(
                "the API version in the data ({av}) does not match the expected API version ({expected})"
            )));
        }
        Some(av) if !av.is_empty() => {}
        _ => {
            m.insert("apiVersion".into(), json!(expected));
        }
    }
    match m.get("kind").and_then(Value::as_str) {
        Some(k) if !k.is_empty() && k != def.kind => {
            return Err(error::bad_request(format!(
                "the kind in the data ({k}) does not match the expected kind ({})",
                def.kind
            )));
        }
        Some(k) if !k.is_empty() => {}
        _ => {
            m.insert("kind".into(), json!(def.kind));
        }
    }
    match m.get("metadata") {
        None | Some(Value::Null) => {
            m.insert("metadata".into(), json!({}));
        }
        Some(Value::Object(_)) => {}
        Some(_) => {
            return Err(error::bad_request("metadata: expected an object"));
        }
    }
    Ok(())
}

fn meta_mut(obj: &mut Value) -> Option<&mut Map<String, Value>> {
    obj.get_mut("metadata").and_then(Value::as_object_mut)
}

/// Whether anything outside metadata and status differs (bumps `generation`).
fn spec_changed(old: &Value, new: &Value) -> bool {
    let (Some(o), Some(n)) = (old.as_object(), new.as_object()) else {
        return true;
    };
    let skip = |k: &str| matches!(k, "apiVersion" | "kind" | "metadata" | "status");
    o.iter().any(|(k, v)| !skip(k) && n.get(k) != Some(v))
        || n.keys().any(|k| !skip(k) && !o.contains_key(k))
}

/// What a simulated controller writes: `status`, and annotations (the
/// Deployment controller's revision), which kube-controller-manager records
/// under its status update.
fn controlled(obj: &Value) -> Value {
    let mut m = Map::new();
    if let Some(s) = obj.get("status") {
        m.insert("status".into(), s.clone());
    }
    if let Some(a) = obj.pointer("/metadata/annotations") {
        m.insert("metadata".into(), json!({"annotations": a}));
    }
    Value::Object(m)
}

fn controller_diff(pre: &Value, post: &Value, keyed: bool) -> (FieldSet, FieldSet) {
    managed::diff_object(pre, &controlled(post), keyed)
}

fn invalid(def: &ResourceDef, name: &str, causes: Vec<(String, String)>) -> Result<(), ApiStatus> {
    if causes.is_empty() {
        Ok(())
    } else {
        Err(error::invalid(&def.kind, &def.group, name, &causes))
    }
}

/// managedFields the client sent, as the server reads them: absent or `[]`
/// keeps the stored ones (`None`), `[{}]` strips them, anything else
/// replaces them (invalid content resets them).
fn client_managed(sent: Option<&Value>, stored: &[Value]) -> Option<ManagedFields> {
    let sent = sent?;
    match sent {
        Value::Array(a) if a.is_empty() || a.as_slice() == stored => None,
        Value::Array(a) if a.len() == 1 && a[0].as_object().is_some_and(Map::is_empty) => {
            Some(ManagedFields::default())
        }
        _ => Some(ManagedFields::from_json(sent).unwrap_or_default()),
    }
}

/// The server-owned metadata of a new object: what the client sent is dropped, and
/// name, namespace, uid, creationTimestamp and generation are set; status is the
/// server's to write.
fn stamp_new(def: &ResourceDef, obj: &mut Value, ns: &str, name: &str, ctx: &WriteCtx) {
    if let Some(meta) = meta_mut(obj) {
        for k in [
            "uid",
            "selfLink",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "managedFields",
            "generation",
            "creationTimestamp",
            "resourceVersion",
        ] {
            meta.remove(k);
        }
        meta.insert("name".into(), json!(name));
        if def.namespaced {
            meta.insert("namespace".into(), json!(ns));
        } else {
            meta.remove("namespace");
        }
        meta.insert("uid".into(), json!(ids::new_uid()));
        meta.insert("creationTimestamp".into(), json!(ctx.now));
        if def.has_generation() {
            meta.insert("generation".into(), json!(1));
        }
    }
    if def.status
        && let Some(m) = obj.as_object_mut()
    {
        m.remove("status");
    }
}

/// Runs the simulated controllers of `def` on `obj`; who wrote, and the fields it
/// changed and removed, for managedFields.
fn run_controllers(
    def: &ResourceDef,
    obj: &mut Value,
    now: &str,
    alloc: &mut Allocator,
) -> Option<(&'static str, FieldSet, FieldSet)> {
    if !defaults::simulates(def) {
        return None;
    }
    let pre = controlled(obj);
    let ctrl = defaults::simulate_controllers(def, obj, now, alloc)?;
    let (c, r) = controller_diff(&pre, obj, def.builtin);
    Some((ctrl, c, r))
}

/// Checks that a replacement names the stored object (name, namespace, and the
/// resourceVersion and uid preconditions), and carries over what only the server
/// sets; returns the managedFields the client sent.
fn carry_identity(
    def: &ResourceDef,
    ns: &str,
    name: &str,
    old: &Value,
    old_rv: &str,
    old_uid: &str,
    new: &mut Value,
) -> Result<Option<Value>, ApiStatus> {
    let Some(meta) = meta_mut(new) else {
        return Err(error::bad_request("metadata: expected an object"));
    };
    let sent_managed = meta.remove("managedFields");
    match meta.get("name").and_then(Value::as_str) {
        Some(n) if !n.is_empty() && n != name => {
            return Err(error::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({name})"
            )));
        }
        _ => {
            meta.insert("name".into(), json!(name));
        }
    }
    if def.namespaced {
        match meta.get("namespace").and_then(Value::as_str) {
            Some(n) if !n.is_empty() && n != ns => {
                return Err(error::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            _ => {
                meta.insert("namespace".into(), json!(ns));
            }
        }
    } else {
        meta.remove("namespace");
    }
    match meta.get("resourceVersion").and_then(Value::as_str) {
        Some(rv) if !rv.is_empty() && rv != old_rv => {
            return Err(error::conflict(
                &def.plural,
                &def.group,
                name,
                error::MODIFIED_CONFLICT,
            ));
        }
        _ => {}
    }
    match meta.get("uid").and_then(Value::as_str) {
        Some(uid) if !uid.is_empty() && uid != old_uid => {
            return Err(error::conflict(
                &def.plural,
                &def.group,
                name,
                &format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {old_uid}"
                ),
            ));
        }
        _ => {}
    }
    let old_meta = old.get("metadata").and_then(Value::as_object);
    for k in [
        "uid",
        "creationTimestamp",
        "generation",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    ] {
        match old_meta.and_then(|m| m.get(k)) {
            Some(v) => {
                meta.insert(k.into(), v.clone());
            }
            None => {
                meta.remove(k);
            }
        }
    }
    meta.remove("selfLink");
    meta.insert("resourceVersion".into(), json!(old_rv));
    Ok(sent_managed)
}

/// A write to the main resource or scale keeps the stored status; a write to the
/// status subresource changes nothing else.
fn keep_status(def: &ResourceDef, sub: Sub, old: &Value, new: &mut Value) {
    match sub {
        Sub::Main | Sub::Scale => {
            if def.status
                && let Some(m) = new.as_object_mut()
            {
                match old.get("status") {
                    Some(s) => m.insert("status".into(), s.clone()),
                    None => m.remove("status"),
                };
            }
        }
        Sub::Status => {
            let status = new.get("status").cloned();
            *new = old.clone();
            if let Some(m) = new.as_object_mut() {
                match status {
                    Some(s) => m.insert("status".into(), s),
                    None => m.remove("status"),
                };
            }
        }
    }
}

/// A replacement ready to be stored.
struct Replaced {
    new: Value,
    mf: ManagedFields,
    /// The Service before the write, whose allocations the new one may no longer hold.
    old_service: Option<Value>,
    /// What a replaced CustomResourceDefinition now serves.
    crd_def: Option<ResourceDef>,
}

/// The managedFields after an `Update` by `ctx.manager` that changed and removed
/// these fields. kube-apiserver tracks a write through the scale subresource only when
/// someone already owned `spec.replicas` (the Scale's own managedFields are derived from
/// that owner); a replica count nobody declared stays unowned (docs/simulator.md).
fn record_update(
    mut mf: ManagedFields,
    sub: Sub,
    ctx: &WriteCtx,
    api_version: &str,
    changed: &FieldSet,
    removed: &FieldSet,
) -> ManagedFields {
    if sub != Sub::Scale || mf.anyone_owns(&["f:spec", "f:replicas"]) {
        mf.record_update(
            &ctx.manager,
            sub.name(),
            api_version,
            &ctx.now,
            changed,
            removed,
        );
    }
    mf
}

/// `metadata.generation` goes up by one when anything outside metadata and status
/// changed.
fn bump_generation(def: &ResourceDef, old: &Value, new: &mut Value) {
    if def.has_generation() && spec_changed(old, new) {
        let generation = jsonx::get(old, "/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(0)
            + 1;
        if let Some(meta) = meta_mut(new) {
            meta.insert("generation".into(), json!(generation));
        }
    }
}

impl Store {
    /// Creates an object. `version` is the API version of the request;
    /// `path_ns` the namespace of the request path, if any.
    pub(crate) fn create(
        &mut self,
        def: &Arc<ResourceDef>,
        version: &str,
        path_ns: Option<&str>,
        obj: Value,
        ctx: &WriteCtx,
    ) -> Result<Written, ApiStatus> {
        self.create_owned(def, version, path_ns, obj, ctx, Owner::Update)
    }

    /// [`Store::create`] with the managedFields of `owner`.
    pub(crate) fn create_owned(
        &mut self,
        def: &Arc<ResourceDef>,
        version: &str,
        path_ns: Option<&str>,
        mut obj: Value,
        ctx: &WriteCtx,
        owner: Owner,
    ) -> Result<Written, ApiStatus> {
        check_type(def, version, &mut obj)?;
        let ns = self.create_namespace(def, path_ns, &obj)?;
        let name = self.create_name(def, &ns, &obj)?;
        let mut causes = validate::name(def, &name);
        causes.extend(validate::labels(&obj));
        invalid(def, &name, causes)?;
        stamp_new(def, &mut obj, &ns, &name, ctx);
        let crd_def = if is_crd(def) {
            Some(self.new_crd(def, &name, &obj)?)
        } else {
            None
        };
        let mut scratch = None;
        let alloc = self.allocator(ctx, &mut scratch);
        // What a Service asked for, to tell its allocations from its own fields.
        let sent = (matches!(owner, Owner::Update) && def.builtin && def.kind == "Service")
            .then(|| obj.clone());
        defaults::apply(def, &mut obj, None, alloc)
            .map_err(|c| error::invalid(&def.kind, &def.group, &name, &c))?;
        let api_version = text(&obj, "/apiVersion").to_string();
        let mut mf = match owner {
            Owner::Apply(mf) => mf,
            Owner::Update => {
                let mut owned = managed::fields_of_object(&obj, def.builtin);
                let sent = sent.as_ref().unwrap_or(&Value::Null);
                owned.remove_paths(&defaults::allocated(def, sent, &obj));
                let mut mf = ManagedFields::default();
                let none = FieldSet::default();
                mf.record_update(&ctx.manager, None, &api_version, &ctx.now, &owned, &none);
                mf
            }
        };
        if let Some((ctrl, c, r)) = run_controllers(def, &mut obj, &ctx.now, alloc) {
            mf.record_update(ctrl, Some("status"), &api_version, &ctx.now, &c, &r);
        }
        if ctx.dry_run {
            return Ok(dry_run_result(obj, mf));
        }
        let version = self.commit(def, EventType::Added, obj, mf);
        let value = match self.get(def, &ns, &name) {
            Some(c) if ctx.want_value => c.full_value(),
            _ => Value::Null,
        };
        if is_namespace(def) {
            self.populate_namespace(&name, &ctx.now);
        }
        if let Some(d) = crd_def {
            self.serve_crd(d);
        }
        Ok(Written {
            bytes: version.bytes.clone(),
            value,
        })
    }

    /// The namespace a new object goes to: the request path's, which the body may
    /// repeat but not contradict, else the body's, else `default`; it must exist.
    fn create_namespace(
        &self,
        def: &ResourceDef,
        path_ns: Option<&str>,
        obj: &Value,
    ) -> Result<String, ApiStatus> {
        if !def.namespaced {
            return Ok(String::new());
        }
        let body_ns = text(obj, "/metadata/namespace");
        let ns = match (path_ns, body_ns) {
            (Some(p), b) if !b.is_empty() && p != b => {
                return Err(error::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            (Some(p), _) => p.to_string(),
            (None, b) if !b.is_empty() => b.to_string(),
            (None, _) => "default".to_string(),
        };
        if !self.namespace_exists(&ns) {
            return Err(error::not_found("namespaces", "", &ns));
        }
        Ok(ns)
    }

    /// The name of a new object: its own, or `generateName` plus a free random suffix;
    /// it must not be taken, and the body must not carry a resourceVersion.
    fn create_name(&self, def: &ResourceDef, ns: &str, obj: &Value) -> Result<String, ApiStatus> {
        let mut name = text(obj, "/metadata/name").to_string();
        let prefix = text(obj, "/metadata/generateName");
        if name.is_empty() && !prefix.is_empty() {
            // A handful of tries; a collision of five random characters is rare.
            name = (0..16)
                .map(|_| format!("{prefix}{}", ids::generate_name_suffix()))
                .find(|candidate| self.get(def, ns, candidate).is_none())
                .unwrap_or_default();
        }
        if name.is_empty() {
            return Err(error::invalid(
                &def.kind,
                &def.group,
                "",
                &[(
                    "metadata.name".into(),
                    "Required value: name or generateName is required".into(),
                )],
            ));
        }
        if self.get(def, ns, &name).is_some() {
            return Err(error::already_exists(&def.plural, &def.group, &name));
        }
        if !text(obj, "/metadata/resourceVersion").is_empty() {
            return Err(error::internal(
                "resourceVersion should not be set on objects to be created",
            ));
        }
        Ok(name)
    }

    /// The resource a new CustomResourceDefinition serves; built-in groups are refused.
    fn new_crd(
        &self,
        def: &ResourceDef,
        name: &str,
        obj: &Value,
    ) -> Result<ResourceDef, ApiStatus> {
        let d = catalog::def_from_crd(obj)?;
        if self
            .catalog
            .by_resource(&d.group, &d.plural)
            .is_some_and(|x| x.builtin)
        {
            return Err(error::invalid(
                &def.kind,
                &def.group,
                name,
                &[(
                    "spec.group".into(),
                    format!(
                        "Invalid value: \"{}\": is reserved for built-in types",
                        d.group
                    ),
                )],
            ));
        }
        Ok(d)
    }

    /// The allocator a write uses: a scratch copy under dry run, so that nothing it
    /// hands out is taken for real.
    fn allocator<'a>(
        &'a mut self,
        ctx: &WriteCtx,
        scratch: &'a mut Option<Allocator>,
    ) -> &'a mut Allocator {
        if ctx.dry_run {
            scratch.insert(self.alloc.clone())
        } else {
            &mut self.alloc
        }
    }

    /// Replaces an object with what `make` builds from the stored one (PUT,
    /// patches, status and scale writes).
    pub(crate) fn replace(
        &mut self,
        def: &Arc<ResourceDef>,
        ns: &str,
        name: &str,
        sub: Sub,
        ctx: &WriteCtx,
        make: &mut dyn FnMut(&Value) -> Result<Value, ApiStatus>,
    ) -> Result<Written, ApiStatus> {
        self.replace_owned(def, ns, name, sub, ctx, make, Owner::Update)
    }

    /// [`Store::replace`] with the managedFields of `owner`.
    ///
    /// Long on purpose: the server's update steps in its order (preconditions,
    /// identity, status, validation, defaults, generation, controllers, managedFields,
    /// no-op detection, finalizers); each step is a function, and the order is the logic.
    #[expect(
        clippy::too_many_arguments,
        reason = "replace's arguments plus who owns the result"
    )]
    pub(crate) fn replace_owned(
        &mut self,
        def: &Arc<ResourceDef>,
        ns: &str,
        name: &str,
        sub: Sub,
        ctx: &WriteCtx,
        make: &mut dyn FnMut(&Value) -> Result<Value, ApiStatus>,
        owner: Owner,
    ) -> Result<Written, ApiStatus> {
        let Some(cur) = self
            .resources
            .get(&def.instance)
            .and_then(|rs| rs.objects.get(ns))
            .and_then(|m| m.get(name))
        else {
            return Err(error::not_found(&def.plural, &def.group, name));
        };
        let old = &cur.value;
        let old_rv = cur.version.rv.to_string();
        let old_uid = cur.version.uid.clone();
        let mut new = if ctx.with_managed {
            make(&cur.full_value())?
        } else {
            make(old)?
        };
        let version = def
            .version_of(text(old, "/apiVersion"))
            .unwrap_or(def.preferred_version())
            .to_string();
        check_type(def, &version, &mut new)?;
        let sent_managed = carry_identity(def, ns, name, old, &old_rv, &old_uid, &mut new)?;
        keep_status(def, sub, old, &mut new);
        invalid(def, name, validate::labels(&new))?;
        let crd_def = if is_crd(def) {
            Some(catalog::def_from_crd(&new)?)
        } else {
            None
        };
        let mut scratch_alloc = if ctx.dry_run {
            Some(self.alloc.clone())
        } else {
            None
        };
        let alloc = scratch_alloc.as_mut().unwrap_or(&mut self.alloc);
        defaults::apply(def, &mut new, Some(old), alloc)
            .map_err(|c| error::invalid(&def.kind, &def.group, name, &c))?;
        bump_generation(def, old, &mut new);
        let (changed, removed) = managed::diff_object(old, &new, def.builtin);
        let controller = if sub == Sub::Status {
            None
        } else {
            run_controllers(def, &mut new, &ctx.now, alloc)
        };
        let base = client_managed(sent_managed.as_ref(), cur.managed.json());
        let unchanged = match &owner {
            Owner::Update => {
                base.is_none()
                    && changed.is_empty()
                    && removed.is_empty()
                    && controller.is_none()
                    && new == *old
            }
            Owner::Apply(mf) => controller.is_none() && new == *old && *mf == cur.managed,
        };
        let object_changed = new != *old;
        if unchanged {
            // A no-op write: nothing is stored, the resourceVersion stays.
            return Ok(Written {
                bytes: cur.version.bytes.clone(),
                value: if ctx.want_value {
                    cur.full_value()
                } else {
                    Value::Null
                },
            });
        }
        let finalize = jsonx::get(&new, "/metadata/deletionTimestamp").is_some()
            && jsonx::get(&new, "/metadata/finalizers")
                .and_then(Value::as_array)
                .is_none_or(Vec::is_empty);
        let old_service = (def.builtin && def.kind == "Service").then(|| old.clone());
        let api_version = text(&new, "/apiVersion").to_string();
        let mut mf = match owner {
            Owner::Apply(mut mf) => {
                if object_changed {
                    mf.touch_apply(&ctx.manager, &ctx.now);
                }
                mf
            }
            Owner::Update => {
                let mf = match base {
                    Some(b) => b,
                    None if ctx.dry_run => cur.managed.clone(),
                    None => self
                        .resources
                        .get_mut(&def.instance)
                        .and_then(|rs| rs.objects.get_mut(ns))
                        .and_then(|m| m.get_mut(name))
                        .map(|c| std::mem::take(&mut c.managed))
                        .unwrap_or_default(),
                };
                record_update(mf, sub, ctx, &api_version, &changed, &removed)
            }
        };
        if let Some((ctrl, c, r)) = controller {
            mf.record_update(ctrl, Some("status"), &api_version, &ctx.now, &c, &r);
        }
        if ctx.dry_run {
            return Ok(dry_run_result(new, mf));
        }
        if finalize {
            return Ok(self.finish_delete(def, ns, name, Some((new, mf))));
        }
        let replaced = Replaced {
            new,
            mf,
            old_service,
            crd_def,
        };
        Ok(self.store_replaced(def, ns, name, replaced, ctx))
    }

    /// Stores a replaced object, gives back what its Service no longer holds, and
    /// serves what a CustomResourceDefinition defines.
    fn store_replaced(
        &mut self,
        def: &Arc<ResourceDef>,
        ns: &str,
        name: &str,
        replaced: Replaced,
        ctx: &WriteCtx,
    ) -> Written {
        let Replaced {
            new,
            mf,
            old_service,
            crd_def,
        } = replaced;
        let version = self.commit(def, EventType::Modified, new, mf);
        let stored = self
            .resources
            .get(&def.instance)
            .and_then(|rs| rs.objects.get(ns))
            .and_then(|m| m.get(name));
        if let (Some(o), Some(c)) = (&old_service, stored) {
            self.alloc.release_unused(def, o, &c.value);
        }
        let value = match stored {
            Some(c) if ctx.want_value => c.full_value(),
            _ => Value::Null,
        };
        if let Some(d) = crd_def {
            self.serve_crd(d);
        }
        Written {
            bytes: version.bytes.clone(),
            value,
        }
    }

    /// Deletes an object (or marks it, when finalizers are pending).
    pub(crate) fn delete(
        &mut self,
        def: &Arc<ResourceDef>,
        ns: &str,
        name: &str,
        pre: &Preconditions,
        ctx: &WriteCtx,
    ) -> Result<Deleted, ApiStatus> {
        let Some(cur) = self.get(def, ns, name) else {
            return Err(error::not_found(&def.plural, &def.group, name));
        };
        if let Some(uid) = pre.uid.as_deref()
            && uid != &*cur.version.uid
        {
            return Err(error::conflict(
                &def.plural,
                &def.group,
                name,
                &format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    cur.version.uid
                ),
            ));
        }
        if let Some(rv) = pre.resource_version.as_deref()
            && rv != cur.version.rv.to_string()
        {
            return Err(error::conflict(
                &def.plural,
                &def.group,
                name,
                &format!(
                    "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                    cur.version.rv
                ),
            ));
        }
        let has_finalizers = jsonx::get(&cur.value, "/metadata/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty());
        let current = Written {
            bytes: cur.version.bytes.clone(),
            value: cur.full_value(),
        };
        if has_finalizers {
            if jsonx::get(&cur.value, "/metadata/deletionTimestamp").is_some() || ctx.dry_run {
                return Ok(Deleted::Pending(current));
            }
            let mut marked = cur.value.clone();
            if let Some(meta) = meta_mut(&mut marked) {
                meta.insert("deletionTimestamp".into(), json!(ctx.now));
                meta.insert("deletionGracePeriodSeconds".into(), json!(0));
            }
            let mf = cur.managed.clone();
            let version = self.commit(def, EventType::Modified, marked, mf);
            let value = self
                .get(def, ns, name)
                .map(Current::full_value)
                .unwrap_or(Value::Null);
            return Ok(Deleted::Pending(Written {
                bytes: version.bytes.clone(),
                value,
            }));
        }
        if ctx.dry_run {
            return Ok(Deleted::Gone(current));
        }
        if is_namespace(def) {
            self.terminate_namespace(name, &ctx.now);
        }
        if is_crd(def) {
            self.retire_crd(&current.value);
        }
        Ok(Deleted::Gone(self.finish_delete(def, ns, name, None)))
    }

    /// Removes an object for good: a DELETED event with the final object
    /// (`last`, else the stored one) at a new resourceVersion.
    pub(crate) fn finish_delete(
        &mut self,
        def: &Arc<ResourceDef>,
        ns: &str,
        name: &str,
        last: Option<(Value, ManagedFields)>,
    ) -> Written {
        let (value, managed) = match last {
            Some(v) => v,
            None => self
                .resources
                .get_mut(&def.instance)
                .and_then(|rs| rs.objects.get_mut(ns))
                .and_then(|m| m.get_mut(name))
                .map(|c| (std::mem::take(&mut c.value), std::mem::take(&mut c.managed)))
                .unwrap_or_default(),
        };
        self.alloc.release(def, &value);
        let keep = (value.clone(), managed.clone());
        let version = self.commit(def, EventType::Deleted, value, managed);
        let (mut value, mut managed) = keep;
        if let Some(meta) = meta_mut(&mut value) {
            meta.insert("resourceVersion".into(), json!(version.rv.to_string()));
        }
        managed.sync();
        Written {
            bytes: version.bytes.clone(),
            value: with_managed(value, &managed),
        }
    }
}

/// The answer to a dry run: the object as it would be stored.
fn dry_run_result(mut obj: Value, mut mf: ManagedFields) -> Written {
    let bytes = render(&mut obj, &mut mf, 1024);
    Written {
        bytes,
        value: with_managed(obj, &mf),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_tracks_spec_only() {
        let a = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"x": 1}, "status": {"y": 1}});
        let mut b = a.clone();
        b["metadata"]["labels"]["a"] = json!("2");
        b["status"]["y"] = json!(2);
        assert!(!spec_changed(&a, &b));
        b["spec"]["x"] = json!(2);
        assert!(spec_changed(&a, &b));
        let mut c = a.clone();
        c["data"] = json!({"k": "v"});
        assert!(spec_changed(&a, &c));
    }

    #[test]
    fn client_managed_fields_rules() {
        let stored = json!([{"manager": "a", "operation": "Update", "fieldsV1": {"f:data": {}}}]);
        let list = stored.as_array().unwrap().clone();
        assert!(client_managed(None, &list).is_none());
        assert!(client_managed(Some(&json!([])), &list).is_none());
        assert!(client_managed(Some(&stored), &list).is_none());
        assert_eq!(
            client_managed(Some(&json!([{}])), &list),
            Some(ManagedFields::default())
        );
        let other = json!([{"manager": "b", "operation": "Update", "fieldsV1": {"f:data": {}}}]);
        assert_eq!(
            client_managed(Some(&other), &list).unwrap().entries[0].manager,
            "b"
        );
    }
}
