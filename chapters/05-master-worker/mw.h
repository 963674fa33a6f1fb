/**
 * @file mw.h
 * @brief Chapter 05: master-worker - a bounded task queue, workers that never
 *        die of a failing task, immutable result records, and a completion
 *        signal that stays right when tasks spawn tasks.
 *
 * The source document's MasterWorkerFramework, with its defects fixed. The
 * *master* (whoever calls mw_submit() and mw_await()) hands tasks to a
 * bounded chapter-02 queue; `workers` threads take them, call the process
 * function, and *publish* what came out:
 * - success: an immutable result record (task id, data, cost in
 *   microseconds), built completely and then published in one step - either
 *   stored for mw_take_result() or handed to the `on_result` callback;
 * - failure (the process function returned non-zero): the task goes to the
 *   failed list, with its error, and the worker carries on with the next task;
 * - a task that never ran - the queue stayed full until the submit timeout,
 *   the component was closed, or mw_stop() took it out of the queue - goes to
 *   the rejected list. Nothing is ever dropped silently.
 *
 * **Thread safety.** Once mw_create() has returned, every function may be
 * called from any thread, concurrently with any other, except: mw_start()
 * once, by the master; mw_await() and mw_stop() not from the component's
 * own workers (a process function or on_result of this component gets
 * EDEADLK); mw_destroy() only when no other thread uses the component any
 * more. Process functions may call mw_submit(), mw_stop_requested(),
 * mw_stats() and the take functions on their own component.
 *
 * **Completion.** A `pending` counter is incremented *before* a task becomes
 * visible to the workers and decremented only *after* its result or failure
 * is published. pending == 0 therefore means "every task submitted so far is
 * finished", even when running tasks submit sub-tasks (a process function
 * may call mw_submit()). mw_await() sleeps on a condition variable until that
 * moment - no polling - and only then stops the workers with one poison pill
 * each. Poison pills alone cannot decide "done": a pill queued while a task
 * is still running lands *in front of* the sub-tasks that task submits later.
 *
 * **Conservation.** Every mw_submit() call with valid arguments ends up in
 * exactly one of `completed`, `failed` or `rejected`. At every instant
 * `submitted == completed + failed + rejected + pending`, so once done
 * `submitted == completed + failed + rejected`.
 *
 * **Result back-pressure.** With `result_limit` > 0, at most that many
 * results are stored unconsumed: a worker with a new result waits until the
 * master takes one. The master must therefore consume *while* the workers
 * run - with mw_take_result(), on its own thread or on a consumer thread
 * announced with mw_consumer_begin()). The document's deadlock trap is a master that waits
 * for completion *before* consuming: the results are full, nobody makes
 * room, and no worker can finish anything more - every pending task is held
 * by a worker waiting for room (the other workers idle: they cannot help),
 * or every worker waits for room. mw_await() recognises that state and
 * returns EDEADLK instead of hanging. A result given to `on_result` is never
 * stored, so it never waits.
 *
 * **Ownership.**
 * - A payload passed to mw_submit() stays the caller's memory; the component
 *   only carries the pointer. If mw_submit() returns 0 the process function
 *   borrows it while it runs; after a *success* the process function is
 *   responsible for it (free it, or make it part of the result data); after a
 *   *failure* it comes back through mw_take_failed(). If mw_submit() fails,
 *   whatever the error, the task never ran and the caller keeps the payload.
 *   After ETIMEDOUT or ECANCELED the rejected record also carries the
 *   pointer (mw_take_rejected() shows it again; the component never reads
 *   or frees it): free it once - after the error return or after taking the
 *   record, not both. After EINVAL or ENOMEM nothing was recorded.
 * - Result data (`*result` set by the process function) belongs to whoever
 *   takes the record with mw_take_result(), or to `on_result`.
 * - The component never frees a payload or result data. mw_destroy() frees
 *   its own records; payloads and data still in them are not freed - take
 *   them first if they own memory.
 *
 * **Timeouts** are relative milliseconds: 0 = do not wait, negative = EINVAL.
 * Each timed call turns its timeout into one absolute CLOCK_MONOTONIC
 * deadline, so wake-ups for nothing never stretch it.
 *
 * @ingroup ch05
 */
#ifndef MW_H
#define MW_H

#include <stdbool.h>
#include <stddef.h>

/** @defgroup ch05 Chapter 05 - master-worker
 *  @brief Pending counter, poison pills, results and failures, back-pressure, conservation.
 *  @{ */

/** @brief An opaque master-worker component. */
typedef struct mw mw_t;

/** @brief A task as the process function sees it. */
typedef struct mw_task {
    long id;       /**< the submitter's label: any value, need not be unique */
    void *payload; /**< the submitter's data, owned as described in mw.h */
} mw_task_t;

/** @brief An immutable result record: built whole, published once, copied out. */
typedef struct mw_result {
    long task_id;  /**< the id of the task that produced it */
    void *data;    /**< what the process function put in `*result` */
    long cost_us;  /**< how long the process function ran, in microseconds */
} mw_result_t;

/** @brief A task that failed or never ran, with why. */
typedef struct mw_failure {
    mw_task_t task; /**< the task as submitted, with its payload pointer */
    int error;      /**< failed: the process function's return value;
                         rejected: ETIMEDOUT (queue full) or ECANCELED (closed or stopped) */
} mw_failure_t;

/**
 * @brief The work: process @p task, store what it produced in `*result`
 *        (NULL on entry), return 0 - or return non-zero to report a failure
 *        (`*result` is then ignored; free anything you made).
 *
 * Runs on a worker thread with no lock of the component held. It may call
 * mw_submit() on @p mw to add sub-tasks, and mw_stop_requested() to notice a
 * stop. It must not call mw_await(), mw_stop() or mw_destroy() on @p mw.
 */
typedef int (*mw_process_fn)(mw_t *mw, const mw_task_t *task, void **result, void *ctx);

/**
 * @brief Optional result callback: receives each result instead of storing
 *        it (the document's "extension three"). Runs on the worker thread,
 *        no lock held; takes ownership of `result->data`. The record is
 *        published - and the task finished - when the callback returns.
 */
typedef void (*mw_result_fn)(mw_t *mw, const mw_result_t *result, void *ctx);

/** @brief How to build a component. */
typedef struct mw_config {
    size_t workers;        /**< worker threads, >= 1 */
    size_t queue_capacity; /**< tasks waiting for a worker, >= 1 */
    mw_process_fn process; /**< the work, required */
    mw_result_fn on_result;/**< NULL: results are stored for mw_take_result() */
    size_t result_limit;   /**< most stored, unconsumed results; 0 = no limit (ignored with on_result) */
    void *ctx;             /**< passed to process and on_result */
    const char *name;      /**< workers are named `<name>-<n>`; NULL gives "worker" (copied) */
} mw_config_t;

/** @brief Counters, all read at one instant under the component's lock. */
typedef struct mw_stats {
    size_t submitted;       /**< mw_submit() calls with valid arguments (sub-tasks included) */
    size_t completed;       /**< results published (stored or given to on_result) */
    size_t failed;          /**< tasks whose process function returned non-zero */
    size_t rejected;        /**< tasks that never ran: full queue, closed, or dropped by mw_stop() */
    size_t cancelled;       /**< of the rejected, tasks mw_submit() had accepted that a stop took out of the queue
                                 unstarted; a submit refused after a stop is rejected, not cancelled */
    size_t pending;         /**< submitted, and not yet completed, failed or rejected */
    size_t unconsumed;      /**< results stored and not yet taken */
    size_t most_unconsumed; /**< the most results ever stored at once (<= result_limit if set) */
    size_t workers_alive;   /**< worker threads running now */
    size_t workers_blocked; /**< workers waiting for room under result_limit now */
} mw_stats_t;

/**
 * @brief Create a component. No thread starts before mw_start().
 * @param[out] out    the component; NULL on failure.
 * @param[in]  config copied (and `name` with it).
 * @return 0; EINVAL (NULL argument, 0 workers, 0 queue capacity, no process
 *         function); ENOMEM; or a pthread error. On failure nothing is allocated.
 * @par Thread safety
 * Once created, every function below may be called from any thread, except
 * where it says otherwise.
 * @see mw_destroy
 */
int mw_create(mw_t **out, const mw_config_t *config);

/**
 * @brief Start the worker threads.
 * @param[in] mw the component.
 * @return 0; EINVAL (NULL, or already started); ECANCELED (already stopped);
 *         or the error of starting a thread (EAGAIN, ENOMEM): then the
 *         workers that did start are stopped and joined, tasks still queued
 *         are recorded as rejected, and the component can only be destroyed.
 * @par Thread safety
 * Call once, from the master. Tasks may be submitted before it: they wait in
 * the queue.
 */
int mw_start(mw_t *mw);

/**
 * @brief Submit a task, waiting at most @p timeout_ms for room in the queue.
 * @param[in] mw         the component.
 * @param[in] task_id    the task's label.
 * @param[in] payload    the task's data (may be NULL); ownership in mw.h.
 * @param[in] timeout_ms 0 = do not wait; > 0 = wait at most this long.
 * @return 0 (queued; it will complete or fail); ETIMEDOUT (the queue stayed
 *         full) or ECANCELED (closed: after mw_close(), mw_await() or
 *         mw_stop(); sub-tasks are still accepted after mw_close() until a
 *         stop) - in both cases the task is recorded as rejected and counted
 *         (not in `cancelled`), and the caller keeps @p payload: the record
 *         carries the same pointer (see mw.h, Ownership);
 *         EINVAL (NULL @p mw, negative @p timeout_ms) or ENOMEM - then
 *         nothing is recorded or counted and the caller keeps @p payload.
 * @par Thread safety
 * Any thread, including a process function submitting sub-tasks. A process
 * function that waits for room in a full queue keeps its worker waiting:
 * give sub-tasks a short timeout, or a queue they fit in.
 */
int mw_submit(mw_t *mw, long task_id, void *payload, long timeout_ms);

/**
 * @brief Wait until every submitted task is finished (pending == 0), then
 *        stop the workers - one poison pill each - and join them.
 *
 * Once pending reaches zero the component is closed: later mw_submit()
 * calls fail with ECANCELED. Results, failures and rejections stay available.
 * @param[in] mw         the component.
 * @param[in] timeout_ms how long to wait (0: just check).
 * @return 0 (all done, every worker joined; calling it again returns 0);
 *         ETIMEDOUT (not done yet, or a worker had not left yet: call it
 *         again); EDEADLK (the wait could never end: the results are at
 *         `result_limit`, no consumer is announced or waiting, and every
 *         pending task is held by a worker waiting for room, or every worker
 *         waits for room - the deadlock trap; nothing changed: consume, then
 *         call it again),
 *         also when called from a process function of @p mw (it would wait
 *         for its own task); EINVAL (NULL, negative timeout, not started).
 * @par Thread safety
 * Any thread but the component's own workers; several may wait at once.
 */
int mw_await(mw_t *mw, long timeout_ms);

/**
 * @brief Graceful stop: close, let the workers finish for up to
 *        @p timeout_ms, then take what is still queued out of the queue,
 *        wait for the tasks already running, and stop and join every worker.
 *
 * After the deadline, mw_stop_requested() is true (a long task should check
 * it and return), no queued task is started any more (whether mw_stop() or a
 * worker takes it out of the queue, it is recorded as rejected with
 * ECANCELED and counted in `cancelled`), new sub-tasks are rejected, and
 * `result_limit` is lifted so that no worker waits for a consumer that may
 * never come: results are never dropped. Running tasks are not interrupted - C has no interruption -
 * so a process function that never returns keeps mw_stop() waiting.
 * @param[in] mw         the component.
 * @param[in] timeout_ms how long queued tasks may still run (0: none).
 * @return 0 (every task mw_submit() accepted was done); ETIMEDOUT (some
 *         accepted tasks were not done: they are recorded as rejected with
 *         ECANCELED and counted in `cancelled`; every worker is stopped and
 *         joined all the same);
 *         EDEADLK when called from a process function of @p mw; EINVAL (NULL,
 *         negative timeout). Before mw_start() it records every queued task
 *         as not done. Calling it again returns 0 unless more was cancelled.
 * @par Thread safety
 * Any thread but the component's own workers. Results, failures and
 * rejections stay available afterwards.
 */
int mw_stop(mw_t *mw, long timeout_ms);

/**
 * @brief Stop accepting tasks from outside the workers. Sub-tasks submitted
 *        by running tasks are still accepted, so everything in flight can
 *        finish. Lets a consumer loop end: see mw_take_result(). Harmless twice.
 * @param[in] mw the component.
 * @return 0 or EINVAL (NULL).
 * @par Thread safety
 * Any thread. A master that consumes on its own thread calls it after its
 * last mw_submit(), then takes results until ECANCELED.
 */
int mw_close(mw_t *mw);

/**
 * @brief The consuming iterator: remove the oldest stored result, waiting at
 *        most @p timeout_ms for one. Taking a result makes room for a worker
 *        waiting under `result_limit`.
 * @param[in]  mw         the component.
 * @param[out] out        the record, copied; unchanged on error.
 * @param[in]  timeout_ms 0 = do not wait; > 0 = wait at most this long.
 * @return 0 (the caller now owns `out->data`); ECANCELED (no result stored
 *         and none can come: closed and nothing pending - the end of the
 *         results); ETIMEDOUT; EINVAL.
 * @par Thread safety
 * Any number of consumers; each result is taken exactly once. A thread
 * waiting here counts as a consumer for mw_await()'s deadlock check.
 */
int mw_take_result(mw_t *mw, mw_result_t *out, long timeout_ms);

/**
 * @brief Remove the oldest failed task (does not wait).
 * @param[in]  mw  the component.
 * @param[out] out the task and its error; the caller owns the payload again.
 *                 Unchanged on error.
 * @return 0; ENOENT (none recorded now); EINVAL (NULL argument).
 * @par Thread safety
 * Any thread, also while workers run; each record is taken exactly once.
 */
int mw_take_failed(mw_t *mw, mw_failure_t *out);

/**
 * @brief Remove the oldest rejected task (does not wait).
 * @param[in]  mw  the component.
 * @param[out] out the task and why it never ran (ETIMEDOUT or ECANCELED);
 *                 its payload pointer is the caller's, as it always was
 *                 (see mw_submit()). Unchanged on error.
 * @return 0; ENOENT (none recorded now); EINVAL (NULL argument).
 * @par Thread safety
 * As mw_take_failed().
 */
int mw_take_rejected(mw_t *mw, mw_failure_t *out);

/**
 * @brief Announce a consumer: a thread that keeps calling mw_take_result()
 *        until mw_consumer_end() is called for it.
 *
 * mw_await() cannot tell a consumer that is busy between two
 * mw_take_result() calls from one that will never come back; announcing it
 * here says "it will come back", and mw_await() never reports the deadlock
 * trap while a consumer is announced. Call it before starting the consumer
 * thread (or from it, before the results can fill up). A master consuming
 * on its own thread does not need this.
 * @param[in] mw the component.
 * @return 0 or EINVAL (NULL).
 * @par Thread safety
 * Any thread; begin and end are counted, so several consumers may be announced.
 */
int mw_consumer_begin(mw_t *mw);

/**
 * @brief A consumer announced by mw_consumer_begin() stops consuming. If the
 *        workers now wait for room with nobody left to make it, a waiting
 *        mw_await() returns EDEADLK.
 * @param[in] mw the component.
 * @return 0 or EINVAL (NULL, or no consumer announced).
 */
int mw_consumer_end(mw_t *mw);

/**
 * @brief Has mw_stop() passed its deadline? A running task should then
 *        finish early (return non-zero, say ECANCELED).
 * @param[in] mw the component.
 * @return true once the stop was requested, and also once the work is over
 *         (mw_await() or mw_stop() has told the workers to leave: no task
 *         runs any more); false before, and for NULL.
 * @par Thread safety
 * Any thread, typically a process function. Does not block for long.
 */
bool mw_stop_requested(mw_t *mw);

/**
 * @brief Read every counter at one instant.
 * @param[in]  mw  the component.
 * @param[out] out the counters; unchanged on error.
 * @return 0 or EINVAL (NULL argument).
 * @par Thread safety
 * Any thread, any time: the snapshot always satisfies
 * `submitted == completed + failed + rejected + pending`.
 */
int mw_stats(mw_t *mw, mw_stats_t *out);

/**
 * @brief Stop (as mw_stop() with timeout 0 if workers still run), join every
 *        worker and free the component and its records. NULL is a no-op.
 * @param[in] mw the component.
 * @pre No other thread uses @p mw. Called from a process function of @p mw
 *      it would wait for itself: it then does nothing.
 * @note Payloads and result data still in untaken records are not freed:
 *       take them first if they own memory.
 * @see mw_create
 */
void mw_destroy(mw_t *mw);

/** @} */
#endif
