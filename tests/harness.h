/*
 * tests/harness.h — what every sluice test suite shares.
 *
 * Sizes scale with SL_STRESS_SCALE (1.0 by default; the sanitizer presets
 * lower it), thread counts come from the environment, a start barrier lines
 * threads up, and a tiny xorshift RNG makes random stalls reproducible from a
 * seed printed on failure.
 */
#ifndef SLUICE_TESTS_HARNESS_H
#define SLUICE_TESTS_HARNESS_H

#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>

/* n scaled by SL_STRESS_SCALE, at least `floor`. */
uint64_t sl_test_scaled(uint64_t n, uint64_t floor);
/* An unsigned from the environment variable `name`, or `def`. */
unsigned sl_test_env_uint(const char *name, unsigned def);

/* A reusable start barrier: every thread calls wait, all leave together. */
typedef struct sl_test_barrier {
    pthread_barrier_t b;
} sl_test_barrier;
void sl_test_barrier_init(sl_test_barrier *b, unsigned count);
void sl_test_barrier_wait(sl_test_barrier *b);
void sl_test_barrier_destroy(sl_test_barrier *b);

/* xorshift64* — deterministic per seed, never returns 0 state. */
typedef struct sl_test_rng { uint64_t s; } sl_test_rng;
void sl_test_rng_seed(sl_test_rng *r, uint64_t seed);
uint64_t sl_test_rng_next(sl_test_rng *r);
/* With probability 1/one_in, stall the thread: yield, spin or sleep briefly. */
void sl_test_maybe_stall(sl_test_rng *r, unsigned one_in);

/* Monotonic nanoseconds (the real clock, not sluice's replaceable one). */
uint64_t sl_test_now_ns(void);

/* Runs the suite with Check and returns the process exit status. */
int sl_test_run(Suite *s);

#endif
