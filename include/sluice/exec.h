/*
 * sluice/exec.h — a spawn/sync (fork-join) work-stealing executor.
 *
 * sl_spawn hands a function and a copy of its (small) argument block to the
 * executor and returns a move-only future; sl_sync waits for the result,
 * running other tasks meanwhile. Spawning costs no allocation and no system
 * call on a worker: the task record comes from the worker's own cache, the
 * arguments are copied into it, and it is pushed on the worker's own
 * Chase–Lev deque, where idle workers steal it. Structured scopes, a
 * parallel for, cooperative cancellation and a process-wide executor are
 * built on the same machinery.
 *
 *     static void fib(void *args, void *ret)
 *     {
 *         long n = *(long *)args, a, b;
 *         if (n < 2) { *(long *)ret = n; return; }
 *         long m = n - 1;
 *         sl_future f = sl_spawn(sl_exec_global(), fib, &m, sizeof m, sizeof a);
 *         m = n - 2;
 *         fib(&m, &b);                     // the continuation runs here
 *         sl_sync(&f, &a);                 // usually pops f back and runs it inline
 *         *(long *)ret = a + b;
 *     }
 *
 * Threads. The executor's own threads are its workers. Any other thread
 * (the main thread, a worker of another executor, a pool thread) is a
 * "foreign" thread: its spawns go through the executor's injector queue, and
 * its sl_sync may run the executor's tasks while it waits (see sl_sync).
 * Tasks may spawn, sync, submit and open scopes on any executor; they must
 * not rely on which thread runs them, nor on thread-local storage.
 *
 * After fork(), the child has none of an executor's workers, only the
 * thread that forked: an executor made before the fork, the global one
 * included (sl_exec_global keeps returning it), must not be used in the
 * child. Its spawns there would never run, and its waits and sl_exec_free
 * (of any but the global, which it leaves alone) would wait forever.
 *
 * Concurrency:
 *   | operation                               | may run concurrently with        |
 *   |-----------------------------------------|----------------------------------|
 *   | sl_spawn, sl_submit, sl_parallel_for,   | everything but sl_exec_free of   |
 *   | sl_scope_*                              | the same executor, on any thread |
 *   | sl_sync(f), sl_is_ready(f),             | everything on other futures; on  |
 *   | sl_is_spawned(f)                        | f itself, only the queries       |
 *   | sl_cancel_request, sl_cancelled         | everything but sl_cancel_init    |
 *   | sl_exec_global                          | everything                       |
 *   | sl_exec_new                             | everything                       |
 *   | sl_exec_free(ex)                        | only tasks already in ex (which  |
 *   |                                         | may spawn); never from a task    |
 *
 * Futures are move-only values: a future may be copied (it is a plain
 * struct), but only one copy may ever be synced, once. A second sync — of the
 * same future, of a copy, or of a cleared or never-spawned future — returns
 * SL_EINVAL and touches nothing: each task record carries a generation that
 * the first sync advances (docs/exec.md). Task records are recycled, never
 * returned to the system while the executor lives, so a stale future stays
 * safe to sync (and to query) until sl_exec_free; after that it must not be
 * used. A future that is never synced keeps its record until sl_exec_free:
 * the task still runs, but its record is not reused.
 *
 * Ordering: the call to sl_spawn (or sl_submit) happens-before the task
 * starts; the task's completion — everything it wrote, including its result —
 * happens-before sl_sync returns SL_OK and before sl_is_ready returns true.
 * For scopes: every sl_scope_spawn into s happens-before its task; every task
 * of s (and of its nested spawns into s) happens-before sl_scope_end(s)
 * returns.
 *
 * Progress: sl_spawn on a worker is wait-free apart from the rare growth of
 * the worker's deque and task cache (an allocation); from a foreign thread it
 * is lock-free except for the record allocation, which takes a short mutex.
 * sl_sync and sl_scope_end are blocking (they wait for other threads' tasks);
 * on a worker they never park while there is a task they could run (but
 * for a worker past half its stack, which waits instead of stealing more),
 * on a foreign thread they park after a bounded search of the deques. Idle workers park in
 * the kernel: an executor with nothing to do uses no CPU.
 */
#ifndef SLUICE_EXEC_H
#define SLUICE_EXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice/base.h"
#include "sluice/status.h"
#include "sluice/park.h"

SL_BEGIN_DECLS

/* Bytes of argument and result storage inside each task record. A task fits
 * when its argument block, rounded up to a multiple of 16, plus its result
 * size is at most this: SL_EXEC_FITS(args_size, ret_size). The result is
 * stored behind the arguments, so a task may read its arguments while it
 * writes its result. */
#define SL_EXEC_PAYLOAD_MAX ((size_t)192)
/* The largest argument block (with no result) and the largest result (with
 * no arguments) a task may have. */
#define SL_EXEC_ARGS_MAX SL_EXEC_PAYLOAD_MAX
#define SL_EXEC_RET_MAX SL_EXEC_PAYLOAD_MAX
#define SL_EXEC_FITS(args_size, ret_size)                                          \
    ((args_size) <= SL_EXEC_PAYLOAD_MAX && (ret_size) <= SL_EXEC_PAYLOAD_MAX &&   \
     (((args_size) + 15u) & ~(size_t)15u) + (ret_size) <= SL_EXEC_PAYLOAD_MAX)

/* The most worker threads one executor may have. */
#define SL_EXEC_MAX_THREADS 1024u

typedef struct sl_exec sl_exec;

typedef struct sl_exec_opts {
    unsigned threads;       /* worker threads; 0: online CPUs */
    const char *name;       /* thread names "<name>/<id>"; NULL: "sl-exec" */
} sl_exec_opts;

/* A task: args points to the task's own copy of the argument block (16-byte
 * aligned; NULL when args_size was 0), ret to ret_size bytes the task must
 * fill (NULL when ret_size was 0). */
typedef void (*sl_task_fn)(void *args, void *ret);

/* The handle of one spawned task. Move-only (see the header comment).
 * {NULL, 0} is the cleared future: what a failed spawn returns and what
 * sl_sync leaves behind. Fields are private. */
typedef struct sl_future {
    void *task;
    uint64_t gen;
} sl_future;

/* Creates an executor with opts->threads workers (0 or NULL opts: one per
 * online CPU). The workers start parked. Returns SL_OK with *out set; SL_EINVAL
 * for NULL out or threads above SL_EXEC_MAX_THREADS; SL_ENOMEM when memory or a
 * thread could not be had (*out untouched, nothing left behind: the workers
 * already started are stopped and joined). Workers are only started here:
 * a worker that cannot start is reported, never retried. */
SL_API sl_status sl_exec_new(sl_exec **out, const sl_exec_opts *opts);

/* Waits until every task spawned into ex has completed (tasks still running
 * may spawn more; those are waited for too), stops and joins the workers and
 * frees everything, including the records of futures never synced. Futures of
 * ex must not be used afterwards. NULL does nothing. The caller guarantees that
 * once this is called no thread but ex's own tasks uses ex (spawns, syncs,
 * scopes); called from a task of ex (on a worker, on a foreign thread
 * helping in sl_sync, or a scope task run on its spawning thread because it
 * could not be queued) it returns at once without freeing anything, since it
 * would wait for itself. The global executor (sl_exec_global) is never
 * freed: given it, this returns at once as well. Blocking. */
SL_API void sl_exec_free(sl_exec *ex);

/* The process-wide executor, created on first use with one worker per online
 * CPU (pthread_once); never freed (sl_exec_free of it does nothing). NULL
 * only if it could not be created (out of memory), and then again on every
 * later call. Thread-safe. */
SL_API sl_exec *sl_exec_global(void);

/* The number of worker threads of ex (0 for NULL). Wait-free. */
SL_API unsigned sl_exec_threads(const sl_exec *ex);

/* Spawns fn(copy of args, ret) on ex. args_size bytes of args are copied into
 * the task now (args may be NULL when args_size is 0); the task's result,
 * ret_size bytes, is handed back by sl_sync.
 * Returns the task's future; a cleared future (sl_is_spawned false, nothing
 * spawned) for NULL ex or fn, NULL args with a non-zero args_size, a task that
 * does not fit (SL_EXEC_FITS), or when no task record could be allocated.
 * On a worker of ex: the task goes on the worker's own deque (LIFO for the
 * worker, stolen oldest-first by others); no allocation unless the worker's
 * record cache is empty; wait-free otherwise. From any other thread: through
 * ex's injector queue (FIFO), or, from a foreign thread running a task while
 * it helps (sl_sync, sl_scope_end), onto the deque it borrowed for that.
 * Either way a parked worker is woken (one FUTEX_WAKE) if no worker is
 * already searching for work. The task may run on any thread of ex, also on
 * the caller's when the caller is a worker of ex (sl_sync runs it inline). */
SL_API sl_future sl_spawn(sl_exec *ex, sl_task_fn fn, const void *args, size_t args_size,
                          size_t ret_size);

/* Waits for f's task, copies its result (ret_size bytes) to ret, and clears *f.
 * ret may be NULL to discard the result.
 * Returns SL_OK; SL_EINVAL (nothing waited for, *f untouched) for NULL f, a
 * cleared or never-spawned future, or a future already synced — also through
 * another copy of it.
 * On a worker of f's executor: if the task is still on the caller's deque it
 * is popped and run inline (the common case in fork-join code); tasks above it
 * on the deque are run first. Otherwise the caller runs its own deque's tasks,
 * then steals from other workers, and parks only when there is nothing it
 * could run — it is woken when the task completes or new work appears.
 * On a worker of another executor: runs its own executor's tasks while it
 * waits, as above (so that executors waiting on each other cannot deadlock).
 * On any other thread: helps while it waits — takes tasks from the deques
 * (first the one it borrows while it helps, where what the tasks it runs
 * spawn goes, then the workers' and other helping threads': spawned tasks
 * only, never from the injector or a mailbox, where sl_submit's tasks wait,
 * so a task the caller submitted never runs here) and runs them, nested
 * syncs in them helping again; after a bounded search that finds nothing it
 * parks in the kernel until the task completes, and is then woken by the
 * completion only, not by new work. Tasks such a thread runs may therefore
 * run on the caller's thread: the caller must not hold across sl_sync
 * anything (a lock) that a task of the executor may wait for. Blocking. The task's completion happens-before the return. */
SL_API sl_status sl_sync(sl_future *f, void *ret);

/* True when f holds a spawned task that has not been synced (through any copy).
 * false for NULL f or a cleared future. Wait-free; a snapshot for copies that
 * other threads may sync. */
SL_API bool sl_is_spawned(const sl_future *f);

/* True when f's task has completed, so that sl_sync(f) would not wait. false
 * for NULL f, a cleared future or a synced one. Wait-free. When true, the
 * task's completion happens-before the return (acts as acquire). */
SL_API bool sl_is_ready(const sl_future *f);

/* As sl_spawn, but the task never runs on the calling thread — not even while
 * the caller waits for it in sl_sync. From a foreign thread the task goes
 * through the injector (a foreign thread's sl_sync helps only from the
 * deques, which never hold submitted tasks); from a worker of ex it goes to
 * another worker's mailbox, from which the submitting worker never runs it
 * (a search that pops it puts it back). The future may be synced from any
 * thread. Returns a cleared future in the cases sl_spawn does, and when the
 * caller is the only worker of ex (no other thread could run the task).
 * Lock-free apart from the record allocation as in sl_spawn. */
SL_API sl_future sl_submit(sl_exec *ex, sl_task_fn fn, const void *args, size_t args_size,
                           size_t ret_size);

/*
 * Structured parallelism: sl_scope_end(s) returns once every task spawned into
 * s — by the thread that began s or by those tasks themselves, passing s down
 * in their arguments — has completed. Scope tasks have no result and no
 * future. The same thread calls begin and end; s lives (on that thread's
 * stack, usually) until end returns. Scopes nest.
 */
typedef struct sl_scope {
    /* Private. Tasks spawned into the scope and not yet completed, plus one
     * until sl_scope_end; a mark once the last completer is through. */
    SL_ALIGNAS(SL_CACHELINE) SL_ATOMIC(uint64_t) sl__pending;
    sl_exec *sl__ex;
    /* Where the thread in sl_scope_end sleeps: its worker's event (of
     * whichever executor) or the executor's event for foreign waiters. */
    sl_event *sl__sleep;
} sl_scope;

/* Begins scope s on ex. s must not be in use. NULL ex or s: s is left unusable
 * (every later call on it does nothing). Wait-free. */
SL_API void sl_scope_begin(sl_exec *ex, sl_scope *s);

/* Spawns fn(copy of args, NULL) into s: as sl_spawn, with no result. A task
 * that cannot be queued (it does not fit SL_EXEC_FITS(args_size, 0), or no
 * record could be allocated) runs on the calling thread before this returns,
 * so that no work of the scope is ever lost, with its own copy of args as a
 * queued task has (for want of a record: on the calling thread's stack, no
 * memory needed). The one exception: a block too big for a record when no
 * memory can be had for its copy either is handed to the task as args
 * itself (as aligned as the caller's, and written by a task that writes its
 * arguments). NULL s or fn, or NULL args
 * with a non-zero args_size: nothing (bad input; nothing runs). May be
 * called from the scope's thread and from any task of s (or nested in one)
 * while s is open: from sl_scope_begin until sl_scope_end returns. A task of
 * s spawns before it completes, so its spawns always find s open; a spawn
 * into s after sl_scope_end(s) has returned (by a thread that kept a
 * pointer to s) is undefined, as s may be gone. */
SL_API void sl_scope_spawn(sl_scope *s, sl_task_fn fn, const void *args, size_t args_size);

/* Waits until every task of s has completed, running tasks meanwhile as
 * sl_sync does (a worker runs its own executor's tasks; a foreign thread
 * steals from the deques, then parks). Every task of s happens-before the
 * return. Afterwards s may be begun again. NULL s: nothing. Blocking. */
SL_API void sl_scope_end(sl_scope *s);

/* Calls body(i, ctx) exactly once for every i in [begin, end), in parallel on
 * ex, and returns when all calls have returned (they happen-before the
 * return). The range is split lazily in halves down to grain indices (0: a
 * grain chosen from the range and the number of workers): a piece is split
 * only while the running worker's deque is empty, so that splitting follows
 * demand. begin >= end, or NULL ex or body: nothing. Blocking, as
 * sl_scope_end. */
SL_API void sl_parallel_for(sl_exec *ex, size_t begin, size_t end, size_t grain,
                            void (*body)(size_t i, void *ctx), void *ctx);

/* A cooperative cancellation token: one flag that tasks poll at points of
 * their choosing. Requesting cancellation only sets the flag; tasks already
 * spawned still run (and a task that sees the flag may return early). */
typedef struct sl_cancel {
    SL_ATOMIC(uint32_t) sl__requested; /* private */
} sl_cancel;

/* Initialises c as not requested. Not concurrent with any other use of c.
 * NULL: nothing. */
SL_API void sl_cancel_init(sl_cancel *c);
/* Requests cancellation; idempotent. Wait-free. What the caller did before
 * happens-before every sl_cancelled that returns true (acts as release).
 * NULL: nothing. */
SL_API void sl_cancel_request(sl_cancel *c);
/* true once cancellation has been requested (acquire). NULL: false. Wait-free. */
SL_API bool sl_cancelled(const sl_cancel *c);

SL_END_DECLS

#endif /* SLUICE_EXEC_H */
