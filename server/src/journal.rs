//! The persistence log: keys SET with `aio-persistence: true` survive a restart.
//!
//! One append-only file, `state.journal`, in the directory given to [`Journal::open`]:
//!
//! ```text
//! file    = "MQSJ" format_version:u32le record*       (format version 1)
//! record  = body_len:u32le crc32(body):u32le body     (CRC-32/ISO-HDLC, as zlib's)
//! body    = 1:u8 key value version expiry token       (put)
//!         | 2:u8 key                                  (remove)
//!         | 3:u8 version                              (clock, written with each remove)
//! key, value, version, token = len:u32le bytes        (HLCs as text; empty token = none)
//! expiry  = 0:u8 | 1:u8 deadline_ms:u64le
//! ```
//!
//! [`Journal::append`] writes a batch with one `write`, and by default one fsync before it
//! returns (so before the change is applied and answered); [`Fsync`] chooses otherwise.
//!
//! # Durability
//!
//! What an acknowledged change survives depends on the [`Fsync`] policy: a crash of the
//! process alone (`kill -9`, a panic, the OOM killer) loses nothing under any policy, since
//! every record is written to the kernel before its change is answered; a crash of the
//! machine (power loss, a kernel panic) keeps what was fsynced: everything with
//! [`Fsync::Always`], all but the last interval's changes with [`Fsync::Interval`], and
//! with [`Fsync::Never`] what the kernel happened to write back (Linux: within about 30 s).
//! [`Journal::close`] (a clean shutdown) fsyncs under every policy.
//!
//! # Damage
//!
//! Only the **last** record may be torn (a crash during its write): a record that is
//! incomplete, fails its checksum or does not decode, with no intact record after it, is
//! ignored. Anything else is corruption, and no intact record is given up for it: replay
//! skips the damaged bytes (trusting the damaged record's length if an intact record
//! follows it there, else scanning for the next offset where an intact, checksummed record
//! starts), keeps every intact record after them, and logs each damaged region at error
//! level. The original file is first copied beside the log as `state.journal.corrupt`, or
//! `state.journal.corrupt.1`, `.2` … — an earlier copy is never overwritten. A key whose
//! last change was in a damaged record keeps its previous intact value.
//!
//! # Compaction and a full disk
//!
//! Opening compacts (live records go to a temporary file, fsynced, renamed over the log,
//! directory fsynced), dropping entries whose expiry has passed by the system clock. If that
//! copy cannot be written (a full disk), the log is opened in place instead: a torn tail is
//! cut off (which needs no room) and appends continue after it, so a store on a full disk
//! still starts and serves everything it had. While running, the log is compacted once it
//! holds more than twice (plus 1 MiB) the bytes of its live records: off the request path,
//! a background thread copies the live records one at a time (the file is never read
//! whole) while appends go on; the next append after it is done copies the few records
//! written meanwhile, renames the copy over the log and moves on. A compaction that fails
//! is logged and retried later, never failing a write.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::Bytes;

use crate::state_machine::JournalOp;

mod record;

use record::{read_record, record_end};

/// The log's file name inside the directory given to [`Journal::open`].
pub const FILE_NAME: &str = "state.journal";
const MAGIC: &[u8; 4] = b"MQSJ";
const FORMAT_VERSION: u32 = 1;
const HEADER_LEN: usize = 8;
/// Slack before a running log is compacted.
const COMPACT_SLACK: u64 = 1 << 20;

/// When the log is fsynced: what an acknowledged change survives if the machine (not just
/// the process) fails (see the module docs, "Durability").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Fsync {
    /// Every batch is fsynced before its changes are applied and answered: an acknowledged
    /// persistent write survives power loss. The default.
    #[default]
    Always,
    /// A background thread fsyncs the log at most this long after a write (and a clean
    /// shutdown fsyncs it): power loss may lose the acknowledged writes of the last
    /// interval; a crash of the process alone loses nothing.
    Interval(Duration),
    /// Never fsynced while running (compaction and a clean shutdown still fsync): the kernel
    /// writes the log back when it chooses (Linux: within about 30 s). A crash of the
    /// process alone loses nothing; power loss may lose that much.
    Never,
}

impl std::fmt::Display for Fsync {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fsync::Always => f.write_str("always"),
            Fsync::Interval(every) => write!(f, "interval ({every:?})"),
            Fsync::Never => f.write_str("never"),
        }
    }
}

/// The thread that fsyncs the log under [`Fsync::Interval`].
#[derive(Debug)]
struct Syncer {
    shared: Arc<SyncShared>,
    handle: Option<JoinHandle<()>>,
}

#[derive(Debug)]
struct SyncShared {
    /// A handle on the current log file (replaced when a compaction swaps the log).
    file: Mutex<File>,
    /// Written since the last fsync.
    dirty: AtomicBool,
    stop: Mutex<bool>,
    wake: Condvar,
    syncs: Arc<AtomicU64>,
}

impl SyncShared {
    /// Fsyncs the log if anything was written since the last time.
    fn sync_if_dirty(&self) {
        if !self.dirty.swap(false, Ordering::AcqRel) {
            return;
        }
        let file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        match file.sync_data() {
            Ok(()) => {
                self.syncs.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                self.dirty.store(true, Ordering::Release);
                tracing::error!(error = %e, "could not fsync the persistence log; will retry");
            }
        }
    }
}

impl Syncer {
    fn start(file: &File, every: Duration, syncs: Arc<AtomicU64>) -> io::Result<Syncer> {
        let shared = Arc::new(SyncShared {
            file: Mutex::new(file.try_clone()?),
            dirty: AtomicBool::new(false),
            stop: Mutex::new(false),
            wake: Condvar::new(),
            syncs,
        });
        let thread = Arc::clone(&shared);
        let handle = std::thread::Builder::new()
            .name("mqstate-fsync".to_owned())
            .spawn(move || {
                let mut stop = thread.stop.lock().unwrap_or_else(|p| p.into_inner());
                // Checked before each wait too: a stop asked before the first wait is seen.
                while !*stop {
                    let (guard, _) = thread
                        .wake
                        .wait_timeout(stop, every)
                        .unwrap_or_else(|p| p.into_inner());
                    stop = guard;
                    if !*stop {
                        thread.sync_if_dirty();
                    }
                }
            })?;
        Ok(Syncer {
            shared,
            handle: Some(handle),
        })
    }

    fn stop(&mut self) {
        *self.shared.stop.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.shared.wake.notify_all();
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}

/// What opening the log found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recovery {
    /// Every record was whole.
    Clean,
    /// The last record, from `offset` to the end (`bytes` long), was incomplete or failed
    /// its checksum: a write torn by a crash. It was ignored.
    TornTail {
        /// Where the torn record starts.
        offset: u64,
        /// How many bytes were ignored.
        bytes: u64,
    },
    /// Records before the end were damaged: `regions` stretches of `bytes` in total (the
    /// first at `offset`) were skipped, every intact record around them replayed, and the
    /// original file copied beside the log (see [`Journal::backup`]).
    Corrupt {
        /// Where the first damaged record starts.
        offset: u64,
        /// How many bytes were skipped in all (a torn tail after them included).
        bytes: u64,
        /// How many separate damaged stretches there were.
        regions: u64,
    },
}

/// Where a live put record sits in the file.
#[derive(Clone, Copy, Debug)]
struct Span {
    offset: u64,
    len: u64,
    expires_at_ms: Option<u64>,
}

/// The append-only persistence log of one store.
#[derive(Debug)]
pub struct Journal {
    dir: PathBuf,
    file: File,
    /// The file's length: where the next record goes.
    len: u64,
    /// The record holding each persisted key's current value.
    live: HashMap<Bytes, Span>,
    live_bytes: u64,
    recovery: Recovery,
    backup: Option<PathBuf>,
    /// A compaction copying live records in the background.
    running: Option<Running>,
    /// Test hook: the next compaction waits for this before finishing its copy.
    gate: Option<mpsc::Receiver<()>>,
    /// Compactions swapped in since the log was opened.
    compactions: u64,
    /// When appends are fsynced.
    fsync: Fsync,
    /// Written since the last fsync (under [`Fsync::Never`]; the syncer keeps its own flag).
    dirty: bool,
    /// The [`Fsync::Interval`] thread.
    syncer: Option<Syncer>,
    /// How many times the log was fsynced after an append (not counting compactions).
    syncs: Arc<AtomicU64>,
}

/// A background compaction: live records as of `snapshot_len` being copied to the
/// temporary file.
#[derive(Debug)]
struct Running {
    snapshot_len: u64,
    handle: JoinHandle<io::Result<Copied>>,
}

/// What a background copy produced: the temporary file's length and where each copied
/// record went (`key`, old offset, new offset).
#[derive(Debug)]
struct Copied {
    len: u64,
    moved: Vec<(Bytes, u64, u64)>,
}

impl Journal {
    /// Opens (creating) the log in `dir`, replays and compacts it (in place if there is no
    /// room for a compacted copy); returns the live entries ([`JournalOp::Put`]s sorted by
    /// key, after the latest [`JournalOp::Clock`] if there is one).
    pub fn open(dir: &Path) -> io::Result<(Journal, Vec<JournalOp>)> {
        fs::create_dir_all(dir)?;
        let path = dir.join(FILE_NAME);
        let data = match fs::read(&path) {
            Ok(data) => data,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e),
        };
        let replayed = replay(&data)?;
        let mut entries = replayed.entries;
        let recovery = replayed.recovery;
        let mut backup = None;
        match recovery {
            Recovery::Clean => {}
            Recovery::TornTail { offset, bytes } => tracing::warn!(
                path = %path.display(),
                offset,
                bytes,
                "persistence log: ignoring a torn last record"
            ),
            Recovery::Corrupt { .. } => {
                match keep_copy(dir, &data) {
                    Ok(copy) => backup = Some(copy),
                    Err(e) => tracing::error!(
                        path = %path.display(),
                        error = %e,
                        "persistence log is damaged and no copy of it could be kept"
                    ),
                }
                for (offset, bytes) in &replayed.damaged {
                    tracing::error!(
                        path = %path.display(),
                        offset,
                        bytes,
                        backup = ?backup,
                        "persistence log: skipped a damaged record; the change it held is lost, \
                         every intact record after it was kept"
                    );
                }
            }
        }
        let now = crate::wall_clock::now_ms();
        entries.retain(|_, (span, _)| span.expires_at_ms.is_none_or(|d| d > now));
        let mut live: HashMap<Bytes, Span> = entries
            .iter()
            .map(|(k, (span, _))| (k.clone(), *span))
            .collect();
        let (file, len) = match rewrite(dir, &data, &mut live) {
            Ok(done) => done,
            // Appending after damaged bytes is safe too: replay skips them.
            Err(e) => {
                tracing::warn!(error = %e, "could not compact the persistence log (disk full?): opening it in place");
                open_in_place(&path, replayed.valid_end)?
            }
        };
        let mut ops: Vec<JournalOp> = entries.into_values().map(|(_, op)| op).collect();
        ops.sort_by(|a, b| op_key(a).cmp(op_key(b)));
        let live_bytes = live.values().map(|s| s.len).sum();
        let journal = Journal {
            dir: dir.to_path_buf(),
            file,
            len,
            live,
            live_bytes,
            recovery,
            backup,
            running: None,
            gate: None,
            compactions: 0,
            fsync: Fsync::Always,
            dirty: false,
            syncer: None,
            syncs: Arc::default(),
        };
        Ok((journal, ops))
    }

    /// Sets when appends are fsynced (the default is [`Fsync::Always`]); with
    /// [`Fsync::Interval`] this starts the thread that fsyncs the log.
    pub fn set_fsync(&mut self, fsync: Fsync) -> io::Result<()> {
        self.sync_now()?;
        if let Some(mut syncer) = self.syncer.take() {
            syncer.stop();
        }
        if let Fsync::Interval(every) = fsync {
            let every = every.max(Duration::from_millis(1));
            self.syncer = Some(Syncer::start(&self.file, every, Arc::clone(&self.syncs))?);
        }
        self.fsync = fsync;
        Ok(())
    }

    /// When appends are fsynced.
    pub fn fsync(&self) -> Fsync {
        self.fsync
    }

    /// How many times the log was fsynced for appends so far (one per batch with
    /// [`Fsync::Always`], at most one per interval with [`Fsync::Interval`], and on
    /// [`Journal::close`]); compactions fsync their own files and do not count.
    pub fn syncs(&self) -> u64 {
        self.syncs.load(Ordering::Relaxed)
    }

    /// Fsyncs whatever was appended and not yet fsynced.
    fn sync_now(&mut self) -> io::Result<()> {
        let syncer_dirty = self
            .syncer
            .as_ref()
            .is_some_and(|s| s.shared.dirty.swap(false, Ordering::AcqRel));
        if self.dirty || syncer_dirty {
            if let Err(e) = self.file.sync_data() {
                if let Some(syncer) = &self.syncer {
                    syncer.shared.dirty.store(true, Ordering::Release);
                }
                return Err(e);
            }
            self.dirty = false;
            self.syncs.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// A clean close: fsyncs what the policy left unsynced and stops the fsync thread. A
    /// background compaction is not waited for (its copy is abandoned; the next open
    /// compacts again). Appending after it still works: fsynced per batch with
    /// [`Fsync::Always`], otherwise only by the next `close` (or the drop).
    pub fn close(&mut self) -> io::Result<()> {
        if let Some(mut syncer) = self.syncer.take() {
            syncer.stop();
            if syncer.shared.dirty.load(Ordering::Acquire) {
                self.dirty = true;
            }
            if self.fsync != Fsync::Always {
                self.fsync = Fsync::Never;
            }
        }
        self.sync_now()
    }

    /// Appends ops and, with [`Fsync::Always`], fsyncs once for the batch before returning.
    /// On a failed write the file is cut back to its previous length, so a later append
    /// never follows a half-written record.
    pub fn append(&mut self, ops: &[JournalOp]) -> io::Result<()> {
        if ops.is_empty() {
            return Ok(());
        }
        let mut buf = Vec::new();
        let mut spans = Vec::with_capacity(ops.len());
        for op in ops {
            let start = buf.len();
            record::encode(op, &mut buf);
            let span = Span {
                offset: self.len + start as u64,
                len: (buf.len() - start) as u64,
                expires_at_ms: match op {
                    JournalOp::Put { expires_at_ms, .. } => *expires_at_ms,
                    JournalOp::Remove { .. } | JournalOp::Clock { .. } => None,
                },
            };
            spans.push((op, span));
        }
        let always = self.fsync == Fsync::Always;
        if let Err(e) = self.file.write_all(&buf).and_then(|()| {
            if always {
                self.file.sync_data()?;
                self.syncs.fetch_add(1, Ordering::Relaxed);
            }
            Ok(())
        }) {
            // Best effort: the error that matters is the write's.
            self.file.set_len(self.len).ok();
            return Err(e);
        }
        if !always {
            match &self.syncer {
                Some(syncer) => syncer.shared.dirty.store(true, Ordering::Release),
                None => self.dirty = true,
            }
        }
        self.len += buf.len() as u64;
        for (op, span) in spans {
            let old = match op {
                JournalOp::Put { key, .. } => {
                    self.live_bytes += span.len;
                    self.live.insert(key.clone(), span)
                }
                JournalOp::Remove { key } => self.live.remove(key),
                // The latest clock record stays live (under the empty key, which no stored
                // key can have), so compaction keeps it.
                JournalOp::Clock { .. } => {
                    self.live_bytes += span.len;
                    self.live.insert(CLOCK_KEY, span)
                }
            };
            self.live_bytes -= old.map_or(0, |s| s.len);
        }
        self.poll_compaction();
        if self.running.is_none()
            && self.len > 2 * (HEADER_LEN as u64 + self.live_bytes) + COMPACT_SLACK
        {
            self.start_compaction();
        }
        Ok(())
    }

    /// Starts copying the live records (not the expired ones) to a new log on a background
    /// thread, record by record (never the whole file in memory); appends go on meanwhile,
    /// and [`Journal::append`] swaps the new log in once the copy is done.
    fn start_compaction(&mut self) {
        let now = crate::wall_clock::now_ms();
        self.live
            .retain(|_, span| span.expires_at_ms.is_none_or(|d| d > now));
        self.live_bytes = self.live.values().map(|s| s.len).sum();
        let mut spans: Vec<(Bytes, u64, u64)> = self
            .live
            .iter()
            .map(|(k, s)| (k.clone(), s.offset, s.len))
            .collect();
        spans.sort_by_key(|&(_, offset, _)| offset);
        let dir = self.dir.clone();
        let gate = self.gate.take();
        let spawned = std::thread::Builder::new()
            .name("mqstate-compact".to_owned())
            .spawn(move || copy_live(&dir, &spans, gate));
        match spawned {
            Ok(handle) => {
                self.running = Some(Running {
                    snapshot_len: self.len,
                    handle,
                });
            }
            Err(e) => tracing::warn!(error = %e, "could not start a compaction; will retry"),
        }
    }

    /// Swaps in a finished background compaction (if one is done).
    fn poll_compaction(&mut self) {
        if self
            .running
            .as_ref()
            .is_some_and(|running| running.handle.is_finished())
        {
            self.finish_compaction();
        }
    }

    /// Waits for the running compaction (if any) and swaps its log in.
    fn finish_compaction(&mut self) {
        let Some(running) = self.running.take() else {
            return;
        };
        let copied = running
            .handle
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the compaction thread panicked")));
        let result = copied.and_then(|copied| self.swap_in(running.snapshot_len, &copied));
        if let Err(e) = result {
            let _ = fs::remove_file(self.dir.join(TMP_NAME));
            // The old log is untouched: a failed compaction only postpones the next one.
            tracing::warn!(error = %e, "could not compact the persistence log; will retry");
        }
    }

    /// Appends what was written since `snapshot_len` to the compacted copy, makes it the
    /// log, and moves every live span to its place in it.
    fn swap_in(&mut self, snapshot_len: u64, copied: &Copied) -> io::Result<()> {
        let moved: HashMap<&Bytes, (u64, u64)> = copied
            .moved
            .iter()
            .map(|(key, old, new)| (key, (*old, *new)))
            .collect();
        let mut offsets = Vec::with_capacity(self.live.len());
        for (key, span) in &self.live {
            let offset = if span.offset >= snapshot_len {
                span.offset - snapshot_len + copied.len
            } else {
                match moved.get(key) {
                    Some(&(old, new)) if old == span.offset => new,
                    _ => return Err(io::Error::other("a live record was not copied")),
                }
            };
            offsets.push((key.clone(), offset));
        }
        let tmp = self.dir.join(TMP_NAME);
        let mut new_file = OpenOptions::new().append(true).open(&tmp)?;
        let source = File::open(self.path())?;
        copy_range(&source, snapshot_len, self.len, &mut new_file)?;
        new_file.sync_all()?;
        fs::rename(&tmp, self.path())?;
        if let Err(e) = File::open(&self.dir).and_then(|d| d.sync_all()) {
            tracing::warn!(error = %e, "could not fsync the persistence log's directory");
        }
        if let Some(syncer) = &self.syncer {
            // Everything in the new file is fsynced (above); the syncer follows the new file.
            match new_file.try_clone() {
                Ok(clone) => *syncer.shared.file.lock().unwrap_or_else(|p| p.into_inner()) = clone,
                Err(e) => tracing::warn!(error = %e, "the fsync thread keeps the old log"),
            }
        }
        self.file = new_file;
        self.len = copied.len + (self.len - snapshot_len);
        self.compactions += 1;
        for (key, offset) in offsets {
            if let Some(span) = self.live.get_mut(&key) {
                span.offset = offset;
            }
        }
        Ok(())
    }

    /// Rewrites the log with only its live records (dropping expired ones), waiting for it.
    pub fn compact(&mut self) -> io::Result<()> {
        self.finish_compaction();
        self.start_compaction();
        let Some(running) = self.running.take() else {
            return Err(io::Error::other("could not start the compaction"));
        };
        let copied = running
            .handle
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the compaction thread panicked")))?;
        self.swap_in(running.snapshot_len, &copied)
            .inspect_err(|_| {
                let _ = fs::remove_file(self.dir.join(TMP_NAME));
            })
    }

    /// Whether a compaction is copying in the background.
    pub fn compaction_running(&self) -> bool {
        self.running.is_some()
    }

    /// Waits for a background compaction (if any) and swaps its result in.
    pub fn wait_for_compaction(&mut self) {
        self.finish_compaction();
    }

    /// A journal in `dir` whose every write fails with "no space left on device" (it
    /// appends to `/dev/full`): for tests of what the service does on a full disk.
    #[cfg(test)]
    pub(crate) fn on_a_full_disk(dir: &Path) -> io::Result<Journal> {
        Ok(Journal {
            dir: dir.to_path_buf(),
            file: OpenOptions::new().append(true).open("/dev/full")?,
            len: HEADER_LEN as u64,
            live: HashMap::new(),
            live_bytes: 0,
            recovery: Recovery::Clean,
            backup: None,
            running: None,
            gate: None,
            compactions: 0,
            fsync: Fsync::Always,
            dirty: false,
            syncer: None,
            syncs: Arc::default(),
        })
    }

    /// Test hook: the next compaction copies, then waits until the returned sender is
    /// dropped before it reports done.
    #[doc(hidden)]
    pub fn hold_next_compaction(&mut self) -> mpsc::Sender<()> {
        let (tx, rx) = mpsc::channel();
        self.gate = Some(rx);
        tx
    }

    /// The log file's path.
    pub fn path(&self) -> PathBuf {
        self.dir.join(FILE_NAME)
    }

    /// The log file's current length in bytes.
    pub fn len_bytes(&self) -> u64 {
        self.len
    }

    /// How many compactions were swapped in while running (not counting the one at open).
    pub fn compactions(&self) -> u64 {
        self.compactions
    }

    /// What [`Journal::open`] found when replaying.
    pub fn recovery(&self) -> Recovery {
        self.recovery
    }

    /// Where [`Journal::open`] kept a copy of a damaged log, if it did.
    pub fn backup(&self) -> Option<&Path> {
        self.backup.as_deref()
    }
}

impl Drop for Journal {
    /// Fsyncs what the policy left unsynced (as [`Journal::close`]; errors are logged).
    fn drop(&mut self) {
        if let Err(e) = self.close() {
            tracing::error!(error = %e, "could not fsync the persistence log on close");
        }
    }
}

/// Where the latest clock record is kept among the live records: the empty key, which no
/// stored key can have.
const CLOCK_KEY: Bytes = Bytes::new();

fn op_key(op: &JournalOp) -> &Bytes {
    match op {
        JournalOp::Put { key, .. } | JournalOp::Remove { key } => key,
        JournalOp::Clock { .. } => {
            static KEY: Bytes = CLOCK_KEY;
            &KEY
        }
    }
}

/// Writes a new log holding the header and the `live` records copied from `data` (in file
/// order), atomically replaces the old one, and updates the offsets in `live`. Returns the
/// new file, open for appending, and its length. On an error the old log is untouched,
/// `live` unchanged, and the temporary file removed.
fn rewrite(dir: &Path, data: &[u8], live: &mut HashMap<Bytes, Span>) -> io::Result<(File, u64)> {
    let mut spans: Vec<(&Bytes, u64, u64)> =
        live.iter().map(|(k, s)| (k, s.offset, s.len)).collect();
    spans.sort_by_key(|&(_, offset, _)| offset);
    let mut out = Vec::with_capacity(
        HEADER_LEN + spans.iter().map(|&(_, _, len)| len as usize).sum::<usize>(),
    );
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    let mut moved = Vec::with_capacity(spans.len());
    for (key, offset, len) in spans {
        let start = offset as usize;
        out.extend_from_slice(&data[start..start + len as usize]);
        moved.push((key.clone(), (out.len() as u64) - len));
    }
    let path = dir.join(FILE_NAME);
    let tmp = dir.join(format!("{FILE_NAME}.tmp"));
    let written = (|| {
        let mut file = File::create(&tmp)?;
        file.write_all(&out)?;
        file.sync_all()?;
        fs::rename(&tmp, &path)
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    File::open(dir)?.sync_all()?;
    for (key, offset) in moved {
        if let Some(span) = live.get_mut(&key) {
            span.offset = offset;
        }
    }
    let file = OpenOptions::new().append(true).open(&path)?;
    Ok((file, out.len() as u64))
}

/// The compaction's temporary file.
const TMP_NAME: &str = "state.journal.tmp";

/// Copies the records at `spans` (`key`, offset, length; in file order) from the log in
/// `dir` to a new log in the temporary file, one record at a time, and fsyncs it.
fn copy_live(
    dir: &Path,
    spans: &[(Bytes, u64, u64)],
    gate: Option<mpsc::Receiver<()>>,
) -> io::Result<Copied> {
    let tmp = dir.join(TMP_NAME);
    let result = (|| {
        let source = File::open(dir.join(FILE_NAME))?;
        let mut out = BufWriter::new(File::create(&tmp)?);
        out.write_all(MAGIC)?;
        out.write_all(&FORMAT_VERSION.to_le_bytes())?;
        let mut at = HEADER_LEN as u64;
        let mut record = Vec::new();
        let mut moved = Vec::with_capacity(spans.len());
        for (key, offset, len) in spans {
            record.resize(*len as usize, 0);
            read_exact_at(&source, &mut record, *offset)?;
            out.write_all(&record)?;
            moved.push((key.clone(), *offset, at));
            at += len;
        }
        let file = out.into_inner().map_err(io::IntoInnerError::into_error)?;
        file.sync_all()?;
        if let Some(gate) = gate {
            // Returns once the test drops its sender.
            let _ = gate.recv();
        }
        Ok(Copied { len: at, moved })
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Reads exactly `buf.len()` bytes of `file` at `offset`: `pread` on Unix (no cursor moves);
/// on Windows `seek_read`, which moves this handle's cursor (the compaction's own handle,
/// which reads only this way).
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        file.read_exact_at(buf, offset)
    }
    #[cfg(windows)]
    {
        use std::os::windows::fs::FileExt;
        let mut done = 0;
        while done < buf.len() {
            match file.seek_read(&mut buf[done..], offset + done as u64)? {
                0 => return Err(io::ErrorKind::UnexpectedEof.into()),
                n => done += n,
            }
        }
        Ok(())
    }
}

/// Appends bytes `from..to` of `source` to `out`, a megabyte at a time.
fn copy_range(source: &File, from: u64, to: u64, out: &mut File) -> io::Result<()> {
    let mut buf = vec![0; (to - from).min(1 << 20) as usize];
    let mut at = from;
    while at < to {
        let n = (to - at).min(buf.len() as u64) as usize;
        read_exact_at(source, &mut buf[..n], at)?;
        out.write_all(&buf[..n])?;
        at += n as u64;
    }
    Ok(())
}

/// Opens the log for appending as it is, cutting it back to `valid_end` (the end of its last
/// intact record, past a torn tail) when it is longer: this needs no free space. A missing
/// or empty log gets its header.
fn open_in_place(path: &Path, valid_end: u64) -> io::Result<(File, u64)> {
    let mut file = OpenOptions::new().create(true).append(true).open(path)?;
    let len = file.metadata()?.len();
    if len > valid_end {
        file.set_len(valid_end)?;
        file.sync_all()?;
    }
    if valid_end < HEADER_LEN as u64 {
        file.set_len(0)?;
        let mut header = Vec::with_capacity(HEADER_LEN);
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        file.write_all(&header)?;
        file.sync_all()?;
        return Ok((file, HEADER_LEN as u64));
    }
    Ok((file, valid_end))
}

/// Copies a damaged log beside it under the first free name of `state.journal.corrupt`,
/// `state.journal.corrupt.1`, … (never replacing an earlier copy); returns that name.
fn keep_copy(dir: &Path, data: &[u8]) -> io::Result<PathBuf> {
    for n in 0u32.. {
        let name = if n == 0 {
            format!("{FILE_NAME}.corrupt")
        } else {
            format!("{FILE_NAME}.corrupt.{n}")
        };
        let path = dir.join(name);
        let mut file = match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        };
        let written = file.write_all(data).and_then(|()| file.sync_all());
        if let Err(e) = written {
            let _ = fs::remove_file(&path);
            return Err(e);
        }
        return Ok(path);
    }
    Err(io::Error::other(
        "no free name for a copy of the damaged log",
    ))
}

/// The last put of every key not removed after it, with where its record sits.
type Entries = HashMap<Bytes, (Span, JournalOp)>;

/// What a replay found.
struct Replayed {
    entries: Entries,
    recovery: Recovery,
    /// `(offset, bytes)` of every damaged stretch that was skipped (not the torn tail).
    damaged: Vec<(u64, u64)>,
    /// Where the last intact record ends (the header's end if there is none).
    valid_end: u64,
}

/// Replays a whole log, skipping damaged records (see the module docs). A foreign or
/// newer-format file is an error.
fn replay(data: &[u8]) -> io::Result<Replayed> {
    let mut replayed = Replayed {
        entries: HashMap::new(),
        recovery: Recovery::Clean,
        damaged: Vec::new(),
        valid_end: 0,
    };
    if data.len() < HEADER_LEN {
        // Empty, or a header torn while the file was first created.
        if MAGIC.starts_with(&data[..data.len().min(MAGIC.len())]) {
            return Ok(replayed);
        }
        return Err(invalid("not an mqstate journal"));
    }
    if &data[..4] != MAGIC {
        return Err(invalid("not an mqstate journal"));
    }
    let version = u32::from_le_bytes([data[4], data[5], data[6], data[7]]);
    if version != FORMAT_VERSION {
        return Err(invalid(&format!(
            "unsupported journal format version {version}"
        )));
    }
    let mut at = HEADER_LEN;
    replayed.valid_end = HEADER_LEN as u64;
    let mut torn = None;
    while at < data.len() {
        let Some((op, next)) = read_record(data, at) else {
            match next_intact(data, at) {
                Some(next) => {
                    replayed.damaged.push((at as u64, (next - at) as u64));
                    at = next;
                    continue;
                }
                None => {
                    torn = Some((at as u64, (data.len() - at) as u64));
                    break;
                }
            }
        };
        let key = op_key(&op).clone();
        match op {
            JournalOp::Put { expires_at_ms, .. } => {
                let span = Span {
                    offset: at as u64,
                    len: (next - at) as u64,
                    expires_at_ms,
                };
                replayed.entries.insert(key, (span, op));
            }
            JournalOp::Remove { .. } => {
                replayed.entries.remove(&key);
            }
            JournalOp::Clock { .. } => {
                let span = Span {
                    offset: at as u64,
                    len: (next - at) as u64,
                    expires_at_ms: None,
                };
                replayed.entries.insert(key, (span, op));
            }
        }
        at = next;
        replayed.valid_end = at as u64;
    }
    replayed.recovery = match (replayed.damaged.first(), torn) {
        (None, None) => Recovery::Clean,
        (None, Some((offset, bytes))) => Recovery::TornTail { offset, bytes },
        (Some(&(offset, _)), torn) => Recovery::Corrupt {
            offset,
            bytes: replayed.damaged.iter().map(|&(_, b)| b).sum::<u64>()
                + torn.map_or(0, |(_, b)| b),
            regions: replayed.damaged.len() as u64,
        },
    };
    Ok(replayed)
}

/// Where the next intact record after the damaged one at `at` starts, if any: where the
/// damaged record's own length says it ends if an intact record starts there, else the
/// first later offset where one does.
fn next_intact(data: &[u8], at: usize) -> Option<usize> {
    if let Some(end) = record_end(data, at)
        && end < data.len()
        && read_record(data, end).is_some()
    {
        return Some(end);
    }
    (at + 1..data.len()).find(|&candidate| read_record(data, candidate).is_some())
}

fn invalid(message: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.to_owned())
}
