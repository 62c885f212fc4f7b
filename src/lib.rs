//! kubectl-krply: a truthful, local history of Kubernetes objects.
//!
//! The binary (`src/main.rs`) is a thin shell over this library so that
//! integration tests and benchmarks can reach the same code paths.

pub mod audit;
pub mod audit_import;
pub mod browse;
pub mod cli;
pub mod cluster;
#[cfg(feature = "demo")]
pub mod demo;
pub mod diff;
pub mod error;
pub mod history;
pub mod journal;
pub mod model;
pub mod recorder;
pub mod render;
pub mod replay;
pub mod segments;
pub use krply_apimachinery::selector;
pub mod time;
