//! Leader election against mqstate-server behind mosquitto: three candidates with exactly
//! one leader at any time (sampled locally and as seen in every candidate's leader stream),
//! hand-over by resignation, and take-over after the leader's connection is cut.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use mqstate::lock::{HolderWatch, LossReason};
use mqstate::{Election, ErrorKind};
use mqstate_tests::proxy::TcpProxy;
use support::Env;
use tokio::task::JoinHandle;

const WAIT: Duration = Duration::from_secs(15);

/// Collects every leadership change a candidate's stream reports.
fn record(mut watch: HolderWatch) -> JoinHandle<Vec<Option<String>>> {
    tokio::spawn(async move {
        let mut seen = Vec::new();
        while let Ok(Some(change)) =
            tokio::time::timeout(Duration::from_secs(3), watch.recv()).await
        {
            seen.push(change.holder);
        }
        seen
    })
}

/// Counts samples in which more than one candidate believes it leads.
fn sample_leaders(
    candidates: Vec<Arc<Election>>,
    stop: Arc<AtomicBool>,
) -> JoinHandle<(usize, usize)> {
    tokio::spawn(async move {
        let (mut samples, mut overlaps) = (0, 0);
        while !stop.load(Ordering::SeqCst) {
            let leaders = candidates.iter().filter(|c| c.is_leader()).count();
            samples += 1;
            if leaders > 1 {
                overlaps += 1;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        (samples, overlaps)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_candidates_one_leader_and_resign_hands_over() {
    let env = Env::mosquitto().await;
    let term = Duration::from_millis(600);
    let mut candidates = Vec::new();
    let mut streams = Vec::new();
    for i in 0..3 {
        let client = env.client(&format!("candidate{i}")).await;
        let e = Arc::new(Election::new(&client, "election/pumps", format!("cand-{i}")).unwrap());
        streams.push(record(e.watch_leader().await.unwrap()));
        candidates.push(e);
    }
    // Another election's changes must not appear in these streams.
    let other_client = env.client("other").await;
    let other = Election::new(&other_client, "election/valves", "cand-x").unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let sampler = sample_leaders(candidates.clone(), Arc::clone(&stop));
    let elected = Arc::new(AtomicUsize::new(0));
    let campaigns: Vec<_> = candidates
        .iter()
        .map(|c| {
            let (c, elected) = (Arc::clone(c), Arc::clone(&elected));
            tokio::spawn(async move {
                c.campaign_for(term, WAIT * 2).await.expect("elected");
                elected.fetch_add(1, Ordering::SeqCst);
                c
            })
        })
        .collect();
    assert!(other.try_campaign(term).await.unwrap());

    let mut order = Vec::new();
    let mut pending = campaigns;
    while !pending.is_empty() {
        let (leader, rest) = first_finished(pending).await;
        pending = rest;
        assert!(leader.is_leader());
        assert_eq!(
            leader.leader().await.unwrap().as_deref(),
            Some(leader.candidate_id())
        );
        // The term outlives several leases by renewal; the others keep waiting.
        tokio::time::sleep(term * 2).await;
        assert!(leader.is_leader(), "renewal keeps the term");
        assert!(leader.renewals() >= 1);
        assert_eq!(elected.load(Ordering::SeqCst), order.len() + 1);
        let leaders = candidates.iter().filter(|c| c.is_leader()).count();
        assert_eq!(leaders, 1, "exactly one leader");
        order.push(Some(leader.candidate_id().to_owned()));
        assert!(leader.resign().await.unwrap());
        assert!(!leader.is_leader());
        assert_eq!(leader.lost().await, None, "resigned, not lost");
    }
    stop.store(true, Ordering::SeqCst);
    let (samples, overlaps) = sampler.await.unwrap();
    assert!(samples > 0);
    assert_eq!(overlaps, 0, "two candidates believed they led at once");

    // Every candidate saw the same leaders, each followed by a vacancy.
    let mut expected = Vec::new();
    expected.push(None);
    for leader in &order {
        expected.push(leader.clone());
        expected.push(None);
    }
    for stream in streams {
        let seen = stream.await.unwrap();
        assert_eq!(seen, expected, "leader stream of one candidate");
    }
    assert!(other.resign().await.unwrap());
}

/// Waits for the first of several tasks to finish; returns its output and the rest.
async fn first_finished<T>(mut tasks: Vec<JoinHandle<T>>) -> (T, Vec<JoinHandle<T>>) {
    loop {
        if let Some(i) = tasks.iter().position(|t| t.is_finished()) {
            let task = tasks.swap_remove(i);
            return (task.await.expect("task ran"), tasks);
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The next leadership change, within the test's patience.
async fn next_change(watch: &mut HolderWatch) -> Option<String> {
    tokio::time::timeout(WAIT, watch.recv())
        .await
        .expect("a change in time")
        .expect("open")
        .holder
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_leader_loses_and_another_candidate_takes_over() {
    let env = Env::mosquitto().await;
    let term = Duration::from_millis(800);
    let proxy = TcpProxy::start(([127, 0, 0, 1], env.port).into())
        .await
        .unwrap();
    let a_client = mqstate::Client::connect(env.settings_on("a", proxy.port()))
        .await
        .unwrap();
    let b_client = env.client("b").await;
    let a = Election::new(&a_client, "election/crash", "node-a").unwrap();
    let b = Arc::new(Election::new(&b_client, "election/crash", "node-b").unwrap());
    assert!(a.try_campaign(term).await.unwrap());
    assert!(!b.try_campaign(term).await.unwrap());
    assert_eq!(b.renewals(), 0, "a failed campaign renews nothing");
    let mut watch = b.watch_leader().await.unwrap();
    assert_eq!(next_change(&mut watch).await.as_deref(), Some("node-a"));

    let waiting = {
        let b = Arc::clone(&b);
        tokio::spawn(async move { b.campaign_for(term, WAIT).await })
    };
    proxy.set_accepting(false);
    proxy.cut();

    waiting
        .await
        .unwrap()
        .expect("b becomes leader after a's term");
    assert!(b.is_leader());
    assert!(
        !a.is_leader(),
        "a no longer believes it leads once b was elected"
    );
    let reason = tokio::time::timeout(WAIT, a.lost())
        .await
        .expect("a learns it lost")
        .expect("lost, not resigned");
    match reason {
        LossReason::RenewalFailed(e) => assert!(
            matches!(e.kind(), ErrorKind::Timeout | ErrorKind::ConnectionLost),
            "{e}"
        ),
        LossReason::Expired => {}
        LossReason::TakenOver => panic!("a could not reach the service to see b"),
    }
    assert_eq!(b.leader().await.unwrap().as_deref(), Some("node-b"));
    assert_eq!(next_change(&mut watch).await, None, "a's term expired");
    assert_eq!(next_change(&mut watch).await.as_deref(), Some("node-b"));

    // Back online, a finds b leading and does not disturb it.
    proxy.set_accepting(true);
    support::eventually(WAIT, || async { a_client.is_connected() }).await;
    assert!(!a.try_campaign(term).await.unwrap());
    assert!(b.is_leader());
    assert!(b.resign().await.unwrap());
}
