//! The verbs (spec §3, §4, §6, §7): SET with NX / NEX / PX, GET, DEL, VDEL and KEYNOTIFY,
//! with the fencing-token and quota rules, on top of the store's maps.

use std::cmp::Ordering;

use bytes::Bytes;
use mqstate::Hlc;
use mqstate::codec::{KeyEvent, Response, SetCondition, StoreError, StoreErrorKind};

use super::table::{Entry, View};
use super::{Answer, Effects, JournalOp, StateMachine};

/// A decoded SET with its stamps, ready to apply.
pub(super) struct Set<'a> {
    pub(super) key: Bytes,
    pub(super) value: Bytes,
    pub(super) condition: SetCondition,
    /// Absolute deadline of the PX, if any.
    pub(super) expires_at_ms: Option<u64>,
    /// The request's `__ft`.
    pub(super) token: Option<&'a Hlc>,
    /// `aio-persistence: true`.
    pub(super) persist: bool,
}

/// Spec §6 for a write (SET, DEL, VDEL) to a key holding `entry`: a fenced key needs a
/// token that is not older than its own. A missing key has no token.
fn check_fence(entry: Option<&View<'_>>, token: Option<&Hlc>) -> Result<(), StoreError> {
    let Some(stored) = entry.and_then(View::fencing_token) else {
        return Ok(());
    };
    let token = token.ok_or(StoreErrorKind::FencingTokenRequired)?;
    if token.cmp_time(stored) == Ordering::Less {
        return Err(StoreErrorKind::FencingTokenLowerVersion.into());
    }
    Ok(())
}

/// The token a key keeps after an accepted SET: the newer of its own and the request's.
fn kept_token(stored: Option<&Hlc>, token: Option<&Hlc>) -> Option<Hlc> {
    match (stored, token) {
        (Some(stored), Some(token)) if token.cmp_time(stored) == Ordering::Greater => {
            Some(token.clone())
        }
        (Some(stored), _) => Some(stored.clone()),
        (None, token) => token.cloned(),
    }
}

impl StateMachine {
    /// SET: fencing, then the NX/NEX condition, then the quota for a new key.
    pub(super) fn set(
        &mut self,
        now_ms: u64,
        set: Set<'_>,
        effects: &mut Effects<'_>,
    ) -> Result<Answer, StoreError> {
        let existing = self.entries.get(&set.key);
        check_fence(existing.as_ref(), set.token)?;
        if let Some(entry) = &existing {
            let blocked = match set.condition {
                SetCondition::Always => false,
                SetCondition::NotExists => true,
                SetCondition::NotExistsOrEqual => entry.value() != &set.value[..],
            };
            if blocked {
                return Ok((Response::NotApplied, Some(entry.version())));
            }
        } else if self
            .config
            .max_keys
            .is_some_and(|max| self.entries.len() >= max)
        {
            return Err(StoreErrorKind::QuotaExceeded.into());
        }
        let previous = existing.as_ref().map(View::version);
        let fencing_token = kept_token(existing.as_ref().and_then(View::fencing_token), set.token);
        let was_persisted = existing.as_ref().is_some_and(View::persisted);
        let version = self.clock.issue(now_ms, previous.as_ref())?;
        let journal = if set.persist {
            vec![JournalOp::Put {
                key: set.key.clone(),
                value: set.value.clone(),
                version: version.clone(),
                expires_at_ms: set.expires_at_ms,
                fencing_token: fencing_token.clone(),
            }]
        } else if was_persisted {
            super::removal(&set.key, &version)
        } else {
            Vec::new()
        };
        // On disk first: nothing below runs if the journal refuses the write.
        effects.write(journal)?;
        self.notify(
            &set.key,
            KeyEvent::Set(set.value.clone()),
            &version,
            effects,
        );
        let entry = Entry {
            value: set.value,
            version: version.clone(),
            expires_at_ms: set.expires_at_ms,
            fencing_token,
            persisted: set.persist,
        };
        self.insert(set.key, entry);
        Ok((Response::Ok, Some(version)))
    }

    /// GET: the value and its version, or `$-1` without a version.
    pub(super) fn get(&self, key: &[u8]) -> Answer {
        match self.entries.get(key) {
            Some(entry) => (
                Response::Value(Bytes::copy_from_slice(entry.value())),
                Some(entry.version()),
            ),
            None => (Response::NotFound, None),
        }
    }

    /// DEL (`expected` is `None`) or VDEL (`expected` is the value the key must hold).
    pub(super) fn del(
        &mut self,
        now_ms: u64,
        key: &[u8],
        expected: Option<&Bytes>,
        token: Option<&Hlc>,
        effects: &mut Effects<'_>,
    ) -> Result<Answer, StoreError> {
        let Some(entry) = self.entries.get(key) else {
            return Ok((Response::Count(0), Some(self.clock.current().clone())));
        };
        check_fence(Some(&entry), token)?;
        if expected.is_some_and(|value| &value[..] != entry.value()) {
            return Ok((Response::NotApplied, Some(entry.version())));
        }
        let persisted = entry.persisted();
        let previous = entry.version();
        let version = self.deletion_version(now_ms, &previous);
        if persisted {
            // On disk first: the key stays if the journal refuses the removal (the clock
            // may have ticked: harmless).
            effects.write(super::removal(key, &version))?;
        }
        let Some((key, _)) = self.remove(key) else {
            return Ok((Response::Count(0), Some(self.clock.current().clone())));
        };
        self.deleted(key, &version, effects);
        Ok((Response::Count(1), Some(version)))
    }

    /// KEYNOTIFY (`+OK`) and KEYNOTIFY STOP (`+OK`, or `:0` if nothing was registered).
    /// A client observes at most `max_keys` keys, and only keys whose notification topic
    /// fits in an MQTT topic ([`KEY_TOO_LONG_TO_OBSERVE`](super::KEY_TOO_LONG_TO_OBSERVE)
    /// otherwise: with a short client id, keys up to about 32,700 bytes).
    pub(super) fn key_notify(
        &mut self,
        client_id: &str,
        key: &Bytes,
        stop: bool,
    ) -> Result<Answer, StoreError> {
        if stop {
            let found = self.watchers.remove(client_id, key);
            return Ok((
                if found {
                    Response::Ok
                } else {
                    Response::Count(0)
                },
                None,
            ));
        }
        if super::notification_topic_len(client_id, key) > super::MAX_TOPIC_LEN {
            return Err(StoreError::other(super::KEY_TOO_LONG_TO_OBSERVE));
        }
        self.watchers
            .add(client_id, key, self.config.max_keys)
            .map_err(|_| StoreErrorKind::QuotaExceeded)?;
        Ok((Response::Ok, None))
    }
}
