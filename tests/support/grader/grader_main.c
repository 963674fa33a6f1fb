/**
 * @file grader_main.c
 * @brief kit-grade: run a kit's tests chapter by chapter, one process per test, and score them.
 *
 * Modes:
 * - `test`   (make test, make tsan, make valgrind): every test must pass;
 *            exit 1 otherwise, or if the rubric and the tests disagree.
 * - `grade`  (make grade): score against tests/rubric.tsv, exit 0 with the report.
 * - `mutant` (make mutants): stop at the first test that does not pass; exit 0
 *            when the mutant was killed, 1 when every test passed (it survived).
 */
#define _POSIX_C_SOURCE 200809L
#include "grader.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { MAX_TESTS = 1024, MAX_CHAPTERS = 32, MAX_BINARIES = 16, MAX_NAMES = 256 };

struct config {
    const char *rubric, *bin_dir, *mode, *report_dir, *implementation;
    const char *tsan_bin_dir, *tsan_build, *tsan_wrapper;
    const char *debug_args; /* set: name `make debug` for each test that does not pass */
    const char *chapters[MAX_CHAPTERS];
    int chapter_count;
    bool autolab, unlimited_memory;
    bool real_threads; /* grade and mutant modes: no test on one schedule */
    struct run_options run;
};

static void usage(void)
{
    fprintf(stderr,
            "usage: kit-grade --rubric FILE --bin DIR [--mode test|grade|mutant] [--chapter NAME]...\n"
            "                 [--timeout SECONDS] [--wrapper 'CMD ARGS'] [--unlimited-memory]\n"
            "                 [--tsan-bin DIR [--tsan-build 'CMD'] [--tsan-wrapper 'CMD']]\n"
            "                 [--report DIR] [--implementation LABEL] [--source-root DIR] [--autolab]\n"
            "                 [--sandbox-uid UID (0: no sandbox) [--sandbox-cpus N]] [--chaos SEED]\n"
            "                 [--debug-args 'WORDS' (name make debug CH=NN TEST=name WORDS for each failure)]\n"
            "                 [--real-threads (grade and mutant modes: run no test on one schedule)]\n");
    exit(2);
}

static void parse_arguments(int argc, char **argv, struct config *config)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
        bool takes_value = true;
        if (strcmp(arg, "--rubric") == 0 && value) config->rubric = value;
        else if (strcmp(arg, "--bin") == 0 && value) config->bin_dir = value;
        else if (strcmp(arg, "--mode") == 0 && value) config->mode = value;
        else if (strcmp(arg, "--report") == 0 && value) config->report_dir = value;
        else if (strcmp(arg, "--implementation") == 0 && value) config->implementation = value;
        else if (strcmp(arg, "--tsan-bin") == 0 && value) config->tsan_bin_dir = value;
        else if (strcmp(arg, "--tsan-build") == 0 && value) config->tsan_build = value;
        else if (strcmp(arg, "--tsan-wrapper") == 0 && value) config->tsan_wrapper = value[0] ? value : NULL;
        else if (strcmp(arg, "--unlimited-memory") == 0) { config->unlimited_memory = true; takes_value = false; }
        else if (strcmp(arg, "--wrapper") == 0 && value) config->run.wrapper = value[0] ? value : NULL;
        else if (strcmp(arg, "--source-root") == 0 && value) config->run.source_root = value;
        else if (strcmp(arg, "--timeout") == 0 && value) config->run.limits.wall_seconds = atof(value);
        else if (strcmp(arg, "--chapter") == 0 && value && config->chapter_count < MAX_CHAPTERS)
            config->chapters[config->chapter_count++] = value;
        else if (strcmp(arg, "--autolab") == 0) { config->autolab = true; takes_value = false; }
        else if (strcmp(arg, "--real-threads") == 0) { config->real_threads = true; takes_value = false; }
        else if (strcmp(arg, "--sandbox-uid") == 0 && value) config->run.limits.sandbox_uid = atol(value);
        else if (strcmp(arg, "--sandbox-cpus") == 0 && value) config->run.limits.sandbox_cpus = atol(value);
        else if (strcmp(arg, "--chaos") == 0 && value) setenv("KIT_CHAOS", value, 1);
        else if (strcmp(arg, "--debug-args") == 0 && value) config->debug_args = value;
        else usage();
        i += takes_value;
    }
    if (!config->rubric || !config->bin_dir || config->run.limits.wall_seconds <= 0)
        usage();
    if (strcmp(config->mode, "test") && strcmp(config->mode, "grade") && strcmp(config->mode, "mutant"))
        usage();
}

static bool selected(const struct config *config, const char *chapter)
{
    if (config->chapter_count == 0)
        return true;
    for (int i = 0; i < config->chapter_count; i++)
        if (strcmp(config->chapters[i], chapter) == 0)
            return true;
    return false;
}

/* The chapter's test binaries and the test names each one lists. */
struct chapter_tests {
    char binaries[MAX_BINARIES][512];
    char names[MAX_BINARIES][MAX_NAMES][128];
    int name_counts[MAX_BINARIES];
    int binary_count;
};

static void discover(const char *bin_dir, const char *chapter, struct chapter_tests *found)
{
    memset(found, 0, sizeof *found);
    char dir_path[512];
    snprintf(dir_path, sizeof dir_path, "%s/%s", bin_dir, chapter);
    DIR *dir = opendir(dir_path);
    if (dir == NULL)
        return;
    for (struct dirent *entry; (entry = readdir(dir)) && found->binary_count < MAX_BINARIES;) {
        if (strncmp(entry->d_name, "test_", 5) != 0 || strchr(entry->d_name, '.'))
            continue;
        int b = found->binary_count;
        textf(found->binaries[b], sizeof found->binaries[b], "%s/%s", dir_path, entry->d_name);
        if (access(found->binaries[b], X_OK) != 0)
            continue;
        found->name_counts[b] = list_tests(found->binaries[b], found->names[b], MAX_NAMES);
        if (found->name_counts[b] >= 0)
            found->binary_count++;
    }
    closedir(dir);
}

static const char *binary_for(const struct chapter_tests *found, const char *name)
{
    for (int b = 0; b < found->binary_count; b++)
        for (int n = 0; n < found->name_counts[b]; n++)
            if (strcmp(found->names[b][n], name) == 0)
                return found->binaries[b];
    return NULL;
}

/* Tests a binary has that the rubric does not score: a kit inconsistency. */
static int report_unscored(const struct chapter_tests *found, const struct test_case *tests, int count,
                           const char *chapter)
{
    int unscored = 0;
    for (int b = 0; b < found->binary_count; b++)
        for (int n = 0; n < found->name_counts[b]; n++) {
            bool scored = false;
            for (int i = 0; i < count && !scored; i++)
                scored = strcmp(tests[i].chapter, chapter) == 0 && strcmp(tests[i].name, found->names[b][n]) == 0;
            if (!scored) {
                printf("  warning: %s has no line in the rubric\n", found->names[b][n]);
                unscored++;
            }
        }
    return unscored;
}

/* The race-freedom line: every test of the chapter again, under TSan. */
static void run_tsan_line(struct config *config, struct test_case *line, struct test_case *tests, int count)
{
    const char *chapter = line->chapter;
    if (!config->tsan_bin_dir) {
        snprintf(line->detail, sizeof line->detail, "run `make tsan` for this line\n");
        return;
    }
    for (int i = 0; i < count; i++)
        if (strcmp(tests[i].chapter, chapter) == 0 && &tests[i] != line && tests[i].verdict != V_PASSED &&
            strcmp(tests[i].name, "tsan") != 0) {
            snprintf(line->detail, sizeof line->detail, "earned once every test of the chapter passes\n");
            return;
        }
    if (config->tsan_build) {
        setenv("KIT_CHAPTER", chapter, 1);
        fflush(stdout);
        if (system(config->tsan_build) != 0) {
            line->verdict = V_FAILED;
            snprintf(line->detail, sizeof line->detail, "the ThreadSanitizer build failed\n");
            return;
        }
    }
    struct chapter_tests *found = malloc(sizeof *found);
    discover(config->tsan_bin_dir, chapter, found);
    struct run_options run = config->run;
    run.limits.wall_seconds *= 4; /* TSan runs 5-15x slower; tests scale down under KIT_SLOW */
    run.limits.cpu_seconds *= 4;
    run.limits.address_space_mb = 0;
    run.wrapper = config->tsan_wrapper;
    static char tsan_logs[1100]; /* apart from the plain runs' logs of the same tests */
    textf(tsan_logs, sizeof tsan_logs, "%s/tsan", config->run.log_dir);
    mkdir(tsan_logs, 0755);
    run.log_dir = tsan_logs;
    setenv("KIT_SLOW", "1", 1);
    char *scheduled = getenv("KIT_SCHEDULE_TESTS") ? strdup(getenv("KIT_SCHEDULE_TESTS")) : NULL;
    unsetenv("KIT_SCHEDULE_TESTS"); /* ThreadSanitizer must see the threads run at once */
    line->verdict = V_PASSED;
    for (int i = 0; i < count && line->verdict == V_PASSED; i++) {
        if (strcmp(tests[i].chapter, chapter) != 0 || strcmp(tests[i].name, "tsan") == 0)
            continue;
        struct test_case copy = tests[i];
        const char *binary = binary_for(found, copy.name);
        snprintf(copy.binary, sizeof copy.binary, "%s", binary ? binary : "");
        if (!binary) {
            line->verdict = V_MISSING;
            snprintf(line->detail, sizeof line->detail, "no ThreadSanitizer build of %s\n", copy.name);
            break;
        }
        run_test_case(&copy, &run);
        line->seconds += copy.seconds;
        if (copy.verdict != V_PASSED) {
            line->verdict = copy.verdict == V_RACE ? V_RACE : V_FAILED;
            textf(line->detail, sizeof line->detail, "%s under ThreadSanitizer: %s\n%s", copy.name,
                     verdict_text(copy.verdict), copy.detail);
        }
    }
    unsetenv("KIT_SLOW");
    if (scheduled)
        setenv("KIT_SCHEDULE_TESTS", scheduled, 1);
    free(scheduled);
    free(found);
}

/* A failed test first says what it proves - its rubric sentence - so the
 * student learns the rule, not only the symptom. */
static void explain_failure(struct test_case *test)
{
    if (test->verdict == V_PASSED || test->description[0] == '\0')
        return;
    char *detail = malloc(sizeof test->detail);
    if (detail == NULL)
        return;
    textf(detail, sizeof test->detail, "what it checks: %s\n%s", test->description, test->detail);
    memcpy(test->detail, detail, sizeof test->detail);
    free(detail);
}

struct totals {
    int score, max, problems;
    bool killed;
    char killer[256];
};

static void grade_chapter(struct config *config, const char *chapter, struct test_case *tests, int count,
                          struct totals *totals)
{
    bool mutant = strcmp(config->mode, "mutant") == 0;
    struct chapter_tests *found = malloc(sizeof *found);
    discover(config->bin_dir, chapter, found);
    print_chapter_header(chapter);
    int score = 0, max = 0;
    for (int i = 0; i < count && !(mutant && totals->killed); i++) {
        struct test_case *test = &tests[i];
        if (strcmp(test->chapter, chapter) != 0)
            continue;
        if (strcmp(test->name, "tsan") == 0) {
            if (strcmp(config->mode, "grade") != 0)
                continue; /* a grading line: make test and make tsan check races directly */
            run_tsan_line(config, test, tests, count);
            if (config->tsan_bin_dir)
                max += test->points;
        } else {
            const char *binary = binary_for(found, test->name);
            max += test->points;
            if (binary) {
                snprintf(test->binary, sizeof test->binary, "%s", binary);
                run_test_case(test, &config->run);
                explain_failure(test);
            } else {
                test->verdict = V_MISSING;
                textf(test->detail, sizeof test->detail, "no test binary in %s/%s has this test\n",
                         config->bin_dir, chapter);
                totals->problems++;
            }
        }
        if (test->verdict != V_PASSED && (config->tsan_bin_dir || strcmp(test->name, "tsan") != 0)) {
            totals->problems++;
            if (mutant && !totals->killed) {
                totals->killed = true;
                snprintf(totals->killer, sizeof totals->killer, "%s (%s)", test->name, verdict_text(test->verdict));
            }
        }
        score += test->verdict == V_PASSED ? test->points : 0;
        print_test_line(test, !mutant, config->debug_args);
    }
    if (!mutant)
        totals->problems += report_unscored(found, tests, count, chapter);
    if (!mutant)
        printf("  Chapter score: %d/%d\n", score, max);
    totals->score += score;
    totals->max += max;
    free(found);
}

/* The lines graded: those of the selected chapters, without the race-freedom
 * lines when there is no ThreadSanitizer build. Returns how many. */
static int graded_lines(const struct config *config, const struct test_case *tests, int count,
                        struct test_case *kept)
{
    int n = 0;
    for (int i = 0; i < count; i++)
        if (selected(config, tests[i].chapter) && (config->tsan_bin_dir || strcmp(tests[i].name, "tsan") != 0))
            kept[n++] = tests[i];
    return n;
}

static void write_reports(const struct config *config, const struct test_case *kept, int n)
{
    if (!config->report_dir)
        return;
    char path[1024];
    snprintf(path, sizeof path, "%s/report.json", config->report_dir);
    int err = write_json_report(path, config->mode, config->implementation, kept, n, config->debug_args);
    snprintf(path, sizeof path, "%s/junit.xml", config->report_dir);
    err = err ? err : write_junit_report(path, kept, n);
    if (err)
        fprintf(stderr, "kit-grade: cannot write the reports in %s: %s\n", config->report_dir, strerror(err));
    else
        printf("Reports: %s/report.json, %s/junit.xml\n", config->report_dir, config->report_dir);
}

static void print_autolab(const struct config *config, const struct test_case *tests, int count)
{
    printf("{\"scores\": {");
    const char *previous = "";
    int printed = 0;
    for (int i = 0; i < count; i++) {
        if (!selected(config, tests[i].chapter) || strcmp(tests[i].chapter, previous) == 0)
            continue;
        previous = tests[i].chapter;
        int score = 0;
        for (int j = i; j < count; j++)
            if (strcmp(tests[j].chapter, previous) == 0 && tests[j].verdict == V_PASSED)
                score += tests[j].points;
        printf("%s\"%s\": %d", printed++ ? ", " : "", previous, score);
    }
    printf("}}\n");
}

/* Deletes the .svg files a previous run drew in @p dir. */
static void remove_drawings(const char *dir)
{
    DIR *folder = opendir(dir);
    if (folder == NULL)
        return;
    struct dirent *entry = readdir(folder);
    for (; entry != NULL; entry = readdir(folder)) {
        size_t length = strlen(entry->d_name);
        char path[1400];
        if (length > 4 && strcmp(entry->d_name + length - 4, ".svg") == 0) {
            snprintf(path, sizeof path, "%s/%s", dir, entry->d_name);
            unlink(path);
        }
    }
    closedir(folder);
}

int main(int argc, char **argv)
{
    static struct config config = { .mode = "grade", .implementation = "solutions",
                                    .run = { .limits = { 30, 0, 4096, 64, 256, 0, 1 }, .diagnose_timeouts = true } };
    parse_arguments(argc, argv, &config);
    if (config.run.limits.sandbox_uid > 0 && geteuid() == 0)
        config.run.limits.sandbox_uid = claim_sandbox_uid(config.run.limits.sandbox_uid);
    config.run.limits.cpu_seconds = (long)(config.run.limits.wall_seconds * 2) + 10;
    if (config.run.wrapper || config.unlimited_memory) /* valgrind and sanitizers map far more than they use */
        config.run.limits.address_space_mb = 0;
    static char log_dir[1024];
    snprintf(log_dir, sizeof log_dir, "%s/logs", config.report_dir ? config.report_dir : "/tmp");
    mkdir(config.report_dir ? config.report_dir : "/tmp", 0755);
    mkdir(log_dir, 0755);
    config.run.log_dir = log_dir;
    if (config.implementation[0] == '/') /* graded from outside the kit: its files are the student's */
        config.run.student_root = config.implementation;
    /* A failed exploration test draws its schedule in logs/schedules; the
     * sandboxed test runs as the sandbox uid, so that folder (and only that
     * one: the logs are the grader's) is the uid's to write in. */
    static char schedule_dir[1100];
    snprintf(schedule_dir, sizeof schedule_dir, "%s/schedules", log_dir);
    mkdir(schedule_dir, 0755);
    remove_drawings(schedule_dir); /* an earlier grade's must not pass for this one's */
    if (config.run.limits.sandbox_uid > 0 && geteuid() == 0 &&
        chown(schedule_dir, (uid_t)config.run.limits.sandbox_uid, (gid_t)config.run.limits.sandbox_uid) != 0)
        perror(schedule_dir);
    setenv("KIT_EXPLORE_SVG_DIR", schedule_dir, 1);
    setenv("TSAN_OPTIONS", "exitcode=66 halt_on_error=1 second_deadlock_stack=1", 0);
    setenv("ASAN_OPTIONS", "exitcode=99 detect_leaks=1 abort_on_error=0", 0);
    setenv("UBSAN_OPTIONS", "exitcode=99 halt_on_error=1 print_stacktrace=1", 0);
    setenv("LSAN_OPTIONS", "exitcode=99", 0);
    if (strcmp(config.mode, "test") != 0)
        setenv("SEED", "20261130", 0); /* same submission, same stress schedule, same score */
    /* ... and every test that can run on one schedule of the scheduler runs on
     * one, seeded from SEED (kit_test.h): the same interleaving every time. */
    if (strcmp(config.mode, "test") != 0 && !config.real_threads)
        setenv("KIT_SCHEDULE_TESTS", getenv("SEED"), 1);
    else
        unsetenv("KIT_SCHEDULE_TESTS");
    /* The make commands a failing test prints name what was graded, as the
     * grader's own make debug hints do (none when they are off). */
    if (config.debug_args && config.debug_args[0])
        setenv("KIT_MAKE_ARGS", config.debug_args, 1);
    else
        unsetenv("KIT_MAKE_ARGS");
    unsetenv("KIT_SCHED");     /* the exploration tests' own fixed seeds and budgets, */
    unsetenv("KIT_SCHEDULES"); /* whatever the environment says (make explore sets them) */

    static struct test_case tests[MAX_TESTS];
    char error[512];
    int count = load_rubric(config.rubric, tests, MAX_TESTS, error, sizeof error);
    if (count < 0) {
        fprintf(stderr, "kit-grade: %s\n", error);
        return 2;
    }
    struct totals totals = { 0 };
    for (int i = 0; i < count; i++) {
        bool first_of_chapter = i == 0 || strcmp(tests[i].chapter, tests[i - 1].chapter) != 0;
        if (first_of_chapter && selected(&config, tests[i].chapter) && !(totals.killed))
            grade_chapter(&config, tests[i].chapter, tests, count, &totals);
    }
    if (strcmp(config.mode, "mutant") == 0) {
        printf(totals.killed ? "killed by %s\n" : "SURVIVED: every test passed\n", totals.killer);
        return totals.killed ? 0 : 1;
    }
    static struct test_case kept[MAX_TESTS];
    int graded = graded_lines(&config, tests, count, kept);
    if (strcmp(config.mode, "grade") == 0)
        print_standing(kept, graded, config.debug_args);
    else
        printf("\n");
    printf("Score: %d/%d\n", totals.score, totals.max);
    write_reports(&config, kept, graded);
    if (config.autolab)
        print_autolab(&config, tests, count);
    if (strcmp(config.mode, "test") == 0 && totals.problems > 0) {
        printf("%d problem(s): every test must pass against the reference solutions\n", totals.problems);
        return 1;
    }
    return 0;
}
