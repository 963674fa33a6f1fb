/**
 * @file tpool.c
 * @brief Chapter 03, another design: the workers live in a fixed array of
 *        `core_threads` slots, allocated with the pool, instead of a list.
 *
 * DESIGN. A pool never has more than `core_threads` workers alive, so it
 * gets that many slots at create and never allocates for a worker again.
 * A slot is EMPTY (no thread), ALIVE (its thread runs the worker loop) or
 * FINISHED (its thread has left the loop and touches nothing of the pool
 * any more, but has not been joined). Starting a worker takes a slot that
 * is not ALIVE - there is always one while alive < core_threads - and, if
 * it is FINISHED, joins its old thread first. That join waits for nothing
 * but the old thread's return: it marked its slot FINISHED as the very last
 * thing it did under the lock. Workers are named after their slot,
 * `<name>-1` .. `<name>-<core_threads>`, so a pool that shrinks and grows
 * again reuses its names.
 *
 * Tasks: below core size a task is handed to a new worker in its slot
 * (`first`); otherwise it goes through the reject policy into the
 * chapter-02 queue. A worker polls the queue for `keep_alive_ms` between
 * tasks and retires when the poll comes back empty.
 *
 * The idle-exit race is closed on both sides under `lock`: a worker whose
 * poll timed out looks at the queue again before it retires, and
 * tpool_execute(), having queued a task, starts a worker if none is alive.
 *
 * Lock order: `lock`, then the queue's own lock (bq_size() under `lock`).
 * No task runs, and no bq call that can block is made, with `lock` held.
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

#include "kit_thread.h"
#include "kit_time.h"

struct task {
    void (*run)(void *);
    void (*drop)(void *);
    void *arg;
    tpool_t *pool;
};

enum slot_state { SLOT_EMPTY, SLOT_ALIVE, SLOT_FINISHED };

struct slot {
    /* Immutable after create: */
    tpool_t *pool;
    size_t number;         /* 1-based: the thread is `<name>-<number>` */
    /* Guarded by pool->lock: */
    enum slot_state state;
    pthread_t thread;      /* valid while ALIVE or FINISHED */
    struct task *first;    /* the task handed over at start; read by the new thread */
};

struct tpool {
    /* Immutable after create: */
    size_t core_threads;
    long keep_alive_ms;
    bq_t *queue;
    bq_policy_t policy;        /* the configured policy with the pool's own item function */
    char name[TPOOL_NAME_MAX + 1];
    struct slot *slots;        /* core_threads of them */

    pthread_mutex_t lock;
    pthread_cond_t terminated; /* broadcast when shut down, drained, and the last worker has left */
    /* Guarded by lock: */
    size_t alive;              /* slots ALIVE */
    size_t blocked;            /* chapter 04's detector keeps its count here */
    size_t arriving;           /* tasks accepted to be queued, not yet in the queue: termination waits for them */
    bool shutdown;
    tpool_stats_t stats;       /* `threads` and `queued` are filled in when read */
};

static _Thread_local tpool_t *my_pool;   /* the pool this thread is a worker of */
static _Thread_local int my_task_error; /* tpool_task_fail() of the task running here */

static void *worker_loop(void *raw);

/* ---- slots ---------------------------------------------------------------- */

/* Called with lock held and alive < core_threads: a slot no thread runs in. */
static struct slot *free_slot_locked(tpool_t *p)
{
    struct slot *finished = NULL;
    for (size_t i = 0; i < p->core_threads; i++) {
        if (p->slots[i].state == SLOT_EMPTY)
            return &p->slots[i];
        if (p->slots[i].state == SLOT_FINISHED && finished == NULL)
            finished = &p->slots[i];
    }
    return finished;
}

/* Called with lock held: joins the slot's old thread, which has left. */
static void reap_locked(struct slot *s)
{
    if (s->state != SLOT_FINISHED)
        return;
    pthread_join(s->thread, NULL); /* it did nothing after marking FINISHED but return */
    s->state = SLOT_EMPTY;
}

/* Called with lock held: starts a worker in a free slot with `first` (NULL:
 * it polls the queue). EAGAIN if every slot is taken. */
static int start_worker_locked(tpool_t *p, struct task *first)
{
    if (p->alive >= p->core_threads)
        return EAGAIN;
    struct slot *s = free_slot_locked(p);
    reap_locked(s);
    char name[KIT_THREAD_NAME_MAX];
    snprintf(name, sizeof name, "%s-%zu", p->name, s->number);
    s->first = first;
    int err = kit_thread_start(&s->thread, name, worker_loop, s);
    if (err != 0)
        return err; /* the slot stays EMPTY */
    s->state = SLOT_ALIVE;
    p->alive++;
    if (p->alive > p->stats.largest)
        p->stats.largest = p->alive;
    return 0;
}

static bool terminated_locked(tpool_t *p)
{
    return p->shutdown && p->alive == 0 && p->arriving == 0 && bq_size(p->queue) == 0;
}

/* ---- running tasks ----------------------------------------------------------- */

static void run_task(tpool_t *p, struct task *task, bool by_caller)
{
    int outer_error = my_task_error; /* a caller-runs task may run inside another task */
    my_task_error = 0;
    if (!by_caller) {
        pthread_mutex_lock(&p->lock);
        p->stats.active++;
        pthread_mutex_unlock(&p->lock);
    }
    task->run(task->arg);
    pthread_mutex_lock(&p->lock);
    if (by_caller)
        p->stats.ran_by_caller++;
    else
        p->stats.active--;
    p->stats.completed++;
    if (my_task_error != 0)
        p->stats.failed++;
    pthread_mutex_unlock(&p->lock);
    my_task_error = outer_error;
    free(task);
}

/* The queue's item functions: what the policies do with a task record. */
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

/* ---- the worker -------------------------------------------------------------- */

/* The poll gave up (ETIMEDOUT: idle; ECANCELED: shut down and drained).
 * Returns true if the worker leaves; false if a task came in meanwhile. */
static bool leave_slot(tpool_t *p, struct slot *self, int why)
{
    pthread_mutex_lock(&p->lock);
    /* PAGE: idle-exit-race. execute() may have queued a task after our poll
     * gave up, counting on us: look again under the lock it also takes. */
    bool leave = why == ECANCELED || bq_size(p->queue) == 0;
    if (leave) {
        if (why == ETIMEDOUT)
            p->stats.retired++;
        p->alive--;
        self->state = SLOT_FINISHED; /* the last thing this thread does to the pool */
        if (terminated_locked(p))
            pthread_cond_broadcast(&p->terminated);
    }
    pthread_mutex_unlock(&p->lock);
    return leave;
}

static void *worker_loop(void *raw)
{
    struct slot *self = raw;
    tpool_t *p = self->pool;
    my_pool = p;
    struct task *task = self->first; /* written before this thread was created */
    for (;;) {
        if (task != NULL)
            run_task(p, task, false);
        void *item = NULL;
        int err = bq_poll(p->queue, &item, p->keep_alive_ms);
        if (err == 0)
            task = item;
        else if (leave_slot(p, self, err))
            return NULL;
        else
            task = NULL; /* a task arrived as we were leaving: poll again */
    }
}

/* ---- create and destroy ---------------------------------------------------------- */

static bool config_ok(const tpool_config_t *c)
{
    if (c == NULL || c->core_threads == 0 || c->queue_capacity == 0 || c->keep_alive_ms < 0 ||
        c->reject.reject == NULL)
        return false;
    return c->name == NULL || strlen(c->name) <= TPOOL_NAME_MAX;
}

int tpool_create(tpool_t **out, const tpool_config_t *config)
{
    if (out == NULL)
        return EINVAL;
    *out = NULL;
    if (!config_ok(config))
        return EINVAL;
    if (config->core_threads > SIZE_MAX / sizeof(struct slot))
        return ENOMEM;
    tpool_t *p = calloc(1, sizeof *p);
    if (p == NULL)
        return ENOMEM;
    p->core_threads = config->core_threads;
    p->keep_alive_ms = config->keep_alive_ms;
    snprintf(p->name, sizeof p->name, "%s", config->name != NULL ? config->name : "pool");
    p->policy = config->reject;
    /* The queue holds task records: the policy's item function must be ours. */
    p->policy.item_fn = config->reject.reject == bq_policy_caller_runs(NULL).reject ? run_on_caller : drop_task;
    int err = ENOMEM;
    if ((p->slots = calloc(p->core_threads, sizeof *p->slots)) == NULL)
        goto free_p;
    for (size_t i = 0; i < p->core_threads; i++)
        p->slots[i] = (struct slot){ .pool = p, .number = i + 1, .state = SLOT_EMPTY };
    if ((err = bq_create(&p->queue, config->queue_capacity)) != 0)
        goto free_slots;
    if ((err = pthread_mutex_init(&p->lock, NULL)) != 0)
        goto destroy_queue;
    if ((err = kit_cond_init(&p->terminated)) != 0)
        goto destroy_lock;
    *out = p;
    return 0;

destroy_lock:
    pthread_mutex_destroy(&p->lock);
destroy_queue:
    bq_destroy(p->queue);
free_slots:
    free(p->slots);
free_p:
    free(p);
    return err;
}

/* After shutdown, if no worker is alive (none could be started), nobody
 * will ever run what is queued: drop it instead of waiting forever. */
static void drop_if_nobody_left(tpool_t *p)
{
    pthread_mutex_lock(&p->lock);
    bool nobody = p->alive == 0;
    pthread_mutex_unlock(&p->lock);
    void *item;
    while (nobody && bq_poll(p->queue, &item, 0) == 0)
        drop_task(item);
}

void tpool_destroy(tpool_t *p)
{
    if (p == NULL || my_pool == p)
        return; /* from its own task it would wait for itself */
    tpool_shutdown(p);
    drop_if_nobody_left(p);
    tpool_await_termination(p, LONG_MAX); /* also joins every slot's thread */
    bq_destroy(p->queue);
    pthread_cond_destroy(&p->terminated);
    pthread_mutex_destroy(&p->lock);
    free(p->slots);
    free(p);
}

/* ---- submitting ---------------------------------------------------------------- */

static int reject(tpool_t *p, struct task *task, int err)
{
    pthread_mutex_lock(&p->lock);
    p->stats.rejected++;
    pthread_mutex_unlock(&p->lock);
    free(task);
    return err;
}

/* Queues a task accepted under the lock, where it was counted in p->arriving:
 * until it is in the queue (or refused) the pool cannot be terminated, though
 * a shutdown and the last worker's leaving may come meanwhile. */
static int queue_task(tpool_t *p, struct task *task)
{
    int err = bq_try_put(p->queue, task, &p->policy); /* may wait, run or drop it: no lock held */
    pthread_mutex_lock(&p->lock);
    p->arriving--;
    /* PAGE: idle-exit-race, execute side: the worker counted on when we
     * chose to queue may have retired since. If none is left, start one; if
     * that fails the task waits for the next execute or the shutdown. */
    if (err == 0 && p->alive == 0)
        start_worker_locked(p, NULL);
    if (terminated_locked(p)) /* the last arrival was refused after the last worker left */
        pthread_cond_broadcast(&p->terminated);
    pthread_mutex_unlock(&p->lock);
    return err != 0 ? reject(p, task, err) : 0;
}

int tpool_execute_or_drop(tpool_t *p, void (*fn)(void *), void (*drop)(void *), void *arg)
{
    if (p == NULL || fn == NULL)
        return EINVAL;
    struct task *task = malloc(sizeof *task);
    if (task == NULL)
        return ENOMEM;
    *task = (struct task){ .run = fn, .drop = drop, .arg = arg, .pool = p };

    pthread_mutex_lock(&p->lock);
    p->stats.submitted++;
    int err = 0;
    bool handed = false;
    if (p->shutdown) {
        err = ECANCELED;
    } else if (p->alive < p->core_threads) {
        err = start_worker_locked(p, task); /* below core size: straight to a new worker */
        handed = err == 0;
        if (err != 0 && p->alive > 0)
            err = 0; /* no new thread, but a live worker will take it from the queue */
    }
    if (err == 0 && !handed)
        p->arriving++; /* accepted before any shutdown: termination waits until it is queued */
    pthread_mutex_unlock(&p->lock);
    if (err != 0)
        return reject(p, task, err);
    return handed ? 0 : queue_task(p, task);
}

int tpool_execute(tpool_t *p, void (*fn)(void *), void *arg)
{
    return tpool_execute_or_drop(p, fn, NULL, arg);
}

/* ---- shutting down -------------------------------------------------------------- */

int tpool_shutdown(tpool_t *p)
{
    if (p == NULL)
        return EINVAL;
    pthread_mutex_lock(&p->lock);
    p->shutdown = true;
    if (p->alive == 0 && bq_size(p->queue) > 0)
        start_worker_locked(p, NULL); /* queued tasks still run: someone must be there */
    if (terminated_locked(p))
        pthread_cond_broadcast(&p->terminated);
    pthread_mutex_unlock(&p->lock);
    bq_close(p->queue); /* idle workers wake, drain the queue, and leave */
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
    if (terminated_locked(p)) /* emptying the queue may be what completes it */
        pthread_cond_broadcast(&p->terminated);
    pthread_mutex_unlock(&p->lock);
    return 0;
}

int tpool_await_termination(tpool_t *p, long timeout_ms)
{
    struct timespec deadline;
    if (p == NULL || kit_deadline_after(timeout_ms, &deadline) != 0)
        return EINVAL;
    if (my_pool == p)
        return EDEADLK;
    int err = 0;
    pthread_mutex_lock(&p->lock);
    /* while, not if: spurious wake-ups; one deadline for every turn. */
    while (!terminated_locked(p) && err != ETIMEDOUT)
        err = pthread_cond_timedwait(&p->terminated, &p->lock, &deadline);
    bool done = terminated_locked(p);
    if (done) {
        for (size_t i = 0; i < p->core_threads; i++)
            reap_locked(&p->slots[i]); /* every worker has left its loop: joins return at once */
    }
    pthread_mutex_unlock(&p->lock);
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
    my_task_error = error != 0 ? error : EIO;
}

tpool_t *tpool_current(void)
{
    return my_pool;
}

/* ---- tpool_internal.h: for chapter 04's starvation detector ---------------------- */

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
    if (p->shutdown)
        return EAGAIN;
    return start_worker_locked(p, NULL); /* EAGAIN at core size */
}

size_t tpool_blocked_locked(tpool_t *p)
{
    return p->blocked;
}

void tpool_set_blocked_locked(tpool_t *p, size_t blocked)
{
    p->blocked = blocked;
}
