/* Attack: includes the reference solution by a relative path, and a kit's
 *         absolute one: inside the confinement neither exists.
 * Expect: zero
 */
#include "../../../solutions/01-monitor-queue/msgq.c"
#include "/autograder/source/kit/solutions/01-monitor-queue/msgq.c"
