/**
 * @file mw_core.c
 * @brief Chapter 05 solution, the core: a chapter-02 queue of task records,
 *        a pending counter that decides "done", one poison pill per worker,
 *        three lists. The extensions (result limit, consumers, graceful
 *        stop) are in mw_extensions.c; the state both share, in mw_internal.h.
 *
 * DESIGN. Each mw_submit() allocates one *record*; the record travels
 * through the bounded queue to a worker and ends in exactly one of three
 * lists - `results`, `failed`, `rejected` - until someone takes it. The
 * worker writes the result fields while the record is private to it, then
 * links it into `results` in one critical section: nobody ever sees half a
 * record.
 *
 * `pending` counts tasks submitted and not yet finished. It goes up in the
 * same critical section that counts the submission, *before* the record is
 * offered to the queue, and down in the same critical section that
 * publishes the result, failure or rejection. So at every instant, under
 * `lock`: submitted == completed + failed + rejected + pending; and
 * pending == 0 means nothing is queued, nothing is running, and nothing can
 * be submitted by a task any more. Only then does mw_await() queue the
 * poison pills - one per worker, each worker takes exactly one.
 *
 * Lock order: `lock` is never held while calling into the queue (bq_* may
 * block, and the queue has its own lock), nor while a process function or
 * on_result runs.
 */
#define _POSIX_C_SOURCE 200809L
#include "mw_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "bq.h"
#include "kit_errno.h"
#include "kit_log.h"
#include "kit_thread.h"
#include "kit_time.h"
#include "kit_trace.h"

/* Not a task: a worker that takes it leaves. Only its address matters. */
static struct record poison_pill;

static _Thread_local mw_t *current_mw; /* the component this thread is a worker of */

bool mw_called_from_worker(const mw_t *mw)
{
    return current_mw == mw;
}

bool mw_is_poison_pill(const void *item)
{
    return item == &poison_pill;
}

/* ---- lists --------------------------------------------------------------------- */

static void list_push(struct list *list, struct record *rec)
{
    rec->next = NULL;
    if (list->tail)
        list->tail->next = rec;
    else
        list->head = rec;
    list->tail = rec;
    list->count++;
}

static struct record *list_pop(struct list *list)
{
    struct record *rec = list->head;
    if (rec) {
        list->head = rec->next;
        if (list->head == NULL)
            list->tail = NULL;
        list->count--;
    }
    return rec;
}

static void list_free(struct list *list)
{
    struct record *rec;
    while ((rec = list_pop(list)))
        free(rec);
}

/* ---- finishing a task (all called with lock held) ------------------------------------ */

void mw_close_locked(mw_t *mw)
{
    if (mw->phase < PHASE_CLOSED)
        mw->phase = PHASE_CLOSED;
    pthread_cond_broadcast(&mw->result_ready); /* with nothing pending, the results have ended */
}

/* Nothing stored and nothing can come: closed, and every task finished. */
static bool results_ended_locked(const mw_t *mw)
{
    return mw->phase >= PHASE_CLOSED && mw->pending == 0;
}

void mw_finish_task_locked(mw_t *mw)
{
    mw->pending--; /* PAGE: decrement-after-publish */
    if (mw->pending == 0) {
        pthread_cond_broadcast(&mw->settled);      /* every waiting master may stop the workers */
        pthread_cond_broadcast(&mw->result_ready); /* if closed, consumers see the end */
    } else {
        mw_wake_master_if_stuck_locked(mw); /* the rest may all be held by blocked workers now */
    }
}

/* Never dropped: the record keeps the payload pointer until mw_take_rejected(). */
void mw_reject_locked(mw_t *mw, struct record *rec, int why)
{
    kit_log("mw", "task %ld rejected (%s): recorded", rec->task.id, kit_errno_name(why));
    rec->error = why;
    list_push(&mw->rejected, rec); /* PAGE: rejected-recorded */
    mw->count.rejected++;
}

/* ---- workers ----------------------------------------------------------------------------- */

static void store_result_locked(mw_t *mw, struct record *rec)
{
    mw_wait_for_result_room_locked(mw);
    list_push(&mw->results, rec);
    if (mw->results.count > mw->count.most_unconsumed)
        mw->count.most_unconsumed = mw->results.count;
    pthread_cond_signal(&mw->result_ready); /* one result serves one consumer */
}

/* Publish a complete record: store it (or it already went to on_result),
 * count it, and only then count the task finished - all in one step. */
static void publish_result(mw_t *mw, struct record *rec)
{
    bool store = mw->config.on_result == NULL;
    pthread_mutex_lock(&mw->lock);
    if (store)
        store_result_locked(mw, rec);
    mw->count.completed++;
    mw_finish_task_locked(mw);
    pthread_mutex_unlock(&mw->lock);
    if (!store)
        free(rec);
}

static void publish_failure(mw_t *mw, struct record *rec, int error)
{
    rec->error = error;
    pthread_mutex_lock(&mw->lock);
    kit_log("mw", "task %ld failed (%s): recorded", rec->task.id, kit_errno_name(error));
    list_push(&mw->failed, rec);
    mw->count.failed++;
    mw_finish_task_locked(mw);
    pthread_mutex_unlock(&mw->lock);
}

/* Runs one task, no lock held. Returns what the process function returned. */
static int run_task(mw_t *mw, struct record *rec)
{
    void *data = NULL;
    kit_trace_begin("mw", "task %ld", rec->task.id);
    int64_t start = kit_now_ns();
    int error = mw->config.process(mw, &rec->task, &data, mw->config.ctx);
    long cost_us = (long)((kit_now_ns() - start) / 1000);
    kit_trace_end("mw");
    if (error != 0) {
        publish_failure(mw, rec, error);
        return error;
    }
    /* PAGE: immutable-record. Every field is written before anyone else can
     * see the record; after publishing, nobody writes it again. */
    rec->result = (mw_result_t){ .task_id = rec->task.id, .data = data, .cost_us = cost_us };
    if (mw->config.on_result)
        mw->config.on_result(mw, &rec->result, mw->config.ctx);
    publish_result(mw, rec);
    return 0;
}

/* The next task from the queue, or NULL at the poison pill. */
static struct record *take_task(mw_t *mw)
{
    void *item = &poison_pill;
    bq_take(mw->queue, &item); /* fails only once the queue is closed, and it never is */
    if (item == &poison_pill)
        return NULL;
    return item;
}

static void leave(mw_t *mw)
{
    pthread_mutex_lock(&mw->lock);
    mw->workers_alive--;
    kit_log("mw", "poison pill: leaving, %zu worker(s) left", mw->workers_alive);
    pthread_cond_broadcast(&mw->worker_left); /* join_workers() waits for the last one */
    pthread_mutex_unlock(&mw->lock);
}

static void *worker_main(void *raw)
{
    mw_t *mw = raw;
    current_mw = mw;
    struct record *rec;
    /* PAGE: poison-pill. Take, process, publish - until the pill. */
    while ((rec = take_task(mw)) != NULL) {
        if (mw_cancelled_by_stop(mw, rec))
            continue;
        /* PAGE: worker-survives. A failing task is recorded by run_task();
         * the loop goes on, so one bad task never costs a worker. */
        if (run_task(mw, rec) != 0)
            kit_log("mw", "the worker carries on");
    }
    leave(mw);
    return NULL;
}

/* ---- ending the work ---------------------------------------------------------------------- */

int mw_wait_for_pending_locked(mw_t *mw, const struct timespec *deadline)
{
    int err = 0;
    /* while, not if: the wake-up may be spurious, or meant for another
     * waiter. The deadline is the same on every turn. */
    while (mw->pending > 0 && !mw_stuck_locked(mw) && err != ETIMEDOUT) {
        if (deadline)
            err = pthread_cond_timedwait(&mw->settled, &mw->lock, deadline);
        else
            pthread_cond_wait(&mw->settled, &mw->lock);
    }
    if (mw->pending == 0)
        return 0;
    if (mw_stuck_locked(mw))
        return EDEADLK;
    return ETIMEDOUT;
}

/* Called with lock held and pending == 0. Closes, and says whether the
 * caller is the one to send the pills (only one thread ever does). */
static bool claim_pills_locked(mw_t *mw)
{
    mw_close_locked(mw); /* the results have ended */
    if (mw->phase >= PHASE_ENDING)
        return false; /* another thread sent them */
    mw->phase = PHASE_ENDING;
    return true;
}

static void send_pills(mw_t *mw, size_t workers)
{
    kit_log("mw", "nothing pending: one poison pill for each of %zu workers", workers);
    /* PAGE: one-pill-per-worker. pending is 0, so no task is queued, running,
     * or about to be submitted by a task: the pills are the last items. */
    for (size_t i = 0; i < workers; i++)
        bq_put(mw->queue, &poison_pill);
}

/* Called with lock held once every worker has left: says whether the caller
 * is the one to join them (only one thread ever does). */
static bool claim_join_locked(mw_t *mw)
{
    if (mw->phase >= PHASE_ENDED)
        return false; /* another thread joined them */
    mw->phase = PHASE_ENDED;
    return true;
}

/* Waits until every worker has left (deadline NULL: no limit), then joins them once. */
static int join_workers(mw_t *mw, const struct timespec *deadline)
{
    int err = 0;
    pthread_mutex_lock(&mw->lock);
    /* while, not if: one worker leaving wakes us; the others may still be on their way. */
    while (mw->workers_alive > 0 && err != ETIMEDOUT) {
        if (deadline)
            err = pthread_cond_timedwait(&mw->worker_left, &mw->lock, deadline);
        else
            pthread_cond_wait(&mw->worker_left, &mw->lock);
    }
    bool all_left = mw->workers_alive == 0;
    bool join = false;
    if (all_left)
        join = claim_join_locked(mw);
    size_t started = mw->threads_started;
    pthread_mutex_unlock(&mw->lock);
    if (join) {
        for (size_t i = 0; i < started; i++)
            pthread_join(mw->threads[i], NULL);
    }
    if (!all_left)
        return ETIMEDOUT;
    return 0;
}

int mw_end_workers(mw_t *mw, const struct timespec *deadline)
{
    pthread_mutex_lock(&mw->lock);
    int err = mw_wait_for_pending_locked(mw, deadline);
    bool send = false;
    if (err == 0)
        send = claim_pills_locked(mw);
    if (err == EDEADLK)
        kit_log("mw", "every worker waits for result room and nobody consumes: EDEADLK");
    size_t started = mw->threads_started;
    pthread_mutex_unlock(&mw->lock);
    if (send)
        send_pills(mw, started);
    if (err != 0)
        return err;
    return join_workers(mw, deadline);
}

/* ---- create and destroy ------------------------------------------------------------------ */

static int init_sync(mw_t *mw)
{
    int err;
    if ((err = pthread_mutex_init(&mw->lock, NULL)) != 0)
        return err;
    /* kit_cond_init(): CLOCK_MONOTONIC, as the deadlines are */
    if ((err = kit_cond_init(&mw->settled)) != 0)
        goto destroy_lock;
    if ((err = kit_cond_init(&mw->worker_left)) != 0)
        goto destroy_settled;
    if ((err = kit_cond_init(&mw->result_room)) != 0)
        goto destroy_worker_left;
    if ((err = kit_cond_init(&mw->result_ready)) != 0)
        goto destroy_result_room;
    return 0;

destroy_result_room:
    pthread_cond_destroy(&mw->result_room);
destroy_worker_left:
    pthread_cond_destroy(&mw->worker_left);
destroy_settled:
    pthread_cond_destroy(&mw->settled);
destroy_lock:
    pthread_mutex_destroy(&mw->lock);
    return err;
}

static bool config_is_valid(const mw_config_t *config)
{
    return config != NULL && config->workers > 0 && config->queue_capacity > 0 && config->process != NULL;
}

int mw_create(mw_t **out, const mw_config_t *config)
{
    if (out == NULL)
        return EINVAL;
    *out = NULL;
    if (!config_is_valid(config))
        return EINVAL;
    mw_t *mw = calloc(1, sizeof *mw);
    if (mw == NULL)
        return ENOMEM;
    mw->config = *config;
    snprintf(mw->name, sizeof mw->name, "%s", config->name ? config->name : "worker");
    mw->config.name = mw->name;
    int err = ENOMEM;
    if ((mw->threads = calloc(config->workers, sizeof *mw->threads)) == NULL)
        goto free_mw;
    if ((err = bq_create(&mw->queue, config->queue_capacity)) != 0)
        goto free_threads;
    if ((err = init_sync(mw)) != 0)
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

void mw_destroy(mw_t *mw)
{
    if (mw == NULL || current_mw == mw)
        return;
    mw_stop(mw, 0);
    list_free(&mw->results);
    list_free(&mw->failed);
    list_free(&mw->rejected);
    bq_destroy(mw->queue);
    pthread_cond_destroy(&mw->result_ready);
    pthread_cond_destroy(&mw->result_room);
    pthread_cond_destroy(&mw->worker_left);
    pthread_cond_destroy(&mw->settled);
    pthread_mutex_destroy(&mw->lock);
    free(mw->threads);
    free(mw);
}

/* ---- starting, submitting, awaiting ----------------------------------------------------------- */

/* Called with lock held. */
static int start_worker_locked(mw_t *mw, size_t index)
{
    char name[16]; /* the kernel keeps 15 characters */
    snprintf(name, sizeof name, "%s-%zu", mw->name, index + 1);
    /* A worker of pthread_create's own, named by the master once it exists. */
    int err = pthread_create(&mw->threads[index], NULL, worker_main, mw);
    if (err == 0) {
        pthread_setname_np(mw->threads[index], name);
        mw->threads_started++;
        mw->workers_alive++;
    }
    return err;
}

/* Called with lock held, in phase CREATED. */
static int start_workers_locked(mw_t *mw)
{
    mw->phase = PHASE_RUNNING;
    for (size_t i = 0; i < mw->config.workers; i++) {
        int err = start_worker_locked(mw, i);
        if (err != 0)
            return err;
    }
    return 0;
}

int mw_start(mw_t *mw)
{
    if (mw == NULL)
        return EINVAL;
    pthread_mutex_lock(&mw->lock);
    int err = 0;
    if (mw->phase == PHASE_RUNNING)
        err = EINVAL; /* already started */
    else if (mw->phase != PHASE_CREATED)
        err = ECANCELED; /* already closed or stopped */
    if (err != 0) {
        pthread_mutex_unlock(&mw->lock);
        return err;
    }
    err = start_workers_locked(mw);
    pthread_mutex_unlock(&mw->lock);
    if (err != 0)
        mw_stop(mw, 0); /* undo: stop the workers that did start */
    return err;
}

/* Called with lock held: ECANCELED if mw_submit() must refuse a task now, or 0. */
static int submit_refused_locked(const mw_t *mw)
{
    if (mw->phase >= PHASE_STOPPING)
        return ECANCELED; /* a stop passed its deadline, or the work is over */
    if (mw->phase >= PHASE_CLOSED && current_mw != mw)
        return ECANCELED; /* closed, and not a sub-task from a running task (itself pending) */
    return 0;
}

/* Counts the task as submitted and - unless refused - as pending, in one
 * step, before any worker can see it. A refused task is recorded at once. */
static int admit(mw_t *mw, struct record *rec)
{
    pthread_mutex_lock(&mw->lock);
    mw->count.submitted++;
    int err = submit_refused_locked(mw);
    if (err == 0)
        mw->pending++; /* PAGE: pending-before-enqueue */
    else
        mw_reject_locked(mw, rec, err);
    pthread_mutex_unlock(&mw->lock);
    return err;
}

int mw_submit(mw_t *mw, long task_id, void *payload, long timeout_ms)
{
    if (mw == NULL || timeout_ms < 0)
        return EINVAL;
    struct record *rec = calloc(1, sizeof *rec);
    if (rec == NULL)
        return ENOMEM;
    rec->task = (mw_task_t){ .id = task_id, .payload = payload };
    int err = admit(mw, rec);
    if (err != 0)
        return err;
    err = bq_offer(mw->queue, rec, timeout_ms); /* now the workers can see it */
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
    if (current_mw == mw)
        return EDEADLK; /* a task waiting for every task would wait for itself */
    pthread_mutex_lock(&mw->lock);
    bool started = mw->threads_started > 0;
    pthread_mutex_unlock(&mw->lock);
    if (!started)
        return EINVAL; /* no worker would ever run the tasks */
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

/* ---- taking what came out ------------------------------------------------------------------ */

/* Called with lock held. Waits for a stored result; 0, ECANCELED (ended) or ETIMEDOUT. */
static int wait_for_result_locked(mw_t *mw, const struct timespec *deadline)
{
    int err = 0;
    mw->waiting_consumers++; /* the trap detector counts it as a consumer */
    /* while, not if: another consumer may take the result we were woken
     * for, or the wake-up was spurious. Same deadline on every turn. */
    while (mw->results.count == 0 && !results_ended_locked(mw) && err != ETIMEDOUT)
        err = pthread_cond_timedwait(&mw->result_ready, &mw->lock, deadline);
    mw->waiting_consumers--;
    if (mw->results.count > 0)
        return 0;
    if (results_ended_locked(mw))
        return ECANCELED;
    return ETIMEDOUT;
}

int mw_take_result(mw_t *mw, mw_result_t *out, long timeout_ms)
{
    struct timespec deadline;
    if (mw == NULL || out == NULL || kit_deadline_after(timeout_ms, &deadline) != 0)
        return EINVAL;
    pthread_mutex_lock(&mw->lock);
    int err = wait_for_result_locked(mw, &deadline);
    struct record *rec = NULL;
    if (err == 0) {
        rec = list_pop(&mw->results);
        mw_result_taken_locked(mw);
    }
    pthread_mutex_unlock(&mw->lock);
    if (rec) {
        *out = rec->result;
        free(rec);
    }
    return err;
}

static int take_record(mw_t *mw, struct list *list, mw_failure_t *out)
{
    if (out == NULL)
        return EINVAL;
    pthread_mutex_lock(&mw->lock);
    struct record *rec = list_pop(list);
    pthread_mutex_unlock(&mw->lock);
    if (rec == NULL)
        return ENOENT;
    *out = (mw_failure_t){ .task = rec->task, .error = rec->error };
    free(rec);
    return 0;
}

int mw_take_failed(mw_t *mw, mw_failure_t *out)
{
    if (mw == NULL)
        return EINVAL;
    return take_record(mw, &mw->failed, out);
}

int mw_take_rejected(mw_t *mw, mw_failure_t *out)
{
    if (mw == NULL)
        return EINVAL;
    return take_record(mw, &mw->rejected, out);
}

int mw_stats(mw_t *mw, mw_stats_t *out)
{
    if (mw == NULL || out == NULL)
        return EINVAL;
    pthread_mutex_lock(&mw->lock);
    *out = (mw_stats_t){
        .submitted = mw->count.submitted,
        .completed = mw->count.completed,
        .failed = mw->count.failed,
        .rejected = mw->count.rejected,
        .cancelled = mw->count.cancelled,
        .pending = mw->pending,
        .unconsumed = mw->results.count,
        .most_unconsumed = mw->count.most_unconsumed,
        .workers_alive = mw->workers_alive,
        .workers_blocked = mw->workers_blocked,
    };
    pthread_mutex_unlock(&mw->lock);
    return 0;
}
