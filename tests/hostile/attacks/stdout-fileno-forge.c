/* Attack: points stdout at the grader's result pipe (the descriptor after
 *         the token's) by the FILE's own field, and prints a success line:
 *         without the token, which it never sees, it passes nothing.
 * Expect: zero
 */
#include <stdio.h>
int msgq_create(msgq_t **out, size_t capacity)
{
    for (int fd = 3; fd < 8; fd++) {
        stdout->_fileno = fd;
        printf("passed 00000000000000000000000000000000\n");
        fflush(stdout);
    }
    stdout->_fileno = 1;
    (void)out, (void)capacity;
    return ENOSYS;
}
