/* Attack: finds send in the C library's symbol table (from the address of
 *         rand) and floods the judge's channels with packets that are no
 *         message, then goes on as a stub. The judge reads a private copy of
 *         each packet and bounds it: the test fails, flagged; the grader
 *         goes on.
 * Expect: flagged
 * Judged: yes
 * Uses: libc_symbols
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef long (*send_fn)(int, const void *, size_t, int);

int msgq_create(msgq_t **out, size_t capacity)
{
    send_fn post = (send_fn)find("send");
    static char junk[70000];
    memset(junk, 0x41, sizeof junk);
    for (int round = 0; post && round < 64; round++)
        for (int fd = 30; fd < 100; fd++)
            post(fd, junk, (size_t)(round * 997 % (int)sizeof junk), 0x40 /* MSG_DONTWAIT */);
    (void)out, (void)capacity;
    return ENOSYS;
}
