//! A kubeconfig that points kubectl (or kube-rs) at the simulator: one
//! cluster, user and context, with the CA embedded as
//! `certificate-authority-data` and the bearer token when set.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

/// Names and overrides of a generated kubeconfig.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeconfigOptions {
    /// Context name (also the current context). Default `krply-sim`.
    pub context: String,
    /// Cluster name. Default `krply-sim`.
    pub cluster: String,
    /// User name. Default `krply-sim-user`.
    pub user: String,
    /// The context's namespace; `None` leaves it out (kubectl then uses `default`).
    pub namespace: Option<String>,
    /// A token to write instead of the simulator's (e.g. a wrong one, to test
    /// 401 handling). `None`: the simulator's token, if it has one.
    pub token: Option<String>,
    /// Authenticate with the simulator's client certificate instead of a token
    /// (needs TLS).
    pub client_certificate: bool,
}

impl Default for KubeconfigOptions {
    fn default() -> Self {
        KubeconfigOptions {
            context: "krply-sim".into(),
            cluster: "krply-sim".into(),
            user: "krply-sim-user".into(),
            namespace: None,
            token: None,
            client_certificate: false,
        }
    }
}

/// A YAML string: JSON string syntax is valid YAML double-quoted scalar syntax.
fn q(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

pub(crate) fn render(
    server: &str,
    ca_pem: Option<&str>,
    token: Option<&str>,
    client: Option<&(String, String)>,
    o: &KubeconfigOptions,
) -> String {
    let mut out = String::from("apiVersion: v1\nkind: Config\nclusters:\n");
    out += &format!(
        "- name: {}\n  cluster:\n    server: {}\n",
        q(&o.cluster),
        q(server)
    );
    if let Some(ca) = ca_pem {
        out += &format!(
            "    certificate-authority-data: {}\n",
            q(&STANDARD.encode(ca))
        );
    }
    out += &format!(
        "contexts:\n- name: {}\n  context:\n    cluster: {}\n    user: {}\n",
        q(&o.context),
        q(&o.cluster),
        q(&o.user)
    );
    if let Some(ns) = &o.namespace {
        out += &format!("    namespace: {}\n", q(ns));
    }
    out += &format!(
        "current-context: {}\nusers:\n- name: {}\n",
        q(&o.context),
        q(&o.user)
    );
    match (client, o.token.as_deref().or(token)) {
        (Some((cert, key)), _) => {
            out += &format!(
                "  user:\n    client-certificate-data: {}\n    client-key-data: {}\n",
                q(&STANDARD.encode(cert)),
                q(&STANDARD.encode(key))
            )
        }
        (None, Some(t)) => out += &format!("  user:\n    token: {}\n", q(t)),
        (None, None) => out += "  user: {}\n",
    }
    out += "preferences: {}\n";
    out
}

/// Writes the file, readable by its owner only (it may hold a token).
pub(crate) fn write(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts.open(path)?;
    f.write_all(text.as_bytes())?;
    f.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_tls_and_token() {
        let o = KubeconfigOptions {
            namespace: Some("shop".into()),
            ..Default::default()
        };
        let y = render(
            "https://127.0.0.1:1234",
            Some("PEM"),
            Some("s3cret"),
            None,
            &o,
        );
        assert!(y.contains("server: \"https://127.0.0.1:1234\""));
        assert!(y.contains("certificate-authority-data: \"UEVN\""));
        assert!(y.contains("token: \"s3cret\""));
        assert!(y.contains("namespace: \"shop\""));
        assert!(y.contains("current-context: \"krply-sim\""));
        let y = render(
            "http://127.0.0.1:1",
            None,
            None,
            None,
            &KubeconfigOptions::default(),
        );
        assert!(y.contains("user: {}"));
        assert!(!y.contains("certificate-authority-data"));
        let pair = ("CERT".to_string(), "KEY".to_string());
        let y = render("https://x", Some("PEM"), Some("s3cret"), Some(&pair), &o);
        assert!(y.contains("client-certificate-data: \"Q0VSVA==\""));
        assert!(y.contains("client-key-data: \"S0VZ\""));
        assert!(!y.contains("token:"));
    }
}
