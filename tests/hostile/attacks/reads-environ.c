/* Attack: reads the environment through environ, not getenv.
 * Expect: flagged
 */
#include <stdio.h>
extern char **environ;
int msgq_create(msgq_t **out, size_t capacity)
{
    for (char **variable = environ; *variable; variable++)
        printf("%s\n", *variable);
    (void)out, (void)capacity;
    return ENOSYS;
}
