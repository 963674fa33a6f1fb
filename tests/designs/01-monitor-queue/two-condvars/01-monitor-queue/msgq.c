/**
 * @file msgq.c
 * @brief Chapter 01, another design: the ring with one condition variable
 *        per condition - producers sleep on `not_full`, consumers on
 *        `not_empty` - and a signal to the one side that can proceed.
 *
 * DESIGN. `ring[out]` is the oldest message and `ring[in]` the next free
 * slot; `count` tells a full ring (in == out, count == capacity) from an
 * empty one (in == out, count == 0).
 *
 * Because the two kinds of thread never sleep on the same condition
 * variable, a change can be announced with pthread_cond_signal(): a put
 * makes one message, so it wakes one consumer; a take frees one slot, so it
 * wakes one producer. Each side counts its sleepers, and nobody signals an
 * empty room. Close has to reach every sleeper of both sides, so it
 * broadcasts both. A third condition variable, `left`, is only for
 * msgq_destroy(), which waits there until the last sleeper has gone.
 *
 * All the fields below the lock are read and written with `lock` held.
 */
#define _POSIX_C_SOURCE 200809L
#include "msgq.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

struct msgq {
    /* Immutable after create: */
    size_t capacity;
    msg_t *ring;               /* capacity slots */

    pthread_mutex_t lock;
    pthread_cond_t not_full;   /* producers wait here for a free slot (or close) */
    pthread_cond_t not_empty;  /* consumers wait here for a message (or close) */
    pthread_cond_t left;       /* msgq_destroy waits here for the sleepers to go */
    /* Guarded by lock: */
    size_t in;                 /* the next put goes to ring[in] */
    size_t out;                /* the next take reads ring[out] */
    size_t count;              /* messages in the ring */
    size_t putters_waiting;    /* threads inside put's wait loop */
    size_t takers_waiting;     /* threads inside take's wait loop */
    bool closed;
};

/* The three condition variables; on failure none of them is left made. */
static int init_conds(msgq_t *q)
{
    int err = pthread_cond_init(&q->not_full, NULL);
    if (err != 0)
        return err;
    if ((err = pthread_cond_init(&q->not_empty, NULL)) != 0)
        goto destroy_not_full;
    if ((err = pthread_cond_init(&q->left, NULL)) != 0)
        goto destroy_not_empty;
    return 0;

destroy_not_empty:
    pthread_cond_destroy(&q->not_empty);
destroy_not_full:
    pthread_cond_destroy(&q->not_full);
    return err;
}

int msgq_create(msgq_t **out, size_t capacity)
{
    if (out == NULL)
        return EINVAL;
    *out = NULL;
    if (capacity == 0 || capacity > SIZE_MAX / sizeof(msg_t))
        return EINVAL;
    int err = ENOMEM;
    msgq_t *q = calloc(1, sizeof *q);
    if (q == NULL)
        return ENOMEM;
    q->capacity = capacity;
    q->ring = malloc(capacity * sizeof *q->ring);
    if (q->ring == NULL)
        goto free_q;
    if ((err = pthread_mutex_init(&q->lock, NULL)) != 0)
        goto free_ring;
    if ((err = init_conds(q)) != 0)
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

/* Called with lock held by a thread leaving a wait loop: if destroy is
 * waiting for the sleepers to go, the last one tells it. */
static void leave_wait_locked(msgq_t *q)
{
    if (q->closed && q->putters_waiting + q->takers_waiting == 0)
        pthread_cond_signal(&q->left); /* only destroy ever waits on `left` */
}

int msgq_put(msgq_t *q, msg_t msg)
{
    if (q == NULL)
        return EINVAL;
    pthread_mutex_lock(&q->lock);
    q->putters_waiting++;
    /* while, not if: a wake-up can be spurious, and another producer may
     * take the freed slot between the signal and our turn. */
    while (q->count == q->capacity && !q->closed)
        pthread_cond_wait(&q->not_full, &q->lock);
    q->putters_waiting--;
    if (q->closed) {
        leave_wait_locked(q);
        pthread_mutex_unlock(&q->lock);
        return ECANCELED;
    }
    q->ring[q->in] = msg;
    q->in = (q->in + 1) % q->capacity;
    q->count++;
    if (q->takers_waiting > 0) /* one message serves one consumer: signal, not broadcast */
        pthread_cond_signal(&q->not_empty);
    pthread_mutex_unlock(&q->lock);
    return 0;
}

int msgq_take(msgq_t *q, msg_t *out)
{
    if (q == NULL || out == NULL)
        return EINVAL;
    pthread_mutex_lock(&q->lock);
    q->takers_waiting++;
    /* while, not if: spurious wake-ups, and another consumer may take the
     * message we were woken for before we get the lock back. */
    while (q->count == 0 && !q->closed)
        pthread_cond_wait(&q->not_empty, &q->lock);
    q->takers_waiting--;
    if (q->closed)
        leave_wait_locked(q);
    if (q->count == 0) { /* closed and drained */
        pthread_mutex_unlock(&q->lock);
        return ECANCELED;
    }
    *out = q->ring[q->out];
    q->out = (q->out + 1) % q->capacity;
    q->count--;
    if (q->putters_waiting > 0) /* one slot serves one producer */
        pthread_cond_signal(&q->not_full);
    pthread_mutex_unlock(&q->lock);
    return 0;
}

/* Called with lock held: every sleeper of both sides must see `closed`. */
static void close_locked(msgq_t *q)
{
    q->closed = true;
    pthread_cond_broadcast(&q->not_full);
    pthread_cond_broadcast(&q->not_empty);
}

int msgq_close(msgq_t *q)
{
    if (q == NULL)
        return EINVAL;
    pthread_mutex_lock(&q->lock);
    close_locked(q);
    pthread_mutex_unlock(&q->lock);
    return 0;
}

size_t msgq_size(msgq_t *q)
{
    if (q == NULL)
        return 0;
    pthread_mutex_lock(&q->lock);
    size_t count = q->count;
    pthread_mutex_unlock(&q->lock);
    return count;
}

void msgq_destroy(msgq_t *q)
{
    if (q == NULL)
        return;
    /* A sleeper woken after the free would wake in freed memory: close,
     * then wait until every sleeper has left its wait loop. */
    pthread_mutex_lock(&q->lock);
    close_locked(q);
    while (q->putters_waiting + q->takers_waiting > 0) /* while: wake-ups can be spurious */
        pthread_cond_wait(&q->left, &q->lock);
    pthread_mutex_unlock(&q->lock);
    pthread_cond_destroy(&q->left);
    pthread_cond_destroy(&q->not_empty);
    pthread_cond_destroy(&q->not_full);
    pthread_mutex_destroy(&q->lock);
    free(q->ring);
    free(q);
}
