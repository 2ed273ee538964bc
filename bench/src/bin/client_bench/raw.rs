//! The baseline of `client-bench load` (`--target raw`, `--compare`): a bare rumqttc
//! request/response pair through the same broker — a requester that correlates by a counter
//! and a responder that echoes at once — so the broker's own round-trip limit is measured in
//! the same run as the mqstate client; and `--target echo`'s instant responder.

use mqstate::envelope::{CONTENT_TYPE, PROTOCOL_VERSION, property};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use bytes::Bytes;
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::mqttbytes::v5::{Packet, PublishProperties};
use rumqttc::v5::{AsyncClient, Event, EventLoop, MqttOptions};
use tokio::sync::oneshot;

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<()>>>>;

/// A requester and its responder, on their own topics.
pub struct RawPair {
    /// Send the state store's full request envelope (spec §2 user properties, content
    /// type, expiry) instead of the bare minimum, to separate the protocol's cost from the
    /// client's.
    full_envelope: bool,
    requester: AsyncClient,
    pending: Pending,
    next: AtomicU64,
    request_topic: String,
    response_topic: String,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

fn options(id: String, host: &str, port: u16) -> MqttOptions {
    let mut opts = MqttOptions::new(id, host, port);
    opts.set_max_packet_size(Some(1 << 24));
    opts.set_keep_alive(Duration::from_secs(30));
    // The same in-flight table as the mqstate client (see `MAX_IN_FLIGHT`).
    opts.set_outgoing_inflight_upper_limit(mqstate::envelope::MAX_IN_FLIGHT);
    let mut net = rumqttc::NetworkOptions::new();
    net.set_tcp_nodelay(true);
    net.set_tcp_quickack(true);
    opts.set_network_options(net);
    opts
}

/// Polls until the SUBACK, then hands back the event loop.
async fn subscribed(
    client: &AsyncClient,
    eventloop: &mut EventLoop,
    topic: &str,
) -> anyhow::Result<()> {
    client.subscribe(topic, QoS::AtLeastOnce).await?;
    loop {
        match tokio::time::timeout(Duration::from_secs(10), eventloop.poll()).await {
            Ok(Ok(Event::Incoming(Packet::SubAck(_)))) => return Ok(()),
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Err(e).context("raw pair connection"),
            Err(_) => anyhow::bail!("raw pair: no SUBACK within 10 s"),
        }
    }
}

impl RawPair {
    /// Connects both sides to `host:port`; `n` tells pairs apart.
    pub async fn start(
        host: &str,
        port: u16,
        n: usize,
        full_envelope: bool,
    ) -> anyhow::Result<RawPair> {
        let tag = format!("{}-{n}", std::process::id());
        let request_topic = format!("mqstate-bench/raw/{tag}/request");
        let response_topic = format!("mqstate-bench/raw/{tag}/response");

        let (responder, mut responder_loop) =
            AsyncClient::new(options(format!("raw-responder-{tag}"), host, port), 4096);
        subscribed(&responder, &mut responder_loop, &request_topic).await?;
        let (requester, mut requester_loop) =
            AsyncClient::new(options(format!("raw-requester-{tag}"), host, port), 4096);
        subscribed(&requester, &mut requester_loop, &response_topic).await?;

        let answer = responder.clone();
        let responder_task = tokio::spawn(async move {
            loop {
                match responder_loop.poll().await {
                    Ok(Event::Incoming(Packet::Publish(p))) => {
                        let Some(props) = p.properties else { continue };
                        let Some(topic) = props.response_topic else {
                            continue;
                        };
                        let reply = PublishProperties {
                            correlation_data: props.correlation_data,
                            ..PublishProperties::default()
                        };
                        // Never await inside the poll loop.
                        let _ = answer.try_publish_with_properties(
                            topic,
                            QoS::AtLeastOnce,
                            false,
                            p.payload,
                            reply,
                        );
                    }
                    Ok(_) => {}
                    Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
                }
            }
        });
        let pending: Pending = Arc::default();
        let waiting = pending.clone();
        let requester_task = tokio::spawn(async move {
            loop {
                match requester_loop.poll().await {
                    Ok(Event::Incoming(Packet::Publish(p))) => {
                        let id = p
                            .properties
                            .and_then(|props| props.correlation_data)
                            .and_then(|c| <[u8; 8]>::try_from(&c[..]).ok())
                            .map(u64::from_be_bytes);
                        let slot = id.and_then(|id| {
                            waiting
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .remove(&id)
                        });
                        if let Some(tx) = slot {
                            let _ = tx.send(());
                        }
                    }
                    Ok(_) => {}
                    Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
                }
            }
        });
        Ok(RawPair {
            full_envelope,
            requester,
            pending,
            next: AtomicU64::new(0),
            request_topic,
            response_topic,
            tasks: vec![responder_task, requester_task],
        })
    }

    /// One request/response round trip; `false` on failure or after 10 s.
    pub async fn request(&self, payload: Bytes) -> bool {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, tx);
        let mut props = PublishProperties {
            response_topic: Some(self.response_topic.clone()),
            correlation_data: Some(Bytes::copy_from_slice(&id.to_be_bytes())),
            ..PublishProperties::default()
        };
        if self.full_envelope {
            let ts = "001795323972000:00000:mqstate-0123456789ABCDEF".to_owned();
            props.user_properties = vec![
                (property::SOURCE_ID.into(), "raw-requester".into()),
                (property::TIMESTAMP.into(), ts),
                (property::PROTOCOL_VERSION.into(), PROTOCOL_VERSION.into()),
                (property::PARTITION.into(), "raw-requester".into()),
                (property::HIGH_PRIORITY.into(), String::new()),
            ];
            props.content_type = Some(CONTENT_TYPE.into());
            props.message_expiry_interval = Some(10);
        }
        let sent = self
            .requester
            .publish_bytes_with_properties(
                self.request_topic.clone(),
                QoS::AtLeastOnce,
                false,
                payload,
                props,
            )
            .await;
        let ok = sent.is_ok()
            && matches!(
                tokio::time::timeout(Duration::from_secs(10), rx).await,
                Ok(Ok(()))
            );
        if !ok {
            self.pending
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&id);
        }
        ok
    }
}

/// A stand-in state store that answers every request at once without storing anything
/// (`+OK` to a SET, `$-1` to anything else): with it, `client-bench load --target echo`
/// measures the mqstate client's own overhead against the raw pair.
pub struct StoreEcho {
    task: tokio::task::JoinHandle<()>,
}

impl StoreEcho {
    /// Subscribes the state store's request topic on `host:port` and answers.
    pub async fn start(host: &str, port: u16) -> anyhow::Result<StoreEcho> {
        let id = format!("store-echo-{}", std::process::id());
        let (client, mut eventloop) = AsyncClient::new(options(id, host, port), 4096);
        subscribed(&client, &mut eventloop, mqstate::topics::REQUEST_TOPIC).await?;
        let task = tokio::spawn(async move {
            loop {
                match eventloop.poll().await {
                    Ok(Event::Incoming(Packet::Publish(p))) => {
                        let Some(props) = p.properties else { continue };
                        let Some(topic) = props.response_topic else {
                            continue;
                        };
                        let answer: &'static [u8] = if p.payload.get(8..11) == Some(b"SET") {
                            b"+OK\r\n"
                        } else {
                            b"$-1\r\n"
                        };
                        let reply = PublishProperties {
                            correlation_data: props.correlation_data,
                            user_properties: vec![
                                (property::STATUS.into(), "200".into()),
                                (property::PROTOCOL_VERSION.into(), PROTOCOL_VERSION.into()),
                            ],
                            ..PublishProperties::default()
                        };
                        let _ = client.try_publish_with_properties(
                            topic,
                            QoS::AtLeastOnce,
                            false,
                            Bytes::from_static(answer),
                            reply,
                        );
                    }
                    Ok(_) => {}
                    Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
                }
            }
        });
        Ok(StoreEcho { task })
    }
}

impl Drop for StoreEcho {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Drop for RawPair {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}
