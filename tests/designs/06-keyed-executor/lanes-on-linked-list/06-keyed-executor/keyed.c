/**
 * @file keyed.c
 * @brief Chapter 06, another design: the active keys are kept in a plain
 *        linked list, searched by strcmp, instead of a hash map.
 *
 * DESIGN. An executor usually has a handful of keys active at once (one per
 * account being updated right now, not one per account that exists), so a
 * list searched from the front is as fast as a map and has nothing to grow
 * and nothing to fail but the lane's own allocation. A *lane* is one active
 * key: its own copy of the key and the FIFO of its waiting tasks. A lane is
 * on the `active` list exactly while one drain for it is scheduled on the
 * pool or running there:
 * - keyed_submit() appends to the lane of its key if the list has one; if
 *   not, it makes a lane, links it in, and schedules its drain - all under
 *   `lock` - and unlinks it again if the pool refuses the drain;
 * - the drain takes its lane's tasks one at a time; the turn that finds the
 *   FIFO empty unlinks the lane in that same critical section, so a submit
 *   either comes before (and its task is taken) or after (and it schedules
 *   a new drain) - never in between.
 *
 * `key_count` mirrors the length of the list in a C11 atomic, stored under
 * `lock`, so keyed_active_keys() reads it without the lock.
 *
 * The pool may call our drain, or drop it, on the very thread that is
 * scheduling it under `lock` (caller-runs, discard policies). Taking `lock`
 * again there would deadlock, so such a call only notes the lane in
 * `handed_back` (this thread's own); keyed_submit() runs or drops it once it
 * has released the lock. One schedule hands back at most one lane.
 *
 * Lock order: `lock`, then a future's lock (future_set_lane), then the
 * pool's (tpool_execute_or_drop under `lock`). No task runs under `lock`.
 */
#define _POSIX_C_SOURCE 200809L
#include "keyed.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "kit_time.h"

struct task {
    struct task *next;
    future_t *future;    /* the executor's reference */
    void *(*fn)(void *);
    void *arg;
};

struct lane {
    keyed_t *kx;
    /* Guarded by kx->lock: */
    struct lane *next;   /* on kx->active */
    struct task *first;  /* runs next; NULL when empty */
    struct task *last;
    char key[];
};

struct keyed {
    /* Immutable after create: */
    tpool_t *pool;

    pthread_mutex_t lock;
    pthread_cond_t drained;   /* broadcast when closed and the last lane has left */
    /* Guarded by lock: */
    struct lane *active;      /* one lane per key with a drain scheduled or running */
    bool closed;
    /* Stored under lock, read by anyone: */
    atomic_size_t key_count;  /* the length of `active` */
};

/* The lanes whose tasks this thread is running, innermost first (a task
 * can run another drain inline, through a caller-runs pool). */
struct running_task {
    const struct lane *lane;
    const struct running_task *outer;
};

static _Thread_local const struct running_task *running_tasks;
static _Thread_local unsigned scheduling;        /* inside tpool_execute_or_drop under an executor's lock */
static _Thread_local struct lane *handed_back;  /* a drain the pool gave this thread meanwhile */
static _Thread_local bool handed_back_to_drop;

/* ---- the list of active lanes (all called with lock held) ---------------------------- */

static struct lane *find_lane_locked(keyed_t *kx, const char *key)
{
    for (struct lane *lane = kx->active; lane != NULL; lane = lane->next)
        if (strcmp(lane->key, key) == 0)
            return lane;
    return NULL;
}

static void link_lane_locked(keyed_t *kx, struct lane *lane)
{
    lane->next = kx->active;
    kx->active = lane;
    atomic_store(&kx->key_count, atomic_load(&kx->key_count) + 1);
}

static void unlink_lane_locked(keyed_t *kx, struct lane *lane)
{
    struct lane **link = &kx->active;
    while (*link != lane)
        link = &(*link)->next;
    *link = lane->next;
    atomic_store(&kx->key_count, atomic_load(&kx->key_count) - 1);
    if (kx->closed && kx->active == NULL)
        pthread_cond_broadcast(&kx->drained); /* every awaiter waits for this */
}

static void append_locked(struct lane *lane, struct task *task)
{
    future_set_lane(task->future, lane); /* before anyone can wait on it: same-key waits are EDEADLK */
    task->next = NULL;
    if (lane->last != NULL)
        lane->last->next = task;
    else
        lane->first = task;
    lane->last = task;
}

/* ---- tasks and drains ---------------------------------------------------------------------- */

static void free_task(struct task *task)
{
    future_release(task->future);
    free(task);
}

/* The next task of the lane; or NULL, having unlinked the lane in the same
 * critical section (after which kx may be destroyed at any moment). */
static struct task *next_or_leave(struct lane *lane)
{
    keyed_t *kx = lane->kx;
    pthread_mutex_lock(&kx->lock);
    struct task *task = lane->first;
    if (task != NULL) {
        lane->first = task->next;
        if (lane->first == NULL)
            lane->last = NULL;
    } else {
        unlink_lane_locked(kx, lane);
    }
    pthread_mutex_unlock(&kx->lock);
    return task;
}

static void run_one(struct lane *lane, struct task *task)
{
    struct running_task me = { lane, running_tasks };
    running_tasks = &me;
    future_enter_lane(lane);
    future_run(task->future, task->fn, task->arg); /* ECANCELED for a cancelled one: skipped */
    future_enter_lane(me.outer != NULL ? me.outer->lane : NULL);
    running_tasks = me.outer;
    free_task(task);
}

static void drain_now(struct lane *lane)
{
    struct task *task;
    while ((task = next_or_leave(lane)) != NULL)
        run_one(lane, task);
    free(lane);
}

/* The pool will never run this drain: cancel whatever waits in the lane. */
static void drop_now(struct lane *lane)
{
    keyed_t *kx = lane->kx;
    pthread_mutex_lock(&kx->lock);
    struct task *tasks = lane->first;
    lane->first = NULL;
    lane->last = NULL;
    unlink_lane_locked(kx, lane);
    pthread_mutex_unlock(&kx->lock);
    while (tasks != NULL) {
        struct task *next = tasks->next;
        future_cancel(tasks->future);
        free_task(tasks);
        tasks = next;
    }
    free(lane);
}

/* The pool's two callbacks. On the thread that is scheduling under an
 * executor's lock they only take note; keyed_submit() does the work. */
static void pool_runs_drain(void *raw)
{
    if (scheduling > 0) {
        handed_back = raw;
        handed_back_to_drop = false;
        return;
    }
    drain_now(raw);
}

static void pool_drops_drain(void *raw)
{
    if (scheduling > 0) {
        handed_back = raw;
        handed_back_to_drop = true;
        return;
    }
    drop_now(raw);
}

static void finish_handed_back(void)
{
    struct lane *lane = handed_back;
    bool drop = handed_back_to_drop;
    handed_back = NULL;
    if (lane == NULL)
        return;
    if (drop)
        drop_now(lane);
    else
        drain_now(lane);
}

/* ---- submitting ----------------------------------------------------------------------------- */

/* Called with lock held: task joins its key's lane, which gets a drain if new. */
static int enqueue_locked(keyed_t *kx, const char *key, struct task *task)
{
    struct lane *lane = find_lane_locked(kx, key);
    if (lane != NULL) { /* its drain has not left yet: it will reach this task */
        append_locked(lane, task);
        return 0;
    }
    size_t length = strlen(key);
    lane = malloc(sizeof *lane + length + 1);
    if (lane == NULL)
        return ENOMEM;
    *lane = (struct lane){ .kx = kx };
    memcpy(lane->key, key, length + 1);
    link_lane_locked(kx, lane);
    append_locked(lane, task);
    scheduling++;
    int err = tpool_execute_or_drop(kx->pool, pool_runs_drain, pool_drops_drain, lane);
    scheduling--;
    if (err != 0) { /* no drain: a lane left on the list would strand every later task of the key */
        unlink_lane_locked(kx, lane);
        free(lane);
    }
    return err;
}

int keyed_submit(keyed_t *kx, const char *key, void *(*fn)(void *), void *arg, future_t **out)
{
    if (out == NULL)
        return EINVAL;
    *out = NULL;
    if (kx == NULL || key == NULL || fn == NULL)
        return EINVAL;
    struct task *task = malloc(sizeof *task);
    if (task == NULL)
        return ENOMEM;
    future_t *future = NULL;
    int err = future_create(&future);
    if (err != 0) {
        free(task);
        return err;
    }
    *task = (struct task){ .next = NULL, .future = future_retain(future), .fn = fn, .arg = arg };

    pthread_mutex_lock(&kx->lock);
    err = kx->closed ? ECANCELED : enqueue_locked(kx, key, task);
    pthread_mutex_unlock(&kx->lock);
    if (scheduling == 0)
        finish_handed_back(); /* a drain the pool gave back to us: run it now, unlocked */
    if (err != 0) {
        future_release(future); /* the caller's reference; free_task drops the executor's */
        free_task(task);
        return err;
    }
    *out = future;
    return 0;
}

/* ---- life cycle ---------------------------------------------------------------------------- */

int keyed_create(keyed_t **out, tpool_t *pool)
{
    if (out == NULL)
        return EINVAL;
    *out = NULL;
    if (pool == NULL)
        return EINVAL;
    keyed_t *kx = calloc(1, sizeof *kx);
    if (kx == NULL)
        return ENOMEM;
    kx->pool = pool;
    atomic_init(&kx->key_count, 0);
    int err = pthread_mutex_init(&kx->lock, NULL);
    if (err != 0)
        goto free_kx;
    if ((err = kit_cond_init(&kx->drained)) != 0) /* CLOCK_MONOTONIC: await's deadline */
        goto destroy_lock;
    *out = kx;
    return 0;

destroy_lock:
    pthread_mutex_destroy(&kx->lock);
free_kx:
    free(kx);
    return err;
}

int keyed_close(keyed_t *kx)
{
    if (kx == NULL)
        return EINVAL;
    pthread_mutex_lock(&kx->lock);
    kx->closed = true;
    if (kx->active == NULL) /* nothing to drain: no drain will broadcast */
        pthread_cond_broadcast(&kx->drained);
    pthread_mutex_unlock(&kx->lock);
    return 0;
}

static bool in_own_task(const keyed_t *kx)
{
    for (const struct running_task *r = running_tasks; r != NULL; r = r->outer)
        if (r->lane->kx == kx)
            return true;
    return false;
}

int keyed_await_termination(keyed_t *kx, long timeout_ms)
{
    struct timespec deadline;
    if (kx == NULL || kit_deadline_after(timeout_ms, &deadline) != 0)
        return EINVAL;
    if (in_own_task(kx))
        return EDEADLK;
    int err = 0;
    pthread_mutex_lock(&kx->lock);
    /* while, not if: spurious wake-ups; the same deadline every turn */
    while (!(kx->closed && kx->active == NULL) && err != ETIMEDOUT)
        err = pthread_cond_timedwait(&kx->drained, &kx->lock, &deadline);
    bool done = kx->closed && kx->active == NULL;
    pthread_mutex_unlock(&kx->lock);
    return done ? 0 : ETIMEDOUT;
}

size_t keyed_active_keys(keyed_t *kx)
{
    if (kx == NULL)
        return 0;
    return atomic_load(&kx->key_count);
}

void keyed_destroy(keyed_t *kx)
{
    if (kx == NULL || in_own_task(kx))
        return;
    keyed_close(kx);
    keyed_await_termination(kx, LONG_MAX); /* every lane drained and freed by its drain */
    pthread_cond_destroy(&kx->drained);
    pthread_mutex_destroy(&kx->lock);
    free(kx);
}
