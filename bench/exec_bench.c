/*
 * exec_bench.c — `sl-bench exec`: sluice's spawn/sync executor against
 * oneTBB's task_group, OpenMP tasks (GCC's libgomp in process, LLVM's
 * libomp in a helper process) and serial code, on the Weave suite's
 * workloads: fib, nqueens, UTS T1 and bouncing producer-consumer.
 *
 * Method, as `sl-bench chan`'s: every figure is the median of R rounds; in
 * every round each contender runs the workload once, in an order shuffled
 * afresh (Fisher–Yates, seed printed). Every runtime is created once, before
 * the first round, with the same number of threads, and is not timed.
 * Around each run the driver takes the wall clock and the process's
 * user+sys CPU time (getrusage, all threads); before each run it waits
 * until every runtime's threads have gone idle (settle), so that one
 * runtime's spinning tail is neither charged to the next nor slows it.
 * Every result is checked (fib's value, the number of solutions, UTS's node
 * count, BPC's task count and checksum); a wrong one stops sl-bench.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "exec_driver.h"
#include "exec_omp.h"
#include "exec_uts.h"

/* ---- the contenders ------------------------------------------------------ */

#ifdef SLB_HAVE_GOMP
const slb_xcontender slb_x_gomp = {
    "OpenMP tasks (" SLB_OMP_RUNTIME ")", "gomp", 0, slb_x_omp_start, slb_x_omp_run, NULL,
};
#endif

/* Placeholders for what CMake did not find: shown as skipped rows. */
#ifndef SLB_HAVE_XTBB
static const slb_xcontender missing_tbb = { "oneTBB task_group", "tbb", 0, 0, 0, 0 };
#endif
#ifndef SLB_HAVE_GOMP
static const slb_xcontender missing_gomp = { "OpenMP tasks (libgomp)", "gomp", 0, 0, 0, 0 };
#endif

typedef struct known {
    const slb_xcontender *c;
    const char *missing;     /* why it was not built, or NULL */
} known;

static const known all[] = {
    { &slb_x_serial, NULL },
    { &slb_x_sluice, NULL },
#ifdef SLB_HAVE_XTBB
    { &slb_x_tbb, NULL },
#else
    { &missing_tbb, "oneTBB not found at configure time (Debian: libtbb-dev)" },
#endif
#ifdef SLB_HAVE_GOMP
    { &slb_x_gomp, NULL },
#else
    { &missing_gomp, "no OpenMP for this compiler at configure time" },
#endif
    { &slb_x_llvm_omp, NULL },
};
#define N_ALL (sizeof(all) / sizeof(all[0]))

/* Why each contender cannot run (after start), or NULL. */
static const char *why_not[N_ALL];

static void start_all(const slb_xopts *o)
{
    for (size_t i = 0; i < N_ALL; i++) {
        why_not[i] = all[i].missing;
        if (!(o->contenders & (1u << i)))
            why_not[i] = "not selected (--contenders)";
        else if (!why_not[i] && all[i].c->start)
            why_not[i] = all[i].c->start(o->threads);
    }
}

static void stop_all(void)
{
    for (size_t i = 0; i < N_ALL; i++)
        if (!why_not[i] && all[i].c->stop)
            all[i].c->stop();
}

/* ---- measuring ------------------------------------------------------------ */

static uint64_t cpu_ns(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000u +
           ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000u;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

#define SETTLE_MS 50u
/*
 * Waits until this process and the helper have used (almost) no CPU for
 * SETTLE_MS: every runtime spins a while after its last task (libomp 200 ms
 * by default, libgomp and oneTBB less) before it sleeps, and that tail must
 * neither be charged to the next contender's CPU time nor take its cores.
 * Gives up after 3 s (a machine busy with other work never looks idle).
 */
static void settle(void)
{
    for (unsigned tries = 0; tries < 3000 / SETTLE_MS; tries++) {
        uint64_t self = cpu_ns(), child = slb_x_child_cpu_ns();
        sleep_ms(SETTLE_MS);
        uint64_t self_used = cpu_ns() - self, child_used = slb_x_child_cpu_ns() - child;
        /* 5% of one CPU here; the helper is seen in clock ticks (10 ms). */
        if (self_used < SETTLE_MS * 50000u && child_used <= 10000000u)
            return;
    }
}

/* Runs one contender once and checks the result; false = runtime failed. */
static bool run_checked(const slb_xopts *o, const slb_xworkload *w, const slb_xcontender *c,
                        slb_xresult *r)
{
    memset(r, 0, sizeof(*r));
    slb_watchdog_arm(o->timeout_s, "\nsl-bench: FAILED — contender '%s' did not finish %s "
                     "within %u s: a hang\n", c->name, w->label, o->timeout_s);
    uint64_t c0 = cpu_ns(), t0 = slb_now_ns();
    bool ok = c->run(&w->p, r);
    uint64_t t1 = slb_now_ns(), c1 = cpu_ns();
    slb_watchdog_disarm();
    if (!ok)
        return false;
    if (!(c->flags & SLB_XREMOTE)) {
        r->wall_ns = t1 - t0;
        r->cpu_ns = c1 - c0;
    }
    if (r->value != w->want_value || r->checksum != w->want_sum)
        slb_die(c->name, "%s: result %llu (checksum %llu), expected %llu (checksum %llu)",
                w->label, (unsigned long long)r->value, (unsigned long long)r->checksum,
                (unsigned long long)w->want_value, (unsigned long long)w->want_sum);
    return true;
}

/* ---- workloads ------------------------------------------------------------- */

static uint64_t spin_sink;

/* Iterations of slb_x_spin per microsecond on this machine: the best of
 * five timings of a 2^21-iteration run. */
static uint64_t spin_per_us(void)
{
    uint64_t best = UINT64_MAX;
    for (unsigned i = 0; i < 5; i++) {
        uint64_t t0 = slb_now_ns();
        spin_sink += slb_x_spin(1u << 21, i);
        uint64_t t = slb_now_ns() - t0;
        best = t < best ? t : best;
    }
    uint64_t per_us = (UINT64_C(1) << 21) * 1000 / (best ? best : 1);
    return per_us ? per_us : 1;
}

static void add_entries(const slb_xopts *o, slb_xworkload *w)
{
    w->e = calloc(N_ALL, sizeof(slb_xentry));
    if (!w->e)
        slb_die("sl-bench", "out of memory");
    for (size_t i = 0; i < N_ALL; i++) {
        if (!(o->contenders & (1u << i)))
            continue;
        slb_xentry *e = &w->e[w->n++];
        e->c = all[i].c;
        e->skip = why_not[i];
        e->wall = calloc(o->rounds, sizeof(double));
        e->cpu = calloc(o->rounds, sizeof(double));
        e->order = calloc(o->rounds, sizeof(unsigned));
        if (!e->wall || !e->cpu || !e->order)
            slb_die("sl-bench", "out of memory");
    }
}

/* Fills the expected result and the spawn count of w->p. */
static void expect(slb_xworkload *w)
{
    const slb_xparams *p = &w->p;
    w->want_sum = 0;
    switch (p->work) {
    case SLB_XFIB:
        w->want_value = slb_x_fib_value(p->n);
        w->tasks = slb_x_fib_tasks(p->n);
        break;
    case SLB_XNQUEENS:
        w->tasks = 0;
        w->want_value = slb_x_nq_known(p->n);
        if (slb_x_nq_serial(p->n, 0, "", &w->tasks) != w->want_value)
            slb_die("serial", "nqueens(%u) disagrees with the published count", p->n);
        break;
    case SLB_XUTS: {
        /* T1's count is published; other depths are counted serially here. */
        bool t1 = p->uts_b0 == 4.0 && p->uts_depth == 10 && p->uts_root == 19;
        slb_uts_node root;
        slb_uts_root(&root, p->uts_root);
        w->want_value = t1 ? SLB_UTS_T1_NODES : slb_uts_serial(&root, p->uts_b0, p->uts_depth);
        w->tasks = w->want_value - 1; /* every node but the root is spawned */
        break;
    }
    case SLB_XBPC:
        slb_x_bpc_expect(p, &w->want_value, &w->want_sum);
        w->tasks = w->want_value; /* the first producer is spawned too */
        break;
    default:
        break;
    }
}

static size_t build_workloads(const slb_xopts *o, slb_xworkload *ws, size_t cap)
{
    size_t n = 0;
    uint64_t per_us = (o->works & (1u << SLB_XBPC)) ? spin_per_us() : 1;
    for (unsigned k = 0; k < SLB_XWORKS; k++) {
        if (!(o->works & (1u << k)))
            continue;
        size_t reps = k == SLB_XFIB ? o->n_fibs : 1;
        for (size_t r = 0; r < reps && n < cap; r++) {
            slb_xworkload *w = &ws[n++];
            memset(w, 0, sizeof(*w));
            w->p.work = (slb_xwork)k;
            w->p.uts_b0 = 4.0;
            w->p.uts_depth = o->uts_depth;
            w->p.uts_root = 19;
            w->p.bpc_depth = o->bpc_depth;
            w->p.bpc_consumers = o->bpc_consumers;
            w->p.bpc_iters = per_us * o->bpc_us;
            if (k == SLB_XFIB) {
                w->p.n = o->fibs[r];
                snprintf(w->label, sizeof(w->label), "fib(%u)", w->p.n);
                snprintf(w->what, sizeof(w->what), "a spawn at every level, no cutoff");
            } else if (k == SLB_XNQUEENS) {
                w->p.n = o->nqueens;
                snprintf(w->label, sizeof(w->label), "nqueens(%u)", w->p.n);
                snprintf(w->what, sizeof(w->what), "a task per legal placement");
            } else if (k == SLB_XUTS) {
                snprintf(w->label, sizeof(w->label), "uts %s", o->uts_depth == 10 ? "T1" : "T1-like");
                snprintf(w->what, sizeof(w->what), "-t 1 -a 3 -d %u -b 4 -r 19, a task per node",
                         o->uts_depth);
            } else {
                snprintf(w->label, sizeof(w->label), "bpc");
                snprintf(w->what, sizeof(w->what),
                         "%u producers x %u consumers of %u us (%llu iterations)",
                         o->bpc_depth, o->bpc_consumers, o->bpc_us,
                         (unsigned long long)w->p.bpc_iters);
            }
            expect(w);
            add_entries(o, w);
        }
    }
    return n;
}

/* ---- rounds ------------------------------------------------------------------ */

typedef struct progress {
    bool tty;
    size_t done, total;
    uint64_t t0;
} progress;

static void show(const progress *p, const slb_xworkload *w, unsigned r, unsigned rounds,
                 const char *name)
{
    if (!p->tty)
        return;
    fprintf(stderr, "\r\033[K[%3zu%% %4.0fs] %s · round %u/%u · %s", p->done * 100 / p->total,
            (double)(slb_now_ns() - p->t0) / 1e9, w->label, r + 1, rounds, name);
    fflush(stderr);
}

static void run_workload(const slb_xopts *o, slb_xworkload *w, uint64_t *rng, progress *p)
{
    unsigned order[SLB_X_MAX_CONTENDERS];
    for (unsigned r = 0; r < o->rounds; r++) {
        for (size_t i = 0; i < w->n; i++)
            order[i] = (unsigned)i;
        slb_shuffle(order, w->n, rng);
        for (size_t k = 0; k < w->n; k++) {
            slb_xentry *e = &w->e[order[k]];
            p->done++;
            if (e->skip)
                continue;
            show(p, w, r, o->rounds, e->c->name);
            settle();
            slb_xresult res;
            if (!run_checked(o, w, e->c, &res))
                slb_die(e->c->name, "%s: the runtime failed", w->label);
            e->wall[e->done] = (double)res.wall_ns;
            e->cpu[e->done] = (double)res.cpu_ns;
            e->order[e->done] = (unsigned)k;
            e->done++;
        }
    }
    if (p->tty)
        fprintf(stderr, "\r\033[K");
    slb_x_summarize(w);
}

/* ---- options ------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
        "usage: sl-bench exec [options]\n"
        "  Compares sluice's spawn/sync executor with oneTBB task_group, OpenMP tasks\n"
        "  (GCC libgomp; LLVM libomp in a helper process) and serial code.\n"
        "  --works W,...       fib, nqueens, uts, bpc (default: all)\n"
        "  --fib N,...         fib sizes, 2..50 (default 30,32)\n"
        "  --nqueens N         board size, 4..%u (default 11)\n"
        "  --uts-depth D       UTS depth limit; 10 is T1, 4 130 071 nodes (default 10)\n"
        "  --bpc D,N,US        BPC: D producers, N consumers each, US microseconds of\n"
        "                      work per consumer (default 5000,9,10)\n"
        "  --contenders C,...  serial, sluice, tbb, gomp, libomp (default: all)\n"
        "  --threads N         threads of every runtime (default: CPUs available)\n"
        "  --rounds R          rounds per workload; figures are medians (default 5)\n"
        "  --seed S            shuffle seed (default: from the clock; always printed)\n"
        "  --timeout S         a run longer than this is a hang: exit 3 (default 300)\n"
        "  --csv FILE          one row per workload, contender and round\n"
        "  --quick             tiny sizes, one round: a smoke test of every contender\n"
        "  --list              list the contenders and why any is skipped, run nothing\n",
        SLB_NQ_MAX);
}

static bool parse_uint(const char *s, unsigned lo, unsigned hi, unsigned *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || end == s || *end || *s == '-' || v < lo || v > hi)
        return false;
    *out = (unsigned)v;
    return true;
}

/* "a,b,c" of unsigned values in [lo, hi]; false on anything else. */
static bool parse_list(const char *s, unsigned lo, unsigned hi, unsigned *out, size_t cap,
                       size_t *n)
{
    char buf[128];
    if (strlen(s) >= sizeof(buf))
        return false;
    snprintf(buf, sizeof(buf), "%s", s);
    *n = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (*n == cap || !parse_uint(tok, lo, hi, &out[*n]))
            return false;
        ++*n;
    }
    return *n > 0;
}

enum { X_WORKS = 256, X_FIB, X_NQ, X_UTS, X_BPC, X_CONT, X_THREADS, X_ROUNDS, X_SEED,
       X_TIMEOUT, X_CSV, X_QUICK, X_LIST, X_HELP };

static const struct option long_opts[] = {
    { "works", 1, 0, X_WORKS }, { "fib", 1, 0, X_FIB }, { "nqueens", 1, 0, X_NQ },
    { "uts-depth", 1, 0, X_UTS }, { "bpc", 1, 0, X_BPC }, { "contenders", 1, 0, X_CONT },
    { "threads", 1, 0, X_THREADS }, { "rounds", 1, 0, X_ROUNDS }, { "seed", 1, 0, X_SEED },
    { "timeout", 1, 0, X_TIMEOUT }, { "csv", 1, 0, X_CSV }, { "quick", 0, 0, X_QUICK },
    { "list", 0, 0, X_LIST }, { "help", 0, 0, X_HELP }, { 0, 0, 0, 0 },
};

static bool parse_value(int c, const char *arg, slb_xopts *o)
{
    static const char *const works[] = { "fib", "nqueens", "uts", "bpc" };
    const char *ids[N_ALL];
    for (size_t i = 0; i < N_ALL; i++)
        ids[i] = all[i].c->id;
    unsigned bpc[3];
    size_t n;
    switch (c) {
    case X_WORKS: return slb_parse_names(arg, works, SLB_XWORKS, &o->works);
    case X_CONT: return slb_parse_names(arg, ids, N_ALL, &o->contenders);
    case X_FIB: return parse_list(arg, 2, 50, o->fibs, SLB_X_MAX_FIBS, &o->n_fibs);
    case X_NQ: return parse_uint(arg, 4, SLB_NQ_MAX, &o->nqueens);
    case X_UTS: return parse_uint(arg, 1, 14, &o->uts_depth);
    case X_THREADS: return parse_uint(arg, 1, 1024, &o->threads);
    case X_ROUNDS: return parse_uint(arg, 1, 1000, &o->rounds);
    case X_TIMEOUT: return parse_uint(arg, 1, 86400, &o->timeout_s);
    case X_CSV: o->csv = arg; return true;
    case X_SEED: {
        char *end;
        errno = 0;
        o->seed = strtoull(arg, &end, 10);
        return !errno && end != arg && !*end && *arg != '-';
    }
    case X_BPC:
        if (!parse_list(arg, 1, 1000000, bpc, 3, &n) || n != 3)
            return false;
        o->bpc_depth = bpc[0], o->bpc_consumers = bpc[1], o->bpc_us = bpc[2];
        return true;
    default: return false;
    }
}

static void set_defaults(slb_xopts *o)
{
    memset(o, 0, sizeof(*o));
    o->rounds = 5;
    o->threads = slb_ncpu();
    o->timeout_s = 300;
    o->seed = slb_now_ns() ^ ((uint64_t)getpid() << 32);
    o->fibs[0] = 30, o->fibs[1] = 32, o->n_fibs = 2;
    o->nqueens = 11;
    o->uts_depth = 10;
    o->bpc_depth = 5000, o->bpc_consumers = 9, o->bpc_us = 10;
    o->works = (1u << SLB_XWORKS) - 1;
    o->contenders = (1u << N_ALL) - 1;
}

/* --quick: what was not given explicitly (bit per option) becomes tiny. */
static void apply_quick(slb_xopts *o, uint64_t given)
{
#define GIVEN(x) (given & (UINT64_C(1) << ((x) - 256)))
    if (!GIVEN(X_ROUNDS))
        o->rounds = 1;
    if (!GIVEN(X_FIB))
        o->fibs[0] = 20, o->n_fibs = 1;
    if (!GIVEN(X_NQ))
        o->nqueens = 8;
    if (!GIVEN(X_UTS))
        o->uts_depth = 6;
    if (!GIVEN(X_BPC))
        o->bpc_depth = 200, o->bpc_consumers = 9, o->bpc_us = 2;
#undef GIVEN
}

static int parse(int argc, char **argv, slb_xopts *o)
{
    uint64_t given = 0;
    bool quick = false;
    int c;
    set_defaults(o);
    while ((c = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
        if (c == 'h' || c == X_HELP) {
            usage(stdout);
            exit(0);
        }
        if (c == X_QUICK || c == X_LIST) {
            quick |= c == X_QUICK;
            o->list_only |= c == X_LIST;
            continue;
        }
        if (c == '?' || !parse_value(c, optarg, o)) {
            if (c != '?')
                fprintf(stderr, "sl-bench exec: bad value '%s'\n", optarg);
            usage(stderr);
            return 2;
        }
        given |= UINT64_C(1) << (c - 256);
    }
    if (optind < argc) {
        fprintf(stderr, "sl-bench exec: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (quick)
        apply_quick(o, given);
    return 0;
}

/* ---- the command ------------------------------------------------------------------ */

static void print_preamble(const slb_xopts *o)
{
    printf("sl-bench exec — sluice %s\n", SLB_VERSION);
    slb_print_machine(stdout);
    printf("method: every runtime has %u thread%s (the calling thread included where it "
           "takes part); each figure is the median of %u round%s, every round runs the "
           "contenders once in shuffled order (seed %llu); wall clock and user+sys CPU "
           "time of the whole process (getrusage) around each run, after its threads "
           "went idle\n", o->threads, o->threads > 1 ? "s" : "", o->rounds,
           o->rounds > 1 ? "s" : "", (unsigned long long)o->seed);
    printf("every result is checked: fib's value, the number of solutions, UTS's node "
           "count, BPC's task count and checksum\n\n");
}

static void print_contenders(void)
{
    printf("contenders:\n");
    for (size_t i = 0; i < N_ALL; i++)
        printf("  %-28s %-7s %s\n", all[i].c->name, all[i].c->id,
               why_not[i] ? why_not[i] : "ready");
    putchar('\n');
    fflush(stdout);
}

static void free_workloads(slb_xworkload *ws, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < ws[i].n; j++) {
            free(ws[i].e[j].wall);
            free(ws[i].e[j].cpu);
            free(ws[i].e[j].order);
        }
        free(ws[i].e);
    }
}

int slb_exec_main(int argc, char **argv)
{
    slb_xopts o;
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc;
    if (!slb_uts_sha1_ok())
        slb_die("sl-bench", "SHA-1 fails its test vector: UTS would be wrong");
    uint64_t t0 = slb_now_ns();
    if (!o.list_only)
        print_preamble(&o);
    start_all(&o);
    print_contenders();
    if (o.list_only) {
        stop_all();
        return 0;
    }
    slb_watchdog_install();

    slb_xworkload ws[SLB_X_MAX_FIBS + SLB_XWORKS];
    size_t nw = build_workloads(&o, ws, sizeof(ws) / sizeof(ws[0]));
    progress p = { .tty = isatty(STDERR_FILENO) != 0, .t0 = t0 };
    for (size_t i = 0; i < nw; i++)
        p.total += ws[i].n * o.rounds;
    uint64_t rng = o.seed;
    for (size_t i = 0; i < nw; i++) {
        run_workload(&o, &ws[i], &rng, &p);
        slb_x_print_workload(stdout, &ws[i], o.rounds, o.threads);
    }
    slb_x_print_targets(stdout, ws, nw, o.threads);
    bool ok = true;
    if (o.csv && (ok = slb_x_write_csv(o.csv, ws, nw, o.threads)))
        printf("csv: %s (one row per workload, contender and round)\n", o.csv);
    printf("total time: %.1f s\n", (double)(slb_now_ns() - t0) / 1e9);
    stop_all();
    free_workloads(ws, nw);
    return ok ? 0 : 1;
}
