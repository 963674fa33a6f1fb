/**
 * @file bq.c
 * @brief Chapter 02, another design: the blocking queue on ONE condition
 *        variable, that still wakes only the side that can proceed whenever
 *        the condition variable alone can say so.
 *
 * DESIGN. Producers and consumers sleep on the same condition variable,
 * `changed`, but each side counts its sleepers. A put has made one item, so
 * it must wake one sleeping consumer:
 * - no consumer sleeps: nothing to do - no wake-up at all;
 * - only consumers sleep (no producer does): pthread_cond_signal() can
 *   only reach a consumer, so one signal wakes exactly one of them;
 * - producers sleep too: a signal might reach a producer, who would go back
 *   to sleep with the consumer never told - the lost wake-up chapter 01
 *   warns about. Then, and only then, it broadcasts: every sleeper
 *   re-checks, the consumers find the item, the producers sleep again.
 * A take is the mirror image. Both sides can only be asleep at once
 * transiently (a capacity-1 queue whose consumer has been woken but has not
 * run yet), so the broadcast is the rare case; that is the price of one
 * condition variable, paid only when it must be. Close broadcasts.
 * bq_destroy() waits on `changed` too, after the close, for the count of
 * sleepers to reach 0; the last sleeper to leave a closed queue broadcasts.
 *
 * Timed waits share one absolute CLOCK_MONOTONIC deadline across wake-ups,
 * and re-check the queue after timing out: a waiter that times out may have
 * consumed the wake-up meant for it, with the item already there.
 *
 * bq_try_put() decides under the lock whether the queue is full and calls
 * the policy after unlocking: policies wait, call back into the queue, or
 * run items, none of which may happen with the lock held.
 */
#define _POSIX_C_SOURCE 200809L
#include "bq.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "kit_time.h"

struct bq {
    /* Immutable after create: */
    size_t capacity;
    void **ring;

    pthread_mutex_t lock;
    pthread_cond_t changed;  /* every sleeper of either side, and bq_destroy, waits here */
    /* Guarded by lock: */
    size_t head;             /* ring[head] is the oldest item */
    size_t count;
    size_t producers_asleep; /* inside a wait for room */
    size_t consumers_asleep; /* inside a wait for an item */
    bool closed;
    bq_stats_t stats;
};

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
    if ((q->ring = calloc(capacity, sizeof *q->ring)) == NULL)
        goto free_q;
    if ((err = pthread_mutex_init(&q->lock, NULL)) != 0)
        goto free_ring;
    if ((err = kit_cond_init(&q->changed)) != 0) /* CLOCK_MONOTONIC, like the deadlines */
        goto destroy_lock;
    *out = q;
    return 0;

destroy_lock:
    pthread_mutex_destroy(&q->lock);
free_ring:
    free(q->ring);
free_q:
    free(q);
    return err;
}

/* Called with lock held: wake one sleeper of the side that can now proceed
 * (`waiting` of them sleep; `others` of the other side sleep as well). */
static void wake_one_of(bq_t *q, size_t waiting, size_t others)
{
    if (waiting == 0)
        return; /* nobody of that side sleeps: nobody to tell */
    if (others == 0)
        pthread_cond_signal(&q->changed); /* every sleeper is of the right side */
    else
        pthread_cond_broadcast(&q->changed); /* a signal could reach the wrong side */
}

static void push_locked(bq_t *q, void *item)
{
    q->ring[(q->head + q->count) % q->capacity] = item;
    q->count++;
    q->stats.enqueued++;
    wake_one_of(q, q->consumers_asleep, q->producers_asleep);
}

static void *pop_oldest_locked(bq_t *q)
{
    void *item = q->ring[q->head];
    q->head = (q->head + 1) % q->capacity;
    q->count--;
    return item;
}

static void *take_locked(bq_t *q)
{
    void *item = pop_oldest_locked(q);
    q->stats.taken++;
    wake_one_of(q, q->producers_asleep, q->consumers_asleep);
    return item;
}

/* Called with lock held: one timed or untimed wait on `changed`. */
static int sleep_locked(bq_t *q, const struct timespec *deadline)
{
    if (deadline == NULL) {
        pthread_cond_wait(&q->changed, &q->lock);
        return 0;
    }
    return pthread_cond_timedwait(&q->changed, &q->lock, deadline);
}

/* Called with lock held by a thread that has left a wait loop. */
static void left_wait_locked(bq_t *q)
{
    if (q->closed && q->producers_asleep + q->consumers_asleep == 0)
        pthread_cond_broadcast(&q->changed); /* bq_destroy may be waiting for this */
}

static bool full_locked(const bq_t *q)
{
    return q->count == q->capacity;
}

/* Called with lock held: 0 when there is room, ECANCELED, ETIMEDOUT. */
static int wait_for_room_locked(bq_t *q, const struct timespec *deadline)
{
    int err = 0;
    q->producers_asleep++;
    /* while, not if: a broadcast meant for consumers, a spurious wake-up,
     * or another producer first into the freed slot. Same deadline each turn. */
    while (full_locked(q) && !q->closed && err != ETIMEDOUT)
        err = sleep_locked(q, deadline);
    q->producers_asleep--;
    left_wait_locked(q);
    if (q->closed)
        return ECANCELED;
    return full_locked(q) ? ETIMEDOUT : 0;
}

/* Called with lock held: 0 when an item waits, ECANCELED (closed, empty), ETIMEDOUT. */
static int wait_for_item_locked(bq_t *q, const struct timespec *deadline)
{
    int err = 0;
    q->consumers_asleep++;
    while (q->count == 0 && !q->closed && err != ETIMEDOUT)
        err = sleep_locked(q, deadline);
    q->consumers_asleep--;
    left_wait_locked(q);
    if (q->count > 0)
        return 0; /* even closed, or just timed out: queued items are delivered */
    return q->closed ? ECANCELED : ETIMEDOUT;
}

static int put_until(bq_t *q, void *item, const struct timespec *deadline)
{
    pthread_mutex_lock(&q->lock);
    int err = wait_for_room_locked(q, deadline);
    if (err == 0)
        push_locked(q, item);
    pthread_mutex_unlock(&q->lock);
    return err;
}

static int take_until(bq_t *q, void **out, const struct timespec *deadline)
{
    pthread_mutex_lock(&q->lock);
    int err = wait_for_item_locked(q, deadline);
    if (err == 0)
        *out = take_locked(q);
    pthread_mutex_unlock(&q->lock);
    return err;
}

int bq_put(bq_t *q, void *item)
{
    if (q == NULL)
        return EINVAL;
    return put_until(q, item, NULL);
}

int bq_offer(bq_t *q, void *item, long timeout_ms)
{
    struct timespec deadline;
    if (q == NULL || kit_deadline_after(timeout_ms, &deadline) != 0)
        return EINVAL;
    return put_until(q, item, &deadline);
}

int bq_take(bq_t *q, void **out)
{
    if (q == NULL || out == NULL)
        return EINVAL;
    return take_until(q, out, NULL);
}

int bq_poll(bq_t *q, void **out, long timeout_ms)
{
    struct timespec deadline;
    if (q == NULL || out == NULL || kit_deadline_after(timeout_ms, &deadline) != 0)
        return EINVAL;
    return take_until(q, out, &deadline);
}

/* Adds one to a counter of q->stats, under the lock. */
static void count_one(bq_t *q, size_t *counter)
{
    pthread_mutex_lock(&q->lock);
    (*counter)++;
    pthread_mutex_unlock(&q->lock);
}

int bq_try_put(bq_t *q, void *item, const bq_policy_t *policy)
{
    if (q == NULL || policy == NULL || policy->reject == NULL)
        return EINVAL; /* checked first, room or not */
    int err = 0;
    bool ask_policy = false;
    pthread_mutex_lock(&q->lock);
    if (q->closed)
        err = ECANCELED;
    else if (full_locked(q))
        ask_policy = true;
    else
        push_locked(q, item);
    pthread_mutex_unlock(&q->lock);
    if (ask_policy) /* without the lock: the policy may wait or call back into the queue */
        err = policy->reject(q, item, policy);
    if (err != 0)
        count_one(q, &q->stats.rejected);
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
    return q == NULL ? 0 : q->capacity;
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

static void close_locked(bq_t *q)
{
    q->closed = true;
    pthread_cond_broadcast(&q->changed); /* every sleeper of both sides must see it */
}

int bq_close(bq_t *q)
{
    if (q == NULL)
        return EINVAL;
    pthread_mutex_lock(&q->lock);
    close_locked(q);
    pthread_mutex_unlock(&q->lock);
    return 0;
}

void bq_destroy(bq_t *q)
{
    if (q == NULL)
        return;
    pthread_mutex_lock(&q->lock);
    close_locked(q);
    /* while: any broadcast wakes us; free nothing until every sleeper has left. */
    while (q->producers_asleep + q->consumers_asleep > 0)
        pthread_cond_wait(&q->changed, &q->lock);
    pthread_mutex_unlock(&q->lock);
    pthread_cond_destroy(&q->changed);
    pthread_mutex_destroy(&q->lock);
    free(q->ring);
    free(q);
}

/* ---- reject policies: called by bq_try_put() without the lock ----------------- */

static int reject_block(bq_t *q, void *item, const bq_policy_t *policy)
{
    (void)policy;
    return bq_put(q, item);
}

static int reject_timeout(bq_t *q, void *item, const bq_policy_t *policy)
{
    return bq_offer(q, item, policy->timeout_ms);
}

static int reject_discard(bq_t *q, void *item, const bq_policy_t *policy)
{
    count_one(q, &q->stats.discarded);
    if (policy->item_fn != NULL)
        policy->item_fn(item);
    return 0;
}

static int reject_discard_oldest(bq_t *q, void *item, const bq_policy_t *policy)
{
    bool evicted = false;
    void *oldest = NULL;
    pthread_mutex_lock(&q->lock);
    if (q->closed) {
        pthread_mutex_unlock(&q->lock);
        return ECANCELED; /* nothing evicted: the caller keeps its item */
    }
    if (full_locked(q)) { /* look again: a take may have made room since */
        oldest = pop_oldest_locked(q);
        q->stats.discarded++;
        evicted = true;
    }
    push_locked(q, item);
    pthread_mutex_unlock(&q->lock);
    if (evicted && policy->item_fn != NULL)
        policy->item_fn(oldest);
    return 0;
}

static int reject_abort(bq_t *q, void *item, const bq_policy_t *policy)
{
    (void)q;
    (void)item;
    (void)policy;
    return EAGAIN;
}

static int reject_caller_runs(bq_t *q, void *item, const bq_policy_t *policy)
{
    if (policy->item_fn == NULL)
        return EINVAL;
    policy->item_fn(item);
    count_one(q, &q->stats.run_by_caller);
    return 0;
}

bq_policy_t bq_policy_block(void)
{
    return (bq_policy_t){ .reject = reject_block };
}

bq_policy_t bq_policy_timeout(long timeout_ms)
{
    return (bq_policy_t){ .reject = reject_timeout, .timeout_ms = timeout_ms };
}

bq_policy_t bq_policy_discard(bq_item_fn on_discard)
{
    return (bq_policy_t){ .reject = reject_discard, .item_fn = on_discard };
}

bq_policy_t bq_policy_discard_oldest(bq_item_fn on_discard)
{
    return (bq_policy_t){ .reject = reject_discard_oldest, .item_fn = on_discard };
}

bq_policy_t bq_policy_abort(void)
{
    return (bq_policy_t){ .reject = reject_abort };
}

bq_policy_t bq_policy_caller_runs(bq_item_fn run)
{
    return (bq_policy_t){ .reject = reject_caller_runs, .item_fn = run };
}
