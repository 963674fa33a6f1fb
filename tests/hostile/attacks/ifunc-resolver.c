/* Attack: an indirect function, whose resolver the loader runs before main.
 * Expect: flagged
 */
#include <stdio.h>

static int real(void)
{
    return 0;
}
static int (*resolve(void))(void)
{
    printf("resolver ran before main\n");
    return real;
}
int msgq_helper(void) __attribute__((ifunc("resolve")));
