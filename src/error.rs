//! The errors a user sees: one `error:` line, optional `hint:` lines, and the exit
//! code that goes with the kind of failure (docs/output.md: 1 runtime, 2 usage,
//! 3 incomplete history under `--strict`).

use crate::cluster::ClusterError;
use crate::journal::JournalError;
use std::fmt;
use std::process::ExitCode;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// A bad flag, time, name or file argument: exit 2.
    Usage,
    /// The cluster, the journal or the request failed: exit 1.
    Runtime,
    /// `--strict` and the answer is incomplete: exit 3.
    Incomplete,
    /// Whoever read the output went away (`| head`): stop quietly, exit 0,
    /// as Unix tools do.
    Closed,
}

/// What went wrong, for the user: one line, hints, the exit code of its kind,
/// and the library error it came from (kept for `--verbose` and for tests;
/// its text is already in `message`).
#[derive(Debug, Clone)]
pub struct CliError {
    pub kind: ErrorKind,
    pub message: String,
    pub hints: Vec<String>,
    pub source: Option<std::sync::Arc<dyn std::error::Error + Send + Sync>>,
}

impl CliError {
    pub fn usage(message: impl Into<String>) -> CliError {
        CliError {
            kind: ErrorKind::Usage,
            message: message.into(),
            hints: Vec::new(),
            source: None,
        }
    }

    pub fn runtime(message: impl Into<String>) -> CliError {
        CliError {
            kind: ErrorKind::Runtime,
            message: message.into(),
            hints: Vec::new(),
            source: None,
        }
    }

    pub fn incomplete(message: impl Into<String>) -> CliError {
        CliError {
            kind: ErrorKind::Incomplete,
            message: message.into(),
            hints: Vec::new(),
            source: None,
        }
    }

    /// The output's reader is gone: ends the command quietly with exit 0.
    pub fn closed() -> CliError {
        CliError {
            kind: ErrorKind::Closed,
            message: String::new(),
            hints: Vec::new(),
            source: None,
        }
    }

    pub fn hint(mut self, hint: impl Into<String>) -> CliError {
        self.hints.push(hint.into());
        self
    }

    /// Keeps `source` as the cause of this error.
    pub fn caused_by(mut self, source: impl std::error::Error + Send + Sync + 'static) -> CliError {
        self.source = Some(std::sync::Arc::new(source));
        self
    }

    /// The causes below this error, outermost first (for `--verbose`).
    pub fn causes(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut next: Option<&(dyn std::error::Error + 'static)> = self
            .source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static));
        while let Some(e) = next {
            out.push(e.to_string());
            next = e.source();
        }
        out
    }

    pub fn exit_code(&self) -> ExitCode {
        ExitCode::from(match self.kind {
            ErrorKind::Closed => 0,
            ErrorKind::Runtime => 1,
            ErrorKind::Usage => 2,
            ErrorKind::Incomplete => 3,
        })
    }

    /// Writes the error as the user sees it; with `verbose`, also each
    /// cause whose text the message does not already carry.
    pub fn print(&self, verbose: bool) {
        if self.kind == ErrorKind::Closed {
            return;
        }
        eprintln!("error: {}", self.message);
        if verbose {
            for cause in self.causes() {
                if !self.message.contains(&cause) {
                    eprintln!("caused by: {cause}");
                }
            }
        }
        for h in &self.hints {
            eprintln!("hint: {h}");
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CliError {}

impl From<JournalError> for CliError {
    fn from(e: JournalError) -> CliError {
        let hint = match &e {
            JournalError::Missing(_) => Some(
                "run `kubectl krply record` to start a journal, or point --store (KRPLY_STORE) at an existing one",
            ),
            JournalError::Foreign { .. } => {
                Some("pass --store with the path of a krply journal, or move the file away")
            }
            JournalError::Corrupt { .. } => Some(
                "the file is left untouched; record into a new journal with --store, and keep this one for inspection",
            ),
            JournalError::TooNew { .. } => Some("upgrade kubectl-krply to read this journal"),
            JournalError::Locked { .. } => {
                Some("wait for it to finish, or stop it first; readers need no lock")
            }
            JournalError::StreamLocked { .. } => Some(
                "that recorder already records the stream; record other namespaces or clusters beside it, or stop it first",
            ),
            JournalError::Io { source, .. }
                if matches!(
                    source.kind(),
                    std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem
                ) =>
            {
                Some(
                    "krply keeps lock files beside the journal, so its directory must be writable: point --store (KRPLY_STORE) at a journal in a directory you can write",
                )
            }
            _ => None,
        };
        with_hint(CliError::runtime(e.to_string()), hint).caused_by(e)
    }
}

/// `err` with `hint`, if there is one.
fn with_hint(err: CliError, hint: Option<&str>) -> CliError {
    match hint {
        Some(h) => err.hint(h),
        None => err,
    }
}

impl From<crate::history::HistoryError> for CliError {
    /// A history question that failed: a journal error keeps its own hint.
    fn from(e: crate::history::HistoryError) -> CliError {
        match e {
            crate::history::HistoryError::Journal(j) => j.into(),
            body @ crate::history::HistoryError::Body { .. } => {
                CliError::runtime(body.to_string())
                    .hint("the journal holds a version it cannot read; `kubectl krply export` shows the records around it")
                    .caused_by(body)
            }
        }
    }
}

impl From<crate::recorder::PlanError> for CliError {
    /// What to record cannot be planned from what the server serves.
    fn from(e: crate::recorder::PlanError) -> CliError {
        use crate::recorder::PlanError;
        let hint = match &e {
            PlanError::SecretsRefused => {
                Some("with --include-secrets, every value is stored only as a SHA-256 digest")
            }
            PlanError::Resolve(_) => Some("`kubectl api-resources` lists what the server serves"),
            PlanError::NotWatchable(_) => None,
        };
        let err = CliError::runtime(e.to_string());
        let err = match hint {
            Some(h) => err.hint(h),
            None => err,
        };
        err.caused_by(e)
    }
}

impl From<crate::time::TimeError> for CliError {
    /// A time or window that makes no sense: a usage error.
    fn from(e: crate::time::TimeError) -> CliError {
        CliError::usage(e.to_string()).caused_by(e)
    }
}

impl From<crate::history::resolve::TargetError> for CliError {
    /// A `TYPE[/NAME]` argument that names nothing recorded: a usage error,
    /// with the closest recorded name as a hint.
    fn from(e: crate::history::resolve::TargetError) -> CliError {
        let err = CliError::usage(e.to_string());
        match e.hint() {
            Some(h) => err.hint(h),
            None => err,
        }
    }
}

impl From<ClusterError> for CliError {
    fn from(e: ClusterError) -> CliError {
        if let ClusterError::CredentialPlugin { user, command, .. } = &e {
            let hint = format!(
                "run it by hand to see why: {command} (the exec of user {user} in the kubeconfig); log in again if its session expired"
            );
            return CliError::runtime(e.to_string()).hint(hint).caused_by(e);
        }
        let hint = match &e {
            ClusterError::NoConfiguration { .. } => {
                Some("set KUBECONFIG, pass --kubeconfig, or pass --server")
            }
            ClusterError::NoSuchContext(_) => {
                Some("`kubectl config get-contexts` lists the contexts")
            }
            ClusterError::Unreachable { .. } => Some(
                "check the server URL and your network; `kubectl cluster-info` shows what kubectl reaches",
            ),
            ClusterError::UntrustedCertificate { problem, .. } => Some(problem.hint()),
            ClusterError::Unauthorized { .. } => {
                Some("refresh your credentials; `kubectl auth whoami` shows who you are")
            }
            _ => None,
        };
        with_hint(CliError::runtime(e.to_string()), hint).caused_by(e)
    }
}

impl From<crate::replay::make::MakeError> for CliError {
    /// A plan not made: refusals are runtime errors with what would let it
    /// through; an error below keeps its own hint.
    fn from(e: crate::replay::make::MakeError) -> CliError {
        use crate::replay::make::MakeError as M;
        match e {
            M::Target(t) => t.into(),
            M::History(h) => h.into(),
            M::Journal(j) => j.into(),
            M::Cluster(c) => c.into(),
            M::NotAType => CliError::usage(e.to_string()),
            M::IntoItself(_) => CliError::runtime(e.to_string())
                .hint("pick another --to-namespace, or another cluster with --target-context")
                .caused_by(e),
            M::Unreachable { .. } => CliError::runtime(e.to_string())
                .hint("the dry run needs the target cluster: check it with `kubectl --context CTX get namespaces`, and pick it with --target-context")
                .caused_by(e),
            M::Incomplete { .. } => CliError::runtime(e.to_string())
                .hint("--allow-gaps plans anyway and lists every gap in the plan; `kubectl krply coverage` shows them")
                .caused_by(e),
            _ => CliError::runtime(e.to_string()).caused_by(e),
        }
    }
}

/// The result type of command functions.
pub type CliResult<T = ()> = Result<T, CliError>;

#[cfg(test)]
mod from_tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn a_journal_in_a_read_only_place_says_where_to_put_one() {
        let err: CliError = JournalError::Io {
            path: "/ro/j.db.init.lock".into(),
            source: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
        }
        .into();
        assert!(
            format!("{err:?}").contains("--store (KRPLY_STORE)"),
            "{err:?}"
        );
    }

    #[test]
    fn a_history_error_keeps_the_journal_hint_and_its_cause() {
        let journal = JournalError::Corrupt {
            path: PathBuf::from("/j.db"),
            detail: "bad page".into(),
        };
        let err: CliError = crate::history::HistoryError::Journal(journal).into();
        assert_eq!(err.kind, ErrorKind::Runtime);
        assert_eq!(err.message, "journal /j.db is damaged: bad page");
        assert!(
            err.hints[0].starts_with("the file is left untouched"),
            "{err:?}"
        );
        assert_eq!(err.causes(), ["journal /j.db is damaged: bad page"]);
    }

    #[test]
    fn a_closed_output_is_quiet_and_exits_0() {
        let err = CliError::closed();
        assert_eq!(err.exit_code(), ExitCode::SUCCESS);
        assert_eq!(err.kind, ErrorKind::Closed);
    }

    #[test]
    fn a_time_error_is_a_usage_error() {
        let err: CliError = crate::time::TimeError::InvalidTime { input: "x".into() }.into();
        assert_eq!(err.kind, ErrorKind::Usage);
    }
}
