//! A look inside a running server, and faults on it, for the console of `mqstate serve
//! --http` (docs/console.md): [`Inspector`], from [`ServerHandle::inspector`](crate::ServerHandle::inspector).
//!
//! Reads take the store's lock for a bounded time ([`LOOK_AT`] keys at most per page), so
//! browsing millions of keys never stalls the requests being served for long.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use mqstate::{Error, ErrorKind};

use crate::embedded::BrokerView;
use crate::faults::{Faults, fault_end, store_error_kind, verb};
use crate::monitor::{Monitor, What};
use crate::service::Service;
use crate::state_machine::{KeyInfo, KeyPage, LockInfo};

/// How many keys one [`Inspector::page`] looks at, at most.
pub const LOOK_AT: usize = 10_000;

/// The most keys one page holds.
pub const MAX_PAGE: usize = 1000;

/// The longest pause [`Inspector::pause`] arms.
pub const MAX_PAUSE: Duration = Duration::from_secs(600);

/// A client as [`Inspector::clients`] lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientInfo {
    /// Its client id.
    pub id: String,
    /// Connected now (else a session kept for it).
    pub connected: bool,
    /// Connected: since its connection opened; kept: since it left (Unix ms).
    pub since_ms: u64,
    /// Where it connected from, when known.
    pub address: Option<SocketAddr>,
    /// Keys it observes (KEYNOTIFY), at most the limit asked for, in no order.
    pub registrations: Vec<Bytes>,
    /// How many keys it observes.
    pub registration_count: usize,
}

/// A running server's insides (cheap to clone). Reads need the store served in the
/// server's process (the embedded broker without the adapter); otherwise they fail with
/// [`ErrorKind::Unsupported`].
#[derive(Clone)]
pub struct Inspector {
    pub(crate) service: Option<Arc<Mutex<Service>>>,
    pub(crate) broker: Option<BrokerView>,
    pub(crate) faults: Arc<Faults>,
    pub(crate) monitor: Option<Monitor>,
    /// The store's own client id (its session is not a client's).
    pub(crate) own_id: String,
}

impl std::fmt::Debug for Inspector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inspector")
            .field("in_process", &self.in_process())
            .finish_non_exhaustive()
    }
}

fn unsupported(what: &str) -> Error {
    Error::new(
        ErrorKind::Unsupported,
        format!(
            "{what} needs the store served in this process (not with --broker or \
             --embedded-adapter)"
        ),
    )
}

impl Inspector {
    /// Whether the store is served in this process (reads work).
    pub fn in_process(&self) -> bool {
        self.service.is_some()
    }

    fn with_store<R>(&self, what: &str, f: impl FnOnce(&mut Service) -> R) -> Result<R, Error> {
        let service = self.service.as_ref().ok_or_else(|| unsupported(what))?;
        let mut service = service.lock().unwrap_or_else(|p| p.into_inner());
        service.expire_due();
        Ok(f(&mut service))
    }

    /// How many keys the store holds, and their bytes with their values'.
    pub fn size(&self) -> Result<(usize, u64), Error> {
        self.with_store("the store's size", |s| {
            (s.store.len(), s.store.data_bytes())
        })
    }

    /// `key`'s whole state, its value cut to `max_value` bytes; `None` when absent.
    pub fn key(&self, key: &[u8], max_value: usize) -> Result<Option<KeyInfo>, Error> {
        self.with_store("reading a key", |s| s.store.inspect(key, max_value))
    }

    /// A page of the keys that match `pattern` after `after` (see
    /// [`StateMachine::page`](crate::state_machine::StateMachine::page)), at most `limit`
    /// (up to [`MAX_PAGE`]), looking at [`LOOK_AT`] keys at most.
    pub fn page(
        &self,
        pattern: &[u8],
        after: Option<&[u8]>,
        limit: usize,
    ) -> Result<KeyPage, Error> {
        let limit = limit.clamp(1, MAX_PAGE);
        self.with_store("listing keys", |s| {
            s.store.page(pattern, after, limit, LOOK_AT)
        })
    }

    /// The keys that look like locks (see
    /// [`StateMachine::locks`](crate::state_machine::StateMachine::locks)), at most `limit`.
    pub fn locks(&self, limit: usize) -> Result<Vec<LockInfo>, Error> {
        self.with_store("listing locks", |s| s.store.locks(limit))
    }

    /// The clients connected now and the sessions kept for clients gone (at most `limit` of
    /// each), with at most `registrations` of the keys each observes.
    pub async fn clients(
        &self,
        limit: usize,
        registrations: usize,
    ) -> Result<Vec<ClientInfo>, Error> {
        let broker = self
            .broker
            .as_ref()
            .ok_or_else(|| unsupported("listing clients"))?;
        let seen = broker.clients(&self.own_id, limit).await;
        self.with_store("listing clients", |s| {
            seen.into_iter()
                .map(|c| {
                    let (keys, count) = s.store.registrations_of(&c.id, registrations);
                    ClientInfo {
                        id: c.id,
                        connected: c.connected,
                        since_ms: c.since_ms,
                        address: c.address,
                        registrations: keys,
                        registration_count: count,
                    }
                })
                .collect()
        })
    }

    /// Closes the connection of `client` (every client's when `None`) as a network failure
    /// does — sessions kept, so they resume — and waits until closed; how many it closed.
    pub async fn cut(&self, client: Option<&str>) -> Result<usize, Error> {
        let broker = self.broker.as_ref().ok_or_else(|| {
            Error::new(
                ErrorKind::Unsupported,
                "cutting connections needs the embedded broker (not --broker)",
            )
        })?;
        let cut = broker.cut(&self.own_id, client).await;
        self.report(
            "cut",
            match client {
                Some(id) => format!("closed the connection of {id:?} ({cut} closed)"),
                None => format!("closed every client connection ({cut})"),
            },
        );
        Ok(cut)
    }

    /// Stops answering for `duration` (1 ms to [`MAX_PAUSE`]); the requests held are then
    /// answered in order.
    pub fn pause(&self, duration: Duration) -> Result<(), Error> {
        if duration > MAX_PAUSE {
            return Err(Error::invalid_argument(format!(
                "pause: at most {} s (got {duration:?})",
                MAX_PAUSE.as_secs()
            )));
        }
        self.faults.pause_until(fault_end("pause", duration)?);
        self.report(
            "pause",
            format!("no answers for {} ms", duration.as_millis()),
        );
        Ok(())
    }

    /// Answers the next `n` requests (of `command` only, if given) with the state store
    /// error whose code is `error` (see `LocalStore::fail_next`).
    pub fn fail_next(&self, n: usize, error: &str, command: Option<&str>) -> Result<(), Error> {
        let kind = store_error_kind(error)?;
        let verb = command.map(verb).transpose()?;
        self.faults.fail_next(n, kind, verb);
        let of = command.map_or(String::new(), |c| format!(" {}", c.to_ascii_uppercase()));
        self.report(
            "fail",
            format!("the next {n}{of} requests answered {error}"),
        );
        Ok(())
    }

    /// Reports a fault to the live stream.
    pub fn report(&self, fault: &'static str, detail: String) {
        tracing::info!(fault, detail = %detail, "fault injected");
        if let Some(monitor) = &self.monitor {
            monitor.publish(What::Fault { fault, detail });
        }
    }
}
