/**
 * @file future.c
 * @brief Chapter 04 solution: a one-shot monitor per future, and a pool that notices it is stuck.
 *
 * DESIGN. `state` moves once: PENDING -> RUNNING -> DONE | FAILED, or
 * PENDING -> CANCELLED. The thread that finishes a future sets the state and
 * the result and broadcasts `finished` in one critical section, so a waiter
 * that wakes always finds both (`PAGE: publish-then-wake`).
 *
 * Starvation detection (`PAGE: own-pool-wait`): a worker of pool P that
 * waits for a future of P whose task is still queued in P (or running on
 * another worker of P) depends on P's workers alone. Before waiting it asks
 * the pool (tpool_block_begin) whether any worker would be left to do that
 * work; if not, the wait could never end and future_get returns EDEADLK. The
 * wait stays counted until the future finishes - the finisher un-counts it,
 * so the pool never thinks a worker is stuck after its answer arrived.
 *
 * Lock order: a future's lock, then the pool's lock (tpool_block_begin/end).
 * The pool never calls into a future while holding its own lock.
 */
#define _POSIX_C_SOURCE 200809L
#include "future.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "kit_log.h"
#include "kit_time.h"
#include "kit_trace.h"

struct future {
    pthread_mutex_t lock;
    pthread_cond_t finished;  /* broadcast once, when the future finishes */
    /* Guarded by lock: */
    future_state_t state;
    void *result;             /* DONE: what the task returned */
    int error;                /* FAILED: what it gave future_fail() */
    unsigned refs;            /* owners; the last future_release() frees */
    tpool_t *pool;            /* submitted to this pool (NULL: another executor) */
    tpool_t *runner;          /* RUNNING on a worker of this pool (NULL: another thread) */
    size_t counted_waiters;   /* waiters tpool_block_begin() counted on `pool` */
    const void *lane;         /* chapter 06: the lane that runs it, or NULL */
};

static _Thread_local int task_failure;       /* future_fail() in the task running here */
static _Thread_local const void *current_lane;

int future_create(future_t **out)
{
    if (out == NULL)
        return EINVAL;
    *out = NULL;
    future_t *f = calloc(1, sizeof *f);
    if (f == NULL)
        return ENOMEM;
    int err = pthread_mutex_init(&f->lock, NULL);
    if (err != 0)
        goto free_f;
    if ((err = kit_cond_init(&f->finished)) != 0) /* CLOCK_MONOTONIC: future_get_timed's deadline */
        goto destroy_lock;
    f->state = FUTURE_PENDING;
    f->refs = 1;
    *out = f;
    return 0;

    /* Undo in reverse order: each label undoes the step before the one that failed. */
destroy_lock:
    pthread_mutex_destroy(&f->lock);
free_f:
    free(f);
    return err;
}

future_t *future_retain(future_t *f)
{
    if (f == NULL)
        return NULL;
    pthread_mutex_lock(&f->lock);
    f->refs++;
    pthread_mutex_unlock(&f->lock);
    return f;
}

void future_release(future_t *f)
{
    if (f == NULL)
        return;
    pthread_mutex_lock(&f->lock);
    f->refs--;
    bool last = f->refs == 0;
    pthread_mutex_unlock(&f->lock);
    if (!last)
        return;
    pthread_cond_destroy(&f->finished);
    pthread_mutex_destroy(&f->lock);
    free(f);
}

static bool finished_locked(const future_t *f)
{
    return f->state == FUTURE_DONE || f->state == FUTURE_FAILED || f->state == FUTURE_CANCELLED;
}

/* Called with lock held: the future's one and only transition to a final state. */
static void finish_locked(future_t *f, future_state_t state, void *result, int error)
{
    /* PAGE: publish-then-wake. State and result are written before the
     * broadcast and under the same lock: a waiter cannot wake to half of it. */
    f->state = state;
    f->result = result;
    f->error = error;
    while (f->counted_waiters > 0) {
        tpool_block_end(f->pool); /* their wait is over now, whenever they wake */
        f->counted_waiters--;
    }
    pthread_cond_broadcast(&f->finished); /* every waiter, not one: they all wait for this */
}

int future_run(future_t *f, void *(*fn)(void *), void *arg)
{
    if (f == NULL || fn == NULL)
        return EINVAL;
    pthread_mutex_lock(&f->lock);
    /* Check and claim in one critical section: a cancel either comes before
     * (and we skip the task) or finds RUNNING (and fails). */
    bool cancelled = f->state != FUTURE_PENDING;
    if (!cancelled) {
        f->state = FUTURE_RUNNING;
        f->runner = tpool_current();
    }
    pthread_mutex_unlock(&f->lock);
    if (cancelled)
        return ECANCELED;
    int outer_failure = task_failure; /* a task may run another future's task inline */
    task_failure = 0;
    void *result = fn(arg);
    int failure = task_failure;
    task_failure = outer_failure;
    pthread_mutex_lock(&f->lock);
    if (failure != 0)
        finish_locked(f, FUTURE_FAILED, NULL, failure);
    else
        finish_locked(f, FUTURE_DONE, result, 0);
    pthread_mutex_unlock(&f->lock);
    return 0;
}

void future_fail(int error)
{
    task_failure = error ? error : EIO;
}

int future_cancel(future_t *f)
{
    if (f == NULL)
        return EINVAL;
    pthread_mutex_lock(&f->lock);
    int err = 0;
    if (f->state == FUTURE_PENDING)
        finish_locked(f, FUTURE_CANCELLED, NULL, 0);
    else if (f->state != FUTURE_CANCELLED)
        err = EBUSY; /* running or finished: too late */
    pthread_mutex_unlock(&f->lock);
    return err;
}

bool future_is_done(future_t *f)
{
    if (f == NULL)
        return false;
    future_state_t state = future_state(f);
    return state != FUTURE_PENDING && state != FUTURE_RUNNING;
}

future_state_t future_state(future_t *f)
{
    if (f == NULL)
        return FUTURE_CANCELLED;
    pthread_mutex_lock(&f->lock);
    future_state_t state = f->state;
    pthread_mutex_unlock(&f->lock);
    return state;
}

void future_set_lane(future_t *f, const void *lane)
{
    if (f == NULL)
        return;
    pthread_mutex_lock(&f->lock);
    f->lane = lane;
    pthread_mutex_unlock(&f->lock);
}

void future_enter_lane(const void *lane)
{
    current_lane = lane;
}

/* Called with lock held, before waiting on an unfinished future. Returns 0 to
 * wait (with *counted set if the pool now counts us as blocked), or EDEADLK
 * if the wait could never end. */
static int check_deadlock_locked(future_t *f, bool *counted)
{
    *counted = false;
    if (f->lane != NULL && f->lane == current_lane)
        return EDEADLK; /* its task runs after ours, in our lane: it cannot start while we wait */
    tpool_t *self = tpool_current();
    /* PAGE: own-pool-wait. Only this pool's workers can run its queued tasks. */
    bool own_pool_work = self != NULL && f->pool == self &&
                         (f->state == FUTURE_PENDING || f->runner == self);
    if (!own_pool_work)
        return 0;
    int err = tpool_block_begin(self);
    if (err == 0) {
        *counted = true;
        f->counted_waiters++;
    }
    return err;
}

static int outcome_locked(const future_t *f, void **result)
{
    switch (f->state) {
    case FUTURE_DONE:
        if (result)
            *result = f->result;
        return 0;
    case FUTURE_FAILED:
        return f->error;
    default:
        return ECANCELED;
    }
}

/* deadline NULL: wait as long as it takes. */
static int wait_for(future_t *f, void **result, const struct timespec *deadline)
{
    bool counted = false;
    int err = 0;
    pthread_mutex_lock(&f->lock);
    if (!finished_locked(f))
        err = check_deadlock_locked(f, &counted);
    if (err == 0 && !finished_locked(f)) {
        kit_log("future", "waiting for a result");
        kit_trace_begin("future", "waiting on a future");
        /* while, not if: spurious wake-ups; the deadline is the same every turn. */
        while (err == 0 && !finished_locked(f)) {
            if (deadline)
                err = pthread_cond_timedwait(&f->finished, &f->lock, deadline);
            else
                pthread_cond_wait(&f->finished, &f->lock);
        }
        kit_trace_end("future");
    }
    if (finished_locked(f)) {
        err = outcome_locked(f, result); /* even if the time ran out just as it finished */
    } else if (counted) {
        f->counted_waiters--; /* timed out first: we are no longer waiting, un-count ourselves */
        tpool_block_end(f->pool);
    }
    pthread_mutex_unlock(&f->lock);
    return err;
}

int future_get(future_t *f, void **result)
{
    if (f == NULL)
        return EINVAL;
    return wait_for(f, result, NULL);
}

int future_get_timed(future_t *f, void **result, long timeout_ms)
{
    struct timespec deadline;
    if (f == NULL || kit_deadline_after(timeout_ms, &deadline) != 0)
        return EINVAL;
    return wait_for(f, result, &deadline);
}

/* ---- submitting to a pool ------------------------------------------------------ */

struct submitted {
    future_t *future; /* the task's own reference */
    void *(*fn)(void *);
    void *arg;
};

static void run_submitted(void *raw)
{
    struct submitted *job = raw;
    future_run(job->future, job->fn, job->arg);
    future_release(job->future);
    free(job);
}

/* The pool will never run it (discarded, or shutdown_now): waiters must still wake. */
static void drop_submitted(void *raw)
{
    struct submitted *job = raw;
    future_cancel(job->future);
    future_release(job->future);
    free(job);
}

int tpool_submit(tpool_t *p, void *(*fn)(void *), void *arg, future_t **out)
{
    if (out == NULL)
        return EINVAL;
    *out = NULL;
    if (p == NULL || fn == NULL)
        return EINVAL;
    struct submitted *job = malloc(sizeof *job);
    if (job == NULL)
        return ENOMEM;
    future_t *f;
    int err = future_create(&f);
    if (err != 0)
        goto free_job;
    f->pool = p; /* not shared yet: no lock needed */
    *job = (struct submitted){ future_retain(f), fn, arg };
    err = tpool_execute_or_drop(p, run_submitted, drop_submitted, job);
    if (err != 0)
        goto release_future;
    *out = f;
    return 0;

    /* Undo in reverse order: each label undoes the step before the one that failed. */
release_future:
    future_release(f); /* never queued: both references are ours to drop */
    future_release(f);
free_job:
    free(job);
    return err;
}
