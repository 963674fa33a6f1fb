/**
 * @file demo.c
 * @brief Chapter 07 program, the master role: start the workers, submit a
 *        batch, wait while reaping, optionally kill a worker or restart the
 *        server on the way, and account for every task.
 */
#define _POSIX_C_SOURCE 200809L
#include "program.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "dmw_master.h"
#include "dmw_redis.h"
#include "dmw_server.h"
#include "kit_log.h"
#include "kit_rand.h"
#include "kit_thread.h"
#include "kit_time.h"

int ch07_unreachable(const char *who, const char *url, int err)
{
    fprintf(stderr, "%s: cannot reach Redis at %s: %s (%s)\n", who, url ? url : "?", strerror(err),
            dmw_errno_name(err));
    return 3;
}

/* Task i's payload: mostly simulated work; the last ones fail. */
static void payload_for(const ch07_demo_t *demo, long id, kit_rng_t *rng, char *payload, size_t size)
{
    if (id >= demo->tasks - demo->always_fail)
        snprintf(payload, size, "flaky");
    else if (id >= demo->tasks - demo->always_fail - demo->bad)
        snprintf(payload, size, "bad");
    else
        snprintf(payload, size, "work %ld", demo->task_ms / 2 + (long)kit_rng_below(rng, (uint64_t)demo->task_ms + 1));
}

static int submit_batch(dmw_master_t *master, const ch07_demo_t *demo)
{
    kit_rng_t rng;
    kit_rng_seed(&rng, demo->seed, 0);
    for (long id = 0; id < demo->tasks; id++) {
        char payload[DMW_PAYLOAD_MAX];
        payload_for(demo, id, &rng, payload, sizeof payload);
        int err = dmw_submit(master, id, payload);
        if (err != 0)
            return err;
    }
    return 0;
}

/* ---- chaos: a worker killed, a server restarted ------------------------------------------ */

/* The main thread stages these while a "master" thread waits for the batch:
 * the private server must be restarted by the thread that started it (see
 * dmw_server.h). */
struct chaos {
    const ch07_demo_t *demo;
    const ch07_pool_t *pool;
    dmw_redis_t *redis;  /* the main thread's own connection for watching */
    long killed_task;    /* the task w0 held when it was killed, or -1 */
};

/* Polls every few ms: this is the demo's stage direction, not the protocol. */
static void kill_w0_mid_task(struct chaos *chaos)
{
    char key[DMW_KEY_MAX];
    dmw_key_processing(chaos->redis, chaos->pool->names[0], key, sizeof key);
    for (int64_t start = kit_now_ns(); kit_elapsed_ms(start) < 30000; kit_sleep_ms(5)) {
        redisReply *reply = NULL;
        dmw_task_t task;
        if (dmw_redis_call(chaos->redis, &reply, "LINDEX %s -1", key) == 0 && reply->type == REDIS_REPLY_STRING &&
            dmw_record_decode(reply->str, &task) == 0 && strncmp(task.payload, "work", 4) == 0) {
            kill(chaos->pool->pids[0], SIGKILL);
            chaos->killed_task = task.id;
            kit_log("chaos", "SIGKILL %s (pid %ld) in the middle of task %ld", chaos->pool->names[0],
                    (long)chaos->pool->pids[0], task.id);
            freeReplyObject(reply);
            return;
        }
        freeReplyObject(reply);
    }
}

static void restart_mid_run(struct chaos *chaos)
{
    long third = chaos->demo->tasks / 3;
    for (int64_t start = kit_now_ns(); kit_elapsed_ms(start) < 30000; kit_sleep_ms(10)) {
        redisReply *reply = NULL;
        long done = 0;
        if (dmw_redis_call(chaos->redis, &reply, "HLEN %s", dmw_redis_keys(chaos->redis)->outcomes) == 0)
            done = (long)reply->integer;
        freeReplyObject(reply);
        if (done >= third)
            break;
    }
    kit_log("chaos", "restarting the Redis server (it saves its data as it shuts down)");
    int err = dmw_server_restart(chaos->demo->server, 10000);
    if (err != 0)
        kit_log("chaos", "the server did not come back: %s", dmw_errno_name(err));
    else
        kit_log("chaos", "the server is back");
}

static void stage_chaos(struct chaos *chaos)
{
    if (!chaos->demo->kill_worker && !chaos->demo->restart_redis)
        return;
    if (dmw_redis_open(&chaos->redis, chaos->demo->config) != 0)
        return;
    if (chaos->demo->kill_worker)
        kill_w0_mid_task(chaos);
    if (chaos->demo->restart_redis)
        restart_mid_run(chaos);
    dmw_redis_close(chaos->redis);
}

/* ---- the account --------------------------------------------------------------------------- */

struct tally {
    char names[CH07_MAX_WORKERS + 2][DMW_NAME_MAX];
    long done[CH07_MAX_WORKERS + 2], failed[CH07_MAX_WORKERS + 2], dead[CH07_MAX_WORKERS + 2];
    int count;
};

static int tally_outcome(const dmw_outcome_t *outcome, void *ctx)
{
    struct tally *tally = ctx;
    int i = 0;
    while (i < tally->count && strcmp(tally->names[i], outcome->worker) != 0)
        i++;
    if (i == tally->count && tally->count < CH07_MAX_WORKERS + 2)
        snprintf(tally->names[tally->count++], DMW_NAME_MAX, "%s", outcome->worker);
    if (i < tally->count && outcome->kind == DMW_DONE)
        tally->done[i]++;
    if (i < tally->count && outcome->kind == DMW_FAILED)
        tally->failed[i]++;
    if (i < tally->count && outcome->kind == DMW_DEAD)
        tally->dead[i]++;
    if (outcome->kind == DMW_DEAD)
        printf("  dead letter: task %ld after %d attempt(s): %s\n", outcome->id, outcome->attempts, outcome->text);
    if (outcome->kind == DMW_FAILED)
        printf("  failed: task %ld: %s\n", outcome->id, outcome->text);
    return 0;
}

static void print_tally(const struct tally *tally, const ch07_pool_t *pool)
{
    printf("\n  %-10s %6s %7s %14s\n", "worker", "done", "failed", "dead-lettered");
    for (int i = 0; i < tally->count; i++) {
        bool killed = pool->count > 0 && strcmp(tally->names[i], pool->names[0]) == 0 && WIFSIGNALED(pool->status[0]);
        printf("  %-10s %6ld %7ld %14ld%s\n", tally->names[i], tally->done[i], tally->failed[i], tally->dead[i],
               killed ? "   (killed)" : "");
    }
}

static void print_killed_task(dmw_master_t *master, const struct chaos *chaos)
{
    dmw_outcome_t outcome;
    if (chaos->killed_task < 0 || dmw_outcome(master, chaos->killed_task, &outcome) != 0)
        return;
    printf("  task %ld was in %s's hands when it was killed: %s by %s on attempt %d - one outcome, no duplicate\n",
           outcome.id, chaos->pool->names[0], outcome.kind == DMW_DONE ? "done" : "ended", outcome.worker,
           outcome.attempts);
}

static int account(dmw_master_t *master, const struct chaos *chaos, int await_err)
{
    struct tally tally = { .count = 0 };
    for (int i = 0; i < chaos->pool->count; i++) /* every worker gets a line, even one that did nothing */
        snprintf(tally.names[tally.count++], DMW_NAME_MAX, "%s", chaos->pool->names[i]);
    dmw_stats_t stats;
    printf("\n");
    if (dmw_outcomes(master, tally_outcome, &tally) != 0 || dmw_stats(master, &stats) != 0) {
        fprintf(stderr, "cannot read the run's outcomes\n");
        return 1;
    }
    print_tally(&tally, chaos->pool);
    print_killed_task(master, chaos);
    printf("\n  retries: %ld (tasks put back on the queue: EAGAIN, or a worker that stopped heartbeating)\n",
           stats.retries);
    bool conserved = await_err == 0 && stats.submitted == stats.completed + stats.failed + stats.dead_lettered;
    printf("\nsubmitted %ld = completed %ld + failed %ld + dead-lettered %ld: %s\n", stats.submitted,
           stats.completed, stats.failed, stats.dead_lettered,
           conserved ? "every task accounted for, each exactly once" : "NOT ALL TASKS ACCOUNTED FOR");
    return conserved ? 0 : 1;
}

/* ---- the master --------------------------------------------------------------------------- */

static void explain_await_error(int err, const ch07_demo_t *demo)
{
    if (err == ENOSYS)
        fprintf(stderr, "dmw_await: ENOSYS from dmw_reap - not implemented yet: write "
                        "exercises/07-distributed-workers/dmw_reaper.c\n");
    else if (err == ETIMEDOUT)
        fprintf(stderr, "dmw_await: not every task had an outcome after %ld ms\n", demo->timeout_ms);
    else if (err != 0)
        fprintf(stderr, "dmw_await: %s (%s)\n", dmw_errno_name(err), strerror(err));
}

struct waiting {
    dmw_master_t *master; /* used by the waiting thread only, until it is joined */
    long timeout_ms;
    int err;
};

static void *await_batch(void *raw)
{
    struct waiting *waiting = raw;
    waiting->err = dmw_await(waiting->master, waiting->timeout_ms);
    return NULL;
}

static bool is_connect_error(int err)
{
    return err == ECONNREFUSED || err == ECONNRESET || err == ETIMEDOUT || err == EHOSTUNREACH;
}

static int run_batch(dmw_master_t *master, const ch07_demo_t *demo, ch07_pool_t *pool)
{
    struct chaos chaos = { .demo = demo, .pool = pool, .killed_task = -1 };
    struct waiting waiting = { .master = master, .timeout_ms = demo->timeout_ms };
    pthread_t waiter;
    waiting.err = submit_batch(master, demo);
    if (waiting.err == 0 && (waiting.err = kit_thread_start(&waiter, "master", await_batch, &waiting)) == 0) {
        stage_chaos(&chaos);
        pthread_join(waiter, NULL);
    }
    explain_await_error(waiting.err, demo);
    if (is_connect_error(waiting.err)) {
        ch07_pool_wait(pool, 0);
        return ch07_unreachable("master", demo->config->redis_url, waiting.err);
    }
    dmw_shutdown(master); /* the workers drain the queue, if anything is left, and leave */
    int abnormal = ch07_pool_wait(pool, 10000) - (chaos.killed_task >= 0);
    int status = account(master, &chaos, waiting.err);
    if (abnormal > 0)
        fprintf(stderr, "%d worker process(es) did not exit cleanly\n", abnormal);
    return status ? status : abnormal > 0;
}

int ch07_demo(const ch07_demo_t *demo)
{
    dmw_master_t *master = NULL;
    int err = dmw_master_create(&master, demo->config);
    if (err != 0)
        return ch07_unreachable("master", demo->config->redis_url, err);
    kit_log("master", "run %s on %s: %d worker process(es), %ld task(s), visibility timeout %ld ms, "
            "%d attempt(s) at most", demo->config->run, demo->config->redis_url, demo->workers, demo->tasks,
            demo->config->visibility_ms, demo->config->max_attempts);
    ch07_pool_t pool;
    int status = 1;
    if ((err = ch07_pool_start(&pool, demo->workers, "w", demo->config, demo->quiet)) != 0)
        fprintf(stderr, "cannot start the workers: %s\n", strerror(err));
    else
        status = run_batch(master, demo, &pool);
    if (!demo->keep)
        dmw_purge(master);
    dmw_master_destroy(master);
    return status;
}
