/* Attack: forks for ever.
 * Expect: flagged
 */
#include <unistd.h>
int msgq_create(msgq_t **out, size_t capacity)
{
    for (;;)
        fork();
    (void)out, (void)capacity;
    return ENOSYS;
}
