/**
 * @file msgq.c
 * @brief Chapter 01, another design: the monitor on an error-checking
 *        mutex, with its waits written once, and debugging output left in.
 *
 * DESIGN. The ring and the monitor are the chapter's: `ring[first]` is the
 * oldest of `count` messages, one mutex, one condition variable `changed`
 * broadcast after every change. What differs:
 *
 * - The mutex is PTHREAD_MUTEX_ERRORCHECK. Locking it twice on one thread,
 *   or unlocking it from a thread that does not own it, returns EDEADLK or
 *   EPERM instead of hanging or corrupting it; lock() and unlock() below
 *   report such a bug on stderr, naming the call, so that it is seen the
 *   first time it happens.
 * - put and take share one wait, wait_locked(), which sleeps until a
 *   predicate (has_room, has_message) holds or the queue is closed. The
 *   `while` lives in one place.
 * - Life-cycle events (create, close, destroy) are printed on stdout while
 *   `show_events` is true, and per-message events on stderr while
 *   `show_messages` is true: the student's debugging output, kept in and
 *   switched with two static flags.
 */
#define _POSIX_C_SOURCE 200809L
#include "msgq.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const bool show_events = true;    /* create, close, destroy: on stdout */
static const bool show_messages = false; /* every put and take: on stderr (very chatty) */

struct msgq {
    /* Immutable after create: */
    size_t capacity;
    msg_t *ring;

    pthread_mutex_t lock;   /* error-checking: a misuse is reported, not undefined */
    pthread_cond_t changed; /* broadcast on every change */
    /* Guarded by lock: */
    size_t first;           /* ring[first] is the oldest message */
    size_t count;
    size_t inside;          /* threads in wait_locked(); destroy waits for 0 */
    bool closed;
};

static void report_misuse(const char *call, int err)
{
    fprintf(stderr, "msgq: %s failed: %s (a lock used wrongly)\n", call, strerror(err));
}

static void lock(msgq_t *q)
{
    int err = pthread_mutex_lock(&q->lock);
    if (err != 0)
        report_misuse("pthread_mutex_lock", err);
}

static void unlock(msgq_t *q)
{
    int err = pthread_mutex_unlock(&q->lock);
    if (err != 0)
        report_misuse("pthread_mutex_unlock", err);
}

static int init_errorcheck_mutex(pthread_mutex_t *mutex)
{
    pthread_mutexattr_t attr;
    int err = pthread_mutexattr_init(&attr);
    if (err != 0)
        return err;
    err = pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK);
    if (err == 0)
        err = pthread_mutex_init(mutex, &attr);
    pthread_mutexattr_destroy(&attr);
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
    if ((q->ring = calloc(capacity, sizeof *q->ring)) == NULL)
        goto free_q;
    if ((err = init_errorcheck_mutex(&q->lock)) != 0)
        goto free_ring;
    if ((err = pthread_cond_init(&q->changed, NULL)) != 0)
        goto destroy_lock;
    if (show_events)
        printf("msgq %p: created, capacity %zu\n", (void *)q, capacity);
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

/* The predicates put and take wait for. Called with lock held. */
static bool has_room(const msgq_t *q)
{
    return q->count < q->capacity;
}

static bool has_message(const msgq_t *q)
{
    return q->count > 0;
}

/* Called with lock held: sleeps until ready(q) or the queue is closed. */
static void wait_locked(msgq_t *q, bool (*ready)(const msgq_t *))
{
    q->inside++;
    /* while, not if: `changed` is broadcast for producers and consumers
     * alike, wake-ups can be spurious, and another thread may use up the
     * change before we run. */
    while (!ready(q) && !q->closed)
        pthread_cond_wait(&q->changed, &q->lock);
    q->inside--;
    if (q->closed && q->inside == 0)
        pthread_cond_broadcast(&q->changed); /* a destroy may wait for the last one */
}

int msgq_put(msgq_t *q, msg_t msg)
{
    if (q == NULL)
        return EINVAL;
    lock(q);
    wait_locked(q, has_room);
    if (q->closed) {
        unlock(q);
        return ECANCELED;
    }
    q->ring[(q->first + q->count) % q->capacity] = msg;
    q->count++;
    if (show_messages)
        fprintf(stderr, "msgq %p: put %d, %zu queued\n", (void *)q, msg.id, q->count);
    pthread_cond_broadcast(&q->changed); /* one condvar for both sides: wake them all */
    unlock(q);
    return 0;
}

int msgq_take(msgq_t *q, msg_t *out)
{
    if (q == NULL || out == NULL)
        return EINVAL;
    lock(q);
    wait_locked(q, has_message);
    if (!has_message(q)) { /* closed, and nothing left to deliver */
        unlock(q);
        return ECANCELED;
    }
    *out = q->ring[q->first];
    q->first = (q->first + 1) % q->capacity;
    q->count--;
    if (show_messages)
        fprintf(stderr, "msgq %p: took %d, %zu queued\n", (void *)q, out->id, q->count);
    pthread_cond_broadcast(&q->changed);
    unlock(q);
    return 0;
}

/* Called with lock held. */
static void close_locked(msgq_t *q)
{
    if (show_events && !q->closed)
        printf("msgq %p: closed with %zu queued\n", (void *)q, q->count);
    q->closed = true;
    pthread_cond_broadcast(&q->changed);
}

int msgq_close(msgq_t *q)
{
    if (q == NULL)
        return EINVAL;
    lock(q);
    close_locked(q);
    unlock(q);
    return 0;
}

size_t msgq_size(msgq_t *q)
{
    if (q == NULL)
        return 0;
    lock(q);
    size_t count = q->count;
    unlock(q);
    return count;
}

void msgq_destroy(msgq_t *q)
{
    if (q == NULL)
        return;
    lock(q);
    close_locked(q);
    /* while: woken by any broadcast, it waits again until nobody is left inside. */
    while (q->inside > 0)
        pthread_cond_wait(&q->changed, &q->lock);
    unlock(q);
    if (show_events)
        printf("msgq %p: destroyed\n", (void *)q);
    pthread_cond_destroy(&q->changed);
    pthread_mutex_destroy(&q->lock);
    free(q->ring);
    free(q);
}
