/*
 * glib_async.c — GLib's GAsyncQueue, the blocking queue GTK programs use.
 *
 * GAsyncQueue carries non-NULL pointers and is unbounded. An 8-byte message
 * travels as the pointer value itself (the driver never sends an all-zero
 * word, so it is never NULL); a larger one is copied into a g_malloc'd block
 * that the receiver frees, which is how programs pass structs through it.
 * push never waits (no bound); pop sleeps on GLib's condition variable.
 */
#include <glib.h>
#include <stdlib.h>
#include <string.h>

#include "contender.h"
#include "peers/peers.h"

typedef struct gaq {
    GAsyncQueue *q;
    size_t elem_size;
} gaq;

static void *gaq_create(size_t capacity, size_t elem_size)
{
    (void)capacity; /* unbounded: said so in the table */
    gaq *a = malloc(sizeof(*a));
    if (!a)
        return NULL;
    a->q = g_async_queue_new();
    a->elem_size = elem_size;
    return a;
}

static void gaq_destroy(void *p)
{
    gaq *a = p;
    gpointer v;
    while (a->elem_size != sizeof(gpointer) && (v = g_async_queue_try_pop(a->q)) != NULL)
        g_free(v);
    g_async_queue_unref(a->q);
    free(a);
}

static gpointer gaq_wrap(const gaq *a, const void *m)
{
    if (a->elem_size == sizeof(gpointer)) {
        gpointer v;
        memcpy(&v, m, sizeof(v));
        if (!v)
            slb_die("GAsyncQueue", "adapter given an all-zero 8-byte message");
        return v;
    }
    return g_memdup2(m, a->elem_size);
}

static void gaq_unwrap(const gaq *a, gpointer v, void *m)
{
    if (a->elem_size == sizeof(gpointer)) {
        memcpy(m, &v, sizeof(v));
        return;
    }
    memcpy(m, v, a->elem_size);
    g_free(v);
}

static bool gaq_push(void *p, void *h, const void *m)
{
    gaq *a = p;
    (void)h;
    g_async_queue_push(a->q, gaq_wrap(a, m));
    return true;
}

static bool gaq_try_pop(void *p, void *h, void *m)
{
    gaq *a = p;
    (void)h;
    gpointer v = g_async_queue_try_pop(a->q);
    if (!v)
        return false;
    gaq_unwrap(a, v, m);
    return true;
}

static bool gaq_pop(void *p, void *h, void *m)
{
    gaq *a = p;
    (void)h;
    gaq_unwrap(a, g_async_queue_pop(a->q), m);
    return true;
}

static const slb_ops gaq_ops = {
    .name = "GAsyncQueue", .peer = "glib", .kind = SLB_BLOCKING,
    .flags = SLB_FIFO | SLB_UNBOUNDED,
    .note = "unbounded; 8 bytes as the pointer value, larger ones g_malloc'd",
    .create = gaq_create, .destroy = gaq_destroy,
    .try_push = gaq_push, .try_pop = gaq_try_pop,
    .push = gaq_push, .pop = gaq_pop,
};

static const slb_ops *const gaq_list[] = { &gaq_ops, NULL };

const slb_ops *const *slb_peers_glib(void)
{
    return gaq_list;
}
