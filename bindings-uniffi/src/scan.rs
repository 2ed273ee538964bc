//! [`Pager`]: a SCAN (spec §3.1) for Kotlin and Swift — the core's bridge pager behind a
//! suspending `nextPage()`, the continuation token kept inside the core.

use std::sync::Arc;

use mqstate::ScanOptions as CoreScan;
use mqstate::bridge::Pager as CorePager;

use crate::MqstateError;
use crate::call::settle;
use crate::telemetry::CallTrace;
use crate::values::{Seconds, duration};

/// Options of a `scan`.
#[derive(Clone, Debug, Default, PartialEq, uniffi::Record)]
pub struct ScanOptions {
    /// The time each page may take instead of the client's request timeout.
    #[uniffi(default = None)]
    pub timeout: Option<Seconds>,
}

impl ScanOptions {
    pub(crate) fn to_core(&self) -> Result<CoreScan, MqstateError> {
        Ok(CoreScan {
            timeout: duration("timeout", self.timeout)?,
        })
    }
}

/// A scan of the keys matching a glob pattern, one page per `nextPage()`. Every key present
/// for the whole scan is returned at least once; a key created or deleted meanwhile may or
/// may not be. A page that fails (timeout, cancelled coroutine, lost connection) leaves the
/// scan where it was: calling `nextPage()` again asks for the same page.
#[derive(uniffi::Object)]
pub struct Pager {
    pager: CorePager,
}

impl Pager {
    pub(crate) fn new(pager: CorePager) -> Arc<Pager> {
        Arc::new(Pager { pager })
    }
}

/// A pager whose pages carry a trace context, and the trace of what they met.
#[derive(uniffi::Record)]
pub struct TracedPager {
    /// The same scan (its position shared), its pages' requests carrying the context.
    pub pager: Arc<Pager>,
    /// What its pages met on the way.
    pub trace: Arc<CallTrace>,
}

#[uniffi::export]
impl Pager {
    /// The same scan with its pages traced, for one page under an OpenTelemetry span (as
    /// `Client.traced`).
    #[uniffi::method(default(tracestate = None))]
    pub fn traced(
        &self,
        traceparent: Option<String>,
        tracestate: Option<String>,
    ) -> Result<TracedPager, MqstateError> {
        let (core, trace) = CallTrace::checked(traceparent, tracestate)?;
        Ok(TracedPager {
            pager: Pager::new(self.pager.traced(core)),
            trace,
        })
    }

    /// The next page's keys (possibly none while more pages follow), or none once the last
    /// page has been returned. Cancelling the coroutine cancels the page's request.
    pub async fn next_page(&self) -> Result<Option<Vec<Vec<u8>>>, MqstateError> {
        let keys = settle(self.pager.next_page()).await?;
        Ok(keys.map(|keys| keys.into_iter().map(|k| k.to_vec()).collect()))
    }

    /// Whether the last page has been returned (false while a page is being fetched).
    pub fn is_done(&self) -> bool {
        self.pager.is_done()
    }
}
