/**
 * @file dmw_scripts.c
 * @brief The protocol's multi-key steps, each one Lua script that the server
 *        runs as a single atomic step.
 *
 * Why scripts: "remove the task from the processing list *if it is still
 * there*, and then put it somewhere else" is two commands, and between them
 * another reaper or the late worker itself could act on the same task. A
 * script runs with nothing else in between - Redis's equivalent of holding
 * a mutex across a check and an update.
 */
#define _POSIX_C_SOURCE 200809L
#include "dmw_redis.h"

#include <errno.h>
#include <stdio.h>

/* KEYS: processing, queue, dead, outcomes, events, retries.
 * ARGV: record, requeued record, id ("" = not a task record), dead outcome
 * ("" = retry). A task that already has an outcome (its worker died between
 * writing it and acknowledging) is only removed: a second delivery would
 * do nothing. */
static const char move_back_script[] =
    "if redis.call('LREM', KEYS[1], 1, ARGV[1]) == 0 then return 0 end\n"
    "if ARGV[3] == '' then redis.call('LPUSH', KEYS[3], ARGV[1]) return 1 end\n"
    "if redis.call('HEXISTS', KEYS[4], ARGV[3]) == 1 then\n"
    "  redis.call('LPUSH', KEYS[5], ARGV[3]) return 1 end\n"
    "if ARGV[4] == '' then\n"
    "  redis.call('LPUSH', KEYS[2], ARGV[2]) redis.call('INCR', KEYS[6])\n"
    "else\n"
    "  redis.call('HSETNX', KEYS[4], ARGV[3], ARGV[4]) redis.call('LPUSH', KEYS[3], ARGV[2])\n"
    "  redis.call('LPUSH', KEYS[5], ARGV[3])\n"
    "end\n"
    "return 1\n";

/* KEYS: workers, processing, alive.  ARGV: worker. */
static const char forget_script[] =
    "if redis.call('LLEN', KEYS[2]) > 0 then return 0 end\n"
    "redis.call('DEL', KEYS[3])\n"
    "return redis.call('SREM', KEYS[1], ARGV[1])\n";

/* KEYS: tasks, queue.  ARGV: id, payload, record. */
static const char submit_script[] =
    "if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end\n"
    "redis.call('LPUSH', KEYS[2], ARGV[3])\n"
    "return 1\n";

/* KEYS: events, tasks, outcomes. */
static const char count_script[] =
    "redis.call('DEL', KEYS[1])\n"
    "return { redis.call('HLEN', KEYS[2]), redis.call('HLEN', KEYS[3]) }\n";

/* The integer a script returned (and the reply freed). */
static int integer_reply(int err, redisReply *reply, long long *value)
{
    if (err != 0)
        return err;
    int result = reply->type == REDIS_REPLY_INTEGER ? 0 : EPROTO;
    *value = reply->type == REDIS_REPLY_INTEGER ? reply->integer : 0;
    freeReplyObject(reply);
    return result;
}

int dmw_redis_move_back(dmw_redis_t *redis, const char *worker, const char *record, const char *requeued,
                        const dmw_outcome_t *dead, bool *moved)
{
    char processing[DMW_KEY_MAX], outcome[DMW_OUTCOME_MAX] = "";
    if (moved)
        *moved = false;
    if (redis == NULL || record == NULL || requeued == NULL || dmw_key_processing(redis, worker, processing,
                                                                                   sizeof processing) != 0)
        return EINVAL;
    if (dead && dmw_outcome_encode(dead, outcome, sizeof outcome) != 0)
        return EINVAL;
    const dmw_keys_t *k = dmw_redis_keys(redis);
    dmw_task_t task;
    char id[24] = ""; /* stays "" for a record that is not a task: it is buried as it is */
    if (dmw_record_decode(record, &task) == 0)
        snprintf(id, sizeof id, "%ld", task.id);
    redisReply *reply = NULL;
    int err = dmw_redis_call(redis, &reply, "EVAL %s 6 %s %s %s %s %s %s %s %s %s %s", move_back_script,
                             processing, k->queue, k->dead, k->outcomes, k->events, k->retries, record, requeued,
                             id, outcome);
    long long value = 0;
    err = integer_reply(err, reply, &value);
    if (err == 0 && moved)
        *moved = value == 1;
    return err;
}

int dmw_redis_forget_worker(dmw_redis_t *redis, const char *worker, bool *removed)
{
    char processing[DMW_KEY_MAX], alive[DMW_KEY_MAX];
    if (removed)
        *removed = false;
    if (redis == NULL || dmw_key_processing(redis, worker, processing, sizeof processing) != 0 ||
        dmw_key_alive(redis, worker, alive, sizeof alive) != 0)
        return EINVAL;
    redisReply *reply = NULL;
    int err = dmw_redis_call(redis, &reply, "EVAL %s 3 %s %s %s %s", forget_script,
                             dmw_redis_keys(redis)->workers, processing, alive, worker);
    long long value = 0;
    err = integer_reply(err, reply, &value);
    if (err == 0 && removed)
        *removed = value == 1;
    return err;
}

int dmw_redis_submit(dmw_redis_t *redis, long id, const char *payload, const char *record)
{
    if (redis == NULL || payload == NULL || record == NULL || id < 0)
        return EINVAL;
    const dmw_keys_t *k = dmw_redis_keys(redis);
    redisReply *reply = NULL;
    int err = dmw_redis_call(redis, &reply, "EVAL %s 2 %s %s %ld %s %s", submit_script, k->tasks, k->queue, id,
                             payload, record);
    long long value = 0;
    err = integer_reply(err, reply, &value);
    return err == 0 && value == 0 ? EEXIST : err;
}

int dmw_redis_count(dmw_redis_t *redis, long *tasks, long *outcomes)
{
    if (redis == NULL || tasks == NULL || outcomes == NULL)
        return EINVAL;
    const dmw_keys_t *k = dmw_redis_keys(redis);
    redisReply *reply = NULL;
    int err = dmw_redis_call(redis, &reply, "EVAL %s 3 %s %s %s", count_script, k->events, k->tasks, k->outcomes);
    if (err == 0 && (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2))
        err = EPROTO;
    if (err == 0) {
        *tasks = (long)reply->element[0]->integer;
        *outcomes = (long)reply->element[1]->integer;
    }
    freeReplyObject(reply);
    return err;
}
