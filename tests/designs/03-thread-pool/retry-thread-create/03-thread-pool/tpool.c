/**
 * @file tpool.c
 * @brief Chapter 03, another design: a pool that tries a failed thread
 *        creation again before it gives up, and keeps its finished workers
 *        on a stack until someone joins them.
 *
 * DESIGN. pthread_create() fails with EAGAIN when the system is short of
 * threads - often for a moment only, while threads that just exited are
 * being reclaimed. So a worker start makes up to CREATE_ATTEMPTS attempts,
 * yielding the CPU between two of them, and only then reports the error
 * (every failed attempt is written to stderr, so the operator sees a system
 * running out of threads). Any other error (ENOMEM) is reported at once.
 * Everything the header says about a failed start still holds: an execute
 * that could start no worker and has none alive fails with EAGAIN, and a
 * queued task left without a worker waits for the next execute or shutdown.
 *
 * Workers are not kept in a list while they run: the pool only counts them
 * (`alive`). A worker that leaves pushes its own record onto the `exited`
 * stack, under the lock, as the last thing it does to the pool. Whoever
 * next passes by - execute, await, destroy - pops the whole stack under the
 * lock and joins those threads after releasing it.
 *
 * Tasks below core size go straight to a new worker; the rest through the
 * reject policy into the chapter-02 queue, which workers poll for
 * `keep_alive_ms` before they retire. The idle-exit race is closed from
 * both sides under `lock`: a worker re-checks the queue before leaving, and
 * execute starts a worker after queueing if none is alive.
 *
 * Lock order: `lock`, then the queue's lock (taken by bq_size() under it).
 */
#define _POSIX_C_SOURCE 200809L
#include "tpool.h"
#include "tpool_internal.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit_thread.h"
#include "kit_time.h"

enum { CREATE_ATTEMPTS = 3 };

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
    pthread_cond_t all_done;   /* broadcast when shut down, drained and the last worker left */
    /* Guarded by lock: */
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

/* pthread_create (through kit_thread_start, which names the thread), tried
 * again on EAGAIN. Called with the pool's lock held: it yields, it never sleeps. */
static int create_thread(pthread_t *thread, const char *name, struct worker *w)
{
    int err = EAGAIN;
    for (int attempt = 1; attempt <= CREATE_ATTEMPTS && err == EAGAIN; attempt++) {
        err = kit_thread_start(thread, name, worker_main, w);
        if (err == EAGAIN) {
            fprintf(stderr, "tpool: starting %s failed (attempt %d of %d): %s\n", name, attempt,
                    CREATE_ATTEMPTS, strerror(err));
            if (attempt < CREATE_ATTEMPTS)
                sched_yield(); /* let exiting threads finish going */
        }
    }
    return err;
}

/* Called with lock held. */
static int start_worker_locked(tpool_t *p, struct task *first)
{
    struct worker *w = malloc(sizeof *w);
    if (w == NULL)
        return ENOMEM;
    *w = (struct worker){ .pool = p, .first = first, .next = NULL };
    char name[KIT_THREAD_NAME_MAX];
    snprintf(name, sizeof name, "%s-%zu", p->name, p->names_used + 1);
    int err = create_thread(&w->thread, name, w);
    if (err != 0) {
        fprintf(stderr, "tpool: no worker started for pool %s: %s\n", p->name, strerror(err));
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
        if (all_done_locked(p))
            pthread_cond_broadcast(&p->all_done);
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
    if ((err = kit_cond_init(&p->all_done)) != 0)
        goto destroy_lock;
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
    pthread_cond_destroy(&p->all_done);
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

/* Queues a task accepted under the lock, where it was counted in p->arriving:
 * until it is in the queue (or refused) the pool cannot be terminated, though
 * a shutdown and the last worker's leaving may come meanwhile. Then makes sure
 * someone is alive to run it. */
static int queue_task(tpool_t *p, struct task *task)
{
    int err = bq_try_put(p->queue, task, &p->policy); /* no lock: the policy may block */
    pthread_mutex_lock(&p->lock);
    p->arriving--;
    if (err == 0 && p->alive == 0) /* everyone retired while we queued: someone must run it */
        start_worker_locked(p, NULL);
    if (all_done_locked(p)) /* the last arrival was refused after the last worker left */
        pthread_cond_broadcast(&p->all_done);
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
    if (all_done_locked(p))
        pthread_cond_broadcast(&p->all_done);
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
    if (all_done_locked(p))
        pthread_cond_broadcast(&p->all_done);
    pthread_mutex_unlock(&p->lock);
    return 0;
}

int tpool_await_termination(tpool_t *p, long timeout_ms)
{
    struct timespec deadline;
    if (p == NULL || kit_deadline_after(timeout_ms, &deadline) != 0)
        return EINVAL;
    if (this_pool == p)
        return EDEADLK; /* it would wait for its own task */
    int err = 0;
    pthread_mutex_lock(&p->lock);
    /* while, not if: spurious wake-ups, and one deadline for every turn */
    while (!all_done_locked(p) && err != ETIMEDOUT)
        err = pthread_cond_timedwait(&p->all_done, &p->lock, &deadline);
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
