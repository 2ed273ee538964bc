//! `NativeLocalStore`: [`mqstate_server::testing::LocalStore`] for JavaScript — an emulated
//! state store in this process, on a free loopback port, with faults on demand (wrapped by
//! `lib/testing.js`, the package's `mqstate/testing` entry point).
//!
//! The stores of a process run on one runtime of their own, on one thread
//! (`mqstate-local-store`, started with the first store: [`local_runtime`]), apart from the
//! clients' (the library's runtime, [`mqstate::bridge::runtime`]) as a real store is apart
//! from its clients; the emulator's start-up is not `Send`, so it runs there in a
//! `LocalSet`. Nothing of it is a libuv handle, so a running store never keeps the event
//! loop alive — only a Promise of one of its calls does while it is pending
//! ([`crate::client::pending`]). Its asynchronous operations (`startLocalStore`, `stop`,
//! `cutConnections`, `restart`) return Promises; the others take effect before they
//! return.
//!
//! A store the program forgets to stop is stopped (its tasks told to end, its temporary
//! data directory removed) when its object is garbage-collected, or when the JS
//! environment that started it is torn down (the process exits, a worker thread ends).

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock, Weak};

use mqstate::bridge::Call;
use mqstate::bridge::runtime::shared_handle;
use mqstate::{Error, ErrorKind};
use mqstate_server::testing::LocalStore;
use napi::bindgen_prelude::{Buffer, Env, Object, Unknown};
use napi_derive::napi;
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};
use tokio::sync::{RwLock, oneshot};

use crate::args;
use crate::client::convert::{RawValue, millis};
use crate::client::pending::promise;
use crate::error::{invalid_argument, to_js};
use crate::hlc::Hlc;

/// A store and the lock its operations take: shared by the operations in flight (a cut),
/// exclusive for those that replace or end it (`restart`, `stop`). `None` once stopped.
type Shared = Arc<RwLock<Option<LocalStore>>>;

thread_local! {
    /// The stores started on this JS thread, stopped when its environment is torn down.
    static STARTED: RefCell<Vec<Weak<RwLock<Option<LocalStore>>>>> = const { RefCell::new(Vec::new()) };
    /// Whether this JS thread's environment has the clean-up hook.
    static HOOKED: Cell<bool> = const { Cell::new(false) };
}

/// Stops what this JS thread's stores left running (the environment is being torn down).
fn stop_forgotten() {
    let stores = STARTED.with(|started| std::mem::take(&mut *started.borrow_mut()));
    for store in stores.iter().filter_map(Weak::upgrade) {
        if let Ok(mut guard) = store.try_write() {
            // Dropping it tells its tasks to end and removes its data directory.
            drop(guard.take());
        }
    }
}

/// Work for the stores' runtime: makes the (not `Send`) future to run there.
type Job = Box<dyn FnOnce() -> Pin<Box<dyn Future<Output = ()>>> + Send>;

/// The stores' runtime (see the module documentation): its thread, started on first use,
/// runs each job as a local task; `None` if the thread could not be started.
fn local_runtime() -> Option<&'static UnboundedSender<Job>> {
    static JOBS: OnceLock<Option<UnboundedSender<Job>>> = OnceLock::new();
    JOBS.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .ok()?;
        let (jobs, mut next) = unbounded_channel::<Job>();
        std::thread::Builder::new()
            .name("mqstate-local-store".into())
            .spawn(move || {
                let local = tokio::task::LocalSet::new();
                local.block_on(&runtime, async move {
                    while let Some(job) = next.recv().await {
                        tokio::task::spawn_local(job());
                    }
                });
            })
            .ok()?;
        Some(jobs)
    })
    .as_ref()
}

/// A call made of the future `work` makes, run on the stores' runtime.
fn on_stores<T, F, W>(work: W) -> Call<T>
where
    T: Send + 'static,
    F: Future<Output = Result<T, Error>> + 'static,
    W: FnOnce() -> F + Send + 'static,
{
    let (done, result) = oneshot::channel();
    let job: Job = Box::new(move || {
        Box::pin(async move {
            let _ = done.send(work().await);
        })
    });
    let sent = local_runtime().is_some_and(|jobs| jobs.send(job).is_ok());
    if !sent {
        return Call::ready(Err(Error::new(
            ErrorKind::Unsupported,
            "the local stores' thread could not be started",
        )));
    }
    Call::spawn(&shared_handle(), async move {
        result.await.unwrap_or_else(|_| {
            Err(Error::new(
                ErrorKind::Closed,
                "the local stores' runtime ended the call",
            ))
        })
    })
}

/// Starts a local store; resolves to it once it serves requests.
#[napi(
    js_name = "startLocalStore",
    ts_return_type = "Promise<NativeLocalStore>"
)]
pub fn start_local_store(env: &Env) -> napi::Result<Object<'_>> {
    if !HOOKED.with(Cell::get) {
        env.add_env_cleanup_hook((), |()| stop_forgotten())?;
        HOOKED.with(|hooked| hooked.set(true));
    }
    let call = on_stores(|| async {
        LocalStore::start().await.map_err(|e| {
            Error::new(
                ErrorKind::Unsupported,
                format!("the local store could not start: {e}"),
            )
        })
    });
    promise(env, call, None, |store| {
        let port = store.port();
        let shared: Shared = Arc::new(RwLock::new(Some(store)));
        STARTED.with(|started| {
            let mut started = started.borrow_mut();
            started.retain(|s| s.strong_count() > 0);
            started.push(Arc::downgrade(&shared));
        });
        NativeLocalStore { shared, port }
    })
}

/// The error of a call on a stopped store.
fn stopped() -> Error {
    Error::new(ErrorKind::Closed, "the local store is stopped")
}

/// A local store (see `LocalStore` in `lib/testing.js`).
#[napi]
pub struct NativeLocalStore {
    shared: Shared,
    port: u16,
}

#[napi]
impl NativeLocalStore {
    /// Its TCP port (the same after a restart).
    #[napi(getter)]
    pub fn port(&self) -> u32 {
        u32::from(self.port)
    }

    /// Whether it runs: false once stopped, after a restart that failed, and while a stop
    /// or a restart is in progress.
    #[napi(getter)]
    pub fn is_running(&self) -> bool {
        self.shared
            .try_read()
            .is_ok_and(|s| s.as_ref().is_some_and(LocalStore::is_running))
    }

    /// Runs `f` on the store, now (not while a stop or restart is in progress).
    fn now<R>(
        &self,
        env: &Env,
        f: impl FnOnce(&LocalStore) -> Result<R, Error>,
    ) -> napi::Result<R> {
        let Ok(guard) = self.shared.try_read() else {
            return Err(to_js(
                env,
                &Error::new(
                    ErrorKind::Closed,
                    "the local store is restarting or stopping: await that call first",
                ),
            ));
        };
        let store = guard.as_ref().ok_or_else(|| to_js(env, &stopped()))?;
        f(store).map_err(|e| to_js(env, &e))
    }

    /// Stops it and waits until its connections and tasks are gone; again does nothing.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn stop<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        let shared = Arc::clone(&self.shared);
        let call = on_stores(move || async move {
            let mut guard = shared.write().await;
            if let Some(mut store) = guard.take() {
                store.stop().await;
            }
            Ok(())
        });
        promise(env, call, None, |()| ())
    }

    /// Resets every client connection; resolves to how many it closed.
    #[napi(ts_return_type = "Promise<number>")]
    pub fn cut_connections<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        let shared = Arc::clone(&self.shared);
        let call = on_stores(move || async move {
            let guard = shared.read().await;
            let store = guard.as_ref().ok_or_else(stopped)?;
            store.cut_connections().await
        });
        promise(env, call, None, |n| n as f64)
    }

    /// Answers nothing for `durationMs` milliseconds (at least 1), then what queued.
    #[napi(ts_args_type = "durationMs: number")]
    pub fn pause(&self, env: &Env, duration: Option<Unknown>) -> napi::Result<()> {
        let name = "durationMs";
        let required = || invalid_argument(env, format!("pause(): {name} is required"));
        let duration = millis(env, duration, name)?.ok_or_else(required)?;
        if duration.as_secs_f64() < 0.001 {
            return Err(invalid_argument(
                env,
                format!("pause(): {name} must be at least 1 millisecond"),
            ));
        }
        self.now(env, |store| store.pause(duration))
    }

    /// What `kill -9` and a restart do; with `keepData`, persisted keys survive.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn restart<'env>(&self, env: &'env Env, keep_data: bool) -> napi::Result<Object<'env>> {
        let shared = Arc::clone(&self.shared);
        let port = self.port;
        let call = on_stores(move || async move {
            let mut guard = shared.write().await;
            let store = guard.as_mut().ok_or_else(stopped)?;
            store.restart(keep_data).await.map_err(|e| {
                Error::new(
                    ErrorKind::Closed,
                    format!("the local store could not restart on port {port} and is stopped: {e}"),
                )
            })
        });
        promise(env, call, None, |()| ())
    }

    /// Answers the next `n` requests (of `command` only, if given) with the state store
    /// error whose code is `error`.
    #[napi(ts_args_type = "n: number, error: string, command?: string | null")]
    pub fn fail_next(
        &self,
        env: &Env,
        n: Unknown,
        error: Unknown,
        command: Option<Unknown>,
    ) -> napi::Result<()> {
        let n = args::u64_arg(env, n, "n", false)?;
        let n = usize::try_from(n).map_err(|_| invalid_argument(env, "n is too large"))?;
        let error = args::string(env, error, "error")?;
        let command = match command {
            Some(c) if !args::is_absent(env, &c, "command")? => {
                Some(args::string(env, c, "command")?)
            }
            _ => None,
        };
        self.now(env, |store| store.fail_next(n, &error, command.as_deref()))
    }

    /// The keys that match the glob `pattern`, in byte order.
    #[napi]
    pub fn keys(&self, env: &Env, pattern: Unknown) -> napi::Result<Vec<Buffer>> {
        let pattern = args::bytes(env, pattern, "pattern")?;
        let keys = self.now(env, |store| store.keys(pattern.as_ref()))?;
        Ok(keys.into_iter().map(|k| Buffer::from(k.to_vec())).collect())
    }

    /// A key's value and version, or `null`.
    #[napi]
    pub fn get(&self, env: &Env, key: Unknown) -> napi::Result<Option<RawValue>> {
        let key = args::bytes(env, key, "key")?;
        let found = self.now(env, |store| store.get(key.as_ref()))?;
        Ok(found.map(|v| RawValue {
            value: Buffer::from(v.value.to_vec()),
            version: Some(Hlc::from(v.version)),
        }))
    }

    /// Deletes every key; how many it deleted.
    #[napi]
    pub fn clear(&self, env: &Env) -> napi::Result<u32> {
        let n = self.now(env, LocalStore::clear)?;
        Ok(u32::try_from(n).unwrap_or(u32::MAX))
    }

    /// How many requests a pause holds now.
    #[napi]
    pub fn held_requests(&self, env: &Env) -> napi::Result<u32> {
        let n = self.now(env, LocalStore::held_requests)?;
        Ok(u32::try_from(n).unwrap_or(u32::MAX))
    }

    /// Drops every notification the store sends for `durationMs` milliseconds (at least 1).
    #[napi(ts_args_type = "durationMs: number")]
    pub fn drop_notifications(&self, env: &Env, duration: Option<Unknown>) -> napi::Result<()> {
        let name = "durationMs";
        let required = || invalid_argument(env, format!("dropNotifications(): {name} is required"));
        let duration = millis(env, duration, name)?.ok_or_else(required)?;
        if duration.as_secs_f64() < 0.001 {
            return Err(invalid_argument(
                env,
                format!("dropNotifications(): {name} must be at least 1 millisecond"),
            ));
        }
        self.now(env, |store| store.drop_notifications(duration))
    }

    /// How many notifications `dropNotifications` has dropped so far.
    #[napi]
    pub fn dropped_notifications(&self, env: &Env) -> napi::Result<u32> {
        let n = self.now(env, LocalStore::dropped_notifications)?;
        Ok(u32::try_from(n).unwrap_or(u32::MAX))
    }

    /// Forgets every KEYNOTIFY registration, connections up; how many there were.
    #[napi]
    pub fn forget_registrations(&self, env: &Env) -> napi::Result<u32> {
        let n = self.now(env, LocalStore::forget_registrations)?;
        Ok(u32::try_from(n).unwrap_or(u32::MAX))
    }
}
