/*
 * sluice/park.h — an eventcount: the parking layer under every blocking call.
 *
 * An eventcount lets a thread sleep until some condition, expressed in the
 * caller's own atomics, may have become true — without a lock and without a
 * system call on the notify side while nobody sleeps. It is what sluice's
 * blocking channels, the pool and the executor park on, and it is exported so
 * that people building their own executors can park on sluice's terms.
 *
 * The waiter's protocol (three phases: spin, prepare/re-check, sleep):
 *
 *     for (;;) {
 *         if (try_the_operation()) return;              // phase 1: the caller spins
 *         uint32_t key = sl_event_prepare(&ev);          // phase 2: register
 *         if (try_the_operation()) { sl_event_cancel(&ev); return; }
 *         if (sl_event_wait(&ev, key, deadline) == SL_TIMEDOUT) { ...; }  // phase 3
 *     }
 *
 * The notifier: make the condition true, then call sl_event_notify_one() or
 * sl_event_notify_all(). The condition change must be ordered before the
 * notify's read of the waiter count: either it is a seq_cst read-modify-write,
 * or the notifier calls sl_event_fence() between the two (a Dekker pair with
 * the barrier inside sl_event_prepare). Then no wake-up is lost: a waiter that
 * registered before the notify read the count is either woken or sees the
 * condition on its re-check.
 *
 * The barrier is asymmetric where the kernel allows it: sl_event_prepare, the
 * rare side that is about to sleep anyway, issues membarrier(2)
 * (MEMBARRIER_CMD_PRIVATE_EXPEDITED), which forces a full barrier on every
 * running thread of the process, and sl_event_fence() is then only a compiler
 * barrier. Where membarrier is unavailable (registration fails), both sides
 * use a seq_cst fence. A barrier call that fails after registration succeeded
 * is retried while the error is transient and otherwise aborts the process
 * with the reason: the notifiers already rely on it (docs/guarantees.md).
 *
 * Concurrency:
 *   | operation            | may run concurrently with            |
 *   |----------------------|--------------------------------------|
 *   | prepare/cancel/wait  | everything, on any number of threads |
 *   | notify_one/all       | everything, on any number of threads |
 *   | init                 | nothing (before first use)           |
 *
 * Time: deadlines are absolute nanoseconds on CLOCK_MONOTONIC, as returned by
 * sl_deadline_after(); SL_FOREVER means no limit.
 */
#ifndef SLUICE_PARK_H
#define SLUICE_PARK_H

#include "sluice/base.h"
#include "sluice/status.h"

SL_BEGIN_DECLS

typedef struct sl_event {
    SL_ATOMIC(uint32_t) epoch;   /* the futex word: bumped by each notify that finds waiters */
    SL_ATOMIC(uint32_t) waiters; /* threads between prepare and the end of wait or cancel */
} sl_event;

/* A NULL ev is bad input, never a crash: sl_event_wait returns SL_EINVAL,
 * sl_event_prepare and sl_event_waiters return 0, the others do nothing. */

/* Initialises ev with no waiters. Not concurrent with any other use of ev. */
SL_API void sl_event_init(sl_event *ev);

/* Initialises ev, in memory shared between processes (internal: the shared
 * channels of sluice/shm.h), with no waiters: its futex calls then reach
 * waiters in every process that maps it. Not concurrent with any other use. */
SL_API void sl__event_init_shared(sl_event *ev);

/* 1 once this process must issue membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED)
 * as the heavy barrier of a shared eventcount, because a shared channel it
 * has open is in asymmetric mode (internal: decided by channels/shm.c before
 * that channel's handle exists; never changed back). */
SL_API extern SL_ATOMIC(int) sl__event_global;

/* The heavy barrier of a waiter on a shared eventcount, or of anything that
 * registers interest in a shared channel by other means (a receiver deciding
 * SL_CLOSED): a seq_cst fence, and with sl__event_global the global
 * expedited membarrier, which forces a full barrier on every running thread
 * of every process registered for it (internal; docs/guarantees.md "Across
 * processes"). A failure is handled as sl_event_heavy_fence's. */
SL_API void sl__event_heavy_fence_shared(void);

/* Registers the caller as a waiter and returns the key to pass to
 * sl_event_wait. Acts as a full (seq_cst) fence after the registration, so the
 * caller's re-check of its condition cannot be reordered before it.
 * Lock-free: one atomic increment, then the heavy barrier (a membarrier
 * system call in asymmetric mode, sl_event_heavy_fence). Must be followed
 * by exactly one
 * sl_event_cancel or sl_event_wait on the same thread. */
SL_API uint32_t sl_event_prepare(sl_event *ev);

/* Withdraws a registration made by sl_event_prepare (the condition turned out
 * true on the re-check). Wait-free. */
SL_API void sl_event_cancel(sl_event *ev);

/* Sleeps until a notify after the matching prepare, or until the absolute
 * monotonic deadline. Spins briefly on the epoch first, then sleeps in the
 * kernel (FUTEX_WAIT), retrying on EINTR and spurious wake-ups. Ends the
 * registration in every case.
 * Returns SL_OK when notified (or when the epoch had already moved, whatever
 * the deadline), or SL_TIMEDOUT, never before the deadline: a deadline that
 * has passed (sl_deadline_after(0)) looks once. Acts as acquire: what the
 * notifier did before its notify is visible after SL_OK. Blocking. */
SL_API sl_status sl_event_wait(sl_event *ev, uint32_t key, uint64_t deadline_ns);

/* The out-of-line part of sl_event_notify_one (use that): wakes one waiter, if
 * any is registered. With no waiter it makes no system call: one seq_cst load.
 * A waiter counts as registered until it has run after its wake-up, so a
 * notify in between makes a FUTEX_WAKE that wakes nobody (sluice's channels
 * avoid that with a count of their own sleepers: internal/await.h).
 * Lock-free; see the header comment for the ordering the caller must provide
 * before it. */
SL_API void sl_event_notify_one_slow(sl_event *ev);
/* Wakes every registered waiter; no system call when there is none. */
SL_API void sl_event_notify_all_slow(sl_event *ev);
/* Wakes up to n waiters (n messages made available at once). */
SL_API void sl_event_notify_n_slow(sl_event *ev, size_t n);

/* 1 once the asymmetric barrier is in use (decided once, before the first
 * eventcount exists, and never changed after); read by sl_event_fence. */
SL_API extern SL_ATOMIC(int) sl__event_asymmetric;

/* Issues the full barrier a waiter's registration needs: membarrier(2) in
 * asymmetric mode, a seq_cst fence otherwise. sl_event_prepare calls it; so
 * does anything that registers interest by other means (select, an SL_SPSC
 * receiver deciding SL_CLOSED). A membarrier failure is retried while
 * transient (ENOMEM, EAGAIN, EINTR), else aborts with the reason. */
SL_API void sl_event_heavy_fence(void);

/* Number of registered waiters now (a snapshot). */
SL_API uint32_t sl_event_waiters(const sl_event *ev);

/* Now, in nanoseconds on CLOCK_MONOTONIC. */
SL_API uint64_t sl_now_ns(void);
/* The absolute deadline timeout_ns from now; SL_FOREVER for SL_FOREVER and on
 * overflow. 0 gives "now" (a deadline that has already passed). */
SL_API uint64_t sl_deadline_after(uint64_t timeout_ns);

#if !defined(__cplusplus)
/* (The inline definitions name their parameters sl_*_, as SL_CHAN_TYPED
 * does, sluice/chan.h: a program's file-scope `ev` is not shadowed.) */

/* Orders the caller's preceding store (its condition change) before the
 * notify's load of the waiter count. A compiler barrier when the waiters use
 * membarrier, otherwise a seq_cst fence. */
static inline void sl__event_fence_fast(void)
{
    if (atomic_load_explicit(&sl__event_asymmetric, memory_order_relaxed))
        atomic_signal_fence(memory_order_seq_cst);
    else
        atomic_thread_fence(memory_order_seq_cst);
}

/* The notify fast path: the waiter count is read with seq_cst so that it pairs
 * with the caller's seq_cst condition change (or fence) — see above. */
static inline void sl__event_notify_one_fast(sl_event *sl_ev_)
{
    if (sl_ev_ && atomic_load_explicit(&sl_ev_->waiters, memory_order_seq_cst) != 0)
        sl_event_notify_one_slow(sl_ev_);
}
static inline void sl__event_notify_all_fast(sl_event *sl_ev_)
{
    if (sl_ev_ && atomic_load_explicit(&sl_ev_->waiters, memory_order_seq_cst) != 0)
        sl_event_notify_all_slow(sl_ev_);
}
static inline void sl__event_notify_n_fast(sl_event *sl_ev_, size_t sl_n_)
{
    if (sl_ev_ && atomic_load_explicit(&sl_ev_->waiters, memory_order_seq_cst) != 0)
        sl_event_notify_n_slow(sl_ev_, sl_n_);
}
#endif

#if SL_INLINE_FAST_PATHS
static inline void sl_event_fence(void) { sl__event_fence_fast(); }
static inline void sl_event_notify_one(sl_event *sl_ev_) { sl__event_notify_one_fast(sl_ev_); }
static inline void sl_event_notify_all(sl_event *sl_ev_) { sl__event_notify_all_fast(sl_ev_); }
static inline void sl_event_notify_n(sl_event *sl_ev_, size_t sl_n_)
{
    sl__event_notify_n_fast(sl_ev_, sl_n_);
}
#else
SL_API void sl_event_fence(void);
SL_API void sl_event_notify_one(sl_event *ev);
SL_API void sl_event_notify_all(sl_event *ev);
SL_API void sl_event_notify_n(sl_event *ev, size_t n);
#endif

SL_END_DECLS

#endif /* SLUICE_PARK_H */
