// cxx_adapter.hpp — turns a C++ queue template into an slb_ops table.
//
// The C++ peers are templates over the element type, while the driver picks
// the message size at run time. Each adapter is instantiated for 8- and
// 64-byte messages (the sizes sl-bench measures); create() picks one and the
// operations branch once on the size, a branch that is always predicted.
// Other sizes are reported as unsupported (create returns NULL → n/a).
//
// No exception may cross into the C driver: create() turns bad_alloc into
// NULL, and the queue operations used here do not throw otherwise.
#ifndef SLB_CXX_ADAPTER_HPP
#define SLB_CXX_ADAPTER_HPP

#include <cstddef>
#include <cstdint>
#include <new>

#include "contender.h"

namespace slb {

// A message is opaque bytes to every queue; uint64_t words keep it aligned.
template <std::size_t N> struct Msg {
    std::uint64_t w[N / 8];
};
using M8 = Msg<8>;
using M64 = Msg<64>;

// Every instantiation derives from Base so that create/destroy and the size
// branch need no extra pointer: the object itself says what it holds.
// Every operation reads `elem`, so it has a line of its own (alignas: the
// queue's members start on the next one). Packed in front of the queue it
// shared a line with the queue's first member whenever new returned an
// address other than 48 mod 64: boost::lockfree::queue's head_, which every
// pop CASes, so every push paid a transfer of the consumers' line, which
// sluice's adapters (the library's own handle, nothing beside it) never pay.
struct alignas(64) Base {
    explicit Base(std::size_t e) : elem(e) {}
    virtual ~Base() = default;
    std::size_t elem;
};

template <template <class> class Q> struct Adapter {
    static void *create(std::size_t cap, std::size_t elem)
    {
        try {
            if (elem == sizeof(M8))
                return static_cast<Base *>(new Q<M8>(cap));
            if (elem == sizeof(M64))
                return static_cast<Base *>(new Q<M64>(cap));
        } catch (const std::bad_alloc &) {
        }
        return nullptr;
    }
    static void destroy(void *p) { delete static_cast<Base *>(p); }

    template <class F> static auto with(void *p, F f)
    {
        Base *b = static_cast<Base *>(p);
        if (b->elem == sizeof(M8))
            return f(*static_cast<Q<M8> *>(b));
        return f(*static_cast<Q<M64> *>(b));
    }

    static void *attach(void *p, bool producer)
    {
        return with(p, [&](auto &q) { return q.attach(producer); });
    }
    static void detach(void *p, void *h)
    {
        with(p, [&](auto &q) { q.detach(h); });
    }
    static bool try_push(void *p, void *h, const void *m)
    {
        return with(p, [&](auto &q) { return q.try_push(h, m); });
    }
    static bool try_pop(void *p, void *h, void *m)
    {
        return with(p, [&](auto &q) { return q.try_pop(h, m); });
    }
    static bool push(void *p, void *h, const void *m)
    {
        return with(p, [&](auto &q) { return q.push(h, m); });
    }
    static bool pop(void *p, void *h, void *m)
    {
        return with(p, [&](auto &q) { return q.pop(h, m); });
    }
    static std::size_t push_n(void *p, void *h, const void *m, std::size_t n)
    {
        return with(p, [&](auto &q) { return q.push_n(h, m, n); });
    }
    static std::size_t pop_n(void *p, void *h, void *m, std::size_t n)
    {
        return with(p, [&](auto &q) { return q.pop_n(h, m, n); });
    }
};

// Defaults for the optional operations, so each queue writes only what it has.
template <class M> struct QueueBase : Base {
    QueueBase() : Base(sizeof(M)) {}
    void *attach(bool) { return nullptr; }
    void detach(void *) {}
    bool push(void *, const void *) { return false; }
    bool pop(void *, void *) { return false; }
    std::size_t push_n(void *, const void *, std::size_t) { return 0; }
    std::size_t pop_n(void *, void *, std::size_t) { return 0; }
    static const M &in(const void *m) { return *static_cast<const M *>(m); }
    static M &out(void *m) { return *static_cast<M *>(m); }
};

// What a queue offers beyond try_push/try_pop; make_ops leaves the rest NULL
// so the driver knows (no batch workload, no blocking kind, no attach call).
enum Has : unsigned { TOKENS = 1u, BLOCKING = 2u, BATCH = 4u };

template <template <class> class Q>
slb_ops make_ops(const char *name, const char *peer, slb_kind kind, unsigned flags,
                 unsigned has, const char *note)
{
    using A = Adapter<Q>;
    slb_ops o{};
    o.name = name;
    o.peer = peer;
    o.kind = kind;
    o.flags = flags;
    o.note = note;
    o.create = A::create;
    o.destroy = A::destroy;
    o.try_push = A::try_push;
    o.try_pop = A::try_pop;
    if (has & TOKENS) {
        o.attach = A::attach;
        o.detach = A::detach;
    }
    if (has & BLOCKING) {
        o.push = A::push;
        o.pop = A::pop;
    }
    if (has & BATCH) {
        o.push_n = A::push_n;
        o.pop_n = A::pop_n;
    }
    return o;
}

} // namespace slb

#endif
