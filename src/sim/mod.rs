//! A Kubernetes API server simulator on 127.0.0.1 (DESIGN §7).
//!
//! This commit holds the model: the resource catalogue, the store with its
//! global resourceVersion and history windows, the write pipeline
//! (preconditions, managedFields, defaulting, dry runs), selectors, patches,
//! continue tokens and tables. The HTTP server comes next.
#![allow(dead_code)]

mod b64;
mod catalog;
mod defaults;
mod error;
mod history;
mod ids;
mod keyed_lists;
mod lifecycle;
mod managed;
mod paging;
mod patch;
mod scale;
mod selector;
mod store;
mod table;
mod validate;
mod write;
