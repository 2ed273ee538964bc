//! Races and forgeries the client must survive: `observe()` racing reconnections (the
//! SUBSCRIBE bookkeeping), a forged notification version that would otherwise become the
//! ordering baseline, and an observe whose GET times out after its KEYNOTIFY was applied.

mod support;

use std::time::Duration;

use bytes::Bytes;
use mqstate::codec::KeyEvent;
use mqstate::{Client, ClientOptions, ErrorKind, Hlc, ObserveOptions, SetOptions};
use mqstate_tests::proxy::TcpProxy;
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::mqttbytes::v5::PublishProperties;
use rumqttc::v5::{AsyncClient, MqttOptions};
use support::{Env, next_notification, raw_subscriber};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observe_racing_reconnections_always_ends_subscribed() {
    let env = Env::mosquitto().await;
    let writer = env.client("race-writer").await;
    let proxy = TcpProxy::start(([127, 0, 0, 1], env.port).into())
        .await
        .unwrap();
    let options = ClientOptions {
        request_timeout: Duration::from_secs(2),
        ..ClientOptions::default()
    };
    for i in 0..100u64 {
        let mut settings = env.settings_on("race", proxy.port());
        settings.reconnect_min_delay = Duration::from_millis(1);
        settings.reconnect_max_delay = Duration::from_millis(20);
        let client = Client::connect_with(settings, options.clone())
            .await
            .unwrap();
        let key = format!("race/{i}");
        let observing = {
            let (client, key) = (client.clone(), key.clone());
            tokio::spawn(async move { client.observe(&key).await })
        };
        // Cut the connection somewhere in the SUBSCRIBE / KEYNOTIFY / GET exchange.
        tokio::time::sleep(Duration::from_micros(i * 37 % 3000)).await;
        proxy.cut();
        let mut observer = match observing.await.unwrap() {
            Ok(observer) => observer,
            Err(e) => {
                assert!(
                    matches!(e.kind(), ErrorKind::ConnectionLost | ErrorKind::Timeout),
                    "iteration {i}: {e}"
                );
                client
                    .observe_with(
                        &key,
                        ObserveOptions {
                            timeout: Some(Duration::from_secs(10)),
                        },
                    )
                    .await
                    .unwrap_or_else(|e| panic!("iteration {i}: observe after the race: {e}"))
            }
        };
        let set = writer.set(&key, "v", SetOptions::default()).await.unwrap();
        // The change arrives (possibly after a resync notification of the same state).
        loop {
            let n = next_notification(&mut observer).await;
            if n.version == set.version {
                break;
            }
            assert!(n.resync, "iteration {i}: unexpected {n:?}");
        }
        client.shutdown().await;
    }
}

/// A notification forged by another MQTT client, with a version far in the future.
async fn forge(port: u16, client_id: &str, key: &str, value: &str) {
    let mut opts = MqttOptions::new(
        format!("forger-{}", uuid::Uuid::new_v4().simple()),
        "127.0.0.1",
        port,
    );
    opts.set_max_packet_size(Some(1 << 20));
    let (mqtt, mut eventloop) = AsyncClient::new(opts, 16);
    let future_ms = 4_102_444_800_000; // 2100-01-01
    let ts = Hlc::new(future_ms, 0, "forger").unwrap().to_text();
    let props = PublishProperties {
        user_properties: vec![("__ts".into(), ts)],
        ..PublishProperties::default()
    };
    let payload = KeyEvent::Set(Bytes::from(value.to_owned())).encode();
    let topic = mqstate::topics::notification_topic(client_id, key.as_bytes());
    mqtt.publish_with_properties(topic, QoS::AtLeastOnce, false, payload, props)
        .await
        .unwrap();
    // Drive the event loop until the PUBACK.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while tokio::time::Instant::now() < deadline {
        if let Ok(Ok(rumqttc::v5::Event::Incoming(rumqttc::v5::mqttbytes::v5::Packet::PubAck(_)))) =
            tokio::time::timeout(Duration::from_secs(1), eventloop.poll()).await
        {
            return;
        }
    }
    panic!("the forged notification was not acknowledged");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_future_version_never_becomes_the_ordering_baseline() {
    let env = Env::mosquitto().await;
    let client = env.client("forged").await;
    let writer = env.client("forged-writer").await;
    let mut observer = client.observe("forged-key").await.unwrap();
    forge(env.port, client.client_id(), "forged-key", "forged").await;
    let set = writer
        .set("forged-key", "genuine", SetOptions::default())
        .await
        .unwrap();
    let n = next_notification(&mut observer).await;
    assert_eq!(
        n.event,
        KeyEvent::Set("genuine".into()),
        "forged one skipped"
    );
    assert_eq!(n.version, set.version);
    let again = writer
        .set("forged-key", "genuine-2", SetOptions::default())
        .await
        .unwrap();
    let n = next_notification(&mut observer).await;
    assert_eq!(
        n.version, again.version,
        "later genuine changes still arrive"
    );
    assert!(observer.try_recv().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_observe_after_its_keynotify_sends_stop() {
    let mut env = Env::mosquitto().await;
    let mut tap = raw_subscriber(env.port, mqstate::topics::REQUEST_TOPIC).await;
    let client = env.client("leak").await;
    // With the service gone the KEYNOTIFY goes out but is never answered: the observe
    // fails, and the KEYNOTIFY may still be applied later, so a STOP is owed.
    env.fixture.stop_server().await;
    let short = ObserveOptions {
        timeout: Some(Duration::from_millis(300)),
    };
    let err = client.observe_with("leak-key", short).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert!(err.may_have_applied());
    let mut saw_keynotify = false;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while let Some(p) = tap
        .next(deadline.saturating_duration_since(tokio::time::Instant::now()))
        .await
    {
        let text = String::from_utf8_lossy(&p.payload);
        if text.contains("KEYNOTIFY") && text.contains("leak-key") {
            if text.contains("STOP") {
                assert!(saw_keynotify);
                return;
            }
            saw_keynotify = true;
        }
    }
    panic!("no STOP followed the KEYNOTIFY of the failed observe (saw KEYNOTIFY: {saw_keynotify})");
}
