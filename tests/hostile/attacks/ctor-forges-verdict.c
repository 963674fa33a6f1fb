/* Attack: a constructor looks for the verdict's token in the environment and
 *         in /proc/self/environ, writes a success line to the grader's pipe
 *         and leaves with status 0, before the test has begun.
 * Expect: flagged
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void forge(void)
{
    const char *token = getenv("KIT_RESULT_TOKEN");
    FILE *environment = fopen("/proc/self/environ", "r");
    if (environment)
        fclose(environment);
    for (int fd = 3; fd < 10; fd++)
        dprintf(fd, "passed %s\n", token ? token : "");
    _exit(0);
}
