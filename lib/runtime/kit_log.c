/**
 * @file kit_log.c
 * @brief The log line writer.
 */
#define _POSIX_C_SOURCE 200809L
#include "kit_log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <time.h>

#include "kit_thread.h"
#include "kit_trace.h"

/* Atomic so that a program may switch logging while threads run, and so
 * ThreadSanitizer can see that reading it is not a race. */
static _Atomic(FILE *) log_sink;

void kit_log_to(FILE *sink)
{
    atomic_store(&log_sink, sink);
}

static void format_clock(char *out, size_t size)
{
    struct timespec now;
    struct tm local;
    clock_gettime(CLOCK_REALTIME, &now);
    localtime_r(&now.tv_sec, &local);
    snprintf(out, size, "%02d:%02d:%02d.%03ld", local.tm_hour, local.tm_min,
             local.tm_sec, now.tv_nsec / 1000000L);
}

void kit_log(const char *who, const char *fmt, ...)
{
    FILE *sink = atomic_load_explicit(&log_sink, memory_order_relaxed);
    bool tracing = kit_trace_on();
    if (sink == NULL && !tracing)
        return;
    char message[512];
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof message, fmt, args);
    va_end(args);
    if (tracing)
        kit_trace_instant(who, "%s", message);
    if (sink == NULL)
        return;
    char clock_text[64];
    format_clock(clock_text, sizeof clock_text);
    /* One fprintf per line: stdio locks the stream for the whole call. */
    fprintf(sink, "%s [%s] %s - %s\n", clock_text, kit_thread_name(), who, message);
    fflush(sink);
}
