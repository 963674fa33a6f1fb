/* Attack: the #line directive spelt with a trigraph (??= is #), which
 *         ISO C modes read.
 * Expect: flagged
 */
??=line 1 "/usr/include/stdlib.h"
static void nothing(void)
{
    __asm__ volatile("nop");
}
