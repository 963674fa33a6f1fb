/**
 * @file bench_explore.c
 * @brief The explorer's speed: schedules per second on each chapter's exploration tests.
 *
 * Every test of a chapter's test_*_explore program runs in a process of its
 * own, as `make explore` runs it, with KIT_EXPLORE_STATS: each search then
 * prints how many schedules it ran and at what speed, on its own clock (the
 * process's start, cmocka's and the test's own set-up are not counted). A
 * test's speed is its schedules over the time its searches took; a
 * chapter's figure is the median of its tests. The tests are the solutions'
 * (build/tests/, which `make bench` builds), with their own strategies and
 * budgets - the schedules a grade runs. Chapter 07 has no exploration tests
 * (its threads talk to a server and other processes).
 *
 * The targets: 100,000 schedules a second on chapter 01 (its schedules are
 * short, 30 to 60 steps), 30,000 on every other chapter (a pool's workers
 * make schedules of 60 to 220 steps).
 */
#define _POSIX_C_SOURCE 200809L
#include "bench_suite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

enum { EXPLORE_ROUNDS = 3, MAX_TESTS = 16, NAME_MAX_LENGTH = 128 };

typedef struct explored_chapter {
    const char *folder;   /* build/tests/<folder>/ */
    const char *program;  /* its exploration tests */
    double target;        /* thousands of schedules a second, at least */
} explored_chapter_t;

static const explored_chapter_t chapters[] = {
    { "00-shared-results", "test_results_explore", 30 }, { "01-monitor-queue", "test_msgq_explore", 100 },
    { "02-blocking-queue", "test_bq_explore", 30 },      { "03-thread-pool", "test_tpool_explore", 30 },
    { "04-starvation", "test_future_explore", 30 },      { "05-master-worker", "test_mw_explore", 30 },
    { "06-keyed-executor", "test_keyed_explore", 30 },   { "08-rwlock", "test_rwl_explore", 30 },
};

/* The tests of a program (`--list`); their number, or -1. */
static int list_tests(const char *program, char (*names)[NAME_MAX_LENGTH], int most)
{
    char command[512];
    snprintf(command, sizeof command, "'%.300s' --list", program);
    FILE *out = popen(command, "r");
    if (out == NULL)
        return -1;
    int n = 0;
    char line[NAME_MAX_LENGTH];
    while (n < most && fgets(line, sizeof line, out)) {
        line[strcspn(line, "\n")] = '\0';
        if (line[0] != '\0')
            snprintf(names[n++], NAME_MAX_LENGTH, "%s", line);
    }
    return pclose(out) == 0 ? n : -1;
}

/* One test's speed in schedules a second: the schedules of its searches over
 * the time they took (each search prints both); -1 if it failed. */
static double test_speed(const char *program, const char *test)
{
    char command[1024];
    snprintf(command, sizeof command, "KIT_EXPLORE_STATS=1 KIT_NO_LOCK_DELAYS=1 '%.300s' --run '%.200s' 2>&1 >/dev/null",
             program, test);
    FILE *out = popen(command, "r");
    if (out == NULL)
        return -1;
    double schedules = 0, seconds = 0;
    char line[1024];
    while (fgets(line, sizeof line, out)) {
        long n;
        double steps, took, speed;
        if (sscanf(line, "[ explore  ] %*s %ld schedules of %lf steps on average in %lf s: %lf schedules/s", &n,
                   &steps, &took, &speed) != 4)
            continue;
        schedules += (double)n;
        seconds += speed > 0 ? (double)n / speed : took; /* (the speed has more digits than the time) */
    }
    int status = pclose(out);
    if (status != 0 || seconds <= 0) {
        fprintf(stderr, "kit-bench: %s --run %s %s\n", program, test,
                status != 0 ? "failed: run make explore to see why" : "printed no search");
        return -1;
    }
    return schedules / seconds;
}

/* A variant's run: the median over the chapter's tests, in thousands of schedules a second. */
static double run_explorer(const void *params, long arg)
{
    (void)params;
    const explored_chapter_t *chapter = &chapters[arg];
    char program[200];
    snprintf(program, sizeof program, "build/tests/%s/%s", chapter->folder, chapter->program);
    static char names[MAX_TESTS][NAME_MAX_LENGTH];
    int count = list_tests(program, names, MAX_TESTS);
    if (count <= 0) {
        fprintf(stderr, "kit-bench: %s lists no tests (make bench builds it: is cmocka installed?)\n", program);
        return -1;
    }
    bench_series_t speeds = { .count = 0 };
    for (int i = 0; i < count; i++) {
        double speed = test_speed(program, names[i]);
        if (speed < 0)
            return -1;
        speeds.values[speeds.count++] = speed / 1e3;
    }
    return bench_median(&speeds);
}

static double run_target(const void *params, long arg)
{
    (void)params;
    return chapters[arg].target;
}

static int explore_chapter(int index, bench_result_t *out)
{
    static char ids[sizeof chapters / sizeof chapters[0]][32]; /* the result keeps its id: it outlives the spec */
    char title[BENCH_TITLE_MAX];
    snprintf(ids[index], sizeof ids[index], "explore-%.2s", chapters[index].folder);
    snprintf(title, sizeof title,
             "Explorer, chapter %.2s: schedules a second on its exploration tests (the median of the tests)",
             chapters[index].folder);
    bench_spec_t spec = {
        .id = ids[index],
        .title = title,
        .unit = "k schedules/s",
        .variants = { { "explorer", run_explorer, index }, { "target", run_target, index } },
        .comparisons = { { "explorer / target", 0, 1, BENCH_RATIO, true, 1.0 } },
    };
    return bench_run(&spec, EXPLORE_ROUNDS, out);
}

#define EXPLORED_CHAPTER(number, index)                                                                    \
    int bench_explore_##number(const bench_options_t *o, bench_result_t *out)                              \
    {                                                                                                      \
        (void)o;                                                                                           \
        return explore_chapter(index, out);                                                                \
    }
EXPLORED_CHAPTER(00, 0)
EXPLORED_CHAPTER(01, 1)
EXPLORED_CHAPTER(02, 2)
EXPLORED_CHAPTER(03, 3)
EXPLORED_CHAPTER(04, 4)
EXPLORED_CHAPTER(05, 5)
EXPLORED_CHAPTER(06, 6)
EXPLORED_CHAPTER(08, 7)
