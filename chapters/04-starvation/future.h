/**
 * @file future.h
 * @brief Chapter 04: futures - a result that arrives later - on the chapter-03 pool.
 *
 * tpool_submit() runs `fn(arg)` on a pool and returns at once with a future;
 * future_get() waits until the task has finished and hands over what `fn`
 * returned. A future is a one-shot monitor: a mutex, a condition variable,
 * and a state that moves once, from PENDING through RUNNING to one of DONE,
 * FAILED or CANCELLED, never back.
 *
 * The chapter's story is starvation: two waiters in one pool of two both
 * take an order and wait for a dish that only a free thread of the same
 * pool could cook. Here that wait does not hang: future_get() called on a
 * worker of pool P, for a future whose task is still queued in P or is
 * running on another worker of P (work only P's workers can finish), is
 * counted as a blocked worker of P; when every other worker of P is
 * already blocked that way and P cannot grow, it returns EDEADLK at once.
 * The wait is counted for as long as it lasts and no longer: when it ends -
 * the future finished, or a timed get gave up - the worker is un-counted
 * once, not twice, so P's count of blocked workers is always the truth.
 * A wait for a task of another pool, or from a thread that is no worker of
 * P, is never refused.
 *
 * **Thread safety.** Every function may be called from any thread,
 * concurrently with every other, on futures the caller holds a reference
 * to - future_get() and future_get_timed() by any number of threads on one
 * future. future_fail() only means something inside a task run through a
 * future; future_enter_lane() concerns the calling thread only.
 *
 * **Reference counting.** A future is shared by whoever submitted it and by
 * the task that will complete it; each holds a reference and drops it with
 * future_release() (the pool drops its own when the task finishes or is
 * dropped). The memory goes when the last reference does, so release is
 * safe in any order. tpool_submit() gives the caller one reference.
 *
 * **Results.** The future stores `fn`'s return value and never frees it:
 * whoever calls future_get() decides what it points to. A task reports a
 * failure by calling future_fail() before returning; its return value is
 * then ignored.
 *
 * @ingroup ch04
 */
#ifndef FUTURE_H
#define FUTURE_H

#include <stdbool.h>

#include "tpool.h"

/** @defgroup ch04 Chapter 04 - futures and starvation
 *  @brief Results that arrive later; one pool starves, two pools do not; sizing a pool.
 *  @{ */

/** @brief An opaque, reference-counted future. */
typedef struct future future_t;

/** @brief Where a future is in its life. Only ever moves forward. */
typedef enum future_state {
    FUTURE_PENDING,   /**< submitted, not started: can still be cancelled */
    FUTURE_RUNNING,   /**< its task is running */
    FUTURE_DONE,      /**< finished; the result is available */
    FUTURE_FAILED,    /**< finished after calling future_fail() */
    FUTURE_CANCELLED  /**< cancelled (or dropped by the pool) before it started; it never runs */
} future_state_t;

/**
 * @brief Run `fn(arg)` on @p p; get its result later through @p out.
 * @param[in]  p   the pool.
 * @param[in]  fn  the task; its return value becomes the result.
 * @param[in]  arg its argument (the caller keeps ownership).
 * @param[out] out the future, with one reference for the caller; NULL on error.
 * @return 0; EINVAL (NULL @p p, @p fn or @p out); ENOMEM; or tpool_execute()'s
 *         error (ECANCELED, EAGAIN, ETIMEDOUT): then `fn` will never run.
 *         If the pool drops the task later (a discard policy,
 *         tpool_shutdown_now()), the future becomes CANCELLED.
 * @see future_release
 */
int tpool_submit(tpool_t *p, void *(*fn)(void *), void *arg, future_t **out);

/**
 * @brief Wait until the future is finished, then report how.
 * @param[in]  f      the future.
 * @param[out] result what `fn` returned (only written on success); may be NULL.
 * @return 0 (DONE); ECANCELED (cancelled or dropped); EDEADLK (the wait could
 *         never end: see future.h; nothing waited); EINVAL (NULL @p f); or the
 *         error the task gave future_fail() (use future_state() to tell a
 *         failure apart from the codes above).
 * @par Thread safety
 * Any number of threads may wait on one future; all of them wake.
 */
int future_get(future_t *f, void **result);

/**
 * @brief future_get(), waiting at most @p timeout_ms.
 * @return as future_get(), plus ETIMEDOUT once @p timeout_ms has passed with
 *         the future still unfinished (never earlier); EINVAL for a negative
 *         @p timeout_ms.
 */
int future_get_timed(future_t *f, void **result, long timeout_ms);

/**
 * @brief Cancel the task if it has not started yet: it will never run, and
 *        every waiter wakes with ECANCELED.
 * @return 0 (cancelled now, or already); EBUSY (too late: it has started or
 *         finished - nothing changed); EINVAL (NULL).
 */
int future_cancel(future_t *f);

/**
 * @brief True once DONE, FAILED or CANCELLED (false for NULL).
 *
 * Returns at once: it never waits for the task to finish. That is not "no
 * synchronisation needed": the state it reads is written by the threads
 * that run, complete and cancel @p f, so the read is synchronised with
 * them (taken under the future's lock, say, or an atomic load) like every
 * other read of the state.
 */
bool future_is_done(future_t *f);

/**
 * @brief The current state (FUTURE_CANCELLED for NULL).
 *
 * Returns at once, as future_is_done() does: it never waits for the task,
 * and its read of the state is synchronised with the threads that change it.
 */
future_state_t future_state(future_t *f);

/** @brief Drop one reference; the last one frees the future. NULL is a no-op. */
void future_release(future_t *f);

/**
 * @brief Inside a task run through a future: the task failed with @p error
 *        (0 is taken as EIO). future_get() will return @p error.
 */
void future_fail(int error);

/** @name The starvation detector (starvation.c), on chapter 03's pool
 *  @{ */

/**
 * @brief Called by a worker of @p p before it blocks waiting for work that
 *        only @p p's workers can do: a task still queued in @p p, or one
 *        running on another worker of @p p (future_get() calls it).
 *
 * If every other worker of @p p is already blocked that way and the pool
 * cannot start another, nobody is left to do that work: the wait would last
 * forever, so this returns EDEADLK and counts nothing. Otherwise it returns
 * 0 and counts the caller as blocked - also when it had to start a new
 * worker to keep one free, which it does when every other worker is blocked
 * and the pool may still grow. After a 0 the caller must call
 * tpool_block_end() when its wait is over.
 * @return 0, EDEADLK, or EINVAL (NULL @p p).
 * @par Thread safety
 * For the pool's own workers (tpool_current() == @p p), concurrently with
 * every pool function but tpool_destroy(). Takes the pool's lock, so a
 * caller may hold a future's lock, never the pool's.
 */
int tpool_block_begin(tpool_t *p);

/**
 * @brief The wait announced by tpool_block_begin() is over. NULL is a no-op.
 *
 * Called once for each tpool_block_begin() that returned 0, by whichever
 * thread ends that wait: a second call for the same wait would count fewer
 * blocked workers than there are.
 */
void tpool_block_end(tpool_t *p);

/** @} */

/** @name Building blocks for other executors (chapter 06)
 *  @{ */

/** @brief A new PENDING future with one reference. @return 0, EINVAL or ENOMEM. */
int future_create(future_t **out);

/** @brief Add a reference (for a second owner). @return @p f; NULL (and nothing done) for NULL. */
future_t *future_retain(future_t *f);

/**
 * @brief Run `fn(arg)` as @p f's task on the calling thread, if @p f is still
 *        PENDING: PENDING -> RUNNING -> DONE/FAILED, waking every waiter. A
 *        future runs a task at most once.
 * @return 0 if it ran; ECANCELED if @p f was not PENDING - cancelled, or its
 *         task already ran or runs (fn not called, nothing changed); EINVAL.
 */
int future_run(future_t *f, void *(*fn)(void *), void *arg);

/**
 * @brief Tie @p f to a *lane*: an executor that runs its tasks one at a
 *        time, in order (chapter 06: one lane per key). Call before anyone waits on @p f.
 *        A NULL @p f is a no-op.
 */
void future_set_lane(future_t *f, const void *lane);

/**
 * @brief The calling thread now runs tasks of @p lane (NULL: of none).
 *
 * While it does, future_get() on an unfinished future of the same lane
 * returns EDEADLK: that future's task cannot start before the current one ends.
 */
void future_enter_lane(const void *lane);

/** @} */

/** @} */
#endif
