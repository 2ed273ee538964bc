//! `NativePager`: a SCAN (spec §3.1) over the core's [`Pager`]. Each `nextPage` is one core
//! call for one page; the continuation token stays in the core, which leaves it unchanged
//! when a page fails or is cancelled, so asking again retries that page. The JS layer
//! (`lib/scan.js`) adds `AbortSignal` and the async iterator of keys.

use mqstate::bridge::Pager;
use napi::bindgen_prelude::{Buffer, ClassInstance, Env, Object};
use napi_derive::napi;

use super::pending::{CancelHandle, promise};
use crate::telemetry::NativeCallTrace;

/// A pager over the keys matching a glob pattern.
#[napi]
pub struct NativePager {
    pager: Pager,
}

impl From<Pager> for NativePager {
    fn from(pager: Pager) -> Self {
        NativePager { pager }
    }
}

#[napi]
impl NativePager {
    /// The same scan, its pages traced by `trace` (see `callTrace`): each page's request
    /// carries its trace context; the scan's position is shared.
    #[napi]
    pub fn traced(&self, trace: &NativeCallTrace) -> NativePager {
        NativePager {
            pager: self.pager.traced(trace.trace()),
        }
    }

    /// The next page's keys (possibly none, with more to come), or `null` after the last
    /// page. A failed or cancelled page can be asked for again.
    #[napi(ts_return_type = "Promise<Buffer[] | null>")]
    pub fn next_page<'env>(
        &self,
        env: &'env Env,
        cancel: Option<ClassInstance<CancelHandle>>,
    ) -> napi::Result<Object<'env>> {
        promise(env, self.pager.next_page(), cancel, |page| {
            page.map(|keys| {
                keys.iter()
                    .map(|k| Buffer::from(k.to_vec()))
                    .collect::<Vec<_>>()
            })
        })
    }

    /// Whether the last page has been returned.
    #[napi(getter)]
    pub fn done(&self) -> bool {
        self.pager.is_done()
    }
}
