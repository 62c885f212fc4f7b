//! The single journal writer: a dedicated thread that owns the connection and
//! turns [`Op`]s into records, batching whatever has queued into one transaction.
//!
//! Batching is a group commit: the thread blocks for the first op, takes
//! everything already waiting, and unless that is a batch big enough
//! ([`BATCH_ENOUGH`]) takes more as it arrives, for up to [`COMMIT_WINDOW`]
//! or until the batch is big enough; all of it (up to [`MAX_BATCH`]) goes
//! into one transaction. Nothing waits longer than the
//! window to become durable, and a busy cluster pays one commit (one WAL write
//! of the touched pages) per window or per few hundred ops instead of one per
//! event. Every transaction ends
//! with a checkpoint for each stream whose events it holds, so an event and the
//! checkpoint it advances are durable together.

use super::bodies::{BodyStore, NewVersion, is_surely_new};
use super::codec::Pace;
use super::records::{BaselineInfo, CheckpointInfo, CheckpointReason, CoverageInfo, GapInfo};
use super::schema::{kind, mark};
use super::zones::{self, Zone};
use super::{IdMap, Journal, JournalError, StreamId};
use crate::model::{ObjectMeta, WatchType};
use rusqlite::{Connection, OptionalExtension, Transaction, params};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// The most ops committed in one transaction.
pub const MAX_BATCH: usize = 2048;
/// How long the first op of a transaction waits for more to share its commit.
pub const COMMIT_WINDOW: std::time::Duration = std::time::Duration::from_millis(20);
/// The most body bytes committed in one transaction: with large objects (a
/// relist of thousands of Deployments) a batch is cut by size, not count, so
/// the bodies held at once stay small.
pub const MAX_BATCH_BYTES: usize = 4 << 20;
/// Ops already waiting that make a transaction worth committing without
/// waiting out [`COMMIT_WINDOW`] (or an eighth of [`MAX_BATCH_BYTES`] of
/// bodies): the window only gathers more ops to share one commit.
pub const BATCH_ENOUGH: usize = MAX_BATCH / 8;
/// The most ops one transaction takes in all: under load, the ops that
/// arrived while a batch was written join the same transaction, up to this
/// many or [`MAX_TX_TIME`], so the pages every batch touches (the leaves of
/// `records_object` above all) are written once rather than once a batch,
/// while only one batch's bodies are held at a time.
pub const MAX_TX_OPS: usize = 8 * MAX_BATCH;
/// The longest a transaction goes on taking ops that arrived meanwhile.
pub const MAX_TX_TIME: std::time::Duration = std::time::Duration::from_millis(100);
/// Room in the queue between the streams and the writer; a full queue makes the
/// streams wait (back-pressure) instead of growing memory. Each op may hold a
/// body: 1,024 went no faster, with a megabyte more (docs/architecture.md).
pub const QUEUE: usize = 512;

/// One thing to journal.
#[derive(Debug)]
pub enum Op {
    /// A live watch event, body exactly as received.
    Event {
        stream: StreamId,
        at: i64,
        watch_type: WatchType,
        meta: ObjectMeta,
        body: Vec<u8>,
    },
    /// One listed object of the baseline being written for `stream`.
    BaselineItem {
        stream: StreamId,
        at: i64,
        meta: ObjectMeta,
        body: Vec<u8>,
    },
    /// The list finished: every item sent since the last `BaselineEnd` or
    /// `BaselineAbort` of this stream belongs to it.
    BaselineEnd {
        stream: StreamId,
        at: i64,
        list_rv: String,
        items: u64,
    },
    /// The list failed part-way; its items are left without a header and are
    /// never read as a baseline.
    BaselineAbort { stream: StreamId },
    Gap {
        stream: StreamId,
        at: i64,
        info: GapInfo,
    },
    Coverage {
        stream: StreamId,
        at: i64,
        info: CoverageInfo,
    },
    Checkpoint {
        stream: StreamId,
        at: i64,
        rv: String,
        reason: CheckpointReason,
    },
    /// A checkpoint as another journal wrote it (`import`): its reason and
    /// its count of the stream's events, which the stream's count becomes.
    CheckpointAs {
        stream: StreamId,
        at: i64,
        rv: String,
        info: CheckpointInfo,
    },
    /// Answered once everything sent before it is committed.
    Flush(std::sync::mpsc::SyncSender<()>),
    /// Retention of one stream (docs/journal.md, "Retention"): carried out
    /// in small steps of their own between batches ([`super::retain`]).
    Retain(super::prune::StreamCut),
}

impl Op {
    /// When what it says was observed, if it says when.
    fn at(&self) -> Option<i64> {
        match self {
            Op::Event { at, .. }
            | Op::BaselineItem { at, .. }
            | Op::BaselineEnd { at, .. }
            | Op::Gap { at, .. }
            | Op::Coverage { at, .. }
            | Op::Checkpoint { at, .. }
            | Op::CheckpointAs { at, .. } => Some(*at),
            Op::BaselineAbort { .. } | Op::Flush(_) | Op::Retain(_) => None,
        }
    }

    /// The bytes of the object body it carries, if any.
    fn body_len(&self) -> usize {
        match self {
            Op::Event { body, .. } | Op::BaselineItem { body, .. } => body.len(),
            _ => 0,
        }
    }
}

/// What the writer has made durable for one stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamTotals {
    /// Events journaled by this writer.
    pub events: u64,
    /// Events dropped as redeliveries of journaled ones.
    pub duplicates: u64,
    pub gaps: u64,
    pub baselines: u64,
    /// The resourceVersion of the last durable point.
    pub last_rv: String,
}

/// Shared view of the writer's progress, updated after every commit.
#[derive(Debug, Default)]
pub struct WriterStats {
    pub streams: Mutex<HashMap<StreamId, StreamTotals>>,
    /// Transactions committed.
    pub commits: Mutex<u64>,
    /// What retention did and has left to do.
    pub retention: Mutex<RetentionTotals>,
    /// What folding behind the writer did.
    pub behind: Mutex<BehindTotals>,
}

/// What folding behind the writer did so far (docs/journal.md, "Cold
/// history in blocks").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BehindTotals {
    pub steps: u64,
    /// Records moved from rows into blocks.
    pub records: u64,
    /// The longest step (µs): how long folding held the writer at most.
    pub longest_step_us: u64,
    /// Why folding stopped for the rest of the run, if a step failed (its
    /// transaction rolled back: the journal is as it was).
    pub failed: Option<String>,
}

/// What retention behind the recorder did so far, and has left to do.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RetentionTotals {
    /// Streams whose retention is queued or under way.
    pub pending: usize,
    /// Freed pages still to give back to the file system.
    pub vacuum_pending: bool,
    pub records_deleted: u64,
    pub bodies_deleted: u64,
    pub objects_deleted: u64,
    /// Steps carried out, and the longest one (µs): how long retention held
    /// the writer at most.
    pub steps: u64,
    pub longest_step_us: u64,
    /// The latest cut carried out to the end (ms).
    pub cut: Option<i64>,
}

/// A recorded change, sampled for a live feed: the object's previous and new
/// bodies, so the receiver can say which fields changed.
#[derive(Debug, Clone)]
pub struct Change {
    pub stream: StreamId,
    /// When the recorder observed it.
    pub at: i64,
    pub watch_type: WatchType,
    pub namespace: String,
    pub name: String,
    pub before: Option<Vec<u8>>,
    pub after: Vec<u8>,
}

/// Where sampled changes go, and how many per second at most: a feed is for
/// people, who read a few lines a second, so the writer does not pay for more.
pub struct Feed {
    pub tx: tokio::sync::mpsc::Sender<Change>,
    pub per_second: u32,
}

struct FeedState {
    feed: Feed,
    window: std::time::Instant,
    sent: u32,
}

impl FeedState {
    fn admit(&mut self) -> bool {
        if self.window.elapsed() >= std::time::Duration::from_secs(1) {
            self.window = std::time::Instant::now();
            self.sent = 0;
        }
        if self.sent < self.feed.per_second && self.feed.tx.capacity() > 0 {
            self.sent += 1;
            true
        } else {
            false
        }
    }
}

/// The sending side of the writer, cheap to clone into stream tasks.
#[derive(Clone)]
pub struct WriterSender {
    tx: tokio::sync::mpsc::Sender<Op>,
}

impl WriterSender {
    pub async fn send(&self, op: Op) -> Result<(), JournalError> {
        self.tx
            .send(op)
            .await
            .map_err(|_| JournalError::WriterStopped("the writer has exited".into()))
    }

    pub fn blocking_send(&self, op: Op) -> Result<(), JournalError> {
        self.tx
            .blocking_send(op)
            .map_err(|_| JournalError::WriterStopped("the writer has exited".into()))
    }

    /// Waits until everything sent before is committed.
    pub async fn flush(&self) -> Result<(), JournalError> {
        let (ack, done) = std::sync::mpsc::sync_channel(1);
        self.send(Op::Flush(ack)).await?;
        tokio::task::spawn_blocking(move || done.recv())
            .await
            .map_err(|e| JournalError::WriterStopped(e.to_string()))?
            .map_err(|_| JournalError::WriterStopped("the writer has exited".into()))
    }
}

/// How a writer runs.
pub struct WriterOptions {
    /// Where to sample committed changes for a live feed.
    pub feed: Option<Feed>,
    /// Pack older versions of objects together as they are written
    /// ([`super::bodies::pack_at_write`]): off, but to write journals as
    /// older recorders did. Answers must not differ.
    pub pack: bool,
    /// How long the first op of a transaction waits for more
    /// ([`COMMIT_WINDOW`]; zero makes every flushed op its own transaction).
    pub commit_window: std::time::Duration,
    /// How old records are before the writer folds them into blocks behind
    /// itself ([`super::fold::fold_after`]); `None`: it does not.
    pub fold_after: Option<std::time::Duration>,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            feed: None,
            pack: super::bodies::pack_at_write(),
            commit_window: COMMIT_WINDOW,
            fold_after: Some(super::fold::fold_after()),
        }
    }
}

/// The running writer thread.
pub struct Writer {
    sender: WriterSender,
    thread: std::thread::JoinHandle<Result<(), JournalError>>,
    stats: Arc<WriterStats>,
}

impl Writer {
    /// Moves the journal's connection into a new writer thread.
    pub fn start(journal: Journal) -> Result<Writer, JournalError> {
        Writer::start_with_feed(journal, None)
    }

    /// Like [`Writer::start`], also sampling committed changes into `feed`.
    pub fn start_with_feed(journal: Journal, feed: Option<Feed>) -> Result<Writer, JournalError> {
        Writer::start_with(
            journal,
            WriterOptions {
                feed,
                ..WriterOptions::default()
            },
        )
    }

    /// A writer with every option spelled out.
    pub fn start_with(journal: Journal, options: WriterOptions) -> Result<Writer, JournalError> {
        let WriterOptions {
            feed,
            pack,
            commit_window,
            fold_after,
        } = options;
        let (tx, rx) = tokio::sync::mpsc::channel(QUEUE);
        let stats = Arc::new(WriterStats::default());
        let mut state = WriterState::new(journal, stats.clone(), pack)?;
        state.behind.after = fold_after;
        state.caches.feed = feed.map(|feed| FeedState {
            feed,
            window: std::time::Instant::now(),
            sent: 0,
        });
        let thread = std::thread::Builder::new()
            .name("krply-journal".into())
            .spawn(move || state.run(rx, commit_window))
            .map_err(|e| JournalError::WriterStopped(e.to_string()))?;
        Ok(Writer {
            sender: WriterSender { tx },
            thread,
            stats,
        })
    }

    pub fn sender(&self) -> WriterSender {
        self.sender.clone()
    }

    pub fn stats(&self) -> Arc<WriterStats> {
        self.stats.clone()
    }

    /// Closes the queue, lets the thread commit what is left and joins it.
    /// Every other [`WriterSender`] clone must be dropped first.
    pub fn finish(self) -> Result<(), JournalError> {
        drop(self.sender);
        self.thread
            .join()
            .map_err(|_| JournalError::WriterStopped("the writer thread panicked".into()))?
    }
}

struct StreamState {
    /// Events journaled for this stream over all recorder runs.
    events: u64,
    /// The list token of the baseline being written.
    open_list: Option<i64>,
    /// The objects of that list so far.
    listed: HashSet<i64>,
    last_rv: String,
    /// Events of this stream in the current transaction.
    dirty: bool,
    /// When the last of those events was observed, and its resourceVersion: the
    /// checkpoint the transaction ends with for this stream.
    dirty_at: i64,
    dirty_rv: String,
    totals: StreamTotals,
}

struct WriterState {
    /// The writer's connection, and the reader of it a fold behind the
    /// writer goes through.
    journal: Journal,
    path: PathBuf,
    caches: Caches,
    stats: Arc<WriterStats>,
    /// [`MAX_TX_TIME`], but in tests.
    tx_time: std::time::Duration,
    behind: Behind,
}

/// The least a caught-up fold behind the writer waits before its next pass.
const BEHIND_PAUSE: std::time::Duration = std::time::Duration::from_millis(100);

/// Folding behind the writer: between batches, when nothing waits, a step
/// of [`Journal::fold_behind`] at a time.
struct Behind {
    folder: Option<super::fold::Folder>,
    /// How old a record is before it is folded; `None`: nothing is.
    after: Option<std::time::Duration>,
    /// The `seq` the next step scans after.
    cursor: i64,
    /// When the next step is due; `None` once a step failed.
    due: Option<std::time::Instant>,
    /// The latest time an op carried: the writer's own clock, which the
    /// records' ages are read by.
    latest_at: Option<i64>,
}

impl Behind {
    /// When a step is due: its age and the writer's latest time.
    fn due(&self, now: std::time::Instant) -> Option<(std::time::Duration, i64)> {
        let after = self.after?;
        let latest = self.latest_at?;
        self.due
            .is_some_and(|d| now >= d)
            .then_some((after, latest))
    }
}

impl WriterState {
    fn new(
        journal: Journal,
        stats: Arc<WriterStats>,
        pack: bool,
    ) -> Result<WriterState, JournalError> {
        let path = journal.path.clone();
        let next_seq = next_seq(&journal.conn).map_err(|e| JournalError::sqlite(&path, e))?;
        // Another recorder's transaction is short; wait for it rather than fail.
        journal
            .conn
            .busy_timeout(std::time::Duration::from_secs(30))
            .map_err(|e| JournalError::sqlite(&path, e))?;
        Ok(WriterState {
            journal,
            caches: Caches {
                bodies: BodyStore::new(path.clone(), pack),
                next_seq,
                streams: HashMap::new(),
                objects: ObjectIds::default(),
                feed: None,
                retain: std::collections::VecDeque::new(),
                vacuum_pending: false,
            },
            path,
            stats,
            tx_time: MAX_TX_TIME,
            behind: Behind {
                folder: None,
                after: None,
                cursor: 0,
                due: Some(std::time::Instant::now()),
                latest_at: None,
            },
        })
    }

    fn run(
        &mut self,
        mut rx: tokio::sync::mpsc::Receiver<Op>,
        window: std::time::Duration,
    ) -> Result<(), JournalError> {
        let mut batch = Vec::with_capacity(MAX_BATCH);
        loop {
            // Retention goes a step at a time between batches: one after each
            // commit, and on whenever nothing waits.
            // Folding behind the writer likewise, once retention is idle.
            let fold_due = self.behind.due(std::time::Instant::now());
            let first = if self.retention_idle() && fold_due.is_none() {
                match rx.blocking_recv() {
                    Some(op) => op,
                    None => break,
                }
            } else {
                match rx.try_recv() {
                    Ok(op) => op,
                    Err(tokio::sync::mpsc::error::TryRecvError::Empty) => {
                        if let Some(due) = fold_due.filter(|_| self.retention_idle()) {
                            self.fold_step(due);
                        } else {
                            self.retention_step()?;
                        }
                        continue;
                    }
                    Err(tokio::sync::mpsc::error::TryRecvError::Disconnected) => break,
                }
            };
            let mut bytes = first.body_len();
            batch.push(first);
            gather(&mut rx, &mut batch, &mut bytes, window);
            if let Some(at) = batch.iter().filter_map(Op::at).max() {
                self.behind.latest_at = Some(self.behind.latest_at.map_or(at, |l| l.max(at)));
            }
            if let Err(e) = self.commit(&mut batch, Some(&mut rx)) {
                rx.close();
                return Err(e);
            }
            if !self.retention_idle()
                && let Err(e) = self.retention_step()
            {
                rx.close();
                return Err(e);
            }
        }
        Ok(())
    }

    /// One step of folding behind the writer ([`Journal::fold_behind`]):
    /// the objects folded are forgotten, as their bodies may be gone. A step
    /// that fails stops folding for the rest of the run (its transaction
    /// rolled back, so the journal is as it was); the recorder says so.
    fn fold_step(&mut self, (after, latest): (std::time::Duration, i64)) {
        let now = std::time::Instant::now();
        let age = i64::try_from(after.as_millis()).unwrap_or(i64::MAX);
        let own: super::IdSet<StreamId> = self.caches.streams.keys().copied().collect();
        let stepped = self.journal.fold_behind(
            &mut self.behind.folder,
            &own,
            self.behind.cursor,
            latest.saturating_sub(age),
        );
        let mut totals = self.stats.behind.lock().unwrap_or_else(|e| e.into_inner());
        match stepped {
            Ok(step) => {
                for &object in &step.objects {
                    self.caches.bodies.forget_folded(object);
                }
                if step.folded.records > 0 {
                    self.caches.bodies.forget_keyframes();
                }
                self.behind.cursor = step.cursor;
                // Caught up: the next pass once more has aged, and never
                // sooner than a pause, which a writer told to fold at once
                // (a debug build's) would otherwise spin through while idle.
                self.behind.due = Some(if step.more {
                    now
                } else {
                    now + after.max(BEHIND_PAUSE)
                });
                totals.steps += 1;
                totals.records += step.folded.records as u64;
                totals.longest_step_us = totals
                    .longest_step_us
                    .max(u64::try_from(now.elapsed().as_micros()).unwrap_or(u64::MAX));
            }
            Err(e) => {
                self.behind.due = None;
                totals.failed = Some(e.to_string());
            }
        }
    }

    /// No retention is queued, and no freed page waits to go back.
    fn retention_idle(&self) -> bool {
        self.caches.retain.is_empty() && !self.caches.vacuum_pending
    }

    /// One step of the retention queued first, in a transaction of its own
    /// (foreign keys unenforced meanwhile, as `prune` does: see
    /// [`super::retain`]); once the queue is empty, freed pages go back to
    /// the file system a few at a time.
    fn retention_step(&mut self) -> Result<(), JournalError> {
        let started = std::time::Instant::now();
        let path = self.path.clone();
        let err = |e| JournalError::sqlite(&path, e);
        let Some(job) = self.caches.retain.front_mut() else {
            let freelist: i64 = self
                .journal
                .conn
                .query_row("PRAGMA freelist_count", [], |r| r.get(0))
                .map_err(err)?;
            let mut freed = false;
            if freelist > 0 {
                // A journal that does not give pages back (auto_vacuum
                // off) keeps its free list: stop rather than spin.
                freed = super::retain::give_back_pages(
                    &self.journal.conn,
                    super::retain::PAGES_PER_STEP,
                )
                .map_err(err)?
                    > 0;
            }
            if !freed {
                self.caches.vacuum_pending = false;
                // The pages given back leave the file once the WAL is
                // written back; a reader may hold it, then it is later.
                self.journal
                    .conn
                    .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
                    .map_err(err)?;
            }
            self.publish_retention(started, None, None);
            return Ok(());
        };
        self.journal
            .conn
            .pragma_update(None, "foreign_keys", false)
            .map_err(err)?;
        let stepped = (|| {
            let tx = self
                .journal
                .conn
                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                .map_err(err)?;
            let step = job.step(&tx, &path, &mut self.caches.bodies)?;
            tx.commit().map_err(err)?;
            Ok::<_, JournalError>(step)
        })();
        let restored = self.journal.conn.pragma_update(None, "foreign_keys", true);
        let step = stepped?;
        restored.map_err(err)?;
        // The writer's memory of the objects touched may name bodies that
        // are gone: it reads them again when they next change.
        for &object in &step.touched {
            self.caches.bodies.forget(object);
        }
        if !step.objects_deleted.is_empty() {
            let gone: HashSet<i64> = step.objects_deleted.iter().copied().collect();
            self.caches.objects.retain(|id| !gone.contains(&id));
        }
        let cut = step.done.then(|| job.cut());
        if step.done {
            self.caches.retain.pop_front();
            if self.caches.retain.is_empty() {
                self.caches.vacuum_pending = true;
            }
        }
        self.publish_retention(started, Some(&step), cut);
        Ok(())
    }

    fn publish_retention(
        &self,
        started: std::time::Instant,
        step: Option<&super::retain::Step>,
        cut: Option<i64>,
    ) {
        let mut r = self
            .stats
            .retention
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        r.pending = self.caches.retain.len();
        r.vacuum_pending = self.caches.vacuum_pending;
        r.steps += 1;
        r.longest_step_us = r
            .longest_step_us
            .max(started.elapsed().as_micros().min(u128::from(u64::MAX)) as u64);
        if let Some(step) = step {
            r.records_deleted += step.records_deleted;
            r.bodies_deleted += step.bodies_deleted;
            r.objects_deleted += step.objects_deleted.len() as u64;
        }
        if cut.is_some() {
            r.cut = cut;
        }
    }

    /// Writes `batch` in one transaction, and with it the ops that arrive
    /// on `rx` meanwhile ([`MAX_TX_OPS`], [`MAX_TX_TIME`]); commits.
    fn commit(
        &mut self,
        batch: &mut Vec<Op>,
        mut rx: Option<&mut tokio::sync::mpsc::Receiver<Op>>,
    ) -> Result<(), JournalError> {
        let mut acks = Vec::new();
        let started = std::time::Instant::now();
        let tx_time = self.tx_time;
        let ((), changes) = self.in_transaction(|w| -> Result<(), JournalError> {
            let mut taken = 0;
            loop {
                taken += batch.len();
                for op in batch.drain(..) {
                    match op {
                        Op::Flush(ack) => acks.push(ack),
                        Op::Retain(cut) => {
                            let job = super::retain::RetainJob::new(cut);
                            w.cx.caches.retain.push_back(job);
                        }
                        op => w.apply(op)?,
                    }
                }
                // A flush is waited on: it commits now.
                if !acks.is_empty() || taken >= MAX_TX_OPS || started.elapsed() >= tx_time {
                    break;
                }
                let Some(rx) = rx.as_deref_mut() else { break };
                let mut bytes = 0;
                take_waiting(rx, batch, &mut bytes);
                if batch.is_empty() {
                    break;
                }
            }
            w.checkpoint_dirty()
        })?;
        // The transaction is durable: publish what it made durable.
        {
            let mut totals = self.stats.streams.lock().unwrap_or_else(|e| e.into_inner());
            for (id, s) in &self.caches.streams {
                totals.insert(*id, s.totals.clone());
            }
            *self.stats.commits.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        }
        if let Some(f) = &self.caches.feed {
            for change in changes {
                let _ = f.feed.tx.try_send(change);
            }
        }
        for ack in acks {
            let _ = ack.send(());
        }
        Ok(())
    }

    /// Runs `f` in one transaction and commits it when it returns `Ok`, with
    /// the zones of what it wrote; the caches forget what it deleted once it
    /// is durable. Returns `f`'s result and the changes sampled for the feed.
    fn in_transaction<T, E: From<JournalError>>(
        &mut self,
        f: impl FnOnce(&mut TxWriter<'_, '_>) -> Result<T, E>,
    ) -> Result<(T, Vec<Change>), E> {
        let path = self.path.clone();
        let err = |e| JournalError::sqlite(&path, e);
        // Other writers may write this journal too (other streams, imports):
        // take the write lock up front (a deferred transaction that read first
        // could not upgrade), and number records after whatever they wrote.
        let tx = self
            .journal
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(err)?;
        self.caches.next_seq = next_seq(&tx).map_err(err)?.max(self.caches.next_seq);
        let mut w = TxWriter {
            tx: &tx,
            cx: Ctx {
                path: &self.path,
                caches: &mut self.caches,
                tx: TxState::default(),
            },
        };
        let out = f(&mut w)?;
        let TxState {
            forget,
            changes,
            zone,
        } = std::mem::take(&mut w.cx.tx);
        zones::record(&tx, zone).map_err(err)?;
        tx.commit().map_err(err)?;
        for ((stream, namespace, name), obj) in forget {
            self.caches.bodies.forget(obj);
            self.caches.objects.remove(stream, &namespace, &name);
        }
        Ok((out, changes))
    }
}

/// A writer on the caller's thread, for `import`: the caller draws each
/// transaction, applies [`Op`]s in it and adds its own rows before the commit.
/// It adds no checkpoints of its own (imported history brings its
/// checkpoints), and it writes the same records, bodies, packs and zones as
/// [`Writer`] does.
pub struct DirectWriter {
    state: WriterState,
    /// A transaction failed: the caches may name rows that were rolled back.
    broken: bool,
}

/// One open transaction of a [`DirectWriter`].
pub struct TxWriter<'t, 'c> {
    tx: &'t Transaction<'c>,
    cx: Ctx<'t>,
}

impl TxWriter<'_, '_> {
    /// Writes one op into the transaction.
    pub fn apply(&mut self, op: Op) -> Result<(), JournalError> {
        apply(self.tx, op, &mut self.cx)?;
        // One import transaction may write a day of records: zones stay small.
        if self.cx.tx.zone.records >= zones::zone_records() {
            zones::record(self.tx, self.cx.tx.zone)
                .map_err(|e| JournalError::sqlite(self.cx.path, e))?;
            self.cx.tx.zone = Zone::default();
        }
        Ok(())
    }

    /// Ends the transaction's events of each stream with a checkpoint at the
    /// last of them: an event and the checkpoint it advances are durable
    /// together.
    fn checkpoint_dirty(&mut self) -> Result<(), JournalError> {
        let cx = &mut self.cx;
        for (id, s) in cx.caches.streams.iter_mut().filter(|(_, s)| s.dirty) {
            let info = CheckpointInfo {
                reason: CheckpointReason::Event,
                events: s.events,
            };
            insert_meta(
                self.tx,
                &mut cx.caches.next_seq,
                *id,
                kind::CHECKPOINT,
                s.dirty_at,
                Some(&s.dirty_rv),
                None,
                &info,
            )
            .map_err(|e| JournalError::sqlite(cx.path, e))?;
            s.dirty = false;
        }
        Ok(())
    }

    /// The transaction, for the caller's own rows.
    pub fn conn(&self) -> &Connection {
        self.tx
    }

    /// The journal's path, for errors.
    pub fn path(&self) -> &std::path::Path {
        self.cx.path
    }
}

impl DirectWriter {
    pub fn new(journal: Journal) -> Result<DirectWriter, JournalError> {
        // An import's transaction writes thousands of rows of many objects:
        // the pages they touch (a leaf of `records_object` and of `bodies`
        // per object) stay cached instead of being read back from the file
        // for the next transaction. A ceiling, filled only as pages are used.
        journal
            .conn()
            .pragma_update(None, "cache_size", -64_000)
            .map_err(|e| journal.err(e))?;
        // As a recorder writes (no packs, small keyframes): packing took
        // 38 % of an import's writer, which was its limit (docs/journal.md,
        // "Packs").
        let pack = super::bodies::pack_at_write();
        Ok(DirectWriter {
            state: WriterState::new(journal, Arc::new(WriterStats::default()), pack)?,
            broken: false,
        })
    }

    /// Runs `f` in one transaction, committed when it returns `Ok`, rolled back
    /// otherwise (after which this writer refuses more work).
    pub fn transaction<T, E: From<JournalError>>(
        &mut self,
        f: impl FnOnce(&mut TxWriter<'_, '_>) -> Result<T, E>,
    ) -> Result<T, E> {
        if self.broken {
            return Err(JournalError::WriterStopped(
                "an earlier transaction of this import failed".into(),
            )
            .into());
        }
        self.broken = true;
        let (out, _) = self.state.in_transaction(f)?;
        // What the rows vouch for came with them (their checkpoints).
        for st in self.state.caches.streams.values_mut() {
            st.dirty = false;
        }
        self.broken = false;
        Ok(out)
    }
}

/// What one transaction gathers for after its commit.
#[derive(Default)]
struct TxState {
    /// Objects deleted in it: their caches can go once it is durable.
    forget: Vec<((StreamId, String, String), i64)>,
    /// Sampled changes, sent to the feed once it commits.
    changes: Vec<Change>,
    /// Where its object records are (docs/journal.md, "Zones").
    zone: Zone,
}

/// What the writer remembers between transactions, so that an op rarely
/// reads back what it wrote.
struct Caches {
    bodies: BodyStore,
    /// The `seq` the next record gets.
    next_seq: i64,
    streams: HashMap<StreamId, StreamState>,
    /// Object ids by stream, namespace and name.
    objects: ObjectIds,
    feed: Option<FeedState>,
    /// Retention queued, a stream each, carried out in order.
    retain: std::collections::VecDeque<super::retain::RetainJob>,
    /// Retention freed pages that have not gone back to the file system.
    vacuum_pending: bool,
}

/// What an op is written with: the caches, and the open transaction's state.
struct Ctx<'a> {
    path: &'a PathBuf,
    caches: &'a mut Caches,
    tx: TxState,
}

/// Writes one operation into the open transaction. Long on purpose: one short arm per
/// kind of [`Op`]; the two large ones are their own functions.
fn apply(tx: &Transaction<'_>, op: Op, cx: &mut Ctx<'_>) -> Result<(), JournalError> {
    let path = cx.path.clone();
    let err = |e| JournalError::sqlite(&path, e);
    match op {
        // Retention runs in steps of its own ([`WriterState::retention_step`]);
        // a caller's own transactions (import) never carry it.
        Op::Flush(_) | Op::Retain(_) => Ok(()),
        Op::Event {
            stream,
            at,
            watch_type,
            meta,
            body,
        } => apply_event(tx, cx, stream, at, watch_type, meta, body),
        Op::BaselineItem {
            stream,
            at,
            meta,
            body,
        } => apply_baseline_item(tx, cx, stream, at, meta, body),
        Op::BaselineEnd {
            stream,
            at,
            list_rv,
            items,
        } => {
            stream_state(tx, &mut cx.caches.streams, stream).map_err(err)?;
            let seq = take_seq(&mut cx.caches.next_seq);
            let s = cx
                .caches
                .streams
                .get_mut(&stream)
                .expect("stream state loaded above");
            let token = s.open_list.take().unwrap_or(seq);
            // An object the list did not have is gone: what comes next for it
            // is not compared with what came before (docs/journal.md,
            // "Status-only changes").
            let listed = std::mem::take(&mut s.listed);
            for object in cx.caches.objects.of(stream) {
                if !listed.contains(&object) {
                    cx.caches.bodies.forget_diff_digest(object);
                }
            }
            let info = serde_json::to_string(&BaselineInfo { items }).unwrap_or_default();
            tx.prepare_cached(
                "INSERT INTO records(seq, stream_id, kind, observed_at, resource_version, aux, info)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )
            .and_then(|mut s| {
                s.execute(params![seq, stream, kind::BASELINE, at, list_rv, token, info])
            })
            .map_err(err)?;
            s.last_rv = list_rv.clone();
            s.totals.last_rv = list_rv;
            s.totals.baselines += 1;
            // A baseline is a durable point too, later than the events before it.
            if at >= s.dirty_at {
                s.dirty = false;
            }
            Ok(())
        }
        Op::BaselineAbort { stream } => {
            if let Some(s) = cx.caches.streams.get_mut(&stream) {
                s.open_list = None;
                s.listed.clear();
            }
            // Readers skip the items of a list that failed: what comes next
            // for these objects is not compared with them.
            for object in cx.caches.objects.of(stream) {
                cx.caches.bodies.forget_diff_digest(object);
            }
            Ok(())
        }
        Op::Gap { stream, at, info } => {
            stream_state(tx, &mut cx.caches.streams, stream).map_err(err)?;
            insert_meta(
                tx,
                &mut cx.caches.next_seq,
                stream,
                kind::GAP,
                at,
                None,
                None,
                &info,
            )
            .map_err(err)?;
            if let Some(s) = cx.caches.streams.get_mut(&stream) {
                s.totals.gaps += 1;
            }
            Ok(())
        }
        Op::Coverage { stream, at, info } => {
            stream_state(tx, &mut cx.caches.streams, stream).map_err(err)?;
            insert_meta(
                tx,
                &mut cx.caches.next_seq,
                stream,
                kind::COVERAGE,
                at,
                None,
                None,
                &info,
            )
            .map_err(err)
        }
        Op::Checkpoint {
            stream,
            at,
            rv,
            reason,
        } => {
            let s = stream_state(tx, &mut cx.caches.streams, stream).map_err(err)?;
            let info = CheckpointInfo {
                reason,
                events: s.events,
            };
            checkpoint(tx, cx, stream, at, rv, info).map_err(err)
        }
        Op::CheckpointAs {
            stream,
            at,
            rv,
            info,
        } => {
            let s = stream_state(tx, &mut cx.caches.streams, stream).map_err(err)?;
            s.events = info.events;
            checkpoint(tx, cx, stream, at, rv, info).map_err(err)
        }
    }
}

/// Writes a checkpoint of `stream` and moves its state on.
fn checkpoint(
    tx: &Transaction<'_>,
    cx: &mut Ctx<'_>,
    stream: StreamId,
    at: i64,
    rv: String,
    info: CheckpointInfo,
) -> rusqlite::Result<()> {
    {
        let s = stream_state(tx, &mut cx.caches.streams, stream)?;
        s.last_rv = rv.clone();
        s.totals.last_rv = rv.clone();
        // A bookmark, heartbeat or stop at or after the transaction's events vouches
        // for them: no event checkpoint follows it with an earlier time.
        if at >= s.dirty_at {
            s.dirty = false;
        }
    }
    insert_meta(
        tx,
        &mut cx.caches.next_seq,
        stream,
        kind::CHECKPOINT,
        at,
        Some(&rv),
        None,
        &info,
    )
}

/// A live event: journaled once (a redelivery is counted and dropped), its body
/// stored, the live feed sampled, the stream's counters moved on.
fn apply_event(
    tx: &Transaction<'_>,
    cx: &mut Ctx<'_>,
    stream: StreamId,
    at: i64,
    watch_type: WatchType,
    meta: ObjectMeta,
    body: Vec<u8>,
) -> Result<(), JournalError> {
    let path = cx.path.clone();
    let err = |e| JournalError::sqlite(&path, e);
    stream_state(tx, &mut cx.caches.streams, stream).map_err(err)?;
    let object = object_id(tx, &mut cx.caches.objects, stream, &meta).map_err(err)?;
    let new = match cx.caches.bodies.last_version(tx, object)? {
        None => true,
        Some(last) if is_surely_new(last, &meta.resource_version) => true,
        Some(_) => {
            !(stored_event(tx, object, &meta.resource_version, watch_type).map_err(err)?
                || super::cold::event_stored(
                    tx,
                    &path,
                    object,
                    &meta.resource_version,
                    watch_type,
                )?)
        }
    };
    let s = cx
        .caches
        .streams
        .get_mut(&stream)
        .expect("stream state loaded above");
    if !new {
        s.totals.duplicates += 1;
        return Ok(());
    }
    // Nothing after a deletion is compared with it.
    let digest = meta
        .diff_digest
        .filter(|_| watch_type != WatchType::Deleted);
    let stored = cx.caches.bodies.store(
        tx,
        stream,
        object,
        version(&meta, &body, digest, Pace::Live),
    )?;
    if cx.caches.feed.as_mut().is_some_and(|f| f.admit()) {
        // The feed is for people: a "before" that cannot be read (a damaged
        // block) leaves the change without one, never the event unwritten.
        let before = match (watch_type, stored.previous) {
            (WatchType::Modified, Some(prev)) => cx.caches.bodies.read(tx, prev).ok(),
            _ => None,
        };
        cx.tx.changes.push(Change {
            stream,
            at,
            watch_type,
            namespace: meta.namespace.clone(),
            name: meta.name.clone(),
            before,
            after: body.clone(),
        });
    }
    let seq = take_seq(&mut cx.caches.next_seq);
    cx.tx.zone.add(seq, at);
    // Whether a default diff sees the change is marked (docs/journal.md,
    // "Status-only changes"), where the writer can tell, or as given.
    let mark = match (watch_type, meta.given_mark) {
        (WatchType::Modified, Some(given)) => given.map(|status_only| {
            if status_only {
                mark::STATUS_ONLY
            } else {
                mark::CHANGED
            }
        }),
        (WatchType::Modified, None) if stored.same_for_diff => Some(mark::STATUS_ONLY),
        (WatchType::Modified, None) if stored.changed_for_diff => Some(mark::CHANGED),
        _ => None,
    };
    tx.prepare_cached(
        "INSERT INTO records(seq, stream_id, kind, observed_at, watch_type, object_id,
                             body_id, resource_version, aux)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )
    .and_then(|mut s| {
        s.execute(params![
            seq,
            stream,
            kind::EVENT,
            at,
            watch_type.code(),
            object,
            stored.body,
            meta.resource_version,
            mark,
        ])
    })
    .map_err(err)?;
    let s = cx
        .caches
        .streams
        .get_mut(&stream)
        .expect("stream state loaded above");
    s.events += 1;
    s.totals.events += 1;
    s.last_rv = meta.resource_version.clone();
    s.totals.last_rv = meta.resource_version.clone();
    s.dirty = true;
    s.dirty_at = s.dirty_at.max(at);
    s.dirty_rv.clone_from(&meta.resource_version);
    if watch_type == WatchType::Deleted {
        cx.tx
            .forget
            .push(((stream, meta.namespace, meta.name), object));
    }
    Ok(())
}

/// The version of an object that `meta` and `body` are, to store.
fn version<'a>(
    meta: &'a ObjectMeta,
    body: &'a [u8],
    diff_digest: Option<u64>,
    pace: Pace,
) -> NewVersion<'a> {
    NewVersion {
        resource_version: &meta.resource_version,
        raw: body,
        diff_digest,
        pace,
    }
}

/// Whether this event of `object` is already journaled: a redelivery has the
/// same resourceVersion and type (journals of schema version 3 also hold an
/// `event_key` for it, which is no longer needed).
fn stored_event(
    tx: &Transaction<'_>,
    object: i64,
    resource_version: &str,
    watch_type: WatchType,
) -> rusqlite::Result<bool> {
    tx.prepare_cached(&format!(
        "SELECT 1 FROM records WHERE object_id = ?1 AND kind = {} AND resource_version = ?2
         AND watch_type = ?3 LIMIT 1",
        kind::EVENT
    ))?
    .query_row(params![object, resource_version, watch_type.code()], |_| {
        Ok(())
    })
    .optional()
    .map(|found| found.is_some())
}

/// One item of a list: part of the baseline the list's end completes.
fn apply_baseline_item(
    tx: &Transaction<'_>,
    cx: &mut Ctx<'_>,
    stream: StreamId,
    at: i64,
    meta: ObjectMeta,
    body: Vec<u8>,
) -> Result<(), JournalError> {
    let path = cx.path.clone();
    let err = |e| JournalError::sqlite(&path, e);
    stream_state(tx, &mut cx.caches.streams, stream).map_err(err)?;
    let object = object_id(tx, &mut cx.caches.objects, stream, &meta).map_err(err)?;
    let body_id = cx
        .caches
        .bodies
        .store(
            tx,
            stream,
            object,
            version(&meta, &body, meta.diff_digest, Pace::Listed),
        )?
        .body;
    let seq = take_seq(&mut cx.caches.next_seq);
    cx.tx.zone.add(seq, at);
    let s = cx
        .caches
        .streams
        .get_mut(&stream)
        .expect("stream state loaded above");
    let token = *s.open_list.get_or_insert(seq);
    s.listed.insert(object);
    tx.prepare_cached(
        "INSERT INTO records(seq, stream_id, kind, observed_at, object_id, body_id,
                             resource_version, aux)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )
    .and_then(|mut s| {
        s.execute(params![
            seq,
            stream,
            kind::BASELINE_ITEM,
            at,
            object,
            body_id,
            meta.resource_version,
            token
        ])
    })
    .map_err(err)?;
    Ok(())
}

/// The sequence number after the journal's last record, a row or kept in a
/// block.
fn next_seq(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row(
        "SELECT max(coalesce((SELECT max(seq) FROM records), 0),
                    coalesce((SELECT max(last_seq) FROM blocks), 0)) + 1",
        [],
        |r| r.get(0),
    )
}

fn take_seq(next: &mut i64) -> i64 {
    let seq = *next;
    *next += 1;
    seq
}

#[allow(clippy::too_many_arguments)]
fn insert_meta<T: serde::Serialize>(
    tx: &Transaction<'_>,
    next_seq: &mut i64,
    stream: StreamId,
    record_kind: i64,
    at: i64,
    rv: Option<&str>,
    aux: Option<i64>,
    info: &T,
) -> rusqlite::Result<()> {
    let info = serde_json::to_string(info).unwrap_or_default();
    let seq = take_seq(next_seq);
    tx.prepare_cached(
        "INSERT INTO records(seq, stream_id, kind, observed_at, resource_version, aux, info)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![seq, stream, record_kind, at, rv, aux, info])?;
    Ok(())
}

/// Loads (once) what the writer needs to know about a stream.
fn stream_state<'a>(
    tx: &Transaction<'_>,
    streams: &'a mut HashMap<StreamId, StreamState>,
    stream: StreamId,
) -> rusqlite::Result<&'a mut StreamState> {
    if let std::collections::hash_map::Entry::Vacant(slot) = streams.entry(stream) {
        let last: Option<(String, Option<String>)> = tx
            .query_row(
                &format!(
                    "SELECT info, resource_version FROM records WHERE stream_id = ?1 AND kind = {} AND {meta}
                     ORDER BY seq DESC LIMIT 1",
                    kind::CHECKPOINT, meta = kind::META),
                params![stream],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        let (events, last_rv) = match last {
            Some((info, rv)) => (
                serde_json::from_str::<CheckpointInfo>(&info)
                    .map(|i| i.events)
                    .unwrap_or(0),
                rv.unwrap_or_default(),
            ),
            None => (0, String::new()),
        };
        slot.insert(StreamState {
            events,
            open_list: None,
            listed: HashSet::new(),
            last_rv: last_rv.clone(),
            dirty: false,
            dirty_at: 0,
            dirty_rv: String::new(),
            totals: StreamTotals {
                last_rv,
                ..StreamTotals::default()
            },
        });
    }
    Ok(streams.get_mut(&stream).expect("inserted above"))
}

fn object_id(
    tx: &Transaction<'_>,
    objects: &mut ObjectIds,
    stream: StreamId,
    meta: &ObjectMeta,
) -> rusqlite::Result<i64> {
    if let Some(id) = objects.get(stream, &meta.namespace, &meta.name) {
        return Ok(id);
    }
    tx.prepare_cached(
        "INSERT OR IGNORE INTO objects(stream_id, namespace, name) VALUES (?1, ?2, ?3)",
    )?
    .execute(params![stream, meta.namespace, meta.name])?;
    let id: i64 = tx
        .prepare_cached(
            "SELECT id FROM objects WHERE stream_id = ?1 AND namespace = ?2 AND name = ?3",
        )?
        .query_row(params![stream, meta.namespace, meta.name], |r| r.get(0))?;
    objects.insert(stream, &meta.namespace, &meta.name, id);
    Ok(id)
}

/// Object ids by stream, namespace and name, found without building a key
/// for each event (cloning both names took a fiftieth of the writer's time on
/// W-wide).
#[derive(Default)]
struct ObjectIds(IdMap<StreamId, HashMap<String, HashMap<String, i64>>>);

impl ObjectIds {
    fn get(&self, stream: StreamId, namespace: &str, name: &str) -> Option<i64> {
        self.0.get(&stream)?.get(namespace)?.get(name).copied()
    }

    fn insert(&mut self, stream: StreamId, namespace: &str, name: &str, id: i64) {
        self.0
            .entry(stream)
            .or_default()
            .entry(namespace.to_string())
            .or_default()
            .insert(name.to_string(), id);
    }

    fn remove(&mut self, stream: StreamId, namespace: &str, name: &str) {
        if let Some(names) = self.0.get_mut(&stream).and_then(|n| n.get_mut(namespace)) {
            names.remove(name);
        }
    }

    /// Keeps the objects whose id `keep` says yes to.
    fn retain(&mut self, mut keep: impl FnMut(i64) -> bool) {
        for names in self.0.values_mut().flat_map(|n| n.values_mut()) {
            names.retain(|_, id| keep(*id));
        }
    }

    /// The ids of a stream's objects (a copy: the caller goes on writing).
    fn of(&self, stream: StreamId) -> Vec<i64> {
        self.0
            .get(&stream)
            .into_iter()
            .flat_map(|n| n.values())
            .flat_map(|names| names.values().copied())
            .collect()
    }
}

/// Whether a transaction of `ops` (with `bytes` of bodies) waits out the
/// commit window for more. A flush is waited on: it is committed at once. So
/// is a batch big enough already: under load the queue refills
/// while a transaction commits, and waiting out the window on top would cap
/// how fast the writer goes.
fn waits_for_more(ops: &[Op], bytes: usize) -> bool {
    let urgent = ops.iter().any(|op| matches!(op, Op::Flush(_)));
    let enough = ops.len() >= BATCH_ENOUGH || bytes >= MAX_BATCH_BYTES / 8;
    !urgent && !enough
}

/// How often a transaction that waits for more ops takes those queued.
const GATHER_STEP: std::time::Duration = std::time::Duration::from_millis(1);

/// Takes the ops queued into `batch`, and while it [`waits_for_more`], those
/// that arrive within `window`, as they arrive: a batch is begun as soon as
/// it is big enough, and the queue never stays full while the writer waits.
/// Sleeping out the whole window instead, when a busy stream's queue was
/// momentarily short, made the stream wait on a full queue for most of it
/// (docs/journal.md, "Where the recorder's time goes"). At most one step
/// of [`GATHER_STEP`] after the window.
fn gather(
    rx: &mut tokio::sync::mpsc::Receiver<Op>,
    batch: &mut Vec<Op>,
    bytes: &mut usize,
    window: std::time::Duration,
) {
    let deadline = std::time::Instant::now() + window;
    loop {
        take_waiting(rx, batch, bytes);
        let now = std::time::Instant::now();
        if !waits_for_more(batch, *bytes) || rx.is_closed() || now >= deadline {
            return;
        }
        std::thread::sleep(GATHER_STEP.min(deadline - now));
    }
}

/// Moves the ops already queued into `batch`, up to [`MAX_BATCH`] ops or
/// [`MAX_BATCH_BYTES`] of bodies, counting their bytes into `bytes`.
fn take_waiting(rx: &mut tokio::sync::mpsc::Receiver<Op>, batch: &mut Vec<Op>, bytes: &mut usize) {
    while batch.len() < MAX_BATCH && *bytes < MAX_BATCH_BYTES {
        match rx.try_recv() {
            Ok(op) => {
                *bytes += op.body_len();
                batch.push(op);
            }
            Err(_) => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::read::StreamState;
    use crate::model::{ResourceType, StreamSpec};
    use std::collections::HashSet;

    fn cm_spec() -> StreamSpec {
        StreamSpec {
            resource: ResourceType {
                group: String::new(),
                version: "v1".into(),
                resource: "configmaps".into(),
                kind: "ConfigMap".into(),
                singular: "configmap".into(),
                short_names: vec!["cm".into()],
                namespaced: true,
            },
            namespace: Some("shop".into()),
            selector: None,
        }
    }

    fn meta(name: &str, rv: &str) -> ObjectMeta {
        ObjectMeta {
            namespace: "shop".into(),
            name: name.into(),
            uid: format!("uid-{name}"),
            resource_version: rv.into(),
            diff_digest: None,
            given_mark: None,
        }
    }

    fn body(name: &str, rv: &str, value: &str) -> Vec<u8> {
        format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}","namespace":"shop","resourceVersion":"{rv}","x-unknown":{{"kept":true}}}},"data":{{"key":"{value}","other":"{}"}}}}"#,
            "filler ".repeat(40)
        )
        .into_bytes()
    }

    /// The checkpoints of `stream`, in journal order: (observed_at, rv, reason).
    fn checkpoints(journal: &Journal, stream: StreamId) -> Vec<(i64, String, String)> {
        journal
            .conn()
            .prepare(&format!(
                "SELECT observed_at, resource_version, info FROM records
                 WHERE stream_id = ?1 AND kind = {} ORDER BY seq",
                kind::CHECKPOINT
            ))
            .unwrap()
            .query_map(params![stream], |r| {
                let info: String = r.get(2)?;
                let info: CheckpointInfo = serde_json::from_str(&info).unwrap();
                Ok((r.get(0)?, r.get(1)?, format!("{:?}", info.reason)))
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    /// A writer on a new journal (`journal.db` in the directory) of one
    /// ConfigMap stream, run on the test's thread.
    fn writer_of_one_stream() -> (tempfile::TempDir, StreamId, WriterState) {
        writer_of_one_stream_packing(true)
    }

    /// [`writer_of_one_stream`], packing or not as it writes.
    fn writer_of_one_stream_packing(pack: bool) -> (tempfile::TempDir, StreamId, WriterState) {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::open_or_create(&dir.path().join("journal.db")).unwrap();
        journal.register_cluster("c1", "https://x", None).unwrap();
        let stream = journal.register_stream("c1", &cm_spec()).unwrap();
        let state = WriterState::new(journal, Arc::new(WriterStats::default()), pack).unwrap();
        (dir, stream, state)
    }

    #[test]
    fn ops_that_arrive_while_a_batch_is_written_join_its_transaction_until_a_flush() {
        let (dir, stream, mut state) = writer_of_one_stream();
        let path = dir.path().join("journal.db");
        let stats = state.stats.clone();
        // Not cut by time, however slow the test's build.
        state.tx_time = std::time::Duration::from_secs(3600);
        let event = |i: usize| Op::Event {
            stream,
            at: 1_000 + i as i64,
            watch_type: WatchType::Modified,
            meta: meta(&format!("o{}", i % 50), &(10 + i).to_string()),
            body: body(&format!("o{}", i % 50), &(10 + i).to_string(), "v"),
        };
        let waiting = 2 * MAX_BATCH + 10;
        let (tx, mut rx) = tokio::sync::mpsc::channel(waiting + 2 * MAX_BATCH);
        for i in 0..waiting {
            tx.try_send(event(i)).unwrap();
        }
        let (ack, acked) = std::sync::mpsc::sync_channel(1);
        tx.try_send(Op::Flush(ack)).unwrap();
        // Taken with the flush's batch, after it: that batch ends the
        // transaction.
        tx.try_send(event(waiting)).unwrap();
        // Another batch's worth: it waits for the next transaction.
        for i in waiting + 1..waiting + 1 + MAX_BATCH {
            tx.try_send(event(i)).unwrap();
        }
        let mut batch = Vec::new();
        let mut bytes = 0;
        take_waiting(&mut rx, &mut batch, &mut bytes);
        assert_eq!(batch.len(), MAX_BATCH);
        state.commit(&mut batch, Some(&mut rx)).unwrap();
        // Every event of the batches up to the flush's, in one commit; the
        // flush answered; the rest waits for the next transaction.
        assert_eq!(*stats.commits.lock().unwrap(), 1);
        acked
            .try_recv()
            .expect("the flush is answered at the commit");
        let events: i64 = Journal::open(&path)
            .unwrap()
            .conn()
            .query_row("SELECT count(*) FROM records WHERE kind = 1", [], |r| {
                r.get(0)
            })
            .unwrap();
        let left = std::iter::from_fn(|| rx.try_recv().ok()).count();
        assert_eq!(events as usize + left, waiting + 1 + MAX_BATCH);
        assert!(events as usize > waiting, "{events} written");
        assert!(left > 0, "nothing left for the next transaction");
    }

    #[test]
    fn a_transaction_ends_with_a_checkpoint_true_to_its_time() {
        let (dir, stream, mut state) = writer_of_one_stream();
        let path = dir.path().join("journal.db");
        let event = |at: i64, rv: &str| Op::Event {
            stream,
            at,
            watch_type: WatchType::Modified,
            meta: meta("a", rv),
            body: body("a", rv, rv),
        };
        // Events, then a stop, committed together (Ctrl-C right after an event): the
        // stop is the last word, not an event checkpoint claiming its rv earlier.
        let mut batch = vec![
            event(1_000, "10"),
            Op::Checkpoint {
                stream,
                at: 2_000,
                rv: "12".into(),
                reason: CheckpointReason::Stop,
            },
        ];
        state.commit(&mut batch, None).unwrap();
        // Events, then a relist's baseline, together: the baseline is the last durable
        // point; an event after it gets a checkpoint with its own rv and time.
        let mut batch = vec![
            event(3_000, "13"),
            Op::BaselineEnd {
                stream,
                at: 3_500,
                list_rv: "20".into(),
                items: 0,
            },
            event(4_000, "21"),
        ];
        state.commit(&mut batch, None).unwrap();
        let reopened = Journal::open(&path).unwrap();
        assert_eq!(
            checkpoints(&reopened, stream),
            vec![
                (2_000, "12".into(), "Stop".into()),
                (4_000, "21".into(), "Event".into()),
            ]
        );
    }

    #[test]
    fn events_are_deduplicated_and_bodies_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.db");
        let journal = Journal::open_or_create(&path).unwrap();
        journal
            .register_cluster("c1", "https://x", Some("ctx"))
            .unwrap();
        let stream = journal.register_stream("c1", &cm_spec()).unwrap();
        let writer = Writer::start(journal).unwrap();
        let tx = writer.sender();
        let v1 = body("a", "10", "one");
        let v2 = body("a", "11", "two");
        let ops = vec![
            Op::BaselineItem {
                stream,
                at: 1000,
                meta: meta("a", "10"),
                body: v1.clone(),
            },
            Op::BaselineEnd {
                stream,
                at: 1000,
                list_rv: "10".into(),
                items: 1,
            },
            Op::Event {
                stream,
                at: 1001,
                watch_type: WatchType::Modified,
                meta: meta("a", "11"),
                body: v2.clone(),
            },
            // Redelivered after a reconnect: dropped.
            Op::Event {
                stream,
                at: 1002,
                watch_type: WatchType::Modified,
                meta: meta("a", "11"),
                body: v2.clone(),
            },
            Op::Checkpoint {
                stream,
                at: 1003,
                rv: "12".into(),
                reason: CheckpointReason::Bookmark,
            },
            // A relist that saw the unchanged object: a new record, the same body.
            Op::BaselineItem {
                stream,
                at: 1004,
                meta: meta("a", "11"),
                body: v2.clone(),
            },
            Op::BaselineEnd {
                stream,
                at: 1004,
                list_rv: "12".into(),
                items: 1,
            },
        ];
        for op in ops {
            tx.blocking_send(op).unwrap();
        }
        drop(tx);
        let stats = writer.stats();
        writer.finish().unwrap();
        let totals = stats.streams.lock().unwrap()[&stream].clone();
        assert_eq!(totals.events, 1);
        assert_eq!(totals.duplicates, 1);
        assert_eq!(totals.baselines, 2);

        let reader = Journal::open(&path).unwrap();
        let records = reader.all_records().unwrap();
        let kinds: Vec<i64> = records.iter().map(|r| r.kind).collect();
        // One transaction: the second baseline is its last durable point, so no
        // events' checkpoint follows it claiming an older resourceVersion later.
        assert_eq!(
            kinds,
            vec![
                kind::BASELINE_ITEM,
                kind::BASELINE,
                kind::EVENT,
                kind::CHECKPOINT, // the bookmark
                kind::BASELINE_ITEM,
                kind::BASELINE,
            ]
        );
        assert_eq!(records[5].resource_version.as_deref(), Some("12"));
        let event = records.iter().find(|r| r.kind == kind::EVENT).unwrap();
        assert_eq!(event.body.as_deref(), Some(&v2[..]));
        let items: Vec<_> = records
            .iter()
            .filter(|r| r.kind == kind::BASELINE_ITEM)
            .collect();
        assert_eq!(items[0].body.as_deref(), Some(&v1[..]));
        assert_eq!(items[1].body.as_deref(), Some(&v2[..]));
        let bodies: i64 = reader
            .conn()
            .query_row("SELECT count(*) FROM bodies", [], |r| r.get(0))
            .unwrap();
        assert_eq!(bodies, 2, "the unchanged body is stored once");

        let streams = reader.streams(Some("c1")).unwrap();
        let cov = reader.coverage(&streams[0], 1005, false).unwrap();
        assert_eq!(cov.from, Some(1000));
        assert_eq!(cov.to, Some(1004));
        assert_eq!(cov.events, 1);
        assert_eq!(cov.last_rv.as_deref(), Some("12"));
        assert!(cov.complete());
        assert_eq!(cov.state, StreamState::Stopped);
    }

    /// A new journal with one cluster and its ConfigMap stream, closed again.
    fn configmap_stream() -> (tempfile::TempDir, StreamId) {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::open_or_create(&dir.path().join("journal.db")).unwrap();
        journal.register_cluster("c1", "https://x", None).unwrap();
        let stream = journal.register_stream("c1", &cm_spec()).unwrap();
        (dir, stream)
    }

    /// The body row of each event record, in journal order.
    fn event_bodies(journal: &Journal) -> Vec<i64> {
        journal
            .conn()
            .prepare(&format!(
                "SELECT body_id FROM records WHERE kind = {} ORDER BY seq",
                kind::EVENT
            ))
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    /// Writes `ops` with packs, as recorders before blocks did: what most
    /// of these tests are about.
    fn write_all(path: &std::path::Path, ops: Vec<Op>) -> StreamTotals {
        write_all_packing(path, ops, true)
    }

    /// [`write_all`], packing or not.
    fn write_all_packing(path: &std::path::Path, ops: Vec<Op>, pack: bool) -> StreamTotals {
        let journal = Journal::open_or_create(path).unwrap();
        let stream = journal.register_stream("c1", &cm_spec()).unwrap();
        let options = WriterOptions {
            pack,
            ..WriterOptions::default()
        };
        let writer = Writer::start_with(journal, options).unwrap();
        let tx = writer.sender();
        for op in ops {
            tx.blocking_send(op).unwrap();
        }
        drop(tx);
        let stats = writer.stats();
        writer.finish().unwrap();
        stats.streams.lock().unwrap()[&stream].clone()
    }

    fn event(stream: StreamId, at: i64, name: &str, rv: &str) -> Op {
        Op::Event {
            stream,
            at,
            watch_type: WatchType::Modified,
            meta: meta(name, rv),
            body: body(name, rv, rv),
        }
    }

    #[test]
    fn a_transaction_begins_as_soon_as_enough_ops_arrive_within_its_window() {
        let (_dir, stream) = configmap_stream();
        let (tx, mut rx) = tokio::sync::mpsc::channel(QUEUE);
        let (done, finished) = std::sync::mpsc::sync_channel::<()>(1);
        let send = move |tx: &tokio::sync::mpsc::Sender<Op>, ops: std::ops::Range<usize>| {
            for i in ops {
                tx.blocking_send(event(stream, i as i64, "cm", &(i + 1).to_string()))
                    .unwrap();
            }
        };
        let sender = std::thread::spawn(move || {
            send(&tx, 0..BATCH_ENOUGH / 2);
            // The rest once the writer has taken the first half, so that
            // it arrives while the writer waits for more.
            let taken = (0..60_000).any(|_| {
                let all = tx.capacity() == tx.max_capacity();
                if !all {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                all
            });
            assert!(taken, "the writer took nothing for a minute");
            send(&tx, BATCH_ENOUGH / 2..BATCH_ENOUGH);
            // The channel stays open until the test is done with it, or
            // far longer than it needs.
            let _ = finished.recv_timeout(std::time::Duration::from_secs(60));
        });
        let (mut batch, mut bytes) = (Vec::new(), 0);
        batch.extend(rx.blocking_recv());
        // A window far longer than the test may take: gathering must end
        // because enough arrived, not because the window did.
        gather(
            &mut rx,
            &mut batch,
            &mut bytes,
            std::time::Duration::from_secs(90),
        );
        assert_eq!(batch.len(), BATCH_ENOUGH);
        assert!(!rx.is_closed(), "gathered until the sender gave up");
        done.send(()).unwrap();
        sender.join().unwrap();
        // A closed channel ends the wait at once, with what came.
        let mut batch = Vec::new();
        gather(
            &mut rx,
            &mut batch,
            &mut bytes,
            std::time::Duration::from_secs(90),
        );
        assert!(batch.is_empty());
    }

    #[test]
    fn a_transaction_waits_for_more_only_when_it_has_little() {
        let (_dir, stream) = configmap_stream();
        let events = |n: usize| -> Vec<Op> {
            (0..n)
                .map(|i| event(stream, i as i64, "cm", &i.to_string()))
                .collect()
        };
        let bytes = |ops: &[Op]| ops.iter().map(Op::body_len).sum::<usize>();
        let one = events(1);
        assert!(waits_for_more(&one, bytes(&one)));
        let few = events(BATCH_ENOUGH - 1);
        assert!(waits_for_more(&few, bytes(&few)));
        // Under load: what queued while the last transaction committed.
        let many = events(BATCH_ENOUGH);
        assert!(!waits_for_more(&many, bytes(&many)));
        // One large object is a batch big enough.
        assert!(!waits_for_more(&one, MAX_BATCH_BYTES / 8));
        // A flush is waited on.
        let (ack, _) = std::sync::mpsc::sync_channel(1);
        let mut flushed = events(1);
        flushed.push(Op::Flush(ack));
        assert!(!waits_for_more(&flushed, bytes(&flushed)));
    }

    #[test]
    fn a_redelivery_after_a_restart_is_found_in_the_journal() {
        let (dir, stream) = configmap_stream();
        let path = dir.path().join("journal.db");
        let first = write_all(
            &path,
            vec![
                event(stream, 1, "a", "10"),
                event(stream, 2, "a", "11"),
                // resourceVersions that are not numbers are compared in the journal.
                event(stream, 3, "b", "x-1"),
                event(stream, 4, "b", "x-1"),
            ],
        );
        assert_eq!((first.events, first.duplicates), (3, 1));
        // A new writer knows nothing in memory: a resumed watch redelivers.
        let second = write_all(
            &path,
            vec![
                event(stream, 5, "a", "10"),
                event(stream, 6, "a", "11"),
                event(stream, 7, "a", "12"),
                event(stream, 8, "b", "x-1"),
                event(stream, 9, "b", "x-2"),
            ],
        );
        assert_eq!((second.events, second.duplicates), (2, 3));
        let reader = Journal::open(&path).unwrap();
        let rvs: Vec<String> = reader
            .all_records()
            .unwrap()
            .into_iter()
            .filter(|r| r.kind == kind::EVENT)
            .map(|r| r.resource_version.unwrap())
            .collect();
        assert_eq!(rvs, ["10", "11", "x-1", "12", "x-2"]);
    }

    #[test]
    fn a_stream_trains_its_dictionary_and_every_body_comes_back_exact() {
        use crate::journal::bodies::TRAIN_SAMPLES;
        let (dir, stream) = configmap_stream();
        let path = dir.path().join("journal.db");
        let n = TRAIN_SAMPLES + 100;
        let mut ops: Vec<Op> = (0..n)
            .map(|i| {
                let name = format!("cm-{i}");
                Op::BaselineItem {
                    stream,
                    at: 1,
                    meta: meta(&name, &format!("{}", 10 + i)),
                    body: body(&name, &format!("{}", 10 + i), &format!("value {i}")),
                }
            })
            .collect();
        ops.push(Op::BaselineEnd {
            stream,
            at: 1,
            list_rv: "5000".into(),
            items: n as u64,
        });
        // Later versions of objects stored before and after the training.
        for i in [0, 1, n - 2, n - 1] {
            ops.push(event(
                stream,
                2,
                &format!("cm-{i}"),
                &format!("{}", 6000 + i),
            ));
        }
        write_all(&path, ops);
        let reader = Journal::open(&path).unwrap();
        let (dicts, with_dict): (i64, i64) = reader
            .conn()
            .query_row(
                "SELECT (SELECT count(*) FROM dicts),
                        (SELECT count(*) FROM bodies WHERE dict_id IS NOT NULL)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!(dicts, 1);
        assert!(with_dict >= 90, "{with_dict} keyframes use the dictionary");
        let mut checked = 0;
        for r in reader.all_records().unwrap() {
            let (Some(got), Some(rv)) = (r.body, r.resource_version) else {
                continue;
            };
            let name = r.name.unwrap();
            let value = match rv.parse::<usize>().unwrap() {
                v if v >= 6000 => rv.clone(),
                v => format!("value {}", v - 10),
            };
            assert_eq!(got, body(&name, &rv, &value), "{name} at {rv}");
            checked += 1;
        }
        assert_eq!(checked, n + 4);
    }

    #[test]
    fn zones_cover_every_object_record_and_answer_windows_as_a_scan_does() {
        use crate::journal::zones::ZONE_RECORDS;
        let (dir, stream) = configmap_stream();
        let path = dir.path().join("journal.db");
        // Small transactions and large ones (several zones), in three runs.
        let n = ZONE_RECORDS as usize + 600;
        for run in 0..3_usize {
            let journal = Journal::open_or_create(&path).unwrap();
            let options = WriterOptions {
                commit_window: if run == 1 {
                    std::time::Duration::ZERO
                } else {
                    COMMIT_WINDOW
                },
                ..WriterOptions::default()
            };
            let writer = Writer::start_with(journal, options).unwrap();
            let tx = writer.sender();
            for i in 0..n {
                // Times wander back and forth a little, as clocks do.
                let at = (run * n + i) as i64 * 10 - (i % 3) as i64 * 25;
                let name = format!("cm-{}", i % 700);
                tx.blocking_send(event(stream, at, &name, &(run * n + i + 10).to_string()))
                    .unwrap();
                if i % 997 == 0 {
                    let (ack, done) = std::sync::mpsc::sync_channel(1);
                    tx.blocking_send(Op::Flush(ack)).unwrap();
                    done.recv().unwrap();
                }
            }
            drop(tx);
            writer.finish().unwrap();
        }
        let reader = Journal::open(&path).unwrap();
        let conn = reader.conn();
        let uncovered: i64 = conn
            .query_row(
                "SELECT count(*) FROM records r WHERE r.object_id IS NOT NULL AND NOT EXISTS
                    (SELECT 1 FROM zones z WHERE r.seq BETWEEN z.first_seq AND z.last_seq
                        AND r.observed_at BETWEEN z.min_at AND z.max_at)",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(uncovered, 0);
        let (zones, biggest): (i64, i64) = conn
            .query_row("SELECT count(*), max(records) FROM zones", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        assert!(zones >= 3 && biggest <= ZONE_RECORDS, "{zones} zones");
        let ids: crate::journal::IdSet<_> = [stream].into_iter().collect();
        let total = (3 * n) as i64 * 10;
        for (after, until) in [
            (0, total),
            (995, 1_005),
            (4_000, 60_000),
            (-50, 3),
            (total, total + 99),
        ] {
            let scanned: HashSet<i64> = conn
                .prepare(
                    "SELECT object_id FROM records WHERE object_id IS NOT NULL
                        AND observed_at > ?1 AND observed_at <= ?2",
                )
                .unwrap()
                .query_map(params![after, until], |r| r.get(0))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            let found = reader.touched_objects(&ids, after, until).unwrap();
            assert_eq!(found, scanned, "window ({after}, {until}]");
        }
    }

    #[test]
    fn older_versions_are_packed_and_every_version_comes_back_exact() {
        use crate::journal::bodies::{FIRST_PACK_VERSIONS, HOT_VERSIONS, PACK_VERSIONS};
        use crate::journal::versions::Decoder;
        let (dir, stream) = configmap_stream();
        let path = dir.path().join("journal.db");
        let n = 1 + FIRST_PACK_VERSIONS + 2 * PACK_VERSIONS + HOT_VERSIONS + 2;
        let ops = (0..n)
            .map(|i| event(stream, i as i64, "a", &format!("{}", 100 + i)))
            .collect();
        write_all(&path, ops);
        let reader = Journal::open(&path).unwrap();
        let (packs, packed): (i64, i64) = reader
            .conn()
            .query_row(
                &format!(
                    "SELECT (SELECT count(*) FROM packs),
                            (SELECT count(*) FROM bodies WHERE pack_ref > {})",
                    crate::journal::schema::PACKED
                ),
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!(packs, 3);
        assert_eq!(packed, (FIRST_PACK_VERSIONS + 2 * PACK_VERSIONS) as i64);
        let waiting: i64 = reader
            .conn()
            .query_row("SELECT count(*) FROM waiting", [], |r| r.get(0))
            .unwrap();
        // The first version is the keyframe; the deltas after it wait in
        // `waiting` until packed, and the latest ones are still waiting.
        assert_eq!(waiting, (HOT_VERSIONS + 2) as i64);
        // Each delta took a slot a packed one freed, when there was one: no
        // more slots than ever waited at once.
        let most: i64 = reader
            .conn()
            .query_row("SELECT max(slot) FROM waiting", [], |r| r.get(0))
            .unwrap();
        assert!(most < (PACK_VERSIONS + HOT_VERSIONS) as i64, "{most}");
        let mut decoder = Decoder::default();
        let records: Vec<_> = reader
            .all_records()
            .unwrap()
            .into_iter()
            .filter(|r| r.kind == kind::EVENT)
            .collect();
        assert_eq!(records.len(), n);
        let ids = event_bodies(&reader);
        for (r, id) in records.iter().zip(ids) {
            let rv = r.resource_version.clone().unwrap();
            let want = body("a", &rv, &rv);
            assert_eq!(r.body.as_deref(), Some(&want[..]), "read at {rv}");
            let stored = reader.stored_body(id, None).unwrap();
            assert_eq!(decoder.decode(&stored).unwrap(), want, "decoded at {rv}");
        }
    }

    #[test]
    fn deltas_a_run_left_waiting_are_packed_by_the_next() {
        use crate::journal::bodies::FIRST_PACK_VERSIONS;
        use crate::journal::versions::Decoder;
        let (dir, stream) = configmap_stream();
        let path = dir.path().join("journal.db");
        let version = |i: usize| event(stream, i as i64, "a", &format!("{}", 100 + i));
        // The keyframe and two deltas; then, in the next run, three more: five
        // wait, and the oldest four are packed, two of them the first run's.
        write_all(&path, (0..3).map(version).collect());
        write_all(&path, (3..6).map(version).collect());
        let reader = Journal::open(&path).unwrap();
        let count = |sql: &str| -> i64 { reader.conn().query_row(sql, [], |r| r.get(0)).unwrap() };
        assert_eq!(count("SELECT count(*) FROM packs"), 1);
        assert_eq!(
            count("SELECT count(*) FROM waiting"),
            (5 - FIRST_PACK_VERSIONS) as i64
        );
        let mut decoder = Decoder::default();
        let ids = event_bodies(&reader);
        assert_eq!(ids.len(), 6);
        for (i, id) in ids.into_iter().enumerate() {
            let rv = format!("{}", 100 + i);
            let stored = reader.stored_body(id, None).unwrap();
            assert_eq!(
                decoder.decode(&stored).unwrap(),
                body("a", &rv, &rv),
                "version {i}"
            );
        }
    }

    /// A version of ConfigMap `name` with 600 characters of its own that no
    /// dictionary knows: its keyframe takes more than
    /// [`crate::journal::bodies::SMALL_KEYFRAME_BYTES`].
    fn large_body(name: &str, rv: &str) -> Vec<u8> {
        let seed = name.bytes().map(u64::from).sum();
        body(name, rv, &format!("{rv}{}", noise(seed, 600)))
    }

    fn large_event(stream: StreamId, at: i64, name: &str, rv: &str) -> Op {
        Op::Event {
            stream,
            at,
            watch_type: WatchType::Modified,
            meta: meta(name, rv),
            body: large_body(name, rv),
        }
    }

    /// Each event's body row: (its keyframe's row when it is a delta, the
    /// bytes it takes), by object name, in journal order.
    fn event_rows(journal: &Journal, name: &str) -> Vec<(Option<i64>, i64)> {
        journal
            .conn()
            .prepare(&format!(
                "SELECT b.base_id, length(b.data) FROM records r
                 JOIN objects o ON o.id = r.object_id JOIN bodies b ON b.id = r.body_id
                 WHERE r.kind = {} AND o.name = ?1 ORDER BY r.seq",
                kind::EVENT
            ))
            .unwrap()
            .query_map([name], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    #[test]
    fn a_recorder_keyframes_again_a_small_object_whose_keyframe_is_not_at_hand() {
        use crate::journal::bodies::SMALL_KEYFRAME_BYTES;
        use crate::journal::versions::Decoder;
        // 10,000 small objects changed once each, in turn: by the time one
        // changes again, 10,000 versions later, its keyframe is no longer
        // among the 2 MiB the writer keeps decoded (as on W-wide). One hot
        // object changes every 250 versions, and one large object every
        // 1,000.
        const MANY: usize = 10_000;
        let name_of = |k: usize| format!("m-{k}");
        for pack in [false, true] {
            let (dir, stream) = configmap_stream();
            let path = dir.path().join("journal.db");
            let mut ops = Vec::new();
            let mut hot = 0;
            let mut large = 0;
            for i in 0..2 * MANY {
                let (k, rv) = (i % MANY, format!("{}", 100 + i / MANY));
                ops.push(event(stream, ops.len() as i64, &name_of(k), &rv));
                if i % 250 == 0 {
                    ops.push(event(
                        stream,
                        ops.len() as i64,
                        "hot",
                        &format!("{}", 100 + hot),
                    ));
                    hot += 1;
                }
                if i % 1_000 == 0 {
                    let rv = format!("{}", 100 + large);
                    ops.push(large_event(stream, ops.len() as i64, "large", &rv));
                    large += 1;
                }
            }
            write_all_packing(&path, ops, pack);
            let journal = Journal::open(&path).unwrap();
            let deltas = |rows: &[(Option<i64>, i64)]| rows[1..].iter().all(|(b, _)| b.is_some());
            // A large keyframe is worth a delta, and so is one decoded at
            // hand; a small one no longer decoded is made again by a
            // recorder (it does not pack), and is a delta's base for
            // `import` (it does).
            let (hot, large) = (event_rows(&journal, "hot"), event_rows(&journal, "large"));
            assert!(large[0].0.is_none() && large[0].1 > SMALL_KEYFRAME_BYTES as i64);
            assert!(deltas(&large), "{large:?}");
            assert!(deltas(&hot), "{hot:?}");
            for k in [0, 1, MANY / 2, MANY - 1] {
                let rows = event_rows(&journal, &name_of(k));
                assert_eq!(rows.len(), 2);
                assert!(rows[0].0.is_none() && rows[0].1 <= SMALL_KEYFRAME_BYTES as i64);
                assert_eq!(rows[1].0.is_some(), pack, "packing {pack}, {k}: {rows:?}");
            }
            let again: i64 = journal
                .conn()
                .query_row(
                    "SELECT count(*) FROM bodies WHERE base_id IS NULL",
                    [],
                    |r| r.get(0),
                )
                .unwrap();
            let keyframes = 2 + MANY as i64 * if pack { 1 } else { 2 };
            assert_eq!(again, keyframes, "packing {pack}");
            let mut decoder = Decoder::default();
            let mut hot = 0;
            let mut large = 0;
            let ids = event_bodies(&journal);
            let mut ids = ids.into_iter();
            for i in 0..2 * MANY {
                let (k, rv) = (i % MANY, format!("{}", 100 + i / MANY));
                let mut expect = vec![body(&name_of(k), &rv, &rv)];
                if i % 250 == 0 {
                    let rv = format!("{}", 100 + hot);
                    expect.push(body("hot", &rv, &rv));
                    hot += 1;
                }
                if i % 1_000 == 0 {
                    expect.push(large_body("large", &format!("{}", 100 + large)));
                    large += 1;
                }
                for want in expect {
                    let stored = journal.stored_body(ids.next().unwrap(), None).unwrap();
                    assert_eq!(decoder.decode(&stored).unwrap(), want, "event {i}");
                }
            }
        }
    }

    #[test]
    fn a_run_that_does_not_pack_goes_on_from_one_that_did_and_every_version_comes_back() {
        use crate::journal::versions::Decoder;
        let (dir, stream) = configmap_stream();
        let path = dir.path().join("journal.db");
        // Large versions: a run that does not pack makes deltas of them.
        let version = |i: usize| large_event(stream, i as i64, "a", &format!("{}", 100 + i));
        // A recorder from before blocks packs and leaves deltas waiting; the
        // next one does not pack, and its deltas are against the same
        // keyframe; then a stop folds it all.
        write_all_packing(&path, (0..8).map(version).collect(), true);
        let reader = Journal::open(&path).unwrap();
        let count =
            |j: &Journal, sql: &str| -> i64 { j.conn().query_row(sql, [], |r| r.get(0)).unwrap() };
        let (packs, waiting) = (
            count(&reader, "SELECT count(*) FROM packs"),
            count(&reader, "SELECT count(*) FROM waiting"),
        );
        assert!(packs > 0 && waiting > 0, "{packs} packs, {waiting} waiting");
        drop(reader);
        write_all_packing(&path, (8..14).map(version).collect(), false);
        let check = |j: &Journal| {
            let mut decoder = Decoder::default();
            let ids = event_bodies(j);
            assert_eq!(ids.len(), 14);
            for (i, id) in ids.into_iter().enumerate() {
                let rv = format!("{}", 100 + i);
                let stored = j.stored_body(id, None).unwrap();
                assert_eq!(
                    decoder.decode(&stored).unwrap(),
                    large_body("a", &rv),
                    "version {i}"
                );
            }
        };
        let reader = Journal::open(&path).unwrap();
        // The second run packed nothing and left the first run's as they were;
        // its versions are deltas against the first run's keyframe.
        assert_eq!(count(&reader, "SELECT count(*) FROM packs"), packs);
        assert_eq!(count(&reader, "SELECT count(*) FROM waiting"), waiting);
        let (rows, first) = (event_rows(&reader, "a"), event_bodies(&reader)[0]);
        assert!(
            rows[8..].iter().all(|(base, _)| *base == Some(first)),
            "{rows:?}"
        );
        check(&reader);
        let before = every_version(&reader);
        let object: i64 = count(&reader, "SELECT id FROM objects");
        reader.fold_object(object, i64::MAX).unwrap();
        assert_eq!(first_difference(&every_version(&reader), &before), None);
        for table in ["packs", "waiting"] {
            assert_eq!(
                count(&reader, &format!("SELECT count(*) FROM {table}")),
                0,
                "{table}"
            );
        }
    }

    #[test]
    fn slots_freed_by_packing_in_one_run_are_taken_by_the_next() {
        use crate::journal::bodies::{FIRST_PACK_VERSIONS, HOT_VERSIONS, PACK_VERSIONS};
        let (dir, stream) = configmap_stream();
        let path = dir.path().join("journal.db");
        let versions = |name: &str, n: usize| -> Vec<Op> {
            (0..n)
                .map(|i| event(stream, i as i64, name, &format!("{}", 100 + i)))
                .collect()
        };
        let slots = || -> (i64, i64) {
            Journal::open(&path)
                .unwrap()
                .conn()
                .query_row("SELECT max(slot), count(*) FROM waiting", [], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .unwrap()
        };
        // 17 deltas wait at most, then 16 are packed: 14 slots end free.
        write_all(
            &path,
            versions("a", 1 + FIRST_PACK_VERSIONS + PACK_VERSIONS + 3),
        );
        let (last, taken) = slots();
        assert_eq!(taken, (HOT_VERSIONS + 2) as i64);
        assert!(last + 1 - taken >= 5, "holes were left: {last} {taken}");
        // The next run's five deltas go into those holes.
        write_all(&path, versions("b", 1 + FIRST_PACK_VERSIONS + HOT_VERSIONS));
        let (after, now) = slots();
        assert_eq!(now, taken + HOT_VERSIONS as i64);
        assert_eq!(after, last, "no slot after the last was needed");
    }

    #[test]
    fn retention_takes_a_deleted_deltas_waiting_bytes_and_keeps_the_rest_exact() {
        use crate::journal::versions::Decoder;
        let (dir, stream) = configmap_stream();
        let path = dir.path().join("journal.db");
        // The keyframe and three deltas, all waiting (fewer than a pack).
        write_all(
            &path,
            (0..4)
                .map(|i| event(stream, i, "a", &format!("{}", 100 + i)))
                .collect(),
        );
        let journal = Journal::open(&path).unwrap();
        let ids = event_bodies(&journal);
        let waiting = |j: &Journal| -> i64 {
            j.conn()
                .query_row("SELECT count(*) FROM waiting", [], |r| r.get(0))
                .unwrap()
        };
        assert_eq!(waiting(&journal), 3);
        let object: i64 = journal
            .conn()
            .query_row("SELECT id FROM objects WHERE name = 'a'", [], |r| r.get(0))
            .unwrap();
        // Cut at the third version: it becomes the baseline's item, so the
        // first delta (version 1) has nothing left that reads it.
        let seq: i64 = journal
            .conn()
            .query_row(
                "SELECT seq FROM records WHERE body_id = ?1",
                [ids[2]],
                |r| r.get(0),
            )
            .unwrap();
        let cut = crate::journal::prune::StreamCut {
            stream,
            cut: 2,
            items: vec![crate::journal::prune::CutItem {
                object,
                body: ids[2],
                resource_version: "102".into(),
                seq,
            }],
            list_rv: "102".into(),
        };
        let mut job = super::super::retain::RetainJob::new(cut);
        let mut bodies = BodyStore::new(path.clone(), true);
        let mut conn = rusqlite::Connection::open(&path).unwrap();
        conn.pragma_update(None, "foreign_keys", false).unwrap();
        for _ in 0..16 {
            let tx = conn.transaction().unwrap();
            let done = job.step(&tx, &path, &mut bodies).unwrap().done;
            tx.commit().unwrap();
            if done {
                break;
            }
        }
        conn.pragma_update(None, "foreign_keys", true).unwrap();
        drop(conn);
        let journal = Journal::open(&path).unwrap();
        let gone = |id: i64| -> bool {
            journal
                .conn()
                .query_row("SELECT count(*) = 0 FROM bodies WHERE id = ?1", [id], |r| {
                    r.get(0)
                })
                .unwrap()
        };
        // Version 1's delta is gone with its waiting bytes; the keyframe
        // stays, the base of what is left.
        assert!(gone(ids[1]), "the delta nothing reads");
        assert!(!gone(ids[0]) && !gone(ids[2]) && !gone(ids[3]));
        assert_eq!(waiting(&journal), 2, "its waiting bytes went with it");
        let stray: i64 = journal
            .conn()
            .query_row(
                &format!(
                    "SELECT count(*) FROM waiting WHERE slot NOT IN
                        (SELECT pack_ref - {WAITING} FROM bodies
                         WHERE pack_ref >= {WAITING} AND pack_ref < {PACKED})",
                    WAITING = crate::journal::schema::WAITING,
                    PACKED = crate::journal::schema::PACKED,
                ),
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(stray, 0);
        let mut decoder = Decoder::default();
        for (i, id) in [(2, ids[2]), (3, ids[3])] {
            let rv = format!("{}", 100 + i);
            let stored = journal.stored_body(id, None).unwrap();
            assert_eq!(decoder.decode(&stored).unwrap(), body("a", &rv, &rv));
        }
    }

    /// `len` letters and digits of a xorshift sequence drawn from `seed`.
    fn noise(seed: u64, len: usize) -> String {
        let mut x = 0x9e37_79b9_7f4a_7c15_u64 ^ seed;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                char::from_digit((x % 36) as u32, 36).unwrap()
            })
            .collect()
    }

    /// Version `i` of ConfigMap "a": from the fifth on it carries 800
    /// characters the first keyframe shares nothing with, too far from it for
    /// a delta.
    fn drifting(i: usize) -> (String, Vec<u8>) {
        let noise = noise(0, 800);
        let rv = format!("{}", 100 + i);
        let value = if i < 4 {
            rv.clone()
        } else {
            format!("{rv}{noise}")
        };
        let body = body("a", &rv, &value);
        (rv, body)
    }

    fn drifting_ops(stream: StreamId, n: usize) -> Vec<Op> {
        (0..n)
            .map(|i| {
                let (rv, body) = drifting(i);
                Op::Event {
                    stream,
                    at: i as i64,
                    watch_type: WatchType::Modified,
                    meta: meta("a", &rv),
                    body,
                }
            })
            .collect()
    }

    /// Versions of three objects, 10 ms apart, each changing a little (a
    /// delta, then packs) and every fifth a lot (a keyframe).
    fn three_objects(stream: StreamId, n: usize) -> Vec<Op> {
        (0..n)
            .map(|i| {
                let name = ["a", "b", "c"][i % 3];
                let rv = format!("{}", 1000 + i);
                let noise = noise(i as u64 / 15, 300);
                Op::Event {
                    stream,
                    at: 10 * i as i64,
                    watch_type: WatchType::Modified,
                    meta: meta(name, &rv),
                    body: body(name, &rv, &format!("{i}{noise}")),
                }
            })
            .collect()
    }

    /// A version as two journals are compared by: its object, resourceVersion,
    /// watch type, time and body.
    type Seen = (i64, String, Option<WatchType>, i64, Vec<u8>);

    /// Every version of every object of `journal`.
    fn every_version(journal: &Journal) -> Vec<Seen> {
        let mut reader = crate::journal::versions::BodyReader::new();
        let objects: Vec<i64> = journal
            .conn()
            .prepare("SELECT id FROM objects ORDER BY id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let mut out = Vec::new();
        for object in objects {
            for v in journal.object_versions(object).unwrap() {
                let bytes = reader.read(journal, v.body).unwrap();
                // Not its `seq`: the two journals' transactions, and so their
                // checkpoints, differ.
                out.push((
                    v.object,
                    v.resource_version,
                    v.watch_type,
                    v.observed_at,
                    bytes,
                ));
            }
        }
        out
    }

    /// Where two journals' versions differ first, if they do (the bytes of
    /// a body are too many to print).
    fn first_difference(a: &[Seen], b: &[Seen]) -> Option<String> {
        if a.len() != b.len() {
            return Some(format!("{} versions against {}", a.len(), b.len()));
        }
        a.iter().zip(b).position(|(x, y)| x != y).map(|i| {
            let (x, y) = (&a[i], &b[i]);
            format!(
                "version {i}: {:?} against {:?}",
                (x.0, &x.1, x.2, x.3, String::from_utf8_lossy(&x.4)),
                (y.0, &y.1, y.2, y.3, String::from_utf8_lossy(&y.4))
            )
        })
    }

    #[test]
    fn versions_after_a_fold_behind_the_writer_are_marked_as_without_it() {
        // Three objects, each change of its data or of its resourceVersion
        // alone (which a default diff does not see), every op with the
        // digest the recorder takes.
        let ops = |stream| -> Vec<Op> {
            (0..60)
                .map(|i| {
                    let name = ["a", "b", "c"][i % 3];
                    let rv = (1000 + i).to_string();
                    let body = body(name, &rv, &(i / 6).to_string());
                    Op::Event {
                        stream,
                        at: 10 * i as i64,
                        watch_type: WatchType::Modified,
                        meta: ObjectMeta {
                            diff_digest: crate::diff::compared_digest(&body),
                            given_mark: None,
                            ..meta(name, &rv)
                        },
                        body,
                    }
                })
                .collect()
        };
        use crate::journal::versions::Mark;
        let marks = |fold: bool| -> Vec<(i64, Option<Mark>)> {
            let (dir, stream, mut state) = writer_of_one_stream_packing(false);
            state.behind.after = Some(std::time::Duration::ZERO);
            let mut written = ops(stream);
            while !written.is_empty() {
                let mut batch: Vec<Op> = written.drain(..written.len().min(5)).collect();
                state.behind.latest_at = batch.iter().filter_map(Op::at).max();
                state.commit(&mut batch, None).unwrap();
                if fold {
                    state.fold_step((std::time::Duration::ZERO, state.behind.latest_at.unwrap()));
                }
            }
            assert_eq!(state.stats.behind.lock().unwrap().failed, None);
            drop(state);
            let journal = Journal::open(&dir.path().join("journal.db")).unwrap();
            let blocks: i64 = journal
                .conn()
                .query_row("SELECT count(*) FROM blocks", [], |r| r.get(0))
                .unwrap();
            assert_eq!(blocks > 0, fold);
            let mut out = Vec::new();
            let objects: Vec<i64> = journal
                .conn()
                .prepare("SELECT id FROM objects")
                .unwrap()
                .query_map([], |r| r.get(0))
                .unwrap()
                .map(Result::unwrap)
                .collect();
            for object in objects {
                for v in journal.object_versions(object).unwrap() {
                    out.push((v.observed_at, v.mark));
                }
            }
            out.sort_by_key(|(at, _)| *at);
            out
        };
        let plain = marks(false);
        assert_eq!(plain.len(), 60);
        // Each object's first version is unmarked (nothing before it), the
        // rest marked one way or the other.
        assert_eq!(plain.iter().filter(|(_, m)| m.is_none()).count(), 3);
        assert!(plain.contains(&(30, Some(Mark::StatusOnly))), "{plain:?}");
        assert!(plain.contains(&(180, Some(Mark::Changed))), "{plain:?}");
        assert_eq!(marks(true), plain);
    }

    #[test]
    fn the_feeds_before_after_a_stops_fold_is_the_version_before() {
        // Two recorder runs on one journal, the first's history folded into
        // blocks at its stop or not: each change of the second run sampled
        // for the live feed has the same "before" (an object's first change
        // after a stop's fold had none, its last version having no body row).
        let feed = |fold: bool| -> Vec<(String, Option<String>, String)> {
            let (dir, stream, mut state) = writer_of_one_stream_packing(false);
            let mut first = three_objects(stream, 30);
            let second = first.split_off(15);
            state.commit(&mut first, None).unwrap();
            drop(state);
            let path = dir.path().join("journal.db");
            if fold {
                let far = std::time::Instant::now() + std::time::Duration::from_secs(3600);
                let stop = Journal::open(&path)
                    .unwrap()
                    .fold_at_stop(&[stream], far)
                    .unwrap();
                assert!(stop.complete && stop.folded.records == 15, "{stop:?}");
            }
            let journal = Journal::open(&path).unwrap();
            let mut state =
                WriterState::new(journal, Arc::new(WriterStats::default()), false).unwrap();
            let (tx, mut rx) = tokio::sync::mpsc::channel(1_000);
            state.caches.feed = Some(FeedState {
                feed: Feed {
                    tx,
                    per_second: 1_000,
                },
                window: std::time::Instant::now(),
                sent: 0,
            });
            for op in second {
                state.commit(&mut vec![op], None).unwrap();
            }
            let mut out = Vec::new();
            let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
            while let Ok(c) = rx.try_recv() {
                out.push((c.name, c.before.map(text), text(c.after)));
            }
            out
        };
        let plain = feed(false);
        assert_eq!(plain.len(), 15);
        assert!(plain.iter().all(|c| c.1.is_some()));
        assert_eq!(feed(true), plain);
    }

    #[test]
    fn a_writer_folds_behind_itself_and_every_version_reads_back_as_written() {
        // As this writer writes, and as older ones packed.
        for pack in [false, true] {
            folds_behind_itself(pack);
        }
    }

    fn folds_behind_itself(pack: bool) {
        let ops = |stream| three_objects(stream, 120);
        // The same versions written without folding.
        let plain = tempfile::tempdir().unwrap();
        let plain_path = plain.path().join("journal.db");
        Journal::open_or_create(&plain_path)
            .unwrap()
            .register_cluster("c1", "https://x", None)
            .unwrap();
        let (_, stream) = (0, 1);
        write_all_packing(&plain_path, ops(stream), pack);
        let (dir, stream, mut state) = writer_of_one_stream_packing(pack);
        state.behind.after = Some(std::time::Duration::ZERO);
        let mut written = ops(stream);
        let mut steps = 0;
        // Pack ids are never taken again once their pack is gone: a reader
        // may have cached it by its id.
        let pack_ids = |state: &WriterState| -> std::collections::BTreeSet<i64> {
            state
                .journal
                .conn
                .prepare("SELECT id FROM packs")
                .unwrap()
                .query_map([], |r| r.get(0))
                .unwrap()
                .map(Result::unwrap)
                .collect()
        };
        let (mut ever, mut gone) = (
            std::collections::BTreeSet::new(),
            std::collections::BTreeSet::new(),
        );
        while !written.is_empty() {
            let mut batch: Vec<Op> = written.drain(..written.len().min(7)).collect();
            state.behind.latest_at = batch.iter().filter_map(Op::at).max();
            state.commit(&mut batch, None).unwrap();
            let now = pack_ids(&state);
            assert!(
                now.is_disjoint(&gone),
                "a pack id taken again: {now:?} {gone:?}"
            );
            ever.extend(now);
            // What was observed before the batch's last op has aged.
            state.fold_step((std::time::Duration::ZERO, state.behind.latest_at.unwrap()));
            steps += 1;
            gone.extend(ever.difference(&pack_ids(&state)).copied());
        }
        assert_eq!(!gone.is_empty(), pack, "packs folded away");
        // Once the last version has aged too, every record but each
        // object's latest is in a block (an object's latest record before
        // that was kept until a later one of the object aged).
        state.behind.latest_at = state.behind.latest_at.map(|at| at + 1);
        state.fold_step((std::time::Duration::ZERO, state.behind.latest_at.unwrap()));
        steps += 1;
        let behind = state.stats.behind.lock().unwrap().clone();
        assert_eq!(behind.failed, None);
        assert_eq!(behind.steps, steps);
        assert!(behind.records > 60, "{behind:?}");
        let path = dir.path().join("journal.db");
        let folded = Journal::open(&path).unwrap();
        let count =
            |j: &Journal, sql: &str| -> i64 { j.conn().query_row(sql, [], |r| r.get(0)).unwrap() };
        assert!(count(&folded, "SELECT count(*) FROM blocks") > 0);
        // Each object's latest version is a row: the next is a delta on it.
        assert_eq!(
            count(
                &folded,
                "SELECT count(*) FROM records WHERE object_id IS NOT NULL"
            ),
            3
        );
        let plain_journal = Journal::open(&plain_path).unwrap();
        assert_eq!(
            first_difference(&every_version(&folded), &every_version(&plain_journal)),
            None
        );
        // The writer goes on after its folds: what it stores next is as
        // exact, and a delta against what it kept.
        let more = three_objects(stream, 126).split_off(120);
        let mut batch = more;
        state.behind.latest_at = batch.iter().filter_map(Op::at).max();
        state.commit(&mut batch, None).unwrap();
        drop(state);
        drop(plain_journal);
        let mut plain_more = three_objects(1, 126).split_off(120);
        {
            let journal = Journal::open(&plain_path).unwrap();
            let mut plain_state =
                WriterState::new(journal, Arc::new(WriterStats::default()), pack).unwrap();
            plain_state.commit(&mut plain_more, None).unwrap();
        }
        let folded = Journal::open(&path).unwrap();
        assert_eq!(
            first_difference(
                &every_version(&folded),
                &every_version(&Journal::open(&plain_path).unwrap())
            ),
            None
        );
        // And it chose keyframes where a writer that never folded did: it
        // read back what it kept of the objects folded.
        let keyframes = |j: &Journal| -> Vec<(i64, i64, bool)> {
            j.conn()
                .prepare(
                    "SELECT r.object_id, r.observed_at, b.base_id IS NULL
                     FROM records r JOIN bodies b ON b.id = r.body_id
                     WHERE r.observed_at >= 1200 ORDER BY r.object_id, r.observed_at",
                )
                .unwrap()
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .unwrap()
                .map(Result::unwrap)
                .collect()
        };
        let new = keyframes(&folded);
        assert_eq!(new.len(), 6);
        assert!(new.iter().any(|&(_, _, keyframe)| !keyframe), "{new:?}");
        assert_eq!(new, keyframes(&Journal::open(&plain_path).unwrap()));
    }

    #[test]
    fn a_replaced_keyframes_waiting_deltas_are_packed_and_every_version_comes_back_exact() {
        use crate::journal::versions::Decoder;
        let (dir, stream) = configmap_stream();
        let path = dir.path().join("journal.db");
        // A keyframe, three deltas waiting (too few for a first pack), a new
        // keyframe, two deltas against it.
        let n = 7;
        write_all(&path, drifting_ops(stream, n));
        let reader = Journal::open(&path).unwrap();
        let count = |sql: &str| -> i64 { reader.conn().query_row(sql, [], |r| r.get(0)).unwrap() };
        assert_eq!(
            count("SELECT count(*) FROM bodies WHERE base_id IS NULL"),
            2
        );
        assert_eq!(count("SELECT count(*) FROM packs"), 1);
        let packed = format!(
            "SELECT count(*) FROM bodies WHERE pack_ref > {}",
            crate::journal::schema::PACKED
        );
        assert_eq!(count(&packed), 3, "the first keyframe's three deltas");
        assert_eq!(
            count("SELECT count(*) FROM waiting"),
            2,
            "the new one's two"
        );
        let mut decoder = Decoder::default();
        let ids = event_bodies(&reader);
        assert_eq!(ids.len(), n);
        for (i, id) in ids.into_iter().enumerate() {
            let (_, want) = drifting(i);
            let stored = reader.stored_body(id, None).unwrap();
            assert_eq!(decoder.decode(&stored).unwrap(), want, "version {i}");
        }
    }

    #[test]
    fn a_gap_stays_open_until_the_next_baseline() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.db");
        let journal = Journal::open_or_create(&path).unwrap();
        journal.register_cluster("c1", "https://x", None).unwrap();
        let stream = journal.register_stream("c1", &cm_spec()).unwrap();
        let writer = Writer::start(journal).unwrap();
        let tx = writer.sender();
        for op in [
            Op::BaselineEnd {
                stream,
                at: 100,
                list_rv: "5".into(),
                items: 0,
            },
            Op::Gap {
                stream,
                at: 200,
                info: GapInfo {
                    from: 150,
                    from_rv: Some("7".into()),
                    reason: "410 Expired".into(),
                },
            },
        ] {
            tx.blocking_send(op).unwrap();
        }
        drop(tx);
        writer.finish().unwrap();
        let reader = Journal::open(&path).unwrap();
        let s = &reader.streams(None).unwrap()[0];
        let cov = reader.coverage(s, 300, true).unwrap();
        assert_eq!(cov.state, StreamState::Relisting);
        assert_eq!(cov.windows.len(), 1);
        assert_eq!(cov.windows[0].to, None);
        assert!(!cov.complete());
        drop(reader);

        let journal = Journal::open_or_create(&path).unwrap();
        let writer = Writer::start(journal).unwrap();
        writer
            .sender()
            .blocking_send(Op::BaselineEnd {
                stream,
                at: 400,
                list_rv: "9".into(),
                items: 0,
            })
            .unwrap();
        writer.finish().unwrap();
        let reader = Journal::open(&path).unwrap();
        let cov = reader.coverage(s, 500, false).unwrap();
        assert_eq!(cov.windows[0].from, 150);
        assert_eq!(cov.windows[0].to, Some(400));
        assert_eq!(cov.windows[0].to_rv.as_deref(), Some("9"));
        assert_eq!(cov.gaps, 1);
    }

    /// A ConfigMap version as the recorder reads it: identity and diff digest.
    fn read(name: &str, rv: &str, data: &str, status: &str) -> (ObjectMeta, Vec<u8>) {
        let body = format!(
            r#"{{"metadata":{{"name":"{name}","namespace":"shop","resourceVersion":"{rv}"}},"data":{{"k":"{data}"}},"status":{{"s":"{status}"}}}}"#
        )
        .into_bytes();
        let meta = crate::recorder::wire::object_meta(&body).unwrap();
        assert!(meta.diff_digest.is_some());
        (meta, body)
    }

    /// A ConfigMap of a list, as the recorder reads it.
    fn listed(stream: StreamId, name: &str, rv: &str, data: &str) -> Op {
        let (meta, body) = read(name, rv, data, "listed");
        Op::BaselineItem {
            stream,
            at: 1,
            meta,
            body,
        }
    }

    /// A ConfigMap of a watch event at `at`, as the recorder reads it.
    fn watched(
        stream: StreamId,
        at: i64,
        watch_type: WatchType,
        name: &str,
        rv: &str,
        data: &str,
    ) -> Op {
        let (meta, body) = read(name, rv, data, &format!("at {at}"));
        Op::Event {
            stream,
            at,
            watch_type,
            meta,
            body,
        }
    }

    /// (name, resourceVersion, aux) of every event, in order.
    fn marks(path: &std::path::Path) -> Vec<(String, String, Option<i64>)> {
        let conn = Connection::open(path).unwrap();
        let mut stmt = conn
            .prepare(
                "SELECT o.name, r.resource_version, r.aux FROM records r
                 JOIN objects o ON o.id = r.object_id WHERE r.kind = 1 ORDER BY r.seq",
            )
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    }

    #[test]
    fn a_change_is_marked_against_the_record_before_it() {
        let (dir, stream) = configmap_stream();
        let path = dir.path().join("journal.db");
        let item = |name: &str, rv: &str, data: &str| listed(stream, name, rv, data);
        let change = |at, watch_type, name: &str, rv: &str, data: &str| {
            watched(stream, at, watch_type, name, rv, data)
        };
        let m = WatchType::Modified;
        write_all(
            &path,
            vec![
                item("a", "1", "x"),
                item("b", "2", "x"),
                Op::BaselineEnd {
                    stream,
                    at: 1,
                    list_rv: "2".into(),
                    items: 2,
                },
                // Status only, against the list item, then against the event.
                change(2, m, "a", "3", "x"),
                change(3, m, "a", "4", "x"),
                // Data changed (marked 0); then status only against the
                // changed data.
                change(4, m, "b", "5", "y"),
                change(5, m, "b", "6", "y"),
                // Without a digest: compared as usual.
                Op::Event {
                    stream,
                    at: 6,
                    watch_type: m,
                    meta: meta("a", "7"),
                    body: read("a", "7", "x", "none").1,
                },
                change(7, m, "a", "8", "x"),
                // A list that fails: its items are skipped by readers.
                item("a", "9", "z"),
                Op::BaselineAbort { stream },
                change(8, m, "a", "10", "z"),
                change(9, m, "a", "11", "z"),
                // Deleted, then created again the same.
                change(10, WatchType::Deleted, "a", "12", "z"),
                change(11, WatchType::Added, "a", "13", "z"),
                change(12, m, "a", "14", "z"),
            ],
        );
        let mark = |name: &str, rv: &str, aux: Option<i64>| (name.to_string(), rv.to_string(), aux);
        assert_eq!(
            marks(&path),
            vec![
                mark("a", "3", Some(1)),
                mark("a", "4", Some(1)),
                mark("b", "5", Some(0)),
                mark("b", "6", Some(1)),
                mark("a", "7", None),
                mark("a", "8", None),
                mark("a", "10", None),
                mark("a", "11", Some(1)),
                mark("a", "12", None),
                mark("a", "13", None),
                mark("a", "14", Some(1)),
            ]
        );
        // A new run remembers no digest: its first change of each object is
        // compared as usual.
        write_all(
            &path,
            vec![change(13, m, "a", "15", "z"), change(14, m, "a", "16", "z")],
        );
        let all = marks(&path);
        assert_eq!(
            all[all.len() - 2..],
            [mark("a", "15", None), mark("a", "16", Some(1))]
        );
    }

    #[test]
    fn a_list_without_an_object_and_its_deletion_end_its_marks() {
        let (dir, stream) = configmap_stream();
        let path = dir.path().join("journal.db");
        let item = |name: &str, rv: &str| listed(stream, name, rv, "x");
        let end = |items| Op::BaselineEnd {
            stream,
            at: 1,
            list_rv: "0".into(),
            items,
        };
        // Each a new status.
        let change = |watch_type, name: &str, rv: &str| {
            let at = rv.parse().unwrap();
            watched(stream, at, watch_type, name, rv, "x")
        };
        let m = WatchType::Modified;
        write_all(
            &path,
            vec![
                item("a", "1"),
                item("b", "2"),
                end(2),
                change(m, "a", "3"),
                // A relist that no longer has `a`: it was gone by then.
                item("b", "4"),
                end(1),
                change(m, "a", "5"),
                change(m, "a", "6"),
                change(m, "b", "7"),
                // Nothing after a deletion is compared with it.
                change(WatchType::Deleted, "b", "8"),
                change(m, "b", "9"),
            ],
        );
        let mark = |name: &str, rv: &str, aux: Option<i64>| (name.to_string(), rv.to_string(), aux);
        assert_eq!(
            marks(&path),
            vec![
                mark("a", "3", Some(1)),
                mark("a", "5", None),
                mark("a", "6", Some(1)),
                mark("b", "7", Some(1)),
                mark("b", "8", None),
                mark("b", "9", None),
            ]
        );
    }
}
