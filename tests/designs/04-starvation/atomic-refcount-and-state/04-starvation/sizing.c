/**
 * @file sizing.c
 * @brief Chapter 04, another design of the sizing rule: validate each
 *        argument by its own rule, then compute with the wait/compute ratio.
 *
 * threads = cores x utilization x (1 + wait / compute) - the same formula
 * as cores x utilization x (wait + compute) / compute, written the way the
 * source document reads it aloud ("one thread, plus one for every multiple
 * of compute time spent waiting"). Rounded up, with anything less than 1e-9
 * above a whole number taken as floating-point noise; at least 1; SIZE_MAX
 * when the count does not fit (an infinite ratio included).
 */
#define _POSIX_C_SOURCE 200809L
#include "sizing.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

static const double NOISE = 1e-9;

static bool is_fraction_of_cores(double utilization)
{
    return isfinite(utilization) && utilization > 0.0 && utilization <= 1.0;
}

static bool is_duration(double t)
{
    return isfinite(t) && t >= 0.0;
}

/* A finite, non-negative count rounded up to size_t, saturating. */
static size_t to_count(double threads)
{
    double whole = ceil(threads - NOISE);
    if (whole < 1.0)
        return 1;
    if (whole >= (double)SIZE_MAX) /* converting a larger double to size_t is undefined */
        return SIZE_MAX;
    return (size_t)whole;
}

size_t kit_threads_for(size_t cores, double target_utilization, double wait_time, double compute_time)
{
    if (cores == 0 || !is_fraction_of_cores(target_utilization) || !is_duration(wait_time) ||
        !is_duration(compute_time) || compute_time == 0.0)
        return 0;
    if (wait_time == 0.0) /* CPU-bound: one spare thread for page faults and short stalls */
        return cores < SIZE_MAX ? cores + 1 : SIZE_MAX;
    double ratio = wait_time / compute_time; /* may overflow to infinity: saturates below */
    return to_count((double)cores * target_utilization * (1.0 + ratio));
}
