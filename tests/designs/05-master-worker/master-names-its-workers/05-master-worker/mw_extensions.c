/**
 * @file mw_extensions.c
 * @brief Chapter 05 solution, the extensions on top of the core
 *        (mw_core.c): a limit on unconsumed results and the detector of its
 *        deadlock trap, announced consumers, and the graceful stop.
 *
 * DESIGN. With `result_limit` set, a worker whose result finds the results
 * full waits on `result_room` - counted in `workers_blocked` while it does -
 * until a take makes room or a stop lifts the limit. The trap: a master
 * waiting for pending == 0 while nobody consumes. Every change that can
 * close its last way out (a worker starting to wait, a task finishing, the
 * last consumer leaving) asks stuck_locked() and, if the wait can no longer
 * end, wakes the master, whose mw_await() returns EDEADLK.
 *
 * mw_stop() closes, lets the queued tasks run until its deadline, and then -
 * if tasks are still pending - moves the phase to STOPPING: nothing more is
 * accepted, the limit is lifted, and every task still queued is taken out
 * (by mw_stop() or by the worker that finds it first) and recorded as
 * rejected with ECANCELED. Then it ends the workers as mw_await() does.
 *
 * Lock order: as in mw_core.c - `lock` is never held while calling into the
 * queue, nor while a process function runs.
 */
#define _POSIX_C_SOURCE 200809L
#include "mw_internal.h"

#include <errno.h>
#include <pthread.h>

#include "bq.h"
#include "kit_log.h"
#include "kit_time.h"
#include "kit_trace.h"

/* ---- the result limit and its trap (all called with lock held) --------------------- */

static bool results_full_locked(const mw_t *mw)
{
    if (mw->config.result_limit == 0 || mw->phase >= PHASE_STOPPING)
        return false; /* no limit, or a stop lifted it */
    return mw->results.count >= mw->config.result_limit;
}

/* A thread will make room: one announced as a consumer, or one waiting in
 * mw_take_result() now. */
static bool someone_consumes_locked(const mw_t *mw)
{
    return mw->consumers > 0 || mw->waiting_consumers > 0;
}

/* Every pending task is held by a worker waiting for room (idle workers
 * cannot help: there is nothing left for them to take), or every live
 * worker waits for room (the queued tasks cannot even start). */
static bool no_worker_can_finish_locked(const mw_t *mw)
{
    return mw->workers_blocked == mw->pending || mw->workers_blocked == mw->workers_alive;
}

/* PAGE: trap-detector. Waiting for pending == 0 could never end: the
 * results are full, no thread consumes them (the master itself is the one
 * waiting), and no worker can finish anything more - every pending task is
 * held by a worker waiting for room, or every live worker waits for room,
 * so the queued tasks cannot even start. Idle workers cannot help. */
bool mw_stuck_locked(const mw_t *mw)
{
    if (mw->pending == 0 || !results_full_locked(mw) || someone_consumes_locked(mw))
        return false;
    return no_worker_can_finish_locked(mw);
}

void mw_wake_master_if_stuck_locked(mw_t *mw)
{
    if (mw_stuck_locked(mw))
        pthread_cond_broadcast(&mw->settled);
}

void mw_wait_for_result_room_locked(mw_t *mw)
{
    if (!results_full_locked(mw))
        return;
    mw->workers_blocked++;
    kit_log("mw", "%zu results unconsumed: waiting for the master to take one", mw->results.count);
    mw_wake_master_if_stuck_locked(mw);
    kit_trace_begin("mw", "waiting for result room");
    /* PAGE: result-limit. while, not if: the wake-up may be spurious, or
     * another worker may fill the slot that a take freed. */
    while (results_full_locked(mw))
        pthread_cond_wait(&mw->result_room, &mw->lock);
    kit_trace_end("mw");
    mw->workers_blocked--;
}

void mw_result_taken_locked(mw_t *mw)
{
    if (mw->workers_blocked > 0)
        pthread_cond_signal(&mw->result_room); /* one slot freed: one worker may store */
}

/* ---- consumers ---------------------------------------------------------------------- */

int mw_consumer_begin(mw_t *mw)
{
    if (mw == NULL)
        return EINVAL;
    pthread_mutex_lock(&mw->lock);
    mw->consumers++;
    pthread_mutex_unlock(&mw->lock);
    return 0;
}

int mw_consumer_end(mw_t *mw)
{
    if (mw == NULL)
        return EINVAL;
    int err = EINVAL; /* no consumer announced */
    pthread_mutex_lock(&mw->lock);
    if (mw->consumers > 0) {
        mw->consumers--;
        err = 0;
    }
    mw_wake_master_if_stuck_locked(mw); /* the last consumer may have been the only way out */
    pthread_mutex_unlock(&mw->lock);
    return err;
}

/* ---- the graceful stop --------------------------------------------------------------- */

/* A task mw_submit() had accepted, taken out of the queue after a stop passed
 * its deadline: rejected, counted in `cancelled`, and finished. */
static void cancel_locked(mw_t *mw, struct record *rec)
{
    mw_reject_locked(mw, rec, ECANCELED);
    mw->count.cancelled++;
    mw_finish_task_locked(mw);
}

bool mw_cancelled_by_stop(mw_t *mw, struct record *rec)
{
    pthread_mutex_lock(&mw->lock);
    bool cancel = mw->phase >= PHASE_STOPPING;
    if (cancel)
        cancel_locked(mw, rec);
    pthread_mutex_unlock(&mw->lock);
    return cancel;
}

/* PAGE: graceful-stop. The deadline has passed: tasks check
 * mw_stop_requested(), new sub-tasks are refused, and blocked workers may
 * store their results beyond the limit - nothing is dropped. */
static void request_stop_locked(mw_t *mw)
{
    kit_log("mw", "stop: %zu task(s) still pending", mw->pending);
    if (mw->phase < PHASE_STOPPING)
        mw->phase = PHASE_STOPPING;
    pthread_cond_broadcast(&mw->result_room);
}

/* After the deadline, every task still queued is recorded as not done. */
static void cancel_queued(mw_t *mw)
{
    void *item;
    while (bq_poll(mw->queue, &item, 0) == 0) {
        if (mw_is_poison_pill(item)) { /* another master already stopped the workers: keep it */
            bq_put(mw->queue, item);
            return;
        }
        pthread_mutex_lock(&mw->lock);
        cancel_locked(mw, item);
        pthread_mutex_unlock(&mw->lock);
    }
}

/* Called with lock held: lets the queued tasks run until the deadline.
 * 0 once nothing is pending; EDEADLK or ETIMEDOUT when tasks still are. */
static int let_tasks_run_locked(mw_t *mw, const struct timespec *deadline)
{
    if (mw->workers_alive > 0)
        return mw_wait_for_pending_locked(mw, deadline);
    if (mw->pending > 0)
        return ETIMEDOUT; /* no worker (not started, or none could start): nobody would run them */
    return 0;
}

int mw_stop(mw_t *mw, long timeout_ms)
{
    struct timespec deadline;
    if (mw == NULL || kit_deadline_after(timeout_ms, &deadline) != 0)
        return EINVAL;
    if (mw_called_from_worker(mw))
        return EDEADLK; /* a task waiting for every task would wait for itself */
    pthread_mutex_lock(&mw->lock);
    mw_close_locked(mw);
    size_t cancelled_before = mw->count.cancelled;
    int err = let_tasks_run_locked(mw, &deadline);
    if (err != 0)
        request_stop_locked(mw); /* stuck (nobody consumes) or out of time */
    pthread_mutex_unlock(&mw->lock);
    if (err != 0)
        cancel_queued(mw);
    mw_end_workers(mw, NULL); /* cannot be stuck: a stop lifts the result limit */
    pthread_mutex_lock(&mw->lock);
    bool not_done = mw->count.cancelled > cancelled_before;
    pthread_mutex_unlock(&mw->lock);
    if (not_done)
        return ETIMEDOUT;
    return 0;
}

bool mw_stop_requested(mw_t *mw)
{
    if (mw == NULL)
        return false;
    pthread_mutex_lock(&mw->lock);
    bool requested = mw->phase >= PHASE_STOPPING;
    pthread_mutex_unlock(&mw->lock);
    return requested;
}
