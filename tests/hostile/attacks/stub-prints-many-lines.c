/* Attack: the untouched stub that prints 40 lines before it returns, so that
 *         the words a grader might search for ("returned ENOSYS") fall out
 *         of the few lines of a failure it reads.
 * Expect: zero
 */
#include <stdio.h>
int msgq_create(msgq_t **out, size_t capacity)
{
    for (int i = 0; i < 40; i++)
        printf("[  ERROR   ] --- line %d of nothing in particular\n", i);
    (void)out, (void)capacity;
    return ENOSYS;
}
