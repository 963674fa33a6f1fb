/**
 * @file mw_core.c
 * @brief Chapter 05, another design, the core: records through a chapter-02
 *        queue, a pending counter that decides "done", NULL poison pills,
 *        and the three lists. Debugging output on stderr with MW_DEBUG set.
 *
 * DESIGN. mw_submit() makes one record per task. `pending` goes up, under
 * `lock`, before the record is offered to the queue, and down in the same
 * critical section that links the finished record into `results`, `failed`
 * or `rejected`. So under `lock`, always:
 *     submitted == completed + failed + rejected + pending,
 * and pending == 0 means nothing is queued, running, or about to be
 * submitted by a running task. Only then are the pills sent: one NULL item
 * per worker, behind every task; a worker that takes NULL leaves.
 *
 * The state is a set of one-way flags (mw_internal.h). Who sends the pills
 * and who joins the workers is decided by the first thread to set
 * `pills_sent` or `joined`: several masters may await at once, and exactly
 * one of them does each job.
 */
#define _POSIX_C_SOURCE 200809L
#include "mw_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bq.h"
#include "kit_thread.h"
#include "kit_time.h"

static _Thread_local const mw_t *worker_of; /* the component this thread works for */

/* Debugging output: MW_DEBUG=1 in the environment turns it on. */
static bool debug_output;
static pthread_once_t debug_once = PTHREAD_ONCE_INIT;

static void read_debug_setting(void)
{
    debug_output = getenv("MW_DEBUG") != NULL;
}

static void debug(const char *fmt, ...)
{
    if (!debug_output)
        return;
    va_list args;
    va_start(args, fmt);
    fputs("mw: ", stderr);
    vfprintf(stderr, fmt, args);
    fputc('\n', stderr);
    va_end(args);
}

bool mw_called_from_worker(const mw_t *mw)
{
    return worker_of == mw;
}

bool mw_is_poison_pill(const void *item)
{
    return item == NULL;
}

/* ---- record lists (called with lock held) ------------------------------------------ */

static void append(struct record_list *list, struct record *rec)
{
    rec->next = NULL;
    if (list->tail == NULL)
        list->head = rec;
    else
        list->tail->next = rec;
    list->tail = rec;
    list->count++;
}

static struct record *remove_oldest(struct record_list *list)
{
    struct record *rec = list->head;
    if (rec == NULL)
        return NULL;
    list->head = rec->next;
    if (list->head == NULL)
        list->tail = NULL;
    list->count--;
    return rec;
}

static void free_all(struct record_list *list)
{
    for (struct record *rec = remove_oldest(list); rec != NULL; rec = remove_oldest(list))
        free(rec);
}

/* ---- flags and finishing (called with lock held) ------------------------------------------ */

void mw_close_locked(mw_t *mw)
{
    mw->closed = true;
    pthread_cond_broadcast(&mw->result_or_end); /* with nothing pending, the results have ended */
}

static bool results_ended_locked(const mw_t *mw)
{
    return mw->closed && mw->pending == 0;
}

void mw_finish_task_locked(mw_t *mw)
{
    mw->pending--; /* only after its outcome was linked into a list, in this same critical section */
    if (mw->pending > 0) {
        mw_wake_master_if_stuck_locked(mw);
        return;
    }
    pthread_cond_broadcast(&mw->all_finished);
    pthread_cond_broadcast(&mw->result_or_end);
}

void mw_reject_locked(mw_t *mw, struct record *rec, int why)
{
    debug("task %ld rejected (error %d), recorded", rec->task.id, why);
    rec->error = why;
    append(&mw->rejected, rec);
    mw->rejections++;
}

/* ---- the workers --------------------------------------------------------------------------- */

static void publish_success(mw_t *mw, struct record *rec)
{
    bool keep = mw->config.on_result == NULL; /* on_result already has it otherwise */
    pthread_mutex_lock(&mw->lock);
    if (keep) {
        mw_wait_for_result_room_locked(mw);
        append(&mw->results, rec);
        if (mw->results.count > mw->most_unconsumed)
            mw->most_unconsumed = mw->results.count;
        pthread_cond_signal(&mw->result_or_end); /* one result, one consumer */
    }
    mw->completed++;
    mw_finish_task_locked(mw);
    pthread_mutex_unlock(&mw->lock);
    if (!keep)
        free(rec);
}

static void publish_failure(mw_t *mw, struct record *rec, int error)
{
    rec->error = error;
    long id = rec->task.id; /* once the record is in the list, a take may free it at once */
    pthread_mutex_lock(&mw->lock);
    append(&mw->failed, rec);
    mw->failures++;
    mw_finish_task_locked(mw);
    pthread_mutex_unlock(&mw->lock);
    debug("task %ld failed (error %d), the worker carries on", id, error);
}

static long microseconds_since(const struct timespec *start)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long)(now.tv_sec - start->tv_sec) * 1000000L + (now.tv_nsec - start->tv_nsec) / 1000L;
}

/* Runs one task with no lock held, then publishes what came out. */
static void process(mw_t *mw, struct record *rec)
{
    void *data = NULL;
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    int error = mw->config.process(mw, &rec->task, &data, mw->config.ctx);
    long cost_us = microseconds_since(&start);
    if (error != 0) {
        publish_failure(mw, rec, error);
        return;
    }
    /* Built whole before anyone can see it; never written after publishing. */
    rec->result = (mw_result_t){ .task_id = rec->task.id, .data = data, .cost_us = cost_us };
    if (mw->config.on_result != NULL)
        mw->config.on_result(mw, &rec->result, mw->config.ctx);
    publish_success(mw, rec);
}

static void *worker_main(void *raw)
{
    mw_t *mw = raw;
    worker_of = mw;
    for (;;) {
        void *item = NULL;
        if (bq_take(mw->queue, &item) != 0 || mw_is_poison_pill(item))
            break; /* the queue is never closed while workers run: this is the pill */
        if (!mw_cancelled_by_stop(mw, item))
            process(mw, item); /* a failure is recorded there; the loop goes on */
    }
    pthread_mutex_lock(&mw->lock);
    mw->workers_alive--;
    pthread_cond_broadcast(&mw->worker_gone);
    pthread_mutex_unlock(&mw->lock);
    debug("a worker left");
    return NULL;
}

/* ---- ending the work ------------------------------------------------------------------------- */

int mw_wait_for_pending_locked(mw_t *mw, const struct timespec *deadline)
{
    int err = 0;
    /* while, not if: spurious wake-ups, or a wake-up for another master;
     * the deadline stays the same on every turn. */
    while (mw->pending > 0 && !mw_stuck_locked(mw) && err != ETIMEDOUT) {
        if (deadline != NULL)
            err = pthread_cond_timedwait(&mw->all_finished, &mw->lock, deadline);
        else
            pthread_cond_wait(&mw->all_finished, &mw->lock);
    }
    if (mw->pending == 0)
        return 0;
    return mw_stuck_locked(mw) ? EDEADLK : ETIMEDOUT;
}

/* Called with lock held and pending == 0: true for the one caller that sends the pills. */
static bool claim_the_pills_locked(mw_t *mw)
{
    mw_close_locked(mw);
    if (mw->pills_sent)
        return false;
    mw->pills_sent = true;
    atomic_store(&mw->stop_flag, true); /* the work is over: mw_stop_requested() says so */
    return true;
}

static int join_workers(mw_t *mw, const struct timespec *deadline)
{
    int err = 0;
    pthread_mutex_lock(&mw->lock);
    /* while, not if: each leaving worker wakes us; the others may still be on their way */
    while (mw->workers_alive > 0 && err != ETIMEDOUT) {
        if (deadline != NULL)
            err = pthread_cond_timedwait(&mw->worker_gone, &mw->lock, deadline);
        else
            pthread_cond_wait(&mw->worker_gone, &mw->lock);
    }
    bool all_gone = mw->workers_alive == 0;
    bool mine_to_join = all_gone && !mw->joined;
    if (mine_to_join)
        mw->joined = true;
    size_t threads = mw->threads_started;
    pthread_mutex_unlock(&mw->lock);
    for (size_t i = 0; mine_to_join && i < threads; i++)
        pthread_join(mw->threads[i], NULL);
    return all_gone ? 0 : ETIMEDOUT;
}

int mw_end_workers(mw_t *mw, const struct timespec *deadline)
{
    pthread_mutex_lock(&mw->lock);
    int err = mw_wait_for_pending_locked(mw, deadline);
    bool send_pills = err == 0 && claim_the_pills_locked(mw);
    size_t threads = mw->threads_started;
    pthread_mutex_unlock(&mw->lock);
    if (send_pills) {
        debug("nothing pending: %zu poison pills", threads);
        for (size_t i = 0; i < threads; i++)
            bq_put(mw->queue, NULL); /* behind every task: nothing is pending */
    }
    if (err != 0)
        return err;
    return join_workers(mw, deadline);
}

/* ---- create, start, destroy -------------------------------------------------------------------- */

static int make_sync(mw_t *mw)
{
    pthread_cond_t *conds[] = { &mw->all_finished, &mw->worker_gone, &mw->room, &mw->result_or_end };
    size_t made = 0;
    int err = pthread_mutex_init(&mw->lock, NULL);
    if (err != 0)
        return err;
    for (; made < sizeof conds / sizeof conds[0]; made++)
        if ((err = kit_cond_init(conds[made])) != 0) /* CLOCK_MONOTONIC: the timed waits' clock */
            break;
    if (err == 0)
        return 0;
    while (made > 0) /* undo in reverse order */
        pthread_cond_destroy(conds[--made]);
    pthread_mutex_destroy(&mw->lock);
    return err;
}

int mw_create(mw_t **out, const mw_config_t *config)
{
    if (out == NULL)
        return EINVAL;
    *out = NULL;
    if (config == NULL || config->workers == 0 || config->queue_capacity == 0 || config->process == NULL)
        return EINVAL;
    pthread_once(&debug_once, read_debug_setting);
    mw_t *mw = calloc(1, sizeof *mw);
    if (mw == NULL)
        return ENOMEM;
    mw->config = *config;
    snprintf(mw->name, sizeof mw->name, "%s", config->name != NULL ? config->name : "worker");
    mw->config.name = mw->name;
    atomic_init(&mw->stop_flag, false);
    int err = ENOMEM;
    if ((mw->threads = calloc(config->workers, sizeof *mw->threads)) == NULL)
        goto free_mw;
    if ((err = bq_create(&mw->queue, config->queue_capacity)) != 0)
        goto free_threads;
    if ((err = make_sync(mw)) != 0)
        goto destroy_queue;
    *out = mw;
    return 0;

destroy_queue:
    bq_destroy(mw->queue);
free_threads:
    free(mw->threads);
free_mw:
    free(mw);
    return err;
}

/* Called with lock held, once: starts config.workers threads, stopping at
 * the first that cannot start. */
static int start_workers_locked(mw_t *mw)
{
    mw->started = true;
    for (size_t i = 0; i < mw->config.workers; i++) {
        char name[sizeof mw->name + 21]; /* room for any size_t; the thread's name is cut to fit */
        snprintf(name, sizeof name, "%s-%zu", mw->name, i + 1);
        int err = kit_thread_start(&mw->threads[i], name, worker_main, mw);
        if (err != 0) {
            debug("starting worker %zu failed (error %d): stopping the others", i + 1, err);
            return err;
        }
        mw->threads_started++;
        mw->workers_alive++;
    }
    return 0;
}

int mw_start(mw_t *mw)
{
    if (mw == NULL)
        return EINVAL;
    pthread_mutex_lock(&mw->lock);
    int err = 0;
    bool start_failed = false;
    if (mw->closed)
        err = ECANCELED; /* closed or stopped before it ever started */
    else if (mw->started)
        err = EINVAL;
    else
        start_failed = (err = start_workers_locked(mw)) != 0;
    pthread_mutex_unlock(&mw->lock);
    if (start_failed)
        mw_stop(mw, 0); /* the workers that did start stop; queued tasks are recorded */
    return err;
}

void mw_destroy(mw_t *mw)
{
    if (mw == NULL || mw_called_from_worker(mw))
        return; /* from its own worker it would wait for itself */
    mw_stop(mw, 0);
    free_all(&mw->results);
    free_all(&mw->failed);
    free_all(&mw->rejected);
    bq_destroy(mw->queue);
    pthread_cond_destroy(&mw->result_or_end);
    pthread_cond_destroy(&mw->room);
    pthread_cond_destroy(&mw->worker_gone);
    pthread_cond_destroy(&mw->all_finished);
    pthread_mutex_destroy(&mw->lock);
    free(mw->threads);
    free(mw);
}

/* ---- submitting, awaiting, closing --------------------------------------------------------------- */

int mw_submit(mw_t *mw, long task_id, void *payload, long timeout_ms)
{
    if (mw == NULL || timeout_ms < 0)
        return EINVAL;
    struct record *rec = calloc(1, sizeof *rec);
    if (rec == NULL)
        return ENOMEM;
    rec->task = (mw_task_t){ .id = task_id, .payload = payload };

    pthread_mutex_lock(&mw->lock);
    mw->submitted++;
    /* Refused: a stop passed its deadline, or the work is over - or closed,
     * unless a running task submits a sub-task (it is itself pending). */
    bool refused = mw_winding_down_locked(mw) || (mw->closed && !mw_called_from_worker(mw));
    if (refused)
        mw_reject_locked(mw, rec, ECANCELED);
    else
        mw->pending++; /* before any worker can see the record */
    pthread_mutex_unlock(&mw->lock);
    if (refused)
        return ECANCELED;

    int err = bq_offer(mw->queue, rec, timeout_ms);
    if (err != 0) {
        pthread_mutex_lock(&mw->lock);
        mw_reject_locked(mw, rec, err);
        mw_finish_task_locked(mw);
        pthread_mutex_unlock(&mw->lock);
    }
    return err;
}

int mw_await(mw_t *mw, long timeout_ms)
{
    struct timespec deadline;
    if (mw == NULL || kit_deadline_after(timeout_ms, &deadline) != 0)
        return EINVAL;
    if (mw_called_from_worker(mw))
        return EDEADLK; /* a task waiting for every task waits for itself */
    pthread_mutex_lock(&mw->lock);
    bool any_worker = mw->threads_started > 0;
    pthread_mutex_unlock(&mw->lock);
    if (!any_worker)
        return EINVAL;
    return mw_end_workers(mw, &deadline);
}

int mw_close(mw_t *mw)
{
    if (mw == NULL)
        return EINVAL;
    pthread_mutex_lock(&mw->lock);
    mw_close_locked(mw);
    pthread_mutex_unlock(&mw->lock);
    return 0;
}

/* ---- taking what came out -------------------------------------------------------------------------- */

int mw_take_result(mw_t *mw, mw_result_t *out, long timeout_ms)
{
    struct timespec deadline;
    if (mw == NULL || out == NULL || kit_deadline_after(timeout_ms, &deadline) != 0)
        return EINVAL;
    int err = 0;
    pthread_mutex_lock(&mw->lock);
    mw->waiting_consumers++; /* counts as a consumer for the trap detector */
    /* while, not if: another consumer may take the result first; same deadline each turn */
    while (mw->results.count == 0 && !results_ended_locked(mw) && err != ETIMEDOUT)
        err = pthread_cond_timedwait(&mw->result_or_end, &mw->lock, &deadline);
    mw->waiting_consumers--;
    struct record *rec = remove_oldest(&mw->results);
    if (rec != NULL) {
        err = 0;
        mw_result_taken_locked(mw);
    } else {
        err = results_ended_locked(mw) ? ECANCELED : ETIMEDOUT;
        mw_wake_master_if_stuck_locked(mw); /* we were the master's way out, maybe */
    }
    pthread_mutex_unlock(&mw->lock);
    if (rec != NULL) {
        *out = rec->result;
        free(rec);
    }
    return err;
}

static int take_from(mw_t *mw, struct record_list *list, mw_failure_t *out)
{
    pthread_mutex_lock(&mw->lock);
    struct record *rec = remove_oldest(list);
    pthread_mutex_unlock(&mw->lock);
    if (rec == NULL)
        return ENOENT;
    *out = (mw_failure_t){ .task = rec->task, .error = rec->error };
    free(rec);
    return 0;
}

int mw_take_failed(mw_t *mw, mw_failure_t *out)
{
    if (mw == NULL || out == NULL)
        return EINVAL;
    return take_from(mw, &mw->failed, out);
}

int mw_take_rejected(mw_t *mw, mw_failure_t *out)
{
    if (mw == NULL || out == NULL)
        return EINVAL;
    return take_from(mw, &mw->rejected, out);
}

int mw_stats(mw_t *mw, mw_stats_t *out)
{
    if (mw == NULL || out == NULL)
        return EINVAL;
    pthread_mutex_lock(&mw->lock);
    out->submitted = mw->submitted;
    out->completed = mw->completed;
    out->failed = mw->failures;
    out->rejected = mw->rejections;
    out->cancelled = mw->cancelled;
    out->pending = mw->pending;
    out->unconsumed = mw->results.count;
    out->most_unconsumed = mw->most_unconsumed;
    out->workers_alive = mw->workers_alive;
    out->workers_blocked = mw->workers_blocked;
    pthread_mutex_unlock(&mw->lock);
    return 0;
}
