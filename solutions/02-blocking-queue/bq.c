/**
 * @file bq.c
 * @brief Chapter 02 solution: ring buffer, one mutex, two condition variables, reject policies.
 *
 * DESIGN: `ring[head .. head + count)` (mod capacity) holds the items, oldest
 * first. Producers sleep on `not_full`, consumers on `not_empty`; each side
 * counts its sleepers, so a put signals `not_empty` only when a consumer is
 * asleep, and wakes exactly one - the one item it added can serve only one.
 * Close broadcasts both, since every sleeper must see it.
 *
 * Timed waits loop on one absolute deadline and re-check their condition
 * after a time-out before giving up: POSIX lets a timing-out waiter consume
 * a signal, so the item that signal announced may be sitting in the queue.
 *
 * bq_try_put() decides "room or not" under the lock but calls the reject
 * policy after releasing it: the block and timeout policies call bq_put() and
 * bq_offer(), which take the lock again.
 */
#define _POSIX_C_SOURCE 200809L
#include "bq.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "kit_log.h"
#include "kit_time.h"
#include "kit_trace.h"

struct bq {
    /* Immutable after create: */
    size_t capacity;
    void **ring;               /* capacity slots */

    pthread_mutex_t lock;
    pthread_cond_t not_full;   /* a slot was freed (or closed); producers wait here */
    pthread_cond_t not_empty;  /* an item arrived (or closed); consumers wait here */
    pthread_cond_t all_awake;  /* closed and the last sleeper left; bq_destroy waits here */
    /* Guarded by lock: */
    size_t head;               /* ring[head] is the oldest item */
    size_t count;              /* items queued, 0 .. capacity */
    size_t waiting_putters;    /* threads asleep on not_full */
    size_t waiting_takers;     /* threads asleep on not_empty */
    bool closed;
    bq_stats_t stats;
};

/* The lock and the three condvars; on failure, none of them is left initialised. */
static int init_sync(bq_t *q)
{
    int err = pthread_mutex_init(&q->lock, NULL);
    if (err != 0)
        return err;
    /* CLOCK_MONOTONIC: the timed waits' deadlines are monotonic. */
    if ((err = kit_cond_init(&q->not_full)) != 0)
        goto destroy_lock;
    if ((err = kit_cond_init(&q->not_empty)) != 0)
        goto destroy_not_full;
    if ((err = pthread_cond_init(&q->all_awake, NULL)) != 0)
        goto destroy_not_empty;
    return 0;

    /* Undo in reverse order: each label undoes the step before the one that failed. */
destroy_not_empty:
    pthread_cond_destroy(&q->not_empty);
destroy_not_full:
    pthread_cond_destroy(&q->not_full);
destroy_lock:
    pthread_mutex_destroy(&q->lock);
    return err;
}

int bq_create(bq_t **out, size_t capacity)
{
    if (out == NULL)
        return EINVAL;
    *out = NULL;
    if (capacity == 0 || capacity > SIZE_MAX / sizeof(void *))
        return EINVAL;
    int err = ENOMEM;
    bq_t *q = calloc(1, sizeof *q);
    if (q == NULL)
        return ENOMEM;
    q->capacity = capacity;
    q->ring = calloc(capacity, sizeof *q->ring);
    if (q->ring == NULL)
        goto free_q;
    if ((err = init_sync(q)) != 0)
        goto free_ring;
    *out = q;
    return 0;

free_ring:
    free(q->ring);
free_q:
    free(q);
    return err;
}

/* Called with lock held and room in the ring. Wakes one consumer, if any sleeps. */
static void push_locked(bq_t *q, void *item)
{
    q->ring[(q->head + q->count) % q->capacity] = item;
    q->count++;
    q->stats.enqueued++;
    if (q->waiting_takers > 0) /* PAGE: signal-the-other-side */
        pthread_cond_signal(&q->not_empty);
}

/* Called with lock held and an item in the ring. Wakes one producer, if any sleeps. */
static void *pop_locked(bq_t *q)
{
    void *item = q->ring[q->head];
    q->head = (q->head + 1) % q->capacity;
    q->count--;
    q->stats.taken++;
    if (q->waiting_putters > 0)
        pthread_cond_signal(&q->not_full);
    return item;
}

/* Called with lock held, by a thread leaving a wait loop of a closed queue:
 * a bq_destroy() in progress waits until nobody sleeps in the queue. */
static void note_sleeper_left_locked(bq_t *q)
{
    if (q->waiting_putters + q->waiting_takers == 0)
        pthread_cond_signal(&q->all_awake); /* only bq_destroy waits here */
}

/* Called with lock held. Waits for room until the deadline (NULL: no limit).
 * Returns 0 when there is room, ECANCELED if closed, ETIMEDOUT. */
static int wait_for_room_locked(bq_t *q, const struct timespec *deadline)
{
    int err = 0;
    q->waiting_putters++;
    /* while, not if: the wake-up may be spurious, or another producer may
     * fill the freed slot before we get the lock back. The deadline is the
     * same on every turn, so being woken for nothing costs no extra time. */
    while (q->count == q->capacity && !q->closed && err != ETIMEDOUT) {
        kit_log("bq", "full, waiting on not_full");
        kit_trace_begin("bq", "waiting on not_full");
        if (deadline)
            err = pthread_cond_timedwait(&q->not_full, &q->lock, deadline);
        else
            pthread_cond_wait(&q->not_full, &q->lock);
        kit_trace_end("bq");
    }
    q->waiting_putters--;
    if (q->closed) {
        note_sleeper_left_locked(q);
        return ECANCELED;
    }
    return q->count < q->capacity ? 0 : ETIMEDOUT; /* room may have come with the time-out */
}

/* Called with lock held. Waits for an item; 0, ECANCELED (closed and empty) or ETIMEDOUT. */
static int wait_for_item_locked(bq_t *q, const struct timespec *deadline)
{
    int err = 0;
    q->waiting_takers++;
    /* while, not if: spurious wake-ups, and another consumer may take the item first. */
    while (q->count == 0 && !q->closed && err != ETIMEDOUT) {
        kit_log("bq", "empty, waiting on not_empty");
        kit_trace_begin("bq", "waiting on not_empty");
        if (deadline)
            err = pthread_cond_timedwait(&q->not_empty, &q->lock, deadline);
        else
            pthread_cond_wait(&q->not_empty, &q->lock);
        kit_trace_end("bq");
    }
    q->waiting_takers--;
    if (q->closed)
        note_sleeper_left_locked(q);
    if (q->count > 0)
        return 0; /* closed or not, what is queued is still delivered */
    return q->closed ? ECANCELED : ETIMEDOUT;
}

static int enqueue(bq_t *q, void *item, const struct timespec *deadline)
{
    pthread_mutex_lock(&q->lock);
    int err = wait_for_room_locked(q, deadline);
    if (err == 0)
        push_locked(q, item);
    pthread_mutex_unlock(&q->lock);
    return err;
}

static int dequeue(bq_t *q, void **out, const struct timespec *deadline)
{
    pthread_mutex_lock(&q->lock);
    int err = wait_for_item_locked(q, deadline);
    if (err == 0)
        *out = pop_locked(q);
    pthread_mutex_unlock(&q->lock);
    return err;
}

int bq_put(bq_t *q, void *item)
{
    if (q == NULL)
        return EINVAL;
    return enqueue(q, item, NULL);
}

int bq_offer(bq_t *q, void *item, long timeout_ms)
{
    struct timespec deadline; /* PAGE: one-deadline */
    if (q == NULL || kit_deadline_after(timeout_ms, &deadline) != 0)
        return EINVAL;
    return enqueue(q, item, &deadline);
}

int bq_take(bq_t *q, void **out)
{
    if (q == NULL || out == NULL)
        return EINVAL;
    return dequeue(q, out, NULL);
}

int bq_poll(bq_t *q, void **out, long timeout_ms)
{
    struct timespec deadline;
    if (q == NULL || out == NULL || kit_deadline_after(timeout_ms, &deadline) != 0)
        return EINVAL;
    return dequeue(q, out, &deadline);
}

static void count_rejection(bq_t *q)
{
    pthread_mutex_lock(&q->lock);
    q->stats.rejected++;
    pthread_mutex_unlock(&q->lock);
}

int bq_try_put(bq_t *q, void *item, const bq_policy_t *policy)
{
    /* A policy without a function is a caller's mistake whether or not the
     * queue happens to be full: refuse it now, not on the first busy day. */
    if (q == NULL || policy == NULL || policy->reject == NULL)
        return EINVAL;
    int err = 0;
    bool full = false;
    pthread_mutex_lock(&q->lock);
    if (q->closed)
        err = ECANCELED;
    else if (q->count == q->capacity)
        full = true;
    else
        push_locked(q, item);
    pthread_mutex_unlock(&q->lock);
    /* PAGE: reject-outside-lock. The policy may wait, call bq_put, or run
     * the item for seconds: none of that may happen while we hold the lock. */
    if (full) {
        kit_log("bq", "full: handing the item to the reject policy");
        err = policy->reject(q, item, policy);
    }
    if (err != 0)
        count_rejection(q);
    return err;
}

size_t bq_size(bq_t *q)
{
    if (q == NULL)
        return 0;
    pthread_mutex_lock(&q->lock);
    size_t count = q->count;
    pthread_mutex_unlock(&q->lock);
    return count;
}

size_t bq_capacity(bq_t *q)
{
    return q ? q->capacity : 0;
}

int bq_stats(bq_t *q, bq_stats_t *out)
{
    if (q == NULL || out == NULL)
        return EINVAL;
    pthread_mutex_lock(&q->lock);
    *out = q->stats;
    pthread_mutex_unlock(&q->lock);
    return 0;
}

int bq_close(bq_t *q)
{
    if (q == NULL)
        return EINVAL;
    pthread_mutex_lock(&q->lock);
    q->closed = true;
    pthread_cond_broadcast(&q->not_full);  /* every sleeper must see `closed`, */
    pthread_cond_broadcast(&q->not_empty); /* so here broadcast, not signal */
    pthread_mutex_unlock(&q->lock);
    return 0;
}

void bq_destroy(bq_t *q)
{
    if (q == NULL)
        return;
    /* PAGE: destroy-wakes-sleepers. Freeing the queue under a sleeping
     * thread would wake it inside freed memory: close, then wait until the
     * last sleeper has left. */
    pthread_mutex_lock(&q->lock);
    q->closed = true;
    pthread_cond_broadcast(&q->not_full);
    pthread_cond_broadcast(&q->not_empty);
    while (q->waiting_putters + q->waiting_takers > 0) /* while: wake-ups can be spurious */
        pthread_cond_wait(&q->all_awake, &q->lock);
    pthread_mutex_unlock(&q->lock);
    pthread_cond_destroy(&q->all_awake);
    pthread_cond_destroy(&q->not_empty);
    pthread_cond_destroy(&q->not_full);
    pthread_mutex_destroy(&q->lock);
    free(q->ring);
    free(q);
}

/* ---- The built-in reject policies (called without the lock) --------------- */

static int reject_by_blocking(bq_t *q, void *item, const bq_policy_t *policy)
{
    (void)policy;
    return bq_put(q, item);
}

static int reject_after_timeout(bq_t *q, void *item, const bq_policy_t *policy)
{
    return bq_offer(q, item, policy->timeout_ms);
}

static int reject_by_discarding(bq_t *q, void *item, const bq_policy_t *policy)
{
    pthread_mutex_lock(&q->lock);
    q->stats.discarded++;
    pthread_mutex_unlock(&q->lock);
    if (policy->item_fn)
        policy->item_fn(item);
    return 0;
}

static int reject_by_discarding_oldest(bq_t *q, void *item, const bq_policy_t *policy)
{
    void *oldest = NULL;
    bool evicted = false;
    pthread_mutex_lock(&q->lock);
    if (q->closed) {
        pthread_mutex_unlock(&q->lock);
        return ECANCELED;
    }
    if (q->count == q->capacity) { /* still full: evict the oldest to make room */
        oldest = q->ring[q->head];
        q->head = (q->head + 1) % q->capacity;
        q->count--;
        q->stats.discarded++;
        evicted = true;
    }
    push_locked(q, item);
    pthread_mutex_unlock(&q->lock);
    if (evicted && policy->item_fn)
        policy->item_fn(oldest); /* outside the lock: it may take as long as it likes */
    return 0;
}

static int reject_by_aborting(bq_t *q, void *item, const bq_policy_t *policy)
{
    (void)q;
    (void)item;
    (void)policy;
    return EAGAIN;
}

static int reject_by_running(bq_t *q, void *item, const bq_policy_t *policy)
{
    if (policy->item_fn == NULL)
        return EINVAL;
    policy->item_fn(item); /* on the caller's thread: the producer slows to the work's pace */
    pthread_mutex_lock(&q->lock);
    q->stats.run_by_caller++;
    pthread_mutex_unlock(&q->lock);
    return 0;
}

bq_policy_t bq_policy_block(void)
{
    return (bq_policy_t){ .reject = reject_by_blocking };
}

bq_policy_t bq_policy_timeout(long timeout_ms)
{
    return (bq_policy_t){ .reject = reject_after_timeout, .timeout_ms = timeout_ms };
}

bq_policy_t bq_policy_discard(bq_item_fn on_discard)
{
    return (bq_policy_t){ .reject = reject_by_discarding, .item_fn = on_discard };
}

bq_policy_t bq_policy_discard_oldest(bq_item_fn on_discard)
{
    return (bq_policy_t){ .reject = reject_by_discarding_oldest, .item_fn = on_discard };
}

bq_policy_t bq_policy_abort(void)
{
    return (bq_policy_t){ .reject = reject_by_aborting };
}

bq_policy_t bq_policy_caller_runs(bq_item_fn run)
{
    return (bq_policy_t){ .reject = reject_by_running, .item_fn = run };
}
