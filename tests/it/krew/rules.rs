//! Krew's rules for a plugin manifest and its archives, written as code.
//!
//! Sources: krew's `plugin-manifest.md` and its validator
//! (`internal/index/validation/validate.go`, `cmd/validate-krew-manifest`),
//! plus krew-index review practice (a short description of about 50
//! characters). Where krply is stricter than krew, the rule says so.
//!
//! [`validate`] checks the manifest alone; [`install`] installs one platform's
//! archive into a krew-like tree (`<root>/store/<name>/<version>/...` and
//! `<root>/bin/kubectl-<name>`) and checks what krew checks on the way: the
//! archive's sha256, that `bin` and a LICENSE come out of it.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

pub const API_VERSION: &str = "krew.googlecontainertools.github.com/v1alpha2";
/// krew-index reviewers ask for about 50 characters; more than this is refused.
pub const SHORT_DESCRIPTION_MAX: usize = 60;
/// The os/arch pairs krew can install to (GOOS/GOARCH values).
pub const OSES: &[&str] = &["linux", "darwin", "windows"];
pub const ARCHES: &[&str] = &["amd64", "arm64", "386", "arm", "ppc64le", "s390x"];
const WINDOWS_RESERVED: &[&str] = &[
    "con", "prn", "aux", "nul", "com1", "com2", "com3", "com4", "com5", "com6", "com7", "com8",
    "com9", "lpt1", "lpt2", "lpt3", "lpt4", "lpt5", "lpt6", "lpt7", "lpt8", "lpt9",
];

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Plugin {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub metadata: Metadata,
    #[serde(default)]
    pub spec: Spec,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Metadata {
    #[serde(default)]
    pub name: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Spec {
    #[serde(default)]
    pub version: String,
    pub homepage: Option<String>,
    #[serde(default)]
    pub short_description: String,
    #[serde(default)]
    pub description: String,
    pub caveats: Option<String>,
    #[serde(default)]
    pub platforms: Vec<Platform>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Platform {
    pub selector: Option<Selector>,
    #[serde(default)]
    pub uri: String,
    #[serde(default)]
    pub sha256: String,
    #[serde(default)]
    pub bin: String,
    pub files: Option<Vec<FileOp>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Selector {
    pub match_labels: Option<BTreeMap<String, String>>,
    pub match_expressions: Option<Vec<Requirement>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Requirement {
    pub key: String,
    pub operator: String,
    #[serde(default)]
    pub values: Vec<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileOp {
    #[serde(default)]
    pub from: String,
    #[serde(default)]
    pub to: String,
}

/// Parses a manifest; unknown fields are errors, as in krew's strict decoding.
pub fn parse(text: &str) -> Result<Plugin, String> {
    serde_saphyr::from_str(text).map_err(|e| format!("manifest does not parse: {e}"))
}

impl Selector {
    /// Whether this selector picks the platform with these labels. An operator
    /// krew does not know never matches (and [`validate`] reports it).
    pub fn matches(&self, os: &str, arch: &str) -> bool {
        let label = |key: &str| match key {
            "os" => Some(os),
            "arch" => Some(arch),
            _ => None,
        };
        let labels_ok = self
            .match_labels
            .iter()
            .flatten()
            .all(|(k, v)| label(k) == Some(v.as_str()));
        let expressions_ok = self.match_expressions.iter().flatten().all(|r| {
            let value = label(&r.key);
            match r.operator.as_str() {
                "In" => value.is_some_and(|v| r.values.iter().any(|x| x == v)),
                "NotIn" => value.is_none_or(|v| r.values.iter().all(|x| x != v)),
                "Exists" => value.is_some(),
                "DoesNotExist" => value.is_none(),
                _ => false,
            }
        });
        labels_ok && expressions_ok
    }

    fn is_empty(&self) -> bool {
        self.match_labels.as_ref().is_none_or(|m| m.is_empty())
            && self.match_expressions.as_ref().is_none_or(|e| e.is_empty())
    }
}

/// `vMAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]`, numbers without leading zeros.
pub fn is_semver_with_v(version: &str) -> bool {
    let Some(rest) = version.strip_prefix('v') else {
        return false;
    };
    let (rest, build) = match rest.split_once('+') {
        Some((r, b)) => (r, Some(b)),
        None => (rest, None),
    };
    let (core, pre) = match rest.split_once('-') {
        Some((c, p)) => (c, Some(p)),
        None => (rest, None),
    };
    let numeric = |s: &str| {
        !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && (s == "0" || !s.starts_with('0'))
    };
    let idents = |s: &str| {
        s.split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
    };
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3
        && parts.iter().all(|p| numeric(p))
        && pre.is_none_or(idents)
        && build.is_none_or(idents)
}

fn is_sha256(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// A relative path that stays inside the install directory.
fn is_contained(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && !path.starts_with('\\')
        && !path.contains(':')
        && !path.split(['/', '\\']).any(|c| c == "..")
}

/// Every rule violation of a manifest stored as `file_name` (krew-index keeps
/// a plugin at `plugins/<name>.yaml`). Empty means valid.
pub fn validate(plugin: &Plugin, file_name: &str) -> Vec<String> {
    let mut errors = Vec::new();
    let mut fail = |e: String| errors.push(e);

    if plugin.api_version != API_VERSION {
        fail(format!(
            "apiVersion is {:?}, want {API_VERSION:?}",
            plugin.api_version
        ));
    }
    if plugin.kind != "Plugin" {
        fail(format!("kind is {:?}, want \"Plugin\"", plugin.kind));
    }
    let name = plugin.metadata.name.as_str();
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        fail(format!("metadata.name {name:?} must match ^[\\w-]+$"));
    }
    if WINDOWS_RESERVED.contains(&name.to_ascii_lowercase().as_str()) {
        fail(format!(
            "metadata.name {name:?} is a reserved name on Windows"
        ));
    }
    let stem = file_name.strip_suffix(".yaml").unwrap_or(file_name);
    if name != stem {
        fail(format!(
            "metadata.name {name:?} does not match the file name {file_name:?} (want {name}.yaml)"
        ));
    }

    let spec = &plugin.spec;
    if !is_semver_with_v(&spec.version) {
        fail(format!(
            "spec.version {:?} is not semver with a leading v (like v0.1.0)",
            spec.version
        ));
    }
    let short = spec.short_description.trim();
    if short.is_empty() {
        fail("spec.shortDescription is empty".into());
    }
    if short.contains('\n') || short.contains('\r') {
        fail("spec.shortDescription must be a single line".into());
    }
    if short.chars().count() > SHORT_DESCRIPTION_MAX {
        fail(format!(
            "spec.shortDescription has {} characters; keep it to about 50 (at most {SHORT_DESCRIPTION_MAX})",
            short.chars().count()
        ));
    }
    if spec.description.trim().is_empty() {
        fail("spec.description is empty".into());
    }
    match &spec.homepage {
        Some(h) if h.starts_with("https://") || h.starts_with("http://") => {}
        Some(h) => fail(format!("spec.homepage {h:?} is not an http(s) URL")),
        // krew allows none; krply always has one.
        None => fail("spec.homepage is missing".into()),
    }

    if spec.platforms.is_empty() {
        fail("spec.platforms is empty".into());
    }
    for (i, p) in spec.platforms.iter().enumerate() {
        let at = format!("spec.platforms[{i}]");
        let os = match &p.selector {
            None => {
                fail(format!("{at}.selector is missing"));
                None
            }
            Some(s) if s.is_empty() => {
                fail(format!("{at}.selector is empty"));
                None
            }
            Some(s) => {
                for r in s.match_expressions.iter().flatten() {
                    if !matches!(
                        r.operator.as_str(),
                        "In" | "NotIn" | "Exists" | "DoesNotExist"
                    ) {
                        fail(format!(
                            "{at}.selector has unknown operator {:?}",
                            r.operator
                        ));
                    }
                }
                let oses: Vec<&str> = OSES
                    .iter()
                    .copied()
                    .filter(|os| ARCHES.iter().any(|arch| s.matches(os, arch)))
                    .collect();
                if oses.is_empty() {
                    fail(format!("{at}.selector matches no platform krew supports"));
                }
                // One OS per platform entry: its archive format and binary
                // name depend on it.
                if oses.len() > 1 {
                    fail(format!(
                        "{at}.selector matches several operating systems ({}); krply wants one per entry",
                        oses.join(", ")
                    ));
                }
                oses.first().copied()
            }
        };
        if p.uri.is_empty() {
            fail(format!("{at}.uri is missing"));
        } else if !p.uri.starts_with("https://") {
            fail(format!("{at}.uri {:?} is not an https URL", p.uri));
        } else if !(p.uri.ends_with(".tar.gz") || p.uri.ends_with(".zip")) {
            fail(format!("{at}.uri {:?} is neither .tar.gz nor .zip", p.uri));
        } else if let Some(os) = os {
            // krew takes either format anywhere; krply ships .zip for Windows
            // and .tar.gz elsewhere.
            let want = if os == "windows" { ".zip" } else { ".tar.gz" };
            if !p.uri.ends_with(want) {
                fail(format!(
                    "{at}.uri {:?} should end in {want} for {os}",
                    p.uri
                ));
            }
        }
        if !spec.version.is_empty() && !p.uri.contains(&format!("/{}/", spec.version)) {
            // krply's rule: the release URL names the version it installs.
            fail(format!(
                "{at}.uri {:?} does not name version {}",
                p.uri, spec.version
            ));
        }
        if p.sha256.is_empty() {
            fail(format!("{at}.sha256 is missing"));
        } else if !is_sha256(&p.sha256) {
            fail(format!(
                "{at}.sha256 {:?} is not 64 lowercase hex digits",
                p.sha256
            ));
        }
        if p.bin.is_empty() {
            fail(format!("{at}.bin is missing"));
        } else if !is_contained(&p.bin) {
            fail(format!(
                "{at}.bin {:?} must be a relative path inside the plugin",
                p.bin
            ));
        } else if os == Some("windows") && !p.bin.ends_with(".exe") {
            fail(format!("{at}.bin {:?} must end in .exe on Windows", p.bin));
        }
        for (j, f) in p.files.iter().flatten().enumerate() {
            if !is_contained(&f.from) {
                fail(format!(
                    "{at}.files[{j}].from {:?} must be a relative path",
                    f.from
                ));
            }
            if !is_contained(&f.to) {
                fail(format!(
                    "{at}.files[{j}].to {:?} must be a relative path",
                    f.to
                ));
            }
        }
    }

    // No two platforms may select the same os/arch.
    for os in OSES {
        for arch in ARCHES {
            let hits: Vec<usize> = spec
                .platforms
                .iter()
                .enumerate()
                .filter(|(_, p)| p.selector.as_ref().is_some_and(|s| s.matches(os, arch)))
                .map(|(i, _)| i)
                .collect();
            if hits.len() > 1 {
                errors.push(format!(
                    "selectors overlap: platforms {hits:?} all match os={os} arch={arch}"
                ));
            }
        }
    }
    errors
}

/// The platform entry krew would install on `os`/`arch`.
pub fn select<'a>(plugin: &'a Plugin, os: &str, arch: &str) -> Option<&'a Platform> {
    plugin
        .spec
        .platforms
        .iter()
        .find(|p| p.selector.as_ref().is_some_and(|s| s.matches(os, arch)))
}

/// krew's os/arch for the machine running the tests.
pub fn host_platform() -> (&'static str, &'static str) {
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        other => other,
    };
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "powerpc64" => "ppc64le",
        other => other,
    };
    (os, arch)
}

pub fn sha256_hex(path: &Path) -> Result<String, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let digest = ring::digest::digest(&ring::digest::SHA256, &bytes);
    Ok(digest.as_ref().iter().map(|b| format!("{b:02x}")).collect())
}

/// Where [`install`] put a plugin.
#[derive(Debug)]
pub struct Installed {
    /// `<root>/store/<name>/<version>`
    pub dir: PathBuf,
    /// `<root>/bin/kubectl-<name>`: what kubectl finds on PATH.
    pub link: PathBuf,
}

/// Installs `archive` as krew installs `platform` of `plugin` under `root`,
/// and reports every reason krew would refuse it.
pub fn install(
    plugin: &Plugin,
    platform: &Platform,
    archive: &Path,
    root: &Path,
) -> Result<Installed, Vec<String>> {
    let mut errors = Vec::new();
    let file_name = archive
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if platform.uri.rsplit('/').next() != Some(file_name.as_str()) {
        errors.push(format!(
            "archive {file_name:?} is not the file the uri names ({})",
            platform.uri
        ));
    }
    match sha256_hex(archive) {
        Ok(sum) if sum == platform.sha256 => {}
        Ok(sum) => errors.push(format!(
            "sha256 of {file_name} is {sum}, the manifest says {}",
            platform.sha256
        )),
        Err(e) => errors.push(e),
    }
    if !errors.is_empty() {
        return Err(errors);
    }

    let name = &plugin.metadata.name;
    let staging = root.join("download").join(name);
    let dir = root.join("store").join(name).join(&plugin.spec.version);
    for d in [&staging, &dir] {
        if let Err(e) = std::fs::create_dir_all(d) {
            return Err(vec![format!("cannot create {}: {e}", d.display())]);
        }
    }
    extract(archive, &staging).map_err(|e| vec![e])?;
    match &platform.files {
        None => move_entry(&staging, &dir).map_err(|e| vec![e])?,
        Some(ops) => {
            for op in ops {
                let found = glob(&staging, &op.from);
                if found.is_empty() {
                    errors.push(format!(
                        "files: {:?} matches nothing in the archive",
                        op.from
                    ));
                }
                let to = dir.join(&op.to);
                for entry in found {
                    let target = to.join(entry.file_name().unwrap_or_default());
                    if let Err(e) = std::fs::create_dir_all(&to)
                        .map_err(|e| e.to_string())
                        .and_then(|_| std::fs::rename(&entry, &target).map_err(|e| e.to_string()))
                    {
                        errors.push(format!("cannot install {}: {e}", entry.display()));
                    }
                }
            }
        }
    }

    let bin = dir.join(&platform.bin);
    if !bin.is_file() {
        errors.push(format!(
            "bin {:?} is not in the archive (or not extracted by files)",
            platform.bin
        ));
    } else if !is_executable(&bin) {
        errors.push(format!("bin {:?} is not executable", platform.bin));
    }
    let has_license = std::fs::read_dir(&dir)
        .map(|entries| {
            entries.flatten().any(|e| {
                e.path().is_file()
                    && e.file_name()
                        .to_string_lossy()
                        .to_ascii_lowercase()
                        .starts_with("license")
            })
        })
        .unwrap_or(false);
    if !has_license {
        // krew's validator words it this way.
        errors.push(
            "LICENSE (or alike) file is not extracted from the archive as part of installation"
                .into(),
        );
    }
    if !errors.is_empty() {
        return Err(errors);
    }

    let bin_dir = root.join("bin");
    let exe = if platform.bin.ends_with(".exe") {
        ".exe"
    } else {
        ""
    };
    let link = bin_dir.join(format!("kubectl-{}{exe}", name.replace('-', "_")));
    let linked = std::fs::create_dir_all(&bin_dir).and_then(|_| {
        let _ = std::fs::remove_file(&link);
        link_or_copy(&bin, &link)
    });
    if let Err(e) = linked {
        return Err(vec![format!("cannot link {}: {e}", link.display())]);
    }
    Ok(Installed { dir, link })
}

#[cfg(unix)]
fn link_or_copy(target: &Path, link: &Path) -> std::io::Result<()> {
    // krew symlinks on Unix.
    std::os::unix::fs::symlink(target, link)
}

#[cfg(not(unix))]
fn link_or_copy(target: &Path, link: &Path) -> std::io::Result<()> {
    // krew copies on Windows.
    std::fs::copy(target, link).map(|_| ())
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(_path: &Path) -> bool {
    true
}

/// Which tool can read a .zip here, if any: `unzip`, else Python's zipfile.
pub fn zip_reader() -> Option<&'static str> {
    ["unzip", "python3"].into_iter().find(|t| on_path(t))
}

pub fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(tool).is_file()))
}

/// Unpacks with the system's tools, checking the format by its magic bytes.
fn extract(archive: &Path, into: &Path) -> Result<(), String> {
    let head = std::fs::read(archive)
        .map(|b| b.into_iter().take(4).collect::<Vec<u8>>())
        .map_err(|e| format!("cannot read {}: {e}", archive.display()))?;
    let name = archive.to_string_lossy();
    let mut cmd = if name.ends_with(".tar.gz") {
        if !head.starts_with(&[0x1f, 0x8b]) {
            return Err(format!("{name} is not gzip data"));
        }
        let mut c = Command::new("tar");
        c.arg("-xzf").arg(archive).arg("-C").arg(into);
        c
    } else if name.ends_with(".zip") {
        if !head.starts_with(b"PK\x03\x04") {
            return Err(format!("{name} is not a zip archive"));
        }
        match zip_reader() {
            Some("unzip") => {
                let mut c = Command::new("unzip");
                c.arg("-q").arg(archive).arg("-d").arg(into);
                c
            }
            Some(_) => {
                let mut c = Command::new("python3");
                c.args(["-m", "zipfile", "-e"]).arg(archive).arg(into);
                c
            }
            None => return Err("no unzip or python3 to read a .zip".into()),
        }
    } else {
        return Err(format!("{name}: unknown archive format"));
    };
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(())
}

/// Moves everything in `from` into `to`.
fn move_entry(from: &Path, to: &Path) -> Result<(), String> {
    let entries = std::fs::read_dir(from).map_err(|e| format!("{}: {e}", from.display()))?;
    for entry in entries.flatten() {
        let target = to.join(entry.file_name());
        std::fs::rename(entry.path(), &target)
            .map_err(|e| format!("cannot move {}: {e}", entry.path().display()))?;
    }
    Ok(())
}

/// Paths under `root` matching `pattern`, `*` and `?` matching within one path
/// component, as krew's `files.from` globs do.
fn glob(root: &Path, pattern: &str) -> Vec<PathBuf> {
    let mut found = vec![root.to_path_buf()];
    for part in pattern.split('/').filter(|p| !p.is_empty() && *p != ".") {
        found = found
            .into_iter()
            .flat_map(|dir| {
                std::fs::read_dir(&dir)
                    .map(|entries| {
                        entries
                            .flatten()
                            .filter(|e| wildcard(part, &e.file_name().to_string_lossy()))
                            .map(|e| e.path())
                            .collect::<Vec<_>>()
                    })
                    .unwrap_or_default()
            })
            .collect();
    }
    found.retain(|p| p != root);
    found
}

fn wildcard(pattern: &str, text: &str) -> bool {
    fn go(p: &[char], t: &[char]) -> bool {
        match p.split_first() {
            None => t.is_empty(),
            Some(('*', rest)) => (0..=t.len()).any(|i| go(rest, &t[i..])),
            Some(('?', rest)) => !t.is_empty() && go(rest, &t[1..]),
            Some((c, rest)) => t.first() == Some(c) && go(rest, &t[1..]),
        }
    }
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    go(&p, &t)
}
