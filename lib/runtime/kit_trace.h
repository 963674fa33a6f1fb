/**
 * @file kit_trace.h
 * @brief Recording what each thread did, for timelines and for tests.
 *
 * A trace is a list of events, each stamped with CLOCK_MONOTONIC time and
 * the thread (its *lane*) that recorded it:
 * - a **span** is a state the thread was in, from kit_trace_begin() to the
 *   matching kit_trace_end(): "running task 7", "waiting on not_full";
 *   spans on one thread nest;
 * - an **instant** is a point event: "rejected item 9". kit_log() records
 *   every log line as an instant while tracing is on.
 *
 * Recording is off until kit_trace_start(): then every call is one relaxed
 * atomic load and a return, cheap enough to leave in library code. When on,
 * events go into one buffer under the recorder's own mutex, a leaf lock that
 * is never held while calling out, so recording from inside any structure's
 * critical section cannot deadlock and the buffer's order is the order in
 * which events really happened.
 *
 * The trace is data: kit_trace_write_json() writes Chrome trace-event JSON
 * (open it in https://ui.perfetto.dev or chrome://tracing), and
 * kit_trace_snapshot() hands the events to a test that checks invariants.
 *
 * @ingroup kit
 */
#ifndef KIT_TRACE_H
#define KIT_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** @addtogroup kit
 *  @{ */

/** Longest category kept (module or role, like the `who` of kit_log()). */
#define KIT_TRACE_CATEGORY_MAX 16
/** Longest event name kept. */
#define KIT_TRACE_NAME_MAX 72

/** @brief One recorded event. */
typedef struct kit_trace_event {
    int64_t ts_ns;      /**< nanoseconds since kit_trace_start() */
    unsigned lane;      /**< index of the recording thread, see kit_trace_lane_name() */
    char phase;         /**< 'B' span begins, 'E' span ends, 'i' instant */
    char category[KIT_TRACE_CATEGORY_MAX]; /**< who: module or role */
    char name[KIT_TRACE_NAME_MAX];         /**< what: state or event ("" for 'E') */
} kit_trace_event_t;

/** @brief Start recording (discarding any earlier events). @return 0 or ENOMEM. */
int kit_trace_start(void);

/** @brief Stop recording; the events stay until kit_trace_reset(). */
void kit_trace_stop(void);

/** @brief Stop recording and free every event and lane. */
void kit_trace_reset(void);

/** @brief True while recording. */
bool kit_trace_on(void);

/** @brief Open a span on the calling thread: it is now in state @p fmt. */
void kit_trace_begin(const char *category, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/** @brief Close the calling thread's innermost open span. */
void kit_trace_end(const char *category);

/** @brief Record a point event on the calling thread. */
void kit_trace_instant(const char *category, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/**
 * @brief Copy the events recorded so far, in the order they happened.
 * @param[out] events a malloc'd array the caller frees; NULL when empty.
 * @param[out] count  its length.
 * @return 0 or ENOMEM (then *events is NULL and *count is 0).
 */
int kit_trace_snapshot(kit_trace_event_t **events, size_t *count);

/** @brief The thread name of @p lane, or "?" for an unknown lane. */
const char *kit_trace_lane_name(unsigned lane);

/** @brief Number of lanes (threads that recorded at least one event). */
unsigned kit_trace_lane_count(void);

/**
 * @brief Write the trace as Chrome trace-event JSON.
 * @return 0, or an errno value if the file cannot be written.
 */
int kit_trace_write_json(const char *path);

/** @} */
#endif
