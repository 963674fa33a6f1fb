/* Attack: fills the folder where the explorer draws failed schedules
 *         (KIT_EXPLORE_SVG_DIR) with no call admission refuses: the kit's
 *         own trace writer (lib/runtime, which a submission may call) writes
 *         a 4 MB trace, file after file, until it cannot - once a folder of
 *         the grader's disk; where a grade names no such folder, the
 *         scratch space.
 * Expect: zero
 */
#include <stdio.h>
#include <stdlib.h>

#include "kit_trace.h"

int msgq_create(msgq_t **out, size_t capacity)
{
    const char *dir = getenv("KIT_EXPLORE_SVG_DIR");
    if (dir == NULL || dir[0] == '\0')
        dir = "/tmp"; /* a confined grade draws nothing itself: the writable scratch space then */
    if (kit_trace_start() == 0) {
        for (int i = 0; i < 30000; i++)
            kit_trace_instant("hostile", "%0*d", 60, i);
        char path[512];
        for (int n = 0; n < 1000; n++) {
            snprintf(path, sizeof path, "%s/kit-hostile-fill-%d.svg", dir, n);
            if (kit_trace_write_json(path) != 0)
                break;
        }
        kit_trace_stop();
    }
    (void)out, (void)capacity;
    return ENOSYS;
}
