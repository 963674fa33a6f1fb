/**
 * @file future.c
 * @brief Chapter 04, another design: every future is guarded by ONE mutex
 *        for the whole program, and every waiter sleeps on ONE condition
 *        variable.
 *
 * DESIGN. A future is small and lives briefly; giving each one its own
 * mutex and condition variable costs two initialisations (that can fail)
 * and two destructions per task. Here the futures share `futures_lock` and
 * `futures_finished`, both initialised statically: future_create() can only
 * fail for lack of memory, and future_release() is a plain free().
 *
 * The price: a finishing future broadcasts `futures_finished`, which wakes
 * the waiters of *every* future; each re-checks its own future's state in
 * its `while` loop and goes back to sleep if it is not the one. And all
 * futures serialise on one lock - fine for a teaching pool, where a future
 * is touched a handful of times in its life.
 *
 * The state moves once, PENDING -> RUNNING -> DONE | FAILED, or PENDING ->
 * CANCELLED, always under `futures_lock`, and the result is stored in the
 * same critical section that broadcasts: a waiter never sees one without
 * the other.
 *
 * Timed waits: a statically initialised condition variable runs on
 * CLOCK_REALTIME, so the waits name their clock instead, with
 * pthread_cond_clockwait(CLOCK_MONOTONIC), against one deadline per call.
 *
 * Starvation: a worker of pool P that waits for work only P can do (a task
 * queued in P, or running on another worker of P) asks tpool_block_begin(P)
 * first; the finisher of the future un-counts every counted waiter.
 *
 * Lock order: `futures_lock`, then a pool's lock (tpool_block_begin/end).
 */
#define _GNU_SOURCE /* pthread_cond_clockwait() */
#include "future.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "kit_time.h"

/* The one lock of every future, and the one place where their waiters sleep. */
static pthread_mutex_t futures_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t futures_finished = PTHREAD_COND_INITIALIZER; /* broadcast when any future finishes */

struct future {
    /* All guarded by futures_lock: */
    future_state_t state;
    void *result;           /* DONE: what fn returned */
    int error;              /* FAILED: what it gave future_fail() */
    unsigned refs;
    tpool_t *pool;          /* the pool it was submitted to (NULL: another executor) */
    tpool_t *runner;        /* RUNNING on a worker of this pool */
    size_t counted_waiters; /* waiters tpool_block_begin(pool) counted */
    const void *lane;       /* the lane that runs it (chapter 06), or NULL */
};

static _Thread_local int failure_here;        /* future_fail() of the task running on this thread */
static _Thread_local const void *lane_here;   /* the lane whose task this thread runs */

static bool finished(const future_t *f)
{
    return f->state == FUTURE_DONE || f->state == FUTURE_FAILED || f->state == FUTURE_CANCELLED;
}

int future_create(future_t **out)
{
    if (out == NULL)
        return EINVAL;
    *out = calloc(1, sizeof **out);
    if (*out == NULL)
        return ENOMEM;
    (*out)->state = FUTURE_PENDING;
    (*out)->refs = 1;
    return 0;
}

future_t *future_retain(future_t *f)
{
    if (f == NULL)
        return NULL;
    pthread_mutex_lock(&futures_lock);
    f->refs++;
    pthread_mutex_unlock(&futures_lock);
    return f;
}

void future_release(future_t *f)
{
    if (f == NULL)
        return;
    pthread_mutex_lock(&futures_lock);
    unsigned left = --f->refs;
    pthread_mutex_unlock(&futures_lock);
    if (left == 0)
        free(f); /* nobody else holds it: nobody can be waiting on it */
}

/* Called with futures_lock held: the one move to a final state. */
static void settle_locked(future_t *f, future_state_t state, void *result, int error)
{
    f->state = state;
    f->result = result;
    f->error = error;
    for (; f->counted_waiters > 0; f->counted_waiters--)
        tpool_block_end(f->pool); /* their wait is over, whenever they get to run */
    pthread_cond_broadcast(&futures_finished); /* every waiter of every future: they re-check */
}

int future_run(future_t *f, void *(*fn)(void *), void *arg)
{
    if (f == NULL || fn == NULL)
        return EINVAL;
    pthread_mutex_lock(&futures_lock);
    bool runs = f->state == FUTURE_PENDING; /* a cancel comes before this, or finds RUNNING */
    if (runs) {
        f->state = FUTURE_RUNNING;
        f->runner = tpool_current();
    }
    pthread_mutex_unlock(&futures_lock);
    if (!runs)
        return ECANCELED;

    int outer = failure_here; /* a task may run another future's task inline */
    failure_here = 0;
    void *result = fn(arg);
    int failure = failure_here;
    failure_here = outer;

    pthread_mutex_lock(&futures_lock);
    if (failure != 0)
        settle_locked(f, FUTURE_FAILED, NULL, failure);
    else
        settle_locked(f, FUTURE_DONE, result, 0);
    pthread_mutex_unlock(&futures_lock);
    return 0;
}

void future_fail(int error)
{
    failure_here = error != 0 ? error : EIO;
}

int future_cancel(future_t *f)
{
    if (f == NULL)
        return EINVAL;
    int err = 0;
    pthread_mutex_lock(&futures_lock);
    if (f->state == FUTURE_PENDING)
        settle_locked(f, FUTURE_CANCELLED, NULL, 0);
    else if (f->state != FUTURE_CANCELLED)
        err = EBUSY; /* started or finished: nothing changes */
    pthread_mutex_unlock(&futures_lock);
    return err;
}

future_state_t future_state(future_t *f)
{
    if (f == NULL)
        return FUTURE_CANCELLED;
    pthread_mutex_lock(&futures_lock);
    future_state_t state = f->state;
    pthread_mutex_unlock(&futures_lock);
    return state;
}

bool future_is_done(future_t *f)
{
    if (f == NULL)
        return false;
    pthread_mutex_lock(&futures_lock);
    bool done = finished(f);
    pthread_mutex_unlock(&futures_lock);
    return done;
}

void future_set_lane(future_t *f, const void *lane)
{
    if (f == NULL)
        return;
    pthread_mutex_lock(&futures_lock);
    f->lane = lane;
    pthread_mutex_unlock(&futures_lock);
}

void future_enter_lane(const void *lane)
{
    lane_here = lane;
}

/* Called with futures_lock held, f unfinished: may this thread wait for it?
 * 0 (with *counted if its pool now counts it blocked) or EDEADLK. */
static int may_wait_locked(future_t *f, bool *counted)
{
    *counted = false;
    if (f->lane != NULL && f->lane == lane_here)
        return EDEADLK; /* its task runs after the one this thread is running */
    tpool_t *me = tpool_current();
    if (me == NULL || f->pool != me)
        return 0; /* no worker of its pool: the pool's workers are not all stuck on us */
    if (f->state == FUTURE_RUNNING && f->runner != me)
        return 0; /* running elsewhere: it will finish without the pool's help */
    int err = tpool_block_begin(me); /* queued here, or running on another worker here */
    if (err == 0) {
        f->counted_waiters++;
        *counted = true;
    }
    return err;
}

/* Called with futures_lock held and f finished. */
static int outcome_locked(const future_t *f, void **result)
{
    if (f->state == FUTURE_DONE) {
        if (result != NULL)
            *result = f->result;
        return 0;
    }
    return f->state == FUTURE_FAILED ? f->error : ECANCELED;
}

/* deadline: CLOCK_MONOTONIC, or NULL to wait as long as it takes. */
static int await(future_t *f, void **result, const struct timespec *deadline)
{
    bool counted = false;
    int err = 0;
    pthread_mutex_lock(&futures_lock);
    if (!finished(f))
        err = may_wait_locked(f, &counted);
    /* while, not if: the broadcast is for every future, and wake-ups can be
     * spurious. The deadline stays the same on every turn. */
    while (err == 0 && !finished(f)) {
        if (deadline != NULL)
            err = pthread_cond_clockwait(&futures_finished, &futures_lock, CLOCK_MONOTONIC, deadline);
        else
            pthread_cond_wait(&futures_finished, &futures_lock);
    }
    if (finished(f)) {
        err = outcome_locked(f, result); /* even if the time ran out just as it finished */
    } else if (counted) {
        f->counted_waiters--; /* gave up first: this thread no longer waits */
        tpool_block_end(f->pool);
    }
    pthread_mutex_unlock(&futures_lock);
    return err;
}

int future_get(future_t *f, void **result)
{
    if (f == NULL)
        return EINVAL;
    return await(f, result, NULL);
}

int future_get_timed(future_t *f, void **result, long timeout_ms)
{
    struct timespec deadline;
    if (f == NULL || kit_deadline_after(timeout_ms, &deadline) != 0)
        return EINVAL;
    return await(f, result, &deadline);
}

/* ---- submitting to a pool ------------------------------------------------------------ */

struct job {
    future_t *future; /* the pool's reference */
    void *(*fn)(void *);
    void *arg;
};

static void run_job(void *raw)
{
    struct job *job = raw;
    future_run(job->future, job->fn, job->arg);
    future_release(job->future);
    free(job);
}

static void drop_job(void *raw) /* the pool will not run it: its waiters must still wake */
{
    struct job *job = raw;
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
    future_t *f = NULL;
    int err = future_create(&f);
    if (err != 0)
        return err;
    struct job *job = malloc(sizeof *job);
    if (job == NULL) {
        future_release(f);
        return ENOMEM;
    }
    f->pool = p; /* nobody else sees f yet */
    f->refs = 2; /* the caller's, and the job's */
    *job = (struct job){ .future = f, .fn = fn, .arg = arg };
    err = tpool_execute_or_drop(p, run_job, drop_job, job);
    if (err != 0) { /* never queued: fn will not run, and both references are ours */
        free(job);
        free(f);
        return err;
    }
    *out = f;
    return 0;
}
