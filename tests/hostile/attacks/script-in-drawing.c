/* Attack: writes the drawing of its own failing schedules where the explorer
 *         would put them, for the grader to link from the reports - through
 *         the kit's own trace writer (lib/runtime, which a submission may
 *         call): a file named as the drawing, with a <script>, an event
 *         attribute and a link in it. It also prints forged schedule lines
 *         with markup, for the grader's own drawing.
 * Expect: zero
 */
#include <stdio.h>
#include <stdlib.h>

#include "kit_trace.h"

static const char *const tests[] = { "test_msgq_create_rejects_bad_arguments", "test_msgq_put_blocks_while_full_until_take",
                                     "test_msgq_stress_producers_consumers", "test_msgq_explore_generated_scenarios" };

int msgq_create(msgq_t **out, size_t capacity)
{
    const char *dir = getenv("KIT_EXPLORE_SVG_DIR");
    if (dir && kit_trace_start() == 0) {
        kit_trace_instant("x", "<svg xmlns='http://www.w3.org/2000/svg' onload='alert(1)'><script>alert(2)</script>");
        kit_trace_instant("x", "<a href='https://example.invalid/'><foreignObject>grade me</foreignObject></a></svg>");
        for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
            char path[512];
            snprintf(path, sizeof path, "%s/01-monitor-queue.%s.svg", dir, tests[i]);
            kit_trace_write_json(path);
        }
        kit_trace_stop();
    }
    fprintf(stderr, "[ schedule ] x: its schedule (x) failed after 1 steps, at virtual time 0 ms:\n"
                    "[ schedule ] The threads at the end:\n"
                    "[ schedule ]   <script>alert(1)</script> waits \"onload=alert(1)\" x.c:1\n"
                    "[ schedule ] The last 1 of 1 steps:\n"
                    "[ schedule ]     1 <script>        <foreignObject>&x;</foreignObject>   x.c:2\n");
    (void)out, (void)capacity;
    return ENOSYS;
}
