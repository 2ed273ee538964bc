//! Ending the MQTT session when a client closes.
//!
//! A client connects with a session expiry (an hour by default) so that its session — its
//! subscriptions, its in-flight requests and the store's KEYNOTIFY registrations — survives
//! a connection reset. A client that *closes* is not coming back: left alone, its session
//! would stay in the broker for the whole expiry (every short-lived client — a CLI call, a
//! script, a test — would leave one behind). MQTT 5 ends it with a DISCONNECT carrying
//! session expiry 0, but rumqttc 0.25 sends DISCONNECT without properties and offers no way
//! to add them. So a closing client ends its session the other standard way: once its own
//! connection is closed, a short second connection with the same client id, clean start and
//! session expiry 0 replaces the session with an empty one that ends with that connection
//! (MQTT 5 §3.1.2.4 and §3.1.2.11.2). Any MQTT 5 broker does this; it costs one CONNECT and
//! CONNACK at close, bounded by [`END_GRACE`], and is skipped when the session expiry is
//! zero (the session already ended with the connection) or the client was not connected.

use std::time::Duration;

use rumqttc::Outgoing;
use rumqttc::v5::mqttbytes::v5::{ConnectReturnCode, Packet};
use rumqttc::v5::{AsyncClient, Event, MqttOptions};
use tracing::debug;

/// The longest a closing client spends ending its session.
pub(crate) const END_GRACE: Duration = Duration::from_secs(2);

/// The options of the connection that ends the session: the client's own (same id,
/// credentials, TLS) with clean start and no session expiry.
pub(crate) fn options(client: &MqttOptions) -> MqttOptions {
    let mut opts = client.clone();
    opts.set_clean_start(true);
    opts.set_session_expiry_interval(Some(0));
    opts
}

/// Replaces the client's session with one that ends at once; true when the broker accepted
/// the connection, and closed it after its DISCONNECT, within [`END_GRACE`]. Waiting for
/// the broker to close means it has processed the DISCONNECT: a connection made after this
/// returns finds no session.
pub(crate) async fn end(client: &MqttOptions) -> bool {
    let (mqtt, mut eventloop) = AsyncClient::new(options(client), 4);
    let ended = tokio::time::timeout(END_GRACE, async {
        let mut sent = false;
        loop {
            match eventloop.poll().await {
                Ok(Event::Incoming(Packet::ConnAck(ack))) => {
                    if ack.code != ConnectReturnCode::Success {
                        debug!(code = ?ack.code, "the broker refused the session-ending connection");
                        return false;
                    }
                    let _ = mqtt.try_disconnect();
                }
                Ok(Event::Outgoing(Outgoing::Disconnect)) => sent = true,
                Ok(_) => {}
                // After the DISCONNECT, the broker closing the connection is the success.
                Err(_) if sent => return true,
                Err(e) => {
                    debug!(error = %e, "the session-ending connection failed");
                    return false;
                }
            }
        }
    })
    .await
    .unwrap_or(false);
    debug!(
        ended,
        client_id = client.client_id(),
        "session ended at close"
    );
    ended
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ending_connection_starts_clean_with_no_expiry() {
        let mut client = MqttOptions::new("me", "localhost", 1883);
        client.set_clean_start(false);
        client.set_session_expiry_interval(Some(3600));
        let opts = options(&client);
        assert!(opts.clean_start());
        assert_eq!(opts.session_expiry_interval(), Some(0));
        assert_eq!(opts.client_id(), "me");
    }
}
