//! A Kubernetes API server simulator on 127.0.0.1 (DESIGN §7).
