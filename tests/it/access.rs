//! Cluster access as kubectl does it: TLS verified unless asked, tokens, exec
//! credential plugins, flag overrides, KUBECONFIG lists and contexts.

use crate::common;

use common::{Env, Output};
use krply_sim::{KubeconfigOptions, Seed, SimConfig};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

const TOKEN: &str = "s3cret-token";

fn secure() -> Env {
    Env::new(SimConfig {
        seed: Seed::Shop,
        tls: true,
        token: Some(TOKEN.into()),
        ..SimConfig::default()
    })
}

fn load(path: &Path) -> Value {
    serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Writes a kubeconfig (JSON is YAML) derived from the simulator's own.
fn write_variant(env: &Env, name: &str, change: impl FnOnce(&mut Value)) -> PathBuf {
    let mut kc = load(&env.kubeconfig);
    change(&mut kc);
    let path = env.dir.path().join(name);
    std::fs::write(&path, serde_json::to_string_pretty(&kc).unwrap()).unwrap();
    path
}

/// `record cm` that must get as far as recording ([`Sandbox::record_until_listed`]).
///
/// [`Sandbox::record_until_listed`]: common::Sandbox::record_until_listed
fn record_once(env: &Env, extra: &[&str]) -> Output {
    record_once_with(env, extra, |_| {})
}

/// [`record_once`], with `prepare` changing the command first.
fn record_once_with(
    env: &Env,
    extra: &[&str],
    prepare: impl FnOnce(&mut std::process::Command),
) -> Output {
    let mut args = vec!["cm"];
    args.extend_from_slice(extra);
    env.record_until_listed(&args, prepare)
}

/// `record` that is expected to fail while it starts. The error ends it; the
/// long `--for` only bounds it. A short one could end a slow start-up on a
/// loaded machine first, and that is a clean stop (exit 0), not the error.
fn record_refused(env: &Env, extra: &[&str]) -> Output {
    let mut args = vec!["record", "cm", "--for", common::REFUSED_WITHIN];
    args.extend_from_slice(extra);
    env.run(&args)
}

fn assert_ok(out: &Output) {
    assert_eq!(
        out.code,
        Some(0),
        "stdout: {}\nstderr: {}",
        out.stdout,
        out.stderr
    );
}

fn assert_error(out: &Output, contains: &str) {
    assert_eq!(
        out.code,
        Some(1),
        "stdout: {}\nstderr: {}",
        out.stdout,
        out.stderr
    );
    let first = out.stderr.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("error: ") && first.contains(contains),
        "{}",
        out.stderr
    );
}

#[test]
fn tls_with_a_token_works_and_says_who_is_calling() {
    let env = secure();
    assert_ok(&record_once(&env, &[]));
    let agents: Vec<String> = env
        .sim
        .request_log()
        .into_iter()
        .filter_map(|r| r.user_agent)
        .collect();
    assert!(!agents.is_empty());
    assert!(
        agents.iter().all(|a| a.starts_with("kubectl-krply/")),
        "{agents:?}"
    );
}

#[test]
fn a_wrong_token_is_rejected_with_one_line() {
    let env = secure();
    let bad = env.dir.path().join("bad-token");
    env.sim
        .write_kubeconfig(
            &bad,
            &KubeconfigOptions {
                token: Some("wrong".into()),
                ..KubeconfigOptions::default()
            },
        )
        .unwrap();
    let out = record_refused(&env, &["--kubeconfig", bad.to_str().unwrap()]);
    assert_error(&out, "rejected the credentials");
}

#[test]
fn an_unknown_certificate_authority_is_refused_unless_asked() {
    let env = secure();
    let no_ca = write_variant(&env, "no-ca", |kc| {
        kc["clusters"][0]["cluster"]
            .as_object_mut()
            .unwrap()
            .remove("certificate-authority-data");
    });
    let kubeconfig = no_ca.to_str().unwrap();
    let out = record_refused(&env, &["--kubeconfig", kubeconfig]);
    assert_error(
        &out,
        "presented a certificate that is not signed by the certificate authority this kubeconfig trusts",
    );
    assert!(
        out.stderr.contains("--insecure-skip-tls-verify"),
        "{}",
        out.stderr
    );

    assert_ok(&record_once(
        &env,
        &["--kubeconfig", kubeconfig, "--insecure-skip-tls-verify"],
    ));

    let ca = env.dir.path().join("ca.pem");
    std::fs::write(&ca, env.sim.ca_pem().unwrap()).unwrap();
    assert_ok(&record_once(
        &env,
        &[
            "--kubeconfig",
            kubeconfig,
            "--certificate-authority",
            ca.to_str().unwrap(),
        ],
    ));
}

#[test]
fn a_client_certificate_authenticates() {
    let env = secure();
    let certs = env.dir.path().join("client-cert");
    env.sim
        .write_kubeconfig(
            &certs,
            &KubeconfigOptions {
                client_certificate: true,
                namespace: Some("shop".into()),
                ..KubeconfigOptions::default()
            },
        )
        .unwrap();
    let text = std::fs::read_to_string(&certs).unwrap();
    assert!(text.contains("client-certificate-data") && !text.contains(TOKEN));
    assert_ok(&record_once(
        &env,
        &["--kubeconfig", certs.to_str().unwrap()],
    ));
    // The same file without the key: no credentials, refused.
    let no_key = write_variant(&env, "no-key", |kc| {
        kc["users"][0]["user"] = json!({});
    });
    let out = record_refused(&env, &["--kubeconfig", no_key.to_str().unwrap()]);
    assert_error(&out, "rejected the credentials");
}

#[test]
fn an_exec_credential_plugin_supplies_the_token() {
    let env = secure();
    let script = env.dir.path().join("credential-helper.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho '{{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\",\"kind\":\"ExecCredential\",\"status\":{{\"token\":\"{TOKEN}\"}}}}'\n"
        ),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let exec = write_variant(&env, "exec", |kc| {
        kc["users"][0]["user"] = json!({
            "exec": {
                "apiVersion": "client.authentication.k8s.io/v1beta1",
                "command": script.to_str().unwrap(),
                "interactiveMode": "Never"
            }
        });
    });
    assert_ok(&record_once(
        &env,
        &["--kubeconfig", exec.to_str().unwrap()],
    ));
}

#[test]
fn a_failing_credential_plugin_says_why_in_one_line_and_how_to_run_it() {
    let env = secure();
    let script = env.dir.path().join("get-token");
    std::fs::write(
        &script,
        "#!/bin/sh\necho 'trying SSO' >&2\necho 'error: could not get token: SSO session expired' >&2\nexit 1\n",
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let exec = write_variant(&env, "exec-fails", |kc| {
        kc["users"][0]["user"] = json!({
            "exec": {
                "apiVersion": "client.authentication.k8s.io/v1beta1",
                "command": script.to_str().unwrap(),
                "args": ["--profile", "prod"],
                "interactiveMode": "Never"
            }
        });
    });
    let user = load(&exec)["users"][0]["name"]
        .as_str()
        .unwrap()
        .to_string();
    let out = record_refused(&env, &["--kubeconfig", exec.to_str().unwrap()]);
    assert_error(
        &out,
        &format!(
            "the credential plugin of kubeconfig user \"{user}\" failed (exit status: 1): error: could not get token: SSO session expired"
        ),
    );
    assert_eq!(out.stderr.matches("error:").count(), 2, "{}", out.stderr);
    assert!(
        out.stderr.contains(&format!(
            "hint: run it by hand to see why: {} --profile prod (the exec of user {user} in the kubeconfig)",
            script.display()
        )),
        "{}",
        out.stderr
    );
    for dump in ["KUBERNETES_EXEC_INFO", "Output {", "ExitStatus"] {
        assert!(!out.stderr.contains(dump), "{}", out.stderr);
    }
}

#[test]
fn flags_alone_reach_a_cluster_without_any_kubeconfig() {
    let env = secure();
    let ca = env.dir.path().join("ca.pem");
    std::fs::write(&ca, env.sim.ca_pem().unwrap()).unwrap();
    let out = env
        .command()
        .env("KUBECONFIG", env.dir.path().join("nothing-here"))
        .args([
            "record",
            "cm",
            "-n",
            "shop",
            "--for",
            "300ms",
            "--server",
            &env.sim.url(),
            "--token",
            TOKEN,
            "--certificate-authority",
            ca.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let no_token = env
        .command()
        .env("KUBECONFIG", env.dir.path().join("nothing-here"))
        .args([
            "record",
            "cm",
            "--for",
            common::REFUSED_WITHIN,
            "--server",
            &env.sim.url(),
            "--insecure-skip-tls-verify",
        ])
        .output()
        .unwrap();
    assert_eq!(no_token.status.code(), Some(1));
}

#[test]
fn the_first_kubeconfig_in_the_list_wins() {
    let env = Env::shop();
    let elsewhere = write_variant(&env, "elsewhere", |kc| {
        kc["clusters"][0]["cluster"]["server"] = json!("http://127.0.0.1:9");
    });
    let list = |a: &Path, b: &Path| format!("{}:{}", a.display(), b.display());
    let run = |kubeconfig: String, within: &str| {
        env.command()
            .env("KUBECONFIG", kubeconfig)
            .args(["record", "cm", "--for", within])
            .output()
            .unwrap()
    };
    assert_eq!(
        run(list(&env.kubeconfig, &elsewhere), "300ms")
            .status
            .code(),
        Some(0)
    );
    let out = run(list(&elsewhere, &env.kubeconfig), common::REFUSED_WITHIN);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("127.0.0.1:9"));
}

#[test]
fn the_context_chooses_the_default_namespace() {
    let env = Env::shop();
    let two = write_variant(&env, "two-contexts", |kc| {
        let mut other = kc["contexts"][0].clone();
        other["name"] = json!("plain");
        other["context"]
            .as_object_mut()
            .unwrap()
            .remove("namespace");
        kc["contexts"].as_array_mut().unwrap().push(other);
    });
    let kubeconfig = two.to_str().unwrap();
    // Each run records until its stream is there (however long a loaded
    // machine takes to start), then stops.
    let streams = || {
        krply::journal::Journal::open(&env.store)
            .and_then(|j| j.streams(None))
            .map_or(0, |s| s.len())
    };
    for (n, extra) in [
        &[][..],
        &["--context", "plain"][..],
        &["-n", "kube-system"][..],
    ]
    .into_iter()
    .enumerate()
    {
        let mut args = vec!["cm", "--kubeconfig", kubeconfig];
        args.extend_from_slice(extra);
        let rec = env.start_recorder(&args);
        env.wait_for(&format!("the stream of {extra:?}"), || streams() > n);
        assert_ok(&rec.stop());
    }
    let mut names: Vec<String> = env
        .journal()
        .streams(None)
        .unwrap()
        .iter()
        .map(|s| s.name())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "configmaps.v1@default",
            "configmaps.v1@kube-system",
            "configmaps.v1@shop"
        ]
    );
}

#[test]
fn proxies_are_chosen_as_kubectl_chooses_them() {
    let env = Env::shop();
    let with = |vars: &'static [(&'static str, &'static str)]| {
        move |c: &mut std::process::Command| {
            c.env_remove("NO_PROXY");
            for (k, v) in vars {
                c.env(k, v);
            }
        }
    };
    const DEAD: &str = "http://127.0.0.1:9";
    // HTTPS_PROXY is for https:// servers only.
    assert_ok(&record_once_with(&env, &[], with(&[("HTTPS_PROXY", DEAD)])));
    // HTTP_PROXY applies to http:// servers...
    let mut through = env.command();
    with(&[("HTTP_PROXY", DEAD)])(&mut through);
    through.args(["record", "cm", "--for", common::REFUSED_WITHIN]);
    let through = common::run_bounded(through, "record through a dead proxy");
    assert_error(&through, "cannot reach the API server");
    // ...unless NO_PROXY names the server, in any of its forms.
    for no_proxy in [
        &[("http_proxy", DEAD), ("no_proxy", "127.0.0.1")],
        &[("http_proxy", DEAD), ("no_proxy", "localhost,127.0.0.0/8")],
        &[("http_proxy", DEAD), ("no_proxy", "*")],
        &[("http_proxy", DEAD), ("no_proxy", "example.com, 127.0.0.1")],
    ] {
        let out = record_once_with(&env, &[], with(no_proxy));
        assert_eq!(out.code, Some(0), "{no_proxy:?}: {}", out.stderr);
    }
}

/// An HTTPS_PROXY that tunnels (HTTP CONNECT), as a corporate proxy does,
/// with credentials in its URL: they reach the proxy percent-decoded, TLS to
/// the server goes through the tunnel, and the connection to the proxy keeps
/// alive like a direct one.
#[test]
fn a_tunnelling_proxy_gets_the_credentials_of_its_url() {
    let env = secure();
    let proxy = ConnectProxy::start("robot:p@ss:word");
    let url = format!("http://robot:p%40ss%3Aword@{}", proxy.addr);
    let rec = env.start_recorder_with(&["cm"], |c| {
        c.env_remove("NO_PROXY").env("HTTPS_PROXY", &url);
    });
    env.wait_baselines(1);
    let connections = common::wait_keepalive(&rec);
    assert!(
        connections.iter().all(|c| c.port == proxy.addr.port()),
        "every connection goes to the proxy"
    );
    assert_ok(&rec.stop());
    let (tunnels, refused) = proxy.counts();
    assert!(
        tunnels > 0 && refused == 0,
        "{tunnels} tunnels, {refused} refused"
    );
}

/// An HTTP proxy on 127.0.0.1 that only tunnels, and only for one
/// `user:password` (Basic).
struct ConnectProxy {
    addr: std::net::SocketAddr,
    /// Tunnels opened, and CONNECTs refused for their credentials.
    counts: std::sync::Arc<std::sync::Mutex<(u32, u32)>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl ConnectProxy {
    fn start(credentials: &str) -> ConnectProxy {
        use base64::Engine;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("proxy binds");
        let addr = listener.local_addr().unwrap();
        let expected = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(credentials)
        );
        let counts = std::sync::Arc::new(std::sync::Mutex::new((0, 0)));
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (c, s) = (counts.clone(), stop.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(std::sync::atomic::Ordering::SeqCst) {
                    break;
                }
                let (Ok(conn), expected, c) = (conn, expected.clone(), c.clone()) else {
                    continue;
                };
                std::thread::spawn(move || {
                    let _ = tunnel(conn, &expected, &c);
                });
            }
        });
        ConnectProxy { addr, counts, stop }
    }

    fn counts(&self) -> (u32, u32) {
        *self.counts.lock().unwrap()
    }
}

impl Drop for ConnectProxy {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        // Wakes the accepting thread, which then sees the flag.
        let _ = std::net::TcpStream::connect(self.addr);
    }
}

/// Serves one connection to the proxy: a CONNECT with the expected
/// `Proxy-Authorization` is answered 200 and then forwarded both ways.
fn tunnel(
    mut client: std::net::TcpStream,
    expected: &str,
    counts: &std::sync::Mutex<(u32, u32)>,
) -> std::io::Result<()> {
    use std::io::{Read, Write};
    // The request head, byte by byte: nothing past it is read (the client
    // waits for the answer before it sends more).
    client.set_read_timeout(Some(common::DEADLINE))?;
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if client.read(&mut byte)? == 0 || head.len() > 64 * 1024 {
            return Ok(());
        }
        head.push(byte[0]);
    }
    client.set_read_timeout(None)?;
    let head = String::from_utf8_lossy(&head);
    let mut lines = head.lines();
    let Some(target) = lines
        .next()
        .and_then(|l| l.strip_prefix("CONNECT "))
        .and_then(|l| l.split(' ').next())
    else {
        return client.write_all(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n");
    };
    let authorized = lines.any(|l| {
        l.split_once(':').is_some_and(|(name, value)| {
            name.trim().eq_ignore_ascii_case("proxy-authorization") && value.trim() == expected
        })
    });
    if !authorized {
        counts.lock().unwrap().1 += 1;
        return client.write_all(
            b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic\r\nContent-Length: 0\r\n\r\n",
        );
    }
    let mut upstream = std::net::TcpStream::connect(target)?;
    client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")?;
    counts.lock().unwrap().0 += 1;
    let (mut from_client, mut to_upstream) = (client.try_clone()?, upstream.try_clone()?);
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut from_client, &mut to_upstream);
        let _ = to_upstream.shutdown(std::net::Shutdown::Write);
    });
    let _ = std::io::copy(&mut upstream, &mut client);
    client.shutdown(std::net::Shutdown::Write)
}

#[test]
fn credentials_never_reach_the_journal_or_the_logs() {
    let env = secure();
    let rec = env.start_recorder(&["cm", "-v"]);
    env.wait_baselines(1);
    env.patch_cm("feature-flags", "x", "1");
    env.wait_events("configmaps.v1@shop", 1);
    let out = rec.stop();
    assert_eq!(out.code, Some(0));
    let mut bytes = std::fs::read(&env.store).unwrap();
    bytes.extend(std::fs::read(format!("{}-wal", env.store.display())).unwrap_or_default());
    bytes.extend(std::fs::read(krply::journal::lock::lock_path(&env.store)).unwrap_or_default());
    bytes.extend(out.stdout.as_bytes());
    bytes.extend(out.stderr.as_bytes());
    let export = env.run(&["export"]);
    bytes.extend(export.stdout.as_bytes());
    assert!(
        !bytes.windows(TOKEN.len()).any(|w| w == TOKEN.as_bytes()),
        "the token leaked"
    );
}
