/**
 * @file mw_core.c
 * @brief Chapter 05 exercise, part 1 - the core: a pending counter, poison
 *        pills, result records, failures and rejections.
 *
 * Read chapters/05-master-worker/README.md, run `make run CH=05`, then
 * implement the functions below; `make grade CH=05` scores them (the core's
 * tests come first in its list). Every function returns ENOSYS until you do.
 * Then go on to part 2, mw_extensions.c. The queue is chapter 02's bq_t
 * (bq.h): use it, do not write another. The state both files share goes in
 * mw_internal.h.
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
 * - every wait is a `while` loop that re-checks its condition;
 * - one way to undo a failed create: the goto ladder of xv6's pipealloc -
 *   each step that fails jumps to the label that undoes the steps before it,
 *   in reverse order;
 * - plain statements: an `if`, not arithmetic on booleans or nested `?:`.
 */
#define _POSIX_C_SOURCE 200809L
#include "mw_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "bq.h"
#include "kit_log.h"
#include "kit_thread.h"
#include "kit_time.h"

/* TODO: a sentinel for the poison pill - any unique address will do, e.g.
 * `static struct record poison_pill;` and compare items against &poison_pill.
 * And a `static _Thread_local mw_t *current_mw`, set by each worker: it tells
 * mw_submit() that a sub-task comes from a running task, and mw_await() that
 * it is called from a task (EDEADLK). */

/* TODO (suggested helpers, all called with the lock held):
 * - mw_finish_task_locked(): pending--; at 0, broadcast to the master and to
 *   the consumers (closed + nothing pending = the results have ended);
 *   otherwise ask mw_wake_master_if_stuck_locked() (part 2);
 * - mw_reject_locked(): the record goes to the rejected list, counted;
 * - mw_close_locked(): enter the CLOSED phase (if not past it), wake the
 *   consumers. */

/* TODO (the program's trace): the page's run shows what happens inside the
 * component in lines of its own. Log them with kit_log("mw", ...), with the
 * lock held where the thing happens, so that their order is the order of
 * events: a task recorded as failed ("task 7 failed (EIO): recorded" -
 * kit_errno_name() in kit_errno.h names the code) or as rejected ("task 7
 * rejected (ETIMEDOUT): recorded"); a worker going on after a failure ("the
 * worker carries on"); the pills ("nothing pending: one poison pill for each
 * of 4 workers"); a worker leaving ("poison pill: leaving, 3 worker(s)
 * left"). No test reads them: they are for you, when you run the program. */

/* TODO: the worker thread. Loop: bq_take(); a poison pill ends the loop;
 * ask mw_cancelled_by_stop() first (part 2: a task taken after a stop is not
 * run); otherwise call process() with no lock held and time it (kit_now_ns());
 * a non-zero return goes to the failed list - and the worker CARRIES ON;
 * a success fills the record's result (task id, data, cost in us) and
 * then publishes it in one critical section: mw_wait_for_result_room_locked()
 * (part 2), append, completed++, mw_finish_task_locked(). With on_result, call
 * it before publishing and do not store the record. When the loop ends:
 * workers alive--, wake the master joining them. */

int mw_create(mw_t **out, const mw_config_t *config)
{
    /* TODO: EINVAL for NULL out (set *out = NULL otherwise), NULL config, 0
     * workers, 0 queue capacity, no process function. Allocate the struct,
     * the thread array, the queue (bq_create), the mutex and condition
     * variables; on any failure, undo the steps before it with the goto
     * ladder (rule 3 above). */
    (void)out;
    (void)config;
    return ENOSYS;
}

int mw_start(mw_t *mw)
{
    /* TODO: EINVAL if NULL or already running, ECANCELED if already closed
     * or stopped. Start config.workers threads with kit_thread_start(), named
     * "<name>-<n>". If one cannot start, stop the ones that did (mw_stop(mw,
     * 0), part 2) and return the error. */
    (void)mw;
    return ENOSYS;
}

int mw_submit(mw_t *mw, long task_id, void *payload, long timeout_ms)
{
    /* TODO: EINVAL for NULL or a negative timeout; ENOMEM if no record.
     * Under the lock: submitted++; refuse with ECANCELED (record it as
     * rejected right there - rejected, not cancelled: it was never
     * accepted; the caller keeps the payload) if a stop was requested, or
     * if closed and the caller is not one of this component's workers
     * (sub-tasks may still come after mw_close); otherwise pending++ -
     * BEFORE the queue sees it. Unlock, then bq_offer(queue, record,
     * timeout_ms). If that fails: under the lock, record it as rejected and
     * mw_finish_task_locked(). */
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
     * Under the lock, WHILE pending > 0 and not mw_stuck_locked() (part 2)
     * and not timed out: pthread_cond_timedwait with the one deadline.
     * Stuck -> EDEADLK; timed out -> ETIMEDOUT (nothing changes). At
     * pending == 0: close, and if nobody sent them yet (the ENDING phase),
     * send one poison pill per started worker (bq_put, outside the lock).
     * Then wait - same deadline - until every worker has left, and join them
     * (only once: the ENDED phase). mw_stop() ends the same way: share it. */
    (void)mw;
    (void)timeout_ms;
    return ENOSYS;
}

int mw_close(mw_t *mw)
{
    /* TODO: close under the lock; wake the consumers (with nothing
     * pending, the results have ended). */
    (void)mw;
    return ENOSYS;
}

int mw_take_result(mw_t *mw, mw_result_t *out, long timeout_ms)
{
    /* TODO: EINVAL checks. Under the lock, count yourself as a waiting
     * consumer; WHILE no result is stored and the results have not ended
     * (closed and nothing pending) and not timed out: timed wait. Take the
     * oldest, copy it to *out, and tell mw_result_taken_locked() (part 2: a
     * slot is free). ECANCELED if the results ended, ETIMEDOUT otherwise. */
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

int mw_stats(mw_t *mw, mw_stats_t *out)
{
    /* TODO: under the lock, fill *out from the counters, pending, the number
     * of stored results (unconsumed), workers alive and blocked. */
    (void)mw;
    (void)out;
    return ENOSYS;
}

void mw_destroy(mw_t *mw)
{
    /* TODO: NULL (or a call from one of its own workers) is a no-op.
     * mw_stop(mw, 0) (part 2); free every record left in the three lists;
     * destroy the queue, the condition variables and the mutex; free the
     * rest. */
    (void)mw;
}
