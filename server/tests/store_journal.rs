//! The persistence log: write, replay and compact; a torn last record cut at every byte;
//! a corrupt middle record; expired entries; a foreign file; compaction while running; the
//! fsync policies.

use std::fs;
use std::time::{Duration, Instant};

use bytes::Bytes;
use mqstate::Hlc;
use mqstate_server::journal::{FILE_NAME, Fsync, Journal, Recovery};
use mqstate_server::state_machine::{JournalOp, StateMachine, StoreConfig};

/// Far in the future, so the system clock never expires it during a test.
const FAR: u64 = 9_000_000_000_000;

fn put(key: &str, value: &str, counter: u64) -> JournalOp {
    JournalOp::Put {
        key: Bytes::copy_from_slice(key.as_bytes()),
        value: Bytes::copy_from_slice(value.as_bytes()),
        version: Hlc::new(1_700_000_000_000, counter, "StateStore").unwrap(),
        expires_at_ms: counter.is_multiple_of(2).then_some(FAR + counter),
        fencing_token: counter
            .is_multiple_of(3)
            .then(|| Hlc::new(5, counter, "holder").unwrap()),
    }
}

fn remove(key: &str) -> JournalOp {
    JournalOp::Remove {
        key: Bytes::copy_from_slice(key.as_bytes()),
    }
}

#[test]
fn write_replay_and_compact() {
    let dir = tempfile::tempdir().unwrap();
    let (mut journal, entries) = Journal::open(dir.path()).unwrap();
    assert!(entries.is_empty());
    journal
        .append(&[put("a", "1", 1), put("b", "\r\n\0binary", 2)])
        .unwrap();
    journal
        .append(&[put("a", "3", 3), remove("b"), put("c", "", 4)])
        .unwrap();
    journal.append(&[]).unwrap();
    let before = journal.len_bytes();
    drop(journal);
    let (journal, entries) = Journal::open(dir.path()).unwrap();
    assert_eq!(entries, vec![put("a", "3", 3), put("c", "", 4)]);
    assert_eq!(journal.recovery(), Recovery::Clean);
    // Compacted: the superseded put of `a` and everything about `b` are gone.
    assert!(
        journal.len_bytes() < before,
        "{} vs {before}",
        journal.len_bytes()
    );
    assert_eq!(
        fs::metadata(journal.path()).unwrap().len(),
        journal.len_bytes()
    );
    drop(journal);
    let (_, again) = Journal::open(dir.path()).unwrap();
    assert_eq!(again, entries);
}

#[test]
fn torn_last_record_is_ignored_at_every_cut() {
    let dir = tempfile::tempdir().unwrap();
    let (mut journal, _) = Journal::open(dir.path()).unwrap();
    journal
        .append(&[put("a", "1", 1), put("b", "2", 2)])
        .unwrap();
    let start = journal.len_bytes();
    journal
        .append(&[put("c", "a longer value for c", 3)])
        .unwrap();
    let end = journal.len_bytes();
    let path = journal.path();
    drop(journal);
    let whole = fs::read(&path).unwrap();
    assert_eq!(whole.len() as u64, end);
    for cut in start..end {
        fs::write(&path, &whole[..cut as usize]).unwrap();
        let (mut journal, entries) = Journal::open(dir.path()).unwrap();
        assert_eq!(
            entries,
            vec![put("a", "1", 1), put("b", "2", 2)],
            "cut at {cut}"
        );
        let expected = if cut == start {
            Recovery::Clean
        } else {
            Recovery::TornTail {
                offset: start,
                bytes: cut - start,
            }
        };
        assert_eq!(journal.recovery(), expected, "cut at {cut}");
        // The torn bytes are gone, so new records are replayed after a restart.
        journal.append(&[put("d", "4", 4)]).unwrap();
        drop(journal);
        let (_, entries) = Journal::open(dir.path()).unwrap();
        assert_eq!(entries.len(), 3, "cut at {cut}");
    }
}

#[test]
fn torn_record_with_a_bad_checksum_at_the_end_is_torn_too() {
    let dir = tempfile::tempdir().unwrap();
    let (mut journal, _) = Journal::open(dir.path()).unwrap();
    journal.append(&[put("a", "1", 1)]).unwrap();
    let start = journal.len_bytes();
    journal.append(&[put("b", "2", 2)]).unwrap();
    let path = journal.path();
    drop(journal);
    let mut data = fs::read(&path).unwrap();
    let last = data.len() - 1;
    data[last] ^= 0xFF;
    fs::write(&path, &data).unwrap();
    let (journal, entries) = Journal::open(dir.path()).unwrap();
    assert_eq!(entries, vec![put("a", "1", 1)]);
    let bytes = data.len() as u64 - start;
    assert_eq!(
        journal.recovery(),
        Recovery::TornTail {
            offset: start,
            bytes
        }
    );
}

/// Writes `a`, `b`, `c` (one record each) and returns the directory, the file's bytes and
/// where `b`'s record starts.
fn three_records() -> (tempfile::TempDir, Vec<u8>, usize) {
    let dir = tempfile::tempdir().unwrap();
    let (mut journal, _) = Journal::open(dir.path()).unwrap();
    journal.append(&[put("a", "1", 1)]).unwrap();
    let middle = journal.len_bytes() as usize;
    journal.append(&[put("b", "2", 2)]).unwrap();
    journal.append(&[put("c", "3", 3)]).unwrap();
    let path = journal.path();
    drop(journal);
    let data = fs::read(path).unwrap();
    (dir, data, middle)
}

fn record_len(data: &[u8], at: usize) -> u64 {
    8 + u64::from(u32::from_le_bytes(data[at..at + 4].try_into().unwrap()))
}

#[test]
fn a_flipped_byte_in_a_middle_record_loses_only_that_record() {
    let (dir, mut data, middle) = three_records();
    let b_len = record_len(&data, middle);
    // Flip a byte inside the body of the middle record (past its 8-byte head).
    data[middle + 12] ^= 0x01;
    fs::write(dir.path().join(FILE_NAME), &data).unwrap();
    let (journal, entries) = Journal::open(dir.path()).unwrap();
    assert_eq!(entries, vec![put("a", "1", 1), put("c", "3", 3)]);
    assert_eq!(
        journal.recovery(),
        Recovery::Corrupt {
            offset: middle as u64,
            bytes: b_len,
            regions: 1
        }
    );
    let kept = fs::read(dir.path().join(format!("{FILE_NAME}.corrupt"))).unwrap();
    assert_eq!(kept, data);
    assert_eq!(
        journal.backup(),
        Some(dir.path().join(format!("{FILE_NAME}.corrupt")).as_path())
    );
}

#[test]
fn a_damaged_length_field_mid_file_is_not_a_torn_tail() {
    let (dir, mut data, middle) = three_records();
    for damage in [0xFF_u8, 0x00] {
        let mut damaged = data.clone();
        damaged[middle + 3] = damage;
        damaged[middle] = damage;
        fs::write(dir.path().join(FILE_NAME), &damaged).unwrap();
        let (journal, entries) = Journal::open(dir.path()).unwrap();
        assert_eq!(
            entries,
            vec![put("a", "1", 1), put("c", "3", 3)],
            "{damage}"
        );
        assert!(
            matches!(journal.recovery(), Recovery::Corrupt { offset, regions: 1, .. } if offset == middle as u64),
            "{:?}",
            journal.recovery()
        );
    }
    // The last record with a damaged length is still a torn tail.
    let last = data.len() - record_len_from_end(&data, middle);
    data[last + 3] = 0xFF;
    fs::write(dir.path().join(FILE_NAME), &data).unwrap();
    let (journal, entries) = Journal::open(dir.path()).unwrap();
    assert_eq!(entries, vec![put("a", "1", 1), put("b", "2", 2)]);
    assert!(matches!(journal.recovery(), Recovery::TornTail { .. }));
}

/// The length of the record after the one at `middle` (the last of three).
fn record_len_from_end(data: &[u8], middle: usize) -> usize {
    data.len() - (middle + record_len(data, middle) as usize)
}

#[test]
fn a_second_corruption_never_overwrites_the_first_copy() {
    let (dir, mut data, middle) = three_records();
    data[middle + 12] ^= 0x01;
    fs::write(dir.path().join(FILE_NAME), &data).unwrap();
    drop(Journal::open(dir.path()).unwrap());
    let first = fs::read(dir.path().join(format!("{FILE_NAME}.corrupt"))).unwrap();
    // Damage the compacted log again.
    let mut again = fs::read(dir.path().join(FILE_NAME)).unwrap();
    let len = again.len();
    again[len / 2] ^= 0x40;
    // Make sure an intact record follows the damage: append one more.
    fs::write(dir.path().join(FILE_NAME), &again).unwrap();
    {
        let (mut journal, _) = Journal::open(dir.path()).unwrap();
        journal.append(&[put("d", "4", 4)]).unwrap();
    }
    let mut again = fs::read(dir.path().join(FILE_NAME)).unwrap();
    again[HEADER + 12] ^= 0x01;
    fs::write(dir.path().join(FILE_NAME), &again).unwrap();
    let (journal, entries) = Journal::open(dir.path()).unwrap();
    assert!(matches!(journal.recovery(), Recovery::Corrupt { .. }));
    assert!(entries.contains(&put("d", "4", 4)));
    assert_eq!(
        fs::read(dir.path().join(format!("{FILE_NAME}.corrupt"))).unwrap(),
        first,
        "the first copy was overwritten"
    );
    let names: Vec<String> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&format!("{FILE_NAME}.corrupt")))
        .collect();
    assert!(names.len() >= 2, "{names:?}");
}

const HEADER: usize = 8;

/// A full disk at start: the compacted copy cannot be written (its temporary file is
/// `/dev/full`), so the log is opened in place and still serves and takes writes.
#[test]
#[cfg(target_os = "linux")]
fn a_full_disk_at_start_opens_the_log_in_place() {
    let (dir, data, _) = three_records();
    let tmp = dir.path().join(format!("{FILE_NAME}.tmp"));
    std::os::unix::fs::symlink("/dev/full", &tmp).unwrap();
    // A torn tail too, which is cut without needing room.
    let mut torn = data.clone();
    torn.extend_from_slice(&[9, 0, 0, 0, 1, 2]);
    fs::write(dir.path().join(FILE_NAME), &torn).unwrap();
    let (mut journal, entries) = Journal::open(dir.path()).unwrap();
    assert_eq!(
        entries,
        vec![put("a", "1", 1), put("b", "2", 2), put("c", "3", 3)]
    );
    assert_eq!(fs::read(dir.path().join(FILE_NAME)).unwrap(), data);
    journal.append(&[put("d", "4", 4)]).unwrap();
    drop(journal);
    fs::remove_file(&tmp).ok();
    let (_, entries) = Journal::open(dir.path()).unwrap();
    assert_eq!(entries.len(), 4);
}

#[test]
fn expired_entries_are_dropped_on_open_and_skipped_on_restore() {
    let dir = tempfile::tempdir().unwrap();
    let (mut journal, _) = Journal::open(dir.path()).unwrap();
    let mut expired = put("old", "x", 2);
    if let JournalOp::Put { expires_at_ms, .. } = &mut expired {
        *expires_at_ms = Some(1); // 1970: long gone by the system clock
    }
    journal.append(&[expired, put("new", "y", 2)]).unwrap();
    drop(journal);
    let (_, entries) = Journal::open(dir.path()).unwrap();
    assert_eq!(entries, vec![put("new", "y", 2)]);
    // The store skips by its own (injected) time.
    let mut store = StateMachine::new(StoreConfig::default(), FAR + 2);
    store.restore(entries, FAR + 2);
    assert!(store.is_empty());
}

#[test]
fn foreign_files_are_refused_and_a_torn_header_is_empty() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE_NAME);
    fs::write(&path, b"not a journal at all").unwrap();
    assert!(Journal::open(dir.path()).is_err());
    fs::write(&path, b"MQSJ\x02\0\0\0").unwrap();
    assert!(Journal::open(dir.path()).is_err());
    fs::write(&path, b"MQS").unwrap();
    let (journal, entries) = Journal::open(dir.path()).unwrap();
    assert!(entries.is_empty());
    assert_eq!(journal.recovery(), Recovery::Clean);
}

#[test]
fn a_running_log_is_compacted() {
    let dir = tempfile::tempdir().unwrap();
    let (mut journal, _) = Journal::open(dir.path()).unwrap();
    let big = "x".repeat(64 * 1024);
    let mut peak = 0;
    for i in 0..300 {
        journal
            .append(&[put("k", &big, i), put("other", "v", i)])
            .unwrap();
        peak = peak.max(journal.len_bytes());
    }
    journal.wait_for_compaction();
    // 300 × 64 KiB were written; compactions (in the background) kept the log small.
    assert!(peak < 8 * 1024 * 1024, "peak {peak}");
    drop(journal);
    let (_, entries) = Journal::open(dir.path()).unwrap();
    assert_eq!(entries, vec![put("k", &big, 299), put("other", "v", 299)]);
}

/// A compaction runs off the request path: appends return while it copies, and every write
/// made meanwhile (puts, overwrites, removals) is in the compacted log.
#[test]
fn appends_go_on_while_a_compaction_copies() {
    let dir = tempfile::tempdir().unwrap();
    let (mut journal, _) = Journal::open(dir.path()).unwrap();
    let big = "x".repeat(64 * 1024);
    journal
        .append(&[put("a", "1", 1), put("b", "2", 2)])
        .unwrap();
    let hold = journal.hold_next_compaction();
    let mut i = 3;
    while !journal.compaction_running() {
        journal.append(&[put("churn", &big, i)]).unwrap();
        i += 1;
        assert!(i < 1000, "no compaction started");
    }
    let before = journal.len_bytes();
    // The copy is held: these appends cannot be waiting for it.
    journal
        .append(&[put("a", "new", i), remove("b"), put("c", "3", i + 1)])
        .unwrap();
    assert!(journal.compaction_running());
    drop(hold);
    journal.wait_for_compaction();
    assert!(!journal.compaction_running());
    assert!(
        journal.len_bytes() < before,
        "{} ≥ {before}",
        journal.len_bytes()
    );
    journal.append(&[put("d", "4", i + 2)]).unwrap();
    drop(journal);
    let (_, entries) = Journal::open(dir.path()).unwrap();
    assert_eq!(
        entries,
        vec![
            put("a", "new", i),
            put("c", "3", i + 1),
            put("churn", &big, i - 1),
            put("d", "4", i + 2)
        ]
    );
}

#[test]
fn a_store_survives_a_restart_through_the_journal() {
    use mqstate::codec::{Request, Response, SetCondition};
    use mqstate_server::state_machine::Invocation;
    let dir = tempfile::tempdir().unwrap();
    let now = 1_700_000_000_000;
    let ts = format!("{now}:0:c");
    let mut store = StateMachine::new(StoreConfig::default(), now);
    let (mut journal, _) = Journal::open(dir.path()).unwrap();
    let mut versions = Vec::new();
    for (key, persist) in [(&b"kept"[..], true), (b"memory", false), (b"gone", true)] {
        let request: Request<&[u8]> = Request::Set {
            key,
            value: b"v",
            condition: SetCondition::Always,
            expiry_ms: None,
        };
        let reply = store.handle(
            now,
            Invocation {
                client_id: "c",
                payload: &request.encode(),
                timestamp: Some(&ts),
                fencing_token: None,
                persist,
            },
        );
        journal.append(&reply.journal).unwrap();
        versions.push(reply.version.unwrap());
    }
    let request: Request<&[u8]> = Request::Del { key: b"gone" };
    let reply = store.handle(
        now,
        Invocation {
            client_id: "c",
            payload: &request.encode(),
            timestamp: Some(&ts),
            fencing_token: None,
            persist: false,
        },
    );
    assert_eq!(reply.response, Response::Count(1));
    journal.append(&reply.journal).unwrap();
    drop((store, journal));
    let (_, entries) = Journal::open(dir.path()).unwrap();
    let mut restarted = StateMachine::new(StoreConfig::default(), now);
    restarted.restore(entries, now);
    assert_eq!(restarted.len(), 1);
    let request: Request<&[u8]> = Request::Get { key: b"kept" };
    let reply = restarted.handle(
        now,
        Invocation {
            client_id: "c",
            payload: &request.encode(),
            timestamp: None,
            fencing_token: None,
            persist: false,
        },
    );
    assert_eq!(reply.response, Response::Value(Bytes::from_static(b"v")));
    assert_eq!(reply.version.as_ref(), Some(&versions[0]));
}

/// The latest clock record (written with each removal) is live: compaction at open and
/// while running keeps it, so a restart still raises the clock past deleted keys' versions.
#[test]
fn the_latest_clock_record_survives_compaction() {
    let clock = |counter: u64| JournalOp::Clock {
        version: Hlc::new(1_800_000_000_000, counter, "StateStore").unwrap(),
    };
    let dir = tempfile::tempdir().unwrap();
    let (mut journal, _) = Journal::open(dir.path()).unwrap();
    journal
        .append(&[put("a", "1", 1), put("b", "2", 3)])
        .unwrap();
    journal.append(&[remove("a"), clock(7)]).unwrap();
    journal.append(&[remove("b"), clock(9)]).unwrap();
    drop(journal);
    for _ in 0..2 {
        // Each open compacts: the removed keys go, the latest clock stays (first: it sorts
        // before every key).
        let (journal, entries) = Journal::open(dir.path()).unwrap();
        assert_eq!(entries, vec![clock(9)]);
        drop(journal);
    }
    // A store restored from it issues versions past the clock.
    let (_, entries) = Journal::open(dir.path()).unwrap();
    let mut store = StateMachine::new(StoreConfig::default(), 1_700_000_000_000);
    store.restore(entries, 1_700_000_000_000);
    assert!(store.clock() >= &Hlc::new(1_800_000_000_000, 9, "StateStore").unwrap());
}

/// What a crash of the process alone leaves: the journal is not dropped (no fsync, no
/// close), and the file is opened again as a restart would.
fn crash_and_reopen(journal: Journal, dir: &std::path::Path) -> Vec<JournalOp> {
    std::mem::forget(journal);
    Journal::open(dir).unwrap().1
}

#[test]
fn fsync_always_syncs_every_batch_before_append_returns() {
    let dir = tempfile::tempdir().unwrap();
    let (mut journal, _) = Journal::open(dir.path()).unwrap();
    assert_eq!(journal.fsync(), Fsync::Always, "the default");
    journal
        .append(&[put("a", "1", 1), put("b", "2", 2)])
        .unwrap();
    assert_eq!(journal.syncs(), 1, "one fsync per batch");
    journal.append(&[put("c", "3", 3)]).unwrap();
    assert_eq!(journal.syncs(), 2);
    journal.close().unwrap();
    assert_eq!(journal.syncs(), 2, "nothing left to fsync on close");
    assert_eq!(crash_and_reopen(journal, dir.path()).len(), 3);
}

#[test]
fn fsync_never_leaves_writes_to_the_kernel_and_syncs_on_close() {
    let dir = tempfile::tempdir().unwrap();
    let (mut journal, _) = Journal::open(dir.path()).unwrap();
    journal.set_fsync(Fsync::Never).unwrap();
    for n in 0..10 {
        journal.append(&[put(&format!("k{n}"), "v", n)]).unwrap();
    }
    assert_eq!(journal.syncs(), 0, "no fsync while running");
    journal.close().unwrap();
    assert_eq!(journal.syncs(), 1, "one on close");
    journal.append(&[put("after", "v", 11)]).unwrap();
    // A crash of the process loses nothing: every record was written to the kernel.
    assert_eq!(crash_and_reopen(journal, dir.path()).len(), 11);
}

/// Waits (at most 10 s, else fails with `why`) until `journal` has fsynced more than `synced`
/// times.
fn wait_for_sync_after(journal: &Journal, synced: u64, why: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while journal.syncs() == synced {
        assert!(Instant::now() < deadline, "{why}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn fsync_interval_syncs_in_the_background_within_the_interval() {
    let dir = tempfile::tempdir().unwrap();
    let (mut journal, _) = Journal::open(dir.path()).unwrap();
    journal
        .set_fsync(Fsync::Interval(Duration::from_millis(10)))
        .unwrap();
    journal.append(&[put("a", "1", 1)]).unwrap();
    wait_for_sync_after(&journal, 0, "never fsynced in the background");
    // Nothing written since: the thread does not fsync again.
    let synced = journal.syncs();
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(journal.syncs(), synced, "fsynced with nothing new");
    journal.close().unwrap();
    assert_eq!(crash_and_reopen(journal, dir.path()).len(), 1);

    // A long interval: nothing fsynced while running, what is left fsynced on close.
    let (mut journal, _) = Journal::open(dir.path()).unwrap();
    journal
        .set_fsync(Fsync::Interval(Duration::from_secs(3600)))
        .unwrap();
    journal.append(&[put("b", "2", 2)]).unwrap();
    assert_eq!(journal.syncs(), 0);
    journal.close().unwrap();
    assert_eq!(
        journal.syncs(),
        1,
        "the close fsynced the last interval's writes"
    );
    assert_eq!(crash_and_reopen(journal, dir.path()).len(), 2);
}

#[test]
fn fsync_interval_follows_the_log_through_a_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let (mut journal, _) = Journal::open(dir.path()).unwrap();
    journal
        .set_fsync(Fsync::Interval(Duration::from_millis(10)))
        .unwrap();
    journal.append(&[put("a", "1", 1)]).unwrap();
    journal.compact().unwrap();
    let synced = journal.syncs();
    journal.append(&[put("b", "2", 2)]).unwrap();
    wait_for_sync_after(&journal, synced, "no fsync after the compaction");
    drop(journal);
    assert_eq!(Journal::open(dir.path()).unwrap().1.len(), 2);
}
