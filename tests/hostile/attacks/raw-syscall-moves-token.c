/* Attack: machine code of its own in an executable section (.text.*): two
 *         splice system calls that move the pass token and the race token
 *         from the descriptors a test process is given (3 and 5) to the
 *         result's (4), then exit_group(0) - no function of any library, so
 *         no import or symbol to refuse. Admission refuses the section
 *         attribute. With admission's rules on sections off
 *         (KIT_ADMIT_SECTIONS_UNCHECKED, make hardening's check that the
 *         judge alone holds), in one process it would pass every test; judged,
 *         the code runs in the subject, which holds no token and whose
 *         filter kills it at the first splice: the test fails, flagged.
 * Expect: flagged
 * Judged: yes
 */
#include <string.h>

#if defined(__x86_64__)
/* splice(in, NULL, 4, NULL, 256, 0) for in = 3, then 5; exit_group(0). */
#define MOVE_FROM(fd) 0xbf, fd, 0, 0, 0, 0x31, 0xf6, 0xba, 4, 0, 0, 0, 0x45, 0x31, 0xd2, \
                      0x41, 0xb8, 0, 1, 0, 0, 0x45, 0x31, 0xc9, 0xb8, 0x13, 1, 0, 0, 0x0f, 0x05
__attribute__((section(".text.hostile"), used)) static const unsigned char move_tokens[] = {
    MOVE_FROM(3), MOVE_FROM(5), 0x31, 0xff, 0xb8, 0xe7, 0, 0, 0, 0x0f, 0x05, 0xc3
};
#else
__attribute__((section(".text.hostile"), used)) static const unsigned char move_tokens[] = { 0 };
#endif
typedef void (*code_fn)(void);

int msgq_create(msgq_t **out, size_t capacity)
{
    code_fn code;
    const void *bytes = move_tokens;
    memcpy(&code, &bytes, sizeof code);
    (void)out, (void)capacity;
    code();
    return ENOSYS;
}
