//! One request at a time through a broker left at its defaults (issue 35). mosquitto as
//! installed keeps Nagle's algorithm on (`set_tcp_nodelay false`): it holds the response
//! behind its PUBACK until the client acknowledges that PUBACK, which Linux's delayed ACK
//! postpones by up to 40 ms, so each request used to take ~44 ms instead of ~0.4 ms. The
//! client and the store re-arm `TCP_QUICKACK` after each read (third_party/rumqttc).
//!
//! The test measures request latencies through two mosquittos side by side, one with Nagle
//! on and one with `set_tcp_nodelay true`, in alternating rounds, and compares the medians:
//! a ratio in one run (100× before the fix, ~1× after), not a speed.

use std::time::{Duration, Instant};

use mqstate::{Client, ClientOptions, ConnectionSettings};
use mqstate_server::{BrokerTarget, Server, ServerConfig};
use mqstate_tests::Mosquitto;
use mqstate_tests::fixture::server_config;

/// The largest ratio of the median latency with Nagle on to the median with it off.
const MAX_RATIO: f64 = 3.0;
/// Requests per round and rounds per broker.
const PER_ROUND: usize = 20;
const ROUNDS: usize = 8;

async fn store_behind(broker: &Mosquitto) -> (mqstate_server::ServerHandle, Client) {
    let config = ServerConfig {
        broker: Some(BrokerTarget::parse(&broker.url()).unwrap()),
        ..server_config()
    };
    let server = Server::start(config).await.expect("server starts");
    let mut settings = ConnectionSettings::new("127.0.0.1", broker.port());
    settings.client_id = Some(format!("nagle-{}", uuid::Uuid::new_v4().simple()));
    let client = Client::connect_with(settings, ClientOptions::default())
        .await
        .expect("client connects");
    (server, client)
}

/// Latencies of `n` requests made one at a time (a SET, then a GET of it).
async fn one_at_a_time(client: &Client, n: usize, out: &mut Vec<Duration>) {
    for i in 0..n {
        let key = format!("k{}", i % 4);
        let start = Instant::now();
        if i % 2 == 0 {
            client.set(&key, "v", Default::default()).await.unwrap();
        } else {
            client.get(&key).await.unwrap();
        }
        out.push(start.elapsed());
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_request_at_a_time_through_mosquitto_with_nagle_on_is_not_held() {
    let nagle = Mosquitto::start_with_nagle().expect("mosquitto starts");
    let nodelay = Mosquitto::start().expect("mosquitto starts");
    let (_s1, slow) = store_behind(&nagle).await;
    let (_s2, fast) = store_behind(&nodelay).await;
    let (mut with_nagle, mut without) = (Vec::new(), Vec::new());
    // Warm-up: connections, sessions and the store's first answers.
    one_at_a_time(&slow, 4, &mut Vec::new()).await;
    one_at_a_time(&fast, 4, &mut Vec::new()).await;
    for _ in 0..ROUNDS {
        one_at_a_time(&slow, PER_ROUND, &mut with_nagle).await;
        one_at_a_time(&fast, PER_ROUND, &mut without).await;
    }
    let (a, b) = (median(with_nagle), median(without));
    let ratio = a.as_secs_f64() / b.as_secs_f64();
    println!("median latency: {a:?} with Nagle on, {b:?} with set_tcp_nodelay true ({ratio:.2}x)");
    assert!(
        ratio <= MAX_RATIO,
        "through a mosquitto with Nagle on a request takes {a:?} (median), {ratio:.1}x the {b:?} \
         with set_tcp_nodelay true (want <= {MAX_RATIO}x)"
    );
}
