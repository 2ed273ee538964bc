//! TLS end to end: a test CA made with openssl, mosquitto with a TLS listener, the state
//! store attached over `mqtts://`, and clients verifying the broker with the CA file — and
//! with mutual TLS, presenting a client certificate.

mod support;

use std::path::{Path, PathBuf};

use mqstate::{Client, ConnectionSettings, ErrorKind, SetOptions, TlsSettings};
use mqstate_server::{BrokerTarget, Server, ServerConfig};
use mqstate_tests::Mosquitto;

fn path(dir: &Path, name: &str) -> PathBuf {
    dir.join(name)
}

async fn tls_round_trip(require_client_cert: bool) {
    let pki = tempfile::tempdir().unwrap();
    let dir = pki.path();
    mqstate_tests::pki::make(dir);
    let mut extra = format!(
        "cafile {}\ncertfile {}\nkeyfile {}\n",
        path(dir, "ca.crt").display(),
        path(dir, "server.crt").display(),
        path(dir, "server.key").display()
    );
    if require_client_cert {
        extra.push_str("require_certificate true\n");
    }
    let mosquitto = Mosquitto::start_with_config(&extra).unwrap();
    let client_tls = TlsSettings {
        ca_file: Some(path(dir, "ca.crt")),
        cert_file: require_client_cert.then(|| path(dir, "client.crt")),
        key_file: require_client_cert.then(|| path(dir, "client.key")),
        key_password_file: None,
    };

    // The service attaches over TLS (it needs a client certificate only for mutual TLS,
    // which its --broker options do not offer: it is exercised without).
    let server = if require_client_cert {
        None
    } else {
        let target = BrokerTarget {
            tls: true,
            ca_file: Some(path(dir, "ca.crt")),
            ..BrokerTarget::parse(&format!("mqtts://localhost:{}", mosquitto.port())).unwrap()
        };
        let config = ServerConfig {
            broker: Some(target),
            ..mqstate_tests::server_config()
        };
        Some(
            Server::start(config)
                .await
                .expect("the service connects over TLS"),
        )
    };

    let mut settings = ConnectionSettings::new("localhost", mosquitto.port());
    settings.tls = Some(client_tls.clone());
    let client = Client::connect(settings.clone())
        .await
        .expect("the client connects over TLS");
    if server.is_some() {
        assert!(
            client
                .set("tls", "secret", SetOptions::default())
                .await
                .unwrap()
                .applied
        );
        assert_eq!(
            &client.get("tls").await.unwrap().unwrap().value[..],
            b"secret"
        );
    } else {
        assert!(client.is_connected());
    }
    client.shutdown().await;

    // Trusting the wrong CA fails, clearly.
    let other = tempfile::tempdir().unwrap();
    mqstate_tests::pki::make(other.path());
    let mut wrong = settings.clone();
    wrong.tls = Some(TlsSettings {
        ca_file: Some(path(other.path(), "ca.crt")),
        ..client_tls.clone()
    });
    let err = Client::connect(wrong).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Tls, "{err:?}");

    if require_client_cert {
        // Without a client certificate the broker refuses the handshake.
        let mut anonymous = settings;
        anonymous.tls = Some(TlsSettings {
            ca_file: Some(path(dir, "ca.crt")),
            ..TlsSettings::default()
        });
        let err = Client::connect(anonymous).await.unwrap_err();
        assert!(err.kind().is_connect(), "{err:?}");
    }
    if let Some(server) = server {
        server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_a_ca_file() {
    tls_round_trip(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls() {
    tls_round_trip(true).await;
}
