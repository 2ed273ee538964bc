//! `mqstate serve`: a thin wrapper over [`mqstate_server::Server`].

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use mqstate_server::{BrokerTarget, Server, ServerConfig, TlsFiles};

use crate::failure::{CliResult, Failure, OK};

/// Options of `mqstate serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Where the embedded broker listens: PORT (on 127.0.0.1), HOST:PORT (a name such as
    /// localhost is resolved) or [IPv6]:PORT. -p/--port PORT changes only the port. Not
    /// with --broker.
    #[arg(
        long,
        value_name = "ADDRESS",
        default_value = "127.0.0.1:1883",
        env = "MQSTATE_LISTEN",
        value_parser = parse_listen
    )]
    listen: SocketAddr,
    /// Attach to an existing broker instead: mqtt://host:port or mqtts://host:port.
    /// Client disconnects are then seen only through mosquitto's log on $SYS/broker/log
    /// (mosquitto.conf: `log_dest topic` and `log_type notice`; checked at start-up), and
    /// notifications reach only clients subscribed to their notification topic
    /// (docs/server.md).
    #[arg(long, env = "MQSTATE_BROKER")]
    broker: Option<String>,
    /// User name for --broker.
    #[arg(long, requires = "broker")]
    username: Option<String>,
    /// Password for --broker.
    #[arg(
        long,
        requires = "username",
        env = "MQSTATE_PASSWORD",
        hide_env_values = true
    )]
    password: Option<String>,
    /// PEM file of CA certificates for an mqtts:// broker (default: system roots).
    #[arg(long, requires = "broker")]
    ca_file: Option<PathBuf>,
    /// Do not subscribe to $SYS/broker/log/# (mosquitto's log, used to see disconnects).
    #[arg(long, requires = "broker")]
    no_sys_log: bool,
    /// Serve /healthz, /readyz and /metrics (Prometheus) over HTTP on this address: PORT
    /// (on 127.0.0.1) or HOST:PORT. Off by default (docs/server.md, "Health and metrics").
    #[arg(long, value_name = "ADDRESS", env = "MQSTATE_HTTP", value_parser = parse_listen)]
    http: Option<SocketAddr>,
    /// Keep keys SET with aio-persistence: true in this directory across restarts.
    #[arg(long, env = "MQSTATE_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// The key quota (default: unlimited).
    #[arg(long)]
    max_keys: Option<usize>,
    /// SCAN: the most keys one page holds (pages also stop at 64 KiB of keys).
    #[arg(long, default_value_t = mqstate_server::store::DEFAULT_SCAN_PAGE_KEYS)]
    scan_page_size: usize,
    /// The node id of the service clock (in every version it hands out).
    #[arg(long, default_value = "StateStore")]
    node_id: String,
    /// How many notifications may wait for one slow client before the oldest are dropped.
    #[arg(long, default_value_t = 1024)]
    notify_queue_limit: usize,
    /// Let debug logs (-v) show values; by default they show keys (escaped) and lengths.
    #[arg(long)]
    log_values: bool,
    /// Embedded broker: MiB of messages that may wait for one client that does not read
    /// before its oldest are dropped.
    #[arg(long, default_value_t = 16)]
    client_queue_mib: usize,
    /// Embedded broker: how many MQTT sessions may be kept for clients that left without
    /// ending theirs (each kept for its session expiry); past it, the oldest end first.
    #[arg(long, default_value_t = mqstate_server::config::DEFAULT_MAX_OFFLINE_SESSIONS)]
    max_offline_sessions: usize,
    /// Embedded broker: how many clients may be connected at once (in all, and from one
    /// address); each idle one costs about 36 KiB and a file descriptor (see `ulimit -n`).
    #[arg(long, default_value_t = mqstate_server::config::DEFAULT_MAX_CLIENTS)]
    max_clients: usize,
    /// Embedded broker: serve the store through an MQTT connection to the broker (the
    /// older, slower path, kept for comparison) instead of inside the broker's process.
    #[arg(long, conflicts_with = "broker")]
    embedded_adapter: bool,
    /// TLS, authentication and authorization of the embedded broker (boxed: they are
    /// large and rarely given).
    #[command(flatten)]
    access: Box<AccessArgs>,
}

/// Who may connect to the embedded broker and what they may do (`docs/server.md`).
#[derive(Debug, Args)]
struct AccessArgs {
    /// Embedded broker: listen with TLS, this PEM certificate chain (needs --tls-key).
    #[arg(long, requires = "tls_key", conflicts_with = "broker")]
    tls_cert: Option<PathBuf>,
    /// Embedded broker: the TLS private key (PEM).
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Embedded broker: require client certificates signed by these CAs (mutual TLS).
    #[arg(long, requires = "tls_cert")]
    tls_client_ca: Option<PathBuf>,
    /// Embedded broker: accept K8S-SAT authentication only with a token listed in this
    /// file (one per line); by default any token is accepted.
    #[arg(long, conflicts_with = "broker")]
    sat_tokens: Option<PathBuf>,
    /// Embedded broker: require a user name and password listed in this file
    /// (`user:password` lines); by default any credentials, or none, are accepted.
    #[arg(long, conflicts_with = "broker")]
    password_file: Option<PathBuf>,
    /// Embedded broker: clients may publish only to the request topic and subscribe only
    /// to their own response and notification topics (docs/server.md).
    #[arg(long, conflicts_with = "broker")]
    acl: bool,
    /// With --acl: a topic filter every client may also publish and subscribe to
    /// (repeatable).
    #[arg(long, requires = "acl")]
    acl_allow: Vec<String>,
}

/// Parses `--listen`: `PORT`, `HOST:PORT` (resolved; IPv4 first, as `localhost` is most
/// often reached) or `[IPv6]:PORT`.
fn parse_listen(text: &str) -> Result<SocketAddr, String> {
    let text = text.trim();
    if let Ok(port) = text.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    let expected = "expected PORT, HOST:PORT or [IPv6]:PORT";
    let (host, port) = text
        .rsplit_once(':')
        .ok_or_else(|| format!("no port: {expected}"))?;
    let port: u16 = port
        .parse()
        .map_err(|_| format!("{port:?} is not a port (0-65535): {expected}"))?;
    if host.starts_with('[') {
        return Err(format!(
            "an IPv6 address is written [ADDRESS]:PORT: {expected}"
        ));
    }
    if host.is_empty() || host.contains(':') {
        return Err(format!(
            "{host:?} is not a host name or address: {expected}"
        ));
    }
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {host:?}: {e}"))?
        .collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or(addrs.first())
        .copied()
        .ok_or_else(|| format!("{host:?} resolves to no address"))
}

impl ServeArgs {
    /// The listen address, with the port of `-p/--port` when one is given.
    fn listen_addr(&self, port: Option<&str>) -> CliResult<SocketAddr> {
        let Some(port) = port else {
            return Ok(self.listen);
        };
        if self.broker.is_some() {
            return Err(Failure::usage(
                "-p/--port: with --broker nothing listens here (the broker's port is in the \
                 --broker URL)",
            ));
        }
        let port: u16 = port
            .trim()
            .parse()
            .map_err(|_| Failure::usage(format!("-p/--port {port:?} is not a port (0-65535)")))?;
        Ok(SocketAddr::new(self.listen.ip(), port))
    }

    fn config(self, listen: SocketAddr) -> anyhow::Result<ServerConfig> {
        let access = *self.access;
        let broker = match self.broker {
            Some(url) => {
                let mut target = BrokerTarget::parse(&url).map_err(anyhow::Error::msg)?;
                target.username = self.username;
                target.password = self.password;
                target.ca_file = self.ca_file;
                target.watch_sys_log = !self.no_sys_log;
                Some(target)
            }
            None => None,
        };
        Ok(ServerConfig {
            listen,
            broker,
            data_dir: self.data_dir,
            max_keys: self.max_keys,
            scan_page_keys: self.scan_page_size,
            node_id: self.node_id,
            notify_queue_limit: self.notify_queue_limit,
            log_values: self.log_values,
            client_queue_bytes: self.client_queue_mib.saturating_mul(1024 * 1024),
            max_offline_sessions: self.max_offline_sessions,
            max_clients: self.max_clients,
            embedded_adapter: self.embedded_adapter,
            tls: match (access.tls_cert, access.tls_key) {
                (Some(cert), Some(key)) => Some(TlsFiles {
                    cert,
                    key,
                    client_ca: access.tls_client_ca,
                }),
                _ => None,
            },
            sat_token_file: access.sat_tokens,
            password_file: access.password_file,
            acl: access.acl,
            acl_allow: access.acl_allow,
            ..ServerConfig::default()
        })
    }
}

/// Runs `serve`: `port` is the global `-p/--port`, which here sets the listen port.
pub async fn serve(args: ServeArgs, port: Option<&str>) -> CliResult {
    let listen = args.listen_addr(port)?;
    let embedded = args.broker.is_none();
    run(args, listen).await.map(|()| OK).map_err(|e| {
        let busy = std::net::TcpListener::bind(listen)
            .is_err_and(|b| b.kind() == std::io::ErrorKind::AddrInUse);
        if embedded && busy {
            let port = listen.port();
            Failure::new(
                crate::failure::STORE,
                format!("could not start the state store: {listen} is already in use"),
            )
            .hint(format!(
                "another `mqstate serve` or broker listens there: see which with \
                 `lsof -i :{port}` or `ss -ltnp 'sport = :{port}'`, or listen elsewhere \
                 with --listen (or -p)"
            ))
        } else {
            crate::from_anyhow(&e)
        }
    })
}

/// Runs the server until Ctrl-C (or SIGTERM), then shuts it down cleanly.
async fn run(args: ServeArgs, listen: SocketAddr) -> anyhow::Result<()> {
    let http = args.http;
    let config = args.config(listen)?;
    if let Some(dir) = &config.data_dir {
        std::fs::create_dir_all(dir).with_context(|| {
            format!("--data-dir {}: cannot create the directory", dir.display())
        })?;
    }
    let what = match (&config.data_dir, &config.broker) {
        (Some(dir), _) => format!("with --data-dir {}", dir.display()),
        (None, Some(_)) => "through --broker".to_owned(),
        (None, None) => format!("on {}", config.listen),
    };
    // Handlers first: a Ctrl-C right after the "serving" line must shut down cleanly.
    let signals = Signals::new()?;
    let server = Server::start(config)
        .await
        .with_context(|| format!("could not start the state store {what}"))?;
    if server.is_embedded() {
        tracing::info!(addr = %server.addr(), "serving: embedded broker at mqtt://{}", server.addr());
    } else {
        tracing::info!(addr = %server.addr(), "serving through the broker at {}", server.addr());
    }
    let http = match http {
        Some(addr) => {
            let listener = crate::http::HttpListener::start(
                addr,
                server.metrics_reader(),
                server.probe_settings(),
            )
            .await
            .with_context(|| format!("--http {addr}: could not listen"))?;
            tracing::info!(addr = %listener.addr(), "health and metrics at http://{}/metrics", listener.addr());
            Some(listener)
        }
        None => None,
    };
    signals.wait().await;
    tracing::info!("shutting down");
    if let Some(http) = http {
        http.stop();
    }
    server.shutdown().await;
    Ok(())
}

/// SIGINT and SIGTERM, registered at creation.
struct Signals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> anyhow::Result<Signals> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Signals {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
        })
    }

    async fn wait(mut self) {
        tokio::select! {
            _ = self.int.recv() => {}
            _ = self.term.recv() => {}
        }
    }
}
