//! Shared harness for the integration tests: a simulator on 127.0.0.1, a private
//! kubeconfig, HOME and journal per test, the real binary, and condition waits
//! with deadlines (never sleeps as synchronisation).

use krply::journal::Journal;
use krply::journal::read::{Coverage, RecordView, StreamInfo};
use krply_sim::{KubeconfigOptions, SimConfig, Simulator};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub mod tmux;

/// The binary under test: this build's, or `KRPLY_TEST_BIN` (a release
/// build, for the long runs of the README that measure as users run it).
pub static BIN: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    std::env::var("KRPLY_TEST_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_kubectl-krply").into())
});

/// How long any condition may take before a test fails.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// How long one command may run.
pub const COMMAND_DEADLINE: Duration = Duration::from_secs(90);
/// `record --for` for a run expected to fail while it starts (unknown resource,
/// unreachable server, refused credentials): the error ends it, this only bounds
/// it. A short `--for` can end a slow start-up on a loaded machine first, and that
/// is a clean stop with exit 0 ("stopped before recording started"), not the
/// error the test is about. Below [`COMMAND_DEADLINE`].
pub const REFUSED_WITHIN: &str = "60s";

/// A private HOME, kubeconfig and journal for one test, and the real binary
/// run in it; the simulator's [`Env`] and the real control plane's
/// `real::RealEnv` both build on it.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
    pub kubeconfig: PathBuf,
    pub store: PathBuf,
    /// Environment added to every command (on top of the hermetic base).
    pub extra_env: Vec<(String, std::ffi::OsString)>,
    /// Arguments put before every kubectl command's own.
    pub kubectl_args: Vec<String>,
    recorders: std::sync::atomic::AtomicU32,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        let dir = tempfile::tempdir().expect("temp dir");
        let kubeconfig = dir.path().join("kubeconfig");
        let store = dir.path().join("data").join("journal.db");
        Sandbox {
            dir,
            kubeconfig,
            store,
            extra_env: Vec::new(),
            kubectl_args: Vec::new(),
            recorders: Default::default(),
        }
    }

    /// The binary with a hermetic environment.
    pub fn command(&self) -> Command {
        let mut c = Command::new(&*BIN);
        c.env_clear()
            .env("HOME", self.dir.path())
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("KUBECONFIG", &self.kubeconfig)
            .env("KRPLY_STORE", &self.store)
            // Text shows times in the local zone: the tests' is UTC unless
            // one says otherwise.
            .env("TZ", "UTC")
            .env("NO_COLOR", "1")
            .env("NO_PROXY", "127.0.0.1,localhost");
        for (k, v) in &self.extra_env {
            c.env(k, v);
        }
        c
    }

    /// Runs the binary to completion (killed at [`COMMAND_DEADLINE`]).
    pub fn run(&self, args: &[&str]) -> Output {
        let mut c = self.command();
        c.args(args);
        run_bounded(c, &format!("kubectl-krply {args:?}"))
    }

    /// Starts `record ARGS` in the background; each recorder of a test gets
    /// its own output and log files.
    pub fn start_recorder(&self, args: &[&str]) -> RecorderProc {
        self.start_recorder_with(args, |_| {})
    }

    /// [`Sandbox::start_recorder`], with `prepare` changing the command first
    /// (its environment, say).
    pub fn start_recorder_with(
        &self,
        args: &[&str],
        prepare: impl FnOnce(&mut Command),
    ) -> RecorderProc {
        let n = self
            .recorders
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let log = self.dir.path().join(format!("record-{n}.log"));
        let out = self.dir.path().join(format!("record-{n}.out"));
        let mut command = self.command();
        prepare(&mut command);
        let child = command
            .arg("record")
            .args(args)
            .stdout(Stdio::from(
                std::fs::File::create(&out).expect("stdout file"),
            ))
            .stderr(Stdio::from(std::fs::File::create(&log).expect("log file")))
            .spawn()
            .expect("recorder starts");
        RecorderProc {
            child: Some(child),
            log,
            out,
        }
    }

    /// `record ARGS` that must get as far as recording: it runs until a new
    /// list is in the journal (or it ends by itself), then stops, and fails
    /// the test if it listed nothing. A short `--for` could end a slow
    /// start-up first, which exits 0 without having connected at all.
    pub fn record_until_listed(&self, args: &[&str], prepare: impl FnOnce(&mut Command)) -> Output {
        let before = lists_recorded(&self.store);
        let mut rec = self.start_recorder_with(args, prepare);
        wait_for(
            "a new list in the journal, or the recorder's end",
            &mut || rec.exited() || lists_recorded(&self.store) > before,
        );
        let out = rec.stop_unless_exited();
        assert!(
            lists_recorded(&self.store) > before,
            "the recorder listed nothing: {}",
            out.stderr
        );
        out
    }

    /// kubectl (built from the same Kubernetes release as the server) with
    /// this sandbox's HOME and kubeconfig.
    pub fn kubectl_cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(crate::real::kubectl_bin());
        c.env_clear()
            .env("HOME", self.dir.path())
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("KUBECONFIG", &self.kubeconfig)
            .env("NO_PROXY", "127.0.0.1,localhost");
        c.args(&self.kubectl_args).args(args);
        for (k, v) in &self.extra_env {
            c.env(k, v);
        }
        c
    }

    pub fn kubectl(&self, args: &[&str]) -> Output {
        run_bounded(self.kubectl_cmd(args), &format!("kubectl {args:?}"))
    }

    /// kubectl that must succeed; returns its stdout.
    pub fn kubectl_ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert_eq!(
            out.code,
            Some(0),
            "kubectl {args:?} failed\nstdout:\n{}\nstderr:\n{}",
            out.stdout,
            out.stderr
        );
        out.stdout
    }

    /// kubectl that must succeed, with `input` on its standard input (`-f -`).
    pub fn kubectl_stdin(&self, args: &[&str], input: &str) -> String {
        let path = self.dir.path().join(format!(
            "stdin-{}.json",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        std::fs::write(&path, input).expect("manifest written");
        let mut full: Vec<&str> = args.to_vec();
        full.extend(["-f", path.to_str().expect("utf-8")]);
        self.kubectl_ok(&full)
    }

    /// The object as JSON.
    pub fn get_json(&self, what: &str, namespace: &str) -> Value {
        serde_json::from_str(&self.kubectl_ok(&["get", what, "-n", namespace, "-o", "json"]))
            .expect("kubectl printed JSON")
    }

    /// `kubectl-krply ARGS -o json` that must exit `code`; its stdout parsed.
    pub fn krply_json(&self, args: &[&str], code: i32) -> Value {
        let mut full = args.to_vec();
        full.extend(["-o", "json"]);
        let out = self.run(&full);
        assert_eq!(
            out.code,
            Some(code),
            "kubectl krply {full:?}\nstdout:\n{}\nstderr:\n{}",
            out.stdout,
            out.stderr
        );
        serde_json::from_str(&out.stdout)
            .unwrap_or_else(|e| panic!("kubectl krply {full:?} printed no JSON ({e}):\n{out:?}"))
    }

    pub fn journal(&self) -> Journal {
        Journal::open(&self.store).expect("journal opens")
    }

    /// Waits until `check` holds, polling; panics with `what` at the deadline.
    pub fn wait_for(&self, what: &str, mut check: impl FnMut() -> bool) {
        wait_for(what, &mut check)
    }

    /// Waits until every stream has at least `n` baselines.
    pub fn wait_baselines(&self, n: u64) {
        self.wait_for(&format!("{n} baseline(s) per stream"), || {
            let Ok(j) = Journal::open(&self.store) else {
                return false;
            };
            let Ok(streams) = j.streams(None) else {
                return false;
            };
            !streams.is_empty() && streams.iter().all(|s| baselines(&j, s) >= n)
        });
    }

    pub fn stream(&self, name: &str) -> StreamInfo {
        self.journal()
            .streams(None)
            .unwrap()
            .into_iter()
            .find(|s| s.name() == name)
            .unwrap_or_else(|| panic!("no stream {name}"))
    }

    pub fn coverage(&self, name: &str) -> Coverage {
        let j = self.journal();
        let s = self.stream(name);
        j.coverage(&s, krply::time::Millis::now().as_ms(), false)
            .unwrap()
    }

    /// Records of one stream, oldest first.
    pub fn records(&self, name: &str) -> Vec<RecordView> {
        let s = self.stream(name);
        self.journal()
            .all_records()
            .unwrap()
            .into_iter()
            .filter(|r| r.stream == s.id)
            .collect()
    }

    /// The live events of one stream as (type, namespace/name, rv, body).
    pub fn events(&self, name: &str) -> Vec<(String, String, String, Vec<u8>)> {
        self.records(name)
            .into_iter()
            .filter(|r| r.kind == krply::journal::schema::kind::EVENT)
            .map(|r| {
                (
                    r.watch_type.unwrap().to_string(),
                    format!(
                        "{}/{}",
                        r.namespace.unwrap_or_default(),
                        r.name.unwrap_or_default()
                    ),
                    r.resource_version.unwrap_or_default(),
                    r.body.unwrap_or_default(),
                )
            })
            .collect()
    }

    /// Waits until the stream has at least `n` live events.
    /// Waits until `stream` is durable (a checkpoint, event or baseline)
    /// past what may still have been in flight at `t` (ms): a gap that
    /// follows starts after `t` (docs/consistency.md, "Gaps"). Up to a
    /// heartbeat's wait when nothing else is written.
    pub fn wait_settled(&self, stream: &str, t: i64) {
        use krply::journal::schema::kind;
        let past = t + krply::recorder::rules::IN_FLIGHT_MS;
        self.wait_for(&format!("{stream} durable past {past}"), || {
            std::panic::catch_unwind(|| {
                self.records(stream).iter().any(|r| {
                    matches!(r.kind, kind::EVENT | kind::CHECKPOINT | kind::BASELINE)
                        && r.observed_at > past
                })
            })
            .unwrap_or(false)
        });
    }

    /// [`Sandbox::wait_settled`] for every stream of the journal.
    pub fn wait_all_settled(&self, t: i64) {
        let past = t + krply::recorder::rules::IN_FLIGHT_MS;
        self.wait_for(&format!("every stream durable past {past}"), || {
            Journal::open(&self.store)
                .and_then(|j| {
                    let streams = j.streams(None)?;
                    let mut all = !streams.is_empty();
                    for s in &streams {
                        all &= j.last_durable(s.id)?.is_some_and(|d| d.at > past);
                    }
                    Ok(all)
                })
                .unwrap_or(false)
        });
    }

    pub fn wait_events(&self, stream: &str, n: usize) {
        self.wait_for(&format!("{n} events in {stream}"), || {
            std::panic::catch_unwind(|| self.events(stream).len()).unwrap_or(0) >= n
        });
    }
}

/// A simulator on 127.0.0.1 and a sandbox whose kubeconfig points at it.
pub struct Env {
    pub sim: Simulator,
    sandbox: Sandbox,
}

impl std::ops::Deref for Env {
    type Target = Sandbox;
    fn deref(&self) -> &Sandbox {
        &self.sandbox
    }
}

impl Env {
    pub fn new(cfg: SimConfig) -> Env {
        let sandbox = Sandbox::new();
        let sim = Simulator::start_background(cfg).expect("simulator starts");
        sim.write_kubeconfig(
            &sandbox.kubeconfig,
            &KubeconfigOptions {
                namespace: Some("shop".into()),
                ..KubeconfigOptions::default()
            },
        )
        .expect("kubeconfig written");
        Env { sim, sandbox }
    }

    pub fn shop() -> Env {
        Env::new(SimConfig {
            seed: krply_sim::Seed::Shop,
            bookmark_interval: Some(Duration::from_millis(200)),
            ..SimConfig::default()
        })
    }

    /// A kubeconfig for `sim` whose context, cluster and user are all named `name`, in
    /// this sandbox's directory, and the `KUBECONFIG` list that joins it to the
    /// sandbox's own (whose current context stays current).
    pub fn named_context(&self, sim: &Simulator, name: &str) -> (PathBuf, String) {
        let path = self.dir.path().join(name);
        sim.write_kubeconfig(
            &path,
            &KubeconfigOptions {
                context: name.into(),
                cluster: name.into(),
                user: name.into(),
                ..KubeconfigOptions::default()
            },
        )
        .expect("kubeconfig written");
        let both = format!("{}:{}", self.kubeconfig.display(), path.display());
        (path, both)
    }

    /// Merge-patches Deployment `deployment` in "shop" to `replicas` replicas.
    pub fn scale(&self, deployment: &str, replicas: i64) {
        self.sim
            .patch_merge(
                "apps/v1",
                "Deployment",
                Some("shop"),
                deployment,
                &serde_json::json!({"spec": {"replicas": replicas}}),
            )
            .unwrap();
    }

    /// Merge-patches one data key of ConfigMap `name` in "shop".
    pub fn patch_cm(&self, name: &str, key: &str, value: &str) {
        self.sim
            .patch_merge(
                "v1",
                "ConfigMap",
                Some("shop"),
                name,
                &serde_json::json!({"data": {key: value}}),
            )
            .expect("patch");
    }

    /// The simulator's own log for one resource in one namespace, after `rv`.
    pub fn sim_events(
        &self,
        resource: &str,
        namespace: &str,
        after_rv: u64,
    ) -> Vec<(String, String, String, Vec<u8>)> {
        self.sim
            .event_log()
            .into_iter()
            .filter(|e| e.resource == resource && e.namespace.as_deref() == Some(namespace))
            .filter(|e| e.rv.parse::<u64>().unwrap() > after_rv)
            .map(|e| {
                (
                    e.event_type.clone(),
                    format!("{}/{}", namespace, e.name),
                    e.rv.clone(),
                    e.object.to_vec(),
                )
            })
            .collect()
    }
}

pub fn baselines(j: &Journal, s: &StreamInfo) -> u64 {
    j.all_records()
        .map(|rs| {
            rs.iter()
                .filter(|r| r.stream == s.id && r.kind == krply::journal::schema::kind::BASELINE)
                .count() as u64
        })
        .unwrap_or(0)
}

/// Baselines (completed lists) in the journal at `store`, over every stream.
pub fn lists_recorded(store: &Path) -> u64 {
    let Ok(j) = Journal::open(store) else {
        return 0;
    };
    j.streams(None)
        .map(|streams| streams.iter().map(|s| baselines(&j, s)).sum())
        .unwrap_or(0)
}

pub fn wait_for(what: &str, check: &mut dyn FnMut() -> bool) {
    wait_for_within(what, DEADLINE, check)
}

/// Polls `check` until it holds; panics with `what` after `deadline`.
pub fn wait_for_within(what: &str, deadline: Duration, check: &mut dyn FnMut() -> bool) {
    let start = Instant::now();
    let mut pause = Duration::from_millis(5);
    loop {
        if check() {
            return;
        }
        if start.elapsed() > deadline {
            panic!("timed out after {deadline:?} waiting for {what}");
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(100));
    }
}

/// Waits until the recorder holds connections to 127.0.0.1 and every one has
/// its TCP keepalive timer armed, and returns them; panics with what it saw.
/// A socket with data in flight shows its retransmit timer instead, for a
/// moment: the wait looks again.
pub fn wait_keepalive(rec: &RecorderProc) -> Vec<Connection> {
    let mut seen = Vec::new();
    let waited = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        wait_for(
            "every connection of the recorder to have its keepalive timer armed",
            &mut || {
                seen = loopback_connections(rec.pid());
                !seen.is_empty() && seen.iter().all(|c| c.timer == 2)
            },
        )
    }));
    if waited.is_err() {
        let seen: Vec<String> = seen
            .iter()
            .map(|c| format!("127.0.0.1:{} timer {}", c.port, c.timer))
            .collect();
        panic!(
            "the recorder's connections to 127.0.0.1 (timer 2 is keepalive): {seen:?}\n{}",
            rec.log_text()
        );
    }
    seen
}

/// An ESTABLISHED TCP socket, as `/proc/PID/net/tcp{,6}` shows it.
pub struct Connection {
    /// The server's port.
    pub port: u16,
    /// `tr` of `tr:tm->when`: 0 none, 1 retransmit, 2 keepalive, 4 zero window probe.
    pub timer: u32,
}

/// The ESTABLISHED TCP sockets of process `pid` whose peer is 127.0.0.1.
pub fn loopback_connections(pid: u32) -> Vec<Connection> {
    // The process's sockets: its descriptors that link to `socket:[INODE]`.
    let inodes: std::collections::HashSet<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|dir| {
            dir.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
                .filter_map(|target| {
                    let target = target.to_str()?;
                    Some(
                        target
                            .strip_prefix("socket:[")?
                            .strip_suffix(']')?
                            .to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    // 127.0.0.1 as the tables write it: IPv4, or IPv4-mapped in tcp6.
    const LOOPBACK: [&str; 2] = ["0100007F", "0000000000000000FFFF00000100007F"];
    let mut found = Vec::new();
    for table in ["tcp", "tcp6"] {
        let text = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")).unwrap_or_default();
        for row in text.lines().skip(1) {
            let fields: Vec<&str> = row.split_whitespace().collect();
            let (Some(remote), Some(state), Some(timer), Some(inode)) =
                (fields.get(2), fields.get(3), fields.get(5), fields.get(9))
            else {
                continue;
            };
            let Some((ip, port)) = remote.split_once(':') else {
                continue;
            };
            if *state != "01" || !LOOPBACK.contains(&ip) || !inodes.contains(*inode) {
                continue;
            }
            let timer = timer
                .split(':')
                .next()
                .and_then(|t| u32::from_str_radix(t, 16).ok())
                .unwrap_or(u32::MAX);
            found.push(Connection {
                port: u16::from_str_radix(port, 16).unwrap_or_default(),
                timer,
            });
        }
    }
    found
}

#[derive(Debug)]
pub struct Output {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// A recorder running in the background.
pub struct RecorderProc {
    child: Option<Child>,
    pub log: PathBuf,
    pub out: PathBuf,
}

impl RecorderProc {
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(|c| c.id()).unwrap_or(0)
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Sends a signal by name (INT, TERM, KILL).
    pub fn signal(&self, sig: &str) {
        let status = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(self.pid().to_string())
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -{sig} failed");
    }

    /// Freezes it with SIGSTOP and returns once every one of its threads is
    /// stopped: the signal is only queued when `kill` returns, and a thread
    /// on another CPU may read (and stamp) a moment more.
    pub fn freeze(&self) {
        self.signal("STOP");
        let tasks = format!("/proc/{}/task", self.pid());
        let stopped = |stat: &str| {
            stat.rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with(['T', 't']))
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let all = std::fs::read_dir(&tasks).is_ok_and(|d| {
                d.flatten().all(|t| {
                    std::fs::read_to_string(t.path().join("stat")).is_ok_and(|s| stopped(&s))
                })
            });
            if all {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the recorder's threads did not all stop in 10 s"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Whether it has exited (by itself or by a signal).
    pub fn exited(&mut self) -> bool {
        self.child
            .as_mut()
            .is_none_or(|c| !matches!(c.try_wait(), Ok(None)))
    }

    /// Stops it with SIGINT unless it has exited already, and returns its
    /// exit code, stdout and log.
    pub fn stop_unless_exited(mut self) -> Output {
        if !self.exited() {
            // Not reaped yet: a recorder that exits now still takes the signal.
            self.signal("INT");
        }
        self.wait()
    }

    /// Stops it with SIGINT and returns its exit code, stdout and log.
    pub fn stop(mut self) -> Output {
        self.signal("INT");
        self.wait()
    }

    /// Waits for it to exit by itself (e.g. `--for`).
    pub fn wait(&mut self) -> Output {
        let mut child = self.child.take().expect("running");
        let start = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().expect("wait") {
                break s;
            }
            if start.elapsed() > DEADLINE {
                let _ = child.kill();
                panic!("recorder did not exit; log:\n{}", self.log_text());
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        Output {
            code: status.code(),
            stdout: std::fs::read_to_string(&self.out).unwrap_or_default(),
            stderr: self.log_text(),
        }
    }

    pub fn kill9(mut self) {
        let mut child = self.child.take().expect("running");
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for RecorderProc {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

pub fn path_str(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// The demo's journal: `kubectl-krply demo --dir HOME/demo` run with `home`
/// as its home directory (a 410 gap in every stream, an audit log imported,
/// a saved replay plan).
pub fn demo_journal(home: &Path) -> PathBuf {
    let mut demo = Command::new(&*BIN);
    demo.env_clear()
        .env("TZ", "UTC")
        .env("HOME", home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("NO_COLOR", "1")
        .env("NO_PROXY", "127.0.0.1,localhost")
        .args(["demo", "--dir"])
        .arg(home.join("demo"));
    let out = run_bounded(demo, "demo");
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    home.join("demo/journal.db")
}

/// Runs a command, killing it if it outlives the deadline.
pub fn run_bounded(mut cmd: Command, what: &str) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{what} starts: {e}"));
    let stdout = child.stdout.take().expect("stdout");
    let stderr = child.stderr.take().expect("stderr");
    let out = std::thread::spawn(move || std::io::read_to_string(stdout).unwrap_or_default());
    let err = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if started.elapsed() > COMMAND_DEADLINE {
            let _ = child.kill();
            panic!("{what} did not finish within {COMMAND_DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Output {
        code: status.code(),
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    }
}

/// The stream of a namespace's Deployments, as discovery describes them: for
/// tests that write a journal through the library.
pub fn deployment_stream(namespace: &str) -> krply::model::StreamSpec {
    krply::model::StreamSpec {
        resource: krply_sim::builtin_type("apps", "deployments").expect("a built-in type"),
        namespace: Some(namespace.into()),
        selector: None,
    }
}

/// What the recorder would take from an object it received (`d`, in
/// `namespace`): for tests that write a journal through the library.
pub fn object_meta(namespace: &str, d: &Value) -> krply::model::ObjectMeta {
    krply::model::ObjectMeta {
        namespace: namespace.into(),
        name: d["metadata"]["name"].as_str().unwrap().into(),
        uid: d["metadata"]["uid"].as_str().unwrap().into(),
        resource_version: d["metadata"]["resourceVersion"].as_str().unwrap().into(),
        diff_digest: krply::diff::compared_digest(&serde_json::to_vec(d).unwrap()),
        given_mark: None,
    }
}

/// A journal at `store` that holds the Deployments of `namespace` in
/// `cluster`, and its writer: for tests that write a journal through the
/// library.
pub fn library_writer(
    store: &Path,
    cluster: &str,
    namespace: &str,
) -> (
    krply::journal::writer::Writer,
    krply::journal::writer::WriterSender,
    krply::journal::StreamId,
) {
    let journal = Journal::open_or_create(store).unwrap();
    journal
        .register_cluster(cluster, "https://library.example:6443", Some(cluster))
        .unwrap();
    let stream = journal
        .register_stream(cluster, &deployment_stream(namespace))
        .unwrap();
    let writer = krply::journal::writer::Writer::start(journal).unwrap();
    let tx = writer.sender();
    (writer, tx, stream)
}

/// Sends one watch event of `d` (in `namespace`) to a journal's writer.
pub fn send_event(
    tx: &krply::journal::writer::WriterSender,
    stream: krply::journal::StreamId,
    namespace: &str,
    (watch_type, d): (krply::model::WatchType, &Value),
    at: i64,
) {
    tx.blocking_send(krply::journal::writer::Op::Event {
        stream,
        at,
        watch_type,
        meta: object_meta(namespace, d),
        body: serde_json::to_vec(d).unwrap(),
    })
    .unwrap();
}

/// Ends a recording through the library as a recorder that stops does (a
/// checkpoint at `at`, resourceVersion `rv`), and waits for its writer.
pub fn stop_writer(
    writer: krply::journal::writer::Writer,
    tx: krply::journal::writer::WriterSender,
    stream: krply::journal::StreamId,
    (at, rv): (i64, u64),
) {
    tx.blocking_send(krply::journal::writer::Op::Checkpoint {
        stream,
        at,
        rv: rv.to_string(),
        reason: krply::journal::records::CheckpointReason::Stop,
    })
    .unwrap();
    drop(tx);
    writer.finish().unwrap();
}

/// Sends a completed list of `items` (in `namespace`) of `stream` to a
/// journal's writer, at `at` and resourceVersion `rv`.
pub fn send_list(
    tx: &krply::journal::writer::WriterSender,
    stream: krply::journal::StreamId,
    namespace: &str,
    items: &[Value],
    (at, rv): (i64, u64),
) {
    use krply::journal::writer::Op;
    for d in items {
        tx.blocking_send(Op::BaselineItem {
            stream,
            at,
            meta: object_meta(namespace, d),
            body: serde_json::to_vec(d).unwrap(),
        })
        .unwrap();
    }
    tx.blocking_send(Op::BaselineEnd {
        stream,
        at,
        list_rv: rv.to_string(),
        items: items.len() as u64,
    })
    .unwrap();
}

/// The objects a `diff -o json` answer lists: (kind, name, change).
pub fn diff_changes(diff: &Value) -> Vec<(String, String, String)> {
    diff["objects"]
        .as_array()
        .expect("a diff answer")
        .iter()
        .map(|o| {
            (
                o["kind"].as_str().unwrap().into(),
                o["name"].as_str().unwrap().into(),
                o["change"].as_str().unwrap().into(),
            )
        })
        .collect()
}
