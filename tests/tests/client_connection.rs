//! The connection's handling of rumqttc's traps and of its settings, each observed from
//! outside: large packets, the broker's maximum packet size, backoff between reconnection
//! attempts, a close that really closes, sessions kept or lost, clear errors for
//! unreadable credential files, a response read together with the broker's DISCONNECT, and
//! queued requests written together.

mod support;

use std::time::Duration;

use mqstate::{Client, ConnectionSettings, ErrorKind, SetOptions, TlsSettings};
use mqstate_server::{BrokerTarget, Server, ServerConfig};
use mqstate_tests::Mosquitto;
use mqstate_tests::proxy::TcpProxy;
use support::{Env, eventually};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_far_beyond_rumqttc_default_packet_cap() {
    // rumqttc caps incoming packets at 10 KiB unless told otherwise.
    let env = Env::mosquitto().await;
    let client = env.client("big").await;
    let value: Vec<u8> = (0..1_048_576u32).map(|i| (i % 251) as u8).collect();
    assert!(
        client
            .set("big", &value, SetOptions::default())
            .await
            .unwrap()
            .applied
    );
    assert_eq!(
        &client.get("big").await.unwrap().unwrap().value[..],
        &value[..]
    );
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_just_under_and_just_over_the_broker_maximum() {
    let max: usize = 65_536;
    let mosquitto = Mosquitto::start_with_config(&format!("max_packet_size {max}")).unwrap();
    let config = ServerConfig {
        broker: Some(BrokerTarget::parse(&mosquitto.url()).unwrap()),
        ..mqstate_tests::server_config()
    };
    let server = Server::start(config).await.unwrap();
    let client = Client::connect(ConnectionSettings::new("127.0.0.1", mosquitto.port()))
        .await
        .unwrap();
    assert_eq!(client.link_info().broker_max_packet_size as usize, max);
    // The envelope (topic, correlation, user properties) takes a few hundred bytes.
    let under = vec![b'u'; max - 700];
    assert!(
        client
            .set("under", &under, SetOptions::default())
            .await
            .unwrap()
            .applied
    );
    assert_eq!(
        client.get("under").await.unwrap().unwrap().value.len(),
        under.len()
    );
    let over = vec![b'o'; max - 100];
    let err = client
        .set("over", &over, SetOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    assert!(err.message().contains(&max.to_string()), "{err}");
    // Refused before sending: the connection is intact.
    assert!(
        client
            .set("after", "ok", SetOptions::default())
            .await
            .unwrap()
            .applied
    );
    assert_eq!(client.link_info().connections, 1);
    client.shutdown().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnection_attempts_back_off() {
    let env = Env::embedded().await;
    let proxy = TcpProxy::start(([127, 0, 0, 1], env.port).into())
        .await
        .unwrap();
    let mut settings = env.settings_on("backoff", proxy.port());
    settings.reconnect_min_delay = Duration::from_millis(20);
    settings.reconnect_max_delay = Duration::from_millis(400);
    let client = Client::connect(settings).await.unwrap();
    proxy.set_accepting(false);
    proxy.cut();
    eventually(Duration::from_secs(5), || async { !client.is_connected() }).await;
    let before = proxy.attempts();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let attempts = proxy.attempts() - before;
    // rumqttc alone retries in a hot loop (tens of thousands a second); with backoff capped
    // at 400 ms two seconds hold a handful.
    assert!((1..=20).contains(&attempts), "{attempts} attempts in 2 s");
    proxy.set_accepting(true);
    eventually(Duration::from_secs(5), || async {
        client
            .set("back", "again", SetOptions::default())
            .await
            .is_ok()
    })
    .await;
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_and_drop_really_close() {
    let env = Env::embedded().await;
    let proxy = TcpProxy::start(([127, 0, 0, 1], env.port).into())
        .await
        .unwrap();
    let client = Client::connect(env.settings_on("close", proxy.port()))
        .await
        .unwrap();
    let observer = client.observe("closing").await.unwrap();
    assert_eq!(proxy.live(), 1);
    client.shutdown().await;
    eventually(Duration::from_secs(5), || async { proxy.live() == 0 }).await;
    let err = client.get("k").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Closed);
    let mut observer = observer;
    assert!(
        observer.recv().await.is_none(),
        "observers end with the client"
    );

    // Dropping every handle closes too.
    let other = Client::connect(env.settings_on("dropped", proxy.port()))
        .await
        .unwrap();
    assert_eq!(proxy.live(), 1);
    drop(other);
    eventually(Duration::from_secs(5), || async { proxy.live() == 0 }).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_kept_or_lost_as_the_broker_says() {
    // A broker that keeps sessions across its restart: one session, two connections.
    let mut mosquitto = Mosquitto::start_persistent().unwrap();
    let mut settings = ConnectionSettings::new("127.0.0.1", mosquitto.port());
    settings.reconnect_max_delay = Duration::from_millis(300);
    // mosquitto 2.0.11 does not save a session that began with clean start, even with an
    // expiry interval (its log shows `c1`): a client that must keep its session across a
    // mosquitto restart starts without clean start. Reconnections never ask for one.
    settings.clean_start = false;
    let kept = Client::connect(settings.clone()).await.unwrap();
    let mut no_expiry = settings;
    no_expiry.client_id = None;
    no_expiry.clean_start = true;
    no_expiry.session_expiry = Duration::ZERO;
    let lost = Client::connect(no_expiry).await.unwrap();
    mosquitto.restart().unwrap();
    eventually(Duration::from_secs(10), || async {
        kept.link_info().connections >= 2 && lost.link_info().connections >= 2
    })
    .await;
    assert_eq!(
        kept.link_info().sessions,
        1,
        "the session survived (clean start only at first)"
    );
    assert_eq!(
        lost.link_info().sessions,
        2,
        "a zero session expiry ends the session with the connection"
    );
    kept.shutdown().await;
    lost.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreadable_credentials_and_tls_settings_are_clear_errors() {
    let env = Env::embedded().await;
    let mut settings = env.settings("creds");
    settings.password_file = Some("/nonexistent/mqstate-password".into());
    let err = Client::connect(settings).await.unwrap_err();
    assert!(err.kind().is_connect(), "{err:?}");
    assert!(
        err.message().contains("/nonexistent/mqstate-password"),
        "{err}"
    );

    let mut settings = env.settings("sat");
    settings.sat_file = Some("/nonexistent/mqstate-sat".into());
    let err = Client::connect(settings).await.unwrap_err();
    assert!(err.message().contains("/nonexistent/mqstate-sat"), "{err}");

    let mut settings = env.settings("tls");
    settings.tls = Some(TlsSettings::default());
    // No CA file: the system's roots (the broker here speaks no TLS), and the error says so.
    let err = Client::connect(settings).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Tls, "{err}");
    assert!(
        err.message().contains("system's root certificates"),
        "{err}"
    );

    // A password file that exists is read (mosquitto allows anonymous users: it connects).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("password");
    std::fs::write(&path, "secret\n").unwrap();
    let mut settings = env.settings("creds-ok");
    settings.username = Some("user".into());
    settings.password_file = Some(path);
    Client::connect(settings).await.unwrap().shutdown().await;
}

/// A scripted broker's next packet from `socket` (`read` holds what was read beyond it);
/// `None` once the client has closed.
async fn next_packet(
    socket: &mut tokio::net::TcpStream,
    read: &mut bytes::BytesMut,
) -> Option<rumqttc::v5::mqttbytes::v5::Packet> {
    use tokio::io::AsyncReadExt;
    loop {
        if let Ok(packet) = rumqttc::v5::mqttbytes::v5::Packet::read(read, None) {
            return Some(packet);
        }
        if socket.read_buf(read).await.unwrap_or(0) == 0 {
            return None;
        }
    }
}

/// The CONNACK of a scripted broker: the connection accepted, no session kept.
fn accepted() -> rumqttc::v5::mqttbytes::v5::Packet {
    use rumqttc::v5::mqttbytes::v5::{ConnAck, ConnectReturnCode, Packet};
    Packet::ConnAck(ConnAck {
        session_present: false,
        code: ConnectReturnCode::Success,
        properties: None,
    })
}

/// A broker that writes a response and its DISCONNECT together (a broker shutting down
/// right after the store's last answer): the client reads both in one batch, and the
/// response must still complete its request. rumqttc kept what it read before the
/// connection ended until a reconnection that never came (third_party/rumqttc/PATCHES.md,
/// 2); the request waited out its timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_read_with_the_brokers_disconnect_completes_its_request() {
    use bytes::BytesMut;
    use rumqttc::v5::mqttbytes::QoS;
    use rumqttc::v5::mqttbytes::v5::{
        Disconnect, DisconnectReasonCode, Packet, PubAck, Publish, PublishProperties, SubAck,
        SubscribeReasonCode,
    };
    use tokio::io::AsyncWriteExt;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let broker = tokio::spawn(async move {
        // One connection; the listener goes with this task, so reconnecting fails.
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut read = BytesMut::new();
        loop {
            let packet = next_packet(&mut socket, &mut read)
                .await
                .expect("the client closed before its request");
            let mut out = BytesMut::new();
            let reply = |packet: Packet, out: &mut BytesMut| {
                packet.write(out, None).unwrap();
            };
            match packet {
                Packet::Connect(..) => reply(accepted(), &mut out),
                Packet::Subscribe(subscribe) => reply(
                    Packet::SubAck(SubAck {
                        pkid: subscribe.pkid,
                        return_codes: vec![
                            SubscribeReasonCode::Success(QoS::AtLeastOnce);
                            subscribe.filters.len()
                        ],
                        properties: None,
                    }),
                    &mut out,
                ),
                Packet::Publish(request) => {
                    let properties = request.properties.unwrap();
                    reply(Packet::PubAck(PubAck::new(request.pkid, None)), &mut out);
                    let response = Publish::new(
                        properties.response_topic.unwrap(),
                        QoS::AtMostOnce,
                        &b"+OK\r\n"[..],
                        Some(PublishProperties {
                            correlation_data: properties.correlation_data,
                            user_properties: vec![("__stat".into(), "200".into())],
                            ..PublishProperties::default()
                        }),
                    );
                    reply(Packet::Publish(response), &mut out);
                    let bye = Disconnect::new(DisconnectReasonCode::ServerShuttingDown);
                    reply(Packet::Disconnect(bye), &mut out);
                    // One write: the client reads the three packets in one batch.
                    socket.write_all(&out).await.unwrap();
                    return;
                }
                _ => {}
            }
            socket.write_all(&out).await.unwrap();
        }
    });
    let mut settings = ConnectionSettings::new("127.0.0.1", port);
    settings.client_id = Some("batched-disconnect".into());
    let client = Client::connect(settings).await.unwrap();
    let set = tokio::time::timeout(
        Duration::from_secs(5),
        client.set("k", "v", SetOptions::default()),
    )
    .await
    .expect("the response read before the DISCONNECT completed the request");
    assert!(set.is_ok(), "{set:?}");
    broker.await.unwrap();
    client.shutdown().await;
}

/// Requests already waiting in rumqttc's channel go out in one write, as far as flow control
/// lets them (third_party/rumqttc/PATCHES.md, 3): the first `poll` takes every queued
/// request its in-flight window allows and queues their events, which `poll_buffered` then
/// hands out without another `poll`; the request the window holds back waits for an
/// acknowledgement.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_requests_go_out_in_one_write_within_the_in_flight_window() {
    use bytes::BytesMut;
    use rumqttc::Outgoing;
    use rumqttc::v5::mqttbytes::QoS;
    use rumqttc::v5::mqttbytes::v5::Packet;
    use rumqttc::v5::{AsyncClient, Event, Incoming, MqttOptions};
    use tokio::io::AsyncWriteExt;

    const WINDOW: u16 = 3;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    // A broker that accepts the connection, then only counts the PUBLISH packets it reads
    // (and acknowledges none).
    let (seen_tx, mut seen) = tokio::sync::mpsc::unbounded_channel::<u16>();
    let broker = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut read = BytesMut::new();
        while let Some(packet) = next_packet(&mut socket, &mut read).await {
            match packet {
                Packet::Connect(..) => {
                    let mut out = BytesMut::new();
                    accepted().write(&mut out, None).unwrap();
                    socket.write_all(&out).await.unwrap();
                }
                Packet::Publish(publish) => {
                    let _ = seen_tx.send(publish.pkid);
                }
                _ => {}
            }
        }
    });

    let mut options = MqttOptions::new("batched-writes", "127.0.0.1", port);
    options.set_outgoing_inflight_upper_limit(WINDOW);
    let (client, mut eventloop) = AsyncClient::new(options, 16);
    let connected = tokio::time::timeout(Duration::from_secs(5), eventloop.poll())
        .await
        .expect("connected in time")
        .unwrap();
    assert!(
        matches!(connected, Event::Incoming(Incoming::ConnAck(_))),
        "{connected:?}"
    );
    for i in 0..5u8 {
        client
            .try_publish("t", QoS::AtLeastOnce, false, vec![i])
            .unwrap();
    }
    let first = tokio::time::timeout(Duration::from_secs(5), eventloop.poll())
        .await
        .expect("the first request went out in time")
        .unwrap();
    assert_eq!(first, Event::Outgoing(Outgoing::Publish(1)));
    // The rest of the window went out with it: its events are queued already.
    let mut batched = Vec::new();
    while let Some(event) = eventloop.poll_buffered() {
        batched.push(event);
    }
    assert_eq!(
        batched,
        [2, 3].map(|pkid| Event::Outgoing(Outgoing::Publish(pkid))),
        "the window holds WINDOW requests; the others wait for acknowledgements"
    );
    let mut received = Vec::new();
    while received.len() < usize::from(WINDOW) {
        let pkid = tokio::time::timeout(Duration::from_secs(5), seen.recv())
            .await
            .expect("the broker read the batch in time")
            .unwrap();
        received.push(pkid);
    }
    assert_eq!(received, [1, 2, 3]);
    drop(client);
    drop(eventloop);
    broker.abort();
}

/// rumqttc patch 4 (third_party/rumqttc/PATCHES.md): an incoming packet's event is the packet
/// itself, not a copy made before it was handled. It keeps its place ahead of the
/// acknowledgement its handling queues, and a PUBLISH sent with only a topic alias comes out
/// with the topic the alias stands for (the copy had the empty topic).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn incoming_packets_come_out_handled_and_ahead_of_their_acknowledgements() {
    use bytes::BytesMut;
    use rumqttc::Outgoing;
    use rumqttc::v5::mqttbytes::QoS;
    use rumqttc::v5::mqttbytes::v5::{Packet, Publish, PublishProperties};
    use rumqttc::v5::{AsyncClient, Event, Incoming, MqttOptions};
    use tokio::io::AsyncWriteExt;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let aliased = |topic: &str, pkid: u16| {
        let properties = PublishProperties {
            topic_alias: Some(7),
            ..PublishProperties::default()
        };
        let mut publish = Publish::new(topic, QoS::AtLeastOnce, vec![1u8], Some(properties));
        publish.pkid = pkid;
        publish
    };
    let (first, second) = (aliased("a/b", 1), aliased("", 2));
    let sent = [first.clone(), second.clone()];
    // A broker that accepts the connection, then sends both in one write.
    let broker = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut read = BytesMut::new();
        while let Some(packet) = next_packet(&mut socket, &mut read).await {
            if let Packet::Connect(..) = packet {
                let mut out = BytesMut::new();
                accepted().write(&mut out, None).unwrap();
                for publish in &sent {
                    Packet::Publish(publish.clone())
                        .write(&mut out, None)
                        .unwrap();
                }
                socket.write_all(&out).await.unwrap();
            }
        }
    });

    let options = MqttOptions::new("events-handled", "127.0.0.1", port);
    let (client, mut eventloop) = AsyncClient::new(options, 16);
    let mut events = Vec::new();
    while events.len() < 5 {
        let event = tokio::time::timeout(Duration::from_secs(5), eventloop.poll())
            .await
            .expect("the broker's packets came in time")
            .unwrap();
        events.push(event);
    }
    assert!(
        matches!(events[0], Event::Incoming(Incoming::ConnAck(_))),
        "{events:?}"
    );
    let resolved = Publish {
        topic: first.topic.clone(),
        ..second
    };
    assert_eq!(
        events[1..],
        [
            Event::Incoming(Incoming::Publish(first)),
            Event::Outgoing(Outgoing::PubAck(1)),
            Event::Incoming(Incoming::Publish(resolved)),
            Event::Outgoing(Outgoing::PubAck(2)),
        ]
    );
    drop(client);
    drop(eventloop);
    broker.abort();
}
