//! The recorder left running (issue 31, "a soak"): on a control plane of
//! its own, `record -A --include-secrets --retain` with a `log -f` beside
//! it, under steady churn, compaction, a freeze (SIGSTOP), a kube-apiserver
//! restart and tokens that expire; judged against the API server's audit log
//! and by the recorder's own memory, file descriptors and journal size over
//! time.
//!
//! The README's test command runs a 3-minute slice. The long run is the same
//! test with `KRPLY_SOAK_SECONDS` (README.md, "Long runs"):
//!
//! ```sh
//! KRPLY_SOAK_SECONDS=14400 cargo test --test it real::soak -- --nocapture
//! ```

use super::{RealEnv, RealKube, kubectl_bin};
use krply::time::Millis;
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const NS: &str = "soak";

/// One look at the recorder and its journal.
#[derive(Debug, Clone, Copy)]
struct Sample {
    at: Duration,
    rss_kib: u64,
    fds: usize,
    journal_bytes: u64,
}

fn sample(pid: u32, store: &std::path::Path, at: Duration) -> Sample {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let rss_kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0);
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count());
    let journal_bytes = ["", "-wal"]
        .iter()
        .map(|suffix| {
            let mut p = store.as_os_str().to_owned();
            p.push(suffix);
            std::fs::metadata(p).map_or(0, |m| m.len())
        })
        .sum();
    Sample {
        at,
        rss_kib,
        fds,
        journal_bytes,
    }
}

/// The writes the audit log holds for ServiceAccounts of the namespace, as
/// (name, when the server answered, resourceVersion).
fn audited(env: &RealEnv) -> Vec<(String, i64, String)> {
    env.kube
        .ready
        .audited_writes()
        .into_iter()
        .filter(|w| w.resource == "serviceaccounts" && w.namespace.as_deref() == Some(NS))
        .filter_map(|w| Some((w.name, w.at, w.resource_version?)))
        .collect()
}

#[test]
fn a_recorder_left_running_stays_flat_bounded_and_true() {
    let seconds: u64 = std::env::var("KRPLY_SOAK_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(180);
    let total = Duration::from_secs(seconds);
    // The faults, scaled to the run: a freeze every sixth of it (40 s at
    // most), a restart every third, tokens living a twelfth (at least 20 s).
    let freeze_every = total / 6;
    let freeze_for = (total / 9).min(Duration::from_secs(40));
    let restart_every = total / 3;
    let token_ttl = (total / 12).max(Duration::from_secs(20));
    let retain = (total / 6).max(Duration::from_secs(30));
    // The control plane stops itself after its --ttl (2 h unless told): the
    // run, and an hour to judge it. A 7,800 s soak once died at 2 h of that.
    let kube = RealKube::private(
        "soak",
        &[
            "--token-ttl",
            &format!("{}s", token_ttl.as_secs()),
            "--ttl",
            &format!("{}s", total.as_secs() + 3600),
        ],
    );
    let env = RealEnv::on(kube, NS);
    env.create_namespace(NS);
    const NAMES: [&str; 8] = ["a", "b", "c", "d", "e", "f", "g", "h"];
    for name in NAMES {
        env.kubectl_ok(&["create", "serviceaccount", name]);
    }
    let retain_arg = format!("{}s", retain.as_secs());
    let mut recorder = env.start_recorder(&[
        "-A",
        "--include-secrets",
        "--context",
        "expiring",
        "--retain",
        &retain_arg,
    ]);
    env.wait_baselines(1);
    let mut follower = std::process::Command::new(&*crate::common::BIN)
        .env("KRPLY_STORE", &env.store)
        .env("KUBECONFIG", &env.kubeconfig)
        .args(["log", "-f", "-A"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("log -f starts");

    // Churn: two writers, each as fast as kubectl goes, until told to stop.
    let stop = Arc::new(AtomicBool::new(false));
    let churn: Vec<_> = (0..2)
        .map(|w| {
            let stop = stop.clone();
            let kubectl = kubectl_bin();
            let kubeconfig = env.kubeconfig.clone();
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) && n < 1_000_000 {
                    n += 1;
                    let name = NAMES[(n as usize * 2 + w) % NAMES.len()];
                    let _ = std::process::Command::new(&kubectl)
                        .env("KUBECONFIG", &kubeconfig)
                        .args(["-n", NS, "label", "--overwrite"])
                        .arg(format!("serviceaccount/{name}"))
                        .arg(format!("n={n}"))
                        .output();
                }
                n
            })
        })
        .collect();

    let started = Instant::now();
    let pid = recorder.pid();
    let mut samples = vec![sample(pid, &env.store, Duration::ZERO)];
    let (mut freezes, mut restarts, mut compactions) = (0u32, 0u32, 0u32);
    let mut next_freeze = freeze_every;
    let mut next_restart = restart_every;
    let mut next_compaction = Duration::from_secs(30);
    let mut next_sample = Duration::from_secs(10);
    // Bounded: the run's length, plus each fault's own time.
    while started.elapsed() < total {
        let now = started.elapsed();
        if now >= next_freeze {
            recorder.freeze();
            let frozen = Instant::now();
            env.wait_real("the freeze to last", || frozen.elapsed() >= freeze_for);
            recorder.signal("CONT");
            freezes += 1;
            next_freeze += freeze_every;
        } else if now >= next_restart {
            kube.restart_apiserver(Duration::from_secs(2));
            restarts += 1;
            next_restart += restart_every;
        } else if now >= next_compaction {
            kube.compact();
            compactions += 1;
            next_compaction += Duration::from_secs(30);
        } else if now >= next_sample {
            let taken = sample(pid, &env.store, now);
            // As it goes: a run cut short still leaves its figures.
            eprintln!(
                "soak {:>6}s: RSS {} KiB, {} fds, journal {} bytes ({freezes} freezes, {restarts} restarts, {compactions} compactions)",
                taken.at.as_secs(),
                taken.rss_kib,
                taken.fds,
                taken.journal_bytes
            );
            samples.push(taken);
            next_sample = now + Duration::from_secs(10);
        } else {
            let next = [next_freeze, next_restart, next_compaction, next_sample]
                .into_iter()
                .min()
                .unwrap_or(total);
            // Waiting for the schedule is what the soak does.
            let until = Instant::now() + next.saturating_sub(now).min(Duration::from_secs(1));
            env.wait_real("the next step of the schedule", || Instant::now() >= until);
        }
        assert!(
            !recorder.exited(),
            "the recorder ended:\n{}",
            recorder.log_text()
        );
    }
    stop.store(true, Ordering::Relaxed);
    let writes: u64 = churn.into_iter().map(|t| t.join().unwrap_or(0)).sum();
    // Quiet now: the last write of each object reaches the journal.
    let end = Millis::now().as_ms();
    env.wait_real("every object's last write journaled", || {
        let mut last: std::collections::HashMap<String, String> = Default::default();
        for (name, _, rv) in audited(&env) {
            last.insert(name, rv);
        }
        last.iter().all(|(name, rv)| {
            let t = env.run(&[
                "get",
                &format!("serviceaccount/{name}"),
                "-n",
                NS,
                "-o",
                "json",
            ]);
            serde_json::from_str::<Value>(&t.stdout)
                .is_ok_and(|v| v["metadata"]["resourceVersion"] == rv.as_str())
        })
    });
    samples.push(sample(pid, &env.store, started.elapsed()));
    let follower_alive = follower.try_wait().ok().flatten().is_none();
    let _ = follower.kill();
    let followed = follower
        .wait_with_output()
        .map(|o| String::from_utf8_lossy(&o.stdout).lines().count())
        .unwrap_or(0);
    let stopped = recorder.stop();
    assert_eq!(stopped.code, Some(0), "{stopped:?}");
    assert!(follower_alive, "log -f ended by itself");

    // Truth against the audit log, for the time the journal still holds:
    // every write made while covered is there, and nothing else is.
    let audited = audited(&env);
    let stream = String::from("serviceaccounts.v1@*");
    let coverage = env.coverage(&stream);
    let from = coverage.from.expect("a start");
    let in_gap = |t: i64| {
        coverage
            .windows
            .iter()
            .any(|w| w.from <= t + 1 && w.to.is_none_or(|to| t <= to + 1))
    };
    let (mut lost, mut invented, mut judged) = (0, 0, 0);
    let mut missing = Vec::new();
    for name in NAMES {
        let timeline = env.krply_json(
            &["timeline", &format!("serviceaccount/{name}"), "-n", NS],
            0,
        );
        let journaled: Vec<String> = timeline["entries"]
            .as_array()
            .unwrap()
            .iter()
            // A gap's resourceVersion is the stream's, not the object's.
            .filter(|e| e["type"] != "GAP")
            .filter_map(|e| e["resource_version"].as_str().map(str::to_string))
            .collect();
        for (_, at, rv) in audited.iter().filter(|(n, _, _)| n == name) {
            if *at <= from + 1 || in_gap(*at) || *at > end {
                continue;
            }
            judged += 1;
            if !journaled.contains(rv) {
                lost += 1;
                missing.push(format!("{name} rv {rv} at {at}"));
            }
        }
        for rv in &journaled {
            if !audited.iter().any(|(n, _, r)| n == name && r == rv) {
                invented += 1;
            }
        }
    }
    let first_minute = samples
        .iter()
        .filter(|s| s.at <= Duration::from_secs(60))
        .map(|s| (s.rss_kib, s.fds, s.journal_bytes))
        .fold((0, 0, 0), |a, b| (a.0.max(b.0), a.1.max(b.1), a.2.max(b.2)));
    let later = samples
        .iter()
        .filter(|s| s.at > Duration::from_secs(60))
        .map(|s| (s.rss_kib, s.fds, s.journal_bytes))
        .fold((0, 0, 0), |a, b| (a.0.max(b.0), a.1.max(b.1), a.2.max(b.2)));
    super::announce(&format!(
        "soak {seconds}s: {writes} writes, {judged} judged against the audit log: {lost} lost, \
         {invented} invented; {freezes} freezes of {}s, {restarts} restarts, {compactions} \
         compactions, tokens living {}s; log -f printed {followed} lines; gaps: {:?}\n\
         samples (s, RSS KiB, fds, journal bytes): {:?}",
        freeze_for.as_secs(),
        token_ttl.as_secs(),
        coverage
            .windows
            .iter()
            .map(|w| w.reason.clone())
            .collect::<Vec<_>>(),
        samples
            .iter()
            .map(|s| (s.at.as_secs(), s.rss_kib, s.fds, s.journal_bytes))
            .collect::<Vec<_>>()
    ));
    let warnings: Vec<&str> = stopped
        .stderr
        .lines()
        .filter(|l| l.starts_with("warning:") || l.starts_with("    "))
        .collect();
    // A wrong answer keeps its journal beside the control plane's state
    // (audit log, logs) for whoever looks into it.
    let kept = env.kube.ready.audit_log.with_file_name("journal.db");
    if (lost, invented) != (0, 0) {
        for suffix in ["", "-wal"] {
            let (mut from, mut to) = (env.store.clone().into_os_string(), kept.clone());
            from.push(suffix);
            to.as_mut_os_string().push(suffix);
            let _ = std::fs::copy(from, to);
        }
    }
    assert_eq!(
        (lost, invented),
        (0, 0),
        "lost: {missing:?}\njournal kept in {}\nthe recorder warned:\n{}",
        kept.display(),
        warnings.join("\n")
    );
    assert!(judged >= 50, "only {judged} writes judged");
    // Flat: after the first minute, no more than half again the first
    // minute's high-water mark (memory, descriptors, file).
    assert!(
        later.0 <= first_minute.0 * 3 / 2 + 8_192,
        "RSS grew: {first_minute:?} -> {later:?}"
    );
    assert!(
        later.1 <= first_minute.1 + 8,
        "fds grew: {first_minute:?} -> {later:?}"
    );
    if total >= Duration::from_secs(600) {
        assert!(
            later.2 <= first_minute.2 * 4 + (8 << 20),
            "the journal grew: {first_minute:?} -> {later:?}"
        );
    }
    kube.stop();
}
