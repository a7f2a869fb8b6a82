/*
 * pool/exec_deque.c — the Chase–Lev deque's cold paths: creation, growth,
 * destruction. The hot operations are inline in exec_deque.h, where the
 * orderings are explained.
 */
#include "exec_deque.h"
#include "internal/sysops.h"

#include <stdlib.h>

static sl__deque_array *array_new(int64_t capacity)
{
    sl__deque_array *a = sl__alloc(0, sizeof *a + (size_t)capacity * sizeof a->slot[0]);
    if (!a)
        return NULL;
    a->mask = capacity - 1;
    a->retired_next = NULL;
    for (int64_t i = 0; i < capacity; i++)
        atomic_init(&a->slot[i], NULL);
    return a;
}

bool sl__deque_init(sl__deque *d, unsigned log2_cap)
{
    sl__deque_array *a = array_new((int64_t)1 << log2_cap);
    if (!a)
        return false;
    atomic_init(&d->top, 0);
    atomic_init(&d->bottom, 0);
    atomic_init(&d->array, a);
    d->retired = NULL;
    return true;
}

void sl__deque_destroy(sl__deque *d)
{
    free(atomic_load_explicit(&d->array, memory_order_relaxed));
    while (d->retired) {
        sl__deque_array *next = d->retired->retired_next;
        free(d->retired);
        d->retired = next;
    }
}

/* Only the owner calls this, from push, with t and b as push read them: the
 * items in [t, b) are live (thieves may take some of them meanwhile, which is
 * fine: they take from the old or the new array, and both hold the same item
 * at a given index). */
sl__deque_array *sl__deque_grow(sl__deque *d, sl__deque_array *a, int64_t t, int64_t b)
{
    sl__deque_array *bigger = array_new(2 * (a->mask + 1));
    if (!bigger)
        return NULL;
    for (int64_t i = t; i < b; i++) {
        void *item = atomic_load_explicit(&a->slot[i & a->mask], memory_order_relaxed);
        atomic_store_explicit(&bigger->slot[i & bigger->mask], item, memory_order_relaxed);
    }
    /* Thieves may still read the old array: keep it until destroy. */
    a->retired_next = d->retired;
    d->retired = a;
    /* release: the copied slots before the pointer that exposes them */
    atomic_store_explicit(&d->array, bigger, memory_order_release);
    return bigger;
}
