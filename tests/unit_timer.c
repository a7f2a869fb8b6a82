/*
 * tests/unit_timer.c — timer channels (sluice/timer.h): after, tick, never.
 *
 * Most tests run on a fake clock installed through the system layer: time
 * stands still except when sluice waits with a deadline, and then the wait
 * jumps the clock to that deadline and times out. So a blocking receive or
 * select that returns at fake instant T slept exactly until T: the tests
 * assert which instants the waits chose (the next fire, or the caller's
 * deadline, whichever is first), deterministically. A wait without a
 * deadline really blocks (a close or a send must wake it). A few tests use
 * the real clock, with bounds that cannot flake: never before the fire.
 *
 * Checked: bad input and every send form refused with nothing consumed;
 * after fires once, with its scheduled instant, then never again; tick
 * coalesces missed ticks into one message and keeps its grid (no drift, no
 * backlog); never never fires; close stops a timer and wakes its receivers;
 * blocking and timed receives and select wake at the fire, not later, and
 * time out at their own deadline when it comes first; a select over work,
 * a ticker and a deadline sees everything in order; each fire goes to
 * exactly one of several racing receivers; the typed wrapper.
 */
#include "harness.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#include <sluice/chan.h>
#include <sluice/select.h>
#include <sluice/timer.h>

/* ---- the fake clock ------------------------------------------------------- */
#define T0 (1000 * SEC)
static atomic_uint_fast64_t fake_now = T0;
static atomic_uint fake_timed_waits;

static uint64_t fake_clock(void) { return atomic_load(&fake_now); }

/* A timed wait lets time pass up to its deadline, and times out there. */
static int fake_wait(SL_ATOMIC(uint32_t) *word, uint32_t expected, uint64_t deadline_ns)
{
    if (deadline_ns == SL_FOREVER)
        return sl_test_sys_base()->futex_wait(word, expected, deadline_ns);
    atomic_fetch_add(&fake_timed_waits, 1);
    uint_fast64_t now = atomic_load(&fake_now);
    while (now < deadline_ns && !atomic_compare_exchange_weak(&fake_now, &now, deadline_ns)) {
    }
    return -ETIMEDOUT;
}

static const sl_sys_ops fake_ops = {.now_ns = fake_clock, .futex_wait = fake_wait};

static void fake_start(void)
{
    atomic_store(&fake_now, T0);
    atomic_store(&fake_timed_waits, 0);
    sl_test_sys_install(&fake_ops);
}

static void fake_set(uint64_t t) { atomic_store(&fake_now, t); }

static sl_chan *mk_after(uint64_t d)
{
    sl_chan *ch = NULL;
    ck_assert_int_eq(sl_chan_after(&ch, d), SL_OK);
    return ch;
}

static sl_chan *mk_tick(uint64_t p)
{
    sl_chan *ch = NULL;
    ck_assert_int_eq(sl_chan_tick(&ch, p), SL_OK);
    return ch;
}

static void expect_fire(sl_chan *ch, uint64_t at)
{
    uint64_t v = 0;
    ck_assert_int_eq(sl_chan_try_recv(ch, &v), SL_OK);
    ck_assert_msg(v == at, "fired with %llu, expected %llu", ULL(v), ULL(at));
}

static void expect_empty(sl_chan *ch)
{
    uint64_t v = 7;
    ck_assert_int_eq(sl_chan_try_recv(ch, &v), SL_EMPTY);
    ck_assert_uint_eq(v, 7); /* nothing written */
    ck_assert_uint_eq(sl_chan_len(ch), 0);
}

/* ---- input ---------------------------------------------------------------- */
START_TEST(test_bad_input)
{
    sl_chan *ch = (sl_chan *)&ch;
    ck_assert_int_eq(sl_chan_after(NULL, 1), SL_EINVAL);
    ck_assert_int_eq(sl_chan_tick(NULL, 1), SL_EINVAL);
    ck_assert_int_eq(sl_chan_never(NULL), SL_EINVAL);
    ck_assert_int_eq(sl_chan_tick(&ch, 0), SL_EINVAL);
    ck_assert_ptr_eq(ch, (sl_chan *)&ch); /* untouched */
    sl_chan_opts o = {.flavor = SL_TIMER, .elem_size = 8, .capacity = 1};
    ck_assert_int_eq(sl_chan_new(&ch, &o), SL_EINVAL);
    ck_assert_ptr_eq(ch, (sl_chan *)&ch);

    sl_test_fail_allocs(1);
    ck_assert_int_eq(sl_chan_after(&ch, 1), SL_ENOMEM);
    ck_assert_ptr_eq(ch, (sl_chan *)&ch);
    sl_test_alloc_faults_off();

    ch = mk_after(0);
    ck_assert_int_eq(sl_chan_flavor(ch), SL_TIMER);
    ck_assert_uint_eq(sl_chan_elem_size(ch), sizeof(uint64_t));
    ck_assert_uint_eq(sl_chan_cap(ch), 1);
    ck_assert_int_eq(sl_chan_try_recv(ch, NULL), SL_EINVAL);
    ck_assert_int_eq(sl_chan_recv(ch, NULL), SL_EINVAL);
    uint64_t v = 5, ev = 9;
    void *p = &v;
    ck_assert_int_eq(sl_chan_send(ch, &v), SL_EINVAL);
    ck_assert_int_eq(sl_chan_try_send(ch, &v), SL_EINVAL);
    ck_assert_int_eq(sl_chan_send_for(ch, &v, 0), SL_EINVAL);
    ck_assert_int_eq(sl_chan_send_for(ch, &v, SL_FOREVER), SL_EINVAL);
    ck_assert_int_eq(sl_chan_send_ptr(ch, &p), SL_EINVAL);
    ck_assert_int_eq(sl_chan_try_send_ptr(ch, &p), SL_EINVAL);
    ck_assert_int_eq(sl_chan_send_ptr_for(ch, &p, 5), SL_EINVAL);
    ck_assert_ptr_eq(p, &v); /* the pointer was not moved */
    ck_assert_int_eq(sl_chan_send_evict(ch, &v, &ev), SL_EINVAL);
    ck_assert_uint_eq(sl_chan_try_send_n(ch, &v, 1), 0);
    ck_assert_uint_eq(ev, 9);
    /* The fire that was due is still there: the sends consumed nothing. */
    ck_assert_uint_eq(sl_chan_len(ch), 1);
    ck_assert_int_eq(sl_chan_try_recv(ch, &v), SL_OK);
    sl_chan_close(ch);
    ck_assert_int_eq(sl_chan_try_send(ch, &v), SL_EINVAL); /* closed or not */
    sl_chan_free(ch);
}
END_TEST

/* ---- after ---------------------------------------------------------------- */
START_TEST(test_after_fires_once)
{
    fake_start();
    sl_chan *ch = mk_after(5 * SEC);
    expect_empty(ch);
    fake_set(T0 + 5 * SEC - 1);
    expect_empty(ch);
    fake_set(T0 + 5 * SEC + 123);
    ck_assert_uint_eq(sl_chan_len(ch), 1);
    expect_fire(ch, T0 + 5 * SEC); /* the scheduled instant, not the receive's */
    expect_empty(ch);
    fake_set(T0 + 3600 * SEC);
    expect_empty(ch);
    uint64_t v;
    ck_assert_int_eq(sl_chan_recv_for(ch, &v, 2 * SEC), SL_TIMEDOUT);
    ck_assert_uint_eq(fake_clock(), T0 + 3602 * SEC); /* not before asked */
    sl_chan_free(ch);

    ch = mk_after(0); /* due at once */
    ck_assert_int_eq(sl_chan_recv_for(ch, &v, 0), SL_OK);
    ck_assert_uint_eq(v, T0 + 3602 * SEC);
    ck_assert_int_eq(sl_chan_recv_for(ch, &v, 0), SL_TIMEDOUT);
    sl_chan_free(ch);

    ch = mk_after(SL_FOREVER - 1); /* overflows the clock: never */
    ck_assert_int_eq(sl_chan_recv_for(ch, &v, 10 * SEC), SL_TIMEDOUT);
    sl_chan_free(ch);
}
END_TEST

/* A blocking receive sleeps exactly until the fire; a timed one until its own
 * deadline when that comes first, then until the fire. */
START_TEST(test_after_blocking)
{
    fake_start();
    sl_chan *ch = mk_after(5 * SEC);
    uint64_t v = 0;
    ck_assert_int_eq(sl_chan_recv_for(ch, &v, 1 * SEC), SL_TIMEDOUT);
    ck_assert_uint_eq(fake_clock(), T0 + 1 * SEC);
    ck_assert_int_eq(sl_chan_recv_for(ch, &v, 60 * SEC), SL_OK);
    ck_assert_uint_eq(v, T0 + 5 * SEC);
    ck_assert_uint_eq(fake_clock(), T0 + 5 * SEC); /* woke at the fire, not at 61 s */
    sl_chan_free(ch);

    fake_start();
    ch = mk_after(7 * SEC);
    ck_assert_int_eq(sl_chan_recv(ch, &v), SL_OK); /* SL_FOREVER, yet wakes */
    ck_assert_uint_eq(v, T0 + 7 * SEC);
    ck_assert_uint_eq(fake_clock(), T0 + 7 * SEC);
    ck_assert_uint_ge(atomic_load(&fake_timed_waits), 1);
    sl_chan_free(ch);
}
END_TEST

/* Every receive form that waits, on a fake clock: one whose own deadline
 * comes first times out exactly there with nothing written (out, *got,
 * *index); then each wakes exactly at the fire and takes it. */
enum { F_RECV_FOR, F_RECV, F_RECV_N_FOR, F_RECV_N, F_SELECT, F_BIASED, F_TYPED, F_FORMS };

static sl_status recv_by_form(int form, sl_chan *ch, uint64_t timeout, uint64_t *v, size_t *got,
                              size_t *index)
{
    sl_select_case c[] = {{NULL, SL_SEL_RECV, v}, {ch, SL_SEL_RECV, v}};
    switch (form) {
    case F_RECV_FOR: return sl_chan_recv_for(ch, v, timeout);
    case F_RECV: return sl_chan_recv(ch, v);
    case F_RECV_N_FOR: return sl_chan_recv_n_for(ch, v, 3, timeout, got);
    case F_RECV_N: return sl_chan_recv_n(ch, v, 3, got);
    case F_SELECT: return sl_select(c, 2, timeout, index);
    case F_BIASED: return sl_select_biased(c, 2, timeout, index);
    default: return sl_timer_chan_recv_n_for((sl_timer_chan *)(void *)ch, v, 3, timeout, got);
    }
}

START_TEST(test_every_form_wakes_at_fire)
{
    for (int form = 0; form < F_FORMS; form++) {
        fake_start();
        sl_chan *ch = mk_after(5 * SEC);
        uint64_t v[3] = {7, 7, 7};
        size_t got = 9, index = 9;
        bool timed = form != F_RECV && form != F_RECV_N;
        if (timed) {
            sl_status st = recv_by_form(form, ch, 2 * SEC, v, &got, &index);
            ck_assert_msg(st == SL_TIMEDOUT, "form %d: %s before the fire", form,
                          sl_status_str(st));
            ck_assert_uint_eq(fake_clock(), T0 + 2 * SEC); /* its own deadline, not earlier */
            ck_assert_msg(v[0] == 7 && index == 9 && (got == 0 || got == 9),
                          "form %d wrote on SL_TIMEDOUT", form);
        }
        sl_status st = recv_by_form(form, ch, timed ? 60 * SEC : SL_FOREVER, v, &got, &index);
        ck_assert_msg(st == SL_OK, "form %d: %s", form, sl_status_str(st));
        ck_assert_uint_eq(v[0], T0 + 5 * SEC);
        ck_assert_uint_eq(v[1], 7); /* one fire, however large the batch */
        ck_assert_msg(fake_clock() == T0 + 5 * SEC, "form %d woke at +%llu ns, the fire at +5 s",
                      form, ULL(fake_clock() - T0));
        if (form == F_RECV_N_FOR || form == F_RECV_N || form == F_TYPED)
            ck_assert_uint_eq(got, 1);
        if (form == F_SELECT || form == F_BIASED)
            ck_assert_uint_eq(index, 1);
        sl_chan_free(ch);
    }
}
END_TEST

/* ---- tick ----------------------------------------------------------------- */
START_TEST(test_tick_grid_and_coalescing)
{
    fake_start();
    const uint64_t p = 10 * MS;
    sl_chan *ch = mk_tick(p);
    expect_empty(ch);
    fake_set(T0 + p);
    expect_fire(ch, T0 + p);
    expect_empty(ch);
    /* A long pause: ticks at 2p, 3p, 4p, 5p missed; one message, the oldest. */
    fake_set(T0 + 5 * p + 3);
    expect_fire(ch, T0 + 2 * p);
    expect_empty(ch); /* no backlog */
    /* The grid holds: the next tick is at 6p, not 5p + 3 + p. */
    fake_set(T0 + 6 * p - 1);
    expect_empty(ch);
    fake_set(T0 + 6 * p);
    expect_fire(ch, T0 + 6 * p);
    /* Exactly on a grid point after a pause: that point was due, next is after it. */
    fake_set(T0 + 9 * p);
    expect_fire(ch, T0 + 7 * p);
    fake_set(T0 + 10 * p - 1);
    expect_empty(ch);
    /* Blocking receives walk the grid. */
    uint64_t v;
    for (uint64_t k = 10; k < 20; k++) {
        ck_assert_int_eq(sl_chan_recv(ch, &v), SL_OK);
        ck_assert_uint_eq(v, T0 + k * p);
        ck_assert_uint_eq(fake_clock(), T0 + k * p);
    }
    /* Batch receive: at most one, however long the pause. */
    uint64_t buf[4] = {0};
    fake_set(T0 + 100 * p);
    ck_assert_uint_eq(sl_chan_try_recv_n(ch, buf, 4), 1);
    ck_assert_uint_eq(buf[0], T0 + 20 * p);
    ck_assert_uint_eq(sl_chan_try_recv_n(ch, buf, 4), 0);
    sl_chan_free(ch);
}
END_TEST

/* ---- never and close ------------------------------------------------------- */
START_TEST(test_never)
{
    fake_start();
    sl_chan *ch = NULL;
    ck_assert_int_eq(sl_chan_never(&ch), SL_OK);
    expect_empty(ch);
    fake_set(SL_FOREVER - 1);
    expect_empty(ch);
    uint64_t v;
    fake_set(T0);
    ck_assert_int_eq(sl_chan_recv_for(ch, &v, 3600 * SEC), SL_TIMEDOUT);
    ck_assert_uint_eq(fake_clock(), T0 + 3600 * SEC);
    sl_chan_free(ch);
}
END_TEST

START_TEST(test_close_stops_and_wakes)
{
    fake_start();
    sl_chan *ch = mk_after(0);
    ck_assert_uint_eq(sl_chan_len(ch), 1);
    sl_chan_close(ch);
    uint64_t v = 3;
    ck_assert_int_eq(sl_chan_try_recv(ch, &v), SL_CLOSED); /* even the due fire */
    ck_assert_int_eq(sl_chan_recv(ch, &v), SL_CLOSED);
    ck_assert_uint_eq(sl_chan_len(ch), 0);
    ck_assert_uint_eq(v, 3);
    sl_chan_free(ch);

    /* A receiver blocked on a timer that has not fired wakes at close. */
    sl_test_sys_restore();
    sl_test_recv_thread t;
    ch = NULL;
    ck_assert_int_eq(sl_chan_never(&ch), SL_OK);
    sl_test_recv_start(&t, ch);
    sl_chan_close(ch);
    pthread_join(t.thr, NULL);
    ck_assert_int_eq(t.st, SL_CLOSED);
    sl_chan_free(ch);
    ck_assert_int_eq(sl_chan_tick(&ch, SEC), SL_OK);
    sl_test_recv_start(&t, ch);
    sl_chan_close(ch);
    pthread_join(t.thr, NULL);
    ck_assert_int_eq(t.st, SL_CLOSED);
    sl_chan_free(ch);
}
END_TEST

/* A receive that checked `closed` and then stalled until a close and past
 * the fire it then found due must not take that fire: it was scheduled
 * after the close (found by review: the receive answered SL_OK with it,
 * after another receiver had seen SL_CLOSED; planted bug
 * TIMER_CLOSE_UNCHECKED). The stall is the receive's own clock read, which
 * closes the timer and moves the fake clock 30 ms on, past the fire. */
static sl_chan *close_at_clock_read;

static uint64_t closing_clock(void)
{
    sl_chan *ch = close_at_clock_read;
    if (ch) {
        close_at_clock_read = NULL;
        sl_chan_close(ch);
        fake_set(T0 + 30 * MS);
    }
    return fake_clock();
}

static const sl_sys_ops closing_ops = {.now_ns = closing_clock, .futex_wait = fake_wait};

START_TEST(test_close_during_take)
{
    fake_start();
    sl_chan *ch = mk_after(20 * MS); /* due at T0 + 20 ms, after the close at T0 */
    sl_test_sys_install(&closing_ops);
    close_at_clock_read = ch;
    uint64_t v = 3;
    sl_status st = sl_chan_try_recv(ch, &v);
    ck_assert_msg(st == SL_CLOSED && v == 3, "%s with %llu: a fire scheduled after the close",
                  sl_status_str(st), ULL(v));
    ck_assert_ptr_null(close_at_clock_read); /* the close happened inside the take */
    sl_test_sys_restore();
    sl_chan_free(ch);
}
END_TEST

/* ---- select ---------------------------------------------------------------- */
/* The loop the feature is for: work, a ticker and a deadline. On the fake
 * clock the whole run is determined: the work first (ready at once), then
 * the ticks at p, 2p, 3p, then the deadline at 3.5p; and every wait ended
 * at a fire, never later. */
START_TEST(test_select_work_ticker_deadline)
{
    fake_start();
    const uint64_t p = 10 * MS;
    sl_chan *work = sl_test_chan(SL_LIST, 8, 0, NULL, NULL);
    for (uint64_t i = 0; i < 3; i++)
        ck_assert_int_eq(sl_chan_send(work, &i), SL_OK);
    sl_chan *tick = mk_tick(p), *deadline = mk_after(3 * p + p / 2), *nothing = NULL;
    ck_assert_int_eq(sl_chan_never(&nothing), SL_OK);
    uint64_t job, t_at, d_at, n_at;
    sl_select_case c[] = {{work, SL_SEL_RECV, &job},
                          {tick, SL_SEL_RECV, &t_at},
                          {deadline, SL_SEL_RECV, &d_at},
                          {nothing, SL_SEL_RECV, &n_at}};
    uint64_t jobs = 0, ticks = 0;
    for (;;) {
        size_t i = 99;
        ck_assert_int_eq(sl_select(c, 4, SL_FOREVER, &i), SL_OK);
        if (i == 0) {
            ck_assert_uint_eq(job, jobs);
            ck_assert_uint_eq(ticks, 0); /* work was ready before any tick */
            jobs++;
        } else if (i == 1) {
            ck_assert_uint_eq(jobs, 3);
            ticks++;
            ck_assert_uint_eq(t_at, T0 + ticks * p);
            ck_assert_uint_eq(fake_clock(), t_at);
        } else {
            ck_assert_uint_eq(i, 2);
            ck_assert_uint_eq(d_at, T0 + 3 * p + p / 2);
            ck_assert_uint_eq(fake_clock(), d_at);
            break;
        }
    }
    ck_assert_uint_eq(ticks, 3);
    sl_chan_free(work);
    sl_chan_free(tick);
    sl_chan_free(deadline);
    sl_chan_free(nothing);
}
END_TEST

START_TEST(test_select_timeout_and_send_case)
{
    fake_start();
    sl_chan *ch = mk_after(10 * MS);
    uint64_t v;
    size_t i = 99;
    sl_select_case c = {ch, SL_SEL_RECV, &v};
    ck_assert_int_eq(sl_select(&c, 1, 0, &i), SL_TIMEDOUT);
    ck_assert_int_eq(sl_select(&c, 1, 4 * MS, &i), SL_TIMEDOUT);
    ck_assert_uint_eq(fake_clock(), T0 + 4 * MS); /* its own deadline came first */
    ck_assert_int_eq(sl_select(&c, 1, SEC, &i), SL_OK);
    ck_assert_uint_eq(i, 0);
    ck_assert_uint_eq(v, T0 + 10 * MS);
    ck_assert_uint_eq(fake_clock(), T0 + 10 * MS);
    /* A send case on a timer is refused; nothing happened. */
    sl_select_case s = {ch, SL_SEL_SEND, &v};
    ck_assert_int_eq(sl_select(&s, 1, 0, &i), SL_EINVAL);
    sl_chan_free(ch);
}
END_TEST

/* ---- real clock ---------------------------------------------------------- */
START_TEST(test_real_clock_not_early)
{
    uint64_t start = sl_test_now_ns(), v = 0;
    sl_chan *a = mk_after(20 * MS), *t = mk_tick(5 * MS);
    ck_assert_int_eq(sl_chan_recv(a, &v), SL_OK);
    uint64_t now = sl_test_now_ns();
    ck_assert_uint_ge(v, start + 20 * MS);
    ck_assert_uint_ge(now, v);
    uint64_t prev = 0;
    for (int k = 0; k < 3; k++) {
        ck_assert_int_eq(sl_chan_recv(t, &v), SL_OK);
        ck_assert_uint_ge(sl_test_now_ns(), v);
        ck_assert_uint_ge(v, start + 5 * MS);
        ck_assert_uint_gt(v, prev);
        if (prev)
            ck_assert_uint_eq((v - prev) % (5 * MS), 0); /* on the grid */
        prev = v;
    }
    sl_chan *n = NULL, *b = mk_after(10 * MS);
    ck_assert_int_eq(sl_chan_never(&n), SL_OK);
    sl_select_case c[] = {{n, SL_SEL_RECV, &v}, {b, SL_SEL_RECV, &v}};
    size_t i = 99;
    start = sl_test_now_ns();
    ck_assert_int_eq(sl_select(c, 2, SL_FOREVER, &i), SL_OK);
    ck_assert_uint_eq(i, 1);
    ck_assert_uint_ge(sl_test_now_ns(), v);
    sl_chan_free(a);
    sl_chan_free(t);
    sl_chan_free(n);
    sl_chan_free(b);
}
END_TEST

/* ---- several receivers ----------------------------------------------------- */
#define RACERS 4
typedef struct racer {
    sl_chan *ch;
    sl_test_barrier *go;
    int got;
} racer;

static void *race(void *arg)
{
    racer *r = arg;
    uint64_t v;
    sl_test_barrier_wait(r->go);
    for (int k = 0; k < 1000; k++)
        r->got += sl_chan_try_recv(r->ch, &v) == SL_OK;
    return NULL;
}

/* The fake clock, read between a receiver's load of the next fire and its
 * compare-and-swap, yields: racing receivers interleave right there. Only a
 * thread's first few reads yield: the fire is due at once and taken in the
 * racers' first receives, and every later one finds nothing due. A yield on
 * each of the 200,000 reads of a run made the test's time the machine's
 * load: with a busy process on each core a yield can give the core away for
 * a whole time slice, and the test ran out of its 30 s under TSan beside
 * the other suites. */
#define YIELDING_READS 8
static _Thread_local unsigned clock_reads;

static uint64_t yielding_clock(void)
{
    if (clock_reads < YIELDING_READS) {
        clock_reads++;
        sched_yield();
    }
    return atomic_load(&fake_now);
}

static const sl_sys_ops yielding_ops = {.now_ns = yielding_clock};

START_TEST(test_one_receiver_per_fire)
{
    atomic_store(&fake_now, T0);
    sl_test_sys_install(&yielding_ops);
    for (int round = 0; round < 50; round++) {
        sl_chan *ch = mk_after(0);
        sl_test_barrier go;
        sl_test_barrier_init(&go, RACERS);
        racer r[RACERS];
        pthread_t th[RACERS];
        for (int i = 0; i < RACERS; i++) {
            r[i] = (racer){ch, &go, 0};
            ck_assert_int_eq(pthread_create(&th[i], NULL, race, &r[i]), 0);
        }
        int total = 0;
        for (int i = 0; i < RACERS; i++) {
            pthread_join(th[i], NULL);
            total += r[i].got;
        }
        ck_assert_int_eq(total, 1);
        sl_test_barrier_destroy(&go);
        sl_chan_free(ch);
    }
}
END_TEST

/* ---- typed ----------------------------------------------------------------- */
START_TEST(test_typed)
{
    fake_start();
    sl_timer_chan *t = NULL;
    ck_assert_int_eq(sl_timer_chan_tick(&t, 3 * SEC), SL_OK);
    uint64_t at = 0;
    ck_assert_int_eq(sl_timer_chan_try_recv(t, &at), SL_EMPTY);
    ck_assert_int_eq(sl_timer_chan_recv(t, &at), SL_OK);
    ck_assert_uint_eq(at, T0 + 3 * SEC);
    ck_assert_int_eq(sl_timer_chan_send(t, &at), SL_EINVAL);
    sl_timer_chan_close(t);
    ck_assert_int_eq(sl_timer_chan_recv_for(t, &at, SEC), SL_CLOSED);
    sl_timer_chan_free(t);
    ck_assert_int_eq(sl_timer_chan_after(NULL, 1), SL_EINVAL);
    ck_assert_int_eq(sl_timer_chan_never(&t), SL_OK);
    ck_assert_uint_eq(sl_timer_chan_len(t), 0);
    sl_timer_chan_free(t);
}
END_TEST

static Suite *timer_suite(void)
{
    Suite *s = suite_create("timer");
    TCase *tc = tcase_create("fake_clock");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_bad_input);
    tcase_add_test(tc, test_after_fires_once);
    tcase_add_test(tc, test_after_blocking);
    tcase_add_test(tc, test_every_form_wakes_at_fire);
    tcase_add_test(tc, test_tick_grid_and_coalescing);
    tcase_add_test(tc, test_never);
    tcase_add_test(tc, test_close_stops_and_wakes);
    tcase_add_test(tc, test_close_during_take);
    tcase_add_test(tc, test_select_work_ticker_deadline);
    tcase_add_test(tc, test_select_timeout_and_send_case);
    tcase_add_test(tc, test_one_receiver_per_fire);
    tcase_add_test(tc, test_typed);
    suite_add_tcase(s, tc);
    tc = tcase_create("real_clock");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_real_clock_not_early);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sl_test_run(timer_suite());
}
