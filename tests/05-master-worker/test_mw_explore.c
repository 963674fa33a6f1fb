/**
 * @file test_mw_explore.c
 * @brief Chapter 05 under the schedule explorer: the pending counter,
 *        sub-tasks and poison pills, failing tasks, the result limit and the
 *        deadlock trap, and generated scenarios checked against a model of
 *        the component - on virtual time, with fixed seeds.
 */
#define _POSIX_C_SOURCE 200809L
#include "kit_test.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit_errno.h"
#include "kit_scenario.h"
#include "kit_sched.h"
#include "kit_time.h"
#include "mw.h"

#define HOUR_MS (3600L * 1000)

static mw_t *make_mw(size_t workers, size_t result_limit, mw_process_fn process)
{
    mw_t *mw = NULL;
    mw_config_t config = { .workers = workers, .queue_capacity = 4, .process = process,
                           .result_limit = result_limit, .name = "xm" };
    explore_ok(mw_create(&mw, &config));
    explore_ok(mw_start(mw));
    return mw;
}

static mw_stats_t stats_of(mw_t *mw)
{
    mw_stats_t stats;
    explore_ok(mw_stats(mw, &stats));
    return stats;
}

/* Tasks 1 and 2 submit a sub-task (11, 12); tasks 3 and 4 fail. */
static int process(mw_t *mw, const mw_task_t *task, void **result, void *ctx)
{
    (void)ctx;
    *result = NULL;
    if (task->id == 1 || task->id == 2)
        return mw_submit(mw, task->id + 10, NULL, HOUR_MS);
    return task->id == 3 || task->id == 4 ? EIO : 0;
}

/* Snapshots taken while the work goes on must balance, every one. */
static void *watch(void *raw)
{
    mw_t *mw = raw;
    for (int i = 0; i < 3; i++) {
        mw_stats_t s = stats_of(mw);
        kit_explore_check(s.submitted == s.completed + s.failed + s.rejected + s.pending,
                          "a snapshot does not balance: submitted %zu, completed %zu + failed %zu + rejected %zu "
                          "+ pending %zu", s.submitted, s.completed, s.failed, s.rejected, s.pending);
    }
    return NULL;
}

static void subtasks_failures_and_pills(void *ctx)
{
    (void)ctx;
    mw_t *mw = make_mw(2, 0, process);
    pthread_t watcher;
    explore_ok(pthread_create(&watcher, NULL, watch, mw));
    for (long id = 1; id <= 4; id++)
        explore_ok(mw_submit(mw, id, NULL, HOUR_MS));
    int err = mw_await(mw, HOUR_MS);
    explore_ok(pthread_join(watcher, NULL));
    mw_stats_t s = stats_of(mw);
    kit_explore_check(err == 0, "mw_await returned %s: the work (4 tasks, 2 sub-tasks, 2 failures) never finished",
                      kit_errno_name(err));
    kit_explore_check(s.submitted == 6 && s.completed == 4 && s.failed == 2 && s.pending == 0 && s.workers_alive == 0,
                      "after mw_await: submitted %zu (6), completed %zu (4), failed %zu (2), pending %zu (0), "
                      "workers alive %zu (0)", s.submitted, s.completed, s.failed, s.pending, s.workers_alive);
    mw_destroy(mw);
}

static void test_mw_explore_subtasks_failures_and_poison_pills(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "pct:1:3 random:1", .schedules = 600 };
    kit_explore(&options, subtasks_failures_and_pills, NULL);
}

/* ---- The result limit ---------------------------------------------------------------- */

static int plain(mw_t *mw, const mw_task_t *task, void **result, void *ctx)
{
    (void)mw;
    (void)task;
    (void)ctx;
    *result = NULL;
    return 0;
}

static void consume_under_a_limit(void *ctx)
{
    (void)ctx;
    mw_t *mw = make_mw(2, 1, plain);
    for (long id = 1; id <= 3; id++)
        explore_ok(mw_submit(mw, id, NULL, HOUR_MS));
    for (int i = 0; i < 3; i++) {
        mw_result_t result;
        explore_ok(mw_take_result(mw, &result, HOUR_MS));
    }
    explore_ok(mw_await(mw, HOUR_MS));
    mw_stats_t s = stats_of(mw);
    kit_explore_check(s.most_unconsumed <= 1, "%zu results were stored at once under a limit of 1", s.most_unconsumed);
    mw_destroy(mw);
}

static void test_mw_explore_result_limit_holds(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "pct:2:3 random:2", .schedules = 600, .spurious = 1 };
    kit_explore(&options, consume_under_a_limit, NULL);
}

/* The trap: a master that awaits before consuming, with the results full. */
static void await_before_consuming(void *ctx)
{
    (void)ctx;
    mw_t *mw = make_mw(2, 1, plain);
    for (long id = 1; id <= 2; id++)
        explore_ok(mw_submit(mw, id, NULL, HOUR_MS));
    int64_t start = kit_now_ns();
    int err = mw_await(mw, HOUR_MS);
    long waited_ms = (long)((kit_now_ns() - start) / 1000000);
    kit_explore_check(err == EDEADLK, "mw_await with the results full and nobody consuming returned %s, not EDEADLK",
                      kit_errno_name(err));
    kit_explore_check(waited_ms == 0, "mw_await saw the trap only after %ld ms (virtual): nobody woke it when the "
                      "workers got stuck", waited_ms);
    for (int i = 0; i < 2; i++) {
        mw_result_t result;
        explore_ok(mw_take_result(mw, &result, HOUR_MS));
    }
    explore_ok(mw_await(mw, HOUR_MS));
    mw_destroy(mw);
}

static void test_mw_explore_deadlock_trap_is_detected(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "pct:3:3 random:3", .schedules = 500 };
    kit_explore(&options, await_before_consuming, NULL);
}

/* ---- Every waiter wakes: two masters and a consumer --------------------------------------- */

struct consumer {
    mw_t *mw;
    int results;
    int end; /* what ended the loop */
};

static void *consume_to_the_end(void *raw)
{
    struct consumer *c = raw;
    mw_result_t result;
    while ((c->end = mw_take_result(c->mw, &result, HOUR_MS)) == 0)
        c->results++;
    return NULL;
}

static void *second_master(void *raw)
{
    return (void *)(long)mw_await(raw, HOUR_MS);
}

/* Two consumers (results limited to 1) take every result while the work goes
 * on; the work ends by two masters awaiting it, or (close_only) by mw_close. */
static void consumers_and_the_end(void *ctx)
{
    bool close_only = *(bool *)ctx;
    mw_t *mw = make_mw(2, 1, plain);
    struct consumer c[2] = { { mw, 0, -1 }, { mw, 0, -1 } };
    pthread_t consumers[2], master;
    explore_ok(mw_consumer_begin(mw));
    for (int i = 0; i < 2; i++)
        explore_ok(pthread_create(&consumers[i], NULL, consume_to_the_end, &c[i]));
    for (long id = 1; id <= 3; id++)
        explore_ok(mw_submit(mw, id, NULL, HOUR_MS));
    if (!close_only)
        explore_ok(pthread_create(&master, NULL, second_master, mw));
    int64_t start = kit_now_ns();
    int err = close_only ? mw_close(mw) : mw_await(mw, HOUR_MS);
    void *other = NULL;
    if (!close_only)
        explore_ok(pthread_join(master, &other));
    for (int i = 0; i < 2; i++)
        explore_ok(pthread_join(consumers[i], NULL));
    long waited_ms = (long)((kit_now_ns() - start) / 1000000);
    kit_explore_check(err == 0 && other == NULL, "%s: %s and %s", close_only ? "mw_close" : "two masters awaiting",
                      kit_errno_name(err), kit_errno_name((int)(long)other));
    kit_explore_check(c[0].results + c[1].results == 3 && c[0].end == ECANCELED && c[1].end == ECANCELED,
                      "the consumers took %d results, expected 3, and ended with %s and %s, expected ECANCELED "
                      "and ECANCELED (the results are over)", c[0].results + c[1].results, kit_errno_name(c[0].end), kit_errno_name(c[1].end));
    kit_explore_check(waited_ms == 0, "the work ended %ld ms (virtual) after it was done: a wake-up was lost and "
                      "a time-out ended the wait", waited_ms);
    explore_ok(mw_consumer_end(mw));
    explore_ok(mw_await(mw, HOUR_MS));
    mw_destroy(mw);
}

static void test_mw_explore_every_waiter_wakes(void **state)
{
    (void)state;
    bool close_only[] = { false, true };
    for (int i = 0; i < 2; i++) {
        kit_explore_t options = { .strategy = "pct:5:3 random:5", .schedules = 600, .spurious = 1 };
        kit_explore(&options, consumers_and_the_end, &close_only[i]);
    }
}

/* ---- Consumers counted under the lock ------------------------------------------------------
 * Two consumer threads each announce themselves and stop, at the same time:
 * each count moves by one, so both ends find their consumer (0), and a
 * third end finds none (EINVAL). A count changed outside the lock loses one
 * of the moves on some schedule - and the trap detector with it. */

static void *announce_and_stop(void *raw)
{
    mw_t *mw = raw;
    long errors = mw_consumer_begin(mw) != 0;
    errors += mw_consumer_end(mw) != 0;
    return (void *)errors;
}

static void consumers_announced_at_once(void *ctx)
{
    (void)ctx;
    mw_t *mw = make_mw(1, 0, plain);
    pthread_t consumers[2];
    for (int i = 0; i < 2; i++)
        explore_ok(pthread_create(&consumers[i], NULL, announce_and_stop, mw));
    long errors = 0;
    for (int i = 0; i < 2; i++) {
        void *failed = NULL;
        explore_ok(pthread_join(consumers[i], &failed));
        errors += (long)failed;
    }
    kit_explore_check(errors == 0, "two threads each called mw_consumer_begin then mw_consumer_end, at once, and "
                      "%ld of the ends returned EINVAL (no consumer announced): a begin was lost - the count of "
                      "consumers must change under the component's lock", errors);
    int after = mw_consumer_end(mw);
    kit_explore_check(after == EINVAL, "after two consumers announced themselves and stopped, one more "
                      "mw_consumer_end returned %s, not EINVAL: an end was lost - the count of consumers must "
                      "change under the component's lock", kit_errno_name(after));
    explore_ok(mw_await(mw, HOUR_MS));
    mw_destroy(mw);
}

static void test_mw_explore_consumers_counted_under_the_lock(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "random:1 pct:2:3", .schedules = 100 };
    kit_explore(&options, consumers_announced_at_once, NULL);
}

/* The scenarios' spec: the model, the tasks, the calls and their printing (mw_scenarios.c). */
extern const kit_spec_t mw_spec;

/* Scenarios nobody wrote: a few calls, then two or three threads - masters
 * submitting, taking, awaiting, stopping, closing, while tasks fail and
 * submit sub-tasks. Some order of the calls must explain each history,
 * given that the workers may be anywhere between two calls; a
 * consumer still asleep at the end must be one with nothing to take; and
 * once quiet, every accepted task ran once (or a stop cancelled it) and
 * left exactly one record. Each scenario runs on two random walks: on so
 * small a budget, a partial-order search (dpor:2) spends it on the
 * workers' last steps and missed every catalogued race, and random
 * priorities (pct) miss a timed take whose deadline comes with the result
 * or the close - a walk lets a sleeper time out at any step, as often as
 * any thread moves. */
static void test_mw_explore_generated_scenarios(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "random:1 random:3", .schedules = 24, .spurious = 1,
                              .timeouts_race = true };
    kit_scenarios(&mw_spec, 250, &options);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_mw_explore_subtasks_failures_and_poison_pills),
    cmocka_unit_test(test_mw_explore_result_limit_holds),
    cmocka_unit_test(test_mw_explore_deadlock_trap_is_detected),
    cmocka_unit_test(test_mw_explore_every_waiter_wakes),
    cmocka_unit_test(test_mw_explore_consumers_counted_under_the_lock),
    cmocka_unit_test(test_mw_explore_generated_scenarios),
};

KIT_TEST_MAIN(tests)
