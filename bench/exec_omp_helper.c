/*
 * exec_omp_helper.c — sl-bench-omp-llvm: the OpenMP workloads on LLVM's
 * libomp, in a process of their own.
 *
 * sl-bench links GCC's libgomp, and two OpenMP runtimes cannot live in one
 * process; so `sl-bench exec` starts this helper once, keeps it for all
 * rounds (its runtime, like every other, is created once), and sends it one
 * request per run over a pipe (protocol in exec_omp.h). The helper times
 * each run itself — wall clock and its own user+sys CPU time — so that
 * neither the pipe nor the parent is in the figures.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "exec_omp.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t cpu_ns(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000u +
           ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000u;
}

/* Parses one request; false if it is malformed. */
static bool parse_request(const char *line, slb_xparams *p)
{
    unsigned work, n, depth, root, bdepth, bcons;
    unsigned long long iters;
    double b0;
    if (sscanf(line, "run %u %u %lf %u %u %u %u %llu", &work, &n, &b0, &depth, &root,
               &bdepth, &bcons, &iters) != 8 || work >= SLB_XWORKS)
        return false;
    memset(p, 0, sizeof(*p));
    p->work = (slb_xwork)work;
    p->n = n;
    p->uts_b0 = b0;
    p->uts_depth = depth;
    p->uts_root = root;
    p->bpc_depth = bdepth;
    p->bpc_consumers = bcons;
    p->bpc_iters = iters;
    return true;
}

int main(int argc, char **argv)
{
    unsigned threads = argc == 2 ? (unsigned)strtoul(argv[1], NULL, 10) : 0;
    if (threads == 0) {
        fprintf(stderr, "usage: %s THREADS (started by sl-bench exec)\n", argv[0]);
        return 2;
    }
    const char *why = slb_x_omp_start(threads);
    if (why) {
        printf("error %s\n", why);
        return 1;
    }
    printf("ready\n");
    fflush(stdout);
    char line[512];
    while (fgets(line, sizeof(line), stdin)) {
        slb_xparams p;
        slb_xresult r = { 0 };
        if (!parse_request(line, &p)) {
            printf("error bad request\n");
            fflush(stdout);
            continue;
        }
        uint64_t c0 = cpu_ns(), t0 = now_ns();
        bool ok = slb_x_omp_run(&p, &r);
        uint64_t t1 = now_ns(), c1 = cpu_ns();
        if (ok)
            printf("ok %llu %llu %llu %llu\n", (unsigned long long)r.value,
                   (unsigned long long)r.checksum, (unsigned long long)(t1 - t0),
                   (unsigned long long)(c1 - c0));
        else
            printf("error the run failed\n");
        fflush(stdout);
    }
    return 0;
}
