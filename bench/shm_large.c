/*
 * shm_large.c — sl-shm-large: an SL_MPMC channel of large messages (up to
 * SL_ELEM_MAX bytes, where `sl-bench` stops at 256) between threads, in a
 * shared-memory segment or in process memory, for comparing two builds of
 * sluice (docs/performance.md, "Shared channels over 256 bytes").
 *
 *   sl-shm-large SIZE MSGS PRODUCERS CONSUMERS [shm|local]
 *
 * Each producer sends MSGS messages of SIZE bytes (its id and a sequence
 * number in the first 16 bytes, a pattern in the rest) with sl_chan_send;
 * the consumers receive until the channel, closed after the last producer,
 * says SL_CLOSED. Each message is checked whole and in order per producer;
 * any error stops the run with a message. Prints messages per second
 * (millions) over the whole run, on one line, for a shell loop to collect.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sluice/chan.h"
#include "sluice/shm.h"

#define MAX_THREADS 16

static sl_chan *chan;
static size_t size;
static uint64_t msgs;
static _Atomic uint64_t received;

static unsigned char pattern(uint64_t id, uint64_t seq, size_t i)
{
    return (unsigned char)(id * 131u + seq * 7u + i);
}

static _Noreturn void fail(const char *what)
{
    fprintf(stderr, "sl-shm-large: %s\n", what);
    exit(1);
}

static void *produce(void *arg)
{
    uint64_t id = (uintptr_t)arg;
    unsigned char *m = malloc(size);
    if (!m)
        fail("out of memory");
    for (uint64_t seq = 0; seq < msgs; seq++) {
        memcpy(m, &id, 8);
        memcpy(m + 8, &seq, 8);
        for (size_t i = 16; i < size; i++)
            m[i] = pattern(id, seq, i);
        if (sl_chan_send(chan, m) != SL_OK)
            fail("a send failed");
    }
    free(m);
    return NULL;
}

static void *consume(void *arg)
{
    (void)arg;
    unsigned char *m = malloc(size);
    uint64_t *next = calloc(MAX_THREADS, sizeof *next), n = 0;
    if (!m || !next)
        fail("out of memory");
    while (sl_chan_recv(chan, m) == SL_OK) {
        uint64_t id, seq;
        memcpy(&id, m, 8);
        memcpy(&seq, m + 8, 8);
        if (id >= MAX_THREADS || seq < next[id])
            fail("a message out of order or not one sent");
        next[id] = seq + 1;
        for (size_t i = 16; i < size; i += 61) /* a sample of the pattern */
            if (m[i] != pattern(id, seq, i))
                fail("a message torn");
        if (m[size - 1] != pattern(id, seq, size - 1))
            fail("a message's last byte wrong");
        n++;
    }
    atomic_fetch_add(&received, n);
    free(m);
    free(next);
    return NULL;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fputs("usage: sl-shm-large SIZE MSGS PRODUCERS CONSUMERS [shm|local]\n", stderr);
        return 2;
    }
    size = strtoull(argv[1], NULL, 0);
    msgs = strtoull(argv[2], NULL, 0);
    int producers = atoi(argv[3]), consumers = atoi(argv[4]);
    int shared = argc < 6 || strcmp(argv[5], "local") != 0;
    if (size < 17 || size > SL_ELEM_MAX || producers < 1 || producers > MAX_THREADS ||
        consumers < 1 || consumers > MAX_THREADS)
        fail("SIZE 17..65536, 1..16 producers and consumers");
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = size, .capacity = 1024};
    if ((shared ? sl_chan_shm_create(&chan, NULL, &o, 0) : sl_chan_new(&chan, &o)) != SL_OK)
        fail("the channel could not be made");
    pthread_t p[MAX_THREADS], c[MAX_THREADS];
    double t0 = now_s();
    for (int i = 0; i < consumers; i++)
        pthread_create(&c[i], NULL, consume, NULL);
    for (int i = 0; i < producers; i++)
        pthread_create(&p[i], NULL, produce, (void *)(uintptr_t)i);
    for (int i = 0; i < producers; i++)
        pthread_join(p[i], NULL);
    sl_chan_close(chan);
    for (int i = 0; i < consumers; i++)
        pthread_join(c[i], NULL);
    double t1 = now_s();
    if (atomic_load(&received) != msgs * (uint64_t)producers)
        fail("messages lost or invented");
    printf("%.3f\n", (double)(msgs * (uint64_t)producers) / (t1 - t0) / 1e6);
    sl_chan_free(chan);
    return 0;
}
