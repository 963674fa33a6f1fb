/**
 * @file tpool_internal.h
 * @brief Chapter 03's pool, opened a little for chapter 04's starvation detector. Not for applications.
 *
 * Chapter 04's tpool_block_begin() (declared in future.h, written in the
 * chapter-04 file starvation.c) decides whether a worker about to wait for
 * its own pool's work would leave nobody to do it. That decision reads how
 * many workers are alive, may start one more, and counts the blocked
 * workers - in one critical section with every start and retirement of a
 * worker, or a worker leaving between the check and the count would make
 * the answer stale. So the pool lends the detector its lock, and these
 * few things to do under it. The pool itself never reads the blocked
 * count: it only keeps it, guarded by its lock, for the detector.
 *
 * Lock order: a future's lock, then this pool lock, then the queue's lock
 * (taken inside bq_*). Never run a task or wait while holding it.
 *
 * Every function but tpool_lock() requires the caller to hold the lock.
 * @ingroup ch03
 */
#ifndef TPOOL_INTERNAL_H
#define TPOOL_INTERNAL_H

#include <stddef.h>

#include "tpool.h"

/** @name Inside the pool's lock (for chapter 04's starvation detector)
 *  @{ */

/** @brief Take @p p's lock (the one that guards its workers). */
void tpool_lock(tpool_t *p);

/** @brief Release the lock taken by tpool_lock(). @pre The caller holds it. */
void tpool_unlock(tpool_t *p);

/** @brief The workers of @p p alive now (tpool_stats()'s `threads`). @pre tpool_lock() held. */
size_t tpool_alive_locked(tpool_t *p);

/**
 * @brief Start one more worker, with no first task: it takes work from the queue.
 * @return 0; EAGAIN if @p p already has `core_threads` workers alive or is
 *         shut down; or the error of starting a thread (ENOMEM, EAGAIN).
 * @pre tpool_lock() held.
 */
int tpool_add_worker_locked(tpool_t *p);

/** @brief The number of blocked workers the detector keeps in @p p (0 at create). @pre tpool_lock() held. */
size_t tpool_blocked_locked(tpool_t *p);

/** @brief Store the detector's number of blocked workers. @pre tpool_lock() held. */
void tpool_set_blocked_locked(tpool_t *p, size_t blocked);

/** @} */

#endif
