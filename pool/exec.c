/*
 * pool/exec.c — the executor's workers, spawn, sync and stealing.
 *
 * Each worker owns a Chase–Lev deque (exec_deque.h). sl_spawn on a worker
 * pushes on its own deque; sl_sync pops it back and runs it inline when it is
 * still there (the fork-join common case: no other thread touched it).
 * A worker out of local work searches: its mailbox, random victims' deques,
 * the injector (tasks from foreign threads), other workers' mailboxes; after
 * a bounded number of fruitless rounds it parks (exec_idle.c, idle.h). A worker
 * waiting in sl_sync or sl_scope_end does the same, and is also woken by the
 * completion it waits for.
 *
 * A foreign thread's spawns go through the injector. Its sl_sync (and
 * sl_scope_end) helps while it waits: it borrows a helper slot (a deque of
 * its own, where the tasks it runs spawn), takes from it, steals from the
 * other deques — never from the injector or a mailbox — and runs what it
 * gets, then, after a bounded search, parks on the task's own eventcount (a
 * worker of another executor runs its own executor's tasks instead). Deques
 * (workers' and helper slots') only ever hold spawned tasks, never a
 * submitted one, which is what keeps sl_submit's promise for foreign
 * submitters; a worker's sl_submit goes to another worker's mailbox, and the
 * searching loop never runs a task its own thread submitted (docs/exec.md,
 * "Submit never runs on its caller" and "Foreign threads help").
 *
 * Helping nests: a stolen task may sync and help in turn, on the same stack;
 * exec_depth.c bounds that ("Stack depth").
 */
#include "exec_internal.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal/spin.h"
#include "internal/util.h"

_Thread_local sl__worker *sl__tls_worker __attribute__((tls_model("initial-exec")));
/* A foreign thread helping ex (sl__exec_help_foreign); frames nest on its
 * stack, innermost first, as helped tasks sync in turn. */
typedef struct help_frame {
    const sl_exec *ex;
    const struct help_frame *up;
    sl__helper *slot;   /* borrowed for ex (by this frame or an outer one), or NULL */
} help_frame;
/* The calling thread's innermost frame, NULL on workers and on foreign
 * threads not helping: sl_exec_free(ex) must refuse from a task of ex that a
 * foreign thread runs, as it does from a worker of ex. */
static _Thread_local const help_frame *foreign_frames;

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
static void *steal_from(sl__deque *victim)
{
    void *item = NULL;
    for (unsigned i = 0; i < STEAL_RETRIES; i++) {
        sl__steal r = sl__deque_steal(victim, &item);
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
        sl__idle_notify_slot(&ex->idle, v);
    }
    return NULL;
}

/* One pass over the workers' deques from start, skipping worker `skip`
 * (nworkers or more: none), then over the helper slots' deques, skipping
 * `own` (the caller's slot, or NULL). */
static sl__task *steal_deques(sl_exec *ex, unsigned start, unsigned skip,
                              const sl__helper *own)
{
    unsigned n = ex->nworkers;
    for (unsigned k = 0; k < n; k++) {
        unsigned v = (start + k) % n;
        sl__task *t;
        if (v != skip && (t = steal_from(&ex->workers[v].deque)) != NULL)
            return t;
    }
    for (unsigned k = 0; k < SL__HELPER_SLOTS; k++) {
        sl__helper *h = &ex->helpers[(start / n + k) % SL__HELPER_SLOTS];
        sl__task *t;
        /* Slots are empty most of the time: look before the steal's fence. */
        if (h != own && !sl__deque_is_empty(&h->deque) && (t = steal_from(&h->deque)) != NULL)
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
    unsigned start = (unsigned)(sl__xorshift64s(&w->rng) % n);
    if ((t = steal_deques(ex, start, w->id, NULL)) != NULL)
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
    for (unsigned i = 0; i < SL__HELPER_SLOTS; i++)
        if (!sl__deque_is_empty(&ex->helpers[i].deque))
            return true;
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
    run_task(w->ex, w, t);
}

bool sl__exec_register_waiter(sl__task *t, sl_event *ev)
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
            sl__idle_search_end(&ex->idle, &w->searching, NULL, NULL);
            return;
        }
        sl__task *t = sl__deque_take(&w->deque);
        if (!t) {
            sl__idle_search_begin(&ex->idle, &w->searching);
            t = steal_any(ex, w);
        }
        if (t) {
            sl__idle_search_end(&ex->idle, &w->searching, NULL, NULL);
            sl__exec_run(w, t);
            fails = 0;
            continue;
        }
        if (++fails <= SEARCH_SPINS + SEARCH_YIELDS) {
            search_pause(fails);
            continue;
        }
        fails = 0;
        if (wt && wt->task && !sl__exec_register_waiter(wt->task, sl__exec_worker_event(w)))
            continue;
        if (!sl__exec_idle_park(ex, w, wt))
            return; /* the executor is exiting (main loop only) */
    }
}

sl__helper *sl__exec_foreign_slot(const sl_exec *ex)
{
    for (const help_frame *f = foreign_frames; f; f = f->up)
        if (f->ex == ex)
            return f->slot;
    return NULL;
}

/* Borrows a free helper slot of ex, or NULL when all are taken. An empty one
 * first: a released slot may still hold spawns its last owner never synced,
 * which are not this thread's recursion to run on its stack. */
static sl__helper *claim_slot(sl_exec *ex, uint64_t start)
{
    for (unsigned k = 0; k < 2 * SL__HELPER_SLOTS; k++) {
        sl__helper *h = &ex->helpers[(start + k) % SL__HELPER_SLOTS];
        if (k < SL__HELPER_SLOTS && !sl__deque_is_empty(&h->deque))
            continue;
        uint32_t free_slot = 0;
        /* acquire: the previous owner's pushes and takes (its release below)
         * before ours — the deque's owner end changes hands */
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
    unsigned start = (unsigned)(sl__xorshift64s(rng) % ex->nworkers);
    return steal_deques(ex, start, ex->nworkers, slot);
}

bool sl__exec_help_foreign(sl_exec *ex, const sl__wait *wt)
{
    help_frame frame = { ex, foreign_frames, NULL };
    /* Seeded from the frame's address: distinct per thread and nesting level;
     * the low bit keeps xorshift off its zero fixed point. */
    uint64_t rng = ((uint64_t)(uintptr_t)&frame * 0x9e3779b97f4a7c15ull) | 1u;
    sl__helper *outer = sl__exec_foreign_slot(ex);
    frame.slot = outer ? outer : claim_slot(ex, rng);
    foreign_frames = &frame;
    bool deep = sl__exec_too_deep(NULL);
    unsigned fails = 0;
    while (!sl__wait_done(wt)) {
        if (!frame.slot && !outer)
            frame.slot = claim_slot(ex, rng);
        /* Without a slot, what a stolen task spawned would wait in the
         * injector, which only workers take from, and a deep worker does
         * not: steal nothing then ("Why the slot"). */
        sl__task *t = foreign_take(ex, frame.slot, deep || !frame.slot, &rng);
        if (t) {
            run_task(ex, NULL, t);
            fails = 0;
            continue;
        }
        if (++fails > SEARCH_SPINS + SEARCH_YIELDS)
            break;
        search_pause(fails);
    }
    foreign_frames = frame.up;
    /* release: our pushes and takes before the next owner's (claim_slot).
     * What is still in the deque (spawns never synced) stays stealable. */
    if (frame.slot && !outer)
        atomic_store_explicit(&frame.slot->owned, 0u, memory_order_release);
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
    w->help_floor = sl__exec_help_floor();
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

/* A foreign thread's submit: always the injector — never its helper slot,
 * which it takes from itself; a foreign thread's helping never takes from
 * the injector. */
static sl_future submit_foreign(sl_exec *ex, sl_task_fn fn, const void *args, size_t args_size,
                                size_t ret_size)
{
    sl__task *t = sl__exec_task_new(ex, NULL, fn, args, args_size, ret_size);
    if (!t)
        return cleared_future;
    uint64_t gen = atomic_load_explicit(&t->gen, memory_order_relaxed);
    if (sl_list_try_push(&ex->injector, &t) != SL_OK) {
        sl__task_free(ex, NULL, t);
        return cleared_future;
    }
    sl__exec_published(ex);
    return (sl_future){ t, gen };
}

/* The worker a worker's submission goes to: a sleeping one, else the next in
 * turn; never the submitter. */
static unsigned submit_target(sl_exec *ex, sl__worker *w)
{
    unsigned v = sl__idle_find_sleeper(&ex->idle, w->id);
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
    if (!w)
        return submit_foreign(ex, fn, args, args_size, ret_size);
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
    sl__idle_notify_slot(&ex->idle, v);
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
    if (sl__exec_help_foreign(ex, &wt))
        return;
    SL_FI();
    if (!sl__exec_register_waiter(t, &t->done))
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
        sl__exec_wait_deep(w, &wt, sl__exec_worker_event(w));
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
            sl__exec_wait_deep(self, &wt, sl__exec_worker_event(self));
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

static bool worker_init(sl_exec *ex, sl__worker *w, unsigned id)
{
    memset(w, 0, sizeof *w);
    w->ex = ex;
    w->id = id;
    w->rng = 0x9e3779b97f4a7c15ull * (id + 1u);
    w->submit_next = id + 1u;
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
    for (unsigned i = 0; i < SL__HELPER_SLOTS; i++)
        sl__deque_destroy(&ex->helpers[i].deque);
    sl_list_destroy(&ex->injector);
    sl__task_free_all(ex);
    pthread_mutex_destroy(&ex->pool_lock);
    sl__idle_destroy(&ex->idle);
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
    snprintf(ex->name, sizeof ex->name, "%s", name ? name : "sl-exec");
    pthread_mutex_init(&ex->pool_lock, NULL);
    sl_event_init(&ex->foreign);
    sl_event_init(&ex->freer);
    ex->workers = aligned_alloc(SL_CACHELINE, n * sizeof *ex->workers);
    bool idle = sl__idle_init(&ex->idle, n) == SL_OK; /* destroys itself on failure */
    bool helpers = true;
    for (unsigned i = 0; i < SL__HELPER_SLOTS; i++)
        helpers = sl__deque_init(&ex->helpers[i].deque, 6) && helpers;
    if (!helpers || !ex->workers || !idle ||
        sl_list_init(&ex->injector, sizeof(sl__task *)) != SL_OK) {
        for (unsigned i = 0; i < SL__HELPER_SLOTS; i++)
            sl__deque_destroy(&ex->helpers[i].deque);
        free(ex->workers);
        sl__idle_destroy(&ex->idle);
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
    sl__exec_idle_quiesce(ex);
    unsigned started = atomic_load_explicit(&ex->started, memory_order_relaxed);
    for (unsigned i = 0; i < started; i++)
        pthread_join(ex->workers[i].thread, NULL);
    exec_destroy(ex, ex->nworkers);
}

SL_API sl_status sl_exec_new(sl_exec **out, const sl_exec_opts *opts)
{
    if (!out || (opts && opts->threads > SL_EXEC_MAX_THREADS))
        return SL_EINVAL;
    unsigned n = opts && opts->threads ? opts->threads : sl__online_cpus(SL_EXEC_MAX_THREADS);
    sl_exec *ex = exec_alloc(n, opts ? opts->name : NULL);
    if (!ex)
        return SL_ENOMEM;
    for (unsigned i = 0; i < n; i++) {
        sl__worker *w = &ex->workers[i];
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
            exec_stop(ex); /* the workers started so far exit; nothing left */
            return SL_ENOMEM;
        }
        char id[16];
        snprintf(id, sizeof id, "%u", i);
        sl__thread_name(w->thread, ex->name, id);
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
