/**
 * @file results.h
 * @brief Chapter 00: a results list that many workers append to at once.
 *
 * The story that starts the kit: a batch job ran fine on one thread, but
 * with several workers appending to one shared list while the master read
 * from it, records went missing and others appeared twice. The list had no
 * lock. This module is the fix: every operation that reads or changes the
 * list holds its mutex, so an append is never half-seen, a drain never takes
 * a record twice, and a record is never lost.
 *
 * Ownership: records are plain `long` values, copied in and copied out.
 *
 * @ingroup ch00
 */
#ifndef RESULTS_H
#define RESULTS_H

#include <stddef.h>

/** @defgroup ch00 Chapter 00 - shared results
 *  @brief The lost-records race and the mutex that fixes it.
 *  @{ */

/** @brief An opaque, thread-safe, growable list of `long` records. */
typedef struct results results_t;

/**
 * @brief Create an empty list.
 * @param[out] out           the new list; set to NULL on failure.
 * @param[in]  capacity_hint records to make room for up front (0 is fine: the
 *             list grows as needed).
 * @return 0; EINVAL if @p out is NULL; ENOMEM (then nothing was allocated).
 * @par Thread safety
 * The list may be used from any number of threads once created.
 * @see results_destroy
 */
int results_create(results_t **out, size_t capacity_hint);

/**
 * @brief Append one record at the end.
 * @return 0; EINVAL if @p list is NULL; ENOMEM if the list had to grow and
 *         could not (the record was not added; the list is unchanged).
 * @par Thread safety
 * Safe to call from many threads at once, and concurrently with
 * results_drain(): each appended record is drained exactly once.
 */
int results_append(results_t *list, long record);

/**
 * @brief Number of records in the list now (0 for NULL).
 * @par Thread safety
 * Safe; the answer may be stale as soon as it is returned if other threads
 * are appending.
 */
size_t results_count(results_t *list);

/**
 * @brief Move the oldest records out of the list, in the order they were appended.
 * @param[in]  list       the list.
 * @param[out] dest       array receiving up to @p dest_length records.
 * @param[in]  dest_length size of @p dest; 0 is allowed (takes nothing).
 * @param[out] taken      how many records were moved (0 on error).
 * @return 0; EINVAL if @p list, @p taken, or @p dest (when @p dest_length > 0) is NULL.
 * @par Thread safety
 * Atomic with respect to results_append(): a record is either in the list or
 * already in some caller's @p dest, never both and never neither.
 */
int results_drain(results_t *list, long *dest, size_t dest_length, size_t *taken);

/**
 * @brief Free the list and every record still in it. NULL is a no-op.
 * @pre No other thread uses the list any more.
 * @see results_create
 */
void results_destroy(results_t *list);

/** @} */
#endif
