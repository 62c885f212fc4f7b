//! Which recorded cluster a reader answers about (CONTRACT: the selected
//! context's cluster, resolved offline; else the only one; or `--cluster-id`).

use super::args::GlobalArgs;
use crate::cluster::{ClusterError, resolve_target};
use crate::error::{CliError, CliResult};
use crate::journal::Journal;
use crate::journal::read::ClusterInfo;

pub fn select_cluster(journal: &Journal, global: &GlobalArgs) -> CliResult<ClusterInfo> {
    let clusters = journal.clusters()?;
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
