//! Audit log files as kube-apiserver leaves them: the live file, rotated ones
//! (`audit-2026-12-01T10-00-00.000.log`), and gzip (`.gz`, by its magic bytes).
//!
//! A line that is not an audit event makes the whole file an error, except the
//! last line when it is cut short (the server was writing it, or the file was
//! copied mid-write): that one is counted and skipped.

use super::parse::{AuditEvent, Line, LineError, Skip, parse_line};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// What reading one file found (the writes went to the caller as they came).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Scan {
    pub lines: u64,
    pub writes: u64,
    /// Audit events that were not kept, by why.
    pub skipped: BTreeMap<Skip, u64>,
    /// A last line cut short (0 or 1).
    pub truncated: u64,
    /// The earliest and latest `stageTimestamp` of any event in the file: the
    /// time it covers.
    pub first_at: Option<i64>,
    pub last_at: Option<i64>,
}

impl Scan {
    fn saw(&mut self, at: Option<i64>) {
        if let Some(at) = at {
            self.first_at = Some(self.first_at.map_or(at, |f| f.min(at)));
            self.last_at = Some(self.last_at.map_or(at, |l| l.max(at)));
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0} is a directory, not an audit log")]
    Directory(PathBuf),
    #[error("{path} is named like a gzip file and is not one")]
    NotGzip { path: PathBuf },
    #[error("{path} is not valid gzip: {source}")]
    BadGzip {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not an audit log: line {line} is {error}")]
    NotAuditLog {
        path: PathBuf,
        line: u64,
        error: LineError,
    },
}

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Reads every line of `path`, handing each completed write to `write`.
pub fn read_file(
    path: &Path,
    mut write: impl FnMut(AuditEvent) -> Result<(), ReadError>,
) -> Result<Scan, ReadError> {
    let io = |source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(io)?;
    if meta.is_dir() {
        return Err(ReadError::Directory(path.to_path_buf()));
    }
    let mut file = BufReader::with_capacity(1 << 16, std::fs::File::open(path).map_err(io)?);
    let gzip = file.fill_buf().map_err(io)?.starts_with(&GZIP_MAGIC);
    let named_gz = path.extension().is_some_and(|e| e == "gz");
    if named_gz && !gzip {
        return Err(ReadError::NotGzip {
            path: path.to_path_buf(),
        });
    }
    if gzip {
        // Several members (concatenated gzip files) read as one stream.
        let reader = BufReader::with_capacity(1 << 16, flate2::read::MultiGzDecoder::new(file));
        read_lines(path, reader, &mut write, |source| ReadError::BadGzip {
            path: path.to_path_buf(),
            source,
        })
    } else {
        read_lines(path, file, &mut write, io)
    }
}

fn read_lines(
    path: &Path,
    mut reader: impl BufRead,
    write: &mut impl FnMut(AuditEvent) -> Result<(), ReadError>,
    io: impl Fn(std::io::Error) -> ReadError,
) -> Result<Scan, ReadError> {
    let mut scan = Scan::default();
    let mut buf = Vec::with_capacity(1 << 14);
    // A line that failed to parse: fatal unless it turns out to be the last.
    let mut pending: Option<(u64, LineError)> = None;
    let mut events = 0u64;
    loop {
        buf.clear();
        // Bounded: each pass consumes at least one byte until the end.
        let n = reader.read_until(b'\n', &mut buf).map_err(&io)?;
        if n == 0 {
            break;
        }
        if let Some((line, error)) = pending.take() {
            return Err(ReadError::NotAuditLog {
                path: path.to_path_buf(),
                line,
                error,
            });
        }
        scan.lines += 1;
        let complete = buf.last() == Some(&b'\n');
        let text = buf.trim_ascii();
        if text.is_empty() {
            continue;
        }
        match parse_line(text) {
            Ok(Line::Write(event)) => {
                events += 1;
                scan.saw(Some(event.at));
                scan.writes += 1;
                write(*event)?;
            }
            Ok(Line::Other { at, why }) => {
                events += 1;
                scan.saw(at);
                *scan.skipped.entry(why).or_default() += 1;
            }
            // A cut JSON line is forgiven only at the very end.
            Err(e @ LineError::NotJson(_)) if events > 0 || !complete => {
                pending = Some((scan.lines, e));
            }
            Err(error) => {
                return Err(ReadError::NotAuditLog {
                    path: path.to_path_buf(),
                    line: scan.lines,
                    error,
                });
            }
        }
    }
    match pending {
        // Nothing else in the file was an audit event either.
        Some((line, error)) if events == 0 => Err(ReadError::NotAuditLog {
            path: path.to_path_buf(),
            line,
            error,
        }),
        Some(_) => {
            scan.truncated += 1;
            Ok(scan)
        }
        None => Ok(scan),
    }
}

/// Reads complete lines from `reader` as far as they go, for following a
/// growing file: returns how many bytes were consumed (up to the end of the
/// last complete line; a partial line waits for the next call).
pub fn read_complete_lines(
    mut reader: impl Read,
    mut line: impl FnMut(&[u8]),
    limit: usize,
) -> std::io::Result<u64> {
    let mut data = Vec::new();
    reader.by_ref().take(limit as u64).read_to_end(&mut data)?;
    let Some(end) = memchr::memrchr(b'\n', &data) else {
        return Ok(0);
    };
    for l in data[..=end].split(|b| *b == b'\n') {
        let l = l.trim_ascii();
        if !l.is_empty() {
            line(l);
        }
    }
    Ok(end as u64 + 1)
}

#[cfg(test)]
mod tests {
    use super::super::parse::tests::{DELETE, IMPERSONATED_PATCH};
    use super::*;
    use std::io::Write;

    fn scan(path: &Path) -> Result<(Scan, Vec<AuditEvent>), ReadError> {
        let mut got = Vec::new();
        let s = read_file(path, |e| {
            got.push(e);
            Ok(())
        })?;
        Ok((s, got))
    }

    fn file(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(bytes).unwrap();
        enc.finish().unwrap()
    }

    #[test]
    fn plain_and_gzip_read_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let text = format!("{IMPERSONATED_PATCH}\n{DELETE}\n");
        let plain = scan(&file(dir.path(), "audit.log", text.as_bytes())).unwrap();
        let gz = scan(&file(dir.path(), "audit.log.1.gz", &gzip(text.as_bytes()))).unwrap();
        assert_eq!(plain, gz);
        assert_eq!(plain.0.writes, 2);
        assert_eq!(plain.1[1].name, "c1");
        // Two gzip members, as `cat a.gz b.gz` makes.
        let mut two = gzip(format!("{IMPERSONATED_PATCH}\n").as_bytes());
        two.extend(gzip(format!("{DELETE}\n").as_bytes()));
        assert_eq!(scan(&file(dir.path(), "two.gz", &two)).unwrap(), plain);
    }

    #[test]
    fn a_cut_last_line_is_counted_and_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let cut = &DELETE[..DELETE.len() - 40];
        let (s, got) = scan(&file(
            dir.path(),
            "audit.log",
            format!("{IMPERSONATED_PATCH}\n{cut}").as_bytes(),
        ))
        .unwrap();
        assert_eq!((s.lines, s.writes, s.truncated, got.len()), (2, 1, 1, 1));
        // Also when the cut line did get its newline.
        let (s, _) = scan(&file(
            dir.path(),
            "audit2.log",
            format!("{IMPERSONATED_PATCH}\n{cut}\n").as_bytes(),
        ))
        .unwrap();
        assert_eq!(s.truncated, 1);
    }

    #[test]
    fn what_is_not_an_audit_log_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let middle = file(
            dir.path(),
            "mid.log",
            format!("{IMPERSONATED_PATCH}\nnot json\n{DELETE}\n").as_bytes(),
        );
        assert!(matches!(
            scan(&middle),
            Err(ReadError::NotAuditLog { line: 2, .. })
        ));
        let deployment = file(
            dir.path(),
            "d.json",
            br#"{"kind":"Deployment","apiVersion":"apps/v1"}"#,
        );
        assert!(matches!(
            scan(&deployment),
            Err(ReadError::NotAuditLog { line: 1, .. })
        ));
        let text = file(dir.path(), "notes.txt", b"hello\n");
        assert!(matches!(
            scan(&text),
            Err(ReadError::NotAuditLog { line: 1, .. })
        ));
        let fake_gz = file(dir.path(), "audit.log.gz", DELETE.as_bytes());
        assert!(matches!(scan(&fake_gz), Err(ReadError::NotGzip { .. })));
        let mut bad = gzip(DELETE.as_bytes());
        let keep = bad.len() / 2;
        bad.truncate(keep);
        bad.extend_from_slice(&[0xff; 16]);
        let broken = file(dir.path(), "broken.gz", &bad);
        assert!(matches!(scan(&broken), Err(ReadError::BadGzip { .. })));
        assert!(matches!(scan(dir.path()), Err(ReadError::Directory(_))));
        assert!(matches!(
            scan(&dir.path().join("missing.log")),
            Err(ReadError::Io { .. })
        ));
    }

    #[test]
    fn following_reads_complete_lines_only() {
        let data = format!("{DELETE}\n{IMPERSONATED_PATCH}");
        let mut seen = 0;
        let used = read_complete_lines(data.as_bytes(), |_| seen += 1, 1 << 20).unwrap();
        assert_eq!((seen, used), (1, DELETE.len() as u64 + 1));
        let mut seen = 0;
        assert_eq!(
            read_complete_lines(&b"{\"partial"[..], |_| seen += 1, 1 << 20).unwrap(),
            0
        );
        assert_eq!(seen, 0);
    }
}
