/*
 * stats.c — clocks, the shuffle's random numbers, order statistics, and the
 * machine facts (CPU count, pinning) the driver needs.
 */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

uint64_t slb_now_ns(void)
{
    /* CLOCK_MONOTONIC goes through the vDSO: no system call, ~20 ns, and it
     * is the clock the stream workload stamps its messages with. */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t slb_rand(uint64_t *state)
{
    /* splitmix64: tiny, seedable with any value, good enough for shuffling;
     * the seed is printed so that an order can be replayed. */
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void slb_shuffle(unsigned *v, size_t n, uint64_t *state)
{
    /* Fisher–Yates, drawing j uniformly from [0, i]. The modulo bias is
     * below 2^-50 for the list sizes here. */
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)(slb_rand(state) % i);
        unsigned t = v[i - 1];
        v[i - 1] = v[j];
        v[j] = t;
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double slb_median(const double *v, size_t n)
{
    if (n == 0)
        return 0;
    double *tmp = malloc(n * sizeof(double));
    if (!tmp)
        return 0;
    memcpy(tmp, v, n * sizeof(double));
    qsort(tmp, n, sizeof(double), cmp_double);
    double m = n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
    free(tmp);
    return m;
}

double slb_min(const double *v, size_t n)
{
    double m = n ? v[0] : 0;
    for (size_t i = 1; i < n; i++)
        m = v[i] < m ? v[i] : m;
    return m;
}

double slb_max(const double *v, size_t n)
{
    double m = n ? v[0] : 0;
    for (size_t i = 1; i < n; i++)
        m = v[i] > m ? v[i] : m;
    return m;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

void slb_sort_u64(uint64_t *v, size_t n)
{
    qsort(v, n, sizeof(uint64_t), cmp_u64);
}

uint64_t slb_percentile(const uint64_t *sorted, size_t n, double p)
{
    /* Nearest rank: the smallest sample with at least p of them at or
     * below it, so p99.9 of 1000 samples is the largest-but-one. */
    if (n == 0)
        return 0;
    double rank = p * (double)n;
    size_t k = (size_t)rank;
    if ((double)k < rank)
        k++;
    return sorted[k ? k - 1 : 0];
}

unsigned slb_ncpu(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0)
        return (unsigned)CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1;
}

void slb_pin_self(int cpu)
{
    /* Pinning failure (a restricted cpuset, one CPU) only makes the figure
     * noisier, so it is reported once and otherwise ignored. */
    static int warned;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET((unsigned)cpu, &set);
    if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) != 0 && !warned) {
        warned = 1;
        fprintf(stderr, "sl-bench: cannot pin a thread to CPU %d; running unpinned\n", cpu);
    }
}

void slb_cpu_model(char *buf, size_t len)
{
    snprintf(buf, len, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof(line), f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) == 0 && colon) {
            colon += 2;
            colon[strcspn(colon, "\n")] = '\0';
            snprintf(buf, len, "%s", colon);
            break;
        }
    }
    fclose(f);
}

int slb_verdict_digits(double r, double target, int digits)
{
    double scale = 1;
    for (int i = 0; i < digits; i++)
        scale *= 10;
    for (; digits < 4; digits++, scale *= 10) {
        double shown = round(r * scale) / scale;
        if ((shown >= target) == (r >= target) && (shown <= target) == (r <= target))
            break;
    }
    return digits;
}
