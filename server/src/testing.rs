//! A state store to test applications against, in process, with faults on demand (the
//! `testing` feature).
//!
//! [`LocalStore::start`] runs the emulator — the embedded MQTT5 broker with the store served
//! inside it — on `127.0.0.1` at a free port, in the calling process: no binary, no fixed
//! port, nothing shared between two stores. Point a client at [`LocalStore::url`], then make
//! the store misbehave on cue:
//!
//! | call | what the clients see |
//! |---|---|
//! | [`cut_connections`](LocalStore::cut_connections) | every connection reset; sessions kept, so they resume and in-flight requests complete |
//! | [`pause`](LocalStore::pause) | no answers for a while, then the queued requests answered in order |
//! | [`restart`](LocalStore::restart) | `kill -9` and a restart on the same port: connections and sessions lost; persisted keys kept only with `keep_data` |
//! | [`fail_next`](LocalStore::fail_next) | the next requests answered with a state store error, exactly as the service sends it |
//! | [`drop_notifications`](LocalStore::drop_notifications) | no notification reaches anyone for a while (a silent link, a hung broker): they are lost, as a broker whose queue is full loses them |
//! | [`forget_registrations`](LocalStore::forget_registrations) | every KEYNOTIFY registration lost, connections left up: what a store restarted behind its broker shows |
//!
//! and look inside without a client: [`keys`](LocalStore::keys), [`get`](LocalStore::get),
//! [`clear`](LocalStore::clear). Each call returns once it has taken effect.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use mqstate_server::testing::LocalStore;
//! let mut store = LocalStore::start().await?;
//! let client = mqstate::Client::connect(mqstate::ConnectionSettings::from_url(&store.url())?).await?;
//! client.set("k", "v", Default::default()).await?;
//! store.fail_next(1, "fencing_token_lower_version", Some("SET"))?;
//! assert!(client.set("k", "w", Default::default()).await.is_err());
//! assert_eq!(store.get("k")?.map(|e| e.value), Some("v".into()));
//! store.stop().await;
//! # Ok(())
//! # }
//! ```

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;
use mqstate::{Error, ErrorKind, Hlc};

use crate::faults::fault_end;
use crate::{Server, ServerConfig, ServerHandle};

/// How long [`LocalStore::restart`] keeps trying to bind the same port again.
const REBIND_FOR: Duration = Duration::from_secs(5);

/// A key's value and version, as [`LocalStore::get`] reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredValue {
    /// The value.
    pub value: Bytes,
    /// Its version (what a client's GET returns as the response's `__ts`).
    pub version: Hlc,
}

/// An emulated state store running in this process, on a free loopback port; see the
/// [module](self) documentation.
///
/// It owns a temporary data directory (for keys SET with persistence, which
/// [`restart(true)`](LocalStore::restart) keeps), removed when the store stops. Dropping it
/// stops it without waiting; [`LocalStore::stop`] waits.
pub struct LocalStore {
    server: Option<ServerHandle>,
    port: u16,
    data_dir: PathBuf,
}

impl LocalStore {
    /// Starts a store on `127.0.0.1` at a free port, and returns once it serves requests.
    /// Needs a Tokio runtime with the time and I/O drivers (the store's tasks run on it).
    pub async fn start() -> std::io::Result<LocalStore> {
        let data_dir = std::env::temp_dir().join(format!(
            "mqstate-local-store-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&data_dir)?;
        match Server::start(config(&data_dir, 0)).await {
            Ok(server) => Ok(LocalStore {
                port: server.addr().port(),
                server: Some(server),
                data_dir,
            }),
            Err(e) => {
                let _ = std::fs::remove_dir_all(&data_dir);
                Err(e)
            }
        }
    }

    /// Where clients connect: `mqtt://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("mqtt://127.0.0.1:{}", self.port)
    }

    /// The TCP port (the same after a [`restart`](LocalStore::restart)).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Whether the store runs (false after [`stop`](LocalStore::stop), or after a
    /// [`restart`](LocalStore::restart) that failed).
    pub fn is_running(&self) -> bool {
        self.server.is_some()
    }

    /// Stops the store and waits until its connections, broker and tasks are gone; removes
    /// its data directory. Calling it again does nothing.
    pub async fn stop(&mut self) {
        if let Some(server) = self.server.take() {
            server.shutdown().await;
        }
        let _ = std::fs::remove_dir_all(&self.data_dir);
    }

    /// Closes every client connection now, as a network failure does: no DISCONNECT packet,
    /// each client's will published, its MQTT session (subscriptions, queued responses and
    /// notifications) kept. Clients reconnect and resume by themselves, and their requests
    /// in flight complete. Returns, once every connection has closed, how many it closed.
    pub async fn cut_connections(&self) -> Result<usize, Error> {
        self.running()?.inspector().cut(None).await
    }

    /// Stops answering requests for `duration` (the shape of a GC pause or a slow
    /// network): requests received meanwhile wait, and are answered in order when it ends.
    /// Connections stay up. A pause armed while one runs extends it if it ends later.
    /// Returns at once, the pause in effect. A duration under 1 ms is refused with
    /// `invalid_argument` (the vocabulary's rule for a span, as in every binding).
    pub fn pause(&self, duration: Duration) -> Result<(), Error> {
        let until = fault_end("pause", duration)?;
        self.running()?.faults().pause_until(until);
        Ok(())
    }

    /// How many requests a [`pause`](LocalStore::pause) holds now: they reached the store
    /// and wait for the pause to end. A test that pauses, sends a request, then cuts or
    /// restarts waits until its request is counted here; otherwise the cut can come before
    /// the request arrives (it is then sent after the reconnection, and answered).
    pub fn held_requests(&self) -> Result<usize, Error> {
        Ok(self.running()?.faults().held())
    }

    /// What `kill -9` and a restart do: every connection is reset (no DISCONNECT packet)
    /// and every MQTT session is lost, and the store comes back on the same port (clients reconnect by themselves, with new
    /// sessions: their requests in flight fail with `connection_lost`). With `keep_data`,
    /// keys SET with persistence (`SetOptions::persist`) survive, with their versions;
    /// nothing else does. Returns once the new store serves requests.
    pub async fn restart(&mut self, keep_data: bool) -> std::io::Result<()> {
        if let Some(server) = self.server.take() {
            server.kill().await;
        }
        if !keep_data {
            let _ = std::fs::remove_dir_all(&self.data_dir);
        }
        std::fs::create_dir_all(&self.data_dir)?;
        self.server =
            Some(Server::start_rebinding(config(&self.data_dir, self.port), REBIND_FOR).await?);
        Ok(())
    }

    /// Drops every notification the store sends for `duration`, unsent (the shape of a
    /// notification path gone silent: a dead link the keep-alive has not noticed, a hung
    /// broker, a broker whose queue for the client is full). Requests are answered as
    /// usual. A mute armed while one runs extends it if it ends later. Returns at once, in
    /// effect. A duration under 1 ms is refused with `invalid_argument`.
    pub fn drop_notifications(&self, duration: Duration) -> Result<(), Error> {
        let until = fault_end("drop_notifications", duration)?;
        self.running()?.faults().mute_until(until);
        Ok(())
    }

    /// How many notifications [`drop_notifications`](LocalStore::drop_notifications) has
    /// dropped so far (this run of the store).
    pub fn dropped_notifications(&self) -> Result<usize, Error> {
        Ok(self.running()?.faults().muted())
    }

    /// Forgets every client's KEYNOTIFY registrations while their connections and sessions
    /// stay up — what a store restarted behind its broker (`mqstate serve --broker`, or the
    /// real service losing its state) leaves its clients with: no notification of any key
    /// they observed, and nothing on the connection to say so. Returns how many there were.
    pub fn forget_registrations(&self) -> Result<usize, Error> {
        self.with_service(crate::service::Service::forget_registrations)
    }

    /// Answers the next `n` requests — only those of `command` (`"SET"`, `"GET"`, `"DEL"`,
    /// `"VDEL"`, `"KEYNOTIFY"`, `"SCAN"`; any case) if given — with the state store error
    /// whose code (in the error table: `mqstate::ERROR_TABLE`, `core/vocabulary.json`) is
    /// `error`, for example `"fencing_token_lower_version"`. The response is exactly what
    /// the service sends for that error (`-ERR <its text>`, `__stat 200`), and the store is
    /// left untouched. Replaces what an earlier call armed; `n == 0` disarms.
    ///
    /// Errors with [`ErrorKind::InvalidArgument`] when `error` is not the code of a state
    /// store error (connection, timeout and client-side errors are not answers the service
    /// sends: use [`cut_connections`](LocalStore::cut_connections) or
    /// [`pause`](LocalStore::pause) for those) or `command` is not a verb.
    pub fn fail_next(&self, n: usize, error: &str, command: Option<&str>) -> Result<(), Error> {
        self.running()?.inspector().fail_next(n, error, command)
    }

    /// The keys that match the glob `pattern` (the syntax of a client's SCAN: `*`, `?`,
    /// `[…]`, `\` escapes), in byte order.
    pub fn keys(&self, pattern: impl AsRef<[u8]>) -> Result<Vec<Bytes>, Error> {
        self.with_service(|service| {
            service.expire_due();
            service.store.keys_matching(pattern.as_ref())
        })
    }

    /// The value and version of `key`, or `None`.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<StoredValue>, Error> {
        self.with_service(|service| {
            service.expire_due();
            service
                .store
                .peek(key.as_ref())
                .map(|(value, version)| StoredValue { value, version })
        })
    }

    /// Deletes every key, persisted ones included (observers get a DELETE for each, as for
    /// a DEL); returns how many were deleted.
    pub fn clear(&self) -> Result<usize, Error> {
        self.with_service(crate::service::Service::clear)
    }

    fn running(&self) -> Result<&ServerHandle, Error> {
        self.server
            .as_ref()
            .ok_or_else(|| Error::new(ErrorKind::Closed, "the local store is stopped"))
    }

    fn with_service<R>(
        &self,
        f: impl FnOnce(&mut crate::service::Service) -> R,
    ) -> Result<R, Error> {
        self.running()?
            .with_service(f)
            .ok_or_else(|| Error::new(ErrorKind::Unsupported, "the store is not served in process"))
    }

    /// The directory that holds the persisted keys.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }
}

impl Drop for LocalStore {
    fn drop(&mut self) {
        // Signals every task to stop, without waiting (no runtime is needed here).
        drop(self.server.take());
        let _ = std::fs::remove_dir_all(&self.data_dir);
    }
}

impl std::fmt::Debug for LocalStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalStore")
            .field("url", &self.url())
            .field("running", &self.is_running())
            .finish_non_exhaustive()
    }
}

/// The configuration of a local store on `port` (0: a free one) with `data_dir`.
fn config(data_dir: &Path, port: u16) -> ServerConfig {
    ServerConfig {
        listen: SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
        data_dir: Some(data_dir.to_owned()),
        ..ServerConfig::ephemeral()
    }
}

/// The Rust blocks of `docs/server.md` ("Testing your app (Rust)"), run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../docs/server.md")]
pub struct ServerDocDoctests;

#[cfg(test)]
mod tests {
    use super::*;

    /// A clean stop answers the request a pause holds back `__stat 503`, not applied,
    /// instead of leaving it to time out. It waits until the request is held (the pause's
    /// count), so a slow machine cannot stop the store before the request arrives.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_clean_stop_refuses_what_a_pause_holds_with_503() {
        use mqstate::{Client, ConnectionSettings, SetOptions};
        let bound = Duration::from_secs(20);
        let mut store = LocalStore::start().await.unwrap();
        let settings = ConnectionSettings::from_url(&store.url()).unwrap();
        let client = Client::connect(settings).await.unwrap();
        let persisted = SetOptions {
            persist: true,
            ..SetOptions::default()
        };
        client.set("before", "b", persisted.clone()).await.unwrap();
        store.pause(Duration::from_secs(60)).unwrap();
        let in_flight = {
            let client = client.clone();
            tokio::spawn(async move { client.set("late", "x", persisted).await })
        };
        tokio::time::timeout(bound, async {
            while store.held_requests().unwrap() == 0 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .expect("the pause holds the request");
        let stopped = tokio::time::Instant::now();
        store.stop().await;
        assert!(
            stopped.elapsed() < Duration::from_secs(10),
            "the stop waited out the pause"
        );
        let e = tokio::time::timeout(bound, in_flight)
            .await
            .expect("the request ended")
            .unwrap()
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Rpc(503), "{e}");
        assert!(!e.may_have_applied(), "{e}");
    }
}
