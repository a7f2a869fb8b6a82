/*
 * exec_bench.h — `sl-bench exec`: the workloads, their parameters and their
 * expected results, and the one interface every executor sits behind.
 *
 * The workloads are the Weave suite's: fib (a spawn at every level, no
 * cutoff), nqueens, UTS (an unbalanced tree search) and bouncing
 * producer-consumer (BPC). Each is written once per contender, in that
 * runtime's own idiom (sluice sl_spawn/sl_sync, oneTBB task_group, OpenMP
 * tasks), and once serially; all versions make the same tasks in the same
 * shape, so that the number of tasks spawned is the same for all of them.
 *
 * Plain C that also compiles as C++ (the oneTBB adapter) and with any
 * OpenMP compiler (the LLVM libomp helper is built by clang).
 */
#ifndef SLB_EXEC_BENCH_H
#define SLB_EXEC_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum slb_xwork {
    SLB_XFIB,     /* fib(n), spawning fib(n-1) at every level */
    SLB_XNQUEENS, /* all solutions of n queens, a task per legal placement */
    SLB_XUTS,     /* UTS geometric tree, a task per node */
    SLB_XBPC,     /* bouncing producer-consumer */
    SLB_XWORKS
} slb_xwork;

#define SLB_NQ_MAX 14u      /* nqueens boards are char[16] */
#define SLB_UTS_MAX_KIDS 100 /* UTS's cap on children per node (MAXNUMCHILDREN) */

/* One run's input: which workload, and its size. */
typedef struct slb_xparams {
    slb_xwork work;
    unsigned n;               /* fib: n; nqueens: board size */
    /* UTS (geometric, fixed branching factor): -b, -d, -r. */
    double uts_b0;
    unsigned uts_depth;
    unsigned uts_root;
    /* BPC: producers in the chain, consumers per producer, and the
     * iterations of busy work each consumer does. */
    unsigned bpc_depth, bpc_consumers;
    uint64_t bpc_iters;
} slb_xparams;

/* One run's output. wall_ns and cpu_ns are filled by the driver for
 * in-process contenders, by the contender itself for remote ones. */
typedef struct slb_xresult {
    uint64_t value;     /* fib(n), solutions, nodes, or BPC tasks run */
    uint64_t checksum;  /* BPC: sum of the consumers' work results; else 0 */
    uint64_t wall_ns, cpu_ns;
} slb_xresult;

enum {
    SLB_XOURS = 1u << 0,   /* sluice's executor */
    SLB_XSERIAL = 1u << 1, /* the serial baseline: no tasks at all */
    SLB_XREMOTE = 1u << 2, /* runs in a helper process and times itself */
};

/* One executor. start creates its runtime with `threads` threads (once per
 * process, not timed) and returns NULL, or why it cannot run (the row is
 * then shown as skipped). run executes one workload to completion and
 * fills out->value (and checksum); false means the runtime failed. */
typedef struct slb_xcontender {
    const char *name;   /* shown in the table and the CSV */
    const char *id;     /* for --contenders: sluice, tbb, gomp, libomp, serial */
    unsigned flags;
    const char *(*start)(unsigned threads);
    bool (*run)(const slb_xparams *p, slb_xresult *out);
    void (*stop)(void);
} slb_xcontender;

/* The contenders: exec_work.c, exec_sluice.c, exec_tbb.cpp, exec_bench.c
 * (libgomp, around exec_omp.c) and exec_child.c (LLVM libomp). */
extern const slb_xcontender slb_x_serial, slb_x_sluice, slb_x_tbb, slb_x_gomp,
    slb_x_llvm_omp;
/* CPU time the LLVM libomp helper process has used so far; 0 if none runs. */
uint64_t slb_x_child_cpu_ns(void);

/* exec_work.c: serial versions, expected values, and the shared kernels. */
uint64_t slb_x_fib_serial(unsigned n);
uint64_t slb_x_fib_value(unsigned n);       /* iteratively, for checking */
uint64_t slb_x_fib_tasks(unsigned n);       /* calls that spawn: F(n+1) - 1 */
bool slb_x_nq_legal(const char *board, unsigned filled);
uint64_t slb_x_nq_serial(unsigned n, unsigned row, const char *board, uint64_t *tasks);
uint64_t slb_x_nq_known(unsigned n);        /* published counts; 0 if unknown */
uint64_t slb_x_spin(uint64_t iters, uint64_t seed);
uint64_t slb_x_bpc_seed(unsigned producer, unsigned consumer);
/* BPC's task count and checksum, without running it (the LCG jumps ahead). */
void slb_x_bpc_expect(const slb_xparams *p, uint64_t *tasks, uint64_t *checksum);
void slb_x_bpc_serial(const slb_xparams *p, slb_xresult *out);
bool slb_x_run_serial(const slb_xparams *p, slb_xresult *out);

#ifdef __cplusplus
}
#endif

#endif /* SLB_EXEC_BENCH_H */
