/**
 * @file measure.h
 * @brief Chapter 05 program, the measuring modes: `--compare`, `--sweep`
 *        and `--false-sharing` of `ch05-master-worker` (see the chapter page).
 *
 * Each mode builds its batches, times them on CLOCK_MONOTONIC (keeping the
 * best of `repeat` runs: on a busy machine the best run is the one least
 * disturbed by other programs), prints one table and returns the program's exit status: 0, or 1 if a run went wrong
 * (a checksum mismatch, an error, or an exercise that is not written yet).
 *
 * @ingroup ch05
 */
#ifndef MEASURE_H
#define MEASURE_H

#include "mw.h"

/** @addtogroup ch05
 *  @{ */

/** @brief The knobs the measuring modes read. */
typedef struct measure_options {
    long workers;       /**< worker threads (and chapter-03 pool threads) */
    long batch;         /**< --compare: CPU-bound tasks in the batch */
    long work_us;       /**< --compare: CPU time of one task, in microseconds */
    long sweep_tasks;   /**< --sweep: tasks in each batch */
    long sweep_work_us; /**< --sweep: CPU time of one CPU-bound task */
    long sleep_ms;      /**< --sweep: sleep of one sleep-bound task */
    long increments;    /**< --false-sharing: additions each worker makes to its counter */
    long repeat;        /**< every timing is the best of this many runs (a shared machine is noisy) */
} measure_options_t;

/**
 * @brief mw_create() that explains itself on failure: prints the error to
 *        stderr, and for ENOSYS which file to write.
 * @return mw_create()'s result.
 */
int ch05_create(mw_t **out, const mw_config_t *config);

/** @brief `--compare`: the same CPU-bound batch single-threaded, on the chapter-03 pool, and with master-worker. */
int measure_compare(const measure_options_t *options);

/** @brief `--sweep`: throughput at 1, 2, 4, 8 and 16 workers, CPU-bound and sleep-bound. */
int measure_sweep(const measure_options_t *options);

/** @brief `--false-sharing`: per-worker counters packed into one cache line, then padded apart. */
int measure_false_sharing(const measure_options_t *options);

/** @} */
#endif
