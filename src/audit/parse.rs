//! One audit log line: an `audit.k8s.io/v1` `Event` as kube-apiserver writes
//! it with `--audit-log-path` and `--audit-log-format=json`.
//!
//! Only what the join needs is read (docs/audit.md, "What is kept"). Request
//! and response bodies are skipped unread, except the response object's
//! `metadata.resourceVersion`, `uid` and `name`; Secret data never leaves the
//! parser.

use serde::Deserialize;
use std::borrow::Cow;

/// A write the API server completed, as the audit log tells it.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditEvent {
    pub audit_id: String,
    /// When the response was complete (`stageTimestamp`), ms since the epoch.
    pub at: i64,
    pub verb: Verb,
    pub who: Who,
    /// The API group (`""` for the core group), e.g. `apps`.
    pub group: String,
    pub resource: String,
    /// `status`, `scale`, ... or `""`.
    pub subresource: String,
    /// `""` for cluster-scoped objects.
    pub namespace: String,
    pub name: String,
    /// The object's uid, from `objectRef` or the response object.
    pub uid: Option<String>,
    /// The response object's `metadata.resourceVersion` (RequestResponse level).
    pub resource_version: Option<String>,
}

/// Who made a request. With impersonation (`kubectl --as`), `user` and
/// `groups` are the impersonated user's, and `impersonated_by` the one who
/// asked for it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Who {
    pub user: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    #[serde(default)]
    pub groups: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub impersonated_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_agent: Option<String>,
    #[serde(default)]
    pub source_ips: Vec<String>,
}

/// The verbs that write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verb {
    Create,
    Update,
    Patch,
    Delete,
}

impl Verb {
    /// As stored in the journal (`audit_events.verb`).
    pub fn code(self) -> i64 {
        match self {
            Verb::Create => 1,
            Verb::Update => 2,
            Verb::Patch => 3,
            Verb::Delete => 4,
        }
    }

    pub fn from_code(code: i64) -> Option<Verb> {
        Some(match code {
            1 => Verb::Create,
            2 => Verb::Update,
            3 => Verb::Patch,
            4 => Verb::Delete,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
        }
    }
}

/// What one line is.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    /// A completed, successful write on a named object.
    Write(Box<AuditEvent>),
    /// An audit event that names no write krply can place, and why; still
    /// proof that the log was being written at `at`.
    Other { at: Option<i64>, why: Skip },
}

/// Why an audit event is not kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Skip {
    /// `RequestReceived`, `ResponseStarted` or `Panic`: the write's outcome is
    /// in its `ResponseComplete` event.
    NotComplete,
    /// get, list, watch, ...
    NotAWrite,
    /// The server refused or failed it (a status code of 300 or more).
    Failed,
    /// No object name (a `deletecollection`, a create by `generateName` at
    /// Metadata level) or no object at all (a non-resource URL).
    NoObject,
}

impl Skip {
    pub fn as_str(self) -> &'static str {
        match self {
            Skip::NotComplete => "not at stage ResponseComplete",
            Skip::NotAWrite => "not a write",
            Skip::Failed => "refused or failed",
            Skip::NoObject => "no object name",
        }
    }
}

/// A line that is not an audit event.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LineError {
    #[error("not JSON ({0})")]
    NotJson(String),
    #[error("not an audit.k8s.io/v1 Event (kind {kind:?}, apiVersion {api_version:?})")]
    NotAuditEvent { kind: String, api_version: String },
    #[error("an audit event without {0}")]
    Missing(&'static str),
    #[error("a bad {what} {value:?}")]
    Bad { what: &'static str, value: String },
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Raw<'a> {
    #[serde(borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    api_version: Option<Cow<'a, str>>,
    #[serde(rename = "auditID", borrow)]
    audit_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    stage: Option<Cow<'a, str>>,
    #[serde(borrow)]
    verb: Option<Cow<'a, str>>,
    user: Option<RawUser>,
    impersonated_user: Option<RawUser>,
    user_agent: Option<String>,
    #[serde(rename = "sourceIPs", default)]
    source_ips: Vec<String>,
    #[serde(borrow)]
    object_ref: Option<RawRef<'a>>,
    response_status: Option<RawStatus>,
    #[serde(borrow)]
    response_object: Option<RawObject<'a>>,
    #[serde(borrow)]
    stage_timestamp: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct RawUser {
    username: Option<String>,
    uid: Option<String>,
    #[serde(default)]
    groups: Vec<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawRef<'a> {
    #[serde(borrow)]
    resource: Option<Cow<'a, str>>,
    #[serde(borrow)]
    namespace: Option<Cow<'a, str>>,
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    uid: Option<Cow<'a, str>>,
    #[serde(borrow)]
    api_group: Option<Cow<'a, str>>,
    #[serde(borrow)]
    subresource: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct RawStatus {
    code: Option<i64>,
}

/// The response object: only its kind and metadata are read; every other
/// member (spec, data, status) is skipped unread.
#[derive(Deserialize)]
struct RawObject<'a> {
    #[serde(borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    metadata: Option<RawMeta<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawMeta<'a> {
    #[serde(borrow)]
    resource_version: Option<Cow<'a, str>>,
    #[serde(borrow)]
    uid: Option<Cow<'a, str>>,
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
}

/// Reads one line (without its newline).
pub fn parse_line(line: &[u8]) -> Result<Line, LineError> {
    // Checked as UTF-8 once, in one pass, rather than string by string.
    let line = std::str::from_utf8(line).map_err(|e| LineError::NotJson(e.to_string()))?;
    let raw: Raw<'_> = serde_json::from_str(line).map_err(|e| LineError::NotJson(e.to_string()))?;
    let (kind, api_version) = (
        raw.kind.as_deref().unwrap_or(""),
        raw.api_version.as_deref().unwrap_or(""),
    );
    if kind != "Event" || api_version != "audit.k8s.io/v1" {
        return Err(LineError::NotAuditEvent {
            kind: kind.to_string(),
            api_version: api_version.to_string(),
        });
    }
    let audit_id = raw.audit_id.ok_or(LineError::Missing("auditID"))?;
    let stage = raw.stage.ok_or(LineError::Missing("stage"))?;
    let at = match raw.stage_timestamp.as_deref() {
        Some(t) => Some(timestamp(t)?),
        None => None,
    };
    let other = |why| Ok(Line::Other { at, why });
    if stage != "ResponseComplete" {
        return other(Skip::NotComplete);
    }
    let at = at.ok_or(LineError::Missing("stageTimestamp"))?;
    let verb = match raw.verb.as_deref() {
        Some("create") => Verb::Create,
        Some("update") => Verb::Update,
        Some("patch") => Verb::Patch,
        Some("delete") => Verb::Delete,
        Some(_) => return other(Skip::NotAWrite),
        None => return Err(LineError::Missing("verb")),
    };
    if raw
        .response_status
        .and_then(|s| s.code)
        .is_some_and(|c| c >= 300)
    {
        return other(Skip::Failed);
    }
    let Some(object) = raw.object_ref else {
        return other(Skip::NoObject);
    };
    // A Status (the answer to most deletes) is not the object.
    let response = raw
        .response_object
        .filter(|o| o.kind.as_deref() != Some("Status"))
        .and_then(|o| o.metadata);
    let name = object
        .name
        .filter(|n| !n.is_empty())
        .or_else(|| response.as_ref().and_then(|m| m.name.clone()));
    let (Some(resource), Some(name)) = (object.resource, name) else {
        return other(Skip::NoObject);
    };
    let user = raw.user.ok_or(LineError::Missing("user"))?;
    let who = match raw.impersonated_user {
        Some(imp) => Who {
            user: imp.username.unwrap_or_default(),
            uid: imp.uid,
            groups: imp.groups,
            impersonated_by: user.username,
            user_agent: raw.user_agent,
            source_ips: raw.source_ips,
        },
        None => Who {
            user: user.username.unwrap_or_default(),
            uid: user.uid,
            groups: user.groups,
            impersonated_by: None,
            user_agent: raw.user_agent,
            source_ips: raw.source_ips,
        },
    };
    let owned = |s: Option<Cow<'_, str>>| s.map(Cow::into_owned).filter(|s| !s.is_empty());
    let (response_rv, response_uid) = match response {
        Some(m) => (owned(m.resource_version), owned(m.uid)),
        None => (None, None),
    };
    Ok(Line::Write(Box::new(AuditEvent {
        audit_id: audit_id.into_owned(),
        at,
        verb,
        who,
        group: owned(object.api_group).unwrap_or_default(),
        resource: resource.into_owned(),
        subresource: owned(object.subresource).unwrap_or_default(),
        namespace: owned(object.namespace).unwrap_or_default(),
        name: name.into_owned(),
        uid: owned(object.uid).or(response_uid),
        resource_version: response_rv,
    })))
}

fn timestamp(t: &str) -> Result<i64, LineError> {
    let ts: jiff::Timestamp = t.parse().map_err(|_| LineError::Bad {
        what: "stageTimestamp",
        value: t.to_string(),
    })?;
    Ok(ts.as_millisecond())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A line as kube-apiserver v1.37 wrote it at RequestResponse level for
    /// `kubectl set image --as alice@example.com` (bodies shortened).
    pub const IMPERSONATED_PATCH: &str = r#"{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":"7c1f3b0e-8a51-4c5e-9a3e-2f0d5b6a1c2d","stage":"ResponseComplete","requestURI":"/apis/apps/v1/namespaces/aud/deployments/web?fieldManager=kubectl-set","verb":"patch","user":{"username":"krply-admin","uid":"uid-krply-admin","groups":["system:masters","system:authenticated"]},"impersonatedUser":{"username":"alice@example.com","groups":["system:masters","system:authenticated"]},"sourceIPs":["127.0.0.1"],"userAgent":"kubectl/v1.37.2 (linux/amd64) kubernetes/$Format","objectRef":{"resource":"deployments","namespace":"aud","name":"web","apiGroup":"apps","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestObject":{"spec":{"template":{"spec":{"containers":[{"image":"nginx:1.26","name":"nginx"}]}}}},"responseObject":{"kind":"Deployment","apiVersion":"apps/v1","metadata":{"name":"web","namespace":"aud","uid":"a2cb786e-6fb2-43ad-8742-70d05a439f89","resourceVersion":"280","generation":2},"spec":{"replicas":1},"status":{}},"requestReceivedTimestamp":"2026-12-01T10:41:51.501844Z","stageTimestamp":"2026-12-01T10:41:51.509518Z","annotations":{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":""}}"#;

    /// A delete answered with a Status, at Metadata level.
    pub const DELETE: &str = r#"{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"0b3f6c2a-7d4e-4f1a-8b2c-9e5d1a3f7c6b","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/aud/configmaps/c1","verb":"delete","user":{"username":"krply-admin","uid":"uid-krply-admin","groups":["system:masters","system:authenticated"]},"sourceIPs":["127.0.0.1"],"userAgent":"kubectl/v1.37.2 (linux/amd64) kubernetes/$Format","objectRef":{"resource":"configmaps","namespace":"aud","name":"c1","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-12-01T10:41:51.752117Z","stageTimestamp":"2026-12-01T10:41:51.759046Z"}"#;

    fn write(line: &str) -> AuditEvent {
        match parse_line(line.as_bytes()).unwrap() {
            Line::Write(e) => *e,
            other => panic!("not a write: {other:?}"),
        }
    }

    #[test]
    fn an_impersonated_patch_names_both_users_and_the_new_version() {
        let e = write(IMPERSONATED_PATCH);
        assert_eq!(e.verb, Verb::Patch);
        assert_eq!(e.who.user, "alice@example.com");
        assert_eq!(e.who.impersonated_by.as_deref(), Some("krply-admin"));
        assert_eq!(
            e.who.user_agent.as_deref(),
            Some("kubectl/v1.37.2 (linux/amd64) kubernetes/$Format")
        );
        assert_eq!(e.who.source_ips, ["127.0.0.1"]);
        assert_eq!(
            (e.group.as_str(), e.resource.as_str()),
            ("apps", "deployments")
        );
        assert_eq!((e.namespace.as_str(), e.name.as_str()), ("aud", "web"));
        assert_eq!(e.resource_version.as_deref(), Some("280"));
        assert_eq!(
            e.uid.as_deref(),
            Some("a2cb786e-6fb2-43ad-8742-70d05a439f89")
        );
        assert_eq!(e.at, 1_796_121_711_509);
    }

    #[test]
    fn a_delete_answered_with_a_status_has_no_version() {
        let e = write(DELETE);
        assert_eq!(e.verb, Verb::Delete);
        assert_eq!(e.who.user, "krply-admin");
        assert_eq!(e.who.impersonated_by, None);
        assert_eq!(e.resource_version, None);
        assert_eq!(e.uid, None);
        assert_eq!(e.group, "");
    }

    #[test]
    fn reads_refusals_and_other_stages_are_not_writes() {
        let with = |from: &str, to: &str| IMPERSONATED_PATCH.replacen(from, to, 1);
        let skip = |line: String| match parse_line(line.as_bytes()).unwrap() {
            Line::Other { why, at } => {
                assert_eq!(at, Some(1_796_121_711_509));
                why
            }
            other => panic!("{other:?}"),
        };
        assert_eq!(
            skip(with(r#""verb":"patch""#, r#""verb":"get""#)),
            Skip::NotAWrite
        );
        assert_eq!(
            skip(with(
                r#""stage":"ResponseComplete""#,
                r#""stage":"ResponseStarted""#
            )),
            Skip::NotComplete
        );
        assert_eq!(skip(with(r#""code":200"#, r#""code":409"#)), Skip::Failed);
        assert_eq!(
            skip(
                with(r#""name":"web","apiGroup""#, r#""apiGroup""#).replacen(
                    r#""metadata":{"name":"web","#,
                    r#""metadata":{"#,
                    1
                )
            ),
            Skip::NoObject
        );
    }

    #[test]
    fn a_generated_name_comes_from_the_response() {
        let line = IMPERSONATED_PATCH
            .replacen(r#""name":"web","apiGroup""#, r#""apiGroup""#, 1)
            .replacen(r#""verb":"patch""#, r#""verb":"create""#, 1);
        let e = write(&line);
        assert_eq!(e.name, "web");
        assert_eq!(e.verb, Verb::Create);
    }

    #[test]
    fn other_json_is_not_an_audit_event() {
        assert!(matches!(
            parse_line(br#"{"kind":"Deployment","apiVersion":"apps/v1"}"#),
            Err(LineError::NotAuditEvent { .. })
        ));
        assert!(matches!(
            parse_line(
                IMPERSONATED_PATCH
                    .replace("audit.k8s.io/v1", "audit.k8s.io/v1beta1")
                    .as_bytes()
            ),
            Err(LineError::NotAuditEvent { .. })
        ));
        assert!(matches!(
            parse_line(b"I1201 10:41:51 started"),
            Err(LineError::NotJson(_))
        ));
        let cut = &IMPERSONATED_PATCH[..IMPERSONATED_PATCH.len() / 2];
        assert!(matches!(
            parse_line(cut.as_bytes()),
            Err(LineError::NotJson(_))
        ));
        assert!(matches!(
            parse_line(
                IMPERSONATED_PATCH
                    .replace("2026-12-01T10:41:51.509518Z", "yesterday")
                    .as_bytes()
            ),
            Err(LineError::Bad { .. })
        ));
    }
}
