//! Requests on resources: get, list (paged, every page from the same
//! snapshot), watch, create, update, patch, delete and deletecollection, and
//! the status and scale subresources.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Response};
use serde_json::{Map, Value, json};

use super::apply::{self, FieldValidation};
use super::body::SimBody;
use super::catalog::ResourceDef;
use super::error::{self, ApiStatus};
use super::negotiate::{self, BodyType, Output, PatchType};
use super::paging::{self, Continue};
use super::patch;
use super::query::{Query, ResourcePath};
use super::respond;
use super::scale;
use super::shared::{Shared, USER, lock};
use super::store::Store;
use super::table::{self, IncludeObject};
use super::watch::{self, Filter, Start, WatchOpts};
use super::write::{Deleted, Preconditions, Sub, WriteCtx};
use krply_apimachinery::selector::{FieldSelector, LabelSelector};

/// How long a list waits for a resourceVersion newer than the store's.
const TOO_LARGE_WAIT: Duration = Duration::from_secs(3);
/// The server-side watch timeout when the client sets none.
const DEFAULT_WATCH_TIMEOUT: Duration = Duration::from_secs(1800);

/// One resource request.
pub(crate) struct Req<'a> {
    pub method: &'a Method,
    pub path: &'a ResourcePath,
    pub query: &'a Query,
    pub accept: Option<&'a str>,
    pub content_type: Option<&'a str>,
    pub user_agent: Option<&'a str>,
    pub body: Bytes,
}

pub(crate) async fn handle(shared: &Arc<Shared>, r: Req<'_>) -> Response<SimBody> {
    match dispatch(shared, &r).await {
        Ok(resp) => resp,
        Err(s) => respond::status(&s),
    }
}

fn bad(e: String) -> ApiStatus {
    error::bad_request(e)
}

/// The field manager of a write: `fieldManager`, else the User-Agent's
/// product token (`kubectl/v1.33.0 (...)` -> `kubectl`).
pub(crate) fn manager(query: &Query, user_agent: Option<&str>) -> Result<String, ApiStatus> {
    if let Some(m) = query.get("fieldManager").filter(|m| !m.is_empty()) {
        if m.len() > 128 {
            return Err(error::invalid(
                "PatchOptions",
                "meta.k8s.io",
                "",
                &[(
                    "fieldManager".into(),
                    "Too long: may not be longer than 128 characters".into(),
                )],
            ));
        }
        return Ok(m.to_string());
    }
    Ok(user_agent
        .and_then(|ua| ua.split('/').next())
        .unwrap_or_default()
        .to_string())
}

fn write_ctx(r: &Req<'_>) -> Result<WriteCtx, ApiStatus> {
    let mut ctx = WriteCtx::new(&manager(r.query, r.user_agent)?);
    ctx.dry_run = match r.query.get("dryRun") {
        None | Some("") => false,
        Some("All") => true,
        Some(other) => {
            return Err(bad(format!(
                "dryRun: Unsupported value: \"{other}\": supported values: \"All\""
            )));
        }
    };
    Ok(ctx)
}

fn check_forbidden(
    shared: &Shared,
    def: &ResourceDef,
    verb: &str,
    namespace: Option<&str>,
    name: Option<&str>,
) -> Result<(), ApiStatus> {
    let scope = if def.namespaced { namespace } else { None };
    let denied = match verb {
        "get" | "list" | "watch" => shared.is_forbidden(&def.plural, scope),
        _ => shared.is_write_forbidden(&def.plural, scope),
    };
    if denied {
        return Err(error::forbidden(
            USER,
            verb,
            &def.plural,
            &def.group,
            scope,
            name,
        ));
    }
    Ok(())
}

fn parse_rv(s: &str) -> Result<u64, ApiStatus> {
    s.parse::<u64>().map_err(|_| {
        bad(format!(
            "resourceVersion: Invalid value: \"{s}\": strconv.ParseUint: parsing \"{s}\": invalid syntax"
        ))
    })
}

fn parse_json(body: &[u8]) -> Result<Value, ApiStatus> {
    serde_json::from_slice(body)
        .map_err(|e| bad(format!("couldn't get version/kind; json parse error: {e}")))
}

async fn dispatch(shared: &Arc<Shared>, r: &Req<'_>) -> Result<Response<SimBody>, ApiStatus> {
    let p = r.path;
    let def = lock(&shared.store)
        .catalog
        .by_gvr(&p.group, &p.version, &p.plural)
        .cloned()
        .ok_or_else(error::path_not_found)?;
    if (p.namespace.is_some() && !def.namespaced)
        || (p.name.is_some() && def.namespaced && p.namespace.is_none())
    {
        return Err(error::path_not_found());
    }
    if let Some(sub) = &p.sub
        && !def.subresources().contains(&sub.as_str())
    {
        return Err(error::path_not_found());
    }
    let output =
        negotiate::output(r.accept).ok_or_else(|| error::not_acceptable(negotiate::SERVED))?;
    let include = IncludeObject::parse(r.query.get("includeObject")).map_err(bad)?;
    let filter = Filter {
        def: def.clone(),
        api_version: def.api_version(&p.version),
        namespace: p.namespace.clone(),
        labels: LabelSelector::parse(r.query.get("labelSelector").unwrap_or_default())
            .map_err(bad)?,
        fields: FieldSelector::parse(r.query.get("fieldSelector").unwrap_or_default(), &|f| {
            def.supports_field(f)
        })
        .map_err(bad)?,
        output,
        include,
    };
    let ns_key = p.namespace.clone().unwrap_or_default();
    let write_verb = match (r.method, p.name.as_deref()) {
        (&Method::POST, _) => Some("create"),
        (&Method::PUT, _) => Some("update"),
        (&Method::PATCH, _) => Some("patch"),
        (&Method::DELETE, Some(_)) => Some("delete"),
        (&Method::DELETE, None) => Some("deletecollection"),
        _ => None,
    };
    if let Some(verb) = write_verb {
        check_forbidden(
            shared,
            &def,
            verb,
            p.namespace.as_deref(),
            p.name.as_deref(),
        )?;
    }
    match (r.method, p.name.as_deref(), p.sub.as_deref()) {
        (&Method::GET, None, None) => {
            if r.query.flag("watch").map_err(bad)? {
                check_forbidden(shared, &def, "watch", p.namespace.as_deref(), None)?;
                start_watch(shared, filter, r.query)
            } else {
                check_forbidden(shared, &def, "list", p.namespace.as_deref(), None)?;
                list(shared, &filter, r.query).await
            }
        }
        (&Method::GET, Some(name), sub) => {
            check_forbidden(shared, &def, "get", p.namespace.as_deref(), Some(name))?;
            let store = lock(&shared.store);
            let cur = store
                .get(&def, &ns_key, name)
                .ok_or_else(|| error::not_found(&def.plural, &def.group, name))?;
            if sub == Some("scale") {
                return Ok(respond::json(200, &scale::scale_of(&cur.value)));
            }
            let mut out = Vec::new();
            filter.write_object(&cur.version, &mut out);
            Ok(respond::json_bytes(200, out))
        }
        (&Method::POST, None, None) if def.namespaced == p.namespace.is_some() => {
            if negotiate::body_type(r.content_type) != BodyType::Json {
                return Err(error::unsupported_media_type(&["application/json"]));
            }
            let obj = parse_json(&r.body)?;
            let ctx = write_ctx(r)?;
            let w =
                lock(&shared.store).create(&def, &p.version, p.namespace.as_deref(), obj, &ctx)?;
            Ok(respond::json_bytes(201, w.bytes))
        }
        (&Method::PUT, Some(name), sub) => {
            if negotiate::body_type(r.content_type) != BodyType::Json {
                return Err(error::unsupported_media_type(&["application/json"]));
            }
            let body = parse_json(&r.body)?;
            let mut ctx = write_ctx(r)?;
            let mut store = lock(&shared.store);
            if sub == Some("scale") {
                let (replicas, rv) = scale::requested(&body, name)?;
                ctx.want_value = true;
                let w = store.replace(&def, &ns_key, name, Sub::Scale, &ctx, &mut |old| {
                    set_replicas(&def, name, old, replicas, rv.as_deref())
                })?;
                return Ok(respond::json(200, &scale::scale_of(&w.value)));
            }
            let target = if sub == Some("status") {
                Sub::Status
            } else {
                Sub::Main
            };
            let w = store.replace(&def, &ns_key, name, target, &ctx, &mut |_| Ok(body.clone()))?;
            Ok(respond::json_bytes(200, w.bytes))
        }
        (&Method::PATCH, Some(name), sub) => patch_object(shared, r, &def, &ns_key, name, sub),
        (&Method::DELETE, Some(name), None) => delete_object(shared, r, &def, &ns_key, name),
        (&Method::DELETE, None, None) => delete_collection(shared, r, &filter),
        (m, _, _) => Err(error::method_not_allowed(m.as_str())),
    }
}

fn set_replicas(
    def: &ResourceDef,
    name: &str,
    old: &Value,
    replicas: i64,
    precondition: Option<&str>,
) -> Result<Value, ApiStatus> {
    let current = old
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if let Some(rv) = precondition
        && rv != current
    {
        return Err(error::conflict(
            &def.plural,
            &def.group,
            name,
            error::MODIFIED_CONFLICT,
        ));
    }
    let mut n = old.clone();
    if let Some(spec) = n.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert("replicas".into(), json!(replicas));
    } else if let Some(m) = n.as_object_mut() {
        m.insert("spec".into(), json!({"replicas": replicas}));
    }
    Ok(n)
}

/// Applies a patch of type `pt` to `target`.
fn apply_patch(pt: PatchType, target: &Value, patch: &Value) -> Result<Value, ApiStatus> {
    let unprocessable = |m: String| ApiStatus::new(422, "Invalid", m);
    match pt {
        PatchType::Merge => {
            let mut t = target.clone();
            patch::merge_patch(&mut t, patch);
            Ok(t)
        }
        PatchType::Json => patch::json_patch(target, patch).map_err(unprocessable),
        PatchType::Strategic => {
            let mut t = target.clone();
            patch::strategic_merge(&mut t, patch).map_err(unprocessable)?;
            Ok(t)
        }
        PatchType::Apply | PatchType::Unsupported => {
            Err(error::unsupported_media_type(PATCH_TYPES))
        }
    }
}

const PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
];

fn patch_object(
    shared: &Arc<Shared>,
    r: &Req<'_>,
    def: &Arc<ResourceDef>,
    ns: &str,
    name: &str,
    sub: Option<&str>,
) -> Result<Response<SimBody>, ApiStatus> {
    let pt = negotiate::patch_type(r.content_type);
    match pt {
        PatchType::Apply => return apply_object(shared, r, def, ns, name, sub),
        PatchType::Unsupported => return Err(error::unsupported_media_type(PATCH_TYPES)),
        PatchType::Strategic if !def.builtin => {
            return Err(error::unsupported_media_type(&[
                "application/json-patch+json",
                "application/merge-patch+json",
            ]));
        }
        _ => {}
    }
    if r.query.get("force").is_some() {
        return Err(patch_options_invalid(vec![(
            "force".into(),
            "Forbidden: may not be specified for non-apply patch".into(),
        )]));
    }
    let body = if pt == PatchType::Json {
        serde_json::from_slice::<Value>(&r.body)
            .map_err(|e| bad(format!("json: cannot unmarshal patch: {e}")))?
    } else {
        serde_json::from_slice::<Value>(&r.body)
            .map_err(|e| bad(format!("error decoding patch: {e}")))?
    };
    let mut ctx = write_ctx(r)?;
    ctx.with_managed = touches_managed_fields(pt, &body);
    let mut store = lock(&shared.store);
    if sub == Some("scale") {
        ctx.want_value = true;
        let w = store.replace(def, ns, name, Sub::Scale, &ctx, &mut |old| {
            let patched = apply_patch(pt, &scale::scale_of(old), &body)?;
            let (replicas, rv) = scale::requested(&patched, name)?;
            set_replicas(def, name, old, replicas, rv.as_deref())
        })?;
        return Ok(respond::json(200, &scale::scale_of(&w.value)));
    }
    let target = if sub == Some("status") {
        Sub::Status
    } else {
        Sub::Main
    };
    let w = store.replace(def, ns, name, target, &ctx, &mut |old| {
        apply_patch(pt, old, &body)
    })?;
    Ok(respond::json_bytes(200, w.bytes))
}

fn patch_options_invalid(causes: Vec<(String, String)>) -> ApiStatus {
    error::invalid("PatchOptions", "meta.k8s.io", "", &causes)
}

/// Server-side apply (`application/apply-patch+yaml`): 201 when it created
/// the object, else 200.
fn apply_object(
    shared: &Arc<Shared>,
    r: &Req<'_>,
    def: &Arc<ResourceDef>,
    ns: &str,
    name: &str,
    sub: Option<&str>,
) -> Result<Response<SimBody>, ApiStatus> {
    let mut causes = Vec::new();
    let manager = r.query.get("fieldManager").unwrap_or_default();
    if manager.is_empty() {
        causes.push((
            "fieldManager".to_string(),
            "Required value: is required for apply patch".to_string(),
        ));
    }
    let validation = FieldValidation::parse(r.query.get("fieldValidation"))
        .map_err(|c| causes.push(c))
        .unwrap_or(FieldValidation::Warn);
    if !causes.is_empty() {
        return Err(patch_options_invalid(causes));
    }
    let force = r.query.flag("force").map_err(bad)?;
    let ctx = write_ctx(r)?;
    if let Some(sub) = sub {
        return Err(ApiStatus::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {} (the krply simulator serves server-side apply on the main resource, not on {sub})",
                PATCH_TYPES.join(", ")
            ),
        ));
    }
    let config = apply::decode_body(&r.body, validation)?;
    let (w, created) =
        lock(&shared.store).apply(def, &r.path.version, ns, name, config, &ctx, force)?;
    Ok(respond::json_bytes(
        if created { 201 } else { 200 },
        w.bytes,
    ))
}

/// Whether a patch reads or writes `metadata.managedFields` (it then
/// applies to the object with them).
fn touches_managed_fields(pt: PatchType, patch: &Value) -> bool {
    match pt {
        PatchType::Json => patch.as_array().is_some_and(|ops| {
            ops.iter().any(|op| {
                ["path", "from"].iter().any(|k| {
                    op.get(*k)
                        .and_then(Value::as_str)
                        .is_some_and(|p| p.starts_with("/metadata/managedFields"))
                })
            })
        }),
        _ => patch.pointer("/metadata/managedFields").is_some(),
    }
}

fn delete_object(
    shared: &Arc<Shared>,
    r: &Req<'_>,
    def: &Arc<ResourceDef>,
    ns: &str,
    name: &str,
) -> Result<Response<SimBody>, ApiStatus> {
    let opts = if r.body.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        parse_json(&r.body)?
    };
    let text = |p: &str| {
        opts.pointer(p)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let pre = Preconditions {
        uid: text("/preconditions/uid"),
        resource_version: text("/preconditions/resourceVersion"),
    };
    let mut ctx = write_ctx(r)?;
    if opts
        .get("dryRun")
        .and_then(Value::as_array)
        .is_some_and(|d| d.iter().any(|x| x == "All"))
    {
        ctx.dry_run = true;
    }
    let outcome = lock(&shared.store).delete(def, ns, name, &pre, &ctx)?;
    Ok(match outcome {
        Deleted::Gone(w)
            if def.builtin
                && !matches!(
                    def.plural.as_str(),
                    "namespaces" | "customresourcedefinitions"
                ) =>
        {
            let mut details = Map::new();
            details.insert("name".into(), json!(name));
            if !def.group.is_empty() {
                details.insert("group".into(), json!(def.group));
            }
            details.insert("kind".into(), json!(def.plural));
            if let Some(uid) = w.value.pointer("/metadata/uid") {
                details.insert("uid".into(), uid.clone());
            }
            respond::json(
                200,
                &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}),
            )
        }
        Deleted::Gone(w) | Deleted::Pending(w) => respond::json_bytes(200, w.bytes),
    })
}

fn delete_collection(
    shared: &Arc<Shared>,
    r: &Req<'_>,
    filter: &Filter,
) -> Result<Response<SimBody>, ApiStatus> {
    let def = &filter.def;
    if def.namespaced && filter.namespace.is_none() {
        return Err(error::method_not_allowed("DELETE"));
    }
    let ctx = write_ctx(r)?;
    let mut store = lock(&shared.store);
    let victims: Vec<(String, String)> = store
        .snapshot(def, filter.namespace.as_deref(), None)
        .unwrap_or_default()
        .into_iter()
        .filter(|v| filter.matches(v))
        .map(|v| (v.namespace.to_string(), v.name.to_string()))
        .collect();
    let mut items = Vec::new();
    for (ns, name) in victims {
        if let Ok(Deleted::Gone(w) | Deleted::Pending(w)) =
            store.delete(def, &ns, &name, &Preconditions::default(), &ctx)
        {
            items.push(w.bytes);
        }
    }
    let rv = store.rv;
    drop(store);
    let mut out = format!(
        "{{\"kind\":{},\"apiVersion\":{},\"metadata\":{{\"resourceVersion\":\"{rv}\"}},\"items\":[",
        json!(def.list_kind),
        json!(filter.api_version)
    )
    .into_bytes();
    for (i, b) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b);
    }
    out.extend_from_slice(b"]}");
    Ok(respond::json_bytes(200, out))
}

fn start_watch(
    shared: &Arc<Shared>,
    filter: Filter,
    q: &Query,
) -> Result<Response<SimBody>, ApiStatus> {
    let send_initial = q.flag("sendInitialEvents").map_err(bad)?;
    let bookmarks = q.flag("allowWatchBookmarks").map_err(bad)?;
    if send_initial && !bookmarks {
        return Err(error::invalid(
            "ListOptions",
            "meta.k8s.io",
            "",
            &[(
                "allowWatchBookmarks".into(),
                "Required value: allowWatchBookmarks required when sendInitialEvents is set".into(),
            )],
        ));
    }
    let start = match q.get("resourceVersion").unwrap_or_default() {
        "" | "0" => Start::Initial {
            end_bookmark: send_initial,
        },
        _ if send_initial => Start::Initial { end_bookmark: true },
        rv => Start::From(parse_rv(rv)?),
    };
    let timeout = match q.get("timeoutSeconds").filter(|s| !s.is_empty()) {
        Some(s) => Duration::from_secs(
            s.parse::<u64>()
                .map_err(|_| bad(format!("timeoutSeconds: Invalid value: \"{s}\"")))?,
        ),
        None => DEFAULT_WATCH_TIMEOUT,
    };
    if matches!(start, Start::From(_))
        && let Some(canned) = take_canned(shared, &filter.def.plural)
    {
        return Ok(canned);
    }
    let started = watch::open(
        shared,
        filter,
        WatchOpts {
            start,
            bookmarks,
            timeout,
        },
    )?;
    Ok(respond::stream(SimBody::Stream {
        rx: started.rx,
        abort: Some(started.abort),
    }))
}

/// The canned lines for a watch of `plural`, if some are waiting: streamed from
/// memory as fast as the client reads them once their gate opens, then the watch
/// stays open, quiet, until
/// the client goes or the simulator stops. A source for benchmarks that is never
/// the bottleneck (it does no JSON work).
fn take_canned(shared: &Arc<Shared>, plural: &str) -> Option<Response<SimBody>> {
    let mut slot = lock(&shared.canned);
    if slot.as_ref().is_none_or(|c| c.plural != plural) {
        return None;
    }
    let canned = slot.take()?;
    drop(slot);
    let (tx, rx) = tokio::sync::mpsc::channel(8);
    let mut shutdown = shared.shutdown.clone();
    canned.taken.send_replace(true);
    let mut go = canned.go;
    tokio::spawn(async move {
        tokio::select! {
            _ = go.wait_for(|go| *go) => {}
            _ = tx.closed() => return,
            _ = shutdown.wait_for(|stop| *stop) => return,
        }
        for chunk in canned.chunks {
            if tx.send(chunk).await.is_err() {
                return;
            }
        }
        tokio::select! {
            _ = tx.closed() => {}
            _ = shutdown.wait_for(|stop| *stop) => {}
        }
    });
    Some(respond::stream(SimBody::Stream { rx, abort: None }))
}

/// Waits (up to 3 s, like the watch cache) until the store has reached `rv`.
async fn wait_for_rv(shared: &Shared, rv: u64) -> Result<(), ApiStatus> {
    let deadline = tokio::time::Instant::now() + TOO_LARGE_WAIT;
    // Bounded by the deadline.
    loop {
        let current = lock(&shared.store).rv;
        if current >= rv {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            let mut s = ApiStatus::new(
                504,
                "Timeout",
                format!("Too large resource version: {rv}, current: {current}"),
            )
            .with_details(json!({"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}], "retryAfterSeconds": 1}));
            s.retry_after_secs = Some(1);
            return Err(s);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A list request: `limit` and `continue` paging, `resourceVersion` and
/// `resourceVersionMatch` semantics, selectors, and table output.
///
/// Long on purpose: the query parameters are checked in kube-apiserver's order, so
/// that a request with several bad ones gets the same first error.
async fn list(
    shared: &Arc<Shared>,
    filter: &Filter,
    q: &Query,
) -> Result<Response<SimBody>, ApiStatus> {
    let def = &filter.def;
    if let Some(canned) = lock(&shared.canned_list)
        .as_ref()
        .filter(|c| c.plural == def.plural)
    {
        let limit = q
            .get("limit")
            .and_then(|s| s.parse::<usize>().ok())
            .filter(|n| *n > 0);
        let cont = q.get("continue").filter(|s| !s.is_empty());
        return canned
            .page(limit, cont)
            .map(|body| respond::json_bytes(200, body))
            .ok_or_else(|| bad("continue: not a token this list gave".into()));
    }
    let limit = match q.get("limit").filter(|s| !s.is_empty()) {
        Some(s) => {
            let n = s
                .parse::<i64>()
                .map_err(|_| bad(format!("limit: Invalid value: \"{s}\"")))?;
            (n > 0).then(|| {
                usize::try_from(n)
                    .unwrap_or(usize::MAX)
                    .min(shared.max_page_size)
            })
        }
        None => None,
    };
    let cont = match q.get("continue").filter(|s| !s.is_empty()) {
        Some(t) => Some(Continue::decode(t).map_err(bad)?),
        None => None,
    };
    let rv_param = q.get("resourceVersion").unwrap_or_default();
    let rvm = q.get("resourceVersionMatch").unwrap_or_default();
    if cont.is_some() && !rv_param.is_empty() && rv_param != "0" {
        return Err(bad(
            "specifying resource version is not allowed when using continue".into(),
        ));
    }
    if !matches!(rvm, "" | "NotOlderThan" | "Exact") {
        return Err(bad(format!(
            "resourceVersionMatch: Unsupported value: \"{rvm}\": supported values: \"Exact\", \"NotOlderThan\""
        )));
    }
    if !rvm.is_empty() && rv_param.is_empty() {
        return Err(bad(
            "resourceVersionMatch is forbidden unless resourceVersion is provided".into(),
        ));
    }
    if rvm == "Exact" && rv_param == "0" {
        return Err(bad(
            "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"".into(),
        ));
    }
    let requested = match rv_param {
        "" => None,
        s => Some(parse_rv(s)?),
    };
    if let Some(rv) = requested.filter(|r| *r > 0 && cont.is_none()) {
        wait_for_rv(shared, rv).await?;
    }
    let at = match (&cont, rvm) {
        (Some(c), _) => c.rv,
        (None, "Exact") => requested,
        _ => None,
    };
    let after = match &cont {
        Some(c) => Some(
            c.after
                .split_once('/')
                .map(|(ns, name)| (ns.to_string(), name.to_string()))
                .ok_or_else(|| bad("continue key is not valid: malformed start key".into()))?,
        ),
        None => None,
    };
    let (items, list_rv) = {
        let store = lock(&shared.store);
        let items = store
            .snapshot(def, filter.namespace.as_deref(), at)
            .map_err(|old| match &cont {
                Some(c) => error::continue_expired(
                    Continue {
                        rv: None,
                        after: c.after.clone(),
                    }
                    .encode(),
                ),
                None => error::too_old(old.requested, old.floor),
            })?;
        (items, at.unwrap_or(store.rv))
    };
    let page = Store::page(items, after.as_ref(), limit, &|v| filter.matches(v));
    let mut meta = Map::new();
    meta.insert("resourceVersion".into(), json!(list_rv.to_string()));
    if let Some((ns, name)) = &page.more_after {
        let token = Continue {
            rv: Some(list_rv),
            after: paging::object_key(ns, name),
        }
        .encode();
        meta.insert("continue".into(), json!(token));
        if filter.labels.is_empty() && filter.fields.is_empty() {
            meta.insert("remainingItemCount".into(), json!(page.remaining));
        }
    }
    let meta = Value::Object(meta);
    Ok(match filter.output {
        Output::Json => {
            let mut out = format!(
                "{{\"kind\":{},\"apiVersion\":{},\"metadata\":{},\"items\":[",
                json!(def.list_kind),
                json!(filter.api_version),
                meta
            )
            .into_bytes();
            for (i, v) in page.items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                if def.builtin || *v.api_version == *filter.api_version {
                    v.write_list_item(&mut out);
                } else {
                    filter.write_object(v, &mut out);
                }
            }
            out.extend_from_slice(b"]}");
            respond::json_bytes(200, out)
        }
        Output::Table => {
            let values: Vec<Value> = page.items.iter().map(|v| v.value()).collect();
            respond::json(200, &table::table(def, &values, filter.include, meta))
        }
        Output::PartialMetadata => {
            let items: Vec<Value> = page
                .items
                .iter()
                .map(|v| table::partial_metadata(&v.value()))
                .collect();
            respond::json(
                200,
                &json!({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1", "metadata": meta, "items": items}),
            )
        }
    })
}
