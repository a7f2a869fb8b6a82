/*
 * tests/stress_pool.c — the worker pool under load, many threads on few
 * cores, written from the contract (sluice/pool.h, SPEC §4).
 *
 *   accounting     8 submitters (SL_POOL_SUBMITTERS), SL_STRESS_SCALE x 1e6
 *                  jobs in all, keyless, keyed (each submitter's own keys, in
 *                  order, some SL_JOB_UNIQUE) and on shared hot keys, at random
 *                  priorities; a controller issues random set_workers, stop,
 *                  start and reset, then shutdown(SL_CANCEL) once half the jobs
 *                  were accepted. To the job: each accepted job ran exactly once
 *                  or was discarded exactly once, for the right reason; nothing
 *                  refused ran or was discarded; no job started while the pool
 *                  was stopped; no two jobs of a key overlapped and each
 *                  submitter's keys ran in submission order; every command that
 *                  began gave one on_state. Every dispatch mode; a bounded queue
 *                  with every submit form, preempted submitters and a futex
 *                  table that injects spurious wake-ups, EINTR and early
 *                  time-outs.
 *   held_key       one key's job blocks on a gate for the whole run, its next
 *                  jobs first in line: every job of every other key completes.
 *   priority       one worker held by a gate while 8 threads submit at random
 *                  priorities: strict order by level, FIFO per submitter within
 *                  a level.
 *   deaths         jobs that call pthread_exit or cancel their thread, under
 *                  load: each reaches on_discard once (WORKER_DIED), its key is
 *                  released, the pool keeps its size, worker_fini ran for every
 *                  worker, stats.died/respawned count them.
 *   trim_race      bursts separated by gaps around a short idle timeout, so
 *                  that workers retire just as jobs arrive: no job is stranded,
 *                  workers never exceed max_workers.
 *   nested         job trees: jobs submitting jobs while set_workers changes.
 *   reset_under_submission  a reset of a stopped pool completes while
 *                  submitters keep submitting (bounded and unbounded queue).
 *
 * A watchdog fails a run that makes no progress for 30 s (a lost wake-up or
 * a stranded job). Failures seen by pool threads go through rec_fail;
 * SL_STRESS_SEED replays a run's random choices.
 */
#include "pool_support.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sluice/pool.h>
#include "sysops.h"

#define SUITE "stress_pool"
#define TC_TIMEOUT 300

static unsigned n_submitters(void) { return sl_test_env_uint("SL_POOL_SUBMITTERS", 8); }
static unsigned n_workers(void) { return sl_test_env_uint("SL_POOL_WORKERS", 8); }

static _Thread_local sl_test_rng t_rng;
static _Thread_local bool t_rng_ready;
static atomic_uint_fast64_t g_rng_salt;

/* A per-thread rng for pool threads (jobs, callbacks), derived from the seed. */
static sl_test_rng *thread_rng(void)
{
    if (!t_rng_ready) {
        sl_test_rng_seed(&t_rng, g_seed ^ atomic_fetch_add(&g_rng_salt, GOLDEN));
        t_rng_ready = true;
    }
    return &t_rng;
}

/* The fault-injecting futex table is the harness's (sl_test_sys_spurious,
 * tests/harness.h), installed over its base. */
static void restore_ops(void) { sl_test_sys_restore(); }

static sl_pool *new_pool(const sl_pool_opts *o)
{
    sl_pool *p = NULL;
    sl_status st = sl_pool_new(&p, o);
    CHECK_MSG(st == SL_OK && p, "sl_pool_new = %s", sl_status_str(st));
    return p;
}

static const char *const k_dispatch_name[] = {"shared", "round-robin", "least-loaded"};

/* ---- accounting ---------------------------------------------------------- */

#define KEYS_PER_SUBMITTER 8u
#define HOT_KEYS 3u

typedef struct acct_cfg {
    const char *name;
    sl_dispatch dispatch;
    size_t cap;
    bool mixed_forms; /* try_submit and timed submit_job beside submit */
    bool preempt;
    bool faults;
} acct_cfg;

static const acct_cfg k_acct[] = {
    {"shared", SL_DISPATCH_SHARED, 0, false, false, false},
    {"round-robin", SL_DISPATCH_ROUND_ROBIN, 0, false, false, false},
    {"least-loaded", SL_DISPATCH_LEAST_LOADED, 0, false, false, false},
    {"shared, cap 256, every form, preempted", SL_DISPATCH_SHARED, 256, true, true, false},
    {"least-loaded, cap 64, every form, futex faults", SL_DISPATCH_LEAST_LOADED, 64, true, false,
     true},
};

typedef struct key_state {
    _Alignas(64) atomic_int inflight;
    uint64_t last; /* newest seq run (plain: jobs of a key are ordered by the pool) */
} key_state;

typedef struct acct_run {
    const acct_cfg *cfg;
    sl_pool *pool;
    pool_book *book;
    unsigned ns, max_workers, levels;
    uint64_t n, per;             /* jobs in all, per submitter */
    uint32_t *job_key;           /* [n] key index + 1, 0: keyless */
    uint32_t *job_seq;           /* [n] the seq within an owned key */
    bitmap acc, ran, disc, closed;
    key_state *keys;             /* [ns * KEYS_PER_SUBMITTER + HOT_KEYS] */
    pad_counter *progress;       /* [ns] submits done */
    pad_counter *accepted;       /* [ns] */
    atomic_uint_fast64_t ran_n, disc_n, exists_n, timedout_n, full_n;
    atomic_int paused;           /* stop completed, start not yet issued */
    atomic_int resetting;        /* a reset is in progress */
    atomic_int shutdown_called;  /* set before the shutdown call */
    atomic_int shutdown_done;    /* set after it returned SL_OK */
    atomic_uint commands_ok;
    uint64_t shutdown_at;        /* submits made before the shutdown */
    uint64_t window;             /* accepted, not yet run or discarded */
} acct_run;

static acct_run *g_acct;

/* The pool's key for key index k: spread out, never 0. */
static uint64_t key_value(uint32_t k) { return (uint64_t)k * 7919u + 13u; }

static void acct_job(void *arg, void *ctx)
{
    acct_run *r = g_acct;
    uint64_t id = (uint64_t)(uintptr_t)arg;
    book_job_begin(r->book, ctx);
    if (atomic_load_explicit(&r->paused, memory_order_relaxed))
        rec_fail("job %llu started in a stopped pool", ULL(id));
    if (id >= r->n) {
        rec_fail("a job with id %llu", ULL(id));
        return;
    }
    if (bm_set(&r->ran, id))
        rec_fail("job %llu ran twice", ULL(id));
    if (bm_get(&r->disc, id))
        rec_fail("job %llu ran after it was discarded", ULL(id));
    uint32_t k = r->job_key[id];
    key_state *ks = k ? &r->keys[k - 1] : NULL;
    if (ks && atomic_fetch_add(&ks->inflight, 1) != 0)
        rec_fail("job %llu: another job of key %u was running", ULL(id), k - 1);
    if (ks && k - 1 < r->ns * KEYS_PER_SUBMITTER) {
        uint64_t s = r->job_seq[id];
        if (ks->last != NONE && s <= ks->last)
            rec_fail("key %u: job seq %llu ran after seq %llu (submission order)", k - 1, ULL(s),
                     ULL(ks->last));
        ks->last = s;
    }
    sl_test_maybe_stall(thread_rng(), 512);
    if (ks)
        atomic_fetch_sub(&ks->inflight, 1);
    atomic_fetch_add_explicit(&r->ran_n, 1, memory_order_relaxed);
}

static void acct_discard(pool_book *b, const sl_job *job, sl_discard why)
{
    (void)b;
    acct_run *r = g_acct;
    uint64_t id = (uint64_t)(uintptr_t)job->arg;
    if (job->fn != acct_job || id >= r->n) {
        rec_fail("on_discard got a job nobody submitted (id %llu)", ULL(id));
        return;
    }
    if (bm_set(&r->disc, id))
        rec_fail("job %llu discarded twice", ULL(id));
    if (bm_get(&r->ran, id))
        rec_fail("job %llu discarded after it ran", ULL(id));
    uint32_t k = r->job_key[id];
    uint64_t want_key = k ? key_value(k - 1) : 0;
    if (job->key != want_key)
        rec_fail("job %llu discarded with key %llu, submitted with %llu", ULL(id),
                 ULL(job->key), ULL(want_key));
    bool ok = (why == SL_DISCARD_CANCELLED && atomic_load(&r->shutdown_called)) ||
              (why == SL_DISCARD_RESET && atomic_load(&r->resetting));
    if (!ok)
        rec_fail("job %llu discarded as %s (shutdown called %d, reset in progress %d)", ULL(id),
                 discard_name((int)why), atomic_load(&r->shutdown_called),
                 atomic_load(&r->resetting));
    atomic_fetch_add_explicit(&r->disc_n, 1, memory_order_relaxed);
}

/* Submits as a user would: retries SL_FULL and SL_TIMEDOUT. */
static sl_status acct_submit(acct_run *r, const sl_job *j, sl_test_rng *rng)
{
    static const uint64_t timeouts[] = {0, 50000, MS, SL_FOREVER};
    if (!r->cfg->mixed_forms)
        return sl_pool_submit_job(r->pool, j, SL_FOREVER);
    for (unsigned tries = 0;; tries++) {
        sl_status st;
        switch (sl_test_rng_next(rng) % 3) {
        case 0:
            st = j->key || j->priority ? sl_pool_submit_job(r->pool, j, SL_FOREVER)
                                       : sl_pool_submit(r->pool, j->fn, j->arg);
            break;
        case 1:
            st = j->key || j->priority ? sl_pool_submit_job(r->pool, j, 0)
                                       : sl_pool_try_submit(r->pool, j->fn, j->arg);
            break;
        default:
            st = sl_pool_submit_job(r->pool, j, timeouts[sl_test_rng_next(rng) % 4]);
        }
        if (st == SL_FULL)
            atomic_fetch_add_explicit(&r->full_n, 1, memory_order_relaxed);
        else if (st == SL_TIMEDOUT)
            atomic_fetch_add_explicit(&r->timedout_n, 1, memory_order_relaxed);
        else
            return st;
        if (tries % 16 == 15)
            sl_test_sleep_ns(20000);
        else
            sched_yield();
    }
}

static uint64_t acct_accepted(acct_run *r) { return sum_counters(r->accepted, r->ns); }

static void *acct_submitter(void *arg)
{
    worker *w = arg;
    acct_run *r = w->run;
    unsigned s = w->idx;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, g_seed ^ (s + 1) * GOLDEN);
    uint32_t next_seq[KEYS_PER_SUBMITTER] = {0};
    uint64_t accepted = 0;
    for (uint64_t q = 0; q < r->per; q++) {
        uint64_t id = s * r->per + q;
        /* A window of jobs in flight, as a producer that cares about memory
         * keeps: jobs run during the whole test, and stops and resets find
         * full queues rather than everything at once. */
        while (q % 32 == 0 && !atomic_load(&r->shutdown_done) && !failed() &&
               acct_accepted(r) > atomic_load(&r->ran_n) + atomic_load(&r->disc_n) + r->window)
            sl_test_sleep_ns(20000);
        uint64_t x = sl_test_rng_next(&rng);
        uint32_t k = 0;
        unsigned flags = 0;
        if (x % 10 < 3) {
            unsigned own = (unsigned)(x >> 8) % KEYS_PER_SUBMITTER;
            k = s * KEYS_PER_SUBMITTER + own + 1;
            r->job_seq[id] = next_seq[own]++;
            if ((x >> 16) % 16 == 0)
                flags = SL_JOB_UNIQUE;
        } else if (x % 10 == 3) {
            k = r->ns * KEYS_PER_SUBMITTER + (unsigned)(x >> 8) % HOT_KEYS + 1;
        }
        r->job_key[id] = k;
        sl_job j = {.fn = acct_job,
                    .arg = (void *)(uintptr_t)id,
                    .priority = (unsigned)(x >> 24) % r->levels,
                    .key = k ? key_value(k - 1) : 0,
                    .flags = flags};
        bool after_shutdown = atomic_load(&r->shutdown_done);
        sl_status st = acct_submit(r, &j, &rng);
        if (st == SL_OK) {
            if (after_shutdown)
                rec_fail("submit after shutdown returned SL_OK (job %llu)", ULL(id));
            bm_set(&r->acc, id);
            accepted++;
            atomic_store_explicit(&r->accepted[s].v, accepted, memory_order_relaxed);
        } else if (st == SL_CLOSED) {
            if (!atomic_load(&r->shutdown_called))
                rec_fail("submit returned SL_CLOSED before shutdown was called");
            bm_set(&r->closed, id);
        } else if (st == SL_EXISTS && flags) {
            atomic_fetch_add_explicit(&r->exists_n, 1, memory_order_relaxed);
        } else {
            rec_fail("submit of job %llu (key %u, flags %u) = %s", ULL(id), k, flags,
                     sl_status_str(st));
        }
        atomic_store_explicit(&r->progress[s].v, q + 1, memory_order_relaxed);
        sl_test_maybe_stall(&rng, 256);
        if (failed())
            break;
    }
    return NULL;
}

/* As a user would: SL_BUSY waits for the command in progress; so does
 * SL_EINVAL while one is in progress (the header lets a command the current
 * state forbids say so before SL_BUSY: stop right after start is refused
 * until start has completed). */
static bool acct_command(acct_run *r, pool_cmd c, unsigned arg)
{
    bool was_busy = !sl_pool_ready(r->pool);
    sl_status st = cmd_retry(r->pool, c, arg);
    if (st == SL_EINVAL && was_busy) {
        if (sl_pool_wait_ready(r->pool, POOL_SOON_NS) == SL_OK)
            st = cmd_retry(r->pool, c, arg);
    }
    if (st != SL_OK) {
        rec_fail("%s(%u) = %s", cmd_name(c), arg, sl_status_str(st));
        return false;
    }
    atomic_fetch_add(&r->commands_ok, 1);
    return true;
}

static void acct_wait_ready(acct_run *r, const char *what)
{
    sl_status st = sl_pool_wait_ready(r->pool, POOL_SOON_NS);
    if (st != SL_OK)
        rec_fail("%s did not complete: wait_ready = %s", what, sl_status_str(st));
}

/* Random commands until half the jobs were submitted, then shutdown(CANCEL). */
static void *acct_controller(void *arg)
{
    worker *w = arg;
    acct_run *r = w->run;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, g_seed ^ 0xC0C0ull);
    bool stopped = false;
    while (!failed()) {
        if (sum_counters(r->progress, r->ns) >= r->shutdown_at)
            break;
        sl_test_sleep_ns(sl_test_rng_next(&rng) % (2 * MS));
        unsigned x = (unsigned)(sl_test_rng_next(&rng) % 10);
        if (x < 4) {
            acct_command(r, CMD_SET_WORKERS, 1 + (unsigned)(sl_test_rng_next(&rng) % r->max_workers));
        } else if (!stopped && x < 6) {
            if (acct_command(r, CMD_STOP, 0)) {
                acct_wait_ready(r, "stop");
                atomic_store(&r->paused, 1);
                stopped = true;
            }
        } else if (stopped && x < 5) {
            atomic_store(&r->resetting, 1);
            if (acct_command(r, CMD_RESET, 0))
                acct_wait_ready(r, "reset");
            atomic_store(&r->resetting, 0);
        } else if (stopped) {
            atomic_store(&r->paused, 0);
            acct_command(r, CMD_START, 0);
            stopped = false;
        }
    }
    atomic_store(&r->shutdown_called, 1);
    if (acct_command(r, CMD_SHUTDOWN, SL_CANCEL))
        atomic_store(&r->shutdown_done, 1);
    acct_wait_ready(r, "shutdown");
    return NULL;
}

static uint64_t acct_progress(void *arg)
{
    acct_run *r = arg;
    return sum_counters(r->progress, r->ns) + atomic_load(&r->ran_n) + atomic_load(&r->disc_n);
}

static void acct_diag(void *arg)
{
    acct_run *r = arg;
    sl_pool_stats s;
    sl_pool_get_stats(r->pool, &s);
    fprintf(stderr,
            "  pool: state %s busy %d workers %u target %u running %u idle %u parked %u "
            "queued %llu submitted %llu completed %llu discarded %llu\n"
            "  test: accepted %llu ran %llu discarded %llu paused %d shutdown %d/%d\n",
            state_name((int)s.state), s.busy, s.workers, s.target, s.running, s.idle, s.parked,
            ULL(s.queued), ULL(s.submitted), ULL(s.completed), ULL(s.discarded),
            ULL(acct_accepted(r)), ULL(atomic_load(&r->ran_n)), ULL(atomic_load(&r->disc_n)),
            atomic_load(&r->paused), atomic_load(&r->shutdown_called),
            atomic_load(&r->shutdown_done));
    print_progress(r->progress, r->ns, 0, "submitter", "");
}

/* Every job: accepted -> ran xor discarded; refused -> neither. */
static void acct_verify(acct_run *r, uint64_t *n_acc)
{
    uint64_t acc = 0, ran = 0, disc = 0;
    for (uint64_t id = 0; id < r->ns * r->per; id++) {
        bool a = bm_get(&r->acc, id), x = bm_get(&r->ran, id), d = bm_get(&r->disc, id);
        acc += a;
        ran += x;
        disc += d;
        CHECK_MSG(!a || x != d, "accepted job %llu: ran %d, discarded %d", ULL(id), x, d);
        CHECK_MSG(a || (!x && !d), "refused job %llu (closed %d): ran %d, discarded %d",
                  ULL(id), bm_get(&r->closed, id), x, d);
    }
    CHECK_MSG(ran + disc == acc, "ran %llu + discarded %llu != accepted %llu", ULL(ran),
              ULL(disc), ULL(acc));
    sl_pool_stats s;
    sl_pool_get_stats(r->pool, &s);
    CHECK_MSG(s.submitted == acc && s.completed == ran && s.discarded == disc && s.queued == 0 &&
                  s.running == 0,
              "stats: submitted %llu completed %llu discarded %llu queued %llu running %u; "
              "books: accepted %llu ran %llu discarded %llu",
              ULL(s.submitted), ULL(s.completed), ULL(s.discarded), ULL(s.queued), s.running,
              ULL(acc), ULL(ran), ULL(disc));
    CHECK_MSG(s.state == SL_POOL_SHUTDOWN, "state %s after shutdown", state_name((int)s.state));
    sl_test_account("jobs ran or discarded exactly once", acc);
    *n_acc = acc;
}

START_TEST(acct_load)
{
    const acct_cfg *cfg = &k_acct[_i];
    begin_test(SUITE, "accounting[%s]", cfg->name);
    acct_run *r = xaligned(sizeof *r);
    g_acct = r;
    r->cfg = cfg;
    r->ns = n_submitters();
    r->max_workers = n_workers();
    r->levels = 4;
    r->per = sl_test_scaled(1000000, 20000) / r->ns;
    r->n = r->ns * r->per;
    r->shutdown_at = r->n / 2;
    r->window = sl_test_scaled(16384, 1024);
    r->job_key = xcalloc(r->n, sizeof *r->job_key);
    r->job_seq = xcalloc(r->n, sizeof *r->job_seq);
    bm_init(&r->acc, r->n);
    bm_init(&r->ran, r->n);
    bm_init(&r->disc, r->n);
    bm_init(&r->closed, r->n);
    unsigned nkeys = r->ns * KEYS_PER_SUBMITTER + HOT_KEYS;
    r->keys = xaligned(nkeys * sizeof *r->keys);
    for (unsigned k = 0; k < nkeys; k++)
        r->keys[k].last = NONE;
    r->progress = xaligned(r->ns * sizeof *r->progress);
    r->accepted = xaligned(r->ns * sizeof *r->accepted);
    r->book = book_new();
    r->book->solo_commander = false;
    r->book->on_discard = acct_discard;
    if (cfg->faults)
        sl_test_sys_install(sl_test_sys_spurious());
    sl_pool_opts o = book_opts(r->book);
    o.max_workers = r->max_workers;
    o.active_workers = 1 + r->max_workers / 2;
    o.priority_levels = r->levels;
    o.queue_capacity = cfg->cap;
    o.dispatch = cfg->dispatch;
    o.name = "acct";
    r->pool = new_pool(&o);
    const team_role roles[] = {{r->ns, acct_submitter, true}, {1, acct_controller, false}};
    team t;
    team_start(&t, r, roles, N_OF(roles), cfg->preempt ? &k_preempt_brief : NULL, acct_progress,
               acct_diag);
    double secs = team_end(&t);
    ASSERT_CLEAN();
    CHECK_MSG(sl_pool_wait_idle(r->pool, POOL_SOON_NS) == SL_OK, "wait_idle after shutdown");
    uint64_t acc;
    acct_verify(r, &acc);
    unsigned cmds = atomic_load(&r->commands_ok);
    CHECK_MSG(wait_states(r->book, cmds, POOL_SOON_NS), "%u on_state calls for %u commands",
              book_states(r->book), cmds);
    sl_test_sleep_ns(20 * MS);
    CHECK_MSG(book_states(r->book) == cmds, "%u on_state calls for %u commands",
              book_states(r->book), cmds);
    sl_pool_stats s;
    sl_pool_get_stats(r->pool, &s);
    fprintf(stderr,
            "[%s] %.2f s: %llu jobs, %llu accepted, %llu ran, %llu discarded, %llu SL_EXISTS, "
            "%llu SL_FULL, %llu SL_TIMEDOUT; %u commands; %llu workers spawned, %llu retired\n",
            g_test, secs, ULL(r->n), ULL(acc), ULL(atomic_load(&r->ran_n)),
            ULL(atomic_load(&r->disc_n)), ULL(atomic_load(&r->exists_n)),
            ULL(atomic_load(&r->full_n)), ULL(atomic_load(&r->timedout_n)), cmds,
            ULL(s.spawned), ULL(s.retired));
    sl_pool_free(r->pool);
    restore_ops();
    book_check_closed(r->book);
    ASSERT_CLEAN();
    book_free(r->book);
    bm_free(&r->acc);
    bm_free(&r->ran);
    bm_free(&r->disc);
    bm_free(&r->closed);
    free(r->job_key);
    free(r->job_seq);
    free(r->keys);
    free(r->progress);
    free(r->accepted);
    free(r);
    g_acct = NULL;
}
END_TEST

/* ---- held key: a busy key holds back nobody ------------------------------ */

#define HELD_KEY 1u

typedef struct held_run {
    sl_pool *pool;
    pool_book *book;
    pool_gate gate;
    unsigned ns;
    uint64_t per;
    atomic_uint_fast64_t others_done, held_next_done;
    atomic_int held_inflight;
    pad_counter *progress;
    key_state *keys; /* [ns * KEYS_PER_SUBMITTER] */
    uint32_t *job_key, *job_seq;
} held_run;

static held_run *g_held;

static void held_first(void *arg, void *ctx)
{
    (void)arg;
    book_job_begin(g_held->book, ctx);
    if (atomic_fetch_add(&g_held->held_inflight, 1) != 0)
        rec_fail("the held key's first job overlapped another of its key");
    gate_job(&g_held->gate, ctx);
    atomic_fetch_sub(&g_held->held_inflight, 1);
}

static void held_next(void *arg, void *ctx)
{
    (void)arg;
    book_job_begin(g_held->book, ctx);
    if (atomic_fetch_add(&g_held->held_inflight, 1) != 0)
        rec_fail("a job of the held key overlapped another of its key");
    if (gate_left(&g_held->gate) == 0)
        rec_fail("a job of the held key ran while its first job held it");
    atomic_fetch_sub(&g_held->held_inflight, 1);
    atomic_fetch_add(&g_held->held_next_done, 1);
}

static void held_other(void *arg, void *ctx)
{
    held_run *r = g_held;
    uint64_t id = (uint64_t)(uintptr_t)arg;
    book_job_begin(r->book, ctx);
    uint32_t k = r->job_key[id];
    if (k) {
        key_state *ks = &r->keys[k - 1];
        if (atomic_fetch_add(&ks->inflight, 1) != 0)
            rec_fail("key %u: two jobs at once", k);
        if (ks->last != NONE && r->job_seq[id] <= ks->last)
            rec_fail("key %u: seq %u ran after seq %llu", k, r->job_seq[id], ULL(ks->last));
        ks->last = r->job_seq[id];
        sl_test_maybe_stall(thread_rng(), 256);
        atomic_fetch_sub(&ks->inflight, 1);
    }
    atomic_fetch_add(&r->others_done, 1);
}

static void *held_submitter(void *arg)
{
    worker *w = arg;
    held_run *r = w->run;
    unsigned s = w->idx;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, g_seed ^ (s + 1) * GOLDEN);
    uint32_t next_seq[KEYS_PER_SUBMITTER] = {0};
    for (uint64_t q = 0; q < r->per && !failed(); q++) {
        uint64_t id = s * r->per + q, x = sl_test_rng_next(&rng);
        uint32_t k = 0;
        if (x % 2) {
            unsigned own = (unsigned)(x >> 8) % KEYS_PER_SUBMITTER;
            k = s * KEYS_PER_SUBMITTER + own + 1;
            r->job_seq[id] = next_seq[own]++;
        }
        r->job_key[id] = k;
        sl_job j = {.fn = held_other, .arg = (void *)(uintptr_t)id,
                    .priority = (unsigned)(x >> 20) % 3, .key = k ? 1000 + k : 0};
        /* Now and then another job for the held key, first in line. */
        if (x % 64 == 0) {
            sl_job h = {.fn = held_next, .priority = 3, .key = HELD_KEY};
            sl_status st = sl_pool_submit_job(r->pool, &h, SL_FOREVER);
            if (st != SL_OK)
                rec_fail("submit to the held key = %s", sl_status_str(st));
        }
        sl_status st = sl_pool_submit_job(r->pool, &j, SL_FOREVER);
        if (st != SL_OK)
            rec_fail("submit = %s", sl_status_str(st));
        atomic_store_explicit(&r->progress[s].v, q + 1, memory_order_relaxed);
        sl_test_maybe_stall(&rng, 256);
    }
    return NULL;
}

static uint64_t held_progress(void *arg)
{
    held_run *r = arg;
    return sum_counters(r->progress, r->ns) + atomic_load(&r->others_done);
}

static void held_diag(void *arg)
{
    held_run *r = arg;
    sl_pool_stats s;
    sl_pool_get_stats(r->pool, &s);
    fprintf(stderr, "  pool: workers %u running %u idle %u parked %u queued %llu completed %llu;"
            " others done %llu of %llu\n", s.workers, s.running, s.idle, s.parked, ULL(s.queued),
            ULL(s.completed), ULL(atomic_load(&r->others_done)), ULL(r->ns * r->per));
}

START_TEST(held_key)
{
    begin_test(SUITE, "held_key[%s]", k_dispatch_name[_i]);
    held_run *r = xaligned(sizeof *r);
    g_held = r;
    r->ns = n_submitters();
    r->per = sl_test_scaled(200000, 5000) / r->ns;
    r->progress = xaligned(r->ns * sizeof *r->progress);
    r->keys = xaligned(r->ns * KEYS_PER_SUBMITTER * sizeof *r->keys);
    for (unsigned k = 0; k < r->ns * KEYS_PER_SUBMITTER; k++)
        r->keys[k].last = NONE;
    r->job_key = xcalloc(r->ns * r->per, sizeof *r->job_key);
    r->job_seq = xcalloc(r->ns * r->per, sizeof *r->job_seq);
    gate_init(&r->gate);
    r->book = book_new();
    sl_pool_opts o = book_opts(r->book);
    o.max_workers = sl_test_env_uint("SL_POOL_WORKERS", 4);
    o.priority_levels = 4;
    o.dispatch = (sl_dispatch)_i;
    r->pool = new_pool(&o);
    sl_job first = {.fn = held_first, .key = HELD_KEY};
    CHECK_MSG(sl_pool_submit_job(r->pool, &first, 0) == SL_OK, "submit the held key's job");
    CHECK_MSG(gate_wait_entered(&r->gate, 1, POOL_SOON_NS), "the held key's job did not start");
    const team_role roles[] = {{r->ns, held_submitter, true}};
    team t;
    team_start(&t, r, roles, N_OF(roles), NULL, held_progress, held_diag);
    double secs = team_end(&t);
    ASSERT_CLEAN();
    uint64_t want = r->ns * r->per;
    bool all = wait_u64_ge(&r->others_done, want, 4 * POOL_SOON_NS);
    CHECK_MSG(all, "%llu of %llu jobs of other keys ran while one key was held",
              ULL(atomic_load(&r->others_done)), ULL(want));
    CHECK_MSG(atomic_load(&r->held_next_done) == 0, "the held key's next jobs ran");
    gate_open(&r->gate);
    CHECK_MSG(sl_pool_wait_idle(r->pool, POOL_SOON_NS) == SL_OK, "wait_idle");
    sl_pool_stats s;
    sl_pool_get_stats(r->pool, &s);
    CHECK_MSG(s.completed == s.submitted && s.discarded == 0, "completed %llu of %llu",
              ULL(s.completed), ULL(s.submitted));
    fprintf(stderr, "[%s] %.2f s: %llu jobs beside a held key, %llu waited for it\n", g_test,
            secs, ULL(want), ULL(atomic_load(&r->held_next_done)));
    sl_pool_free(r->pool);
    book_check_closed(r->book);
    ASSERT_CLEAN();
    book_free(r->book);
    gate_destroy(&r->gate);
    free(r->progress);
    free(r->keys);
    free(r->job_key);
    free(r->job_seq);
    free(r);
}
END_TEST

/* ---- priority order with one worker, concurrent submitters --------------- */

typedef struct prio_run {
    sl_pool *pool;
    pool_book *book;
    unsigned ns;
    uint64_t per;
    sl_test_barrier start;
    uint32_t *order;     /* job ids in the order they ran */
    atomic_uint_fast64_t ran;
    uint8_t *prio;       /* [ns * per] */
    pad_counter *progress;
} prio_run;

static prio_run *g_prio;

static void prio_job(void *arg, void *ctx)
{
    prio_run *r = g_prio;
    book_job_begin(r->book, ctx);
    uint64_t at = atomic_fetch_add(&r->ran, 1);
    if (at < r->ns * r->per)
        r->order[at] = (uint32_t)(uintptr_t)arg;
}

static void *prio_submitter(void *arg)
{
    worker *w = arg;
    prio_run *r = w->run;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, g_seed ^ (w->idx + 1) * GOLDEN);
    sl_test_barrier_wait(&r->start);
    for (uint64_t q = 0; q < r->per; q++) {
        uint64_t id = w->idx * r->per + q;
        r->prio[id] = (uint8_t)(sl_test_rng_next(&rng) % 8);
        sl_job j = {.fn = prio_job, .arg = (void *)(uintptr_t)id, .priority = r->prio[id]};
        sl_status st = sl_pool_submit_job(r->pool, &j, SL_FOREVER);
        if (st != SL_OK)
            rec_fail("submit = %s", sl_status_str(st));
        atomic_store_explicit(&r->progress[w->idx].v, q + 1, memory_order_relaxed);
        sl_test_maybe_stall(&rng, 128);
    }
    return NULL;
}

static uint64_t prio_progress(void *arg)
{
    prio_run *r = arg;
    return sum_counters(r->progress, r->ns);
}

START_TEST(priority_concurrent)
{
    begin_test(SUITE, "priority[%s]", k_dispatch_name[_i]);
    prio_run *r = xaligned(sizeof *r);
    g_prio = r;
    r->ns = n_submitters();
    r->per = sl_test_scaled(100000, 2000) / r->ns;
    uint64_t n = r->ns * r->per;
    r->order = xcalloc(n, sizeof *r->order);
    r->prio = xcalloc(n, 1);
    r->progress = xaligned(r->ns * sizeof *r->progress);
    sl_test_barrier_init(&r->start, r->ns);
    r->book = book_new();
    sl_pool_opts o = book_opts(r->book);
    o.max_workers = 1;
    o.priority_levels = 8;
    o.dispatch = (sl_dispatch)_i;
    r->pool = new_pool(&o);
    pool_gate g;
    gate_init(&g);
    CHECK_MSG(sl_pool_submit(r->pool, gate_job, &g) == SL_OK, "submit gate");
    CHECK_MSG(gate_wait_entered(&g, 1, POOL_SOON_NS), "the gate job did not start");
    const team_role roles[] = {{r->ns, prio_submitter, true}};
    team t;
    team_start(&t, r, roles, N_OF(roles), NULL, prio_progress, NULL);
    team_end(&t);
    ASSERT_CLEAN();
    gate_open(&g);
    CHECK_MSG(sl_pool_wait_idle(r->pool, 4 * POOL_SOON_NS) == SL_OK, "wait_idle");
    CHECK_MSG(atomic_load(&r->ran) == n, "%llu of %llu ran", ULL(atomic_load(&r->ran)), ULL(n));
    uint64_t *last = xnones(r->ns * 8); /* [submitter][level] newest id run */
    for (uint64_t k = 0; k < n; k++) {
        uint32_t id = r->order[k];
        unsigned s = (unsigned)(id / r->per), pr = r->prio[id];
        if (k > 0)
            CHECK_MSG(r->prio[r->order[k - 1]] >= pr, "position %llu: priority %u after %u",
                      ULL(k), pr, r->prio[r->order[k - 1]]);
        uint64_t *l = &last[s * 8 + pr];
        CHECK_MSG(*l == NONE || id > *l, "submitter %u level %u: job %u ran after job %llu", s,
                  pr, id, ULL(*l));
        *l = id;
    }
    free(last);
    sl_pool_free(r->pool);
    book_check_closed(r->book);
    ASSERT_CLEAN();
    book_free(r->book);
    gate_destroy(&g);
    sl_test_barrier_destroy(&r->start);
    free(r->order);
    free(r->prio);
    free(r->progress);
    free(r);
}
END_TEST

/* ---- deaths under load --------------------------------------------------- */

typedef struct death_run {
    sl_pool *pool;
    pool_book *book;
    unsigned ns, workers;
    uint64_t per;
    uint8_t *kind;       /* [n] 0 normal, 1 pthread_exit, 2 cancel */
    uint32_t *job_key, *job_seq;
    key_state *keys;
    bitmap ran, disc;
    atomic_uint_fast64_t ran_n, disc_n, survived;
    pad_counter *progress;
} death_run;

static death_run *g_death;

static void death_job(void *arg, void *ctx)
{
    death_run *r = g_death;
    uint64_t id = (uint64_t)(uintptr_t)arg;
    book_job_begin(r->book, ctx);
    if (bm_set(&r->ran, id))
        rec_fail("job %llu started twice", ULL(id));
    uint32_t k = r->job_key[id];
    key_state *ks = k ? &r->keys[k - 1] : NULL;
    if (ks) {
        if (atomic_fetch_add(&ks->inflight, 1) != 0)
            rec_fail("key %u: two jobs at once", k);
        if (ks->last != NONE && r->job_seq[id] <= ks->last)
            rec_fail("key %u: seq %u ran after seq %llu", k, r->job_seq[id], ULL(ks->last));
        ks->last = r->job_seq[id];
    }
    if (r->kind[id]) {
        /* The key is released by the pool, not by this job. */
        if (ks)
            atomic_fetch_sub(&ks->inflight, 1);
        if (r->kind[id] == 1)
            pthread_exit(NULL);
        pthread_cancel(pthread_self());
        pthread_testcancel();
        atomic_fetch_add(&r->survived, 1);
        return;
    }
    sl_test_maybe_stall(thread_rng(), 512);
    if (ks)
        atomic_fetch_sub(&ks->inflight, 1);
    atomic_fetch_add(&r->ran_n, 1);
}

static void death_discard(pool_book *b, const sl_job *job, sl_discard why)
{
    (void)b;
    death_run *r = g_death;
    uint64_t id = (uint64_t)(uintptr_t)job->arg;
    if (job->fn != death_job || id >= r->ns * r->per) {
        rec_fail("on_discard of a job nobody submitted");
        return;
    }
    if (why != SL_DISCARD_WORKER_DIED || !r->kind[id])
        rec_fail("job %llu (kind %u) discarded as %s", ULL(id), r->kind[id],
                 discard_name((int)why));
    if (bm_set(&r->disc, id))
        rec_fail("job %llu discarded twice", ULL(id));
    atomic_fetch_add(&r->disc_n, 1);
}

static void *death_submitter(void *arg)
{
    worker *w = arg;
    death_run *r = w->run;
    unsigned s = w->idx;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, g_seed ^ (s + 1) * GOLDEN);
    uint32_t next_seq[KEYS_PER_SUBMITTER] = {0};
    for (uint64_t q = 0; q < r->per && !failed(); q++) {
        uint64_t id = s * r->per + q, x = sl_test_rng_next(&rng);
        uint32_t k = 0;
        if (x % 3 == 0) {
            unsigned own = (unsigned)(x >> 8) % KEYS_PER_SUBMITTER;
            k = s * KEYS_PER_SUBMITTER + own + 1;
            r->job_seq[id] = next_seq[own]++;
        }
        r->job_key[id] = k;
        r->kind[id] = (x >> 32) % 400 == 0 ? (uint8_t)(1 + (x >> 48) % 2) : 0;
        sl_job j = {.fn = death_job, .arg = (void *)(uintptr_t)id, .key = k ? 500 + k : 0};
        sl_status st = sl_pool_submit_job(r->pool, &j, SL_FOREVER);
        if (st != SL_OK)
            rec_fail("submit = %s", sl_status_str(st));
        atomic_store_explicit(&r->progress[s].v, q + 1, memory_order_relaxed);
        sl_test_maybe_stall(&rng, 256);
    }
    return NULL;
}

static uint64_t death_progress(void *arg)
{
    death_run *r = arg;
    return sum_counters(r->progress, r->ns) + atomic_load(&r->ran_n) + atomic_load(&r->disc_n);
}

static void death_diag(void *arg)
{
    death_run *r = arg;
    sl_pool_stats s;
    sl_pool_get_stats(r->pool, &s);
    fprintf(stderr, "  pool: workers %u target %u running %u parked %u queued %llu completed "
            "%llu discarded %llu died %llu respawned %llu\n", s.workers, s.target, s.running,
            s.parked, ULL(s.queued), ULL(s.completed), ULL(s.discarded), ULL(s.died),
            ULL(s.respawned));
}

START_TEST(deaths_under_load)
{
    begin_test(SUITE, "deaths[%s]", k_dispatch_name[_i]);
    death_run *r = xaligned(sizeof *r);
    g_death = r;
    r->ns = n_submitters();
    r->workers = sl_test_env_uint("SL_POOL_WORKERS", 4);
    r->per = sl_test_scaled(200000, 4000) / r->ns;
    uint64_t n = r->ns * r->per;
    r->kind = xcalloc(n, 1);
    r->job_key = xcalloc(n, sizeof *r->job_key);
    r->job_seq = xcalloc(n, sizeof *r->job_seq);
    r->keys = xaligned(r->ns * KEYS_PER_SUBMITTER * sizeof *r->keys);
    for (unsigned k = 0; k < r->ns * KEYS_PER_SUBMITTER; k++)
        r->keys[k].last = NONE;
    bm_init(&r->ran, n);
    bm_init(&r->disc, n);
    r->progress = xaligned(r->ns * sizeof *r->progress);
    r->book = book_new();
    r->book->on_discard = death_discard;
    sl_pool_opts o = book_opts(r->book);
    o.max_workers = r->workers;
    o.min_workers = r->workers;
    o.dispatch = (sl_dispatch)_i;
    o.name = "death";
    r->pool = new_pool(&o);
    const team_role roles[] = {{r->ns, death_submitter, true}};
    team t;
    team_start(&t, r, roles, N_OF(roles), NULL, death_progress, death_diag);
    double secs = team_end(&t);
    ASSERT_CLEAN();
    CHECK_MSG(sl_pool_wait_idle(r->pool, 4 * POOL_SOON_NS) == SL_OK, "wait_idle");
    uint64_t dying = 0;
    for (uint64_t id = 0; id < n; id++) {
        bool x = bm_get(&r->ran, id), d = bm_get(&r->disc, id);
        dying += r->kind[id] != 0;
        CHECK_MSG(x, "job %llu never started", ULL(id));
        CHECK_MSG(d == (r->kind[id] != 0), "job %llu (kind %u): discarded %d", ULL(id),
                  r->kind[id], d);
    }
    CHECK_MSG(atomic_load(&r->survived) == 0, "%llu dying jobs survived",
              ULL(atomic_load(&r->survived)));
    sl_pool_stats s;
    CHECK_MSG(wait_parked(r->pool, r->workers, POOL_SOON_NS, &s), "after %llu deaths: %u "
              "workers (%u parked), want %u", ULL(dying), s.workers, s.parked, r->workers);
    fprintf(stderr, "[%s] %.2f s: %llu jobs, %llu died; stats: died %llu respawned %llu "
            "spawned %llu\n", g_test, secs, ULL(n), ULL(dying), ULL(s.died), ULL(s.respawned),
            ULL(s.spawned));
    CHECK_MSG(s.completed == n - dying && s.discarded == dying && s.submitted == n,
              "submitted %llu completed %llu discarded %llu; %llu died", ULL(s.submitted),
              ULL(s.completed), ULL(s.discarded), ULL(dying));
    CHECK_MSG(s.spawned == book_inits(r->book) && book_finis(r->book) == s.died,
              "spawned %llu inits %u finis %u died %llu", ULL(s.spawned), book_inits(r->book),
              book_finis(r->book), ULL(s.died));
    CHECK_MSG(s.died == dying, "stats.died %llu, %llu jobs killed their worker", ULL(s.died),
              ULL(dying));
    CHECK_MSG(s.respawned == dying, "stats.respawned %llu after %llu deaths (min_workers == "
              "max_workers: every one is replaced)", ULL(s.respawned), ULL(dying));
    sl_pool_free(r->pool);
    book_check_closed(r->book);
    ASSERT_CLEAN();
    book_free(r->book);
    bm_free(&r->ran);
    bm_free(&r->disc);
    free(r->kind);
    free(r->job_key);
    free(r->job_seq);
    free(r->keys);
    free(r->progress);
    free(r);
}
END_TEST

/* ---- trimming races ------------------------------------------------------ */

typedef struct trim_run {
    sl_pool *pool;
    pool_book *book;
    unsigned nt, max;
    uint64_t bursts;
    pad_counter *done;     /* [nt] jobs of thread i that ran */
    pad_counter *progress; /* [nt] bursts done */
    atomic_bool stop;
    atomic_uint max_seen;
} trim_run;

static void trim_job(void *arg, void *ctx)
{
    pad_counter *c = arg;
    (void)ctx;
    if (sl_test_rng_next(thread_rng()) % 4 == 0)
        sl_test_sleep_ns(50000);
    atomic_fetch_add_explicit(&c->v, 1, memory_order_relaxed);
}

static void *trim_submitter(void *arg)
{
    worker *w = arg;
    trim_run *r = w->run;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, g_seed ^ (w->idx + 1) * GOLDEN);
    uint64_t sent = 0;
    for (uint64_t b = 0; b < r->bursts && !failed(); b++) {
        unsigned k = 1 + (unsigned)(sl_test_rng_next(&rng) % 6);
        for (unsigned i = 0; i < k; i++) {
            sl_status st = sl_pool_submit(r->pool, trim_job, &r->done[w->idx]);
            if (st != SL_OK)
                rec_fail("submit = %s", sl_status_str(st));
        }
        sent += k;
        /* Every job of the burst must run, whatever the workers were doing. */
        uint64_t end = sl_test_now_ns() + POOL_SOON_NS;
        while (atomic_load_explicit(&r->done[w->idx].v, memory_order_relaxed) < sent) {
            if (sl_test_now_ns() > end) {
                sl_pool_stats s;
                sl_pool_get_stats(r->pool, &s);
                rec_fail("burst %llu: %llu of %llu jobs ran in 20 s (workers %u parked %u "
                         "queued %llu running %u)", ULL(b),
                         ULL(atomic_load(&r->done[w->idx].v)), ULL(sent), s.workers, s.parked,
                         ULL(s.queued), s.running);
                return NULL;
            }
            sched_yield();
        }
        atomic_store_explicit(&r->progress[w->idx].v, b + 1, memory_order_relaxed);
        /* A gap around the idle timeout (2 ms). */
        sl_test_sleep_ns(sl_test_rng_next(&rng) % (4 * MS));
    }
    return NULL;
}

static void *trim_sampler(void *arg)
{
    trim_run *r = arg;
    while (!atomic_load(&r->stop)) {
        sl_pool_stats s;
        sl_pool_get_stats(r->pool, &s);
        if (s.workers > atomic_load(&r->max_seen))
            atomic_store(&r->max_seen, s.workers);
        sl_test_sleep_ns(100000);
    }
    return NULL;
}

static uint64_t trim_progress(void *arg)
{
    trim_run *r = arg;
    return sum_counters(r->progress, r->nt) + sum_counters(r->done, r->nt);
}

static void trim_diag(void *arg)
{
    trim_run *r = arg;
    sl_pool_stats s;
    sl_pool_get_stats(r->pool, &s);
    fprintf(stderr, "  pool: workers %u target %u running %u idle %u parked %u queued %llu "
            "retired %llu spawned %llu\n", s.workers, s.target, s.running, s.idle, s.parked,
            ULL(s.queued), ULL(s.retired), ULL(s.spawned));
}

/* _i: bit 0 min_workers 1 (else 0), bit 1 futex faults. */
START_TEST(trim_race)
{
    unsigned min = _i & 1;
    bool faults = _i & 2;
    begin_test(SUITE, "trim_race[min_workers %u%s]", min, faults ? ", futex faults" : "");
    trim_run *r = xaligned(sizeof *r);
    r->nt = sl_test_env_uint("SL_POOL_SUBMITTERS", 4);
    r->max = 4;
    r->bursts = sl_test_scaled(1500, 100);
    r->done = xaligned(r->nt * sizeof *r->done);
    r->progress = xaligned(r->nt * sizeof *r->progress);
    r->book = book_new();
    if (faults)
        sl_test_sys_install(sl_test_sys_spurious());
    sl_pool_opts o = book_opts(r->book);
    o.max_workers = r->max;
    o.min_workers = min;
    o.idle_timeout_ns = 2 * MS;
    o.name = "trim";
    r->pool = new_pool(&o);
    pthread_t smp;
    ck_assert_int_eq(pthread_create(&smp, NULL, trim_sampler, r), 0);
    const team_role roles[] = {{r->nt, trim_submitter, true}};
    team t;
    team_start(&t, r, roles, N_OF(roles), NULL, trim_progress, trim_diag);
    double secs = team_end(&t);
    atomic_store(&r->stop, true);
    pthread_join(smp, NULL);
    ASSERT_CLEAN();
    CHECK_MSG(sl_pool_wait_idle(r->pool, POOL_SOON_NS) == SL_OK, "wait_idle");
    sl_pool_stats s;
    CHECK_MSG(wait_workers(r->pool, min, POOL_SOON_NS, &s), "idle: %u workers, min_workers %u",
              s.workers, min);
    fprintf(stderr, "[%s] %.2f s: %llu bursts; spawned %llu retired %llu, at most %u workers "
            "seen, %u live at once\n", g_test, secs, ULL(r->bursts * r->nt), ULL(s.spawned),
            ULL(s.retired), atomic_load(&r->max_seen), atomic_load(&r->book->live_max));
    CHECK_MSG(atomic_load(&r->max_seen) <= r->max && atomic_load(&r->book->live_max) <= r->max,
              "workers exceeded max_workers %u: stats %u, live %u", r->max,
              atomic_load(&r->max_seen), atomic_load(&r->book->live_max));
    CHECK_MSG(s.retired > 0, "no worker retired in %llu bursts with a 2 ms idle timeout",
              ULL(r->bursts * r->nt));
    CHECK_MSG(s.completed == s.submitted && s.discarded == 0, "completed %llu of %llu",
              ULL(s.completed), ULL(s.submitted));
    sl_pool_free(r->pool);
    restore_ops();
    book_check_closed(r->book);
    ASSERT_CLEAN();
    book_free(r->book);
    free(r->done);
    free(r->progress);
    free(r);
}
END_TEST

/* ---- nested submits while resizing --------------------------------------- */

typedef struct nest_run {
    sl_pool *pool;
    unsigned nt, depth;
    uint64_t roots;
    atomic_uint_fast64_t ran;
    pad_counter *progress;
    atomic_bool stop;
    atomic_uint resizes; /* set_workers calls that succeeded */
} nest_run;

static nest_run *g_nest;

static void nest_job(void *arg, void *ctx)
{
    (void)ctx;
    unsigned depth = (unsigned)(uintptr_t)arg;
    atomic_fetch_add_explicit(&g_nest->ran, 1, memory_order_relaxed);
    for (unsigned c = 0; depth > 0 && c < 2; c++) {
        sl_job j = {.fn = nest_job, .arg = (void *)(uintptr_t)(depth - 1),
                    .key = sl_test_rng_next(thread_rng()) % 4 == 0 ? 1 + depth : 0};
        sl_status st = sl_pool_submit_job(g_nest->pool, &j, SL_FOREVER);
        if (st != SL_OK)
            rec_fail("submit from a job = %s", sl_status_str(st));
    }
}

static void *nest_submitter(void *arg)
{
    worker *w = arg;
    nest_run *r = w->run;
    for (uint64_t q = 0; q < r->roots && !failed(); q++) {
        if (sl_pool_submit(r->pool, nest_job, (void *)(uintptr_t)r->depth) != SL_OK)
            rec_fail("submit a root");
        atomic_store_explicit(&r->progress[w->idx].v, q + 1, memory_order_relaxed);
        sl_test_maybe_stall(thread_rng(), 8);
    }
    return NULL;
}

#define NEST_RESIZES 400u

static void *nest_resizer(void *arg)
{
    worker *w = arg;
    nest_run *r = w->run;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, g_seed ^ 0x5E7ull);
    /* A bounded number of resizes: each one starts or retires threads, and
     * ThreadSanitizer keeps a few mappings per thread ever created, so an
     * unbounded churn exhausts vm.max_map_count in the tsan build. */
    for (unsigned n = 0; n < NEST_RESIZES && !atomic_load(&r->stop) && !failed(); n++) {
        sl_status st = cmd_retry(r->pool, CMD_SET_WORKERS, 1 + (unsigned)(sl_test_rng_next(&rng) % 6));
        if (st != SL_OK)
            rec_fail("set_workers = %s", sl_status_str(st));
        atomic_fetch_add(&r->resizes, 1);
        sl_test_sleep_ns(sl_test_rng_next(&rng) % MS);
    }
    return NULL;
}

static uint64_t nest_progress(void *arg)
{
    nest_run *r = arg;
    return sum_counters(r->progress, r->nt) + atomic_load(&r->ran);
}

START_TEST(nested)
{
    begin_test(SUITE, "nested");
    nest_run *r = xaligned(sizeof *r);
    g_nest = r;
    r->nt = sl_test_env_uint("SL_POOL_SUBMITTERS", 4);
    r->depth = 7;
    r->roots = sl_test_scaled(2000, 40) / r->nt;
    r->progress = xaligned((r->nt + 1) * sizeof *r->progress);
    sl_pool_opts o = {.max_workers = 6, .active_workers = 2};
    r->pool = new_pool(&o);
    const team_role roles[] = {{r->nt, nest_submitter, true}, {1, nest_resizer, false}};
    team t;
    team_start(&t, r, roles, N_OF(roles), NULL, nest_progress, NULL);
    team_join(&t, 0, r->nt);
    CHECK_MSG(sl_pool_wait_idle(r->pool, 4 * POOL_SOON_NS) == SL_OK, "wait_idle");
    uint64_t want = r->nt * r->roots * ((2ull << r->depth) - 1);
    uint64_t got = atomic_load(&r->ran);
    atomic_store(&r->stop, true);
    double secs = team_end(&t);
    ASSERT_CLEAN();
    CHECK_MSG(got == want, "wait_idle returned with %llu of %llu jobs run", ULL(got), ULL(want));
    sl_pool_stats s;
    sl_pool_get_stats(r->pool, &s);
    CHECK_MSG(s.completed == want && s.submitted == want, "completed %llu submitted %llu",
              ULL(s.completed), ULL(s.submitted));
    sl_test_account("jobs ran exactly once", want);
    /* Each resize starts at most max_workers threads; more is thread churn
     * (workers spawned above a target that has just fallen, retiring at once). */
    unsigned resizes = atomic_load(&r->resizes);
    CHECK_MSG(s.spawned <= 2 + 6ull * (resizes + 1), "%llu workers spawned for %u resizes",
              ULL(s.spawned), resizes);
    fprintf(stderr, "[%s] %.2f s: %llu jobs in trees; %llu workers spawned, %llu retired\n",
            g_test, secs, ULL(want), ULL(s.spawned), ULL(s.retired));
    sl_pool_free(r->pool);
    free(r->progress);
    free(r);
}
END_TEST

/* ---- reset while submitters keep submitting ------------------------------ */

/* A reset discards what is queued; it must complete while submits go on
 * (a sweep that chases the submitters never ends). */
typedef struct reset_run {
    sl_pool *pool;
    atomic_bool stop;
    atomic_uint_fast64_t submitted;
    pad_counter *progress;
    unsigned nt;
    uint64_t per; /* submits per thread at most */
    bool slow;    /* on_discard does a little work, as one that frees or logs would */
    /* Where the reset's first discard found the submitters: 1 still going,
     * 2 all finished (the sweep began late: all it took was queued then). */
    atomic_int first_discard;
} reset_run;

static uint64_t reset_progress(void *arg);

static void reset_discard(const sl_job *job, sl_discard why, void *user)
{
    reset_run *r = user;
    (void)job;
    if (why == SL_DISCARD_RESET && atomic_load(&r->first_discard) == 0) {
        int was = reset_progress(r) == r->per * r->nt ? 2 : 1;
        int none = 0;
        atomic_compare_exchange_strong(&r->first_discard, &none, was);
    }
    if (r->slow)
        busy_wait(1000);
}

static void reset_noop(void *arg, void *ctx)
{
    (void)arg;
    (void)ctx;
}

static void *reset_submitter(void *arg)
{
    worker *w = arg;
    reset_run *r = w->run;
    for (uint64_t q = 0; q < r->per && !atomic_load(&r->stop); q++) {
        sl_status st = sl_pool_submit(r->pool, reset_noop, NULL);
        if (st == SL_CLOSED)
            break;
        if (st != SL_OK)
            rec_fail("submit = %s", sl_status_str(st));
        atomic_fetch_add_explicit(&r->progress[w->idx].v, 1, memory_order_relaxed);
    }
    return NULL;
}

static uint64_t reset_progress(void *arg)
{
    reset_run *r = arg;
    return sum_counters(r->progress, r->nt);
}

/* _i 0: a queue of 4096; 1: unbounded, with an on_discard of 1 us. */
START_TEST(reset_under_submission)
{
    begin_test(SUITE, "reset_under_submission[%s]", _i ? "unbounded" : "capacity 4096");
    reset_run *r = xaligned(sizeof *r);
    r->nt = sl_test_env_uint("SL_POOL_SUBMITTERS", 4);
    r->per = sl_test_scaled(1000000, 50000) / r->nt;
    r->progress = xaligned(r->nt * sizeof *r->progress);
    r->slow = _i;
    sl_pool_opts o = {.max_workers = 2, .queue_capacity = _i ? 0 : 4096, .start_stopped = true,
                      .on_discard = reset_discard, .user = r};
    r->pool = new_pool(&o);
    const team_role roles[] = {{r->nt, reset_submitter, true}};
    team t;
    team_start(&t, r, roles, N_OF(roles), NULL, reset_progress, NULL);
    sl_test_sleep_ns(50 * MS);
    /* Submitters that finished before the reset leave nothing to chase: then
     * every job was queued at the reset, and discarding all of them is right. */
    bool done_before = sum_counters(r->progress, r->nt) == r->per * r->nt;
    uint64_t t0 = sl_test_now_ns();
    sl_status st = sl_pool_reset(r->pool);
    sl_status ready = sl_pool_wait_ready(r->pool, 10 * SEC);
    double took = (double)(sl_test_now_ns() - t0) / 1e9;
    bool submitters_done = sum_counters(r->progress, r->nt) == r->per * r->nt;
    sl_pool_stats s;
    sl_pool_get_stats(r->pool, &s);
    atomic_store(&r->stop, true);
    sl_pool_shutdown(r->pool, SL_CANCEL);
    team_end(&t);
    ASSERT_CLEAN();
    fprintf(stderr, "[%s] reset %s after %.3f s; %llu discarded, %llu submitted\n", g_test,
            ready == SL_OK ? "completed" : "still in progress", took, ULL(s.discarded),
            ULL(s.submitted));
    sl_pool_free(r->pool); /* first: a failed check below must not leak its threads */
    CHECK_MSG(st == SL_OK, "reset = %s", sl_status_str(st));
    /* Not chasing: either the reset completed while the submitters were still
     * going, or — if they finished during a long sweep — what they queued
     * after the sweep began is still queued (left for the next start). A
     * sweep that began only after they had finished (its thread kept off the
     * CPU that long) had every job queued at its start: nothing to tell. */
    bool late = atomic_load(&r->first_discard) == 2;
    if (late && !done_before)
        fprintf(stderr, "[%s] the sweep began after the submitters had finished: "
                "not a test of chasing this time\n", g_test);
    CHECK_MSG(ready == SL_OK && (done_before || late || !submitters_done || s.queued > 0),
              "reset completed: %d, after %.3f s, %s (%llu jobs discarded, %llu queued): it "
              "chases the submitters instead of discarding what was queued", ready == SL_OK,
              took, submitters_done ? "only once every submitter had finished" : "",
              ULL(s.discarded), ULL(s.queued));
    free(r->progress);
    free(r);
}
END_TEST

static Suite *stress_pool_suite(void)
{
    Suite *s = suite_create("stress_pool");
    TCase *tc = sl_test_loop_case(s, "accounting", TC_TIMEOUT, acct_load, N_OF(k_acct));
    tcase_add_checked_fixture(tc, NULL, restore_ops);
    sl_test_loop_case(s, "held_key", TC_TIMEOUT, held_key, 3);
    sl_test_loop_case(s, "priority", TC_TIMEOUT, priority_concurrent, 3);
    sl_test_loop_case(s, "deaths", TC_TIMEOUT, deaths_under_load, 3);
    tc = sl_test_loop_case(s, "trim_race", TC_TIMEOUT, trim_race, 4);
    tcase_add_checked_fixture(tc, NULL, restore_ops);
    sl_test_loop_case(s, "nested", TC_TIMEOUT, nested, 1);
    sl_test_loop_case(s, "reset_under_submission", TC_TIMEOUT, reset_under_submission, 2);
    return s;
}

int main(void) { return sl_test_run(stress_pool_suite()); }
