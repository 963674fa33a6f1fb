/**
 * @file test_keyed_explore.c
 * @brief Chapter 06 under the schedule explorer: one key's tasks one at a
 *        time and in order while another thread submits, a drain's
 *        empty-check racing a submit, a task that submits, caller-runs
 *        pools and a refused drain - with fixed seeds; and generated
 *        scenarios of submits, close, shutdowns and waits, checked against
 *        a model of per-key FIFOs (kit_scenario.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "kit_test.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
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
#include "keyed.h"

static tpool_t *make_pool(size_t core, size_t capacity, bq_policy_t policy)
{
    tpool_t *p = NULL;
    tpool_config_t config = { .core_threads = core, .queue_capacity = capacity, .keep_alive_ms = 3600L * 1000,
                              .reject = policy, .name = "xk" };
    explore_ok(tpool_create(&p, &config));
    return p;
}

/* What the tasks of one run record, under the book's own lock. */
struct book {
    pthread_mutex_t lock;
    keyed_t *kx;
    int running[3];   /* tasks of key a, b, c running now */
    int next[3];      /* the number the key's next task must carry */
    int overlaps;
    int out_of_order;
    future_t *submitted_inside;
};

struct job {
    struct book *book;
    int key;   /* 0 = "a", 1 = "b", 2 = "c" */
    int n;     /* its place among its key's tasks */
};

static void *record(void *raw)
{
    struct job *job = raw;
    struct book *b = job->book;
    pthread_mutex_lock(&b->lock);
    b->overlaps += b->running[job->key]++ > 0;
    b->out_of_order += job->n != b->next[job->key]++;
    pthread_mutex_unlock(&b->lock);
    sched_yield(); /* the task runs a while: another one may start meanwhile */
    pthread_mutex_lock(&b->lock);
    b->running[job->key]--;
    pthread_mutex_unlock(&b->lock);
    return NULL;
}

/* Key b's first task submits a task of key c from inside the executor. */
static void *record_and_submit(void *raw)
{
    struct job *job = raw;
    static struct job inner;
    inner = (struct job){ job->book, 2, 0 };
    keyed_submit(job->book->kx, "c", record, &inner, &job->book->submitted_inside);
    return record(raw);
}

static const char *const keys[] = { "a", "b" };

static void *submit_key_a_later(void *raw)
{
    struct job *jobs = raw;
    future_t *f = NULL;
    int err = keyed_submit(jobs[0].book->kx, "a", record, &jobs[2], &f);
    if (err == 0)
        err = future_get(f, NULL);
    future_release(f);
    return (void *)(long)err;
}

static void two_keys_two_submitters(void *ctx)
{
    (void)ctx;
    struct book b = { .kx = NULL };
    explore_ok(pthread_mutex_init(&b.lock, NULL));
    tpool_t *p = make_pool(2, 8, bq_policy_block());
    explore_ok(keyed_create(&b.kx, p));
    struct job jobs[4] = { { &b, 0, 0 }, { &b, 0, 1 }, { &b, 0, 2 }, { &b, 1, 0 } };
    future_t *f[3] = { NULL };
    explore_ok(keyed_submit(b.kx, keys[0], record, &jobs[0], &f[0]));
    explore_ok(keyed_submit(b.kx, keys[0], record, &jobs[1], &f[1]));
    pthread_t other; /* a3 comes from another thread, after a1 and a2 */
    explore_ok(pthread_create(&other, NULL, submit_key_a_later, jobs));
    explore_ok(keyed_submit(b.kx, keys[1], record_and_submit, &jobs[3], &f[2]));
    void *other_err = NULL;
    explore_ok(pthread_join(other, &other_err));
    explore_ok((int)(long)other_err);
    for (int i = 0; i < 3; i++) {
        explore_ok(future_get(f[i], NULL));
        future_release(f[i]);
    }
    explore_ok(future_get(b.submitted_inside, NULL));
    future_release(b.submitted_inside);
    explore_ok(keyed_close(b.kx));
    explore_ok(keyed_await_termination(b.kx, LONG_MAX));
    kit_explore_check(b.overlaps == 0, "tasks of one key overlapped %d time(s)", b.overlaps);
    kit_explore_check(b.out_of_order == 0, "tasks of one key ran out of submission order %d time(s)", b.out_of_order);
    kit_explore_check(keyed_active_keys(b.kx) == 0, "%zu keys still active after termination",
                      keyed_active_keys(b.kx));
    keyed_destroy(b.kx);
    tpool_destroy(p);
    pthread_mutex_destroy(&b.lock);
}

static void test_keyed_explore_same_key_serial_in_order(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "pct:1:3 random:1", .schedules = 600 };
    kit_explore(&options, two_keys_two_submitters, NULL);
}

/* ---- Caller-runs and a refused drain ----------------------------------------------------- */

static void *wait_for_gate(void *raw)
{
    kit_tally_await(raw, 1);
    return NULL;
}

static void *nothing(void *raw)
{
    return raw;
}

/* One worker, a queue of 1: the third key's drain is run by the caller. */
static void caller_runs_a_drain(void *ctx)
{
    (void)ctx;
    kit_tally_t gate;
    kit_tally_init(&gate);
    tpool_t *p = make_pool(1, 1, bq_policy_caller_runs(NULL));
    keyed_t *kx = NULL;
    explore_ok(keyed_create(&kx, p));
    future_t *f[3] = { NULL };
    explore_ok(keyed_submit(kx, "busy", wait_for_gate, &gate, &f[0]));
    explore_ok(keyed_submit(kx, "queued", nothing, NULL, &f[1]));
    explore_ok(keyed_submit(kx, "on-caller", nothing, NULL, &f[2]));
    kit_tally_add(&gate);
    for (int i = 0; i < 3; i++) {
        explore_ok(future_get(f[i], NULL));
        future_release(f[i]);
    }
    keyed_destroy(kx);
    tpool_destroy(p);
    kit_tally_destroy(&gate);
}

static void test_keyed_explore_caller_runs_pool(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dfs:1 random:2", .schedules = 500 };
    kit_explore(&options, caller_runs_a_drain, NULL);
}

/* One worker, a queue of 1, abort: the third key's drain is refused, and the key must be gone. */
static void refused_drain_rolls_back(void *ctx)
{
    (void)ctx;
    kit_tally_t gate;
    kit_tally_init(&gate);
    tpool_t *p = make_pool(1, 1, bq_policy_abort());
    keyed_t *kx = NULL;
    explore_ok(keyed_create(&kx, p));
    future_t *busy = NULL, *queued = NULL, *refused = NULL, *later = NULL;
    explore_ok(keyed_submit(kx, "busy", wait_for_gate, &gate, &busy));
    explore_ok(keyed_submit(kx, "queued", nothing, NULL, &queued));
    explore_err(keyed_submit(kx, "refused", nothing, NULL, &refused), EAGAIN);
    kit_explore_check(refused == NULL, "a refused submit left a future behind");
    kit_tally_add(&gate);
    explore_ok(future_get(busy, NULL));
    explore_ok(future_get(queued, NULL));
    explore_ok(keyed_submit(kx, "refused", nothing, NULL, &later)); /* the pool has room again */
    explore_ok(future_get(later, NULL));
    future_release(busy);
    future_release(queued);
    future_release(later);
    keyed_destroy(kx);
    tpool_destroy(p);
    kit_tally_destroy(&gate);
}

static void test_keyed_explore_refused_drain_leaves_no_key(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "dfs:1 random:3", .schedules = 500 };
    kit_explore(&options, refused_drain_rolls_back, NULL);
}

/* ---- Every thread awaiting termination wakes ----------------------------------------------- */

static void *await_keyed(void *raw)
{
    return (void *)(long)keyed_await_termination(raw, 3600L * 1000);
}

/* Two threads await termination; the last key drains before the close
 * (drained_first) or after it, while its task is held by a gate. */
static void several_await_keyed(void *ctx)
{
    bool drained_first = *(bool *)ctx;
    kit_tally_t gate;
    kit_tally_init(&gate);
    tpool_t *p = make_pool(2, 8, bq_policy_block());
    keyed_t *kx = NULL;
    explore_ok(keyed_create(&kx, p));
    future_t *f = NULL;
    explore_ok(keyed_submit(kx, "k", wait_for_gate, &gate, &f));
    pthread_t awaiters[2];
    for (int i = 0; i < 2; i++)
        explore_ok(pthread_create(&awaiters[i], NULL, await_keyed, kx));
    if (drained_first) {
        kit_tally_add(&gate);
        explore_ok(future_get(f, NULL));
    }
    int64_t start = kit_now_ns();
    explore_ok(keyed_close(kx));
    if (!drained_first)
        kit_tally_add(&gate);
    for (int i = 0; i < 2; i++) {
        void *err = NULL;
        explore_ok(pthread_join(awaiters[i], &err));
        kit_explore_check(err == NULL, "keyed_await_termination in thread %d returned %s", i,
                          kit_errno_name((int)(long)err));
    }
    long waited_ms = (long)((kit_now_ns() - start) / 1000000);
    kit_explore_check(waited_ms == 0, "the threads awaiting termination woke %ld ms (virtual) after the last key "
                      "drained: someone was not told", waited_ms);
    future_release(f);
    keyed_destroy(kx);
    tpool_destroy(p);
    kit_tally_destroy(&gate);
}

static void test_keyed_explore_termination_wakes_every_awaiter(void **state)
{
    (void)state;
    bool drained_first[] = { true, false };
    for (int i = 0; i < 2; i++) {
        kit_explore_t options = { .strategy = "pct:9:3 random:9", .schedules = 500, .spurious = 1 };
        kit_explore(&options, several_await_keyed, &drained_first[i]);
    }
}

/* The scenarios' spec: the model, the tasks, the calls and their printing (keyed_scenarios.c). */
extern const kit_spec_t keyed_spec;

/* Scenarios nobody wrote: submits on three keys from two or three threads,
 * racing a close, the pool's shutdown and waits for termination, on a
 * roomy pool or a full one that refuses, runs on the caller or discards.
 * Some order of the calls must explain each history, and the tasks
 * must have run as that order says: per key in order, one at a time, each
 * accepted one once. The schedules are drawn (PCT and a random walk), not
 * searched in order: a scenario's steps are many (pool, futures, tasks),
 * and the races that matter come anywhere among them. */
static void test_keyed_explore_generated_scenarios(void **state)
{
    (void)state;
    kit_explore_t options = { .strategy = "pct:1:3 random:1", .schedules = 30, .spurious = 1, .timeouts_race = true };
    kit_scenarios(&keyed_spec, 250, &options);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_keyed_explore_same_key_serial_in_order),
    cmocka_unit_test(test_keyed_explore_caller_runs_pool),
    cmocka_unit_test(test_keyed_explore_refused_drain_leaves_no_key),
    cmocka_unit_test(test_keyed_explore_termination_wakes_every_awaiter),
    cmocka_unit_test(test_keyed_explore_generated_scenarios),
};

KIT_TEST_MAIN(tests)
