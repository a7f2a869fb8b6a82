/*
 * tests/unit_park.c — the eventcount (sluice/park.h) and its clock helpers.
 *
 * The system-call layer is replaced over the harness's base table
 * (sl_test_sys_install, tests/harness.h; include/internal/sysops.h)
 * to count futex calls and to inject spurious wake-ups, EINTR and early
 * time-outs. Check runs every test in its own process, so a replaced table
 * never leaks into another test; each test restores it anyway.
 */
#include "harness.h"

#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include <sluice/chan.h>
#include <sluice/park.h>
#include <sluice/select.h>
#include "sysops.h"
#include "await.h"

/* ---- a counting / fault-injecting system-call table ---------------------- */

enum inject_mode {
    INJ_NONE = 0,
    INJ_SPURIOUS,  /* futex_wait returns 0 without sleeping */
    INJ_EINTR,     /* futex_wait returns -EINTR */
    INJ_ETIMEDOUT, /* futex_wait returns -ETIMEDOUT at once, before the deadline */
};

static _Atomic unsigned long n_wait_calls;
static _Atomic unsigned long n_wake_calls;
static _Atomic unsigned long n_now_calls;
static _Atomic int inject_mode;
/* Injected results left before the real call takes over (-1: no count limit). */
static _Atomic long inject_left;
/* When non-zero, inject only until this CLOCK_MONOTONIC time. */
static _Atomic uint64_t inject_until_ns;

static int counting_futex_wait(SL_ATOMIC(uint32_t) *word, uint32_t expected, uint64_t deadline_ns)
{
    atomic_fetch_add(&n_wait_calls, 1);
    int mode = atomic_load(&inject_mode);
    if (mode != INJ_NONE) {
        long left = atomic_load(&inject_left);
        uint64_t until = atomic_load(&inject_until_ns);
        bool inject = left < 0 && (until == 0 || sl_test_now_ns() < until);
        while (!inject && left > 0) {
            if (atomic_compare_exchange_weak(&inject_left, &left, left - 1))
                inject = true;
        }
        if (inject) {
            sched_yield();
            switch (mode) {
            case INJ_SPURIOUS: return 0;
            case INJ_EINTR: return -EINTR;
            default: return -ETIMEDOUT;
            }
        }
    }
    return sl__sys_default_ops.futex_wait(word, expected, deadline_ns);
}

static int counting_futex_wake(SL_ATOMIC(uint32_t) *word, int count)
{
    atomic_fetch_add(&n_wake_calls, 1);
    return sl__sys_default_ops.futex_wake(word, count);
}

static uint64_t counting_now_ns(void)
{
    atomic_fetch_add(&n_now_calls, 1);
    return sl__sys_default_ops.now_ns();
}

static const sl_sys_ops counting_ops = {
    .futex_wait = counting_futex_wait,
    .futex_wake = counting_futex_wake,
    .now_ns = counting_now_ns,
};

static unsigned long wake_calls(void) { return atomic_load(&n_wake_calls); }
static unsigned long wait_calls(void) { return atomic_load(&n_wait_calls); }

static void install_counting(int mode, long left)
{
    atomic_store(&n_wait_calls, 0);
    atomic_store(&n_wake_calls, 0);
    atomic_store(&n_now_calls, 0);
    atomic_store(&inject_mode, mode);
    atomic_store(&inject_left, left);
    atomic_store(&inject_until_ns, 0);
    sl_test_sys_install(&counting_ops);
}

static void restore_ops(void)
{
    sl_test_sys_restore();
}

/* ---- a waiter thread: prepare, then wait once ------------------------------ */

typedef struct waiter {
    pthread_t thr;
    sl_event *ev;
    uint64_t timeout_ns;     /* relative, turned into a deadline after prepare */
    _Atomic int registered;  /* set after prepare */
    _Atomic int done;        /* set after wait returned */
    sl_status result;
    int seen_payload;
    const int *payload;      /* read (plainly) after wait returns */
} waiter;

static void *waiter_main(void *arg)
{
    waiter *w = arg;
    uint32_t key = sl_event_prepare(w->ev);
    atomic_store(&w->registered, 1);
    w->result = sl_event_wait(w->ev, key, sl_deadline_after(w->timeout_ns));
    if (w->payload && w->result == SL_OK)
        w->seen_payload = *w->payload;
    atomic_store(&w->done, 1);
    return NULL;
}

static void waiter_start(waiter *w, sl_event *ev, uint64_t timeout_ns, const int *payload)
{
    w->ev = ev;
    w->payload = payload;
    w->timeout_ns = timeout_ns;
    atomic_store(&w->registered, 0);
    atomic_store(&w->done, 0);
    w->result = (sl_status)-1;
    w->seen_payload = 0;
    ck_assert_int_eq(pthread_create(&w->thr, NULL, waiter_main, w), 0);
}

/* Spins (politely) until each of the n waiter threads has registered. */
static void await_registered(waiter *w, int n)
{
    uint64_t give_up = sl_test_now_ns() + 20 * SEC;
    for (int i = 0; i < n; i++) {
        while (!atomic_load(&w[i].registered)) {
            ck_assert_msg(sl_test_now_ns() < give_up, "waiter %d never registered", i);
            sched_yield();
        }
    }
}

/* ---- basic bookkeeping ----------------------------------------------------- */

START_TEST(test_init_no_waiters)
{
    sl_event ev;
    sl_event_init(&ev);
    ck_assert_uint_eq(sl_event_waiters(&ev), 0);
}
END_TEST

/* Bad input: every call takes a NULL eventcount without crashing. */
START_TEST(test_null_event_is_bad_input)
{
    sl_event_init(NULL);
    ck_assert_uint_eq(sl_event_prepare(NULL), 0);
    sl_event_cancel(NULL);
    ck_assert_int_eq(sl_event_wait(NULL, 0, 0), SL_EINVAL);
    ck_assert_int_eq(sl_event_wait(NULL, 0, SL_FOREVER), SL_EINVAL);
    sl_event_notify_one(NULL);
    sl_event_notify_all(NULL);
    sl_event_notify_n(NULL, 3);
    sl_event_notify_one_slow(NULL);
    sl_event_notify_all_slow(NULL);
    sl_event_notify_n_slow(NULL, 3);
    ck_assert_uint_eq(sl_event_waiters(NULL), 0);
}
END_TEST

START_TEST(test_prepare_cancel_counts)
{
    sl_event ev;
    sl_event_init(&ev);
    (void)sl_event_prepare(&ev);
    ck_assert_uint_eq(sl_event_waiters(&ev), 1);
    (void)sl_event_prepare(&ev);
    ck_assert_uint_eq(sl_event_waiters(&ev), 2);
    sl_event_cancel(&ev);
    ck_assert_uint_eq(sl_event_waiters(&ev), 1);
    sl_event_cancel(&ev);
    ck_assert_uint_eq(sl_event_waiters(&ev), 0);
}
END_TEST

START_TEST(test_wait_past_deadline_times_out)
{
    sl_event ev;
    sl_event_init(&ev);
    uint32_t key = sl_event_prepare(&ev);
    ck_assert_int_eq(sl_event_wait(&ev, key, sl_deadline_after(0)), SL_TIMEDOUT);
    ck_assert_uint_eq(sl_event_waiters(&ev), 0);

    key = sl_event_prepare(&ev);
    ck_assert_int_eq(sl_event_wait(&ev, key, 0), SL_TIMEDOUT);
    ck_assert_uint_eq(sl_event_waiters(&ev), 0);

    key = sl_event_prepare(&ev);
    ck_assert_int_eq(sl_event_wait(&ev, key, sl_now_ns() - 1), SL_TIMEDOUT);
    ck_assert_uint_eq(sl_event_waiters(&ev), 0);
}
END_TEST

START_TEST(test_wait_after_notify_one_returns_ok)
{
    sl_event ev;
    sl_event_init(&ev);
    uint32_t key = sl_event_prepare(&ev);
    sl_event_notify_one(&ev);
    /* A 5 s deadline: a wait that slept instead would report SL_TIMEDOUT. */
    ck_assert_int_eq(sl_event_wait(&ev, key, sl_deadline_after(5 * SEC)), SL_OK);
    ck_assert_uint_eq(sl_event_waiters(&ev), 0);
}
END_TEST

START_TEST(test_wait_after_notify_all_returns_ok)
{
    sl_event ev;
    sl_event_init(&ev);
    uint32_t k1 = sl_event_prepare(&ev);
    uint32_t k2 = sl_event_prepare(&ev);
    sl_event_notify_all(&ev);
    ck_assert_int_eq(sl_event_wait(&ev, k1, sl_deadline_after(5 * SEC)), SL_OK);
    ck_assert_int_eq(sl_event_wait(&ev, k2, sl_deadline_after(5 * SEC)), SL_OK);
    ck_assert_uint_eq(sl_event_waiters(&ev), 0);
}
END_TEST

START_TEST(test_wait_after_notify_forever)
{
    sl_event ev;
    sl_event_init(&ev);
    uint32_t key = sl_event_prepare(&ev);
    sl_event_notify_one_slow(&ev);
    /* Would hang (and hit the Check time-out) if the key were ignored. */
    ck_assert_int_eq(sl_event_wait(&ev, key, SL_FOREVER), SL_OK);
    ck_assert_uint_eq(sl_event_waiters(&ev), 0);
}
END_TEST

START_TEST(test_notify_without_waiters_then_wait_times_out)
{
    /* A notify before the prepare is not remembered by the new key. */
    sl_event ev;
    sl_event_init(&ev);
    sl_event_notify_one(&ev);
    sl_event_notify_all(&ev);
    uint32_t key = sl_event_prepare(&ev);
    uint64_t t0 = sl_test_now_ns();
    ck_assert_int_eq(sl_event_wait(&ev, key, sl_deadline_after(20 * MS)), SL_TIMEDOUT);
    ck_assert_uint_ge(sl_test_now_ns() - t0, 20 * MS);
}
END_TEST

START_TEST(test_key_from_previous_round_is_stale)
{
    /* After a notified round, a fresh prepare must not inherit the notify. */
    sl_event ev;
    sl_event_init(&ev);
    uint32_t key = sl_event_prepare(&ev);
    sl_event_notify_one(&ev);
    ck_assert_int_eq(sl_event_wait(&ev, key, sl_deadline_after(5 * SEC)), SL_OK);
    key = sl_event_prepare(&ev);
    ck_assert_int_eq(sl_event_wait(&ev, key, sl_deadline_after(10 * MS)), SL_TIMEDOUT);
    ck_assert_uint_eq(sl_event_waiters(&ev), 0);
}
END_TEST

/* ---- time ------------------------------------------------------------------ */

START_TEST(test_now_monotonic)
{
    uint64_t prev = sl_now_ns();
    ck_assert_uint_gt(prev, 0);
    for (int i = 0; i < 100000; i++) {
        uint64_t t = sl_now_ns();
        ck_assert_msg(t >= prev, "sl_now_ns went back: %llu after %llu",
                      (unsigned long long)t, (unsigned long long)prev);
        prev = t;
    }
    /* The same clock as CLOCK_MONOTONIC. */
    uint64_t a = sl_test_now_ns();
    uint64_t b = sl_now_ns();
    uint64_t c = sl_test_now_ns();
    ck_assert_uint_le(a, b);
    ck_assert_uint_le(b, c);
    /* It advances. */
    sl_test_sleep_ns(2 * MS);
    ck_assert_uint_ge(sl_now_ns(), b + 2 * MS);
}
END_TEST

START_TEST(test_deadline_after)
{
    uint64_t d0 = sl_deadline_after(0);
    ck_assert_uint_le(d0, sl_now_ns());
    ck_assert_uint_ne(d0, SL_FOREVER);

    ck_assert_uint_eq(sl_deadline_after(SL_FOREVER), SL_FOREVER);
    ck_assert_uint_eq(sl_deadline_after(SL_FOREVER - 1), SL_FOREVER);
    ck_assert_uint_eq(sl_deadline_after(SL_FOREVER - 1000), SL_FOREVER);
    /* Anything that overflows now + timeout saturates. */
    uint64_t now = sl_now_ns();
    ck_assert_uint_eq(sl_deadline_after(SL_FOREVER - now + 1), SL_FOREVER);
    ck_assert_uint_eq(sl_deadline_after(SL_FOREVER - now / 2), SL_FOREVER);

    /* An ordinary timeout lands between the two readings plus the timeout. */
    const uint64_t t = 3600 * SEC;
    uint64_t before = sl_test_now_ns();
    uint64_t d = sl_deadline_after(t);
    uint64_t after = sl_test_now_ns();
    ck_assert_uint_ge(d, before + t);
    ck_assert_uint_le(d, after + t);

    before = sl_test_now_ns();
    d = sl_deadline_after(1);
    after = sl_test_now_ns();
    ck_assert_uint_ge(d, before + 1);
    ck_assert_uint_le(d, after + 1);
}
END_TEST

START_TEST(test_timed_wait_not_early)
{
    sl_event ev;
    sl_event_init(&ev);
    const uint64_t timeouts[] = { 1 * MS, 5 * MS, 30 * MS };
    for (size_t i = 0; i < sizeof timeouts / sizeof timeouts[0]; i++) {
        uint32_t key = sl_event_prepare(&ev);
        uint64_t t0 = sl_test_now_ns();
        uint64_t deadline = sl_deadline_after(timeouts[i]);
        sl_status st = sl_event_wait(&ev, key, deadline);
        uint64_t t1 = sl_test_now_ns();
        ck_assert_int_eq(st, SL_TIMEDOUT);
        ck_assert_msg(t1 - t0 >= timeouts[i], "timed out after %llu ns, asked %llu",
                      (unsigned long long)(t1 - t0), (unsigned long long)timeouts[i]);
        ck_assert_uint_ge(t1, deadline);
        ck_assert_uint_eq(sl_event_waiters(&ev), 0);
    }
}
END_TEST

/* ---- cross-thread wake-ups ------------------------------------------------- */

START_TEST(test_notify_one_wakes_blocked_waiter)
{
    sl_event ev;
    sl_event_init(&ev);
    static int payload;
    waiter w;
    waiter_start(&w, &ev, 30 * SEC, &payload);
    await_registered(&w, 1);
    sl_test_sleep_ns(20 * MS);
    /* Not notified yet: still waiting. */
    ck_assert_int_eq(atomic_load(&w.done), 0);
    ck_assert_uint_eq(sl_event_waiters(&ev), 1);
    payload = 42; /* plain write, published by the notify */
    sl_event_notify_one(&ev);
    ck_assert_int_eq(pthread_join(w.thr, NULL), 0);
    ck_assert_int_eq(w.result, SL_OK);
    ck_assert_int_eq(w.seen_payload, 42);
    ck_assert_uint_eq(sl_event_waiters(&ev), 0);
}
END_TEST

START_TEST(test_notify_all_wakes_every_waiter)
{
    enum { N = 6 };
    sl_event ev;
    sl_event_init(&ev);
    waiter w[N];
    for (int i = 0; i < N; i++)
        waiter_start(&w[i], &ev, 30 * SEC, NULL);
    await_registered(w, N);
    sl_test_sleep_ns(10 * MS);
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(atomic_load(&w[i].done), 0);
    sl_event_notify_all(&ev);
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(pthread_join(w[i].thr, NULL), 0);
        ck_assert_msg(w[i].result == SL_OK, "waiter %d got %d", i, (int)w[i].result);
    }
    ck_assert_uint_eq(sl_event_waiters(&ev), 0);
}
END_TEST

START_TEST(test_two_notify_one_wake_two_waiters)
{
    sl_event ev;
    sl_event_init(&ev);
    waiter w[2];
    waiter_start(&w[0], &ev, 30 * SEC, NULL);
    waiter_start(&w[1], &ev, 30 * SEC, NULL);
    await_registered(w, 2);
    sl_test_sleep_ns(10 * MS);
    ck_assert_int_eq(atomic_load(&w[0].done), 0);
    ck_assert_int_eq(atomic_load(&w[1].done), 0);
    sl_event_notify_one(&ev);
    /* At least one leaves. */
    uint64_t give_up = sl_test_now_ns() + 20 * SEC;
    while (!atomic_load(&w[0].done) && !atomic_load(&w[1].done)) {
        ck_assert_msg(sl_test_now_ns() < give_up, "notify_one woke nobody");
        sched_yield();
    }
    sl_event_notify_one(&ev);
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(pthread_join(w[i].thr, NULL), 0);
        ck_assert_msg(w[i].result == SL_OK, "waiter %d got %d", i, (int)w[i].result);
    }
    ck_assert_uint_eq(sl_event_waiters(&ev), 0);
}
END_TEST

START_TEST(test_notify_n_wakes_n)
{
    enum { N = 4 };
    sl_event ev;
    sl_event_init(&ev);
    waiter w[N];
    for (int i = 0; i < N; i++)
        waiter_start(&w[i], &ev, 30 * SEC, NULL);
    await_registered(w, N);
    sl_test_sleep_ns(10 * MS);
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(atomic_load(&w[i].done), 0);
    sl_event_notify_n(&ev, 2);
    /* At least two leave. */
    uint64_t give_up = sl_test_now_ns() + 20 * SEC;
    for (;;) {
        int done = 0;
        for (int i = 0; i < N; i++) done += atomic_load(&w[i].done);
        if (done >= 2) break;
        ck_assert_msg(sl_test_now_ns() < give_up, "notify_n(2) woke only %d", done);
        sched_yield();
    }
    sl_event_notify_n(&ev, 2);
    sl_event_notify_n(&ev, 1000); /* more than are waiting is fine */
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(pthread_join(w[i].thr, NULL), 0);
        ck_assert_msg(w[i].result == SL_OK, "waiter %d got %d", i, (int)w[i].result);
    }
    ck_assert_uint_eq(sl_event_waiters(&ev), 0);
}
END_TEST

START_TEST(test_notify_n_zero_wakes_nobody)
{
    sl_event ev;
    sl_event_init(&ev);
    uint32_t key = sl_event_prepare(&ev);
    sl_event_notify_n(&ev, 0);
    ck_assert_int_eq(sl_event_wait(&ev, key, sl_deadline_after(10 * MS)), SL_TIMEDOUT);
    key = sl_event_prepare(&ev);
    sl_event_notify_n(&ev, 1);
    ck_assert_int_eq(sl_event_wait(&ev, key, sl_deadline_after(5 * SEC)), SL_OK);
    ck_assert_uint_eq(sl_event_waiters(&ev), 0);
}
END_TEST

START_TEST(test_blocked_waiter_times_out)
{
    sl_event ev;
    sl_event_init(&ev);
    waiter w;
    uint64_t t0 = sl_test_now_ns();
    waiter_start(&w, &ev, 40 * MS, NULL);
    ck_assert_int_eq(pthread_join(w.thr, NULL), 0);
    ck_assert_int_eq(w.result, SL_TIMEDOUT);
    ck_assert_uint_ge(sl_test_now_ns() - t0, 40 * MS);
    ck_assert_uint_eq(sl_event_waiters(&ev), 0);
}
END_TEST

/* The documented waiter protocol, ping-ponged between two threads: no lost
 * wake-ups (a lost one hangs and trips the Check time-out). */
typedef struct pingpong {
    sl_event ev[2];
    _Atomic uint64_t turn; /* even: thread 0 plays, odd: thread 1 */
    uint64_t rounds;
} pingpong;

static void pp_await(pingpong *pp, int side, uint64_t want)
{
    for (;;) {
        if (atomic_load(&pp->turn) == want) return;
        uint32_t key = sl_event_prepare(&pp->ev[side]);
        if (atomic_load(&pp->turn) == want) {
            sl_event_cancel(&pp->ev[side]);
            return;
        }
        (void)sl_event_wait(&pp->ev[side], key, SL_FOREVER);
    }
}

static void *pp_thread(void *arg)
{
    pingpong *pp = arg;
    for (uint64_t r = 1; r < pp->rounds; r += 2) {
        pp_await(pp, 1, r);
        atomic_store(&pp->turn, r + 1); /* seq_cst store, then notify */
        sl_event_notify_one(&pp->ev[0]);
    }
    return NULL;
}

START_TEST(test_pingpong_no_lost_wakeups)
{
    static pingpong pp;
    sl_event_init(&pp.ev[0]);
    sl_event_init(&pp.ev[1]);
    atomic_store(&pp.turn, 0);
    pp.rounds = sl_test_scaled(20000, 500) & ~(uint64_t)1;
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, pp_thread, &pp), 0);
    for (uint64_t r = 0; r < pp.rounds; r += 2) {
        pp_await(&pp, 0, r);
        atomic_store(&pp.turn, r + 1);
        sl_event_notify_one(&pp.ev[1]);
    }
    pp_await(&pp, 0, pp.rounds);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_uint_eq(atomic_load(&pp.turn), pp.rounds);
    ck_assert_uint_eq(sl_event_waiters(&pp.ev[0]), 0);
    ck_assert_uint_eq(sl_event_waiters(&pp.ev[1]), 0);
}
END_TEST

/* ---- system calls counted ------------------------------------------------- */

START_TEST(test_notify_without_waiter_no_syscall)
{
    sl_event ev;
    sl_event_init(&ev);
    install_counting(INJ_NONE, 0);
    for (int i = 0; i < 1000; i++) {
        sl_event_notify_one(&ev);
        sl_event_notify_all(&ev);
        sl_event_notify_n(&ev, 3);
    }
    ck_assert_uint_eq(wake_calls(), 0);
    ck_assert_uint_eq(wait_calls(), 0);

    /* A cancelled registration leaves no waiter behind either. */
    (void)sl_event_prepare(&ev);
    sl_event_cancel(&ev);
    sl_event_notify_one(&ev);
    sl_event_notify_all(&ev);
    ck_assert_uint_eq(wake_calls(), 0);

    /* And so does a completed (timed-out) wait. */
    uint32_t key = sl_event_prepare(&ev);
    ck_assert_int_eq(sl_event_wait(&ev, key, sl_deadline_after(0)), SL_TIMEDOUT);
    sl_event_notify_one(&ev);
    sl_event_notify_all(&ev);
    ck_assert_uint_eq(wake_calls(), 0);
    restore_ops();
}
END_TEST

/* sluice/park.h documents the exported _slow entry points themselves as
 * making no system call when no waiter is registered. */
START_TEST(test_notify_slow_without_waiter_no_syscall)
{
    sl_event ev;
    sl_event_init(&ev);
    install_counting(INJ_NONE, 0);
    sl_event_notify_one_slow(&ev);
    ck_assert_msg(wake_calls() == 0,
                  "sl_event_notify_one_slow with no waiter called futex_wake");
    sl_event_notify_all_slow(&ev);
    ck_assert_msg(wake_calls() == 0,
                  "sl_event_notify_all_slow with no waiter called futex_wake");
    restore_ops();
}
END_TEST

START_TEST(test_sleeping_waiter_woken_through_futex)
{
    sl_event ev;
    sl_event_init(&ev);
    install_counting(INJ_NONE, 0);
    waiter w;
    waiter_start(&w, &ev, 30 * SEC, NULL);
    /* Wait until the waiter is inside the kernel wait. */
    uint64_t give_up = sl_test_now_ns() + 20 * SEC;
    while (wait_calls() == 0) {
        ck_assert_msg(sl_test_now_ns() < give_up, "the waiter never called futex_wait");
        sched_yield();
    }
    sl_test_sleep_ns(5 * MS);
    ck_assert_int_eq(atomic_load(&w.done), 0);
    ck_assert_uint_eq(wake_calls(), 0);
    sl_event_notify_one(&ev);
    ck_assert_int_eq(pthread_join(w.thr, NULL), 0);
    ck_assert_int_eq(w.result, SL_OK);
    ck_assert_uint_ge(wake_calls(), 1);
    restore_ops();
}
END_TEST

/* A wait whose deadline has passed makes no futex call and issues no
 * registration barrier: the kernel stretches even an expired timeout by the
 * thread's timer slack (50 us by default), so a receive with a 1 ns timeout
 * took 70 us, a membarrier and a sleep (found by review; planted
 * PARK_SLEEPS_PAST_DEADLINE). Every form below is out of time once its first
 * clock read has run: sl_event_wait given a passed deadline, and the timed
 * forms given 1 ns, whose spin reads the clock after 8 tries. */
static _Atomic unsigned long n_barrier_calls;

static int counting_membarrier(int cmd)
{
    if (cmd == MEMBARRIER_CMD_PRIVATE_EXPEDITED)
        atomic_fetch_add(&n_barrier_calls, 1);
    return sl_test_sys_base()->membarrier(cmd);
}

static const sl_sys_ops expired_ops = {.futex_wait = counting_futex_wait,
                                       .membarrier = counting_membarrier};

static void expect_no_sleep(const char *what, sl_status st, sl_status want)
{
    ck_assert_msg(st == want, "%s: %s", what, sl_status_str(st));
    ck_assert_msg(wait_calls() == 0 && atomic_load(&n_barrier_calls) == 0,
                  "%s, already out of time: %lu futex waits, %lu barriers", what, wait_calls(),
                  atomic_load(&n_barrier_calls));
}

START_TEST(test_passed_deadline_no_sleep)
{
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = 8, .capacity = 1};
    sl_chan *ch = NULL;
    ck_assert_int_eq(sl_chan_new(&ch, &o), SL_OK);
    uint64_t v = 1;
    ck_assert_int_eq(sl_chan_send(ch, &v), SL_OK); /* full */
    sl_event ev;
    sl_event_init(&ev);
    install_counting(INJ_NONE, 0); /* the counts zeroed, no injection */
    sl_test_sys_install(&expired_ops);

    /* Registered by the caller: the wait alone must not sleep. */
    uint32_t key = sl_event_prepare(&ev);
    atomic_store(&n_barrier_calls, 0);
    expect_no_sleep("sl_event_wait", sl_event_wait(&ev, key, sl_now_ns()), SL_TIMEDOUT);
    ck_assert_uint_eq(sl_event_waiters(&ev), 0);
    expect_no_sleep("sl_chan_send_for", sl_chan_send_for(ch, &v, 1), SL_TIMEDOUT);
    ck_assert_int_eq(sl_chan_try_recv(ch, &v), SL_OK); /* empty */
    v = 7;
    expect_no_sleep("sl_chan_recv_for", sl_chan_recv_for(ch, &v, 1), SL_TIMEDOUT);
    size_t got = 9, i = 9;
    expect_no_sleep("sl_chan_recv_n_for", sl_chan_recv_n_for(ch, &v, 1, 1, &got), SL_TIMEDOUT);
    ck_assert_uint_eq(got, 0);
    ck_assert_uint_eq(v, 7); /* nothing written */
    sl_select_case c = {ch, SL_SEL_RECV, &v};
    /* Nor does a select arm its bell (the arm's barrier) for its last look. */
    expect_no_sleep("sl_select", sl_select(&c, 1, 1, &i), SL_TIMEDOUT);
    ck_assert_uint_eq(i, 9);
    restore_ops();
    sl_chan_free(ch);
}
END_TEST

/* ---- injected faults ------------------------------------------------------- */

/* With every futex_wait failing in `mode` until a little past the deadline
 * (the real futex takes over after that), a timed wait must still last until
 * its deadline and report SL_TIMEDOUT, never SL_OK. */
static void check_injected_timed(int mode)
{
    sl_event ev;
    sl_event_init(&ev);
    install_counting(mode, -1);
    const uint64_t timeout = 30 * MS;
    uint32_t key = sl_event_prepare(&ev);
    uint64_t t0 = sl_test_now_ns();
    uint64_t deadline = sl_deadline_after(timeout);
    atomic_store(&inject_until_ns, deadline + 10 * MS);
    sl_status st = sl_event_wait(&ev, key, deadline);
    uint64_t t1 = sl_test_now_ns();
    restore_ops();
    ck_assert_msg(st == SL_TIMEDOUT, "mode %d: wait returned %d without a notify", mode, (int)st);
    ck_assert_msg(t1 - t0 >= timeout, "mode %d: timed out after %llu ns, asked %llu", mode,
                  (unsigned long long)(t1 - t0), (unsigned long long)timeout);
    ck_assert_uint_ge(t1, deadline);
    ck_assert_uint_eq(sl_event_waiters(&ev), 0);
}

START_TEST(test_spurious_wakeups_timed)
{
    check_injected_timed(INJ_SPURIOUS);
}
END_TEST

START_TEST(test_eintr_timed)
{
    check_injected_timed(INJ_EINTR);
}
END_TEST

START_TEST(test_early_etimedout_timed)
{
    check_injected_timed(INJ_ETIMEDOUT);
}
END_TEST

/* A waiter with no deadline under a burst of injected failures stays blocked
 * until the real notify, then returns SL_OK. */
static void check_injected_untimed(int mode)
{
    sl_event ev;
    sl_event_init(&ev);
    install_counting(mode, 200);
    waiter w;
    waiter_start(&w, &ev, SL_FOREVER, NULL);
    await_registered(&w, 1);
    /* Let it burn through the injected failures into a real sleep. */
    uint64_t give_up = sl_test_now_ns() + 20 * SEC;
    while (atomic_load(&inject_left) > 0 && atomic_load(&w.done) == 0) {
        ck_assert_msg(sl_test_now_ns() < give_up, "the waiter stopped calling futex_wait");
        sched_yield();
    }
    sl_test_sleep_ns(20 * MS);
    ck_assert_msg(atomic_load(&w.done) == 0, "mode %d: wait returned (%d) without a notify",
                  mode, (int)w.result);
    sl_event_notify_one(&ev);
    ck_assert_int_eq(pthread_join(w.thr, NULL), 0);
    restore_ops();
    ck_assert_int_eq(w.result, SL_OK);
    ck_assert_uint_ge(wait_calls(), 200);
    ck_assert_uint_eq(sl_event_waiters(&ev), 0);
}

START_TEST(test_spurious_wakeups_untimed)
{
    check_injected_untimed(INJ_SPURIOUS);
}
END_TEST

START_TEST(test_eintr_untimed)
{
    check_injected_untimed(INJ_EINTR);
}
END_TEST

START_TEST(test_early_etimedout_untimed)
{
    check_injected_untimed(INJ_ETIMEDOUT);
}
END_TEST

/* Every injected failure, then a real notify, with a finite deadline. */
START_TEST(test_injected_then_notified_timed)
{
    const int modes[] = { INJ_SPURIOUS, INJ_EINTR, INJ_ETIMEDOUT };
    for (size_t m = 0; m < 3; m++) {
        sl_event ev;
        sl_event_init(&ev);
        install_counting(modes[m], 50);
        waiter w;
        waiter_start(&w, &ev, 30 * SEC, NULL);
        await_registered(&w, 1);
        sl_test_sleep_ns(10 * MS);
        ck_assert_int_eq(atomic_load(&w.done), 0);
        sl_event_notify_all(&ev);
        ck_assert_int_eq(pthread_join(w.thr, NULL), 0);
        restore_ops();
        ck_assert_msg(w.result == SL_OK, "mode %d: got %d", modes[m], (int)w.result);
    }
}
END_TEST

/* ---- the barrier mode --------------------------------------------------------
 * Decided once per process, at the first sl_event_init: Check runs every test
 * in its own forked process, whose parent never made an eventcount, so each
 * test below decides it afresh under its own scripted membarrier. Under
 * CK_FORK=no the decision is already made and they cannot run. */

static _Atomic unsigned long n_register, n_expedited;
static _Atomic int register_result, expedited_result;
static _Atomic int expedited_transient_left; /* -ENOMEM for that many calls first */

static int scripted_membarrier(int cmd)
{
    if (cmd == MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) {
        atomic_fetch_add(&n_register, 1);
        return atomic_load(&register_result);
    }
    ck_assert_int_eq(cmd, MEMBARRIER_CMD_PRIVATE_EXPEDITED);
    atomic_fetch_add(&n_expedited, 1);
    if (atomic_load(&expedited_transient_left) > 0) {
        atomic_fetch_sub(&expedited_transient_left, 1);
        return -ENOMEM;
    }
    return atomic_load(&expedited_result);
}

static unsigned long expedited(void) { return atomic_load(&n_expedited); }
static unsigned long registered(void) { return atomic_load(&n_register); }

static const sl_sys_ops scripted_barrier_ops = {.membarrier = scripted_membarrier};

/* Installs the script; false (the test has nothing to check) under CK_FORK=no. */
static bool script_barrier(int reg, int expedited, int transient)
{
    const char *fork = getenv("CK_FORK");
    if (fork && strcmp(fork, "no") == 0) {
        fprintf(stderr, "barrier-mode tests need a fresh process: not run under CK_FORK=no\n");
        return false;
    }
    atomic_store(&n_register, 0);
    atomic_store(&n_expedited, 0);
    atomic_store(&register_result, reg);
    atomic_store(&expedited_result, expedited);
    atomic_store(&expedited_transient_left, transient);
    sl_test_sys_install(&scripted_barrier_ops);
    return true;
}

/* A waiter parked in the kernel and woken by a notify, in whatever mode. */
static void park_and_wake(sl_event *ev)
{
    waiter w;
    waiter_start(&w, ev, 30 * SEC, NULL);
    await_registered(&w, 1);
    sl_test_sleep_ns(5 * MS);
    sl_event_notify_one(ev);
    ck_assert_int_eq(pthread_join(w.thr, NULL), 0);
    ck_assert_int_eq(w.result, SL_OK);
}

/* n registrations withdrawn at once: each issues the barrier of the mode. */
static void prepare_cancel(sl_event *ev, int n)
{
    for (int i = 0; i < n; i++) {
        (void)sl_event_prepare(ev);
        sl_event_cancel(ev);
    }
}

/* Where registration fails (old kernel, seccomp), the fence fallback: one
 * registration attempt, never a barrier call, fences on both sides. */
START_TEST(test_barrier_registration_fails_uses_fences)
{
    if (!script_barrier(-ENOSYS, -ENOSYS, 0))
        return;
    sl_event ev;
    sl_event_init(&ev);
    ck_assert_int_eq(atomic_load(&sl__event_asymmetric), 0);
    prepare_cancel(&ev, 100);
    park_and_wake(&ev);
    sl_chan *ch = sl_test_chan(SL_SPSC, 8, 1, NULL, NULL);
    uint64_t v = 1;
    ck_assert_int_eq(sl_chan_recv_for(ch, &v, 2 * MS), SL_TIMEDOUT);
    sl_chan_close(ch);
    ck_assert_int_eq(sl_chan_recv(ch, &v), SL_CLOSED);
    sl_chan_free(ch);
    ck_assert_uint_eq(registered(), 1);
    ck_assert_uint_eq(expedited(), 0);
}
END_TEST

/* Registered: every prepare issues the barrier. */
START_TEST(test_barrier_registered_every_prepare)
{
    if (!script_barrier(0, 0, 0))
        return;
    sl_event ev;
    sl_event_init(&ev);
    ck_assert_int_eq(atomic_load(&sl__event_asymmetric), 1);
    prepare_cancel(&ev, 10);
    ck_assert_uint_eq(expedited(), 10);
    park_and_wake(&ev);
    ck_assert_uint_eq(registered(), 1);
}
END_TEST

/* Close issues no barrier (it serialises on a kernel-wide mutex since Linux
 * 6.8); the receiver deciding SL_CLOSED issues one where the in-flight marks
 * are plain stores (SL_SPSC's flag; SL_MPMC's and SL_LIST's records), none
 * for SL_RING's counters. */
START_TEST(test_close_issues_no_barrier)
{
    if (!script_barrier(0, 0, 0))
        return;
    const sl_flavor flavors[] = {SL_SPSC, SL_MPMC, SL_LIST, SL_RING};
    for (int i = 0; i < N_OF(flavors); i++) {
        sl_chan *ch = sl_test_chan(flavors[i], 8, 4, NULL, NULL);
        uint64_t v = 7;
        ck_assert_int_eq(sl_chan_try_send(ch, &v), SL_OK);
        unsigned long before = expedited();
        sl_chan_close(ch);
        ck_assert_uint_eq(expedited(), before);
        ck_assert_int_eq(sl_chan_try_recv(ch, &v), SL_OK); /* a message: no decision yet */
        ck_assert_uint_eq(expedited(), before);
        ck_assert_int_eq(sl_chan_try_recv(ch, &v), SL_CLOSED);
        ck_assert_int_eq(sl_chan_try_recv(ch, &v), SL_CLOSED); /* drained: final, no barrier */
        ck_assert_uint_eq(expedited(), before + (flavors[i] != SL_RING));
        sl_chan_free(ch);
    }
}
END_TEST

/* A transient failure (the kernel's allocation) is retried. */
START_TEST(test_barrier_transient_failure_retried)
{
    if (!script_barrier(0, 0, 3))
        return;
    sl_event ev;
    sl_event_init(&ev);
    prepare_cancel(&ev, 1);
    ck_assert_uint_eq(expedited(), 4);
}
END_TEST

/* Registered, then the barrier is refused (a filter installed later): the
 * notifiers already rely on it, so the process stops (SIGABRT) with the
 * reason instead of risking a lost wake-up. */
START_TEST(test_barrier_refused_after_registration_aborts)
{
    if (!script_barrier(0, -EPERM, 0)) {
        raise(SIGABRT); /* what the test expects; nothing was checked */
        return;
    }
    sl_event ev;
    sl_event_init(&ev);
    (void)sl_event_prepare(&ev);
    ck_abort_msg("sl_event_prepare returned after its barrier was refused");
}
END_TEST

/* A set of eventcounts (internal/await.h: a selector's process bell and a
 * shared segment's bell) whose shared member's segment is in fence mode
 * (sl__event_global 0) while this process is in asymmetric mode: the
 * private member's notifiers (in-process channels' sends) have only a
 * compiler barrier between their change and their waiter-count load, so
 * the registration must be followed by the private expedited membarrier,
 * whatever the shared member needs. */
static bool false_then_true(void *ctx)
{
    int *looks = ctx;
    return ++*looks > 1; /* phase 1 false, the re-check after prepare true */
}

START_TEST(test_barrier_mixed_set_private_member)
{
    if (!script_barrier(0, 0, 0))
        return;
    sl_event priv, shared;
    sl_event_init(&priv);
    sl__event_init_shared(&shared);
    ck_assert_int_eq(atomic_load(&sl__event_asymmetric), 1);
    ck_assert_int_eq(atomic_load(&sl__event_global), 0); /* no asymmetric segment */
    sl_event *const evs[2] = {&priv, &shared};
    sl__futex_word w[2];
    int looks = 0;
    unsigned long before = expedited();
    ck_assert_int_eq(sl__event_await_set(&(sl__event_set){evs, w, 2, NULL}, false_then_true,
                                         &looks, SL_FOREVER, 0),
                     SL_OK);
    ck_assert_int_eq(looks, 2);
    ck_assert_msg(expedited() == before + 1,
                  "a registration on a private eventcount (in a set with a shared one) issued "
                  "%lu private expedited membarriers, not 1: its notifiers' compiler barrier "
                  "is left unpaired", expedited() - before);
    ck_assert_uint_eq(sl_event_waiters(&priv), 0);
    ck_assert_uint_eq(sl_event_waiters(&shared), 0);
}
END_TEST

static void teardown_ops(void)
{
    sl_test_sys_restore();
}

static Suite *park_suite(void)
{
    Suite *s = suite_create("park");

    TCase *tc = tcase_create("basic");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_init_no_waiters);
    tcase_add_test(tc, test_null_event_is_bad_input);
    tcase_add_test(tc, test_prepare_cancel_counts);
    tcase_add_test(tc, test_wait_past_deadline_times_out);
    tcase_add_test(tc, test_wait_after_notify_one_returns_ok);
    tcase_add_test(tc, test_wait_after_notify_all_returns_ok);
    tcase_add_test(tc, test_wait_after_notify_forever);
    tcase_add_test(tc, test_notify_without_waiters_then_wait_times_out);
    tcase_add_test(tc, test_key_from_previous_round_is_stale);
    suite_add_tcase(s, tc);

    tc = tcase_create("time");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_now_monotonic);
    tcase_add_test(tc, test_deadline_after);
    tcase_add_test(tc, test_timed_wait_not_early);
    suite_add_tcase(s, tc);

    tc = tcase_create("threads");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_notify_one_wakes_blocked_waiter);
    tcase_add_test(tc, test_notify_all_wakes_every_waiter);
    tcase_add_test(tc, test_two_notify_one_wake_two_waiters);
    tcase_add_test(tc, test_notify_n_wakes_n);
    tcase_add_test(tc, test_notify_n_zero_wakes_nobody);
    tcase_add_test(tc, test_blocked_waiter_times_out);
    tcase_add_test(tc, test_pingpong_no_lost_wakeups);
    suite_add_tcase(s, tc);

    tc = tcase_create("sysops");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, NULL, teardown_ops);
    tcase_add_test(tc, test_notify_without_waiter_no_syscall);
    tcase_add_test(tc, test_notify_slow_without_waiter_no_syscall);
    tcase_add_test(tc, test_sleeping_waiter_woken_through_futex);
    tcase_add_test(tc, test_passed_deadline_no_sleep);
    tcase_add_test(tc, test_spurious_wakeups_timed);
    tcase_add_test(tc, test_eintr_timed);
    tcase_add_test(tc, test_early_etimedout_timed);
    tcase_add_test(tc, test_spurious_wakeups_untimed);
    tcase_add_test(tc, test_eintr_untimed);
    tcase_add_test(tc, test_early_etimedout_untimed);
    tcase_add_test(tc, test_injected_then_notified_timed);
    suite_add_tcase(s, tc);

    tc = tcase_create("barrier");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, NULL, teardown_ops);
    tcase_add_test(tc, test_barrier_registration_fails_uses_fences);
    tcase_add_test(tc, test_barrier_registered_every_prepare);
    tcase_add_test(tc, test_close_issues_no_barrier);
    tcase_add_test(tc, test_barrier_transient_failure_retried);
    tcase_add_test(tc, test_barrier_mixed_set_private_member);
    tcase_add_test_raise_signal(tc, test_barrier_refused_after_registration_aborts, SIGABRT);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sl_test_run(park_suite());
}
