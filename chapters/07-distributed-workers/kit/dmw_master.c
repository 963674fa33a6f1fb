/**
 * @file dmw_master.c
 * @brief The master: submits tasks, waits for their outcomes while reaping,
 *        and reads the run's counts.
 *
 * DESIGN: the master keeps no state of its own that matters - the run is on
 * the server, so a master can crash and another take over. Completion is
 * "every task in `tasks` has an entry in `outcomes`". Waiting for it is the
 * kit's condition-variable recipe moved to a network: block on the `events`
 * list with a timeout (the wait), and after every wake-up count again (the
 * `while` around the wait). A hint can be lost - a worker may die between
 * its outcome and its LPUSH - and nothing is lost with it: the count is the
 * truth, the hints only make the master prompt.
 */
#define _POSIX_C_SOURCE 200809L
#include "dmw_master.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dmw_redis.h"
#include "kit_log.h"
#include "kit_time.h"

struct dmw_master {
    dmw_redis_t *redis;   /* used by the thread calling the master's functions */
    long submitted;       /* tasks this master submitted */
    int64_t next_reap_ns; /* when dmw_await() runs the reaper next */
};

/* A command on one key whose reply is a number (a missing key reads as 0). */
static int integer_command(dmw_redis_t *redis, long *value, const char *format, const char *key)
{
    redisReply *reply = NULL;
    int err = dmw_redis_call(redis, &reply, format, key);
    if (err == 0) {
        if (reply->type == REDIS_REPLY_INTEGER)
            *value = (long)reply->integer;
        else if (reply->type == REDIS_REPLY_STRING)
            *value = strtol(reply->str, NULL, 10);
        else
            *value = 0;
    }
    freeReplyObject(reply);
    return err;
}

int dmw_master_create(dmw_master_t **out, const dmw_config_t *config)
{
    if (out)
        *out = NULL;
    if (out == NULL || config == NULL)
        return EINVAL;
    dmw_master_t *m = calloc(1, sizeof *m);
    if (m == NULL)
        return ENOMEM;
    int err = dmw_redis_open(&m->redis, config);
    redisReply *reply = NULL;
    if (err == 0) /* (re)open the run: workers started now must not see an old stop */
        err = dmw_redis_call(m->redis, &reply, "DEL %s", dmw_redis_keys(m->redis)->shutdown);
    freeReplyObject(reply);
    if (err != 0) {
        dmw_redis_close(m->redis);
        free(m);
        return err;
    }
    *out = m;
    return 0;
}

void dmw_master_destroy(dmw_master_t *m)
{
    if (m == NULL)
        return;
    dmw_redis_close(m->redis);
    free(m);
}

int dmw_submit(dmw_master_t *m, long task_id, const char *payload)
{
    char record[DMW_RECORD_MAX];
    if (m == NULL || payload == NULL || task_id < 0 || strlen(payload) >= DMW_PAYLOAD_MAX ||
        dmw_record_encode(task_id, 0, payload, record, sizeof record) != 0)
        return EINVAL;
    int err = dmw_redis_submit(m->redis, task_id, payload, record);
    if (err == 0)
        m->submitted++;
    return err;
}

int dmw_shutdown(dmw_master_t *m)
{
    if (m == NULL)
        return EINVAL;
    redisReply *reply = NULL;
    int err = dmw_redis_call(m->redis, &reply, "SET %s 1", dmw_redis_keys(m->redis)->shutdown);
    freeReplyObject(reply);
    return err;
}

/* ---- waiting ------------------------------------------------------------------ */

/* Drop the hints and count in one step (dmw_redis_count()): an outcome
 * written after it leaves a hint for the next BLPOP, one written before it
 * is in the count. */
static int all_done(dmw_master_t *m, bool *done)
{
    long tasks = 0, outcomes = 0;
    int err = dmw_redis_count(m->redis, &tasks, &outcomes);
    if (err == 0 && tasks < m->submitted) {
        kit_log("master", "the server has %ld of the %ld tasks submitted: it lost the run", tasks, m->submitted);
        return EIO;
    }
    *done = err == 0 && outcomes >= tasks;
    return err;
}

static int reap_if_due(dmw_master_t *m)
{
    if (kit_now_ns() < m->next_reap_ns)
        return 0;
    long returned = 0, dead = 0;
    int err = dmw_reap(m->redis, &returned, &dead);
    if (err == 0 && (returned || dead))
        kit_log("master", "reaper: %ld task(s) back on the queue, %ld dead-lettered", returned, dead);
    long every_ms = dmw_redis_config(m->redis)->visibility_ms / 2;
    m->next_reap_ns = kit_now_ns() + (every_ms > 0 ? every_ms : 1) * 1000000LL;
    return err;
}

int dmw_await(dmw_master_t *m, long timeout_ms)
{
    if (m == NULL || timeout_ms < 0)
        return EINVAL;
    int64_t deadline = kit_now_ns() + (int64_t)timeout_ms * 1000000LL;
    for (;;) {
        bool done = false;
        int err = all_done(m, &done);
        if (err != 0 || done)
            return err;
        if ((err = reap_if_due(m)) != 0)
            return err;
        int64_t now = kit_now_ns();
        if (now >= deadline)
            return ETIMEDOUT;
        int64_t until = deadline < m->next_reap_ns ? deadline : m->next_reap_ns;
        long wait_ms = (long)((until - now) / 1000000LL) + 1;
        redisReply *reply = NULL;
        err = dmw_redis_block(m->redis, wait_ms, &reply, "BLPOP %s %.3f", dmw_redis_keys(m->redis)->events,
                              (double)wait_ms / 1000.0);
        freeReplyObject(reply);
        if (err != 0)
            return err;
    }
}

/* ---- reading the run ---------------------------------------------------------- */

int dmw_outcome(dmw_master_t *m, long task_id, dmw_outcome_t *out)
{
    if (m == NULL || out == NULL || task_id < 0)
        return EINVAL;
    redisReply *reply = NULL;
    int err = dmw_redis_call(m->redis, &reply, "HGET %s %ld", dmw_redis_keys(m->redis)->outcomes, task_id);
    if (err == 0)
        err = reply->type != REDIS_REPLY_STRING ? ENOENT : dmw_outcome_decode(task_id, reply->str, out);
    freeReplyObject(reply);
    return err;
}

/* HGETALL: one reply with every outcome, each exactly once (an HSCAN may
 * repeat entries while the hash grows). Fine for batches of this size. */
int dmw_outcomes(dmw_master_t *m, dmw_outcome_fn fn, void *ctx)
{
    if (m == NULL || fn == NULL)
        return EINVAL;
    redisReply *reply = NULL;
    int err = dmw_redis_call(m->redis, &reply, "HGETALL %s", dmw_redis_keys(m->redis)->outcomes);
    for (size_t i = 0; err == 0 && reply->type == REDIS_REPLY_ARRAY && i + 1 < reply->elements; i += 2) {
        dmw_outcome_t outcome;
        long id = strtol(reply->element[i]->str, NULL, 10);
        err = dmw_outcome_decode(id, reply->element[i + 1]->str, &outcome);
        if (err == 0)
            err = fn(&outcome, ctx);
    }
    freeReplyObject(reply);
    return err;
}

static int count_outcome(const dmw_outcome_t *outcome, void *ctx)
{
    dmw_stats_t *stats = ctx;
    stats->completed += outcome->kind == DMW_DONE;
    stats->failed += outcome->kind == DMW_FAILED;
    stats->dead_lettered += outcome->kind == DMW_DEAD;
    return 0;
}

/* Sum the processing lists of the registered workers. */
static int count_in_flight(dmw_master_t *m, dmw_stats_t *stats)
{
    redisReply *members = NULL;
    int err = dmw_redis_call(m->redis, &members, "SMEMBERS %s", dmw_redis_keys(m->redis)->workers);
    for (size_t i = 0; err == 0 && members->type == REDIS_REPLY_ARRAY && i < members->elements; i++) {
        char key[DMW_KEY_MAX];
        long length = 0;
        stats->workers++;
        if ((err = dmw_key_processing(m->redis, members->element[i]->str, key, sizeof key)) == 0)
            err = integer_command(m->redis, &length, "LLEN %s", key);
        stats->in_flight += length;
    }
    freeReplyObject(members);
    return err;
}

int dmw_stats(dmw_master_t *m, dmw_stats_t *out)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (m == NULL || out == NULL)
        return EINVAL;
    const dmw_keys_t *k = dmw_redis_keys(m->redis);
    int err = integer_command(m->redis, &out->submitted, "HLEN %s", k->tasks);
    if (err == 0)
        err = integer_command(m->redis, &out->retries, "GET %s", k->retries);
    if (err == 0)
        err = integer_command(m->redis, &out->queued, "LLEN %s", k->queue);
    if (err == 0)
        err = dmw_outcomes(m, count_outcome, out);
    if (err == 0)
        err = count_in_flight(m, out);
    if (err != 0)
        memset(out, 0, sizeof *out);
    return err;
}

static int purge_worker_keys(dmw_master_t *m)
{
    redisReply *members = NULL;
    int err = dmw_redis_call(m->redis, &members, "SMEMBERS %s", dmw_redis_keys(m->redis)->workers);
    for (size_t i = 0; err == 0 && members->type == REDIS_REPLY_ARRAY && i < members->elements; i++) {
        char processing[DMW_KEY_MAX], alive[DMW_KEY_MAX];
        redisReply *reply = NULL;
        const char *worker = members->element[i]->str;
        if (dmw_key_processing(m->redis, worker, processing, sizeof processing) == 0 &&
            dmw_key_alive(m->redis, worker, alive, sizeof alive) == 0)
            err = dmw_redis_call(m->redis, &reply, "DEL %s %s", processing, alive);
        freeReplyObject(reply);
    }
    freeReplyObject(members);
    return err;
}

int dmw_purge(dmw_master_t *m)
{
    if (m == NULL)
        return EINVAL;
    int err = purge_worker_keys(m);
    const dmw_keys_t *k = dmw_redis_keys(m->redis);
    redisReply *reply = NULL;
    if (err == 0)
        err = dmw_redis_call(m->redis, &reply, "DEL %s %s %s %s %s %s %s %s", k->queue, k->dead, k->outcomes,
                             k->tasks, k->workers, k->events, k->shutdown, k->retries);
    freeReplyObject(reply);
    if (err == 0)
        m->submitted = 0;
    return err;
}
