/*
 * burst_latency.c — sl-burst-latency: the latency of a message that lands
 * shortly after a burst, which a receiver that has just taken the burst
 * (a full receive streak: channels/chan_wait.c) waits for with a patient first
 * look (docs/performance.md, "The receive streak").
 *
 *   sl-burst-latency GAP_NS [ROUNDS]
 *
 * Two threads pinned to CPUs 0 and 1, one SL_MPMC channel of 64-byte
 * messages (capacity 1024) and one for acknowledgements. Each round the
 * sender sends a burst of 32 messages, waits GAP_NS after the last one
 * (spinning on the clock), and sends one message carrying the time it was
 * sent; the receiver takes the burst, then that message, records how long
 * after its send it arrived, and acknowledges the round. Every message's
 * round and place in it are checked. Prints the median and the 90th
 * percentile over ROUNDS (default 4000) on one line: for two builds,
 * alternate the binaries in a shell loop.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "sluice/chan.h"

enum { BURST = 32, WORDS = 8 };

static sl_chan *data, *acks;
static uint64_t gap_ns;
static unsigned rounds = 4000;

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void pin(int cpu)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    (void)pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

static void must(sl_status st, const char *what)
{
    if (st != SL_OK) {
        fprintf(stderr, "sl-burst-latency: %s returned %s\n", what, sl_status_str(st));
        exit(1);
    }
}

/* m[0] the round, m[1] the place in it (BURST: the timed one), m[2] the
 * send time of the timed one. */
static void *sender(void *arg)
{
    (void)arg;
    pin(1);
    uint64_t m[WORDS] = {0};
    for (unsigned r = 0; r < rounds; r++) {
        m[0] = r;
        for (m[1] = 0; m[1] < BURST; m[1]++)
            must(sl_chan_send(data, m), "sl_chan_send");
        for (uint64_t until = now_ns() + gap_ns; now_ns() < until;)
            ;
        m[2] = now_ns();
        must(sl_chan_send(data, m), "sl_chan_send");
        must(sl_chan_recv(acks, m), "sl_chan_recv (ack)");
    }
    return NULL;
}

static void take(uint64_t *m, unsigned r, uint64_t place)
{
    must(sl_chan_recv(data, m), "sl_chan_recv");
    if (m[0] != r || m[1] != place) {
        fprintf(stderr, "sl-burst-latency: round %u place %llu got round %llu place %llu\n", r,
                (unsigned long long)place, (unsigned long long)m[0], (unsigned long long)m[1]);
        exit(1);
    }
}

static int by_value(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3 || (argc == 3 && atoi(argv[2]) <= 0)) {
        fprintf(stderr, "usage: sl-burst-latency GAP_NS [ROUNDS]\n");
        return 2;
    }
    gap_ns = strtoull(argv[1], NULL, 10);
    if (argc == 3)
        rounds = (unsigned)atoi(argv[2]);
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = WORDS * 8, .capacity = 1024};
    must(sl_chan_new(&data, &o), "sl_chan_new");
    must(sl_chan_new(&acks, &o), "sl_chan_new");
    uint64_t *lat = malloc(rounds * sizeof *lat), m[WORDS];
    if (!lat)
        return 1;
    pin(0);
    pthread_t t;
    if (pthread_create(&t, NULL, sender, NULL) != 0)
        return 1;
    for (unsigned r = 0; r < rounds; r++) {
        for (uint64_t place = 0; place <= BURST; place++)
            take(m, r, place);
        lat[r] = now_ns() - m[2];
        must(sl_chan_send(acks, m), "sl_chan_send (ack)");
    }
    pthread_join(t, NULL);
    qsort(lat, rounds, sizeof *lat, by_value);
    printf("gap %llu ns: latency p50 %llu ns, p90 %llu ns (%u rounds)\n",
           (unsigned long long)gap_ns, (unsigned long long)lat[rounds / 2],
           (unsigned long long)lat[rounds * 9 / 10], rounds);
    free(lat);
    sl_chan_free(data);
    sl_chan_free(acks);
    return 0;
}
