/* Attack: defines cmocka's group runner, which the test main calls, to
 *         report that every test passed.
 * Expect: flagged
 */
#include <stddef.h>

struct CMUnitTest;
int _cmocka_run_group_tests(const char *name, const struct CMUnitTest *tests, size_t count, void *setup,
                            void *teardown)
{
    (void)name, (void)tests, (void)count, (void)setup, (void)teardown;
    return 0;
}
