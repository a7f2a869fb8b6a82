/*
 * sluice/pool.h — a worker pool: futex-parked threads running submitted jobs.
 *
 * One pool covers the pools people write by hand: a fixed set of workers over
 * one queue, a pool that grows under load and trims itself when idle, a job
 * market where each key (a player, a connection) has at most one job running,
 * prioritised jobs, back-pressure on a bounded queue, and a pool that can be
 * paused, resized, purged and shut down while it runs — with nothing lost:
 * every accepted job runs exactly once or reaches on_discard exactly once.
 *
 * States and commands (commands return at once; a command completes later):
 *
 *     SL_POOL_STOPPED --start--> SL_POOL_RUNNING --stop--> SL_POOL_STOPPED
 *          |  set_workers, reset        |  set_workers
 *          +------- shutdown ---------->+------- shutdown --> SL_POOL_SHUTDOWN
 *
 *   - While a command is in progress every further command returns SL_BUSY
 *     (a command the state forbids may return SL_EINVAL first). It completes
 *     when sl_pool_ready() turns true; on_state is then called once, from a
 *     pool thread, with the new state.
 *   - stop: running jobs finish, queued jobs wait, workers sleep. It completes
 *     once no job is running. Jobs submitted while stopped run after start.
 *   - set_workers(n): the active-worker target, 1 .. max_workers, in the
 *     running or the stopped state. Growing completes when the pool has its
 *     floor of workers (the target, or, when idle workers retire, min_workers
 *     if that is lower; more are spawned on demand); shrinking completes
 *     when the extra workers have finished their jobs, run worker_fini and
 *     exited.
 *   - reset: stopped state only; every queued job goes to on_discard with
 *     SL_DISCARD_RESET.
 *   - shutdown(SL_DRAIN): every queued job runs (also from the stopped
 *     state), then the workers exit. shutdown(SL_CANCEL): queued jobs go to
 *     on_discard with SL_DISCARD_CANCELLED, running ones finish. Either way
 *     submit returns SL_CLOSED from the moment shutdown is called, and every
 *     command after it returns SL_EINVAL.
 *
 * Jobs: a job is (fn, arg, priority, key, flags). Higher priorities run first,
 * FIFO within a level. Jobs with one non-zero key never run at once and run
 * in submission order whatever their priorities; a job whose key is busy waits
 * aside and never holds back jobs of other keys. SL_JOB_UNIQUE refuses a job
 * whose key is already queued or running (SL_EXISTS). A job on its way to
 * on_discard (discarded, or its worker died in it) is neither, though its
 * key stays busy until the report returns: a unique job of the key
 * submitted meanwhile (on_discard retrying it) is accepted, and starts
 * after the report.
 *
 * Workers: the pool starts active_workers of them (max_workers by default) —
 * or, when idle workers retire (idle_timeout_ns), min_workers of them (the
 * target if that is lower), and grows on demand. A submit that finds every
 * worker busy and fewer workers than the target has one more spawned (by
 * the pool's control thread, "<name>/ctl"). Workers above min_workers
 * retire after idle_timeout_ns without work; the target caps min_workers
 * too (a target below it leaves no more than the target's workers, idle or
 * not). A worker that dies inside a job (pthread_exit, cancellation) is
 * noticed by the cleanup handler the pool installs around its loop:
 * worker_fini runs, the worker leaves the pool — a replacement is spawned
 * while the live workers are below what the target and the backlog call
 * for — and then, on the dying thread, the job goes to on_discard with
 * SL_DISCARD_WORKER_DIED and its key is released (the key's next job starts
 * after the report). Workers are named "<name>/<id>" (ids count up
 * from 0 and are never reused; the thread name is cut to 15 bytes by Linux).
 *
 * Idle workers sleep in the kernel on the parking layer (sluice/park.h): an
 * idle pool uses no CPU; a submit wakes at most one sleeping worker, and none
 * while a worker is already searching for work.
 *
 * Workers take queued jobs in batches: up to 16 of the top priority level at
 * once (one at a time when queue_capacity is set). "Higher priorities run
 * first" holds when a worker takes work: a worker runs the rest of its
 * batch before it looks at the queue again, so a job of a higher level
 * submitted meanwhile waits for up to 15 jobs of the batch's level on each
 * worker (or for an idle worker to take it). A job taken and not yet
 * started still counts as queued, and a stop leaves it queued; a worker with
 * nothing to do takes half of a busy worker's batch, so a long job does not
 * hold back the ones taken with it. The rest of a batch whose worker left
 * without running it (a shrink or a death after a stop) is taken whole by
 * the next worker that looks for work, after the queued jobs of higher
 * levels and before those of its own, so one worker left by a shrink keeps
 * the order. The exception: batches that several workers held at a stop
 * run, once one worker is left, in the order of their workers' slots (its
 * own first), not in the order they were taken.
 *
 * After fork(), the child has none of a pool's threads (its workers, its
 * control thread), only the thread that forked: a pool made before the
 * fork must not be used in the child, sl_pool_free included. Its submits
 * there would be accepted and never run nor reach on_discard, its commands
 * would never complete, and its waits would not return.
 *
 * Concurrency:
 *   | operation                          | may run concurrently with          |
 *   |------------------------------------|------------------------------------|
 *   | submit, try_submit, submit_job     | everything, any number of threads, |
 *   |                                    | also from inside jobs              |
 *   | commands, ready, wait_ready,       | everything, any number of threads; |
 *   | wait_idle, get_stats               | commands serialise (SL_BUSY)       |
 *   | sl_pool_free                       | nothing but callbacks it waits for;|
 *   |                                    | never from inside a job            |
 *
 * Callbacks (worker_init, worker_fini, on_state, on_discard) run on pool
 * threads and may submit jobs. worker_fini runs once for every worker_init
 * that returned; a worker that dies inside worker_init (no context) gets
 * none, and counts as a death. Callbacks must not call sl_pool_free;
 * wait_ready from on_state or on_discard, and wait_idle from a job or a
 * callback, would wait on themselves, and so would wait_ready from a job
 * after that job issued stop, shutdown or a resize that retires its own
 * worker, or while a stop or a shutdown that another thread issued is in
 * progress — sl_pool_free's included, which then waits for the job for
 * good (each completes only once the job is over), and wait_ready from
 * worker_fini of a worker that a resize or shutdown retires (the command
 * completes once that worker has left). A job may submit (a full queue then
 * waits for room that other workers make) and issue commands. So may
 * on_discard with SL_DISCARD_WORKER_DIED — also the blocking resubmit of the
 * dead job to a full queue with one worker: the report runs after the dead
 * worker has left, and its replacement makes the room — except when every
 * queued job waits for the dead job's key, which stays busy until the
 * report returns.
 */
#ifndef SLUICE_POOL_H
#define SLUICE_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice/base.h"
#include "sluice/status.h"

SL_BEGIN_DECLS

typedef struct sl_pool sl_pool;

/* A job's function: arg as submitted, worker_ctx as returned by worker_init
 * on the worker running it (NULL without worker_init). */
typedef void (*sl_job_fn)(void *arg, void *worker_ctx);

typedef enum sl_pool_state { SL_POOL_STOPPED, SL_POOL_RUNNING, SL_POOL_SHUTDOWN } sl_pool_state;
typedef enum sl_shutdown { SL_DRAIN, SL_CANCEL } sl_shutdown;

typedef enum sl_discard {           /* why a job will not run */
    SL_DISCARD_CANCELLED = 1,       /* shutdown(SL_CANCEL), or sl_pool_free */
    SL_DISCARD_RESET,               /* sl_pool_reset */
    SL_DISCARD_WORKER_DIED,         /* its worker thread died inside it */
} sl_discard;

enum { SL_JOB_UNIQUE = 1 };  /* refuse with SL_EXISTS if the key is queued or running */

#define SL_POOL_MAX_PRIORITIES 8u
#define SL_POOL_MAX_WORKERS 1024u

typedef struct sl_job {
    sl_job_fn fn;
    void     *arg;
    unsigned  priority;     /* 0 .. priority_levels-1; higher runs first */
    uint64_t  key;          /* 0: none; jobs with one key never run at once, and run in order */
    unsigned  flags;        /* 0 or SL_JOB_UNIQUE */
} sl_job;

/* Where a submitted job waits for a worker. */
typedef enum sl_dispatch {
    SL_DISPATCH_SHARED = 0,     /* one queue for all workers (the default) */
    SL_DISPATCH_ROUND_ROBIN,    /* per-worker inboxes, fed in turn (each
                                   submitting thread goes round on its own) */
    SL_DISPATCH_LEAST_LOADED,   /* per-worker inboxes, the shortest is fed */
} sl_dispatch;
/* With inboxes, a worker takes from its own inbox first and, when that is
 * empty, from the others' (so no job waits while a worker is idle); priority
 * order is kept within each inbox and, with one worker, overall. Keys and
 * everything else behave as with the shared queue. */

typedef struct sl_pool_opts {
    unsigned max_workers;       /* 0: online CPUs; at most SL_POOL_MAX_WORKERS */
    unsigned min_workers;       /* kept while idle, up to the target; at most max_workers */
    unsigned active_workers;    /* initial target; 0: max_workers. Started at once
                                   unless idle_timeout_ns is set: then
                                   min_workers (at most this many) start
                                   and more come on demand */
    uint64_t idle_timeout_ns;   /* workers above min retire after this; 0: never */
    size_t   queue_capacity;    /* pending bound (back-pressure); 0: unbounded.
                                   Jobs waiting for a busy key count against
                                   it: one key's backlog can fill the queue
                                   and hold back other keys' submits (bound
                                   a key's backlog yourself, or SL_JOB_UNIQUE) */
    unsigned priority_levels;   /* 1 .. 8; 0 means 1 */
    bool     start_stopped;     /* begin in SL_POOL_STOPPED */
    sl_dispatch dispatch;       /* SL_DISPATCH_SHARED unless set */
    const char *name;           /* thread names: "<name>/<id>"; NULL: "sl-pool" */
    void *(*worker_init)(unsigned worker_id, void *user);               /* -> worker_ctx */
    void  (*worker_fini)(unsigned worker_id, void *worker_ctx, void *user);
    void  (*on_state)(sl_pool *p, sl_pool_state now, void *user);      /* a command finished */
    void  (*on_discard)(const sl_job *job, sl_discard why, void *user); /* an accepted job that will not run */
    void *user;
} sl_pool_opts;

/* A snapshot, taken without stopping the pool (enough for a progress bar):
 * exact while the pool is quiet. While jobs flow the counts are read one
 * after another, and a worker counts itself running a moment before the
 * job it takes leaves `queued` (and stays counted through a batch it took
 * into its ring), so queued + running, and with them submitted (their sum
 * with completed and discarded), may then exceed the truth by up to a
 * batch per worker; completed and discarded never do. A job whose
 * on_discard report is in progress (a reset, a cancel, its worker's death)
 * is in none of queued, running, completed and discarded until the report
 * returns. */
typedef struct sl_pool_stats {
    sl_pool_state state;
    unsigned workers;    /* live worker threads */
    unsigned target;     /* the active-worker target (set_workers) */
    unsigned running;    /* jobs running now */
    unsigned idle;       /* live workers not running a job */
    unsigned parked;     /* of those, asleep in the kernel (futex wait) */
    uint64_t queued;     /* accepted, not yet started */
    uint64_t submitted;  /* accepted, ever */
    uint64_t completed;  /* ran to the end, ever */
    uint64_t discarded;  /* handed to on_discard, ever */
    uint64_t spawned;    /* worker threads ever started (== worker_init calls) */
    uint64_t retired;    /* worker threads that exited on purpose (idle timeout or
                            set_workers shrinking), ever; not deaths, not shutdown */
    uint64_t respawned;  /* worker threads started to replace one that died, ever */
    uint64_t died;       /* worker threads that died inside a job or a callback,
                            ever; one that dies in worker_fini after retiring or
                            at shutdown counts as retired (or neither), and is
                            not replaced */
    size_t   capacity;   /* queue_capacity (0: unbounded) */
    bool     busy;       /* a command is in progress (!sl_pool_ready) */
    uint64_t waiting_on_key; /* of queued, jobs waiting aside for their busy key */
    unsigned max_workers;    /* max_workers as resolved at creation (0 -> CPUs) */
} sl_pool_stats;

/* Creates a pool and its threads. opts may be NULL (all defaults). Returns
 * SL_OK with *out set; SL_EINVAL for NULL out, min_workers > max_workers,
 * active_workers > max_workers, max_workers or priority_levels too large, or an
 * unknown dispatch; SL_ENOMEM when memory or a thread could not be had, with
 * *out untouched and nothing left behind (threads it started are joined).
 * Threads that cannot start later: a worker the pool wants afterwards (on
 * demand, or to replace one that died) and cannot start is retried by the
 * control thread every millisecond while it is wanted; accepted jobs wait
 * in the queue meanwhile, none is lost. */
SL_API sl_status sl_pool_new(sl_pool **out, const sl_pool_opts *opts);

/* Submits fn(arg) at priority 0 with no key, waiting while the queue is full.
 * Returns SL_OK (accepted: it will run or be discarded, exactly once),
 * SL_CLOSED (shut down, also while waiting), SL_ENOMEM (the queue could not
 * grow; not accepted), SL_EINVAL (NULL p or fn).
 * Lock-free when the queue has room; blocking when it is full. The submit
 * happens-before the job runs (acts as release). */
SL_API sl_status sl_pool_submit(sl_pool *p, sl_job_fn fn, void *arg);

/* As sl_pool_submit, without waiting: SL_FULL when the queue is full (not a
 * timed call; sl_pool_submit_job with timeout 0 answers SL_TIMEDOUT). */
SL_API sl_status sl_pool_try_submit(sl_pool *p, sl_job_fn fn, void *arg);

/* Submits a copy of *job, waiting up to timeout_ns (0: try once, SL_FOREVER:
 * no limit) while the queue is full. Returns SL_OK; SL_TIMEDOUT when no room
 * came in time — with timeout 0, when there is none now (the library's one
 * rule for timeouts; nothing accepted); SL_CLOSED; SL_EXISTS (SL_JOB_UNIQUE
 * and the key is queued or running; at once, also when the queue is full);
 * SL_EINVAL (NULL p, job or fn, priority
 * out of range, unknown flags, SL_JOB_UNIQUE without a key); SL_ENOMEM (the
 * queue could not grow, or a keyed job that must wait aside could not be
 * stored; not accepted). Never SL_FULL. Keyless jobs: lock-free with
 * room. Keyed jobs take a short internal lock. */
SL_API sl_status sl_pool_submit_job(sl_pool *p, const sl_job *job, uint64_t timeout_ns);

/* Commands. Each returns SL_OK (begun; see sl_pool_ready), SL_BUSY (another
 * command has not completed), or SL_EINVAL (NULL p, a state that forbids it —
 * any command after shutdown — or a bad argument). */
SL_API sl_status sl_pool_start(sl_pool *p);               /* stopped -> running */
SL_API sl_status sl_pool_stop(sl_pool *p);                /* running -> stopped (pause) */
SL_API sl_status sl_pool_set_workers(sl_pool *p, unsigned n); /* 1 .. max_workers */
SL_API sl_status sl_pool_reset(sl_pool *p);               /* stopped: discard queued jobs */
SL_API sl_status sl_pool_shutdown(sl_pool *p, sl_shutdown how);

/* True when no command is in progress (the last one has completed). Acts as
 * acquire: what the completed transition did is visible. false for NULL. */
SL_API bool sl_pool_ready(sl_pool *p);

/* Waits until sl_pool_ready, up to timeout_ns (0: looks once, SL_FOREVER: no
 * limit). Returns SL_OK, SL_TIMEDOUT (not ready in time; with 0, not ready
 * now), or SL_EINVAL for NULL p. Blocking (parks). */
SL_API sl_status sl_pool_wait_ready(sl_pool *p, uint64_t timeout_ns);

/* Waits until every accepted job has run or been discarded (nothing queued,
 * nothing running), up to timeout_ns (0: looks once, SL_FOREVER: no limit).
 * A stopped pool with queued jobs is not idle. Returns SL_OK, SL_TIMEDOUT
 * (not idle in time; with 0, not idle now), or SL_EINVAL for NULL p.
 * Blocking (parks). On SL_OK acts as acquire: everything the jobs that ran wrote is visible. */
SL_API sl_status sl_pool_wait_idle(sl_pool *p, uint64_t timeout_ns);

/* Fills *out with a snapshot (see sl_pool_stats). NULL p or out: nothing. */
SL_API void sl_pool_get_stats(sl_pool *p, sl_pool_stats *out);

/* shutdown(SL_CANCEL) unless shut down already (also while a command is in
 * progress), waits for running jobs — and for a drain in progress — and for
 * every thread to exit, then frees the pool. NULL does nothing. Not from a
 * pool thread: from one of p's own threads (a job or a callback), where it
 * would wait for itself, it prints a message and aborts. */
SL_API void sl_pool_free(sl_pool *p);

SL_END_DECLS

#endif /* SLUICE_POOL_H */
