//! Idle clients for `client-bench idle --idle-clients N`: clients that do nothing but exist,
//! each with the two subscriptions every mqstate client makes (its response topic and its
//! notification filter), either connected (`online`) or gone with their session left in
//! the broker for its expiry of 1 h: `abandoned` (they sent DISCONNECT, as a client closed
//! without ending its session) or `vanished` (their connection closed without DISCONNECT, as
//! a process killed, a pod deleted or a device powered off leaves).
//!
//! They speak MQTT 5 with hand-made packets on plain sockets (CONNECT, SUBSCRIBE, and for
//! the abandoned ones DISCONNECT), so that ten thousand of them cost this process a socket
//! each and no event loop: the benchmark measures the broker, not the load generator.

use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How an idle client stays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum IdleMode {
    /// Connected, subscribed, silent (keep-alive off).
    Online,
    /// Subscribed, then disconnected without ending the session (expiry 3600 s).
    Abandoned,
    /// Subscribed, then gone without DISCONNECT: the socket closes (expiry 3600 s).
    Vanished,
}

impl IdleMode {
    /// The word for the clients once made.
    pub fn label(self) -> &'static str {
        match self {
            IdleMode::Online => "online",
            IdleMode::Abandoned => "abandoned",
            IdleMode::Vanished => "vanished",
        }
    }
}

/// The idle clients; the online ones hold their sockets until dropped.
pub struct IdleClients {
    sockets: Vec<TcpStream>,
    /// How many were made.
    pub count: usize,
}

/// Session expiry of every idle client: an hour, the default of a client that does not end
/// its session (so an abandoned one stays for the whole benchmark).
const SESSION_EXPIRY_SECS: u32 = 3600;
/// Clients connecting at once.
const PARALLEL: usize = 64;
/// Attempts per idle client: a connection the kernel resets is tried again on a new socket.
const ATTEMPTS: u32 = 5;

/// Appends an MQTT variable byte integer.
fn put_varint(out: &mut Vec<u8>, mut n: usize) {
    loop {
        let mut byte = (n % 128) as u8;
        n /= 128;
        if n > 0 {
            byte |= 0x80;
        }
        out.push(byte);
        if n == 0 {
            break;
        }
    }
}

/// Appends a UTF-8 string with its two-byte length.
fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u16).to_be_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// A packet: fixed header byte, remaining length, body.
fn packet(first: u8, body: &[u8]) -> Vec<u8> {
    let mut out = vec![first];
    put_varint(&mut out, body.len());
    out.extend_from_slice(body);
    out
}

/// CONNECT, MQTT 5, clean start, no keep-alive, session expiry `SESSION_EXPIRY_SECS`.
fn connect_packet(client_id: &str) -> Vec<u8> {
    let mut body = Vec::new();
    put_str(&mut body, "MQTT");
    body.push(5); // protocol version
    body.push(0x02); // clean start
    body.extend_from_slice(&0u16.to_be_bytes()); // keep-alive off
    body.push(5); // properties: session expiry interval
    body.push(0x11);
    body.extend_from_slice(&SESSION_EXPIRY_SECS.to_be_bytes());
    put_str(&mut body, client_id);
    packet(0x10, &body)
}

/// SUBSCRIBE (packet id 1, QoS 1) to the client's response topic and notification filter.
fn subscribe_packet(client_id: &str) -> Vec<u8> {
    let mut body = vec![0, 1, 0]; // packet id 1, no properties
    for filter in [
        mqstate::topics::response_topic(client_id),
        mqstate::topics::notification_filter(client_id),
    ] {
        put_str(&mut body, &filter);
        body.push(0x01);
    }
    packet(0x82, &body)
}

/// Reads one packet; returns its first byte and body.
async fn read_packet(socket: &mut TcpStream) -> anyhow::Result<(u8, Vec<u8>)> {
    let first = socket.read_u8().await?;
    let (mut len, mut shift) = (0usize, 0);
    loop {
        let b = socket.read_u8().await?;
        len |= usize::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            break;
        }
        shift += 7;
        ensure!(shift < 28, "a malformed packet length");
    }
    let mut body = vec![0; len];
    socket.read_exact(&mut body).await?;
    Ok((first, body))
}

/// Whether `e` is a connection the network dropped (worth another attempt on a new socket),
/// rather than the broker refusing the client.
fn is_dropped_connection(e: &anyhow::Error) -> bool {
    use std::io::ErrorKind::{
        BrokenPipe, ConnectionAborted, ConnectionRefused, ConnectionReset, UnexpectedEof,
    };
    e.downcast_ref::<std::io::Error>().is_some_and(|e| {
        matches!(
            e.kind(),
            ConnectionReset | ConnectionRefused | ConnectionAborted | BrokenPipe | UnexpectedEof
        )
    })
}

/// [`one`], tried again (after a short pause) when the connection is dropped: `mqstate serve`
/// accepts at most 10,000 connections in any second (its broker's connection-rate limit) and
/// closes the others at once, unread, which the client sees as a reset; 10,000 abandoned
/// clients plus the bench's own connect faster than that. Returns the socket and how many
/// attempts failed.
async fn one_with_retries(
    host: &str,
    port: u16,
    client_id: String,
    mode: IdleMode,
) -> anyhow::Result<(Option<TcpStream>, u32)> {
    let mut failed = 0;
    loop {
        match one(host, port, client_id.clone(), mode).await {
            Ok(socket) => return Ok((socket, failed)),
            Err(e) if failed + 1 < ATTEMPTS && is_dropped_connection(&e) => {
                failed += 1;
                tokio::time::sleep(Duration::from_millis(20 << failed)).await;
            }
            Err(e) => return Err(e.context(format!("after {} attempt(s)", failed + 1))),
        }
    }
}

/// Connects one idle client and subscribes it; disconnects it when `mode` is abandoned.
async fn one(
    host: &str,
    port: u16,
    client_id: String,
    mode: IdleMode,
) -> anyhow::Result<Option<TcpStream>> {
    let mut socket = TcpStream::connect((host, port)).await?;
    socket.write_all(&connect_packet(&client_id)).await?;
    let (kind, body) = read_packet(&mut socket).await?;
    ensure!(
        kind == 0x20,
        "expected CONNACK, got packet type {:#x}",
        kind >> 4
    );
    ensure!(
        body.get(1) == Some(&0),
        "the broker refused the connection (reason {:?})",
        body.get(1)
    );
    socket.write_all(&subscribe_packet(&client_id)).await?;
    let (kind, body) = read_packet(&mut socket).await?;
    ensure!(
        kind == 0x90,
        "expected SUBACK, got packet type {:#x}",
        kind >> 4
    );
    // Packet id, properties (length and bytes), then one reason code per filter.
    let props = usize::from(*body.get(2).context("a short SUBACK")?);
    let codes = body.get(3 + props..).context("a short SUBACK")?;
    if codes.len() != 2 || codes.iter().any(|&c| c > 2) {
        bail!("the broker refused a subscription: {codes:?}");
    }
    match mode {
        IdleMode::Online => Ok(Some(socket)),
        IdleMode::Abandoned => {
            socket.write_all(&[0xE0, 0x00]).await?;
            socket.shutdown().await?;
            Ok(None)
        }
        IdleMode::Vanished => {
            drop(socket);
            Ok(None)
        }
    }
}

impl IdleClients {
    /// Makes `count` idle clients named `{prefix}-{n}`, `PARALLEL` at a time, with a progress
    /// line on stderr.
    pub async fn start(
        host: &str,
        port: u16,
        prefix: &str,
        count: usize,
        mode: IdleMode,
    ) -> anyhow::Result<Self> {
        let started = Instant::now();
        let mut sockets = Vec::new();
        let mut tasks = tokio::task::JoinSet::new();
        let mut next = 0;
        let mut done = 0;
        let mut last_progress = Instant::now();
        let mut retried = 0u64;
        while done < count {
            while next < count && tasks.len() < PARALLEL {
                let (host, id) = (host.to_owned(), format!("{prefix}-{next}"));
                tasks.spawn(async move { one_with_retries(&host, port, id, mode).await });
                next += 1;
            }
            let Some(joined) = tasks.join_next().await else {
                break;
            };
            let (socket, failed) = joined
                .context("an idle client's task")?
                .context("an idle client")?;
            retried += u64::from(failed);
            sockets.extend(socket);
            done += 1;
            if last_progress.elapsed() >= Duration::from_secs(1) {
                last_progress = Instant::now();
                eprint!("\r  idle clients: {done} of {count} ({mode:?})");
            }
        }
        eprintln!(
            "\r  idle clients: {count} {} in {:.1?} ({retried} connection(s) dropped and retried)",
            match mode {
                IdleMode::Online => "connected",
                other => other.label(),
            },
            started.elapsed()
        );
        Ok(Self { sockets, count })
    }

    /// Closes the online clients' sockets (without DISCONNECT: their sessions end or stay as
    /// the broker decides for a lost connection).
    pub fn close(self) {
        drop(self.sockets);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_matches_the_spec_examples() {
        for (n, bytes) in [
            (0usize, vec![0x00]),
            (127, vec![0x7f]),
            (128, vec![0x80, 0x01]),
            (16_383, vec![0xff, 0x7f]),
            (16_384, vec![0x80, 0x80, 0x01]),
        ] {
            let mut out = Vec::new();
            put_varint(&mut out, n);
            assert_eq!(out, bytes, "{n}");
        }
    }

    #[test]
    fn connect_packet_carries_the_id_and_the_expiry() {
        let p = connect_packet("idle-7");
        assert_eq!(p[0], 0x10);
        assert_eq!(usize::from(p[1]), p.len() - 2);
        assert_eq!(&p[2..8], b"\x00\x04MQTT");
        assert_eq!(p[8], 5);
        assert_eq!(&p[12..18], &[5, 0x11, 0, 0, 0x0e, 0x10]);
        assert!(p.ends_with(b"\x00\x06idle-7"));
    }
}
