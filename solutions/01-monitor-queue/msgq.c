/**
 * @file msgq.c
 * @brief Chapter 01 solution: ring buffer + one mutex + one condvar + broadcast.
 *
 * DESIGN: the ring holds `count` messages starting at `head`; the next put
 * goes to `(head + count) % capacity`. One condition variable, `changed`,
 * is broadcast after *every* change (a put, a take, a close), and every
 * waiter re-checks its own condition in a `while` loop. That is the monitor
 * pattern of Java's synchronized + wait/notifyAll, and the price of having
 * one condvar for two conditions: each change wakes everyone, including the
 * threads that cannot use it.
 */
#define _POSIX_C_SOURCE 200809L
#include "msgq.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "kit_log.h"
#include "kit_trace.h"

struct msgq {
    /* Immutable after create: */
    size_t capacity;
    msg_t *ring;            /* capacity slots */

    pthread_mutex_t lock;
    pthread_cond_t changed; /* broadcast on every put, take and close */
    /* Guarded by lock: */
    size_t head;            /* ring[head] is the oldest message */
    size_t count;           /* messages in the ring, 0 .. capacity */
    size_t sleepers;        /* threads inside put/take's wait loop; destroy waits for 0 */
    bool closed;
};

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
    q->ring = calloc(capacity, sizeof *q->ring);
    if (q->ring == NULL)
        goto free_q;
    if ((err = pthread_mutex_init(&q->lock, NULL)) != 0)
        goto free_ring;
    if ((err = pthread_cond_init(&q->changed, NULL)) != 0)
        goto destroy_lock;
    *out = q;
    return 0;

    /* Undo in reverse order: each label undoes the step before the one that failed. */
destroy_lock:
    pthread_mutex_destroy(&q->lock);
free_ring:
    free(q->ring);
free_q:
    free(q);
    return err;
}

/* Called with lock held when a thread leaves put/take's wait loop. A
 * msgq_destroy() in progress waits for the last sleeper to leave. */
static void leave_wait_locked(msgq_t *q)
{
    q->sleepers--;
    if (q->closed && q->sleepers == 0)
        pthread_cond_broadcast(&q->changed);
}

int msgq_put(msgq_t *q, msg_t msg)
{
    if (q == NULL)
        return EINVAL;
    pthread_mutex_lock(&q->lock);
    /* while, not if: the wake-up may be spurious, may be meant for a
     * consumer, or another producer may fill the freed slot first. */
    q->sleepers++;
    while (q->count == q->capacity && !q->closed) {
        kit_log("msgq", "full, waiting to put message(%d)", msg.id);
        kit_trace_begin("msgq", "waiting: full");
        pthread_cond_wait(&q->changed, &q->lock);
        kit_trace_end("msgq");
    }
    leave_wait_locked(q);
    if (q->closed) {
        pthread_mutex_unlock(&q->lock);
        return ECANCELED;
    }
    q->ring[(q->head + q->count) % q->capacity] = msg;
    q->count++;
    kit_log("msgq", "put message(%d), %zu queued", msg.id, q->count);
    /* PAGE: broadcast. Everyone sleeps on `changed`: a signal could wake
     * another producer instead of the consumer this message is for. */
    pthread_cond_broadcast(&q->changed);
    pthread_mutex_unlock(&q->lock);
    return 0;
}

int msgq_take(msgq_t *q, msg_t *out)
{
    if (q == NULL || out == NULL)
        return EINVAL;
    pthread_mutex_lock(&q->lock);
    /* while, not if: the wake-up may be for a producer, or another
     * consumer may take the message before we get the lock back. */
    q->sleepers++;
    while (q->count == 0 && !q->closed) {
        kit_log("msgq", "empty, waiting");
        kit_trace_begin("msgq", "waiting: empty");
        pthread_cond_wait(&q->changed, &q->lock);
        kit_trace_end("msgq");
    }
    leave_wait_locked(q);
    if (q->count == 0) { /* closed and drained */
        pthread_mutex_unlock(&q->lock);
        return ECANCELED;
    }
    *out = q->ring[q->head];
    q->head = (q->head + 1) % q->capacity;
    q->count--;
    pthread_cond_broadcast(&q->changed); /* a slot is free: wake the producers */
    pthread_mutex_unlock(&q->lock);
    return 0;
}

int msgq_close(msgq_t *q)
{
    if (q == NULL)
        return EINVAL;
    pthread_mutex_lock(&q->lock);
    q->closed = true;
    /* Every waiter must see `closed`, so every waiter is woken. */
    pthread_cond_broadcast(&q->changed);
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
    /* PAGE: destroy-wakes-sleepers. A thread still asleep in put or take
     * would wake up inside freed memory: close, and wait until the last
     * sleeper has left (each leaves with ECANCELED, or with a message). */
    pthread_mutex_lock(&q->lock);
    q->closed = true;
    pthread_cond_broadcast(&q->changed);
    while (q->sleepers > 0) /* while: the broadcast wakes everyone, and wake-ups can be spurious */
        pthread_cond_wait(&q->changed, &q->lock);
    pthread_mutex_unlock(&q->lock);
    pthread_cond_destroy(&q->changed);
    pthread_mutex_destroy(&q->lock);
    free(q->ring);
    free(q);
}
