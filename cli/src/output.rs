//! How results are written: text for people (non-printable bytes escaped), `--json` for
//! scripts (one JSON object per line), `--raw` for pipes (the value's exact bytes).

use std::io::{IsTerminal, Write};

use clap::Args;
use mqstate::Hlc;
use serde_json::{Value, json};

use crate::failure::{CliResult, Failure};

/// Output flags shared by the client commands.
#[derive(Debug, Args, Clone, Copy, Default)]
#[command(next_help_heading = "Output")]
pub struct OutputArgs {
    /// One JSON object per result (per line), for scripts.
    #[arg(long, global = true, conflicts_with = "raw")]
    pub json: bool,
    /// Values as their exact bytes, nothing added (for pipes and binary values).
    #[arg(long, global = true)]
    pub raw: bool,
}

/// The chosen output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// For people.
    Text,
    /// For scripts.
    Json,
    /// For pipes.
    Raw,
}

impl OutputArgs {
    /// The format the flags select.
    pub fn format(self) -> Format {
        if self.json {
            Format::Json
        } else if self.raw {
            Format::Raw
        } else {
            Format::Text
        }
    }
}

/// Bytes for people: printable ASCII and valid UTF-8 as is, anything else as `\xNN`
/// (backslash, CR, LF and TAB as `\\`, `\r`, `\n`, `\t`).
pub fn escape(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if c.is_control() => {
                    let mut buf = [0u8; 4];
                    for b in c.encode_utf8(&mut buf).bytes() {
                        out.push_str(&format!("\\x{b:02x}"));
                    }
                }
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding (RFC 4648 §4).
pub fn base64(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(B64[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// JSON fields for bytes: `{name: text}` when UTF-8, else `{name_base64: …}`.
pub fn bytes_fields(map: &mut serde_json::Map<String, Value>, name: &str, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(text) => {
            map.insert(name.to_owned(), json!(text));
        }
        Err(_) => {
            map.insert(format!("{name}_base64"), json!(base64(bytes)));
        }
    }
}

/// A version for JSON (`null` when absent).
pub fn version_json(v: &Option<Hlc>) -> Value {
    v.as_ref().map_or(Value::Null, |v| json!(v.to_string()))
}

/// A version for people.
pub fn version_text(v: &Option<Hlc>) -> String {
    v.as_ref()
        .map_or_else(|| "-".to_owned(), ToString::to_string)
}

/// Writes to stdout and flushes (for followers reading lines). A closed stdout (the reader
/// of a pipe went away) is [`Failure::output_closed`]: the command stops quietly.
pub fn write_stdout(bytes: &[u8]) -> CliResult<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(Failure::output_closed()),
        Err(e) => Err(Failure::new(
            crate::failure::STORE,
            format!("could not write the output: {e}"),
        )),
    }
}

/// Writes one JSON object and a newline to stdout, flushed.
pub fn print_json(value: &Value) -> CliResult<()> {
    write_stdout(format!("{value}\n").as_bytes())
}

/// Writes one line of text to stdout, flushed.
pub fn print_line(text: &str) -> CliResult<()> {
    write_stdout(format!("{text}\n").as_bytes())
}

/// Writes exact bytes to stdout, flushed.
pub fn print_raw(bytes: &[u8]) -> CliResult<()> {
    write_stdout(bytes)
}

/// `print!`/`eprint!` for the commands that print as they go (`demo`, `bench`): a closed
/// stream (`| head`) ends the process quietly with exit 0 instead of panicking.
pub fn print_or_exit(stream: &mut dyn Write, args: std::fmt::Arguments<'_>) {
    if let Err(e) = stream.write_fmt(args).and_then(|()| stream.flush())
        && e.kind() == std::io::ErrorKind::BrokenPipe
    {
        std::process::exit(i32::from(crate::failure::OK));
    }
}

/// Whether stderr may carry colours: a terminal, and `NO_COLOR` unset.
pub fn stderr_colour() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// A note for people on stderr (progress, "watching …"), never mixed into stdout.
pub fn note(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{text}");
    let _ = err.flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc4648_vectors() {
        for (plain, coded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(plain.as_bytes()), coded, "{plain}");
        }
    }

    #[test]
    fn escape_keeps_text_and_shows_bytes() {
        assert_eq!(escape("héllo".as_bytes()), "héllo");
        assert_eq!(escape(b"a\x00b\xffc\n"), "a\\x00b\\xffc\\n");
        assert_eq!(escape(b"back\\slash"), "back\\\\slash");
    }
}
