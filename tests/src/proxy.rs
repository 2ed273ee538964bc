//! A TCP proxy for fault tests: sits between a client and the broker on loopback, and can
//! cut every live connection at once or refuse new ones, so tests can drop a connection
//! with requests in flight or keep a client away from the broker for a while.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use tokio::io::copy_bidirectional;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// A running proxy. Dropping it stops it and closes every connection through it.
pub struct TcpProxy {
    addr: SocketAddr,
    accepting: Arc<AtomicBool>,
    cut: watch::Sender<u64>,
    accepted: Arc<AtomicU64>,
    attempts: Arc<AtomicU64>,
    live: Arc<AtomicU64>,
    task: JoinHandle<()>,
}

impl TcpProxy {
    /// Listens on a free loopback port and forwards every connection to `target`.
    pub async fn start(target: SocketAddr) -> std::io::Result<TcpProxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let accepting = Arc::new(AtomicBool::new(true));
        let accepted = Arc::new(AtomicU64::new(0));
        let attempts = Arc::new(AtomicU64::new(0));
        let live = Arc::new(AtomicU64::new(0));
        let (cut, cut_rx) = watch::channel(0u64);
        let counters = Counters {
            accepting: Arc::clone(&accepting),
            accepted: Arc::clone(&accepted),
            attempts: Arc::clone(&attempts),
            live: Arc::clone(&live),
        };
        let task = tokio::spawn(accept_loop(listener, target, counters, cut_rx));
        Ok(TcpProxy {
            addr,
            accepting,
            cut,
            accepted,
            attempts,
            live,
            task,
        })
    }

    /// The address clients connect to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The port clients connect to.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Closes every live connection through the proxy (both directions, at once).
    pub fn cut(&self) {
        self.cut.send_modify(|n| *n += 1);
    }

    /// While `false`, new connections are accepted and closed at once (the broker looks
    /// down); live ones are not touched (combine with [`TcpProxy::cut`]).
    pub fn set_accepting(&self, accepting: bool) {
        self.accepting.store(accepting, Ordering::SeqCst);
    }

    /// Connections forwarded so far.
    pub fn connections(&self) -> u64 {
        self.accepted.load(Ordering::SeqCst)
    }

    /// Connection attempts so far, refused ones included.
    pub fn attempts(&self) -> u64 {
        self.attempts.load(Ordering::SeqCst)
    }

    /// Connections open through the proxy now (closed when either side closes).
    pub fn live(&self) -> u64 {
        self.live.load(Ordering::SeqCst)
    }
}

impl Drop for TcpProxy {
    fn drop(&mut self) {
        self.cut();
        self.task.abort();
    }
}

struct Counters {
    accepting: Arc<AtomicBool>,
    accepted: Arc<AtomicU64>,
    attempts: Arc<AtomicU64>,
    live: Arc<AtomicU64>,
}

async fn accept_loop(
    listener: TcpListener,
    target: SocketAddr,
    counters: Counters,
    cut: watch::Receiver<u64>,
) {
    while let Ok((mut inbound, _)) = listener.accept().await {
        counters.attempts.fetch_add(1, Ordering::SeqCst);
        if !counters.accepting.load(Ordering::SeqCst) {
            drop(inbound);
            continue;
        }
        let _ = inbound.set_nodelay(true);
        let mut cut = cut.clone();
        cut.mark_unchanged();
        counters.accepted.fetch_add(1, Ordering::SeqCst);
        let live = Arc::clone(&counters.live);
        live.fetch_add(1, Ordering::SeqCst);
        tokio::spawn(async move {
            if let Ok(mut outbound) = TcpStream::connect(target).await {
                let _ = outbound.set_nodelay(true);
                tokio::select! {
                    _ = copy_bidirectional(&mut inbound, &mut outbound) => {}
                    _ = cut.changed() => {}
                }
            }
            live.fetch_sub(1, Ordering::SeqCst);
        });
    }
}
