/**
 * @file bench_keyed.c
 * @brief Benchmark 6, keyed executor throughput: 1, 8 and 1,000 keys against the plain pool it runs on.
 *
 * The same batch of tiny tasks goes through chapter 06's keyed executor,
 * with its tasks spread round-robin over 1, 8 or 1,000 keys, and straight
 * to a chapter-03 pool with tpool_execute(). Each run builds its own pool
 * of 2 workers, whose queue holds the whole batch; the clock stops when
 * every task has run. What the keyed executor adds per task: a future, a
 * map lookup and a lane under its lock. With one key every task waits for
 * the one before it, so only one worker can be busy; with many keys both are.
 */
#define _POSIX_C_SOURCE 200809L
#include "bench_suite.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "future.h"
#include "keyed.h"
#include "kit_time.h"
#include "tpool.h"

enum { KEYED_WORKERS = 2, MAX_KEYS = 1000 };

typedef struct keyed_params {
    long tasks;
    long task_rounds; /* of bench_spin(): the work of one task (0: none) */
} keyed_params_t;

static char key_names[MAX_KEYS][16]; /* "key-0" .. "key-999", written before the first run */

static atomic_long tasks_run;

/* A short CPU-bound task; it counts itself, so a lost task fails the run. */
static void *count_task(void *arg)
{
    const keyed_params_t *p = arg;
    volatile uint64_t sink = bench_spin(1, p->task_rounds);
    (void)sink;
    atomic_fetch_add_explicit(&tasks_run, 1, memory_order_relaxed);
    return NULL;
}

static void count_plain_task(void *arg)
{
    count_task(arg);
}

static int create_pool(tpool_t **pool, long tasks)
{
    tpool_config_t config = { .core_threads = KEYED_WORKERS, .queue_capacity = (size_t)tasks,
                              .keep_alive_ms = 60000, .reject = bq_policy_block(), .name = "keyed" };
    return tpool_create(pool, &config);
}

static double finish(const char *what, long tasks, int64_t start, int err)
{
    double per_second = (double)tasks / ((double)(kit_now_ns() - start) / 1e9) / 1e3;
    long ran = atomic_exchange(&tasks_run, 0);
    if (err != 0 || ran != tasks) {
        fprintf(stderr, "keyed bench: %s ran %ld of %ld tasks (error %d)\n", what, ran, tasks, err);
        return -1;
    }
    return per_second;
}

static double run_plain_pool(const void *params, long arg)
{
    (void)arg;
    const keyed_params_t *p = params;
    tpool_t *pool = NULL;
    int64_t start = kit_now_ns();
    int err = create_pool(&pool, p->tasks);
    for (long i = 0; err == 0 && i < p->tasks; i++)
        err = tpool_execute(pool, count_plain_task, (void *)p);
    tpool_destroy(pool); /* waits for every task */
    return finish("the plain pool", p->tasks, start, err);
}

/* Submits the batch over `keys` keys; each future is released at once (the
 * executor keeps its own reference until the task has run). */
static int submit_batch(keyed_t *kx, const keyed_params_t *p, long keys)
{
    int err = 0;
    for (long i = 0; err == 0 && i < p->tasks; i++) {
        future_t *future = NULL;
        err = keyed_submit(kx, key_names[i % keys], count_task, (void *)p, &future);
        future_release(future);
    }
    return err;
}

/* arg: how many keys. */
static double run_keyed(const void *params, long keys)
{
    const keyed_params_t *p = params;
    tpool_t *pool = NULL;
    keyed_t *kx = NULL;
    int64_t start = kit_now_ns();
    int err = create_pool(&pool, p->tasks);
    if (err == 0)
        err = keyed_create(&kx, pool);
    if (err == 0)
        err = submit_batch(kx, p, keys);
    keyed_destroy(kx); /* closes and waits until every key's queue is drained */
    tpool_destroy(pool);
    return finish("the keyed executor", p->tasks, start, err);
}

static void name_keys(void)
{
    for (int i = 0; i < MAX_KEYS; i++)
        snprintf(key_names[i], sizeof key_names[i], "key-%d", i);
}

int bench_keyed(const bench_options_t *o, bench_result_t *out)
{
    name_keys();
    keyed_params_t params = { .tasks = o->keyed_tasks, .task_rounds = bench_spin_rounds(o->keyed_task_us) };
    char title[BENCH_TITLE_MAX], tasks[32];
    snprintf(title, sizeof title, "6. Keyed executor: %s tasks of about %ld us on a pool of %d workers",
             bench_thousands(o->keyed_tasks, tasks, sizeof tasks), o->keyed_task_us, KEYED_WORKERS);
    bench_spec_t spec = {
        .id = "keyed", .title = title, .unit = "k tasks/s", .params = &params,
        .variants = { { "plain tpool (ch03), no keys", run_plain_pool, 0 },
                      { "keyed (ch06), 1 key", run_keyed, 1 },
                      { "keyed (ch06), 8 keys", run_keyed, 8 },
                      { "keyed (ch06), 1,000 keys", run_keyed, MAX_KEYS } },
        .comparisons = { { "keyed 1 key / plain", 1, 0, BENCH_RATIO, false, 0 },
                         { "keyed 8 keys / plain", 2, 0, BENCH_RATIO, false, 0 },
                         { "keyed 1,000 keys / plain", 3, 0, BENCH_RATIO, true, 0.7 } },
    };
    return bench_run(&spec, o->rounds, out);
}

int bench_keyed_overhead(const bench_options_t *o, bench_result_t *out)
{
    name_keys();
    keyed_params_t params = { .tasks = o->keyed_tasks, .task_rounds = 0 };
    char title[BENCH_TITLE_MAX], tasks[32];
    snprintf(title, sizeof title, "6. Keyed executor overhead: %s empty tasks on a pool of %d workers",
             bench_thousands(o->keyed_tasks, tasks, sizeof tasks), KEYED_WORKERS);
    bench_spec_t spec = {
        .id = "keyed-empty", .title = title, .unit = "k tasks/s", .params = &params,
        .variants = { { "plain tpool (ch03), no keys", run_plain_pool, 0 },
                      { "keyed (ch06), 1 key", run_keyed, 1 },
                      { "keyed (ch06), 1,000 keys", run_keyed, MAX_KEYS } },
        .comparisons = { { "keyed 1 key / plain", 1, 0, BENCH_RATIO, false, 0 },
                         { "keyed 1,000 keys / plain", 2, 0, BENCH_RATIO, false, 0 } },
    };
    return bench_run(&spec, o->rounds, out);
}
