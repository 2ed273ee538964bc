//! The SCAN glob matcher (`mqstate::glob`) against Redis itself: random keys and patterns
//! made of the metacharacters (`*`, `?`, `[`, `]`, `^`, `-`, `\`, `!`), each pattern's
//! matches compared with Redis's `KEYS` (the same `stringmatchlen` as `SCAN … MATCH`).
//! Runs when `redis-server` is installed (scripts/setup installs Debian's); says so and
//! passes when it is not, so a machine without it still runs the rest of the suite.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use rand::{Rng, SeedableRng};

struct Redis(Child);

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One RESP command and its reply's bulk strings (an integer or status reply gives none).
fn command(conn: &mut BufReader<TcpStream>, args: &[&[u8]]) -> Vec<Vec<u8>> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend(format!("${}\r\n", a.len()).bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    conn.get_mut().write_all(&out).unwrap();
    let mut line = String::new();
    conn.read_line(&mut line).unwrap();
    match line.as_bytes()[0] {
        b'*' => {
            let n: usize = line[1..].trim().parse().unwrap();
            (0..n)
                .map(|_| {
                    let mut header = String::new();
                    conn.read_line(&mut header).unwrap();
                    let len: usize = header[1..].trim().parse().unwrap();
                    let mut body = vec![0; len + 2];
                    conn.read_exact(&mut body).unwrap();
                    body.truncate(len);
                    body
                })
                .collect()
        }
        b'+' | b':' => Vec::new(),
        _ => panic!("redis answered {line:?}"),
    }
}

#[test]
fn the_matcher_agrees_with_redis_on_random_patterns() {
    let port = mqstate_tests::free_port().unwrap();
    let Ok(child) = Command::new("redis-server")
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
        ])
        .args(["--appendonly", "no"])
        .stdout(Stdio::null())
        .spawn()
    else {
        eprintln!("redis-server is not installed: the comparison with Redis is skipped");
        return;
    };
    let mut redis = Redis(child);
    mqstate_tests::wait_listening(&mut redis.0, port, Duration::from_secs(10))
        .unwrap_or_else(|e| panic!("redis did not start: {e}"));
    let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut conn = BufReader::new(stream);
    let seed: u64 = rand::random();
    println!("seed {seed}");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let alphabet = b"ab[]^-\\*?!c";
    let word = |rng: &mut rand::rngs::StdRng, max: usize| -> Vec<u8> {
        let len = rng.random_range(1..=max);
        (0..len)
            .map(|_| alphabet[rng.random_range(0..alphabet.len())])
            .collect()
    };
    let mut keys: Vec<Vec<u8>> = (0..300).map(|_| word(&mut rng, 4)).collect();
    keys.sort();
    keys.dedup();
    for key in &keys {
        command(&mut conn, &[b"SET", key, b"v"]);
    }
    let mut differences = Vec::new();
    for _ in 0..1_500 {
        let pattern = word(&mut rng, 6);
        let mut theirs = command(&mut conn, &[b"KEYS", &pattern]);
        theirs.sort();
        let ours: Vec<Vec<u8>> = keys
            .iter()
            .filter(|k| mqstate::glob::matches(&pattern, k))
            .cloned()
            .collect();
        if ours != theirs {
            differences.push(pattern.escape_ascii().to_string());
        }
    }
    assert!(
        differences.is_empty(),
        "seed {seed}: patterns where mqstate and Redis disagree: {differences:?}"
    );
}
