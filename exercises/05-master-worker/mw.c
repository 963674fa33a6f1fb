/**
 * @file mw.c
 * @brief Chapter 05 exercise: master-worker with a pending counter, poison
 *        pills, result records, failures, rejections and back-pressure.
 *
 * Read chapters/05-master-worker/README.md, run `make run CH=05`, then
 * implement the functions below; `make grade CH=05` scores them. Every
 * function returns ENOSYS until you do. The queue is chapter 02's bq_t
 * (bq.h): use it, do not write another.
 *
 * The rules of this chapter:
 * - one record per task, from mw_submit() until someone takes it; it ends
 *   in exactly one of three lists: results, failed, rejected;
 * - `pending` goes up BEFORE the task is offered to the queue, and down
 *   only AFTER its result/failure/rejection is published - in the same
 *   critical section that publishes it;
 * - mw_await() waits on a condition variable until pending == 0 (never
 *   sleep-polling), then puts one poison pill per worker and joins them;
 * - never hold your lock while calling into the queue or the process function;
 * - every wait is a `while` loop that re-checks its condition.
 */
#define _POSIX_C_SOURCE 200809L
#include "mw.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "bq.h"
#include "kit_log.h"
#include "kit_thread.h"
#include "kit_time.h"

/* TODO: a record per task: the mw_task_t, the mw_result_t the worker fills
 * in before publishing, an error code, and a `next` pointer for the lists. */

/* TODO: a sentinel for the poison pill - any unique address will do, e.g.
 * `static struct record poison_pill;` and compare items against &poison_pill. */

struct mw {
    /* TODO, immutable after create: a copy of the config (copy the name too),
     * the bq_t *queue, an array of pthread_t for the workers.
     * A mutex, and one condition variable per thing someone waits for:
     * - the master (await/stop): pending reached 0, or the workers got stuck;
     * - the master again, when joining: a worker left;
     * - workers under result_limit: a result was taken (room);
     * - consumers in mw_take_result: a result was stored, or the results ended.
     * Make them with kit_cond_init(): timed waits use CLOCK_MONOTONIC.
     * Guarded by the mutex: pending; the three lists (head, tail, count);
     * started/closed/stop_requested/pills_sent/joined flags; how many
     * threads were started; registered and waiting consumers; mw_stats_t. */
    int placeholder; /* delete me */
};

/* TODO (suggested helpers, all called with the lock held):
 * - finish_task_locked(): pending--; at 0, broadcast to the master and to
 *   the consumers (closed + nothing pending = the results have ended);
 * - results_full_locked(): result_limit > 0, not stopping, count >= limit;
 * - stuck_locked(): pending > 0, results full, no consumer registered or
 *   waiting, and no worker can finish anything more: every pending task is
 *   held by a worker blocked on the result limit, or every live worker is
 *   blocked. That is the document's deadlock trap: mw_await returns EDEADLK
 *   then. (finish_task_locked() must wake the master when it becomes true.) */

/* TODO: the worker thread. Loop: bq_take(); a poison pill ends the loop;
 * a task taken after a stop request is recorded as rejected (ECANCELED)
 * and counted in `cancelled`;
 * otherwise call process() with no lock held and time it (kit_now_ns());
 * a non-zero return goes to the failed list - and the worker CARRIES ON;
 * a success fills the record's result (task id, data, cost in us) and
 * then publishes it in one critical section: wait WHILE the results are
 * full (count yourself as blocked, wake the master if now stuck), append,
 * completed++, finish_task_locked(). With on_result, call it before
 * publishing and do not store the record. When the loop ends: workers
 * alive--, wake the master. */

int mw_create(mw_t **out, const mw_config_t *config)
{
    /* TODO: EINVAL for NULL out (set *out = NULL otherwise), NULL config, 0
     * workers, 0 queue capacity, no process function. Allocate the struct,
     * the thread array, the queue (bq_create), the mutex and condition
     * variables; undo everything on any failure. */
    (void)out;
    (void)config;
    return ENOSYS;
}

int mw_start(mw_t *mw)
{
    /* TODO: EINVAL if NULL or already started, ECANCELED if already
     * stopped. Start config.workers threads with kit_thread_start(), named
     * "<name>-<n>". If one cannot start, stop the ones that did (mw_stop(mw, 0))
     * and return the error. */
    (void)mw;
    return ENOSYS;
}

int mw_submit(mw_t *mw, long task_id, void *payload, long timeout_ms)
{
    /* TODO: EINVAL for NULL or a negative timeout; ENOMEM if no record.
     * Under the lock: submitted++; refuse with ECANCELED (record it as
     * rejected right there - rejected, not cancelled: it was never
     * accepted; the caller keeps the payload) if a stop was requested, or if closed and the
     * caller is not one of this component's workers (sub-tasks may still
     * come after mw_close); otherwise pending++ - BEFORE the queue sees it.
     * Unlock, then bq_offer(queue, record, timeout_ms). If that fails:
     * under the lock, record it as rejected and finish_task_locked(). */
    (void)mw;
    (void)task_id;
    (void)payload;
    (void)timeout_ms;
    return ENOSYS;
}

int mw_await(mw_t *mw, long timeout_ms)
{
    /* TODO: EINVAL for NULL, a negative timeout (kit_deadline_after) or not
     * started; EDEADLK if called from one of this component's workers.
     * Under the lock, WHILE pending > 0 and not stuck and not timed out:
     * pthread_cond_timedwait with the one deadline. Stuck -> EDEADLK; timed
     * out -> ETIMEDOUT (nothing changes). At pending == 0: close, and if
     * nobody sent them yet, send one poison pill per started worker
     * (bq_put, outside the lock). Then wait - same deadline - until every
     * worker has left, and join them (only once). */
    (void)mw;
    (void)timeout_ms;
    return ENOSYS;
}

int mw_stop(mw_t *mw, long timeout_ms)
{
    /* TODO: EINVAL / EDEADLK as mw_await. Close; wait like mw_await until
     * the deadline. If tasks are still pending then: request the stop
     * (mw_stop_requested() becomes true, the result limit is lifted - wake
     * the blocked workers), take every task still queued out with
     * bq_poll(queue, &item, 0) and record it as rejected with ECANCELED
     * (counted in `cancelled`). Then wait without a deadline for the
     * running tasks, send the pills, join. Return ETIMEDOUT if this stop
     * cancelled anything, else 0. */
    (void)mw;
    (void)timeout_ms;
    return ENOSYS;
}

int mw_close(mw_t *mw)
{
    /* TODO: closed = true under the lock; wake the consumers (with nothing
     * pending, the results have ended). */
    (void)mw;
    return ENOSYS;
}

int mw_take_result(mw_t *mw, mw_result_t *out, long timeout_ms)
{
    /* TODO: EINVAL checks. Under the lock, count yourself as a waiting
     * consumer; WHILE no result is stored and the results have not ended
     * (closed and nothing pending) and not timed out: timed wait. Take the
     * oldest, copy it to *out, wake one blocked worker (a slot is free).
     * ECANCELED if the results ended, ETIMEDOUT otherwise. */
    (void)mw;
    (void)out;
    (void)timeout_ms;
    return ENOSYS;
}

int mw_take_failed(mw_t *mw, mw_failure_t *out)
{
    /* TODO: pop the oldest failed record (task + error) under the lock;
     * ENOENT if there is none. */
    (void)mw;
    (void)out;
    return ENOSYS;
}

int mw_take_rejected(mw_t *mw, mw_failure_t *out)
{
    /* TODO: as mw_take_failed, for the rejected list. */
    (void)mw;
    (void)out;
    return ENOSYS;
}

int mw_consumer_begin(mw_t *mw)
{
    /* TODO: count a registered consumer. */
    (void)mw;
    return ENOSYS;
}

int mw_consumer_end(mw_t *mw)
{
    /* TODO: EINVAL if none is registered; otherwise count it off - and if
     * that leaves the workers stuck, wake the master. */
    (void)mw;
    return ENOSYS;
}

bool mw_stop_requested(mw_t *mw)
{
    /* TODO: the flag, read under the lock (false for NULL). */
    (void)mw;
    return false;
}

int mw_stats(mw_t *mw, mw_stats_t *out)
{
    /* TODO: copy the counters under the lock; fill in pending and
     * unconsumed (the number of stored results). */
    (void)mw;
    (void)out;
    return ENOSYS;
}

void mw_destroy(mw_t *mw)
{
    /* TODO: NULL (or a call from one of its own workers) is a no-op.
     * mw_stop(mw, 0); free every record left in the three lists; destroy
     * the queue, the condition variables and the mutex; free the rest. */
    (void)mw;
}
