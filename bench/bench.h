/*
 * bench.h — sl-bench's driver: options, workloads, results, and the helpers
 * shared by its files. Contenders themselves are in contender.h.
 */
#ifndef SLB_BENCH_H
#define SLB_BENCH_H

#include <stdio.h>

#include "contender.h"

#define SLB_MAX_ELEM 256u   /* largest message size the driver builds */
#define SLB_BATCH 32u       /* messages per push_n / pop_n in the batch workloads */
#define SLB_MAX_CONFIGS 16
#define SLB_MAX_SIZES 8
#define SLB_MAX_THREADS 256 /* producers + consumers in one run */

typedef enum slb_test {
    SLB_TPUT,     /* throughput, P producers / C consumers, one message per call */
    SLB_BATCHED,  /* the same with batches of SLB_BATCH */
    SLB_PINGPONG, /* round trip between two threads over two queues */
    SLB_STREAM,   /* one-way latency of timestamped messages at a set rate */
    SLB_OVERWRITING, /* "overwrite": P producers flood a bounded overwrite ring,
                        C consumers take what is left; send rate and delivery */
    SLB_SELECT,   /* "select": P senders each select a send over two bounded
                     channels, C receivers each select a receive over both */
    SLB_RENDEZVOUS, /* ping-pong over two capacity-0 (rendezvous) channels */
    SLB_TESTS
} slb_test;

typedef struct slb_config {
    unsigned producers, consumers;
} slb_config;

typedef struct slb_opts {
    unsigned flavors;           /* bit f-1 for sl_flavor f: SPSC, MPMC, LIST, RING */
    const char *peers;          /* comma list of peer ids, "all" or "none" */
    slb_config configs[SLB_MAX_CONFIGS];
    size_t n_configs;
    size_t sizes[SLB_MAX_SIZES];
    size_t n_sizes;
    unsigned tests;             /* bit per slb_test */
    uint64_t msgs;              /* messages per throughput run, all producers;
                                   0 = sized per contender to last run_ns */
    uint64_t run_ns;            /* target length of an auto-sized run */
    uint64_t fixed_cap_ns;      /* a run of --msgs messages stops after this (0: never) */
    uint64_t ring_run_ns;       /* ...in the overwrite workload */
    unsigned rounds;
    uint64_t trips;             /* ping-pong round trips per run (at most) */
    uint64_t trip_cap_ns;       /* ...or until this much time has passed */
    uint64_t stream_msgs;
    uint64_t stream_gap_ns;     /* time between two stream messages */
    size_t capacity;
    uint64_t seed;
    bool pin;                   /* pin every configuration, not only 1x1 */
    unsigned work;              /* tput: pause hints a consumer spends on each message */
    unsigned timeout_s;         /* a run taking longer is a hang: abort */
    const char *csv, *plot;
    bool list_only;             /* --list: show the contenders, run nothing */
} slb_opts;

/* One contender in one workload, with its per-round figures. */
typedef struct slb_entry {
    const slb_ops *ops;
    const char *skip;           /* why there are no figures (n/a), or NULL */
    double *value;              /* per round: Mmsg/s, or p50 ns for latency */
    double *p99, *p999;         /* per round, latency workloads only */
    double *delivered;          /* per round, overwrite only: fraction received */
    unsigned *order;            /* per round: position in the shuffled order */
    double *round_trip;         /* per round: slb_result's round_trip */
    uint64_t *moved;            /* per round: messages moved (ping-pong: trips) */
    unsigned done;              /* rounds run */
    uint64_t msgs;              /* messages asked for per run (all rounds) */
    /* Filled by slb_summarize: */
    double med, min, max, p99_med, p999_med, delivered_med;
    double ratio;               /* vs the best peer of its kind, >1 = better; 0 = no peer */
    const struct slb_entry *best; /* that peer */
} slb_entry;

typedef struct slb_workload {
    slb_test test;
    unsigned producers, consumers;
    size_t elem;
    bool pinned;
    char label[40];             /* "tput 2x2 64B" — CSV and summary key */
    slb_entry *entries;
    size_t n;
} slb_workload;

/* One run's input. */
typedef struct slb_run {
    const slb_ops *ops;
    slb_test test;
    unsigned producers, consumers;
    size_t elem, capacity;
    uint64_t msgs;              /* tput/batch: total; stream: count */
    uint64_t trips, trip_cap_ns, gap_ns;
    uint64_t cap_ns;            /* tput/batch: producers stop after this; 0 = never */
    bool pin;
    unsigned work;              /* tput: pause hints a consumer spends on each message */
    unsigned timeout_s;         /* the watchdog: a longer run is a hang */
    const char *label;
} slb_run;

typedef struct slb_result {
    double value;               /* Mmsg/s (tput, batch; overwrite: sent) or p50 ns */
    double p99, p999;
    double delivered;           /* overwrite: received / sent, the rest displaced */
    uint64_t msgs;              /* messages moved (ping-pong: trips made; overwrite: sent) */
    /* The higher of the core-to-core round trips measured just before and
     * just after the run, ns (0: not measured). A run whose round trip is
     * several times the others' ran while the host had the vCPUs apart
     * (on this VM ~50 ns becomes ~330 ns), and every figure that crosses
     * cores moved with it, the bounded queues' most. */
    double round_trip;
} slb_result;

/* The runs: false when the contender cannot run this size (n/a). Any
 * verification failure exits the process with a message naming it. */
bool slb_run_tput(const slb_run *r, slb_result *out);     /* tput.c: tput, batch */
bool slb_run_pingpong(const slb_run *r, slb_result *out); /* latency.c */
bool slb_run_stream(const slb_run *r, slb_result *out);   /* latency.c */
bool slb_run_overwrite(const slb_run *r, slb_result *out); /* overwrite.c */
/* remote.c: a contender in its own process (ops->program) runs tput or
 * pingpong there; slb_remote_built says whether its program is in place. */
bool slb_run_remote(const slb_run *r, slb_result *out);
bool slb_remote_built(const char *program);

/* stats.c */
uint64_t slb_now_ns(void);
uint64_t slb_rand(uint64_t *state);
void slb_shuffle(unsigned *v, size_t n, uint64_t *state);
double slb_median(const double *v, size_t n);
double slb_min(const double *v, size_t n);
double slb_max(const double *v, size_t n);
void slb_sort_u64(uint64_t *v, size_t n);
uint64_t slb_percentile(const uint64_t *sorted, size_t n, double p);
unsigned slb_ncpu(void);
void slb_pin_self(int cpu);
void slb_cpu_model(char *buf, size_t len);

/* machine.c: the "machine:" line — CPU, CPUs available, load average, and
 * the core-to-core round trip measured now (figures compare only within one
 * run, or between runs whose round trips agree). */
void slb_print_machine(FILE *f);
/* The median time for one cache-line round trip between CPUs 0 and 1, in
 * ns, measured now (a few milliseconds); 0 when it cannot be (one CPU). */
double slb_round_trip_ns(void);
/* Runs fn(arg), which fills res, between two round-trip measurements and
 * sets res->round_trip; returns what fn returned. */
bool slb_run_measured(bool (*fn)(void *arg, slb_result *res), void *arg, slb_result *res);

/* report.c */
const char *slb_kind_name(slb_kind k);
const char *slb_test_name(slb_test t);
bool slb_is_latency(slb_test t);
void slb_summarize(slb_workload *w);
void slb_print_contenders(FILE *f, const slb_ops *const *list, size_t n);
void slb_print_workload(FILE *f, const slb_workload *w, unsigned rounds);
void slb_print_verdicts(FILE *f, const slb_workload *w, size_t n);
/* The median over rounds of a's figure over b's in the same round. Both ran
 * within a second or two of each other, so a drift of the machine from one
 * round to the next (on a VM, the host moving the vCPUs: the core-to-core
 * round trip moves several-fold) cancels out of each ratio; the ratio of the
 * two medians keeps it. 0 when no round has both. */
double slb_paired_ratio(const slb_entry *a, const slb_entry *b);
/* Decimals to print figure r with beside a verdict against `target`:
 * `digits`, or as many more (up to 4) as it takes for the printed figure
 * not to sit on the target's wrong side (0.498 is not printed "0.50" next
 * to "MISSED"). */
int slb_verdict_digits(double r, double target, int digits);
/* Whether e's figure in w is a cross-core hand-off like every other's: false
 * for a contender marked SLB_MAY_SHARE_THREAD in a one-to-one workload, which
 * is then shown but never the best peer and never judged. */
bool slb_cross_core(const slb_workload *w, const slb_entry *e);
/* The median of the round trips measured around the workload's runs, ns;
 * 0 where none was. */
double slb_workload_round_trip(const slb_workload *w);

/* chan_targets.c: the targets lines of `sl-bench chan`. */
void slb_print_chan_targets(FILE *f, const slb_workload *w, size_t n);
bool slb_write_csv(const char *path, const slb_workload *w, size_t n);
/* An entry's per-round arrays for `rounds` rounds (exits when out of memory);
 * one round's figures stored at e->done, at position `position` of its
 * shuffled order; everything a workload's entries hold freed. */
void slb_entry_init(slb_entry *e, const slb_ops *ops, unsigned rounds);
void slb_entry_record(slb_entry *e, const slb_result *res, unsigned position);
void slb_workload_free(slb_workload *w);

/* plot.c — prints a line and returns false when it cannot plot. */
bool slb_plot(const char *png, const slb_workload *w, size_t n);

/* chan_bench.c */
int slb_chan_main(const slb_opts *o);
/* Option values (cli.c): a decimal number with an optional k or M suffix;
 * a comma list of names into a bit mask (false on an unknown name). */
bool slb_parse_u64(const char *s, uint64_t *out);
bool slb_parse_names(const char *s, const char *const *names, size_t n, unsigned *out);
/* The watchdog (cli.c): a run that outlives its limit is a hang. Install once;
 * arm before a run with the message to print (printf-style), disarm after.
 * When it fires it writes the message and exits with status 3. */
void slb_watchdog_install(void);
void slb_watchdog_arm(unsigned seconds, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void slb_watchdog_disarm(void);
/* The path of the program `name` built next to sl-bench's own executable
 * (helpers and out-of-process peers); false when it does not fit in buf. */
bool slb_sibling_path(const char *name, char *buf, size_t len);

/* `sl-bench pool` and `sl-bench exec`: argv[0] is the subcommand's name. */
int slb_pool_main(int argc, char **argv);
int slb_exec_main(int argc, char **argv);
/* `sl-bench ipc` (ipc.c): channels between two processes. */
int slb_ipc_main(int argc, char **argv);

#endif /* SLB_BENCH_H */
