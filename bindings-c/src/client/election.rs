//! `mqstate_election`: a candidate in a leader election — campaign (waiting), try, resign,
//! leader, is-leader, leadership subscriptions — over the core's [`ElectionHandle`].
//!
//! Durations follow [`timeout`](super::timeout): a `term_ms` of 0 is the election's default
//! term (`mqstate_election_options.term_ms`, else the core's `DEFAULT_LEASE`), a campaign's
//! `timeout_ms` of 0 is "do not wait" (one try), `MQSTATE_WAIT_FOREVER` a wait without limit. The other calls are
//! single requests, each bounded by the client's `request_timeout`, as in every language.

use std::ffi::c_char;

use mqstate::bridge::ElectionHandle;

use mqstate::{ElectionOptions, Error, ErrorKind};

use super::call::{flag_call, local_subscription, opt_str, subscription_call, text_call};
use super::cancel::{mqstate_cancel, run};
use super::guard;
use super::handle::{enter_client, mqstate_client};
use super::subscription::mqstate_subscription;
use super::text::{put_string, reset_string};
use super::timeout;
use crate::ffi::{bytes_arg, maybe, out_arg, str_arg};
use crate::status::{boundary, mqstate_status};

/// A candidate in a leader election (opaque; thread-safe). Free it with
/// `mqstate_election_free`.
pub struct mqstate_election {
    guarded: guard::Guarded<guard::Named<ElectionHandle>>,
}

crate::handle!(mqstate_election, guard::Named<ElectionHandle>);

/// Options of `mqstate_election_new` (zero-initialise; NULL and 0 mean the defaults).
#[repr(C)]
pub struct mqstate_election_options {
    /// A session id: the candidate id becomes `candidate:session`; NULL: none.
    pub session_id: *const c_char,
    /// The term (ms) of campaigns whose `term_ms` is 0; 0: the core's default term (10 s,
    /// `mqstate::lock::DEFAULT_LEASE`, the same in every language).
    pub term_ms: u64,
    /// How often (ms) the leader renews its term; 0: a third of the term.
    pub renew_every_ms: u64,
}

/// Candidate `candidate` (NUL-terminated) in the election `name` (`name_len` bytes), made
/// from `client` (`options` may be NULL: the defaults); nothing is sent yet. Free it with
/// `mqstate_election_free`. On failure `*out` is NULL.
///
/// # Safety
/// `client` must be a live client; `name` valid; `candidate` NUL-terminated; `options` NULL
/// or valid; `out` writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_election_new(
    client: *const mqstate_client,
    name: *const u8,
    name_len: usize,
    candidate: *const c_char,
    options: *const mqstate_election_options,
    out: *mut *mut mqstate_election,
) -> mqstate_status {
    boundary(|| {
        let out = out_arg(out, std::ptr::null_mut(), "out")?;
        let store = enter_client(client)?;
        let (name, candidate) = (
            bytes_arg(name, name_len, "name")?,
            str_arg(candidate, "candidate")?,
        );
        let o = maybe(options);
        let options = ElectionOptions {
            term: timeout::option(o.map_or(0, |o| o.term_ms)),
            session_id: opt_str(o.map_or(std::ptr::null(), |o| o.session_id), "session_id")?,
            renew_every: timeout::option(o.map_or(0, |o| o.renew_every_ms)),
        };
        let election = store.election(name, candidate, options)?;
        let id = election.candidate_id().to_owned();
        *out = guard::new(guard::Named::new(election, &id)?);
        Ok(())
    })
}

/// Becomes leader for `term_ms` (0: the default term; renewed automatically until resign),
/// waiting up to `timeout_ms` (0: do not wait, one try only; `MQSTATE_WAIT_FOREVER`: without limit) and cancellable
/// through `cancel` (may be NULL); `*token` (may be NULL) receives the leader's fencing
/// token, NULL on failure.
///
/// # Safety
/// `election` must be live; `cancel` NULL or live; `token` NULL or writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_election_campaign(
    election: *const mqstate_election,
    term_ms: u64,
    timeout_ms: u32,
    cancel: *const mqstate_cancel,
    token: *mut *mut c_char,
) -> mqstate_status {
    boundary(|| {
        reset_string(token);
        let e = guard::enter(election, "election")?;
        let campaign = || e.campaign(timeout::option(term_ms), timeout::wait(timeout_ms));
        let got = run(cancel, campaign)?;
        put_string(token, Some(&got.to_text()))
    })
}

/// Becomes leader for `term_ms` (0: the default term) if nobody is; `*elected` says
/// whether (false on failure).
///
/// # Safety
/// `election` must be live; `elected` NULL or writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_election_try_campaign(
    election: *const mqstate_election,
    term_ms: u64,
    elected: *mut bool,
) -> mqstate_status {
    flag_call(election, "election", elected, |e| {
        e.try_campaign(timeout::option(term_ms))
    })
}

/// Steps down; `*resigned` (may be NULL) is true when this candidate led, false on failure.
///
/// # Safety
/// `election` must be live; `resigned` NULL or writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_election_resign(
    election: *const mqstate_election,
    resigned: *mut bool,
) -> mqstate_status {
    flag_call(election, "election", resigned, |e| e.resign())
}

/// The current leader in `*leader` (free with `mqstate_string_free`), NULL when none or on
/// failure.
///
/// # Safety
/// `election` must be live; `leader` writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_election_leader(
    election: *const mqstate_election,
    leader: *mut *mut c_char,
) -> mqstate_status {
    text_call(election, "election", leader, |e| e.leader())
}

/// Whether this candidate leads now (false at once when a renewal fails).
///
/// # Safety
/// `election` must be NULL or live.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_election_is_leader(election: *const mqstate_election) -> bool {
    guard::enter(election, "election").is_ok_and(|e| e.is_leader())
}

/// This candidate's id (the candidate, or `candidate:session_id`), valid while the election
/// lives; NULL for a NULL election.
///
/// # Safety
/// `election` must be NULL or live.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_election_candidate_id(
    election: *const mqstate_election,
) -> *const c_char {
    guard::id_of(election)
}

/// The leader's fencing token while this candidate leads, in `*token` (free with
/// `mqstate_string_free`); `MQSTATE_STATUS_NOT_HELD` (and `*token` NULL) when it does not.
///
/// # Safety
/// `election` must be live; `token` writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_election_fencing_token(
    election: *const mqstate_election,
    token: *mut *mut c_char,
) -> mqstate_status {
    boundary(|| {
        let token = out_arg(token, std::ptr::null_mut(), "token")?;
        let election = guard::enter(election, "election")?;
        let held = election
            .fencing_token()
            .ok_or_else(|| Error::new(ErrorKind::NotHeld, "this candidate does not lead"))?;
        put_string(token, Some(&held.to_text()))
    })
}

/// Leadership changes (`HOLDER` events): the current leader first, then each change.
/// `*out` is NULL on failure.
///
/// # Safety
/// `election` must be live; `out` writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_election_watch_leader(
    election: *const mqstate_election,
    out: *mut *mut mqstate_subscription,
) -> mqstate_status {
    subscription_call(election, "election", out, |e| e.watch_leader())
}

/// This candidate's own leadership (`HELD`, `NOT_HELD`, `LOST` events): the current status
/// first, then each change. `*out` is NULL on failure.
///
/// # Safety
/// `election` must be live; `out` writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_election_watch_status(
    election: *const mqstate_election,
    out: *mut *mut mqstate_subscription,
) -> mqstate_status {
    local_subscription(election, "election", out, |e| e.watch_status())
}

/// Frees a candidate (NULL is ignored): stops renewal (resign first to hand over at once).
///
/// # Safety
/// `election` must be NULL or live, freed once.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_election_free(election: *mut mqstate_election) {
    guard::close(election, |_| {})
}
