/**
 * @file mw_extensions.c
 * @brief Chapter 05 exercise, part 2 - the extensions on top of the core
 *        (mw_core.c, do it first): a limit on unconsumed results and the
 *        detector of its deadlock trap, announced consumers, the graceful
 *        stop.
 *
 * The hooks the core calls start out doing nothing - no limit, never stuck,
 * no stop - so that the core's tests pass before you begin here; each TODO
 * says what it must do. The public functions return ENOSYS until you write
 * them. Same rules as part 1: no lock held while calling into the queue,
 * every wait a `while` loop, plain `if`s.
 */
#define _POSIX_C_SOURCE 200809L
#include "mw_internal.h"

#include <errno.h>
#include <pthread.h>

#include "bq.h"
#include "kit_log.h"
#include "kit_time.h"

/* ---- the result limit and its trap (all called with the lock held) ---------------------- */

/* TODO (suggested helper): results_full_locked(): result_limit > 0, not
 * stopping, and as many results stored as the limit. */

void mw_wait_for_result_room_locked(mw_t *mw)
{
    /* TODO: if the results are full: count yourself as blocked, wake the
     * master if that makes it stuck, then wait on the room condition WHILE
     * they are full (another worker may take the slot a take freed), and
     * count yourself off again. For the program's trace, kit_log("mw", ...)
     * the wait ("8 results unconsumed: waiting for the master to take
     * one"). */
    (void)mw;
}

void mw_result_taken_locked(mw_t *mw)
{
    /* TODO: a slot is free: if workers are blocked, signal one. */
    (void)mw;
}

bool mw_stuck_locked(const mw_t *mw)
{
    /* TODO: the document's deadlock trap. Tasks are pending, the results
     * are full, no consumer is announced or waiting in mw_take_result, and
     * no worker can finish anything more: every pending task is held by a
     * worker blocked on the result limit, or every live worker is blocked.
     * mw_await() then returns EDEADLK. Read few, named things: one helper
     * per clause. */
    (void)mw;
    return false;
}

void mw_wake_master_if_stuck_locked(mw_t *mw)
{
    /* TODO: if stuck, broadcast to the masters waiting for pending == 0. */
    (void)mw;
}

/* ---- consumers ------------------------------------------------------------------------ */

int mw_consumer_begin(mw_t *mw)
{
    /* TODO: count an announced consumer. */
    (void)mw;
    return ENOSYS;
}

int mw_consumer_end(mw_t *mw)
{
    /* TODO: EINVAL if none is announced; otherwise count it off - and if
     * that leaves the workers stuck, wake the master. */
    (void)mw;
    return ENOSYS;
}

/* ---- the graceful stop ---------------------------------------------------------------- */

bool mw_cancelled_by_stop(mw_t *mw, struct record *rec)
{
    /* TODO: under the lock: if a stop passed its deadline, the task is not
     * run: record it as rejected (ECANCELED), count it in `cancelled`,
     * finish it, and return true. */
    (void)mw;
    (void)rec;
    return false;
}

int mw_stop(mw_t *mw, long timeout_ms)
{
    /* TODO: EINVAL / EDEADLK as mw_await. Close; wait like mw_await until
     * the deadline (with no worker alive, nobody would run what is queued:
     * do not wait). If tasks are still pending then: request the stop (the
     * STOPPING phase: mw_stop_requested() becomes true, the result limit is
     * lifted - wake the blocked workers), take every task still queued out
     * with bq_poll(queue, &item, 0) and record it as rejected with ECANCELED
     * (counted in `cancelled`; a poison pill goes back). Then end the
     * workers as mw_await does, without a deadline. Return ETIMEDOUT if this
     * stop cancelled anything, else 0. */
    (void)mw;
    (void)timeout_ms;
    return ENOSYS;
}

bool mw_stop_requested(mw_t *mw)
{
    /* TODO: true from the STOPPING phase on, read under the lock (false for NULL). */
    (void)mw;
    return false;
}
