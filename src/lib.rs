//! kubectl-krply: a truthful, local history of Kubernetes objects.
//!
//! The binary (`src/main.rs`) is a thin shell over this library so that
//! integration tests and benchmarks can reach the same code paths.

pub mod cluster;
pub mod diff;
pub mod journal;
pub mod model;
pub mod sim;
pub mod time;
