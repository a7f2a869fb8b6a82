/*
 * exec_work.c — the workloads' serial versions, the values they must
 * produce, and the kernels every contender shares (the nqueens legality
 * test, BPC's busy work, UTS's node expansion in exec_uts.c).
 *
 * The serial versions are the same recursions as the parallel ones with
 * every spawn replaced by a call and every sync by nothing: they are the
 * baseline of the speed-up column, and for nqueens also the way the number
 * of tasks is counted.
 */
#include "exec_bench.h"
#include "exec_uts.h"

uint64_t slb_x_fib_serial(unsigned n)
{
    if (n < 2)
        return n;
    return slb_x_fib_serial(n - 1) + slb_x_fib_serial(n - 2);
}

uint64_t slb_x_fib_value(unsigned n)
{
    uint64_t a = 0, b = 1;
    for (unsigned i = 0; i < n; i++) {
        uint64_t t = a + b;
        a = b;
        b = t;
    }
    return a;
}

uint64_t slb_x_fib_tasks(unsigned n)
{
    /* Calls with n >= 2 spawn once: C(n) = 1 + C(n-1) + C(n-2), C(0) = C(1)
     * = 0, whose solution is F(n+1) - 1. */
    return slb_x_fib_value(n + 1) - 1;
}

bool slb_x_nq_legal(const char *board, unsigned filled)
{
    /* The Weave and BOTS test, quadratic on purpose: every row against every
     * later one, so that the work per task is what those suites measured. */
    for (unsigned i = 0; i < filled; i++) {
        int p = board[i];
        for (unsigned j = i + 1; j < filled; j++) {
            int q = board[j], dist = (int)(j - i);
            if (q == p || q == p - dist || q == p + dist)
                return false;
        }
    }
    return true;
}

uint64_t slb_x_nq_serial(unsigned n, unsigned row, const char *board, uint64_t *tasks)
{
    if (row == n)
        return 1;
    uint64_t found = 0;
    char next[16];
    for (unsigned i = 0; i < row; i++)
        next[i] = board[i];
    for (unsigned col = 0; col < n; col++) {
        next[row] = (char)col;
        if (!slb_x_nq_legal(next, row + 1))
            continue;
        if (tasks)
            ++*tasks; /* the parallel versions spawn here */
        found += slb_x_nq_serial(n, row + 1, next, tasks);
    }
    return found;
}

uint64_t slb_x_nq_known(unsigned n)
{
    /* OEIS A000170: the number of ways to place n non-attacking queens. */
    static const uint64_t known[] = { 1, 1, 0, 0, 2, 10, 4, 40, 92, 352, 724, 2680,
                                      14200, 73712, 365596 };
    return n < sizeof(known) / sizeof(known[0]) ? known[n] : 0;
}

uint64_t slb_x_spin(uint64_t iters, uint64_t seed)
{
    /* A chain of dependent multiply-adds (Knuth's MMIX LCG): a fixed amount
     * of CPU work that no compiler folds away, because the caller adds the
     * result into a checksum. */
    uint64_t x = seed;
    for (uint64_t i = 0; i < iters; i++)
        x = x * 6364136223846793005u + 1442695040888963407u;
    return x;
}

uint64_t slb_x_bpc_seed(unsigned producer, unsigned consumer)
{
    return (uint64_t)producer << 32 | consumer;
}

void slb_x_bpc_serial(const slb_xparams *p, slb_xresult *out)
{
    /* Producer d (counting down from bpc_depth) runs, then its consumers;
     * the order does not change the sum. */
    uint64_t tasks = 0, sum = 0;
    for (unsigned d = p->bpc_depth; d > 0; d--) {
        tasks++;
        for (unsigned c = 0; c < p->bpc_consumers; c++) {
            sum += slb_x_spin(p->bpc_iters, slb_x_bpc_seed(d, c));
            tasks++;
        }
    }
    out->value = tasks;
    out->checksum = sum;
}

bool slb_x_run_serial(const slb_xparams *p, slb_xresult *out)
{
    out->checksum = 0;
    switch (p->work) {
    case SLB_XFIB:
        out->value = slb_x_fib_serial(p->n);
        return true;
    case SLB_XNQUEENS:
        out->value = slb_x_nq_serial(p->n, 0, "", NULL);
        return true;
    case SLB_XUTS: {
        slb_uts_node root;
        slb_uts_root(&root, p->uts_root);
        out->value = slb_uts_serial(&root, p->uts_b0, p->uts_depth);
        return true;
    }
    case SLB_XBPC:
        slb_x_bpc_serial(p, out);
        return true;
    default:
        return false;
    }
}

void slb_x_bpc_expect(const slb_xparams *p, uint64_t *tasks, uint64_t *checksum)
{
    /* slb_x_spin applies x -> a*x + c `iters` times, which is x -> A*x + C
     * for A, C found by squaring the map (all its powers commute). So every
     * consumer's result is A*seed + C, and the sum needs no run at all. */
    uint64_t big_a = 1, big_c = 0, a = 6364136223846793005u, c = 1442695040888963407u;
    for (uint64_t k = p->bpc_iters; k; k >>= 1) {
        if (k & 1) {
            big_a *= a;
            big_c = big_c * a + c;
        }
        c = (a + 1) * c;
        a *= a;
    }
    uint64_t sum = 0;
    for (unsigned d = p->bpc_depth; d > 0; d--)
        for (unsigned k = 0; k < p->bpc_consumers; k++)
            sum += big_a * slb_x_bpc_seed(d, k) + big_c;
    *tasks = (uint64_t)p->bpc_depth * (p->bpc_consumers + 1);
    *checksum = sum;
}

static bool serial_run(const slb_xparams *p, slb_xresult *out)
{
    return slb_x_run_serial(p, out);
}

const slb_xcontender slb_x_serial = {
    "serial (no tasks)", "serial", SLB_XSERIAL, NULL, serial_run, NULL,
};
