// moodycamel_rwq.cpp — moodycamel's single-producer single-consumer queues:
// ReaderWriterQueue (SPSC, spinning) and BlockingReaderWriterCircularBuffer
// (bounded, both sides block on semaphores).
//
// ReaderWriterQueue's try_enqueue never allocates, so the queue is bounded by
// what the constructor reserved: "at least" the capacity (it rounds up to its
// block size). The circular buffer holds exactly the capacity.
#include <readerwriterqueue/readerwritercircularbuffer.h>
#include <readerwriterqueue/readerwriterqueue.h>

#include "peers/cxx_adapter.hpp"
#include "peers/peers.h"

namespace {

template <class M> struct Rwq : slb::QueueBase<M> {
    using B = slb::QueueBase<M>;
    explicit Rwq(std::size_t cap) : q(cap) {}
    bool try_push(void *, const void *m) { return q.try_enqueue(B::in(m)); }
    bool try_pop(void *, void *m) { return q.try_dequeue(B::out(m)); }
    moodycamel::ReaderWriterQueue<M> q;
};

template <class M> struct Rwcb : slb::QueueBase<M> {
    using B = slb::QueueBase<M>;
    explicit Rwcb(std::size_t cap) : q(cap) {}
    bool try_push(void *, const void *m) { return q.try_enqueue(B::in(m)); }
    bool try_pop(void *, void *m) { return q.try_dequeue(B::out(m)); }
    bool push(void *, const void *m)
    {
        q.wait_enqueue(B::in(m));
        return true;
    }
    bool pop(void *, void *m)
    {
        q.wait_dequeue(B::out(m));
        return true;
    }
    moodycamel::BlockingReaderWriterCircularBuffer<M> q;
};

const slb_ops *const *build()
{
    static const slb_ops rwq = slb::make_ops<Rwq>(
        "moodycamel RWQueue", "moodycamel", SLB_SPSC, SLB_FIFO | SLB_SINGLE, 0,
        "at least the capacity (block-rounded), try_enqueue");
    static const slb_ops rwcb = slb::make_ops<Rwcb>(
        "moodycamel BlockingRWBuf", "moodycamel", SLB_BLOCKING, SLB_FIFO | SLB_SINGLE,
        slb::BLOCKING, "exactly the capacity");
    static const slb_ops *const list[] = { &rwq, &rwcb, nullptr };
    return list;
}

} // namespace

extern "C" const slb_ops *const *slb_peers_moodycamel_rwq(void)
{
    static const slb_ops *const *list = build();
    return list;
}
