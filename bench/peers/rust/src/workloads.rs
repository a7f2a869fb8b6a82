//! The two workloads, timed and verified as sl-bench's bench/tput.c and
//! bench/latency.c do it for in-process contenders.
//!
//! tput: P producers and C consumers; the figure is the messages sent over
//! the time from the gate's opening to the last message received. Spinning
//! consumers publish their counts when they find the channel empty and stop
//! once every producer is done and the total is reached; blocking consumers
//! stop at a sentinel, one per consumer, sent by the timing thread after
//! every producer is done, and what a sentinel overtook is drained and
//! verified by the timing thread inside the timed interval, as tput.c does.
//! select: tput's blocking shape over a pair of channels (select.rs): a
//! producer's order holds per channel only, so a receiver keeps one Check
//! per channel.
//! pingpong: ping sends on AB and waits for the echo on BA; each round trip
//! is timed; up to `trips` trips or `trip_cap_ns`.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::SeqCst};

use crate::msg::{fill, sent_sum, sentinel, Check, SENTINEL};
use crate::run::{backoff, recv, send, work, Gate, Run, Rx, Test, Tx};

pub struct Outcome {
    pub value: f64, // Mmsg/s, or the p50 in ns
    pub p99: f64,
    pub p999: f64,
    pub msgs: u64, // messages moved, or trips made
}

#[derive(Default)]
struct Shared {
    gate: Gate,
    sent: AtomicU64, // added by each producer when it is done
    producers_done: AtomicU32,
    consumed: Padded, // its own line: consumers add to it while others read the gate
}

#[derive(Default)]
#[repr(align(64))]
struct Padded(AtomicU64);

const LOST_AFTER_NS: u64 = 5_000_000_000;

fn produce<const N: usize, T: Tx<[u64; N]>>(
    run: &Run,
    sh: &Shared,
    id: u32,
    tx: T,
    block: bool,
) -> u64 {
    run.pin(2 * id as usize);
    let per = run.msgs / run.producers as u64;
    sh.gate.wait();
    let end = if run.cap_ns > 0 {
        run.now() + run.cap_ns
    } else {
        u64::MAX
    };
    let mut seq = 0;
    while seq < per && !run.time_up(seq, end) {
        send(&tx, fill::<N>(id, seq), block);
        seq += 1;
    }
    // Sent first: a consumer that sees every producer done reads the total.
    sh.sent.fetch_add(seq, SeqCst);
    sh.producers_done.fetch_add(1, SeqCst);
    seq
}

/// One Check per channel (the select workload's pair; else only the first
/// is used). A sole receiver of a pair sees a producer's sequence spread
/// over two channels: order is checked, gaps are not.
fn per_channel(run: &Run, sole: bool) -> [Check<'_>; 2] {
    let per = run.msgs / run.producers as u64;
    let exact = sole && run.test != Test::Select;
    [
        Check::new(run, run.producers, per, exact),
        Check::new(run, run.producers, per, exact),
    ]
}

fn consume<'a, const N: usize, R: Rx<[u64; N]>>(
    run: &'a Run,
    sh: &Shared,
    id: u32,
    rx: R,
    block: bool,
) -> [Check<'a>; 2] {
    run.pin(2 * id as usize + 1);
    let per = run.msgs / run.producers as u64;
    let sole = run.consumers == 1;
    let mut chks = per_channel(run, sole);
    sh.gate.wait();
    if block {
        loop {
            let (which, m) = rx.recv_which();
            if m[0] == SENTINEL {
                return chks;
            }
            chks[which].msg(&m);
            work(run.work);
        }
    }
    let chk = &mut chks[0];
    let total = per * run.producers as u64;
    let (mut flushed, mut idle_since, mut spins, mut polls) = (0u64, 0u64, 0u32, 0u32);
    loop {
        if let Some(m) = rx.try_recv() {
            chk.msg(&m);
            work(run.work);
            spins = 0;
            idle_since = 0;
            if sole && chk.count >= total {
                return chks;
            }
            continue;
        }
        // Empty: publish what we have and see whether everyone is done.
        if chk.count != flushed {
            sh.consumed.0.fetch_add(chk.count - flushed, SeqCst);
            flushed = chk.count;
        }
        if sh.producers_done.load(SeqCst) == run.producers {
            if sh.consumed.0.load(SeqCst) >= sh.sent.load(SeqCst) {
                return chks;
            }
            polls += 1;
            if polls % 1024 == 0 {
                let now = run.now();
                if idle_since == 0 {
                    idle_since = now;
                } else if now - idle_since > LOST_AFTER_NS {
                    run.die(&format!(
                        "{}: every producer finished, the queue stays empty, and only {} of \
                         {} messages arrived (this consumer: {}): messages were lost",
                        run.label,
                        sh.consumed.0.load(SeqCst),
                        sh.sent.load(SeqCst),
                        chk.count
                    ));
                }
            }
        }
        backoff(&mut spins);
    }
}

/// After every message sent was received, anything left in the channel is
/// a message received twice or made up.
fn expect_empty<const N: usize, R: Rx<[u64; N]>>(run: &Run, rx: &R) {
    if let Some(m) = rx.try_recv() {
        run.die(&format!(
            "{}: the queue still held a message after every message sent had \
                          been received (word {:#x}): a duplicate or an invented message",
            run.label, m[0]
        ));
    }
}

pub fn tput<const N: usize, T, R>(run: &Run, (tx, rx): (T, R), block: bool) -> Outcome
where
    T: Tx<[u64; N]>,
    R: Rx<[u64; N]>,
{
    let sh = Shared::default();
    let mut rest = per_channel(run, false);
    let (t0, sent, checks) = std::thread::scope(|s| {
        let producers: Vec<_> = (0..run.producers)
            .map(|id| {
                let (tx, sh) = (tx.clone(), &sh);
                s.spawn(move || produce::<N, T>(run, sh, id, tx, block))
            })
            .collect();
        let consumers: Vec<_> = (0..run.consumers)
            .map(|id| {
                let (rx, sh) = (rx.clone(), &sh);
                s.spawn(move || consume::<N, R>(run, sh, id, rx, block))
            })
            .collect();
        let t0 = sh.gate.open(run, run.producers + run.consumers);
        let sent: Vec<u64> = producers.into_iter().map(|h| h.join().unwrap()).collect();
        if block {
            for _ in 0..run.consumers {
                tx.send(sentinel::<N>());
            }
        }
        let checks: Vec<Check> = consumers
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect();
        (t0, sent, checks)
    });
    // Blocking runs: drain what a sentinel overtook; spinning runs: the
    // channel must be empty. Timed: every message counted was received.
    if !block {
        expect_empty(run, &rx);
    }
    while let Some((which, m)) = rx.try_recv_which() {
        if m[0] == SENTINEL {
            run.die(&format!(
                "{}: an extra sentinel: one was delivered twice",
                run.label
            ));
        }
        rest[which].msg(&m);
    }
    let t1 = run.now();
    let total_sent: u64 = sent.iter().sum();
    let all = || checks.iter().chain(rest.iter());
    let count = all().map(|c| c.count).sum::<u64>();
    let sum = all().fold(0u64, |a, c| a.wrapping_add(c.sum));
    if count != total_sent {
        run.die(&format!(
            "{}: received {} messages, {} were sent",
            run.label, count, total_sent
        ));
    }
    if sum != sent_sum(&sent) {
        run.die(&format!(
            "{}: the checksum of the received messages does not match what was \
                          sent (some lost and others duplicated)",
            run.label
        ));
    }
    let secs = (t1 - t0) as f64 / 1e9;
    Outcome {
        value: total_sent as f64 / secs / 1e6,
        p99: 0.0,
        p999: 0.0,
        msgs: total_sent,
    }
}

fn ping<const N: usize, T, R>(
    run: &Run,
    gate: &Gate,
    ab: T,
    ba: R,
    block: bool,
    samples: &mut [u64],
) -> u64
where
    T: Tx<[u64; N]>,
    R: Rx<[u64; N]>,
{
    run.pin(0);
    gate.wait();
    let start = run.now();
    let mut i = 0;
    while i < run.trips {
        let m = fill::<N>(0, i);
        let t = run.now();
        send(&ab, m, block);
        let back = recv(&ba, block);
        let now = run.now();
        samples[i as usize] = now - t;
        i += 1;
        if back != m {
            run.die(&format!(
                "{}: trip {} came back as word {:#x}",
                run.label,
                i - 1,
                back[0]
            ));
        }
        if now - start > run.trip_cap_ns {
            break;
        }
    }
    send(&ab, sentinel::<N>(), block);
    i
}

fn pong<const N: usize, T, R>(run: &Run, gate: &Gate, ba: T, ab: R, block: bool) -> u64
where
    T: Tx<[u64; N]>,
    R: Rx<[u64; N]>,
{
    run.pin(1);
    let mut chk = Check::new(run, 1, run.trips, true);
    gate.wait();
    loop {
        let m = recv(&ab, block);
        if m[0] == SENTINEL {
            return chk.count;
        }
        chk.msg(&m);
        send(&ba, m, block);
    }
}

/// Nearest rank, as sl-bench's slb_percentile.
fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = p * sorted.len() as f64;
    let mut k = rank as usize;
    if (k as f64) < rank {
        k += 1;
    }
    sorted[k.saturating_sub(1)] as f64
}

pub fn pingpong<const N: usize, T, R>(run: &Run, make: impl Fn() -> (T, R), block: bool) -> Outcome
where
    T: Tx<[u64; N]>,
    R: Rx<[u64; N]>,
{
    let ((ab_tx, ab_rx), (ba_tx, ba_rx)) = (make(), make());
    let mut samples = vec![0u64; run.trips as usize];
    let gate = Gate::default();
    let (n, echoed) = std::thread::scope(|s| {
        let (rx, tx, g) = (ab_rx.clone(), ba_tx.clone(), &gate);
        let b = s.spawn(move || pong::<N, T, R>(run, g, tx, rx, block));
        let (tx, rx, out) = (ab_tx.clone(), ba_rx.clone(), &mut samples);
        let a = s.spawn(move || ping::<N, T, R>(run, g, tx, rx, block, out));
        gate.open(run, 2);
        (a.join().unwrap(), b.join().unwrap())
    });
    if echoed != n {
        run.die(&format!(
            "{}: {} trips sent, {} echoed",
            run.label, n, echoed
        ));
    }
    expect_empty(run, &ab_rx);
    expect_empty(run, &ba_rx);
    let done = &mut samples[..n as usize];
    done.sort_unstable();
    Outcome {
        value: percentile(done, 0.50),
        p99: percentile(done, 0.99),
        p999: percentile(done, 0.999),
        msgs: n,
    }
}
