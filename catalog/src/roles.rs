//! Roles: who may log in, and the SCRAM-SHA-256 verifier their password is checked against.
//!
//! Roles live in the catalog's snapshots ([`Snapshot::roles`](crate::Snapshot::roles)), but
//! not in transactional DDL batches: each change is one synced store write of the changed
//! role's key (`role/<name>`, the [`Role`] as JSON) or its deletion, with the next catalog
//! version, published at once. A role change is therefore not transactional; the SQL layer
//! refuses role statements inside a transaction block.
//!
//! The bootstrap superuser `postgres` (OID 10, as PostgreSQL's `BOOTSTRAP_SUPERUSERID`) exists
//! in every catalog: when the store holds no `role/postgres` key it is the default below, and it
//! is written once it changes (e.g. gains a password). It cannot be dropped.
//!
//! A password is never stored: [`Verifier`] is PostgreSQL's `SCRAM-SHA-256$<iterations>:<salt>$
//! <StoredKey>:<ServerKey>` (RFC 5802, RFC 7677), computed from the password with a random salt
//! or given ready-made by the client (libpq's `PQencryptPasswordConn`, psql's `\password`).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use ring::{digest, hmac, pbkdf2};
use serde::{Deserialize, Serialize};

use crate::Error;

/// The bootstrap superuser's name.
pub const BOOTSTRAP_ROLE: &str = "postgres";
/// The bootstrap superuser's OID (PostgreSQL's `BOOTSTRAP_SUPERUSERID`).
pub const BOOTSTRAP_ROLE_OID: u32 = 10;
/// The first OID given to a created role (PostgreSQL's `FirstNormalObjectId`).
const FIRST_ROLE_OID: u32 = 16384;
/// Prefix of role keys in the store.
pub(crate) const ROLE_PREFIX: &str = "role/";
/// PBKDF2 iterations of the verifiers Aspen computes (PostgreSQL's `scram_iterations`).
pub const SCRAM_ITERATIONS: u32 = 4096;

/// A role, as `pg_authid` describes it (the attributes Aspen keeps).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Role {
    /// The name (case-folded unless quoted).
    pub name: String,
    /// The OID (`pg_authid.oid`).
    pub oid: u32,
    /// SUPERUSER. Aspen checks no privileges: every role may do everything (README).
    pub superuser: bool,
    /// CREATEDB.
    pub create_db: bool,
    /// CREATEROLE.
    pub create_role: bool,
    /// INHERIT.
    pub inherit: bool,
    /// LOGIN: whether the role may connect.
    pub login: bool,
    /// REPLICATION.
    pub replication: bool,
    /// BYPASSRLS.
    pub bypass_rls: bool,
    /// The password's verifier, in PostgreSQL's text form; `None`: no password (password
    /// authentication always fails).
    pub password: Option<String>,
}

impl Role {
    /// A new role with PostgreSQL's defaults (`CREATE ROLE`: NOLOGIN, INHERIT; `CREATE USER`:
    /// LOGIN). Its OID is given by [`Roles::create`].
    pub fn new(name: String, login: bool) -> Role {
        Role {
            name,
            oid: 0,
            superuser: false,
            create_db: false,
            create_role: false,
            inherit: true,
            login,
            replication: false,
            bypass_rls: false,
            password: None,
        }
    }

    fn bootstrap() -> Role {
        Role {
            name: BOOTSTRAP_ROLE.to_owned(),
            oid: BOOTSTRAP_ROLE_OID,
            superuser: true,
            create_db: true,
            create_role: true,
            inherit: true,
            login: true,
            replication: true,
            bypass_rls: true,
            password: None,
        }
    }

    /// The role's verifier, if it has a password in SCRAM form.
    pub fn verifier(&self) -> Option<Verifier> {
        self.password.as_deref().and_then(Verifier::parse)
    }
}

/// The roles of a catalog: the map in memory, kept equal to the store's `role/` keys (plus the
/// bootstrap role's default). See the module doc.
#[derive(Debug)]
pub(crate) struct Roles {
    by_name: BTreeMap<String, Role>,
}

impl Roles {
    /// The roles stored under `role/` keys (`entries` holds only those), with the bootstrap
    /// role added if it is not stored.
    pub(crate) fn load(entries: Vec<(String, Vec<u8>)>) -> Result<Roles, Error> {
        let mut by_name = BTreeMap::new();
        for (key, value) in entries {
            let role: Role =
                serde_json::from_slice(&value).map_err(|e| Error::Store(format!("{key}: {e}")))?;
            if key != role_key(&role.name) {
                return Err(Error::Store(format!("{key} holds role {}", role.name)));
            }
            by_name.insert(role.name.clone(), role);
        }
        by_name.entry(BOOTSTRAP_ROLE.to_owned()).or_insert_with(Role::bootstrap);
        Ok(Roles { by_name })
    }

    /// The roles of a snapshot, to change.
    pub(crate) fn of(roles: &[Role]) -> Roles {
        Roles { by_name: roles.iter().map(|r| (r.name.clone(), r.clone())).collect() }
    }

    pub(crate) fn get(&self, name: &str) -> Option<&Role> {
        self.by_name.get(name)
    }

    pub(crate) fn all(&self) -> impl Iterator<Item = &Role> {
        self.by_name.values()
    }

    /// Checks that `role` may be created and gives it its OID; the caller stores it, then
    /// [`Roles::put`]s it.
    pub(crate) fn prepare_create(&self, mut role: Role) -> Result<Role, Error> {
        if self.by_name.contains_key(&role.name) {
            return Err(Error::DuplicateObject(format!("role \"{}\" already exists", role.name)));
        }
        let last = self.by_name.values().map(|r| r.oid).max().unwrap_or(0);
        role.oid = last.max(FIRST_ROLE_OID - 1) + 1;
        Ok(role)
    }

    /// The role named `name`, or PostgreSQL's 42704.
    pub(crate) fn existing(&self, name: &str) -> Result<&Role, Error> {
        self.by_name
            .get(name)
            .ok_or_else(|| Error::UndefinedObject(format!("role \"{name}\" does not exist")))
    }

    pub(crate) fn put(&mut self, role: Role) {
        self.by_name.insert(role.name.clone(), role);
    }

    pub(crate) fn remove(&mut self, name: &str) {
        self.by_name.remove(name);
    }
}

/// The store key of role `name`.
pub(crate) fn role_key(name: &str) -> String {
    format!("{ROLE_PREFIX}{name}")
}

/// A SCRAM-SHA-256 verifier: what the server keeps to check a password without knowing it.
#[derive(Clone, PartialEq, Eq)]
pub struct Verifier {
    /// PBKDF2 iterations.
    pub iterations: u32,
    /// The salt.
    pub salt: Vec<u8>,
    /// `H(HMAC(SaltedPassword, "Client Key"))`.
    pub stored_key: Vec<u8>,
    /// `HMAC(SaltedPassword, "Server Key")`.
    pub server_key: Vec<u8>,
}

impl fmt::Debug for Verifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Verifier").field("iterations", &self.iterations).finish_non_exhaustive()
    }
}

impl Verifier {
    /// The verifier of `password` with a fresh random salt (16 bytes, as PostgreSQL's).
    pub fn new(password: &str) -> Verifier {
        let mut salt = [0u8; 16];
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut salt)
            .expect("the system's random source works");
        Verifier::with_salt(password, &salt, SCRAM_ITERATIONS)
    }

    /// The verifier of `password` with the given salt and iteration count. The password is
    /// normalized with SASLprep first; a password SASLprep rejects is used as it is, as
    /// PostgreSQL does.
    pub fn with_salt(password: &str, salt: &[u8], iterations: u32) -> Verifier {
        let normalized = stringprep::saslprep(password).unwrap_or(Cow::Borrowed(password));
        let mut salted = [0u8; 32];
        let rounds = std::num::NonZeroU32::new(iterations.max(1)).expect("at least one");
        pbkdf2::derive(
            pbkdf2::PBKDF2_HMAC_SHA256,
            rounds,
            salt,
            normalized.as_bytes(),
            &mut salted,
        );
        let key = hmac::Key::new(hmac::HMAC_SHA256, &salted);
        let client_key = hmac::sign(&key, b"Client Key");
        let stored_key = digest::digest(&digest::SHA256, client_key.as_ref());
        let server_key = hmac::sign(&key, b"Server Key");
        Verifier {
            iterations,
            salt: salt.to_vec(),
            stored_key: stored_key.as_ref().to_vec(),
            server_key: server_key.as_ref().to_vec(),
        }
    }

    /// Reads PostgreSQL's text form; `None` if `text` is not one.
    pub fn parse(text: &str) -> Option<Verifier> {
        let rest = text.strip_prefix("SCRAM-SHA-256$")?;
        let (params, keys) = rest.split_once('$')?;
        let (iterations, salt) = params.split_once(':')?;
        let (stored_key, server_key) = keys.split_once(':')?;
        let decode = |s: &str| STANDARD.decode(s).ok();
        let verifier = Verifier {
            iterations: iterations.parse().ok().filter(|&i| i > 0)?,
            salt: decode(salt).filter(|s| !s.is_empty())?,
            stored_key: decode(stored_key).filter(|k| k.len() == 32)?,
            server_key: decode(server_key).filter(|k| k.len() == 32)?,
        };
        Some(verifier)
    }
}

impl fmt::Display for Verifier {
    /// PostgreSQL's text form, as `pg_authid.rolpassword` shows it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "SCRAM-SHA-256${}:{}${}:{}",
            self.iterations,
            STANDARD.encode(&self.salt),
            STANDARD.encode(&self.stored_key),
            STANDARD.encode(&self.server_key)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Made by PostgreSQL 15: `CREATE ROLE bob PASSWORD 'pencil'`, then
    /// `SELECT rolpassword FROM pg_authid WHERE rolname = 'bob'`.
    const FROM_POSTGRES: &str = "SCRAM-SHA-256$4096:V9lnCaF3V7hMOs8S8z6GEA==$\
        n8DOxLs5oH8EAX9daCHZ1OF3e6SwVS/a0rAtwhqJBjc=:+kaIoBhRpJwiLabTh1ZZ9kv2MEpU49zm/WIjilO2SCM=";

    #[test]
    fn verifiers_match_postgresql() {
        let theirs = Verifier::parse(FROM_POSTGRES).expect("PostgreSQL's form parses");
        let ours = Verifier::with_salt("pencil", &theirs.salt, theirs.iterations);
        assert_eq!(ours, theirs);
        assert_eq!(ours.to_string(), FROM_POSTGRES);
        assert_ne!(Verifier::with_salt("pencil!", &theirs.salt, 4096), theirs);
    }

    #[test]
    fn fresh_verifiers_have_their_own_salt() {
        let (a, b) = (Verifier::new("pw"), Verifier::new("pw"));
        assert_ne!(a.salt, b.salt);
        assert_eq!(Verifier::parse(&a.to_string()), Some(a));
    }

    #[test]
    fn malformed_verifiers_are_not_verifiers() {
        for text in [
            "pencil",
            "md5e5e28ae1d7bff1f9ea0e2abf5fbd2c87",
            "SCRAM-SHA-256$4096:c2FsdA==$short:short",
            "SCRAM-SHA-256$0:c2FsdA==$n8DOxLs5oH8EAX9daCHZ1OF3e6SwVS/a0rAtwhqJBjc=:+kaIoBhRpJwiLabTh1ZZ9kv2MEpU49zm/WIjilO2SCM=",
            "SCRAM-SHA-256$4096:$n8DOxLs5oH8EAX9daCHZ1OF3e6SwVS/a0rAtwhqJBjc=:+kaIoBhRpJwiLabTh1ZZ9kv2MEpU49zm/WIjilO2SCM=",
        ] {
            assert_eq!(Verifier::parse(text), None, "{text}");
        }
    }
}
