/**
 * @file starvation.c
 * @brief Chapter 04, another design of the detector: it counts the workers
 *        that are still free to run the pool's queued work.
 *
 * DESIGN. Under the pool's lock: `alive` workers, `blocked` of them already
 * waiting for work of this pool, and the caller, about to wait too. The
 * workers still free to do that work are the others: alive - blocked - 1.
 * If none is left, a new worker is the only hope; if the pool cannot start
 * one (at core size, or shut down), the wait would never end: EDEADLK, and
 * nothing is counted. Otherwise the caller is counted as blocked. Check,
 * start and count are one critical section, so two workers deciding at once
 * cannot both believe the other is free.
 *
 * Lock order: a future's lock (held by future.c when it calls in), then the
 * pool's lock. Nothing here waits.
 */
#define _POSIX_C_SOURCE 200809L
#include "future.h"

#include <errno.h>

#include "tpool_internal.h"

/* Called with the pool's lock held: workers other than the caller that are not blocked. */
static size_t free_workers_besides_caller(tpool_t *p)
{
    size_t alive = tpool_alive_locked(p);
    size_t busy = tpool_blocked_locked(p) + 1; /* the blocked ones, and the caller */
    return alive > busy ? alive - busy : 0;
}

int tpool_block_begin(tpool_t *p)
{
    if (p == NULL)
        return EINVAL;
    tpool_lock(p);
    int err = 0;
    if (free_workers_besides_caller(p) == 0 && tpool_add_worker_locked(p) != 0)
        err = EDEADLK; /* nobody left to run the work, and nobody can be added */
    if (err == 0)
        tpool_set_blocked_locked(p, tpool_blocked_locked(p) + 1);
    tpool_unlock(p);
    return err;
}

void tpool_block_end(tpool_t *p)
{
    if (p == NULL)
        return;
    tpool_lock(p);
    size_t blocked = tpool_blocked_locked(p);
    if (blocked > 0) /* every end pairs with a begin: 0 here would be a bug upstream */
        tpool_set_blocked_locked(p, blocked - 1);
    tpool_unlock(p);
}
