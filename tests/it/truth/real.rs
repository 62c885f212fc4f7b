//! The truth checker on the real control plane (`tests/realkube`): the same
//! histories' ConfigMap writes, made through the real kube-apiserver as each
//! user (`kubectl --as`), recorders that reach it through a proxy (so a
//! compaction can expire their watches), and the oracle taken from the
//! server's own RequestResponse audit log, never from what the writes
//! answered (docs/truth.md, "On the real control plane"). The server answers
//! a ConfigMap's delete with a Status that names no resourceVersion, and logs
//! that: the resourceVersion of a deletion comes from the server's own watch
//! (`kubectl get --watch`), matched by the object's uid.
//!
//! The control plane is shared with the other real tests: histories play in
//! namespaces `shop` and `pay`, one at a time, ConfigMaps only (Deployments
//! bring controllers that write on their own: the example tests cover them),
//! and answers are asked about those namespaces only (a `-A` recorder sees
//! the other tests' objects too, which no oracle here knows).

use super::histories::{Key, Kind, NAMES, NAMESPACES, Op, SLOTS, Step, TIERS, USERS};
use super::run::Written;
use crate::real::RealEnv;
use crate::real::proxy::Proxy;
use krply::time::Millis;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

/// The real control plane for one history.
pub struct RealServer {
    pub env: RealEnv,
    proxy: Proxy,
    /// When the history began: audit events before it are another's.
    pub since: i64,
    /// `kubectl get configmaps --watch` of each namespace, and its output.
    watches: Vec<(Child, PathBuf)>,
}

impl Drop for RealServer {
    fn drop(&mut self) {
        for (child, _) in &mut self.watches {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl RealServer {
    /// A sandbox routed through a proxy, with empty namespaces `shop` and
    /// `pay` (left by an earlier history: its ConfigMaps are deleted first).
    pub fn start() -> Result<RealServer, String> {
        let mut env = RealEnv::new(NAMESPACES[0]);
        for ns in NAMESPACES {
            let out = env.kubectl(&["create", "namespace", ns]);
            if out.code != Some(0) && !out.stderr.contains("AlreadyExists") {
                return Err(format!("namespace {ns}: {}", out.stderr));
            }
            let names: Vec<String> = NAMES.iter().map(|n| format!("configmap/{n}")).collect();
            let mut args = vec!["delete", "-n", ns, "--ignore-not-found", "--wait=true"];
            args.extend(names.iter().map(String::as_str));
            kubectl(&env, &args)?;
        }
        let upstream = env
            .kube
            .ready
            .server
            .trim_start_matches("https://")
            .parse()
            .map_err(|e| format!("server address: {e}"))?;
        let proxy = Proxy::start(upstream);
        env.route_through(&proxy.url());
        let mut server = RealServer {
            env,
            proxy,
            since: 0,
            watches: Vec::new(),
        };
        for ns in NAMESPACES {
            let out = server.env.dir.path().join(format!("watch-{ns}.json"));
            let file = std::fs::File::create(&out).map_err(|e| e.to_string())?;
            let child = server
                .env
                .kubectl_cmd(&[
                    "get",
                    "configmaps",
                    "-n",
                    ns,
                    "--watch-only",
                    "--output-watch-events",
                    "-o",
                    "json",
                ])
                .stdout(file)
                .stderr(std::process::Stdio::null())
                .spawn()
                .map_err(|e| format!("kubectl get --watch: {e}"))?;
            server.watches.push((child, out));
        }
        // Each watch is open once it has seen a ConfigMap made after it
        // started (a name no history uses: the oracle ignores it).
        for ns in NAMESPACES {
            let deadline = Instant::now() + Duration::from_secs(30);
            // Bounded by the deadline; a new marker every two seconds.
            loop {
                let marker = format!("truth-watch-{}", Millis::now().as_ms());
                kubectl(&server.env, &["create", "-n", ns, "configmap", &marker])?;
                let seen = |server: &RealServer| {
                    server
                        .events()
                        .iter()
                        .any(|e| e["object"]["metadata"]["name"] == marker.as_str())
                };
                let patience = Instant::now() + Duration::from_secs(2);
                while !seen(&server) && Instant::now() < patience {
                    std::thread::sleep(Duration::from_millis(20));
                }
                let _ =
                    server
                        .env
                        .kubectl(&["delete", "-n", ns, "configmap", &marker, "--wait=false"]);
                if seen(&server) {
                    break;
                }
                if Instant::now() > deadline {
                    return Err(format!("kubectl get --watch of {ns} saw nothing in 30s"));
                }
            }
        }
        server.since = Millis::now().as_ms();
        Ok(server)
    }

    /// Every event the watches have printed so far.
    fn events(&self) -> Vec<Value> {
        let mut out = Vec::new();
        for (_, path) in &self.watches {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            // Pretty-printed documents one after another; a half-written
            // last one waits for the next read.
            for v in serde_json::Deserializer::from_str(&text).into_iter::<Value>() {
                match v {
                    Ok(v) => out.push(v),
                    Err(_) => break,
                }
            }
        }
        out
    }

    /// The object with `uid` as the server's watch sent its deletion (at
    /// the deletion's resourceVersion), once it has.
    fn deleted(&self, uid: &str) -> Option<Value> {
        self.events()
            .into_iter()
            .find(|e| e["type"] == "DELETED" && e["object"]["metadata"]["uid"] == uid)
            .map(|e| e["object"].clone())
    }

    pub fn audit_log(&self) -> &Path {
        &self.env.kube.ready.audit_log
    }

    /// The object now, if it exists.
    pub fn get(&self, key: &Key) -> Result<Option<Value>, String> {
        let out = kubectl(
            &self.env,
            &[
                "get",
                &format!("configmap/{}", key.name),
                "-n",
                key.namespace,
                "--ignore-not-found",
                "-o",
                "json",
            ],
        )?;
        if out.trim().is_empty() {
            return Ok(None);
        }
        serde_json::from_str(&out)
            .map(Some)
            .map_err(|e| format!("get {key:?}: {e}"))
    }

    /// Creates, replaces (a full update, with the object's resourceVersion
    /// as precondition) or deletes, as `user`; the server's answer.
    pub fn write(
        &self,
        key: &Key,
        body: Option<&Value>,
        op: &Op,
        user: usize,
    ) -> Result<Value, String> {
        let path = match op {
            Op::Create { .. } => format!("/api/v1/namespaces/{}/configmaps", key.namespace),
            _ => format!(
                "/api/v1/namespaces/{}/configmaps/{}",
                key.namespace, key.name
            ),
        };
        let verb = match op {
            Op::Create { .. } => "create",
            Op::Update | Op::Relabel { .. } | Op::Touch => "replace",
            Op::Delete => "delete",
        };
        let mut args = vec![
            verb.to_string(),
            "--raw".into(),
            path,
            "--as".into(),
            USERS[user].into(),
            "--as-group".into(),
            "system:masters".into(),
        ];
        if let Some(body) = body {
            let file = self.env.dir.path().join("write.json");
            std::fs::write(&file, body.to_string()).map_err(|e| e.to_string())?;
            args.extend(["-f".into(), file.display().to_string()]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = kubectl(&self.env, &args)?;
        let answer: Value = serde_json::from_str(&out)
            .map_err(|e| format!("{verb} {key:?} answered {out}: {e}"))?;
        if answer["kind"] != "Status" {
            return Ok(answer);
        }
        // A delete's Status names the uid only: the deleted object, at the
        // deletion's resourceVersion, as the server's watch sent it.
        let uid = answer["details"]["uid"]
            .as_str()
            .ok_or(format!("{verb} {key:?} answered {answer}"))?;
        let deadline = Instant::now() + Duration::from_secs(30);
        // Bounded by the deadline.
        loop {
            if let Some(obj) = self.deleted(uid) {
                return Ok(obj);
            }
            if Instant::now() > deadline {
                return Err(format!("the watch never saw {key:?} deleted"));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Cuts the recorders' connections and compacts etcd while they are held:
    /// their watches resume from a compacted resourceVersion (ConfigMaps
    /// reach etcd, past the watch cache) and get a real 410.
    pub fn cut_and_compact(&self, recorders_running: bool) -> Result<(), String> {
        self.proxy.cut_and_hold();
        if recorders_running {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
            // Bounded: until a recorder has come back to the held proxy.
            while self.proxy.waiting() == 0 {
                if std::time::Instant::now() > deadline {
                    self.proxy.release();
                    return Err("no recorder reconnected within 30s".into());
                }
                std::thread::yield_now();
            }
        }
        self.env.kube.compact();
        self.proxy.release();
        Ok(())
    }

    /// The writes of this history, from the server's audit log: every
    /// successful create, update, patch and delete of a ConfigMap named in
    /// the histories in `shop` or `pay` since it began, in the order the
    /// server completed them, each with the user it was made as, the
    /// resourceVersion its response carried, and when it was received and
    /// answered.
    pub fn writes_from_audit(&self) -> Result<Vec<Written>, String> {
        let text = std::fs::read_to_string(self.audit_log()).map_err(|e| e.to_string())?;
        let mut out: Vec<(i64, String, Written)> = Vec::new();
        for line in text.lines() {
            let Ok(e) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            let Some(w) = written(&e, self.since, &out, &|uid| self.deleted(uid))? else {
                continue;
            };
            let id = e["auditID"].as_str().unwrap_or_default().to_string();
            out.push((w.t1, id, w));
        }
        out.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        Ok(out.into_iter().map(|(_, _, w)| w).collect())
    }
}

/// One audit event as a write of the history, if it is one.
fn written(
    e: &Value,
    since: i64,
    before: &[(i64, String, Written)],
    deleted: &dyn Fn(&str) -> Option<Value>,
) -> Result<Option<Written>, String> {
    let obj = &e["objectRef"];
    let verb = e["verb"].as_str().unwrap_or_default();
    if e["stage"] != "ResponseComplete"
        || obj["resource"] != "configmaps"
        || obj.get("subresource").is_some()
        || !matches!(verb, "create" | "update" | "patch" | "delete")
        || e["responseStatus"]["code"]
            .as_u64()
            .is_none_or(|c| c >= 300)
    {
        return Ok(None);
    }
    let response = &e["responseObject"];
    // A create may name the object in its body only.
    let name = obj["name"]
        .as_str()
        .or(response["metadata"]["name"].as_str());
    let (Some(namespace), Some(name)) = (
        NAMESPACES
            .into_iter()
            .find(|n| Some(*n) == obj["namespace"].as_str()),
        NAMES.into_iter().find(|n| Some(*n) == name),
    ) else {
        return Ok(None);
    };
    let key = Key {
        kind: Kind::ConfigMap,
        namespace,
        name,
    };
    let time = |field: &str| -> Result<i64, String> {
        let s = e[field].as_str().ok_or(format!("no {field} in {e}"))?;
        Millis::parse_rfc3339(s)
            .map(|m| m.as_ms())
            .map_err(|err| format!("{field} {s}: {err}"))
    };
    let t0 = time("requestReceivedTimestamp")?;
    if t0 < since {
        return Ok(None);
    }
    // The answer's millisecond, rounded up.
    let t1 = time("stageTimestamp")? + 1;
    let user = e["impersonatedUser"]["username"]
        .as_str()
        .or(e["user"]["username"].as_str())
        .unwrap_or_default();
    let user = USERS.iter().position(|u| *u == user).ok_or(format!(
        "{key:?} was written by {user}, no user of the history"
    ))?;
    let rv = match response["metadata"]["resourceVersion"].as_str() {
        Some(rv) => rv.to_string(),
        None if verb == "delete" => {
            let uid = response["details"]["uid"]
                .as_str()
                .ok_or(format!("the delete of {key:?} logged without its uid"))?;
            deleted(uid)
                .and_then(|o| {
                    o["metadata"]["resourceVersion"]
                        .as_str()
                        .map(str::to_string)
                })
                .ok_or(format!("the watch never saw {key:?} ({uid}) deleted"))?
        }
        None => {
            return Err(format!(
                "{verb} of {key:?} logged without its resourceVersion"
            ));
        }
    };
    let tier_of = |v: &Value| {
        TIERS
            .into_iter()
            .find(|t| v.pointer("/metadata/labels/tier").and_then(Value::as_str) == Some(t))
    };
    let tier_before = before
        .iter()
        .rev()
        .find(|(_, _, w)| w.key == key)
        .and_then(|(_, _, w)| w.tier_after);
    let tier_after = (verb != "delete").then(|| tier_of(response)).flatten();
    let op = match verb {
        "create" => Op::Create {
            tier: tier_after.unwrap_or(TIERS[0]),
        },
        "delete" => Op::Delete,
        _ if tier_after != tier_before => Op::Relabel {
            tier: tier_after.unwrap_or(TIERS[0]),
        },
        _ => Op::Update,
    };
    Ok(Some(Written {
        key,
        op,
        user,
        rv,
        t0,
        t1,
        tier_before,
        tier_after,
    }))
}

fn kubectl(env: &RealEnv, args: &[&str]) -> Result<String, String> {
    let out = env.kubectl(args);
    if out.code == Some(0) {
        Ok(out.stdout)
    } else {
        Err(format!("kubectl {args:?}: {}{}", out.stdout, out.stderr))
    }
}

/// The history as the real control plane plays it: ConfigMaps only. A
/// recorder left with no type, or with a stream another running recorder
/// of its journal already records, is not started, and neither are its
/// steps until it would have stopped.
pub fn for_real(mut history: super::histories::History) -> super::histories::History {
    let mut steps = Vec::new();
    let mut running: [Option<super::histories::Scope>; SLOTS] = [None, None, None];
    let mut skipped = [false; SLOTS];
    for step in history.steps {
        match step {
            Step::Start { slot, mut scope } => {
                scope.kinds.retain(|k| *k == Kind::ConfigMap);
                let clash = running.iter().flatten().any(|r| r.clashes(&scope));
                if scope.kinds.is_empty() || clash {
                    skipped[slot] = true;
                    continue;
                }
                skipped[slot] = false;
                running[slot] = Some(scope.clone());
                steps.push(Step::Start { slot, scope });
            }
            Step::Stop { slot } | Step::Kill { slot } if skipped[slot] => skipped[slot] = false,
            Step::Freeze { slot } | Step::Thaw { slot } if skipped[slot] => {}
            Step::Stop { slot } => {
                running[slot] = None;
                steps.push(Step::Stop { slot });
            }
            Step::Kill { slot } => {
                running[slot] = None;
                steps.push(Step::Kill { slot });
            }
            Step::Write { ref key, .. } if key.kind != Kind::ConfigMap => {}
            // What was written is read back from the audit log, which tells
            // a controller's write from a user's update only by comparing
            // versions: the real histories have updates only.
            Step::Write {
                key,
                op: Op::Touch,
                user,
            } => steps.push(Step::Write {
                key,
                op: Op::Update,
                user,
            }),
            other => steps.push(other),
        }
    }
    history.steps = steps;
    history
}
