/*
 * channels/park.c — the parking layer: the eventcount's slow paths (sluice/park.h)
 * and the one wait built on it, sl__event_await (internal/await.h).
 *
 * State: `epoch`, the futex word, and `waiters`, the number of threads between
 * sl_event_prepare and the end of their wait. The no-lost-wake-up argument
 * (docs/guarantees.md, "The eventcount"):
 *
 *   waiter   W1 waiters += 1 (seq_cst) ; fence(seq_cst) ; W2 key = epoch
 *            W3 re-check the condition ; W4 FUTEX_WAIT(epoch, key)
 *   notifier N1 make the condition true (seq_cst RMW, or store + fence)
 *            N2 read waiters (seq_cst) ; if 0: done
 *            N3 epoch += 1 ; N4 FUTEX_WAKE(epoch)
 *
 * If N2 reads 0, W1 is later in the seq_cst order, so W3 sees N1 and the
 * waiter does not sleep. (All updates of `waiters` are seq_cst, so the load
 * cannot read a decrement ordered before W1 either.) Otherwise the notifier
 * bumps the epoch: if W2 read the new epoch, N1 happens-before W3 (N3
 * releases, W2 acquires) and the waiter does not sleep; if W2 read the old
 * epoch, FUTEX_WAIT either finds the word changed (EAGAIN) or is already
 * queued when N4 wakes it, because the kernel compares and queues atomically
 * with respect to FUTEX_WAKE.
 *
 * notify_one's FUTEX_WAKE(1) wakes *some* queued thread, possibly one that
 * prepared after N3 and holds the new key. That thread's key load acquired
 * N3, so its re-check saw N1: it was woken for a condition that was true, and
 * if another thread consumed it first, no condition change is left without a
 * wake. Every waiter retries its operation after every wake (sl__event_await
 * below), so the wake is never swallowed by a thread that leaves without
 * looking.
 *
 * sl__event_await (internal/await.h) is that waiter's side written once: every
 * blocking call with a re-checkable condition goes through it, so the steps
 * W1–W4 above are the ones it takes, in that order, for all of them.
 *
 * The epoch's bit 0 says whether the eventcount lives in memory shared
 * between processes (sl__event_init_shared): its futex calls then go without
 * FUTEX_PRIVATE_FLAG, which keys the wait by the mapped object rather than by
 * this process's address space, so a waiter in one process is woken by a
 * notifier in another (docs/guarantees.md, "Across processes"). Every notify
 * adds 2, leaving the bit as it was.
 *
 * The epoch moves in steps of 2: a waiter descheduled between W2 and W4
 * while exactly 2^31 notifies happen would sleep on a stale key. We accept
 * that window.
 */
#define SL_NO_INLINE 1
#include "sluice/park.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal/await.h"
#include "internal/spin.h"
#include "internal/sysops.h"

SL_API SL_ATOMIC(int) sl__event_asymmetric;

/* Decides the barrier mode once, before the first eventcount exists, so that
 * no waiter and notifier ever disagree: registering for expedited private
 * membarrier either works (asymmetric mode from now on) or not (fences on
 * both sides, from the start: nothing was ever left to a compiler barrier). */
static void choose_barrier(void)
{
    if (sl__membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0)
        atomic_store_explicit(&sl__event_asymmetric, 1, memory_order_relaxed);
}

static pthread_once_t barrier_once = PTHREAD_ONCE_INIT;

void sl__event_choose_barrier(void)
{
    pthread_once(&barrier_once, choose_barrier);
}

/* One step of the epoch: bit 0 is the shared mark, never changed. */
#define EPOCH_STEP 2u

static void event_init(sl_event *ev, uint32_t mark)
{
    sl__event_choose_barrier();
    atomic_init(&ev->epoch, mark);
    atomic_init(&ev->waiters, 0u);
}

SL_API void sl_event_init(sl_event *ev)
{
    if (ev)
        event_init(ev, 0u);
}

SL_API void sl__event_init_shared(sl_event *ev)
{
    if (ev)
        event_init(ev, 1u);
}

/* Whether an epoch value (a key, or what a bump returned) belongs to an
 * eventcount shared between processes. */
static inline bool epoch_shared(uint32_t epoch)
{
#ifdef SL_MUTANT_SHM_PRIVATE_FUTEX
    (void)epoch;
    return false; /* planted bug: shared eventcounts use process-private futexes */
#endif
    return (epoch & 1u) != 0;
}

static int futex_wait_epoch(sl_event *ev, uint32_t key, uint64_t deadline_ns)
{
    return epoch_shared(key) ? sl__futex_wait_shared(&ev->epoch, key, deadline_ns)
                             : sl__futex_wait(&ev->epoch, key, deadline_ns);
}

/* Bumps the epoch (release: what the notifier did before is visible to the
 * waiter that acquires the new epoch) and wakes up to count waiters. With
 * unwoken sleepers counted (await.h), the wake only while the count is not
 * 0, and the threads it woke come off the count: the bump is seq_cst, so
 * that it precedes the count's load in the total order (docs/guarantees.md,
 * "Unwoken sleepers"). */
static void bump_and_wake(sl_event *ev, int count, SL_ATOMIC(uint32_t) *unwoken)
{
    uint32_t was = atomic_fetch_add_explicit(&ev->epoch, EPOCH_STEP, memory_order_seq_cst);
    SL_FI(); /* epoch moved, not yet woken */
    if (epoch_shared(was)) {
        sl__futex_wake_shared(&ev->epoch, count);
        return;
    }
    if (unwoken && atomic_load_explicit(unwoken, memory_order_seq_cst) == 0)
        return; /* nobody asleep that a notify has not woken already */
    int woken = sl__futex_wake(&ev->epoch, count);
    if (unwoken && woken > 0)
        atomic_fetch_sub_explicit(unwoken, (uint32_t)woken, memory_order_seq_cst);
}

/* Tries of a barrier that fails with an error the kernel may not repeat (its
 * allocation of a CPU mask), 100 µs apart. */
#define BARRIER_TRIES 20

/* Sleeps ns (< 1 s) through the system call: nanosleep(3) is a cancellation
 * point, and no wait may be one (chan.h). */
static void pause_uncancelled(long ns)
{
    struct timespec pause = {0, ns};
    syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &pause, NULL);
}

/* The barrier of asymmetric mode, which cannot be skipped: the notifiers
 * already rely on it (they have only a compiler barrier between their store
 * and their load), and switching them to fences now would not cover one
 * preempted inside that window. A transient error is retried; any other
 * means the process changed under sluice after registering (a seccomp filter
 * installed later, say), and a parked thread could miss its wake-up or a
 * receiver misjudge a close: stop, saying why (docs/guarantees.md). `cmd` is
 * the private or (shared channels) the global expedited command. */
static void expedited_barrier(int cmd, const char *name)
{
    int r = 0;
    for (unsigned i = 0; i < BARRIER_TRIES; i++) {
        r = sl__membarrier(cmd);
        if (r == 0)
            return;
        if (r != -ENOMEM && r != -EAGAIN && r != -EINTR)
            break;
        pause_uncancelled(100000);
    }
    fprintf(stderr,
            "sluice: membarrier(%s) failed (%s) after registering for it succeeded; "
            "without it a parked thread could miss its wake-up. A filter that refuses "
            "membarrier must be in place before sluice's first use (sluice then uses "
            "fences). Aborting.\n",
            name, strerror(-r));
    abort();
}

SL_API void sl_event_heavy_fence(void)
{
    atomic_thread_fence(memory_order_seq_cst);
    /* In asymmetric mode the notifiers only have a compiler barrier between
     * their store and their waiter-count load: force a real one on every
     * running thread. */
    if (atomic_load_explicit(&sl__event_asymmetric, memory_order_relaxed))
        expedited_barrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, "MEMBARRIER_CMD_PRIVATE_EXPEDITED");
}

SL_API SL_ATOMIC(int) sl__event_global;

SL_API void sl__event_heavy_fence_shared(void)
{
    atomic_thread_fence(memory_order_seq_cst);
#ifdef SL_MUTANT_SHM_NO_GLOBAL_BARRIER
    return; /* planted bug: a shared waiter relies on the fence alone */
#endif
    /* Relaxed: set before the first handle of a channel that relies on it.
     * The notifiers of such a channel, in any registered process, may have
     * only a compiler barrier between their store and their load. */
    if (atomic_load_explicit(&sl__event_global, memory_order_relaxed))
        expedited_barrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED, "MEMBARRIER_CMD_GLOBAL_EXPEDITED");
}

SL_API void sl_event_fence(void) { sl__event_fence_fast(); }

_Thread_local SL_ATOMIC(uint32_t) *sl__park_account __attribute__((tls_model("initial-exec")));

/* The thread's second count of a registration on ev (await.h), if any. */
static inline SL_ATOMIC(uint32_t) *account_of(const sl_event *ev)
{
    /* Relaxed: bit 0 of the epoch never changes. */
    if (!sl__park_account || !epoch_shared(atomic_load_explicit(&ev->epoch, memory_order_relaxed)))
        return NULL;
    return sl__park_account;
}

/* The end of a registration: the second count first, then `waiters`
 * (seq_cst: every update of `waiters` is in the total order the notify's
 * load relies on; see the argument above). */
static void unregister(sl_event *ev)
{
    SL_ATOMIC(uint32_t) *acct = account_of(ev);
    if (acct)
        atomic_fetch_sub_explicit(acct, 1u, memory_order_seq_cst);
    atomic_fetch_sub_explicit(&ev->waiters, 1u, memory_order_seq_cst);
}

/* The start of a registration (W1): `waiters`, then the second count
 * (seq_cst: after the registration it counts again). Returns whether ev is
 * shared (relaxed: bit 0 of the epoch never changes). */
static bool register_on(sl_event *ev)
{
    atomic_fetch_add_explicit(&ev->waiters, 1u, memory_order_seq_cst);
    SL_ATOMIC(uint32_t) *acct = account_of(ev);
    if (acct)
        atomic_fetch_add_explicit(acct, 1u, memory_order_seq_cst);
    return epoch_shared(atomic_load_explicit(&ev->epoch, memory_order_relaxed));
}

/* The registrations before the caller's re-check of its condition (the
 * Dekker pair with the notifier's condition change); a shared eventcount's
 * notifiers may be in other processes. A set may hold both kinds (a
 * selector's process bell and a segment's bell): the shared barrier does
 * not stand in for the private one (in a fenced segment it is a fence
 * alone, and the global command reaches this process's threads only where
 * it registered for it), so the private members' notifiers, with only a
 * compiler barrier in asymmetric mode, get theirs too. */
static void registered_barrier(bool shared, bool private_)
{
    if (shared)
        sl__event_heavy_fence_shared();
#ifdef SL_MUTANT_PARK_MIXED_SET_SHARED_ONLY
    private_ = private_ && !shared; /* planted bug: the shared barrier stands in for both */
#endif
    if (private_)
        sl_event_heavy_fence();
}

SL_API uint32_t sl_event_prepare(sl_event *ev)
{
    if (!ev)
        return 0;
    bool shared = register_on(ev);
    SL_FI();
    registered_barrier(shared, !shared);
    /* Acquire: the re-check that follows cannot move above the key load. */
    return atomic_load_explicit(&ev->epoch, memory_order_acquire);
}

SL_API void sl_event_cancel(sl_event *ev)
{
    if (ev)
        unregister(ev);
}

static bool epoch_moved(sl_event *ev, uint32_t key)
{
    /* Acquire: pairs with the notifier's release bump of the epoch. */
    return atomic_load_explicit(&ev->epoch, memory_order_acquire) != key;
}

/* A futex error we do not expect (a seccomp filter's EPERM, ENOSYS): degrade
 * to polling every 50 µs rather than spinning a core. */
static void futex_failed(void)
{
    pause_uncancelled(50000);
}

/* Whether any member's epoch moved from its key. */
static bool set_moved(const sl__event_set *s)
{
    for (size_t i = 0; i < s->n; i++)
        if (epoch_moved(s->evs[i], s->w[i].expected))
            return true;
    return false;
}

/* One futex sleep of the set: on the one word, or on all with futex_waitv;
 * without it (ENOSYS) or beyond its limit, on evs[0] for at most one span
 * (await.h), whose end is not the caller's deadline: reported as a wake. */
static int set_futex(const sl__event_set *s, uint64_t deadline_ns)
{
    if (s->n == 1)
        return futex_wait_epoch(s->evs[0], s->w[0].expected, deadline_ns);
    int r = s->n <= SL__FUTEX_WAITV_MAX ? sl__futex_waitv(s->w, (unsigned)s->n, deadline_ns)
                                        : -ENOSYS;
    if (r != -ENOSYS)
        return r;
    uint64_t now = sl__now_ns();
    bool cut = deadline_ns == SL_FOREVER || deadline_ns - now > SL__EVENT_SET_POLL_NS;
    r = futex_wait_epoch(s->evs[0], s->w[0].expected,
                         cut && now < deadline_ns ? now + SL__EVENT_SET_POLL_NS : deadline_ns);
    return cut && r == -ETIMEDOUT ? 0 : r;
}

/* One futex sleep of a set with unwoken sleepers counted (await.h): on the
 * count just before the sleep; off it after, unless a notify woke this
 * thread and took it off already. The kernel returns 0 only to a thread a
 * FUTEX_WAKE dequeued (and counted in what it returned); EAGAIN, EINTR and a
 * time-out mean the thread dequeued itself, or never queued. Not the epoch:
 * a notify may wake a thread whose key already holds its bump. A spurious 0
 * (injected by the tests' system layer) leaves the count one too high:
 * system calls for nobody, never a lost wake-up. */
static int set_futex_counted(const sl__event_set *s, uint64_t deadline_ns)
{
#ifndef SL_MUTANT_PARK_SLEEPER_UNCOUNTED /* planted bug when defined: sleeps uncounted */
    /* seq_cst: before the kernel's compare of the epoch, in the total order
     * with the notify's bump and load of the count. */
    atomic_fetch_add_explicit(s->unwoken, 1u, memory_order_seq_cst);
#endif
    SL_FI(); /* counted, not yet asleep */
    int r = set_futex(s, deadline_ns);
#ifdef SL_MUTANT_PARK_UNWOKEN_TWICE
    if (true) /* planted bug: a woken sleeper takes itself off the count its waker took it off */
#else
    if (r != 0)
#endif
        atomic_fetch_sub_explicit(s->unwoken, 1u, memory_order_seq_cst);
    return r;
}

/* Whether a deadline has passed (never SL_FOREVER's). A wait whose deadline
 * has passed makes no futex call: the kernel stretches even an expired
 * timeout by the thread's timer slack (50 us by default), so a timed call
 * whose time ran out during its spin slept that long past it (found by
 * review: a 1 ns timeout took 70 us). */
bool sl__deadline_passed(uint64_t deadline_ns)
{
    return deadline_ns != SL_FOREVER && sl__now_ns() >= deadline_ns;
}

/* Sleeps until an epoch of the set moves or the deadline passes. SL_TIMEDOUT
 * comes only once the clock says the deadline has passed, never on the
 * futex's word alone (the kernel ends an absolute wait with ETIMEDOUT, but a
 * replaced sysops layer may not); spurious returns, EINTR and EAGAIN wait
 * again. */
static sl_status set_sleep(const sl__event_set *s, uint64_t deadline_ns)
{
#ifdef SL_MUTANT_PARK_SLEEPS_PAST_DEADLINE
    unsigned sleeps = 0; /* planted bug: the first sleep goes unchecked */
#endif
    for (;;) {
        if (set_moved(s))
            return SL_OK;
#ifdef SL_MUTANT_PARK_SLEEPS_PAST_DEADLINE
        if (sleeps++ > 0 && sl__deadline_passed(deadline_ns))
#else
        if (sl__deadline_passed(deadline_ns))
#endif
            return SL_TIMEDOUT;
        SL_FI(); /* between the epoch check and the futex's own compare */
        int r = s->unwoken ? set_futex_counted(s, deadline_ns) : set_futex(s, deadline_ns);
        if (r < 0 && r != -EINTR && r != -EAGAIN && r != -ETIMEDOUT)
            futex_failed();
    }
}

/* The set's sl_event_wait: a short spin on the epochs, the sleep, and the
 * end of every member's registration. */
static sl_status set_wait(const sl__event_set *s, uint64_t deadline_ns)
{
    sl_status st = SL_OK;
    unsigned i;
    for (i = 0; i < SL_PARK_EPOCH_SPIN && !set_moved(s); i++)
        sl_cpu_relax();
    if (i == SL_PARK_EPOCH_SPIN)
        st = set_sleep(s, deadline_ns);
    for (size_t k = 0; k < s->n; k++)
        unregister(s->evs[k]);
    return st;
}

SL_API sl_status sl_event_wait(sl_event *ev, uint32_t key, uint64_t deadline_ns)
{
    if (!ev)
        return SL_EINVAL;
    sl__futex_word w = {&ev->epoch, key, epoch_shared(key)};
    return set_wait(&(sl__event_set){(sl_event *const[1]){ev}, &w, 1, NULL}, deadline_ns);
}

/* Every notify, the public ones (unwoken NULL) and the channels' counted
 * one: the Dekker load, then the bump and the wake of up to n waiters
 * (SL__NOTIFY_ALL: every one). The inline fast paths already looked; this
 * look keeps the contract true for callers that come here directly. */
void sl__event_notify_counted(sl_event *ev, SL_ATOMIC(uint32_t) *unwoken, size_t n)
{
    /* seq_cst: the Dekker load. */
    if (!ev || n == 0 || atomic_load_explicit(&ev->waiters, memory_order_seq_cst) == 0)
        return;
    SL_FI();
    int count = n == SL__NOTIFY_ALL || n > (size_t)INT32_MAX ? INT32_MAX : (int)n;
#ifdef SL_MUTANT_PARK_CLOSE_NOTIFY_ONE
    if (n == SL__NOTIFY_ALL)
        count = 1; /* planted bug: close wakes one waiter */
#endif
#ifdef SL_MUTANT_PARK_WAKE_BEFORE_BUMP
    if (n == 1) { /* planted bug: notify_one wakes, then moves the epoch */
        sl__futex_wake(&ev->epoch, 1);
        atomic_fetch_add_explicit(&ev->epoch, EPOCH_STEP, memory_order_release);
        return;
    }
#endif
    bump_and_wake(ev, count, unwoken);
}

SL_API void sl_event_notify_one_slow(sl_event *ev) { sl__event_notify_counted(ev, NULL, 1); }

SL_API void sl_event_notify_all_slow(sl_event *ev)
{
    sl__event_notify_counted(ev, NULL, SL__NOTIFY_ALL);
}

SL_API void sl_event_notify_n_slow(sl_event *ev, size_t n)
{
    sl__event_notify_counted(ev, NULL, n);
}

SL_API void sl_event_notify_one(sl_event *ev) { sl__event_notify_one_fast(ev); }

SL_API void sl_event_notify_n(sl_event *ev, size_t n) { sl__event_notify_n_fast(ev, n); }

SL_API void sl_event_notify_all(sl_event *ev) { sl__event_notify_all_fast(ev); }

SL_API uint32_t sl_event_waiters(const sl_event *ev)
{
    if (!ev)
        return 0;
    return atomic_load_explicit(&ev->waiters, memory_order_relaxed);
}

SL_API uint64_t sl_now_ns(void) { return sl__now_ns(); }

SL_API uint64_t sl_deadline_after(uint64_t timeout_ns)
{
    if (timeout_ns == SL_FOREVER)
        return SL_FOREVER;
    uint64_t now = sl__now_ns();
    if (timeout_ns >= SL_FOREVER - now)
        return SL_FOREVER;
    return now + timeout_ns;
}

/* This thread's spin budget, in tries (spin.h, "the spin learns"): the
 * whole SL_SPIN_TRIES while its spins see their condition, halved (down to
 * SL_SPIN_TRIES_MIN) by each spin that does not when a yield after it
 * does; every SL_SPIN_PROBE-th
 * spin takes the whole budget again, so that a thread whose partners have
 * moved to another CPU finds out. Initial-exec: one %fs-relative load. */
static _Thread_local unsigned spin_budget __attribute__((tls_model("initial-exec"))) =
    SL_SPIN_TRIES;
static _Thread_local unsigned spin_count __attribute__((tls_model("initial-exec")));

/* Phase 1 of the await protocol: ready() retried with pause hints growing 1,
 * 2, 4 … SL_SPIN_RELAX_MAX, each twice, for this thread's budget of tries,
 * then a few yields (spin.h). true once ready(); false when the tries, the
 * yields or the deadline ran out first. */
bool sl__await_spin(sl__ready_fn ready, void *ctx, uint64_t deadline_ns, unsigned flags)
{
    unsigned relax = (flags & SL__AWAIT_PATIENT) ? SL_SPIN_PATIENT_START : 1;
    bool probe = (++spin_count & (SL_SPIN_PROBE - 1)) == 0;
    unsigned tries = probe ? SL_SPIN_TRIES : spin_budget;
    for (unsigned i = 0; i < tries; i++) {
        for (unsigned k = 0; k < relax; k++)
            sl_cpu_relax();
        if (relax < SL_SPIN_RELAX_MAX && (i & 1))
            relax <<= 1; /* after every second try: a reply landing mid-pause waits less */
        if (ready(ctx)) {
            spin_budget = SL_SPIN_TRIES; /* spinning pays here */
            return true;
        }
        if ((i & 7) == 7 && sl__deadline_passed(deadline_ns))
            return false;
    }
    /* The spin saw nothing: its partner is slow, or waits for this CPU. */
    for (unsigned i = 0; i < SL_SPIN_YIELDS; i++) {
        sched_yield();
        if (ready(ctx)) {
            /* A yield gave the partner this CPU and it made the change: it
             * shares the CPU, where no spin can see it, so spin less. Not
             * on a wait that goes on to sleep: a partner on another CPU
             * that is asleep itself replies only after its wake-up, and
             * shrinking on that made a ping-pong's sleeps sustain
             * themselves (docs/performance.md, "Spins that learn only
             * from a yield"). */
            if (!probe && spin_budget > SL_SPIN_TRIES_MIN)
                spin_budget =
                    spin_budget / 2 > SL_SPIN_TRIES_MIN ? spin_budget / 2 : SL_SPIN_TRIES_MIN;
            return true;
        }
        /* A yield can give away a whole time slice (milliseconds when the
         * CPU is shared): a timed wait must not pass its deadline by four. */
        if (sl__deadline_passed(deadline_ns))
            return false;
    }
    return false;
}

/* W1–W2 on every member of the set: each registration, one barrier for
 * them all, then each key (sl_event_prepare, for a set of one). */
static void set_prepare(const sl__event_set *s)
{
    bool shared = false, private_ = false;
    for (size_t i = 0; i < s->n; i++) {
        bool sh = register_on(s->evs[i]);
        shared |= sh;
        private_ |= !sh;
    }
    SL_FI();
    registered_barrier(shared, private_);
    for (size_t i = 0; i < s->n; i++) {
        /* Acquire: the re-check cannot move above the key loads. */
        uint32_t key = atomic_load_explicit(&s->evs[i]->epoch, memory_order_acquire);
        s->w[i] = (sl__futex_word){&s->evs[i]->epoch, key, epoch_shared(key)};
    }
}

static inline void set_cancel(const sl__event_set *s)
{
    for (size_t i = 0; i < s->n; i++)
        sl_event_cancel(s->evs[i]);
}

/* The waiter's side of the argument at the top of this file: W1–W2 are
 * set_prepare, W3 the re-check, W4 set_wait — on one eventcount, or on
 * several at once (await.h). */
sl_status sl__event_await_set(const sl__event_set *set, sl__ready_fn ready, void *ctx,
                              uint64_t deadline_ns, unsigned flags)
{
    /* Phase 1: one look, or the spin (whose first try follows one pause). */
    if ((flags & SL__AWAIT_SPIN) ? sl__await_spin(ready, ctx, deadline_ns, flags) : ready(ctx))
        return SL_OK;
    for (;;) {
        /* Out of time already (the spin's clock read, a wake at the
         * deadline): one last look, made after the deadline, and no
         * registration, barrier or sleep. */
#ifndef SL_MUTANT_PARK_SLEEPS_PAST_DEADLINE /* planted bug when defined: registers and sleeps */
        if (sl__deadline_passed(deadline_ns))
            return ready(ctx) ? SL_OK : SL_TIMEDOUT;
#endif
        set_prepare(set);
        SL_FI(); /* registered, not yet re-checked */
#ifndef SL_MUTANT_PARK_NO_RECHECK /* planted bug when defined: sleeps unchecked */
        if (ready(ctx)) {
            set_cancel(set);
            return SL_OK;
        }
#endif
        sl_status w = set_wait(set, deadline_ns);
#ifdef SL_MUTANT_PARK_TIMEOUT_NO_RETRY
        if (w == SL_TIMEDOUT)
            return SL_TIMEDOUT; /* planted bug: no last look at the deadline */
#endif
        /* Look once more after every wake, also at the deadline: a notify
         * that chose this thread must not be lost with it. */
        if (ready(ctx))
            return SL_OK;
        if (w == SL_TIMEDOUT)
            return SL_TIMEDOUT;
    }
}

sl_status sl__event_await(sl_event *ev, sl__ready_fn ready, void *ctx, uint64_t deadline_ns,
                          unsigned flags)
{
    sl__futex_word w;
    return sl__event_await_set(&(sl__event_set){(sl_event *const[1]){ev}, &w, 1, NULL}, ready, ctx,
                               deadline_ns, flags);
}
