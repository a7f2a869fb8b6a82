/*
 * internal/util.h — the small things the library's files share (internal):
 * the CPU count, thread names, and a cheap per-thread random generator.
 */
#ifndef SLUICE_INTERNAL_UTIL_H
#define SLUICE_INTERNAL_UTIL_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

/* Online CPUs, clamped to [1, max]. */
static inline unsigned sl__online_cpus(unsigned max)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        return 1;
    return n > (long)max ? max : (unsigned)n;
}

/* Names a thread "prefix/suffix" (what top -H and debuggers show). Linux
 * keeps 15 bytes of a name; the rest is cut, never an error. */
static inline void sl__thread_name(pthread_t t, const char *prefix, const char *suffix)
{
    char name[48];
    snprintf(name, sizeof name, "%s/%s", prefix, suffix);
    name[15] = '\0';
    pthread_setname_np(t, name);
}

/* xorshift64* (Vigna): one step of the state, a scrambled 64-bit output.
 * The state must not be 0 (it would stay 0). Cheap and good enough to spread
 * steal victims, select's starting case and fault points; not for anything
 * that needs a cryptographic or statistically strong source. */
static inline uint64_t sl__xorshift64s(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * UINT64_C(0x2545F4914F6CDD1D);
}

#endif /* SLUICE_INTERNAL_UTIL_H */
