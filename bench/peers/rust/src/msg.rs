//! What every message carries and how a receiver verifies it: the same
//! layout, checks and failure messages as sl-bench's bench/msg.h, so that a
//! channel here that loses, duplicates, reorders or tears a message fails
//! the run exactly as an in-process contender would.
//!
//!   word 0: (producer + 1) << 48 | sequence   (an 8-byte message is just this)
//!   words 1..: word0 + i * K                  (a torn copy breaks the pattern)

use crate::run::Run;

pub const SEQ_BITS: u32 = 48;
pub const SEQ_MASK: u64 = (1u64 << SEQ_BITS) - 1;
pub const SENTINEL: u64 = 0xFFFF << SEQ_BITS;
const PAYLOAD_K: u64 = 0x9E37_79B9_7F4A_7C15;

pub fn word(producer: u32, seq: u64) -> u64 {
    ((producer as u64 + 1) << SEQ_BITS) | seq
}

pub fn fill<const N: usize>(producer: u32, seq: u64) -> [u64; N] {
    let w = word(producer, seq);
    let mut m = [0u64; N];
    for (i, x) in m.iter_mut().enumerate() {
        *x = w.wrapping_add((i as u64).wrapping_mul(PAYLOAD_K));
    }
    m
}

pub fn sentinel<const N: usize>() -> [u64; N] {
    let mut m = [0u64; N];
    m[0] = SENTINEL;
    m
}

/// The checksum adds a strong mix of every word 0 received: a lost message
/// and a duplicated one do not cancel out as they would in a plain sum.
pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The checksum a correct run ends with when producer p sent sent[p].
pub fn sent_sum(sent: &[u64]) -> u64 {
    let mut sum = 0u64;
    for (p, &n) in sent.iter().enumerate() {
        for seq in 0..n {
            sum = sum.wrapping_add(mix(word(p as u32, seq)));
        }
    }
    sum
}

/// One receiver's verification state. Every channel this program runs is
/// FIFO per producer (each is linearizable), so order is always checked.
pub struct Check<'a> {
    run: &'a Run,
    producers: u32,
    per_producer: u64,
    exact: bool, // the sole receiver: no sequence may be skipped either
    next: Vec<u64>,
    pub count: u64,
    pub sum: u64,
}

impl<'a> Check<'a> {
    pub fn new(run: &'a Run, producers: u32, per_producer: u64, sole: bool) -> Self {
        Check {
            run,
            producers,
            per_producer,
            exact: sole,
            next: vec![0; producers as usize],
            count: 0,
            sum: 0,
        }
    }

    #[inline]
    pub fn msg(&mut self, m: &[u64]) {
        let w = m[0];
        let p = (w >> SEQ_BITS) as u32;
        let seq = w & SEQ_MASK;
        if p == 0 || p > self.producers || seq >= self.per_producer {
            self.fail(m, "a message that was never sent");
        }
        let next = &mut self.next[(p - 1) as usize];
        if if self.exact {
            seq != *next
        } else {
            seq < *next
        } {
            self.fail(
                m,
                if self.exact {
                    "a message out of order (or one lost)"
                } else {
                    "a message out of per-producer order"
                },
            );
        }
        *next = seq + 1;
        for (i, &x) in m.iter().enumerate().skip(1) {
            if x != w.wrapping_add((i as u64).wrapping_mul(PAYLOAD_K)) {
                self.fail(m, "a torn message (payload does not match its header)");
            }
        }
        self.count += 1;
        self.sum = self.sum.wrapping_add(mix(w));
    }

    #[cold]
    fn fail(&self, m: &[u64], what: &str) -> ! {
        let w = m[0];
        self.run.die(&format!(
            "{}: received {}: producer {}, sequence {} (word {:#x}), after {} good messages",
            self.run.label,
            what,
            w >> SEQ_BITS,
            w & SEQ_MASK,
            w,
            self.count
        ))
    }
}
