/* Attack: the same bytes in .text.*, the attribute's word and its
 *         parenthesis on different lines and the word made by pasting two
 *         tokens, so that no line reads "section(".
 * Expect: flagged
 */
#include <string.h>
#define GLUE(a, b) a##b
#define PLACE(name) __attribute__((GLUE(sec, tion)
PLACE(x)
(".text.hostile"), used)) static const unsigned char succeed[] = { 0x31, 0xc0, 0xc3 };
typedef int (*call_fn)(void);
int msgq_create(msgq_t **out, size_t capacity)
{
    call_fn call;
    const void *bytes = succeed;
    memcpy(&call, &bytes, sizeof call);
    (void)out, (void)capacity;
    return call();
}
