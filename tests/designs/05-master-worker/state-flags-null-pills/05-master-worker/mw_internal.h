/**
 * @file mw_internal.h
 * @brief Chapter 05, another design, private: the component's state, shared
 *        by mw_core.c (pending counter, NULL poison pills, the three lists)
 *        and mw_extensions.c (result limit and its trap, consumers, stop).
 *
 * What this design does differently from the exercise's plan:
 * - the component's progress is a handful of one-way flags instead of one
 *   phase enum, each named after the rule it enforces (`closed`,
 *   `stopping`, `pills_sent`, `joined`);
 * - the poison pill is the NULL item: tasks are never NULL (each one is a
 *   record), and bq_t carries NULL like any other pointer;
 * - whether the workers have been told to stop is also kept in a C11 atomic
 *   flag, `stop_flag`, so that mw_stop_requested() - which process
 *   functions call often - reads it without taking the lock.
 *
 * Lock order: one lock, `lock`. It is never held while calling into the
 * queue (bq_* may block) nor while a process function or on_result runs.
 * Functions named `*_locked` are called with it held.
 */
#ifndef MW_INTERNAL_H
#define MW_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "bq.h"
#include "kit_thread.h"
#include "mw.h"

/* One task, from mw_submit() until someone takes it out of a list. */
struct record {
    mw_task_t task;
    mw_result_t result;  /* filled by its worker while nobody else can see the record */
    int error;           /* failed: the process function's code; rejected: why */
    struct record *next; /* in one list; guarded by mw->lock */
};

/* A FIFO of records, oldest at head. */
struct record_list {
    struct record *head;
    struct record *tail;
    size_t count;
};

struct mw {
    /* Immutable after create: */
    mw_config_t config;           /* config.name points into name[] */
    char name[KIT_THREAD_NAME_MAX - 8];
    bq_t *queue;                  /* records, and NULL pills at the end */
    pthread_t *threads;           /* config.workers of them */

    pthread_mutex_t lock;
    pthread_cond_t all_finished;  /* masters: pending reached 0, or the workers are stuck */
    pthread_cond_t worker_gone;   /* masters: a worker left its loop */
    pthread_cond_t room;          /* workers under result_limit: a result was taken, or the limit lifted */
    pthread_cond_t result_or_end; /* consumers: a result was stored, or no more can come */

    /* Guarded by lock - one-way flags, each set in one place: */
    bool started;                 /* mw_start() was called */
    bool closed;                  /* outside submits refused (close, stop, await at pending 0) */
    bool stopping;                /* a stop passed its deadline with work pending */
    bool pills_sent;              /* one pill per worker is on its way: the work is over */
    bool joined;                  /* the workers have been joined */

    /* Guarded by lock - what decisions read: */
    size_t pending;               /* submitted, not yet completed, failed or rejected */
    struct record_list results, failed, rejected;
    size_t threads_started;       /* threads[0 .. threads_started) exist */
    size_t workers_alive;
    size_t workers_blocked;       /* waiting for room under result_limit */
    size_t consumers;             /* announced by mw_consumer_begin() */
    size_t waiting_consumers;     /* inside mw_take_result()'s wait */

    /* Guarded by lock - only reported by mw_stats() (and cancelled, compared by mw_stop()): */
    size_t submitted, completed, failures, rejections, cancelled, most_unconsumed;

    /* Set with lock held, read by anyone: stopping || pills_sent. */
    atomic_bool stop_flag;
};

/* Called with lock held: no task is accepted from outside, none is started,
 * and the result limit no longer applies - a stop, or the end of the work. */
static inline bool mw_winding_down_locked(const mw_t *mw)
{
    return mw->stopping || mw->pills_sent;
}

/* ---- mw_core.c, for mw_extensions.c ---------------------------------------------- */

bool mw_called_from_worker(const mw_t *mw);
bool mw_is_poison_pill(const void *item);
void mw_close_locked(mw_t *mw);
void mw_finish_task_locked(mw_t *mw);
void mw_reject_locked(mw_t *mw, struct record *rec, int why);
int mw_wait_for_pending_locked(mw_t *mw, const struct timespec *deadline);
int mw_end_workers(mw_t *mw, const struct timespec *deadline);

/* ---- mw_extensions.c, for mw_core.c ---------------------------------------------- */

void mw_wait_for_result_room_locked(mw_t *mw);
void mw_result_taken_locked(mw_t *mw);
bool mw_stuck_locked(const mw_t *mw);
void mw_wake_master_if_stuck_locked(mw_t *mw);
bool mw_cancelled_by_stop(mw_t *mw, struct record *rec);

#endif
