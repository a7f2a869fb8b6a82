//! sl-peer-rust — crossbeam-channel and flume as contenders of `sl-bench chan`.
//!
//! sl-bench starts this program once per run, with the run's parameters on
//! the command line (bench/remote.c has the protocol), among its in-process
//! contenders in the same shuffled rounds. The program runs the workload
//! with its own threads, times and verifies it as sl-bench does (msg.rs,
//! workloads.rs) and prints one line: `ok VALUE P99 P999 MSGS`, or
//! `unsupported WHY` for a message size it was not built for. A failed
//! check prints sl-bench's failure message and exits with status 2.
//!
//! Standard input is sl-bench's end of a pipe: when it closes (sl-bench
//! died, e.g. its watchdog fired) this program stops too.

mod msg;
mod run;
mod select;
mod workloads;

use std::io::Read;

use run::{Run, Rx, Test, Tx};
use select::CbPair;
use workloads::{pingpong, tput, Outcome};

/// crossbeam-channel and flume spell their endpoints alike (Sender,
/// Receiver, TrySendError::Full, TryRecvError::Empty), so one definition
/// serves both crates.
macro_rules! endpoints {
    ($krate:ident) => {
        impl<M: Send> Tx<M> for $krate::Sender<M> {
            fn try_send(&self, m: M) -> bool {
                match $krate::Sender::try_send(self, m) {
                    Ok(()) => true,
                    Err($krate::TrySendError::Full(_)) => false,
                    Err($krate::TrySendError::Disconnected(_)) => panic!("disconnected"),
                }
            }
            fn send(&self, m: M) {
                $krate::Sender::send(self, m).expect("disconnected")
            }
        }

        impl<M: Send> Rx<M> for $krate::Receiver<M> {
            fn try_recv(&self) -> Option<M> {
                match $krate::Receiver::try_recv(self) {
                    Ok(m) => Some(m),
                    Err($krate::TryRecvError::Empty) => None,
                    Err($krate::TryRecvError::Disconnected) => panic!("disconnected"),
                }
            }
            fn recv(&self) -> M {
                $krate::Receiver::recv(self).expect("disconnected")
            }
        }
    };
}

endpoints!(crossbeam_channel);
endpoints!(flume);

/// Which channel, and whether the workload uses its blocking calls (the
/// "blocking" kind) or its try calls with sl-bench's spin-then-yield wait
/// (the "mpmc" kind). The names are the variants sl-bench passes.
#[derive(Clone, Copy)]
enum Chan {
    CrossbeamBounded,
    CrossbeamUnbounded,
    FlumeBounded,
    FlumeUnbounded,
    CrossbeamSelect, // two bounded channels, select! on both sides
}

fn variant(name: &str) -> Option<(Chan, bool)> {
    Some(match name {
        "crossbeam-bounded-try" => (Chan::CrossbeamBounded, false),
        "crossbeam-bounded-blocking" => (Chan::CrossbeamBounded, true),
        "crossbeam-unbounded-try" => (Chan::CrossbeamUnbounded, false),
        "crossbeam-unbounded-blocking" => (Chan::CrossbeamUnbounded, true),
        "flume-bounded-try" => (Chan::FlumeBounded, false),
        "flume-bounded-blocking" => (Chan::FlumeBounded, true),
        "flume-unbounded-try" => (Chan::FlumeUnbounded, false),
        "flume-unbounded-blocking" => (Chan::FlumeUnbounded, true),
        "crossbeam-select" => (Chan::CrossbeamSelect, true),
        _ => return None,
    })
}

fn workload<const N: usize, T, R>(run: &Run, block: bool, make: impl Fn() -> (T, R)) -> Outcome
where
    T: Tx<[u64; N]>,
    R: Rx<[u64; N]>,
{
    match run.test {
        Test::Tput | Test::Select => tput::<N, T, R>(run, make(), block),
        Test::PingPong => pingpong::<N, T, R>(run, make, block),
    }
}

/// Messages are [u64; N]: a fixed-size array sent by value, as a user
/// would send a small struct.
fn sized<const N: usize>(run: &Run, chan: Chan, block: bool) -> Outcome {
    let cap = run.capacity;
    match chan {
        Chan::CrossbeamBounded => {
            workload::<N, _, _>(run, block, || crossbeam_channel::bounded(cap))
        }
        Chan::CrossbeamUnbounded => workload::<N, _, _>(run, block, crossbeam_channel::unbounded),
        Chan::FlumeBounded => workload::<N, _, _>(run, block, || flume::bounded(cap)),
        Chan::FlumeUnbounded => workload::<N, _, _>(run, block, flume::unbounded),
        Chan::CrossbeamSelect => workload::<N, _, _>(run, block, || {
            let (t0, r0) = crossbeam_channel::bounded(cap);
            let (t1, r1) = crossbeam_channel::bounded(cap);
            (CbPair(t0, t1), CbPair(r0, r1))
        }),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let run = Run::parse(&args);
    let (chan, block) =
        variant(&args[1]).unwrap_or_else(|| run::usage(&format!("unknown variant '{}'", args[1])));
    std::thread::spawn(|| {
        let mut buf = [0u8; 64];
        while matches!(std::io::stdin().read(&mut buf), Ok(n) if n > 0) {}
        std::process::exit(3);
    });
    let out = match run.elem / 8 {
        1 => sized::<1>(&run, chan, block),
        2 => sized::<2>(&run, chan, block),
        4 => sized::<4>(&run, chan, block),
        8 => sized::<8>(&run, chan, block),
        16 => sized::<16>(&run, chan, block),
        32 => sized::<32>(&run, chan, block),
        _ => {
            println!("unsupported built for 8, 16, 32, 64, 128 and 256-byte messages");
            return;
        }
    };
    println!("ok {:.6} {} {} {}", out.value, out.p99, out.p999, out.msgs);
}
