/**
 * @file kit_log.h
 * @brief Timestamped, thread-named log lines in the source documents' format.
 *
 * `10:48:41.239 [producer-2] msgq - full, waiting`: wall-clock time to the
 * millisecond, the thread's name (kit_thread_name()), who is speaking (a
 * module or role) and what happened. Chapter programs switch logging on;
 * tests leave it off, so library code can log freely and stay quiet.
 *
 * Each line is written with one locked stdio call, so lines from different
 * threads never interleave mid-line. The order of lines is the order in
 * which threads reached the log call, which for calls made under a
 * structure's lock is the order of the events themselves.
 *
 * @ingroup kit
 */
#ifndef KIT_LOG_H
#define KIT_LOG_H

#include <stdbool.h>
#include <stdio.h>

/** @addtogroup kit
 *  @{ */

/** @brief Send log lines to @p sink (stdout in the programs); NULL silences them. */
void kit_log_to(FILE *sink);

/**
 * @brief Write one log line, when logging is on.
 * @param[in] who  the speaker: a module (`msgq`) or a role (`producer`).
 * @param[in] fmt  printf-style message, without a trailing newline.
 *
 * When the trace recorder is on (kit_trace.h), the line is also recorded as
 * an instant event, so a timeline shows every log line where it happened.
 * @par Thread safety
 * Safe from any thread, with or without other locks held.
 */
void kit_log(const char *who, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/** @} */
#endif
