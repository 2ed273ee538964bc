//! Tests for the storage system

#[cfg(test)]
use super::super::*;
use crate::broker::storage::{
    ClientSession, InflightDirection, InflightMessage, InflightPhase, QueuedMessage,
    RetainedMessage, StoredSubscription,
};
use crate::packet::publish::PublishPacket;
use crate::protocol::v5::properties::{PropertyId, PropertyValue};
use crate::time::Duration;
use crate::QoS;
use bytes::Bytes;
use std::sync::Arc;
use tokio::time::sleep;

fn create_memory_storage() -> Storage<MemoryBackend> {
    Storage::new(MemoryBackend::new())
}

#[tokio::test]
async fn test_retained_message_storage() {
    let storage = create_memory_storage();

    // Store retained message
    let packet = PublishPacket::new("test/topic", &b"hello world"[..], QoS::AtLeastOnce);
    let retained = RetainedMessage::new(packet);

    storage
        .store_retained("test/topic", retained.clone())
        .await
        .unwrap();

    // Retrieve it
    let retrieved = storage.get_retained("test/topic").await;
    assert!(retrieved.is_some());
    assert_eq!(&retrieved.unwrap().payload[..], b"hello world");

    // Remove it
    storage.remove_retained("test/topic").await.unwrap();
    assert!(storage.get_retained("test/topic").await.is_none());
}

#[tokio::test]
async fn test_retained_message_matching() {
    let storage = create_memory_storage();

    // Store multiple retained messages
    let topics = vec![
        "sensors/temp/room1",
        "sensors/temp/room2",
        "sensors/humidity/room1",
        "devices/light/room1",
    ];

    for topic in &topics {
        let packet = PublishPacket::new(*topic, topic.as_bytes(), QoS::AtMostOnce);
        let retained = RetainedMessage::new(packet);
        storage.store_retained(topic, retained).await.unwrap();
    }

    // Test wildcard matching
    let matches = storage.get_retained_matching("sensors/+/room1").await;
    assert_eq!(matches.len(), 2);

    let matches = storage.get_retained_matching("sensors/temp/+").await;
    assert_eq!(matches.len(), 2);

    let matches = storage.get_retained_matching("sensors/#").await;
    assert_eq!(matches.len(), 3);

    let matches = storage.get_retained_matching("devices/+/room1").await;
    assert_eq!(matches.len(), 1);
}

#[tokio::test]
async fn test_session_persistence() {
    let storage = create_memory_storage();

    // Create and store session with full subscription options
    let mut session = ClientSession::new("client1".to_string(), true, Some(3600));
    session.add_subscription(
        "test/+".to_string(),
        StoredSubscription {
            qos: QoS::AtLeastOnce,
            no_local: true,
            retain_as_published: true,
            retain_handling: 1,
            subscription_id: Some(42),
            protocol_version: 5,
            change_only: false,
            flow_id: None,
        },
    );
    session.add_subscription(
        "sensors/#".to_string(),
        StoredSubscription::new(QoS::ExactlyOnce),
    );

    storage.store_session(session.clone()).await;

    let retrieved = storage.get_session("client1").await;
    assert!(retrieved.is_some());
    let retrieved_session = retrieved.unwrap();
    assert_eq!(retrieved_session.subscriptions.len(), 2);

    let sub = retrieved_session.subscriptions.get("test/+").unwrap();
    assert_eq!(sub.qos, QoS::AtLeastOnce);
    assert!(sub.no_local);
    assert!(sub.retain_as_published);
    assert_eq!(sub.retain_handling, 1);
    assert_eq!(sub.subscription_id, Some(42));

    let sub2 = retrieved_session.subscriptions.get("sensors/#").unwrap();
    assert_eq!(sub2.qos, QoS::ExactlyOnce);
    assert!(!sub2.no_local);
    assert!(!sub2.retain_as_published);

    session.remove_subscription("test/+");
    storage.store_session(session.clone()).await;

    let retrieved = storage.get_session("client1").await.unwrap();
    assert_eq!(retrieved.subscriptions.len(), 1);

    // Remove session
    storage.remove_session("client1").await.unwrap();
    assert!(storage.get_session("client1").await.is_none());
}

#[tokio::test]
async fn test_message_queuing() {
    let storage = create_memory_storage();

    // Queue messages
    let packet1 = PublishPacket::new("test/1", &b"msg1"[..], QoS::AtLeastOnce);
    let packet2 = PublishPacket::new("test/2", &b"msg2"[..], QoS::ExactlyOnce);

    let msg1 = QueuedMessage::new(packet1, "client1".to_string(), QoS::AtLeastOnce, Some(1));
    let msg2 = QueuedMessage::new(packet2, "client1".to_string(), QoS::ExactlyOnce, Some(2));

    storage.queue_message(msg1).await.unwrap();
    storage.queue_message(msg2).await.unwrap();

    // Retrieve queued messages
    let messages = storage.get_queued_messages("client1").await.unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(&messages[0].payload[..], b"msg1");
    assert_eq!(&messages[1].payload[..], b"msg2");

    // Remove queued messages
    storage.remove_queued_messages("client1").await.unwrap();
    let messages = storage.get_queued_messages("client1").await.unwrap();
    assert_eq!(messages.len(), 0);
}

#[tokio::test]
async fn test_expiry_cleanup() {
    let storage = create_memory_storage();

    // Create message with very short expiry
    let mut packet = PublishPacket::new("test/expire", &b"will expire"[..], QoS::AtMostOnce);
    packet
        .properties
        .add(
            PropertyId::MessageExpiryInterval,
            PropertyValue::FourByteInteger(1),
        )
        .unwrap();

    let retained = RetainedMessage::new(packet);
    storage
        .store_retained("test/expire", retained)
        .await
        .unwrap();

    // Should exist immediately
    assert!(storage.get_retained("test/expire").await.is_some());

    // Wait for expiry
    sleep(Duration::from_secs(2)).await;

    // Cleanup should remove it
    storage.cleanup_expired().await.unwrap();
    assert!(storage.get_retained("test/expire").await.is_none());
}

#[tokio::test]
async fn test_file_backend_persistence() {
    let dir = tempfile::tempdir().unwrap();
    let backend_path = dir.path().to_path_buf();

    // Create storage and store data
    {
        let backend = FileBackend::new(&backend_path).await.unwrap();
        let storage = Storage::new(backend);

        // Store retained message
        let packet = PublishPacket::new(
            "persistent/topic",
            &b"persistent data"[..],
            QoS::AtLeastOnce,
        );
        let retained = RetainedMessage::new(packet);
        storage
            .store_retained("persistent/topic", retained)
            .await
            .unwrap();

        // Store session
        let mut session = ClientSession::new("persistent_client".to_string(), true, None);
        session.add_subscription(
            "persistent/+".to_string(),
            StoredSubscription::new(QoS::AtLeastOnce),
        );
        storage.store_session(session).await;
        storage.flush_sessions().await.unwrap();
    }

    // Create new storage instance and verify data persisted
    {
        let backend = FileBackend::new(&backend_path).await.unwrap();
        let storage = Storage::new(backend);

        // Load retained messages
        storage.initialize().await.unwrap();

        // Check retained message
        let retained = storage.get_retained("persistent/topic").await;
        assert!(retained.is_some());
        assert_eq!(&retained.unwrap().payload[..], b"persistent data");

        // Check session
        let session = storage
            .backend
            .get_session("persistent_client")
            .await
            .unwrap();
        assert!(session.is_some());
        assert_eq!(session.unwrap().subscriptions.len(), 1);
    }
}

#[tokio::test]
async fn test_file_backend_retained_v5_properties_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let backend_path = dir.path().to_path_buf();

    {
        let backend = FileBackend::new(&backend_path).await.unwrap();

        let mut packet =
            PublishPacket::new("sensors/request", &b"25C"[..], QoS::ExactlyOnce).with_retain(true);
        packet.properties.set_message_expiry_interval(3600);
        packet
            .properties
            .set_response_topic("sensors/response".to_string());
        packet
            .properties
            .set_correlation_data(Bytes::from_static(b"corr-77"));
        packet.properties.set_content_type("text/plain".to_string());
        packet.properties.set_payload_format_indicator(true);
        packet
            .properties
            .add_user_property("trace-id".to_string(), "issue-77".to_string());

        let retained = RetainedMessage::new(packet);
        backend
            .store_retained_message("sensors/request", retained)
            .await
            .unwrap();
    }

    let backend = FileBackend::new(&backend_path).await.unwrap();
    let loaded = backend
        .get_retained_message("sensors/request")
        .await
        .unwrap()
        .expect("retained message should have been persisted");

    assert_eq!(loaded.response_topic.as_deref(), Some("sensors/response"));
    assert_eq!(loaded.correlation_data.as_deref(), Some(&b"corr-77"[..]));
    assert_eq!(loaded.content_type.as_deref(), Some("text/plain"));
    assert_eq!(loaded.payload_format_indicator, Some(true));
    assert!(
        loaded
            .user_properties
            .iter()
            .any(|(k, v)| k == "trace-id" && v == "issue-77"),
        "user property survived round-trip; got {:?}",
        loaded.user_properties
    );

    let packet = loaded.to_publish_packet();
    let restored_response_topic = packet
        .properties
        .get(PropertyId::ResponseTopic)
        .and_then(|v| {
            if let PropertyValue::Utf8String(s) = v {
                Some(s.clone())
            } else {
                None
            }
        });
    assert_eq!(restored_response_topic.as_deref(), Some("sensors/response"));
}

#[tokio::test]
async fn test_file_backend_retained_legacy_json_deserializes() {
    let dir = tempfile::tempdir().unwrap();
    let backend_path = dir.path().to_path_buf();

    let backend = FileBackend::new(&backend_path).await.unwrap();
    let retained_dir = backend_path.join("retained");
    tokio::fs::create_dir_all(&retained_dir).await.unwrap();

    let legacy_json = serde_json::json!({
        "topic": "legacytopic",
        "payload": [104, 105],
        "qos": "AtLeastOnce",
        "retain": true,
        "stored_at_secs": 1_700_000_000u64,
        "message_expiry_interval": null,
    });
    tokio::fs::write(
        retained_dir.join("legacytopic.json"),
        serde_json::to_vec_pretty(&legacy_json).unwrap(),
    )
    .await
    .unwrap();

    let loaded = backend
        .get_retained_message("legacytopic")
        .await
        .unwrap()
        .expect("legacy JSON should deserialize via serde defaults");

    assert_eq!(loaded.topic, "legacytopic");
    assert_eq!(&loaded.payload[..], b"hi");
    assert!(loaded.user_properties.is_empty());
    assert!(loaded.content_type.is_none());
    assert!(loaded.response_topic.is_none());
    assert!(loaded.correlation_data.is_none());
    assert!(loaded.payload_format_indicator.is_none());
}

#[tokio::test]
async fn test_concurrent_access() {
    let storage = Arc::new(create_memory_storage());

    // Spawn multiple tasks that access storage concurrently
    let mut handles = vec![];

    for i in 0..10 {
        let storage_clone = Arc::clone(&storage);
        let handle = tokio::spawn(async move {
            let topic = format!("concurrent/topic{i}");
            let packet = PublishPacket::new(
                &topic,
                Bytes::copy_from_slice(format!("data{i}").as_bytes()),
                QoS::AtMostOnce,
            );
            let retained = RetainedMessage::new(packet);
            storage_clone
                .store_retained(&topic, retained)
                .await
                .unwrap();
        });
        handles.push(handle);
    }

    // Wait for all tasks to complete
    for handle in handles {
        handle.await.unwrap();
    }

    // Verify all messages were stored
    let matches = storage.get_retained_matching("concurrent/+").await;
    assert_eq!(matches.len(), 10);
}

#[tokio::test]
async fn test_session_expiry() {
    let storage = create_memory_storage();

    let session = ClientSession::new("expiring_client".to_string(), true, Some(1));
    storage.store_session(session).await;

    // Should exist immediately
    assert!(storage.get_session("expiring_client").await.is_some());

    // Wait for expiry
    sleep(Duration::from_secs(2)).await;

    // Should be expired
    assert!(storage.get_session("expiring_client").await.is_none());
}

#[tokio::test]
async fn test_dynamic_storage_backends() {
    // Test with memory backend
    let memory_backend = MemoryBackend::new();
    let dynamic = DynamicStorage::Memory(memory_backend);

    let packet = PublishPacket::new("dynamic/test", &b"test data"[..], QoS::AtMostOnce);
    let retained = RetainedMessage::new(packet);

    dynamic
        .store_retained_message("dynamic/test", retained.clone())
        .await
        .unwrap();
    let retrieved = dynamic.get_retained_message("dynamic/test").await.unwrap();
    assert!(retrieved.is_some());

    // Test with file backend
    let dir = tempfile::tempdir().unwrap();
    let file_backend = FileBackend::new(dir.path()).await.unwrap();
    let dynamic = DynamicStorage::File(file_backend);

    dynamic
        .store_retained_message("dynamic/test", retained)
        .await
        .unwrap();
    let retrieved = dynamic.get_retained_message("dynamic/test").await.unwrap();
    assert!(retrieved.is_some());
}

fn create_test_inflight(
    client_id: &str,
    packet_id: u16,
    direction: InflightDirection,
    phase: InflightPhase,
) -> InflightMessage {
    let mut packet = PublishPacket::new("test/inflight", &b"inflight data"[..], QoS::ExactlyOnce);
    packet.packet_id = Some(packet_id);
    InflightMessage::from_publish(&packet, client_id.to_string(), direction, phase)
}

#[tokio::test]
async fn test_memory_inflight_store_and_retrieve() {
    let backend = MemoryBackend::new();

    let msg = create_test_inflight(
        "client1",
        1,
        InflightDirection::Outbound,
        InflightPhase::AwaitingPubrec,
    );
    backend.store_inflight_message(msg).await.unwrap();

    let msgs = backend.get_inflight_messages("client1").await.unwrap();
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0].packet_id, 1);
    assert_eq!(msgs[0].direction, InflightDirection::Outbound);
    assert_eq!(msgs[0].phase, InflightPhase::AwaitingPubrec);
    assert_eq!(msgs[0].topic, "test/inflight");
    assert_eq!(msgs[0].payload, b"inflight data");
}

#[tokio::test]
async fn test_memory_inflight_upsert() {
    let backend = MemoryBackend::new();

    let initial = create_test_inflight(
        "client1",
        1,
        InflightDirection::Outbound,
        InflightPhase::AwaitingPubrec,
    );
    backend.store_inflight_message(initial).await.unwrap();

    let updated = create_test_inflight(
        "client1",
        1,
        InflightDirection::Outbound,
        InflightPhase::AwaitingPubcomp,
    );
    backend.store_inflight_message(updated).await.unwrap();

    let stored = backend.get_inflight_messages("client1").await.unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].phase, InflightPhase::AwaitingPubcomp);
}

#[tokio::test]
async fn test_memory_inflight_remove_single() {
    let backend = MemoryBackend::new();

    let outbound = create_test_inflight(
        "client1",
        1,
        InflightDirection::Outbound,
        InflightPhase::AwaitingPubrec,
    );
    let inbound = create_test_inflight(
        "client1",
        2,
        InflightDirection::Inbound,
        InflightPhase::AwaitingPubrel,
    );
    backend.store_inflight_message(outbound).await.unwrap();
    backend.store_inflight_message(inbound).await.unwrap();

    backend
        .remove_inflight_message("client1", 1, InflightDirection::Outbound)
        .await
        .unwrap();

    let remaining = backend.get_inflight_messages("client1").await.unwrap();
    assert_eq!(remaining.len(), 1);
    assert_eq!(remaining[0].packet_id, 2);
    assert_eq!(remaining[0].direction, InflightDirection::Inbound);
}

#[tokio::test]
async fn test_memory_inflight_remove_all() {
    let backend = MemoryBackend::new();

    for i in 1..=5 {
        let msg = create_test_inflight(
            "client1",
            i,
            InflightDirection::Outbound,
            InflightPhase::AwaitingPubrec,
        );
        backend.store_inflight_message(msg).await.unwrap();
    }

    assert_eq!(
        backend
            .get_inflight_messages("client1")
            .await
            .unwrap()
            .len(),
        5
    );

    backend
        .remove_all_inflight_messages("client1")
        .await
        .unwrap();

    assert!(backend
        .get_inflight_messages("client1")
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn test_memory_inflight_direction_isolation() {
    let backend = MemoryBackend::new();

    let inbound = create_test_inflight(
        "client1",
        1,
        InflightDirection::Inbound,
        InflightPhase::AwaitingPubrel,
    );
    let outbound = create_test_inflight(
        "client1",
        1,
        InflightDirection::Outbound,
        InflightPhase::AwaitingPubrec,
    );
    backend.store_inflight_message(inbound).await.unwrap();
    backend.store_inflight_message(outbound).await.unwrap();

    let msgs = backend.get_inflight_messages("client1").await.unwrap();
    assert_eq!(msgs.len(), 2);

    backend
        .remove_inflight_message("client1", 1, InflightDirection::Inbound)
        .await
        .unwrap();

    let msgs = backend.get_inflight_messages("client1").await.unwrap();
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0].direction, InflightDirection::Outbound);
}

#[tokio::test]
async fn test_inflight_to_publish_roundtrip() {
    let mut original = PublishPacket::new("test/roundtrip", &b"payload"[..], QoS::ExactlyOnce);
    original.retain = true;
    original.packet_id = Some(42);

    let inflight = InflightMessage::from_publish(
        &original,
        "client1".to_string(),
        InflightDirection::Outbound,
        InflightPhase::AwaitingPubrec,
    );

    let reconstructed = inflight.to_publish_packet();
    assert_eq!(reconstructed.topic_name, "test/roundtrip");
    assert_eq!(&reconstructed.payload[..], b"payload");
    assert_eq!(reconstructed.qos, QoS::ExactlyOnce);
    assert!(reconstructed.retain);
    assert_eq!(reconstructed.packet_id, Some(42));
}

#[tokio::test]
async fn test_file_backend_inflight_persistence() {
    let dir = tempfile::tempdir().unwrap();
    let backend_path = dir.path().to_path_buf();

    {
        let backend = FileBackend::new(&backend_path).await.unwrap();
        let msg = create_test_inflight(
            "client1",
            1,
            InflightDirection::Outbound,
            InflightPhase::AwaitingPubrec,
        );
        backend.store_inflight_message(msg).await.unwrap();

        let msg2 = create_test_inflight(
            "client1",
            2,
            InflightDirection::Inbound,
            InflightPhase::AwaitingPubrel,
        );
        backend.store_inflight_message(msg2).await.unwrap();
        backend.shutdown().await.unwrap();
    }

    {
        let backend = FileBackend::new(&backend_path).await.unwrap();
        let msgs = backend.get_inflight_messages("client1").await.unwrap();
        assert_eq!(msgs.len(), 2);

        let outbound = msgs
            .iter()
            .find(|m| m.direction == InflightDirection::Outbound);
        assert!(outbound.is_some());
        assert_eq!(outbound.unwrap().packet_id, 1);
        assert_eq!(outbound.unwrap().phase, InflightPhase::AwaitingPubrec);

        let inbound = msgs
            .iter()
            .find(|m| m.direction == InflightDirection::Inbound);
        assert!(inbound.is_some());
        assert_eq!(inbound.unwrap().packet_id, 2);
    }
}

#[tokio::test]
async fn test_file_backend_inflight_remove() {
    let dir = tempfile::tempdir().unwrap();
    let backend = FileBackend::new(dir.path()).await.unwrap();

    let msg = create_test_inflight(
        "client1",
        1,
        InflightDirection::Outbound,
        InflightPhase::AwaitingPubrec,
    );
    backend.store_inflight_message(msg).await.unwrap();

    backend
        .remove_inflight_message("client1", 1, InflightDirection::Outbound)
        .await
        .unwrap();

    let msgs = backend.get_inflight_messages("client1").await.unwrap();
    assert!(msgs.is_empty());
}

#[tokio::test]
async fn test_file_backend_inflight_remove_all() {
    let dir = tempfile::tempdir().unwrap();
    let backend = FileBackend::new(dir.path()).await.unwrap();

    for i in 1..=3 {
        let msg = create_test_inflight(
            "client1",
            i,
            InflightDirection::Outbound,
            InflightPhase::AwaitingPubrec,
        );
        backend.store_inflight_message(msg).await.unwrap();
    }

    backend
        .remove_all_inflight_messages("client1")
        .await
        .unwrap();

    let msgs = backend.get_inflight_messages("client1").await.unwrap();
    assert!(msgs.is_empty());
}

#[tokio::test]
async fn test_dynamic_storage_inflight() {
    let memory = MemoryBackend::new();
    let dynamic = DynamicStorage::Memory(memory);

    let msg = create_test_inflight(
        "client1",
        1,
        InflightDirection::Outbound,
        InflightPhase::AwaitingPubrec,
    );
    dynamic.store_inflight_message(msg).await.unwrap();

    let msgs = dynamic.get_inflight_messages("client1").await.unwrap();
    assert_eq!(msgs.len(), 1);

    dynamic
        .remove_inflight_message("client1", 1, InflightDirection::Outbound)
        .await
        .unwrap();

    let msgs = dynamic.get_inflight_messages("client1").await.unwrap();
    assert!(msgs.is_empty());
}

#[test]
fn will_publish_delay_is_bounded_by_session_expiry() {
    let delayed_will = |delay: Option<u32>| {
        let mut will = crate::types::WillMessage::new("will/t", "gone");
        will.properties.will_delay_interval = delay;
        will
    };

    let no_will = ClientSession::new_with_will("c", true, Some(60), None);
    assert_eq!(no_will.will_publish_delay(), None);

    let undelayed = ClientSession::new_with_will("c", true, Some(60), Some(delayed_will(None)));
    assert_eq!(undelayed.will_publish_delay(), Some(0));

    let delayed = ClientSession::new_with_will("c", true, Some(60), Some(delayed_will(Some(5))));
    assert_eq!(delayed.will_publish_delay(), Some(5));

    let session_ends =
        ClientSession::new_with_will("c", false, Some(0), Some(delayed_will(Some(5))));
    assert_eq!(session_ends.will_publish_delay(), Some(0));

    let short_session =
        ClientSession::new_with_will("c", true, Some(2), Some(delayed_will(Some(10))));
    assert_eq!(short_session.will_publish_delay(), Some(2));

    let v311_persistent =
        ClientSession::new_with_will("c", true, None, Some(delayed_will(Some(10))));
    assert_eq!(v311_persistent.will_publish_delay(), Some(10));
}

fn connect_packet(
    protocol_version: u8,
    clean_start: bool,
    session_expiry: Option<u32>,
) -> crate::packet::connect::ConnectPacket {
    let mut options = mqtt5_protocol::types::ConnectOptions::new("c").with_clean_start(clean_start);
    if let Some(expiry) = session_expiry {
        options = options.with_session_expiry_interval(expiry);
    }
    let mut connect = crate::packet::connect::ConnectPacket::new(options);
    connect.protocol_version = protocol_version;
    connect
}

#[test]
fn session_expiry_from_connect_treats_absent_v5_value_as_zero() {
    assert_eq!(
        ClientSession::expiry_from_connect(&connect_packet(5, false, None)),
        Some(0)
    );
    assert_eq!(
        ClientSession::expiry_from_connect(&connect_packet(5, false, Some(120))),
        Some(120)
    );
    assert_eq!(
        ClientSession::expiry_from_connect(&connect_packet(5, true, Some(0))),
        Some(0)
    );
}

#[test]
fn session_expiry_from_connect_keeps_v311_clean_session_semantics() {
    assert_eq!(
        ClientSession::expiry_from_connect(&connect_packet(4, true, None)),
        Some(0),
        "CleanSession=1 ends the session with the connection"
    );
    assert_eq!(
        ClientSession::expiry_from_connect(&connect_packet(4, false, None)),
        None,
        "CleanSession=0 keeps the session with no expiry"
    );
}

async fn assert_update_session_is_token_guarded(backend: &impl StorageBackend) {
    let mut session = ClientSession::new_with_will(
        "guarded",
        true,
        Some(60),
        Some(crate::types::WillMessage::new("will/guarded", "gone")),
    );
    session.connection_token = 7;
    backend.store_session(session).await.unwrap();

    let stale = backend
        .update_session("guarded", 6, |stored| stored.will_message = None)
        .await
        .unwrap();
    assert!(
        !stale,
        "a different connection token must not update the session"
    );
    let stored = backend.get_session("guarded").await.unwrap().unwrap();
    assert!(stored.will_message.is_some());

    let owned = backend
        .update_session("guarded", 7, |stored| stored.will_message = None)
        .await
        .unwrap();
    assert!(owned);
    let stored = backend.get_session("guarded").await.unwrap().unwrap();
    assert!(stored.will_message.is_none());

    let missing = backend
        .update_session("absent", 7, |stored| stored.will_message = None)
        .await
        .unwrap();
    assert!(!missing);
}

#[tokio::test]
async fn memory_update_session_is_token_guarded() {
    assert_update_session_is_token_guarded(&MemoryBackend::new()).await;
}

#[tokio::test]
async fn file_update_session_is_token_guarded() {
    let dir = tempfile::tempdir().unwrap();
    let backend = FileBackend::new(dir.path()).await.unwrap();
    assert_update_session_is_token_guarded(&backend).await;
}
