//! Load generator for the server benchmark (`docs/benchmarks.md`, "The emulator alone"): request/response
//! throughput and latency through mosquitto at a fixed number of outstanding requests,
//! against the mqstate server and against a trivial raw responder (echo) in the same run.
//!
//! ```text
//! bench/run server-load --seconds 3 --rounds 3
//! ```

use std::collections::HashMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use clap::Parser;
use mqstate::envelope::{self, property};
use mqstate::topics;
use mqstate_server::{BrokerTarget, Server, ServerConfig};
use mqstate_tests::Mosquitto;
use mqstate_tests::raw::{now_ms, resp};
use rumqttc::NetworkOptions;
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::mqttbytes::v5::{Packet, Publish, PublishProperties};
use rumqttc::v5::{AsyncClient, Event, EventLoop, MqttOptions};
use tokio::sync::mpsc;

/// Options of the load generator.
#[derive(Debug, Parser)]
struct Args {
    /// Seconds measured per run (after a 0.5 s warm-up).
    #[arg(long, default_value_t = 3.0)]
    seconds: f64,
    /// Runs per responder and depth (alternating echo and server); medians are reported.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Outstanding requests to measure at.
    #[arg(long, value_delimiter = ',', default_value = "1,64")]
    depths: Vec<usize>,
}

fn connect(id: &str, port: u16) -> (AsyncClient, EventLoop) {
    let mut options = MqttOptions::new(id, "127.0.0.1", port);
    options
        .set_keep_alive(Duration::from_secs(30))
        .set_max_packet_size(Some(16 * 1024 * 1024));
    let mut network = NetworkOptions::new();
    network.set_tcp_nodelay(true);
    options.set_network_options(network);
    AsyncClient::new(options, 1024)
}

/// Runs a poll loop that forwards every incoming PUBLISH; resolves once subscribed.
async fn pump(
    client: &AsyncClient,
    mut eventloop: EventLoop,
    filter: String,
) -> mpsc::UnboundedReceiver<Publish> {
    let (tx, rx) = mpsc::unbounded_channel();
    let (ready_tx, mut ready) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            match eventloop.poll().await {
                Ok(Event::Incoming(Packet::Publish(p))) => {
                    if tx.send(p).is_err() {
                        break;
                    }
                }
                Ok(Event::Incoming(Packet::SubAck(_))) => {
                    let _ = ready_tx.send(());
                }
                Ok(_) => {}
                Err(e) => {
                    eprintln!("bench connection: {e}");
                    break;
                }
            }
        }
    });
    client
        .subscribe(filter, QoS::AtLeastOnce)
        .await
        .expect("subscribe");
    ready.recv().await.expect("suback");
    rx
}

/// The trivial raw responder: answers every request with `+OK` and the correlation data.
async fn start_echo(port: u16) -> tokio::task::JoinHandle<()> {
    let (client, eventloop) = connect("bench-echo", port);
    let mut requests = pump(&client, eventloop, topics::REQUEST_TOPIC.to_owned()).await;
    tokio::spawn(async move {
        while let Some(request) = requests.recv().await {
            let Some(props) = request.properties else {
                continue;
            };
            let (Some(topic), Some(correlation)) = (props.response_topic, props.correlation_data)
            else {
                continue;
            };
            let response = PublishProperties {
                correlation_data: Some(correlation),
                content_type: Some(envelope::CONTENT_TYPE.to_owned()),
                user_properties: vec![
                    (property::STATUS.to_owned(), "200".to_owned()),
                    (
                        property::PROTOCOL_VERSION.to_owned(),
                        envelope::PROTOCOL_VERSION.to_owned(),
                    ),
                ],
                ..PublishProperties::default()
            };
            let _ = client
                .publish_with_properties(
                    topic,
                    QoS::AtLeastOnce,
                    false,
                    Bytes::from_static(b"+OK\r\n"),
                    response,
                )
                .await;
        }
    })
}

/// One measurement: rate in requests per second and latency percentiles in µs.
#[derive(Clone, Copy, Debug)]
struct Sample {
    rate: f64,
    p50: f64,
    p99: f64,
}

async fn measure(port: u16, depth: usize, seconds: f64, run: usize) -> Sample {
    let id = format!("bench-client-{run}");
    let (client, eventloop) = connect(&id, port);
    let response_topic = topics::response_topic(&id);
    let mut responses = pump(&client, eventloop, response_topic.clone()).await;
    let payload = resp(&[b"GET", b"bench-key"]);
    let mut sent: HashMap<u64, Instant> = HashMap::new();
    let mut next_id = 0u64;
    let send = |n: u64| {
        let props = PublishProperties {
            response_topic: Some(response_topic.clone()),
            correlation_data: Some(Bytes::copy_from_slice(&n.to_be_bytes())),
            content_type: Some(envelope::CONTENT_TYPE.to_owned()),
            message_expiry_interval: Some(10),
            user_properties: vec![
                (property::SOURCE_ID.to_owned(), id.clone()),
                (
                    property::TIMESTAMP.to_owned(),
                    format!("{:015}:{n:05}:{id}", now_ms()),
                ),
                (
                    property::PROTOCOL_VERSION.to_owned(),
                    envelope::PROTOCOL_VERSION.to_owned(),
                ),
            ],
            ..PublishProperties::default()
        };
        let client = client.clone();
        let payload = payload.clone();
        async move {
            client
                .publish_with_properties(
                    topics::REQUEST_TOPIC,
                    QoS::AtLeastOnce,
                    false,
                    payload,
                    props,
                )
                .await
                .expect("publish");
        }
    };
    for _ in 0..depth {
        sent.insert(next_id, Instant::now());
        send(next_id).await;
        next_id += 1;
    }
    let warmup_end = Instant::now() + Duration::from_millis(500);
    let mut measuring_since = None;
    let mut latencies = Vec::new();
    let end = warmup_end + Duration::from_secs_f64(seconds);
    while let Some(response) = responses.recv().await {
        let now = Instant::now();
        let Some(key) = response
            .properties
            .and_then(|p| p.correlation_data)
            .and_then(|c| <[u8; 8]>::try_from(&c[..]).ok())
            .map(u64::from_be_bytes)
        else {
            continue;
        };
        let Some(started) = sent.remove(&key) else {
            continue;
        };
        if now >= warmup_end {
            let since = *measuring_since.get_or_insert(now);
            if now >= end {
                let elapsed = now.duration_since(since).as_secs_f64();
                latencies.sort_unstable();
                let pick = |q: f64| latencies[((latencies.len() as f64 - 1.0) * q) as usize] as f64;
                return Sample {
                    rate: latencies.len() as f64 / elapsed,
                    p50: pick(0.5),
                    p99: pick(0.99),
                };
            }
            latencies.push(now.duration_since(started).as_micros() as u64);
        }
        sent.insert(next_id, Instant::now());
        send(next_id).await;
        next_id += 1;
    }
    panic!("responses stopped");
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mosquitto = Mosquitto::start()?;
    let port = mosquitto.port();
    println!(
        "mosquitto on port {port}; {} s per run, {} rounds",
        args.seconds, args.rounds
    );
    let mut run = 0;
    for &depth in &args.depths {
        let mut echo = Vec::new();
        let mut server = Vec::new();
        for _ in 0..args.rounds {
            let responder = start_echo(port).await;
            run += 1;
            echo.push(measure(port, depth, args.seconds, run).await);
            responder.abort();

            let mut config = ServerConfig::ephemeral();
            config.broker =
                Some(BrokerTarget::parse(&mosquitto.url()).map_err(anyhow::Error::msg)?);
            let handle = Server::start(config).await?;
            run += 1;
            server.push(measure(port, depth, args.seconds, run).await);
            handle.shutdown().await;
        }
        for (name, samples) in [("echo", &echo), ("server", &server)] {
            println!(
                "depth {depth:>3} {name:>6}: runs {:?} req/s; median {:.0} req/s, p50 {:.0} µs, p99 {:.0} µs",
                samples
                    .iter()
                    .map(|s| s.rate.round() as u64)
                    .collect::<Vec<_>>(),
                median(samples.iter().map(|s| s.rate).collect()),
                median(samples.iter().map(|s| s.p50).collect()),
                median(samples.iter().map(|s| s.p99).collect()),
            );
        }
        let ratio = median(server.iter().map(|s| s.rate).collect())
            / median(echo.iter().map(|s| s.rate).collect());
        println!("depth {depth:>3} server/echo: {:.2}", ratio);
    }
    Ok(())
}
