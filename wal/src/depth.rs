//! How many write+sync pairs a logger keeps in flight: adapted to what the device does with
//! them.
//!
//! Pairs in flight pay where the device overlaps them (a sync's latency hides the next pair's
//! transfer: an array, an SSD with several queues, the bandwidth-bound emulated devices of
//! the scaling suite). They cost where the device serializes them: on a virtio disk with a
//! volatile write cache every pair is a cache flush, flushes queue one behind the other, and
//! four small pairs in flight each wait for the three before them, where one pair carrying
//! the same commits would have waited for none (BENCHMARKS.md: 0.31 ms p50 at four in flight
//! against 0.18 ms at one, and 35% less throughput).
//!
//! The logger cannot ask the device which it is, so it measures. A pair submitted while `d`
//! others are in flight is a sample of *depth* `d`; each depth keeps a moving average of its
//! pairs' submit-to-complete time `L(d)`. Kept at `k = d + 1` in flight under load, a pair
//! leaves every `L(d) / k` and a commit waits on average half that gap for the next pair,
//! then the pair itself:
//!
//! ```text
//! cost(d) = L(d) · (1 + 1 / (2 (d + 1)))         -- expected commit wait at depth d
//! ```
//!
//! The limit moves to the depth of least cost among the current one and its two neighbours,
//! if that is at least [`MARGIN`] cheaper. The neighbours are measured by probes: one pair is
//! allowed one deeper than the limit, or the next one shallower (alternately), every
//! [`PROBE_EVERY`] completions at first. A probe that does not move the limit doubles its
//! direction's interval, up to [`PROBE_MAX`] completions (a probe in the wrong direction
//! costs its pair and the commits in it: on a disk whose flushes queue, a pair that waits
//! behind another); a move resets both. Each depth's average takes a quarter of every new
//! sample, or only the new sample when the last one is older than [`AVERAGE_WITHIN`]
//! completions (the load may have changed since); one not refreshed within three probe rounds
//! is not compared. The limit starts at one pair and never exceeds
//! `LogOptions::max_in_flight`.
//!
//! Two rules keep a light load off io_uring. A probe deeper that no pair takes within
//! [`PROBE_PATIENCE`] completions (a lone committer never has two pairs in flight) gives up, as
//! one that did not pay; and a limit the load no longer fills (no pair at it within the last
//! `AVERAGE_WITHIN` completions, some below it) comes down by one.
//!
//! At a limit of one, the logger writes and syncs on its own thread instead of through
//! io_uring (it would only wait for the pair, and the hand-off to a kernel worker makes the
//! pair slower): those pairs are samples of depth 0, and a probe one deeper goes through
//! io_uring. Pairs that cannot overlap (`FileDevice`, whose submission writes and syncs, and
//! requesters' flushes) are samples of depth 0 or of the queue they waited in.

use std::time::Duration;

/// Completions between two probes after the limit moved.
pub(crate) const PROBE_EVERY: u64 = 16;
/// The most completions between two probes in one direction.
pub(crate) const PROBE_MAX: u64 = 1024;
/// A sample older than this many completions is replaced by the next one, not averaged.
const AVERAGE_WITHIN: u64 = 3 * PROBE_EVERY;
/// A neighbouring depth must be this much cheaper (as a fraction) to take over.
pub(crate) const MARGIN: f64 = 0.05;
/// Completions a due probe deeper waits for a second pair to join the first before it gives up.
pub(crate) const PROBE_PATIENCE: u64 = 4;

/// The adaptive in-flight limit of one logger.
#[derive(Debug)]
pub(crate) struct Depth {
    max: usize,
    /// Pairs allowed in flight (1 ..= max), probes aside.
    limit: usize,
    /// Per depth: moving average of pair time, ns, and the completion count of its last sample.
    latency: Vec<Option<(u64, u64)>>,
    /// Completions so far.
    completions: u64,
    /// Completion count when the last probe was submitted.
    probed_at: u64,
    /// The next probe goes deeper (else shallower).
    probe_up: bool,
    /// Completions between probes, deeper and shallower.
    interval: [u64; 2],
}

impl Depth {
    pub(crate) fn new(max: usize) -> Depth {
        assert!(max > 0, "at least one pair in flight");
        Depth {
            max,
            limit: 1,
            latency: vec![None; max],
            completions: 0,
            probed_at: 0,
            probe_up: true,
            interval: [PROBE_EVERY; 2],
        }
    }

    /// Pairs allowed in flight before the next one is submitted (the limit, or one more or
    /// one fewer while a probe is due).
    pub(crate) fn allowed(&self) -> usize {
        if !self.probe_due() {
            self.limit
        } else if self.probe_up {
            (self.limit + 1).min(self.max)
        } else {
            (self.limit - 1).max(1)
        }
    }

    /// A pair is submitted while `depth` others are in flight.
    pub(crate) fn submitted(&mut self, depth: usize) {
        let probe = self.probe_due();
        let probed = if self.probe_up { depth >= self.limit } else { depth + 2 <= self.limit };
        let pointless = if self.probe_up { self.limit == self.max } else { self.limit == 1 };
        if probe && (probed || pointless) {
            if probed && !pointless {
                let interval = &mut self.interval[usize::from(!self.probe_up)];
                *interval = (*interval * 2).min(PROBE_MAX);
            }
            self.probed_at = self.completions;
            self.probe_up = !self.probe_up;
        }
    }

    fn probe_due(&self) -> bool {
        self.completions - self.probed_at >= self.interval[usize::from(!self.probe_up)]
    }

    /// A pair submitted at `depth` completed after `took`; the limit follows the cheapest
    /// fresh depth.
    pub(crate) fn completed(&mut self, depth: usize, took: Duration) {
        let depth = depth.min(self.max - 1);
        self.completions += 1;
        let now = self.completions;
        // A probe deeper is taken by a pair submitted while the limit's worth are in flight. At
        // a load that never has that many (a lone committer), it would stay due for good, and
        // at a limit of one every pair would go out through io_uring instead of directly (the
        // logger writes directly only where one pair is allowed). It gives up after a few
        // completions, as a probe that did not pay.
        if self.probe_up && now - self.probed_at >= self.interval[0] + PROBE_PATIENCE {
            self.interval[0] = (self.interval[0] * 2).min(PROBE_MAX);
            self.probed_at = now;
            self.probe_up = false;
        }
        let fresh = 3 * (self.interval[0] + self.interval[1]);
        let sample = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        let avg = match self.latency[depth] {
            Some((avg, at)) if now - at <= AVERAGE_WITHIN => avg - avg / 4 + sample / 4,
            _ => sample,
        };
        self.latency[depth] = Some((avg, now));
        let cost = |d: usize| match self.latency[d] {
            Some((avg, at)) if now - at <= fresh => {
                Some(avg as f64 * (1.0 + 1.0 / (2.0 * (d + 1) as f64)))
            }
            _ => None,
        };
        let current = self.limit - 1;
        // The load no longer fills the limit: no pair went out at it lately, while pairs went
        // out below it. One fewer costs nothing the load uses (a probe raises it again when the
        // load returns), and at one the logger writes directly.
        let lately = |d: usize| self.latency[d].is_some_and(|(_, at)| now - at <= AVERAGE_WITHIN);
        if current > 0 && !lately(current) && (0..current).any(lately) {
            self.limit -= 1;
            self.interval = [PROBE_EVERY; 2];
            return;
        }
        let Some(mut best_cost) = cost(current) else { return };
        let mut best = current;
        for d in [current.checked_sub(1), Some(current + 1).filter(|&d| d < self.max)]
            .into_iter()
            .flatten()
        {
            if let Some(c) = cost(d) {
                if c < best_cost * (1.0 - MARGIN) {
                    best = d;
                    best_cost = c;
                }
            }
        }
        if best != current {
            self.limit = best + 1;
            self.interval = [PROBE_EVERY; 2];
        }
    }

    /// The most pairs it ever allows in flight.
    pub(crate) fn max(&self) -> usize {
        self.max
    }

    /// The current limit (probes aside).
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drives `depth` with a modelled device for 2000 completions: `pair(k)` is the time of a
    /// pair submitted while `k - 1` others are in flight. The logger is saturated (it always has
    /// a pair to submit), so it keeps the allowed number in flight. Returns the limit.
    fn run(depth: &mut Depth, pair: impl Fn(u64) -> u64) -> usize {
        let mut in_flight = std::collections::VecDeque::new();
        for _ in 0..2000 {
            while in_flight.len() < depth.allowed() {
                depth.submitted(in_flight.len());
                in_flight.push_back(in_flight.len());
            }
            let d = in_flight.pop_front().expect("a pair in flight");
            depth.completed(d, Duration::from_nanos(pair(d as u64 + 1)));
        }
        depth.limit()
    }

    /// Every pair waits for those ahead of it (flushes of a volatile cache queue up).
    fn serializing(k: u64) -> u64 {
        100_000 * k
    }

    /// Log-bound with overlapping syncs: k pairs in flight split the waiting bytes k ways,
    /// and each pair's 500 µs sync overlaps the others' transfers.
    fn overlapping(k: u64) -> u64 {
        500_000 + 2_000_000 / k
    }

    #[test]
    fn a_device_that_serializes_pairs_keeps_one_in_flight() {
        assert_eq!(run(&mut Depth::new(4), serializing), 1);
        assert_eq!(run(&mut Depth::new(64), serializing), 1);
    }

    #[test]
    fn a_device_that_overlaps_pairs_gets_all_of_them() {
        assert_eq!(run(&mut Depth::new(4), overlapping), 4);
        assert_eq!(run(&mut Depth::new(8), overlapping), 8);
        // Constant pair time: each step deeper saves less (1.5, 1.25, 1.17, 1.125 pair times),
        // until the saving is within the margin.
        assert_eq!(run(&mut Depth::new(8), |_| 500_000), 3);
    }

    #[test]
    fn the_limit_settles_where_the_cost_is_least() {
        // Pairs overlap up to two, then queue: costs 150, 125, 267, 375 µs.
        let two = |k: u64| if k <= 2 { 100_000 } else { 100_000 * k - 100_000 };
        assert_eq!(run(&mut Depth::new(4), two), 2);
    }

    #[test]
    fn the_limit_follows_a_device_that_changes() {
        let mut depth = Depth::new(4);
        assert_eq!(run(&mut depth, overlapping), 4);
        assert_eq!(run(&mut depth, serializing), 1);
        assert_eq!(run(&mut depth, overlapping), 4);
    }

    /// While the limit holds, probes become rare: on a serializing device each one is a pair
    /// that waits behind another.
    #[test]
    fn probes_back_off_while_the_limit_holds() {
        let mut depth = Depth::new(4);
        let mut in_flight = std::collections::VecDeque::new();
        let mut probes = Vec::new();
        for completion in 0..6000 {
            while in_flight.len() < depth.allowed() {
                if in_flight.len() >= depth.limit() {
                    probes.push(completion);
                }
                depth.submitted(in_flight.len());
                in_flight.push_back(in_flight.len());
            }
            let d = in_flight.pop_front().expect("a pair in flight");
            depth.completed(d, Duration::from_nanos(serializing(d as u64 + 1)));
        }
        assert_eq!(depth.limit(), 1);
        let early = probes.iter().filter(|&&c| c < 200).count();
        let late = probes.iter().filter(|&&c| c >= 4000).count();
        assert!(early >= 3, "probes at first: {early}");
        assert!(late <= 2, "probes in the last 2000 completions: {late}");
    }

    /// A limit raised under load comes back down when the load no longer fills it.
    #[test]
    fn a_limit_the_load_no_longer_reaches_comes_down() {
        let mut depth = Depth::new(4);
        assert_eq!(run(&mut depth, overlapping), 4);
        let mut probing = 0;
        for _ in 0..4000 {
            if depth.allowed() > 1 {
                probing += 1;
            }
            depth.submitted(0);
            depth.completed(0, Duration::from_nanos(overlapping(1)));
        }
        assert_eq!(depth.limit(), 1);
        assert!(probing <= 200, "{probing} of 4000 lone pairs went out with more allowed");
    }

    /// A lone committer never has two pairs in flight: the limit stays at one, and a probe
    /// deeper, which such a load never takes, does not stay due (while it is, the logger sends
    /// every pair through io_uring instead of writing it directly).
    #[test]
    fn synchronous_pairs_leave_the_limit_alone() {
        let mut depth = Depth::new(4);
        let mut probing = 0;
        for _ in 0..4000 {
            if depth.allowed() > 1 {
                probing += 1;
            }
            depth.submitted(0);
            depth.completed(0, Duration::from_micros(100));
        }
        assert_eq!(depth.limit(), 1);
        assert!(probing <= 60, "{probing} of 4000 pairs went out while a probe was due");
    }
}
