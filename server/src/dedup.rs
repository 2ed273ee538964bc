//! Requests that arrive twice are answered once: MQTT delivers QoS 1 at least once, and a
//! session resumed after a cut redelivers the requests whose PUBACK was lost. A write must
//! not be applied a second time (a second NX would answer "not applied" for a key the first
//! one set; a second DEL would answer 0). So the answer to each write is kept, by client id
//! and correlation data, for [`WINDOW_MS`], and a duplicate gets the same answer again
//! without touching the store. Reads (GET, SCAN) are not kept: running them again is
//! harmless, and their answers can be large.

use std::collections::{HashMap, VecDeque};

use bytes::Bytes;

use crate::service::Answer;

/// How long an answer is kept for a duplicate: longer than any request's time to live.
pub(crate) const WINDOW_MS: u64 = 120_000;

/// At most this many answers are kept (the oldest go first); each is a few hundred bytes.
pub(crate) const MAX_KEPT: usize = 200_000;

type Id = (String, Bytes);

/// What is kept of an answer: its payload and version (the rest comes from the request).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Kept {
    /// The response payload.
    pub(crate) payload: Bytes,
    /// The response's `__ts`, as sent.
    pub(crate) version: Option<String>,
}

/// The answers of recent writes.
#[derive(Default)]
pub(crate) struct Answered {
    by_id: HashMap<Id, Kept>,
    order: VecDeque<(u64, Id)>,
}

impl Answered {
    /// How many answers are kept now.
    pub(crate) fn len(&self) -> usize {
        self.by_id.len()
    }

    /// The answer already sent for this request, if it is a duplicate.
    pub(crate) fn get(
        &mut self,
        now_ms: u64,
        client_id: &str,
        correlation: &Bytes,
    ) -> Option<&Kept> {
        self.evict(now_ms);
        self.by_id.get(&(client_id.to_owned(), correlation.clone()))
    }

    /// Keeps the answer to a write.
    pub(crate) fn keep(&mut self, now_ms: u64, client_id: &str, answer: &Answer) {
        // Copied: as received, the correlation data is a slice of the request's packet,
        // which it would otherwise keep alive (a whole 64 KiB SET per kept answer).
        let correlation = Bytes::copy_from_slice(&answer.correlation);
        let id = (client_id.to_owned(), correlation);
        let answer = Kept {
            payload: answer.payload.clone(),
            version: answer.version.clone(),
        };
        if self.by_id.insert(id.clone(), answer).is_none() {
            self.order.push_back((now_ms, id));
        }
        while self.order.len() > MAX_KEPT {
            if let Some((_, id)) = self.order.pop_front() {
                self.by_id.remove(&id);
            }
        }
    }

    fn evict(&mut self, now_ms: u64) {
        while let Some((at, _)) = self.order.front() {
            if now_ms.saturating_sub(*at) < WINDOW_MS {
                break;
            }
            if let Some((_, id)) = self.order.pop_front() {
                self.by_id.remove(&id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(correlation: &Bytes, payload: &'static [u8]) -> Answer {
        Answer {
            topic: "t".into(),
            correlation: correlation.clone(),
            payload: Bytes::from_static(payload),
            version: Some("1:0:n".into()),
        }
    }

    #[test]
    fn a_duplicate_gets_the_kept_answer_until_the_window_ends() {
        let mut a = Answered::default();
        let c = Bytes::from_static(b"0123456789abcdef");
        assert!(a.get(0, "me", &c).is_none());
        a.keep(0, "me", &answer(&c, b"+OK\r\n"));
        assert_eq!(a.get(1_000, "me", &c).unwrap().payload, &b"+OK\r\n"[..]);
        assert!(a.get(1_000, "other", &c).is_none(), "per client");
        assert!(
            a.get(WINDOW_MS, "me", &c).is_none(),
            "forgotten after the window"
        );
    }
}
