/**
 * @file bq.c
 * @brief Chapter 02, another design: items on a linked list of nodes from a
 *        pool allocated at create, and a destroy that never waits - the last
 *        sleeper to leave frees the queue.
 *
 * DESIGN.
 * - Storage. The queue is a singly linked list, `head` (oldest) to `tail`.
 *   No put may fail for lack of memory (bq.h gives put no ENOMEM), so
 *   bq_create() allocates all `capacity` nodes in one block and keeps the
 *   unused ones on `spare`. "Full" is "no spare node".
 * - Waiting. Producers sleep on `not_full`, consumers on `not_empty`, each
 *   side counting its sleepers; a put signals one consumer, a take one
 *   producer, and only when one sleeps. Close broadcasts both.
 * - Destroy. bq_destroy() closes and wakes everyone as close does. If
 *   nobody sleeps in the queue, it frees it at once. Otherwise it marks the
 *   queue `doomed` and returns: each sleeper leaves (puts with ECANCELED,
 *   takes with what is left, then ECANCELED), and the one that finds itself
 *   the last to leave a doomed queue frees it, after releasing the lock and
 *   after computing everything it returns. So the memory goes only after the
 *   last sleeper has left (bq.h), and the destroying thread never blocks.
 *
 * Timed waits keep one absolute CLOCK_MONOTONIC deadline across wake-ups
 * and re-check the queue after timing out. Reject policies run after
 * bq_try_put() has released the lock.
 */
#define _POSIX_C_SOURCE 200809L
#include "bq.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "kit_time.h"

struct node {
    void *item;
    struct node *next;
};

struct bq {
    /* Immutable after create: */
    size_t capacity;
    struct node *block;       /* all capacity nodes, freed with the queue */

    pthread_mutex_t lock;
    pthread_cond_t not_full;  /* producers: a node came back, or closed */
    pthread_cond_t not_empty; /* consumers: an item arrived, or closed */
    /* Guarded by lock: */
    struct node *head, *tail; /* queued items, oldest first; head NULL when empty */
    struct node *spare;       /* unused nodes; NULL when full */
    size_t count;
    size_t putters_asleep, takers_asleep;
    bool closed;
    bool doomed;              /* destroyed while sleepers were inside: the last one frees */
    bq_stats_t stats;
};

static void free_queue(bq_t *q)
{
    pthread_cond_destroy(&q->not_empty);
    pthread_cond_destroy(&q->not_full);
    pthread_mutex_destroy(&q->lock);
    free(q->block);
    free(q);
}

int bq_create(bq_t **out, size_t capacity)
{
    if (out == NULL)
        return EINVAL;
    *out = NULL;
    if (capacity == 0 || capacity > SIZE_MAX / sizeof(struct node))
        return EINVAL;
    int err = ENOMEM;
    bq_t *q = calloc(1, sizeof *q);
    if (q == NULL)
        return ENOMEM;
    q->capacity = capacity;
    if ((q->block = malloc(capacity * sizeof *q->block)) == NULL)
        goto free_q;
    for (size_t i = 0; i < capacity; i++)
        q->block[i].next = i + 1 < capacity ? &q->block[i + 1] : NULL;
    q->spare = q->block;
    if ((err = pthread_mutex_init(&q->lock, NULL)) != 0)
        goto free_block;
    if ((err = kit_cond_init(&q->not_full)) != 0) /* CLOCK_MONOTONIC, like the deadlines */
        goto destroy_lock;
    if ((err = kit_cond_init(&q->not_empty)) != 0)
        goto destroy_not_full;
    *out = q;
    return 0;

destroy_not_full:
    pthread_cond_destroy(&q->not_full);
destroy_lock:
    pthread_mutex_destroy(&q->lock);
free_block:
    free(q->block);
free_q:
    free(q);
    return err;
}

/* ---- the list (called with lock held) -------------------------------------------- */

static void link_item_locked(bq_t *q, void *item)
{
    struct node *n = q->spare;
    q->spare = n->next;
    n->item = item;
    n->next = NULL;
    if (q->tail != NULL)
        q->tail->next = n;
    else
        q->head = n;
    q->tail = n;
    q->count++;
    q->stats.enqueued++;
    if (q->takers_asleep > 0)
        pthread_cond_signal(&q->not_empty); /* one item: one consumer can proceed */
}

static void *unlink_oldest_locked(bq_t *q)
{
    struct node *n = q->head;
    q->head = n->next;
    if (q->head == NULL)
        q->tail = NULL;
    n->next = q->spare;
    q->spare = n;
    q->count--;
    return n->item;
}

static void *take_oldest_locked(bq_t *q)
{
    void *item = unlink_oldest_locked(q);
    q->stats.taken++;
    if (q->putters_asleep > 0)
        pthread_cond_signal(&q->not_full); /* one node back: one producer can proceed */
    return item;
}

/* ---- waiting ------------------------------------------------------------------------ */

static int wait_on(pthread_cond_t *cond, pthread_mutex_t *lock, const struct timespec *deadline)
{
    if (deadline == NULL) {
        pthread_cond_wait(cond, lock);
        return 0;
    }
    return pthread_cond_timedwait(cond, lock, deadline);
}

/* Called with lock held by a thread that left a wait loop: true if it is
 * the last to leave a destroyed queue, and so must free it once unlocked. */
static bool last_out_locked(const bq_t *q)
{
    return q->doomed && q->putters_asleep + q->takers_asleep == 0;
}

/* Waits for a spare node. 0, ECANCELED or ETIMEDOUT; *free_after says the
 * caller must free the queue after unlocking. */
static int wait_for_node_locked(bq_t *q, const struct timespec *deadline, bool *free_after)
{
    int err = 0;
    q->putters_asleep++;
    /* while, not if: spurious wake-ups, or another producer takes the node first */
    while (q->spare == NULL && !q->closed && err != ETIMEDOUT)
        err = wait_on(&q->not_full, &q->lock, deadline);
    q->putters_asleep--;
    *free_after = last_out_locked(q);
    if (q->closed)
        return ECANCELED;
    return q->spare != NULL ? 0 : ETIMEDOUT;
}

static int wait_for_item_locked(bq_t *q, const struct timespec *deadline, bool *free_after)
{
    int err = 0;
    q->takers_asleep++;
    while (q->head == NULL && !q->closed && err != ETIMEDOUT)
        err = wait_on(&q->not_empty, &q->lock, deadline);
    q->takers_asleep--;
    *free_after = last_out_locked(q);
    if (q->head != NULL)
        return 0;
    return q->closed ? ECANCELED : ETIMEDOUT;
}

static int put_until(bq_t *q, void *item, const struct timespec *deadline)
{
    bool free_after;
    pthread_mutex_lock(&q->lock);
    int err = wait_for_node_locked(q, deadline, &free_after);
    if (err == 0)
        link_item_locked(q, item);
    pthread_mutex_unlock(&q->lock);
    if (free_after)
        free_queue(q); /* the last one out: bq_destroy left it to us */
    return err;
}

static int take_until(bq_t *q, void **out, const struct timespec *deadline)
{
    bool free_after;
    pthread_mutex_lock(&q->lock);
    int err = wait_for_item_locked(q, deadline, &free_after);
    if (err == 0)
        *out = take_oldest_locked(q);
    pthread_mutex_unlock(&q->lock);
    if (free_after)
        free_queue(q);
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

/* ---- try_put and the counters ----------------------------------------------------------- */

static void add_rejected(bq_t *q)
{
    pthread_mutex_lock(&q->lock);
    q->stats.rejected++;
    pthread_mutex_unlock(&q->lock);
}

int bq_try_put(bq_t *q, void *item, const bq_policy_t *policy)
{
    if (q == NULL || policy == NULL || policy->reject == NULL)
        return EINVAL;
    int err = 0;
    bool full = false;
    pthread_mutex_lock(&q->lock);
    if (q->closed)
        err = ECANCELED;
    else if (q->spare == NULL)
        full = true;
    else
        link_item_locked(q, item);
    pthread_mutex_unlock(&q->lock);
    if (full)
        err = policy->reject(q, item, policy); /* unlocked: it may block or call back in */
    if (err != 0)
        add_rejected(q);
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
    return q != NULL ? q->capacity : 0;
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
    pthread_cond_broadcast(&q->not_full); /* every sleeper must see it: broadcast */
    pthread_cond_broadcast(&q->not_empty);
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
    bool nobody_inside = q->putters_asleep + q->takers_asleep == 0;
    if (!nobody_inside)
        q->doomed = true; /* the last sleeper to leave frees it */
    pthread_mutex_unlock(&q->lock);
    if (nobody_inside)
        free_queue(q);
}

/* ---- the built-in policies (called without the lock) ------------------------------------- */

static int policy_block(bq_t *q, void *item, const bq_policy_t *policy)
{
    (void)policy;
    return bq_put(q, item);
}

static int policy_timeout(bq_t *q, void *item, const bq_policy_t *policy)
{
    return bq_offer(q, item, policy->timeout_ms);
}

static int policy_discard(bq_t *q, void *item, const bq_policy_t *policy)
{
    pthread_mutex_lock(&q->lock);
    q->stats.discarded++;
    pthread_mutex_unlock(&q->lock);
    if (policy->item_fn != NULL)
        policy->item_fn(item);
    return 0;
}

static int policy_discard_oldest(bq_t *q, void *item, const bq_policy_t *policy)
{
    void *evicted = NULL;
    bool full = false;
    pthread_mutex_lock(&q->lock);
    if (q->closed) {
        pthread_mutex_unlock(&q->lock);
        return ECANCELED;
    }
    if (q->spare == NULL) { /* still full: the oldest makes room */
        evicted = unlink_oldest_locked(q);
        q->stats.discarded++;
        full = true;
    }
    link_item_locked(q, item);
    pthread_mutex_unlock(&q->lock);
    if (full && policy->item_fn != NULL)
        policy->item_fn(evicted);
    return 0;
}

static int policy_abort(bq_t *q, void *item, const bq_policy_t *policy)
{
    (void)q;
    (void)item;
    (void)policy;
    return EAGAIN;
}

static int policy_caller_runs(bq_t *q, void *item, const bq_policy_t *policy)
{
    if (policy->item_fn == NULL)
        return EINVAL;
    policy->item_fn(item);
    pthread_mutex_lock(&q->lock);
    q->stats.run_by_caller++;
    pthread_mutex_unlock(&q->lock);
    return 0;
}

bq_policy_t bq_policy_block(void)
{
    return (bq_policy_t){ .reject = policy_block };
}

bq_policy_t bq_policy_timeout(long timeout_ms)
{
    return (bq_policy_t){ .reject = policy_timeout, .timeout_ms = timeout_ms };
}

bq_policy_t bq_policy_discard(bq_item_fn on_discard)
{
    return (bq_policy_t){ .reject = policy_discard, .item_fn = on_discard };
}

bq_policy_t bq_policy_discard_oldest(bq_item_fn on_discard)
{
    return (bq_policy_t){ .reject = policy_discard_oldest, .item_fn = on_discard };
}

bq_policy_t bq_policy_abort(void)
{
    return (bq_policy_t){ .reject = policy_abort };
}

bq_policy_t bq_policy_caller_runs(bq_item_fn run)
{
    return (bq_policy_t){ .reject = policy_caller_runs, .item_fn = run };
}
