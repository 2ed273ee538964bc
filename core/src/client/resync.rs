//! Resynchronisation of observed keys after a reconnection (the guarantee of
//! [`observe`](crate::observe)): KEYNOTIFY each observed key again, GET it, deliver a resync
//! notification when it changed while disconnected, and retry failed keys with backoff,
//! telling their observers they are degraded meanwhile.

use std::time::Duration;

use bytes::Bytes;
use tracing::{debug, warn};

use super::WeakClient;
use crate::Client;

/// Delay before retrying keys whose re-registration failed: doubles from 500 ms to 30 s.
fn retry_delay(attempt: u32) -> Duration {
    Duration::from_millis(500)
        .saturating_mul(1 << attempt.min(6))
        .min(Duration::from_secs(30))
}

/// Re-registers `keys` (KEYNOTIFY + GET) and delivers resync notifications; returns how
/// many failed (their observers were told they are degraded).
async fn resync_keys(client: &Client, keys: Vec<Bytes>) -> usize {
    let mut failed = 0;
    for key in keys {
        let _op = client.shared.observers.op_lock(&key).lock().await;
        match client.register(&key, client.timeout).await {
            Ok(current) => {
                client.shared.observers.resync(&key, current.clone());
                client.shared.observers.registered(&key, current);
            }
            Err(e) => {
                failed += 1;
                warn!(error = %e, key = %key.escape_ascii(), "could not re-register an observed key");
                client
                    .shared
                    .observers
                    .degraded(&key, &format!("re-registration failed: {e}"));
            }
        }
    }
    failed
}

/// After every reconnection: KEYNOTIFY each observed key again, then GET it and deliver a
/// resync notification when it changed while disconnected. Keys that fail are retried with
/// backoff until they succeed or the next reconnection starts over.
pub(crate) async fn resync_on_reconnect(weak: WeakClient) {
    let Some(shared) = weak.shared.upgrade() else {
        return;
    };
    let mut link = shared.link.subscribe();
    drop(shared);
    let (mut seen, mut seen_session) = {
        let l = link.borrow();
        (l.connection, l.session)
    };
    let mut retry: Option<u32> = None;
    loop {
        let wait = async {
            link.wait_for(|l| l.closed || l.connection > seen)
                .await
                .map(|state| (state.closed, state.connection, state.session))
        };
        let woke = match retry {
            None => Some(wait.await),
            Some(attempt) => tokio::time::timeout(retry_delay(attempt), wait).await.ok(),
        };
        let Some(client) = weak.upgrade() else {
            return;
        };
        let keys = match woke {
            Some(Err(_)) | Some(Ok((true, _, _))) => return,
            Some(Ok((false, connection, session))) => {
                let session_kept = session == seen_session;
                seen = connection;
                seen_session = session;
                retry = None;
                client.retire_cached(connection, session_kept).await;
                if client.shared.observers.is_empty() {
                    continue;
                }
                client.shared.observers.unregister_all()
            }
            // The retry delay passed without a new connection: retry the failed keys.
            None => client.shared.observers.unregistered(),
        };
        debug!(keys = keys.len(), "re-registering observed keys");
        let failed = match client
            .shared
            .subscribe(&client.shared.notification_filter, client.timeout)
            .await
        {
            Ok(()) => resync_keys(&client, keys).await,
            Err(e) => {
                warn!(error = %e, "could not restore the notification subscription");
                for key in &keys {
                    let why = format!("the notification subscription failed: {e}");
                    client.shared.observers.degraded(key, &why);
                }
                keys.len()
            }
        };
        retry = (failed > 0).then(|| retry.map_or(0, |a| a + 1));
    }
}
