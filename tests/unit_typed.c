/*
 * tests/unit_typed.c — the typed-wrapper macros are hygienic: used after a
 * program's own file-scope names, they neither shadow them (this file is
 * built with -Wshadow -Werror) nor are hidden by them. An element type named
 * like a wrapper's parameter once made sizeof(T) the size of that parameter,
 * a pointer: a 1-byte `out` channel carried 8-byte messages, and every
 * receive wrote 7 bytes past the caller's object.
 */
#include "harness.h"

#include <string.h>

#include <sluice/broadcast.h>
#include <sluice/shm.h>

/* Names a program may well have at file scope, before it declares its
 * channels: each was a parameter of some generated function. */
extern int c, e, g, n, t, pp, ev, fd, end, mode, expect, shm_name, rx, bc;
/* Element types named like the parameters and locals of name_new and
 * name_shm_opts_ (each differs in size from a pointer). */
typedef char out;
typedef struct { char b[40]; } opts;
typedef struct { char b[24]; } o;

SL_CHAN_TYPED(out_chan, out);
SL_CHAN_TYPED(opts_chan, opts);
SL_CHAN_SHM_TYPED(opts_chan, opts);
SL_CHAN_TYPED(o_chan, o);
SL_CHAN_SHM_TYPED(o_chan, o);
SL_BROADCAST_TYPED(o_bc, o);
/* An array element type, through a typedef (the macros write `T const *`,
 * which an array declarator cannot follow). Before C23 a pedantic build asks
 * for the cast at each send (a pointer to an array of const elements is
 * another type), as chan.h says. */
typedef int quad[4];
SL_CHAN_TYPED(quad_chan, quad);

#define ELEM_SIZE(ch) sl_chan_elem_size((const sl_chan *)(const void *)(ch))

START_TEST(test_element_type_named_like_a_parameter)
{
    sl_chan_opts so = {.flavor = SL_MPMC, .capacity = 2};
    out_chan *oc = NULL;
    ck_assert_int_eq(out_chan_new(&oc, &so), SL_OK);
    ck_assert_uint_eq(ELEM_SIZE(oc), sizeof(out));
    out in = 'x', got[2] = {0, 'y'};
    ck_assert_int_eq(out_chan_send(oc, &in), SL_OK);
    ck_assert_int_eq(out_chan_recv(oc, &got[0]), SL_OK);
    ck_assert(got[0] == 'x' && got[1] == 'y'); /* nothing written past got[0] */
    out_chan_free(oc);

    opts_chan *pc = NULL;
    ck_assert_int_eq(opts_chan_new(&pc, &so), SL_OK);
    ck_assert_uint_eq(ELEM_SIZE(pc), sizeof(opts));
    opts_chan_free(pc);
    o_chan *qc = NULL;
    ck_assert_int_eq(o_chan_new(&qc, &so), SL_OK);
    ck_assert_uint_eq(ELEM_SIZE(qc), sizeof(o));
    o_chan_free(qc);

    /* The shared-memory forms set elem_size through name_shm_opts_. */
    ck_assert_int_eq(opts_chan_shm_create(&pc, NULL, &so, 0), SL_OK);
    ck_assert_uint_eq(ELEM_SIZE(pc), sizeof(opts));
    sl_chan_opts expect_any = {.flavor = SL_MPMC};
    opts_chan *pc2 = NULL;
    ck_assert_int_eq(opts_chan_shm_open_fd(&pc2, opts_chan_shm_fd(pc), &expect_any), SL_OK);
    opts m, mg;
    memset(&m, 'm', sizeof m);
    ck_assert_int_eq(opts_chan_send(pc2, &m), SL_OK);
    ck_assert_int_eq(opts_chan_recv(pc, &mg), SL_OK);
    ck_assert(memcmp(&m, &mg, sizeof m) == 0);
    opts_chan_free(pc2);
    opts_chan_free(pc);
    ck_assert_int_eq(o_chan_shm_create(&qc, NULL, &so, 0), SL_OK);
    ck_assert_uint_eq(ELEM_SIZE(qc), sizeof(o));
    o_chan_free(qc);

    o_bc *b = NULL, *sub = NULL;
    sl_chan_opts bo = {.flavor = SL_BROADCAST, .capacity = 1};
    ck_assert_int_eq(o_bc_new(&b, &bo), SL_OK);
    ck_assert_uint_eq(ELEM_SIZE(b), sizeof(o));
    ck_assert_int_eq(o_bc_subscribe(b, &sub), SL_OK);
    ck_assert_uint_eq(o_bc_missed(sub), 0);
    o_bc_free(sub);
    o_bc_free(b);
}
END_TEST

/* The whole array travels: sizeof(T) is the array's, and a receive writes
 * exactly one element. */
START_TEST(test_array_element_through_typedef)
{
    sl_chan_opts so = {.flavor = SL_SPSC, .capacity = 2};
    quad_chan *qc = NULL;
    ck_assert_int_eq(quad_chan_new(&qc, &so), SL_OK);
    ck_assert_uint_eq(ELEM_SIZE(qc), sizeof(quad));
    quad in = {1, 2, 3, 4}, got[2] = {{0}, {9, 9, 9, 9}};
    ck_assert_int_eq(quad_chan_send(qc, (quad const *)&in), SL_OK);
    ck_assert_int_eq(quad_chan_recv(qc, &got[0]), SL_OK);
    ck_assert(memcmp(got[0], in, sizeof in) == 0);
    ck_assert(got[1][0] == 9 && got[1][3] == 9);
    quad_chan_free(qc);
}
END_TEST

static Suite *typed_suite(void)
{
    Suite *s = suite_create("typed");
    TCase *tc = tcase_create("hygiene");
    tcase_add_test(tc, test_element_type_named_like_a_parameter);
    tcase_add_test(tc, test_array_element_through_typedef);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sl_test_run(typed_suite());
}
