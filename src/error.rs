//! The errors a user sees: one `error:` line, optional `hint:` lines, and the exit
//! code that goes with the kind of failure (CONTRACT: 1 runtime, 2 usage,
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
}

#[derive(Debug, Clone)]
pub struct CliError {
    pub kind: ErrorKind,
    pub message: String,
    pub hints: Vec<String>,
}

impl CliError {
    pub fn usage(message: impl Into<String>) -> CliError {
        CliError {
            kind: ErrorKind::Usage,
            message: message.into(),
            hints: Vec::new(),
        }
    }

    pub fn runtime(message: impl Into<String>) -> CliError {
        CliError {
            kind: ErrorKind::Runtime,
            message: message.into(),
            hints: Vec::new(),
        }
    }

    pub fn incomplete(message: impl Into<String>) -> CliError {
        CliError {
            kind: ErrorKind::Incomplete,
            message: message.into(),
            hints: Vec::new(),
        }
    }

    pub fn hint(mut self, hint: impl Into<String>) -> CliError {
        self.hints.push(hint.into());
        self
    }

    pub fn exit_code(&self) -> ExitCode {
        ExitCode::from(match self.kind {
            ErrorKind::Runtime => 1,
            ErrorKind::Usage => 2,
            ErrorKind::Incomplete => 3,
        })
    }

    /// Writes the error as the user sees it.
    pub fn print(&self) {
        eprintln!("error: {}", self.message);
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
        let err = CliError::runtime(e.to_string());
        match e {
            JournalError::Missing(_) => err.hint(
                "run `kubectl krply record` to start a journal, or point --store (KRPLY_STORE) at an existing one",
            ),
            JournalError::Foreign { .. } => {
                err.hint("pass --store with the path of a krply journal, or move the file away")
            }
            JournalError::Corrupt { .. } => err.hint(
                "the file is left untouched; record into a new journal with --store, and keep this one for inspection",
            ),
            JournalError::TooNew { .. } => err.hint("upgrade kubectl-krply to read this journal"),
            JournalError::Locked { .. } => err.hint(
                "wait for it to finish, or stop it first; readers need no lock",
            ),
            JournalError::StreamLocked { .. } => err.hint(
                "that recorder already records the stream; record other namespaces or clusters beside it, or stop it first",
            ),
            _ => err,
        }
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
        let err = CliError::runtime(e.to_string());
        match e {
            ClusterError::NoConfiguration { .. } => {
                err.hint("set KUBECONFIG, pass --kubeconfig, or pass --server")
            }
            ClusterError::NoSuchContext(_) => {
                err.hint("`kubectl config get-contexts` lists the contexts")
            }
            ClusterError::Unreachable { .. } => err.hint(
                "check the server URL and your network; `kubectl cluster-info` shows what kubectl reaches",
            ),
            ClusterError::UntrustedCertificate { .. } => err.hint(
                "check that the kubeconfig's certificate authority (certificate-authority-data, or --certificate-authority) is this cluster's; --insecure-skip-tls-verify skips the check, insecurely",
            ),
            ClusterError::Unauthorized { .. } => {
                err.hint("refresh your credentials; `kubectl auth whoami` shows who you are")
            }
            _ => err,
        }
    }
}

/// The result type of command functions.
pub type CliResult<T = ()> = Result<T, CliError>;
