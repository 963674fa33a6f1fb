/**
 * @file memaccess_code.c
 * @brief The box of memaccess_code.h: copies made by the C library, under
 *        the box's lock or after it, and a count read and written with
 *        atomics and plainly (under a lock, and with none), for
 *        test_memaccess.c.
 *
 * Built as a submission's code is: with the instrumentation, its calls of the
 * C library's memory and string functions handed to the kit first
 * (grader/explorer/kit_sched_libc.c). Each call is alone on its line, in a
 * helper of its own, and the line's number follows it, for the tests to find
 * in a report.
 */
#define _POSIX_C_SOURCE 200809L
#include "memaccess_code.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct box {
    pthread_mutex_t lock;
    /* Guarded by lock: */
    size_t size; /* bytes of data in use */
    char name[BOX_NAME];
    char data[BOX_DATA];
};

/* The library's calls, one a line. */
static void fill(box_t *b, const char *from, size_t size) { memcpy(b->data, from, size); }
const int box_fill_line = __LINE__ - 1;
static void rename_to(box_t *b, const char *name) { strcpy(b->name, name); }
const int box_rename_line = __LINE__ - 1;
static void copy_out(box_t *b, char *out, size_t size) { memcpy(out, b->data, size); }
const int box_copy_out_line = __LINE__ - 1;
static void clear(box_t *b, char *out, size_t size) { (void)out, memset(b->data, 0, size); }
const int box_clear_line = __LINE__ - 1;
static void shift(box_t *b, char *out, size_t size) { (void)out, memmove(b->data, b->data + 1, size - 1); }
const int box_shift_line = __LINE__ - 1;
static size_t name_length(box_t *b) { return strlen(b->name); }
const int box_name_length_line = __LINE__ - 1;
static void print_out(box_t *b, char *out, size_t size) { snprintf(out, size, "%.*s", (int)size - 1, b->data); }
const int box_print_out_line = __LINE__ - 1;
void copy_bytes(char *to, const char *from, size_t size) { memcpy(to, from, size); }
const int copy_bytes_line = __LINE__ - 1;

box_t *box_create(void)
{
    box_t *b = calloc(1, sizeof *b);
    if (b == NULL)
        return NULL;
    if (pthread_mutex_init(&b->lock, NULL) != 0) {
        free(b);
        return NULL;
    }
    b->size = BOX_DATA;
    strcpy(b->name, "box");
    return b;
}

void box_destroy(box_t *b)
{
    if (b == NULL)
        return;
    pthread_mutex_destroy(&b->lock);
    free(b);
}

void box_fill(box_t *b, const char *from, size_t size)
{
    pthread_mutex_lock(&b->lock);
    fill(b, from, size);
    pthread_mutex_unlock(&b->lock);
}

void box_rename(box_t *b, const char *name)
{
    pthread_mutex_lock(&b->lock);
    rename_to(b, name);
    pthread_mutex_unlock(&b->lock);
}

/* Each copy below takes the lock to read the box's size; when not @p locked,
 * it gives the lock up at once, and the copy after it is the race. */
static void with_size(box_t *b, bool locked, void (*copy)(box_t *, char *, size_t), char *out)
{
    pthread_mutex_lock(&b->lock);
    size_t size = b->size;
    if (!locked)
        pthread_mutex_unlock(&b->lock);
    copy(b, out, size);
    if (locked)
        pthread_mutex_unlock(&b->lock);
}

void box_copy_out(box_t *b, char *out, bool locked) { with_size(b, locked, copy_out, out); }
void box_print_out(box_t *b, char *out, bool locked) { with_size(b, locked, print_out, out); }
void box_clear(box_t *b, bool locked) { with_size(b, locked, clear, NULL); }
void box_shift(box_t *b, bool locked) { with_size(b, locked, shift, NULL); }

size_t box_name_length(box_t *b, bool locked)
{
    pthread_mutex_lock(&b->lock);
    if (!locked)
        pthread_mutex_unlock(&b->lock);
    size_t length = name_length(b);
    if (locked)
        pthread_mutex_unlock(&b->lock);
    return length;
}

/* ---- A count, atomic and plain ------------------------------------------------------- */

void count_under_lock(long *count, pthread_mutex_t *lock)
{
    pthread_mutex_lock(lock);
    (*count)++;
    pthread_mutex_unlock(lock);
}
const int count_under_lock_line = __LINE__ - 3;
long count_peek(long *count) { return __atomic_load_n(count, __ATOMIC_RELAXED); }
const int count_peek_line = __LINE__ - 1;
void count_atomically(long *count) { __atomic_fetch_add(count, 1, __ATOMIC_RELAXED); }

void count_plainly(long *count)
{
    long seen = *count;
    *count = seen + 1;
}

void publish(long *data, long *flag)
{
    *data = 42;
    __atomic_store_n(flag, 1, __ATOMIC_RELEASE);
}

long consume(long *data, long *flag)
{
    return __atomic_load_n(flag, __ATOMIC_ACQUIRE) ? *data : -1;
}

void write_byte(char *block, size_t at) { block[at] = 1; }
const int write_byte_line = __LINE__ - 1;
