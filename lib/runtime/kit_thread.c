/**
 * @file kit_thread.c
 * @brief Named thread creation: a small trampoline sets the name, then runs the body.
 */
#if defined(__linux__)
#define _GNU_SOURCE /* pthread_setname_np */
#else
#define _POSIX_C_SOURCE 200809L
#endif
#include "kit_thread.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char thread_name[KIT_THREAD_NAME_MAX];
static atomic_uint unnamed_count;

struct start_record {
    void *(*fn)(void *);
    void *arg;
    char name[KIT_THREAD_NAME_MAX];
};

/* name into out, cut to size - 1 characters. */
static void copy_name(char *out, size_t size, const char *name)
{
    size_t length = strnlen(name, size - 1);
    memcpy(out, name, length);
    out[length] = '\0';
}

void kit_thread_set_name(const char *name)
{
    if (name == NULL || name[0] == '\0') {
        snprintf(thread_name, sizeof thread_name, "thread-%u",
                 atomic_fetch_add(&unnamed_count, 1) + 1);
    } else {
        copy_name(thread_name, sizeof thread_name, name);
    }
#if defined(__linux__)
    char kernel_name[16]; /* the kernel keeps 15 characters and a NUL */
    copy_name(kernel_name, sizeof kernel_name, thread_name);
    pthread_setname_np(pthread_self(), kernel_name);
#endif
}

const char *kit_thread_name(void)
{
    if (thread_name[0] == '\0')
        kit_thread_set_name(NULL);
    return thread_name;
}

static void *trampoline(void *raw)
{
    struct start_record record = *(struct start_record *)raw;
    free(raw);
    kit_thread_set_name(record.name);
    return record.fn(record.arg);
}

int kit_thread_start(pthread_t *thread, const char *name, void *(*fn)(void *), void *arg)
{
    if (thread == NULL || fn == NULL)
        return EINVAL;
    struct start_record *record = malloc(sizeof *record);
    if (record == NULL)
        return ENOMEM;
    record->fn = fn;
    record->arg = arg;
    copy_name(record->name, sizeof record->name, name != NULL ? name : "");
    pthread_t started;
    int err = pthread_create(&started, NULL, trampoline, record);
    if (err != 0) {
        free(record); /* the trampoline never ran, so the record is still ours */
        return err;
    }
    *thread = started;
    return 0;
}

/* "<role>-<index>" into out, cut as snprintf would cut it. (Without
 * snprintf: a test under the explorer names a thread in every schedule.) */
static void numbered_name(char *out, size_t size, const char *role, size_t index)
{
    char digits[24];
    int n = 0;
    do {
        digits[n++] = (char)('0' + index % 10);
        index /= 10;
    } while (index > 0);
    size_t at = strnlen(role, size - 1);
    memcpy(out, role, at);
    if (at < size - 1)
        out[at++] = '-';
    while (n > 0 && at < size - 1)
        out[at++] = digits[--n];
    out[at] = '\0';
}

int kit_thread_start_numbered(pthread_t *thread, const char *role, size_t index, void *(*fn)(void *), void *arg)
{
    if (role == NULL)
        return EINVAL;
    char name[KIT_THREAD_NAME_MAX];
    numbered_name(name, sizeof name, role, index);
    return kit_thread_start(thread, name, fn, arg);
}

int kit_thread_start_group(pthread_t *threads, size_t count, const char *role, void *(*fn)(void *), void *args,
                           size_t arg_size)
{
    for (size_t i = 0; i < count; i++) {
        void *arg = args ? (char *)args + i * arg_size : (void *)(intptr_t)i;
        int err = kit_thread_start_numbered(&threads[i], role, i, fn, arg);
        if (err != 0)
            return err;
    }
    return 0;
}

void kit_thread_join_group(pthread_t *threads, size_t count)
{
    for (size_t i = 0; i < count; i++)
        pthread_join(threads[i], NULL);
}
