/**
 * @file sizing.c
 * @brief Chapter 04 exercise: the source document's thread-count formulas.
 *
 * Read "Sizing a pool" in chapters/04-starvation/README.md and implement
 * kit_threads_for(); `make grade CH=04` scores it. It returns 0 ("invalid")
 * until you do.
 */
#define _POSIX_C_SOURCE 200809L
#include "sizing.h"

#include <math.h>
#include <stdbool.h>

size_t kit_threads_for(size_t cores, double target_utilization, double wait_time, double compute_time)
{
    /* TODO:
     * 1. Refuse bad input with 0: cores < 1; a utilization that is not a
     *    finite number in (0, 1]; a wait time that is negative; a compute
     *    time that is not > 0; NaN or infinity anywhere (isfinite()).
     *    Careful: every comparison with NaN is false, so test "is valid",
     *    not "is invalid".
     * 2. No waiting at all (wait_time == 0): CPU-bound, cores + 1.
     * 3. Otherwise cores x target_utilization x (wait + compute) / compute,
     *    rounded UP (ceil) - but 3 x 0.4 x (0.9 + 0.1) / 0.1 is
     *    12.000000000000002 in floating point, and must still give 12:
     *    subtract a tiny epsilon before rounding. Never fewer than 1.
     * 4. Too many to count (1e300 waiting per 1e-300 computing, or
     *    cores == SIZE_MAX): return SIZE_MAX. Converting a double larger
     *    than SIZE_MAX to size_t is undefined behaviour, and cores + 1 wraps. */
    (void)cores;
    (void)target_utilization;
    (void)wait_time;
    (void)compute_time;
    return 0;
}
