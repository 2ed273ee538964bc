//! What the client puts on the wire and how it treats what comes back: the request envelope
//! of spec §2 as a broker sees it, the one clock shared by all clients of a process,
//! cancellation, the observers' overflow policy, and garbage on the notification topic.

mod support;

use std::time::Duration;

use bytes::Bytes;
use mqstate::codec::KeyEvent;
use mqstate::{Client, ClientOptions, Hlc, SetOptions};
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::mqttbytes::v5::PublishProperties;
use rumqttc::v5::{AsyncClient, MqttOptions};
use support::{Env, next_notification, raw_subscriber};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_request_envelope_on_the_wire() {
    let env = Env::mosquitto().await;
    let mut tap = raw_subscriber(env.port, mqstate::topics::REQUEST_TOPIC).await;
    let client = env.client("envelope").await;
    let token = client.clock().tick().unwrap();
    let options = SetOptions {
        fencing_token: Some(token.clone()),
        persist: true,
        timeout: Some(Duration::from_millis(1500)),
        ..SetOptions::default()
    };
    client.set("env-key", "v", options).await.unwrap();
    let request = tap
        .next(Duration::from_secs(5))
        .await
        .expect("the tap saw the request");
    let props = request.properties.expect("properties");
    let names: Vec<&str> = props
        .user_properties
        .iter()
        .map(|(k, _)| k.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "__ft",
            "aio-persistence",
            "__srcId",
            "__ts",
            "__protVer",
            "$partition",
            "$high_priority"
        ],
        "spec §2 order"
    );
    let value = |name: &str| {
        props
            .user_properties
            .iter()
            .find(|(k, _)| k == name)
            .unwrap()
            .1
            .clone()
    };
    assert_eq!(value("__ft"), token.to_string());
    assert_eq!(value("aio-persistence"), "true");
    assert_eq!(value("__srcId"), client.client_id());
    assert_eq!(value("$partition"), client.client_id());
    assert_eq!(value("__protVer"), "1.0");
    assert_eq!(value("$high_priority"), "");
    let ts = Hlc::parse(&value("__ts")).unwrap();
    assert!(ts > token, "__ts comes from a tick after the token's");
    assert_eq!(
        props.content_type.as_deref(),
        Some("application/octet-stream")
    );
    assert_eq!(props.payload_format_indicator, None);
    assert_eq!(props.message_expiry_interval, Some(2), "1.5 s rounds up");
    assert_eq!(props.correlation_data.as_ref().map(Bytes::len), Some(16));
    assert_eq!(
        props.response_topic.as_deref(),
        Some(mqstate::topics::response_topic(client.client_id()).as_str())
    );
    assert_eq!(request.qos, QoS::AtLeastOnce);
    assert_eq!(
        &request.payload[..],
        b"*3\r\n$3\r\nSET\r\n$7\r\nenv-key\r\n$1\r\nv\r\n"
    );
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_clock_per_process_merges_every_response() {
    let env = Env::embedded().await;
    let a = env.client("clock-a").await;
    let b = env.client("clock-b").await;
    assert_eq!(a.clock().current().node_id(), b.clock().current().node_id());
    let set = a.set("clock", "v", SetOptions::default()).await.unwrap();
    let version = set.version.unwrap();
    // The response's version was merged: the shared clock is now past it.
    assert!(b.clock().current().cmp_time(&version).is_gt());
    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_request_leaves_nothing_behind() {
    // No service behind this broker: requests stay pending until dropped.
    let mosquitto = mqstate_tests::Mosquitto::start().unwrap();
    let client = Client::connect(mqstate::ConnectionSettings::new(
        "127.0.0.1",
        mosquitto.port(),
    ))
    .await
    .unwrap();
    let waiting = {
        let client = client.clone();
        tokio::spawn(async move { client.get("k").await })
    };
    support::eventually(Duration::from_secs(5), || async {
        client.pending_requests() == 1
    })
    .await;
    waiting.abort();
    let _ = waiting.await;
    assert_eq!(
        client.pending_requests(),
        0,
        "cancellation removes the pending entry"
    );
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_observer_keeps_the_newest_and_counts_the_rest() {
    let env = Env::embedded().await;
    let options = ClientOptions {
        observer_capacity: 4,
        ..ClientOptions::default()
    };
    let watcher = Client::connect_with(env.settings("slow"), options)
        .await
        .unwrap();
    let writer = env.client("fast").await;
    let mut observer = watcher.observe("flood").await.unwrap();
    // A second, ordinary observer on another connection tells when the flood is through.
    let mut witness = writer.observe("flood").await.unwrap();
    for i in 0..20 {
        writer
            .set("flood", i.to_string(), SetOptions::default())
            .await
            .unwrap();
    }
    loop {
        let n = next_notification(&mut witness).await;
        if n.event == KeyEvent::Set("19".into()) {
            break;
        }
    }
    // The slow observer's connection gets the same publishes; give it a moment past the
    // witness, then check what it kept, without having read anything before.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut delivered = Vec::new();
    while let Some(n) = observer.try_recv() {
        delivered.push(n);
    }
    assert_eq!(delivered.len(), 4, "bounded at the capacity");
    assert_eq!(
        delivered[0].dropped_before, 16,
        "the first says how many were discarded"
    );
    let values: Vec<KeyEvent> = delivered.iter().map(|n| n.event.clone()).collect();
    let expected: Vec<KeyEvent> = (16..20)
        .map(|i| KeyEvent::Set(i.to_string().into()))
        .collect();
    assert_eq!(values, expected, "the newest are kept, in order");
    drop(witness);
    watcher.shutdown().await;
    writer.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_on_the_notification_topic_is_skipped() {
    let env = Env::mosquitto().await;
    let watcher = env.client("garbage").await;
    let writer = env.client("garbage-writer").await;
    let mut observer = watcher.observe("g").await.unwrap();
    // Someone publishes nonsense where the service's notifications arrive.
    let mut opts = MqttOptions::new("vandal", "127.0.0.1", env.port);
    opts.set_max_packet_size(Some(1 << 20));
    let (vandal, mut eventloop) = AsyncClient::new(opts, 16);
    let pump = tokio::spawn(async move { while eventloop.poll().await.is_ok() {} });
    let base = mqstate::topics::notification_filter(watcher.client_id());
    let base = base.trim_end_matches('+');
    type Garbage<'a> = (String, &'a [u8], Vec<(String, String)>);
    let garbage: [Garbage; 4] = [
        (
            format!("{base}XYZ"),
            b"*2\r\n$6\r\nNOTIFY\r\n$6\r\nDELETE\r\n",
            vec![],
        ),
        (format!("{base}67"), b"not resp at all", vec![]),
        (
            format!("{base}67"),
            b"*2\r\n$6\r\nNOTIFY\r\n$6\r\nRENAME\r\n",
            vec![],
        ),
        (
            format!("{base}67"),
            b"*2\r\n$6\r\nNOTIFY\r\n$6\r\nDELETE\r\n",
            vec![("__ts".into(), "not-a-clock".into())],
        ),
    ];
    for (topic, payload, user) in garbage {
        let props = PublishProperties {
            user_properties: user,
            ..PublishProperties::default()
        };
        vandal
            .publish_with_properties(
                topic,
                QoS::AtLeastOnce,
                false,
                Bytes::from_static(payload),
                props,
            )
            .await
            .unwrap();
    }
    writer
        .set("g", "real", SetOptions::default())
        .await
        .unwrap();
    let n = next_notification(&mut observer).await;
    assert_eq!(
        n.event,
        KeyEvent::Set("real".into()),
        "the garbage was skipped, the real change arrived"
    );
    assert!(watcher.is_connected());
    pump.abort();
    watcher.shutdown().await;
    writer.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_traced_call_carries_its_trace_context_after_the_envelope() {
    use mqstate::telemetry::{CallTrace, TraceContext};
    let env = Env::mosquitto().await;
    let mut tap = raw_subscriber(env.port, mqstate::topics::REQUEST_TOPIC).await;
    let client = env.client("traced").await;
    let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let trace = CallTrace::new(Some(TraceContext::new(parent, Some("vendor=x")).unwrap()));
    let traced = client.traced(trace.clone());
    traced
        .set("traced", "v", SetOptions::default())
        .await
        .unwrap();
    client
        .set("untraced", "v", SetOptions::default())
        .await
        .unwrap();
    let names_of = |p: &rumqttc::v5::mqttbytes::v5::Publish| -> Vec<(String, String)> {
        p.properties.as_ref().unwrap().user_properties.clone()
    };
    let first = tap
        .next(Duration::from_secs(5))
        .await
        .expect("the traced SET");
    let user = names_of(&first);
    assert_eq!(
        user[user.len() - 2..],
        [
            ("traceparent".to_owned(), parent.to_owned()),
            ("tracestate".to_owned(), "vendor=x".to_owned())
        ],
        "after the spec's properties, in W3C's names"
    );
    let second = tap
        .next(Duration::from_secs(5))
        .await
        .expect("the untraced SET");
    assert!(
        names_of(&second)
            .iter()
            .all(|(k, _)| !k.starts_with("trace")),
        "a handle without a trace carries none"
    );
    assert!(
        trace.take_events().is_empty(),
        "nothing happened on the way"
    );
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_traced_call_notes_each_resending_to_a_broker_with_no_store() {
    use mqstate::telemetry::{CallTrace, names};
    // No service behind this broker: the broker routes the request to nobody, and the client
    // sends it again with growing pauses until its timeout.
    let mosquitto = mqstate_tests::Mosquitto::start().unwrap();
    let settings = mqstate::ConnectionSettings::new("127.0.0.1", mosquitto.port());
    let client = Client::connect(settings).await.unwrap();
    let trace = CallTrace::new(None);
    let err = client
        .traced(trace.clone())
        .with_timeout(Duration::from_millis(600))
        .get("k")
        .await
        .unwrap_err();
    assert_eq!(err.kind().code(), "timeout");
    let events = trace.take_events();
    assert!(!events.is_empty(), "resendings noted");
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e.name, names::EVENT_RESENT);
        assert_eq!(e.attributes, [(names::ATTEMPT, i as i64 + 2)]);
    }
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_traced_lock_or_pager_lends_its_trace_to_the_requests_it_makes() {
    use mqstate::ScanOptions;
    use mqstate::bridge::ClientHandle;
    use mqstate::lock::LockOptions;
    use mqstate::telemetry::{CallTrace, TraceContext};
    let env = Env::mosquitto().await;
    let mut tap = raw_subscriber(env.port, mqstate::topics::REQUEST_TOPIC).await;
    let store = ClientHandle::from_client(env.client("traced-lock").await);
    let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let traced = || CallTrace::new(Some(TraceContext::new(parent, None).unwrap()));
    let traceparent = |p: &rumqttc::v5::mqttbytes::v5::Publish| -> Option<String> {
        let user = &p.properties.as_ref().unwrap().user_properties;
        user.iter()
            .find(|(k, _)| k == "traceparent")
            .map(|(_, v)| v.clone())
    };
    let lock = store.lock("lock/traced", LockOptions::default()).unwrap();
    let token = lock.traced(traced()).try_acquire(None).await.unwrap();
    assert!(token.is_some());
    let acquire = tap.next(Duration::from_secs(5)).await.expect("the SET NX");
    assert_eq!(
        traceparent(&acquire).as_deref(),
        Some(parent),
        "the lock's own client's request"
    );
    assert!(
        lock.release().await.unwrap(),
        "the untraced handle shares the lock"
    );
    let release = tap.next(Duration::from_secs(5)).await.expect("the VDEL");
    assert_eq!(
        traceparent(&release),
        None,
        "a lock handle without a trace carries none"
    );
    let pager = store.scan("lock/*", ScanOptions::default()).unwrap();
    pager.traced(traced()).next_page().await.unwrap();
    let page = tap.next(Duration::from_secs(5)).await.expect("the SCAN");
    assert_eq!(traceparent(&page).as_deref(), Some(parent));
    store.close().await.unwrap();
}
