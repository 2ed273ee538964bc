//! Storage layer for MQTT broker persistence
//!
//! Provides durable storage for retained messages, client sessions, and message queues.
//! Designed for production use with atomic operations and efficient file-based storage.

pub mod client_queue;
#[cfg(all(not(target_arch = "wasm32"), feature = "file-storage"))]
pub mod file_backend;
pub mod memory_backend;
pub mod queue;
pub mod retained;
#[cfg(all(not(target_arch = "wasm32"), feature = "file-storage"))]
mod session_log;
pub mod sessions;
mod write_behind;

pub use client_queue::{
    ClientQueue, PushOutcome, QueueHandle, QueueLimits, QueueRegistry, SEQ_FLOOR,
};
#[cfg(all(not(target_arch = "wasm32"), feature = "file-storage"))]
pub use file_backend::FileBackend;
pub use memory_backend::MemoryBackend;
pub use queue::MessageQueue;
pub use retained::RetainedMessages;
pub use sessions::SessionManager;

#[cfg(test)]
mod tests;

use crate::error::Result;
use crate::packet::publish::PublishPacket;
use crate::time::{Duration, SystemTime};
use crate::QoS;
use serde::{Deserialize, Serialize};
use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::sync::RwLock;
use tracing::warn;

/// MQTT v5 publish properties extracted from a `PublishPacket` for storage.
///
/// Shared by `RetainedMessage` and `InflightMessage` to avoid duplicating the
/// `PropertyId`/`PropertyValue` extraction and round-trip logic.
struct V5PublishProps {
    user_properties: Vec<(String, String)>,
    content_type: Option<String>,
    response_topic: Option<String>,
    correlation_data: Option<Vec<u8>>,
    payload_format_indicator: Option<bool>,
}

impl V5PublishProps {
    fn from_packet(packet: &PublishPacket) -> Self {
        use crate::protocol::v5::properties::{PropertyId, PropertyValue};

        let user_properties = packet
            .properties
            .get_all(PropertyId::UserProperty)
            .map(|values| {
                values
                    .iter()
                    .filter_map(|v| {
                        if let PropertyValue::Utf8StringPair(k, val) = v {
                            Some((k.clone(), val.clone()))
                        } else {
                            None
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();

        let content_type = packet.properties.get_content_type();

        let response_topic = packet
            .properties
            .get(PropertyId::ResponseTopic)
            .and_then(|v| {
                if let PropertyValue::Utf8String(s) = v {
                    Some(s.clone())
                } else {
                    None
                }
            });

        let correlation_data = packet
            .properties
            .get(PropertyId::CorrelationData)
            .and_then(|v| {
                if let PropertyValue::BinaryData(b) = v {
                    Some(b.to_vec())
                } else {
                    None
                }
            });

        let payload_format_indicator = packet
            .properties
            .get(PropertyId::PayloadFormatIndicator)
            .and_then(|v| {
                if let PropertyValue::Byte(b) = v {
                    Some(*b != 0)
                } else {
                    None
                }
            });

        Self {
            user_properties,
            content_type,
            response_topic,
            correlation_data,
            payload_format_indicator,
        }
    }
}

fn apply_v5_props(
    packet: &mut PublishPacket,
    user_properties: &[(String, String)],
    content_type: Option<&str>,
    response_topic: Option<&str>,
    correlation_data: Option<&[u8]>,
    payload_format_indicator: Option<bool>,
) {
    for (key, value) in user_properties {
        packet
            .properties
            .add_user_property(key.clone(), value.clone());
    }

    if let Some(ct) = content_type {
        packet.properties.set_content_type(ct.to_string());
    }

    if let Some(rt) = response_topic {
        packet.properties.set_response_topic(rt.to_string());
    }

    if let Some(cd) = correlation_data {
        packet.properties.set_correlation_data(cd.to_vec().into());
    }

    if let Some(pfi) = payload_format_indicator {
        packet.properties.set_payload_format_indicator(pfi);
    }
}

/// Retained message with metadata
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RetainedMessage {
    /// Topic name
    pub topic: String,
    /// Message payload
    pub payload: Vec<u8>,
    /// Quality of Service level
    pub qos: QoS,
    /// Retain flag
    pub retain: bool,
    /// When the message was stored (Unix timestamp in seconds)
    pub stored_at_secs: u64,
    /// Original message expiry interval in seconds (if any)
    pub message_expiry_interval: Option<u32>,
    /// Message expiry time (computed from `stored_at` + interval)
    #[serde(skip)]
    pub expires_at: Option<SystemTime>,
    #[serde(default)]
    pub user_properties: Vec<(String, String)>,
    #[serde(default)]
    pub content_type: Option<String>,
    #[serde(default)]
    pub response_topic: Option<String>,
    #[serde(default)]
    pub correlation_data: Option<Vec<u8>>,
    #[serde(default)]
    pub payload_format_indicator: Option<bool>,
}

const CHANGE_ONLY_MAX_TOPICS: usize = 10_000;

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct ChangeOnlyState {
    pub last_payload_hashes: HashMap<String, u64>,
}

impl ChangeOnlyState {
    #[must_use]
    pub fn compute_hash(payload: &[u8]) -> u64 {
        let mut hasher = DefaultHasher::new();
        payload.hash(&mut hasher);
        hasher.finish()
    }

    #[must_use]
    pub fn should_deliver(&self, topic: &str, payload: &[u8]) -> bool {
        let hash = Self::compute_hash(payload);
        self.last_payload_hashes.get(topic) != Some(&hash)
    }

    pub fn update_hash(&mut self, topic: &str, payload: &[u8]) {
        let hash = Self::compute_hash(payload);
        if self.last_payload_hashes.len() >= CHANGE_ONLY_MAX_TOPICS
            && !self.last_payload_hashes.contains_key(topic)
        {
            if let Some(key) = self.last_payload_hashes.keys().next().cloned() {
                self.last_payload_hashes.remove(&key);
            }
        }
        self.last_payload_hashes.insert(topic.to_string(), hash);
    }
}

/// Stored subscription options for session persistence
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoredSubscription {
    pub qos: QoS,
    pub no_local: bool,
    pub retain_as_published: bool,
    #[serde(default)]
    pub retain_handling: u8,
    pub subscription_id: Option<u32>,
    #[serde(default = "default_protocol_version")]
    pub protocol_version: u8,
    #[serde(default)]
    pub change_only: bool,
    #[serde(default)]
    pub flow_id: Option<u64>,
}

fn default_protocol_version() -> u8 {
    5
}

impl StoredSubscription {
    #[must_use]
    pub fn new(qos: QoS) -> Self {
        Self {
            qos,
            no_local: false,
            retain_as_published: false,
            retain_handling: 0,
            subscription_id: None,
            protocol_version: 5,
            change_only: false,
            flow_id: None,
        }
    }
}

/// Client session information
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClientSession {
    /// Client identifier
    pub client_id: String,
    /// Whether the session should persist after disconnect
    pub persistent: bool,
    /// Session expiry interval in seconds
    pub expiry_interval: Option<u32>,
    /// Active subscriptions with full options
    pub subscriptions: HashMap<String, StoredSubscription>,
    /// Session creation time
    #[serde(skip, default = "SystemTime::now")]
    pub created_at: SystemTime,
    /// Last activity time
    #[serde(skip, default = "SystemTime::now")]
    pub last_seen: SystemTime,
    /// Will message to publish on abnormal disconnect
    pub will_message: Option<crate::types::WillMessage>,
    /// Will delay interval in seconds (extracted for convenience)
    pub will_delay_interval: Option<u32>,
    /// Client's receive maximum (for broker outbound flow control)
    #[serde(default = "default_receive_maximum")]
    pub receive_maximum: u16,
    #[serde(default)]
    pub change_only_state: ChangeOnlyState,
    #[serde(default)]
    pub user_id: Option<String>,
    #[serde(default)]
    pub connection_token: u64,
    #[serde(skip)]
    pub connected: bool,
    #[serde(default)]
    pub disconnected_at: Option<u64>,
}

#[must_use]
pub fn unix_millis_now() -> u64 {
    SystemTime::now()
        .duration_since(crate::time::UNIX_EPOCH)
        .map_or(0, |elapsed| {
            u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
        })
}

fn default_receive_maximum() -> u16 {
    65535
}

/// Queued message for offline client
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct QueuedMessage {
    /// Topic name
    pub topic: String,
    /// Message payload
    pub payload: Vec<u8>,
    /// Target client ID
    pub client_id: String,
    /// `QoS` level for delivery
    pub qos: QoS,
    /// When the message was queued (Unix timestamp in seconds)
    pub queued_at_secs: u64,
    /// Original message expiry interval in seconds (if any)
    pub message_expiry_interval: Option<u32>,
    /// Message expiry time (computed from `queued_at` + interval)
    #[serde(skip)]
    pub expires_at: Option<SystemTime>,
    /// Packet ID for `QoS` 1/2 delivery
    pub packet_id: Option<u16>,
    /// Re-delivery of a message the client may already have seen
    #[serde(default)]
    pub dup: bool,
    #[serde(default)]
    pub retain: bool,
    /// Server data flow the delivery was bound to, when the subscription came in on one
    #[serde(default)]
    pub target_flow: Option<u64>,
    #[serde(default)]
    pub subscription_identifiers: Vec<u32>,
    #[serde(default)]
    pub user_properties: Vec<(String, String)>,
    #[serde(default)]
    pub content_type: Option<String>,
    #[serde(default)]
    pub response_topic: Option<String>,
    #[serde(default)]
    pub correlation_data: Option<Vec<u8>>,
    #[serde(default)]
    pub payload_format_indicator: Option<bool>,
}

/// Storage backend trait for broker persistence
pub trait StorageBackend: Send + Sync {
    /// The client's queue, created on first touch; the only path for queued-message state.
    fn queue_handle(&self, client_id: &str) -> QueueHandle;

    /// Store a retained message
    fn store_retained_message(
        &self,
        topic: &str,
        message: RetainedMessage,
    ) -> impl std::future::Future<Output = Result<()>> + Send;

    /// Retrieve a retained message
    fn get_retained_message(
        &self,
        topic: &str,
    ) -> impl std::future::Future<Output = Result<Option<RetainedMessage>>> + Send;

    /// Remove a retained message
    fn remove_retained_message(
        &self,
        topic: &str,
    ) -> impl std::future::Future<Output = Result<()>> + Send;

    /// Get all retained messages matching a topic filter
    fn get_retained_messages(
        &self,
        topic_filter: &str,
    ) -> impl std::future::Future<Output = Result<Vec<(String, RetainedMessage)>>> + Send;

    /// Store client session
    fn store_session(
        &self,
        session: ClientSession,
    ) -> impl std::future::Future<Output = Result<()>> + Send;

    /// Retrieve client session
    fn get_session(
        &self,
        client_id: &str,
    ) -> impl std::future::Future<Output = Result<Option<ClientSession>>> + Send;

    /// Remove client session
    fn remove_session(
        &self,
        client_id: &str,
    ) -> impl std::future::Future<Output = Result<()>> + Send;

    /// Queue message for offline client
    fn queue_message(
        &self,
        message: QueuedMessage,
    ) -> impl std::future::Future<Output = Result<()>> + Send;

    /// Get queued messages for client
    fn get_queued_messages(
        &self,
        client_id: &str,
    ) -> impl std::future::Future<Output = Result<Vec<QueuedMessage>>> + Send;

    /// Remove queued messages for client
    fn remove_queued_messages(
        &self,
        client_id: &str,
    ) -> impl std::future::Future<Output = Result<()>> + Send;

    fn store_inflight_message(
        &self,
        _message: InflightMessage,
    ) -> impl std::future::Future<Output = Result<()>> + Send {
        async { Ok(()) }
    }

    fn get_inflight_messages(
        &self,
        _client_id: &str,
    ) -> impl std::future::Future<Output = Result<Vec<InflightMessage>>> + Send {
        async { Ok(Vec::new()) }
    }

    fn remove_inflight_message(
        &self,
        _client_id: &str,
        _packet_id: u16,
        _direction: InflightDirection,
    ) -> impl std::future::Future<Output = Result<()>> + Send {
        async { Ok(()) }
    }

    fn remove_all_inflight_messages(
        &self,
        _client_id: &str,
    ) -> impl std::future::Future<Output = Result<()>> + Send {
        async { Ok(()) }
    }

    /// Clean up expired messages and sessions
    fn cleanup_expired(&self) -> impl std::future::Future<Output = Result<()>> + Send;

    /// Flush any cached session data to persistent storage (no-op for non-caching backends)
    fn flush_sessions(&self) -> impl std::future::Future<Output = Result<()>> + Send {
        async { Ok(()) }
    }

    fn session_client_ids(&self) -> impl std::future::Future<Output = Result<Vec<String>>> + Send {
        async { Ok(Vec::new()) }
    }

    fn remove_expired_session(
        &self,
        _client_id: &str,
    ) -> impl std::future::Future<Output = Result<bool>> + Send {
        async { Ok(false) }
    }

    fn remove_owned_session(
        &self,
        client_id: &str,
        connection_token: u64,
    ) -> impl std::future::Future<Output = Result<bool>> + Send {
        async move {
            let owned = self
                .get_session(client_id)
                .await?
                .is_some_and(|session| session.connection_token == connection_token);
            if owned {
                self.remove_session(client_id).await?;
            }
            Ok(owned)
        }
    }

    fn update_session<F>(
        &self,
        client_id: &str,
        connection_token: u64,
        update: F,
    ) -> impl std::future::Future<Output = Result<bool>> + Send
    where
        F: FnOnce(&mut ClientSession) + Send,
    {
        async move {
            let Some(mut session) = self.get_session(client_id).await? else {
                return Ok(false);
            };
            if session.connection_token != connection_token {
                return Ok(false);
            }
            update(&mut session);
            self.store_session(session).await?;
            Ok(true)
        }
    }
}

/// In-memory storage for fast access with persistent backing
pub struct Storage<B: StorageBackend> {
    /// Persistent storage backend
    backend: Arc<B>,
    /// In-memory retained messages cache
    retained_cache: Arc<RwLock<HashMap<String, RetainedMessage>>>,
    /// In-memory sessions cache
    sessions_cache: Arc<RwLock<HashMap<String, ClientSession>>>,
    /// Sessions that need to be flushed to backend (write-behind)
    dirty_sessions: Arc<RwLock<HashSet<String>>>,
    /// Flag to signal shutdown
    shutdown: Arc<AtomicBool>,
}

impl<B: StorageBackend + 'static> Storage<B> {
    /// Create new storage with backend
    pub fn new(backend: B) -> Self {
        Self {
            backend: Arc::new(backend),
            retained_cache: Arc::new(RwLock::new(HashMap::new())),
            sessions_cache: Arc::new(RwLock::new(HashMap::new())),
            dirty_sessions: Arc::new(RwLock::new(HashSet::new())),
            shutdown: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Initialize storage and load data from backend.
    ///
    /// # Errors
    /// Returns an error if the backend fails to load retained messages.
    pub async fn initialize(&self) -> Result<()> {
        // Load retained messages into cache
        // Use "#" as wildcard to match all topics
        let retained_messages = self.backend.get_retained_messages("#").await?;
        let mut cache = self.retained_cache.write().await;
        for (topic, msg) in retained_messages {
            cache.insert(topic, msg);
        }

        // Load sessions into cache
        // Note: We can't enumerate all sessions without adding a new backend method,
        // so sessions will be loaded on-demand

        Ok(())
    }

    /// Store retained message.
    ///
    /// # Errors
    /// Returns an error if the backend fails to persist the message.
    pub async fn store_retained(&self, topic: &str, message: RetainedMessage) -> Result<()> {
        // Update cache
        self.retained_cache
            .write()
            .await
            .insert(topic.to_string(), message.clone());

        // Persist to backend
        self.backend.store_retained_message(topic, message).await
    }

    /// Get retained message
    pub async fn get_retained(&self, topic: &str) -> Option<RetainedMessage> {
        let cache_result = self.retained_cache.read().await.get(topic).cloned();

        if let Some(msg) = cache_result {
            // Check if cached message is expired
            if msg.is_expired() {
                // Remove from cache and backend
                if let Err(e) = self.remove_retained(topic).await {
                    warn!("Failed to remove expired retained message for {topic}: {e}");
                }
                return None;
            }
            return Some(msg);
        }

        // Not in cache, try loading from backend
        if let Ok(Some(msg)) = self.backend.get_retained_message(topic).await {
            // Backend already checks expiry, so if we get here it's valid
            // Add to cache for future use
            self.retained_cache
                .write()
                .await
                .insert(topic.to_string(), msg.clone());
            Some(msg)
        } else {
            None
        }
    }

    /// Remove retained message.
    ///
    /// # Errors
    /// Returns an error if the backend fails to remove the message.
    pub async fn remove_retained(&self, topic: &str) -> Result<()> {
        // Remove from cache
        self.retained_cache.write().await.remove(topic);

        // Remove from backend
        self.backend.remove_retained_message(topic).await
    }

    /// Get retained messages matching topic filter
    pub async fn get_retained_matching(
        &self,
        topic_filter: &str,
    ) -> Vec<(String, RetainedMessage)> {
        use crate::validation::topic_matches_filter;

        self.retained_cache
            .read()
            .await
            .iter()
            .filter(|(topic, _)| topic_matches_filter(topic, topic_filter))
            .map(|(topic, msg)| (topic.clone(), msg.clone()))
            .collect()
    }

    /// Store client session (write-behind: caches immediately, flushes later).
    pub async fn store_session(&self, session: ClientSession) {
        let client_id = session.client_id.clone();

        self.sessions_cache
            .write()
            .await
            .insert(client_id.clone(), session);

        self.dirty_sessions.write().await.insert(client_id);
    }

    /// Flush all dirty sessions to backend.
    ///
    /// # Errors
    /// Returns an error if the backend fails to persist any session.
    pub async fn flush_sessions(&self) -> Result<()> {
        let to_flush: Vec<String> = self.dirty_sessions.read().await.iter().cloned().collect();

        if !to_flush.is_empty() {
            let cache = self.sessions_cache.read().await;
            let mut failed = Vec::new();

            for client_id in to_flush {
                if let Some(session) = cache.get(&client_id) {
                    if let Err(e) = self.backend.store_session(session.clone()).await {
                        tracing::warn!("failed to persist session {}: {}", client_id, e);
                        failed.push(client_id);
                    } else {
                        self.dirty_sessions.write().await.remove(&client_id);
                    }
                } else {
                    self.dirty_sessions.write().await.remove(&client_id);
                }
            }

            if !failed.is_empty() {
                return Err(crate::error::MqttError::Io(format!(
                    "failed to persist {} sessions",
                    failed.len()
                )));
            }
        }

        self.backend.flush_sessions().await
    }

    /// Start background flush task (call once after initialization).
    pub fn start_flush_task(self: &Arc<Self>, flush_interval: Duration) {
        let storage = Arc::clone(self);
        tokio::spawn(async move {
            let mut interval = tokio::time::interval(flush_interval);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);

            loop {
                interval.tick().await;

                if storage.shutdown.load(Ordering::Relaxed) {
                    if let Err(e) = storage.flush_sessions().await {
                        tracing::warn!("failed to flush sessions on shutdown: {e}");
                    }
                    break;
                }

                if let Err(e) = storage.flush_sessions().await {
                    tracing::warn!("failed to flush sessions: {e}");
                }
            }
        });
    }

    /// Signal shutdown and flush remaining data.
    ///
    /// # Errors
    /// Returns an error if flushing sessions fails.
    pub async fn shutdown(&self) -> Result<()> {
        self.shutdown.store(true, Ordering::Relaxed);
        self.flush_sessions().await
    }

    /// Get client session
    pub async fn get_session(&self, client_id: &str) -> Option<ClientSession> {
        // First check cache
        let cache_result = self.sessions_cache.read().await.get(client_id).cloned();

        if let Some(session) = cache_result {
            // Check if cached session is expired
            if session.is_expired() {
                // Remove from cache and backend
                if let Err(e) = self.remove_session(client_id).await {
                    warn!("Failed to remove expired session for {client_id}: {e}");
                }
                return None;
            }
            return Some(session);
        }

        // Not in cache, try loading from backend
        if let Ok(Some(session)) = self.backend.get_session(client_id).await {
            // Backend already checks expiry, so if we get here it's valid
            // Add to cache for future use
            self.sessions_cache
                .write()
                .await
                .insert(client_id.to_string(), session.clone());
            Some(session)
        } else {
            None
        }
    }

    /// Remove client session.
    ///
    /// # Errors
    /// Returns an error if the backend fails to remove the session.
    pub async fn remove_session(&self, client_id: &str) -> Result<()> {
        self.sessions_cache.write().await.remove(client_id);
        self.dirty_sessions.write().await.remove(client_id);
        self.backend.remove_session(client_id).await
    }

    /// Queue message for offline client.
    ///
    /// # Errors
    /// Returns an error if the backend fails to queue the message.
    pub async fn queue_message(&self, message: QueuedMessage) -> Result<()> {
        self.backend.queue_message(message).await
    }

    /// Get queued messages for client.
    ///
    /// # Errors
    /// Returns an error if the backend fails to retrieve the messages.
    pub async fn get_queued_messages(&self, client_id: &str) -> Result<Vec<QueuedMessage>> {
        self.backend.get_queued_messages(client_id).await
    }

    /// Remove queued messages for client.
    ///
    /// # Errors
    /// Returns an error if the backend fails to remove the messages.
    pub async fn remove_queued_messages(&self, client_id: &str) -> Result<()> {
        self.backend.remove_queued_messages(client_id).await
    }

    /// Periodic cleanup of expired data.
    ///
    /// # Errors
    /// Returns an error if the backend fails during cleanup.
    pub async fn cleanup_expired(&self) -> Result<()> {
        let now = SystemTime::now();

        // Clean expired retained messages from cache
        {
            let mut cache = self.retained_cache.write().await;
            cache.retain(|_, msg| msg.expires_at.is_none_or(|expiry| expiry > now));
        }

        // Clean expired sessions from cache
        {
            let mut cache = self.sessions_cache.write().await;
            cache.retain(|_, session| !session.is_expired());
        }

        // Clean expired data from backend
        self.backend.cleanup_expired().await
    }
}

impl RetainedMessage {
    /// Create new retained message from PUBLISH packet
    #[must_use]
    pub fn new(packet: PublishPacket) -> Self {
        let now = SystemTime::now();
        let stored_at_secs = now
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        let message_expiry_interval = packet.properties.get_message_expiry_interval();
        let expires_at =
            message_expiry_interval.map(|interval| now + Duration::from_secs(u64::from(interval)));

        let v5 = V5PublishProps::from_packet(&packet);

        Self {
            topic: packet.topic_name,
            payload: packet.payload.to_vec(),
            qos: packet.qos,
            retain: packet.retain,
            stored_at_secs,
            message_expiry_interval,
            expires_at,
            user_properties: v5.user_properties,
            content_type: v5.content_type,
            response_topic: v5.response_topic,
            correlation_data: v5.correlation_data,
            payload_format_indicator: v5.payload_format_indicator,
        }
    }

    /// Recompute `expires_at` from stored fields (call after deserialization)
    pub fn recompute_expiry(&mut self) {
        if let Some(interval) = self.message_expiry_interval {
            let stored_at = SystemTime::UNIX_EPOCH + Duration::from_secs(self.stored_at_secs);
            self.expires_at = Some(stored_at + Duration::from_secs(u64::from(interval)));
        }
    }

    /// Convert to `PublishPacket` for delivery
    #[must_use]
    pub fn to_publish_packet(&self) -> PublishPacket {
        let mut packet = PublishPacket::new(&self.topic, self.payload.clone(), self.qos)
            .with_retain(self.retain);

        if let Some(remaining) = self.remaining_expiry_interval() {
            packet.properties.set_message_expiry_interval(remaining);
        }

        apply_v5_props(
            &mut packet,
            &self.user_properties,
            self.content_type.as_deref(),
            self.response_topic.as_deref(),
            self.correlation_data.as_deref(),
            self.payload_format_indicator,
        );

        packet
    }

    #[must_use]
    pub fn remaining_expiry_interval(&self) -> Option<u32> {
        self.expires_at.and_then(|expiry| {
            expiry
                .duration_since(SystemTime::now())
                .ok()
                .map(|d| u32::try_from(d.as_secs()).unwrap_or(u32::MAX))
        })
    }

    /// Check if message has expired
    #[must_use]
    pub fn is_expired(&self) -> bool {
        self.expires_at
            .is_some_and(|expiry| SystemTime::now() > expiry)
    }
}

impl ClientSession {
    /// Create new client session
    #[must_use]
    pub fn new(
        client_id: impl Into<String>,
        persistent: bool,
        expiry_interval: Option<u32>,
    ) -> Self {
        let now = SystemTime::now();
        Self {
            client_id: client_id.into(),
            persistent,
            expiry_interval,
            subscriptions: HashMap::new(),
            created_at: now,
            last_seen: now,
            will_message: None,
            will_delay_interval: None,
            receive_maximum: 65535,
            change_only_state: ChangeOnlyState::default(),
            user_id: None,
            connection_token: 0,
            connected: false,
            disconnected_at: None,
        }
    }

    /// Create new client session with will message
    #[must_use]
    pub fn new_with_will(
        client_id: impl Into<String>,
        persistent: bool,
        expiry_interval: Option<u32>,
        will_message: Option<crate::types::WillMessage>,
    ) -> Self {
        let now = SystemTime::now();
        let will_delay = will_message
            .as_ref()
            .and_then(|w| w.properties.will_delay_interval);
        Self {
            client_id: client_id.into(),
            persistent,
            expiry_interval,
            subscriptions: HashMap::new(),
            created_at: now,
            last_seen: now,
            will_message,
            will_delay_interval: will_delay,
            receive_maximum: 65535,
            change_only_state: ChangeOnlyState::default(),
            user_id: None,
            connection_token: 0,
            connected: false,
            disconnected_at: None,
        }
    }

    /// Update last seen time
    pub fn touch(&mut self) {
        self.last_seen = SystemTime::now();
    }

    /// Add subscription to session
    pub fn add_subscription(
        &mut self,
        topic_filter: impl Into<String>,
        subscription: StoredSubscription,
    ) {
        self.subscriptions.insert(topic_filter.into(), subscription);
    }

    /// Remove subscription from session
    pub fn remove_subscription(&mut self, topic_filter: &str) {
        self.subscriptions.remove(topic_filter);
    }

    /// Check if session has expired
    #[must_use]
    pub fn is_expired(&self) -> bool {
        if self.connected {
            return false;
        }
        let Some(expiry_interval) = self.expiry_interval else {
            return false;
        };
        let since = self.disconnected_at.map_or(self.last_seen, |millis| {
            crate::time::UNIX_EPOCH + Duration::from_millis(millis)
        });
        SystemTime::now() > since + Duration::from_secs(u64::from(expiry_interval))
    }

    pub fn mark_connected(&mut self, connection_token: u64) {
        self.connection_token = connection_token;
        self.connected = true;
        self.disconnected_at = None;
        self.touch();
    }

    pub fn mark_disconnected(&mut self, disconnected_at: u64) {
        self.connected = false;
        self.disconnected_at = Some(disconnected_at);
        self.touch();
    }

    #[must_use]
    pub fn expiry_from_connect(connect: &crate::packet::connect::ConnectPacket) -> Option<u32> {
        if connect.protocol_version == 5 {
            Some(
                connect
                    .properties
                    .get_session_expiry_interval()
                    .unwrap_or(0),
            )
        } else if connect.clean_start {
            Some(0)
        } else {
            None
        }
    }

    #[must_use]
    pub fn granted_expiry(requested: Option<u32>, maximum: u32) -> u32 {
        requested.map_or(maximum, |requested| requested.min(maximum))
    }

    #[must_use]
    pub fn will_publish_delay(&self) -> Option<u32> {
        self.will_message.as_ref()?;
        let will_delay = self.will_delay_interval.unwrap_or(0);
        Some(will_delay.min(self.expiry_interval.unwrap_or(u32::MAX)))
    }
}

impl QueuedMessage {
    #[must_use]
    pub fn footprint(&self) -> usize {
        let user_properties: usize = self
            .user_properties
            .iter()
            .map(|(key, value)| std::mem::size_of::<(String, String)>() + key.len() + value.len())
            .sum();
        std::mem::size_of::<Self>()
            + self.topic.len()
            + self.payload.len()
            + self.client_id.len()
            + self.subscription_identifiers.len() * std::mem::size_of::<u32>()
            + user_properties
            + self.content_type.as_ref().map_or(0, String::len)
            + self.response_topic.as_ref().map_or(0, String::len)
            + self.correlation_data.as_ref().map_or(0, Vec::len)
    }

    /// Create new queued message from PUBLISH packet
    #[must_use]
    pub fn new(packet: PublishPacket, client_id: String, qos: QoS, packet_id: Option<u16>) -> Self {
        let now = SystemTime::now();
        let queued_at_secs = now
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        let message_expiry_interval = packet.properties.get_message_expiry_interval();
        let expires_at =
            message_expiry_interval.map(|interval| now + Duration::from_secs(u64::from(interval)));

        let props = V5PublishProps::from_packet(&packet);
        Self {
            topic: packet.topic_name,
            payload: packet.payload.to_vec(),
            client_id,
            qos,
            queued_at_secs,
            message_expiry_interval,
            expires_at,
            packet_id,
            dup: packet.dup,
            retain: packet.retain,
            target_flow: None,
            subscription_identifiers: packet.properties.subscription_identifiers(),
            user_properties: props.user_properties,
            content_type: props.content_type,
            response_topic: props.response_topic,
            correlation_data: props.correlation_data,
            payload_format_indicator: props.payload_format_indicator,
        }
    }

    #[must_use]
    pub fn with_target_flow(mut self, target_flow: Option<u64>) -> Self {
        self.target_flow = target_flow;
        self
    }

    /// Recompute `expires_at` from stored fields (call after deserialization)
    pub fn recompute_expiry(&mut self) {
        if let Some(interval) = self.message_expiry_interval {
            let queued_at = SystemTime::UNIX_EPOCH + Duration::from_secs(self.queued_at_secs);
            self.expires_at = Some(queued_at + Duration::from_secs(u64::from(interval)));
        }
    }

    /// Convert to `PublishPacket` for delivery
    #[must_use]
    pub fn to_publish_packet(&self) -> PublishPacket {
        let mut packet = PublishPacket::new(&self.topic, self.payload.clone(), self.qos);
        packet.packet_id = self.packet_id;
        packet.dup = self.dup;
        packet.retain = self.retain;

        if let Some(remaining) = self.remaining_expiry_interval() {
            packet.properties.set_message_expiry_interval(remaining);
        }
        for id in &self.subscription_identifiers {
            packet.properties.set_subscription_identifier(*id);
        }
        apply_v5_props(
            &mut packet,
            &self.user_properties,
            self.content_type.as_deref(),
            self.response_topic.as_deref(),
            self.correlation_data.as_deref(),
            self.payload_format_indicator,
        );

        packet
    }

    #[must_use]
    pub fn remaining_expiry_interval(&self) -> Option<u32> {
        self.expires_at.and_then(|expiry| {
            expiry
                .duration_since(SystemTime::now())
                .ok()
                .map(|d| u32::try_from(d.as_secs()).unwrap_or(u32::MAX))
        })
    }

    /// Check if message has expired
    #[must_use]
    pub fn is_expired(&self) -> bool {
        self.expires_at
            .is_some_and(|expiry| SystemTime::now() > expiry)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum InflightDirection {
    Inbound,
    Outbound,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum InflightPhase {
    AwaitingPubrec,
    AwaitingPubrel,
    AwaitingPubcomp,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct InflightMessage {
    pub client_id: String,
    pub packet_id: u16,
    pub direction: InflightDirection,
    pub phase: InflightPhase,
    pub topic: String,
    pub payload: Vec<u8>,
    pub qos: QoS,
    pub retain: bool,
    pub stored_at_secs: u64,
    pub message_expiry_interval: Option<u32>,
    #[serde(default)]
    pub expires_at_secs: Option<u64>,
    #[serde(skip)]
    expires_at_cache: Option<SystemTime>,
    #[serde(default)]
    pub user_properties: Vec<(String, String)>,
    pub content_type: Option<String>,
    pub response_topic: Option<String>,
    pub correlation_data: Option<Vec<u8>>,
    pub payload_format_indicator: Option<bool>,
}

impl InflightMessage {
    #[must_use]
    pub fn from_publish(
        packet: &PublishPacket,
        client_id: String,
        direction: InflightDirection,
        phase: InflightPhase,
    ) -> Self {
        let now = SystemTime::now();
        let stored_at_secs = now
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        let message_expiry_interval = packet.properties.get_message_expiry_interval();
        let expires_at_secs =
            message_expiry_interval.map(|interval| stored_at_secs + u64::from(interval));
        let expires_at_cache =
            message_expiry_interval.map(|interval| now + Duration::from_secs(u64::from(interval)));

        let v5 = V5PublishProps::from_packet(packet);

        Self {
            client_id,
            packet_id: packet.packet_id.unwrap_or(0),
            direction,
            phase,
            topic: packet.topic_name.clone(),
            payload: packet.payload.to_vec(),
            qos: packet.qos,
            retain: packet.retain,
            stored_at_secs,
            message_expiry_interval,
            expires_at_secs,
            expires_at_cache,
            user_properties: v5.user_properties,
            content_type: v5.content_type,
            response_topic: v5.response_topic,
            correlation_data: v5.correlation_data,
            payload_format_indicator: v5.payload_format_indicator,
        }
    }

    #[must_use]
    pub fn to_publish_packet(&self) -> PublishPacket {
        let mut packet = PublishPacket::new(&self.topic, self.payload.clone(), self.qos)
            .with_retain(self.retain);
        packet.packet_id = Some(self.packet_id);

        if let Some(remaining) = self.remaining_expiry_interval() {
            packet.properties.set_message_expiry_interval(remaining);
        }

        apply_v5_props(
            &mut packet,
            &self.user_properties,
            self.content_type.as_deref(),
            self.response_topic.as_deref(),
            self.correlation_data.as_deref(),
            self.payload_format_indicator,
        );

        packet
    }

    fn resolved_expires_at(&self) -> Option<SystemTime> {
        self.expires_at_cache.or_else(|| {
            self.expires_at_secs
                .map(|secs| SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
        })
    }

    #[must_use]
    pub fn remaining_expiry_interval(&self) -> Option<u32> {
        self.resolved_expires_at().and_then(|expiry| {
            expiry
                .duration_since(SystemTime::now())
                .ok()
                .map(|d| u32::try_from(d.as_secs()).unwrap_or(u32::MAX))
        })
    }

    #[must_use]
    pub fn is_expired(&self) -> bool {
        self.resolved_expires_at()
            .is_some_and(|expiry| SystemTime::now() > expiry)
    }
}

/// Dynamic storage backend that can hold different implementations
pub enum DynamicStorage {
    #[cfg(all(not(target_arch = "wasm32"), feature = "file-storage"))]
    File(FileBackend),
    Memory(MemoryBackend),
}

impl StorageBackend for DynamicStorage {
    fn queue_handle(&self, client_id: &str) -> QueueHandle {
        match self {
            #[cfg(all(not(target_arch = "wasm32"), feature = "file-storage"))]
            Self::File(backend) => backend.queue_handle(client_id),
            Self::Memory(backend) => backend.queue_handle(client_id),
        }
    }

    async fn store_retained_message(&self, topic: &str, message: RetainedMessage) -> Result<()> {
        match self {
            #[cfg(not(target_arch = "wasm32"))]
            #[cfg(all(not(target_arch = "wasm32"), feature = "file-storage"))]
            Self::File(backend) => backend.store_retained_message(topic, message).await,
            Self::Memory(backend) => backend.store_retained_message(topic, message).await,
        }
    }

    async fn get_retained_message(&self, topic: &str) -> Result<Option<RetainedMessage>> {
        match self {
            #[cfg(not(target_arch = "wasm32"))]
            #[cfg(all(not(target_arch = "wasm32"), feature = "file-storage"))]
            Self::File(backend) => backend.get_retained_message(topic).await,
            Self::Memory(backend) => backend.get_retained_message(topic).await,
        }
    }

    async fn remove_retained_message(&self, topic: &str) -> Result<()> {
        match self {
            #[cfg(not(target_arch = "wasm32"))]
            #[cfg(all(not(target_arch = "wasm32"), feature = "file-storage"))]
            Self::File(backend) => backend.remove_retained_message(topic).await,
            Self::Memory(backend) => backend.remove_retained_message(topic).await,
        }
    }

    async fn get_retained_messages(
        &self,
        topic_filter: &str,
    ) -> Result<Vec<(String, RetainedMessage)>> {
        match self {
            #[cfg(all(not(target_arch = "wasm32"), feature = "file-storage"))]
            Self::File(backend) => backend.get_retained_messages(topic_filter).await,
            Self::Memory(backend) => backend.get_retained_messages(topic_filter).await,
        }
    }

    async fn store_session(&self, session: ClientSession) -> Result<()> {
        match self {
            #[cfg(all(not(target_arch = "wasm32"), feature = "file-storage"))]
            Self::File(backend) => backend.store_session(session).await,
            Self::Memory(backend) => backend.store_session(session).await,
        }
    }

    async fn get_session(&self, client_id: &str) -> Result<Option<ClientSession>> {
        match self {
            #[cfg(all(not(target_arch = "wasm32"), feature = "file-storage"))]
            Self::File(backend) => backend.get_session(client_id).await,
            Self::Memory(backend) => backend.get_session(client_id).await,
        }
    }

    async fn remove_session(&self, client_id: &str) -> Result<()> {
        match self {
            #[cfg(all(not(target_arch = "wasm32"), feature = "file-storage"))]
            Self::File(backend) => backend.remove_session(client_id).await,
            Self::Memory(backend) => backend.remove_session(client_id).await,
        }
    }

    async fn remove_expired_session(&self, client_id: &str) -> Result<bool> {
        match self {
            #[cfg(all(not(target_arch = "wasm32"), feature = "file-storage"))]
            Self::File(backend) => backend.remove_expired_session(client_id).await,
            Self::Memory(backend) => backend.remove_expired_session(client_id).await,
        }
    }

    async fn session_client_ids(&self) -> Result<Vec<String>> {
        match self {
            #[cfg(all(not(target_arch = "wasm32"), feature = "file-storage"))]
            Self::File(backend) => backend.session_client_ids().await,
            Self::Memory(backend) => backend.session_client_ids().await,
        }
    }

    async fn remove_owned_session(&self, client_id: &str, connection_token: u64) -> Result<bool> {
        match self {
            #[cfg(all(not(target_arch = "wasm32"), feature = "file-storage"))]
            Self::File(backend) => {
                backend
                    .remove_owned_session(client_id, connection_token)
                    .await
            }
            Self::Memory(backend) => {
                backend
                    .remove_owned_session(client_id, connection_token)
                    .await
            }
        }
    }

    async fn update_session<F>(
        &self,
        client_id: &str,
        connection_token: u64,
        update: F,
    ) -> Result<bool>
    where
        F: FnOnce(&mut ClientSession) + Send,
    {
        match self {
            #[cfg(all(not(target_arch = "wasm32"), feature = "file-storage"))]
            Self::File(backend) => {
                backend
                    .update_session(client_id, connection_token, update)
                    .await
            }
            Self::Memory(backend) => {
                backend
                    .update_session(client_id, connection_token, update)
                    .await
            }
        }
    }

    async fn queue_message(&self, message: QueuedMessage) -> Result<()> {
        match self {
            #[cfg(all(not(target_arch = "wasm32"), feature = "file-storage"))]
            Self::File(backend) => backend.queue_message(message).await,
            Self::Memory(backend) => backend.queue_message(message).await,
        }
    }

    async fn get_queued_messages(&self, client_id: &str) -> Result<Vec<QueuedMessage>> {
        match self {
            #[cfg(all(not(target_arch = "wasm32"), feature = "file-storage"))]
            Self::File(backend) => backend.get_queued_messages(client_id).await,
            Self::Memory(backend) => backend.get_queued_messages(client_id).await,
        }
    }

    async fn remove_queued_messages(&self, client_id: &str) -> Result<()> {
        match self {
            #[cfg(all(not(target_arch = "wasm32"), feature = "file-storage"))]
            Self::File(backend) => backend.remove_queued_messages(client_id).await,
            Self::Memory(backend) => backend.remove_queued_messages(client_id).await,
        }
    }

    async fn store_inflight_message(&self, message: InflightMessage) -> Result<()> {
        match self {
            #[cfg(all(not(target_arch = "wasm32"), feature = "file-storage"))]
            Self::File(backend) => backend.store_inflight_message(message).await,
            Self::Memory(backend) => backend.store_inflight_message(message).await,
        }
    }

    async fn get_inflight_messages(&self, client_id: &str) -> Result<Vec<InflightMessage>> {
        match self {
            #[cfg(all(not(target_arch = "wasm32"), feature = "file-storage"))]
            Self::File(backend) => backend.get_inflight_messages(client_id).await,
            Self::Memory(backend) => backend.get_inflight_messages(client_id).await,
        }
    }

    async fn remove_inflight_message(
        &self,
        client_id: &str,
        packet_id: u16,
        direction: InflightDirection,
    ) -> Result<()> {
        match self {
            #[cfg(all(not(target_arch = "wasm32"), feature = "file-storage"))]
            Self::File(backend) => {
                backend
                    .remove_inflight_message(client_id, packet_id, direction)
                    .await
            }
            Self::Memory(backend) => {
                backend
                    .remove_inflight_message(client_id, packet_id, direction)
                    .await
            }
        }
    }

    async fn remove_all_inflight_messages(&self, client_id: &str) -> Result<()> {
        match self {
            #[cfg(all(not(target_arch = "wasm32"), feature = "file-storage"))]
            Self::File(backend) => backend.remove_all_inflight_messages(client_id).await,
            Self::Memory(backend) => backend.remove_all_inflight_messages(client_id).await,
        }
    }

    async fn cleanup_expired(&self) -> Result<()> {
        match self {
            #[cfg(all(not(target_arch = "wasm32"), feature = "file-storage"))]
            Self::File(backend) => backend.cleanup_expired().await,
            Self::Memory(backend) => backend.cleanup_expired().await,
        }
    }
}

impl DynamicStorage {
    /// # Errors
    /// Returns an error if flushing sessions fails.
    #[cfg_attr(
        target_arch = "wasm32",
        allow(clippy::unused_async, clippy::unused_async_trait_impl)
    )]
    #[cfg_attr(not(feature = "file-storage"), allow(clippy::unused_async))]
    pub async fn shutdown(&self) -> Result<()> {
        match self {
            #[cfg(all(not(target_arch = "wasm32"), feature = "file-storage"))]
            Self::File(backend) => backend.shutdown().await,
            Self::Memory(_) => Ok(()),
        }
    }
}
