//! CPU time and wake-ups of a process and of each of its threads, read from `/proc` before
//! and after a measured window, so that a benchmark can say where a request's CPU goes
//! (which threads, hence how the work would spread over more cores) and how many times a
//! request puts a thread to sleep and wakes it.
//!
//! Per thread: user + system time (`/proc/<pid>/task/<tid>/stat`, fields 14 and 15) and
//! voluntary context switches (`…/status`: each one is a thread that parked, to be woken
//! later), grouped by thread name (`…/comm`). Linux only; elsewhere nothing is reported.
//! Depends on `std` only.

use std::collections::BTreeMap;

/// Linux's user-visible clock tick (`USER_HZ`), fixed at 100 on every architecture it
/// supports today.
const TICKS_PER_SEC: f64 = 100.0;

/// user + system clock ticks from the text of a `stat` file (`None` if malformed).
fn stat_ticks(stat: &str) -> Option<u64> {
    // The command name may hold spaces: fields are counted after its closing parenthesis.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

/// The CPU time (user + system) a process has used, in clock ticks (`None` if it cannot
/// be read: not Linux, or the process is gone). `None` for `pid` is this process.
pub fn process_ticks(pid: Option<u32>) -> Option<u64> {
    let path = match pid {
        Some(pid) => format!("/proc/{pid}/stat"),
        None => "/proc/self/stat".to_owned(),
    };
    stat_ticks(&std::fs::read_to_string(path).ok()?)
}

/// One thread at one instant.
#[derive(Clone, Debug)]
struct Thread {
    name: String,
    ticks: u64,
    voluntary_switches: u64,
}

/// Every thread of a process at one instant, by thread id.
#[derive(Clone, Debug, Default)]
pub struct Threads(BTreeMap<u32, Thread>);

/// Reads every thread of `pid` (this process for `None`); empty if `/proc` cannot be read.
pub fn threads(pid: Option<u32>) -> Threads {
    let dir = match pid {
        Some(pid) => format!("/proc/{pid}/task"),
        None => "/proc/self/task".to_owned(),
    };
    let mut threads = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Threads(threads);
    };
    for entry in entries.flatten() {
        let Some(tid) = entry
            .file_name()
            .to_str()
            .and_then(|t| t.parse::<u32>().ok())
        else {
            continue;
        };
        let path = entry.path();
        let read = |file: &str| std::fs::read_to_string(path.join(file)).ok();
        // A thread that ended while being read is skipped.
        let (Some(stat), Some(comm), Some(status)) = (read("stat"), read("comm"), read("status"))
        else {
            continue;
        };
        let Some(ticks) = stat_ticks(&stat) else {
            continue;
        };
        let voluntary_switches = status
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        threads.insert(
            tid,
            Thread {
                name: comm.trim_end().to_owned(),
                ticks,
                voluntary_switches,
            },
        );
    }
    Threads(threads)
}

/// What the threads of one name used over a window, per request.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    /// The threads' name (Linux keeps its first 15 bytes).
    pub name: String,
    /// How many threads of that name ran in the window (alive at its end).
    pub threads: usize,
    /// CPU µs per request.
    pub cpu_us: f64,
    /// Voluntary context switches (parks, each followed by a wake-up) per request.
    pub switches: f64,
}

/// The per-request use of each thread-name group between `before` and `after`, busiest
/// first. A thread started within the window counts from zero; one that ended within it is
/// missing (its time is in the process's total only).
pub fn per_request(before: &Threads, after: &Threads, requests: u64) -> Vec<Group> {
    let requests = requests.max(1) as f64;
    let mut groups: BTreeMap<&str, (usize, u64, u64)> = BTreeMap::new();
    for (tid, now) in &after.0 {
        let (ticks, switches) = match before.0.get(tid) {
            Some(then) => (
                now.ticks.saturating_sub(then.ticks),
                now.voluntary_switches
                    .saturating_sub(then.voluntary_switches),
            ),
            None => (now.ticks, now.voluntary_switches),
        };
        let group = groups.entry(now.name.as_str()).or_default();
        group.0 += 1;
        group.1 += ticks;
        group.2 += switches;
    }
    let mut groups: Vec<Group> = groups
        .into_iter()
        .map(|(name, (threads, ticks, switches))| Group {
            name: name.to_owned(),
            threads,
            cpu_us: ticks as f64 / TICKS_PER_SEC * 1e6 / requests,
            switches: switches as f64 / requests,
        })
        .collect();
    groups.sort_by(|a, b| b.cpu_us.total_cmp(&a.cpu_us).then(a.name.cmp(&b.name)));
    groups
}

/// CPU µs per request from two tick counts (`None` if either is missing).
pub fn ticks_per_request(before: Option<u64>, after: Option<u64>, requests: u64) -> Option<f64> {
    let ticks = after?.checked_sub(before?)?;
    Some(ticks as f64 / TICKS_PER_SEC * 1e6 / requests.max(1) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread(name: &str, ticks: u64, voluntary_switches: u64) -> Thread {
        Thread {
            name: name.to_owned(),
            ticks,
            voluntary_switches,
        }
    }

    #[test]
    fn stat_fields_are_counted_after_the_name() {
        let stat = "42 (a b) c) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15";
        assert_eq!(stat_ticks(stat), Some(11 + 12));
        assert_eq!(stat_ticks("42 (x) S 1"), None);
    }

    #[test]
    fn threads_are_grouped_by_name_over_the_window() {
        let before = Threads(BTreeMap::from([
            (1, thread("main", 10, 5)),
            (2, thread("worker", 100, 50)),
            (3, thread("worker", 200, 70)),
        ]));
        let after = Threads(BTreeMap::from([
            (1, thread("main", 10, 5)),
            (2, thread("worker", 300, 1050)),
            (3, thread("worker", 400, 1070)),
            (4, thread("late", 100, 10)),
        ]));
        let groups = per_request(&before, &after, 1000);
        assert_eq!(groups[0].name, "worker");
        assert_eq!(groups[0].threads, 2);
        // 400 ticks of 10 ms over 1000 requests.
        assert!((groups[0].cpu_us - 4000.0).abs() < 1e-6);
        assert!((groups[0].switches - 2.0).abs() < 1e-9);
        assert_eq!(groups[1].name, "late");
        assert_eq!(groups[2].cpu_us, 0.0);
    }

    #[test]
    fn this_process_can_be_read() {
        if cfg!(target_os = "linux") {
            assert!(process_ticks(None).is_some());
            assert!(!threads(None).0.is_empty());
        }
    }
}
