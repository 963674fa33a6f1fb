/**
 * @file dmw_reaper.c
 * @brief Chapter 07 exercise: the reaper, which gives the tasks of dead workers back.
 *
 * The master calls dmw_reap() every visibility_ms / 2 while it waits for a
 * batch. It returns ENOSYS until you write it; `make grade CH=07` scores
 * it together with dmw_worker.c.
 *
 * A worker is dead when its heartbeat key (dmw_key_alive()) has expired:
 * nothing else about a process on another machine can be known. A worker
 * that is only slow keeps heartbeating and must never lose its task.
 */
#define _POSIX_C_SOURCE 200809L
#include "dmw.h"

#include <errno.h>
#include <stdio.h>

#include "dmw_redis.h"
#include "kit_log.h"

int dmw_reap(dmw_redis_t *redis, long *returned, long *dead)
{
    /* TODO 0 - set *returned and *dead to 0 (each may be NULL); EINVAL for
     * a NULL redis.
     *
     * TODO 1 - list the members of the run's workers set
     * (dmw_redis_keys(redis)->workers): every worker that may hold tasks.
     * For each, ask whether its alive key (dmw_key_alive()) exists: if it
     * does, the worker is alive - leave it alone, however long its task
     * takes.
     *
     * TODO 2 - for a silent worker, read its whole processing list. For
     * each record: dmw_record_decode() it (a record that does not decode
     * goes to dmw_redis_move_back(redis, worker, record, record, NULL, NULL)
     * as it is). The delivery that died was attempt task.attempt + 1:
     * encode the record again with that count. If it reached max_attempts
     * (dmw_redis_config(redis)->max_attempts), pass dmw_redis_move_back() an
     * outcome of kind DMW_DEAD, worker "reaper", text "worker W stopped
     * heartbeating"; otherwise NULL, which puts it back on the queue. Count
     * what was really moved (the `moved` out parameter: false if someone
     * else got there first) into *returned or *dead, and
     * kit_log("reaper", ...) each move as on the page: "w0 stopped
     * heartbeating: task 1 (attempt 1 of 3) back on the queue" (or
     * "dead-lettered").
     *
     * Each step is one command; the page's protocol names them, Redis's
     * documentation gives their arguments and replies. Free every reply.
     * Do not remove a silent worker from the set: dmw_redis_forget_worker()
     * says why. */
    (void)redis;
    (void)returned;
    (void)dead;
    return ENOSYS;
}
