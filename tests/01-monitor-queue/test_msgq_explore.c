/**
 * @file test_msgq_explore.c
 * @brief Chapter 01 under the schedule explorer: a few threads, a few
 *        messages, and every interleaving the strategies reach - with fixed
 *        seeds, so the same queue gets the same verdict every run.
 *
 * What each body checks is what msgq.h promises under *any* interleaving:
 * every message taken exactly once and in each producer's order, close and
 * destroy waking every sleeper, no thread left asleep for ever (which the
 * explorer reports at once, naming where each thread waits).
 */
#define _POSIX_C_SOURCE 200809L
#include "kit_test.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kit_errno.h"
#include "kit_scenario.h"
#include "kit_sched.h"
#include "kit_thread.h"
#include "msgq.h"

#define PRODUCERS 2
#define CONSUMERS 2
#define EACH 2 /* messages per producer, and per consumer */

struct exchange {
    msgq_t *q;
    int index;
    int got[EACH];       /* a consumer's ids, in the order taken */
    int results[EACH];   /* what each call returned */
};

static void *produce(void *raw)
{
    struct exchange *e = raw;
    for (int i = 0; i < EACH; i++)
        e->results[i] = msgq_put(e->q, (msg_t){ .id = e->index * 100 + i });
    return NULL;
}

static void *consume(void *raw)
{
    struct exchange *e = raw;
    for (int i = 0; i < EACH; i++) {
        msg_t msg = { .id = -1 };
        e->results[i] = msgq_take(e->q, &msg);
        e->got[i] = msg.id;
    }
    return NULL;
}

static void *consume_once(void *raw)
{
    struct exchange *e = raw;
    msg_t msg = { .id = -1 };
    e->results[0] = msgq_take(e->q, &msg);
    e->got[0] = msg.id;
    return NULL;
}

/* A thread named after its part ("consumer-1"), so a failure's steps read as a story.
 * (kit_thread_start_numbered makes the name without snprintf, a few per cent of a schedule.) */
static void start(pthread_t *thread, void *(*fn)(void *), struct exchange *e, msgq_t *q, int index)
{
    memset(e, 0, sizeof *e);
    e->q = q;
    e->index = index;
    const char *role = fn == produce ? "producer" : "consumer";
    explore_ok(kit_thread_start_numbered(thread, role, (size_t)index, fn, e));
}

/* Every id of every producer taken once, each producer's ids in order. */
static void check_each_taken_once_in_order(struct exchange *consumers)
{
    int seen[PRODUCERS][EACH] = { { 0 } };
    for (int c = 0; c < CONSUMERS; c++) {
        int last[PRODUCERS] = { -1, -1 };
        for (int i = 0; i < EACH; i++) {
            int id = consumers[c].got[i];
            explore_ok(consumers[c].results[i]);
            int p = id / 100, n = id % 100;
            kit_explore_check(id >= 0 && p < PRODUCERS && n < EACH, "consumer %d took id %d, which nobody put", c, id);
            kit_explore_check(seen[p][n] == 0, "message %d was taken twice", id);
            kit_explore_check(n > last[p], "consumer %d took %d after %d: producer %d's order broken", c, id,
                              p * 100 + last[p], p);
            seen[p][n] = 1;
            last[p] = n;
        }
    }
}

static void producers_and_consumers(void *ctx)
{
    size_t capacity = *(size_t *)ctx;
    msgq_t *q = NULL;
    pthread_t producers[PRODUCERS], consumers[CONSUMERS];
    struct exchange put[PRODUCERS], took[CONSUMERS];
    explore_ok(msgq_create(&q, capacity));
    for (int i = 0; i < CONSUMERS; i++)
        start(&consumers[i], consume, &took[i], q, i);
    for (int i = 0; i < PRODUCERS; i++)
        start(&producers[i], produce, &put[i], q, i);
    for (int i = 0; i < PRODUCERS; i++) {
        explore_ok(pthread_join(producers[i], NULL));
        for (int j = 0; j < EACH; j++)
            explore_ok(put[i].results[j]);
    }
    for (int i = 0; i < CONSUMERS; i++)
        explore_ok(pthread_join(consumers[i], NULL));
    check_each_taken_once_in_order(took);
    size_t left = msgq_size(q);
    kit_explore_check(left == 0, "%zu message%s left in the queue after every one was taken", left,
                      left == 1 ? "" : "s");
    msgq_destroy(q);
}

static void test_msgq_explore_capacity_one_every_interleaving(void **state)
{
    (void)state;
    size_t capacity = 1;
    kit_explore_t options = { .strategy = "pct:1:3 random:1", .schedules = 600, .spurious = 1 };
    kit_explore(&options, producers_and_consumers, &capacity);
}

static void test_msgq_explore_capacity_two_every_interleaving(void **state)
{
    (void)state;
    size_t capacity = 2;
    kit_explore_t options = { .strategy = "pct:2:2 random:2", .schedules = 600, .spurious = 1 };
    kit_explore(&options, producers_and_consumers, &capacity);
}

/* Two takers on an empty queue and a putter on a full one; close, from the
 * test thread, at any point: every message put is taken, and every call
 * left waiting returns ECANCELED. */
static void close_against_sleepers(void *ctx)
{
    (void)ctx;
    msgq_t *q = NULL;
    pthread_t takers[2], putter;
    struct exchange took[2], put;
    explore_ok(msgq_create(&q, 1));
    explore_ok(msgq_put(q, (msg_t){ .id = 7 }));
    /* The taker of the queued message gets it; the other finds the queue closed. */
    for (int i = 0; i < 2; i++)
        start(&takers[i], consume, &took[i], q, i);
    start(&putter, produce, &put, q, 1);
    explore_ok(msgq_close(q));
    explore_ok(pthread_join(putter, NULL));
    for (int i = 0; i < 2; i++)
        explore_ok(pthread_join(takers[i], NULL));
    int delivered = 0, cancelled = 0;
    for (int i = 0; i < 2; i++) {
        for (int j = 0; j < EACH; j++) {
            delivered += took[i].results[j] == 0 && took[i].got[j] >= 0;
            cancelled += took[i].results[j] == ECANCELED;
        }
    }
    int puts = 0;
    for (int j = 0; j < EACH; j++) {
        kit_explore_check(put.results[j] == 0 || put.results[j] == ECANCELED, "a put returned %s",
                          kit_errno_name(put.results[j]));
        kit_explore_check(j == 0 || put.results[j - 1] == 0 || put.results[j] == ECANCELED,
                          "a put succeeded after an earlier put found the queue closed");
        puts += put.results[j] == 0;
    }
    /* Every message put is delivered; every other take finds the queue closed. */
    kit_explore_check(delivered == 1 + puts && cancelled == 2 * EACH - delivered,
                      "takes across close: %d delivered, %d cancelled, with %d messages put", delivered, cancelled,
                      1 + puts);
    msgq_destroy(q);
}

static void test_msgq_explore_close_wakes_every_sleeper(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "pct:3:3 random:3", .schedules = 600 };
    kit_explore(&options, close_against_sleepers, NULL);
}

/* Two takers asleep on an empty queue, and destroy: it must wake both, and
 * wait for both to leave, before it frees anything. */
static void destroy_against_sleepers(void *ctx)
{
    (void)ctx;
    msgq_t *q = NULL;
    pthread_t takers[2];
    struct exchange took[2];
    explore_ok(msgq_create(&q, 1));
    for (int i = 0; i < 2; i++)
        start(&takers[i], consume_once, &took[i], q, i);
    kit_explore_await_sleepers(2);
    msgq_destroy(q);
    for (int i = 0; i < 2; i++) {
        explore_ok(pthread_join(takers[i], NULL));
        explore_err(took[i].results[0], ECANCELED);
    }
}

static void test_msgq_explore_destroy_wakes_every_sleeper(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dfs:2", .schedules = 1000, .spurious = 1 };
    kit_explore(&options, destroy_against_sleepers, NULL);
}

/* The scenarios' spec: the sequential model, the calls and their printing (msgq_scenarios.c). */
extern const kit_spec_t queue_spec;

/* Scenarios nobody wrote: a few calls, then two or three threads of a few
 * calls each, every interleaving of each (up to equivalence) searched; some
 * order of the calls must explain the history, and a call still
 * asleep at the end one the queue keeps waiting. */
static void test_msgq_explore_generated_scenarios(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dpor:2", .schedules = 300, .spurious = 1, .timeouts_race = true };
    kit_scenarios(&queue_spec, 250, &options);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_msgq_explore_capacity_one_every_interleaving),
    cmocka_unit_test(test_msgq_explore_capacity_two_every_interleaving),
    cmocka_unit_test(test_msgq_explore_close_wakes_every_sleeper),
    cmocka_unit_test(test_msgq_explore_destroy_wakes_every_sleeper),
    cmocka_unit_test(test_msgq_explore_generated_scenarios),
};

KIT_TEST_MAIN(tests)
