/**
 * @file test_bq_explore.c
 * @brief Chapter 02 under the schedule explorer: two condition variables,
 *        each side woken by the other, close and destroy against sleepers,
 *        and deadlines that stolen wake-ups must not stretch - on virtual
 *        time, with fixed seeds.
 *
 * Judged (by default), these bodies run in the subject and each schedule is
 * written down for the judge to replay, as chapters 00, 01 and 08's are; a
 * call of the test's functions back (a policy's reject, on_discard, run) is
 * written down too, and the judge runs its own.
 */
#define _POSIX_C_SOURCE 200809L
#include "kit_test.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "bq.h"
#include "kit_errno.h"
#include "kit_scenario.h"
#include "kit_sched.h"
#include "kit_time.h"

#define EACH 2 /* items per producer, and per consumer */

struct side {
    bq_t *q;
    int index;
    int results[EACH];
    intptr_t got[EACH];
};

/* Items are ids + 1: never NULL, so a NULL out of a successful take is a bug. */
static void *item_of(int producer, int n)
{
    return (void *)(intptr_t)(producer * 100 + n + 1);
}

static void *produce(void *raw)
{
    struct side *s = raw;
    bq_policy_t block = bq_policy_block();
    for (int i = 0; i < EACH; i++) {
        /* Producer 1 goes through the policy: its reject runs without the lock. */
        if (s->index == 0)
            s->results[i] = bq_put(s->q, item_of(s->index, i));
        else
            s->results[i] = bq_try_put(s->q, item_of(s->index, i), &block);
    }
    return NULL;
}

static void *consume(void *raw)
{
    struct side *s = raw;
    for (int i = 0; i < EACH; i++) {
        void *item = NULL;
        s->results[i] = bq_take(s->q, &item);
        s->got[i] = (intptr_t)item;
    }
    return NULL;
}

static void *put_once(void *raw)
{
    struct side *s = raw;
    s->results[0] = bq_put(s->q, item_of(s->index, 0));
    return NULL;
}

static void start(pthread_t *thread, void *(*fn)(void *), struct side *s, bq_t *q, int index)
{
    memset(s, 0, sizeof *s);
    s->q = q;
    s->index = index;
    explore_ok(pthread_create(thread, NULL, fn, s));
}

static void check_every_item_once(struct side *consumers)
{
    int seen[2][EACH] = { { 0 } };
    for (int c = 0; c < 2; c++) {
        for (int i = 0; i < EACH; i++) {
            explore_ok(consumers[c].results[i]);
            intptr_t id = consumers[c].got[i] - 1;
            int p = (int)(id / 100), n = (int)(id % 100);
            kit_explore_check(id >= 0 && p < 2 && n < EACH, "a take returned item %ld, which nobody put",
                              (long)consumers[c].got[i]);
            kit_explore_check(!seen[p][n], "item %ld was taken twice", (long)consumers[c].got[i]);
            seen[p][n] = 1;
        }
    }
}

static void two_and_two(void *ctx)
{
    (void)ctx;
    bq_t *q = NULL;
    pthread_t producers[2], consumers[2];
    struct side put[2], took[2];
    explore_ok(bq_create(&q, 1));
    for (int i = 0; i < 2; i++)
        start(&consumers[i], consume, &took[i], q, i);
    for (int i = 0; i < 2; i++)
        start(&producers[i], produce, &put[i], q, i);
    for (int i = 0; i < 2; i++) {
        explore_ok(pthread_join(producers[i], NULL));
        for (int j = 0; j < EACH; j++)
            explore_ok(put[i].results[j]);
        explore_ok(pthread_join(consumers[i], NULL));
    }
    check_every_item_once(took);
    bq_destroy(q);
}

static void test_bq_explore_two_producers_two_consumers(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "pct:1:3 random:1", .schedules = 600, .spurious = 1 };
    kit_explore(&options, two_and_two, NULL);
}

static void *take_once(void *raw)
{
    struct side *s = raw;
    void *item = NULL;
    s->results[0] = bq_take(s->q, &item);
    s->got[0] = (intptr_t)item;
    return NULL;
}

/* Two takers asleep, then two puts in a row: each put must wake a taker,
 * also when the first taker has not run yet and the queue now holds two
 * (a put that signals only when the queue was empty wakes one of them). */
static void two_puts_for_two_sleepers(void *ctx)
{
    (void)ctx;
    bq_t *q = NULL;
    pthread_t takers[2];
    struct side took[2];
    explore_ok(bq_create(&q, 4));
    for (int i = 0; i < 2; i++)
        start(&takers[i], take_once, &took[i], q, i);
    kit_explore_await_sleepers(2);
    explore_ok(bq_put(q, item_of(0, 0)));
    explore_ok(bq_put(q, item_of(0, 1)));
    for (int i = 0; i < 2; i++) {
        explore_ok(pthread_join(takers[i], NULL));
        explore_ok(took[i].results[0]);
    }
    kit_explore_check(took[0].got[0] != took[1].got[0], "both takers returned item %ld", (long)took[0].got[0]);
    bq_destroy(q);
}

static void test_bq_explore_each_put_wakes_a_sleeping_taker(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dfs:2 random:2", .schedules = 1000, .spurious = 1 };
    kit_explore(&options, two_puts_for_two_sleepers, NULL);
}

/* Two takers asleep on an empty queue, two putters on a full one, and close. */
static void close_against_both_sides(void *ctx)
{
    (void)ctx;
    bq_t *empty = NULL, *full = NULL;
    pthread_t takers[2], putters[2];
    struct side took[2], put[2];
    explore_ok(bq_create(&empty, 1));
    explore_ok(bq_create(&full, 1));
    explore_ok(bq_put(full, item_of(9, 0)));
    for (int i = 0; i < 2; i++) {
        start(&takers[i], consume, &took[i], empty, i);
        start(&putters[i], produce, &put[i], full, 0);
    }
    kit_explore_await_sleepers(4);
    explore_ok(bq_close(empty));
    explore_ok(bq_close(full));
    for (int i = 0; i < 2; i++) {
        explore_ok(pthread_join(takers[i], NULL));
        explore_ok(pthread_join(putters[i], NULL));
        explore_err(took[i].results[0], ECANCELED);
        explore_err(put[i].results[0], ECANCELED);
    }
    bq_destroy(empty);
    bq_destroy(full);
}

static void test_bq_explore_close_wakes_every_sleeper(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "pct:2:3 random:2", .schedules = 500 };
    kit_explore(&options, close_against_both_sides, NULL);
}

/* Two takers asleep on an empty queue, two putters on a full one, and
 * destroy: it must wake all of them, and wait for them to leave, before it
 * frees anything. */
static void destroy_against_sleepers(void *ctx)
{
    (void)ctx;
    bq_t *empty = NULL, *full = NULL;
    pthread_t takers[2], putters[2];
    struct side took[2], put[2];
    explore_ok(bq_create(&empty, 1));
    explore_ok(bq_create(&full, 1));
    explore_ok(bq_put(full, item_of(9, 0)));
    for (int i = 0; i < 2; i++) {
        start(&takers[i], take_once, &took[i], empty, i);
        start(&putters[i], put_once, &put[i], full, i);
    }
    kit_explore_await_sleepers(4);
    bq_destroy(empty);
    bq_destroy(full);
    for (int i = 0; i < 2; i++) {
        explore_ok(pthread_join(takers[i], NULL));
        explore_ok(pthread_join(putters[i], NULL));
        explore_err(took[i].results[0], ECANCELED);
        explore_err(put[i].results[0], ECANCELED);
    }
}

static void test_bq_explore_destroy_wakes_every_sleeper(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dfs:2", .schedules = 1000, .spurious = 1 };
    kit_explore(&options, destroy_against_sleepers, NULL);
}

/* A taker asleep on an empty queue and a putter on a full one, each then
 * handed what it waits for (a put, a take) - and destroy, at once, before
 * either has run: each sleeper still counted must tell destroy it left, on
 * whichever way out it takes (the item it was handed, room, or the close),
 * or destroy waits for ever. */
static void destroy_right_after_the_wakeups(void *ctx)
{
    (void)ctx;
    bq_t *empty = NULL, *full = NULL;
    pthread_t taker, putter;
    struct side took, put;
    void *item = NULL;
    explore_ok(bq_create(&empty, 1));
    explore_ok(bq_create(&full, 1));
    explore_ok(bq_put(full, item_of(9, 0)));
    start(&taker, take_once, &took, empty, 0);
    start(&putter, put_once, &put, full, 1);
    kit_explore_await_sleepers(2);
    explore_ok(bq_put(empty, item_of(8, 0)));
    explore_ok(bq_take(full, &item));
    bq_destroy(empty);
    bq_destroy(full);
    explore_ok(pthread_join(taker, NULL));
    explore_ok(pthread_join(putter, NULL));
    kit_explore_check(took.results[0] == 0 && took.got[0] == (intptr_t)item_of(8, 0),
                      "a taker asleep when an item came, destroy begun before it ran, returned %s and %s: what is "
                      "queued is still delivered", kit_errno_name(took.results[0]),
                      took.got[0] == (intptr_t)item_of(8, 0) ? "the item" : "not the item");
    kit_explore_check(put.results[0] == 0 || put.results[0] == ECANCELED,
                      "a putter asleep when room came, destroy begun before it ran, returned %s: 0 or ECANCELED",
                      kit_errno_name(put.results[0]));
}

static void test_bq_explore_destroy_right_after_the_wakeups(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dfs:2", .schedules = 1000 };
    kit_explore(&options, destroy_right_after_the_wakeups, NULL);
}

/* One taker asleep, and destroy, whose own wait may wake up for nothing:
 * woken while the taker has not yet left, it must wait again, or it frees
 * the queue under the taker's feet. Small enough to search every schedule. */
static void destroy_against_one_sleeper(void *ctx)
{
    (void)ctx;
    bq_t *q = NULL;
    pthread_t taker;
    struct side took;
    explore_ok(bq_create(&q, 1));
    start(&taker, take_once, &took, q, 0);
    kit_explore_await_sleepers(1);
    bq_destroy(q);
    explore_ok(pthread_join(taker, NULL));
    explore_err(took.results[0], ECANCELED);
}

static void test_bq_explore_destroy_waits_again_after_a_spurious_wakeup(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dfs:2", .schedules = 10000, .spurious = 1 };
    kit_explore(&options, destroy_against_one_sleeper, NULL);
}

/* ---- Deadlines against stolen wake-ups, on virtual time ---------------------------------- */

/* Every 40 ms, put an item and take it straight back: each put wakes the
 * poller, which may find the queue empty again. */
static void *steal(void *raw)
{
    struct side *s = raw;
    for (int i = 0; i < 3; i++) {
        void *item = NULL;
        kit_sleep_ms(40);
        s->results[i % EACH] = bq_put(s->q, item_of(5, i));
        (void)bq_poll(s->q, &item, 0);
    }
    return NULL;
}

static void poll_against_stolen_wakeups(void *ctx)
{
    (void)ctx;
    bq_t *q = NULL;
    pthread_t stealer;
    struct side s;
    explore_ok(bq_create(&q, 1));
    start(&stealer, steal, &s, q, 0);
    int64_t start_ns = kit_now_ns();
    void *item = NULL;
    int err = bq_poll(q, &item, 100);
    long waited_ms = (long)((kit_now_ns() - start_ns) / 1000000);
    explore_ok(pthread_join(stealer, NULL));
    kit_explore_check(err == 0 || err == ETIMEDOUT, "a 100 ms poll returned %s", kit_errno_name(err));
    kit_explore_check(err != 0 || item != NULL, "a poll returned 0 without an item: nothing was put but non-NULL ones");
    kit_explore_check(err != ETIMEDOUT || waited_ms == 100,
                      "a 100 ms poll timed out after %ld ms of (virtual) time: wake-ups that found nothing "
                      "restarted its clock", waited_ms);
    bq_destroy(q);
}

static void test_bq_explore_poll_deadline_holds_despite_stolen_wakeups(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dfs:2 random:3", .schedules = 600, .spurious = 1 };
    kit_explore(&options, poll_against_stolen_wakeups, NULL);
}

/* ---- Waking only the side that can proceed -----------------------------------------
 * bq.h: "A put wakes one consumer, a take wakes one producer - only the side
 * that can now proceed, and only if someone of that side is waiting." The
 * scheduler counts the futile wake-ups: a thread woken that finds nothing
 * to do and waits again at once. Three sleepers of one side, one change
 * that lets one of them through: the other two must sleep on, unwoken. */

#define SLEEPERS 3

static void check_no_futile_wakeup(long before, const char *change, const char *sleepers)
{
    long futile = kit_sched_futile_wakeups() - before;
    kit_explore_check(futile == 0,
                      "%s woke %ld sleeping %s, and %ld of them found nothing to do and slept again (a futile "
                      "wake-up): with only %s asleep, it must wake one of them (bq.h: only the side that can now "
                      "proceed)",
                      change, futile + 1, sleepers, futile, sleepers);
}

static void one_put_for_sleeping_takers(void *ctx)
{
    (void)ctx;
    bq_t *q = NULL;
    pthread_t takers[SLEEPERS];
    struct side took[SLEEPERS];
    explore_ok(bq_create(&q, 2));
    for (int i = 0; i < SLEEPERS; i++)
        start(&takers[i], take_once, &took[i], q, i);
    kit_explore_await_sleepers(SLEEPERS);
    long before = kit_sched_futile_wakeups();
    explore_ok(bq_put(q, item_of(0, 0)));
    kit_explore_await_quiet();
    check_no_futile_wakeup(before, "one bq_put", "takers");
    explore_ok(bq_close(q));
    for (int i = 0; i < SLEEPERS; i++)
        explore_ok(pthread_join(takers[i], NULL));
    bq_destroy(q);
}

static void test_bq_explore_a_put_wakes_one_sleeping_taker(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dpor:2", .schedules = 1000 };
    kit_explore(&options, one_put_for_sleeping_takers, NULL);
}

static void one_take_for_sleeping_producers(void *ctx)
{
    (void)ctx;
    bq_t *q = NULL;
    pthread_t producers[SLEEPERS];
    struct side put[SLEEPERS];
    explore_ok(bq_create(&q, 1));
    explore_ok(bq_put(q, item_of(9, 0)));
    for (int i = 0; i < SLEEPERS; i++)
        start(&producers[i], put_once, &put[i], q, i);
    kit_explore_await_sleepers(SLEEPERS);
    long before = kit_sched_futile_wakeups();
    void *item = NULL;
    explore_ok(bq_take(q, &item));
    kit_explore_await_quiet();
    check_no_futile_wakeup(before, "one bq_take", "producers");
    explore_ok(bq_close(q));
    for (int i = 0; i < SLEEPERS; i++)
        explore_ok(pthread_join(producers[i], NULL));
    bq_destroy(q);
}

static void test_bq_explore_a_take_wakes_one_sleeping_producer(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dpor:2", .schedules = 1000 };
    kit_explore(&options, one_take_for_sleeping_producers, NULL);
}

/* The scenarios' spec: the sequential model, the calls and their printing (bq_scenarios.c). */
extern const kit_spec_t queue_spec;

/* Scenarios nobody wrote: a few calls (a full queue, a poll that timed
 * out, a close), then two or three threads of a few calls each, every
 * interleaving of each searched up to equivalence; some order of the calls
 * must explain each history, and a call still asleep at the
 * end one the queue keeps waiting. */
static void test_bq_explore_generated_scenarios(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dpor:2", .schedules = 300, .spurious = 1, .timeouts_race = true };
    kit_scenarios(&queue_spec, 250, &options);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_bq_explore_two_producers_two_consumers),
    cmocka_unit_test(test_bq_explore_each_put_wakes_a_sleeping_taker),
    cmocka_unit_test(test_bq_explore_close_wakes_every_sleeper),
    cmocka_unit_test(test_bq_explore_destroy_wakes_every_sleeper),
    cmocka_unit_test(test_bq_explore_destroy_waits_again_after_a_spurious_wakeup),
    cmocka_unit_test(test_bq_explore_destroy_right_after_the_wakeups),
    cmocka_unit_test(test_bq_explore_poll_deadline_holds_despite_stolen_wakeups),
    cmocka_unit_test(test_bq_explore_a_put_wakes_one_sleeping_taker),
    cmocka_unit_test(test_bq_explore_a_take_wakes_one_sleeping_producer),
    cmocka_unit_test(test_bq_explore_generated_scenarios),
};

KIT_TEST_MAIN(tests)
