//! The real control plane: kube-apiserver, etcd and kube-controller-manager
//! built from Kubernetes' own Go modules (`tests/realkube`), and the
//! `kubectl` built from the same modules, so that client and server match.
//!
//! The first test that needs it builds it with `go build` (Go's module and
//! build caches make a warm build take seconds) and starts one control plane
//! for the whole test run; each test works in namespaces of its own. The
//! control plane stops when this process ends (its standard input closes).
//! These tests are never skipped: without Go, they fail and say so.
//!
//! From here on the real server is the reference: where the simulator answers
//! differently, the simulator is wrong (see `parity.rs` and
//! docs/simulator.md).

mod answers;
mod audit;
mod errors;
mod gone;
mod lasting;
mod parity;
pub(crate) mod proxy;
mod rbac;
mod replay;
mod soak;
mod story;

use crate::common::{Sandbox, wait_for_within};
use serde::Deserialize;
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long a condition on the real server may take (controllers react in
/// their own time, and the machine may be busy).
pub const REAL_DEADLINE: Duration = Duration::from_secs(90);

/// What `realkube up` writes to `ready.json` (the parts the tests use; it
/// also names the CA, the users' tokens and the logs).
#[derive(Debug, Deserialize)]
pub struct Ready {
    pub server: String,
    pub version: String,
    pub kubeconfig: PathBuf,
    pub etcd: String,
    /// The kube-apiserver's audit log (JSON lines; docs/audit.md).
    pub audit_log: PathBuf,
    /// How many times kube-apiserver was restarted (`realkube
    /// restart-apiserver`), one number.
    pub restarts_file: PathBuf,
    /// While this file exists, the `expiring` context's credential plugin
    /// fails with its text.
    pub token_fail_file: PathBuf,
    /// One line per token the `expiring` context's plugin minted.
    pub tokens_minted_file: PathBuf,
}

/// One write the server completed with success, as its audit log has it:
/// the oracle the real tests judge the journal against.
#[derive(Debug, Clone)]
pub struct AuditedWrite {
    pub resource: String,
    pub namespace: Option<String>,
    pub name: String,
    pub verb: String,
    /// When the server answered (`stageTimestamp`), ms.
    pub at: i64,
    /// The resourceVersion it made, where the log holds the response
    /// (RequestResponse level).
    pub resource_version: Option<String>,
}

impl Ready {
    /// Every create, update and patch the server completed with success,
    /// oldest first, from its audit log ([`Ready::audit_text`]).
    pub fn audited_writes(&self) -> Vec<AuditedWrite> {
        let mut out: Vec<AuditedWrite> = self
            .audit_text()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|e| {
                e["stage"] == "ResponseComplete"
                    && matches!(e["verb"].as_str(), Some("create" | "update" | "patch"))
                    && e["responseStatus"]["code"]
                        .as_i64()
                        .is_some_and(|c| (200..300).contains(&c))
            })
            .filter_map(|e| {
                let text = |v: &Value| v.as_str().map(str::to_string);
                Some(AuditedWrite {
                    resource: text(&e["objectRef"]["resource"])?,
                    namespace: text(&e["objectRef"]["namespace"]),
                    name: text(&e["objectRef"]["name"])?,
                    verb: text(&e["verb"])?,
                    at: krply::time::Millis::parse_rfc3339(e["stageTimestamp"].as_str()?)
                        .ok()?
                        .as_ms(),
                    resource_version: text(&e["responseObject"]["metadata"]["resourceVersion"]),
                })
            })
            .collect();
        out.sort_by_key(|w| w.at);
        out
    }

    /// Every line of the audit log, oldest first, the files kube-apiserver
    /// rotated away included: it starts a new `audit.log` at 100 MB, and
    /// keeps the old one as `audit-TIME.log` beside it (a long soak writes
    /// several).
    pub fn audit_text(&self) -> String {
        let dir = self.audit_log.parent().expect("the audit log's directory");
        let mut rotated: Vec<PathBuf> = std::fs::read_dir(dir)
            .map(|d| {
                d.filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| {
                        p.file_name()
                            .and_then(|n| n.to_str())
                            .is_some_and(|n| n.starts_with("audit-") && n.ends_with(".log"))
                    })
                    .collect()
            })
            .unwrap_or_default();
        // Named by the time they were rotated: in order by name.
        rotated.sort();
        rotated.push(self.audit_log.clone());
        rotated
            .iter()
            .filter_map(|p| std::fs::read_to_string(p).ok())
            .collect()
    }
}

/// The running control plane, shared by every test of this process.
pub struct RealKube {
    pub ready: Ready,
    pub built: &'static Built,
    /// Kept open: its standard input is the launcher's lifeline.
    launcher: Mutex<Child>,
    /// Where `up` keeps its state.
    pub dir: PathBuf,
}

/// The `realkube` binary, and a directory holding `kubectl`, a link to it.
pub struct Built {
    pub bin: PathBuf,
    pub bin_dir: PathBuf,
    /// The Kubernetes release it was built from (`v1.37.2`).
    pub version: String,
}

static BUILT: OnceLock<Result<Built, String>> = OnceLock::new();
static REAL: OnceLock<Result<RealKube, String>> = OnceLock::new();

fn out_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("realkube")
}

/// The `realkube` binary, built on first use.
pub fn built() -> &'static Built {
    match BUILT.get_or_init(|| build(&out_dir())) {
        Ok(b) => b,
        Err(e) => panic!("realkube could not be built:\n{e}"),
    }
}

/// kubectl built from the same Kubernetes release as the real server: every
/// test that needs a kubectl uses this one, so none is ever skipped.
pub fn kubectl_bin() -> PathBuf {
    built().bin_dir.join("kubectl")
}

/// The control plane, built and started on first use.
pub fn real() -> &'static RealKube {
    match REAL.get_or_init(|| RealKube::start("shared", &["--token-ttl", "20s"])) {
        Ok(k) => k,
        Err(e) => panic!("the real control plane is not available:\n{e}"),
    }
}

/// Says something on the test process's own stderr, past the test harness's
/// output capture, so that it shows in every run's log.
pub fn announce(text: &str) {
    let _ = writeln!(std::io::stderr(), "{text}");
}

fn go() -> String {
    std::env::var("GO").unwrap_or_else(|_| "go".into())
}

fn run_go(dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new(go())
        .args(args)
        .current_dir(dir)
        .output()
        .map_err(|e| {
            format!(
                "cannot run `{} {}`: {e}\nThe real-server tests need Go 1.26 or later on PATH \
                 (or in $GO); see README.md.",
                go(),
                args.join(" ")
            )
        })?;
    if !out.status.success() {
        return Err(format!(
            "`go {}` failed:\n{}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// `-ldflags` that make the binary report the Kubernetes release it was built
/// from (`/version`, `kubectl version`), as Kubernetes' own build does.
fn version_ldflags(version: &str) -> Result<String, String> {
    let mut parts = version.trim_start_matches('v').split('.');
    let (Some(major), Some(minor)) = (parts.next(), parts.next()) else {
        return Err(format!("not a release version: {version}"));
    };
    // Kubernetes' own build sets both: the servers and `kubectl version` read
    // component-base's, the User-Agent of every client reads client-go's.
    let mut flags = String::from("-s -w");
    for pkg in [
        "k8s.io/component-base/version",
        "k8s.io/client-go/pkg/version",
    ] {
        flags.push_str(&format!(
            " -X {pkg}.gitVersion={version} -X {pkg}.gitMajor={major} -X {pkg}.gitMinor={minor} \
             -X {pkg}.gitTreeState=clean -X {pkg}.buildDate=1970-01-01T00:00:00Z"
        ));
    }
    Ok(flags)
}

/// What the build depends on: the Go toolchain and settings, the flags, and
/// every source file. Go caches compiled packages but relinks a 180 MB binary
/// on every `go build` (about 15 s here); an unchanged fingerprint skips that.
fn fingerprint(src: &Path, ldflags: &str) -> Result<String, String> {
    let mut h = ring::digest::Context::new(&ring::digest::SHA256);
    h.update(
        run_go(
            src,
            &[
                "env",
                "GOVERSION",
                "GOOS",
                "GOARCH",
                "CGO_ENABLED",
                "GOFLAGS",
            ],
        )?
        .as_bytes(),
    );
    h.update(ldflags.as_bytes());
    let mut files: Vec<PathBuf> = std::fs::read_dir(src)
        .map_err(|e| e.to_string())?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "go")
                || p.file_name()
                    .is_some_and(|n| n == "go.mod" || n == "go.sum")
        })
        .collect();
    files.sort();
    for f in files {
        h.update(f.file_name().unwrap().as_encoded_bytes());
        h.update(&std::fs::read(&f).map_err(|e| e.to_string())?);
    }
    Ok(h.finish()
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// Builds `realkube` (and a `kubectl` link to it) under the target directory,
/// unless the one there was built from the same sources.
fn build(out_dir: &Path) -> Result<Built, String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/realkube");
    let started = Instant::now();
    let version = run_go(
        &src,
        &["list", "-m", "-f", "{{.Version}}", "k8s.io/kubernetes"],
    )?;
    let ldflags = version_ldflags(&version)?;
    let bin = out_dir.join("realkube");
    let bin_dir = out_dir.join("bin");
    let stamp = out_dir.join("realkube.fingerprint");
    let print = fingerprint(&src, &ldflags)?;
    if bin.exists() && std::fs::read_to_string(&stamp).is_ok_and(|s| s == print) {
        announce(&format!(
            "realkube: up to date (k8s.io/kubernetes {version}), checked in {:.1}s",
            started.elapsed().as_secs_f64()
        ));
        return Ok(Built {
            bin,
            bin_dir,
            version,
        });
    }
    std::fs::create_dir_all(&bin_dir).map_err(|e| e.to_string())?;
    // Built under a name of its own, then renamed: a concurrent test run never
    // sees half a binary.
    let tmp = out_dir.join(format!("realkube.{}", std::process::id()));
    run_go(
        &src,
        &[
            "build",
            "-trimpath",
            "-ldflags",
            &ldflags,
            "-o",
            tmp.to_str().ok_or("non-UTF-8 target directory")?,
            ".",
        ],
    )?;
    std::fs::rename(&tmp, &bin).map_err(|e| e.to_string())?;
    std::fs::write(&stamp, &print).map_err(|e| e.to_string())?;
    let link = bin_dir.join("kubectl");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&bin, &link).map_err(|e| e.to_string())?;
    announce(&format!(
        "realkube: built from k8s.io/kubernetes {version} in {:.1}s",
        started.elapsed().as_secs_f64()
    ));
    Ok(Built {
        bin,
        bin_dir,
        version,
    })
}

/// Removes the directories of earlier runs whose control plane is gone.
fn clean_old_runs(out_dir: &Path) {
    let Ok(entries) = std::fs::read_dir(out_dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if !entry.file_name().to_string_lossy().starts_with("run-") {
            continue;
        }
        let alive = std::fs::read_to_string(path.join("launcher.pid"))
            .ok()
            .and_then(|p| p.trim().parse::<u32>().ok())
            .is_some_and(|pid| Path::new(&format!("/proc/{pid}")).exists());
        if !alive {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

impl RealKube {
    /// A control plane of the calling test's own, for what would disturb
    /// the others (restarting kube-apiserver); `up_args` are added to `up`'s.
    /// Stopped with [`RealKube::stop`], or when this process ends.
    pub fn private(name: &str, up_args: &[&str]) -> &'static RealKube {
        match RealKube::start(name, up_args) {
            Ok(k) => Box::leak(Box::new(k)),
            Err(e) => panic!("a control plane of its own could not start:\n{e}"),
        }
    }

    /// Stops it (`up` stops every component on SIGTERM).
    pub fn stop(&self) {
        let mut child = self.launcher.lock().unwrap_or_else(|e| e.into_inner());
        if let Ok(None) = child.try_wait() {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
            let deadline = Instant::now() + Duration::from_secs(30);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Restarts kube-apiserver alone on the same etcd, down for `down_for`
    /// in between; returns once the new one is ready.
    pub fn restart_apiserver(&self, down_for: Duration) {
        let out = Command::new(&self.built.bin)
            .args(["restart-apiserver", "--timeout", "120s", "--down-for"])
            .arg(format!("{}ms", down_for.as_millis()))
            .arg("--dir")
            .arg(&self.dir)
            .output()
            .expect("realkube restart-apiserver runs");
        assert!(
            out.status.success(),
            "realkube restart-apiserver failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn start(name: &str, up_args: &[&str]) -> Result<RealKube, String> {
        let out_dir = out_dir();
        let built = BUILT
            .get_or_init(|| build(&out_dir))
            .as_ref()
            .map_err(|e| e.clone())?;
        let bin = &built.bin;
        clean_old_runs(&out_dir);
        let dir = out_dir.join(format!("run-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let log_path = dir.join("up.log");
        let log = std::fs::File::create(&log_path).map_err(|e| e.to_string())?;
        let started = Instant::now();
        let mut child = Command::new(bin)
            .args(["up", "--lifeline", "--ttl", "2h"])
            .args(up_args)
            .arg("--dir")
            .arg(&dir)
            .stdin(Stdio::piped())
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
        std::fs::write(dir.join("launcher.pid"), child.id().to_string())
            .map_err(|e| e.to_string())?;
        let ready_file = dir.join("ready.json");
        let deadline = Duration::from_secs(300);
        while !ready_file.exists() {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(format!(
                    "realkube up exited ({status}) before it was ready:\n{}",
                    std::fs::read_to_string(&log_path).unwrap_or_default()
                ));
            }
            if started.elapsed() > deadline {
                let _ = child.kill();
                return Err(format!(
                    "realkube up was not ready within {deadline:?}:\n{}",
                    std::fs::read_to_string(&log_path).unwrap_or_default()
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let ready: Ready =
            serde_json::from_slice(&std::fs::read(&ready_file).map_err(|e| e.to_string())?)
                .map_err(|e| format!("ready.json: {e}"))?;
        announce(&format!(
            "realkube: kube-apiserver {} at {} (etcd, kube-controller-manager; kubectl {}), \
             ready in {:.1}s; state in {}",
            ready.version,
            ready.server,
            ready.version,
            started.elapsed().as_secs_f64(),
            dir.display()
        ));
        Ok(RealKube {
            ready,
            built,
            launcher: Mutex::new(child),
            dir,
        })
    }

    /// Compacts etcd to its current revision: every resourceVersion before
    /// now is gone for whatever reaches etcd rather than the watch cache.
    /// The revision, or 0 when it already was (nothing written since).
    pub fn compact(&self) -> u64 {
        self.compact_args(&[])
    }

    /// Compacts etcd to exactly `revision`.
    pub fn compact_to(&self, revision: u64) -> u64 {
        self.compact_args(&["--revision", &revision.to_string()])
    }

    fn compact_args(&self, extra: &[&str]) -> u64 {
        let out = Command::new(&self.built.bin)
            .args(["compact", "--etcd", &self.ready.etcd])
            .args(extra)
            .output()
            .expect("realkube compact runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        // Nothing written since the last compaction: already compacted to
        // this revision (the caller wanted just that).
        if extra.is_empty() && stderr.contains("required revision has been compacted") {
            return 0;
        }
        assert!(
            out.status.success(),
            "realkube compact failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .expect("a revision")
    }
}

/// One test's view of the real control plane: a sandbox whose kubeconfig
/// holds the admin (current) and limited contexts, and kubectl.
pub struct RealEnv {
    pub kube: &'static RealKube,
    sandbox: Sandbox,
}

impl std::ops::Deref for RealEnv {
    type Target = Sandbox;
    fn deref(&self) -> &Sandbox {
        &self.sandbox
    }
}

impl RealEnv {
    /// A sandbox on the shared control plane, with namespace `namespace` as
    /// its kubeconfig's default (not created: see [`RealEnv::create_namespace`]).
    pub fn new(namespace: &str) -> RealEnv {
        RealEnv::on(real(), namespace)
    }

    /// [`RealEnv::new`] on another control plane ([`RealKube::private`]).
    pub fn on(kube: &'static RealKube, namespace: &str) -> RealEnv {
        let mut sandbox = Sandbox::new();
        let mut kubeconfig: Value = serde_saphyr::from_str(
            &std::fs::read_to_string(&kube.ready.kubeconfig).expect("kubeconfig"),
        )
        .expect("kubeconfig parses");
        for ctx in kubeconfig["contexts"].as_array_mut().expect("contexts") {
            ctx["context"]["namespace"] = Value::String(namespace.into());
        }
        std::fs::write(
            &sandbox.kubeconfig,
            serde_json::to_string_pretty(&kubeconfig).unwrap(),
        )
        .expect("kubeconfig written");
        // kubectl caches discovery per server under here.
        sandbox.extra_env.push((
            "KUBECACHEDIR".into(),
            sandbox.dir.path().join("kube-cache").into(),
        ));
        RealEnv { kube, sandbox }
    }

    /// A proxy in front of the server, with the sandbox's kubeconfig (so
    /// `kubectl-krply`, not kubectl) routed through it.
    pub fn behind_proxy(&mut self) -> proxy::Proxy {
        let upstream = self
            .kube
            .ready
            .server
            .trim_start_matches("https://")
            .parse()
            .expect("the server's address");
        let proxy = proxy::Proxy::start(upstream);
        self.route_through(&proxy.url());
        proxy
    }

    /// Points the sandbox's kubeconfig (so `kubectl-krply`) at `url`, a
    /// proxy in front of the server; kubectl keeps talking to the server.
    pub fn route_through(&mut self, url: &str) {
        let mut kubeconfig: Value =
            serde_json::from_str(&std::fs::read_to_string(&self.kubeconfig).unwrap()).unwrap();
        for cluster in kubeconfig["clusters"].as_array_mut().expect("clusters") {
            cluster["cluster"]["server"] = Value::String(url.into());
        }
        std::fs::write(&self.kubeconfig, kubeconfig.to_string()).unwrap();
        self.sandbox
            .kubectl_args
            .push(format!("--server={}", self.kube.ready.server));
    }

    pub fn create_namespace(&self, namespace: &str) {
        self.kubectl_ok(&["create", "namespace", namespace]);
    }

    /// Installs the Online Boutique (`fixtures/shop`) into `namespace` with
    /// server-side apply, as field manager `manager`.
    pub fn install_shop(&self, namespace: &str, manager: &str) {
        self.kubectl_stdin(
            &[
                "apply",
                "--server-side",
                "--field-manager",
                manager,
                "-n",
                namespace,
            ],
            &shop_manifest(namespace).to_string(),
        );
    }

    /// Waits until the recorder journaled the current version of `what`
    /// (`kind/name` in `namespace`) in `stream`: everything before it in that
    /// stream is journaled too.
    pub fn wait_journaled(&self, stream: &str, namespace: &str, what: &str) {
        let obj = self.get_json(what, namespace);
        let rv = obj["metadata"]["resourceVersion"]
            .as_str()
            .expect("a resourceVersion")
            .to_string();
        self.wait_event(stream, namespace, what, |_, event_rv| event_rv == rv);
    }

    /// Waits until the recorder journaled the deletion of `what`.
    pub fn wait_deleted(&self, stream: &str, namespace: &str, what: &str) {
        self.wait_event(stream, namespace, what, |t, _| t == "DELETED");
    }

    fn wait_event(
        &self,
        stream: &str,
        namespace: &str,
        what: &str,
        matches: impl Fn(&str, &str) -> bool,
    ) {
        let name = what.rsplit('/').next().unwrap();
        let key = format!("{namespace}/{name}");
        self.wait_real(&format!("{what} journaled in {stream}"), || {
            std::panic::catch_unwind(|| self.events(stream))
                .unwrap_or_default()
                .iter()
                .any(|(t, obj, rv, _)| *obj == key && matches(t, rv))
        });
    }

    /// Waits until the authorizer lets `user` do `verb resource` (with more
    /// `kubectl auth can-i` arguments, such as `-n NS` or `-A`): a new
    /// binding takes a moment to reach it.
    pub fn wait_can_i(&self, user: &str, verb: &str, resource: &str, scope: &[&str]) {
        let mut args = vec!["auth", "can-i", verb, resource, "--as", user];
        args.extend(scope);
        self.wait_real(&format!("{user} may {verb} {resource}"), || {
            self.kubectl(&args).stdout.trim() == "yes"
        });
    }

    /// Waits until `check` holds, up to [`REAL_DEADLINE`].
    pub fn wait_real(&self, what: &str, mut check: impl FnMut() -> bool) {
        wait_for_within(what, REAL_DEADLINE, &mut check)
    }
}

/// The Online Boutique's manifests (Deployments, Services, ServiceAccounts)
/// with their namespace set to `namespace`.
pub fn shop_manifest(namespace: &str) -> Value {
    let mut list: Value = serde_json::from_str(include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/shop/online-boutique.json"
    )))
    .expect("fixture parses");
    for item in list["items"].as_array_mut().expect("items") {
        item["metadata"]["namespace"] = Value::String(namespace.into());
    }
    list
}

/// The image of the first container of the shop's Deployment `name`, as
/// the fixture declares it.
pub fn shop_image(name: &str) -> Value {
    shop_manifest("shop")["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["kind"] == "Deployment" && i["metadata"]["name"] == name)
        .map(|d| d["spec"]["template"]["spec"]["containers"][0]["image"].clone())
        .unwrap_or_else(|| panic!("no Deployment {name} in the shop"))
}

/// The object `kind/name` of a `diff -o json` answer.
pub fn diff_object<'a>(diff: &'a Value, kind: &str, name: &str) -> &'a Value {
    diff["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == kind && o["name"] == name)
        .unwrap_or_else(|| panic!("no {kind}/{name} in the diff:\n{diff:#}"))
}

/// Now, as an RFC 3339 time truncated to the millisecond: everything the
/// recorder observed before is at or before it, and what a command started
/// afterwards causes is observed after it (starting a process alone takes
/// longer than a millisecond).
pub fn mark() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}
