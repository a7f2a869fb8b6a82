/*
 * exec_tbb.cpp — the workloads on oneTBB's task_group.
 *
 * One task_arena with as many slots as sluice has workers (the calling
 * thread takes one), plus a global_control holding oneTBB to the same
 * parallelism, both created once in start. Every fork-join level is its own
 * task_group, run/wait, as oneTBB's documentation writes fib; BPC's
 * producers add their consumers to the root's group, which oneTBB allows
 * while the group is being waited for.
 */
#include <atomic>
#include <cstring>
#include <memory>

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include "exec_bench.h"
#include "exec_uts.h"

namespace {

std::unique_ptr<tbb::global_control> limit;
std::unique_ptr<tbb::task_arena> arena;

uint64_t fib(unsigned n)
{
    if (n < 2)
        return n;
    uint64_t x = 0, y;
    tbb::task_group g;
    g.run([&x, n] { x = fib(n - 1); });
    y = fib(n - 2);
    g.wait();
    return x + y;
}

struct board {
    char row[16];
};

uint64_t nqueens(unsigned n, unsigned row, const board &a)
{
    if (row == n)
        return 1;
    uint64_t found[16] = {};
    tbb::task_group g;
    for (unsigned col = 0; col < n; col++) {
        board b = a;
        b.row[row] = (char)col;
        if (!slb_x_nq_legal(b.row, row + 1))
            continue;
        g.run([&found, b, col, n, row] { found[col] = nqueens(n, row + 1, b); });
    }
    g.wait();
    uint64_t sum = 0;
    for (unsigned col = 0; col < n; col++)
        sum += found[col];
    return sum;
}

uint64_t uts(const slb_uts_node &node, double b0, uint32_t depth)
{
    uint64_t nodes[SLB_UTS_MAX_KIDS];
    int kids = slb_uts_kids(&node, b0, depth);
    tbb::task_group g;
    for (int i = 0; i < kids; i++) {
        slb_uts_node child;
        slb_uts_child(&node, (uint32_t)i, &child);
        g.run([&nodes, child, i, b0, depth] { nodes[i] = uts(child, b0, depth); });
    }
    g.wait();
    uint64_t sum = 1;
    for (int i = 0; i < kids; i++)
        sum += nodes[i];
    return sum;
}

/* BPC's totals; relaxed, the root group's wait orders them before the read. */
struct tally {
    std::atomic<uint64_t> tasks{0}, sum{0};
};

void produce(tbb::task_group &g, const slb_xparams &p, unsigned d, tally &t)
{
    t.tasks.fetch_add(1, std::memory_order_relaxed);
    if (d > 1)
        g.run([&g, &p, d, &t] { produce(g, p, d - 1, t); });
    for (unsigned c = 0; c < p.bpc_consumers; c++)
        g.run([&p, d, c, &t] {
            uint64_t r = slb_x_spin(p.bpc_iters, slb_x_bpc_seed(d, c));
            t.sum.fetch_add(r, std::memory_order_relaxed);
            t.tasks.fetch_add(1, std::memory_order_relaxed);
        });
}

void run_one(const slb_xparams &p, slb_xresult &out)
{
    switch (p.work) {
    case SLB_XFIB:
        out.value = fib(p.n);
        break;
    case SLB_XNQUEENS:
        out.value = nqueens(p.n, 0, board{});
        break;
    case SLB_XUTS: {
        slb_uts_node root;
        slb_uts_root(&root, p.uts_root);
        out.value = uts(root, p.uts_b0, p.uts_depth);
        break;
    }
    case SLB_XBPC: {
        tally t;
        tbb::task_group g;
        g.run([&g, &p, &t] { produce(g, p, p.bpc_depth, t); });
        g.wait();
        out.value = t.tasks.load(std::memory_order_relaxed);
        out.checksum = t.sum.load(std::memory_order_relaxed);
        break;
    }
    default:
        break;
    }
}

const char *tbb_start(unsigned threads)
{
    limit = std::make_unique<tbb::global_control>(
        tbb::global_control::max_allowed_parallelism, threads);
    arena = std::make_unique<tbb::task_arena>((int)threads);
    arena->initialize();
    /* Wakes the workers once, so that no run pays for their creation. */
    arena->execute([] { fib(12); });
    return nullptr;
}

bool tbb_run(const slb_xparams *p, slb_xresult *out)
{
    if (p->work >= SLB_XWORKS)
        return false;
    out->checksum = 0;
    arena->execute([p, out] { run_one(*p, *out); });
    return true;
}

void tbb_stop()
{
    arena.reset();
    limit.reset();
}

} // namespace

extern "C" const slb_xcontender slb_x_tbb = {
    "oneTBB task_group", "tbb", 0, tbb_start, tbb_run, tbb_stop,
};
