/* Not an attack: the reference, with printf debugging left in, to stdout and
 *         to stderr, and a static helper and static data of its own.
 * Base: solution
 * Expect: full
 */
#include <stdio.h>
static int created;
static void hostile_hook(void)
{
    created++;
    printf("debug: %d queues created\n", created);
    fprintf(stderr, "debug: created one more\n");
}
