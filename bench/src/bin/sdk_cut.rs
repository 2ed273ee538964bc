//! `sdk-cut`: the official Azure IoT Operations Rust SDK's MQTT session surviving connection
//! cuts against a state store (`mqstate serve`, or any broker with the store behind it).
//!
//! The SDK keeps one MQTT session for the life of its `Session` and ends it for good with
//! `SessionLost` when a reconnect finds no session on the server (`session_present = 0`).
//! This binary connects the SDK through a TCP proxy of its own, cuts every connection
//! through it `--cuts` times with SETs in flight, and checks after each cut that the session
//! is still running, reconnected, and that every request in flight completed. Exits 0 and
//! prints `1 passed, 0 failed` when all did.
//!
//! A check only: built with `--features sdk`, never a dependency of the library or the CLI.
//!
//! ```text
//! mqstate serve --listen 127.0.0.1:18830 &
//! bench/run sdk-cut --url mqtt://127.0.0.1:18830
//! ```

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Context, bail};
use azure_iot_operations_mqtt::aio::connection_settings::MqttConnectionSettingsBuilder;
use azure_iot_operations_mqtt::session::{Session, SessionOptionsBuilder};
use azure_iot_operations_protocol::application::ApplicationContextBuilder;
use azure_iot_operations_services::state_store;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// The request timeout given to every SDK call: long enough to ride out a reconnect.
const TIMEOUT: Duration = Duration::from_secs(10);

/// SETs in flight at each cut.
const IN_FLIGHT: usize = 20;

/// A proxy's address, its cut switch, and how many connections it accepted.
type Proxy = (SocketAddr, watch::Sender<u64>, Arc<AtomicU64>);

/// Forwards every connection on a loopback port to `target` until told to cut them all.
async fn proxy(target: SocketAddr) -> anyhow::Result<Proxy> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let (cut, cuts) = watch::channel(0u64);
    let accepted = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&accepted);
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::Relaxed);
            let mut cuts = cuts.clone();
            cuts.mark_unchanged();
            tokio::spawn(async move {
                let Ok(mut outbound) = TcpStream::connect(target).await else {
                    return;
                };
                tokio::select! {
                    _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                    _ = cuts.changed() => {}
                }
            });
        }
    });
    Ok((addr, cut, accepted))
}

fn parse_url() -> anyhow::Result<(SocketAddr, usize)> {
    let mut url = None;
    let mut cuts = 5usize;
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--url" => url = it.next(),
            "--cuts" => cuts = it.next().context("--cuts needs a value")?.parse()?,
            "-h" | "--help" => {
                println!("sdk-cut --url mqtt://HOST:PORT [--cuts N]");
                std::process::exit(0);
            }
            other => bail!("unknown argument {other:?} (see --help)"),
        }
    }
    anyhow::ensure!(cuts >= 1, "--cuts must be at least 1");
    let url = url.context("--url mqtt://HOST:PORT is required")?;
    let rest = url
        .strip_prefix("mqtt://")
        .context("--url must be mqtt://host:port")?;
    let addr = std::net::ToSocketAddrs::to_socket_addrs(rest)?
        .next()
        .context("--url did not resolve")?;
    Ok((addr, cuts))
}

#[tokio::main]
async fn main() {
    match run().await {
        Ok(summary) => {
            println!("sdk-cut: {summary}");
            println!("1 passed, 0 failed");
        }
        Err(e) => {
            println!("sdk-cut: FAILED: {e:#}");
            println!("0 passed, 1 failed");
            std::process::exit(1);
        }
    }
}

async fn run() -> anyhow::Result<String> {
    let (target, cuts) = parse_url()?;
    let (addr, cut, accepted) = proxy(target).await?;
    let settings = MqttConnectionSettingsBuilder::default()
        .client_id(format!("sdk-cut-{}", std::process::id()))
        .hostname(addr.ip().to_string())
        .tcp_port(addr.port())
        .use_tls(false)
        .build()
        .map_err(|e| anyhow::anyhow!("connection settings: {e}"))?;
    let session = Session::new(
        SessionOptionsBuilder::default()
            .connection_settings(settings)
            .build()
            .map_err(|e| anyhow::anyhow!("session options: {e}"))?,
    )
    .map_err(|e| anyhow::anyhow!("session: {e}"))?;
    let exit = session.create_exit_handle();
    let monitor = session.create_session_monitor();
    let client = Arc::new(
        state_store::Client::new(
            ApplicationContextBuilder::default().build()?,
            session.create_managed_client(),
            session.create_session_monitor(),
            state_store::ClientOptionsBuilder::default().build()?,
        )
        .map_err(|e| anyhow::anyhow!("state store client: {e}"))?,
    );
    let mut session_task = tokio::spawn(session.run());
    tokio::time::timeout(TIMEOUT, monitor.connected())
        .await
        .context("the SDK never connected")?;

    // The SDK subscribes to its response topic at its first request: do that before any
    // cut, so that what is tested is the session, not a subscription cut half-way.
    client
        .set(
            b"sdk-cut/warm-up".to_vec(),
            b"1".to_vec(),
            TIMEOUT,
            None,
            state_store::SetOptions::default(),
        )
        .await
        .map_err(|e| anyhow::anyhow!("the first SET failed: {e}"))?;
    let mut completed = 0usize;
    for round in 0..cuts {
        let mut requests = tokio::task::JoinSet::new();
        for i in 0..IN_FLIGHT {
            let client = Arc::clone(&client);
            requests.spawn(async move {
                client
                    .set(
                        format!("sdk-cut/{i}").into_bytes(),
                        round.to_string().into_bytes(),
                        TIMEOUT,
                        None,
                        state_store::SetOptions::default(),
                    )
                    .await
            });
        }
        // Let the requests leave, then cut with them (or their responses) in flight.
        tokio::time::sleep(Duration::from_millis(2)).await;
        cut.send_modify(|n| *n += 1);
        while let Some(joined) = requests.join_next().await {
            let response = joined?
                .map_err(|e| anyhow::anyhow!("a SET in flight at cut {round} failed: {e}"))?;
            anyhow::ensure!(response.response, "a SET at cut {round} was not applied");
            completed += 1;
        }
        if session_task.is_finished() {
            let ended = (&mut session_task).await?;
            bail!("the SDK's session ended after cut {round}: {ended:?}");
        }
        tokio::time::timeout(TIMEOUT, monitor.connected())
            .await
            .with_context(|| format!("the SDK did not reconnect after cut {round}"))?;
    }
    let last = client
        .get(b"sdk-cut/0".to_vec(), TIMEOUT)
        .await
        .map_err(|e| anyhow::anyhow!("the final GET failed: {e}"))?;
    anyhow::ensure!(
        last.response.as_deref() == Some((cuts - 1).to_string().as_bytes()),
        "the final GET read {:?}",
        last.response
    );
    let connections = accepted.load(Ordering::Relaxed);
    anyhow::ensure!(
        connections > cuts as u64,
        "only {connections} connection(s) for {cuts} cut(s): the cuts did not land"
    );
    let _ = client.shutdown().await;
    if exit.try_exit().is_err() {
        exit.force_exit();
    }
    let ended = tokio::time::timeout(Duration::from_secs(5), session_task).await;
    if let Ok(Ok(Err(e))) = &ended
        && !matches!(
            e.kind(),
            azure_iot_operations_mqtt::session::SessionErrorKind::ForceExit
        )
    {
        bail!("the SDK's session ended with {e}");
    }
    Ok(format!(
        "{cuts} cut(s), {connections} connections, {completed} SETs in flight all completed, \
         the session was kept"
    ))
}
