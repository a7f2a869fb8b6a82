//! One run's parameters as sl-bench passed them, and what every workload
//! shares with sl-bench's C driver: the clock, pinning, the start gate, the
//! wait of a spinning thread, and the one way a run fails.

use std::process::exit;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Instant;

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Test {
    Tput,
    PingPong,
    Select, // tput's shape over a pair of channels, select on both sides
}

pub struct Run {
    pub name: String,  // the contender, for failure messages
    pub label: String, // the workload, e.g. "tput 2x2 8B"
    pub test: Test,
    pub producers: u32,
    pub consumers: u32,
    pub elem: usize,
    pub capacity: usize,
    pub msgs: u64,        // tput: all producers together
    pub cap_ns: u64,      // tput: producers stop after this; 0 = never
    pub trips: u64,       // ping-pong: at most this many
    pub trip_cap_ns: u64, // ...or until this much time has passed
    pub pin_ncpu: usize,  // thread index i runs on CPU i % pin_ncpu; < 2: unpinned
    pub work: u64,        // tput: pause hints a consumer spends on each message
    base: Instant,
}

fn num(args: &[String], i: usize) -> u64 {
    args[i]
        .parse()
        .unwrap_or_else(|_| usage(&format!("'{}' is not a number", args[i])))
}

pub fn usage(why: &str) -> ! {
    eprintln!(
        "sl-peer: {}\nusage: sl-peer NAME VARIANT tput|pingpong|select PRODUCERS CONSUMERS ELEM \
         CAPACITY MSGS CAP_NS TRIPS TRIP_CAP_NS PIN_NCPU WORK LABEL\n\
         (started by sl-bench chan, one run per process; see bench/remote.c)",
        why
    );
    exit(2)
}

impl Run {
    /// args: the command line without the program's name.
    pub fn parse(args: &[String]) -> Run {
        if args.len() != 14 {
            usage("wrong number of arguments");
        }
        let test = match args[2].as_str() {
            "tput" => Test::Tput,
            "pingpong" => Test::PingPong,
            "select" => Test::Select,
            t => usage(&format!("unknown test '{}'", t)),
        };
        let run = Run {
            name: args[0].clone(),
            label: args[13].clone(),
            test,
            producers: num(args, 3) as u32,
            consumers: num(args, 4) as u32,
            elem: num(args, 5) as usize,
            capacity: num(args, 6) as usize,
            msgs: num(args, 7),
            cap_ns: num(args, 8),
            trips: num(args, 9),
            trip_cap_ns: num(args, 10),
            pin_ncpu: num(args, 11) as usize,
            work: num(args, 12),
            base: Instant::now(),
        };
        if run.producers == 0
            || run.consumers == 0
            || run.producers > 0xFFFE
            || run.elem == 0
            || run.elem % 8 != 0
            || (run.capacity == 0 && run.test != Test::PingPong)
        {
            usage("bad workload parameters");
        }
        run
    }

    /// Nanoseconds on CLOCK_MONOTONIC (what Instant reads on Linux), from
    /// the start of this run.
    pub fn now(&self) -> u64 {
        self.base.elapsed().as_nanos() as u64
    }

    /// As the C driver's slb_time_up: looks at the clock every 256 messages.
    pub fn time_up(&self, seq: u64, end: u64) -> bool {
        seq & 255 == 0 && end != u64::MAX && seq != 0 && self.now() > end
    }

    /// Pins the calling thread to the CPU of thread index i, as sl-bench's
    /// slb_cpu_for does (producer k: 2k, consumer k: 2k + 1; ping 0, pong 1).
    pub fn pin(&self, index: usize) {
        if self.pin_ncpu < 2 {
            return;
        }
        let cpu = index % self.pin_ncpu;
        let mut mask = [0u64; 16];
        if cpu >= 64 * mask.len() {
            return;
        }
        mask[cpu / 64] |= 1u64 << (cpu % 64);
        // SAFETY: the mask outlives the call and its size is passed.
        let rc = unsafe { sched_setaffinity(0, std::mem::size_of_val(&mask), mask.as_ptr()) };
        if rc != 0 {
            eprintln!(
                "sl-peer: cannot pin a thread to CPU {}; running unpinned",
                cpu
            );
        }
    }

    /// A verification failure: the same words as sl-bench's slb_die, and
    /// exit status 2, which sl-bench passes on.
    pub fn die(&self, msg: &str) -> ! {
        eprintln!("\nsl-bench: FAILED — contender '{}': {}", self.name, msg);
        exit(2)
    }
}

extern "C" {
    // glibc; pid 0 is the calling thread. std links libc already.
    fn sched_setaffinity(pid: i32, size: usize, mask: *const u64) -> i32;
}

/// Every spinning contender waits the same way: a short spin, then yield
/// the CPU (with 4x4 on two cores the thread waited for may need ours).
/// A consumer's work on a message it received: as the C driver's slb_work.
pub fn work(n: u64) {
    for _ in 0..n {
        std::hint::spin_loop();
    }
}

pub fn backoff(spins: &mut u32) {
    *spins += 1;
    if *spins < 128 {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

/// The thread start line: every thread arrives, then all go at once, so
/// that thread creation is not timed.
#[derive(Default)]
pub struct Gate {
    ready: AtomicU32,
    go: AtomicBool,
}

impl Gate {
    pub fn wait(&self) {
        self.ready.fetch_add(1, Ordering::SeqCst);
        while !self.go.load(Ordering::Acquire) {
            std::thread::yield_now();
        }
    }

    /// Waits for n arrivals; returns the start time.
    pub fn open(&self, run: &Run, n: u32) -> u64 {
        while self.ready.load(Ordering::SeqCst) < n {
            std::thread::yield_now();
        }
        let t0 = run.now();
        // Release: the threads that see go see everything set up before.
        self.go.store(true, Ordering::Release);
        t0
    }
}

/// The two ends of a channel, as the workloads use them. `false`/`None`
/// means full/empty; a disconnected channel cannot happen while the run
/// holds both ends, so it is a bug and panics.
pub trait Tx<M>: Clone + Send {
    fn try_send(&self, m: M) -> bool;
    fn send(&self, m: M);
}

pub trait Rx<M>: Clone + Send {
    fn try_recv(&self) -> Option<M>;
    fn recv(&self) -> M;
    /// The receive with the index of the channel it came from: always 0
    /// for one channel; a pair (the select workload) says which of its two,
    /// so that order is checked per channel.
    fn recv_which(&self) -> (usize, M) {
        (0, self.recv())
    }
    fn try_recv_which(&self) -> Option<(usize, M)> {
        self.try_recv().map(|m| (0, m))
    }
}

pub fn send<M: Copy, T: Tx<M>>(tx: &T, m: M, block: bool) {
    if block {
        return tx.send(m);
    }
    let mut spins = 0;
    while !tx.try_send(m) {
        backoff(&mut spins);
    }
}

pub fn recv<M, R: Rx<M>>(rx: &R, block: bool) -> M {
    if block {
        return rx.recv();
    }
    let mut spins = 0;
    loop {
        if let Some(m) = rx.try_recv() {
            return m;
        }
        backoff(&mut spins);
    }
}
