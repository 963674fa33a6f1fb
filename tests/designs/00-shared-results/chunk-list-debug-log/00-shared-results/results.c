/**
 * @file results.c
 * @brief Chapter 00, another design: a linked list of chunks behind one
 *        mutex, with debugging output on stderr.
 *
 * DESIGN. The records are kept in a queue of chunks. Each chunk is an array
 * with a read index and a write index: `slots[read .. write)` are its
 * records, oldest first, and the chunks are linked oldest first. An append
 * writes at the end of the last chunk, and links a new chunk when that one
 * is full - nothing is ever copied or moved. A drain reads from the first
 * chunk and frees each chunk it empties.
 *
 * The first chunk has exactly `capacity_hint` slots; every later chunk has
 * twice as many as the chunk before it (at least MIN_CHUNK, at most
 * MAX_CHUNK), so a long list needs few allocations and a drained list gives
 * its memory back. The last chunk is never freed by a drain: emptied, it
 * starts over from slot 0.
 *
 * One mutex guards the whole chain and the count. Every read-modify-write
 * (find the write slot, fill it, move `write`, bump `count`; copy records
 * out, move `read`, unlink chunks) is one critical section.
 *
 * Debugging: set RESULTS_DEBUG in the environment and the list says on
 * stderr when it links or frees a chunk. A growth that fails is always
 * reported there: it is rare, and the caller only sees ENOMEM.
 */
#define _POSIX_C_SOURCE 200809L
#include "results.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { MIN_CHUNK = 16, MAX_CHUNK = 65536 };

struct chunk {
    struct chunk *next; /* the next younger chunk, NULL for the last */
    size_t size;        /* slots in this chunk */
    size_t read;        /* slots[read] is the oldest record still here */
    size_t write;       /* slots[write] is where the next record goes */
    long slots[];
};

struct results {
    pthread_mutex_t lock;
    /* Guarded by lock: */
    struct chunk *first; /* oldest records; NULL when there are no chunks */
    struct chunk *last;  /* where appends go */
    size_t count;        /* records in all chunks together */
};

/* Read once, by whichever thread creates the first list. */
static bool debug_output;
static pthread_once_t debug_once = PTHREAD_ONCE_INIT;

static void read_debug_setting(void)
{
    debug_output = getenv("RESULTS_DEBUG") != NULL;
}

/* One chunk of `size` slots; NULL if there is no memory (or size overflows). */
static struct chunk *new_chunk(size_t size)
{
    if (size > (SIZE_MAX - sizeof(struct chunk)) / sizeof(long))
        return NULL;
    struct chunk *c = malloc(sizeof *c + size * sizeof(long));
    if (c == NULL)
        return NULL;
    *c = (struct chunk){ .next = NULL, .size = size, .read = 0, .write = 0 };
    if (debug_output)
        fprintf(stderr, "results: new chunk of %zu records\n", size);
    return c;
}

static void free_chunk(struct chunk *c)
{
    if (debug_output)
        fprintf(stderr, "results: freeing a chunk of %zu records\n", c->size);
    free(c);
}

int results_create(results_t **out, size_t capacity_hint)
{
    if (out == NULL)
        return EINVAL;
    *out = NULL;
    pthread_once(&debug_once, read_debug_setting);
    int err = ENOMEM;
    results_t *list = calloc(1, sizeof *list);
    if (list == NULL)
        return ENOMEM;
    if (capacity_hint > 0) {
        list->first = new_chunk(capacity_hint);
        if (list->first == NULL)
            goto free_list;
        list->last = list->first;
    }
    if ((err = pthread_mutex_init(&list->lock, NULL)) != 0)
        goto free_first;
    *out = list;
    return 0;

free_first:
    free(list->first);
free_list:
    free(list);
    return err;
}

/* The size of the chunk that follows `last` (NULL: there is none). */
static size_t next_chunk_size(const struct chunk *last)
{
    if (last == NULL)
        return MIN_CHUNK;
    size_t size = last->size <= MAX_CHUNK / 2 ? last->size * 2 : MAX_CHUNK;
    return size < MIN_CHUNK ? MIN_CHUNK : size;
}

/* Makes sure the last chunk has a free slot. Called with lock held; on
 * failure the chain is unchanged. */
static int make_room_locked(results_t *list)
{
    if (list->last != NULL && list->last->write < list->last->size)
        return 0;
    struct chunk *c = new_chunk(next_chunk_size(list->last));
    if (c == NULL) {
        fprintf(stderr, "results: out of memory growing a list of %zu records\n", list->count);
        return ENOMEM;
    }
    if (list->last != NULL)
        list->last->next = c;
    else
        list->first = c;
    list->last = c;
    return 0;
}

int results_append(results_t *list, long record)
{
    if (list == NULL)
        return EINVAL;
    pthread_mutex_lock(&list->lock);
    int err = make_room_locked(list);
    if (err == 0) {
        list->last->slots[list->last->write++] = record;
        list->count++;
    }
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

/* The first chunk has no record left: free it if a younger chunk follows,
 * or, if it is the only one, start it over from slot 0. Called with lock held. */
static void recycle_empty_first_locked(results_t *list)
{
    struct chunk *c = list->first;
    if (c->read < c->write)
        return; /* still holds records */
    if (c->next == NULL) {
        c->read = 0;
        c->write = 0;
        return;
    }
    list->first = c->next;
    free_chunk(c);
}

int results_drain(results_t *list, long *dest, size_t dest_length, size_t *taken)
{
    if (taken != NULL)
        *taken = 0;
    if (list == NULL || taken == NULL || (dest == NULL && dest_length > 0))
        return EINVAL;
    size_t n = 0;
    pthread_mutex_lock(&list->lock);
    /* Copying out and advancing `read` happen in one critical section with
     * every append: a record is either still in a chunk or in dest. */
    while (n < dest_length && list->count > 0) {
        struct chunk *c = list->first;
        while (n < dest_length && c->read < c->write) {
            dest[n++] = c->slots[c->read++];
            list->count--;
        }
        recycle_empty_first_locked(list);
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
    struct chunk *c = list->first;
    while (c != NULL) {
        struct chunk *next = c->next;
        free_chunk(c);
        c = next;
    }
    free(list);
}
