//! [`LocalStore`]: a state store in this process to test applications against, with
//! faults on demand — [`mqstate_server::testing::LocalStore`] (the emulator and its
//! embedded broker, on a free loopback port) run on the core's own runtime.
//!
//! Kotlin sees it as the raw `NativeLocalStore` under the idiomatic
//! `mqstate.testing.LocalStore`; Swift as `LocalStore` (`startLocalStore()`). What waits for
//! the store (start, stop, restart, cutting connections) is asynchronous, like a client's
//! requests; the rest (arming a fault, looking inside) takes effect before it returns.

use std::sync::Arc;
use std::time::Duration;

use mqstate::bridge::runtime::{on_runtime_thread, shared_handle};
use mqstate::bridge::{Call, secs_to_duration};
use mqstate::vocabulary::{Language, Unit, option_name};
use mqstate::{Error, ErrorKind};
use mqstate_server::testing::LocalStore as Emulator;
use tokio::sync::{Mutex, MutexGuard};

use crate::MqstateError;
use crate::call::settle;
use crate::values::{Hlc, Seconds, Value};

/// How long [`LocalStore::shutdown`] waits for the store to stop.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(10);

/// Why the emulator could not start (bind a port, create its data directory) as the
/// binding's error: `connect_failed`, the store clients would connect to not being there.
fn start_error(what: &str, e: &std::io::Error) -> Error {
    Error::new(
        ErrorKind::Connect,
        format!("the local store could not {what}: {e}"),
    )
}

/// Starts a store on `127.0.0.1` at a free port, in this process; returns once it answers
/// requests. (A function rather than a constructor, as [`connect`](crate::connect) is.)
#[uniffi::export]
pub async fn start_local_store() -> Result<Arc<LocalStore>, MqstateError> {
    let emulator = settle(Call::spawn(&shared_handle(), async {
        Emulator::start()
            .await
            .map_err(|e| start_error("start", &e))
    }))
    .await?;
    Ok(Arc::new(LocalStore {
        url: emulator.url(),
        port: emulator.port(),
        emulator: Arc::new(Mutex::new(emulator)),
    }))
}

/// An emulated state store running in this process, on a free loopback port. Dropping the
/// last reference stops it without waiting; [`stop`](LocalStore::stop) and
/// [`shutdown`](LocalStore::shutdown) wait.
#[derive(uniffi::Object)]
pub struct LocalStore {
    emulator: Arc<Mutex<Emulator>>,
    url: String,
    port: u16,
}

impl LocalStore {
    /// Runs `work` on the emulator, on the core's runtime, as a call (awaited by the
    /// caller's executor; cancelling it does not undo what has started).
    async fn on_runtime<T, F>(
        &self,
        work: impl FnOnce(tokio::sync::OwnedMutexGuard<Emulator>) -> F + Send + 'static,
    ) -> Result<T, MqstateError>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, Error>> + Send + 'static,
    {
        let emulator = Arc::clone(&self.emulator);
        settle(Call::spawn(&shared_handle(), async move {
            work(emulator.lock_owned().await).await
        }))
        .await
    }

    /// The emulator, for a call that returns at once: waits while a stop or restart runs
    /// (from a thread of a runtime, where waiting could block the very thread that must
    /// finish it, a busy store is `unsupported` instead).
    fn now(&self) -> Result<MutexGuard<'_, Emulator>, MqstateError> {
        if on_runtime_thread() {
            self.emulator.try_lock().map_err(|_| {
                MqstateError::from(Error::new(
                    ErrorKind::Unsupported,
                    "the local store is stopping or restarting, and this thread cannot wait for it",
                ))
            })
        } else {
            Ok(self.emulator.blocking_lock())
        }
    }

    /// Runs `f` on the emulator inside the core's runtime (the store's tasks live there).
    fn with<R>(&self, f: impl FnOnce(&Emulator) -> Result<R, Error>) -> Result<R, MqstateError> {
        let emulator = self.now()?;
        let _runtime = shared_handle().enter();
        Ok(f(&emulator)?)
    }
}

#[uniffi::export]
impl LocalStore {
    /// Where clients connect: `mqtt://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// The TCP port (the same after a restart).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Whether the store runs (false after `stop`, or after a restart that failed).
    pub fn is_running(&self) -> bool {
        self.now().is_ok_and(|e| e.is_running())
    }

    /// Stops the store and waits until its connections, broker and tasks are gone; removes
    /// its data. Calling it again does nothing.
    pub async fn stop(&self) -> Result<(), MqstateError> {
        self.on_runtime(|mut emulator| async move {
            emulator.stop().await;
            Ok(())
        })
        .await
    }

    /// [`stop`](LocalStore::stop), blocking the calling thread until the store has stopped
    /// (Kotlin's `close()`, which cannot suspend). Waits at most 10 s.
    pub fn shutdown(&self) -> Result<(), MqstateError> {
        let emulator = Arc::clone(&self.emulator);
        let call = Call::spawn(&shared_handle(), async move {
            emulator.lock_owned().await.stop().await;
            Ok(())
        });
        Ok(call.wait(Some(SHUTDOWN_WAIT))?)
    }

    /// Resets every client connection now (no DISCONNECT; MQTT sessions kept, so clients
    /// resume and their requests in flight complete). Returns, once every connection has
    /// closed, how many it closed.
    pub async fn cut_connections(&self) -> Result<u64, MqstateError> {
        self.on_runtime(|emulator| async move {
            let cut = emulator.cut_connections().await?;
            Ok(u64::try_from(cut).unwrap_or(u64::MAX))
        })
        .await
    }

    /// Stops answering requests for `duration` (at least 1 ms), then answers what queued,
    /// in order. Returns at once, the pause in effect.
    pub fn pause(&self, duration: Seconds) -> Result<(), MqstateError> {
        let name = option_name(Language::Kotlin, "duration", Unit::Duration);
        let duration = secs_to_duration(&name, duration.0)?;
        self.with(|emulator| emulator.pause(duration))
    }

    /// What `kill -9` and a restart do, on the same port: connections and sessions lost;
    /// with `keep_data`, the keys SET with persistence kept (nothing else). Returns once
    /// the new store answers requests.
    #[uniffi::method(default(keep_data = false))]
    pub async fn restart(&self, keep_data: bool) -> Result<(), MqstateError> {
        let emulator = Arc::clone(&self.emulator);
        settle(Call::spawn(&shared_handle(), async move {
            let mut emulator = emulator.lock_owned().await;
            if !emulator.is_running() {
                return Err(Error::new(ErrorKind::Closed, "the local store is stopped"));
            }
            emulator
                .restart(keep_data)
                .await
                .map_err(|e| start_error("restart", &e))
        }))
        .await
    }

    /// Answers the next `n` requests — only those of `command` (`SET`, `GET`, `DEL`,
    /// `VDEL`, `KEYNOTIFY`, `SCAN`; any case) if given — with the state store error whose
    /// code is `error` (e.g. `fencing_token_lower_version`), as the service sends it.
    /// Replaces what an earlier call armed; `n == 0` disarms. Any other code, or command,
    /// is `invalid_argument`.
    #[uniffi::method(default(command = None))]
    pub fn fail_next(
        &self,
        n: u32,
        error: String,
        command: Option<String>,
    ) -> Result<(), MqstateError> {
        let n = usize::try_from(n).unwrap_or(usize::MAX);
        self.with(|emulator| emulator.fail_next(n, &error, command.as_deref()))
    }

    /// The keys the store holds that match the glob `pattern` (`*`, `?`, `[…]`, `\`
    /// escapes, as a SCAN's), in byte order.
    pub fn keys(&self, pattern: Vec<u8>) -> Result<Vec<Vec<u8>>, MqstateError> {
        self.with(|emulator| {
            Ok(emulator
                .keys(pattern)?
                .into_iter()
                .map(|k| k.to_vec())
                .collect())
        })
    }

    /// The value and version of `key` read inside the store (shaped as a client's GET
    /// result), or none.
    pub fn get(&self, key: Vec<u8>) -> Result<Option<Value>, MqstateError> {
        self.with(|emulator| {
            Ok(emulator.get(key)?.map(|stored| Value {
                value: stored.value.to_vec(),
                version: Some(Hlc::from(stored.version)),
            }))
        })
    }

    /// Deletes every key, persisted ones included (observers notified as for a DEL);
    /// returns how many it deleted.
    pub fn clear(&self) -> Result<u64, MqstateError> {
        self.with(|emulator| Ok(u64::try_from(emulator.clear()?).unwrap_or(u64::MAX)))
    }

    /// How many requests a pause holds now: they reached the store and wait for the pause
    /// to end (a test waits for its own before it cuts the connections or restarts).
    pub fn held_requests(&self) -> Result<u64, MqstateError> {
        self.with(|emulator| Ok(u64::try_from(emulator.held_requests()?).unwrap_or(u64::MAX)))
    }

    /// Drops every notification the store sends for `duration` (at least 1 ms), unsent: a
    /// notification path gone silent (requests are still answered). Returns at once, in
    /// effect; a mute armed while one runs extends it if it ends later.
    pub fn drop_notifications(&self, duration: Seconds) -> Result<(), MqstateError> {
        let name = option_name(Language::Kotlin, "duration", Unit::Duration);
        let duration = secs_to_duration(&name, duration.0)?;
        self.with(|emulator| emulator.drop_notifications(duration))
    }

    /// How many notifications `drop_notifications` has dropped so far (this run of the
    /// store).
    pub fn dropped_notifications(&self) -> Result<u64, MqstateError> {
        self.with(|emulator| {
            Ok(u64::try_from(emulator.dropped_notifications()?).unwrap_or(u64::MAX))
        })
    }

    /// Forgets every client's KEYNOTIFY registrations while their connections stay up (a
    /// store restarted behind its broker); how many there were.
    pub fn forget_registrations(&self) -> Result<u64, MqstateError> {
        self.with(
            |emulator| Ok(u64::try_from(emulator.forget_registrations()?).unwrap_or(u64::MAX)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `fut` to completion on this (non-runtime) thread, as a foreign executor does:
    /// polls, parking between wake-ups.
    fn block<T>(fut: impl Future<Output = T>) -> T {
        use std::task::{Context, Poll, Wake, Waker};
        struct Unpark(std::thread::Thread);
        impl Wake for Unpark {
            fn wake(self: Arc<Self>) {
                self.0.unpark();
            }
        }
        let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
        let mut cx = Context::from_waker(&waker);
        let mut fut = std::pin::pin!(fut);
        loop {
            if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
                return v;
            }
            std::thread::park_timeout(Duration::from_millis(50));
        }
    }

    #[test]
    fn faults_and_inspection_reach_the_store_and_errors_keep_their_codes() {
        let store = block(start_local_store()).unwrap();
        assert!(store.url().ends_with(&format!(":{}", store.port())));
        assert!(store.is_running());
        assert_eq!(store.keys(b"*".to_vec()).unwrap(), Vec::<Vec<u8>>::new());
        assert_eq!(store.get(b"k".to_vec()).unwrap(), None);
        assert_eq!(store.clear().unwrap(), 0);

        let e = store.fail_next(1, "nope".into(), None).unwrap_err();
        assert_eq!(e.code(), "invalid_argument");
        let e = store
            .fail_next(1, "quota_exceeded".into(), Some("PUT".into()))
            .unwrap_err();
        assert_eq!(e.code(), "invalid_argument");
        store
            .fail_next(2, "quota_exceeded".into(), Some("set".into()))
            .unwrap();
        let e = store.pause(Seconds(0.0)).unwrap_err();
        assert_eq!(e.code(), "invalid_argument");
        assert!(format!("{e:?}").contains("duration"), "{e:?}");
        assert_eq!(
            store.pause(Seconds(-1.0)).unwrap_err().code(),
            "invalid_argument"
        );
        store.pause(Seconds(0.001)).unwrap();

        assert_eq!(block(store.cut_connections()).unwrap(), 0);
        block(store.restart(false)).unwrap();
        assert!(store.is_running());

        block(store.stop()).unwrap();
        assert!(!store.is_running());
        assert_eq!(store.keys(b"*".to_vec()).unwrap_err().code(), "closed");
        assert_eq!(store.clear().unwrap_err().code(), "closed");
        assert_eq!(block(store.restart(true)).unwrap_err().code(), "closed");
        assert_eq!(block(store.cut_connections()).unwrap_err().code(), "closed");
        // Stopping again does nothing.
        block(store.stop()).unwrap();
        store.shutdown().unwrap();
    }
}
