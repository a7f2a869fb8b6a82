// tbb_queue.cpp — oneTBB concurrent_queue (unbounded, non-blocking) and
// concurrent_bounded_queue (bounded, blocking push and pop).
//
// concurrent_queue has no bound at all, so it runs as an MPMC (try) peer
// whose push always succeeds. concurrent_bounded_queue gets the common
// capacity through set_capacity and runs as a blocking peer.
#include <oneapi/tbb/concurrent_queue.h>

#include "peers/cxx_adapter.hpp"
#include "peers/peers.h"

namespace {

template <class M> struct TbbQueue : slb::QueueBase<M> {
    using B = slb::QueueBase<M>;
    explicit TbbQueue(std::size_t) {}
    bool try_push(void *, const void *m)
    {
        q.push(B::in(m));
        return true;
    }
    bool try_pop(void *, void *m) { return q.try_pop(B::out(m)); }
    tbb::concurrent_queue<M> q;
};

template <class M> struct TbbBounded : slb::QueueBase<M> {
    using B = slb::QueueBase<M>;
    explicit TbbBounded(std::size_t cap) { q.set_capacity(static_cast<std::ptrdiff_t>(cap)); }
    bool try_push(void *, const void *m) { return q.try_push(B::in(m)); }
    bool try_pop(void *, void *m) { return q.try_pop(B::out(m)); }
    bool push(void *, const void *m)
    {
        q.push(B::in(m));
        return true;
    }
    bool pop(void *, void *m)
    {
        q.pop(B::out(m));
        return true;
    }
    tbb::concurrent_bounded_queue<M> q;
};

const slb_ops *const *build()
{
    static const slb_ops cq = slb::make_ops<TbbQueue>(
        "tbb concurrent_queue", "tbb", SLB_MPMC, SLB_FIFO | SLB_UNBOUNDED, 0,
        "unbounded");
    static const slb_ops bq = slb::make_ops<TbbBounded>(
        "tbb bounded_queue", "tbb", SLB_BLOCKING, SLB_FIFO, slb::BLOCKING,
        "exactly the capacity (set_capacity)");
    static const slb_ops *const list[] = { &cq, &bq, nullptr };
    return list;
}

} // namespace

extern "C" const slb_ops *const *slb_peers_tbb(void)
{
    static const slb_ops *const *list = build();
    return list;
}
