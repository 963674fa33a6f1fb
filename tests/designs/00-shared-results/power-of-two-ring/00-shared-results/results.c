/**
 * @file results.c
 * @brief Chapter 00, another design: a ring whose size is always a power of
 *        two, indexed with a mask, behind one mutex.
 *
 * DESIGN. `first` and `next` are free-running counters: the records are
 * slots[first & mask] .. slots[(next - 1) & mask], so the number of records
 * is next - first (unsigned arithmetic keeps that right when the counters
 * wrap around), a slot index is one AND instead of a division, and a drain
 * only moves `first`. For the mask to work the ring's size is a power of
 * two: the capacity hint is rounded up to one, never below MIN_SLOTS (the
 * way Java's ArrayDeque sizes itself) - the header asks for room for at
 * least `capacity_hint` records up front, and this gives at least that.
 * When the ring is full it doubles, copying the records oldest first.
 *
 * One mutex guards all of it: every read-modify-write (pick the slot, fill
 * it, bump `next`; copy records out, move `first`) is one critical section.
 */
#define _POSIX_C_SOURCE 200809L
#include "results.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

enum { MIN_SLOTS = 8 };

struct results {
    pthread_mutex_t lock;
    /* Guarded by lock: */
    long *slots;  /* size slots, size a power of two (or 0 before the first append) */
    size_t size;
    size_t first; /* counter of the oldest record */
    size_t next;  /* counter of the next record to append; next - first records */
};

/* The smallest power of two >= n and >= MIN_SLOTS; 0 if there is none. */
static size_t ring_size_for(size_t n)
{
    size_t size = MIN_SLOTS;
    while (size < n) {
        if (size > SIZE_MAX / 2)
            return 0;
        size *= 2;
    }
    return size;
}

static long *new_slots(size_t size)
{
    if (size == 0 || size > SIZE_MAX / sizeof(long))
        return NULL;
    return malloc(size * sizeof(long));
}

int results_create(results_t **out, size_t capacity_hint)
{
    if (out == NULL)
        return EINVAL;
    *out = NULL;
    results_t *list = calloc(1, sizeof *list);
    if (list == NULL)
        return ENOMEM;
    int err = ENOMEM;
    if (capacity_hint > 0) {
        list->size = ring_size_for(capacity_hint);
        if ((list->slots = new_slots(list->size)) == NULL)
            goto free_list;
    }
    if ((err = pthread_mutex_init(&list->lock, NULL)) != 0)
        goto free_slots;
    *out = list;
    return 0;

free_slots:
    free(list->slots);
free_list:
    free(list);
    return err;
}

/* Called with lock held. */
static size_t count_locked(const results_t *list)
{
    return list->next - list->first;
}

/* Doubles the ring, records oldest first from slot 0. Called with lock
 * held; on failure nothing changes. */
static int grow_locked(results_t *list)
{
    size_t size = list->size == 0 ? MIN_SLOTS : list->size * 2;
    if (size < list->size) /* doubling overflowed */
        return ENOMEM;
    long *slots = new_slots(size);
    if (slots == NULL)
        return ENOMEM;
    size_t count = count_locked(list);
    for (size_t i = 0; i < count; i++)
        slots[i] = list->slots[(list->first + i) & (list->size - 1)];
    free(list->slots);
    list->slots = slots;
    list->size = size;
    list->first = 0;
    list->next = count;
    return 0;
}

int results_append(results_t *list, long record)
{
    if (list == NULL)
        return EINVAL;
    int err = 0;
    pthread_mutex_lock(&list->lock);
    if (count_locked(list) == list->size)
        err = grow_locked(list);
    if (err == 0) {
        list->slots[list->next & (list->size - 1)] = record;
        list->next++;
    }
    pthread_mutex_unlock(&list->lock);
    return err;
}

size_t results_count(results_t *list)
{
    if (list == NULL)
        return 0;
    pthread_mutex_lock(&list->lock);
    size_t count = count_locked(list);
    pthread_mutex_unlock(&list->lock);
    return count;
}

int results_drain(results_t *list, long *dest, size_t dest_length, size_t *taken)
{
    if (taken != NULL)
        *taken = 0;
    if (list == NULL || taken == NULL || (dest == NULL && dest_length > 0))
        return EINVAL;
    pthread_mutex_lock(&list->lock);
    /* Copy out and move `first` in one critical section: no append can slip
     * in between and be skipped, and no other drain can copy the same records. */
    size_t count = count_locked(list);
    size_t n = count < dest_length ? count : dest_length;
    for (size_t i = 0; i < n; i++)
        dest[i] = list->slots[(list->first + i) & (list->size - 1)];
    list->first += n;
    pthread_mutex_unlock(&list->lock);
    *taken = n;
    return 0;
}

void results_destroy(results_t *list)
{
    if (list == NULL)
        return;
    pthread_mutex_destroy(&list->lock);
    free(list->slots);
    free(list);
}
