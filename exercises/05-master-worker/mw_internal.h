/**
 * @file mw_internal.h
 * @brief Chapter 05 exercise, private: the component's state, shared by its
 *        two files - mw_core.c (do it first: the pending counter, the poison
 *        pills, the three lists) and mw_extensions.c (then: the result limit
 *        and its trap, consumers, the graceful stop).
 *
 * The functions declared below are the seam between the two files: the core
 * calls the extensions' hooks, and mw_extensions.c starts with hooks that do
 * nothing (no limit, never stuck, no stop), so the core works on its own.
 * Change the seam if your design needs another one.
 *
 * Lock order: one lock. Never hold it while calling into the queue (bq_*
 * may block) or the process function. `*_locked` functions are called
 * with it held.
 */
#ifndef MW_INTERNAL_H
#define MW_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "bq.h"
#include "kit_thread.h"
#include "mw.h"

/* TODO: a record per task: the mw_task_t, the mw_result_t the worker fills
 * in before publishing, an error code, and a `next` pointer for the lists.
 * And a FIFO list of records: head, tail, count. */
struct record;

/* TODO: the phase of the component, one enum instead of a handful of flags.
 * It only moves forward, so each rule is one comparison; write the
 * transitions in one comment here, and enter each phase in one place:
 *   CREATED  -> RUNNING   mw_start()
 *   RUNNING  -> CLOSED    mw_close(), mw_stop(), mw_await() at pending 0
 *   CLOSED   -> STOPPING  mw_stop()'s deadline passed, tasks still pending
 *   CLOSED or STOPPING -> ENDING  pending reached 0: whoever moves it sends the pills
 *   ENDING   -> ENDED     every worker left: whoever moves it joins them */

struct mw {
    /* TODO, immutable after create: a copy of the config (copy the name too),
     * the bq_t *queue, an array of pthread_t for the workers.
     * A mutex, and one condition variable per thing someone waits for:
     * - the master (await/stop): pending reached 0, or the workers got stuck;
     * - the master again, when joining: a worker left;
     * - workers under result_limit: a result was taken (room);
     * - consumers in mw_take_result: a result was stored, or the results ended.
     * Make them with kit_cond_init(): timed waits use CLOCK_MONOTONIC.
     * Guarded by the mutex, what the logic decides on: the phase; pending;
     * the three lists; threads started; workers alive; workers blocked on
     * the result limit; consumers announced and waiting. And, apart, the
     * counters only mw_stats() reports (submitted, completed, failed,
     * rejected, cancelled, most unconsumed): fill an mw_stats_t from all of
     * them when it is read, never keep one. */
    int placeholder; /* delete me */
};

/* ---- mw_core.c, for mw_extensions.c -------------------------------------------------- */

/* Is the calling thread one of this component's workers? */
bool mw_called_from_worker(const mw_t *mw);

/* Is this queue item the poison pill (not a task)? */
bool mw_is_poison_pill(const void *item);

/* Closed to the outside (only sub-tasks are accepted); wakes the consumers. */
void mw_close_locked(mw_t *mw);

/* A task is finished: its result, failure or rejection has just been
 * published, in this same critical section. */
void mw_finish_task_locked(mw_t *mw);

/* Records a task that never ran in the rejected list, with why. */
void mw_reject_locked(mw_t *mw, struct record *rec, int why);

/* Waits for pending == 0 until the deadline (NULL: no limit).
 * 0; EDEADLK when it can never happen; ETIMEDOUT. */
int mw_wait_for_pending_locked(mw_t *mw, const struct timespec *deadline);

/* Waits for pending == 0 until the deadline (NULL: no limit), then stops the
 * workers - one pill each, sent once - and joins them. 0, EDEADLK or ETIMEDOUT. */
int mw_end_workers(mw_t *mw, const struct timespec *deadline);

/* ---- mw_extensions.c, for mw_core.c -------------------------------------------------- */

/* Before storing a result: waits while the results are at result_limit. */
void mw_wait_for_result_room_locked(mw_t *mw);

/* A result was taken: one worker waiting for room may store its own. */
void mw_result_taken_locked(mw_t *mw);

/* The deadlock trap: waiting for pending == 0 could never end. */
bool mw_stuck_locked(const mw_t *mw);

/* Wakes the masters waiting for pending == 0 if their wait can no longer end. */
void mw_wake_master_if_stuck_locked(mw_t *mw);

/* A task taken from the queue after a stop passed its deadline is not
 * started: it is recorded as not done (and finished). Takes the lock. */
bool mw_cancelled_by_stop(mw_t *mw, struct record *rec);

#endif
