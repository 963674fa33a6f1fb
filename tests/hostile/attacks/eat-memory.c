/* Attack: allocates and touches 8 GB, to take the memory of the grades
 *         beside it.
 * Expect: zero
 */
#include <stdlib.h>
#include <string.h>
int msgq_create(msgq_t **out, size_t capacity)
{
    for (int i = 0; i < 128; i++) {
        char *block = malloc(64 << 20);
        if (block == NULL)
            break;
        memset(block, 1, 64 << 20);
    }
    (void)out, (void)capacity;
    return ENOSYS;
}
