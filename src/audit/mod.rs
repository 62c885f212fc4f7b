//! Who did it: kube-apiserver audit logs (docs/audit.md).
//!
//! - [`parse`] reads `audit.k8s.io/v1` `Event` lines, keeping only what the
//!   join needs: never a request or response body.
//! - [`read`] reads audit log files: plain, rotated or gzip.
//! - [`join`] decides which audit event made which recorded change: exact by
//!   resourceVersion, likely by object and time when only one candidate fits,
//!   unknown otherwise.

pub mod join;
pub mod parse;
pub mod read;

pub use parse::{AuditEvent, Verb, Who};

pub use krply_apimachinery::uid::uuid_text;

/// How sure an attribution is (docs/audit.md, "The join").
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Match {
    /// The audit event's response carried the recorded version's resourceVersion.
    Exact,
    /// The only write on that object, by that verb, close to the event's time.
    Likely,
}

impl Match {
    pub fn as_str(self) -> &'static str {
        match self {
            Match::Exact => "exact",
            Match::Likely => "likely",
        }
    }
}

/// Who made a recorded change, as the audit log says (JSON: `actor`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Actor {
    /// The user the change was made as: the impersonated user when there was one.
    pub user: String,
    pub groups: Vec<String>,
    /// The user who impersonated `user` (`kubectl --as`), if anyone did.
    pub impersonated_by: Option<String>,
    pub user_agent: Option<String>,
    pub source_ips: Vec<String>,
    pub audit_id: String,
    #[serde(rename = "match")]
    pub matched: Match,
}

impl Actor {
    /// `alice@example.com`, or `likely alice@example.com` for a likely match.
    pub fn label(&self) -> String {
        match self.matched {
            Match::Exact => self.user.clone(),
            Match::Likely => format!("likely {}", self.user),
        }
    }

    /// Whether `--by USER` names this actor: the user the change was made as
    /// (with impersonation, the impersonated user, as Kubernetes authorizes it).
    pub fn is(&self, user: &str) -> bool {
        self.user == user
    }
}

/// Why a change has no actor although the journal holds audit data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unknown {
    /// No imported audit log covers the time of the change.
    NotCovered,
    /// The audit log covers the time, and no audit event fits the change
    /// (the audit policy may leave such writes out).
    NoMatch,
    /// Several audit events fit the change equally: krply does not guess.
    Ambiguous,
}

impl Unknown {
    pub fn as_str(self) -> &'static str {
        match self {
            Unknown::NotCovered => "the audit log does not cover this time",
            Unknown::NoMatch => "no audit event matched",
            Unknown::Ambiguous => "several audit events matched",
        }
    }
}

/// What the audit log says about one recorded change: an actor, or why not.
#[derive(Debug, Clone, PartialEq)]
pub enum Attribution {
    Known(Actor),
    Unknown(Unknown),
}

impl Attribution {
    pub fn actor(&self) -> Option<&Actor> {
        match self {
            Attribution::Known(a) => Some(a),
            Attribution::Unknown(_) => None,
        }
    }
}

/// What the audit logs say about a change, ready for answers: the actor, or
/// why it is not known (`None` when no audit log of the cluster was imported).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct By {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actor: Option<Actor>,
    /// Why `actor` is missing although audit logs were imported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actor_unknown: Option<Unknown>,
}

impl By {
    pub fn of(a: Option<&Attribution>) -> By {
        match a {
            Some(Attribution::Known(actor)) => By {
                actor: Some(actor.clone()),
                actor_unknown: None,
            },
            Some(Attribution::Unknown(why)) => By {
                actor: None,
                actor_unknown: Some(*why),
            },
            None => By::default(),
        }
    }

    /// Whether `--by USER` keeps this change.
    pub fn is(&self, user: &str) -> bool {
        self.actor.as_ref().is_some_and(|a| a.is(user))
    }

    /// `by alice (kubectl-edit)`, `likely by alice (kubectl-edit)`, or the
    /// manager alone (`(kubectl-edit)`) with why the actor is unknown.
    pub fn text(&self, manager: Option<&str>) -> Option<String> {
        let manager = manager.map(|m| format!(" ({m})")).unwrap_or_default();
        match (&self.actor, self.actor_unknown) {
            (Some(a), _) => Some(match a.matched {
                Match::Exact => format!("by {}{manager}", a.user),
                Match::Likely => format!("likely by {}{manager}", a.user),
            }),
            (None, Some(why)) => Some(format!("by ?{manager}: {}", why.as_str())),
            (None, None) => None,
        }
    }
}
