//! Client authentication against a real `aspen serve` (module `server::auth`):
//!
//! - with `--auth-local scram-sha-256` a client gets in with its role's password and with no
//!   other: a wrong password, a name that is no role and a role without a password all fail
//!   alike with FATAL 28P01; a role with NOLOGIN is refused with 28000 even with the right
//!   password; a verifier made by PostgreSQL 15 (`ALTER ROLE … PASSWORD 'SCRAM-SHA-256$…'`, as
//!   psql's `\password` sends) works as PostgreSQL's own; roles and passwords survive a crash
//!   (SIGKILL, then a restart); psql (libpq) authenticates too;
//! - with the default `trust`, any name gets in except a role with NOLOGIN; `reject` admits
//!   nobody.
//!
//! Connections from other addresses (`--auth-remote`) take the same path with another method;
//! which method applies to which address is a unit test in `server::auth`.

use std::ffi::OsString;

use tests::{fresh_data_dir, sqlstate, AspenServer};
use tokio_postgres::{Client, NoTls};

/// `CREATE ROLE bob PASSWORD 'pencil'` in PostgreSQL 15, then `SELECT rolpassword FROM
/// pg_authid WHERE rolname = 'bob'`.
const POSTGRES_VERIFIER_OF_PENCIL: &str = "SCRAM-SHA-256$4096:V9lnCaF3V7hMOs8S8z6GEA==$\
    n8DOxLs5oH8EAX9daCHZ1OF3e6SwVS/a0rAtwhqJBjc=:+kaIoBhRpJwiLabTh1ZZ9kv2MEpU49zm/WIjilO2SCM=";

fn start(args: &[&str]) -> AspenServer {
    let args = args.iter().map(OsString::from).collect();
    let dir = fresh_data_dir().expect("data dir");
    AspenServer::try_start_in(dir, args).unwrap_or_else(|e| panic!("{e}"))
}

async fn login(
    port: u16,
    user: &str,
    password: Option<&str>,
) -> Result<Client, tokio_postgres::Error> {
    let mut config = tokio_postgres::Config::new();
    config.host("127.0.0.1").port(port).user(user).dbname("postgres");
    if let Some(password) = password {
        config.password(password);
    }
    let (client, connection) = config.connect(NoTls).await?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}

/// Logs in and returns `current_user`, or the SQLSTATE of the refusal.
async fn who(port: u16, user: &str, password: Option<&str>) -> Result<String, String> {
    match login(port, user, password).await {
        Ok(client) => {
            let row = client.query_one("SELECT current_user::text", &[]).await.expect("query");
            Ok(row.get(0))
        }
        Err(e) => Err(sqlstate(&e).map(str::to_owned).unwrap_or_else(|| e.to_string())),
    }
}

#[tokio::test]
async fn scram_admits_the_right_password_only() {
    let mut server = start(&["--auth-local", "scram-sha-256", "--postgres-password", "sekret"]);
    let port = server.port();
    assert_eq!(who(port, "postgres", Some("sekret")).await.as_deref(), Ok("postgres"));
    assert_eq!(who(port, "postgres", Some("sekreT")).await, Err("28P01".into()));
    assert_eq!(who(port, "nobody", Some("sekret")).await, Err("28P01".into()));
    // tokio-postgres refuses to go on without a password once the server asks for one.
    assert!(who(port, "postgres", None).await.is_err());

    let admin = login(port, "postgres", Some("sekret")).await.expect("login");
    for sql in ["CREATE USER bob WITH PASSWORD 'walnut'", "CREATE ROLE nl PASSWORD 'x'"] {
        admin.batch_execute(sql).await.expect(sql);
    }
    // Through the extended protocol too.
    admin.execute("CREATE USER nopw", &[]).await.expect("create");
    assert_eq!(who(port, "bob", Some("walnut")).await.as_deref(), Ok("bob"));
    assert_eq!(who(port, "bob", Some("pencil")).await, Err("28P01".into()));
    assert_eq!(who(port, "nl", Some("x")).await, Err("28000".into()), "NOLOGIN");
    assert_eq!(who(port, "nopw", Some("")).await, Err("28P01".into()), "no password");

    // A verifier computed by PostgreSQL, given as the password, is kept as it is.
    let alter = format!("ALTER ROLE bob PASSWORD '{POSTGRES_VERIFIER_OF_PENCIL}'");
    admin.batch_execute(&alter).await.expect("alter");
    assert_eq!(who(port, "bob", Some("pencil")).await.as_deref(), Ok("bob"));
    assert_eq!(who(port, "bob", Some("walnut")).await, Err("28P01".into()));
    admin.batch_execute("ALTER ROLE nl LOGIN").await.expect("alter");
    assert_eq!(who(port, "nl", Some("x")).await.as_deref(), Ok("nl"));

    // psql (libpq) speaks SCRAM too.
    let psql = std::process::Command::new("psql")
        .args(["-X", "-A", "-t", "-h", "127.0.0.1", "-p", &port.to_string(), "-U", "bob"])
        .args(["-d", "postgres", "-c", "SELECT current_user"])
        .env("PGPASSWORD", "pencil")
        .output();
    if let Ok(out) = psql {
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(stdout.trim(), "bob", "psql: {}", String::from_utf8_lossy(&out.stderr));
    }

    // Killed (SIGKILL) and started again, this time without --postgres-password.
    drop(admin);
    server.set_extra_args(["--auth-local", "scram-sha-256"].map(OsString::from).to_vec());
    server.restart();
    let port = server.port();
    assert_eq!(who(port, "bob", Some("pencil")).await.as_deref(), Ok("bob"), "after a crash");
    assert_eq!(who(port, "nl", Some("x")).await.as_deref(), Ok("nl"));
    assert_eq!(who(port, "postgres", Some("sekret")).await.as_deref(), Ok("postgres"));
    let admin = login(port, "postgres", Some("sekret")).await.expect("login");
    admin.batch_execute("ALTER USER bob PASSWORD NULL").await.expect("alter");
    admin.execute("DROP ROLE nl", &[]).await.expect("drop");
    assert_eq!(who(port, "bob", Some("pencil")).await, Err("28P01".into()));
    assert_eq!(who(port, "nl", Some("x")).await, Err("28P01".into()));
}

#[tokio::test]
async fn trust_admits_any_name_but_nologin_roles_and_reject_admits_nobody() {
    let server = start(&[]);
    let port = server.port();
    assert_eq!(who(port, "anyone", None).await.as_deref(), Ok("anyone"));
    let admin = login(port, "postgres", None).await.expect("login");
    admin.batch_execute("CREATE ROLE reader").await.expect("create");
    assert_eq!(who(port, "reader", None).await, Err("28000".into()));
    // Role changes are not transactional here: refused where PostgreSQL could roll them back.
    let err = admin.batch_execute("ALTER ROLE reader LOGIN; SELECT 1").await.unwrap_err();
    assert_eq!(sqlstate(&err), Some("0A000"));
    admin.batch_execute("BEGIN").await.expect("begin");
    let err = admin.batch_execute("ALTER ROLE reader LOGIN").await.unwrap_err();
    assert_eq!(sqlstate(&err), Some("0A000"));
    admin.batch_execute("ROLLBACK").await.expect("rollback");
    assert_eq!(who(port, "reader", None).await, Err("28000".into()));
    admin.batch_execute("ALTER ROLE reader LOGIN").await.expect("alter");
    assert_eq!(who(port, "reader", None).await.as_deref(), Ok("reader"));

    let closed = start(&["--auth-local", "reject"]);
    assert_eq!(who(closed.port(), "postgres", None).await, Err("28000".into()));
}
