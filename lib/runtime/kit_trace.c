/**
 * @file kit_trace.c
 * @brief The event recorder: one growing array and a lane registry under one mutex.
 */
#define _POSIX_C_SOURCE 200809L
#include "kit_trace.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit_thread.h"
#include "kit_time.h"

static atomic_bool recording;

/* recorder_lock guards everything below it. It is a leaf lock: nothing is
 * called while holding it except memory allocation and copying. */
static pthread_mutex_t recorder_lock = PTHREAD_MUTEX_INITIALIZER;
static kit_trace_event_t *events;
static size_t event_count, event_capacity;
static int64_t origin_ns;
static char (*lane_names)[KIT_THREAD_NAME_MAX];
static unsigned lane_count, lane_capacity;
static unsigned generation; /* bumped by start/reset, so stale lane ids are re-registered */

/* Each thread's lane, valid while its generation matches. */
static _Thread_local unsigned my_lane;
static _Thread_local unsigned my_generation;

bool kit_trace_on(void)
{
    return atomic_load_explicit(&recording, memory_order_relaxed);
}

static void free_all_locked(void)
{
    free(events);
    free(lane_names);
    events = NULL;
    lane_names = NULL;
    event_count = event_capacity = 0;
    lane_count = lane_capacity = 0;
    generation++;
}

int kit_trace_start(void)
{
    pthread_mutex_lock(&recorder_lock);
    free_all_locked();
    origin_ns = kit_now_ns();
    atomic_store(&recording, true);
    pthread_mutex_unlock(&recorder_lock);
    return 0;
}

void kit_trace_stop(void)
{
    atomic_store(&recording, false);
}

void kit_trace_reset(void)
{
    pthread_mutex_lock(&recorder_lock);
    atomic_store(&recording, false);
    free_all_locked();
    pthread_mutex_unlock(&recorder_lock);
}

/* Returns the caller's lane, registering the thread on first use. */
static int lane_locked(unsigned *lane)
{
    if (my_generation == generation && my_lane < lane_count) {
        *lane = my_lane;
        return 0;
    }
    if (lane_count == lane_capacity) {
        unsigned grown = lane_capacity ? lane_capacity * 2 : 16;
        void *bigger = realloc(lane_names, grown * sizeof *lane_names);
        if (bigger == NULL)
            return ENOMEM;
        lane_names = bigger;
        lane_capacity = grown;
    }
    snprintf(lane_names[lane_count], KIT_THREAD_NAME_MAX, "%s", kit_thread_name());
    my_lane = lane_count++;
    my_generation = generation;
    *lane = my_lane;
    return 0;
}

static void record(char phase, const char *category, const char *name)
{
    pthread_mutex_lock(&recorder_lock);
    /* The clock is read under the lock, so the buffer's order and the
     * timestamps' order agree: an event recorded later is never earlier. */
    int64_t now = kit_now_ns();
    unsigned lane;
    if (!atomic_load(&recording) || lane_locked(&lane) != 0)
        goto out;
    if (event_count == event_capacity) {
        size_t grown = event_capacity ? event_capacity * 2 : 1024;
        void *bigger = realloc(events, grown * sizeof *events);
        if (bigger == NULL)
            goto out; /* out of memory: the trace loses events, the program carries on */
        events = bigger;
        event_capacity = grown;
    }
    kit_trace_event_t *event = &events[event_count++];
    event->ts_ns = now - origin_ns;
    event->lane = lane;
    event->phase = phase;
    snprintf(event->category, sizeof event->category, "%s", category ? category : "");
    snprintf(event->name, sizeof event->name, "%s", name ? name : "");
out:
    pthread_mutex_unlock(&recorder_lock);
}

static void record_formatted(char phase, const char *category, const char *fmt, va_list args)
{
    char name[KIT_TRACE_NAME_MAX];
    vsnprintf(name, sizeof name, fmt, args);
    record(phase, category, name);
}

void kit_trace_begin(const char *category, const char *fmt, ...)
{
    if (!kit_trace_on())
        return;
    va_list args;
    va_start(args, fmt);
    record_formatted('B', category, fmt, args);
    va_end(args);
}

void kit_trace_end(const char *category)
{
    if (kit_trace_on())
        record('E', category, "");
}

void kit_trace_instant(const char *category, const char *fmt, ...)
{
    if (!kit_trace_on())
        return;
    va_list args;
    va_start(args, fmt);
    record_formatted('i', category, fmt, args);
    va_end(args);
}

int kit_trace_snapshot(kit_trace_event_t **out, size_t *count)
{
    pthread_mutex_lock(&recorder_lock);
    kit_trace_event_t *copy = NULL;
    size_t n = event_count;
    int err = 0;
    if (n > 0) {
        copy = malloc(n * sizeof *copy);
        if (copy == NULL) {
            err = ENOMEM;
            n = 0;
        } else {
            memcpy(copy, events, n * sizeof *copy);
        }
    }
    pthread_mutex_unlock(&recorder_lock);
    *out = copy;
    *count = n;
    return err;
}

const char *kit_trace_lane_name(unsigned lane)
{
    /* Lane names are written once, when the lane is registered, under the
     * lock; readers call this after the threads have finished. */
    pthread_mutex_lock(&recorder_lock);
    const char *name = lane < lane_count ? lane_names[lane] : "?";
    pthread_mutex_unlock(&recorder_lock);
    return name;
}

unsigned kit_trace_lane_count(void)
{
    pthread_mutex_lock(&recorder_lock);
    unsigned n = lane_count;
    pthread_mutex_unlock(&recorder_lock);
    return n;
}

static void write_json_string(FILE *out, const char *text)
{
    fputc('"', out);
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        if (*c == '"' || *c == '\\')
            fprintf(out, "\\%c", *c);
        else if (*c < 0x20)
            fprintf(out, "\\u%04x", *c);
        else
            fputc(*c, out);
    }
    fputc('"', out);
}

static void write_event(FILE *out, const kit_trace_event_t *event)
{
    fprintf(out, ",\n{\"ph\":\"%c\",\"pid\":1,\"tid\":%u,\"ts\":%.3f,\"cat\":", event->phase,
            event->lane, (double)event->ts_ns / 1000.0);
    write_json_string(out, event->category);
    fputs(",\"name\":", out);
    write_json_string(out, event->name);
    if (event->phase == 'i')
        fputs(",\"s\":\"t\"", out);
    fputc('}', out);
}

int kit_trace_write_json(const char *path)
{
    FILE *out = fopen(path, "w");
    if (out == NULL)
        return errno;
    pthread_mutex_lock(&recorder_lock);
    fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n"
          "{\"ph\":\"M\",\"pid\":1,\"name\":\"process_name\",\"args\":{\"name\":\"kit\"}}",
          out);
    for (unsigned lane = 0; lane < lane_count; lane++) {
        fprintf(out, ",\n{\"ph\":\"M\",\"pid\":1,\"tid\":%u,\"name\":\"thread_name\",\"args\":{\"name\":", lane);
        write_json_string(out, lane_names[lane]);
        fputs("}}", out);
    }
    for (size_t i = 0; i < event_count; i++)
        write_event(out, &events[i]);
    pthread_mutex_unlock(&recorder_lock);
    fputs("\n]}\n", out);
    int err = ferror(out) ? EIO : 0;
    if (fclose(out) != 0 && err == 0)
        err = errno;
    return err;
}
