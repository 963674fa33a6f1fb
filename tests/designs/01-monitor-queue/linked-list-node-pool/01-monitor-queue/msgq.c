/**
 * @file msgq.c
 * @brief Chapter 01, another design: the monitor over a linked list of
 *        nodes taken from a pool allocated at create.
 *
 * DESIGN. The queue is a singly linked list, `head` (oldest) to `tail`
 * (newest). msgq_put() cannot report ENOMEM (msgq.h), so it must never
 * allocate: msgq_create() allocates all `capacity` nodes at once, in one
 * block, and threads them onto a free list. A put moves a node from the
 * free list to the tail, a take moves the head node back to the free list.
 * "Full" is then simply "the free list is empty" - no index arithmetic.
 * One block also keeps create's failure cases simple, and a capacity whose
 * nodes do not fit in memory fails at once with ENOMEM.
 *
 * The monitor is the chapter's: one mutex, one condition variable
 * `changed`, broadcast after every change, each waiter re-checking its own
 * condition in a `while`.
 *
 * `count` is kept in a C11 atomic: it only changes with the lock held, but
 * msgq_size() may load it without the lock - an atomic load is never a data
 * race, and the header only asks for a count the queue really had.
 */
#define _POSIX_C_SOURCE 200809L
#include "msgq.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

struct node {
    msg_t msg;
    struct node *next;
};

struct msgq {
    /* Immutable after create: */
    struct node *nodes;     /* the one block of `capacity` nodes, freed by destroy */

    pthread_mutex_t lock;
    pthread_cond_t changed; /* broadcast on every put, take and close */
    /* Guarded by lock: */
    struct node *head;      /* the oldest message; NULL when empty */
    struct node *tail;      /* the newest message */
    struct node *free_list; /* unused nodes; NULL when full */
    size_t sleepers;        /* threads inside a wait loop; destroy waits for 0 */
    bool closed;
    /* Changed with lock held, read by msgq_size() without it: */
    atomic_size_t count;
};

int msgq_create(msgq_t **out, size_t capacity)
{
    if (out == NULL)
        return EINVAL;
    *out = NULL;
    if (capacity == 0 || capacity > SIZE_MAX / sizeof(msg_t))
        return EINVAL;
    /* The header's limit is on messages; a node is bigger than a message,
     * so a capacity under that limit may still not fit: that is ENOMEM. */
    if (capacity > SIZE_MAX / sizeof(struct node))
        return ENOMEM;
    int err = ENOMEM;
    msgq_t *q = calloc(1, sizeof *q);
    if (q == NULL)
        return ENOMEM;
    q->nodes = malloc(capacity * sizeof *q->nodes);
    if (q->nodes == NULL)
        goto free_q;
    for (size_t i = 0; i < capacity; i++) /* thread every node onto the free list */
        q->nodes[i].next = i + 1 < capacity ? &q->nodes[i + 1] : NULL;
    q->free_list = q->nodes;
    atomic_init(&q->count, 0);
    if ((err = pthread_mutex_init(&q->lock, NULL)) != 0)
        goto free_nodes;
    if ((err = pthread_cond_init(&q->changed, NULL)) != 0)
        goto destroy_lock;
    *out = q;
    return 0;

destroy_lock:
    pthread_mutex_destroy(&q->lock);
free_nodes:
    free(q->nodes);
free_q:
    free(q);
    return err;
}

/* Called with lock held and a free node: append msg at the tail. */
static void push_locked(msgq_t *q, msg_t msg)
{
    struct node *n = q->free_list;
    q->free_list = n->next;
    n->msg = msg;
    n->next = NULL;
    if (q->tail != NULL)
        q->tail->next = n;
    else
        q->head = n;
    q->tail = n;
    atomic_fetch_add(&q->count, 1);
}

/* Called with lock held and a message queued: remove the head. */
static msg_t pop_locked(msgq_t *q)
{
    struct node *n = q->head;
    q->head = n->next;
    if (q->head == NULL)
        q->tail = NULL;
    n->next = q->free_list;
    q->free_list = n;
    atomic_fetch_sub(&q->count, 1);
    return n->msg;
}

/* Called with lock held, after a wait loop: a destroy in progress waits
 * for the last sleeper to leave. */
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
    q->sleepers++;
    /* while, not if: the broadcast may have been for a consumer, or another
     * producer may have taken the free node first. */
    while (q->free_list == NULL && !q->closed)
        pthread_cond_wait(&q->changed, &q->lock);
    leave_wait_locked(q);
    int err = ECANCELED;
    if (!q->closed) {
        push_locked(q, msg);
        pthread_cond_broadcast(&q->changed); /* producers and consumers share `changed`: wake all */
        err = 0;
    }
    pthread_mutex_unlock(&q->lock);
    return err;
}

int msgq_take(msgq_t *q, msg_t *out)
{
    if (q == NULL || out == NULL)
        return EINVAL;
    pthread_mutex_lock(&q->lock);
    q->sleepers++;
    /* while, not if: the broadcast may have been for a producer, or another
     * consumer may have taken the message first. */
    while (q->head == NULL && !q->closed)
        pthread_cond_wait(&q->changed, &q->lock);
    leave_wait_locked(q);
    int err = ECANCELED; /* closed and drained */
    if (q->head != NULL) {
        *out = pop_locked(q);
        pthread_cond_broadcast(&q->changed);
        err = 0;
    }
    pthread_mutex_unlock(&q->lock);
    return err;
}

int msgq_close(msgq_t *q)
{
    if (q == NULL)
        return EINVAL;
    pthread_mutex_lock(&q->lock);
    q->closed = true;
    pthread_cond_broadcast(&q->changed); /* every sleeper must see it */
    pthread_mutex_unlock(&q->lock);
    return 0;
}

size_t msgq_size(msgq_t *q)
{
    if (q == NULL)
        return 0;
    return atomic_load(&q->count);
}

void msgq_destroy(msgq_t *q)
{
    if (q == NULL)
        return;
    pthread_mutex_lock(&q->lock);
    q->closed = true;
    pthread_cond_broadcast(&q->changed);
    /* Free nothing while a thread may still wake up in here. */
    while (q->sleepers > 0)
        pthread_cond_wait(&q->changed, &q->lock);
    pthread_mutex_unlock(&q->lock);
    pthread_cond_destroy(&q->changed);
    pthread_mutex_destroy(&q->lock);
    free(q->nodes);
    free(q);
}
