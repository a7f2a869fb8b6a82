/*
 * pool/exec_wait.c — the executor's one wait: a thread waiting for a task
 * (sl_sync) or a scope (sl_scope_end), a worker waiting for work (its main
 * loop), and sl_exec_free waiting for the workers to be done.
 *
 * sl__exec_wait makes the one choice of how the calling thread waits:
 *
 *   - a worker — of the executor waited on, or of another one, which keeps
 *     running its own executor's tasks so that executors waiting on each
 *     other cannot deadlock for want of threads — *helps*: it runs its own
 *     deque, searches the other queues (exec_run.c), and after a bounded
 *     search parks as an idle worker (idle.h) until it is woken for work or
 *     its wait is over; its main loop is the same loop with nothing to wait
 *     for;
 *   - a worker past half its stack *waits deep*: it runs only its own deque
 *     and mailbox, else sleeps on its event without counting as idle
 *     ("Stack depth" in docs/exec.md);
 *   - a foreign thread helps from the deques with a borrowed helper slot,
 *     within the same depth rule, then *parks* on the task's own event or
 *     the scope's ("Foreign threads help").
 *
 * Every sleep here goes through the await protocol (internal/await.h) —
 * directly, or through sl__idle_park, which uses it — and is woken by a
 * notify that follows a seq_cst change of what it re-checks: a completion
 * (exec_run.c), a wake-up for work or for a mailbox (idle.h), the last quiet
 * worker (below). That is the whole no-lost-wake-up argument; none is
 * repeated below.
 *
 * sl_exec_free's quiescence protocol lives here as well, both halves: a
 * worker's park in its main loop counts it in `quiet` and, between its
 * registration and its sleep, tells the freer when all are parked; the
 * freer sets SL__QUIET_EXIT once all are parked with no work anywhere
 * (docs/exec.md, "sl_exec_free").
 */
#include "exec_internal.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>

#include "internal/spin.h"
#include "internal/sysops.h"
#include "internal/util.h"

_Thread_local sl__worker *sl__tls_worker __attribute__((tls_model("initial-exec")));

/* ---- what a wait waits for ---- */

/* True once wt is over, though its last completer may still be ringing the
 * waiter's event (settle waits that out); never for NULL (a worker's main
 * loop). */
static bool wait_done(const sl__wait *wt)
{
    if (!wt)
        return false;
    if (wt->task) /* acquire: the task's result before our read of it */
        return sl__task_completed(atomic_load_explicit(&wt->task->state, memory_order_acquire));
    /* acquire: every task of the scope before our return from sl_scope_end */
    uint64_t n = atomic_load_explicit(&wt->scope->sl__pending, memory_order_acquire);
    return n == 0 || n == SL__SCOPE_RELEASED;
}

/* After wait_done: waits, spinning then yielding, until the last completer
 * is through with the record or the scope and the event it rings. Only
 * between its completion and its last store: a load of the event pointer
 * and a notify, unless it is preempted there. The event may be a worker's
 * of another executor (a task of ex1 synced, or a scope of ex1 ended, on a
 * worker of ex2), which the caller may free as soon as this returns; and
 * the record goes back to a cache. acquire: the completer's accesses
 * before our return. */
static void settle(const sl__wait *wt)
{
#ifdef SL_MUTANT_EXEC_WAITER_LEAVES_EARLY
    return; /* planted bug: the waiter leaves while its completer still rings its event */
#endif
    for (unsigned i = 0;; i++) {
        if (wt->task ? atomic_load_explicit(&wt->task->state, memory_order_acquire) !=
                           SL__TASK_NOTIFYING
                     : atomic_load_explicit(&wt->scope->sl__pending, memory_order_acquire) ==
                           SL__SCOPE_RELEASED)
            return;
        if (i < 64)
            sl_cpu_relax();
        else
            sched_yield(); /* the completer may need this core */
    }
}

static bool wait_done_ready(void *wt) { return wait_done(wt); }

/* Publishes where the syncer of t sleeps (ev) and marks t WAITED, so that its
 * completer notifies ev — the notifier the await protocol asks for; false
 * when t is DONE already (nothing to wait for). Both sides are RMWs of
 * t->state, so the later of the two sees the earlier. */
static bool register_waiter(sl__task *t, sl_event *ev)
{
    atomic_store_explicit(&t->sleep, ev, memory_order_relaxed);
    SL_FI();
    uint32_t st = SL__TASK_PENDING;
    /* release: the sleep pointer before WAITED, read by the completer's exchange */
    if (atomic_compare_exchange_strong_explicit(&t->state, &st, SL__TASK_WAITED,
                                                memory_order_release, memory_order_acquire))
        return true;
    return !sl__task_completed(st);
}

/* ---- the stack-depth rule ---- */

/* A foreign thread's floor, found on its first need. */
static _Thread_local uintptr_t foreign_floor;
static _Thread_local bool foreign_floor_known;

SL_ATOMIC(int) sl__exec_deep_workers;

/* The stack the fallback assumes a thread has: the smaller of the main
 * thread's limit (RLIMIT_STACK; 8 MiB, glibc's default, when unlimited or
 * unreadable) and the default size of new threads — the two kinds of thread
 * whose bounds may be unknown. */
static size_t assumed_stack(void)
{
    size_t size = (size_t)8 << 20;
    struct rlimit rl;
    if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur < size)
        size = (size_t)rl.rlim_cur;
    pthread_attr_t attr;
    size_t dflt = 0;
    if (pthread_getattr_default_np(&attr) == 0) {
        if (pthread_attr_getstacksize(&attr, &dflt) == 0 && dflt && dflt < size)
            size = dflt;
        pthread_attr_destroy(&attr);
    }
    return size;
}

/* The floor when the stack's bounds cannot be found (sl__thread_getattr
 * fails: for the main thread it reads /proc/self/maps, which a sandbox may
 * hide). Conservative, never off: a quarter of the assumed stack below the
 * frame that asks — the caller's frame on its first need. The part of the
 * stack used above that frame is unknown (for the main thread, usually
 * small: the first wait comes early); a quarter for stealing leaves three
 * for it and for the program's own recursion, where the known bounds give
 * the half below the middle (docs/exec.md, "Stack depth"). */
static uintptr_t fallback_floor(void)
{
    uintptr_t here = (uintptr_t)__builtin_frame_address(0);
    size_t budget = assumed_stack() / 4;
    return here > budget ? here - budget : 1; /* 1: nonzero, the rule stays on */
}

/* The address below which the calling thread stops helping: the middle of
 * its stack (it grows down), or the fallback floor when its bounds cannot
 * be found. */
static uintptr_t help_floor(void)
{
    pthread_attr_t attr;
    void *low = NULL;
    size_t size = 0;
    if (sl__thread_getattr(&attr) != 0)
        return fallback_floor();
    if (pthread_attr_getstack(&attr, &low, &size) != 0)
        low = NULL;
    pthread_attr_destroy(&attr);
    return low ? (uintptr_t)low + size / 2 : fallback_floor();
}

/* True when the calling thread — worker w, or a foreign thread when w is
 * NULL — is past half its stack: it must not take other threads' tasks while
 * it waits, since each may nest another helping wait on this stack. */
static bool too_deep(const sl__worker *w)
{
    uintptr_t floor;
    /* relaxed: a test switch, set before the executor runs */
    if (w && atomic_load_explicit(&sl__exec_deep_workers, memory_order_relaxed))
        return true;
    if (w) {
        floor = w->help_floor;
    } else {
        if (!foreign_floor_known) {
            foreign_floor = help_floor();
            foreign_floor_known = true;
        }
        floor = foreign_floor;
    }
    /* The frame address, not a local's: a sanitizer's fake stack would lie. */
    return floor && (uintptr_t)__builtin_frame_address(0) < floor;
}

/* ---- a searcher's budget ---- */

/* Before it parks, a searcher makes SEARCH_SPINS rounds over every queue with
 * pause hints doubling up to 2^SEARCH_SPINS between them, then SEARCH_YIELDS
 * rounds with sched_yield (on an oversubscribed machine the thread that will
 * publish work may need this core). A round costs well under a microsecond
 * on a few workers; a park and wake-up costs tens. */
#define SEARCH_SPINS 7u
#define SEARCH_YIELDS 3u

/* The pause after the fails-th fruitless round; false once the budget is
 * spent (the caller parks, and starts counting again after). */
static bool search_pause(unsigned fails)
{
    if (fails > SEARCH_SPINS + SEARCH_YIELDS)
        return false;
    if (fails <= SEARCH_SPINS) {
        for (unsigned i = 0, n = 1u << fails; i < n; i++)
            sl_cpu_relax();
    } else {
        sched_yield();
    }
    return true;
}

/* ---- sl_exec_free's quiescence ---- */

/* A main-loop park ends: leave the count of parked workers, unless the
 * freer has set EXIT (then the worker exits instead). */
static bool quiet_leave(sl_exec *ex)
{
    uint64_t q = atomic_load_explicit(&ex->quiet, memory_order_relaxed);
    do {
        if (q & SL__QUIET_EXIT)
            return false;
        /* seq_cst: ordered against sl__exec_quiesce's CAS that sets EXIT */
    } while (!atomic_compare_exchange_weak_explicit(&ex->quiet, &q, q - 1, memory_order_seq_cst,
                                                    memory_order_relaxed));
    return true;
}

/* In a main-loop park, after the registration: false when the worker must
 * exit; else tells the freer when every worker may now be parked. */
static bool quiet_check(sl_exec *ex)
{
    uint64_t q = atomic_load_explicit(&ex->quiet, memory_order_seq_cst);
    if (q & SL__QUIET_EXIT)
        return false;
    /* seq_cst: Dekker with sl_exec_free's store of stopping and load of quiet */
    SL_FI();
    if (atomic_load_explicit(&ex->stopping, memory_order_seq_cst) &&
        q == atomic_load_explicit(&ex->started, memory_order_relaxed))
        sl_event_notify_all(&ex->freer);
    return true;
}

/* The freer's condition: every started worker parked in its main loop and
 * no task queued; then it sets EXIT (true). A CAS that loses to a worker's
 * arrival or departure looks again at once rather than sleeping. */
static bool quiesced(void *arg)
{
    sl_exec *ex = arg;
    /* relaxed: final before sl_exec_free may be called (sl_exec_new's
     * return, or its own failure path on this thread) */
    uint64_t n = atomic_load_explicit(&ex->started, memory_order_relaxed);
    uint64_t q = atomic_load_explicit(&ex->quiet, memory_order_seq_cst);
    while (q == n && !sl__exec_has_work(ex, NULL)) {
        /* seq_cst: a worker's quiet_leave after this CAS fails and exits;
         * on failure, q as fresh as the load above */
        if (atomic_compare_exchange_strong_explicit(&ex->quiet, &q, n | SL__QUIET_EXIT,
                                                    memory_order_seq_cst, memory_order_seq_cst))
            return true;
    }
    return false;
}

void sl__exec_quiesce(sl_exec *ex)
{
    sl__event_await(&ex->freer, quiesced, ex, SL_FOREVER, 0);
    /* Every worker is parked or about to re-check: wake them to see EXIT. */
    sl__idle_wake_all(&ex->idle);
}

/* ---- a worker: help, and park when there is nothing to help with ---- */

typedef struct idle_wait {
    sl_exec *ex;
    const sl__worker *w;
    const sl__wait *wt;   /* NULL: the main loop */
} idle_wait;

/* What ends an idle worker's sleep besides a waker's claim: work in a queue
 * it takes from, its wait being over, or — in the main loop — EXIT. In the
 * main loop it also runs quiet_check between the registration and the
 * sleep, as the freer's half of the protocol needs. */
static bool idle_ready(void *arg)
{
    const idle_wait *c = arg;
    return sl__exec_has_work(c->ex, c->w) || wait_done(c->wt) ||
           (!c->wt && !quiet_check(c->ex));
}

/* Worker w, searching and out of work, parks as idle slot w->id until woken
 * for work, until wt is over, or (wt NULL) until EXIT. Returns false when
 * the worker must exit. After a wake that no waker claimed, it searches
 * again unless its wait is over. */
static bool idle_sleep(sl__worker *w, const sl__wait *wt)
{
    sl_exec *ex = w->ex;
    if (!wt) /* seq_cst: counted before the registration that quiet_check follows */
        atomic_fetch_add_explicit(&ex->quiet, 1, memory_order_seq_cst);
    idle_wait c = { ex, w, wt };
    sl__idle_park(&ex->idle, w->id, &w->searching, idle_ready, &c, SL_FOREVER);
    if (!wt && !quiet_leave(ex))
        return false; /* EXIT: the executor is quiescent and being freed */
    if (!w->searching && !wait_done(wt))
        sl__idle_search_begin(&ex->idle, &w->searching);
    return true;
}

/* Runs tasks on worker w until wt is over, or with wt NULL (the main loop)
 * until the executor exits: its own deque, else a search round; parks after
 * a search budget of fruitless rounds. Search ends with more == NULL: the
 * last searcher out always hands on (idle.h), as it cannot cheaply tell. */
static void help(sl__worker *w, const sl__wait *wt)
{
    sl_exec *ex = w->ex;
    unsigned fails = 0;
    for (;;) {
        if (wait_done(wt)) {
            sl__idle_search_end(&ex->idle, &w->searching, NULL, NULL);
            return;
        }
        sl__task *t = sl__deque_take(&w->deque);
        if (!t) {
            sl__idle_search_begin(&ex->idle, &w->searching);
            t = sl__exec_search(w);
        }
        if (t) {
            sl__idle_search_end(&ex->idle, &w->searching, NULL, NULL);
            sl__exec_run(ex, w, t);
            fails = 0;
            continue;
        }
        if (search_pause(++fails))
            continue;
        fails = 0;
        if (wt && wt->task && !register_waiter(wt->task, sl__exec_worker_event(w)))
            continue;
        /* Our re-check discounts our own submissions still in mailboxes,
         * yet a publisher or a popper may have counted us as the searcher
         * who finds them (idle.h): stop searching as a searcher does, the
         * last one out waking a sleeper, before the park's silent stop.
         * relaxed: the increments are our own; a popper's decrement not
         * seen yet only costs a spare wake-up. */
#ifndef SL_MUTANT_EXEC_SUBMITTER_PARKS_SILENTLY /* planted bug when defined */
        if (atomic_load_explicit(&w->mailed, memory_order_relaxed) != 0)
            sl__idle_search_end(&ex->idle, &w->searching, NULL, NULL);
#endif
        if (!idle_sleep(w, wt))
            return;
    }
}

void sl__exec_worker_loop(sl__worker *w)
{
    sl__tls_worker = w;
    w->help_floor = help_floor();
    help(w, NULL);
    sl__tls_worker = NULL;
}

/* ---- a worker past half its stack ---- */

typedef struct deep_wait {
    const sl__worker *w;
    const sl__wait *wt;
} deep_wait;

/* What a deep waiter may run: its own deque (tasks it spawned) and its
 * mailbox (tasks sent to it); never a steal. */
static sl__task *take_own(sl__worker *w)
{
    sl__task *t = NULL;
    if ((t = sl__deque_take(&w->deque)) != NULL)
        return t;
    if (sl_list_try_pop(&w->mailbox, &t) != SL_OK)
        return NULL;
    sl__exec_mail_taken(t);
    /* No searcher's hand-on here: a parker that read its `mailed` before our
     * decrement discounted another mailbox task as its own; wake one. */
#ifndef SL_MUTANT_EXEC_DEEP_POP_NO_WAKE /* planted bug when defined */
    sl__idle_notify_work(&w->ex->idle);
#endif
    return t;
}

static bool deep_ready(void *arg)
{
    const deep_wait *c = arg;
    return wait_done(c->wt) || !sl__deque_is_empty(&c->w->deque) ||
           sl_list_len(&c->w->mailbox) != 0;
}

/* Waits until wt is over running only what is w's own, else asleep on its
 * event — not as an idle worker, so no waker spends a wake-up on a thread
 * that would not steal. Completions and mailbox submits ring the event. */
static void wait_deep(sl__worker *w, const sl__wait *wt)
{
    sl_event *ev = sl__exec_worker_event(w);
    if (wt->task && !register_waiter(wt->task, ev))
        return;
    deep_wait c = { w, wt };
    for (;;) {
        if (wait_done(wt))
            return;
        sl__task *t = take_own(w);
        if (t)
            sl__exec_run(w->ex, w, t);
        else
            sl__event_await(ev, deep_ready, &c, SL_FOREVER, 0);
    }
}

/* ---- a foreign thread: help from the deques, then park ---- */

/* A foreign thread helping ex; frames nest on its stack, innermost first, as
 * helped tasks wait in turn. */
typedef struct help_frame {
    const sl_exec *ex;
    const struct help_frame *up;
    sl__helper *slot;   /* borrowed for ex (by this frame or an outer one), or NULL */
} help_frame;
/* The calling thread's innermost frame, NULL on threads neither helping
 * nor running a task that could not be queued (sl__exec_run_unqueued):
 * sl_exec_free(ex) must refuse from a task of ex that a foreign thread
 * runs, as it does from a worker of ex. */
static _Thread_local const help_frame *foreign_frames;

/* The calling thread's innermost frame helping ex, or NULL. */
static const help_frame *frame_of(const sl_exec *ex)
{
    const help_frame *f = foreign_frames;
    while (f && f->ex != ex)
        f = f->up;
    return f;
}

sl__helper *sl__exec_foreign_slot(const sl_exec *ex)
{
    const help_frame *f = frame_of(ex);
    return f ? f->slot : NULL;
}

bool sl__exec_foreign_helping(const sl_exec *ex) { return frame_of(ex) != NULL; }

void sl__exec_run_unqueued(sl_exec *ex, sl_task_fn fn, void *args)
{
    if (sl__exec_worker_of(ex)) {
        fn(args, NULL);
        return;
    }
    /* A frame with no slot of its own (an outer frame's, if any, as a
     * spawn from here would use without it): it only names ex, for
     * sl_exec_free's refusal. */
#ifdef SL_MUTANT_EXEC_INLINE_UNFRAMED
    fn(args, NULL); /* planted bug: a task run inline may free its executor */
    return;
#endif
    help_frame frame = { ex, foreign_frames, sl__exec_foreign_slot(ex) };
    foreign_frames = &frame;
    fn(args, NULL);
    foreign_frames = frame.up;
}

/* Borrows a free helper slot of ex, or NULL when all are taken. An empty one
 * first: a released slot may still hold spawns its last owner never synced,
 * which are not this thread's recursion to run on its stack. */
static sl__helper *helper_borrow(sl_exec *ex, uint64_t start)
{
    for (unsigned k = 0; k < 2 * SL__HELPER_SLOTS; k++) {
        sl__helper *h = &ex->helpers[(start + k) % SL__HELPER_SLOTS];
        if (k < SL__HELPER_SLOTS && !sl__deque_is_empty(&h->deque))
            continue;
        uint32_t free_slot = 0;
        /* acquire: the previous owner's pushes and takes (its release in
         * help_foreign) before ours — the deque's owner end changes hands */
        if (atomic_load_explicit(&h->owned, memory_order_relaxed) == 0 &&
            atomic_compare_exchange_strong_explicit(&h->owned, &free_slot, 1u,
                                                    memory_order_acquire,
                                                    memory_order_relaxed))
            return h;
    }
    return NULL;
}

/* One task for a waiting foreign thread: its own slot first (what it spawned,
 * newest first), then — unless deep — other threads' deques. Never the
 * injector or a mailbox: they hold what sl_submit queued, which must never
 * run on its submitter. */
static sl__task *foreign_take(sl_exec *ex, sl__helper *slot, bool deep, uint64_t *rng)
{
    sl__task *t = slot ? sl__deque_take(&slot->deque) : NULL;
    if (t || deep)
        return t;
    unsigned start = (unsigned)sl__rand_below(rng, ex->nworkers * SL__HELPER_SLOTS);
    return sl__exec_steal_deques(ex, start, ex->nworkers, slot);
}

/* A foreign thread waiting for wt on ex steals from ex's deques and runs what
 * it steals, until wt is over or a search budget finds nothing. It leaves the
 * task's state alone, so the park after it is the same as without helping.
 * Returns whether wt is over (acquire). Re-entrant. */
static bool help_foreign(sl_exec *ex, const sl__wait *wt)
{
    help_frame frame = { ex, foreign_frames, NULL };
    /* Seeded from the frame's address: distinct per thread and nesting level;
     * the low bit keeps xorshift off its zero fixed point. */
    uint64_t rng = ((uint64_t)(uintptr_t)&frame * 0x9e3779b97f4a7c15ull) | 1u;
    sl__helper *outer = sl__exec_foreign_slot(ex);
    frame.slot = outer ? outer : helper_borrow(ex, rng);
    foreign_frames = &frame;
    bool deep = too_deep(NULL);
    unsigned fails = 0;
    while (!wait_done(wt)) {
        if (!frame.slot && !outer)
            frame.slot = helper_borrow(ex, rng);
        /* Without a slot, what a stolen task spawned would wait in the
         * injector, which only workers take from, and a deep worker does
         * not: steal nothing then ("Why the slot"). */
        sl__task *t = foreign_take(ex, frame.slot, deep || !frame.slot, &rng);
        if (t) {
            sl__exec_run(ex, NULL, t);
            fails = 0;
        } else if (!search_pause(++fails)) {
            break;
        }
    }
    foreign_frames = frame.up;
    /* release: our pushes and takes before the next owner's (helper_borrow).
     * What is still in the deque (spawns never synced) stays stealable. */
    if (frame.slot && !outer)
        atomic_store_explicit(&frame.slot->owned, 0u, memory_order_release);
    return wait_done(wt);
}

/* Sleeps until wt is over, running nothing: a task's syncer on the task's
 * own event, which it registers; a scope's waiter on the event chosen at
 * sl_scope_begin. */
static void wait_parked(const sl__wait *wt)
{
    sl__wait c = *wt;
    sl_event *ev = c.task ? &c.task->done : c.scope->sl__sleep;
    SL_FI();
    if (c.task && !register_waiter(c.task, ev))
        return;
    sl__event_await(ev, wait_done_ready, &c, SL_FOREVER, 0);
}

/* ---- the choice ---- */

void sl__exec_wait(sl_exec *ex, const sl__wait *wt)
{
    sl__worker *w = sl__tls_worker;
    /* A worker waits where its completer will ring: its own event. Only a
     * scope begun on another thread (a misuse) says otherwise; then it
     * parks there, helping no one. */
    if (w && (wt->task || wt->scope->sl__sleep == sl__exec_worker_event(w))) {
        if (too_deep(w))
            wait_deep(w, wt);
        else
            help(w, wt);
    } else if (w || !help_foreign(ex, wt)) {
        wait_parked(wt);
    }
    settle(wt);
}
