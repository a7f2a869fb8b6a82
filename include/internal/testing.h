/*
 * internal/testing.h — hooks for sluice's own tests (internal, not installed).
 *
 * Tests link the static library, where these hidden symbols are reachable.
 * They exist so that tests can start ring counters near wrap-around and
 * replace the system layer (sysops.h: futex, clock, allocation, threads).
 * The raw queues define their hooks and include this header for the
 * prototypes, so it names the
 * structures by tag only: a raw queue never sees the channel façade.
 */
#ifndef SLUICE_INTERNAL_TESTING_H
#define SLUICE_INTERNAL_TESTING_H

#include "sluice/base.h"
#include "sluice/status.h"
#include "internal/sysops.h"

struct sl_spsc;
struct sl_mpmc;
struct sl_ring;
struct sl_chan;
struct sl_chan_opts;

/* As sl_spsc_init / sl_mpmc_init / sl_ring_init / sl_chan_new, with both
 * counters starting at `start` instead of 0 (e.g. UINT64_MAX - 100 to cross
 * the wrap early). */
sl_status sl__spsc_init_at(struct sl_spsc *q, size_t elem_size, size_t capacity, uint64_t start);
sl_status sl__mpmc_init_at(struct sl_mpmc *q, size_t elem_size, size_t capacity, uint64_t start);
sl_status sl__ring_init_at(struct sl_ring *r, size_t elem_size, size_t capacity, uint64_t start);
sl_status sl__chan_new_at(struct sl_chan **out, const struct sl_chan_opts *opts, uint64_t start);
/* As sl__mpmc_init_at, with `spares` spare slots in SL_MPMC's swap form
 * (messages of 9 to 256 bytes; 0 or more than the capacity: the capacity),
 * so that a test can hold every spare (channels/mpmc.c). */
sl_status sl__mpmc_init_spares(struct sl_mpmc *q, size_t elem_size, size_t capacity,
                               uint64_t start, size_t spares);

/* Reclamation records ever registered (internal/epoch.h): the most threads
 * that were using lists at once, since records are reused after thread exit. */
size_t sl__epoch_records(void);

/* How often a waiter on a shared channel, or an empty receive, looks again
 * (channels/shm_owner.c): SL_SHM_LOOK_MS in nanoseconds. A test hook: a test that
 * must see a cross-process wake-up come from the futex, not from the
 * periodic look that would also rescue a lost one, lengthens it before it
 * forks (and restores it). Read relaxed; set only while no shared channel
 * is in use. */
extern uint64_t sl__shm_look_ns;

/* This process's pid and time namespaces as the shared channels see them
 * (channels/shm_identity.c, "shm_ns"): a test hook that makes the process, from now
 * on, foreign to every segment created in its real namespaces (or, given
 * those values back, native again). Call it after the process's first
 * shared channel exists (which reads the real ones) and while no other
 * thread uses one. */
void sl__shm_set_namespaces(uint64_t pid_ns, uint64_t time_ns);

/* The shared channels' barrier mode in this process (channels/shm.c; also
 * declared in chan_impl.h): 1 while its fast sides use a compiler barrier. */
extern SL_ATOMIC(int) sl__shm_light;

#if defined(SL_FAULT_INJECT) && SL_FAULT_INJECT
/* Fault-injection builds only (channels/fault.c). A thread stopped at a chosen
 * SL_FI() mark: sl__fi_arm makes the calling thread count the marks it passes
 * from now on (taking no random stall while armed) and, at the k-th (k >= 1),
 * call stop(ctx, k) right there, inside the algorithm's step. stop is the
 * test's: it reports the stop and blocks on the test's own mutex, condition
 * variable or futex (never on sluice) until the test releases it; it must not
 * call sluice. sl__fi_disarm ends the count and returns the marks passed since
 * sl__fi_arm (fewer than k: the thread never reached step k). */
typedef void (*sl_fi_stop_fn)(void *ctx, unsigned step);
void sl__fi_arm(unsigned k, sl_fi_stop_fn stop, void *ctx);
unsigned sl__fi_disarm(void);
#endif

#endif /* SLUICE_INTERNAL_TESTING_H */
