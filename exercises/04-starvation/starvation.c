/**
 * @file starvation.c
 * @brief Chapter 04 exercise: the starvation detector - would this wait leave the pool with nobody to do its work?
 *
 * Read "How the detector decides" in chapters/04-starvation/README.md; the
 * contract is tpool_block_begin() and tpool_block_end() in future.h, and
 * your future_get() calls them (see exercises/04-starvation/future.c).
 * `make grade CH=04` scores them with the rest of the chapter. Write them
 * last: most tests pass without them.
 *
 * The pool is chapter 03's. Its lock guards its workers, and it lends you
 * that lock and a few things to do under it (tpool_internal.h):
 * tpool_lock()/tpool_unlock(), tpool_alive_locked() (workers alive),
 * tpool_add_worker_locked() (start one more, or EAGAIN when the pool is at
 * core size or shut down), and tpool_blocked_locked()/
 * tpool_set_blocked_locked(): a count of blocked workers that the pool
 * keeps for you and never reads itself.
 *
 * Lock order: a future's lock (your future_get holds it when it calls in
 * here), then the pool's. Nothing here waits.
 */
#define _POSIX_C_SOURCE 200809L
#include "future.h"

#include <errno.h>

#include "tpool_internal.h"

int tpool_block_begin(tpool_t *p)
{
    /* TODO: EINVAL for NULL. ONE critical section under the pool's lock (a
     * worker starting or leaving in between would make the answer stale):
     * when the caller would leave nobody free to run the queued work, the
     * pool must grow by a worker, or the answer is EDEADLK and nothing is
     * counted. Otherwise the caller counts as blocked, and 0.
     * (PAGE: starvation-detector) */
    (void)p;
    return ENOSYS;
}

void tpool_block_end(tpool_t *p)
{
    /* TODO: NULL is a no-op; otherwise, under the pool's lock, one blocked
     * worker fewer. */
    (void)p;
}
