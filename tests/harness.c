#include "harness.h"
#include "internal/sysops.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* The allocation-fault table: attempts counts every call since arming;
 * calls numbered in [fail_from, fail_to) fail. */
static _Atomic uint64_t alloc_attempts, alloc_fail_from, alloc_fail_to;

static void *fault_alloc(size_t align, size_t size)
{
    uint64_t k = atomic_fetch_add(&alloc_attempts, 1) + 1;
    if (k >= atomic_load(&alloc_fail_from) && k < atomic_load(&alloc_fail_to))
        return NULL;
    return sl__sys_default_ops.alloc(align, size);
}

static const sl_sys_ops k_alloc_fault_ops = {.alloc = fault_alloc};

static void arm_allocs(uint64_t from, uint64_t to)
{
    atomic_store(&alloc_fail_from, from);
    atomic_store(&alloc_fail_to, to);
    atomic_store(&alloc_attempts, 0);
    sl__sys_set_ops(&k_alloc_fault_ops);
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
    sl__sys_set_ops(NULL);
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
