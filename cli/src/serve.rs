//! `mqstate serve`: a thin wrapper over [`mqstate_server::Server`].

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use mqstate_server::config::{self as server_config, Fsync};
use mqstate_server::telemetry::OtlpConfig;
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
    /// Serve the console (/), its JSON API (/api/), /healthz, /readyz and /metrics
    /// (Prometheus) over HTTP on this address: PORT (on 127.0.0.1) or HOST:PORT. Off by
    /// default (docs/console.md; docs/server.md, "Health and metrics").
    #[arg(long, value_name = "ADDRESS", env = "MQSTATE_HTTP", value_parser = parse_listen)]
    http: Option<SocketAddr>,
    /// With --http: the token the console's writes and faults need (header
    /// X-Mqstate-Token). Default: a new random one at each start, printed once.
    #[arg(
        long,
        requires = "http",
        env = "MQSTATE_HTTP_TOKEN",
        hide_env_values = true
    )]
    http_token: Option<String>,
    /// Export a span per request to this OpenTelemetry collector over OTLP/HTTP (JSON):
    /// http://HOST[:PORT][/BASE], spans POSTed to BASE/v1/traces. A request's W3C
    /// traceparent user property makes its span a child of the caller's; service.name is
    /// mqstate-serve unless OTEL_SERVICE_NAME is set. Off by default (docs/server.md,
    /// "Traces").
    #[arg(long, value_name = "URL", env = "MQSTATE_OTLP_ENDPOINT")]
    otlp_endpoint: Option<String>,
    /// Keep keys SET with aio-persistence: true in this directory across restarts.
    #[arg(long, env = "MQSTATE_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// With --data-dir: when the persistence log is fsynced. always: before a persistent
    /// write is applied and answered (survives power loss); interval: within
    /// --fsync-interval of it (power loss may lose that much); never: when the kernel
    /// chooses (Linux: within about 30 s). Every policy survives a crash of the process
    /// (kill -9): docs/server.md, "Durability".
    #[arg(long, value_enum, default_value_t = FsyncArg::Always, env = "MQSTATE_FSYNC")]
    fsync: FsyncArg,
    /// With --fsync interval: how long after a write it is fsynced at the latest
    /// [default: 1s].
    #[arg(long, value_name = "DURATION", value_parser = crate::conn::duration_arg)]
    fsync_interval: Option<Duration>,
    /// On SIGTERM or SIGINT: how long the store may take to answer what it is serving,
    /// refuse (503, not applied) what waits, fsync the log and close every connection;
    /// past it, the rest is dropped without waiting (the log is fsynced all the same) and
    /// the exit is 0 still.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = crate::conn::duration_arg)]
    shutdown_timeout: Duration,
    /// How long the answer to each write is kept, so that a request delivered twice (a
    /// resumed MQTT session) is answered again, not applied again. Keep it above the
    /// clients' request timeout.
    #[arg(long, value_name = "DURATION", default_value = "120s", value_parser = crate::conn::duration_arg)]
    dedup_window: Duration,
    /// How many answers to writes are kept for duplicates at most (the oldest go first;
    /// each costs at most 224 bytes; 0 keeps none).
    #[arg(long, value_name = "N", default_value_t = server_config::DEFAULT_DEDUP_MAX_ANSWERS)]
    dedup_max_answers: usize,
    /// How log lines are written on stderr: text, or json (one object per line, for log
    /// collectors).
    #[arg(long, value_enum, default_value_t = crate::logging::Format::Text, env = "MQSTATE_LOG_FORMAT")]
    log_format: crate::logging::Format,
    /// The key quota (default: unlimited).
    #[arg(long)]
    max_keys: Option<usize>,
    /// SCAN: the most keys one page holds (pages also stop at 64 KiB of keys).
    #[arg(long, default_value_t = mqstate_server::state_machine::DEFAULT_SCAN_PAGE_KEYS)]
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
    /// address); each costs memory (docs/benchmarks.md) and a file descriptor (`ulimit -n`).
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

/// `--fsync`: when the persistence log is fsynced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum FsyncArg {
    /// Before every persistent write is answered.
    Always,
    /// At most --fsync-interval after a write.
    Interval,
    /// Only on a clean shutdown (and compactions).
    Never,
}

/// The default of `--fsync-interval`.
const DEFAULT_FSYNC_INTERVAL: Duration = Duration::from_secs(1);

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
    /// `--log-format`.
    pub fn log_format(&self) -> crate::logging::Format {
        self.log_format
    }

    /// `--fsync` and `--fsync-interval` together.
    fn fsync(&self) -> CliResult<Fsync> {
        match (self.fsync, self.fsync_interval) {
            (FsyncArg::Always, None) => Ok(Fsync::Always),
            (FsyncArg::Never, None) => Ok(Fsync::Never),
            (FsyncArg::Interval, every) => {
                let every = every.unwrap_or(DEFAULT_FSYNC_INTERVAL);
                if every.is_zero() {
                    return Err(Failure::usage(
                        "--fsync-interval must be more than 0 (for every write use --fsync always)",
                    ));
                }
                Ok(Fsync::Interval(every))
            }
            (_, Some(_)) => Err(Failure::usage(
                "--fsync-interval goes with --fsync interval",
            )),
        }
    }

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

    /// `--otlp-endpoint`, checked, with `OTEL_SERVICE_NAME`.
    fn otlp(&self) -> CliResult<Option<OtlpConfig>> {
        let Some(endpoint) = &self.otlp_endpoint else {
            return Ok(None);
        };
        let mut otlp = OtlpConfig::new(endpoint.trim());
        otlp.validate().map_err(Failure::usage)?;
        if let Ok(name) = std::env::var("OTEL_SERVICE_NAME")
            && !name.trim().is_empty()
        {
            otlp.service_name = name.trim().to_owned();
        }
        Ok(Some(otlp))
    }

    fn config(
        self,
        listen: SocketAddr,
        fsync: Fsync,
        otlp: Option<OtlpConfig>,
    ) -> anyhow::Result<ServerConfig> {
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
            fsync,
            dedup_window: self.dedup_window,
            dedup_max_answers: self.dedup_max_answers,
            otlp,
            ..ServerConfig::default()
        })
    }
}

/// Runs `serve`: `port` is the global `-p/--port`, which here sets the listen port.
pub async fn serve(args: ServeArgs, port: Option<&str>) -> CliResult {
    let listen = args.listen_addr(port)?;
    let fsync = args.fsync()?;
    let otlp = args.otlp()?;
    let embedded = args.broker.is_none();
    run(args, listen, fsync, otlp)
        .await
        .map(|()| OK)
        .map_err(|e| {
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

/// Runs the server until Ctrl-C (or SIGTERM), then shuts it down cleanly within
/// `--shutdown-timeout`.
async fn run(
    args: ServeArgs,
    listen: SocketAddr,
    fsync: Fsync,
    otlp: Option<OtlpConfig>,
) -> anyhow::Result<()> {
    let bound = args.shutdown_timeout;
    let http = args.http;
    let token = match &args.http_token {
        Some(token) if token.trim().is_empty() => {
            anyhow::bail!("--http-token must not be empty")
        }
        Some(token) => token.trim().to_owned(),
        None => uuid::Uuid::new_v4().simple().to_string(),
    };
    let mut config = args.config(listen, fsync, otlp)?;
    let monitor = http.map(|_| mqstate_server::monitor::Monitor::default());
    config.monitor.clone_from(&monitor);
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
    let signals = crate::shutdown::Shutdown::install()?;
    let mut server = Server::start(config.clone())
        .await
        .with_context(|| format!("could not start the state store {what}"))?;
    if server.is_embedded() {
        tracing::info!(addr = %server.addr(), "serving: embedded broker at mqtt://{}", server.addr());
    } else {
        tracing::info!(addr = %server.addr(), "serving through the broker at {}", server.addr());
    }
    let tls = config.tls.is_some();
    let (restarts, mut restart_requests) = tokio::sync::mpsc::channel(1);
    let http = match (http, monitor) {
        (Some(addr), Some(monitor)) => {
            let facts = crate::http::Facts {
                data_dir: config.data_dir.clone(),
                node_id: config.node_id.clone(),
            };
            let listener = crate::http::HttpListener::start(
                addr,
                crate::http::Target::of(&server, tls),
                facts,
                token.clone(),
                monitor,
                restarts,
            )
            .await
            .with_context(|| format!("--http {addr}: could not listen"))?;
            let at = listener.addr();
            tracing::info!(addr = %at, "health and metrics at http://{at}/metrics");
            tracing::info!(addr = %at, "console at http://{at}/#token={token} (writes and faults need the token)");
            Some(listener)
        }
        _ => None,
    };
    let signal = signals.wait();
    tokio::pin!(signal);
    let signal = loop {
        tokio::select! {
            signal = &mut signal => break signal,
            Some(reply) = restart_requests.recv() => {
                server = restart(server, &mut config, http.as_ref(), tls, reply).await?;
            }
        }
    };
    tracing::info!(signal, timeout = ?bound, "shutting down");
    if let Some(http) = http {
        http.stop();
    }
    server.shutdown_within(bound).await;
    Ok(())
}

/// How long a restart keeps trying to bind the port it just freed.
const REBIND_FOR: Duration = Duration::from_secs(5);

/// The console's restart: `server` stopped as by `kill -9` and started again on the same
/// address (keys SET with persistence come back from `--data-dir`), the console pointed at
/// the new one; `reply` says whether persisted keys were kept, or why it failed (then
/// `serve` ends with that error: nothing serves any more).
async fn restart(
    server: mqstate_server::ServerHandle,
    config: &mut ServerConfig,
    http: Option<&crate::http::HttpListener>,
    tls: bool,
    reply: crate::http::RestartRequest,
) -> anyhow::Result<mqstate_server::ServerHandle> {
    let kept = config.data_dir.is_some();
    server.inspector().report(
        "restart",
        if kept {
            "the store and its broker killed and started again; persisted keys kept".to_owned()
        } else {
            "the store and its broker killed and started again; nothing kept (no --data-dir)"
                .to_owned()
        },
    );
    if server.is_embedded() {
        config.listen = server.addr();
    }
    server.kill().await;
    match Server::start_rebinding(config.clone(), REBIND_FOR).await {
        Ok(server) => {
            if let Some(http) = http {
                http.retarget(crate::http::Target::of(&server, tls)).await;
            }
            tracing::info!(addr = %server.addr(), kept, "restarted");
            let _ = reply.send(Ok(kept));
            Ok(server)
        }
        Err(e) => {
            let _ = reply.send(Err(format!("the store did not start again: {e}")));
            Err(anyhow::Error::new(e)
                .context("the console's restart: the store did not start again"))
        }
    }
}
