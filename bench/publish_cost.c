/*
 * publish_cost.c — sl-publish-cost: what a locked instruction on the line a
 * consumer polls costs a 1/1 stream of 64-byte messages, next to SL_MPMC.
 *
 *   sl-publish-cost [ROUNDS]
 *
 * Two threads pinned to CPUs 0 and 1 pass 4 million 64-byte messages
 * through 1024 slots of 128 bytes, each slot a stamp word and the message
 * (an array queue in crossbeam's shape, not a queue anyone should use: a
 * producer stopped between its claim and its publication would hold up
 * the consumer for good). With one thread a side there is no claim: the
 * CASes crossbeam makes on its head and tail are left out (at 1/1 each
 * stays on its own side's line, but it is a locked instruction all the
 * same, so store/store runs somewhat faster than crossbeam would). Three
 * ways to publish and free a slot:
 *   store/store  the producer publishes, the consumer frees, each by a
 *                release store of the stamp (crossbeam's bounded channel)
 *   cas/store    the producer publishes with a CAS of the stamp, a locked
 *                instruction on the line the consumer is polling (what a
 *                lock-free ring's publication is: the claim and the write
 *                made one step)
 *   cas/cas      both sides CAS the stamp (SL_MPMC's cell ring: the pop
 *                takes the cell with a CAS too)
 * and `sl_mpmc`, the raw SL_MPMC queue of 64-byte messages (its swap form),
 * capacity 1024. Each round runs the four in a shuffled order; every
 * message's sequence number is checked. Prints each round, the medians and
 * the per-round ratios to store/store, with the core-to-core round trip
 * measured before and after (docs/performance.md, "What a locked
 * publication costs").
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "msg.h"
#include "sluice/mpmc.h"

enum { SLOTS = 1024, MSG = 64, KINDS = 4, ROUNDS_MAX = 64 };
#define MESSAGES 4000000ull

enum kind { STORE_STORE, CAS_STORE, CAS_CAS, SL_MPMC_RAW };
static const char *const kind_name[KINDS] = {"store/store", "cas/store", "cas/cas", "sl_mpmc"};

/* A slot's stamp and its message share the slot's first line; 128 bytes a
 * slot keep the next slot's stamp off it. */
typedef struct slot {
    _Alignas(128) _Atomic uint64_t stamp; /* i: free for message i; i + 1: message i */
    unsigned char msg[MSG];
} slot;

static slot slots[SLOTS];
static sl_mpmc raw;
static enum kind running;
static _Atomic int go;

static void fail(const char *what, uint64_t got, uint64_t want)
{
    fprintf(stderr, "sl-publish-cost: %s: message %llu where %llu was due\n", what,
            (unsigned long long)got, (unsigned long long)want);
    exit(1);
}

static void *producer(void *arg)
{
    (void)arg;
    slb_pin_self(0);
    unsigned char m[MSG];
    memset(m, 0x5a, sizeof m);
    while (!atomic_load(&go))
        ;
    for (uint64_t i = 0; i < MESSAGES; i++) {
        memcpy(m, &i, sizeof i);
        if (running == SL_MPMC_RAW) {
            while (sl_mpmc_try_push(&raw, m) != SL_OK)
                slb_cpu_relax();
            continue;
        }
        slot *s = &slots[i % SLOTS];
        /* Acquire: the consumer's copy out before this overwrite. */
        while (atomic_load_explicit(&s->stamp, memory_order_acquire) != i)
            slb_cpu_relax();
        memcpy(s->msg, m, sizeof m);
        uint64_t free_for_i = i;
        if (running == STORE_STORE) /* release: the bytes before the stamp */
            atomic_store_explicit(&s->stamp, i + 1, memory_order_release);
        else if (!atomic_compare_exchange_strong(&s->stamp, &free_for_i, i + 1))
            fail("publish", free_for_i, i);
    }
    return NULL;
}

static void *consumer(void *arg)
{
    (void)arg;
    slb_pin_self(1);
    unsigned char m[MSG];
    while (!atomic_load(&go))
        ;
    for (uint64_t i = 0; i < MESSAGES; i++) {
        if (running == SL_MPMC_RAW) {
            while (sl_mpmc_try_pop(&raw, m) != SL_OK)
                slb_cpu_relax();
        } else {
            slot *s = &slots[i % SLOTS];
            /* Acquire: pairs with the publication. */
            while (atomic_load_explicit(&s->stamp, memory_order_acquire) != i + 1)
                slb_cpu_relax();
            memcpy(m, s->msg, sizeof m);
            uint64_t written = i + 1;
            if (running != CAS_CAS) /* release: the copy out before the reuse */
                atomic_store_explicit(&s->stamp, i + SLOTS, memory_order_release);
            else if (!atomic_compare_exchange_strong(&s->stamp, &written, i + SLOTS))
                fail("take", written - 1, i);
        }
        uint64_t seq;
        memcpy(&seq, m, sizeof seq);
        if (seq != i)
            fail("receive", seq, i);
    }
    return NULL;
}

/* One run of one kind: millions of messages a second. */
static double run(enum kind k)
{
    running = k;
    atomic_store(&go, 0);
    for (uint64_t i = 0; i < SLOTS; i++)
        atomic_store(&slots[i].stamp, i);
    pthread_t p, c;
    if (pthread_create(&p, NULL, producer, NULL) || pthread_create(&c, NULL, consumer, NULL)) {
        fprintf(stderr, "sl-publish-cost: no threads\n");
        exit(1);
    }
    uint64_t t0 = slb_now_ns();
    atomic_store(&go, 1);
    pthread_join(p, NULL);
    pthread_join(c, NULL);
    return (double)MESSAGES / ((double)(slb_now_ns() - t0) / 1e9) / 1e6;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 9;
    if (rounds < 1 || rounds > ROUNDS_MAX) {
        fprintf(stderr, "usage: sl-publish-cost [ROUNDS 1-%d]\n", ROUNDS_MAX);
        return 2;
    }
    if (sl_mpmc_init(&raw, MSG, SLOTS) != SL_OK)
        return 1;
    slb_print_machine(stdout);
    double rt_before = slb_round_trip_ns();
    static double mps[KINDS][ROUNDS_MAX], ratio[KINDS][ROUNDS_MAX];
    srand(1);
    for (int r = 0; r < rounds; r++) {
        int order[KINDS] = {0, 1, 2, 3};
        for (int i = KINDS - 1; i > 0; i--) {
            int j = rand() % (i + 1), t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        for (int i = 0; i < KINDS; i++)
            mps[order[i]][r] = run((enum kind)order[i]);
        printf("round %d:", r);
        for (int k = 0; k < KINDS; k++) {
            ratio[k][r] = mps[k][r] / mps[STORE_STORE][r];
            printf("  %s %.1f M/s (x%.2f)", kind_name[k], mps[k][r], ratio[k][r]);
        }
        printf("\n");
    }
    double rt_after = slb_round_trip_ns();
    printf("medians over %d rounds (ratio: the median of the per-round ratios to store/store):\n",
           rounds);
    for (int k = 0; k < KINDS; k++)
        printf("  %-12s %6.1f M/s  x%.2f\n", kind_name[k], slb_median(mps[k], (size_t)rounds),
               slb_median(ratio[k], (size_t)rounds));
    printf("round trip %.0f ns before, %.0f ns after\n", rt_before, rt_after);
    sl_mpmc_destroy(&raw);
    return 0;
}
