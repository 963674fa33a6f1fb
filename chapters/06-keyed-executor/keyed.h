/**
 * @file keyed.h
 * @brief Chapter 06: a keyed serial executor - same key in order, different keys in parallel.
 *
 * The source document's KeyedExecutor. keyed_submit(kx, key, fn, arg, &f)
 * runs `fn(arg)` on a chapter-03 pool and returns a chapter-04 future, with
 * one guarantee per key:
 * - tasks of the **same key** run one at a time, never overlapping, in the
 *   order they were submitted;
 * - tasks of **different keys** run in parallel, as far as the pool's
 *   threads allow.
 * Think of bank accounts: deposits to one account must be applied one after
 * another, in order, while different accounts proceed side by side.
 *
 * **Thread safety.** Once keyed_create() has returned, keyed_submit(),
 * keyed_close(), keyed_await_termination() and keyed_active_keys() may be
 * called from any thread, concurrently with each other, tasks of the
 * executor included (a task gets EDEADLK from keyed_await_termination(), and
 * from future_get() on a later task of its own key). keyed_destroy() only
 * when no other thread calls into the executor any more.
 *
 * **How.** A map from key to a FIFO of waiting tasks. A key's FIFO is in the
 * map exactly while a *drain* for that key is scheduled on (or running on)
 * the pool: the drain takes the key's tasks one by one and runs them. So
 * submitting to a key that is in the map only appends; submitting to a new
 * key creates its FIFO, inserts it and schedules its drain, all under one
 * lock; and a drain that finds its FIFO empty removes the key under that
 * same lock before it leaves. Doing "empty? then remove" in two critical
 * sections would let a submission slip in between and be stranded: the
 * enqueue-versus-exit race the chapter page takes apart step by step.
 *
 * **Ownership.** keyed_submit() returning 0 hands the caller one reference
 * to the task's future (drop it with future_release()); the executor holds
 * its own until the task has run or been skipped. `arg` stays the caller's:
 * the executor passes it to `fn` and never frees it. The future stores what
 * `fn` returns and never frees that either. On any error `fn` will never be
 * called, nothing was queued, and `*out` is NULL.
 *
 * **Futures.** Everything of chapter 04 applies: future_get() for the result,
 * future_fail() inside `fn` to report a failure, future_cancel() before the
 * task starts to skip it. A failed or cancelled task never stops its key:
 * the next task of that key runs as usual.
 *
 * **Never wait for your own key.** A task that waits (future_get()) for a
 * later task of its own key waits for something that can only start once it
 * has returned. Instead of hanging, that future_get() returns EDEADLK at
 * once (chapter 04's lanes: each key is a lane).
 *
 * **The pool.** Drains run as tasks of the pool given to keyed_create(),
 * which may be shared with other work. Its reject policy decides what
 * happens when it is full: with bq_policy_abort() a submission for a new key
 * fails with EAGAIN and leaves nothing behind; with bq_policy_caller_runs()
 * the drain runs on the submitting thread, after keyed_submit() has released
 * the executor's lock; with a discard policy (or tpool_shutdown_now()) a
 * dropped drain cancels every task then waiting for its key. A policy that
 * *waits* (bq_policy_block(), bq_policy_timeout()) must not be used: the
 * pool is called under the executor's lock, and it would wait for workers
 * that may themselves be waiting for that lock.
 *
 * @ingroup ch06
 */
#ifndef KEYED_H
#define KEYED_H

#include <stddef.h>

#include "future.h"
#include "tpool.h"

/** @defgroup ch06 Chapter 06 - keyed serial executor
 *  @brief Per-key FIFOs on a shared pool: one key strictly in order, many keys at once.
 *  @{ */

/** @brief An opaque keyed serial executor. */
typedef struct keyed keyed_t;

/**
 * @brief Create an executor whose drains run on @p pool.
 * @param[out] out  the executor; NULL on failure.
 * @param[in]  pool the pool that runs the drains; not owned: it must outlive
 *                  the executor and keep accepting its drains (see keyed.h).
 * @return 0; EINVAL (NULL @p out or @p pool); ENOMEM; or a pthread error.
 *         On failure nothing is allocated.
 * @see keyed_destroy
 */
int keyed_create(keyed_t **out, tpool_t *pool);

/**
 * @brief Queue `fn(arg)` behind every earlier task of @p key.
 * @param[in]  kx  the executor.
 * @param[in]  key any C string, "" included; copied.
 * @param[in]  fn  the task; its return value becomes the future's result.
 * @param[in]  arg its argument, still owned by the caller.
 * @param[out] out the task's future, with one reference for the caller;
 *                 NULL on any error.
 * @return 0; EINVAL (NULL @p kx, @p key, @p fn or @p out); ECANCELED (the
 *         executor is closed, or @p key has no drain and the pool, shut
 *         down, refuses a new one - a key whose drain is still scheduled or
 *         running accepts the task, and that drain runs it, even after the
 *         pool's shutdown); ENOMEM; or the
 *         pool's rejection when a new key's drain cannot be scheduled
 *         (EAGAIN with bq_policy_abort()). On every error the executor is
 *         exactly as before - in particular a new key is not left in the map -
 *         and `fn` will never run.
 * @par Thread safety
 * Any number of threads may submit concurrently, tasks of the executor
 * included. Tasks of one key run in the order their keyed_submit() calls
 * took the executor's lock; for one submitting thread, that is the order of
 * its calls.
 */
int keyed_submit(keyed_t *kx, const char *key, void *(*fn)(void *), void *arg, future_t **out);

/**
 * @brief Stop accepting tasks: later keyed_submit() calls fail with
 *        ECANCELED. Tasks already accepted still run, in order. Harmless twice.
 * @return 0, or EINVAL for NULL.
 */
int keyed_close(keyed_t *kx);

/**
 * @brief Wait until the executor is closed and every key has drained
 *        (no key left in the map).
 * @param[in] kx         the executor.
 * @param[in] timeout_ms how long to wait (0: just check).
 * @return 0; ETIMEDOUT (not terminated after @p timeout_ms - never earlier -
 *         e.g. not closed, or a task still runs); EINVAL (NULL @p kx,
 *         negative @p timeout_ms); EDEADLK when called from one of the
 *         executor's own tasks, which would wait for itself.
 * @par Thread safety
 * Any number of threads may wait; all of them wake. The wait sleeps on a
 * condition variable: no polling.
 */
int keyed_await_termination(keyed_t *kx, long timeout_ms);

/**
 * @brief Keys with a drain scheduled or running now (the map's size): 0 once
 *        every key is idle. 0 for NULL. Stale as soon as it returns.
 */
size_t keyed_active_keys(keyed_t *kx);

/**
 * @brief Close, wait until every accepted task has run, free the executor.
 *        NULL is a no-op. The pool is not touched.
 * @pre No other thread calls into @p kx any more. Called from one of the
 *      executor's own tasks it would wait for itself forever: it then does
 *      nothing.
 * @see keyed_create
 */
void keyed_destroy(keyed_t *kx);

/** @} */
#endif
