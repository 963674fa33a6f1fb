/**
 * @file sizing.h
 * @brief Chapter 04: how many threads a pool should have.
 *
 * The source document's two rules:
 * - CPU-bound work: cores + 1 (the extra thread covers a page fault or
 *   another short stall, so no core sits idle);
 * - work that also waits (I/O, RPC, a database): cores x target utilization
 *   x (wait + compute) / compute. With 4 cores and 100% target: 50% compute
 *   gives 8 threads; 10% compute gives 40.
 *
 * Thread safety: kit_threads_for() reads only its arguments; any thread
 * may call it at any time.
 *
 * @ingroup ch04
 */
#ifndef SIZING_H
#define SIZING_H

#include <stddef.h>

/** @addtogroup ch04
 *  @{ */

/**
 * @brief Threads needed to keep @p cores busy at @p target_utilization.
 * @param[in] cores              CPU cores, >= 1.
 * @param[in] target_utilization fraction of the cores to keep busy, in (0, 1].
 * @param[in] wait_time          time a task spends waiting, >= 0 (any unit).
 * @param[in] compute_time       time a task spends computing, > 0 (same unit).
 * @return cores + 1 when @p wait_time is 0 (pure CPU work); otherwise
 *         cores x target_utilization x (wait + compute) / compute, rounded up
 *         (at least 1). A result above a whole number by less than 1e-9 is
 *         floating-point noise and counts as that number: 3 x 0.4 x
 *         (0.9 + 0.1) / 0.1 computes to 12.000000000000002 and gives 12.
 *         A count too large for size_t gives SIZE_MAX. 0 for invalid
 *         arguments (including NaN and infinities).
 */
size_t kit_threads_for(size_t cores, double target_utilization, double wait_time, double compute_time);

/** @} */
#endif
