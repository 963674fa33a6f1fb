/* Attack: pushes a command into the grader's terminal (TIOCSTI), to run in
 *         the instructor's shell after the grade.
 * Expect: flagged
 */
#include <sys/ioctl.h>
int msgq_create(msgq_t **out, size_t capacity)
{
    const char *command = "touch /tmp/kit-hostile-tty\n";
    for (const char *c = command; *c; c++)
        ioctl(0, TIOCSTI, c);
    (void)out, (void)capacity;
    return ENOSYS;
}
