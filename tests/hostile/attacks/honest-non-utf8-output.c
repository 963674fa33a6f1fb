/* Not an attack: the reference, printing a byte that is not UTF-8 to stderr
 *         on every create. It must score full marks everywhere, Gradescope's
 *         results.json among them.
 * Base: solution
 * Expect: full
 */
#include <stdio.h>
static void hostile_hook(void)
{
    fprintf(stderr, "debug \xff\xfe created a queue\n");
}
