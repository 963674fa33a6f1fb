/**
 * @file sizing.c
 * @brief Chapter 04 solution: the source document's thread-count formulas.
 */
#define _POSIX_C_SOURCE 200809L
#include "sizing.h"

#include <math.h>
#include <stdbool.h>

size_t kit_threads_for(size_t cores, double target_utilization, double wait_time, double compute_time)
{
    bool valid = cores >= 1 && isfinite(target_utilization) && target_utilization > 0 &&
                 target_utilization <= 1 && isfinite(wait_time) && wait_time >= 0 &&
                 isfinite(compute_time) && compute_time > 0;
    if (!valid)
        return 0;
    if (wait_time == 0)
        return cores + 1; /* CPU-bound: one spare thread covers a page fault or a short stall */
    double threads = (double)cores * target_utilization * (wait_time + compute_time) / compute_time;
    /* Round up, but do not let 8.000000001 (floating-point noise) become 9. */
    double rounded = ceil(threads - 1e-9);
    return rounded < 1 ? 1 : (size_t)rounded;
}
