/*
 * tests/unit_exec.c — the spawn/sync executor (sluice/exec.h), one behaviour
 * per test.
 *
 * Workers per executor: SL_EXEC_WORKERS (default 4: more than this machine's
 * cores, so that stealing, parking and waking all happen). Sizes scale with
 * SL_STRESS_SCALE. Tasks never call into Check: they record failures with
 * rec_fail and the test asserts ASSERT_CLEAN() at the end.
 */
#include "harness.h"
#include "stress_common.h"

#include <pthread.h>
#include <alloca.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/resource.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <sluice/exec.h>
#include "../pool/exec_internal.h" /* the depth switch and the helper slots */
#include "sysops.h"

static unsigned workers(void)
{
    return sl_test_env_uint("SL_EXEC_WORKERS", 4);
}

static sl_exec *new_exec(unsigned threads)
{
    sl_exec_opts o = { threads, "t-exec" };
    sl_exec *ex = NULL;
    ck_assert_int_eq(sl_exec_new(&ex, &o), SL_OK);
    ck_assert_ptr_nonnull(ex);
    return ex;
}

/* ---- fib and nqueens: spawn at every level ------------------------------ */

typedef struct fib_args {
    sl_exec *ex;
    long n;
    bool tough; /* a refused spawn is computed inline (allocation faults) */
} fib_args;

/* The stack probe: while on, fib_task notes the lowest frame it ran at on
 * one chosen thread (how deep helping nested there). */
static atomic_bool g_probe_on;
static pthread_t g_probe_thread;
static atomic_uintptr_t g_probe_low;

static void probe_depth(void)
{
    if (!atomic_load_explicit(&g_probe_on, memory_order_relaxed) ||
        !pthread_equal(pthread_self(), g_probe_thread))
        return;
    uintptr_t here = (uintptr_t)__builtin_frame_address(0);
    if (here < atomic_load_explicit(&g_probe_low, memory_order_relaxed))
        atomic_store_explicit(&g_probe_low, here, memory_order_relaxed);
}

static void fib_task(void *args, void *ret)
{
    probe_depth();
    fib_args a = *(fib_args *)args;
    if (a.n < 2) {
        *(long *)ret = a.n;
        return;
    }
    long x = 0, y = 0;
    fib_args child = { a.ex, a.n - 1, a.tough };
    sl_future f = sl_spawn(a.ex, fib_task, &child, sizeof child, sizeof x);
    bool spawned = sl_is_spawned(&f);
    if (!spawned && !a.tough)
        rec_fail("fib(%ld): spawn refused", child.n);
    child.n = a.n - 2;
    fib_task(&child, &y);
    child.n = a.n - 1;
    if (!spawned)
        fib_task(&child, &x);
    else if (sl_sync(&f, &x) != SL_OK)
        rec_fail("fib(%ld): sync failed", a.n - 1);
    *(long *)ret = x + y;
}

static long fib_serial(long n)
{
    return n < 2 ? n : fib_serial(n - 1) + fib_serial(n - 2);
}

static long fib_on(sl_exec *ex, long n)
{
    fib_args a = { ex, n, false };
    long r = -1;
    sl_future f = sl_spawn(ex, fib_task, &a, sizeof a, sizeof r);
    ck_assert(sl_is_spawned(&f));
    ck_assert_int_eq(sl_sync(&f, &r), SL_OK);
    return r;
}

START_TEST(test_fib_matches_serial)
{
    begin_test("exec", "fib");
    sl_exec *ex = new_exec(workers());
    ck_assert_int_eq(fib_on(ex, 27), fib_serial(27));
    ck_assert_int_eq(fib_on(ex, 1), 1);
    sl_exec_free(ex);
    ASSERT_CLEAN();
}
END_TEST

typedef struct queens_args {
    sl_exec *ex;
    int n, row;
    uint32_t cols, diag1, diag2;
} queens_args;

/* Counts placements of queens in rows row..n-1; one task per free column. */
static void queens_task(void *args, void *ret)
{
    queens_args a = *(queens_args *)args;
    long count = 0;
    if (a.row == a.n) {
        *(long *)ret = 1;
        return;
    }
    sl_future f[32];
    int nf = 0;
    uint32_t all = (1u << a.n) - 1u;
    uint32_t free_cols = all & ~(a.cols | a.diag1 | a.diag2);
    while (free_cols) {
        uint32_t bit = free_cols & -free_cols;
        free_cols &= free_cols - 1;
        queens_args c = { a.ex, a.n, a.row + 1, a.cols | bit, ((a.diag1 | bit) << 1) & all,
                          (a.diag2 | bit) >> 1 };
        f[nf++] = sl_spawn(a.ex, queens_task, &c, sizeof c, sizeof(long));
    }
    for (int i = 0; i < nf; i++) {
        long sub = 0;
        if (sl_sync(&f[i], &sub) != SL_OK)
            rec_fail("queens: sync failed");
        count += sub;
    }
    *(long *)ret = count;
}

/* ---- stack depth: helping must not nest without bound -------------------- */

/* Threads created with a small stack (pthread_setattr_default_np reaches
 * the executor's workers too), so that helping that nests without bound
 * overflows in a moment instead of after minutes. */
#define SMALL_STACK ((size_t)256 * 1024)

static void set_default_stack(size_t size)
{
    pthread_attr_t a;
    ck_assert_int_eq(pthread_attr_init(&a), 0);
    ck_assert_int_eq(pthread_attr_setstacksize(&a, size), 0);
    ck_assert_int_eq(pthread_setattr_default_np(&a), 0);
    pthread_attr_destroy(&a);
}

typedef struct deep_run {
    sl_exec *ex;
    long n;
    int reps;
    long result;
} deep_run;

/* A foreign thread that syncs fib with a spawn at every level: its sync
 * helps, and the tasks it steals sync and help in turn. */
static void *deep_foreign(void *arg)
{
    deep_run *r = arg;
    for (int i = 0; i < r->reps; i++)
        r->result = fib_on(r->ex, r->n);
    return NULL;
}

/* Two workers and a foreign thread, all on small stacks, run fib with a
 * spawn at every level again and again: each thread stops stealing once
 * past half its stack, so none overflows (SIGSEGV before the fix). */
START_TEST(test_deep_helping_fits_small_stacks)
{
    begin_test("exec", "deep helping");
    size_t old_size = 0;
    pthread_attr_t old;
    ck_assert_int_eq(pthread_getattr_default_np(&old), 0);
    ck_assert_int_eq(pthread_attr_getstacksize(&old, &old_size), 0);
    pthread_attr_destroy(&old);
    set_default_stack(SMALL_STACK);
    deep_run r = { new_exec(2), 27, (int)sl_test_scaled(10, 2), -1 };
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, deep_foreign, &r), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    set_default_stack(old_size);
    ck_assert_int_eq(r.result, fib_serial(r.n));
    sl_exec_free(r.ex);
    ASSERT_CLEAN();
}
END_TEST

/* Where a thread's stack bounds cannot be found — the main thread's come
 * from /proc/self/maps, which a sandbox may hide — the depth rule falls back
 * to a quarter of the assumed stack below the first waiting frame instead
 * of switching off. On the main thread (of the test's process), with
 * sl__thread_getattr failing: fib syncs near the top of the stack help (the
 * thread runs some of the tasks); then, from 128 KiB further down — past
 * the 64 KiB budget that 256 KiB default stacks give — fib syncs again and
 * must complete without the thread running a single stolen task (before
 * the fallback, the rule was off and it helped at any depth). */
static int getattr_fails(pthread_attr_t *attr)
{
    (void)attr;
    return ENOENT;
}

static const sl_sys_ops k_no_getattr_ops = {.thread_getattr = getattr_fails};

#define DEEP_BYTES ((size_t)128 * 1024) /* below the caller */

/* fib(n) as a task that a worker has taken before the caller syncs, so
 * whatever the caller runs while it waits was stolen (a sync that finds its
 * task untaken runs it inline, as a serial call would: no helping). */
typedef struct {
    atomic_bool *started;
    fib_args fib;
} taken_fib_args;

static void taken_fib_task(void *args, void *ret)
{
    taken_fib_args *a = args;
    atomic_store(a->started, true);
    fib_task(&a->fib, ret);
}

static uintptr_t g_taken_frame; /* where the last fib_taken synced */

static __attribute__((noinline)) long fib_taken(sl_exec *ex, long n)
{
    g_taken_frame = (uintptr_t)__builtin_frame_address(0);
    atomic_bool started = false;
    taken_fib_args a = {&started, {ex, n, false}};
    long r = -1;
    sl_future f = sl_spawn(ex, taken_fib_task, &a, sizeof a, sizeof r);
    ck_assert(sl_is_spawned(&f));
    while (!atomic_load(&started))
        sched_yield();
    ck_assert_int_eq(sl_sync(&f, &r), SL_OK);
    return r;
}

/* Takes DEEP_BYTES of stack, then syncs fib(n) reps times, each taken by a
 * worker first. alloca, not a chain of frames with big arrays: under TSan
 * clang kept such a chain within a few KiB. */
static __attribute__((noinline)) long fib_from_below(sl_exec *ex, long n, int reps)
{
    volatile char *pad = alloca(DEEP_BYTES);
    pad[0] = 1;
    pad[DEEP_BYTES - 1] = 1;
    __asm__ volatile("" : : "r"(pad) : "memory"); /* pad is live below */
    long r = 0;
    for (int i = 0; i < reps; i++)
        r = fib_taken(ex, n);
    __asm__ volatile("" : : "r"(pad) : "memory");
    return r;
}

/* A task that says it started, then holds its worker a moment. */
static void started_then_hold(void *args, void *ret)
{
    atomic_store(*(atomic_bool **)args, true);
    sl_test_sleep_ns(20 * MS);
    *(int *)ret = 1;
}

/* Makes the calling thread wait once, here: the task runs on a worker (the
 * caller waits until it started), so the sync cannot run it inline. Where a
 * sync finds its task untaken (workers slow to start, as under TSan) it
 * runs it itself and never waits, and the floor would be set by a later,
 * deeper first wait. */
static void wait_once_here(sl_exec *ex)
{
    atomic_bool started = false;
    atomic_bool *flag = &started;
    int r = 0;
    sl_future f = sl_spawn(ex, started_then_hold, &flag, sizeof flag, sizeof r);
    ck_assert(sl_is_spawned(&f));
    while (!atomic_load(&started))
        sched_yield();
    ck_assert_int_eq(sl_sync(&f, &r), SL_OK);
    ck_assert_int_eq(r, 1);
}

START_TEST(test_deep_helping_bounds_unknown)
{
    begin_test("exec", "deep helping, stack bounds unknown");
    ck_assert_msg(getpid() == (pid_t)syscall(SYS_gettid), "not on the main thread");
    size_t old_size = 0;
    pthread_attr_t old;
    ck_assert_int_eq(pthread_getattr_default_np(&old), 0);
    ck_assert_int_eq(pthread_attr_getstacksize(&old, &old_size), 0);
    pthread_attr_destroy(&old);
    set_default_stack(SMALL_STACK); /* the fallback assumes the smaller stack */
    sl_test_sys_install(&k_no_getattr_ops);
    sl_exec *ex = new_exec(2);
    g_probe_thread = pthread_self();
    int reps = (int)sl_test_scaled(10, 2);
    atomic_store(&g_probe_low, UINTPTR_MAX);
    atomic_store(&g_probe_on, true);
    wait_once_here(ex); /* near the top: the first wait sets the floor */
    for (int i = 0; i < reps; i++)
        ck_assert_int_eq(fib_on(ex, 27), fib_serial(27));
    bool helped_high = atomic_load(&g_probe_low) != UINTPTR_MAX;
    atomic_store(&g_probe_low, UINTPTR_MAX);
    uintptr_t top = (uintptr_t)__builtin_frame_address(0);
    ck_assert_int_eq(fib_from_below(ex, 27, reps), fib_serial(27));
    uintptr_t low = atomic_load(&g_probe_low);
    ck_assert_msg(top - g_taken_frame >= DEEP_BYTES, "the deep syncs ran only %llu bytes "
                  "below the test's frame", ULL(top - g_taken_frame));
    atomic_store(&g_probe_on, false);
    sl_exec_free(ex);
    sl_test_sys_restore();
    set_default_stack(old_size);
    fprintf(stderr, "[exec] stack bounds unknown: the main thread helped near the top: %s; "
            "128 KiB down: %s\n", helped_high ? "yes" : "no",
            low == UINTPTR_MAX ? "no" : "yes (wrong)");
    ck_assert_msg(low == UINTPTR_MAX, "the main thread ran stolen tasks past its fallback "
                  "floor, %zu KiB below its first wait", DEEP_BYTES / 1024);
    ASSERT_CLEAN();
}
END_TEST

/* ---- faults: thread creation and allocation fail ---------------------- */

static void *no_op_thread(void *arg) { return arg; }

/* Threads of this process now. A sanitizer runtime starts a helper thread of
 * its own at the first pthread_create (TSan does): start and join one first,
 * so that the helper is in every count, before and after. */
static unsigned threads_now(void)
{
    static bool warmed;
    if (!warmed) {
        pthread_t t;
        ck_assert_int_eq(pthread_create(&t, NULL, no_op_thread, NULL), 0);
        pthread_join(t, NULL);
        warmed = true;
    }
    unsigned n = sl_test_thread_count();
    ck_assert_uint_gt(n, 0);
    return n;
}

/* Back to `base` threads or fewer soon (a joined thread can stay listed in
 * /proc for a moment). Fewer is no leak: pthread_join returns when the
 * kernel clears the thread's id, before it leaves the list, so a thread
 * joined just before `base` was counted (threads_now's own) may be gone
 * by now. */
static void expect_threads(unsigned base, const char *when)
{
    unsigned n = threads_now();
    for (int i = 0; i < 2000 && n > base; i++, n = threads_now())
        sl_test_sleep_ns(MS);
    ck_assert_msg(n <= base, "%s: %u threads, %u before", when, n, base);
}

static atomic_uint_fast64_t g_tc_attempts, g_tc_fail_at;

static int tc_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *),
                     void *arg)
{
    if (atomic_fetch_add(&g_tc_attempts, 1) + 1 == atomic_load(&g_tc_fail_at))
        return EAGAIN;
    return pthread_create(thread, attr, start, arg);
}

static const sl_sys_ops k_tc_ops = {.thread_create = tc_create};

/* sl_exec_new with the k-th worker start failing, every k until none
 * fails: SL_ENOMEM, *out untouched and every started worker joined; or an
 * executor that works. */
START_TEST(test_exec_new_thread_create_fails)
{
    begin_test("exec", "thread start fails");
    unsigned base = threads_now(), refused = 0, k = 1;
    for (;; k++) {
        atomic_store(&g_tc_attempts, 0);
        atomic_store(&g_tc_fail_at, k);
        sl_test_sys_install(&k_tc_ops);
        sl_exec *ex = (sl_exec *)&k; /* must stay untouched on failure */
        sl_exec_opts o = { 3, "tcx" };
        sl_status st = sl_exec_new(&ex, &o);
        bool last = atomic_load(&g_tc_attempts) < k;
        sl_test_sys_restore();
        ck_assert_msg(st == SL_OK || st == SL_ENOMEM, "k %u: %s", k, sl_status_str(st));
        if (st == SL_OK) {
            ck_assert_int_eq(fib_on(ex, 15), fib_serial(15));
            sl_exec_free(ex);
        } else {
            refused++;
            ck_assert_msg(ex == (sl_exec *)&k, "k %u: *out written on failure", k);
        }
        expect_threads(base, st == SL_OK ? "after free" : "after a refused sl_exec_new");
        if (last)
            break;
    }
    ck_assert_msg(refused == 3 && k == 4, "%u of %u starts refused the executor", refused, k);
    ASSERT_CLEAN();
}
END_TEST

typedef struct fan_args {
    sl_scope *scope;
    atomic_uint *leaves;
} fan_args;

static void leaf_task(void *args, void *ret)
{
    (void)ret;
    atomic_fetch_add((*(fan_args *)args).leaves, 1);
}

/* Spawns 600 leaves into the scope from a worker: past the deque's first
 * 256 slots, so it grows. */
static void fan_task(void *args, void *ret)
{
    (void)ret;
    fan_args a = *(fan_args *)args;
    for (int i = 0; i < 600; i++)
        sl_scope_spawn(a.scope, leaf_task, &a, sizeof a);
}

/* Everything in the executor that allocates — creation (workers, deques,
 * mailboxes, idle slots, injector), task records, deque growth — with
 * allocation k failing, every k until a run sees no failure. A refused
 * spawn returns a cleared future and runs nothing; a scope's task that
 * cannot be queued runs inline; so every leaf runs once and fib is right. */
START_TEST(test_exec_alloc_fails_at_every_k)
{
    begin_test("exec", "allocation fails");
    unsigned base = threads_now(), refused = 0, k = 1;
    for (;; k++) {
        sl_test_fail_alloc_at(k);
        sl_exec *ex = NULL;
        sl_exec_opts o = { 2, "tcx" };
        sl_status st = sl_exec_new(&ex, &o);
        ck_assert_msg(st == SL_OK || st == SL_ENOMEM, "k %u: %s", k, sl_status_str(st));
        if (st == SL_OK) {
            atomic_uint leaves = 0;
            sl_scope s;
            sl_scope_begin(ex, &s);
            fan_args fa = { &s, &leaves };
            sl_scope_spawn(&s, fan_task, &fa, sizeof fa);
            sl_scope_end(&s);
            ck_assert_msg(atomic_load(&leaves) == 600, "k %u: %u of 600 leaves ran", k,
                          atomic_load(&leaves));
            fib_args a = { ex, 16, true };
            long r = -1;
            sl_future f = sl_submit(ex, fib_task, &a, sizeof a, sizeof r);
            if (sl_is_spawned(&f))
                ck_assert_int_eq(sl_sync(&f, &r), SL_OK);
            else
                fib_task(&a, &r);
            ck_assert_int_eq(r, fib_serial(16));
            sl_exec_free(ex);
        }
        refused += st != SL_OK;
        bool last = sl_test_allocs() < k;
        sl_test_alloc_faults_off();
        expect_threads(base, "after the run");
        if (last)
            break;
    }
    fprintf(stderr, "[exec] allocation k = 1 .. %u failed: sl_exec_new refused %u times\n",
            k - 1, refused);
    ck_assert_msg(refused >= 1 && k > 10, "the faults missed: %u runs, %u refused", k, refused);
    ASSERT_CLEAN();
}
END_TEST

/* Deep workers steal nothing while they wait. The foreign thread syncing fib
 * here helps, and the tasks it runs spawn: those children must sit where the
 * foreign thread can take them back itself (its helper slot), or every
 * worker waits on a task the foreign thread runs while the foreign thread
 * waits on children no worker will take. */
START_TEST(test_deep_workers_foreign_helper_live)
{
    begin_test("exec", "deep workers, helping foreign thread");
    atomic_store(&sl__exec_deep_workers, 1);
    sl_exec *ex = new_exec(2);
    int reps = (int)sl_test_scaled(200, 20);
    for (int i = 0; i < reps; i++)
        ck_assert_int_eq(fib_on(ex, 18), fib_serial(18));
    sl_exec_free(ex);
    atomic_store(&sl__exec_deep_workers, 0);
    ASSERT_CLEAN();
}
END_TEST

/* A deep waiter still runs what is sent to its mailbox, and must be woken
 * for it: W0 waits deep for X, which W1 stole; X submits S, which can only
 * go to W0's mailbox (never to its submitter), and waits for it. */
typedef struct mailbox_run {
    sl_exec *ex;
    atomic_int x_started;
} mailbox_run;

static void mb_s_task(void *args, void *ret)
{
    *(int *)ret = 42;
}

static void mb_x_task(void *args, void *ret)
{
    mailbox_run *r = *(mailbox_run **)args;
    atomic_store(&r->x_started, 1);
    sl_test_sleep_ns(50 * MS); /* W0 goes to sleep in its deep wait */
    sl_future s = sl_submit(r->ex, mb_s_task, NULL, 0, sizeof(int));
    if (!sl_is_spawned(&s))
        rec_fail("submit refused");
    int v = 0;
    if (sl_sync(&s, &v) != SL_OK)
        rec_fail("sync of the submitted task failed");
    *(int *)ret = v;
}

static void mb_a_task(void *args, void *ret)
{
    mailbox_run *r = *(mailbox_run **)args;
    sl_future x = sl_spawn(r->ex, mb_x_task, &r, sizeof r, sizeof(int));
    while (!atomic_load(&r->x_started)) /* the other worker stole X */
        sched_yield();
    int v = 0;
    if (sl_sync(&x, &v) != SL_OK) /* deep: runs only its own work */
        rec_fail("sync of X failed");
    *(int *)ret = v;
}

/* With every helper slot taken (by other helping threads, here by hand), a
 * foreign thread must not steal: what its stolen tasks spawned would wait in
 * the injector, which deep workers do not take from. */
START_TEST(test_deep_workers_no_free_slot_live)
{
    begin_test("exec", "deep workers, no free helper slot");
    atomic_store(&sl__exec_deep_workers, 1);
    sl_exec *ex = new_exec(2);
    for (unsigned i = 0; i < SL__HELPER_SLOTS; i++)
        atomic_store(&ex->helpers[i].owned, 1u);
    int reps = (int)sl_test_scaled(300, 30);
    for (int i = 0; i < reps; i++)
        ck_assert_int_eq(fib_on(ex, 18), fib_serial(18));
    for (unsigned i = 0; i < SL__HELPER_SLOTS; i++)
        atomic_store(&ex->helpers[i].owned, 0u);
    sl_exec_free(ex);
    atomic_store(&sl__exec_deep_workers, 0);
    ASSERT_CLEAN();
}
END_TEST

START_TEST(test_deep_waiter_runs_its_mailbox)
{
    begin_test("exec", "deep waiter's mailbox");
    atomic_store(&sl__exec_deep_workers, 1);
    mailbox_run r = { .ex = new_exec(2) };
    for (int i = 0; i < 3; i++) {
        atomic_store(&r.x_started, 0);
        mailbox_run *rp = &r;
        /* Submitted, so that it starts on a worker and this thread does not help. */
        sl_future a = sl_submit(r.ex, mb_a_task, &rp, sizeof rp, sizeof(int));
        ck_assert(sl_is_spawned(&a));
        while (!sl_is_ready(&a))
            sl_test_sleep_ns(MS);
        int v = 0;
        ck_assert_int_eq(sl_sync(&a, &v), SL_OK);
        ck_assert_int_eq(v, 42);
    }
    sl_exec_free(r.ex);
    atomic_store(&sl__exec_deep_workers, 0);
    ASSERT_CLEAN();
}
END_TEST

START_TEST(test_nqueens_10)
{
    begin_test("exec", "nqueens");
    sl_exec *ex = new_exec(workers());
    queens_args a = { ex, 10, 0, 0, 0, 0 };
    long r = 0;
    sl_future f = sl_spawn(ex, queens_task, &a, sizeof a, sizeof r);
    ck_assert_int_eq(sl_sync(&f, &r), SL_OK);
    ck_assert_int_eq(r, 724);
    sl_exec_free(ex);
    ASSERT_CLEAN();
}
END_TEST

/* ---- parallel_for -------------------------------------------------------- */

typedef struct pf_ctx {
    atomic_uint *hits;
    size_t lo, hi; /* the allocated index range */
    atomic_int bad;
} pf_ctx;

static void pf_body(size_t i, void *ctx)
{
    pf_ctx *c = ctx;
    if (i < c->lo || i >= c->hi) {
        atomic_store(&c->bad, 1);
        return;
    }
    atomic_fetch_add_explicit(&c->hits[i - c->lo], 1, memory_order_relaxed);
}

/* Runs parallel_for over [begin, end) with grain and checks exactly-once;
 * the hit array covers [begin - 8, end + 8) to catch overruns. */
static void check_parallel_for(sl_exec *ex, size_t begin, size_t end, size_t grain)
{
    size_t lo = begin >= 8 ? begin - 8 : 0, hi = (end > begin ? end : begin) + 8;
    pf_ctx c = { xcalloc(hi - lo, sizeof(atomic_uint)), lo, hi, 0 };
    sl_parallel_for(ex, begin, end, grain, pf_body, &c);
    ck_assert_int_eq(atomic_load(&c.bad), 0);
    for (size_t i = lo; i < hi; i++) {
        unsigned want = i >= begin && i < end ? 1 : 0;
        unsigned got = atomic_load(&c.hits[i - lo]);
        CHECK(got == want, "parallel_for [%zu, %zu) grain %zu: index %zu ran %u times", begin,
              end, grain, i, got);
    }
    free(c.hits);
}

START_TEST(test_parallel_for_exactly_once)
{
    sl_exec *ex = new_exec(workers());
    const size_t grains[] = { 0, 1, 7, 1000, 1u << 20 };
    const size_t ranges[][2] = { { 0, 1 }, { 0, 1000 }, { 13, 20013 }, { 5, 6 }, { 0, 100000 } };
    for (int r = 0; r < N_OF(ranges); r++)
        for (int g = 0; g < N_OF(grains); g++)
            check_parallel_for(ex, ranges[r][0], ranges[r][1], grains[g]);
    check_parallel_for(ex, 50, 50, 0);  /* empty */
    check_parallel_for(ex, 60, 10, 1);  /* begin > end: nothing */
    sl_parallel_for(NULL, 0, 10, 1, pf_body, NULL); /* refused, no crash */
    sl_parallel_for(ex, 0, 10, 1, NULL, NULL);
    sl_exec_free(ex);
}
END_TEST

typedef struct nested_pf {
    sl_exec *ex;
    atomic_uint *hits; /* rows * cols */
    size_t cols;
} nested_pf;

typedef struct row_ctx {
    nested_pf *outer;
    size_t row;
} row_ctx;

static void nested_col(size_t j, void *ctx)
{
    row_ctx *r = ctx;
    atomic_fetch_add(&r->outer->hits[r->row * r->outer->cols + j], 1);
}

static void nested_row(size_t i, void *ctx)
{
    nested_pf *n = ctx;
    row_ctx r = { n, i };
    sl_parallel_for(n->ex, 0, n->cols, 3, nested_col, &r);
}

START_TEST(test_parallel_for_nested)
{
    sl_exec *ex = new_exec(workers());
    size_t rows = 40, cols = 77;
    nested_pf n = { ex, xcalloc(rows * cols, sizeof(atomic_uint)), cols };
    sl_parallel_for(ex, 0, rows, 1, nested_row, &n);
    for (size_t i = 0; i < rows * cols; i++)
        CHECK(atomic_load(&n.hits[i]) == 1, "cell %zu ran %u times", i, atomic_load(&n.hits[i]));
    free(n.hits);
    sl_exec_free(ex);
}
END_TEST

/* ---- scopes -------------------------------------------------------------- */

typedef struct tree_args {
    sl_scope *scope;
    atomic_ulong *nodes;
    int depth, fanout;
} tree_args;

/* Each node counts itself and spawns fanout children into the same scope. */
static void tree_node(void *args, void *ret)
{
    (void)ret;
    tree_args a = *(tree_args *)args;
    atomic_fetch_add(a.nodes, 1);
    if (a.depth == 0)
        return;
    tree_args c = a;
    c.depth = a.depth - 1;
    for (int i = 0; i < a.fanout; i++)
        sl_scope_spawn(a.scope, tree_node, &c, sizeof c);
}

static unsigned long tree_size(int depth, int fanout)
{
    unsigned long n = 1, level = 1;
    for (int d = 0; d < depth; d++) {
        level *= (unsigned long)fanout;
        n += level;
    }
    return n;
}

static void run_tree(sl_exec *ex, int depth, int fanout)
{
    atomic_ulong nodes = 0;
    sl_scope s;
    sl_scope_begin(ex, &s);
    tree_args a = { &s, &nodes, depth, fanout };
    sl_scope_spawn(&s, tree_node, &a, sizeof a);
    sl_scope_end(&s);
    if (atomic_load(&nodes) != tree_size(depth, fanout))
        rec_fail("scope ended with %lu of %lu nodes done", atomic_load(&nodes),
                 tree_size(depth, fanout));
}

typedef struct scope_in_task_args {
    sl_exec *ex;
} scope_in_task_args;

/* A task that opens its own scope on a worker (the helping path). */
static void scope_in_task(void *args, void *ret)
{
    scope_in_task_args a = *(scope_in_task_args *)args;
    run_tree(a.ex, 5, 3);
    *(int *)ret = 1;
}

START_TEST(test_scope_nested_spawns)
{
    begin_test("exec", "scope");
    sl_exec *ex = new_exec(workers());
    run_tree(ex, 8, 3); /* from a foreign thread */
    scope_in_task_args a = { ex };
    sl_future f[8];
    for (int i = 0; i < 8; i++)
        f[i] = sl_spawn(ex, scope_in_task, &a, sizeof a, sizeof(int));
    for (int i = 0; i < 8; i++) {
        int one = 0;
        ck_assert_int_eq(sl_sync(&f[i], &one), SL_OK);
        ck_assert_int_eq(one, 1);
    }
    /* An empty scope ends at once; a scope may be begun again. */
    sl_scope s;
    sl_scope_begin(ex, &s);
    sl_scope_end(&s);
    sl_scope_begin(ex, &s);
    sl_scope_spawn(&s, NULL, NULL, 0); /* refused */
    sl_scope_spawn(&s, tree_node, NULL, sizeof(tree_args)); /* refused: no block */
    sl_scope_end(&s);
    sl_scope_end(&s); /* a second end: nothing to wait for, and no wait */
    /* Ended after its tasks, then ended again: returns too. */
    atomic_ulong nodes = 0;
    sl_scope_begin(ex, &s);
    tree_args t = { &s, &nodes, 2, 3 };
    sl_scope_spawn(&s, tree_node, &t, sizeof t);
    sl_scope_end(&s);
    ck_assert_uint_eq(atomic_load(&nodes), 13);
    sl_scope_end(&s);
    sl_scope_begin(NULL, &s); /* unusable: every call does nothing */
    sl_scope_spawn(&s, tree_node, NULL, 0);
    sl_scope_end(&s);
    sl_scope_end(NULL);
    sl_exec_free(ex);
    ASSERT_CLEAN();
}
END_TEST

typedef struct big_args {
    unsigned char bytes[SL_EXEC_PAYLOAD_MAX + 40];
    atomic_uint *sum;
} big_args;

static void big_task(void *args, void *ret)
{
    (void)ret;
    big_args *a = args;
    unsigned s = 0;
    for (size_t i = 0; i < sizeof a->bytes; i++)
        s += a->bytes[i];
    a->bytes[0] = 0xaa; /* its own copy: the caller's block must not change */
    atomic_fetch_add(a->sum, s);
}

START_TEST(test_scope_spawn_too_big_runs_inline)
{
    sl_exec *ex = new_exec(2);
    atomic_uint sum = 0;
    big_args a;
    for (size_t i = 0; i < sizeof a.bytes; i++)
        a.bytes[i] = (unsigned char)(i & 7);
    a.sum = &sum;
    unsigned want = 0;
    for (size_t i = 0; i < sizeof a.bytes; i++)
        want += a.bytes[i];
    sl_scope s;
    sl_scope_begin(ex, &s);
    sl_scope_spawn(&s, big_task, &a, sizeof a);
    ck_assert_uint_eq(atomic_load(&sum), want); /* ran before the spawn returned */
    sl_scope_end(&s);
    ck_assert_uint_eq(a.bytes[0], 0);
    ck_assert_uint_eq(a.bytes[1], 1);
    sl_exec_free(ex);
}
END_TEST

/* A scope task run on its spawning thread for want of a record gets its own
 * 16-aligned copy of its arguments, as a queued one does, with no memory to
 * be had for one: never the caller's bytes (unaligned here, and possibly
 * read-only), which it would write. A block too big for a record runs once
 * all the same. */
static const void *g_own_seen;
static atomic_uint g_own_runs;

static void own_copy_task(void *args, void *ret)
{
    (void)ret;
    g_own_seen = args;
    atomic_fetch_add(&g_own_runs, 1);
    ((unsigned char *)args)[0] = '!'; /* its own copy: it may write it */
}

START_TEST(test_scope_task_without_record_own_copy)
{
    sl_exec *ex = new_exec(2);
    SL_ALIGNAS(16) unsigned char caller[1 + SL_EXEC_PAYLOAD_MAX];
    memset(caller, 'c', sizeof caller);
    big_args big = { { 0 }, NULL };
    sl_test_fail_allocs(UINT64_MAX); /* the pool is empty: no record for this thread */
    sl_scope s;
    sl_scope_begin(ex, &s);
    sl_scope_spawn(&s, own_copy_task, caller + 1, SL_EXEC_PAYLOAD_MAX);
    const void *seen = g_own_seen;
    sl_scope_spawn(&s, own_copy_task, &big, sizeof big);
    sl_scope_end(&s);
    sl_test_alloc_faults_off();
    ck_assert_uint_eq(atomic_load(&g_own_runs), 2);
    ck_assert_msg(seen != caller + 1, "the task was handed the caller's bytes");
    ck_assert_msg(((uintptr_t)seen & 15) == 0, "arguments at %p: not 16-aligned", seen);
    ck_assert_uint_eq(caller[1], 'c');
    sl_exec_free(ex);
}
END_TEST

/* ---- submit never runs on the caller ------------------------------------- */

static void record_thread(void *args, void *ret)
{
    (void)args;
    *(pthread_t *)ret = pthread_self();
}

typedef struct submitter_args {
    sl_exec *ex;
    int rounds;
} submitter_args;

/* On a worker: submit, then sync at once — the caller has nothing else to do,
 * so a helping sync would be tempted to run the task itself. */
static void submitter_task(void *args, void *ret)
{
    submitter_args a = *(submitter_args *)args;
    int bad = 0;
    for (int i = 0; i < a.rounds; i++) {
        pthread_t ran;
        sl_future f = sl_submit(a.ex, record_thread, NULL, 0, sizeof ran);
        if (!sl_is_spawned(&f)) {
            rec_fail("submit from a worker refused");
            break;
        }
        if (sl_sync(&f, &ran) != SL_OK)
            rec_fail("sync of a submitted task failed");
        else if (pthread_equal(ran, pthread_self()))
            bad++;
    }
    *(int *)ret = bad;
}

START_TEST(test_submit_never_on_caller)
{
    begin_test("exec", "submit");
    for (unsigned threads = 2; threads <= workers() + 1; threads += 2) {
        sl_exec *ex = new_exec(threads);
        int rounds = (int)sl_test_scaled(2000, 100);
        for (int i = 0; i < rounds; i++) { /* from a foreign thread */
            pthread_t ran;
            sl_future f = sl_submit(ex, record_thread, NULL, 0, sizeof ran);
            ck_assert(sl_is_spawned(&f));
            ck_assert_int_eq(sl_sync(&f, &ran), SL_OK);
            ck_assert(!pthread_equal(ran, pthread_self()));
        }
        submitter_args a = { ex, rounds };
        sl_future fs[3];
        for (int i = 0; i < 3; i++) /* several submitters at once, all on workers */
            fs[i] = sl_spawn(ex, submitter_task, &a, sizeof a, sizeof(int));
        for (int i = 0; i < 3; i++) {
            int bad = -1;
            ck_assert_int_eq(sl_sync(&fs[i], &bad), SL_OK);
            ck_assert_msg(bad == 0, "%d submitted tasks ran on their submitter", bad);
        }
        sl_exec_free(ex);
    }
    ASSERT_CLEAN();
}
END_TEST

static void submit_on_single(void *args, void *ret)
{
    sl_exec *ex = *(sl_exec **)args;
    sl_future f = sl_submit(ex, record_thread, NULL, 0, sizeof(pthread_t));
    *(int *)ret = sl_is_spawned(&f);
}

START_TEST(test_submit_single_worker)
{
    sl_exec *ex = new_exec(1);
    pthread_t ran;
    sl_future f = sl_submit(ex, record_thread, NULL, 0, sizeof ran);
    ck_assert_int_eq(sl_sync(&f, &ran), SL_OK); /* a foreign submit is fine */
    ck_assert(!pthread_equal(ran, pthread_self()));
    int spawned = -1;
    f = sl_spawn(ex, submit_on_single, &ex, sizeof ex, sizeof spawned);
    ck_assert_int_eq(sl_sync(&f, &spawned), SL_OK);
    ck_assert_int_eq(spawned, 0); /* the only worker cannot submit to itself */
    sl_exec_free(ex);
}
END_TEST

/* ---- a foreign thread's sync helps --------------------------------------- */

enum { HELP_KIDS = 8 };

/* Shared by the blocker (on the only worker), its children and the test. */
typedef struct help_board {
    sl_exec *ex;
    sl_future kids[HELP_KIDS];
    pthread_t ran[HELP_KIDS];
    atomic_int published;        /* the blocker has spawned and stored the kids */
    atomic_int released;         /* the test lets the blocker return */
    atomic_int kids_done;
    sl_scope *scope;             /* the scope variant: kids go there, no futures */
} help_board;

typedef struct help_kid_args {
    help_board *b;
    int idx;
} help_kid_args;

/* Waits for flag, a bounded time; false (and a failure recorded) on time-out. */
static bool await_flag(atomic_int *flag, const char *what)
{
    uint64_t deadline = sl_test_now_ns() + 20 * SEC;
    while (!atomic_load_explicit(flag, memory_order_acquire)) {
        if (sl_test_now_ns() > deadline) {
            rec_fail("%s never came", what);
            return false;
        }
        sched_yield();
    }
    return true;
}

/* Kid 0 (with futures) first tries to free the executor — refused, since it
 * is a task of it even on a foreign thread — then syncs every other kid:
 * nested helping on the foreign thread's stack. */
static void help_kid(void *args, void *ret)
{
    (void)ret;
    help_kid_args a = *(help_kid_args *)args;
    help_board *b = a.b;
    b->ran[a.idx] = pthread_self();
    if (a.idx == 0 && !b->scope) {
        sl_exec_free(b->ex); /* must return at once: we are one of its tasks */
        await_flag(&b->published, "publication");
        for (int i = HELP_KIDS - 1; i >= 1; i--)
            if (sl_sync(&b->kids[i], NULL) != SL_OK)
                rec_fail("nested sync of kid %d failed", i);
    }
    atomic_fetch_add_explicit(&b->kids_done, 1, memory_order_release);
}

/* On the only worker: spawns the kids on its own deque, publishes them, and
 * blocks until released without syncing them — only a helping foreign thread
 * can run them meanwhile. */
static void help_blocker(void *args, void *ret)
{
    (void)ret;
    help_board *b = *(help_board **)args;
    for (int i = 0; i < HELP_KIDS; i++) {
        help_kid_args k = { b, i };
        if (b->scope)
            sl_scope_spawn(b->scope, help_kid, &k, sizeof k);
        else
            b->kids[i] = sl_spawn(b->ex, help_kid, &k, sizeof k, 0);
    }
    atomic_store_explicit(&b->published, 1, memory_order_release);
    await_flag(&b->released, "release");
}

/* The scope variant's releaser: the blocker is a task of the scope, so the
 * test thread sits in sl_scope_end while the kids must run; this thread lets
 * the blocker go once they all have. */
static void *help_releaser(void *p)
{
    help_board *b = p;
    uint64_t deadline = sl_test_now_ns() + 20 * SEC;
    while (atomic_load_explicit(&b->kids_done, memory_order_acquire) < HELP_KIDS &&
           sl_test_now_ns() < deadline)
        sl_test_sleep_ns(MS);
    atomic_store_explicit(&b->released, 1, memory_order_release);
    return NULL;
}

static void check_kids_ran_here(const help_board *b)
{
    for (int i = 0; i < HELP_KIDS; i++)
        ck_assert_msg(pthread_equal(b->ran[i], pthread_self()),
                      "kid %d did not run on the syncing foreign thread", i);
}

START_TEST(test_foreign_sync_helps)
{
    begin_test("exec", "foreign-help");
    sl_exec *ex = new_exec(1);
    help_board b = { .ex = ex };
    help_board *bp = &b;
    sl_future blocker = sl_spawn(ex, help_blocker, &bp, sizeof bp, 0);
    ck_assert(await_flag(&b.published, "publication"));
    /* The only worker is stuck in the blocker: kid 0 and the kids it syncs
     * complete only if this thread runs them. */
    ck_assert_int_eq(sl_sync(&b.kids[0], NULL), SL_OK);
    ck_assert_int_eq(atomic_load(&b.kids_done), HELP_KIDS);
    check_kids_ran_here(&b);
    ck_assert_int_eq(sl_sync(&b.kids[1], NULL), SL_EINVAL); /* synced by kid 0 */
    atomic_store_explicit(&b.released, 1, memory_order_release);
    ck_assert_int_eq(sl_sync(&blocker, NULL), SL_OK);
    ck_assert_int_eq(fib_on(ex, 12), fib_serial(12)); /* the free was refused */
    sl_exec_free(ex);
    ASSERT_CLEAN();
}
END_TEST

START_TEST(test_foreign_scope_end_helps)
{
    begin_test("exec", "foreign-scope-help");
    sl_exec *ex = new_exec(1);
    sl_scope s;
    sl_scope_begin(ex, &s);
    help_board b = { .ex = ex, .scope = &s };
    help_board *bp = &b;
    pthread_t releaser;
    ck_assert_int_eq(pthread_create(&releaser, NULL, help_releaser, &b), 0);
    sl_scope_spawn(&s, help_blocker, &bp, sizeof bp);
    /* A foreign waiter helps with the work it finds, then parks until the
     * scope ends: wait until the kids are there to be found. */
    ck_assert(await_flag(&b.published, "publication"));
    sl_scope_end(&s); /* the kids can only run here until the releaser acts */
    pthread_join(releaser, NULL);
    ck_assert_int_eq(atomic_load(&b.kids_done), HELP_KIDS);
    check_kids_ran_here(&b);
    sl_exec_free(ex);
    ASSERT_CLEAN();
}
END_TEST

/* ---- futures: order, move-only, limits ----------------------------------- */

static void square_task(void *args, void *ret)
{
    uint64_t x = *(uint64_t *)args;
    *(uint64_t *)ret = x * x + 1;
}

typedef struct order_args {
    sl_exec *ex;
    uint64_t seed;
    int n;
} order_args;

/* Spawns n tasks, then syncs them in reverse and in a random order. */
static int spawn_and_sync_shuffled(sl_exec *ex, uint64_t seed, int n)
{
    sl_future *f = xcalloc((size_t)n, sizeof *f);
    int *order = xcalloc((size_t)n, sizeof *order);
    int bad = 0;
    sl_test_rng rng;
    sl_test_rng_seed(&rng, seed);
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < n; i++) {
            uint64_t x = (uint64_t)i;
            f[i] = sl_spawn(ex, square_task, &x, sizeof x, sizeof x);
            order[i] = n - 1 - i;
        }
        for (int i = n - 1; pass == 1 && i > 0; i--) {
            int j = (int)(sl_test_rng_next(&rng) % (uint64_t)(i + 1)), tmp = order[i];
            order[i] = order[j];
            order[j] = tmp;
        }
        for (int k = 0; k < n; k++) {
            int i = order[k];
            uint64_t r = 0;
            if (sl_sync(&f[i], &r) != SL_OK || r != (uint64_t)i * (uint64_t)i + 1)
                bad++;
        }
    }
    free(order);
    free(f);
    return bad;
}

static void order_task(void *args, void *ret)
{
    order_args a = *(order_args *)args;
    *(int *)ret = spawn_and_sync_shuffled(a.ex, a.seed, a.n);
}

START_TEST(test_sync_any_order)
{
    uint64_t seed = begin_test("exec", "order");
    sl_exec *ex = new_exec(workers());
    ck_assert_int_eq(spawn_and_sync_shuffled(ex, seed, 300), 0); /* foreign */
    order_args a = { ex, seed + 1, 300 };
    sl_future f[4];
    for (int i = 0; i < 4; i++)
        f[i] = sl_spawn(ex, order_task, &a, sizeof a, sizeof(int));
    for (int i = 3; i >= 0; i--) {
        int bad = -1;
        ck_assert_int_eq(sl_sync(&f[i], &bad), SL_OK);
        ck_assert_int_eq(bad, 0);
    }
    sl_exec_free(ex);
}
END_TEST

/* Returns NULL, or the first check that failed (tasks do not call Check). */
#define MO(cond)                                                                           \
    do {                                                                                   \
        if (!(cond))                                                                       \
            return #cond;                                                                  \
    } while (0)

static const char *move_only_checks(sl_exec *ex)
{
    uint64_t x = 7, r = 0;
    sl_future f = sl_spawn(ex, square_task, &x, sizeof x, sizeof r);
    sl_future copy = f;
    MO(sl_is_spawned(&f) && sl_is_spawned(&copy));
    MO(sl_sync(&f, &r) == SL_OK);
    MO(r == 50);
    MO(!sl_is_spawned(&f));            /* cleared */
    MO(sl_sync(&f, &r) == SL_EINVAL);  /* twice */
    MO(!sl_is_spawned(&copy));         /* the copy is stale */
    MO(!sl_is_ready(&copy));
    r = 99;
    MO(sl_sync(&copy, &r) == SL_EINVAL); /* a copy after the original */
    MO(r == 99);                       /* untouched */
    MO(copy.task != NULL);             /* and not consumed */
    /* The record is reused by later spawns: the stale copy still fails and
     * the new futures are unaffected. */
    sl_future g[64];
    for (uint64_t i = 0; i < 64; i++)
        g[i] = sl_spawn(ex, square_task, &i, sizeof i, sizeof r);
    MO(sl_sync(&copy, &r) == SL_EINVAL);
    for (uint64_t i = 0; i < 64; i++) {
        MO(sl_sync(&g[i], &r) == SL_OK);
        MO(r == i * i + 1);
    }
    /* The copy synced first: now the original is the stale one. */
    f = sl_spawn(ex, square_task, &x, sizeof x, sizeof r);
    copy = f;
    MO(sl_sync(&copy, NULL) == SL_OK); /* result discarded */
    MO(sl_sync(&f, &r) == SL_EINVAL);
    /* Cleared, never spawned and forged futures. */
    sl_future cleared = { NULL, 0 };
    MO(sl_sync(&cleared, &r) == SL_EINVAL);
    MO(sl_sync(NULL, &r) == SL_EINVAL);
    MO(!sl_is_spawned(&cleared) && !sl_is_ready(&cleared));
    MO(!sl_is_spawned(NULL) && !sl_is_ready(NULL));
    sl_future odd = { f.task, 3 }; /* an odd generation is never handed out */
    MO(sl_sync(&odd, &r) == SL_EINVAL);
    return NULL;
}

static void move_only_task(void *args, void *ret)
{
    *(const char **)ret = move_only_checks(*(sl_exec **)args);
}

START_TEST(test_move_only_futures)
{
    sl_exec *ex = new_exec(workers());
    const char *why = move_only_checks(ex); /* foreign */
    ck_assert_msg(why == NULL, "foreign: %s", why);
    sl_future f = sl_spawn(ex, move_only_task, &ex, sizeof ex, sizeof why);
    why = "not run";
    ck_assert_int_eq(sl_sync(&f, &why), SL_OK);
    ck_assert_msg(why == NULL, "on a worker: %s", why);
    sl_exec_free(ex);
}
END_TEST

typedef struct payload_args {
    unsigned char in[SL_EXEC_PAYLOAD_MAX];
} payload_args;

static void reverse_task(void *args, void *ret)
{
    /* Reads the arguments while writing the result: they must not overlap. */
    unsigned char *in = args, *out = ret;
    for (size_t i = 0; i < 16; i++)
        out[i] = in[15 - i];
}

static void fill_task(void *args, void *ret)
{
    (void)args;
    memset(ret, 0xab, SL_EXEC_RET_MAX);
}

static void noop_task(void *args, void *ret)
{
    (void)args;
    (void)ret;
}

START_TEST(test_cleared_futures_and_limits)
{
    sl_exec *ex = new_exec(2);
    unsigned char buf[SL_EXEC_PAYLOAD_MAX + 16] = { 0 };
    sl_future f;
    f = sl_spawn(ex, NULL, NULL, 0, 0);
    ck_assert(!sl_is_spawned(&f) && f.task == NULL);
    ck_assert_int_eq(sl_sync(&f, NULL), SL_EINVAL);
    f = sl_spawn(NULL, noop_task, NULL, 0, 0);
    ck_assert(!sl_is_spawned(&f));
    f = sl_spawn(ex, noop_task, NULL, 8, 0); /* NULL args with a size */
    ck_assert(!sl_is_spawned(&f));
    f = sl_spawn(ex, noop_task, buf, SL_EXEC_ARGS_MAX + 1, 0);
    ck_assert(!sl_is_spawned(&f));
    f = sl_spawn(ex, noop_task, NULL, 0, SL_EXEC_RET_MAX + 1);
    ck_assert(!sl_is_spawned(&f));
    f = sl_spawn(ex, noop_task, buf, 177, 16); /* 192 + 16 > the payload */
    ck_assert(!sl_is_spawned(&f));
    f = sl_submit(ex, NULL, NULL, 0, 0);
    ck_assert(!sl_is_spawned(&f));
    f = sl_submit(ex, noop_task, buf, SL_EXEC_ARGS_MAX + 1, 0);
    ck_assert(!sl_is_spawned(&f));
    ck_assert(!SL_EXEC_FITS(SL_EXEC_PAYLOAD_MAX, 1));
    ck_assert(SL_EXEC_FITS(176, 16));
    /* The limits themselves work, and the copy is taken at spawn time. */
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (unsigned char)i;
    unsigned char out[SL_EXEC_RET_MAX];
    f = sl_spawn(ex, reverse_task, buf, 176, 16);
    memset(buf, 0, sizeof buf);
    ck_assert_int_eq(sl_sync(&f, out), SL_OK);
    for (size_t i = 0; i < 16; i++)
        ck_assert_uint_eq(out[i], 15 - i);
    f = sl_spawn(ex, noop_task, buf, SL_EXEC_ARGS_MAX, 0);
    ck_assert_int_eq(sl_sync(&f, NULL), SL_OK);
    f = sl_spawn(ex, fill_task, NULL, 0, SL_EXEC_RET_MAX);
    memset(out, 0, sizeof out);
    ck_assert_int_eq(sl_sync(&f, out), SL_OK);
    for (size_t i = 0; i < sizeof out; i++)
        ck_assert_uint_eq(out[i], 0xab);
    sl_exec_free(ex);
}
END_TEST

typedef struct gate_args {
    atomic_int *open;
    int value;
} gate_args;

static void gated_task(void *args, void *ret)
{
    gate_args a = *(gate_args *)args;
    while (!atomic_load(a.open))
        sl_test_sleep_ns(100000);
    *(int *)ret = a.value;
}

START_TEST(test_is_ready)
{
    sl_exec *ex = new_exec(2);
    atomic_int open = 0;
    gate_args a = { &open, 42 };
    sl_future f = sl_spawn(ex, gated_task, &a, sizeof a, sizeof(int));
    ck_assert(sl_is_spawned(&f));
    sl_test_sleep_ns(20 * MS);
    ck_assert(!sl_is_ready(&f)); /* still waiting for the gate */
    atomic_store(&open, 1);
    uint64_t deadline = sl_test_now_ns() + 20 * SEC;
    while (!sl_is_ready(&f) && sl_test_now_ns() < deadline)
        sl_test_sleep_ns(MS);
    ck_assert(sl_is_ready(&f));
    int v = 0;
    ck_assert_int_eq(sl_sync(&f, &v), SL_OK);
    ck_assert_int_eq(v, 42);
    ck_assert(!sl_is_ready(&f));
    sl_exec_free(ex);
}
END_TEST

/* ---- cancellation -------------------------------------------------------- */

typedef struct cancel_args {
    sl_cancel *token;
    atomic_int *started, *stopped;
} cancel_args;

static void until_cancelled(void *args, void *ret)
{
    (void)ret;
    cancel_args a = *(cancel_args *)args;
    atomic_fetch_add(a.started, 1);
    while (!sl_cancelled(a.token))
        sl_test_sleep_ns(200000);
    atomic_fetch_add(a.stopped, 1);
}

START_TEST(test_cancel_token)
{
    sl_exec *ex = new_exec(workers());
    sl_cancel token;
    sl_cancel_init(&token);
    ck_assert(!sl_cancelled(&token));
    ck_assert(!sl_cancelled(NULL));
    atomic_int started = 0, stopped = 0;
    cancel_args a = { &token, &started, &stopped };
    sl_scope s;
    sl_scope_begin(ex, &s);
    int n = (int)workers();
    for (int i = 0; i < n; i++)
        sl_scope_spawn(&s, until_cancelled, &a, sizeof a);
    uint64_t deadline = sl_test_now_ns() + 20 * SEC;
    while (atomic_load(&started) < n && sl_test_now_ns() < deadline)
        sl_test_sleep_ns(MS);
    ck_assert_int_eq(atomic_load(&started), n);
    ck_assert_int_eq(atomic_load(&stopped), 0);
    sl_cancel_request(&token);
    sl_cancel_request(&token); /* idempotent */
    sl_scope_end(&s);
    ck_assert_int_eq(atomic_load(&stopped), n);
    ck_assert(sl_cancelled(&token));
    sl_cancel_request(NULL);
    sl_cancel_init(NULL);
    sl_exec_free(ex);
}
END_TEST

/* ---- executors: creation, global, several at once, free ------------------ */

START_TEST(test_new_and_free)
{
    sl_exec *ex = NULL;
    ck_assert_int_eq(sl_exec_new(NULL, NULL), SL_EINVAL);
    sl_exec_opts o = { SL_EXEC_MAX_THREADS + 1, NULL };
    ck_assert_int_eq(sl_exec_new(&ex, &o), SL_EINVAL);
    ck_assert_ptr_null(ex);
    ck_assert_int_eq(sl_exec_new(&ex, NULL), SL_OK);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    ck_assert_uint_eq(sl_exec_threads(ex), (unsigned)(cpus < 1 ? 1 : cpus));
    sl_exec_free(ex);
    ex = new_exec(1);
    ck_assert_uint_eq(sl_exec_threads(ex), 1);
    ck_assert_int_eq(fib_on(ex, 15), fib_serial(15));
    sl_exec_free(ex);
    ck_assert_uint_eq(sl_exec_threads(NULL), 0);
    sl_exec_free(NULL);
}
END_TEST

START_TEST(test_global_executor)
{
    sl_exec *g = sl_exec_global();
    ck_assert_ptr_nonnull(g);
    ck_assert_ptr_eq(sl_exec_global(), g);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    ck_assert_uint_eq(sl_exec_threads(g), (unsigned)(cpus < 1 ? 1 : cpus));
    ck_assert_int_eq(fib_on(g, 20), fib_serial(20));
}
END_TEST

typedef struct cross_args {
    sl_exec *other;
    long n;
} cross_args;

/* A task of one executor computes fib on the other (a foreign thread there). */
static void cross_task(void *args, void *ret)
{
    cross_args a = *(cross_args *)args;
    fib_args f = { a.other, a.n, false };
    long r = -1;
    sl_future fut = sl_spawn(a.other, fib_task, &f, sizeof f, sizeof r);
    if (sl_sync(&fut, &r) != SL_OK)
        rec_fail("cross-executor sync failed");
    *(long *)ret = r;
}

START_TEST(test_two_executors)
{
    begin_test("exec", "two");
    sl_exec *a = new_exec(2), *b = new_exec(3);
    cross_args ab = { b, 20 }, ba = { a, 21 };
    sl_future fa[4], fb[4];
    for (int i = 0; i < 4; i++) {
        fa[i] = sl_spawn(a, cross_task, &ab, sizeof ab, sizeof(long));
        fb[i] = sl_spawn(b, cross_task, &ba, sizeof ba, sizeof(long));
    }
    long want_a = fib_serial(20), want_b = fib_serial(21);
    for (int i = 0; i < 4; i++) {
        long r = 0;
        ck_assert_int_eq(sl_sync(&fa[i], &r), SL_OK);
        ck_assert_int_eq(r, want_a);
        ck_assert_int_eq(sl_sync(&fb[i], &r), SL_OK);
        ck_assert_int_eq(r, want_b);
    }
    ck_assert_int_eq(fib_on(a, 22), fib_serial(22));
    ck_assert_int_eq(fib_on(b, 22), fib_serial(22));
    sl_exec_free(a);
    sl_exec_free(b);
    ASSERT_CLEAN();
}
END_TEST

typedef struct late_args {
    sl_exec *ex;
    atomic_int *done;
    int depth;
} late_args;

/* Sleeps a little, spawns two more (never synced), counts itself. */
static void late_task(void *args, void *ret)
{
    (void)ret;
    late_args a = *(late_args *)args;
    sl_test_sleep_ns(200000);
    if (a.depth > 0) {
        late_args c = a;
        c.depth--;
        (void)sl_spawn(a.ex, late_task, &c, sizeof c, 0);
        (void)sl_spawn(a.ex, late_task, &c, sizeof c, 0);
    }
    atomic_fetch_add(a.done, 1);
}

START_TEST(test_free_waits_for_every_task)
{
    sl_exec *ex = new_exec(workers());
    atomic_int done = 0;
    late_args a = { ex, &done, 4 };
    for (int i = 0; i < 4; i++)
        (void)sl_spawn(ex, late_task, &a, sizeof a, 0); /* futures dropped on purpose */
    sl_exec_free(ex);
    ck_assert_int_eq(atomic_load(&done), 4 * 31);
}
END_TEST

static void free_self(void *args, void *ret)
{
    (void)ret;
    sl_exec_free(*(sl_exec **)args); /* refused: it would wait for itself */
}

START_TEST(test_free_from_own_task_refused)
{
    sl_exec *ex = new_exec(2);
    sl_future f = sl_spawn(ex, free_self, &ex, sizeof ex, 0);
    ck_assert_int_eq(sl_sync(&f, NULL), SL_OK);
    ck_assert_int_eq(fib_on(ex, 10), fib_serial(10)); /* still alive */
    sl_exec_free(ex);
}
END_TEST

typedef struct big_free_args {
    unsigned char bytes[SL_EXEC_PAYLOAD_MAX + 8];
    sl_exec *ex;
} big_free_args;

static void free_self_big(void *args, void *ret)
{
    (void)ret;
    sl_exec_free(((big_free_args *)args)->ex); /* refused: its scope is still open */
}

/* A scope task too big to queue runs on the spawning thread, a foreign one:
 * a task of ex all the same, refused as one run by a worker or a helper. */
START_TEST(test_free_from_inline_scope_task_refused)
{
    sl_exec *ex = new_exec(2);
    big_free_args a = { .ex = ex };
    sl_scope s;
    sl_scope_begin(ex, &s);
    sl_scope_spawn(&s, free_self_big, &a, sizeof a);
    sl_scope_end(&s);
    ck_assert_int_eq(fib_on(ex, 10), fib_serial(10)); /* still alive */
    sl_exec_free(ex);
}
END_TEST

/* The global executor is never freed: sl_exec_global goes on returning it,
 * so a free of it returns at once, and it keeps working afterwards. */
START_TEST(test_free_global_refused)
{
    sl_exec *g = sl_exec_global();
    ck_assert_ptr_nonnull(g);
    unsigned threads = sl_exec_threads(g);
    sl_exec_free(g);
    ck_assert_ptr_eq(sl_exec_global(), g);
    ck_assert_uint_eq(sl_exec_threads(g), threads);
    ck_assert_int_eq(fib_on(g, 15), fib_serial(15));
}
END_TEST

/* ---- an idle executor uses no CPU ---------------------------------------- */

static uint64_t cpu_ns(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * SEC +
           (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000u;
}

START_TEST(test_idle_uses_no_cpu)
{
    sl_exec *ex = new_exec(4);
    ck_assert_int_eq(fib_on(ex, 18), fib_serial(18)); /* every worker has run */
    sl_test_sleep_ns(100 * MS);                       /* settle: searchers park */
    uint64_t c0 = cpu_ns();
    sl_test_sleep_ns(500 * MS);
    uint64_t used = cpu_ns() - c0;
    ck_assert_msg(used < 5 * MS, "an idle executor used %llu us of CPU in 500 ms",
                  ULL(used / 1000));
    ck_assert_int_eq(fib_on(ex, 12), fib_serial(12)); /* and wakes up again */
    sl_exec_free(ex);
}
END_TEST

#if defined(SL_FAULT_INJECT) && SL_FAULT_INJECT
#include "testing.h"

/* A worker's submit lands in a busy worker V's mailbox while a third worker X
 * is between its last search round and its park. X's parking re-check looks
 * only at its own mailbox, and the publisher's wake check saw X still
 * counted as searching: X sleeps, the submitter (which must not run its own
 * task) only puts it back, and the task waits for V although X is idle. */
static struct {
    sl_exec *ex;
    atomic_int arrived, ids[3], w_submitted, released, t_ran, v_saw, v_done;
    unsigned w_id, v_id, x_id;
    sl_test_gate gate_w, gate_x;
    sl_future ft;
} strand;

static void strand_t(void *args, void *ret)
{
    (void)args, (void)ret;
    atomic_store(&strand.t_ran, 1);
}

/* Where a test stops a worker (ctx) in its park: the first mark where it
 * has set its sleep bit and still counts as searching — sl__idle_park
 * between its registration and its decrement — on park_stop_gate. */
static sl_test_gate *park_stop_gate;

static void stop_parked_searching(void *ctx, unsigned step)
{
    (void)step;
    sl__worker *w = ctx;
    uint64_t bit = (uint64_t)1 << w->id;
    if ((atomic_load(&w->ex->idle.sleep_bits[0]) & bit) && w->searching) {
        sl__fi_disarm();
        sl_test_gate_stop(park_stop_gate, 0);
        return;
    }
    sl__fi_arm(1, stop_parked_searching, ctx); /* not there yet: stop at the next mark */
}

/* Stops the calling thread at the first mark after it published ev as
 * where it sleeps for t: register_waiter, before its CAS to WAITED (the
 * thread still searching, its search rounds all done, no sleep bit yet). */
typedef struct reg_stop {
    sl__task *t;
    sl_event *ev;
    sl_test_gate *gate;
} reg_stop;

static void stop_registering(void *ctx, unsigned step)
{
    (void)step;
    reg_stop *r = ctx;
    if (atomic_load(&r->t->sleep) == r->ev) {
        sl__fi_disarm();
        sl_test_gate_stop(r->gate, 0);
        return;
    }
    sl__fi_arm(1, stop_registering, ctx);
}

static bool strand_wait(atomic_int *flag, uint64_t ns)
{
    uint64_t end = sl_test_now_ns() + ns;
    while (!atomic_load(flag))
        if (sl_test_now_ns() > end)
            return false;
    return true;
}

static void strand_role(void *args, void *ret)
{
    (void)args, (void)ret;
    sl__worker *me = sl__tls_worker;
    atomic_fetch_add(&strand.arrived, 1);
    uint64_t end = sl_test_now_ns() + 5000 * MS;
    while (atomic_load(&strand.arrived) < 3 && sl_test_now_ns() < end)
        sched_yield();
    if (atomic_load(&strand.arrived) < 3)
        return;
    if (me->id == strand.w_id) {
        sl__fi_arm(1, sl_test_gate_stop, &strand.gate_w); /* inside the mailbox push */
        strand.ft = sl_submit(strand.ex, strand_t, NULL, 0, 0);
        sl__fi_disarm();
        atomic_store(&strand.w_submitted, 1);
        /* Busy until V is done: we may not run T, and our own park would
         * hand on a wake-up for it (help, in exec_wait.c): X's re-check alone
         * must find T. */
        while (!atomic_load(&strand.v_done))
            sched_yield();
    } else if (me->id == strand.x_id) {
        strand_wait(&strand.gate_w.stopped, 5000 * MS);
        park_stop_gate = &strand.gate_x;
        sl__fi_arm(1, stop_parked_searching, me); /* stops in its park after this task */
    } else {
        /* V: busy until the task ran (elsewhere: it sits in our mailbox) */
        strand_wait(&strand.released, 5000 * MS);
        atomic_store(&strand.v_saw, strand_wait(&strand.t_ran, 1500 * MS));
        atomic_store(&strand.v_done, 1);
    }
}

START_TEST(test_submit_not_stranded_behind_busy_worker)
{
    begin_test("exec", "submit stranded in a busy mailbox");
    memset(&strand, 0, sizeof strand);
    strand.ex = new_exec(3);
    /* The first submit of worker 0 goes to submit_next % 3 (no sleeper then). */
    strand.w_id = 0;
    strand.v_id = strand.ex->workers[0].submit_next % 3;
    if (strand.v_id == strand.w_id)
        strand.v_id = (strand.v_id + 1) % 3;
    strand.x_id = 3 - strand.w_id - strand.v_id;
    sl_future r[3];
    for (int i = 0; i < 3; i++)
        r[i] = sl_spawn(strand.ex, strand_role, NULL, 0, 0);
    ck_assert(strand_wait(&strand.gate_w.stopped, 10000 * MS));
    ck_assert(strand_wait(&strand.gate_x.stopped, 10000 * MS));
    atomic_store(&strand.gate_w.go, 1);     /* the push, and its wake check, see X searching */
    ck_assert(strand_wait(&strand.w_submitted, 10000 * MS));
    atomic_store(&strand.gate_x.go, 1);     /* X re-checks and parks */
    atomic_store(&strand.released, 1);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(sl_sync(&r[i], NULL), SL_OK);
    ck_assert_int_eq(sl_sync(&strand.ft, NULL), SL_OK);
    ck_assert_msg(atomic_load(&strand.v_saw),
                  "submitted task waited 1.5 s in busy worker %u's mailbox while worker %u slept",
                  strand.v_id, strand.x_id);
    sl_exec_free(strand.ex);
    ASSERT_CLEAN();
}
END_TEST

/* The same strand through a stale count: a deep waiter D has popped W's
 * submission S from its mailbox but not yet taken it off W's `mailed`, so
 * W's parking re-check discounts Y's task T in busy V's mailbox as W's own.
 * Y's wake check counted W searching (in a sync, its search rounds done);
 * W, parking, hands on to nobody (nobody sleeps yet); D, no searcher, hands
 * nothing on. */
static struct {
    sl_exec *ex, *ex2;
    atomic_int arrived, w_submitted, y_submitted, d_synced, released, v_done, t_ran, v_saw;
    atomic_int shallow, f_go;
    unsigned w_id, d_id, y_id, v_id;
    sl_test_gate gate_w, gate_d, gate_y;
    sl_future fs, ft, ff;
} stale;

static void stale_f(void *args, void *ret) /* on ex2: W's wait, until the end */
{
    (void)args, (void)ret;
    while (!atomic_load(&stale.f_go))
        sched_yield();
}

static void stale_s(void *args, void *ret) { (void)args, (void)ret; }

static void stale_t(void *args, void *ret)
{
    (void)args, (void)ret;
    atomic_store(&stale.t_ran, 1);
}

static void stale_role(void *args, void *ret)
{
    (void)args, (void)ret;
    sl__worker *me = sl__tls_worker;
    atomic_fetch_add(&stale.arrived, 1);
    uint64_t end = sl_test_now_ns() + 5000 * MS;
    while (atomic_load(&stale.arrived) < 4 && sl_test_now_ns() < end)
        sched_yield();
    if (atomic_load(&stale.arrived) < 4)
        return;
    if (me->id == stale.w_id) {
        stale.fs = sl_submit(stale.ex, stale_s, NULL, 0, 0); /* round robin: D's mailbox */
        atomic_store(&stale.w_submitted, 1);
        strand_wait(&stale.gate_y.stopped, 5000 * MS);
        strand_wait(&stale.shallow, 5000 * MS); /* our sync helps, not deep */
        reg_stop r = { stale.ff.task, sl__exec_worker_event(me), &stale.gate_w };
        sl__fi_arm(1, stop_registering, &r);
        sl_sync(&stale.ff, NULL); /* searches, stops before its park, then sleeps */
        sl__fi_disarm();
    } else if (me->id == stale.d_id) {
        strand_wait(&stale.w_submitted, 5000 * MS);
        /* register_waiter's mark, the pop's claim mark, then inside the pop */
        sl__fi_arm(3, sl_test_gate_stop, &stale.gate_d);
        sl_sync(&stale.fs, NULL);                       /* waits deep: pops S */
        sl__fi_disarm();
        atomic_store(&stale.d_synced, 1);
        strand_wait(&stale.v_done, 10000 * MS);
    } else if (me->id == stale.y_id) {
        strand_wait(&stale.gate_d.stopped, 5000 * MS);
        sl__fi_arm(1, sl_test_gate_stop, &stale.gate_y); /* inside the mailbox push */
        stale.ft = sl_submit(stale.ex, stale_t, NULL, 0, 0); /* round robin: V's mailbox */
        sl__fi_disarm();
        atomic_store(&stale.y_submitted, 1);
        strand_wait(&stale.v_done, 10000 * MS);
    } else {
        strand_wait(&stale.released, 10000 * MS);
        atomic_store(&stale.v_saw, strand_wait(&stale.t_ran, 1500 * MS));
        atomic_store(&stale.v_done, 1);
    }
}

START_TEST(test_submit_not_stranded_by_deep_mailbox_pop)
{
    begin_test("exec", "submit stranded behind a deep waiter's pop");
    memset(&stale, 0, sizeof stale);
    atomic_store(&sl__exec_deep_workers, 1); /* D's sync waits deep */
    stale.ex = new_exec(4);
    stale.ex2 = new_exec(1);
    stale.ff = sl_spawn(stale.ex2, stale_f, NULL, 0, 0);
    ck_assert(sl_is_spawned(&stale.ff));
    /* First submits go round robin to id + 1 (nobody sleeps then). */
    stale.w_id = 0, stale.d_id = 1, stale.y_id = 2, stale.v_id = 3;
    ck_assert_uint_eq(stale.ex->workers[0].submit_next % 4, stale.d_id);
    ck_assert_uint_eq(stale.ex->workers[2].submit_next % 4, stale.v_id);
    sl__worker *w = &stale.ex->workers[stale.w_id], *d = &stale.ex->workers[stale.d_id];
    sl_future r[4];
    for (int i = 0; i < 4; i++)
        r[i] = sl_spawn(stale.ex, stale_role, NULL, 0, 0);
    ck_assert(strand_wait(&stale.gate_d.stopped, 10000 * MS));
    /* D holds S, popped but still counted in W's mailed */
    ck_assert_uint_eq(sl_list_len(&d->mailbox), 0);
    ck_assert_uint_eq(atomic_load(&w->mailed), 1);
    atomic_store(&sl__exec_deep_workers, 0); /* D waits deep already; W's sync will help */
    atomic_store(&stale.shallow, 1);
    ck_assert(strand_wait(&stale.gate_y.stopped, 10000 * MS));
    ck_assert(strand_wait(&stale.gate_w.stopped, 10000 * MS));
    atomic_store(&stale.gate_y.go, 1);     /* T in V's mailbox; its wake check sees W searching */
    ck_assert(strand_wait(&stale.y_submitted, 10000 * MS));
    atomic_store(&stale.gate_w.go, 1);     /* W parks, re-checks with the stale count, sleeps */
    uint64_t end = sl_test_now_ns() + 10000 * MS;
    while (sl_event_waiters(sl__exec_worker_event(w)) == 0 && sl_test_now_ns() < end)
        sl_test_sleep_ns(MS / 10);
    sl_test_sleep_ns(20 * MS);
    atomic_store(&stale.gate_d.go, 1);     /* D takes S off W's count and runs it */
    ck_assert(strand_wait(&stale.d_synced, 10000 * MS));
    atomic_store(&stale.released, 1);
    ck_assert(strand_wait(&stale.v_done, 10000 * MS));
    atomic_store(&stale.f_go, 1);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(sl_sync(&r[i], NULL), SL_OK);
    ck_assert_int_eq(sl_sync(&stale.ft, NULL), SL_OK);
    ck_assert_msg(atomic_load(&stale.v_saw),
                  "submitted task waited 1.5 s in busy worker %u's mailbox while worker %u slept",
                  stale.v_id, stale.w_id);
    sl_exec_free(stale.ex);
    sl_exec_free(stale.ex2);
    atomic_store(&sl__exec_deep_workers, 0);
    ASSERT_CLEAN();
}
END_TEST

/* The submitter as the searcher others count on. P's submission S_P is
 * popped by searcher X but not yet taken off P's `mailed`, so P's parking
 * re-check discounts W's task T in busy V's mailbox as P's own, and P
 * sleeps. X, finding S_P, hands nothing on: W still counts as a searcher.
 * But W may not run T, and its own re-check discounts T as well: unless W
 * hands on when it parks with submissions of its own still queued, T waits
 * for busy V while P sleeps. */
static struct {
    sl_exec *ex, *ex2;
    atomic_int arrived, released, y_go, v_done, sp_running, t_ran, v_saw;
    unsigned p_id, x_id, w_id, v_id;
    sl_test_gate gate_p, gate_x, gate_w;
    sl_future fy, fsp, ft;
} counted;

static void counted_y(void *args, void *ret) /* on ex2: P's wait, until the end */
{
    (void)args, (void)ret;
    while (!atomic_load(&counted.y_go))
        sched_yield();
}

static void counted_sp(void *args, void *ret) /* S_P, on X: busy until V is done */
{
    (void)args, (void)ret;
    atomic_store(&counted.sp_running, 1);
    while (!atomic_load(&counted.v_done))
        sched_yield();
}

static void counted_t(void *args, void *ret)
{
    (void)args, (void)ret;
    atomic_store(&counted.t_ran, 1);
}

static void counted_role(void *args, void *ret)
{
    (void)args, (void)ret;
    sl__worker *me = sl__tls_worker;
    atomic_fetch_add(&counted.arrived, 1);
    uint64_t end = sl_test_now_ns() + 5000 * MS;
    while (atomic_load(&counted.arrived) < 4 && sl_test_now_ns() < end)
        sched_yield();
    if (atomic_load(&counted.arrived) < 4)
        return;
    if (me->id == counted.p_id) {
        counted.fsp = sl_submit(counted.ex, counted_sp, NULL, 0, 0); /* round robin: X's */
        reg_stop r = { counted.fy.task, sl__exec_worker_event(me), &counted.gate_p };
        sl__fi_arm(1, stop_registering, &r);
        sl_sync(&counted.fy, NULL); /* searches (putting S_P back), stops, then sleeps */
        sl__fi_disarm();
    } else if (me->id == counted.x_id) {
        strand_wait(&counted.gate_p.stopped, 5000 * MS);
        /* our task's end mark, the pop's claim mark, then inside the pop */
        sl__fi_arm(3, sl_test_gate_stop, &counted.gate_x);
    } else if (me->id == counted.w_id) {
        strand_wait(&counted.gate_x.stopped, 5000 * MS);
        counted.ft = sl_submit(counted.ex, counted_t, NULL, 0, 0); /* round robin: V's */
        reg_stop r = { counted.ft.task, sl__exec_worker_event(me), &counted.gate_w };
        sl__fi_arm(1, stop_registering, &r);
        sl_sync(&counted.ft, NULL);
        sl__fi_disarm();
    } else {
        strand_wait(&counted.released, 10000 * MS);
        atomic_store(&counted.v_saw, strand_wait(&counted.t_ran, 1500 * MS));
        atomic_store(&counted.v_done, 1);
    }
}

START_TEST(test_submit_not_stranded_by_counted_submitter)
{
    begin_test("exec", "submit stranded behind its own submitter's search");
    memset(&counted, 0, sizeof counted);
    counted.ex = new_exec(4);
    counted.ex2 = new_exec(1);
    /* First submits go round robin to id + 1 (nobody sleeps then). */
    counted.p_id = 0, counted.x_id = 1, counted.w_id = 2, counted.v_id = 3;
    sl__worker *p = &counted.ex->workers[counted.p_id], *x = &counted.ex->workers[counted.x_id];
    sl__worker *w = &counted.ex->workers[counted.w_id], *v = &counted.ex->workers[counted.v_id];
    ck_assert_uint_eq(p->submit_next % 4, counted.x_id);
    ck_assert_uint_eq(w->submit_next % 4, counted.v_id);
    counted.fy = sl_spawn(counted.ex2, counted_y, NULL, 0, 0);
    ck_assert(sl_is_spawned(&counted.fy));
    sl_future r[4];
    for (int i = 0; i < 4; i++)
        r[i] = sl_spawn(counted.ex, counted_role, NULL, 0, 0);
    ck_assert(strand_wait(&counted.gate_p.stopped, 10000 * MS));
    ck_assert(strand_wait(&counted.gate_x.stopped, 10000 * MS));
    /* X holds S_P, popped but still counted in P's mailed */
    ck_assert_uint_eq(sl_list_len(&x->mailbox), 0);
    ck_assert_uint_eq(atomic_load(&p->mailed), 1);
    ck_assert(strand_wait(&counted.gate_w.stopped, 10000 * MS));
    ck_assert_uint_eq(sl_list_len(&v->mailbox), 1); /* T, behind busy V */
    atomic_store(&counted.gate_p.go, 1); /* P re-checks with the stale count and sleeps */
    uint64_t end = sl_test_now_ns() + 10000 * MS;
    while (sl_event_waiters(sl__exec_worker_event(p)) == 0 && sl_test_now_ns() < end)
        sl_test_sleep_ns(MS / 10);
    sl_test_sleep_ns(20 * MS);
    atomic_store(&counted.gate_x.go, 1); /* X takes S_P, hands on nothing (W counts), runs it */
    ck_assert(strand_wait(&counted.sp_running, 10000 * MS));
    atomic_store(&counted.gate_w.go, 1); /* W parks beside its own T */
    end = sl_test_now_ns() + 10000 * MS;
    while (sl_event_waiters(sl__exec_worker_event(w)) == 0 && !atomic_load(&counted.t_ran) &&
           sl_test_now_ns() < end)
        sl_test_sleep_ns(MS / 10);
    atomic_store(&counted.released, 1);
    ck_assert(strand_wait(&counted.v_done, 10000 * MS));
    atomic_store(&counted.y_go, 1);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(sl_sync(&r[i], NULL), SL_OK);
    ck_assert_int_eq(sl_sync(&counted.fsp, NULL), SL_OK);
    ck_assert_msg(atomic_load(&counted.v_saw),
                  "submitted task waited 1.5 s in busy worker %u's mailbox while worker %u slept",
                  counted.v_id, counted.p_id);
    sl_exec_free(counted.ex);
    sl_exec_free(counted.ex2);
    ASSERT_CLEAN();
}
END_TEST
#endif

static Suite *exec_suite(void)
{
    Suite *s = suite_create("exec");
    TCase *tc = tcase_create("compute");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_fib_matches_serial);
    tcase_add_test(tc, test_nqueens_10);
    tcase_add_test(tc, test_parallel_for_exactly_once);
    tcase_add_test(tc, test_parallel_for_nested);
    suite_add_tcase(s, tc);

    tc = tcase_create("scopes");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_scope_nested_spawns);
    tcase_add_test(tc, test_scope_spawn_too_big_runs_inline);
    tcase_add_test(tc, test_scope_task_without_record_own_copy);
    tcase_add_test(tc, test_cancel_token);
    suite_add_tcase(s, tc);

    tc = tcase_create("futures");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_submit_never_on_caller);
    tcase_add_test(tc, test_submit_single_worker);
    tcase_add_test(tc, test_sync_any_order);
    tcase_add_test(tc, test_move_only_futures);
    tcase_add_test(tc, test_cleared_futures_and_limits);
    tcase_add_test(tc, test_is_ready);
    suite_add_tcase(s, tc);

    tc = tcase_create("faults");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_exec_new_thread_create_fails);
    tcase_add_test(tc, test_exec_alloc_fails_at_every_k);
#if defined(SL_FAULT_INJECT) && SL_FAULT_INJECT
    tcase_add_test(tc, test_submit_not_stranded_behind_busy_worker);
    tcase_add_test(tc, test_submit_not_stranded_by_deep_mailbox_pop);
    tcase_add_test(tc, test_submit_not_stranded_by_counted_submitter);
#endif
    suite_add_tcase(s, tc);

    tc = tcase_create("stack");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_deep_helping_fits_small_stacks);
    tcase_add_test(tc, test_deep_helping_bounds_unknown);
    tcase_add_test(tc, test_deep_workers_foreign_helper_live);
    tcase_add_test(tc, test_deep_waiter_runs_its_mailbox);
    tcase_add_test(tc, test_deep_workers_no_free_slot_live);
    suite_add_tcase(s, tc);

    tc = tcase_create("foreign-help");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_foreign_sync_helps);
    tcase_add_test(tc, test_foreign_scope_end_helps);
    suite_add_tcase(s, tc);

    tc = tcase_create("executors");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_new_and_free);
    tcase_add_test(tc, test_global_executor);
    tcase_add_test(tc, test_two_executors);
    tcase_add_test(tc, test_free_waits_for_every_task);
    tcase_add_test(tc, test_free_from_own_task_refused);
    tcase_add_test(tc, test_free_from_inline_scope_task_refused);
    tcase_add_test(tc, test_free_global_refused);
    tcase_add_test(tc, test_idle_uses_no_cpu);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sl_test_run(exec_suite());
}
