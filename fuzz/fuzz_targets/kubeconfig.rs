//! kubeconfig files: `krply::cluster::kubeconfig::load` (kube's reader: BOMs, UTF-16,
//! multi-document YAML, relative paths) and `krply::cluster::resolve_target`, which
//! picks the context, cluster, user and namespace and applies kubectl's flags offline.
//!
//! Input: the bytes of the kubeconfig file. The library reads kubeconfigs only from
//! paths, so each input is written to one scratch file per process (under `TMPDIR`).
//!
//! Properties: no panic; a resolved target has a server, a namespace, and the cluster
//! ID of its server.

#![no_main]

use std::path::PathBuf;
use std::sync::LazyLock;

use krply::cluster::kubeconfig::load;
use krply::cluster::{ConnectOptions, id, resolve_target};
use libfuzzer_sys::fuzz_target;

static SCRATCH: LazyLock<PathBuf> = LazyLock::new(|| {
    std::env::temp_dir().join(format!("krply-fuzz-kubeconfig-{}", std::process::id()))
});

fuzz_target!(|data: &[u8]| {
    let path = SCRATCH.clone();
    std::fs::write(&path, data).expect("write the scratch kubeconfig");

    let _ = load(Some(&path));

    let plain = ConnectOptions {
        kubeconfig: Some(path.clone()),
        ..ConnectOptions::default()
    };
    let flags = [
        plain.clone(),
        // --context/--cluster/--user naming entries that may or may not exist.
        ConnectOptions {
            context: Some("alpha".into()),
            cluster: Some("alpha".into()),
            user: Some("u".into()),
            insecure_skip_tls_verify: true,
            ..plain.clone()
        },
        // --server and credentials from flags only.
        ConnectOptions {
            server: Some("https://flag.example:6443".into()),
            token: Some("t".into()),
            impersonate: Some("jane".into()),
            impersonate_groups: vec!["devs".into()],
            certificate_authority: Some("ca.crt".into()),
            ..plain
        },
    ];
    for opts in &flags {
        if let Ok(target) = resolve_target(opts) {
            assert!(!target.server.is_empty(), "{target:?}");
            assert!(!target.namespace.is_empty(), "{target:?}");
            assert_eq!(target.cluster_id, id::cluster_id(&target.server));
        }
    }
    let _ = std::fs::remove_file(&path);
});
