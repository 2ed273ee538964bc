//! Codec and clock benchmarks: mqstate's core against `redis-protocol` 6 on byte-identical
//! RESP3 frames, with a bare memcpy of the same bytes as the floor.
//!
//! Run with `bench/run codec` (`cargo bench -p mqstate-bench --bench codec`);
//! `docs/benchmarks.md`, "Codec benchmarks", says what each row times and holds today's
//! figures. `mqstate_bench`'s unit tests check that the comparator's frames equal mqstate's
//! byte for byte.

// `criterion_group!` generates a public function it gives no doc comment.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use bytes::Bytes;
use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, Throughput, criterion_group, criterion_main};
use mqstate::codec::{KeyEvent, Notification, Request, Response, SetCondition, Verb};
use mqstate::hlc::{Clock, DEFAULT_MAX_DRIFT_MS, Hlc};
use mqstate_bench::{
    KEY, VALUE_SIZES, get_response, notification_payload, notification_topic, set_request,
    size_label, value,
};
use redis_protocol::resp3::decode::complete::decode_bytes;
use redis_protocol::resp3::encode::complete::encode_borrowed;
use redis_protocol::resp3::types::BorrowedFrame;

/// The two floors for producing or consuming `frame`: a copy into a buffer allocated once
/// outside the loop, and `Vec::from`, which allocates as mqstate's `encode` must.
fn memcpy_floor(group: &mut BenchmarkGroup<'_, WallTime>, frame: &[u8]) {
    let mut dst = vec![0u8; frame.len()];
    group.bench_function("memcpy_prealloc", |b| {
        b.iter(|| {
            dst.copy_from_slice(black_box(frame));
            black_box(&mut dst);
        })
    });
    group.bench_function("vec_from", |b| b.iter(|| Vec::from(black_box(frame))));
}

fn blob(data: &[u8]) -> BorrowedFrame<'_> {
    BorrowedFrame::BlobString {
        data,
        attributes: None,
    }
}

/// SET with a 16-byte key: mqstate `Request::encode` (one exact allocation), the same into
/// a reused `Vec`, and redis-protocol `encode_borrowed` of the same array of blob strings
/// into a buffer sized by its `encode_len` (its API needs a pre-sized, zeroed buffer).
fn encode_set(c: &mut Criterion) {
    for len in VALUE_SIZES {
        let v = value(len);
        let frame = set_request(&v);
        let mut group = c.benchmark_group(format!("encode_set/{}", size_label(len)));
        group.throughput(Throughput::Bytes(frame.len() as u64));
        group.bench_function("mqstate", |b| {
            b.iter(|| {
                Request::Set {
                    key: black_box(&KEY[..]),
                    value: black_box(&v[..]),
                    condition: SetCondition::Always,
                    expiry_ms: None,
                }
                .encode()
            })
        });
        let mut reused = Vec::with_capacity(frame.len());
        group.bench_function("mqstate_encode_to_reused", |b| {
            b.iter(|| {
                reused.clear();
                Request::Set {
                    key: black_box(&KEY[..]),
                    value: black_box(&v[..]),
                    condition: SetCondition::Always,
                    expiry_ms: None,
                }
                .encode_to(&mut reused);
                black_box(&mut reused);
            })
        });
        group.bench_function("redis_protocol", |b| {
            b.iter(|| {
                let args = [blob(b"SET"), blob(black_box(&KEY[..])), blob(black_box(&v))];
                let frame = BorrowedFrame::Array {
                    data: &args,
                    attributes: None,
                };
                let mut out = vec![0u8; frame.encode_len(false)];
                let n = encode_borrowed(&mut out, &frame, false).expect("buffer is sized");
                out.truncate(n);
                Bytes::from(out)
            })
        });
        memcpy_floor(&mut group, &frame);
        group.finish();
    }
}

/// A GET response holding the value: mqstate `Response::decode` and `decode_for(GET)`
/// (zero-copy `Bytes` slices) against redis-protocol's zero-copy
/// `resp3::decode::complete::decode_bytes`.
fn decode_get(c: &mut Criterion) {
    for len in VALUE_SIZES {
        let payload = get_response(&value(len));
        let mut group = c.benchmark_group(format!("decode_get/{}", size_label(len)));
        group.throughput(Throughput::Bytes(payload.len() as u64));
        group.bench_function("mqstate", |b| {
            b.iter(|| Response::decode(black_box(&payload)).expect("valid"))
        });
        group.bench_function("mqstate_decode_for", |b| {
            b.iter(|| Response::decode_for(Verb::Get, black_box(&payload)).expect("valid"))
        });
        group.bench_function("redis_protocol", |b| {
            b.iter(|| decode_bytes(black_box(&payload)).expect("valid"))
        });
        memcpy_floor(&mut group, &payload);
        group.finish();
    }
}

/// A SET notification: the payload alone (`KeyEvent::decode`), payload and topic
/// (`Notification::decode`, which also hex-decodes the client id and key), and
/// redis-protocol's `decode_bytes` of the same payload (an array of four blob strings).
fn decode_notification(c: &mut Criterion) {
    let topic = notification_topic();
    for len in VALUE_SIZES {
        let payload = notification_payload(&value(len));
        let mut group = c.benchmark_group(format!("decode_notification/{}", size_label(len)));
        group.throughput(Throughput::Bytes(payload.len() as u64));
        group.bench_function("mqstate_payload", |b| {
            b.iter(|| KeyEvent::decode(black_box(&payload)).expect("valid"))
        });
        group.bench_function("mqstate_with_topic", |b| {
            b.iter(|| Notification::decode(black_box(&topic), black_box(&payload)).expect("valid"))
        });
        group.bench_function("redis_protocol", |b| {
            b.iter(|| decode_bytes(black_box(&payload)).expect("valid"))
        });
        group.finish();
    }
}

/// The clock: parse and format the canonical form, the two branches of the send tick, a
/// receive, and the shared `Clock::tick` (mutex and system time included).
fn hlc(c: &mut Criterion) {
    let text = "001696374425000:00001:StateStore";
    let h = Hlc::parse(text).expect("valid");
    let other = Hlc::new(1_696_374_425_002, 7, "client").expect("valid");
    let mut group = c.benchmark_group("hlc");
    group.bench_function("parse", |b| b.iter(|| Hlc::parse(black_box(text))));
    group.bench_function("format", |b| b.iter(|| black_box(&h).to_string()));
    group.bench_function("tick_same_ms", |b| {
        b.iter(|| black_box(&h).tick(black_box(h.wall_ms()), DEFAULT_MAX_DRIFT_MS))
    });
    group.bench_function("tick_new_ms", |b| {
        b.iter(|| black_box(&h).tick(black_box(h.wall_ms() + 1), DEFAULT_MAX_DRIFT_MS))
    });
    group.bench_function("receive", |b| {
        b.iter(|| black_box(&h).receive(black_box(&other), h.wall_ms(), DEFAULT_MAX_DRIFT_MS))
    });
    let clock = Clock::new("bench").expect("valid");
    group.bench_function("clock_tick", |b| b.iter(|| clock.tick().expect("no drift")));
    group.finish();
}

fn config() -> Criterion {
    // The machine is shared and noisy: 100 samples over 3 s per row, 1 s warm-up.
    Criterion::default()
        .sample_size(100)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .noise_threshold(0.05)
}

criterion_group! {
    name = benches;
    config = config();
    targets = encode_set, decode_get, decode_notification, hlc
}
criterion_main!(benches);
