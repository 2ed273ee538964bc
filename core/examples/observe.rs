//! Observe a key: print every change until Ctrl-C (or 10 changes).
//!
//! ```sh
//! mqstate serve &
//! cargo run -p mqstate --example observe -- mqtt://localhost:1883 my/key
//! # elsewhere: change my/key with any client
//! ```

use mqstate::codec::KeyEvent;
use mqstate::{Client, ConnectionSettings, SetOptions};

#[tokio::main]
async fn main() -> Result<(), mqstate::Error> {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .unwrap_or_else(|| "mqtt://localhost:1883".into());
    let key = args.next().unwrap_or_else(|| "observe/demo".into());
    let client = Client::connect(ConnectionSettings::from_url(&url)?).await?;
    let mut changes = client.observe(&key).await?;
    println!("observing {key:?} on {url}; changing it once myself");
    client
        .set(&key, "first value", SetOptions::default())
        .await?;

    for _ in 0..10 {
        let next = tokio::select! {
            n = changes.recv() => n,
            _ = tokio::signal::ctrl_c() => break,
        };
        let Some(n) = next else { break };
        let version = n.version.map_or("-".into(), |v| v.to_string());
        match n.event {
            KeyEvent::Set(value) => println!(
                "{version}  SET {:?}{}",
                String::from_utf8_lossy(&value),
                if n.resync { " (resync)" } else { "" }
            ),
            KeyEvent::Delete => println!(
                "{version}  DELETE{}",
                if n.resync { " (resync)" } else { "" }
            ),
        }
    }
    drop(changes);
    client.shutdown().await;
    Ok(())
}
