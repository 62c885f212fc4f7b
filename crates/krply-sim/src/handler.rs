//! The entry point of every HTTP request: request log, injected delay,
//! bearer-token authentication, injected failures, then routing to
//! discovery or resource handlers.

use std::sync::Arc;

use bytes::Bytes;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, USER_AGENT};
use http::{Method, Request, Response};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;

use super::RequestRecord;
use super::body::SimBody;
use super::discovery;
use super::error::{self, ApiStatus};
use super::query::{Query, Route};
use super::resource::{self, Req};
use super::respond;
use super::shared::{Shared, lock};

/// The largest request body accepted (as the real server's 3 MiB).
const MAX_BODY: usize = 3 * 1024 * 1024;

pub(crate) async fn handle(
    shared: Arc<Shared>,
    server_address: String,
    client_cert: bool,
    req: Request<Incoming>,
) -> Response<SimBody> {
    let header = |n| {
        req.headers()
            .get(n)
            .and_then(|v: &http::HeaderValue| v.to_str().ok())
            .map(str::to_string)
    };
    let user_agent = header(USER_AGENT);
    let accept = header(ACCEPT);
    let content_type = header(CONTENT_TYPE);
    let authorization = header(AUTHORIZATION);
    let method = req.method().clone();
    let path_and_query = req
        .uri()
        .path_and_query()
        .map(|p| p.to_string())
        .unwrap_or_else(|| req.uri().path().to_string());
    let resp = respond_to(
        &shared,
        &server_address,
        req,
        Headers {
            user_agent: user_agent.as_deref(),
            accept: accept.as_deref(),
            content_type: content_type.as_deref(),
            authorization: authorization.as_deref(),
            client_cert,
        },
    )
    .await;
    lock(&shared.requests).push(RequestRecord {
        method: method.to_string(),
        path_and_query,
        user_agent,
        accept,
        content_type,
        status: resp.status().as_u16(),
    });
    resp
}

struct Headers<'a> {
    user_agent: Option<&'a str>,
    accept: Option<&'a str>,
    content_type: Option<&'a str>,
    authorization: Option<&'a str>,
    /// The connection presented a client certificate signed by the CA.
    client_cert: bool,
}

/// The longest a held request waits ([`super::Simulator::hold_requests`]).
const HOLD_LIMIT: std::time::Duration = std::time::Duration::from_secs(20);

async fn respond_to(
    shared: &Arc<Shared>,
    server_address: &str,
    req: Request<Incoming>,
    h: Headers<'_>,
) -> Response<SimBody> {
    let delay = shared.delay();
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    // Held by a test until it releases them; never for longer than the limit.
    let mut held = shared.held.subscribe();
    if *held.borrow_and_update() {
        let _ = tokio::time::timeout(HOLD_LIMIT, held.wait_for(|h| !*h)).await;
    }
    if let Some(token) = &shared.token {
        let ok = h
            .authorization
            .and_then(|a| a.strip_prefix("Bearer "))
            .is_some_and(|t| same_secret(t.trim().as_bytes(), token.as_bytes()));
        if !ok && !h.client_cert {
            return respond::status(&error::unauthorized());
        }
    }
    if let Some((code, retry)) = shared.take_failure() {
        return respond::status(&error::injected(code, retry));
    }
    let route = match super::query::route(req.uri().path()) {
        Ok(r) => r,
        Err(e) => return respond::status(&error::bad_request(e)),
    };
    let query = match Query::parse(req.uri().query()) {
        Ok(q) => q,
        Err(e) => return respond::status(&error::bad_request(e)),
    };
    let method = req.method().clone();
    let discovery_only = |doc: Result<serde_json::Value, ApiStatus>| -> Response<SimBody> {
        if method != Method::GET {
            return respond::status(&error::method_not_allowed(method.as_str()));
        }
        match doc {
            Ok(v) => respond::json(200, &v),
            Err(s) => respond::status(&s),
        }
    };
    match route {
        Route::Version => discovery_only(Ok(discovery::version())),
        Route::Health => respond::text(200, "ok"),
        Route::CoreVersions => discovery_only(Ok(discovery::core_versions(server_address))),
        Route::Groups => discovery_only(Ok(discovery::groups(&lock(&shared.store).catalog))),
        Route::Group(g) => discovery_only(discovery::group(&lock(&shared.store).catalog, &g)),
        Route::Resources(g, v) => {
            if g.is_empty() && v != "v1" {
                return discovery_only(Err(error::path_not_found()));
            }
            discovery_only(discovery::resources(&lock(&shared.store).catalog, &g, &v))
        }
        Route::NotFound => respond::status(&error::path_not_found()),
        Route::Resource(path) => {
            let body = match read_body(req).await {
                Ok(b) => b,
                Err(s) => return respond::status(&s),
            };
            resource::handle(
                shared,
                Req {
                    method: &method,
                    path: &path,
                    query: &query,
                    accept: h.accept,
                    content_type: h.content_type,
                    user_agent: h.user_agent,
                    body,
                },
            )
            .await
        }
    }
}

/// Compares secrets without an early exit on the first differing byte.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn read_body(req: Request<Incoming>) -> Result<Bytes, ApiStatus> {
    match Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e)
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            Err(ApiStatus::new(
                413,
                "RequestEntityTooLarge",
                format!("Request entity too large: limit is {MAX_BODY}"),
            ))
        }
        Err(e) => Err(error::bad_request(format!(
            "cannot read the request body: {e}"
        ))),
    }
}
