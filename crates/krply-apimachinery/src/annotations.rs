//! Annotations the API server and its controllers write on their own.

/// The annotation the Deployment controller bumps on every rollout.
pub const REVISION: &str = "deployment.kubernetes.io/revision";

/// The annotation kube-apiserver sets on a DaemonSet and bumps with every new
/// pod template.
pub const TEMPLATE_GENERATION: &str = "deprecated.daemonset.template.generation";

/// The annotation `kubectl apply` (client-side) writes with the whole applied manifest.
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
