/* Attack: a #line directive that passes the next lines off as a system
 *         header's, where admission would let asm through.
 * Expect: flagged
 */
#line 1 "/usr/include/stdio.h"
static void nothing(void)
{
    __asm__ volatile("nop");
}
