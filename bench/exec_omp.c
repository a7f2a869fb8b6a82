/*
 * exec_omp.c — the workloads as OpenMP tasks.
 *
 * Compiled twice: into sl-bench by the project's compiler with its OpenMP
 * flags (GCC: libgomp), and into the helper sl-bench-omp-llvm by clang
 * against LLVM's libomp (two OpenMP runtimes cannot share one process).
 * Only this file and the helper's main are compiled with OpenMP.
 *
 * Each workload runs inside one parallel region whose single thread starts
 * the root; the other threads of the team run tasks at the region's barrier.
 * Tasks are tied (the default) and each parent waits with taskwait, the
 * idiom of the BOTS and Weave OpenMP versions. BPC's producers do not wait
 * for their consumers: a taskgroup around the root waits for all of them.
 */
#include <omp.h>
#include <stdatomic.h>

#include "exec_bench.h"
#include "exec_omp.h"
#include "exec_uts.h"

static uint64_t fib(unsigned n)
{
    if (n < 2)
        return n;
    uint64_t x, y;
#pragma omp task shared(x) firstprivate(n)
    x = fib(n - 1);
    y = fib(n - 2);
#pragma omp taskwait
    return x + y;
}

typedef struct board {
    char row[16];
} board;

static uint64_t nqueens(unsigned n, unsigned row, const board *a)
{
    if (row == n)
        return 1;
    uint64_t found[16] = { 0 };
    for (unsigned col = 0; col < n; col++) {
        board b = *a;
        b.row[row] = (char)col;
        if (!slb_x_nq_legal(b.row, row + 1))
            continue;
#pragma omp task shared(found) firstprivate(b, col, n, row)
        found[col] = nqueens(n, row + 1, &b);
    }
#pragma omp taskwait
    uint64_t sum = 0;
    for (unsigned col = 0; col < n; col++)
        sum += found[col];
    return sum;
}

static uint64_t uts(const slb_uts_node *node, double b0, uint32_t depth)
{
    uint64_t nodes[SLB_UTS_MAX_KIDS];
    int kids = slb_uts_kids(node, b0, depth);
    for (int i = 0; i < kids; i++) {
        slb_uts_node child;
        slb_uts_child(node, (uint32_t)i, &child);
#pragma omp task shared(nodes) firstprivate(child, i, b0, depth)
        nodes[i] = uts(&child, b0, depth);
    }
#pragma omp taskwait
    uint64_t sum = 1;
    for (int i = 0; i < kids; i++)
        sum += nodes[i];
    return sum;
}

/* BPC's totals. Relaxed: the taskgroup's end orders every task's additions
 * before the root reads them. */
typedef struct tally {
    _Atomic uint64_t tasks, sum;
} tally;

static void consume(const slb_xparams *p, unsigned d, unsigned c, tally *t)
{
    uint64_t r = slb_x_spin(p->bpc_iters, slb_x_bpc_seed(d, c));
    atomic_fetch_add_explicit(&t->sum, r, memory_order_relaxed);
    atomic_fetch_add_explicit(&t->tasks, 1, memory_order_relaxed);
}

static void produce(const slb_xparams *p, unsigned d, tally *t)
{
    atomic_fetch_add_explicit(&t->tasks, 1, memory_order_relaxed);
    if (d > 1) {
#pragma omp task firstprivate(p, d, t)
        produce(p, d - 1, t);
    }
    for (unsigned c = 0; c < p->bpc_consumers; c++) {
#pragma omp task firstprivate(p, d, c, t)
        consume(p, d, c, t);
    }
}

const char *slb_x_omp_start(unsigned threads)
{
    omp_set_dynamic(0);
    omp_set_num_threads((int)threads);
    int team = 0;
    /* Creates the team now, so that no run pays for it. */
#pragma omp parallel
#pragma omp single
    team = omp_get_num_threads();
    return team == (int)threads ? NULL : "the runtime refused the thread count";
}

bool slb_x_omp_run(const slb_xparams *p, slb_xresult *out)
{
    uint64_t value = 0;
    tally t;
    atomic_init(&t.tasks, 0);
    atomic_init(&t.sum, 0);
#pragma omp parallel shared(value, t)
#pragma omp single
    {
        slb_uts_node root;
        board empty = { { 0 } };
        switch (p->work) {
        case SLB_XFIB:
            value = fib(p->n);
            break;
        case SLB_XNQUEENS:
            value = nqueens(p->n, 0, &empty);
            break;
        case SLB_XUTS:
            slb_uts_root(&root, p->uts_root);
            value = uts(&root, p->uts_b0, p->uts_depth);
            break;
        case SLB_XBPC:
#pragma omp taskgroup
            {
#pragma omp task firstprivate(p) shared(t)
                produce(p, p->bpc_depth, &t);
            }
            value = atomic_load_explicit(&t.tasks, memory_order_relaxed);
            break;
        default:
            break;
        }
    }
    out->value = value;
    out->checksum = atomic_load_explicit(&t.sum, memory_order_relaxed);
    return p->work < SLB_XWORKS;
}
