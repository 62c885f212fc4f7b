//! `demo`: the built-in demo, end to end, in one process.

use super::args::GlobalArgs;
use crate::diff::DiffOptions;
use crate::error::{CliError, CliResult};
use crate::history::diff::NameFilter;
use crate::journal::Journal;
use crate::recorder::display::Mode;
use crate::render::Format;
use clap::Args;
use std::path::PathBuf;

/// Run the built-in demo: a simulated cluster, a scripted incident, recorded and explained
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  # Everything in a fresh temporary directory
  kubectl krply demo

  # Keep the demo journal somewhere known
  kubectl krply demo --dir ./krply-demo

The demo never touches your kubeconfig, your clusters or your own journal.")]
pub struct DemoArgs {
    /// Directory for the demo's journal and kubeconfig (default: a new temporary directory)
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// The test namespace the demo replays the shop into.
const REPLAY_NAMESPACE: &str = "shop-before";

/// `demo`: runs the story, then prints each answer command's output in the order the
/// story tells it.
///
/// Long on purpose: one block per answer shown (coverage, diff, log, timeline, a
/// replay plan), each a library call and its rendering, in reading order.
pub async fn run(global: &GlobalArgs, args: DemoArgs) -> CliResult {
    let dir = match args.dir {
        Some(d) => d,
        None => std::env::temp_dir().join(format!(
            "krply-demo-{}-{}",
            std::process::id(),
            crate::time::Millis::now().as_ms()
        )),
    };
    let store = dir.join("journal.db");
    if store.exists() {
        return Err(CliError::usage(format!(
            "{} already holds a journal; the demo wants a fresh directory",
            dir.display()
        )));
    }
    let mode = Mode::for_stderr(global.quiet);
    let paint = global.paint();
    let say = |line: &str| {
        let _ = super::out(&format!("{} {line}\n", paint.dim("==>")));
    };
    let outcome = crate::demo::run(&store, mode, &say)
        .await
        .map_err(|e| CliError::runtime(format!("the demo failed: {e}")).caused_by(e))?;
    say(&format!(
        "stopped the recorder: {} events, {} gap(s) in {} streams, {} change(s) found by relists",
        outcome.summary.events(),
        outcome.summary.gaps(),
        outcome.summary.streams.len(),
        outcome.summary.found_by_relists()
    ));

    let journal = Journal::open(&store)?;
    let reader = super::reader::Reader {
        cluster: journal
            .clusters()?
            .into_iter()
            .find(|c| c.id == outcome.cluster_id)
            .ok_or_else(|| CliError::runtime("the demo journal lost its cluster"))?,
        namespace: Some(crate::demo::NAMESPACE.to_string()),
        journal,
    };
    let history = reader.history()?;
    let coverage = crate::render::coverage::report(
        &reader.journal,
        &outcome.cluster_id,
        Some(crate::demo::NAMESPACE),
        Format::Table,
        paint,
    )?;
    super::out(&format!(
        "\n{}\n{coverage}",
        paint.bold("$ kubectl krply coverage -n shop")
    ))?;

    // What changed since just before the incident, field by field.
    // Up to where the recording ends, so the answer covers only watched time.
    let since = outcome.before_incident;
    let until = history
        .streams
        .iter()
        .filter_map(|s| s.coverage.to)
        .min()
        .map_or_else(crate::time::Millis::now, crate::time::Millis::from_ms);
    let window = crate::time::TimeWindow::new(since, until)?;
    let scope = crate::history::Scope {
        namespace: reader.namespace.clone(),
        types: None,
    };
    let (every_name, defaults) = (NameFilter::default(), DiffOptions::default());
    let changes = history.diff(&scope, &every_name, &window, &defaults, false)?;
    super::out(&format!(
        "\n{}\n{}{}",
        paint.bold(&format!(
            "$ kubectl krply diff -n shop --since {since} --until {until}"
        )),
        crate::render::diff::text(
            &changes,
            reader.namespace.as_deref(),
            &window,
            crate::render::text_width(false),
            paint,
        ),
        crate::render::warnings::text(&changes.completeness, paint)
    ))?;

    // The same window in order, one line per change, with the gap where it fell.
    let log = history.log(&scope, &every_name, &window, &defaults)?;
    super::out(&format!(
        "\n{}\n{}",
        paint.bold(&format!(
            "$ kubectl krply log -n shop --since {since} --until {until}"
        )),
        crate::render::log::text(&log, false, crate::render::text_width(false), paint),
    ))?;

    // The object that changed most, version by version, with the gap.
    let ids: Vec<_> = history.streams.iter().map(|s| s.info.id).collect();
    if let Some(object) = reader.journal.busiest_object(&ids)?
        && let Some(stream) = history.stream(object.stream)
    {
        let tracked = history.track_row(stream, &object)?;
        let t = history.timeline(&tracked, &defaults)?;
        super::out(&format!(
            "\n{}\n{}",
            paint.bold(&format!(
                "$ kubectl krply timeline {}/{} -n shop",
                stream.info.resource.singular, object.name
            )),
            crate::render::timeline::table(&t.entries, crate::render::text_width(false), paint)
        ))?;
    }
    // The namespace as it was before the incident, planned into a test
    // namespace of the same (simulated) cluster and checked by a dry run.
    let request = crate::replay::make::PlanRequest {
        cluster: reader.cluster.id.clone(),
        namespace: crate::demo::NAMESPACE.into(),
        at: since,
        types: Vec::new(),
        to_namespace: REPLAY_NAMESPACE.into(),
        include: Vec::new(),
        allow_gaps: false,
        create_namespace: true,
    };
    let opts = crate::cluster::ConnectOptions {
        kubeconfig: Some(outcome.kubeconfig.clone()),
        ..Default::default()
    };
    drop(history);
    // As a user would: --create-namespace makes the test namespace, so every
    // object gets a full dry run.
    super::out(&format!(
        "\n{}\n",
        paint.bold(&format!(
            "$ kubectl krply replay plan -n shop --at {since} --to-namespace {REPLAY_NAMESPACE} --create-namespace"
        ))
    ))?;
    let mut notes = String::new();
    let mut announce = |what: &str| notes.push_str(&format!("note: {what}\n"));
    let plan = crate::replay::make::make(&reader.journal, &request, &opts, &mut announce).await?;
    super::out(&format!(
        "{notes}{}",
        crate::render::plan::text(&plan, paint)
    ))?;
    outcome.sim.shutdown();

    super::out(&format!(
        "\nThe 410 left a gap in every stream: the relist restored current state (it shows\nfrontend-config's new log_level), but what happened in between is not in the\njournal, and krply says so.\n\nExplore the journal yourself (the simulator is gone; the journal answers offline):\n  export KRPLY_STORE={} KUBECONFIG={}\n  kubectl krply status\n  kubectl krply timeline cm/frontend-config -n shop\n  kubectl krply log -n shop --since {} --by alice@example.com\n  kubectl krply get deploy/frontend -n shop --at {}\n  kubectl krply replay show {} -o yaml\n\nOr look around all of it, full screen, in the terminal browser (? keys, q quits):\n  kubectl krply browse -n shop\n",
        store.display(),
        outcome.kubeconfig.display(),
        outcome.before_incident,
        outcome.before_incident,
        plan.id
    ))
}
