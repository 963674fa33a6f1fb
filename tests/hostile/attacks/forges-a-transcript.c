/* Attack: the reference queue, whose msgq_create, once an exploration has
 *         made it a few hundred times (only an exploration's body does),
 *         slips a forged transcript into the batches the subject sends the
 *         judge: it finds send in the C library's symbol table and writes a
 *         well-formed batch whose one entry answers the test's main thread
 *         ("created, here is the queue"). The judge replays its own copy of
 *         the body against each entry and meets a request where the forgery
 *         put an answer, or an answer of the wrong shape: the test fails,
 *         flagged - every line of the chapter scores 0, though the queue is
 *         correct.
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
    static int calls;
    if (++calls != 300)
        return;
    /* kit_wire_t's head: kind, op, nargs, nbytes, flags, unused; clock[2];
     * arg[10]; then the batch's one entry: its head, and one word */
    struct {
        uint32_t kind, op, nargs, nbytes, flags, unused;
        uint64_t clock[2], arg[10];
        uint32_t channel, answer, entry_kind, entry_op, entry_nargs, entry_nbytes, entry_flags, entry_unused;
        uint64_t word;
    } batch = { @WIRE_TRANSCRIPT_BATCH@, 0, 0, 40, 0, 0, { 0, 0 }, { 0 }, 0, 1, @WIRE_REPLY@, 0, 1, 0, 0, 0, 0 };
    send_fn post = (send_fn)find("send");
    if (post)
        post(40, &batch, sizeof batch, 0);
}
