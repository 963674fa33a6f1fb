/**
 * @file unsafe_list.c
 * @brief The list from the story, as it was: every step correct, the whole wrong.
 *
 * Each individual load and store is atomic (relaxed), so this file has no
 * *data race* in the C11 sense and the compiler cannot make things worse
 * than they are: what goes wrong is a *race condition* between steps. An
 * append is read count / write slot / write count; a drain is read count /
 * copy / write count = 0. Another thread can run between any two steps:
 * - two appends read the same count and write the same slot: one record is
 *   overwritten, **lost**;
 * - an append reads count, the master drains and writes 0, the append then
 *   writes its old count + 1: the slots below it, already harvested, are
 *   "in the list" again and the next drain harvests them a second time,
 *   **duplicated**.
 * With plain `long` and `size_t` it would be both a race condition and
 * undefined behaviour; results.c fixes both with one mutex.
 */
#define _POSIX_C_SOURCE 200809L
#include "unsafe_list.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>

int unsafe_list_init(struct unsafe_list *list, size_t capacity, long window)
{
    list->records = calloc(capacity, sizeof *list->records);
    if (list->records == NULL)
        return ENOMEM;
    atomic_init(&list->count, 0);
    list->capacity = capacity;
    list->window = window;
    return 0;
}

void unsafe_list_free(struct unsafe_list *list)
{
    free((void *)list->records);
}

/* A little work inside the race window, to make the bad interleavings
 * more frequent (--window); 0 leaves the window as narrow as it is. */
static void widen(long window)
{
    for (long i = 0; i < window; i++)
        sched_yield();
}

void unsafe_append(struct unsafe_list *list, long record)
{
    size_t slot = atomic_load_explicit(&list->count, memory_order_relaxed);      /* 1. read  */
    widen(list->window);
    atomic_store_explicit(&list->records[slot], record, memory_order_relaxed);   /* 2. write */
    atomic_store_explicit(&list->count, slot + 1, memory_order_relaxed);         /* 3. bump  */
}

size_t unsafe_drain(struct unsafe_list *list, long *dest, size_t dest_length)
{
    size_t n = atomic_load_explicit(&list->count, memory_order_relaxed);
    if (n > dest_length)
        n = dest_length;
    for (size_t i = 0; i < n; i++)
        dest[i] = atomic_load_explicit(&list->records[i], memory_order_relaxed);
    widen(list->window);
    atomic_store_explicit(&list->count, 0, memory_order_relaxed); /* appends since the read are forgotten */
    return n;
}
