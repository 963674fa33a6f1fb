/**
 * @file bench.c
 * @brief Chapter 07 program, `--bench`: what the network round trips cost.
 *
 * The same batch - `tasks` tasks of `task_us` microseconds of computation -
 * run twice for each worker count: by worker processes through Redis, and
 * in this process by chapter 05's master-worker, with as many workers. Each
 * time is from the first submit to the last outcome.
 */
#define _POSIX_C_SOURCE 200809L
#include "program.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dmw_master.h"
#include "dmw_redis.h"
#include "kit_errno.h"
#include "kit_thread.h"
#include "kit_time.h"
#include "mw.h"

/* ---- in-process: chapter 05's master-worker ---------------------------------------- */

/* The same work as a worker process does, as a chapter-05 process function. */
static int process_locally(mw_t *mw, const mw_task_t *task, void **result, void *ctx)
{
    (void)mw;
    (void)result;
    dmw_task_t work = { .id = task->id, .attempt = 1 };
    char text[DMW_TEXT_MAX];
    snprintf(work.payload, sizeof work.payload, "spin %ld", *(const long *)ctx);
    return ch07_work(&work, text, sizeof text, NULL);
}

/* Results are only counted: nothing to keep. */
static void drop_result(mw_t *mw, const mw_result_t *result, void *ctx)
{
    (void)mw;
    (void)result;
    (void)ctx;
}

/* Tasks per second with chapter 05's master-worker and @p threads workers, or -1. */
static double run_local(int threads, long tasks, long task_us)
{
    mw_config_t config = { .workers = (size_t)threads, .queue_capacity = 1024, .process = process_locally,
                           .on_result = drop_result, .ctx = &task_us, .name = "local" };
    mw_t *mw = NULL;
    if (mw_create(&mw, &config) != 0)
        return -1;
    int64_t start = kit_now_ns();
    int err = mw_start(mw);
    for (long id = 0; id < tasks && err == 0; id++)
        err = mw_submit(mw, id, NULL, 60000);
    if (err == 0)
        err = mw_await(mw, 600000);
    double seconds = kit_elapsed_ms(start) / 1000.0;
    mw_stats_t stats;
    bool all_done = err == 0 && mw_stats(mw, &stats) == 0 && stats.completed == (size_t)tasks;
    mw_destroy(mw);
    return all_done ? (double)tasks / seconds : -1;
}

/* ---- distributed: worker processes on Redis ------------------------------------------ */

static long commands_processed(dmw_redis_t *redis)
{
    redisReply *reply = NULL;
    long total = 0;
    if (dmw_redis_call(redis, &reply, "INFO stats") == 0 && reply->type == REDIS_REPLY_STRING) {
        const char *at = strstr(reply->str, "total_commands_processed:");
        total = at ? strtol(at + strlen("total_commands_processed:"), NULL, 10) : 0;
    }
    freeReplyObject(reply);
    return total;
}

/* Wait (polling: a measurement's scaffolding) until @p count workers have registered. */
static int await_workers(dmw_master_t *master, int count)
{
    int64_t start = kit_now_ns();
    dmw_stats_t stats = { 0 };
    while (dmw_stats(master, &stats) == 0 && stats.workers < count) {
        if (kit_elapsed_ms(start) > 10000)
            return ETIMEDOUT;
        kit_sleep_ms(10);
    }
    return stats.workers >= count ? 0 : EIO;
}

static int submit_batch(dmw_master_t *master, long tasks, long task_us)
{
    char payload[32];
    snprintf(payload, sizeof payload, "spin %ld", task_us);
    for (long id = 0; id < tasks; id++) {
        int err = dmw_submit(master, id, payload);
        if (err != 0)
            return err;
    }
    return 0;
}

/* Tasks per second with @p workers processes, and Redis commands per task. */
static int run_distributed(const char *url, int workers, long tasks, long task_us, double *rate, double *per_task)
{
    char run[DMW_NAME_MAX];
    snprintf(run, sizeof run, "bench-%ld-%d", (long)getpid(), workers);
    dmw_config_t config = { .redis_url = url, .run = run, .visibility_ms = 1000, .max_attempts = 3 };
    dmw_master_t *master = NULL;
    dmw_redis_t *redis = NULL;
    ch07_pool_t pool;
    int err = dmw_master_create(&master, &config);
    if (err == 0 && (err = dmw_redis_open(&redis, &config)) == 0 &&
        (err = ch07_pool_start(&pool, workers, "b", &config, true)) == 0) {
        if ((err = await_workers(master, workers)) == 0) {
            long before = commands_processed(redis);
            int64_t start = kit_now_ns();
            if ((err = submit_batch(master, tasks, task_us)) == 0 && (err = dmw_await(master, 120000)) == 0) {
                *rate = (double)tasks / (kit_elapsed_ms(start) / 1000.0);
                *per_task = (double)(commands_processed(redis) - before) / (double)tasks;
            }
        }
        dmw_shutdown(master);
        ch07_pool_wait(&pool, 10000);
    }
    if (master)
        dmw_purge(master);
    dmw_master_destroy(master);
    dmw_redis_close(redis);
    return err;
}

int ch07_bench(const char *url, long tasks, long task_us)
{
    static const int counts[] = { 1, 2, 4, 8 };
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    printf("One batch of %ld tasks of %ld us of computation each, from the first submit to the last\n"
           "outcome, on %ld core(s) shared by Redis, the master and the workers.\n\n", tasks, task_us, cores);
    printf("| workers | worker processes on Redis (tasks/s) | chapter 05 master-worker, one process (tasks/s) | "
           "Redis is slower by | Redis commands per task |\n| ---: | ---: | ---: | ---: | ---: |\n");
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        double remote = 0, per_task = 0;
        int err = run_distributed(url, counts[i], tasks, task_us, &remote, &per_task);
        double local = run_local(counts[i], tasks, task_us);
        if (err != 0 || local <= 0) {
            fprintf(stderr, "bench with %d worker(s) failed: %s\n", counts[i],
                    err ? dmw_errno_name(err) : "in-process run");
            return 1;
        }
        printf("| %d | %.0f | %.0f | %.1fx | %.1f |\n", counts[i], remote, local, local / remote, per_task);
        fflush(stdout);
    }
    return 0;
}
