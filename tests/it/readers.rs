//! `status` and `coverage` read the journal offline, in the shapes docs/output.md
//! promises, and pick the cluster the way it says.

use crate::common;

use common::Env;
use serde_json::Value;

/// Records configmaps and deployments with one 410 gap in the configmaps stream.
fn recorded() -> Env {
    let env = Env::shop();
    let rec = env.start_recorder(&["cm", "deploy"]);
    env.wait_baselines(1);
    env.patch_cm("feature-flags", "x", "1");
    env.wait_for("the event", || {
        std::panic::catch_unwind(|| env.coverage("configmaps.v1@shop").events).unwrap_or(0) == 1
    });
    env.sim.compact();
    env.sim.expire_watches();
    env.wait_for("the gap to close", || {
        std::panic::catch_unwind(|| {
            let c = env.coverage("configmaps.v1@shop");
            c.gaps == 1 && c.windows.iter().all(|w| w.to.is_some())
        })
        .unwrap_or(false)
    });
    assert_eq!(rec.stop().code, Some(0));
    env
}

fn is_time(v: &Value) -> bool {
    let s = v.as_str().unwrap_or_default();
    s.len() == 24
        && s.ends_with('Z')
        && s.as_bytes()[19] == b'.'
        && krply::time::Millis::parse_rfc3339(s).is_ok()
}

#[test]
fn coverage_json_has_the_contract_shape() {
    let env = recorded();
    let out = env.run(&["coverage", "-o", "json"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    let streams = v["streams"].as_array().unwrap();
    assert_eq!(streams.len(), 2);
    for s in streams {
        for key in [
            "id",
            "cluster",
            "group",
            "version",
            "resource",
            "namespace",
            "state",
            "last_resource_version",
            "events",
            "gaps",
            "complete",
            "from",
            "to",
            "gap_windows",
        ] {
            assert!(s.get(key).is_some(), "{key} missing in {s}");
        }
        assert!(is_time(&s["from"]) && is_time(&s["to"]), "{s}");
        assert_eq!(s["state"], "stopped");
    }
    let cm = streams
        .iter()
        .find(|s| s["resource"] == "configmaps")
        .unwrap();
    assert_eq!(cm["id"], "configmaps.v1@shop");
    assert_eq!(cm["group"], "");
    assert_eq!(cm["namespace"], "shop");
    assert_eq!(cm["complete"], false);
    assert_eq!(cm["events"], 1);
    assert_eq!(cm["gaps"], 1);
    let w = &cm["gap_windows"][0];
    assert!(is_time(&w["from"]) && is_time(&w["to"]));
    assert!(w["reason"].as_str().unwrap().starts_with("410 Expired"));
    let deploy = streams
        .iter()
        .find(|s| s["resource"] == "deployments")
        .unwrap();
    assert_eq!(deploy["group"], "apps");
    assert_eq!(
        deploy["complete"], false,
        "the 410 reached every open watch"
    );

    let yaml = env.run(&["coverage", "-o", "yaml"]);
    assert_eq!(yaml.code, Some(0));
    let y: Value = serde_saphyr::from_str(&yaml.stdout).unwrap();
    assert_eq!(y["streams"][0]["id"], v["streams"][0]["id"]);
}

#[test]
fn coverage_strict_exits_3_for_a_gap_or_a_namespace_never_recorded() {
    let env = recorded();
    // The 410 reached both streams.
    let all = env.run(&["coverage", "--strict"]);
    assert_eq!(all.code, Some(3), "{all:?}");
    assert!(
        all.stderr
            .starts_with("error: coverage is incomplete: 2 of 2 stream(s) have a gap"),
        "{}",
        all.stderr
    );
    assert!(
        all.stdout.contains("configmaps.v1@shop"),
        "the table is printed first"
    );
    let json = env.run(&["coverage", "--strict", "-o", "json"]);
    assert_eq!(json.code, Some(3));
    assert!(serde_json::from_str::<Value>(&json.stdout).is_ok());
    let never = env.run(&["coverage", "--strict", "-n", "prod"]);
    assert_eq!(never.code, Some(3), "{never:?}");
    assert!(
        never
            .stderr
            .contains("no stream in scope was ever recorded")
    );
    assert_eq!(env.run(&["coverage", "-n", "prod"]).code, Some(0));
}

#[test]
fn coverage_table_reads_like_kubectl() {
    let env = recorded();
    let out = env.run(&["coverage"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let wide = env.run(&["coverage", "-o", "wide"]);
    assert_eq!(wide.code, Some(0), "{}", wide.stderr);
    for line in out.stdout.lines() {
        assert!(line.chars().count() <= 120, "{line}");
    }
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", "[TIME]");
    settings.add_filter(r"\d\d:\d\d:\d\d\.\d{3}Z?", "[T]");
    settings.add_filter(r"\d\d:\d\d:\d\d", "[T]");
    settings.add_filter(r"\d{4}-\d\d-\d\d", "[DAY]");
    // Where a gap falls in a coverage bar depends on the run's timing.
    settings.add_filter(r"\|[=x ]+\|", "|[BAR]|");
    settings.bind(|| {
        insta::assert_snapshot!(out.stdout);
        insta::assert_snapshot!("coverage_table_wide", wide.stdout);
    });
}

#[test]
fn status_json_has_the_contract_shape() {
    let env = recorded();
    let out = env.run(&["status", "-o", "json"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["store"], env.store.display().to_string());
    assert!(v["size_bytes"].as_u64().unwrap() > 0);
    assert_eq!(v["streams"], 2);
    assert_eq!(v["events"], 1);
    assert_eq!(v["gaps"], 2);
    assert!(is_time(&v["first_observed"]) && is_time(&v["last_observed"]));
    let c = &v["clusters"][0];
    assert_eq!(c["server"], env.sim.url());
    assert_eq!(c["context"], "krply-sim");
    assert!(c["id"].as_str().unwrap().starts_with("127.0.0.1-"));
    assert_eq!(v["recorder"]["running"], false);
    let text = env.run(&["status"]);
    assert!(
        text.stdout.contains("Gaps:            2"),
        "{}",
        text.stdout
    );
}

#[test]
fn readers_pick_the_cluster_of_the_context_or_say_which_exist() {
    let env = recorded();
    let id = env.journal().clusters().unwrap()[0].id.clone();
    // Another cluster in the kubeconfig: nothing recorded for it.
    let elsewhere = env.dir.path().join("elsewhere");
    std::fs::write(
        &elsewhere,
        "apiVersion: v1\nkind: Config\ncurrent-context: x\nclusters:\n- name: x\n  cluster:\n    server: https://elsewhere.example:6443\ncontexts:\n- name: x\n  context:\n    cluster: x\nusers: []\n",
    )
    .unwrap();
    let out = env.run(&["coverage", "--kubeconfig", elsewhere.to_str().unwrap()]);
    assert_eq!(out.code, Some(1));
    assert!(
        out.stderr
            .starts_with("error: nothing recorded for elsewhere-"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains(&id),
        "the hint lists the recorded clusters: {}",
        out.stderr
    );
    // `status` is about the journal: the bars of the one cluster it holds,
    // whatever the context, and a kubeconfig it has no need to read.
    let broken = env.dir.path().join("broken");
    std::fs::write(&broken, "clusters: [\n").unwrap();
    for kubeconfig in [&elsewhere, &broken] {
        let out = env.run(&["status", "--kubeconfig", kubeconfig.to_str().unwrap()]);
        assert_eq!(out.code, Some(0), "{}", out.stderr);
        assert!(out.stdout.contains("\nCoverage from "), "{}", out.stdout);
        assert!(out.stdout.contains("configmaps.v1@shop"), "{}", out.stdout);
    }
    let out = env.run(&[
        "coverage",
        "--kubeconfig",
        elsewhere.to_str().unwrap(),
        "--cluster-id",
        &id,
    ]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let out = env.run(&["coverage", "--cluster-id", "nope"]);
    assert_eq!(out.code, Some(1));
    assert!(out.stderr.starts_with("error: no cluster \"nope\""));
    // No kubeconfig at all and one cluster recorded: that one.
    let out = env
        .command()
        .env("KUBECONFIG", env.dir.path().join("none"))
        .arg("coverage")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Offline: the simulator may be gone, readers do not care.
    env.sim.shutdown();
    assert_eq!(env.run(&["coverage"]).code, Some(0));
    assert_eq!(
        env.run(&["coverage", "-n", "shop", "-o", "json"]).code,
        Some(0)
    );
}

/// The default coverage view fits the width it is given (`$COLUMNS` when
/// stdout is not a terminal), with Unicode and colour only when asked.
#[test]
fn coverage_bars_fit_80_and_200_columns_with_and_without_colour() {
    let env = recorded();
    let ansi = regex::Regex::new("\x1b\\[[0-9;]*m").unwrap();
    for (columns, colour) in [(80, false), (200, false), (80, true), (200, true)] {
        let mut cmd = env.command();
        cmd.args([
            "coverage",
            "--color",
            if colour { "always" } else { "never" },
        ])
        .env("COLUMNS", columns.to_string());
        let out = crate::common::run_bounded(cmd, "coverage");
        let text = out.stdout.clone();
        let plain = ansi.replace_all(&text, "");
        for line in plain.lines() {
            assert!(line.chars().count() <= columns, "{columns}: {line:?}");
        }
        let bar = plain
            .lines()
            .find(|l| l.starts_with("configmaps"))
            .unwrap_or_else(|| panic!("{plain}"));
        // A bar as wide as the columns allow, with its gap.
        assert!(bar.chars().count() >= columns - 2, "{bar:?}");
        let (covered, gap) = if colour { ('█', '░') } else { ('=', 'x') };
        assert!(bar.contains(covered) && bar.contains(gap), "{bar:?}");
        assert_eq!(text.contains("\x1b["), colour, "{text}");
    }
}
