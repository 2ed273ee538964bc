//! The correlation engine: one request/response exchange of the state store's RPC (spec §2).
//!
//! `Client::request` (in `client/request.rs`) waits for the connection, stamps the request
//! with the process clock, sends it with its envelope ([`wire`]), parks a slot in the
//! [`pending`] map, and waits for the response the event loop moves into that slot, bounded
//! by one deadline. The event loop
//! only moves a received response into its waiting slot; decoding happens on the caller's
//! task, so at high concurrency the work spreads over every core instead of queueing behind
//! the one event loop.
//!
//! Failures are typed: not sent at all (`invalid_argument`, `connection_lost` while waiting
//! for the connection, `timeout` handing it over), or sent and unanswered (`timeout`,
//! `connection_lost` with [`Error::may_have_applied`] set).

mod pending;
pub(crate) mod wire;

mod routes;

use std::time::Duration;

use crate::error::Error;

pub(crate) use pending::{Outcome, PendingGuard, PendingMap};
pub(crate) use wire::{Envelope, Reply, packet_size, read_reply};

/// A request's correlation data: 16 random bytes laid out as a UUID v4.
pub(crate) type CorrelationId = [u8; 16];

/// A fresh random correlation id.
pub(crate) fn new_correlation_id() -> CorrelationId {
    let mut id: CorrelationId = rand::random();
    id[6] = (id[6] & 0x0f) | 0x40; // version 4
    id[8] = (id[8] & 0x3f) | 0x80; // RFC 4122 variant
    id
}

/// A request timeout must be positive: a zero one could never be met (it would race the
/// answer), so it is refused before anything is sent ([`DurationRole::Bound`]).
///
/// [`DurationRole::Bound`]: crate::vocabulary::DurationRole::Bound
pub(crate) fn check_timeout(timeout: Duration) -> Result<(), Error> {
    if timeout.is_zero() {
        return Err(Error::invalid_argument(
            "a timeout of zero can never be met by a request (it would race the answer): give \
             a positive timeout, or none for the default (the client's request_timeout)",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn a_zero_request_timeout_is_refused() {
        assert_eq!(
            check_timeout(Duration::ZERO).unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
        assert!(check_timeout(Duration::from_nanos(1)).is_ok());
    }

    #[test]
    fn correlation_ids_are_uuid_v4() {
        let a = new_correlation_id();
        assert_eq!(a[6] >> 4, 4);
        assert_eq!(a[8] >> 6, 0b10);
        assert_ne!(a, new_correlation_id());
    }
}
