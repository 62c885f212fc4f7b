//! The flags every subcommand takes: kubectl's connection set and krply's own.

use crate::cluster::ConnectOptions;
use crate::error::{CliError, CliResult};
use crate::render::{ColorChoice, Format, Paint};
use clap::{ArgAction, Args};
use std::path::PathBuf;
use std::time::Duration;

/// kubectl's connection flags, under one heading in `--help`.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Cluster connection")]
pub struct ConnectionArgs {
    /// Path to the kubeconfig file to use (only this file; default: $KUBECONFIG, else ~/.kube/config)
    #[arg(long, global = true, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use
    #[arg(long, global = true, value_name = "NAME")]
    pub context: Option<String>,
    /// The kubeconfig cluster to use
    #[arg(long, global = true, value_name = "NAME")]
    pub cluster: Option<String>,
    /// The kubeconfig user to use
    #[arg(long, global = true, value_name = "NAME")]
    pub user: Option<String>,
    /// The address and port of the Kubernetes API server
    #[arg(short = 's', long, global = true, value_name = "URL")]
    pub server: Option<String>,
    /// Bearer token for authentication to the API server
    #[arg(long, global = true, value_name = "TOKEN")]
    pub token: Option<String>,
    /// Path to a cert file for the certificate authority
    #[arg(long, global = true, value_name = "PATH")]
    pub certificate_authority: Option<PathBuf>,
    /// Do not verify the server's certificate (insecure)
    #[arg(long, global = true)]
    pub insecure_skip_tls_verify: bool,
    /// Username to impersonate for the operation
    #[arg(long = "as", global = true, value_name = "USER")]
    pub as_user: Option<String>,
    /// Group to impersonate for the operation (repeatable)
    #[arg(long = "as-group", global = true, value_name = "GROUP")]
    pub as_group: Vec<String>,
    /// How long to wait for a single request (e.g. 30s, 1m; watches are exempt); 0 waits
    /// forever
    #[arg(long, global = true, value_name = "DURATION", default_value = "30s")]
    pub request_timeout: RequestTimeout,
}

#[derive(Debug, Clone, Args)]
#[command(next_display_order = 100)]
pub struct GlobalArgs {
    /// The namespace (default: the context's namespace, else "default")
    #[arg(short = 'n', long, global = true, value_name = "NS")]
    pub namespace: Option<String>,
    /// Every namespace
    #[arg(short = 'A', long, global = true)]
    pub all_namespaces: bool,
    /// The journal file (default: $XDG_DATA_HOME/krply/journal.db)
    #[arg(long, global = true, env = "KRPLY_STORE", value_name = "PATH")]
    pub store: Option<PathBuf>,
    /// Which recorded cluster to read (IDs are shown by `status`)
    #[arg(long, global = true, value_name = "ID")]
    pub cluster_id: Option<String>,
    /// Output format: table, text, json, yaml (and unified where supported)
    #[arg(short = 'o', long, global = true, value_name = "FORMAT")]
    pub output: Option<String>,
    /// When to use colour
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    pub color: ColorChoice,
    /// More detail on stderr (repeatable)
    #[arg(short = 'v', long, global = true, action = ArgAction::Count)]
    pub verbose: u8,
    /// Only warnings and errors on stderr
    #[arg(short = 'q', long, global = true)]
    pub quiet: bool,
    /// Show times in UTC instead of the local time zone (JSON and YAML are
    /// always UTC)
    #[arg(long, global = true)]
    pub utc: bool,
    /// Last: the heading it sets would hold every flag after it.
    #[command(flatten)]
    pub connection: ConnectionArgs,
}

impl GlobalArgs {
    pub fn connect_options(&self) -> CliResult<ConnectOptions> {
        Ok(ConnectOptions {
            kubeconfig: self.connection.kubeconfig.clone(),
            context: self.connection.context.clone(),
            cluster: self.connection.cluster.clone(),
            user: self.connection.user.clone(),
            server: self.connection.server.clone(),
            token: self.connection.token.clone(),
            certificate_authority: self.connection.certificate_authority.clone(),
            insecure_skip_tls_verify: self.connection.insecure_skip_tls_verify,
            impersonate: self.connection.as_user.clone(),
            impersonate_groups: self.connection.as_group.clone(),
            request_timeout: self.connection.request_timeout.0,
        })
    }

    /// The journal path: `--store`, `KRPLY_STORE`, else the XDG data dir.
    pub fn store_path(&self) -> CliResult<PathBuf> {
        match &self.store {
            Some(p) if p.as_os_str().is_empty() => {
                Err(CliError::usage("--store must not be empty"))
            }
            Some(p) => Ok(p.clone()),
            None => crate::journal::default_path().ok_or_else(|| {
                CliError::runtime("cannot find a home directory for the journal")
                    .hint("pass --store PATH or set KRPLY_STORE")
            }),
        }
    }

    pub fn format(&self, default: Format, allowed: &[Format]) -> CliResult<Format> {
        Format::choose(self.output.as_deref(), default, allowed).map_err(CliError::usage)
    }

    pub fn paint(&self) -> Paint {
        Paint {
            enabled: crate::render::use_color(self.color),
        }
    }
}

/// A time flag (`--since`, `--until`, `--at`, `--before`), checked when
/// clap reads it and resolved against the clock when the command runs:
/// `now`, a duration ago, a local time of day or an RFC 3339 time
/// (see [`crate::time::parse_time_expr`]), or the name of a snapshot saved with
/// `snapshot --save`, which means the time that snapshot is of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeArg(String);

impl std::str::FromStr for TimeArg {
    type Err = crate::time::TimeError;

    fn from_str(s: &str) -> Result<TimeArg, crate::time::TimeError> {
        match crate::time::parse_time_expr(s, crate::time::Millis::now()) {
            // Not a time: perhaps a saved snapshot's name, known only to the journal.
            Err(crate::time::TimeError::InvalidTime { .. }) if is_snapshot_name(s) => {}
            Err(e) => return Err(e),
            Ok(_) => {}
        }
        Ok(TimeArg(s.to_string()))
    }
}

/// Whether `s` can name a saved snapshot: 1 to 253 characters, not blank, and
/// not a time (which it would be read as).
pub fn is_snapshot_name(s: &str) -> bool {
    !s.trim().is_empty()
        && s.len() <= 253
        && crate::time::parse_time_expr(s, crate::time::Millis::now()).is_err()
}

impl TimeArg {
    /// The time this flag means at `now`. A time of day that means yesterday's
    /// says so in a `note:` on stderr. A name that is not a time is looked up
    /// among the snapshots saved in `journal` (of `cluster`, when given): it
    /// means the time that snapshot is of, and a `note:` names it.
    pub fn at(
        &self,
        now: crate::time::Millis,
        journal: &crate::journal::Journal,
        cluster: Option<&str>,
    ) -> CliResult<crate::time::Millis> {
        let err = match crate::time::parse_time_expr(&self.0, now) {
            Ok(at) => {
                if let Some(note) =
                    crate::time::yesterday_note(&self.0, now, &crate::time::local_zone())
                {
                    super::sink::note(&note);
                }
                return Ok(at);
            }
            Err(e) => e,
        };
        let saved = journal.snapshots(cluster)?;
        let found = saved_time(&self.0, &saved).map_err(|hint| CliError::from(err).hint(hint))?;
        super::sink::note(&format!(
            "{:?} is the saved snapshot of {}",
            self.0,
            crate::time::Millis::from_ms(found)
        ));
        Ok(crate::time::Millis::from_ms(found))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The time the snapshot saved as `name` is of; else a hint that says what is saved.
fn saved_time(
    name: &str,
    saved: &[crate::journal::snapshots::SavedSnapshot],
) -> Result<i64, String> {
    let mut matching = saved.iter().filter(|s| s.name == name);
    match (matching.next(), matching.next()) {
        (Some(one), None) => Ok(one.at),
        (Some(_), Some(_)) => Err(format!(
            "snapshots of several clusters are saved as {name:?}: choose one with --context"
        )),
        (None, _) if saved.is_empty() => Err(
            "nor is it a saved snapshot: none is saved (`snapshot --save NAME` saves one)".into(),
        ),
        (None, _) => {
            let names = saved.iter().map(|s| s.name.as_str());
            Err(
                match crate::history::suggest::closest(name, names.clone()) {
                    Some(close) => format!("nor is it a saved snapshot; did you mean {close:?}?"),
                    None => format!(
                        "nor is it a saved snapshot (`snapshot --list` lists them): {}",
                        names.collect::<Vec<_>>().join(", ")
                    ),
                },
            )
        }
    }
}

/// A duration that must be positive (`record --for`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PositiveDuration(pub Duration);

impl std::str::FromStr for PositiveDuration {
    type Err = crate::time::TimeError;

    fn from_str(s: &str) -> Result<PositiveDuration, crate::time::TimeError> {
        crate::time::parse_positive_duration(s).map(PositiveDuration)
    }
}

/// A size in bytes, as `2GiB`, `2Gi` (binary, as Kubernetes quantities
/// are written), `500MB`, `500M` (decimal) or a number of bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteSize(pub u64);

/// Why a size is refused.
#[derive(Debug, thiserror::Error)]
#[error("invalid size {0:?}: expected a number and a unit, like 2GiB, 500MB or 1Gi")]
pub struct SizeError(String);

impl std::str::FromStr for ByteSize {
    type Err = SizeError;

    fn from_str(s: &str) -> Result<ByteSize, SizeError> {
        let bad = || SizeError(s.to_string());
        let t = s.trim();
        let split = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(t.len());
        let (number, unit) = t.split_at(split);
        let number: f64 = number.parse().map_err(|_| bad())?;
        let unit = unit.trim();
        let scale: u64 = match unit.trim_end_matches(['B', 'b']) {
            "" => 1,
            "k" | "K" => 1_000,
            "M" => 1_000_000,
            "G" => 1_000_000_000,
            "T" => 1_000_000_000_000,
            "Ki" => 1 << 10,
            "Mi" => 1 << 20,
            "Gi" => 1 << 30,
            "Ti" => 1 << 40,
            _ => return Err(bad()),
        };
        // `2b`, `2iB`: a unit that only looked like one.
        if unit.len() > 1 && unit.ends_with('b') {
            return Err(bad());
        }
        let bytes = number * scale as f64;
        if !bytes.is_finite() || bytes < 1.0 || bytes > u64::MAX as f64 {
            return Err(bad());
        }
        Ok(ByteSize(bytes as u64))
    }
}

/// A label selector (`-l`), parsed as the API server parses it.
#[derive(Debug, Clone, PartialEq)]
pub struct SelectorArg {
    /// As given (what the recorder sends and the journal keeps).
    pub text: String,
    pub parsed: crate::selector::LabelSelector,
}

/// Why a label selector is refused (the parser's own words).
#[derive(Debug, thiserror::Error)]
#[error("invalid label selector: {0}")]
pub struct SelectorArgError(String);

impl std::str::FromStr for SelectorArg {
    type Err = SelectorArgError;

    fn from_str(s: &str) -> Result<SelectorArg, SelectorArgError> {
        let parsed = crate::selector::LabelSelector::parse(s).map_err(SelectorArgError)?;
        Ok(SelectorArg {
            text: s.to_string(),
            parsed,
        })
    }
}

/// kubectl's `--request-timeout`, read when clap reads it: `0` (none), a
/// duration (`30s`, `1m`) or a bare number of seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestTimeout(pub Option<Duration>);

impl std::str::FromStr for RequestTimeout {
    type Err = crate::time::TimeError;

    /// `0` (none), a duration (`30s`, `1m`) or a bare number of seconds.
    fn from_str(s: &str) -> Result<RequestTimeout, crate::time::TimeError> {
        let s = s.trim();
        if s == "0" || s.is_empty() {
            return Ok(RequestTimeout(None));
        }
        if let Ok(n) = s.parse::<u64>() {
            return Ok(RequestTimeout(Some(Duration::from_secs(n))));
        }
        crate::time::parse_duration(s).map(|d| RequestTimeout(Some(d)))
    }
}

#[cfg(test)]
mod typed_tests {
    use super::*;

    #[test]
    fn sizes_read_as_kubectl_users_write_them() {
        let size = |s: &str| s.parse::<ByteSize>().map(|b| b.0).ok();
        assert_eq!(size("2GiB"), Some(2 << 30));
        assert_eq!(size("2Gi"), Some(2 << 30));
        assert_eq!(size("500MB"), Some(500_000_000));
        assert_eq!(size("500M"), Some(500_000_000));
        assert_eq!(size("1.5Gi"), Some(3 << 29));
        assert_eq!(size("4096"), Some(4096));
        assert_eq!(size("64kb"), None);
        for bad in ["", "GiB", "2XB", "-1GiB", "0", "2 GiB x", "1e30GiB"] {
            assert_eq!(size(bad), None, "{bad}");
        }
    }

    #[test]
    fn flags_are_checked_when_read_and_resolved_later() {
        let t: TimeArg = "30m".parse().unwrap();
        let now = crate::time::Millis::from_ms(10_000_000);
        let dir = tempfile::tempdir().unwrap();
        let journal = crate::journal::Journal::open_or_create(&dir.path().join("j.db")).unwrap();
        journal.register_cluster("c1", "https://c1", None).unwrap();
        assert_eq!(
            t.at(now, &journal, None).unwrap(),
            crate::time::Millis::from_ms(10_000_000 - 1_800_000)
        );
        // A name that is not a time may be a saved snapshot's: the journal decides.
        let name: TimeArg = "before-incident".parse().unwrap();
        let err = name.at(now, &journal, None).unwrap_err();
        assert!(format!("{err:?}").contains("none is saved"), "{err:?}");
        journal
            .save_snapshot("c1", "before-incident", 9_000_000, 9_500_000, "{}")
            .unwrap();
        assert_eq!(
            name.at(now, &journal, None).unwrap(),
            crate::time::Millis::from_ms(9_000_000)
        );
        let typo: TimeArg = "before-incidnet".parse().unwrap();
        let err = typo.at(now, &journal, None).unwrap_err();
        assert!(
            format!("{err:?}").contains(r#"did you mean \"before-incident\"?"#),
            "{err:?}"
        );
        // What is malformed as a time and cannot be a name is refused when read.
        assert!(" ".parse::<TimeArg>().is_err());
        assert!("2030-01-01T00:00:00Z".parse::<TimeArg>().is_err());
        assert!(!is_snapshot_name("30m") && !is_snapshot_name("now"));
        assert!("0s".parse::<PositiveDuration>().is_err());
        assert_eq!(
            "90s".parse::<PositiveDuration>().unwrap().0,
            Duration::from_secs(90)
        );
        let sel: SelectorArg = "app=web,tier!=cache".parse().unwrap();
        assert_eq!(sel.text, "app=web,tier!=cache");
        assert!("app in prod".parse::<SelectorArg>().is_err());
        assert_eq!(
            "1m".parse::<RequestTimeout>().unwrap().0,
            Some(Duration::from_secs(60))
        );
        assert_eq!("0".parse::<RequestTimeout>().unwrap().0, None);
    }
}
