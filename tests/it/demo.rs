//! The built-in demo, run as a new user runs it: one command, then the journal
//! it leaves behind answers offline.

use std::process::Command;

use crate::common::BIN;

fn krply(home: &std::path::Path) -> Command {
    let mut c = Command::new(&*BIN);
    c.env_clear()
        .env("TZ", "UTC")
        .env("HOME", home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("NO_COLOR", "1")
        .env("NO_PROXY", "127.0.0.1,localhost");
    c
}

#[test]
fn the_demo_records_the_incident_and_explains_it() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("demo");
    let out = krply(home.path())
        .args(["demo", "--dir", dir.to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");

    // Coverage, then the diff of exactly the scripted changes.
    let diff = stdout
        .split("$ kubectl krply diff")
        .nth(1)
        .expect("a diff")
        .split("$ kubectl krply timeline")
        .next()
        .unwrap();
    for expected in [
        "Deployment frontend  modified",
        "spec.replicas  1 -> 2",
        "Deployment productcatalogservice  modified",
        // The changed registry stays visible, however the value is cut.
        "online-boutique-ci",
        "google-samples",
        "v0.10.7",
        "EXTRA_LATENCY",
        "ConfigMap feature-flags  modified",
        r#"data.new-checkout  <none> -> "true""#,
        "ConfigMap frontend-config  modified",
        "data.log_level",
        "Deployment loadgenerator  deleted",
        // Who did it, from the simulator's audit log.
        "spec.replicas  1 -> 2  by alice@example.com (kubectl-scale)",
        "Deployment loadgenerator  deleted  by alice@example.com",
        r#"data.new-checkout  <none> -> "true"  by bob@example.com (kubectl-edit)"#,
        "by system:serviceaccount:ci:deployer (helm)",
        "5 object(s) changed.",
        "warning: this answer is incomplete",
        "410 Expired",
    ] {
        assert!(
            diff.contains(expected),
            "{expected:?} missing from:\n{diff}"
        );
    }
    // The busiest object's timeline shows the gap where it fell.
    let timeline = stdout.split("$ kubectl krply timeline").nth(1).unwrap();
    assert!(timeline.starts_with(" deployment/frontend"), "{timeline}");
    let rows: Vec<&str> = timeline
        .lines()
        .skip(2)
        .take_while(|l| !l.is_empty() && !l.starts_with('*'))
        // Rows that go on (a manager, a gap's reason) start with blanks.
        .filter(|l| !l.starts_with(' '))
        // The time is a date and a time of day, then RV, then TYPE.
        .map(|l| l.split_whitespace().nth(3).unwrap())
        .collect();
    assert_eq!(
        rows,
        ["BASELINE*", "MODIFIED", "GAP", "BASELINE*", "MODIFIED"]
    );

    // The replay plan of the namespace before the incident passed its dry run,
    // with the deleted Deployment back and the old replica count.
    let plan = stdout.split("$ kubectl krply replay plan").nth(1).unwrap();
    assert!(plan.contains(": dry-run-ok"), "{plan}");
    assert!(
        plan.contains("Deployment       shop-before   loadgenerator"),
        "{plan}"
    );
    assert!(!plan.contains("conflict"), "{plan}");
    // The plan made the test namespace first, and said so.
    assert!(
        plan.contains("note: creating namespace shop-before on the target"),
        "{plan}"
    );
    let id = plan
        .lines()
        .find_map(|l| l.strip_prefix("Plan "))
        .and_then(|l| l.split(':').next())
        .expect("a plan id")
        .to_string();

    // The journal answers offline, with the commands the demo suggests.
    let store = dir.join("journal.db");
    let offline = |args: &[&str]| {
        let out = krply(home.path())
            .env("KRPLY_STORE", &store)
            .env("KUBECONFIG", dir.join("kubeconfig"))
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(offline(&["status"]).contains("Recorder:        not running"));
    let shown: serde_json::Value =
        serde_json::from_str(&offline(&["replay", "show", &id, "-o", "json"])).unwrap();
    let frontend = shown["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "Deployment" && o["name"] == "frontend")
        .unwrap();
    assert_eq!(frontend["manifest"]["spec"]["replicas"], 1);
    assert!(offline(&["timeline", "cm/frontend-config", "-n", "shop"]).contains("GAP"));

    // A second demo into the same directory is refused.
    let again = krply(home.path())
        .args(["demo", "--dir", dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).starts_with("error: "));
}
