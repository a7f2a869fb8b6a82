/*
 * exec_driver.h — the driver of `sl-bench exec` (exec_bench.c) and its
 * reports (exec_report.c): options, workloads and per-round figures.
 */
#ifndef SLB_EXEC_DRIVER_H
#define SLB_EXEC_DRIVER_H

#include <stdio.h>

#include "exec_bench.h"

#define SLB_X_MAX_FIBS 8
#define SLB_X_MAX_CONTENDERS 8

typedef struct slb_xopts {
    unsigned rounds, threads, timeout_s;
    uint64_t seed;
    unsigned fibs[SLB_X_MAX_FIBS];
    size_t n_fibs;
    unsigned nqueens;
    unsigned uts_depth;
    unsigned bpc_depth, bpc_consumers, bpc_us;
    unsigned works;          /* bit per slb_xwork */
    unsigned contenders;     /* bit per contender, in slb_x_all order */
    const char *csv;
    bool list_only;
} slb_xopts;

/* One contender in one workload, with its per-round figures. */
typedef struct slb_xentry {
    const slb_xcontender *c;
    const char *skip;        /* why it did not run, or NULL */
    double *wall, *cpu;      /* per round, ns */
    unsigned *order;         /* per round: position in the shuffled order */
    unsigned done;
    /* Filled by slb_x_summarize: medians (and wall min/max) over rounds. */
    double wall_med, wall_min, wall_max, cpu_med;
} slb_xentry;

typedef struct slb_xworkload {
    slb_xparams p;
    char label[48];          /* "fib(30)", "uts T1" — table and CSV key */
    char what[96];           /* a line saying what it is */
    uint64_t want_value, want_sum;
    uint64_t tasks;          /* spawns made by the workload's code */
    slb_xentry *e;
    size_t n;
} slb_xworkload;

/* exec_report.c */
void slb_x_summarize(slb_xworkload *w);
void slb_x_print_workload(FILE *f, const slb_xworkload *w, unsigned rounds, unsigned threads);
void slb_x_print_targets(FILE *f, const slb_xworkload *w, size_t n, unsigned threads);
bool slb_x_write_csv(const char *path, const slb_xworkload *w, size_t n, unsigned threads);

#endif /* SLB_EXEC_DRIVER_H */
