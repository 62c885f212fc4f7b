//! What a reader answers about: which recorded cluster (docs/output.md: the selected
//! context's cluster, resolved offline; else the only one; or `--cluster-id`)
//! and which namespace (`-n`, else the context's, else `default`; `-A`: all).

use super::args::GlobalArgs;
use crate::cluster::{ClusterError, resolve_target};
use crate::error::{CliError, CliResult};
use crate::journal::Journal;
use crate::journal::read::ClusterInfo;

/// An open journal and what the question is about.
pub struct Reader {
    pub journal: Journal,
    pub cluster: ClusterInfo,
    /// `None` with `-A`.
    pub namespace: Option<String>,
}

impl Reader {
    pub fn open(global: &GlobalArgs) -> CliResult<Reader> {
        let journal = Journal::open(&global.store_path()?)?;
        let cluster = select_cluster(&journal, global)?;
        let namespace = if global.all_namespaces {
            None
        } else {
            Some(match &global.namespace {
                Some(ns) => ns.clone(),
                None => resolve_target(&global.connect_options()?)
                    .map(|t| t.namespace)
                    .unwrap_or_else(|_| "default".into()),
            })
        };
        Ok(Reader {
            journal,
            cluster,
            namespace,
        })
    }

    /// The history of the selected cluster, as of now.
    pub fn history(&self) -> CliResult<crate::history::History<'_>> {
        Ok(crate::history::History::load(
            &self.journal,
            &self.cluster.id,
            crate::time::Millis::now().as_ms(),
        )?)
    }
}

pub fn select_cluster(journal: &Journal, global: &GlobalArgs) -> CliResult<ClusterInfo> {
    pick_cluster(journal, &journal.clusters()?, global)
}

/// The cluster `status` shows the coverage of. `status` is about the
/// journal: when it holds one cluster there is nothing to choose, and the
/// kubeconfig is not read (a seventh of `status`'s time, for nothing); with
/// several, the one a reader would answer about, if any.
pub fn status_cluster(
    journal: &Journal,
    clusters: &[ClusterInfo],
    global: &GlobalArgs,
) -> Option<ClusterInfo> {
    match clusters {
        [only] if global.cluster_id.is_none() => Some(only.clone()),
        _ => pick_cluster(journal, clusters, global).ok(),
    }
}

/// [`select_cluster`] among `clusters`, the journal's.
fn pick_cluster(
    journal: &Journal,
    clusters: &[ClusterInfo],
    global: &GlobalArgs,
) -> CliResult<ClusterInfo> {
    let listing = || {
        clusters
            .iter()
            .map(|c| format!("{} ({})", c.id, c.server))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if clusters.is_empty() {
        return Err(CliError::runtime(format!(
            "the journal {} holds no recording yet",
            journal.path().display()
        ))
        .hint("run `kubectl krply record` first"));
    }
    if let Some(id) = &global.cluster_id {
        return clusters
            .iter()
            .find(|c| &c.id == id)
            .cloned()
            .ok_or_else(|| {
                CliError::runtime(format!("no cluster \"{id}\" in the journal"))
                    .hint(format!("recorded clusters: {}", listing()))
            });
    }
    match resolve_target(&global.connect_options()?) {
        Ok(target) => clusters
            .iter()
            .find(|c| c.id == target.cluster_id)
            .cloned()
            .ok_or_else(|| {
                let context = target
                    .context
                    .as_deref()
                    .map(|c| format!(" of context \"{c}\""))
                    .unwrap_or_default();
                CliError::runtime(format!(
                    "nothing recorded for {} ({}){context}",
                    target.cluster_id, target.server
                ))
                .hint(format!(
                    "recorded clusters: {}; pick one with --cluster-id",
                    listing()
                ))
            }),
        Err(ClusterError::NoConfiguration { .. }) if clusters.len() == 1 => Ok(clusters[0].clone()),
        Err(ClusterError::NoConfiguration { .. }) => Err(CliError::runtime(
            "the journal holds several clusters and no kubeconfig selects one",
        )
        .hint(format!("pick one with --cluster-id: {}", listing()))),
        Err(e) => Err(e.into()),
    }
}
