#include "pool_support.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

/* ---- gates --------------------------------------------------------------- */

void gate_init(pool_gate *g)
{
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    g->open = false;
    g->entered = 0;
    g->left = 0;
}

void gate_destroy(pool_gate *g)
{
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
}

void gate_open(pool_gate *g)
{
    pthread_mutex_lock(&g->mu);
    g->open = true;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

unsigned gate_entered(pool_gate *g)
{
    pthread_mutex_lock(&g->mu);
    unsigned n = g->entered;
    pthread_mutex_unlock(&g->mu);
    return n;
}

unsigned gate_left(pool_gate *g)
{
    pthread_mutex_lock(&g->mu);
    unsigned n = g->left;
    pthread_mutex_unlock(&g->mu);
    return n;
}

bool gate_wait_entered(pool_gate *g, unsigned n, uint64_t timeout_ns)
{
    uint64_t end = sl_test_now_ns() + timeout_ns;
    while (gate_entered(g) < n) {
        if (sl_test_now_ns() > end)
            return false;
        sl_test_sleep_ns(200000);
    }
    return true;
}

void gate_job(void *arg, void *worker_ctx)
{
    (void)worker_ctx;
    pool_gate *g = arg;
    pthread_mutex_lock(&g->mu);
    g->entered++;
    pthread_cond_broadcast(&g->cv);
    while (!g->open)
        pthread_cond_wait(&g->cv, &g->mu);
    g->left++;
    pthread_mutex_unlock(&g->mu);
}

/* ---- books --------------------------------------------------------------- */

static void book_worker_fini(unsigned id, void *worker_ctx, void *user);

/* Runs on the new worker's thread: its context remembers the thread, so
 * that jobs and worker_fini can check they run there. */
static void *book_worker_init(unsigned id, void *user)
{
    pool_book *b = user;
    pool_wctx *c = calloc(1, sizeof *c);
    if (!c) {
        rec_fail("worker_init(%u): out of memory", id);
        return NULL;
    }
    c->magic = WCTX_MAGIC;
    c->id = id;
    c->thread = pthread_self();
    atomic_init(&c->finalised, false);
    atomic_init(&c->jobs, 0);
    if (pthread_equal(c->thread, b->test_thread))
        rec_fail("worker_init(%u) ran on the test's thread", id);
    if (id >= BOOK_MAX_IDS) {
        rec_fail("worker id %u: ids count up from 0, this one is past %u", id, BOOK_MAX_IDS);
    } else {
        pthread_mutex_lock(&b->mu);
        if (b->ctx[id])
            rec_fail("worker id %u given to two workers (ids are never reused)", id);
        else
            b->ctx[id] = c;
        pthread_mutex_unlock(&b->mu);
    }
    atomic_fetch_add(&b->inits, 1);
    unsigned live = atomic_fetch_add(&b->live, 1) + 1;
    unsigned m = atomic_load(&b->live_max);
    while (live > m && !atomic_compare_exchange_weak(&b->live_max, &m, live)) {
    }
    return c;
}

static void book_worker_fini(unsigned id, void *worker_ctx, void *user)
{
    pool_book *b = user;
    pool_wctx *c = worker_ctx;
    atomic_fetch_add(&b->finis, 1);
    atomic_fetch_sub(&b->live, 1);
    if (!c || c->magic != WCTX_MAGIC) {
        rec_fail("worker_fini(%u) got a context worker_init did not return (%p)", id, worker_ctx);
        return;
    }
    if (c->id != id)
        rec_fail("worker_fini(%u) got worker %u's context", id, c->id);
    if (!pthread_equal(c->thread, pthread_self()))
        rec_fail("worker_fini(%u) ran on another thread than its worker_init", id);
    if (atomic_exchange(&c->finalised, true))
        rec_fail("worker_fini(%u) ran twice", id);
}

static void book_on_state(sl_pool *p, sl_pool_state now, void *user)
{
    pool_book *b = user;
    if (pthread_equal(pthread_self(), b->test_thread))
        rec_fail("on_state(%s) ran on the commanding thread, not a pool thread",
                 state_name((int)now));
    if ((unsigned)now > SL_POOL_SHUTDOWN) {
        rec_fail("on_state with state %d", (int)now);
        return;
    }
    if (b->solo_commander) {
        sl_pool_stats st;
        sl_pool_get_stats(p, &st);
        if (!sl_pool_ready(p) || st.busy)
            rec_fail("on_state(%s): the pool is not ready (ready %d, stats.busy %d)",
                     state_name((int)now), sl_pool_ready(p), st.busy);
        if (st.state != now)
            rec_fail("on_state(%s) while stats.state is %s", state_name((int)now),
                     state_name((int)st.state));
    }
    if (b->on_state_hook)
        b->on_state_hook(b, p, now);
    atomic_store(&b->last_state, (int)now);
    atomic_fetch_add(&b->state_by[now], 1);
    atomic_fetch_add(&b->states, 1); /* last: a waiter for the count sees the rest */
}

static void book_on_discard(const sl_job *job, sl_discard why, void *user)
{
    pool_book *b = user;
    if (!job || !job->fn) {
        rec_fail("on_discard got no job (%p)", (const void *)job);
        return;
    }
    if (why < SL_DISCARD_CANCELLED || why > SL_DISCARD_WORKER_DIED) {
        rec_fail("on_discard with reason %d", (int)why);
        return;
    }
    if (b->on_discard)
        b->on_discard(b, job, why);
    atomic_fetch_add(&b->discard_by[why], 1);
    atomic_fetch_add(&b->discards, 1);
}

pool_book *book_new(void)
{
    pool_book *b = xcalloc(1, sizeof *b);
    b->test_thread = pthread_self();
    b->solo_commander = true;
    atomic_init(&b->last_state, -1);
    pthread_mutex_init(&b->mu, NULL);
    return b;
}

void book_free(pool_book *b)
{
    if (!b)
        return;
    for (unsigned i = 0; i < BOOK_MAX_IDS; i++)
        free(b->ctx[i]);
    pthread_mutex_destroy(&b->mu);
    free(b);
}

sl_pool_opts book_opts(pool_book *b)
{
    return (sl_pool_opts){.worker_init = book_worker_init,
                          .worker_fini = book_worker_fini,
                          .on_state = book_on_state,
                          .on_discard = book_on_discard,
                          .user = b};
}

pool_wctx *book_job_begin(pool_book *b, void *worker_ctx)
{
    pool_wctx *c = worker_ctx;
    atomic_fetch_add_explicit(&b->jobs_run, 1, memory_order_relaxed);
    if (!c || c->magic != WCTX_MAGIC) {
        rec_fail("a job got worker_ctx %p, not one worker_init returned", worker_ctx);
        return NULL;
    }
    if (!pthread_equal(c->thread, pthread_self()))
        rec_fail("a job got worker %u's context on another thread", c->id);
    if (atomic_load_explicit(&c->finalised, memory_order_relaxed))
        rec_fail("a job ran on worker %u after its worker_fini", c->id);
    atomic_fetch_add_explicit(&c->jobs, 1, memory_order_relaxed);
    return c;
}

unsigned book_inits(pool_book *b) { return atomic_load(&b->inits); }
unsigned book_finis(pool_book *b) { return atomic_load(&b->finis); }
unsigned book_states(pool_book *b) { return atomic_load(&b->states); }
unsigned book_discards(pool_book *b, sl_discard why) { return atomic_load(&b->discard_by[why]); }

void book_check_closed(pool_book *b)
{
    unsigned inits = book_inits(b), finis = book_finis(b), open = 0, first = 0;
    for (unsigned i = 0; i < BOOK_MAX_IDS; i++)
        if (b->ctx[i] && !atomic_load(&b->ctx[i]->finalised)) {
            if (open++ == 0)
                first = i;
        }
    CHECK_MSG(inits == finis && open == 0,
              "%u worker_init calls, %u worker_fini calls; %u workers never finalised "
              "(the first: id %u)", inits, finis, open, first);
}

/* ---- waiting ------------------------------------------------------------- */

bool wait_uint_ge(atomic_uint *c, unsigned n, uint64_t timeout_ns)
{
    uint64_t end = sl_test_now_ns() + timeout_ns;
    while (atomic_load(c) < n) {
        if (sl_test_now_ns() > end)
            return false;
        sl_test_sleep_ns(200000);
    }
    return true;
}

bool wait_u64_ge(atomic_uint_fast64_t *c, uint64_t n, uint64_t timeout_ns)
{
    uint64_t end = sl_test_now_ns() + timeout_ns;
    while (atomic_load(c) < n) {
        if (sl_test_now_ns() > end)
            return false;
        sl_test_sleep_ns(200000);
    }
    return true;
}

bool wait_workers(sl_pool *p, unsigned n, uint64_t timeout_ns, sl_pool_stats *out)
{
    uint64_t end = sl_test_now_ns() + timeout_ns;
    for (;;) {
        sl_pool_get_stats(p, out);
        if (out->workers == n)
            return true;
        if (sl_test_now_ns() > end)
            return false;
        sl_test_sleep_ns(500000);
    }
}

bool wait_parked(sl_pool *p, unsigned n, uint64_t timeout_ns, sl_pool_stats *out)
{
    uint64_t end = sl_test_now_ns() + timeout_ns;
    for (;;) {
        sl_pool_get_stats(p, out);
        if (out->workers == n && out->parked == n)
            return true;
        if (sl_test_now_ns() > end)
            return false;
        sl_test_sleep_ns(500000);
    }
}

bool wait_states(pool_book *b, unsigned n, uint64_t timeout_ns)
{
    return wait_uint_ge(&b->states, n, timeout_ns);
}

/* ---- commands ------------------------------------------------------------ */

const char *cmd_name(pool_cmd c)
{
    static const char *const names[] = {"start", "stop", "set_workers", "reset", "shutdown"};
    return (unsigned)c < 5 ? names[c] : "?";
}

sl_status cmd_issue(sl_pool *p, pool_cmd c, unsigned arg)
{
    switch (c) {
    case CMD_START: return sl_pool_start(p);
    case CMD_STOP: return sl_pool_stop(p);
    case CMD_SET_WORKERS: return sl_pool_set_workers(p, arg);
    case CMD_RESET: return sl_pool_reset(p);
    case CMD_SHUTDOWN: return sl_pool_shutdown(p, (sl_shutdown)arg);
    }
    return SL_EINVAL;
}

sl_status cmd_retry(sl_pool *p, pool_cmd c, unsigned arg)
{
    uint64_t end = sl_test_now_ns() + POOL_SOON_NS;
    for (;;) {
        sl_status st = cmd_issue(p, c, arg);
        if (st != SL_BUSY || sl_test_now_ns() > end)
            return st;
        sl_status w = sl_pool_wait_ready(p, 100 * MS);
        if (w != SL_OK && w != SL_TIMEDOUT)
            return w;
    }
}

const char *state_name(int s)
{
    switch (s) {
    case SL_POOL_STOPPED: return "STOPPED";
    case SL_POOL_RUNNING: return "RUNNING";
    case SL_POOL_SHUTDOWN: return "SHUTDOWN";
    default: return "?";
    }
}

const char *discard_name(int why)
{
    switch (why) {
    case SL_DISCARD_CANCELLED: return "CANCELLED";
    case SL_DISCARD_RESET: return "RESET";
    case SL_DISCARD_WORKER_DIED: return "WORKER_DIED";
    default: return "?";
    }
}

uint64_t process_cpu_ns(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * SEC +
           (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000u;
}
