//! The quickstart of a crates.io user: set, get and delete a key on the state store at the
//! URL given (scripts/lib/suites/crates starts `mqstate serve` for it). Exits non-zero, with
//! the reason, when any step does not do what it should.

use mqstate::{Client, ConnectionSettings, DelOptions, SetOptions};

async fn run(url: &str) -> Result<(), String> {
    let settings = ConnectionSettings::from_url(url).map_err(|e| e.to_string())?;
    let client = Client::connect(settings).await.map_err(|e| e.to_string())?;
    let set = client
        .set("outside/greeting", "hello", SetOptions::default())
        .await
        .map_err(|e| e.to_string())?;
    if !set.applied {
        return Err("SET was not applied".into());
    }
    let got = client
        .get("outside/greeting")
        .await
        .map_err(|e| e.to_string())?
        .ok_or("GET found nothing after SET")?;
    if &got.value[..] != b"hello" {
        return Err(format!("GET gave {:?}", String::from_utf8_lossy(&got.value)));
    }
    let deleted = client
        .del("outside/greeting", DelOptions::default())
        .await
        .map_err(|e| e.to_string())?;
    if deleted != 1 {
        return Err(format!("DEL deleted {deleted}"));
    }
    if client.get("outside/greeting").await.map_err(|e| e.to_string())?.is_some() {
        return Err("GET found the key after DEL".into());
    }
    client.shutdown().await;
    println!("outside quickstart: set, get, del against {url}");
    Ok(())
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let url = std::env::args().nth(1).unwrap_or_else(|| "mqtt://localhost:1883".into());
    match run(&url).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("outside quickstart failed: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
