/**
 * @file bench_idle.c
 * @brief Benchmarks 3 and 4: what idle structures cost, and how soon an idle pool lets its workers go.
 *
 * 3. Idle cost. Each structure is built, its workers started and left with
 *    nothing to do; then the whole process's CPU time (getrusage) is read
 *    before and after `idle_ms` of sleep. A worker that polls - wakes up
 *    every so often to look for work - would show up here; one that sleeps
 *    on a condition variable costs nothing. The baseline is the same sleep
 *    with no structure at all.
 * 4. Idle reclaim. A pool of 2 runs one task per worker; the clock starts
 *    when the last task ends and stops when the pool has no worker left.
 *    The result is that time divided by keep-alive: 1.00x would be exact.
 */
#define _POSIX_C_SOURCE 200809L
#include "bench_suite.h"

#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>

#include "future.h"
#include "keyed.h"
#include "kit_time.h"
#include "mw.h"
#include "tpool.h"

enum { WORKERS = 2, SETTLE_MS = 20, LONG_KEEP_ALIVE_MS = 600000 };

/* ---- 3. idle cost ------------------------------------------------------------------- */

typedef struct idle_params {
    long idle_ms;
} idle_params_t;

/* CPU milliseconds the whole process uses while the caller's structure sits idle. */
static double idle_cpu_ms(const idle_params_t *p)
{
    kit_sleep_ms(SETTLE_MS); /* let the workers reach their wait before the clock starts */
    double before = bench_cpu_ms();
    kit_sleep_ms(p->idle_ms);
    return bench_cpu_ms() - before;
}

static double idle_nothing(const void *params, long arg)
{
    (void)arg;
    return idle_cpu_ms(params);
}

static void nothing(void *arg)
{
    (void)arg;
}

static int start_idle_pool(tpool_t **pool)
{
    tpool_config_t config = { .core_threads = WORKERS, .queue_capacity = 64, .keep_alive_ms = LONG_KEEP_ALIVE_MS,
                              .reject = bq_policy_block(), .name = "idle" };
    int err = tpool_create(pool, &config);
    for (int i = 0; err == 0 && i < WORKERS; i++) /* below core size, each task starts a worker */
        err = tpool_execute(*pool, nothing, NULL);
    return err;
}

static double idle_tpool(const void *params, long arg)
{
    (void)arg;
    tpool_t *pool = NULL;
    int err = start_idle_pool(&pool);
    double cpu_ms = err == 0 ? idle_cpu_ms(params) : -1;
    tpool_destroy(pool);
    return cpu_ms;
}

static int process_nothing(mw_t *mw, const mw_task_t *task, void **result, void *ctx)
{
    (void)mw;
    (void)task;
    (void)result;
    (void)ctx;
    return 0;
}

static double idle_mw(const void *params, long arg)
{
    (void)arg;
    mw_config_t config = { .workers = WORKERS, .queue_capacity = 64, .process = process_nothing, .name = "idle" };
    mw_t *mw = NULL;
    int err = mw_create(&mw, &config);
    if (err == 0)
        err = mw_start(mw); /* the workers start and wait for tasks */
    double cpu_ms = err == 0 ? idle_cpu_ms(params) : -1;
    if (err == 0)
        mw_await(mw, 10000); /* nothing pending: stops the workers */
    mw_destroy(mw);
    return cpu_ms;
}

static void *return_arg(void *arg)
{
    return arg;
}

/* One task on each of two keys, waited for: both drains ran, the pool's workers are idle. */
static int use_two_keys(keyed_t *kx)
{
    int err = 0;
    for (int i = 0; err == 0 && i < 2; i++) {
        future_t *future = NULL;
        err = keyed_submit(kx, i ? "left" : "right", return_arg, NULL, &future);
        if (err == 0)
            err = future_get(future, NULL);
        future_release(future);
    }
    return err;
}

static double idle_keyed(const void *params, long arg)
{
    (void)arg;
    tpool_t *pool = NULL;
    keyed_t *kx = NULL;
    int err = start_idle_pool(&pool);
    if (err == 0)
        err = keyed_create(&kx, pool);
    if (err == 0)
        err = use_two_keys(kx);
    double cpu_ms = err == 0 ? idle_cpu_ms(params) : -1;
    keyed_destroy(kx);
    tpool_destroy(pool);
    return cpu_ms;
}

int bench_idle(const bench_options_t *o, bench_result_t *out)
{
    idle_params_t params = { .idle_ms = o->idle_ms };
    char title[BENCH_TITLE_MAX];
    snprintf(title, sizeof title, "3. Idle cost: CPU time of the whole process over %ld ms idle (%d workers each)",
             o->idle_ms, WORKERS);
    bench_spec_t spec = {
        .id = "idle", .title = title, .unit = "CPU ms", .params = &params,
        .variants = { { "no threads at all", idle_nothing, 0 },
                      { "idle tpool (ch03)", idle_tpool, 0 },
                      { "idle mw (ch05)", idle_mw, 0 },
                      { "idle keyed (ch06) on a tpool", idle_keyed, 0 } },
        .comparisons = { { "tpool - no threads", 1, 0, BENCH_DIFFERENCE, true, 2 },
                         { "mw - no threads", 2, 0, BENCH_DIFFERENCE, true, 2 },
                         { "keyed - no threads", 3, 0, BENCH_DIFFERENCE, true, 2 } },
    };
    return bench_run(&spec, o->idle_rounds, out);
}

/* ---- 4. idle reclaim ------------------------------------------------------------------ */

static atomic_llong last_task_end_ns;

static void note_end(void *arg)
{
    (void)arg;
    long long now = kit_now_ns();
    long long seen = atomic_load(&last_task_end_ns);
    while (now > seen && !atomic_compare_exchange_weak(&last_task_end_ns, &seen, now))
        ; /* another worker moved it: compare again with what it wrote */
}

/* Polls the pool's counters until no worker is left: the pool has no
 * "last worker retired" event to wait for. Every 100 us, so the reading is
 * late by 0.1 ms at most. Returns when that happened, or -1 after 10 s. */
static int64_t wait_until_no_worker(tpool_t *pool, tpool_stats_t *stats)
{
    int64_t give_up = kit_now_ns() + 10 * 1000000000LL;
    while (kit_now_ns() < give_up) {
        tpool_stats(pool, stats);
        if (stats->threads == 0)
            return kit_now_ns();
        kit_sleep_us(100);
    }
    return -1;
}

/* arg: keep-alive in milliseconds. */
static double reclaim(const void *params, long keep_alive_ms)
{
    (void)params;
    tpool_config_t config = { .core_threads = WORKERS, .queue_capacity = 64, .keep_alive_ms = keep_alive_ms,
                              .reject = bq_policy_block(), .name = "reclaim" };
    tpool_t *pool = NULL;
    atomic_store(&last_task_end_ns, 0);
    int err = tpool_create(&pool, &config);
    for (int i = 0; err == 0 && i < WORKERS; i++)
        err = tpool_execute(pool, note_end, NULL);
    tpool_stats_t stats = { 0 };
    int64_t gone = err == 0 ? wait_until_no_worker(pool, &stats) : -1;
    tpool_destroy(pool);
    if (gone < 0 || stats.retired != WORKERS) {
        fprintf(stderr, "reclaim bench: %zu of %d workers retired (error %d)\n", stats.retired, WORKERS, err);
        return -1;
    }
    double ms = (double)(gone - atomic_load(&last_task_end_ns)) / 1e6;
    return ms / (double)keep_alive_ms;
}

int bench_reclaim(const bench_options_t *o, bench_result_t *out)
{
    bench_spec_t spec = {
        .id = "reclaim",
        .title = "4. Idle reclaim: from the end of the last task until the last of 2 workers has retired",
        .unit = "x keep-alive",
        .variants = { { "tpool, keep-alive 20 ms", reclaim, 20 },
                      { "tpool, keep-alive 50 ms", reclaim, 50 },
                      { "tpool, keep-alive 100 ms", reclaim, 100 } },
    };
    return bench_run(&spec, o->rounds, out);
}
