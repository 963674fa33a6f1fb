/**
 * @file bq.c
 * @brief Chapter 02, another design: each side of the queue is a small
 *        object of its own - a condition variable and its count of
 *        sleepers - and every timed wait is a pthread_cond_clockwait() on
 *        CLOCK_MONOTONIC.
 *
 * DESIGN. `ring[out]` is the oldest item, `ring[in]` the next free slot,
 * `count` the number of items. Producers wait on the `room` side, consumers
 * on the `items` side. A side knows how many of its threads are asleep, so
 * side_wake_one() signals only when someone is there to hear it, and
 * side_wake_all() is what close uses. A put wakes one consumer, a take one
 * producer.
 *
 * Clocks: the condition variables keep their default attributes; the clock
 * is named on each timed wait instead, with pthread_cond_clockwait(), so no
 * condattr is needed and the deadline's clock is visible where it is used.
 * A deadline is computed once per call, from CLOCK_MONOTONIC (a wall clock
 * set back would stretch a wait), and reused by every turn of the loop.
 *
 * bq_destroy() closes, then waits on `gone` until both sides are empty of
 * sleepers. Reject policies run without the lock (see bq_try_put()).
 */
#define _GNU_SOURCE /* pthread_cond_clockwait() */
#include "bq.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

/* One side of the queue: who waits for what, and how many of them. */
struct side {
    pthread_cond_t cond;
    size_t asleep; /* guarded by the queue's lock */
};

struct bq {
    /* Immutable after create: */
    size_t capacity;
    void **ring;

    pthread_mutex_t lock;
    struct side room;      /* producers: a slot was freed, or closed */
    struct side items;     /* consumers: an item arrived, or closed */
    pthread_cond_t gone;   /* bq_destroy: the last sleeper has left a closed queue */
    /* Guarded by lock: */
    size_t in, out, count; /* ring[out] is the oldest, ring[in] the next free slot */
    bool closed;
    bq_stats_t stats;
};

/* ---- sides and deadlines ------------------------------------------------------ */

/* Called with the lock held. One wait: 0, or ETIMEDOUT once `deadline`
 * (CLOCK_MONOTONIC; NULL: none) has passed. */
static int side_wait(struct side *s, pthread_mutex_t *lock, const struct timespec *deadline)
{
    if (deadline == NULL) {
        pthread_cond_wait(&s->cond, lock);
        return 0;
    }
    return pthread_cond_clockwait(&s->cond, lock, CLOCK_MONOTONIC, deadline);
}

static void side_wake_one(struct side *s)
{
    if (s->asleep > 0)
        pthread_cond_signal(&s->cond);
}

static void side_wake_all(struct side *s)
{
    pthread_cond_broadcast(&s->cond);
}

/* `timeout_ms` from now on CLOCK_MONOTONIC; EINVAL if negative. */
static int deadline_in(long timeout_ms, struct timespec *deadline)
{
    if (timeout_ms < 0)
        return EINVAL;
    clock_gettime(CLOCK_MONOTONIC, deadline);
    long long seconds = timeout_ms / 1000;
    if (seconds > 100LL * 365 * 24 * 3600) /* a century is forever; keeps time_t from overflowing */
        seconds = 100LL * 365 * 24 * 3600;
    deadline->tv_sec += (time_t)seconds;
    deadline->tv_nsec += (timeout_ms % 1000) * 1000000L;
    if (deadline->tv_nsec >= 1000000000L) {
        deadline->tv_nsec -= 1000000000L;
        deadline->tv_sec++;
    }
    return 0;
}

/* ---- create and destroy -------------------------------------------------------- */

static int init_sync(bq_t *q)
{
    int err = pthread_mutex_init(&q->lock, NULL);
    if (err != 0)
        return err;
    if ((err = pthread_cond_init(&q->room.cond, NULL)) != 0)
        goto destroy_lock;
    if ((err = pthread_cond_init(&q->items.cond, NULL)) != 0)
        goto destroy_room;
    if ((err = pthread_cond_init(&q->gone, NULL)) != 0)
        goto destroy_items;
    return 0;

destroy_items:
    pthread_cond_destroy(&q->items.cond);
destroy_room:
    pthread_cond_destroy(&q->room.cond);
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
    if ((q->ring = malloc(capacity * sizeof *q->ring)) == NULL)
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

static void close_locked(bq_t *q)
{
    q->closed = true;
    side_wake_all(&q->room);
    side_wake_all(&q->items);
}

void bq_destroy(bq_t *q)
{
    if (q == NULL)
        return;
    pthread_mutex_lock(&q->lock);
    close_locked(q);
    /* while: a wake-up can be spurious; free nothing while a sleeper is inside. */
    while (q->room.asleep + q->items.asleep > 0)
        pthread_cond_wait(&q->gone, &q->lock);
    pthread_mutex_unlock(&q->lock);
    pthread_cond_destroy(&q->gone);
    pthread_cond_destroy(&q->items.cond);
    pthread_cond_destroy(&q->room.cond);
    pthread_mutex_destroy(&q->lock);
    free(q->ring);
    free(q);
}

/* ---- the ring (all called with the lock held) ------------------------------------ */

static void push_locked(bq_t *q, void *item)
{
    q->ring[q->in] = item;
    q->in = (q->in + 1) % q->capacity;
    q->count++;
    q->stats.enqueued++;
    side_wake_one(&q->items); /* one item: one consumer can proceed */
}

static void *drop_oldest_locked(bq_t *q)
{
    void *item = q->ring[q->out];
    q->out = (q->out + 1) % q->capacity;
    q->count--;
    return item;
}

static void *pop_locked(bq_t *q)
{
    void *item = drop_oldest_locked(q);
    q->stats.taken++;
    side_wake_one(&q->room); /* one slot: one producer can proceed */
    return item;
}

static void left_side_locked(bq_t *q)
{
    if (q->closed && q->room.asleep + q->items.asleep == 0)
        pthread_cond_signal(&q->gone); /* only bq_destroy waits there */
}

/* ---- waiting ---------------------------------------------------------------------- */

static int await_room_locked(bq_t *q, const struct timespec *deadline)
{
    int err = 0;
    q->room.asleep++;
    /* while, not if: spurious wake-ups, or another producer takes the slot first. */
    while (q->count == q->capacity && !q->closed && err == 0)
        err = side_wait(&q->room, &q->lock, deadline);
    q->room.asleep--;
    left_side_locked(q);
    if (q->closed)
        return ECANCELED; /* closed wins, deadline or not */
    return q->count < q->capacity ? 0 : ETIMEDOUT; /* room may have come with the time-out */
}

static int await_item_locked(bq_t *q, const struct timespec *deadline)
{
    int err = 0;
    q->items.asleep++;
    /* while, not if: spurious wake-ups, or another consumer takes the item first. */
    while (q->count == 0 && !q->closed && err == 0)
        err = side_wait(&q->items, &q->lock, deadline);
    q->items.asleep--;
    left_side_locked(q);
    if (q->count > 0)
        return 0;
    return q->closed ? ECANCELED : ETIMEDOUT;
}

static int put_before(bq_t *q, void *item, const struct timespec *deadline)
{
    pthread_mutex_lock(&q->lock);
    int err = await_room_locked(q, deadline);
    if (err == 0)
        push_locked(q, item);
    pthread_mutex_unlock(&q->lock);
    return err;
}

static int take_before(bq_t *q, void **out, const struct timespec *deadline)
{
    pthread_mutex_lock(&q->lock);
    int err = await_item_locked(q, deadline);
    if (err == 0)
        *out = pop_locked(q);
    pthread_mutex_unlock(&q->lock);
    return err;
}

int bq_put(bq_t *q, void *item)
{
    if (q == NULL)
        return EINVAL;
    return put_before(q, item, NULL);
}

int bq_offer(bq_t *q, void *item, long timeout_ms)
{
    struct timespec deadline;
    if (q == NULL || deadline_in(timeout_ms, &deadline) != 0)
        return EINVAL;
    return put_before(q, item, &deadline);
}

int bq_take(bq_t *q, void **out)
{
    if (q == NULL || out == NULL)
        return EINVAL;
    return take_before(q, out, NULL);
}

int bq_poll(bq_t *q, void **out, long timeout_ms)
{
    struct timespec deadline;
    if (q == NULL || out == NULL || deadline_in(timeout_ms, &deadline) != 0)
        return EINVAL;
    return take_before(q, out, &deadline);
}

/* ---- try_put and what the policies count ------------------------------------------- */

enum counter { REJECTED, DISCARDED, RAN_BY_CALLER };

static void count(bq_t *q, enum counter which)
{
    pthread_mutex_lock(&q->lock);
    switch (which) {
    case REJECTED:
        q->stats.rejected++;
        break;
    case DISCARDED:
        q->stats.discarded++;
        break;
    case RAN_BY_CALLER:
        q->stats.run_by_caller++;
        break;
    }
    pthread_mutex_unlock(&q->lock);
}

int bq_try_put(bq_t *q, void *item, const bq_policy_t *policy)
{
    if (q == NULL || policy == NULL || policy->reject == NULL)
        return EINVAL;
    int err;
    pthread_mutex_lock(&q->lock);
    bool closed = q->closed;
    bool full = q->count == q->capacity;
    if (!closed && !full)
        push_locked(q, item);
    pthread_mutex_unlock(&q->lock);
    if (closed)
        err = ECANCELED;
    else if (full)
        err = policy->reject(q, item, policy); /* lock released: it may wait or call back in */
    else
        err = 0;
    if (err != 0)
        count(q, REJECTED);
    return err;
}

size_t bq_size(bq_t *q)
{
    if (q == NULL)
        return 0;
    pthread_mutex_lock(&q->lock);
    size_t n = q->count;
    pthread_mutex_unlock(&q->lock);
    return n;
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
    close_locked(q);
    pthread_mutex_unlock(&q->lock);
    return 0;
}

/* ---- the built-in policies (no lock held when they are called) ----------------------- */

static int block_until_room(bq_t *q, void *item, const bq_policy_t *policy)
{
    (void)policy;
    return bq_put(q, item);
}

static int wait_a_while(bq_t *q, void *item, const bq_policy_t *policy)
{
    return bq_offer(q, item, policy->timeout_ms);
}

static int drop_new(bq_t *q, void *item, const bq_policy_t *policy)
{
    count(q, DISCARDED);
    if (policy->item_fn)
        policy->item_fn(item);
    return 0;
}

static int drop_oldest(bq_t *q, void *item, const bq_policy_t *policy)
{
    void *evicted = NULL;
    bool full;
    pthread_mutex_lock(&q->lock);
    if (q->closed) {
        pthread_mutex_unlock(&q->lock);
        return ECANCELED;
    }
    full = q->count == q->capacity; /* only a queue still full loses its oldest */
    if (full) {
        evicted = drop_oldest_locked(q);
        q->stats.discarded++;
    }
    push_locked(q, item);
    pthread_mutex_unlock(&q->lock);
    if (full && policy->item_fn)
        policy->item_fn(evicted);
    return 0;
}

static int refuse(bq_t *q, void *item, const bq_policy_t *policy)
{
    (void)q;
    (void)item;
    (void)policy;
    return EAGAIN;
}

static int run_here(bq_t *q, void *item, const bq_policy_t *policy)
{
    if (policy->item_fn == NULL)
        return EINVAL;
    policy->item_fn(item);
    count(q, RAN_BY_CALLER);
    return 0;
}

bq_policy_t bq_policy_block(void)
{
    return (bq_policy_t){ .reject = block_until_room };
}

bq_policy_t bq_policy_timeout(long timeout_ms)
{
    return (bq_policy_t){ .reject = wait_a_while, .timeout_ms = timeout_ms };
}

bq_policy_t bq_policy_discard(bq_item_fn on_discard)
{
    return (bq_policy_t){ .reject = drop_new, .item_fn = on_discard };
}

bq_policy_t bq_policy_discard_oldest(bq_item_fn on_discard)
{
    return (bq_policy_t){ .reject = drop_oldest, .item_fn = on_discard };
}

bq_policy_t bq_policy_abort(void)
{
    return (bq_policy_t){ .reject = refuse };
}

bq_policy_t bq_policy_caller_runs(bq_item_fn run)
{
    return (bq_policy_t){ .reject = run_here, .item_fn = run };
}
