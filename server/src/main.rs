//! `aspen`: the server binary.
//!
//! `aspen serve` opens (recovering) the database, binds the listen address, prints
//! `aspen listening on HOST:PORT` on stdout once bound (the actual port when given port 0), and
//! serves until SIGINT or SIGTERM; then it stops accepting, closes every session and exits.
//!
//! Exit codes: 0 after a clean shutdown; 1 if the database cannot be opened or the address
//! cannot be bound; 2 for command-line errors (from clap).

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use server::config::{Cli, Command, ServeArgs};
use server::Server;
use tracing_subscriber::EnvFilter;

/// mimalloc instead of glibc's malloc. Rows, keys, log batches and replay staging are small
/// allocations freed on other threads than the ones that made them, which glibc's arenas pay
/// for in consolidation and in pages trimmed and faulted in again. Measured side by side
/// (BENCHMARKS.md, 2026-11-25): bulk replay of ~100 B rows 1.26×, pgbench single-row updates
/// over the wire 1.09×, TPC-C `customer` 1,004 instead of 1,045 bytes per row.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Stack size of the runtime's worker threads, where statements run.
const WORKER_STACK_SIZE: usize = 64 << 20;

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    // Expression binding and evaluation recurse once per operator: large worker stacks let
    // statements with thousands of operators run instead of overflowing.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(WORKER_STACK_SIZE)
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            tracing::error!(error = %e, "cannot start the async runtime");
            return ExitCode::FAILURE;
        }
    };
    match cli.command {
        Command::Serve(args) => runtime.block_on(serve(*args)),
        // The wire suite runs its own runtime, so it is not started inside `block_on`.
        Command::Bench(args) => match server::bench::run(*args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("bench: {e}");
                ExitCode::FAILURE
            }
        },
    }
}

async fn serve(args: ServeArgs) -> ExitCode {
    let config = args.startup_config();
    // Recovery runs before the listener exists: no client sees a half-recovered database.
    let opened = tokio::task::block_in_place(|| {
        recovery::startup::open_database(&config, &|p: &recovery::Progress| {
            tracing::info!(
                phase = ?p.phase,
                done_mb = p.bytes_done >> 20,
                total_mb = p.bytes_total >> 20,
                records = p.records_done,
                rate_mb_s = format!("{:.0}", p.rate() / 1e6),
                eta_s = p.eta().map(|e| e.as_secs_f64()).unwrap_or(0.0),
                "recovering"
            );
        })
    });
    let started = match opened {
        Ok(started) => started,
        Err(e) => {
            tracing::error!(error = %e, data_dir = %args.data_dir.display(), "cannot open the database");
            return ExitCode::FAILURE;
        }
    };
    if let Some((meta, load)) = &started.checkpoint {
        tracing::info!(
            ssn = meta.ssn.0,
            rows = load.entries,
            mb = format!("{:.1}", load.bytes as f64 / 1e6),
            load_ms = load.replay.as_millis() as u64,
            "checkpoint loaded"
        );
    }
    let r = &started.replay;
    tracing::info!(
        rsne = %started.rsne,
        max_ssn = %started.max_ssn,
        log_mb = format!("{:.1}", r.bytes as f64 / 1e6),
        spill_mb = format!("{:.1}", r.spill_bytes as f64 / 1e6),
        records = r.records,
        // One pass: reading the log is part of the replay phase.
        replay_ms = started.replay.replay.as_millis() as u64,
        total_ms = started.elapsed.as_millis() as u64,
        replay_gb_s = format!("{:.2}", r.replay_gb_per_sec()),
        sealed_records = started.sealed.aborted,
        zeroed_bytes = started.sealed.zeroed_bytes,
        "recovered"
    );
    let db = started.db;
    if let Some(password) = &args.postgres_password {
        if password.is_empty() {
            tracing::error!("the password of role postgres cannot be empty");
            return ExitCode::FAILURE;
        }
        let verifier = catalog::Verifier::new(password).to_string();
        let role = catalog::roles::BOOTSTRAP_ROLE;
        if let Err(e) = db.catalog().alter_role(role, |r| r.password = Some(verifier)) {
            tracing::error!(error = %e, "cannot set the password of role postgres");
            return ExitCode::FAILURE;
        }
    }
    let busy_poll = std::time::Duration::from_micros(args.busy_poll_us);
    let threads = args.connection_threads();
    let mut server = match Server::bind_with(&args.listen, db.clone(), threads, busy_poll).await {
        Ok(server) => server,
        Err(e) => {
            tracing::error!(error = %e, listen = %args.listen, "cannot listen");
            return ExitCode::FAILURE;
        }
    };
    server.set_auth(server::auth::Methods { local: args.auth_local, remote: args.auth_remote });
    if let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) {
        let tls = server::tls::Tls::from_files(cert, key).and_then(|tls| server.set_tls(tls));
        if let Err(e) = tls {
            tracing::error!(error = %e, "cannot use the TLS certificate");
            return ExitCode::FAILURE;
        }
    }
    let public = args.listen.parse::<std::net::SocketAddr>().is_ok_and(|a| !a.ip().is_loopback());
    if public && args.auth_remote == server::auth::Method::Trust {
        tracing::warn!(listen = %args.listen, "--auth-remote trust: anyone who can reach this address can connect as any role");
    }
    let no_password = !db.catalog().roles().iter().any(|r| r.login && r.password.is_some());
    if public && args.auth_remote == server::auth::Method::ScramSha256 && no_password {
        tracing::warn!(listen = %args.listen, "no role that may log in has a password: clients from other hosts cannot log in (set ASPEN_POSTGRES_PASSWORD, or ALTER ROLE … PASSWORD from this host)");
    }
    // Every listener is bound before the listening line, which tests and scripts wait for.
    if let Some(dir) = &args.unix_socket_dir {
        match server.listen_unix(dir) {
            Ok(path) => tracing::info!(path = %path.display(), "listening on a Unix-domain socket"),
            Err(e) => {
                tracing::error!(error = %e, dir = %dir.display(), "cannot listen on a Unix-domain socket");
                return ExitCode::FAILURE;
            }
        }
    }
    let shutdown = shutdown_signal();
    match server.local_addr() {
        Ok(addr) => {
            println!("aspen listening on {addr}");
            let _ = std::io::stdout().flush();
        }
        Err(e) => {
            tracing::error!(error = %e, "cannot read the bound address");
            return ExitCode::FAILURE;
        }
    }
    match server.run(shutdown).await {
        Ok(()) => {
            // Every session is closed: a final checkpoint makes the next start fast.
            match tokio::task::block_in_place(|| db.checkpoint()) {
                Ok(()) => tracing::info!("shut down"),
                Err(e) => tracing::error!(error = %e, "shut down without a final checkpoint"),
            }
            // Sequences restart where they stopped, not after their reserved values.
            if let Err(e) = db.catalog().settle_sequences() {
                tracing::error!(error = %e, "sequences not settled: a restart skips some values");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            tracing::error!(error = %e, "server failed");
            ExitCode::FAILURE
        }
    }
}

/// Completes on SIGINT or SIGTERM. The handlers are installed when this is called, not when
/// the future is first polled: a signal sent right after the listening line (as a supervisor or
/// a test may send it) must shut the server down cleanly, not kill it with the default action.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{signal, SignalKind};
    let listen = |kind: SignalKind, name: &'static str| match signal(kind) {
        Ok(stream) => Some(stream),
        Err(e) => {
            tracing::warn!(error = %e, "cannot listen for {name}");
            None
        }
    };
    let interrupt = listen(SignalKind::interrupt(), "SIGINT");
    let terminate = listen(SignalKind::terminate(), "SIGTERM");
    async move {
        let wait = |stream: Option<tokio::signal::unix::Signal>| async move {
            match stream {
                Some(mut s) => {
                    s.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            () = wait(interrupt) => tracing::info!("SIGINT received, shutting down"),
            () = wait(terminate) => tracing::info!("SIGTERM received, shutting down"),
        }
    }
}
