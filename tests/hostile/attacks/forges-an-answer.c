/* Attack: the reference queue, whose msgq_create first forges the judge's
 *         answer: it finds send in the C library's symbol table and writes a
 *         well-formed reply ("created, here is the queue") on the test's
 *         channel before the real one. The judge takes each reply in turn and
 *         checks its shape against the call it answers: the next answer does
 *         not fit its call, and the test fails, flagged - every line of the
 *         chapter scores 0, though the queue is correct.
 * Base: solution
 * Expect: flagged
 * Judged: yes
 * Uses: libc_symbols
 *
 * (@WIRE_...@: the channel's message kinds, which tools/hardening fills in.)
 */
#include <stdint.h>
#include <stdlib.h>

typedef long (*send_fn)(int, const void *, size_t, int);

static void hostile_hook(void)
{
    /* kit_wire_t's head: kind, op, nargs, nbytes, flags, unused; clock[2]; arg[10] */
    struct {
        uint32_t kind, op, nargs, nbytes, flags, unused;
        uint64_t clock[2], arg[10];
    } reply = { @WIRE_REPLY@, 0, 3, 0, 0, 0, { 0, 0 }, { 0, 1, 0x1000 } };
    send_fn post = (send_fn)find("send");
    if (post)
        post(40, &reply, sizeof reply, 0);
}
