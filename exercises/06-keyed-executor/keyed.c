/**
 * @file keyed.c
 * @brief Chapter 06 exercise: a keyed serial executor on the chapter-03 pool.
 *
 * Read chapters/06-keyed-executor/README.md, run `make run CH=06`, then
 * implement the functions below; `make grade CH=06` scores them. Every
 * function returns ENOSYS until you do.
 *
 * The rules of this chapter:
 * - ONE mutex guards the map and every key's FIFO; no task ever runs under it.
 * - A key is in the map exactly while a drain for it is scheduled or running.
 *   Submitting to a key in the map only appends. Creating the FIFO, inserting
 *   it and scheduling its drain happen in one critical section; if the pool
 *   refuses the drain, take the key out again before unlocking.
 * - A drain takes ONE task per critical section and runs it unlocked; when
 *   it finds the FIFO empty it removes the key in THAT SAME critical section.
 * - Waits are `while` loops on a condition variable; nothing polls.
 *
 * Useful pieces: kit_map.h (the map: kit_map_get, kit_map_insert,
 * kit_map_remove, kit_map_count), future.h's building blocks (future_create,
 * future_retain, future_run, future_cancel, future_release, future_set_lane,
 * future_enter_lane), tpool_execute_or_drop() from tpool.h, and
 * kit_deadline_after() + kit_cond_init() from kit_time.h.
 */
#define _POSIX_C_SOURCE 200809L
#include "keyed.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "kit_log.h"
#include "kit_map.h"
#include "kit_time.h"

/* TODO: a task record: the next task of the same key, the future (the
 * executor's own reference: future_create() gives one, future_retain() a
 * second for the caller), fn and arg. */

/* TODO: a lane - one key's FIFO: a pointer back to the executor, head and
 * tail of the task list (guarded by the executor's lock), and a copy of the
 * key, so the drain can remove it from the map. */

struct keyed {
    /* TODO: the pool (immutable, not owned); a mutex; a condition variable
     * broadcast when the executor is closed and the map is empty; and,
     * guarded by the mutex: the map (key -> lane) and a closed flag. */
    int placeholder; /* delete me */
};

/* TODO: the drain, a `void drain(void *lane)` for tpool_execute_or_drop():
 *   loop: lock; if the lane has a task, pop it; otherwise remove the key
 *   from the map (and broadcast if closed and now empty) - in the SAME
 *   critical section - unlock and leave (free the lane);
 *   unlock; run the task with future_enter_lane(lane) set, so that a task
 *   waiting on a later task of its own key gets EDEADLK; a cancelled task
 *   makes future_run() return ECANCELED: just go on with the next one.
 *   After the task, put back the lane this thread was running before it,
 *   not NULL: a drain can run inline inside another key's task (a
 *   caller-runs pool, see the page), and that task must keep its own lane.
 *   A _Thread_local chain of the lanes this thread runs, innermost first,
 *   remembers it - and also answers keyed_await_termination()'s "am I
 *   inside a task of this executor?".
 *
 * TODO: its drop function: the pool will never run this drain (discard
 *   policy, tpool_shutdown_now()): remove the key, cancel its tasks.
 *
 * TODO (caller-runs pools): tpool_execute() may call drain() or the drop
 *   function right away, on the thread that is inside keyed_submit() and
 *   holds the lock. Note that case in a _Thread_local and let keyed_submit()
 *   run it after unlocking; otherwise it deadlocks on its own lock.
 *
 * TODO (the program's trace): the page's run shows the executor's own
 *   lines. Log them with kit_log("keyed", ...) where they happen (under
 *   the lock, when the thing happens under it): a new key's drain
 *   scheduled ("acct-A: new key - drain scheduled"), a drain leaving
 *   ("acct-A: queue empty - key removed, drain leaves"), a cancelled task
 *   skipped ("acct-A: skipping a cancelled task"), a dropped drain
 *   ("acct-A: the pool dropped the drain - cancelling its queue"). No test
 *   reads them. */

int keyed_create(keyed_t **out, tpool_t *pool)
{
    /* TODO: EINVAL for NULL out (set *out = NULL otherwise) or NULL pool.
     * Allocate, create the map, initialise the mutex and the condvar (with
     * kit_cond_init: await uses a CLOCK_MONOTONIC deadline); undo everything
     * on failure - with a goto ladder, the kit's one way
     * (exercises/00-shared-results/HINTS.md, hint 3): a failed step jumps to
     * the label that undoes the step before it, and the labels fall through
     * in reverse order (destroy_lock, destroy_map, free_kx). */
    (void)out;
    (void)pool;
    return ENOSYS;
}

int keyed_submit(keyed_t *kx, const char *key, void *(*fn)(void *), void *arg, future_t **out)
{
    /* TODO: EINVAL for NULL out (else *out = NULL first), kx, key or fn.
     * Build the task and its future BEFORE locking. Under the lock:
     * closed -> ECANCELED; key in the map -> append (future_set_lane first);
     * new key -> new lane, insert, append, schedule its drain with
     * tpool_execute_or_drop(); on failure (ECANCELED from a shut-down
     * pool, EAGAIN from a full one) remove the key again (rollback) and
     * free the lane - the same goto ladder as create. A key already in the
     * map just appends, even after the pool's shutdown: its drain is still
     * there to run it. Unlock. On error release both references and free
     * the task. Remember: once unlocked, the task may already have run.
     * Plain statements: an if per decision, a loop whose header only tests. */
    (void)kx;
    (void)key;
    (void)fn;
    (void)arg;
    if (out)
        *out = NULL;
    return ENOSYS;
}

int keyed_close(keyed_t *kx)
{
    /* TODO: set closed under the lock; if the map is already empty, nobody
     * else will ever broadcast - do it here. */
    (void)kx;
    return ENOSYS;
}

int keyed_await_termination(keyed_t *kx, long timeout_ms)
{
    /* TODO: EINVAL for NULL or a negative timeout (kit_deadline_after does
     * the check); EDEADLK if called from a task of kx (a _Thread_local
     * "lane I am running" tells you). Then, under the lock, WHILE not
     * (closed and the map is empty), pthread_cond_timedwait with ONE
     * deadline; 0 or ETIMEDOUT. */
    (void)kx;
    (void)timeout_ms;
    return ENOSYS;
}

size_t keyed_active_keys(keyed_t *kx)
{
    /* TODO: kit_map_count of the map, read under the lock (0 for NULL). */
    (void)kx;
    return 0;
}

void keyed_destroy(keyed_t *kx)
{
    /* TODO: NULL (or a call from one of kx's own tasks) is a no-op. Close,
     * await termination without a limit, then destroy the map, the condvar
     * and the mutex, and free kx. The pool is not yours: leave it. */
    (void)kx;
}
