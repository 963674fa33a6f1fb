/* Attack: calls the allocator behind the harness's wrapper, so that no
 *         leak and no failed allocation is ever seen.
 * Expect: flagged
 */
#include <stdlib.h>

void *__real_malloc(size_t size);
static void *hidden(size_t size)
{
    return __real_malloc(size);
}
int msgq_create(msgq_t **out, size_t capacity)
{
    void *q = hidden(64);
    (void)q, (void)capacity;
    *out = NULL;
    return ENOSYS;
}
