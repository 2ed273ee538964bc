//! The closed-loop load driver of `mqstate bench`, also used through this crate's library
//! by the benchmark crate's programs (`client-bench`, the SDK comparator `sdk-load`), so that
//! every target is driven and measured by the same code: `workers` loops each keep one
//! request outstanding for a warm-up and a measured window; it reports ops/s, latency
//! percentiles and the CPU time per request of this process and of any watched process (the
//! broker, the store), and of each watched process's threads by name ([`cpu`]). [`mix`] is
//! the mqstate client's load that `mqstate bench` drives with it.
//!
//! The driver depends on `std` and `tokio` only.

pub mod cpu;
pub mod mix;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// What one run measured.
#[derive(Clone, Debug)]
pub struct RunResult {
    /// Requests completed per second.
    pub ops_per_sec: f64,
    /// Latency percentiles in microseconds: p50, p90, p99.
    pub p50_us: u32,
    /// 90th percentile.
    pub p90_us: u32,
    /// 99th percentile.
    pub p99_us: u32,
    /// Requests that failed.
    pub errors: u64,
    /// CPU time per completed request in the measured window, in microseconds: this
    /// process first (`"self"`), then each watched process by pid.
    pub cpu_us_per_op: Vec<(String, f64)>,
    /// For each watched process (by pid): CPU µs and voluntary context switches per
    /// request of its threads, grouped by thread name.
    pub threads: Vec<(String, Vec<cpu::Group>)>,
}

impl std::fmt::Display for RunResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:>9.0} ops/s   p50 {:>6} µs   p90 {:>6} µs   p99 {:>6} µs   errors {}",
            self.ops_per_sec, self.p50_us, self.p90_us, self.p99_us, self.errors
        )?;
        if !self.cpu_us_per_op.is_empty() {
            f.write_str("   cpu µs/op")?;
            for (who, us) in &self.cpu_us_per_op {
                write!(f, " {who}={us:.1}")?;
            }
        }
        // One line per watched process: `threads PID: NAME*THREADS=CPU_US/SWITCHES …`.
        for (who, groups) in &self.threads {
            write!(f, "\n         threads {who}:")?;
            for g in groups {
                write!(
                    f,
                    " {}*{}={:.1}/{:.2}",
                    g.name.replace(' ', "_"),
                    g.threads,
                    g.cpu_us,
                    g.switches
                )?;
            }
        }
        Ok(())
    }
}

/// Writes a progress line to stderr; a closed stderr (`2>&-` or a closed pipe) ends the
/// process quietly with exit 0, as every output of the command line does.
fn progress(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut stderr = std::io::stderr();
    if let Err(e) = stderr.write_fmt(args).and_then(|()| stderr.flush())
        && e.kind() == std::io::ErrorKind::BrokenPipe
    {
        std::process::exit(0);
    }
}

/// One request of the load: `true` on success.
pub type Op = Arc<
    dyn Fn(u64) -> std::pin::Pin<Box<dyn std::future::Future<Output = bool> + Send>> + Send + Sync,
>;

/// Runs `op` from `workers` closed loops for `warmup` + `duration`, with a progress line on
/// stderr, and measures the CPU of this process and of `watch` over the measured window.
pub async fn drive(
    label: &str,
    workers: usize,
    warmup: Duration,
    duration: Duration,
    op: Op,
    watch: &[u32],
) -> RunResult {
    let stop = Arc::new(AtomicBool::new(false));
    let measuring = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for w in 0..workers {
        let (stop, measuring, done, errors, op) = (
            stop.clone(),
            measuring.clone(),
            done.clone(),
            errors.clone(),
            op.clone(),
        );
        tasks.spawn(async move {
            let mut latencies = Vec::with_capacity(1 << 16);
            let mut i = w as u64;
            while !stop.load(Ordering::Relaxed) {
                let started = Instant::now();
                let ok = op(i).await;
                i = i.wrapping_add(workers as u64);
                if measuring.load(Ordering::Relaxed) {
                    if ok {
                        latencies
                            .push(u32::try_from(started.elapsed().as_micros()).unwrap_or(u32::MAX));
                        done.fetch_add(1, Ordering::Relaxed);
                    } else {
                        errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            latencies
        });
    }
    let watched: Vec<Option<u32>> = std::iter::once(None)
        .chain(watch.iter().map(|&pid| Some(pid)))
        .collect();
    tokio::time::sleep(warmup).await;
    let cpu_before: Vec<Option<u64>> = watched.iter().map(|&pid| cpu::process_ticks(pid)).collect();
    let threads_before: Vec<cpu::Threads> =
        watch.iter().map(|&pid| cpu::threads(Some(pid))).collect();
    measuring.store(true, Ordering::SeqCst);
    let started = Instant::now();
    while started.elapsed() < duration {
        tokio::time::sleep(Duration::from_secs(1).min(duration)).await;
        let secs = started.elapsed().as_secs_f64();
        progress(format_args!(
            "\r  {label:<8} {secs:>5.1} s  {:>9} ops  {:>8.0} ops/s ",
            done.load(Ordering::Relaxed),
            done.load(Ordering::Relaxed) as f64 / secs
        ));
    }
    measuring.store(false, Ordering::SeqCst);
    let elapsed = started.elapsed().as_secs_f64();
    let cpu_after: Vec<Option<u64>> = watched.iter().map(|&pid| cpu::process_ticks(pid)).collect();
    let threads_after: Vec<cpu::Threads> =
        watch.iter().map(|&pid| cpu::threads(Some(pid))).collect();
    stop.store(true, Ordering::SeqCst);
    progress(format_args!("\n"));
    let mut all = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        all.extend(joined.unwrap_or_default());
    }
    all.sort_unstable();
    let pct = |p: f64| {
        all.get(((all.len() as f64 * p) as usize).min(all.len().saturating_sub(1)))
            .copied()
            .unwrap_or(0)
    };
    let ops = done.load(Ordering::Relaxed);
    let cpu_us_per_op = watched
        .iter()
        .zip(cpu_before.iter().zip(&cpu_after))
        .filter_map(|(pid, (before, after))| {
            let who = pid.map_or_else(|| "self".to_owned(), |p| p.to_string());
            Some((who, cpu::ticks_per_request(*before, *after, ops)?))
        })
        .collect();
    let threads = watch
        .iter()
        .zip(threads_before.iter().zip(&threads_after))
        .map(|(pid, (before, after))| (pid.to_string(), cpu::per_request(before, after, ops)))
        .filter(|(_, groups)| !groups.is_empty())
        .collect();
    RunResult {
        ops_per_sec: ops as f64 / elapsed,
        p50_us: pct(0.50),
        p90_us: pct(0.90),
        p99_us: pct(0.99),
        errors: errors.load(Ordering::Relaxed),
        cpu_us_per_op,
        threads,
    }
}
