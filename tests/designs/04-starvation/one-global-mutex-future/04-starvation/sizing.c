/**
 * @file sizing.c
 * @brief Chapter 04 solution: the source document's thread-count formulas.
 */
#define _POSIX_C_SOURCE 200809L
#include "sizing.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

size_t kit_threads_for(size_t cores, double target_utilization, double wait_time, double compute_time)
{
    bool valid = cores >= 1 && isfinite(target_utilization) && target_utilization > 0 &&
                 target_utilization <= 1 && isfinite(wait_time) && wait_time >= 0 &&
                 isfinite(compute_time) && compute_time > 0;
    if (!valid)
        return 0;
    if (wait_time == 0) /* CPU-bound: one spare thread covers a page fault or a short stall */
        return cores == SIZE_MAX ? SIZE_MAX : cores + 1;
    double threads = (double)cores * target_utilization * (wait_time + compute_time) / compute_time;
    /* Round up, but do not let 8.000000001 (floating-point noise) become 9. */
    double rounded = ceil(threads - 1e-9);
    if (rounded < 1)
        return 1;
    /* Finite inputs can still overflow (1e300 waiting per 1e-300 computing);
     * converting a double beyond SIZE_MAX to size_t is undefined: saturate. */
    return rounded >= (double)SIZE_MAX ? SIZE_MAX : (size_t)rounded;
}
