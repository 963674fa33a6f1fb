/* Attack: machine code as a byte array placed in a .text.* section (which
 *         the linker gathers into the program's executable .text), called
 *         through a cast: "xor eax, eax; ret" makes every call succeed.
 * Expect: flagged
 */
#include <string.h>
__attribute__((section(".text.hostile"), used)) static const unsigned char succeed[] = { 0x31, 0xc0, 0xc3 };
typedef int (*call_fn)(void);
int msgq_create(msgq_t **out, size_t capacity)
{
    call_fn call;
    const void *bytes = succeed;
    memcpy(&call, &bytes, sizeof call);
    (void)out, (void)capacity;
    return call();
}
