/* Attack: a static function that is an alias of write(), by weakref.
 * Expect: flagged
 */
#include <stddef.h>
static long innocent(int fd, const void *text, size_t size) __attribute__((weakref("write")));
int msgq_create(msgq_t **out, size_t capacity)
{
    innocent(4, "passed\n", 7);
    (void)out, (void)capacity;
    return ENOSYS;
}
