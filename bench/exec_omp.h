/*
 * exec_omp.h — the OpenMP contender (exec_omp.c), shared by sl-bench's
 * in-process OpenMP runtime and the LLVM libomp helper process.
 */
#ifndef SLB_EXEC_OMP_H
#define SLB_EXEC_OMP_H

#include "exec_bench.h"

/* Sets the team size and creates the team; NULL, or why it cannot run. */
const char *slb_x_omp_start(unsigned threads);
/* Runs one workload in a parallel region; fills value and checksum. */
bool slb_x_omp_run(const slb_xparams *p, slb_xresult *out);

/* The helper's protocol, one line each way per run (exec_child.c, the
 * parent's side; exec_omp_helper.c, the child's):
 *   request:  "run WORK N B0 UTS_DEPTH UTS_ROOT BPC_DEPTH BPC_CONSUMERS BPC_ITERS\n"
 *   reply:    "ok VALUE CHECKSUM WALL_NS CPU_NS\n"  or  "error TEXT\n"
 * The helper starts with its thread count as its only argument and first
 * writes "ready\n" (or "error TEXT\n"); end of input makes it exit. */
#define SLB_X_HELPER_NAME "sl-bench-omp-llvm"

#endif /* SLB_EXEC_OMP_H */
