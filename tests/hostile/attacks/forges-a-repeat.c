/* Attack: the reference queue, whose msgq_create, once an exploration has
 *         made it a few hundred times (only an exploration's body does),
 *         slips one forged entry into the batches the subject sends the
 *         judge: "this schedule repeats one sent whole before", which the
 *         judge counts without running its copy of the body again. A subject
 *         that could add schedules so could pad a search it cut short. The
 *         judge meets the entry where the schedule it replays wants its next
 *         answer, or before any schedule was written down, or, between two
 *         schedules, counts one more than the search's end says it ran:
 *         each way the test fails, flagged - every line of the chapter
 *         scores 0, though the queue is correct.
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
     * arg[10]; then the batch's one entry: its head alone (a repeat has no words) */
    struct {
        uint32_t kind, op, nargs, nbytes, flags, unused;
        uint64_t clock[2], arg[10];
        uint32_t channel, answer, entry_kind, entry_op, entry_nargs, entry_nbytes, entry_flags, entry_unused;
    } batch = { @WIRE_TRANSCRIPT_BATCH@, 0, 0, 32, 0, 0, { 0, 0 }, { 0 }, 0, 1, @WIRE_TRANSCRIPT_REPEAT@, 0, 0, 0, 0, 0 };
    send_fn post = (send_fn)find("send");
    if (post)
        post(40, &batch, sizeof batch, 0);
}
