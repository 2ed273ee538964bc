//! Leader election: three candidates campaign for one election; the leader renews its term,
//! resigns after a while, and the next candidate takes over. Every change is printed as the
//! candidates' leader stream reports it.
//!
//! ```sh
//! mqstate serve &                                   # a local state store on :1883
//! cargo run -p mqstate --example election -- mqtt://localhost:1883
//! ```

use std::sync::Arc;
use std::time::Duration;

use mqstate::{Client, ConnectionSettings, Election};

#[tokio::main]
async fn main() -> Result<(), mqstate::Error> {
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "mqtt://localhost:1883".into());
    let settings = ConnectionSettings::from_url(&url)?;
    let term = Duration::from_millis(1200);

    let mut candidates = Vec::new();
    for name in ["edge-a", "edge-b", "edge-c"] {
        let client = Client::connect(settings.clone()).await?;
        candidates.push(Arc::new(Election::new(&client, "example/leader", name)?));
    }
    println!("connected to {url}; 3 candidates for example/leader (term {term:?})\n");

    let mut watch = candidates[0].watch_leader().await?;
    let printer = tokio::spawn(async move {
        while let Some(change) = watch.recv().await {
            match change.holder {
                Some(leader) => println!("  [stream] leader is now {leader}"),
                None => println!("  [stream] no leader"),
            }
        }
    });

    let (tx, mut elected) = tokio::sync::mpsc::unbounded_channel();
    for candidate in &candidates {
        let (candidate, tx) = (Arc::clone(candidate), tx.clone());
        tokio::spawn(async move {
            let outcome = candidate.campaign_for(term, Duration::from_secs(60)).await;
            let _ = tx.send((candidate, outcome));
        });
    }
    drop(tx);

    while let Some((leader, outcome)) = elected.recv().await {
        let token = outcome?;
        println!(
            "{} is leader (fencing token {token})",
            leader.candidate_id()
        );
        tokio::time::sleep(term * 2).await;
        println!(
            "{} after 2 terms: still leader = {}, {} renewals, leader() = {:?}",
            leader.candidate_id(),
            leader.is_leader(),
            leader.renewals(),
            leader.leader().await?
        );
        let others = candidates
            .iter()
            .filter(|c| c.candidate_id() != leader.candidate_id())
            .map(|c| format!("{}={}", c.candidate_id(), c.is_leader()))
            .collect::<Vec<_>>();
        println!("  the others believe they lead: {}", others.join(", "));
        println!(
            "{} resigns: {}",
            leader.candidate_id(),
            leader.resign().await?
        );
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    printer.abort();
    for candidate in candidates {
        candidate.lock().client().shutdown().await;
    }
    Ok(())
}
