/**
 * @file mw_extensions.c
 * @brief Chapter 05, another design, the extensions: the result limit and
 *        the detector of its deadlock trap, announced consumers, and the
 *        graceful stop, on top of mw_core.c.
 *
 * DESIGN. With `result_limit` set, a worker whose result finds the stored
 * results at the limit waits on `room`, counted in `workers_blocked`, until
 * a take frees a slot or the work winds down (a stop lifts the limit).
 *
 * The trap (mw.h): a master waiting for pending == 0 while nobody consumes
 * and the workers can finish nothing more. Every change that can take away
 * the last way out - a worker starting to wait for room, a task finishing,
 * a consumer leaving or giving up its wait - asks mw_stuck_locked() and
 * wakes the masters if the answer is yes; their mw_await() returns EDEADLK.
 *
 * mw_stop() closes and lets the queued tasks run until its deadline. If
 * tasks are still pending then, it sets `stopping` (and the lock-free
 * `stop_flag`): nothing more is accepted or started, the limit is lifted,
 * and each task still queued - taken out by mw_stop() or found first by a
 * worker - is recorded as rejected with ECANCELED and counted in
 * `cancelled`. Then the workers are ended as mw_await() ends them.
 */
#define _POSIX_C_SOURCE 200809L
#include "mw_internal.h"

#include <errno.h>
#include <pthread.h>

#include "bq.h"
#include "kit_time.h"

/* ---- the result limit and its trap (called with lock held) ------------------------------ */

static bool at_result_limit_locked(const mw_t *mw)
{
    size_t limit = mw->config.result_limit;
    return limit > 0 && !mw_winding_down_locked(mw) && mw->results.count >= limit;
}

bool mw_stuck_locked(const mw_t *mw)
{
    if (mw->pending == 0 || !at_result_limit_locked(mw))
        return false;
    if (mw->consumers > 0 || mw->waiting_consumers > 0)
        return false; /* someone will make room */
    /* Every pending task is held by a worker waiting for room, or every
     * live worker waits for room (queued tasks cannot even start). Idle
     * workers cannot help: the work they could take is not there. */
    return mw->workers_blocked == mw->pending || mw->workers_blocked == mw->workers_alive;
}

void mw_wake_master_if_stuck_locked(mw_t *mw)
{
    if (mw_stuck_locked(mw))
        pthread_cond_broadcast(&mw->all_finished); /* every waiting master gets EDEADLK */
}

void mw_wait_for_result_room_locked(mw_t *mw)
{
    if (!at_result_limit_locked(mw))
        return;
    mw->workers_blocked++;
    mw_wake_master_if_stuck_locked(mw); /* this worker may have been the last way out */
    /* while, not if: spurious wake-ups, and another worker may take the freed slot */
    while (at_result_limit_locked(mw))
        pthread_cond_wait(&mw->room, &mw->lock);
    mw->workers_blocked--;
}

void mw_result_taken_locked(mw_t *mw)
{
    if (mw->workers_blocked > 0)
        pthread_cond_signal(&mw->room); /* one freed slot serves one worker */
}

/* ---- consumers ------------------------------------------------------------------------------- */

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
    pthread_mutex_lock(&mw->lock);
    bool announced = mw->consumers > 0;
    if (announced)
        mw->consumers--;
    mw_wake_master_if_stuck_locked(mw);
    pthread_mutex_unlock(&mw->lock);
    return announced ? 0 : EINVAL;
}

/* ---- the graceful stop ---------------------------------------------------------------------- */

/* Called with lock held: an accepted task that will never run. */
static void record_cancelled_locked(mw_t *mw, struct record *rec)
{
    mw_reject_locked(mw, rec, ECANCELED);
    mw->cancelled++;
    mw_finish_task_locked(mw);
}

bool mw_cancelled_by_stop(mw_t *mw, struct record *rec)
{
    pthread_mutex_lock(&mw->lock);
    bool cancel = mw_winding_down_locked(mw);
    if (cancel)
        record_cancelled_locked(mw, rec);
    pthread_mutex_unlock(&mw->lock);
    return cancel;
}

/* Called with lock held: the deadline passed with tasks pending. */
static void begin_stopping_locked(mw_t *mw)
{
    mw->stopping = true;
    atomic_store(&mw->stop_flag, true);
    pthread_cond_broadcast(&mw->room); /* the limit is lifted: results are never dropped */
}

/* Takes every task still queued out of the queue, as not done. */
static void cancel_what_is_queued(mw_t *mw)
{
    void *item;
    while (bq_poll(mw->queue, &item, 0) == 0) {
        if (mw_is_poison_pill(item)) {
            bq_put(mw->queue, item); /* another master already ended the workers: put it back */
            return;
        }
        pthread_mutex_lock(&mw->lock);
        record_cancelled_locked(mw, item);
        pthread_mutex_unlock(&mw->lock);
    }
}

int mw_stop(mw_t *mw, long timeout_ms)
{
    struct timespec deadline;
    if (mw == NULL || kit_deadline_after(timeout_ms, &deadline) != 0)
        return EINVAL;
    if (mw_called_from_worker(mw))
        return EDEADLK;
    pthread_mutex_lock(&mw->lock);
    mw_close_locked(mw);
    size_t cancelled_before = mw->cancelled;
    int err;
    if (mw->workers_alive > 0)
        err = mw_wait_for_pending_locked(mw, &deadline); /* queued tasks may still run until then */
    else
        err = mw->pending > 0 ? ETIMEDOUT : 0; /* nobody would ever run them */
    if (err != 0)
        begin_stopping_locked(mw);
    pthread_mutex_unlock(&mw->lock);
    if (err != 0)
        cancel_what_is_queued(mw);
    mw_end_workers(mw, NULL); /* cannot be stuck: the limit is lifted */
    pthread_mutex_lock(&mw->lock);
    bool left_undone = mw->cancelled > cancelled_before;
    pthread_mutex_unlock(&mw->lock);
    return left_undone ? ETIMEDOUT : 0;
}

bool mw_stop_requested(mw_t *mw)
{
    if (mw == NULL)
        return false;
    return atomic_load(&mw->stop_flag); /* no lock: process functions ask this often */
}
