/*
 * sl_bench.c — sl-bench's entry point: the subcommand, the options, and the
 * one way the benchmark fails (slb_die).
 *
 * Defaults are chosen so that `make bench` (this command with --csv and
 * --plot) finishes in a few minutes on a two-core machine while each run
 * lasts long enough (~0.15 s; throughput runs are sized per contender, see
 * chan_bench.c) that thread start-up is noise. --quick shrinks everything
 * for smoke tests; any option given explicitly wins over --quick.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "bench.h"


void slb_die(const char *who, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    /* Other threads may still be running: no exit handlers, just stop. */
    fflush(stdout);
    fprintf(stderr, "\nsl-bench: FAILED — contender '%s': %s\n", who, msg);
    _exit(2);
}

/* The overwrite workload's runs are shorter than the queues' (150 ms): its
 * producers never wait, so a run's rate settles quickly, and the time saved
 * keeps `make bench` within its budget. */
#define RING_MS 100u

static void usage(FILE *f)
{
    fprintf(f,
        "usage: sl-bench chan [options]\n"
        "  Compares sluice's channel flavours with the installed peer queues.\n"
        "  --flavor F,...    sluice flavours: spsc, mpmc, list, ring (default: all)\n"
        "  --peers P,...     peers: ck, boost, moodycamel, atomic_queue, tbb, urcu,\n"
        "                    glib, xenium, crossbeam, flume, go, mutex; all (default)\n"
        "                    or none\n"
        "  --config PxC,...  producer x consumer configurations (default 1x1,2x2,4x4)\n"
        "  --size B,...      message sizes in bytes, multiples of 8 up to %u (default 8,64)\n"
        "  --tests T,...     tput, batch, pingpong, stream, overwrite, select,\n"
        "                    rendezvous (default: all)\n"
        "  --msgs N          messages per throughput run, k/M suffixes (default: sized\n"
        "                    per contender by a probe run to last --run-ms)\n"
        "  --run-ms MS       target length of a sized throughput run (default 150)\n"
        "  --ring-ms MS      ...of a sized overwrite run (default %u)\n"
        "  --rounds R        rounds per workload; figures are medians (default 5)\n"
        "  --trips N         ping-pong round trips per run, at most (default 100k)\n"
        "  --trip-ms MS      ...or until this many milliseconds have passed (default 100)\n"
        "  --stream N        stream messages per run (default 20k)\n"
        "  --gap NS          nanoseconds between stream messages (default 5000)\n"
        "  --capacity N      capacity of every bounded queue (default 1024)\n"
        "  --seed S          shuffle seed (default: from the clock; always printed)\n"
        "  --pin             pin every configuration (1x1 and latency are always pinned)\n"
        "  --work N          tput: every consumer spends N pause hints on each message\n"
        "                    it receives (default 0: an empty consumer)\n"
        "  --timeout S       a run longer than this is reported as a hang (default 120)\n"
        "  --csv FILE        one row per workload, contender and round\n"
        "  --plot FILE.png   throughput by configuration (needs gnuplot)\n"
        "  --quick           tiny runs, one round: a smoke test of every contender\n"
        "  --list            list the contenders and missing peers, run nothing\n"
        "The pool's, the executor's and the between-processes comparisons:\n"
        "  sl-bench pool|exec|ipc [options]; each takes --help\n",
        SLB_MAX_ELEM, RING_MS);
}

static bool parse_configs(const char *s, slb_opts *o)
{
    o->n_configs = 0;
    for (const char *p = s; *p;) {
        unsigned pr, co;
        int used = 0;
        if (o->n_configs == SLB_MAX_CONFIGS || sscanf(p, "%ux%u%n", &pr, &co, &used) != 2 ||
            pr == 0 || co == 0 || pr + co > SLB_MAX_THREADS)
            return false;
        o->configs[o->n_configs++] = (slb_config){ pr, co };
        p += used;
        if (*p == ',')
            p++;
        else if (*p)
            return false;
    }
    return o->n_configs > 0;
}

static bool parse_sizes(const char *s, slb_opts *o)
{
    o->n_sizes = 0;
    for (const char *p = s; *p;) {
        char *end;
        unsigned long v = strtoul(p, &end, 10);
        if (end == p || v == 0 || v % 8 || v > SLB_MAX_ELEM || o->n_sizes == SLB_MAX_SIZES)
            return false;
        o->sizes[o->n_sizes++] = v;
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            return false;
    }
    return o->n_sizes > 0;
}

enum { O_FLAVOR = 256, O_PEERS, O_CONFIG, O_SIZE, O_TESTS, O_MSGS, O_ROUNDS, O_TRIPS,
       O_TRIPMS, O_STREAM, O_GAP, O_CAP, O_SEED, O_PIN, O_TIMEOUT, O_CSV, O_PLOT,
       O_QUICK, O_LIST, O_HELP, O_RUNMS, O_RINGMS, O_WORK };

static const struct option long_opts[] = {
    { "flavor", 1, 0, O_FLAVOR }, { "peers", 1, 0, O_PEERS }, { "config", 1, 0, O_CONFIG },
    { "size", 1, 0, O_SIZE }, { "tests", 1, 0, O_TESTS }, { "msgs", 1, 0, O_MSGS },
    { "rounds", 1, 0, O_ROUNDS }, { "trips", 1, 0, O_TRIPS }, { "trip-ms", 1, 0, O_TRIPMS },
    { "stream", 1, 0, O_STREAM }, { "gap", 1, 0, O_GAP }, { "capacity", 1, 0, O_CAP },
    { "seed", 1, 0, O_SEED }, { "pin", 0, 0, O_PIN }, { "timeout", 1, 0, O_TIMEOUT },
    { "csv", 1, 0, O_CSV }, { "plot", 1, 0, O_PLOT }, { "quick", 0, 0, O_QUICK },
    { "list", 0, 0, O_LIST }, { "help", 0, 0, O_HELP }, { "run-ms", 1, 0, O_RUNMS },
    { "ring-ms", 1, 0, O_RINGMS }, { "work", 1, 0, O_WORK },
    { 0, 0, 0, 0 },
};

static const char *opt_name(int c)
{
    for (const struct option *p = long_opts; p->name; p++)
        if (p->val == c)
            return p->name;
    return "?";
}

static void set_defaults(slb_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->flavors = 15;
    o->peers = "all";
    parse_configs("1x1,2x2,4x4", o);
    parse_sizes("8,64", o);
    o->tests = (1u << SLB_TESTS) - 1;
    o->msgs = 0;
    o->run_ns = 150000000;
    o->ring_run_ns = RING_MS * UINT64_C(1000000);
    o->rounds = 5;
    o->trips = 100000;
    o->trip_cap_ns = 100000000;
    o->stream_msgs = 20000;
    o->stream_gap_ns = 5000;
    o->capacity = 1024;
    o->seed = slb_now_ns() ^ ((uint64_t)getpid() << 32);
    o->timeout_s = 120;
}

/* --quick applies to what was not given explicitly (bit per option). */
static void apply_quick(slb_opts *o, uint64_t given)
{
    if (!(given & (1u << (O_MSGS - 256))))
        o->msgs = 20000;
    if (!(given & (1u << (O_ROUNDS - 256))))
        o->rounds = 1;
    if (!(given & (1u << (O_TRIPS - 256))))
        o->trips = 2000;
    if (!(given & (1u << (O_TRIPMS - 256))))
        o->trip_cap_ns = 20000000;
    if (!(given & (1u << (O_STREAM - 256))))
        o->stream_msgs = 2000;
    if (!(given & (1u << (O_GAP - 256))))
        o->stream_gap_ns = 2000;
    /* A smoke run checks messages, not speed. A peer whose producers wait
     * for one another (ck_ring's MPMC publishes in reservation order) loses
     * a time slice to every preempted producer when threads outnumber
     * cores: 20 000 messages once took 42 s at 4x4. Stopping after a second
     * still verifies every message that moved. */
    o->fixed_cap_ns = 1000000000;
}

static bool parse_value(int c, const char *arg, slb_opts *o)
{
    /* In sl_flavor order (bit f-1 for flavour f) and slb_test order. */
    static const char *const flavors[] = { "spsc", "mpmc", "list", "ring" };
    static const char *const tests[] = { "tput", "batch", "pingpong", "stream", "overwrite",
                                         "select", "rendezvous" };
    uint64_t v = 0;
    switch (c) {
    case O_FLAVOR: return slb_parse_names(arg, flavors, 4, &o->flavors);
    case O_PEERS: o->peers = arg; return true;
    case O_CONFIG: return parse_configs(arg, o);
    case O_SIZE: return parse_sizes(arg, o);
    case O_TESTS: return slb_parse_names(arg, tests, SLB_TESTS, &o->tests);
    case O_CSV: o->csv = arg; return true;
    case O_WORK: /* 0 is allowed: the default, an empty consumer */
        if (!slb_parse_u64(arg, &v) || v > 100000)
            return false;
        o->work = (unsigned)v;
        return true;
    case O_PLOT: o->plot = arg; return true;
    default: break;
    }
    if (!slb_parse_u64(arg, &v) || v == 0)
        return false;
    switch (c) {
    case O_MSGS: o->msgs = v; break;
    case O_ROUNDS: o->rounds = (unsigned)(v < 1000 ? v : 1000); break;
    case O_TRIPS: o->trips = v; break;
    case O_TRIPMS: o->trip_cap_ns = v * 1000000; break;
    case O_RUNMS: o->run_ns = v * 1000000; break;
    case O_RINGMS: o->ring_run_ns = v * 1000000; break;
    case O_STREAM: o->stream_msgs = v; break;
    case O_GAP: o->stream_gap_ns = v; break;
    case O_CAP: o->capacity = (size_t)v; break;
    case O_SEED: o->seed = v; break;
    case O_TIMEOUT: o->timeout_s = (unsigned)v; break;
    default: return false;
    }
    return true;
}

static int parse_chan(int argc, char **argv, slb_opts *o, bool *list)
{
    uint64_t given = 0;
    bool quick = false;
    int c;
    set_defaults(o);
    while ((c = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
        if (c == 'h' || c == O_HELP) {
            usage(stdout);
            exit(0);
        }
        if (c == O_PIN || c == O_QUICK || c == O_LIST) {
            o->pin |= c == O_PIN;
            quick |= c == O_QUICK;
            *list |= c == O_LIST;
            continue;
        }
        if (c == '?' || !parse_value(c, optarg, o)) {
            if (c != '?')
                fprintf(stderr, "sl-bench: bad value for --%s: '%s'\n", opt_name(c), optarg);
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

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    /* The pool and executor benchmarks parse their own options. */
    if (strcmp(argv[1], "pool") == 0)
        return slb_pool_main(argc - 1, argv + 1);
    if (strcmp(argv[1], "exec") == 0)
        return slb_exec_main(argc - 1, argv + 1);
    if (strcmp(argv[1], "ipc") == 0)
        return slb_ipc_main(argc - 1, argv + 1);
    if (strcmp(argv[1], "chan") != 0) {
        fprintf(stderr, "sl-bench: '%s' is not a benchmark this version has "
                        "(available: chan, pool, exec, ipc)\n", argv[1]);
        return 2;
    }
    slb_opts o;
    bool list = false;
    int rc = parse_chan(argc - 1, argv + 1, &o, &list);
    if (rc)
        return rc;
    o.list_only = list;
    return slb_chan_main(&o);
}
