/*
 * tests/unit_status.c — sl_status_str: a distinct, non-NULL name for every
 * status, and a non-NULL string for values outside the enum.
 */
#include "harness.h"

#include <limits.h>
#include <string.h>

#include <sluice/status.h>

static const sl_status all_statuses[] = {
    SL_OK, SL_EMPTY, SL_FULL, SL_CLOSED, SL_TIMEDOUT,
    SL_EVICTED, SL_BUSY, SL_EXISTS, SL_EINVAL, SL_ENOMEM, SL_LAGGED,
};
#define N_STATUSES (sizeof all_statuses / sizeof all_statuses[0])

START_TEST(test_every_status_named)
{
    for (size_t i = 0; i < N_STATUSES; i++) {
        const char *s = sl_status_str(all_statuses[i]);
        ck_assert_msg(s != NULL, "sl_status_str(%d) is NULL", (int)all_statuses[i]);
        ck_assert_msg(s[0] != '\0', "sl_status_str(%d) is empty", (int)all_statuses[i]);
    }
}
END_TEST

START_TEST(test_names_distinct)
{
    for (size_t i = 0; i < N_STATUSES; i++) {
        const char *a = sl_status_str(all_statuses[i]);
        ck_assert_ptr_nonnull(a);
        for (size_t j = i + 1; j < N_STATUSES; j++) {
            const char *b = sl_status_str(all_statuses[j]);
            ck_assert_ptr_nonnull(b);
            ck_assert_msg(strcmp(a, b) != 0, "statuses %d and %d share the name \"%s\"",
                          (int)all_statuses[i], (int)all_statuses[j], a);
        }
    }
}
END_TEST

START_TEST(test_known_names_differ_from_unknown)
{
    const char *unknown = sl_status_str((sl_status)999);
    ck_assert_ptr_nonnull(unknown);
    for (size_t i = 0; i < N_STATUSES; i++) {
        const char *s = sl_status_str(all_statuses[i]);
        ck_assert_ptr_nonnull(s);
        ck_assert_msg(strcmp(s, unknown) != 0,
                      "known status %d is named like an unknown one (\"%s\")",
                      (int)all_statuses[i], s);
    }
}
END_TEST

START_TEST(test_names_stable)
{
    /* A static string: the same call gives the same text every time. */
    for (size_t i = 0; i < N_STATUSES; i++) {
        const char *a = sl_status_str(all_statuses[i]);
        const char *b = sl_status_str(all_statuses[i]);
        ck_assert_ptr_nonnull(a);
        ck_assert_ptr_nonnull(b);
        ck_assert_str_eq(a, b);
    }
}
END_TEST

START_TEST(test_unknown_values)
{
    const int odd[] = { 999, -1, (int)N_STATUSES, (int)N_STATUSES + 1, 1000000, INT_MAX, INT_MIN };
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
        const char *s = sl_status_str((sl_status)odd[i]);
        ck_assert_msg(s != NULL, "sl_status_str(%d) is NULL", odd[i]);
        ck_assert_msg(strlen(s) > 0, "sl_status_str(%d) is empty", odd[i]);
    }
}
END_TEST

static Suite *status_suite(void)
{
    Suite *s = suite_create("status");
    TCase *tc = tcase_create("str");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_every_status_named);
    tcase_add_test(tc, test_names_distinct);
    tcase_add_test(tc, test_known_names_differ_from_unknown);
    tcase_add_test(tc, test_names_stable);
    tcase_add_test(tc, test_unknown_values);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return sl_test_run(status_suite());
}
