/**
 * @file mw.c
 * @brief Chapter 05 solution: a chapter-02 queue of task records, a pending
 *        counter that decides "done", one poison pill per worker, three lists.
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
#include "mw.h"

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

/* Not a task: a worker that takes it leaves. Only its address matters. */
static struct record poison_pill;

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
    /* Guarded by lock: */
    size_t pending;               /* submitted, not yet completed, failed or rejected */
    struct list results, failed, rejected;
    size_t started_threads;       /* threads[0 .. started_threads) were started */
    size_t consumers;             /* registered by mw_consumer_begin() */
    size_t waiting_consumers;     /* threads waiting in mw_take_result() */
    bool started, closed, stop_requested, pills_sent, joined;
    mw_stats_t stats;             /* pending and unconsumed are filled in when read */
};

static _Thread_local mw_t *current_mw; /* the component this thread is a worker of */

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

/* ---- the state every wait depends on (all called with lock held) --------------------- */

static bool results_full_locked(const mw_t *mw)
{
    return mw->config.result_limit > 0 && !mw->stop_requested && mw->results.count >= mw->config.result_limit;
}

/* PAGE: trap-detector. Waiting for pending == 0 could never end: the
 * results are full, no thread consumes them (the master itself is the one
 * waiting), and no worker can finish anything more - every pending task is
 * held by a worker waiting for room, or every live worker waits for room,
 * so the queued tasks cannot even start. Idle workers cannot help. */
static bool stuck_locked(const mw_t *mw)
{
    if (mw->pending == 0 || !results_full_locked(mw) || mw->consumers + mw->waiting_consumers > 0)
        return false;
    bool every_task_held = mw->pending == mw->stats.workers_blocked;
    bool every_worker_blocked =
        mw->stats.workers_alive > 0 && mw->stats.workers_blocked == mw->stats.workers_alive;
    return every_task_held || every_worker_blocked;
}

static void wake_master_if_stuck_locked(mw_t *mw)
{
    if (stuck_locked(mw))
        pthread_cond_broadcast(&mw->settled);
}

/* Nothing stored and nothing can come: closed, and every task finished. */
static bool results_ended_locked(const mw_t *mw)
{
    return mw->closed && mw->pending == 0;
}

/* A task is finished: its result, failure or rejection has just been
 * published, in this same critical section. */
static void finish_task_locked(mw_t *mw)
{
    mw->pending--; /* PAGE: decrement-after-publish */
    if (mw->pending == 0) {
        pthread_cond_broadcast(&mw->settled);      /* every waiting master may stop the workers */
        pthread_cond_broadcast(&mw->result_ready); /* if closed, consumers see the end */
    } else {
        wake_master_if_stuck_locked(mw); /* the rest may all be held by blocked workers now */
    }
}

/* Never dropped: the record keeps the payload pointer until mw_take_rejected(). */
static void reject_locked(mw_t *mw, struct record *rec, int why)
{
    kit_log("mw", "task %ld rejected (%s): recorded", rec->task.id, kit_errno_name(why));
    rec->error = why;
    list_push(&mw->rejected, rec); /* PAGE: rejected-recorded */
    mw->stats.rejected++;
}

/* A task mw_submit() had accepted, taken out of the queue after a stop passed
 * its deadline: rejected, counted in `cancelled`, and finished. */
static void cancel_locked(mw_t *mw, struct record *rec)
{
    reject_locked(mw, rec, ECANCELED);
    mw->stats.cancelled++;
    finish_task_locked(mw);
}

/* ---- workers ----------------------------------------------------------------------------- */

/* Called with lock held, before storing a result. */
static void wait_for_result_room_locked(mw_t *mw)
{
    if (!results_full_locked(mw))
        return;
    mw->stats.workers_blocked++;
    kit_log("mw", "%zu results unconsumed: waiting for the master to take one", mw->results.count);
    wake_master_if_stuck_locked(mw);
    kit_trace_begin("mw", "waiting for result room");
    /* PAGE: result-limit. while, not if: the wake-up may be spurious, or
     * another worker may fill the slot that a take freed. */
    while (results_full_locked(mw))
        pthread_cond_wait(&mw->result_room, &mw->lock);
    kit_trace_end("mw");
    mw->stats.workers_blocked--;
}

/* Publish a complete record: store it (or it already went to on_result),
 * count it, and only then count the task finished - all in one step. */
static void publish_result(mw_t *mw, struct record *rec)
{
    bool store = mw->config.on_result == NULL;
    pthread_mutex_lock(&mw->lock);
    if (store) {
        wait_for_result_room_locked(mw);
        list_push(&mw->results, rec);
        if (mw->results.count > mw->stats.most_unconsumed)
            mw->stats.most_unconsumed = mw->results.count;
        pthread_cond_signal(&mw->result_ready); /* one result serves one consumer */
    }
    mw->stats.completed++;
    finish_task_locked(mw);
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
    mw->stats.failed++;
    finish_task_locked(mw);
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

/* A task taken from the queue after mw_stop() passed its deadline is not
 * started: it is recorded as not done, like the ones the stop drained. */
static bool cancelled_by_stop(mw_t *mw, struct record *rec)
{
    pthread_mutex_lock(&mw->lock);
    bool cancel = mw->stop_requested;
    if (cancel)
        cancel_locked(mw, rec);
    pthread_mutex_unlock(&mw->lock);
    return cancel;
}

static void leave(mw_t *mw)
{
    pthread_mutex_lock(&mw->lock);
    mw->stats.workers_alive--;
    kit_log("mw", "poison pill: leaving, %zu worker(s) left", mw->stats.workers_alive);
    pthread_cond_broadcast(&mw->worker_left); /* join_workers() waits for the last one */
    pthread_mutex_unlock(&mw->lock);
}

static void *worker_main(void *raw)
{
    mw_t *mw = raw;
    current_mw = mw;
    void *item;
    /* PAGE: poison-pill. Take, process, publish - until the pill. */
    while (bq_take(mw->queue, &item) == 0 && item != &poison_pill) {
        if (cancelled_by_stop(mw, item))
            continue;
        /* PAGE: worker-survives. A failing task is recorded by run_task();
         * the loop goes on, so one bad task never costs a worker. */
        if (run_task(mw, item) != 0)
            kit_log("mw", "the worker carries on");
    }
    leave(mw);
    return NULL;
}

/* ---- stopping ----------------------------------------------------------------------------- */

/* Called with lock held. Waits for pending == 0 until the deadline (NULL: no
 * limit). 0; EDEADLK when it can never happen; ETIMEDOUT. */
static int wait_for_pending_locked(mw_t *mw, const struct timespec *deadline)
{
    int err = 0;
    /* while, not if: the wake-up may be spurious, or meant for another
     * waiter. The deadline is the same on every turn. */
    while (mw->pending > 0 && !stuck_locked(mw) && err != ETIMEDOUT) {
        if (deadline)
            err = pthread_cond_timedwait(&mw->settled, &mw->lock, deadline);
        else
            pthread_cond_wait(&mw->settled, &mw->lock);
    }
    if (mw->pending == 0)
        return 0;
    return stuck_locked(mw) ? EDEADLK : ETIMEDOUT;
}

/* Called with lock held and pending == 0. Closes, and says whether the
 * caller is the one to send the pills (only one thread ever does). */
static bool claim_pills_locked(mw_t *mw)
{
    mw->closed = true;
    pthread_cond_broadcast(&mw->result_ready); /* the results have ended */
    bool mine = !mw->pills_sent;
    mw->pills_sent = true;
    return mine;
}

static void send_pills(mw_t *mw, size_t workers)
{
    kit_log("mw", "nothing pending: one poison pill for each of %zu workers", workers);
    /* PAGE: one-pill-per-worker. pending is 0, so no task is queued, running,
     * or about to be submitted by a task: the pills are the last items. */
    for (size_t i = 0; i < workers; i++)
        bq_put(mw->queue, &poison_pill);
}

/* Waits until every worker has left (deadline NULL: no limit), then joins them once. */
static int join_workers(mw_t *mw, const struct timespec *deadline)
{
    int err = 0;
    pthread_mutex_lock(&mw->lock);
    /* while, not if: one worker leaving wakes us; the others may still be on their way. */
    while (mw->stats.workers_alive > 0 && err != ETIMEDOUT) {
        if (deadline)
            err = pthread_cond_timedwait(&mw->worker_left, &mw->lock, deadline);
        else
            pthread_cond_wait(&mw->worker_left, &mw->lock);
    }
    bool all_left = mw->stats.workers_alive == 0;
    bool join = all_left && !mw->joined;
    if (join)
        mw->joined = true;
    size_t started = mw->started_threads;
    pthread_mutex_unlock(&mw->lock);
    for (size_t i = 0; join && i < started; i++)
        pthread_join(mw->threads[i], NULL);
    return all_left ? 0 : ETIMEDOUT;
}

/* Waits for pending == 0 (no limit), then pills and joins. */
static void stop_workers(mw_t *mw)
{
    pthread_mutex_lock(&mw->lock);
    wait_for_pending_locked(mw, NULL); /* cannot be stuck: a stop lifts the result limit */
    bool send = claim_pills_locked(mw);
    size_t started = mw->started_threads;
    pthread_mutex_unlock(&mw->lock);
    if (send)
        send_pills(mw, started);
    join_workers(mw, NULL);
}

/* PAGE: graceful-stop. The deadline has passed: tasks check
 * mw_stop_requested(), new sub-tasks are refused, and blocked workers may
 * store their results beyond the limit - nothing is dropped. */
static void request_stop_locked(mw_t *mw)
{
    kit_log("mw", "stop: %zu task(s) still pending", mw->pending);
    mw->stop_requested = true;
    mw->closed = true;
    pthread_cond_broadcast(&mw->result_room);
}

/* After the deadline, every task still queued is recorded as not done. */
static void cancel_queued(mw_t *mw)
{
    void *item;
    while (bq_poll(mw->queue, &item, 0) == 0) {
        if (item == &poison_pill) { /* another master already stopped the workers: keep it */
            bq_put(mw->queue, item);
            return;
        }
        pthread_mutex_lock(&mw->lock);
        cancel_locked(mw, item);
        pthread_mutex_unlock(&mw->lock);
    }
}

/* ---- the public functions --------------------------------------------------------------- */

static int init_sync(mw_t *mw)
{
    int err = pthread_mutex_init(&mw->lock, NULL);
    if (err != 0)
        return err;
    pthread_cond_t *conds[] = { &mw->settled, &mw->worker_left, &mw->result_room, &mw->result_ready };
    size_t made = 0;
    while (made < 4 && (err = kit_cond_init(conds[made])) == 0) /* CLOCK_MONOTONIC: deadlines */
        made++;
    if (err != 0) {
        while (made > 0)
            pthread_cond_destroy(conds[--made]);
        pthread_mutex_destroy(&mw->lock);
    }
    return err;
}

int mw_create(mw_t **out, const mw_config_t *config)
{
    if (out == NULL)
        return EINVAL;
    *out = NULL;
    if (config == NULL || config->workers == 0 || config->queue_capacity == 0 || config->process == NULL)
        return EINVAL;
    mw_t *mw = calloc(1, sizeof *mw);
    if (mw == NULL)
        return ENOMEM;
    mw->config = *config;
    snprintf(mw->name, sizeof mw->name, "%s", config->name ? config->name : "worker");
    mw->config.name = mw->name;
    mw->threads = calloc(config->workers, sizeof *mw->threads);
    int err = mw->threads ? bq_create(&mw->queue, config->queue_capacity) : ENOMEM;
    if (err == 0 && (err = init_sync(mw)) != 0)
        bq_destroy(mw->queue);
    if (err != 0) {
        free(mw->threads);
        free(mw);
        return err;
    }
    *out = mw;
    return 0;
}

/* Called with lock held. */
static int start_worker_locked(mw_t *mw, size_t index)
{
    char name[sizeof mw->name + 24]; /* kit_thread_start() truncates it to KIT_THREAD_NAME_MAX */
    snprintf(name, sizeof name, "%s-%zu", mw->name, index + 1);
    int err = kit_thread_start(&mw->threads[index], name, worker_main, mw);
    if (err == 0) {
        mw->started_threads++;
        mw->stats.workers_alive++;
    }
    return err;
}

int mw_start(mw_t *mw)
{
    if (mw == NULL)
        return EINVAL;
    pthread_mutex_lock(&mw->lock);
    int err = 0;
    if (mw->started)
        err = EINVAL;
    else if (mw->closed)
        err = ECANCELED;
    bool starting = err == 0;
    if (starting)
        mw->started = true;
    for (size_t i = 0; starting && err == 0 && i < mw->config.workers; i++)
        err = start_worker_locked(mw, i);
    pthread_mutex_unlock(&mw->lock);
    if (starting && err != 0) /* undo: stop the workers that did start */
        mw_stop(mw, 0);
    return err;
}

/* Counts the task as submitted and - unless refused - as pending, in one
 * step, before any worker can see it. A refused task is recorded at once. */
static int admit(mw_t *mw, struct record *rec)
{
    pthread_mutex_lock(&mw->lock);
    mw->stats.submitted++;
    bool subtask = current_mw == mw; /* from a running task, which is itself pending */
    int err = mw->stop_requested || (mw->closed && !subtask) ? ECANCELED : 0;
    if (err == 0)
        mw->pending++; /* PAGE: pending-before-enqueue */
    else
        reject_locked(mw, rec, err);
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
        reject_locked(mw, rec, err);
        finish_task_locked(mw);
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
    int err = mw->started ? wait_for_pending_locked(mw, &deadline) : EINVAL;
    bool send = err == 0 && claim_pills_locked(mw);
    size_t started = mw->started_threads;
    if (err == EDEADLK)
        kit_log("mw", "every worker waits for result room and nobody consumes: EDEADLK");
    pthread_mutex_unlock(&mw->lock);
    if (send)
        send_pills(mw, started);
    return err == 0 ? join_workers(mw, &deadline) : err;
}

int mw_stop(mw_t *mw, long timeout_ms)
{
    struct timespec deadline;
    if (mw == NULL || kit_deadline_after(timeout_ms, &deadline) != 0)
        return EINVAL;
    if (current_mw == mw)
        return EDEADLK;
    pthread_mutex_lock(&mw->lock);
    mw->closed = true;
    pthread_cond_broadcast(&mw->result_ready); /* closing may end the results */
    size_t cancelled_before = mw->stats.cancelled;
    /* Not started: nobody would ever run what is queued. Stuck: nobody would consume. */
    int err = mw->started ? wait_for_pending_locked(mw, &deadline) : mw->pending > 0 ? ETIMEDOUT : 0;
    if (err != 0)
        request_stop_locked(mw);
    pthread_mutex_unlock(&mw->lock);
    if (err != 0)
        cancel_queued(mw);
    stop_workers(mw);
    pthread_mutex_lock(&mw->lock);
    bool not_done = mw->stats.cancelled > cancelled_before;
    pthread_mutex_unlock(&mw->lock);
    return not_done ? ETIMEDOUT : 0;
}

int mw_close(mw_t *mw)
{
    if (mw == NULL)
        return EINVAL;
    pthread_mutex_lock(&mw->lock);
    mw->closed = true;
    pthread_cond_broadcast(&mw->result_ready); /* with nothing pending, the results end now */
    pthread_mutex_unlock(&mw->lock);
    return 0;
}

/* Called with lock held. Waits for a stored result; 0, ECANCELED (ended) or ETIMEDOUT. */
static int wait_for_result_locked(mw_t *mw, const struct timespec *deadline)
{
    int err = 0;
    mw->waiting_consumers++;
    /* while, not if: another consumer may take the result we were woken
     * for, or the wake-up was spurious. Same deadline on every turn. */
    while (mw->results.count == 0 && !results_ended_locked(mw) && err != ETIMEDOUT)
        err = pthread_cond_timedwait(&mw->result_ready, &mw->lock, deadline);
    mw->waiting_consumers--;
    if (mw->results.count > 0)
        return 0;
    return results_ended_locked(mw) ? ECANCELED : ETIMEDOUT;
}

int mw_take_result(mw_t *mw, mw_result_t *out, long timeout_ms)
{
    struct timespec deadline;
    if (mw == NULL || out == NULL || kit_deadline_after(timeout_ms, &deadline) != 0)
        return EINVAL;
    pthread_mutex_lock(&mw->lock);
    int err = wait_for_result_locked(mw, &deadline);
    struct record *rec = err == 0 ? list_pop(&mw->results) : NULL;
    if (rec && mw->stats.workers_blocked > 0)
        pthread_cond_signal(&mw->result_room); /* one slot freed: one worker may store */
    pthread_mutex_unlock(&mw->lock);
    if (rec) {
        *out = rec->result;
        free(rec);
    }
    return err;
}

static int take_record(mw_t *mw, struct list *list, mw_failure_t *out)
{
    if (mw == NULL || out == NULL)
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
    return mw ? take_record(mw, &mw->failed, out) : EINVAL;
}

int mw_take_rejected(mw_t *mw, mw_failure_t *out)
{
    return mw ? take_record(mw, &mw->rejected, out) : EINVAL;
}

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
    int err = mw->consumers > 0 ? 0 : EINVAL;
    if (err == 0)
        mw->consumers--;
    wake_master_if_stuck_locked(mw); /* the last consumer may have been the only way out */
    pthread_mutex_unlock(&mw->lock);
    return err;
}

bool mw_stop_requested(mw_t *mw)
{
    if (mw == NULL)
        return false;
    pthread_mutex_lock(&mw->lock);
    bool requested = mw->stop_requested;
    pthread_mutex_unlock(&mw->lock);
    return requested;
}

int mw_stats(mw_t *mw, mw_stats_t *out)
{
    if (mw == NULL || out == NULL)
        return EINVAL;
    pthread_mutex_lock(&mw->lock);
    *out = mw->stats;
    out->pending = mw->pending;
    out->unconsumed = mw->results.count;
    pthread_mutex_unlock(&mw->lock);
    return 0;
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
