/**
 * @file starvation.c
 * @brief Chapter 04 solution: the starvation detector - would this wait leave the pool with nobody to do its work?
 *
 * DESIGN. A pool's queued tasks run only on that pool's workers. future_get()
 * on a worker of pool P, for a future whose task is queued in P or running
 * on another worker of P, waits for work only P's workers can do; before it
 * waits it calls tpool_block_begin(P), and when the wait is over, whoever
 * ends it calls tpool_block_end(P). So P counts its *blocked* workers. When
 * every other live worker is blocked, the caller is the last one that could
 * still run P's queued work - and it is about to wait too. If P can start
 * another worker, it does; if not, the wait could never end, and
 * tpool_block_begin() answers EDEADLK instead of letting it hang.
 *
 * The check, the start of a worker and the count are one critical section
 * under P's own lock (lent through tpool_internal.h): a worker starting or
 * retiring in between would make the answer stale, and two workers that
 * checked at once could both decide "someone else is still free".
 *
 * Lock order: a future's lock (future.c calls in with it held), then the
 * pool's lock, then the queue's (inside the pool). Nothing here waits.
 */
#define _POSIX_C_SOURCE 200809L
#include "future.h"

#include <errno.h>

#include "tpool_internal.h"

int tpool_block_begin(tpool_t *p)
{
    if (p == NULL)
        return EINVAL;
    int err = 0;
    tpool_lock(p);
    size_t blocked = tpool_blocked_locked(p);
    /* PAGE: starvation-detector. Queued tasks run only on this pool's workers.
     * If every other worker already waits for a queued task, the caller is
     * the last one who could run them - and it is about to wait too. */
    if (blocked + 1 >= tpool_alive_locked(p)) {
        /* Only a new worker could run them now: at core size, or shut down, there is none. */
        if (tpool_add_worker_locked(p) != 0)
            err = EDEADLK;
    }
    if (err == 0)
        tpool_set_blocked_locked(p, blocked + 1); /* also after starting a worker: the caller still waits */
    tpool_unlock(p);
    return err;
}

void tpool_block_end(tpool_t *p)
{
    if (p == NULL)
        return;
    tpool_lock(p);
    tpool_set_blocked_locked(p, tpool_blocked_locked(p) - 1);
    tpool_unlock(p);
}
