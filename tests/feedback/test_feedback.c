/**
 * @file test_feedback.c
 * @brief Tests that fail on purpose, one per kind of failure, so that
 *        `make feedback` can check what the grader says about each: the
 *        student's line for a crash, every thread's wait for a hang, both
 *        accesses of a race, the words for a misused pthread call.
 */
#define _POSIX_C_SOURCE 200809L
#include "kit_test.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "buggy.h"
#include "kit_scenario.h"

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

/* ---- A crash in a generated scenario names the scenario -------------------------- */

struct counter_model {
    long value;
};

static int run_add(void *object, long arg, long timeout_ms, long *out)
{
    (void)arg, (void)timeout_ms, (void)out;
    counter_add(object, 1);
    return 0;
}

static int run_share(void *object, long arg, long timeout_ms, long *out)
{
    (void)arg, (void)timeout_ms;
    *out = counter_share(object, 12);
    return 0;
}

static bool add_takes_effect(void *raw, const kit_call_t *call)
{
    (void)call;
    ((struct counter_model *)raw)->value++;
    return true;
}

static bool share_takes_effect(void *raw, const kit_call_t *call)
{
    const struct counter_model *model = raw;
    return model->value > 0 && call->out == 12 / model->value;
}

static bool never_waits(const void *state, const kit_call_t *call)
{
    (void)state, (void)call;
    return false;
}

static void *create_counter(long param, void *state)
{
    (void)param;
    memset(state, 0, sizeof(struct counter_model));
    return counter_create();
}

static void destroy_counter(void *object)
{
    counter_destroy(object);
}

static void print_create(long param, char *text, size_t size)
{
    (void)param;
    snprintf(text, size, "counter_t *c = counter_create()");
}

static void print_call(const kit_call_t *call, const char *name, char *text, size_t size)
{
    snprintf(text, size, strcmp(name, "counter_add") == 0 ? "%s(c, 1)" : "%s(c, 12)", name);
    (void)call;
}

static const kit_op_t counter_ops[] = {
    { .name = "counter_add", .weight = 1, .run = run_add, .take_effect = add_takes_effect, .waits = never_waits },
    { .name = "counter_share", .weight = 1, .run = run_share, .take_effect = share_takes_effect,
      .waits = never_waits },
};

static const kit_spec_t counter_spec = {
    .object = "c",
    .state_size = sizeof(struct counter_model),
    .create = create_counter,
    .destroy = destroy_counter,
    .print_create = print_create,
    .print_call = print_call,
    .ops = counter_ops,
    .nops = 2,
};

static void test_feedback_scenario_crash_names_the_scenario(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dfs:1", .schedules = 20 };
    kit_scenarios(&counter_spec, 10, &options);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_feedback_crash_shows_the_faulting_line),
    cmocka_unit_test(test_feedback_hang_check_shows_every_thread),
    cmocka_unit_test(test_feedback_deadlock_shows_where_it_waits),
    cmocka_unit_test(test_feedback_misused_timed_wait_is_named),
    cmocka_unit_test(test_feedback_pipe_handover_runs_on_real_threads),
    cmocka_unit_test(test_feedback_race_shows_both_accesses),
    cmocka_unit_test(test_feedback_scenario_crash_names_the_scenario),
};

KIT_TEST_MAIN(tests)
