/*
 * fib.c — fork-join on the executor: naive parallel Fibonacci with spawn / sync.
 *
 * Answers: the Nim RFC “Executors, multithreading, channels APIs” by Mamy
 * André-Ratsimbazafy (@mratsim): its “Task Parallelism API”.
 *
 * What it shows, in the RFC's words:
 *   - spawn on a local executor (sl_exec_new with a thread count) and on the
 *     global one (sl_exec_global), returning a future; sync that helps while it
 *     waits: the run on a ONE-worker executor finishes, where a pool whose wait
 *     blocks the thread would deadlock at the first nested sync;
 *   - the future is move-only: a moved-from future, a stale copy, or a second
 *     sync all return SL_EINVAL and touch nothing (errors are values);
 *   - isSpawned / isReady: sl_is_spawned and sl_is_ready, polled by a main
 *     thread that keeps doing its own work until the result is there;
 *   - structured parallelism (syncScope): sl_scope_begin / sl_scope_spawn /
 *     sl_scope_end, fire-and-forget tasks with no futures;
 *   - submit: sl_submit from the main thread, whose tasks never run on the
 *     submitting thread, not even while it waits for them in sl_sync.
 *
 * What to watch: the same value from every variant, the wall time of each and
 * the speed-up over the sequential recursion (about the number of cores when
 * the machine is otherwise idle), and the SL_EINVAL lines of the future demo.
 *
 * Run: fib [N] [--cutoff C] [--threads T] [--reps R]
 *   N          which Fibonacci number (default 34; `fib 35` and up show the
 *              speed-up better)
 *   --cutoff   below this n a task recurses sequentially instead of spawning
 *              (default 20; 2 spawns at every level)
 *   --threads  workers of the local executor (default 0: one per online CPU)
 *   --reps     timed runs per variant, the best one is shown (default 3)
 */
#include <sluice.h>

#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct options {
    int n, cutoff, reps;
    unsigned threads;
};

/* Tasks cannot return an error to their spawner other than through their
 * result; a spawn or sync that fails inside one is counted here and checked
 * by main. Relaxed: main reads it after the syncs that end the run. */
static atomic_uint task_failures;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static long fib_seq(int n)
{
    return n < 2 ? n : fib_seq(n - 1) + fib_seq(n - 2);
}

/* ---- spawn / sync ------------------------------------------------------ */

/* The argument block is copied into the task (at most SL_EXEC_PAYLOAD_MAX
 * bytes together with the result), so it may live on the spawner's stack. */
struct fib_args {
    sl_exec *ex;
    int n;
    int cutoff;
};

static void fib_task(void *args, void *ret)
{
    const struct fib_args *a = args;
    long *result = ret;
    if (a->n < a->cutoff || a->n < 2) {
        *result = fib_seq(a->n);
        return;
    }
    struct fib_args child = {a->ex, a->n - 1, a->cutoff};
    sl_future f = sl_spawn(a->ex, fib_task, &child, sizeof child, sizeof(long));

    long left = 0, right = 0;
    struct fib_args continuation = {a->ex, a->n - 2, a->cutoff};
    fib_task(&continuation, &right); /* the other half runs here meanwhile */

    /* sl_sync usually pops the child back off this worker's deque and runs it
     * inline; if a thief took it, this thread runs other tasks (steals) until
     * the child is done, and sleeps only when there is nothing to run. That is
     * why a single worker can run the whole tree: it never blocks on a task
     * that sits in its own queue. */
    if (!sl_is_spawned(&f)) {
        fib_task(&child, &left); /* no task record to be had: do it here */
    } else if (sl_sync(&f, &left) != SL_OK) {
        atomic_fetch_add_explicit(&task_failures, 1, memory_order_relaxed);
    }
    *result = left + right;
}

/* Spawns the root from this (foreign) thread and syncs it: the root goes
 * through the executor's injector, and this thread's sync steals from the
 * workers' deques while it waits. Returns false if the spawn or sync failed. */
static bool fib_parallel(sl_exec *ex, int n, int cutoff, long *out)
{
    struct fib_args root = {ex, n, cutoff};
    sl_future f = sl_spawn(ex, fib_task, &root, sizeof root, sizeof(long));
    if (!sl_is_spawned(&f)) {
        fprintf(stderr, "fib: sl_spawn of the root failed\n");
        return false;
    }
    sl_status st = sl_sync(&f, out);
    if (st != SL_OK) {
        fprintf(stderr, "fib: sl_sync of the root: %s\n", sl_status_str(st));
        return false;
    }
    return true;
}

/* ---- the structured scope: fire-and-forget ----------------------------- */

struct scope_args {
    sl_scope *scope;
    _Atomic long *sum;
    int n;
    int cutoff;
};

/* No futures: each task spawns the n-1 branch into the scope, keeps walking
 * down the n-2 branch itself, and adds its leaf's value to a shared sum. */
static void fib_scope_task(void *args, void *ret)
{
    (void)ret; /* scope tasks have no result */
    struct scope_args a = *(const struct scope_args *)args;
    while (a.n >= a.cutoff && a.n >= 2) {
        struct scope_args child = a;
        child.n = a.n - 1;
        sl_scope_spawn(a.scope, fib_scope_task, &child, sizeof child);
        a.n -= 2;
    }
    /* Relaxed: sl_scope_end orders every task of the scope before its return,
     * so the reader after it sees every addition. */
    atomic_fetch_add_explicit(a.sum, fib_seq(a.n), memory_order_relaxed);
}

static long fib_scoped(sl_exec *ex, int n, int cutoff)
{
    _Atomic long sum = 0;
    sl_scope scope;
    sl_scope_begin(ex, &scope);
    struct scope_args root = {&scope, &sum, n, cutoff};
    sl_scope_spawn(&scope, fib_scope_task, &root, sizeof root);
    sl_scope_end(&scope); /* the whole tree, spawned by tasks too, is done */
    return atomic_load_explicit(&sum, memory_order_relaxed);
}

/* ---- timing and checking ----------------------------------------------- */

enum variant { SPAWN_SYNC, SCOPE };

/* Runs one variant opt->reps times, checks every result against the sequential
 * value and prints the best time and the speed-up over seq_ns. */
static bool run_variant(const char *label, sl_exec *ex, enum variant v, const struct options *opt,
                        long expect, uint64_t seq_ns)
{
    uint64_t best = UINT64_MAX;
    long value = 0;
    for (int r = 0; r < opt->reps; r++) {
        uint64_t t0 = now_ns();
        if (v == SCOPE) {
            value = fib_scoped(ex, opt->n, opt->cutoff);
        } else if (!fib_parallel(ex, opt->n, opt->cutoff, &value)) {
            return false;
        }
        uint64_t dt = now_ns() - t0;
        best = dt < best ? dt : best;
        if (value != expect) {
            fprintf(stderr, "fib: %s gave fib(%d) = %ld, the sequential value is %ld\n", label,
                    opt->n, value, expect);
            return false;
        }
    }
    printf("  %-30s fib(%d) = %ld  %8.2f ms  speed-up %.2fx\n", label, opt->n, value, best / 1e6,
           (double)seq_ns / (double)best);
    return true;
}

/* ---- the future's rules ------------------------------------------------ */

/* The move of a future: C cannot forbid the copy, so a move is written as a
 * copy that clears the source. */
static sl_future future_move(sl_future *from)
{
    sl_future to = *from;
    *from = (sl_future){0};
    return to;
}

static bool expect_status(const char *what, sl_status got, sl_status want)
{
    printf("  %-46s -> %s\n", what, sl_status_str(got));
    if (got != want) {
        fprintf(stderr, "fib: %s returned %s, expected %s\n", what, sl_status_str(got),
                sl_status_str(want));
        return false;
    }
    return true;
}

static bool demo_move_only(sl_exec *ex)
{
    puts("move-only futures: only the future that owns the task may sync it, and only once; "
         "a misuse is refused (SL_EINVAL) and touches nothing:");
    struct fib_args a = {ex, 20, 32};
    sl_future f = sl_spawn(ex, fib_task, &a, sizeof a, sizeof(long));
    sl_future g = future_move(&f); /* g owns the task now; f is empty */
    sl_future stale = g;           /* a copy: legal C, but only one may sync */
    long value = 0;
    bool ok = expect_status("sl_sync(moved-from future)", sl_sync(&f, &value), SL_EINVAL) &&
              expect_status("sl_sync(the future it moved to: the owner)", sl_sync(&g, &value),
                            SL_OK) &&
              expect_status("sl_sync(same future again)", sl_sync(&g, &value), SL_EINVAL) &&
              expect_status("sl_sync(a stale copy of it)", sl_sync(&stale, &value), SL_EINVAL);
    if (ok && value != fib_seq(20)) {
        fprintf(stderr, "fib: the moved future's result is %ld\n", value);
        ok = false;
    }
    /* A task that does not fit the record is refused at spawn: a cleared
     * future, not a crash (errors are values; nothing was spawned). */
    char big[SL_EXEC_ARGS_MAX + 1] = {0};
    sl_future too_big = sl_spawn(ex, fib_task, big, sizeof big, sizeof(long));
    printf("  %-46s -> is_spawned %s\n", "sl_spawn(args of SL_EXEC_ARGS_MAX + 1 bytes)",
           sl_is_spawned(&too_big) ? "true" : "false");
    return ok && !sl_is_spawned(&too_big) &&
           expect_status("sl_sync(that cleared future)", sl_sync(&too_big, &value), SL_EINVAL);
}

/* isReady: the main thread keeps doing its own work in slices and looks at
 * the future between slices, so it syncs only when sync would not wait. */
static bool demo_is_ready(sl_exec *ex, int n, int cutoff)
{
    struct fib_args a = {ex, n, cutoff};
    sl_future f = sl_spawn(ex, fib_task, &a, sizeof a, sizeof(long));
    bool spawned_before = sl_is_spawned(&f);
    unsigned slices = 0;
    long own_work = 0;
    while (!sl_is_ready(&f)) {
        own_work += fib_seq(12); /* a slice of the main thread's own work */
        slices++;
    }
    long value = 0;
    sl_status st = sl_sync(&f, &value);
    printf("isReady polling: is_spawned %d before sync, %d after; meanwhile main did %u %s "
           "of its own work (sum %ld)\n",
           spawned_before, sl_is_spawned(&f), slices, slices == 1 ? "slice" : "slices", own_work);
    if (!spawned_before || sl_is_spawned(&f) || st != SL_OK || value != fib_seq(n)) {
        fprintf(stderr, "fib: is_spawned / is_ready / sync did not behave (%s, %ld)\n",
                sl_status_str(st), value);
        return false;
    }
    return true;
}

/* ---- submit: never on the submitter ------------------------------------ */

struct submit_args {
    pthread_t submitter;
    int n;
};
struct submit_result {
    long value;
    bool ran_on_submitter;
};

static void submit_task(void *args, void *ret)
{
    const struct submit_args *a = args;
    struct submit_result *r = ret;
    r->ran_on_submitter = pthread_equal(pthread_self(), a->submitter) != 0;
    r->value = fib_seq(a->n);
}

static bool demo_submit(sl_exec *ex, int n)
{
    enum { TASKS = 8 };
    sl_future futures[TASKS];
    struct submit_args a = {pthread_self(), n};
    for (int i = 0; i < TASKS; i++) {
        futures[i] = sl_submit(ex, submit_task, &a, sizeof a, sizeof(struct submit_result));
        if (!sl_is_spawned(&futures[i])) {
            fprintf(stderr, "fib: sl_submit %d failed\n", i);
            return false;
        }
    }
    unsigned on_main = 0;
    for (int i = 0; i < TASKS; i++) {
        struct submit_result r;
        sl_status st = sl_sync(&futures[i], &r); /* helps, but never with these */
        if (st != SL_OK || r.value != fib_seq(n)) {
            fprintf(stderr, "fib: submitted task %d: %s, %ld\n", i, sl_status_str(st), r.value);
            return false;
        }
        on_main += r.ran_on_submitter;
    }
    printf("submit from main: %d tasks of fib(%d), %u ran on the submitting thread\n", TASKS, n,
           on_main);
    if (on_main != 0) {
        fprintf(stderr, "fib: a submitted task ran on its submitter\n");
        return false;
    }
    return true;
}

/* ---- flags ------------------------------------------------------------- */

static void usage(FILE *to)
{
    fprintf(to, "usage: fib [N] [--cutoff C] [--threads T] [--reps R]\n"
                "  N          Fibonacci number to compute, 2..45 (default 34)\n"
                "  --cutoff   sequential below this n, 2..45 (default 20)\n"
                "  --threads  local executor workers, 0 = online CPUs (default 0)\n"
                "  --reps     timed runs per variant, best shown, 1..100 (default 3)\n");
}

/* Parses s as an integer in lo..hi; otherwise says what was wrong with what. */
static bool parse_int(const char *what, const char *s, long lo, long hi, long *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "fib: %s %s: must be %ld..%ld\n", what, s, lo, hi);
        return false;
    }
    *out = v;
    return true;
}

/* getopt_long itself reports an unknown option or a missing value. */
static bool parse_args(int argc, char **argv, struct options *opt)
{
    static const struct option longs[] = {{"cutoff", required_argument, NULL, 'c'},
                                          {"threads", required_argument, NULL, 't'},
                                          {"reps", required_argument, NULL, 'r'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
    long v;
    int c;
    while ((c = getopt_long(argc, argv, "c:t:r:h", longs, NULL)) != -1) {
        switch (c) {
        case 'c': if (!parse_int("--cutoff", optarg, 2, 45, &v)) return false;
                  opt->cutoff = (int)v; break;
        case 't': if (!parse_int("--threads", optarg, 0, SL_EXEC_MAX_THREADS, &v)) return false;
                  opt->threads = (unsigned)v; break;
        case 'r': if (!parse_int("--reps", optarg, 1, 100, &v)) return false;
                  opt->reps = (int)v; break;
        case 'h': usage(stdout); exit(0);
        default: return false;
        }
    }
    if (optind < argc) {
        if (!parse_int("N", argv[optind++], 2, 45, &v)) return false;
        opt->n = (int)v;
    }
    if (optind < argc) {
        fprintf(stderr, "fib: %s: unexpected argument\n", argv[optind]);
        return false;
    }
    return true;
}

/* The reference: the plain recursion on this thread, best of opt->reps. */
static long fib_timed(const struct options *opt, uint64_t *best_ns)
{
    long value = 0;
    *best_ns = UINT64_MAX;
    for (int r = 0; r < opt->reps; r++) {
        uint64_t t0 = now_ns();
        value = fib_seq(opt->n);
        uint64_t dt = now_ns() - t0;
        *best_ns = dt < *best_ns ? dt : *best_ns;
    }
    return value;
}

/* Creates the local executors: one with opt->threads workers and, unless that
 * one already has a single worker, one with a single worker (*one is NULL
 * then). Returns false (nothing left behind) if either fails. */
static bool make_local_executors(const struct options *opt, sl_exec **many, sl_exec **one)
{
    *one = NULL;
    sl_status st = sl_exec_new(many, &(sl_exec_opts){.threads = opt->threads, .name = "fib"});
    if (st == SL_OK && sl_exec_threads(*many) > 1) {
        st = sl_exec_new(one, &(sl_exec_opts){.threads = 1, .name = "fib1"});
        if (st != SL_OK) sl_exec_free(*many);
    }
    if (st != SL_OK) fprintf(stderr, "fib: sl_exec_new: %s\n", sl_status_str(st));
    return st == SL_OK;
}

int main(int argc, char **argv)
{
    struct options opt = {.n = 34, .cutoff = 20, .reps = 3, .threads = 0};
    if (!parse_args(argc, argv, &opt)) {
        usage(stderr);
        return 2;
    }
    uint64_t seq_ns;
    long expect = fib_timed(&opt, &seq_ns);
    printf("fib(%d); below n=%d tasks recurse sequentially; best of %d %s\n", opt.n,
           opt.cutoff, opt.reps, opt.reps == 1 ? "run" : "runs");
    printf("  %-30s fib(%d) = %ld  %8.2f ms\n", "sequential", opt.n, expect, seq_ns / 1e6);

    /* Local executors: their own workers, freed when we are done with them.
     * The global one is created on first use with one worker per CPU and never
     * freed: what a library uses when its caller gave it no executor. */
    sl_exec *local, *single, *global = sl_exec_global();
    if (!global) {
        fprintf(stderr, "fib: sl_exec_global failed\n");
        return 1;
    }
    if (!make_local_executors(&opt, &local, &single)) return 1;

    char label_local[64], label_global[64];
    snprintf(label_local, sizeof label_local, "local, %u worker%s", sl_exec_threads(local),
             sl_exec_threads(local) == 1 ? "" : "s");
    snprintf(label_global, sizeof label_global, "global, %u worker%s", sl_exec_threads(global),
             sl_exec_threads(global) == 1 ? "" : "s");
    /* One worker, and still no deadlock: its sync runs the awaited child
     * itself instead of blocking until some other thread does. (With
     * --threads 1 the local executor is that run already.) */
    bool ok = run_variant(label_local, local, SPAWN_SYNC, &opt, expect, seq_ns) &&
              (!single ||
               run_variant("local, 1 worker", single, SPAWN_SYNC, &opt, expect, seq_ns)) &&
              run_variant(label_global, global, SPAWN_SYNC, &opt, expect, seq_ns) &&
              run_variant("scope (no futures), local", local, SCOPE, &opt, expect, seq_ns) &&
              demo_is_ready(global, opt.n, opt.cutoff) &&
              demo_submit(local, opt.n < 25 ? opt.n : 25) && demo_move_only(local);

    if (single) sl_exec_free(single);
    sl_exec_free(local);
    unsigned failures = atomic_load_explicit(&task_failures, memory_order_relaxed);
    if (failures) {
        fprintf(stderr, "fib: %u spawns or syncs failed inside tasks\n", failures);
        ok = false;
    }
    if (!ok) return 1;
    printf("fib: ok (fib(%d) = %ld from every variant)\n", opt.n, expect);
    return 0;
}
