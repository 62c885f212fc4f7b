//! The raw API calls the recorder makes: one page of a list, and a watch stream
//! read line by line. Object bodies stay raw JSON (`RawValue`), exactly as the
//! server sent them, so unknown fields of custom resources survive.

use super::{ClusterAccess, describe_chain, plugin_failure};
use crate::model::ResourceType;
use bytes::{Buf, Bytes, BytesMut};
use http_body_util::BodyExt;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::time::Duration;

/// The largest watch line accepted (a single object); anything larger is a
/// broken stream, not an object.
const MAX_LINE: usize = crate::model::MAX_OBJECT_BYTES;
/// The largest response read whole (one page of a list: 500 objects of at most
/// the 1.5 MiB etcd allows fit with room to spare).
const MAX_BODY: usize = 1 << 30;

/// A failed API call, classified for the recorder's state machine.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    /// The server answered with a Status (HTTP error, or a 410 list).
    #[error("{code} {reason}: {message}")]
    Status {
        code: u16,
        reason: String,
        message: String,
        /// From the Retry-After header or `details.retryAfterSeconds`.
        retry_after: Option<Duration>,
        /// A fresh continue token offered with an expired one (410 on a list).
        continue_token: Option<String>,
        /// `details.causes`: the fields behind a conflict or an invalid object.
        causes: Vec<Cause>,
    },
    /// The connection failed or broke.
    #[error("{0}")]
    Transport(String),
    /// The response was not what the API promises.
    #[error("unreadable response: {0}")]
    Decode(String),
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    /// The kubeconfig's credential plugin failed (an expired SSO session):
    /// how it exited, and the last line it wrote on stderr.
    #[error("the credential plugin failed ({status}): {said}")]
    CredentialPlugin { status: String, said: String },
}

impl ApiError {
    pub fn code(&self) -> Option<u16> {
        match self {
            ApiError::Status { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// 410 Gone / Expired: the history asked for is gone.
    pub fn is_expired(&self) -> bool {
        self.code() == Some(410)
    }
}

#[derive(Deserialize)]
struct StatusBody {
    #[serde(default)]
    code: Option<u16>,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    details: Option<StatusDetails>,
    #[serde(default)]
    metadata: Option<ListMeta>,
}

#[derive(Deserialize)]
struct StatusDetails {
    #[serde(default, rename = "retryAfterSeconds")]
    retry_after_seconds: Option<u64>,
    #[serde(default)]
    causes: Vec<Cause>,
}

/// One cause of a failed request, as the API server names it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
pub struct Cause {
    #[serde(default)]
    pub reason: String,
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub field: String,
}

#[derive(Deserialize, Default)]
struct ListMeta {
    #[serde(default, rename = "resourceVersion")]
    resource_version: Option<String>,
    #[serde(default, rename = "continue")]
    continue_token: Option<String>,
}

/// Parses a Status document (an error body or an ERROR watch event's object).
pub fn parse_status(body: &[u8], http_code: u16, retry_header: Option<Duration>) -> ApiError {
    match serde_json::from_slice::<StatusBody>(body) {
        Ok(s) => ApiError::Status {
            code: s.code.unwrap_or(http_code),
            reason: s.reason.unwrap_or_else(|| reason_phrase(http_code)),
            message: s.message.unwrap_or_default(),
            retry_after: retry_header.or_else(|| {
                s.details
                    .as_ref()
                    .and_then(|d| d.retry_after_seconds)
                    .map(Duration::from_secs)
            }),
            causes: s.details.map(|d| d.causes).unwrap_or_default(),
            continue_token: s
                .metadata
                .and_then(|m| m.continue_token)
                .filter(|c| !c.is_empty()),
        },
        Err(_) => ApiError::Status {
            code: http_code,
            reason: reason_phrase(http_code),
            message: String::from_utf8_lossy(body)
                .trim()
                .chars()
                .take(300)
                .collect(),
            retry_after: retry_header,
            continue_token: None,
            causes: Vec::new(),
        },
    }
}

fn reason_phrase(code: u16) -> String {
    http::StatusCode::from_u16(code)
        .ok()
        .and_then(|c| c.canonical_reason())
        .unwrap_or("Error")
        .replace(' ', "")
}

/// One page of a list: the response as received, and where each item is in
/// it (items are not copied out: a page of large objects is megabytes).
#[derive(Debug)]
pub struct ListPage {
    pub resource_version: String,
    pub continue_token: Option<String>,
    body: Bytes,
    items: Vec<std::ops::Range<usize>>,
}

impl ListPage {
    /// Each item's JSON, exactly as the server sent it, in order.
    pub fn items(&self) -> impl Iterator<Item = &[u8]> {
        self.items.iter().map(|r| &self.body[r.clone()])
    }
}

#[derive(Deserialize)]
struct ListBody<'a> {
    #[serde(default)]
    metadata: ListMeta,
    #[serde(default, borrow)]
    items: Option<Vec<&'a RawValue>>,
}

/// Every byte but RFC 3986's unreserved characters is escaped.
const QUERY_VALUE: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// Percent-encodes a path segment or query value (RFC 3986 unreserved
/// characters stay).
pub fn encode_query(value: &str) -> String {
    percent_encoding::utf8_percent_encode(value, QUERY_VALUE).to_string()
}

/// The path and query of a list page of the collection at `collection`, as
/// kube-core builds them: no resourceVersion, so the server reads from etcd
/// (a consistent list, docs/consistency.md).
pub fn list_path(
    collection: &str,
    selector: Option<&str>,
    limit: u32,
    continue_token: Option<&str>,
) -> Result<String, ApiError> {
    let params = kube::core::params::ListParams {
        label_selector: selector.filter(|s| !s.is_empty()).map(str::to_string),
        limit: Some(limit),
        continue_token: continue_token.map(str::to_string),
        ..Default::default()
    };
    let req = kube::core::Request::new(collection)
        .list(&params)
        .map_err(|e| ApiError::Transport(e.to_string()))?;
    Ok(req.uri().to_string())
}

/// The path and query of a watch of the collection at `collection` from
/// exactly `resource_version`, as kube-core builds them.
pub fn watch_path(
    collection: &str,
    selector: Option<&str>,
    resource_version: &str,
    bookmarks: bool,
    timeout_seconds: u32,
) -> Result<String, ApiError> {
    let params = kube::core::params::WatchParams {
        label_selector: selector.filter(|s| !s.is_empty()).map(str::to_string),
        bookmarks,
        timeout: Some(timeout_seconds),
        ..Default::default()
    };
    let req = kube::core::Request::new(collection)
        .watch(&params, resource_version)
        .map_err(|e| ApiError::Transport(e.to_string()))?;
    Ok(req.uri().to_string())
}

fn transport(e: kube::Error) -> ApiError {
    match plugin_failure(&e) {
        Some((status, said)) => ApiError::CredentialPlugin { status, said },
        None => ApiError::Transport(describe_chain(&e)),
    }
}

async fn send(
    access: &ClusterAccess,
    path_and_query: &str,
    watch: bool,
) -> Result<http::Response<kube::client::Body>, ApiError> {
    let mut req =
        http::Request::get(path_and_query).header(http::header::ACCEPT, "application/json");
    if watch {
        req = req.header(http::header::ACCEPT_ENCODING, "identity");
    }
    let req = req
        .body(kube::client::Body::from(Vec::new()))
        .map_err(|e| ApiError::Transport(e.to_string()))?;
    send_request(access, req, watch).await
}

async fn send_request(
    access: &ClusterAccess,
    req: http::Request<kube::client::Body>,
    watch: bool,
) -> Result<http::Response<kube::client::Body>, ApiError> {
    let fut = access.client.send(req);
    let res = match access.request_timeout.filter(|_| !watch) {
        Some(t) => tokio::time::timeout(t, fut)
            .await
            .map_err(|_| ApiError::Timeout(t))?
            .map_err(transport)?,
        None => fut.await.map_err(transport)?,
    };
    let code = res.status().as_u16();
    if (200..300).contains(&code) {
        return Ok(res);
    }
    let retry = res
        .headers()
        .get(http::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs);
    let body = read_all(res.into_body(), access.request_timeout).await?;
    Err(parse_status(&body, code, retry))
}

async fn read_all(body: kube::client::Body, timeout: Option<Duration>) -> Result<Bytes, ApiError> {
    let fut = http_body_util::Limited::new(body, MAX_BODY).collect();
    let collected = match timeout {
        Some(t) => tokio::time::timeout(t, fut)
            .await
            .map_err(|_| ApiError::Timeout(t))?,
        None => fut.await,
    };
    collected.map(|c| c.to_bytes()).map_err(|e| {
        match e.downcast_ref::<http_body_util::LengthLimitError>() {
            Some(_) => ApiError::Decode(format!("a response larger than {MAX_BODY} bytes")),
            None => ApiError::Transport(describe_chain(&*e)),
        }
    })
}

/// Fetches one page of `resource` (in `namespace` when given).
pub async fn list_page(
    access: &ClusterAccess,
    resource: &ResourceType,
    namespace: Option<&str>,
    selector: Option<&str>,
    limit: u32,
    continue_token: Option<&str>,
) -> Result<ListPage, ApiError> {
    let path = list_path(
        &resource.collection_path(namespace),
        selector,
        limit,
        continue_token,
    )?;
    let res = send(access, &path, false).await?;
    let body = read_all(res.into_body(), access.request_timeout).await?;
    let list: ListBody =
        serde_json::from_slice(&body).map_err(|e| ApiError::Decode(e.to_string()))?;
    // Each item borrows from `body`: its place there.
    let base = body.as_ptr() as usize;
    let items = list
        .items
        .unwrap_or_default()
        .iter()
        .map(|item| {
            let start = item.get().as_ptr() as usize - base;
            start..start + item.get().len()
        })
        .collect();
    Ok(ListPage {
        resource_version: list.metadata.resource_version.unwrap_or_default(),
        continue_token: list.metadata.continue_token.filter(|c| !c.is_empty()),
        items,
        body,
    })
}

/// The path of one object of `resource`.
pub fn object_path(resource: &ResourceType, namespace: Option<&str>, name: &str) -> String {
    format!(
        "{}/{}",
        resource.collection_path(namespace),
        encode_query(name)
    )
}

/// Reads one object; `Ok(None)` when it does not exist.
pub async fn get(
    access: &ClusterAccess,
    resource: &ResourceType,
    namespace: Option<&str>,
    name: &str,
) -> Result<Option<serde_json::Value>, ApiError> {
    match send(access, &object_path(resource, namespace, name), false).await {
        Ok(res) => {
            let body = read_all(res.into_body(), access.request_timeout).await?;
            serde_json::from_slice(&body)
                .map(Some)
                .map_err(|e| ApiError::Decode(e.to_string()))
        }
        Err(e) if e.code() == Some(404) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Whether an object exists, asking for its metadata only
/// (`PartialObjectMetadata`): the existence of a Secret is checked without
/// its data ever reaching this process. A server that does not know the
/// metadata form answers with the whole object, which is read and dropped.
pub async fn exists(
    access: &ClusterAccess,
    resource: &ResourceType,
    namespace: Option<&str>,
    name: &str,
) -> Result<bool, ApiError> {
    let req = http::Request::get(object_path(resource, namespace, name))
        .header(
            http::header::ACCEPT,
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json",
        )
        .body(kube::client::Body::from(Vec::new()))
        .map_err(|e| ApiError::Transport(e.to_string()))?;
    match send_request(access, req, false).await {
        Ok(res) => {
            read_all(res.into_body(), access.request_timeout).await?;
            Ok(true)
        }
        Err(e) if e.code() == Some(404) => Ok(false),
        Err(e) => Err(e),
    }
}

/// What a server-side apply did.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    /// 201 when the object was created, 200 otherwise.
    pub code: u16,
    pub object: serde_json::Value,
}

/// Server-side apply of `body` (JSON is YAML) as `manager`, never forcing
/// conflicts; with `dry_run`, nothing is stored.
pub async fn apply(
    access: &ClusterAccess,
    resource: &ResourceType,
    namespace: Option<&str>,
    name: &str,
    body: Vec<u8>,
    manager: &str,
    dry_run: bool,
) -> Result<Applied, ApiError> {
    let mut path = format!(
        "{}?fieldManager={}&force=false",
        object_path(resource, namespace, name),
        encode_query(manager)
    );
    if dry_run {
        path.push_str("&dryRun=All");
    }
    let req = http::Request::patch(path)
        .header(http::header::ACCEPT, "application/json")
        .header(http::header::CONTENT_TYPE, "application/apply-patch+yaml")
        .body(kube::client::Body::from(body))
        .map_err(|e| ApiError::Transport(e.to_string()))?;
    let res = send_request(access, req, false).await?;
    let code = res.status().as_u16();
    let body = read_all(res.into_body(), access.request_timeout).await?;
    let object = serde_json::from_slice(&body).map_err(|e| ApiError::Decode(e.to_string()))?;
    Ok(Applied { code, object })
}

/// Opens a watch of `resource` from exactly `resource_version`.
pub async fn open_watch(
    access: &ClusterAccess,
    resource: &ResourceType,
    namespace: Option<&str>,
    selector: Option<&str>,
    resource_version: &str,
    bookmarks: bool,
    timeout_seconds: u32,
) -> Result<WatchBody, ApiError> {
    let path = watch_path(
        &resource.collection_path(namespace),
        selector,
        resource_version,
        bookmarks,
        timeout_seconds,
    )?;
    let res = send(access, &path, true).await?;
    Ok(WatchBody {
        body: res.into_body(),
        buf: BytesMut::new(),
        scanned: 0,
        done: false,
    })
}

/// A watch response read as lines (one JSON document each).
pub struct WatchBody {
    body: kube::client::Body,
    buf: BytesMut,
    /// How much of `buf` is known to hold no newline.
    scanned: usize,
    done: bool,
}

impl WatchBody {
    /// The next complete line already received, without waiting for more.
    pub fn next_buffered(&mut self) -> Option<Bytes> {
        loop {
            // Bytes before `scanned` are known to hold no newline.
            let pos = self.scanned
                + memchr::memchr(b'\n', &self.buf[self.scanned..]).or_else(|| {
                    self.scanned = self.buf.len();
                    None
                })?;
            self.scanned = 0;
            let line = self.buf.split_to(pos + 1).freeze();
            let trimmed = trim(&line);
            if !trimmed.is_empty() {
                return Some(line.slice_ref(trimmed));
            }
        }
    }

    /// The next non-empty line; `Ok(None)` when the server ended the stream.
    /// A connection that breaks mid-stream is an error, so the caller resumes.
    pub async fn next_line(&mut self) -> Result<Option<Bytes>, ApiError> {
        loop {
            if let Some(line) = self.next_buffered() {
                return Ok(Some(line));
            }
            if self.done {
                if self.buf.has_remaining() {
                    let rest = self.buf.split().freeze();
                    self.scanned = 0;
                    if !trim(&rest).is_empty() {
                        return Err(ApiError::Decode(
                            "the watch stream ended in the middle of an event".into(),
                        ));
                    }
                }
                return Ok(None);
            }
            if self.buf.len() > MAX_LINE {
                return Err(ApiError::Decode(format!(
                    "a watch event is larger than {MAX_LINE} bytes"
                )));
            }
            match self.body.frame().await {
                None => self.done = true,
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.buf.extend_from_slice(&data);
                    }
                }
                Some(Err(e)) => return Err(ApiError::Transport(describe_chain(&e))),
            }
        }
    }
}

fn trim(line: &[u8]) -> &[u8] {
    let start = line
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(line.len());
    let end = line
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &line[start..end.max(start)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_encoded() {
        assert_eq!(
            list_path(
                "/api/v1/configmaps",
                Some("app in (a,b),!tier"),
                500,
                Some("tok/en=")
            )
            .unwrap(),
            // kube-core's serializer leaves an empty first pair; servers skip it.
            "/api/v1/configmaps?&labelSelector=app+in+%28a%2Cb%29%2C%21tier&limit=500&continue=tok%2Fen%3D"
        );
        assert_eq!(
            watch_path("/api/v1/configmaps", None, "123", true, 290).unwrap(),
            "/api/v1/configmaps?&watch=true&timeoutSeconds=290&allowWatchBookmarks=true&resourceVersion=123"
        );
        assert_eq!(encode_query("a b/é"), "a%20b%2F%C3%A9");
    }

    #[test]
    fn statuses_are_classified() {
        let e = parse_status(
            br#"{"kind":"Status","code":410,"reason":"Expired","message":"too old resource version: 5 (100)","metadata":{"continue":"fresh"}}"#,
            410,
            None,
        );
        assert!(e.is_expired());
        assert!(matches!(&e, ApiError::Status { continue_token: Some(c), .. } if c == "fresh"));
        let e = parse_status(
            b"<html>bad gateway</html>",
            502,
            Some(Duration::from_secs(3)),
        );
        assert!(matches!(
            e,
            ApiError::Status {
                code: 502,
                retry_after: Some(_),
                ..
            }
        ));
        let e = parse_status(
            br#"{"code":429,"reason":"TooManyRequests","details":{"retryAfterSeconds":7}}"#,
            429,
            None,
        );
        assert!(
            matches!(e, ApiError::Status { retry_after: Some(d), .. } if d == Duration::from_secs(7))
        );
    }
}
