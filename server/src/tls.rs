//! TLS (`aspen serve --tls-cert FILE --tls-key FILE`), as PostgreSQL's `ssl = on`.
//!
//! A client that sends SSLRequest on a TCP connection gets `S` and a TLS handshake (rustls,
//! TLS 1.2 and 1.3); the startup packet and everything after it then go through TLS. Without a
//! certificate, and on the Unix-domain socket, SSLRequest is answered `N` and the client may
//! go on in the clear (libpq's default `sslmode=prefer` does). Over TLS, SCRAM also offers
//! `SCRAM-SHA-256-PLUS`, which binds the exchange to the server's certificate
//! (`tls-server-end-point`), so a client with `channel_binding=require` knows that no one in the
//! middle relayed its login. Bytes a client sends after SSLRequest before it has read the
//! answer are refused (08P01), as PostgreSQL does since CVE-2021-23214.

use std::path::Path;
use std::sync::Arc;

use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::TlsAcceptor;

/// What a server with TLS holds: the acceptor and its certificate chain in PEM (for SCRAM's
/// channel binding).
#[derive(Clone)]
pub struct Tls {
    /// Runs the server side of a handshake.
    pub acceptor: TlsAcceptor,
    /// The certificate file as read.
    pub cert_pem: Vec<u8>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tls")
    }
}

impl Tls {
    /// Reads a PEM certificate chain (the server's certificate first) and its PEM private key.
    pub fn from_files(cert: &Path, key: &Path) -> Result<Tls, String> {
        let cert_pem =
            std::fs::read(cert).map_err(|e| format!("cannot read {}: {e}", cert.display()))?;
        let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert_pem)
            .collect::<Result<_, _>>()
            .map_err(|e| format!("{}: not a PEM certificate chain: {e}", cert.display()))?;
        if chain.is_empty() {
            return Err(format!("{}: no certificate in it", cert.display()));
        }
        let key = PrivateKeyDer::from_pem_file(key)
            .map_err(|e| format!("{}: not a PEM private key: {e}", key.display()))?;
        let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
        let config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(|e| format!("the certificate and key do not go together: {e}"))?;
        Ok(Tls { acceptor: TlsAcceptor::from(Arc::new(config)), cert_pem })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unusable_files_are_refused_with_a_reason() {
        let dir = std::env::temp_dir().join(format!("aspen-tls-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
        let missing = Tls::from_files(&dir.join("nope.pem"), &key).unwrap_err();
        assert!(missing.contains("cannot read"), "{missing}");
        std::fs::write(&cert, "not pem at all").unwrap();
        std::fs::write(&key, "not pem either").unwrap();
        let empty = Tls::from_files(&cert, &key).unwrap_err();
        assert!(empty.contains("no certificate"), "{empty}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
