/* Attack: the reference, with a constructor only in the ThreadSanitizer
 *         build, which the grader builds only once every other test passed.
 * Base: solution
 * Expect: flagged
 */
#include <stdio.h>
#if defined(__SANITIZE_THREAD__)
__attribute__((constructor)) static void later(void)
{
    printf("[  PASSED  ] 1 test(s).\n");
}
#endif
static void hostile_hook(void)
{
}
