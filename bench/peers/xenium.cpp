// xenium.cpp — xenium's nikolaev_bounded_queue: Nikolaev's scalable
// circular queue (SCQ, DISC 2019) in C++, the algorithm sluice's SL_MPMC
// implements (a ring of free slot indices and a ring of full ones in front
// of an array of values), so it checks ours directly: the same algorithm in
// another implementation.
//
// Instantiated with the value type alone: unlike xenium's node-based queues
// it allocates nothing after construction, so it takes no reclaimer. Its
// one policy, pop_retries (how long a dequeue waits on a slot whose enqueue
// is under way), keeps its default of 1000. It rounds the capacity up to a
// power of two and is lock-free while fewer threads than the capacity use
// it at once. Debian 12's libxenium-dev (0.0.2) predates this queue; CMake
// builds the adapter only when the header is found (bench/CMakeLists.txt).
#include <xenium/nikolaev_bounded_queue.hpp>

#include "peers/cxx_adapter.hpp"
#include "peers/peers.h"

namespace {

template <class M> struct Nikolaev : slb::QueueBase<M> {
    using B = slb::QueueBase<M>;
    explicit Nikolaev(std::size_t cap) : q(cap) {}
    bool try_push(void *, const void *m) { return q.try_push(B::in(m)); }
    bool try_pop(void *, void *m) { return q.try_pop(B::out(m)); }
    xenium::nikolaev_bounded_queue<M> q;
};

const slb_ops *const *build()
{
    static const slb_ops mpmc = slb::make_ops<Nikolaev>(
        "xenium nikolaev", "xenium", SLB_MPMC, SLB_FIFO, 0,
        "capacity rounded up to a power of two; SCQ, two index rings (as SL_MPMC)");
    static const slb_ops *const list[] = { &mpmc, nullptr };
    return list;
}

} // namespace

extern "C" const slb_ops *const *slb_peers_xenium(void)
{
    static const slb_ops *const *list = build();
    return list;
}
