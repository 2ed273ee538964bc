//! [`Pager`]: a scan for bindings — the core's [`Scanner`] behind a handle that any thread
//! may share, each page one [`Call`].

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use super::{Call, ClientHandle};
use crate::error::Error;
use crate::{ScanOptions, Scanner};

/// A SCAN pager: [`next_page`](Self::next_page) asks for one page. The continuation token
/// stays inside; a failed or cancelled page leaves it where it was, so asking again
/// retries that page. Concurrent calls on one pager are served one after the other.
#[derive(Clone, Debug)]
pub struct Pager {
    scanner: Arc<tokio::sync::Mutex<Scanner>>,
    store: ClientHandle,
}

impl Pager {
    pub(super) fn new(
        store: &ClientHandle,
        pattern: Bytes,
        options: ScanOptions,
    ) -> Result<Pager, Error> {
        store.usable()?;
        let scanner = store.client().scan_with(pattern, options)?;
        Ok(Pager {
            scanner: Arc::new(tokio::sync::Mutex::new(scanner)),
            store: store.clone(),
        })
    }

    /// The same scan, its pages traced by `trace` (see [`ClientHandle::traced`]): a binding
    /// makes one per page its span covers, the scan's position shared.
    pub fn traced(&self, trace: Arc<crate::telemetry::CallTrace>) -> Pager {
        Pager {
            scanner: Arc::clone(&self.scanner),
            store: self.store.traced(trace),
        }
    }

    /// The next page's keys (possibly none, with more to come), or `None` after the last
    /// page.
    pub fn next_page(&self) -> Call<Option<Vec<Bytes>>> {
        let scanner = Arc::clone(&self.scanner);
        self.store
            .call(async move { scanner.lock().await.next_page().await })
    }

    /// [`next_page`](Self::next_page) with this page's own timeout (`None`: the scan's),
    /// enforced by the request itself, so a page that runs out of time is a plain timeout
    /// (a SCAN never "may have been applied"); wait for the call without a limit of its own.
    pub fn next_page_within(&self, timeout: Option<Duration>) -> Call<Option<Vec<Bytes>>> {
        let scanner = Arc::clone(&self.scanner);
        self.store
            .call(async move { scanner.lock().await.next_page_within(timeout).await })
    }

    /// Whether the last page has been returned (false while a page is being fetched).
    pub fn is_done(&self) -> bool {
        self.scanner.try_lock().is_ok_and(|s| s.is_done())
    }
}
