/* Attack: from the address of rand (an allowed import) walks back to the C
 *         library's ELF header, finds splice and _exit in its symbol table,
 *         moves the pass token from the descriptor it came in on to the
 *         result's, then exits: no import admission could refuse. In one
 *         process with the harness it passed every test; judged, the code
 *         runs in the subject, which holds no token and whose filter kills
 *         it at splice.
 * Expect: flagged
 * Judged: yes
 * Uses: libc_symbols
 */
#include <stdint.h>
#include <stdlib.h>

int msgq_create(msgq_t **out, size_t capacity)
{
    move_token_and_leave();
    (void)out, (void)capacity;
    return ENOSYS;
}
