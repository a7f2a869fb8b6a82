/*
 * chan_bench.c — `sl-bench chan`: which contenders run which workloads, in
 * what order, and what gets printed.
 *
 * Method. A workload is (test, configuration, message size). Its figures are
 * medians over R rounds; in every round each contender of the workload runs
 * once, in an order shuffled afresh (Fisher–Yates, seed printed), so that
 * slow drifts of the machine (frequency, a neighbour's load) spread over all
 * contenders instead of favouring whoever runs first. A workload's table is
 * printed as soon as its rounds are done.
 *
 * A run that does not finish within --timeout seconds is a hang (a lost
 * message leaves a consumer waiting forever); the watchdog then names the
 * contender and exits rather than letting `make bench` sit.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "peers/peers.h"

#ifndef SLB_VERSION
#define SLB_VERSION "?"
#endif

/* ---- what is installed -------------------------------------------------- */

typedef struct peer_set {
    const char *id;      /* for --peers */
    const char *what;
    const char *package; /* Debian package to install when missing */
    slb_peer_fn get;     /* NULL: not built (not installed at configure time) */
    const char *program; /* its own process (remote.c): the program; else NULL */
} peer_set;

#define RUST_DEBS "librust-crossbeam-channel-dev librust-flume-dev rustc cargo"
#define XENIUM_DEB "libxenium-dev with nikolaev_bounded_queue.hpp (newer than 0.0.2), " \
                   "or cmake -DSLB_XENIUM_INCLUDE=<a xenium checkout>"

#if SLB_HAVE_CK
#define CK_FN slb_peers_ck
#else
#define CK_FN NULL
#endif
#if SLB_HAVE_BOOST
#define BOOST_FN slb_peers_boost
#else
#define BOOST_FN NULL
#endif
#if SLB_HAVE_RWQ
#define RWQ_FN slb_peers_moodycamel_rwq
#else
#define RWQ_FN NULL
#endif
#if SLB_HAVE_CQ
#define CQ_FN slb_peers_moodycamel_cq
#else
#define CQ_FN NULL
#endif
#if SLB_HAVE_AQ
#define AQ_FN slb_peers_atomic_queue
#else
#define AQ_FN NULL
#endif
#if SLB_HAVE_TBB
#define TBB_FN slb_peers_tbb
#else
#define TBB_FN NULL
#endif
#if SLB_HAVE_URCU
#define URCU_FN slb_peers_urcu
#else
#define URCU_FN NULL
#endif
#if SLB_HAVE_GLIB
#define GLIB_FN slb_peers_glib
#else
#define GLIB_FN NULL
#endif
#if SLB_HAVE_XENIUM
#define XENIUM_FN slb_peers_xenium
#else
#define XENIUM_FN NULL
#endif
#if SLB_HAVE_RUST
#define CROSSBEAM_FN slb_peers_crossbeam
#define FLUME_FN slb_peers_flume
#else
#define CROSSBEAM_FN NULL
#define FLUME_FN NULL
#endif
#if SLB_HAVE_GO
#define GO_FN slb_peers_go
#else
#define GO_FN NULL
#endif

static const peer_set peer_sets[] = {
    { "sluice", "sluice", NULL, slb_peers_sluice, NULL },
    { "sluice", "sluice select", NULL, slb_peers_sluice_select, NULL },
    { "ck", "Concurrency Kit ck_ring", "libck-dev", CK_FN, NULL },
    { "boost", "Boost.Lockfree", "libboost-dev", BOOST_FN, NULL },
    { "moodycamel", "moodycamel ReaderWriterQueue", "libreaderwriterqueue-dev", RWQ_FN, NULL },
    { "moodycamel", "moodycamel ConcurrentQueue", "libconcurrentqueue-dev", CQ_FN, NULL },
    { "atomic_queue", "atomic_queue", "libatomic-queue-dev", AQ_FN, NULL },
    { "tbb", "oneTBB concurrent_queue", "libtbb-dev", TBB_FN, NULL },
    { "urcu", "liburcu cds_wfcq", "liburcu-dev", URCU_FN, NULL },
    { "glib", "GLib GAsyncQueue", "libglib2.0-dev", GLIB_FN, NULL },
    { "xenium", "xenium nikolaev_bounded_queue", XENIUM_DEB, XENIUM_FN, NULL },
    { "crossbeam", "crossbeam-channel (Rust)", RUST_DEBS, CROSSBEAM_FN, "sl-peer-rust" },
    { "flume", "flume (Rust)", RUST_DEBS, FLUME_FN, "sl-peer-rust" },
    { "go", "Go channels", "golang-go", GO_FN, "sl-peer-go" },
    { "mutex", "mutex/condvar queue (baseline)", NULL, slb_peers_mutex, NULL },
};
#define N_SETS (sizeof(peer_sets) / sizeof(peer_sets[0]))

static bool in_list(const char *list, const char *id)
{
    if (!list || strcmp(list, "all") == 0)
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

static bool wanted(const slb_opts *o, const slb_ops *c)
{
    if (c->flags & SLB_OURS)
        return c->flavor >= 1 && (o->flavors & (1u << (c->flavor - 1))) != 0;
    return in_list(o->peers, c->peer);
}

/* Collects the selected contenders; tells about peers that are missing. */
static size_t collect(const slb_opts *o, const slb_ops **out, size_t max, FILE *f)
{
    size_t n = 0;
    for (size_t i = 0; i < N_SETS; i++) {
        const peer_set *s = &peer_sets[i];
        if (!s->get) {
            if (in_list(o->peers, s->id))
                fprintf(f, "peer %s: not installed when sl-bench was configured; skipped "
                           "(Debian: %s, then reconfigure)\n", s->what, s->package);
            continue;
        }
        if (s->program && !slb_remote_built(s->program)) {
            if (in_list(o->peers, s->id))
                fprintf(f, "peer %s: its program %s is not next to sl-bench (its build "
                           "failed: see the build's output); skipped\n", s->what, s->program);
            continue;
        }
        for (const slb_ops *const *c = s->get(); *c && n < max; c++)
            if (wanted(o, *c))
                out[n++] = *c;
    }
    return n;
}

/* ---- workloads ---------------------------------------------------------- */

/* The two workloads of one shape each: select runs only the select kind,
 * rendezvous only blocking contenders that take capacity 0. */
static bool eligible_special(const slb_ops *c, slb_test t)
{
    if (t == SLB_SELECT)
        return c->kind == SLB_SELECTING;
    return c->kind == SLB_BLOCKING && (c->flags & SLB_RENDEZVOUS_OK);
}

static bool eligible(const slb_ops *c, slb_test t, unsigned producers, unsigned consumers)
{
    if (t == SLB_SELECT || t == SLB_RENDEZVOUS || c->kind == SLB_SELECTING)
        return (t == SLB_SELECT || t == SLB_RENDEZVOUS) && eligible_special(c, t);
    /* An overwrite ring loses messages by design: it runs its own workload
     * only, and that workload has no place for a queue that refuses pushes. */
    if ((c->kind == SLB_OVERWRITE) != (t == SLB_OVERWRITING))
        return false;
    if (t == SLB_OVERWRITING)
        return c->push_evict != NULL;
    bool single = (c->flags & SLB_SINGLE) || c->kind == SLB_SPSC;
    if (single && (producers != 1 || consumers != 1))
        return false;
    if (c->program) /* its own process runs these two (remote.c) */
        return t == SLB_TPUT || t == SLB_PINGPONG;
    if (c->kind == SLB_BLOCKING && (!c->push || !c->pop))
        return false;
    if (t == SLB_BATCHED)
        return c->kind != SLB_BLOCKING && c->push_n && c->pop_n;
    return true;
}

static bool add_workload(slb_workload *w, slb_test t, slb_config cfg, size_t elem,
                         const slb_opts *o, const slb_ops **list, size_t n)
{
    memset(w, 0, sizeof(*w));
    w->test = t;
    w->producers = cfg.producers;
    w->consumers = cfg.consumers;
    w->elem = elem;
    bool one = cfg.producers == 1 && cfg.consumers == 1;
    w->pinned = slb_ncpu() >= 2 && (one || o->pin);
    if (slb_is_latency(t))
        snprintf(w->label, sizeof(w->label), "%s %zuB", slb_test_name(t), elem);
    else
        snprintf(w->label, sizeof(w->label), "%s %ux%u %zuB%s", slb_test_name(t),
                 cfg.producers, cfg.consumers, elem, t == SLB_TPUT && o->work ? " work" : "");
    w->entries = calloc(n, sizeof(slb_entry));
    for (size_t i = 0; w->entries && i < n; i++) {
        if (!eligible(list[i], t, cfg.producers, cfg.consumers))
            continue;
        slb_entry_init(&w->entries[w->n++], list[i], o->rounds);
    }
    return w->n > 0;
}

static size_t build_workloads(const slb_opts *o, const slb_ops **list, size_t n,
                              slb_workload *ws, size_t max)
{
    size_t count = 0;
    for (unsigned t = 0; t < SLB_TESTS; t++) {
        if (!(o->tests & (1u << t)))
            continue;
        for (size_t s = 0; s < o->n_sizes; s++) {
            size_t nc = slb_is_latency((slb_test)t) ? 1 : o->n_configs;
            for (size_t c = 0; c < nc && count < max; c++) {
                /* Latency is always one thread on each side. */
                slb_config cfg = slb_is_latency((slb_test)t) ? (slb_config){ 1, 1 }
                                                              : o->configs[c];
                if (add_workload(&ws[count], (slb_test)t, cfg, o->sizes[s], o, list, n))
                    count++;
                else
                    free(ws[count].entries);
            }
        }
    }
    return count;
}

/* ---- one run, under the watchdog ---------------------------------------- */

static bool run_one(const slb_run *r, slb_result *res)
{
    slb_watchdog_arm(r->timeout_s,
                     "\nsl-bench: FAILED — contender '%s' did not finish %s within %u s: "
                     "a lost message or a deadlock\n", r->ops->name, r->label, r->timeout_s);
    bool ok;
    if (r->ops->program)
        ok = slb_run_remote(r, res);
    else if (r->test == SLB_PINGPONG || r->test == SLB_RENDEZVOUS)
        ok = slb_run_pingpong(r, res);
    else if (r->test == SLB_STREAM)
        ok = slb_run_stream(r, res);
    else if (r->test == SLB_OVERWRITING)
        ok = slb_run_overwrite(r, res);
    else
        ok = slb_run_tput(r, res);
    slb_watchdog_disarm();
    return ok;
}

static bool run_measured(void *run, slb_result *res) { return run_one(run, res); }

/* How long a sized throughput run of this test should last. */
static uint64_t run_ns(const slb_opts *o, slb_test t)
{
    return t == SLB_OVERWRITING ? o->ring_run_ns : o->run_ns;
}

static slb_run make_run(const slb_opts *o, const slb_workload *w, const slb_entry *e)
{
    const slb_ops *c = e->ops;
    slb_run r = {
        .ops = c, .test = w->test, .producers = w->producers, .consumers = w->consumers,
        .elem = w->elem, .capacity = o->capacity, .msgs = e->msgs, .trips = o->trips,
        .trip_cap_ns = o->trip_cap_ns, .gap_ns = o->stream_gap_ns, .pin = w->pinned,
        .timeout_s = o->timeout_s, .label = w->label,
        .work = w->test == SLB_TPUT ? o->work : 0,
    };
    if (w->test == SLB_STREAM)
        r.msgs = o->stream_msgs;
    if (w->test == SLB_RENDEZVOUS)
        r.capacity = 0;
    /* Sized runs stop after 4x their target: a collapse shows as a low rate
     * instead of a run that takes minutes. */
    if (!o->msgs)
        r.cap_ns = 4 * run_ns(o, w->test);
    else
        r.cap_ns = o->fixed_cap_ns;
    return r;
}

/* ---- rounds ------------------------------------------------------------- */

typedef struct progress {
    bool tty;
    size_t done, total;
    uint64_t t0;
} progress;

static void show(progress *p, const slb_workload *w, unsigned round, unsigned rounds,
                 const char *name)
{
    if (!p->tty)
        return;
    char what[32] = "sizing";
    if (rounds)
        snprintf(what, sizeof(what), "round %u/%u", round + 1, rounds);
    fprintf(stderr, "\r\033[K[%3zu%% %4.0fs] %s · %s · %s", p->done * 100 / p->total,
            (double)(slb_now_ns() - p->t0) / 1e9, w->label, what, name);
    fflush(stderr);
}


/* Why a contender's run could not be made (its create returned NULL). */
static const char *skip_reason(const slb_workload *w)
{
    if (w->test == SLB_RENDEZVOUS)
        return "capacity 0 refused: this build has no rendezvous channels";
    return "this message size is not supported (or no memory)";
}

#define PROBE_MSGS 50000u
#define PROBE_MIN_NS 30000000u /* a probe shorter than this is not trusted */
#define MIN_MSGS 20000u
#define MAX_MSGS 50000000u

/*
 * Throughput contenders span three orders of magnitude, so one message count
 * cannot make every run last ~0.1-0.3 s: the fast ones would be timed over a
 * few milliseconds and the slow ones would take seconds each. Unless --msgs
 * fixes the count, each contender first makes probe runs (verified, not
 * recorded), growing fourfold until one lasts PROBE_MIN_NS, and then runs
 * every round with the count that should last o->run_ns at that probe's
 * rate. The count is in the CSV. One probe of 50 000 messages lasted 2-20
 * ms: thread start-up and a fresh queue's first allocations set its rate,
 * and a contender probed on a slow moment ran every round over a tenth of
 * the others' length, where those costs weigh ten times as much.
 */
static void size_runs(const slb_opts *o, slb_workload *w, progress *p)
{
    for (size_t i = 0; i < w->n; i++) {
        slb_entry *e = &w->entries[i];
        e->msgs = w->test == SLB_STREAM ? o->stream_msgs
                : slb_is_latency(w->test) && w->test != SLB_STREAM ? o->trips : o->msgs;
        if (slb_is_latency(w->test) || o->msgs)
            continue;
        show(p, w, 0, 0, e->ops->name);
        slb_result res;
        bool ran;
        for (e->msgs = PROBE_MSGS;; e->msgs *= 4) {
            slb_run run = make_run(o, w, e);
            uint64_t t0 = slb_now_ns();
            ran = run_one(&run, &res);
            if (!ran || slb_now_ns() - t0 >= PROBE_MIN_NS || e->msgs >= MAX_MSGS / 4)
                break;
        }
        if (!ran) {
            e->skip = skip_reason(w);
            continue;
        }
        double want = res.value * 1e6 * ((double)run_ns(o, w->test) / 1e9);
        want = want < MIN_MSGS ? MIN_MSGS : want > MAX_MSGS ? MAX_MSGS : want;
        /* Whole batches for every producer keep the split even. */
        uint64_t unit = (uint64_t)w->producers * SLB_BATCH;
        e->msgs = ((uint64_t)want + unit - 1) / unit * unit;
    }
}

static void run_workload(const slb_opts *o, slb_workload *w, uint64_t *rng, progress *p)
{
    unsigned *order = malloc(w->n * sizeof(unsigned));
    if (!order)
        slb_die("sl-bench", "out of memory");
    size_runs(o, w, p);
    for (unsigned r = 0; r < o->rounds; r++) {
        for (size_t i = 0; i < w->n; i++)
            order[i] = (unsigned)i;
        slb_shuffle(order, w->n, rng);
        for (size_t k = 0; k < w->n; k++) {
            slb_entry *e = &w->entries[order[k]];
            p->done++;
            if (e->skip)
                continue;
            show(p, w, r, o->rounds, e->ops->name);
            slb_run run = make_run(o, w, e);
            slb_result res = {0}; /* a throughput run leaves the latency fields */
            if (!slb_run_measured(run_measured, &run, &res)) {
                e->skip = skip_reason(w);
                continue;
            }
            slb_entry_record(e, &res, (unsigned)k);
        }
    }
    free(order);
    if (p->tty)
        fprintf(stderr, "\r\033[K");
    slb_summarize(w);
}

/* ---- the command -------------------------------------------------------- */

static void print_preamble(const slb_opts *o, FILE *f)
{
    fprintf(f, "sl-bench chan — sluice %s\n", SLB_VERSION);
    slb_print_machine(f);
    fprintf(f, "method: each figure is the median of %u rounds; every round runs the "
               "workload's contenders once in shuffled order (seed %llu)\n",
            o->rounds, (unsigned long long)o->seed);
    if (o->msgs)
        fprintf(f, "throughput: %llu messages per run", (unsigned long long)o->msgs);
    else
        fprintf(f, "throughput: messages per run sized for ~%.0f ms per contender by a "
                   "probe run (stopped at %.0f ms)", (double)o->run_ns / 1e6,
                4 * (double)o->run_ns / 1e6);
    fprintf(f, "; capacity %zu for bounded queues; 1x1 pinned to CPUs 0,1; %s\n",
            o->capacity,
            o->pin ? "all configurations pinned (--pin)" : "larger configurations unpinned");
    if (o->tests & (1u << SLB_OVERWRITING)) {
        fprintf(f, "overwrite: producers push into an overwrite ring of capacity %zu", o->capacity);
        if (!o->msgs)
            fprintf(f, ", runs sized for ~%.0f ms", (double)o->ring_run_ns / 1e6);
        fprintf(f, "; figures: messages sent per second, and the share the consumers "
                   "received (the rest was displaced)\n");
    }
    fprintf(f, "latency: ping-pong up to %llu trips or %.0f ms per run; stream of %llu "
               "messages, one per %llu ns; both pinned to CPUs 0,1\n",
            (unsigned long long)o->trips, (double)o->trip_cap_ns / 1e6,
            (unsigned long long)o->stream_msgs, (unsigned long long)o->stream_gap_ns);
    fprintf(f, "every message is verified (producer, sequence, payload, per-producer order, "
               "totals, checksum; overwrite: displaced ones too, and per producer "
               "received + displaced == sent)\n\n");
}

int slb_chan_main(const slb_opts *o)
{
    uint64_t t0 = slb_now_ns();
    const slb_ops *list[128];
    if (!o->list_only)
        print_preamble(o, stdout);
    size_t n = collect(o, list, 128, stdout);
    if (n == 0) {
        fprintf(stderr, "sl-bench: no contender selected\n");
        return 2;
    }
    slb_print_contenders(stdout, list, n);
    fflush(stdout);
    if (o->list_only)
        return 0;

    slb_workload ws[SLB_TESTS * SLB_MAX_SIZES * SLB_MAX_CONFIGS];
    size_t nw = build_workloads(o, list, n, ws, sizeof(ws) / sizeof(ws[0]));
    progress p = { .tty = isatty(STDERR_FILENO) != 0, .t0 = t0 };
    for (size_t i = 0; i < nw; i++)
        p.total += ws[i].n * o->rounds;
    slb_watchdog_install();
    uint64_t rng = o->seed;
    for (size_t i = 0; i < nw; i++) {
        run_workload(o, &ws[i], &rng, &p);
        slb_print_workload(stdout, &ws[i], o->rounds);
    }
    slb_print_verdicts(stdout, ws, nw);
    slb_print_chan_targets(stdout, ws, nw);
    bool ok = true;
    if (o->csv && (ok = slb_write_csv(o->csv, ws, nw)))
        printf("csv: %s (one row per workload, contender and round)\n", o->csv);
    if (o->plot)
        slb_plot(o->plot, ws, nw);
    printf("total time: %.1f s\n", (double)(slb_now_ns() - t0) / 1e9);
    for (size_t i = 0; i < nw; i++)
        slb_workload_free(&ws[i]);
    return ok ? 0 : 1;
}
