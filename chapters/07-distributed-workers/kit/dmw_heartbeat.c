/**
 * @file dmw_heartbeat.c
 * @brief A worker's heartbeat: a thread that keeps `alive:W` from expiring.
 *
 * DESIGN: the beat is a key with a time-to-live of `visibility_ms`, refreshed
 * every `visibility_ms / 4`. The server forgets the key by itself when the
 * beats stop - whatever stopped them: a crash, a frozen process, a broken
 * network - and an expired key is all the reaper needs to see. Three missed
 * beats in a row are tolerated, so a loaded machine is not taken for dead.
 *
 * The thread has its own connection (a hiredis context belongs to one
 * thread) and sleeps on a condition variable with a deadline, so stopping it
 * never waits out a beat interval.
 */
#define _POSIX_C_SOURCE 200809L
#include "dmw_redis.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "kit_log.h"
#include "kit_thread.h"
#include "kit_time.h"

struct dmw_heartbeat {
    /* Immutable after start: */
    char worker[DMW_NAME_MAX];
    char alive[DMW_KEY_MAX];
    long ttl_ms, interval_ms;
    pthread_t thread;
    /* Used by the heartbeat thread only, and by stop once it has joined it: */
    dmw_redis_t *redis;
    /* Guarded by lock: */
    pthread_mutex_t lock;
    pthread_cond_t stop_requested; /* signalled once, when stopping becomes true */
    bool stopping;
};

/* SET before SADD: a reaper that sees the worker in the set will, most of
 * the time, also see it alive; when it does not, the forget script re-checks. */
static int beat(dmw_heartbeat_t *hb)
{
    redisReply *reply = NULL;
    int err = dmw_redis_call(hb->redis, &reply, "SET %s 1 PX %ld", hb->alive, hb->ttl_ms);
    freeReplyObject(reply);
    reply = NULL;
    if (err == 0)
        err = dmw_redis_call(hb->redis, &reply, "SADD %s %s", dmw_redis_keys(hb->redis)->workers, hb->worker);
    freeReplyObject(reply);
    return err;
}

static void *beat_loop(void *raw)
{
    dmw_heartbeat_t *hb = raw;
    pthread_mutex_lock(&hb->lock);
    while (!hb->stopping) {
        struct timespec deadline;
        kit_deadline_after(hb->interval_ms, &deadline);
        /* while, not if: a spurious wake-up must not cut the interval short */
        while (!hb->stopping && pthread_cond_timedwait(&hb->stop_requested, &hb->lock, &deadline) != ETIMEDOUT)
            ;
        if (hb->stopping)
            break;
        pthread_mutex_unlock(&hb->lock); /* never hold the lock across the network */
        int err = beat(hb);
        if (err != 0)
            kit_log("heartbeat", "beat failed: %s", dmw_errno_name(err));
        pthread_mutex_lock(&hb->lock);
    }
    pthread_mutex_unlock(&hb->lock);
    return NULL;
}

/* The lock and the condvar; on failure, neither is left initialised. */
static int init_sync(dmw_heartbeat_t *hb)
{
    int err = pthread_mutex_init(&hb->lock, NULL);
    if (err != 0)
        return err;
    if ((err = kit_cond_init(&hb->stop_requested)) != 0)
        pthread_mutex_destroy(&hb->lock);
    return err;
}

int dmw_heartbeat_start(dmw_heartbeat_t **out, const dmw_config_t *config, const char *worker)
{
    if (out)
        *out = NULL;
    if (out == NULL || config == NULL || !dmw_name_ok(worker))
        return EINVAL;
    dmw_heartbeat_t *hb = calloc(1, sizeof *hb);
    if (hb == NULL)
        return ENOMEM;
    int err = dmw_redis_open(&hb->redis, config);
    if (err != 0)
        goto free_hb;
    snprintf(hb->worker, sizeof hb->worker, "%s", worker);
    dmw_key_alive(hb->redis, worker, hb->alive, sizeof hb->alive);
    hb->ttl_ms = dmw_redis_config(hb->redis)->visibility_ms;
    hb->interval_ms = 1;
    if (hb->ttl_ms / 4 > 0)
        hb->interval_ms = hb->ttl_ms / 4;
    if ((err = beat(hb)) != 0) /* alive and registered before the first take */
        goto close_redis;
    if ((err = init_sync(hb)) != 0)
        goto close_redis;
    char name[KIT_THREAD_NAME_MAX];
    snprintf(name, sizeof name, "%.20s-hb", worker);
    if ((err = kit_thread_start(&hb->thread, name, beat_loop, hb)) != 0)
        goto destroy_sync;
    *out = hb;
    return 0;

    /* Undo in reverse order: each label undoes the step before the one that failed. */
destroy_sync:
    pthread_cond_destroy(&hb->stop_requested);
    pthread_mutex_destroy(&hb->lock);
close_redis:
    dmw_redis_close(hb->redis);
free_hb:
    free(hb);
    return err;
}

void dmw_heartbeat_stop(dmw_heartbeat_t *hb, bool goodbye)
{
    if (hb == NULL)
        return;
    pthread_mutex_lock(&hb->lock);
    hb->stopping = true;
    pthread_cond_signal(&hb->stop_requested);
    pthread_mutex_unlock(&hb->lock);
    pthread_join(hb->thread, NULL);
    if (goodbye)
        dmw_redis_forget_worker(hb->redis, hb->worker, NULL);
    pthread_cond_destroy(&hb->stop_requested);
    pthread_mutex_destroy(&hb->lock);
    dmw_redis_close(hb->redis);
    free(hb);
}
