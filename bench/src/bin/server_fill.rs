//! Fills a running state store with many small keys, each SET carrying the full SDK
//! envelope, for the memory figure in `docs/benchmarks.md` ("The emulator's memory per key (1 M keys)"):
//!
//! ```text
//! mqstate serve --listen 127.0.0.1:18830 &        # release build
//! bench/run server-fill --port 18830 --keys 1000000
//! grep VmRSS /proc/$!/status
//! ```
//!
//! Keys are `k` + 15 digits (16 bytes), values 16 bytes.

use std::time::Duration;

use bytes::Bytes;
use clap::Parser;
use mqstate::envelope::{self, property};
use mqstate::topics;
use mqstate_tests::raw::{now_ms, resp};
use rumqttc::NetworkOptions;
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::mqttbytes::v5::{Filter, Packet, PublishProperties};
use rumqttc::v5::{AsyncClient, Event, MqttOptions};

/// Options of the filler.
#[derive(Debug, Parser)]
struct Args {
    /// The broker's host.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// The broker's port.
    #[arg(long)]
    port: u16,
    /// How many keys to SET.
    #[arg(long, default_value_t = 1_000_000)]
    keys: u64,
    /// Requests outstanding at once.
    #[arg(long, default_value_t = 64)]
    window: u64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let id = format!("filler-{}", uuid::Uuid::new_v4().simple());
    let mut options = MqttOptions::new(&id, &args.host, args.port);
    options
        .set_keep_alive(Duration::from_secs(30))
        .set_max_packet_size(Some(1024 * 1024));
    let mut network = NetworkOptions::new();
    network.set_tcp_nodelay(true);
    options.set_network_options(network);
    let (client, mut eventloop) = AsyncClient::new(options, 1024);
    let response_topic = topics::response_topic(&id);
    client
        .subscribe_many([Filter::new(response_topic.clone(), QoS::AtLeastOnce)])
        .await?;
    // Wait for the SUBACK before the first request.
    loop {
        if let Event::Incoming(Packet::SubAck(_)) = eventloop.poll().await? {
            break;
        }
    }
    let (mut sent, mut answered, mut failed) = (0u64, 0u64, 0u64);
    let started = std::time::Instant::now();
    while answered < args.keys {
        while sent < args.keys && sent - answered < args.window {
            let key = format!("k{sent:015}");
            let payload = resp(&[b"SET", key.as_bytes(), b"0123456789abcdef"]);
            let properties = PublishProperties {
                response_topic: Some(response_topic.clone()),
                correlation_data: Some(Bytes::copy_from_slice(uuid::Uuid::new_v4().as_bytes())),
                content_type: Some(envelope::CONTENT_TYPE.to_owned()),
                message_expiry_interval: Some(10),
                user_properties: vec![
                    (property::SOURCE_ID.to_owned(), id.clone()),
                    (
                        property::TIMESTAMP.to_owned(),
                        format!("{:015}:00000:{id}", now_ms()),
                    ),
                    (
                        property::PROTOCOL_VERSION.to_owned(),
                        envelope::PROTOCOL_VERSION.to_owned(),
                    ),
                    (property::PARTITION.to_owned(), id.clone()),
                    (property::HIGH_PRIORITY.to_owned(), String::new()),
                ],
                ..PublishProperties::default()
            };
            // try_publish: the poll loop below is the only task, so never wait here.
            client.try_publish_with_properties(
                topics::REQUEST_TOPIC,
                QoS::AtLeastOnce,
                false,
                payload,
                properties,
            )?;
            sent += 1;
        }
        if let Event::Incoming(Packet::Publish(p)) = eventloop.poll().await? {
            answered += 1;
            if p.payload.as_ref() != b"+OK\r\n" {
                failed += 1;
            }
        }
    }
    println!(
        "{answered} SETs answered ({failed} not +OK) in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
