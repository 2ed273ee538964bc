//! `get`, `set`, `del`, `vdel` and `ping`: one request each (ping: a few), printed as
//! text, JSON or raw bytes. Keys and values are bytes: arguments are taken as the
//! operating system gives them, values may also come from a file or stdin.

use std::ffi::OsString;
use std::io::{IsTerminal, Read};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Args;
use mqstate::codec::SetCondition;
use mqstate::{DelOptions, GetOptions, Hlc, SetOptions, VdelOutcome};
use serde_json::{Map, json};

use crate::conn::Target;
use crate::failure::{CliResult, Failure, NOT_MET, OK};
use crate::output::{
    Format, bytes_fields, escape, print_json, print_line, print_raw, version_json, version_text,
};

/// The bytes of a command-line argument, exactly as given (on Windows, whose arguments are
/// UTF-16, its UTF-8 encoding; an unpaired surrogate becomes U+FFFD).
pub fn arg_bytes(arg: &OsString) -> Vec<u8> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        arg.as_bytes().to_vec()
    }
    #[cfg(not(unix))]
    {
        arg.to_string_lossy().into_owned().into_bytes()
    }
}

/// Parses a fencing token (an HLC: `wallclock:counter:node`).
pub fn parse_token(text: &Option<String>) -> CliResult<Option<Hlc>> {
    text.as_deref()
        .map(|t| Hlc::parse(t).map_err(|e| Failure::usage(format!("--fencing-token {t:?}: {e}"))))
        .transpose()
}

/// Where a value comes from: an argument, `--file`, or stdin.
#[derive(Debug, Args, Clone)]
pub struct ValueSource {
    /// The value (bytes as given). Omit it to read --file, or stdin when it is not a terminal.
    value: Option<OsString>,
    /// Read the value from this file (`-` for stdin), byte for byte.
    #[arg(short, long, value_name = "PATH", conflicts_with = "value")]
    file: Option<PathBuf>,
}

impl ValueSource {
    fn read(&self) -> CliResult<Vec<u8>> {
        if let Some(v) = &self.value {
            return Ok(arg_bytes(v));
        }
        let stdin = || -> CliResult<Vec<u8>> {
            let mut buf = Vec::new();
            std::io::stdin()
                .lock()
                .read_to_end(&mut buf)
                .map_err(|e| Failure::usage(format!("could not read the value from stdin: {e}")))?;
            Ok(buf)
        };
        match &self.file {
            Some(p) if p.as_os_str() == "-" => stdin(),
            Some(p) => std::fs::read(p).map_err(|e| {
                Failure::usage(format!(
                    "could not read the value from {}: {e}",
                    p.display()
                ))
            }),
            None if std::io::stdin().is_terminal() => Err(Failure::usage(
                "no value: give it as an argument, with --file PATH, or on stdin",
            )),
            None => stdin(),
        }
    }
}

/// `mqstate get KEY`.
#[derive(Debug, Args)]
pub struct GetArgs {
    /// The key.
    key: OsString,
}

/// `mqstate set KEY [VALUE]`.
#[derive(Debug, Args)]
pub struct SetArgs {
    /// The key.
    key: OsString,
    #[command(flatten)]
    value: ValueSource,
    /// Set only if the key does not exist (exit 1 otherwise).
    #[arg(long, conflicts_with = "nex")]
    nx: bool,
    /// Set only if the key does not exist or already holds this value (exit 1 otherwise).
    #[arg(long)]
    nex: bool,
    /// Expire the key after this long, with its unit: 250ms, 1.5s, 2m.
    #[arg(long, short = 'x', value_name = "DURATION", value_parser = crate::conn::duration_arg, allow_hyphen_values = true)]
    expiry: Option<Duration>,
    /// Write with this fencing token (from `mqstate lock`'s MQSTATE_FENCING_TOKEN).
    #[arg(long, value_name = "HLC")]
    fencing_token: Option<String>,
    /// Ask the store to persist the value to disk (aio-persistence).
    #[arg(long)]
    persist: bool,
}

/// `mqstate del KEY`.
#[derive(Debug, Args)]
pub struct DelArgs {
    /// The key.
    key: OsString,
    /// Delete with this fencing token.
    #[arg(long, value_name = "HLC")]
    fencing_token: Option<String>,
}

/// `mqstate vdel KEY [VALUE]`.
#[derive(Debug, Args)]
pub struct VdelArgs {
    /// The key.
    key: OsString,
    #[command(flatten)]
    value: ValueSource,
    /// Delete with this fencing token.
    #[arg(long, value_name = "HLC")]
    fencing_token: Option<String>,
}

/// `mqstate ping`.
#[derive(Debug, Args)]
pub struct PingArgs {
    /// Round trips to time.
    #[arg(short = 'c', long, default_value_t = 3)]
    count: u32,
}

fn key_of(key: &OsString) -> CliResult<Vec<u8>> {
    let key = arg_bytes(key);
    if key.is_empty() {
        return Err(Failure::usage("the key must not be empty"));
    }
    Ok(key)
}

/// Runs `get`: exit 1 when the key is missing.
pub async fn get(target: &Target, format: Format, args: GetArgs) -> CliResult {
    let key = key_of(&args.key)?;
    let client = target.connect().await?;
    let got = client
        .get_with(&key, GetOptions::default())
        .await
        .map_err(|e| target.fail(&e));
    client.shutdown().await;
    let got = got?;
    match format {
        Format::Json => {
            let mut map = Map::new();
            bytes_fields(&mut map, "key", &key);
            map.insert("found".into(), json!(got.is_some()));
            match &got {
                Some(v) => {
                    bytes_fields(&mut map, "value", &v.value);
                    map.insert("version".into(), version_json(&v.version));
                }
                None => {
                    map.insert("value".into(), serde_json::Value::Null);
                }
            }
            print_json(&map.into())?;
        }
        Format::Raw => {
            if let Some(v) = &got {
                print_raw(&v.value)?;
            }
        }
        Format::Text => match &got {
            Some(v) => print_line(&escape(&v.value))?,
            None => crate::output::note(&format!("(not found) {}", escape(&key))),
        },
    }
    Ok(if got.is_some() { OK } else { NOT_MET })
}

/// Runs `set`: exit 1 when its NX / NEX condition was not met.
pub async fn set(target: &Target, format: Format, args: SetArgs) -> CliResult {
    let key = key_of(&args.key)?;
    let value = args.value.read()?;
    let expiry = match args.expiry {
        Some(d) if d.is_zero() => return Err(Failure::usage("--expiry must be positive")),
        other => other,
    };
    let options = SetOptions {
        condition: if args.nx {
            SetCondition::NotExists
        } else if args.nex {
            SetCondition::NotExistsOrEqual
        } else {
            SetCondition::Always
        },
        expiry,
        fencing_token: parse_token(&args.fencing_token)?,
        persist: args.persist,
        timeout: None,
    };
    let client = target.connect().await?;
    let outcome = client
        .set(&key, &value, options)
        .await
        .map_err(|e| target.fail(&e));
    client.shutdown().await;
    let outcome = outcome?;
    match format {
        Format::Json => print_json(&json!({
            "applied": outcome.applied,
            "version": version_json(&outcome.version),
        }))?,
        Format::Raw => {}
        Format::Text if outcome.applied => {
            print_line(&format!("OK (version {})", version_text(&outcome.version)))?;
        }
        Format::Text => {
            print_line("not set: the key exists (--nx) or holds another value (--nex)")?
        }
    }
    Ok(if outcome.applied { OK } else { NOT_MET })
}

/// Runs `del`: exit 1 when there was no such key.
pub async fn del(target: &Target, format: Format, args: DelArgs) -> CliResult {
    let key = key_of(&args.key)?;
    let options = DelOptions {
        fencing_token: parse_token(&args.fencing_token)?,
        timeout: None,
    };
    let client = target.connect().await?;
    let deleted = client.del(&key, options).await.map_err(|e| target.fail(&e));
    client.shutdown().await;
    let deleted = deleted?;
    match format {
        Format::Json => print_json(&json!({ "deleted": deleted }))?,
        Format::Raw => {}
        Format::Text if deleted > 0 => print_line("deleted")?,
        Format::Text => print_line("not found")?,
    }
    Ok(if deleted > 0 { OK } else { NOT_MET })
}

/// Runs `vdel`: exit 1 when there was no such key or it holds another value.
pub async fn vdel(target: &Target, format: Format, args: VdelArgs) -> CliResult {
    let key = key_of(&args.key)?;
    let value = args.value.read()?;
    let options = DelOptions {
        fencing_token: parse_token(&args.fencing_token)?,
        timeout: None,
    };
    let client = target.connect().await?;
    let outcome = client
        .vdel(&key, &value, options)
        .await
        .map_err(|e| target.fail(&e));
    client.shutdown().await;
    let outcome = outcome?;
    let (name, text) = match outcome {
        VdelOutcome::Deleted => ("deleted", "deleted"),
        VdelOutcome::NotFound => ("not_found", "not found"),
        VdelOutcome::ValueMismatch => {
            ("value_mismatch", "not deleted: the key holds another value")
        }
    };
    match format {
        Format::Json => {
            print_json(&json!({ "outcome": name, "deleted": outcome == VdelOutcome::Deleted }))?
        }
        Format::Raw => {}
        Format::Text => print_line(text)?,
    }
    Ok(if outcome == VdelOutcome::Deleted {
        OK
    } else {
        NOT_MET
    })
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

/// Runs `ping`: connects, then times `count` GETs of a key nobody uses. The state store
/// protocol has no version request, so the "server" line reports the RPC protocol version
/// this client speaks and the service accepted (1.0), not a server build.
pub async fn ping(target: &Target, format: Format, args: PingArgs) -> CliResult {
    let started = Instant::now();
    let client = target.connect().await?;
    let connect = started.elapsed();
    let mut rtts = Vec::new();
    for _ in 0..args.count.max(1) {
        let t = Instant::now();
        if let Err(e) = client.get("__mqstate/ping").await {
            client.shutdown().await;
            return Err(target.fail(&e));
        }
        rtts.push(t.elapsed());
    }
    let info = client.link_info();
    let client_id = client.client_id().to_owned();
    client.shutdown().await;
    let min = rtts.iter().min().copied().unwrap_or_default();
    let max = rtts.iter().max().copied().unwrap_or_default();
    let avg = rtts.iter().sum::<Duration>() / rtts.len() as u32;
    match format {
        Format::Json => print_json(&json!({
            "target": target.display,
            "client_id": client_id,
            "connect_ms": ms(connect),
            "rtt_ms": rtts.iter().map(|d| ms(*d)).collect::<Vec<_>>(),
            "rtt_min_ms": ms(min),
            "rtt_avg_ms": ms(avg),
            "rtt_max_ms": ms(max),
            "protocol_version": "1.0",
            "server_version": serde_json::Value::Null,
            "broker_max_packet_size": info.broker_max_packet_size,
        }))?,
        _ => {
            print_line(&format!(
                "PONG from the state store at {} (client id {client_id})",
                target.display
            ))?;
            print_line(&format!(
                "connect {:.3} ms; round trip min/avg/max {:.3}/{:.3}/{:.3} ms over {} GETs",
                ms(connect),
                ms(min),
                ms(avg),
                ms(max),
                rtts.len()
            ))?;
            print_line(
                "server version: not exposed by the state store protocol; it speaks RPC protocol 1.0",
            )?;
        }
    }
    Ok(OK)
}
