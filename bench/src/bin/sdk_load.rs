//! `sdk-load`: the official Azure IoT Operations Rust SDK's state store client
//! (`azure_iot_operations_services`) under the same closed-loop load as `mqstate bench`
//! (the driver is the CLI's own, `mqstate_cli::load`), so that `bench/modes.py` can
//! alternate it with mqstate and the raw pairs in one run.
//!
//! A comparator only: built with `--features sdk`, never a dependency of the library or the
//! installed CLI.
//!
//! ```text
//! sdk-load --url mqtt://127.0.0.1:1883 --depth 64 --set-percent 100 --duration 5 \
//!          --warmup 1 [--keys 1000] [--value-size 16] [--watch-pid PID]…
//! ```

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use azure_iot_operations_mqtt::aio::connection_settings::MqttConnectionSettingsBuilder;
use azure_iot_operations_mqtt::session::{Session, SessionOptionsBuilder};
use azure_iot_operations_protocol::application::ApplicationContextBuilder;
use azure_iot_operations_services::state_store;

use mqstate_cli::load;

/// The request timeout given to every SDK call.
const TIMEOUT: Duration = Duration::from_secs(10);

struct Args {
    host: String,
    port: u16,
    depth: usize,
    set_percent: u64,
    duration: f64,
    warmup: f64,
    keys: usize,
    value_size: usize,
    watch: Vec<u32>,
}

fn parse() -> anyhow::Result<Args> {
    let mut args = Args {
        host: "127.0.0.1".into(),
        port: 1883,
        depth: 1,
        set_percent: 50,
        duration: 5.0,
        warmup: 1.0,
        keys: 1000,
        value_size: 16,
        watch: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().with_context(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--url" => {
                let url = value()?;
                let rest = url
                    .strip_prefix("mqtt://")
                    .context("--url must be mqtt://host:port")?;
                let (host, port) = rest.rsplit_once(':').context("--url needs a port")?;
                args.host = host.to_owned();
                args.port = port.parse().context("--url port")?;
            }
            "--depth" => args.depth = value()?.parse()?,
            "--set-percent" => args.set_percent = value()?.parse::<u64>()?.min(100),
            "--duration" => args.duration = value()?.parse()?,
            "--warmup" => args.warmup = value()?.parse()?,
            "--keys" => args.keys = value()?.parse::<usize>()?.max(1),
            "--value-size" => args.value_size = value()?.parse()?,
            "--watch-pid" => args.watch.push(value()?.parse()?),
            "-h" | "--help" => {
                println!(
                    "sdk-load --url mqtt://HOST:PORT [--depth N] [--set-percent P] [--duration S] \
                     [--warmup S] [--keys N] [--value-size B] [--watch-pid PID]..."
                );
                std::process::exit(0);
            }
            other => bail!("unknown argument {other:?} (see --help)"),
        }
    }
    anyhow::ensure!(args.depth >= 1, "--depth must be at least 1");
    Ok(args)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = parse()?;
    let settings = MqttConnectionSettingsBuilder::default()
        .client_id(format!("sdk-load-{}", std::process::id()))
        .hostname(args.host.clone())
        .tcp_port(args.port)
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
    let client = state_store::Client::new(
        ApplicationContextBuilder::default().build()?,
        session.create_managed_client(),
        session.create_session_monitor(),
        state_store::ClientOptionsBuilder::default().build()?,
    )
    .map_err(|e| anyhow::anyhow!("state store client: {e}"))?;
    let session_task = tokio::spawn(session.run());

    let client = Arc::new(client);
    let value = Arc::new(vec![b'v'; args.value_size]);
    let keys: Arc<Vec<Vec<u8>>> = Arc::new(
        (0..args.keys)
            .map(|k| format!("bench/{k}").into_bytes())
            .collect(),
    );
    for key in keys.iter() {
        client
            .set(
                key.clone(),
                value.to_vec(),
                TIMEOUT,
                None,
                state_store::SetOptions::default(),
            )
            .await
            .map_err(|e| anyhow::anyhow!("seeding the keys: {e}"))?;
    }
    println!(
        "1 client(s) x {} outstanding, {}% SET, {}-byte values, {} s per run",
        args.depth, args.set_percent, args.value_size, args.duration
    );
    let set_percent = args.set_percent;
    let op: load::Op = {
        let client = Arc::clone(&client);
        Arc::new(move |i| {
            let (client, keys, value) = (client.clone(), keys.clone(), value.clone());
            Box::pin(async move {
                let key = keys[(i as usize) % keys.len()].clone();
                if (i.wrapping_mul(2_654_435_761) >> 7) % 100 < set_percent {
                    let options = state_store::SetOptions::default();
                    client
                        .set(key, value.to_vec(), TIMEOUT, None, options)
                        .await
                        .is_ok()
                } else {
                    client.get(key, TIMEOUT).await.is_ok()
                }
            })
        })
    };
    let result = load::drive(
        "sdk",
        args.depth,
        Duration::from_secs_f64(args.warmup),
        Duration::from_secs_f64(args.duration),
        op,
        &args.watch,
    )
    .await;
    println!("{:<8} {result}", "sdk");
    let _ = client.shutdown().await;
    if exit.try_exit().is_err() {
        exit.force_exit();
    }
    let _ = tokio::time::timeout(Duration::from_secs(2), session_task).await;
    Ok(())
}
