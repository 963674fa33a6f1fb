/**
 * @file keyed.c
 * @brief Chapter 06, another design: the map from key to lane is a fixed
 *        table of BUCKETS chains, made with the executor, hashed with FNV-1a.
 *
 * DESIGN. A lane (a key's FIFO of waiting tasks, and its own copy of the
 * key) sits in bucket fnv1a(key) % BUCKETS exactly while one drain for it is
 * scheduled on the pool or running there. The table never grows: it only
 * holds the keys active right now, so its chains stay short, and inserting a
 * key can only fail for the lane's own allocation - one failure path fewer
 * than a map that may have to grow.
 *
 * The three critical sections under `lock`:
 * - submit: append to the key's lane if it is in the table; otherwise make
 *   the lane, insert it and schedule its drain, and take it out again if the
 *   pool refuses the drain;
 * - drain: take the next task, or - finding none - remove the lane in that
 *   same critical section, so no submit can append to a lane nobody drains;
 * - close and await: `quiet` is broadcast when closed with no lane left.
 * No task runs with `lock` held.
 *
 * The pool may call a drain, or drop one, on the thread that is scheduling
 * under `lock` (caller-runs, discard policies): those calls are parked on
 * this thread's `parked` list and carried out by keyed_submit() once the
 * lock is released.
 *
 * Debugging: with KEYED_DEBUG set in the environment, each drain says on
 * stdout when it starts and when its key goes idle.
 */
#define _POSIX_C_SOURCE 200809L
#include "keyed.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit_time.h"

enum { BUCKETS = 64 };

struct job {
    struct job *next;
    future_t *future; /* the executor's reference */
    void *(*fn)(void *);
    void *arg;
};

struct lane {
    keyed_t *kx;
    /* Guarded by kx->lock: */
    struct lane *chain;      /* next lane in the same bucket */
    struct job *head, *tail; /* waiting jobs, oldest first */
    /* Used only by the thread the pool parked this lane on: */
    struct lane *parked_next;
    bool parked_as_drop;
    char key[];
};

struct keyed {
    /* Immutable after create: */
    tpool_t *pool;

    pthread_mutex_t lock;
    pthread_cond_t quiet;           /* closed and no lane left: broadcast */
    /* Guarded by lock: */
    struct lane *bucket[BUCKETS];   /* chains of active lanes */
    size_t lanes;                   /* lanes in all buckets */
    bool closed;
};

/* The lanes whose jobs this thread runs, innermost first. */
struct on_this_thread {
    const struct lane *lane;
    const struct on_this_thread *outer;
};

static _Thread_local const struct on_this_thread *running_here;
static _Thread_local int scheduling_depth; /* inside tpool_execute_or_drop, under some executor's lock */
static _Thread_local struct lane *parked;   /* drains the pool handed us meanwhile */

static bool debug_output;
static pthread_once_t debug_once = PTHREAD_ONCE_INIT;

static void read_debug_setting(void)
{
    debug_output = getenv("KEYED_DEBUG") != NULL;
}

/* ---- the table (all called with lock held) ------------------------------------------------ */

static size_t bucket_of(const char *key)
{
    uint32_t hash = 2166136261u; /* FNV-1a, 32 bits */
    for (const unsigned char *c = (const unsigned char *)key; *c != '\0'; c++) {
        hash ^= *c;
        hash *= 16777619u;
    }
    return hash % BUCKETS;
}

static struct lane *lookup_locked(keyed_t *kx, const char *key)
{
    struct lane *lane = kx->bucket[bucket_of(key)];
    while (lane != NULL && strcmp(lane->key, key) != 0)
        lane = lane->chain;
    return lane;
}

static void insert_locked(keyed_t *kx, struct lane *lane)
{
    struct lane **head = &kx->bucket[bucket_of(lane->key)];
    lane->chain = *head;
    *head = lane;
    kx->lanes++;
}

static bool quiet_locked(const keyed_t *kx)
{
    return kx->closed && kx->lanes == 0;
}

static void remove_locked(keyed_t *kx, struct lane *lane)
{
    struct lane **link = &kx->bucket[bucket_of(lane->key)];
    while (*link != lane)
        link = &(*link)->chain;
    *link = lane->chain;
    kx->lanes--;
    if (quiet_locked(kx))
        pthread_cond_broadcast(&kx->quiet);
}

static void push_job_locked(struct lane *lane, struct job *job)
{
    future_set_lane(job->future, lane); /* a wait on it from its own lane is EDEADLK, not a hang */
    job->next = NULL;
    if (lane->tail != NULL)
        lane->tail->next = job;
    else
        lane->head = job;
    lane->tail = job;
}

static struct job *pop_job_locked(struct lane *lane)
{
    struct job *job = lane->head;
    if (job != NULL) {
        lane->head = job->next;
        if (lane->head == NULL)
            lane->tail = NULL;
    }
    return job;
}

/* ---- jobs and drains ------------------------------------------------------------------------ */

static void free_job(struct job *job)
{
    future_release(job->future);
    free(job);
}

static void run_job(const struct lane *lane, struct job *job)
{
    struct on_this_thread me = { lane, running_here };
    running_here = &me;
    future_enter_lane(lane);
    future_run(job->future, job->fn, job->arg); /* cancelled: skipped; failed: recorded in the future */
    future_enter_lane(me.outer != NULL ? me.outer->lane : NULL);
    running_here = me.outer;
    free_job(job);
}

/* Runs the lane's jobs until it finds none; then the lane has left the table. */
static void drain_lane(struct lane *lane)
{
    keyed_t *kx = lane->kx;
    if (debug_output)
        printf("keyed: drain of \"%s\" starts\n", lane->key);
    for (;;) {
        pthread_mutex_lock(&kx->lock);
        struct job *job = pop_job_locked(lane);
        if (job == NULL) /* empty: leave the table in this same critical section */
            remove_locked(kx, lane);
        pthread_mutex_unlock(&kx->lock);
        if (job == NULL)
            break; /* kx may be gone from here on: touch only the lane */
        run_job(lane, job);
    }
    if (debug_output)
        printf("keyed: \"%s\" is idle\n", lane->key);
    free(lane);
}

/* The pool will not run the drain: cancel every job waiting in the lane. */
static void drop_lane(struct lane *lane)
{
    keyed_t *kx = lane->kx;
    pthread_mutex_lock(&kx->lock);
    struct job *jobs = lane->head;
    lane->head = lane->tail = NULL;
    remove_locked(kx, lane);
    pthread_mutex_unlock(&kx->lock);
    while (jobs != NULL) {
        struct job *next = jobs->next;
        future_cancel(jobs->future);
        free_job(jobs);
        jobs = next;
    }
    free(lane);
}

static bool park(struct lane *lane, bool as_drop)
{
    if (scheduling_depth == 0)
        return false;
    lane->parked_as_drop = as_drop;
    lane->parked_next = parked;
    parked = lane;
    return true;
}

static void pool_run(void *raw)
{
    if (!park(raw, false))
        drain_lane(raw);
}

static void pool_drop(void *raw)
{
    if (!park(raw, true))
        drop_lane(raw);
}

static void unpark_all(void)
{
    while (parked != NULL) {
        struct lane *lane = parked;
        parked = lane->parked_next;
        if (lane->parked_as_drop)
            drop_lane(lane);
        else
            drain_lane(lane);
    }
}

/* ---- submitting --------------------------------------------------------------------------- */

static struct lane *new_lane(keyed_t *kx, const char *key)
{
    size_t size = strlen(key) + 1;
    struct lane *lane = malloc(sizeof *lane + size);
    if (lane != NULL) {
        *lane = (struct lane){ .kx = kx };
        memcpy(lane->key, key, size);
    }
    return lane;
}

/* Called with lock held. On error nothing changed. */
static int enqueue_locked(keyed_t *kx, const char *key, struct job *job)
{
    struct lane *lane = lookup_locked(kx, key);
    if (lane != NULL) {
        push_job_locked(lane, job); /* its drain has not left: it will come to this job */
        return 0;
    }
    if ((lane = new_lane(kx, key)) == NULL)
        return ENOMEM;
    insert_locked(kx, lane);
    push_job_locked(lane, job);
    scheduling_depth++;
    int err = tpool_execute_or_drop(kx->pool, pool_run, pool_drop, lane);
    scheduling_depth--;
    if (err != 0) { /* no drain for it: out of the table again, before anyone saw it */
        remove_locked(kx, lane);
        free(lane);
    }
    return err;
}

static struct job *new_job(void *(*fn)(void *), void *arg, future_t **future)
{
    struct job *job = malloc(sizeof *job);
    if (job == NULL)
        return NULL;
    if (future_create(future) != 0) {
        free(job);
        return NULL;
    }
    *job = (struct job){ .future = future_retain(*future), .fn = fn, .arg = arg };
    return job;
}

int keyed_submit(keyed_t *kx, const char *key, void *(*fn)(void *), void *arg, future_t **out)
{
    if (out == NULL)
        return EINVAL;
    *out = NULL;
    if (kx == NULL || key == NULL || fn == NULL)
        return EINVAL;
    future_t *future = NULL;
    struct job *job = new_job(fn, arg, &future);
    if (job == NULL)
        return ENOMEM;
    pthread_mutex_lock(&kx->lock);
    int err = kx->closed ? ECANCELED : enqueue_locked(kx, key, job);
    pthread_mutex_unlock(&kx->lock);
    if (scheduling_depth == 0)
        unpark_all(); /* unlocked now: run or drop what the pool handed back */
    if (err != 0) {
        future_release(future);
        free_job(job);
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
    pthread_once(&debug_once, read_debug_setting);
    keyed_t *kx = calloc(1, sizeof *kx); /* every bucket starts empty */
    if (kx == NULL)
        return ENOMEM;
    kx->pool = pool;
    int err = pthread_mutex_init(&kx->lock, NULL);
    if (err != 0)
        goto free_kx;
    if ((err = kit_cond_init(&kx->quiet)) != 0)
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
    if (quiet_locked(kx))
        pthread_cond_broadcast(&kx->quiet); /* no drain is left to do it */
    pthread_mutex_unlock(&kx->lock);
    return 0;
}

static bool runs_a_job_of(const keyed_t *kx)
{
    for (const struct on_this_thread *r = running_here; r != NULL; r = r->outer)
        if (r->lane->kx == kx)
            return true;
    return false;
}

int keyed_await_termination(keyed_t *kx, long timeout_ms)
{
    struct timespec deadline;
    if (kx == NULL || kit_deadline_after(timeout_ms, &deadline) != 0)
        return EINVAL;
    if (runs_a_job_of(kx))
        return EDEADLK;
    int err = 0;
    pthread_mutex_lock(&kx->lock);
    /* while, not if: spurious wake-ups; one deadline for every turn */
    while (!quiet_locked(kx) && err != ETIMEDOUT)
        err = pthread_cond_timedwait(&kx->quiet, &kx->lock, &deadline);
    bool done = quiet_locked(kx);
    pthread_mutex_unlock(&kx->lock);
    return done ? 0 : ETIMEDOUT;
}

size_t keyed_active_keys(keyed_t *kx)
{
    if (kx == NULL)
        return 0;
    pthread_mutex_lock(&kx->lock);
    size_t lanes = kx->lanes;
    pthread_mutex_unlock(&kx->lock);
    return lanes;
}

void keyed_destroy(keyed_t *kx)
{
    if (kx == NULL || runs_a_job_of(kx))
        return;
    keyed_close(kx);
    keyed_await_termination(kx, LONG_MAX);
    pthread_cond_destroy(&kx->quiet);
    pthread_mutex_destroy(&kx->lock);
    free(kx);
}
