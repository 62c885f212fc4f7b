//! Cluster access as kubectl does it: kubeconfig selection, connection flags,
//! credentials (tokens, client certificates, exec plugins), in-cluster fallback,
//! and the stable ID of the cluster reached.
//!
//! [`resolve_target`] works offline (readers use it to pick the recorded cluster);
//! [`connect`] builds the client for `record` and `replay`.

pub mod api;
mod client;
pub mod discovery;
pub mod id;
pub mod kubeconfig;
pub mod proxy;

use kube::config::{AuthInfo, Cluster, Context, KubeConfigOptions, Kubeconfig, NamedAuthInfo};
use kube::config::{NamedCluster, NamedContext};
use std::path::PathBuf;
use std::time::Duration;

/// kubectl's connection flags.
#[derive(Debug, Clone, Default)]
pub struct ConnectOptions {
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
    pub cluster: Option<String>,
    pub user: Option<String>,
    pub server: Option<String>,
    pub token: Option<String>,
    pub certificate_authority: Option<PathBuf>,
    pub insecure_skip_tls_verify: bool,
    pub impersonate: Option<String>,
    pub impersonate_groups: Vec<String>,
    /// Applies to every request but watches; `None` waits as long as it takes.
    pub request_timeout: Option<Duration>,
}

/// Why a cluster could not be reached or described.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("no kubeconfig found (looked at {looked}) and not running inside a cluster")]
    NoConfiguration { looked: String },
    #[error("cannot read kubeconfig {path}: {detail}")]
    Kubeconfig { path: PathBuf, detail: String },
    #[error("context \"{0}\" does not exist in the kubeconfig")]
    NoSuchContext(String),
    #[error("cluster \"{0}\" does not exist in the kubeconfig")]
    NoSuchCluster(String),
    #[error("user \"{0}\" does not exist in the kubeconfig")]
    NoSuchUser(String),
    #[error("the kubeconfig has no current context")]
    NoCurrentContext,
    #[error("cluster \"{0}\" has no server URL in the kubeconfig")]
    NoServer(String),
    #[error("invalid client configuration: {0}")]
    Config(String),
    #[error("cannot reach the API server at {server}: {detail}")]
    Unreachable { server: String, detail: String },
    #[error("the API server at {server} presented a certificate that {problem}")]
    UntrustedCertificate {
        server: String,
        problem: CertificateProblem,
    },
    #[error("the API server at {server} did not answer within {timeout:?}")]
    Timeout { server: String, timeout: Duration },
    #[error("the API server at {server} rejected the credentials: {detail}")]
    Unauthorized { server: String, detail: String },
    /// The kubeconfig user's credential plugin (`exec`) failed: its own words.
    #[error("the credential plugin of kubeconfig user \"{user}\" failed ({status}): {stderr}")]
    CredentialPlugin {
        user: String,
        /// The plugin as the kubeconfig runs it, to run by hand.
        command: String,
        status: String,
        stderr: String,
    },
    #[error("{0}")]
    Api(String),
}

/// Where a command is pointed, resolved from flags and kubeconfig without any
/// network call.
#[derive(Debug, Clone)]
pub struct Target {
    pub server: String,
    pub context: Option<String>,
    /// The context's namespace, else `default` (in-cluster: the pod's namespace).
    pub namespace: String,
    pub cluster_id: String,
    /// How to reach it.
    source: Source,
}

#[derive(Debug, Clone)]
enum Source {
    /// A kubeconfig whose current context is [`SELECTED`]: the cluster and user
    /// chosen by flags and context, with flag overrides applied.
    Kubeconfig(Box<Kubeconfig>),
    InCluster,
}

/// The synthetic context that binds what the flags selected.
const SELECTED: &str = "krply-selected";

/// Resolves the target offline: the selected context, its cluster and namespace.
///
/// Long on purpose: kubectl's precedence of flags over the kubeconfig, one setting
/// after another (context, cluster, user, server, TLS, credentials, namespace).
pub fn resolve_target(opts: &ConnectOptions) -> Result<Target, ClusterError> {
    let loaded = kubeconfig::load(opts.kubeconfig.as_deref())?;
    let mut config = match loaded {
        Some(l) => l.config,
        None if opts.server.is_some() => Kubeconfig::default(),
        None => return in_cluster_target(opts),
    };
    let context_name = opts
        .context
        .clone()
        .or_else(|| config.current_context.clone());
    let context: Option<Context> = match &context_name {
        Some(name) => Some(
            config
                .contexts
                .iter()
                .find(|c| &c.name == name)
                .and_then(|c| c.context.clone())
                .ok_or_else(|| ClusterError::NoSuchContext(name.clone()))?,
        ),
        None => None,
    };
    let cluster_name = opts
        .cluster
        .clone()
        .or_else(|| context.as_ref().map(|c| c.cluster.clone()));
    let user_name = opts
        .user
        .clone()
        .or_else(|| context.as_ref().and_then(|c| c.user.clone()));
    let namespace = context
        .as_ref()
        .and_then(|c| c.namespace.clone())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "default".to_string());

    // Flags without a matching kubeconfig entry get a synthetic one, as kubectl's
    // overrides do.
    let cluster_name = match cluster_name {
        Some(name) => {
            if !config.clusters.iter().any(|c| c.name == name) {
                if opts.server.is_none() {
                    return Err(ClusterError::NoSuchCluster(name));
                }
                config.clusters.push(NamedCluster {
                    name: name.clone(),
                    cluster: Some(Cluster::default()),
                    other: Default::default(),
                });
            }
            name
        }
        None if opts.server.is_some() => {
            config.clusters.push(NamedCluster {
                name: "krply-flags".into(),
                cluster: Some(Cluster::default()),
                other: Default::default(),
            });
            "krply-flags".to_string()
        }
        None => return Err(ClusterError::NoCurrentContext),
    };
    if let Some(user) = &user_name
        && !config.auth_infos.iter().any(|u| &u.name == user)
    {
        if opts.user.is_some() {
            return Err(ClusterError::NoSuchUser(user.clone()));
        }
        // kubectl tolerates a context whose user entry is missing.
        config.auth_infos.push(NamedAuthInfo {
            name: user.clone(),
            auth_info: Some(AuthInfo::default()),
            other: Default::default(),
        });
    }
    let user_name = apply_overrides(&mut config, &cluster_name, user_name, opts);
    config.contexts.retain(|c| c.name != SELECTED);
    config.contexts.push(NamedContext {
        name: SELECTED.into(),
        context: Some(Context {
            cluster: cluster_name.clone(),
            user: user_name,
            namespace: Some(namespace.clone()),
            extensions: None,
            other: Default::default(),
        }),
        other: Default::default(),
    });
    config.current_context = Some(SELECTED.into());
    let cluster = config
        .clusters
        .iter()
        .find(|c| c.name == cluster_name)
        .and_then(|c| c.cluster.as_ref());
    let server = cluster
        .and_then(|c| c.server.clone())
        .filter(|s| !s.is_empty())
        .ok_or_else(|| ClusterError::NoServer(cluster_name.clone()))?;
    Ok(Target {
        cluster_id: id::cluster_id(&server),
        server,
        context: context_name,
        namespace,
        source: Source::Kubeconfig(Box::new(config)),
    })
}

/// Applies the connection flags to the selected cluster and user entries,
/// returning the user to connect as (a synthetic one when only flags name it).
fn apply_overrides(
    config: &mut Kubeconfig,
    cluster: &str,
    user: Option<String>,
    opts: &ConnectOptions,
) -> Option<String> {
    if let Some(c) = config
        .clusters
        .iter_mut()
        .find(|c| c.name == cluster)
        .and_then(|c| c.cluster.as_mut())
    {
        if let Some(server) = &opts.server {
            c.server = Some(server.clone());
        }
        if let Some(ca) = &opts.certificate_authority {
            c.certificate_authority = Some(ca.to_string_lossy().into_owned());
            c.certificate_authority_data = None;
        }
        if opts.insecure_skip_tls_verify {
            c.insecure_skip_tls_verify = Some(true);
            c.certificate_authority = None;
            c.certificate_authority_data = None;
        }
    }
    let wants_user =
        opts.token.is_some() || opts.impersonate.is_some() || !opts.impersonate_groups.is_empty();
    if !wants_user {
        return user;
    }
    let name = user.unwrap_or_else(|| "krply-flags".to_string());
    if !config.auth_infos.iter().any(|u| u.name == name) {
        config.auth_infos.push(NamedAuthInfo {
            name: name.clone(),
            auth_info: Some(AuthInfo::default()),
            other: Default::default(),
        });
    }
    if let Some(u) = config.auth_infos.iter_mut().find(|u| u.name == name) {
        let info = u.auth_info.get_or_insert_with(AuthInfo::default);
        if let Some(token) = &opts.token {
            info.token = Some(secrecy::SecretString::from(token.clone()));
            info.token_file = None;
            info.exec = None;
            info.auth_provider = None;
        }
        if let Some(who) = &opts.impersonate {
            info.impersonate = Some(who.clone());
        }
        if !opts.impersonate_groups.is_empty() {
            info.impersonate_groups = Some(opts.impersonate_groups.clone());
        }
    }
    Some(name)
}

fn in_cluster_target(opts: &ConnectOptions) -> Result<Target, ClusterError> {
    let host = std::env::var("KUBERNETES_SERVICE_HOST").ok();
    let port = std::env::var("KUBERNETES_SERVICE_PORT").ok();
    let (Some(host), Some(port)) = (host, port) else {
        let looked = kubeconfig::looked_at(opts.kubeconfig.as_deref())
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ");
        return Err(ClusterError::NoConfiguration { looked });
    };
    let host = if host.contains(':') {
        format!("[{host}]")
    } else {
        host
    };
    let server = format!("https://{host}:{port}");
    let namespace =
        std::fs::read_to_string("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
            .map(|s| s.trim().to_string())
            .ok()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "default".into());
    Ok(Target {
        cluster_id: id::cluster_id(&server),
        server,
        context: None,
        namespace,
        source: Source::InCluster,
    })
}

impl Target {
    /// The kubeconfig user the target is reached as, and its credential
    /// plugin's command line (`users[].user.exec`), when it has one.
    pub fn credential_plugin(&self) -> Option<(String, String)> {
        let Source::Kubeconfig(config) = &self.source else {
            return None;
        };
        let user = config
            .contexts
            .iter()
            .find(|c| c.name == SELECTED)?
            .context
            .as_ref()?
            .user
            .clone()?;
        let exec = config
            .auth_infos
            .iter()
            .find(|u| u.name == user)?
            .auth_info
            .as_ref()?
            .exec
            .as_ref()?;
        let words: Vec<String> = exec
            .command
            .iter()
            .chain(exec.args.iter().flatten())
            .map(|w| shell_word(w))
            .collect();
        Some((user, words.join(" ")))
    }
}

/// `w` as a shell reads it back: bare when it is plain, else single-quoted.
fn shell_word(w: &str) -> String {
    if !w.is_empty()
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c))
    {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', r"'\''"))
    }
}

/// Why a client could not be configured: a failing credential plugin in its
/// own words (with the kubeconfig user and the command to run by hand), or
/// the error's chain.
pub fn config_error(target: &Target, e: &(dyn std::error::Error + 'static)) -> ClusterError {
    match plugin_failure(e) {
        Some((status, stderr)) => {
            let (user, command) = target
                .credential_plugin()
                .unwrap_or_else(|| ("?".into(), "the plugin".into()));
            ClusterError::CredentialPlugin {
                user,
                command,
                status,
                stderr,
            }
        }
        None => ClusterError::Config(describe_chain(e)),
    }
}

/// A credential plugin's failure somewhere in an error's chain: how it
/// exited, and the last line it wrote on stderr (its own reason, without
/// kube-client's dump of the process).
pub fn plugin_failure(e: &(dyn std::error::Error + 'static)) -> Option<(String, String)> {
    let mut current = Some(e);
    while let Some(err) = current {
        if let Some(kube::client::AuthError::AuthExecRun { out, .. }) =
            err.downcast_ref::<kube::client::AuthError>()
        {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let said = stderr
                .lines()
                .map(str::trim)
                .rfind(|l| !l.is_empty())
                .unwrap_or("it wrote nothing on stderr")
                .to_string();
            return Some((out.status.to_string(), said));
        }
        current = err.source();
    }
    None
}

/// A connected client with the target it reaches.
#[derive(Clone)]
pub struct ClusterAccess {
    pub client: kube::Client,
    pub target: Target,
    pub request_timeout: Option<Duration>,
    /// What the client was built from, to build another ([`ClusterAccess::fresh`]).
    config: kube::Config,
}

impl ClusterAccess {
    /// The same target through a client of its own, and so a connection
    /// pool of its own. After a connection died without closing, the idle
    /// ones in the pool may have too (a NAT that forgot them all), and each
    /// would hold a request until its timeout.
    pub fn fresh(&self) -> Result<ClusterAccess, ClusterError> {
        let client = client::client(&self.config).map_err(|e| config_error(&self.target, &e))?;
        Ok(ClusterAccess {
            client,
            ..self.clone()
        })
    }
}

/// The User-Agent krply sends, so audit logs say who called.
pub fn user_agent() -> String {
    format!(
        "kubectl-krply/{} ({}/{})",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::OS,
        std::env::consts::ARCH
    )
}

/// Builds a client for `target`. No request is made yet.
pub async fn connect(
    target: &Target,
    opts: &ConnectOptions,
) -> Result<ClusterAccess, ClusterError> {
    let mut config = match &target.source {
        Source::Kubeconfig(config) => {
            let options = KubeConfigOptions {
                context: Some(SELECTED.into()),
                cluster: None,
                user: None,
            };
            kube::Config::from_custom_kubeconfig((**config).clone(), &options)
                .await
                .map_err(|e| config_error(target, &e))?
        }
        Source::InCluster => {
            kube::Config::incluster().map_err(|e| ClusterError::Config(describe_chain(&e)))?
        }
    };
    // A kubeconfig proxy-url wins; otherwise the environment decides, as for
    // kubectl (see `proxy`).
    let configured = match &target.source {
        Source::Kubeconfig(kc) => kc
            .contexts
            .iter()
            .find(|c| c.name == SELECTED)
            .and_then(|c| c.context.as_ref())
            .and_then(|ctx| kc.clusters.iter().find(|c| c.name == ctx.cluster))
            .and_then(|c| c.cluster.as_ref())
            .and_then(|c| c.proxy_url.clone())
            .is_some(),
        Source::InCluster => false,
    };
    if !configured {
        config.proxy_url = proxy::from_env(&config.cluster_url);
    }
    if let Ok(value) = http::HeaderValue::from_str(&user_agent()) {
        config.headers.push((http::header::USER_AGENT, value));
    }
    // Retries are the recorder's business (it honours Retry-After and journals
    // what it missed); kube's silent retry layer would hide them.
    config.default_retry = false;
    if opts.insecure_skip_tls_verify {
        config.accept_invalid_certs = true;
    }
    // kube's own stack, but with TCP keepalive on (see `client`).
    let client = client::client(&config).map_err(|e| config_error(target, &e))?;
    Ok(ClusterAccess {
        client,
        target: target.clone(),
        request_timeout: opts.request_timeout,
        config,
    })
}

/// What is wrong with the server's certificate, each with what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CertificateProblem {
    #[error("is not signed by the certificate authority this kubeconfig trusts")]
    UnknownAuthority,
    #[error("has expired")]
    Expired,
    #[error("is not valid yet")]
    NotValidYet,
    #[error("is not valid for this server's name")]
    WrongName,
    #[error("does not verify ({0})")]
    Other(String),
}

impl CertificateProblem {
    /// What the user can do about it.
    pub fn hint(&self) -> &'static str {
        match self {
            CertificateProblem::UnknownAuthority | CertificateProblem::Other(_) => {
                "check that the kubeconfig's certificate authority (certificate-authority-data, or --certificate-authority) is this cluster's; --insecure-skip-tls-verify skips the check, insecurely"
            }
            CertificateProblem::Expired | CertificateProblem::NotValidYet => {
                "check this machine's clock (`date -u`); if it is right, the cluster's serving certificate needs renewing"
            }
            CertificateProblem::WrongName => {
                "the server URL must be a name or address in the certificate; check the kubeconfig's server, or set tls-server-name to a name the certificate holds"
            }
        }
    }
}

/// What is wrong with the server's certificate, when that is why a
/// connection failed: the TLS error may sit inside an `io::Error`, whose
/// `source()` skips it, so those are opened too.
pub fn certificate_problem(e: &(dyn std::error::Error + 'static)) -> Option<CertificateProblem> {
    use tokio_rustls::rustls::{CertificateError, Error as TlsError};
    let mut current = Some(e);
    while let Some(err) = current {
        if let Some(TlsError::InvalidCertificate(c)) = err.downcast_ref::<TlsError>() {
            return Some(match c {
                CertificateError::UnknownIssuer | CertificateError::BadSignature => {
                    CertificateProblem::UnknownAuthority
                }
                CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                    CertificateProblem::Expired
                }
                CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                    CertificateProblem::NotValidYet
                }
                CertificateError::NotValidForName
                | CertificateError::NotValidForNameContext { .. } => CertificateProblem::WrongName,
                other => CertificateProblem::Other(format!("{other:?}")),
            });
        }
        current = match err
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            Some(inner) => Some(inner as &(dyn std::error::Error + 'static)),
            None => err.source(),
        };
    }
    None
}

/// An error's message with its sources, each once, on one line (parsers add
/// multi-line snippets of their input, which an error line does not need).
pub fn describe_chain(e: &(dyn std::error::Error + 'static)) -> String {
    if let Some((status, stderr)) = plugin_failure(e) {
        return format!("the kubeconfig's credential plugin failed ({status}): {stderr}");
    }
    let first_line = |s: String| s.lines().next().unwrap_or_default().trim().to_string();
    let mut text = first_line(e.to_string());
    let mut source = e.source();
    while let Some(s) = source {
        let more = first_line(s.to_string());
        if !text.contains(&more) {
            text = format!("{text}: {more}");
        }
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kubeconfig(dir: &std::path::Path) -> PathBuf {
        let path = dir.join("config");
        std::fs::write(
            &path,
            "apiVersion: v1\nkind: Config\ncurrent-context: a\nclusters:\n- name: ca\n  cluster:\n    server: https://a.example:6443\n- name: cb\n  cluster:\n    server: https://b.example\ncontexts:\n- name: a\n  context:\n    cluster: ca\n    user: ua\n    namespace: team-a\n- name: b\n  context:\n    cluster: cb\n    user: ua\nusers:\n- name: ua\n  user:\n    token: secret\n",
        )
        .unwrap();
        path
    }

    #[test]
    fn context_selects_cluster_and_namespace() {
        let dir = tempfile::tempdir().unwrap();
        let path = kubeconfig(dir.path());
        let opts = ConnectOptions {
            kubeconfig: Some(path.clone()),
            ..Default::default()
        };
        let t = resolve_target(&opts).unwrap();
        assert_eq!(t.server, "https://a.example:6443");
        assert_eq!(t.namespace, "team-a");
        assert_eq!(t.context.as_deref(), Some("a"));
        let t = resolve_target(&ConnectOptions {
            context: Some("b".into()),
            ..opts.clone()
        })
        .unwrap();
        assert_eq!(t.server, "https://b.example");
        assert_eq!(t.namespace, "default");
        assert_ne!(t.cluster_id, id::cluster_id("https://a.example:6443"));
        let err = resolve_target(&ConnectOptions {
            context: Some("nope".into()),
            ..opts.clone()
        })
        .unwrap_err();
        assert!(matches!(err, ClusterError::NoSuchContext(_)));
        let t = resolve_target(&ConnectOptions {
            server: Some("http://127.0.0.1:1".into()),
            ..opts
        })
        .unwrap();
        assert_eq!(t.server, "http://127.0.0.1:1");
        assert_eq!(t.namespace, "team-a");
    }
}
