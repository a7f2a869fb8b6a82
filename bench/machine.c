/*
 * machine.c — the "machine:" line every sl-bench mode prints first: the CPU,
 * how many CPUs the run may use, the load average, and the core-to-core round
 * trip measured now.
 *
 * The round trip is printed with every run because on a VM it moves (here
 * between ~70 and ~900 ns as the host moves the vCPUs), and every figure that
 * crosses cores moves with it: figures are comparable only within one run,
 * or between runs whose round trips agree.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"

/* Other work on the machine skews every figure; the reader should know. */
static void load_average(char *buf, size_t len)
{
    snprintf(buf, len, "unknown");
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f)
        return;
    if (fgets(buf, (int)len, f)) {
        char *cut = buf;
        for (int i = 0; i < 3 && cut; i++)
            cut = strchr(cut + 1, ' ');
        if (cut)
            *cut = '\0';
    }
    fclose(f);
}

#define RT_TRIPS 2000u   /* trips per sample */
#define RT_SAMPLES 9u    /* the median of these */
#define RT_LIMIT_NS 200000000u /* give up after 200 ms (a CPU we could not get) */

/* The ball and the stop flag share one line, which the two threads bounce
 * between cores; the flag is read on the line the pong already holds. */
static struct {
    _Alignas(64) atomic_uint ball;
    atomic_int stop;
} rt;

static void *rt_pong(void *arg)
{
    (void)arg;
    slb_pin_self(1);
    unsigned seen = 0;
    while (!atomic_load_explicit(&rt.stop, memory_order_relaxed)) {
        unsigned v = atomic_load_explicit(&rt.ball, memory_order_acquire);
        if (v != seen && (v & 1u)) { /* odd: a ping; answer with the next even */
            seen = v + 1;
            atomic_store_explicit(&rt.ball, seen, memory_order_release);
        }
    }
    return NULL;
}

/* 0 also when no thread could be made. */
double slb_round_trip_ns(void)
{
    /* Whether the run may use two CPUs, as its mask said at the first call
     * (the machine line's): a mode may pin its main thread to one CPU
     * later (ipc), and the measurement still pins its two threads apart. */
    static int two_cpus = -1;
    if (two_cpus < 0)
        two_cpus = slb_ncpu() >= 2;
    if (!two_cpus)
        return 0;
    pthread_t t;
    atomic_store(&rt.ball, 0);
    atomic_store(&rt.stop, 0);
    if (pthread_create(&t, NULL, rt_pong, NULL) != 0)
        return 0;
    cpu_set_t before;
    pthread_getaffinity_np(pthread_self(), sizeof before, &before);
    slb_pin_self(0);
    double samples[RT_SAMPLES];
    unsigned n = 0, v = 0;
    uint64_t start = slb_now_ns();
    for (; n < RT_SAMPLES && slb_now_ns() - start < RT_LIMIT_NS; n++) {
        uint64_t t0 = slb_now_ns();
        for (unsigned i = 0; i < RT_TRIPS; i++) {
            atomic_store_explicit(&rt.ball, ++v, memory_order_release); /* odd */
            while (atomic_load_explicit(&rt.ball, memory_order_acquire) == v)
                if (slb_now_ns() - start > RT_LIMIT_NS)
                    goto out;
            ++v; /* the pong's even answer */
        }
        samples[n] = (double)(slb_now_ns() - t0) / RT_TRIPS;
    }
out:
    atomic_store(&rt.stop, 1);
    pthread_join(t, NULL);
    pthread_setaffinity_np(pthread_self(), sizeof before, &before);
    return n ? slb_median(samples, n) : 0;
}

bool slb_run_measured(bool (*fn)(void *arg, slb_result *res), void *arg, slb_result *res)
{
    double before = slb_round_trip_ns();
    bool ok = fn(arg, res);
    double after = slb_round_trip_ns();
    res->round_trip = before > after ? before : after;
    return ok;
}

void slb_print_machine(FILE *f)
{
    char cpu[256], load[64], trip[64] = "not measured (one CPU)";
    slb_cpu_model(cpu, sizeof cpu);
    load_average(load, sizeof load);
    double rt_ns = slb_round_trip_ns();
    if (rt_ns > 0)
        snprintf(trip, sizeof trip, "%.0f ns", rt_ns);
    fprintf(f, "machine: %s, %u CPUs available, load average %s, core-to-core round trip %s "
               "(CPUs 0-1, now)\n", cpu, slb_ncpu(), load, trip);
#ifndef __OPTIMIZE__
    /* A build without a build type (or Debug) compiles sluice and the C++
     * adapters at -O0, while cargo --release, go build and the distribution's
     * libraries (ck, tbb, glib, urcu) are optimised whatever we configure. */
    fprintf(f, "WARNING: this sl-bench and the sluice it links were built without "
               "optimisation (use a preset, or CMAKE_BUILD_TYPE=RelWithDebInfo); the peers "
               "in their own process and the system libraries are optimised: the figures "
               "do not compare\n");
#endif
}
