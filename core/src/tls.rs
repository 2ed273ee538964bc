//! TLS towards a broker, one implementation for the client and the local state store's
//! `--broker` connection: which certificates verify the broker (a CA file, or the system's
//! root certificates when none is given), and the client certificate for mutual TLS.
//!
//! The system roots are what `rustls-native-certs` finds (the platform's store; on Linux the
//! usual bundle files, or the files `SSL_CERT_FILE` / `SSL_CERT_DIR` name). A certificate of
//! that store that cannot be parsed is skipped, not fatal; a store with no usable
//! certificate is an error that names the `ca_file` setting.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rumqttc::TlsConfiguration;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::error::{Error, ErrorKind};

/// The certificates a TLS connection trusts to verify the broker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Roots {
    /// The CA certificates of this PEM file.
    CaFile(PathBuf),
    /// The system's root certificates (this many were loaded).
    System(usize),
}

impl Roots {
    /// The roots that `ca_file` selects, before any are loaded (for messages about a
    /// connection whose roots are known only by its settings).
    pub fn of(ca_file: Option<&Path>) -> Roots {
        match ca_file {
            Some(path) => Roots::CaFile(path.to_owned()),
            None => Roots::System(0),
        }
    }
}

impl fmt::Display for Roots {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Roots::CaFile(path) => write!(f, "the CA file {}", path.display()),
            Roots::System(0) => f.write_str("the system's root certificates (no CA file given)"),
            Roots::System(n) => write!(
                f,
                "the system's root certificates ({n} loaded; no CA file given)"
            ),
        }
    }
}

/// A PEM client certificate chain and its private key (their file contents).
pub type ClientAuth = (Vec<u8>, Vec<u8>);

/// Loads the system's root certificates, skipping any that do not parse.
fn system_roots() -> Result<rustls::RootCertStore, Error> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = rustls::RootCertStore::empty();
    let (added, _skipped) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        let why = found
            .errors
            .first()
            .map(|e| format!(" ({e})"))
            .unwrap_or_default();
        return Err(Error::new(
            ErrorKind::Tls,
            format!(
                "TLS without a CA file trusts the system's root certificates, and none were \
                 found{why}: give the broker's CA with ca_file (AIO_TLS_CA_FILE), or set \
                 SSL_CERT_FILE"
            ),
        ));
    }
    Ok(roots)
}

fn client_auth_config(
    builder: rustls::ConfigBuilder<rustls::ClientConfig, rustls::client::WantsClientCert>,
    client_auth: Option<ClientAuth>,
) -> Result<rustls::ClientConfig, Error> {
    let Some((cert, key)) = client_auth else {
        return Ok(builder.with_no_client_auth());
    };
    let bad = |what: &str, e: &dyn fmt::Display| {
        Error::invalid_argument(format!("the client {what} is not usable PEM: {e}"))
    };
    let chain = CertificateDer::pem_slice_iter(&cert)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad("certificate", &e))?;
    if chain.is_empty() {
        return Err(Error::invalid_argument(
            "the client certificate file holds no PEM certificate",
        ));
    }
    let key = PrivateKeyDer::from_pem_slice(&key).map_err(|e| bad("private key", &e))?;
    builder
        .with_client_auth_cert(chain, key)
        .map_err(|e| Error::new(ErrorKind::Tls, format!("the client certificate: {e}")))
}

/// The TLS configuration of a connection to a broker: `ca` (the CA file's contents, read by
/// the caller from `ca_file`) or else the system roots, and an optional client certificate.
/// Also says which roots it chose, for the messages of a failed handshake.
pub fn client_config(
    ca_file: Option<(&Path, Vec<u8>)>,
    client_auth: Option<ClientAuth>,
) -> Result<(TlsConfiguration, Roots), Error> {
    // rumqttc is built without a default crypto provider: install ring's once.
    let _ = rustls::crypto::ring::default_provider().install_default();
    if let Some((path, ca)) = ca_file {
        let config = TlsConfiguration::Simple {
            ca,
            alpn: None,
            client_auth,
        };
        return Ok((config, Roots::CaFile(path.to_owned())));
    }
    let roots = system_roots()?;
    let count = roots.len();
    let builder = rustls::ClientConfig::builder().with_root_certificates(roots);
    let config = client_auth_config(builder, client_auth)?;
    Ok((
        TlsConfiguration::Rustls(Arc::new(config)),
        Roots::System(count),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_say_where_they_come_from() {
        assert_eq!(
            Roots::of(Some(Path::new("/ca.pem"))).to_string(),
            "the CA file /ca.pem"
        );
        assert!(
            Roots::of(None)
                .to_string()
                .contains("system's root certificates")
        );
        assert!(Roots::System(140).to_string().contains("140 loaded"));
    }

    #[test]
    fn a_ca_file_is_used_as_given() {
        let (config, roots) =
            client_config(Some((Path::new("/ca.pem"), b"pem".to_vec())), None).unwrap();
        assert!(matches!(config, TlsConfiguration::Simple { .. }));
        assert_eq!(roots, Roots::CaFile(PathBuf::from("/ca.pem")));
    }
}
