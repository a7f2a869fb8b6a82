/*
 * tests/unit_chanfd.c — event-loop descriptors (sluice/chanfd.h) on every
 * flavour.
 *
 * Bad input is refused and changes nothing; a descriptor starts readable, is
 * the same on every call, and counts once as a watcher even when threads ask
 * at once; the level cycle holds at both ends (a try that finds nothing
 * re-arms, a send or a receive makes it readable again, a drain until
 * SL_EMPTY leaves it unreadable); close makes it readable for good; the
 * blocking and select forms re-arm too; a descriptor the system refuses
 * leaves the channel working; free closes it; an epoll loop on another thread
 * receives every message sent while it sleeps. Readability is asked of
 * poll(2) with a zero timeout, or, where a thread must wake, with a timeout of
 * seconds that only a lost wake-up would reach.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sluice/chan.h>
#include <sluice/chanfd.h>
#include <sluice/select.h>
#include <sluice/timer.h>

#include "../channels/chan_impl.h" /* the watcher count, to check it */

static const sl_flavor all_flavors[] = {SL_SPSC, SL_MPMC, SL_LIST, SL_RING};

/* Whether fd is readable now. */
static bool readable(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int r = poll(&p, 1, 0);
    ck_assert_int_ge(r, 0);
    return r == 1 && (p.revents & POLLIN);
}

static sl_chan *chan8(sl_flavor f, size_t cap)
{
    return sl_test_chan(f, sizeof(uint64_t), cap, NULL, NULL);
}

static uint32_t watchers(sl_chan *ch)
{
    return atomic_load_explicit(&ch->selectors, memory_order_relaxed);
}

START_TEST(test_bad_input)
{
    sl_chan *ch = chan8(SL_MPMC, 4);
    int fd = -7;
    ck_assert_int_eq(sl_chan_fd(NULL, SL_END_RECV, &fd), SL_EINVAL);
    ck_assert_int_eq(sl_chan_fd(ch, SL_END_RECV, NULL), SL_EINVAL);
    ck_assert_int_eq(sl_chan_fd(ch, (sl_chan_end)2, &fd), SL_EINVAL);
    ck_assert_int_eq(sl_chan_fd(ch, (sl_chan_end)-1, &fd), SL_EINVAL);
    ck_assert_int_eq(fd, -7);
    ck_assert_uint_eq(watchers(ch), 0); /* nothing was created */
    sl_chan_free(ch);
    /* A timer becomes ready by the clock: nothing would signal it. */
    sl_chan *t;
    ck_assert_int_eq(sl_chan_tick(&t, 1000 * MS), SL_OK);
    ck_assert_int_eq(sl_chan_fd(t, SL_END_RECV, &fd), SL_EINVAL);
    ck_assert_int_eq(fd, -7);
    sl_chan_free(t);
}
END_TEST

/* Created readable, the same descriptor on every call, one per end, one
 * watcher each; free closes both. */
START_TEST(test_same_fd_and_free)
{
    sl_chan *ch = chan8(all_flavors[_i], 4);
    int r1, r2, s1;
    ck_assert_int_eq(sl_chan_fd(ch, SL_END_RECV, &r1), SL_OK);
    ck_assert_int_eq(sl_chan_fd(ch, SL_END_RECV, &r2), SL_OK);
    ck_assert_int_eq(sl_chan_fd(ch, SL_END_SEND, &s1), SL_OK);
    ck_assert_int_eq(r1, r2);
    ck_assert_int_ne(r1, s1);
    ck_assert(readable(r1) && readable(s1));
    ck_assert_int_ne(fcntl(r1, F_GETFD) & FD_CLOEXEC, 0);
    ck_assert_int_ne(fcntl(r1, F_GETFL) & O_NONBLOCK, 0);
    ck_assert_uint_eq(watchers(ch), 2);
    sl_chan_free(ch);
    /* Single-threaded: nothing can have reused the numbers yet. */
    ck_assert_int_eq(fcntl(r1, F_GETFD), -1);
    ck_assert_int_eq(errno, EBADF);
    ck_assert_int_eq(fcntl(s1, F_GETFD), -1);
}
END_TEST

/* The receive end's level cycle, several rounds, on every flavour. */
START_TEST(test_recv_level_cycle)
{
    sl_flavor f = all_flavors[_i];
    sl_chan *ch = chan8(f, 8);
    int fd;
    uint64_t v, out;
    ck_assert_int_eq(sl_chan_fd(ch, SL_END_RECV, &fd), SL_OK);
    ck_assert(readable(fd)); /* starts signalled */
    ck_assert_int_eq(sl_chan_try_recv(ch, &out), SL_EMPTY);
    ck_assert_msg(!readable(fd), "%s: SL_EMPTY did not re-arm", sl_test_flavor_name(f));
    for (uint64_t round = 0; round < 5; round++) {
        for (v = 0; v <= round; v++)
            ck_assert_int_eq(sl_chan_try_send(ch, &v), SL_OK);
        ck_assert_msg(readable(fd), "%s round %llu: a send left it unreadable",
                      sl_test_flavor_name(f), ULL(round));
        for (v = 0; v <= round; v++) {
            ck_assert_int_eq(sl_chan_try_recv(ch, &out), SL_OK);
            ck_assert_uint_eq(out, v);
        }
        ck_assert(readable(fd)); /* no try has failed yet */
        ck_assert_int_eq(sl_chan_try_recv(ch, &out), SL_EMPTY);
        ck_assert(!readable(fd));
        ck_assert_int_eq(sl_chan_try_recv(ch, &out), SL_EMPTY); /* armed: stays so */
        ck_assert(!readable(fd));
    }
    sl_chan_free(ch);
}
END_TEST

/* A message sent while the re-arm resets the descriptor is returned by the
 * re-arming try itself: the re-check. The send is injected at the reset
 * (the sysops seam's eventfd_reset), before the flag is armed, so the send
 * finds the flag down and writes nothing: only the re-check can find it. */
static sl_chan *inject_into;

static void reset_then_send(int fd)
{
    sl_test_sys_base()->eventfd_reset(fd);
    sl_chan *ch = inject_into;
    if (ch) {
        inject_into = NULL;
        uint64_t v = 42;
        CHECK(sl_chan_try_send(ch, &v) == SL_OK, "injected send");
    }
}

START_TEST(test_rearm_rechecks)
{
    sl_chan *ch = chan8(all_flavors[_i], 8);
    int fd;
    uint64_t out = 0, v = 1;
    ck_assert_int_eq(sl_chan_fd(ch, SL_END_RECV, &fd), SL_OK);
    /* A re-arm with the flag down (signalled) and the eventfd already read
     * (a signaller between its exchange and its write): the try resets and
     * arms, so the next send signals. */
    ck_assert_int_eq(sl_chan_try_recv(ch, &out), SL_EMPTY);
    atomic_store(&ch->fds[SL_END_RECV].armed, 0u);
    ck_assert_int_eq(sl_chan_try_recv(ch, &out), SL_EMPTY);
    ck_assert_uint_eq(atomic_load(&ch->fds[SL_END_RECV].armed), 1);
    ck_assert_int_eq(sl_chan_try_send(ch, &v), SL_OK);
    ck_assert(readable(fd));
    ck_assert_int_eq(sl_chan_try_recv(ch, &out), SL_OK);
    /* The re-check: the descriptor is readable (signalled, flag down); the
     * try finds the channel empty and re-arms, and a message arrives at the
     * reset. */
    static const sl_sys_ops ops = {.eventfd_reset = reset_then_send};
    inject_into = ch;
    sl_test_sys_install(&ops);
    sl_status st = sl_chan_try_recv(ch, &out);
    sl_test_sys_restore();
    ck_assert_ptr_null(inject_into);
    ck_assert_int_eq(st, SL_OK);
    ck_assert_uint_eq(out, 42);
    /* (The re-check that took a message signalled the re-armed
     * descriptor: spurious readiness, allowed.) Drained, it is armed and
     * unreadable. */
    ck_assert_int_eq(sl_chan_try_recv(ch, &out), SL_EMPTY);
    ck_assert(!readable(fd));
    ck_assert_int_eq(sl_chan_try_send(ch, &v), SL_OK);
    ck_assert(readable(fd));
    sl_chan_free(ch);
}
END_TEST

/* A receive end re-armed again and again: each time its re-check finds
 * the channel empty, a send has signalled (the flag is down) and another
 * receive took that message. The try re-arms until it finds the flag up,
 * in one frame: it once nested a re-arm per message that passed it by, so
 * a busy channel's loop thread could run out of stack (planted bug
 * CHANFD_RECHECK_NESTS). The heavy barrier after each arm (A3) is where the
 * flag is dropped, as such a signaller would: the sysops seam's membarrier,
 * called there in asymmetric mode, which the test turns on for the try. */
static sl_chan *drop_flag_of;
static unsigned flag_drops_left;
static uintptr_t barrier_sp_low, barrier_sp_high;

static int barrier_drops_flag(int cmd)
{
    (void)cmd;
    volatile char here = 0;
    uintptr_t sp = (uintptr_t)&here;
    barrier_sp_low = barrier_sp_low && barrier_sp_low < sp ? barrier_sp_low : sp;
    barrier_sp_high = barrier_sp_high > sp ? barrier_sp_high : sp;
    if (flag_drops_left) {
        flag_drops_left--;
        atomic_store(&drop_flag_of->fds[SL_END_RECV].armed, 0u);
    }
    return 0;
}

START_TEST(test_rearm_again_in_one_frame)
{
    enum { DROPS = 2000 };
    sl_chan *ch = chan8(all_flavors[_i], 8);
    int fd;
    uint64_t out = 0, v = 7;
    ck_assert_int_eq(sl_chan_fd(ch, SL_END_RECV, &fd), SL_OK);
    ck_assert_int_eq(sl_chan_try_recv(ch, &out), SL_EMPTY); /* armed */
    atomic_store(&ch->fds[SL_END_RECV].armed, 0u);          /* signalled, taken */
    static const sl_sys_ops ops = {.membarrier = barrier_drops_flag};
    drop_flag_of = ch;
    flag_drops_left = DROPS;
    barrier_sp_low = barrier_sp_high = 0;
    int mode = atomic_load(&sl__event_asymmetric);
    atomic_store(&sl__event_asymmetric, 1);
    sl_test_sys_install(&ops);
    sl_status st = sl_chan_try_recv(ch, &out);
    sl_test_sys_restore();
    atomic_store(&sl__event_asymmetric, mode);
    ck_assert_int_eq(st, SL_EMPTY);
    ck_assert_uint_eq(flag_drops_left, 0); /* armed again after every drop */
    ck_assert_msg(barrier_sp_high - barrier_sp_low < 1024,
                  "the stack grew %zu bytes over %d re-arms",
                  (size_t)(barrier_sp_high - barrier_sp_low), DROPS);
    /* Armed once the drops stop: unreadable, and the next send signals. */
    ck_assert(!readable(fd));
    ck_assert_int_eq(sl_chan_try_send(ch, &v), SL_OK);
    ck_assert(readable(fd));
    ck_assert_int_eq(sl_chan_try_recv(ch, &out), SL_OK);
    ck_assert_uint_eq(out, 7);
    sl_chan_free(ch);
}
END_TEST

/* Changes made while the flag is down, before a re-arm's reset, which
 * wipes their signal: two sends (the re-check takes one) or a close (the
 * re-check says SL_CLOSED). The descriptor must be readable afterwards:
 * a loop that saw SL_EMPTY before would otherwise sleep with a message in
 * the channel, or for good after the close (found by review; planted bug
 * CHANFD_RECHECK_TAKES_ALL). The flag is down because a send signalled the
 * descriptor and another receive took that message. */
static sl_chan *meddle_with;
static bool meddle_closes;

static void meddle_then_reset(int fd)
{
    sl_chan *ch = meddle_with;
    if (ch) {
        meddle_with = NULL;
        uint64_t v = 5;
        if (meddle_closes)
            sl_chan_close(ch);
        else
            CHECK(sl_chan_try_send(ch, &v) == SL_OK && sl_chan_try_send(ch, &v) == SL_OK,
                  "two sends at the reset");
    }
    sl_test_sys_base()->eventfd_reset(fd);
}

START_TEST(test_rearm_keeps_earlier_changes)
{
    sl_flavor f = all_flavors[_i / 2];
    meddle_closes = _i % 2;
    sl_chan *ch = chan8(f, 8);
    int fd;
    uint64_t out = 0, v = 1;
    ck_assert_int_eq(sl_chan_fd(ch, SL_END_RECV, &fd), SL_OK);
    ck_assert_int_eq(sl_chan_try_recv(ch, &out), SL_EMPTY); /* armed */
    ck_assert_int_eq(sl_chan_try_send(ch, &v), SL_OK);      /* signalled: flag down */
    ck_assert(readable(fd));
    ck_assert_int_eq(sl_chan_try_recv(ch, &out), SL_OK);    /* another receiver's take */
    static const sl_sys_ops ops = {.eventfd_reset = meddle_then_reset};
    meddle_with = ch;
    sl_test_sys_install(&ops);
    sl_status st = sl_chan_try_recv(ch, &out); /* empty: re-arms, the changes at its reset */
    sl_test_sys_restore();
    ck_assert_ptr_null(meddle_with);
    ck_assert_int_eq(st, meddle_closes ? SL_CLOSED : SL_OK);
    ck_assert_msg(readable(fd), "%s: the descriptor is not readable %s", sl_test_flavor_name(f),
                  meddle_closes ? "after the close" : "with a message in the channel");
    if (!meddle_closes) {
        ck_assert_int_eq(sl_chan_try_recv(ch, &out), SL_OK);
        ck_assert_int_eq(sl_chan_try_recv(ch, &out), SL_EMPTY);
    } else {
        ck_assert_int_eq(sl_chan_try_recv(ch, &out), SL_CLOSED);
        ck_assert(readable(fd));
    }
    sl_chan_free(ch);
}
END_TEST

/* A thread blocked in a channel whose end has a descriptor: its retries
 * leave the armed end as they find it, so the wait makes no read(2) a
 * retry (it made one on each of ~20 tries in a 2 ms wait: planted bug
 * CHANFD_RETRY_RESETS), and the end still signals the next change. Cases:
 * a timed receive, a timed select, a timed send on a full channel (the
 * bounded flavours). The call's own first try resets as any try does. */
static _Atomic unsigned resets_seen;

static void count_reset(int fd)
{
    atomic_fetch_add(&resets_seen, 1u);
    sl_test_sys_base()->eventfd_reset(fd);
}

static sl_status wait_2ms(sl_chan *ch, int how)
{
    uint64_t v = 7;
    if (how == 2)
        return sl_chan_send_for(ch, &v, 2000000);
    if (how == 0)
        return sl_chan_recv_for(ch, &v, 2000000);
    size_t index = 99;
    sl_select_case c = {.ch = ch, .op = SL_SEL_RECV, .buf = &v};
    return sl_select(&c, 1, 2000000, &index);
}

START_TEST(test_waits_leave_armed_end)
{
    sl_flavor f = all_flavors[_i / 3];
    int how = _i % 3; /* 0 receive, 1 select, 2 send */
    if (how == 2 && (f == SL_LIST || f == SL_RING))
        return; /* never full */
    sl_chan *ch = chan8(f, 4);
    unsigned end = how == 2 ? SL_END_SEND : SL_END_RECV;
    int fd;
    uint64_t v = 1;
    ck_assert_int_eq(sl_chan_fd(ch, end, &fd), SL_OK);
    if (how == 2) {
        while (sl_chan_try_send(ch, &v) == SL_OK)
            ;
    } else {
        ck_assert_int_eq(sl_chan_try_recv(ch, &v), SL_EMPTY);
    }
    ck_assert(!readable(fd)); /* armed by the failed try */
    static const sl_sys_ops ops = {.eventfd_reset = count_reset};
    atomic_store(&resets_seen, 0u);
    sl_test_sys_install(&ops);
    sl_status st = wait_2ms(ch, how);
    sl_test_sys_restore();
    ck_assert_int_eq(st, SL_TIMEDOUT);
    ck_assert_msg(atomic_load(&resets_seen) <= 1, "%s, case %d: %u resets in one wait",
                  sl_test_flavor_name(f), how, atomic_load(&resets_seen));
    ck_assert(!readable(fd));
    if (how == 2)
        ck_assert_int_eq(sl_chan_try_recv(ch, &v), SL_OK);
    else
        ck_assert_int_eq(sl_chan_try_send(ch, &v), SL_OK);
    ck_assert(readable(fd));
    sl_chan_free(ch);
}
END_TEST

/* Close makes an armed descriptor readable, and it stays readable: the
 * drain ends in SL_CLOSED, never SL_EMPTY. Both ends. */
START_TEST(test_close_readable)
{
    sl_flavor f = all_flavors[_i];
    sl_chan *ch = chan8(f, 2);
    int rfd, sfd;
    uint64_t v = 7, out;
    ck_assert_int_eq(sl_chan_fd(ch, SL_END_RECV, &rfd), SL_OK);
    ck_assert_int_eq(sl_chan_fd(ch, SL_END_SEND, &sfd), SL_OK);
    ck_assert_int_eq(sl_chan_try_recv(ch, &out), SL_EMPTY);
    ck_assert(!readable(rfd));
    if (f == SL_MPMC || f == SL_SPSC) {
        while (sl_chan_try_send(ch, &v) == SL_OK)
            ;
        ck_assert(!readable(sfd));
    }
    sl_chan_close(ch);
    ck_assert(readable(rfd) && readable(sfd));
    while (sl_chan_try_recv(ch, &out) == SL_OK)
        ck_assert(readable(rfd));
    ck_assert_int_eq(sl_chan_try_recv(ch, &out), SL_CLOSED);
    ck_assert_int_eq(sl_chan_try_send(ch, &v), SL_CLOSED);
    ck_assert(readable(rfd) && readable(sfd));
    sl_chan_free(ch);
}
END_TEST

/* The send end of a bounded channel: SL_FULL re-arms, a receive signals. An
 * unbounded or evicting channel never says SL_FULL: always readable. */
START_TEST(test_send_level_cycle)
{
    sl_flavor f = all_flavors[_i];
    sl_chan *ch = chan8(f, 4);
    int fd;
    uint64_t v = 1, out;
    ck_assert_int_eq(sl_chan_fd(ch, SL_END_SEND, &fd), SL_OK);
    ck_assert(readable(fd));
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 4; i++)
            ck_assert_int_eq(sl_chan_try_send(ch, &v), SL_OK);
        if (f == SL_LIST || f == SL_RING) {
            ck_assert_int_eq(sl_chan_try_send(ch, &v), f == SL_LIST ? SL_OK : SL_EVICTED);
            ck_assert(readable(fd));
            sl_chan_free(ch);
            return;
        }
        ck_assert(readable(fd)); /* nothing has failed yet */
        ck_assert_int_eq(sl_chan_try_send(ch, &v), SL_FULL);
        ck_assert(!readable(fd));
        ck_assert_int_eq(sl_chan_try_recv(ch, &out), SL_OK);
        ck_assert_msg(readable(fd), "%s: room made, not readable", sl_test_flavor_name(f));
        ck_assert_int_eq(sl_chan_try_send(ch, &v), SL_OK);
        for (int i = 0; i < 4; i++)
            ck_assert_int_eq(sl_chan_try_recv(ch, &out), SL_OK);
    }
    sl_chan_free(ch);
}
END_TEST

/* The other single-message forms go through the same try: a timed receive
 * with timeout 0 and a select poll re-arm; a batch receive does not. */
START_TEST(test_other_forms_rearm)
{
    sl_chan *ch = chan8(SL_MPMC, 4);
    int fd;
    uint64_t v = 3, out[2];
    size_t idx;
    ck_assert_int_eq(sl_chan_fd(ch, SL_END_RECV, &fd), SL_OK);
    ck_assert_uint_eq(sl_chan_try_recv_n(ch, out, 2), 0);
    ck_assert(readable(fd)); /* batches leave it */
    ck_assert_int_eq(sl_chan_recv_for(ch, out, 0), SL_TIMEDOUT);
    ck_assert(!readable(fd));
    ck_assert_int_eq(sl_chan_try_send(ch, &v), SL_OK);
    ck_assert(readable(fd));
    sl_select_case c = {.ch = ch, .op = SL_SEL_RECV, .buf = out};
    ck_assert_int_eq(sl_select(&c, 1, 0, &idx), SL_OK);
    ck_assert(readable(fd));
    ck_assert_int_eq(sl_select(&c, 1, 0, &idx), SL_TIMEDOUT);
    ck_assert(!readable(fd));
    ck_assert_int_eq(sl_chan_recv_for(ch, out, 1 * MS), SL_TIMEDOUT);
    ck_assert(!readable(fd));
    sl_chan_free(ch);
}
END_TEST

SL_CHAN_TYPED(u64_chan, uint64_t);

START_TEST(test_typed)
{
    u64_chan *c;
    sl_chan_opts o = {.flavor = SL_MPMC, .capacity = 2};
    int fd;
    uint64_t v = 5, out = 0;
    ck_assert_int_eq(u64_chan_new(&c, &o), SL_OK);
    ck_assert_int_eq(u64_chan_fd(c, SL_END_RECV, &fd), SL_OK);
    ck_assert_int_eq(u64_chan_try_recv(c, &out), SL_EMPTY);
    ck_assert(!readable(fd));
    ck_assert_int_eq(u64_chan_try_send(c, &v), SL_OK);
    ck_assert(readable(fd));
    ck_assert_int_eq(u64_chan_try_recv(c, &out), SL_OK);
    ck_assert_uint_eq(out, 5);
    u64_chan_free(c);
}
END_TEST

static int emfile(unsigned initval)
{
    (void)initval;
    return -EMFILE;
}

/* A refused descriptor: SL_ENOMEM, nothing changed, a later call works. */
START_TEST(test_eventfd_refused)
{
    sl_chan *ch = chan8(SL_MPMC, 4);
    int fd = -7;
    uint64_t v = 9, out;
    static const sl_sys_ops ops = {.eventfd = emfile};
    sl_test_sys_install(&ops);
    ck_assert_int_eq(sl_chan_fd(ch, SL_END_RECV, &fd), SL_ENOMEM);
    sl_test_sys_restore();
    ck_assert_int_eq(fd, -7);
    ck_assert_uint_eq(watchers(ch), 0);
    ck_assert_int_eq(sl_chan_try_send(ch, &v), SL_OK);
    ck_assert_int_eq(sl_chan_try_recv(ch, &out), SL_OK);
    ck_assert_int_eq(sl_chan_fd(ch, SL_END_RECV, &fd), SL_OK);
    ck_assert(readable(fd));
    sl_chan_free(ch);
}
END_TEST

/* Threads asking at once get one descriptor and one watcher. */
typedef struct ask {
    sl_chan *ch;
    sl_test_barrier *b;
    int fd;
} ask;

static void *ask_fd(void *arg)
{
    ask *a = arg;
    sl_test_barrier_wait(a->b);
    a->fd = sl_chan_fd(a->ch, SL_END_RECV, &a->fd) == SL_OK ? a->fd : -2;
    return NULL;
}

START_TEST(test_concurrent_create)
{
    enum { T = 4 };
    sl_chan *ch = chan8(SL_MPMC, 4);
    sl_test_barrier b;
    sl_test_barrier_init(&b, T);
    pthread_t thr[T];
    ask a[T];
    for (int i = 0; i < T; i++) {
        a[i] = (ask){ch, &b, -1};
        ck_assert_int_eq(pthread_create(&thr[i], NULL, ask_fd, &a[i]), 0);
    }
    for (int i = 0; i < T; i++)
        pthread_join(thr[i], NULL);
    for (int i = 0; i < T; i++)
        ck_assert_int_eq(a[i].fd, a[0].fd);
    ck_assert_int_ge(a[0].fd, 0);
    ck_assert_uint_eq(watchers(ch), 1);
    sl_test_barrier_destroy(&b);
    sl_chan_free(ch);
}
END_TEST

/* An epoll loop on its own thread: it sleeps in epoll_wait, drains until
 * SL_EMPTY, and must see every message the main thread sends while it sleeps
 * or drains, then SL_CLOSED. The sender waits for each batch of 1024 to be
 * drained, so that the next one needs a wake of its own (a loop that slept
 * through every batch on a loaded machine once woke only at the close). */
typedef struct loop_arg {
    sl_chan *ch;
    _Atomic uint64_t got; /* read by the sender to pace its batches */
    uint64_t sum, wakes;
    sl_status last;
} loop_arg;

static void *epoll_loop(void *arg)
{
    loop_arg *l = arg;
    int fd, ep = epoll_create1(EPOLL_CLOEXEC);
    CHECK(ep >= 0 && sl_chan_fd(l->ch, SL_END_RECV, &fd) == SL_OK, "setup");
    struct epoll_event ev = {.events = EPOLLIN};
    CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == 0, "epoll_ctl");
    for (;;) {
        struct epoll_event out;
        int n = epoll_wait(ep, &out, 1, 10000); /* only a lost edge waits this long */
        CHECK(n == 1, "epoll_wait returned %d after %llu messages: a lost edge", n,
              ULL(atomic_load(&l->got)));
        l->wakes++;
        uint64_t m;
        while ((l->last = sl_chan_try_recv(l->ch, &m)) == SL_OK) {
            l->sum += m;
            atomic_fetch_add_explicit(&l->got, 1, memory_order_release);
        }
        if (l->last == SL_CLOSED)
            break;
    }
    close(ep);
    return NULL;
}

START_TEST(test_epoll_loop_thread)
{
    sl_flavor f = all_flavors[_i];
    sl_chan *ch = chan8(f, 64);
    int fd;
    ck_assert_int_eq(sl_chan_fd(ch, SL_END_RECV, &fd), SL_OK);
    loop_arg l = {.ch = ch};
    pthread_t thr;
    ck_assert_int_eq(pthread_create(&thr, NULL, epoll_loop, &l), 0);
    uint64_t n = sl_test_scaled(20000, 2000), sum = 0;
    for (uint64_t i = 1; i <= n; i++) {
        if (f == SL_RING) /* never evict: the sum must be exact */
            while (sl_chan_len(ch) >= 32)
                sched_yield();
        ck_assert_int_eq(sl_chan_send(ch, &i), SL_OK);
        sum += i;
        if ((i & 1023) == 0) {
            /* Drained: its try found SL_EMPTY and re-armed, so the next
             * batch must wake it again. */
            uint64_t deadline = sl_test_now_ns() + 10 * UINT64_C(1000000000);
            while (atomic_load_explicit(&l.got, memory_order_acquire) < i) {
                ck_assert_msg(sl_test_now_ns() < deadline, "%llu of %llu drained in 10 s",
                              ULL(atomic_load(&l.got)), ULL(i));
                sched_yield();
            }
        }
    }
    sl_chan_close(ch);
    pthread_join(thr, NULL);
    ck_assert_uint_eq(atomic_load(&l.got), n);
    ck_assert_uint_eq(l.sum, sum);
    ck_assert_int_eq(l.last, SL_CLOSED);
    ck_assert_uint_gt(l.wakes, 1);
    sl_chan_free(ch);
}
END_TEST

/* A send with a cancel pending when it enters: it signals an armed receive
 * descriptor (_i 0: SL_MPMC), or finds the channel full and re-arms its
 * send descriptor (_i 1: SL_SPSC), between its mark and its unmark. The
 * eventfd's write and read are made as system calls, not write(2) and
 * read(2), which are cancellation points: a cancel acted on there left the
 * mark up for good, and the channel never answered SL_CLOSED (found by
 * review). The cancel takes effect at the thread's next cancellation
 * point, after the send returned. */
typedef struct cancel_arg {
    sl_chan *ch;
    uint64_t v;      /* the message: not on the cancelled thread's stack, whose
                        redzones ASan cannot unpoison across the cancel's unwind */
    atomic_int sent; /* the send's status plus one; 0 while it has not returned */
} cancel_arg;

static void *send_cancel_pending(void *p)
{
    cancel_arg *a = p;
    pthread_cancel(pthread_self()); /* pending: deferred cancellation */
    atomic_store(&a->sent, (int)sl_chan_try_send(a->ch, &a->v) + 1);
    pthread_testcancel();
    return NULL;
}

START_TEST(test_send_cancel_pending)
{
    bool full = _i == 1;
    sl_chan *ch = chan8(full ? SL_SPSC : SL_MPMC, full ? 1 : 4);
    int fd;
    uint64_t v = 5;
    if (full) {
        ck_assert_int_eq(sl_chan_try_send(ch, &v), SL_OK);
        ck_assert_int_eq(sl_chan_fd(ch, SL_END_SEND, &fd), SL_OK);
    } else {
        ck_assert_int_eq(sl_chan_fd(ch, SL_END_RECV, &fd), SL_OK);
        ck_assert_int_eq(sl_chan_try_recv(ch, &v), SL_EMPTY); /* armed */
    }
    cancel_arg a = {.ch = ch, .v = 7};
    pthread_t thr;
    void *ret;
    ck_assert_int_eq(pthread_create(&thr, NULL, send_cancel_pending, &a), 0);
    ck_assert_int_eq(pthread_join(thr, &ret), 0);
    ck_assert_ptr_eq(ret, PTHREAD_CANCELED);
    ck_assert_msg(atomic_load(&a.sent) == (full ? SL_FULL : SL_OK) + 1,
                  "the send was cancelled inside (status + 1 = %d)", atomic_load(&a.sent));
    sl_chan_close(ch);
    ck_assert_int_eq(sl_chan_try_recv(ch, &v), SL_OK);
    ck_assert_uint_eq(v, full ? 5 : 7);
    ck_assert_int_eq(sl_chan_try_recv(ch, &v), SL_CLOSED);
    sl_chan_free(ch);
}
END_TEST

/* A fork()ed child's copy of the channel holds the parent's descriptors:
 * the same eventfds, shared by the fork. Its empty receive re-armed the
 * copy, and the reset read the parent's eventfd: the wake-up owed to the
 * parent's loop was gone, and the parent's flag, down, let no later send
 * write it (found by review; a shared channel's handle the same way,
 * unit_shm fd_forked_child_leaves_parents). The child's calls leave the
 * parent's descriptors alone, and its sl_chan_fd is refused. */
/* In a fork()ed child: `what` on ch, the child's copy; its exit status,
 * 0 when every answer was as expected. */
static int in_child(sl_chan *ch, int what)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        uint64_t v = 9, out;
        int fd = -1;
        if (what == 0) /* empty receives: each re-armed the copy's receive end */
            _exit((sl_chan_try_recv(ch, &out) != SL_EMPTY) |
                  (sl_chan_recv_for(ch, &out, MS) != SL_TIMEDOUT) << 1);
        if (what == 1) { /* sends to full: the last re-armed the copy's send end */
            while (sl_chan_try_send(ch, &v) == SL_OK)
                ;
            _exit(0);
        }
        _exit(sl_chan_fd(ch, SL_END_RECV, &fd) != SL_EINVAL || fd != -1);
    }
    int ws = 0;
    ck_assert_int_eq(waitpid(pid, &ws, 0), pid);
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128;
}

START_TEST(test_forked_child_leaves_parents)
{
    sl_flavor f = all_flavors[_i];
    sl_chan *ch = chan8(f, 4);
    int rfd, sfd;
    uint64_t v = 9, out = 0;
    ck_assert_int_eq(sl_chan_fd(ch, SL_END_RECV, &rfd), SL_OK);
    ck_assert_int_eq(sl_chan_fd(ch, SL_END_SEND, &sfd), SL_OK);
    ck_assert(readable(rfd) && readable(sfd)); /* made so: owed to the loop's first wait */
    ck_assert_int_eq(in_child(ch, 0), 0);
    ck_assert_msg(readable(rfd), "%s: the loop's wake-up was taken by the child's receive",
                  sl_test_flavor_name(f));
    if (f == SL_SPSC || f == SL_MPMC) { /* the others never say SL_FULL */
        ck_assert_int_eq(in_child(ch, 1), 0);
        ck_assert_msg(readable(sfd), "%s: the send end's, by the child's full send",
                      sl_test_flavor_name(f));
    }
    ck_assert_msg(in_child(ch, 2) == 0, "%s: the child's sl_chan_fd on its copy was not refused",
                  sl_test_flavor_name(f));
    ck_assert_int_eq(sl_chan_try_recv(ch, &out), SL_EMPTY); /* the parent's re-arm */
    ck_assert(!readable(rfd));
    ck_assert_int_eq(sl_chan_try_send(ch, &v), SL_OK);
    ck_assert(readable(rfd));
    ck_assert_int_eq(sl_chan_try_recv(ch, &out), SL_OK);
    ck_assert_uint_eq(out, 9);
    sl_chan_free(ch);
}
END_TEST

#if defined(SL_FAULT_INJECT) && SL_FAULT_INJECT
/* Whether fd becomes readable within ms milliseconds. */
static bool readable_within(int fd, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int r = poll(&p, 1, ms);
    ck_assert_int_ge(r, 0);
    return r == 1 && (p.revents & POLLIN);
}

/* A sender stopped at each of its steps in turn while the channel is
 * closed and the loop drains: a receive that finds it closed with that
 * send still landing says SL_EMPTY and leaves the descriptor unreadable
 * (it once stayed readable, and the loop spun until the send landed: for
 * good in a shared channel whose sender died unfound; planted bug
 * CHANFD_CLOSED_SPINS). The send's unmark then makes it readable, and the
 * loop gets the message if the send said SL_OK, then SL_CLOSED. */
START_TEST(test_close_landing_sleeps)
{
    const sl_flavor flavors[] = {SL_MPMC, SL_SPSC, SL_LIST, SL_RING};
    const sl_flavor f = flavors[_i];
    unsigned k = 1, landing = 0;
    for (;; k++) {
        sl_test_gated_send g = {.ch = chan8(f, 4), .k = k, .value = 42};
        int fd;
        uint64_t out = 0;
        ck_assert_int_eq(sl_chan_fd(g.ch, SL_END_RECV, &fd), SL_OK);
        ck_assert_int_eq(sl_chan_try_recv(g.ch, &out), SL_EMPTY); /* armed */
        pthread_t t;
        ck_assert_int_eq(pthread_create(&t, NULL, sl_test_send_gated, &g), 0);
        sl_test_wait_stopped(&g);
        sl_chan_close(g.ch);
        unsigned got = 0;
        sl_status st;
        while ((st = sl_chan_try_recv(g.ch, &out)) == SL_OK)
            got++;
        if (st == SL_EMPTY) { /* the send is in flight */
            landing++;
            ck_assert_msg(!readable(fd), "%s, sender stopped at step %u: readable while it lands",
                          sl_test_flavor_name(f), k);
        }
        atomic_store(&g.gate.go, 1);
        ck_assert_int_eq(pthread_join(t, NULL), 0);
        if (st == SL_EMPTY) {
            ck_assert_msg(readable_within(fd, 1000), "%s, sender stopped at step %u: "
                          "the landing left the descriptor unreadable", sl_test_flavor_name(f), k);
            while ((st = sl_chan_try_recv(g.ch, &out)) == SL_OK)
                got++;
        }
        ck_assert_int_eq(st, SL_CLOSED);
        ck_assert_uint_eq(got, g.st == SL_OK);
        ck_assert(readable(fd)); /* closed and drained: for good */
        sl_chan_free(g.ch);
        if (g.passed < k)
            break;
    }
    ck_assert_uint_gt(landing, 0);
}
END_TEST

/* The window the close_in_flight test does not reach: a close between a
 * re-arm's reset (A1) and its flag (A2), with a send that saw the channel
 * open still landing. The close's signal finds the flag down and writes
 * nothing; the re-check (A4) sees the close and the mark and says SL_EMPTY
 * without a signal; the landing's unmark then rings and finds the flag up
 * (docs/guarantees.md, "Close"). A sender stopped at each of its steps in
 * turn; the close made by the re-arm's reset itself. */
static sl_chan *close_at_reset;

static void close_after_reset(int fd)
{
    sl_test_sys_base()->eventfd_reset(fd);
    if (close_at_reset) { /* after A1, before A2 */
        sl_chan_close(close_at_reset);
        close_at_reset = NULL;
    }
}

START_TEST(test_close_at_reset_landing)
{
    const sl_flavor flavors[] = {SL_MPMC, SL_SPSC, SL_LIST, SL_RING};
    const sl_flavor f = flavors[_i];
    static const sl_sys_ops ops = {.eventfd_reset = close_after_reset};
    unsigned k = 1, window = 0;
    for (;; k++) {
        sl_test_gated_send g = {.ch = chan8(f, 4), .k = k, .value = 42};
        int fd;
        uint64_t out = 0;
        ck_assert_int_eq(sl_chan_fd(g.ch, SL_END_RECV, &fd), SL_OK);
        ck_assert_int_eq(sl_chan_try_recv(g.ch, &out), SL_EMPTY); /* armed */
        uint64_t v = 1;
        ck_assert_int_eq(sl_chan_try_send(g.ch, &v), SL_OK); /* signalled: the flag down */
        ck_assert_int_eq(sl_chan_try_recv_n(g.ch, &out, 1), 1); /* taken by a batch: no re-arm */
        pthread_t t;
        ck_assert_int_eq(pthread_create(&t, NULL, sl_test_send_gated, &g), 0);
        sl_test_wait_stopped(&g);
        close_at_reset = g.ch;
        sl_test_sys_install(&ops);
        sl_status st = sl_chan_try_recv(g.ch, &out); /* empty and open: re-arms */
        sl_test_sys_restore();
        bool met = close_at_reset == NULL; /* the re-arm's reset closed it */
        close_at_reset = NULL;
        unsigned got = st == SL_OK;
        if (met && st == SL_EMPTY) { /* the send is in flight */
            window++;
            ck_assert_msg(!readable(fd), "%s, sender stopped at step %u: readable while it lands",
                          sl_test_flavor_name(f), k);
        }
        if (!met)
            sl_chan_close(g.ch);
        atomic_store(&g.gate.go, 1);
        ck_assert_int_eq(pthread_join(t, NULL), 0);
        ck_assert_msg(readable_within(fd, 1000), "%s, sender stopped at step %u: "
                      "the landing left the descriptor unreadable", sl_test_flavor_name(f), k);
        while ((st = sl_chan_try_recv(g.ch, &out)) == SL_OK)
            got++;
        ck_assert_int_eq(st, SL_CLOSED);
        ck_assert_uint_eq(got, g.st == SL_OK);
        ck_assert(readable(fd));
        sl_chan_free(g.ch);
        if (g.passed < k)
            break;
    }
    ck_assert_uint_gt(window, 0);
}
END_TEST

/* A try_recv stopped at its k-th step, as sl_test_send_gated's send. */
typedef struct gated_recv {
    sl_chan *ch;
    unsigned k, passed;
    sl_status st;
    sl_test_gate gate;
} gated_recv;

static void *recv_gated(void *arg)
{
    gated_recv *g = arg;
    uint64_t out;
    sl__fi_arm(g->k, sl_test_gate_stop, &g->gate);
    g->st = sl_chan_try_recv(g->ch, &out);
    g->passed = sl__fi_disarm();
    atomic_store(&g->gate.stopped, 1);
    return NULL;
}

/* Tries at `end` until one fails (empty, full); the status of the last. */
static sl_status try_until_refused(sl_chan *ch, unsigned end)
{
    uint64_t v = 5;
    sl_status st;
    while ((st = end == SL_END_RECV ? sl_chan_try_recv(ch, &v) : sl_chan_try_send(ch, &v)) ==
           SL_OK)
        ;
    return st;
}

/* A signal of `end` stopped at each of its steps in turn (a send for the
 * receive end, a receive for the send end), while the loop's own tries
 * meet the change and re-arm the end anew. A write of the stopped signal,
 * which took down the flag of the re-arm before, then landed after the new
 * reset with the flag up: the descriptor stayed readable while every try
 * failed and re-armed nothing, and the loop spun until the next change
 * (found under load: the shared channel's loop woke up to 10,175 times in
 * 300 ms). A failed try now always resets. */
START_TEST(test_stale_signal_rearmed)
{
    const sl_flavor flavors[] = {SL_MPMC, SL_SPSC, SL_LIST, SL_RING};
    const sl_flavor f = flavors[_i / 2];
    const unsigned end = _i % 2 ? SL_END_SEND : SL_END_RECV;
    if (end == SL_END_SEND && (f == SL_LIST || f == SL_RING))
        return; /* no send is ever refused for room */
    for (unsigned k = 1;; k++) {
        sl_chan *ch = chan8(f, 1);
        int fd;
        uint64_t v = 3;
        ck_assert_int_eq(sl_chan_fd(ch, end, &fd), SL_OK);
        if (end == SL_END_SEND)
            ck_assert_int_eq(sl_chan_try_send(ch, &v), SL_OK);
        ck_assert_int_ne(try_until_refused(ch, end), SL_OK); /* armed */
        sl_test_gated_send gs = {.ch = ch, .k = k, .value = 42};
        gated_recv gr = {.ch = ch, .k = k};
        sl_test_gate *gate = end == SL_END_RECV ? &gs.gate : &gr.gate;
        pthread_t t;
        ck_assert_int_eq(pthread_create(&t, NULL, end == SL_END_RECV ? sl_test_send_gated
                                                                     : recv_gated,
                                        end == SL_END_RECV ? (void *)&gs : (void *)&gr),
                         0);
        while (!atomic_load(&gate->stopped))
            sl_test_sleep_ns(MS / 10);
        (void)try_until_refused(ch, end); /* meets the change, re-arms */
        atomic_store(&gate->go, 1);
        ck_assert_int_eq(pthread_join(t, NULL), 0);
        unsigned wakes = 0;
        while (wakes < 100 && readable(fd)) {
            wakes++;
            (void)try_until_refused(ch, end);
        }
        ck_assert_msg(wakes < 100, "%s %s end, signal stopped at step %u: readable after "
                      "every try failed", sl_test_flavor_name(f),
                      end == SL_END_RECV ? "receive" : "send", k);
        sl_chan_free(ch);
        if ((end == SL_END_RECV ? gs.passed : gr.passed) < k)
            break;
    }
}
END_TEST
#endif

/* A signal made after a failed try, on an end whose flag is up, before the
 * re-arm's reset (A1): the signal takes the flag down and writes, the reset
 * wipes the write, and the re-arm's exchange (A2) finds the flag down, so
 * its look (A4) must run and find the change. It is the exchange's answer,
 * not the flag as an earlier load saw it, that lets a re-arm skip the look
 * (docs/guarantees.md, "A re-arm that finds the end armed already"; planted
 * bug CHANFD_QUIET_ON_LOAD: the loop would sleep with a message in the
 * channel, or with room). A send for the receive end, a receive for the
 * send end. */
static sl_chan *signal_with;
static unsigned signal_end_of;

static void signal_then_reset(int fd)
{
    sl_chan *ch = signal_with;
    if (ch) {
        signal_with = NULL;
        uint64_t v = 6;
        CHECK((signal_end_of == SL_END_RECV ? sl_chan_try_send(ch, &v)
                                            : sl_chan_try_recv(ch, &v)) == SL_OK,
              "a signal before the reset");
    }
    sl_test_sys_base()->eventfd_reset(fd);
}

START_TEST(test_rearm_armed_signal_before_reset)
{
    const sl_flavor f = all_flavors[_i / 2];
    const unsigned end = _i % 2 ? SL_END_SEND : SL_END_RECV;
    if (end == SL_END_SEND && (f == SL_LIST || f == SL_RING))
        return; /* no send is ever refused for room */
    const size_t cap = 2;
    sl_chan *ch = chan8(f, cap);
    int fd;
    uint64_t v = 1;
    ck_assert_int_eq(sl_chan_fd(ch, end, &fd), SL_OK);
    for (size_t i = 0; end == SL_END_SEND && i < cap; i++)
        ck_assert_int_eq(sl_chan_try_send(ch, &v), SL_OK);
    ck_assert_int_ne(end == SL_END_RECV ? sl_chan_try_recv(ch, &v) : sl_chan_try_send(ch, &v),
                     SL_OK); /* armed: the flag up */
    ck_assert(!readable(fd));
    static const sl_sys_ops ops = {.eventfd_reset = signal_then_reset};
    signal_with = ch;
    signal_end_of = end;
    sl_test_sys_install(&ops);
    sl_status st = end == SL_END_RECV ? sl_chan_try_recv(ch, &v) : sl_chan_try_send(ch, &v);
    sl_test_sys_restore();
    ck_assert_ptr_null(signal_with); /* the try re-armed */
    size_t len = sl_chan_len(ch);
    bool ready = end == SL_END_RECV ? len > 0 : len < cap;
    ck_assert_msg(!ready || readable(fd), "%s %s end: %s and the descriptor unreadable",
                  sl_test_flavor_name(f), end == SL_END_RECV ? "receive" : "send",
                  end == SL_END_RECV ? "a message in the channel" : "room");
    /* The receive end's look takes the message itself (signalling, as a
     * re-check that took one does); the send end's finds the room and
     * signals it. */
    const sl_status want = end == SL_END_RECV ? SL_OK : SL_FULL;
    ck_assert_int_eq(st, want);
    ck_assert(readable(fd));
    /* The level cycle goes on: a failed try leaves it unreadable. */
    if (end == SL_END_RECV)
        while (sl_chan_try_recv(ch, &v) == SL_OK)
            ;
    else
        while (sl_chan_try_send(ch, &v) == SL_OK)
            ;
    ck_assert(!readable(fd));
    sl_chan_free(ch);
}
END_TEST

/* A loop may take a timed form's first try as its try (timeout 0, or a
 * short timeout): that try resets an armed end as sl_chan_try_* does, and
 * only the wait's later tries leave it as it is. The end here is armed (its
 * flag up) and readable, as a signal stopped between taking down an
 * earlier re-arm's flag and its write leaves it once the write lands
 * (stale_signal makes that schedule in the faults build; the write is made
 * here by hand). A first try that left it so made the loop spin until the
 * next change (planted bug CHANFD_FIRST_TRY_SKIPS: a timed receive's first
 * try counted as a retry). Forms: 0 try, 1 timed with 0, 2 timed with
 * 1 ms, 3 select with 0, 4 select with 1 ms; the receive end, then the
 * send end of the bounded flavours. */
enum { LATE_FORMS = 5 };

static sl_status refused_by_form(sl_chan *ch, unsigned end, int form)
{
    uint64_t v = 9;
    size_t index;
    sl_select_case c = {.ch = ch, .op = end == SL_END_RECV ? SL_SEL_RECV : SL_SEL_SEND,
                        .buf = &v};
    switch (form) {
    case 0:
        return end == SL_END_RECV ? sl_chan_try_recv(ch, &v) : sl_chan_try_send(ch, &v);
    case 1:
    case 2: {
        uint64_t t = form == 1 ? 0 : MS;
        return end == SL_END_RECV ? sl_chan_recv_for(ch, &v, t) : sl_chan_send_for(ch, &v, t);
    }
    default:
        return sl_select(&c, 1, form == 3 ? 0 : MS, &index);
    }
}

START_TEST(test_first_try_resets_late_write)
{
    const sl_flavor f = all_flavors[_i / (2 * LATE_FORMS)];
    const unsigned end = (_i / LATE_FORMS) % 2 ? SL_END_SEND : SL_END_RECV;
    const int form = _i % LATE_FORMS;
    if (end == SL_END_SEND && (f == SL_LIST || f == SL_RING))
        return; /* never full */
    sl_chan *ch = chan8(f, 2);
    int fd;
    uint64_t v = 1;
    ck_assert_int_eq(sl_chan_fd(ch, end, &fd), SL_OK);
    for (int i = 0; end == SL_END_SEND && i < 2; i++)
        ck_assert_int_eq(sl_chan_try_send(ch, &v), SL_OK);
    ck_assert_int_ne(refused_by_form(ch, end, 0), SL_OK); /* armed: the flag up */
    ck_assert(!readable(fd));
    uint64_t one = 1; /* the late write */
    ck_assert_int_eq(write(fd, &one, sizeof one), (ssize_t)sizeof one);
    ck_assert(readable(fd));
    sl_status st = refused_by_form(ch, end, form);
    ck_assert_msg(st == SL_EMPTY || st == SL_FULL || st == SL_TIMEDOUT, "%s", sl_status_str(st));
    ck_assert_msg(!readable(fd), "%s %s end, form %d: readable after its failed try",
                  sl_test_flavor_name(f), end == SL_END_RECV ? "receive" : "send", form);
    /* Armed still: the next change signals it. */
    ck_assert_int_eq(end == SL_END_RECV ? sl_chan_try_send(ch, &v) : sl_chan_try_recv(ch, &v),
                     SL_OK);
    ck_assert(readable(fd));
    sl_chan_free(ch);
}
END_TEST

static Suite *chanfd_suite(void)
{
    Suite *s = suite_create("chanfd");
    TCase *tc = tcase_create("contract");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_bad_input);
    tcase_add_loop_test(tc, test_same_fd_and_free, 0, N_OF(all_flavors));
    tcase_add_loop_test(tc, test_recv_level_cycle, 0, N_OF(all_flavors));
    tcase_add_loop_test(tc, test_rearm_rechecks, 0, N_OF(all_flavors));
    tcase_add_loop_test(tc, test_rearm_keeps_earlier_changes, 0, 2 * N_OF(all_flavors));
    tcase_add_loop_test(tc, test_rearm_armed_signal_before_reset, 0, 2 * N_OF(all_flavors));
    tcase_add_loop_test(tc, test_rearm_again_in_one_frame, 0, N_OF(all_flavors));
    tcase_add_loop_test(tc, test_waits_leave_armed_end, 0, 3 * N_OF(all_flavors));
    tcase_add_loop_test(tc, test_first_try_resets_late_write, 0,
                        2 * LATE_FORMS * N_OF(all_flavors));
    tcase_add_loop_test(tc, test_close_readable, 0, N_OF(all_flavors));
    tcase_add_loop_test(tc, test_send_level_cycle, 0, N_OF(all_flavors));
    tcase_add_test(tc, test_other_forms_rearm);
    tcase_add_test(tc, test_typed);
    tcase_add_test(tc, test_eventfd_refused);
    tcase_add_test(tc, test_concurrent_create);
    tcase_add_loop_test(tc, test_send_cancel_pending, 0, 2);
    tcase_add_loop_test(tc, test_forked_child_leaves_parents, 0, N_OF(all_flavors));
    suite_add_tcase(s, tc);

#if defined(SL_FAULT_INJECT) && SL_FAULT_INJECT
    tc = tcase_create("close_in_flight");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_close_landing_sleeps, 0, 4);
    tcase_add_loop_test(tc, test_close_at_reset_landing, 0, 4);
    suite_add_tcase(s, tc);
    tc = tcase_create("stale_signal");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_stale_signal_rearmed, 0, 8);
    suite_add_tcase(s, tc);
#endif

    tc = tcase_create("loop");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_epoll_loop_thread, 0, N_OF(all_flavors));
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sl_test_run(chanfd_suite());
}
