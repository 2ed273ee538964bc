//! What the bindings' two ways of waiting cost without any host language around them
//! (docs/benchmarks.md, "The floor of each host"): one request at a time through the binding
//! layer ([`mqstate::bridge`]), half SETs and half GETs of 16-byte values over 1000 keys.
//!
//! - `wait`: the calling thread blocks on each call (the path of C and blocking Python: it
//!   drives the library's runtime itself).
//! - `callback`: the calling thread starts each call with a completion callback that wakes
//!   it, then sleeps until woken (the path of Node and asyncio: the library's thread does
//!   the I/O and hands every result over to the caller's thread).
//!
//! Prints `MODE 1 OPS_PER_S CPU_US_PER_OP` after 1 s of warm-up and SECONDS measured (`-` for
//! the CPU where `/proc` cannot be read).
//!
//! ```text
//! mqstate serve --listen 127.0.0.1:1883 &
//! bench/run bridge-handoff mqtt://127.0.0.1:1883 3 callback
//! ```

use std::sync::mpsc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use mqstate::bridge::{ClientHandle, Settings};
use mqstate::{GetOptions, SetOptions};

/// CPU time of processes from `/proc`: the reader of `mqstate bench` (only the process
/// totals are used here).
use mqstate_cli::load::cpu;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let url = args.get(1).map_or("mqtt://127.0.0.1:1883", String::as_str);
    let seconds: f64 = args.get(2).map_or(Ok(3.0), |s| s.parse())?;
    let callback = match args.get(3).map_or("wait", String::as_str) {
        "wait" => false,
        "callback" => true,
        other => return Err(format!("unknown mode {other} (wait or callback)").into()),
    };
    let store = ClientHandle::connect(Settings::from_url(url)?).wait(None)?;
    let value = Bytes::from_static(b"vvvvvvvvvvvvvvvv");
    let (wake, woken) = mpsc::channel::<Result<(), mqstate::Error>>();
    let one = |i: usize| -> Result<(), mqstate::Error> {
        let key = format!("bench/{}", i % 1000);
        let set = i % 2 == 1;
        if !callback {
            if set {
                store
                    .set(key, value.clone(), SetOptions::default())
                    .wait(None)?;
            } else {
                store.get(key, GetOptions::default()).wait(None)?;
            }
            return Ok(());
        }
        let wake = wake.clone();
        if set {
            store
                .set(key, value.clone(), SetOptions::default())
                .on_complete(move |r| drop(wake.send(r.map(drop))));
        } else {
            store
                .get(key, GetOptions::default())
                .on_complete(move |r| drop(wake.send(r.map(drop))));
        }
        woken
            .recv()
            .unwrap_or_else(|_| Err(mqstate::Error::cancelled()))
    };
    let mut i = 0;
    let warm = Instant::now() + Duration::from_secs(1);
    while Instant::now() < warm {
        one(i)?;
        i += 1;
    }
    let (start, ticks) = (Instant::now(), cpu::process_ticks(None));
    let mut done = 0u64;
    while start.elapsed().as_secs_f64() < seconds {
        one(i)?;
        i += 1;
        done += 1;
    }
    let elapsed = start.elapsed().as_secs_f64();
    let mode = if callback { "callback" } else { "wait" };
    let cpu_us = cpu::ticks_per_request(ticks, cpu::process_ticks(None), done)
        .map_or_else(|| "-".to_owned(), |us| format!("{us:.1}"));
    println!("{mode} 1 {:.0} {cpu_us}", done as f64 / elapsed);
    Ok(())
}
