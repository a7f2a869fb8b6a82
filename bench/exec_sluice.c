/*
 * exec_sluice.c — the workloads on sluice's executor (sluice/exec.h).
 *
 * One local executor with --threads workers, created once in start. The
 * driver's thread is foreign to it: it spawns each workload's root through
 * the injector and waits parked in sl_sync (or sl_scope_end) while the
 * workers do everything, so sluice runs on as many threads as the peers do
 * (their calling thread takes part in place of one worker).
 *
 * Every fork is an sl_spawn with the arguments copied into the task, every
 * join an sl_sync, youngest first (the order in which the worker's own deque
 * gives tasks back). BPC's producers spawn into one scope begun by the root,
 * which they pass down in their arguments; sl_scope_end waits for all.
 * Parameters that do not change within a run (UTS's shape, BPC's sizes) are
 * file statics set before the root is spawned — the spawn happens-before
 * every task, so tasks see them — rather than copied into every task.
 */
#include <stdatomic.h>
#include <string.h>

#include "contender.h"
#include "exec_bench.h"
#include "exec_uts.h"
#include "sluice/exec.h"

#define WHO "sluice spawn/sync"

static sl_exec *ex;

static void must_sync(sl_future *f, void *ret)
{
    sl_status s = sl_sync(f, ret);
    if (s != SL_OK) /* also what a failed spawn (a cleared future) comes to */
        slb_die(WHO, "sl_sync returned %s", sl_status_str(s));
}

/* ---- fib ------------------------------------------------------------------ */

static uint64_t fib(unsigned n);

static void fib_task(void *args, void *ret)
{
    *(uint64_t *)ret = fib(*(const unsigned *)args);
}

static uint64_t fib(unsigned n)
{
    if (n < 2)
        return n;
    unsigned m = n - 1;
    sl_future f = sl_spawn(ex, fib_task, &m, sizeof(m), sizeof(uint64_t));
    uint64_t x, y = fib(n - 2);
    must_sync(&f, &x);
    return x + y;
}

/* ---- nqueens ---------------------------------------------------------------- */

typedef struct nq_args {
    unsigned char n, row; /* board size; rows filled in board */
    char board[16];
} nq_args;

static uint64_t nqueens(const nq_args *a);

static void nq_task(void *args, void *ret)
{
    *(uint64_t *)ret = nqueens(args);
}

static uint64_t nqueens(const nq_args *a)
{
    if (a->row == a->n)
        return 1;
    sl_future f[16];
    unsigned k = 0;
    nq_args next = *a;
    next.row = (unsigned char)(a->row + 1);
    for (unsigned col = 0; col < a->n; col++) {
        next.board[a->row] = (char)col;
        if (slb_x_nq_legal(next.board, next.row))
            f[k++] = sl_spawn(ex, nq_task, &next, sizeof(next), sizeof(uint64_t));
    }
    uint64_t sum = 0;
    while (k > 0) {
        uint64_t found;
        must_sync(&f[--k], &found);
        sum += found;
    }
    return sum;
}

/* ---- UTS ---------------------------------------------------------------------- */

static double uts_b0;
static uint32_t uts_depth;

static uint64_t uts(const slb_uts_node *node);

static void uts_task(void *args, void *ret)
{
    *(uint64_t *)ret = uts(args);
}

static uint64_t uts(const slb_uts_node *node)
{
    sl_future f[SLB_UTS_MAX_KIDS];
    int kids = slb_uts_kids(node, uts_b0, uts_depth);
    for (int i = 0; i < kids; i++) {
        slb_uts_node child;
        slb_uts_child(node, (uint32_t)i, &child);
        f[i] = sl_spawn(ex, uts_task, &child, sizeof(child), sizeof(uint64_t));
    }
    uint64_t sum = 1;
    while (kids > 0) {
        uint64_t nodes;
        must_sync(&f[--kids], &nodes);
        sum += nodes;
    }
    return sum;
}

/* ---- BPC ------------------------------------------------------------------------ */

static const slb_xparams *bpc;
/* Relaxed: sl_scope_end orders every task before the root reads them. */
static _Atomic uint64_t bpc_tasks, bpc_sum;

typedef struct producer_args {
    sl_scope *scope;
    unsigned depth;
} producer_args;

typedef struct consumer_args {
    unsigned producer, consumer;
} consumer_args;

static void consumer_task(void *args, void *ret)
{
    const consumer_args *a = args;
    (void)ret;
    uint64_t r = slb_x_spin(bpc->bpc_iters, slb_x_bpc_seed(a->producer, a->consumer));
    atomic_fetch_add_explicit(&bpc_sum, r, memory_order_relaxed);
    atomic_fetch_add_explicit(&bpc_tasks, 1, memory_order_relaxed);
}

static void producer_task(void *args, void *ret)
{
    const producer_args *a = args;
    (void)ret;
    atomic_fetch_add_explicit(&bpc_tasks, 1, memory_order_relaxed);
    if (a->depth > 1) {
        producer_args next = { a->scope, a->depth - 1 };
        sl_scope_spawn(a->scope, producer_task, &next, sizeof(next));
    }
    for (unsigned c = 0; c < bpc->bpc_consumers; c++) {
        consumer_args job = { a->depth, c };
        sl_scope_spawn(a->scope, consumer_task, &job, sizeof(job));
    }
}

static void run_bpc(const slb_xparams *p, slb_xresult *out)
{
    bpc = p;
    atomic_store_explicit(&bpc_tasks, 0, memory_order_relaxed);
    atomic_store_explicit(&bpc_sum, 0, memory_order_relaxed);
    sl_scope scope;
    sl_scope_begin(ex, &scope);
    producer_args first = { &scope, p->bpc_depth };
    sl_scope_spawn(&scope, producer_task, &first, sizeof(first));
    sl_scope_end(&scope);
    out->value = atomic_load_explicit(&bpc_tasks, memory_order_relaxed);
    out->checksum = atomic_load_explicit(&bpc_sum, memory_order_relaxed);
}

/* ---- the contender ----------------------------------------------------------------- */

static const char *sluice_start(unsigned threads)
{
    sl_exec_opts opts = { threads, "slb-exec" };
    if (sl_exec_new(&ex, &opts) != SL_OK)
        return "sl_exec_new failed";
    /* Wakes every worker once, so that no run pays for a first touch. */
    unsigned n = 16;
    uint64_t r;
    sl_future f = sl_spawn(ex, fib_task, &n, sizeof(n), sizeof(r));
    must_sync(&f, &r);
    return NULL;
}

/* Spawns the root from this (foreign) thread and waits for it, parked. */
static uint64_t spawn_root(sl_task_fn fn, const void *args, size_t size)
{
    uint64_t r;
    sl_future f = sl_spawn(ex, fn, args, size, sizeof(r));
    must_sync(&f, &r);
    return r;
}

static bool sluice_run(const slb_xparams *p, slb_xresult *out)
{
    out->checksum = 0;
    switch (p->work) {
    case SLB_XFIB:
        out->value = spawn_root(fib_task, &p->n, sizeof(p->n));
        return true;
    case SLB_XNQUEENS: {
        nq_args root;
        memset(&root, 0, sizeof(root));
        root.n = (unsigned char)p->n;
        out->value = spawn_root(nq_task, &root, sizeof(root));
        return true;
    }
    case SLB_XUTS: {
        slb_uts_node root;
        uts_b0 = p->uts_b0;
        uts_depth = p->uts_depth;
        slb_uts_root(&root, p->uts_root);
        out->value = spawn_root(uts_task, &root, sizeof(root));
        return true;
    }
    case SLB_XBPC:
        run_bpc(p, out);
        return true;
    default:
        return false;
    }
}

static void sluice_stop(void)
{
    sl_exec_free(ex);
    ex = NULL;
}

const slb_xcontender slb_x_sluice = {
    WHO, "sluice", SLB_XOURS, sluice_start, sluice_run, sluice_stop,
};
