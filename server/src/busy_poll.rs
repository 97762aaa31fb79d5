//! Spinning briefly before a connection thread sleeps, while the machine has an idle core
//! (`--busy-poll-us`).
//!
//! A client that sends its next statement right after reading a result (one connection, or a
//! few, on an otherwise quiet machine) finds the connection thread asleep in `epoll_wait`, and
//! its CPU halted: waking it costs an interrupt and, in a virtual machine, the host scheduling
//! that vCPU again — on this kind of machine longer than the statement itself (one pgbench
//! connection's point selects: 71 µs a round trip, of which the server's work is ~15 µs). So
//! before its runtime parks, a connection thread serving at most [`MAX_SOCKETS`] connections
//! polls their sockets (`poll(2)` with no timeout, a `sched_yield` between polls) for up to
//! the budget, and parks only if none became readable; when one did, the runtime's
//! `epoll_wait` returns at once. Nothing else changes: each socket is read by its task as
//! always, and a readable socket whose task is busy elsewhere only ends the spin early.
//!
//! Spinning is paid in CPU, and on a busy machine it takes the cores from the clients and the
//! other threads (measured: 8 pgbench connections lost a quarter of their throughput to
//! unconditional spinning). So it happens only while it costs nobody anything:
//! - a sampler thread reads `/proc/stat` every [`SAMPLE`] and allows spinning only while at
//!   least one core's worth of CPU time was idle (counting the time spent spinning as idle,
//!   since that time is free for anyone else);
//! - at most one thread per two CPUs spins at once;
//! - a spin stops as soon as a `sched_yield` ran another thread (this core is wanted).
//!
//! A spin also ends, or does not start, when a commit that a task of this thread waits for
//! became durable ([`woken_flag`]): the runtime has work then.

use std::cell::{Cell, RefCell};
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// Above this many connections on a thread, it does not spin: it rarely runs out of work, and
/// when it does, its clients are not waiting on round trips one at a time.
const MAX_SOCKETS: usize = 2;

/// How often the sampler looks at the machine's idle time.
const SAMPLE: Duration = Duration::from_millis(50);

/// A `sched_yield` that took longer than this ran another thread: the core is wanted.
const YIELDED: Duration = Duration::from_micros(5);

thread_local! {
    /// The sockets of the connections served by this thread.
    static SOCKETS: RefCell<Vec<RawFd>> = const { RefCell::new(Vec::new()) };
    /// This thread's spin budget (zero: none).
    static BUDGET: Cell<Duration> = const { Cell::new(Duration::ZERO) };
    /// Set when a commit this thread waits for became durable (see [`woken_flag`]).
    static WOKEN: Arc<AtomicBool> = Arc::new(AtomicBool::new(false));
}

/// This thread's "woken" flag: whoever completes a durability wait of a task on this thread
/// (`crate::ack`, often a log writer thread, or this thread itself while it requests) sets it
/// after waking the task, so that a spin ends (or does not start) when a task has work.
pub(crate) fn woken_flag() -> Arc<AtomicBool> {
    WOKEN.with(Arc::clone)
}

/// Whether the machine had a core idle over the last sample (set by the sampler).
static IDLE_CORE: AtomicBool = AtomicBool::new(false);
/// Nanoseconds spent spinning, all threads (the sampler counts them as idle).
static SPUN_NS: AtomicU64 = AtomicU64::new(0);
/// Threads spinning right now.
static SPINNING: AtomicUsize = AtomicUsize::new(0);

/// Sets this (connection) thread's spin budget.
pub(crate) fn set_budget(budget: Duration) {
    BUDGET.with(|b| b.set(budget));
}

/// Starts the sampler thread (once per process): until it runs, nobody spins.
pub(crate) fn start_sampler() {
    static SAMPLER: OnceLock<()> = OnceLock::new();
    SAMPLER.get_or_init(|| {
        let spawned = std::thread::Builder::new().name("busy-poll".into()).spawn(sampler);
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "no busy polling: cannot start its sampler");
        }
    });
}

/// A socket registered with this thread's spin; unregistered when dropped.
pub(crate) struct Registered(RawFd);

/// Registers `fd` (a connection's socket, served by this thread) until the guard is dropped.
pub(crate) fn register(fd: RawFd) -> Registered {
    SOCKETS.with(|s| s.borrow_mut().push(fd));
    Registered(fd)
}

impl Drop for Registered {
    fn drop(&mut self) {
        SOCKETS.with(|s| {
            let mut s = s.borrow_mut();
            if let Some(i) = s.iter().position(|&fd| fd == self.0) {
                s.swap_remove(i);
            }
        });
    }
}

/// At most one spinning thread per two CPUs, at least one.
fn spinners_allowed() -> usize {
    static ALLOWED: OnceLock<usize> = OnceLock::new();
    *ALLOWED.get_or_init(|| (cpus() / 2).max(1))
}

fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

/// How a [`spin`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Spin {
    /// Not started: no budget, no idle core, too many (or no) sockets, enough spinners.
    Skipped,
    /// A socket became readable (or reported an error or hang-up).
    Ready,
    /// The budget ran out.
    Spent,
    /// Another thread wanted this core.
    Yielded,
    /// A task of this thread was woken (a commit it waits for is durable).
    Woken,
}

/// Before the runtime parks: polls this thread's sockets until one is readable (or reports an
/// error or hang-up), the budget is spent, or another thread wants this core.
pub(crate) fn spin() -> Spin {
    let budget = BUDGET.with(Cell::get);
    if budget.is_zero() || !IDLE_CORE.load(Ordering::Relaxed) {
        return Spin::Skipped;
    }
    // On the stack: this runs every time the thread runs out of work.
    let mut fds = [libc::pollfd { fd: -1, events: libc::POLLIN, revents: 0 }; MAX_SOCKETS];
    let n = SOCKETS.with(|s| {
        let s = s.borrow();
        for (slot, &fd) in fds.iter_mut().zip(s.iter()) {
            slot.fd = fd;
        }
        s.len()
    });
    if n == 0 || n > MAX_SOCKETS {
        return Spin::Skipped;
    }
    let fds = &mut fds[..n];
    let woken = woken_flag();
    if woken.swap(false, Ordering::AcqRel) {
        return Spin::Skipped;
    }
    let allowed = spinners_allowed();
    if SPINNING
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < allowed).then_some(n + 1))
        .is_err()
    {
        return Spin::Skipped;
    }
    let start = Instant::now();
    let ended = loop {
        // SAFETY: `fds` is a valid array of `fds.len()` pollfd structs; timeout 0 never blocks.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 0) };
        if ready != 0 {
            break Spin::Ready;
        }
        if woken.swap(false, Ordering::AcqRel) {
            break Spin::Woken;
        }
        if start.elapsed() >= budget {
            break Spin::Spent;
        }
        let before = Instant::now();
        // SAFETY: no arguments; yields this thread's CPU if another thread is runnable on it.
        unsafe { libc::sched_yield() };
        if before.elapsed() >= YIELDED {
            break Spin::Yielded;
        }
    };
    let spun = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
    SPUN_NS.fetch_add(spun, Ordering::Relaxed);
    SPINNING.fetch_sub(1, Ordering::AcqRel);
    ended
}

/// CPU time of the whole machine from `/proc/stat`'s first line, in clock ticks:
/// (idle including I/O wait, total).
fn cpu_ticks() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().next()?.strip_prefix("cpu ")?;
    let fields: Vec<u64> =
        line.split_whitespace().map(|f| f.parse().ok()).collect::<Option<_>>()?;
    // user nice system idle iowait irq softirq steal [guest guest_nice: already in user/nice]
    let total = fields.iter().take(8).sum();
    let idle = fields.get(3)? + fields.get(4).copied().unwrap_or(0);
    Some((idle, total))
}

/// The sampler thread: every [`SAMPLE`], whether at least one core's worth of the machine's
/// CPU time was idle or spent spinning. Without `/proc/stat` spinning stays off.
fn sampler() {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let ns_per_tick = if hz > 0 { 1_000_000_000 / hz as u64 } else { return };
    let cores = cpus() as u64;
    let Some(mut last) = cpu_ticks() else { return };
    let mut last_spun = SPUN_NS.load(Ordering::Relaxed);
    loop {
        std::thread::sleep(SAMPLE);
        let Some(now) = cpu_ticks() else {
            IDLE_CORE.store(false, Ordering::Relaxed);
            return;
        };
        let spun = SPUN_NS.load(Ordering::Relaxed);
        let idle = now.0.saturating_sub(last.0) + (spun - last_spun) / ns_per_tick;
        let total = now.1.saturating_sub(last.1);
        // At least one core of `cores` idle: idle / total >= 1 / cores.
        IDLE_CORE.store(total > 0 && idle * cores >= total, Ordering::Relaxed);
        (last, last_spun) = (now, spun);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `/proc/stat` (Linux) gives the machine's idle and total ticks, idle within total, and
    /// both only grow.
    #[test]
    fn cpu_ticks_read_proc_stat() {
        let (idle, total) = cpu_ticks().expect("/proc/stat");
        assert!(idle <= total && total > 0, "idle {idle} of {total}");
        let mut burn = 0u64;
        let start = Instant::now();
        while start.elapsed() < Duration::from_millis(30) {
            burn = burn.wrapping_add(1);
        }
        let (idle2, total2) = cpu_ticks().expect("/proc/stat");
        assert!(idle2 >= idle && total2 >= total && burn > 0);
    }

    /// A registered socket is polled while it is registered, and only then; a readable one
    /// ends the spin (a spin that ignored it would run the whole hour-long budget).
    #[test]
    fn a_readable_socket_ends_the_spin() {
        use std::io::Write;
        use std::os::fd::AsRawFd;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        {
            let _registered = register(server.as_raw_fd());
            assert_eq!(SOCKETS.with(|s| s.borrow().clone()), vec![server.as_raw_fd()]);
            IDLE_CORE.store(true, Ordering::Relaxed);
            // Nothing to read: the spin ends without `Ready`.
            set_budget(Duration::from_millis(1));
            assert_ne!(spin(), Spin::Ready);
            client.write_all(b"Q").unwrap();
            set_budget(Duration::from_secs(3600));
            assert_eq!(spin(), Spin::Ready);
            // A woken task: no spin.
            client.write_all(b"Q").unwrap();
            woken_flag().store(true, Ordering::Relaxed);
            assert_eq!(spin(), Spin::Skipped);
            // No idle core, or no budget: no spin at all.
            IDLE_CORE.store(false, Ordering::Relaxed);
            assert_eq!(spin(), Spin::Skipped);
            IDLE_CORE.store(true, Ordering::Relaxed);
            set_budget(Duration::ZERO);
            assert_eq!(spin(), Spin::Skipped);
        }
        set_budget(Duration::from_secs(3600));
        assert_eq!(spin(), Spin::Skipped, "no sockets once the guard is dropped");
        set_budget(Duration::ZERO);
        assert!(SOCKETS.with(|s| s.borrow().is_empty()), "unregistered when dropped");
        assert_eq!(SPINNING.load(Ordering::Relaxed), 0);
    }
}
