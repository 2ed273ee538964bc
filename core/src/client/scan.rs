//! SCAN (spec §3.1) from the client's side: [`Scanner`], a caller-driven pager over the
//! keys that match a glob pattern, and [`KeyStream`], the same as a [`Stream`] of keys.
//!
//! One request per page; the continuation token stays inside the scanner and moves only
//! when a page arrives, so a failed (timed out, cancelled) page is simply asked for again
//! from the same token. Page requests are serial: each needs the previous token.
//!
//! ```no_run
//! # async fn demo(client: mqstate::Client) -> mqstate::Result<()> {
//! let mut pages = client.scan("sensor/*")?;
//! while let Some(keys) = pages.next_page().await? {
//!     for key in keys {
//!         println!("{}", key.escape_ascii());
//!     }
//! }
//! # Ok(()) }
//! ```

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_core::Stream;

use super::Client;
use crate::codec::{Request, Response};
use crate::error::{Error, ErrorKind};

/// Options of a scan.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScanOptions {
    /// The time each page may take instead of the client's request timeout.
    pub timeout: Option<Duration>,
}

/// A pager over the keys matching a glob pattern (`*`, `?`, `[…]`, `[^…]`, `\` escapes;
/// see [`glob`](crate::glob)). Every key present for the whole scan is returned at least
/// once; a key created or deleted meanwhile may or may not be. Keys come in the store's
/// order (the emulator's: byte order), with no values and no versions.
#[derive(Clone, Debug)]
pub struct Scanner {
    client: Client,
    pattern: Bytes,
    token: Option<Bytes>,
    done: bool,
    timeout: Duration,
}

impl Scanner {
    pub(super) fn new(client: Client, pattern: Bytes, options: ScanOptions) -> Result<Self, Error> {
        let first: Request<&[u8]> = Request::Scan {
            pattern: &pattern,
            token: None,
        };
        first.validate()?;
        let timeout = options.timeout.unwrap_or(client.timeout);
        if timeout.is_zero() {
            return Err(Error::invalid_argument("the page timeout must be positive"));
        }
        Ok(Scanner {
            client,
            pattern,
            token: None,
            done: false,
            timeout,
        })
    }

    /// The pattern.
    pub fn pattern(&self) -> &Bytes {
        &self.pattern
    }

    /// Whether the last page has arrived.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Asks for the next page: its keys (possibly none: the store may answer an empty page
    /// with more to come), or `None` once the last page has been returned. An error leaves
    /// the scan where it was: calling again asks for the same page. Dropping the future
    /// (cancelling) does the same.
    pub async fn next_page(&mut self) -> Result<Option<Vec<Bytes>>, Error> {
        self.next_page_within(None).await
    }

    /// [`next_page`](Self::next_page) with this page's own timeout (`None`: the scan's).
    /// A page that runs out of time fails with [`ErrorKind::Timeout`], never "may have been
    /// applied": a SCAN only reads.
    pub async fn next_page_within(
        &mut self,
        timeout: Option<Duration>,
    ) -> Result<Option<Vec<Bytes>>, Error> {
        if self.done {
            return Ok(None);
        }
        let timeout = timeout.unwrap_or(self.timeout);
        if timeout.is_zero() {
            return Err(Error::invalid_argument("the page timeout must be positive"));
        }
        let request = Request::Scan {
            pattern: &self.pattern[..],
            token: self.token.as_deref(),
        };
        let reply = self.client.request(request, None, false, timeout).await?;
        let Response::Page(page) = reply.response else {
            // `request` accepts only the forms a SCAN can receive.
            return Err(Error::new(
                ErrorKind::Malformed,
                "a SCAN was answered with something other than a page",
            ));
        };
        self.done = page.token.is_none();
        self.token = page.token;
        Ok(Some(page.keys))
    }

    /// Every remaining key, one at a time.
    pub fn into_keys(self) -> KeyStream {
        KeyStream {
            scanner: Some(self),
            keys: VecDeque::new(),
            pending: None,
        }
    }

    /// Every remaining key, collected (for small key sets; prefer
    /// [`next_page`](Self::next_page) or [`into_keys`](Self::into_keys) for large ones).
    pub async fn collect_keys(mut self) -> Result<Vec<Bytes>, Error> {
        let mut all = Vec::new();
        while let Some(keys) = self.next_page().await? {
            all.extend(keys);
        }
        Ok(all)
    }
}

type PageFuture =
    Pin<Box<dyn Future<Output = (Scanner, Result<Option<Vec<Bytes>>, Error>)> + Send>>;

/// The keys of a scan as a [`Stream`]: one page is asked for when the keys of the last
/// one are used up. A failed page is yielded as an error; polling again retries it.
pub struct KeyStream {
    scanner: Option<Scanner>,
    keys: VecDeque<Bytes>,
    pending: Option<PageFuture>,
}

impl std::fmt::Debug for KeyStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyStream")
            .field("buffered", &self.keys.len())
            .field("fetching", &self.pending.is_some())
            .finish()
    }
}

impl Stream for KeyStream {
    type Item = Result<Bytes, Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if let Some(key) = this.keys.pop_front() {
                return Poll::Ready(Some(Ok(key)));
            }
            if this.pending.is_none() {
                let Some(mut scanner) = this.scanner.take() else {
                    return Poll::Ready(None);
                };
                if scanner.is_done() {
                    return Poll::Ready(None);
                }
                this.pending = Some(Box::pin(async move {
                    let page = scanner.next_page().await;
                    (scanner, page)
                }));
            }
            let future = this.pending.as_mut().expect("set above");
            let (scanner, page) = std::task::ready!(future.as_mut().poll(cx));
            this.pending = None;
            this.scanner = Some(scanner);
            match page {
                Ok(Some(keys)) => this.keys.extend(keys),
                Ok(None) => return Poll::Ready(None),
                Err(e) => return Poll::Ready(Some(Err(e))),
            }
        }
    }
}

impl Client {
    /// Lists the keys matching the glob `pattern`, a page at a time (see [`Scanner`]).
    /// Sends nothing until the first page is asked for; an empty pattern is an
    /// [`ErrorKind::InvalidArgument`].
    pub fn scan(&self, pattern: impl AsRef<[u8]>) -> Result<Scanner, Error> {
        self.scan_with(pattern, ScanOptions::default())
    }

    /// [`scan`](Self::scan) with options (a per-page timeout).
    pub fn scan_with(
        &self,
        pattern: impl AsRef<[u8]>,
        options: ScanOptions,
    ) -> Result<Scanner, Error> {
        Scanner::new(
            self.clone(),
            Bytes::copy_from_slice(pattern.as_ref()),
            options,
        )
    }
}
