//! docs/troubleshooting.md tells the truth: every `error:` line it shows is
//! produced here by the real binary, which prints that line (up to example
//! values) followed by exactly the documented `hint:` lines, nothing else on
//! stderr, and the documented exit code.
//!
//! How the doc is read (see [`documented`]): inside ```` ```text ```` blocks,
//! each line starting with `error: ` is one entry. The `hint: ` lines right
//! after a run of consecutive `error:` lines belong to every error line of
//! that run: two errors with the same advice are shown once ("not a krply
//! journal"). An error line followed by anything else (another text line, the
//! end of the block, or a hint that already closed its run) has no hint. The
//! exit code of an entry is the `(exit N` its heading names, else 1 (the
//! doc's introduction: 1 for runtime errors).
//!
//! The cases are one table ([`cases!`]); each row is also its own `#[test]`,
//! so the harness runs them in parallel and names the one that fails.

use crate::common;

use common::{Env, Output, Sandbox, path_str, run_bounded};
use krply::journal::Journal;
use krply_sim::{KubeconfigOptions, Seed, SimConfig};
use regex::Regex;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::time::Duration;

/// One documented error line and the hint lines that belong to it.
#[derive(Debug, Clone)]
struct Entry {
    /// The `error: ...` line as the doc shows it.
    error: String,
    hints: Vec<String>,
    /// The exit code its section states.
    exit: i32,
    /// 1-based line number in the doc, for messages.
    line: usize,
}

const DOC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/troubleshooting.md");

/// Every `error:` entry of docs/troubleshooting.md, in order.
fn documented() -> Vec<Entry> {
    let text = std::fs::read_to_string(DOC).expect("docs/troubleshooting.md");
    let exit_re = Regex::new(r"\(exit (\d)").unwrap();
    let mut entries: Vec<Entry> = Vec::new();
    let mut in_text = false;
    let mut exit = 1;
    // The entries of the current run of error lines, and whether hints have
    // already followed it (then the next error line starts a new run).
    let mut run: Vec<usize> = Vec::new();
    let mut hinted = false;
    for (n, line) in text.lines().enumerate() {
        let fence = line.trim_start().starts_with("```");
        if !in_text {
            if fence && line.trim() == "```text" {
                in_text = true;
            } else if line.starts_with('#') {
                exit = exit_re.captures(line).map_or(1, |c| c[1].parse().unwrap());
            }
            continue;
        }
        if fence {
            in_text = false;
            run.clear();
            continue;
        }
        if line.starts_with("error: ") {
            if hinted {
                run.clear();
                hinted = false;
            }
            run.push(entries.len());
            entries.push(Entry {
                error: line.to_string(),
                hints: Vec::new(),
                exit,
                line: n + 1,
            });
        } else if line.starts_with("hint: ") {
            assert!(
                !run.is_empty(),
                "{DOC}:{}: a hint line that follows no error line",
                n + 1
            );
            for &i in &run {
                entries[i].hints.push(line.to_string());
            }
            hinted = true;
        } else {
            run.clear();
            hinted = false;
        }
    }
    entries
}

/// Replaces what differs between the doc's examples and a real run, and
/// nothing else: a hint is still compared word for word.
fn normalise(line: &str) -> String {
    static RULES: LazyLock<Vec<(Regex, &str)>> = LazyLock::new(|| {
        [
            // Server URLs (the doc's https://10.0.0.5:6443, 127.0.0.1 here).
            (r"https://[^\s/():;,]+:\d+", "https://<host>:<port>"),
            // RFC 3339 times, as krply prints them.
            (
                r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z",
                "<time>",
            ),
            // The holder of a lock: `pid 15854 on laptop since <time>`.
            (r"\bpid \d+ on \S+ since ", "pid <pid> on <host> since "),
            // Absolute paths (after the URLs, whose `//` is not one).
            (r#"(^|[\s'"(])/[^\s'"(),;:]+"#, "$1<path>"),
            // Plan IDs, and the hash part of cluster IDs (127.0.0.1-79a759a5).
            (r"\b[0-9a-f]{8}\b", "<id>"),
            // The OS's error number (111 on Linux, 61 on macOS).
            (r"\(os error \d+\)", "(os error <n>)"),
            // Counts and durations that are examples.
            (r"\b\d+ (stretch\(es\)|object\(s\))", "<n> $1"),
            (
                r"did not answer within \d+s\b",
                "did not answer within <n>s",
            ),
            // Where serde_json stopped reading a stored plan.
            (r"\bat line \d+ column \d+\b", "at line <n> column <n>"),
            // The user a server names in a 403 (the doc's jane@example.com).
            (r#"User "[^"]+""#, r#"User "<user>""#),
        ]
        .into_iter()
        .map(|(re, to)| (Regex::new(re).unwrap(), to))
        .collect()
    });
    RULES.iter().fold(line.to_string(), |l, (re, to)| {
        re.replace_all(&l, *to).into_owned()
    })
}

/// A documented situation and how to drive the binary into it.
struct Case {
    /// The name of the producing function (and of its `#[test]`).
    name: &'static str,
    /// A prefix of the normalised error line, without `error: `, that names
    /// exactly one documented entry.
    error: &'static str,
    run: fn() -> Output,
}

/// Documented errors no test here can produce (with only 127.0.0.1 and no
/// internet), each with the reason: `(prefix as in [`Case::error`], why)`.
/// Empty: every documented error has a case. The completeness test accepts
/// an entry without a case only if it is listed here.
const UNPRODUCIBLE: &[(&str, &str)] = &[];

/// The documented entry `error` names; panics unless there is exactly one.
fn entry(entries: &[Entry], error: &str) -> Entry {
    let prefix = format!("error: {error}");
    let found: Vec<&Entry> = entries
        .iter()
        .filter(|e| normalise(&e.error).starts_with(&prefix))
        .collect();
    assert_eq!(
        found.len(),
        1,
        "{prefix:?} must name exactly one entry of {DOC}: {found:#?}"
    );
    found[0].clone()
}

/// Runs one case and compares what the binary printed with the doc.
fn check(case: &Case) {
    let want = entry(&documented(), case.error);
    let out = (case.run)();
    let context = format!(
        "{DOC}:{}: {}\nexit {:?}\nstderr:\n{}stdout:\n{}",
        want.line, want.error, out.code, out.stderr, out.stdout
    );
    assert!(!out.stderr.contains("panicked"), "{context}");
    assert_eq!(out.code, Some(want.exit), "exit code\n{context}");
    let got: Vec<String> = out.stderr.lines().map(normalise).collect();
    let expected: Vec<String> = std::iter::once(&want.error)
        .chain(&want.hints)
        .map(|l| normalise(l))
        .collect();
    assert_eq!(got, expected, "stderr differs from the doc\n{context}");
}

macro_rules! cases {
    ($($name:ident => $error:literal,)*) => {
        const CASES: &[Case] = &[$(Case { name: stringify!($name), error: $error, run: $name },)*];
        mod case {
            $(
                #[test]
                fn $name() {
                    super::check(
                        super::CASES.iter().find(|c| c.name == stringify!($name)).unwrap(),
                    );
                }
            )*
        }
    };
}

cases! {
    no_kubeconfig => "no kubeconfig found",
    unreadable_kubeconfig => "cannot read kubeconfig",
    no_such_context => "context \"prod\" does not exist",
    unreachable_server => "cannot reach the API server at https://<host>:<port>: ServiceError: client error (Connect): tcp connect error",
    silent_server => "the API server at https://<host>:<port> did not answer within",
    unknown_certificate_authority => "the API server at https://<host>:<port> presented a certificate that is not signed",
    certificate_for_another_name => "the API server at https://<host>:<port> presented a certificate that is not valid for this server's name",
    expired_certificate => "the API server at https://<host>:<port> presented a certificate that has expired",
    rejected_credentials => "the API server at https://<host>:<port> rejected the credentials",
    failing_credential_plugin => "the credential plugin of kubeconfig user \"sso-user\" failed",
    unknown_resource => "the server doesn't have a resource type",
    secrets_without_include_secrets => "refusing to record secrets without --include-secrets",
    every_stream_refused => "the server refused every stream (6 of 6)",
    unreachable_proxy => "cannot reach the API server at https://<host>:<port>: ServiceError: client error (Connect): tunnel error",
    stream_already_recorded => "stream configmaps.v1@shop of journal <path> is already being recorded",
    no_journal => "no journal at",
    max_size_too_small => "--max-size 10 B is too small",
    watch_timeout_under_a_second => "--watch-timeout 500ms is shorter than a second",
    sqlite_database_of_another_application => "<path> is not a krply journal (an SQLite database",
    not_an_sqlite_database => "<path> is not a krply journal (not an SQLite database)",
    damaged_journal => "journal <path> is damaged",
    journal_too_new => "journal <path> has schema version",
    invalid_target_namespace => "invalid --to-namespace",
    all_namespaces => "replay plans one namespace",
    type_and_name => "replay plan takes resource types",
    include_a_kind_not_left_out => "--include Deployment:",
    include_secrets => "--include Secret:",
    into_itself => "refusing to replay namespace shop into itself",
    jobs_need_include => "refusing to replay jobs.batch",
    secrets_are_never_replayed => "refusing to replay secrets",
    incomplete_recording => "refusing to plan: the recording of namespace shop is incomplete",
    unreachable_target => "refusing to plan: cannot reach the target",
    no_such_plan => "no plan \"<id>\" in the journal",
    unreadable_plan => "plan <id> cannot be read",
    apply_without_confirm => "refusing to apply plan <id> without --confirm",
    apply_a_refused_plan => "refusing to apply plan <id>: its status is refused",
    context_points_elsewhere => "refusing to apply plan <id>: context kind-test now points at",
    apply_into_the_source => "refusing to apply a plan into its own source namespace",
    target_gone_during_apply => "cannot reach the target at https://<host>:<port>:",
    apply_conflict => "plan <id> was not fully applied",
    dry_run_failed => "the dry run of plan <id> failed",
    browse_nothing_recorded => "nothing recorded in namespace \"elsewhere\" of cluster kind-shop",
    browse_without_a_terminal => "browse needs a terminal",
    import_not_a_segment => "<path> is not a krply segment",
    import_no_segments => "no segments (*.parquet) under",
    import_damaged_segment => "segment <path> has a row krply cannot read",
    import_newer_segment => "<path> is in format \"krply-segments/3\", newer than this kubectl-krply reads",
}

#[test]
fn every_documented_error_has_a_case() {
    let entries = documented();
    assert!(entries.len() >= 30, "{DOC} parsed to too few entries");
    // Each case and each unproducible error names one entry...
    let mut covered: Vec<usize> = Vec::new();
    let names = CASES
        .iter()
        .map(|c| c.error)
        .chain(UNPRODUCIBLE.iter().map(|(e, _)| *e));
    for (_, why) in UNPRODUCIBLE {
        assert!(
            !why.trim().is_empty(),
            "an unproducible error needs its reason"
        );
    }
    for name in names {
        let e = entry(&entries, name);
        covered.push(entries.iter().position(|x| x.line == e.line).unwrap());
    }
    // ...no entry is named twice...
    let mut sorted = covered.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), covered.len(), "an entry is named twice");
    // ...and every entry is named.
    let missing: Vec<String> = entries
        .iter()
        .enumerate()
        .filter(|(i, _)| !covered.contains(i))
        .map(|(_, e)| format!("{DOC}:{}: {}", e.line, e.error))
        .collect();
    assert!(missing.is_empty(), "no case for:\n{}", missing.join("\n"));
}

#[test]
fn the_doc_is_read_as_documented() {
    let entries = documented();
    let journal = entry(&entries, "<path> is not a krply journal (not an");
    let other = entry(&entries, "<path> is not a krply journal (an SQLite");
    assert_eq!(journal.hints, other.hints, "one hint for a run of errors");
    assert_eq!(journal.hints.len(), 1);
    assert!(entry(&entries, "cannot read kubeconfig").hints.is_empty());
    assert_eq!(entry(&entries, "invalid --to-namespace").exit, 2);
    assert_eq!(entry(&entries, "no journal at").exit, 1);
    assert_eq!(
        normalise(
            "error: stream s of journal /a/b.db is already being recorded by pid 12 on box-1 since 2026-11-29T11:13:42.352Z recording s"
        ),
        "error: stream s of journal <path> is already being recorded by pid <pid> on <host> since <time> recording s"
    );
    assert_eq!(
        normalise("hint: `kubectl krply replay show 3f2a9b1c` lists them"),
        "hint: `kubectl krply replay show <id>` lists them"
    );
}

// ---------------------------------------------------------------------------
// Set-ups.

/// A simulator serving HTTPS (its CA in the kubeconfig) with the shop.
fn shop_tls() -> Env {
    Env::new(SimConfig {
        seed: Seed::Shop,
        tls: true,
        bookmark_interval: Some(Duration::from_millis(200)),
        ..SimConfig::default()
    })
}

/// `kubectl-krply ARGS` in `sandbox`, with KUBECONFIG set to `kubeconfig`
/// (a `:`-separated list).
fn run_with_kubeconfig(sandbox: &Sandbox, kubeconfig: &str, args: &[&str]) -> Output {
    let mut c = sandbox.command();
    c.env("KUBECONFIG", kubeconfig).args(args);
    run_bounded(
        c,
        &format!("KUBECONFIG={kubeconfig} kubectl-krply {args:?}"),
    )
}

/// A copy of `env`'s kubeconfig, changed (JSON is YAML).
fn kubeconfig_variant(env: &Env, name: &str, change: impl FnOnce(&mut Value)) -> PathBuf {
    let text = std::fs::read_to_string(&env.kubeconfig).unwrap();
    let mut kc: Value = serde_saphyr::from_str(&text).unwrap();
    change(&mut kc);
    let path = env.dir.path().join(name);
    std::fs::write(&path, serde_json::to_string_pretty(&kc).unwrap()).unwrap();
    path
}

/// A journal made by this crate, and nothing in it.
fn empty_journal(sandbox: &Sandbox) {
    drop(Journal::open_or_create(&sandbox.store).expect("journal created"));
}

/// An SQLite connection to the sandbox's journal file, bypassing krply.
fn sqlite(sandbox: &Sandbox) -> rusqlite::Connection {
    rusqlite::Connection::open(&sandbox.store).unwrap()
}

/// The TLS shop, recorded (ConfigMaps, Deployments, Jobs and Secrets), and
/// a time the recording covers. No recorder runs afterwards, so `--at now`
/// is past the recording.
fn recorded() -> (Env, String) {
    let env = shop_tls();
    let rec = env.start_recorder(&["cm", "deploy", "jobs", "secrets", "--include-secrets"]);
    env.wait_baselines(1);
    let at = krply::time::Millis::now().to_string();
    assert_eq!(rec.stop().code, Some(0));
    (env, at)
}

/// Plans shop into shop-copy at `at` (plus `extra`); the plan must pass its
/// dry run. Returns its ID.
fn dry_run_ok_plan(env: &Env, kubeconfig: &str, at: &str, extra: &[&str]) -> String {
    let mut args = vec![
        "replay",
        "plan",
        "--to-namespace",
        "shop-copy",
        "--at",
        at,
        "-o",
        "json",
    ];
    args.extend_from_slice(extra);
    let out = run_with_kubeconfig(env, kubeconfig, &args);
    assert_eq!(out.code, Some(0), "{out:?}");
    let plan: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(plan["status"], "dry-run-ok", "{plan:#}");
    plan["id"].as_str().unwrap().to_string()
}

/// Plans shop into shop-copy at now, past the recording: refused and saved
/// as such. Returns its ID.
fn refused_plan(env: &Env) -> String {
    let out = incomplete_recording_in(env);
    assert_eq!(out.code, Some(1), "{out:?}");
    Regex::new(r"plan ([0-9a-f]{8}) saved as refused")
        .unwrap()
        .captures(&out.stderr)
        .unwrap_or_else(|| panic!("no refused plan: {out:?}"))[1]
        .to_string()
}

fn incomplete_recording_in(env: &Env) -> Output {
    env.run(&["replay", "plan", "--to-namespace", "shop-copy"])
}

/// Rewrites the stored JSON of plan `id`.
fn edit_plan(env: &Env, id: &str, change: impl FnOnce(&mut Value) -> String) {
    let journal = env.journal();
    let mut saved = journal.plan(id).unwrap().expect("the plan is saved");
    let mut info: Value = serde_json::from_str(&saved.info).unwrap();
    saved.info = change(&mut info);
    journal.save_plan(&saved).unwrap();
}

fn port_of(url: &str) -> u16 {
    url.rsplit(':').next().unwrap().parse().unwrap()
}

/// A port on 127.0.0.1 nothing listens on (the discard port, as elsewhere
/// in these tests).
const CLOSED: &str = "https://127.0.0.1:9";

// ---------------------------------------------------------------------------
// Reaching the cluster.

fn no_kubeconfig() -> Output {
    let sandbox = Sandbox::new();
    let mut c = sandbox.command();
    // Where kubectl looks without KUBECONFIG: ~/.kube/config, absent here.
    c.env_remove("KUBECONFIG").arg("record");
    run_bounded(c, "record without a kubeconfig")
}

fn unreadable_kubeconfig() -> Output {
    let sandbox = Sandbox::new();
    let missing = sandbox.dir.path().join("kc");
    sandbox.run(&["record", "--kubeconfig", path_str(&missing)])
}

fn no_such_context() -> Output {
    Env::shop().run(&["record", "--context", "prod"])
}

fn unreachable_server() -> Output {
    Sandbox::new().run(&["record", "--server", CLOSED])
}

fn silent_server() -> Output {
    // Accepts connections (the kernel completes the handshake) and never
    // answers: nothing calls accept().
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let server = format!("https://127.0.0.1:{}", silent.local_addr().unwrap().port());
    let out = Sandbox::new().run(&["record", "--server", &server, "--request-timeout", "1s"]);
    drop(silent);
    out
}

fn unknown_certificate_authority() -> Output {
    let env = shop_tls();
    let no_ca = kubeconfig_variant(&env, "no-ca", |kc| {
        kc["clusters"][0]["cluster"]
            .as_object_mut()
            .unwrap()
            .remove("certificate-authority-data");
    });
    env.run(&["record", "cm", "--kubeconfig", path_str(&no_ca)])
}

fn certificate_for_another_name() -> Output {
    let env = shop_tls();
    // The certificate names 127.0.0.1 and localhost; verify it for another name.
    let other = kubeconfig_variant(&env, "other-name", |kc| {
        kc["clusters"][0]["cluster"]["tls-server-name"] = json!("api.example.com");
    });
    env.run(&["record", "cm", "--kubeconfig", path_str(&other)])
}

/// A TLS server on 127.0.0.1 whose certificate, signed by a CA the kubeconfig
/// trusts, ran out in 2001: the handshake is all a client gets from it.
fn expired_certificate() -> Output {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair, date_time_ymd};
    use tokio_rustls::rustls;
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_key = KeyPair::generate().unwrap();
    let ca_pem = ca_params.self_signed(&ca_key).unwrap().pem();
    let issuer = Issuer::new(ca_params, ca_key);
    let mut params = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    params.not_before = date_time_ymd(2000, 1, 1);
    params.not_after = date_time_ymd(2001, 1, 1);
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &issuer).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(
        vec![cert.der().clone()],
        rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
    )
    .unwrap();
    let config = std::sync::Arc::new(config);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // Serves the handshakes of a few connection attempts, then stops listening.
    std::thread::spawn(move || {
        for mut tcp in listener.incoming().take(8).flatten() {
            let _ = tcp.set_read_timeout(Some(Duration::from_secs(10)));
            if let Ok(mut tls) = rustls::ServerConnection::new(config.clone()) {
                let _ = tls.complete_io(&mut tcp);
            }
        }
    });
    let sandbox = Sandbox::new();
    let kubeconfig = sandbox.dir.path().join("expired");
    let ca = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, ca_pem);
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: old\n\
             clusters: [{{name: old, cluster: {{server: \"https://127.0.0.1:{port}\", certificate-authority-data: {ca}}}}}]\n\
             users: [{{name: old, user: {{token: t}}}}]\n\
             contexts: [{{name: old, context: {{cluster: old, user: old}}}}]\n"
        ),
    )
    .unwrap();
    sandbox.run(&["record", "cm", "--kubeconfig", path_str(&kubeconfig)])
}

fn rejected_credentials() -> Output {
    let env = Env::new(SimConfig {
        seed: Seed::Shop,
        tls: true,
        token: Some("s3cret-token".into()),
        ..SimConfig::default()
    });
    let wrong = env.dir.path().join("wrong-token");
    env.sim
        .write_kubeconfig(
            &wrong,
            &KubeconfigOptions {
                token: Some("expired".into()),
                ..KubeconfigOptions::default()
            },
        )
        .unwrap();
    env.run(&["record", "cm", "--kubeconfig", path_str(&wrong)])
}

fn failing_credential_plugin() -> Output {
    let env = Env::new(SimConfig {
        seed: Seed::Shop,
        tls: true,
        token: Some("s3cret-token".into()),
        ..SimConfig::default()
    });
    let script = env.dir.path().join("get-token");
    std::fs::write(
        &script,
        "#!/bin/sh\necho 'error: could not get token: SSO session expired' >&2\nexit 1\n",
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let base = env.dir.path().join("base-kubeconfig");
    env.sim
        .write_kubeconfig(&base, &KubeconfigOptions::default())
        .unwrap();
    let mut kc: Value = serde_saphyr::from_str(&std::fs::read_to_string(&base).unwrap()).unwrap();
    kc["users"][0]["name"] = json!("sso-user");
    kc["users"][0]["user"] = json!({"exec": {
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "command": path_str(&script),
        "args": ["--profile", "prod"],
        "interactiveMode": "Never"}});
    kc["contexts"][0]["context"]["user"] = json!("sso-user");
    let sso = env.dir.path().join("sso-kubeconfig");
    std::fs::write(&sso, serde_json::to_string(&kc).unwrap()).unwrap();
    env.run(&["record", "cm", "--kubeconfig", path_str(&sso)])
}

fn max_size_too_small() -> Output {
    Env::shop().run(&["record", "--max-size", "10", "--for", "1s"])
}

fn watch_timeout_under_a_second() -> Output {
    Env::shop().run(&["record", "--watch-timeout", "500ms", "--for", "1s"])
}

fn unknown_resource() -> Output {
    Env::shop().run(&["record", "widgets"])
}

fn secrets_without_include_secrets() -> Output {
    Env::shop().run(&["record", "secrets"])
}

fn every_stream_refused() -> Output {
    let env = Env::shop();
    for resource in [
        "deployments",
        "statefulsets",
        "daemonsets",
        "services",
        "configmaps",
        "serviceaccounts",
    ] {
        env.sim.forbid(resource, None);
    }
    env.run(&["record", "-q", "--for", common::REFUSED_WITHIN])
}

fn unreachable_proxy() -> Output {
    let sandbox = Sandbox::new();
    let mut c = sandbox.command();
    c.env_remove("NO_PROXY")
        .env("HTTPS_PROXY", "http://127.0.0.1:9")
        // Never reached: the proxy is asked first.
        .args(["record", "--server", "https://127.0.0.1:6443"]);
    run_bounded(c, "record through a closed proxy")
}

// ---------------------------------------------------------------------------
// The journal.

fn stream_already_recorded() -> Output {
    let env = Env::shop();
    let first = env.start_recorder(&["cm"]);
    env.wait_baselines(1);
    let second = env.run(&["record", "cm"]);
    assert_eq!(first.stop().code, Some(0));
    second
}

fn no_journal() -> Output {
    Sandbox::new().run(&["coverage"])
}

fn sqlite_database_of_another_application() -> Output {
    let sandbox = Sandbox::new();
    std::fs::create_dir_all(sandbox.store.parent().unwrap()).unwrap();
    sqlite(&sandbox)
        .execute_batch("CREATE TABLE notes(text TEXT)")
        .unwrap();
    sandbox.run(&["coverage"])
}

fn not_an_sqlite_database() -> Output {
    let sandbox = Sandbox::new();
    std::fs::create_dir_all(sandbox.store.parent().unwrap()).unwrap();
    std::fs::write(&sandbox.store, "buy milk\n".repeat(100)).unwrap();
    sandbox.run(&["coverage"])
}

fn damaged_journal() -> Output {
    let sandbox = Sandbox::new();
    empty_journal(&sandbox);
    // Everything in the main file, then the clusters table's page overwritten.
    let (page_size, root) = {
        let db = sqlite(&sandbox);
        db.pragma_update(None, "journal_mode", "DELETE").unwrap();
        let page_size: i64 = db.query_row("PRAGMA page_size", [], |r| r.get(0)).unwrap();
        let root: i64 = db
            .query_row(
                "SELECT rootpage FROM sqlite_schema WHERE name = 'clusters'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        (page_size, root)
    };
    overwrite(
        &sandbox.store,
        ((root - 1) * page_size) as u64,
        page_size as usize,
    );
    sandbox.run(&["coverage"])
}

fn overwrite(path: &Path, offset: u64, len: usize) {
    use std::io::{Seek, SeekFrom, Write};
    let mut f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.seek(SeekFrom::Start(offset)).unwrap();
    f.write_all(&vec![0xff; len]).unwrap();
}

fn journal_too_new() -> Output {
    let sandbox = Sandbox::new();
    empty_journal(&sandbox);
    sqlite(&sandbox)
        .pragma_update(
            None,
            "user_version",
            krply::journal::schema::SCHEMA_VERSION + 1,
        )
        .unwrap();
    sandbox.run(&["coverage"])
}

// ---------------------------------------------------------------------------
// Browse.

/// A journal of cluster kind-shop with a Deployment stream in shop.
fn shop_stream(sandbox: &Sandbox) {
    let journal = Journal::open_or_create(&sandbox.store).expect("journal created");
    journal
        .register_cluster("kind-shop", "https://127.0.0.1:6443", Some("kind-shop"))
        .unwrap();
    journal
        .register_stream("kind-shop", &common::deployment_stream("shop"))
        .unwrap();
}

fn browse_nothing_recorded() -> Output {
    let sandbox = Sandbox::new();
    shop_stream(&sandbox);
    sandbox.run(&["browse", "-n", "elsewhere", "--cluster-id", "kind-shop"])
}

fn browse_without_a_terminal() -> Output {
    let sandbox = Sandbox::new();
    shop_stream(&sandbox);
    sandbox.run(&["browse", "-n", "shop", "--cluster-id", "kind-shop"])
}

/// A Parquet file with one integer column, and `meta` as its krply.segment
/// metadata when given.
fn parquet_file(path: &Path, meta: Option<Value>) {
    use arrow_array::{Int64Array, RecordBatch};
    use std::sync::Arc;
    let batch =
        RecordBatch::try_from_iter([("x", Arc::new(Int64Array::from(vec![1])) as _)]).unwrap();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let file = std::fs::File::create(path).unwrap();
    let mut w = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    if let Some(meta) = meta {
        w.append_key_value_metadata(parquet::file::metadata::KeyValue::new(
            "krply.segment".into(),
            meta.to_string(),
        ));
    }
    w.close().unwrap();
}

/// A segment's description, as export writes it, in `format`.
fn segment_meta(format: &str) -> Value {
    json!({
        "format": format,
        "journal": "0123456789abcdef0123456789abcdef",
        "cluster": {"id": "prod", "server": "https://10.0.0.5:6443", "context": null},
        "stream": {"group": "apps", "version": "v1", "resource": "deployments",
                   "kind": "Deployment", "singular": "deployment", "short_names": ["deploy"],
                   "namespaced": true, "namespace": "shop", "selector": null},
        "first_seq": 1, "last_seq": 1, "prev_seq": null, "rows": 1
    })
}

fn import_not_a_segment() -> Output {
    let sandbox = Sandbox::new();
    let file = sandbox.dir.path().join("Downloads/report.parquet");
    parquet_file(&file, None);
    let out = sandbox.run(&["import", path_str(&file)]);
    assert!(
        !sandbox.store.exists(),
        "a refused import creates no journal"
    );
    out
}

fn import_no_segments() -> Output {
    let sandbox = Sandbox::new();
    let dir = sandbox.dir.path().join("Downloads");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("notes.txt"), "not a segment").unwrap();
    sandbox.run(&["import", path_str(&dir)])
}

fn import_damaged_segment() -> Output {
    let sandbox = Sandbox::new();
    let file = sandbox
        .dir
        .path()
        .join("segments/prod/deployments.v1.apps@shop/2026-12-01.parquet");
    parquet_file(&file, Some(segment_meta("krply-segments/1")));
    sandbox.run(&["import", path_str(&file)])
}

fn import_newer_segment() -> Output {
    let sandbox = Sandbox::new();
    let file = sandbox
        .dir
        .path()
        .join("segments/prod/deployments.v1.apps@shop/2026-12-01.parquet");
    parquet_file(&file, Some(segment_meta("krply-segments/3")));
    let out = sandbox.run(&["import", path_str(&file)]);
    assert!(
        !sandbox.store.exists(),
        "a refused import creates no journal"
    );
    out
}

// ---------------------------------------------------------------------------
// Replay: usage errors.

fn invalid_target_namespace() -> Output {
    Sandbox::new().run(&["replay", "plan", "--to-namespace", "Shop_Copy"])
}

fn all_namespaces() -> Output {
    Sandbox::new().run(&["replay", "plan", "-A", "--to-namespace", "shop-copy"])
}

fn type_and_name() -> Output {
    let (env, _) = recorded();
    env.run(&[
        "replay",
        "plan",
        "deploy/frontend",
        "--to-namespace",
        "shop-copy",
    ])
}

/// `replay plan --include KIND`, refused before anything is read.
fn plan_including(kind: &str) -> Output {
    Sandbox::new().run(&[
        "replay",
        "plan",
        "--to-namespace",
        "shop-copy",
        "--include",
        kind,
    ])
}

fn include_a_kind_not_left_out() -> Output {
    plan_including("Deployment")
}

fn include_secrets() -> Output {
    plan_including("Secret")
}

// ---------------------------------------------------------------------------
// Replay: refused plans.

fn into_itself() -> Output {
    let (env, at) = recorded();
    env.run(&["replay", "plan", "--to-namespace", "shop", "--at", &at])
}

/// A replay plan of `types` of the recorded shop into `shop-copy`.
fn plan_of(types: &str) -> Output {
    let (env, at) = recorded();
    env.run(&[
        "replay",
        "plan",
        types,
        "--to-namespace",
        "shop-copy",
        "--at",
        &at,
    ])
}

fn jobs_need_include() -> Output {
    plan_of("jobs")
}

fn secrets_are_never_replayed() -> Output {
    plan_of("secrets")
}

fn incomplete_recording() -> Output {
    let (env, _) = recorded();
    incomplete_recording_in(&env)
}

fn unreachable_target() -> Output {
    let (env, at) = recorded();
    let dead = env.dir.path().join("dead");
    std::fs::write(
        &dead,
        format!("apiVersion: v1\nkind: Config\nclusters:\n- name: dead\n  cluster:\n    server: {CLOSED}\ncontexts:\n- name: dead\n  context:\n    cluster: dead\nusers: []\n"),
    )
    .unwrap();
    let both = format!("{}:{}", env.kubeconfig.display(), dead.display());
    run_with_kubeconfig(
        &env,
        &both,
        &[
            "replay",
            "plan",
            "--to-namespace",
            "shop-copy",
            "--at",
            &at,
            "--target-context",
            "dead",
        ],
    )
}

// ---------------------------------------------------------------------------
// Replay: saved plans and apply.

fn no_such_plan() -> Output {
    let sandbox = Sandbox::new();
    empty_journal(&sandbox);
    sandbox.run(&["replay", "show", "3f2a9b1c"])
}

fn unreadable_plan() -> Output {
    let (env, _) = recorded();
    let id = refused_plan(&env);
    // As if saved by a version whose plans had no `target`.
    edit_plan(&env, &id, |plan| {
        plan.as_object_mut().unwrap().remove("target");
        plan.to_string()
    });
    env.run(&["replay", "show", &id])
}

fn apply_without_confirm() -> Output {
    let (env, _) = recorded();
    let id = refused_plan(&env);
    env.run(&["replay", "apply", &id])
}

fn apply_a_refused_plan() -> Output {
    let (env, _) = recorded();
    let id = refused_plan(&env);
    env.run(&["replay", "apply", &id, "--confirm"])
}

fn context_points_elsewhere() -> Output {
    let (env, at) = recorded();
    // A second context, kind-test, for the same cluster; planned into it...
    let (kind, both) = env.named_context(&env.sim, "kind-test");
    let id = dry_run_ok_plan(&env, &both, &at, &["--target-context", "kind-test"]);
    // ...then the cluster was recreated elsewhere.
    let text = std::fs::read_to_string(&kind).unwrap();
    let mut kc: Value = serde_saphyr::from_str(&text).unwrap();
    kc["clusters"][0]["cluster"]["server"] = json!(CLOSED);
    std::fs::write(&kind, kc.to_string()).unwrap();
    run_with_kubeconfig(&env, &both, &["replay", "apply", &id, "--confirm"])
}

fn apply_into_the_source() -> Output {
    let (env, at) = recorded();
    let id = dry_run_ok_plan(&env, path_str(&env.kubeconfig), &at, &[]);
    edit_plan(&env, &id, |plan| {
        plan["target"]["namespace"] = json!("shop");
        plan.to_string()
    });
    env.run(&["replay", "apply", &id, "--confirm"])
}

fn target_gone_during_apply() -> Output {
    let (env, at) = recorded();
    let id = dry_run_ok_plan(&env, path_str(&env.kubeconfig), &at, &[]);
    env.sim.shutdown();
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port_of(&env.sim.url())));
    env.wait_for("the simulator to stop listening", || {
        std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_err()
    });
    env.run(&["replay", "apply", &id, "--confirm"])
}

/// shop-copy exists, and helm owns a value there that a plan of shop's
/// ConfigMaps sets otherwise.
fn helm_owns_feature_flags_in_shop_copy(env: &Env) {
    env.sim
        .create(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop-copy"}}))
        .unwrap();
    env.sim
        .apply(
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "feature-flags", "namespace": "shop-copy"},
                   "data": {"ads.enabled": "true"}}),
            "helm",
            false,
            false,
        )
        .unwrap();
}

fn dry_run_failed() -> Output {
    let (env, at) = recorded();
    helm_owns_feature_flags_in_shop_copy(&env);
    env.run(&[
        "replay",
        "plan",
        "cm",
        "--to-namespace",
        "shop-copy",
        "--at",
        &at,
        "-o",
        "json",
    ])
}

fn apply_conflict() -> Output {
    let (env, at) = recorded();
    // Planned while shop-copy does not exist: its objects are checked at apply.
    let id = dry_run_ok_plan(&env, path_str(&env.kubeconfig), &at, &["cm"]);
    // Meanwhile helm made shop-copy and owns a value the plan sets otherwise.
    helm_owns_feature_flags_in_shop_copy(&env);
    let out = env.run(&["replay", "apply", &id, "--confirm"]);
    assert!(out.stdout.contains("conflict"), "{out:?}");
    out
}
