/**
 * @file tpool.h
 * @brief Chapter 03: a thread pool whose idle workers retire, built on the chapter-02 queue.
 *
 * The source document's custom ThreadPool. Tasks are `fn(arg)` calls:
 * - while fewer than `core_threads` workers are alive, tpool_execute() starts
 *   a new worker and hands it the task directly;
 * - otherwise the task goes into a bounded bq_t through the configured
 *   reject policy (chapter 02): block, time out, discard, discard the oldest,
 *   abort, or run it on the calling thread;
 * - a worker that finds no task within `keep_alive_ms` retires, so an idle
 *   pool shrinks to zero threads and uses no CPU; it grows again on demand.
 *
 * **The idle-exit race.** In the source document a worker whose poll timed
 * out is still counted while it leaves, so execute() can queue a task "for"
 * a worker that is already going: the task then waits with nobody to run
 * it. Here retiring and queueing cannot miss each other (see tpool.c,
 * `PAGE: idle-exit-race`, and the chapter page).
 *
 * **Thread safety.** Once tpool_create() has returned, tpool_execute(),
 * tpool_execute_or_drop(), tpool_shutdown(), tpool_shutdown_now(),
 * tpool_stats() and tpool_await_termination() may be called from any
 * thread, concurrently with each other - tpool_execute() and the shutdowns
 * also from the pool's own tasks; tpool_await_termination() from a task of
 * the same pool returns EDEADLK. tpool_destroy() must be the last call on
 * the pool and may not run concurrently with any other. tpool_task_fail()
 * is for the pool's own workers (tpool_current() tells whether the caller
 * is one).
 *
 * Chapter 04's starvation detector reaches a little further in, through
 * tpool_internal.h; nothing else needs to.
 *
 * **Ownership.** tpool_execute() returning 0 means the pool took the task: it
 * will run `fn(arg)` exactly once, or - if a discard policy or
 * tpool_shutdown_now() drops it - call the task's `drop(arg)` instead (see
 * tpool_execute_or_drop()). Any error return means `fn` will never be called
 * and the caller still owns `arg`.
 *
 * @ingroup ch03
 */
#ifndef TPOOL_H
#define TPOOL_H

#include <stddef.h>

#include "bq.h"

/** @defgroup ch03 Chapter 03 - thread pool
 *  @brief Core threads, a bounded queue, reject policies, idle reclaim, shutdown.
 *  @{ */

/** @brief Longest pool name, in characters: `<name>-<n>` must fit a thread name. */
#define TPOOL_NAME_MAX 23

/** @brief An opaque thread pool. */
typedef struct tpool tpool_t;

/** @brief How to build a pool. */
typedef struct tpool_config {
    size_t core_threads;   /**< most workers alive at once, >= 1 */
    size_t queue_capacity; /**< tasks waiting for a worker, >= 1 */
    long keep_alive_ms;    /**< an idle worker retires after this long, >= 0 (0: at once) */
    /**
     * What tpool_execute() does when the queue is full. The pool supplies
     * the item functions itself: with bq_policy_caller_runs() the task runs
     * on the thread calling tpool_execute(); with the discard policies the
     * dropped task's `drop(arg)` is called (the policy's own on_discard is
     * not used, since queue items are the pool's task records). A
     * user-written policy sees those records as opaque items: it may put them
     * in the queue, pass them to `item_fn` (which drops them) or return an error.
     */
    bq_policy_t reject;
    const char *name;      /**< threads are named `<name>-<n>`; NULL gives "pool". Copied; a name
                                longer than TPOOL_NAME_MAX characters is refused with EINVAL, never cut */
} tpool_config_t;

/** @brief A consistent snapshot of the pool's counters, taken under its lock. */
typedef struct tpool_stats {
    size_t threads;       /**< workers alive now */
    size_t active;        /**< workers running a task now; a task that the caller-runs policy runs
                               on the submitting thread is not counted (that thread is no worker
                               of this pool, or is one already counted for its own task) */
    size_t largest;       /**< most workers ever alive at once */
    size_t completed;     /**< tasks that ran to the end (on a worker or on the caller) */
    size_t queued;        /**< tasks waiting in the queue now */
    size_t rejected;      /**< tpool_execute() calls that returned an error */
    size_t retired;       /**< workers that left after keep_alive_ms idle */
    size_t submitted;     /**< tpool_execute() calls with valid arguments */
    size_t dropped;       /**< accepted tasks never run: discarded, or dropped by shutdown_now */
    size_t failed;        /**< completed tasks that called tpool_task_fail() */
    size_t ran_by_caller; /**< completed tasks run by the caller-runs policy */
} tpool_stats_t;

/**
 * @brief Create a pool. No thread starts until the first task arrives.
 * @param[out] out    the pool; NULL on failure.
 * @param[in]  config copied; `name` is copied too.
 * @return 0; EINVAL (NULL argument, 0 core threads, 0 queue capacity, negative
 *         keep-alive, a policy without a reject function, a name longer than
 *         TPOOL_NAME_MAX characters); ENOMEM; or a pthread error. On failure
 *         nothing is allocated.
 * @see tpool_destroy
 */
int tpool_create(tpool_t **out, const tpool_config_t *config);

/**
 * @brief Run `fn(arg)` on the pool.
 * @param[in] p   the pool.
 * @param[in] fn  the task.
 * @param[in] arg its argument, owned as described in tpool.h.
 * @return 0 (accepted: see the ownership rule); EINVAL (NULL @p p or @p fn);
 *         ECANCELED (the pool is shut down); the reject policy's error
 *         (EAGAIN for abort, ETIMEDOUT for timeout); EAGAIN if no worker
 *         was alive and none could be started for the task (it was not
 *         queued); ENOMEM.
 *
 * One case returns 0 without a worker: a worker was alive when the task
 * was queued, it retired before it took the task, and starting its
 * replacement failed. The task then waits in the queue until a later
 * tpool_execute() or tpool_shutdown() starts a worker for it, or
 * tpool_destroy() drops it (calling `drop`) if none can be started.
 * @par Thread safety
 * Any thread, including the pool's own tasks.
 */
int tpool_execute(tpool_t *p, void (*fn)(void *), void *arg);

/**
 * @brief tpool_execute(), and if the pool drops the task instead of running
 *        it (a discard policy, or tpool_shutdown_now()), it calls `drop(arg)`
 *        so that whoever owns @p arg can release it or report it. @p drop may be NULL.
 * @return as tpool_execute().
 */
int tpool_execute_or_drop(tpool_t *p, void (*fn)(void *), void (*drop)(void *), void *arg);

/**
 * @brief Stop accepting tasks. Tasks already queued still run (if no worker
 *        is alive to run them, one is started); idle workers wake up and
 *        leave once the queue is empty. Harmless twice.
 * @return 0 or EINVAL.
 */
int tpool_shutdown(tpool_t *p);

/**
 * @brief tpool_shutdown(), and drop every task still queued (each one's
 *        `drop(arg)` is called and it is counted in `dropped`). Tasks already
 *        running finish: nothing is interrupted.
 * @return 0 or EINVAL.
 */
int tpool_shutdown_now(tpool_t *p);

/**
 * @brief Wait until the pool is shut down, its queue is empty and every worker
 *        has exited (and been joined).
 * @param[in] p          the pool.
 * @param[in] timeout_ms how long to wait (0: just check).
 * @return 0; ETIMEDOUT (not terminated yet - e.g. never shut down, or a task
 *         still runs); EINVAL (NULL, negative timeout); EDEADLK when called
 *         from one of the pool's own tasks, which would wait for itself.
 */
int tpool_await_termination(tpool_t *p, long timeout_ms);

/**
 * @brief Read all counters at one instant (under the pool's lock).
 * @return 0 or EINVAL.
 */
int tpool_stats(tpool_t *p, tpool_stats_t *out);

/**
 * @brief Shut down, wait for every queued and running task, join every
 *        worker, free the pool. NULL is a no-op. (Should no worker at all
 *        be left or startable to run queued tasks - thread creation kept
 *        failing - those tasks are dropped, as by tpool_shutdown_now(),
 *        instead of being waited for forever.)
 * @pre No other thread calls into @p any more. Called from one of the pool's
 *      own tasks it would wait for itself forever: it then does nothing.
 * @see tpool_create
 */
void tpool_destroy(tpool_t *p);

/** @name For code that runs inside tasks, and for chapter 04's futures
 *  @{ */

/** @brief Inside a task: mark it failed (counted in `failed`). The worker carries on. */
void tpool_task_fail(int error);

/** @brief The pool whose worker is calling, or NULL on any other thread. */
tpool_t *tpool_current(void);

/** @} */

/** @} */
#endif
