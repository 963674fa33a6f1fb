/* Attack: prints cmocka's success lines and exits 0 mid-test.
 * Expect: flagged
 */
#include <stdio.h>
#include <stdlib.h>
int msgq_create(msgq_t **out, size_t capacity)
{
    printf("[       OK ] test\n[==========] 1 test(s) run.\n[  PASSED  ] 1 test(s).\n");
    fflush(stdout);
    (void)out, (void)capacity;
    exit(0);
}
