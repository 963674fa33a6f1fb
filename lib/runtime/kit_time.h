/**
 * @file kit_time.h
 * @brief Monotonic time, deadlines and condition variables that use them.
 *
 * Every timed wait in the kit follows one recipe: turn the caller's relative
 * `timeout_ms` into one absolute CLOCK_MONOTONIC deadline *once*, then loop on
 * `pthread_cond_timedwait` with that same deadline. A spurious or stolen
 * wake-up then costs nothing: the next wait simply waits for the time that is
 * left. Recomputing "now + timeout" inside the loop would stretch the wait
 * every time the thread is woken for nothing.
 *
 * CLOCK_MONOTONIC, not the wall clock: an administrator setting the date back
 * by an hour must not turn a 100 ms wait into an hour.
 *
 * @ingroup kit
 */
#ifndef KIT_TIME_H
#define KIT_TIME_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/** @defgroup kit Kit runtime (lib/)
 *  @brief Logging, time, named threads, gates, traces: what every chapter uses.
 *  @{ */

/** @brief Nanoseconds on CLOCK_MONOTONIC: only differences mean anything. */
int64_t kit_now_ns(void);

/** @brief Milliseconds elapsed since @p start_ns (a kit_now_ns() reading). */
double kit_elapsed_ms(int64_t start_ns);

/**
 * @brief Compute the absolute deadline `now + timeout_ms` on CLOCK_MONOTONIC.
 * @param[in]  timeout_ms relative timeout, >= 0; values so large that the
 *             deadline would overflow are clamped to the far future.
 * @param[out] deadline   the absolute time, for pthread_cond_timedwait() on a
 *             condition variable made by kit_cond_init().
 * @return 0, or EINVAL if @p timeout_ms is negative or @p deadline is NULL
 *         (then @p deadline is unchanged).
 */
int kit_deadline_after(long timeout_ms, struct timespec *deadline);

/**
 * @brief Initialise a condition variable whose timed waits use CLOCK_MONOTONIC.
 *
 * pthread_cond_timedwait() measures its deadline against the condition
 * variable's clock, which is CLOCK_REALTIME unless set otherwise; the kit's
 * deadlines come from kit_deadline_after(), so every condition variable that
 * is waited on with a timeout must be made here.
 * @return 0 or the error of pthread_condattr_*() / pthread_cond_init().
 */
int kit_cond_init(pthread_cond_t *cond);

/**
 * @brief Sleep for @p ms milliseconds (resumes after signals).
 *
 * For chapter programs and tests only: simulated work and scripted
 * interleavings. Library code never sleeps to wait for a condition.
 */
void kit_sleep_ms(long ms);

/** @brief Sleep for @p us microseconds; see kit_sleep_ms(). */
void kit_sleep_us(long us);

/** @} */
#endif
