//! `mqstate demo`: starts the local state store with its embedded broker on a free port and
//! walks through the API with two clients, printing what happens. Needs nothing installed.

use std::time::Duration;

use anyhow::Context;
use mqstate::codec::{KeyEvent, SetCondition};
use mqstate::{Client, ConnectionSettings, DelOptions, ErrorKind, SetOptions, VdelOutcome};
use mqstate_server::{Server, ServerConfig};

/// Arguments of `mqstate demo`.
#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// Run against this broker (with a state store behind it) instead of an embedded one.
    #[arg(long)]
    pub url: Option<String>,
}

fn step(title: &str) {
    outln!("\n== {title}");
}

fn show(label: &str, text: impl std::fmt::Display) {
    outln!("   {label:<34} {text}");
}

fn version(v: &Option<mqstate::Hlc>) -> String {
    v.as_ref().map_or("-".into(), ToString::to_string)
}

/// Runs the walkthrough.
pub async fn run(args: DemoArgs) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    let (server, settings) = match &args.url {
        Some(url) => (None, ConnectionSettings::from_url(url)?),
        None => {
            let server = Server::start(ServerConfig::ephemeral())
                .await
                .context("starting the embedded state store")?;
            let addr = server.addr();
            (
                Some(server),
                ConnectionSettings::new(addr.ip().to_string(), addr.port()),
            )
        }
    };
    step("a local state store");
    match &server {
        Some(s) => show(
            "embedded broker + store on",
            format!("{} (up in {:.0?})", s.addr(), started.elapsed()),
        ),
        None => show("using the broker at", args.url.as_deref().unwrap_or("")),
    }

    let app = Client::connect(settings.clone())
        .await
        .context("connecting")?;
    let other = Client::connect(settings).await.context("connecting")?;
    show("client A connected as", app.client_id());
    show("client B connected as", other.client_id());

    step("set, get, versions");
    let set = app
        .set("demo/greeting", "hello", SetOptions::default())
        .await?;
    show(
        "A: SET demo/greeting = hello",
        format!("applied, version {}", version(&set.version)),
    );
    let got = other
        .get("demo/greeting")
        .await?
        .context("the key was just set")?;
    show(
        "B: GET demo/greeting",
        format!(
            "{:?}, version {}",
            String::from_utf8_lossy(&got.value),
            version(&got.version)
        ),
    );
    let nx = SetOptions {
        condition: SetCondition::NotExists,
        ..SetOptions::default()
    };
    let refused = other.set("demo/greeting", "hi", nx).await?;
    show(
        "B: SET NX demo/greeting = hi",
        format!("applied = {}", refused.applied),
    );

    step("observe a key from A while B changes it");
    let mut changes = app.observe("demo/sensor").await?;
    for reading in ["20.5", "21.0"] {
        other
            .set("demo/sensor", reading, SetOptions::default())
            .await?;
    }
    let expiring = SetOptions {
        expiry: Some(Duration::from_millis(300)),
        ..SetOptions::default()
    };
    other
        .set("demo/sensor", "21.4 (expires in 300 ms)", expiring)
        .await?;
    for _ in 0..4 {
        let n = tokio::time::timeout(Duration::from_secs(5), changes.recv())
            .await
            .context("waiting for a notification")?
            .context("the observer closed")?;
        let what = match &n.event {
            KeyEvent::Set(v) => format!("SET {:?}", String::from_utf8_lossy(v)),
            KeyEvent::Delete => "DELETE (the expiry fired)".to_owned(),
        };
        show(
            "A: notification",
            format!("{what} @ {}", version(&n.version)),
        );
    }
    drop(changes);

    step("fencing tokens keep stale writers out");
    let token = app.clock().tick()?;
    let fenced = SetOptions {
        fencing_token: Some(token.clone()),
        ..SetOptions::default()
    };
    app.set("demo/config", "v1", fenced).await?;
    show("A: SET demo/config with token", token.to_string());
    match other
        .set("demo/config", "rogue", SetOptions::default())
        .await
    {
        Err(e) if matches!(e.kind(), ErrorKind::Store(_)) => {
            show("B: SET demo/config without token", format!("refused: {e}"))
        }
        other => anyhow::bail!("expected a fencing error, got {other:?}"),
    }

    step("conditional delete");
    let vdel = other
        .vdel("demo/greeting", "not-hello", DelOptions::default())
        .await?;
    show("B: VDEL demo/greeting = not-hello", format!("{vdel:?}"));
    let vdel = other
        .vdel("demo/greeting", "hello", DelOptions::default())
        .await?;
    show("B: VDEL demo/greeting = hello", format!("{vdel:?}"));
    anyhow::ensure!(vdel == VdelOutcome::Deleted, "VDEL should have deleted");

    app.shutdown().await;
    other.shutdown().await;
    if let Some(server) = server {
        server.shutdown().await;
    }
    outln!("\ndone in {:.1?}", started.elapsed());
    Ok(())
}
