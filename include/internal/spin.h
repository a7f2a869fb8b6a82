/*
 * internal/spin.h — the CPU's spin-wait hint and the spin budgets (internal).
 */
#ifndef SLUICE_INTERNAL_SPIN_H
#define SLUICE_INTERNAL_SPIN_H

/* Tells the core we are spin-waiting: frees pipeline resources for the sibling
 * hyperthread and avoids the memory-order mis-speculation flush on exit. */
static inline void sl_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#else
    __asm__ __volatile__("" ::: "memory");
#endif
}

/* Phase 1 of parking (internal/await.h, SL__AWAIT_SPIN): up to
 * SL_SPIN_TRIES retries of the condition (fewer where the spin learned,
 * below), with pause hints of 1, 1, 2, 2, 4, 4 … up to SL_SPIN_RELAX_MAX
 * between retries: at most 254 pauses, 5–13 µs here (a pause measured 20–50
 * ns). That covers a cross-core hand-off (0.1–1 µs on this VM) several times
 * over; longer only burns the core an oversubscribed peer needs — with 64
 * tries (3 800 pauses, ~170 µs) the blocking 4x4 benchmark spent a third of
 * its CPU here. Each pause length twice, not once (8 tries, 191 pauses,
 * until the receive streak): a ping-pong reply lands while its receiver is
 * in the middle of a pause, which it sits out, so pauses that double at
 * every try made the blocking round trip 20-60 % longer than the try loop's
 * (docs/performance.md, "The receive streak"). */
#define SL_SPIN_TRIES 14
#define SL_SPIN_RELAX_MAX 64
/* The spin learns (channels/park.c, sl__await_spin): a thread whose spin
 * saw nothing, and whose yields after it then saw its condition (a partner
 * on its own CPU), halves its next budget of tries, down to this many, and
 * is back at SL_SPIN_TRIES after a spin that saw its condition; every
 * SL_SPIN_PROBE-th spin (a power of two) takes all SL_SPIN_TRIES. When
 * every partner is on the waiter's CPU no spin can see the condition
 * change: with all of them on one CPU, the fixed 14 tries (~7 µs each
 * blocked call) held the blocking SL_MPMC channel to x0.43-x0.61 of
 * crossbeam's (docs/performance.md, "Every thread on one CPU"). */
#define SL_SPIN_TRIES_MIN 2
#define SL_SPIN_PROBE 16
/* The first pause of a patient spin (SL__AWAIT_PATIENT): a receiver that
 * found SL_RECV_STREAK messages in a row at its first try, then none, lets
 * the producer write about a microsecond's worth before it looks again
 * (channels/chan_wait.c, "The receive streak"; docs/performance.md). */
#define SL_SPIN_PATIENT_START 32
#define SL_RECV_STREAK 16
/* Then a few sched_yield() calls: on an oversubscribed machine the peer we
 * wait for may need our core. */
#define SL_SPIN_YIELDS 4
/* Phase 3 opens with a short spin on the eventcount's epoch. */
#define SL_PARK_EPOCH_SPIN 32

#endif /* SLUICE_INTERNAL_SPIN_H */
