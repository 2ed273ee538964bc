//! `watch KEY…` (each change of the keys, until Ctrl-C) and `leader NAME` (the current
//! leader of an election, or each change with `--follow`).

use std::ffi::OsString;

use clap::Args;
use mqstate::codec::KeyEvent;
use mqstate::lock::Lock;
use mqstate::{HolderChange, KeyNotification};
use serde_json::{Map, json};
use tokio::sync::mpsc;

use crate::conn::Target;
use crate::failure::{CliResult, Failure, NOT_MET, OK};
use crate::kv::arg_bytes;
use crate::output::{Format, bytes_fields, escape, note, print_json, print_line, print_raw};

/// `mqstate watch KEY…`.
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// The keys to watch (exact keys; no wildcards in the state store).
    #[arg(required = true)]
    keys: Vec<OsString>,
    /// Stop after this many notifications (default: until Ctrl-C).
    #[arg(short = 'n', long, value_name = "N")]
    count: Option<u64>,
}

/// `mqstate leader NAME`.
#[derive(Debug, Args)]
pub struct LeaderArgs {
    /// The election name (its lock key).
    name: OsString,
    /// Print every change of leader until Ctrl-C instead of the current one.
    #[arg(short, long)]
    follow: bool,
}

fn print_notification(format: Format, n: &KeyNotification) -> CliResult<()> {
    match format {
        Format::Json => {
            let mut map = Map::new();
            bytes_fields(&mut map, "key", &n.key);
            match &n.event {
                KeyEvent::Set(value) => {
                    map.insert("event".into(), json!("set"));
                    bytes_fields(&mut map, "value", value);
                }
                KeyEvent::Delete => {
                    map.insert("event".into(), json!("delete"));
                }
            }
            map.insert("version".into(), crate::output::version_json(&n.version));
            map.insert("resync".into(), json!(n.resync));
            map.insert("dropped_before".into(), json!(n.dropped_before));
            print_json(&map.into())
        }
        Format::Raw => match &n.event {
            KeyEvent::Set(value) => {
                let mut line = value.to_vec();
                line.push(b'\n');
                print_raw(&line)
            }
            KeyEvent::Delete => print_raw(b"\n"),
        },
        Format::Text => {
            let version = crate::output::version_text(&n.version);
            let key = escape(&n.key);
            let dropped = if n.dropped_before > 0 {
                format!(" ({} earlier changes dropped)", n.dropped_before)
            } else {
                String::new()
            };
            match &n.event {
                KeyEvent::Set(value) => print_line(&format!(
                    "SET {key} = {} (version {version}){dropped}",
                    escape(value)
                )),
                KeyEvent::Delete => {
                    print_line(&format!("DELETE {key} (version {version}){dropped}"))
                }
            }
        }
    }
}

/// Runs `watch` until Ctrl-C, SIGTERM, `--count` notifications, or a lost client.
pub async fn watch(target: &Target, format: Format, args: WatchArgs) -> CliResult {
    let keys: Vec<Vec<u8>> = args.keys.iter().map(arg_bytes).collect();
    if keys.iter().any(Vec::is_empty) {
        return Err(Failure::usage("a key must not be empty"));
    }
    let client = target.connect().await?;
    let (tx, mut rx) = mpsc::unbounded_channel();
    for key in &keys {
        let mut observer = match client.observe(key).await {
            Ok(o) => o,
            Err(e) => {
                client.shutdown().await;
                return Err(target.fail(&e));
            }
        };
        let tx = tx.clone();
        tokio::spawn(async move {
            while let Some(n) = observer.recv().await {
                if tx.send(n).is_err() {
                    break;
                }
            }
        });
    }
    drop(tx);
    let stop = crate::shutdown::requested();
    tokio::pin!(stop);
    let names: Vec<String> = keys.iter().map(|k| escape(k)).collect();
    note(&format!("watching {} (Ctrl-C to stop)", names.join(", ")));
    let mut seen = 0u64;
    loop {
        if args.count.is_some_and(|c| seen >= c) {
            break;
        }
        tokio::select! {
            _ = &mut stop => break,
            next = rx.recv() => match next {
                Some(n) => {
                    if let Err(closed) = print_notification(format, &n) {
                        client.shutdown().await;
                        return Err(closed);
                    }
                    seen += 1;
                }
                None => {
                    client.shutdown().await;
                    return Err(Failure::new(crate::failure::CONNECT, "the client closed"));
                }
            },
        }
    }
    client.shutdown().await;
    Ok(OK)
}

fn print_leader(format: Format, change: &HolderChange) -> CliResult<()> {
    match format {
        Format::Json => print_json(&json!({
            "leader": change.holder,
            "version": crate::output::version_json(&change.version),
        })),
        Format::Raw => {
            let mut line = change.holder.clone().unwrap_or_default().into_bytes();
            line.push(b'\n');
            print_raw(&line)
        }
        Format::Text => match &change.holder {
            Some(h) => print_line(&format!("leader: {h}")),
            None => print_line("no leader"),
        },
    }
}

/// Runs `leader`: exit 1 when nobody leads (without `--follow`).
pub async fn leader(target: &Target, format: Format, args: LeaderArgs) -> CliResult {
    let name = arg_bytes(&args.name);
    if name.is_empty() {
        return Err(Failure::usage("the election name must not be empty"));
    }
    let stop = crate::shutdown::requested();
    tokio::pin!(stop);
    let client = target.connect().await?;
    let lock = Lock::new(&client, &name).map_err(|e| target.fail(&e))?;
    if !args.follow {
        // The lock key read as `Lock::holder` reads it, keeping its version.
        let got = client.get(&name).await.map_err(|e| target.fail(&e));
        client.shutdown().await;
        let got = got?;
        let found = got.is_some();
        let change = match got {
            Some(v) => HolderChange {
                holder: Some(String::from_utf8_lossy(&v.value).into_owned()),
                version: v.version,
                resync: false,
            },
            None => HolderChange {
                holder: None,
                version: None,
                resync: false,
            },
        };
        print_leader(format, &change)?;
        return Ok(if found { OK } else { NOT_MET });
    }
    let mut changes = match lock.watch_holder().await {
        Ok(w) => w,
        Err(e) => {
            client.shutdown().await;
            return Err(target.fail(&e));
        }
    };
    loop {
        tokio::select! {
            _ = &mut stop => break,
            next = changes.recv() => match next {
                Some(change) => {
                    if let Err(closed) = print_leader(format, &change) {
                        drop(changes);
                        client.shutdown().await;
                        return Err(closed);
                    }
                }
                None => break,
            },
        }
    }
    drop(changes);
    client.shutdown().await;
    Ok(OK)
}
