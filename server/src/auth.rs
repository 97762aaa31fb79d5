//! Client authentication: which method a connection must pass, and SCRAM-SHA-256 against the
//! roles of the catalog.
//!
//! ```text
//!   connection from            method (aspen serve flags)
//!   Unix socket, 127/8, ::1    --auth-local   trust (default) | scram-sha-256 | reject
//!   any other address          --auth-remote  scram-sha-256 (default) | trust | reject
//! ```
//!
//! `trust` lets any role name in (a role that exists but has NOLOGIN is refused, as in
//! PostgreSQL; a name that is no role is let in, unlike PostgreSQL). `scram-sha-256` runs
//! SASL SCRAM-SHA-256 (RFC 5802 / 7677, no channel binding: Aspen has no TLS) with pgwire's
//! server side, against the verifier `CREATE`/`ALTER ROLE … PASSWORD` stored
//! ([`catalog::Verifier`]). A role without a password, or a name that is no role, runs the
//! same exchange against a made-up verifier and fails at its end, so that a client cannot tell
//! which names exist; every failure is PostgreSQL's FATAL `28P01` `password authentication
//! failed for user "…"`. The handshake itself lives in `handler::on_startup`.

use std::fmt::Debug;
use std::net::SocketAddr;
use std::sync::Arc;

use async_trait::async_trait;
use pgwire::api::auth::sasl::scram::{ScramAuth, ScramSecret};
use pgwire::api::auth::{AuthSource, LoginInfo, Password};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use ring::digest;
use sql::Database;

/// An authentication method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Anyone may connect as any role that may log in.
    Trust,
    /// The role's password, by SCRAM-SHA-256.
    ScramSha256,
    /// Nobody may connect.
    Reject,
}

impl std::str::FromStr for Method {
    type Err = String;

    fn from_str(s: &str) -> Result<Method, String> {
        match s {
            "trust" => Ok(Method::Trust),
            "scram-sha-256" => Ok(Method::ScramSha256),
            "reject" => Ok(Method::Reject),
            _ => Err(format!("expected trust, scram-sha-256 or reject, got \"{s}\"")),
        }
    }
}

/// The methods by where a connection comes from (module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Methods {
    /// Unix-domain socket and loopback addresses.
    pub local: Method,
    /// Every other address.
    pub remote: Method,
}

impl Default for Methods {
    /// `aspen serve`'s defaults.
    fn default() -> Methods {
        Methods { local: Method::Trust, remote: Method::ScramSha256 }
    }
}

impl Methods {
    /// The method for a connection from `peer` (`None`: a Unix-domain socket).
    pub fn for_peer(&self, peer: Option<SocketAddr>) -> Method {
        match peer {
            Some(addr) if !addr.ip().to_canonical().is_loopback() => self.remote,
            _ => self.local,
        }
    }
}

/// The SCRAM server side over the catalog's roles: plain, and with channel binding for TLS
/// connections once the server has a certificate (`crate::tls`). Both read one [`Roles`], so a
/// made-up verifier is the same over either.
pub(crate) struct Scram {
    roles: Arc<Roles>,
    plain: ScramAuth,
    plus: Option<ScramAuth>,
}

impl Scram {
    pub(crate) fn new(db: Arc<Database>) -> Scram {
        let mut mock_key = [0u8; 32];
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut mock_key)
            .expect("the system's random source works");
        let roles = Arc::new(Roles { db, mock_key });
        Scram { plain: ScramAuth::new(roles.clone()), roles, plus: None }
    }

    /// Offers SCRAM-SHA-256-PLUS over TLS, bound to the certificate in `cert_pem`.
    pub(crate) fn bind_to_certificate(&mut self, cert_pem: &[u8]) -> Result<(), String> {
        let mut plus = ScramAuth::new(self.roles.clone());
        plus.configure_certificate(cert_pem).map_err(|e| e.to_string())?;
        self.plus = Some(plus);
        Ok(())
    }

    /// The SCRAM for a connection, over TLS (`secure`) or not.
    pub(crate) fn for_connection(&self, secure: bool) -> &ScramAuth {
        match &self.plus {
            Some(plus) if secure => plus,
            _ => &self.plain,
        }
    }
}

/// The catalog's roles as pgwire's credential source.
struct Roles {
    db: Arc<Database>,
    /// Makes the salt of a made-up verifier, which must be the same at every attempt for the
    /// same name (else a client could tell that the name is no role) and unpredictable.
    mock_key: [u8; 32],
}

impl Debug for Roles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Roles")
    }
}

#[async_trait]
impl AuthSource for Roles {
    async fn get_password(&self, login: &LoginInfo) -> PgWireResult<Password> {
        // Only SCRAM is offered, which asks `get_scram_secret`.
        Err(PgWireError::InvalidPassword(login.user().unwrap_or_default().to_owned()))
    }

    async fn get_scram_secret(&self, login: &LoginInfo) -> PgWireResult<(ScramSecret, Option<()>)> {
        let user = login.user().unwrap_or_default();
        let verifier = self.db.catalog().role(user).and_then(|r| r.verifier());
        let verifier = verifier.unwrap_or_else(|| {
            let mut seed = self.mock_key.to_vec();
            seed.extend_from_slice(user.as_bytes());
            let salt = digest::digest(&digest::SHA256, &seed).as_ref()[..16].to_vec();
            // Random keys: no password's proof matches them.
            let mut keys = [0u8; 64];
            ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut keys)
                .expect("the system's random source works");
            catalog::Verifier {
                iterations: catalog::roles::SCRAM_ITERATIONS,
                salt,
                stored_key: keys[..32].to_vec(),
                server_key: keys[32..].to_vec(),
            }
        });
        let secret = ScramSecret::Verifier {
            salt: verifier.salt,
            iterations: verifier.iterations as usize,
            stored_key: verifier.stored_key,
            server_key: verifier.server_key,
        };
        Ok((secret, None))
    }
}

/// A FATAL error that ends the connection during startup.
pub(crate) fn fatal(code: &str, message: String) -> PgWireError {
    let mut info = ErrorInfo::new("FATAL".to_owned(), code.to_owned(), message);
    info.severity_nonlocalized = Some("FATAL".to_owned());
    PgWireError::UserError(Box::new(info))
}

/// What a failed SCRAM step tells the client: a malformed message is a protocol violation;
/// anything else, PostgreSQL's one message for a failed password.
pub(crate) fn failed(user: &str, error: PgWireError) -> PgWireError {
    match error {
        PgWireError::InvalidScramMessage(_) | PgWireError::FailedToCoercePasswordMessage => {
            fatal("08P01", "malformed SCRAM message".to_owned())
        }
        PgWireError::UnsupportedSASLAuthMethod(_) => {
            fatal("08P01", "client selected an invalid SASL authentication mechanism".to_owned())
        }
        PgWireError::IoError(e) => PgWireError::IoError(e),
        _ => fatal("28P01", format!("password authentication failed for user \"{user}\"")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_by_peer() {
        let m = Methods::default();
        let at = |s: &str| Some(s.parse::<SocketAddr>().unwrap());
        assert_eq!(m.for_peer(None), Method::Trust);
        assert_eq!(m.for_peer(at("127.0.0.1:5")), Method::Trust);
        assert_eq!(m.for_peer(at("127.3.2.1:5")), Method::Trust);
        assert_eq!(m.for_peer(at("[::1]:5")), Method::Trust);
        assert_eq!(m.for_peer(at("[::ffff:127.0.0.1]:5")), Method::Trust);
        assert_eq!(m.for_peer(at("10.0.0.7:5")), Method::ScramSha256);
        assert_eq!(m.for_peer(at("[::ffff:10.0.0.7]:5")), Method::ScramSha256);
        assert_eq!("reject".parse::<Method>(), Ok(Method::Reject));
        assert!("md5".parse::<Method>().is_err());
    }

    #[test]
    fn failures_say_only_what_postgresql_says() {
        let code = |e: PgWireError| match e {
            PgWireError::UserError(info) => (info.code, info.message),
            other => panic!("{other:?}"),
        };
        let malformed = failed("bob", PgWireError::InvalidScramMessage("x".into()));
        assert_eq!(code(malformed).0, "08P01");
        let wrong = failed("bob", PgWireError::InvalidPassword("bob".into()));
        assert_eq!(
            code(wrong),
            ("28P01".into(), "password authentication failed for user \"bob\"".into())
        );
        // Anything else about the exchange is the same refusal (no hint of why).
        assert_eq!(code(failed("bob", PgWireError::InvalidSASLState)).0, "28P01");
    }
}
