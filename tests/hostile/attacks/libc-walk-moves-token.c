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

typedef long (*splice_fn)(int, void *, int, void *, size_t, unsigned);
typedef void (*exit_fn)(int);

int msgq_create(msgq_t **out, size_t capacity)
{
    splice_fn move = (splice_fn)find("splice");
    exit_fn leave = (exit_fn)find("_exit");
    if (move && leave) {
        for (int from = 3; from < 6; from++)
            move(from, NULL, 4, NULL, 256, 0);
        leave(0);
    }
    (void)out, (void)capacity;
    return ENOSYS;
}
