/*
 * pool_bench.h — `sl-bench pool`: options, workloads, per-round figures, and
 * what its files share. The pools themselves are behind pool_peers.h.
 */
#ifndef SLB_POOL_BENCH_H
#define SLB_POOL_BENCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "pool_peers.h"

#define SLP_MAX_SUBMITTERS 64u
#define SLP_MAX_CONFIGS 8u
#define SLP_MAX_CONTENDERS 16u

/* In the order they run: idle first, because it forks a child per run and
 * the process is then still single-threaded (see pool_work.c). */
typedef enum slp_test {
    SLP_IDLE,   /* CPU used by an idle pool's threads, getrusage */
    SLP_TPUT,   /* empty jobs from S submitters: Mjobs/s */
    SLP_UNEVEN, /* mostly short jobs, every k-th long, at a steady load: wait */
    SLP_WAKE,   /* submit -> job start after the workers have gone to sleep */
    SLP_TESTS
} slp_test;

typedef struct slp_opts {
    unsigned workers;               /* per pool; default online CPUs */
    unsigned submitters[SLP_MAX_CONFIGS]; /* tput: one workload per count */
    unsigned n_submitters;
    unsigned tests;                 /* bit per slp_test */
    unsigned rounds;
    uint64_t run_ns;                /* target length of a sized throughput run */
    uint64_t jobs;                  /* fixed jobs per throughput run; 0 = sized */
    unsigned samples;               /* wake-ups per wake run */
    uint64_t gap_min_ns, gap_max_ns; /* sleep before each wake-up, drawn uniformly */
    uint64_t settle_ns, idle_ns;    /* idle: settle, then the measured window */
    unsigned uneven_every;          /* uneven: every k-th job is long */
    unsigned uneven_jobs;           /* uneven: jobs per run */
    double load;                    /* uneven: offered load, of the workers' capacity */
    uint64_t short_ns, long_ns;     /* uneven: the two job lengths (busy loops) */
    uint64_t seed;
    unsigned timeout_s;             /* a run longer than this is a hang */
    const char *peers;              /* comma list of peer ids, "all", "none" */
    unsigned dispatch;              /* bit per sluice contender (shared, rr, ll) */
    const char *csv;
    bool list_only;
} slp_opts;

/* One run's figures. */
typedef struct slp_result {
    double value;    /* tput: Mjobs/s; wake, uneven: p50 us; idle: CPU us */
    double p99;      /* wake, uneven: p99 us */
    double extra;    /* wake, uneven: max us; idle: context switches;
                        tput: context switches per 1000 jobs */
    double extra2;   /* idle: the pool's threads; tput: CPU ns per job;
                        uneven: Mjobs/s achieved */
    uint64_t jobs;   /* jobs run (wake: samples) */
} slp_result;

/* One contender in one workload. */
typedef struct slp_entry {
    const slp_ops *ops;   /* NULL for a peer that is not built */
    const char *name;
    const char *skip;     /* why there are no figures, or NULL */
    slp_result *res;      /* per round */
    unsigned *order;      /* per round: position in the shuffled order */
    unsigned done;
    uint64_t jobs;        /* jobs per throughput run (sized) */
    /* Filled by slp_summarize: medians over rounds, min and max of value. */
    double med, min, max, p99_med, extra_med, extra2_med;
    double ratio, ratio99; /* vs the best peer, > 1 better; 0: no peer */
    const struct slp_entry *best;
} slp_entry;

typedef struct slp_workload {
    slp_test test;
    unsigned submitters;
    char label[32];       /* "tput 4x", "wake" — CSV and summary key */
    slp_entry *entries;
    unsigned n;
} slp_workload;

/* pool_work.c — every run verifies what it can and dies on a mismatch. */
void slp_calibrate(void);                 /* the busy loop of the uneven jobs */
double slp_spin_iters_per_us(void);
void slp_run_tput(const slp_ops *c, const slp_opts *o, unsigned submitters, uint64_t jobs,
                  slp_result *out);
uint64_t slp_size_tput(const slp_ops *c, const slp_opts *o, unsigned submitters);
void slp_run_uneven(const slp_ops *c, const slp_opts *o, slp_result *out);
void slp_run_wake(const slp_ops *c, const slp_opts *o, uint64_t *rng, slp_result *out);
void slp_run_idle(const slp_ops *c, const slp_opts *o, slp_result *out);

/* pool_report.c */
bool slp_lower_is_better(slp_test t);
void slp_summarize(slp_workload *w);
void slp_print_workload(FILE *f, const slp_workload *w, const slp_opts *o);
void slp_print_targets(FILE *f, const slp_workload *w, unsigned n);
void slp_print_dispatch(FILE *f, const slp_workload *w, unsigned n);
bool slp_write_csv(const char *path, const slp_workload *w, unsigned n, const slp_opts *o);

#endif /* SLB_POOL_BENCH_H */
