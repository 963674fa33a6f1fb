/**
 * @file tpool.c
 * @brief Chapter 03 solution: core workers, a chapter-02 queue, idle reclaim without stranding.
 *
 * DESIGN. Tasks are small records {run, drop, arg, pool}. Below core size a
 * task goes straight to a new worker; above, into `queue` through the reject
 * policy. A worker runs its first task, then polls the queue with
 * `keep_alive_ms`; when the poll gives up it *retires*.
 *
 * Lock order: pool `lock`, then the queue's own lock (taken inside bq_*).
 * Nothing ever holds the queue's lock and then asks for the pool's, and no
 * task runs with either held.
 *
 * The idle-exit race is closed from both sides, under `lock`:
 * - a retiring worker re-checks the queue and stays if a task is waiting;
 * - tpool_execute(), after queueing, starts a worker if none is left.
 * Whichever of the two critical sections comes second sees what the first
 * did: either the worker sees the task, or execute sees the worker gone.
 *
 * Workers are joinable, never detached: a worker that leaves marks itself
 * `exited`; the next execute, await or destroy joins it.
 *
 * Chapter 04's starvation detector (its starvation.c) works under `lock`
 * too, through the few functions at the end of this file
 * (tpool_internal.h): it reads `alive`, may start a worker, and keeps its
 * count of blocked workers in `blocked`. A future's lock may be held when
 * it takes `lock`; the pool never calls into a future holding it.
 */
#define _POSIX_C_SOURCE 200809L
#include "tpool.h"
#include "tpool_internal.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit_log.h"
#include "kit_thread.h"
#include "kit_time.h"
#include "kit_trace.h"

struct task {
    void (*run)(void *);
    void (*drop)(void *); /* called instead of run if the pool drops the task; may be NULL */
    void *arg;
    tpool_t *pool;
};

struct worker {
    pthread_t thread;
    tpool_t *pool;
    struct task *first;  /* handed over at start; NULL for a worker started to drain the queue */
    struct worker *next; /* in pool->workers; guarded by pool->lock */
    bool exited;         /* guarded by pool->lock: it left, join it */
};

struct tpool {
    /* Immutable after create: */
    size_t core_threads;
    long keep_alive_ms;
    bq_t *queue;         /* has its own lock; taken after ours, never before */
    bq_policy_t policy;  /* the configured policy, with the pool's item function */
    char name[TPOOL_NAME_MAX + 1];

    pthread_mutex_t lock;
    pthread_cond_t terminated; /* broadcast when shut down and the last worker left */
    /* Guarded by lock: */
    struct worker *workers;    /* started and not yet joined */
    size_t alive;              /* workers started and not yet left */
    size_t started;            /* workers ever started: numbers thread names */
    size_t blocked;            /* kept for chapter 04's detector, never read here (tpool_internal.h) */
    size_t arriving;           /* tasks accepted to be queued, not yet in the queue: termination waits for them */
    bool shutdown;
    tpool_stats_t stats;       /* only reported, never decided on: `threads` and `queued` are filled in when read */
};

static _Thread_local tpool_t *current_pool; /* the pool this thread works for */
static _Thread_local int current_failure;   /* set by tpool_task_fail() in the running task */

static void *worker_main(void *raw);

/* ---- workers --------------------------------------------------------------- */

/* Starts a worker that runs `first` (or, if NULL, polls the queue). Called with lock held. */
static int start_worker_locked(tpool_t *p, struct task *first)
{
    struct worker *w = calloc(1, sizeof *w);
    if (w == NULL)
        return ENOMEM;
    *w = (struct worker){ .pool = p, .first = first, .next = p->workers };
    char name[KIT_THREAD_NAME_MAX];
    snprintf(name, sizeof name, "%s-%zu", p->name, ++p->started);
    int err = kit_thread_start(&w->thread, name, worker_main, w);
    if (err != 0) {
        free(w);
        return err;
    }
    p->workers = w;
    p->alive++;
    if (p->alive > p->stats.largest)
        p->stats.largest = p->alive;
    kit_log("tpool", "new worker %s", name);
    return 0;
}

/* Unlinks the workers that have left, for joining after the lock is released. */
static struct worker *take_exited_locked(tpool_t *p)
{
    struct worker *exited = NULL;
    for (struct worker **link = &p->workers; *link;) {
        struct worker *w = *link;
        if (w->exited) {
            *link = w->next;
            w->next = exited;
            exited = w;
        } else {
            link = &w->next;
        }
    }
    return exited;
}

static void join_workers(struct worker *exited)
{
    while (exited) {
        struct worker *next = exited->next;
        pthread_join(exited->thread, NULL);
        free(exited);
        exited = next;
    }
}

static bool terminated_locked(tpool_t *p)
{
    return p->shutdown && p->alive == 0 && p->arriving == 0 && bq_size(p->queue) == 0;
}

/* The worker's poll gave up: ETIMEDOUT (idle for keep_alive_ms) or ECANCELED
 * (shut down and drained). Returns true if it leaves. */
static bool retire(tpool_t *p, struct worker *self, int why)
{
    pthread_mutex_lock(&p->lock);
    /* PAGE: idle-exit-race (worker side). A task queued after our poll gave
     * up, but before we got this lock, would have nobody to run it if we
     * left now: execute() counted us as alive when it chose to queue. */
    bool leave = why == ECANCELED || bq_size(p->queue) == 0;
    if (leave) {
        p->alive--;
        if (why == ETIMEDOUT)
            p->stats.retired++;
        self->exited = true;
        if (terminated_locked(p))
            pthread_cond_broadcast(&p->terminated);
    }
    pthread_mutex_unlock(&p->lock);
    if (!leave)
        return false;
    if (why == ETIMEDOUT)
        kit_log("tpool", "idle for %ld ms: retiring", p->keep_alive_ms);
    else
        kit_log("tpool", "shut down: leaving");
    return true;
}

static void run_task(tpool_t *p, struct task *task, bool on_caller)
{
    /* A caller-runs task can run inside another task (one that submits to a
     * full pool): keep the outer task's failure for when it finishes. */
    int outer_failure = current_failure;
    current_failure = 0;
    if (!on_caller) {
        pthread_mutex_lock(&p->lock);
        p->stats.active++;
        pthread_mutex_unlock(&p->lock);
    }
    kit_trace_begin("tpool", "running a task");
    task->run(task->arg); /* no lock held: a task may run as long as it likes */
    kit_trace_end("tpool");
    pthread_mutex_lock(&p->lock);
    if (on_caller)
        p->stats.ran_by_caller++; /* not in active: the caller's thread is not this task's worker */
    else
        p->stats.active--;
    p->stats.completed++;
    if (current_failure != 0)
        p->stats.failed++; /* a failed task is counted; its worker carries on */
    pthread_mutex_unlock(&p->lock);
    current_failure = outer_failure;
    free(task);
}

/* The next task from the queue, or NULL when this worker should leave. */
static struct task *next_task(tpool_t *p, struct worker *self)
{
    for (;;) {
        void *item;
        int err = bq_poll(p->queue, &item, p->keep_alive_ms);
        if (err == 0)
            return item;
        if (retire(p, self, err))
            return NULL;
    }
}

static void *worker_main(void *raw)
{
    struct worker *self = raw;
    tpool_t *p = self->pool;
    current_pool = p;
    struct task *task = self->first; /* NULL for a worker started to drain the queue */
    if (task == NULL)
        task = next_task(p, self);
    while (task != NULL) {
        run_task(p, task, false);
        task = next_task(p, self);
    }
    return NULL;
}

/* ---- tasks the pool will not run itself -------------------------------------- */

static void drop_task(void *item)
{
    struct task *task = item;
    tpool_t *p = task->pool;
    if (task->drop)
        task->drop(task->arg);
    pthread_mutex_lock(&p->lock);
    p->stats.dropped++;
    pthread_mutex_unlock(&p->lock);
    free(task);
}

static void run_task_on_caller(void *item)
{
    struct task *task = item;
    run_task(task->pool, task, true);
}

/* ---- the public functions ------------------------------------------------------ */

static bool config_is_valid(const tpool_config_t *config)
{
    if (config == NULL || config->core_threads == 0 || config->queue_capacity == 0 ||
        config->keep_alive_ms < 0 || config->reject.reject == NULL)
        return false;
    /* A name too long is refused, not cut: two pools would get the same thread names. */
    return config->name == NULL || strlen(config->name) <= TPOOL_NAME_MAX;
}

/* Copies the configuration. The queue holds task records, so the policy's
 * item function becomes the pool's own: run the record, or drop it. */
static void copy_config(tpool_t *p, const tpool_config_t *config)
{
    p->core_threads = config->core_threads;
    p->keep_alive_ms = config->keep_alive_ms;
    p->policy = config->reject;
    if (config->reject.reject == bq_policy_caller_runs(NULL).reject)
        p->policy.item_fn = run_task_on_caller;
    else
        p->policy.item_fn = drop_task;
    snprintf(p->name, sizeof p->name, "%s", config->name ? config->name : "pool");
}

int tpool_create(tpool_t **out, const tpool_config_t *config)
{
    if (out == NULL)
        return EINVAL;
    *out = NULL;
    if (!config_is_valid(config))
        return EINVAL;
    tpool_t *p = calloc(1, sizeof *p);
    if (p == NULL)
        return ENOMEM;
    copy_config(p, config);
    int err = bq_create(&p->queue, config->queue_capacity);
    if (err != 0)
        goto free_p;
    if ((err = pthread_mutex_init(&p->lock, NULL)) != 0)
        goto destroy_queue;
    if ((err = kit_cond_init(&p->terminated)) != 0) /* CLOCK_MONOTONIC: await's deadline */
        goto destroy_lock;
    *out = p;
    return 0;

    /* Undo in reverse order: each label undoes the step before the one that failed. */
destroy_lock:
    pthread_mutex_destroy(&p->lock);
destroy_queue:
    bq_destroy(p->queue);
free_p:
    free(p);
    return err;
}

static void count_rejection(tpool_t *p, struct task *task)
{
    pthread_mutex_lock(&p->lock);
    p->stats.rejected++;
    pthread_mutex_unlock(&p->lock);
    free(task);
}

/* Queues the task through the policy, then makes sure a worker is alive to
 * take it. The task was counted in p->arriving when it was accepted: until
 * it is in the queue (or refused), the pool cannot be terminated, though a
 * shutdown and the last worker's leaving may come meanwhile. */
static int enqueue(tpool_t *p, struct task *task)
{
    int err = bq_try_put(p->queue, task, &p->policy); /* may block, run or drop it: no lock held */
    pthread_mutex_lock(&p->lock);
    p->arriving--;
    /* PAGE: idle-exit-race (execute side). When we chose to queue, a worker
     * was alive; it may have retired since (it re-checked the queue before we
     * put the task in). Under the lock that retiring takes: is anyone left? */
    if (err == 0 && p->alive == 0) /* if even this start fails, the task still counts as accepted (tpool.h): */
        start_worker_locked(p, NULL); /* the next execute or tpool_shutdown() starts one */
    if (terminated_locked(p)) /* the last arrival was refused after the last worker left */
        pthread_cond_broadcast(&p->terminated);
    pthread_mutex_unlock(&p->lock);
    return err;
}

/* Called with lock held. Below core size the task goes straight to a new
 * worker (*handed_over); otherwise it is to be queued. */
static int hand_over_locked(tpool_t *p, struct task *task, bool *handed_over)
{
    *handed_over = false;
    if (p->shutdown)
        return ECANCELED;
    if (p->alive >= p->core_threads)
        return 0; /* at core size: it queues */
    int err = start_worker_locked(p, task); /* below: straight to a new worker */
    if (err == 0) {
        *handed_over = true;
        return 0;
    }
    if (p->alive > 0)
        return 0; /* no new thread, but the live ones can take it from the queue */
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
    bool handed_over;
    pthread_mutex_lock(&p->lock);
    p->stats.submitted++;
    struct worker *exited = take_exited_locked(p);
    int err = hand_over_locked(p, task, &handed_over);
    if (err == 0 && !handed_over)
        p->arriving++; /* accepted before any shutdown: termination waits until it is queued */
    pthread_mutex_unlock(&p->lock);
    join_workers(exited);
    if (err == 0 && !handed_over)
        err = enqueue(p, task);
    if (err != 0)
        count_rejection(p, task);
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
    /* Queued tasks still run - also one queued when no worker could be
     * started for it (see enqueue()): no later execute will start one now. */
    if (p->alive == 0 && bq_size(p->queue) > 0)
        start_worker_locked(p, NULL);
    if (terminated_locked(p)) /* nothing was running: wake anyone in await */
        pthread_cond_broadcast(&p->terminated);
    pthread_mutex_unlock(&p->lock);
    bq_close(p->queue); /* idle workers wake up, drain the queue, and leave */
    return 0;
}

int tpool_shutdown_now(tpool_t *p)
{
    int err = tpool_shutdown(p);
    if (err != 0)
        return err;
    void *item;
    while (bq_poll(p->queue, &item, 0) == 0)
        drop_task(item);
    pthread_mutex_lock(&p->lock);
    if (terminated_locked(p)) /* the queue just became empty: that can complete termination */
        pthread_cond_broadcast(&p->terminated);
    pthread_mutex_unlock(&p->lock);
    return 0;
}

int tpool_await_termination(tpool_t *p, long timeout_ms)
{
    struct timespec deadline;
    if (p == NULL || kit_deadline_after(timeout_ms, &deadline) != 0)
        return EINVAL;
    if (current_pool == p)
        return EDEADLK;
    int err = 0;
    pthread_mutex_lock(&p->lock);
    /* while, not if: spurious wake-ups, and the same deadline on every turn. */
    while (!terminated_locked(p) && err != ETIMEDOUT)
        err = pthread_cond_timedwait(&p->terminated, &p->lock, &deadline);
    bool done = terminated_locked(p);
    struct worker *exited = take_exited_locked(p);
    pthread_mutex_unlock(&p->lock);
    join_workers(exited);
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

/* After shutdown, with no worker alive (even the one tpool_shutdown() tried
 * to start could not be), queued tasks can never run: drop them rather than
 * wait for them forever. The queue is closed, so nothing new arrives. */
static void drop_unrunnable(tpool_t *p)
{
    pthread_mutex_lock(&p->lock);
    bool nobody = p->alive == 0;
    pthread_mutex_unlock(&p->lock);
    if (!nobody)
        return;
    void *item;
    while (bq_poll(p->queue, &item, 0) == 0)
        drop_task(item);
}

void tpool_destroy(tpool_t *p)
{
    if (p == NULL || current_pool == p)
        return;
    tpool_shutdown(p);
    drop_unrunnable(p);
    tpool_await_termination(p, LONG_MAX);
    bq_destroy(p->queue);
    pthread_cond_destroy(&p->terminated);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

/* ---- inside tasks ------------------------------------------------------------ */

void tpool_task_fail(int error)
{
    current_failure = error ? error : EIO;
}

tpool_t *tpool_current(void)
{
    return current_pool;
}

/* ---- for chapter 04's starvation detector (tpool_internal.h) ------------------ */

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
