/*
 * bench/opcount.c — one flavour's send+receive pair, single-threaded, for
 * instruction counting under callgrind (repeatable on a noisy machine):
 *
 *   valgrind --tool=callgrind --callgrind-out-file=/dev/null \
 *       build/default/bench/sl-opcount mpmc 1000000
 *
 * divides callgrind's total by the count to get instructions per pair (minus
 * the start-up, which the `0` run measures). No threads, so no contention:
 * this is the floor each flavour starts from.
 *
 * chan-F-recv16 and chan-F-recvn16 count one round of 16 sends and then 16
 * sl_chan_recv, or one sl_chan_recv_n of 16: the same sends, so the
 * difference per round is what the batch receive saves.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice.h"

typedef struct { uint64_t w[8]; } msg64;

static int run_raw(const char *what, long n)
{
    uint64_t v = 1, out = 0;
    if (strcmp(what, "spsc") == 0) {
        sl_spsc q;
        sl_spsc_init(&q, 8, 1024);
        for (long i = 0; i < n; i++) {
            sl_spsc_try_push(&q, &v);
            sl_spsc_try_pop(&q, &out);
        }
        sl_spsc_destroy(&q);
    } else if (strcmp(what, "mpmc") == 0) {
        sl_mpmc q;
        sl_mpmc_init(&q, 8, 1024);
        for (long i = 0; i < n; i++) {
            sl_mpmc_try_push(&q, &v);
            sl_mpmc_try_pop(&q, &out);
        }
        sl_mpmc_destroy(&q);
    } else if (strcmp(what, "list") == 0) {
        sl_list q;
        sl_list_init(&q, 8);
        for (long i = 0; i < n; i++) {
            sl_list_try_push(&q, &v);
            sl_list_try_pop(&q, &out);
        }
        sl_list_destroy(&q);
    } else if (strcmp(what, "ring") == 0) {
        sl_ring q;
        sl_ring_init(&q, 8, 1024);
        for (long i = 0; i < n; i++) {
            sl_ring_try_push(&q, &v, NULL);
            sl_ring_try_pop(&q, &out);
        }
        sl_ring_destroy(&q);
    } else if (strcmp(what, "ring-full") == 0 || strcmp(what, "ring-full-64") == 0) {
        /* One push into a full ring per count: each displaces the oldest. */
        bool big = what[9] != 0;
        msg64 m = {{1}}, ev = {{0}};
        sl_ring q;
        sl_ring_init(&q, big ? sizeof m : 8, 1024);
        for (long i = 0; i < 1024; i++)
            sl_ring_try_push(&q, &m, NULL);
        for (long i = 0; i < n; i++)
            sl_ring_try_push(&q, &m, &ev);
        sl_ring_destroy(&q);
        out = ev.w[0];
    } else if (strcmp(what, "mpmc-64") == 0) {
        msg64 m = {{1}}, o = {{0}};
        sl_mpmc q;
        sl_mpmc_init(&q, sizeof m, 1024);
        for (long i = 0; i < n; i++) {
            sl_mpmc_try_push(&q, &m);
            sl_mpmc_try_pop(&q, &o);
        }
        sl_mpmc_destroy(&q);
        out = o.w[0];
    } else {
        return -1;
    }
    return (int)(out != v);
}

/* n try_send + try_recv pairs of elem-byte messages (8 or 64) on ch; 1 if
 * the last message came back wrong. */
static int pairs(sl_chan *ch, long n, size_t elem)
{
    msg64 v = {{1, 2, 3, 4, 5, 6, 7, 8}}, out = {{0}};
    for (long i = 0; i < n; i++) {
        sl_chan_try_send(ch, &v);
        sl_chan_try_recv(ch, &out);
    }
    return (int)(n > 0 && memcmp(&out, &v, elem) != 0);
}

static int run_chan(sl_flavor f, long n, size_t elem)
{
    sl_chan *ch;
    sl_chan_opts o = {.flavor = f, .elem_size = elem, .capacity = 1024};
    if (sl_chan_new(&ch, &o) != SL_OK)
        return 1;
    int r = pairs(ch, n, elem);
    sl_chan_free(ch);
    return r;
}

/* The same pair on a channel in shared memory (sluice/shm.h), through a
 * handle opened from the segment's descriptor as a peer process would. */
static int run_chan_shm(sl_flavor f, long n, size_t elem)
{
    sl_chan *made, *ch;
    sl_chan_opts o = {.flavor = f, .elem_size = elem, .capacity = 1024};
    if (sl_chan_shm_create(&made, NULL, &o, 0) != SL_OK)
        return 1;
    if (sl_chan_shm_open_fd(&ch, sl_chan_shm_fd(made), &o) != SL_OK)
        return 1;
    int r = pairs(ch, n, elem);
    sl_chan_free(ch);
    sl_chan_free(made);
    return r;
}

/* 16 sends, then 16 blocking receives or one blocking batch receive of 16. */
static int run_chan_recv16(sl_flavor f, long n, bool batched)
{
    sl_chan *ch;
    sl_chan_opts o = {.flavor = f, .elem_size = 8, .capacity = 1024};
    if (sl_chan_new(&ch, &o) != SL_OK)
        return 1;
    uint64_t out[16] = {0};
    size_t got = 16;
    for (long i = 0; i < n; i++) {
        for (uint64_t k = 0; k < 16; k++)
            sl_chan_try_send(ch, &k);
        if (batched)
            sl_chan_recv_n(ch, out, 16, &got);
        else
            for (int k = 0; k < 16; k++)
                sl_chan_recv(ch, &out[k]);
    }
    sl_chan_free(ch);
    return (int)(got != 16 || out[15] != 15);
}

/* A send and a receive as sl-bench's select contenders make them: each an
 * sl_select of two cases, the channel's and an idle channel's (full for
 * the send, empty for the receive), on SL_MPMC channels of 8 bytes; with
 * `shared`, the channel's in shared memory (the idle ones in process). */
static int run_chan_select(long n, bool shared)
{
    sl_chan *ch, *full, *empty, *made = NULL;
    sl_chan_opts o = {.flavor = SL_MPMC, .elem_size = 8, .capacity = 1024};
    sl_chan_opts one = {.flavor = SL_MPMC, .elem_size = 8, .capacity = 1};
    if (shared ? sl_chan_shm_create(&made, NULL, &o, 0) != SL_OK ||
                     sl_chan_shm_open_fd(&ch, sl_chan_shm_fd(made), &o) != SL_OK
               : sl_chan_new(&ch, &o) != SL_OK)
        return 1;
    if (sl_chan_new(&full, &one) != SL_OK || sl_chan_new(&empty, &one) != SL_OK)
        return 1;
    uint64_t v = 1, out = 0, other = 0;
    sl_chan_try_send(full, &v);
    sl_select_case send[2] = {{full, SL_SEL_SEND, &other}, {ch, SL_SEL_SEND, &v}};
    sl_select_case recv[2] = {{empty, SL_SEL_RECV, &other}, {ch, SL_SEL_RECV, &out}};
    size_t i = 0, j = 0;
    int bad = 0;
    for (long k = 0; k < n; k++) {
        bad |= sl_select(send, 2, SL_FOREVER, &i) != SL_OK || i != 1;
        bad |= sl_select(recv, 2, SL_FOREVER, &j) != SL_OK || j != 1;
    }
    sl_chan_free(ch);
    sl_chan_free(made);
    sl_chan_free(full);
    sl_chan_free(empty);
    return bad || (n > 0 && out != v);
}

static const struct { const char *name; sl_flavor f; } chan_names[] = {
    {"spsc", SL_SPSC}, {"mpmc", SL_MPMC}, {"list", SL_LIST}, {"ring", SL_RING}};

/* chan-F-recv16 / chan-F-recvn16, or -1 for another name. */
static int run_recv16_named(const char *w, long n)
{
    for (size_t i = 0; i < sizeof chan_names / sizeof chan_names[0]; i++) {
        char a[32], b[32];
        snprintf(a, sizeof a, "chan-%s-recv16", chan_names[i].name);
        snprintf(b, sizeof b, "chan-%s-recvn16", chan_names[i].name);
        if (strcmp(w, a) == 0 || strcmp(w, b) == 0)
            return run_chan_recv16(chan_names[i].f, n, strcmp(w, b) == 0);
    }
    return -1;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: sl-opcount spsc|mpmc|mpmc-64|list|ring|ring-full|ring-full-64|"
                        "chan-spsc|chan-mpmc|chan-mpmc-64|chan-spsc-shm|chan-mpmc-shm|chan-mpmc-shm-64|"
                        "chan-list|chan-ring|chan-mpmc-select|chan-mpmc-shm-select|chan-F-recv16|"
                        "chan-F-recvn16 "
                        "COUNT\n");
        return 2;
    }
    long n = atol(argv[2]);
    const char *w = argv[1];
    int r;
    if (strcmp(w, "chan-spsc") == 0)
        r = run_chan(SL_SPSC, n, 8);
    else if (strcmp(w, "chan-mpmc") == 0)
        r = run_chan(SL_MPMC, n, 8);
    else if (strcmp(w, "chan-mpmc-64") == 0)
        r = run_chan(SL_MPMC, n, 64);
    else if (strcmp(w, "chan-spsc-shm") == 0)
        r = run_chan_shm(SL_SPSC, n, 8);
    else if (strcmp(w, "chan-mpmc-shm") == 0)
        r = run_chan_shm(SL_MPMC, n, 8);
    else if (strcmp(w, "chan-mpmc-shm-64") == 0)
        r = run_chan_shm(SL_MPMC, n, 64);
    else if (strcmp(w, "chan-list") == 0)
        r = run_chan(SL_LIST, n, 8);
    else if (strcmp(w, "chan-ring") == 0)
        r = run_chan(SL_RING, n, 8);
    else if (strcmp(w, "chan-mpmc-select") == 0)
        r = run_chan_select(n, false);
    else if (strcmp(w, "chan-mpmc-shm-select") == 0)
        r = run_chan_select(n, true);
    else if ((r = run_recv16_named(w, n)) < 0)
        r = run_raw(w, n);
    if (r < 0) {
        fprintf(stderr, "sl-opcount: unknown flavour %s\n", w);
        return 2;
    }
    return r;
}
