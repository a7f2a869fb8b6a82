/*
 * tests/pool_support.h — what the worker-pool suites (unit_pool.c,
 * stress_pool.c) share.
 *
 *   gates     a job that holds its worker, asleep, until the test opens the
 *             gate: the way to fill a queue behind busy workers, to keep a key
 *             busy, or to keep a command in progress.
 *   books     the pool's callbacks, counting: worker_init/fini (with a
 *             per-worker context each job checks: the one its own worker's
 *             init returned, on that thread, not yet finalised), on_state
 *             (from a pool thread, once per completed command) and on_discard
 *             (by reason, with an optional per-suite hook). Failures go
 *             through rec_fail: the test checks ASSERT_CLEAN().
 *   waiting   polling stats or counters until a condition holds, with a
 *             generous deadline (a condition that never comes fails the test
 *             at its deadline, never by timing).
 *   commands  a command issued the way a user would: SL_BUSY means wait for
 *             the one in progress and try again.
 */
#ifndef SLUICE_TESTS_POOL_SUPPORT_H
#define SLUICE_TESTS_POOL_SUPPORT_H

#include "stress_common.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <sluice/pool.h>

/* Deadlines for conditions that must come "soon": generous, so that a loaded
 * machine or a sanitizer never fails a correct pool. */
#define POOL_SOON_NS (20ull * SEC)

/* ---- gates --------------------------------------------------------------- */

typedef struct pool_gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool open;
    unsigned entered; /* gate_job calls that began */
    unsigned left;    /* gate_job calls that returned */
} pool_gate;

void gate_init(pool_gate *g);
void gate_destroy(pool_gate *g);
/* Lets every waiting and future gate_job through. */
void gate_open(pool_gate *g);
unsigned gate_entered(pool_gate *g);
unsigned gate_left(pool_gate *g);
/* Waits until n jobs have entered the gate; false if they did not within
 * timeout_ns. */
bool gate_wait_entered(pool_gate *g, unsigned n, uint64_t timeout_ns);
/* A job: arg is a pool_gate; sleeps until it opens. */
void gate_job(void *arg, void *worker_ctx);

/* ---- books: the callbacks ------------------------------------------------ */

#define WCTX_MAGIC 0x5EC7C7C7A11CE5ull
#define BOOK_MAX_IDS 65536u

/* What worker_init returns: checked by every job and by worker_fini. */
typedef struct pool_wctx {
    uint64_t magic;
    unsigned id;
    pthread_t thread;
    atomic_bool finalised;
    atomic_uint_fast64_t jobs; /* jobs run on this worker */
} pool_wctx;

typedef struct pool_book pool_book;
typedef void (*book_discard_hook)(pool_book *b, const sl_job *job, sl_discard why);

struct pool_book {
    pthread_t test_thread;          /* on_state must not run here */
    bool solo_commander;            /* one thread issues commands: on_state sees ready */
    atomic_uint inits, finis;       /* worker_init / worker_fini calls */
    atomic_uint live, live_max;     /* inits - finis, and its largest value */
    atomic_uint states;             /* on_state calls */
    atomic_uint state_by[3];        /* ... by the state reported */
    atomic_int last_state;          /* the state of the latest on_state, or -1 */
    atomic_uint discards;           /* on_discard calls */
    atomic_uint discard_by[4];      /* ... by reason (index sl_discard) */
    atomic_uint_fast64_t jobs_run;  /* book_job_begin calls */
    book_discard_hook on_discard;   /* the suite's own check, or NULL */
    void (*on_state_hook)(pool_book *b, sl_pool *p, sl_pool_state now);
    void *user;                     /* the suite's */
    pthread_mutex_t mu;             /* guards ctx[] */
    pool_wctx *ctx[BOOK_MAX_IDS];   /* by worker id, kept until book_free */
};

/* A zeroed book on the heap (it is large), test_thread = the caller. */
pool_book *book_new(void);
/* Frees the book and every worker context. Only after sl_pool_free. */
void book_free(pool_book *b);
/* Options with the book's callbacks and user = b; the rest zero. */
sl_pool_opts book_opts(pool_book *b);

/* Checks worker_ctx as a job sees it (its own worker's, on this thread, not
 * finalised) and counts the job. Returns the context. */
pool_wctx *book_job_begin(pool_book *b, void *worker_ctx);
/* worker_init calls, worker_fini calls, on_state calls, on_discard calls. */
unsigned book_inits(pool_book *b);
unsigned book_finis(pool_book *b);
unsigned book_states(pool_book *b);
unsigned book_discards(pool_book *b, sl_discard why);
/* Every context has been finalised exactly once, and no more were
 * finalised than initialised; fails the test otherwise (test thread). */
void book_check_closed(pool_book *b);

/* ---- waiting ------------------------------------------------------------- */

/* Polls until *c >= n; false at the deadline. */
bool wait_uint_ge(atomic_uint *c, unsigned n, uint64_t timeout_ns);
bool wait_u64_ge(atomic_uint_fast64_t *c, uint64_t n, uint64_t timeout_ns);
/* Polls until stats.workers == n; the last stats in *out. */
bool wait_workers(sl_pool *p, unsigned n, uint64_t timeout_ns, sl_pool_stats *out);
/* Polls until stats.parked == stats.workers == n (every worker asleep). */
bool wait_parked(sl_pool *p, unsigned n, uint64_t timeout_ns, sl_pool_stats *out);
/* Polls until the book has seen n on_state calls. */
bool wait_states(pool_book *b, unsigned n, uint64_t timeout_ns);

/* ---- commands ------------------------------------------------------------ */

typedef enum pool_cmd { CMD_START, CMD_STOP, CMD_SET_WORKERS, CMD_RESET, CMD_SHUTDOWN } pool_cmd;

const char *cmd_name(pool_cmd c);
/* Issues one command once: arg is n for set_workers, sl_shutdown for
 * shutdown. */
sl_status cmd_issue(sl_pool *p, pool_cmd c, unsigned arg);
/* Issues it as a user would: on SL_BUSY waits for the command in progress
 * and tries again (up to POOL_SOON_NS). Returns the first other status. */
sl_status cmd_retry(sl_pool *p, pool_cmd c, unsigned arg);

/* "RUNNING" ... for messages. */
const char *state_name(int s);
const char *discard_name(int why);

/* The CPU time this process has used (user + system), in nanoseconds. */
uint64_t process_cpu_ns(void);

#endif
