/*
 * tests/model/park.pml — the eventcount of include/sluice/park.h and
 * channels/park.c, the futex under it, and the blocking loop of
 * channels/chan_wait.c (wait_for). Included by eventcount.pml and close.pml.
 *
 * Memory model. Promela interleaves whole statements: sequential
 * consistency. That is exactly what the C code promises for the steps this
 * argument rests on: every update of `waiters`, the notifier's condition change
 * (a seq_cst RMW, or a store + sl_event_fence) and its load of `waiters`, the
 * waiter's increment + heavy fence + key load (a Dekker pair). The heavy fence
 * (seq_cst fence or membarrier) is therefore no step of its own here. The
 * acquire/release pairs on `epoch` (N3 -> W2, F1, F3) only need to carry the
 * condition change to the waiter, which SC does too. What the model does NOT
 * check: weaker orderings than the ones the C code uses (see park.c's comment
 * for that half of the argument).
 *
 * Each step is one Promela statement and names the C step it stands for:
 *
 *   waiter    W1 sl_event_prepare: waiters += 1 (seq_cst) ; heavy fence
 *             W2 sl_event_prepare: key = epoch (acquire)
 *             W3 wait_for: re-check (the operation once more); W3c cancel
 *             W4 sl_event_wait -> futex_sleep:
 *                F1 epoch_moved?  F2 FUTEX_WAIT(epoch, key, deadline)
 *                F3 epoch_moved?  F4 now >= deadline?   (timed waits only)
 *             W6 sl_event_wait: waiters -= 1 (seq_cst), in every case
 *             W5 wait_for: the operation once more after every wake
 *   notifier  N1 the condition change (the caller: push / pop / close)
 *             N2 notify_*: load waiters (seq_cst); 0 -> done
 *             N3 epoch += 1 (seq_cst)
 *             N3u load unwoken (seq_cst); 0 -> no system call
 *             N4 FUTEX_WAKE(epoch, 1 or INT32_MAX)
 *             N5 unwoken -= what FUTEX_WAKE returned
 *   (a sleeper) U1 unwoken += 1 (seq_cst), just before F2; after F2
 *             returns, U2 unwoken -= 1 unless a FUTEX_WAKE dequeued it
 *
 * The count of unwoken sleepers (internal/await.h) is the in-process
 * channel's, which this model is of; -DUNCOUNTED checks the eventcount
 * without it (the public sl_event, a shared channel's), N3u, N5, U1 and U2
 * left out. Every check asserts at N3u that the count is at least the
 * number of threads queued on the word, and at the end that it is 0
 * (-DNO_COUNT_INVARIANT: neither, so that a planted bug must show as what
 * it causes).
 *
 * The futex: FUTEX_WAIT compares the word with the key and queues the
 * caller in one atomic step (the kernel's hash-bucket lock), FUTEX_WAKE
 * dequeues one (any one: the kernel's choice is free here) or all queued
 * threads in one atomic step. A queued thread may also return at any moment
 * without a wake (spurious wake-up, EINTR: a shared budget SPURIOUS of them),
 * and a timed one at its deadline (ETIMEDOUT).
 *
 * The including model provides, before any proctype:
 *   NT               the number of threads (at most 4)
 *   SPURIOUS         the number of spurious futex returns allowed in a run
 *   inline try_op(op)  one non-blocking attempt (try_send_once / try_recv_once),
 *                    setting the thread's local `st`
 * and every thread proctype declares these locals (the inlines use them):
 *   byte me       the thread's index into qon[]
 *   byte st       the status of the last attempt
 *   byte w        what sl_event_wait returned
 *   byte key      the epoch read at W2
 *   byte seen     the notifier's N2 load
 *   bool timed    the call has a deadline (not SL_FOREVER)
 *   bool passed   that deadline has passed (monotone: the clock only advances)
 *
 * Planted bugs (see run.sh; none is compiled by default):
 *   BUG_LOAD_BEFORE_CHANGE  N2 before N1: the notifier reads `waiters` before
 *                           its condition change (the push and the pop, in eventcount.pml)
 *   BUG_NO_RECHECK          W3 left out: sleep without re-checking after prepare
 *   BUG_WAKE_BEFORE_BUMP    N4 before N3: FUTEX_WAKE first, epoch += 1 after
 *   BUG_TIMEOUT_NO_RETRY    W5 skipped when sl_event_wait timed out
 *   BUG_CLOCK_FIRST         F4 before F3: the clock decides before the epoch
 *   BUG_KEY_FIRST           W2 before W1: the key is read before registering
 *   BUG_UNWOKEN_TWICE       U2 also for a sleeper a FUTEX_WAKE dequeued (its
 *                           waker takes it off too: the count runs low)
 *   BUG_SLEEPER_UNCOUNTED   U1 left out: a sleeper the count does not show
 *
 * Coverage (run.sh --cover): REACHED(n) marks a branch worth reaching; with
 * -DCOVER=n it becomes assert(false) there, so that a check failing proves the
 * branch reachable (the properties are not vacuous). Without COVER it is
 * nothing.
 */

#ifdef COVER
#define REACHED(n) assert(COVER != (n));
#else
#define REACHED(n)
#endif

/* sl_status, as far as the model needs it */
#define SL_OK       0
#define SL_FULL     1   /* retry statuses: wait_for parks on them */
#define SL_EMPTY    2
#define SL_CLOSED   3
#define SL_TIMEDOUT 4
#define RETRY(s)    ((s) == SL_FULL || (s) == SL_EMPTY)

/* The channel's two eventcounts: ev index 1 and 2 (0 means "none"). */
#define NOT_EMPTY 1   /* receivers park here */
#define NOT_FULL  2   /* senders park here */

byte epoch[3];        /* sl_event.epoch, the futex word, per eventcount */
byte waiters[3];      /* sl_event.waiters */
byte qon[4];          /* the kernel's futex queues: qon[t] = the eventcount
                       * thread t is queued on (asleep in FUTEX_WAIT), 0 if none */
byte spurious = SPURIOUS;  /* spurious futex returns still allowed */
short unwoken[3];     /* the channel's count of unwoken sleepers, per eventcount
                       * (short: a count run below 0 shows as such) */
bool dequeued[4];     /* thread t's FUTEX_WAIT returns 0: a FUTEX_WAKE dequeued it */
byte woke;            /* what the FUTEX_WAKE under way returned (0 outside N4-N5) */

#define ASLEEP(t, ev) (qon[t] == (ev))
#define QUEUED(ev) ((qon[0] == (ev)) + (qon[1] == (ev)) + (qon[2] == (ev)) + (qon[3] == (ev)))
/* At the end of a run nobody sleeps, and no sleeper is left on the count. */
#if defined(UNCOUNTED) || defined(NO_COUNT_INVARIANT)
#define NONE_UNWOKEN true
#else
#define NONE_UNWOKEN (unwoken[NOT_EMPTY] == 0 && unwoken[NOT_FULL] == 0)
#endif

/* ---- the futex ----------------------------------------------------------- */

/* N4 (notify_one): FUTEX_WAKE(&epoch, 1) — the kernel dequeues any one thread
 * queued on this word, if there is one. */
inline futex_wake_one(ev)
{
    atomic {
        woke = 1;
        if
        :: qon[0] == ev -> REACHED(1) qon[0] = 0; dequeued[0] = true
        :: NT > 1 && qon[1] == ev -> REACHED(1) qon[1] = 0; dequeued[1] = true
        :: NT > 2 && qon[2] == ev -> REACHED(1) qon[2] = 0; dequeued[2] = true
        :: NT > 3 && qon[3] == ev -> REACHED(1) qon[3] = 0; dequeued[3] = true
        :: else -> woke = 0   /* nobody queued: the wake is a no-op */
        fi
    }
}

/* N4 (notify_all): FUTEX_WAKE(&epoch, INT32_MAX) — dequeues every thread queued
 * on this word. */
inline futex_wake_all(ev)
{
    d_step {
        if :: qon[0] == ev || qon[1] == ev || qon[2] == ev || qon[3] == ev -> REACHED(2) skip :: else fi;
        woke = QUEUED(ev);
        if :: qon[0] == ev -> qon[0] = 0; dequeued[0] = true :: else fi;
        if :: qon[1] == ev -> qon[1] = 0; dequeued[1] = true :: else fi;
        if :: qon[2] == ev -> qon[2] = 0; dequeued[2] = true :: else fi;
        if :: qon[3] == ev -> qon[3] = 0; dequeued[3] = true :: else fi
    }
}

/* N3u..N5 around a wake (wake: futex_wake_one or futex_wake_all): with the
 * count, the system call only while it is not 0, and what the wake returned
 * comes off it. N5 is folded into N4's step: in the C code the woken
 * threads may run, return and sleep again between the two, but meanwhile
 * the count is only higher than here, and a higher count only turns a
 * skipped wake into one more FUTEX_WAKE, which no property can mind. */
#ifdef UNCOUNTED
#define COUNTED_WAKE(ev, wake) atomic { wake(ev); woke = 0 }
#else
#ifdef NO_COUNT_INVARIANT
#define COUNT_INVARIANT(ev) skip
#else
#define COUNT_INVARIANT(ev) assert(unwoken[ev] >= QUEUED(ev))
#endif
#define COUNTED_WAKE(ev, wake) \
    COUNT_INVARIANT(ev); \
    if \
    :: unwoken[ev] == 0 -> REACHED(11) skip \
    :: else -> atomic { wake(ev); unwoken[ev] = unwoken[ev] - woke; woke = 0 } \
    fi
#endif

/* ---- notify (park.h fast path + park.c slow path) ------------------------ */

/* The bump and the wake of sl_event_notify_one_slow, after N2 read `seen`. The
 * slow path's second load of `waiters` only filters: a run where it reads 0 is
 * the same as one where the single load N2 happens at that point. */
inline notify_one_after_load(ev)
{
    if
    :: seen != 0 ->
#ifdef BUG_WAKE_BEFORE_BUMP
        futex_wake_one(ev); woke = 0; /* N4 (BUG: before the bump) */
        epoch[ev] = epoch[ev] + 1    /* N3 (BUG: after the wake) */
#else
        epoch[ev] = epoch[ev] + 1;   /* N3: notify_one_slow: epoch += 1 (seq_cst) */
        COUNTED_WAKE(ev, futex_wake_one)   /* N3u, N4: FUTEX_WAKE(&epoch, 1), N5 */
#endif
    :: else -> skip                  /* N2 read 0: no system call */
    fi;
    seen = 0
}

/* sl_event_notify_one, called after the condition change N1. Under
 * BUG_LOAD_BEFORE_CHANGE the caller did the load before N1 (see the models). */
inline notify_one(ev)
{
#ifndef BUG_LOAD_BEFORE_CHANGE
    seen = waiters[ev];              /* N2: notify_one fast path: load waiters (seq_cst) */
#endif
    notify_one_after_load(ev)
}

/* sl_event_notify_all (close, and send_end after a close). */
inline notify_all(ev)
{
    seen = waiters[ev];              /* N2: notify_all fast path: load waiters (seq_cst) */
    if
    :: seen != 0 ->
#ifdef BUG_WAKE_BEFORE_BUMP
        futex_wake_all(ev); woke = 0; /* N4 (BUG: before the bump) */
        epoch[ev] = epoch[ev] + 1    /* N3 (BUG: after the wake) */
#else
        epoch[ev] = epoch[ev] + 1;   /* N3: notify_all_slow: epoch += 1 (seq_cst) */
        COUNTED_WAKE(ev, futex_wake_all)   /* N3u, N4: FUTEX_WAKE(&epoch, INT32_MAX), N5 */
#endif
    :: else -> skip
    fi;
    seen = 0
}

/* ---- wait (park.c) -------------------------------------------------------- */

/* W4 sl_event_wait(ev, key, deadline): sets w to SL_OK or SL_TIMEDOUT.
 * sl_event_wait first spins on epoch_moved; futex_sleep begins with the same
 * check (F1), so the spin adds no behaviour and is folded into F1. */
inline event_wait(ev)
{
    do
    :: /* F1: futex_sleep: epoch_moved(ev, key) (acquire) */
        if
        :: epoch[ev] != key -> w = SL_OK; break
        :: else -> skip
        fi;
#if !defined(UNCOUNTED) && !defined(BUG_SLEEPER_UNCOUNTED)
        unwoken[ev] = unwoken[ev] + 1;   /* U1: on the count (seq_cst), before F2 */
#endif
        /* F2: sys->futex_wait(&epoch, key, deadline): compare and queue,
         * atomically with respect to FUTEX_WAKE; EAGAIN if the word moved */
        atomic {
            if
            :: epoch[ev] == key -> qon[me] = ev
            :: else -> REACHED(3) skip   /* EAGAIN */
            fi
        }
        /* asleep: FUTEX_WAIT returns when a wake dequeues us, spuriously (EINTR,
         * a stray wake), or at the deadline (ETIMEDOUT) */
        if
        :: qon[me] == 0 -> skip      /* woken (0), or never queued (EAGAIN) */
        :: atomic { qon[me] != 0 && spurious > 0 -> REACHED(4) qon[me] = 0; spurious-- }
        :: atomic { qon[me] != 0 && timed -> REACHED(5) qon[me] = 0; passed = true }
        fi;
#ifndef UNCOUNTED
        /* U2: FUTEX_WAIT returned 0 (a wake dequeued us: the waker takes us off
         * the count), or not (EAGAIN, EINTR, a time-out: off it ourselves) */
        if
#ifdef BUG_UNWOKEN_TWICE
        :: dequeued[me] -> dequeued[me] = false; unwoken[ev] = unwoken[ev] - 1
#else
        :: dequeued[me] -> dequeued[me] = false
#endif
        :: else -> unwoken[ev] = unwoken[ev] - 1
        fi;
#endif
        if
        :: !timed -> skip            /* SL_FOREVER: `continue`, back to F1 */
        :: else ->
#ifndef BUG_CLOCK_FIRST
            /* F3: futex_sleep: epoch_moved again, before the clock */
            if
            :: epoch[ev] != key -> REACHED(6) w = SL_OK; break
            :: else -> skip
            fi;
#endif
            /* F4: futex_sleep: sys->now_ns() >= deadline. The deadline may have
             * passed while we were away (nondeterministic), and stays passed. */
            if
            :: passed -> w = SL_TIMEDOUT; break
            :: !passed -> passed = true; w = SL_TIMEDOUT; break
            :: !passed -> skip
            fi;
#ifdef BUG_CLOCK_FIRST
            if
            :: epoch[ev] != key -> w = SL_OK; break
            :: else -> skip
            fi
#endif
        fi
    od;
    key = 0;
    /* W6: sl_event_wait: waiters -= 1 (seq_cst), whatever the outcome */
    waiters[ev] = waiters[ev] - 1
}

/* ---- the blocking loop (chan_wait.c: wait_for) ---------------------------- */

/* wait_for(ch, ev, op, buf, timeout): leaves the final status in st. */
inline wait_for(ev, op)
{
    /* wait_for: the first attempt */
    try_op(op);
    /* spin_phase: up to SL_SPIN_TRIES attempts and SL_SPIN_YIELDS yields. A
     * failed attempt changes no shared state, so the interleavings of that
     * phase are those of the attempts at W3 and W5: it is left out. */
    if
    :: RETRY(st) ->
        do
        :: 
#ifdef BUG_KEY_FIRST
            key = epoch[ev];             /* W2 (BUG: before registering) */
            waiters[ev] = waiters[ev] + 1;   /* W1 (BUG: after the key) */
#else
            /* W1: sl_event_prepare: waiters += 1 (seq_cst); sl_event_heavy_fence */
            waiters[ev] = waiters[ev] + 1;
            /* W2: sl_event_prepare: key = epoch (acquire) */
            key = epoch[ev];
#endif
#ifndef BUG_NO_RECHECK
            /* W3: wait_for: the re-check, one more attempt after prepare */
            try_op(op);
            if
            :: !RETRY(st) ->
                REACHED(7)
                key = 0;
                /* W3c: sl_event_cancel: waiters -= 1 (seq_cst) */
                waiters[ev] = waiters[ev] - 1;
                break
            :: else -> skip
            fi;
#endif
            /* W4: w = sl_event_wait(ev, key, deadline) (ends with W6) */
            event_wait(ev);
#ifdef BUG_TIMEOUT_NO_RETRY
            if
            :: w == SL_TIMEDOUT -> st = SL_TIMEDOUT; w = 0; break  /* BUG: leaves without W5 */
            :: else -> skip
            fi;
#endif
            /* W5: wait_for: always try once more after waking, also at the deadline */
            try_op(op);
            if
            :: !RETRY(st) && w == SL_TIMEDOUT -> REACHED(8) w = 0; break  /* the deadline, yet it succeeds */
            :: !RETRY(st) && w != SL_TIMEDOUT -> w = 0; break
            :: RETRY(st) && w == SL_TIMEDOUT -> REACHED(9) st = SL_TIMEDOUT; w = 0; break
            :: RETRY(st) && w != SL_TIMEDOUT -> REACHED(10) skip   /* woken, lost the race: park again */
            fi
        od
    :: else -> skip
    fi
}
