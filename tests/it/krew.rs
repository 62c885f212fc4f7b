//! Shipping as a kubectl plugin: the release script packs archives and renders
//! the krew manifest, the manifest and archives pass krew's rules (and the
//! rules reject what krew rejects), an archive installs into a krew-like tree
//! and runs through the real kubectl, completion works through kubectl, and the
//! RBAC examples in docs/rbac are valid.
//!
//! Uses bash and tar (and zip or python3 for the Windows archive), and the
//! kubectl built with the real control plane (`tests/realkube`).

#![cfg(unix)]

mod rules;

use rules::{Platform, Plugin};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const BIN: &str = env!("CARGO_BIN_EXE_kubectl-krply");

fn version() -> String {
    format!("v{}", env!("CARGO_PKG_VERSION"))
}

fn text(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs `plugin/release.sh --dist DIST ARGS`.
fn release(dist: &Path, args: &[&str]) -> Output {
    Command::new("bash")
        .arg(Path::new(ROOT).join("plugin/release.sh"))
        .arg("--dist")
        .arg(dist)
        .args(args)
        .output()
        .expect("bash runs release.sh")
}

fn release_ok(dist: &Path, args: &[&str]) -> String {
    let out = release(dist, args);
    assert!(out.status.success(), "release.sh {args:?}: {}", text(&out));
    stdout(&out).trim().to_string()
}

/// A stand-in binary: the archive rules do not care what the binary does, and
/// packing the real debug binary takes seconds.
fn stub_binary(dir: &Path) -> PathBuf {
    let path = dir.join("stub");
    std::fs::write(&path, "#!/bin/sh\necho stub\n").unwrap();
    set_executable(&path);
    path
}

fn set_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// One packed platform and the manifest rendered for it.
struct Release {
    dir: tempfile::TempDir,
    plugin: Plugin,
    archive: PathBuf,
    os: &'static str,
    arch: &'static str,
}

impl Release {
    fn new(binary: Option<&Path>, os: &'static str, arch: &'static str) -> Release {
        let dir = tempfile::tempdir().unwrap();
        let dist = dir.path().join("dist");
        let binary = match binary {
            Some(b) => b.to_path_buf(),
            None => stub_binary(dir.path()),
        };
        let platform = format!("{os}/{arch}");
        let archive = PathBuf::from(release_ok(
            &dist,
            &["pack", &platform, binary.to_str().unwrap()],
        ));
        let manifest = PathBuf::from(release_ok(&dist, &["manifest", "--allow-missing"]));
        assert_eq!(manifest.file_name().unwrap(), "krply.yaml");
        let plugin = rules::parse(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
        Release {
            dir,
            plugin,
            archive,
            os,
            arch,
        }
    }

    fn platform(&self) -> &Platform {
        rules::select(&self.plugin, self.os, self.arch).expect("the manifest has this platform")
    }

    fn platform_mut(&mut self) -> &mut Platform {
        let (os, arch) = (self.os, self.arch);
        self.plugin
            .spec
            .platforms
            .iter_mut()
            .find(|p| p.selector.as_ref().is_some_and(|s| s.matches(os, arch)))
            .expect("the manifest has this platform")
    }

    /// Installs into a fresh krew root under the temp dir.
    fn install(&self, root: &str) -> Result<rules::Installed, Vec<String>> {
        rules::install(
            &self.plugin,
            self.platform(),
            &self.archive,
            &self.dir.path().join(root),
        )
    }
}

fn assert_rejected(errors: &[String], wanted: &str) {
    assert!(
        errors.iter().any(|e| e.contains(wanted)),
        "expected an error containing {wanted:?}, got {errors:#?}"
    );
}

/// kubectl in a sandbox: its own HOME and an empty kubeconfig, PATH = the krew
/// bin directory first, then kubectl's own directory.
fn kubectl(kubectl: &Path, home: &Path, bin_dir: &Path) -> Command {
    let kubeconfig = home.join("kubeconfig");
    if !kubeconfig.exists() {
        std::fs::write(&kubeconfig, "apiVersion: v1\nkind: Config\n").unwrap();
    }
    let path = std::env::join_paths([bin_dir, kubectl.parent().unwrap()]).unwrap();
    let mut c = Command::new(kubectl);
    c.env_clear()
        .env("TZ", "UTC")
        .env("HOME", home)
        .env("PATH", path)
        .env("KUBECONFIG", kubeconfig)
        .env("KUBECACHEDIR", home.join("cache"));
    c
}

#[test]
fn the_host_archive_installs_like_krew_and_runs_through_kubectl() {
    let (os, arch) = rules::host_platform();
    let release = Release::new(Some(Path::new(BIN)), os, arch);
    // Every platform the tests run on is one the manifest ships.
    assert!(
        rules::select(&release.plugin, os, arch).is_some(),
        "the manifest has no platform for {os}/{arch}"
    );
    let errors = rules::validate(&release.plugin, "krply.yaml");
    assert!(errors.is_empty(), "{errors:#?}");
    let platform = release.platform();
    assert!(
        platform.uri.ends_with(
            release
                .archive
                .file_name()
                .unwrap()
                .to_string_lossy()
                .as_ref()
        ),
        "{}",
        platform.uri
    );

    let installed = release.install("krew").unwrap_or_else(|e| panic!("{e:#?}"));
    let store = release.dir.path().join("krew/store/krply").join(version());
    assert_eq!(installed.dir, store);
    for file in [
        "kubectl-krply",
        "LICENSE",
        "README.md",
        "kubectl_complete-krply",
    ] {
        assert!(store.join(file).is_file(), "{file} not installed");
    }
    assert!(
        std::fs::symlink_metadata(&installed.link)
            .unwrap()
            .file_type()
            .is_symlink()
    );

    // The plugin runs from the krew bin directory.
    let out = Command::new(&installed.link)
        .arg("version")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        stdout(&out).starts_with(&format!("kubectl-krply {} ", env!("CARGO_PKG_VERSION"))),
        "{}",
        text(&out)
    );

    // Completion scripts from the installed binary, for every shell.
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let out = Command::new(&installed.link)
            .args(["completion", shell])
            .output()
            .unwrap();
        assert!(out.status.success(), "{shell}: {}", text(&out));
        let script = stdout(&out);
        assert!(!script.trim().is_empty(), "{shell}: empty script");
        assert!(
            script.contains("record") && script.contains("coverage"),
            "{shell}: the script does not know the commands"
        );
    }
    bash_completes(&installed.link);

    // The completion helper, where the manifest's caveats tell users to put it.
    let bin_dir = installed.link.parent().unwrap().to_path_buf();
    std::os::unix::fs::symlink(
        store.join("kubectl_complete-krply"),
        bin_dir.join("kubectl_complete-krply"),
    )
    .unwrap();

    let kubectl_bin = crate::real::kubectl_bin();
    let home = release.dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let run = |args: &[&str]| {
        let out = kubectl(&kubectl_bin, &home, &bin_dir)
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "kubectl {args:?}: {}", text(&out));
        stdout(&out)
    };

    let version_out = run(&["krply", "version"]);
    assert!(
        version_out.starts_with(&format!("kubectl-krply {}", env!("CARGO_PKG_VERSION"))),
        "{version_out}"
    );
    let listed = run(&["plugin", "list"]);
    assert!(
        listed
            .lines()
            .any(|l| Path::new(l.trim()) == installed.link.as_path()),
        "kubectl plugin list does not show {}:\n{listed}",
        installed.link.display()
    );
    // kubectl completes plugin arguments through kubectl_complete-krply.
    let completed = run(&["__complete", "krply", "rec"]);
    assert!(
        completed.lines().any(|l| l.starts_with("record")),
        "{completed}"
    );
    let flags = run(&["__complete", "krply", "-n", "shop", "coverage", "--col"]);
    assert!(flags.lines().any(|l| l.starts_with("--color")), "{flags}");
}

/// The bash script, sourced into bash, completes a subcommand and a
/// subcommand's flag (the second needs the workaround in `completion.rs`).
fn bash_completes(binary: &Path) {
    assert!(
        rules::on_path("bash"),
        "the bash completion check needs bash on PATH"
    );
    let script = r#"
source <("$KRPLY" completion bash)
fn=$(complete -p kubectl-krply | sed 's/.* -F \([^ ]*\) .*/\1/')
COMP_WORDS=(kubectl-krply rec); COMP_CWORD=1
"$fn" kubectl-krply rec kubectl-krply
echo "1:${COMPREPLY[*]}"
COMP_WORDS=(kubectl-krply record --include-s); COMP_CWORD=2
"$fn" kubectl-krply --include-s record
echo "2:${COMPREPLY[*]}"
"#;
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", script])
        .env("KRPLY", binary)
        .output()
        .unwrap();
    let text_out = stdout(&out);
    assert!(text_out.contains("1:record"), "{}", text(&out));
    assert!(text_out.contains("2:--include-secrets"), "{}", text(&out));
}

#[test]
fn the_committed_manifest_follows_krews_rules_and_the_template() {
    let committed = std::fs::read_to_string(Path::new(ROOT).join("krew-manifest.yaml")).unwrap();
    let plugin = rules::parse(&committed).unwrap();
    let errors = rules::validate(&plugin, "krply.yaml");
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(
        plugin.spec.version,
        version(),
        "bump the manifest with the crate"
    );
    assert_eq!(plugin.metadata.name, "krply");

    let pairs: Vec<(String, String)> = plugin
        .spec
        .platforms
        .iter()
        .map(|p| {
            let s = p.selector.as_ref().unwrap();
            let labels = s.match_labels.as_ref().unwrap();
            (labels["os"].clone(), labels["arch"].clone())
        })
        .collect();
    for pair in [
        ("linux", "amd64"),
        ("linux", "arm64"),
        ("darwin", "amd64"),
        ("darwin", "arm64"),
        ("windows", "amd64"),
    ] {
        assert!(
            pairs.contains(&(pair.0.to_string(), pair.1.to_string())),
            "no platform for {pair:?}"
        );
        let p = rules::select(&plugin, pair.0, pair.1).unwrap();
        let bin = if pair.0 == "windows" {
            "kubectl-krply.exe"
        } else {
            "kubectl-krply"
        };
        assert_eq!(p.bin, bin);
        assert!(
            p.uri
                .starts_with("https://github.com/krply/kubectl-krply/releases/download/"),
            "{}",
            p.uri
        );
    }
    let short = &plugin.spec.short_description;
    assert!(short.len() <= 55, "{short:?} is long for krew-index");
    let caveats = plugin.spec.caveats.as_deref().unwrap_or_default();
    assert!(caveats.contains("get, list and watch") && caveats.contains("docs/rbac"));

    // The committed file is the template rendered for this version: only the
    // checksums (and the not-released note) may differ.
    let dir = tempfile::tempdir().unwrap();
    let rendered = PathBuf::from(release_ok(
        &dir.path().join("dist"),
        &["manifest", "--allow-missing"],
    ));
    let normal = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| match l.trim_start().strip_prefix("sha256: ") {
                Some(_) => "sha256: <sum>".to_string(),
                None => l.to_string(),
            })
            .collect()
    };
    assert_eq!(
        normal(&committed),
        normal(&std::fs::read_to_string(rendered).unwrap()),
        "krew-manifest.yaml drifted from plugin/krew-manifest.yaml.tmpl; run plugin/release.sh manifest --allow-missing --out krew-manifest.yaml"
    );
}

#[test]
fn validation_rejects_an_archive_without_a_license() {
    let mut release = Release::new(None, "linux", "amd64");
    release
        .install("control")
        .expect("the packed archive installs");

    // Repack without LICENSE, under the same name, and point the manifest at it.
    let stage = release.dir.path().join("stage");
    std::fs::create_dir_all(&stage).unwrap();
    std::fs::copy(stub_binary(release.dir.path()), stage.join("kubectl-krply")).unwrap();
    std::fs::write(stage.join("README.md"), "no licence here\n").unwrap();
    let out = Command::new("tar")
        .arg("-czf")
        .arg(&release.archive)
        .arg("-C")
        .arg(&stage)
        .args(["kubectl-krply", "README.md"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let sum = rules::sha256_hex(&release.archive).unwrap();
    release.platform_mut().sha256 = sum;

    assert!(rules::validate(&release.plugin, "krply.yaml").is_empty());
    let errors = release.install("no-license").unwrap_err();
    assert_rejected(&errors, "LICENSE (or alike) file is not extracted");
}

#[test]
fn validation_rejects_files_selectors_that_leave_the_license_behind() {
    let mut release = Release::new(None, "linux", "amd64");
    release.platform_mut().files = Some(vec![rules::FileOp {
        from: "*".into(),
        to: ".".into(),
    }]);
    release.install("all-files").expect("`*` takes everything");

    release.platform_mut().files = Some(vec![rules::FileOp {
        from: "kubectl-*".into(),
        to: ".".into(),
    }]);
    assert!(rules::validate(&release.plugin, "krply.yaml").is_empty());
    let errors = release.install("bin-only").unwrap_err();
    assert_rejected(&errors, "LICENSE (or alike)");

    release.platform_mut().files = Some(vec![rules::FileOp {
        from: "LICENSE".into(),
        to: ".".into(),
    }]);
    let errors = release.install("license-only").unwrap_err();
    assert_rejected(&errors, "bin \"kubectl-krply\" is not in the archive");

    release.platform_mut().files = Some(vec![rules::FileOp {
        from: "../LICENSE".into(),
        to: ".".into(),
    }]);
    let errors = rules::validate(&release.plugin, "krply.yaml");
    assert_rejected(
        &errors,
        "files[0].from \"../LICENSE\" must be a relative path",
    );
}

#[test]
fn validation_rejects_overlapping_selectors() {
    let release = Release::new(None, "linux", "amd64");
    assert!(rules::validate(&release.plugin, "krply.yaml").is_empty());

    // The same platform twice.
    let mut twice = release.plugin.clone();
    twice.spec.platforms.push(release.platform().clone());
    let errors = rules::validate(&twice, "krply.yaml");
    assert_rejected(&errors, "selectors overlap");
    assert_rejected(&errors, "os=linux arch=amd64");

    // A wider selector written as an expression: all of Linux.
    let mut wide = release.plugin.clone();
    let mut any_linux = release.platform().clone();
    any_linux.selector = Some(
        serde_json::from_value(json!({
            "matchExpressions": [{"key": "os", "operator": "In", "values": ["linux"]}]
        }))
        .unwrap(),
    );
    wide.spec.platforms.push(any_linux);
    let errors = rules::validate(&wide, "krply.yaml");
    assert_rejected(&errors, "os=linux arch=amd64");
    assert_rejected(&errors, "os=linux arch=arm64");
    assert!(
        !errors.iter().any(|e| e.contains("os=darwin")),
        "{errors:#?}"
    );
}

#[test]
fn validation_rejects_a_bad_sha256() {
    let mut release = Release::new(None, "linux", "amd64");
    release
        .install("control")
        .expect("the packed archive installs");
    let good = release.platform().sha256.clone();

    for malformed in ["abc", &good.to_uppercase(), &format!("{good}00"), ""] {
        release.platform_mut().sha256 = malformed.to_string();
        let errors = rules::validate(&release.plugin, "krply.yaml");
        assert!(
            errors.iter().any(|e| e.contains(".sha256")),
            "{malformed:?} passed: {errors:#?}"
        );
    }

    // Well formed, but not this archive's.
    let wrong: String = good
        .chars()
        .map(|c| if c == '0' { '1' } else { '0' })
        .collect();
    release.platform_mut().sha256 = wrong;
    assert!(rules::validate(&release.plugin, "krply.yaml").is_empty());
    let errors = release.install("wrong-sum").unwrap_err();
    assert_rejected(&errors, "the manifest says");
}

#[test]
fn validation_rejects_a_mismatched_name() {
    let release = Release::new(None, "linux", "amd64");
    assert!(rules::validate(&release.plugin, "krply.yaml").is_empty());

    let errors = rules::validate(&release.plugin, "kubectl-krply.yaml");
    assert_rejected(&errors, "does not match the file name");

    let mut renamed = release.plugin.clone();
    renamed.metadata.name = "krplay".into();
    let errors = rules::validate(&renamed, "krply.yaml");
    assert_rejected(
        &errors,
        "metadata.name \"krplay\" does not match the file name",
    );

    renamed.metadata.name = "kr ply".into();
    let errors = rules::validate(&renamed, "kr ply.yaml");
    assert_rejected(&errors, "must match ^[\\w-]+$");
}

#[test]
fn validation_rejects_other_broken_fields() {
    let release = Release::new(None, "linux", "amd64");
    let broken = |change: &dyn Fn(&mut Plugin), wanted: &str| {
        let mut p = release.plugin.clone();
        change(&mut p);
        assert_rejected(&rules::validate(&p, "krply.yaml"), wanted);
    };
    broken(&|p| p.spec.version = "0.1.0".into(), "not semver");
    broken(&|p| p.spec.version = "v1.02.0".into(), "not semver");
    broken(
        &|p| p.spec.short_description = "two\nlines".into(),
        "single line",
    );
    broken(
        &|p| p.spec.short_description = "x".repeat(61),
        "keep it to about 50",
    );
    broken(&|p| p.spec.platforms.clear(), "spec.platforms is empty");
    broken(
        &|p| p.spec.platforms[0].selector = None,
        "selector is missing",
    );
    broken(&|p| p.spec.platforms[0].bin.clear(), "bin is missing");
    broken(&|p| p.spec.platforms[0].uri.clear(), "uri is missing");
    broken(
        &|p| p.spec.platforms[0].uri = p.spec.platforms[0].uri.replace(".tar.gz", ".zip"),
        "should end in .tar.gz for linux",
    );
    broken(
        &|p| {
            let w = p
                .spec
                .platforms
                .iter_mut()
                .find(|x| x.bin.ends_with(".exe"))
                .unwrap();
            w.bin = "kubectl-krply".into();
        },
        "must end in .exe on Windows",
    );
    broken(&|p| p.kind = "Plugins".into(), "kind is");
    assert!(
        rules::parse(
            "apiVersion: krew.googlecontainertools.github.com/v1alpha2\nkind: Plugin\nspec:\n  typo: 1\n"
        )
        .is_err()
    );
}

#[test]
fn the_windows_archive_is_a_zip_with_an_exe_and_a_license() {
    let packer = ["zip", "python3"].into_iter().find(|t| rules::on_path(t));
    // python3 is one of the test command's needs (README.md), so this
    // never goes unchecked.
    assert!(
        packer.is_some() && rules::zip_reader().is_some(),
        "the Windows archive check needs zip or python3 on PATH"
    );
    let release = Release::new(None, "windows", "amd64");
    assert!(
        release
            .archive
            .to_string_lossy()
            .ends_with("-windows-amd64.zip")
    );
    assert!(rules::validate(&release.plugin, "krply.yaml").is_empty());
    let installed = release.install("krew").unwrap_or_else(|e| panic!("{e:#?}"));
    assert!(installed.dir.join("kubectl-krply.exe").is_file());
    assert!(installed.dir.join("LICENSE").is_file());
    assert!(!installed.dir.join("kubectl_complete-krply").exists());
    assert!(installed.link.ends_with("bin/kubectl-krply.exe"));
}

#[test]
fn the_release_script_refuses_an_incomplete_release() {
    let dir = tempfile::tempdir().unwrap();
    let dist = dir.path().join("dist");
    let out = release(&dist, &["manifest"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no archive for linux/amd64"),
        "{}",
        text(&out)
    );
    let stub = stub_binary(dir.path());
    let out = release(&dist, &["pack", "plan9/amd64", stub.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("unknown platform plan9/amd64"),
        "{}",
        text(&out)
    );
    let out = release(&dist, &["--version", "0.1", "manifest", "--allow-missing"]);
    assert!(!out.status.success(), "{}", text(&out));

    // Every platform packed: the manifest renders without placeholders.
    for platform in ["linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64"] {
        release_ok(&dist, &["pack", platform, stub.to_str().unwrap()]);
    }
    let sums = std::fs::read_dir(&dist)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".sha256"))
        .count();
    assert_eq!(sums, 4);
    // Windows needs a zip tool; fake its checksum file when there is none, the
    // manifest only reads the checksum.
    let windows = format!("kubectl-krply-{}-windows-amd64.zip", version());
    std::fs::write(
        dist.join(format!("{windows}.sha256")),
        format!("{}  {windows}\n", "ab".repeat(32)),
    )
    .unwrap();
    let manifest = PathBuf::from(release_ok(&dist, &["manifest"]));
    let text_manifest = std::fs::read_to_string(&manifest).unwrap();
    assert!(!text_manifest.contains("NOT RELEASED"));
    assert!(!text_manifest.contains(&"0".repeat(64)));
    let plugin = rules::parse(&text_manifest).unwrap();
    assert!(rules::validate(&plugin, "krply.yaml").is_empty());
    assert_eq!(
        rules::select(&plugin, "windows", "amd64").unwrap().sha256,
        "ab".repeat(32)
    );
}

// --- RBAC examples ------------------------------------------------------------

fn rbac_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(Path::new(ROOT).join("docs/rbac"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

fn rbac_docs(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    serde_saphyr::from_multiple(&text)
        .unwrap_or_else(|e| panic!("{} does not parse: {e}", path.display()))
}

fn str_list(v: &Value) -> Vec<&str> {
    v.as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// (apiGroup, resource) -> verbs, over every rule of a role.
fn grants(role: &Value) -> Vec<(String, String, Vec<String>)> {
    let mut out = Vec::new();
    for rule in role["rules"].as_array().unwrap() {
        for group in str_list(&rule["apiGroups"]) {
            for resource in str_list(&rule["resources"]) {
                out.push((
                    group.to_string(),
                    resource.to_string(),
                    str_list(&rule["verbs"])
                        .into_iter()
                        .map(String::from)
                        .collect(),
                ));
            }
        }
    }
    out
}

#[test]
fn rbac_examples_are_valid_and_minimal() {
    let files = rbac_files();
    let names: Vec<String> = files
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "recorder-clusterrole.yaml",
            "recorder-role.yaml",
            "replay-role.yaml"
        ]
    );
    for file in &files {
        let docs = rbac_docs(file);
        assert!(!docs.is_empty(), "{} is empty", file.display());
        let roles: Vec<(String, String)> = docs
            .iter()
            .filter(|d| d["kind"] == "Role" || d["kind"] == "ClusterRole")
            .map(|d| {
                (
                    d["kind"].as_str().unwrap().to_string(),
                    d["metadata"]["name"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        for doc in &docs {
            let at = format!("{} {}", file.display(), doc["kind"]);
            assert_eq!(doc["apiVersion"], "rbac.authorization.k8s.io/v1", "{at}");
            assert!(
                doc["metadata"]["name"]
                    .as_str()
                    .is_some_and(|n| !n.is_empty()),
                "{at}"
            );
            let kind = doc["kind"].as_str().unwrap_or_default();
            let namespaced = matches!(kind, "Role" | "RoleBinding");
            assert_eq!(
                doc["metadata"]["namespace"].is_string(),
                namespaced,
                "{at}: namespace"
            );
            match kind {
                "Role" | "ClusterRole" => {
                    let rules = doc["rules"].as_array().expect("rules");
                    assert!(!rules.is_empty(), "{at}");
                    for rule in rules {
                        for key in ["apiGroups", "resources", "verbs"] {
                            assert!(!str_list(&rule[key]).is_empty(), "{at}: {key}");
                        }
                        for key in ["resources", "verbs", "apiGroups"] {
                            assert!(!str_list(&rule[key]).contains(&"*"), "{at}: wildcard");
                        }
                        assert!(!str_list(&rule["resources"]).contains(&"secrets"), "{at}");
                        assert!(!str_list(&rule["verbs"]).contains(&"delete"), "{at}");
                    }
                }
                "RoleBinding" | "ClusterRoleBinding" => {
                    let role_ref = &doc["roleRef"];
                    assert_eq!(role_ref["apiGroup"], "rbac.authorization.k8s.io", "{at}");
                    let target = (
                        role_ref["kind"].as_str().unwrap().to_string(),
                        role_ref["name"].as_str().unwrap().to_string(),
                    );
                    assert!(
                        roles.contains(&target),
                        "{at}: binds {target:?}, not in the file"
                    );
                    assert!(
                        !doc["subjects"].as_array().unwrap().is_empty(),
                        "{at}: subjects"
                    );
                }
                other => panic!("{at}: unexpected kind {other}"),
            }
        }
    }

    let role = |file: &str, kind: &str| -> Value {
        rbac_docs(&Path::new(ROOT).join("docs/rbac").join(file))
            .into_iter()
            .find(|d| d["kind"] == kind)
            .unwrap()
    };
    let read_only = |grants: &[(String, String, Vec<String>)]| {
        grants.iter().all(|(_, _, verbs)| {
            verbs
                .iter()
                .all(|v| ["get", "list", "watch"].contains(&v.as_str()))
        })
    };
    let has =
        |grants: &[(String, String, Vec<String>)], group: &str, resource: &str, verbs: &[&str]| {
            grants.iter().any(|(g, r, v)| {
                g == group && r == resource && verbs.iter().all(|x| v.iter().any(|y| y == x))
            })
        };

    // The recorder: get, list, watch on the default resources, nothing more.
    let defaults = [
        ("apps", "deployments"),
        ("apps", "statefulsets"),
        ("apps", "daemonsets"),
        ("", "services"),
        ("", "configmaps"),
        ("", "serviceaccounts"),
    ];
    let cluster = grants(&role("recorder-clusterrole.yaml", "ClusterRole"));
    let namespaced = grants(&role("recorder-role.yaml", "Role"));
    for g in [&cluster, &namespaced] {
        assert!(read_only(g), "{g:?}");
        for (group, resource) in defaults {
            assert!(
                has(g, group, resource, &["get", "list", "watch"]),
                "{resource}"
            );
        }
    }
    assert!(has(&cluster, "", "namespaces", &["get", "list", "watch"]));
    assert_eq!(cluster.len(), defaults.len() + 1);
    assert_eq!(namespaced.len(), defaults.len());

    // Replay: get, list, create, patch on what it applies; namespaces apart.
    let replay = grants(&role("replay-role.yaml", "Role"));
    for (group, resource) in defaults {
        assert!(has(
            &replay,
            group,
            resource,
            &["get", "list", "create", "patch"]
        ));
    }
    assert!(replay.iter().all(|(_, _, verbs)| {
        verbs
            .iter()
            .all(|v| ["get", "list", "create", "patch"].contains(&v.as_str()))
    }));
    let ns = grants(&role("replay-role.yaml", "ClusterRole"));
    assert_eq!(ns.len(), 1);
    assert!(has(&ns, "", "namespaces", &["get", "create"]));
}

#[test]
fn kubectl_accepts_the_rbac_examples() {
    let kubectl_bin = crate::real::kubectl_bin();
    // `kubectl create --dry-run=client` still maps kinds through API discovery,
    // so it needs a server: the crate's simulator, with the example namespaces.
    let namespaces = ["shop", "shop-replay"]
        .map(|n| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}));
    let sim = krply_sim::Simulator::start_background(krply_sim::SimConfig {
        seed: krply_sim::Seed::Objects(namespaces.to_vec()),
        ..krply_sim::SimConfig::default()
    })
    .unwrap();
    let home = tempfile::tempdir().unwrap();
    let kubeconfig = home.path().join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig, &krply_sim::KubeconfigOptions::default())
        .unwrap();

    for file in rbac_files() {
        let expected: Vec<String> = rbac_docs(&file)
            .iter()
            .map(|d| {
                format!(
                    "{}.rbac.authorization.k8s.io/{}",
                    d["kind"].as_str().unwrap().to_lowercase(),
                    d["metadata"]["name"].as_str().unwrap()
                )
            })
            .collect();
        // No OpenAPI schema from the simulator: --validate=false; the server
        // dry run still checks names and namespaces.
        for dry_run in ["--dry-run=client", "--dry-run=server"] {
            let out = Command::new(&kubectl_bin)
                .env_clear()
                .env("TZ", "UTC")
                .env("HOME", home.path())
                .env("PATH", kubectl_bin.parent().unwrap())
                .env("KUBECONFIG", &kubeconfig)
                .env("KUBECACHEDIR", home.path().join("cache"))
                .env("NO_PROXY", "127.0.0.1,localhost")
                .args(["create", dry_run, "--validate=false", "-o", "name", "-f"])
                .arg(&file)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "kubectl create {dry_run} -f {}: {}",
                file.display(),
                text(&out)
            );
            let printed: Vec<String> = stdout(&out).lines().map(String::from).collect();
            assert_eq!(printed, expected, "{dry_run} {}", file.display());
        }
    }
}
