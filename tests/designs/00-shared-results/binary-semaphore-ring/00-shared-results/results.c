/**
 * @file results.c
 * @brief Chapter 00, another design: a ring of records behind a binary
 *        semaphore, with an atomic copy of the count for results_count().
 *
 * DESIGN. The records live in a circular buffer: `ring[(head + i) % capacity]`
 * for i in 0 .. count is the list, oldest first. A drain then only moves
 * `head` forward instead of shifting the rest of the array down; a growth
 * copies the records into a bigger ring, oldest first, starting at 0.
 *
 * The lock is a POSIX semaphore initialised to 1 (Dijkstra's binary
 * semaphore): sem_wait() takes the one token, sem_post() gives it back, so
 * at most one thread is ever between the two. Every read-modify-write of
 * `ring`, `head`, `count` and `capacity` happens with the token held - the
 * same critical sections a mutex would guard.
 *
 * `published_count` repeats `count` in a C11 atomic, stored with the token
 * held, at the end of every change. results_count() reads it without taking
 * the token: the header only promises an answer that may be stale at once,
 * and an atomic load is never a torn or racy read.
 */
#define _POSIX_C_SOURCE 200809L
#include "results.h"

#include <errno.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

struct results {
    sem_t token;                   /* 1 = free, 0 = some thread is inside */
    /* Guarded by token: */
    long *ring;                    /* capacity slots; NULL while capacity is 0 */
    size_t capacity;
    size_t head;                   /* ring[head] is the oldest record */
    size_t count;                  /* records in the ring, 0 .. capacity */
    /* Written with token held, read by anyone: */
    atomic_size_t published_count; /* == count whenever token is free */
};

/* sem_wait() returns early only when a signal handler interrupts it: then
 * the token was not taken, so try again. */
static void take_token(results_t *list)
{
    while (sem_wait(&list->token) != 0 && errno == EINTR)
        ;
}

static void give_token(results_t *list)
{
    sem_post(&list->token);
}

/* Slot i of the list, counting from the oldest record. Called with the token. */
static size_t slot(const results_t *list, size_t i)
{
    return (list->head + i) % list->capacity;
}

int results_create(results_t **out, size_t capacity_hint)
{
    if (out == NULL)
        return EINVAL;
    *out = NULL;
    int err = ENOMEM;
    results_t *list = calloc(1, sizeof *list);
    if (list == NULL)
        return ENOMEM;
    if (capacity_hint > 0) {
        list->ring = calloc(capacity_hint, sizeof *list->ring);
        if (list->ring == NULL)
            goto free_list;
        list->capacity = capacity_hint;
    }
    atomic_init(&list->published_count, 0);
    if (sem_init(&list->token, 0, 1) != 0) { /* 0: shared by this process's threads only */
        err = errno;
        goto free_ring;
    }
    *out = list;
    return 0;

free_ring:
    free(list->ring);
free_list:
    free(list);
    return err;
}

/* Moves the records into a ring twice as big, oldest at 0. Called with the
 * token held; on failure nothing changes. */
static int grow_locked(results_t *list)
{
    size_t bigger = list->capacity > 0 ? list->capacity * 2 : 8;
    if (bigger < list->capacity || bigger > SIZE_MAX / sizeof(long))
        return ENOMEM;
    long *ring = malloc(bigger * sizeof *ring);
    if (ring == NULL)
        return ENOMEM;
    for (size_t i = 0; i < list->count; i++)
        ring[i] = list->ring[slot(list, i)];
    free(list->ring);
    list->ring = ring;
    list->capacity = bigger;
    list->head = 0;
    return 0;
}

int results_append(results_t *list, long record)
{
    if (list == NULL)
        return EINVAL;
    int err = 0;
    take_token(list);
    /* The whole "find the slot, fill it, count it" happens with the token:
     * two appends never pick the same slot. */
    if (list->count == list->capacity)
        err = grow_locked(list);
    if (err == 0) {
        list->ring[slot(list, list->count)] = record;
        list->count++;
        atomic_store(&list->published_count, list->count);
    }
    give_token(list);
    return err;
}

size_t results_count(results_t *list)
{
    if (list == NULL)
        return 0;
    return atomic_load(&list->published_count);
}

int results_drain(results_t *list, long *dest, size_t dest_length, size_t *taken)
{
    if (taken != NULL)
        *taken = 0;
    if (list == NULL || taken == NULL || (dest == NULL && dest_length > 0))
        return EINVAL;
    take_token(list);
    /* Copy out and forget in one critical section: an append landing in
     * between would be either copied and kept, or never copied and dropped. */
    size_t n = list->count < dest_length ? list->count : dest_length;
    for (size_t i = 0; i < n; i++)
        dest[i] = list->ring[slot(list, i)];
    if (n > 0) {
        list->head = slot(list, n);
        list->count -= n;
        atomic_store(&list->published_count, list->count);
    }
    give_token(list);
    *taken = n;
    return 0;
}

void results_destroy(results_t *list)
{
    if (list == NULL)
        return;
    sem_destroy(&list->token);
    free(list->ring);
    free(list);
}
