/**
 * @file bench_pool.c
 * @brief Benchmark 2, pool overhead: chapter 03's tpool, GLib's GThreadPool, and a thread per task.
 *
 * The tasks are empty, so all that is measured is what the pool itself
 * costs per task: handing it over, waking a worker, bookkeeping. The clock
 * runs from creating the pool to the moment every task has run (tpool:
 * shutdown + await termination; GThreadPool: free, waiting for the queue).
 * Both pools get 2 workers and a queue that holds the whole batch
 * (GThreadPool's is unbounded), so the submitter never waits for room.
 *
 * A thread per task (Thread-Per-Message, as chapter 03's `--compare`) runs
 * a smaller batch - creating a thread costs tens of microseconds - and is
 * compared per task, through tasks per second.
 */
#define _POSIX_C_SOURCE 200809L
#include "bench_suite.h"

#include <glib.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "kit_time.h"
#include "tpool.h"

enum { POOL_WORKERS = 2, THREADS_IN_FLIGHT = 64 };

typedef struct pool_params {
    long tasks;        /* for tpool and GThreadPool */
    long thread_tasks; /* for a thread per task */
} pool_params_t;

static void empty_task(void *arg)
{
    (void)arg;
}

static double thousands_per_second(long tasks, int64_t start_ns)
{
    return (double)tasks / ((double)(kit_now_ns() - start_ns) / 1e9) / 1e3;
}

static double run_tpool(const void *params, long arg)
{
    (void)arg;
    const pool_params_t *p = params;
    tpool_config_t config = { .core_threads = POOL_WORKERS, .queue_capacity = (size_t)p->tasks,
                              .keep_alive_ms = 60000, .reject = bq_policy_block(), .name = "bench" };
    tpool_t *pool = NULL;
    int64_t start = kit_now_ns();
    int err = tpool_create(&pool, &config);
    for (long i = 0; err == 0 && i < p->tasks; i++)
        err = tpool_execute(pool, empty_task, NULL);
    tpool_shutdown(pool);
    tpool_await_termination(pool, LONG_MAX);
    double result = thousands_per_second(p->tasks, start);
    tpool_stats_t stats = { 0 };
    tpool_stats(pool, &stats);
    tpool_destroy(pool);
    if (err != 0 || stats.completed != (size_t)p->tasks) {
        fprintf(stderr, "pool bench: tpool ran %zu of %ld tasks (error %d)\n", stats.completed, p->tasks, err);
        return -1;
    }
    return result;
}

static void empty_glib_task(void *data, void *user_data)
{
    (void)data;
    (void)user_data;
}

static double run_glib(const void *params, long arg)
{
    (void)arg;
    const pool_params_t *p = params;
    int64_t start = kit_now_ns();
    /* Not exclusive: GLib's default, threads shared with other pools. */
    GThreadPool *pool = g_thread_pool_new(empty_glib_task, NULL, POOL_WORKERS, FALSE, NULL);
    for (long i = 0; pool && i < p->tasks; i++)
        g_thread_pool_push(pool, &start, NULL); /* any non-NULL pointer: GLib refuses NULL */
    if (pool)
        g_thread_pool_free(pool, FALSE, TRUE); /* TRUE: return once every queued task has run */
    double result = thousands_per_second(p->tasks, start);
    g_thread_pool_stop_unused_threads(); /* the next round starts without spare threads, as tpool does */
    return pool ? result : -1;
}

static atomic_long thread_tasks_done;

static void *thread_task(void *arg)
{
    (void)arg;
    atomic_fetch_add_explicit(&thread_tasks_done, 1, memory_order_relaxed);
    return NULL;
}

/* A fresh thread per task, created and joined; at most THREADS_IN_FLIGHT
 * alive at once, so a big batch does not exhaust the system's threads. */
static double run_thread_per_task(const void *params, long arg)
{
    (void)arg;
    const pool_params_t *p = params;
    pthread_t threads[THREADS_IN_FLIGHT];
    atomic_store(&thread_tasks_done, 0);
    int64_t start = kit_now_ns();
    long started = 0;
    for (; started < p->thread_tasks; started++) {
        if (started >= THREADS_IN_FLIGHT)
            pthread_join(threads[started % THREADS_IN_FLIGHT], NULL);
        if (pthread_create(&threads[started % THREADS_IN_FLIGHT], NULL, thread_task, NULL) != 0)
            break;
    }
    for (long i = started > THREADS_IN_FLIGHT ? started - THREADS_IN_FLIGHT : 0; i < started; i++)
        pthread_join(threads[i % THREADS_IN_FLIGHT], NULL);
    double result = thousands_per_second(p->thread_tasks, start);
    if (atomic_load(&thread_tasks_done) != p->thread_tasks) {
        fprintf(stderr, "pool bench: only %ld of %ld threads ran\n", atomic_load(&thread_tasks_done), p->thread_tasks);
        return -1;
    }
    return result;
}

int bench_pool(const bench_options_t *o, bench_result_t *out)
{
    pool_params_t params = { .tasks = o->pool_tasks, .thread_tasks = o->thread_tasks };
    char title[BENCH_TITLE_MAX], tasks[32], thread_tasks[32];
    snprintf(title, sizeof title, "2. Pool overhead: %s empty tasks on %d workers (a thread per task: %s tasks)",
             bench_thousands(o->pool_tasks, tasks, sizeof tasks), POOL_WORKERS,
             bench_thousands(o->thread_tasks, thread_tasks, sizeof thread_tasks));
    bench_spec_t spec = {
        .id = "pool", .title = title, .unit = "k tasks/s", .params = &params,
        .variants = { { "tpool (ch03)", run_tpool, 0 },
                      { "GThreadPool (GLib)", run_glib, 0 },
                      { "a thread per task", run_thread_per_task, 0 } },
        .comparisons = { { "tpool / GThreadPool", 0, 1, BENCH_RATIO, true, 0.7 } /* docs/performance.md */,
                         { "tpool / thread per task", 0, 2, BENCH_RATIO, true, 40 } },
    };
    return bench_run(&spec, o->rounds, out);
}
