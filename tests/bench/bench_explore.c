/**
 * @file bench_explore.c
 * @brief The explorer's speed: schedules per second on each chapter's exploration tests.
 *
 * Every test of a chapter's test_*_explore program runs in a process of its
 * own, as `make explore` runs it, with KIT_EXPLORE_STATS: each search then
 * prints how many schedules it ran and at what speed, on its own clock (the
 * process's start, cmocka's and the test's own set-up are not counted). A
 * test's speed is its schedules over the time its searches took; a
 * chapter's figure is the median of its tests. The tests are the solutions',
 * with their own strategies and budgets - the schedules a grade runs.
 * Chapter 07 has no exploration tests (its threads talk to a server and
 * other processes).
 *
 * Two builds of them: "explorer" is the explorer itself, every chapter in
 * one process (build/bench-explorer/, which `make bench` builds with no
 * chapter judged); "as graded" is build/tests/, where a judged chapter's
 * schedules are also sent to the judge and replayed there - the price of a
 * verdict the submission cannot write, which docs/grading.md weighs against
 * a grading's time. The target is the explorer's.
 *
 * The targets: 100,000 schedules a second on chapter 01 (its schedules are
 * short, 30 to 60 steps), 30,000 on every other chapter (a pool's workers
 * make schedules of 60 to 220 steps).
 *
 * And what one step costs it: a switch between two of the explorer's
 * contexts (kit_sched_context.c, linked in), against the hand-over between
 * two threads through semaphores that the explorer used to make, in its
 * best case (both threads on one CPU).
 */
#define _GNU_SOURCE /* CPU affinity, for the hand-over's best case */
#include "bench_suite.h"

#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "../../grader/explorer/kit_sched_internal.h"
#include "kit_time.h"

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

/* The median over the tests of @p program, in thousands of schedules a second. */
static double median_speed(const char *program)
{
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

enum { CHAPTERS = sizeof chapters / sizeof chapters[0] };
static double explorer_speed[CHAPTERS]; /* this round's "explorer" figure, for a chapter graded in one process */

/* The explorer in one process. */
static double run_explorer(const void *params, long arg)
{
    (void)params;
    char program[200];
    snprintf(program, sizeof program, "build/bench-explorer/tests/%s/%s", chapters[arg].folder, chapters[arg].program);
    explorer_speed[arg] = median_speed(program);
    return explorer_speed[arg];
}

/* As a grade runs it: judged if the chapter is (its program has a subject
 * beside it); else the same program as the explorer's, not run twice. */
static double run_graded(const void *params, long arg)
{
    (void)params;
    char program[200], subject[220];
    snprintf(program, sizeof program, "build/tests/%s/%s", chapters[arg].folder, chapters[arg].program);
    snprintf(subject, sizeof subject, "%s.subject", program);
    FILE *judged = fopen(subject, "r");
    if (judged == NULL)
        return explorer_speed[arg];
    fclose(judged);
    return median_speed(program);
}

static double run_target(const void *params, long arg)
{
    (void)params;
    return chapters[arg].target;
}

static int explore_chapter(int index, bench_result_t *out)
{
    static char ids[CHAPTERS][32]; /* the result keeps its id: it outlives the spec */
    char title[BENCH_TITLE_MAX];
    snprintf(ids[index], sizeof ids[index], "explore-%.2s", chapters[index].folder);
    snprintf(title, sizeof title,
             "Explorer, chapter %.2s: schedules a second on its exploration tests (the median of the tests)",
             chapters[index].folder);
    bench_spec_t spec = {
        .id = ids[index],
        .title = title,
        .unit = "k schedules/s",
        .variants = { { "explorer (one process)", run_explorer, index }, { "target", run_target, index },
                      { "as graded (judged: replayed)", run_graded, index } },
        .comparisons = { { "explorer / target", 0, 1, BENCH_RATIO, true, 1.0 },
                         { "as graded / explorer", 2, 0, BENCH_RATIO, false, 0 } },
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

/* ---- One switch -------------------------------------------------------------------- */

enum { SWITCHES = 2000000, HAND_OVERS = 100000 };

/* The explorer's allocator calls, outside a test program (no link-time wrappers). */
void *__real_malloc(size_t size);
void __real_free(void *block);
void *__real_malloc(size_t size)
{
    return malloc(size);
}
void __real_free(void *block)
{
    free(block);
}

static struct sched_context ping, pong;
static double ping_seconds;

/* Two contexts switch to each other: SWITCHES round trips from ping. */
static void run_ping(void *unused)
{
    (void)unused;
    sched_context_started();
    int64_t start = kit_now_ns();
    for (long i = 0; i < SWITCHES; i++)
        sched_context_switch(&ping, &pong, false);
    ping_seconds = (double)(kit_now_ns() - start) / 1e9;
    sched_context_switch(&ping, sched_runner_context(), false);
}

static void run_pong(void *unused)
{
    (void)unused;
    sched_context_started();
    for (;;)
        sched_context_switch(&pong, &ping, false);
}

/* On a thread of its own, as the explorer's runner: the two contexts, then back. */
static void *switching(void *failed)
{
    char why[256];
    if (!sched_contexts_begin(why, sizeof why) || !sched_context_make(&ping, 0, run_ping, NULL) ||
        !sched_context_make(&pong, 0, run_pong, NULL)) {
        *(bool *)failed = true;
        return NULL;
    }
    sched_context_switch(sched_runner_context(), &ping, false);
    return NULL;
}

/* Nanoseconds one way. (The contexts are left parked: the pool keeps their stacks.) */
static double run_switch(const void *params, long arg)
{
    (void)params, (void)arg;
    pthread_t runner;
    bool failed = false;
    if (pthread_create(&runner, NULL, switching, &failed) != 0 || pthread_join(runner, NULL) != 0 || failed) {
        fprintf(stderr, "kit-bench: the explorer's contexts could not be made\n");
        return -1;
    }
    return ping_seconds / SWITCHES / 2 * 1e9;
}

static sem_t there, back;

static void *hand_back(void *unused)
{
    (void)unused;
    for (long i = 0; i < HAND_OVERS; i++) {
        sem_wait(&there);
        sem_post(&back);
    }
    return NULL;
}

/* Nanoseconds one way, both threads on the CPU this one runs on. */
static double run_hand_over(const void *params, long arg)
{
    (void)params, (void)arg;
    cpu_set_t all, one;
    bool pinned = sched_getaffinity(0, sizeof all, &all) == 0 && sched_getcpu() >= 0;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    if (pinned)
        sched_setaffinity(0, sizeof one, &one);
    sem_init(&there, 0, 0);
    sem_init(&back, 0, 0);
    pthread_t other;
    if (pthread_create(&other, NULL, hand_back, NULL) != 0)
        return -1;
    int64_t start = kit_now_ns();
    for (long i = 0; i < HAND_OVERS; i++) {
        sem_post(&there);
        sem_wait(&back);
    }
    double seconds = (double)(kit_now_ns() - start) / 1e9;
    pthread_join(other, NULL);
    sem_destroy(&there);
    sem_destroy(&back);
    if (pinned)
        sched_setaffinity(0, sizeof all, &all);
    return seconds / HAND_OVERS / 2 * 1e9;
}

int bench_explore_switch(const bench_options_t *o, bench_result_t *out)
{
    (void)o;
    bench_spec_t spec = {
        .id = "explore-switch",
        .title = "Explorer: one step's switch, between two contexts, against a hand-over between two threads",
        .unit = "ns one way",
        .variants = { { "context switch (the explorer's)", run_switch, 0 },
                      { "semaphore hand-over, one CPU", run_hand_over, 0 } },
        .comparisons = { { "hand-over / context switch", 1, 0, BENCH_RATIO, false, 0 } },
    };
    return bench_run(&spec, EXPLORE_ROUNDS, out);
}
