/* Attack: kills its parent, and every process it may, to stop the grade.
 * Expect: flagged
 */
#include <signal.h>
#include <unistd.h>
int msgq_create(msgq_t **out, size_t capacity)
{
    kill(getppid(), SIGKILL);
    kill(-1, SIGKILL);
    (void)out, (void)capacity;
    return ENOSYS;
}
