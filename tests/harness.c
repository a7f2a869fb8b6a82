#include "harness.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

uint64_t sl_test_scaled(uint64_t n, uint64_t floor)
{
    const char *v = getenv("SL_STRESS_SCALE");
    double scale = v ? strtod(v, NULL) : 1.0;
    if (!(scale > 0.0)) scale = 1.0;
    double r = (double)n * scale;
    uint64_t out = (uint64_t)r;
    return out < floor ? floor : out;
}

unsigned sl_test_env_uint(const char *name, unsigned def)
{
    const char *v = getenv(name);
    if (!v || !*v) return def;
    char *end = NULL;
    unsigned long x = strtoul(v, &end, 10);
    return (end && *end == '\0' && x > 0 && x < 4096) ? (unsigned)x : def;
}

void sl_test_barrier_init(sl_test_barrier *b, unsigned count)
{
    pthread_barrier_init(&b->b, NULL, count);
}

void sl_test_barrier_wait(sl_test_barrier *b) { pthread_barrier_wait(&b->b); }

void sl_test_barrier_destroy(sl_test_barrier *b) { pthread_barrier_destroy(&b->b); }

void sl_test_rng_seed(sl_test_rng *r, uint64_t seed)
{
    r->s = seed ? seed : 0x9E3779B97F4A7C15ull;
}

uint64_t sl_test_rng_next(sl_test_rng *r)
{
    uint64_t x = r->s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    r->s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

void sl_test_maybe_stall(sl_test_rng *r, unsigned one_in)
{
    if (one_in == 0 || sl_test_rng_next(r) % one_in != 0) return;
    switch (sl_test_rng_next(r) % 3) {
    case 0: sched_yield(); break;
    case 1:
        for (volatile unsigned i = 0; i < 2000; i++) {
        }
        break;
    default: {
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
    }
}

uint64_t sl_test_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int sl_test_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
