/**
 * @file results.c
 * @brief Chapter 00 solution: a growable array behind one mutex.
 *
 * DESIGN: `records[0 .. count)` are the records still in the list, oldest
 * first. Every function that touches `records`, `count` or `capacity` holds
 * `lock` for the whole read-modify-write: "read count, write the slot,
 * bump count" is three steps, and a second thread slipping between the
 * first and the last is exactly how the unlocked list loses a record
 * (two appends write the same slot) or serves one twice (a drain resets
 * count after an append moved it).
 */
#define _POSIX_C_SOURCE 200809L
#include "results.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

struct results {
    pthread_mutex_t lock;
    /* Guarded by lock: */
    long *records;   /* records[0 .. count) hold the list, oldest first */
    size_t count;
    size_t capacity; /* records has room for this many */
};

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
        list->records = calloc(capacity_hint, sizeof *list->records);
        if (list->records == NULL)
            goto free_list;
        list->capacity = capacity_hint;
    }
    if ((err = pthread_mutex_init(&list->lock, NULL)) != 0)
        goto free_records;
    *out = list;
    return 0;

    /* Undo in reverse order: each label frees what was made before the failed step. */
free_records:
    free(list->records);
free_list:
    free(list);
    return err;
}

/* Doubles the array. Called with lock held; on failure nothing changes. */
static int grow_locked(results_t *list)
{
    size_t grown = list->capacity ? list->capacity * 2 : 16;
    if (grown < list->capacity || grown > SIZE_MAX / sizeof *list->records)
        return ENOMEM;
    long *bigger = realloc(list->records, grown * sizeof *bigger);
    if (bigger == NULL)
        return ENOMEM;
    list->records = bigger;
    list->capacity = grown;
    return 0;
}

int results_append(results_t *list, long record)
{
    if (list == NULL)
        return EINVAL;
    int err = 0;
    pthread_mutex_lock(&list->lock);
    if (list->count == list->capacity)
        err = grow_locked(list);
    if (err == 0)
        list->records[list->count++] = record; /* PAGE: slot-and-count */
    pthread_mutex_unlock(&list->lock);
    return err;
}

size_t results_count(results_t *list)
{
    if (list == NULL)
        return 0;
    pthread_mutex_lock(&list->lock);
    size_t count = list->count;
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
    /* PAGE: drain-atomic. Copying out and shifting the rest down happen in
     * one critical section, so no append can land between them. */
    size_t n = list->count < dest_length ? list->count : dest_length;
    if (n > 0) {
        memcpy(dest, list->records, n * sizeof *dest);
        memmove(list->records, list->records + n, (list->count - n) * sizeof *dest);
        list->count -= n;
    }
    pthread_mutex_unlock(&list->lock);
    *taken = n;
    return 0;
}

void results_destroy(results_t *list)
{
    if (list == NULL)
        return;
    pthread_mutex_destroy(&list->lock);
    free(list->records);
    free(list);
}
