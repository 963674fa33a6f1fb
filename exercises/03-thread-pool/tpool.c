/**
 * @file tpool.c
 * @brief Chapter 03 exercise: a thread pool whose idle workers retire, on the chapter-02 queue.
 *
 * Read chapters/03-thread-pool/README.md, run `make run CH=03`, then
 * implement the functions below; `make grade CH=03` scores them. Every
 * function returns ENOSYS (or does nothing) until you do.
 *
 * The shape of it:
 * - a task is a small record {run, drop, arg, pool} that you malloc in
 *   tpool_execute_or_drop() and free once it has run or been dropped;
 * - below core_threads live workers, a task starts a new worker and is
 *   handed to it directly; otherwise it goes into a bq_t (chapter 02)
 *   through bq_try_put() with the configured policy;
 * - a worker runs its first task, then loops on bq_poll(keep_alive_ms);
 *   when the poll gives up (ETIMEDOUT) it retires, when the queue is closed
 *   and empty (ECANCELED) it leaves;
 * - workers are joinable: one that leaves marks itself exited, and the
 *   next execute, await or destroy joins it (never pthread_detach).
 *
 * Lock order: the pool's lock, then the queue's (inside bq_*). Never run a
 * task, a reject policy or bq_try_put() while holding the pool's lock: a
 * task may take seconds, and a caller-runs task may call tpool_execute().
 *
 * The idle-exit race (the chapter page draws it): a worker whose poll timed
 * out is still counted until it takes the pool lock to leave. If execute
 * counts it in that moment and queues a task "for" it, the task is
 * stranded. Close it from both sides, under the pool lock: the retiring
 * worker re-checks the queue and stays if it is not empty; execute, after
 * queueing, starts a worker if none is left.
 *
 * The program's trace (the page shows a run) has the pool's own lines:
 * kit_log("tpool", "new worker %s", name) when a worker starts,
 * kit_log("tpool", "idle for %ld ms: retiring", keep_alive_ms) when one
 * leaves because its poll timed out, and kit_log("tpool", "shut down:
 * leaving") when one leaves a shut-down pool. Log after unlocking.
 */
#define _POSIX_C_SOURCE 200809L
#include "tpool.h"
#include "tpool_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit_log.h"
#include "kit_thread.h"
#include "kit_time.h"

struct tpool {
    /* TODO, immutable after create: core_threads, keep_alive_ms, the queue
     * (bq_t *), the policy (a copy of the config's, with item_fn replaced by
     * your own: "run the task record on the caller" for caller-runs -
     * compare policy.reject with bq_policy_caller_runs(NULL).reject - and
     * "drop the task record" for every other policy), and the name.
     * Then a mutex and a condition variable "terminated" (kit_cond_init: it
     * is waited on with a deadline). Guarded by the mutex: the list of
     * workers not yet joined, how many workers are alive (started and not
     * yet left: every decision reads this count), how many were ever
     * started (for names), the shutdown flag, and a tpool_stats_t that is
     * only reported, never decided on - tpool_stats() fills in its
     * `threads` from the alive count and its `queued` from the queue. */
    int placeholder; /* delete me */
};

/* TODO: a _Thread_local "current pool" (set by each worker: tpool_current())
 * and a _Thread_local failure code (reset before each task, read after it:
 * tpool_task_fail()). Keep the outer value when a caller-runs task runs
 * inside another task. */

int tpool_create(tpool_t **out, const tpool_config_t *config)
{
    /* TODO: EINVAL for NULL out (set *out = NULL otherwise), NULL config,
     * 0 core threads, 0 queue capacity, negative keep-alive, or
     * config->reject.reject == NULL, or a name longer than TPOOL_NAME_MAX
     * (refused, never cut). Allocate, copy the config and the name
     * ("pool" if NULL), bq_create() the queue, init the mutex and the
     * condvar; undo everything on failure with a goto ladder, the kit's one
     * way (exercises/00-shared-results/HINTS.md, hint 3): each failed step
     * jumps to the label that undoes the step before it, and the labels
     * fall through in reverse order (destroy_lock, destroy_queue, free_p).
     * Start no thread yet. */
    (void)out;
    (void)config;
    return ENOSYS;
}

int tpool_execute(tpool_t *p, void (*fn)(void *), void *arg)
{
    /* TODO: tpool_execute_or_drop() without a drop function. */
    (void)p;
    (void)fn;
    (void)arg;
    return ENOSYS;
}

int tpool_execute_or_drop(tpool_t *p, void (*fn)(void *), void (*drop)(void *), void *arg)
{
    /* TODO: EINVAL for NULL p or fn. Every call counts in submitted, and
     * joins the workers that have exited (after unlocking). A shut-down
     * pool refuses: ECANCELED. Below core_threads, the task goes to a new
     * worker named "<name>-<n>" (kit_thread_start) as its first task;
     * if no thread can be started but a worker is alive, it is queued
     * instead. Queueing is bq_try_put() with the pool's policy, with no
     * lock held - and then the idle-exit race's execute side (the header
     * comment). If even that late start fails, still return 0: the task
     * waits for the next execute or shutdown (tpool.h).
     * Any error: count it in rejected, free the record, return the error. */
    (void)p;
    (void)fn;
    (void)drop;
    (void)arg;
    return ENOSYS;
}

int tpool_shutdown(tpool_t *p)
{
    /* TODO: EINVAL for NULL. Under the lock set shutdown (if tasks are
     * queued and no worker is alive, start one: queued tasks still run);
     * if that already means terminated, broadcast "terminated". Then
     * bq_close() the queue: that wakes every idle worker in its poll, and
     * each one leaves once the queue is empty (bq_poll -> ECANCELED). */
    (void)p;
    return ENOSYS;
}

int tpool_shutdown_now(tpool_t *p)
{
    /* TODO: tpool_shutdown(), then take every task left in the queue
     * (bq_poll with 0) and drop it: call its drop(arg), count it in
     * dropped, free it. Running tasks finish. Broadcast "terminated" if
     * that completes termination. */
    (void)p;
    return ENOSYS;
}

int tpool_await_termination(tpool_t *p, long timeout_ms)
{
    /* TODO: EINVAL for NULL p or a negative timeout (kit_deadline_after);
     * EDEADLK when called from one of p's own workers. Under the lock,
     * WHILE not (shut down, no worker alive, queue empty) and the deadline
     * has not passed: pthread_cond_timedwait on "terminated" with that one
     * deadline. Join the exited workers after unlocking. 0 or ETIMEDOUT. */
    (void)p;
    (void)timeout_ms;
    return ENOSYS;
}

int tpool_stats(tpool_t *p, tpool_stats_t *out)
{
    /* TODO: EINVAL for NULL arguments; copy the counters under the lock and
     * fill in queued with bq_size(). */
    if (out != NULL)
        memset(out, 0, sizeof *out);
    (void)p;
    return ENOSYS;
}

void tpool_destroy(tpool_t *p)
{
    /* TODO: NULL (or a call from one of p's own tasks) is a no-op.
     * Shut down, wait for termination with no limit, then destroy the
     * queue, the condvar and the mutex, and free the pool. If no worker is
     * alive (and none could be started) to run what is queued, drop it
     * rather than wait forever. */
    (void)p;
}

/* ---- the worker (write these as static helpers) ----------------------------------
 * worker_main: set the current pool; run the first task, then the tasks
 *   bq_poll(queue, &item, keep_alive_ms) hands you. When the poll gives up,
 *   retire - the idle-exit race's worker side (PAGE: idle-exit-race): a
 *   worker that leaves is no longer alive, counts as retired if it was
 *   idle (ETIMEDOUT, not shut down), is marked exited for joining, and may
 *   be the one that completes termination.
 * run_task: the task runs with NO lock held; the counters around it
 *   (active, completed, failed if tpool_task_fail() was called) change
 *   under the lock. A failed task never ends its worker. A task that the
 *   caller-runs policy runs counts in ran_by_caller, not in active. */

void tpool_task_fail(int error)
{
    /* TODO: remember the failure (EIO if error is 0) for the running task. */
    (void)error;
}

tpool_t *tpool_current(void)
{
    /* TODO: the thread-local current pool. */
    return NULL;
}

/* ---- for chapter 04's starvation detector (tpool_internal.h) ----------------------
 * Chapter 04's tpool_block_begin() decides, under the pool's own lock,
 * whether a waiting worker leaves anyone to run the queue. Grading chapter
 * 04 links the reference pool, so these matter only when you link your own
 * (EARLIER=mine): each is a line or two. */

void tpool_lock(tpool_t *p)
{
    /* TODO: lock the pool's mutex. */
    (void)p;
}

void tpool_unlock(tpool_t *p)
{
    /* TODO: unlock it. */
    (void)p;
}

size_t tpool_alive_locked(tpool_t *p)
{
    /* TODO: the workers alive now (called with the lock held). */
    (void)p;
    return 0;
}

int tpool_add_worker_locked(tpool_t *p)
{
    /* TODO: EAGAIN if shut down or core_threads workers are alive; otherwise
     * start a worker with no first task (it polls the queue) and return
     * what starting it returned. Called with the lock held. */
    (void)p;
    return ENOSYS;
}

size_t tpool_blocked_locked(tpool_t *p)
{
    /* TODO: a size_t field of your pool (0 after create) that only chapter
     * 04's detector reads and writes, through these two functions. */
    (void)p;
    return 0;
}

void tpool_set_blocked_locked(tpool_t *p, size_t blocked)
{
    /* TODO: store it. */
    (void)p;
    (void)blocked;
}
