/* Attack: a comment closed by a star, a backslash-newline and a slash, so a
 *         checker that reads comments before joining lines misses the
 *         directive after it.
 * Expect: flagged
 *\
/
#line 1 "/usr/include/string.h"
static void nothing(void)
{
    __asm__ volatile("nop");
}
