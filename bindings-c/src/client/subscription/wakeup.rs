//! The file-descriptor mode's wake-up channel: one byte while events are queued.
//!
//! On Unix it is a socket pair: the reader's descriptor is what `mqstate_subscription_fd`
//! gives the caller's event loop (readable while events are queued; end of stream once the
//! subscription ends, when the sink thread drops the writer). Windows has no descriptor a C
//! event loop could wait on this way, so there [`pair`] fails with
//! `MQSTATE_STATUS_UNSUPPORTED` and the other two modes (pull, callback) are the ways to read.

use std::ffi::c_int;
use std::time::Duration;

use crate::status::{Failure, mqstate_status};

#[cfg(unix)]
mod imp {
    use std::ffi::c_int;
    use std::io::{Read, Write};
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;
    use std::time::Duration;

    /// The end the caller's loop waits on.
    pub struct Reader(UnixStream);
    /// The end the sink thread writes the byte to when the queue becomes non-empty.
    pub struct Writer(UnixStream);

    pub fn pair() -> std::io::Result<(Reader, Writer)> {
        let (reader, writer) = UnixStream::pair()?;
        reader.set_nonblocking(true)?;
        Ok((Reader(reader), Writer(writer)))
    }

    impl Reader {
        pub fn raw(&self) -> c_int {
            self.0.as_raw_fd()
        }

        pub fn consume(&self) {
            let mut byte = [0u8; 1];
            let _ = (&self.0).read(&mut byte);
        }

        pub fn wait(&self, wait: Option<Duration>) {
            let ms = wait.map_or(-1, |w| {
                i32::try_from(w.as_micros().div_ceil(1000)).unwrap_or(i32::MAX)
            });
            let mut pfd = libc::pollfd {
                fd: self.0.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid `pollfd` for a descriptor this reader owns; poll only writes
            // `revents`, and its result is re-checked by the caller's loop.
            unsafe { libc::poll(&mut pfd, 1, ms) };
        }
    }

    impl Writer {
        pub fn signal(&mut self) {
            let _ = self.0.write_all(&[1]);
        }
    }
}

#[cfg(not(unix))]
mod imp {
    use std::ffi::c_int;
    use std::time::Duration;

    /// No reader exists where there is no descriptor to give.
    pub enum Reader {}
    /// No writer exists either.
    pub enum Writer {}

    pub fn pair() -> std::io::Result<(Reader, Writer)> {
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "this platform has no file descriptor an event loop could poll; \
             use mqstate_subscription_next or a callback",
        ))
    }

    impl Reader {
        pub fn raw(&self) -> c_int {
            match *self {}
        }

        pub fn consume(&self) {
            match *self {}
        }

        pub fn wait(&self, _wait: Option<Duration>) {
            match *self {}
        }
    }

    impl Writer {
        pub fn signal(&mut self) {
            match *self {}
        }
    }
}

/// The reading end: its descriptor, the byte consumed when the queue empties, and a bounded
/// wait.
pub(super) struct Reader(imp::Reader);
/// The writing end, moved into the subscription's sink.
pub(super) struct Writer(imp::Writer);

/// A new channel, or `MQSTATE_STATUS_UNSUPPORTED` where the platform has none.
pub(super) fn pair() -> Result<(Reader, Writer), Failure> {
    imp::pair()
        .map(|(r, w)| (Reader(r), Writer(w)))
        .map_err(|e| Failure::new(mqstate_status::Unsupported, format!("socketpair: {e}")))
}

impl Reader {
    /// The descriptor given to the caller (owned by the subscription).
    pub(super) fn raw(&self) -> c_int {
        self.0.raw()
    }

    /// Consumes the byte (non-blocking), when the queue has just emptied.
    pub(super) fn consume(&self) {
        self.0.consume();
    }

    /// Blocks until the reader is readable (events queued, or the end of the stream) or
    /// `wait` (rounded up to a millisecond; `None`: without limit) has passed; an
    /// interrupted wait returns early.
    pub(super) fn wait(&self, wait: Option<Duration>) {
        self.0.wait(wait);
    }
}

impl Writer {
    /// Wakes the reader's loop: the queue has just become non-empty.
    pub(super) fn signal(&mut self) {
        self.0.signal();
    }
}
