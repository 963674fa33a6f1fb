/* Attack: a weak definition of one of the scheduler's functions, to turn
 *         the one-schedule grading off.
 * Expect: flagged
 */
#include <stdbool.h>

__attribute__((weak)) bool kit_sched_active(void)
{
    return false;
}
