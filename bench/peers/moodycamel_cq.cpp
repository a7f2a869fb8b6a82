// moodycamel_cq.cpp — moodycamel's ConcurrentQueue (MPMC, spinning) and
// BlockingConcurrentQueue (MPMC, consumers block).
//
// Both run with per-thread producer and consumer tokens, their fast path.
// They are unbounded here: try_enqueue on a pre-sized queue can starve a
// producer for good once other producers hold every block, so producers use
// enqueue, which allocates blocks as needed. Their order is FIFO per producer
// only, which is what the driver checks.
#include <concurrentqueue/blockingconcurrentqueue.h>
#include <concurrentqueue/concurrentqueue.h>
#include <memory>

#include "peers/cxx_adapter.hpp"
#include "peers/peers.h"

namespace {

// One per thread: a producer token or a consumer token.
struct Token {
    std::unique_ptr<moodycamel::ProducerToken> prod;
    std::unique_ptr<moodycamel::ConsumerToken> cons;
};

// Shared by both concurrent queues: they take the same tokens and calls.
template <class M, class QT> struct Cq : slb::QueueBase<M> {
    using B = slb::QueueBase<M>;
    explicit Cq(std::size_t cap) : q(cap) {}
    void *attach(bool producer)
    {
        auto *t = new Token;
        if (producer)
            t->prod = std::make_unique<moodycamel::ProducerToken>(q);
        else
            t->cons = std::make_unique<moodycamel::ConsumerToken>(q);
        return t;
    }
    void detach(void *h) { delete static_cast<Token *>(h); }
    bool try_push(void *h, const void *m)
    {
        auto *t = static_cast<Token *>(h);
        return t ? q.enqueue(*t->prod, B::in(m)) : q.enqueue(B::in(m));
    }
    bool try_pop(void *h, void *m)
    {
        auto *t = static_cast<Token *>(h);
        return t ? q.try_dequeue(*t->cons, B::out(m)) : q.try_dequeue(B::out(m));
    }
    std::size_t push_n(void *h, const void *m, std::size_t n)
    {
        auto *t = static_cast<Token *>(h);
        const M *first = static_cast<const M *>(m);
        bool ok = t ? q.enqueue_bulk(*t->prod, first, n) : q.enqueue_bulk(first, n);
        return ok ? n : 0;
    }
    std::size_t pop_n(void *h, void *m, std::size_t n)
    {
        auto *t = static_cast<Token *>(h);
        M *first = static_cast<M *>(m);
        return t ? q.try_dequeue_bulk(*t->cons, first, n) : q.try_dequeue_bulk(first, n);
    }
    QT q;
};

template <class M> struct CqPlain : Cq<M, moodycamel::ConcurrentQueue<M>> {
    using Cq<M, moodycamel::ConcurrentQueue<M>>::Cq;
};

template <class M> struct CqBlocking : Cq<M, moodycamel::BlockingConcurrentQueue<M>> {
    using Base = Cq<M, moodycamel::BlockingConcurrentQueue<M>>;
    using Base::Base;
    bool push(void *h, const void *m) { return Base::try_push(h, m); }
    bool pop(void *h, void *m)
    {
        auto *t = static_cast<Token *>(h);
        if (t)
            this->q.wait_dequeue(*t->cons, Base::out(m));
        else
            this->q.wait_dequeue(Base::out(m));
        return true;
    }
};

const slb_ops *const *build()
{
    static const slb_ops cq = slb::make_ops<CqPlain>(
        "moodycamel CQueue", "moodycamel", SLB_MPMC, SLB_FIFO | SLB_UNBOUNDED,
        slb::TOKENS | slb::BATCH, "unbounded (enqueue with tokens); bulk ops");
    static const slb_ops bcq = slb::make_ops<CqBlocking>(
        "moodycamel BlockingCQ", "moodycamel", SLB_BLOCKING, SLB_FIFO | SLB_UNBOUNDED,
        slb::TOKENS | slb::BLOCKING, "unbounded (enqueue with tokens); consumers block");
    static const slb_ops *const list[] = { &cq, &bcq, nullptr };
    return list;
}

} // namespace

extern "C" const slb_ops *const *slb_peers_moodycamel_cq(void)
{
    static const slb_ops *const *list = build();
    return list;
}
