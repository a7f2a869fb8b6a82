/*
 * pool/exec.c — the executor's workers, spawn, sync and stealing.
 *
 * Each worker owns a Chase–Lev deque (exec_deque.h). sl_spawn on a worker
 * pushes on its own deque; sl_sync pops it back and runs it inline when it is
 * still there (the fork-join common case: no other thread touched it).
 * A worker out of local work searches: its mailbox, random victims' deques,
 * the injector (tasks from foreign threads), other workers' mailboxes; after
 * a bounded number of fruitless rounds it parks (exec_idle.c). A worker
 * waiting in sl_sync or sl_scope_end does the same, and is also woken by the
 * completion it waits for.
 *
 * A foreign thread's spawns go through the injector. Its sl_sync (and
 * sl_scope_end) helps while it waits: it steals from the workers' deques —
 * never from the injector or a mailbox — and runs what it steals, then, after
 * a bounded search, parks on the task's own eventcount (a worker of another
 * executor runs its own executor's tasks instead). Deques only ever hold
 * tasks spawned by workers of this executor, never a submitted one, which is
 * what keeps sl_submit's promise for foreign submitters; a worker's sl_submit
 * goes to another worker's mailbox, and the searching loop never runs a task
 * its own thread submitted (docs/exec.md, "Submit never runs on its caller"
 * and "Foreign threads help").
 *
 * Helping nests: a stolen task may sync and help in turn, on the same stack,
 * and nothing else bounds that depth. So a thread past half its stack stops
 * taking other threads' work while it waits (oneTBB's rule) and only runs
 * what is its own, else sleeps until its wait is over ("Stack depth").
 */
#include "exec_internal.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../channels/spin.h"

_Thread_local sl__worker *sl__tls_worker __attribute__((tls_model("initial-exec")));
/* A foreign thread helping ex (sl__exec_help_foreign); frames nest on its
 * stack, innermost first, as helped tasks sync in turn. */
typedef struct help_frame {
    const sl_exec *ex;
    const struct help_frame *up;
} help_frame;
/* The calling thread's innermost frame, NULL on workers and on foreign
 * threads not helping: sl_exec_free(ex) must refuse from a task of ex that a
 * foreign thread runs, as it does from a worker of ex. */
static _Thread_local const help_frame *foreign_frames;
/* A foreign thread's help floor (sl__exec_too_deep), found on first need,
 * and the tasks it runs nested while helping. */
static _Thread_local uintptr_t foreign_floor;
static _Thread_local bool foreign_floor_known;
static _Thread_local unsigned foreign_nesting;

/* A searcher's budget before it parks: SEARCH_SPINS rounds over every queue
 * with pause hints doubling up to 2^SEARCH_SPINS between them, then
 * SEARCH_YIELDS rounds with sched_yield (on an oversubscribed machine the
 * worker that will publish work may need this core), then park. A round
 * costs well under a microsecond on a few workers; a park and wake-up costs
 * tens. */
#define SEARCH_SPINS 7u
#define SEARCH_YIELDS 3u
/* Steal attempts on one victim whose top moved under us before moving on. */
#define STEAL_RETRIES 4u
static uint64_t next_random(uint64_t *state)
{
    /* xorshift64: good enough to spread victims, one cycle of state */
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *state = x;
    return x;
}

static void *steal_from(sl__worker *victim)
{
    void *item = NULL;
    for (unsigned i = 0; i < STEAL_RETRIES; i++) {
        sl__steal r = sl__deque_steal(&victim->deque, &item);
        if (r == SL__STEAL_OK)
            return item;
        if (r == SL__STEAL_EMPTY)
            return NULL;
    }
    return NULL;
}

/* A task from other workers' mailboxes that w did not submit, or NULL. A task
 * w submitted goes back where it was, with the owner's wake-up redone. */
static sl__task *steal_mail(sl_exec *ex, sl__worker *w, unsigned start)
{
    for (unsigned k = 1; k < ex->nworkers; k++) {
        unsigned v = (start + k) % ex->nworkers;
        if (v == w->id)
            continue;
        sl__task *t = NULL;
        if (sl_list_try_pop(&ex->workers[v].mailbox, &t) != SL_OK)
            continue;
        if (t->link.submitter != w)
            return t;
        /* Back where it was (we must never run it); only a failed segment
         * allocation can refuse, and the task must not be lost: retry. */
        while (sl_list_try_push(&ex->workers[v].mailbox, &t) != SL_OK)
            sched_yield();
        sl__idle_notify_mailbox(ex, v);
    }
    return NULL;
}

/* One pass over the workers' deques from start, skipping worker `skip`
 * (nworkers or more: none). */
static sl__task *steal_deques(sl_exec *ex, unsigned start, unsigned skip)
{
    unsigned n = ex->nworkers;
    for (unsigned k = 0; k < n; k++) {
        unsigned v = (start + k) % n;
        sl__task *t;
        if (v != skip && (t = steal_from(&ex->workers[v])) != NULL)
            return t;
    }
    return NULL;
}

/* One search round: own mailbox, victims' deques from a random start, the
 * injector, then other mailboxes. */
static sl__task *steal_any(sl_exec *ex, sl__worker *w)
{
    sl__task *t = NULL;
    if (sl_list_try_pop(&w->mailbox, &t) == SL_OK)
        return t;
    unsigned n = ex->nworkers;
    unsigned start = (unsigned)(next_random(&w->rng) % n);
    if ((t = steal_deques(ex, start, w->id)) != NULL)
        return t;
    if (sl_list_try_pop(&ex->injector, &t) == SL_OK)
        return t;
    return n > 1 ? steal_mail(ex, w, start) : NULL;
}

bool sl__exec_has_work(sl_exec *ex, const sl__worker *w)
{
    for (unsigned i = 0; i < ex->nworkers; i++) {
        const sl__worker *v = &ex->workers[i];
        if (!sl__deque_is_empty(&v->deque))
            return true;
        /* Others' mailboxes are their owners' to watch (a submit wakes the
         * owner itself); a parking worker that counted them would spin on a
         * task it submitted and may not run. */
        if ((!w || v == w) && sl_list_len(&v->mailbox) != 0)
            return true;
    }
    return sl_list_len(&ex->injector) != 0;
}

/* Runs t on worker w, or on a foreign thread of ex when w is NULL, and
 * completes it. */
static inline void run_task(sl_exec *ex, sl__worker *w, sl__task *t)
{
    sl_scope *scope = t->scope;
    t->fn(t->args_size ? t->payload : NULL,
          t->ret_size ? t->payload + sl__task_ret_offset(t) : NULL);
    SL_FI();
    if (scope) {
        sl__task_free(ex, w, t);
        sl__scope_complete(scope);
        return;
    }
    /* release: the result before DONE; seq_cst: DONE before the notify's
     * read of the waiter count (sluice/park.h). */
    uint32_t old = atomic_exchange_explicit(&t->state, SL__TASK_DONE, memory_order_seq_cst);
    if (old == SL__TASK_WAITED) {
        SL_FI();
        /* The syncer may already have seen DONE and recycled the record;
         * then this reads a later waiter's event and wakes it spuriously,
         * which every sleeper tolerates. */
        sl_event *ev = atomic_load_explicit(&t->sleep, memory_order_relaxed);
        sl_event_notify_one(ev);
    }
}

void sl__exec_run(sl__worker *w, sl__task *t)
{
    w->help_nesting++;
    run_task(w->ex, w, t);
    w->help_nesting--;
}

static bool register_waiter(sl__task *t, sl_event *ev)
{
    atomic_store_explicit(&t->sleep, ev, memory_order_relaxed);
    SL_FI();
    uint32_t st = SL__TASK_PENDING;
    /* release: the sleep pointer before WAITED, read by the completer's exchange */
    if (atomic_compare_exchange_strong_explicit(&t->state, &st, SL__TASK_WAITED,
                                                memory_order_release, memory_order_acquire))
        return true;
    return st != SL__TASK_DONE;
}

/* ---- stack depth ---- */

/* Without the stack's bounds (pthread_getattr_np failed) a thread counts
 * nested tasks instead, and stops helping past this many. */
#define HELP_NEST_MAX 256u

/* The address below which the calling thread stops helping: the middle of
 * its stack (it grows down); 0 when unknown. */
static uintptr_t find_help_floor(void)
{
    pthread_attr_t attr;
    void *low = NULL;
    size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &attr) != 0)
        return 0;
    if (pthread_attr_getstack(&attr, &low, &size) != 0)
        low = NULL;
    pthread_attr_destroy(&attr);
    return low ? (uintptr_t)low + size / 2 : 0;
}

bool sl__exec_too_deep(sl__worker *w)
{
    uintptr_t floor;
    unsigned nesting;
    if (w) {
        floor = w->help_floor;
        nesting = w->help_nesting;
    } else {
        if (!foreign_floor_known) {
            foreign_floor = find_help_floor();
            foreign_floor_known = true;
        }
        floor = foreign_floor;
        nesting = foreign_nesting;
    }
    if (!floor)
        return nesting >= HELP_NEST_MAX;
    /* The frame address, not a local's: a sanitizer's fake stack would lie. */
    return (uintptr_t)__builtin_frame_address(0) < floor;
}

/* Publishes where the syncer sleeps and marks the task WAITED; false when the
 * task is already DONE (nothing to wait for). */
static bool register_waiter(sl__task *t, sl_event *ev);

/* What may run while waiting deep: w's own deque (tasks it spawned) and its
 * mailbox (tasks sent to it); never a steal. */
static sl__task *take_own(sl__worker *w)
{
    sl__task *t = NULL;
    if (!w)
        return NULL;
    if ((t = sl__deque_take(&w->deque)) != NULL)
        return t;
    return sl_list_try_pop(&w->mailbox, &t) == SL_OK ? t : NULL;
}

static bool has_own(const sl__worker *w)
{
    return w && (!sl__deque_is_empty(&w->deque) || sl_list_len(&w->mailbox) != 0);
}

void sl__exec_wait_deep(sl__worker *w, const sl__wait *wt, sl_event *ev)
{
    if (wt->task && !register_waiter(wt->task, ev))
        return;
    for (;;) {
        if (sl__wait_done(wt))
            return;
        sl__task *t = take_own(w);
        if (t) {
            sl__exec_run(w, t);
            continue;
        }
        /* Full fence inside: our registration before the re-check, against
         * the completer's DONE (or zero) before its notify. */
        uint32_t key = sl_event_prepare(ev);
        if (sl__wait_done(wt) || has_own(w)) {
            sl_event_cancel(ev);
            continue;
        }
        sl_event_wait(ev, key, SL_FOREVER);
    }
}

static void search_pause(unsigned fails)
{
    if (fails <= SEARCH_SPINS) {
        for (unsigned i = 0, n = 1u << fails; i < n; i++)
            sl_cpu_relax();
    } else {
        sched_yield();
    }
}

void sl__exec_help(sl__worker *w, const sl__wait *wt)
{
    sl_exec *ex = w->ex;
    unsigned fails = 0;
    for (;;) {
        if (sl__wait_done(wt)) {
            sl__idle_search_end(ex, w);
            return;
        }
        sl__task *t = sl__deque_take(&w->deque);
        if (!t) {
            sl__idle_search_begin(ex, w);
            t = steal_any(ex, w);
        }
        if (t) {
            sl__idle_search_end(ex, w);
            sl__exec_run(w, t);
            fails = 0;
            continue;
        }
        if (++fails <= SEARCH_SPINS + SEARCH_YIELDS) {
            search_pause(fails);
            continue;
        }
        fails = 0;
        if (wt && wt->task && !register_waiter(wt->task, &w->ev))
            continue;
        if (!sl__idle_park(ex, w, wt))
            return; /* the executor is exiting (main loop only) */
    }
}

bool sl__exec_help_foreign(sl_exec *ex, const sl__wait *wt)
{
    help_frame frame = { ex, foreign_frames };
    /* Seeded from the frame's address: distinct per thread and nesting level;
     * the low bit keeps xorshift off its zero fixed point. */
    uint64_t rng = ((uint64_t)(uintptr_t)&frame * 0x9e3779b97f4a7c15ull) | 1u;
    foreign_frames = &frame;
    unsigned fails = 0;
    while (!sl__wait_done(wt)) {
        /* Deques only: the injector and the mailboxes hold what sl_submit
         * queued, which must never run on its submitter. */
        unsigned start = (unsigned)(next_random(&rng) % ex->nworkers);
        sl__task *t = steal_deques(ex, start, ex->nworkers);
        if (t) {
            foreign_nesting++;
            run_task(ex, NULL, t);
            foreign_nesting--;
            fails = 0;
            continue;
        }
        if (++fails > SEARCH_SPINS + SEARCH_YIELDS)
            break;
        search_pause(fails);
    }
    foreign_frames = frame.up;
    return sl__wait_done(wt);
}

/* True when the calling thread is a foreign thread running a task of ex. */
static bool foreign_helping(const sl_exec *ex)
{
    for (const help_frame *f = foreign_frames; f; f = f->up)
        if (f->ex == ex)
            return true;
    return false;
}

static void *worker_main(void *arg)
{
    sl__worker *w = arg;
    sl__tls_worker = w;
    w->help_floor = find_help_floor();
    sl__exec_help(w, NULL);
    sl__tls_worker = NULL;
    return NULL;
}

/* ---- spawn, submit, sync ---- */

static const sl_future cleared_future = { NULL, 0 };

static bool task_ok(sl_exec *ex, sl_task_fn fn, const void *args, size_t args_size,
                    size_t ret_size)
{
    return ex && fn && (args || !args_size) && SL_EXEC_FITS(args_size, ret_size);
}

SL_API sl_future sl_spawn(sl_exec *ex, sl_task_fn fn, const void *args, size_t args_size,
                          size_t ret_size)
{
    if (!task_ok(ex, fn, args, args_size, ret_size))
        return cleared_future;
    sl__worker *w = sl__exec_worker_of(ex);
    sl__task *t = sl__exec_task_new(ex, w, fn, args, args_size, ret_size);
    if (!t)
        return cleared_future;
    uint64_t gen = atomic_load_explicit(&t->gen, memory_order_relaxed);
    if (!sl__exec_queue(ex, w, t)) {
        sl__task_free(ex, w, t);
        return cleared_future;
    }
    return (sl_future){ t, gen };
}

/* The worker a worker's submission goes to: a sleeping one, else the next in
 * turn; never the submitter. */
static unsigned submit_target(sl_exec *ex, sl__worker *w)
{
    unsigned v = sl__idle_find_sleeper(ex, w->id);
    if (v < ex->nworkers)
        return v;
    v = w->submit_next++ % ex->nworkers;
    return v == w->id ? (v + 1) % ex->nworkers : v;
}

SL_API sl_future sl_submit(sl_exec *ex, sl_task_fn fn, const void *args, size_t args_size,
                           size_t ret_size)
{
    if (!task_ok(ex, fn, args, args_size, ret_size))
        return cleared_future;
    sl__worker *w = sl__exec_worker_of(ex);
    if (!w) /* the injector: a foreign thread's helping sync never takes from it */
        return sl_spawn(ex, fn, args, args_size, ret_size);
    if (ex->nworkers < 2)
        return cleared_future; /* no other thread could ever run it */
    sl__task *t = sl__exec_task_new(ex, w, fn, args, args_size, ret_size);
    if (!t)
        return cleared_future;
    t->link.submitter = w;
    uint64_t gen = atomic_load_explicit(&t->gen, memory_order_relaxed);
    unsigned v = submit_target(ex, w);
    if (sl_list_try_push(&ex->workers[v].mailbox, &t) != SL_OK) {
        sl__task_free(ex, w, t);
        return cleared_future;
    }
    sl__idle_notify_mailbox(ex, v);
    return (sl_future){ t, gen };
}

/* A foreign thread waits for t: it helps (runs stolen tasks) while there
 * are any, then parks on t's own event. The help loop leaves t's state
 * alone, so the park below is the same Dekker pair as without helping: a
 * completion that came first is seen by register_waiter (or the re-check),
 * one that comes after reads WAITED and notifies t->done. */
static void wait_foreign(sl_exec *ex, sl__task *t)
{
    sl__wait wt = { t, NULL };
    if (!sl__exec_too_deep(NULL) && sl__exec_help_foreign(ex, &wt))
        return;
    SL_FI();
    if (!register_waiter(t, &t->done))
        return;
    for (;;) {
        uint32_t key = sl_event_prepare(&t->done);
        SL_FI();
        /* acquire: the task's result before our copy of it */
        if (atomic_load_explicit(&t->state, memory_order_acquire) == SL__TASK_DONE) {
            sl_event_cancel(&t->done);
            return;
        }
        sl_event_wait(&t->done, key, SL_FOREVER);
    }
}

/* Worker w syncs t (claimed): runs it inline if it is still on w's deque,
 * else helps until it is done. Returns true when it ran inline (the result is
 * already in ret). */
static bool sync_on_worker(sl__worker *w, sl__task *t, void *ret)
{
    for (;;) {
        /* acquire: a thief's result before our copy of it */
        if (atomic_load_explicit(&t->state, memory_order_acquire) == SL__TASK_DONE)
            return false;
        sl__task *top = sl__deque_take(&w->deque);
        if (!top)
            break;
        if (top == t) {
            size_t ret_size = t->ret_size;
            void *out = ret_size ? (ret ? ret : t->payload + sl__task_ret_offset(t)) : NULL;
            t->fn(t->args_size ? t->payload : NULL, out);
            return true;
        }
        sl__exec_run(w, top); /* spawned after t and not synced yet: run it now */
    }
    sl__wait wt = { t, NULL };
    if (sl__exec_too_deep(w))
        sl__exec_wait_deep(w, &wt, &w->ev);
    else
        sl__exec_help(w, &wt);
    return false;
}

SL_API sl_status sl_sync(sl_future *f, void *ret)
{
    if (!f || !f->task || (f->gen & 1u))
        return SL_EINVAL;
    sl__task *t = f->task;
    uint64_t gen = f->gen;
    /* The claim: exactly one sync of this life gets past here. acq_rel: the
     * record's previous life (the free's release) before our reads. */
    if (!atomic_compare_exchange_strong_explicit(&t->gen, &gen, gen + 1, memory_order_acq_rel,
                                                 memory_order_relaxed))
        return SL_EINVAL;
    sl_exec *ex = t->ex;
    sl__worker *self = sl__tls_worker;
    sl__worker *w = self && self->ex == ex ? self : NULL;
    bool inline_ran = false;
    if (w) {
        inline_ran = sync_on_worker(w, t, ret);
    } else if (self) {
        /* A worker of another executor: it keeps running its own executor's
         * tasks while it waits, so that executors waiting on each other
         * cannot deadlock (its tasks may be what the awaited one needs). */
        sl__wait wt = { t, NULL };
        if (sl__exec_too_deep(self))
            sl__exec_wait_deep(self, &wt, &self->ev);
        else
            sl__exec_help(self, &wt);
    } else {
        wait_foreign(ex, t);
    }
    if (!inline_ran && ret && t->ret_size)
        memcpy(ret, t->payload + sl__task_ret_offset(t), t->ret_size);
    sl__task_free(ex, w, t);
    *f = cleared_future;
    return SL_OK;
}

SL_API bool sl_is_spawned(const sl_future *f)
{
    if (!f || !f->task || (f->gen & 1u))
        return false;
    const sl__task *t = f->task;
    return atomic_load_explicit(&t->gen, memory_order_relaxed) == f->gen;
}

SL_API bool sl_is_ready(const sl_future *f)
{
    if (!sl_is_spawned(f))
        return false;
    const sl__task *t = f->task;
    /* acquire: the task's completion before the caller's next steps */
    return atomic_load_explicit(&t->state, memory_order_acquire) == SL__TASK_DONE;
}

/* ---- lifecycle ---- */

static unsigned online_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        return 1;
    return n > (long)SL_EXEC_MAX_THREADS ? SL_EXEC_MAX_THREADS : (unsigned)n;
}

static bool worker_init(sl_exec *ex, sl__worker *w, unsigned id)
{
    memset(w, 0, sizeof *w);
    w->ex = ex;
    w->id = id;
    w->rng = 0x9e3779b97f4a7c15ull * (id + 1u);
    w->submit_next = id + 1u;
    sl_event_init(&w->ev);
    /* 256 slots: fork-join depth rarely goes beyond; the deque grows if it does. */
    if (!sl__deque_init(&w->deque, 8))
        return false;
    if (sl_list_init(&w->mailbox, sizeof(sl__task *)) != SL_OK) {
        sl__deque_destroy(&w->deque);
        return false;
    }
    return true;
}

static void exec_destroy(sl_exec *ex, unsigned initialised)
{
    for (unsigned i = 0; i < initialised; i++) {
        sl__deque_destroy(&ex->workers[i].deque);
        sl_list_destroy(&ex->workers[i].mailbox);
    }
    sl_list_destroy(&ex->injector);
    sl__task_free_all(ex);
    pthread_mutex_destroy(&ex->pool_lock);
    free(ex->sleep_bits);
    free(ex->workers);
    free(ex);
}

/* Allocates ex and everything but the threads. */
static sl_exec *exec_alloc(unsigned n, const char *name)
{
    sl_exec *ex = aligned_alloc(SL_CACHELINE, sizeof *ex);
    if (!ex)
        return NULL;
    memset(ex, 0, sizeof *ex);
    ex->nworkers = n;
    ex->nwords = (n + 63u) / 64u;
    snprintf(ex->name, sizeof ex->name, "%s", name ? name : "sl-exec");
    pthread_mutex_init(&ex->pool_lock, NULL);
    sl_event_init(&ex->foreign);
    sl_event_init(&ex->freer);
    ex->workers = aligned_alloc(SL_CACHELINE, n * sizeof *ex->workers);
    ex->sleep_bits = calloc(ex->nwords, sizeof *ex->sleep_bits);
    if (!ex->workers || !ex->sleep_bits || sl_list_init(&ex->injector, sizeof(sl__task *)) != SL_OK) {
        free(ex->workers);
        free(ex->sleep_bits);
        pthread_mutex_destroy(&ex->pool_lock);
        free(ex);
        return NULL;
    }
    for (unsigned i = 0; i < n; i++) {
        if (!worker_init(ex, &ex->workers[i], i)) {
            exec_destroy(ex, i);
            return NULL;
        }
    }
    return ex;
}

/* Stops and joins the started workers (every task done), then frees ex. */
static void exec_stop(sl_exec *ex)
{
    atomic_store_explicit(&ex->stopping, 1, memory_order_seq_cst);
    sl__idle_quiesce(ex);
    unsigned started = atomic_load_explicit(&ex->started, memory_order_relaxed);
    for (unsigned i = 0; i < started; i++)
        pthread_join(ex->workers[i].thread, NULL);
    exec_destroy(ex, ex->nworkers);
}

SL_API sl_status sl_exec_new(sl_exec **out, const sl_exec_opts *opts)
{
    if (!out || (opts && opts->threads > SL_EXEC_MAX_THREADS))
        return SL_EINVAL;
    unsigned n = opts && opts->threads ? opts->threads : online_cpus();
    sl_exec *ex = exec_alloc(n, opts ? opts->name : NULL);
    if (!ex)
        return SL_ENOMEM;
    for (unsigned i = 0; i < n; i++) {
        sl__worker *w = &ex->workers[i];
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
            exec_stop(ex); /* the workers started so far exit; nothing left */
            return SL_ENOMEM;
        }
        char tname[32];
        snprintf(tname, sizeof tname, "%s/%u", ex->name, i);
        tname[15] = '\0'; /* Linux keeps 15 bytes of a thread's name */
        pthread_setname_np(w->thread, tname);
        atomic_store_explicit(&ex->started, i + 1, memory_order_relaxed);
    }
    *out = ex;
    return SL_OK;
}

SL_API void sl_exec_free(sl_exec *ex)
{
    if (!ex || sl__exec_worker_of(ex) || foreign_helping(ex))
        return; /* from one of its own tasks it would wait for itself forever */
    exec_stop(ex);
}

SL_API unsigned sl_exec_threads(const sl_exec *ex)
{
    return ex ? ex->nworkers : 0;
}

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static sl_exec *global_exec;

static void global_create(void)
{
    sl_exec_opts o = { 0, "sl-global" };
    if (sl_exec_new(&global_exec, &o) != SL_OK)
        global_exec = NULL;
}

SL_API sl_exec *sl_exec_global(void)
{
    pthread_once(&global_once, global_create);
    return global_exec;
}
