/**
 * @file tpool.c
 * @brief Chapter 03, another design: tpool_await_termination() sleeps on a
 *        POSIX semaphore used as a doorbell, not on a condition variable.
 *
 * DESIGN. Whether the pool has terminated (shut down, queue empty, no
 * worker alive) is decided under `lock`, as always. What differs is how a
 * thread in tpool_await_termination() sleeps until that changes: it counts
 * itself in `awaiting`, releases the lock and waits on the semaphore
 * `doorbell`. Every change that can complete termination - the last worker
 * leaving, a shutdown finding nothing to do, shutdown_now emptying the
 * queue - rings the bell under the lock: one sem_post() per thread counted
 * in `awaiting`. No wake-up is lost: a waiter is counted before it lets go
 * of the lock, so a ring that comes before its sem_wait() leaves a token
 * for it. A waiter that times out leaves its token behind; the next waiter
 * takes it, finds the pool not terminated, and waits again - a semaphore
 * wake-up, like a condition variable's, is only a hint to look again.
 *
 * Deadlines: the header's timeouts are relative; the pool computes one
 * CLOCK_MONOTONIC deadline per call and, before each sleep, turns what is
 * left of it into the CLOCK_REALTIME deadline sem_timedwait() wants. Only
 * the monotonic clock decides that the time is up, so a wall clock set back
 * cannot stretch the wait and one set forward cannot end it early.
 *
 * Everything else: tasks below core size go straight to a new worker, the
 * rest through the reject policy into the chapter-02 queue; workers poll it
 * for `keep_alive_ms` and retire; the idle-exit race is closed from both
 * sides under `lock`. Finished workers wait on the `exited` stack until
 * someone joins them outside the lock.
 *
 * Lock order: `lock`, then the queue's lock (bq_size() under it). The
 * semaphore is never waited on with `lock` held.
 */
#define _POSIX_C_SOURCE 200809L
#include "tpool.h"
#include "tpool_internal.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kit_thread.h"
#include "kit_time.h"

struct task {
    void (*run)(void *);
    void (*drop)(void *);
    void *arg;
    tpool_t *pool;
};

struct worker {
    pthread_t thread;
    tpool_t *pool;
    struct task *first;        /* handed over at start, or NULL */
    struct worker *next;       /* on pool->exited; guarded by pool->lock */
};

struct tpool {
    /* Immutable after create: */
    size_t core_threads;
    long keep_alive_ms;
    bq_t *queue;
    bq_policy_t policy;
    char name[TPOOL_NAME_MAX + 1];

    pthread_mutex_t lock;
    sem_t doorbell;            /* awaiters sleep here; posted once per awaiter when termination may have come */
    /* Guarded by lock: */
    size_t awaiting;           /* threads inside tpool_await_termination's sleep */
    size_t alive;              /* workers started that have not left */
    size_t names_used;         /* workers ever started: the n of `<name>-<n>` */
    struct worker *exited;     /* left, not yet joined */
    size_t blocked;            /* chapter 04's detector's count */
    size_t arriving;           /* tasks accepted to be queued, not yet in the queue: termination waits for them */
    bool shutdown;
    tpool_stats_t stats;
};

static _Thread_local tpool_t *this_pool;
static _Thread_local int this_task_failure;

static void *worker_main(void *raw);

/* ---- starting and joining workers ------------------------------------------------- */

/* Called with lock held. */
static int start_worker_locked(tpool_t *p, struct task *first)
{
    struct worker *w = malloc(sizeof *w);
    if (w == NULL)
        return ENOMEM;
    *w = (struct worker){ .pool = p, .first = first, .next = NULL };
    char name[KIT_THREAD_NAME_MAX];
    snprintf(name, sizeof name, "%s-%zu", p->name, p->names_used + 1);
    int err = kit_thread_start(&w->thread, name, worker_main, w);
    if (err != 0) {
        free(w);
        return err;
    }
    p->names_used++;
    p->alive++;
    if (p->alive > p->stats.largest)
        p->stats.largest = p->alive;
    return 0;
}

/* Called with lock held: the workers that have left, for joining after unlocking. */
static struct worker *pop_exited_locked(tpool_t *p)
{
    struct worker *list = p->exited;
    p->exited = NULL;
    return list;
}

static void join_and_free(struct worker *list)
{
    while (list != NULL) {
        struct worker *next = list->next;
        pthread_join(list->thread, NULL);
        free(list);
        list = next;
    }
}

static bool all_done_locked(tpool_t *p)
{
    return p->shutdown && p->alive == 0 && p->arriving == 0 && bq_size(p->queue) == 0;
}

/* Called with lock held after a change that may have completed termination:
 * one token for each thread asleep in await (they re-check under the lock). */
static void ring_if_done_locked(tpool_t *p)
{
    if (!all_done_locked(p))
        return;
    for (size_t i = 0; i < p->awaiting; i++)
        sem_post(&p->doorbell);
}

/* ---- tasks ------------------------------------------------------------------------ */

static void run_task(tpool_t *p, struct task *task, bool on_caller)
{
    int saved_failure = this_task_failure; /* caller-runs can nest a task in a task */
    this_task_failure = 0;
    pthread_mutex_lock(&p->lock);
    if (!on_caller)
        p->stats.active++;
    pthread_mutex_unlock(&p->lock);

    task->run(task->arg);

    pthread_mutex_lock(&p->lock);
    if (on_caller)
        p->stats.ran_by_caller++;
    else
        p->stats.active--;
    p->stats.completed++;
    if (this_task_failure != 0)
        p->stats.failed++;
    pthread_mutex_unlock(&p->lock);
    this_task_failure = saved_failure;
    free(task);
}

static void drop_task(void *item)
{
    struct task *task = item;
    tpool_t *p = task->pool;
    if (task->drop != NULL)
        task->drop(task->arg);
    pthread_mutex_lock(&p->lock);
    p->stats.dropped++;
    pthread_mutex_unlock(&p->lock);
    free(task);
}

static void run_on_caller(void *item)
{
    struct task *task = item;
    run_task(task->pool, task, true);
}

/* ---- the worker ---------------------------------------------------------------------- */

/* Called after the poll failed with `why`: leave, unless a task slipped into
 * the queue after the poll gave up (idle-exit race). */
static bool try_to_leave(tpool_t *p, struct worker *self, int why)
{
    pthread_mutex_lock(&p->lock);
    bool leave = why != ETIMEDOUT || bq_size(p->queue) == 0;
    if (leave) {
        p->alive--;
        if (why == ETIMEDOUT)
            p->stats.retired++;
        self->next = p->exited; /* from here on, someone else owns the record */
        p->exited = self;
        ring_if_done_locked(p);
    }
    pthread_mutex_unlock(&p->lock);
    return leave;
}

static void *worker_main(void *raw)
{
    struct worker *self = raw;
    tpool_t *p = self->pool;
    this_pool = p;
    if (self->first != NULL)
        run_task(p, self->first, false);
    for (;;) {
        void *item;
        int err = bq_poll(p->queue, &item, p->keep_alive_ms);
        if (err == 0)
            run_task(p, item, false);
        else if (try_to_leave(p, self, err))
            break;
    }
    return NULL;
}

/* ---- life cycle ------------------------------------------------------------------------ */

int tpool_create(tpool_t **out, const tpool_config_t *config)
{
    if (out == NULL)
        return EINVAL;
    *out = NULL;
    if (config == NULL || config->core_threads == 0 || config->queue_capacity == 0 ||
        config->keep_alive_ms < 0 || config->reject.reject == NULL ||
        (config->name != NULL && strlen(config->name) > TPOOL_NAME_MAX))
        return EINVAL;
    tpool_t *p = calloc(1, sizeof *p);
    if (p == NULL)
        return ENOMEM;
    p->core_threads = config->core_threads;
    p->keep_alive_ms = config->keep_alive_ms;
    strcpy(p->name, config->name != NULL ? config->name : "pool"); /* length checked above */
    p->policy = config->reject;
    bool caller_runs = config->reject.reject == bq_policy_caller_runs(NULL).reject;
    p->policy.item_fn = caller_runs ? run_on_caller : drop_task;
    int err;
    if ((err = bq_create(&p->queue, config->queue_capacity)) != 0)
        goto free_p;
    if ((err = pthread_mutex_init(&p->lock, NULL)) != 0)
        goto destroy_queue;
    if (sem_init(&p->doorbell, 0, 0) != 0) { /* 0: among this process's threads */
        err = errno;
        goto destroy_lock;
    }
    *out = p;
    return 0;

destroy_lock:
    pthread_mutex_destroy(&p->lock);
destroy_queue:
    bq_destroy(p->queue);
free_p:
    free(p);
    return err;
}

void tpool_destroy(tpool_t *p)
{
    if (p == NULL || this_pool == p)
        return;
    tpool_shutdown(p);
    pthread_mutex_lock(&p->lock);
    bool nobody_left = p->alive == 0;
    pthread_mutex_unlock(&p->lock);
    void *item;
    while (nobody_left && bq_poll(p->queue, &item, 0) == 0)
        drop_task(item); /* no worker could be started to run it */
    tpool_await_termination(p, LONG_MAX);
    bq_destroy(p->queue);
    sem_destroy(&p->doorbell);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

/* ---- submitting ------------------------------------------------------------------------ */

/* Called with lock held: hand the task to a new worker below core size.
 * 0 and *handed: it has a worker; 0: queue it; an error: refuse it. */
static int hand_over_locked(tpool_t *p, struct task *task, bool *handed)
{
    *handed = false;
    if (p->shutdown)
        return ECANCELED;
    if (p->alive >= p->core_threads)
        return 0;
    int err = start_worker_locked(p, task);
    if (err == 0)
        *handed = true;
    else if (p->alive > 0)
        err = 0; /* a live worker will find it in the queue */
    return err;
}

/* The second half of an execute that did not hand its task to a new worker:
 * into the queue, then a worker if none is left. p->arriving counted it in
 * the first half, so that no await rings "done" while it is on its way. */
static int queue_task(tpool_t *p, struct task *task)
{
    int err = bq_try_put(p->queue, task, &p->policy); /* the policy may block or run it: no lock held */
    pthread_mutex_lock(&p->lock);
    if (err == 0 && p->alive == 0) /* the last worker left while it was on its way */
        start_worker_locked(p, NULL);
    p->arriving--;
    ring_if_done_locked(p); /* the last arrival may have been refused after the last worker left */
    pthread_mutex_unlock(&p->lock);
    return err;
}

int tpool_execute_or_drop(tpool_t *p, void (*fn)(void *), void (*drop)(void *), void *arg)
{
    if (p == NULL || fn == NULL)
        return EINVAL;
    struct task *task = malloc(sizeof *task);
    if (task == NULL)
        return ENOMEM;
    *task = (struct task){ fn, drop, arg, p };
    bool handed;
    pthread_mutex_lock(&p->lock);
    p->stats.submitted++;
    struct worker *to_join = pop_exited_locked(p);
    int err = hand_over_locked(p, task, &handed);
    if (err == 0 && !handed)
        p->arriving++; /* accepted before any shutdown: termination waits until it is queued */
    pthread_mutex_unlock(&p->lock);
    join_and_free(to_join);
    if (err == 0 && !handed)
        err = queue_task(p, task);
    if (err != 0) {
        pthread_mutex_lock(&p->lock);
        p->stats.rejected++;
        pthread_mutex_unlock(&p->lock);
        free(task);
    }
    return err;
}

int tpool_execute(tpool_t *p, void (*fn)(void *), void *arg)
{
    return tpool_execute_or_drop(p, fn, NULL, arg);
}

int tpool_shutdown(tpool_t *p)
{
    if (p == NULL)
        return EINVAL;
    pthread_mutex_lock(&p->lock);
    p->shutdown = true;
    if (p->alive == 0 && bq_size(p->queue) > 0)
        start_worker_locked(p, NULL); /* queued tasks still run */
    ring_if_done_locked(p);
    pthread_mutex_unlock(&p->lock);
    bq_close(p->queue);
    return 0;
}

int tpool_shutdown_now(tpool_t *p)
{
    if (p == NULL)
        return EINVAL;
    tpool_shutdown(p);
    void *item;
    while (bq_poll(p->queue, &item, 0) == 0)
        drop_task(item);
    pthread_mutex_lock(&p->lock);
    ring_if_done_locked(p);
    pthread_mutex_unlock(&p->lock);
    return 0;
}

static bool passed(const struct timespec *deadline)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec > deadline->tv_sec || (now.tv_sec == deadline->tv_sec && now.tv_nsec >= deadline->tv_nsec);
}

/* Sleeps on the doorbell until a token comes, or about until the monotonic
 * `deadline`. Returns either way: the caller re-checks the pool and the clock. */
static void sleep_on_doorbell(tpool_t *p, const struct timespec *deadline)
{
    struct timespec mono, wall;
    clock_gettime(CLOCK_MONOTONIC, &mono);
    clock_gettime(CLOCK_REALTIME, &wall);
    long long left_ns = (long long)(deadline->tv_sec - mono.tv_sec) * 1000000000LL + (deadline->tv_nsec - mono.tv_nsec);
    if (left_ns <= 0)
        return;
    wall.tv_sec += (time_t)(left_ns / 1000000000LL);
    wall.tv_nsec += (long)(left_ns % 1000000000LL);
    if (wall.tv_nsec >= 1000000000L) {
        wall.tv_nsec -= 1000000000L;
        wall.tv_sec++;
    }
    sem_timedwait(&p->doorbell, &wall); /* 0, ETIMEDOUT or EINTR: all mean "look again" */
}

int tpool_await_termination(tpool_t *p, long timeout_ms)
{
    struct timespec deadline;
    if (p == NULL || kit_deadline_after(timeout_ms, &deadline) != 0)
        return EINVAL;
    if (this_pool == p)
        return EDEADLK; /* it would wait for its own task */
    pthread_mutex_lock(&p->lock);
    /* while, not if: a token may be one left over by a waiter that timed
     * out, or the pool may have started a worker again for a late task. */
    while (!all_done_locked(p) && !passed(&deadline)) {
        p->awaiting++; /* counted before the lock goes: a ring from now on reaches us */
        pthread_mutex_unlock(&p->lock);
        sleep_on_doorbell(p, &deadline);
        pthread_mutex_lock(&p->lock);
        p->awaiting--;
    }
    bool done = all_done_locked(p);
    struct worker *to_join = pop_exited_locked(p);
    pthread_mutex_unlock(&p->lock);
    join_and_free(to_join);
    return done ? 0 : ETIMEDOUT;
}

int tpool_stats(tpool_t *p, tpool_stats_t *out)
{
    if (p == NULL || out == NULL)
        return EINVAL;
    pthread_mutex_lock(&p->lock);
    *out = p->stats;
    out->threads = p->alive;
    out->queued = bq_size(p->queue);
    pthread_mutex_unlock(&p->lock);
    return 0;
}

void tpool_task_fail(int error)
{
    this_task_failure = error != 0 ? error : EIO;
}

tpool_t *tpool_current(void)
{
    return this_pool;
}

/* ---- tpool_internal.h ------------------------------------------------------------------- */

void tpool_lock(tpool_t *p)
{
    pthread_mutex_lock(&p->lock);
}

void tpool_unlock(tpool_t *p)
{
    pthread_mutex_unlock(&p->lock);
}

size_t tpool_alive_locked(tpool_t *p)
{
    return p->alive;
}

int tpool_add_worker_locked(tpool_t *p)
{
    if (p->shutdown || p->alive >= p->core_threads)
        return EAGAIN;
    return start_worker_locked(p, NULL);
}

size_t tpool_blocked_locked(tpool_t *p)
{
    return p->blocked;
}

void tpool_set_blocked_locked(tpool_t *p, size_t blocked)
{
    p->blocked = blocked;
}
