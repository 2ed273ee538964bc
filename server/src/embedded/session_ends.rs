//! When a client's MQTT session ends on the embedded broker — not when its connection does.
//!
//! The broker keeps a session (its subscriptions, its queued and in-flight QoS 1 messages)
//! after the connection closes, for the session expiry the client asked for, and a
//! reconnect with clean start 0 resumes it. The crate reports connections, not sessions: it
//! has no event for a session that expired or was replaced. This module derives those from
//! the broker's session storage:
//!
//! - at a connect, a session whose creation time differs from the one last seen for that
//!   client id is a new session: the previous one (if any) ended, replaced by a clean start
//!   or expired while the client was away;
//! - at a disconnect, a session that is gone from storage (expiry 0, the default) ended with
//!   the connection; one still stored and not taken over by another connection is watched
//!   until its expiry, and ends then unless the client came back in time.
//!
//! Each end is reported once, before any request of a later connection of the same client id
//! can be served (the connect hook runs before the broker reads the client's first packet).
//!
//! Kept sessions are bounded in number ([`SessionEnds::end_oldest_over`]): past the bound,
//! the sessions disconnected longest ago end first, as if they had expired (the broker's
//! storage stops resuming them at once, and its sweep drops their subscriptions and queues).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use mqtt5::broker::storage::ClientSession;
use mqtt5::broker::{DynamicStorage, StorageBackend};
use tokio::sync::Mutex;

/// The longest single wait of a watcher: a session with a longer expiry (up to 136 years in
/// MQTT) is looked at again after this.
const MAX_WAIT: Duration = Duration::from_secs(24 * 3600);

/// A little past the expiry, so that the broker's storage already treats it as expired.
const GRACE: Duration = Duration::from_millis(20);

/// What is known of one client id's current session.
#[derive(Clone, Copy, Debug)]
struct Known {
    /// The session's creation time in the broker's storage: its identity.
    created: SystemTime,
    /// Bumped at every connect: a watcher started before it stands down.
    epoch: u64,
    /// While the session is kept without a connection: its place in [`State::offline`]'s
    /// order.
    offline: Option<u64>,
    /// When its last connection closed (Unix ms; 0 while connected).
    left_ms: u64,
}

/// What is known of every client id, under one lock.
#[derive(Default)]
struct State {
    known: HashMap<String, Known>,
    /// The sessions kept without a connection, oldest disconnect first.
    offline: BTreeMap<u64, String>,
}

impl State {
    /// Forgets that `client_id`'s session waits offline.
    fn online(&mut self, client_id: &str) {
        if let Some(seq) = self.known.get_mut(client_id).and_then(|k| k.offline.take()) {
            self.offline.remove(&seq);
        }
    }

    /// Forgets `client_id` altogether.
    fn forget(&mut self, client_id: &str) {
        self.online(client_id);
        self.known.remove(client_id);
    }
}

/// The sessions the embedded broker holds, as far as the store is concerned.
pub(crate) struct SessionEnds {
    storage: Arc<DynamicStorage>,
    state: Mutex<State>,
    epochs: AtomicU64,
    /// How many sessions wait without a connection ([`State::offline`]'s length, readable
    /// without the lock).
    offline: AtomicUsize,
}

/// What a disconnect means for the client's session.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum AfterDisconnect {
    /// The session ended with the connection.
    Ended,
    /// Another connection holds the session now (a takeover): nothing ended.
    TakenOver,
    /// The session outlives the connection: watch it until this deadline.
    Kept(Watch),
}

/// A disconnected session to look at again once it may have expired.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Watch {
    client_id: String,
    epoch: u64,
    created: SystemTime,
    wait: Duration,
}

impl Watch {
    /// The client id whose session is watched.
    pub(crate) fn client_id(&self) -> &str {
        &self.client_id
    }

    /// How long to wait before [`SessionEnds::recheck`].
    pub(crate) fn wait(&self) -> Duration {
        self.wait
    }
}

/// How long until `session`, disconnected, expires (zero if it has), capped at [`MAX_WAIT`].
fn until_expiry(session: &ClientSession) -> Duration {
    let Some(expiry) = session.expiry_interval else {
        return MAX_WAIT;
    };
    let since = session.disconnected_at.map_or(session.last_seen, |ms| {
        SystemTime::UNIX_EPOCH + Duration::from_millis(ms)
    });
    let deadline = since + Duration::from_secs(u64::from(expiry));
    deadline
        .duration_since(SystemTime::now())
        .map_or(Duration::ZERO, |left| left.min(MAX_WAIT))
        + GRACE
}

impl SessionEnds {
    /// Reads sessions from the broker's `storage`.
    pub(crate) fn new(storage: Arc<DynamicStorage>) -> SessionEnds {
        SessionEnds {
            storage,
            state: Mutex::new(State::default()),
            epochs: AtomicU64::new(0),
            offline: AtomicUsize::new(0),
        }
    }

    async fn stored(&self, client_id: &str) -> Option<ClientSession> {
        match self.storage.get_session(client_id).await {
            Ok(session) => session,
            Err(e) => {
                tracing::warn!(client_id, error = %e, "could not read a client's session");
                None
            }
        }
    }

    /// A connection of `client_id` was accepted. Returns whether a previous session of that
    /// client id ended (the connection did not resume it); `ended` runs under the lock, so a
    /// watcher cannot report the same end again.
    pub(crate) async fn connected(&self, client_id: &str, ended: impl FnOnce()) -> bool {
        let created = self
            .stored(client_id)
            .await
            .map_or_else(SystemTime::now, |session| session.created_at);
        let epoch = self.epochs.fetch_add(1, Ordering::Relaxed) + 1;
        let mut state = self.state.lock().await;
        state.online(client_id);
        let replaced = state
            .known
            .insert(
                client_id.to_owned(),
                Known {
                    created,
                    epoch,
                    offline: None,
                    left_ms: 0,
                },
            )
            .is_some_and(|previous| previous.created != created);
        self.count_offline(&state);
        if replaced {
            ended();
        }
        replaced
    }

    /// A connection of `client_id` closed: did its session end with it? `ended` runs under
    /// the lock when it did.
    pub(crate) async fn disconnected(
        &self,
        client_id: &str,
        ended: impl FnOnce(),
    ) -> AfterDisconnect {
        let mut state = self.state.lock().await;
        let Some(current) = state.known.get(client_id).copied() else {
            // Never seen connecting (its connect failed half-way): nothing of it is kept.
            ended();
            return AfterDisconnect::Ended;
        };
        match self.stored(client_id).await {
            Some(session) if session.connected || session.created_at != current.created => {
                AfterDisconnect::TakenOver
            }
            Some(session) => {
                state.online(client_id);
                let seq = self.epochs.fetch_add(1, Ordering::Relaxed) + 1;
                state.offline.insert(seq, client_id.to_owned());
                if let Some(known) = state.known.get_mut(client_id) {
                    known.offline = Some(seq);
                    known.left_ms = crate::service::now_ms();
                }
                self.count_offline(&state);
                AfterDisconnect::Kept(Watch {
                    client_id: client_id.to_owned(),
                    epoch: current.epoch,
                    created: current.created,
                    wait: until_expiry(&session),
                })
            }
            None => {
                state.forget(client_id);
                self.count_offline(&state);
                ended();
                AfterDisconnect::Ended
            }
        }
    }

    /// Looks at a watched session again after [`Watch::wait`]: `None` once it ended (and
    /// `ended` ran) or the client came back, else the next watch.
    pub(crate) async fn recheck(&self, watch: Watch, ended: impl FnOnce()) -> Option<Watch> {
        let mut state = self.state.lock().await;
        if state.known.get(&watch.client_id).map(|k| k.epoch) != Some(watch.epoch) {
            return None; // it connected again: that connection owns the question now
        }
        match self.stored(&watch.client_id).await {
            Some(session) if session.connected => None,
            Some(session) if session.created_at == watch.created => Some(Watch {
                wait: until_expiry(&session),
                ..watch
            }),
            _ => {
                state.forget(&watch.client_id);
                self.count_offline(&state);
                ended();
                None
            }
        }
    }

    /// Ends the sessions kept without a connection beyond the `max` most recent ones,
    /// oldest disconnect first: each is marked expired in the broker's storage (no
    /// connection resumes it from now on; the broker's sweep drops its subscriptions and
    /// queue) and `ended` runs for it under the lock. Returns the client ids ended.
    pub(crate) async fn end_oldest_over(
        &self,
        max: usize,
        mut ended: impl FnMut(&str),
    ) -> Vec<String> {
        let mut state = self.state.lock().await;
        let mut gone = Vec::new();
        while state.offline.len() > max {
            let Some((_, client_id)) = state.offline.pop_first() else {
                break;
            };
            let Some(known) = state.known.get(&client_id).copied() else {
                continue;
            };
            if let Some(session) = self.stored(&client_id).await
                && !session.connected
                && session.created_at == known.created
            {
                let expired = self
                    .storage
                    .update_session(&client_id, session.connection_token, |s| {
                        s.expiry_interval = Some(0);
                    })
                    .await;
                if let Err(e) = expired {
                    tracing::warn!(client_id, error = %e, "could not end an offline session");
                }
            }
            state.known.remove(&client_id);
            ended(&client_id);
            gone.push(client_id);
        }
        self.count_offline(&state);
        gone
    }

    /// The sessions kept without a connection, most recent disconnect first: client id and
    /// when it left (Unix ms); at most `limit`.
    pub(crate) async fn offline_list(&self, limit: usize) -> Vec<(String, u64)> {
        let state = self.state.lock().await;
        state
            .offline
            .values()
            .rev()
            .take(limit)
            .map(|id| (id.clone(), state.known.get(id).map_or(0, |k| k.left_ms)))
            .collect()
    }

    /// How many sessions wait without a connection now.
    pub(crate) fn offline_sessions(&self) -> usize {
        self.offline.load(Ordering::Relaxed)
    }

    fn count_offline(&self, state: &State) {
        self.offline.store(state.offline.len(), Ordering::Relaxed);
    }

    /// How many client ids have a session the store knows of (for tests).
    #[cfg(test)]
    pub(crate) async fn len(&self) -> usize {
        self.state.lock().await.known.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mqtt5::broker::MemoryBackend;

    fn session(id: &str, expiry: u32) -> ClientSession {
        ClientSession::new(id, true, Some(expiry))
    }

    #[tokio::test]
    async fn a_session_ends_at_expiry_not_at_the_disconnect() {
        let storage = Arc::new(DynamicStorage::Memory(MemoryBackend::new()));
        let ends = SessionEnds::new(Arc::clone(&storage));
        let mut s = session("c", 1);
        s.mark_connected(1);
        storage.store_session(s.clone()).await.unwrap();
        assert!(!ends.connected("c", || panic!("nothing ended")).await);

        s.mark_disconnected(mqtt5::broker::storage::unix_millis_now());
        storage.store_session(s.clone()).await.unwrap();
        let AfterDisconnect::Kept(watch) = ends.disconnected("c", || panic!("kept")).await else {
            panic!("the session is kept");
        };
        assert!(watch.wait() > Duration::from_millis(500));
        assert!(watch.wait() <= Duration::from_secs(1) + GRACE);
        tokio::time::sleep(watch.wait()).await;
        let mut ended = false;
        assert!(ends.recheck(watch, || ended = true).await.is_none());
        assert!(ended, "the session expired");
        assert_eq!(ends.len().await, 0);
    }

    #[tokio::test]
    async fn a_resume_is_not_an_end_and_a_new_session_is() {
        let storage = Arc::new(DynamicStorage::Memory(MemoryBackend::new()));
        let ends = SessionEnds::new(Arc::clone(&storage));
        let mut s = session("c", 3600);
        s.mark_connected(1);
        storage.store_session(s.clone()).await.unwrap();
        ends.connected("c", || panic!("first")).await;
        s.mark_disconnected(mqtt5::broker::storage::unix_millis_now());
        storage.store_session(s.clone()).await.unwrap();
        let AfterDisconnect::Kept(watch) = ends.disconnected("c", || panic!("kept")).await else {
            panic!("kept");
        };
        // Resumed: same session.
        s.mark_connected(2);
        storage.store_session(s.clone()).await.unwrap();
        assert!(!ends.connected("c", || panic!("resumed")).await);
        assert!(ends.recheck(watch, || panic!("stale")).await.is_none());
        // A clean start: a new session replaces it.
        tokio::time::sleep(Duration::from_millis(2)).await;
        let mut fresh = session("c", 0);
        fresh.mark_connected(3);
        storage.store_session(fresh).await.unwrap();
        let mut ended = false;
        assert!(ends.connected("c", || ended = true).await);
        assert!(ended);
        // Expiry 0: gone from storage at the disconnect.
        storage.remove_session("c").await.unwrap();
        let mut ended = false;
        assert_eq!(
            ends.disconnected("c", || ended = true).await,
            AfterDisconnect::Ended
        );
        assert!(ended);
    }

    #[tokio::test]
    async fn past_the_bound_the_oldest_offline_sessions_end_first() {
        let storage = Arc::new(DynamicStorage::Memory(MemoryBackend::new()));
        let ends = SessionEnds::new(Arc::clone(&storage));
        for (n, id) in ["a", "b", "c", "d"].into_iter().enumerate() {
            let mut s = session(id, 3600);
            s.mark_connected(n as u64);
            storage.store_session(s.clone()).await.unwrap();
            ends.connected(id, || panic!("first")).await;
            s.mark_disconnected(mqtt5::broker::storage::unix_millis_now());
            storage.store_session(s).await.unwrap();
            assert!(matches!(
                ends.disconnected(id, || panic!("kept")).await,
                AfterDisconnect::Kept(_)
            ));
        }
        // "b" comes back: online, it is not a candidate; "a" and "c" are the oldest offline.
        let mut b = storage.get_session("b").await.unwrap().unwrap();
        b.mark_connected(9);
        storage.store_session(b).await.unwrap();
        assert!(!ends.connected("b", || panic!("resumed")).await);
        assert_eq!(ends.offline_sessions(), 3);
        let mut ended = Vec::new();
        let gone = ends
            .end_oldest_over(1, |id| ended.push(id.to_owned()))
            .await;
        assert_eq!(gone, ["a", "c"]);
        assert_eq!(ended, gone);
        assert_eq!(ends.offline_sessions(), 1);
        // Ended in the broker's storage too: no connection resumes them.
        assert!(storage.get_session("a").await.unwrap().is_none());
        assert!(storage.get_session("c").await.unwrap().is_none());
        assert!(storage.get_session("d").await.unwrap().is_some());
        assert!(
            ends.end_oldest_over(1, |_| panic!("within"))
                .await
                .is_empty()
        );
    }

    #[tokio::test]
    async fn a_takeover_ends_nothing() {
        let storage = Arc::new(DynamicStorage::Memory(MemoryBackend::new()));
        let ends = SessionEnds::new(Arc::clone(&storage));
        let mut s = session("c", 60);
        s.mark_connected(1);
        storage.store_session(s.clone()).await.unwrap();
        ends.connected("c", || panic!("first")).await;
        // The new connection holds the stored session while the old one reports its end.
        s.mark_connected(2);
        storage.store_session(s).await.unwrap();
        assert_eq!(
            ends.disconnected("c", || panic!("taken over")).await,
            AfterDisconnect::TakenOver
        );
    }
}
