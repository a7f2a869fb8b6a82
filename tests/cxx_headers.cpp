// tests/cxx_headers.cpp — the public headers compile as C++17 and the C++
// side (which gets the out-of-line versions of the inline fast paths) links
// against the shared library and works. Exit status 0 means every check held.
#include <sluice.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

struct msg {
    int a;
    double b;
    char tag[6];
};

// A typed channel declared at file scope.
SL_CHAN_TYPED(msg_chan, msg);
// And a typed broadcast channel.
SL_BROADCAST_TYPED(msg_bc, msg);
// A typed shared-memory channel, and a pointer element spelled directly.
SL_CHAN_TYPED(msg_shm, msg);
SL_CHAN_SHM_TYPED(msg_shm, msg);
SL_CHAN_TYPED(iptr_chan, int *);

static int failures = 0;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            std::fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
            ++failures;                                                              \
        }                                                                            \
    } while (0)

static_assert(alignof(sl_spsc) >= SL_CACHELINE, "sl_spsc is cache-line aligned in C++ too");
static_assert(alignof(sl_mpmc) >= SL_CACHELINE, "sl_mpmc is cache-line aligned in C++ too");

static void check_chan(sl_flavor flavor)
{
    sl_chan_opts o{};
    o.flavor = flavor;
    o.elem_size = sizeof(int);
    o.capacity = 4;
    sl_chan *ch = nullptr;
    CHECK(sl_chan_new(&ch, &o) == SL_OK);
    if (!ch) return;
    CHECK(sl_chan_flavor(ch) == flavor);
    CHECK(sl_chan_cap(ch) == 4);
    CHECK(sl_chan_elem_size(ch) == sizeof(int));
    for (int i = 0; i < 4; i++) {
        int v = 10 * i;
        CHECK(i % 2 ? sl_chan_send(ch, &v) == SL_OK : sl_chan_try_send(ch, &v) == SL_OK);
    }
    int extra = -1;
    CHECK(sl_chan_try_send(ch, &extra) == SL_FULL);
    CHECK(sl_chan_send_for(ch, &extra, 1000000) == SL_TIMEDOUT);
    CHECK(sl_chan_len(ch) == 4);
    for (int i = 0; i < 4; i++) {
        int v = -1;
        CHECK((i % 2 ? sl_chan_recv(ch, &v) : sl_chan_try_recv(ch, &v)) == SL_OK);
        CHECK(v == 10 * i);
    }
    int v = -1;
    CHECK(sl_chan_try_recv(ch, &v) == SL_EMPTY);
    CHECK(sl_chan_recv_for(ch, &v, 1000000) == SL_TIMEDOUT);
    int batch[3] = { 7, 8, 9 }, out[3] = { 0, 0, 0 };
    CHECK(sl_chan_try_send_n(ch, batch, 3) == 3);
    CHECK(sl_chan_try_recv_n(ch, out, 3) == 3);
    CHECK(out[0] == 7 && out[1] == 8 && out[2] == 9);
    CHECK(!sl_chan_is_closed(ch));
    sl_chan_close(ch);
    CHECK(sl_chan_is_closed(ch));
    CHECK(sl_chan_send(ch, &v) == SL_CLOSED);
    CHECK(sl_chan_recv(ch, &v) == SL_CLOSED);
    sl_chan_free(ch);
}

static void check_raw_spsc()
{
    sl_spsc q;
    CHECK(sl_spsc_init(&q, sizeof(int), 3) == SL_OK);
    CHECK(sl_spsc_cap(&q) == 3);
    for (int i = 0; i < 3; i++) CHECK(sl_spsc_try_push(&q, &i) == SL_OK);
    int v = 42;
    CHECK(sl_spsc_try_push(&q, &v) == SL_FULL);
    CHECK(sl_spsc_len(&q) == 3);
    for (int i = 0; i < 3; i++) {
        v = -1;
        CHECK(sl_spsc_try_pop(&q, &v) == SL_OK);
        CHECK(v == i);
    }
    CHECK(sl_spsc_try_pop(&q, &v) == SL_EMPTY);
    int in[5] = { 1, 2, 3, 4, 5 }, out[5] = { 0, 0, 0, 0, 0 };
    CHECK(sl_spsc_push_n(&q, in, 5) == 3);
    CHECK(sl_spsc_pop_n(&q, out, 5) == 3);
    CHECK(out[0] == 1 && out[1] == 2 && out[2] == 3);
    sl_spsc_destroy(&q);
    sl_spsc_destroy(nullptr);
}

static void check_raw_mpmc()
{
    sl_mpmc q;
    CHECK(sl_mpmc_init(&q, sizeof(int), 2) == SL_OK);
    int a = 5, b = 6, v = 0;
    CHECK(sl_mpmc_try_push(&q, &a) == SL_OK);
    CHECK(sl_mpmc_try_push(&q, &b) == SL_OK);
    CHECK(sl_mpmc_try_push(&q, &a) == SL_FULL);
    CHECK(sl_mpmc_len(&q) == 2);
    CHECK(sl_mpmc_try_pop(&q, &v) == SL_OK && v == 5);
    CHECK(sl_mpmc_try_pop(&q, &v) == SL_OK && v == 6);
    CHECK(sl_mpmc_try_pop(&q, &v) == SL_EMPTY);
    sl_mpmc_destroy(&q);
}

static void check_event()
{
    sl_event ev;
    sl_event_init(&ev);
    std::uint32_t key = sl_event_prepare(&ev);
    CHECK(sl_event_waiters(&ev) == 1);
    sl_event_notify_one(&ev); // out of line in C++
    CHECK(sl_event_wait(&ev, key, sl_deadline_after(5000000000ull)) == SL_OK);
    key = sl_event_prepare(&ev);
    sl_event_notify_all(&ev);
    CHECK(sl_event_wait(&ev, key, SL_FOREVER) == SL_OK);
    key = sl_event_prepare(&ev);
    sl_event_notify_n(&ev, 1);
    CHECK(sl_event_wait(&ev, key, SL_FOREVER) == SL_OK);
    key = sl_event_prepare(&ev);
    CHECK(sl_event_wait(&ev, key, sl_deadline_after(0)) == SL_TIMEDOUT);
    CHECK(sl_event_waiters(&ev) == 0);
    CHECK(sl_now_ns() > 0);
    CHECK(sl_deadline_after(SL_FOREVER) == SL_FOREVER);
}

static sl_chan_opts mpmc_opts(std::size_t capacity)
{
    sl_chan_opts o{};
    o.flavor = SL_MPMC;
    o.capacity = capacity;
    return o;
}

static void check_typed()
{
    sl_chan_opts o = mpmc_opts(2);
    msg_chan *mc = nullptr;
    CHECK(msg_chan_new(&mc, &o) == SL_OK);
    if (!mc) return;
    CHECK(msg_chan_cap(mc) == 2);
    msg m1{ 1, 1.5, "one" }, m2{ 2, 2.5, "two" }, got{};
    CHECK(msg_chan_send(mc, &m1) == SL_OK);
    CHECK(msg_chan_try_send(mc, &m2) == SL_OK);
    CHECK(msg_chan_try_send(mc, &m2) == SL_FULL);
    CHECK(msg_chan_len(mc) == 2);
    CHECK(msg_chan_recv(mc, &got) == SL_OK);
    CHECK(got.a == 1 && got.b == 1.5 && std::strcmp(got.tag, "one") == 0);
    CHECK(msg_chan_try_recv(mc, &got) == SL_OK);
    CHECK(got.a == 2 && got.b == 2.5 && std::strcmp(got.tag, "two") == 0);
    CHECK(msg_chan_try_recv(mc, &got) == SL_EMPTY);
    // Every wrapper is used: clang's -Wunused-function reports unused static
    // inline functions defined in the main file, macro-generated ones too.
    CHECK(msg_chan_send_for(mc, &m1, 1000000) == SL_OK);
    CHECK(msg_chan_recv_for(mc, &got, 1000000) == SL_OK && got.a == 1);
    CHECK(msg_chan_recv_for(mc, &got, 1000000) == SL_TIMEDOUT);
    msg arr[3] = { m1, m2, m1 }, outs[3] = {};
    CHECK(msg_chan_try_send_n(mc, arr, 3) == 2);
    CHECK(msg_chan_try_recv_n(mc, outs, 3) == 2);
    CHECK(outs[0].a == 1 && outs[1].a == 2);
    CHECK(msg_chan_send_evict(mc, &m1, &got) == SL_EINVAL);
    CHECK(msg_chan_send_ptr(mc, &m1) == SL_EINVAL); // elem_size is not sizeof(void *)
    CHECK(msg_chan_len(mc) == 0);
    msg_chan_close(mc);
    CHECK(msg_chan_is_closed(mc));
    CHECK(msg_chan_recv(mc, &got) == SL_CLOSED);
    msg_chan_free(mc);
}

static void check_broadcast()
{
    sl_chan_opts o{};
    o.flavor = SL_BROADCAST;
    o.capacity = 1;
    msg_bc *bc = nullptr, *rx = nullptr;
    CHECK(msg_bc_new(&bc, &o) == SL_OK);
    if (!bc) return;
    CHECK(msg_bc_subscribe(bc, &rx) == SL_OK);
    msg m1{ 1, 1.5, "one" }, m2{ 2, 2.5, "two" }, got{};
    CHECK(msg_bc_send(bc, &m1) == SL_OK);
    CHECK(msg_bc_send(bc, &m2) == SL_OK); // overwrites m1: never full
    CHECK(msg_bc_recv(rx, &got) == SL_LAGGED && msg_bc_missed(rx) == 1);
    CHECK(msg_bc_recv(rx, &got) == SL_OK && got.a == 2 && std::strcmp(got.tag, "two") == 0);
    msg_bc_free(bc);
    CHECK(msg_bc_recv(rx, &got) == SL_CLOSED);
    msg_bc_free(rx);
}

// The typed forms check_typed leaves out: the pointer moves, the waiting
// batches, the descriptor, the shared-memory and the timer wrappers.
static void check_typed_rest()
{
    sl_chan_opts o = mpmc_opts(1);
    iptr_chan *ic = nullptr;
    CHECK(iptr_chan_new(&ic, &o) == SL_OK);
    if (!ic) return;
    int x = 1, y = 2;
    int *px = &x, *py = &y, *r = nullptr;
    CHECK(iptr_chan_send_ptr(ic, &px) == SL_OK && px == nullptr);
    CHECK(iptr_chan_try_send_ptr(ic, &py) == SL_FULL && py == &y);
    CHECK(iptr_chan_send_ptr_for(ic, &py, 1000000) == SL_TIMEDOUT && py == &y);
    std::size_t got = 0;
    CHECK(iptr_chan_recv_n(ic, &r, 1, &got) == SL_OK && got == 1 && r == &x);
    CHECK(iptr_chan_try_send_ptr(ic, &py) == SL_OK && py == nullptr);
    CHECK(iptr_chan_recv_n_for(ic, &r, 1, 0, &got) == SL_OK && got == 1 && r == &y);
    int fd = -1;
    CHECK(iptr_chan_fd(ic, SL_END_SEND, &fd) == SL_OK && fd >= 0);
    iptr_chan_free(ic);

    msg_shm *a = nullptr, *b = nullptr;
    o.elem_size = 1; // ignored: sizeof(msg)
    CHECK(msg_shm_shm_create(&a, nullptr, &o, 0) == SL_OK);
    if (!a) return;
    CHECK(sl_chan_elem_size((const sl_chan *)(const void *)a) == sizeof(msg));
    sl_chan_opts e = mpmc_opts(0); // any capacity
    CHECK(msg_shm_shm_open_fd(&b, msg_shm_shm_fd(a), &e) == SL_OK);
    CHECK(msg_shm_shm_open(&b, "/no-such-sluice-segment", &e) == SL_EINVAL);
    msg m{ 3, 3.5, "shm" }, g{};
    if (b) {
        CHECK(msg_shm_shm_sender(b) == SL_OK && msg_shm_shm_receiver(a) == SL_OK);
        CHECK(msg_shm_send(b, &m) == SL_OK);
        CHECK(msg_shm_recv(a, &g) == SL_OK && g.a == 3 && std::strcmp(g.tag, "shm") == 0);
        msg_shm_free(b); // the last registered sender: the channel closes
    }
    CHECK(msg_shm_recv_for(a, &g, 0) == SL_CLOSED);
    msg_shm_free(a);

    sl_timer_chan *t = nullptr;
    std::uint64_t at = 0;
    CHECK(sl_timer_chan_after(&t, 0) == SL_OK);
    CHECK(sl_timer_chan_recv(t, &at) == SL_OK && at > 0);
    sl_timer_chan_free(t);
    CHECK(sl_timer_chan_tick(&t, 0) == SL_EINVAL);
    CHECK(sl_timer_chan_never(&t) == SL_OK);
    CHECK(sl_timer_chan_try_recv(t, &at) == SL_EMPTY);
    sl_timer_chan_free(t);
}

int main()
{
    const int statuses[] = { (int)SL_OK, (int)SL_EMPTY, (int)SL_FULL, (int)SL_CLOSED, (int)SL_ENOMEM, 999 };
    for (int s : statuses) CHECK(sl_status_str(static_cast<sl_status>(s)) != nullptr);
    check_chan(SL_MPMC);
    check_chan(SL_SPSC);
    check_raw_spsc();
    check_raw_mpmc();
    check_event();
    check_typed();
    check_broadcast();
    check_typed_rest();
    if (failures) std::fprintf(stderr, "cxx_headers: %d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
