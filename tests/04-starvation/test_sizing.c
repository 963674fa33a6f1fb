/**
 * @file test_sizing.c
 * @brief Chapter 04 tests: the source document's thread-count formulas.
 */
#define _POSIX_C_SOURCE 200809L
#include "kit_test.h"

#include <math.h>
#include <stdint.h>

#include "sizing.h"

/* "4 cores, 50% compute, 50% waiting, 100% target: 4 x 100% x 100% / 50% = 8";
 * "10% compute, 90% waiting: 4 x 100% x 100% / 10% = 40". Any unit will do. */
static void test_kit_threads_for_document_examples(void **state)
{
    (void)state;
    assert_int_equal(kit_threads_for(4, 1.0, 50, 50), 8);
    assert_int_equal(kit_threads_for(4, 1.0, 90, 10), 40);
    assert_int_equal(kit_threads_for(4, 1.0, 0.5, 0.5), 8);
    assert_int_equal(kit_threads_for(4, 1.0, 0.9, 0.1), 40);
    assert_int_equal(kit_threads_for(4, 0.5, 90, 10), 20);   /* half the cores: half the threads */
}

static void test_kit_threads_for_cpu_bound_is_cores_plus_one(void **state)
{
    (void)state;
    assert_int_equal(kit_threads_for(4, 1.0, 0, 10), 5);
    assert_int_equal(kit_threads_for(1, 1.0, 0, 1), 2);
    assert_int_equal(kit_threads_for(16, 1.0, 0, 0.001), 17);
}

/* One rounding case, failed in words. */
static void expect_threads(size_t cores, double utilization, double wait, double compute, size_t want,
                           const char *why)
{
    size_t got = kit_threads_for(cores, utilization, wait, compute);
    if (got != want)
        fail_msg("kit_threads_for(%zu, %g, %g, %g) gave %zu, expected %zu: %s", cores, utilization, wait, compute,
                 got, want, why);
}

static void test_kit_threads_for_rounds_up(void **state)
{
    (void)state;
    assert_int_equal(kit_threads_for(4, 0.5, 10, 30), 3);  /* 2.67 threads: 2 would fall short */
    assert_int_equal(kit_threads_for(2, 1.0, 1, 2), 3);    /* 3 exactly */
    assert_int_equal(kit_threads_for(1, 0.1, 1, 1), 1);    /* 0.2: never fewer than one thread */
    assert_int_equal(kit_threads_for(3, 1.0, 1, 3), 4);    /* 4 exactly, whatever the rounding */
    expect_threads(3, 0.4, 0.9, 0.1, 12, "the product computes to 12.000000000000002 in doubles - "
                                         "floating-point noise, not a fraction to round up (sizing.h)");
    expect_threads(4, 0.2, 1.4, 0.1, 12, "12.000000000000002 again: noise, not a fraction (sizing.h)");
    expect_threads(1, 1.0, 11.01, 1, 13, "12.01 is a real fraction: round it up");
    assert_true(kit_threads_for(4, 1.0, 1e300, 1e-300) == SIZE_MAX); /* too many to count: saturates */
    assert_true(kit_threads_for(SIZE_MAX, 1.0, 0, 1) == SIZE_MAX);   /* cores + 1 does not wrap to 0 */
}

static void test_kit_threads_for_rejects_bad_arguments(void **state)
{
    (void)state;
    /* The edges of the valid range are accepted... */
    assert_int_equal(kit_threads_for(1, 1.0, 50, 50), 2);      /* one core */
    assert_int_equal(kit_threads_for(4, 0.01, 50, 50), 1);     /* a tiny target: still one thread */
    /* ...and everything beyond them is refused. */
    assert_int_equal(kit_threads_for(0, 1.0, 50, 50), 0);      /* no cores */
    assert_int_equal(kit_threads_for(4, 0.0, 50, 50), 0);      /* utilization must be in (0, 1] */
    assert_int_equal(kit_threads_for(4, -0.5, 50, 50), 0);
    assert_int_equal(kit_threads_for(4, 1.5, 50, 50), 0);
    assert_int_equal(kit_threads_for(4, NAN, 50, 50), 0);
    assert_int_equal(kit_threads_for(4, INFINITY, 50, 50), 0);
    assert_int_equal(kit_threads_for(4, 1.0, -1, 50), 0);      /* negative times */
    assert_int_equal(kit_threads_for(4, 1.0, 50, -1), 0);
    assert_int_equal(kit_threads_for(4, 1.0, 50, 0), 0);       /* no compute time: no ratio */
    assert_int_equal(kit_threads_for(4, 1.0, 0, 0), 0);
    assert_int_equal(kit_threads_for(4, 1.0, NAN, 50), 0);
    assert_int_equal(kit_threads_for(4, 1.0, 50, NAN), 0);
    assert_int_equal(kit_threads_for(4, 1.0, INFINITY, 50), 0);
    assert_int_equal(kit_threads_for(4, 1.0, 50, INFINITY), 0);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_kit_threads_for_document_examples),
    cmocka_unit_test(test_kit_threads_for_cpu_bound_is_cores_plus_one),
    cmocka_unit_test(test_kit_threads_for_rounds_up),
    cmocka_unit_test(test_kit_threads_for_rejects_bad_arguments),
};

KIT_TEST_MAIN(tests)
