/**
 * @file rwl.c
 * @brief Chapter 08 exercise: a readers-writer lock that prefers writers.
 *
 * Read chapters/08-rwlock/README.md, run `make run CH=08`, then implement
 * the functions below; `make grade CH=08` scores them. Every function
 * returns ENOSYS until you do.
 *
 * The rules of this chapter: ONE mutex guards everything; readers wait on
 * one condition variable, writers on another; every wait sits in a `while`
 * loop that re-checks its condition; a new reader waits while a writer
 * holds the lock OR WAITS for it (writers first); no busy waiting.
 *
 * The program's trace (the page's run): on each turn of a wait loop,
 * before waiting, kit_log("rwl", ...) why - "reader waits: a writer holds
 * the lock" (or "... is waiting"), "writer waits: readers inside" (or "a
 * writer holds the lock"). The mutex is held there, so the lines come in
 * the order things happened. No test reads them.
 */
#define _POSIX_C_SOURCE 200809L
#include "rwl.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "kit_log.h"
#include "kit_time.h"

struct rwl {
    /* TODO: a mutex and two condition variables made with kit_cond_init()
     * (CLOCK_MONOTONIC, for the timed locks): one readers wait on, one
     * writers wait on. Guarded by the mutex: the number of readers inside,
     * the number of writers waiting, whether a writer is inside and which
     * thread it is (pthread_self()), and a table of the threads holding the
     * read lock with how many times each took it - grown with realloc when
     * it is full. */
    int placeholder; /* delete me */
};

int rwl_create(rwl_t **out)
{
    /* TODO: EINVAL for a NULL out (set *out = NULL otherwise). Allocate the
     * lock and a first small reader table, initialise the mutex and both
     * condvars, and undo everything on failure with a goto ladder (the
     * kit's one way: exercises/00-shared-results/HINTS.md, hint 3). */
    (void)out;
    return ENOSYS;
}

int rwl_read_lock(rwl_t *l)
{
    /* TODO: EINVAL for NULL. Lock the mutex. If this thread holds the write
     * lock: EDEADLK. If it holds the read lock already: count one more hold
     * and return at once - never wait behind a writer then (that writer
     * waits for this very thread). Otherwise WHILE a writer is inside OR A
     * WRITER WAITS, wait on the readers' condvar; then add this thread to
     * the table (ENOMEM if it cannot grow: nothing held). Unlock. */
    (void)l;
    return ENOSYS;
}

int rwl_read_lock_timed(rwl_t *l, long timeout_ms)
{
    /* TODO: as rwl_read_lock(), with ONE deadline computed once by
     * kit_deadline_after() (EINVAL for a negative timeout) and
     * pthread_cond_timedwait on that same deadline in the loop. When the
     * loop ends with ETIMEDOUT, look at the condition once more: the way
     * may have opened just as the time ran out. Share the code with
     * rwl_read_lock(): a static helper taking a deadline, NULL for none. */
    (void)l;
    (void)timeout_ms;
    return ENOSYS;
}

int rwl_read_unlock(rwl_t *l)
{
    /* TODO: EPERM if this thread is not in the reader table. Drop one hold;
     * at zero, remove it from the table, and if it was the LAST reader and
     * a writer waits, wake ONE writer. */
    (void)l;
    return ENOSYS;
}

int rwl_write_lock(rwl_t *l)
{
    /* TODO: EDEADLK at once if this thread holds the lock in either mode
     * (a reader asking for the write lock would wait for itself). Count
     * yourself as a waiting writer BEFORE the loop - from then on new
     * readers wait - and WHILE a writer is inside or readers are inside,
     * wait on the writers' condvar. Uncount yourself, then take the lock:
     * the writer flag and who you are. */
    (void)l;
    return ENOSYS;
}

int rwl_write_lock_timed(rwl_t *l, long timeout_ms)
{
    /* TODO: as rwl_write_lock(), with one deadline. A writer that gives up
     * (ETIMEDOUT) must not leave readers stranded: if it was the last
     * waiting writer and no writer holds the lock, the readers it held back
     * may go now - wake them all. */
    (void)l;
    (void)timeout_ms;
    return ENOSYS;
}

int rwl_write_unlock(rwl_t *l)
{
    /* TODO: EPERM unless this thread holds the write lock. Clear the flag;
     * if a writer waits, wake ONE writer (writers first); otherwise wake
     * EVERY waiting reader - they may all read at once. */
    (void)l;
    return ENOSYS;
}

void rwl_destroy(rwl_t *l)
{
    /* TODO: NULL is a no-op. Destroy both condvars and the mutex, free the
     * reader table and the lock. */
    (void)l;
}
