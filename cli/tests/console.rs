//! `mqstate serve --http`'s console API (docs/console.md) as curl sees it: a real `serve`
//! process, the API over plain HTTP/1.1, mqstate clients as the app — including hostile
//! input: binary keys, huge values and bodies, a pattern that matches everything in many
//! keys, 100 live viewers at once, a viewer that never reads, writes without the token, from
//! another origin or through a rebound host name.

use std::time::{Duration, Instant};

use mqstate::{Client, ConnectionSettings, SetOptions};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

mod support;

use support::{Proc, free_port, mqstate, wait_port};

/// A bound on anything that should happen, so a bug fails the test instead of hanging it.
const BOUND: Duration = Duration::from_secs(30);

const TOKEN: &str = "test-token";

/// A `serve --http` process: its broker port and its HTTP port.
struct Console {
    mqtt: u16,
    http: u16,
    _proc: Proc,
}

fn console(extra: &[&str]) -> Console {
    let (mqtt, http) = (free_port(), free_port());
    let child = mqstate()
        .args(["serve", "--listen", &format!("127.0.0.1:{mqtt}")])
        .args(["--http", &http.to_string(), "--http-token", TOKEN])
        .args(extra)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut proc = Proc(child);
    wait_port(&mut proc.0, mqtt);
    wait_port(&mut proc.0, http);
    Console {
        mqtt,
        http,
        _proc: proc,
    }
}

impl Console {
    async fn client(&self) -> Client {
        let url = format!("mqtt://127.0.0.1:{}", self.mqtt);
        Client::connect(ConnectionSettings::from_url(&url).unwrap())
            .await
            .unwrap()
    }

    /// `GET path`: status and JSON body.
    async fn get(&self, path: &str) -> (u16, Value) {
        let (status, body) = self.raw("GET", path, &[], b"").await;
        (status, parse(&body))
    }

    /// `POST path` with the token and a JSON body.
    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let headers = [
            ("X-Mqstate-Token", TOKEN),
            ("Content-Type", "application/json"),
        ];
        let (status, body) = self
            .raw("POST", path, &headers, body.to_string().as_bytes())
            .await;
        (status, parse(&body))
    }

    /// One HTTP/1.1 request (`Host: 127.0.0.1` unless given); status and body.
    async fn raw(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> (u16, Vec<u8>) {
        tokio::time::timeout(BOUND, async {
            let mut stream = TcpStream::connect(("127.0.0.1", self.http)).await.unwrap();
            let mut head = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
            if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
                head.push_str(&format!("Host: 127.0.0.1:{}\r\n", self.http));
            }
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
            stream.write_all(head.as_bytes()).await.unwrap();
            // A server may refuse before reading the whole body: a failed write is its answer.
            let _ = stream.write_all(body).await;
            let mut response = Vec::new();
            let _ = stream.read_to_end(&mut response).await;
            split(&response)
        })
        .await
        .unwrap_or_else(|_| panic!("{method} {path} took longer than {BOUND:?}"))
    }

    /// A live viewer, once the server said it is connected.
    async fn viewer(&self, query: &str) -> Stream {
        let stream = TcpStream::connect(("127.0.0.1", self.http)).await.unwrap();
        self.watch(stream, query).await
    }

    /// A live viewer with a small receive buffer (the kernel holds little for it).
    async fn small_viewer(&self, query: &str) -> Stream {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(4096).unwrap();
        let stream = socket
            .connect(([127, 0, 0, 1], self.http).into())
            .await
            .unwrap();
        self.watch(stream, query).await
    }

    /// Asks for the live stream on `stream` and waits until the server says it is connected.
    async fn watch(&self, mut stream: TcpStream, query: &str) -> Stream {
        let head = format!(
            "GET /api/events{query} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n\r\n",
            self.http
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        let mut viewer = Stream {
            stream,
            seen: Vec::new(),
            from: 0,
        };
        viewer.until(": connected").await;
        viewer
    }
}

/// Status and body of a whole response (a chunked body is joined).
fn split(response: &[u8]) -> (u16, Vec<u8>) {
    let text = String::from_utf8_lossy(response);
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {text:?}"));
    let at = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(response.len(), |i| i + 4);
    let (head, mut body) = (&text[..at.min(text.len())], response[at..].to_vec());
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        body = unchunk(&body);
    }
    (status, body)
}

fn unchunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(end) = body.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size = usize::from_str_radix(std::str::from_utf8(&body[..end]).unwrap().trim(), 16)
            .unwrap_or(0);
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&body[end + 2..end + 2 + size]);
        body = &body[end + 2 + size + 2..];
    }
}

fn parse(body: &[u8]) -> Value {
    serde_json::from_slice(body)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(body)))
}

/// A live stream being read: what came so far, and how far the test has looked.
struct Stream {
    stream: TcpStream,
    seen: Vec<u8>,
    from: usize,
}

impl Stream {
    /// Reads until `needle` comes after what earlier calls matched (bounded); returns the
    /// text up to it. (Events come in batches: one read may hold the next call's needle.)
    async fn until(&mut self, needle: &str) -> String {
        let deadline = tokio::time::Instant::now() + BOUND;
        let mut buf = [0u8; 64 * 1024];
        let mut looked = self.from;
        loop {
            let start = looked.saturating_sub(needle.len()).max(self.from);
            if let Some(at) = self.seen[start..]
                .windows(needle.len())
                .position(|w| w == needle.as_bytes())
            {
                let end = start + at + needle.len();
                let text = String::from_utf8_lossy(&self.seen[self.from..end]).into_owned();
                self.from = end;
                return text;
            }
            looked = self.seen.len();
            match tokio::time::timeout_at(deadline, self.stream.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => {
                    panic!("the stream ended before {needle:?}: {}", tail(&self.seen))
                }
                Ok(Ok(n)) => self.seen.extend_from_slice(&buf[..n]),
                Err(_) => panic!("no {needle:?} within {BOUND:?}: {}", tail(&self.seen)),
            }
        }
    }
}

/// The last 4 KiB of what a stream said.
fn tail(seen: &[u8]) -> String {
    String::from_utf8_lossy(&seen[seen.len().saturating_sub(4096)..]).into_owned()
}

fn b64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_binary_keys_huge_values_and_every_key_paged() {
    let console = console(&[]);
    let client = console.client().await;
    // A binary key and a 4 MiB value.
    let binary = b"bin/\xff\x00\x01";
    client
        .set(binary, b"\x00\x01\x02", SetOptions::default())
        .await
        .unwrap();
    let huge = vec![b'h'; 4 * 1024 * 1024];
    let version = client
        .set("big/value", &huge, SetOptions::default())
        .await
        .unwrap()
        .version
        .unwrap();
    let (status, big) = console.get("/api/key?key=big/value").await;
    assert_eq!(status, 200, "{big}");
    assert_eq!(big["size"], huge.len());
    assert_eq!(big["truncated"], true);
    assert_eq!(big["value"]["text"].as_str().unwrap().len(), 64 * 1024);
    assert_eq!(big["version"]["text"], version.to_text());
    assert_eq!(big["version"]["wall_ms"], version.wall_ms());
    let (status, bin) = console
        .get(&format!("/api/key?key_b64={}", b64(binary)))
        .await;
    assert_eq!(status, 200, "{bin}");
    assert!(bin["key"].get("text").is_none(), "not UTF-8: no text");
    assert_eq!(bin["value"]["b64"], b64(b"\x00\x01\x02"));
    assert_eq!(console.get("/api/key?key=nope").await.0, 404);
    assert_eq!(console.get("/api/key?key_b64=!!").await.0, 400);
    assert_eq!(console.get("/api/key").await.0, 400);
    // 25,000 keys: `*` pages through every one exactly once, each page bounded.
    let n = 25_000;
    let mut running = tokio::task::JoinSet::new();
    for i in 0..n {
        if running.len() >= 256 {
            running.join_next().await.unwrap().unwrap();
        }
        let client = client.clone();
        running.spawn(async move {
            let key = format!("many/{i:05}");
            client.set(key, "v", SetOptions::default()).await.unwrap();
        });
    }
    while let Some(done) = running.join_next().await {
        done.unwrap();
    }
    let mut seen = 0;
    let mut after = String::new();
    let mut pages = 0;
    let started = Instant::now();
    loop {
        let (status, page) = console
            .get(&format!("/api/keys?pattern=*&limit=1000{after}"))
            .await;
        assert_eq!(status, 200, "{page}");
        let keys = page["keys"].as_array().unwrap();
        assert!(keys.len() <= 1000);
        seen += keys.len();
        pages += 1;
        match page["next"].as_str() {
            Some(next) => after = format!("&after={next}"),
            None => break,
        }
    }
    assert_eq!(
        seen,
        n + 2,
        "every key once, in {pages} pages ({:?})",
        started.elapsed()
    );
    // A pattern that matches one key of many answers short pages with a way on.
    let (_, page) = console.get("/api/keys?pattern=many/*777&limit=10").await;
    assert!(page["keys"].as_array().unwrap().len() <= 10);
    assert!(
        page["next"].is_string(),
        "10,000 looked at, more to go: {page}"
    );
    assert_eq!(console.get("/api/keys?pattern=").await.0, 400);
    assert_eq!(console.get("/api/keys?limit=0").await.0, 400);
    assert_eq!(console.get("/api/keys?limit=1001").await.0, 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_go_through_the_store_and_need_the_token() {
    let console = console(&[]);
    let app = console.client().await;
    let observer = console.client().await;
    let mut notes = observer.observe("k").await.unwrap();
    // A set from the console: the observer is notified, as for any client's write.
    let (status, set) = console
        .post(
            "/api/keys/set",
            json!({"key": "k", "value": "from-console", "expiry_ms": 60000}),
        )
        .await;
    assert_eq!(status, 200, "{set}");
    assert_eq!(set["set"], true);
    let note = tokio::time::timeout(BOUND, notes.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&note.key[..], b"k");
    let stored = app.get("k").await.unwrap().unwrap();
    assert_eq!(&stored.value[..], b"from-console");
    assert_eq!(set["version"]["text"], stored.version.unwrap().to_text());
    let (_, shown) = console.get("/api/key?key=k").await;
    assert!(shown["expires_in_ms"].as_u64().unwrap() <= 60_000);
    // NX on an existing key: not set.
    let (status, nx) = console
        .post(
            "/api/keys/set",
            json!({"key": "k", "value": "x", "condition": "nx"}),
        )
        .await;
    assert_eq!((status, &nx["set"]), (200, &json!(false)), "{nx}");
    // VDEL with the wrong value, then the right one; a binary key's DEL.
    let (_, vdel) = console
        .post("/api/keys/vdel", json!({"key": "k", "value": "other"}))
        .await;
    assert_eq!(vdel["outcome"], "value_mismatch");
    let (_, vdel) = console
        .post(
            "/api/keys/vdel",
            json!({"key": "k", "value": "from-console"}),
        )
        .await;
    assert_eq!(
        (&vdel["outcome"], &vdel["deleted"]),
        (&json!("deleted"), &json!(1))
    );
    let note = tokio::time::timeout(BOUND, notes.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(note.event, mqstate::codec::KeyEvent::Delete, "{note:?}");
    app.set(b"\xfe\xff", "b", SetOptions::default())
        .await
        .unwrap();
    let (_, del) = console
        .post("/api/keys/delete", json!({"key_b64": b64(b"\xfe\xff")}))
        .await;
    assert_eq!(del["deleted"], 1);
    // A store error comes back with its code.
    let (status, fenced) = console
        .post(
            "/api/keys/set",
            json!({"key": "f", "value": "v", "fencing_token": "nonsense"}),
        )
        .await;
    assert_eq!(
        (status, &fenced["error"]["code"]),
        (400, &json!("invalid_argument"))
    );

    // Refused: no token, a wrong one, another origin, a rebound host, not JSON, too big,
    // not an object; each leaves the store as it was.
    app.set("guarded", "before", SetOptions::default())
        .await
        .unwrap();
    let body = json!({"key": "guarded", "value": "after"}).to_string();
    let json_type = ("Content-Type", "application/json");
    let cases: [(&[(&str, &str)], u16); 5] = [
        (&[json_type], 401),
        (&[json_type, ("X-Mqstate-Token", "wrong")], 401),
        (
            &[
                json_type,
                ("X-Mqstate-Token", TOKEN),
                ("Origin", "http://evil.example"),
            ],
            403,
        ),
        (
            &[
                json_type,
                ("X-Mqstate-Token", TOKEN),
                ("Host", "evil.example:80"),
            ],
            403,
        ),
        (
            &[("Content-Type", "text/plain"), ("X-Mqstate-Token", TOKEN)],
            415,
        ),
    ];
    for (headers, want) in cases {
        let (status, answer) = console
            .raw("POST", "/api/keys/set", headers, body.as_bytes())
            .await;
        assert_eq!(
            status,
            want,
            "{headers:?}: {}",
            String::from_utf8_lossy(&answer)
        );
        let error = parse(&answer);
        assert!(error["error"]["message"].is_string(), "{error}");
    }
    let ok_headers = [json_type, ("X-Mqstate-Token", TOKEN)];
    let huge = vec![b' '; 9 * 1024 * 1024];
    assert_eq!(
        console
            .raw("POST", "/api/keys/set", &ok_headers, &huge)
            .await
            .0,
        413
    );
    assert_eq!(
        console
            .raw("POST", "/api/keys/set", &ok_headers, b"[1]")
            .await
            .0,
        400
    );
    assert_eq!(
        console
            .raw("POST", "/api/keys/set", &ok_headers, b"{nope")
            .await
            .0,
        400
    );
    assert_eq!(console.raw("GET", "/api/keys/set", &[], b"").await.0, 404);
    assert_eq!(console.raw("DELETE", "/api/key", &[], b"").await.0, 405);
    // Reads through a rebound DNS name are refused too.
    let rebound = console
        .raw(
            "GET",
            "/api/key?key=guarded",
            &[("Host", "evil.example")],
            b"",
        )
        .await;
    assert_eq!(rebound.0, 403);
    let value = app.get("guarded").await.unwrap().unwrap().value;
    assert_eq!(&value[..], b"before");
    // The page itself: self-contained, kept to itself.
    let (status, page) = console.raw("GET", "/", &[], b"").await;
    assert_eq!(status, 200);
    let page = String::from_utf8(page).unwrap();
    assert!(page.contains("<html"), "{page}");
    for external in ["http://", "https://", "//cdn"] {
        assert!(
            !page.contains(&format!("src=\"{external}")),
            "the page loads {external}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_viewers_see_requests_and_a_stalled_one_is_not_in_the_way() {
    let console = console(&[]);
    let app = console.client().await;
    // 100 viewers at once, each sees the same SET.
    let mut viewers = Vec::new();
    for _ in 0..100 {
        viewers.push(console.viewer("?pattern=live/*").await);
    }
    let (_, overview) = console.get("/api/overview").await;
    assert_eq!(overview["viewers"], 100);
    app.set("live/1", "v", SetOptions::default()).await.unwrap();
    app.set("other/1", "v", SetOptions::default())
        .await
        .unwrap();
    for viewer in &mut viewers {
        let seen = viewer.until(r#""verb":"SET""#).await;
        assert!(
            seen.contains("live/1") && !seen.contains("other/1"),
            "{seen}"
        );
    }
    drop(viewers);
    // A viewer that never reads while a fast app writes: the store goes on, the API answers,
    // and the viewer, once it reads, is told what it skipped.
    let mut stalled = console.small_viewer("").await;
    let started = Instant::now();
    let mut running = tokio::task::JoinSet::new();
    for i in 0..20_000 {
        if running.len() >= 128 {
            running.join_next().await.unwrap().unwrap();
        }
        let app = app.clone();
        running.spawn(async move {
            // Long keys: each event is ~2.7 KB, 54 MB in all, more than any socket holds.
            let key = format!("flood/{}/{}", i % 100, "k".repeat(2000));
            app.set(key, "x", SetOptions::default()).await.unwrap();
        });
    }
    while let Some(done) = running.join_next().await {
        done.unwrap();
    }
    let flood = started.elapsed();
    let (status, _) = console.get("/api/overview").await;
    assert_eq!(status, 200);
    let seen = stalled.until(r#""kind":"skipped""#).await;
    assert!(seen.contains("count"), "{seen}");
    eprintln!("20,000 SETs beside a viewer that did not read: {flood:?}");
    // Filters: only failed requests.
    let mut errors = console.viewer("?outcome=error").await;
    let (status, _) = console
        .post(
            "/api/faults/fail",
            json!({"n": 1, "error": "quota_exceeded", "command": "SET"}),
        )
        .await;
    assert_eq!(status, 200);
    app.get("quiet").await.unwrap();
    let failed = app.set("q", "v", SetOptions::default()).await.unwrap_err();
    assert_eq!(failed.kind().code(), "quota_exceeded");
    let seen = errors.until(r#""error":"quota_exceeded""#).await;
    assert!(!seen.contains(r#""verb":"GET""#), "{seen}");
    assert_eq!(console.get("/api/events?outcome=maybe").await.0, 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_locks_and_faults_from_the_console() {
    let data = tempfile::tempdir().unwrap();
    let console = console(&["--data-dir", data.path().to_str().unwrap()]);
    let app = console.client().await;
    let observer = console.client().await;
    let _notes = observer.observe("watched/1").await.unwrap();
    app.set(
        "lock/a",
        "holder-1",
        SetOptions {
            condition: mqstate::codec::SetCondition::NotExistsOrEqual,
            expiry: Some(Duration::from_secs(30)),
            ..SetOptions::default()
        },
    )
    .await
    .unwrap();
    app.set(
        "kept",
        "v",
        SetOptions {
            persist: true,
            ..SetOptions::default()
        },
    )
    .await
    .unwrap();
    let (status, clients) = console.get("/api/clients").await;
    assert_eq!(status, 200, "{clients}");
    let list = clients["clients"].as_array().unwrap();
    let watcher = list
        .iter()
        .find(|c| c["registration_count"] == 1)
        .unwrap_or_else(|| panic!("{clients}"));
    assert_eq!(watcher["registrations"][0]["text"], "watched/1");
    assert_eq!(watcher["connected"], true);
    assert!(
        watcher["address"]
            .as_str()
            .unwrap()
            .starts_with("127.0.0.1:")
    );
    let lock = &clients["locks"][0];
    assert_eq!(
        (&lock["key"]["text"], &lock["holder"]),
        (&json!("lock/a"), &json!("holder-1"))
    );
    assert!(lock["lease_left_ms"].as_u64().unwrap() <= 30_000);
    // Cut: the clients reconnect by themselves and work on.
    let mut live = console.viewer("").await;
    let (status, cut) = console.post("/api/faults/cut", json!({})).await;
    assert_eq!(status, 200, "{cut}");
    assert!(cut["cut"].as_u64().unwrap() >= 2, "{cut}");
    live.until(r#""fault":"cut""#).await;
    app.set("after-cut", "v", SetOptions::default())
        .await
        .unwrap();
    live.until(r#""kind":"connect""#).await;
    // Pause: bounded, and reported.
    assert_eq!(
        console.post("/api/faults/pause", json!({"ms": 0})).await.0,
        400
    );
    assert_eq!(
        console
            .post("/api/faults/pause", json!({"ms": 700_000}))
            .await
            .0,
        400
    );
    assert_eq!(
        console
            .post("/api/faults/pause", json!({"ms": 300}))
            .await
            .0,
        200
    );
    let paused = Instant::now();
    app.get("during-pause").await.unwrap();
    assert!(
        paused.elapsed() >= Duration::from_millis(200),
        "{:?}",
        paused.elapsed()
    );
    let (status, bad) = console
        .post("/api/faults/fail", json!({"n": 1, "error": "timeout"}))
        .await;
    assert_eq!(
        (status, &bad["error"]["code"]),
        (400, &json!("invalid_argument"))
    );
    // Restart: persisted keys come back, the rest does not; the clients reconnect.
    let (status, restarted) = console.post("/api/faults/restart", json!({})).await;
    assert_eq!(status, 200, "{restarted}");
    assert_eq!(restarted["kept_persisted"], true);
    live.until(r#""fault":"restart""#).await;
    let deadline = Instant::now() + BOUND;
    let kept = loop {
        match app.get("kept").await {
            Ok(kept) => break kept,
            Err(e) if Instant::now() < deadline => {
                eprintln!("waiting for the restarted store: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("the store did not come back: {e}"),
        }
    };
    assert_eq!(&kept.unwrap().value[..], b"v");
    assert_eq!(app.get("lock/a").await.unwrap(), None);
    let (status, shown) = console.get("/api/key?key=kept").await;
    assert_eq!((status, &shown["persisted"]), (200, &json!(true)));
    // Writes from the console work with the new server's credentials.
    assert_eq!(
        console
            .post("/api/keys/set", json!({"key": "n", "value": "v"}))
            .await
            .0,
        200
    );
}
