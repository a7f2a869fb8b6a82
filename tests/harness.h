/*
 * tests/harness.h — what every sluice test suite shares.
 *
 * Sizes scale with SL_STRESS_SCALE (1.0 by default; the sanitizer presets
 * lower it), thread counts come from the environment, a start barrier lines
 * threads up, and a tiny xorshift RNG makes random stalls reproducible from a
 * seed printed on failure. Beside those: seeds, names and constructors for
 * channels, the unit suites' messages and a receiver blocked on its own
 * thread. The stress machinery (failure recording from worker threads,
 * messages with producers, teams of threads under a watchdog and a
 * preemptor) is in stress_common.h.
 */
#ifndef SLUICE_TESTS_HARNESS_H
#define SLUICE_TESTS_HARNESS_H

#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>

#include <sluice/chan.h>
#include "internal/sysops.h"

#define MS (1000000ull)
#define SEC (1000000000ull)
#define ULL(x) ((unsigned long long)(x))
#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Calls into Check only on failure: a passing ck_assert writes a mark to the
 * parent process, far too slow inside per-message loops. */
#define CHECK(cond, ...)                                                                    \
    do {                                                                                    \
        if (!(cond))                                                                        \
            ck_abort_msg(__VA_ARGS__);                                                      \
    } while (0)

/* n scaled by SL_STRESS_SCALE, at least `floor`. */
uint64_t sl_test_scaled(uint64_t n, uint64_t floor);
/* An unsigned from the environment variable `name`, or `def`. */
unsigned sl_test_env_uint(const char *name, unsigned def);

/* A reusable start barrier: every thread calls wait, all leave together. */
typedef struct sl_test_barrier {
    pthread_barrier_t b;
} sl_test_barrier;
void sl_test_barrier_init(sl_test_barrier *b, unsigned count);
void sl_test_barrier_wait(sl_test_barrier *b);
void sl_test_barrier_destroy(sl_test_barrier *b);

/* xorshift64* — deterministic per seed, never returns 0 state. */
typedef struct sl_test_rng { uint64_t s; } sl_test_rng;
void sl_test_rng_seed(sl_test_rng *r, uint64_t seed);
uint64_t sl_test_rng_next(sl_test_rng *r);
/* With probability 1/one_in, stall the thread: yield, spin or sleep briefly. */
void sl_test_maybe_stall(sl_test_rng *r, unsigned one_in);

/* Monotonic nanoseconds (the real clock, not sluice's replaceable one). */
uint64_t sl_test_now_ns(void);
/* Sleeps at least ns, resuming after signals (the preemptors interrupt
 * sleeps with EINTR). */
void sl_test_sleep_ns(uint64_t ns);
/* The threads of this process now (the entries of /proc/self/task). A
 * joined thread can stay listed for a moment after pthread_join returns. */
unsigned sl_test_thread_count(void);
/* Whether the task whose /proc stat file is `stat_path` ("/proc/PID/stat",
 * "/proc/self/task/TID/stat") sleeps in the kernel (state S). A test that
 * must act only once another thread or process really sleeps (registered
 * on an eventcount is not enough: until it sleeps, its re-check runs) polls
 * this; false when the file cannot be read. */
bool sl_test_task_asleep(const char *stat_path);
/* The same for a thread of this process, by its kernel id (gettid); false
 * for 0 (a thread that has not said its id yet). */
bool sl_test_thread_asleep(int tid);

/* For tests of "one FUTEX_WAKE per sleeper": sl_test_counting_ops makes the
 * real futex calls (over the base's injections, if any) and counts them in
 * sl_test_futex_waits / sl_test_futex_wakes. While sl_test_late_riser is
 * set, a sleeper its futex_wait returns 0 to (a FUTEX_WAKE dequeued it) naps
 * 100 ms before returning, so that its waker's later notifies all fall while
 * it is still registered. Install it with sl_test_sys_install. */
extern _Atomic unsigned long sl_test_futex_waits, sl_test_futex_wakes;
extern _Atomic int sl_test_late_riser;
extern const sl_sys_ops sl_test_counting_ops;

/* The sleeper those tests count: a thread in one timed receive (3 s) of an
 * 8-byte message on ch. It says its kernel id in `tid` first (for
 * sl_test_thread_asleep), then keeps the status and the message, and adds 1
 * to *got (when given) on SL_OK. */
typedef struct sl_test_sleeper {
    pthread_t thr;
    sl_chan *ch;
    _Atomic int *got;
    uint64_t msg;
    sl_status st;
    _Atomic int tid;
} sl_test_sleeper;
/* Starts s's thread (the caller sets ch and got), or the test fails. */
void sl_test_sleeper_start(sl_test_sleeper *s);

/* A seed: the value of the environment variable `env` when set (to replay a
 * run), else one from the clock and the pid; never 0. */
uint64_t sl_test_env_seed(const char *env);
/* The unit suites' random tests: a seed from SL_TEST_SEED, printed on stderr
 * as "[suite name] seed N" with how to replay it. */
uint64_t sl_test_seed(const char *suite, const char *name);

/* "SPSC", "MPMC", "LIST" or "RING", for messages. */
const char *sl_test_flavor_name(sl_flavor f);
/* A new channel, or the test fails. */
sl_chan *sl_test_chan(sl_flavor f, size_t esz, size_t cap, sl_drop_fn drop, void *ctx);

/* The unit suites' messages: the first min(esz, 8) bytes are a sequence
 * number (little-endian), the rest words derived from it, so that a
 * reordered, lost, duplicated or torn message shows. (The stress suites'
 * messages also name their producer: stress_common.h.) */
void sl_test_seq_fill(unsigned char *b, size_t esz, uint64_t seq);
/* Whether b is message seq (for esz < 8, only the low bytes of seq). */
bool sl_test_seq_is(const unsigned char *b, size_t esz, uint64_t seq);
/* The seq bytes a message carries. */
uint64_t sl_test_seq_low(const unsigned char *b, size_t esz);

/* One sl_chan_recv of a uint64_t on its own thread, for tests of what wakes
 * a blocked receiver. */
typedef struct sl_test_recv_thread {
    pthread_t thr;
    sl_chan *ch;
    uint64_t out;
    sl_status st;
    atomic_int done;
} sl_test_recv_thread;

/* Starts the receive and fails unless it is still blocked 30 ms later ("it
 * blocks" is judged by not having returned, never by an upper bound on time).
 * The test wakes it and joins t->thr. */
void sl_test_recv_start(sl_test_recv_thread *t, sl_chan *ch);

/* Adds test case `name` to s, with a time-out of `timeout` s, running the
 * loop test `test` for _i in [0, n). Returns the case, for more tests or a
 * fixture. */
TCase *sl_test_loop_case(Suite *s, const char *name, int timeout, const TTest *test, int n);

/* The system layer under the tests (internal/sysops.h). Before main, every
 * suite installs a base table: the real calls, except
 *   - allocation, which fails as armed by sl_test_fail_allocs /
 *     sl_test_fail_alloc_at (and passes through otherwise);
 *   - with SL_TEST_SYSFAULTS=nomembarrier, membarrier, which fails with
 *     ENOSYS (so the registration fails and sluice uses fences on both
 *     sides, from the first eventcount on);
 *   - with SL_TEST_SYSFAULTS=spurious, futex_wait and futex_wake (and
 *     their shared variants, and futex_waitv), which inject spurious wake-ups, EINTR, early
 *     ETIMEDOUT and delays
 *     (sl_test_sys_spurious).
 * The two combine: SL_TEST_SYSFAULTS=nomembarrier,spurious. What was
 * injected is printed at exit ("[SL_TEST_SYSFAULTS] injected: ...").
 *
 * A test that wants its own table installs it over the base with
 * sl_test_sys_install: its non-NULL entries replace the base's, the others
 * stay the base's. sl_test_sys_restore() goes back to the base alone. Tests
 * do not call sl__sys_set_ops themselves (that would drop the base). Both may
 * be called while sluice threads run: each composed table is built once and
 * never rewritten. */
void sl_test_sys_install(const sl_sys_ops *ops);
void sl_test_sys_restore(void);
/* The base as a full table: for a test's entry that wraps the call beneath it. */
const sl_sys_ops *sl_test_sys_base(void);
/* The spurious-fault table (futex entries only), to install over the base. */
const sl_sys_ops *sl_test_sys_spurious(void);
/* Reseeds the fault generator and zeroes the counts of what was injected. */
void sl_test_sys_faults_seed(uint64_t seed);
/* Prints "[who] injected: ..." on stderr if anything was. */
void sl_test_sys_faults_report(const char *who);
/* Whether SL_TEST_SYSFAULTS names `name`. */
bool sl_test_sysfault_on(const char *name);

/* Allocation faults, through the base table above. sl_test_fail_allocs(n):
 * the next n allocations fail (UINT64_MAX: all until disarmed).
 * sl_test_fail_alloc_at(k): the k-th allocation from now fails (1-based),
 * the others succeed. Both reset the count that sl_test_allocs returns:
 * allocations attempted since arming. sl_test_alloc_faults_off() disarms. */
void sl_test_fail_allocs(uint64_t n);
void sl_test_fail_alloc_at(uint64_t k);
uint64_t sl_test_allocs(void);
void sl_test_alloc_faults_off(void);

/* Records that this test accounted for n things of kind `what` ("messages
 * exactly once", "jobs ran or discarded once", "tasks completed", …): one
 * line "<program> <what>\t<n>" appended to the file named by SL_ACCOUNT_FILE,
 * when set (`make test` sets it and sums the lines at the end). Call it only
 * after the checks of those n passed. Safe from forked Check children. */
void sl_test_account(const char *what, uint64_t n);

/* Runs the suite with Check and returns the process exit status. */
int sl_test_run(Suite *s);

#if defined(SL_FAULT_INJECT) && SL_FAULT_INJECT
/* A thread stopped at a fault-injection step: sl__fi_arm(k, sl_test_gate_stop,
 * &gate) makes the thread's k-th step (SL_FI) set `stopped` and wait until
 * `go` is set. */
typedef struct sl_test_gate {
    atomic_int stopped, go;
} sl_test_gate;
void sl_test_gate_stop(void *gate, unsigned step);

/* A try_send of `value` stopped at its k-th fault-injection step (SL_FI)
 * until `go` is set: run sl_test_send_gated on a thread, wait with
 * sl_test_wait_stopped, do what must happen while it is stopped, set `go`,
 * join. Afterwards `st` is what the send returned and `passed` the steps
 * it passed (fewer than k: it never reached step k, and a loop over k is
 * done). */
typedef struct sl_test_gated_send {
    sl_chan *ch;
    uint64_t value;
    unsigned k, passed;
    sl_status st;
    sl_test_gate gate;
} sl_test_gated_send;
void *sl_test_send_gated(void *gated);
void sl_test_wait_stopped(sl_test_gated_send *g);
#endif

#endif
