/*
 * internal/await.h — the one wait: park on an eventcount until a predicate
 * holds (internal, not installed).
 *
 * Every blocking call in sluice whose wake-up condition can be re-checked
 * by a function — a channel's send or receive, select, the pool's waits, the
 * executor's sync and scope waits, an idle worker — waits through
 * sl__event_await. The no-lost-wake-up argument is written once, here and in
 * channels/park.c; call sites cite it as "the await protocol (await.h)"
 * instead of repeating it.
 *
 * The protocol (phases 1–3 of parking):
 *   1. ready(ctx) once; or, with SL__AWAIT_SPIN, ready(ctx) retried after
 *      growing pause hints and then a few sched_yield()s (spin.h's budgets)
 *      — a caller that spins has just tried once itself;
 *   2. with the deadline passed, ready(ctx) once more (after it) and return,
 *      unregistered: an expired futex timeout still sleeps the kernel's
 *      timer slack; otherwise sl_event_prepare (a full barrier after the
 *      registration), then ready(ctx) again: true withdraws the
 *      registration and returns;
 *   3. sl_event_wait until notified or the deadline, then ready(ctx) once
 *      more — also at the deadline, so that a notify that chose this thread
 *      is never lost with it — and back to 2.
 *
 * What the caller guarantees: every change that can make ready() true is
 * followed by a notify of `ev`, and is ordered before that notify's load of
 * the waiter count (a seq_cst read-modify-write, or sl_event_fence() after
 * it; sluice/park.h). Then, by the Dekker pair between step 2's barrier and
 * the notifier's fence, either the re-check of step 2 sees the change or the
 * notifier sees the registration and wakes the epoch the waiter sleeps on
 * (channels/park.c has the step-by-step argument). A notify_one that wakes
 * this thread while another consumes the condition is not lost either: the
 * waiter re-checks after every wake and sleeps again, and the consumer's own
 * success notifies the next.
 *
 * ready() may have side effects (a channel's ready *is* the operation): it is
 * called until it returns true once, never after. It runs between prepare
 * and wait, so it must not sleep (a short lock is fine) and must not wait on
 * `ev` itself.
 */
#ifndef SLUICE_INTERNAL_AWAIT_H
#define SLUICE_INTERNAL_AWAIT_H

#include "sluice/park.h"
#include "internal/sysops.h"

/* The condition a waiter re-checks: true once it may stop waiting. */
typedef bool (*sl__ready_fn)(void *ctx);

/* Decides the barrier mode (sl__event_asymmetric) if nothing has yet: an
 * eventcount's init does, and so does anything else that pairs
 * sl__event_fence_fast with sl_event_heavy_fence (the epoch records,
 * internal/epoch.h) before its first use, so that both sides of every pair
 * use the mode that holds for the rest of the process. */
void sl__event_choose_barrier(void);

/* Flags for sl__event_await. */
enum {
    /* Retry ready() in a bounded spin before registering (phase 1). For
     * waits whose condition typically comes true within a cross-core
     * hand-off; waits for rare events (commands, idleness) leave it out. */
    SL__AWAIT_SPIN = 1u << 0,
    /* With SL__AWAIT_SPIN: the spin's first look comes after
     * SL_SPIN_PATIENT_START pauses instead of one (spin.h): for a receiver
     * that has caught up with a stream (channels/chan_wait.c, "The receive
     * streak"), whose early looks would take the producer's lines while it
     * writes the next messages. */
    SL__AWAIT_PATIENT = 1u << 1,
};

/* Waits on ev until ready(ctx) returns true (SL_OK) or the absolute
 * CLOCK_MONOTONIC deadline passes with ready(ctx) still false (SL_TIMEDOUT;
 * never before the deadline). SL_FOREVER: no deadline. Acts as acquire for
 * whatever the notifier did before its notify, as sl_event_wait. Blocking;
 * the spin phase of SL__AWAIT_SPIN checks the clock every few retries. */
sl_status sl__event_await(sl_event *ev, sl__ready_fn ready, void *ctx, uint64_t deadline_ns,
                          unsigned flags);

/* Several eventcounts waited on as one: a selector whose cases live in
 * different places (this process's select bell and the bells of shared
 * segments, sluice/shm.h) registers on each, re-checks once, and sleeps
 * until any of them is notified, with one futex_waitv(2). The protocol is
 * the one above, step for step, on every member: W1 on each, one barrier,
 * W2 on each; a notifier of any member that sees its registration moves
 * its epoch, and the sleep ends when any epoch moved.
 *
 * Without futex_waitv (a kernel before 5.16: -ENOSYS), or with more than
 * SL__FUTEX_WAITV_MAX members, the sleep is on evs[0] alone, cut into
 * spans of at most SL__EVENT_SET_POLL_NS, and every member's epoch is
 * looked at after each span: a notify of another member is then seen at
 * most one span late, never lost. */
typedef struct sl__event_set {
    sl_event *const *evs; /* n eventcounts; evs[0] the one a fallback sleeps on */
    sl__futex_word *w;    /* n words of the caller's: the await's keys */
    size_t n;             /* >= 1 */
    /* With n == 1 only: the eventcount's count of unwoken sleepers (below),
     * which this sleep keeps; NULL for an eventcount that has none. */
    SL_ATOMIC(uint32_t) *unwoken;
} sl__event_set;

/* Unwoken sleepers: a count, kept beside an eventcount by its owner, of the
 * threads asleep in the kernel on it that no notify has woken yet. A sleeper
 * adds 1 just before its futex wait and, unless a notify woke it, takes 1
 * when the wait returns; a notify that finds waiters bumps the epoch as
 * ever, then makes the system call only while the count is not 0, and takes
 * off it the threads the kernel says it woke. Without it, every notify from
 * the moment a sleeper is woken until it runs and unregisters (a whole time
 * slice when the two share a CPU) is a FUTEX_WAKE for nobody
 * (docs/performance.md, "Wakes for nobody"). Only for an eventcount whose
 * every sleeper sleeps on it alone (futex_waitv's wake-ups cannot be
 * counted per member) and whose every notify passes the count (one that
 * does not leaves it too high: system calls for nobody again, never a lost
 * wake-up); private, for the count's owner is one process's memory. The
 * argument: docs/guarantees.md, "Unwoken sleepers". */

/* A notify's count that means every waiter (sl_event_notify_all). */
#define SL__NOTIFY_ALL SIZE_MAX

/* notify_one (n 1), notify_n or notify_all (SL__NOTIFY_ALL) of an eventcount
 * with unwoken sleepers counted in *unwoken (NULL: none are counted, as the
 * public notifies, which share its body). The caller's fast path is the
 * public one's: one seq_cst load of `waiters`. */
void sl__event_notify_counted(sl_event *ev, SL_ATOMIC(uint32_t) *unwoken, size_t n);

/* A fallback sleep's span (sl__event_set): the shared channels' look,
 * SL_SHM_LOOK_MS (channels/shm.c asserts that they agree). */
#define SL__EVENT_SET_POLL_NS ((uint64_t)50 * 1000 * 1000)

/* sl__event_await on every member of set at once (above): SL_OK once
 * ready(ctx), SL_TIMEDOUT at the deadline with ready(ctx) still false.
 * With set->n == 1 it is exactly sl__event_await on set->evs[0]. */
sl_status sl__event_await_set(const sl__event_set *set, sl__ready_fn ready, void *ctx,
                              uint64_t deadline_ns, unsigned flags);

/* Whether the absolute deadline has passed (never SL_FOREVER): then an
 * await makes one last ready(ctx) and returns without registering or
 * sleeping, and no sleep of the set waits past it, so a condition whose
 * re-check readies a sleep (a select's bell arm) may skip that work on a
 * look made after it. */
bool sl__deadline_passed(uint64_t deadline_ns);

/* Phase 1 alone: ready(ctx) retried with growing pause hints (the first
 * after one pause, or after SL_SPIN_PATIENT_START with SL__AWAIT_PATIENT in
 * flags), then a few sched_yield()s. true once ready(ctx); false when the
 * budget or the deadline ran out first. For a waiter that must register
 * interest by other means between the spin and the park (select registers
 * on its channels only once it is about to sleep); it then calls
 * sl__event_await without SL__AWAIT_SPIN. */
bool sl__await_spin(sl__ready_fn ready, void *ctx, uint64_t deadline_ns, unsigned flags);

/* A second count of this thread's registration on a shared eventcount, in a
 * word of its own process's (channels/shm_owner.c: the parked counts of its
 * sender record), so that a process that dies while registered can be
 * discounted. Set by the waiting thread around its wait, NULL otherwise.
 * sl_event_prepare adds 1 after the eventcount's own `waiters`, and the end
 * of the registration takes 1 before it: the second count never exceeds
 * what the process still has in `waiters` (docs/guarantees.md, "A peer
 * that dies"). */
extern _Thread_local SL_ATOMIC(uint32_t) *sl__park_account
    __attribute__((tls_model("initial-exec")));

#endif /* SLUICE_INTERNAL_AWAIT_H */
