//! `record --retain` and `--max-size`: the recorder prunes behind itself
//! (docs/journal.md, "Retention"). Every so often it plans, on a reading
//! connection of its own, the cut of each stream it records (as `prune`
//! does: the state at the cut becomes a baseline there), and hands the cuts
//! to the journal writer, which carries them out a small step at a time
//! between its batches ([`crate::journal::retain`]).
//!
//! [`cut_at`] decides where to cut; [`run`] carries it out.

use super::rules::Notice;
use crate::history::History;
use crate::journal::writer::{Op, WriterSender, WriterStats};
use crate::journal::{Journal, JournalError, StreamId};
use crate::time::Millis;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// What the recorder keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// History older than this goes.
    pub retain: Option<Duration>,
    /// The journal's file (with its WAL) is kept under this many bytes,
    /// oldest history first.
    pub max_size: Option<u64>,
}

/// How far under `--max-size` a cut for size aims, so the next one is not
/// due at once: a tenth.
const SIZE_HEADROOM: f64 = 0.9;

impl Retention {
    /// How often to look: a tenth of `--retain` (so history is kept at most
    /// a tenth longer than asked), between 1 s and 10 min.
    pub fn every(&self) -> Duration {
        self.retain
            .map_or(Duration::from_secs(60), |r| r / 10)
            .clamp(Duration::from_secs(1), Duration::from_secs(600))
    }
}

/// Where to cut, at `now` (ms): `--retain` before now, or, when the file is
/// over `--max-size`, the time before which the oldest records go (taken from
/// the zones: `(records, min_at, max_at)` of each stretch of records), so that
/// what is left takes about [`SIZE_HEADROOM`] of the limit. Whichever is
/// later; never at or after `now`.
pub fn cut_at(now: i64, r: &Retention, size: u64, zones: &[(i64, i64, i64)]) -> Option<i64> {
    let by_age = r
        .retain
        .map(|d| now - i64::try_from(d.as_millis()).unwrap_or(i64::MAX / 2));
    let by_size = r
        .max_size
        .filter(|&max| size > max && size > 0)
        .and_then(|max| {
            let total: i64 = zones.iter().map(|z| z.0).sum();
            if total <= 0 {
                return None;
            }
            let keep = (max as f64 * SIZE_HEADROOM / size as f64).clamp(0.0, 1.0);
            let drop = ((1.0 - keep) * total as f64).ceil() as i64;
            let mut oldest: Vec<(i64, i64, i64)> = zones.to_vec();
            oldest.sort_by_key(|z| z.2);
            let mut dropped = 0;
            oldest.iter().find_map(|&(records, _, max_at)| {
                dropped += records;
                (dropped >= drop).then_some(max_at)
            })
        });
    by_age
        .into_iter()
        .chain(by_size)
        .max()
        .filter(|&cut| cut < now)
}

/// Everything [`run`] needs.
pub struct Setup {
    pub retention: Retention,
    pub path: PathBuf,
    pub cluster: String,
    /// The streams this recorder records: the only ones it prunes (another
    /// recorder's writer may hold the others in memory).
    pub streams: Vec<StreamId>,
    pub writer: WriterSender,
    pub stats: Arc<WriterStats>,
    /// The streams' live status: up to when each one's history is settled.
    pub statuses: Vec<(StreamId, Arc<std::sync::Mutex<super::stream::StreamStatus>>)>,
    pub notices: tokio::sync::mpsc::UnboundedSender<Notice>,
}

/// Plans and hands over a cut every [`Retention::every`], while the last
/// one is not still under way, until `stop`.
pub async fn run(setup: Setup, mut stop: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(setup.retention.every());
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.changed() => return,
        }
        if *stop.borrow() {
            return;
        }
        let busy = {
            let r = setup
                .stats
                .retention
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            r.pending > 0 || r.vacuum_pending
        };
        if busy {
            continue;
        }
        // A stream is cut only where its history is settled: a gap found
        // later (a freeze, a silent watch) starts no earlier.
        let settled: Vec<(StreamId, i64)> = setup
            .statuses
            .iter()
            .filter(|(id, _)| setup.streams.contains(id))
            .filter_map(|(id, s)| Some((*id, s.lock().ok()?.settled?)))
            .collect();
        let (path, cluster, retention) =
            (setup.path.clone(), setup.cluster.clone(), setup.retention);
        let planned =
            tokio::task::spawn_blocking(move || plan(&path, &cluster, &settled, &retention)).await;
        let cuts = match planned {
            Ok(Ok(cuts)) => cuts,
            Ok(Err(e)) => {
                let _ = setup.notices.send(Notice {
                    stream: "retention".into(),
                    text: format!("cannot plan what to prune: {e}"),
                    warning: true,
                });
                continue;
            }
            Err(_) => return,
        };
        for cut in cuts {
            if setup.writer.send(Op::Retain(cut)).await.is_err() {
                return;
            }
        }
    }
}

/// The cuts due now for `streams`, each before the time its history is
/// settled up to, read on a connection of its own.
fn plan(
    path: &std::path::Path,
    cluster: &str,
    streams: &[(StreamId, i64)],
    retention: &Retention,
) -> Result<Vec<crate::journal::prune::StreamCut>, JournalError> {
    let journal = Journal::open(path)?;
    let now = Millis::now().as_ms();
    let size = journal.status()?.size_bytes;
    // Counting what each zone still holds reads every record's key: only
    // when the file is over --max-size.
    let zones = if retention.max_size.is_some_and(|max| size > max) {
        journal.zone_times()?
    } else {
        Vec::new()
    };
    let Some(cut) = cut_at(now, retention, size, &zones) else {
        return Ok(Vec::new());
    };
    journal.begin_read()?;
    let history = History::load(&journal, cluster, now).map_err(|e| JournalError::Corrupt {
        path: path.to_path_buf(),
        detail: e.to_string(),
    })?;
    let (cuts, _) = history.prune_plan(cut).map_err(|e| JournalError::Corrupt {
        path: path.to_path_buf(),
        detail: e.to_string(),
    })?;
    Ok(cuts
        .into_iter()
        .filter(|c| {
            streams
                .iter()
                .any(|&(id, settled)| id == c.stream && c.cut < settled)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: i64 = 60_000;

    #[test]
    fn retain_cuts_that_long_before_now() {
        let r = Retention {
            retain: Some(Duration::from_secs(120)),
            max_size: None,
        };
        assert_eq!(cut_at(10 * MIN, &r, 1 << 30, &[]), Some(8 * MIN));
        // Looked at every 12 s.
        assert_eq!(r.every(), Duration::from_secs(12));
    }

    #[test]
    fn an_oversize_journal_loses_its_oldest_records_to_a_tenth_under_the_limit() {
        let r = Retention {
            retain: None,
            max_size: Some(1_000),
        };
        // Four stretches of 100 records, one a minute.
        let zones = [
            (100, 0, MIN),
            (100, 3 * MIN, 4 * MIN),
            (100, MIN, 2 * MIN),
            (100, 2 * MIN, 3 * MIN),
        ];
        // Under the limit: nothing.
        assert_eq!(cut_at(10 * MIN, &r, 900, &zones), None);
        // 2,000 bytes for 1,000 allowed: keep 45%, drop 220 of 400 records,
        // the three oldest stretches.
        assert_eq!(cut_at(10 * MIN, &r, 2_000, &zones), Some(3 * MIN));
        // With --retain too, the later cut wins.
        let both = Retention {
            retain: Some(Duration::from_secs(60)),
            max_size: Some(1_000),
        };
        assert_eq!(cut_at(10 * MIN, &both, 2_000, &zones), Some(9 * MIN));
        // Never at or after now.
        assert_eq!(cut_at(3 * MIN, &r, 2_000, &zones), None);
        // Nothing recorded, nothing to cut.
        assert_eq!(cut_at(10 * MIN, &r, 2_000, &[]), None);
    }
}
