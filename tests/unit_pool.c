/*
 * tests/unit_pool.c — the worker pool (sluice/pool.h), one behaviour at a
 * time, written from the header's contract and SPEC §4.
 *
 *   input      bad options, bad jobs, commands in the wrong state or after
 *              shutdown: SL_EINVAL, and nothing consumed (no job counted, run
 *              or discarded, no callback, no state change).
 *   jobs       worker_ctx and thread names, priorities with one worker (every
 *              dispatch mode), keys (order whatever the priorities, a busy key
 *              holds back no other key), SL_JOB_UNIQUE, jobs submitting jobs.
 *   commands   pause and resume, reset, shutdown (drain and cancel), free with
 *              queued jobs, set_workers while running and while stopped,
 *              on_state once per completed command.
 *   workers    a worker dying inside a job (pthread_exit, cancellation), idle
 *              trimming and growth, back-pressure, no CPU while idle, one
 *              worker woken per job.
 *   batches    a stop, reset, cancel, drain or death while a worker holds
 *              jobs it took at once but has not started; the rest of a
 *              blocked worker's batch taken by another worker.
 *
 * Waits for things that must happen have generous deadlines (POOL_SOON_NS);
 * "does not happen" is checked over a short window and never by an upper
 * bound on time. Callback and job failures are recorded with rec_fail and
 * checked with ASSERT_CLEAN; SL_STRESS_SEED replays a seed.
 */
#include "pool_support.h"
#include "../pool/pool_impl.h" /* the key table's size (keys_table_shrinks) */

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sluice/park.h>
#include <sluice/pool.h>
#include "sysops.h"

#define SUITE "unit_pool"

static pool_book *g_book;

/* ---- small helpers ------------------------------------------------------- */

static sl_pool *new_pool(const sl_pool_opts *o)
{
    sl_pool *p = NULL;
    sl_status st = sl_pool_new(&p, o);
    CHECK_MSG(st == SL_OK && p, "sl_pool_new = %s", sl_status_str(st));
    return p;
}

/* The test's book and options with its callbacks. */
static sl_pool_opts begin_book(void)
{
    g_book = book_new();
    return book_opts(g_book);
}

static void end_book(sl_pool *p)
{
    sl_pool_free(p);
    book_check_closed(g_book);
    ASSERT_CLEAN();
    book_free(g_book);
    g_book = NULL;
}

static sl_pool_stats stats_of(sl_pool *p)
{
    sl_pool_stats s;
    memset(&s, 0, sizeof s);
    sl_pool_get_stats(p, &s);
    return s;
}

/* Waits for the command in progress to complete and for its on_state: the
 * book has then seen `states` calls in all, the last with `want`. */
static void settle(sl_pool *p, unsigned states, sl_pool_state want)
{
    sl_status st = sl_pool_wait_ready(p, POOL_SOON_NS);
    CHECK_MSG(st == SL_OK, "wait_ready = %s: the command did not complete", sl_status_str(st));
    CHECK_MSG(wait_states(g_book, states, POOL_SOON_NS),
              "on_state was called %u times, want %u", book_states(g_book), states);
    CHECK_MSG(atomic_load(&g_book->last_state) == (int)want, "on_state(%s), want %s",
              state_name(atomic_load(&g_book->last_state)), state_name((int)want));
}

static void wait_idle_ok(sl_pool *p)
{
    sl_status st = sl_pool_wait_idle(p, POOL_SOON_NS);
    sl_pool_stats s = stats_of(p);
    CHECK_MSG(st == SL_OK, "wait_idle = %s (queued %llu, running %u, workers %u, state %s)",
              sl_status_str(st), ULL(s.queued), s.running, s.workers, state_name((int)s.state));
}

static void *as_arg(uintptr_t i) { return (void *)i; }
static uintptr_t of_arg(const void *a) { return (uintptr_t)a; }

/* A job that counts itself: arg is an atomic_uint. */
static void count_job(void *arg, void *ctx)
{
    if (g_book)
        book_job_begin(g_book, ctx);
    atomic_fetch_add((atomic_uint *)arg, 1);
}

static sl_status submit_count(sl_pool *p, atomic_uint *c) { return sl_pool_submit(p, count_job, c); }

/* ---- an order log: jobs record their index as they start ----------------- */

#define LOG_MAX 4096
typedef struct job_rec {
    unsigned prio;
    uint64_t key;
} job_rec;
static job_rec g_jobs[LOG_MAX];
static sl_job_fn g_log_fn; /* what submit_logged submits: log_job unless a test says */
static unsigned g_order[LOG_MAX];
static atomic_uint g_order_n;
static atomic_int g_key_inflight[64];

static void log_job(void *arg, void *ctx)
{
    book_job_begin(g_book, ctx);
    unsigned i = (unsigned)of_arg(arg);
    uint64_t key = g_jobs[i].key;
    if (key && atomic_fetch_add(&g_key_inflight[key % 64], 1) != 0)
        rec_fail("job %u of key %llu started while another of its key ran", i, ULL(key));
    unsigned at = atomic_fetch_add(&g_order_n, 1);
    if (at < LOG_MAX)
        g_order[at] = i;
    if (key)
        atomic_fetch_sub(&g_key_inflight[key % 64], 1);
}

static void log_reset(void)
{
    g_log_fn = log_job;
    atomic_store(&g_order_n, 0);
    memset(g_jobs, 0, sizeof g_jobs);
    for (int i = 0; i < 64; i++)
        atomic_store(&g_key_inflight[i], 0);
}

static sl_status submit_logged(sl_pool *p, unsigned i, unsigned prio, uint64_t key)
{
    g_jobs[i] = (job_rec){prio, key};
    sl_job j = {.fn = g_log_fn, .arg = as_arg(i), .priority = prio, .key = key};
    return sl_pool_submit_job(p, &j, SL_FOREVER);
}

static const sl_dispatch k_dispatch[] = {SL_DISPATCH_SHARED, SL_DISPATCH_ROUND_ROBIN,
                                         SL_DISPATCH_LEAST_LOADED};
static const char *const k_dispatch_name[] = {"shared", "round-robin", "least-loaded"};

/* ---- input --------------------------------------------------------------- */

START_TEST(test_defaults)
{
    begin_test(SUITE, "defaults");
    sl_pool *p = new_pool(NULL);
    sl_pool_stats s = stats_of(p);
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    CHECK_MSG(s.state == SL_POOL_RUNNING, "a new pool is %s", state_name((int)s.state));
    CHECK_MSG(s.target == (unsigned)online, "target %u, online CPUs %ld", s.target, online);
    CHECK_MSG(s.capacity == 0 && !s.busy, "capacity %zu busy %d", s.capacity, s.busy);
    CHECK_MSG(wait_workers(p, (unsigned)online, POOL_SOON_NS, &s), "%u workers, want %ld",
              s.workers, online);
    atomic_uint n = 0;
    CHECK_MSG(submit_count(p, &n) == SL_OK, "submit");
    wait_idle_ok(p);
    CHECK_MSG(atomic_load(&n) == 1, "the job ran %u times", atomic_load(&n));
    s = stats_of(p);
    CHECK_MSG(s.submitted == 1 && s.completed == 1 && s.discarded == 0 && s.queued == 0,
              "submitted %llu completed %llu discarded %llu queued %llu", ULL(s.submitted),
              ULL(s.completed), ULL(s.discarded), ULL(s.queued));
    sl_pool_free(p);
    sl_pool_free(NULL);
    ASSERT_CLEAN();
}
END_TEST

/* Without worker_init a job gets NULL; the default thread name. */
static void null_ctx_job(void *arg, void *ctx)
{
    char name[32] = "";
    if (ctx != NULL)
        rec_fail("worker_ctx %p without worker_init", ctx);
    pthread_getname_np(pthread_self(), name, sizeof name);
    unsigned id;
    char tail;
    if (sscanf(name, "sl-pool/%u%c", &id, &tail) != 1)
        rec_fail("a worker of an unnamed pool is called \"%s\", want \"sl-pool/<id>\"", name);
    atomic_fetch_add((atomic_uint *)arg, 1);
}

START_TEST(test_default_name_and_ctx)
{
    begin_test(SUITE, "default_name_and_ctx");
    sl_pool_opts o = {.max_workers = 2};
    sl_pool *p = new_pool(&o);
    atomic_uint n = 0;
    for (int i = 0; i < 20; i++)
        CHECK_MSG(sl_pool_submit(p, null_ctx_job, &n) == SL_OK, "submit");
    wait_idle_ok(p);
    CHECK_MSG(atomic_load(&n) == 20, "%u of 20 ran", atomic_load(&n));
    sl_pool_free(p);
    ASSERT_CLEAN();
}
END_TEST

START_TEST(test_new_bad_opts)
{
    begin_test(SUITE, "new_bad_opts");
    g_book = book_new();
    struct {
        const char *what;
        sl_pool_opts o;
    } cases[] = {
        {"min_workers > max_workers", {.max_workers = 2, .min_workers = 3}},
        {"active_workers > max_workers", {.max_workers = 2, .active_workers = 3}},
        {"priority_levels 9", {.max_workers = 1, .priority_levels = 9}},
        {"priority_levels 1000", {.max_workers = 1, .priority_levels = 1000}},
        {"max_workers past SL_POOL_MAX_WORKERS",
         {.max_workers = SL_POOL_MAX_WORKERS + 1, .active_workers = 1}},
        {"max_workers UINT_MAX", {.max_workers = UINT_MAX, .active_workers = 1}},
        {"dispatch 3", {.max_workers = 1, .dispatch = (sl_dispatch)3}},
        {"dispatch -1", {.max_workers = 1, .dispatch = (sl_dispatch)-1}},
    };
    for (int i = 0; i < N_OF(cases); i++) {
        sl_pool_opts o = cases[i].o;
        sl_pool_opts cb = book_opts(g_book);
        o.worker_init = cb.worker_init;
        o.worker_fini = cb.worker_fini;
        o.on_state = cb.on_state;
        o.on_discard = cb.on_discard;
        o.user = g_book;
        sl_pool *sentinel = (sl_pool *)&cases[i], *p = sentinel;
        sl_status st = sl_pool_new(&p, &o);
        CHECK_MSG(st == SL_EINVAL, "%s: sl_pool_new = %s", cases[i].what, sl_status_str(st));
        CHECK_MSG(p == sentinel, "%s: *out was written", cases[i].what);
        if (st == SL_OK)
            sl_pool_free(p);
    }
    sl_pool_opts o = {.max_workers = 1};
    CHECK_MSG(sl_pool_new(NULL, &o) == SL_EINVAL, "NULL out");
    CHECK_MSG(sl_pool_new(NULL, NULL) == SL_EINVAL, "NULL out, NULL opts");
    CHECK_MSG(book_inits(g_book) == 0 && book_states(g_book) == 0,
              "a refused sl_pool_new started %u workers, %u on_state", book_inits(g_book),
              book_states(g_book));
    /* The edges that are allowed. */
    sl_pool_opts ok = book_opts(g_book);
    ok.max_workers = SL_POOL_MAX_WORKERS;
    ok.active_workers = 1;
    ok.priority_levels = SL_POOL_MAX_PRIORITIES;
    sl_pool *p = new_pool(&ok);
    CHECK_MSG(sl_pool_set_workers(p, SL_POOL_MAX_WORKERS + 1) == SL_EINVAL, "set_workers(max+1)");
    atomic_uint ran = 0;
    sl_job j = {.fn = count_job, .arg = &ran, .priority = SL_POOL_MAX_PRIORITIES - 1};
    CHECK_MSG(sl_pool_submit_job(p, &j, 0) == SL_OK, "the highest priority refused");
    wait_idle_ok(p);
    CHECK_MSG(atomic_load(&ran) == 1, "the job ran %u times", atomic_load(&ran));
    end_book(p);
}
END_TEST

/* Bad jobs consume nothing: no count, no run, no discard. */
START_TEST(test_submit_bad_input)
{
    begin_test(SUITE, "submit_bad_input");
    sl_pool_opts o = begin_book();
    o.max_workers = 1;
    o.priority_levels = 4;
    sl_pool *p = new_pool(&o);
    atomic_uint n = 0;
    const uint64_t timeouts[] = {0, 10 * MS, SL_FOREVER};
    CHECK_MSG(sl_pool_submit(NULL, count_job, &n) == SL_EINVAL, "submit(NULL pool)");
    CHECK_MSG(sl_pool_try_submit(NULL, count_job, &n) == SL_EINVAL, "try_submit(NULL pool)");
    CHECK_MSG(sl_pool_submit(p, NULL, &n) == SL_EINVAL, "submit(NULL fn)");
    CHECK_MSG(sl_pool_try_submit(p, NULL, &n) == SL_EINVAL, "try_submit(NULL fn)");
    struct {
        const char *what;
        sl_job j;
    } bad[] = {
        {"NULL fn", {.fn = NULL, .arg = &n}},
        {"priority == priority_levels", {.fn = count_job, .arg = &n, .priority = 4}},
        {"priority UINT_MAX", {.fn = count_job, .arg = &n, .priority = UINT_MAX}},
        {"flags 2", {.fn = count_job, .arg = &n, .flags = 2}},
        {"flags 0x80000000", {.fn = count_job, .arg = &n, .flags = 0x80000000u}},
        {"flags UNIQUE|4", {.fn = count_job, .arg = &n, .key = 3, .flags = SL_JOB_UNIQUE | 4}},
        {"SL_JOB_UNIQUE with key 0", {.fn = count_job, .arg = &n, .flags = SL_JOB_UNIQUE}},
    };
    for (int t = 0; t < N_OF(timeouts); t++) {
        CHECK_MSG(sl_pool_submit_job(NULL, &bad[1].j, timeouts[t]) == SL_EINVAL,
                  "submit_job(NULL pool)");
        CHECK_MSG(sl_pool_submit_job(p, NULL, timeouts[t]) == SL_EINVAL, "submit_job(NULL job)");
        for (int i = 0; i < N_OF(bad); i++) {
            sl_status st = sl_pool_submit_job(p, &bad[i].j, timeouts[t]);
            CHECK_MSG(st == SL_EINVAL, "%s (timeout %llu): %s", bad[i].what, ULL(timeouts[t]),
                      sl_status_str(st));
        }
    }
    sl_test_sleep_ns(20 * MS);
    sl_pool_stats s = stats_of(p);
    CHECK_MSG(s.submitted == 0 && s.queued == 0 && s.completed == 0 && s.discarded == 0,
              "refused jobs were counted: submitted %llu queued %llu completed %llu discarded %llu",
              ULL(s.submitted), ULL(s.queued), ULL(s.completed), ULL(s.discarded));
    CHECK_MSG(atomic_load(&n) == 0 && atomic_load(&g_book->discards) == 0,
              "a refused job ran (%u) or was discarded (%u)", atomic_load(&n),
              atomic_load(&g_book->discards));
    /* priority_levels - 1 is fine; the pool still works. */
    sl_job good = {.fn = count_job, .arg = &n, .priority = 3, .key = 5, .flags = SL_JOB_UNIQUE};
    CHECK_MSG(sl_pool_submit_job(p, &good, 0) == SL_OK, "a good job refused");
    wait_idle_ok(p);
    CHECK_MSG(atomic_load(&n) == 1, "the good job ran %u times", atomic_load(&n));
    end_book(p);

    /* priority_levels 0 means 1: priority 1 is out of range. */
    sl_pool_opts o1 = begin_book();
    o1.max_workers = 1;
    p = new_pool(&o1);
    sl_job j1 = {.fn = count_job, .arg = &n, .priority = 1};
    CHECK_MSG(sl_pool_submit_job(p, &j1, 0) == SL_EINVAL, "priority 1 with priority_levels 0");
    j1.priority = 0;
    CHECK_MSG(sl_pool_submit_job(p, &j1, 0) == SL_OK, "priority 0 with priority_levels 0");
    wait_idle_ok(p);
    end_book(p);
}
END_TEST

/* A refused command changes nothing: no on_state, same state and target. */
static void expect_refused(sl_pool *p, pool_cmd c, unsigned arg, sl_status want,
                           const sl_pool_stats *before)
{
    sl_status st = cmd_issue(p, c, arg);
    CHECK_MSG(st == want, "%s(%u) in state %s: %s, want %s", cmd_name(c), arg,
              state_name((int)before->state), sl_status_str(st), sl_status_str(want));
    sl_pool_stats s = stats_of(p);
    CHECK_MSG(s.state == before->state && s.target == before->target && !s.busy &&
                  sl_pool_ready(p),
              "a refused %s changed the pool: state %s target %u busy %d", cmd_name(c),
              state_name((int)s.state), s.target, s.busy);
}

START_TEST(test_commands_bad_input)
{
    begin_test(SUITE, "commands_bad_input");
    CHECK_MSG(sl_pool_start(NULL) == SL_EINVAL && sl_pool_stop(NULL) == SL_EINVAL &&
                  sl_pool_set_workers(NULL, 1) == SL_EINVAL && sl_pool_reset(NULL) == SL_EINVAL &&
                  sl_pool_shutdown(NULL, SL_DRAIN) == SL_EINVAL &&
                  sl_pool_shutdown(NULL, SL_CANCEL) == SL_EINVAL,
              "a command on NULL");
    CHECK_MSG(!sl_pool_ready(NULL), "ready(NULL)");
    CHECK_MSG(sl_pool_wait_ready(NULL, 0) == SL_EINVAL && sl_pool_wait_idle(NULL, 0) == SL_EINVAL,
              "wait_*(NULL)");
    sl_pool_stats s, pattern;
    memset(&s, 0xA5, sizeof s);
    memcpy(&pattern, &s, sizeof s);
    sl_pool_get_stats(NULL, &s);
    CHECK_MSG(memcmp(&s, &pattern, sizeof s) == 0, "get_stats(NULL, out) wrote to out");
    sl_pool_free(NULL);

    sl_pool_opts o = begin_book();
    o.max_workers = 3;
    sl_pool *p = new_pool(&o);
    sl_pool_get_stats(p, NULL);
    sl_pool_stats run = stats_of(p);
    expect_refused(p, CMD_SET_WORKERS, 0, SL_EINVAL, &run);
    expect_refused(p, CMD_SET_WORKERS, 4, SL_EINVAL, &run);
    expect_refused(p, CMD_SET_WORKERS, UINT_MAX, SL_EINVAL, &run);
    expect_refused(p, CMD_RESET, 0, SL_EINVAL, &run);
    expect_refused(p, CMD_START, 0, SL_EINVAL, &run);
    expect_refused(p, CMD_SHUTDOWN, 7, SL_EINVAL, &run);
    expect_refused(p, CMD_SHUTDOWN, (unsigned)-1, SL_EINVAL, &run);
    CHECK_MSG(sl_pool_stop(p) == SL_OK, "stop");
    settle(p, 1, SL_POOL_STOPPED);
    sl_pool_stats stopped = stats_of(p);
    expect_refused(p, CMD_STOP, 0, SL_EINVAL, &stopped);
    expect_refused(p, CMD_SET_WORKERS, 0, SL_EINVAL, &stopped);
    expect_refused(p, CMD_SET_WORKERS, 4, SL_EINVAL, &stopped);
    sl_test_sleep_ns(20 * MS);
    CHECK_MSG(book_states(g_book) == 1, "refused commands called on_state (%u calls)",
              book_states(g_book));
    atomic_uint n = 0;
    CHECK_MSG(submit_count(p, &n) == SL_OK, "submit while stopped");
    CHECK_MSG(sl_pool_start(p) == SL_OK, "start");
    settle(p, 2, SL_POOL_RUNNING);
    wait_idle_ok(p);
    CHECK_MSG(atomic_load(&n) == 1 && stats_of(p).discarded == 0, "ran %u", atomic_load(&n));
    end_book(p);
}
END_TEST

/* From the moment shutdown is called: submit is SL_CLOSED and every command
 * SL_EINVAL, also while the shutdown is still in progress. */
static void expect_all_refused_after_shutdown(sl_pool *p, const char *when)
{
    static const struct {
        pool_cmd c;
        unsigned arg;
    } cmds[] = {{CMD_START, 0},    {CMD_STOP, 0},     {CMD_SET_WORKERS, 1},
                {CMD_RESET, 0},    {CMD_SHUTDOWN, SL_DRAIN}, {CMD_SHUTDOWN, SL_CANCEL}};
    for (int i = 0; i < N_OF(cmds); i++) {
        sl_status st = cmd_issue(p, cmds[i].c, cmds[i].arg);
        CHECK_MSG(st == SL_EINVAL, "%s: %s(%u) = %s, want SL_EINVAL", when, cmd_name(cmds[i].c),
                  cmds[i].arg, sl_status_str(st));
    }
    atomic_uint n = 0;
    sl_job j = {.fn = count_job, .arg = &n, .key = 9, .flags = SL_JOB_UNIQUE};
    sl_status a = submit_count(p, &n), b = sl_pool_try_submit(p, count_job, &n),
              c = sl_pool_submit_job(p, &j, 10 * MS), d = sl_pool_submit_job(p, &j, SL_FOREVER);
    CHECK_MSG(a == SL_CLOSED && b == SL_CLOSED && c == SL_CLOSED && d == SL_CLOSED,
              "%s: submit %s, try_submit %s, submit_job %s / %s", when, sl_status_str(a),
              sl_status_str(b), sl_status_str(c), sl_status_str(d));
}

START_TEST(test_commands_after_shutdown)
{
    begin_test(SUITE, "commands_after_shutdown");
    sl_pool_opts o = begin_book();
    o.max_workers = 1;
    sl_pool *p = new_pool(&o);
    pool_gate g;
    gate_init(&g);
    CHECK_MSG(sl_pool_submit(p, gate_job, &g) == SL_OK, "submit gate");
    CHECK_MSG(gate_wait_entered(&g, 1, POOL_SOON_NS), "the gate job did not start");
    CHECK_MSG(sl_pool_shutdown(p, SL_DRAIN) == SL_OK, "shutdown(DRAIN)");
    expect_all_refused_after_shutdown(p, "shutdown in progress");
    CHECK_MSG(!sl_pool_ready(p), "shutdown completed while a job still runs");
    gate_open(&g);
    settle(p, 1, SL_POOL_SHUTDOWN);
    expect_all_refused_after_shutdown(p, "after shutdown");
    sl_pool_stats s;
    CHECK_MSG(wait_workers(p, 0, POOL_SOON_NS, &s), "%u workers left after shutdown", s.workers);
    CHECK_MSG(s.state == SL_POOL_SHUTDOWN && s.submitted == 1 && s.completed == 1 &&
                  s.discarded == 0,
              "state %s submitted %llu completed %llu discarded %llu", state_name((int)s.state),
              ULL(s.submitted), ULL(s.completed), ULL(s.discarded));
    CHECK_MSG(sl_pool_wait_idle(p, 0) == SL_OK, "wait_idle after shutdown");
    CHECK_MSG(atomic_load(&g_book->discards) == 0, "a refused submit reached on_discard");
    sl_test_sleep_ns(20 * MS);
    CHECK_MSG(book_states(g_book) == 1, "%u on_state calls for one command", book_states(g_book));
    end_book(p);
    gate_destroy(&g);
}
END_TEST

/* ---- jobs: worker_ctx and names ----------------------------------------- */

static const char *g_name; /* the pool's name option */

static void named_job(void *arg, void *ctx)
{
    pool_wctx *c = book_job_begin(g_book, ctx);
    if (!c)
        return;
    char got[32] = "", want[64];
    pthread_getname_np(pthread_self(), got, sizeof got);
    snprintf(want, sizeof want, "%s/%u", g_name ? g_name : "sl-pool", c->id);
    want[15] = '\0'; /* Linux keeps 15 bytes */
    if (strcmp(got, want) != 0)
        rec_fail("worker %u is called \"%s\", want \"%s\"", c->id, got, want);
    atomic_fetch_add((atomic_uint *)arg, 1);
}

/* Threads of this process whose name starts with prefix: those followed by
 * digits (workers) and those followed by anything else. */
static void count_named_threads(const char *prefix, unsigned *workers, unsigned *others)
{
    *workers = *others = 0;
    DIR *d = opendir("/proc/self/task");
    CHECK_MSG(d != NULL, "opendir /proc/self/task: %s", strerror(errno));
    size_t len = strlen(prefix);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], comm[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue; /* the thread has just exited */
        if (!fgets(comm, sizeof comm, f))
            comm[0] = '\0';
        fclose(f);
        comm[strcspn(comm, "\n")] = '\0';
        if (strncmp(comm, prefix, len) != 0)
            continue;
        const char *t = comm + len;
        bool digits = *t != '\0';
        for (; *t; t++)
            digits = digits && *t >= '0' && *t <= '9';
        if (digits)
            (*workers)++;
        else
            (*others)++;
    }
    closedir(d);
}

START_TEST(test_worker_ctx_and_names)
{
    static const char *const names[] = {"tpool", "a-rather-long-pool-name", NULL};
    const char *name = names[_i];
    begin_test(SUITE, "worker_ctx_and_names[%s]", name ? name : "NULL");
    g_name = name;
    sl_pool_opts o = begin_book();
    o.max_workers = 3;
    o.name = name;
    sl_pool *p = new_pool(&o);
    atomic_uint n = 0;
    for (int i = 0; i < 300; i++)
        CHECK_MSG(sl_pool_submit(p, named_job, &n) == SL_OK, "submit");
    wait_idle_ok(p);
    CHECK_MSG(atomic_load(&n) == 300, "%u of 300 ran", atomic_load(&n));
    /* Quiescent: every worker parked, so every one has run worker_init. */
    sl_pool_stats s;
    CHECK_MSG(wait_parked(p, 3, POOL_SOON_NS, &s), "%u workers, %u parked", s.workers, s.parked);
    CHECK_MSG(s.spawned == book_inits(g_book), "stats.spawned %llu, worker_init calls %u",
              ULL(s.spawned), book_inits(g_book));
    CHECK_MSG(g_book->ctx[0] != NULL, "no worker has id 0 (ids count up from 0)");
    if (name && strlen(name) < 10) {
        char prefix[32];
        snprintf(prefix, sizeof prefix, "%s/", name);
        unsigned workers, others;
        count_named_threads(prefix, &workers, &others);
        CHECK_MSG(workers == s.workers, "%u threads named %s<id>, stats.workers %u", workers,
                  prefix, s.workers);
    }
    end_book(p);
}
END_TEST

/* ---- priorities with one worker ----------------------------------------- */

/* The log must be the jobs [0, n) sorted by priority (higher first), then by
 * index (FIFO within a level). */
static void check_priority_order(unsigned n, unsigned first)
{
    unsigned got = atomic_load(&g_order_n);
    CHECK_MSG(got == n + first, "%u jobs ran, want %u", got, n + first);
    for (unsigned k = first + 1; k < got; k++) {
        unsigned a = g_order[k - 1], b = g_order[k];
        bool ok = g_jobs[a].prio > g_jobs[b].prio || (g_jobs[a].prio == g_jobs[b].prio && a < b);
        CHECK_MSG(ok, "position %u: job %u (priority %u) ran before job %u (priority %u)", k,
                  a, g_jobs[a].prio, b, g_jobs[b].prio);
    }
}

/* Fills the queue of a stopped one-worker pool, starts it, checks the order. */
START_TEST(test_priority_order_stopped)
{
    uint64_t seed = begin_test(SUITE, "priority_order_stopped[%s]", k_dispatch_name[_i]);
    sl_test_rng rng;
    sl_test_rng_seed(&rng, seed);
    log_reset();
    sl_pool_opts o = begin_book();
    o.max_workers = 1;
    o.priority_levels = 8;
    o.start_stopped = true;
    o.dispatch = k_dispatch[_i];
    sl_pool *p = new_pool(&o);
    const unsigned n = 400;
    for (unsigned i = 0; i < n; i++)
        CHECK_MSG(submit_logged(p, i, (unsigned)(sl_test_rng_next(&rng) % 8), 0) == SL_OK,
                  "submit %u", i);
    sl_test_sleep_ns(10 * MS);
    CHECK_MSG(atomic_load(&g_order_n) == 0, "%u jobs ran in a pool started stopped",
              atomic_load(&g_order_n));
    CHECK_MSG(sl_pool_start(p) == SL_OK, "start");
    settle(p, 1, SL_POOL_RUNNING);
    wait_idle_ok(p);
    check_priority_order(n, 0);
    end_book(p);
}
END_TEST

/* The same with a running pool whose one worker is held by a gate job. */
static void log_gate_job(void *arg, void *ctx)
{
    unsigned at = atomic_fetch_add(&g_order_n, 1);
    if (at < LOG_MAX)
        g_order[at] = UINT_MAX;
    gate_job(arg, ctx);
}

START_TEST(test_priority_order_gated)
{
    uint64_t seed = begin_test(SUITE, "priority_order_gated[%s]", k_dispatch_name[_i]);
    sl_test_rng rng;
    sl_test_rng_seed(&rng, seed);
    log_reset();
    sl_pool_opts o = begin_book();
    o.max_workers = 1;
    o.priority_levels = 8;
    o.dispatch = k_dispatch[_i];
    sl_pool *p = new_pool(&o);
    pool_gate g;
    gate_init(&g);
    CHECK_MSG(sl_pool_submit(p, log_gate_job, &g) == SL_OK, "submit gate");
    CHECK_MSG(gate_wait_entered(&g, 1, POOL_SOON_NS), "the gate job did not start");
    const unsigned n = 400;
    for (unsigned i = 0; i < n; i++)
        CHECK_MSG(submit_logged(p, i, (unsigned)(sl_test_rng_next(&rng) % 8), 0) == SL_OK,
                  "submit %u", i);
    gate_open(&g);
    wait_idle_ok(p);
    check_priority_order(n, 1);
    end_book(p);
    gate_destroy(&g);
}
END_TEST

/* ---- keys ---------------------------------------------------------------- */

/* One worker, stopped: key 7's jobs have rising priorities, key 8's falling,
 * keyless ones random. Each key runs in submission order; keyless jobs in
 * priority order among themselves. */
START_TEST(test_key_order_across_priorities)
{
    uint64_t seed = begin_test(SUITE, "key_order_across_priorities[%s]", k_dispatch_name[_i]);
    sl_test_rng rng;
    sl_test_rng_seed(&rng, seed);
    log_reset();
    sl_pool_opts o = begin_book();
    o.max_workers = 1;
    o.priority_levels = 8;
    o.start_stopped = true;
    o.dispatch = k_dispatch[_i];
    sl_pool *p = new_pool(&o);
    unsigned n = 0, k7 = 0, k8 = 0;
    for (unsigned round = 0; round < 8; round++) {
        CHECK_MSG(submit_logged(p, n++, round, 7) == SL_OK, "submit key 7");
        CHECK_MSG(submit_logged(p, n++, 7 - round, 8) == SL_OK, "submit key 8");
        for (int i = 0; i < 5; i++)
            CHECK_MSG(submit_logged(p, n++, (unsigned)(sl_test_rng_next(&rng) % 8), 0) == SL_OK,
                      "submit keyless");
        k7++;
        k8++;
    }
    CHECK_MSG(sl_pool_start(p) == SL_OK, "start");
    settle(p, 1, SL_POOL_RUNNING);
    wait_idle_ok(p);
    unsigned got = atomic_load(&g_order_n);
    CHECK_MSG(got == n, "%u of %u ran", got, n);
    unsigned last7 = UINT_MAX, last8 = UINT_MAX, lastfree = UINT_MAX;
    for (unsigned k = 0; k < got; k++) {
        unsigned j = g_order[k];
        uint64_t key = g_jobs[j].key;
        unsigned *last = key == 7 ? &last7 : key == 8 ? &last8 : &lastfree;
        if (*last != UINT_MAX) {
            if (key)
                CHECK_MSG(j > *last, "key %llu: job %u ran after job %u (submission order)",
                          ULL(key), j, *last);
            else
                CHECK_MSG(g_jobs[*last].prio > g_jobs[j].prio ||
                              (g_jobs[*last].prio == g_jobs[j].prio && *last < j),
                          "keyless job %u (priority %u) ran after job %u (priority %u)", j,
                          g_jobs[j].prio, *last, g_jobs[*last].prio);
        }
        *last = j;
    }
    (void)k7;
    (void)k8;
    end_book(p);
}
END_TEST

/* Key 1 is busy (its first job waits on a gate) and its next jobs, at the
 * highest priority, are first in line; the jobs of other keys and keyless
 * ones must still all run on the other worker. */
typedef struct busy_key_run {
    pool_gate gate;
    atomic_uint others_done;
    atomic_int key1_inflight;
    atomic_uint key1_step; /* 1: A ended, then B, C start in order */
    atomic_int a_ended;
} busy_key_run;
static busy_key_run g_bk;

static void bk_a(void *arg, void *ctx)
{
    (void)arg;
    book_job_begin(g_book, ctx);
    if (atomic_fetch_add(&g_bk.key1_inflight, 1) != 0)
        rec_fail("key 1: A overlapped another job of its key");
    gate_job(&g_bk.gate, ctx);
    atomic_store(&g_bk.a_ended, 1);
    atomic_fetch_sub(&g_bk.key1_inflight, 1);
}

static void bk_next(void *arg, void *ctx)
{
    book_job_begin(g_book, ctx);
    unsigned which = (unsigned)of_arg(arg); /* 1: B, 2: C */
    if (atomic_fetch_add(&g_bk.key1_inflight, 1) != 0)
        rec_fail("key 1: job %u overlapped another job of its key", which);
    if (!atomic_load(&g_bk.a_ended))
        rec_fail("key 1: job %u started before A ended", which);
    unsigned step = atomic_fetch_add(&g_bk.key1_step, 1) + 1;
    if (step != which)
        rec_fail("key 1: job %u ran as number %u (submission order)", which, step);
    atomic_fetch_sub(&g_bk.key1_inflight, 1);
}

static void bk_other(void *arg, void *ctx)
{
    (void)arg;
    book_job_begin(g_book, ctx);
    atomic_fetch_add(&g_bk.others_done, 1);
}

START_TEST(test_busy_key_holds_back_no_other)
{
    uint64_t seed = begin_test(SUITE, "busy_key_holds_back_no_other[%s]", k_dispatch_name[_i]);
    sl_test_rng rng;
    sl_test_rng_seed(&rng, seed);
    memset(&g_bk, 0, sizeof g_bk);
    gate_init(&g_bk.gate);
    sl_pool_opts o = begin_book();
    o.max_workers = 2;
    o.priority_levels = 4;
    o.dispatch = k_dispatch[_i];
    sl_pool *p = new_pool(&o);
    sl_job a = {.fn = bk_a, .key = 1};
    CHECK_MSG(sl_pool_submit_job(p, &a, 0) == SL_OK, "submit A");
    CHECK_MSG(gate_wait_entered(&g_bk.gate, 1, POOL_SOON_NS), "A did not start");
    for (uintptr_t w = 1; w <= 2; w++) {
        sl_job nx = {.fn = bk_next, .arg = as_arg(w), .key = 1, .priority = 3};
        CHECK_MSG(sl_pool_submit_job(p, &nx, 0) == SL_OK, "submit key 1's next");
    }
    const unsigned others = 60;
    for (unsigned i = 0; i < others; i++) {
        sl_job j = {.fn = bk_other,
                    .key = i % 3 == 0 ? 0 : 2 + i,
                    .priority = (unsigned)(sl_test_rng_next(&rng) % 3)};
        CHECK_MSG(sl_pool_submit_job(p, &j, 0) == SL_OK, "submit other %u", i);
    }
    bool all = wait_uint_ge(&g_bk.others_done, others, POOL_SOON_NS);
    unsigned done = atomic_load(&g_bk.others_done);
    CHECK_MSG(all, "only %u of %u jobs of other keys ran while key 1 was busy", done, others);
    CHECK_MSG(atomic_load(&g_bk.key1_step) == 0, "a job of key 1 ran while A held the key");
    gate_open(&g_bk.gate);
    wait_idle_ok(p);
    CHECK_MSG(atomic_load(&g_bk.key1_step) == 2, "%u of key 1's 2 waiting jobs ran",
              atomic_load(&g_bk.key1_step));
    end_book(p);
    gate_destroy(&g_bk.gate);
}
END_TEST

START_TEST(test_unique_keys)
{
    begin_test(SUITE, "unique_keys");
    sl_pool_opts o = begin_book();
    o.max_workers = 2;
    sl_pool *p = new_pool(&o);
    pool_gate g;
    gate_init(&g);
    atomic_uint n5 = 0, n6 = 0, n9 = 0;
    sl_job gate5 = {.fn = gate_job, .arg = &g, .key = 5, .flags = SL_JOB_UNIQUE};
    sl_job u5 = {.fn = count_job, .arg = &n5, .key = 5, .flags = SL_JOB_UNIQUE};
    sl_job plain5 = {.fn = count_job, .arg = &n5, .key = 5};
    sl_job u6 = {.fn = count_job, .arg = &n6, .key = 6, .flags = SL_JOB_UNIQUE};
    CHECK_MSG(sl_pool_submit_job(p, &gate5, 0) == SL_OK, "unique key 5, first");
    CHECK_MSG(gate_wait_entered(&g, 1, POOL_SOON_NS), "the gate job did not start");
    sl_status st = sl_pool_submit_job(p, &u5, 0);
    CHECK_MSG(st == SL_EXISTS, "unique key 5 while running: %s", sl_status_str(st));
    st = sl_pool_submit_job(p, &u5, 50 * MS);
    CHECK_MSG(st == SL_EXISTS, "unique key 5 while running, with a timeout: %s",
              sl_status_str(st));
    CHECK_MSG(sl_pool_submit_job(p, &plain5, 0) == SL_OK, "a plain job of key 5 refused");
    st = sl_pool_submit_job(p, &u5, SL_FOREVER);
    CHECK_MSG(st == SL_EXISTS, "unique key 5 while queued and running: %s", sl_status_str(st));
    CHECK_MSG(sl_pool_submit_job(p, &u6, 0) == SL_OK, "unique key 6 refused");
    CHECK_MSG(wait_uint_ge(&n6, 1, POOL_SOON_NS), "key 6 did not run beside busy key 5");
    sl_pool_stats s = stats_of(p);
    CHECK_MSG(s.submitted == 3, "stats.submitted %llu, want 3 (refused jobs are not counted)",
              ULL(s.submitted));
    gate_open(&g);
    wait_idle_ok(p);
    CHECK_MSG(atomic_load(&n5) == 1, "key 5: %u counting jobs ran, want 1", atomic_load(&n5));
    st = sl_pool_submit_job(p, &u5, 0);
    CHECK_MSG(st == SL_OK, "unique key 5 after its jobs finished: %s", sl_status_str(st));
    wait_idle_ok(p);
    CHECK_MSG(atomic_load(&n5) == 2, "key 5: %u counting jobs ran, want 2", atomic_load(&n5));

    /* Queued in a stopped pool; a reset releases the key. */
    CHECK_MSG(sl_pool_stop(p) == SL_OK, "stop");
    settle(p, 1, SL_POOL_STOPPED);
    sl_job u9 = {.fn = count_job, .arg = &n9, .key = 9, .flags = SL_JOB_UNIQUE};
    CHECK_MSG(sl_pool_submit_job(p, &u9, 0) == SL_OK, "unique key 9 while stopped");
    st = sl_pool_submit_job(p, &u9, 0);
    CHECK_MSG(st == SL_EXISTS, "unique key 9 while queued: %s", sl_status_str(st));
    CHECK_MSG(sl_pool_reset(p) == SL_OK, "reset");
    settle(p, 2, SL_POOL_STOPPED);
    CHECK_MSG(book_discards(g_book, SL_DISCARD_RESET) == 1, "%u discarded by the reset",
              book_discards(g_book, SL_DISCARD_RESET));
    st = sl_pool_submit_job(p, &u9, 0);
    CHECK_MSG(st == SL_OK, "unique key 9 after a reset discarded its job: %s", sl_status_str(st));
    CHECK_MSG(sl_pool_start(p) == SL_OK, "start");
    settle(p, 3, SL_POOL_RUNNING);
    wait_idle_ok(p);
    CHECK_MSG(atomic_load(&n9) == 1, "key 9 ran %u times, want 1", atomic_load(&n9));
    CHECK_MSG(atomic_load(&g_book->discards) == 1, "%u discards, want 1 (the reset's)",
              atomic_load(&g_book->discards));
    end_book(p);
    gate_destroy(&g);
}
END_TEST

/* A unique job whose key is queued, submitted to a full bounded queue: it
 * is refused with SL_EXISTS at once, as with room. It once reserved room
 * first, so it waited for room it would not use: SL_TIMEDOUT after its
 * timeout, and a submit without one blocked until a job left (planted bug
 * POOL_UNIQUE_WAITS_FOR_ROOM). */
START_TEST(test_unique_refused_when_full)
{
    begin_test(SUITE, "unique_refused_when_full");
    sl_pool_opts o = {.max_workers = 1, .queue_capacity = 1, .start_stopped = true};
    sl_pool *p = new_pool(&o);
    atomic_uint n = 0;
    sl_job u4 = {.fn = count_job, .arg = &n, .key = 4, .flags = SL_JOB_UNIQUE};
    sl_job u5 = {.fn = count_job, .arg = &n, .key = 5, .flags = SL_JOB_UNIQUE};
    CHECK_MSG(sl_pool_submit_job(p, &u4, 0) == SL_OK, "unique key 4 into the empty queue");
    sl_status st = sl_pool_submit_job(p, &u4, 0);
    CHECK_MSG(st == SL_EXISTS, "unique key 4 again, full, no timeout: %s", sl_status_str(st));
    st = sl_pool_submit_job(p, &u4, 50 * MS);
    CHECK_MSG(st == SL_EXISTS, "unique key 4 again, full, 50 ms: %s", sl_status_str(st));
    st = sl_pool_submit_job(p, &u5, 0);
    CHECK_MSG(st == SL_TIMEDOUT, "unique key 5, full: %s, want SL_TIMEDOUT", sl_status_str(st));
    CHECK_MSG(sl_pool_start(p) == SL_OK, "start");
    CHECK_MSG(sl_pool_wait_idle(p, 2 * SEC) == SL_OK, "wait_idle");
    CHECK_MSG(atomic_load(&n) == 1, "%u jobs ran, want 1", atomic_load(&n));
    st = sl_pool_submit_job(p, &u4, 0);
    CHECK_MSG(st == SL_OK, "unique key 4 after its job ran: %s", sl_status_str(st));
    CHECK_MSG(sl_pool_wait_idle(p, 2 * SEC) == SL_OK, "wait_idle");
    sl_pool_free(p);
    CHECK_MSG(atomic_load(&n) == 2, "%u jobs ran, want 2", atomic_load(&n));
    ASSERT_CLEAN();
}
END_TEST

/* The key table gives its memory back after a burst: 5000 distinct keys
 * queued at once grow it past 8192 slots; once their jobs have run it is
 * back at its first size. It never shrank (planted bug
 * POOL_KEYS_NEVER_SHRINK): a burst's table stayed for the pool's life. */
static size_t key_slots(sl_pool *p)
{
    pthread_mutex_lock(&p->keys.lock);
    size_t n = p->keys.mask + 1;
    pthread_mutex_unlock(&p->keys.lock);
    return n;
}

START_TEST(test_keys_table_shrinks)
{
    begin_test(SUITE, "keys_table_shrinks");
    sl_pool_opts o = {.max_workers = 2, .start_stopped = true};
    sl_pool *p = new_pool(&o);
    atomic_uint n = 0;
    size_t first = key_slots(p);
    for (uint64_t k = 1; k <= 5000; k++) {
        sl_job j = {.fn = count_job, .arg = &n, .key = k * 7919};
        CHECK_MSG(sl_pool_submit_job(p, &j, 0) == SL_OK, "keyed job %llu", ULL(k));
    }
    size_t grown = key_slots(p);
    CHECK_MSG(grown >= 8192, "%zu slots for 5000 keys", grown);
    CHECK_MSG(sl_pool_start(p) == SL_OK, "start");
    CHECK_MSG(sl_pool_wait_idle(p, 10 * SEC) == SL_OK, "wait_idle");
    CHECK_MSG(atomic_load(&n) == 5000, "%u jobs ran, want 5000", atomic_load(&n));
    size_t after = key_slots(p);
    CHECK_MSG(after == first, "%zu slots after the burst (%zu at its height), want %zu", after,
              grown, first);
    sl_job j = {.fn = count_job, .arg = &n, .key = 3, .flags = SL_JOB_UNIQUE};
    CHECK_MSG(sl_pool_submit_job(p, &j, 0) == SL_OK, "a keyed job after the shrink");
    CHECK_MSG(sl_pool_wait_idle(p, 2 * SEC) == SL_OK, "wait_idle");
    sl_pool_free(p);
    CHECK_MSG(atomic_load(&n) == 5001, "%u jobs ran, want 5001", atomic_load(&n));
    ASSERT_CLEAN();
}
END_TEST

/* ---- pause --------------------------------------------------------------- */

static atomic_int g_paused; /* set once stop has completed, cleared before start */

static void pause_job(void *arg, void *ctx)
{
    book_job_begin(g_book, ctx);
    if (atomic_load(&g_paused))
        rec_fail("a job started in a stopped pool");
    atomic_fetch_add((atomic_uint *)arg, 1);
}

START_TEST(test_pause_and_resume)
{
    begin_test(SUITE, "pause_and_resume");
    atomic_store(&g_paused, 0);
    sl_pool_opts o = begin_book();
    o.max_workers = 2;
    sl_pool *p = new_pool(&o);
    CHECK_MSG(sl_pool_ready(p) && sl_pool_wait_ready(p, 0) == SL_OK &&
                  sl_pool_wait_ready(p, SL_FOREVER) == SL_OK,
              "a new pool is not ready");
    pool_gate g;
    gate_init(&g);
    CHECK_MSG(sl_pool_submit(p, gate_job, &g) == SL_OK, "submit gate");
    CHECK_MSG(gate_wait_entered(&g, 1, POOL_SOON_NS), "the gate job did not start");
    CHECK_MSG(sl_pool_stop(p) == SL_OK, "stop");
    /* The gate job still runs: stop has not completed. */
    CHECK_MSG(!sl_pool_ready(p), "stop completed while a job runs");
    CHECK_MSG(stats_of(p).busy, "stats.busy false while stop is in progress");
    uint64_t t0 = sl_test_now_ns();
    sl_status st = sl_pool_wait_ready(p, 30 * MS);
    uint64_t waited = sl_test_now_ns() - t0;
    CHECK_MSG(st == SL_TIMEDOUT, "wait_ready(30 ms) during stop = %s", sl_status_str(st));
    CHECK_MSG(waited >= 30 * MS, "wait_ready(30 ms) returned after %llu ns", ULL(waited));
    CHECK_MSG(sl_pool_wait_ready(p, 0) == SL_TIMEDOUT, "wait_ready(0) during stop");
    st = sl_pool_set_workers(p, 1);
    CHECK_MSG(st == SL_BUSY, "set_workers during stop = %s", sl_status_str(st));
    st = sl_pool_shutdown(p, SL_DRAIN);
    CHECK_MSG(st == SL_BUSY, "shutdown during stop = %s", sl_status_str(st));
    st = sl_pool_start(p);
    CHECK_MSG(st == SL_BUSY || st == SL_EINVAL, "start during stop = %s", sl_status_str(st));
    st = sl_pool_reset(p);
    CHECK_MSG(st == SL_BUSY || st == SL_EINVAL, "reset during stop = %s", sl_status_str(st));
    /* Jobs submitted after stop wait, although a worker is free. */
    atomic_uint n = 0;
    for (int i = 0; i < 10; i++)
        CHECK_MSG(sl_pool_submit(p, pause_job, &n) == SL_OK, "submit while stopping");
    sl_test_sleep_ns(30 * MS);
    CHECK_MSG(atomic_load(&n) == 0, "%u jobs submitted after stop started before start",
              atomic_load(&n));
    gate_open(&g);
    st = sl_pool_wait_ready(p, SL_FOREVER);
    CHECK_MSG(st == SL_OK, "wait_ready(FOREVER) once the stop can complete = %s",
              sl_status_str(st));
    settle(p, 1, SL_POOL_STOPPED);
    atomic_store(&g_paused, 1);
    sl_pool_stats s = stats_of(p);
    CHECK_MSG(s.state == SL_POOL_STOPPED && s.running == 0 && s.queued == 10 && !s.busy,
              "stopped: state %s running %u queued %llu busy %d", state_name((int)s.state),
              s.running, ULL(s.queued), s.busy);
    CHECK_MSG(sl_pool_wait_idle(p, 20 * MS) == SL_TIMEDOUT,
              "wait_idle on a stopped pool with queued jobs");
    CHECK_MSG(wait_parked(p, 2, POOL_SOON_NS, &s), "stopped: %u workers, %u parked", s.workers,
              s.parked);
    for (int i = 0; i < 5; i++)
        CHECK_MSG(sl_pool_submit(p, pause_job, &n) == SL_OK, "submit while stopped");
    sl_test_sleep_ns(50 * MS);
    CHECK_MSG(atomic_load(&n) == 0 && stats_of(p).queued == 15, "%u jobs ran while stopped",
              atomic_load(&n));
    atomic_store(&g_paused, 0);
    CHECK_MSG(sl_pool_start(p) == SL_OK, "start");
    settle(p, 2, SL_POOL_RUNNING);
    wait_idle_ok(p);
    CHECK_MSG(atomic_load(&n) == 15, "%u of 15 ran after start", atomic_load(&n));
    CHECK_MSG(book_states(g_book) == 2 && atomic_load(&g_book->state_by[SL_POOL_STOPPED]) == 1 &&
                  atomic_load(&g_book->state_by[SL_POOL_RUNNING]) == 1,
              "on_state: %u calls", book_states(g_book));
    end_book(p);
    gate_destroy(&g);
}
END_TEST

/* ---- reset, shutdown, free ----------------------------------------------- */

typedef struct discard_rec {
    atomic_uint times;
    atomic_int why;
} discard_rec;
static discard_rec g_drec[LOG_MAX];

/* Checks the job on_discard got is one this test submitted, with its fields. */
static void record_discard(pool_book *b, const sl_job *job, sl_discard why)
{
    (void)b;
    uintptr_t i = of_arg(job->arg);
    if (job->fn != g_log_fn || i >= LOG_MAX) {
        rec_fail("on_discard got a job this test did not submit (arg %p)", job->arg);
        return;
    }
    if (job->priority != g_jobs[i].prio || job->key != g_jobs[i].key || job->flags != 0)
        rec_fail("on_discard got job %u as priority %u key %llu flags %u, submitted as %u %llu 0",
                 (unsigned)i, job->priority, ULL(job->key), job->flags, g_jobs[i].prio,
                 ULL(g_jobs[i].key));
    if (atomic_fetch_add(&g_drec[i].times, 1) != 0)
        rec_fail("job %u discarded twice", (unsigned)i);
    atomic_store(&g_drec[i].why, (int)why);
}

static void drec_reset(void)
{
    for (int i = 0; i < LOG_MAX; i++) {
        atomic_store(&g_drec[i].times, 0);
        atomic_store(&g_drec[i].why, 0);
    }
}

/* Each of jobs [0, n) discarded exactly once, for `why`; none ran. */
static void check_all_discarded(unsigned n, sl_discard why)
{
    for (unsigned i = 0; i < n; i++) {
        CHECK_MSG(atomic_load(&g_drec[i].times) == 1, "job %u discarded %u times", i,
                  atomic_load(&g_drec[i].times));
        CHECK_MSG(atomic_load(&g_drec[i].why) == (int)why, "job %u discarded as %s, want %s", i,
                  discard_name(atomic_load(&g_drec[i].why)), discard_name((int)why));
    }
    CHECK_MSG(atomic_load(&g_order_n) == 0, "%u discarded jobs ran", atomic_load(&g_order_n));
}

static sl_pool *stopped_pool_with_jobs(unsigned workers, unsigned n, uint64_t seed)
{
    sl_test_rng rng;
    sl_test_rng_seed(&rng, seed);
    log_reset();
    drec_reset();
    sl_pool_opts o = begin_book();
    g_book->on_discard = record_discard;
    o.max_workers = workers;
    o.priority_levels = 4;
    o.start_stopped = true;
    sl_pool *p = new_pool(&o);
    for (unsigned i = 0; i < n; i++) {
        uint64_t key = sl_test_rng_next(&rng) % 3 == 0 ? 1 + sl_test_rng_next(&rng) % 4 : 0;
        CHECK_MSG(submit_logged(p, i, (unsigned)(sl_test_rng_next(&rng) % 4), key) == SL_OK,
                  "submit %u", i);
    }
    return p;
}

START_TEST(test_reset_discards_queued)
{
    uint64_t seed = begin_test(SUITE, "reset_discards_queued");
    const unsigned n = 40;
    sl_pool *p = stopped_pool_with_jobs(2, n, seed);
    CHECK_MSG(stats_of(p).queued == n, "queued %llu", ULL(stats_of(p).queued));
    CHECK_MSG(sl_pool_reset(p) == SL_OK, "reset");
    settle(p, 1, SL_POOL_STOPPED);
    check_all_discarded(n, SL_DISCARD_RESET);
    sl_pool_stats s = stats_of(p);
    CHECK_MSG(s.queued == 0 && s.discarded == n && s.submitted == n && s.completed == 0,
              "after reset: queued %llu discarded %llu submitted %llu completed %llu",
              ULL(s.queued), ULL(s.discarded), ULL(s.submitted), ULL(s.completed));
    CHECK_MSG(sl_pool_reset(p) == SL_OK, "reset of an empty queue");
    settle(p, 2, SL_POOL_STOPPED);
    CHECK_MSG(sl_pool_start(p) == SL_OK, "start");
    settle(p, 3, SL_POOL_RUNNING);
    sl_test_sleep_ns(20 * MS);
    CHECK_MSG(atomic_load(&g_order_n) == 0, "a discarded job ran after start");
    atomic_uint k = 0;
    CHECK_MSG(submit_count(p, &k) == SL_OK, "submit after reset");
    wait_idle_ok(p);
    CHECK_MSG(atomic_load(&k) == 1 && atomic_load(&g_book->discards) == n, "ran %u, discards %u",
              atomic_load(&k), atomic_load(&g_book->discards));
    end_book(p);
}
END_TEST

/* A reset whose own discards submit (callbacks may): each discarded job
 * queued before the reset submits one new job where the sweep's pops come
 * first — a higher level (case 0), or inbox 0 among the inboxes the
 * control thread feeds in turn (case 1). Every job queued before the reset
 * must still reach on_discard and never run; the new ones are concurrent
 * with it and may go either way, exactly once. (A sweep that counted the
 * jobs queued when it began and spent the count in pop order took the
 * newcomers instead of half the old jobs, which then ran after the start.) */
#define RESET_OLD 64u
typedef struct reset_race {
    sl_pool *pool;
    unsigned new_level;
    atomic_uint old_discarded, old_ran, new_submitted, new_discarded, new_ran, failed;
} reset_race;
static reset_race *g_race;

static void reset_race_job(void *arg, void *ctx)
{
    (void)ctx;
    atomic_fetch_add(of_arg(arg) < RESET_OLD ? &g_race->old_ran : &g_race->new_ran, 1);
}

static void reset_race_discard(const sl_job *job, sl_discard why, void *user)
{
    reset_race *r = user;
    if (why != SL_DISCARD_RESET)
        atomic_fetch_add(&r->failed, 1);
    if (of_arg(job->arg) >= RESET_OLD) {
        atomic_fetch_add(&r->new_discarded, 1);
        return;
    }
    atomic_fetch_add(&r->old_discarded, 1);
    uintptr_t k = RESET_OLD + atomic_fetch_add(&r->new_submitted, 1);
    sl_job j = {.fn = reset_race_job, .arg = as_arg(k), .priority = r->new_level};
    if (sl_pool_submit_job(r->pool, &j, SL_FOREVER) != SL_OK)
        atomic_fetch_add(&r->failed, 1);
}

START_TEST(test_reset_discards_what_came_before)
{
    begin_test(SUITE, "reset_discards_what_came_before[%s]", _i ? "round-robin" : "levels");
    reset_race r = {.new_level = _i ? 0 : 1};
    g_race = &r;
    sl_pool_opts o = {.max_workers = 2, .start_stopped = true, .on_discard = reset_race_discard,
                      .user = &r, .priority_levels = _i ? 1 : 2,
                      .dispatch = _i ? SL_DISPATCH_ROUND_ROBIN : SL_DISPATCH_SHARED};
    r.pool = new_pool(&o);
    for (uintptr_t i = 0; i < RESET_OLD; i++) {
        sl_job j = {.fn = reset_race_job, .arg = as_arg(i), .priority = 0};
        CHECK_MSG(sl_pool_submit_job(r.pool, &j, SL_FOREVER) == SL_OK, "submit %u", (unsigned)i);
    }
    CHECK_MSG(sl_pool_reset(r.pool) == SL_OK, "reset");
    sl_status st = sl_pool_wait_ready(r.pool, POOL_SOON_NS);
    CHECK_MSG(st == SL_OK, "wait_ready after the reset = %s", sl_status_str(st));
    unsigned old_discarded = atomic_load(&r.old_discarded);
    CHECK_MSG(sl_pool_start(r.pool) == SL_OK, "start");
    wait_idle_ok(r.pool);
    unsigned old_ran = atomic_load(&r.old_ran), newcomers = atomic_load(&r.new_submitted);
    unsigned new_seen = atomic_load(&r.new_discarded) + atomic_load(&r.new_ran);
    sl_pool_free(r.pool);
    g_race = NULL;
    CHECK_MSG(atomic_load(&r.failed) == 0, "a discard for another reason, or a refused submit");
    CHECK_MSG(old_discarded == RESET_OLD && old_ran == 0,
              "of %u jobs queued before the reset, %u discarded by it and %u ran after the "
              "start", RESET_OLD, old_discarded, old_ran);
    CHECK_MSG(newcomers == RESET_OLD && new_seen == newcomers,
              "%u jobs submitted during the reset, %u discarded or run", newcomers, new_seen);
}
END_TEST

START_TEST(test_shutdown_drain_from_stopped)
{
    uint64_t seed = begin_test(SUITE, "shutdown_drain_from_stopped");
    const unsigned n = 60;
    sl_pool *p = stopped_pool_with_jobs(2, n, seed);
    CHECK_MSG(sl_pool_shutdown(p, SL_DRAIN) == SL_OK, "shutdown(DRAIN)");
    atomic_uint k = 0;
    CHECK_MSG(submit_count(p, &k) == SL_CLOSED, "submit after shutdown");
    settle(p, 1, SL_POOL_SHUTDOWN);
    CHECK_MSG(atomic_load(&g_order_n) == n, "%u of %u queued jobs ran", atomic_load(&g_order_n),
              n);
    CHECK_MSG(atomic_load(&g_book->discards) == 0, "%u discarded by a drain",
              atomic_load(&g_book->discards));
    sl_pool_stats s;
    CHECK_MSG(wait_workers(p, 0, POOL_SOON_NS, &s), "%u workers after shutdown", s.workers);
    CHECK_MSG(s.state == SL_POOL_SHUTDOWN && s.completed == n && s.queued == 0 && s.running == 0,
              "state %s completed %llu queued %llu", state_name((int)s.state), ULL(s.completed),
              ULL(s.queued));
    CHECK_MSG(atomic_load(&k) == 0, "a refused job ran");
    CHECK_MSG(book_states(g_book) == 1, "%u on_state calls", book_states(g_book));
    end_book(p);
}
END_TEST

START_TEST(test_shutdown_cancel)
{
    uint64_t seed = begin_test(SUITE, "shutdown_cancel");
    sl_test_rng rng;
    sl_test_rng_seed(&rng, seed);
    log_reset();
    drec_reset();
    sl_pool_opts o = begin_book();
    g_book->on_discard = record_discard;
    o.max_workers = 2;
    o.priority_levels = 4;
    sl_pool *p = new_pool(&o);
    pool_gate g;
    gate_init(&g);
    for (int i = 0; i < 2; i++)
        CHECK_MSG(sl_pool_submit(p, gate_job, &g) == SL_OK, "submit gate");
    CHECK_MSG(gate_wait_entered(&g, 2, POOL_SOON_NS), "the gate jobs did not start");
    const unsigned n = 30;
    for (unsigned i = 0; i < n; i++)
        CHECK_MSG(submit_logged(p, i, (unsigned)(sl_test_rng_next(&rng) % 4), i % 4) == SL_OK,
                  "submit %u", i);
    CHECK_MSG(sl_pool_shutdown(p, SL_CANCEL) == SL_OK, "shutdown(CANCEL)");
    atomic_uint k = 0;
    CHECK_MSG(submit_count(p, &k) == SL_CLOSED, "submit after shutdown");
    sl_test_sleep_ns(20 * MS);
    CHECK_MSG(!sl_pool_ready(p), "shutdown completed while two jobs still run");
    CHECK_MSG(gate_left(&g) == 0, "a running job was cut short");
    gate_open(&g);
    settle(p, 1, SL_POOL_SHUTDOWN);
    CHECK_MSG(gate_left(&g) == 2, "%u of the 2 running jobs finished", gate_left(&g));
    check_all_discarded(n, SL_DISCARD_CANCELLED);
    CHECK_MSG(atomic_load(&g_book->discards) == n, "%u discards, want %u",
              atomic_load(&g_book->discards), n);
    sl_pool_stats s = stats_of(p);
    CHECK_MSG(s.completed == 2 && s.discarded == n && s.submitted == n + 2 && s.queued == 0,
              "completed %llu discarded %llu submitted %llu queued %llu", ULL(s.completed),
              ULL(s.discarded), ULL(s.submitted), ULL(s.queued));
    end_book(p);
    gate_destroy(&g);
}
END_TEST

static atomic_int g_slow_done;
static void slow_job(void *arg, void *ctx)
{
    (void)arg;
    book_job_begin(g_book, ctx);
    sl_test_sleep_ns(200 * MS);
    atomic_store(&g_slow_done, 1);
}

/* _i 0: free a stopped pool with queued jobs; 1: free while a job runs and
 * jobs wait; 2: the same while a stop is in progress. */
START_TEST(test_free_discards_queued)
{
    static const char *const what[] = {"stopped", "running", "stopping"};
    uint64_t seed = begin_test(SUITE, "free_discards_queued[%s]", what[_i]);
    const unsigned n = 30;
    atomic_store(&g_slow_done, 0);
    sl_pool *p;
    if (_i == 0) {
        p = stopped_pool_with_jobs(2, n, seed);
    } else {
        log_reset();
        drec_reset();
        sl_pool_opts o = begin_book();
        g_book->on_discard = record_discard;
        o.max_workers = 1;
        p = new_pool(&o);
        CHECK_MSG(sl_pool_submit(p, slow_job, NULL) == SL_OK, "submit slow");
        CHECK_MSG(wait_u64_ge(&g_book->jobs_run, 1, POOL_SOON_NS), "the slow job did not start");
        for (unsigned i = 0; i < n; i++)
            CHECK_MSG(submit_logged(p, i, 0, 0) == SL_OK, "submit %u", i);
        if (_i == 2)
            CHECK_MSG(sl_pool_stop(p) == SL_OK, "stop");
    }
    sl_pool_free(p);
    if (_i > 0)
        CHECK_MSG(atomic_load(&g_slow_done) == 1, "sl_pool_free returned before a running job "
                                                  "finished");
    /* The one worker may have taken a few jobs before free. */
    unsigned ran = atomic_load(&g_order_n), discarded = atomic_load(&g_book->discards);
    CHECK_MSG(ran + discarded == n, "%u ran + %u discarded != %u accepted", ran, discarded, n);
    CHECK_MSG(book_discards(g_book, SL_DISCARD_CANCELLED) == discarded,
              "sl_pool_free discarded with another reason than CANCELLED");
    if (_i != 1)
        CHECK_MSG(ran == 0, "%u jobs ran although the pool was stopped", ran);
    for (unsigned i = 0; i < n; i++)
        CHECK_MSG(atomic_load(&g_drec[i].times) <= 1, "job %u discarded twice", i);
    book_check_closed(g_book);
    ASSERT_CLEAN();
    book_free(g_book);
    g_book = NULL;
}
END_TEST

static void sleepy_count_job(void *arg, void *ctx)
{
    book_job_begin(g_book, ctx);
    sl_test_sleep_ns(100000);
    atomic_fetch_add((atomic_uint *)arg, 1);
}

START_TEST(test_wait_idle)
{
    begin_test(SUITE, "wait_idle");
    sl_pool_opts o = begin_book();
    o.max_workers = 3;
    sl_pool *p = new_pool(&o);
    CHECK_MSG(sl_pool_wait_idle(p, 0) == SL_OK, "wait_idle(0) on a new pool");
    atomic_uint n = 0;
    for (int i = 0; i < 200; i++)
        CHECK_MSG(sl_pool_submit(p, sleepy_count_job, &n) == SL_OK, "submit");
    CHECK_MSG(sl_pool_wait_idle(p, SL_FOREVER) == SL_OK, "wait_idle(FOREVER)");
    CHECK_MSG(atomic_load(&n) == 200, "wait_idle returned with %u of 200 done", atomic_load(&n));
    sl_pool_stats s = stats_of(p);
    CHECK_MSG(s.queued == 0 && s.running == 0 && s.completed == 200, "queued %llu running %u "
              "completed %llu", ULL(s.queued), s.running, ULL(s.completed));
    pool_gate g;
    gate_init(&g);
    CHECK_MSG(sl_pool_submit(p, gate_job, &g) == SL_OK, "submit gate");
    uint64_t t0 = sl_test_now_ns();
    sl_status st = sl_pool_wait_idle(p, 30 * MS);
    uint64_t waited = sl_test_now_ns() - t0;
    CHECK_MSG(st == SL_TIMEDOUT && waited >= 30 * MS, "wait_idle(30 ms) with a job held: %s "
              "after %llu ns", sl_status_str(st), ULL(waited));
    CHECK_MSG(sl_pool_wait_idle(p, 0) == SL_TIMEDOUT, "wait_idle(0) with a job held");
    gate_open(&g);
    wait_idle_ok(p);
    end_book(p);
    gate_destroy(&g);
}
END_TEST

/* ---- set_workers --------------------------------------------------------- */

/* Holds k gate jobs: after a window, exactly `want` of them have entered. */
static void expect_concurrency(sl_pool *p, unsigned k, unsigned want, const char *when)
{
    pool_gate g;
    gate_init(&g);
    for (unsigned i = 0; i < k; i++)
        CHECK_MSG(sl_pool_submit(p, gate_job, &g) == SL_OK, "submit gate");
    bool reached = gate_wait_entered(&g, want, POOL_SOON_NS);
    sl_test_sleep_ns(50 * MS);
    unsigned in = gate_entered(&g);
    gate_open(&g);
    wait_idle_ok(p);
    gate_destroy(&g);
    CHECK_MSG(reached && in == want, "%s: %u of %u gate jobs ran at once, want %u", when, in, k,
              want);
}

START_TEST(test_set_workers_running)
{
    begin_test(SUITE, "set_workers_running");
    sl_pool_opts o = begin_book();
    o.max_workers = 4;
    o.active_workers = 1;
    sl_pool *p = new_pool(&o);
    sl_pool_stats s;
    CHECK_MSG(wait_workers(p, 1, POOL_SOON_NS, &s) && s.target == 1, "workers %u target %u",
              s.workers, s.target);
    expect_concurrency(p, 3, 1, "target 1");
    CHECK_MSG(sl_pool_set_workers(p, 4) == SL_OK, "set_workers(4)");
    settle(p, 1, SL_POOL_RUNNING);
    s = stats_of(p);
    CHECK_MSG(s.workers == 4 && s.target == 4, "grown to 4: workers %u target %u", s.workers,
              s.target);
    expect_concurrency(p, 4, 4, "target 4");
    /* Shrink while every worker runs a job: completes once they finished. */
    pool_gate g;
    gate_init(&g);
    for (int i = 0; i < 4; i++)
        CHECK_MSG(sl_pool_submit(p, gate_job, &g) == SL_OK, "submit gate");
    CHECK_MSG(gate_wait_entered(&g, 4, POOL_SOON_NS), "4 gate jobs did not start");
    CHECK_MSG(sl_pool_set_workers(p, 2) == SL_OK, "set_workers(2)");
    sl_test_sleep_ns(20 * MS);
    CHECK_MSG(!sl_pool_ready(p), "shrinking completed while the extra workers run jobs");
    atomic_uint n = 0;
    for (int i = 0; i < 100; i++)
        CHECK_MSG(submit_count(p, &n) == SL_OK, "submit during shrink");
    gate_open(&g);
    settle(p, 2, SL_POOL_RUNNING);
    s = stats_of(p);
    CHECK_MSG(s.workers == 2 && s.target == 2, "shrunk to 2: workers %u target %u", s.workers,
              s.target);
    CHECK_MSG(s.retired == 2, "stats.retired %llu, want 2", ULL(s.retired));
    wait_idle_ok(p);
    CHECK_MSG(atomic_load(&n) == 100, "%u of 100 ran", atomic_load(&n));
    expect_concurrency(p, 3, 2, "target 2");
    s = stats_of(p);
    CHECK_MSG(s.completed == s.submitted && s.discarded == 0, "completed %llu of %llu",
              ULL(s.completed), ULL(s.submitted));
    CHECK_MSG(s.spawned == book_inits(g_book) && book_finis(g_book) == 2,
              "spawned %llu, inits %u, finis %u", ULL(s.spawned), book_inits(g_book),
              book_finis(g_book));
    end_book(p);
    gate_destroy(&g);
}
END_TEST

START_TEST(test_set_workers_stopped)
{
    begin_test(SUITE, "set_workers_stopped");
    sl_pool_opts o = begin_book();
    o.max_workers = 4;
    o.active_workers = 2;
    sl_pool *p = new_pool(&o);
    sl_pool_stats s;
    CHECK_MSG(wait_workers(p, 2, POOL_SOON_NS, &s), "workers %u", s.workers);
    CHECK_MSG(sl_pool_stop(p) == SL_OK, "stop");
    settle(p, 1, SL_POOL_STOPPED);
    CHECK_MSG(sl_pool_set_workers(p, 4) == SL_OK, "set_workers(4) while stopped");
    settle(p, 2, SL_POOL_STOPPED);
    CHECK_MSG(stats_of(p).target == 4, "target %u", stats_of(p).target);
    pool_gate g;
    gate_init(&g);
    atomic_uint n = 0;
    for (int i = 0; i < 4; i++)
        CHECK_MSG(sl_pool_submit(p, gate_job, &g) == SL_OK, "submit gate while stopped");
    for (int i = 0; i < 50; i++)
        CHECK_MSG(submit_count(p, &n) == SL_OK, "submit while stopped");
    sl_test_sleep_ns(20 * MS);
    CHECK_MSG(gate_entered(&g) == 0, "a job ran while stopped");
    CHECK_MSG(sl_pool_start(p) == SL_OK, "start");
    settle(p, 3, SL_POOL_RUNNING);
    CHECK_MSG(gate_wait_entered(&g, 4, POOL_SOON_NS), "%u of 4 gate jobs ran at once after "
              "growing while stopped", gate_entered(&g));
    CHECK_MSG(stats_of(p).workers == 4, "workers %u", stats_of(p).workers);
    gate_open(&g);
    wait_idle_ok(p);
    CHECK_MSG(atomic_load(&n) == 50, "%u of 50 ran", atomic_load(&n));
    CHECK_MSG(sl_pool_stop(p) == SL_OK, "stop");
    settle(p, 4, SL_POOL_STOPPED);
    for (int i = 0; i < 50; i++)
        CHECK_MSG(submit_count(p, &n) == SL_OK, "submit while stopped");
    CHECK_MSG(sl_pool_set_workers(p, 1) == SL_OK, "set_workers(1) while stopped");
    settle(p, 5, SL_POOL_STOPPED);
    s = stats_of(p);
    CHECK_MSG(s.workers == 1 && s.target == 1 && s.retired == 3 && s.queued == 50,
              "shrunk while stopped: workers %u target %u retired %llu queued %llu", s.workers,
              s.target, ULL(s.retired), ULL(s.queued));
    CHECK_MSG(atomic_load(&n) == 50, "a job ran while stopped");
    CHECK_MSG(sl_pool_start(p) == SL_OK, "start");
    settle(p, 6, SL_POOL_RUNNING);
    wait_idle_ok(p);
    CHECK_MSG(atomic_load(&n) == 100, "%u of 100 ran", atomic_load(&n));
    expect_concurrency(p, 2, 1, "target 1");
    end_book(p);
    gate_destroy(&g);
}
END_TEST

/* ---- worker death -------------------------------------------------------- */

typedef struct death_run {
    atomic_uint after_key;     /* the job of the dead job's key that follows it */
    atomic_uint others;
    atomic_int died_ran_on;    /* worker id the dying job ran on */
    atomic_uint survived;      /* a dying job returned */
    atomic_uint died_seen;     /* on_discard(WORKER_DIED) of the dying job */
    atomic_uint resubmitted;   /* on_discard resubmitted the job's retry */
    bool cancel;
    sl_pool *pool;
} death_run;
static death_run g_dr;

static void dying_job(void *arg, void *ctx)
{
    (void)arg;
    pool_wctx *c = book_job_begin(g_book, ctx);
    atomic_store(&g_dr.died_ran_on, c ? (int)c->id : -1);
    if (g_dr.cancel) {
        pthread_cancel(pthread_self());
        pthread_testcancel();
    } else {
        pthread_exit(NULL);
    }
    atomic_fetch_add(&g_dr.survived, 1);
}

static void after_job(void *arg, void *ctx)
{
    book_job_begin(g_book, ctx);
    atomic_fetch_add((atomic_uint *)arg, 1);
}

static void retry_job(void *arg, void *ctx)
{
    (void)arg;
    book_job_begin(g_book, ctx);
    atomic_fetch_add(&g_dr.resubmitted, 1);
}

/* on_discard: the dying job, once, for WORKER_DIED; its retry is submitted
 * from the callback (a pool thread). */
static void death_discard(pool_book *b, const sl_job *job, sl_discard why)
{
    (void)b;
    if (job->fn != dying_job || job->key != 42 || why != SL_DISCARD_WORKER_DIED) {
        rec_fail("on_discard(%s) of an unexpected job (key %llu)", discard_name((int)why),
                 ULL(job->key));
        return;
    }
    if (atomic_fetch_add(&g_dr.died_seen, 1) != 0)
        rec_fail("the dead job reached on_discard twice");
    sl_status st = sl_pool_submit(g_dr.pool, retry_job, NULL);
    if (st != SL_OK)
        rec_fail("submit from on_discard = %s", sl_status_str(st));
}

/* _i: bit 0 cancellation instead of pthread_exit; bit 1 one worker instead
 * of two. */
START_TEST(test_worker_death)
{
    bool cancel = _i & 1;
    unsigned workers = (_i & 2) ? 1 : 2;
    begin_test(SUITE, "worker_death[%s, %u workers]", cancel ? "cancel" : "pthread_exit",
               workers);
    memset(&g_dr, 0, sizeof g_dr);
    g_dr.cancel = cancel;
    atomic_store(&g_dr.died_ran_on, -1);
    sl_pool_opts o = begin_book();
    g_book->on_discard = death_discard;
    o.max_workers = workers;
    o.min_workers = workers;
    o.name = "death";
    sl_pool *p = new_pool(&o);
    g_dr.pool = p;
    sl_pool_stats s;
    CHECK_MSG(wait_workers(p, workers, POOL_SOON_NS, &s), "workers %u", s.workers);
    sl_job die = {.fn = dying_job, .key = 42};
    sl_job next = {.fn = after_job, .arg = &g_dr.after_key, .key = 42};
    CHECK_MSG(sl_pool_submit_job(p, &die, 0) == SL_OK, "submit the dying job");
    CHECK_MSG(sl_pool_submit_job(p, &next, 0) == SL_OK, "submit its key's next job");
    for (int i = 0; i < 20; i++)
        CHECK_MSG(sl_pool_submit(p, after_job, &g_dr.others) == SL_OK, "submit");
    CHECK_MSG(wait_uint_ge(&g_dr.died_seen, 1, POOL_SOON_NS), "on_discard never got the job "
              "whose worker died");
    CHECK_MSG(wait_uint_ge(&g_dr.resubmitted, 1, POOL_SOON_NS), "the retry did not run");
    wait_idle_ok(p);
    CHECK_MSG(atomic_load(&g_dr.survived) == 0, "the dying job returned: the pool %s",
              cancel ? "disabled cancellation" : "survived pthread_exit?");
    CHECK_MSG(atomic_load(&g_dr.after_key) == 1, "the next job of the dead job's key ran %u "
              "times (its key must be released)", atomic_load(&g_dr.after_key));
    CHECK_MSG(atomic_load(&g_dr.others) == 20, "%u of 20 other jobs ran",
              atomic_load(&g_dr.others));
    /* Quiescent (every worker parked, so past worker_init). */
    CHECK_MSG(wait_parked(p, workers, POOL_SOON_NS, &s), "after the death: %u workers (%u parked), "
              "want %u", s.workers, s.parked, workers);
    CHECK_MSG(s.died == 1 && s.respawned == 1, "stats.died %llu respawned %llu, want 1 and 1",
              ULL(s.died), ULL(s.respawned));
    CHECK_MSG(s.submitted == 23 && s.completed == 22 && s.discarded == 1 && s.retired == 0,
              "submitted %llu completed %llu discarded %llu retired %llu", ULL(s.submitted),
              ULL(s.completed), ULL(s.discarded), ULL(s.retired));
    CHECK_MSG(s.spawned == workers + 1 && book_inits(g_book) == workers + 1,
              "spawned %llu, worker_init %u, want %u", ULL(s.spawned), book_inits(g_book),
              workers + 1);
    int dead = atomic_load(&g_dr.died_ran_on);
    CHECK_MSG(dead >= 0 && g_book->ctx[dead] != NULL, "the dying job's worker is unknown");
    bool fini = false;
    for (uint64_t end = sl_test_now_ns() + POOL_SOON_NS; !fini && sl_test_now_ns() < end;
         sl_test_sleep_ns(MS))
        fini = atomic_load(&g_book->ctx[dead]->finalised);
    CHECK_MSG(fini, "worker_fini did not run for the worker that died (id %d)", dead);
    CHECK_MSG(book_discards(g_book, SL_DISCARD_WORKER_DIED) == 1 &&
                  atomic_load(&g_book->discards) == 1,
              "discards: %u WORKER_DIED of %u", book_discards(g_book, SL_DISCARD_WORKER_DIED),
              atomic_load(&g_book->discards));
    end_book(p);
}
END_TEST

/* ---- back-pressure ------------------------------------------------------- */

typedef struct blocked_submit {
    pthread_t thr;
    sl_pool *p;
    bool forever_job; /* submit_job(SL_FOREVER) instead of submit */
    uint64_t timeout;
    atomic_uint *counter;
    sl_status st;
    atomic_int done;
} blocked_submit;

static void *blocked_submit_main(void *arg)
{
    blocked_submit *b = arg;
    sl_job j = {.fn = count_job, .arg = b->counter};
    b->st = b->forever_job ? sl_pool_submit_job(b->p, &j, b->timeout)
                           : sl_pool_submit(b->p, count_job, b->counter);
    atomic_store(&b->done, 1);
    return NULL;
}

static void blocked_start(blocked_submit *b, sl_pool *p, bool job, uint64_t timeout,
                          atomic_uint *c)
{
    *b = (blocked_submit){.p = p, .forever_job = job, .timeout = timeout, .counter = c};
    atomic_init(&b->done, 0);
    ck_assert_int_eq(pthread_create(&b->thr, NULL, blocked_submit_main, b), 0);
}

static sl_status blocked_join(blocked_submit *b, const char *what)
{
    bool done = false;
    for (uint64_t end = sl_test_now_ns() + POOL_SOON_NS; !done && sl_test_now_ns() < end;
         sl_test_sleep_ns(MS))
        done = atomic_load(&b->done);
    CHECK_MSG(done, "%s: the blocked submit never returned", what);
    pthread_join(b->thr, NULL);
    return b->st;
}

static void fill_behind_gates(sl_pool *p, pool_gate *g, unsigned workers, unsigned cap,
                              atomic_uint *n)
{
    for (unsigned i = 0; i < workers; i++)
        CHECK_MSG(sl_pool_submit(p, gate_job, g) == SL_OK, "submit gate");
    CHECK_MSG(gate_wait_entered(g, workers, POOL_SOON_NS), "the gate jobs did not start");
    for (unsigned i = 0; i < cap; i++) {
        sl_status st = sl_pool_try_submit(p, count_job, n);
        CHECK_MSG(st == SL_OK, "try_submit %u of capacity %u: %s", i, cap, sl_status_str(st));
    }
}

START_TEST(test_back_pressure)
{
    begin_test(SUITE, "back_pressure");
    sl_pool_opts o = begin_book();
    o.max_workers = 2;
    o.queue_capacity = 4;
    sl_pool *p = new_pool(&o);
    CHECK_MSG(stats_of(p).capacity == 4, "stats.capacity %zu", stats_of(p).capacity);
    pool_gate g1, g2;
    gate_init(&g1);
    gate_init(&g2);
    atomic_uint n = 0;
    fill_behind_gates(p, &g1, 2, 4, &n);
    sl_pool_stats s = stats_of(p);
    CHECK_MSG(s.queued == 4 && s.submitted == 6, "queued %llu submitted %llu", ULL(s.queued),
              ULL(s.submitted));
    sl_status st = sl_pool_try_submit(p, count_job, &n);
    CHECK_MSG(st == SL_FULL, "try_submit on a full queue: %s", sl_status_str(st));
    sl_job j = {.fn = count_job, .arg = &n};
    /* One rule for timeouts (SPEC §2): a timed call that could do nothing in
     * time is SL_TIMEDOUT, with timeout 0 too; only try_submit says FULL. */
    st = sl_pool_submit_job(p, &j, 0);
    CHECK_MSG(st == SL_TIMEDOUT, "submit_job(timeout 0) on a full queue: %s",
              sl_status_str(st));
    uint64_t t0 = sl_test_now_ns();
    st = sl_pool_submit_job(p, &j, 50 * MS);
    uint64_t waited = sl_test_now_ns() - t0;
    CHECK_MSG(st == SL_TIMEDOUT && waited >= 50 * MS, "submit_job(50 ms) on a full queue: %s "
              "after %llu ns", sl_status_str(st), ULL(waited));
    s = stats_of(p);
    CHECK_MSG(s.submitted == 6 && s.queued == 4, "refused submits were counted: submitted "
              "%llu queued %llu", ULL(s.submitted), ULL(s.queued));
    /* Blocked submitters go through once there is room. */
    blocked_submit a, b;
    blocked_start(&a, p, false, 0, &n);
    blocked_start(&b, p, true, SL_FOREVER, &n);
    sl_test_sleep_ns(50 * MS);
    CHECK_MSG(!atomic_load(&a.done) && !atomic_load(&b.done), "a submit on a full queue "
              "returned (%s / %s)", sl_status_str(a.st), sl_status_str(b.st));
    gate_open(&g1);
    st = blocked_join(&a, "submit");
    CHECK_MSG(st == SL_OK, "blocked submit once there was room: %s", sl_status_str(st));
    st = blocked_join(&b, "submit_job");
    CHECK_MSG(st == SL_OK, "blocked submit_job once there was room: %s", sl_status_str(st));
    wait_idle_ok(p);
    CHECK_MSG(atomic_load(&n) == 6, "%u of 6 counting jobs ran", atomic_load(&n));
    st = sl_pool_submit_job(p, &j, 0);
    CHECK_MSG(st == SL_OK, "submit_job(timeout 0) with room: %s", sl_status_str(st));
    wait_idle_ok(p);
    CHECK_MSG(atomic_load(&n) == 7, "%u of 7 counting jobs ran", atomic_load(&n));
    /* Blocked submitters get SL_CLOSED when the pool shuts down. */
    fill_behind_gates(p, &g2, 2, 4, &n);
    blocked_start(&a, p, false, 0, &n);
    blocked_start(&b, p, true, SL_FOREVER, &n);
    sl_test_sleep_ns(50 * MS);
    CHECK_MSG(!atomic_load(&a.done) && !atomic_load(&b.done), "a submit on a full queue "
              "returned");
    CHECK_MSG(sl_pool_shutdown(p, SL_CANCEL) == SL_OK, "shutdown(CANCEL)");
    st = blocked_join(&a, "submit at shutdown");
    CHECK_MSG(st == SL_CLOSED, "a blocked submit at shutdown: %s", sl_status_str(st));
    st = blocked_join(&b, "submit_job at shutdown");
    CHECK_MSG(st == SL_CLOSED, "a blocked submit_job at shutdown: %s", sl_status_str(st));
    gate_open(&g2);
    settle(p, 1, SL_POOL_SHUTDOWN);
    CHECK_MSG(book_discards(g_book, SL_DISCARD_CANCELLED) == 4 &&
                  atomic_load(&g_book->discards) == 4,
              "%u discards (%u CANCELLED), want the 4 queued", atomic_load(&g_book->discards),
              book_discards(g_book, SL_DISCARD_CANCELLED));
    CHECK_MSG(atomic_load(&n) == 7, "a refused or cancelled job ran (%u)", atomic_load(&n));
    end_book(p);
    gate_destroy(&g1);
    gate_destroy(&g2);
}
END_TEST

/* ---- stats, nesting, callbacks ------------------------------------------- */

START_TEST(test_stats_consistent)
{
    begin_test(SUITE, "stats_consistent");
    sl_pool_opts o = begin_book();
    o.max_workers = 3;
    o.queue_capacity = 1000;
    o.start_stopped = true;
    sl_pool *p = new_pool(&o);
    atomic_uint n = 0;
    for (int i = 0; i < 10; i++)
        CHECK_MSG(submit_count(p, &n) == SL_OK, "submit");
    sl_pool_stats s = stats_of(p);
    CHECK_MSG(s.state == SL_POOL_STOPPED && s.queued == 10 && s.submitted == 10 &&
                  s.capacity == 1000 && s.target == 3 && s.max_workers == 3 &&
                  s.waiting_on_key == 0,
              "stopped: state %s queued %llu submitted %llu capacity %zu target %u max %u "
              "waiting on a key %llu", state_name((int)s.state), ULL(s.queued),
              ULL(s.submitted), s.capacity, s.target, s.max_workers, ULL(s.waiting_on_key));
    /* Three jobs of one key: the first holds the key, two wait aside. */
    sl_job kj = { .fn = count_job, .arg = &n, .key = 7 };
    for (int i = 0; i < 3; i++)
        CHECK_MSG(sl_pool_submit_job(p, &kj, 0) == SL_OK, "keyed submit");
    s = stats_of(p);
    CHECK_MSG(s.queued == 13 && s.waiting_on_key == 2, "keyed: queued %llu (want 13), waiting "
              "on a key %llu (want 2)", ULL(s.queued), ULL(s.waiting_on_key));
    CHECK_MSG(sl_pool_reset(p) == SL_OK, "reset");
    settle(p, 1, SL_POOL_STOPPED);
    CHECK_MSG(sl_pool_start(p) == SL_OK, "start");
    settle(p, 2, SL_POOL_RUNNING);
    for (int i = 0; i < 100; i++)
        CHECK_MSG(submit_count(p, &n) == SL_OK, "submit");
    wait_idle_ok(p);
    CHECK_MSG(wait_parked(p, 3, POOL_SOON_NS, &s), "idle: workers %u parked %u", s.workers,
              s.parked);
    CHECK_MSG(s.submitted == s.queued + s.running + s.completed + s.discarded,
              "submitted %llu != queued %llu + running %u + completed %llu + discarded %llu",
              ULL(s.submitted), ULL(s.queued), s.running, ULL(s.completed), ULL(s.discarded));
    CHECK_MSG(s.submitted == 113 && s.completed == 100 && s.discarded == 13 && s.running == 0 &&
                  s.waiting_on_key == 0,
              "submitted %llu completed %llu discarded %llu running %u", ULL(s.submitted),
              ULL(s.completed), ULL(s.discarded), s.running);
    CHECK_MSG(s.idle == s.workers && s.parked <= s.idle, "workers %u idle %u parked %u",
              s.workers, s.idle, s.parked);
    CHECK_MSG(s.spawned == book_inits(g_book), "spawned %llu, worker_init calls %u",
              ULL(s.spawned), book_inits(g_book));
    CHECK_MSG(s.retired == 0 && s.respawned == 0 && s.died == 0 && !s.busy &&
                  s.state == SL_POOL_RUNNING,
              "retired %llu respawned %llu died %llu busy %d", ULL(s.retired), ULL(s.respawned),
              ULL(s.died), s.busy);
    CHECK_MSG(atomic_load(&n) == 100, "%u ran", atomic_load(&n));
    end_book(p);
}
END_TEST

static atomic_uint g_tree_jobs;
static sl_pool *g_tree_pool;

static void tree_job(void *arg, void *ctx)
{
    book_job_begin(g_book, ctx);
    unsigned depth = (unsigned)of_arg(arg);
    atomic_fetch_add(&g_tree_jobs, 1);
    if (depth == 0)
        return;
    sl_status a = sl_pool_submit(g_tree_pool, tree_job, as_arg(depth - 1));
    sl_job j = {.fn = tree_job, .arg = as_arg(depth - 1), .key = depth, .priority = depth % 2};
    sl_status b = sl_pool_submit_job(g_tree_pool, &j, SL_FOREVER);
    if (a != SL_OK || b != SL_OK)
        rec_fail("submit from a job: %s / %s", sl_status_str(a), sl_status_str(b));
}

static atomic_uint g_from_state;
static void state_submits(pool_book *b, sl_pool *p, sl_pool_state now)
{
    (void)b;
    if (now != SL_POOL_RUNNING)
        return;
    sl_status st = sl_pool_submit(p, count_job, &g_from_state);
    if (st != SL_OK)
        rec_fail("submit from on_state: %s", sl_status_str(st));
}

START_TEST(test_jobs_submit_jobs)
{
    begin_test(SUITE, "jobs_submit_jobs");
    atomic_store(&g_tree_jobs, 0);
    atomic_store(&g_from_state, 0);
    sl_pool_opts o = begin_book();
    g_book->on_state_hook = state_submits;
    o.max_workers = 3;
    o.priority_levels = 2;
    o.start_stopped = true;
    sl_pool *p = new_pool(&o);
    g_tree_pool = p;
    CHECK_MSG(sl_pool_start(p) == SL_OK, "start");
    settle(p, 1, SL_POOL_RUNNING);
    CHECK_MSG(wait_uint_ge(&g_from_state, 1, POOL_SOON_NS), "the job on_state submitted did not "
              "run");
    const unsigned depth = 8;
    CHECK_MSG(sl_pool_submit(p, tree_job, as_arg(depth)) == SL_OK, "submit the root");
    CHECK_MSG(sl_pool_wait_idle(p, POOL_SOON_NS) == SL_OK, "wait_idle");
    unsigned want = (1u << (depth + 1)) - 1;
    CHECK_MSG(atomic_load(&g_tree_jobs) == want, "wait_idle returned with %u of %u jobs of the "
              "tree run", atomic_load(&g_tree_jobs), want);
    sl_pool_stats s = stats_of(p);
    CHECK_MSG(s.completed == want + 1 && s.submitted == want + 1, "completed %llu submitted %llu",
              ULL(s.completed), ULL(s.submitted));
    end_book(p);
}
END_TEST

START_TEST(test_on_state_once_per_command)
{
    begin_test(SUITE, "on_state_once_per_command");
    sl_pool_opts o = begin_book();
    o.max_workers = 3;
    o.start_stopped = true;
    sl_pool *p = new_pool(&o);
    static const struct {
        pool_cmd c;
        unsigned arg;
        sl_pool_state then;
    } seq[] = {
        {CMD_START, 0, SL_POOL_RUNNING},       {CMD_SET_WORKERS, 2, SL_POOL_RUNNING},
        {CMD_STOP, 0, SL_POOL_STOPPED},        {CMD_SET_WORKERS, 3, SL_POOL_STOPPED},
        {CMD_RESET, 0, SL_POOL_STOPPED},       {CMD_START, 0, SL_POOL_RUNNING},
        {CMD_SET_WORKERS, 1, SL_POOL_RUNNING}, {CMD_STOP, 0, SL_POOL_STOPPED},
        {CMD_START, 0, SL_POOL_RUNNING},       {CMD_SHUTDOWN, SL_DRAIN, SL_POOL_SHUTDOWN},
    };
    atomic_uint n = 0;
    for (int i = 0; i < N_OF(seq); i++) {
        CHECK_MSG(submit_count(p, &n) == SL_OK, "submit before %s", cmd_name(seq[i].c));
        sl_status st = cmd_issue(p, seq[i].c, seq[i].arg);
        CHECK_MSG(st == SL_OK, "step %d: %s(%u) = %s", i, cmd_name(seq[i].c), seq[i].arg,
                  sl_status_str(st));
        settle(p, (unsigned)i + 1, seq[i].then);
        /* Refused commands call nothing. */
        if (seq[i].then == SL_POOL_RUNNING)
            CHECK_MSG(sl_pool_start(p) == SL_EINVAL, "start while running");
        else if (seq[i].then == SL_POOL_STOPPED)
            CHECK_MSG(sl_pool_stop(p) == SL_EINVAL, "stop while stopped");
    }
    sl_test_sleep_ns(50 * MS);
    CHECK_MSG(book_states(g_book) == (unsigned)N_OF(seq), "%u on_state calls for %d commands",
              book_states(g_book), N_OF(seq));
    CHECK_MSG(atomic_load(&g_book->state_by[SL_POOL_SHUTDOWN]) == 1, "SHUTDOWN reported %u times",
              atomic_load(&g_book->state_by[SL_POOL_SHUTDOWN]));
    /* One job was queued at the reset (stopped), the others ran. */
    CHECK_MSG(atomic_load(&n) + atomic_load(&g_book->discards) == (unsigned)N_OF(seq),
              "%u ran + %u discarded of %d", atomic_load(&n), atomic_load(&g_book->discards),
              N_OF(seq));
    end_book(p);
}
END_TEST

/* ---- workers: idle CPU, trimming, wake-ups -------------------------------- */

START_TEST(test_idle_uses_no_cpu)
{
    begin_test(SUITE, "idle_uses_no_cpu");
    sl_pool_opts o = begin_book();
    o.max_workers = 4;
    o.min_workers = 4;
    sl_pool *p = new_pool(&o);
    atomic_uint n = 0;
    for (int i = 0; i < 200; i++)
        CHECK_MSG(submit_count(p, &n) == SL_OK, "submit");
    wait_idle_ok(p);
    sl_pool_stats s;
    CHECK_MSG(wait_parked(p, 4, POOL_SOON_NS, &s), "workers %u parked %u", s.workers, s.parked);
    sl_test_sleep_ns(200 * MS); /* settle: anything that spins before parking has parked */
    uint64_t c0 = process_cpu_ns();
    sl_test_sleep_ns(500 * MS);
    uint64_t used = process_cpu_ns() - c0;
    s = stats_of(p);
    fprintf(stderr, "[%s] 500 ms idle with 4 workers: %.3f ms of CPU\n", g_test, used / 1e6);
    CHECK_MSG(used < 5 * MS, "an idle pool used %.3f ms of CPU in 500 ms (limit 5 ms)",
              used / 1e6);
    CHECK_MSG(s.parked == 4 && s.workers == 4, "after the idle window: workers %u parked %u",
              s.workers, s.parked);
    end_book(p);
}
END_TEST

/* Samples stats.workers while a test runs: the largest value seen. */
typedef struct sampler {
    pthread_t thr;
    sl_pool *p;
    atomic_bool stop;
    atomic_uint max_workers;
    atomic_uint samples;
} sampler;

static void *sampler_main(void *arg)
{
    sampler *s = arg;
    while (!atomic_load(&s->stop)) {
        sl_pool_stats st;
        sl_pool_get_stats(s->p, &st);
        if (st.workers > atomic_load(&s->max_workers))
            atomic_store(&s->max_workers, st.workers);
        atomic_fetch_add(&s->samples, 1);
        sl_test_sleep_ns(200000);
    }
    return NULL;
}

START_TEST(test_auto_trim)
{
    unsigned min = _i == 0 ? 1 : 0;
    begin_test(SUITE, "auto_trim[min_workers %u]", min);
    sl_pool_opts o = begin_book();
    o.max_workers = 4;
    o.min_workers = min;
    o.active_workers = 4;
    o.idle_timeout_ns = 50 * MS;
    sl_pool *p = new_pool(&o);
    /* An elastic pool starts at its floor, not at the target. */
    sl_pool_stats s = stats_of(p);
    CHECK_MSG(s.workers == min && s.spawned == min, "%u workers (%llu spawned) right after "
              "sl_pool_new, want min_workers %u", s.workers, ULL(s.spawned), min);
    sampler smp = {.p = p};
    atomic_init(&smp.stop, false);
    atomic_init(&smp.max_workers, 0);
    atomic_init(&smp.samples, 0);
    ck_assert_int_eq(pthread_create(&smp.thr, NULL, sampler_main, &smp), 0);
    uint64_t retired = 0;
    for (int round = 0; round < 3; round++) {
        /* Idle: trimmed to min_workers, and it stays there. */
        CHECK_MSG(wait_workers(p, min, POOL_SOON_NS, &s), "round %d: %u workers after the idle "
                  "timeout, want min_workers %u", round, s.workers, min);
        CHECK_MSG(s.retired >= retired + (round == 0 ? 0 : 4 - min),
                  "round %d: stats.retired %llu (was %llu)", round, ULL(s.retired),
                  ULL(retired));
        retired = s.retired;
        sl_test_sleep_ns(150 * MS);
        s = stats_of(p);
        CHECK_MSG(s.workers == min, "round %d: %u workers 150 ms after trimming to %u", round,
                  s.workers, min);
        /* Load: 4 jobs at once need 4 workers; a 5th waits (max_workers 4). */
        pool_gate g;
        gate_init(&g);
        unsigned k = round == 2 ? 5 : 4;
        for (unsigned i = 0; i < k; i++)
            CHECK_MSG(sl_pool_submit(p, gate_job, &g) == SL_OK, "submit gate");
        bool four = gate_wait_entered(&g, 4, POOL_SOON_NS);
        sl_test_sleep_ns(50 * MS);
        unsigned in = gate_entered(&g);
        s = stats_of(p);
        gate_open(&g);
        CHECK_MSG(four && in == 4, "round %d: %u of %u jobs ran at once, want 4 (workers %u)",
                  round, in, k, s.workers);
        CHECK_MSG(s.workers == 4, "round %d: %u workers under load", round, s.workers);
        wait_idle_ok(p);
        gate_destroy(&g);
    }
    /* After the last trim, one job still finds a worker. */
    CHECK_MSG(wait_workers(p, min, POOL_SOON_NS, &s), "%u workers at the end", s.workers);
    atomic_uint n = 0;
    CHECK_MSG(submit_count(p, &n) == SL_OK, "submit");
    wait_idle_ok(p);
    CHECK_MSG(atomic_load(&n) == 1, "a job submitted to a trimmed pool did not run");
    atomic_store(&smp.stop, true);
    pthread_join(smp.thr, NULL);
    CHECK_MSG(atomic_load(&smp.max_workers) <= 4, "stats.workers reached %u, max_workers 4",
              atomic_load(&smp.max_workers));
    CHECK_MSG(atomic_load(&g_book->live_max) <= 4, "%u workers between worker_init and "
              "worker_fini at once, max_workers 4", atomic_load(&g_book->live_max));
    CHECK_MSG(wait_workers(p, min, POOL_SOON_NS, &s), "%u workers at the end", s.workers);
    sl_test_sleep_ns(100 * MS);
    s = stats_of(p);
    CHECK_MSG(s.spawned == book_inits(g_book) && s.died == 0 && s.respawned == 0,
              "spawned %llu inits %u died %llu respawned %llu", ULL(s.spawned),
              book_inits(g_book), ULL(s.died), ULL(s.respawned));
    CHECK_MSG(s.retired + s.workers == s.spawned, "retired %llu + workers %u != spawned %llu",
              ULL(s.retired), s.workers, ULL(s.spawned));
    end_book(p);
}
END_TEST

/* Worker wake-ups through the parking layer, counted in the futex table. */
static atomic_int g_herd_counting;
static atomic_uint g_worker_wakeups; /* futex_wait returned 0 on a worker thread */
static atomic_uint g_wide_wakes;     /* futex_wake for more than one waiter */

static bool on_worker_thread(void)
{
    char name[32] = "";
    pthread_getname_np(pthread_self(), name, sizeof name);
    if (strncmp(name, "herd/", 5) != 0)
        return false;
    return name[5] >= '0' && name[5] <= '9';
}

static int herd_futex_wait(SL_ATOMIC(uint32_t) *word, uint32_t expected, uint64_t deadline_ns)
{
    int r = sl__sys_default_ops.futex_wait(word, expected, deadline_ns);
    if (r == 0 && atomic_load(&g_herd_counting) && on_worker_thread())
        atomic_fetch_add(&g_worker_wakeups, 1);
    return r;
}

static int herd_futex_wake(SL_ATOMIC(uint32_t) *word, int count)
{
    if (count > 1 && atomic_load(&g_herd_counting))
        atomic_fetch_add(&g_wide_wakes, 1);
    return sl__sys_default_ops.futex_wake(word, count);
}

static uint64_t herd_now(void) { return sl__sys_default_ops.now_ns(); }

/* membarrier stays the base's (the harness's, which SL_TEST_SYSFAULTS may
 * refuse): the barrier mode is chosen once per process, by whichever table
 * is in place first, and must agree with every call after. */
static const sl_sys_ops k_herd_ops = {
    .futex_wait = herd_futex_wait, .futex_wake = herd_futex_wake, .now_ns = herd_now};

static void restore_ops(void) { sl_test_sys_restore(); }

START_TEST(test_one_wakeup_per_job)
{
    begin_test(SUITE, "one_wakeup_per_job");
    atomic_store(&g_herd_counting, 0);
    atomic_store(&g_worker_wakeups, 0);
    atomic_store(&g_wide_wakes, 0);
    sl_test_sys_install(&k_herd_ops);
    sl_pool_opts o = begin_book();
    o.max_workers = 4;
    o.min_workers = 4;
    o.name = "herd";
    sl_pool *p = new_pool(&o);
    sl_pool_stats s;
    const unsigned rounds = 20;
    atomic_uint n = 0;
    unsigned worst = 0;
    for (unsigned r = 0; r < rounds; r++) {
        CHECK_MSG(wait_parked(p, 4, POOL_SOON_NS, &s), "workers %u parked %u", s.workers,
                  s.parked);
        sl_test_sleep_ns(20 * MS);
        unsigned before = atomic_load(&g_worker_wakeups);
        atomic_store(&g_herd_counting, 1);
        CHECK_MSG(submit_count(p, &n) == SL_OK, "submit");
        CHECK_MSG(wait_uint_ge(&n, r + 1, POOL_SOON_NS), "round %u: the job did not run", r);
        CHECK_MSG(wait_parked(p, 4, POOL_SOON_NS, &s), "workers %u parked %u", s.workers,
                  s.parked);
        sl_test_sleep_ns(20 * MS);
        atomic_store(&g_herd_counting, 0);
        unsigned woke = atomic_load(&g_worker_wakeups) - before;
        if (woke > worst)
            worst = woke;
    }
    restore_ops();
    unsigned total = atomic_load(&g_worker_wakeups);
    fprintf(stderr, "[%s] %u jobs to 4 sleeping workers: %u worker wake-ups, at most %u per job,"
            " %u wide futex wakes\n", g_test, rounds, total, worst, atomic_load(&g_wide_wakes));
    CHECK_MSG(worst <= 1, "one job woke %u sleeping workers", worst);
    CHECK_MSG(atomic_load(&g_wide_wakes) == 0, "%u futex wakes for more than one waiter on a "
              "submit", atomic_load(&g_wide_wakes));
    CHECK_MSG(total >= 1, "no worker was woken through the parking layer in %u jobs", rounds);
    end_book(p);
}
END_TEST

/* ---- a submit held between its reservation and its push --------------------
 *
 * A submit reserves its place in `pending`, then pushes the job. Its first
 * allocation comes in between (its thread's first list operation takes a
 * reclamation record, or the push grows the list), so a table whose
 * allocation blocks for one chosen thread holds that submitter inside the
 * window, as a preemption would. Meanwhile the idle workers must sleep in the
 * kernel and stay asleep: counted through the same table, a worker thread's
 * futex waits (entered, and inside now) and its membarrier calls (each park
 * issues one). Then the submitter resumes and its job runs. */

static _Thread_local bool t_hold_me; /* this thread's next allocation blocks */
static struct {
    atomic_int held, release;
    atomic_uint waits, asleep, barriers; /* on "hold/<id>" worker threads */
} g_hold;

static bool on_hold_worker(void)
{
    char name[32] = "";
    pthread_getname_np(pthread_self(), name, sizeof name);
    return strncmp(name, "hold/", 5) == 0 && name[5] >= '0' && name[5] <= '9';
}

static void *hold_alloc(size_t align, size_t size)
{
    if (t_hold_me) {
        t_hold_me = false;
        atomic_store(&g_hold.held, 1);
        while (!atomic_load(&g_hold.release))
            sl_test_sleep_ns(MS); /* the real clock: nothing of sluice's */
    }
    return sl__sys_default_ops.alloc(align, size);
}

static int hold_futex_wait(SL_ATOMIC(uint32_t) *word, uint32_t expected, uint64_t deadline_ns)
{
    bool mine = on_hold_worker();
    if (mine) {
        atomic_fetch_add(&g_hold.waits, 1);
        atomic_fetch_add(&g_hold.asleep, 1);
    }
    int r = sl__sys_default_ops.futex_wait(word, expected, deadline_ns);
    if (mine)
        atomic_fetch_sub(&g_hold.asleep, 1);
    return r;
}

static int hold_membarrier(int cmd)
{
    if (on_hold_worker())
        atomic_fetch_add(&g_hold.barriers, 1);
    return sl_test_sys_base()->membarrier(cmd); /* as k_herd_ops says */
}

static const sl_sys_ops k_hold_ops = {
    .alloc = hold_alloc, .futex_wait = hold_futex_wait, .membarrier = hold_membarrier};

typedef struct hold_submitter {
    sl_pool *p;
    atomic_uint *n;
    atomic_uint tried;  /* submits begun */
    bool was_held;
    pthread_t thr;
} hold_submitter;

/* Submits until one submit was held (at most 4096: more than a list segment). */
static void *hold_submitter_main(void *arg)
{
    hold_submitter *h = arg;
    t_hold_me = true;
    for (unsigned i = 0; i < 4096 && t_hold_me; i++) {
        atomic_fetch_add(&h->tried, 1);
        if (sl_pool_submit(h->p, count_job, h->n) != SL_OK)
            rec_fail("submit %u refused", i);
    }
    h->was_held = !t_hold_me;
    t_hold_me = false;
    return NULL;
}

START_TEST(test_idle_asleep_while_submit_held)
{
    begin_test(SUITE, "idle_asleep_while_submit_held");
    memset(&g_hold, 0, sizeof g_hold);
    sl_test_sys_install(&k_hold_ops);
    sl_pool_opts o = begin_book();
    o.max_workers = 2;
    o.name = "hold";
    sl_pool *p = new_pool(&o);
    atomic_uint n = 0;
    hold_submitter h = {.p = p, .n = &n};
    ck_assert_int_eq(pthread_create(&h.thr, NULL, hold_submitter_main, &h), 0);
    bool held = false;
    for (uint64_t end = sl_test_now_ns() + POOL_SOON_NS; !held && sl_test_now_ns() < end;
         sl_test_sleep_ns(MS))
        held = atomic_load(&g_hold.held);
    CHECK_MSG(held, "no submit allocated between its reservation and its push");
    unsigned before = atomic_load(&h.tried) - 1; /* the jobs ahead of the held one */
    CHECK_MSG(wait_uint_ge(&n, before, POOL_SOON_NS), "%u of %u jobs ran", atomic_load(&n),
              before);
    /* Both workers asleep in the kernel — not polling, not parking over and
     * over — although `pending` counts the held job. */
    bool asleep = false;
    for (uint64_t end = sl_test_now_ns() + POOL_SOON_NS; !asleep && sl_test_now_ns() < end;
         sl_test_sleep_ns(MS))
        asleep = atomic_load(&g_hold.asleep) == 2;
    CHECK_MSG(asleep, "idle workers did not fall asleep while a submit was held: %u asleep, "
              "%u futex waits, %u membarriers", atomic_load(&g_hold.asleep),
              atomic_load(&g_hold.waits), atomic_load(&g_hold.barriers));
    unsigned waits = atomic_load(&g_hold.waits), barriers = atomic_load(&g_hold.barriers);
    sl_test_sleep_ns(50 * MS);
    unsigned dw = atomic_load(&g_hold.waits) - waits;
    unsigned db = atomic_load(&g_hold.barriers) - barriers;
    fprintf(stderr, "[%s] submit held after %u jobs: workers asleep %u; in 50 ms: %u futex "
            "waits, %u membarriers\n", g_test, before, atomic_load(&g_hold.asleep), dw, db);
    CHECK_MSG(dw == 0 && db == 0 && atomic_load(&g_hold.asleep) == 2,
              "idle workers woke while a submit was held: %u futex waits, %u membarriers, "
              "%u asleep", dw, db, atomic_load(&g_hold.asleep));
    CHECK_MSG(atomic_load(&n) == before, "%u jobs ran, %u were pushed", atomic_load(&n), before);
    atomic_store(&g_hold.release, 1);
    pthread_join(h.thr, NULL);
    CHECK_MSG(h.was_held, "the submitter was never held");
    wait_idle_ok(p);
    CHECK_MSG(atomic_load(&n) == atomic_load(&h.tried), "%u of %u jobs ran once the submitter "
              "resumed", atomic_load(&n), atomic_load(&h.tried));
    restore_ops();
    end_book(p);
}
END_TEST

/* ---- faults: thread creation and allocation fail -------------------------
 *
 * Thread creation fails through a table (the k-th start from arming, or
 * every start while armed); allocation through the harness
 * (sl_test_fail_alloc_at). A call that cannot get what it needs returns
 * SL_ENOMEM and leaves nothing behind (no thread: none named "tcf/..."
 * remains; no memory: the asan preset checks leaks; every worker_init has
 * its worker_fini); every job a submit accepted runs or is discarded,
 * exactly once. */

static atomic_uint_fast64_t g_tc_attempts, g_tc_fail_at;
static atomic_bool g_tc_fail_all;

static int tc_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *),
                     void *arg)
{
    uint64_t k = atomic_fetch_add(&g_tc_attempts, 1) + 1;
    if (atomic_load(&g_tc_fail_all) || k == atomic_load(&g_tc_fail_at))
        return EAGAIN;
    return pthread_create(thread, attr, start, arg);
}

static const sl_sys_ops k_tc_ops = {.thread_create = tc_create};

static void tc_arm(uint64_t fail_at, bool all)
{
    atomic_store(&g_tc_attempts, 0);
    atomic_store(&g_tc_fail_at, fail_at);
    atomic_store(&g_tc_fail_all, all);
    sl_test_sys_install(&k_tc_ops);
}

/* Every "tcf/" thread is gone (joined) soon. */
static void expect_no_threads_left(const char *when)
{
    unsigned w = 0, o = 0;
    for (uint64_t end = sl_test_now_ns() + POOL_SOON_NS; sl_test_now_ns() < end;
         sl_test_sleep_ns(MS)) {
        count_named_threads("tcf/", &w, &o);
        if (w + o == 0)
            return;
    }
    CHECK_MSG(false, "%s: %u workers and %u other pool threads left behind", when, w, o);
}

/* Runs jobs on p and checks them: n submitted, each ran once. */
static void expect_jobs_run(sl_pool *p, unsigned n, const char *when)
{
    atomic_uint ran = 0;
    for (unsigned i = 0; i < n; i++)
        CHECK_MSG(submit_count(p, &ran) == SL_OK, "%s: submit %u", when, i);
    wait_idle_ok(p);
    CHECK_MSG(atomic_load(&ran) == n, "%s: %u of %u jobs ran", when, atomic_load(&ran), n);
}

/* sl_pool_new with the k-th thread start failing, for every k until a
 * creation sees no failure: SL_ENOMEM with nothing left, or a pool that
 * works (a failed start of the control thread's own spawn is retried). */
START_TEST(test_pool_new_thread_create_fails)
{
    begin_test(SUITE, "pool_new_thread_create_fails");
    unsigned refused = 0, k = 1;
    for (;; k++) {
        g_book = book_new();
        sl_pool_opts o = book_opts(g_book);
        o.max_workers = 3;
        o.name = "tcf";
        sl_pool *p = NULL;
        tc_arm(k, false);
        sl_status st = sl_pool_new(&p, &o);
        CHECK_MSG(st == SL_OK || st == SL_ENOMEM, "k %u: sl_pool_new = %s", k,
                  sl_status_str(st));
        if (st == SL_OK) {
            expect_jobs_run(p, 20, "created");
            sl_pool_free(p);
        } else {
            refused++;
            CHECK_MSG(p == NULL, "k %u: *out set on SL_ENOMEM", k);
        }
        uint64_t attempts = atomic_load(&g_tc_attempts);
        bool last = attempts < k;
        /* The control thread, the floor's workers, a spawn racing the
         * failure: a few. A spawn loop that kept starting workers which
         * left at once (the pool cancelled by the failed sl_pool_new) made
         * thousands under TSan's timing. */
        CHECK_MSG(attempts <= k + 2 * o.max_workers, "k %u: %llu thread starts", k,
                  ULL(attempts));
        sl_test_sys_restore();
        expect_no_threads_left(st == SL_OK ? "after free" : "after a refused sl_pool_new");
        book_check_closed(g_book);
        ASSERT_CLEAN();
        book_free(g_book);
        g_book = NULL;
        if (last)
            break;
    }
    fprintf(stderr, "[%s] thread start k = 1 .. %u failed: sl_pool_new refused %u times\n",
            g_test, k - 1, refused);
    CHECK_MSG(refused >= 1, "no failed thread start made sl_pool_new fail");
}
END_TEST

/* An elastic pool (no worker while idle) whose spawns fail: jobs wait,
 * the control thread retries, and once threads can start every job runs. */
START_TEST(test_pool_spawn_fails_retried)
{
    begin_test(SUITE, "pool_spawn_fails_retried");
    sl_pool_opts o = begin_book();
    o.max_workers = 2;
    o.min_workers = 0;
    o.idle_timeout_ns = 10 * SEC;
    o.name = "tcf";
    sl_pool *p = new_pool(&o);
    CHECK_MSG(stats_of(p).workers == 0, "an elastic pool with min_workers 0 started workers");
    tc_arm(0, true);
    atomic_uint ran = 0;
    for (unsigned i = 0; i < 10; i++)
        CHECK_MSG(submit_count(p, &ran) == SL_OK, "submit %u while no thread can start", i);
    sl_test_sleep_ns(30 * MS);
    uint64_t tries = atomic_load(&g_tc_attempts);
    CHECK_MSG(atomic_load(&ran) == 0 && tries >= 2, "no thread could start, yet %u jobs ran; "
              "%llu starts tried", atomic_load(&ran), ULL(tries));
    atomic_store(&g_tc_fail_all, false);
    wait_idle_ok(p);
    sl_test_sys_restore();
    sl_pool_stats s = stats_of(p);
    CHECK_MSG(atomic_load(&ran) == 10 && s.completed == 10 && s.spawned >= 1,
              "%u of 10 jobs ran once threads could start (completed %llu, spawned %llu)",
              atomic_load(&ran), ULL(s.completed), ULL(s.spawned));
    end_book(p);
}
END_TEST

typedef struct fault_tally {
    atomic_uint ran, discarded;
    unsigned accepted, nomem;
} fault_tally;

static void tally_job(void *arg, void *ctx)
{
    (void)ctx;
    atomic_fetch_add(&((fault_tally *)arg)->ran, 1);
}

static void tally_discard(const sl_job *job, sl_discard why, void *user)
{
    (void)why;
    (void)user;
    atomic_fetch_add(&((fault_tally *)job->arg)->discarded, 1);
}

static void tally_submit(sl_pool *p, fault_tally *t, const sl_job *job)
{
    sl_status st = sl_pool_submit_job(p, job, SL_FOREVER);
    CHECK_MSG(st == SL_OK || st == SL_ENOMEM, "submit_job = %s", sl_status_str(st));
    t->accepted += st == SL_OK;
    t->nomem += st == SL_ENOMEM;
}

/* One run of everything in the pool that allocates: creation (queues, key
 * table, idle slots, workers), keyless jobs past a list segment, keyed jobs
 * that wait aside for a busy key, more busy keys than the table's first
 * size, and workers spawned on demand. Returns false when sl_pool_new
 * itself was refused. */
static bool alloc_scenario(sl_dispatch dispatch, fault_tally *t)
{
    sl_pool_opts o = {.max_workers = 2, .min_workers = 0, .idle_timeout_ns = 10 * SEC,
                      .priority_levels = 2, .start_stopped = true, .dispatch = dispatch,
                      .name = "tcf", .on_discard = tally_discard};
    sl_pool *p = NULL;
    sl_status st = sl_pool_new(&p, &o);
    CHECK_MSG(st == SL_OK || st == SL_ENOMEM, "sl_pool_new = %s", sl_status_str(st));
    if (st != SL_OK)
        return false;
    for (unsigned i = 0; i < 900; i++) { /* a list segment holds about 800 jobs */
        sl_job j = {.fn = tally_job, .arg = t, .priority = i & 1u};
        tally_submit(p, t, &j);
    }
    for (unsigned i = 0; i < 80; i++) { /* keys 1..40, twice: 40 busy, 40 aside */
        sl_job j = {.fn = tally_job, .arg = t, .key = 1 + i % 40};
        tally_submit(p, t, &j);
    }
    CHECK_MSG(sl_pool_start(p) == SL_OK, "start");
    CHECK_MSG(sl_pool_wait_idle(p, POOL_SOON_NS) == SL_OK, "wait_idle");
    sl_pool_free(p);
    return true;
}

/* Allocation k fails, for k = 1, 2, ... until a whole run sees no failure. */
START_TEST(test_pool_alloc_fails_at_every_k)
{
    sl_dispatch dispatch = _i == 0 ? SL_DISPATCH_SHARED : SL_DISPATCH_LEAST_LOADED;
    begin_test(SUITE, "pool_alloc_fails_at_every_k[dispatch %d]", (int)dispatch);
    unsigned k = 1, refused = 0, nomem = 0;
    for (;; k++) {
        fault_tally t = {0};
        sl_test_fail_alloc_at(k);
        bool created = alloc_scenario(dispatch, &t);
        bool last = sl_test_allocs() < k;
        sl_test_alloc_faults_off();
        refused += !created;
        nomem += t.nomem;
        unsigned ran = atomic_load(&t.ran), disc = atomic_load(&t.discarded);
        CHECK_MSG(ran == t.accepted && disc == 0, "k %u: %u accepted, %u ran, %u discarded", k,
                  t.accepted, ran, disc);
        expect_no_threads_left("after the run");
        if (last)
            break;
    }
    fprintf(stderr, "[%s] allocation k = 1 .. %u failed: sl_pool_new refused %u times, "
            "submits %u times; every accepted job ran once\n", g_test, k - 1, refused, nomem);
    CHECK_MSG(refused >= 1 && k > 10, "the faults missed: %u runs, %u refused", k, refused);
}
END_TEST

/* ---- batches: a worker takes several queued jobs at once --------------------
 *
 * One worker behind a gate job, 40 logged jobs queued: when the gate opens
 * the worker takes a batch of them at once (pool_ring.c), so whatever
 * happens inside an early job of it — a stop, a death — happens with the
 * rest of the batch taken but not started. */

static struct {
    sl_pool *pool;
    unsigned stop_at; /* this job stops the pool (UINT_MAX: none) */
    unsigned die_at;  /* this job's worker dies in it (UINT_MAX: none) */
} g_bt;

static void batch_job(void *arg, void *ctx)
{
    unsigned i = (unsigned)of_arg(arg);
    if (atomic_load(&g_paused))
        rec_fail("job %u started in a stopped pool", i);
    log_job(arg, ctx);
    if (i == g_bt.stop_at) {
        sl_status st = sl_pool_stop(g_bt.pool);
        if (st != SL_OK)
            rec_fail("stop from job %u = %s", i, sl_status_str(st));
    }
    if (i == g_bt.die_at)
        pthread_exit(NULL);
}

/* A one-worker pool whose worker is about to take jobs [0, n) of batch_job
 * in batches: they are queued behind a gate job, and the gate is open. */
static sl_pool *batch_pool(unsigned n, unsigned stop_at, unsigned die_at, pool_gate *g)
{
    log_reset();
    drec_reset();
    atomic_store(&g_paused, 0);
    sl_pool_opts o = begin_book();
    g_book->on_discard = record_discard;
    o.max_workers = 1;
    o.min_workers = 1;
    sl_pool *p = new_pool(&o);
    g_bt.pool = p;
    g_bt.stop_at = stop_at;
    g_bt.die_at = die_at;
    g_log_fn = batch_job;
    gate_init(g);
    CHECK_MSG(sl_pool_submit(p, gate_job, g) == SL_OK, "submit gate");
    CHECK_MSG(gate_wait_entered(g, 1, POOL_SOON_NS), "the gate job did not start");
    for (unsigned i = 0; i < n; i++)
        CHECK_MSG(submit_logged(p, i, 0, 0) == SL_OK, "submit %u", i);
    gate_open(g);
    return p;
}

/* Jobs [0, n) each ran once, in submission order (one worker). */
static void check_ran_in_order(unsigned n)
{
    unsigned got = atomic_load(&g_order_n);
    CHECK_MSG(got == n, "%u jobs ran, want %u", got, n);
    for (unsigned k = 0; k < got; k++)
        CHECK_MSG(g_order[k] == k, "position %u: job %u ran, want job %u", k, g_order[k], k);
}

/* Jobs [0, first) ran in order; [first, n) were each discarded once, for
 * why, and did not run. */
static void check_discarded_from(unsigned first, unsigned n, sl_discard why)
{
    check_ran_in_order(first);
    for (unsigned i = first; i < n; i++)
        CHECK_MSG(atomic_load(&g_drec[i].times) == 1 && atomic_load(&g_drec[i].why) == (int)why,
                  "job %u discarded %u times (as %s), want once as %s", i,
                  atomic_load(&g_drec[i].times), discard_name(atomic_load(&g_drec[i].why)),
                  discard_name((int)why));
}

/* The pool stops in the middle of a batch: the rest of the batch does not
 * run while stopped, counts as queued (the pool is not idle), and then —
 * _i — runs first after start, is discarded by reset or cancel, or runs in
 * a drain: each job exactly once, in order. */
START_TEST(test_batch_stopped_midway)
{
    static const char *const next[] = {"start", "reset", "cancel", "drain"};
    begin_test(SUITE, "batch_stopped_midway[%s]", next[_i]);
    const unsigned n = 40, stop_at = 3;
    pool_gate g;
    sl_pool *p = batch_pool(n, stop_at, UINT_MAX, &g);
    settle(p, 1, SL_POOL_STOPPED);
    atomic_store(&g_paused, 1);
    check_ran_in_order(stop_at + 1);
    sl_pool_stats s = stats_of(p);
    CHECK_MSG(s.queued == n - stop_at - 1 && s.running == 0 && s.completed == stop_at + 2 &&
                  s.submitted == n + 1,
              "stopped in a batch: queued %llu running %u completed %llu submitted %llu",
              ULL(s.queued), s.running, ULL(s.completed), ULL(s.submitted));
    CHECK_MSG(sl_pool_wait_idle(p, 20 * MS) == SL_TIMEDOUT,
              "wait_idle with the rest of a batch not started");
    sl_test_sleep_ns(30 * MS);
    CHECK_MSG(atomic_load(&g_order_n) == stop_at + 1, "%u jobs ran while stopped",
              atomic_load(&g_order_n) - stop_at - 1);
    if (_i == 0 || _i == 3)
        atomic_store(&g_paused, 0);
    sl_status st = _i == 0   ? sl_pool_start(p)
                   : _i == 1 ? sl_pool_reset(p)
                             : sl_pool_shutdown(p, _i == 2 ? SL_CANCEL : SL_DRAIN);
    CHECK_MSG(st == SL_OK, "%s = %s", next[_i], sl_status_str(st));
    settle(p, 2, _i == 0 ? SL_POOL_RUNNING : _i == 1 ? SL_POOL_STOPPED : SL_POOL_SHUTDOWN);
    if (_i == 0)
        wait_idle_ok(p);
    if (_i == 0 || _i == 3)
        check_ran_in_order(n);
    else
        check_discarded_from(stop_at + 1, n, _i == 1 ? SL_DISCARD_RESET : SL_DISCARD_CANCELLED);
    if (_i == 1) { /* nothing of the discarded batch is left to run */
        CHECK_MSG(stats_of(p).queued == 0, "queued %llu after reset", ULL(stats_of(p).queued));
        atomic_store(&g_paused, 0);
        CHECK_MSG(sl_pool_start(p) == SL_OK, "start");
        settle(p, 3, SL_POOL_RUNNING);
        wait_idle_ok(p);
        sl_test_sleep_ns(20 * MS);
        check_ran_in_order(stop_at + 1);
    }
    end_book(p);
    gate_destroy(&g);
}
END_TEST

/* The worker dies in the middle of a batch: the job it died in is discarded
 * (WORKER_DIED), and the rest of its batch runs once each, in order, on the
 * replacement — nothing lost with the thread, nothing run twice. */
START_TEST(test_batch_worker_dies_midway)
{
    begin_test(SUITE, "batch_worker_dies_midway");
    const unsigned n = 40, die_at = 5;
    pool_gate g;
    sl_pool *p = batch_pool(n, UINT_MAX, die_at, &g);
    wait_idle_ok(p);
    check_ran_in_order(n); /* the dying job logged itself before it died */
    for (unsigned i = 0; i < n; i++)
        CHECK_MSG(atomic_load(&g_drec[i].times) == (i == die_at),
                  "job %u discarded %u times", i, atomic_load(&g_drec[i].times));
    CHECK_MSG(atomic_load(&g_drec[die_at].why) == SL_DISCARD_WORKER_DIED, "the dead job's "
              "discard: %s", discard_name(atomic_load(&g_drec[die_at].why)));
    sl_pool_stats s = stats_of(p);
    CHECK_MSG(s.died == 1 && s.respawned == 1 && s.completed == n && s.discarded == 1 &&
                  s.queued == 0,
              "died %llu respawned %llu completed %llu discarded %llu queued %llu", ULL(s.died),
              ULL(s.respawned), ULL(s.completed), ULL(s.discarded), ULL(s.queued));
    end_book(p);
    gate_destroy(&g);
}
END_TEST

/* A worker blocked in the first job of its batch does not hold the rest
 * back: a worker that joins takes them (steals from the batch) while the
 * first is still blocked. */
START_TEST(test_batch_stolen_from_busy_worker)
{
    begin_test(SUITE, "batch_stolen_from_busy_worker");
    sl_pool_opts o = begin_book();
    o.max_workers = 2;
    o.active_workers = 1;
    sl_pool *p = new_pool(&o);
    pool_gate first, held;
    gate_init(&first);
    gate_init(&held);
    CHECK_MSG(sl_pool_submit(p, gate_job, &first) == SL_OK, "submit gate");
    CHECK_MSG(gate_wait_entered(&first, 1, POOL_SOON_NS), "the gate job did not start");
    const unsigned n = 10;
    atomic_uint ran = 0;
    CHECK_MSG(sl_pool_submit(p, gate_job, &held) == SL_OK, "submit the blocking job");
    for (unsigned i = 0; i < n; i++)
        CHECK_MSG(submit_count(p, &ran) == SL_OK, "submit %u", i);
    gate_open(&first); /* the one worker takes the blocking job and the rest at once */
    CHECK_MSG(gate_wait_entered(&held, 1, POOL_SOON_NS), "the blocking job did not start");
    sl_pool_stats s = stats_of(p);
    CHECK_MSG(s.queued == n && s.running == 1, "queued %llu running %u", ULL(s.queued),
              s.running);
    CHECK_MSG(sl_pool_set_workers(p, 2) == SL_OK, "set_workers(2)");
    settle(p, 1, SL_POOL_RUNNING);
    CHECK_MSG(wait_uint_ge(&ran, n, POOL_SOON_NS),
              "%u of the %u jobs queued behind a blocked job ran on the other worker",
              atomic_load(&ran), n);
    CHECK_MSG(gate_left(&held) == 0, "the blocking job finished early");
    gate_open(&held);
    wait_idle_ok(p);
    CHECK_MSG(atomic_load(&ran) == n, "%u jobs ran, want %u", atomic_load(&ran), n);
    end_book(p);
    gate_destroy(&first);
    gate_destroy(&held);
}
END_TEST

/* ---- misuse: sl_pool_free from the pool's own thread ------------------------ */

static void free_own_pool_job(void *arg, void *worker_ctx)
{
    sl_pool_free(arg);
}

/* Freeing the pool from one of its jobs would wait for that job's thread to
 * exit: it must abort with a message (SIGABRT) instead of hanging. */
START_TEST(test_free_from_own_job_aborts)
{
    sl_pool *p;
    sl_pool_opts o = { .max_workers = 2 };
    ck_assert_int_eq(sl_pool_new(&p, &o), SL_OK);
    ck_assert_int_eq(sl_pool_submit(p, free_own_pool_job, p), SL_OK);
    sl_pool_wait_idle(p, 10 * SEC);
    ck_abort_msg("a job's sl_pool_free did not abort");
}
END_TEST

/* A job left in a worker's batch ring by a stop runs after the start,
 * which wakes that worker with the wake token; it submits a child and
 * waits for it while a second worker sleeps. The child must run: the
 * token goes before the ring's job runs, as before a fresh one, or every
 * submit sees "someone searches" and wakes nobody (found by review: the
 * child waited until its parent gave up; planted bug
 * POOL_RING_JOB_KEEPS_TOKEN). */
static atomic_int rt_gate, rt_first_started, rt_child_ran, rt_child_waited;

static void rt_first(void *arg, void *ctx)
{
    (void)arg, (void)ctx;
    atomic_store(&rt_first_started, 1);
    while (!atomic_load(&rt_gate))
        sl_test_sleep_ns(MS);
}

static void rt_child(void *arg, void *ctx)
{
    (void)arg, (void)ctx;
    atomic_store(&rt_child_ran, 1);
}

static void rt_parent(void *arg, void *ctx)
{
    (void)ctx;
    sl_pool *p = arg;
    sl_pool_wait_ready(p, SL_FOREVER);
    if (sl_pool_set_workers(p, 2) != SL_OK)
        return;
    sl_pool_wait_ready(p, SL_FOREVER); /* the second worker is there */
    sl_pool_stats st;
    for (int i = 0; i < 400; i++) { /* and parked */
        sl_pool_get_stats(p, &st);
        if (st.parked >= 1)
            break;
        sl_test_sleep_ns(5 * MS);
    }
    if (sl_pool_submit(p, rt_child, NULL) != SL_OK)
        return;
    uint64_t give_up = sl_now_ns() + 5 * SEC;
    while (!atomic_load(&rt_child_ran) && sl_now_ns() < give_up)
        sl_test_sleep_ns(MS);
    atomic_store(&rt_child_waited, atomic_load(&rt_child_ran) ? 1 : 2);
}

START_TEST(test_ring_job_after_start_wakes_for_its_child)
{
    sl_pool_opts o = {.max_workers = 2, .active_workers = 1, .start_stopped = true};
    sl_pool *p = new_pool(&o);
    ck_assert_int_eq(sl_pool_submit(p, rt_first, NULL), SL_OK);
    ck_assert_int_eq(sl_pool_submit(p, rt_parent, p), SL_OK); /* both queued while stopped */
    ck_assert_int_eq(sl_pool_start(p), SL_OK); /* the one worker takes both: rt_parent to its ring */
    uint64_t give_up = sl_now_ns() + 10 * SEC;
    while (!atomic_load(&rt_first_started) && sl_now_ns() < give_up)
        sl_test_sleep_ns(MS);
    ck_assert_msg(atomic_load(&rt_first_started), "the first job never started");
    /* The start may still be completing (a loaded machine): a stop before
     * then is SL_BUSY, the commands' contract. */
    ck_assert_int_eq(sl_pool_wait_ready(p, 20 * SEC), SL_OK);
    ck_assert_int_eq(sl_pool_stop(p), SL_OK); /* rt_parent stays in the ring */
    atomic_store(&rt_gate, 1);
    sl_pool_wait_ready(p, SL_FOREVER);
    sl_test_sleep_ns(50 * MS); /* the worker parks, its ring not empty */
    ck_assert_int_eq(sl_pool_start(p), SL_OK);
    ck_assert_int_eq(sl_pool_wait_idle(p, 20 * SEC), SL_OK);
    ck_assert_msg(atomic_load(&rt_child_waited) == 1,
                  "the ring's job waited 5 s for its child while a worker slept (%d)",
                  atomic_load(&rt_child_waited));
    sl_pool_free(p);
}
END_TEST


/* ---- review: a reset of a full bounded pool whose on_discard resubmits ----
 *
 * The contract lets callbacks submit, and a reset's on_discard submitting
 * is what reset_discards_what_came_before exercises. On a bounded pool that
 * is full, the sweep reports a job before it leaves `pending`, so a
 * blocking submit from that report waits for room that only its own
 * caller, the control thread, would make: the reset never completes. */

typedef struct full_reset {
    sl_pool *pool;
    atomic_uint resubmits, refused;
} full_reset;
static full_reset g_full_reset;

static void noop_job(void *arg, void *ctx) { (void)arg, (void)ctx; }

static void full_reset_discard(const sl_job *job, sl_discard why, void *user)
{
    full_reset *r = user;
    if (why != SL_DISCARD_RESET || job->arg != NULL)
        return; /* the resubmitted jobs (arg 1) are not resubmitted again */
    sl_job again = {.fn = noop_job, .arg = as_arg(1)};
    sl_status st = sl_pool_submit_job(r->pool, &again, SL_FOREVER);
    atomic_fetch_add(st == SL_OK ? &r->resubmits : &r->refused, 1);
}

START_TEST(test_reset_full_bounded_pool_resubmit)
{
    begin_test(SUITE, "reset_full_bounded_pool_resubmit");
    full_reset *r = &g_full_reset;
    memset(r, 0, sizeof *r);
    sl_pool_opts o = {.max_workers = 1, .queue_capacity = 4, .start_stopped = true,
                      .on_discard = full_reset_discard, .user = r};
    r->pool = new_pool(&o);
    for (unsigned i = 0; i < 4; i++)
        CHECK_MSG(sl_pool_try_submit(r->pool, noop_job, NULL) == SL_OK, "submit %u", i);
    CHECK_MSG(sl_pool_reset(r->pool) == SL_OK, "reset");
    sl_status st = sl_pool_wait_ready(r->pool, 2 * SEC);
    unsigned done = atomic_load(&r->resubmits);
    sl_pool_free(r->pool); /* its shutdown lets a blocked submit go (SL_CLOSED) */
    CHECK_MSG(st == SL_OK, "a reset of a full bounded pool whose on_discard resubmits did not "
              "complete in 2 s (wait_ready = %s, %u of 4 resubmits done)",
              sl_status_str(st), done);
}
END_TEST

/* A death during a shrink that the pool does not replace (the shrink wanted
 * one worker fewer anyway) is not counted later: the spawn of a grow that
 * comes afterwards is no replacement (it was counted in respawned). */
static void gate_then_exit_job(void *arg, void *ctx)
{
    gate_job(arg, ctx);
    pthread_exit(NULL);
}

START_TEST(test_unreplaced_death_not_respawned)
{
    begin_test(SUITE, "unreplaced_death_not_respawned");
    sl_pool_opts o = {.max_workers = 2, .active_workers = 2};
    sl_pool *p = new_pool(&o);
    sl_pool_stats s;
    CHECK_MSG(wait_workers(p, 2, POOL_SOON_NS, &s), "workers %u, want 2", s.workers);
    pool_gate stays, dies;
    gate_init(&stays);
    gate_init(&dies);
    CHECK_MSG(sl_pool_submit(p, gate_job, &stays) == SL_OK, "submit gate");
    CHECK_MSG(sl_pool_submit(p, gate_then_exit_job, &dies) == SL_OK, "submit the dying gate");
    CHECK_MSG(gate_wait_entered(&stays, 1, POOL_SOON_NS) &&
                  gate_wait_entered(&dies, 1, POOL_SOON_NS),
              "the gate jobs did not start");
    CHECK_MSG(sl_pool_set_workers(p, 1) == SL_OK, "set_workers(1)");
    gate_open(&dies); /* that worker dies: the one left is what the shrink wants */
    for (uint64_t end = sl_test_now_ns() + POOL_SOON_NS;; sl_test_sleep_ns(MS)) {
        s = stats_of(p);
        if (s.died == 1 || sl_test_now_ns() > end)
            break;
    }
    sl_test_sleep_ns(20 * MS); /* the control thread sees the death, wants no one back */
    gate_open(&stays);
    CHECK_MSG(sl_pool_wait_ready(p, POOL_SOON_NS) == SL_OK, "the shrink did not complete");
    s = stats_of(p);
    CHECK_MSG(s.died == 1 && s.respawned == 0 && s.retired == 0 && s.workers == 1,
              "died %llu respawned %llu retired %llu workers %u, want 1, 0, 0, 1",
              ULL(s.died), ULL(s.respawned), ULL(s.retired), s.workers);
    CHECK_MSG(sl_pool_set_workers(p, 2) == SL_OK, "set_workers(2)");
    CHECK_MSG(sl_pool_wait_ready(p, POOL_SOON_NS) == SL_OK, "the grow did not complete");
    CHECK_MSG(wait_workers(p, 2, POOL_SOON_NS, &s), "workers %u, want 2", s.workers);
    CHECK_MSG(s.respawned == 0, "the grow's spawn was counted as a replacement "
              "(respawned %llu)", ULL(s.respawned));
    sl_pool_free(p);
    gate_destroy(&stays);
    gate_destroy(&dies);
    ASSERT_CLEAN();
}
END_TEST

/* A worker that retires, then dies in its worker_fini, leaves as retired: it
 * is neither counted a death nor replaced (a replacement would undo the
 * shrink; it was counted both, and respawned). */
static atomic_bool g_fini_dies;
static void dying_fini(unsigned id, void *worker_ctx, void *user)
{
    (void)id, (void)worker_ctx, (void)user;
    if (atomic_load(&g_fini_dies))
        pthread_exit(NULL);
}

START_TEST(test_retired_worker_dies_in_fini)
{
    begin_test(SUITE, "retired_worker_dies_in_fini");
    atomic_store(&g_fini_dies, true);
    sl_pool_opts o = {.max_workers = 3, .active_workers = 3, .worker_fini = dying_fini};
    sl_pool *p = new_pool(&o);
    sl_pool_stats s;
    CHECK_MSG(wait_workers(p, 3, POOL_SOON_NS, &s), "workers %u, want 3", s.workers);
    CHECK_MSG(sl_pool_set_workers(p, 1) == SL_OK, "set_workers(1)");
    CHECK_MSG(sl_pool_wait_ready(p, POOL_SOON_NS) == SL_OK, "the shrink did not complete");
    sl_test_sleep_ns(20 * MS); /* room for a replacement the control thread would start */
    s = stats_of(p);
    CHECK_MSG(s.workers == 1 && s.retired == 2 && s.died == 0 && s.respawned == 0 &&
                  s.spawned == 3,
              "workers %u retired %llu died %llu respawned %llu spawned %llu, want 1, 2, 0, "
              "0, 3", s.workers, ULL(s.retired), ULL(s.died), ULL(s.respawned), ULL(s.spawned));
    atomic_store(&g_fini_dies, false);
    sl_pool_free(p);
    ASSERT_CLEAN();
}
END_TEST

/* A worker that dies in its worker_init (pthread_exit) never had a context:
 * worker_fini is not run for it. It counts as a death and is replaced, and
 * the replacement runs the jobs. */
static atomic_uint g_init_calls, g_fini_of_dead;
static void *dying_init(unsigned id, void *user)
{
    (void)user;
    if (atomic_fetch_add(&g_init_calls, 1) == 0)
        pthread_exit(NULL);
    return (void *)(uintptr_t)(id + 1);
}
static void fini_of_init(unsigned id, void *worker_ctx, void *user)
{
    (void)user;
    if (worker_ctx != (void *)(uintptr_t)(id + 1))
        atomic_fetch_add(&g_fini_of_dead, 1);
}

START_TEST(test_worker_dies_in_init)
{
    begin_test(SUITE, "worker_dies_in_init");
    atomic_store(&g_init_calls, 0);
    atomic_store(&g_fini_of_dead, 0);
    sl_pool_opts o = {.max_workers = 1, .worker_init = dying_init,
                      .worker_fini = fini_of_init};
    sl_pool *p = new_pool(&o);
    atomic_uint ran = 0;
    for (int i = 0; i < 10; i++)
        CHECK_MSG(submit_count(p, &ran) == SL_OK, "submit %d", i);
    CHECK_MSG(sl_pool_wait_idle(p, POOL_SOON_NS) == SL_OK, "not idle: ran %u", atomic_load(&ran));
    sl_pool_stats s = stats_of(p);
    CHECK_MSG(atomic_load(&ran) == 10 && s.died == 1 && s.respawned == 1 && s.spawned == 2,
              "ran %u died %llu respawned %llu spawned %llu, want 10, 1, 1, 2",
              atomic_load(&ran), ULL(s.died), ULL(s.respawned), ULL(s.spawned));
    sl_pool_free(p);
    CHECK_MSG(atomic_load(&g_fini_of_dead) == 0,
              "worker_fini ran %u time(s) for a worker whose worker_init never returned",
              atomic_load(&g_fini_of_dead));
    ASSERT_CLEAN();
}
END_TEST

/* A job's wait_ready while sl_pool_free's shutdown is in progress waits on
 * itself: the shutdown completes only once the job is over (pool.h). With a
 * timeout it times out, and free then completes. */
typedef struct ready_in_free {
    sl_pool *pool;
    pool_gate gate;
    _Atomic int got;
} ready_in_free;

static void wait_ready_job(void *arg, void *ctx)
{
    ready_in_free *r = arg;
    gate_job(&r->gate, ctx);
    while (sl_pool_ready(r->pool)) /* until free's shutdown has begun */
        sl_test_sleep_ns(MS);
    atomic_store(&r->got, (int)sl_pool_wait_ready(r->pool, 50 * MS));
}

START_TEST(test_job_wait_ready_during_free)
{
    begin_test(SUITE, "job_wait_ready_during_free");
    static ready_in_free r;
    sl_pool_opts o = {.max_workers = 1};
    r.pool = new_pool(&o);
    gate_init(&r.gate);
    atomic_store(&r.got, -1);
    CHECK_MSG(sl_pool_submit(r.pool, wait_ready_job, &r) == SL_OK, "submit");
    CHECK_MSG(gate_wait_entered(&r.gate, 1, POOL_SOON_NS), "the job did not start");
    gate_open(&r.gate);
    sl_pool_free(r.pool);
    CHECK_MSG(atomic_load(&r.got) == SL_TIMEDOUT,
              "the job's wait_ready during free returned %d, want SL_TIMEDOUT",
              atomic_load(&r.got));
    gate_destroy(&r.gate);
    ASSERT_CLEAN();
}
END_TEST

/* ---- review: on_discard of a dead worker's job resubmits to a full bounded
 * pool of one worker ------------------------------------------------------
 *
 * The natural retry pattern: on_discard(SL_DISCARD_WORKER_DIED) submits the
 * job again with the blocking call. The queue is full and the dead worker
 * was the only one: the room has to come from its replacement, so the
 * report must not hold the replacement back. */
typedef struct died_retry {
    sl_pool *pool;
    pool_gate gate;
    atomic_uint resubmits, refused, retried;
} died_retry;
static died_retry g_died_retry;

static void died_retry_job(void *arg, void *ctx)
{
    (void)ctx;
    atomic_fetch_add((atomic_uint *)arg, 1);
}

static void died_gate_then_exit(void *arg, void *ctx)
{
    gate_job(arg, ctx);
    pthread_exit(NULL);
}

static void died_retry_discard(const sl_job *job, sl_discard why, void *user)
{
    died_retry *r = user;
    if (why != SL_DISCARD_WORKER_DIED || job->fn != died_gate_then_exit)
        return; /* the cancel of a pool that hung (the stats tell) */
    sl_job again = {.fn = died_retry_job, .arg = &r->retried};
    sl_status st = sl_pool_submit_job(r->pool, &again, SL_FOREVER);
    atomic_fetch_add(st == SL_OK ? &r->resubmits : &r->refused, 1);
}

START_TEST(test_died_job_resubmit_full_bounded_pool)
{
    begin_test(SUITE, "died_job_resubmit_full_bounded_pool");
    died_retry *r = &g_died_retry;
    memset(r, 0, sizeof *r);
    gate_init(&r->gate);
    sl_pool_opts o = {.max_workers = 1, .queue_capacity = 4, .name = "dr",
                      .on_discard = died_retry_discard, .user = r};
    sl_pool *p = r->pool = new_pool(&o);
    atomic_uint ran = 0;
    CHECK_MSG(sl_pool_submit(p, died_gate_then_exit, &r->gate) == SL_OK, "submit the dying job");
    CHECK_MSG(gate_wait_entered(&r->gate, 1, POOL_SOON_NS), "the dying job did not start");
    for (unsigned i = 0; i < 4; i++)
        CHECK_MSG(sl_pool_try_submit(p, died_retry_job, &ran) == SL_OK, "submit %u", i);
    CHECK_MSG(sl_pool_try_submit(p, died_retry_job, &ran) == SL_FULL, "the queue is not full");
    gate_open(&r->gate); /* the worker dies; its report waits for room */
    sl_status st = sl_pool_wait_idle(p, 2 * SEC);
    unsigned done = atomic_load(&r->resubmits);
    sl_pool_stats s = stats_of(p);
    sl_pool_free(p); /* its shutdown lets a blocked submit go (SL_CLOSED) */
    gate_destroy(&r->gate);
    CHECK_MSG(st == SL_OK && done == 1,
              "on_discard of a dead worker's job that resubmits it to a full bounded pool "
              "of one worker did not finish in 2 s (wait_idle = %s, resubmits %u, queued "
              "%llu, workers %u)", sl_status_str(st), done, ULL(s.queued), s.workers);
    CHECK_MSG(atomic_load(&ran) == 4 && atomic_load(&r->retried) == 1,
              "%u of 4 queued jobs and %u of 1 retries ran", atomic_load(&ran),
              atomic_load(&r->retried));
    CHECK_MSG(s.died == 1 && s.respawned == 1 && s.discarded == 1 && s.completed == 5 &&
                  s.submitted == 6 && s.queued == 0 && s.running == 0,
              "died %llu respawned %llu discarded %llu completed %llu submitted %llu queued "
              "%llu running %u, want 1, 1, 1, 5, 6, 0, 0", ULL(s.died), ULL(s.respawned),
              ULL(s.discarded), ULL(s.completed), ULL(s.submitted), ULL(s.queued), s.running);
    ASSERT_CLEAN();
}
END_TEST

/* A worker that dies in a job and then in its worker_fini — which runs
 * inside the same cleanup handler, before the job's report, and sends the
 * thread through that handler again — reports the job once, leaves the
 * pool once, and is replaced; wait_idle sees the report. */
static atomic_uint g_fd_discards;

static void fd_discard(const sl_job *job, sl_discard why, void *user)
{
    (void)job, (void)user;
    if (why == SL_DISCARD_WORKER_DIED)
        atomic_fetch_add(&g_fd_discards, 1);
}

START_TEST(test_died_job_then_fini_dies)
{
    begin_test(SUITE, "died_job_then_fini_dies");
    atomic_store(&g_fd_discards, 0);
    atomic_store(&g_fini_dies, true);
    sl_pool_opts o = {.max_workers = 1, .name = "fd", .worker_fini = dying_fini,
                      .on_discard = fd_discard};
    sl_pool *p = new_pool(&o);
    pool_gate g;
    gate_init(&g);
    atomic_uint ran = 0;
    CHECK_MSG(sl_pool_submit(p, died_gate_then_exit, &g) == SL_OK, "submit the dying job");
    CHECK_MSG(gate_wait_entered(&g, 1, POOL_SOON_NS), "the dying job did not start");
    CHECK_MSG(sl_pool_submit(p, died_retry_job, &ran) == SL_OK, "submit");
    gate_open(&g); /* the worker dies in the job, then in its worker_fini */
    sl_status st = sl_pool_wait_idle(p, 2 * SEC);
    sl_pool_stats s;
    bool replaced = wait_workers(p, 1, POOL_SOON_NS, &s);
    atomic_store(&g_fini_dies, false);
    sl_pool_free(p);
    gate_destroy(&g);
    ASSERT_CLEAN();
    CHECK_MSG(st == SL_OK, "wait_idle = %s after a death whose worker_fini died too",
              sl_status_str(st));
    CHECK_MSG(atomic_load(&g_fd_discards) == 1 && atomic_load(&ran) == 1,
              "the dead job reached on_discard %u times, want 1; the next job ran %u times",
              atomic_load(&g_fd_discards), atomic_load(&ran));
    CHECK_MSG(replaced && s.died == 1 && s.respawned == 1 && s.discarded == 1,
              "workers %u died %llu respawned %llu discarded %llu, want 1, 1, 1, 1", s.workers,
              ULL(s.died), ULL(s.respawned), ULL(s.discarded));
}
END_TEST

/* An on_discard that ends its thread (pthread_exit) while reporting a dead
 * worker's job: the handler runs again, and must not report the job a
 * second time (once it did, and for ever when on_discard exited each
 * time). The job counts as discarded once, wait_idle returns, and the
 * replacement runs the next job. */
static void exiting_discard(const sl_job *job, sl_discard why, void *user)
{
    (void)job, (void)user;
    if (why == SL_DISCARD_WORKER_DIED && atomic_fetch_add(&g_fd_discards, 1) < 3)
        pthread_exit(NULL);
}

START_TEST(test_died_job_discard_exits)
{
    begin_test(SUITE, "died_job_discard_exits");
    atomic_store(&g_fd_discards, 0);
    sl_pool_opts o = {.max_workers = 1, .name = "dx", .on_discard = exiting_discard};
    sl_pool *p = new_pool(&o);
    pool_gate g;
    gate_init(&g);
    atomic_uint ran = 0;
    CHECK_MSG(sl_pool_submit(p, died_gate_then_exit, &g) == SL_OK, "submit the dying job");
    CHECK_MSG(gate_wait_entered(&g, 1, POOL_SOON_NS), "the dying job did not start");
    CHECK_MSG(sl_pool_submit(p, died_retry_job, &ran) == SL_OK, "submit");
    gate_open(&g); /* the worker dies in the job, then in on_discard */
    sl_status st = sl_pool_wait_idle(p, 2 * SEC);
    sl_pool_stats s;
    bool replaced = wait_workers(p, 1, POOL_SOON_NS, &s);
    sl_pool_free(p);
    gate_destroy(&g);
    ASSERT_CLEAN();
    CHECK_MSG(st == SL_OK, "wait_idle = %s after on_discard ended its thread",
              sl_status_str(st));
    CHECK_MSG(atomic_load(&g_fd_discards) == 1 && atomic_load(&ran) == 1,
              "the dead job reached on_discard %u times, want 1; the next job ran %u times",
              atomic_load(&g_fd_discards), atomic_load(&ran));
    CHECK_MSG(replaced && s.died == 1 && s.discarded == 1,
              "workers %u died %llu discarded %llu, want 1, 1, 1", s.workers, ULL(s.died),
              ULL(s.discarded));
}
END_TEST

/* ---- review: a stop leaves a batch in a worker's ring, a shrink retires
 * that worker ----------------------------------------------------------------
 *
 * The one worker left must run the rest of that batch before the newer jobs
 * of its level ("FIFO within a level"). Staged: worker 0 alone takes a batch
 * of jobs 0..15, job 3 stops the pool; a grow while stopped starts worker 1,
 * held in its worker_init, so that the shrink after it can only retire
 * worker 0; then worker 1 is let go and the pool started. */
static struct {
    sl_pool *pool;
    atomic_int hold_init;
    atomic_uint order_n, stopped;
    unsigned order[64];
} g_rb;

static void *rb_init(unsigned id, void *user)
{
    (void)user;
    while (id == 1 && atomic_load(&g_rb.hold_init))
        sl_test_sleep_ns(MS / 10);
    return NULL;
}

static void rb_job(void *arg, void *ctx)
{
    (void)ctx;
    unsigned i = (unsigned)of_arg(arg);
    unsigned at = atomic_fetch_add(&g_rb.order_n, 1);
    if (at < (unsigned)N_OF(g_rb.order))
        g_rb.order[at] = i;
    if (i != 3)
        return;
    if (sl_pool_stop(g_rb.pool) != SL_OK)
        rec_fail("stop from job 3");
    atomic_store(&g_rb.stopped, 1);
}

START_TEST(test_retired_batch_runs_before_newer_jobs)
{
    begin_test(SUITE, "retired_batch_runs_before_newer_jobs");
    memset(&g_rb, 0, sizeof g_rb);
    atomic_store(&g_rb.hold_init, 1);
    const unsigned n = 40;
    sl_pool_opts o = {.max_workers = 2, .active_workers = 1, .name = "rb",
                      .worker_init = rb_init};
    sl_pool *p = g_rb.pool = new_pool(&o);
    pool_gate g;
    gate_init(&g);
    CHECK_MSG(sl_pool_submit(p, gate_job, &g) == SL_OK, "submit the gate");
    CHECK_MSG(gate_wait_entered(&g, 1, POOL_SOON_NS), "the gate job did not start");
    for (unsigned i = 0; i < n; i++)
        CHECK_MSG(sl_pool_submit(p, rb_job, as_arg(i)) == SL_OK, "submit %u", i);
    gate_open(&g); /* worker 0 takes jobs 0..15 at once; job 3 stops the pool */
    CHECK_MSG(wait_uint_ge(&g_rb.stopped, 1, POOL_SOON_NS), "job 3 did not stop the pool");
    CHECK_MSG(sl_pool_wait_ready(p, POOL_SOON_NS) == SL_OK && atomic_load(&g_rb.order_n) == 4,
              "the stop from job 3 did not complete (%u jobs ran)", atomic_load(&g_rb.order_n));
    CHECK_MSG(sl_pool_set_workers(p, 2) == SL_OK, "set_workers(2)");
    CHECK_MSG(sl_pool_wait_ready(p, POOL_SOON_NS) == SL_OK, "the grow did not complete");
    CHECK_MSG(sl_pool_set_workers(p, 1) == SL_OK, "set_workers(1)");
    CHECK_MSG(sl_pool_wait_ready(p, POOL_SOON_NS) == SL_OK, "the shrink did not complete");
    sl_pool_stats s = stats_of(p);
    CHECK_MSG(s.retired == 1 && s.queued == n - 4, "retired %llu queued %llu, want 1, %u",
              ULL(s.retired), ULL(s.queued), n - 4);
    atomic_store(&g_rb.hold_init, 0); /* worker 1, the one left */
    CHECK_MSG(sl_pool_start(p) == SL_OK, "start");
    wait_idle_ok(p);
    unsigned got = atomic_load(&g_rb.order_n);
    sl_pool_free(p);
    gate_destroy(&g);
    ASSERT_CLEAN();
    CHECK_MSG(got == n, "%u jobs ran, want %u", got, n);
    for (unsigned k = 0; k < got; k++)
        CHECK_MSG(g_rb.order[k] == k, "position %u: job %u ran, want job %u (the retired "
                  "worker's batch ran after newer jobs of its level)", k, g_rb.order[k], k);
}
END_TEST

/* ---- review: a unique job retried from its own on_discard report ---------
 *
 * A job that will not run — its worker died in it, a reset discarded it —
 * keeps its key through its on_discard report (the key's next job starts
 * after it), but it is neither queued nor running then. A retry of a
 * SL_JOB_UNIQUE job from there was refused with SL_EXISTS, naming a job
 * that did not exist, and the job was lost. The retry is accepted and waits
 * for the report; a second one, with the first now queued, is refused. The
 * dead worker's worker_fini, which runs before the report, may retry it
 * too. */
static _Thread_local bool t_unique_dying; /* this worker dies in the job */

typedef struct unique_retry {
    sl_pool *pool;
    bool from_fini;        /* the dead worker's worker_fini retries, not on_discard */
    atomic_uint dies;      /* jobs still to die in their worker */
    atomic_uint ran;
    atomic_int retry_st, again_st; /* the retry's status, and a second one's */
    atomic_bool in_report;
    atomic_uint overlapped; /* the retry started during the report */
} unique_retry;
static unique_retry g_unique_retry;

static void unique_retry_job(void *arg, void *ctx)
{
    unique_retry *r = arg;
    (void)ctx;
    if (atomic_load(&r->in_report))
        atomic_fetch_add(&r->overlapped, 1);
    if (atomic_exchange(&r->dies, 0)) {
        t_unique_dying = true;
        pthread_exit(NULL);
    }
    atomic_fetch_add(&r->ran, 1);
}

static void unique_retry_fini(unsigned id, void *worker_ctx, void *user)
{
    unique_retry *r = user;
    (void)id, (void)worker_ctx;
    if (!t_unique_dying || !r->from_fini)
        return;
    sl_job j = {.fn = unique_retry_job, .arg = r, .key = 3, .flags = SL_JOB_UNIQUE};
    atomic_store(&r->in_report, true);
    atomic_store(&r->retry_st, sl_pool_submit_job(r->pool, &j, 0));
}

static void unique_retry_discard(const sl_job *job, sl_discard why, void *user)
{
    unique_retry *r = user;
    (void)why;
    atomic_store(&r->in_report, true);
    if (!r->from_fini)
        atomic_store(&r->retry_st, sl_pool_submit_job(r->pool, job, 0));
    atomic_store(&r->again_st, sl_pool_submit_job(r->pool, job, 0));
    sl_test_sleep_ns(20 * MS); /* room for the retry to start too early */
    atomic_store(&r->in_report, false);
}

START_TEST(test_unique_retried_from_its_report)
{
    static const char *const mode[] = {"death", "reset", "death, from worker_fini"};
    bool death = _i != 1;
    begin_test(SUITE, "unique_retried_from_its_report[%s]", mode[_i]);
    unique_retry *r = &g_unique_retry;
    memset(r, 0, sizeof *r);
    r->from_fini = _i == 2;
    atomic_store(&r->dies, death ? 1u : 0u);
    sl_pool_opts o = {.max_workers = 1, .start_stopped = !death, .worker_fini = unique_retry_fini,
                      .on_discard = unique_retry_discard, .user = r};
    sl_pool *p = r->pool = new_pool(&o);
    sl_job j = {.fn = unique_retry_job, .arg = r, .key = 3, .flags = SL_JOB_UNIQUE};
    CHECK_MSG(sl_pool_submit_job(p, &j, 0) == SL_OK, "submit");
    if (!death) {
        CHECK_MSG(sl_pool_reset(p) == SL_OK, "reset");
        CHECK_MSG(sl_pool_wait_ready(p, POOL_SOON_NS) == SL_OK, "the reset did not complete");
        CHECK_MSG(sl_pool_start(p) == SL_OK, "start");
    }
    sl_status st = sl_pool_wait_idle(p, 2 * SEC);
    sl_pool_stats s = stats_of(p);
    sl_pool_free(p);
    CHECK_MSG(st == SL_OK, "wait_idle = %s", sl_status_str(st));
    CHECK_MSG(atomic_load(&r->retry_st) == SL_OK,
              "%s's retry of the unique job that will not run: %s, want SL_OK (the key's "
              "only job is neither queued nor running)",
              r->from_fini ? "worker_fini" : "on_discard",
              sl_status_str((sl_status)atomic_load(&r->retry_st)));
    CHECK_MSG(atomic_load(&r->again_st) == SL_EXISTS, "a second retry, the first queued: %s",
              sl_status_str((sl_status)atomic_load(&r->again_st)));
    CHECK_MSG(atomic_load(&r->ran) == 1 && atomic_load(&r->overlapped) == 0,
              "the retry ran %u times, %u of them during the report; want 1, 0",
              atomic_load(&r->ran), atomic_load(&r->overlapped));
    CHECK_MSG(s.discarded == 1 && s.completed == 1 && s.queued == 0,
              "discarded %llu completed %llu queued %llu, want 1, 1, 0", ULL(s.discarded),
              ULL(s.completed), ULL(s.queued));
    ASSERT_CLEAN();
}
END_TEST

#if defined(SL_FAULT_INJECT) && SL_FAULT_INJECT
/* ---- review: idle while a worker is held between counting its ring busy
 * and filling it -------------------------------------------------------------
 *
 * A worker that takes a batch counts its ring in rings_busy, then fills the
 * ring (pool_worker.c, keep). A worker preempted between the two makes
 * sl__pool_has_work say "work" while no list and no ring holds a job: the
 * other, idle, worker then polls, finds nothing to take, polls again and
 * never parks, for as long as the first stays off the CPU — the pathology
 * docs/guarantees.md ("Pool wake-ups: idle means asleep, also while a
 * submit is half done") rules out for a held submitter. The first worker is
 * held there deterministically at the fill's fault-injection step (the
 * first step it passes with rings_busy counted and every ring empty). */
#include "internal/testing.h"

static struct {
    sl_pool *pool;
    atomic_int stopped, go, done;
    atomic_uint ran;
} g_rw;

static bool rw_in_window(void)
{
    sl_pool *p = g_rw.pool;
    if (atomic_load(&p->rings_busy) == 0)
        return false;
    for (unsigned s = 0; s < p->opts.max_workers; s++)
        if (sl__pool_ring_len(&p->slots[s].ring) != 0)
            return false;
    return true;
}

static void rw_stop(void *ctx, unsigned step)
{
    (void)ctx, (void)step;
    if (atomic_load(&g_rw.done))
        return;
    if (!rw_in_window()) {
        sl__fi_arm(1, rw_stop, NULL); /* the next step, then */
        return;
    }
    atomic_store(&g_rw.done, 1);
    atomic_store(&g_rw.stopped, 1);
    while (!atomic_load(&g_rw.go))
        sl_test_sleep_ns(MS / 10);
}

static void rw_count(void *arg, void *ctx) { (void)arg, (void)ctx; atomic_fetch_add(&g_rw.ran, 1); }

/* Queues 4 jobs behind itself (both workers busy), then arms its worker. */
static void rw_arm_job(void *arg, void *ctx)
{
    (void)ctx;
    for (unsigned i = 0; i < 4; i++)
        if (sl_pool_submit(arg, rw_count, NULL) != SL_OK)
            rec_fail("submit %u", i);
    sl__fi_arm(1, rw_stop, NULL);
}

START_TEST(test_idle_asleep_while_batch_fill_held)
{
    begin_test(SUITE, "idle_asleep_while_batch_fill_held");
    memset(&g_rw, 0, sizeof g_rw);
    sl_pool_opts o = {.max_workers = 2, .name = "rw"};
    sl_pool *p = g_rw.pool = new_pool(&o);
    pool_gate x;
    gate_init(&x);
    CHECK_MSG(sl_pool_submit(p, gate_job, &x) == SL_OK, "submit the gate");
    CHECK_MSG(gate_wait_entered(&x, 1, POOL_SOON_NS), "the gate job did not start");
    CHECK_MSG(sl_pool_submit(p, rw_arm_job, p) == SL_OK, "submit the arming job");
    uint64_t end = sl_test_now_ns() + POOL_SOON_NS;
    while (!atomic_load(&g_rw.stopped) && sl_test_now_ns() < end)
        sl_test_sleep_ns(MS);
    CHECK_MSG(atomic_load(&g_rw.stopped), "the worker never reached its ring's fill");
    gate_open(&x); /* the other worker is idle from here on */
    sl_test_sleep_ns(20 * MS);
    uint64_t cpu0 = process_cpu_ns();
    bool parked = false;
    sl_pool_stats s;
    for (end = sl_test_now_ns() + 300 * MS; !parked && sl_test_now_ns() < end;
         sl_test_sleep_ns(MS)) {
        s = stats_of(p);
        parked = s.parked >= 1;
    }
    sl_test_sleep_ns(100 * MS);
    uint64_t cpu = process_cpu_ns() - cpu0;
    atomic_store(&g_rw.go, 1);
    wait_idle_ok(p);
    fprintf(stderr, "[%s] fill held: the idle worker parked %s, %llu ms of CPU in ~%s\n", g_test,
            parked ? "yes" : "no", ULL(cpu / MS), parked ? "0.1 s" : "0.4 s");
    CHECK_MSG(atomic_load(&g_rw.ran) == 4, "%u of 4 jobs ran", atomic_load(&g_rw.ran));
    sl_pool_free(p);
    gate_destroy(&x);
    ASSERT_CLEAN();
    CHECK_MSG(parked, "the idle worker never parked while another was held between counting "
              "its ring busy and filling it (%llu ms of CPU)", ULL(cpu / MS));
}
END_TEST

/* ---- review: a wake token given back by a waker that found no sleeper ------
 *
 * wake_one takes the token (searching 0 -> 1), then claims a sleeper; when
 * none is left to claim (the one it saw re-checked, found the work and
 * cleared its own bit) it gives the token back with a plain decrement. A
 * submit that counted that token as a searcher meanwhile woke nobody, and
 * the worker, back from its job and asleep again, is never told. Staged
 * with fault-injection stops: W (the one worker) between setting its sleep
 * bit and its re-check; P (a submitter) holding the token before its claim,
 * then after the failed claim. */
static struct {
    sl_pool *pool;
    atomic_int w_stopped, w_go, w_done;
    atomic_int p_stop, p_stopped, p_go; /* p_stop: which of P's stops (1, 2) is next */
    atomic_uint ran;
} g_tk;

static bool tk_bit_set(void)
{
    return (atomic_load(&g_tk.pool->idle.sleep_bits[0]) & 1u) != 0;
}

static void tk_w_stop(void *ctx, unsigned step)
{
    (void)ctx, (void)step;
    if (atomic_load(&g_tk.w_done))
        return;
    if (!tk_bit_set() || atomic_load(&g_tk.pool->idle.searching) != 0) {
        sl__fi_arm(1, tk_w_stop, NULL); /* registered, and no longer counted as a searcher */
        return;
    }
    atomic_store(&g_tk.w_done, 1);
    atomic_store(&g_tk.w_stopped, 1);
    while (!atomic_load(&g_tk.w_go))
        sl_test_sleep_ns(MS / 10);
}

static void tk_p_stop(void *ctx, unsigned step)
{
    (void)ctx, (void)step;
    int which = atomic_load(&g_tk.p_stop);
    if (which == 1 && atomic_load(&g_tk.pool->idle.searching) != 1) {
        sl__fi_arm(1, tk_p_stop, NULL); /* not at the token yet */
        return;
    }
    if (which > 2)
        return;
    atomic_store(&g_tk.p_stopped, which);
    while (atomic_load(&g_tk.p_go) < which)
        sl_test_sleep_ns(MS / 10);
    atomic_store(&g_tk.p_stop, which + 1);
    if (which == 1)
        sl__fi_arm(1, tk_p_stop, NULL); /* the next step: after the claim */
}

static void tk_arm_job(void *arg, void *ctx) { (void)arg, (void)ctx; sl__fi_arm(1, tk_w_stop, NULL); }
static void tk_count(void *arg, void *ctx) { (void)arg, (void)ctx; atomic_fetch_add(&g_tk.ran, 1); }

static void *tk_submitter(void *arg)
{
    pool_gate *g = arg;
    sl__fi_arm(1, tk_p_stop, NULL);
    if (sl_pool_submit(g_tk.pool, gate_job, g) != SL_OK)
        rec_fail("submit J1");
    sl__fi_disarm();
    return NULL;
}

static bool tk_wait(atomic_int *v, int want)
{
    uint64_t end = sl_test_now_ns() + POOL_SOON_NS;
    while (atomic_load(v) != want && sl_test_now_ns() < end)
        sl_test_sleep_ns(MS / 10);
    return atomic_load(v) == want;
}

START_TEST(test_wake_token_given_back_hands_on)
{
    begin_test(SUITE, "wake_token_given_back_hands_on");
    memset(&g_tk, 0, sizeof g_tk);
    atomic_store(&g_tk.p_stop, 1);
    sl_pool_opts o = {.max_workers = 1, .name = "tk"};
    sl_pool *p = g_tk.pool = new_pool(&o);
    pool_gate j1;
    gate_init(&j1);
    CHECK_MSG(sl_pool_submit(p, tk_arm_job, NULL) == SL_OK, "submit the arming job");
    CHECK_MSG(tk_wait(&g_tk.w_stopped, 1), "W never stopped with its sleep bit set");
    pthread_t pt;
    ck_assert_int_eq(pthread_create(&pt, NULL, tk_submitter, &j1), 0);
    CHECK_MSG(tk_wait(&g_tk.p_stopped, 1), "P never stopped holding the token");
    atomic_store(&g_tk.w_go, 1); /* W re-checks, sees J1, clears its own bit, runs J1 */
    CHECK_MSG(gate_wait_entered(&j1, 1, POOL_SOON_NS), "J1 did not start");
    atomic_store(&g_tk.p_go, 1); /* P's claim finds no sleeper */
    CHECK_MSG(tk_wait(&g_tk.p_stopped, 2), "P never reached the token's give-back");
    gate_open(&j1); /* W finishes J1 and parks: the token counts as a searcher */
    sl_pool_stats s;
    CHECK_MSG(wait_parked(p, 1, POOL_SOON_NS, &s), "W did not park (parked %u)", s.parked);
    sl_test_sleep_ns(20 * MS);
    CHECK_MSG(sl_pool_submit(p, tk_count, NULL) == SL_OK, "submit J2"); /* sees "searching" */
    atomic_store(&g_tk.p_go, 2); /* P gives the token back */
    pthread_join(pt, NULL);
    bool ran = wait_uint_ge(&g_tk.ran, 1, 500 * MS);
    s = stats_of(p);
    fprintf(stderr, "[%s] J2 %s within 500 ms (queued %llu, parked %u)\n", g_test,
            ran ? "ran" : "did not run", ULL(s.queued), s.parked);
    CHECK_MSG(sl_pool_submit(p, tk_count, NULL) == SL_OK, "submit J3"); /* rescues J2 */
    wait_idle_ok(p);
    sl_pool_free(p);
    gate_destroy(&j1);
    ASSERT_CLEAN();
    CHECK_MSG(ran, "a job submitted while a waker held the token it then gave back waited "
              "with its worker asleep (queued %llu, parked %u) until the next submit",
              ULL(s.queued), s.parked);
}
END_TEST

/* ---- review: a reset while a dead worker's report hands its key on ------
 *
 * A worker dies in a job of key 5 and the pool is stopped (the stop does not
 * wait for the report: the dead worker has left). The key's next job B,
 * accepted long before, waits aside. The report ends by handing the key to
 * B: B leaves the key's list, then is pushed. A reset whose sweep ran
 * between the two found B in neither place, and B — queued before the reset
 * — ran after the next start instead of being discarded. The dying thread
 * is stopped there: armed in on_discard, at its first atomic step once B has
 * left the key's list. */
static struct {
    sl_pool *pool;
    pool_gate gate;
    atomic_int stopped, go, done;
    atomic_uint b_ran, resets;
} g_rh;

static void rh_stop(void *ctx, unsigned step)
{
    (void)ctx, (void)step;
    if (atomic_load(&g_rh.done))
        return;
    sl_pool_stats s;
    sl_pool_get_stats(g_rh.pool, &s);
    if (s.waiting_on_key != 0) {
        sl__fi_arm(1, rh_stop, NULL); /* B still waits: the next step, then */
        return;
    }
    atomic_store(&g_rh.done, 1);
    atomic_store(&g_rh.stopped, 1);
    while (!atomic_load(&g_rh.go))
        sl_test_sleep_ns(MS / 10);
}

static void rh_discard(const sl_job *job, sl_discard why, void *user)
{
    (void)job, (void)user;
    if (why == SL_DISCARD_WORKER_DIED)
        sl__fi_arm(1, rh_stop, NULL);
    else if (why == SL_DISCARD_RESET)
        atomic_fetch_add(&g_rh.resets, 1);
}

static void rh_b(void *arg, void *ctx) { (void)arg, (void)ctx; atomic_fetch_add(&g_rh.b_ran, 1); }

START_TEST(test_reset_while_death_hands_key_on)
{
    begin_test(SUITE, "reset_while_death_hands_key_on");
    memset(&g_rh, 0, sizeof g_rh);
    gate_init(&g_rh.gate);
    sl_pool_opts o = {.max_workers = 1, .name = "rh", .on_discard = rh_discard};
    sl_pool *p = g_rh.pool = new_pool(&o);
    sl_job a = {.fn = died_gate_then_exit, .arg = &g_rh.gate, .key = 5};
    sl_job b = {.fn = rh_b, .key = 5};
    CHECK_MSG(sl_pool_submit_job(p, &a, 0) == SL_OK, "submit A");
    CHECK_MSG(gate_wait_entered(&g_rh.gate, 1, POOL_SOON_NS), "A did not start");
    CHECK_MSG(sl_pool_submit_job(p, &b, 0) == SL_OK, "submit B");
    CHECK_MSG(sl_pool_stop(p) == SL_OK, "stop");
    gate_open(&g_rh.gate); /* A's worker dies */
    bool held = false;
    for (uint64_t end = sl_test_now_ns() + POOL_SOON_NS; !held && sl_test_now_ns() < end;
         sl_test_sleep_ns(MS))
        held = atomic_load(&g_rh.stopped);
    CHECK_MSG(sl_pool_wait_ready(p, POOL_SOON_NS) == SL_OK, "the stop did not complete");
    CHECK_MSG(sl_pool_reset(p) == SL_OK, "reset");
    (void)sl_pool_wait_ready(p, 50 * MS); /* with the handover held, or not */
    atomic_store(&g_rh.go, 1);
    CHECK_MSG(sl_pool_wait_ready(p, POOL_SOON_NS) == SL_OK, "the reset did not complete");
    CHECK_MSG(sl_pool_start(p) == SL_OK, "start");
    sl_status st = sl_pool_wait_idle(p, 2 * SEC);
    sl_pool_free(p);
    gate_destroy(&g_rh.gate);
    ASSERT_CLEAN();
    CHECK_MSG(held, "the dying thread was not stopped between B's release and its push");
    CHECK_MSG(st == SL_OK, "wait_idle = %s", sl_status_str(st));
    CHECK_MSG(atomic_load(&g_rh.resets) == 1 && atomic_load(&g_rh.b_ran) == 0,
              "B, queued for its key since before the reset, was discarded by it %u times "
              "and ran %u times after the start; want 1, 0",
              atomic_load(&g_rh.resets), atomic_load(&g_rh.b_ran));
}
END_TEST
#endif

static Suite *pool_suite(void)
{
    Suite *s = suite_create("pool");
    TCase *tc = tcase_create("input");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_defaults);
    tcase_add_test(tc, test_default_name_and_ctx);
    tcase_add_test(tc, test_new_bad_opts);
    tcase_add_test(tc, test_submit_bad_input);
    tcase_add_test(tc, test_commands_bad_input);
    tcase_add_test(tc, test_commands_after_shutdown);
    suite_add_tcase(s, tc);

    tc = tcase_create("jobs");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_worker_ctx_and_names, 0, 3);
    tcase_add_loop_test(tc, test_priority_order_stopped, 0, N_OF(k_dispatch));
    tcase_add_loop_test(tc, test_priority_order_gated, 0, N_OF(k_dispatch));
    tcase_add_loop_test(tc, test_key_order_across_priorities, 0, N_OF(k_dispatch));
    tcase_add_loop_test(tc, test_busy_key_holds_back_no_other, 0, N_OF(k_dispatch));
    tcase_add_test(tc, test_unique_keys);
    tcase_add_test(tc, test_unique_refused_when_full);
    tcase_add_test(tc, test_keys_table_shrinks);
    tcase_add_test(tc, test_jobs_submit_jobs);
    suite_add_tcase(s, tc);

    tc = tcase_create("commands");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_pause_and_resume);
    tcase_add_test(tc, test_reset_discards_queued);
    tcase_add_loop_test(tc, test_reset_discards_what_came_before, 0, 2);
    tcase_add_test(tc, test_shutdown_drain_from_stopped);
    tcase_add_test(tc, test_shutdown_cancel);
    tcase_add_loop_test(tc, test_free_discards_queued, 0, 3);
    tcase_add_test(tc, test_wait_idle);
    tcase_add_test(tc, test_set_workers_running);
    tcase_add_test(tc, test_set_workers_stopped);
    tcase_add_test(tc, test_on_state_once_per_command);
    tcase_add_test(tc, test_stats_consistent);
    suite_add_tcase(s, tc);

    tc = tcase_create("misuse");
    tcase_set_timeout(tc, 30);
    tcase_add_test_raise_signal(tc, test_free_from_own_job_aborts, SIGABRT);
    suite_add_tcase(s, tc);

    tc = tcase_create("workers");
    tcase_set_timeout(tc, 90);
    tcase_add_checked_fixture(tc, NULL, restore_ops);
    tcase_add_loop_test(tc, test_worker_death, 0, 4);
    tcase_add_test(tc, test_back_pressure);
    tcase_add_test(tc, test_idle_uses_no_cpu);
    tcase_add_loop_test(tc, test_auto_trim, 0, 2);
    tcase_add_test(tc, test_one_wakeup_per_job);
    tcase_add_test(tc, test_idle_asleep_while_submit_held);
    suite_add_tcase(s, tc);

    tc = tcase_create("faults");
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, NULL, restore_ops);
    tcase_add_test(tc, test_pool_new_thread_create_fails);
    tcase_add_test(tc, test_pool_spawn_fails_retried);
    tcase_add_loop_test(tc, test_pool_alloc_fails_at_every_k, 0, 2);
    suite_add_tcase(s, tc);

    tc = tcase_create("batches");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_batch_stopped_midway, 0, 4);
    tcase_add_test(tc, test_batch_worker_dies_midway);
    tcase_add_test(tc, test_batch_stolen_from_busy_worker);
    tcase_add_test(tc, test_ring_job_after_start_wakes_for_its_child);
    suite_add_tcase(s, tc);

    tc = tcase_create("corners"); /* found by review */
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_reset_full_bounded_pool_resubmit);
    tcase_add_test(tc, test_retired_worker_dies_in_fini);
    tcase_add_test(tc, test_worker_dies_in_init);
    tcase_add_test(tc, test_job_wait_ready_during_free);
    tcase_add_test(tc, test_unreplaced_death_not_respawned);
    tcase_add_test(tc, test_died_job_resubmit_full_bounded_pool);
    tcase_add_test(tc, test_died_job_then_fini_dies);
    tcase_add_test(tc, test_died_job_discard_exits);
    tcase_add_test(tc, test_retired_batch_runs_before_newer_jobs);
    tcase_add_loop_test(tc, test_unique_retried_from_its_report, 0, 3);
#if defined(SL_FAULT_INJECT) && SL_FAULT_INJECT
    tcase_add_test(tc, test_idle_asleep_while_batch_fill_held);
    tcase_add_test(tc, test_wake_token_given_back_hands_on);
    tcase_add_test(tc, test_reset_while_death_hands_key_on);
#endif
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return sl_test_run(pool_suite()); }
