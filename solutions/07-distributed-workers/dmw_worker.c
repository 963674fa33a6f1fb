/**
 * @file dmw_worker.c
 * @brief Chapter 07 reference: a worker's take - work - outcome - acknowledge loop.
 *
 * DESIGN: the order of the steps is the whole lesson.
 *  1. take: BLMOVE queue -> processing:W, one atomic step. From here on the
 *     task is on the server in the worker's name, so a crash loses nothing.
 *  2. work, while the heartbeat thread keeps alive:W fresh.
 *  3. outcome: HSETNX outcomes ID ... - set if absent, so that a second
 *     delivery of the task (after a crash, a pause, a lost reply) writes
 *     nothing and the effect happens once.
 *  4. acknowledge: LREM processing:W 1 RECORD. Only now may the task leave
 *     the processing list: had it left before step 3, a crash in between
 *     would lose it for good.
 *  5. hint the master: LPUSH events ID.
 * A transient failure (EAGAIN) is not an outcome: the task goes back to the
 * queue with one more attempt counted, or, out of attempts, to the dead
 * letters - one atomic step (dmw_redis_move_back()).
 */
#define _POSIX_C_SOURCE 200809L
#include "dmw.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dmw_redis.h"
#include "kit_log.h"

struct worker {
    dmw_redis_t *redis;
    const dmw_worker_config_t *config;
    dmw_worker_stats_t *stats;
    char name[DMW_NAME_MAX];
    char processing[DMW_KEY_MAX];
    bool adopting; /* after a reconnection: first serve what processing:W already holds */
};

/* ---- 1. take --------------------------------------------------------------------- */

/* The record of the next task into @p record, or *got = false if the queue
 * stayed empty for take_timeout_ms. A reconnection may have lost the reply
 * of a BLMOVE that did move a task into our list: adopt what is there first. */
static int take(struct worker *w, char *record, size_t size, bool *got)
{
    redisReply *reply = NULL;
    int err;
    if (dmw_redis_reconnected(w->redis))
        w->adopting = true;
    if (w->adopting) {
        if ((err = dmw_redis_call(w->redis, &reply, "LINDEX %s -1", w->processing)) != 0)
            return err;
        w->adopting = reply->type == REDIS_REPLY_STRING;
        if (w->adopting)
            w->stats->adopted++;
    }
    if (!w->adopting) {
        freeReplyObject(reply);
        long timeout = w->config->take_timeout_ms;
        err = dmw_redis_block(w->redis, timeout, &reply, "BLMOVE %s %s RIGHT LEFT %.3f",
                              dmw_redis_keys(w->redis)->queue, w->processing, (double)timeout / 1000.0);
    }
    *got = err == 0 && reply->type == REDIS_REPLY_STRING;
    if (*got)
        snprintf(record, size, "%s", reply->str);
    freeReplyObject(reply);
    return err;
}

static int shutdown_requested(struct worker *w, bool *yes)
{
    redisReply *reply = NULL;
    int err = dmw_redis_call(w->redis, &reply, "EXISTS %s", dmw_redis_keys(w->redis)->shutdown);
    *yes = err == 0 && reply->type == REDIS_REPLY_INTEGER && reply->integer == 1;
    freeReplyObject(reply);
    return err;
}

/* ---- 3-5. outcome, acknowledge, hint ---------------------------------------------- */

static int write_outcome(struct worker *w, const dmw_outcome_t *outcome, bool *written)
{
    char text[DMW_OUTCOME_MAX];
    int err = dmw_outcome_encode(outcome, text, sizeof text);
    redisReply *reply = NULL;
    if (err == 0) /* PAGE: set-if-absent */
        err = dmw_redis_call(w->redis, &reply, "HSETNX %s %ld %s", dmw_redis_keys(w->redis)->outcomes,
                             outcome->id, text);
    *written = err == 0 && reply->integer == 1;
    freeReplyObject(reply);
    return err;
}

static int acknowledge(struct worker *w, const char *record, long id)
{
    redisReply *reply = NULL;
    int err = dmw_redis_call(w->redis, &reply, "LREM %s 1 %s", w->processing, record);
    freeReplyObject(reply);
    reply = NULL;
    if (err == 0)
        err = dmw_redis_call(w->redis, &reply, "LPUSH %s %ld", dmw_redis_keys(w->redis)->events, id);
    freeReplyObject(reply);
    return err;
}

static int finish(struct worker *w, const char *record, const dmw_task_t *task, dmw_kind_t kind,
                  const char *text)
{
    dmw_outcome_t outcome = { .id = task->id, .kind = kind, .attempts = task->attempt };
    snprintf(outcome.worker, sizeof outcome.worker, "%s", w->name);
    snprintf(outcome.text, sizeof outcome.text, "%s", text);
    bool written = false;
    int err = write_outcome(w, &outcome, &written); /* PAGE: outcome-before-ack */
    if (err == 0)
        err = acknowledge(w, record, task->id);
    if (err != 0)
        return err;
    if (!written) {
        w->stats->duplicates++;
        kit_log("worker", "task %ld already had an outcome: duplicate delivery, nothing written", task->id);
    } else {
        if (kind == DMW_DONE)
            w->stats->completed++;
        else
            w->stats->failed++;
        kit_log("worker", "task %ld (attempt %d) %s: %s", task->id, task->attempt,
                kind == DMW_DONE ? "done" : "failed for good", text);
    }
    return 0;
}

/* EAGAIN: back to the queue with this attempt counted, or to the dead letters. */
static int retry_or_bury(struct worker *w, const char *record, const dmw_task_t *task, const char *error)
{
    int max = dmw_redis_config(w->redis)->max_attempts;
    char requeued[DMW_RECORD_MAX];
    int err = dmw_record_encode(task->id, task->attempt, task->payload, requeued, sizeof requeued);
    dmw_outcome_t dead = { .id = task->id, .kind = DMW_DEAD, .attempts = task->attempt };
    snprintf(dead.worker, sizeof dead.worker, "%s", w->name);
    snprintf(dead.text, sizeof dead.text, "%s", error);
    bool last = task->attempt >= max, moved = false;
    if (err == 0)
        err = dmw_redis_move_back(w->redis, w->name, record, requeued, last ? &dead : NULL, &moved);
    if (err == 0 && moved) {
        if (last)
            w->stats->dead_lettered++;
        else
            w->stats->retried++;
        kit_log("worker", "task %ld (attempt %d of %d) failed: %s - %s", task->id, task->attempt, max, error,
                last ? "dead-lettered" : "back on the queue");
    }
    return err;
}

/* ---- 2. work ---------------------------------------------------------------------- */

static int handle(struct worker *w, const char *record)
{
    dmw_task_t task;
    if (dmw_record_decode(record, &task) != 0) { /* not a task: the kit buries it as it is */
        kit_log("worker", "not a task record, dead-lettered: %s", record);
        return dmw_redis_move_back(w->redis, w->name, record, record, NULL, NULL);
    }
    task.attempt++; /* the record counts attempts that ended; this is the next */
    w->stats->taken++;
    kit_log("worker", "took task %ld (attempt %d): %s", task.id, task.attempt, task.payload);
    char text[DMW_TEXT_MAX] = "";
    int rc = w->config->process(&task, text, sizeof text, w->config->ctx);
    if (rc != 0 && text[0] == '\0')
        snprintf(text, sizeof text, "%s", dmw_errno_name(rc));
    if (rc == 0)
        return finish(w, record, &task, DMW_DONE, text);
    if (rc == EAGAIN)
        return retry_or_bury(w, record, &task, text);
    return finish(w, record, &task, DMW_FAILED, text);
}

/* PAGE: drain-before-leaving. The worker leaves only when a take that
 * began after it saw the shutdown finds the queue empty. The master submits
 * before it shuts down, so that take sees every task: a worker that left as
 * soon as it saw the key could leave behind tasks submitted between its
 * empty take and its look at the key. */
static int serve(struct worker *w)
{
    long handled = 0;
    bool stopping = false; /* the shutdown key was seen before the last take */
    while (w->config->max_tasks == 0 || handled < w->config->max_tasks) {
        char record[DMW_RECORD_MAX];
        bool got = false;
        int err = take(w, record, sizeof record, &got);
        if (err == 0 && got) {
            err = handle(w, record);
            handled++;
        } else if (err == 0 && stopping) {
            return 0; /* empty after the shutdown: drained */
        } else if (err == 0) {
            err = shutdown_requested(w, &stopping); /* the queue was empty: is the run over? */
        }
        if (err != 0)
            return err;
    }
    return 0;
}

/* ---- the worker -------------------------------------------------------------------- */

static bool valid(const dmw_config_t *config, const dmw_worker_config_t *wc)
{
    return config && wc && wc->process && (wc->name == NULL || dmw_name_ok(wc->name)) &&
           wc->take_timeout_ms >= 0 && wc->max_tasks >= 0;
}

static void choose_name(const dmw_worker_config_t *wc, char *name, size_t size)
{
    char host[32] = "host";
    if (wc->name) {
        snprintf(name, size, "%s", wc->name);
        return;
    }
    gethostname(host, sizeof host - 1);
    host[strcspn(host, ".")] = '\0';
    snprintf(name, size, "%s-%ld", dmw_name_ok(host) ? host : "host", (long)getpid());
}

int dmw_worker_run(const dmw_config_t *config, const dmw_worker_config_t *wc, dmw_worker_stats_t *stats)
{
    dmw_worker_stats_t ignored;
    dmw_worker_config_t knobs = wc ? *wc : (dmw_worker_config_t){ 0 };
    struct worker w = { .config = &knobs, .stats = stats ? stats : &ignored };
    memset(w.stats, 0, sizeof *w.stats);
    if (!valid(config, wc))
        return EINVAL;
    if (knobs.take_timeout_ms == 0)
        knobs.take_timeout_ms = 200;
    choose_name(wc, w.name, sizeof w.name);
    dmw_heartbeat_t *heartbeat = NULL;
    int err = dmw_redis_open(&w.redis, config);
    if (err != 0)
        return err;
    if ((err = dmw_key_processing(w.redis, w.name, w.processing, sizeof w.processing)) != 0)
        goto close_redis;
    if ((err = dmw_heartbeat_start(&heartbeat, config, w.name)) != 0)
        goto close_redis;
    kit_log("worker", "%s ready", w.name);
    err = serve(&w);
    dmw_heartbeat_stop(heartbeat, true); /* leaves the run only if it holds no task */

close_redis:
    w.stats->reconnects = dmw_redis_reconnects(w.redis);
    dmw_redis_close(w.redis);
    return err;
}
