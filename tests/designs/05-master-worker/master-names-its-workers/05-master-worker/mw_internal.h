/**
 * @file mw_internal.h
 * @brief Chapter 05 solution, private: the component's state, shared by its
 *        two files - mw_core.c (the pending counter, the poison pills, the
 *        three lists) and mw_extensions.c (the result limit and its trap,
 *        consumers, the graceful stop). Nothing outside this folder sees it.
 *
 * Lock order: one lock, `mw->lock`. It is never held while calling into the
 * queue (bq_* may block, and the queue has its own lock), nor while a
 * process function or on_result runs. Functions named `*_locked` are called
 * with it held, and never release it but inside a condition wait.
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

/* One task from mw_submit() until someone takes it from one of the lists. */
struct record {
    mw_task_t task;      /* as submitted */
    mw_result_t result;  /* written by its worker alone, before publishing */
    int error;           /* failed: the process function's code; rejected: why */
    struct record *next; /* in one of the lists; guarded by mw->lock */
};

/* A FIFO of records: head is the oldest. */
struct list {
    struct record *head, *tail;
    size_t count;
};

/* The phase of a component. It only ever moves down this list, under lock,
 * one step or several at a time; so every rule is one comparison
 * (`phase >= PHASE_CLOSED`: closed to the outside). Each phase is entered in
 * one place:
 *
 *   CREATED   tasks queue up, no worker runs yet.
 *             -> RUNNING   mw_start()                          start_workers_locked()
 *   RUNNING   the workers take tasks; anyone may submit.
 *             -> CLOSED    mw_close(), mw_stop(), or mw_await()
 *                          once pending is 0                   mw_close_locked()
 *   CLOSED    only running tasks may submit (sub-tasks).
 *             -> STOPPING  mw_stop()'s deadline passed with
 *                          tasks pending                       request_stop_locked()
 *   STOPPING  nothing is accepted or started any more, the result
 *             limit is lifted, mw_stop_requested() is true.
 *             -> ENDING    pending reached 0 after a close: the
 *                          thread that moves it sends the pills claim_pills_locked()
 *   ENDING    every worker has its pill coming: they are leaving.
 *             -> ENDED     every worker has left: the thread
 *                          that moves it joins them            claim_join_locked()
 *   ENDED     every worker joined.
 *
 * A component closed or stopped before mw_start() skips RUNNING; mw_await()
 * goes from CLOSED to ENDING without STOPPING. From STOPPING on, the work is
 * over or being cut short: a task asking mw_stop_requested() is told to end. */
enum phase { PHASE_CREATED, PHASE_RUNNING, PHASE_CLOSED, PHASE_STOPPING, PHASE_ENDING, PHASE_ENDED };

struct mw {
    /* Immutable after create: */
    mw_config_t config;           /* config.name points to name */
    char name[KIT_THREAD_NAME_MAX - 8];
    bq_t *queue;                  /* records and pills; never called with lock held */
    pthread_t *threads;           /* config.workers slots; joined once all have left */

    pthread_mutex_t lock;
    pthread_cond_t settled;       /* await/stop: pending reached 0, or the workers got stuck */
    pthread_cond_t worker_left;   /* await/stop: one more worker has left its loop */
    pthread_cond_t result_room;   /* workers under result_limit: a result was taken, or the limit lifted */
    pthread_cond_t result_ready;  /* consumers: a result was stored, or the results ended */

    /* Guarded by lock - what the logic decides on: */
    enum phase phase;             /* see above: only moves forward */
    size_t pending;               /* submitted, not yet completed, failed or rejected */
    struct list results, failed, rejected;
    size_t threads_started;       /* threads[0 .. threads_started) were started */
    size_t workers_alive;         /* started and not yet left their loop */
    size_t workers_blocked;       /* inside the wait for result room */
    size_t consumers;             /* announced by mw_consumer_begin() */
    size_t waiting_consumers;     /* threads waiting in mw_take_result() */

    /* Guarded by lock - counted for mw_stats(), which fills its struct from
     * them when it is read; no decision reads them, but mw_stop() compares
     * `cancelled` before and after to tell whether it left work undone. */
    struct {
        size_t submitted, completed, failed, rejected, cancelled, most_unconsumed;
    } count;
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
