//! Plays a history against the simulator: the users' writes through its API
//! (each logged to its audit log), real `kubectl-krply record` processes for
//! the recorders, and a trace of when each write was made and when each
//! recorder surely watched, taken by this process's clock (the recorders'
//! clock too). Nothing here reads what krply answers.

use super::histories::{History, Key, Kind, Op, SLOTS, Scope, Step, USERS};
use crate::common::{RecorderProc, Sandbox};
use krply::time::Millis;
use krply_sim::{KubeconfigOptions, Seed, SimConfig, SimUser, Simulator};
use rusqlite::{Connection, OpenFlags, OptionalExtension};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long one condition of a history may take.
const DEADLINE: Duration = Duration::from_secs(30);

/// One write as the server made it.
#[derive(Debug, Clone)]
pub struct Written {
    pub key: Key,
    pub op: Op,
    pub user: usize,
    /// The resourceVersion of the write (of its DELETED event for a delete).
    pub rv: String,
    /// Just before the request, and just after the answer (ms).
    pub t0: i64,
    pub t1: i64,
    /// The `tier` label before and after (`None`: absent).
    pub tier_before: Option<&'static str>,
    pub tier_after: Option<&'static str>,
}

/// One recorder process and when it surely watched: from the moment its lists
/// were in its journal to the moment it was stopped, killed, or its watches
/// expired (until its relists were in the journal again). Writes are made only
/// outside the moments in between, so each is watched or not, never maybe.
#[derive(Debug, Clone)]
pub struct Recorder {
    pub scope: Scope,
    pub watching: Vec<(i64, i64)>,
    /// Where its journal's stream of each kind starts after retention
    /// pruned it (`record --retain`): what it watched before is gone, as if
    /// never watched ([`super::prune_starts`] fills it in after the play).
    pub pruned: Vec<(super::histories::Kind, i64)>,
}

impl Recorder {
    /// Whether it watched a write of `kind` made from `t0` to `t1`, and its
    /// journal still holds that time.
    pub fn watched_kind(&self, kind: super::histories::Kind, t0: i64, t1: i64) -> bool {
        self.watched(t0, t1)
            && self
                .pruned
                .iter()
                .all(|&(k, start)| k != kind || t0 > start)
    }

    /// Whether it watched throughout a write made from `t0` to `t1` (its
    /// watching starts and ends at quiet moments, which no write shares:
    /// seed 1154 once had a write in the millisecond a freeze began).
    pub fn watched(&self, t0: i64, t1: i64) -> bool {
        self.watching.iter().any(|&(a, b)| a <= t0 && t1 <= b)
    }
}

/// What happened, by this process's clock.
#[derive(Debug, Clone)]
pub struct Trace {
    pub writes: Vec<Written>,
    /// Quiet moments: every write before one was made and watched (by the
    /// recorders then running) before it; none after it had started.
    pub marks: Vec<i64>,
    pub recorders: Vec<Recorder>,
    pub journals: [PathBuf; 2],
    pub audit_log: PathBuf,
    /// Recorders frozen with SIGSTOP and thawed.
    pub freezes: usize,
}

/// Where a history is played.
enum Server {
    Sim { sandbox: Sandbox, sim: Simulator },
    Real(Box<super::real::RealServer>),
}

/// A history being played.
pub struct Play {
    server: Server,
    pub trace: Trace,
    running: [Option<(usize, RecorderProc)>; SLOTS],
    /// When each frozen slot's recorder was stopped with SIGSTOP.
    frozen: [Option<i64>; SLOTS],
}

/// The history's two journals: ours, and a teammate's.
fn journals_of(sandbox: &Sandbox) -> [PathBuf; 2] {
    [
        sandbox.store.clone(),
        sandbox.dir.path().join("teammate").join("journal.db"),
    ]
}

impl Play {
    /// A play on the simulator, its recorders writing zones of `zone_bits`
    /// ([`super::histories::History::zone_bits`]), audit imports packs of
    /// `audit_pack_writes` ([`super::histories::AuditPieces`]), and readers
    /// finding states at a time by `seek_records`
    /// ([`super::histories::History::seek_records`]), and recorders folding
    /// behind themselves what is `fold_after_ms` old
    /// ([`super::histories::History::fold_after_ms`]), packing as they write
    /// when `pack_at_write` ([`super::histories::History::pack_at_write`]),
    /// else making keyframes of up to `small_keyframe_bytes` again
    /// ([`super::histories::History::small_keyframe_bytes`]).
    pub fn new(
        zone_bits: Option<u32>,
        audit_pack_writes: Option<usize>,
        seek_records: Option<i64>,
        fold_after_ms: Option<u64>,
        pack_at_write: bool,
        small_keyframe_bytes: Option<usize>,
    ) -> Play {
        let mut sandbox = Sandbox::new();
        if pack_at_write {
            sandbox
                .extra_env
                .push((krply::journal::bodies::DEBUG_PACK_ENV.into(), "1".into()));
        }
        if let Some(bytes) = small_keyframe_bytes {
            sandbox.extra_env.push((
                krply::journal::bodies::DEBUG_SMALL_KEYFRAME_ENV.into(),
                bytes.to_string().into(),
            ));
        }
        if let Some(ms) = fold_after_ms {
            sandbox.extra_env.push((
                krply::journal::fold::DEBUG_FOLD_AFTER_ENV.into(),
                ms.to_string().into(),
            ));
        }
        if let Some(ratio) = seek_records {
            sandbox.extra_env.push((
                krply::history::state::DEBUG_SEEK_RECORDS_ENV.into(),
                ratio.to_string().into(),
            ));
        }
        if let Some(bits) = zone_bits {
            sandbox.extra_env.push((
                krply::journal::zones::DEBUG_ZONE_BITS_ENV.into(),
                bits.to_string().into(),
            ));
        }
        if let Some(writes) = audit_pack_writes {
            sandbox.extra_env.push((
                krply::journal::audit_pack::DEBUG_PACK_WRITES_ENV.into(),
                writes.to_string().into(),
            ));
        }
        let namespaces = super::histories::NAMESPACES
            .iter()
            .map(|ns| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
            .collect();
        let sim = Simulator::start_background(SimConfig {
            seed: Seed::Objects(namespaces),
            bookmark_interval: Some(Duration::from_millis(200)),
            ..SimConfig::default()
        })
        .expect("simulator starts");
        sim.write_kubeconfig(
            &sandbox.kubeconfig,
            &KubeconfigOptions {
                namespace: Some("shop".into()),
                ..KubeconfigOptions::default()
            },
        )
        .expect("kubeconfig written");
        let audit_log = sandbox.dir.path().join("audit.log");
        sim.audit_to(&audit_log).expect("audit log");
        let journals = journals_of(&sandbox);
        Play::on(Server::Sim { sandbox, sim }, journals, audit_log)
    }

    /// A play not begun, on `server`.
    fn on(server: Server, journals: [PathBuf; 2], audit_log: PathBuf) -> Play {
        Play {
            server,
            trace: Trace {
                writes: Vec::new(),
                marks: Vec::new(),
                recorders: Vec::new(),
                journals,
                audit_log,
                freezes: 0,
            },
            running: [None, None, None],
            frozen: [None; SLOTS],
        }
    }

    /// A history on the real control plane ([`super::real`]).
    pub fn real() -> Result<Play, String> {
        let server = super::real::RealServer::start()?;
        let journals = journals_of(&server.env);
        let audit_log = server.audit_log().to_path_buf();
        Ok(Play::on(
            Server::Real(Box::new(server)),
            journals,
            audit_log,
        ))
    }

    /// Where the recorders and questions run.
    pub fn sandbox(&self) -> &Sandbox {
        match &self.server {
            Server::Sim { sandbox, .. } => sandbox,
            Server::Real(real) => &real.env,
        }
    }

    /// Whether it plays on the real control plane (shared with other
    /// tests: questions about every namespace are not asked).
    pub fn is_real(&self) -> bool {
        matches!(self.server, Server::Real(_))
    }

    /// Plays every step, then stops every recorder still running. On the
    /// real control plane the trace's writes are then those of the server's
    /// audit log, which must be the writes made.
    pub fn play(&mut self, history: &History) -> Result<(), String> {
        for (i, step) in history.steps.iter().enumerate() {
            self.step(step)
                .map_err(|e| format!("step {i} ({step:?}): {e}"))?;
        }
        for slot in 0..SLOTS {
            self.stop(slot)?;
        }
        if let Server::Real(real) = &self.server {
            let made: Vec<(Key, String)> = self
                .trace
                .writes
                .iter()
                .map(|w| (w.key.clone(), w.rv.clone()))
                .collect();
            let mut logged = Vec::new();
            wait("every write in the audit log", &mut || {
                logged = real.writes_from_audit()?;
                Ok(logged.len() >= made.len())
            })?;
            let seen: Vec<(Key, String)> = logged
                .iter()
                .map(|w| (w.key.clone(), w.rv.clone()))
                .collect();
            if seen != made {
                return Err(format!(
                    "the audit log holds other writes than those made: {seen:?} where {made:?}"
                ));
            }
            self.trace.writes = logged;
        }
        Ok(())
    }

    fn step(&mut self, step: &Step) -> Result<(), String> {
        match step {
            Step::Start { slot, scope } => self.start(*slot, scope),
            Step::Stop { slot } => self.stop(*slot),
            Step::Kill { slot } => {
                if let Some((index, rec)) = self.running[*slot].take() {
                    self.end_watching(index);
                    rec.kill9();
                }
                Ok(())
            }
            Step::Freeze { slot } => {
                if let Some((index, rec)) = &self.running[*slot] {
                    let index = *index;
                    let scope = &self.trace.recorders[index].scope;
                    let journal = self.trace.journals[scope.journal].clone();
                    // A recorder frozen inside a write transaction holds the
                    // journal's write lock until it is thawed, and every other
                    // recorder of the journal waits for it: no write played
                    // meanwhile could be journaled by them (seed 1056, under
                    // CI's load). What a frozen writer does to the others is
                    // not what a history judges: freeze it between
                    // transactions.
                    wait("a freeze outside a write transaction", &mut || {
                        rec.freeze();
                        if write_lock_free(&journal) {
                            return Ok(true);
                        }
                        rec.signal("CONT");
                        Ok(false)
                    })?;
                    self.end_watching(index);
                    self.frozen[*slot] = Some(Millis::now().as_ms());
                }
                Ok(())
            }
            Step::Thaw { slot } => self.thaw(*slot),
            Step::Write { key, op, user } => self.write(key, op, *user),
            Step::Compact => self.compact(),
            Step::Mark => {
                self.trace.marks.push(quiet_moment());
                Ok(())
            }
        }
    }

    fn start(&mut self, slot: usize, scope: &Scope) -> Result<(), String> {
        let journal = self.trace.journals[scope.journal].clone();
        let streams: Vec<String> = scope.kinds.iter().map(|&k| scope.stream(k)).collect();
        let before: Vec<u64> = streams.iter().map(|s| lists(&journal, s)).collect();
        let mut args = scope.args();
        args.extend(["--store".into(), journal.display().to_string()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut rec = self.sandbox().start_recorder(&args);
        wait(&format!("{streams:?} listed"), &mut || {
            if rec.exited() {
                return Err(format!("the recorder ended: {}", rec.log_text()));
            }
            Ok(streams
                .iter()
                .zip(&before)
                .all(|(s, &n)| lists(&journal, s) > n))
        })?;
        let index = self.trace.recorders.len();
        self.trace.recorders.push(Recorder {
            scope: scope.clone(),
            watching: vec![(quiet_moment(), i64::MAX)],
            pruned: Vec::new(),
        });
        self.running[slot] = Some((index, rec));
        Ok(())
    }

    fn stop(&mut self, slot: usize) -> Result<(), String> {
        self.thaw(slot)?;
        let Some((index, rec)) = self.running[slot].take() else {
            return Ok(());
        };
        self.end_watching(index);
        let out = rec.stop();
        if out.code != Some(0) {
            return Err(format!(
                "the recorder stopped with {:?}: {}",
                out.code, out.stderr
            ));
        }
        Ok(())
    }

    /// Thaws a frozen recorder once its freeze has outlasted the limit, and
    /// waits for its relists: it watches again from then on.
    fn thaw(&mut self, slot: usize) -> Result<(), String> {
        let Some(since) = self.frozen[slot].take() else {
            return Ok(());
        };
        let Some((index, rec)) = &self.running[slot] else {
            return Ok(());
        };
        let index = *index;
        // The freeze itself is what is played: its length is the point.
        let until = since + krply::recorder::pulse::FREEZE_LIMIT_MS + 300;
        wait("the freeze to outlast the limit", &mut || {
            Ok(Millis::now().as_ms() > until)
        })?;
        let scope = self.trace.recorders[index].scope.clone();
        let journal = self.trace.journals[scope.journal].clone();
        let streams: Vec<String> = scope.kinds.iter().map(|&k| scope.stream(k)).collect();
        let thawed = Millis::now().as_ms();
        rec.signal("CONT");
        // Whatever it does about the freeze (the checker judges that), it
        // claims to watch again once every stream is durable after it: a
        // relist's baseline, or a checkpoint.
        wait(
            &format!("{streams:?} durable after the freeze"),
            &mut || Ok(streams.iter().all(|s| durable_after(&journal, s, thawed))),
        )?;
        self.trace.recorders[index]
            .watching
            .push((quiet_moment(), i64::MAX));
        self.trace.freezes += 1;
        Ok(())
    }

    /// Ends a recorder's watching at a moment of its own: no write shares
    /// its millisecond, so each is before it or after it.
    fn end_watching(&mut self, index: usize) {
        let now = quiet_moment();
        if let Some(last) = self.trace.recorders[index].watching.last_mut()
            && last.1 == i64::MAX
        {
            last.1 = now;
        }
    }

    fn compact(&mut self) -> Result<(), String> {
        // A frozen recorder relists when it is thawed.
        let running: Vec<usize> = (0..SLOTS)
            .filter(|&s| self.frozen[s].is_none())
            .filter_map(|s| self.running[s].as_ref().map(|(i, _)| *i))
            .collect();
        let mut waits = Vec::new();
        for &i in &running {
            let scope = &self.trace.recorders[i].scope;
            let journal = self.trace.journals[scope.journal].clone();
            for &k in &scope.kinds {
                let s = scope.stream(k);
                waits.push((journal.clone(), s.clone(), lists(&journal, &s)));
            }
        }
        for &i in &running {
            self.end_watching(i);
        }
        match &self.server {
            Server::Sim { sim, .. } => {
                sim.compact();
                sim.expire_watches();
                wait("every running recorder to relist", &mut || {
                    Ok(waits.iter().all(|(j, s, n)| lists(j, s) > *n))
                })?;
            }
            // The real server expires a watch when it resumes from a
            // compacted resourceVersion; it may also resume in time.
            Server::Real(real) => {
                real.cut_and_compact(!running.is_empty())?;
                let released = Millis::now().as_ms();
                wait("every running recorder durable again", &mut || {
                    Ok(waits.iter().all(|(j, s, _)| durable_after(j, s, released)))
                })?;
            }
        }
        let now = quiet_moment();
        for &i in &running {
            self.trace.recorders[i].watching.push((now, i64::MAX));
        }
        Ok(())
    }

    /// The object as the server holds it now.
    fn current(&self, key: &Key) -> Result<Option<Value>, String> {
        match &self.server {
            Server::Sim { sim, .. } => Ok(sim.get(
                key.kind.api_version(),
                key.kind.name(),
                Some(key.namespace),
                key.name,
            )),
            Server::Real(real) => real.get(key),
        }
    }

    /// Makes the write as `user`: `body` is the object to create or replace
    /// it with (none for a delete). The server's answer.
    fn send(&self, key: &Key, op: &Op, body: Option<Value>, user: usize) -> Result<Value, String> {
        let sim = match &self.server {
            Server::Real(real) => return real.write(key, body.as_ref(), op, user),
            Server::Sim { sim, .. } => sim,
        };
        let who = SimUser {
            name: USERS[user],
            groups: &["system:authenticated"],
            impersonated_by: None,
            user_agent: "kubectl/v1.37.2 (linux/amd64) kubernetes/truth",
        };
        match (op, body) {
            (Op::Create { .. }, Some(obj)) => sim.create_as(obj, "kubectl-create", &who),
            (Op::Update, Some(obj)) => sim.update_as(obj, "kubectl-edit", &who),
            (Op::Relabel { .. }, Some(obj)) => sim.update_as(obj, "kubectl-label", &who),
            (Op::Touch, Some(obj)) => sim.update_as(obj, "deployment-controller", &who),
            _ => sim.delete_as(
                key.kind.api_version(),
                key.kind.name(),
                Some(key.namespace),
                key.name,
                &who,
            ),
        }
        .map_err(|e| format!("the simulator refused {op:?} of {key:?}: {e}"))
    }

    fn write(&mut self, key: &Key, op: &Op, user: usize) -> Result<(), String> {
        let current = self.current(key)?;
        let tier_of = |v: &Value| {
            super::histories::TIERS
                .into_iter()
                .find(|t| v.pointer("/metadata/labels/tier").and_then(Value::as_str) == Some(t))
        };
        let tier_before = current.as_ref().and_then(tier_of);
        let counter = self.trace.writes.len();
        let body = match (op, current) {
            (Op::Create { tier }, None) => Some(object(key, tier, counter)),
            (Op::Update, Some(mut obj)) => {
                // Always a change (a write that changes nothing makes no
                // new resourceVersion).
                match key.kind {
                    Kind::ConfigMap => obj["data"]["value"] = json!(counter.to_string()),
                    Kind::Deployment => {
                        obj["spec"]["replicas"] = json!(counter % 7 + 1);
                        obj["spec"]["template"]["spec"]["containers"][0]["image"] =
                            json!(format!("nginx:1.{counter}"));
                    }
                }
                Some(obj)
            }
            (Op::Relabel { tier }, Some(mut obj)) => {
                obj["metadata"]["labels"]["tier"] = json!(tier);
                Some(obj)
            }
            (Op::Touch, Some(mut obj)) => {
                // Always a new value, so always a new version: no revision
                // a Deployment reaches (the simulator's controller keeps a
                // number it is given).
                obj["metadata"]["annotations"]["deployment.kubernetes.io/revision"] =
                    json!((1_000 + counter).to_string());
                Some(obj)
            }
            (Op::Delete, Some(_)) => None,
            (op, current) => {
                return Err(format!(
                    "{op:?} of {key:?} that {} (the generator's model is wrong)",
                    if current.is_some() {
                        "exists"
                    } else {
                        "does not exist"
                    }
                ));
            }
        };
        let t0 = Millis::now().as_ms();
        let done = self.send(key, op, body, user)?;
        let t1 = Millis::now().as_ms();
        let rv = done
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("no resourceVersion in {done}"))?
            .to_string();
        let tier_after = match op {
            Op::Delete => None,
            _ => tier_of(&done),
        };
        if let Some(before) = self.trace.writes.iter().rev().find(|w| &w.key == key)
            && before.rv == rv
            && !matches!(op, Op::Create { .. })
        {
            return Err(format!("{op:?} of {key:?} changed nothing (rv {rv})"));
        }
        // Every running recorder whose stream sees this write journals it
        // before anything else happens.
        let mut waits = Vec::new();
        let awake = (0..SLOTS).filter(|&s| self.frozen[s].is_none());
        for (index, _) in awake.filter_map(|s| self.running[s].as_ref()) {
            let scope = &self.trace.recorders[*index].scope;
            let sees = scope.holds(key)
                && (!scope.selector || tier_before == Some("web") || tier_after == Some("web"));
            if sees {
                waits.push((
                    self.trace.journals[scope.journal].clone(),
                    scope.stream(key.kind),
                ));
            }
        }
        wait(&format!("rv {rv} journaled in {waits:?}"), &mut || {
            Ok(waits.iter().all(|(j, s)| journaled(j, s, &rv)))
        })
        .map_err(|e| {
            // What the recorders said meanwhile.
            let logs: Vec<String> = self
                .running
                .iter()
                .flatten()
                .map(|(i, rec)| format!("recorder {i}:\n{}", rec.log_text()))
                .collect();
            format!("{e}\n{}", logs.join("\n"))
        })?;
        self.trace.writes.push(Written {
            key: key.clone(),
            op: op.clone(),
            user,
            rv,
            t0,
            t1,
            tier_before,
            tier_after,
        });
        Ok(())
    }
}

/// A moment strictly after everything observed so far and strictly before
/// anything observed next: the clock has moved on a millisecond either side.
pub fn quiet_moment() -> i64 {
    let before = Millis::now().as_ms();
    let mark = next_millisecond(before);
    next_millisecond(mark);
    mark
}

fn next_millisecond(after: i64) -> i64 {
    let start = Instant::now();
    loop {
        let now = Millis::now().as_ms();
        if now > after {
            return now;
        }
        assert!(start.elapsed() < DEADLINE, "the clock does not move");
        std::thread::yield_now();
    }
}

fn object(key: &Key, tier: &str, counter: usize) -> Value {
    let meta = json!({"name": key.name, "namespace": key.namespace, "labels": {"tier": tier}});
    match key.kind {
        Kind::ConfigMap => json!({
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
            "data": {"value": counter.to_string()},
        }),
        Kind::Deployment => json!({
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
            "spec": {
                "replicas": counter % 7 + 1,
                "selector": {"matchLabels": {"app": key.name}},
                "template": {
                    "metadata": {"labels": {"app": key.name}},
                    "spec": {"containers": [{"name": "app", "image": format!("nginx:1.{counter}")}]},
                },
            },
        }),
    }
}

/// Waits for `check` within the deadline; its error ends the wait at once.
fn wait(what: &str, check: &mut dyn FnMut() -> Result<bool, String>) -> Result<(), String> {
    let start = Instant::now();
    let mut pause = Duration::from_millis(2);
    loop {
        if check()? {
            return Ok(());
        }
        if start.elapsed() > DEADLINE {
            return Err(format!("timed out after {DEADLINE:?} waiting for {what}"));
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

fn read(journal: &Path) -> Option<Connection> {
    Connection::open_with_flags(journal, OpenFlags::SQLITE_OPEN_READ_ONLY).ok()
}

/// The `seq` of the stream's newest list in the journal (0 when there is none
/// yet): a new list makes it grow.
fn lists(journal: &Path, stream: &str) -> u64 {
    let Some(conn) = read(journal) else { return 0 };
    let Some(id) = stream_id(&conn, stream) else {
        return 0;
    };
    // The newest list's seq, not a count: retention (`--retain`) deletes old
    // baselines and writes its own, which are no list.
    conn.query_row(
        &format!(
            "SELECT coalesce(max(seq), 0) FROM records WHERE stream_id = ?1 AND kind = {}
               AND coalesce(info, '') NOT LIKE '%\"pruned\":true%'",
            krply::journal::schema::kind::BASELINE
        ),
        [id],
        |r| r.get::<_, i64>(0).map(|n| n.max(0) as u64),
    )
    .unwrap_or(0)
}

/// Whether the stream made a durable point (a baseline or a checkpoint)
/// stamped after `at`.
fn durable_after(journal: &Path, stream: &str, at: i64) -> bool {
    let sql = format!(
        "SELECT 1 FROM records WHERE stream_id = ?1 AND kind IN ({}, {}) AND observed_at > ?2",
        krply::journal::schema::kind::BASELINE,
        krply::journal::schema::kind::CHECKPOINT
    );
    stream_holds(journal, stream, &sql, &at)
}

/// Whether no connection holds the journal's write lock now (none is waited
/// for).
fn write_lock_free(journal: &Path) -> bool {
    let Ok(conn) = Connection::open_with_flags(journal, OpenFlags::SQLITE_OPEN_READ_WRITE) else {
        return false;
    };
    conn.busy_timeout(Duration::ZERO).is_ok()
        && conn.execute_batch("BEGIN IMMEDIATE; ROLLBACK;").is_ok()
}

/// Whether the stream journaled an event of resourceVersion `rv`.
fn journaled(journal: &Path, stream: &str, rv: &str) -> bool {
    let sql = format!(
        "SELECT 1 FROM records WHERE stream_id = ?1 AND kind = {} AND resource_version = ?2",
        krply::journal::schema::kind::EVENT
    );
    stream_holds(journal, stream, &sql, &rv)
}

/// Whether `sql` finds a row, with `?1` the id of the stream recorded here
/// with this name and `?2` `arg`; false while the journal or the stream is
/// not there yet.
fn stream_holds(journal: &Path, stream: &str, sql: &str, arg: &dyn rusqlite::ToSql) -> bool {
    let Some(conn) = read(journal) else {
        return false;
    };
    let Some(id) = stream_id(&conn, stream) else {
        return false;
    };
    conn.query_row(sql, rusqlite::params![id, arg], |_| Ok(()))
        .optional()
        .ok()
        .flatten()
        .is_some()
}

/// The id of the stream recorded here (not imported) with this name.
fn stream_id(conn: &Connection, stream: &str) -> Option<i64> {
    let (resource, rest) = stream.split_once('@')?;
    let (namespace, selector) = rest.split_once('?').unwrap_or((rest, ""));
    let namespace = if namespace == "*" { "" } else { namespace };
    let resource = resource.split('.').next()?;
    conn.query_row(
        "SELECT id FROM streams WHERE resource = ?1 AND namespace = ?2 AND selector = ?3 AND origin = ''",
        rusqlite::params![resource, namespace, selector],
        |r| r.get(0),
    )
    .optional()
    .ok()
    .flatten()
}
