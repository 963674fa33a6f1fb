/**
 * @file future.c
 * @brief Chapter 04, another design: a monitor per future for waiting, and
 *        C11 atomics for the two things that need no monitor - the
 *        reference count and a readable copy of the state.
 *
 * DESIGN. Each future has a mutex and a condition variable `settled`; the
 * result, the error and the starvation bookkeeping are guarded by the
 * mutex, and a finisher stores the outcome and broadcasts in one critical
 * section, so a waiter that wakes finds the whole outcome.
 *
 * - `refs` is an atomic counter. future_retain() is one atomic increment;
 *   future_release() one atomic decrement, and the thread whose decrement
 *   took it from 1 to 0 frees the future. The decrement is acq_rel: every
 *   other owner's last use of the future happens before the free.
 * - `state` is an atomic copy of where the future is. It only changes with
 *   the mutex held (so the one-way PENDING -> RUNNING -> final path is
 *   decided under the lock), but future_state() and future_is_done() read
 *   it without taking the lock: they "do not block", and now they do not
 *   even contend with a waiter or a finisher. The store is a release and
 *   the load an acquire, so whoever sees DONE also sees the stored result.
 *
 * Starvation: a worker of pool P that would wait for work only P's workers
 * can do asks tpool_block_begin(P) before it sleeps; the finisher un-counts
 * every counted waiter when it settles the future.
 *
 * Lock order: a future's lock, then its pool's lock (tpool_block_begin/end).
 */
#define _POSIX_C_SOURCE 200809L
#include "future.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "kit_time.h"

struct future {
    atomic_uint refs;               /* owners; the last release frees */
    _Atomic(future_state_t) state;  /* written with lock held, read by anyone */

    pthread_mutex_t lock;
    pthread_cond_t settled;         /* broadcast once, when the state becomes final */
    /* Guarded by lock: */
    void *result;
    int error;
    tpool_t *pool;                  /* submitted to (NULL: run by another executor) */
    tpool_t *runner;                /* the pool whose worker runs it, while RUNNING */
    size_t counted_waiters;         /* waiters counted blocked on `pool` */
    const void *lane;
};

static _Thread_local int task_error;
static _Thread_local const void *running_lane;

static bool is_final(future_state_t state)
{
    return state == FUTURE_DONE || state == FUTURE_FAILED || state == FUTURE_CANCELLED;
}

/* Called with lock held (or before f is shared). */
static void set_state_locked(future_t *f, future_state_t state)
{
    atomic_store_explicit(&f->state, state, memory_order_release);
}

/* The state as the lock holder sees it: relaxed, since the lock orders it. */
static future_state_t state_locked(future_t *f)
{
    return atomic_load_explicit(&f->state, memory_order_relaxed);
}

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
    if ((err = kit_cond_init(&f->settled)) != 0) /* CLOCK_MONOTONIC, as future_get_timed's deadline */
        goto destroy_lock;
    atomic_init(&f->refs, 1);
    atomic_init(&f->state, FUTURE_PENDING);
    *out = f;
    return 0;

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
    /* relaxed: the caller already holds a reference, so f cannot go away now */
    atomic_fetch_add_explicit(&f->refs, 1, memory_order_relaxed);
    return f;
}

void future_release(future_t *f)
{
    if (f == NULL)
        return;
    if (atomic_fetch_sub_explicit(&f->refs, 1, memory_order_acq_rel) != 1)
        return; /* someone else still holds it */
    pthread_cond_destroy(&f->settled);
    pthread_mutex_destroy(&f->lock);
    free(f);
}

/* Called with lock held: the future's one move to a final state. */
static void settle_locked(future_t *f, future_state_t state, void *result, int error)
{
    f->result = result;
    f->error = error;
    set_state_locked(f, state); /* after the result: a lock-free reader of DONE sees it */
    while (f->counted_waiters > 0) {
        tpool_block_end(f->pool);
        f->counted_waiters--;
    }
    pthread_cond_broadcast(&f->settled); /* all of them: they all wait for this one event */
}

int future_run(future_t *f, void *(*fn)(void *), void *arg)
{
    if (f == NULL || fn == NULL)
        return EINVAL;
    pthread_mutex_lock(&f->lock);
    bool claimed = state_locked(f) == FUTURE_PENDING;
    if (claimed) {
        set_state_locked(f, FUTURE_RUNNING);
        f->runner = tpool_current();
    }
    pthread_mutex_unlock(&f->lock);
    if (!claimed)
        return ECANCELED;
    int saved = task_error;
    task_error = 0;
    void *result = fn(arg);
    int error = task_error;
    task_error = saved;
    pthread_mutex_lock(&f->lock);
    settle_locked(f, error != 0 ? FUTURE_FAILED : FUTURE_DONE, error != 0 ? NULL : result, error);
    pthread_mutex_unlock(&f->lock);
    return 0;
}

void future_fail(int error)
{
    task_error = error != 0 ? error : EIO;
}

int future_cancel(future_t *f)
{
    if (f == NULL)
        return EINVAL;
    int err = 0;
    pthread_mutex_lock(&f->lock);
    future_state_t now = state_locked(f);
    if (now == FUTURE_PENDING)
        settle_locked(f, FUTURE_CANCELLED, NULL, 0);
    else if (now != FUTURE_CANCELLED)
        err = EBUSY;
    pthread_mutex_unlock(&f->lock);
    return err;
}

future_state_t future_state(future_t *f)
{
    if (f == NULL)
        return FUTURE_CANCELLED;
    return atomic_load_explicit(&f->state, memory_order_acquire);
}

bool future_is_done(future_t *f)
{
    return f != NULL && is_final(future_state(f));
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
    running_lane = lane;
}

/* Called with lock held and f unfinished. 0 (maybe counted), or EDEADLK. */
static int count_wait_locked(future_t *f, bool *counted)
{
    *counted = false;
    if (f->lane != NULL && f->lane == running_lane)
        return EDEADLK;
    tpool_t *self = tpool_current();
    bool needs_my_pool = self != NULL && f->pool == self &&
                         (state_locked(f) == FUTURE_PENDING || f->runner == self);
    if (!needs_my_pool)
        return 0;
    int err = tpool_block_begin(self);
    if (err == 0) {
        f->counted_waiters++;
        *counted = true;
    }
    return err;
}

static int wait_settled(future_t *f, void **result, const struct timespec *deadline)
{
    int err = 0;
    bool counted = false;
    pthread_mutex_lock(&f->lock);
    if (!is_final(state_locked(f)))
        err = count_wait_locked(f, &counted);
    /* while, not if: spurious wake-ups; the deadline stays the same */
    while (err == 0 && !is_final(state_locked(f))) {
        if (deadline == NULL)
            pthread_cond_wait(&f->settled, &f->lock);
        else
            err = pthread_cond_timedwait(&f->settled, &f->lock, deadline);
    }
    future_state_t state = state_locked(f);
    if (state == FUTURE_DONE) {
        if (result != NULL)
            *result = f->result;
        err = 0;
    } else if (state == FUTURE_FAILED) {
        err = f->error;
    } else if (state == FUTURE_CANCELLED) {
        err = ECANCELED;
    } else if (counted) { /* timed out while counted: not waiting any more */
        f->counted_waiters--;
        tpool_block_end(f->pool);
    }
    pthread_mutex_unlock(&f->lock);
    return err;
}

int future_get(future_t *f, void **result)
{
    if (f == NULL)
        return EINVAL;
    return wait_settled(f, result, NULL);
}

int future_get_timed(future_t *f, void **result, long timeout_ms)
{
    struct timespec deadline;
    if (f == NULL || kit_deadline_after(timeout_ms, &deadline) != 0)
        return EINVAL;
    return wait_settled(f, result, &deadline);
}

/* ---- tpool_submit -------------------------------------------------------------------- */

struct pending_call {
    future_t *future; /* the pool's own reference */
    void *(*fn)(void *);
    void *arg;
};

static void call_now(void *raw)
{
    struct pending_call *call = raw;
    future_run(call->future, call->fn, call->arg);
    future_release(call->future);
    free(call);
}

static void call_dropped(void *raw)
{
    struct pending_call *call = raw;
    future_cancel(call->future); /* never to run: its waiters wake with ECANCELED */
    future_release(call->future);
    free(call);
}

int tpool_submit(tpool_t *p, void *(*fn)(void *), void *arg, future_t **out)
{
    if (out == NULL)
        return EINVAL;
    *out = NULL;
    if (p == NULL || fn == NULL)
        return EINVAL;
    struct pending_call *call = malloc(sizeof *call);
    if (call == NULL)
        return ENOMEM;
    future_t *f;
    int err = future_create(&f);
    if (err != 0) {
        free(call);
        return err;
    }
    f->pool = p; /* before anyone else can see f */
    *call = (struct pending_call){ future_retain(f), fn, arg };
    err = tpool_execute_or_drop(p, call_now, call_dropped, call);
    if (err != 0) {
        future_release(f); /* the call's reference: it never reached the pool */
        future_release(f); /* and the caller's */
        free(call);
        return err;
    }
    *out = f;
    return 0;
}
