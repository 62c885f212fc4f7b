//! Audit logs into the journal: `audit import FILE...` reads whole files,
//! `record --audit-log PATH` follows a growing one ([`follow`]). Above both
//! [`crate::audit`] (reading and parsing logs) and [`crate::journal`]
//! (storing their writes, [`AuditImport`]), which know nothing of each other
//! (docs/audit.md).

pub mod follow;

use crate::audit::read::{ReadError, Scan, read_file};
use crate::journal::JournalError;
use crate::journal::audit::AuditImport;
use std::path::Path;

/// Why an audit log could not be imported.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(transparent)]
    Journal(#[from] JournalError),
}

/// Reads one audit log file into `import`, keeping its writes on recorded
/// objects and the time it covers.
pub fn read_log(import: &mut AuditImport<'_>, path: &Path) -> Result<Scan, ImportError> {
    let mut failed = None;
    let scan = read_file(path, |event| {
        if failed.is_none()
            && let Err(e) = import.add(event)
        {
            failed = Some(e);
        }
        // (A write on an object never recorded is counted in `unrecorded`.)
        Ok(())
    })?;
    if let Some(e) = failed {
        return Err(e.into());
    }
    if let (Some(from), Some(to)) = (scan.first_at, scan.last_at) {
        import.covers(from, to, &path.display().to_string());
    }
    Ok(scan)
}
