/*
 * tests/raw_ring_cases.h — the sequential cases every raw bounded ring must
 * pass, written once over the q_* aliases that the including suite defines
 * (Q_T, Q_NAME, q_init, q_init_at, q_destroy, q_push, q_pop, q_push_n,
 * q_pop_n, q_len, q_cap). Included by unit_spsc.c and unit_mpmc.c only.
 */

/* ---- message contents ------------------------------------------------------ */

static uint64_t mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* Fills an esz-byte message that stands for sequence number seq. */
static void fill_msg(unsigned char *m, size_t esz, uint64_t seq)
{
    uint64_t h = mix64(seq);
    for (size_t i = 0; i < esz; i++) {
        if (i % 8 == 0 && i) h = mix64(h + i);
        m[i] = (unsigned char)(h >> ((i % 8) * 8));
    }
    /* The sequence number itself leads, as far as it fits. */
    for (size_t i = 0; i < esz && i < 8; i++)
        m[i] = (unsigned char)(seq >> (i * 8));
}

static bool msg_is(const unsigned char *m, size_t esz, uint64_t seq)
{
    unsigned char want[2048];
    unsigned char *w = esz <= sizeof want ? want : malloc(esz);
    ck_assert_ptr_nonnull(w);
    fill_msg(w, esz, seq);
    bool same = memcmp(m, w, esz) == 0;
    if (w != want) free(w);
    return same;
}

/* ---- the model: a plain array FIFO ---------------------------------------- */

typedef struct model {
    uint64_t *seq;
    size_t cap, head, n;
} model;

static void model_init(model *m, size_t cap)
{
    m->seq = calloc(cap, sizeof *m->seq);
    ck_assert_ptr_nonnull(m->seq);
    m->cap = cap;
    m->head = 0;
    m->n = 0;
}
static void model_free(model *m) { free(m->seq); }
static bool model_push(model *m, uint64_t s)
{
    if (m->n == m->cap) return false;
    m->seq[(m->head + m->n) % m->cap] = s;
    m->n++;
    return true;
}
static bool model_pop(model *m, uint64_t *s)
{
    if (m->n == 0) return false;
    *s = m->seq[m->head];
    m->head = (m->head + 1) % m->cap;
    m->n--;
    return true;
}

/* ---- init ------------------------------------------------------------------ */

START_TEST(test_init_bad_input)
{
    Q_T q;
    ck_assert_int_eq(q_init(NULL, 8, 16), SL_EINVAL);
    ck_assert_int_eq(q_init(&q, 0, 16), SL_EINVAL);
    ck_assert_int_eq(q_init(&q, SL_ELEM_MAX + 1, 16), SL_EINVAL);
    ck_assert_int_eq(q_init(&q, SIZE_MAX, 16), SL_EINVAL);
    ck_assert_int_eq(q_init(&q, 8, 0), SL_EINVAL);
    ck_assert_int_eq(q_init(&q, 8, SIZE_MAX), SL_EINVAL);
    ck_assert_int_eq(q_init(&q, 1, SIZE_MAX), SL_EINVAL);
    /* capacity * elem_size overflows */
    ck_assert_int_eq(q_init(&q, 16, SIZE_MAX / 8), SL_EINVAL);
    ck_assert_int_eq(q_init(&q, SL_ELEM_MAX, SIZE_MAX / SL_ELEM_MAX + 1), SL_EINVAL);
    /* rounding the capacity up to a power of two overflows */
    ck_assert_int_eq(q_init(&q, 1, SIZE_MAX / 2 + 2), SL_EINVAL);
    /* the same through the test hook */
    ck_assert_int_eq(q_init_at(NULL, 8, 16, 0), SL_EINVAL);
    ck_assert_int_eq(q_init_at(&q, 0, 16, UINT64_MAX - 5), SL_EINVAL);
    ck_assert_int_eq(q_init_at(&q, 8, 0, UINT64_MAX - 5), SL_EINVAL);
    ck_assert_int_eq(q_init_at(&q, 8, SIZE_MAX, UINT64_MAX - 5), SL_EINVAL);
}
END_TEST

START_TEST(test_init_limits_ok)
{
    Q_T q;
    ck_assert_int_eq(q_init(&q, 1, 1), SL_OK);
    ck_assert_uint_eq(q_cap(&q), 1);
    ck_assert_uint_eq(q_len(&q), 0);
    q_destroy(&q);

    /* The largest message size is accepted and carried whole. */
    ck_assert_int_eq(q_init(&q, SL_ELEM_MAX, 2), SL_OK);
    unsigned char *in = malloc(SL_ELEM_MAX), *out = malloc(SL_ELEM_MAX);
    ck_assert_ptr_nonnull(in);
    ck_assert_ptr_nonnull(out);
    for (uint64_t s = 0; s < 5; s++) {
        fill_msg(in, SL_ELEM_MAX, s);
        ck_assert_int_eq(q_push(&q, in), SL_OK);
        memset(out, 0, SL_ELEM_MAX);
        ck_assert_int_eq(q_pop(&q, out), SL_OK);
        ck_assert(msg_is(out, SL_ELEM_MAX, s));
    }
    free(in);
    free(out);
    q_destroy(&q);
}
END_TEST

START_TEST(test_destroy_null)
{
    q_destroy(NULL);
    /* A destroyed ring can be initialised again. */
    Q_T q;
    ck_assert_int_eq(q_init(&q, 8, 4), SL_OK);
    uint64_t v = 7;
    ck_assert_int_eq(q_push(&q, &v), SL_OK);
    q_destroy(&q); /* with a message inside */
    ck_assert_int_eq(q_init(&q, 4, 3), SL_OK);
    ck_assert_uint_eq(q_len(&q), 0);
    ck_assert_uint_eq(q_cap(&q), 3);
    uint32_t w = 0;
    ck_assert_int_eq(q_pop(&q, &w), SL_EMPTY);
    q_destroy(&q);
}
END_TEST

/* ---- capacity and order ---------------------------------------------------- */

static const size_t caps[] = { 1, 2, 3, 5, 7, 8, 100, 1000 };

static void check_exact_capacity(Q_T *q, size_t cap, int rounds)
{
    ck_assert_uint_eq(q_cap(q), cap);
    uint64_t seq = 0;
    for (int r = 0; r < rounds; r++) {
        for (size_t i = 0; i < cap; i++) {
            uint64_t v = seq + i;
            ck_assert_msg(q_push(q, &v) == SL_OK, "cap %zu: push %zu of %zu failed", cap, i, cap);
            ck_assert_uint_eq(q_len(q), i + 1);
        }
        uint64_t extra = 0xDEAD;
        ck_assert_msg(q_push(q, &extra) == SL_FULL, "cap %zu: push %zu accepted", cap, cap + 1);
        ck_assert_int_eq(q_push(q, &extra), SL_FULL);
        ck_assert_uint_eq(q_len(q), cap);
        ck_assert_uint_eq(q_cap(q), cap);
        for (size_t i = 0; i < cap; i++) {
            uint64_t v = UINT64_MAX;
            ck_assert_int_eq(q_pop(q, &v), SL_OK);
            ck_assert_msg(v == seq + i, "cap %zu: popped %llu, expected %llu", cap,
                          (unsigned long long)v, (unsigned long long)(seq + i));
            ck_assert_uint_eq(q_len(q), cap - i - 1);
        }
        uint64_t v = 12345;
        ck_assert_int_eq(q_pop(q, &v), SL_EMPTY);
        ck_assert_uint_eq(v, 12345); /* untouched */
        ck_assert_uint_eq(q_len(q), 0);
        seq += cap;
    }
}

START_TEST(test_exact_capacity)
{
    for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
        Q_T q;
        ck_assert_int_eq(q_init(&q, sizeof(uint64_t), caps[c]), SL_OK);
        check_exact_capacity(&q, caps[c], 3);
        q_destroy(&q);
    }
}
END_TEST

START_TEST(test_exact_capacity_near_wrap)
{
    const uint64_t starts[] = { UINT64_MAX - 50, UINT64_MAX, UINT64_MAX - 1, UINT64_MAX - 999 };
    for (size_t s = 0; s < sizeof starts / sizeof starts[0]; s++) {
        for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
            Q_T q;
            ck_assert_int_eq(q_init_at(&q, sizeof(uint64_t), caps[c], starts[s]), SL_OK);
            ck_assert_uint_eq(q_len(&q), 0);
            check_exact_capacity(&q, caps[c], 3);
            q_destroy(&q);
        }
    }
}
END_TEST

START_TEST(test_fifo_interleaved)
{
    Q_T q;
    ck_assert_int_eq(q_init(&q, sizeof(uint32_t), 5), SL_OK);
    uint32_t next_in = 0, next_out = 0;
    for (int round = 0; round < 1000; round++) {
        int pushes = 1 + round % 5, pops = 1 + (round * 7) % 5;
        for (int i = 0; i < pushes; i++) {
            if (q_push(&q, &next_in) == SL_OK) next_in++;
        }
        for (int i = 0; i < pops; i++) {
            uint32_t v;
            if (q_pop(&q, &v) == SL_OK) {
                ck_assert_uint_eq(v, next_out);
                next_out++;
            }
        }
        ck_assert_uint_eq(q_len(&q), next_in - next_out);
        ck_assert_uint_le(q_len(&q), 5);
    }
    ck_assert_uint_gt(next_out, 1000);
    q_destroy(&q);
}
END_TEST

START_TEST(test_batch_partial)
{
    Q_T q;
    ck_assert_int_eq(q_init(&q, sizeof(uint64_t), 10), SL_OK);
    uint64_t in[32], out[32];
    for (int i = 0; i < 32; i++) in[i] = 100 + (uint64_t)i;

    ck_assert_uint_eq(q_push_n(&q, in, 0), 0);
    ck_assert_uint_eq(q_pop_n(&q, out, 0), 0);
    ck_assert_uint_eq(q_pop_n(&q, out, 5), 0);
    ck_assert_uint_eq(q_push_n(&q, in, 7), 7);
    ck_assert_uint_eq(q_len(&q), 7);
    ck_assert_uint_eq(q_push_n(&q, in + 7, 7), 3); /* partial: room for 3 */
    ck_assert_uint_eq(q_len(&q), 10);
    ck_assert_uint_eq(q_push_n(&q, in + 10, 1), 0);
    ck_assert_uint_eq(q_push_n(&q, in + 10, 32 - 10), 0);
    ck_assert_uint_eq(q_len(&q), 10);

    for (int i = 0; i < 32; i++) out[i] = UINT64_MAX;
    ck_assert_uint_eq(q_pop_n(&q, out, 4), 4);
    for (int i = 0; i < 4; i++) ck_assert_uint_eq(out[i], 100 + (uint64_t)i);
    ck_assert_uint_eq(out[4], UINT64_MAX); /* nothing written past the count */
    ck_assert_uint_eq(q_len(&q), 6);

    /* Wraps around the storage end. */
    ck_assert_uint_eq(q_push_n(&q, in + 10, 6), 4);
    ck_assert_uint_eq(q_len(&q), 10);

    for (int i = 0; i < 32; i++) out[i] = UINT64_MAX;
    ck_assert_uint_eq(q_pop_n(&q, out, 32), 10); /* partial: only 10 inside */
    for (int i = 0; i < 10; i++) ck_assert_uint_eq(out[i], 104 + (uint64_t)i);
    ck_assert_uint_eq(out[10], UINT64_MAX);
    ck_assert_uint_eq(q_len(&q), 0);
    ck_assert_uint_eq(q_pop_n(&q, out, 32), 0);

    /* Batches and single operations share one order. */
    uint64_t one = 1;
    ck_assert_int_eq(q_push(&q, &one), SL_OK);
    ck_assert_uint_eq(q_push_n(&q, in, 2), 2);
    one = 2;
    ck_assert_int_eq(q_push(&q, &one), SL_OK);
    ck_assert_uint_eq(q_pop_n(&q, out, 2), 2);
    ck_assert_uint_eq(out[0], 1);
    ck_assert_uint_eq(out[1], 100);
    uint64_t v;
    ck_assert_int_eq(q_pop(&q, &v), SL_OK);
    ck_assert_uint_eq(v, 101);
    ck_assert_int_eq(q_pop(&q, &v), SL_OK);
    ck_assert_uint_eq(v, 2);
    ck_assert_int_eq(q_pop(&q, &v), SL_EMPTY);
    q_destroy(&q);
}
END_TEST

/* ---- element sizes --------------------------------------------------------- */

static const size_t elem_sizes[] = { 1, 2, 3, 4, 7, 8, 16, 24, 64, 100, 256, 1000 };

START_TEST(test_elem_sizes)
{
    for (size_t e = 0; e < sizeof elem_sizes / sizeof elem_sizes[0]; e++) {
        const size_t esz = elem_sizes[e];
        const size_t cap = 5, guard = 32;
        Q_T q;
        ck_assert_int_eq(q_init_at(&q, esz, cap, e % 2 ? UINT64_MAX - 7 : 0), SL_OK);
        unsigned char *in = malloc(esz * cap);
        unsigned char *out = malloc(esz * cap + guard);
        ck_assert_ptr_nonnull(in);
        ck_assert_ptr_nonnull(out);
        uint64_t s_in = 0, s_out = 0;
        for (int round = 0; round < 40; round++) {
            /* Singles: fill up, check the bound, drain two thirds. */
            while (1) {
                fill_msg(in, esz, s_in);
                if (q_push(&q, in) != SL_OK) break;
                s_in++;
            }
            ck_assert_uint_eq(s_in - s_out, cap);
            size_t take = round % 3 == 0 ? cap : 1 + (size_t)round % cap;
            for (size_t i = 0; i < take; i++) {
                memset(out, 0xA5, esz + guard);
                ck_assert_int_eq(q_pop(&q, out), SL_OK);
                ck_assert_msg(msg_is(out, esz, s_out), "esz %zu: message %llu corrupted", esz,
                              (unsigned long long)s_out);
                for (size_t g = 0; g < guard; g++)
                    ck_assert_msg(out[esz + g] == 0xA5, "esz %zu: pop wrote past the message", esz);
                s_out++;
            }
            /* Batches. */
            size_t room = cap - (size_t)(s_in - s_out);
            for (size_t i = 0; i < cap; i++) fill_msg(in + i * esz, esz, s_in + i);
            size_t pushed = q_push_n(&q, in, cap);
            ck_assert_uint_eq(pushed, room);
            s_in += pushed;
            memset(out, 0xA5, esz * cap + guard);
            size_t popped = q_pop_n(&q, out, cap);
            ck_assert_uint_eq(popped, cap);
            for (size_t i = 0; i < popped; i++) {
                ck_assert_msg(msg_is(out + i * esz, esz, s_out), "esz %zu: batch message %llu corrupted",
                              esz, (unsigned long long)s_out);
                s_out++;
            }
            for (size_t g = 0; g < guard; g++)
                ck_assert_msg(out[esz * cap + g] == 0xA5, "esz %zu: pop_n wrote past the batch", esz);
            ck_assert_uint_eq(q_len(&q), 0);
        }
        free(in);
        free(out);
        q_destroy(&q);
    }
}
END_TEST

/* ---- against the model ----------------------------------------------------- */

static void run_model(size_t cap, size_t esz, uint64_t start, uint64_t seed, unsigned steps)
{
    Q_T q;
    ck_assert_int_eq(q_init_at(&q, esz, cap, start), SL_OK);
    model m;
    model_init(&m, cap);
    sl_test_rng rng;
    sl_test_rng_seed(&rng, seed);
    const size_t maxn = cap + 3;
    unsigned char *buf = malloc(esz * maxn);
    ck_assert_ptr_nonnull(buf);
    uint64_t next = 0;
    for (unsigned step = 0; step < steps; step++) {
        uint64_t r = sl_test_rng_next(&rng);
        /* Bias towards pushing in some phases and popping in others so the
         * ring visits full and empty often. */
        bool push_phase = (step / 64) % 2 == 0;
        unsigned op = (unsigned)(r % 10);
        if (op == 2 && !push_phase) op = 3;
        else if (op == 5 && push_phase) op = 0;
        switch (op) {
        case 0: case 1: case 2: { /* push one */
            fill_msg(buf, esz, next);
            sl_status st = q_push(&q, buf);
            bool ok = model_push(&m, next);
            ck_assert_msg(st == (ok ? SL_OK : SL_FULL),
                          "seed %llu step %u: push got %d, model says %s",
                          (unsigned long long)seed, step, (int)st, ok ? "room" : "full");
            if (ok) next++;
            break;
        }
        case 3: case 4: case 5: { /* pop one */
            memset(buf, 0, esz);
            uint64_t want = 0;
            bool ok = model_pop(&m, &want);
            sl_status st = q_pop(&q, buf);
            ck_assert_msg(st == (ok ? SL_OK : SL_EMPTY),
                          "seed %llu step %u: pop got %d, model says %s",
                          (unsigned long long)seed, step, (int)st, ok ? "non-empty" : "empty");
            if (ok)
                ck_assert_msg(msg_is(buf, esz, want), "seed %llu step %u: wrong message (want %llu)",
                              (unsigned long long)seed, step, (unsigned long long)want);
            break;
        }
        case 6: case 7: { /* push_n */
            size_t k = (size_t)((r >> 8) % (maxn + 1));
            for (size_t i = 0; i < k; i++) fill_msg(buf + i * esz, esz, next + i);
            size_t room = cap - m.n, want = k < room ? k : room;
            size_t got = q_push_n(&q, buf, k);
            ck_assert_msg(got == want, "seed %llu step %u: push_n(%zu) gave %zu, model %zu",
                          (unsigned long long)seed, step, k, got, want);
            for (size_t i = 0; i < got; i++) ck_assert(model_push(&m, next + i));
            next += got;
            break;
        }
        case 8: { /* pop_n */
            size_t k = (size_t)((r >> 8) % (maxn + 1));
            size_t want = k < m.n ? k : m.n;
            size_t got = q_pop_n(&q, buf, k);
            ck_assert_msg(got == want, "seed %llu step %u: pop_n(%zu) gave %zu, model %zu",
                          (unsigned long long)seed, step, k, got, want);
            for (size_t i = 0; i < got; i++) {
                uint64_t s;
                ck_assert(model_pop(&m, &s));
                ck_assert_msg(msg_is(buf + i * esz, esz, s),
                              "seed %llu step %u: pop_n message %zu wrong (want %llu)",
                              (unsigned long long)seed, step, i, (unsigned long long)s);
            }
            break;
        }
        default: /* len, cap */
            break;
        }
        ck_assert_msg(q_len(&q) == m.n, "seed %llu step %u: len %zu, model %zu",
                      (unsigned long long)seed, step, q_len(&q), m.n);
        ck_assert_uint_eq(q_cap(&q), cap);
    }
    free(buf);
    model_free(&m);
    q_destroy(&q);
}

START_TEST(test_model_random)
{
    const size_t mcaps[] = { 1, 2, 3, 5, 8, 13, 64 };
    const size_t msizes[] = { 8, 3, 1, 16 };
    for (size_t c = 0; c < sizeof mcaps / sizeof mcaps[0]; c++)
        for (size_t e = 0; e < sizeof msizes / sizeof msizes[0]; e++)
            run_model(mcaps[c], msizes[e], 0, 1000 + c * 10 + e, (unsigned)sl_test_scaled(5000, 1500));
}
END_TEST

START_TEST(test_model_random_near_wrap)
{
    const size_t mcaps[] = { 1, 2, 3, 5, 7, 8, 100 };
    const uint64_t starts[] = { UINT64_MAX - 50, UINT64_MAX, UINT64_MAX - 1000, (uint64_t)1 << 63,
                                ((uint64_t)1 << 32) - 20, UINT64_MAX - 2 };
    for (size_t c = 0; c < sizeof mcaps / sizeof mcaps[0]; c++)
        for (size_t s = 0; s < sizeof starts / sizeof starts[0]; s++)
            run_model(mcaps[c], c % 2 ? 8 : 5, starts[s], 77 + c * 100 + s, (unsigned)sl_test_scaled(4000, 1200));
}
END_TEST

/* The brief's scenario verbatim: start 50 below the wrap and go far past it. */
START_TEST(test_wrap_sequential)
{
    const size_t wcaps[] = { 1, 3, 7, 8, 64 };
    for (size_t c = 0; c < sizeof wcaps / sizeof wcaps[0]; c++) {
        const size_t cap = wcaps[c];
        Q_T q;
        ck_assert_int_eq(q_init_at(&q, sizeof(uint64_t), cap, UINT64_MAX - 50), SL_OK);
        model m;
        model_init(&m, cap);
        uint64_t next = 0;
        for (int i = 0; i < 2000; i++) {
            /* Fill completely, then drain a varying amount. */
            for (;;) {
                sl_status st = q_push(&q, &next);
                bool ok = model_push(&m, next);
                ck_assert_int_eq(st, ok ? SL_OK : SL_FULL);
                if (!ok) break;
                next++;
            }
            ck_assert_uint_eq(q_len(&q), cap);
            size_t drain = 1 + (size_t)i % cap;
            for (size_t k = 0; k < drain; k++) {
                uint64_t v = UINT64_MAX, want;
                ck_assert(model_pop(&m, &want));
                ck_assert_int_eq(q_pop(&q, &v), SL_OK);
                ck_assert_uint_eq(v, want);
            }
            ck_assert_uint_eq(q_len(&q), m.n);
        }
        uint64_t v, want;
        while (model_pop(&m, &want)) {
            ck_assert_int_eq(q_pop(&q, &v), SL_OK);
            ck_assert_uint_eq(v, want);
        }
        ck_assert_int_eq(q_pop(&q, &v), SL_EMPTY);
        ck_assert_uint_gt(next, 100); /* went well past the wrap */
        model_free(&m);
        q_destroy(&q);
    }
}
END_TEST

/* ---- two threads, correct use ---------------------------------------------- */

typedef struct pc_ctx {
    Q_T q;
    uint64_t count;
} pc_ctx;

static void *pc_producer(void *arg)
{
    pc_ctx *c = arg;
    uint64_t batch[16];
    for (uint64_t i = 0; i < c->count;) {
        if (i % 3 == 0) {
            size_t k = 0;
            for (; k < 16 && i + k < c->count; k++) batch[k] = i + k;
            i += q_push_n(&c->q, batch, k);
        } else if (q_push(&c->q, &i) == SL_OK) {
            i++;
        } else {
            sched_yield();
        }
    }
    return NULL;
}

static void run_pc(uint64_t start)
{
    static pc_ctx c;
    c.count = sl_test_scaled(100000, 5000);
    ck_assert_int_eq(q_init_at(&c.q, sizeof(uint64_t), 31, start), SL_OK);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, pc_producer, &c), 0);
    uint64_t next = 0, batch[8];
    while (next < c.count) {
        if (next % 5 == 0) {
            size_t got = q_pop_n(&c.q, batch, 8);
            for (size_t k = 0; k < got; k++) {
                ck_assert_msg(batch[k] == next, "got %llu, expected %llu",
                              (unsigned long long)batch[k], (unsigned long long)next);
                next++;
            }
            if (!got) sched_yield();
        } else {
            uint64_t v;
            sl_status st = q_pop(&c.q, &v);
            if (st == SL_OK) {
                ck_assert_msg(v == next, "got %llu, expected %llu", (unsigned long long)v,
                              (unsigned long long)next);
                next++;
            } else {
                ck_assert_int_eq(st, SL_EMPTY);
                sched_yield();
            }
        }
        ck_assert_uint_le(q_len(&c.q), 31);
    }
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_uint_eq(q_len(&c.q), 0);
    q_destroy(&c.q);
}

START_TEST(test_two_threads_fifo)
{
    run_pc(0);
}
END_TEST

START_TEST(test_two_threads_fifo_near_wrap)
{
    run_pc(UINT64_MAX - 1000);
}
END_TEST

/* Bad input never crashes (SPEC §2): NULL ring, message or output buffer is
 * SL_EINVAL and consumes nothing. */
START_TEST(test_try_null_args)
{
    Q_T q;
    uint64_t v = 7, out = 0;
    ck_assert_int_eq(q_init(&q, sizeof v, 4), SL_OK);
    ck_assert_int_eq(q_push(NULL, &v), SL_EINVAL);
    ck_assert_int_eq(q_push(&q, NULL), SL_EINVAL);
    ck_assert_int_eq(q_pop(NULL, &out), SL_EINVAL);
    ck_assert_int_eq(q_pop(&q, &out), SL_EMPTY);
    ck_assert_int_eq(q_push(&q, &v), SL_OK);
    ck_assert_int_eq(q_pop(&q, NULL), SL_EINVAL);
    ck_assert_uint_eq(q_len(&q), 1); /* the failed pop took nothing */
    ck_assert_int_eq(q_pop(&q, &out), SL_OK);
    ck_assert_uint_eq(out, 7);
    q_destroy(&q);
}
END_TEST
