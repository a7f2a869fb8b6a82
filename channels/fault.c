/*
 * channels/fault.c — the fault-injection points of SLUICE_FAULT_INJECT builds.
 *
 * Each SL_FI() mark in the algorithms calls sl__fi_point(), which with
 * probability 1/SL_FI_RATE (environment, default 16) stalls the thread: a
 * yield, a short spin, or (rarely) a sleep of a few microseconds. The random
 * source is per thread, seeded from SL_FI_SEED (default: the clock) and the
 * thread's address, so a failing run can be repeated with its seed on a
 * quiet machine more often than not.
 *
 * A test may instead arm its own thread (sl__fi_arm, internal/testing.h): the
 * thread then counts the marks it passes, takes no random stall, and at the
 * k-th mark from arming calls the test's stop function, which reports the stop
 * and blocks on the test's own synchronisation until the test lets it go.
 * That stops a thread deterministically at any chosen atomic step, for the
 * lock-freedom checks (tests/stress_stall.c). In other builds this file is
 * empty.
 */
#include "sluice/base.h"

#if defined(SL_FAULT_INJECT) && SL_FAULT_INJECT
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "internal/testing.h"
#include "internal/util.h"

/* The armed thread's countdown (zeroed: not armed). */
typedef struct fi_armed {
    bool on;
    unsigned stop_at, passed;
    sl_fi_stop_fn stop;
    void *ctx;
} fi_armed;

static _Thread_local fi_armed fi_arm;

void sl__fi_arm(unsigned k, sl_fi_stop_fn stop, void *ctx)
{
    fi_arm = (fi_armed){.on = true, .stop_at = k, .passed = 0, .stop = stop, .ctx = ctx};
}

unsigned sl__fi_disarm(void)
{
    unsigned passed = fi_arm.passed;
    fi_arm = (fi_armed){0};
    return passed;
}

/* An armed thread's mark: counted; the k-th one stops it (once). */
static void fi_armed_point(void)
{
    if (++fi_arm.passed == fi_arm.stop_at && fi_arm.stop)
        fi_arm.stop(fi_arm.ctx, fi_arm.passed);
}

static _Thread_local uint64_t fi_state;
static uint64_t fi_rate; /* set once, first use; benign race: same value */

static uint64_t fi_next(void)
{
    if (fi_state == 0) {
        const char *seed = getenv("SL_FI_SEED");
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t x = (seed ? strtoull(seed, NULL, 0) : (uint64_t)ts.tv_nsec) ^
                     (uint64_t)(uintptr_t)&fi_state ^ 0x9E3779B97F4A7C15ull;
        fi_state = x ? x : 1;
    }
    return sl__xorshift64s(&fi_state);
}

static uint64_t rate(void)
{
    if (fi_rate == 0) {
        const char *r = getenv("SL_FI_RATE");
        uint64_t v = r ? strtoull(r, NULL, 10) : 16;
        fi_rate = v ? v : 16;
    }
    return fi_rate;
}

SL_API void sl__fi_point(void)
{
    if (fi_arm.on) {
        fi_armed_point();
        return;
    }
    uint64_t r = fi_next();
    if (r % rate() != 0)
        return;
    switch ((r >> 32) % 16) {
    case 0: { /* rare: long enough for the other core to run a while */
        struct timespec ts = {0, (long)(1000 + (r >> 40) % 20000)};
        nanosleep(&ts, NULL);
        break;
    }
    case 1: case 2: case 3: case 4: case 5: case 6:
        sched_yield();
        break;
    default:
        for (volatile unsigned i = 0, n = (unsigned)((r >> 40) % 3000); i < n; i++) {
        }
    }
}
#else
/* ISO C forbids an empty translation unit. */
typedef int sl_fault_injection_is_off;
#endif
