/**
 * @file keyed.c
 * @brief Chapter 06 solution: a map of per-key FIFOs whose presence means "a drain is scheduled".
 *
 * DESIGN. `lanes` maps each active key to its lane: a FIFO of tasks. A lane
 * is in the map exactly while one drain for it is scheduled on the pool or
 * running there; that single fact gives both guarantees:
 * - one drain per key, and a drain runs its lane's tasks one at a time, in
 *   FIFO order: same key, strictly serial and in order;
 * - drains of different keys are independent pool tasks: parallel.
 * Every change to the map and to the FIFOs happens under `lock`; no task
 * ever runs under it. Three critical sections carry the design:
 * - submit: append to the key's lane if it is in the map; otherwise create
 *   the lane, insert it and schedule its drain - and if scheduling fails,
 *   take the lane out again before anyone can see it (`PAGE: rollback`);
 * - drain: take the next task; or, finding the FIFO empty, remove the key
 *   in that same critical section (`PAGE: enqueue-exit-race`);
 * - close/await: `terminated` is broadcast when the executor is closed and
 *   the map is empty.
 *
 * Lock order: `lock`, then a future's lock (future_set_lane), then the
 * pool's locks (tpool_execute() is called under `lock`). The pool calls back
 * into us - to run or drop a drain - without its own lock held; when it does
 * so on the thread that is inside keyed_submit() (caller-runs, discard), the
 * call is deferred until our lock is released (`PAGE: caller-runs`).
 */
#define _POSIX_C_SOURCE 200809L
#include "keyed.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "kit_log.h"
#include "kit_map.h"
#include "kit_time.h"
#include "kit_trace.h"

struct task {
    struct task *next;   /* the next task of the same key */
    future_t *future;    /* the executor's own reference */
    void *(*fn)(void *);
    void *arg;
};

struct lane {
    keyed_t *kx;
    /* Guarded by kx->lock: */
    struct task *head;   /* runs next; NULL when the FIFO is empty */
    struct task *tail;   /* the last one submitted */
    /* Used only by the thread the pool handed this lane to (see defer()): */
    struct lane *deferred_next;
    bool deferred_drop;
    char key[];          /* the lane's own copy of its key */
};

struct keyed {
    /* Immutable after create: */
    tpool_t *pool;             /* runs the drains; not ours */

    pthread_mutex_t lock;
    pthread_cond_t terminated; /* broadcast when closed and the map has become empty */
    /* Guarded by lock: */
    kit_map_t *lanes;          /* key -> struct lane: present <=> its drain is scheduled or running */
    bool closed;
};

/* The tasks this thread is running, innermost first (a task may run another
 * executor's drain inline, through a caller-runs pool). */
struct running {
    const struct lane *lane;
    const struct running *outer;
};

static _Thread_local const struct running *running;
static _Thread_local int calling_pool;          /* inside tpool_execute(), under an executor's lock */
static _Thread_local struct lane *deferred;     /* drains the pool handed us meanwhile */

/* ---- lanes and tasks ------------------------------------------------------------ */

static struct lane *new_lane(keyed_t *kx, const char *key)
{
    size_t length = strlen(key);
    struct lane *lane = malloc(sizeof *lane + length + 1);
    if (lane == NULL)
        return NULL;
    *lane = (struct lane){ .kx = kx };
    memcpy(lane->key, key, length + 1);
    return lane;
}

/* Called with lock held. */
static void append_locked(struct lane *lane, struct task *task)
{
    /* Tied to the lane before anyone can wait on it: waiting for it from a
     * task of the same lane is then EDEADLK, not a hang (PAGE: same-key-wait). */
    future_set_lane(task->future, lane);
    task->next = NULL;
    if (lane->tail)
        lane->tail->next = task;
    else
        lane->head = task;
    lane->tail = task;
}

static bool terminated_locked(keyed_t *kx)
{
    return kx->closed && kit_map_count(kx->lanes) == 0;
}

/* Called with lock held: the key has no drain any more. */
static void remove_lane_locked(keyed_t *kx, struct lane *lane)
{
    kit_map_remove(kx->lanes, lane->key, NULL); /* the map's lane for this key is this one */
    if (terminated_locked(kx))
        pthread_cond_broadcast(&kx->terminated); /* every waiter in await: they all wait for this */
}

static void free_task(struct task *task)
{
    future_release(task->future);
    free(task);
}

/* ---- the drain: one per active key, on the pool ------------------------------------ */

/* The lane's next task, or NULL after taking the key out of the map. */
static struct task *take_next(struct lane *lane)
{
    keyed_t *kx = lane->kx;
    pthread_mutex_lock(&kx->lock);
    struct task *task = lane->head;
    if (task) {
        lane->head = task->next;
        if (lane->head == NULL)
            lane->tail = NULL;
    } else {
        /* PAGE: enqueue-exit-race. "The FIFO is empty" and "the key is gone"
         * become true in one critical section. A submit that comes before
         * it appends and we take its task on this turn; a submit that
         * comes after it finds no lane and schedules a new drain. Unlocking
         * in between would let a submit append to a lane nobody drains. */
        kit_log("keyed", "%s: queue empty - key removed, drain leaves", lane->key);
        remove_lane_locked(kx, lane);
    }
    pthread_mutex_unlock(&kx->lock);
    return task; /* when NULL, kx may already be destroyed: do not touch it */
}

static void run_task(const struct lane *lane, struct task *task)
{
    struct running self = { lane, running };
    running = &self;
    future_enter_lane(lane);
    /* No lock held: tasks of other keys run meanwhile. A cancelled task is
     * skipped (ECANCELED); a failed one has recorded its error in the future.
     * Either way the next task of the key runs as usual. */
    int err = future_run(task->future, task->fn, task->arg);
    future_enter_lane(self.outer ? self.outer->lane : NULL);
    running = self.outer;
    if (err == ECANCELED)
        kit_log("keyed", "%s: skipping a cancelled task", lane->key);
    free_task(task);
}

static void run_lane(struct lane *lane)
{
    kit_trace_begin("keyed", "drain %s", lane->key);
    struct task *task = take_next(lane);
    while (task != NULL) {
        run_task(lane, task);
        task = take_next(lane);
    }
    kit_trace_end("keyed");
    free(lane);
}

/* The pool will never run this drain (a discard policy, tpool_shutdown_now()):
 * nobody else would run the tasks waiting in it, so they are cancelled. */
static void drop_lane(struct lane *lane)
{
    keyed_t *kx = lane->kx;
    pthread_mutex_lock(&kx->lock);
    struct task *tasks = lane->head;
    lane->head = NULL;
    lane->tail = NULL;
    kit_log("keyed", "%s: the pool dropped the drain - cancelling its queue", lane->key);
    remove_lane_locked(kx, lane);
    pthread_mutex_unlock(&kx->lock);
    while (tasks) {
        struct task *next = tasks->next;
        future_cancel(tasks->future); /* waiters wake with ECANCELED */
        free_task(tasks);
        tasks = next;
    }
    free(lane);
}

/* PAGE: caller-runs. The pool may run or drop a drain on the very thread
 * that called tpool_execute() - which holds our lock, and would deadlock
 * taking it again. Such a call is noted here, and that thread carries it
 * out once it has released the lock (run_deferred()). */
static bool defer(struct lane *lane, bool drop)
{
    if (calling_pool == 0)
        return false;
    lane->deferred_drop = drop;
    lane->deferred_next = deferred;
    deferred = lane;
    return true;
}

static void drain(void *raw)
{
    if (!defer(raw, false))
        run_lane(raw);
}

static void drain_dropped(void *raw)
{
    if (!defer(raw, true))
        drop_lane(raw);
}

static void run_deferred(void)
{
    while (deferred) {
        struct lane *lane = deferred;
        deferred = lane->deferred_next;
        if (lane->deferred_drop)
            drop_lane(lane);
        else
            run_lane(lane);
    }
}

/* ---- submitting ---------------------------------------------------------------------- */

/* Called with lock held: put the new lane's drain on the pool. */
static int schedule_locked(keyed_t *kx, struct lane *lane)
{
    calling_pool++;
    int err = tpool_execute_or_drop(kx->pool, drain, drain_dropped, lane);
    calling_pool--;
    return err;
}

/* Called with lock held: queue the task behind its key, scheduling a drain
 * for a key that has none. On error nothing has changed. */
static int enqueue_locked(keyed_t *kx, const char *key, struct task *task)
{
    struct lane *lane = kit_map_get(kx->lanes, key);
    if (lane) { /* PAGE: append-only. Its drain is scheduled and has not left: it will get here. */
        append_locked(lane, task);
        return 0;
    }
    lane = new_lane(kx, key);
    if (lane == NULL)
        return ENOMEM;
    int err;
    if ((err = kit_map_insert(kx->lanes, key, lane)) != 0)
        goto free_lane;
    append_locked(lane, task);
    if ((err = schedule_locked(kx, lane)) != 0)
        goto remove_lane;
    kit_log("keyed", "%s: new key - drain scheduled", key);
    return 0;

    /* Undo in reverse order: each label undoes what was done before the failed step. */
remove_lane: /* PAGE: rollback. A lane with no drain would strand every later task of the key. */
    kit_map_remove(kx->lanes, key, NULL);
free_lane:
    free(lane);
    return err;
}

/* A task with its future: one reference for the executor, one for the caller. */
static struct task *new_task(void *(*fn)(void *), void *arg)
{
    future_t *future = NULL;
    struct task *task = malloc(sizeof *task);
    if (task == NULL)
        return NULL;
    if (future_create(&future) != 0)
        goto free_record;
    *task = (struct task){ NULL, future_retain(future), fn, arg };
    return task;

free_record:
    free(task);
    return NULL;
}

int keyed_submit(keyed_t *kx, const char *key, void *(*fn)(void *), void *arg, future_t **out)
{
    if (out == NULL)
        return EINVAL;
    *out = NULL;
    if (kx == NULL || key == NULL || fn == NULL)
        return EINVAL;
    struct task *task = new_task(fn, arg);
    if (task == NULL)
        return ENOMEM;
    future_t *future = task->future; /* once queued, the task may run and be freed at any time */
    int err = ECANCELED;
    pthread_mutex_lock(&kx->lock);
    if (!kx->closed)
        err = enqueue_locked(kx, key, task);
    pthread_mutex_unlock(&kx->lock);
    if (calling_pool == 0)
        run_deferred(); /* a drain the pool gave back to this thread: run it now, unlocked */
    if (err != 0) {
        future_release(future); /* never queued: both references are ours */
        free_task(task);
        return err;
    }
    *out = future;
    return 0;
}

/* ---- life cycle -------------------------------------------------------------------- */

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
    int err;
    if ((err = kit_map_create(&kx->lanes)) != 0)
        goto free_kx;
    if ((err = pthread_mutex_init(&kx->lock, NULL)) != 0)
        goto destroy_map;
    if ((err = kit_cond_init(&kx->terminated)) != 0)
        goto destroy_lock;
    *out = kx;
    return 0;

    /* Undo in reverse order: each label undoes what was made before the failed step. */
destroy_lock:
    pthread_mutex_destroy(&kx->lock);
destroy_map:
    kit_map_destroy(kx->lanes);
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
    if (terminated_locked(kx)) /* nothing left to drain: nobody else will broadcast */
        pthread_cond_broadcast(&kx->terminated);
    pthread_mutex_unlock(&kx->lock);
    return 0;
}

/* True if the calling thread is inside a task of kx: waiting for kx to drain would wait for itself. */
static bool inside_task_of(const keyed_t *kx)
{
    for (const struct running *r = running; r; r = r->outer)
        if (r->lane->kx == kx)
            return true;
    return false;
}

int keyed_await_termination(keyed_t *kx, long timeout_ms)
{
    struct timespec deadline;
    if (kx == NULL || kit_deadline_after(timeout_ms, &deadline) != 0)
        return EINVAL;
    if (inside_task_of(kx))
        return EDEADLK;
    int err = 0;
    pthread_mutex_lock(&kx->lock);
    /* while, not if: spurious wake-ups; one deadline for every turn. */
    while (!terminated_locked(kx) && err != ETIMEDOUT)
        err = pthread_cond_timedwait(&kx->terminated, &kx->lock, &deadline);
    bool done = terminated_locked(kx);
    pthread_mutex_unlock(&kx->lock);
    return done ? 0 : ETIMEDOUT;
}

size_t keyed_active_keys(keyed_t *kx)
{
    if (kx == NULL)
        return 0;
    pthread_mutex_lock(&kx->lock);
    size_t count = kit_map_count(kx->lanes);
    pthread_mutex_unlock(&kx->lock);
    return count;
}

void keyed_destroy(keyed_t *kx)
{
    if (kx == NULL || inside_task_of(kx))
        return;
    keyed_close(kx);
    keyed_await_termination(kx, LONG_MAX); /* every lane drained, and freed by its drain */
    kit_map_destroy(kx->lanes);
    pthread_cond_destroy(&kx->terminated);
    pthread_mutex_destroy(&kx->lock);
    free(kx);
}
