//! Resource discovery and kubectl-style resource names.
//!
//! [`resolve`] is pure: it maps what a user typed (`deploy`, `deployments.apps`,
//! `cm`, `widgets.example.com`, `Deployment`) onto a list of known resources,
//! whether they came from the live server ([`Catalog::discover`]) or from the
//! journal's own stream metadata when offline.

use super::{ClusterAccess, ClusterError, describe_chain};
use crate::model::ResourceType;
use futures::future::join_all;

/// A resource the server serves, with what it allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovered {
    pub resource: ResourceType,
    pub verbs: Vec<String>,
}

impl Discovered {
    pub fn can_watch(&self) -> bool {
        self.verbs.iter().any(|v| v == "list") && self.verbs.iter().any(|v| v == "watch")
    }
}

/// Everything the server serves at its preferred versions.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    pub resources: Vec<Discovered>,
    /// Groups that could not be read (an aggregated API that is down, say).
    pub warnings: Vec<String>,
}

/// Why a name did not resolve.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    #[error("the server doesn't have a resource type \"{0}\"")]
    Unknown(String),
    #[error("resource type \"{arg}\" is ambiguous: it could be {}", candidates.join(", "))]
    Ambiguous {
        arg: String,
        candidates: Vec<String>,
    },
}

impl Catalog {
    /// Reads `/api/v1` and the preferred version of every group in `/apis`.
    pub async fn discover(access: &ClusterAccess) -> Result<Catalog, ClusterError> {
        let client = &access.client;
        let core = with_timeout(access, client.list_core_api_resources("v1")).await?;
        let groups = with_timeout(access, client.list_api_groups()).await?;
        let mut catalog = Catalog::default();
        add_list(&mut catalog, "", "v1", core.resources);
        let versions: Vec<(String, String)> = groups
            .groups
            .iter()
            .filter_map(|g| {
                let v = g
                    .preferred_version
                    .as_ref()
                    .map(|p| p.version.clone())
                    .or_else(|| g.versions.first().map(|v| v.version.clone()))?;
                Some((g.name.clone(), v))
            })
            .collect();
        let lists = join_all(versions.iter().map(|(g, v)| {
            let gv = format!("{g}/{v}");
            async move { with_timeout(access, client.list_api_group_resources(&gv)).await }
        }))
        .await;
        for ((group, version), list) in versions.into_iter().zip(lists) {
            match list {
                Ok(list) => add_list(&mut catalog, &group, &version, list.resources),
                Err(e) => catalog.warnings.push(format!(
                    "couldn't get resource list for {group}/{version}: {e}"
                )),
            }
        }
        Ok(catalog)
    }

    pub fn types(&self) -> Vec<ResourceType> {
        self.resources.iter().map(|d| d.resource.clone()).collect()
    }

    /// Resolves a kubectl resource name to a discovered resource.
    pub fn resolve(&self, arg: &str) -> Result<&Discovered, ResolveError> {
        let types = self.types();
        let found = resolve(&types, arg)?;
        self.resources
            .iter()
            .find(|d| &d.resource == found)
            .ok_or_else(|| ResolveError::Unknown(arg.to_string()))
    }
}

async fn with_timeout<T>(
    access: &ClusterAccess,
    fut: impl std::future::Future<Output = Result<T, kube::Error>>,
) -> Result<T, ClusterError> {
    let result = match access.request_timeout {
        Some(t) => tokio::time::timeout(t, fut)
            .await
            .map_err(|_| ClusterError::Timeout {
                server: access.target.server.clone(),
                timeout: t,
            })?,
        None => fut.await,
    };
    result.map_err(|e| classify(access, e))
}

/// Turns a kube error into what the user needs to hear.
pub fn classify(access: &ClusterAccess, e: kube::Error) -> ClusterError {
    let server = access.target.server.clone();
    if super::plugin_failure(&e).is_some() {
        return super::config_error(&access.target, &e);
    }
    match e {
        kube::Error::Api(status) if status.code == 401 => ClusterError::Unauthorized {
            server,
            detail: status.message.clone(),
        },
        kube::Error::Api(status) => ClusterError::Api(format!(
            "{} ({} {})",
            status.message, status.code, status.reason
        )),
        other => match super::certificate_problem(&other) {
            Some(problem) => ClusterError::UntrustedCertificate { server, problem },
            None => ClusterError::Unreachable {
                server,
                detail: describe_chain(&other),
            },
        },
    }
}

fn add_list(
    catalog: &mut Catalog,
    group: &str,
    version: &str,
    resources: Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResource>,
) {
    for r in resources {
        if r.name.contains('/') {
            continue; // subresource
        }
        catalog.resources.push(Discovered {
            resource: ResourceType {
                group: group.to_string(),
                version: version.to_string(),
                singular: if r.singular_name.is_empty() {
                    r.kind.to_ascii_lowercase()
                } else {
                    r.singular_name.clone()
                },
                resource: r.name,
                kind: r.kind,
                short_names: r.short_names.unwrap_or_default(),
                namespaced: r.namespaced,
            },
            verbs: r.verbs,
        });
    }
}

/// How strongly a resource answers to a name: plural beats singular and kind,
/// which beat a short name.
fn strength(r: &ResourceType, name: &str) -> Option<u8> {
    if r.resource == name {
        Some(3)
    } else if r.singular == name || r.kind.eq_ignore_ascii_case(name) {
        Some(2)
    } else if r.short_names.iter().any(|s| s == name) {
        Some(1)
    } else {
        None
    }
}

/// Built-in groups win over extension groups, the core group over all.
fn group_rank(group: &str) -> u8 {
    if group.is_empty() {
        0
    } else if !group.contains('.') || group.ends_with(".k8s.io") {
        1
    } else {
        2
    }
}

/// Resolves `arg` (`NAME`, `NAME.GROUP` or `NAME.VERSION.GROUP`, case-insensitive)
/// among `types` the way kubectl does.
pub fn resolve<'a>(types: &'a [ResourceType], arg: &str) -> Result<&'a ResourceType, ResolveError> {
    let lower = arg.trim().to_ascii_lowercase();
    if lower.is_empty() || lower.contains('/') || lower.contains(char::is_whitespace) {
        return Err(ResolveError::Unknown(arg.to_string()));
    }
    let (name, qualifier) = match lower.split_once('.') {
        Some((n, q)) => (n, Some(q)),
        None => (lower.as_str(), None),
    };
    let mut best: Vec<(&ResourceType, u8)> = types
        .iter()
        .filter(|r| match qualifier {
            None => true,
            Some(q) => r.group == q || format!("{}.{}", r.version, r.group) == q,
        })
        .filter_map(|r| strength(r, name).map(|s| (r, s)))
        .collect();
    // A qualifier may also be part of a kind-less dotted name that only the
    // whole string matches (rare), so fall back to the whole argument.
    if best.is_empty() && qualifier.is_some() {
        best = types
            .iter()
            .filter_map(|r| strength(r, &lower).map(|s| (r, s)))
            .collect();
    }
    let Some(top) = best
        .iter()
        .map(|(r, s)| (*s, std::cmp::Reverse(group_rank(&r.group))))
        .max()
    else {
        return Err(ResolveError::Unknown(arg.to_string()));
    };
    let winners: Vec<&ResourceType> = best
        .iter()
        .filter(|(r, s)| (*s, std::cmp::Reverse(group_rank(&r.group))) == top)
        .map(|(r, _)| *r)
        .collect();
    let mut groups: Vec<String> = winners.iter().map(|r| r.group_resource()).collect();
    groups.sort();
    groups.dedup();
    if groups.len() > 1 {
        return Err(ResolveError::Ambiguous {
            arg: arg.to_string(),
            candidates: groups,
        });
    }
    Ok(winners[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt(group: &str, resource: &str, kind: &str, short: &[&str]) -> ResourceType {
        ResourceType {
            group: group.into(),
            version: "v1".into(),
            resource: resource.into(),
            kind: kind.into(),
            singular: kind.to_ascii_lowercase(),
            short_names: short.iter().map(|s| s.to_string()).collect(),
            namespaced: true,
        }
    }

    fn types() -> Vec<ResourceType> {
        vec![
            rt("", "configmaps", "ConfigMap", &["cm"]),
            rt("apps", "deployments", "Deployment", &["deploy"]),
            rt("", "events", "Event", &["ev"]),
            rt("events.k8s.io", "events", "Event", &["ev"]),
            rt("example.com", "widgets", "Widget", &["wd"]),
            rt("other.io", "widgets", "Widget", &[]),
            rt("example.com", "deployments", "Deployment", &[]),
        ]
    }

    #[test]
    fn kubectl_forms_resolve() {
        let t = types();
        for arg in [
            "deploy",
            "deployment",
            "deployments",
            "Deployment",
            "deployments.apps",
            "deployments.v1.apps",
            "DEPLOY",
        ] {
            let r = resolve(&t, arg).unwrap();
            assert_eq!(
                (r.group.as_str(), r.resource.as_str()),
                ("apps", "deployments"),
                "{arg}"
            );
        }
        assert_eq!(resolve(&t, "cm").unwrap().resource, "configmaps");
        assert_eq!(resolve(&t, "events").unwrap().group, "");
        assert_eq!(
            resolve(&t, "events.events.k8s.io").unwrap().group,
            "events.k8s.io"
        );
        assert_eq!(
            resolve(&t, "widgets.example.com").unwrap().group,
            "example.com"
        );
        assert_eq!(resolve(&t, "wd").unwrap().group, "example.com");
        assert_eq!(
            resolve(&t, "deployments.example.com").unwrap().group,
            "example.com"
        );
    }

    #[test]
    fn unknown_and_ambiguous() {
        let t = types();
        assert_eq!(
            resolve(&t, "nope"),
            Err(ResolveError::Unknown("nope".into()))
        );
        assert!(matches!(
            resolve(&t, "widgets"),
            Err(ResolveError::Ambiguous { .. })
        ));
        assert!(matches!(
            resolve(&t, "deploy/x"),
            Err(ResolveError::Unknown(_))
        ));
        assert!(matches!(resolve(&t, ""), Err(ResolveError::Unknown(_))));
        assert_eq!(
            resolve(&t, "x").unwrap_err().to_string(),
            "the server doesn't have a resource type \"x\""
        );
    }
}
