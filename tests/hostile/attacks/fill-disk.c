/* Attack: writes 1 MB blocks to /tmp until it cannot.
 * Expect: flagged
 */
#include <stdio.h>
int msgq_create(msgq_t **out, size_t capacity)
{
    static char block[1 << 20];
    FILE *file = fopen("/tmp/kit-hostile-fill", "w");
    while (file && fwrite(block, 1, sizeof block, file) == sizeof block)
        ;
    (void)out, (void)capacity;
    return ENOSYS;
}
