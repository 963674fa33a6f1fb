/**
 * @file dmw_reaper.c
 * @brief Chapter 07 reference: the reaper, which gives the tasks of dead workers back.
 *
 * DESIGN: a worker is dead when its heartbeat key has expired - the only
 * thing that can be known about a process on another machine. Then every
 * task in its processing list goes back to the queue (one more attempt
 * counted) or, out of attempts, to the dead letters. Each move is one
 * atomic step that happens only if the task is still in that list, so two
 * reapers, or a reaper and a worker that was only frozen and comes back,
 * can never both move the same task. A worker that was presumed dead but
 * was not is harmless: its late outcome loses to the first one (HSETNX).
 */
#define _POSIX_C_SOURCE 200809L
#include "dmw.h"

#include <errno.h>
#include <stdio.h>

#include "dmw_redis.h"
#include "kit_log.h"

struct tally {
    long returned, dead;
};

static int is_alive(dmw_redis_t *redis, const char *worker, bool *alive)
{
    char key[DMW_KEY_MAX];
    redisReply *reply = NULL;
    int err = dmw_key_alive(redis, worker, key, sizeof key);
    if (err == 0)
        err = dmw_redis_call(redis, &reply, "EXISTS %s", key);
    *alive = err == 0 && reply->type == REDIS_REPLY_INTEGER && reply->integer == 1;
    freeReplyObject(reply);
    return err;
}

/* One orphaned record: back to the queue with this attempt counted, or buried. */
static int return_task(dmw_redis_t *redis, const char *worker, const char *record, struct tally *tally)
{
    dmw_task_t task;
    if (dmw_record_decode(record, &task) != 0) /* not a task: the kit buries it as it is */
        return dmw_redis_move_back(redis, worker, record, record, NULL, NULL);
    int attempt = task.attempt + 1, max = dmw_redis_config(redis)->max_attempts;
    char requeued[DMW_RECORD_MAX];
    dmw_outcome_t dead = { .id = task.id, .kind = DMW_DEAD, .attempts = attempt };
    snprintf(dead.worker, sizeof dead.worker, "reaper");
    snprintf(dead.text, sizeof dead.text, "worker %s stopped heartbeating", worker);
    bool last = attempt >= max, moved = false;
    int err = dmw_record_encode(task.id, attempt, task.payload, requeued, sizeof requeued);
    if (err == 0) /* PAGE: reap-move */
        err = dmw_redis_move_back(redis, worker, record, requeued, last ? &dead : NULL, &moved);
    if (err == 0 && moved) {
        if (last)
            tally->dead++;
        else
            tally->returned++;
        kit_log("reaper", "%s stopped heartbeating: task %ld (attempt %d of %d) %s", worker, task.id, attempt, max,
                last ? "dead-lettered" : "back on the queue");
    }
    return err;
}

/* Every task of a silent worker. The worker stays in the run's set: a take
 * it left blocked on the server may still move a task into its list. */
static int reap_worker(dmw_redis_t *redis, const char *worker, struct tally *tally)
{
    char processing[DMW_KEY_MAX];
    redisReply *tasks = NULL;
    int err = dmw_key_processing(redis, worker, processing, sizeof processing);
    if (err == 0)
        err = dmw_redis_call(redis, &tasks, "LRANGE %s 0 -1", processing);
    for (size_t i = 0; err == 0 && tasks->type == REDIS_REPLY_ARRAY && i < tasks->elements; i++)
        err = return_task(redis, worker, tasks->element[i]->str, tally);
    freeReplyObject(tasks);
    return err;
}

int dmw_reap(dmw_redis_t *redis, long *returned, long *dead)
{
    struct tally tally = { 0, 0 };
    if (returned)
        *returned = 0;
    if (dead)
        *dead = 0;
    if (redis == NULL)
        return EINVAL;
    redisReply *workers = NULL;
    int err = dmw_redis_call(redis, &workers, "SMEMBERS %s", dmw_redis_keys(redis)->workers);
    for (size_t i = 0; err == 0 && workers->type == REDIS_REPLY_ARRAY && i < workers->elements; i++) {
        const char *worker = workers->element[i]->str;
        bool alive = false;
        err = is_alive(redis, worker, &alive); /* PAGE: only-the-silent */
        if (err == 0 && !alive)
            err = reap_worker(redis, worker, &tally);
    }
    freeReplyObject(workers);
    if (returned)
        *returned = tally.returned;
    if (dead)
        *dead = tally.dead;
    return err;
}
