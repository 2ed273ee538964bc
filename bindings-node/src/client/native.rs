//! `NativeClient`: one connection to the state store. Each method converts its arguments,
//! makes one call on the core's [`ClientHandle`] and returns a Promise (see [`super::pending`]).

use mqstate::bridge::ClientHandle;
use mqstate::codec::SetCondition;
use mqstate::{
    DelOptions, ElectionOptions, GetOptions, LockOptions, ObserveOptions, ScanOptions, SetOptions,
    VdelOutcome,
};
use napi::bindgen_prelude::{Env, JsObjectValue, Object, Unknown};
use napi_derive::napi;

use super::convert::{self, RawSetResult, RawValue, bytes, millis, token};
use super::locks::{NativeElection, NativeLock};
use super::pager::NativePager;
use napi::bindgen_prelude::ClassInstance;

use super::pending::{CancelHandle, promise};
use super::subscription::NativeSubscription;
use crate::error::to_js;
use crate::telemetry::NativeCallTrace;

/// A connection to the state store (see `Client` in the JS layer).
#[napi]
pub struct NativeClient {
    store: ClientHandle,
    /// The broker's host and port, as the settings named them (for `server.address` and
    /// `server.port`); `None` for a client made some other way.
    server: Option<(String, u16)>,
}

impl From<ClientHandle> for NativeClient {
    fn from(store: ClientHandle) -> Self {
        NativeClient {
            store,
            server: None,
        }
    }
}

impl NativeClient {
    /// A client of `store`, connected to `host`:`port`.
    pub(crate) fn with_server(store: ClientHandle, host: String, port: u16) -> NativeClient {
        NativeClient {
            store,
            server: Some((host, port)),
        }
    }
}

/// Where the client connects, as its settings name it.
#[napi(object, object_from_js = false)]
pub struct RawServer {
    /// The broker's host.
    pub address: String,
    /// The broker's port.
    pub port: u32,
}

/// What the connection has been through.
#[napi(object, object_from_js = false)]
pub struct RawLinkInfo {
    /// Connected now.
    pub connected: bool,
    /// Connections made so far.
    pub connections: f64,
    /// MQTT sessions begun so far.
    pub sessions: f64,
    /// The largest packet the broker accepts.
    pub broker_max_packet_size: u32,
}

fn condition(env: &Env, value: Option<Unknown>) -> napi::Result<SetCondition> {
    let text = convert::text(env, value, "condition")?;
    SetCondition::parse(text.as_deref()).map_err(|e| to_js(env, &e))
}

#[napi]
impl NativeClient {
    /// The MQTT client id.
    #[napi(getter)]
    pub fn client_id(&self) -> String {
        self.store.client_id().to_owned()
    }

    /// The broker's host and port as the settings named them, or `null`.
    #[napi(getter)]
    pub fn server(&self) -> Option<RawServer> {
        self.server.as_ref().map(|(address, port)| RawServer {
            address: address.clone(),
            port: u32::from(*port),
        })
    }

    /// The same store, its calls traced by `trace` (see `callTrace`): each request carries
    /// the trace's context, and the events the calls meet are noted in it. For one call
    /// that an OpenTelemetry span covers.
    #[napi]
    pub fn traced(&self, trace: &NativeCallTrace) -> NativeClient {
        NativeClient {
            store: self.store.traced(trace.trace()),
            server: self.server.clone(),
        }
    }

    /// The values of the core's metrics of sources `link`, `client` and `cache`
    /// now, under the metrics' names; the cache's are absent when the client has no cache.
    #[napi(ts_return_type = "Record<string, number>")]
    pub fn metric_values<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        let mut object = Object::new(env)?;
        for (name, value) in self.store.client().metric_values() {
            object.set_named_property(name, value as f64)?;
        }
        Ok(object)
    }

    /// A snapshot of the connection's history.
    #[napi]
    pub fn link_info(&self) -> RawLinkInfo {
        let l = self.store.link_info();
        RawLinkInfo {
            connected: l.connected,
            connections: l.connections as f64,
            sessions: l.sessions as f64,
            broker_max_packet_size: l.broker_max_packet_size,
        }
    }

    /// The client-side cache's counters as a plain object, each under its name in the core's
    /// `CACHE_COUNTERS` (in that order) in camelCase (`lease_renewals` is `leaseRenewals`, as
    /// every Node name of the vocabulary), or `null` when the client has no cache.
    #[napi(ts_return_type = "Record<string, number> | null")]
    pub fn cache_stats<'env>(&self, env: &'env Env) -> napi::Result<Option<Object<'env>>> {
        let Some(stats) = self.store.cache_stats() else {
            return Ok(None);
        };
        let mut object = Object::new(env)?;
        for (name, value) in stats.pairs() {
            object.set_named_property(&mqstate::vocabulary::camel_case(name), value as f64)?;
        }
        Ok(Some(object))
    }

    /// A hit of the client's cache, answered with no Promise: `[]` for a key cached as
    /// missing, `[{ value, version }]` for a value, `null` when the read must go to `get` (a
    /// miss, no cache, `bypassCache`). The JS layer asks this first, then `get` (which then
    /// reads the store without a second look: a second look would count a second miss). The
    /// options are `get`'s, checked the same way, so a hit refuses what a miss would.
    #[napi(ts_return_type = "RawValue[] | null")]
    pub fn get_cached(
        &self,
        env: &Env,
        key: Unknown,
        timeout: Option<Unknown>,
        bypass_cache: Option<Unknown>,
    ) -> napi::Result<Option<Vec<RawValue>>> {
        let options = GetOptions {
            timeout: millis(env, timeout, "timeoutMs")?,
            bypass_cache: convert::flag(env, bypass_cache, "bypassCache")?,
        };
        let key = bytes(env, key, "key")?;
        Ok(self
            .store
            .get_cached(&key, &options)
            .map(|hit| hit.map(RawValue::from).into_iter().collect()))
    }

    /// SET.
    #[napi(ts_return_type = "Promise<RawSetResult>")]
    #[allow(clippy::too_many_arguments)]
    pub fn set<'env>(
        &self,
        env: &'env Env,
        key: Unknown,
        value: Unknown,
        condition_: Option<Unknown>,
        expiry: Option<Unknown>,
        fencing_token: Option<Unknown>,
        persist: Option<Unknown>,
        timeout: Option<Unknown>,
        cancel: Option<ClassInstance<CancelHandle>>,
    ) -> napi::Result<Object<'env>> {
        let options = SetOptions {
            condition: condition(env, condition_)?,
            expiry: millis(env, expiry, "expiryMs")?,
            fencing_token: token(env, fencing_token)?,
            persist: convert::flag(env, persist, "persist")?,
            timeout: millis(env, timeout, "timeoutMs")?,
        };
        let (key, value) = (bytes(env, key, "key")?, bytes(env, value, "value")?);
        let call = self.store.set(key, value, options);
        promise(env, call, cancel, RawSetResult::from)
    }

    /// GET from the store: `{ value, version }` or `null`, for a caller that asked
    /// `getCached` first and missed, or that bypasses the cache (`bypassCache`); what the
    /// store answers still updates the cache.
    #[napi(ts_return_type = "Promise<RawValue | null>")]
    pub fn get<'env>(
        &self,
        env: &'env Env,
        key: Unknown,
        timeout: Option<Unknown>,
        bypass_cache: Option<Unknown>,
        cancel: Option<ClassInstance<CancelHandle>>,
    ) -> napi::Result<Object<'env>> {
        let options = GetOptions {
            timeout: millis(env, timeout, "timeoutMs")?,
            bypass_cache: convert::flag(env, bypass_cache, "bypassCache")?,
        };
        // The JS layer asked `get_cached` first (or bypasses the cache).
        let call = self.store.get_after_miss(bytes(env, key, "key")?, options);
        promise(env, call, cancel, |v| v.map(RawValue::from))
    }

    /// DEL: the number of keys deleted.
    #[napi(ts_return_type = "Promise<number>")]
    pub fn del<'env>(
        &self,
        env: &'env Env,
        key: Unknown,
        fencing_token: Option<Unknown>,
        timeout: Option<Unknown>,
        cancel: Option<ClassInstance<CancelHandle>>,
    ) -> napi::Result<Object<'env>> {
        let options = DelOptions {
            fencing_token: token(env, fencing_token)?,
            timeout: millis(env, timeout, "timeoutMs")?,
        };
        let call = self.store.del(bytes(env, key, "key")?, options);
        promise(env, call, cancel, |n| n as f64)
    }

    /// VDEL: `'deleted' | 'not_found' | 'value_mismatch'`.
    #[napi(ts_return_type = "Promise<'deleted' | 'not_found' | 'value_mismatch'>")]
    pub fn vdel<'env>(
        &self,
        env: &'env Env,
        key: Unknown,
        value: Unknown,
        fencing_token: Option<Unknown>,
        timeout: Option<Unknown>,
        cancel: Option<ClassInstance<CancelHandle>>,
    ) -> napi::Result<Object<'env>> {
        let options = DelOptions {
            fencing_token: token(env, fencing_token)?,
            timeout: millis(env, timeout, "timeoutMs")?,
        };
        let (key, value) = (bytes(env, key, "key")?, bytes(env, value, "value")?);
        let call = self.store.vdel(key, value, options);
        promise(env, call, cancel, VdelOutcome::name)
    }

    /// Observes a key: resolves to a subscription once registered.
    #[napi(ts_return_type = "Promise<NativeSubscription>")]
    pub fn observe<'env>(
        &self,
        env: &'env Env,
        key: Unknown,
        timeout: Option<Unknown>,
        cancel: Option<ClassInstance<CancelHandle>>,
    ) -> napi::Result<Object<'env>> {
        let options = ObserveOptions {
            timeout: millis(env, timeout, "timeoutMs")?,
        };
        let call = self.store.observe(bytes(env, key, "key")?, options);
        promise(env, call, cancel, NativeSubscription::from)
    }

    /// SCAN: a pager over the keys matching the glob `pattern` (throws `invalid_argument`
    /// for an empty one); nothing is sent before the first page is asked for. `timeout`
    /// (`timeoutMs`) bounds each page.
    #[napi]
    pub fn scan(
        &self,
        env: &Env,
        pattern: Unknown,
        timeout: Option<Unknown>,
    ) -> napi::Result<NativePager> {
        let options = ScanOptions {
            timeout: millis(env, timeout, "timeoutMs")?,
        };
        let pattern = bytes(env, pattern, "pattern")?;
        let pager = self
            .store
            .scan(pattern, options)
            .map_err(|e| to_js(env, &e))?;
        Ok(NativePager::from(pager))
    }

    /// A leased lock on `key`; `lease` (`leaseMs`) is its acquires' lease (absent: the
    /// core's default).
    #[napi]
    pub fn lock(
        &self,
        env: &Env,
        key: Unknown,
        lease: Option<Unknown>,
        holder: Option<Unknown>,
        session_id: Option<Unknown>,
        auto_renew: Option<Unknown>,
    ) -> napi::Result<NativeLock> {
        let options = LockOptions {
            holder: convert::text(env, holder, "holder")?,
            session_id: convert::text(env, session_id, "sessionId")?,
            auto_renew: millis(env, auto_renew, "autoRenewMs")?,
            lease: millis(env, lease, "leaseMs")?,
        };
        let key = bytes(env, key, "key")?;
        let lock = self.store.lock(key, options).map_err(|e| to_js(env, &e))?;
        Ok(NativeLock::from(lock))
    }

    /// Candidate `candidate` in the election `name`; `term` (`termMs`) is its campaigns'
    /// term (absent: the core's default).
    #[napi]
    pub fn election(
        &self,
        env: &Env,
        name: Unknown,
        candidate: Unknown,
        term: Option<Unknown>,
        session_id: Option<Unknown>,
        renew_every: Option<Unknown>,
    ) -> napi::Result<NativeElection> {
        let options = ElectionOptions {
            term: millis(env, term, "termMs")?,
            session_id: convert::text(env, session_id, "sessionId")?,
            renew_every: millis(env, renew_every, "renewEveryMs")?,
        };
        let candidate = crate::args::string(env, candidate, "candidate")?;
        let name = bytes(env, name, "name")?;
        let election = self
            .store
            .election(name, candidate, options)
            .map_err(|e| to_js(env, &e))?;
        Ok(NativeElection::from(election))
    }

    /// Closes the connection (every clone); idempotent.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn close<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        promise(env, self.store.close(), None, |()| ())
    }
}
