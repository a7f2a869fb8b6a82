// boost_lockfree.cpp — Boost.Lockfree spsc_queue and queue.
//
// spsc_queue is sized at run time and holds exactly the capacity; it has
// batch push/pop, so it is the SPSC peer of the batch workloads. queue (a
// Michael–Scott list over a node pool) is made bounded the way Boost intends:
// the constructor preallocates `capacity` nodes and bounded_push never
// allocates, failing when the pool is empty.
#include <boost/lockfree/queue.hpp>
#include <boost/lockfree/spsc_queue.hpp>

#include "peers/cxx_adapter.hpp"
#include "peers/peers.h"

namespace {

template <class M> struct BoostSpsc : slb::QueueBase<M> {
    using B = slb::QueueBase<M>;
    explicit BoostSpsc(std::size_t cap) : q(cap) {}
    bool try_push(void *, const void *m) { return q.push(B::in(m)); }
    bool try_pop(void *, void *m) { return q.pop(B::out(m)); }
    std::size_t push_n(void *, const void *m, std::size_t n)
    {
        return q.push(static_cast<const M *>(m), n);
    }
    std::size_t pop_n(void *, void *m, std::size_t n)
    {
        return q.pop(static_cast<M *>(m), n);
    }
    boost::lockfree::spsc_queue<M> q;
};

template <class M> struct BoostQueue : slb::QueueBase<M> {
    using B = slb::QueueBase<M>;
    explicit BoostQueue(std::size_t cap) : q(cap) {}
    bool try_push(void *, const void *m) { return q.bounded_push(B::in(m)); }
    bool try_pop(void *, void *m) { return q.pop(B::out(m)); }
    boost::lockfree::queue<M> q;
};

const slb_ops *const *build()
{
    static const slb_ops spsc = slb::make_ops<BoostSpsc>(
        "boost spsc_queue", "boost", SLB_SPSC, SLB_FIFO | SLB_SINGLE, slb::BATCH,
        "exactly the capacity; batch push/pop");
    static const slb_ops mpmc = slb::make_ops<BoostQueue>(
        "boost queue", "boost", SLB_MPMC, SLB_FIFO, 0,
        "capacity preallocated nodes, bounded_push");
    static const slb_ops *const list[] = { &spsc, &mpmc, nullptr };
    return list;
}

} // namespace

extern "C" const slb_ops *const *slb_peers_boost(void)
{
    static const slb_ops *const *list = build();
    return list;
}
