//! Errors of the simulator and the Kubernetes `Status` objects they become on
//! the wire. Messages follow the real API server's wording where it is known.

use serde_json::{Value, json};

/// A failed API call as the API server reports it: an HTTP status code plus a
/// `meta/v1 Status` body.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiStatus {
    /// HTTP status code (404, 409, 410, ...).
    pub code: u16,
    /// Machine-readable reason (`NotFound`, `Expired`, ...).
    pub reason: String,
    /// Human-readable message, as kubectl prints it after `Error from server (Reason):`.
    pub message: String,
    /// `details` of the Status, when the server gives any.
    pub details: Option<Box<Value>>,
    /// `metadata.continue` of the Status (a fresh token for an expired `continue`).
    pub continue_token: Option<String>,
    /// Sent as the `Retry-After` header and `details.retryAfterSeconds`.
    pub retry_after_secs: Option<u32>,
}

/// One entry of a Status's `details.causes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusCause {
    /// `FieldManagerConflict`, `FieldValueInvalid`, `FieldValueRequired`, ...
    pub reason: String,
    /// Human-readable: `conflict with "kubectl" using apps/v1`.
    pub message: String,
    /// The field, in the server's notation: `.spec.replicas` for apply
    /// conflicts, `spec.clusterIPs[0]` for validation errors.
    pub field: String,
}

impl ApiStatus {
    /// `details.causes`, in order (empty when there are none).
    pub fn causes(&self) -> Vec<StatusCause> {
        let text = |c: &Value, k: &str| {
            c.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        self.details
            .as_deref()
            .and_then(|d| d.get("causes"))
            .and_then(Value::as_array)
            .map(|causes| {
                causes
                    .iter()
                    .map(|c| StatusCause {
                        reason: text(c, "reason"),
                        message: text(c, "message"),
                        field: text(c, "field"),
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    pub(crate) fn new(code: u16, reason: &str, message: impl Into<String>) -> Self {
        ApiStatus {
            code,
            reason: reason.to_string(),
            message: message.into(),
            details: None,
            continue_token: None,
            retry_after_secs: None,
        }
    }

    pub(crate) fn with_details(mut self, details: Value) -> Self {
        self.details = Some(Box::new(details));
        self
    }

    /// The `Status` object, exactly as served.
    pub fn to_json(&self) -> Value {
        let mut metadata = serde_json::Map::new();
        if let Some(c) = &self.continue_token {
            metadata.insert("continue".into(), Value::String(c.clone()));
        }
        let mut details: Option<Value> = self.details.as_deref().cloned();
        if let Some(secs) = self.retry_after_secs {
            let d = details.get_or_insert_with(|| json!({}));
            if let Some(map) = d.as_object_mut() {
                map.insert("retryAfterSeconds".into(), json!(secs));
            }
        }
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": metadata,
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        // An unknown reason is left out, as Go's `omitempty` does.
        if self.reason.is_empty()
            && let Some(map) = status.as_object_mut()
        {
            map.shift_remove("reason");
        }
        if let (Some(d), Some(map)) = (details, status.as_object_mut()) {
            map.insert("details".into(), d);
        }
        status
    }
}

/// What can go wrong in the simulator.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The API refused the call; this is what an HTTP client would receive.
    #[error("{} ({}): {}", .0.reason, .0.code, .0.message)]
    Api(Box<ApiStatus>),
    /// The listening socket could not be opened.
    #[error("cannot listen on 127.0.0.1: {0}")]
    Bind(#[source] std::io::Error),
    /// The TLS material could not be generated or loaded.
    #[error("cannot set up TLS: {0}")]
    Tls(String),
    /// The background runtime or thread could not be started.
    #[error("cannot start the simulator runtime: {0}")]
    Runtime(String),
    /// The configured seed could not be loaded.
    #[error("cannot seed the simulator: {0}")]
    Seed(String),
}

impl SimError {
    /// The Status, for an API error.
    pub fn status(&self) -> Option<&ApiStatus> {
        match self {
            SimError::Api(s) => Some(s),
            _ => None,
        }
    }

    /// The HTTP code, for an API error.
    pub fn code(&self) -> Option<u16> {
        self.status().map(|s| s.code)
    }

    /// The Status reason (`NotFound`, `Conflict`, ...), for an API error.
    pub fn reason(&self) -> Option<&str> {
        self.status().map(|s| s.reason.as_str())
    }

    /// The Status message, for an API error.
    pub fn message(&self) -> Option<&str> {
        self.status().map(|s| s.message.as_str())
    }

    /// The Status `details.causes` (empty for other errors).
    pub fn causes(&self) -> Vec<StatusCause> {
        self.status().map(ApiStatus::causes).unwrap_or_default()
    }
}

impl From<ApiStatus> for SimError {
    fn from(s: ApiStatus) -> Self {
        SimError::Api(Box::new(s))
    }
}

/// `configmaps` or `deployments.apps`: how the server names a group/resource in messages.
pub(crate) fn qualified(resource: &str, group: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

fn details(name: &str, group: &str, resource: &str) -> Value {
    let mut d = serde_json::Map::new();
    if !name.is_empty() {
        d.insert("name".into(), json!(name));
    }
    if !group.is_empty() {
        d.insert("group".into(), json!(group));
    }
    d.insert("kind".into(), json!(resource));
    Value::Object(d)
}

pub(crate) fn not_found(resource: &str, group: &str, name: &str) -> ApiStatus {
    ApiStatus::new(
        404,
        "NotFound",
        format!("{} \"{name}\" not found", qualified(resource, group)),
    )
    .with_details(details(name, group, resource))
}

/// 404 for a path the server does not serve at all.
pub(crate) fn path_not_found() -> ApiStatus {
    ApiStatus::new(404, "NotFound", "the server could not find the requested resource")
        .with_details(json!({"causes": [{"reason": "UnexpectedServerResponse", "message": "404 page not found"}]}))
}

pub(crate) fn already_exists(resource: &str, group: &str, name: &str) -> ApiStatus {
    ApiStatus::new(
        409,
        "AlreadyExists",
        format!("{} \"{name}\" already exists", qualified(resource, group)),
    )
    .with_details(details(name, group, resource))
}

pub(crate) fn conflict(resource: &str, group: &str, name: &str, why: &str) -> ApiStatus {
    ApiStatus::new(
        409,
        "Conflict",
        format!(
            "Operation cannot be fulfilled on {} \"{name}\": {why}",
            qualified(resource, group)
        ),
    )
    .with_details(details(name, group, resource))
}

pub(crate) const MODIFIED_CONFLICT: &str =
    "the object has been modified; please apply your changes to the latest version and try again";

/// The cause type of a validation message (`field.ErrorType`), read from
/// the message's prefix.
fn cause_reason(message: &str) -> &'static str {
    const PREFIXES: [(&str, &str); 6] = [
        ("Required value", "FieldValueRequired"),
        ("Forbidden", "FieldValueForbidden"),
        ("Unsupported value", "FieldValueNotSupported"),
        ("Duplicate value", "FieldValueDuplicate"),
        ("Too long", "FieldValueTooLong"),
        ("Not found", "FieldValueNotFound"),
    ];
    PREFIXES
        .iter()
        .find(|(p, _)| message.starts_with(p))
        .map_or("FieldValueInvalid", |(_, r)| r)
}

/// 422 Invalid with one cause per `(field, message)`.
pub(crate) fn invalid(
    kind: &str,
    group: &str,
    name: &str,
    causes: &[(String, String)],
) -> ApiStatus {
    let summary: Vec<String> = causes.iter().map(|(f, m)| format!("{f}: {m}")).collect();
    let summary = if summary.len() == 1 {
        summary.join("")
    } else {
        format!("[{}]", summary.join(", "))
    };
    let qualified_kind = qualified(kind, group);
    let mut d = serde_json::Map::new();
    d.insert("name".into(), json!(name));
    if !group.is_empty() {
        d.insert("group".into(), json!(group));
    }
    d.insert("kind".into(), json!(kind));
    d.insert(
        "causes".into(),
        Value::Array(
            causes
                .iter()
                .map(|(f, m)| json!({"reason": cause_reason(m), "message": m, "field": f}))
                .collect(),
        ),
    );
    ApiStatus::new(
        422,
        "Invalid",
        format!("{qualified_kind} \"{name}\" is invalid: {summary}"),
    )
    .with_details(Value::Object(d))
}

pub(crate) fn bad_request(message: impl Into<String>) -> ApiStatus {
    ApiStatus::new(400, "BadRequest", message)
}

pub(crate) fn internal(message: impl Into<String>) -> ApiStatus {
    ApiStatus::new(500, "InternalError", message)
}

/// The watch-cache / etcd "too old resource version" error.
pub(crate) fn too_old(requested: u64, oldest: u64) -> ApiStatus {
    ApiStatus::new(
        410,
        "Expired",
        format!("too old resource version: {requested} ({oldest})"),
    )
}

pub(crate) const CONTINUE_EXPIRED: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

pub(crate) fn continue_expired(fresh_token: String) -> ApiStatus {
    let mut s = ApiStatus::new(410, "Expired", CONTINUE_EXPIRED);
    s.continue_token = Some(fresh_token);
    s
}

/// The RBAC denial text of a real API server.
pub(crate) fn forbidden(
    user: &str,
    verb: &str,
    resource: &str,
    group: &str,
    namespace: Option<&str>,
    name: Option<&str>,
) -> ApiStatus {
    let subject = match name {
        Some(n) => format!("{} \"{n}\"", qualified(resource, group)),
        None => qualified(resource, group),
    };
    let scope = match namespace {
        Some(ns) => format!("in the namespace \"{ns}\""),
        None => "at the cluster scope".to_string(),
    };
    ApiStatus::new(
        403,
        "Forbidden",
        format!(
            "{subject} is forbidden: User \"{user}\" cannot {verb} resource \"{resource}\" in API group \"{group}\" {scope}"
        ),
    )
    .with_details(details(name.unwrap_or(""), group, resource))
}

pub(crate) fn unauthorized() -> ApiStatus {
    ApiStatus::new(401, "Unauthorized", "Unauthorized")
}

pub(crate) fn unsupported_media_type(accepted: &[&str]) -> ApiStatus {
    ApiStatus::new(
        415,
        "UnsupportedMediaType",
        format!(
            "the body of the request was in an unknown format - accepted media types include: {}",
            accepted.join(", ")
        ),
    )
}

pub(crate) fn not_acceptable(accepted: &[&str]) -> ApiStatus {
    ApiStatus::new(
        406,
        "NotAcceptable",
        format!(
            "only the following media types are accepted: {}",
            accepted.join(", ")
        ),
    )
}

pub(crate) fn method_not_allowed(method: &str) -> ApiStatus {
    ApiStatus::new(
        405,
        "MethodNotAllowed",
        format!("the server does not allow this method on the requested resource ({method})"),
    )
}

/// The status of an injected failure (`fail_next_requests`).
pub(crate) fn injected(code: u16, retry_after_secs: Option<u32>) -> ApiStatus {
    let (reason, message) = match code {
        429 => (
            "TooManyRequests",
            "Too many requests, please try again later.",
        ),
        500 => ("InternalError", "Internal error occurred: injected failure"),
        503 => ("ServiceUnavailable", "The service is unavailable."),
        504 => (
            "Timeout",
            "The server was unable to return a response in the time allotted, but may still be processing the request",
        ),
        409 => (
            "Conflict",
            "Operation cannot be fulfilled: injected conflict",
        ),
        410 => ("Expired", "too old resource version: injected"),
        404 => (
            "NotFound",
            "the server could not find the requested resource",
        ),
        403 => ("Forbidden", "forbidden: injected failure"),
        401 => ("Unauthorized", "Unauthorized"),
        400 => ("BadRequest", "injected bad request"),
        _ => ("InternalError", "injected failure"),
    };
    let mut s = ApiStatus::new(code, reason, message);
    s.retry_after_secs = retry_after_secs;
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_wording_matches_the_server() {
        let s = not_found("configmaps", "", "x").to_json();
        assert_eq!(s["message"], "configmaps \"x\" not found");
        assert_eq!(s["reason"], "NotFound");
        assert_eq!(s["code"], 404);
        assert_eq!(s["kind"], "Status");
        assert_eq!(s["status"], "Failure");
        assert_eq!(s["details"]["kind"], "configmaps");
        let s = not_found("deployments", "apps", "web").to_json();
        assert_eq!(s["message"], "deployments.apps \"web\" not found");
        assert_eq!(s["details"]["group"], "apps");
    }

    #[test]
    fn forbidden_wording_matches_rbac() {
        let s = forbidden(
            "krply-sim-user",
            "list",
            "configmaps",
            "",
            Some("shop"),
            None,
        );
        assert_eq!(
            s.message,
            "configmaps is forbidden: User \"krply-sim-user\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"shop\""
        );
        let s = forbidden("u", "watch", "secrets", "", None, None);
        assert!(s.message.ends_with("at the cluster scope"));
    }

    #[test]
    fn invalid_causes_are_typed_by_their_message() {
        let s = invalid(
            "PatchOptions",
            "meta.k8s.io",
            "",
            &[
                (
                    "fieldManager".into(),
                    "Required value: is required for apply patch".into(),
                ),
                ("force".into(), "Forbidden: may not be specified".into()),
                ("x".into(), "Invalid value: 1: bad".into()),
            ],
        );
        let causes = s.causes();
        assert_eq!(
            causes.iter().map(|c| c.reason.as_str()).collect::<Vec<_>>(),
            [
                "FieldValueRequired",
                "FieldValueForbidden",
                "FieldValueInvalid"
            ]
        );
        assert_eq!(causes[0].field, "fieldManager");
        assert!(
            s.message
                .starts_with("PatchOptions.meta.k8s.io \"\" is invalid: [")
        );
        let unknown = ApiStatus::new(500, "", "boom").to_json();
        assert!(unknown.get("reason").is_none());
        assert_eq!(SimError::from(s).causes().len(), 3);
    }

    #[test]
    fn expired_carries_continue_and_retry_after() {
        let s = continue_expired("abc".into()).to_json();
        assert_eq!(s["metadata"]["continue"], "abc");
        assert_eq!(s["code"], 410);
        assert_eq!(too_old(5, 100).message, "too old resource version: 5 (100)");
        let s = injected(429, Some(3)).to_json();
        assert_eq!(s["details"]["retryAfterSeconds"], 3);
        assert_eq!(s["reason"], "TooManyRequests");
    }
}
