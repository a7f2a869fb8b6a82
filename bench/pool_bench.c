/*
 * pool_bench.c — `sl-bench pool`: sluice's worker pool, once per dispatch
 * mode, against GLib's GThreadPool, oneTBB (task_arena::enqueue and
 * task_group::run) and a well-written mutex/condvar pool.
 *
 * Workloads (pool_work.c): CPU while idle; empty-job throughput from 1, 4
 * and 8 submitters; an uneven mix (every k-th job long) offered at a steady
 * load, where the dispatch modes should differ most: how long jobs wait;
 * and the wake-up latency of a pool whose workers have gone to sleep.
 *
 * Method, as `sl-bench chan`'s: every figure is the median of R rounds; each
 * round runs the workload's contenders once in an order shuffled afresh
 * (seed printed), so slow drifts of the machine spread over everyone.
 * Throughput runs are sized per contender by probe runs to last --run-ms.
 * A run that outlasts --timeout is a hang: the watchdog names it and exits.
 */
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "bench.h"
#include "pool_bench.h"

#ifndef SLB_VERSION
#define SLB_VERSION "?"
#endif

/* ---- the contenders ----------------------------------------------------- */

#if SLB_HAVE_POOL_GLIB
#define GLIB_POOLS slp_pools_glib
#else
#define GLIB_POOLS NULL
#endif
#if SLB_HAVE_POOL_TBB
#define TBB_POOLS slp_pools_tbb
#else
#define TBB_POOLS NULL
#endif

typedef struct pool_set {
    const char *id;          /* for --peers; "sluice" for ours */
    slp_peer_fn get;         /* NULL: not built */
    const char *missing[3];  /* row names when not built */
    const char *package;
} pool_set;

static const pool_set pool_sets[] = {
    { "sluice", slp_pools_sluice, { NULL, NULL, NULL }, NULL },
    { "glib", GLIB_POOLS, { "GLib GThreadPool", NULL, NULL }, "libglib2.0-dev" },
    { "tbb", TBB_POOLS, { "tbb arena.enqueue", "tbb task_group.run", NULL }, "libtbb-dev" },
    { "mutex", slp_pools_mutex, { NULL, NULL, NULL }, NULL },
};
#define N_SETS (sizeof(pool_sets) / sizeof(pool_sets[0]))

typedef struct contender {
    const slp_ops *ops;  /* NULL: skipped */
    const char *name;
    const char *skip;
} contender;

static bool in_list(const char *list, const char *id)
{
    if (strcmp(list, "all") == 0)
        return true;
    size_t len = strlen(id);
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        if (n == len && strncmp(p, id, len) == 0)
            return true;
        p += n + (p[n] == ',');
    }
    return false;
}

static unsigned collect(const slp_opts *o, contender *out)
{
    static char why[N_SETS][96];
    unsigned n = 0;
    for (unsigned i = 0; i < N_SETS; i++) {
        const pool_set *s = &pool_sets[i];
        bool ours = strcmp(s->id, "sluice") == 0;
        if (!ours && !in_list(o->peers, s->id))
            continue;
        if (!s->get) {
            snprintf(why[i], sizeof(why[i]), "not installed when sl-bench was configured "
                                             "(Debian: %s)", s->package);
            for (unsigned k = 0; k < 3 && s->missing[k]; k++)
                out[n++] = (contender){ NULL, s->missing[k], why[i] };
            continue;
        }
        unsigned k = 0;
        for (const slp_ops *const *c = s->get(); *c && n < SLP_MAX_CONTENDERS; c++, k++)
            if (!ours || (o->dispatch & (1u << k)))
                out[n++] = (contender){ *c, (*c)->name, NULL };
    }
    return n;
}

/* ---- options ------------------------------------------------------------ */

static void usage(FILE *f)
{
    fprintf(f,
        "usage: sl-bench pool [options]\n"
        "  Compares sluice's worker pool (each dispatch mode) with the installed pools.\n"
        "  --tests T,...       idle, tput, uneven, wake (default: all)\n"
        "  --workers N         worker threads per pool (default: online CPUs)\n"
        "  --submitters S,...  tput: submitting threads, one workload each (default 1,4,8)\n"
        "  --peers P,...       glib, tbb, mutex; all (default) or none\n"
        "  --dispatch D,...    sluice modes: shared, rr, ll (default: all three)\n"
        "  --rounds R          rounds per workload; figures are medians (default 5)\n"
        "  --run-ms MS         target length of a throughput run (default 200)\n"
        "  --jobs N            fixed jobs per throughput run, k/M suffixes (default: sized)\n"
        "  --samples N         wake-ups per wake run (default 200)\n"
        "  --gap-ms A-B        sleep before each wake-up, uniform in [A, B] (default 5-20)\n"
        "  --idle-ms MS        idle: the measured window (default 500; 50 ms settle first)\n"
        "  --uneven K          uneven: every K-th job is long (default 16)\n"
        "  --long-us US        uneven: the long jobs' length (default 200; short ones 1)\n"
        "  --uneven-jobs N     uneven: jobs per run (default 10k)\n"
        "  --load PCT          uneven: offered load, %% of the workers' capacity (default 30)\n"
        "  --seed S            shuffle seed (default: from the clock; always printed)\n"
        "  --timeout S         a run longer than this is a hang (default 120)\n"
        "  --csv FILE          one row per workload, contender and round\n"
        "  --quick             tiny runs, one round: a smoke test of every contender\n"
        "  --list              list the contenders, run nothing\n");
}

static bool parse_submitters(const char *s, slp_opts *o)
{
    o->n_submitters = 0;
    for (const char *p = s; *p;) {
        char *end;
        unsigned long v = strtoul(p, &end, 10);
        if (end == p || v == 0 || v > SLP_MAX_SUBMITTERS || o->n_submitters == SLP_MAX_CONFIGS)
            return false;
        o->submitters[o->n_submitters++] = (unsigned)v;
        if (*end && *end != ',')
            return false;
        p = *end ? end + 1 : end;
    }
    return o->n_submitters > 0;
}

static bool parse_gap(const char *s, slp_opts *o)
{
    unsigned long a, b;
    int used = 0;
    if (sscanf(s, "%lu-%lu%n", &a, &b, &used) != 2 || s[used] || a == 0 || b < a)
        return false;
    o->gap_min_ns = a * 1000000u;
    o->gap_max_ns = b * 1000000u;
    return true;
}

enum { O_TESTS = 256, O_WORKERS, O_SUBMITTERS, O_PEERS, O_DISPATCH, O_ROUNDS, O_RUNMS,
       O_JOBS, O_SAMPLES, O_GAP, O_IDLEMS, O_UNEVEN, O_LONGUS, O_SEED, O_TIMEOUT, O_CSV,
       O_QUICK, O_LIST, O_HELP, O_UJOBS, O_LOAD };

static const struct option long_opts[] = {
    { "tests", 1, 0, O_TESTS }, { "workers", 1, 0, O_WORKERS },
    { "submitters", 1, 0, O_SUBMITTERS }, { "peers", 1, 0, O_PEERS },
    { "dispatch", 1, 0, O_DISPATCH }, { "rounds", 1, 0, O_ROUNDS },
    { "run-ms", 1, 0, O_RUNMS }, { "jobs", 1, 0, O_JOBS }, { "samples", 1, 0, O_SAMPLES },
    { "gap-ms", 1, 0, O_GAP }, { "idle-ms", 1, 0, O_IDLEMS }, { "uneven", 1, 0, O_UNEVEN },
    { "long-us", 1, 0, O_LONGUS }, { "seed", 1, 0, O_SEED }, { "timeout", 1, 0, O_TIMEOUT },
    { "csv", 1, 0, O_CSV }, { "quick", 0, 0, O_QUICK }, { "list", 0, 0, O_LIST },
    { "help", 0, 0, O_HELP }, { "uneven-jobs", 1, 0, O_UJOBS }, { "load", 1, 0, O_LOAD },
    { 0, 0, 0, 0 },
};

static void set_defaults(slp_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->workers = slb_ncpu();
    parse_submitters("1,4,8", o);
    o->tests = (1u << SLP_TESTS) - 1;
    o->rounds = 5;
    o->run_ns = 200000000u;
    o->samples = 200;
    o->gap_min_ns = 5000000u;
    o->gap_max_ns = 20000000u;
    o->settle_ns = 50000000u;
    o->idle_ns = 500000000u;
    o->uneven_every = 16;
    o->uneven_jobs = 10000;
    o->load = 0.3;
    o->short_ns = 1000;
    o->long_ns = 200000;
    o->seed = slb_now_ns() ^ ((uint64_t)getpid() << 32);
    o->timeout_s = 120;
    o->peers = "all";
    o->dispatch = 7;
}

/* --quick: what was not given explicitly (bit per option) shrinks. */
static void apply_quick(slp_opts *o, uint64_t given)
{
#define GIVEN(opt) (given & (UINT64_C(1) << ((opt) - 256)))
    if (!GIVEN(O_ROUNDS))
        o->rounds = 1;
    if (!GIVEN(O_JOBS))
        o->jobs = 20000;
    if (!GIVEN(O_SAMPLES))
        o->samples = 20;
    if (!GIVEN(O_GAP))
        o->gap_min_ns = 2000000u, o->gap_max_ns = 3000000u;
    if (!GIVEN(O_IDLEMS))
        o->idle_ns = 50000000u;
    if (!GIVEN(O_UJOBS))
        o->uneven_jobs = 2000;
    o->settle_ns = 10000000u;
#undef GIVEN
}

static bool parse_value(int c, const char *arg, slp_opts *o)
{
    static const char *const tests[] = { "idle", "tput", "uneven", "wake" };
    static const char *const modes[] = { "shared", "rr", "ll" };
    uint64_t v = 0;
    switch (c) {
    case O_TESTS: return slb_parse_names(arg, tests, SLP_TESTS, &o->tests);
    case O_DISPATCH: return slb_parse_names(arg, modes, 3, &o->dispatch);
    case O_SUBMITTERS: return parse_submitters(arg, o);
    case O_GAP: return parse_gap(arg, o);
    case O_PEERS: o->peers = arg; return true;
    case O_CSV: o->csv = arg; return true;
    default: break;
    }
    if (!slb_parse_u64(arg, &v) || v == 0)
        return false;
    switch (c) {
    case O_WORKERS: o->workers = (unsigned)(v < 1024 ? v : 1024); break;
    case O_ROUNDS: o->rounds = (unsigned)(v < 1000 ? v : 1000); break;
    case O_RUNMS: o->run_ns = v * 1000000u; break;
    case O_JOBS: o->jobs = v; break;
    case O_SAMPLES: o->samples = (unsigned)(v < 1000000 ? v : 1000000); break;
    case O_IDLEMS: o->idle_ns = v * 1000000u; break;
    case O_UNEVEN: o->uneven_every = (unsigned)(v < 1000000 ? v : 1000000); break;
    case O_LONGUS: o->long_ns = v * 1000u; break;
    case O_UJOBS: o->uneven_jobs = (unsigned)(v < 10000000 ? v : 10000000); break;
    case O_LOAD:
        if (v > 95)
            return false;
        o->load = (double)v / 100.0;
        break;
    case O_SEED: o->seed = v; break;
    case O_TIMEOUT: o->timeout_s = (unsigned)v; break;
    default: return false;
    }
    return true;
}

static int parse_pool(int argc, char **argv, slp_opts *o)
{
    uint64_t given = 0;
    bool quick = false;
    int c;
    set_defaults(o);
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
        if (c == 'h' || c == O_HELP) {
            usage(stdout);
            exit(0);
        }
        if (c == O_QUICK || c == O_LIST) {
            quick |= c == O_QUICK;
            o->list_only |= c == O_LIST;
            continue;
        }
        if (c == '?' || !parse_value(c, optarg, o)) {
            if (c != '?')
                fprintf(stderr, "sl-bench: bad value for an option: '%s'\n", optarg);
            usage(stderr);
            return 2;
        }
        given |= UINT64_C(1) << (c - 256);
    }
    if (optind < argc) {
        fprintf(stderr, "sl-bench: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (quick)
        apply_quick(o, given);
    return 0;
}

/* ---- workloads and rounds ----------------------------------------------- */

static unsigned build_workloads(const slp_opts *o, const contender *cs, unsigned n,
                                slp_workload *ws)
{
    unsigned count = 0;
    for (unsigned t = 0; t < SLP_TESTS; t++) {
        if (!(o->tests & (1u << t)))
            continue;
        unsigned configs = t == SLP_TPUT ? o->n_submitters : 1;
        for (unsigned k = 0; k < configs; k++) {
            slp_workload *w = &ws[count++];
            memset(w, 0, sizeof(*w));
            w->test = (slp_test)t;
            w->submitters = t == SLP_TPUT ? o->submitters[k] : 1;
            static const char *const names[] = { "idle", "tput", "uneven", "wake" };
            if (t == SLP_TPUT)
                snprintf(w->label, sizeof(w->label), "tput %ux", w->submitters);
            else
                snprintf(w->label, sizeof(w->label), "%s", names[t]);
            w->entries = calloc(n, sizeof(slp_entry));
            if (!w->entries)
                slb_die("sl-bench", "out of memory");
            w->n = n;
            for (unsigned i = 0; i < n; i++) {
                slp_entry *e = &w->entries[i];
                *e = (slp_entry){ .ops = cs[i].ops, .name = cs[i].name, .skip = cs[i].skip };
                e->res = calloc(o->rounds, sizeof(slp_result));
                e->order = calloc(o->rounds, sizeof(unsigned));
                if (!e->res || !e->order)
                    slb_die("sl-bench", "out of memory");
            }
        }
    }
    return count;
}

static void arm(const slp_opts *o, const slp_workload *w, const char *name)
{
    slb_watchdog_arm(o->timeout_s, "\nsl-bench: FAILED — contender '%s' did not finish %s "
                     "within %u s: a lost job or a deadlock\n", name, w->label, o->timeout_s);
}

static void run_one(const slp_opts *o, slp_workload *w, slp_entry *e, uint64_t *rng,
                    slp_result *out)
{
    arm(o, w, e->name);
    if (w->test == SLP_IDLE)
        slp_run_idle(e->ops, o, out);
    else if (w->test == SLP_WAKE)
        slp_run_wake(e->ops, o, rng, out);
    else if (w->test == SLP_UNEVEN)
        slp_run_uneven(e->ops, o, out);
    else
        slp_run_tput(e->ops, o, w->submitters, e->jobs, out);
    slb_watchdog_disarm();
}

static void progress(const slp_workload *w, const char *what, const char *name)
{
    if (!isatty(STDERR_FILENO))
        return;
    fprintf(stderr, "\r\033[K%s · %s · %s", w->label, what, name);
    fflush(stderr);
}

static void run_workload(const slp_opts *o, slp_workload *w, uint64_t *rng)
{
    unsigned order[SLP_MAX_CONTENDERS];
    for (unsigned i = 0; w->test == SLP_TPUT && i < w->n; i++) {
        slp_entry *e = &w->entries[i];
        if (e->skip)
            continue;
        progress(w, "sizing", e->name);
        arm(o, w, e->name);
        e->jobs = o->jobs ? o->jobs : slp_size_tput(e->ops, o, w->submitters);
        slb_watchdog_disarm();
    }
    for (unsigned r = 0; r < o->rounds; r++) {
        for (unsigned i = 0; i < w->n; i++)
            order[i] = i;
        slb_shuffle(order, w->n, rng);
        for (unsigned k = 0; k < w->n; k++) {
            slp_entry *e = &w->entries[order[k]];
            if (e->skip)
                continue;
            char what[32];
            snprintf(what, sizeof(what), "round %u/%u", r + 1, o->rounds);
            progress(w, what, e->name);
            run_one(o, w, e, rng, &e->res[e->done]);
            e->order[e->done++] = k;
        }
    }
    if (isatty(STDERR_FILENO))
        fprintf(stderr, "\r\033[K");
    slp_summarize(w);
}

/* ---- the command -------------------------------------------------------- */

static void print_preamble(FILE *f, const slp_opts *o)
{
    fprintf(f, "sl-bench pool — sluice %s\n", SLB_VERSION);
    slb_print_machine(f);
    fprintf(f, "method: each figure is the median of %u rounds; every round runs the "
               "workload's contenders once in shuffled order (seed %llu)\n", o->rounds,
            (unsigned long long)o->seed);
    fprintf(f, "pools: %u workers each, unbounded queues; ", o->workers);
    if (o->jobs)
        fprintf(f, "throughput runs of %llu jobs\n", (unsigned long long)o->jobs);
    else
        fprintf(f, "throughput runs sized per contender to last ~%.0f ms\n",
                (double)o->run_ns / 1e6);
    fprintf(f, "uneven: busy loops calibrated at %.0f iterations/us\n",
            slp_spin_iters_per_us());
    fprintf(f, "every job is verified: per-thread tallies of count, sum and hash of the "
               "job values must match what was submitted\n\n");
}

static void print_contenders(FILE *f, const contender *cs, unsigned n)
{
    fprintf(f, "contenders:\n");
    for (unsigned i = 0; i < n; i++)
        fprintf(f, "  %-22s %-7s %s\n", cs[i].name, cs[i].ops ? cs[i].ops->peer : "-",
                cs[i].ops ? cs[i].ops->note : cs[i].skip);
    fputc('\n', f);
}

int slb_pool_main(int argc, char **argv)
{
    uint64_t t0 = slb_now_ns();
    slp_opts o;
    int rc = parse_pool(argc, argv, &o);
    if (rc)
        return rc;
    contender cs[SLP_MAX_CONTENDERS];
    unsigned n = collect(&o, cs);
    if (n == 0) {
        fprintf(stderr, "sl-bench: no contender selected\n");
        return 2;
    }
    if (o.list_only) {
        print_contenders(stdout, cs, n);
        return 0;
    }
    slp_calibrate();
    print_preamble(stdout, &o);
    print_contenders(stdout, cs, n);
    fflush(stdout);

    slb_watchdog_install();
    slp_workload ws[SLP_TESTS + SLP_MAX_CONFIGS];
    unsigned nw = build_workloads(&o, cs, n, ws);
    uint64_t rng = o.seed;
    for (unsigned i = 0; i < nw; i++) {
        run_workload(&o, &ws[i], &rng);
        slp_print_workload(stdout, &ws[i], &o);
    }
    slp_print_targets(stdout, ws, nw);
    slp_print_dispatch(stdout, ws, nw);
    bool ok = true;
    if (o.csv && (ok = slp_write_csv(o.csv, ws, nw, &o)))
        printf("csv: %s (one row per workload, contender and round)\n", o.csv);
    printf("total time: %.1f s\n", (double)(slb_now_ns() - t0) / 1e9);
    for (unsigned i = 0; i < nw; i++) {
        for (unsigned j = 0; j < ws[i].n; j++) {
            free(ws[i].entries[j].res);
            free(ws[i].entries[j].order);
        }
        free(ws[i].entries);
    }
    return ok ? 0 : 1;
}
