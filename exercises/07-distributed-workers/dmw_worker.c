/**
 * @file dmw_worker.c
 * @brief Chapter 07 exercise: a worker's take - work - outcome - acknowledge loop.
 *
 * Read chapters/07-distributed-workers/README.md, run `make run CH=07`, then
 * write dmw_worker_run() below (and dmw_reap() in dmw_reaper.c); `make
 * grade CH=07` scores them. It returns ENOSYS until you do.
 *
 * What the kit gives you (chapters/07-distributed-workers/kit/dmw_redis.h):
 * - dmw_redis_open() / dmw_redis_close(): a connection to the run;
 *   dmw_redis_call(r, &reply, "GET %s", key) sends one command - a
 *   printf-style format, each %s or %ld one argument of the command - and
 *   reconnects by itself when the connection drops; dmw_redis_block() is
 *   the same for a command that waits on the server. Free every reply with
 *   freeReplyObject(). On error they return an errno value: pass it up, do
 *   not loop on it (the kit has already retried for reconnect_ms).
 * - dmw_redis_keys(r)->queue, ->outcomes, ->events, ->shutdown, and
 *   dmw_key_processing(r, name, ...): the run's keys.
 * - dmw_record_decode() / dmw_record_encode(), dmw_outcome_encode(): the
 *   texts that travel in the lists and the hash.
 * - dmw_redis_move_back(): put a record back on the queue, or bury it in
 *   the dead letters, in one atomic step.
 * - dmw_heartbeat_start() / dmw_heartbeat_stop(): keep the worker alive.
 *
 * The order of the steps is the whole lesson (see the page's chart):
 *   take -> work -> outcome -> acknowledge -> hint.
 * Write small static helpers, one per step.
 */
#define _POSIX_C_SOURCE 200809L
#include "dmw.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "dmw_redis.h"
#include "kit_log.h"

int dmw_worker_run(const dmw_config_t *config, const dmw_worker_config_t *worker, dmw_worker_stats_t *stats)
{
    /* TODO 0 - arguments. Zero *stats first (if it is not NULL), even when
     * you then return an error. EINVAL for: NULL config or worker, no
     * process function, a name that is not NULL but fails dmw_name_ok(), a
     * negative take_timeout_ms or max_tasks. A take_timeout_ms of 0 means
     * 200. A NULL name means one of your choice, e.g. "HOST-PID".
     *
     * TODO 1 - connect: dmw_redis_open(&redis, config); on error return it
     * (that is how an unreachable server is reported). Build your
     * processing key with dmw_key_processing(). Start the heartbeat with
     * dmw_heartbeat_start(&heartbeat, config, name): from then on the
     * worker is registered in the run and alive.
     *
     * TODO 2 - loop until max_tasks deliveries (if not 0). Each step below
     * is one command; the page's protocol says which, and Redis's
     * documentation gives its arguments and its reply.
     *   take: the oldest task of the queue must reach your processing list
     *     in ONE atomic step, the server blocking for at most
     *     take_timeout_ms (dmw_redis_block(); mind the unit the command
     *     wants). A reply that is no string: the queue stayed empty. Then
     *     ask whether the shutdown key exists: if it does, the run is over -
     *     but tasks submitted just before the shutdown may have arrived
     *     after your empty take, so take once more, and leave (return 0)
     *     only when that take, begun after you saw the key, finds the queue
     *     empty.
     *     After a reconnection (dmw_redis_reconnected()), a take whose reply
     *     was lost may have moved a task into your list without you knowing:
     *     before taking from the queue, look at the oldest record of your
     *     own processing list; while there is one, it is yours - handle it
     *     (count stats->adopted).
     *   work: dmw_record_decode() the record (a record that does not
     *     decode goes to dmw_redis_move_back(r, name, record, record, NULL,
     *     NULL) as it is). The record counts the attempts that already
     *     ended, so this delivery is task.attempt + 1. Call
     *     worker->process(&task, text, sizeof text, worker->ctx).
     *   0, or an error other than EAGAIN - the task has an outcome (kind
     *     DMW_DONE or DMW_FAILED, your name, the attempt, the text - or the
     *     error's name if the text is empty; dmw_outcome_encode()), and
     *     three things must happen on the server, in an order that survives
     *     a crash between any two of them: the outcome written into the
     *     outcomes hash, under the task's id, ONLY IF the task has none yet
     *     (the reply tells you whether you wrote it: if not, this was a
     *     duplicate delivery - count it and write nothing else); the
     *     record, exactly as taken, removed from your processing list (the
     *     acknowledgement); the task's id pushed onto the events list (the
     *     master's hint). The page's table of crashes tells you the order.
     *   EAGAIN: not an outcome. Encode the record again with this attempt
     *     counted; if this was attempt max_attempts
     *     (dmw_redis_config(redis)->max_attempts), give dmw_redis_move_back()
     *     a DMW_DEAD outcome, else NULL (back on the queue).
     *   Keep stats as you go (taken, completed, failed, retried,
     *   dead_lettered, duplicates, adopted), and kit_log("worker", ...) what
     *   happens, so that the program's trace tells the story as on the page:
     *   "took task 3 (attempt 1): PAYLOAD", "task 3 (attempt 1) done: TEXT"
     *   (or "failed for good"), "task 3 (attempt 2 of 3) failed: TEXT - back
     *   on the queue" (or "- dead-lettered"), "task 3 already had an outcome:
     *   duplicate delivery, nothing written". No test reads them.
     *
     * TODO 3 - leave: dmw_heartbeat_stop(heartbeat, true) (a goodbye: the
     * worker leaves the run if its processing list is empty), set
     * stats->reconnects from dmw_redis_reconnects(), close the connection,
     * and return 0 - or the error that ended the loop. A step of TODO 1
     * that fails undoes the ones before it with a goto ladder, the kit's
     * one way (exercises/00-shared-results/HINTS.md, hint 3): e.g. a failed
     * heartbeat jumps to a close_redis label just before the close. */
    (void)config;
    (void)worker;
    (void)stats;
    return ENOSYS;
}
