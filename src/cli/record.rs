//! `record`: wires flags, cluster access, discovery, the journal and the recorder.

use super::args::{ByteSize, GlobalArgs, PositiveDuration, SelectorArg};
use crate::audit_import::follow::Follower;
use crate::cluster::{self, discovery::Catalog};
use crate::error::{CliError, CliResult};
use crate::journal::Journal;
use crate::recorder::display::Mode;
use crate::recorder::stream::StreamOptions;
use crate::recorder::{self, PlanArgs, RecordOptions};
use clap::Args;
use std::time::Duration;

/// List and watch resources, journaling every change until stopped
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  # Record the default resources of the current namespace until Ctrl-C
  kubectl krply record

  # Record deployments and configmaps of the shop namespace for an hour
  kubectl krply record deploy cm -n shop --for 1h

  # Record every namespace, only objects labelled app=web
  kubectl krply record -A -l app=web

  # Left running for weeks: keep two weeks, and never more than 2 GiB
  kubectl krply record -A --retain 14d --max-size 2GiB

Default resources: deployments, statefulsets, daemonsets, services, configmaps,
serviceaccounts (plus namespaces with -A). Secrets are refused unless --include-secrets, and then
their values are stored only as digests.")]
pub struct RecordArgs {
    /// Resources to record (plural, singular, short name, or RESOURCE.GROUP)
    #[arg(value_name = "RESOURCE")]
    pub resources: Vec<String>,
    /// Only objects matching this label selector (e.g. app=web,tier!=cache)
    #[arg(short = 'l', long, value_name = "SELECTOR")]
    pub selector: Option<SelectorArg>,
    /// Stop by itself after this long (e.g. 30m, 2h)
    #[arg(long = "for", value_name = "DURATION")]
    pub duration: Option<PositiveDuration>,
    /// Do not ask the server for watch bookmarks
    #[arg(long)]
    pub no_bookmarks: bool,
    /// Prune history older than this behind the recorder (e.g. 14d), in small
    /// steps; freed space goes back to the file system
    #[arg(long, value_name = "DURATION")]
    pub retain: Option<PositiveDuration>,
    /// Keep the journal file under this size (e.g. 2GiB), oldest history first
    #[arg(long, value_name = "SIZE")]
    pub max_size: Option<ByteSize>,
    /// How long each watch asks the server to stay open (timeoutSeconds, at
    /// least 1s; default 4m50s). A watch silent a tenth longer is taken for a
    /// dead connection: shorten it behind a proxy that drops idle connections
    #[arg(long, value_name = "DURATION")]
    pub watch_timeout: Option<PositiveDuration>,
    /// Record Secrets too (values are stored only as SHA-256 digests)
    #[arg(long)]
    pub include_secrets: bool,
    /// Follow this kube-apiserver audit log while recording (from where the
    /// last recorder stopped reading it; rotation is followed), so answers
    /// name who made each change (docs/audit.md)
    #[arg(long, value_name = "PATH")]
    pub audit_log: Option<std::path::PathBuf>,
    /// The readers' global --cluster-id and -o, shadowed here (hidden) so that
    /// `record --help` does not offer them; given, they are refused below.
    #[arg(long = "cluster-id", hide = true, value_name = "ID")]
    pub cluster_id: Option<String>,
    #[arg(short = 'o', long = "output", hide = true, value_name = "FORMAT")]
    pub output: Option<String>,
}

/// The `meta` key under which a recorder says what it keeps, for `status`
/// ([`Journal::retention`]).
pub const RETENTION_KEY: &str = "retention";

/// What `--retain` and `--max-size` asked, with who asked, as `status` reads
/// it back ([`crate::journal::read::RetentionMeta`]).
fn retention_meta(r: &recorder::retention::Retention) -> String {
    serde_json::to_string(&crate::journal::read::RetentionMeta {
        retain_ms: r
            .retain
            .map(|d| d.as_millis().min(u128::from(u64::MAX)) as u64),
        max_size: r.max_size,
        pid: std::process::id(),
        since: crate::time::Millis::now().as_ms(),
    })
    .unwrap_or_default()
}

/// The smallest `--max-size` (bytes).
const MIN_MAX_SIZE: u64 = 1 << 20;

/// `--watch-timeout` in whole seconds, as `timeoutSeconds` takes it.
fn watch_timeout_secs(d: std::time::Duration) -> Result<u32, CliError> {
    let shown = crate::time::format_duration(d);
    match u32::try_from(d.as_secs()) {
        Ok(secs) if secs >= 1 => Ok(secs),
        Ok(_) => Err(CliError::usage(format!(
            "--watch-timeout {shown} is shorter than a second: the server takes whole seconds"
        ))
        .hint("behind a load balancer that cuts idle connections, give a little less than its idle timeout, like 50s")),
        Err(_) => Err(CliError::usage(format!("--watch-timeout {shown} is too long"))
            .hint("the default is 4m50s; a shorter one costs only reconnects")),
    }
}

pub async fn run(global: &GlobalArgs, args: RecordArgs) -> CliResult {
    if global.output.is_some() || args.output.is_some() {
        return Err(CliError::usage("record does not take -o/--output"));
    }
    if global.cluster_id.is_some() || args.cluster_id.is_some() {
        return Err(CliError::usage(
            "record does not take --cluster-id: it records the cluster of the context",
        )
        .hint("--context or --kubeconfig pick the cluster to record"));
    }
    let duration = args.duration.map(|d| d.0);
    // Usage errors before anything is opened or reached.
    let watch_timeout = args
        .watch_timeout
        .map(|d| watch_timeout_secs(d.0))
        .transpose()?;
    if let Some(size) = args.max_size
        && size.0 < MIN_MAX_SIZE
    {
        return Err(CliError::usage(format!(
            "--max-size {} is too small: a journal keeps the current state of what it records \
             whatever the cap",
            crate::render::human_bytes(size.0)
        ))
        .hint("give at least 1MiB; `kubectl krply status` shows how large the journal is now"));
    }
    // The canonical form, as the server would print it.
    let selector = args.selector.as_ref().map(|s| s.parsed.to_string());
    let mut opts = global.connect_options()?;
    // A recorder lives for weeks: a request on a connection that died
    // without closing must not hang it for ever (docs/consistency.md).
    opts.request_timeout = opts.request_timeout.or(Some(recorder::REQUEST_TIMEOUT));
    let path = global.store_path()?;
    // From here on, Ctrl-C and SIGTERM stop cleanly, even during start-up.
    let mut stop_rx = stop_signal(duration);

    // The journal first: a damaged or foreign file fails before the cluster
    // is touched. The streams are claimed once they are known, below.
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        ensure_dir(dir)?;
    }
    let holder = format!(
        "pid {} on {} since {}",
        std::process::id(),
        hostname(),
        crate::time::Millis::now()
    );
    let journal = Journal::open_or_create(&path)?;
    journal.check_integrity()?;

    let target = cluster::resolve_target(&opts)?;
    // A slow or hanging server must not make Ctrl-C wait: start-up gives way
    // to a stop at once.
    let Some(access) = unless_stopped(&mut stop_rx, cluster::connect(&target, &opts)).await else {
        return stopped_before_start();
    };
    let access = access?;
    let Some(catalog) = unless_stopped(&mut stop_rx, Catalog::discover(&access)).await else {
        return stopped_before_start();
    };
    let catalog = catalog?;
    for w in &catalog.warnings {
        eprintln!("warning: {w}");
    }
    let namespace = global
        .namespace
        .clone()
        .unwrap_or_else(|| target.namespace.clone());
    let plan = recorder::plan_streams(
        &catalog,
        &PlanArgs {
            resources: args.resources.clone(),
            namespace,
            all_namespaces: global.all_namespaces,
            selector,
            include_secrets: args.include_secrets,
        },
    )?;
    for w in &plan.warnings {
        eprintln!("warning: {w}");
    }
    if plan.streams.is_empty() {
        return Err(CliError::runtime(
            "nothing to record: the server serves none of the default resources",
        )
        .hint("name the resources to record, e.g. `kubectl krply record pods`"));
    }

    // An audit log to follow that cannot be read stops us before anything starts.
    let follower = args
        .audit_log
        .as_ref()
        .map(|log| {
            Follower::open(log, &path, &target.cluster_id).map_err(|e| {
                CliError::runtime(e.to_string())
                    .hint("--audit-log takes the file kube-apiserver writes with --audit-log-path (docs/audit.md)")
                    .caused_by(e)
            })
        })
        .transpose()?;

    // Other recorders may write this journal too, each its own streams; one
    // that already records one of these makes this one fail, naming it.
    let _lease = recorder::claim(
        &journal,
        &target.cluster_id,
        &target.server,
        target.context.as_deref(),
        &plan.streams,
        &holder,
    )?;

    let mode = Mode::for_stderr(global.quiet);
    if mode != Mode::Quiet {
        // Within a terminal's width, hanging, as every line of the display.
        let width = console::Term::stderr()
            .size_checked()
            .map_or(usize::MAX, |(_, c)| usize::from(c).saturating_sub(2));
        let header = format!(
            "recording {} stream(s) of {} ({}) into {}{}\ntimes shown in {}",
            plan.streams.len(),
            target.cluster_id,
            target.server,
            path.display(),
            duration
                .map(|d| format!(" for {}", crate::time::format_duration(d)))
                .unwrap_or_else(|| "; Ctrl-C stops".into()),
            crate::render::clock::clock().zone(crate::time::Millis::now().as_ms()),
        );
        eprintln!("{}", crate::render::record::hang(&header, width, 4));
    }
    let options = RecordOptions {
        stream: StreamOptions {
            bookmarks: !args.no_bookmarks,
            verbose: global.verbose > 0,
            watch_timeout_secs: watch_timeout
                .unwrap_or(StreamOptions::default().watch_timeout_secs),
            ..StreamOptions::default()
        },
        mode,
        retention: (args.retain.is_some() || args.max_size.is_some()).then(|| {
            recorder::retention::Retention {
                retain: args.retain.map(|d| d.0),
                max_size: args.max_size.map(|s| s.0),
            }
        }),
    };
    // The audit log on a thread of its own, with a journal connection of
    // its own: it never holds up the watches.
    let following = match follower {
        Some(follower) => {
            if mode != Mode::Quiet {
                eprintln!("following audit log {}", follower.path().display());
            }
            let (stop, stopped) = std::sync::mpsc::channel::<()>();
            let thread = std::thread::spawn(move || {
                crate::audit_import::follow::run(follower, stopped, Duration::from_secs(1), |w| {
                    eprintln!("warning: {w}")
                })
            });
            Some((stop, thread))
        }
        None => None,
    };
    if let Some(retention) = &options.retention {
        if journal.enable_incremental_vacuum()? && mode != Mode::Quiet {
            eprintln!(
                "the journal now gives freed space back to the file system (a one-time rewrite)"
            );
        }
        journal.set_meta(RETENTION_KEY, Some(&retention_meta(retention)))?;
    }
    let retaining = options.retention.is_some();
    let summary = recorder::record(&access, journal, plan.streams, options, stop_rx).await;
    if retaining {
        // What `status` shows is this recorder's: gone with it.
        if let Ok(journal) = Journal::open_or_create(&path) {
            let _ = journal.set_meta(RETENTION_KEY, None);
        }
    }
    if let Some((stop, thread)) = following {
        let _ = stop.send(());
        let _ = thread.join();
    }
    let summary = summary.map_err(|e| match e {
        recorder::RecordError::Journal(e) => CliError::from(e),
        refused @ recorder::RecordError::AllRefused(_) => refused_error(refused),
        e @ recorder::RecordError::Pulse(_) => CliError::runtime(e.to_string()).caused_by(e),
    })?;
    super::out(&crate::render::record::summary(&summary, &path))
}

/// Every stream refused before any list: one line with the first answer
/// (which names the user, the verb and the resource), the other streams, and
/// where the roles are.
fn refused_error(e: recorder::RecordError) -> CliError {
    let mut err = CliError::runtime(e.to_string());
    if let recorder::RecordError::AllRefused(streams) = &e
        && streams.len() > 1
    {
        let others: Vec<&str> = streams.iter().skip(1).map(|(n, _)| n.as_str()).collect();
        err = err.hint(format!("also refused: {}", others.join(", ")));
    }
    err.hint(
        "the recorder needs get, list and watch on what it records: docs/rbac/recorder-role.yaml \
         (one namespace) and docs/rbac/recorder-clusterrole.yaml (-A) grant them; \
         `kubectl auth can-i watch deployments -n NS` checks",
    )
    .caused_by(e)
}

/// `fut`'s output, or `None` when a stop comes first.
async fn unless_stopped<T>(
    stop: &mut tokio::sync::watch::Receiver<bool>,
    fut: impl std::future::Future<Output = T>,
) -> Option<T> {
    if *stop.borrow() {
        return None;
    }
    tokio::select! {
        v = fut => Some(v),
        _ = stop.wait_for(|stopped| *stopped) => None,
    }
}

/// Stopped while connecting or discovering: nothing was recorded, and that is
/// what was asked for.
fn stopped_before_start() -> CliResult {
    eprintln!("stopped before recording started: nothing recorded");
    Ok(())
}

/// A flag raised by Ctrl-C, SIGTERM or the end of `--for`. The signal handlers
/// are installed before this returns, so no signal is lost to the default
/// action (which would end the process without closing the journal).
fn stop_signal(duration: Option<Duration>) -> tokio::sync::watch::Receiver<bool> {
    let (tx, rx) = tokio::sync::watch::channel(false);
    let timer = async move {
        match duration {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending().await,
        }
    };
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut int = signal(SignalKind::interrupt()).ok();
        let mut term = signal(SignalKind::terminate()).ok();
        tokio::spawn(async move {
            let recv = |s: &mut Option<tokio::signal::unix::Signal>| {
                let s = s.take();
                async move {
                    match s {
                        Some(mut s) => {
                            s.recv().await;
                        }
                        None => std::future::pending().await,
                    }
                }
            };
            tokio::select! {
                _ = timer => {}
                _ = recv(&mut int) => {}
                _ = recv(&mut term) => {}
            }
            let _ = tx.send(true);
        });
    }
    #[cfg(not(unix))]
    tokio::spawn(async move {
        tokio::select! {
            _ = timer => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        let _ = tx.send(true);
    });
    rx
}

fn ensure_dir(dir: &std::path::Path) -> CliResult {
    if dir.is_dir() {
        return Ok(());
    }
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(dir).map_err(|e| {
        CliError::runtime(format!(
            "cannot create the journal directory {}: {e}",
            dir.display()
        ))
        .hint("pass --store with a writable path")
        .caused_by(e)
    })
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| std::env::var("COMPUTERNAME").ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "this host".into())
}
