//! The integration tests: one test binary, a module per area. They drive the
//! real `kubectl-krply` binary against the built-in simulator and against a
//! real control plane (kube-apiserver, etcd, kube-controller-manager) built
//! from Kubernetes' own Go modules (`tests/realkube`, see `real/mod.rs`).

mod common;

mod access;
mod audit;
mod browse;
mod cli_errors;
mod demo;
mod help;
mod history;
mod import;
mod journal_layouts;
mod krew;
mod live;
mod mcp;
mod readers;
mod readme;
mod real;
mod record;
mod replay;
mod retention;
mod segments;
mod sim_api;
mod sim_kubectl;
mod sim_ssa;
mod timeline_long;
mod transcript;
mod troubleshooting;
mod truth;
