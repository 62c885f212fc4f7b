//! `version`: what this binary is.

use super::args::GlobalArgs;
use crate::error::CliResult;
use crate::render::{self, Format};
use clap::Args;
use serde::Serialize;

/// Print the version, the commit it was built from and the journal schema version
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  kubectl krply version\n  kubectl krply version -o json")]
pub struct VersionArgs {}

#[derive(Serialize)]
struct Version {
    version: &'static str,
    commit: &'static str,
    journal_schema: i64,
}

pub fn run(global: &GlobalArgs, _args: VersionArgs) -> CliResult {
    let format = global.format(Format::Text, &[Format::Text, Format::Json, Format::Yaml])?;
    let v = Version {
        version: env!("CARGO_PKG_VERSION"),
        commit: option_env!("KRPLY_COMMIT").unwrap_or("unknown"),
        journal_schema: crate::journal::schema::SCHEMA_VERSION,
    };
    super::out(&match format {
        Format::Json => render::json(&v),
        Format::Yaml => render::yaml(&v),
        _ => format!(
            "kubectl-krply {} (commit {}, journal schema {})\n",
            v.version, v.commit, v.journal_schema
        ),
    })
}
