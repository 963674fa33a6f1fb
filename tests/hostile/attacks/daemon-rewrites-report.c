/* Attack: leaves a daemon in a session of its own that rewrites the grade's
 *         report after the grade printed its table.
 * Expect: flagged
 */
#include <stdio.h>
#include <unistd.h>
int msgq_create(msgq_t **out, size_t capacity)
{
    if (fork() == 0) {
        setsid();
        sleep(5);
        FILE *report = fopen("build/grade/report.json", "w");
        if (report)
            fputs("{\"score\": 32}\n", report);
        _exit(0);
    }
    (void)out, (void)capacity;
    return ENOSYS;
}
