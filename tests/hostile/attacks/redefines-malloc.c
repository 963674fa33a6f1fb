/* Attack: its own malloc and free, around the leak checks of the harness.
 * Expect: flagged
 */
#include <stddef.h>

static char arena[1 << 20];
static size_t used;
void *malloc(size_t size)
{
    used += (size + 15) & ~(size_t)15;
    return used <= sizeof arena ? arena + used - size : NULL;
}
void free(void *block)
{
    (void)block;
}
