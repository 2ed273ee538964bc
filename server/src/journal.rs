//! The persistence log: keys SET with `aio-persistence: true` survive a restart.
//!
//! One append-only file, `state.journal`, in the directory given to [`Journal::open`]:
//!
//! ```text
//! file    = "MQSJ" format_version:u32le record*       (format version 1)
//! record  = body_len:u32le crc32(body):u32le body     (CRC-32/ISO-HDLC, as zlib's)
//! body    = 1:u8 key value version expiry token       (put)
//!         | 2:u8 key                                  (remove)
//! key, value, version, token = len:u32le bytes        (HLCs as text; empty token = none)
//! expiry  = 0:u8 | 1:u8 deadline_ms:u64le
//! ```
//!
//! [`Journal::append`] writes a batch with one `write` and one fsync. Replay stops at the
//! first record that is incomplete or fails its checksum: at the end of the file that is a
//! torn write and is ignored; before the end the file is corrupt, so the original is kept
//! beside the log as `state.journal.corrupt` and only the good prefix is replayed. Opening
//! always compacts (live records go to a temporary file, fsynced, renamed over the log,
//! directory fsynced), dropping entries whose expiry has passed by the system clock. The
//! log is compacted the same way while running once it holds more than twice (plus
//! 1 MiB) the bytes of its live records, so it never grows without bound.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;

use crate::store::JournalOp;

mod record;

use record::{read_record, record_end};

/// The log's file name inside the directory given to [`Journal::open`].
pub const FILE_NAME: &str = "state.journal";
const MAGIC: &[u8; 4] = b"MQSJ";
const FORMAT_VERSION: u32 = 1;
const HEADER_LEN: usize = 8;
/// Slack before a running log is compacted.
const COMPACT_SLACK: u64 = 1 << 20;

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
    /// A record before the end was damaged; replay stopped there and the `bytes` from
    /// `offset` on were dropped (the original file is kept as `state.journal.corrupt`).
    Corrupt {
        /// Where the damaged record starts.
        offset: u64,
        /// How many bytes were dropped.
        bytes: u64,
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
}

impl Journal {
    /// Opens (creating) the log in `dir`, replays and compacts it; returns the live entries
    /// (all [`JournalOp::Put`], sorted by key).
    pub fn open(dir: &Path) -> io::Result<(Journal, Vec<JournalOp>)> {
        fs::create_dir_all(dir)?;
        let path = dir.join(FILE_NAME);
        let data = match fs::read(&path) {
            Ok(data) => data,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e),
        };
        let (mut entries, recovery) = replay(&data)?;
        match recovery {
            Recovery::Clean => {}
            Recovery::TornTail { offset, bytes } => eprintln!(
                "mqstate-server: {}: ignoring a torn last record ({bytes} bytes at {offset})",
                path.display()
            ),
            Recovery::Corrupt { offset, bytes } => {
                fs::write(dir.join(format!("{FILE_NAME}.corrupt")), &data)?;
                eprintln!(
                    "mqstate-server: {}: corrupt record at {offset}; dropped {bytes} bytes \
                     (original kept as {FILE_NAME}.corrupt)",
                    path.display()
                );
            }
        }
        let now = system_now_ms();
        entries.retain(|_, (span, _)| span.expires_at_ms.is_none_or(|d| d > now));
        let mut live: HashMap<Bytes, Span> = entries
            .iter()
            .map(|(k, (span, _))| (k.clone(), *span))
            .collect();
        let (file, len) = rewrite(dir, &data, &mut live)?;
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
        };
        Ok((journal, ops))
    }

    /// Appends ops and fsyncs once for the batch. On a failed write the file is cut back
    /// to its previous length, so a later append never follows a half-written record.
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
                    JournalOp::Remove { .. } => None,
                },
            };
            spans.push((op, span));
        }
        if let Err(e) = self
            .file
            .write_all(&buf)
            .and_then(|()| self.file.sync_data())
        {
            // Best effort: the error that matters is the write's.
            self.file.set_len(self.len).ok();
            return Err(e);
        }
        self.len += buf.len() as u64;
        for (op, span) in spans {
            let old = match op {
                JournalOp::Put { key, .. } => {
                    self.live_bytes += span.len;
                    self.live.insert(key.clone(), span)
                }
                JournalOp::Remove { key } => self.live.remove(key),
            };
            self.live_bytes -= old.map_or(0, |s| s.len);
        }
        if self.len > 2 * (HEADER_LEN as u64 + self.live_bytes) + COMPACT_SLACK {
            self.compact()?;
        }
        Ok(())
    }

    /// Rewrites the log with only its live records (dropping expired ones).
    pub fn compact(&mut self) -> io::Result<()> {
        let data = fs::read(self.path())?;
        let now = system_now_ms();
        self.live
            .retain(|_, span| span.expires_at_ms.is_none_or(|d| d > now));
        let (file, len) = rewrite(&self.dir, &data, &mut self.live)?;
        self.file = file;
        self.len = len;
        self.live_bytes = self.live.values().map(|s| s.len).sum();
        Ok(())
    }

    /// The log file's path.
    pub fn path(&self) -> PathBuf {
        self.dir.join(FILE_NAME)
    }

    /// The log file's current length in bytes.
    pub fn len_bytes(&self) -> u64 {
        self.len
    }

    /// What [`Journal::open`] found when replaying.
    pub fn recovery(&self) -> Recovery {
        self.recovery
    }
}

fn op_key(op: &JournalOp) -> &Bytes {
    match op {
        JournalOp::Put { key, .. } | JournalOp::Remove { key } => key,
    }
}

fn system_now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Writes a new log holding the header and the `live` records copied from `data` (in file
/// order), atomically replaces the old one, and updates the offsets in `live`. Returns the
/// new file, open for appending, and its length.
fn rewrite(dir: &Path, data: &[u8], live: &mut HashMap<Bytes, Span>) -> io::Result<(File, u64)> {
    let mut spans: Vec<&mut Span> = live.values_mut().collect();
    spans.sort_by_key(|s| s.offset);
    let mut out =
        Vec::with_capacity(HEADER_LEN + spans.iter().map(|s| s.len as usize).sum::<usize>());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    for span in spans {
        let start = span.offset as usize;
        out.extend_from_slice(&data[start..start + span.len as usize]);
        span.offset = (out.len() as u64) - span.len;
    }
    let path = dir.join(FILE_NAME);
    let tmp = dir.join(format!("{FILE_NAME}.tmp"));
    {
        let mut file = File::create(&tmp)?;
        file.write_all(&out)?;
        file.sync_all()?;
    }
    fs::rename(&tmp, &path)?;
    File::open(dir)?.sync_all()?;
    let file = OpenOptions::new().append(true).open(&path)?;
    Ok((file, out.len() as u64))
}

/// The last put of every key not removed after it, with where its record sits.
type Replayed = HashMap<Bytes, (Span, JournalOp)>;

/// Replays a whole log, and says how the replay ended. A foreign or newer-format file is
/// an error.
fn replay(data: &[u8]) -> io::Result<(Replayed, Recovery)> {
    let mut entries = HashMap::new();
    if data.len() < HEADER_LEN {
        // Empty, or a header torn while the file was first created.
        if MAGIC.starts_with(&data[..data.len().min(MAGIC.len())]) {
            return Ok((entries, Recovery::Clean));
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
    while at < data.len() {
        let Some((op, next)) = read_record(data, at) else {
            let bytes = (data.len() - at) as u64;
            let offset = at as u64;
            let torn = match record_end(data, at) {
                None => true,
                Some(end) => end == data.len(),
            };
            let recovery = if torn {
                Recovery::TornTail { offset, bytes }
            } else {
                Recovery::Corrupt { offset, bytes }
            };
            return Ok((entries, recovery));
        };
        let key = op_key(&op).clone();
        match op {
            JournalOp::Put { expires_at_ms, .. } => {
                let span = Span {
                    offset: at as u64,
                    len: (next - at) as u64,
                    expires_at_ms,
                };
                entries.insert(key, (span, op));
            }
            JournalOp::Remove { .. } => {
                entries.remove(&key);
            }
        }
        at = next;
    }
    Ok((entries, Recovery::Clean))
}

fn invalid(message: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.to_owned())
}
