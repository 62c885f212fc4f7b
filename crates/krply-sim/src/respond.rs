//! Building HTTP responses: JSON documents, `Status` errors (with
//! `Retry-After` where the Status says so) and watch streams.

use bytes::Bytes;
use http::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue, RETRY_AFTER};
use http::{Response, StatusCode};
use serde_json::Value;

use super::body::SimBody;
use super::error::ApiStatus;

fn code(c: u16) -> StatusCode {
    StatusCode::from_u16(c).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

/// A JSON response.
pub(crate) fn json_bytes(status: u16, body: impl Into<Bytes>) -> Response<SimBody> {
    let mut r = Response::new(SimBody::full(body));
    *r.status_mut() = code(status);
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

pub(crate) fn json(status: u16, v: &Value) -> Response<SimBody> {
    json_bytes(status, serde_json::to_vec(v).unwrap_or_default())
}

/// A failure, as a `Status`.
pub(crate) fn status(s: &ApiStatus) -> Response<SimBody> {
    let mut r = json(s.code, &s.to_json());
    if let Some(secs) = s.retry_after_secs
        && let Ok(v) = HeaderValue::from_str(&secs.to_string())
    {
        r.headers_mut().insert(RETRY_AFTER, v);
    }
    r
}

pub(crate) fn text(status: u16, body: &'static str) -> Response<SimBody> {
    let mut r = Response::new(SimBody::full(Bytes::from_static(body.as_bytes())));
    *r.status_mut() = code(status);
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// A streamed watch: 200, `application/json`, chunked.
pub(crate) fn stream(body: SimBody) -> Response<SimBody> {
    let mut r = Response::new(body);
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r.headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-cache, private"));
    r
}
