/**
 * @file future.c
 * @brief Chapter 04 exercise: futures on the chapter-03 pool, and a pool that notices it starves.
 *
 * Read chapters/04-starvation/README.md, run `make run CH=04`, then
 * implement the functions below; `make grade CH=04` scores them. Every
 * function returns ENOSYS (or does nothing) until you do.
 *
 * The rules of this chapter:
 * - a future is a one-shot monitor: ONE mutex, ONE condition variable
 *   `finished`, and a state that moves forward once
 *   (PENDING -> RUNNING -> DONE | FAILED, or PENDING -> CANCELLED);
 * - whoever finishes a future writes the state AND the result, then
 *   broadcasts - all in ONE critical section (publish, then wake);
 * - pthread_cond_broadcast, never signal: many threads may wait on one future;
 * - every wait is a `while` loop; a timed wait computes its deadline ONCE;
 * - "still PENDING?" and "now RUNNING" happen in ONE critical section,
 *   or a cancel slips in between and the task runs after all;
 * - reference counting: the caller and the pool's task each own a
 *   reference; the last future_release() frees.
 *
 * The pool you build on is chapter 03's (tpool.h): tpool_execute_or_drop()
 * to run a task and hear about it if the pool drops it, tpool_current() to
 * know which pool's worker you are. To ask the pool whether waiting is
 * safe, call tpool_block_begin()/tpool_block_end() - the detector you write
 * in starvation.c (see "How the detector decides" below).
 */
#define _POSIX_C_SOURCE 200809L
#include "future.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "kit_log.h"
#include "kit_time.h"

struct future {
    /* TODO: a mutex and ONE condition variable (made with kit_cond_init(),
     * so timed waits run on CLOCK_MONOTONIC); and, guarded by the mutex:
     * the state, the result, the error given to future_fail(), the
     * reference count, the pool it was submitted to, the pool whose worker
     * runs it (tpool_current() when it starts), how many waiters the pool
     * counted as blocked on it, and the lane (chapter 06). */
    int placeholder; /* delete me */
};

/* TODO: two _Thread_local variables: the failure set by future_fail() in
 * the task running on this thread, and the lane this thread runs. */

int future_create(future_t **out)
{
    /* TODO: EINVAL for NULL out (set *out = NULL otherwise). Allocate,
     * initialise the mutex and the condvar, state PENDING, one reference.
     * Undo everything on failure with a goto ladder, the kit's one way
     * (exercises/00-shared-results/HINTS.md, hint 3): each failed step
     * jumps to the label that undoes the step before it, and the labels
     * fall through in reverse order (destroy_lock, free_f). */
    (void)out;
    return ENOSYS;
}

future_t *future_retain(future_t *f)
{
    /* TODO: NULL: return NULL. Otherwise one more reference, under the lock. */
    return f;
}

void future_release(future_t *f)
{
    /* TODO: NULL is a no-op. Drop a reference under the lock; whoever drops
     * the last one destroys the condvar and the mutex and frees - after
     * unlocking (nobody else can hold a reference any more). */
    (void)f;
}

int future_run(future_t *f, void *(*fn)(void *), void *arg)
{
    /* TODO: EINVAL for NULL. A cancelled future returns ECANCELED and fn
     * is never called; otherwise claim it (RUNNING, with tpool_current() as
     * its runner) in the same critical section as the check. fn(arg) runs
     * with no lock held, with this thread's failure cleared (and restored
     * afterwards: a task may run another future inline). Then finish the
     * future - DONE with the result or FAILED with the error - publishing
     * before waking, and telling the pool that each counted waiter's wait
     * is over (tpool_block_end). */
    (void)f;
    (void)fn;
    (void)arg;
    return ENOSYS;
}

void future_fail(int error)
{
    /* TODO: remember error (0 becomes EIO) for the task running on this thread. */
    (void)error;
}

int future_cancel(future_t *f)
{
    /* TODO: EINVAL for NULL. PENDING -> CANCELLED, finished as a run
     * finishes it, and 0; already CANCELLED -> 0; RUNNING or finished ->
     * EBUSY, nothing changes. */
    (void)f;
    return ENOSYS;
}

bool future_is_done(future_t *f)
{
    /* TODO: DONE, FAILED or CANCELLED, read under the lock (false for NULL). */
    (void)f;
    return false;
}

future_state_t future_state(future_t *f)
{
    /* TODO: the state, read under the lock (FUTURE_CANCELLED for NULL). */
    (void)f;
    return FUTURE_CANCELLED;
}

void future_set_lane(future_t *f, const void *lane)
{
    /* TODO: NULL f: nothing. Otherwise store lane under the lock. */
    (void)f;
    (void)lane;
}

void future_enter_lane(const void *lane)
{
    /* TODO: remember the lane this thread runs. */
    (void)lane;
}

/* How the detector decides, before a get waits on an unfinished future:
 * - the future's lane is the lane this thread runs: EDEADLK;
 * - this thread is a worker of pool P (tpool_current()), the future was
 *   submitted to P, and it is still PENDING (queued in P) or RUNNING on a
 *   worker of P: only P's workers can finish it. Ask P:
 *   tpool_block_begin(P) returns EDEADLK if nobody would be left to run it
 *   (then return EDEADLK without waiting), or 0: P now counts you as
 *   blocked - remember that on the future (counted waiters), so that
 *   whoever finishes it calls tpool_block_end(P) for you. If you time out
 *   instead, un-count yourself (tpool_block_end) before returning. */

int future_get(future_t *f, void **result)
{
    /* TODO: EINVAL for NULL f. An unfinished future goes through the
     * detector first, then you wait WHILE it is unfinished (log
     * kit_log("future", "waiting for a result") once before you start
     * waiting, so the program's trace shows it). Then: DONE -> 0 and the
     * result (if result is not NULL); FAILED -> its error; CANCELLED ->
     * ECANCELED. */
    (void)f;
    (void)result;
    return ENOSYS;
}

int future_get_timed(future_t *f, void **result, long timeout_ms)
{
    /* TODO: as future_get, but compute ONE deadline with kit_deadline_after()
     * (EINVAL for a negative timeout) and loop on pthread_cond_timedwait with
     * it; ETIMEDOUT only if the future is still unfinished when it expires.
     * Hint: write one static helper that takes a deadline (NULL: no limit)
     * and use it for both gets. */
    (void)f;
    (void)result;
    (void)timeout_ms;
    return ENOSYS;
}

int tpool_submit(tpool_t *p, void *(*fn)(void *), void *arg, future_t **out)
{
    /* TODO: EINVAL for NULL out (set *out = NULL first), p or fn. Create the
     * future, remember the pool on it, and give the task a record holding
     * a second reference to the future, fn and arg. Hand the record to
     * tpool_execute_or_drop() with two callbacks: one that runs it
     * (future_run), one for a task the pool will never run (its waiters
     * must wake, with ECANCELED); each gives up the task's reference and
     * frees the record. If tpool_execute_or_drop fails, nothing will ever
     * run: undo with the goto ladder, and return its error. */
    (void)p;
    (void)fn;
    (void)arg;
    (void)out;
    return ENOSYS;
}
