/*
 * ipc.c — `sl-bench ipc`: messages between two processes. sluice's channel
 * in shared memory (when this build has it) against what programs use today —
 * a pipe, a Unix datagram socketpair, a POSIX message queue — and against the
 * same sluice channel between two threads of one process, the figure a
 * channel between processes should come close to. This file is the command:
 * options, contenders, rounds, tables, targets; ipc_run.c runs one run.
 *
 * Two workloads (ipc_run.c), pingpong and tput, each with 8- and 64-byte
 * messages (--size). The kernel peers and the shared-memory channel run with
 * their peer in a forked process; the in-process channel between two threads
 * (its memory is not shared with a child), so the ratio of the two is the
 * cost of the process boundary. The shared-memory channel also runs between
 * two threads (its "threads" rows), which splits that ratio into what the
 * segment costs and what the processes do. The select row (every blocking
 * call an sl_select) is set against the same selects on an in-process
 * channel between threads.
 *
 * Method, as `sl-bench chan`'s: every figure is the median of R rounds; each
 * round runs every contender once in an order shuffled afresh (seed printed).
 * "vs peer" compares with the best kernel-mediated peer; the closing lines
 * hold the ratios the shared-memory channel is measured against.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ipc.h"
#include "peers/peers.h"

#ifndef SLB_VERSION
#define SLB_VERSION "?"
#endif

enum { IPC_PINGPONG, IPC_TPUT, IPC_TESTS };

typedef struct ipc_opts {
    size_t sizes[SLB_MAX_SIZES];
    size_t n_sizes;
    unsigned tests;        /* bit per IPC_* */
    unsigned rounds;
    uint64_t trips, trip_cap_ns, run_ns;
    size_t capacity;
    uint64_t seed;
    unsigned timeout_s;
    const char *csv;
    bool list_only;
} ipc_opts;

#define MAX_CONTENDERS 16

/* Whether runs pin (two CPUs or more), decided before the timing side pins
 * itself: afterwards the affinity mask it and its peers inherit holds one. */
static bool pinning;

/* ---- the contenders ------------------------------------------------------ */

/* The kernel peers and sluice's shared-memory channel (when built) run across
 * fork(); sluice's in-process channel (SPSC and MPMC, blocking calls) between
 * two threads. */
static size_t collect(ipc_contender *out)
{
    size_t n = 0;
    for (const slb_ops *const *c = slb_peers_kernel_ipc(); *c; c++)
        out[n++] = (ipc_contender){ *c, true, false };
    for (const slb_ops *const *c = slb_peers_line_ceiling(); *c; c++)
        out[n++] = (ipc_contender){ *c, true, false };
#if SLB_HAVE_SHM
    for (const slb_ops *const *c = slb_peers_sluice_shm(); *c; c++)
        out[n++] = (ipc_contender){ *c, true, false };
    for (const slb_ops *const *c = slb_peers_sluice_shm_threads(); *c; c++)
        out[n++] = (ipc_contender){ *c, false, false };
    for (const slb_ops *const *c = slb_peers_sluice_select_threads(); *c; c++)
        out[n++] = (ipc_contender){ *c, false, true };
#endif
    for (const slb_ops *const *c = slb_peers_sluice(); *c; c++)
        if ((*c)->kind == SLB_BLOCKING && ((*c)->flavor == 1 || (*c)->flavor == 2))
            out[n++] = (ipc_contender){ *c, false, true };
    return n;
}

static void print_contenders(const ipc_contender *list, size_t n)
{
    printf("contenders:\n");
    for (size_t i = 0; i < n; i++)
        printf("  %-26s %-7s %-9s %s\n", list[i].ops->name, list[i].ops->peer,
               list[i].forked ? "processes" : "threads", list[i].ops->note);
#if !SLB_HAVE_SHM
    printf("shared-memory channel: not in this build (no sluice/shm.h): its rows are "
           "left out\n");
#endif
    printf("\n");
}

/* ---- workloads and rounds ------------------------------------------------ */

/* Every contender runs every workload, so entry i is contender i. */
static void add_workload(slb_workload *w, slb_test t, size_t elem, const ipc_opts *o,
                         const ipc_contender *list, size_t n)
{
    memset(w, 0, sizeof(*w));
    w->test = t;
    w->producers = w->consumers = 1;
    w->elem = elem;
    w->pinned = pinning;
    snprintf(w->label, sizeof(w->label), "ipc %s %zuB", slb_test_name(t), elem);
    w->entries = calloc(n, sizeof(slb_entry));
    if (!w->entries)
        slb_die("sl-bench", "out of memory");
    for (size_t i = 0; i < n; i++) {
        slb_entry_init(&w->entries[w->n], list[i].ops, o->rounds);
        /* Below a line a message, its consumer's long wait costs more than
         * the looks it saves: as a ceiling it would mislead. */
        if ((list[i].ops->flags & SLB_YARDSTICK) && (t != SLB_TPUT || elem < 64))
            w->entries[w->n].skip = "a yardstick for throughput at a line a message (64 "
                                    "bytes or more)";
        w->n++;
    }
}

/* One slb_ipc_run, for slb_run_measured. */
typedef struct ipc_call {
    const ipc_contender *c;
    const slb_run *run;
    uint64_t run_ns;
    ipc_shared *sh;
    ipc_tally *tally;
} ipc_call;

static bool run_call(void *arg, slb_result *res)
{
    const ipc_call *x = arg;
    return slb_ipc_run(x->c, x->run, x->run_ns, x->sh, res, x->tally);
}

static void run_workload(const ipc_opts *o, slb_workload *w, const ipc_contender *list,
                         ipc_shared *sh, uint64_t *rng, ipc_tally *tally)
{
    unsigned order[MAX_CONTENDERS];
    for (unsigned r = 0; r < o->rounds; r++) {
        for (size_t i = 0; i < w->n; i++)
            order[i] = (unsigned)i;
        slb_shuffle(order, w->n, rng);
        for (size_t k = 0; k < w->n; k++) {
            slb_entry *e = &w->entries[order[k]];
            if (e->skip)
                continue;
            slb_run run = {
                .ops = e->ops, .test = w->test, .producers = 1, .consumers = 1,
                .elem = w->elem, .capacity = o->capacity, .trips = o->trips,
                .trip_cap_ns = o->trip_cap_ns, .pin = w->pinned,
                .timeout_s = o->timeout_s, .label = w->label,
            };
            slb_result res = {0}; /* a throughput run leaves the latency fields */
            ipc_call call = { &list[order[k]], &run, o->run_ns, sh, &tally[order[k]] };
            if (slb_run_measured(run_call, &call, &res))
                slb_entry_record(e, &res, (unsigned)k);
            else
                e->skip = "could not be created (this size, or a system limit)";
        }
    }
    slb_summarize(w);
}

/* Under the workload's table: the sleeps behind its figures. */
static void print_sleeps(const slb_workload *w, const ipc_tally *tally)
{
    bool trips = w->test == SLB_PINGPONG;
    printf("sleeps (voluntary context switches, both sides) per %s:",
           trips ? "round trip" : "message");
    for (size_t i = 0; i < w->n; i++)
        if (tally[i].moved)
            printf("%s %s %.3f", i ? ";" : "", w->entries[i].ops->name,
                   (double)tally[i].sleeps / (double)tally[i].moved);
    printf("\n\n");
}

/* ---- the targets ---------------------------------------------------------- */

/* The same channel between two threads: the in-process contender of e's
 * flavour making the same calls (plain, or through a select), or NULL. */
static const slb_entry *thread_twin(const slb_workload *w, const ipc_contender *list,
                                    const slb_entry *e)
{
    for (size_t i = 0; i < w->n; i++)
        if (list[i].baseline && w->entries[i].ops->flavor == e->ops->flavor &&
            (w->entries[i].ops->flags & SLB_VIA_SELECT) == (e->ops->flags & SLB_VIA_SELECT) &&
            w->entries[i].done)
            return &w->entries[i];
    return NULL;
}

static const char *met(bool yes)
{
    return yes ? "met" : "MISSED";
}

/* Round trip: at most 1.2x the same channel between threads. Throughput: at
 * least 10x the best kernel-mediated peer (and, without a target, its ratio
 * to the channel between threads). Judged on the paired ratio; the ratio of
 * the medians is printed beside it. */
static void print_target(const slb_workload *w, const ipc_contender *list, size_t i)
{
    const slb_entry *e = &w->entries[i];
    bool judged = list[i].forked; /* a thread contender is shown for orientation */
    const slb_entry *t = judged ? thread_twin(w, list, e) : NULL;
    if (t && t->med > 0) {
        bool rt = w->test == SLB_PINGPONG;
        double pr = slb_paired_ratio(e, t);
        printf("  %-16s %-24s %6.*f %s vs %6.*f between threads: x%.*f per round, x%.2f of "
               "medians", w->label, e->ops->name, rt ? 0 : 2, e->med, rt ? "ns" : "Mmsg/s",
               rt ? 0 : 2, t->med, slb_verdict_digits(pr, rt ? 1.2 : 1.0, 2), pr, e->med / t->med);
        printf(rt ? " (target <= 1.20: %s)\n" : "%s\n", rt ? met(pr <= 1.2) : "");
    }
    if (!e->best || e->ratio <= 0)
        return;
    double pr = w->test == SLB_PINGPONG ? slb_paired_ratio(e->best, e)
                                        : slb_paired_ratio(e, e->best);
    printf("  %-16s %-24s x%.*f per round, x%.2f of medians, against the best kernel peer "
           "(%s)", w->label, e->ops->name, slb_verdict_digits(pr, 10, 2), pr, e->ratio,
           e->best->ops->name);
    if (judged && w->test == SLB_TPUT)
        printf(" (target >= 10: %s)", met(pr >= 10));
    printf("\n");
}

/* What one line a message allows between the two CPUs in the same rounds
 * (peers/line_ceiling.c): the x10 target's context, not a contender. */
static void print_ceiling(const slb_workload *w)
{
    for (size_t i = 0; i < w->n; i++) {
        const slb_entry *e = &w->entries[i];
        if (!(e->ops->flags & SLB_YARDSTICK) || e->skip || !e->best || e->ratio <= 0)
            continue;
        printf("  %-16s %-24s x%.2f per round, x%.2f of medians, against the best kernel "
               "peer (%s): a ring whose consumer stays off its producer's lines, in the "
               "same rounds\n", w->label, e->ops->name,
               slb_paired_ratio(e, e->best), e->ratio, e->best->ops->name);
    }
}

static void print_targets(const slb_workload *ws, size_t nw, const ipc_contender *list,
                          size_t n)
{
    bool shm = false;
    for (size_t i = 0; i < n; i++)
        shm |= list[i].forked && (list[i].ops->flags & SLB_OURS);
    printf("### targets: sluice between processes: round trip within x1.2 of the same "
           "channel between threads; throughput at least x10 the best kernel peer\n");
    if (!shm)
        printf("  no shared-memory channel in this build; the in-process channel against "
               "the kernel peers, for orientation:\n");
    for (size_t k = 0; k < nw; k++) {
        for (size_t i = 0; i < n; i++)
            if ((list[i].ops->flags & SLB_OURS) && list[i].forked == shm &&
                ws[k].entries[i].done)
                print_target(&ws[k], list, i);
        print_ceiling(&ws[k]);
    }
    printf("\n");
}

/* ---- options -------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
        "usage: sl-bench ipc [options]\n"
        "  Messages between two processes: sluice's shared-memory channel (when built)\n"
        "  against a pipe, a Unix datagram socketpair and a POSIX message queue, and\n"
        "  against the same sluice channel between two threads of one process.\n"
        "  --size B,...      message sizes in bytes, multiples of 8 up to %u (default 8,64)\n"
        "  --tests T,...     pingpong, tput (default: both)\n"
        "  --rounds R        rounds; figures are medians (default 5)\n"
        "  --trips N         ping-pong round trips per run, at most (default 20k)\n"
        "  --trip-ms MS      ...or until this many milliseconds have passed (default 100)\n"
        "  --run-ms MS       how long the producer of a throughput run sends (default 150)\n"
        "  --capacity N      capacity of every queue that has one (default 1024)\n"
        "  --seed S          shuffle seed (default: from the clock; always printed)\n"
        "  --timeout S       a run longer than this is reported as a hang (default 60)\n"
        "  --csv FILE        one row per workload, contender and round\n"
        "  --quick           short runs, one round: a smoke test of every contender\n"
        "  --list            list the contenders, run nothing\n", SLB_MAX_ELEM);
}

static bool parse_sizes(const char *s, ipc_opts *o)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", s);
    o->n_sizes = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        uint64_t v;
        if (!slb_parse_u64(t, &v) || v == 0 || v % 8 || v > SLB_MAX_ELEM ||
            o->n_sizes == SLB_MAX_SIZES)
            return false;
        o->sizes[o->n_sizes++] = (size_t)v;
    }
    return o->n_sizes > 0;
}

enum { I_SIZE = 256, I_TESTS, I_ROUNDS, I_TRIPS, I_TRIPMS, I_RUNMS, I_CAP, I_SEED,
       I_TIMEOUT, I_CSV, I_QUICK, I_LIST, I_HELP };

static const struct option ipc_long[] = {
    { "size", 1, 0, I_SIZE }, { "tests", 1, 0, I_TESTS }, { "rounds", 1, 0, I_ROUNDS },
    { "trips", 1, 0, I_TRIPS }, { "trip-ms", 1, 0, I_TRIPMS }, { "run-ms", 1, 0, I_RUNMS },
    { "capacity", 1, 0, I_CAP }, { "seed", 1, 0, I_SEED }, { "timeout", 1, 0, I_TIMEOUT },
    { "csv", 1, 0, I_CSV }, { "quick", 0, 0, I_QUICK }, { "list", 0, 0, I_LIST },
    { "help", 0, 0, I_HELP }, { 0, 0, 0, 0 },
};

static bool parse_value(int c, const char *arg, ipc_opts *o)
{
    static const char *const tests[] = { "pingpong", "tput" };
    uint64_t v = 0;
    if (c == I_SIZE)
        return parse_sizes(arg, o);
    if (c == I_TESTS)
        return slb_parse_names(arg, tests, IPC_TESTS, &o->tests);
    if (c == I_CSV) {
        o->csv = arg;
        return true;
    }
    if (!slb_parse_u64(arg, &v) || v == 0)
        return false;
    switch (c) {
    case I_ROUNDS: o->rounds = (unsigned)(v < 1000 ? v : 1000); break;
    case I_TRIPS: o->trips = v; break;
    case I_TRIPMS: o->trip_cap_ns = v * 1000000; break;
    case I_RUNMS: o->run_ns = v * 1000000; break;
    case I_CAP: o->capacity = (size_t)v; break;
    case I_SEED: o->seed = v; break;
    case I_TIMEOUT: o->timeout_s = (unsigned)v; break;
    default: return false;
    }
    return true;
}

/* --quick shortens what was not given explicitly (bit per option). */
static void apply_quick(ipc_opts *o, unsigned given)
{
    if (!(given & (1u << (I_ROUNDS - 256))))
        o->rounds = 1;
    if (!(given & (1u << (I_TRIPS - 256))))
        o->trips = 2000;
    if (!(given & (1u << (I_TRIPMS - 256))))
        o->trip_cap_ns = 20000000;
    if (!(given & (1u << (I_RUNMS - 256))))
        o->run_ns = 20000000;
}

static int parse(int argc, char **argv, ipc_opts *o)
{
    *o = (ipc_opts){ .n_sizes = 2, .sizes = { 8, 64 }, .tests = 3, .rounds = 5,
                     .trips = 20000, .trip_cap_ns = 100000000, .run_ns = 150000000,
                     .capacity = 1024, .timeout_s = 60,
                     .seed = slb_now_ns() ^ ((uint64_t)getpid() << 32) };
    unsigned given = 0;
    bool quick = false;
    int c;
    while ((c = getopt_long(argc, argv, "h", ipc_long, NULL)) != -1) {
        if (c == 'h' || c == I_HELP) {
            usage(stdout);
            exit(0);
        }
        if (c == I_QUICK || c == I_LIST) {
            quick |= c == I_QUICK;
            o->list_only |= c == I_LIST;
            continue;
        }
        if (c == '?' || !parse_value(c, optarg, o)) {
            if (c != '?')
                fprintf(stderr, "sl-bench ipc: bad value '%s'\n", optarg);
            usage(stderr);
            return 2;
        }
        given |= 1u << (c - 256);
    }
    if (optind < argc) {
        fprintf(stderr, "sl-bench ipc: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (quick)
        apply_quick(o, given);
    return 0;
}

/* ---- the command ---------------------------------------------------------- */

static long sysctl_long(const char *path)
{
    long v = -1;
    FILE *f = fopen(path, "r");
    if (f) {
        if (fscanf(f, "%ld", &v) != 1)
            v = -1;
        fclose(f);
    }
    return v;
}

static void print_preamble(const ipc_opts *o)
{
    printf("sl-bench ipc — sluice %s\n", SLB_VERSION);
    slb_print_machine(stdout);
    printf("method: each figure is the median of %u rounds; every round runs each "
           "contender once in shuffled order (seed %llu); blocking calls on both sides; "
           "timing side pinned to CPU 0, peer (process or thread) to CPU 1\n",
           o->rounds, (unsigned long long)o->seed);
    printf("pingpong: up to %llu round trips or %.0f ms per run; tput: the peer sends for "
           "%.0f ms, the timing side receives; capacity %zu (net.unix.max_dgram_qlen %ld, "
           "fs.mqueue.msg_max %ld)\n", (unsigned long long)o->trips,
           (double)o->trip_cap_ns / 1e6, (double)o->run_ns / 1e6, o->capacity,
           sysctl_long("/proc/sys/net/unix/max_dgram_qlen"),
           sysctl_long("/proc/sys/fs/mqueue/msg_max"));
    printf("every message is verified (sequence in exact order, payload, count, checksum; "
           "echoes bit for bit)\n\n");
}

int slb_ipc_main(int argc, char **argv)
{
    ipc_opts o;
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc;
    uint64_t t0 = slb_now_ns();
    ipc_contender list[MAX_CONTENDERS];
    size_t n = collect(list);
    if (!o.list_only)
        print_preamble(&o);
    print_contenders(list, n);
    if (o.list_only)
        return 0;
    ipc_shared *sh = slb_ipc_shared_new();
    pinning = slb_ncpu() >= 2;
    if (pinning)
        slb_pin_self(0);
    slb_watchdog_install();
    slb_workload ws[IPC_TESTS * SLB_MAX_SIZES];
    static ipc_tally tally[IPC_TESTS * SLB_MAX_SIZES][MAX_CONTENDERS];
    size_t nw = 0;
    uint64_t rng = o.seed;
    static const slb_test tests[IPC_TESTS] = { SLB_PINGPONG, SLB_TPUT };
    for (unsigned t = 0; t < IPC_TESTS; t++)
        for (size_t s = 0; s < o.n_sizes && (o.tests & (1u << t)); s++) {
            add_workload(&ws[nw], tests[t], o.sizes[s], &o, list, n);
            run_workload(&o, &ws[nw], list, sh, &rng, tally[nw]);
            slb_print_workload(stdout, &ws[nw], o.rounds);
            print_sleeps(&ws[nw], tally[nw]);
            nw++;
        }
    print_targets(ws, nw, list, n);
    bool ok = !o.csv || slb_write_csv(o.csv, ws, nw);
    if (o.csv && ok)
        printf("csv: %s (one row per workload, contender and round)\n", o.csv);
    printf("total time: %.1f s\n", (double)(slb_now_ns() - t0) / 1e9);
    for (size_t i = 0; i < nw; i++)
        slb_workload_free(&ws[i]);
    slb_ipc_shared_free(sh);
    return ok ? 0 : 1;
}
