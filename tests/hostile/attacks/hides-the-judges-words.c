/* Attack: finds write and send in the C library's symbol table (from the
 *         address of rand), leaves the shared log with a zero byte and an
 *         unfinished line on it, then sends the judge a packet that is no
 *         message. The judge's "[ integrity ]" line lands after the zero
 *         byte, in the middle of the unfinished line: read as text up to the
 *         first zero, or only at a line's start, it was unseen and the test
 *         failed unflagged. The grader reads the log whole: flagged.
 * Expect: flagged
 * Judged: yes
 * Uses: libc_symbols
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef long (*write_fn)(int, const void *, size_t);
typedef long (*send_fn)(int, const void *, size_t, int);

int msgq_create(msgq_t **out, size_t capacity)
{
    write_fn put = (write_fn)find("write");
    send_fn post = (send_fn)find("send");
    static const char hide[] = "\0\0\0 an unfinished line";
    for (int fd = 1; put && fd <= 2; fd++)
        put(fd, hide, sizeof hide - 1);
    static char junk[64];
    memset(junk, 0x41, sizeof junk);
    for (int fd = 3; post && fd < 100; fd++)
        post(fd, junk, sizeof junk, 0x40 /* MSG_DONTWAIT */);
    (void)out, (void)capacity;
    return ENOSYS;
}
