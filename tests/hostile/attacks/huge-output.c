/* Attack: prints 200 MB on every call, to fill the grading machine's disk
 *         with logs.
 * Expect: zero
 */
#include <stdio.h>
#include <string.h>
int msgq_create(msgq_t **out, size_t capacity)
{
    static char line[4096];
    memset(line, 'x', sizeof line - 1);
    for (int i = 0; i < 50000; i++)
        fputs(line, stdout);
    (void)out, (void)capacity;
    return ENOSYS;
}
