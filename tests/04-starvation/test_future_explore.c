/**
 * @file test_future_explore.c
 * @brief Chapter 04 under the schedule explorer: every waiter of a future
 *        sees its result, cancel racing the task's start, dropped tasks'
 *        futures, a wait behind a busy colleague, and generated scenarios
 *        checked against a model of futures on a pool - with fixed seeds.
 */
#define _POSIX_C_SOURCE 200809L
#include "kit_test.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "future.h"
#include "kit_errno.h"
#include "kit_scenario.h"
#include "kit_sched.h"
#include "tpool.h"

static char answer[] = "42";

static tpool_t *make_pool(size_t core)
{
    tpool_t *p = NULL;
    tpool_config_t config = { .core_threads = core, .queue_capacity = 8, .keep_alive_ms = 3600L * 1000,
                              .reject = bq_policy_block(), .name = "xf" };
    explore_ok(tpool_create(&p, &config));
    return p;
}

static future_t *submit(tpool_t *p, void *(*fn)(void *), void *arg)
{
    future_t *f = NULL;
    explore_ok(tpool_submit(p, fn, arg, &f));
    return f;
}

static void *give_answer(void *raw)
{
    (void)raw;
    return answer;
}

/* ---- Every waiter sees the result ------------------------------------------------------ */

struct waiter {
    future_t *f;
    int err;
    void *result;
    bool spurious; /* its get returned after a spurious wake-up */
};

static void *wait_for_answer(void *raw)
{
    struct waiter *w = raw;
    w->err = future_get(w->f, &w->result);
    w->spurious = kit_sched_woken_spuriously();
    return NULL;
}

static void three_waiters(void *ctx)
{
    (void)ctx;
    tpool_t *p = make_pool(1);
    struct waiter waiters[3];
    pthread_t threads[2];
    future_t *f = submit(p, give_answer, NULL);
    for (int i = 0; i < 3; i++)
        waiters[i] = (struct waiter){ .f = f, .err = -1 };
    for (int i = 0; i < 2; i++)
        explore_ok(pthread_create(&threads[i], NULL, wait_for_answer, &waiters[i]));
    wait_for_answer(&waiters[2]);
    for (int i = 0; i < 2; i++)
        explore_ok(pthread_join(threads[i], NULL));
    for (int i = 0; i < 3; i++) {
        kit_explore_check(waiters[i].err == 0, "waiter %d: future_get returned %s", i, kit_errno_name(waiters[i].err));
        kit_explore_check(waiters[i].result == answer, "waiter %d: future_get returned 0 but its result is %s, not "
                          "the task's: %s", i, waiters[i].result == NULL ? "NULL" : "another pointer",
                          waiters[i].spurious ? "it returned after a spurious wake-up - a wait must loop until its "
                                                "condition holds (a while, not an if)"
                                              : "the result was published after the wake-up");
    }
    future_release(f);
    tpool_destroy(p);
}

static void test_future_explore_every_waiter_sees_the_result(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "pct:1:3 random:1", .schedules = 600, .spurious = 1 };
    kit_explore(&options, three_waiters, NULL);
}

/* ---- References dropped at once ---------------------------------------------------------- */

/* The caller takes a second reference while the worker may be dropping the
 * task's own, then drops both of its references while the worker may be
 * dropping its own: the count must move by one at every call, under the
 * future's lock, and exactly the last release frees. A count changed or
 * read outside the lock frees too early or twice - a use after free, which
 * the scheduler reports at the line that used the freed future. */
static void releases_racing_the_worker(void *ctx)
{
    (void)ctx;
    tpool_t *p = make_pool(1);
    future_t *f = submit(p, give_answer, NULL);
    future_t *again = future_retain(f);
    kit_explore_check(again == f, "future_retain returned another pointer than the future it was given");
    void *result = NULL;
    explore_ok(future_get(f, &result));
    kit_explore_check(result == answer, "future_get returned 0 but not the task's result");
    future_release(f);
    future_release(again);
    tpool_destroy(p);
}

static void test_future_explore_releases_race_the_workers(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "random:1 pct:2:3", .schedules = 150 };
    kit_explore(&options, releases_racing_the_worker, NULL);
}

/* ---- Cancel racing the start -------------------------------------------------------------- */

static void *count_and_answer(void *raw)
{
    kit_tally_add(raw);
    return answer;
}

static void cancel_against_start(void *ctx)
{
    (void)ctx;
    kit_tally_t ran;
    kit_tally_init(&ran);
    tpool_t *p = make_pool(1);
    future_t *f = submit(p, count_and_answer, &ran);
    int cancelled = future_cancel(f);
    void *result = NULL;
    int got = future_get(f, &result);
    explore_ok(tpool_shutdown(p));
    explore_ok(tpool_await_termination(p, LONG_MAX));
    int runs = kit_tally_count(&ran);
    kit_explore_check(cancelled == 0 || cancelled == EBUSY, "future_cancel returned %s", kit_errno_name(cancelled));
    if (cancelled == 0)
        kit_explore_check(runs == 0 && got == ECANCELED, "future_cancel returned 0, yet the task ran %d time(s) and "
                          "future_get returned %s", runs, kit_errno_name(got));
    else
        kit_explore_check(runs == 1 && got == 0 && result == answer, "future_cancel said EBUSY (started), yet the "
                          "task ran %d time(s) and future_get returned %s", runs, kit_errno_name(got));
    future_release(f);
    tpool_destroy(p);
    kit_tally_destroy(&ran);
}

static void test_future_explore_cancel_races_start(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dfs:2 pct:2:3", .schedules = 750 };
    kit_explore(&options, cancel_against_start, NULL);
}

/* ---- A dropped task's future is cancelled -------------------------------------------------- */

static void *wait_for_gate(void *raw)
{
    kit_tally_await(raw, 1);
    return answer;
}

static void dropped_by_shutdown_now(void *ctx)
{
    (void)ctx;
    kit_tally_t gate;
    kit_tally_init(&gate);
    tpool_t *p = make_pool(1);
    future_t *running = submit(p, wait_for_gate, &gate);
    future_t *queued = submit(p, give_answer, NULL); /* the only worker is busy: it waits in the queue */
    explore_ok(tpool_shutdown_now(p));
    kit_tally_add(&gate);
    explore_err(future_get(queued, NULL), ECANCELED);
    explore_ok(future_get(running, NULL));
    future_release(queued);
    future_release(running);
    tpool_destroy(p);
    kit_tally_destroy(&gate);
}

static void test_future_explore_dropped_task_cancels_its_future(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dfs:1 random:3", .schedules = 500 };
    kit_explore(&options, dropped_by_shutdown_now, NULL);
}

/* ---- Waiting behind a busy colleague is not starvation ------------------------------------- */

struct order {
    tpool_t *kitchen;
    int err;
    void *served;
};

/* On a worker: submit the cook task to the same pool and wait for it. */
static void *take_order(void *raw)
{
    struct order *o = raw;
    future_t *cook = NULL;
    o->err = tpool_submit(o->kitchen, give_answer, NULL, &cook);
    if (o->err == 0)
        o->err = future_get(cook, &o->served);
    future_release(cook);
    return NULL;
}

static void two_rounds_behind_a_busy_worker(void *ctx)
{
    (void)ctx;
    tpool_t *p = make_pool(2);
    for (int round = 0; round < 2; round++) {
        kit_tally_t gate;
        kit_tally_init(&gate);
        struct order order = { .kitchen = p, .err = -1 };
        future_t *busy = submit(p, wait_for_gate, &gate);
        future_t *waiter = submit(p, take_order, &order);
        kit_tally_add(&gate); /* the busy worker finishes: it can run the cook task */
        explore_ok(future_get(waiter, NULL));
        explore_ok(future_get(busy, NULL));
        kit_explore_check(order.err == 0, "round %d: a worker waiting for a task queued behind a busy (not stuck) "
                          "colleague got %s", round + 1, kit_errno_name(order.err));
        kit_explore_check(order.served == answer, "round %d: a worker waiting for a task queued behind a busy "
                          "colleague got 0 but the result %s, not the cook task's", round + 1,
                          order.served == NULL ? "NULL" : "another pointer");
        future_release(waiter);
        future_release(busy);
        kit_tally_destroy(&gate);
    }
    tpool_destroy(p);
}

static void test_future_explore_wait_behind_a_busy_worker(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "pct:4:3 random:4", .schedules = 500 };
    kit_explore(&options, two_rounds_behind_a_busy_worker, NULL);
}

/* ---- A timed wait on the own pool, its time-out racing the finish -------------------------- */

/* On a worker: submit the cook task to the same pool and wait for it, 50 ms at most. */
static void *take_order_within(void *raw)
{
    struct order *o = raw;
    future_t *cook = NULL;
    o->err = tpool_submit(o->kitchen, give_answer, NULL, &cook);
    if (o->err == 0)
        o->err = future_get_timed(cook, &o->served, 50);
    future_release(cook);
    return NULL;
}

/* Both workers of a pool of two take an order (they meet at @p arrived),
 * then each waits for a dish only this pool could cook: one wait must get
 * EDEADLK, the other its dish - the pool's count of blocked workers true. */
struct starving_order {
    struct order order;
    kit_tally_t *arrived;
};

static void *take_order_once_both_arrived(void *raw)
{
    struct starving_order *s = raw;
    kit_tally_add(s->arrived);
    kit_tally_await(s->arrived, 2);
    return take_order(&s->order);
}

static void starves_once(tpool_t *p)
{
    kit_tally_t arrived;
    kit_tally_init(&arrived);
    struct starving_order orders[2];
    future_t *taken[2];
    for (int i = 0; i < 2; i++) {
        orders[i] = (struct starving_order){ { .kitchen = p, .err = -1 }, &arrived };
        taken[i] = submit(p, take_order_once_both_arrived, &orders[i]);
    }
    for (int i = 0; i < 2; i++)
        explore_ok(future_get(taken[i], NULL));
    int starved = (orders[0].order.err == EDEADLK) + (orders[1].order.err == EDEADLK);
    int served = (orders[0].order.err == 0) + (orders[1].order.err == 0);
    kit_explore_check(starved == 1 && served == 1, "after a worker's timed get on a task of its own pool ended: two "
                      "orders on the pool of two, each waiting for a dish only the pool could cook, got %s and %s - "
                      "expected one EDEADLK and one served (a wait is un-counted once when it ends, by the finisher or "
                      "by the waiter, not both: future.h)", kit_errno_name(orders[0].order.err),
                      kit_errno_name(orders[1].order.err));
    for (int i = 0; i < 2; i++)
        future_release(taken[i]);
    kit_tally_destroy(&arrived);
}

/* A worker waits at most 50 ms for a task queued behind a busy colleague,
 * which the colleague runs once let go: the wait ends with the result, or
 * times out - also just as the task finished (POSIX lets a timed wait that
 * was signalled return ETIMEDOUT; the header's get then still gives the
 * result). Either way it was counted as a blocked worker once and must be
 * un-counted once: a starvation on the pool afterwards is still seen. */
static void timed_wait_racing_the_finish(void *ctx)
{
    (void)ctx;
    tpool_t *p = make_pool(2);
    kit_tally_t gate;
    kit_tally_init(&gate);
    struct order order = { .kitchen = p, .err = -1 };
    future_t *busy = submit(p, wait_for_gate, &gate);
    future_t *waiter = submit(p, take_order_within, &order);
    kit_tally_add(&gate);
    explore_ok(future_get(waiter, NULL));
    explore_ok(future_get(busy, NULL));
    kit_explore_check(order.err == 0 || order.err == ETIMEDOUT, "a worker's 50 ms get on a task queued behind a busy "
                      "colleague returned %s: 0 or ETIMEDOUT", kit_errno_name(order.err));
    future_release(waiter);
    future_release(busy);
    kit_tally_destroy(&gate);
    starves_once(p);
    tpool_destroy(p);
}

static void test_future_explore_timed_own_pool_wait_is_uncounted_once(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "pct:2:3 random:2", .schedules = 200, .timeouts_race = true };
    kit_explore(&options, timed_wait_racing_the_finish, NULL);
}

/* The scenarios' spec: the model, the tasks, the calls and their printing (future_scenarios.c). */
extern const kit_spec_t future_spec;

/* Scenarios nobody wrote: gets, timed gets, cancels and reads of three
 * futures on two or three threads, while the test lets their tasks return,
 * fail or wait for one another. Each history must be one that some order of
 * the calls, with the workers' own steps in between, explains; and a get
 * still asleep at the end one whose future the pool leaves unfinished.
 * Each scenario runs on random priorities and random walks rather than a
 * partial-order search: the pool's threads make schedules long, and such a
 * search spends a small budget on their last choices (the teardown), while
 * the races that matter here - a cancel against the task's start, a waiter
 * against the finisher - come early. */
static void test_future_explore_generated_scenarios(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "pct:1:3 random:1", .schedules = 20, .spurious = 1, .timeouts_race = true };
    kit_scenarios(&future_spec, 250, &options);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_future_explore_every_waiter_sees_the_result),
    cmocka_unit_test(test_future_explore_releases_race_the_workers),
    cmocka_unit_test(test_future_explore_cancel_races_start),
    cmocka_unit_test(test_future_explore_dropped_task_cancels_its_future),
    cmocka_unit_test(test_future_explore_wait_behind_a_busy_worker),
    cmocka_unit_test(test_future_explore_timed_own_pool_wait_is_uncounted_once),
    cmocka_unit_test(test_future_explore_generated_scenarios),
};

KIT_TEST_MAIN(tests)
