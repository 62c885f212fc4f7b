//! kubectl-compatible kubeconfig loading, offline.
//!
//! kubectl's rules, which kube's own loader does not all follow:
//! `--kubeconfig FILE` loads that file only; otherwise every path in `KUBECONFIG`
//! (`:`-separated, `;` on Windows) that exists is merged, first one wins, and
//! missing files are skipped; otherwise `~/.kube/config` if it exists.

use super::ClusterError;
use kube::config::Kubeconfig;
use std::path::{Path, PathBuf};

/// The merged kubeconfig and the files it came from.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub config: Kubeconfig,
    pub sources: Vec<PathBuf>,
}

/// Loads the kubeconfig as kubectl would. `Ok(None)`: there is none.
pub fn load(explicit: Option<&Path>) -> Result<Option<Loaded>, ClusterError> {
    if let Some(path) = explicit {
        let config = read(path)?;
        return Ok(Some(Loaded {
            config,
            sources: vec![path.to_path_buf()],
        }));
    }
    let candidates: Vec<PathBuf> = match std::env::var_os("KUBECONFIG") {
        Some(list) if !list.is_empty() => std::env::split_paths(&list)
            .filter(|p| !p.as_os_str().is_empty())
            .collect(),
        _ => home_config().into_iter().collect(),
    };
    let mut merged: Option<Kubeconfig> = None;
    let mut sources = Vec::new();
    for path in candidates {
        if !path.exists() {
            continue;
        }
        let next = read(&path)?;
        merged = Some(match merged {
            None => next,
            Some(first) => first.merge(next).map_err(|e| ClusterError::Kubeconfig {
                path: path.clone(),
                detail: e.to_string(),
            })?,
        });
        sources.push(path);
    }
    Ok(merged.map(|config| Loaded { config, sources }))
}

/// Paths kubectl would have looked at, for error messages.
pub fn looked_at(explicit: Option<&Path>) -> Vec<PathBuf> {
    if let Some(p) = explicit {
        return vec![p.to_path_buf()];
    }
    match std::env::var_os("KUBECONFIG") {
        Some(list) if !list.is_empty() => std::env::split_paths(&list)
            .filter(|p| !p.as_os_str().is_empty())
            .collect(),
        _ => home_config().into_iter().collect(),
    }
}

fn home_config() -> Option<PathBuf> {
    std::env::home_dir().map(|h| h.join(".kube").join("config"))
}

fn read(path: &Path) -> Result<Kubeconfig, ClusterError> {
    refuse_broken_utf16(path)?;
    Kubeconfig::read_from(path).map_err(|e| ClusterError::Kubeconfig {
        path: path.to_path_buf(),
        detail: describe(&e),
    })
}

/// kube's reader decodes a file that starts with a UTF-16 byte-order mark two bytes
/// at a time, and panics when an odd byte is left over (kube-client 5.0,
/// `file_config::read_path`; found by the kubeconfig fuzz target). Such a file is
/// refused here first, with the error any unreadable kubeconfig gets.
fn refuse_broken_utf16(path: &Path) -> Result<(), ClusterError> {
    use std::io::Read;
    let Ok(mut file) = std::fs::File::open(path) else {
        // kube's reader says why it cannot be opened.
        return Ok(());
    };
    let mut bom = [0u8; 2];
    let utf16 = file.read_exact(&mut bom).is_ok() && matches!(bom, [0xFF, 0xFE] | [0xFE, 0xFF]);
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if utf16 && len % 2 == 1 {
        return Err(ClusterError::Kubeconfig {
            path: path.to_path_buf(),
            detail: "it starts with a UTF-16 byte-order mark but has an odd number of bytes".into(),
        });
    }
    Ok(())
}

fn describe(e: &kube::config::KubeconfigError) -> String {
    super::describe_chain(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_utf16_kubeconfig_cut_mid_character_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config");
        let mut bytes = vec![0xFF, 0xFE];
        for b in "apiVersion: v1\nkind: Config\n".bytes() {
            bytes.extend([b, 0]);
        }
        std::fs::write(&path, &bytes).unwrap();
        assert!(load(Some(&path)).is_ok(), "whole UTF-16 reads");
        bytes.push(b'x');
        std::fs::write(&path, &bytes).unwrap();
        let Err(err) = load(Some(&path)) else {
            panic!("a cut UTF-16 kubeconfig was read")
        };
        assert!(err.to_string().contains("odd number of bytes"), "{err}");
    }

    fn write(dir: &Path, name: &str, context: &str, server: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(
            &path,
            format!(
                "apiVersion: v1\nkind: Config\ncurrent-context: {context}\nclusters:\n- name: {context}\n  cluster:\n    server: {server}\ncontexts:\n- name: {context}\n  context:\n    cluster: {context}\n    user: u\n    namespace: ns-{context}\nusers:\n- name: u\n  user:\n    token: t\n"
            ),
        )
        .unwrap();
        path
    }

    #[test]
    fn explicit_file_only_and_missing_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let a = write(dir.path(), "a", "alpha", "https://a");
        let loaded = load(Some(&a)).unwrap().unwrap();
        assert_eq!(loaded.config.current_context.as_deref(), Some("alpha"));
        let err = load(Some(&dir.path().join("nope"))).unwrap_err();
        assert!(matches!(err, ClusterError::Kubeconfig { .. }), "{err}");
    }
}
