/* Attack: a destructor that rewrites the grade's report at exit.
 * Expect: flagged
 */
#include <stdio.h>

__attribute__((destructor)) static void rewrite(void)
{
    FILE *report = fopen("build/grade/report.json", "w");
    if (report) {
        fputs("{\"score\": 32}\n", report);
        fclose(report);
    }
}
