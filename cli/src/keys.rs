//! `mqstate keys PATTERN`: every key matching a glob, like `redis-cli --scan --pattern`.
//!
//! Keys stream out page by page (nothing is held beyond one page), one per line: escaped
//! for people, `--raw` as exact bytes (`-0` to separate them with NUL instead of a newline,
//! for keys that hold one), `--json` one object per key. A page that times out or loses
//! its connection is asked for again (from the same point) a few times before giving up.
//! A closed pipe (`| head`) ends the scan quietly.

use std::ffi::OsString;
use std::io::Write;

use clap::Args;
use mqstate::ScanOptions;
use serde_json::Map;

use crate::conn::Target;
use crate::failure::{CliResult, Failure, OK};
use crate::kv::arg_bytes;
use crate::output::{Format, bytes_fields, escape};

/// How often one page is asked for again after a retryable failure.
const PAGE_RETRIES: u32 = 3;

/// `mqstate keys PATTERN`.
#[derive(Debug, Args)]
pub struct KeysArgs {
    /// Glob pattern: `*` any bytes, `?` one byte, `[abc]`, `[a-z]`, `[^a]`, `\` escapes
    /// (quote it for the shell: 'sensor/*').
    pattern: OsString,
    /// Stop after this many keys.
    #[arg(long, short = 'n', value_name = "N")]
    count: Option<u64>,
    /// Exact bytes, each key ended by a NUL byte instead of a newline (implies --raw; for
    /// keys that hold a newline, as `xargs -0` reads them).
    #[arg(short = '0', long = "null", conflicts_with = "json")]
    null: bool,
}

/// Writes one key; an error means stdout is gone (a closed pipe).
fn write_key(out: &mut impl Write, format: Format, key: &[u8], null: bool) -> std::io::Result<()> {
    match format {
        Format::Text => writeln!(out, "{}", escape(key)),
        Format::Raw => {
            out.write_all(key)?;
            out.write_all(if null { b"\0" } else { b"\n" })
        }
        Format::Json => {
            let mut map = Map::new();
            bytes_fields(&mut map, "key", key);
            writeln!(out, "{}", serde_json::Value::from(map))
        }
    }
}

/// Runs `keys`: exit 0 whether or not any key matched.
pub async fn keys(target: &Target, format: Format, args: KeysArgs) -> CliResult {
    let pattern = arg_bytes(&args.pattern);
    if pattern.is_empty() {
        return Err(Failure::usage(
            "the pattern must not be empty (use '*' for every key)",
        ));
    }
    if args.count == Some(0) {
        return Ok(OK);
    }
    let format = if args.null { Format::Raw } else { format };
    let client = target.connect().await?;
    let result = stream_keys(target, &client, format, &pattern, &args).await;
    client.shutdown().await;
    result
}

async fn stream_keys(
    target: &Target,
    client: &mqstate::Client,
    format: Format,
    pattern: &[u8],
    args: &KeysArgs,
) -> CliResult {
    let mut pages = client
        .scan_with(pattern, ScanOptions::default())
        .map_err(|e| target.fail(&e))?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut printed = 0u64;
    let mut failures = 0u32;
    loop {
        let keys = match pages.next_page().await {
            Ok(Some(keys)) => {
                failures = 0;
                keys
            }
            Ok(None) => break,
            Err(e) if e.kind().is_retryable() && failures < PAGE_RETRIES => {
                failures += 1;
                tracing::warn!(error = %e, attempt = failures, "a SCAN page failed; asking again");
                continue;
            }
            Err(e) => {
                let _ = out.flush();
                return Err(target.fail(&e));
            }
        };
        for key in &keys {
            if write_key(&mut out, format, key, args.null).is_err() {
                return Ok(OK);
            }
            printed += 1;
            if args.count.is_some_and(|n| printed >= n) {
                let _ = out.flush();
                return Ok(OK);
            }
        }
        // Each page reaches a reader (a pipe, a terminal) as soon as it arrives.
        if out.flush().is_err() {
            return Ok(OK);
        }
    }
    let _ = out.flush();
    Ok(OK)
}
