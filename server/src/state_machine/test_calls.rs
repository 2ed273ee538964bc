//! What the state machine's unit tests share: one request handled as client `c` sends it.

use mqstate::codec::Request;

use super::{Invocation, Reply, StateMachine};

/// Handles `request` from client `c`, stamped at `now`, without a fencing token or
/// persistence.
pub(super) fn call(store: &mut StateMachine, now: u64, request: Request<&[u8]>) -> Reply {
    let payload = request.encode();
    let stamp = format!("{now}:0:c");
    store.handle(
        now,
        Invocation {
            client_id: "c",
            payload: &payload,
            timestamp: Some(&stamp),
            fencing_token: None,
            persist: false,
        },
    )
}
