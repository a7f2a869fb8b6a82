#include "harness.h"
#include "internal/sysops.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

uint64_t sl_test_scaled(uint64_t n, uint64_t floor)
{
    const char *v = getenv("SL_STRESS_SCALE");
    double scale = v ? strtod(v, NULL) : 1.0;
    if (!(scale > 0.0)) scale = 1.0;
    double r = (double)n * scale;
    uint64_t out = (uint64_t)r;
    return out < floor ? floor : out;
}

unsigned sl_test_env_uint(const char *name, unsigned def)
{
    const char *v = getenv(name);
    if (!v || !*v) return def;
    char *end = NULL;
    unsigned long x = strtoul(v, &end, 10);
    return (end && *end == '\0' && x > 0 && x < 4096) ? (unsigned)x : def;
}

void sl_test_barrier_init(sl_test_barrier *b, unsigned count)
{
    pthread_barrier_init(&b->b, NULL, count);
}

void sl_test_barrier_wait(sl_test_barrier *b) { pthread_barrier_wait(&b->b); }

void sl_test_barrier_destroy(sl_test_barrier *b) { pthread_barrier_destroy(&b->b); }

void sl_test_rng_seed(sl_test_rng *r, uint64_t seed)
{
    r->s = seed ? seed : 0x9E3779B97F4A7C15ull;
}

uint64_t sl_test_rng_next(sl_test_rng *r)
{
    uint64_t x = r->s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    r->s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

void sl_test_maybe_stall(sl_test_rng *r, unsigned one_in)
{
    if (one_in == 0 || sl_test_rng_next(r) % one_in != 0) return;
    switch (sl_test_rng_next(r) % 3) {
    case 0: sched_yield(); break;
    case 1:
        for (volatile unsigned i = 0; i < 2000; i++) {
        }
        break;
    default: {
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
    }
}

uint64_t sl_test_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void sl_test_sleep_ns(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / SEC), (long)(ns % SEC)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

unsigned sl_test_thread_count(void)
{
    unsigned n = 0;
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

bool sl_test_task_asleep(const char *stat_path)
{
    char stat[512];
    FILE *f = fopen(stat_path, "r");
    size_t len = f ? fread(stat, 1, sizeof stat - 1, f) : 0;
    if (f)
        fclose(f);
    stat[len] = 0;
    const char *paren = strrchr(stat, ')'); /* "pid (comm) S ...": comm may hold ')' */
    return paren && paren[1] == ' ' && paren[2] == 'S';
}

_Atomic unsigned long sl_test_futex_waits, sl_test_futex_wakes;
_Atomic int sl_test_late_riser;

static int counting_wait(SL_ATOMIC(uint32_t) *w, uint32_t e, uint64_t d)
{
    atomic_fetch_add(&sl_test_futex_waits, 1);
    int r = sl__sys_default_ops.futex_wait(w, e, d);
    if (r == 0 && atomic_load(&sl_test_late_riser))
        sl_test_sleep_ns(100 * MS);
    return r;
}

static int counting_wake(SL_ATOMIC(uint32_t) *w, int n)
{
    atomic_fetch_add(&sl_test_futex_wakes, 1);
    return sl__sys_default_ops.futex_wake(w, n);
}

const sl_sys_ops sl_test_counting_ops = {.futex_wait = counting_wait,
                                         .futex_wake = counting_wake};

static void *sleeper_main(void *arg)
{
    sl_test_sleeper *s = arg;
    atomic_store(&s->tid, (int)syscall(SYS_gettid));
    s->st = sl_chan_recv_for(s->ch, &s->msg, 3000 * MS);
    if (s->st == SL_OK && s->got)
        atomic_fetch_add(s->got, 1);
    return NULL;
}

void sl_test_sleeper_start(sl_test_sleeper *s)
{
    ck_assert_int_eq(pthread_create(&s->thr, NULL, sleeper_main, s), 0);
}

bool sl_test_thread_asleep(int tid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
    return tid != 0 && sl_test_task_asleep(path);
}

uint64_t sl_test_env_seed(const char *env)
{
    const char *v = getenv(env);
    uint64_t s = (v && *v) ? strtoull(v, NULL, 0)
                           : (sl_test_now_ns() * 0x9E3779B97F4A7C15ull) ^
                                 ((uint64_t)getpid() << 17);
    return s ? s : 1;
}

uint64_t sl_test_seed(const char *suite, const char *name)
{
    uint64_t s = sl_test_env_seed("SL_TEST_SEED");
    fprintf(stderr, "[%s %s] seed %llu (SL_TEST_SEED=%llu replays it)\n", suite, name, ULL(s),
            ULL(s));
    return s;
}

const char *sl_test_flavor_name(sl_flavor f)
{
    switch (f) {
    case SL_SPSC: return "SPSC";
    case SL_MPMC: return "MPMC";
    case SL_LIST: return "LIST";
    case SL_RING: return "RING";
    case SL_TIMER: return "TIMER";
    case SL_BROADCAST: return "BROADCAST";
    default: return "?";
    }
}

sl_chan *sl_test_chan(sl_flavor f, size_t esz, size_t cap, sl_drop_fn drop, void *ctx)
{
    sl_chan_opts o = {.flavor = f, .elem_size = esz, .capacity = cap, .drop = drop,
                      .drop_ctx = ctx};
    sl_chan *ch = NULL;
    sl_status st = sl_chan_new(&ch, &o);
    ck_assert_msg(st == SL_OK, "sl_chan_new(%s, esz %zu, cap %zu) = %s", sl_test_flavor_name(f),
                  esz, cap, sl_status_str(st));
    ck_assert_ptr_nonnull(ch);
    return ch;
}

static uint64_t pad_word(uint64_t seq, size_t w)
{
    return (seq + 1) * 0x9E3779B97F4A7C15ull ^ (uint64_t)w * 0xBF58476D1CE4E5B9ull;
}

/* The pad goes a word at a time (the tail of a partial word too), so large
 * messages stay cheap to write and compare. */
void sl_test_seq_fill(unsigned char *b, size_t esz, uint64_t seq)
{
    for (size_t i = 0; i < esz && i < 8; i++)
        b[i] = (unsigned char)(seq >> (8 * i));
    size_t i = 8, w = 1;
    for (; i + 8 <= esz; i += 8, w++) {
        uint64_t x = pad_word(seq, w);
        memcpy(b + i, &x, 8);
    }
    if (i < esz) {
        uint64_t x = pad_word(seq, w);
        memcpy(b + i, &x, esz - i);
    }
}

bool sl_test_seq_is(const unsigned char *b, size_t esz, uint64_t seq)
{
    for (size_t i = 0; i < esz && i < 8; i++)
        if (b[i] != (unsigned char)(seq >> (8 * i)))
            return false;
    size_t i = 8, w = 1;
    for (; i + 8 <= esz; i += 8, w++) {
        uint64_t x = pad_word(seq, w), y;
        memcpy(&y, b + i, 8);
        if (x != y)
            return false;
    }
    if (i < esz) {
        uint64_t x = pad_word(seq, w);
        if (memcmp(b + i, &x, esz - i) != 0)
            return false;
    }
    return true;
}

uint64_t sl_test_seq_low(const unsigned char *b, size_t esz)
{
    uint64_t s = 0;
    for (size_t i = 0; i < esz && i < 8; i++)
        s |= (uint64_t)b[i] << (8 * i);
    return s;
}

static void *recv_main(void *arg)
{
    sl_test_recv_thread *t = arg;
    t->st = sl_chan_recv(t->ch, &t->out);
    atomic_store(&t->done, 1);
    return NULL;
}

void sl_test_recv_start(sl_test_recv_thread *t, sl_chan *ch)
{
    t->ch = ch;
    t->out = 0;
    t->st = (sl_status)-1;
    atomic_store(&t->done, 0);
    ck_assert_int_eq(pthread_create(&t->thr, NULL, recv_main, t), 0);
    sl_test_sleep_ns(30 * MS);
    ck_assert_msg(atomic_load(&t->done) == 0, "sl_chan_recv on an empty channel returned %s",
                  sl_status_str(t->st));
}

TCase *sl_test_loop_case(Suite *s, const char *name, int timeout, const TTest *test, int n)
{
    TCase *tc = tcase_create(name);
    tcase_set_timeout(tc, timeout);
    tcase_add_loop_test(tc, test, 0, n);
    suite_add_tcase(s, tc);
    return tc;
}

/* ---- the system layer under the tests ------------------------------------
 * One base table, built at start-up from SL_TEST_SYSFAULTS and installed
 * before main: its allocation entry fails as armed (sl_test_fail_allocs),
 * its membarrier entry refuses with ENOSYS under "nomembarrier", and its
 * futex entries are the spurious ones below under "spurious"; every other
 * entry is the real call. A test's own table goes over it
 * (sl_test_sys_install), never instead of it. */

/* The allocation-fault counters: attempts counts every call since arming;
 * calls numbered in [fail_from, fail_to) fail. */
static _Atomic uint64_t alloc_attempts, alloc_fail_from, alloc_fail_to;

static void *fault_alloc(size_t align, size_t size)
{
    uint64_t k = atomic_fetch_add(&alloc_attempts, 1) + 1;
    if (k >= atomic_load(&alloc_fail_from) && k < atomic_load(&alloc_fail_to))
        return NULL;
    return sl__sys_default_ops.alloc(align, size);
}

/* What was injected, by kind (sl_test_sys_faults_report). */
enum { F_WAIT, F_SPURIOUS, F_EINTR, F_EARLY_TIMEOUT, F_WAIT_DELAY, F_WAKE, F_WAKE_DELAY,
       F_MEMBARRIER_REFUSED, F_N };
static const char *const k_fault_names[F_N] = {
    "futex_wait", "spurious", "EINTR", "early ETIMEDOUT", "wait delay", "futex_wake",
    "wake delay", "membarrier refused"};
static _Atomic uint64_t g_faults[F_N];
static _Atomic uint64_t g_fault_seed;
static _Thread_local sl_test_rng t_fault_rng;
static _Thread_local bool t_fault_rng_ready;

static void count_fault(int kind)
{
    atomic_fetch_add_explicit(&g_faults[kind], 1, memory_order_relaxed);
}

static uint64_t fault_rand(void)
{
    if (!t_fault_rng_ready) {
        sl_test_rng_seed(&t_fault_rng, atomic_fetch_add(&g_fault_seed, 0x9E3779B97F4A7C15ull));
        t_fault_rng_ready = true;
    }
    return sl_test_rng_next(&t_fault_rng);
}

static void fault_nap(void)
{
    struct timespec ts = {0, (long)(1000 + fault_rand() % 4000)};
    nanosleep(&ts, NULL);
}

/* futex_wait (private or shared: `real`): 1/8 a spurious return, 1/16
 * -EINTR, 1/16 -ETIMEDOUT before a finite deadline, 1/8 a nap of 1–5 µs
 * before the real call. */
static int spurious_wait_with(int (*real)(SL_ATOMIC(uint32_t) *, uint32_t, uint64_t),
                              SL_ATOMIC(uint32_t) *word, uint32_t expected, uint64_t deadline_ns)
{
    count_fault(F_WAIT);
    switch (fault_rand() % 16) {
    case 0:
    case 1: count_fault(F_SPURIOUS); return 0;
    case 2: count_fault(F_EINTR); return -EINTR;
    case 3:
        if (deadline_ns != SL_FOREVER) {
            count_fault(F_EARLY_TIMEOUT);
            return -ETIMEDOUT;
        }
        break;
    case 4:
    case 5: count_fault(F_WAIT_DELAY); fault_nap(); break;
    default: break;
    }
    return real(word, expected, deadline_ns);
}

static int spurious_futex_wait(SL_ATOMIC(uint32_t) *word, uint32_t expected, uint64_t deadline_ns)
{
    return spurious_wait_with(sl__sys_default_ops.futex_wait, word, expected, deadline_ns);
}

static int spurious_futex_wait_shared(SL_ATOMIC(uint32_t) *word, uint32_t expected,
                                      uint64_t deadline_ns)
{
    return spurious_wait_with(sl__sys_default_ops.futex_wait_shared, word, expected, deadline_ns);
}

/* futex_waitv: the same faults as futex_wait (a spurious return is index 0,
 * which the caller must not trust either: it re-reads every epoch). */
static int spurious_futex_waitv(const sl__futex_word *w, unsigned n, uint64_t deadline_ns)
{
    count_fault(F_WAIT);
    switch (fault_rand() % 16) {
    case 0:
    case 1: count_fault(F_SPURIOUS); return 0;
    case 2: count_fault(F_EINTR); return -EINTR;
    case 3: count_fault(F_SPURIOUS); return -EAGAIN;
    case 4:
    case 5: count_fault(F_WAIT_DELAY); fault_nap(); break;
    default: break;
    }
    return sl__sys_default_ops.futex_waitv(w, n, deadline_ns);
}

/* futex_wake: 1/8 a nap first (a wake late behind the waiter's compare). */
static void spurious_wake_delay(void)
{
    count_fault(F_WAKE);
    if (fault_rand() % 8 == 0) {
        count_fault(F_WAKE_DELAY);
        fault_nap();
    }
}

static int spurious_futex_wake(SL_ATOMIC(uint32_t) *word, int count)
{
    spurious_wake_delay();
    return sl__sys_default_ops.futex_wake(word, count);
}

static int spurious_futex_wake_shared(SL_ATOMIC(uint32_t) *word, int count)
{
    spurious_wake_delay();
    return sl__sys_default_ops.futex_wake_shared(word, count);
}

static int refused_membarrier(int cmd)
{
    (void)cmd;
    count_fault(F_MEMBARRIER_REFUSED);
    return -ENOSYS;
}

static const sl_sys_ops k_spurious_ops = {.futex_wait = spurious_futex_wait,
                                          .futex_wake = spurious_futex_wake,
                                          .futex_wait_shared = spurious_futex_wait_shared,
                                          .futex_wake_shared = spurious_futex_wake_shared,
                                          .futex_waitv = spurious_futex_waitv};

static sl_sys_ops g_base = {.alloc = fault_alloc};
static bool g_env_spurious, g_env_nomembarrier;

/* A full table: o's entries where it has them, else the base's, else the
 * real calls. */
static void overlay(sl_sys_ops *out, const sl_sys_ops *o)
{
#define PICK(f) out->f = o && o->f ? o->f : g_base.f ? g_base.f : sl__sys_default_ops.f
    PICK(futex_wait); PICK(futex_wake); PICK(futex_wait_shared); PICK(futex_wake_shared);
    PICK(futex_waitv);
    PICK(now_ns); PICK(membarrier); PICK(eventfd); PICK(eventfd_reset);
    PICK(alloc);
    PICK(thread_create); PICK(thread_getattr);
#undef PICK
}

/* The composed tables, one per distinct test table and never rewritten once
 * installed, so that a thread still inside sluice reads a whole one. */
#define MAX_OVERLAYS 16
static struct { const sl_sys_ops *over; sl_sys_ops full; } g_composed[MAX_OVERLAYS];
static unsigned g_n_composed;
static pthread_mutex_t g_compose_lock = PTHREAD_MUTEX_INITIALIZER;

void sl_test_sys_install(const sl_sys_ops *ops)
{
    pthread_mutex_lock(&g_compose_lock);
    unsigned i = 0;
    while (i < g_n_composed && g_composed[i].over != ops)
        i++;
    if (i == g_n_composed) {
        if (i == MAX_OVERLAYS) {
            fprintf(stderr, "harness: more than %d system tables\n", MAX_OVERLAYS);
            abort();
        }
        g_composed[i].over = ops;
        overlay(&g_composed[i].full, ops);
        g_n_composed++;
    }
    pthread_mutex_unlock(&g_compose_lock);
    sl__sys_set_ops(&g_composed[i].full);
}

void sl_test_sys_restore(void) { sl_test_sys_install(NULL); }

const sl_sys_ops *sl_test_sys_spurious(void) { return &k_spurious_ops; }

void sl_test_sys_faults_seed(uint64_t seed)
{
    atomic_store(&g_fault_seed, seed);
    for (int i = 0; i < F_N; i++)
        atomic_store(&g_faults[i], 0);
}

void sl_test_sys_faults_report(const char *who)
{
    uint64_t any = 0;
    for (int i = 0; i < F_N; i++)
        any |= atomic_load(&g_faults[i]);
    if (!any)
        return;
    fprintf(stderr, "[%s] injected:", who);
    for (int i = 0; i < F_N; i++)
        fprintf(stderr, " %s %llu%s", k_fault_names[i], ULL(atomic_load(&g_faults[i])),
                i + 1 < F_N ? "," : "\n");
}

bool sl_test_sysfault_on(const char *name)
{
    const char *v = getenv("SL_TEST_SYSFAULTS");
    size_t len = strlen(name);
    for (const char *p = v; p && *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] == ',')) {
        if (strncmp(p, name, len) == 0 && (p[len] == ',' || p[len] == '\0'))
            return true;
    }
    return false;
}

static void report_at_exit(void) { sl_test_sys_faults_report("SL_TEST_SYSFAULTS"); }

/* Before main: before any sluice object exists, so that the membarrier
 * registration (decided once per process) already sees the base table. */
__attribute__((constructor)) static void sys_base_install(void)
{
    const char *v = getenv("SL_TEST_SYSFAULTS");
    g_env_nomembarrier = sl_test_sysfault_on("nomembarrier");
    g_env_spurious = sl_test_sysfault_on("spurious");
    if (v && *v && !g_env_nomembarrier && !g_env_spurious) {
        fprintf(stderr, "harness: SL_TEST_SYSFAULTS=%s: known are nomembarrier, spurious\n", v);
        exit(2);
    }
    if (g_env_nomembarrier)
        g_base.membarrier = refused_membarrier;
    if (g_env_spurious) {
        g_base.futex_wait = spurious_futex_wait;
        g_base.futex_wake = spurious_futex_wake;
        g_base.futex_wait_shared = spurious_futex_wait_shared;
        g_base.futex_wake_shared = spurious_futex_wake_shared;
        g_base.futex_waitv = spurious_futex_waitv;
    }
    sl_test_sys_faults_seed(sl_test_env_seed("SL_STRESS_SEED") ^ 0xFA17ull);
    sl_test_sys_restore(); /* g_composed[0]: the base alone */
    if (g_env_nomembarrier || g_env_spurious)
        atexit(report_at_exit);
}

const sl_sys_ops *sl_test_sys_base(void) { return &g_composed[0].full; }

static void arm_allocs(uint64_t from, uint64_t to)
{
    atomic_store(&alloc_fail_from, from);
    atomic_store(&alloc_fail_to, to);
    atomic_store(&alloc_attempts, 0);
    /* A table installed without the harness (sl__sys_set_ops) dropped the
     * faulting allocation: the base brings it back. */
    if (sl__sys()->alloc != fault_alloc)
        sl_test_sys_restore();
}

void sl_test_fail_allocs(uint64_t n)
{
    arm_allocs(1, n == UINT64_MAX ? UINT64_MAX : n + 1);
}

void sl_test_fail_alloc_at(uint64_t k)
{
    arm_allocs(k, k + 1);
}

uint64_t sl_test_allocs(void)
{
    return atomic_load(&alloc_attempts);
}

void sl_test_alloc_faults_off(void)
{
    arm_allocs(0, 0);
}

void sl_test_account(const char *what, uint64_t n)
{
    const char *path = getenv("SL_ACCOUNT_FILE");
    if (!path || !*path || n == 0)
        return;
    char line[256];
    int len = snprintf(line, sizeof line, "%s %s\t%llu\n", program_invocation_short_name, what,
                       ULL(n));
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0 || len <= 0)
        return;
    /* One write with O_APPEND: lines from concurrent tests never interleave. */
    ssize_t w = write(fd, line, (size_t)len < sizeof line ? (size_t)len : sizeof line - 1);
    (void)w;
    close(fd);
}

int sl_test_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

#if defined(SL_FAULT_INJECT) && SL_FAULT_INJECT
#include "internal/testing.h"

void sl_test_gate_stop(void *gate, unsigned step)
{
    sl_test_gate *g = gate;
    (void)step;
    atomic_store(&g->stopped, 1);
    while (!atomic_load(&g->go))
        sl_test_sleep_ns(MS / 10);
}

void *sl_test_send_gated(void *gated)
{
    sl_test_gated_send *g = gated;
    sl__fi_arm(g->k, sl_test_gate_stop, &g->gate);
    g->st = sl_chan_try_send(g->ch, &g->value);
    g->passed = sl__fi_disarm();
    atomic_store(&g->gate.stopped, 1);
    return NULL;
}

void sl_test_wait_stopped(sl_test_gated_send *g)
{
    while (!atomic_load(&g->gate.stopped))
        sl_test_sleep_ns(MS / 10);
}
#endif
