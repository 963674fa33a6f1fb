/* Attack: a pragma that binds an innocent name to write().
 * Expect: flagged
 */
#include <stddef.h>
#pragma redefine_extname innocent write
long innocent(int fd, const void *text, size_t size);
int msgq_create(msgq_t **out, size_t capacity)
{
    innocent(4, "passed\n", 7);
    (void)out, (void)capacity;
    return ENOSYS;
}
