//! `TYPE` and `TYPE/NAME` arguments resolved offline, from the journal's own
//! stream metadata (plural, singular, short names and kinds as discovery gave
//! them when the stream was recorded), so no cluster is needed to ask.

use super::History;
use crate::cluster::discovery::{ResolveError, resolve};
use crate::model::ResourceType;

/// What one argument names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Type(ResourceType),
    Object(ResourceType, String),
}

impl Target {
    pub fn resource(&self) -> &ResourceType {
        match self {
            Target::Type(t) | Target::Object(t, _) => t,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    #[error(
        "malformed resource argument \"{0}\": use TYPE or TYPE/NAME, like deploy or deploy/frontend"
    )]
    Malformed(String),
    #[error("no recorded resource type \"{arg}\" (recorded: {recorded})")]
    Unknown {
        arg: String,
        recorded: String,
        /// The recorded name closest to `arg`, if one is close.
        suggestion: Option<String>,
    },
    #[error("resource type \"{arg}\" is ambiguous: it could be {}", candidates.join(", "))]
    Ambiguous {
        arg: String,
        candidates: Vec<String>,
    },
}

impl TargetError {
    /// A hint for the user: the name they probably meant.
    pub fn hint(&self) -> Option<String> {
        match self {
            TargetError::Unknown {
                suggestion: Some(s),
                ..
            } => Some(format!("did you mean \"{s}\"?")),
            _ => None,
        }
    }
}

/// Splits `TYPE/NAME` (or `TYPE`) as kubectl does.
pub fn split(arg: &str) -> Result<(&str, Option<&str>), TargetError> {
    let malformed = || TargetError::Malformed(arg.to_string());
    match arg.split_once('/') {
        None if !arg.trim().is_empty() => Ok((arg, None)),
        None => Err(malformed()),
        Some((t, n)) if !t.is_empty() && !n.is_empty() && !n.contains('/') => Ok((t, Some(n))),
        Some(_) => Err(malformed()),
    }
}

impl History<'_> {
    /// Resolves `TYPE` or `TYPE/NAME` against the types recorded for this cluster.
    pub fn target(&self, arg: &str) -> Result<Target, TargetError> {
        let (type_arg, name) = split(arg)?;
        let types = self.recorded_types();
        let resource = resolve(&types, type_arg).map_err(|e| match e {
            ResolveError::Unknown(_) => {
                let mut recorded: Vec<String> = types.iter().map(|t| t.group_resource()).collect();
                recorded.sort();
                let names = types.iter().flat_map(|t| {
                    [t.resource.as_str(), t.singular.as_str(), t.kind.as_str()]
                        .into_iter()
                        .chain(t.short_names.iter().map(String::as_str))
                });
                let suggestion = super::suggest::closest(type_arg, names).map(|s| {
                    // Kinds are suggested as kubectl users type them.
                    s.to_ascii_lowercase()
                });
                TargetError::Unknown {
                    suggestion,
                    arg: type_arg.to_string(),
                    recorded: if recorded.is_empty() {
                        "none".into()
                    } else {
                        recorded.join(", ")
                    },
                }
            }
            ResolveError::Ambiguous { arg, candidates } => {
                TargetError::Ambiguous { arg, candidates }
            }
        })?;
        Ok(match name {
            Some(n) => Target::Object(resource.clone(), n.to_string()),
            None => Target::Type(resource.clone()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_like_kubectl() {
        assert_eq!(split("deploy").unwrap(), ("deploy", None));
        assert_eq!(
            split("deploy/frontend").unwrap(),
            ("deploy", Some("frontend"))
        );
        for bad in ["", "/x", "deploy/", "a/b/c", " "] {
            assert!(split(bad).is_err(), "{bad:?}");
        }
    }
}
