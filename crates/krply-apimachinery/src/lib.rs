//! What kubectl-krply and its simulator (krply-sim) both know of the Kubernetes
//! API, in the spirit of k8s.io/apimachinery: label and field selectors, which
//! item of a list is which, resource types, the annotations the server writes,
//! UIDs, kubectl's ages and the columns `kubectl get` prints. Pure: no IO, no async.
//!
//! One statement of each, so that the product's answers and the simulator that
//! tests them cannot drift apart (docs/architecture.md, "The workspace").

pub mod annotations;
pub mod duration;
pub mod lists;
pub mod printers;
pub mod resource;
pub mod selector;
pub mod uid;

pub use resource::ResourceType;
