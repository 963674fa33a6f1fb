/**
 * @file test_feedback.c
 * @brief Tests that fail on purpose, one per kind of failure, so that
 *        `make feedback` can check what the grader says about each: the
 *        student's line for a crash, every thread's wait for a hang, both
 *        accesses of a race, the words for a misused pthread call.
 */
#include "kit_test.h"

#include <errno.h>

#include "buggy.h"

static counter_t *make_counter(void)
{
    counter_t *c = counter_create();
    assert_non_null(c);
    return c;
}

static void test_feedback_crash_shows_the_faulting_line(void **state)
{
    (void)state;
    assert_int_equal(counter_read(NULL), 0);
}

static void *wait_ready(void *raw)
{
    counter_wait_ready(raw);
    return NULL;
}

static void test_feedback_hang_check_shows_every_thread(void **state)
{
    (void)state;
    counter_t *c = make_counter();
    kit_worker_t worker;
    kit_worker_start(&worker, "waiter", wait_ready, c);
    kit_worker_must_finish(&worker, "counter_wait_ready");
    counter_destroy(c);
}

static void test_feedback_deadlock_shows_where_it_waits(void **state)
{
    (void)state;
    counter_t *c = make_counter();
    counter_increment_forgetting_unlock(c);
    counter_increment_forgetting_unlock(c); /* waits for itself */
    counter_destroy(c);
}

static void test_feedback_misused_timed_wait_is_named(void **state)
{
    (void)state;
    counter_t *c = make_counter();
    assert_err(counter_wait_ms(c, 1500), ETIMEDOUT);
    counter_destroy(c);
}

static void test_feedback_pipe_handover_runs_on_real_threads(void **state)
{
    (void)state;
    counter_t *c = make_counter();
    assert_int_equal(counter_add_on_a_helper(c), 1);
    counter_destroy(c);
}

static void *add_many(void *raw)
{
    for (int i = 0; i < 1000; i++)
        counter_add_unlocked(*(counter_t **)raw, 1);
    return NULL;
}

static void test_feedback_race_shows_both_accesses(void **state)
{
    (void)state;
    counter_t *c = make_counter();
    counter_t *args[2] = { c, c };
    kit_test_run_group(2, "adder", add_many, args, sizeof args[0]);
    counter_destroy(c);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_feedback_crash_shows_the_faulting_line),
    cmocka_unit_test(test_feedback_hang_check_shows_every_thread),
    cmocka_unit_test(test_feedback_deadlock_shows_where_it_waits),
    cmocka_unit_test(test_feedback_misused_timed_wait_is_named),
    cmocka_unit_test(test_feedback_pipe_handover_runs_on_real_threads),
    cmocka_unit_test(test_feedback_race_shows_both_accesses),
};

KIT_TEST_MAIN(tests)
