// atomic_queue.cpp — Maxim Egorushkin's atomic_queue, AtomicQueueB2: the
// run-time-sized ring for any element type (a state byte per slot), in its
// MPMC and SPSC forms.
//
// Like Vyukov's ring it claims a slot with a CAS on the head (or tail) and
// then waits for that slot's state: a producer preempted between its claim
// and its store holds up the consumer of that slot, so it is not lock-free —
// the trade sluice's SL_MPMC does not make. Storage and capacity are rounded
// up to a power of two (at least 256 here), so a run holds up to that many,
// not exactly the capacity asked.
//
// The MPMC form does not keep per-producer order under preemption: the
// fullness check counts claimed, not finished, pops, so a producer a lap
// ahead can fill a slot before the producer of the earlier lap, and the
// consumers of the two laps then take the messages in swapped order. The
// driver caught it (4x4, 64-byte messages, on 2 cores: a producer's
// sequence 0 after 7290 good messages), so that contender is registered
// without SLB_FIFO: count and checksum are still checked. The SPSC form,
// with one thread on each end, is FIFO.
#include <atomic_queue/atomic_queue.h>

#include "peers/cxx_adapter.hpp"
#include "peers/peers.h"

namespace {

template <class M, bool Spsc> struct Aq : slb::QueueBase<M> {
    using B = slb::QueueBase<M>;
    explicit Aq(std::size_t cap) : q(static_cast<unsigned>(cap)) {}
    bool try_push(void *, const void *m) { return q.try_push(B::in(m)); }
    bool try_pop(void *, void *m) { return q.try_pop(B::out(m)); }
    atomic_queue::AtomicQueueB2<M, std::allocator<M>, true, false, Spsc> q;
};

template <class M> struct AqMpmc : Aq<M, false> {
    using Aq<M, false>::Aq;
};
template <class M> struct AqSpsc : Aq<M, true> {
    using Aq<M, true>::Aq;
};

const slb_ops *const *build()
{
    static const slb_ops mpmc = slb::make_ops<AqMpmc>(
        "atomic_queue B2", "atomic_queue", SLB_MPMC, 0, 0,
        "power-of-two capacity; a claimed slot waits; no per-producer order");
    static const slb_ops spsc = slb::make_ops<AqSpsc>(
        "atomic_queue B2 spsc", "atomic_queue", SLB_SPSC, SLB_FIFO | SLB_SINGLE, 0,
        "capacity rounded up to a power of two; single producer and consumer");
    static const slb_ops *const list[] = { &spsc, &mpmc, nullptr };
    return list;
}

} // namespace

extern "C" const slb_ops *const *slb_peers_atomic_queue(void)
{
    static const slb_ops *const *list = build();
    return list;
}
