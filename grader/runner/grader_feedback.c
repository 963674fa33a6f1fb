/**
 * @file grader_feedback.c
 * @brief Feedback worth no points: a passed test's wake-ups beside the
 *        reference's.
 *
 * A design may be correct and still wake threads that find nothing to do
 * (one condition variable and a broadcast on every change). Where a
 * chapter's header promises an efficiency, a test grades it; everywhere
 * else the grade shows the count beside the reference's, from
 * tests/wakeups.tsv (`tools/regenerate wakeups` measures the reference with
 * the grade's seed): "a thread your code woke found nothing to do 31 times
 * over this test's 300 schedules; the reference's 0".
 */
#define _POSIX_C_SOURCE 200809L
#include "grader.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

enum { MAX_ROWS = 512 };

/* One line of tests/wakeups.tsv: chapter, test, schedules, wake-ups, futile. */
struct reference_row {
    char chapter[64], test[128];
    long schedules, wakeups, futile;
};

static struct reference_row rows[MAX_ROWS];
static int nrows;

int load_reference_wakeups(const char *path)
{
    FILE *in = fopen(path, "r");
    if (in == NULL)
        return -1;
    char line[512];
    while (nrows < MAX_ROWS && fgets(line, sizeof line, in)) {
        struct reference_row *row = &rows[nrows];
        if (line[0] != '#' && sscanf(line, "%63[^\t]\t%127[^\t]\t%ld\t%ld\t%ld", row->chapter, row->test,
                                     &row->schedules, &row->wakeups, &row->futile) == 5 && row->schedules > 0)
            nrows++;
    }
    fclose(in);
    return nrows;
}

static const struct reference_row *reference_of(const struct test_case *test)
{
    for (int i = 0; i < nrows; i++)
        if (strcmp(rows[i].chapter, test->chapter) == 0 && strcmp(rows[i].test, test->name) == 0)
            return &rows[i];
    return NULL;
}

/* Said only when clearly more than the reference's, scaled to the same
 * number of schedules (a search that ran to its end early runs fewer): half
 * as many again and three more, so that a design that wakes about as often
 * hears nothing. */
void compare_wakeups(struct test_case *test)
{
    const struct reference_row *reference = reference_of(test);
    if (test->verdict != V_PASSED || test->schedules <= 0 || reference == NULL)
        return;
    double scaled = (double)reference->futile * (double)test->schedules / (double)reference->schedules;
    if ((double)test->futile <= 1.5 * scaled + 3)
        return;
    if (test->schedules == 1 && reference->schedules == 1)
        textf(test->feedback, sizeof test->feedback,
              "a thread your code woke found nothing to do and slept again %ld times on this test's schedule; in "
              "the reference, %ld times - wake only a thread that can go on", test->futile, reference->futile);
    else
        textf(test->feedback, sizeof test->feedback,
              "a thread your code woke found nothing to do and slept again %ld times over this test's %ld "
              "schedules; the reference, about %.0f times over as many - wake only a thread that can go on",
              test->futile, test->schedules, scaled);
}
