/**
 * @file results.c
 * @brief Chapter 00 exercise: make the results list safe for many threads.
 *
 * Read chapters/00-shared-results/README.md first, and run the program:
 *     make run CH=00
 * Then implement the functions below so that `make grade CH=00` passes.
 * Every function returns ENOSYS until you do; the tests say which one.
 *
 * The plan: a growable array of `long`, plus one pthread mutex that every
 * function holds while it reads or changes the array or its count.
 */
#define _POSIX_C_SOURCE 200809L
#include "results.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct results {
    /* TODO: a pthread_mutex_t that guards the three fields below, and:
     *   long *records;    records[0 .. count) hold the list, oldest first
     *   size_t count;
     *   size_t capacity;  records has room for this many */
    int placeholder; /* delete me: C does not allow an empty struct */
};

int results_create(results_t **out, size_t capacity_hint)
{
    /* TODO:
     * - EINVAL if out is NULL; otherwise set *out = NULL first, so the
     *   caller never sees garbage after a failure.
     * - calloc the struct, then the records array (if capacity_hint > 0),
     *   then pthread_mutex_init. If any step fails, undo the earlier ones
     *   and return ENOMEM (or the pthread error). Undo the kit's one way,
     *   a goto ladder (HINTS.md, hint 3, shows one on another struct): a
     *   failed step jumps to a label below the `return 0;` that undoes the
     *   step before it, and the labels fall through in reverse order.
     */
    (void)out;
    (void)capacity_hint;
    return ENOSYS;
}

int results_append(results_t *list, long record)
{
    /* TODO: make room if the array is full (grow it - on failure leave
     * everything as it was and return ENOMEM), then add the record at the
     * end. "Read count, write the slot, bump count" - and the growing -
     * inside ONE critical section: that is the whole fix. */
    (void)list;
    (void)record;
    return ENOSYS;
}

size_t results_count(results_t *list)
{
    /* TODO: read count under the lock (0 for a NULL list). */
    (void)list;
    return 0;
}

int results_drain(results_t *list, long *dest, size_t dest_length, size_t *taken)
{
    /* TODO: check the arguments (see results.h), then move the oldest
     * records (as many as dest holds) out to dest, oldest first, and keep
     * the rest, still in order - the copy and the removal in the same
     * critical section, or an append can slip in between. */
    (void)list;
    (void)dest;
    (void)dest_length;
    if (taken != NULL)
        *taken = 0;
    return ENOSYS;
}

void results_destroy(results_t *list)
{
    /* TODO: NULL is a no-op; otherwise destroy the mutex and free the
     * array and the struct. */
    (void)list;
}
