// pool_tbb.cpp — oneTBB, the two ways a program hands it independent jobs.
//
// "tbb arena.enqueue": a task_arena of `workers` slots, none reserved for
// outside threads (task_arena(workers, 0)), fed with task_arena::enqueue —
// oneTBB's fire-and-forget submission, the nearest thing it has to a pool's
// submit. Enqueue has no wait, so the adapter counts finished jobs (one
// atomic add per job) and wait_idle sleeps on a condition variable until the
// count reaches what the driver submitted — the code a program must write.
//
// "tbb task_group.run": task_group::run from the submitting threads and
// task_group::wait at the end, the fork-join idiom. An outside thread that
// calls run works in the implicit arena oneTBB gives it, whose concurrency
// is the machine's (one slot for the thread itself, nproc - 1 for workers),
// so this contender has min(workers, nproc - 1) worker threads, and the
// waiting thread joins them in wait(), as oneTBB is designed to. In the
// wake-up workload the driver waits only at the very end, so there every job
// is run by a worker. Both contenders hold a global_control of
// max_allowed_parallelism = workers + 1 while they live: oneTBB's own limit
// is nproc - 1 workers in all, which task_arena(workers) would otherwise hit.
//
// Third-party template code: compiled with -Wall -Wextra only (CMake).
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>

#include "contender.h"
#include "pool_peers.h"

namespace {

struct ArenaPool {
    ArenaPool(unsigned workers, slp_job_fn f)
        : limit(tbb::global_control::max_allowed_parallelism, workers + 1),
          arena(static_cast<int>(workers), 0), fn(f)
    {
    }
    tbb::global_control limit; // oneTBB's default allows nproc - 1 workers only
    tbb::task_arena arena;
    slp_job_fn fn;
    // Written by every worker once per job: a line of its own.
    alignas(64) std::atomic<std::uint64_t> done{0};
    alignas(64) std::atomic<std::uint64_t> wait_for{UINT64_MAX};
    std::mutex lock;
    std::condition_variable all_done;

    void finished()
    {
        // seq_cst on both sides (store-then-load each): either this worker
        // sees the waiter's target or the waiter sees this job done.
        std::uint64_t now = done.fetch_add(1, std::memory_order_seq_cst) + 1;
        if (now == wait_for.load(std::memory_order_seq_cst)) {
            std::lock_guard<std::mutex> g(lock);
            all_done.notify_one();
        }
    }
};

void *arena_create(unsigned workers, slp_job_fn fn)
{
    auto *p = new (std::nothrow) ArenaPool(workers, fn);
    if (p)
        p->arena.initialize();
    return p;
}

void arena_submit(void *pool, void *arg)
{
    auto *p = static_cast<ArenaPool *>(pool);
    p->arena.enqueue([p, arg] {
        p->fn(arg, nullptr);
        p->finished();
    });
}

void arena_wait_idle(void *pool, std::uint64_t submitted)
{
    auto *p = static_cast<ArenaPool *>(pool);
    p->wait_for.store(submitted, std::memory_order_seq_cst);
    std::unique_lock<std::mutex> g(p->lock);
    p->all_done.wait(g, [&] { return p->done.load(std::memory_order_seq_cst) >= submitted; });
    p->wait_for.store(UINT64_MAX, std::memory_order_relaxed);
}

void arena_destroy(void *pool)
{
    auto *p = static_cast<ArenaPool *>(pool);
    p->arena.terminate();
    delete p;
}

struct GroupPool {
    GroupPool(unsigned workers, slp_job_fn f)
        : limit(tbb::global_control::max_allowed_parallelism, workers + 1), fn(f)
    {
    }
    tbb::global_control limit;
    tbb::task_group group;
    slp_job_fn fn;
};

void *group_create(unsigned workers, slp_job_fn fn)
{
    return new (std::nothrow) GroupPool(workers, fn);
}

void group_submit(void *pool, void *arg)
{
    auto *p = static_cast<GroupPool *>(pool);
    slp_job_fn fn = p->fn;
    p->group.run([fn, arg] { fn(arg, nullptr); });
}

void group_wait_idle(void *pool, std::uint64_t)
{
    auto *p = static_cast<GroupPool *>(pool);
    if (p->group.wait() != tbb::task_group_status::complete)
        slb_die("tbb task_group", "task_group::wait did not complete");
}

void group_destroy(void *pool)
{
    delete static_cast<GroupPool *>(pool);
}

const slp_ops *const *build()
{
    static slp_ops arena{};
    arena.name = "tbb arena.enqueue";
    arena.peer = "tbb";
    arena.note = "task_arena(workers, 0) + enqueue; completion counted by the adapter";
    arena.create = arena_create;
    arena.submit = arena_submit;
    arena.wait_idle = arena_wait_idle;
    arena.destroy = arena_destroy;
    static slp_ops group{};
    group.name = "tbb task_group.run";
    group.peer = "tbb";
    group.note = "run from the submitters, wait at the end; workers via global_control";
    group.create = group_create;
    group.submit = group_submit;
    group.wait_idle = group_wait_idle;
    group.destroy = group_destroy;
    static const slp_ops *const list[] = { &arena, &group, nullptr };
    return list;
}

} // namespace

extern "C" const slp_ops *const *slp_pools_tbb(void)
{
    static const slp_ops *const *list = build();
    return list;
}
