//! `TCP_QUICKACK` re-armed after every read (mqstate patch; see `PATCHES.md`).
//!
//! Linux leaves quick-ACK mode by itself once traffic looks interactive, after which it
//! delays each acknowledgement by up to 40 ms. A peer with Nagle's algorithm on (mosquitto's
//! default) then holds its next small packet until that delayed acknowledgement arrives.
//! Setting `TCP_QUICKACK` after a read both sends the pending acknowledgement now and asks for
//! quick acknowledgements again.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use crate::framed::AsyncReadWrite;

/// `tcp`, boxed, re-arming `TCP_QUICKACK` after each read when `quickack` is set.
pub(crate) fn boxed(tcp: TcpStream, quickack: bool) -> Box<dyn AsyncReadWrite> {
    if quickack && set(&tcp).is_ok() {
        Box::new(QuickAck(tcp))
    } else {
        Box::new(tcp)
    }
}

#[cfg(any(target_os = "linux", target_os = "android", target_os = "fuchsia", target_os = "cygwin"))]
fn set(tcp: &TcpStream) -> io::Result<()> {
    tcp.set_quickack(true)
}

#[cfg(not(any(target_os = "linux", target_os = "android", target_os = "fuchsia", target_os = "cygwin")))]
fn set(_: &TcpStream) -> io::Result<()> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "TCP_QUICKACK is Linux's"))
}

/// A TCP stream that re-arms `TCP_QUICKACK` after each read that returned data.
struct QuickAck(TcpStream);

impl AsyncRead for QuickAck {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.0).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            // Best effort: a failure here changes only when the kernel acknowledges.
            let _ = set(&self.0);
        }
        polled
    }
}

impl AsyncWrite for QuickAck {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}
