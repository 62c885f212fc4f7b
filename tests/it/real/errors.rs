//! What a user sees when the real server cannot be used: one `error:` line,
//! a hint, exit 1, and nothing recorded.

use super::RealEnv;

fn assert_one_error(out: &crate::common::Output, starts: &str, hint: &str) {
    assert_eq!(out.code, Some(1), "{out:?}");
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 2, "an error and a hint:\n{}", out.stderr);
    assert!(
        lines[0].starts_with(&format!("error: {starts}")),
        "{}",
        out.stderr
    );
    assert!(
        lines[1].starts_with("hint: ") && lines[1].contains(hint),
        "{}",
        out.stderr
    );
}

#[test]
fn a_stopped_server_a_rejected_token_and_a_foreign_ca_are_one_clear_error_each() {
    let env = RealEnv::new("default");

    // Nothing listens there any more.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let stopped = env.run(&["record", "--server", &format!("https://127.0.0.1:{port}")]);
    assert_one_error(
        &stopped,
        &format!("cannot reach the API server at https://127.0.0.1:{port}"),
        "kubectl cluster-info",
    );

    // A token the server does not know (expired, revoked, or mistyped).
    let rejected = env.run(&["record", "--token", "not-a-token"]);
    assert_one_error(
        &rejected,
        &format!(
            "the API server at {} rejected the credentials: Unauthorized",
            env.kube.ready.server
        ),
        "kubectl auth whoami",
    );

    // A certificate authority that did not sign the server's certificate.
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let foreign = env.dir.path().join("foreign-ca.crt");
    std::fs::write(&foreign, params.self_signed(&key).unwrap().pem()).unwrap();
    let untrusted = env.run(&[
        "record",
        "--certificate-authority",
        foreign.to_str().unwrap(),
    ]);
    assert_one_error(
        &untrusted,
        &format!(
            "the API server at {} presented a certificate that is not signed by the certificate authority this kubeconfig trusts",
            env.kube.ready.server
        ),
        "--insecure-skip-tls-verify",
    );

    // The same for a replay target.
    let plan = env.run(&[
        "replay",
        "plan",
        "-n",
        "default",
        "--to-namespace",
        "elsewhere",
        "--token",
        "not-a-token",
    ]);
    assert_eq!(plan.code, Some(1), "{plan:?}");
    assert!(plan.stderr.starts_with("error: "), "{plan:?}");
    assert!(
        !env.store.exists() || env.journal().streams(None).unwrap().is_empty(),
        "nothing was recorded"
    );
}

/// A real server that stops answering (a proxy holds every connection):
/// `record` gives up after `--request-timeout`, and Ctrl-C during start-up
/// stops it at once even with no timeout.
#[test]
fn a_server_that_stops_answering_is_a_timeout_and_ctrl_c_still_works() {
    let mut env = RealEnv::new("default");
    let proxy = env.behind_proxy();
    proxy.cut_and_hold();

    let hung = env.run(&["record", "--request-timeout", "2s"]);
    assert_eq!(hung.code, Some(1), "{hung:?}");
    assert!(
        hung.stderr.starts_with(&format!(
            "error: the API server at {} did not answer within 2s",
            proxy.url()
        )),
        "{}",
        hung.stderr
    );

    let before = proxy.accepted();
    let mut recorder = env.start_recorder(&["--request-timeout", "0"]);
    env.wait_real("the recorder to reach the server", || {
        proxy.accepted() > before
    });
    recorder.signal("INT");
    let stopped = recorder.wait();
    assert_eq!(stopped.code, Some(0), "{stopped:?}");
    assert!(
        stopped
            .stderr
            .contains("stopped before recording started: nothing recorded"),
        "{}",
        stopped.stderr
    );
    proxy.release();
}
